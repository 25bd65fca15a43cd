"""core/copies.py: a file a patch creates that copies an upstream file upstream then changed."""

from __future__ import annotations

import subprocess

from patchset.core.copies import drift, upstream_diff
from patchset.core.moved import PyIndex
from patchset.core.patchfile import split_lines

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


def test_the_diff_holds_only_upstream_changes_to_copied_lines_and_applies_with_gnu_patch(tmp_path) -> None:
    """The note's diff: the changes that replace or remove a line the copy holds, with a line of context, changes
    that close in one hunk; upstream's other changes (a new function, an edit the copy does not hold) left out.
    It is a real diff of the source: GNU patch -F0 applies it to U's file."""
    new = (SOURCE.replace(b"request.tokens[7] + 7", b"request.all_tokens[7] + 7")
           .replace(b"request.tokens[8] + 8", b"request.all_tokens[8] + 8")
           .replace(b"request.tokens[20] + 20", b"request.other[20] + 20")  # the copy does not hold it
           + b"def brand_new(x):\n    return x\n")
    a, b = split_lines(SOURCE), split_lines(new)
    held = {b"return request.tokens[7] + 7", b"return request.tokens[8] + 8"}
    diff = upstream_diff("vllm/source.py", "vllm/source.py", a, b, held)
    assert diff == ("--- a/vllm/source.py\n+++ b/vllm/source.py\n@@ -15,5 +15,5 @@\n"
                    " def step_7(request, scheduler_output, blocks):\n"
                    "-    return request.tokens[7] + 7\n+    return request.all_tokens[7] + 7\n"
                    " def step_8(request, scheduler_output, blocks):\n"
                    "-    return request.tokens[8] + 8\n+    return request.all_tokens[8] + 8\n"
                    " def step_9(request, scheduler_output, blocks):\n")
    (tmp_path / "source.py").write_bytes(SOURCE)
    subprocess.run(["patch", "-F0", "-s", str(tmp_path / "source.py")], input=diff.encode(), check=True)
    patched = (tmp_path / "source.py").read_bytes()
    assert b"request.all_tokens[7] + 7" in patched and b"request.tokens[20] + 20" in patched
    assert upstream_diff("vllm/source.py", "vllm/source.py", a, b, {b"not there"}) == ""


def test_a_drift_carries_its_diff_and_a_removed_source_none() -> None:
    copy = SOURCE.replace(b"def step_0(", b"def fork_step_0(")
    changed = SOURCE.replace(b"request.tokens[7] + 7", b"request.all_tokens[7] + 7")
    d = drift("vllm/fork.py", copy, _index(source=SOURCE), lambda p: SOURCE, lambda p: changed)
    assert d is not None and "-    return request.tokens[7] + 7\n+    return request.all_tokens[7] + 7\n" in d.diff
    v = {"vllm/other.py": b"x = 1\n"}
    gone = drift("vllm/fork.py", copy, _index(source=SOURCE), lambda p: SOURCE, v.get, lambda: PyIndex(v))
    assert gone is not None and gone.removed and gone.diff == ""
