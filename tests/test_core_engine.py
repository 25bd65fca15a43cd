"""The engine against GNU patch and git apply on the cases that bite fork maintainers."""

from __future__ import annotations

from pathlib import Path

import pytest
from differential import misordered_cases, unified_diff
from helpers import git_apply, gnu_patch, lines, needs_patch, patch_of, udiff

from patchset.core.engine import apply_patch
from patchset.core.patchfile import split_lines

F = "pkg/mod.py"


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


# --- issue 7: never looser than GNU patch -F0 and git apply -----------------------------------------


def both_refuse(tmp_path: Path, files: dict[str, bytes], diff: str) -> None:
    assert gnu_patch(tmp_path, files, diff, "-F0", "-N")[0] != 0
    assert git_apply(tmp_path, files, diff)[0] != 0


def both_write(tmp_path: Path, files: dict[str, bytes], diff: str, path: str) -> bytes:
    rc, log, gnu = gnu_patch(tmp_path, files, diff, "-F0")
    assert rc == 0, log
    rc, log, git = git_apply(tmp_path, files, diff)
    assert rc == 0, log
    assert gnu.get(path) == git.get(path)
    return gnu[path]


@needs_patch
def test_a_hunk_ending_without_newline_lands_only_at_the_end_no_glued_lines(tmp_path):
    # Made on l1..l4, it changes l4 and drops the final newline; the file goes on to l5.
    before, after = "l1 = 1\nl2 = 2\nl3 = 3\nl4 = 4\n", "l1 = 1\nl2 = 2\nl3 = 3\nl4 = 44"
    diff = udiff(F, before, after)
    tree = (before + "l5 = 5\n").encode()
    out = apply_patch({F: tree}, patch_of(diff))
    assert out.status == "failed", out.files  # was "applies" with b"l4 = 44l5 = 5\n"
    both_refuse(tmp_path, {F: tree}, diff)


@needs_patch
def test_an_end_of_file_append_does_not_land_after_an_earlier_copy_of_the_last_lines(tmp_path):
    diff = udiff(F, BASE, BASE + "appended\n")
    tree = (BASE + "line 39\nline 40\nmore\n").encode()
    out = apply_patch({F: tree}, patch_of(diff))
    assert out.status == "failed"
    assert "must land at the end" in out.hunks[0].message
    both_refuse(tmp_path, {F: tree}, diff)


@needs_patch
def test_a_hunk_at_line_1_lands_only_at_the_start(tmp_path):
    diff = udiff(F, BASE, "# header\n" + BASE)
    tree = ("# licence\n" + BASE).encode()
    out = apply_patch({F: tree}, patch_of(diff))
    assert out.status == "failed" and "must land at the start" in out.hunks[0].message
    both_refuse(tmp_path, {F: tree}, diff)


@needs_patch
def test_an_insertion_at_the_top_already_there_is_not_inserted_twice(tmp_path):
    after = "import os\n" + BASE
    diff = udiff(F, BASE, after)
    out = apply_patch({F: after.encode()}, patch_of(diff))
    assert out.status == "already-applied"  # was "applies", with "import os" twice
    rc, log, _ = gnu_patch(tmp_path, {F: after.encode()}, diff, "-F0", "-N")
    assert "Reversed (or previously applied)" in log


def test_a_drifted_pure_deletion_is_not_taken_for_already_applied():
    block = "    a = 1\n    b = 2\n    c = 3\n    remove_me()\n    d = 4\n    e = 5\n    f = 6\n"
    before = "def f():\n" + block + "\n" * 20
    diff = udiff(F, before, before.replace("    remove_me()\n", ""))
    drifted = "def f():\n" + block.replace("c = 3", "c = 30") + "\n" * 20 + "def g():\n" + \
        block.replace("    remove_me()\n", "")
    out = apply_patch({F: drifted.encode()}, patch_of(diff))
    assert out.status == "failed"  # was "already-applied": weak upstream evidence
    assert (out.hunks[0].line, out.hunks[0].message) == (2, "the context around the removed lines is joined at line "
                                                         "30 but the lines it removes still stand at line 5: neither "
                                                         "applied nor applicable")
    # after an earlier hunk that adds two lines, the joined place is still named by the file's own line
    more = "top\n" * 10
    diff = udiff(F, more + before, (more + before).replace("top\n", "top\nadded\nadded\n", 1).replace(
        "    remove_me()\n", ""))
    first, second = apply_patch({F: (more + drifted).encode()}, patch_of(diff)).hunks
    assert (first.status, second.status, second.line) == ("exact", "failed", 12)
    assert second.message.startswith("the context around the removed lines is joined at line 40 but")


@needs_patch
def test_an_existing_empty_file_is_edited_not_created(tmp_path):
    init = "pkg/__init__.py"
    diff = f"diff --git a/{init} b/{init}\nindex e69de29..1b2c3d4 100644\n--- a/{init}\n+++ b/{init}\n" \
        "@@ -0,0 +1 @@\n+x = 1\n"
    out = apply_patch({init: b""}, patch_of(diff))
    assert out.status == "applies", out.message  # was refused as "creates this file but it already exists"
    assert out.files == {init: b"x = 1\n"} and both_write(tmp_path, {init: b""}, diff, init) == b"x = 1\n"
    # Emptying it again keeps the file: only "+++ /dev/null" or "deleted file mode" deletes.
    back = f"diff --git a/{init} b/{init}\n--- a/{init}\n+++ b/{init}\n@@ -1 +0,0 @@\n-x = 1\n"
    out = apply_patch({init: b"x = 1\n"}, patch_of(back))
    assert out.status == "applies" and out.files == {init: b""}  # was None: the file deleted
    assert both_write(tmp_path, {init: b"x = 1\n"}, back, init) == b""


def test_a_creation_without_hunks_at_zero_is_known_from_its_header():
    diff = "diff --git a/pkg/new.py b/pkg/new.py\nnew file mode 100644\nindex 0000000..e69de29\n"
    out = apply_patch({"pkg/new.py": None}, patch_of(diff))
    assert out.status == "applies" and out.files == {"pkg/new.py": b""}
    assert apply_patch({"pkg/new.py": b"x\n"}, patch_of(diff)).status == "failed"


def test_a_copy_keeps_its_source(tmp_path):
    diff = ("diff --git a/pkg/a.py b/pkg/b.py\nsimilarity index 90%\ncopy from pkg/a.py\ncopy to pkg/b.py\n"
            "--- a/pkg/a.py\n+++ b/pkg/b.py\n@@ -1,2 +1,2 @@\n keep\n-me\n+you\n")
    tree = {"pkg/a.py": b"keep\nme\n", "pkg/b.py": None}
    out = apply_patch(tree, patch_of(diff))
    assert out.status == "applies"
    assert out.files == {"pkg/b.py": b"keep\nyou\n"}  # was {"pkg/a.py": None, ...}: a rename
    rc, log, git = git_apply(tmp_path, {"pkg/a.py": b"keep\nme\n"}, diff)
    assert rc == 0, log
    assert git == {"pkg/a.py": b"keep\nme\n", "pkg/b.py": b"keep\nyou\n"}
    assert apply_patch({**tree, **out.files}, patch_of(diff)).status == "already-applied"


def test_a_mode_only_change_is_represented():
    diff = "diff --git a/pkg/run.py b/pkg/run.py\nold mode 100644\nnew mode 100755\n"
    out = apply_patch({"pkg/run.py": b"x\n"}, patch_of(diff))
    assert out.status == "applies" and out.modes == {"pkg/run.py": 0o100755}
    (h,) = out.hunks
    assert (h.number, h.message) == (0, "mode 100644 -> 100755")
    assert apply_patch({"pkg/run.py": None}, patch_of(diff)).status == "failed"


def test_a_new_executable_file_carries_its_mode():
    diff = "diff --git a/pkg/run.sh b/pkg/run.sh\nnew file mode 100755\n--- /dev/null\n+++ b/pkg/run.sh\n" \
        "@@ -0,0 +1 @@\n+echo hi\n"
    out = apply_patch({"pkg/run.sh": None}, patch_of(diff))
    assert out.files == {"pkg/run.sh": b"echo hi\n"} and out.modes == {"pkg/run.sh": 0o100755}


_NEW = ("diff --git a/pkg/n.py b/pkg/n.py\nnew file mode 100644\n--- /dev/null\n+++ b/pkg/n.py\n"
        "@@ -0,0 +1,2 @@\n+a\n+b\n")
_EDIT = ("diff --git a/pkg/m.py b/pkg/m.py\n--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1,2 +1,2 @@\n k\n-x\n+y\n"
         "@@ -5,2 +5,2 @@\n k\n-z\n+w\n")
_GONE = ("diff --git a/pkg/g.py b/pkg/g.py\ndeleted file mode 100644\n--- a/pkg/g.py\n+++ /dev/null\n"
         "@@ -1,2 +0,0 @@\n-bye\n-now\n")
_REN = ("diff --git a/pkg/a.py b/pkg/b.py\nsimilarity index 80%\nrename from pkg/a.py\nrename to pkg/b.py\n"
        "--- a/pkg/a.py\n+++ b/pkg/b.py\n@@ -1,2 +1,2 @@\n keep\n-me\n+you\n")
_REN0 = "diff --git a/pkg/a.py b/pkg/b.py\nsimilarity index 100%\nrename from pkg/a.py\nrename to pkg/b.py\n"
_MODE = "diff --git a/pkg/r.py b/pkg/r.py\nold mode 100644\nnew mode 100755\n"
_CREATES = "the patch creates this file but it already exists"
_MISSING = "the patch changes this file but it is not in the tree"
_COPY_DIFFERS = "the patch copies pkg/a.py to pkg/b.py, which exists and differs"
_A, _B = {"pkg/a.py": b"keep\nme\n"}, {"pkg/b.py": b"keep\nyou\n"}


@pytest.mark.parametrize(("diff", "tree", "status", "hunks"), [
    (_NEW, {"pkg/n.py": None}, "applies", [("pkg/n.py", 1, "exact", True, 1, "")]),
    (_NEW, {"pkg/n.py": b"a\nb\n"}, "already-applied", [("pkg/n.py", 1, "already-applied", False, 1, "")]),
    (_NEW, {"pkg/n.py": b"c\n"}, "failed", [("pkg/n.py", 1, "failed", False, None, _CREATES)]),
    ("diff --git a/pkg/e.sh b/pkg/e.sh\nnew file mode 100755\n", {"pkg/e.sh": None}, "applies",
     [("pkg/e.sh", 0, "exact", True, 1, "creates an empty file (mode 100755)")]),
    ("diff --git a/pkg/e.py b/pkg/e.py\nnew file mode 100644\n", {"pkg/e.py": None}, "applies",
     [("pkg/e.py", 0, "exact", True, 1, "creates an empty file (mode 100644)")]),
    ("diff --git a/pkg/e.py b/pkg/e.py\n--- /dev/null\n+++ b/pkg/e.py\n", {"pkg/e.py": None}, "applies",
     [("pkg/e.py", 0, "exact", True, 1, "creates an empty file")]),
    (_EDIT, {"pkg/m.py": None}, "failed", [("pkg/m.py", 1, "failed", False, None, _MISSING),
                                           ("pkg/m.py", 2, "failed", False, None, _MISSING)]),
    (_GONE, {"pkg/g.py": None}, "already-applied",
     [("pkg/g.py", 1, "already-applied", False, 1, "the file is gone already")]),
    ("diff --git a/pkg/z.py b/pkg/z.py\ndeleted file mode 100644\n", {"pkg/z.py": b""}, "applies",
     [("pkg/z.py", 0, "exact", True, None, "deletes the (empty) file")]),
    (_REN, {**_A, **_B}, "failed",
     [("pkg/b.py", 1, "failed", False, None, "the patch renames pkg/a.py onto a file that exists")]),
    (_REN, {"pkg/a.py": None, **_B}, "already-applied", [("pkg/b.py", 1, "already-applied", False, 1, "")]),
    (_REN0, {"pkg/a.py": None, "pkg/b.py": b"q\n"}, "already-applied",
     [("pkg/b.py", 0, "already-applied", False, 1, "renames pkg/a.py: done already")]),
    (_REN0, {"pkg/a.py": b"q\n", "pkg/b.py": None}, "applies",
     [("pkg/b.py", 0, "exact", True, None, "renamed from pkg/a.py")]),
    (_REN.replace("rename", "copy"), {**_A, "pkg/b.py": b"other\n"}, "failed",
     [("pkg/b.py", 1, "failed", False, None, _COPY_DIFFERS)]),
    (_REN0.replace("rename", "copy"), {"pkg/a.py": b"q\n", "pkg/b.py": b"q\n"}, "already-applied",
     [("pkg/b.py", 0, "already-applied", False, 1, "copies pkg/a.py: done already")]),
    (_REN0.replace("rename", "copy"), {"pkg/a.py": b"q\n", "pkg/b.py": b"r\n"}, "failed",
     [("pkg/b.py", 0, "failed", False, None, _COPY_DIFFERS)]),
    (_REN0.replace("rename", "copy"), {"pkg/a.py": b"q\n", "pkg/b.py": None}, "applies",
     [("pkg/b.py", 0, "exact", True, None, "copied from pkg/a.py")]),
    (_MODE, {"pkg/r.py": b"x\n"}, "applies", [("pkg/r.py", 0, "exact", True, None, "mode 100644 -> 100755")]),
    (_MODE + "--- a/pkg/r.py\n+++ b/pkg/r.py\n@@ -1 +1 @@\n-x\n+y\n", {"pkg/r.py": b"y\n"}, "already-applied",
     [("pkg/r.py", 1, "already-applied", False, 1, ""), ("pkg/r.py", 0, "exact", True, None, "mode 100644 -> 100755")]),
])
def test_file_level_verdicts_say_file_hunk_status_line_and_why(diff, tree, status, hunks):
    """Creation, deletion, rename, copy and mode changes: every field of every result, as `check` prints
    them (a hunk-0 result for a change without hunks)."""
    out = apply_patch(tree, patch_of(diff))
    assert out.status == status
    assert [(h.file, h.number, h.status, h.applied, h.line, h.message) for h in out.hunks] == hunks
    assert out.message == (
        "every hunk is already in the tree" + ("; its mode changes cannot be checked in memory"
                                               if any(h[5].startswith("mode ") for h in hunks) else "")
        if status == "already-applied"
        else "; ".join(f"hunk {h[1]} ({h[0]}): failed - {h[5]}" for h in hunks) if status == "failed" else "")


_U0 = f"diff --git a/{F} b/{F}\n--- a/{F}\n+++ b/{F}\n"
_EIGHT = "".join(f"l{i}\n" for i in range(1, 9))
_JOIN = "the file does not end with a newline: the insertion would join two lines"
_TWICE = ("the lines this context-free hunk inserts already stand at line 3: cannot tell a re-application from a "
          "coincidence")
_MIXED = ("the lines this context-free hunk inserts end in CRLF where the file's end in LF, or the reverse: refused "
          "rather than written with mixed line endings")
_WHERE = "is outside the file or before the previous hunk"


@needs_patch
@pytest.mark.parametrize(("hunks", "tree", "after", "verdicts"), [
    ("@@ -0,0 +1 @@\n+top\n@@ -4,0 +6 @@\n+mid\n", _EIGHT, "top\nl1\nl2\nl3\nl4\nmid\nl5\nl6\nl7\nl8\n",
     [("exact", 1, ""), ("exact", 5, "")]),
    ("@@ -2,0 +3 @@\n+two\n@@ -8,0 +10 @@\n+end\n", _EIGHT, "l1\nl2\ntwo\nl3\nl4\nl5\nl6\nl7\nl8\nend\n",
     [("exact", 3, ""), ("exact", 9, "")]),
    ("@@ -1,0 +2,3 @@\n+a\n+b\n+c\n@@ -4,0 +8 @@\n+l3\n", _EIGHT, "l1\na\nb\nc\nl2\nl3\nl4\nl3\nl5\nl6\nl7\nl8\n",
     [("exact", 2, ""), ("exact", 5, "")]),
    ("@@ -2,0 +3 @@\n+two\n@@ -8,0 +10 @@\n+end\n", _EIGHT.rstrip("\n"), None,
     [("exact", 3, ""), ("failed", 9, _JOIN)]),
    ("@@ -2,0 +3 @@\n+l3\n@@ -6,0 +8 @@\n+x\n", _EIGHT, None, [("failed", 3, _TWICE), ("exact", 7, "")]),
    ("@@ -2,0 +3 @@\n+two\r\n@@ -6,0 +8 @@\n+x\r\n", _EIGHT, None, [("failed", 3, _MIXED), ("failed", 7, _MIXED)]),
    ("@@ -2,0 +3 @@\n+two\n@@ -20,0 +22 @@\n+x\n", _EIGHT, None,
     [("exact", 3, ""), ("failed", 21, f"the insertion point (line 20) {_WHERE}")]),
    ("@@ -5,0 +6 @@\n+two\n@@ -3,0 +5 @@\n+x\n", _EIGHT, None,
     [("exact", 6, ""), ("failed", 4, f"the insertion point (line 3) {_WHERE}")]),
    ("@@ -0,0 +1 @@\n+top\n", _EIGHT, None, [("failed", 1, "this context-free hunk at line 0 says the file was empty, "
                                             "and it must land at the start of an empty file; this file has lines "
                                             "(git apply refuses it too; regenerate the patch with context)")]),
], ids=["top-and-middle", "end", "shifted", "no-final-newline", "there-already", "crlf", "outside",
        "before-the-previous", "whole-file"])
def test_context_free_hunks_land_by_their_header_and_refuse_by_name(tmp_path, hunks, tree, after, verdicts):
    """-U0 hunks: placed where their header says (at the start for line 0, after the last line at the end),
    as GNU patch and git apply --unidiff-zero place them; refused, saying why, where the result would join
    lines, could be a re-application, would mix line endings, or lies outside the file or before the previous
    hunk."""
    diff = _U0 + hunks
    out = apply_patch({F: tree.encode()}, patch_of(diff))
    assert [(h.status, h.line, h.message) for h in out.hunks] == verdicts
    if after is None:
        assert out.status == "failed" and out.files == {}
        return
    assert out.files == {F: after.encode()}
    rc, log, gnu = gnu_patch(tmp_path, {F: tree.encode()}, diff, "-F0")
    assert rc == 0 and gnu[F] == after.encode(), log
    rc, log, git = git_apply(tmp_path, {F: tree.encode()}, diff, "--unidiff-zero")
    assert rc == 0 and git[F] == after.encode(), log


@needs_patch
def test_form_feeds_and_other_unicode_breaks_are_part_of_a_line(tmp_path):
    before = "a = 1\n\x0c\nb = 2\x1c\nc = 3\u2028d\ne = 4\r5\nf = 6\n".encode()
    after = before.replace(b"e = 4\r5\n", b"e = 4\r5\nadded\n")
    diff = unified_diff(F, split_lines(before), split_lines(after), 3).decode()
    out = apply_patch({F: before}, patch_of(diff))
    assert out.status == "applies" and [h.status for h in out.hunks] == ["exact"]  # was fuzz 2
    assert out.files[F] == after == both_write(tmp_path, {F: before}, diff, F)


@needs_patch
def test_a_zero_context_insertion_after_a_form_feed_lands_where_gnu_puts_it(tmp_path):
    before = "a\n\x0cb\nc\nd\n"
    diff = f"--- a/{F}\n+++ b/{F}\n@@ -2,0 +3 @@\n+new\n"
    out = apply_patch({F: before.encode()}, patch_of(diff))
    assert out.status == "applies" and out.files[F] == b"a\n\x0cb\nnew\nc\nd\n"  # was one line early
    rc, _, gnu = gnu_patch(tmp_path, {F: before.encode()}, diff, "-F0")
    assert rc == 0 and gnu[F] == out.files[F]


@needs_patch
def test_removed_and_added_lines_that_look_like_headers_are_content(tmp_path):
    before = "x\n-- a/pkg/mod.py\n-- \ny\n"
    after = "x\n++ b/pkg/mod.py\n-- \ny\n"
    diff = udiff(F, before, after)
    # Inside the hunk: "--- a/pkg/mod.py" then "+++ b/pkg/mod.py", a file header to a careless reader.
    assert "\n--- a/pkg/mod.py\n+++ b/pkg/mod.py\n -- \n" in diff
    out = apply_patch({F: before.encode()}, patch_of(diff))
    assert out.status == "applies", out.message  # was refused as malformed
    assert out.files[F] == after.encode() == both_write(tmp_path, {F: before.encode()}, diff, F)


@needs_patch
def test_final_newline_disagreement_is_refused_and_adding_it_twice_is_already_applied(tmp_path):
    diff = udiff(F, "a\nb\nc", "a\nb\nc\nd")  # made on a file without a final newline
    out = apply_patch({F: b"a\nb\nc\n"}, patch_of(diff))
    assert out.status == "failed" and "line endings are ignored" in out.hunks[0].message
    both_refuse(tmp_path, {F: b"a\nb\nc\n"}, diff)
    only_newline = udiff(F, "a\nb\nc", "a\nb\nc\n")
    assert apply_patch({F: b"a\nb\nc"}, patch_of(only_newline)).files[F] == b"a\nb\nc\n"
    out = apply_patch({F: b"a\nb\nc\n"}, patch_of(only_newline))
    assert out.status == "already-applied"  # was "applies"


def test_a_context_free_crlf_insertion_into_an_lf_file_is_refused_not_mixed():
    diff = f"--- a/{F}\n+++ b/{F}\n@@ -2,0 +3 @@\n+new\r\n"
    out = apply_patch({F: b"a\nb\nc\n"}, patch_of(diff))
    assert out.status == "failed" and "mixed line endings" in out.hunks[0].message
    assert apply_patch({F: b"a\r\nb\r\nc\r\n"}, patch_of(diff)).files[F] == b"a\r\nb\r\nnew\r\nc\r\n"


@needs_patch
def test_where_gnu_patch_and_git_apply_would_place_a_hunk_differently_it_is_refused(tmp_path):
    before = "a\nb\nc\nd\ne\nf\ng\nh\n"
    diff = udiff(F, before, before.replace("g\n", "g\nX\n"))  # 3 lines before, 1 after: GNU anchors it at the end
    tree = (before + "e\nf\ng\nh\n").encode()  # a second copy at the end; the first at the stated line
    out = apply_patch({F: tree}, patch_of(diff))
    assert out.status == "failed" and "the tools disagree" in out.hunks[0].message
    _, _, gnu = gnu_patch(tmp_path, {F: tree}, diff, "-F0")
    _, _, git = git_apply(tmp_path, {F: tree}, diff)
    assert gnu[F].endswith(b"g\nX\nh\n") and git[F].startswith(b"a\nb\nc\nd\ne\nf\ng\nX\n")


@needs_patch
def test_hunks_out_of_order_or_overlapping_are_refused_by_name_where_the_tools_part(tmp_path):
    """A later hunk whose place lies before, or overlaps, the previous hunk's: GNU patch -F0 and git apply
    do not agree on any of these (each takes some), so the engine refuses each, saying why. An engine that
    looks for a hunk only after the previous one would take the third and misname the first two."""
    cases = {c.kind: c for c in misordered_cases()}
    verdicts = {}
    for kind, case in cases.items():
        diff = case.patch.decode()
        gnu_rc, gnu_log, gnu = gnu_patch(tmp_path, {"m.py": case.tree}, diff, "-F0", "-N")
        git_rc, _, git = git_apply(tmp_path, {"m.py": case.tree}, diff)
        out = apply_patch({"m.py": case.tree}, patch_of(diff))
        assert out.status == "failed" and out.files == {}
        first, second = out.hunks
        assert (first.status, first.line, first.applied) == ("exact", 17, True)
        verdicts[kind] = (gnu_rc, git_rc, second.status, second.line, second.message, second.candidates)
        if kind == "out-of-order":
            assert "misordered hunks" in gnu_log
        if kind == "before-and-after":  # each tool edits another copy of the block
            assert "Hunk #2 succeeded at 60 (offset 35 lines)" in gnu_log
            assert [ln for ln in gnu["m.py"].splitlines() if ln.endswith(b"!")] == [b"line 20!", b"dup d!"]
            assert [ln for ln in git["m.py"].splitlines() if ln.endswith(b"!")] == [b"dup d!", b"line 20!"]
    overlap = "before the end of the previous hunk: the hunks are out of order or overlap"
    assert verdicts == {
        "out-of-order": (1, 0, "failed", 2, f"the context matches only at line 2, {overlap}", ()),
        "overlapping": (0, 1, "failed", 21, f"the context matches only at line 21, {overlap}", ()),
        "before-and-after": (0, 0, "failed", 25, "ambiguous: the context matches at 2 places (lines 2, 60), "
                             "none at the stated line", (2, 60)),
    }


def test_the_fast_scans_find_what_comparing_every_window_finds():
    """matches(), the loose (line-ending blind) match and the nearest-candidate scores, against the plain
    definitions, on seeded data; lines of several lengths, so the scan's anchor line varies."""
    import random

    from patchset.core.engine import _Buffer, _loose_find, _window_scores

    rng = random.Random(7)
    alphabet = [b"a\n", b"b\n", b"\n", b"cc\n", b"ddd\n", b"a\r\n", b"long line\n", b"b"]
    for _ in range(600):
        lines = [rng.choice(alphabet[:-1]) for _ in range(rng.randint(0, 40))]
        if rng.random() < 0.2:
            lines.append(b"b")  # no newline at the end
        old = [rng.choice([b"a\n", b"b\n", b"\n", b"x\n", b"cc\n", b"long line\n", b"a\r\n"])
               for _ in range(rng.randint(1, 6))]
        floor = rng.randint(0, 5)
        buf = _Buffer(b"".join(lines))
        plain = [p for p in range(floor, len(lines) - len(old) + 1) if lines[p:p + len(old)] == old]
        assert buf.find(old, floor, start=False, end=False) == plain
        hi = max(floor, len(lines) - len(old))
        every = {p: sum(a == b for a, b in zip(lines[p:p + len(old)], old, strict=False))
                 for p in range(floor, hi + 1)}
        where = {x: buf.positions(x) for x in set(old)}
        assert all(where[x] == [i for i, y in enumerate(lines) if y == x] for x in where)
        assert _window_scores(where, old, floor, hi) == {p: s for p, s in every.items() if s}
        bare = [x.removesuffix(b"\n").removesuffix(b"\r") for x in lines]
        want = [x.removesuffix(b"\n").removesuffix(b"\r") for x in old]
        loose = [p for p in range(len(bare) - len(want) + 1) if bare[p:p + len(want)] == want]
        assert _loose_find(buf, old) == (loose[0] if loose else None)
        if lines:  # a change to the buffer is seen by the next question
            at = rng.randrange(len(lines))
            buf.replace(at, 1, [b"new\n", lines[at]])
            lines[at:at + 1] = [b"new\n", lines[at]]
            assert all(buf.positions(x) == [i for i, y in enumerate(lines) if y == x] for x in {*old, b"new\n"})


def test_an_edit_met_again_gives_what_placing_it_afresh_gives():
    """The kept edits (the same file content, file patch and fuzz on another release) are the edit."""
    import random

    from patchset.core import engine

    rng = random.Random(11)
    before = "".join(f"line {i}\n" for i in range(60))
    after = before.replace("line 10\n", "line 10\nnew\n").replace("line 40\n", "")
    pf = patch_of(udiff(F, before, after))
    [fp] = pf.files
    for _ in range(50):
        lines = before.splitlines(keepends=True)
        for _ in range(rng.randint(0, 3)):  # some contents it applies to, some it does not
            lines.insert(rng.randint(0, len(lines)), rng.choice(["x\n", "line 10\n", "line 41\n"]))
        content = "".join(lines).encode()
        fresh = engine._edit_afresh(content, fp, 0)
        first = engine._edit(content, fp, 0)
        first[0].append("changed by a caller")  # a caller's list is its own
        again = engine._edit(bytes(content), fp, 0)  # an equal content, another object
        assert first[0][:-1] == again[0] == fresh[0] and first[1] == again[1] == fresh[1]
        assert (fresh[1] is None) == any(not r.applied for r in fresh[0])


@needs_patch
@pytest.mark.parametrize("shape", ["twice", "more-after", "more-before"])
def test_a_whole_file_hunk_on_a_file_that_is_more_than_that_names_where_each_tool_puts_it(tmp_path, shape):
    """Issue 21 item 8: ``@@ -1,8 +1,20 @@`` (old side the whole file, 3 lines of leading context and 2
    of trailing). GNU patch anchors it at the end, git apply at the start: on a file holding the 8 lines
    twice they place it 8 lines apart; with other lines after (or before) them only one tool places it.
    Refused either way, and the reason says which tool would put it where (it used to say "fuzz 1")."""
    old = [f"a{i} = {i}\n" for i in range(1, 9)]
    new = old[:3] + [f"n{i} = 0\n" for i in range(6)] + old[3:6] + [f"m{i} = 0\n" for i in range(6)] + old[6:]
    diff = unified_diff(F, [x.encode() for x in old], [x.encode() for x in new], 3).decode()
    assert "@@ -1,8 +1,20 @@" in diff
    body = "".join(old)
    tree = {"twice": body + body, "more-after": body + "junk = 1\n", "more-before": "junk = 1\n" + body}[shape]
    out = apply_patch({F: tree.encode()}, patch_of(diff))
    message = out.hunks[0].message
    assert out.status == "failed" and out.hunks[0].status == "failed" and "fuzz" not in message
    gnu_rc, _, gnu = gnu_patch(tmp_path, {F: tree.encode()}, diff, "-F0")
    git_rc, _, git = git_apply(tmp_path, {F: tree.encode()}, diff)
    patched = "".join(new).encode()
    if shape == "twice":
        assert gnu_rc == 0 and gnu[F] == body.encode() + patched  # end-anchored: the second copy
        assert git_rc == 0 and git[F] == patched + body.encode()  # start-anchored: the first copy
        assert message.startswith("ambiguous: ") and "the tools disagree on the place" in message
        assert "GNU patch at line 9" in message and "git apply at line 1" in message
        assert (message, out.hunks[0].candidates) == (
            "ambiguous: the context matches at 2 places and the tools disagree on the place (GNU patch at line 9, "
            "anchored at the end of the file, having less trailing context than leading; git apply at line 1, "
            f"anchored at the start of the file, its old side beginning at line 1){WHOLE}: refused; regenerate the "
            "patch on this file", (1, 9))
    elif shape == "more-after":
        assert gnu_rc != 0 and git_rc == 0 and git[F].startswith(patched)
        assert "matches at line 1, where git apply places it (anchored at the start" in message
        assert "GNU patch refuses it: for GNU patch it must land at the end of the file" in message
        assert (message, out.hunks[0].candidates) == (
            "the context matches at line 1, where git apply places it (anchored at the start of the file, its old "
            "side beginning at line 1); GNU patch refuses it: for GNU patch it must land at the end of the file, "
            f"having less trailing context than leading{WHOLE}. {DISAGREE}", (1,))
    else:
        assert gnu_rc == 0 and git_rc != 0 and gnu[F].endswith(patched)
        assert "matches at line 2, where GNU patch places it (anchored at the end" in message
        assert "git apply refuses it: for git apply it must land at the start of the file" in message
        assert (message, out.hunks[0].candidates) == (
            "the context matches at line 2, where GNU patch places it (anchored at the end of the file, having less "
            "trailing context than leading); git apply refuses it: for git apply it must land at the start of the "
            f"file, its old side beginning at line 1{WHOLE}. {DISAGREE}", (2,))


WHOLE = "; its old side was the whole file, which this file is not"
DISAGREE = "The tools disagree: refused; regenerate the patch on this file"


@needs_patch
def test_a_hunk_at_line_1_that_gnu_patch_moves_and_git_apply_anchors_is_refused_as_the_tools_disagree(tmp_path):
    """Met on a real series (omni-infer's requirements/common.txt, 0.8.3 -> 0.9.0): ``@@ -1,7 +1,7 @@`` with 3
    lines of context on each side, on a file with one line more at the top. GNU patch -F0 places it one line
    down (it anchors a hunk at line 1 only when its leading context is the shorter); git apply anchors it at
    line 1 and refuses. The reason used to be "matches only with fuzz 1 (GNU patch would place it there)":
    GNU needs no fuzz. With fuzz allowed for the patch, the fuzz placement stands (GNU's bytes)."""
    before = "".join(f"dep{i}\n" for i in range(1, 9))
    diff = udiff(F, before, before.replace("dep4\n", "dep4 == 1.26\n"))
    assert "@@ -1,7 +1,7 @@" in diff
    tree = ("regex\n" + before).encode()
    out = apply_patch({F: tree}, patch_of(diff))
    message = out.hunks[0].message
    assert out.status == "failed" and out.hunks[0].status == "failed" and "fuzz" not in message
    assert (message, out.hunks[0].candidates) == (
        "the context matches at line 2, where GNU patch places it (offset 1); git apply refuses it: for git apply it "
        f"must land at the start of the file, its old side beginning at line 1. {DISAGREE}", (2,))
    gnu_rc, _, gnu = gnu_patch(tmp_path, {F: tree}, diff, "-F0")
    git_rc, _, _ = git_apply(tmp_path, {F: tree}, diff)
    assert gnu_rc == 0 and git_rc != 0
    allowed = apply_patch({F: tree}, patch_of(diff), max_fuzz=1)
    assert allowed.ok and allowed.hunks[0].status == "fuzz" and allowed.files[F] == gnu[F]


@needs_patch
def test_a_lone_context_free_hunk_at_line_1_on_a_longer_file_says_what_each_tool_does(tmp_path):
    """Seeded case 1339 (seed 11): ``@@ -1,3 +1 @@`` without context on a file with more lines. Read as the
    whole file (git apply without --unidiff-zero) it must be the whole file; GNU patch and ``git apply
    --unidiff-zero`` edit lines 1-3 in place. Refused as before; the reason no longer says both tools refuse."""
    tree = b"# a\n# b\n\nimport x\n"
    diff = f"diff --git a/{F} b/{F}\n--- a/{F}\n+++ b/{F}\n@@ -1,3 +1 @@\n-# a\n-# b\n-\n+patched = 1\n"
    out = apply_patch({F: tree}, patch_of(diff))
    message = out.hunks[0].message
    assert out.status == "failed" and "refuse it too" not in message
    assert "read as the whole file (as git apply reads it without --unidiff-zero)" in message
    assert "GNU patch and git apply --unidiff-zero edit those lines in place" in message
    assert gnu_patch(tmp_path, {F: tree}, diff, "-F0")[2][F] == b"patched = 1\nimport x\n"
    assert git_apply(tmp_path, {F: tree}, diff, "--unidiff-zero")[2][F] == b"patched = 1\nimport x\n"
    assert git_apply(tmp_path, {F: tree}, diff)[0] != 0


@needs_patch
def test_a_hunk_both_readings_fit_is_refused_as_ambiguous(tmp_path):
    """Issue 38: a hunk whose added lines repeat its own context, on a file that holds those lines twice, was
    called already applied (so `upstream` on a release) where GNU patch applies it; and one whose old and new
    lines both stand at the stated line was applied. Both readings fit: refused as ambiguous, naming the places."""
    # Both readings at the stated line 2: GNU patch and git apply apply it (again); it is refused.
    tree, diff = {F: b"x\na\na\na\ny\n"}, f"--- a/{F}\n+++ b/{F}\n@@ -2,2 +2,3 @@\n a\n+a\n a\n"
    out = apply_patch(tree, patch_of(diff))
    assert out.status == "failed" and out.hunks[0].message.startswith(
        "ambiguous: both readings fit, applying it and its being applied already (at line 2; its added lines "
        "repeat its context)")
    assert gnu_patch(tmp_path, tree, diff, "-F0")[0] == 0 and git_apply(tmp_path, tree, diff)[0] == 0
    # Its new lines at the stated line 1, its old lines at line 2, where GNU patch applies it (git apply anchors
    # it at line 1 and refuses): no longer already-applied.
    tree, diff = {F: b"a\na\nb\nz\n"}, f"--- a/{F}\n+++ b/{F}\n@@ -1,2 +1,3 @@\n a\n+a\n b\n"
    out = apply_patch(tree, patch_of(diff))
    assert out.status == "failed" and "its old lines at line 2, where GNU patch would apply it, and its new " \
        "lines at line 1" in out.hunks[0].message and out.hunks[0].candidates == (1, 2)
    rc, log, gnu = gnu_patch(tmp_path, tree, diff, "-F0")
    assert rc == 0 and "offset 1 line" in log and gnu[F] == b"a\na\na\nb\nz\n"
    assert git_apply(tmp_path, tree, diff)[0] != 0
    # Applied once where only one reading fits: already applied, as before (GNU patch says "Reversed").
    tree, diff = {F: b"q\nw\nx\nNEW\ny\nz\n"}, f"--- a/{F}\n+++ b/{F}\n@@ -2,4 +2,5 @@\n w\n x\n+NEW\n y\n z\n"
    assert apply_patch(tree, patch_of(diff)).status == "already-applied"
    rc, log, _ = gnu_patch(tmp_path, tree, diff, "-F0", "-N")
    assert "Reversed (or previously applied) patch detected" in log


@pytest.mark.parametrize(("tree", "status", "verdicts"), [
    (_EIGHT, "applies", [("exact", 3, ""), ("exact", 6, "")]),
    (_EIGHT.replace("l3\n", "x3\n").replace("l6\n", "x6\n"), "already-applied",
     [("already-applied", 3, ""), ("already-applied", 6, "")]),
    # x6 stands one line below where the header puts it: a -U0 hunk is already applied only at its place
    (_EIGHT.replace("l3\n", "l3\nx3\n").replace("l6\n", "x6\n"), "failed",
     [("exact", 3, ""), ("failed", 6, "context not found")]),
], ids=["applies", "already-applied", "elsewhere"])
def test_a_context_free_replacement_is_already_applied_only_at_its_place(tree, status, verdicts):
    diff = _U0 + "@@ -3 +3 @@\n-l3\n+x3\n@@ -6 +6 @@\n-l6\n+x6\n"
    out = apply_patch({F: tree.encode()}, patch_of(diff))
    assert out.status == status and [(h.status, h.line, h.message) for h in out.hunks] == verdicts


def test_a_failed_hunk_names_its_nearest_candidate_in_the_files_own_lines_and_shows_the_difference():
    """After an earlier hunk added two lines, the candidate is still named by the file's line as it stood
    (as `check` prints it); a byte that is not UTF-8 is shown, not dropped."""
    after = BASE.replace("line 5\n", "line 5\nnew a\nnew b\n").replace("line 30\n", "line 30 fixed\n")
    tree = BASE.replace("line 29\n", "line 29 \xe9\n").encode("latin-1")
    first, second = apply_patch({F: tree}, patch_of(udiff(F, BASE, after))).hunks
    assert (first.status, first.line) == ("exact", 3)
    assert (second.status, second.line, second.message, second.candidates, second.differ) == (
        "failed", 27, "context not found; nearest candidate at line 27", (27,),
        ("--- patch expects", "+++ tree has", "@@ -2,3 +2,3 @@", " line 28", "-line 29", "+line 29 \udce9",
         " line 30"))
    shifted = apply_patch({F: b"x\n" * 5 + tree}, patch_of(udiff(F, BASE, after))).hunks[1]
    assert (shifted.message, shifted.candidates) == ("context not found; nearest candidate at line 32", (32,))


_TWO_HUNKS = BASE.replace("line 5\n", "line 5\nnew a\nnew b\n").replace("line 30\n", "line 30 fixed\n")
_FUZZ_REFUSED = ("matches only with fuzz {} at line {} (GNU patch would place it there); refused: allow fuzz for this "
                 "patch in the manifest only if you checked that place")


@needs_patch
@pytest.mark.parametrize(("tree", "diff", "needs", "line"), [
    (BASE.replace("line 27\n", "line 27 changed\n"), udiff(F, BASE, _TWO_HUNKS), 1, 27),
    (BASE.replace("line 28\n", "line 28 changed\n"), udiff(F, BASE, _TWO_HUNKS), 2, 27),
    (BASE.replace("line 33\n", "line 33 changed\n"), udiff(F, BASE, _TWO_HUNKS), 1, 27),
    (BASE.replace("line 27\n", "x\n").replace("line 33\n", "y\n"), udiff(F, BASE, _TWO_HUNKS), 1, 27),
    ("x\n" * 5 + BASE.replace("line 27\n", "line 27 changed\n"), udiff(F, BASE, _TWO_HUNKS), 1, 32),
    (BASE.replace("line 37\n", "line 37 changed\n"), udiff(F, BASE, BASE.replace("line 40\n", "line 40 fixed\n")), 1,
     37),
], ids=["first-line", "second-line", "last-line", "both-ends", "moved-down", "end-of-file"])
def test_fuzz_is_refused_naming_what_it_needs_and_where_and_placed_as_gnu_patch_places_it_when_allowed(
        tmp_path, tree, diff, needs, line):
    """A context line altered near a hunk's edge: refused under max_fuzz below what it needs, saying how much
    and where (in the file's own lines); allowed, placed where GNU patch -F places it, with its bytes."""
    data = tree.encode()
    for allowed in (0, 1, 2):
        out = apply_patch({F: data}, patch_of(diff), max_fuzz=allowed)
        hunk = out.hunks[-1]
        if allowed < needs:
            assert out.status == "failed" and (hunk.status, hunk.applied, hunk.line, hunk.fuzz, hunk.message) == (
                "fuzz", False, line, needs, _FUZZ_REFUSED.format(needs, line))
            continue
        assert out.ok and (hunk.status, hunk.applied, hunk.line, hunk.fuzz, hunk.message) == (
            "fuzz", True, line, needs, f"placed with fuzz {needs}")
        rc, log, gnu = gnu_patch(tmp_path, {F: data}, diff, f"-F{allowed}")
        assert rc == 0 and f"with fuzz {needs}" in log and gnu[F] == out.files[F], log


@pytest.mark.parametrize(("top", "first", "second"), [
    (0, ("failed", 3, "context not found; nearest candidate at line 3"), ("exact", 27, 0)),
    (3, ("failed", 3, "context not found; nearest candidate at line 6"), ("offset", 30, 3)),
], ids=["in-place", "moved-down"])
def test_a_hunk_after_one_that_failed_is_placed_as_if_that_one_added_nothing(top, first, second):
    """The first hunk (two lines added) fails: the lines it would have added are not there, so the next
    hunk is looked for where the file has it, not two lines further down."""
    after = BASE.replace("line 5\n", "line 5\nnew a\nnew b\n").replace("line 30\n", "line 30 fixed\n")
    tree = ("x\n" * top + BASE).replace("line 4\n", "line 4 changed\n").replace("line 6\n", "line 6 changed\n")
    one, two = apply_patch({F: tree.encode()}, patch_of(udiff(F, BASE, after))).hunks
    assert ((one.status, one.line, one.message), (two.status, two.line, two.offset)) == (first, second)


# --- the engine's mutation survivors: line-1/line-2 boundaries, a deletion that leaves lines, a join --------

HEAD = f"diff --git a/{F} b/{F}\n--- a/{F}\n+++ b/{F}\n"


@needs_patch
def test_a_hunk_at_line_1_without_trailing_context_off_the_start_names_what_each_tool_anchors(tmp_path):
    """``@@ -1,3 +1,3 @@`` with two lines of context before the change and none after, on a file with one line
    more at the top: GNU patch anchors it at the end (less trailing context than leading) and places it at
    line 2; git apply anchors it at both ends (line 1, no trailing context) and refuses."""
    tree, diff = b"x\na\nb\nc\n", HEAD + "@@ -1,3 +1,3 @@\n a\n b\n-c\n+C\n"
    out = apply_patch({F: tree}, patch_of(diff))
    assert out.status == "failed" and out.files == {}
    assert [(h.number, h.status, h.applied, h.line, h.candidates) for h in out.hunks] == [
        (1, "failed", False, 1, (2,))]
    assert out.hunks[0].message == (
        "the context matches at line 2, where GNU patch places it (anchored at the end of the file, having less "
        "trailing context than leading); git apply refuses it: for git apply it must land at the start and the "
        f"end of the file, its old side beginning at line 1 with no trailing context{WHOLE}. {DISAGREE}")
    gnu_rc, _, gnu = gnu_patch(tmp_path, {F: tree}, diff, "-F0")
    assert gnu_rc == 0 and gnu[F] == b"x\na\nb\nC\n"
    assert git_apply(tmp_path, {F: tree}, diff)[0] != 0


@needs_patch
def test_a_hunk_at_line_2_with_less_trailing_context_off_the_end_is_placed_only_by_git_apply(tmp_path):
    """``@@ -2,4 +2,4 @@`` (two lines of context before, one after) on a file that goes on past it: GNU patch
    anchors it at the end and refuses; git apply does not anchor a hunk that starts at line 2 and has
    trailing context, and places it where it stands (offset 0)."""
    tree, diff = b"a\nb\nc\nx\nd\ne\n", HEAD + "@@ -2,4 +2,4 @@\n b\n c\n-x\n+X\n d\n"
    out = apply_patch({F: tree}, patch_of(diff))
    assert out.status == "failed" and out.files == {}
    assert [(h.number, h.status, h.applied, h.line, h.candidates) for h in out.hunks] == [
        (1, "failed", False, 2, (2,))]
    assert out.hunks[0].message == (
        "the context matches at line 2, where git apply places it (offset 0); GNU patch refuses it: for GNU patch "
        f"it must land at the end of the file, having less trailing context than leading. {DISAGREE}")
    assert gnu_patch(tmp_path, {F: tree}, diff, "-F0")[0] != 0
    git_rc, _, git = git_apply(tmp_path, {F: tree}, diff)
    assert git_rc == 0 and git[F] == b"a\nb\nc\nX\nd\ne\n"


@needs_patch
def test_a_hunk_at_line_2_with_less_leading_context_is_not_anchored_at_the_start(tmp_path):
    """``@@ -2,5 +2,5 @@`` with one line of context before and three after: GNU patch anchors a hunk with the
    shorter leading context at the start only when it begins at line 1, git apply only at line 1; both
    place this one where it stands, and so does the engine."""
    tree, diff = b"a\nb\nc\nd\ne\nf\ng\n", HEAD + "@@ -2,5 +2,5 @@\n b\n-c\n+C\n d\n e\n f\n"
    out = apply_patch({F: tree}, patch_of(diff))
    assert out.status == "applies" and out.files == {F: b"a\nb\nC\nd\ne\nf\ng\n"}
    assert [(h.number, h.status, h.line, h.offset, h.message) for h in out.hunks] == [(1, "exact", 2, 0, "")]
    assert both_write(tmp_path, {F: tree}, diff, F) == out.files[F]


@needs_patch
def test_where_the_tools_disagree_after_an_earlier_hunk_added_lines_the_places_are_the_files_own_lines(tmp_path):
    """Hunk 1 lands 3 lines down and adds two; hunk 2's three old lines stand twice. GNU patch carries hunk 1's
    offset and takes the copy at the file's line 42; git apply looks from the new side's stated line and takes
    the one at line 37. Both places are named in the file's own lines, not the buffer's (shifted by two)."""
    base = lines(60)
    diff = udiff(F, base, base.replace("line 10\n", "line 10\nadd1\nadd2\n").replace("line 40\n", "line 40 fixed\n"),
                 n=1)
    tree = ("x\n" * 3 + base.replace("line 34\nline 35\nline 36\n", "line 39\nline 40\nline 41\n")).encode()
    out = apply_patch({F: tree}, patch_of(diff))
    assert out.status == "failed" and out.files == {}
    assert [(h.number, h.status, h.applied, h.line, h.offset) for h in out.hunks] == [
        (1, "offset", True, 13, 3), (2, "failed", False, 42, 3)]
    assert out.hunks[1].message == ("ambiguous: the context matches at 2 places and the tools disagree "
                                    "(git apply at line 37; the anchored place is line 42)")
    gnu_rc, log, gnu = gnu_patch(tmp_path, {F: tree}, diff, "-F0")
    assert gnu_rc == 0 and "Hunk #2 succeeded at 44 (offset 3 lines)." in log
    git_rc, _, git = git_apply(tmp_path, {F: tree}, diff)
    assert git_rc == 0
    gnu_lines, git_lines = gnu[F].splitlines(), git[F].splitlines()
    # the changed line: the file's line 43 (GNU) or 38 (git), two lines down once hunk 1 added two
    assert gnu_lines[44] == git_lines[39] == b"line 40 fixed" and gnu_lines[39] == git_lines[44] == b"line 40"


@needs_patch
def test_a_deletion_whose_hunks_leave_lines_is_refused_and_the_file_kept(tmp_path):
    """A hand-written deletion whose three hunks remove lines 1-2, 4 and 6-7 of a seven-line file: each hunk
    applies, lines 3 and 5 remain. git apply refuses the patch; GNU patch applies the hunks and keeps what is left. The
    engine refuses at the last hunk and writes nothing."""
    tree = b"a\nb\nc\nd\ne\nf\ng\n"
    diff = (f"diff --git a/{F} b/{F}\ndeleted file mode 100644\n--- a/{F}\n+++ /dev/null\n"
            "@@ -1,2 +0,0 @@\n-a\n-b\n@@ -4 +0,0 @@\n-d\n@@ -6,2 +0,0 @@\n-f\n-g\n")
    out = apply_patch({F: tree}, patch_of(diff))
    assert out.status == "failed" and out.files == {}
    assert [(h.file, h.number, h.status, h.applied, h.line, h.message) for h in out.hunks] == [
        (F, 1, "exact", True, 1, ""), (F, 2, "exact", True, 4, ""), (F, 3, "exact", True, 6, ""),
        (F, 3, "failed", False, None, "the patch deletes this file but lines remain")]
    git_rc, git_log, _ = git_apply(tmp_path, {F: tree}, diff)
    assert git_rc != 0 and "pkg/mod.py: patch does not apply" in git_log
    gnu_rc, gnu_log, gnu = gnu_patch(tmp_path, {F: tree}, diff, "-F0")
    assert gnu.get(F) == b"c\ne\n", gnu_log


@needs_patch
def test_a_line_without_its_newline_that_would_land_mid_file_is_refused(tmp_path):
    """A hand-written ``-U0`` patch whose first hunk inserts, at the top, a line without its newline and whose
    second edits line 3: the inserted line would be glued to the old first line. git apply refuses; GNU patch
    stops on an internal assertion (a crash, no output). The engine refuses at hunk 1 and writes nothing."""
    tree = b"a\nb\nc\n"
    diff = HEAD + "@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n@@ -3 +3 @@\n-c\n+C\n"
    out = apply_patch({F: tree}, patch_of(diff))
    assert out.status == "failed" and out.files == {}
    assert [(h.number, h.status, h.applied, h.line, h.message) for h in out.hunks] == [
        (1, "failed", False, 1, "the result would join two lines (a line without its newline mid-file)"),
        (2, "exact", True, 3, "")]
    gnu_rc, _, gnu = gnu_patch(tmp_path, {F: tree}, diff, "-F0")
    assert gnu_rc != 0 and gnu[F] == tree
    assert git_apply(tmp_path, {F: tree}, diff)[0] != 0


@needs_patch
def test_a_context_free_hunk_without_final_newline_names_both_tools_places_and_its_own(tmp_path):
    """``-U0``, ``-b`` / ``+B`` without a final newline: it can only land at the end (line 4), where the file's
    other ``b`` stands; GNU patch -F0 and ``git apply --unidiff-zero`` both take line 2, and git glues the next
    line on. Refused, naming both tools' place and the anchored one."""
    tree, diff = b"a\nb\nc\nb\n", HEAD + "@@ -2 +2 @@\n-b\n+B\n\\ No newline at end of file\n"
    out = apply_patch({F: tree}, patch_of(diff))
    assert out.status == "failed" and out.files == {}
    assert [(h.number, h.status, h.applied, h.line, h.message) for h in out.hunks] == [
        (1, "failed", False, 2, "ambiguous: the context matches at 2 places and the tools disagree "
                                "(GNU patch at line 2, git apply at line 2; the anchored place is line 4)")]
    assert gnu_patch(tmp_path, {F: tree}, diff, "-F0")[2][F] == b"a\nB\nc\nb\n"
    assert git_apply(tmp_path, {F: tree}, diff, "--unidiff-zero")[2][F] == b"a\nBc\nb\n"


@needs_patch
@pytest.mark.parametrize(("tree", "diff", "after", "verdicts"), [
    # the last line replaced by one without its newline: a one-line result at the end joins nothing
    (b"a\nb\nc\n", "@@ -3 +3 @@\n-c\n+C\n\\ No newline at end of file\n", b"a\nb\nC", [(1, "exact", 3, 0)]),
    # hunk 1 at line 1 lands one line down: neither tool anchors a context-free hunk at line 1
    (b"x\na\nb\nc\nd\n", "@@ -1 +1 @@\n-a\n+A\n@@ -4 +4 @@\n-d\n+D\n", b"x\nA\nb\nc\nD\n",
     [(1, "offset", 2, 1), (2, "offset", 5, 1)]),
    # ``a`` at lines 1 and 3: both tools look first at line 1 of the new side, not line 2
    (b"a\nx\na\nc\nd\n", "@@ -1 +1 @@\n-a\n+A\n@@ -5 +5 @@\n-d\n+D\n", b"A\nx\na\nc\nD\n",
     [(1, "exact", 1, 0), (2, "exact", 5, 0)]),
    # ``a`` at lines 2 and 3, stated at 3: git looks first at line 3 of the new side, not line 2
    (b"x\na\na\ny\n", "@@ -3 +3 @@\n-a\n+A\n", b"x\na\nA\ny\n", [(1, "exact", 3, 0)]),
])
def test_context_free_hunks_land_where_both_tools_look_first(tmp_path, tree, diff, after, verdicts):
    out = apply_patch({F: tree}, patch_of(HEAD + diff))
    assert out.status == "applies" and out.files == {F: after}
    assert [(h.number, h.status, h.line, h.offset) for h in out.hunks] == verdicts
    assert gnu_patch(tmp_path, {F: tree}, HEAD + diff, "-F0")[2][F] == after
    git_rc, log, git = git_apply(tmp_path, {F: tree}, HEAD + diff, "--unidiff-zero")
    assert git_rc == 0 and git[F] == after, log


@needs_patch
def test_an_append_without_trailing_context_lands_at_the_end_though_its_lines_stand_at_the_stated_place(tmp_path):
    """``@@ -2,3 +2,4 @@`` adds ``e`` after ``b c d`` with no trailing context; ``b c d`` stand at line 2 and
    at the end. Both tools anchor it at the end (offset 4), and so does the engine."""
    tree, diff = b"a\nb\nc\nd\nx\nb\nc\nd\n", HEAD + "@@ -2,3 +2,4 @@\n b\n c\n d\n+e\n"
    out = apply_patch({F: tree}, patch_of(diff))
    assert out.status == "applies" and out.files == {F: tree + b"e\n"}
    assert [(h.number, h.status, h.line, h.offset) for h in out.hunks] == [(1, "offset", 6, 4)]
    assert both_write(tmp_path, {F: tree}, diff, F) == out.files[F]


@needs_patch
def test_a_hunk_whose_lines_stand_only_in_what_the_previous_hunk_wrote_is_refused(tmp_path):
    """``-U0``: hunk 1 turns line 5 into ``E``, hunk 2 removes an ``E`` at line 8 that stands only where hunk 1
    wrote it. GNU patch -F0 and git apply refuse hunk 2; so does the engine, saying why."""
    tree = b"a\nb\nc\nd\ne\nf\ng\nh\n"
    diff = HEAD + "@@ -5 +5 @@\n-e\n+E\n@@ -8 +8 @@\n-E\n+x\n"
    out = apply_patch({F: tree}, patch_of(diff))
    assert out.status == "failed" and out.files == {}
    assert [(h.number, h.status, h.applied, h.line, h.message) for h in out.hunks] == [
        (1, "exact", True, 5, ""),
        (2, "failed", False, 8, "the context matches only at line 5, before the end of the previous hunk: the "
                                "hunks are out of order or overlap")]
    gnu_rc, log, _ = gnu_patch(tmp_path, {F: tree}, diff, "-F0")
    assert gnu_rc == 1 and "Hunk #2 FAILED at 8." in log
    assert git_apply(tmp_path, {F: tree}, diff, "--unidiff-zero")[0] != 0


@pytest.mark.parametrize("max_fuzz", [0, 1])
def test_a_rename_onto_a_file_its_hunk_fits_only_with_fuzz_is_refused_whatever_fuzz_is_allowed(tmp_path, max_fuzz):
    """The source is gone and the destination holds the hunk's lines but one of its leading context: a
    rename is taken as done only when every hunk is already in the destination, never as fuzz."""
    base = lines(12)
    body = udiff("x", base, base.replace("line 6\n", "line 6 fixed\n")).split("+++ b/x\n", 1)[1]
    diff = ("diff --git a/old.py b/new.py\nsimilarity index 90%\nrename from old.py\nrename to new.py\n"
            "--- a/old.py\n+++ b/new.py\n" + body)
    tree = base.replace("line 3\n", "line three\n").encode()
    out = apply_patch({"old.py": None, "new.py": tree}, patch_of(diff), max_fuzz=max_fuzz)
    assert out.status == "failed" and out.files == {}
    assert [(h.file, h.number, h.status, h.applied, h.line, h.message) for h in out.hunks] == [
        ("new.py", 1, "failed", False, None, "the patch renames old.py to new.py, which exists and differs")]
    assert git_apply(tmp_path, {"new.py": tree}, diff)[0] != 0


@needs_patch
def test_a_hunk_whose_lines_stand_only_in_what_a_fuzzed_hunk_wrote_is_refused(tmp_path):
    """Hunk 1 needs fuzz 1 (its leading context ``Q`` is ``d`` here) and turns line 5 into ``E``; hunk 2 removes
    an ``E`` that stands only where hunk 1 wrote it. With fuzz 1 allowed, GNU patch -F1 places hunk 1 and
    refuses hunk 2; git apply refuses the patch; the engine places hunk 1 as GNU does and refuses hunk 2."""
    tree = b"a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
    diff = HEAD + "@@ -4,3 +4,3 @@\n Q\n-e\n+E\n f\n@@ -8 +8 @@\n-E\n+x\n"
    out = apply_patch({F: tree}, patch_of(diff), max_fuzz=1)
    assert out.status == "failed" and out.files == {}
    assert [(h.number, h.status, h.applied, h.line, h.fuzz, h.message) for h in out.hunks] == [
        (1, "fuzz", True, 4, 1, "placed with fuzz 1"),
        (2, "failed", False, 8, 0, "the context matches only at line 5, before the end of the previous hunk: the "
                                   "hunks are out of order or overlap")]
    gnu_rc, log, _ = gnu_patch(tmp_path, {F: tree}, diff, "-F1")
    assert gnu_rc == 1 and "Hunk #1 succeeded at 4 with fuzz 1." in log and "Hunk #2 FAILED at 8." in log
    assert git_apply(tmp_path, {F: tree}, diff, "--unidiff-zero")[0] != 0


@needs_patch
def test_a_hunkless_deletion_of_a_file_that_has_lines_is_refused_at_hunk_0(tmp_path):
    """git writes the deletion of an empty file without a hunk; on a file with a line left it does not hold.
    git apply ("removal patch leaves file contents") and GNU patch ("Not deleting file") refuse it too."""
    diff = f"diff --git a/{F} b/{F}\ndeleted file mode 100644\nindex e69de29..0000000\n"
    out = apply_patch({F: b"a\n"}, patch_of(diff))
    assert out.status == "failed" and out.files == {}
    assert [(h.number, h.status, h.applied, h.line, h.message) for h in out.hunks] == [
        (0, "exact", True, None, "deletes the (empty) file"),
        (0, "failed", False, None, "the patch deletes this file but lines remain")]
    gnu_rc, gnu_log, gnu = gnu_patch(tmp_path, {F: b"a\n"}, diff, "-F0")
    assert gnu_rc == 1 and "Not deleting file pkg/mod.py as content differs from patch" in gnu_log
    assert gnu[F] == b"a\n"
    git_rc, git_log, _ = git_apply(tmp_path, {F: b"a\n"}, diff)
    assert git_rc != 0 and "removal patch leaves file contents" in git_log


# --- the engine's mutation survivors, third round: every word and number a refusal shows -----------------


@needs_patch
def test_a_lone_context_free_hunk_read_as_the_whole_file_names_where_its_lines_stand(tmp_path):
    """``@@ -1,3 +1 @@`` without context on a file whose three lines stand one line down: GNU patch and
    ``git apply --unidiff-zero`` both edit them at line 2; read as the whole file it is refused, naming line 2."""
    tree, diff = b"z\n# a\n# b\n\nimport x\n", HEAD + "@@ -1,3 +1 @@\n-# a\n-# b\n-\n+patched = 1\n"
    out = apply_patch({F: tree}, patch_of(diff))
    assert out.status == "failed" and out.files == {}
    assert [(h.number, h.status, h.line, h.candidates, h.message) for h in out.hunks] == [
        (1, "failed", 1, (2,), "the lines this lone context-free hunk at line 1 removes stand at line 2, but it is "
         "read as the whole file (as git apply reads it without --unidiff-zero), so it must land at the start and "
         "the end of the file, and this file has other lines: refused rather than guess (GNU patch and git apply "
         "--unidiff-zero edit those lines in place); regenerate the patch with context")]
    rc, log, gnu = gnu_patch(tmp_path, {F: tree}, diff, "-F0")
    assert rc == 0 and "Hunk #1 succeeded at 2 (offset 1 line)." in log and gnu[F] == b"z\npatched = 1\nimport x\n"
    assert git_apply(tmp_path, {F: tree}, diff, "--unidiff-zero")[2][F] == gnu[F]
    assert git_apply(tmp_path, {F: tree}, diff)[0] != 0


@needs_patch
@pytest.mark.parametrize(("before", "after", "tree", "message"), [
    (BASE, "# header\n" + BASE, "# licence\n" + BASE,
     "the context matches at line 2, but this hunk must land at the start of the file (its context is anchored "
     "there; GNU patch and git apply refuse it too)"),
    (BASE, BASE + "appended\n", BASE + "line 39\nline 40\nmore\n",
     "the context matches at line 38, but this hunk must land at the end of the file (its context is anchored "
     "there; GNU patch and git apply refuse it too)"),
], ids=["start", "end"])
def test_an_anchored_hunk_whose_lines_stand_elsewhere_names_that_line(tmp_path, before, after, tree, message):
    diff = udiff(F, before, after)
    out = apply_patch({F: tree.encode()}, patch_of(diff))
    assert out.status == "failed" and [(h.status, h.message) for h in out.hunks] == [("failed", message)]
    both_refuse(tmp_path, {F: tree.encode()}, diff)


@needs_patch
def test_a_patch_whose_line_endings_differ_from_the_files_names_the_line_and_what_to_do(tmp_path):
    before = "zero\none\ntwo\nthree\nfour\n"
    diff = udiff(F, before, before.replace("two\n", "two\nadded\n"), n=2)
    tree = ("top\n" + before).replace("\n", "\r\n").encode()
    out = apply_patch({F: tree}, patch_of(diff))
    assert out.status == "failed" and [(h.status, h.line, h.message) for h in out.hunks] == [
        ("failed", 2, "the context matches at line 3 only when line endings are ignored (CRLF against LF, or the "
                      "newline at the end of the file): refused, as git apply does; regenerate the patch from this "
                      "file's bytes")]
    both_refuse(tmp_path, {F: tree}, diff)


@needs_patch
def test_an_ambiguous_hunk_names_its_first_six_places_and_counts_them_all(tmp_path):
    """Seven copies of the hunk's lines, none at the stated line 20 (the nearest at 19): GNU patch and git apply
    both take line 19; refused, naming six places and counting seven, every one a candidate."""
    tree, diff = b"x\nk\ny\n" * 7, HEAD + "@@ -20,3 +20,3 @@\n x\n-k\n+K\n y\n"
    out = apply_patch({F: tree}, patch_of(diff))
    assert out.status == "failed" and [(h.line, h.candidates, h.message) for h in out.hunks] == [
        (20, (1, 4, 7, 10, 13, 16, 19),
         "ambiguous: the context matches at 7 places (lines 1, 4, 7, 10, 13, 16), none at the stated line")]
    rc, log, gnu = gnu_patch(tmp_path, {F: tree}, diff, "-F0")
    assert rc == 0 and "Hunk #1 succeeded at 19 (offset -1 lines)." in log
    assert git_apply(tmp_path, {F: tree}, diff)[2][F] == gnu[F] == b"x\nk\ny\n" * 6 + b"x\nK\ny\n"


@needs_patch
def test_a_patch_partly_in_the_tree_names_the_hunks_found_applied(tmp_path):
    """Three hunks, the first two in the tree already: neither pristine nor patched, and the message names
    both (GNU patch -N says it is reversed or applied and skips it; git apply refuses it)."""
    before = lines(60)
    after = before.replace("line 10\n", "line 10!\n").replace("line 30\n", "line 30!\n").replace(
        "line 50\n", "line 50!\n")
    diff = udiff(F, before, after)
    half = before.replace("line 10\n", "line 10!\n").replace("line 30\n", "line 30!\n").encode()
    out = apply_patch({F: half}, patch_of(diff))
    assert (out.status, out.files, out.message) == (
        "failed", {}, "partly applied already (hunks 1, 2): the tree is neither pristine nor patched")
    assert [(h.number, h.status, h.applied, h.line) for h in out.hunks] == [
        (1, "already-applied", False, 7), (2, "already-applied", False, 27), (3, "exact", True, 47)]
    assert git_apply(tmp_path, {F: half}, diff)[0] != 0
    rc, log, gnu = gnu_patch(tmp_path, {F: half}, diff, "-F0", "-N")
    assert rc == 1 and "Reversed (or previously applied) patch detected!  Skipping patch." in log
    assert gnu[F] == half


@needs_patch
def test_a_patch_with_two_sections_for_one_file_applies_the_second_to_what_the_first_wrote(tmp_path):
    """Both sections name ``pkg/mod.py``; the second changes a line only the first wrote. GNU patch and git
    apply both apply them in turn; so does the engine, and a plain edit sets no mode."""
    tree, diff = b"a\nb\nc\n", HEAD + "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n" + HEAD + "@@ -1,3 +1,3 @@\n a\n-B\n+X\n c\n"
    out = apply_patch({F: tree}, patch_of(diff))
    assert (out.status, out.files, out.modes) == ("applies", {F: b"a\nX\nc\n"}, {})
    assert [(h.number, h.status, h.line, h.patch_line) for h in out.hunks] == [(1, "exact", 1, 4), (2, "exact", 1, 12)]
    assert both_write(tmp_path, {F: tree}, diff, F) == b"a\nX\nc\n"


@needs_patch
def test_a_creation_without_a_git_header_applies_as_both_tools_apply_it(tmp_path):
    diff = f"--- /dev/null\n+++ b/{F}\n@@ -0,0 +1 @@\n+x\n"
    out = apply_patch({F: None}, patch_of(diff))
    assert (out.status, out.files, out.modes) == ("applies", {F: b"x\n"}, {})
    assert [(h.number, h.status, h.line, h.message) for h in out.hunks] == [(1, "exact", 1, "")]
    assert gnu_patch(tmp_path, {}, diff, "-F0")[2] == git_apply(tmp_path, {}, diff)[2] == {F: b"x\n"}


@needs_patch
@pytest.mark.parametrize(("tree", "diff", "message"), [
    # at line 1: its old lines and its new lines both stand at the start
    (b"a\na\na\nz\n", "@@ -1,2 +1,3 @@\n a\n+a\n a\n",
     "ambiguous: both readings fit, applying it and its being applied already (at line 1; its added lines repeat "
     "its context): refused; regenerate the patch with more context"),
    # the same at line 4, after a hunk that added two lines: still the file's own line
    (b"top\nq\nr\na\na\na\nz\n", "@@ -1,2 +1,4 @@\n top\n+n1\n+n2\n q\n@@ -4,2 +6,3 @@\n a\n+a\n a\n",
     "ambiguous: both readings fit, applying it and its being applied already (at line 4; its added lines repeat "
     "its context): refused; regenerate the patch with more context"),
], ids=["line-1", "after-a-hunk"])
def test_a_hunk_whose_added_lines_repeat_its_context_where_both_stand_is_refused_by_its_line(tmp_path, tree, diff,
                                                                                          message):
    out = apply_patch({F: tree}, patch_of(HEAD + diff))
    assert out.status == "failed" and out.files == {} and (out.hunks[-1].status, out.hunks[-1].message) == (
        "failed", message)
    rc, _, gnu = gnu_patch(tmp_path, {F: tree}, HEAD + diff, "-F0")
    assert rc == 0 and gnu[F] == git_apply(tmp_path, {F: tree}, HEAD + diff)[2][F]


@needs_patch
def test_a_hunk_that_removes_and_adds_the_same_line_applies_as_both_tools_apply_it(tmp_path):
    tree, diff = b"a\nb\nc\n", HEAD + "@@ -1,3 +1,3 @@\n a\n-b\n+b\n c\n"
    out = apply_patch({F: tree}, patch_of(diff))
    assert (out.status, out.files) == ("applies", {F: tree})
    assert [(h.status, h.line) for h in out.hunks] == [("exact", 1)]
    assert both_write(tmp_path, {F: tree}, diff, F) == tree


@needs_patch
@pytest.mark.parametrize(("tree", "diff", "verdicts"), [
    # old lines at line 1 (git apply, which anchors nothing here, applies there), new lines at the end: GNU
    # patch -N takes it for applied, git apply applies it again
    (b"c\nd\ne\nf\ng\nh\nc\nd\ne\nX\nf\n", "@@ -5,4 +5,5 @@\n c\n d\n e\n+X\n f\n",
     [(1, "failed", 7, (1, 7),
       "its old lines at line 1, where git apply would apply it, and its new lines at line 7")]),
    # the same after a hunk that added two lines: the file's own lines
    (b"top\nq\nc\nd\ne\nf\ng\nh\nc\nd\ne\nX\nf\n",
     "@@ -1,2 +1,4 @@\n top\n+n1\n+n2\n q\n@@ -7,4 +9,5 @@\n c\n d\n e\n+X\n f\n",
     [(1, "exact", 1, (), ""),
      (2, "failed", 9, (3, 9),
       "its old lines at line 3, where git apply would apply it, and its new lines at line 9")]),
], ids=["alone", "after-a-hunk"])
def test_a_hunk_already_at_the_end_whose_old_lines_git_apply_would_take_is_refused_naming_both(tmp_path, tree, diff,
                                                                                               verdicts):
    out = apply_patch({F: tree}, patch_of(HEAD + diff))
    assert out.status == "failed" and out.files == {}
    assert [(h.number, h.status, h.line, h.candidates, h.message) for h in out.hunks] == [
        (n, s, ln, c, m and "ambiguous: both readings fit, applying it and its being applied already (" + m
         + "): refused; regenerate the patch with more context") for n, s, ln, c, m in verdicts]
    git_rc, _, git = git_apply(tmp_path, {F: tree}, HEAD + diff)
    assert git_rc == 0 and git[F].count(b"X\n") == 2
    gnu_rc, log, _ = gnu_patch(tmp_path, {F: tree}, HEAD + diff, "-F0", "-N")
    assert gnu_rc == 1 and ("Reversed (or previously applied) patch detected!" in log or "Hunk #2 FAILED at 9." in log)


_TWENTY = lines(20)


@needs_patch
@pytest.mark.parametrize(("after", "tree", "line"), [
    # the line it replaces stands elsewhere too: its new lines are there, it is applied
    (_TWENTY.replace("line 10\n", "line 10 fixed\n"), _TWENTY.replace("line 10\n", "line 10 fixed\n") + "line 10\n", 7),
    # a deletion of two lines apart, both gone
    (_TWENTY.replace("line 8\n", "").replace("line 10\n", ""), _TWENTY.replace("line 8\n", "").replace("line 10\n", ""),
     5),
    # its new lines twice, one of them at the stated line
    (_TWENTY.replace("line 10\n", "line 10 fixed\n"),
     _TWENTY.replace("line 10\n", "line 10 fixed\n") + "".join(f"line {i}\n" for i in (7, 8, 9)) + "line 10 fixed\n"
     + "".join(f"line {i}\n" for i in (11, 12, 13)), 7),
], ids=["replaced-line-elsewhere", "two-deletions", "new-lines-twice"])
def test_a_hunk_in_the_tree_already_is_already_applied_where_gnu_patch_finds_it_reversed(tmp_path, after, tree, line):
    diff = udiff(F, _TWENTY, after)
    out = apply_patch({F: tree.encode()}, patch_of(diff))
    assert (out.status, out.files, out.message) == ("already-applied", {}, "every hunk is already in the tree")
    assert [(h.status, h.applied, h.line, h.message) for h in out.hunks] == [("already-applied", False, line, "")]
    rc, log, _ = gnu_patch(tmp_path, {F: tree.encode()}, diff, "-F0", "-N")
    assert rc == 1 and "Reversed (or previously applied) patch detected!  Skipping patch." in log
    assert git_apply(tmp_path, {F: tree.encode()}, diff, "-R", "--check")[0] == 0


_JOINS = "the result would join two lines (a line without its newline mid-file)"


@needs_patch
@pytest.mark.parametrize(("tree", "hunk", "verdict", "gnu", "git"), [
    (b"a\nb\nc\n", "@@ -2,0 +3 @@", ("failed", 3, _JOINS), b"a\nb\nx\nc\n", b"a\nb\nxc\n"),
    (b"a\nb\nc", "@@ -2,0 +3 @@", ("failed", 3, _JOINS), b"a\nb\nx\nc", b"a\nb\nxc"),
    (b"a\r\nb\r\nc\r\n", "@@ -2,0 +3 @@", ("failed", 3, _MIXED), b"a\r\nb\r\nx\nc\r\n", b"a\r\nb\r\nxc\r\n"),
    # stated at the end, it lands there, as with both tools
    (b"a\nb\nc\n", "@@ -3,0 +4 @@", ("exact", 4, ""), b"a\nb\nc\nx", b"a\nb\nc\nx"),
], ids=["mid-file", "no-final-newline", "crlf", "at-the-end"])
def test_a_context_free_insertion_of_a_line_without_its_newline_is_placed_by_its_header_alone(
        tmp_path, tree, hunk, verdict, gnu, git):
    """``-U0``, ``+x`` without its newline, stated after line 2 of three: GNU patch -F0 inserts it there with a
    newline added, ``git apply --unidiff-zero`` glues ``c`` onto it. The engine used to move it to the end of the
    file (offset 1, where neither tool puts it); it is refused at line 3, naming why."""
    diff = HEAD + hunk + "\n+x\n\\ No newline at end of file\n"
    out = apply_patch({F: tree}, patch_of(diff))
    assert [(h.status, h.line, h.message) for h in out.hunks] == [verdict]
    assert out.files == ({F: gnu} if verdict[0] == "exact" else {})
    assert gnu_patch(tmp_path, {F: tree}, diff, "-F0")[2][F] == gnu
    assert git_apply(tmp_path, {F: tree}, diff, "--unidiff-zero")[2][F] == git


@needs_patch
@pytest.mark.parametrize(("tree", "hunks", "after", "verdicts"), [
    # CRLF lines two lines above and two below the insertion point: the lines beside it end in LF, as it does
    (b"a\r\nb\nc\nd\r\n", "@@ -2,0 +3 @@\n+new\n", b"a\r\nb\nnew\nc\nd\r\n", [("exact", 3, "")]),
    # a CRLF line at the top, the file's first line LF: refused, not written mixed
    (b"a\nb\nc\nd\r\n", "@@ -0,0 +1 @@\n+top\r\n@@ -2,0 +4 @@\n+new\n", None,
     [("failed", 1, _MIXED), ("exact", 3, "")]),
], ids=["beside", "top"])
def test_a_context_free_insertion_looks_at_the_line_endings_of_the_lines_beside_it(tmp_path, tree, hunks, after,
                                                                                 verdicts):
    diff = HEAD + hunks
    out = apply_patch({F: tree}, patch_of(diff))
    assert [(h.status, h.line, h.message) for h in out.hunks] == verdicts
    assert out.files == ({F: after} if after else {})
    if after:
        assert gnu_patch(tmp_path, {F: tree}, diff, "-F0")[2][F] == after
        assert git_apply(tmp_path, {F: tree}, diff, "--unidiff-zero")[2][F] == after


_OVERLAP = ("the context matches only at line 5, before the end of the previous hunk: the hunks are out of order "
            "or overlap")
_SIXTY = lines(60)
_TAIL = _SIXTY[_SIXTY.index("line 37\n"):_SIXTY.index("line 44\n")]  # lines 37-43 again, at the end


@needs_patch
def test_after_a_hunk_that_failed_the_next_is_looked_for_where_gnu_patch_looks(tmp_path):
    """Hunk 1 lands 3 lines down and adds two, hunk 2 fails, hunk 3's lines stand twice: at the stated line moved by
    hunk 1's offset, and at the end. GNU patch -F0 carries hunk 1's offset past the failed hunk and takes the first;
    so does the engine (git apply refuses the patch)."""
    after = _SIXTY.replace("line 10\n", "line 10\nadd1\nadd2\n").replace("line 25\n", "line 25!\n").replace(
        "line 40\n", "line 40!\n")
    diff = udiff(F, _SIXTY, after)
    tree = ("x\n" * 3 + _SIXTY.replace("line 25\n", "line twentyfive\n") + _TAIL).encode()
    out = apply_patch({F: tree}, patch_of(diff))
    assert [(h.number, h.status, h.line, h.offset, h.message) for h in out.hunks] == [
        (1, "offset", 11, 3, ""), (2, "failed", 25, 3, "context not found; nearest candidate at line 25"),
        (3, "offset", 40, 3, "")]
    rc, log, _ = gnu_patch(tmp_path, {F: tree}, diff, "-F0")
    assert rc == 1 and "Hunk #2 FAILED at 24.\nHunk #3 succeeded at 42 (offset 3 lines)." in log  # 40, two lines added


@needs_patch
def test_a_patch_in_the_tree_already_on_a_file_moved_down_is_found_where_gnu_patch_reverses_it(tmp_path):
    """Applied already, on a file with three lines more at the top; hunk 2's new lines stand twice (at the end too).
    After hunk 1, found applied with offset 3 and two lines added, hunk 2 is looked for 5 lines down: the copy
    ``patch -R`` reverts (GNU reports it at 40, once hunk 1's two lines are gone)."""
    after = _SIXTY.replace("line 10\n", "line 10\nadd1\nadd2\n").replace("line 40\n", "line 40!\n")
    diff = udiff(F, _SIXTY, after)
    tree = ("x\n" * 3 + after + _TAIL.replace("line 40\n", "line 40!\n")).encode()
    out = apply_patch({F: tree}, patch_of(diff))
    assert (out.status, out.files) == ("already-applied", {})
    assert [(h.number, h.status, h.line, h.offset) for h in out.hunks] == [
        (1, "already-applied", 11, 3), (2, "already-applied", 42, 5)]
    rc, log, _ = gnu_patch(tmp_path, {F: tree}, diff, "-F0", "-R", "--dry-run")
    assert rc == 0 and "Hunk #1 succeeded at 11 (offset 3 lines).\nHunk #2 succeeded at 40 (offset 3 lines)." in log


@needs_patch
@pytest.mark.parametrize(("tree", "hunks", "verdicts"), [
    # hunk 2 fails; hunk 3's ``E`` stands only where hunk 1 wrote it
    (b"a\nb\nc\nd\ne\nf\ng\nh\n", "@@ -5 +5 @@\n-e\n+E\n@@ -6 +6 @@\n-zz\n+y\n@@ -8 +8 @@\n-E\n+x\n",
     [(1, "exact", 5, ""), (2, "failed", 6, "context not found"), (3, "failed", 8, _OVERLAP)]),
    # hunk 1 is in the tree already; hunk 2's ``E`` is hunk 1's own line
    (b"a\nb\nc\nd\nE\nf\ng\nh\n", "@@ -5 +5 @@\n-e\n+E\n@@ -8 +8 @@\n-E\n+x\n",
     [(1, "already-applied", 5, ""), (2, "failed", 8, _OVERLAP)]),
], ids=["after-a-failed-hunk", "after-an-applied-one"])
def test_a_hunk_is_never_placed_inside_the_previous_one_whatever_came_between(tmp_path, tree, hunks, verdicts):
    diff = HEAD + hunks
    out = apply_patch({F: tree}, patch_of(diff))
    assert out.status == "failed" and out.files == {}
    assert [(h.number, h.status, h.line, h.message) for h in out.hunks] == verdicts
    assert git_apply(tmp_path, {F: tree}, diff, "--unidiff-zero")[0] == 1
    rc, _, gnu = gnu_patch(tmp_path, {F: tree}, diff, "-F0", "-N")
    assert rc == 1 and not gnu[F].endswith(b"x\n") and b"\nx\n" not in gnu[F]


def _ls(numbers) -> bytes:
    return "".join(f"l{i}\n" for i in numbers).encode()


_MID = "@@ -5,7 +5,7 @@\n l5\n l6\n l7\n-l8\n+L\n l9\n l10\n l11\n"


@needs_patch
@pytest.mark.parametrize(("tree", "hunks", "allowed", "verdict", "gnu_says"), [
    # two lines of context before, three after, mid-file: fuzz 1 ignores only a trailing line (GNU's asymmetric
    # rule), so a changed first and last line need fuzz 2
    (_ls(range(1, 21)).replace(b"l10\n", b"x10\n").replace(b"l15\n", b"x15\n"),
     "@@ -10,6 +10,6 @@\n l10\n l11\n-l12\n+L\n l13\n l14\n l15\n", 1, ("fuzz", False, 10, 2), "Hunk #1 FAILED at 10."),
    (_ls(range(1, 21)).replace(b"l10\n", b"x10\n").replace(b"l15\n", b"x15\n"),
     "@@ -10,6 +10,6 @@\n l10\n l11\n-l12\n+L\n l13\n l14\n l15\n", 2, ("fuzz", True, 10, 2),
     "Hunk #1 succeeded at 10 with fuzz 2."),
    # the same shape at line 1, on a file with a line more at the top: with fuzz 1 it is no longer anchored at the
    # start
    (b"top\n" + _ls(range(1, 11)).replace(b"l6\n", b"x6\n"), "@@ -1,6 +1,6 @@\n l1\n l2\n-l3\n+L\n l4\n l5\n l6\n", 1,
     ("fuzz", True, 2, 1), "Hunk #1 succeeded at 2 with fuzz 1 (offset 1 line)."),
    # one line of context before, three after, at line 2: never anchored at the start
    (_ls(range(1, 11)).replace(b"l6\n", b"x6\n"), "@@ -2,5 +2,5 @@\n l2\n-l3\n+L\n l4\n l5\n l6\n", 1,
     ("fuzz", True, 2, 1), "Hunk #1 succeeded at 2 with fuzz 1."),
    # three before, two after: anchored at the end without fuzz, not with fuzz 1
    (_ls(range(1, 21)).replace(b"l5\n", b"x5\n"), "@@ -5,6 +5,6 @@\n l5\n l6\n l7\n-l8\n+L\n l9\n l10\n", 1,
     ("fuzz", True, 5, 1), "Hunk #1 succeeded at 5 with fuzz 1."),
    # its lines but the first stand twice, once where it says: placed there
    (_ls(range(1, 21)).replace(b"l5\n", b"x5\n") + _ls(range(6, 12)), _MID, 1, ("fuzz", True, 5, 1),
     "Hunk #1 succeeded at 5 with fuzz 1."),
    # hunk 2's first context line, ignored, is hunk 1's last line
    (b"a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n", "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n@@ -3,5 +3,5 @@\n Q\n d\n-e\n+E\n f\n g\n", 1,
     ("fuzz", True, 3, 1), "Hunk #2 succeeded at 3 with fuzz 1."),
    # at line 1 without leading context, its last line changed: placed at line 1, the trailing line ignored
    (_ls(range(1, 11)).replace(b"l4\n", b"x4\n"), "@@ -1,4 +1,4 @@\n-l1\n+L\n l2\n l3\n l4\n", 1,
     ("fuzz", True, 1, 1), "Hunk #1 succeeded at 1 with fuzz 1."),
    # its last two context lines are past the end of the file: fuzz 2 places it, as GNU does
    (_ls(range(1, 10)), _MID, 1, ("fuzz", False, 5, 2), "Hunk #1 FAILED at 5."),
    (_ls(range(1, 10)), _MID, 2, ("fuzz", True, 5, 2), "Hunk #1 succeeded at 5 with fuzz 2."),
    # its first context lines would be before line 1: GNU patch refuses it with any fuzz; the engine used to place
    # it "at line 0" (fuzz 1) or "line -1" (fuzz 2)
    (_ls(range(6, 20)), _MID, 2, ("failed", False, 5, 0), "Hunk #1 FAILED at 5."),
    (_ls(range(7, 20)), _MID, 2, ("failed", False, 5, 0), "Hunk #1 FAILED at 5."),
], ids=["less-leading-fuzz-1", "less-leading-fuzz-2", "line-1", "line-2", "less-trailing", "twice", "at-the-previous",
        "at-line-1",
        "past-the-end-fuzz-1", "past-the-end-fuzz-2", "before-the-start", "before-the-start-by-2"])
def test_fuzz_places_a_hunk_where_gnu_patch_does_with_as_much_fuzz(tmp_path, tree, hunks, allowed, verdict, gnu_says):
    """Hand-written hunks whose contexts are not as long, or lie at the file's edges: the fuzz each needs, and where
    it lands, as GNU patch -F1 / -F2 on the same bytes (git apply, which has no fuzz, refuses every one)."""
    diff = HEAD + hunks
    out = apply_patch({F: tree}, patch_of(diff), max_fuzz=allowed)
    last = out.hunks[-1]
    assert (last.status, last.applied, last.line, last.fuzz) == verdict
    rc, log, gnu = gnu_patch(tmp_path, {F: tree}, diff, f"-F{allowed}")
    assert gnu_says in log, log
    assert (rc == 0) == out.ok and (not out.ok or out.files[F] == gnu[F])
    assert git_apply(tmp_path, {F: tree}, diff)[0] != 0


def _filler_with(blocks: dict[int, str], n: int = 40) -> bytes:
    """``n`` filler lines with each block's lines from its 1-based line on."""
    out = [f"f{i}\n" for i in range(1, n + 1)]
    for at, block in blocks.items():
        for i, line in enumerate(block.splitlines(keepends=True)):
            out[at - 1 + i] = line
    return "".join(out).encode()


_NEAR = "@@ -20,5 +20,5 @@\n a\n b\n-c\n+C\n d  \n e\n"  # a context line with trailing blanks
_FOUR, _THREE = "a\nb\ncX\nd  \ne\n", "a\nb\ncX\nY\ne\n"  # four and three of its five lines


@needs_patch
@pytest.mark.parametrize(("tree", "candidate", "differ"), [
    # the most lines in common wins, wherever it is
    (_filler_with({10: _FOUR, 30: _THREE}), 10, ("@@ -2,3 +2,3 @@", " b", "-c", "+cX", " d  ")),
    # as many in common: the nearer to the stated line 20 wins, before or after it
    (_filler_with({15: _FOUR, 22: _FOUR}), 22, ("@@ -2,3 +2,3 @@", " b", "-c", "+cX", " d  ")),
    # as near, before and after: the one before
    (_filler_with({15: _FOUR, 25: _FOUR}), 15, ("@@ -2,3 +2,3 @@", " b", "-c", "+cX", " d  ")),
    # its first line is the file's last: no window of five lines holds it
    (_filler_with({40: "a\n"}), None, ()),
], ids=["most-in-common", "nearer-after", "before-on-a-tie", "past-the-end"])
def test_a_failed_hunks_nearest_candidate_is_the_window_most_like_it_nearest_the_stated_line(tmp_path, tree, candidate,
                                                                                           differ):
    """What `check` shows for a hunk that fails: the place most like it (the most lines in common, then the nearest
    to where it should be, then the earlier) and the lines that differ there, blanks and all."""
    diff = HEAD + _NEAR
    out = apply_patch({F: tree}, patch_of(diff))
    assert out.status == "failed"
    (h,) = out.hunks
    assert (h.status, h.line, h.message, h.candidates, h.differ) == (
        "failed", 20, CONTEXT + (f"; nearest candidate at line {candidate}" if candidate else ""),
        (candidate,) if candidate else (), ("--- patch expects", "+++ tree has", *differ) if differ else ())
    both_refuse(tmp_path, {F: tree}, diff)


CONTEXT = "context not found"


def test_a_hunk_that_differs_from_the_file_only_in_its_final_newline_shows_no_other_difference():
    """Made on a file without a final newline, on one that has it: refused for the line endings, and the lines
    shown as differing are none (they differ only in the newline the message names)."""
    diff = udiff(F, "a\nb\nc", "a\nb\nc\nd")
    (h,) = apply_patch({F: b"a\nb\nc\n"}, patch_of(diff)).hunks
    assert (h.status, h.candidates, h.differ) == ("failed", (1,), ())
    assert h.message.startswith("the context matches at line 1 only when line endings are ignored")


_L40 = "".join(f"l{i}\n" for i in range(1, 41))
_ADD2 = "@@ -2,2 +2,4 @@\n l2\n+n1\n+n2\n l3\n"  # hunk 1 of each: two lines added after line 2


@needs_patch
@pytest.mark.parametrize(("tree", "hunk", "verdict", "gnu_rc", "git"), [
    # its line stands at lines 20 and 33, not at 27: GNU patch takes 33, git apply 20
    (_L40.replace("l20\n", "k\n").replace("l33\n", "k\n"), "@@ -27 +29 @@\n-k\n+K\n",
     (27, (20, 33), "ambiguous: the context matches at 2 places (lines 20, 33), none at the stated line"), 0,
     ("--unidiff-zero", 0)),
    # hunk 2 writes ``E`` at line 10; hunk 3 removes an ``E`` stated at 14
    (_L40, "@@ -10 +12 @@\n-l10\n+E\n@@ -14 +16 @@\n-E\n+x\n",
     (14, (), "the context matches only at line 10, before the end of the previous hunk: the hunks are out of order "
              "or overlap"), 1, ("--unidiff-zero", 1)),
    # three lines of context before, none after: anchored at the end by both tools, it stands at line 20
    (_L40, "@@ -20,4 +22,4 @@\n l20\n l21\n l22\n-l23\n+X\n",
     (20, (20,), "the context matches at line 20, but this hunk must land at the end of the file (its context is "
                 "anchored there; GNU patch and git apply refuse it too)"), 1, ("--check", 1)),
    # three before, one after: GNU patch anchors it at the end, git apply does not and places it at line 20
    (_L40, "@@ -20,5 +22,5 @@\n l20\n l21\n l22\n-l23\n+X\n l24\n",
     (20, (20,), "the context matches at line 20, where git apply places it (offset 0); GNU patch refuses it: for "
                 "GNU patch it must land at the end of the file, having less trailing context than leading. "
                 + DISAGREE),
     1, ("--check", 0)),
], ids=["ambiguous", "overlap", "anchored-both", "anchored-gnu"])
def test_after_a_hunk_that_added_lines_a_refusal_names_the_files_own_lines(tmp_path, tree, hunk, verdict, gnu_rc, git):
    """Each after hunk 1 added two lines near the top: the lines a refusal names, in its message and as candidates,
    are the file's own (as `check` shows them beside the file), not the lines of the file as patched so far."""
    diff = HEAD + _ADD2 + hunk
    out = apply_patch({F: tree.encode()}, patch_of(diff))
    assert out.status == "failed" and out.hunks[0].status == "exact"
    assert (out.hunks[-1].status, out.hunks[-1].line, out.hunks[-1].candidates, out.hunks[-1].message) == (
        "failed", *verdict)
    assert gnu_patch(tmp_path, {F: tree.encode()}, diff, "-F0")[0] == gnu_rc
    assert git_apply(tmp_path, {F: tree.encode()}, diff, git[0])[0] == git[1]


@needs_patch
@pytest.mark.parametrize(("after", "tree", "line", "message"), [
    ("# header\n" + _TWENTY, "# licence\n# header\n" + _TWENTY, 1,
     "the context matches at line 3, but this hunk must land at the start of the file (its context is anchored "
     "there; GNU patch and git apply refuse it too)"),
    (_TWENTY + "appended\n", _TWENTY + "appended\nmore\n", 18,
     "the context matches at line 18, but this hunk must land at the end of the file (its context is anchored "
     "there; GNU patch and git apply refuse it too)"),
], ids=["start", "end"])
def test_an_anchored_hunk_whose_new_lines_stand_elsewhere_is_not_already_applied(tmp_path, after, tree, line, message):
    """Its new lines stand, but not at the start (or end) where it is anchored: not applied already (git apply -R
    refuses it as well), refused where its old lines stand."""
    diff = udiff(F, _TWENTY, after)
    out = apply_patch({F: tree.encode()}, patch_of(diff))
    assert out.status == "failed" and [(h.status, h.line, h.message) for h in out.hunks] == [
        ("failed", line, message)]
    both_refuse(tmp_path, {F: tree.encode()}, diff)
    assert git_apply(tmp_path, {F: tree.encode()}, diff, "-R", "--check")[0] != 0


@needs_patch
def test_a_drifted_pure_deletion_whose_removed_line_stands_at_line_1_says_so(tmp_path):
    block = "    a = 1\n    b = 2\n    c = 3\n    remove_me()\n    d = 4\n    e = 5\n    f = 6\n"
    before = "def f():\n" + block + "\n" * 20
    diff = udiff(F, before, before.replace("    remove_me()\n", ""))
    tree = ("    remove_me()\n" + "\n" * 5 + before.replace("    remove_me()\n", "")).encode()
    out = apply_patch({F: tree}, patch_of(diff))
    assert out.status == "failed" and [(h.status, h.line, h.message) for h in out.hunks] == [
        ("failed", 2, "the context around the removed lines is joined at line 8 but the lines it removes still stand "
                      "at line 1: neither applied nor applicable")]
    assert git_apply(tmp_path, {F: tree}, diff)[0] != 0


def test_more_distinct_edits_than_the_engine_keeps_each_get_their_own_result():
    """A long series checked on many releases makes more distinct edits than the engine remembers (4,096): each
    still gets its own verdict and bytes."""
    for i in range(4200):
        out = apply_patch({F: f"x{i}\n".encode()}, patch_of(f"--- a/{F}\n+++ b/{F}\n@@ -1 +1 @@\n-x{i}\n+y{i}\n"))
        assert (out.status, out.files) == ("applies", {F: f"y{i}\n".encode()})


@needs_patch
def test_a_context_free_insertion_at_line_0_after_another_hunk_is_refused_as_misordered(tmp_path):
    """``-U0``: hunk 1 deletes line 1, hunk 2 inserts at line 0, before it. GNU patch -F0 refuses hunk 2
    ("misordered hunks"), ``git apply --unidiff-zero`` inserts it: the tools part, the engine refuses it (it used to
    insert it, naming "line 2, offset 1")."""
    tree, diff = b"a\nb\nc\n", HEAD + "@@ -1 +0,0 @@\n-a\n@@ -0,0 +1 @@\n+x\n"
    out = apply_patch({F: tree}, patch_of(diff))
    assert out.status == "failed" and out.files == {}
    assert [(h.number, h.status, h.line, h.message) for h in out.hunks] == [
        (1, "exact", 1, ""), (2, "failed", 1, f"the insertion point (line 0) {_WHERE}")]
    rc, log, _ = gnu_patch(tmp_path, {F: tree}, diff, "-F0")
    assert rc == 1 and "misordered hunks! output would be garbled\nHunk #2 FAILED at 0." in log
    git_rc, _, git = git_apply(tmp_path, {F: tree}, diff, "--unidiff-zero")
    assert git_rc == 0 and git[F] == b"x\nb\nc\n"


@needs_patch
@pytest.mark.parametrize(("tree", "status", "verdicts"), [
    (b"x\na\nb\n", "applies", [(1, "offset", 2), (2, "offset", 3)]),
    # hunk 2's ``B`` stands where it would put it (the file's line 3, line 1 of its new side): applied already
    (b"x\na\nB\n", "failed", [(1, "offset", 2), (2, "already-applied", 3)]),
], ids=["applies", "second-already"])
def test_context_free_hunks_at_the_top_moved_down_are_found_applied_where_they_would_land(tmp_path, tree, status,
                                                                                         verdicts):
    """``-U0``: hunk 1 deletes ``a`` (stated at line 1, found at 2), hunk 2 replaces ``b`` (its new side at line 1).
    Where GNU patch -F0 and git apply place both, so does the engine; where hunk 2's result is there already, it is
    found there (GNU patch fails hunk 2, git apply the patch)."""
    diff = HEAD + "@@ -1 +0,0 @@\n-a\n@@ -2 +1 @@\n-b\n+B\n"
    out = apply_patch({F: tree}, patch_of(diff))
    assert out.status == status and [(h.number, h.status, h.line) for h in out.hunks] == verdicts
    rc, log, gnu = gnu_patch(tmp_path, {F: tree}, diff, "-F0")
    git_rc, _, git = git_apply(tmp_path, {F: tree}, diff, "--unidiff-zero")
    if out.ok:
        assert rc == 0 and git_rc == 0 and gnu[F] == git[F] == out.files[F] == b"x\nB\n"
    else:
        assert rc == 1 and "Hunk #2 FAILED at 1." in log and git_rc == 1


@needs_patch
def test_a_lone_context_free_insertion_stated_after_line_1_is_read_as_the_whole_file_as_git_apply_reads_it(tmp_path):
    """``@@ -1,0 +2 @@`` alone: git apply (without --unidiff-zero) reads it as a whole file that was empty and refuses
    it; GNU patch and ``git apply --unidiff-zero`` insert after line 1. Refused at line 1, naming its header's line."""
    tree, diff = b"a\nb\n", HEAD + "@@ -1,0 +2 @@\n+x\n"
    out = apply_patch({F: tree}, patch_of(diff))
    assert out.status == "failed" and [(h.status, h.line, h.message) for h in out.hunks] == [
        ("failed", 1, "this context-free hunk at line 1 says the file was empty, and it must land at the start of an "
                      "empty file; this file has lines (git apply refuses it too; regenerate the patch with context)")]
    assert git_apply(tmp_path, {F: tree}, diff)[0] != 0
    assert gnu_patch(tmp_path, {F: tree}, diff, "-F0")[2][F] == b"a\nx\nb\n"


def _insertion_then_whole_file() -> tuple[list[str], list[str], str]:
    """The 8 lines ``a1 = 1`` ..., what a whole-file hunk makes of them, and a patch that first inserts the 8
    lines at line 0 (context-free), then changes them with that whole-file hunk (``@@ -1,8 +9,20 @@``)."""
    old = [f"a{i} = {i}\n" for i in range(1, 9)]
    new = old[:3] + [f"n{i} = 0\n" for i in range(6)] + old[3:6] + [f"m{i} = 0\n" for i in range(6)] + old[6:]
    whole = unified_diff(F, [x.encode() for x in old], [x.encode() for x in new], 3).decode()
    second = whole[whole.index("@@"):].replace("@@ -1,8 +1,20 @@", "@@ -1,8 +9,20 @@")
    return old, new, f"--- a/{F}\n+++ b/{F}\n@@ -0,0 +1,8 @@\n" + "".join("+" + x for x in old) + second


@needs_patch
def test_a_place_among_the_lines_an_insertion_wrote_is_named_as_the_file_stands_after_it(tmp_path):
    """The same patch on a file holding the 8 lines once, between two others: git apply would anchor the
    whole-file hunk at the start, now the inserted lines, and GNU patch (anchored at the end) refuses it.
    The place is said as the line of the file as the insertion leaves it, and is no candidate (it was "line
    -7"). GNU `patch -F0` fails the hunk; `git apply --unidiff-zero` puts it on the file's own copy, line 2."""
    old, new, diff = _insertion_then_whole_file()
    tree = ("x = 0\n" + "".join(old) + "y = 0\n").encode()
    out = apply_patch({F: tree}, patch_of(diff))
    first, hunk = out.hunks
    assert (out.status, first.status, hunk.status, hunk.line, hunk.candidates) == ("failed", "exact", "failed", 1, ())
    assert hunk.message == (
        "the context matches at line 1 of the file as the hunks before this one leave it, where git apply places "
        "it (anchored at the start of the file, its old side beginning at line 1); GNU patch refuses it: for GNU "
        f"patch it must land at the end of the file, having less trailing context than leading{WHOLE}. {DISAGREE}")
    assert gnu_patch(tmp_path, {F: tree}, diff, "-F0")[0] != 0
    zero_rc, _, zero = git_apply(tmp_path, {F: tree}, diff, "--unidiff-zero")
    assert zero_rc == 0 and zero[F] == ("".join(old) + "x = 0\n" + "".join(new) + "y = 0\n").encode()


@needs_patch
def test_a_whole_file_hunk_after_an_insertion_at_line_0_names_each_tools_place_in_the_file_as_it_stands(tmp_path):
    """A context-free insertion at line 0 of the same 8 lines a whole-file hunk then changes: GNU patch anchors
    the second hunk at the end (the file's line 10, after the insertion), git apply would anchor it at the start,
    which is now the inserted lines: no line of the file names that place, so it is said as the line of the file
    as the first hunk leaves it, and only GNU's place is a candidate. Refused: with --unidiff-zero (which the
    insertion needs) git apply puts the hunk on the first copy, the file's line 2; without, it refuses."""
    old, new, diff = _insertion_then_whole_file()
    tree = ("x = 0\n" + "".join(old) * 2).encode()
    out = apply_patch({F: tree}, patch_of(diff))
    first, hunk = out.hunks
    assert (out.status, first.status, first.line, hunk.status, hunk.line) == ("failed", "exact", 1, "failed", 1)
    assert (hunk.message, hunk.candidates) == (
        "ambiguous: the context matches at 3 places and the tools disagree on the place (GNU patch at line 10, "
        "anchored at the end of the file, having less trailing context than leading; git apply at line 1 of the "
        "file as the hunks before this one leave it, anchored at the start of the file, its old side beginning at "
        f"line 1){WHOLE}: refused; regenerate the patch on this file", (10,))
    gnu_rc, _, gnu = gnu_patch(tmp_path, {F: tree}, diff, "-F0")
    patched = "".join(new).encode()
    assert gnu_rc == 0 and gnu[F] == "".join(old).encode() + b"x = 0\n" + "".join(old).encode() + patched
    git_rc, _, _ = git_apply(tmp_path, {F: tree}, diff)
    zero_rc, _, zero = git_apply(tmp_path, {F: tree}, diff, "--unidiff-zero")
    assert git_rc != 0 and zero_rc == 0
    assert zero[F] == "".join(old).encode() + b"x = 0\n" + patched + "".join(old).encode()
