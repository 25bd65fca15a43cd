"""The hunk engine: apply a patch to file contents held in memory.

Pure on purpose: bytes in, bytes and per-hunk verdicts out; no I/O. Every
verb (check, apply, test, build, audit) goes through ``apply_patch`` so that
they all agree on where a hunk lands.

Placement is stricter than GNU patch, because fork maintainers were bitten by
its leniency:

* a hunk lands where its old lines match exactly, at the position its header
  says (``exact``) or elsewhere (``offset`` N, reported);
* if that context matches at several places and none is the stated one, the
  hunk is ambiguous and refused (GNU patch silently takes the nearest);
* if it only matches after dropping context lines, it is ``fuzz`` and refused
  unless the manifest allows that much fuzz for this patch;
* if the hunk's new lines are already there, it is ``already-applied``
  (``patch --forward`` cannot tell that from "does not apply");
* otherwise ``failed``, with the nearest candidate and the lines that differ.

Line endings are compared loosely and written faithfully: a CRLF file keeps
CRLF endings on the lines a patch adds.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field

from patchset.core.patchfile import FilePatch, Hunk, PatchFile

EXACT = "exact"
OFFSET = "offset"
FUZZ = "fuzz"
ALREADY = "already-applied"
FAILED = "failed"

MAX_FUZZ_PROBE = 2  # as far as GNU patch goes by default; further is not worth reporting


@dataclass(frozen=True)
class HunkResult:
    file: str
    number: int
    status: str
    applied: bool
    line: int | None = None  # 1-based line in the file as it stood before this hunk
    offset: int = 0
    fuzz: int = 0
    message: str = ""
    candidates: tuple[int, ...] = ()
    differ: tuple[str, ...] = ()
    patch_line: int = 0  # the @@ line in the patch file, for messages and annotations

    def to_json(self) -> dict:
        out: dict = {"file": self.file, "hunk": self.number, "status": self.status, "line": self.line,
                     "offset": self.offset}
        if self.fuzz:
            out["fuzz"] = self.fuzz
        if self.message:
            out["message"] = self.message
        if self.candidates:
            out["candidates"] = list(self.candidates)
        if self.differ:
            out["differ"] = list(self.differ)
        if self.patch_line:
            out["patch_line"] = self.patch_line
        return out


@dataclass(frozen=True)
class PatchOutcome:
    status: str  # "applies", "already-applied", "failed"
    hunks: tuple[HunkResult, ...]
    files: dict[str, bytes | None] = field(default_factory=dict)  # changed paths only
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "applies"


def apply_patch(tree: Mapping[str, bytes | None], patch: PatchFile, *, max_fuzz: int = 0) -> PatchOutcome:
    """Apply every file of ``patch`` to ``tree`` (path -> content, None when absent).

    ``tree`` must hold every path the patch touches. The returned ``files`` hold
    the new content of the paths that change; on failure they must not be used.
    """
    changed: dict[str, bytes | None] = {}
    results: list[HunkResult] = []
    for fp in patch.files:
        source = fp.old_path or fp.new_path or ""
        content = changed[source] if source in changed else tree.get(source)
        if fp.is_rename and content is None and fp.new_path is not None:
            moved = changed[fp.new_path] if fp.new_path in changed else tree.get(fp.new_path)
            if moved is not None:  # renamed already: its hunks must be there too
                _, hunks = _apply_file(moved, fp, max_fuzz)
                if all(h.status == ALREADY for h in hunks):
                    results.extend(hunks or [HunkResult(fp.new_path, 0, ALREADY, False, message="renamed already")])
                else:
                    results.append(HunkResult(fp.new_path, 0, FAILED, False,
                                              message=f"{fp.old_path} is gone and {fp.new_path} differs"))
                continue
        after, hunks = _apply_file(content, fp, max_fuzz)
        results.extend(hunks)
        if fp.old_path and fp.old_path != fp.new_path:
            changed[fp.old_path] = None
        if fp.new_path:
            changed[fp.new_path] = after
    return _summarise(results, changed)


def _summarise(results: list[HunkResult], changed: dict[str, bytes | None]) -> PatchOutcome:
    statuses = {h.status for h in results}
    if any(not h.applied and h.status != ALREADY for h in results):
        bad = [h for h in results if not h.applied and h.status != ALREADY]
        msg = "; ".join(f"hunk {h.number} ({h.file}): {h.status}" for h in bad)
        return PatchOutcome("failed", tuple(results), {}, msg)
    if statuses == {ALREADY}:
        return PatchOutcome("already-applied", tuple(results), {}, "every hunk is already in the tree")
    if ALREADY in statuses:
        already = [str(h.number) for h in results if h.status == ALREADY]
        return PatchOutcome("failed", tuple(results), {},
                            f"partly applied already (hunks {', '.join(already)}): the tree is neither "
                            "pristine nor patched")
    return PatchOutcome("applies", tuple(results), changed)


def _apply_file(content: bytes | None, fp: FilePatch, max_fuzz: int) -> tuple[bytes | None, list[HunkResult]]:
    path = fp.path
    if fp.old_path is None:  # creation
        target = _render_new_file(fp)
        if content is None:
            return target, [HunkResult(path, h.number, EXACT, True, line=1) for h in fp.hunks] or []
        if content == target:
            return content, [HunkResult(path, h.number, ALREADY, False, line=1) for h in fp.hunks]
        return content, [HunkResult(path, h.number, FAILED, False,
                                    message="the patch creates this file but it already exists")
                         for h in fp.hunks]
    if content is None:
        if fp.new_path is None:  # deletion of a file that is gone
            return None, [HunkResult(path, h.number, ALREADY, False) for h in fp.hunks]
        return None, [HunkResult(path, h.number, FAILED, False, message="file not found in the tree")
                      for h in fp.hunks] or [HunkResult(path, 0, FAILED, False, message="file not found")]
    buf = _Buffer(content)
    results = []
    shift = 0  # lines added minus removed by the hunks applied so far
    last_offset = 0
    floor = 0  # hunks apply in order: never before the end of the previous one
    for hunk in fp.hunks:
        res, shift_delta, new_floor = _place(buf, hunk, path, shift, last_offset, floor, max_fuzz)
        results.append(res)
        if res.applied:
            shift += shift_delta
            last_offset = res.offset
            floor = new_floor
    if fp.new_path is None:
        if all(r.applied for r in results) and not buf.lines:
            return None, results
        if all(r.applied for r in results):
            results.append(HunkResult(path, fp.hunks[-1].number if fp.hunks else 0, FAILED, False,
                                      message="the patch deletes this file but lines remain"))
        return content, results
    return buf.render(), results


def _render_new_file(fp: FilePatch) -> bytes:
    out = []
    for h in fp.hunks:
        for ln in h.new:
            out.append(ln.text + ln.eol)
    return "".join(out).encode("utf-8", errors="surrogateescape")


class _Buffer:
    """A file as lines, compared without their endings."""

    def __init__(self, content: bytes) -> None:
        text = content.decode("utf-8", errors="surrogateescape")
        self.lines = text.splitlines(keepends=True)
        crlf = sum(1 for ln in self.lines if ln.endswith("\r\n"))
        self.eol = "\r\n" if crlf * 2 > len(self.lines) else "\n"
        self.keys = [_strip_eol(ln) for ln in self.lines]

    def matches(self, old: list[str], lo: int) -> list[int]:
        k = len(old)
        if k == 0:
            return []
        first = old[0]
        keys = self.keys
        return [p for p in range(lo, len(keys) - k + 1) if keys[p] == first and keys[p:p + k] == old]

    def replace(self, at: int, count: int, new: list[str]) -> None:
        self.lines[at:at + count] = new
        self.keys[at:at + count] = [_strip_eol(ln) for ln in new]

    def render(self) -> bytes:
        return "".join(self.lines).encode("utf-8", errors="surrogateescape")


def _strip_eol(line: str) -> str:
    if line.endswith("\r\n"):
        return line[:-2]
    if line.endswith(("\n", "\r")):
        return line[:-1]
    return line


def _place(buf: _Buffer, hunk: Hunk, path: str, shift: int, last_offset: int, floor: int,
           max_fuzz: int) -> tuple[HunkResult, int, int]:
    old = [ln.text for ln in hunk.old]
    new_lines = hunk.new
    header_pos = hunk.source_start - 1 if hunk.source_length else hunk.source_start
    expected = header_pos + shift + last_offset
    delta = len(new_lines) - len(old)

    def result(status: str, at: int, fuzz: int = 0, applied: bool = True, **kw) -> HunkResult:
        offset = at - shift - header_pos
        return HunkResult(path, hunk.number, status, applied, line=at - shift + 1, offset=offset,
                          fuzz=fuzz, **kw)

    if not old:  # pure insertion with no context: the header is all we have
        at = min(max(expected, floor), len(buf.lines))
        buf.replace(at, 0, _rendered(new_lines, buf.eol, at, buf))
        return result(EXACT if at == header_pos + shift else OFFSET, at), delta, at + len(new_lines)

    found = buf.matches(old, floor)
    pick, why = _choose(found, expected)
    if pick is not None:
        buf.replace(pick, len(old), _merge(buf, pick, hunk, 0, 0))
        status = EXACT if pick - shift == header_pos else OFFSET
        return result(status, pick), delta, pick + len(new_lines)
    if why:
        return result(FAILED, expected, applied=False, message=why, candidates=tuple(p + 1 for p in found)), 0, floor

    new = [ln.text for ln in new_lines]
    done = buf.matches(new, floor)
    pick, _ = _choose(done, expected)
    if pick is not None:
        return result(ALREADY, pick, applied=False), 0, pick + len(new)

    for fuzz in range(1, MAX_FUZZ_PROBE + 1):
        head, tail = _fuzz_trim(hunk, fuzz)
        if head is None:
            break
        trimmed = old[head:len(old) - tail]
        if not trimmed:
            break
        found = buf.matches(trimmed, floor)
        pick, why = _choose(found, expected + head)
        if pick is None:
            continue
        start = pick - head
        if fuzz <= max_fuzz:
            buf.replace(pick, len(trimmed), _merge(buf, pick, hunk, head, tail))
            return result(FUZZ, start, fuzz=fuzz, message=f"placed with fuzz {fuzz}"), delta, \
                pick + len(new_lines) - head - tail
        return result(FUZZ, start, fuzz=fuzz, applied=False,
                      message=f"matches only with fuzz {fuzz} at line {start - shift + 1} (GNU patch would "
                      "place it there); refused: allow fuzz for this patch in the manifest only if you "
                      "checked that place"), 0, floor

    cand, differ = _nearest(buf, old, expected, floor)
    msg = "context not found"
    if cand is not None:
        msg = f"context not found; nearest candidate at line {cand - shift + 1}"
    return result(FAILED, expected, applied=False, message=msg,
                  candidates=(cand - shift + 1,) if cand is not None else (), differ=differ), 0, floor


def _choose(found: list[int], expected: int) -> tuple[int | None, str]:
    if not found:
        return None, ""
    if expected in found:
        return expected, ""
    if len(found) == 1:
        return found[0], ""
    lines = ", ".join(str(p + 1) for p in found[:6])
    return None, f"ambiguous: the context matches at {len(found)} places (lines {lines}), none at the stated line"


def _fuzz_trim(hunk: Hunk, fuzz: int) -> tuple[int | None, int]:
    """How many leading/trailing context lines GNU patch would ignore at this fuzz."""
    lines = hunk.lines
    lead = 0
    while lead < len(lines) and lines[lead].kind == " ":
        lead += 1
    trail = 0
    while trail < len(lines) - lead and lines[len(lines) - 1 - trail].kind == " ":
        trail += 1
    if lead == 0 and trail == 0:
        return None, 0
    return min(fuzz, lead), min(fuzz, trail)


def _merge(buf: _Buffer, at: int, hunk: Hunk, head: int, tail: int) -> list[str]:
    """The hunk's new lines, keeping the file's own text for context lines."""
    lines = hunk.lines
    body = lines[head:len(lines) - tail] if tail else lines[head:]
    out: list[str] = []
    i = at
    for ln in body:
        if ln.kind == " ":
            out.append(buf.lines[i])
            i += 1
        elif ln.kind == "-":
            i += 1
        else:
            eol = ln.eol if ln.eol == "" else buf.eol if ln.eol == "\n" else ln.eol
            out.append(ln.text + eol)
    # A file whose last line lacked a newline gains one when lines are appended after it.
    for j in range(len(out) - 1):
        if not out[j].endswith(("\n", "\r")):
            out[j] += buf.eol
    return out


def _rendered(new_lines, eol: str, at: int, buf: _Buffer) -> list[str]:
    out = [ln.text + (ln.eol if ln.eol == "" else eol if ln.eol == "\n" else ln.eol) for ln in new_lines]
    if at > 0 and at == len(buf.lines) and not buf.lines[-1].endswith(("\n", "\r")):
        buf.lines[-1] += eol
    return out


def _nearest(buf: _Buffer, old: list[str], expected: int, floor: int) -> tuple[int | None, tuple[str, ...]]:
    """Where the hunk comes closest, and how those lines differ from what it expects."""
    k = len(old)
    keys = buf.keys
    if not keys:
        return None, ()
    best: tuple[int, int] | None = None  # (score, -distance)
    best_at = None
    for p in range(floor, max(floor, len(keys) - k) + 1):
        window = keys[p:p + k]
        score = sum(1 for a, b in zip(window, old, strict=False) if a == b)
        if score == 0:
            continue
        key = (score, -abs(p - expected))
        if best is None or key > best:
            best, best_at = key, p
    if best_at is None:
        return None, ()
    actual = keys[best_at:best_at + k]
    differ = tuple(ln.rstrip("\n") for ln in difflib.unified_diff(
        old, actual, "patch expects", "tree has", lineterm="", n=1))
    return best_at, differ
