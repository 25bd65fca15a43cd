"""Patch files: a DEP-3 style header, then a unified diff parsed with unidiff.

Paths are normalised to the upstream repository layout (``vllm/...``,
``tests/...``) so that the rest of patchset never has to think about
``a/`` prefixes or fork layouts: a fork patch written relative to the
package (``a/v1/...``) is read with ``root="vllm"``.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

import unidiff
from unidiff.constants import LINE_TYPE_EMPTY, LINE_TYPE_NO_NEWLINE

from patchset.errors import PatchFileError

HUNK_HEADER = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
DEP3_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9-]*):\s?(.*)$")


@dataclass(frozen=True)
class HunkLine:
    kind: str  # " " context, "-" removed, "+" added
    text: str  # without its line ending
    eol: str  # "\n", "\r\n", or "" when the patch says "No newline at end of file"


@dataclass(frozen=True)
class Hunk:
    number: int  # 1-based across the whole patch file, as users count them
    line: int  # line of the @@ header in the patch file
    source_start: int
    source_length: int
    target_start: int
    target_length: int
    lines: tuple[HunkLine, ...]
    section: str = ""

    @property
    def old(self) -> list[HunkLine]:
        return [ln for ln in self.lines if ln.kind != "+"]

    @property
    def new(self) -> list[HunkLine]:
        return [ln for ln in self.lines if ln.kind != "-"]


@dataclass(frozen=True)
class FilePatch:
    old_path: str | None  # None: the patch creates the file
    new_path: str | None  # None: the patch deletes the file
    hunks: tuple[Hunk, ...]
    line: int

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""

    @property
    def is_rename(self) -> bool:
        return self.old_path is not None and self.new_path is not None and self.old_path != self.new_path

    @property
    def touched(self) -> list[str]:
        return sorted({p for p in (self.old_path, self.new_path) if p})


@dataclass(frozen=True)
class PatchFile:
    path: str  # as given, for messages
    sha256: str
    header: dict[str, str] = field(default_factory=dict)
    files: tuple[FilePatch, ...] = ()

    @property
    def hunks(self) -> list[Hunk]:
        return [h for f in self.files for h in f.hunks]

    @property
    def touched(self) -> list[str]:
        return sorted({p for f in self.files for p in f.touched})


def read_patch(path: str | Path, *, strip: int = 1, root: str = "", display: str | None = None) -> PatchFile:
    """Read and validate a patch file; raise PatchFileError naming the file and line."""
    name = display or str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise PatchFileError(f"cannot read patch file: {e.strerror}", file=name) from e
    return parse_patch(data, name=name, strip=strip, root=root)


def parse_patch(data: bytes, *, name: str, strip: int = 1, root: str = "") -> PatchFile:
    raw_lines = data.splitlines(keepends=True)
    _refuse_binary(raw_lines, name)
    _check_hunk_lengths(raw_lines, name)
    text = data.decode("utf-8", errors="surrogateescape")
    try:
        parsed = unidiff.PatchSet(text)
    except unidiff.UnidiffParseError as e:
        raise PatchFileError(f"not a valid unified diff: {e}", file=name) from e
    header = parse_dep3(text)
    files: list[FilePatch] = []
    number = 0
    for pf in parsed:
        first = _first_line_of(pf)
        old = None if pf.is_added_file else _normalise(pf.source_file, strip, root, name, first)
        new = None if pf.is_removed_file else _normalise(pf.target_file, strip, root, name, first)
        hunks = []
        for h in pf:
            number += 1
            hunks.append(_hunk(h, number))
        files.append(FilePatch(old_path=old, new_path=new, hunks=tuple(hunks), line=first))
    if not files:
        raise PatchFileError("contains no diff", file=name, hint="expected '--- a/...' and '+++ b/...' lines")
    return PatchFile(path=name, sha256=hashlib.sha256(data).hexdigest(), header=header, files=tuple(files))


def parse_dep3(text: str) -> dict[str, str]:
    """The DEP-3 fields before the diff; continuation lines join the previous field."""
    fields: dict[str, str] = {}
    last = None
    for line in text.splitlines():
        if line.startswith(("diff ", "--- ", "Index: ")) or line.strip() == "---":
            break
        m = DEP3_KEY.match(line)
        if m:
            last = m.group(1)
            fields[last] = m.group(2).strip()
        elif last and line.startswith((" ", "\t")):
            fields[last] = (fields[last] + "\n" + line.strip()).strip()
    return fields


def _hunk(h: unidiff.Hunk, number: int) -> Hunk:
    lines: list[HunkLine] = []
    for ln in h:
        if ln.line_type == LINE_TYPE_NO_NEWLINE:
            if lines:
                prev = lines[-1]
                lines[-1] = HunkLine(prev.kind, prev.text, "")
            continue
        kind = " " if ln.line_type == LINE_TYPE_EMPTY else ln.line_type
        value = ln.value
        eol = "\r\n" if value.endswith("\r\n") else "\n" if value.endswith("\n") else ""
        lines.append(HunkLine(kind, value[: len(value) - len(eol)], eol))
    header_line = (h[0].diff_line_no - 1) if len(h) and h[0].diff_line_no else 0
    return Hunk(
        number=number,
        line=header_line,
        source_start=h.source_start,
        source_length=h.source_length,
        target_start=h.target_start,
        target_length=h.target_length,
        lines=tuple(lines),
        section=h.section_header or "",
    )


def _first_line_of(pf: unidiff.PatchedFile) -> int:
    for h in pf:
        for ln in h:
            if ln.diff_line_no:
                return max(1, ln.diff_line_no - 3)
    return 0


def _normalise(raw: str, strip: int, root: str, name: str, line: int) -> str:
    path = raw.split("\t", 1)[0].strip()
    if path.startswith('"') and path.endswith('"'):
        path = path[1:-1]
    parts = path.split("/")
    if len(parts) <= strip:
        raise PatchFileError(f"path {raw!r} has fewer than {strip + 1} components", file=name, line=line,
                             hint="check the manifest's strip setting")
    rel = "/".join(parts[strip:])
    if root:
        rel = root.rstrip("/") + "/" + rel
    norm = posixpath.normpath(rel)
    if path.startswith("/") and strip == 0 or norm.startswith(("../", "/")) or norm == ".." or "/../" in rel \
            or rel.startswith("../"):
        raise PatchFileError(f"path {raw!r} leaves the tree", file=name, line=line,
                             hint="patch paths must stay inside the vLLM tree")
    return norm


def _refuse_binary(raw_lines: list[bytes], name: str) -> None:
    for i, line in enumerate(raw_lines, 1):
        if line.startswith((b"GIT binary patch", b"Binary files ")):
            raise PatchFileError("binary patches are not supported", file=name, line=i,
                                 hint="carry binary files outside the patch series")


def _check_hunk_lengths(raw_lines: list[bytes], name: str) -> None:
    """Count every hunk's lines against its @@ header.

    unidiff notices a hunk that is too short but not one that is too long (it
    silently drops the extra lines), and neither error says where. A hunk
    edited by hand is the usual cause, so name its line.
    """
    i = 0
    n = len(raw_lines)
    while i < n:
        m = HUNK_HEADER.match(raw_lines[i])
        if not m:
            i += 1
            continue
        at = i + 1
        old_want = int(m.group(2)) if m.group(2) is not None else 1
        new_want = int(m.group(4)) if m.group(4) is not None else 1
        old = new = 0
        i += 1
        while i < n and (old < old_want or new < new_want):
            line = raw_lines[i]
            c = line[:1]
            if c == b"\\":
                pass
            elif c == b" " or line in (b"\n", b"\r\n"):
                old += 1
                new += 1
            elif c == b"-" and not line.startswith(b"--- "):
                old += 1
            elif c == b"+" and not line.startswith(b"+++ "):
                new += 1
            else:
                break
            i += 1
        while i < n and raw_lines[i].startswith(b"\\"):
            i += 1
        if old != old_want or new != new_want:
            raise PatchFileError(
                f"malformed hunk: its header says -{old_want} +{new_want} lines but it has -{old} +{new}",
                file=name, line=at, hint="regenerate the patch rather than editing hunks by hand")
        if i < n:
            nxt = raw_lines[i]
            extra = nxt[:1] in (b"+", b"-", b" ") and not nxt.startswith((b"--- ", b"+++ ", b"-- \n", b"-- \r\n"))
            if extra and not nxt.startswith(b"--\n"):
                raise PatchFileError(
                    f"malformed hunk: more lines than its header -{old_want} +{new_want} says",
                    file=name, line=at, hint="regenerate the patch rather than editing hunks by hand")
