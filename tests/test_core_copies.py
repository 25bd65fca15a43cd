"""core/copies.py: a file a patch creates that copies an upstream file upstream then changed."""

from __future__ import annotations

from patchset.core.copies import drift
from patchset.core.moved import PyIndex

SOURCE = b"".join(f"def step_{i}(request, scheduler_output, blocks):\n    return request.tokens[{i}] + {i}\n".encode()
                  for i in range(30))


def _index(**files: bytes) -> PyIndex:
    return PyIndex({f"vllm/{k}.py": v for k, v in files.items()})


def test_a_copy_whose_copied_lines_upstream_changed_is_found_with_its_first_line() -> None:
    copy = SOURCE.replace(b"def step_0(", b"def fork_step_0(")
    changed = SOURCE.replace(b"request.tokens[7] + 7", b"request.all_tokens[7] + 7")
    d = drift("vllm/fork.py", copy, _index(source=SOURCE, other=b"x = 1\n"), lambda p: SOURCE, lambda p: changed)
    assert d is not None
    assert (d.source, d.lines, d.line, d.first) == ("vllm/source.py", 1, 16, "return request.tokens[7] + 7")
    assert d.share >= 0.5
    assert "vllm/fork.py is a copy of vllm/source.py" in d.message("0.9.1", "0.10.0")


def test_no_note_where_upstream_left_the_copied_lines_alone_or_the_source_went() -> None:
    copy = SOURCE.replace(b"request.tokens[7] + 7", b"request.fork_tokens[7] + 7")  # the fork's own change
    index = _index(source=SOURCE)
    same = drift("vllm/fork.py", copy, index, lambda p: SOURCE, lambda p: SOURCE)
    # upstream changed the one line the copy no longer holds as it was
    theirs = drift("vllm/fork.py", copy, index, lambda p: SOURCE,
                   lambda p: SOURCE.replace(b"request.tokens[7] + 7", b"request.all_tokens[7] + 7"))
    gone = drift("vllm/fork.py", copy, index, lambda p: SOURCE, lambda p: None)  # V's files not searched: no word
    assert same is None and theirs is None and gone is None


def test_a_file_that_is_no_copy_gets_no_note() -> None:
    own = b"".join(f"FORK_SETTING_{i} = 'fork-only value number {i}'\n".encode() for i in range(40))
    assert drift("vllm/fork.py", own, _index(source=SOURCE), lambda p: SOURCE, lambda p: b"") is None


def test_a_line_upstream_only_moved_within_the_source_is_no_change() -> None:
    lines = SOURCE.splitlines(keepends=True)
    moved = b"".join(lines[2:] + lines[:2])  # step_0 now last: the same lines, another order
    assert drift("vllm/fork.py", SOURCE, _index(source=SOURCE), lambda p: SOURCE, lambda p: moved) is None


def test_a_source_v_moved_is_followed_to_its_new_path() -> None:
    """V ships the source under another name (as ``git diff -M`` finds a rename) and changed a copied line there;
    a file of the series' own in V that holds the same lines is not taken for it."""
    copy = SOURCE.replace(b"def step_0(", b"def fork_step_0(")
    moved = SOURCE.replace(b"request.tokens[7] + 7", b"request.all_tokens[7] + 7")
    v = {"vllm/new_home.py": moved, "vllm/fork.py": copy, "vllm/fork_twin.py": SOURCE}
    index_v = PyIndex(v)
    d = drift("vllm/fork.py", copy, _index(source=SOURCE), lambda p: SOURCE, v.get, lambda: index_v,
              frozenset({"vllm/fork_twin.py"}))
    assert d is not None and (d.source, d.moved_to, d.removed, d.lines) == ("vllm/source.py", "vllm/new_home.py",
                                                                          False, 1)
    assert "changed 1 line(s) of vllm/source.py (moved to vllm/new_home.py)" in d.message("0.9.1", "0.10.0")
    # moved and left as it was: nothing to say
    same = {"vllm/new_home.py": SOURCE}
    assert drift("vllm/fork.py", copy, _index(source=SOURCE), lambda p: SOURCE, same.get,
                 lambda: PyIndex(same)) is None


def test_a_source_v_ships_nowhere_is_removed() -> None:
    copy = SOURCE.replace(b"def step_0(", b"def fork_step_0(")
    v = {"vllm/other.py": b"x = 1\n", "vllm/fork.py": copy}
    d = drift("vllm/fork.py", copy, _index(source=SOURCE), lambda p: SOURCE, v.get, lambda: PyIndex(v))
    assert d is not None and d.removed and d.moved_to is None
    assert "vllm 0.10.0 no longer ships vllm/source.py" in d.message("0.9.1", "0.10.0")
    # U does not ship it (a file only the series creates): the fork's own, nothing said
    assert drift("vllm/fork.py", copy, _index(source=SOURCE), lambda p: SOURCE, v.get, lambda: PyIndex(v),
                 shipped_u=lambda p: False) is None
