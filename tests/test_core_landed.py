"""core/landed.py: lines a patch adds that upstream added itself at another place (pure: contents in)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from patchset.core.landed import MIN_ONE_LINE, carried_twice, describe, runs

U = b"A = {\n    'a': 1,\n    'z': 26,\n}\n"
V = b"A = {\n    'a': 1,\n    'e': 5,\n    'f': 6,\n    'z': 26,\n}\n"  # upstream added e and f after a
ADDS = "+#+#"  # the fork's block: a marker comment, e, f, a marker comment
KEYS = [b"    # fork BEG\n", b"    'e': 5,\n", b"    'f': 6,\n", b"    # fork END\n"]
MERGED = b"A = {\n    'a': 1,\n    'e': 5,\n    'f': 6,\n    'z': 26,\n    # fork BEG\n    'e': 5,\n    'f': 6,\n" \
         b"    # fork END\n}\n"


def _hunks(kinds: str = ADDS, keys: list[bytes] | None = None) -> list[tuple[int, str, list[bytes]]]:
    kinds = " " + kinds.replace("#", "+") + " "
    return [(1, kinds, [b"    'z': 26,\n", *(keys or KEYS), b"}\n"])]


def test_runs_split_a_hunk_at_its_context_and_removed_lines():
    assert runs(" ++-+ +", [b"c", b"a", b"b", b"r", b"d", b"c", b"e"]) == [[b"a", b"b"], [b"d"], [b"e"]]


def test_a_block_upstream_added_elsewhere_and_the_merge_repeats_is_found_at_vs_line():
    (t,) = carried_twice(_hunks(), U, V, MERGED, "vllm/x.py")
    assert (t.hunk, t.line, t.lines, t.first) == (1, 3, 2, "'e': 5,")  # marker comments left out
    assert describe("vllm/x.py", [t], "0.10.0", "0.9.1").startswith(
        "merges cleanly but would carry upstream's own lines twice: hunk 1 adds 2 line(s) (\"'e': 5,\" …) that "
        "vllm 0.10.0 added itself after 0.9.1, at vllm/x.py:3")


def test_lines_both_releases_share_are_not_upstreams_addition():
    u = V  # the lines were there before the patch's release too: the patch repeats them on purpose
    assert carried_twice(_hunks(), u, V, MERGED, "vllm/x.py") == []


def test_a_merge_that_holds_them_once_is_clean():
    assert carried_twice(_hunks(), U, V, V, "vllm/x.py") == []


def test_a_block_v_lacks_is_the_patchs_own():
    merged = MERGED.replace(b"'f': 6,\n    # fork END", b"'g': 7,\n    # fork END")
    keys = [k.replace(b"'f': 6", b"'g': 7") for k in KEYS]
    assert carried_twice(_hunks(keys=keys), U, V, merged, "vllm/x.py") == []


def test_a_short_lone_line_is_too_common_to_mean_anything():
    short = [b"        return None\n"]
    u, v = b"def f():\n    pass\n", b"def f():\n    pass\n\ndef g():\n        return None\n"
    merged = v + b"        return None\n"
    assert carried_twice([(1, " + ", [b"    pass\n", *short, b"\n"])], u, v, merged, "vllm/x.py") == []
    long = [b"    registry.register('a-very-long-connector-name', 'module.path.Class')\n"]
    assert len(long[0].strip()) >= MIN_ONE_LINE
    v2 = v + long[0]
    (t,) = carried_twice([(1, " + ", [b"    pass\n", *long, b"\n"])], u, v2, v2 + long[0], "vllm/x.py")
    assert t.lines == 1


def test_comment_lines_count_outside_python():
    keys = [b"# fork BEG\n", b"# fork END\n"]  # in a YAML file a '#' line is not left out: two lines
    u, v = b"a: 1\n", b"a: 1\n# fork BEG\n# fork END\n"
    merged = v + b"# fork BEG\n# fork END\n"
    assert carried_twice([(1, "++", keys)], u, v, merged, "conf.yaml") != []
    assert carried_twice([(1, "++", keys)], u, v, merged, "conf.py") == []


LINES = st.lists(st.sampled_from([b"a = 1\n", b"b = 2\n", b"# note\n", b"\n", b"    c = 3\n",
                                  b"x = some_long_function_name(argument_one, argument_two)\n"]), max_size=12)


@settings(max_examples=300, deadline=None)
@given(u=LINES, v=LINES, extra=LINES, added=LINES)
def test_properties_hold_for_any_files(u, v, extra, added):
    """Nothing is found when the merge holds V as it is, or when U already had the lines; whatever is found
    points at a line of V that is the run's first significant line."""
    hunks = [(1, "+" * len(added), added)]
    ub, vb, merged = b"".join(u), b"".join(v), b"".join(v + extra)
    assert carried_twice(hunks, ub, vb, vb, "x.py") == []
    assert carried_twice(hunks, vb, vb, merged, "x.py") == []
    for t in carried_twice(hunks, ub, vb, merged, "x.py"):
        assert vb.splitlines()[t.line - 1].strip().decode() == t.first
