"""Patch files: DEP-3 headers, layouts, and the input we refuse."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import pytest
from helpers import git_apply, gnu_patch, needs_patch, patch_of, udiff

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
    e = refused(HEADER)
    assert (str(e), e.line) == ("recipes/x.patch: contains no diff (expected '--- a/...' and '+++ b/...' lines)", None)


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


def _file(kept: tuple, at: int, value: object) -> tuple:
    """``kept`` (a kept parse of SERIES_PATCH) with field ``at`` of its first file set to ``value``."""
    first = list(kept[3][0])
    first[at] = value
    return (*kept[:3], (tuple(first), *kept[3][1:]))


def _hunk(kept: tuple, at: int, value: object) -> tuple:
    """``kept`` with field ``at`` of its first hunk set to ``value``."""
    hunk = list(kept[3][0][6][0])
    hunk[at] = value
    return _file(kept, 6, (tuple(hunk), *kept[3][0][6][1:]))


@pytest.mark.parametrize("change", [
    lambda kept: (kept[0], 0, *kept[2:]),  # crlf that is no bool
    lambda kept: (*kept[:2], ((1, "x"),), kept[3]),  # a header field whose name or value is no text
    lambda kept: (*kept[:2], (("From", b"x"),), kept[3]),
    lambda kept: _file(kept, 0, b"vllm/v1/f.py"),  # a path as bytes
    lambda kept: _file(kept, 1, b"vllm/v1/f.py"),
    lambda kept: _file(kept, 2, "4"),  # the file's line as text, or True (a bool is no line number)
    lambda kept: _file(kept, 2, True),
    lambda kept: _file(kept, 3, 0),  # copy as a number
    lambda kept: _file(kept, 4, "100644"),  # a mode as text
    lambda kept: _file(kept, 5, 33188.0),
    *[lambda kept, at=at: _hunk(kept, at, str(kept[3][0][6][0][at])) for at in range(6)],  # a hunk's number as text
    lambda kept: _hunk(kept, 6, b" -+ "),  # kinds as bytes, keys as a list, section as bytes
    lambda kept: _hunk(kept, 7, list(kept[3][0][6][0][7])),
    lambda kept: _hunk(kept, 8, b""),
    lambda kept: _hunk(kept, 6, " -+"),  # kinds and keys apart; a kind that is none; a key as text
    lambda kept: _hunk(kept, 6, " -+X"),
    lambda kept: _hunk(kept, 7, (b"ctx\r\n", "old\n", b"new\n", b"last\n")),
    lambda kept: _hunk(kept, 7, (b"ctx\r\n", b"old\n", b"new\n", "last\n")),
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


def test_a_kept_parse_is_read_back_without_parsing_again(tmp_path, monkeypatch):
    """What the cache is for (docs/records/performance.md): a patch parsed in one process is not parsed again in
    the next. Each type check of a kept parse takes what the parser gives."""
    from patchset.core import patchfile

    monkeypatch.setenv("PATCHSET_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("PATCHSET_NO_PARSE_CACHE", raising=False)
    for text in (SERIES_PATCH, SERIES_PATCH.replace(b"\n", b"\r\n"), TWO_FILES.encode(),
                 b"diff --git a/v1/n.py b/v1/n.py\nnew file mode 100644\n"
                 b"diff --git a/v1/c.py b/v1/d.py\ncopy from v1/c.py\ncopy to v1/d.py\n"
                 b"diff --git a/v1/g.py b/v1/g.py\ndeleted file mode 100644\n"):
        before = set(_entries(tmp_path))
        parsed = _cached_parse(text)
        (entry,) = set(_entries(tmp_path)) - before

        def parse_again(*args, **kw):
            raise AssertionError("parsed again")

        with monkeypatch.context() as m:
            m.setattr(patchfile, "parse_patch", parse_again)
            assert _cached_parse(text, "again.patch") == replace(parsed, path="again.patch")
        # an entry of another patch's parse under this key is not taken for it
        assert patchfile._unkept(entry.read_bytes(), "p.patch", "0" * 64) is None
        assert patchfile._unkept(entry.read_bytes(), "p.patch", parsed.sha256) == parsed


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


# --- issue 41: what mutation testing found untested (docs/records/mutation.md) ----------------------------


def refused(text: str | bytes, **kw) -> PatchFileError:
    """The refusal of ``text``, named recipes/x.patch."""
    with pytest.raises(PatchFileError) as e:
        parse_patch(text if isinstance(text, bytes) else text.encode(), name="recipes/x.patch", **kw)
    return e.value


TWO_FILES = ("From: A Dev <dev@example.com>\nSubject: [PATCH] two files\n\n---\n"
             "diff --git a/vllm/a.py b/vllm/a.py\nindex 1111111..2222222 100644\n--- a/vllm/a.py\n+++ b/vllm/a.py\n"
             "@@ -1,3 +1,4 @@ def f():\n a\n-b\n+B\n+C\n c\n"
             "@@ -10 +11 @@  class K: \n-x\n+y\n"
             "diff --git a/vllm/b.py b/vllm/b.py\n--- a/vllm/b.py\n+++ b/vllm/b.py\n@@ -4,0 +5,2 @@\n+n1\n+n2\n")


def test_every_field_of_a_parsed_patch_its_files_and_hunks():
    """Hunks are numbered across the whole patch and named by their @@ line, as users count them; a count left
    out of the header is 1; the words after the second @@ are the hunk's section."""
    pf = parse(TWO_FILES)
    assert pf.path == "recipes/x.patch" and not pf.crlf and pf.crlf_warning == ""
    assert pf.sha256 == hashlib.sha256(TWO_FILES.encode()).hexdigest()
    assert pf.header == {"From": "A Dev <dev@example.com>", "Subject": "[PATCH] two files"}
    a, b = pf.files
    assert (a.old_path, a.new_path, a.path, a.line, a.copy, a.old_mode, a.new_mode) == \
        ("vllm/a.py", "vllm/a.py", "vllm/a.py", 5, False, None, None)
    assert (a.is_rename, a.is_copy, a.mode_change, a.touched) == (False, False, None, ["vllm/a.py"])
    assert (b.path, b.line) == ("vllm/b.py", 18)
    assert pf.hunks == [*a.hunks, *b.hunks] and pf.touched == ["vllm/a.py", "vllm/b.py"]
    fields = [(h.number, h.line, h.source_start, h.source_length, h.target_start, h.target_length, h.kinds,
               h.keys, h.section, h.leading, h.trailing, h.unterminated) for h in pf.hunks]
    assert fields == [(1, 9, 1, 3, 1, 4, " -++ ", (b"a\n", b"b\n", b"B\n", b"C\n", b"c\n"), "def f():", 1, 1, False),
                      (2, 15, 10, 1, 11, 1, "-+", (b"x\n", b"y\n"), "class K:", 0, 0, False),
                      (3, 21, 4, 0, 5, 2, "++", (b"n1\n", b"n2\n"), "", 0, 0, False)]
    first, second, third = pf.hunks
    assert [(ln.kind, ln.text) for ln in first.old] == [(" ", "a"), ("-", "b"), (" ", "c")]
    assert [(ln.kind, ln.text) for ln in first.new] == [(" ", "a"), ("+", "B"), ("+", "C"), (" ", "c")]
    assert first.old_keys == [b"a\n", b"b\n", b"c\n"] and first.new_keys == [b"a\n", b"B\n", b"C\n", b"c\n"]
    assert third.old == [] and third.old_keys == [] and third.new_keys == [b"n1\n", b"n2\n"]
    # flipped: the hunk that takes it back out, the same hunk of the same file by number, line and section
    back = first.flipped()
    assert (back.number, back.line, back.source_start, back.source_length, back.target_start, back.target_length,
            back.kinds, back.keys, back.section) == (1, 9, 1, 4, 1, 3, " +-- ", first.keys, "def f():")
    assert third.flipped().source_length == 2 and third.flipped().target_length == 0
    assert back.flipped() == first


@needs_patch
def test_a_hunk_with_no_context_lines_is_read_as_both_tools_read_it(tmp_path):
    """``@@ -4,0 +5,2 @@`` inserts after line 4, ``@@ -2 +1,0 @@`` removes line 2: GNU patch and git apply
    (``--unidiff-zero``) write the same file patchset does."""
    base = {"vllm/a.py": b"1\n2\n3\n4\n5\n"}
    text = "--- a/vllm/a.py\n+++ b/vllm/a.py\n@@ -2 +1,0 @@\n-2\n@@ -4,0 +4,2 @@\n+n1\n+n2\n"
    (cut, added) = parse(text).hunks
    assert (cut.source_start, cut.source_length, cut.target_start, cut.target_length) == (2, 1, 1, 0)
    assert (added.source_start, added.source_length, added.target_start, added.target_length) == (4, 0, 4, 2)
    want = b"1\n3\n4\nn1\nn2\n5\n"
    assert apply_patch(base, patch_of(text)).files["vllm/a.py"] == want
    assert gnu_patch(tmp_path, base, text, "-F0")[2]["vllm/a.py"] == want
    assert git_apply(tmp_path, base, text, "--unidiff-zero")[2]["vllm/a.py"] == want


def test_a_hunk_before_any_file_header_is_refused_at_its_line():
    e = refused("Subject: x\n\n@@ -1 +1 @@\n-x\n+y\n")
    assert str(e) == ("recipes/x.patch:3: a hunk without '--- a/...' and '+++ b/...' file headers (regenerate the "
                      "patch rather than editing it by hand)")
    # a "--- " line without its "+++ " is no file header either
    assert refused("--- a/vllm/a.py\n@@ -1 +1 @@\n-x\n+y\n").line == 2


def test_a_diff_of_a_file_without_hunks_is_refused_unless_git_says_what_it_does():
    plain = "--- a/vllm/a.py\n+++ b/vllm/a.py\n"
    assert str(refused("Subject: x\n\n" + plain)) == \
        "recipes/x.patch:3: the diff of vllm/a.py has no hunks (regenerate the patch rather than editing it by hand)"
    # git's headers alone: only an index line says nothing; a creation, deletion, mode change or rename does
    e = refused("diff --git a/vllm/a.py b/vllm/a.py\nindex 1111111..2222222 100644\n" + plain)
    assert (e.line, e.message) == (1, "the diff of vllm/a.py has no hunks")
    same_mode = "diff --git a/vllm/a.py b/vllm/a.py\nold mode 100644\nnew mode 100644\n"
    assert refused(same_mode).message == "the diff of vllm/a.py has no hunks"
    git = ("diff --git a/vllm/n.py b/vllm/n.py\nnew file mode 100644\nindex 0000000..e69de29\n"
           "diff --git a/vllm/g.py b/vllm/g.py\ndeleted file mode 100755\nindex e69de29..0000000\n"
           "diff --git a/vllm/m.py b/vllm/m.py\nold mode 100755\nnew mode 100644\n"
           "diff --git a/vllm/c.py b/vllm/d.py\nsimilarity index 100%\nrename from vllm/c.py\nrename to vllm/d.py\n")
    n, g, m, r = parse(git).files
    assert (n.old_path, n.new_path, n.old_mode, n.new_mode, n.line) == (None, "vllm/n.py", None, 0o100644, 1)
    assert (g.old_path, g.new_path, g.old_mode, g.new_mode, g.line, g.path) == \
        ("vllm/g.py", None, 0o100755, None, 4, "vllm/g.py")
    assert (n.mode_change, g.mode_change, m.mode_change) == (None, None, (0o100755, 0o100644))
    assert (r.old_path, r.new_path, r.is_rename, r.copy, r.line) == ("vllm/c.py", "vllm/d.py", True, False, 10)


def test_a_diff_that_both_creates_and_deletes_its_file_is_refused():
    e = refused("Subject: x\n\n--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+x\n")
    assert str(e) == "recipes/x.patch:3: the diff both creates and deletes its file"
    e = refused("diff --git a/vllm/a.py b/vllm/a.py\nnew file mode 100644\ndeleted file mode 100644\n")
    assert (e.line, e.message) == (1, "the diff both creates and deletes its file")


def test_a_diff_whose_file_cannot_be_told_is_refused():
    """``diff --git a/x b/y`` with no ``---``/``+++`` or rename lines: which is the file? git apply refuses it
    too ("lacks filename information")."""
    e = refused("diff --git a/vllm/x.py b/vllm/y.py\nnew file mode 100644\n")
    assert str(e) == ("recipes/x.patch:1: cannot tell which file this diff changes (expected '--- a/PATH' and "
                      "'+++ b/PATH' lines)")
    # a "--- " line without a name, in a diff that creates nothing
    for headers in ("--- \n+++ b/vllm/a.py\n", "--- a/vllm/a.py\n+++ \n"):
        e = refused("Subject: x\n\n" + headers + "@@ -1 +1 @@\n-x\n+y\n")
        assert (e.line, e.message) == (3, "cannot tell which file this diff changes")


def test_git_names_with_spaces_are_read_where_the_two_halves_agree(tmp_path):
    """``diff --git a/vllm/my file.py b/vllm/my file.py``: git apply creates ``vllm/my file.py``."""
    text = "diff --git a/vllm/my file.py b/vllm/my file.py\nnew file mode 100644\n"
    (f,) = parse(text).files
    assert (f.old_path, f.new_path, f.new_mode) == (None, "vllm/my file.py", 0o100644)
    rc, _, out = git_apply(tmp_path, {}, text)
    assert rc == 0 and out == {"vllm/my file.py": b""}
    # the halves of a name that is not two equal paths cannot be told apart
    for names in ("a/vllm/x.py b/vllm/x.pyc", "a/vllm/x.py  b/vllm/x.py", "a/vllm/x.py"):
        assert refused(f"diff --git {names}\nnew file mode 100644\n").message.startswith("cannot tell")
    # a diff --git line with a CRLF end, in a patch not wholly CRLF: its names are read without the CR
    (f,) = parse("diff --git a/vllm/a.py b/vllm/a.py\r\nnew file mode 100644\n").files
    assert f.new_path == "vllm/a.py"


def test_git_rename_and_copy_names_are_stripped_one_component_less_than_the_diffs():
    """git writes ``rename from``/``copy from`` names without the ``a/``/``b/`` of its other lines; a fork patch
    written relative to the package (``root="vllm"``) or with a deeper prefix (``strip=2``) maps them alike."""
    body = "@@ -1 +1 @@\n-x\n+y\n"
    (f,) = parse("diff --git a/v1/c.py b/v1/d.py\nsimilarity index 90%\nrename from v1/c.py\nrename to v1/d.py\n"
                 "--- a/v1/c.py\n+++ b/v1/d.py\n" + body, root="vllm").files
    assert (f.old_path, f.new_path, f.is_rename, f.is_copy, f.hunks[0].keys) == \
        ("vllm/v1/c.py", "vllm/v1/d.py", True, False, (b"x\n", b"y\n"))
    (f,) = parse("diff --git a/x/v1/c.py b/x/v1/d.py\ncopy from x/v1/c.py\ncopy to x/v1/d.py\n", strip=2,
                 root="vllm").files
    assert (f.old_path, f.new_path, f.is_copy, f.is_rename, f.copy) == \
        ("vllm/v1/c.py", "vllm/v1/d.py", True, False, True)
    (f,) = parse("diff --git vllm/c.py vllm/d.py\ncopy from vllm/c.py\ncopy to vllm/d.py\n", strip=0).files
    assert (f.old_path, f.new_path, f.is_copy) == ("vllm/c.py", "vllm/d.py", True)
    # a copy's name beside a diff of the copy
    (f,) = parse("diff --git a/vllm/c.py b/vllm/d.py\ncopy from vllm/c.py\ncopy to vllm/d.py\n"
                 "--- a/vllm/c.py\n+++ b/vllm/d.py\n" + body).files
    assert (f.old_path, f.new_path, f.is_copy, len(f.hunks)) == ("vllm/c.py", "vllm/d.py", True, 1)
    # "copy" on a created file copies nothing: there is no old file
    (f,) = parse("diff --git a/vllm/d.py b/vllm/d.py\nnew file mode 100644\ncopy to vllm/d.py\n").files
    assert (f.old_path, f.new_path, f.copy, f.is_copy) == (None, "vllm/d.py", False, False)


@pytest.mark.parametrize("header, line, kind", [
    ("new file mode 120000", 2, "symlinks (mode 120000)"),
    ("new file mode 120777", 2, "symlinks (mode 120777)"),  # a symlink's st_mode, as a tool other than git writes it
    ("new file mode 160755", 2, "submodules (mode 160755)"),
    ("deleted file mode 120000", 2, "symlinks (mode 120000)"),
    ("old mode 100644\nnew mode 120000", 3, "symlinks (mode 120000)"),
    ("old mode 160000\nnew mode 100644", 2, "submodules (mode 160000)"),
    ("new file mode 010644", 2, "special files (mode 010644)"),
    ("new file mode 040000", 2, "special files (mode 040000)"),
])
def test_modes_other_than_a_regular_files_are_refused_at_their_line(header, line, kind):
    e = refused(f"diff --git a/vllm/l b/vllm/l\n{header}\n")
    assert str(e) == (f"recipes/x.patch:{line}: {kind} are not supported (carry symlinks and submodules outside "
                      "the patch series)")


def test_a_diffs_own_lines_in_crlf_in_a_patch_not_wholly_crlf_are_refused_at_their_line():
    """GNU patch would strip every CR of such a diff and git apply keep them: refused, not guessed."""
    for line, text in ((3, "Subject: x\n\n--- a/vllm/a.py\r\n+++ b/vllm/a.py\r\n@@ -1 +1 @@\n-x\n+y\n"),
                       (4, "Subject: x\n\ndiff --git a/vllm/a.py b/vllm/a.py\n--- a/vllm/a.py\r\n+++ b/vllm/a.py\r\n"
                        "@@ -1 +1 @@\n-x\n+y\n")):
        e = refused(text)
        assert str(e) == (
            f"recipes/x.patch:{line}: the diff's own "
            "lines end in CRLF but not every line of the file does: GNU patch would strip the CRs, git apply would "
            "keep them (convert the patch file to LF line endings (dos2unix); a diff of CRLF files keeps its CRs "
            "only on the content lines)")
    # one header line in CRLF (the +++ one) is read as it stands: its name without the CR
    (f,) = parse("--- a/vllm/a.py\n+++ b/vllm/a.py\r\n@@ -1 +1 @@\n-x\n+y\n").files
    assert f.path == "vllm/a.py"
    (f,) = parse("--- a/vllm/a.py\r\n+++ b/vllm/a.py\n@@ -1 +1 @@\n-x\n+y\n").files
    assert f.path == "vllm/a.py"


def test_all_crlf_asks_every_ended_line():
    from patchset.core.patchfile import all_crlf

    assert all_crlf(b"a\r\nb\r\n") and all_crlf(b"a\r\nb") and all_crlf(b"\r\n")
    assert not all_crlf(b"a\r\nb\n") and not all_crlf(b"a\nb\n") and not all_crlf(b"a\rb\r") and not all_crlf(b"")


def test_the_dep3_header_is_read_up_to_the_diff():
    from patchset.core.patchfile import parse_dep3

    text = ("Description: one\n\tcontinued with a tab\n and a space\nX-Key-2:  v  \nnot a field\n cont after it\n"
            " \n1st: no key\n\rCR: no key\nEmpty:\nTight:x\r\nIndex: vllm/a.py\nLater: not read\n")
    fields = {"Description": "one\ncontinued with a tab\nand a space", "X-Key-2": "v\ncont after it",
              "Empty": "", "Tight": "x"}
    assert parse_dep3(text) == fields
    assert parse(text + "--- a/vllm/a.py\n+++ b/vllm/a.py\n@@ -1 +1 @@\n-x\n+y\n").header == fields
    # the header ends at the diff, at a "---" line (git format-patch's) or at "Index: " (svn, quilt)
    for end in ("diff --git a/x b/x", "diff -u a b", "--- a/x", "---", "  ---  ", "Index: x", "---\r"):
        assert parse_dep3(f" before\nA: x\n{end}\nB: y\n") == {"A": "x"}, end
    # lines that only start like those do not end it
    for line in ("diffs: y", "Indexes: y", "---- y", "-- "):
        assert parse_dep3(f"A: x\n{line}\nB: y\n")["B"] == "y", line


def test_a_plain_diffs_file_names_end_at_a_tab_and_may_be_quoted(tmp_path):
    """GNU diff writes ``--- a/x<TAB>2024-01-01 ...``; names with spaces may be quoted. GNU patch edits the
    same file."""
    base = {"vllm/a b.py": b"x\n"}
    for text in ("--- a/vllm/a b.py\t2024-01-01 10:00:00.000000000 +0000\n+++ b/vllm/a b.py\t2024-01-02\n",
                 '--- "a/vllm/a b.py"\n+++ "b/vllm/a b.py"\n', '--- "a/vllm/a b.py"  \n+++  "b/vllm/a b.py"\t\n'):
        (f,) = parse(text + "@@ -1 +1 @@\n-x\n+y\n").files
        assert (f.old_path, f.new_path) == ("vllm/a b.py", "vllm/a b.py"), text
    text = ("--- a/vllm/a b.py\t2024-01-01 10:00:00.000000000 +0000\n+++ b/vllm/a b.py\t2024-01-02\n"
            "@@ -1 +1 @@\n-x\n+y\n")
    rc, _, out = gnu_patch(tmp_path, base, text, "-F0")
    assert rc == 0 and out == {"vllm/a b.py": b"y\n"}
    # a lone quote is a name's character, not a quoted empty name
    (f,) = parse('--- a/vllm/"\n+++ b/vllm/"\n@@ -1 +1 @@\n-x\n+y\n').files
    assert f.path == 'vllm/"'


@pytest.mark.parametrize("missing, hunk", [
    (1, "@@ -1,3 +1,3 @@\n a\n-b\n+B\n"),
    (3, "@@ -1,5 +1,5 @@\n a\n-b\n+B\n"),
])
def test_a_hunk_up_to_three_context_lines_short_at_the_files_end_says_they_may_be_blank(missing, hunk):
    e = refused("--- a/vllm/a.py\n+++ b/vllm/a.py\n" + hunk)
    n = 2 + missing
    assert str(e) == (
        f"recipes/x.patch:6: malformed hunk: the patch file ends here, inside the hunk @@ -1,{n} +1,{n} @@: it is "
        f"cut short (its header says -{n} +{n} lines, it has -2 +2); {missing} context line(s) short: blank lines an "
        "editor stripped? (GNU patch assumes so and reads them as blank context; git apply refuses the patch as "
        f"corrupt) (if they were blank, restore the {missing} blank context line(s) (a single space each) at the end "
        "of the file; else regenerate the patch)")


@pytest.mark.parametrize("hunk, said", [
    ("@@ -1,6 +1,6 @@\n a\n-b\n+B\n", "-6 +6 lines, it has -2 +2"),  # more than a diff's 3 lines of context
    ("@@ -1,3 +1,4 @@\n a\n-b\n+B\n", "-3 +4 lines, it has -2 +2"),  # not as many on both sides
    ("@@ -1,3 +1,3 @@\n a\n b\n", "-3 +3 lines, it has -2 +2"),  # cut before any change
])
def test_a_hunk_cut_otherwise_at_the_files_end_says_it_was_cut(hunk, said):
    e = refused("--- a/vllm/a.py\n+++ b/vllm/a.py\n" + hunk)
    assert e.line == len(hunk.splitlines()) + 2
    assert e.message.endswith(f"it is cut short (its header says {said})")
    assert e.hint == "the patch file was cut: regenerate it, or take it whole from where it came"


def test_what_may_follow_a_hunk_and_what_is_a_line_too_many():
    """After a hunk's counts are met: a mail signature (``-- ``), the next file's ``---``/``+++``, anything that
    is not a hunk line. A ``+``, ``-`` or `` `` line there is one more than the header says."""
    head = "Subject: x\n\n--- a/vllm/a.py\n+++ b/vllm/a.py\n@@ -1 +1 @@\n-x\n+y\n"
    for after in ("-- \n2.43.0\n", "--\n2.43.0\n", "-- \r\n2.43.0\n",
                  "--- a/vllm/b.py\n+++ b/vllm/b.py\n@@ -1 +1 @@\n-x\n+y\n",
                  "diff --git a/vllm/b.py b/vllm/b.py\nnew file mode 100644\n", "\n", "a word\n"):
        assert parse(head + after).hunks[0].keys == (b"x\n", b"y\n"), after
    for after in ("+z\n", "-z\n", " z\n", "--- a/vllm/b.py\nz\n", "---\n", "-- z\n"):
        e = refused(head + after)
        assert str(e) == ("recipes/x.patch:5: malformed hunk: more lines than its header -1 +1 says (regenerate "
                          "the patch rather than editing hunks by hand)"), after


@needs_patch
def test_an_empty_line_in_a_hunk_is_a_blank_context_line_as_both_tools_read_it(tmp_path):
    """An editor or a mailer strips a blank context line's leading space: GNU patch and git apply read the empty
    line as that context line."""
    base = {"vllm/a.py": b"a\n\nb\nc\n"}
    text = "--- a/vllm/a.py\n+++ b/vllm/a.py\n@@ -1,4 +1,4 @@\n a\n\n-b\n+B\n c\n"
    (h,) = parse(text).hunks
    assert (h.kinds, h.keys) == ("  -+ ", (b"a\n", b"\n", b"b\n", b"B\n", b"c\n"))
    want = b"a\n\nB\nc\n"
    assert apply_patch(base, patch_of(text)).files["vllm/a.py"] == want
    assert gnu_patch(tmp_path, base, text, "-F0")[2]["vllm/a.py"] == want
    assert git_apply(tmp_path, base, text)[2]["vllm/a.py"] == want
    # in a diff of CRLF files it is "\r\n": a blank CRLF context line
    (h,) = parse(text.replace(" a\n\n", " a\r\n\r\n")).hunks
    assert h.keys[:2] == (b"a\r\n", b"\r\n")


@needs_patch
def test_no_newline_markers_take_the_newline_off_the_line_before_them(tmp_path):
    """On either side, or both; read as GNU patch and git apply read them."""
    base = {"vllm/a.py": b"a\nx"}
    text = ("--- a/vllm/a.py\n+++ b/vllm/a.py\n@@ -1,2 +1,2 @@\n a\n-x\n\\ No newline at end of file\n+y\n"
            "\\ No newline at end of file\n")
    (h,) = parse(text).hunks
    assert (h.kinds, h.keys, h.unterminated) == (" -+", (b"a\n", b"x", b"y"), True)
    assert [(ln.text, ln.eol) for ln in h.lines] == [("a", "\n"), ("x", ""), ("y", "")]
    assert apply_patch(base, patch_of(text)).files["vllm/a.py"] == b"a\ny"
    assert gnu_patch(tmp_path, base, text, "-F0")[2]["vllm/a.py"] == b"a\ny"
    assert git_apply(tmp_path, base, text)[2]["vllm/a.py"] == b"a\ny"
    # the file's last line a marker without its own newline: whole, as both tools read it
    cut = text.removesuffix("\n")
    assert parse(cut).hunks == [h] and apply_patch(base, patch_of(cut)).files["vllm/a.py"] == b"a\ny"
    assert gnu_patch(tmp_path, base, cut, "-F0")[2]["vllm/a.py"] == git_apply(tmp_path, base, cut)[2]["vllm/a.py"] \
        == b"a\ny"
    # the new side only, its last line after the old side's
    (h,) = parse("--- a/vllm/a.py\n+++ b/vllm/a.py\n@@ -1,2 +1,2 @@\n-a\n-x\n+y\n+z\n"
                 "\\ No newline at end of file\n").hunks
    assert (h.keys, h.old_keys, h.unterminated) == ((b"a\n", b"x\n", b"y\n", b"z"), [b"a\n", b"x\n"], True)
    # a context line, the last of both sides
    (h,) = parse("--- a/vllm/a.py\n+++ b/vllm/a.py\n@@ -1,2 +1,2 @@\n-a\n+b\n x\n\\ No newline at end of file\n").hunks
    assert (h.keys, h.old_keys, h.new_keys) == ((b"a\n", b"b\n", b"x"), [b"a\n", b"x"], [b"b\n", b"x"])


@pytest.mark.parametrize("hunk", [
    "@@ -1,2 +1,2 @@\n-a\n\\ No newline at end of file\n-x\n+y\n+z\n",  # the old side's first line
    "@@ -1,2 +1,2 @@\n-a\n-x\n+y\n\\ No newline at end of file\n+z\n",  # the new side's first line
    "@@ -1,2 +1,2 @@\n a\n\\ No newline at end of file\n x\n",  # a context line before another
    "@@ -1,3 +1 @@\n-a\n-b\n\\ No newline at end of file\n-c\n+d\n",  # the middle one of three
])
def test_a_no_newline_marker_before_the_end_of_a_side_is_refused_at_the_hunk(hunk):
    e = refused("--- a/vllm/a.py\n+++ b/vllm/a.py\n" + hunk)
    assert str(e) == "recipes/x.patch:3: malformed hunk: 'No newline at end of file' before the end of the hunk"


def test_a_no_newline_marker_before_any_line_of_a_hunk_leaves_it_short():
    e = refused("--- a/vllm/a.py\n+++ b/vllm/a.py\n@@ -1 +1 @@\n\\ No newline at end of file\n-x\n+y\n")
    assert str(e) == ("recipes/x.patch:3: malformed hunk: its header says -1 +1 lines but it has -0 +0 (regenerate "
                      "the patch rather than editing hunks by hand)")


@pytest.mark.parametrize("old, new, kw, line, said", [
    ("a/x", "b/..", {}, 4, "path 'b/..' leaves the tree"),
    ("a/x", "b/vllm/../..", {}, 4, "path 'b/vllm/../..' leaves the tree"),
    # GNU patch and git apply refuse any ".." too
    ("a/x", "b/vllm/./x/../a.py", {}, 4, "path 'b/vllm/./x/../a.py' leaves the tree"),
    ("a/x", "b//etc/x", {}, 4, "path 'b//etc/x' leaves the tree"),
    ("/etc/x", "/etc/x", {"strip": 0}, 3, "path '/etc/x' leaves the tree"),
    ("/etc/x", "/etc/x", {"strip": 0, "root": "vllm"}, 3, "path '/etc/x' leaves the tree"),  # not vllm/etc/x
    ("x/../y", "x/../y", {"strip": 0}, 3, "path 'x/../y' leaves the tree"),
    ("x", "b/../y", {"root": "vllm"}, 4, "path 'b/../y' leaves the tree"),
    ("a/x", "b/vllm/..", {}, 4, "path 'b/vllm/..' names no file"),
    ("a/x", "b/", {}, 4, "path 'b/' names no file"),
    ("a", "b", {}, 4, "path 'b' has fewer than 2 components"),
    ("a/b", "a/b", {"strip": 2}, 4, "path 'a/b' has fewer than 3 components"),
])
def test_paths_are_refused_at_their_line_saying_why(old, new, kw, line, said):
    e = refused(f"Subject: s\n\n--- {old}\n+++ {new}\n@@ -1 +1 @@\n-x\n+y\n", **kw)
    hint = ("check the manifest's strip setting" if "components" in said else "expected '--- a/PATH' and '+++ b/PATH' "
            "lines" if "no file" in said else "patch paths must stay inside the vLLM tree")
    assert str(e) == f"recipes/x.patch:{line}: {said} ({hint})"


@pytest.mark.parametrize("old, new, kw, path", [
    ("/etc/x", "/etc/x", {}, "etc/x"),  # -p1 takes the empty component before the first /
    ("a/vllm/a.py", "b/vllm/a.py/", {}, "vllm/a.py"),
    ("a/b/c", "a/b/c", {"strip": 2}, "c"),
    ("a/vllm/a.py", "b/vllm/a.py", {"strip": 0}, "b/vllm/a.py"),
    ("a/v1/a.py", "b/v1/a.py", {"root": "vllm/"}, "vllm/v1/a.py"),
    ("a/vllm/./a.py", "b/vllm/./a.py", {}, "vllm/a.py"),
])
def test_paths_are_stripped_and_mapped_to_the_repository_layout(old, new, kw, path):
    assert parse(f"--- {old}\n+++ {new}\n@@ -1 +1 @@\n-x\n+y\n", **kw).touched == [path]


def test_a_path_too_long_is_named_shortened_in_its_refusal():
    long = "vllm/" + "x" * 256 + "/a.py"
    e = refused(udiff("vllm/a.py", "x\n", "y\n").replace("+++ b/vllm/a.py", f"+++ b/{long}"))
    shown = ("b/" + long)[:60] + "..." + ("b/" + long)[-16:]
    assert str(e) == (f"recipes/x.patch:3: path {shown!r} has a component of 256 bytes, more than a file system "
                      "allows (255 a name, 4095 a path) (the patch file is damaged; regenerate it)")
    # the longest path a file system holds is kept, one byte more is refused
    for size, ok in ((4095, True), (4096, False)):
        folders = "vllm/" + "/".join(["d" * 99] * 40) + "/"
        path = folders + "f" * (size - len(folders))
        assert len(path) == size
        text = udiff("vllm/a.py", "x\n", "y\n").replace("a/vllm/a.py", f"a/{path}").replace("b/vllm/a.py", f"b/{path}")
        if ok:
            assert parse(text).touched == [path]
        else:
            assert refused(text).message == (f"path {'a/' + path[:58] + '...' + path[-16:]!r} has 4096 bytes, more "
                                             "than a file system allows (255 a name, 4095 a path)")


def test_binary_diffs_are_refused_at_their_line():
    for line in ("GIT binary patch", "Binary files a/vllm/a.bin and b/vllm/a.bin differ"):
        e = refused(f"Subject: x\n\ndiff --git a/vllm/a.bin b/vllm/a.bin\nindex 1..2 100644\n{line}\n")
        assert str(e) == ("recipes/x.patch:5: binary patches are not supported (carry binary files outside the "
                          "patch series)")
    # a line that only speaks of them is not one
    text = "Subject: Binary files are not supported\n" + udiff("vllm/a.py", "x\n", "y\n")
    assert parse(text).touched == ["vllm/a.py"]


def test_a_patch_file_that_cannot_be_read_is_named_as_the_caller_names_it(tmp_path):
    from patchset.core.patchfile import read_patch

    with pytest.raises(PatchFileError) as e:
        read_patch(tmp_path / "gone.patch", display="recipes/gone.patch")
    assert (str(e.value), e.value.line) == ("recipes/gone.patch: cannot read patch file: No such file or directory",
                                            None)
    with pytest.raises(PatchFileError) as e:
        read_patch(tmp_path)
    assert str(e.value) == f"{tmp_path}: cannot read patch file: Is a directory"
    (tmp_path / "p.patch").write_text(udiff("v1/a.py", "x\n", "y\n"))
    pf = read_patch(tmp_path / "p.patch", strip=1, root="vllm", display="recipes/p.patch")
    assert (pf.path, pf.touched) == ("recipes/p.patch", ["vllm/v1/a.py"])
    assert read_patch(tmp_path / "p.patch").path == str(tmp_path / "p.patch")
    assert read_patch(tmp_path / "p.patch").touched == ["v1/a.py"]  # strip 1 unless asked
    assert read_patch(str(tmp_path / "p.patch"), strip=2).touched == ["a.py"]


def test_bytes_that_are_not_utf8_are_kept_wherever_they_stand():
    """A Latin-1 file name, section, header and line (old patches, old sources): read, never refused as
    undecodable; each line's text gives back its bytes."""
    text = (b"Description: caf\xe9\n\n--- a/vllm/x.py.orig\xe9\n+++ b/vllm/caf\xe9.py\n@@ -1,2 +1,2 @@ def caf\xe9():\n"
            b"-caf\xe9\n+cafe\n x\xff\n\\ No newline at end of file\n")
    pf = parse_patch(text, name="p.patch")
    (h,) = pf.hunks
    assert pf.header == {"Description": "caf\udce9"} and pf.touched == ["vllm/caf\udce9.py"]
    assert h.section == "def caf\udce9():" and h.keys == (b"caf\xe9\n", b"cafe\n", b"x\xff")
    assert [(ln.text, ln.eol) for ln in h.lines] == [("caf\udce9", "\n"), ("cafe", "\n"), ("x\udcff", "")]
    assert tuple(ln.key for ln in h.lines) == h.keys
    # a name that is not UTF-8 and leaves the tree is refused like any other
    e = refused(b"--- a/../caf\xe9\n+++ b/vllm/a.py\n@@ -1 +1 @@\n-x\n+y\n")
    assert e.message == "path 'a/../caf\\udce9' leaves the tree"


@needs_patch
def test_a_git_creation_ending_at_its_minus_line_creates_the_empty_file_as_both_tools_do(tmp_path):
    """The ``--- /dev/null`` of an empty new file without its ``+++`` line (a diff cut there, or written so):
    git apply and GNU patch create the empty file; so does patchset, and the line alone is no file header."""
    text = "diff --git a/vllm/a.py b/vllm/a.py\nnew file mode 100644\nindex 0000000..e69de29\n--- /dev/null\n"
    (f,) = parse(text).files
    assert (f.old_path, f.new_path, f.new_mode, f.hunks) == (None, "vllm/a.py", 0o100644, ())
    assert apply_patch({}, patch_of(text)).files == {"vllm/a.py": b""}
    assert git_apply(tmp_path, {}, text)[2] == {"vllm/a.py": b""}
    assert gnu_patch(tmp_path, {}, text)[2] == {"vllm/a.py": b""}


# --- issue 41, second round: the survivors of the first run's tests ----------------------------------------


@needs_patch
def test_a_last_line_cut_mid_line_is_refused_even_after_the_other_sides_marker(tmp_path):
    """Found by mutation testing: ``-x``, its "No newline" marker, then ``+y`` as the file's last bytes with no
    newline. The marker said the *removed* line has none, and patchset took it for the last line's: it read
    ``+y`` as ``y\\n`` and applied it. git apply refuses it ("corrupt patch"), GNU patch stops ("malformed
    patch"); so does patchset now, naming the line."""
    base = {"vllm/a.py": b"x"}
    text = "--- a/vllm/a.py\n+++ b/vllm/a.py\n@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+y"
    e = refused(text)
    assert str(e) == ("recipes/x.patch:6: the patch file ends in the middle of this line (no newline, and no '\\ No "
                      "newline at end of file' after it): cut short? (git apply refuses it as corrupt; GNU patch reads "
                      "the line as having no newline) (end the file with a newline if the line is whole, or "
                      "regenerate the patch)")
    rc, said, out = git_apply(tmp_path, base, text)
    assert rc != 0 and "corrupt patch at line 6" in said and out == base
    rc, said, out = gnu_patch(tmp_path, base, text, "-F0")
    assert rc != 0 and out == base
    # with its own marker it is whole, and both tools apply it as patchset does
    whole = text + "\n\\ No newline at end of file\n"
    assert apply_patch(base, patch_of(whole)).files["vllm/a.py"] == b"y"
    assert git_apply(tmp_path, base, whole)[2] == gnu_patch(tmp_path, base, whole, "-F0")[2] == {"vllm/a.py": b"y"}


@pytest.mark.parametrize("new", ["b/", "b/.", "b/v1/..", "b/./", "b/.."])
def test_a_path_that_names_only_the_root_folder_is_refused(new):
    """Found by mutation testing: under ``root="vllm"``, ``+++ b/`` was read as the file ``vllm`` (the package
    folder), and a check then said "the patch changes this file but it is not in the tree", a finding, where
    the patch is bad input. Without a root it was refused already; now with one too."""
    e = refused(f"Subject: x\n\n--- a/v1/a.py\n+++ {new}\n@@ -1 +1 @@\n-x\n+y\n", root="vllm")
    assert str(e) == f"recipes/x.patch:4: path {new!r} names no file (expected '--- a/PATH' and '+++ b/PATH' lines)"


def _git(cwd, *args: str) -> bytes:
    import subprocess

    return subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "core.quotePath=true",
                           *args], cwd=cwd, check=True, capture_output=True).stdout


@needs_patch
def test_quoted_names_are_read_as_git_writes_them(tmp_path):
    """Found by mutation testing: git quotes a name holding a byte that is not printable ASCII, a ``"`` or a
    ``\\`` (``--- "a/vllm/caf\\303\\251.py"``), C-escaped. patchset took the escapes literally (the file
    ``vllm/caf\\303\\251.py``, not in any tree). The diff here is git's own; git apply and GNU patch change the
    same files patchset names."""
    repo = tmp_path / "repo"
    (repo / "vllm").mkdir(parents=True)
    names = ["vllm/café.py", 'vllm/t"q.py', "vllm/back\\slash.py", "vllm/a b.py"]
    for name in names:
        (repo / name).write_bytes(b"x\n")
    (repo / "vllm/old é.py").write_bytes(b"".join(b"line %d\n" % i for i in range(20)))
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    base = {str(p.relative_to(repo)): p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    for name in names:
        (repo / name).write_bytes(b"y\n")
    _git(repo, "mv", "vllm/old é.py", "vllm/new é.py")
    (repo / "vllm/né.py").write_bytes(b"")
    _git(repo, "add", "-A")
    text = _git(repo, "diff", "--cached", "-M").decode()
    assert '--- "a/vllm/caf\\303\\251.py"' in text and 'rename from "vllm/old \\303\\251.py"' in text
    assert 'diff --git "a/vllm/n\\303\\251.py" "b/vllm/n\\303\\251.py"\nnew file mode 100644\n' in text
    pf = parse(text)
    assert pf.touched == sorted([*names, "vllm/old é.py", "vllm/new é.py", "vllm/né.py"])
    moved = next(f for f in pf.files if f.is_rename)
    assert (moved.old_path, moved.new_path) == ("vllm/old é.py", "vllm/new é.py")
    ours = apply_patch(base, pf).files
    want = {**{n: b"y\n" for n in names}, "vllm/new é.py": base["vllm/old é.py"], "vllm/né.py": b""}
    assert {n: ours[n] for n in want} == want
    rc, _, git = git_apply(tmp_path, base, text)
    assert rc == 0 and git == want
    rc, _, gnu = gnu_patch(tmp_path, base, text)
    assert rc == 0 and gnu == want
    # escapes git does not write are read as C reads them, an unknown one as its character; a lone quote, or
    # one at a single end, is part of the name
    assert parse('--- "a/vllm/t\\tab\\n\\101"\n+++ "b/vllm/t\\tab\\n\\101"\n@@ -1 +1 @@\n-x\n+y\n').touched == \
        ["vllm/t\tab\nA"]
    assert parse('--- a/vllm/"\n+++ b/vllm/"\n@@ -1 +1 @@\n-x\n+y\n').touched == ['vllm/"']
    assert parse('--- "\n+++ "\n@@ -1 +1 @@\n-x\n+y\n', strip=0).touched == ['"']
    # \X is no escape git writes: git (and so patchset) takes the whole name as it stands
    assert parse('--- "a/vllm/\\X\\\\"\n+++ "b/vllm/\\X\\\\"\n@@ -1 +1 @@\n-x\n+y\n').touched == \
        ['vllm/\\X\\\\"']


@pytest.mark.parametrize("hunk, said", [
    ("@@ -1,2 +1 @@\n+a\n+b\n-c\n-d\n", "-2 +1 lines but it has -0 +1"),  # an added line more, before the removed
    ("@@ -1 +1,2 @@\n-a\n-b\n+c\n+d\n", "-1 +2 lines but it has -1 +0"),  # a removed line more, before the added
    ("@@ -1 +1,2 @@\n-a\n b\n+c\n+d\n", "-1 +2 lines but it has -1 +0"),  # context after the old side is done
    ("@@ -1,2 +1 @@\n+a\n b\n-c\n", "-2 +1 lines but it has -0 +1"),  # context after the new side is done
])
def test_a_hunk_whose_lines_do_not_fit_its_header_is_refused_at_its_header(hunk, said):
    e = refused("Subject: x\n\n--- a/vllm/a.py\n+++ b/vllm/a.py\n" + hunk)
    assert str(e) == (f"recipes/x.patch:5: malformed hunk: its header says {said} (regenerate the patch rather "
                      "than editing hunks by hand)")


def test_git_names_are_read_only_where_git_apply_reads_them(tmp_path):
    """Where no ``---``/``+++`` or rename line names the file, the ``diff --git`` line does: git apply -p0
    creates ``n.py`` from ``diff --git n.py n.py``; with a space after the names it refuses ("lacks filename
    information"), as patchset does."""
    creation = "new file mode 100644\nindex 0000000..e69de29\n"
    for line, kw, path in (("vllm/n.py vllm/n.py", {"strip": 0}, "vllm/n.py"), ("n.py n.py", {"strip": 0}, "n.py"),
                           ("n.py n.py", {"strip": 0, "root": "vllm"}, "vllm/n.py"),
                           ("a/vllm/FIX b/vllm/FIX", {}, "vllm/FIX")):
        (f,) = parse(f"diff --git {line}\n" + creation, **kw).files
        assert (f.old_path, f.new_path) == (None, path), line
    rc, _, out = git_apply(tmp_path, {}, "diff --git n.py n.py\n" + creation, "-p0")
    assert rc == 0 and out == {"n.py": b""}
    text = "diff --git a/vllm/a.py b/vllm/a.py \n" + creation
    assert refused(text).message == "cannot tell which file this diff changes"
    rc, said, _ = git_apply(tmp_path, {}, text)
    assert rc != 0 and "lacks filename information" in said


@needs_patch
def test_plain_diff_names_as_gnu_patch_reads_them(tmp_path):
    """A name ends at the first tab, whatever follows; a name may end in any letter; a quoted one keeps its
    first letter under ``-p0``; an empty quoted name is no name (GNU patch: "can't find file to patch")."""
    body = "@@ -1 +1 @@\n-x\n+y\n"
    assert parse("--- a/vllm/FIX\t2024-01-01\t(x)\n+++ b/vllm/FIX\t2024-01-01\t(y)\n" + body).touched == ["vllm/FIX"]
    assert parse('--- "vllm/a b.py"\n+++ "vllm/a b.py"\n' + body, strip=0).touched == ["vllm/a b.py"]
    e = refused('--- ""\n+++ ""\n' + body, strip=0)
    assert (e.line, e.message) == (1, "cannot tell which file this diff changes")
    rc, said, _ = gnu_patch(tmp_path, {}, '--- ""\n+++ ""\n' + body, "-p0")
    assert rc != 0 and "can't find file to patch" in said


@pytest.mark.parametrize("path, whole, said", [
    ("vllm/a\0b.py", True, "contains a NUL byte"),
    # a name of 4-byte characters is too long in fewer than 80: 80 characters with its b/ are shown whole
    ("vllm/" + "\U0001f600" * 64 + "x" * 9, True, "has a component of 265 bytes"),
    ("vllm/" + "\U0001f600" * 64 + "x" * 10, False, "has a component of 266 bytes"),  # 81 are not
    ("vllm/" + "a" * 256 + "/z.py", False, "has a component of 256 bytes"),  # the longest, not the last in order
    ("vllm/" + "/".join(["d" * 255] * 16) + "/a.py", False, "has 4105 bytes"),  # names of 255 bytes are not too long
])
def test_a_path_no_file_system_holds_is_named_whole_or_shortened_past_80_characters(path, whole, said):
    """Shortened, a path shows its first 60 characters and its last 16."""
    raw = "b/" + path
    assert (len(raw) <= 80) == whole
    e = refused(udiff("vllm/a.py", "x\n", "y\n").replace("+++ b/vllm/a.py", f"+++ {raw}"))
    shown = raw if whole else raw[:60] + "..." + raw[-16:]
    allows = "" if "NUL" in said else ", more than a file system allows (255 a name, 4095 a path)"
    assert str(e) == f"recipes/x.patch:3: path {shown!r} {said}{allows} (the patch file is damaged; regenerate it)"


@pytest.mark.parametrize("root, touched", [("vllm/", "vllm/v1/a.py"), ("vllm ", "vllm /v1/a.py"),
                                           ("vllm/X", "vllm/X/v1/a.py"), ("src/vllm", "src/vllm/v1/a.py")])
def test_a_root_is_taken_as_written(root, touched):
    assert parse("--- a/v1/a.py\n+++ b/v1/a.py\n@@ -1 +1 @@\n-x\n+y\n", root=root).touched == [touched]


def test_a_root_counts_in_a_paths_length_and_may_not_leave_the_tree():
    """The file system holds ``vllm/`` and the path: 4091 bytes after the strip are 4096 with the root, for the
    name the diff edits and for the old name it does not use alike."""
    long = "/".join(["d" * 99] * 40) + "/" + "f" * 91
    assert len(long) == 4091
    for old, new, line in ((long, "v1/a.py", 1), ("v1/a.py", long, 2)):
        e = refused(f"--- a/{old}\n+++ b/{new}\n@@ -1 +1 @@\n-x\n+y\n", root="vllm")
        raw = f"a/{old}" if line == 1 else f"b/{new}"
        assert str(e) == (f"recipes/x.patch:{line}: path {raw[:60] + '...' + raw[-16:]!r} has 4096 bytes, more than a "
                          "file system allows (255 a name, 4095 a path) (the patch file is damaged; regenerate it)")
    assert parse(f"--- a/{long[:-1]}\n+++ b/{long[:-1]}\n@@ -1 +1 @@\n-x\n+y\n", root="vllm").touched == \
        ["vllm/" + long[:-1]]
    e = refused("--- a/v1/a.py\n+++ b/v1/a.py\n@@ -1 +1 @@\n-x\n+y\n", root="/vllm")
    assert e.message == "path 'a/v1/a.py' leaves the tree"


def test_a_git_diffs_path_is_refused_at_the_line_that_names_it():
    for old, new, line in (("../x.py", "vllm/x.py", 3), ("vllm/x.py", "../x.py", 4)):
        e = refused(f"diff --git a/vllm/x.py b/vllm/x.py\nindex 1111111..2222222 100644\n--- a/{old}\n+++ b/{new}\n"
                    "@@ -1 +1 @@\n-x\n+y\n")
        bad = f"a/{old}" if line == 3 else f"b/{new}"
        assert (e.line, e.message) == (line, f"path {bad!r} leaves the tree")


@needs_patch
def test_plain_creations_and_deletions_are_read_as_both_tools_read_them(tmp_path):
    """``/dev/null`` on either side of a plain (not git) diff, with or without ``-p0``: GNU patch and git apply
    delete ``vllm/x.py``; a refused old name is named at its own line."""
    deletion = "--- a/vllm/x.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
    (f,) = parse(deletion).files
    assert (f.old_path, f.new_path, f.path, f.touched) == ("vllm/x.py", None, "vllm/x.py", ["vllm/x.py"])
    base = {"vllm/x.py": b"x\n", "vllm/keep.py": b"k\n"}
    assert apply_patch(base, patch_of(deletion)).files == {"vllm/x.py": None}  # deleted
    assert gnu_patch(tmp_path, base, deletion, "-F0")[2] == git_apply(tmp_path, base, deletion)[2] == \
        {"vllm/keep.py": b"k\n"}
    (f,) = parse("--- vllm/x.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n", strip=0).files
    assert (f.old_path, f.new_path) == ("vllm/x.py", None)
    (f,) = parse("--- /dev/null\n+++ vllm/n.py\n@@ -0,0 +1 @@\n+n\n", strip=0).files
    assert (f.old_path, f.new_path) == (None, "vllm/n.py")
    e = refused("Subject: x\n\n--- a/../x.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n")
    assert (e.line, e.message) == (3, "path 'a/../x.py' leaves the tree")


@needs_patch
def test_a_hunk_ending_in_a_marker_is_followed_by_the_next_files_diff(tmp_path):
    """GNU patch and git apply change both files."""
    text = ("--- a/vllm/x.py\n+++ b/vllm/x.py\n@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+y\n"
            "\\ No newline at end of file\n--- a/vllm/z.py\n+++ b/vllm/z.py\n@@ -1 +1 @@\n-a\n+b\n")
    x, z = parse(text).files
    assert (x.hunks[0].keys, z.path, z.line, z.hunks[0].keys, z.hunks[0].line) == \
        ((b"x", b"y"), "vllm/z.py", 8, (b"a\n", b"b\n"), 10)
    base = {"vllm/x.py": b"x", "vllm/z.py": b"a\n"}
    want = {"vllm/x.py": b"y", "vllm/z.py": b"b\n"}
    assert apply_patch(base, patch_of(text)).files == want
    assert gnu_patch(tmp_path, base, text, "-F0")[2] == git_apply(tmp_path, base, text)[2] == want


@pytest.mark.parametrize("header, shown", [
    ("@@ -1,8 +1,8 @@ class FIX", "@@ -1,8 +1,8 @@ class FIX"),
    ("@@ -1,8 +1,8 @@ ", "@@ -1,8 +1,8 @@ "),  # as it stands, its space kept
    ("@@ -1,8 +1,8 @@ def caf\xe9(): " + "x" * 80, "@@ -1,8 +1,8 @@ def caf\ufffd(): " + "x" * 52),  # cut to 80
])
def test_a_cut_hunk_is_named_by_its_header_line(header, shown):
    e = refused(b"--- a/vllm/a.py\n+++ b/vllm/a.py\n" + header.encode("latin-1") + b"\n a\n-b\n+B\n")
    assert e.message == (f"malformed hunk: the patch file ends here, inside the hunk {shown}: it is cut short (its "
                         "header says -8 +8 lines, it has -2 +2)")


def test_a_hunks_section_is_the_text_after_its_header_whole():
    (h,) = parse("--- a/vllm/a.py\n+++ b/vllm/a.py\n@@ -1 +1 @@ class FIX\n-x\n+y\n").hunks
    assert h.section == "class FIX"


@needs_patch
def test_a_quoted_name_with_an_escape_git_does_not_write_is_taken_as_it_stands(tmp_path):
    """``"a/x\\q.py"``: not an escape git writes, so git reads the name as it stands (``x\\q.py"``, which no tree
    holds) and GNU patch finds no file; it used to read as ``xq.py``, which a tree holding that file patched."""
    diff = '--- "a/x\\q.py"\n+++ "b/x\\q.py"\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n'
    assert [f.path for f in patch_of(diff).files] == ['x\\q.py"']
    out = apply_patch({"xq.py": b"a\nb\nc\n"}, patch_of(diff))
    assert out.status == "failed" and out.files == {}
    rc, said, _ = git_apply(tmp_path, {"xq.py": b"a\nb\nc\n"}, diff, "--check")
    assert rc != 0 and 'x\\q.py": No such file or directory' in said
    assert gnu_patch(tmp_path, {"xq.py": b"a\nb\nc\n"}, diff, "--dry-run")[0] != 0
