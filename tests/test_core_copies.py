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
    gone = drift("vllm/fork.py", copy, index, lambda p: SOURCE, lambda p: None)
    assert same is None and theirs is None and gone is None


def test_a_file_that_is_no_copy_gets_no_note() -> None:
    own = b"".join(f"FORK_SETTING_{i} = 'fork-only value number {i}'\n".encode() for i in range(40))
    assert drift("vllm/fork.py", own, _index(source=SOURCE), lambda p: SOURCE, lambda p: b"") is None


def test_a_line_upstream_only_moved_within_the_source_is_no_change() -> None:
    lines = SOURCE.splitlines(keepends=True)
    moved = b"".join(lines[2:] + lines[:2])  # step_0 now last: the same lines, another order
    assert drift("vllm/fork.py", SOURCE, _index(source=SOURCE), lambda p: SOURCE, lambda p: moved) is None
