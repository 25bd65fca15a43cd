"""Patch files: DEP-3 headers, layouts, and the input we refuse."""

from __future__ import annotations

import pytest
from helpers import udiff

from patchset.core.patchfile import parse_patch
from patchset.errors import PatchFileError

HEADER = """Description: Stop offloading the final sampled token's KV slot
 The last token has no KV of its own.
Origin: backport, https://github.com/vllm-project/vllm/pull/54288
Bug: https://github.com/vllm-project/vllm/issues/54193
Applied-Upstream: 0.30.0
Last-Update: 2026-11-30
---
"""


def parse(text: str, **kw):
    return parse_patch(text.encode(), name="recipes/x.patch", **kw)


def test_dep3_header_is_read():
    pf = parse(HEADER + udiff("vllm/a.py", "x\n", "y\n"))
    assert pf.header["Origin"].startswith("backport,")
    assert pf.header["Description"].endswith("has no KV of its own.")
    assert pf.header["Applied-Upstream"] == "0.30.0"
    assert pf.touched == ["vllm/a.py"]
    assert pf.hunks[0].line == 11


def test_package_relative_layout_is_mapped_to_repository_layout():
    pf = parse(udiff("v1/core/sched.py", "x\n", "y\n"), root="vllm")
    assert pf.touched == ["vllm/v1/core/sched.py"]


def test_paths_leaving_the_tree_are_refused():
    with pytest.raises(PatchFileError, match="leaves the tree"):
        parse(udiff("../etc/passwd", "x\n", "y\n"))
    with pytest.raises(PatchFileError, match="leaves the tree"):
        parse(udiff("vllm/../../x.py", "x\n", "y\n"))


def test_binary_patches_are_refused_with_their_line():
    text = "diff --git a/w.bin b/w.bin\nindex 1..2 100644\nGIT binary patch\nliteral 3\nabc\n"
    with pytest.raises(PatchFileError) as e:
        parse(text)
    assert e.value.line == 3 and "binary" in str(e.value)


def test_hunk_shorter_than_its_header():
    text = "--- a/vllm/a.py\n+++ b/vllm/a.py\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n"
    with pytest.raises(PatchFileError) as e:
        parse(text)
    assert e.value.line == 3 and "-3 +3" in str(e.value)


def test_hunk_longer_than_its_header_which_unidiff_ignores():
    text = "--- a/vllm/a.py\n+++ b/vllm/a.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n+d\n"
    with pytest.raises(PatchFileError) as e:
        parse(text)
    assert e.value.line == 3 and "more lines" in str(e.value)


def test_a_file_with_no_diff_is_refused():
    with pytest.raises(PatchFileError, match="contains no diff"):
        parse(HEADER)


def test_no_newline_marker_is_kept_on_the_line():
    pf = parse(udiff("vllm/a.py", "x\ny", "x\nz"))
    last = pf.hunks[0].lines[-1]
    assert (last.kind, last.text, last.eol) == ("+", "z", "")
