"""The hunk engine: apply a patch to file contents held in memory.

Pure on purpose: bytes in, bytes and per-hunk verdicts out; no I/O. Every
verb (check, apply, test, build, audit) goes through ``apply_patch`` so that
they all agree on where a hunk lands.

The policy: never place a hunk where GNU ``patch -F0`` or ``git apply``
would refuse it, and refuse some places they take, because fork maintainers
were bitten by their leniency.

* Lines are the bytes between ``\\n``s, compared exactly: a ``\\r`` is part of
  a line and so is the final newline. A CRLF patch on an LF file (or the
  reverse) and a patch that disagrees with the file about the newline at its
  end are refused, as ``git apply`` refuses them (GNU patch strips the CRs
  of a diff whose own lines end in CRLF; patchfile.py reads a patch wholly in CRLF so, and refuses
  one whose header lines alone end in CRLF).
  A mixed result is never written, and the refusal says why.
* Anchoring, as both tools do it: a hunk whose old side starts at line 1
  (or 0) may only land at the start of the file (git's rule, which includes
  GNU's "less leading than trailing context at line 1"); one with less
  trailing than leading context, or a line without a final newline, only at
  the end. A hunk without context (``-U0``) is anchored only by ``@@ -0,0``.
  The anchoring is both tools' rules together, so where it finds no place
  the tools disagree: GNU moves a line-1 hunk whose contexts are as long (an
  offset) where git anchors it; a whole-file hunk (anchored at both ends) on
  a file holding its lines twice is placed by GNU at the end, by git at the
  start. Refused, naming where each tool would put it (not as fuzz, which
  neither tool needs there), unless the manifest allows the fuzz that places it.
* A hunk lands where its old lines match, at the position its header says
  (``exact``) or elsewhere (``offset`` N, reported). Hunks of one file land
  in order and never overlap.
* If the context matches at several places, the hunk is ambiguous and
  refused unless one is where GNU patch expects it (the stated line moved by
  the offset of the hunks before) and git apply, which searches from the
  stated line alone and also before earlier hunks, would take the same one.
  Both tools silently take the nearest; they do not always agree which.
* If it only matches after dropping context lines, it is ``fuzz`` and
  refused unless the manifest allows that much fuzz for this patch.
* ``already-applied`` means the reversed hunk places under the same rules:
  its new lines, anchored the same way, unambiguous. A hunk both readings
  fit is ambiguous and refused, naming both places: its old lines stand where
  it would land and its new lines stand there too (added lines that repeat
  their own context, on a file holding them twice), or its new lines stand
  where the reversed hunk lands while GNU patch or git apply would find its
  old lines and apply it (again). A pure deletion is only
  already-applied when the lines it removes are nowhere in the file, and a
  context-free insertion whose lines already stand where it would put them
  is refused (nothing tells a re-application from a coincidence), as is
  one whose lines end in CRLF where the file's end in LF (or the reverse).
* otherwise ``failed``, with the nearest candidate and the lines that differ.
* A context-free hunk is placed by its header (``-U0``), except a lone one at
  line 0 or 1: like git apply, that is read as the whole file (a ``-U3`` diff
  of a file with nothing in common), so it needs the file to be exactly its
  old side.
* Files: creation only from ``--- /dev/null`` or ``new file mode`` (the file
  must be absent), deletion only from ``+++ /dev/null`` or ``deleted file
  mode`` (every line must go); ``@@ -0,0`` on an existing empty file is an
  edit and ``+0,0`` empties a file without deleting it. A copy keeps its
  source; a rename onto an existing file is refused. The mode a patch sets
  is returned in ``PatchOutcome.modes``; a mode change shows as a hunk-0
  result with the old and new modes.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from patchset.core.patchfile import FilePatch, Hunk, PatchFile, split_lines
from patchset.core.words import Word

CONTEXT_NOT_FOUND = "context not found"  # a hunk whose old lines stand nowhere in the file, in any form


class HunkStatus(Word):
    """Where one hunk stands on a tree: the policy in this module's docstring decides it, except
    ``not-in-tree``, which ``core.series`` gives a hunk on a file the kind of tree cannot hold
    (``requirements/`` in a wheel: ``core.trees``); the engine never sees such a hunk."""

    EXACT = "exact"
    OFFSET = "offset"
    FUZZ = "fuzz"
    ALREADY = "already-applied"
    FAILED = "failed"
    NOT_IN_TREE = "not-in-tree"


class OutcomeStatus(Word):
    """What a whole patch does to a tree (``PatchOutcome.status``)."""

    APPLIES = "applies"
    ALREADY = "already-applied"
    FAILED = "failed"



MAX_FUZZ_PROBE = 2  # as far as GNU patch goes by default; further is not worth reporting


@dataclass(frozen=True)
class HunkResult:
    """Where one hunk stands on one file: its status and place, and why when it does not apply."""

    file: str
    number: int  # 0: a file-level change without a hunk (mode, rename, copy, empty file)
    status: HunkStatus
    applied: bool
    line: int | None = None  # 1-based line in the file as it stood before this hunk
    offset: int = 0
    fuzz: int = 0
    message: str = ""
    candidates: tuple[int, ...] = ()
    differ: tuple[str, ...] = ()
    patch_line: int = 0  # the @@ line in the patch file, for messages and annotations
    moved: str = ""  # FILE:LINE where its old lines stand now, when its file or its place is gone (check)
    moved_evidence: str = ""  # why we think so

    @property
    def fails(self) -> bool:
        """Not applied, and not because its result is there already or its file is not in this kind of tree."""
        return not self.applied and self.status not in (HunkStatus.ALREADY, HunkStatus.NOT_IN_TREE)


@dataclass(frozen=True)
class PatchOutcome:
    """What a whole patch does to a tree: its status, every hunk's result and the new content of the files it
    changes."""

    status: OutcomeStatus
    hunks: tuple[HunkResult, ...]
    files: dict[str, bytes | None] = field(default_factory=dict)  # changed paths only
    message: str = ""
    modes: dict[str, int] = field(default_factory=dict)  # path -> mode the patch sets (e.g. 0o100755)

    @property
    def ok(self) -> bool:
        return self.status == OutcomeStatus.APPLIES


def apply_patch(tree: Mapping[str, bytes | None], patch: PatchFile, *, max_fuzz: int = 0) -> PatchOutcome:
    """Apply every file of ``patch`` to ``tree`` (path -> content, None when absent).

    ``tree`` must hold every path the patch touches. The returned ``files`` hold
    the new content of the paths that change; on failure they must not be used.
    """
    changed: dict[str, bytes | None] = {}
    modes: dict[str, int] = {}
    results: list[HunkResult] = []

    def read(path: str) -> bytes | None:
        return changed[path] if path in changed else tree.get(path)

    for fp in patch.files:
        hunks, writes = _apply_file(fp, read, max_fuzz)
        results.extend(hunks)
        changed.update(writes)
        if fp.new_path is not None and fp.new_mode is not None:
            modes[fp.new_path] = fp.new_mode
    return _summarise(results, changed, modes)


def _summarise(results: list[HunkResult], changed: dict[str, bytes | None], modes: dict[str, int]) -> PatchOutcome:
    bad = [h for h in results if not h.applied and h.status != HunkStatus.ALREADY]
    if bad:
        msg = "; ".join(f"hunk {h.number} ({h.file}): {h.status}" + (f" - {h.message}" if h.message else "")
                        for h in bad)
        return PatchOutcome(OutcomeStatus.FAILED, tuple(results), {}, msg)
    content = [h for h in results if not _is_mode(h)]
    if content and all(h.status == HunkStatus.ALREADY for h in content):
        note = "; its mode changes cannot be checked in memory" if len(content) < len(results) else ""
        return PatchOutcome(OutcomeStatus.ALREADY, tuple(results), {}, "every hunk is already in the tree" + note)
    if any(h.status == HunkStatus.ALREADY for h in results):
        already = [str(h.number) for h in results if h.status == HunkStatus.ALREADY]
        return PatchOutcome(OutcomeStatus.FAILED, tuple(results), {},
                            f"partly applied already (hunks {', '.join(already)}): the tree is neither "
                            "pristine nor patched")
    return PatchOutcome(OutcomeStatus.APPLIES, tuple(results), changed, modes=modes)


def _is_mode(h: HunkResult) -> bool:
    return h.number == 0 and h.message.startswith("mode ")


def _file_result(path: str, status: HunkStatus, message: str, hunks: tuple[Hunk, ...] = ()) -> list[HunkResult]:
    """One result per hunk (or one hunk-0 result) carrying a file-level verdict."""
    applied = status not in (HunkStatus.FAILED, HunkStatus.ALREADY)
    line = 1 if applied or status == HunkStatus.ALREADY else None
    return [HunkResult(path, h.number, status, applied, line=line, message=message) for h in hunks] \
        or [HunkResult(path, 0, status, applied, line=line, message=message)]


def _apply_file(fp: FilePatch, read: Callable[[str], bytes | None],
                max_fuzz: int) -> tuple[list[HunkResult], dict[str, bytes | None]]:
    if fp.old_path is None:
        assert fp.new_path is not None
        return _create(fp, read(fp.new_path))
    source = read(fp.old_path)
    if fp.is_rename or fp.is_copy:
        assert fp.new_path is not None
        target = read(fp.new_path)
        if target is not None:
            return _onto_existing(fp, target, source, max_fuzz), {}
    if source is None:
        if fp.new_path is None:  # deleted already (series.py refuses a path another layout would find)
            return _file_result(fp.old_path, HunkStatus.ALREADY, "the file is gone already", fp.hunks), {}
        return _file_result(fp.old_path, HunkStatus.FAILED, "the patch changes this file but it is not in the tree",
                            fp.hunks), {}
    results, after = _edit(source, fp, max_fuzz)
    results += _file_level(fp)
    if after is None or any(not r.applied for r in results):
        return results, {}
    if fp.new_path is None:
        if after:
            return results + [HunkResult(fp.old_path, fp.hunks[-1].number if fp.hunks else 0, HunkStatus.FAILED, False,
                                         message="the patch deletes this file but lines remain")], {}
        return results, {fp.old_path: None}
    writes: dict[str, bytes | None] = {fp.new_path: after}
    if fp.is_rename:
        writes[fp.old_path] = None
    return results, writes


def _file_level(fp: FilePatch) -> list[HunkResult]:
    """Hunk-0 results for what a file patch does besides its hunks, so that it is visible."""
    out = []
    path = fp.path
    change = fp.mode_change
    if change:
        out.append(HunkResult(path, 0, HunkStatus.EXACT, True, line=None,
                              message=f"mode {change[0]:06o} -> {change[1]:06o}"))
    if not fp.hunks:
        if fp.is_rename:
            out.append(HunkResult(path, 0, HunkStatus.EXACT, True, line=None, message=f"renamed from {fp.old_path}"))
        elif fp.is_copy:
            out.append(HunkResult(path, 0, HunkStatus.EXACT, True, line=None, message=f"copied from {fp.old_path}"))
        elif fp.new_path is None:
            out.append(HunkResult(path, 0, HunkStatus.EXACT, True, line=None, message="deletes the (empty) file"))
    return out


def _create(fp: FilePatch, existing: bytes | None) -> tuple[list[HunkResult], dict[str, bytes | None]]:
    path = fp.path
    target = b"".join(key for h in fp.hunks for key in h.new_keys)
    mode = f" (mode {fp.new_mode:06o})" if fp.new_mode else ""
    if existing is None:
        results = [HunkResult(path, h.number, HunkStatus.EXACT, True, line=1) for h in fp.hunks]
        return results or [HunkResult(path, 0, HunkStatus.EXACT, True, line=1,
                                      message=f"creates an empty file{mode}")], \
            {path: target}
    if existing == target:
        return _file_result(path, HunkStatus.ALREADY, "", fp.hunks), {}
    return _file_result(path, HunkStatus.FAILED, "the patch creates this file but it already exists", fp.hunks), {}


def _onto_existing(fp: FilePatch, target: bytes, source: bytes | None, max_fuzz: int) -> list[HunkResult]:
    """A rename or copy whose destination exists: already done, or refused."""
    assert fp.new_path is not None
    verb = "renames" if fp.is_rename else "copies"
    if fp.is_rename and source is not None:
        return _file_result(fp.new_path, HunkStatus.FAILED, f"the patch {verb} {fp.old_path} onto a file that exists",
                            fp.hunks)
    results, _ = _edit(target, fp, max_fuzz)
    if fp.hunks and all(r.status == HunkStatus.ALREADY for r in results):
        return results
    if not fp.hunks and (source is None or source == target):
        return _file_result(fp.new_path, HunkStatus.ALREADY, f"{verb} {fp.old_path}: done already")
    return _file_result(fp.new_path, HunkStatus.FAILED,
                        f"the patch {verb} {fp.old_path} to {fp.new_path}, which exists "
                        "and differs", fp.hunks)


#: Recent edits, by (content, file patch, fuzz): a series checked on several releases meets the same
#: file, as the patches before left it, on every release where upstream did not change it (measured:
#: 41 of 108 consecutive-release pairs of the files bench/forkseries.py's 37-patch series touches on
#: 0.29-0.31, 2,394 of 5,121 for its 500 patches on 0.24-0.33), and the edit is a pure function of these.
_EDITS: dict[tuple[bytes, int, int], tuple[FilePatch, tuple[HunkResult, ...], bytes | None]] = {}
EDITS_KEPT = 4096


def _edit(content: bytes, fp: FilePatch, max_fuzz: int) -> tuple[list[HunkResult], bytes | None]:
    """Every hunk of ``fp`` placed on ``content``: the results, and the new content (None when a hunk
    was not applied)."""
    key = (content, id(fp), max_fuzz)
    kept = _EDITS.get(key)
    if kept is not None and kept[0] is fp:  # the same object, not one that reuses a freed one's id
        return list(kept[1]), kept[2]
    results, after = _edit_afresh(content, fp, max_fuzz)
    if len(_EDITS) >= EDITS_KEPT:
        del _EDITS[next(iter(_EDITS))]  # the oldest
    _EDITS[key] = (fp, tuple(results), after)
    return results, after


def _edit_afresh(content: bytes, fp: FilePatch, max_fuzz: int) -> tuple[list[HunkResult], bytes | None]:
    buf = _Buffer(content)
    results = []
    cursor = _Cursor()
    for hunk in fp.hunks:
        res, new_floor = _Placement(buf, hunk, fp, cursor, max_fuzz).run()
        results.append(res)
        cursor = cursor.after(hunk, res, new_floor)
    return results, buf.render() if all(r.applied for r in results) else None


class _Cursor:
    """Where the hunks placed so far leave the next one of the same file (a value: never changed).

    A plain class, made once per hunk: cheaper to make than a frozen dataclass."""

    __slots__ = ("shift", "last_offset", "floor")

    def __init__(self, shift: int = 0, last_offset: int = 0, floor: int = 0) -> None:
        self.shift = shift  # lines added minus removed, in the buffer, by the hunks applied so far
        self.last_offset = last_offset  # as GNU patch counts it: a hunk found already applied moves the ones after it
        self.floor = floor  # hunks apply in order: never before the end of the previous one

    def after(self, hunk: Hunk, res: HunkResult, new_floor: int) -> _Cursor:
        growth = len(hunk.new_keys) - len(hunk.old_keys)
        shift = self.shift + growth if res.applied else self.shift
        if not (res.applied or res.status == HunkStatus.ALREADY):
            return _Cursor(shift, self.last_offset, self.floor)
        return _Cursor(shift, res.offset + (growth if res.status == HunkStatus.ALREADY else 0), new_floor)


_NOWHERE: list[int] = []  # the places of a line the buffer does not hold (shared: never changed)


class _Buffer:
    """A file as a list of lines, each ending in ``\\n`` except perhaps the last."""

    def __init__(self, content: bytes) -> None:
        self.lines = split_lines(content)
        self._index: dict[bytes, list[int]] | None = None

    def replace(self, at: int, count: int, new: list[bytes]) -> None:
        """Put ``new`` in place of the ``count`` lines from ``at``."""
        self.lines[at:at + count] = new
        self._index = None

    def positions(self, line: bytes) -> list[int]:
        """Every index of ``line``, in order (do not change the list).

        Only a hunk that fails asks, for each of its lines: the places of every line are indexed once per
        state of the buffer, as several hunks failing in one file ask again. Against scanning the file for
        each line, this takes about a quarter off evaluating the fork-shaped series on releases where many
        hunks fail (docs/records/performance.md).
        """
        index = self._index
        if index is None:
            index = self._index = {}
            for i, x in enumerate(self.lines):
                at = index.get(x)
                if at is None:
                    index[x] = [i]
                else:
                    at.append(i)
        return index.get(line, _NOWHERE)

    def find(self, pattern: list[bytes], floor: int, start: bool, end: bool) -> list[int]:
        """Where ``pattern`` may land under the anchoring rules, at or after ``floor``."""
        lines, k = self.lines, len(pattern)
        if start and end:
            return [0] if floor == 0 and lines == pattern else []
        if start:
            return [0] if floor == 0 and lines[:k] == pattern else []
        if end:
            p = len(lines) - k
            return [p] if p >= floor and lines[p:] == pattern else []
        return _occurrences(lines, pattern, floor) if k else []

    def render(self) -> bytes:
        return b"".join(self.lines)


class _Placement:
    """Where one hunk lands in the buffer, and the verdict."""

    def __init__(self, buf: _Buffer, hunk: Hunk, fp: FilePatch, cursor: _Cursor, max_fuzz: int) -> None:
        self.buf, self.hunk, self.path = buf, hunk, fp.path
        self.shift, self.floor, self.max_fuzz = cursor.shift, cursor.floor, max_fuzz
        whole = len(fp.hunks) == 1
        self.old = hunk.old_keys  # shared with every placement of this hunk: never changed here
        self.new = hunk.new_keys
        lead, trail = hunk.leading, hunk.trailing
        self.zero = lead == 0 and trail == 0
        # A lone context-free hunk at the top may be a -U0 edit or a whole file replaced (a -U3 diff
        # of a file that had nothing in common): git apply takes the second reading, and so do we.
        self.whole = self.zero and whole and hunk.source_start <= 1
        # A line without a final newline can only be the file's last line.
        self.unterminated = hunk.unterminated
        self.end = (not self.zero and trail < lead) or self.unterminated or self.whole
        self.start = hunk.source_start == 0 if self.zero and not self.whole else hunk.source_start <= 1
        self.rstart = hunk.target_start == 0 if self.zero else hunk.target_start <= 1
        self.header_pos = hunk.source_start - 1 if hunk.source_length else hunk.source_start
        self.expected = self.header_pos + cursor.shift + cursor.last_offset  # where GNU patch looks first

    def result(self, status: HunkStatus, at: int, applied: bool = True, **kw) -> HunkResult:
        return HunkResult(self.path, self.hunk.number, status, applied, line=at - self.shift + 1,
                          offset=at - self.shift - self.header_pos, patch_line=self.hunk.line, **kw)

    def failure(self, message: str, at: int | None = None, **kw) -> tuple[HunkResult, int]:
        return self.result(HunkStatus.FAILED, self.expected if at is None else at, applied=False, message=message,
                           **kw), self.floor

    def run(self) -> tuple[HunkResult, int]:
        if not self.old:
            return self.insert_only()
        # Matches before the previous hunk count for ambiguity: git apply would consider them.
        found = self.buf.find(self.old, 0, self.start, self.end)
        pick, why = _choose(found, self.expected, self.shift)
        if pick is not None and pick >= self.floor:
            disagree = self.tools_disagree(pick, None if self.start or self.end else found)
            if disagree:
                return self.failure(disagree)
            return self.failure(self.both_readings(pick, pick)) if self.reversed_at(pick) else self.apply(pick, 0, 0)
        if why:
            return self.failure(why, candidates=tuple(p - self.shift + 1 for p in found))
        if pick is not None:
            return self.failure(f"the context matches only at line {pick - self.shift + 1}, before the end of "
                                "the previous hunk: the hunks are out of order or overlap")
        already = self.already()
        if already:
            return already
        fuzzy = self.fuzzy()
        if fuzzy is not None and fuzzy[0].applied:  # the manifest allows that much fuzz for this patch
            return fuzzy
        return self.anchored_elsewhere() or fuzzy or self.failed()

    def tool_places(self, matches: list[int]) -> tuple[int | None, int | None]:
        """Where GNU patch and git apply would each place the old lines among ``matches``, or None.

        Each tool takes the match nearest to where it looks first, under its own anchoring: GNU
        from the stated line moved by the previous hunks' offset, never before the previous hunk, at
        the start only when the leading context is the shorter at line 1, at the end when the trailing
        one is; git from the stated line of the new side, anywhere, at the start from line 1, at the
        end when there is no trailing context.
        """
        k, n = len(self.old), len(self.buf.lines)
        lead, trail, first = self.hunk.leading, self.hunk.trailing, self.hunk.source_start
        gnu = _nearest_of([p for p in matches if p >= self.floor and
                           _fits(p, k, n, lead < trail and first <= 1, trail < lead)], self.expected)
        git = _nearest_of([p for p in matches if _fits(p, k, n, first == 0 or (first == 1 and not self.zero),
                                                       not self.zero and trail == 0)],
                          max(self.hunk.target_start - 1, 0))
        return gnu, git

    def anchored_elsewhere(self) -> tuple[HunkResult, int] | None:
        """An anchored hunk whose old lines stand only where one tool's anchoring allows and not ours.

        Our anchoring is both tools' together (see the module docstring), so when it finds no place the
        tools cannot agree on one: GNU patch does not anchor a hunk at line 1 whose leading and trailing
        context are as long (it takes the nearest match, as an offset), git apply does; git does not anchor
        a hunk with some trailing context at the end, GNU does when that context is the shorter. A whole-file
        hunk (anchored at both ends) on a file holding its lines twice is placed by each at another copy.
        Refused, naming where each tool would put it -- not as fuzz: neither tool needs fuzz for it.
        """
        if not (self.start or self.end) or self.zero or self.unterminated:
            return None
        matches = self.buf.find(self.old, 0, False, False)
        gnu, git = self.tool_places(matches)
        if gnu is None and git is None:
            return None
        whole = "; its old side was the whole file, which this file is not" if self.start and self.end else ""
        if gnu is not None and git is not None and gnu != git:
            places = "; ".join(f"{tool} at {self.named(p)}, anchored at {self.anchoring(tool)}"
                               for tool, p in (("GNU patch", gnu), ("git apply", git)))
            return self.failure(
                f"ambiguous: the context matches at {len(matches)} places and the tools disagree on the place "
                f"({places}){whole}: refused; regenerate the patch on this file",
                candidates=tuple(p - self.shift + 1 for p in sorted({gnu, git}) if not self.written(p)))
        at = gnu if gnu is not None else git
        assert at is not None
        who, other = ("GNU patch", "git apply") if gnu is not None else ("git apply", "GNU patch")
        how = self.anchoring(who)
        return self.failure(
            f"the context matches at {self.named(at)}, where {who} places it ("
            + (f"anchored at {how}" if how else f"offset {at - self.shift - self.header_pos}")
            + f"); {other} refuses it: for {other} it must land at {self.anchoring(other)}{whole}. The tools "
            "disagree: refused; regenerate the patch on this file",
            candidates=() if self.written(at) else (at - self.shift + 1,))

    def written(self, p: int) -> bool:
        """Whether place ``p`` (in the buffer) lies before the end of the previous hunk: which of the hunks before
        moved the lines there depends on where each stands, so the file's own line cannot be told from the shift
        alone, and it may be a line one of them wrote (git apply, which looks everywhere, can land in the lines
        an insertion at line 0 wrote)."""
        return p < self.floor

    def named(self, p: int) -> str:
        """Place ``p`` in words: the file's own line, or, where :meth:`written`, the line of the file as the hunks
        before this one leave it."""
        if self.written(p):
            return f"line {p + 1} of the file as the hunks before this one leave it"
        return f"line {p - self.shift + 1}"

    def anchoring(self, tool: str) -> str:
        """Where ``tool`` anchors this (non-zero-context) hunk and why, in words, or '' when it does not."""
        lead, trail, first = self.hunk.leading, self.hunk.trailing, self.hunk.source_start
        if tool == "GNU patch":
            if trail < lead:
                return "the end of the file, having less trailing context than leading"
            return "the start of the file, having less leading context than trailing at line 1" \
                if lead < trail and first <= 1 else ""
        if first <= 1 and trail == 0:
            return "the start and the end of the file, its old side beginning at line 1 with no trailing context"
        if first <= 1:
            return "the start of the file, its old side beginning at line 1"
        return "the end of the file, having no trailing context" if trail == 0 else ""

    def tools_disagree(self, pick: int, matches: list[int] | None) -> str:
        """Why GNU patch or git apply would place this hunk elsewhere than ``pick`` (see :meth:`tool_places`),
        or ''. ``matches``: every place of the old lines, when the caller has them."""
        if matches is None:
            matches = self.buf.find(self.old, 0, False, False)
        gnu, git = self.tool_places(matches)
        if gnu == pick and git == pick:
            return ""
        where = [f"{tool} at {self.named(p)}" for tool, p in (("GNU patch", gnu), ("git apply", git))
                 if p is not None and p != pick]
        return (f"ambiguous: the context matches at {len(matches)} places and the tools disagree "
                f"({', '.join(where)}; the anchored place is line {pick - self.shift + 1})")

    def insert_only(self) -> tuple[HunkResult, int]:
        """A hunk without context or removed lines: its header is all there is to place it by."""
        lines = self.buf.lines
        if self.whole and lines:
            return self.failure(f"this context-free hunk at line {self.hunk.source_start} says the file was empty, "
                                "and it must land at the start of an empty file; this file has lines (git apply "
                                "refuses it too; regenerate the patch with context)", 0)
        at = 0 if self.start else self.expected  # by its header alone: one without its newline is not moved
        if at < self.floor or at > len(lines) or (self.start and (self.floor or self.shift)):  # line 0 comes first
            return self.failure(f"the insertion point (line {0 if self.start else at - self.shift}) is outside the "
                                "file or before the previous hunk")
        if lines[at:at + len(self.new)] == self.new:
            return self.failure(f"the lines this context-free hunk inserts already stand at line {at + 1}: "
                                "cannot tell a re-application from a coincidence", at)
        if at and at == len(lines) and not lines[-1].endswith(b"\n"):
            return self.failure("the file does not end with a newline: the insertion would join two lines", at)
        near = lines[max(at - 1, 0):at + 1]
        if near and {_crlf(x) for x in near} != {_crlf(x) for x in self.new}:
            return self.failure("the lines this context-free hunk inserts end in CRLF where the file's end in LF, "
                                "or the reverse: refused rather than written with mixed line endings", at)
        return self.apply(at, 0, 0)

    def apply(self, pick: int, head: int, tail: int, fuzz: int = 0) -> tuple[HunkResult, int]:
        if head or tail:
            count, merged = self.merged(pick, head, tail)
        else:  # the whole hunk matched exactly: the file's context lines are the hunk's own
            count, merged = len(self.old), self.new
        ends_file = pick + count == len(self.buf.lines)
        # Every line of an exact match ends in a newline unless the hunk says one does not.
        if (head or tail or self.unterminated) and (any(not m.endswith(b"\n") for m in merged[:-1]) or
                                                     (merged and not merged[-1].endswith(b"\n") and not ends_file)):
            return self.failure("the result would join two lines (a line without its newline mid-file)", pick)
        self.buf.replace(pick, count, merged)
        start = pick - head
        if fuzz:
            placed = self.result(HunkStatus.FUZZ, start, fuzz=fuzz, message=f"placed with fuzz {fuzz}")
            return placed, pick + len(merged)
        status = HunkStatus.EXACT if start - self.shift == self.header_pos else HunkStatus.OFFSET
        return self.result(status, start), pick + len(merged)

    def merged(self, pick: int, head: int, tail: int) -> tuple[int, list[bytes]]:
        """The old lines the hunk trimmed of ``head`` and ``tail`` context covers at ``pick``, and what
        replaces them: its new lines, with context lines kept as the file has them (under fuzz)."""
        end = len(self.hunk.kinds) - tail
        kinds, keys = self.hunk.kinds[head:end], self.hunk.keys[head:end]
        count = len(kinds) - kinds.count("+")
        region = self.buf.lines[pick:pick + count]
        merged: list[bytes] = []
        i = 0
        for kind, key in zip(kinds, keys, strict=True):
            if kind == "+":
                merged.append(key)
                continue
            if kind == " ":
                merged.append(region[i])
            i += 1
        return count, merged

    def reversed_at(self, at: int) -> bool:
        """Whether the reversed hunk of a hunk that adds lines fits at ``at`` too (its new lines stand there,
        anchored as it must be: then its added lines repeat its trailing context). One that removes lines fits
        there only as a prefix of its old lines (a run of blank lines shortened), which says nothing; a
        context-free hunk is placed by its header alone."""
        lines, k = self.buf.lines, len(self.new)
        return (k > len(self.old) and not self.zero and lines[at:at + k] == self.new
                and (not self.rstart or at == 0)
                and (not self.end or at + k == len(lines)))

    def both_readings(self, forward: int, backward: int, who: str = "") -> str:
        """The refusal of a hunk both readings fit: applies at ``forward``, already applied at ``backward``."""
        where = (f"at line {forward - self.shift + 1}; its added lines repeat its context" if forward == backward
                 else f"its old lines at line {forward - self.shift + 1}, where {who} would apply it, and its new "
                 f"lines at line {backward - self.shift + 1}")
        return (f"ambiguous: both readings fit, applying it and its being applied already ({where}): refused; "
                "regenerate the patch with more context")

    def already(self) -> tuple[HunkResult, int] | None:
        """The reversed hunk placed under the same rules: its new lines, where they would be."""
        if not self.new:
            return None  # a context-free pure deletion leaves no trace to recognise
        found = self.buf.find(self.new, 0, self.rstart, self.end)
        if self.zero:
            found = [p for p in found if p == self.expected]
        pick, _ = _choose(found, self.expected)
        if pick is None or pick < self.floor:
            return None
        if "+" not in self.hunk.kinds:
            left = next((p for run in _removed_runs(self.hunk) for p in self.buf.find(run, 0, False, False)), None)
            if left is not None:
                return self.failure(f"the context around the removed lines is joined at line {pick - self.shift + 1} "
                                    f"but the lines it removes still stand at line {left + 1}: neither applied "
                                    "nor applicable")
        if not self.zero:  # where a tool would still apply it, the file says nothing certain
            gnu, git = self.tool_places(self.buf.find(self.old, 0, False, False))
            if gnu is not None or git is not None:
                at, who = (gnu, "GNU patch") if gnu is not None else (git, "git apply")
                assert at is not None
                return self.failure(self.both_readings(at, pick, who), pick,
                                    candidates=tuple(sorted({at - self.shift + 1, pick - self.shift + 1})))
        return self.result(HunkStatus.ALREADY, pick, applied=False), pick + len(self.new)

    def fuzzy(self) -> tuple[HunkResult, int] | None:
        """GNU patch's fuzz: ignore up to N outer context lines (asymmetric context stays anchored)."""
        lead, trail = self.hunk.leading, self.hunk.trailing
        context = max(lead, trail)
        for fuzz in range(1, MAX_FUZZ_PROBE + 1):
            pre, suf = fuzz + lead - context, fuzz + trail - context
            head, tail = min(max(pre, 0), lead), min(max(suf, 0), trail)
            trimmed = self.old[head:len(self.old) - tail]
            if not head and not tail:
                continue
            if not trimmed:
                break
            start = pre < 0 and self.hunk.source_start <= 1
            found = self.buf.find(trimmed, 0, start, suf < 0 or self.unterminated)
            pick, _ = _choose(found, self.expected + head)
            if pick is None or pick < self.floor or pick < head:  # GNU patch: no context line before line 1
                continue
            if fuzz <= self.max_fuzz:
                return self.apply(pick, head, tail, fuzz)
            at = pick - head
            return self.result(HunkStatus.FUZZ, at, fuzz=fuzz, applied=False,
                               message=f"matches only with fuzz {fuzz} at line {at - self.shift + 1} (GNU patch "
                               "would place it there); refused: allow fuzz for this patch in the manifest only "
                               "if you checked that place"), self.floor
        return None

    def failed(self) -> tuple[HunkResult, int]:
        cand, differ = _nearest(self.buf, self.old, self.expected, self.floor)
        msg = CONTEXT_NOT_FOUND
        loose = _loose_find(self.buf, self.old)
        free = self.buf.find(self.old, self.floor, False, False)
        if free and self.whole:
            msg = (f"the lines this lone context-free hunk at line {self.hunk.source_start} removes stand at line "
                   f"{free[0] + 1}, but it is read as the whole file (as git apply reads it without "
                   "--unidiff-zero), so it must land at the start and the end of the file, and this file has "
                   "other lines: refused rather than guess (GNU patch and git apply --unidiff-zero edit those "
                   "lines in place); regenerate the patch with context")
        elif free and (self.start or self.end):
            where = "start" if self.start else "end"
            msg = (f"the context matches at line {free[0] - self.shift + 1}, but this hunk must land at the {where} "
                   f"of the file (its context is anchored there; GNU patch and git apply refuse it too)")
        elif loose is not None:
            msg = (f"the context matches at line {loose + 1} only when line endings are ignored (CRLF against "
                   "LF, or the newline at the end of the file): refused, as git apply does; regenerate the "
                   "patch from this file's bytes")
        elif cand is not None:
            msg = f"{CONTEXT_NOT_FOUND}; nearest candidate at line {cand - self.shift + 1}"
        cands = (cand - self.shift + 1,) if cand is not None else ()
        return self.failure(msg, candidates=cands, differ=differ)


def _crlf(line: bytes) -> bool:
    return line.endswith(b"\r\n")


def _removed_runs(hunk: Hunk) -> list[list[bytes]]:
    runs: list[list[bytes]] = [[]]
    for kind, key in zip(hunk.kinds, hunk.keys, strict=True):
        if kind == "-":
            runs[-1].append(key)
        elif runs[-1]:
            runs.append([])
    return [r for r in runs if r]


def _bare(line: bytes) -> bytes:
    return line.removesuffix(b"\n").removesuffix(b"\r")


def _loose_find(buf: _Buffer, old: list[bytes]) -> int | None:
    """Where ``old`` first matches if every line's ending (``\\r\\n``, ``\\n``, none) is ignored.

    Only the places where the longest line stands, with any of its three endings, are compared.
    """
    want = [_bare(o) for o in old]
    k = len(want)
    a = max(range(k), key=lambda i: len(want[i]))
    lines = buf.lines
    places = sorted(q for ending in (b"\n", b"\r\n", b"") for q in buf.positions(want[a] + ending))
    return next((q - a for q in places if 0 <= q - a <= len(lines) - k
                 and all(_bare(lines[q - a + i]) == want[i] for i in range(k))), None)


def _occurrences(lines: list[bytes], pattern: list[bytes], floor: int) -> list[int]:
    """Every p >= floor with ``lines[p:p + len(pattern)] == pattern``, in order (pattern not empty).

    Scanned by ``list.index`` (in C) for the pattern's longest line rather than its first: a blank
    line or a lone ``}`` stands at hundreds of places, a long line at one or two. The same places
    as comparing every window, far faster.
    """
    k = len(pattern)
    lengths = list(map(len, pattern))
    a = lengths.index(max(lengths))
    anchor, last, found = pattern[a], len(lines) - k + a, []
    q = floor + a
    while q <= last:
        try:
            q = lines.index(anchor, q, last + 1)
        except ValueError:
            break
        if lines[q - a:q - a + k] == pattern:
            found.append(q - a)
        q += 1
    return found


def _choose(found: list[int], expected: int, shift: int = 0) -> tuple[int | None, str]:
    """The place among ``found`` (buffer positions) a hunk takes, or None and why (naming the file's own lines:
    the positions less ``shift``, the lines the hunks before added)."""
    if not found:
        return None, ""
    if expected in found:
        return expected, ""
    if len(found) == 1:
        return found[0], ""
    lines = ", ".join(str(p - shift + 1) for p in found[:6])
    return None, f"ambiguous: the context matches at {len(found)} places (lines {lines}), none at the stated line"


def _nearest_of(found: list[int], pos: int) -> int | None:
    if len(found) <= 1:  # the usual case, without building a key for each
        return found[0] if found else None
    return min(found, key=lambda p: (abs(p - pos), p < pos))  # both tools look forward first


def _fits(p: int, k: int, n: int, start: bool, end: bool) -> bool:
    return (not start or p == 0) and (not end or p + k == n)


def _window_scores(where: dict[bytes, list[int]], old: list[bytes], lo: int, hi: int) -> dict[int, int]:
    """For every window start p in [lo, hi] where any line agrees: how many of ``old``'s lines equal
    ``keys[p + i]``. Counted from where each of old's lines occurs (``where``: each of old's lines'
    positions in keys), not by comparing every window."""
    scores: dict[int, int] = {}
    for i, line in enumerate(old):
        for q in where.get(line, ()):
            p = q - i
            if lo <= p <= hi:
                scores[p] = scores.get(p, 0) + 1
    return scores


def _nearest(buf: _Buffer, old: list[bytes], expected: int, floor: int) -> tuple[int | None, tuple[str, ...]]:
    """Where the hunk comes closest, and how those lines differ from what it expects."""
    k = len(old)
    keys = buf.lines
    if not keys:
        return None, ()
    best: tuple[int, int] | None = None  # (score, -distance)
    best_at = None
    scores = _window_scores({line: buf.positions(line) for line in set(old)}, old, floor,
                            max(floor, len(keys) - k))
    for p in sorted(scores):
        key = (scores[p], -abs(p - expected))
        if best is None or key > best:
            best, best_at = key, p
    if best_at is None:
        return None, ()

    actual = [_text(b) for b in keys[best_at:best_at + k]]
    differ = tuple(ln.rstrip("\n") for ln in difflib.unified_diff(
        [_text(b) for b in old], actual, "patch expects", "tree has", lineterm="", n=1))
    return best_at, differ


def _text(line: bytes) -> str:
    return line.decode("utf-8", errors="surrogateescape").removesuffix("\n")
