"""`patchset check`: every hunk of the series on every pinned release."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from patchset import parallel
from patchset.cache import Cache
from patchset.core import kept, moved
from patchset.core.engine import HunkResult
from patchset.core.manifest import Manifest
from patchset.core.patchfile import Hunk
from patchset.core.pristine import open_release
from patchset.core.series import Loads, ReleaseResult, evaluate_release, load_patches, paths_to_read
from patchset.errors import PatchsetError
from patchset.sources import Source, lineindex
from patchset.sources.local import DirSource
from patchset.verbs.deps import DepsReport, merge

__all__ = ["CheckReport", "check", "evaluate_release", "releases_to_check"]


@dataclass
class CheckReport:
    """The series on every release asked for, in order."""

    manifest: str
    targets: list[ReleaseResult]
    graph: DepsReport | None = None  # which patch needs which, when asked for (the Markdown report shows it)
    graph_error: str | None = None  # why that graph could not be made

    @property
    def ok(self) -> bool:
        return all(t.ok for t in self.targets)


def releases_to_check(manifest: Manifest, asked: Sequence[str]) -> list[str]:
    if not asked:
        return [t.version for t in manifest.targets]
    return [manifest.target(v).version for v in asked]


def check(manifest: Manifest, versions: Sequence[str] = (), source: str = "pypi",
          on_release: Callable[[str], None] | None = None, *, files: bool = True,
          graph: bool = False) -> CheckReport:
    """Every release's result, in order; releases are evaluated side by side where it pays (parallel.py).

    ``files=False`` drops each release's touched files (``ReleaseResult.pristine`` and ``.files``) as
    soon as it is evaluated, for reports that only show verdicts: only the Markdown report's dependency
    graph reads them. A forked child then sends back a small fraction of the pickle (docs/records/performance.md),
    and a serial run reuses one release's memory for the next.
    ``graph``: also say which patch needs which (``CheckReport.graph``), from those files.
    """
    trees = []
    for version in releases_to_check(manifest, versions):
        if on_release:
            on_release(version)
        trees.append((version, open_release(manifest, version, source)))

    entries = [kept.entry(manifest, version, tree) for version, tree in trees]
    known = [kept.load(at) if not files else None for at in entries]  # the touched files are never kept
    todo = [vt for vt, result in zip(trees, known, strict=True) if result is None]
    worked = iter(_evaluate(manifest, todo, files))
    results = [result if result is not None else next(worked) for result in known]
    for at, result, was in zip(entries, results, known, strict=True):
        if was is None:
            kept.keep(at, result)
    for (_, tree), result in zip(trees, results, strict=True):
        # what a dir: tree could not prove about itself, and e.g. a .patch no patch names (validate refuses it)
        result.warnings[:0] = [*getattr(tree, "warnings", []), *manifest.warnings]
    report = CheckReport(str(manifest.path), results)
    if graph and results:
        try:
            report.graph = merge(manifest, results)
        except PatchsetError as e:  # the report still stands without its picture
            report.graph_error = str(e)
    return report


def _evaluate(manifest: Manifest, trees: list[tuple[str, Source]], files: bool) -> list[ReleaseResult]:
    """Each release's result worked out, side by side where it pays, with the leads of its lost hunks."""
    loads: Loads = {}  # each patch file read once for every release (before any fork: children share it)
    _stream_cold(manifest, trees, loads)

    def evaluate(vt: tuple[str, Source]) -> ReleaseResult:
        result = evaluate_release(manifest, *vt, loads=loads)
        if not files:
            result.files, result.pristine = {}, {}
        return result

    results = parallel.ordered_map(evaluate, trees, _processes(manifest, trees, loads))
    lost = [_lost(manifest, version, tree, result) for (version, tree), result in zip(trees, results, strict=True)]
    for (_, tree), hunks in zip(trees, lost, strict=True):
        if not hunks and hasattr(tree, "drop_held"):
            tree.drop_held()  # nothing to follow there: its modules need not stay in memory
    _index_side_by_side(manifest, [tree for (_, tree), hunks in zip(trees, lost, strict=True) if hunks])
    for (version, tree), result, hunks in zip(trees, results, lost, strict=True):
        follow_moved(manifest, version, tree, result, hunks)
    return results


def follow_moved(manifest: Manifest, version: str, tree: Source, result: ReleaseResult,
                 lost: list[tuple[HunkResult, Hunk, bytes | None]] | None = None) -> None:
    """Say where a failed hunk's old lines stand now (``HunkResult.moved``) when its file is gone from the
    release or its own file no longer holds its place (core/moved.py). Searched only then: a series whose
    hunks land reads nothing more, not even the release's line index. A place is named only on the hunk's
    own lines (exact, or the nearest window holding at least half of them): check has no older release to
    tell a rename or a split from. ``lost``: what :func:`_lost` said of this release, when already asked."""
    lost = _lost(manifest, version, tree, result) if lost is None else lost
    if not lost:
        return
    package = manifest.pypi.lower().replace("-", "_")
    at = kept.leads_entry(tree, package)
    leads = kept.load_leads(at)
    index: moved.PyIndex | None = None  # read only when a hunk was never followed on this release
    found: dict[int, HunkResult] = {}
    for h, own, content in lost:
        block = moved.core(own.kinds, own.keys)[0]
        key = kept.lead_key(h.file, block, content is None)
        if key not in leads:
            if index is None:
                index = moved.release_index(tree, package)
            where = moved.follow(index, h.file, block, None, content is None, content)
            leads[key] = (str(where.place), where.place.file, where.evidence) if where is not None else None
        lead = leads[key]
        if lead is not None and lead[1] != h.file:
            found[id(h)] = replace(h, moved=lead[0], moved_evidence=lead[2])
    if index is not None:
        kept.keep_leads(at, leads)
    if found:
        for r in result.patches:
            r.hunks = tuple(found.get(id(h), h) for h in r.hunks)


def _lost(manifest: Manifest, version: str, tree: Source, result: ReleaseResult) \
        -> list[tuple[HunkResult, Hunk, bytes | None]]:
    """The failed hunks of Python files whose place their own file no longer holds (or that is gone), in
    series order, with the hunk as its patch has it and the file's content in the release."""
    out = []
    for r in result.patches:
        broken = [h for h in r.hunks if h.fails and h.file.endswith(".py") and tree.covers(h.file)]
        if not broken:
            continue
        hunks = _hunks(manifest, r.id, version)
        for h in broken:
            own = hunks.get(h.number)
            if own is None:
                continue
            content = tree.read(h.file)
            if moved.stayed(own.kinds, own.keys, content) >= moved.STAYED:
                continue  # its place is still in its file: the candidate check gives is the lead
            out.append((h, own, content))
    return out


def _index_side_by_side(manifest: Manifest, trees: list[Source]) -> None:
    """Make the line indexes of the releases that will be searched side by side, one release a process
    (a second apiece or more): each is kept in the cache, where follow_moved reads it."""
    package = manifest.pypi.lower().replace("-", "_")
    cache = Cache()
    new = [t for t in trees if (key := lineindex.tree_key(t)) is not None
           and not lineindex.kept(getattr(t, "cache", cache), key, package)]
    if len(new) > 1:
        parallel.ordered_map(lambda tree: bool(lineindex.for_source(tree, package)[1]), new,
                             parallel.heavy_workers(len(new)))


def _hunks(manifest: Manifest, pid: str, version: str) -> dict[int, Hunk]:
    try:
        pf = manifest.patch(pid).load(version, manifest.base)
    except PatchsetError:
        return {}
    return {h.number: h for f in pf.files for h in f.hunks}


def _stream_cold(manifest: Manifest, trees: list[tuple[str, Source]], loads: Loads) -> None:
    """Fetch, side by side, what each release's evaluation will read from a source that must stream
    its archive for it (a cold sdist: most of a second of decompression each). Evaluation then reads
    the cache, in whatever processes it uses. The same pass holds the package's Python files in memory:
    a release where a hunk fails makes its line index from them (follow_moved), not from a whole tree."""
    package = manifest.pypi.lower().replace("-", "_")
    cold = []
    for version, tree in trees:
        pending = getattr(tree, "pending", None)
        if pending is not None:
            paths = paths_to_read(manifest, load_patches(manifest, version, loads=loads)[0])
            if pending(paths):
                cold.append((tree, paths))
    held = parallel.ordered_map(lambda c: c[0].prefetch(c[1], python=package),  # type: ignore[attr-defined]
                                cold, parallel.heavy_workers(len(cold)))
    for (tree, _), files in zip(cold, held, strict=True):
        tree.hold(package, files)  # type: ignore[attr-defined]  # a source with pending has it


def _processes(manifest: Manifest, trees: list[tuple[str, Source]], loads: Loads) -> int:
    """Processes for the evaluation. Only trees read as plain files (a warm sdist, a dir:) are shared
    with forked children: a wheel's HTTP connections and git's pipes must stay in one process."""
    if not all(isinstance(tree, DirSource) for _, tree in trees):
        return 1
    work = 0
    for version, _ in trees:  # parsed here, before any fork, so no child parses again
        loaded, _ = load_patches(manifest, version, loads=loads)
        work += sum(len(pf.hunks) for pf in loaded.values())
    return parallel.workers(len(trees), work)
