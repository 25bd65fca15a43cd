"""`patchset deps`: which patch of the series needs which, derived from the hunks themselves.

B (later) needs A (earlier) on a release when B's hunks only apply on top of A:
a context or removed line of B is a line A added, or B's context spans a place
where A removed lines (without A those lines would sit inside B's context).
That is read off one pass over the series: every line of every touched file
carries the id of the patch that added it (``None``: pristine) and the ids of
the patches that removed lines just before it. Nothing is re-run per pair,
except for pairs that share a file and show no such overlap: there A is
reverse-applied to the tree B sees, and B tried on that (one small apply per
pair, on the few files they share), which catches what line ownership cannot
(A deleted a second copy of B's context, which is ambiguous without A). A hunk
that is as ambiguous with A as without only had its header's line numbers
moved: that is no need for A's lines, and not an edge.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from patchset.core import engine
from patchset.core.manifest import Manifest
from patchset.core.patchfile import FilePatch, Hunk, PatchFile
from patchset.core.series import PatchStatus, ReleaseResult, evaluate_release, open_release
from patchset.errors import PatchsetError


class DepsError(PatchsetError):
    """The dependencies of this series cannot be inferred."""


@dataclass(frozen=True)
class Edge:
    """Patch B cannot apply without patch A, and why."""

    patch: str  # B, the later patch
    needs: str  # A, the earlier patch B cannot do without
    why: str


@dataclass(frozen=True)
class Stale:
    """An after: the manifest declares that this release shows is no longer needed, and why."""

    patch: str
    after: str
    why: str


@dataclass
class DepsReport:
    """The dependencies between the series' patches on one release, against those the manifest declares."""

    vllm: str
    order: list[str]  # the series order
    statuses: dict[str, PatchStatus]  # patch id -> its status on this release
    edges: list[Edge]
    declared: list[tuple[str, str]]  # (patch, after) as the manifest says
    undeclared: list[Edge] = field(default_factory=list)
    stale: list[Stale] = field(default_factory=list)
    free: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """The order holds by declaration, not by the luck of listing."""
        return not self.undeclared


def deps(manifest: Manifest, version: str | None = None, source: str = "pypi") -> DepsReport:
    """The dependency graph of the series on ``version`` (default: the first target)."""
    version = manifest.target(version).version if version else manifest.targets[0].version
    tree = open_release(manifest, source, version)
    result = evaluate_release(manifest, version, tree)
    return compare(manifest, result, infer_edges(manifest, result))


def compare(manifest: Manifest, result: ReleaseResult, edges: list[Edge]) -> DepsReport:
    """Set the inferred edges against the manifest's ``after`` lists."""
    order = [p.id for p in manifest.patches]
    statuses = {p.id: p.status for p in result.patches}
    declared = [(p.id, a) for p in manifest.patches for a in p.after]
    said = closure({p.id: list(p.after) for p in manifest.patches})
    found = closure(_graph(edges))
    undeclared = [e for e in edges if e.needs not in said.get(e.patch, set())]
    stale = []
    for b, a in declared:
        both = statuses.get(a) == PatchStatus.APPLIES and statuses.get(b) == PatchStatus.APPLIES
        if both and a not in found.get(b, set()):
            stale.append(Stale(b, a, f"{b} applies without {a} on {result.vllm}: no hunk of {b} touches "
                                     f"a line {a} adds or removes"))
    linked = {e.patch for e in edges} | {e.needs for e in edges}
    free = [i for i in order if statuses.get(i) == PatchStatus.APPLIES and i not in linked]
    return DepsReport(result.vllm, order, statuses, edges, declared, undeclared, stale, free)


RANK = {PatchStatus.FAILED: 0, PatchStatus.BLOCKED: 1, PatchStatus.APPLIES: 2, PatchStatus.NOT_IN_TREE: 3,
        PatchStatus.UPSTREAM: 4, PatchStatus.NOT_TARGETED: 5, PatchStatus.EXCLUDED: 6}  # worst first


def merge(manifest: Manifest, results: list[ReleaseResult]) -> DepsReport:
    """One graph for several releases: every edge found on any, each patch at its worst status."""
    reports = [compare(manifest, r, infer_edges(manifest, r)) for r in results]
    edges: dict[tuple[str, str], Edge] = {}
    for r in reports:
        for e in r.edges:
            edges.setdefault((e.patch, e.needs), e)
    statuses = {pid: min((r.statuses[pid] for r in reports), key=lambda s: RANK.get(s, 9))
                for pid in reports[0].order}
    # Stale: needed on no release where both patches apply (a release where one does not says nothing).
    stale: dict[tuple[str, str], Stale] = {}
    for r in reports:
        for s in r.stale:
            stale.setdefault((s.patch, s.after), s)
    needed = set().union(*({(e.patch, e.needs) for e in r.edges} | _needed_through(r) for r in reports))
    merged = DepsReport(", ".join(r.vllm for r in reports), reports[0].order, statuses, list(edges.values()),
                        reports[0].declared, stale=[s for k, s in stale.items() if k not in needed])
    said = closure({p.id: list(p.after) for p in manifest.patches})
    merged.undeclared = [e for e in merged.edges if e.needs not in said.get(e.patch, set())]
    linked = {e.patch for e in merged.edges} | {e.needs for e in merged.edges}
    merged.free = [i for i in merged.order if statuses[i] == PatchStatus.APPLIES and i not in linked]
    return merged


def _needed_through(r: DepsReport) -> set[tuple[str, str]]:
    """The declared edges this release's inferred graph needs, directly or not."""
    found = closure(_graph(r.edges))
    return {(b, a) for b, a in r.declared if a in found.get(b, set())}


def closure(graph: Mapping[str, Iterable[str]]) -> dict[str, set[str]]:
    """Everything each node reaches, directly or not."""
    out: dict[str, set[str]] = {}

    def reach(n: str, seen: set[str]) -> set[str]:
        if n in out:
            return out[n]
        acc: set[str] = set()
        for m in graph.get(n, ()):
            if m not in seen:
                acc |= {m} | reach(m, seen | {m})
        out[n] = acc
        return acc

    for n in list(graph):
        reach(n, {n})
    return out


def _graph(edges: Iterable[Edge]) -> dict[str, list[str]]:
    g: dict[str, list[str]] = {}
    for e in edges:
        g.setdefault(e.patch, []).append(e.needs)
    return g


# -- inference -------------------------------------------------------------------------------------------


@dataclass
class _Owned:
    """A file's lines as the series left them: who added each line, who cut lines just before it."""

    owner: list[str | None]
    cut: list[frozenset[str]]
    tail: frozenset[str] = frozenset()  # removals at the end of the file

    @classmethod
    def pristine(cls, content: bytes | None) -> _Owned:
        n = _count_lines(content)
        return cls([None] * n, [frozenset()] * n)


def _count_lines(content: bytes | None) -> int:
    """Lines as GNU patch counts them: split on newlines only."""
    if not content:
        return 0
    return content.count(b"\n") + (not content.endswith(b"\n"))


def infer_edges(manifest: Manifest, result: ReleaseResult) -> list[Edge]:
    """Every (B needs A) pair among the patches that apply on this release, in series order."""
    # Whatever changed the tree in the series is replayed, so every later patch sees what it saw there.
    applied = [(p, r) for p, r in zip(manifest.patches, result.patches, strict=True)
               if r.status == PatchStatus.APPLIES or r.files]
    tree: dict[str, bytes | None] = dict(result.pristine)
    owned: dict[str, _Owned] = {}
    touched: dict[str, set[str]] = {}  # patch id -> the files it changed
    done: dict[str, PatchFile] = {}
    edges: list[Edge] = []
    for p, r in applied:
        pf = _covered(p.load(result.vllm, manifest.base), r.skipped)
        if not pf.files:
            continue
        outcome = engine.apply_patch(tree, pf, max_fuzz=p.fuzz)
        if not outcome.ok:  # the series evaluation said it applies: a mismatch is not ours to hide
            raise DepsError(f"patch {p.id} applied in the series but not when replayed ({outcome.message}): "
                            "patchset cannot infer this series' dependencies", hint="please report it")
        found = _owned_evidence(p.id, pf, outcome, tree, owned)
        fuzzed = any(h.fuzz for h in outcome.hunks)
        for a, pf_a in done.items():
            shared = touched[a] & set(pf.touched)
            if a not in found and shared and (fuzzed or _may_need(pf_a, pf, shared)):
                why = _without(a, pf_a, p.id, pf, p.fuzz, tree, shared)
                if why:
                    found[a] = why
        edges += [Edge(p.id, a, found[a]) for a in done if a in found]
        tree.update(outcome.files)
        touched[p.id] = set(outcome.files)
        done[p.id] = pf
    return edges


def _covered(pf: PatchFile, skipped: tuple[str, ...]) -> PatchFile:
    return replace(pf, files=tuple(f for f in pf.files if f.path not in skipped))


def _owned_evidence(me: str, pf: PatchFile, outcome: engine.PatchOutcome, tree: Mapping[str, bytes | None],
                    owned: dict[str, _Owned]) -> dict[str, str]:
    """Read who owns the lines each hunk stands on, then record this patch's own lines."""
    found: dict[str, str] = {}
    placed = {(h.file, h.number): h for h in outcome.hunks}
    for fp in pf.files:
        src = fp.old_path
        if src is None:
            n = _count_lines(outcome.files.get(fp.path))
            owned[fp.path] = _Owned([me] * n, [frozenset()] * n)
            continue
        state = owned.get(src) or _Owned.pristine(tree.get(src))
        starts = _starts(fp, placed, tree.get(src))
        for hunk, start in zip(fp.hunks, starts, strict=True):
            for a, why in _stands_on(me, hunk, start, state, fp.path).items():
                found.setdefault(a, why)
        new_state = _advance(me, fp, starts, state)
        if fp.new_path is None:
            owned.pop(src, None)
        else:
            if fp.is_rename:
                owned.pop(src, None)
            owned[fp.new_path] = new_state
    return found


def _starts(fp: FilePatch, placed: Mapping[tuple[str, int], engine.HunkResult], content: bytes | None) -> list[int]:
    """Where each hunk's old lines begin (0-based) in the file as it stood before this patch."""
    keys = [ln.rstrip(b"\r").decode("utf-8", "surrogateescape") for ln in (content or b"").split(b"\n")]
    out = []
    floor = 0
    for h in fp.hunks:
        res = placed.get((fp.path, h.number))
        at = (res.line or 1) - 1 if res else floor
        old = [ln.text for ln in h.old]
        if old and keys[at:at + len(old)] != old:  # placed with fuzz: trust the engine's line
            hits = [i for i in range(floor, len(keys) - len(old) + 1) if keys[i:i + len(old)] == old]
            at = min(hits, key=lambda i: abs(i - at)) if hits else at
        out.append(max(at, floor))
        floor = out[-1] + len(old)
    return out


def _stands_on(me: str, hunk: Hunk, start: int, state: _Owned, path: str) -> dict[str, str]:
    found: dict[str, str] = {}
    i = start
    for k, ln in enumerate(hunk.old):
        if i >= len(state.owner):
            break
        owner = state.owner[i]
        what = "has context line" if ln.kind == " " else "removes line"
        if owner is not None and owner != me:
            found.setdefault(owner, f"hunk {hunk.number} of {me} ({path}) {what} {i + 1} that {owner} adds")
        if k > 0:
            for a in sorted(state.cut[i] - {me}):
                found.setdefault(a, f"hunk {hunk.number} of {me} ({path}) spans line {i}-{i + 1}, "
                                    f"where {a} removed lines")
        i += 1
    return found


def _advance(me: str, fp: FilePatch, starts: list[int], state: _Owned) -> _Owned:
    """The ownership of the file's lines after this patch."""
    owner: list[str | None] = []
    cut: list[frozenset[str]] = []
    pending: frozenset[str] = frozenset()  # removals waiting for the next surviving line
    i = 0
    n = len(state.owner)
    for hunk, start in zip(fp.hunks, starts, strict=True):
        while i < min(start, n):
            owner.append(state.owner[i])
            cut.append(state.cut[i] | pending)
            pending = frozenset()
            i += 1
        for ln in hunk.lines:
            if ln.kind == "+":
                owner.append(me)
                cut.append(pending)
                pending = frozenset()
            elif i < n:
                if ln.kind == "-":
                    pending = pending | state.cut[i] | {me}
                else:
                    owner.append(state.owner[i])
                    cut.append(state.cut[i] | pending)
                    pending = frozenset()
                i += 1
    while i < n:
        owner.append(state.owner[i])
        cut.append(state.cut[i] | pending)
        pending = frozenset()
        i += 1
    return _Owned(owner, cut, state.tail | pending)


def _may_need(pf_a: PatchFile, pf: PatchFile, shared: set[str]) -> bool:
    """Could taking ``pf_a`` out give one of ``pf``'s hunks a second place to match?

    Ownership has already cleared the place each hunk did match. A new place
    without A must contain a line A removed, or straddle a point where A only
    inserted: so some line of the hunk is one A removed, or two consecutive
    lines of it are the two A inserted between. Neither: reverse-applying A
    cannot change anything, and the pair costs nothing.
    """
    removed: set[str] = set()
    seams: set[tuple[str, str]] = set()
    for f in pf_a.files:
        if f.path not in shared:
            continue
        for h in f.hunks:
            lines = h.lines
            removed |= {ln.text for ln in lines if ln.kind == "-"}
            for i, ln in enumerate(lines):
                if ln.kind == "+" and (i == 0 or lines[i - 1].kind == " "):
                    j = i
                    while j < len(lines) and lines[j].kind == "+":
                        j += 1
                    if i == 0 or j == len(lines):
                        return True  # an insertion at the hunk's edge: no seam to compare, so try it
                    if lines[j].kind == " ":
                        seams.add((lines[i - 1].text, lines[j].text))
    for f in pf.files:
        if not {f.old_path, f.new_path} & shared:
            continue
        for h in f.hunks:
            old = [ln.text for ln in h.old]
            if removed.intersection(old) or seams.intersection(zip(old, old[1:], strict=False)):
                return True
    return False


def _without(a: str, pf_a: PatchFile, me: str, pf: PatchFile, fuzz: int, tree: Mapping[str, bytes | None],
             shared: set[str]) -> str:
    """Why ``me`` does not apply once ``a`` is taken back out of the files they share, or ''."""
    back = reverse(replace(pf_a, files=tuple(f for f in pf_a.files if f.path in shared)))
    sub = {path: tree.get(path) for path in set(pf.touched) | set(back.touched)}
    undone = engine.apply_patch(sub, back)
    if not undone.ok:  # a later patch rewrote a's lines: ownership already said what can be said
        return ""
    sub.update(undone.files)
    mine = replace(pf, files=tuple(f for f in pf.files if {f.old_path, f.new_path} & shared))
    outcome = engine.apply_patch(sub, mine, max_fuzz=fuzz)
    if outcome.ok:
        return ""
    bad = next(h for h in outcome.hunks if not h.applied)
    if len(bad.candidates) > 1 and len(bad.candidates) <= _occurrences(tree.get(bad.file), mine, bad.number):
        # As ambiguous with a as without: only the header's line numbers moved. That is a stale
        # header, not a need for a's lines (any earlier patch that changes the line count does it).
        return ""
    text = f"without {a}, hunk {bad.number} of {me} ({bad.file}) is {bad.status}"
    return text + (f": {bad.message}" if bad.message else "")


def _occurrences(content: bytes | None, pf: PatchFile, number: int) -> int:
    """How often hunk ``number``'s old lines occur in ``content``."""
    hunk = next(h for h in pf.hunks if h.number == number)
    old = [ln.text for ln in hunk.old]
    keys = [ln.rstrip(b"\r").decode("utf-8", "surrogateescape") for ln in (content or b"").split(b"\n")]
    return sum(1 for i in range(len(keys) - len(old) + 1) if old and keys[i:i + len(old)] == old)


def reverse(pf: PatchFile) -> PatchFile:
    """The patch that takes ``pf`` back out."""
    files = []
    for f in pf.files:
        hunks = tuple(h.flipped() for h in f.hunks)
        files.append(replace(f, old_path=f.new_path, new_path=f.old_path, hunks=hunks))
    return replace(pf, files=tuple(files))

