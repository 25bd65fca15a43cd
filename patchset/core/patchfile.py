"""Patch files: a DEP-3 style header, then a unified diff read line by line.

The diff is read here rather than with unidiff because unidiff gets the parts
that decide what a patch *does* wrong: it infers creation and deletion from
``@@ -0,0`` / ``+0,0`` (an existing empty ``__init__.py`` is edited, not
created), ignores git's ``copy``/mode headers, splits on every character
Python calls a line break (form feeds, ``\\x1c``, U+2028 ...), and takes a
removed line ``-- x`` inside a hunk for a file header. So:

* bytes are split on ``\\n`` only; a ``\\r`` before it is part of the line, except in a patch whose
  every line ends in CRLF (an editor or a mailer converted it whole): that one is read with its CRs
  stripped, as GNU patch reads it (``PatchFile.crlf`` says so, for a warning);
* hunk bodies are read by the counts in their ``@@`` header, so ``-- x`` and
  ``++ x`` inside a hunk are content; a hunk longer or shorter than its
  header is refused, naming its line;
* creation is ``--- /dev/null`` or ``new file mode``, deletion ``+++
  /dev/null`` or ``deleted file mode``, never the hunk numbers;
* git's ``rename``/``copy from``/``to`` and ``old``/``new``/``new file``
  modes are kept; symlinks and submodules (modes 120000, 160000) are refused.

Paths are normalised to the upstream repository layout (``vllm/...``,
``tests/...``) so that the rest of patchset never has to think about
``a/`` prefixes or fork layouts: a fork patch written relative to the
package (``a/v1/...``) is read with ``root="vllm"``.
"""

from __future__ import annotations

import functools
import hashlib
import marshal
import posixpath
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from patchset.cache import derived, keep_derived_bytes, read_derived_bytes
from patchset.errors import PatchFileError

HUNK_HEADER = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)$")
DEP3_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9-]*):\s?(.*)$")
GIT_MODE = re.compile(rb"^(old mode|new mode|new file mode|deleted file mode) ([0-7]{6})\s*$")
GIT_NAME = re.compile(rb"^(rename from|rename to|copy from|copy to) (.+?)\s*$")
#: Extended header lines of a git diff that say nothing patchset needs.
GIT_IGNORED = (b"index ", b"similarity index ", b"dissimilarity index ")
REGULAR = 0o100000
SIGNATURE = (b"-- \n", b"--\n", b"-- \r\n")


@dataclass(frozen=True)
class HunkLine:
    """One line of a hunk, for readers that want it as text (deps, next). The engine reads a hunk's
    ``kinds`` and ``keys`` instead: no object per line."""

    kind: str  # " " context, "-" removed, "+" added
    text: str  # without its "\n" (a "\r" before it is part of the text), surrogate-escaped
    eol: str  # "\n", or "" when the patch says "No newline at end of file"

    @property
    def key(self) -> bytes:
        """The line's bytes as they must appear in the file."""
        return self.text.encode("utf-8", errors="surrogateescape") + self.eol.encode()


@dataclass(frozen=True)
class Hunk:
    """One hunk, as its lines' kinds and bytes: ``kinds[i]`` is " ", "-" or "+" and ``keys[i]`` the
    line's bytes as they must stand in the file (its "\n" included unless the patch says "No newline
    at end of file"). Parsing makes no object per line (faster to parse, docs/records/performance.md);
    :attr:`lines` makes them on demand."""

    number: int  # 1-based across the whole patch file, as users count them
    line: int  # line of the @@ header in the patch file
    source_start: int
    source_length: int
    target_start: int
    target_length: int
    kinds: str
    keys: tuple[bytes, ...]
    section: str = ""

    # Cached: a hunk is placed on every release and tried at several places on each. The lists are
    # shared by every caller, which must not change them.
    @cached_property
    def lines(self) -> tuple[HunkLine, ...]:
        return tuple(HunkLine(kind, *_text_eol(key)) for kind, key in zip(self.kinds, self.keys, strict=True))

    @cached_property
    def old(self) -> list[HunkLine]:
        return [ln for ln in self.lines if ln.kind != "+"]

    @cached_property
    def new(self) -> list[HunkLine]:
        return [ln for ln in self.lines if ln.kind != "-"]

    @cached_property
    def old_keys(self) -> list[bytes]:
        """The old side's lines as bytes, as they must stand in the file."""
        return [key for kind, key in zip(self.kinds, self.keys, strict=True) if kind != "+"]

    @cached_property
    def new_keys(self) -> list[bytes]:
        return [key for kind, key in zip(self.kinds, self.keys, strict=True) if kind != "-"]

    @cached_property
    def unterminated(self) -> bool:
        """Whether a line of the hunk has no newline ("No newline at end of file"): only the last line of
        a side can lack one (the parser refuses anything else)."""
        return any(side and not side[-1].endswith(b"\n") for side in (self.old_keys, self.new_keys))

    @cached_property
    def leading(self) -> int:
        """Context lines before the first change."""
        return len(self.kinds) - len(self.kinds.lstrip(" "))

    @cached_property
    def trailing(self) -> int:
        """Context lines after the last change."""
        return len(self.kinds) - len(self.kinds.rstrip(" "))

    def flipped(self) -> Hunk:
        """The hunk that takes this one back out: sides swapped."""
        return Hunk(self.number, self.line, self.target_start, self.target_length, self.source_start,
                    self.source_length, self.kinds.translate(_FLIP), self.keys, self.section)


_FLIP = str.maketrans("+-", "-+")


def _text_eol(key: bytes) -> tuple[str, str]:
    if key.endswith(b"\n"):
        return key[:-1].decode("utf-8", errors="surrogateescape"), "\n"
    return key.decode("utf-8", errors="surrogateescape"), ""


@dataclass(frozen=True)
class FilePatch:
    """One file's diff in a patch: its paths (None for created or deleted), hunks and git modes."""

    old_path: str | None  # None: the patch creates the file
    new_path: str | None  # None: the patch deletes the file
    hunks: tuple[Hunk, ...]
    line: int
    copy: bool = False  # git "copy from/to": old_path is kept
    old_mode: int | None = None  # git "old mode" / "deleted file mode"
    new_mode: int | None = None  # git "new mode" / "new file mode": the mode the patch sets

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""

    @property
    def is_rename(self) -> bool:
        return (self.old_path is not None and self.new_path is not None and self.old_path != self.new_path
                and not self.copy)

    @property
    def is_copy(self) -> bool:
        return self.copy and self.old_path is not None and self.new_path is not None

    @property
    def mode_change(self) -> tuple[int, int] | None:
        """(old, new) when the patch changes the mode of an existing file."""
        if self.old_path is not None and self.new_mode is not None and self.old_mode is not None \
                and self.old_mode != self.new_mode:
            return self.old_mode, self.new_mode
        return None

    @property
    def touched(self) -> list[str]:
        return sorted({p for p in (self.old_path, self.new_path) if p})


@dataclass(frozen=True)
class PatchFile:
    """A parsed patch file: its DEP-3 header and every file it changes."""

    path: str  # as given, for messages
    sha256: str
    header: dict[str, str] = field(default_factory=dict)
    files: tuple[FilePatch, ...] = ()
    crlf: bool = False  # every line ended in CRLF: read with the CRs stripped, as GNU patch does

    @property
    def crlf_warning(self) -> str:
        """What a check says of a CRLF patch file ('' for any other)."""
        return (f"{self.path}: every line ends in CRLF: read with the CRs stripped, as GNU patch does (git apply "
                "refuses it unless --ignore-whitespace, and then writes CRs into the added lines); a file it "
                "changes with CRLF lines does not match it") if self.crlf else ""

    @property
    def hunks(self) -> list[Hunk]:
        return [h for f in self.files for h in f.hunks]

    @property
    def touched(self) -> list[str]:
        return sorted({p for f in self.files for p in f.touched})


def split_lines(data: bytes) -> list[bytes]:
    """``data`` cut after every ``\\n`` and nowhere else (the last piece may lack one)."""
    if b"\r" not in data:  # then bytes.splitlines (in C) cuts at the same places: it knows only \n, \r, \r\n
        return data.splitlines(keepends=True)
    parts = data.split(b"\n")
    out = [p + b"\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def all_crlf(data: bytes) -> bool:
    """Whether every line of ``data`` that ends ends in CRLF (the last one may have no end)."""
    if b"\r\n" not in data:
        return False
    return data.count(b"\n") == data.count(b"\r\n")


def read_patch(path: str | Path, *, strip: int = 1, root: str = "", display: str | None = None) -> PatchFile:
    """Read and validate a patch file; raise PatchFileError naming the file and line."""
    name = display or str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise PatchFileError(f"cannot read patch file: {e.strerror}", file=name) from e
    return _parsed(data, name, strip, root)


@functools.lru_cache(maxsize=4096)
def _parsed(data: bytes, name: str, strip: int, root: str) -> PatchFile:
    """One parse per patch content in a process: a series checked on ten releases reads each patch once.
    Safe to share: a PatchFile is frozen and nothing changes its header (refusals are raised again, not cached).

    Across processes, a parse is kept in the cache (``derived/patch/``, marshal: every value is a str,
    bytes, int, bool, None or a tuple of them) by the patch's sha256, strip and root, and this module's
    file, which about halves the parse phase of a check (docs/records/performance.md). Refusals are never kept: a bad
    patch is parsed, and refused, every time."""
    digest = hashlib.sha256(data).hexdigest()
    entry = derived("patch", f"{digest}\0{strip}\0{root}\0{_MARSHAL}".encode(), (__file__,), ".marshal")
    kept = _unkept(read_derived_bytes(entry), name, digest)
    if kept is not None:
        return kept
    parsed = parse_patch(data, name=name, strip=strip, root=root)
    payload = marshal.dumps(_kept(parsed))
    keep_derived_bytes(entry, hashlib.sha256(payload).digest() + payload)  # read back only when whole
    return parsed


_MARSHAL = f"{sys.implementation.cache_tag}:{marshal.version}"  # marshal's format is this Python's own


def _kept(pf: PatchFile) -> tuple:
    """``pf`` as plain values, without its path (the caller's name for it)."""
    return (pf.sha256, pf.crlf, tuple(pf.header.items()),
            tuple((f.old_path, f.new_path, f.line, f.copy, f.old_mode, f.new_mode,
                   tuple((h.number, h.line, h.source_start, h.source_length, h.target_start, h.target_length,
                          h.kinds, h.keys, h.section) for h in f.hunks)) for f in pf.files))


def _unkept(data: bytes | None, name: str, digest: str) -> PatchFile | None:
    """The PatchFile :func:`_kept` wrote, named ``name``; None when ``data`` is missing, damaged or not
    the parse of the patch whose sha256 is ``digest``."""
    if data is None or hashlib.sha256(data[32:]).digest() != data[:32]:
        return None
    try:
        sha, crlf, header, files = marshal.loads(data[32:])
        if sha != digest or type(crlf) is not bool:
            return None
        pf = PatchFile(name, sha, dict(header), tuple(
            FilePatch(old, new, tuple(Hunk(*h) for h in hunks), line, copy, old_mode, new_mode)
            for old, new, line, copy, old_mode, new_mode, hunks in files), crlf)
    except (EOFError, ValueError, TypeError):
        return None
    return pf if _parser_shaped(pf) else None


def _parser_shaped(pf: PatchFile) -> bool:
    """Whether every value of ``pf`` has the type the parser gives it: a whole entry is one this module
    wrote, but what it holds is checked before a check trusts it (fuzzed: docs/fuzzing.md)."""
    def maybe(value: object, kind: type) -> bool:
        return value is None or type(value) is kind

    return (all(type(k) is str and type(v) is str for k, v in pf.header.items())
            and all(maybe(f.old_path, str) and maybe(f.new_path, str) and type(f.line) is int
                    and type(f.copy) is bool and maybe(f.old_mode, int) and maybe(f.new_mode, int)
                    and all(all(type(n) is int for n in (h.number, h.line, h.source_start, h.source_length,
                                                         h.target_start, h.target_length))
                            and type(h.kinds) is str and type(h.keys) is tuple and type(h.section) is str
                            and len(h.kinds) == len(h.keys) and not h.kinds.strip(" +-")
                            and all(type(k) is bytes for k in h.keys)
                            for h in f.hunks)
                    for f in pf.files))


def parse_patch(data: bytes, *, name: str, strip: int = 1, root: str = "") -> PatchFile:
    crlf = all_crlf(data)
    raw_lines = split_lines(data.replace(b"\r\n", b"\n") if crlf else data)
    _refuse_binary(raw_lines, name)
    files = _Reader(raw_lines, name, strip, root).read()
    if not files:
        raise PatchFileError("contains no diff", file=name, hint="expected '--- a/...' and '+++ b/...' lines")
    header = _dep3(line.decode("utf-8", errors="surrogateescape").removesuffix("\n") for line in raw_lines)
    return PatchFile(path=name, sha256=hashlib.sha256(data).hexdigest(), header=header, files=tuple(files),
                     crlf=crlf)


def parse_dep3(text: str) -> dict[str, str]:
    """The DEP-3 fields before the diff; continuation lines join the previous field."""
    return _dep3(text.split("\n"))


def _dep3(lines: Iterable[str]) -> dict[str, str]:
    """:func:`parse_dep3` over lines without their "\\n", read only as far as the diff: a patch's header
    is decoded, not its whole text."""
    fields: dict[str, str] = {}
    last = None
    for line in lines:
        line = line.removesuffix("\r")
        if line.startswith(("diff ", "--- ", "Index: ")) or line.strip() == "---":
            break
        m = DEP3_KEY.match(line)
        if m:
            last = m.group(1)
            fields[last] = m.group(2).strip()
        elif last and line.startswith((" ", "\t")):
            fields[last] = (fields[last] + "\n" + line.strip()).strip()
    return fields


@dataclass
class _Section:
    """What the headers of one file's diff say, before its hunks."""

    line: int
    git: bool = False
    git_old: bytes | None = None  # the names on the "diff --git" line, when they can be told apart
    git_new: bytes | None = None
    minus: bytes | None = None  # the name after "--- " (b"/dev/null" kept)
    plus: bytes | None = None
    minus_line: int = 0  # where the "--- " and "+++ " lines stand, for messages about their paths
    plus_line: int = 0
    moved_from: bytes | None = None  # "rename from" / "copy from"
    moved_to: bytes | None = None
    copy: bool = False
    created: bool = False  # "new file mode"
    deleted: bool = False  # "deleted file mode"
    old_mode: int | None = None
    new_mode: int | None = None


DEV_NULL = b"/dev/null"


class _Reader:
    """One pass over the patch's lines, file section by file section."""

    def __init__(self, lines: list[bytes], name: str, strip: int, root: str) -> None:
        self.lines = lines
        self.name = name
        self.strip = strip
        self.root = root
        self.i = 0
        self.number = 0

    def at(self, i: int) -> bytes:
        return self.lines[i] if i < len(self.lines) else b""

    def error(self, message: str, line: int, hint: str | None = None) -> PatchFileError:
        return PatchFileError(message, file=self.name, line=line, hint=hint)

    def read(self) -> list[FilePatch]:
        files = []
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.startswith(b"diff --git "):
                files.append(self.file(self.git_headers()))
            elif line.startswith(b"--- ") and self.at(self.i + 1).startswith(b"+++ "):
                self.refuse_crlf_headers()
                section = _Section(line=self.i + 1, minus=_name(line[4:]), plus=_name(self.at(self.i + 1)[4:]),
                                   minus_line=self.i + 1, plus_line=self.i + 2)
                self.i += 2
                files.append(self.file(section))
            elif HUNK_HEADER.match(line):
                raise self.error("a hunk without '--- a/...' and '+++ b/...' file headers", self.i + 1,
                                 "regenerate the patch rather than editing it by hand")
            else:
                self.i += 1  # preamble, commit message, signature: not part of any file
        return files

    def git_headers(self) -> _Section:
        s = _Section(line=self.i + 1, git=True)
        s.git_old, s.git_new = _git_names(self.lines[self.i][len(b"diff --git "):])
        self.i += 1
        while self.i < len(self.lines):
            line = self.lines[self.i]
            mode, moved = GIT_MODE.match(line), GIT_NAME.match(line)
            if mode:
                self.mode(s, mode.group(1), int(mode.group(2), 8))
            elif moved:
                what, value = moved.group(1), _unquoted(moved.group(2))
                s.copy = s.copy or what.startswith(b"copy")
                if what.endswith(b"from"):
                    s.moved_from = value
                else:
                    s.moved_to = value
            elif not line.startswith(GIT_IGNORED):
                break
            self.i += 1
        if self.at(self.i).startswith(b"--- ") and self.at(self.i + 1).startswith(b"+++ "):
            self.refuse_crlf_headers()
            s.minus, s.plus = _name(self.lines[self.i][4:]), _name(self.lines[self.i + 1][4:])
            s.minus_line, s.plus_line = self.i + 1, self.i + 2
            self.i += 2
        return s

    def refuse_crlf_headers(self) -> None:
        """A diff whose own header lines end in CRLF, where not every line of the file does (a file wholly in
        CRLF is read with its CRs stripped before it gets here, as GNU patch reads it).

        GNU patch then strips every CR from its lines and git apply keeps them: the two tools write
        different files from it, so it is refused rather than guessed.
        """
        if self.lines[self.i].endswith(b"\r\n") and self.lines[self.i + 1].endswith(b"\r\n"):
            raise self.error("the diff's own lines end in CRLF but not every line of the file does: GNU patch "
                             "would strip the CRs, git apply would keep them", self.i + 1,
                             "convert the patch file to LF line endings (dos2unix); a diff of CRLF files keeps its "
                             "CRs only on the content lines")

    def mode(self, s: _Section, what: bytes, mode: int) -> None:
        if mode & 0o170000 != REGULAR:
            kind = "symlinks" if mode & 0o170000 == 0o120000 else "submodules" if mode & 0o170000 == 0o160000 \
                else "special files"
            raise self.error(f"{kind} (mode {mode:06o}) are not supported", self.i + 1,
                             "carry symlinks and submodules outside the patch series")
        if what == b"new file mode":
            s.created, s.new_mode = True, mode
        elif what == b"deleted file mode":
            s.deleted, s.old_mode = True, mode
        elif what == b"old mode":
            s.old_mode = mode
        else:
            s.new_mode = mode

    def file(self, s: _Section) -> FilePatch:
        hunks = []
        while HUNK_HEADER.match(self.at(self.i)):
            hunks.append(self.hunk())
        old, new = self.paths(s)
        fp = FilePatch(old_path=old, new_path=new, hunks=tuple(hunks), line=s.line, copy=s.copy and old is not None,
                       old_mode=s.old_mode, new_mode=s.new_mode)
        if not hunks and not (s.git and (s.created or s.deleted or fp.mode_change or old != new)):
            raise self.error(f"the diff of {fp.path} has no hunks", s.line,
                             "regenerate the patch rather than editing it by hand")
        return fp

    def paths(self, s: _Section) -> tuple[str | None, str | None]:
        created = s.created or s.minus == DEV_NULL
        deleted = s.deleted or s.plus == DEV_NULL
        if created and deleted:
            raise self.error("the diff both creates and deletes its file", s.line)
        moved_strip = max(self.strip - 1, 0)  # git writes rename/copy names without the a/ b/ prefix
        # Each name with the line it stands on: a refused path is reported where it is written.
        old = _first((s.moved_from, moved_strip, s.line),
                     (s.minus if s.minus != DEV_NULL else None, self.strip, s.minus_line or s.line),
                     (s.git_old, self.strip, s.line))
        new = _first((s.moved_to, moved_strip, s.line),
                     (s.plus if s.plus != DEV_NULL else None, self.strip, s.plus_line or s.line),
                     (s.git_new, self.strip, s.line))
        if not s.git and old and new:
            # Only git diffs rename: "--- a/x.py.orig +++ b/x.py" edits x.py. The old name is not used, but
            # one that leaves the tree is refused like a new one (a patch naming ../../etc is not a backport).
            _refuse_escape(old[0].decode("utf-8", errors="surrogateescape"), old[1], self.root, self.name, s.line)
            old = new
        if (old is None and not created) or (new is None and not deleted):
            raise self.error("cannot tell which file this diff changes", s.line,
                             "expected '--- a/PATH' and '+++ b/PATH' lines")
        old_path = None if created else self.normalise(*old)  # type: ignore[misc]
        new_path = None if deleted else self.normalise(*new)  # type: ignore[misc]
        return old_path, new_path

    def normalise(self, raw: bytes, strip: int, line: int) -> str:
        return _normalise(raw.decode("utf-8", errors="surrogateescape"), strip, self.root, self.name, line)

    def hunk(self) -> Hunk:
        at = self.i + 1
        m = HUNK_HEADER.match(self.lines[self.i].rstrip(b"\r\n"))
        assert m is not None
        old_want = int(m.group(2)) if m.group(2) is not None else 1
        new_want = int(m.group(4)) if m.group(4) is not None else 1
        kinds, keys, self.i, old, new, marked = _body(self.lines, self.i + 1, old_want, new_want)
        if self.at(self.i).startswith(b"\\") and keys:  # "\ No newline at end of file": the last line has none
            keys[-1] = keys[-1].removesuffix(b"\n")
            self.i += 1
        if old != old_want or new != new_want:
            raise self.short(at, old_want, new_want, old, new, kinds)
        self.refuse_cut_line()
        self.after_hunk(at, old_want, new_want, kinds, keys, marked)
        self.number += 1
        return Hunk(number=self.number, line=at, source_start=int(m.group(1)), source_length=old_want,
                    target_start=int(m.group(3)), target_length=new_want, kinds=kinds, keys=tuple(keys),
                    section=m.group(5).decode("utf-8", errors="surrogateescape").strip())

    def short(self, at: int, old_want: int, new_want: int, old: int, new: int, kinds: str) -> PatchFileError:
        """A hunk with fewer lines than its header says. Where the patch file ends inside it, it is cut short
        there (git apply refuses it as corrupt). Where only a few context lines are missing after its changes
        (as many on both sides), they may be trailing blank lines an editor stripped: GNU patch assumes so
        ("blank lines got chopped"), and the hint says so; a hunk cut before its changes, or missing more
        context than a diff writes, was cut (a paste, a download)."""
        said = f"malformed hunk: its header says -{old_want} +{new_want} lines but it has -{old} +{new}"
        missing = old_want - old
        if self.i >= len(self.lines):  # named at the file's last line, where it is cut
            end, header = len(self.lines), self.lines[at - 1].rstrip(b"\r\n").decode("utf-8", "replace")[:80]
            said = (f"malformed hunk: the patch file ends here, inside the hunk {header}: it is cut short (its "
                    f"header says -{old_want} +{new_want} lines, it has -{old} +{new})")
            if missing == new_want - new and 0 < missing <= 3 and kinds.strip(" "):
                return self.error(f"{said}; {missing} context line(s) short: blank lines an editor stripped? (GNU "
                                  "patch assumes so and reads them as blank context; git apply refuses the patch "
                                  "as corrupt)", end, f"if they were blank, restore the {missing} blank context "
                                  "line(s) (a single space each) at the end of the file; else regenerate the patch")
            return self.error(said, end, "the patch file was cut: regenerate it, or take it whole from where it came")
        return self.error(said, at, "regenerate the patch rather than editing hunks by hand")

    def refuse_cut_line(self) -> None:
        """A patch file whose last line, a line of this hunk, has no newline and no "\\ No newline at end of
        file" after it ends in the middle of a line: git apply refuses it ("corrupt patch"); GNU patch warns
        ("patch unexpectedly ends in middle of line") and reads the line as one without a newline, so that a
        hunk on a file whose line has one fails. Refused, as git apply does, naming the line. A marker after an
        earlier line (the other side's last) says nothing of this one."""
        last = len(self.lines)
        if self.i == last and last and not self.lines[-1].endswith(b"\n") and not self.lines[-1].startswith(b"\\"):
            raise self.error("the patch file ends in the middle of this line (no newline, and no '\\ No newline at "
                             "end of file' after it): cut short? (git apply refuses it as corrupt; GNU patch reads "
                             "the line as having no newline)", last,
                             "end the file with a newline if the line is whole, or regenerate the patch")

    def after_hunk(self, at: int, old_want: int, new_want: int, kinds: str, keys: list[bytes], marked: bool) -> None:
        """Refuse a hunk with lines beyond its header's counts, or one whose "No newline at end of file"
        (``marked``: one stands among its lines; one after its last line is never misplaced) stands before the
        last line of a side."""
        nxt = self.at(self.i)
        extra = nxt[:1] in (b"+", b"-", b" ") and nxt not in SIGNATURE \
            and not (nxt.startswith(b"--- ") and self.at(self.i + 1).startswith(b"+++ "))
        if extra:
            raise self.error(f"malformed hunk: more lines than its header -{old_want} +{new_want} says", at,
                             "regenerate the patch rather than editing hunks by hand")
        if not marked:
            return
        for side in "+-":
            ends = [key.endswith(b"\n") for kind, key in zip(kinds, keys, strict=True) if kind != side]
            if not all(ends[:-1]):
                raise self.error("malformed hunk: 'No newline at end of file' before the end of the hunk", at)


_KINDS = {ord(" "): " ", ord("-"): "-", ord("+"): "+", ord("\\"): "\\"}


def _body(lines: list[bytes], i: int, old_want: int,
          new_want: int) -> tuple[str, list[bytes], int, int, int, bool]:
    """A hunk's lines from ``lines[i]`` on, read until its header's counts are met or a line cannot belong
    to it: (their kinds, their bytes as they stand in the file, index after them, old and new lines read,
    whether a "No newline at end of file" was among them). The hottest loop of parsing, kept tight."""
    n = len(lines)
    kinds: list[str] = []
    keys: list[bytes] = []
    old = new = 0
    marked = False
    kind: str | None
    while old < old_want or new < new_want:
        raw = lines[i] if i < n else b""
        if raw == b"\n" or raw == b"\r\n":  # an empty context line whose leading space was stripped (GNU diff, editors)
            kind, content = " ", raw
        else:
            kind, content = _KINDS.get(raw[0]) if raw else None, raw[1:]
        if kind is None:
            break
        if kind == "\\":  # "\\ No newline at end of file": the line before has none
            if not keys:
                break
            keys[-1] = keys[-1].removesuffix(b"\n")
            marked = True
            i += 1
            continue
        if kind == "+":
            if new == new_want:
                break
            new += 1
        elif kind == "-":
            if old == old_want:
                break
            old += 1
        elif old == old_want or new == new_want:
            break
        else:
            old, new = old + 1, new + 1
        # The patch file's own last line may lack "\n": only the marker says a line has none.
        keys.append(content if content.endswith(b"\n") else content + b"\n")
        kinds.append(kind)
        i += 1
    return "".join(kinds), keys, i, old, new, marked


def _name(raw: bytes) -> bytes:
    return _unquoted(raw.split(b"\t", 1)[0].rstrip(b"\r\n").strip())


_ESCAPE = re.compile(rb"\\([0-7]{1,3}|.)", re.S)
_C_ESCAPES = {b"a": b"\a", b"b": b"\b", b"t": b"\t", b"n": b"\n", b"v": b"\v", b"f": b"\f", b"r": b"\r", b'"': b'"',
              b"\\": b"\\"}


def _unquoted(name: bytes) -> bytes:
    """A name as git (and GNU diff) write one holding a byte that is not printable ASCII, a quote or a
    backslash: in double quotes, C-escaped (``"a/vllm/caf\\303\\251.py"`` is ``a/vllm/café.py``)."""
    if not (len(name) > 1 and name.startswith(b'"') and name.endswith(b'"')):
        return name

    if any(e[:1] not in b"01234567" and e not in _C_ESCAPES for e in _ESCAPE.findall(name[1:-1])):
        return name  # an escape git does not write (``\\q``): git refuses the name, so it names no file here

    def one(m: re.Match[bytes]) -> bytes:
        e = m.group(1)
        return bytes([int(e, 8) & 0xFF]) if e[:1] in b"01234567" else _C_ESCAPES[e]

    return _ESCAPE.sub(one, name[1:-1])


def _git_names(rest: bytes) -> tuple[bytes | None, bytes | None]:
    """The two names of ``diff --git a/P b/P``; only when they are the same path (else ambiguous)."""
    rest = rest.rstrip(b"\r\n")
    half = (len(rest) - 1) // 2
    left, right = rest[:half], rest[half + 1:]
    if len(rest) % 2 == 1 and rest[half:half + 1] == b" " and left.split(b"/", 1)[-1] == right.split(b"/", 1)[-1]:
        return _unquoted(left), _unquoted(right)
    return None, None


def _first(*options: tuple[bytes | None, int, int]) -> tuple[bytes, int, int] | None:
    return next(((raw, strip, line) for raw, strip, line in options if raw), None)


def _normalise(raw: str, strip: int, root: str, name: str, line: int) -> str:
    path = raw.strip()
    parts = path.split("/")
    if len(parts) <= strip:
        raise PatchFileError(f"path {raw!r} has fewer than {strip + 1} components", file=name, line=line,
                             hint="check the manifest's strip setting")
    _refuse_escape(raw, strip, root, name, line)
    return posixpath.normpath(_stripped(path, strip, root))


def _stripped(path: str, strip: int, root: str) -> str:
    rel = "/".join(path.split("/")[strip:])
    return root.rstrip("/") + "/" + rel if root else rel


def _refuse_escape(raw: str, strip: int, root: str, name: str, line: int) -> None:
    """Refuse a path that leaves the tree once ``strip`` components are dropped (a name with fewer
    components than that is not refused here: :func:`_normalise` says so where the name is used)."""
    path = raw.strip()
    if len(path.split("/")) <= strip:
        return
    rel = _stripped(path, strip, root)
    norm = posixpath.normpath(rel)
    _refuse_unwritable(raw, norm, name, line)
    if posixpath.normpath(_stripped(path, strip, "")) == ".":  # under a root too: "b/" is the root's folder
        raise PatchFileError(f"path {raw!r} names no file", file=name, line=line,
                             hint="expected '--- a/PATH' and '+++ b/PATH' lines")
    if path.startswith("/") and strip == 0 or norm.startswith(("../", "/")) or norm == ".." or "/../" in rel \
            or rel.startswith("../"):
        raise PatchFileError(f"path {raw!r} leaves the tree", file=name, line=line,
                             hint="patch paths must stay inside the vLLM tree")


#: The longest file name (one path component) and path, in bytes, that Linux file systems take
#: (NAME_MAX, PATH_MAX - 1); macOS and Windows allow no more.
NAME_MAX = 255
PATH_MAX = 4095


def _refuse_unwritable(raw: str, norm: str, name: str, line: int) -> None:
    """A path no file system can hold is bad input in the patch, not a file to look for: opening it
    fails with ENAMETOOLONG or "embedded null byte", which would surface as an internal error."""
    encoded = norm.encode("utf-8", errors="surrogateescape")
    if b"\0" in encoded:
        raise PatchFileError(f"path {raw!r} contains a NUL byte", file=name, line=line,
                             hint="the patch file is damaged; regenerate it")
    longest = max(encoded.split(b"/"), key=len)
    if len(longest) > NAME_MAX or len(encoded) > PATH_MAX:
        what = (f"a component of {len(longest)} bytes" if len(longest) > NAME_MAX
                else f"{len(encoded)} bytes")
        shown = raw if len(raw) <= 80 else raw[:60] + "..." + raw[-16:]
        raise PatchFileError(f"path {shown!r} has {what}, more than a file system allows "
                             f"({NAME_MAX} a name, {PATH_MAX} a path)", file=name, line=line,
                             hint="the patch file is damaged; regenerate it")
    if norm in (".", ""):
        raise PatchFileError(f"path {raw!r} names no file", file=name, line=line,
                             hint="expected '--- a/PATH' and '+++ b/PATH' lines")


def _refuse_binary(raw_lines: list[bytes], name: str) -> None:
    for i, line in enumerate(raw_lines, 1):
        if line.startswith((b"GIT binary patch", b"Binary files ")):
            raise PatchFileError("binary patches are not supported", file=name, line=i,
                                 hint="carry binary files outside the patch series")
