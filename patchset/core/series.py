"""The ordered series for one release, evaluated hunk by hunk in memory.

This is where the status words of a patch on a release are decided:
``applies`` · ``upstream`` · ``partly-upstream`` · ``not-targeted`` ·
``not-in-tree`` · ``failed`` · ``blocked``. Everything is cumulative: each
patch sees the tree as the patches before it left it, which is what makes
order dependencies visible.

A path the tree does not have never passes silently. A file that this kind of
tree cannot hold (anything beside the package in a wheel, site-packages or an
image: ``tests/``, ``requirements/``, ``csrc/``, ``setup.py``; ``core.trees``)
gives each of its hunks the status ``not-in-tree``, naming the kind of tree;
the patch is judged on the rest, and is ``not-in-tree`` itself when nothing of
it is left. Any other missing file fails the patch, naming the path and the
layout (``root``/``strip``) under which it would exist, if any: a path that
another layout finds inside the package is a layout mistake, never
``not-in-tree``. An upstream tree (sdist, git tag, source checkout) can hold
every path, so there every hunk is checked.

A patch that does not apply changes nothing, as ``apply`` is all or nothing:
the patches after it see the tree without any of its hunks (GNU patch keeps a
failed patch's other hunks, so its offsets and failures after one can differ).
A later hunk that fails because it stands on lines such a patch adds (a
context or removed line the tree lacks and that patch's hunks add to that
file) says so, naming it: mend that one first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from patchset.core import engine
from patchset.core.manifest import Manifest, Patch
from patchset.core.patchfile import FilePatch, PatchFile, split_lines
from patchset.core.trees import BESIDE_TOPS, PACKAGE_KINDS, held_beside
from patchset.core.words import Word
from patchset.errors import PatchFileError, PatchsetError, SourceError
from patchset.sources import Source


class PatchStatus(Word):
    """Where one patch of the series stands on a release (decided by ``evaluate_release``)."""

    APPLIES = "applies"
    UPSTREAM = "upstream"
    NOT_TARGETED = "not-targeted"
    FAILED = "failed"
    BLOCKED = "blocked"
    PARTLY_UPSTREAM = "partly-upstream"  # some hunks are in the pristine release, the others are not: not ok
    EXCLUDED = "excluded"  # left out on purpose (negative controls), never shown by check
    NOT_IN_TREE = "not-in-tree"  # every file it touches is beside the package, in a tree that holds none

    @property
    def ok(self) -> bool:
        """No finding. not-in-tree is none: this tree cannot say, and the check against an upstream tree does."""
        return self in (PatchStatus.APPLIES, PatchStatus.UPSTREAM, PatchStatus.NOT_TARGETED, PatchStatus.EXCLUDED,
                        PatchStatus.NOT_IN_TREE)

    @property
    def blocks(self) -> bool:
        """The patch does not apply here, so the patches that come after it are blocked."""
        return self in (PatchStatus.FAILED, PatchStatus.BLOCKED, PatchStatus.PARTLY_UPSTREAM)


@dataclass
class PatchResult:
    """Where one patch of the series stands on one release, with its hunks and the evidence."""

    id: str
    status: PatchStatus
    evidence: str = ""
    message: str = ""
    patch_file: str | None = None
    sha256: str | None = None
    hunks: tuple[engine.HunkResult, ...] = ()
    skipped: tuple[str, ...] = ()  # files of the patch this kind of tree cannot hold (its hunks: not-in-tree)
    tree: str = ""  # the kind of tree that cannot hold them (wheel, site-packages, image), when there are some
    files: tuple[str, ...] = ()  # paths this patch changed (content or mode)


@dataclass
class ReleaseResult:
    """The whole series on one release: each patch's result, and the touched files before and after."""

    vllm: str
    source: str
    patches: list[PatchResult]
    files: dict[str, bytes | None] = field(default_factory=dict)  # touched path -> content after the series
    pristine: dict[str, bytes | None] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    modes: dict[str, int] = field(default_factory=dict)  # path -> mode the series sets (e.g. 0o100755)
    settled: bool = True  # False when something could not be read or known and a fallback stood in (never kept:
    # core/kept.py)

    @property
    def ok(self) -> bool:
        return all(p.status.ok for p in self.patches)

    def patch(self, patch_id: str) -> PatchResult:
        return next(p for p in self.patches if p.id == patch_id)

    @property
    def changed(self) -> dict[str, bytes | None]:
        return {k: v for k, v in self.files.items() if v != self.pristine.get(k)}


#: Patch files read in one run, by (patch id, patch file): shared by the releases a caller evaluates
#: together, so that each file is read and parsed once for all of them (and all see the same bytes).
Loads = dict[tuple[str, str], "PatchFile | PatchsetError"]


def load_patches(manifest: Manifest, version: str, exclude: frozenset[str] = frozenset(),
                 loads: Loads | None = None) -> tuple[dict[str, PatchFile], dict[str, PatchsetError]]:
    """Each patch of the series ``version`` takes, parsed (by id), and why the others cannot be."""
    loaded: dict[str, PatchFile] = {}
    load_errors: dict[str, PatchsetError] = {}
    for p in manifest.patches:
        if not p.targets(version) or p.id in exclude:
            continue
        choice = p.choice_for(version)
        key = (p.id, str(choice.path) if choice is not None else f"no file for {version}")  # the refusal names it
        got = loads.get(key) if loads is not None else None
        if got is None:
            try:
                got = p.load(version, manifest.base)
            except PatchsetError as e:
                got = e
            if loads is not None:
                loads[key] = got
        if isinstance(got, PatchsetError):
            load_errors[p.id] = got
        else:
            loaded[p.id] = got
    return loaded, load_errors


def refuse_unusable(load_errors: dict[str, PatchsetError]) -> None:
    """Raise the first patch file that cannot be used (malformed, unreadable, a path leaving the tree).

    That is bad input (exit 2, as ``validate`` says), not a finding about the release: reporting it as
    the patch ``failed`` made CI read "a fix is missing". A release the manifest gives no file for is
    not raised here: that is a verdict on the release (``next``, ``port``), not a broken file.
    """
    for pid, error in load_errors.items():
        if isinstance(error, PatchFileError):
            if error.patch:
                raise error
            raise PatchFileError(error.message, file=error.file, line=error.line, patch=pid, hunk=error.hunk,
                                 hint=error.hint) from error


def evaluate_release(manifest: Manifest, version: str, source: Source,
                     exclude: frozenset[str] = frozenset(), loads: Loads | None = None) -> ReleaseResult:
    """Apply the manifest's series for ``version`` to ``source`` in memory, minus ``exclude``.
    ``loads``: the patch files already read in this run (:data:`Loads`), filled as they are read."""
    loaded, load_errors = load_patches(manifest, version, exclude, loads)
    refuse_unusable(load_errors)
    paths = paths_to_read(manifest, loaded)
    wanted = [path for path in paths if source.covers(path)]
    if hasattr(source, "prefetch"):  # a remote source fetches them together, not one round trip each
        source.prefetch(wanted)
    pristine = {path: source.read(path) for path in wanted}
    walk = _Walk(version, source, pristine, dict(pristine), exclude)
    walk.project = manifest.pypi
    walk.warnings += [pf.crlf_warning for pf in loaded.values() if pf.crlf]
    results: list[PatchResult] = []
    for p in manifest.patches:
        r = _evaluate_one(walk, p, loaded.get(p.id), load_errors.get(p.id))
        results.append(r)
        walk.by_id[p.id] = r
        if r.status.blocks and (pf := loaded.get(p.id)) is not None:
            walk.unapplied[p.id] = _added(pf)
    return ReleaseResult(version, source.identity, results, walk.tree, pristine, walk.warnings, walk.modes,
                         settled=walk.settled)


def paths_to_read(manifest: Manifest, loaded: dict[str, PatchFile]) -> list[str]:
    """The files an evaluation reads: those the loaded patches touch and the probes' (less, when it
    reads them, those the kind of tree cannot hold)."""
    return sorted({path for pf in loaded.values() for path in pf.touched}
                  | {probe.file for p in manifest.patches for probe in p.present})


class _Walk:
    """One release's evaluation as it goes: the tree as the patches so far leave it, and what they said."""

    __slots__ = ("version", "source", "pristine", "tree", "exclude", "by_id", "warnings", "modes", "unapplied",
                 "project", "settled", "_beside")

    def __init__(self, version: str, source: Source, pristine: dict[str, bytes | None],
                 tree: dict[str, bytes | None], exclude: frozenset[str]) -> None:
        self.version, self.source, self.pristine, self.exclude = version, source, pristine, exclude
        self.tree = tree  # updated in place, patch by patch
        self.by_id: dict[str, PatchResult] = {}
        self.warnings: list[str] = []
        self.modes: dict[str, int] = {}  # path -> mode the series sets so far
        self.unapplied: dict[str, dict[str, frozenset[bytes]]] = {}  # a patch that did not apply -> the lines
        # it adds, per file
        self.project = "vllm"
        self.settled = True  # no fallback stood in for something unreadable
        self._beside: tuple[frozenset[str] | None, frozenset[str]] | None = None

    def holds_beside(self, f: FilePatch) -> bool:
        """Whether the release holds every path of ``f`` beside its package (its sdist's listing, read once and
        only when a patch names a path outside the package of a tree that holds the package alone)."""
        if self._beside is None:
            from patchset.sources.sdist import release_listing  # only here: a check on a package path never needs it

            try:
                self._beside = release_listing(self.project, self.version)
            except SourceError as e:
                self._beside = (None, BESIDE_TOPS)
                self.settled = False
                self.warnings.append(f"the listing of {self.project} {self.version}'s sdist cannot be read "
                                     f"({e.message}): paths beside the package are judged by their top folder")
        listing, tops = self._beside
        return all(held_beside(x, x != f.old_path, listing, tops) for x in f.touched)


def _evaluate_one(walk: _Walk, p: Patch, pf: PatchFile | None, load_error: PatchsetError | None) -> PatchResult:
    version, pristine = walk.version, walk.pristine
    targeted = p.targets(version)
    evidence = upstream_evidence(p, walk.source, pristine)
    if not evidence and _commit_unknown(p, walk.source):
        walk.settled = False  # the repository may learn the commit (a fetch) and then show it upstream
    if evidence:
        if targeted:
            walk.warnings.append(f"{p.id} is upstream in {version} ({evidence}) but releases {str(p.releases)!r} "
                            f"still includes it: narrow the range to retire the patch there")
        return PatchResult(p.id, PatchStatus.UPSTREAM, evidence=evidence)
    if p.id in walk.exclude:
        return PatchResult(p.id, PatchStatus.EXCLUDED, message="left out on purpose")
    if not targeted:
        why = f"outside releases {str(p.releases)!r}"
        if p.present:
            why += "; " + "; ".join(probe.describe(pristine.get(probe.file)) for probe in p.present)
        return PatchResult(p.id, PatchStatus.NOT_TARGETED, evidence=why)
    if load_error is not None:
        return PatchResult(p.id, PatchStatus.FAILED, message=str(load_error))
    assert pf is not None
    base = PatchResult(p.id, PatchStatus.FAILED, patch_file=pf.path, sha256=pf.sha256)
    broken = [d for d in p.after if d in walk.by_id and walk.by_id[d].status.blocks]
    if broken:
        base.status = PatchStatus.BLOCKED
        base.message = "comes after " + ", ".join(f"{d} ({walk.by_id[d].status})" for d in broken)
        return base
    return _apply_one(walk, p, pf, base)


def _apply_one(walk: _Walk, p: Patch, pf: PatchFile, base: PatchResult) -> PatchResult:
    source, pristine, tree = walk.source, walk.pristine, walk.tree
    beside = [f for f in pf.files if _beside(f, source, p.strip, p.root) and walk.holds_beside(f)]
    covered = [f for f in pf.files if f not in beside]
    base.skipped = tuple(sorted({f.path for f in beside}))
    base.tree = _kind(source) if beside else ""
    outside = _not_in_tree(beside, source)
    if not covered:
        base.status = PatchStatus.NOT_IN_TREE
        base.hunks = outside
        base.message = (f"nothing of it is in this {_kind(source)} ({', '.join(base.skipped)}): check it against "
                        "an upstream tree (--source pypi or git:PATH)")
        return base
    missing = _missing_paths(covered, tree, source, p.strip, p.root, walk.version)
    if missing:
        return _missing_files(walk, p, pf, covered, missing, base, outside)
    sub = PatchFile(pf.path, pf.sha256, pf.header, tuple(covered))
    outcome = engine.apply_patch(tree, sub, max_fuzz=p.fuzz)
    base.hunks = _in_patch_order(_with_patch_lines(outcome.hunks, sub), outside, pf)
    untouched = not any(tree.get(x) != pristine.get(x) for x in sub.touched)
    if outcome.status == engine.OutcomeStatus.ALREADY and untouched:
        base.status = PatchStatus.UPSTREAM
        base.evidence = "reverse-apply: every hunk is already in the pristine tree (weak evidence: add a present probe)"
        walk.warnings.append(f"{p.id}: every hunk is already in {walk.version}; if the fix is upstream there, "
                        "narrow releases to retire the patch")
        return base
    if not outcome.ok:
        base.hunks, said = _stands_on_unapplied(walk, sub, base.hunks)
        result = _not_applying(base, outcome, walk.version, untouched)
        result.message += said
        return result
    tree.update(outcome.files)
    for path, content in outcome.files.items():
        if content is None:
            walk.modes.pop(path, None)
    walk.modes.update(outcome.modes)
    base.status = PatchStatus.APPLIES
    base.files = tuple(sorted(set(outcome.files) | set(outcome.modes)))
    for probe in p.present:
        if source.covers(probe.file) and not probe.holds(tree.get(probe.file)):
            walk.warnings.append(f"{p.id}: its present probe does not hold after applying it "
                            f"({probe.describe(tree.get(probe.file))}): the probe cannot detect the fix")
    return base


def _added(pf: PatchFile) -> dict[str, frozenset[bytes]]:
    """The lines a patch adds, per file it changes."""
    out: dict[str, set[bytes]] = {}
    for f in pf.files:
        for h in f.hunks:
            out.setdefault(f.path, set()).update(k for kind, k in zip(h.kinds, h.keys, strict=True) if kind == "+")
    return {path: frozenset(lines) for path, lines in out.items()}


def _stands_on_unapplied(walk: _Walk, pf: PatchFile, hunks: tuple[engine.HunkResult, ...]) \
        -> tuple[tuple[engine.HunkResult, ...], str]:
    """Each failed hunk whose context or removed lines include a line the tree's file lacks and an earlier
    patch that did not apply adds to it (the first such patch, in series order), with that said in its
    message; and what the patch's message gains: which hunks stand on which patch, to mend first."""
    if not walk.unapplied:
        return hunks, ""
    own = {(f.path, h.number): h for f in pf.files for h in f.hunks}
    on: dict[str, list[int]] = {}
    out = []
    for r in hunks:
        h = own.get((r.file, r.number))
        if r.status == engine.HunkStatus.FAILED and h is not None:
            have = set(split_lines(walk.tree.get(r.file) or b""))
            need = {k for kind, k in zip(h.kinds, h.keys, strict=True) if kind != "+" and k.strip() and k not in have}
            pid = next((x for x, added in walk.unapplied.items() if need & added.get(r.file, frozenset())), None)
            if pid is not None:
                on.setdefault(pid, []).append(r.number)
                r = replace(r, message=f"{r.message}; it stands on lines {pid} adds, which does not apply here")
        out.append(r)
    said = "".join(f"; {_hunks(numbers)} {'stands' if len(numbers) == 1 else 'stand'} on lines {pid} adds, which "
                   f"does not apply here: mend {pid} first" for pid, numbers in on.items())
    return tuple(out), said


def _with_patch_lines(hunks: tuple[engine.HunkResult, ...], pf: PatchFile) -> tuple[engine.HunkResult, ...]:
    """Each result with the patch file's line: its hunk's ``@@`` line, or for a change without a hunk (a mode,
    a rename, a copy: number 0) its file's first header line, as a missing or not-in-tree file's results have."""
    where = {h.number: h.line for h in pf.hunks}
    heads = {x: f.line for f in reversed(pf.files) for x in f.touched}
    return tuple(h if h.patch_line == (at := where.get(h.number) or heads.get(h.file, 0)) else replace(h, patch_line=at)
                 for h in hunks)


def _in_patch_order(placed: tuple[engine.HunkResult, ...], others: tuple[engine.HunkResult, ...],
                    pf: PatchFile) -> tuple[engine.HunkResult, ...]:
    """Every hunk in the patch's own order, whichever tree holds its file (or none does)."""
    if not others:
        return placed
    files = {x: i for i, f in reversed(list(enumerate(pf.files))) for x in (f.path, *f.touched)}
    return tuple(sorted(placed + others, key=lambda h: (files.get(h.file, len(files)), h.number)))


def _missing_files(walk: _Walk, p: Patch, pf: PatchFile, covered: list, missing: dict[int, str],
                   base: PatchResult, outside: tuple[engine.HunkResult, ...]) -> PatchResult:
    """A file the patch needs is not in the tree: its hunks fail, each saying so, and the other files'
    hunks are still placed and reported (on a copy: a failed patch changes nothing)."""
    present = [f for f in covered if id(f) not in missing]
    sub = PatchFile(pf.path, pf.sha256, pf.header, tuple(present))
    outcome = engine.apply_patch(walk.tree, sub, max_fuzz=p.fuzz) if present else None
    gone = [engine.HunkResult(f.path, h.number, engine.HunkStatus.FAILED, False, message=missing[id(f)],
                              patch_line=h.line)
            for f in covered if id(f) in missing for h in f.hunks]
    gone += [engine.HunkResult(f.path, 0, engine.HunkStatus.FAILED, False, message=missing[id(f)], patch_line=f.line)
             for f in covered if id(f) in missing and not f.hunks]
    placed = _with_patch_lines(outcome.hunks, sub) if outcome else ()
    base.hunks = _in_patch_order(placed, tuple(gone) + outside, pf)
    base.message = "; ".join(missing.values())
    if outcome is not None and not outcome.ok:
        base.message += "; " + outcome.message
    return base


def _not_applying(base: PatchResult, outcome: engine.PatchOutcome, version: str, untouched: bool) -> PatchResult:
    """failed, or partly-upstream when some hunks are already in the pristine release."""
    already = [h.number for h in outcome.hunks if h.status == engine.HunkStatus.ALREADY]
    if already and untouched:
        rest = [h for h in outcome.hunks if h.status != engine.HunkStatus.ALREADY]
        base.status = PatchStatus.PARTLY_UPSTREAM
        failing = [h.number for h in rest if h.fails]
        what = f"{_hunks(failing)} failing" if failing else "the other hunks would apply"
        base.message = f"{_hunks(already)} already in vLLM {version}, {what}: port the patch (drop what is upstream)"
        return base
    base.message = outcome.message
    return base


def _hunks(numbers: list[int]) -> str:
    return ("hunk " if len(numbers) == 1 else "hunks ") + ", ".join(map(str, numbers))


def _kind(source: Source) -> str:
    return getattr(source, "kind", "tree")


def _beside(f: FilePatch, source: Source, strip: int, root: str) -> bool:
    """Whether this kind of tree cannot hold any path ``f`` touches, and no other layout finds one inside it.

    The layout check keeps a package-layout patch read as repository layout (``v1/x.py`` for
    ``vllm/v1/x.py``) a failure with its hint. It leaves out the reading that adds ``vllm/`` after
    dropping a component: ``tests/utils.py`` would find ``vllm/utils.py``.
    """
    return not any(source.covers(x) or _layout_hint(x, source, strip, root, guess_package=False)
                   for x in f.touched)


def _not_in_tree(files: list[FilePatch], source: Source) -> tuple[engine.HunkResult, ...]:
    """A ``not-in-tree`` result for every hunk (or file-level change) of ``files``, naming the kind of tree."""
    kind = _kind(source)
    out = []
    for f in files:
        why = f"this {kind} holds only the package: {f.path} lies beside it"
        out += [engine.HunkResult(f.path, h.number, engine.HunkStatus.NOT_IN_TREE, False, message=why,
                                  patch_line=h.line)
                for h in f.hunks] or [engine.HunkResult(f.path, 0, engine.HunkStatus.NOT_IN_TREE, False, message=why,
                                                        patch_line=f.line)]
    return tuple(out)


def _missing_paths(files: list, tree: dict, source: Source, strip: int, root: str, version: str) -> dict[int, str]:
    """Why files the patch needs are not in this tree, with the layout that would find them
    (by ``id`` of the file patch)."""
    out = {}
    for f in files:
        need = f.old_path
        if need is None:
            top = f.path.split("/", 1)[0]
            if not source.covers(f.path):
                out[id(f)] = (f"{f.path}: the patch creates it under {top}/, which is not in {source.identity}"
                              + _layout_hint(f.path, source, strip, root))
            continue
        if tree.get(need) is not None or (f.new_path and tree.get(f.new_path) is not None):
            continue
        hint = _layout_hint(need, source, strip, root)
        if hint or f.new_path is not None or not source.covers(need):  # a deletion may be done already
            where = source.identity if source.covers(need) or _kind(source) not in PACKAGE_KINDS else \
                f"the package this {_kind(source)} holds, nor beside it in vLLM {version} (its sdist's listing)"
            out[id(f)] = f"{need}: not in {where}" + (
                hint or "; no other layout names a file there either (a typo, or a file removed upstream?)")
    return out


def _layout_hint(path: str, source: Source, strip: int, root: str, *, guess_package: bool = True) -> str:
    """Which other reading of a patch path names a file that this tree has."""
    head, _, tail = path.partition("/")
    options = [("" if root else "vllm/" + path, "the patch is in package layout: set root: vllm"),
               (path[len(root) + 1:] if root and path.startswith(root + "/") else "",
                f"the patch is in repository layout: drop root: {root}"),
               (tail, f"its paths have one more leading component: strip: {strip + 1}"),
               ("vllm/" + tail if tail and not root and guess_package else "",
                f"package layout with one more leading component: root: vllm, strip: {strip + 1}")]
    # A monorepo keeps vLLM under folders of its own (a/<dir>/<dir>/vllm/...): more components to drop.
    parts = path.split("/")
    options += [("/".join(parts[k:]), f"its paths have {k} more leading components: strip: {strip + k}")
                for k in range(2, len(parts) - 1)]
    for candidate, why in options:
        if candidate and candidate != path and source.read(candidate) is not None:
            return f"; {candidate} exists: {why}"
    return ""


def upstream_evidence(p: Patch, source: Source, pristine: dict) -> str:
    """Why we believe the fix is already in this release, or '' when we don't."""
    probes = p.present
    if probes and all(source.covers(x.file) and x.holds(pristine.get(x.file)) for x in probes):
        return "probe: " + "; ".join(probe.describe(pristine.get(probe.file)) for probe in p.present)
    contains = getattr(source, "contains_commit", None)
    if contains and p.upstream_commit and contains(p.upstream_commit):
        return f"ancestry: upstream commit {p.upstream_commit} is an ancestor of {getattr(source, 'tag', '')}"
    return ""


def _commit_unknown(p: Patch, source: Source) -> bool:
    """Whether the patch's upstream commit is one the source's repository does not know (yet)."""
    contains = getattr(source, "contains_commit", None)
    return bool(contains and p.upstream_commit and contains(p.upstream_commit) is None)


def failure_summary(result: ReleaseResult, where: str = "") -> str:
    """One line naming each failed patch, its patch file and line, hunk and file."""
    parts = []
    for p in result.patches:
        if p.status.blocks:
            bad = [h for h in p.hunks if h.fails]
            at = ""
            if bad:
                h = bad[0]
                at = f" ({p.patch_file}:{h.patch_line}, hunk {h.number}, {h.file}: {h.status}"
                at += f", {h.message})" if h.message else ")"
            parts.append(f"patch {p.id} {p.status}{at}: {p.message}")
    return f"the series does not apply to vLLM {result.vllm}{where}: " + "; ".join(parts)


def syntax_error(result: ReleaseResult) -> tuple[str, str | None] | None:
    """The first patched Python file that no longer compiles, and the patches that wrote it.

    A patch that applies is not a patch that still means what it did; one that
    breaks the syntax of a module must never reach a tree or an image.
    """
    errors = python_syntax_errors(result.changed)
    if not errors:
        return None
    path, e = errors[0]
    culprits = [p.id for p in result.patches if path in p.files]
    return f"{path}:{e.lineno}: the patched file does not compile: {e.msg}", ", ".join(culprits) or None


def python_syntax_errors(files: Mapping[str, bytes | None]) -> list[tuple[str, SyntaxError]]:
    """Each Python module among ``files`` (path -> content, None: deleted) that does not compile, and why."""
    out = []
    for path, content in files.items():
        if content is None or not path.endswith(".py"):
            continue
        try:
            compile(content, path, "exec", dont_inherit=True)
        except SyntaxError as e:
            out.append((path, e))
    return out
