"""`patchset next`: how the series fares on a release newer than every target.

The series is evaluated on V exactly as ``check`` would evaluate a target
(same engine, same cumulative order), through an in-memory manifest in
which every patch targets V with the file it has for the newest target it
covers. Nothing on disk changes. For every hunk that no longer lands, the
upstream edit that broke it is shown: the diff of the two pristine releases
restricted to the lines the hunk stands on.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cache

from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from patchset.core import engine, landed, moved, semantic, series
from patchset.core.manifest import Manifest, Patch, PatchChoice
from patchset.core.moved import PyIndex
from patchset.core.patchfile import Hunk
from patchset.core.words import Word
from patchset.errors import ManifestError, SourceError
from patchset.sources import Source, index
from patchset.verbs import copynotes
from patchset.verbs.trees import Trees, newest_covered_target
from patchset.versions import Release, Releases


class NextStatus(Word):
    """Where a patch stands on the next release (decided by ``_classify``)."""

    CARRIES = "carries"
    UPSTREAM = "upstream"
    PARTLY = "partly-upstream"
    NEEDS_PORT = "needs-port"
    BLOCKED = "blocked"
    NOT_TARGETED = "not-targeted"  # covers no target and has no file for V
    NOT_IN_TREE = "not-in-tree"  # nothing of it is in this kind of tree (--source wheel): check it on the sdist

    @property
    def ok(self) -> bool:
        """The patch needs no work for the next release."""
        return self in (NextStatus.CARRIES, NextStatus.UPSTREAM, NextStatus.NOT_IN_TREE)


@dataclass(frozen=True)
class UpstreamChange:
    """What upstream changed under one failing hunk between the release a patch was made for and the next."""

    file: str
    hunk: int
    diff: str  # "" when upstream left these lines alone (an earlier patch of the series moved them)
    line: int | None = None  # where the hunk's lines start in the release it was made for
    moved_to: int | None = None  # where those lines start in V, when they moved
    summary: str = ""
    moved: str = ""  # FILE:LINE in V, when the lines left their file (or the file is gone)
    moved_evidence: str = ""  # why we think they went there
    moved_exact: bool = False  # the old lines stand there exactly (port merges the hunk there)


@dataclass
class NextPatch:
    """One patch of the series on the next release, and what upstream did to it."""

    id: str
    status: NextStatus
    from_release: str | None
    result: series.PatchResult
    already: tuple[int, ...] = ()  # hunks upstream already has
    upstream_change: list[UpstreamChange] = field(default_factory=list)
    # carries: files it creates that copy a file upstream changed where the copy follows it, or removed (as port
    # says), a note each
    review: tuple[copynotes.Review, ...] = ()


@dataclass
class NextReport:
    """The series on the next release on the index, patch by patch."""

    vllm: str | None  # None: the index has nothing newer than the targets
    newer: list[str]
    source: str
    patches: list[NextPatch]
    warnings: list[str] = field(default_factory=list)
    standing: str = "newer"  # where vllm stands: "newer" than every target, a "target" already, or "older"
    targets: list[str] = field(default_factory=list)  # the manifest's targets, oldest first (for the header)

    @property
    def ok(self) -> bool:
        return all(p.status.ok for p in self.patches)


def released_versions(project: str, pre: bool = False) -> list[Version]:
    """Every release of ``project`` the package index offers a file for, oldest first."""
    found: set[Version] = set()
    want = canonicalize_name(project)
    for f in index.project_files(project):
        try:
            if f.filename.endswith(".whl"):
                name, ver = parse_wheel_filename(f.filename)[:2]
            elif f.filename.endswith((".tar.gz", ".zip")):
                name, ver = parse_sdist_filename(f.filename)
            else:
                continue
        except (ValueError, InvalidVersion):
            continue  # odd file names are the index's business, not a reason to stop
        if name == want and (pre or not (ver.is_prerelease or ver.is_devrelease)):
            found.add(ver)
    return sorted(found)


def newer_releases(manifest: Manifest, pre: bool = False, released: Sequence[str] | None = None) -> list[str]:
    newest = max(Version(t.version) for t in manifest.targets)
    versions = released_versions(manifest.pypi, pre) if released is None else sorted(
        v for v in map(Version, released) if pre or not (v.is_prerelease or v.is_devrelease))
    return [str(v) for v in versions if v > newest]


def as_target(manifest: Manifest, version: str, from_release: str | None = None) -> Manifest:
    """The manifest with every patch targeting ``version``, in memory only.

    Each patch uses its file for ``version`` if it has one (ported already), else its file
    for ``from_release`` or the newest target it covers. Patches that cover no target
    keep their ranges: there is nothing to carry.
    """
    only = Releases(f"=={version}")
    out = []
    for p in manifest.patches:
        choice = p.choice_for(version)
        if choice is None:
            u = from_release or newest_covered_target(manifest, p)
            choice = p.choice_for(u) if u else None
        if choice is None:
            out.append(p)
            continue
        out.append(replace(p, releases=only, choices=(PatchChoice(only, choice.path, choice.line),)))
    return replace(manifest, patches=tuple(out))


def next_release(manifest: Manifest, version: str | None = None, *, pre: bool = False, source: str = "pypi",
                 on_release: Callable[[str], None] | None = None,
                 released: Sequence[str] | None = None) -> NextReport:
    """Evaluate the series on ``version`` (default: the newest release after the targets).

    ``released`` lists the releases that exist; by default the package index says.
    """
    newer = newer_releases(manifest, pre, released)
    if version is None:
        if not newer:  # up to date: nothing to evaluate, and nothing wrong
            return NextReport(None, [], "", [])
        version = newer[-1]
    if on_release:
        on_release(version)
    trees = Trees(manifest, source)
    result = series.evaluate_release(as_target(manifest, version), version, trees.get(version))
    patches = [_classify(manifest, p, result.patch(p.id), version, trees) for p in manifest.patches]
    broken = series.syntax_error(result)
    if broken:  # it applies, but what it makes of V's file is not Python any more
        message, culprits = broken
        last = (culprits or "").split(", ")[-1]  # the patch that left the file as it is
        for np in patches:
            if np.status == NextStatus.CARRIES and np.id == last:
                np.status = NextStatus.NEEDS_PORT
                np.result.message = message
    _blame_imports(manifest, result, version, trees, patches)
    _blame_twice(manifest, result, version, trees, patches)
    _review_copies(manifest, result, version, trees, patches)
    # The in-memory ranges (==V) would make every upstream patch warn "narrow releases": its status says it.
    upstream = tuple(p.id + " " for p in patches if p.status == NextStatus.UPSTREAM) + tuple(
        p.id + ":" for p in patches if p.status == NextStatus.UPSTREAM)
    warnings = [w for w in result.warnings if not w.startswith(upstream)] if upstream else list(result.warnings)
    return NextReport(version, newer, result.source, patches, warnings, standing(manifest, version),
                      [t.version for t in sorted(manifest.targets, key=lambda t: Release(t.version))])


def standing(manifest: Manifest, version: str) -> str:
    """Is ``version`` newer than every target, a target already, or older than the newest target?"""
    v = Release(version)
    if any(Release(t.version) == v for t in manifest.targets):
        return "target"
    return "older" if v < max(Release(t.version) for t in manifest.targets) else "newer"


def _blame_imports(manifest: Manifest, result: series.ReleaseResult, version: str, trees: Trees,
                   patches: list[NextPatch]) -> None:
    """A patched file that would not import makes the patch that last wrote it ``needs-port``, unless another
    patch of the series provides the missing name (judged as the series leaves the file: that patch, when
    it does not land, is ``needs-port`` already and is the one to port). A name the file already lacked as the
    series leaves it on the patch's release is no new problem (port's merge judges it so too)."""
    def writer(path: str) -> str | None:
        return next((p.id for p in reversed(result.patches) if path in p.files), None)

    on_u: dict[str, dict[str, bytes | None]] = {}  # U -> the series' files on U, made only when a name is missing

    def old_patched(path: str) -> bytes | None:
        u = next((np.from_release for np in patches if np.id == writer(path)), None)
        if u is None:
            return None
        try:
            if u not in on_u:
                on_u[u] = series.evaluate_release(manifest, u, trees.get(u)).files
        except (ManifestError, SourceError):
            return None  # without U's files nothing says the name was missing already
        return on_u[u].get(path)

    found = import_problems(result, version, trees, old_patched)
    if not found:
        return
    adds = series_adds(as_target(manifest, version), version)
    for path, problems in found:
        others: dict[str, list[bytes]] = {}
        for pid, lines in adds.items():
            if pid != writer(path):
                for f, added in lines.items():
                    others.setdefault(f, []).extend(added)
        left = semantic.unpromised(problems, others)
        if not left:
            continue
        why = f"{path}:{left[0].line}: " + semantic.describe(left)
        for np in patches:
            if np.status == NextStatus.CARRIES and np.id == writer(path):
                np.status = NextStatus.NEEDS_PORT
                np.result.message = (np.result.message + "; " if np.result.message else "") + why


def _blame_twice(manifest: Manifest, result: series.ReleaseResult, version: str, trees: Trees,
                 patches: list[NextPatch]) -> None:
    """A patch that applies to V but adds again lines upstream added itself between its release and V (a
    backport that landed at another place: core/landed.py) is ``needs-port``, as port refuses its merge."""
    for np in patches:
        u = np.from_release
        if np.status != NextStatus.CARRIES or u is None:
            continue
        p = manifest.patch(np.id)
        try:
            files = p.load(u, manifest.base).files
            source = trees.get(u)
        except (ManifestError, SourceError):
            continue  # without its release's files nothing says upstream added the lines since
        for f in files:
            if f.path not in result.changed:
                continue
            found = landed.carried_twice([(h.number, h.kinds, h.keys) for h in f.hunks],
                                         source.read(f.path) if source.covers(f.path) else None,
                                         result.pristine.get(f.path), result.changed[f.path], f.path)
            if found:
                np.status = NextStatus.NEEDS_PORT
                why = landed.describe(f.path, found, version, u)
                np.result.message = (np.result.message + "; " if np.result.message else "") + why
                break


def _review_copies(manifest: Manifest, result: series.ReleaseResult, version: str, trees: Trees,
                   patches: list[NextPatch]) -> None:
    """A carrying patch that creates a copy of a file of its release, where V changed the lines the copy holds or
    removed the file, gets port's review note (verbs/copynotes.py): a note, not a finding."""
    package = manifest.pypi.lower().replace("-", "_")
    made_on: dict[str, dict[str, bytes | None]] = {}  # U -> what the series creates on U
    indexes: dict[str, PyIndex] = {}
    for np in patches:
        u = np.from_release
        if np.status != NextStatus.CARRIES or u is None:
            continue
        try:
            source = trees.get(u)
            made = {k: v for k, v in copynotes.made_by(manifest.patch(np.id).load(u, manifest.base), source).items()
                    if result.pristine.get(k) is None and result.files.get(k) is not None}
            if not made:
                continue
            if u not in made_on:
                made_on[u] = copynotes.series_made(manifest, u, source)
            if u not in indexes:
                indexes[u] = copynotes.u_index(source, package, made_on[u])
            here = {k: result.files[k] or b"" for k in made}
            own = frozenset(k for k, v in result.files.items() if v is not None and result.pristine.get(k) is None)
            np.review = copynotes.notes(here, u, version, source, trees.get(version), made_on[u], indexes[u],
                                        lambda: trees.index(version), own)
        except (ManifestError, SourceError):
            continue  # without the releases' files nothing says what the copy was made from


def series_adds(manifest: Manifest, version: str) -> dict[str, dict[str, list[bytes]]]:
    """patch id -> file -> the lines it adds there, for each patch of the series with a file for ``version``."""
    out = {}
    for p in manifest.patches:
        try:
            out[p.id] = semantic.added_lines(p.load(version, manifest.base).files)
        except (ManifestError, SourceError):
            continue  # no file for this release: it adds nothing here
    return out


def import_problems(result: series.ReleaseResult, version: str, trees: Trees,
                    old_patched: Callable[[str], bytes | None] = lambda _path: None,
                    ) -> list[tuple[str, list[semantic.Problem]]]:
    """(path, problems) for each patched Python file of V that would not import (see core/semantic.py);
    ``old_patched``: the file as the series leaves it on the release its patch was made for, read only for a
    file with an undefined name."""
    source = trees.get(version)

    def read(x: str) -> bytes | None:
        return result.files[x] if x in result.files else source.read(x)

    def where(name: str) -> list[str]:
        return trees.index(version).where_defined(name)

    out = []
    for path, content in sorted(result.changed.items()):
        if content is None or not path.endswith(".py"):
            continue
        found = semantic.problems(content, result.pristine.get(path), None, read, path, where, version)
        if any(f.file == path and f.name for f in found):  # an undefined name: was it missing already?
            found = semantic.problems(content, result.pristine.get(path), old_patched(path), read, path, where,
                                      version)
        if found:
            out.append((path, found))
    return out


def _classify(manifest: Manifest, p: Patch, r: series.PatchResult, version: str, trees: Trees) -> NextPatch:
    u = newest_covered_target(manifest, p)
    already = tuple(h.number for h in r.hunks if h.status == engine.HunkStatus.ALREADY)
    if r.status == series.PatchStatus.UPSTREAM:
        return NextPatch(p.id, NextStatus.UPSTREAM, u, r)
    if r.status == series.PatchStatus.BLOCKED:
        return NextPatch(p.id, NextStatus.BLOCKED, u, r)
    if r.status == series.PatchStatus.NOT_TARGETED:  # covers no target and has no file for V: nothing to carry
        return NextPatch(p.id, NextStatus.NOT_TARGETED, u, r)
    if r.status == series.PatchStatus.NOT_IN_TREE:
        return NextPatch(p.id, NextStatus.NOT_IN_TREE, u, r)
    placing = (engine.HunkStatus.EXACT, engine.HunkStatus.OFFSET, engine.HunkStatus.NOT_IN_TREE)
    placed = all(h.status in placing for h in r.hunks)
    if r.status == series.PatchStatus.APPLIES and placed:
        return NextPatch(p.id, NextStatus.CARRIES, u, r)
    status = NextStatus.PARTLY if already else NextStatus.NEEDS_PORT
    broken = [h for h in r.hunks if h.status in (engine.HunkStatus.FAILED, engine.HunkStatus.FUZZ)]
    changes = upstream_changes(p, u, version, broken, trees.get, manifest, trees.index) if u and broken else []
    return NextPatch(p.id, status, u, r, already, changes)


def upstream_changes(p: Patch, old: str, new: str, broken: Sequence[engine.HunkResult],
                     tree: Callable[[str], Source], manifest: Manifest,
                     index: Callable[[str], PyIndex] | None = None) -> list[UpstreamChange]:
    """For each broken hunk, what upstream changed between ``old`` and ``new`` on the lines it stands on."""
    try:
        pf = p.load(old, manifest.base)
    except (ManifestError, SourceError):
        return []
    hunks = {h.number: (f.path, h) for f in pf.files for h in f.hunks}
    out = []
    for b in broken:
        path, hunk = hunks.get(b.number, (b.file, None))
        if hunk is None:
            continue
        before, after = tree(old).read(path), tree(new).read(path)
        # a context that stands nowhere, on lines upstream left alone: the series changed it. Not for a hunk
        # that needs fuzz, nor one whose context stands somewhere the engine refuses (at several places: upstream
        # added a twin elsewhere; out of order; only with other line endings; away from its anchor).
        earlier = b.status == engine.HunkStatus.FAILED and b.message.startswith(engine.CONTEXT_NOT_FOUND)
        change = window_change(path, hunk, old, new, before, after, EARLIER if earlier else "")
        if index is not None and path.endswith(".py") and gone_from(hunk, after):
            block = moved.core(hunk.kinds, hunk.keys)[0]
            found = moved.follow(index(new), path, block, before, after is None, after, tree(old).read)
            if found is not None and (after is None or found.place.file != path):  # in its own file: moved_to says
                change = with_moved(change, found)
        out.append(change)
    return out


EARLIER = "an earlier patch of the series changed them"


def gone_from(hunk: Hunk, content: bytes | None) -> bool:
    """Whether the hunk's place is gone from ``content`` (its file in the new release): the file is gone,
    or it holds neither the hunk's old lines, nor its new ones, nor most of its context (moved.stayed).
    Only then are its lines looked for in other files."""
    return moved.stayed(hunk.kinds, hunk.keys, content) < moved.STAYED


def with_moved(change: UpstreamChange, found: moved.Moved | None) -> UpstreamChange:
    """The change, saying where the hunk's lines went (``moved_to: FILE:LINE``) when they were found."""
    if found is None:
        return change
    summary = (change.summary + "; " if change.summary else "") + str(found)
    return replace(change, summary=summary, moved=str(found.place), moved_evidence=found.evidence,
                   moved_exact=found.sure)


def window_change(path: str, hunk: Hunk, old: str, new: str, before: bytes | None,
                  after: bytes | None, because: str = "") -> UpstreamChange:
    """The diff of two releases' copies of ``path``, restricted to the lines ``hunk`` stands on.

    ``because``: what the caller knows to follow when upstream left those lines alone (the hunk's context
    is not found and upstream did not change it: an earlier patch of the series did); said only then."""
    if before is None or after is None:
        what = f"vllm {new} removed {path}" if after is None else f"vllm {old} has no {path}"
        return UpstreamChange(path, hunk.number, "", summary=what)
    a, b = _lines(before), _lines(after)
    lo, hi = _locate(a, hunk)
    ops = _opcodes(before, after)
    touched = [op for op in ops if op[0] != "equal" and op[1] <= hi and op[2] >= lo]
    start_b = _map_line(ops, lo)
    moved = start_b if start_b is not None and start_b != lo else None
    if not touched:
        where = f"; the lines moved from {lo + 1} to {moved + 1}" if moved is not None else ""
        return UpstreamChange(path, hunk.number, "", lo + 1, None if moved is None else moved + 1,
                              f"upstream did not change lines {lo + 1}-{hi} between {old} and {new}{where}"
                              + (f": {because}" if because else ""))
    a0, a1 = min(lo, touched[0][1]), max(hi, touched[-1][2])
    b0 = min(_map_line(ops, a0) or touched[0][3], touched[0][3])
    b1 = max(b0, touched[-1][4], (_map_line(ops, a1) or 0))
    body = _render(a[a0:a1], b[b0:b1], a0, b0, f"{path} (vllm {old})", f"{path} (vllm {new})")
    summary = f"upstream changed {sum(op[2] - op[1] for op in touched)} of these lines, " \
              f"added {sum(op[4] - op[3] for op in touched)}"
    if moved is not None:
        summary += f"; the hunk's lines moved from {lo + 1} to {moved + 1}"
    return UpstreamChange(path, hunk.number, body, lo + 1, None if moved is None else moved + 1, summary)


def _lines(data: bytes) -> list[str]:
    return data.decode("utf-8", errors="surrogateescape").splitlines()


@cache
def _opcodes(before: bytes, after: bytes) -> Sequence[tuple[str, int, int, int, int]]:
    return difflib.SequenceMatcher(None, _lines(before), _lines(after), autojunk=False).get_opcodes()


def _locate(a: list[str], hunk: Hunk) -> tuple[int, int]:
    """Where the hunk's old lines stand in ``a``: found by content, else by its header."""
    old = [ln.text for ln in hunk.old]
    stated = max(0, hunk.source_start - 1)
    hits = [i for i in range(0, max(0, len(a) - len(old)) + 1) if a[i:i + len(old)] == old] if old else []
    start = min(hits, key=lambda i: abs(i - stated)) if hits else min(stated, len(a))
    return start, min(len(a), start + max(1, len(old)))


def _map_line(ops: Sequence[tuple[str, int, int, int, int]], i: int) -> int | None:
    for tag, i1, i2, j1, _j2 in ops:
        if tag == "equal" and i1 <= i < i2:
            return j1 + (i - i1)
    return None


def _render(a: list[str], b: list[str], a0: int, b0: int, name_a: str, name_b: str) -> str:
    out = [f"--- {name_a}", f"+++ {name_b}", f"@@ -{a0 + 1},{len(a)} +{b0 + 1},{len(b)} @@"]
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            out += [" " + x for x in a[i1:i2]]
            continue
        out += ["-" + x for x in a[i1:i2]]
        out += ["+" + x for x in b[j1:j2]]
    return "\n".join(out) + "\n"


# --- every newer release at once (`next --all`): how far behind the fork is ---------------------------------


@dataclass
class ReleaseStanding:
    """One release newer than the targets: how many patches carry, are ported already, are upstream, need work."""

    vllm: str
    counts: dict[str, int]  # carries, ported, upstream, partly-upstream, needs-port, blocked
    needs_work: list[str]  # ids, series order

    @property
    def ok(self) -> bool:
        return not self.needs_work


@dataclass
class AllReleasesReport:
    """The series on every release newer than the targets, newest last (``next --all``)."""

    targets: list[str]
    releases: list[ReleaseStanding]

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.releases)


COUNTED = ("carries", "ported", "upstream", "partly-upstream", "needs-port", "blocked")


def every_newer_release(manifest: Manifest, *, pre: bool = False, source: str = "pypi",
                        on_release: Callable[[str], None] | None = None,
                        released: Sequence[str] | None = None) -> AllReleasesReport:
    """:func:`next_release` on each release newer than every target, counted: ``ported`` is a carrying patch
    whose file for that release is its own (a port made it), not the file of the target it comes from."""
    newer = newer_releases(manifest, pre, released)
    out = AllReleasesReport([t.version for t in manifest.targets], [])
    for version in newer:
        report = next_release(manifest, version, pre=pre, source=source, on_release=on_release, released=newer)
        counts = dict.fromkeys(COUNTED, 0)
        work = []
        for np in report.patches:
            word = str(np.status)
            if np.status == NextStatus.CARRIES:
                p = manifest.patch(np.id)
                own = p.choice_for(version)
                if own is not None and (np.from_release is None or p.choice_for(np.from_release) != own):
                    word = "ported"
            if word in counts:
                counts[word] += 1
            if not np.status.ok:
                work.append(np.id)
        out.releases.append(ReleaseStanding(version, counts, work))
    return out
