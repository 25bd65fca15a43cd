"""Patch files: DEP-3 headers, layouts, and the input we refuse."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import patch_of, udiff
from test_core_engine import git_apply, gnu_patch, needs_patch

from patchset.core.engine import apply_patch
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


def test_an_old_path_leaving_the_tree_is_refused_though_a_plain_diff_edits_the_new_one():
    """Issue 21: ``--- a/../../etc/x`` over ``+++ b/vllm/x.py``. A plain diff edits the +++ file (GNU patch
    and git apply both take it), so the old name used to go unread; it is refused like a new one."""
    body = "@@ -1 +1 @@\n-x\n+y\n"
    with pytest.raises(PatchFileError, match=r"^recipes/x\.patch:1: path 'a/\.\./\.\./etc/x' leaves the tree"):
        parse("--- a/../../etc/x\n+++ b/vllm/x.py\n" + body)
    with pytest.raises(PatchFileError, match=r"^recipes/x\.patch:1: path '/etc/x' leaves the tree"):
        parse("--- /etc/x\n+++ vllm/x.py\n" + body, strip=0)
    # what stays allowed: an old name that is only another name inside the tree, or too short to strip
    assert parse("--- a/vllm/x.py.orig\n+++ b/vllm/x.py\n" + body).touched == ["vllm/x.py"]
    assert parse("--- x.py.orig\n+++ b/vllm/x.py\n" + body).touched == ["vllm/x.py"]


def test_binary_patches_are_refused_with_their_line():
    text = "diff --git a/w.bin b/w.bin\nindex 1..2 100644\nGIT binary patch\nliteral 3\nabc\n"
    with pytest.raises(PatchFileError) as e:
        parse(text)
    assert e.value.line == 3 and "binary" in str(e.value)


def test_hunk_shorter_than_its_header():
    text = "--- a/vllm/a.py\n+++ b/vllm/a.py\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n"
    with pytest.raises(PatchFileError) as e:
        parse(text)
    assert e.value.line == 6 and "-3 +3" in str(e.value) and "cut short" in str(e.value)


@needs_patch
def test_a_patch_file_ending_short_of_its_last_hunks_blank_context_is_refused_as_git_apply_does(tmp_path):
    """NVIDIA Dynamo's 002-pr55374 patch for vLLM 0.31.0 (commit ce2851e6) ends one line short: its last hunk's
    header says -6 +10, the file holds -5 +9, the blank context line it ended on stripped. GNU patch assumes
    stripped blank lines ("blank lines got chopped") and applies it, git apply refuses it as corrupt; patchset
    refuses it as git apply does, saying what is missing and how to mend it (docs/differential.md)."""
    base = {"vllm/a.py": b"a\nb\nc\n\nd\n"}
    text = "--- a/vllm/a.py\n+++ b/vllm/a.py\n@@ -1,4 +1,5 @@\n a\n+new\n b\n c\n"
    rc, _, gnu = gnu_patch(tmp_path, base, text, "-F0")
    assert rc == 0 and gnu["vllm/a.py"] == b"a\nnew\nb\nc\n\nd\n"
    rc, said, _ = git_apply(tmp_path, base, text)
    assert rc != 0 and "corrupt patch" in said
    with pytest.raises(PatchFileError) as e:
        parse(text)
    assert e.value.line == 7 and "the patch file ends here, inside the hunk @@ -1,4 +1,5 @@: it is cut short (its " \
        "header says -4 +5 lines, it has -3 +4); 1 context line(s) short: blank lines" in str(e.value)
    assert "restore the 1 blank context line(s)" in (e.value.hint or "")
    mended = parse(text + " \n").files[0].hunks[0]  # as the hint says: what GNU patch assumed, now written
    assert apply_patch(base, patch_of(text + " \n")).files["vllm/a.py"] == gnu["vllm/a.py"]
    assert mended.source_length == 4
    # short before another file's diff: no file end to blame, the plain reason
    with pytest.raises(PatchFileError) as e:
        parse(text + "diff --git a/vllm/b.py b/vllm/b.py\n--- a/vllm/b.py\n+++ b/vllm/b.py\n@@ -1 +1 @@\n-x\n+y\n")
    assert "cut short" not in str(e.value) and "regenerate the patch" in (e.value.hint or "")


@needs_patch
def test_a_patch_file_cut_inside_a_hunk_or_mid_line_says_so(tmp_path):
    """Issue 38: (b) a file cut inside a hunk was told to "restore the 7 blank context line(s)", a wrong mending:
    it is cut short at its last line. (a) a public `changes.diff` ends in the middle of its last line with no
    "\\ No newline at end of file": patchset read it silently as a whole line, git apply refuses it ("corrupt
    patch") and GNU patch warns and reads the line as having no newline (so the hunk fails on a file whose line
    has one). Refused, as git apply does, naming the file and line."""
    base = {"vllm/a.py": b"a\nb\nc\nd\ne\nf\ng\nh\n"}
    cut = "--- a/vllm/a.py\n+++ b/vllm/a.py\n@@ -1,8 +1,8 @@\n a\n-b\n+B\n"
    with pytest.raises(PatchFileError) as e:
        parse(cut)
    assert e.value.line == 6 and str(e.value).endswith(
        "the patch file ends here, inside the hunk @@ -1,8 +1,8 @@: it is cut short (its header says -8 +8 lines, "
        "it has -2 +2) (the patch file was cut: regenerate it, or take it whole from where it came)")
    assert git_apply(tmp_path, base, cut)[0] != 0
    with pytest.raises(PatchFileError, match=r"x\.patch:3: malformed hunk: the patch file ends here, inside the "
                       r"hunk .* it has -0 \+0"):
        parse(cut.split(" a\n")[0])
    mid = "--- a/vllm/a.py\n+++ b/vllm/a.py\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c"
    with pytest.raises(PatchFileError) as e:
        parse(mid)
    assert (e.value.file, e.value.line) == ("recipes/x.patch", 7)
    assert "the patch file ends in the middle of this line (no newline, and no '\\ No newline at end of file'" \
        in str(e.value)
    rc, said, _ = git_apply(tmp_path, base, mid)
    assert rc != 0 and "corrupt patch at line 7" in said
    rc, said, gnu = gnu_patch(tmp_path, base, mid, "-F0")
    assert rc != 0 and "patch unexpectedly ends in middle of line" in said and gnu["vllm/a.py"] == base["vllm/a.py"]
    assert parse(mid + "\n").hunks[0].keys[-1] == b"c\n"  # the mending the hint says
    # The file's last line outside a hunk (a mail's signature) may lack its newline.
    assert parse(mid + "\n-- \n2.43.0").hunks[0].keys[-1] == b"c\n"


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


# --- issue 7: read what a git diff says, by counts, on "\n" only ---------------------------------------


def test_symlinks_and_submodules_are_refused_with_their_line():
    text = "diff --git a/vllm/link b/vllm/link\nnew file mode 120000\n--- /dev/null\n+++ b/vllm/link\n" \
        "@@ -0,0 +1 @@\n+target\n\\ No newline at end of file\n"
    with pytest.raises(PatchFileError) as e:
        parse(text)
    assert e.value.line == 2 and "symlinks (mode 120000) are not supported" in str(e.value)
    with pytest.raises(PatchFileError, match="submodules"):
        parse("diff --git a/vllm/sub b/vllm/sub\nnew file mode 160000\nindex 0000000..1234567\n")


def test_git_headers_give_creation_deletion_copy_rename_and_modes():
    text = ("diff --git a/vllm/new.py b/vllm/new.py\nnew file mode 100755\nindex 0000000..e69de29\n"
            "diff --git a/vllm/gone.py b/vllm/gone.py\ndeleted file mode 100644\nindex e69de29..0000000\n"
            "diff --git a/vllm/a.py b/vllm/b.py\nsimilarity index 100%\ncopy from vllm/a.py\ncopy to vllm/b.py\n"
            "diff --git a/vllm/c.py b/vllm/d.py\nsimilarity index 100%\nrename from vllm/c.py\nrename to vllm/d.py\n"
            "diff --git a/vllm/run.py b/vllm/run.py\nold mode 100644\nnew mode 100755\n")
    new, gone, copy, rename, mode = parse(text).files
    assert (new.old_path, new.new_path, new.new_mode, new.hunks) == (None, "vllm/new.py", 0o100755, ())
    assert (gone.old_path, gone.new_path) == ("vllm/gone.py", None)
    assert copy.is_copy and not copy.is_rename and (copy.old_path, copy.new_path) == ("vllm/a.py", "vllm/b.py")
    assert rename.is_rename and not rename.is_copy and rename.touched == ["vllm/c.py", "vllm/d.py"]
    assert mode.mode_change == (0o100644, 0o100755)


def test_zero_hunk_numbers_do_not_make_a_creation_or_a_deletion():
    text = "--- a/vllm/__init__.py\n+++ b/vllm/__init__.py\n@@ -0,0 +1 @@\n+x = 1\n" \
        "--- a/vllm/b.py\n+++ b/vllm/b.py\n@@ -1 +0,0 @@\n-x = 1\n"
    edit, emptied = parse(text).files
    assert (edit.old_path, edit.new_path) == ("vllm/__init__.py", "vllm/__init__.py")
    assert (emptied.old_path, emptied.new_path) == ("vllm/b.py", "vllm/b.py")


def test_hunk_bodies_are_read_by_their_counts_and_split_on_newline_only():
    text = ("--- a/vllm/a.py\n+++ b/vllm/a.py\n@@ -1,3 +1,3 @@\n x\x0cy\n--- a/vllm/a.py\n+++ b/vllm/a.py\n"
            " z\u2028w\r\n-- \n2.39.5\n")
    pf = parse(text)
    (h,) = pf.hunks
    assert [(ln.kind, ln.text) for ln in h.lines] == [(" ", "x\x0cy"), ("-", "-- a/vllm/a.py"),
                                                      ("+", "++ b/vllm/a.py"), (" ", "z\u2028w\r")]
    assert len(pf.files) == 1  # the "-- " mail signature after the hunk is not a line of it


@needs_patch
def test_a_diff_converted_to_crlf_as_a_whole_is_read_as_gnu_patch_reads_it(tmp_path):
    """Issue 38: a format-patch mail saved with CRLF endings. GNU patch strips the CRs ("Stripping trailing CRs
    from patch") and writes LF lines; git apply refuses it (with --ignore-whitespace it writes CRs into the added
    lines). patchset reads it as GNU does, and says so (``crlf``: the check warns, naming the file)."""
    before, after = "x\ny\nw\n", "x\nz\nw\n"
    text = ("Subject: a fix\n\n" + udiff("vllm/a.py", before, after)).replace("\n", "\r\n")
    pf = parse(text)
    assert pf.crlf and "recipes/x.patch: every line ends in CRLF" in pf.crlf_warning
    assert list(pf.hunks[0].keys) == [b"x\n", b"y\n", b"z\n", b"w\n"]
    ours = apply_patch({"vllm/a.py": before.encode()}, pf)
    rc, log, gnu = gnu_patch(tmp_path, {"vllm/a.py": before.encode()}, text, "-F0")
    assert rc == 0 and "Stripping trailing CRs" in log and ours.files["vllm/a.py"] == gnu["vllm/a.py"] == after.encode()
    assert git_apply(tmp_path, {"vllm/a.py": before.encode()}, text)[0] != 0
    rc, _, git = git_apply(tmp_path, {"vllm/a.py": before.encode()}, text, "--ignore-whitespace")
    assert rc == 0 and git["vllm/a.py"] == b"x\nz\r\nw\n"  # the other reading: not the one taken
    # On a file with CRLF lines, the stripped reading does not match: GNU patch fails it too.
    crlf_file = before.replace("\n", "\r\n").encode()
    assert not apply_patch({"vllm/a.py": crlf_file}, pf).ok
    assert gnu_patch(tmp_path, {"vllm/a.py": crlf_file}, text, "-F0")[0] != 0
    # Only some lines in CRLF (its own header lines among them): the tools disagree, so it is refused.
    mixed = udiff("vllm/a.py", before, after).replace("\n", "\r\n", 3)
    with pytest.raises(PatchFileError, match="GNU patch would strip the CRs, git apply would keep them"):
        parse(mixed)
    # A diff of CRLF files keeps its CRs on the content lines only: that one is read as it is.
    pf = parse(udiff("vllm/a.py", "x\r\ny\r\n", "x\r\nz\r\n"))
    assert [ln.key for ln in pf.hunks[0].lines] == [b"x\r\n", b"y\r\n", b"z\r\n"] and not pf.crlf


def test_a_non_git_diff_between_two_names_edits_the_new_one():
    pf = parse("--- a/vllm/a.py.orig\n+++ b/vllm/a.py\n@@ -1 +1 @@\n-x\n+y\n")
    (f,) = pf.files
    assert (f.old_path, f.new_path, f.is_rename) == ("vllm/a.py", "vllm/a.py", False)



def test_split_lines_cuts_after_every_newline_and_nowhere_else():
    """Its fast path (bytes.splitlines) against the plain definition, with every other line boundary
    Python knows (\\v, \\f, \\x1c-\\x1e, \\x85, U+2028) and \\r, seeded."""
    import random

    from patchset.core.patchfile import split_lines

    def plain(data: bytes) -> list[bytes]:
        parts = data.split(b"\n")
        return [p + b"\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])

    rng = random.Random(3)
    alphabet = [b"a", b"\n", b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e", b"\x85", "\u2028".encode(), b"\r", b" "]
    for _ in range(5000):
        data = b"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert split_lines(data) == plain(data), data


def test_a_hunk_is_kept_as_kinds_and_bytes_and_read_as_lines_on_demand():
    """The engine reads ``kinds`` and ``keys``; ``lines`` gives the same hunk as HunkLines (deps, next)."""
    text = (b"--- a/f.py\n+++ b/f.py\n@@ -1,3 +1,3 @@\n ctx\r\n-old\n+new\n last\n"
            b"@@ -9,2 +9,2 @@\n keep\n-tail\n\\ No newline at end of file\n+tail\n")
    first, second = parse_patch(text, name="p.patch").hunks
    assert first.kinds == " -+ " and first.keys == (b"ctx\r\n", b"old\n", b"new\n", b"last\n")
    assert [(ln.kind, ln.text, ln.eol) for ln in first.lines] == [(" ", "ctx\r", "\n"), ("-", "old", "\n"),
                                                                   ("+", "new", "\n"), (" ", "last", "\n")]
    assert [ln.key for ln in first.lines] == list(first.keys)
    assert (first.leading, first.trailing, first.unterminated) == (1, 1, False)
    # the removed line lacks its newline and the added one has it: only the old side is unterminated
    assert second.old_keys == [b"keep\n", b"tail"] and second.new_keys == [b"keep\n", b"tail\n"]
    assert second.unterminated and [ln.eol for ln in second.lines] == ["\n", "", "\n"]
    back = second.flipped()
    assert (back.kinds, back.old_keys, back.new_keys) == (" +-", second.new_keys, second.old_keys)
    assert (back.source_start, back.target_start) == (second.target_start, second.source_start)


def test_no_newline_before_the_end_of_a_side_is_refused():
    text = b"--- a/f.py\n+++ b/f.py\n@@ -1,2 +1,2 @@\n-a\n\\ No newline at end of file\n-b\n+c\n+d\n"
    with pytest.raises(PatchFileError, match="before the end of the hunk"):
        parse_patch(text, name="p.patch")


def _cached_parse(data: bytes, name: str = "p.patch"):
    from patchset.core import patchfile

    patchfile._parsed.cache_clear()  # as in a new process
    return patchfile._parsed(data, name, 1, "vllm")


def _entries(tmp_path) -> list:
    return sorted((tmp_path / "cache" / "derived" / "patch").glob("*.marshal"))


SERIES_PATCH = (b"From: a fork\nSubject: keep it\n\n--- a/v1/f.py\n+++ b/v1/f.py\n@@ -1,3 +1,3 @@\n ctx\r\n-old\n"
                b"+new\n last\n@@ -9,2 +9,2 @@\n keep\n-tail\n\\ No newline at end of file\n+tail\n"
                b"diff --git a/v1/g.py b/v1/g.py\nold mode 100644\nnew mode 100755\n")


def test_a_parse_is_kept_once_and_reads_back_the_same(tmp_path, monkeypatch):
    monkeypatch.setenv("PATCHSET_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("PATCHSET_NO_PARSE_CACHE", raising=False)
    parsed = parse_patch(SERIES_PATCH, name="p.patch", root="vllm")
    assert _cached_parse(SERIES_PATCH) == parsed and len(_entries(tmp_path)) == 1
    again = _cached_parse(SERIES_PATCH, "other/name.patch")  # read back, under the caller's name
    assert again == replace(parsed, path="other/name.patch") and len(_entries(tmp_path)) == 1
    assert again.files[0].hunks[1].unterminated and again.files[1].mode_change == (0o100644, 0o100755)


def test_a_damaged_parse_is_never_used(tmp_path, monkeypatch):
    monkeypatch.setenv("PATCHSET_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("PATCHSET_NO_PARSE_CACHE", raising=False)
    parsed = _cached_parse(SERIES_PATCH)
    (entry,) = _entries(tmp_path)
    kept = entry.read_bytes()
    at = kept.index(b"old\n")
    for damaged in (kept[:-7], kept[:at] + b"OLD\n" + kept[at + 4:], b""):  # cut short; a line changed; empty
        entry.write_bytes(damaged)
        assert _cached_parse(SERIES_PATCH) == parsed


@pytest.mark.parametrize("change", [
    lambda kept: (kept[0], ((1, "x"),), kept[2]),  # a header field that is no text
    lambda kept: (kept[0], kept[1], ((b"a.py", *kept[2][0][1:]),)),  # a path as bytes
    # kinds and keys apart; a key as text; a kind that is none
    lambda kept: (kept[0], kept[1], ((*kept[2][0][:6], ((1, 2, 3, 4, 5, 6, " -", (b"x\n",), ""),)),)),
    lambda kept: (kept[0], kept[1], ((*kept[2][0][:6], ((1, 2, 3, 4, 5, 6, "-", ("x\n",), ""),)),)),
    lambda kept: (kept[0], kept[1], ((*kept[2][0][:6], ((1, 2, 3, 4, 5, 6, "?", (b"x\n",), ""),)),)),
])
def test_a_whole_parse_of_other_types_is_never_used(tmp_path, monkeypatch, change):
    """Found writing the parse-cache fuzz target: a whole entry was trusted whatever types it held."""
    import hashlib
    import marshal

    from patchset.core import patchfile

    monkeypatch.setenv("PATCHSET_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("PATCHSET_NO_PARSE_CACHE", raising=False)
    parsed = _cached_parse(SERIES_PATCH)
    (entry,) = _entries(tmp_path)
    payload = marshal.dumps(change(patchfile._kept(parse_patch(SERIES_PATCH, name="p.patch", root="vllm"))))
    entry.write_bytes(hashlib.sha256(payload).digest() + payload)
    assert patchfile._unkept(entry.read_bytes(), "p.patch", parsed.sha256) is None
    assert _cached_parse(SERIES_PATCH) == parsed


def test_refused_patches_and_a_cache_turned_off_keep_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("PATCHSET_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("PATCHSET_NO_PARSE_CACHE", raising=False)
    with pytest.raises(PatchFileError, match="malformed hunk"):
        _cached_parse(b"--- a/f.py\n+++ b/f.py\n@@ -1,2 +1,2 @@\n-a\n+b\n")
    monkeypatch.setenv("PATCHSET_NO_PARSE_CACHE", "1")
    _cached_parse(SERIES_PATCH)
    assert _entries(tmp_path) == []


@pytest.mark.parametrize("path, what", [
    ("vllm/" + "x" * 256 + "/a.py", "a component of 256 bytes"),
    ("vllm/" + "é" * 128 + ".py", "a component of 259 bytes"),  # bytes, not characters, are what a file system counts
    ("vllm/" + "/".join(["d" * 200] * 21) + "/a.py", "4230 bytes"),
    ("vllm/a\0b.py", "a NUL byte"),
])
def test_paths_no_file_system_can_hold_are_refused_at_their_line(path, what):
    """Issue 26: such a path reached the tree and failed there with ENAMETOOLONG, an internal error."""
    text = udiff("vllm/a.py", "x\n", "y\n").replace("+++ b/vllm/a.py", f"+++ b/{path}")
    with pytest.raises(PatchFileError) as e:
        parse("Description: x\n\n" + text)
    assert e.value.file == "recipes/x.patch" and e.value.line == 5 and what in e.value.message


def test_the_longest_names_a_file_system_holds_are_kept():
    path = "vllm/" + "x" * 255
    assert parse(udiff(path, "x\n", "y\n")).touched == [path]


def test_a_path_that_names_no_file_is_refused():
    with pytest.raises(PatchFileError, match="names no file"):
        parse(udiff("vllm/a.py", "x\n", "y\n").replace("a/vllm/a.py", "a/.").replace("b/vllm/a.py", "b/."))


def test_a_billion_line_hunk_header_is_refused_at_once():
    """Issue 26: the counts of an @@ header are read against the lines that are there, never allocated for."""
    import time

    text = udiff("vllm/a.py", "x\n", "y\n").replace("@@ -1 +1 @@", "@@ -1,1000000000 +1,1000000000 @@")
    started = time.process_time()
    with pytest.raises(PatchFileError, match="header says -1000000000 \\+1000000000 lines, it has -1 \\+1"):
        parse(text)
    assert time.process_time() - started < 1.0
