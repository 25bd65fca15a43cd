"""`patchset upgrade`: a new vLLM release, carried through the series, as one branch worth a pull request.

The steps a maintainer runs by hand on the day of a release, in order and nothing else:

1. pick V: ``--to``, else the newest release on the index newer than every target (``--pre`` counts
   pre-releases, as in ``next``); with none there is nothing to do, and nothing changes;
2. ``port --to V`` (verbs/port.py, the same walk): carried, retired, ported, conflict, blocked; the manifest
   and the new patch files are written as port writes them, and V becomes a target only when every patch
   carried, retired or ported;
3. the conflict workspaces stay where ``refresh`` looks for them (``.patchset/port/ID``) but are not
   ignored by git: the branch carries them, so the pull request is finished from the branch alone (edit
   the file, ``patchset refresh ID --vllm V``, ``patchset upgrade --to V``); once V is a target, the
   workspaces of V are removed, as nothing is left in them to do;
4. for each retired patch, the earliest release on the index from the newest target to V whose pristine tree
   already carries it (its probes hold, or every hunk is there), and that evidence: the trees are opened
   lazily, by bisection, trusting that a fix stays upstream once in (``first_upstream``);
5. with ``prove``, ``test --venv --vllm V`` for every carried or ported patch that names tests, the
   negative control included (the suites and the images run on the pull request).

``validate`` fails while a workspace is unresolved (verbs/validate.py), so such a branch cannot be merged
by accident.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from patchset.core import engine
from patchset.core.manifest import Manifest, Patch, Target
from patchset.core.manifest_load import load_manifest
from patchset.core.series import upstream_evidence
from patchset.errors import PatchsetError
from patchset.runners import Progress, no_progress
from patchset.sources import Source
from patchset.verbs import port as porting
from patchset.verbs.next import newer_releases
from patchset.verbs.port import PortReport, PortStatus
from patchset.verbs.proof import ProofOptions, ProofReport
from patchset.verbs.test import prove_release
from patchset.verbs.trees import Trees
from patchset.versions import Release

BRANCH = "patchset/vllm-{version}"


@dataclass(frozen=True)
class Upstream:
    """Where a retired patch is upstream first: the earliest release from the newest target to V whose tree
    carries it, the evidence there, and the releases whose trees were opened to find it (V's excepted)."""

    release: str
    evidence: str
    looked: tuple[str, ...] = ()


@dataclass
class UpgradeReport:
    """One upgrade: the release, the port that carried the series there, the proof, and what did not run."""

    manifest: str
    vllm: str | None  # None: the index has no release newer than every target
    newer: list[str]  # every release newer than the targets (the index's answer; [] with --to)
    port: PortReport | None = None
    targets_before: list[str] = field(default_factory=list)
    targeted: bool = False  # V is a target after the upgrade
    proof: ProofReport | None = None
    # ported id -> (path, text) of the patch file it was ported from
    old_patches: dict[str, tuple[str, str]] = field(default_factory=dict)
    # retired id -> the earliest release that carries it upstream (V where none before it does)
    upstream: dict[str, Upstream] = field(default_factory=dict)
    not_run: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)  # workspaces of V removed, resolved
    warnings: list[str] = field(default_factory=list)
    dry_run: bool = False
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Nothing conflicts and every proof held (nothing to upgrade to holds too)."""
        if self.port is None:
            return True
        return self.port.ok and (self.proof is None or self.proof.ok)

    @property
    def branch(self) -> str | None:
        return BRANCH.format(version=self.vllm) if self.vllm else None

    @property
    def draft(self) -> bool:
        """The pull request waits on a person: a patch conflicts (or is blocked behind one)."""
        return self.port is not None and not self.port.ok

    def count(self, status: PortStatus) -> int:
        return sum(1 for p in (self.port.patches if self.port else []) if p.result == status)

    @property
    def title(self) -> str:
        """``vLLM 0.35.0: 30 carried, 2 ported, 4 retired, 1 conflict`` (the pull request's title)."""
        if self.vllm is None:
            return "no vLLM release newer than the targets"
        counts = [(self.count(s), s) for s in (PortStatus.CARRIED, PortStatus.PORTED, PortStatus.RETIRED,
                                               PortStatus.CONFLICT, PortStatus.BLOCKED)]
        words = [f"{n} {s}" for n, s in counts if n]
        return f"vLLM {self.vllm}: " + (", ".join(words) if words else "no patch to carry")

    @property
    def next_step(self) -> str:
        """The one command a maintainer runs next."""
        if self.port is None:
            return ""
        first = self.port.first_conflict
        if first is not None and first.workspace:
            return f"patchset refresh {first.id} --vllm {self.vllm}"
        if first is not None or self.dry_run:
            return f"patchset upgrade --to {self.vllm}"
        if self.proof is None:
            return f"patchset test --vllm {self.vllm}"
        return ""


def pick(manifest: Manifest, to: str | None, pre: bool, released: Sequence[str] | None) -> tuple[str | None,
                                                                                                  list[str]]:
    """V and the releases newer than every target (none asked of the index when ``to`` is given)."""
    if to is not None:
        return to, []
    newer = newer_releases(manifest, pre, released)
    return (newer[-1] if newer else None), newer


def upgrade(manifest: Manifest, to: str | None = None, *, pre: bool = False, prove: bool = False,
            dry_run: bool = False, source: str = "pypi", released: Sequence[str] | None = None,
            on_patch: Callable[[str], None] | None = None, progress: Progress = no_progress,
            jobs: int | None = None) -> UpgradeReport:
    """Carry the series to ``to`` (default: the newest release after the targets), as a branch would hold it.

    ``released`` lists the releases that exist; by default the package index says.
    """
    start = time.monotonic()
    version, newer = pick(manifest, to, pre, released)
    report = UpgradeReport(str(manifest.path), version, newer, targets_before=[t.version for t in manifest.targets],
                           dry_run=dry_run)
    if version is None:
        return report
    work = manifest.base / porting.DEFAULT_WORKDIR
    result = porting.port(manifest, version, dry_run=dry_run, source=source, on_patch=on_patch, scratch=False)
    report.port = result
    report.old_patches = _old_patches(manifest, result)
    report.upstream = since(manifest, result, pre, source, newer or released, report.warnings)
    after = manifest if dry_run else load_manifest(manifest.path)
    # port makes V a target exactly when every patch carried, retired or ported (a dry run says it would)
    report.targeted = result.ok or any(Release(t.version) == Release(version) for t in after.targets)
    if not dry_run:
        if result.first_conflict is not None:
            unignore(work.parent)
            report.warnings += ignored_by_git(manifest.base, [Path(r.workspace) for r in result.patches
                                                              if r.workspace])
        elif report.targeted:
            report.removed = remove_workspaces(work, version, manifest.base)
    report.not_run = _not_run(report, prove)
    if prove and not dry_run:
        report.proof = _prove(after, report, source, progress, jobs)
    report.seconds = time.monotonic() - start
    return report


def _old_patches(manifest: Manifest, result: PortReport) -> dict[str, tuple[str, str]]:
    """Each ported patch's file for the release it came from, as it was before the port (for the body)."""
    out = {}
    for r in result.patches:
        if r.result != PortStatus.PORTED or r.from_release is None:
            continue
        choice = manifest.patch(r.id).choice_for(r.from_release)
        if choice is not None and choice.path.is_file():
            out[r.id] = (os.path.relpath(choice.path, manifest.base),
                         choice.path.read_text(encoding="utf-8", errors="surrogateescape"))
    return out


def since(manifest: Manifest, result: PortReport, pre: bool, source: str, released: Sequence[str] | None,
          warnings: list[str]) -> dict[str, Upstream]:
    """Each retired patch's first release upstream (``first_upstream``) among the releases after the newest
    target and before V: ``released`` where the caller knows them, else the index's (asked only when a patch
    retired and the trees come from the index or a git clone; a ``dir:`` source holds no other release)."""
    retired = [r for r in result.patches if r.result == PortStatus.RETIRED]
    if not retired:
        return {}
    v = Release(result.to)
    if released is None and source.partition(":")[0] not in ("pypi", "sdist", "wheel", "git"):
        released = ()
    try:
        between = [x for x in newer_releases(manifest, pre, released) if Release(x) < v]
    except PatchsetError as e:  # V is the release known to carry them
        warnings.append(f"the releases before vLLM {result.to} could not be listed ({e.what()}): each retired "
                        f"patch names vLLM {result.to}, which carries it, not the first release that does")
        between = []
    trees = Trees(manifest, source)
    return {r.id: first_upstream(manifest.patch(r.id), between, trees.get, r.from_release, manifest, result.to,
                                 r.evidence) for r in retired}


def first_upstream(p: Patch, between: Sequence[str], tree: Callable[[str], Source], u: str | None,
                   manifest: Manifest, v: str, evidence: str) -> Upstream:
    """The earliest of ``between`` (releases oldest first, all before ``v``) whose tree carries ``p``, by
    bisection: a fix upstream in one release is taken to stay in the later ones, so only about log2(n) trees
    are opened, each once. ``v`` carries it (``evidence``) when none of them does."""
    found: dict[str, str] = {}
    lo, hi = 0, len(between)
    while lo < hi:
        mid = (lo + hi) // 2
        found[between[mid]] = carries(p, tree, between[mid], u, manifest)
        if found[between[mid]]:
            hi = mid
        else:
            lo = mid + 1
    looked = tuple(x for x in between if x in found)
    if lo == len(between):
        return Upstream(v, evidence, looked)
    return Upstream(between[lo], found[between[lo]], looked)


def carries(p: Patch, tree: Callable[[str], Source], release: str, u: str | None, manifest: Manifest) -> str:
    """The evidence that ``release``'s pristine tree carries ``p`` (``port`` retires on the same: its probes
    hold, or every hunk of its file for ``u`` is there already), or '' when it does not or cannot be read."""
    try:
        src = tree(release)
        pristine = {x.file: src.read(x.file) for x in p.present if src.covers(x.file)}
        said = upstream_evidence(p, src, pristine)
        if said or u is None or p.choice_for(u) is None:
            return said
        pf = porting.covered(p.load(u, manifest.base), src)
        files = {x: src.read(x) for x in pf.touched}
        outcome = engine.apply_patch(files, pf)
    except PatchsetError:
        return ""
    if pf.files and outcome.status == engine.OutcomeStatus.ALREADY:
        return f"reverse-apply: every hunk is already in vllm {release}"
    return ""


def unignore(folder: Path) -> None:
    """The workspaces go on the branch: a ``.gitignore`` that ``port`` wrote to keep them out (patchset's own
    scratch marker, never one a maintainer wrote) is removed."""
    ignore = folder / ".gitignore"
    if ignore.is_file() and ignore.read_bytes() == porting.SCRATCH:
        ignore.unlink()


def ignored_by_git(base: Path, folders: Sequence[Path]) -> list[str]:
    """A workspace git ignores would be left out of the branch: the pull request could not be finished from it.
    Said, not changed: the ignore rule is the maintainer's (a ``.gitignore`` of theirs, or ``info/exclude``)."""
    import git

    try:
        repo = git.Repo(base, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return []
    root = Path(repo.working_tree_dir or base).resolve()
    rels = [str(f.resolve().relative_to(root) / "README.md") for f in folders]
    try:
        ignored = repo.ignored(*rels) if rels else []
    except git.GitCommandError:
        return []
    return [f"{Path(x).parent} is ignored by git: a commit of this upgrade leaves the conflict out (un-ignore "
            f"{Path(x).parent.parent}/ in your .gitignore, or `git add -f` it)" for x in ignored]


def workspaces(work: Path, version: str | None = None) -> list[Path]:
    """The port workspaces under ``work`` (for ``version`` only, when given), in name order."""
    out: list[Path] = []
    if not work.is_dir():
        return out
    for folder in sorted(work.iterdir()):
        meta = folder / porting.WORKSPACE_META
        if not meta.is_file():
            continue
        try:
            to = json.loads(meta.read_text(encoding="utf-8")).get("to")
        except (ValueError, OSError, AttributeError):
            to = None
        if version is None or to == version:
            out.append(folder)
    return out


def remove_workspaces(work: Path, version: str, base: Path) -> list[str]:
    """V is a target: every patch carried, retired or ported, so its workspaces hold nothing left to do."""
    removed = []
    for folder in workspaces(work, version):
        shutil.rmtree(folder)
        removed.append(os.path.relpath(folder, base))
    for empty in (work, work.parent):
        if empty.is_dir() and not any(empty.iterdir()):
            empty.rmdir()
    return removed


def provable(report: UpgradeReport, manifest: Manifest) -> list[str]:
    """The carried and ported patches that name tests."""
    assert report.port is not None
    return [r.id for r in report.port.patches if r.result in (PortStatus.CARRIED, PortStatus.PORTED)
            and manifest.patch(r.id).tests]


def _not_run(report: UpgradeReport, prove: bool) -> list[str]:
    v = report.vllm
    out = []
    if report.dry_run:
        out.append("nothing was written and nothing proven: this was a dry run")
    elif not prove:
        out.append(f"the proof: `patchset test --vllm {v}` (run with --prove, or by the pull request's test job)")
    out.append(f"the manifest's suites on vLLM {v}: the pull request's test job runs them")
    out.append("the images (build, test inside, audit): no GPU here; the pull request's image job runs them "
               "on a GPU runner")
    assert report.port is not None
    stuck = [r.id for r in report.port.patches if r.result in (PortStatus.CONFLICT, PortStatus.BLOCKED)]
    if stuck:
        out.append(f"anything of {', '.join(stuck)} on vLLM {v}: not ported yet")
    return out


def _prove(manifest: Manifest, report: UpgradeReport, source: str, progress: Progress,
           jobs: int | None) -> ProofReport | None:
    """``test --venv --vllm V`` for the carried and ported patches with tests; V taken as a target in memory
    while a patch conflicts (the series on V is then the patches that reached it)."""
    version = report.vllm
    assert version is not None
    ids = provable(report, manifest)
    if not ids:
        report.not_run.insert(0, "the proof: no carried or ported patch names tests")
        return None
    if not any(t.version == version for t in manifest.targets):
        manifest = replace(manifest, targets=(*manifest.targets, Target(version)))
    options = ProofOptions(patch_ids=tuple(ids), suites=False, progress=progress, jobs=jobs)
    return prove_release(manifest, version, source=source, options=options)


def patch_file_change(old: str, new: str, old_name: str, new_name: str) -> str:
    """The old patch file against the ported one: what the merge changed in it (upstream's lines around it)."""
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        old_name, new_name))
