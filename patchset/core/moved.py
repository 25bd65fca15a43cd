"""Where code went: follow a file or a hunk's lines that are gone from their place in a new release.

Two questions, as ``git diff -M`` and ``git log --follow`` answer them, but
with no history (only the two releases' files):

* a file is gone: which files of the new release hold its lines now
  (``renamed_to``: similarity by shared lines, git's 50 % threshold for a
  rename; a file split in two shows as several partial homes);
* a hunk's old lines (context and removed lines) are gone from their file:
  where in the new release's package do they stand (``find_block``: exact,
  one place; else the nearest candidate with the lines that differ, the same
  candidate logic ``check`` uses inside one file).

The package's Python files are indexed once per run (:class:`PyIndex`) and
only searched when a file or a hunk is missing. Pure: contents in, places out.
"""

from __future__ import annotations

import bisect
import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from patchset.core.patchfile import split_lines
from patchset.sources import Source, lineindex
from patchset.sources.lineindex import LineIndex, line_hash, meaningful

RENAME_SIMILARITY = 0.5  # git diff -M's default
SAMPLE = 80  # lines of a gone file looked up to tell where it went
RARE = 4  # a line standing in more files than this is boilerplate: no sign of where code went
TRAIL = 2  # lines that came to another file it takes to name it for a hunk whose own file is still there
EDITED = 0.8  # a line this similar to one its file still holds (difflib's ratio) was edited there, not moved
PART_SIMILARITY = 0.1  # a file that holds this share of a gone file's lines is one of its parts (a split)
STAYED = 0.5  # a file holding this share of a hunk's context lines together still has the hunk's place
SLACK = 10  # lines upstream may have added between a hunk's context lines that stayed


@dataclass(frozen=True)
class Place:
    """Where a block of lines stands in the new release, and how sure that is."""

    file: str
    line: int  # 1-based
    exact: bool
    differ: tuple[str, ...] = ()  # the lines that differ, unified-diff style, when not exact
    score: float = 1.0  # share of the block's lines found there

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file  # 0: the file, no place in it


class PyIndex:
    """A release's Python files, searched by whole lines.

    From a release's line index (sources/lineindex.py, kept in the cache): every meaningful line's places
    are looked up, and only the files a search names are read (``read``). Without one (a mapping of files
    given whole), the files are joined into one buffer and a line is found by ``bytes.find`` (C speed), its
    places remembered: filling a per-line dictionary for a release's 400,000 lines costs seconds. Both
    answer the same places, in the same order (the files' order, then line order).
    """

    MAX_PLACES = 400  # a line standing in more places than this says nothing about where a block went

    def __init__(self, files: Mapping[str, bytes] | None = None, *, index: LineIndex | None = None,
                 read: Callable[[str], bytes | None] | None = None) -> None:
        self.data = dict(files or {})
        self._index, self._read = index, read
        self._known = frozenset(index.paths) if index is not None else frozenset()
        self._over: dict[str, bytes | None] = {}  # files changed since the index was made, in the order changed
        self._blob: bytes | None = None
        self._starts: list[int] = []
        self._paths: list[str] = []
        self._lines: dict[str, list[bytes]] = {}
        self._places: dict[bytes, list[tuple[str, int]]] = {}

    def update(self, path: str, data: bytes | None) -> None:
        """A file changed (an earlier patch ported into it): search its new lines from now on."""
        if self._index is not None:
            self._over.pop(path, None)
            self._over[path] = data
        else:
            self.data.pop(path, None)
            if data is not None:
                self.data[path] = data
        self._blob, self._lines, self._places = None, {}, {}

    def content(self, path: str) -> bytes | None:
        """The file ``path`` as this index searches it (None: not one of its files)."""
        if self._index is None:
            return self.data.get(path)
        if path in self._over:
            return self._over[path]
        if path not in self._known or self._read is None:
            return None
        return self._read(path)

    def lines(self, path: str) -> list[bytes]:
        if path not in self._lines:
            self._lines[path] = split_lines(self.content(path) or b"")
        return self._lines[path]

    def _files(self) -> Mapping[str, bytes]:
        """Every file, read whole (an index asked what it does not hold: never on a search ``follow`` makes)."""
        if self._index is None:
            return self.data
        files = {p: self.content(p) for p in self._index.paths if p not in self._over}
        files.update(self._over)
        return {p: d for p, d in files.items() if d is not None}

    def _buffer(self) -> bytes:
        if self._blob is None:
            parts, starts, paths, at = [b"\n"], [], [], 1
            for path, data in self._files().items():
                if not data.endswith(b"\n"):
                    data += b"\n"
                starts.append(at)
                paths.append(path)
                parts.append(data)
                at += len(data)
            self._blob, self._starts, self._paths = b"".join(parts), starts, paths
        return self._blob

    def places(self, line: bytes) -> list[tuple[str, int]]:
        """(file, 0-based line) of every whole-line occurrence of ``line`` (with its newline)."""
        if line in self._places:
            return self._places[line]
        key = line.removesuffix(b"\n")
        if self._index is not None and b"\n" not in key and meaningful(key):
            out = self._indexed(key)
        else:
            out = self._scan(line)
        self._places[line] = out
        return out

    def _indexed(self, key: bytes) -> list[tuple[str, int]]:
        """:meth:`places` from the line index, the changed files searched as :meth:`update` put them."""
        assert self._index is not None
        paths, over, h = self._index.paths, self._over, line_hash(key)
        out = []
        for fid, n in self._index.places(key):
            path = paths[fid]
            if path in over:
                continue
            if h in self._index.shared and self._line(path, n) != key:
                continue  # another line with the same key
            out.append((path, n))
            if len(out) > self.MAX_PLACES:
                return out
        for path, data in over.items():
            if data is None:
                continue
            for n, ln in enumerate(data.split(b"\n")):
                if ln == key:
                    out.append((path, n))
                    if len(out) > self.MAX_PLACES:
                        return out
        return out

    def _line(self, path: str, n: int) -> bytes:
        parts = (self.content(path) or b"").split(b"\n")
        return parts[n] if n < len(parts) else b""

    def _scan(self, line: bytes) -> list[tuple[str, int]]:
        blob = self._buffer()
        needle = b"\n" + (line if line.endswith(b"\n") else line + b"\n")
        out: list[tuple[str, int]] = []
        pos = blob.find(needle)
        while pos >= 0 and len(out) <= self.MAX_PLACES:
            start = pos + 1
            k = bisect.bisect_right(self._starts, start) - 1
            first = self._starts[k]
            out.append((self._paths[k], blob.count(b"\n", first, start)))
            pos = blob.find(needle, start)
        return out

    def rare(self, line: bytes) -> bool:
        """Whether ``line`` stands in at most RARE files: boilerplate (imports, common signatures) stands in
        many and says nothing about where code went."""
        return len({p for p, _ in self.places(line)}) <= RARE

    def renamed_to(self, gone: bytes, exclude: frozenset[str] = frozenset()) -> list[tuple[str, float]]:
        """Files of this release holding a share of ``gone``'s meaningful lines, best first: (path, share).

        The first has at least RENAME_SIMILARITY for a rename; several with PART_SIMILARITY each, a split.
        """
        # Boilerplate (imports, logger = ..., common signatures) stands in many files and says nothing
        # about where this one went: only lines that at most a few files share are counted.
        # A sample of the longest distinct lines (each costs a scan of the release) says the same.
        sample = sorted({ln for ln in split_lines(gone) if meaningful(ln)}, key=lambda x: (-len(x), x))[:SAMPLE]
        lines = {ln for ln in sample if self.rare(ln)}
        if not lines:
            return []
        hits: dict[str, int] = {}
        for line in lines:
            for path in {p for p, _ in self.places(line)}:
                if path not in exclude:
                    hits[path] = hits.get(path, 0) + 1
        ranked = sorted(((p, n / len(lines)) for p, n in hits.items()), key=lambda x: (-x[1], x[0]))
        return [(p, round(s, 3)) for p, s in ranked if s >= PART_SIMILARITY]

    def find_block(self, block: list[bytes], prefer: tuple[str, ...] = ()) -> list[Place]:
        """Every exact place of ``block`` (a hunk's old lines) in the release; files in ``prefer`` first."""
        anchors = [ln for ln in block if meaningful(ln)]
        if not anchors:
            return []
        anchor = max(anchors, key=len)
        a = block.index(anchor)
        out = []
        for path, q in self.places(anchor):
            lines = self.lines(path)
            p = q - a
            if p >= 0 and lines[p:p + len(block)] == block:
                out.append(Place(path, p + 1, True))
        order = {path: i for i, path in enumerate(prefer)}
        return sorted(out, key=lambda pl: (order.get(pl.file, len(order)), pl.file, pl.line))

    def nearest(self, block: list[bytes], prefer: tuple[str, ...] = (),
                counts: Callable[[str, list[bytes]], bool] | None = None) -> Place | None:
        """The window of the release that shares most of ``block``'s meaningful lines (at least half).

        ``counts(file, shared)``: whether a window of ``file`` sharing those lines may be named at all (a
        window refused, the next best is taken)."""
        wanted = [i for i, ln in enumerate(block) if meaningful(ln)]
        if not wanted:
            return None
        scores: dict[tuple[str, int], int] = {}
        for i in wanted:
            places = self.places(block[i])
            if len(places) > self.MAX_PLACES:
                continue
            for path, q in places:
                key = (path, q - i)
                scores[key] = scores.get(key, 0) + 1
        order = {path: i for i, path in enumerate(prefer)}
        # best first: most lines, then a preferred file, then the last path by name (``max``'s order, kept);
        # only the windows holding half the lines can be named: the others are not sorted (a stable sort
        # keeps the order of those that are)
        ranked = sorted((kv for kv in scores.items() if kv[1] * 2 >= len(wanted)),
                        key=lambda kv: (kv[1], -order.get(kv[0][0], len(order)), kv[0][0]), reverse=True)
        for (path, p), n in ranked:
            if n * 2 < len(wanted):
                return None
            if counts is None:
                break
            lines = self.lines(path)
            shared = [block[i] for i in wanted if 0 <= p + i < len(lines) and lines[p + i] == block[i]]
            if counts(path, shared):
                break
        else:
            return None
        p = max(p, 0)
        actual = [_text(x) for x in self.lines(path)[p:p + len(block)]]
        differ = tuple(ln.rstrip("\n") for ln in difflib.unified_diff(
            [_text(x) for x in block], actual, "patch expects", path, lineterm="", n=1))
        return Place(path, p + 1, not differ, differ, round(n / len(wanted), 3))

    def where_defined(self, name: str) -> list[str]:
        """The modules (paths) that define ``name`` at top level with ``def`` or ``class``.

        A regular expression over each file, not an AST: parsing a whole release takes seconds. With a line
        index, over the files it names (and the changed ones) only."""
        found = re.compile(rb"^(?:async def|def|class) " + re.escape(name.encode()) + rb"\b", re.M)
        if self._index is not None and re.fullmatch(r"\w+", name, re.ASCII):
            named = [self._index.paths[f] for f in self._index.defines(name)]
            files = {p: self.content(p) or b"" for p in named if p not in self._over}
            files.update({p: d for p, d in self._over.items() if d is not None})
        else:
            files = dict(self._files())
        return sorted(path for path, data in files.items() if name.encode() in data and found.search(data))


def release_index(source: Source, package: str) -> PyIndex:
    """``package``'s Python files in ``source`` (a release's tree), searched through the release's line index
    (kept in the cache, made on the first search; sources/lineindex.py): only the files a search names are
    read, through the source."""
    index, _ = lineindex.for_source(source, package)
    read = getattr(source, "read_python", None) or source.read
    return PyIndex(index=index, read=read)


def _text(line: bytes) -> str:
    return line.decode("utf-8", errors="surrogateescape").removesuffix("\n")


@dataclass(frozen=True)
class Moved:
    """Where a hunk's lines went in the new release, and why we think so."""

    place: Place
    evidence: str
    sure: bool  # the old lines stand exactly there and nowhere else: a port may merge there
    candidates: tuple[Place, ...] = ()  # every exact place, when there are several (ambiguous: no merge)

    def __str__(self) -> str:
        return f"moved_to: {self.place} ({self.evidence})"


def follow(index: PyIndex, path: str, block: list[bytes], old_file: bytes | None, file_gone: bool,
           new_file: bytes | None = None, old_tree: Callable[[str], bytes | None] | None = None) -> Moved | None:
    """Where the lines ``block`` (a hunk's old side, from ``path`` in the old release) stand in ``index``.

    ``old_file``: the old release's ``path``, to tell a rename or a split by similarity (``file_gone``).
    None when the lines are nowhere near anything in the new release.

    Another file is named only on lines that came to it: lines it shares with the hunk that stand in at most
    RARE files of the release (an import or a common signature says nothing) and, while ``path`` is still
    there (``new_file``), TRAIL of them that ``path`` no longer holds, not even edited, and that the other
    file did not hold in the old release (``old_tree``, when known). Lines that stayed, or that a sibling
    module had all along (vLLM's near-copies: the GPU and TPU model runners, models built from one template,
    the same ``return inputs`` in a hundred files), say nothing about where the hunk went: it is still its
    file's to merge. A gone or emptied file's sibling is another matter: vLLM 0.11 dropped
    ``worker/worker.py`` and its hunk belongs in ``v1/worker/gpu_worker.py``, which held the same lines in
    both releases.
    """
    # A file upstream emptied (a stub left where the code was) is as good as gone: its code's successor may
    # be a module that held a copy all along (benchmarks/benchmark_serving.py -> vllm/benchmarks/serve.py).
    emptied = new_file is not None and old_file is not None \
        and _size(new_file) < RENAME_SIMILARITY * _size(old_file)
    came = _came_to(index, path, None if file_gone else new_file, None if emptied else old_tree)
    homes, why = _file_went(index, path, old_file, file_gone)
    # A file that still exists is where its hunk most likely still belongs: on a tie it wins over a sibling
    # module (vLLM keeps near-copies such as the GPU and TPU model runners), so no other file is named.
    prefer = tuple(p for p, _ in homes) if file_gone else (path,)
    exact = [pl for pl in index.find_block(block, prefer)
             if (pl.file != path or not file_gone) and came(pl.file, block)]
    # One exact place only. Several (vLLM copies code between models; a renamed file may leave a copy
    # beside it): no guess, even for the file most of the old one went to. The caller refuses and names them.
    if len(exact) == 1:
        return Moved(exact[0], _and(why, f"the hunk's {len(block)} old lines stand exactly at {exact[0]}"), True)
    if exact:
        return Moved(exact[0], _and(why, f"the hunk's old lines stand at {len(exact)} places: "
                                    + ", ".join(map(str, exact[:4])) + (", …" if len(exact) > 4 else "")
                                    + " (ambiguous)"), False, tuple(exact))
    near = index.nearest(block, prefer, came)
    if near is None:
        # No per-hunk evidence. A rename (most of the file went to one place) still says where the hunk
        # belongs, as ``git merge`` follows renames; a share of a split (a tenth to a third of the file's
        # lines) does not: it is a lead for the message (``lead``), never the hunk's new place.
        renamed = bool(homes) and homes[0][1] >= RENAME_SIMILARITY
        return Moved(Place(prefer[0], 0, False), why, False) if renamed else None
    differ = sum(1 for d in near.differ if d[:1] in "+-" and not d.startswith(("+++", "---")))
    return Moved(near, _and(why, f"nearest candidate {near}: {near.score:.0%} of the hunk's lines agree, "
                                 f"{differ} differ"), False)


def _file_went(index: PyIndex, path: str, old_file: bytes | None, file_gone: bool) \
        -> tuple[list[tuple[str, float]], str]:
    """Where a gone ``path``'s lines went (its homes, best first) and how to say it; nothing for a file still
    there."""
    homes = index.renamed_to(old_file) if file_gone and old_file is not None else []
    if homes:
        top, share = homes[0]
        if share >= RENAME_SIMILARITY:
            return homes, f"{path} is gone; {top} holds {share:.0%} of its lines (a rename)"
        if len(homes) > 1:
            return homes, f"{path} is gone; its lines are split across " + ", ".join(
                f"{p} {s:.0%}" for p, s in homes[:3])
        # one file holding a share: no split to speak of (a removed file's lines in common with a sibling)
        return homes, f"{path} is gone and no file holds most of its lines ({top} holds {share:.0%})"
    if file_gone:  # without the old file (check: no older release) nothing is said of where the rest went
        return homes, f"{path} is gone" + (" and no file holds most of its lines" if old_file is not None else "")
    return homes, ""


def _and(why: str, said: str) -> str:
    return f"{why}; {said}" if why else said


def _size(data: bytes) -> int:
    """How many distinct meaningful lines a file has (a reformatted file keeps its size, a stub does not)."""
    return len({ln for ln in split_lines(data) if meaningful(ln)})


def _came_to(index: PyIndex, path: str, stays: bytes | None, old_tree: Callable[[str], bytes | None] | None) \
        -> Callable[[str, list[bytes]], bool]:
    """Whether a file's lines shared with a hunk of ``path`` came to it (``follow``): where ``path`` is gone
    (``stays`` None), one meaningful line of them that stands in at most RARE files of the release; else
    TRAIL such lines that ``path`` no longer holds, not even edited (a near twin, EDITED), and that file
    did not hold in the old release (``old_tree``, when given): one line in common is a coincidence as often
    as a trail, and a line its own file still holds in another form stayed there (a new model built from a
    template keeps the lines upstream then edited in the original)."""
    kept = frozenset(split_lines(stays)) if stays is not None else frozenset()
    had: dict[str, frozenset[bytes]] = {}
    near: dict[int, list[str]] = {}  # ``path``'s meaningful lines, stripped, by length (made when first asked)
    said: dict[bytes, bool] = {}

    def edited(line: bytes) -> bool:
        """``path`` still holds the line, re-indented or edited (a near twin): it stayed, changed in place.

        difflib's ``get_close_matches`` over the lines whose length allows the ratio (its own first bound,
        ``real_quick_ratio``: 2 * min(a, b) / (a + b)): the others cannot reach it, and are not tried."""
        if line not in said:
            if not near:
                for x in {_text(ln).strip() for ln in kept if meaningful(ln)}:
                    near.setdefault(len(x), []).append(x)
            word = _text(line).strip()
            n = len(word)
            sizes = sorted((abs(size - n), size) for size in near if 2.0 * min(n, size) / (n + size) >= EDITED)
            said[line] = _close(word, [x for _, size in sizes for x in near[size]], EDITED)
        return said[line]

    def came(file: str, shared: list[bytes]) -> bool:
        if file == path and stays is not None:
            return True  # its own file: callers name no place there
        if stays is None:  # a gone file's successor may be a sibling that held the lines all along
            return any(meaningful(ln) and index.rare(ln) for ln in shared)
        if file not in had:
            was = old_tree(file) if old_tree is not None else None
            had[file] = frozenset(split_lines(was)) if was is not None else frozenset()
        trail = {ln for ln in shared if meaningful(ln) and ln not in kept and ln not in had[file]
                 and index.rare(ln)}
        return len(trail) >= TRAIL and len([ln for ln in trail if not edited(ln)]) >= TRAIL
    return came


def _close(word: str, possibilities: list[str], cutoff: float) -> bool:
    """Whether ``difflib.get_close_matches(word, possibilities, n=1, cutoff=cutoff)`` names one: its three
    tests, in its order, stopping at the first possibility that passes them."""
    s = difflib.SequenceMatcher()
    s.set_seq2(word)
    for x in possibilities:
        s.set_seq1(x)
        if s.real_quick_ratio() >= cutoff and s.quick_ratio() >= cutoff and s.ratio() >= cutoff:
            return True
    return False


def lead(index: PyIndex, path: str, old_file: bytes | None) -> str:
    """Where a gone file's lines went, as a weak lead for a hunk whose own lines stand nowhere in the release:
    '' when no file holds a share of them. Said as such in a conflict, never taken as the hunk's place."""
    homes = index.renamed_to(old_file) if old_file is not None else []
    if not homes:
        return ""
    return "nearest: " + ", ".join(f"{p} (weak: it holds {s:.0%} of {path}'s lines, and no place in"
                                   " it half of this hunk's)"
                                   for p, s in homes[:2])


def core(kinds: str, keys: tuple[bytes, ...]) -> tuple[list[bytes], list[bytes]]:
    """A hunk's old and new lines without the blank context lines at its edges.

    Moved code rarely keeps the blank lines around it (the end of a module, two blank lines before a
    def become one inside a class); the lines that say where the hunk belongs are the others.
    """
    lo, hi = 0, len(kinds)
    while lo < hi and kinds[lo] == " " and not keys[lo].strip():
        lo += 1
    while hi > lo and kinds[hi - 1] == " " and not keys[hi - 1].strip():
        hi -= 1
    old = [k for kind, k in zip(kinds[lo:hi], keys[lo:hi], strict=True) if kind != "+"]
    new = [k for kind, k in zip(kinds[lo:hi], keys[lo:hi], strict=True) if kind != "-"]
    return old, new


def stayed(kinds: str, keys: tuple[bytes, ...], content: bytes | None) -> float:
    """How much of a hunk's place its own file (in the new release) still holds: 1.0 when its old lines
    stand there exactly (it applies, maybe at an offset) or its new lines do (it is applied already),
    else the largest share of its context lines that stand together there (0.0: the file is gone).

    Upstream often edits a patched function in place: beside the hunk (a context line differs), or takes
    the fix its own way (a line more in the middle). The hunk's place is then still in its file and a
    3-way merge there says the rest; looking for its old lines elsewhere would find a copy of them in
    another module (vLLM copies code between models) and port the patch into the wrong file.
    """
    if content is None:
        return 0.0
    lines = split_lines(content)
    old, new = core(kinds, keys)
    if _holds(lines, old) or _holds(lines, new):
        return 1.0
    ref = [k for kind, k in zip(kinds, keys, strict=True) if kind == " " and meaningful(k)]
    if not ref:  # no context that says where it was (a -U0 hunk): the lines it changes
        ref = [k for k in old + new if meaningful(k)]
    if not ref:
        return 0.0
    wanted = {ln: i for i, ln in enumerate(ref)}
    hits = [(n, wanted[x]) for n, x in enumerate(lines) if x in wanted]
    span = len(old) + len(new) + SLACK
    best, lo = 0, 0
    for hi in range(len(hits)):  # sliding window of ``span`` lines: distinct context lines in it
        while hits[hi][0] - hits[lo][0] > span:
            lo += 1
        best = max(best, len({i for _, i in hits[lo:hi + 1]}))
    return best / len(set(ref))


def _holds(lines: list[bytes], block: list[bytes]) -> bool:
    k = len(block)
    return bool(k) and any(lines[i:i + k] == block for i in range(len(lines) - k + 1) if lines[i] == block[0])
