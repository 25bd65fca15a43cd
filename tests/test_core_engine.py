"""The engine against GNU patch and git apply on the cases that bite fork maintainers."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import lines, patch_of, udiff

from patchset.core.engine import apply_patch

F = "pkg/mod.py"
needs_patch = pytest.mark.skipif(shutil.which("patch") is None, reason="GNU patch is not installed")


def gnu_patch(tmp_path: Path, files: dict[str, bytes], diff: str, *extra: str) -> tuple[int, str, dict]:
    work = tmp_path / "gnu"
    shutil.rmtree(work, ignore_errors=True)
    for name, data in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_bytes(data)
    work.mkdir(exist_ok=True)
    (tmp_path / "x.patch").write_text(diff)
    r = subprocess.run(["patch", "-p1", "--batch", "--no-backup-if-mismatch", "-i", str(tmp_path / "x.patch"),
                        *extra], cwd=work, capture_output=True, text=True)
    result = {str(p.relative_to(work)): p.read_bytes() for p in work.rglob("*") if p.is_file()
              and not p.name.endswith(".rej")}
    return r.returncode, r.stdout + r.stderr, result


def git_apply(tmp_path: Path, files: dict[str, bytes], diff: str) -> tuple[int, str, dict]:
    work = tmp_path / "git"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    for name, data in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_bytes(data)
    (tmp_path / "x.patch").write_text(diff)
    r = subprocess.run(["git", "apply", str(tmp_path / "x.patch")], cwd=work, capture_output=True, text=True)
    result = {str(p.relative_to(work)): p.read_bytes() for p in work.rglob("*") if p.is_file()
              and ".git" not in p.parts}
    return r.returncode, r.stdout + r.stderr, result


BASE = lines(40)
CHANGED = BASE.replace("line 20\n", "line 20 fixed\n")
DIFF = udiff(F, BASE, CHANGED)


def test_exact_hunk_matches_gnu_patch(tmp_path):
    out = apply_patch({F: BASE.encode()}, patch_of(DIFF))
    assert out.status == "applies"
    assert [h.status for h in out.hunks] == ["exact"]
    rc, _, gnu = gnu_patch(tmp_path, {F: BASE.encode()}, DIFF)
    assert rc == 0 and gnu[F] == out.files[F] == CHANGED.encode()


@needs_patch
def test_offset_is_reported_with_its_distance_like_gnu_patch(tmp_path):
    shifted = "new 1\nnew 2\nnew 3\nnew 4\nnew 5\n" + BASE
    out = apply_patch({F: shifted.encode()}, patch_of(DIFF))
    assert out.status == "applies"
    (h,) = out.hunks
    assert (h.status, h.offset, h.line) == ("offset", 5, 22)
    rc, log, gnu = gnu_patch(tmp_path, {F: shifted.encode()}, DIFF)
    assert rc == 0 and "offset 5 lines" in log
    assert gnu[F] == out.files[F]


@needs_patch
def test_fuzz_trap_gnu_patch_places_the_hunk_wrongly_we_refuse(tmp_path):
    # Upstream moved the fixed line away; a look-alike block remains whose outer
    # context differs. GNU patch places the hunk there by fuzz and exits 0.
    before = "def a():\n    x = 1\n    y = 2\n    return x\n\n" * 1
    fixed = before.replace("    y = 2\n", "    y = 3\n")
    diff = udiff(F, before, fixed)
    tree = "def b():\n    x = 1\n    y = 2\n    return y\n\n"
    rc, log, gnu = gnu_patch(tmp_path, {F: tree.encode()}, diff)
    assert rc == 0 and "fuzz" in log, log  # GNU patch "succeeds"
    out = apply_patch({F: tree.encode()}, patch_of(diff))
    assert out.status == "failed"
    (h,) = out.hunks
    assert h.status == "fuzz" and not h.applied and h.fuzz >= 1
    assert "GNU patch would place it there" in h.message
    rc_git, _, _ = git_apply(tmp_path, {F: tree.encode()}, diff)
    assert rc_git != 0  # git apply refuses too, but cannot say why


def test_fuzz_is_applied_when_the_manifest_allows_it():
    before = "def a():\n    x = 1\n    y = 2\n    return x\n"
    diff = udiff(F, before, before.replace("y = 2", "y = 3"))
    tree = "def b():\n    x = 1\n    y = 2\n    return y\n"
    # GNU patch needs -F2 here: with 2 leading and 1 trailing context lines, fuzz 1 ignores only one
    # leading line (its asymmetric rule), which still does not match.
    assert apply_patch({F: tree.encode()}, patch_of(diff), max_fuzz=1).status == "failed"
    out = apply_patch({F: tree.encode()}, patch_of(diff), max_fuzz=2)
    assert out.status == "applies"
    assert out.hunks[0].status == "fuzz" and out.hunks[0].applied and out.hunks[0].fuzz == 2
    assert out.files[F] == b"def b():\n    x = 1\n    y = 3\n    return y\n"


@needs_patch
def test_ambiguous_context_is_refused_where_gnu_patch_takes_the_nearest(tmp_path):
    block = "    if ready:\n        start()\n        wait()\n        stop()\n"
    before = "header\n" + "\n" * 30 + block + "tail\n"
    diff = udiff(F, before, before.replace("wait()", "wait(timeout=1)"), n=2)
    # The tree has moved the block and now holds two copies, neither at the stated line.
    tree = "header\n" + block + "tail\n" + "\n" * 60 + block + "tail\n"
    rc, log, _ = gnu_patch(tmp_path, {F: tree.encode()}, diff)
    assert rc == 0  # GNU patch silently picks one
    out = apply_patch({F: tree.encode()}, patch_of(diff))
    assert out.status == "failed"
    assert out.hunks[0].status == "failed" and "ambiguous" in out.hunks[0].message
    assert out.hunks[0].candidates == (2, 67)


def test_identical_context_at_the_stated_line_is_not_ambiguous():
    block = "a\nb\nc\nd\n"
    before = block + "x\n" + block
    diff = udiff(F, before, before.replace("x\n", "x\nb2\n"), n=2)
    out = apply_patch({F: before.encode()}, patch_of(diff))
    assert out.status == "applies"


@needs_patch
def test_no_newline_at_end_of_file_matches_gnu_patch(tmp_path):
    before = "one\ntwo\nthree"
    after = "one\ntwo\nthree\nfour"
    diff = udiff(F, before, after)
    assert "No newline" in diff
    out = apply_patch({F: before.encode()}, patch_of(diff))
    assert out.status == "applies"
    rc, _, gnu = gnu_patch(tmp_path, {F: before.encode()}, diff)
    assert rc == 0
    assert out.files[F] == gnu[F] == after.encode()


@needs_patch
def test_line_endings_that_differ_are_refused_never_mixed(tmp_path):
    before = "one\ntwo\nthree\nfour\n"
    after = before.replace("two\n", "two\nadded\n")
    crlf, crlf_after = before.replace("\n", "\r\n"), after.replace("\n", "\r\n")
    lf_patch, crlf_patch = udiff(F, before, after), udiff(F, crlf, crlf_after)
    # An LF patch on a CRLF file: GNU -F0 and git apply refuse; so do we, and we say why.
    out = apply_patch({F: crlf.encode()}, patch_of(lf_patch))
    assert out.status == "failed" and "line endings are ignored" in out.hunks[0].message
    assert gnu_patch(tmp_path, {F: crlf.encode()}, lf_patch, "-F0")[0] != 0
    assert git_apply(tmp_path, {F: crlf.encode()}, lf_patch)[0] != 0
    # A CRLF patch on an LF file: GNU strips the CRs and applies, git apply refuses: we refuse.
    out = apply_patch({F: before.encode()}, patch_of(crlf_patch))
    assert out.status == "failed" and "line endings are ignored" in out.hunks[0].message
    assert git_apply(tmp_path, {F: before.encode()}, crlf_patch)[0] != 0
    # A CRLF patch on a CRLF file applies byte for byte, as with both tools.
    out = apply_patch({F: crlf.encode()}, patch_of(crlf_patch))
    assert out.status == "applies" and out.files[F] == crlf_after.encode()
    rc, _, gnu = gnu_patch(tmp_path, {F: crlf.encode()}, crlf_patch, "-F0")
    assert rc == 0 and gnu[F] == out.files[F]
    rc, _, git = git_apply(tmp_path, {F: crlf.encode()}, crlf_patch)
    assert rc == 0 and git[F] == out.files[F]


def test_create_delete_and_rename_match_git_apply(tmp_path):
    old = "keep\nme\n"
    diff = (
        "diff --git a/pkg/new.py b/pkg/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/pkg/new.py\n"
        "@@ -0,0 +1,2 @@\n+hello\n+world\n"
        "diff --git a/pkg/gone.py b/pkg/gone.py\ndeleted file mode 100644\n--- a/pkg/gone.py\n+++ /dev/null\n"
        "@@ -1,2 +0,0 @@\n-bye\n-now\n"
        "diff --git a/pkg/old.py b/pkg/moved.py\nsimilarity index 80%\nrename from pkg/old.py\n"
        "rename to pkg/moved.py\n--- a/pkg/old.py\n+++ b/pkg/moved.py\n@@ -1,2 +1,2 @@\n keep\n-me\n+you\n"
    )
    tree = {"pkg/new.py": None, "pkg/gone.py": b"bye\nnow\n", "pkg/old.py": old.encode(), "pkg/moved.py": None}
    out = apply_patch(tree, patch_of(diff))
    assert out.status == "applies", out.message
    assert out.files == {"pkg/new.py": b"hello\nworld\n", "pkg/gone.py": None, "pkg/old.py": None,
                         "pkg/moved.py": b"keep\nyou\n"}
    rc, log, result = git_apply(tmp_path, {"pkg/gone.py": b"bye\nnow\n", "pkg/old.py": old.encode()}, diff)
    assert rc == 0, log
    assert result == {k: v for k, v in out.files.items() if v is not None}
    # Applying the same patch to its own result is recognised, not doubled.
    again = apply_patch({**tree, **out.files}, patch_of(diff))
    assert again.status == "already-applied"


def test_already_applied_is_told_apart_from_does_not_apply():
    out = apply_patch({F: CHANGED.encode()}, patch_of(DIFF))
    assert out.status == "already-applied"
    assert out.hunks[0].status == "already-applied"
    broken = BASE.replace("line 20\n", "line twenty\n")
    out = apply_patch({F: broken.encode()}, patch_of(DIFF))
    assert out.status == "failed"
    (h,) = out.hunks
    assert h.status == "failed" and h.candidates == (17,)
    assert "-line 20" in h.differ and "+line twenty" in h.differ


def test_partly_applied_patch_is_neither_pristine_nor_patched():
    before = lines(60)
    after = before.replace("line 10\n", "line 10!\n").replace("line 50\n", "line 50!\n")
    diff = udiff(F, before, after)
    half = before.replace("line 10\n", "line 10!\n")
    out = apply_patch({F: half.encode()}, patch_of(diff))
    assert out.status == "failed" and "partly applied" in out.message
    assert out.files == {}


def test_order_dependency_second_patch_needs_the_first():
    first = udiff(F, BASE, BASE.replace("line 20\n", "line 20\nadded by first\n"))
    mid = BASE.replace("line 20\n", "line 20\nadded by first\n")
    second = udiff(F, mid, mid.replace("added by first\n", "added by first\nand second\n"))
    tree = {F: BASE.encode()}
    assert apply_patch(tree, patch_of(second)).status == "failed"
    step = apply_patch(tree, patch_of(first))
    assert step.status == "applies"
    final = apply_patch({**tree, **step.files}, patch_of(second))
    assert final.status == "applies" and b"and second" in final.files[F]


def test_hunks_in_one_file_carry_the_offset_forward():
    before = lines(100)
    after = before.replace("line 10\n", "line 10!\n").replace("line 80\n", "line 80!\n")
    diff = udiff(F, before, after)
    tree = "x\n" * 7 + before
    out = apply_patch({F: tree.encode()}, patch_of(diff))
    assert [(h.status, h.offset) for h in out.hunks] == [("offset", 7), ("offset", 7)]
    assert out.files[F] == ("x\n" * 7 + after).encode()
