"""`patchset port`: carry the series to release V, patch by patch, by 3-way merge where needed.

For each patch, in series order, on V with the earlier patches already
carried or ported (cumulative, like every other verb):

* ``carried``: it applies as it is (exact or offset): its releases widen to V;
* ``retired``: upstream has it in V: its releases stop before V, the evidence
  goes into a comment on the entry;
* ``ported``: a 3-way merge succeeds (base: U's pristine files with the
  earlier patches; theirs: base plus this patch; ours: V's pristine files with
  the earlier ports) and every merged Python file compiles and would import
  (core/semantic.py), and no merged file carries a second copy of lines
  upstream added itself since U (core/landed.py); a hunk whose lines left their file (a gone file, a
  function moved to another module) lands where they stand exactly in V
  (core/moved.py): a new patch file ``recipes/ID/vllm-V.patch`` is written
  with the old DEP-3 header;
* ``conflict``: the merge conflicts, does not compile, would not import or
  would carry upstream's own lines twice, or moved lines only nearly stand somewhere: V's files with diff3 markers (and
  the nearest place of moved lines) go to ``WORKDIR/ID/`` with a README;
  dependants are ``blocked``.

Nothing is written until every patch is decided; then new patch files and the
manifest are written together, and a failure midway removes what was written.
"""

from __future__ import annotations

import datetime
import functools
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from patchset.core import engine, landed, merge, moved, semantic
from patchset.core.manifest import Manifest, Patch
from patchset.core.manifest_edit import ManifestEditor
from patchset.core.manifest_load import load_manifest
from patchset.core.moved import PyIndex
from patchset.core.patchfile import Hunk, PatchFile, parse_patch, read_patch, split_lines
from patchset.core.series import python_syntax_errors, upstream_evidence
from patchset.core.words import Word
from patchset.errors import PatchsetError
from patchset.files import atomic_write
from patchset.sources import Source
from patchset.verbs import copynotes
from patchset.verbs.next import EARLIER, UpstreamChange, upstream_changes, window_change
from patchset.verbs.trees import Trees, newest_covered_target
from patchset.versions import Release


class PortStatus(Word):
    """What ``port`` did with one patch (``PortedPatch.result``)."""

    CARRIED = "carried"
    RETIRED = "retired"
    PORTED = "ported"
    CONFLICT = "conflict"
    BLOCKED = "blocked"

    @property
    def ok(self) -> bool:
        """The port left nothing for a person to do."""
        return self in (PortStatus.CARRIED, PortStatus.RETIRED, PortStatus.PORTED)


WORKSPACE_META = ".patchset-port.json"
DEFAULT_WORKDIR = ".patchset/port"


@dataclass
class Conflict:
    """A region of a ported patch that needs a person: where it is and what upstream changed there."""

    file: str
    line: int  # of the <<<<<<< marker in the workspace file; 0 when the file does not compile
    message: str
    upstream: str = ""  # the upstream change on those lines (a small diff)


@dataclass
class PortedPatch:
    """What port did with one patch, and the patch file that serves the new release."""

    id: str
    result: PortStatus
    from_release: str | None
    patch: str | None = None  # the patch file that serves V afterwards (new for ported)
    evidence: str = ""
    message: str = ""
    workspace: str | None = None
    conflicts: list[Conflict] = field(default_factory=list)
    files: tuple[str, ...] = ()  # files the patch changes on V
    text: str | None = None  # the new patch file's content (ported)
    # conflict: files of the patch whose merge leaves them as V (with the patches before) has them: V already
    # carries this patch's change there, nothing of it is left to carry in those files
    already_in_v: tuple[str, ...] = ()
    # files the patch creates that copy an upstream file whose copied lines upstream changed, or that upstream
    # removed (core/copies.py), a note each; a person's call, not a refusal (a conflict's are in its workspace
    # README too)
    review: tuple[copynotes.Review, ...] = ()
    # ported: upstream's change (U -> V) at each hunk the merge ported, as ``next`` shows it (``ported_hunks``)
    upstream_change: list[UpstreamChange] = field(default_factory=list)


@dataclass
class PortReport:
    """A port of the series to a new release: each patch, the manifest's change and the files written."""

    to: str
    manifest: str
    patches: list[PortedPatch]
    manifest_diff: str = ""
    written: list[str] = field(default_factory=list)
    dry_run: bool = False
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(p.result.ok for p in self.patches)

    @property
    def first_conflict(self) -> PortedPatch | None:
        """The first patch in series order that conflicts: the one to resolve first, as the patches after it
        are ported onto it."""
        return next((p for p in self.patches if p.result == PortStatus.CONFLICT), None)

    @property
    def next_step(self) -> str:
        """The command the maintainer runs next. While a patch conflicts, V is no target yet (``test --vllm V``
        would refuse it): a real port writes the workspaces after a dry run, else the first conflict's
        ``refresh`` once it is resolved, or ``check`` on the release it came from where it does not apply there
        itself (nothing was merged). With none, the proof: a merge is not one."""
        first = self.first_conflict
        if first is None:
            return f"patchset test --vllm {self.to}"
        if first.workspace:
            return f"patchset refresh {first.id} --vllm {self.to} --workdir {Path(first.workspace).parent}"
        if first.conflicts:  # a dry run: the workspaces are not written yet
            return f"patchset port --to {self.to}"
        return f"patchset check --vllm {first.from_release}"  # it does not apply to its own release: no merge


@dataclass
class Walk:
    """The state of V as the walk goes: the tree with the earlier patches carried or ported."""

    to: str
    ours: dict[str, bytes | None]
    pristine: dict[str, bytes | None]
    bases: dict[str, dict[str, dict[str, bytes | None]]]  # U -> patch id -> tree of U before that patch
    sources: dict[str, Source]
    from_option: str | None = None  # --from, as given
    results: dict[str, PortedPatch] = field(default_factory=dict)
    # patch id -> (V's tree before it, its merged files with markers, U): what its workspace holds
    workspaces: dict[str, tuple[dict[str, bytes | None], dict[str, bytes | None], str]] = \
        field(default_factory=dict)
    package: str = "vllm"
    made_on: dict[str, dict[str, bytes | None]] = field(default_factory=dict)  # U -> files the series creates
    _index: PyIndex | None = None
    _u_index: dict[str, PyIndex] = field(default_factory=dict)

    def index(self) -> PyIndex:
        """V's Python files, read and indexed once per run, and only when code must be followed."""
        if self._index is None:
            self._index = moved.release_index(self.sources[self.to], self.package)
            for path, content in self.ours.items():
                if path.endswith(".py") and content != self.pristine.get(path):
                    self._index.update(path, content)
        return self._index

    def index_u(self, u: str) -> PyIndex:
        """U's Python files and those the series creates there, read once per release and only when a patch
        creates a file that may be a copy."""
        if u not in self._u_index:
            self._u_index[u] = copynotes.u_index(self.sources[u], self.package, self.made_on.get(u, {}))
        return self._u_index[u]

    def read(self, path: str) -> bytes | None:
        """V's file as the walk has it so far (the earlier ports applied)."""
        if path in self.ours:
            return self.ours[path]
        return self.sources[self.to].read(path)

    def adopt(self, path: str) -> None:
        """Make a file the series did not touch part of the walk (code moved into it)."""
        if path not in self.ours:
            content = self.sources[self.to].read(path)
            self.ours[path] = content
            self.pristine[path] = content


def port(manifest: Manifest, to: str, *, from_release: str | None = None, only: Sequence[str] = (),
         workdir: str | Path | None = None, dry_run: bool = False, source: str = "pypi",
         on_patch: Callable[[str], None] | None = None, on_plan: Callable[[str], None] | None = None,
         scratch: bool = True) -> PortReport:
    """Port the series to ``to``; write the new patch files, the manifest and the workspaces unless dry_run.

    ``on_plan`` sees the manifest's diff before anything is written. ``scratch``: the default workspaces'
    folder ignores itself in git (``upgrade`` passes False: its branch carries them to the pull request).
    """
    start = time.monotonic()
    for pid in only:
        manifest.patch(pid)  # unknown ids are bad input, before any work
    walk = prepare(manifest, to, from_release, source)
    work = Path(workdir) if workdir else manifest.base / DEFAULT_WORKDIR
    report = PortReport(to, str(manifest.path), [], dry_run=dry_run)
    notes = ManifestEditor(manifest.path)
    for p in manifest.patches:
        if not in_play(manifest, p, to, from_release, asked=p.id in only, retired=notes.retired_for(p.id)):
            continue
        if on_patch:
            on_patch(p.id)
        r = step(manifest, walk, p, from_release)
        if only and p.id not in only:
            continue  # it still shapes V for the patches after it; it is not reported or rewritten
        if r.result == PortStatus.CONFLICT and p.id in walk.workspaces:  # none for a patch that fails on U itself
            r.workspace = str(work / p.id)
            if dry_run:  # nothing is written: say where a real port puts them, and point nowhere yet
                r.message = (f"{len(r.conflicts)} conflict(s); a port without --dry-run writes them with diff3 "
                             f"markers to {r.workspace}") if r.conflicts else r.message
                r.workspace = None
        report.patches.append(r)
    editor = plan_manifest(manifest, report, walk)
    report.manifest_diff = editor.diff()
    if on_plan:
        on_plan(report.manifest_diff)
    if not dry_run:
        report.written = write(manifest, report, editor, walk, work, scratch)
    report.seconds = time.monotonic() - start
    return report


def in_play(manifest: Manifest, p: Patch, to: str, from_release: str | None, asked: bool = False,
            retired: Sequence[str] = ()) -> bool:
    """Does a port to ``to`` decide ``p``? Only a patch the series still carries towards ``to``.

    A patch whose releases stop before a target that lies between its last release and ``to`` (retired, or
    left out by hand) ended there: porting it again would add a second retirement note, or bring back a
    patch nobody asked for. The same holds for a release a port retired it for (``retired``: the releases
    its ``# retired for`` notes name), target or not. Nor is a patch taken into ``to`` when ``to`` is a
    target already and its releases leave ``to`` out. ``asked``: the user named the patch (``--patch``),
    which overrides all of these.
    """
    u = walk_from(manifest, p, from_release, to)
    if u is None:
        return False
    if asked or p.targets(to):
        return True
    v, last = Release(to), Release(u)
    lo, hi = (last, v) if last < v else (v, last)
    # A commit target is written by hand, with its source, before a port can reach its tree: until a patch
    # targets it, nothing of the series was decided for it (docs/pinned.md).
    fresh = manifest.pinned(to) is not None and not any(q.targets(to) for q in manifest.patches)
    for t in manifest.targets:
        r = Release(t.version)
        if (r == v and not fresh) or (lo < r < hi and not p.targets(t.version)):
            return False
    return not any(lo < Release(w) < hi for w in retired)


def walk_from(manifest: Manifest, p: Patch, from_release: str | None, to: str | None = None) -> str | None:
    """The release ``p`` is ported from: --from, else the newest target it covers, else ``to`` itself when
    its releases name ``to`` (and a file serves it): V's series takes it in, so the port must decide it."""
    if from_release is not None:
        return from_release if p.choice_for(from_release) is not None else None
    u = newest_covered_target(manifest, p)
    if u is None and to is not None and p.targets(to) and p.choice_for(to) is not None:
        return to
    return u


def prepare(manifest: Manifest, to: str, from_release: str | None, source: str) -> Walk:
    """Read the pristine files every patch touches, on V and on each release patches come from."""
    trees = Trees(manifest, source)
    froms = sorted({u for p in manifest.patches if (u := walk_from(manifest, p, from_release, to))})
    paths: set[str] = {probe.file for p in manifest.patches for probe in p.present}
    for p in manifest.patches:
        for c in p.choices:
            paths.update(_load(p, c.path, manifest).touched)
    target = trees.get(to)
    pristine = {x: target.read(x) for x in sorted(paths) if target.covers(x)}
    walk = Walk(to, dict(pristine), pristine, {}, {v: trees.get(v) for v in froms} | {to: target}, from_release,
                package=manifest.pypi.lower().replace("-", "_"))
    for u in froms:
        walk.bases[u] = _bases(manifest, u, trees.get(u), sorted(paths), from_release, to)
    return walk


def _load(p: Patch, path: Path, manifest: Manifest) -> PatchFile:
    rel = os.path.relpath(path, manifest.base)
    return read_patch(path, strip=p.strip, root=p.root, display=rel)


def _bases(manifest: Manifest, u: str, src: Source, paths: list[str],
           from_release: str | None, to: str) -> dict[str, dict[str, bytes | None]]:
    """U's tree before each patch, the earlier patches applied as ``check`` would on U."""
    tree = {x: src.read(x) for x in paths if src.covers(x)}
    out: dict[str, dict[str, bytes | None]] = {}
    for p in manifest.patches:
        out[p.id] = dict(tree)
        if p.choice_for(u) is None or not (p.targets(u) or walk_from(manifest, p, from_release, to) == u):
            continue  # not part of U's series
        if p.present and all(src.covers(x.file) and x.holds(tree.get(x.file)) for x in p.present):
            continue  # upstream on U: U's own files already carry it
        pf = covered(p.load(u, manifest.base), src)
        outcome = engine.apply_patch(tree, pf, max_fuzz=p.fuzz)
        if outcome.ok:
            tree.update(outcome.files)
    return out


def covered(pf: PatchFile, src: Source) -> PatchFile:
    files = tuple(f for f in pf.files if all(src.covers(x) for x in f.touched))
    return PatchFile(pf.path, pf.sha256, pf.header, files)


def step(manifest: Manifest, walk: Walk, p: Patch, from_release: str | None) -> PortedPatch:
    """Decide one patch on V and move ``walk.ours`` past it."""
    u = walk_from(manifest, p, from_release, walk.to)
    assert u is not None
    r = _decide(manifest, walk, p, u)
    if r.result in (PortStatus.CARRIED, PortStatus.PORTED):
        r.review = _copies(manifest, walk, walk.ours, r.files, walk.bases[u][p.id], u)
    elif r.result == PortStatus.CONFLICT and p.id in walk.workspaces:  # for the person who resolves it
        merged = walk.workspaces[p.id][1]
        r.review = _copies(manifest, walk, merged, tuple(merged), walk.bases[u][p.id], u)
    walk.results[p.id] = r
    return r


def _copies(manifest: Manifest, walk: Walk, files: dict[str, bytes | None], paths: Sequence[str],
            base: dict[str, bytes | None], u: str) -> tuple[copynotes.Review, ...]:
    """The files of ``paths`` the patch creates (V ships none of them), as ``files`` has them, that copy a U file
    whose copied lines V changed, or that V removed."""
    made = {f: files[f] or b"" for f in paths if f.endswith(".py") and base.get(f) is None
            and walk.pristine.get(f) is None and files.get(f) is not None}
    if not made:
        return ()
    if u not in walk.made_on:
        walk.made_on[u] = copynotes.series_made(manifest, u, walk.sources[u])
    own = frozenset(k for k in walk.ours if walk.pristine.get(k) is None)  # what the series creates on V
    return copynotes.notes(made, u, walk.to, walk.sources[u], walk.sources[walk.to], walk.made_on[u],
                           walk.index_u(u), walk.index, own)


def _decide(manifest: Manifest, walk: Walk, p: Patch, u: str) -> PortedPatch:
    stuck = (PortStatus.CONFLICT, PortStatus.BLOCKED)
    broken = [d for d in p.after if d in walk.results and walk.results[d].result in stuck]
    if broken:
        return PortedPatch(p.id, PortStatus.BLOCKED, u, message="comes after " + ", ".join(
            f"{d} ({walk.results[d].result})" for d in broken))
    target = walk.sources[walk.to]
    evidence = upstream_evidence(p, target, walk.pristine)
    if evidence:
        return PortedPatch(p.id, PortStatus.RETIRED, u, evidence=evidence)
    own = p.choice_for(walk.to) or p.choice_for(u)
    assert own is not None
    pf = covered(_load(p, own.path, manifest), target)
    outcome = engine.apply_patch(walk.ours, pf, max_fuzz=0)
    rel = os.path.relpath(own.path, manifest.base)
    placed = outcome.ok and all(h.status in (engine.HunkStatus.EXACT, engine.HunkStatus.OFFSET) for h in outcome.hunks)
    later = functools.cache(lambda: later_adds(manifest, walk, p))
    if (placed and not compile_errors(outcome.files) and not _carry_import_errors(manifest, walk, p, u, outcome.files,
                                                                                  later)
            and not twice_errors(walk, pf, walk.bases[u][p.id], outcome.files, u)):
        walk.ours.update(outcome.files)
        return PortedPatch(p.id, PortStatus.CARRIED, u, patch=rel, files=tuple(sorted(outcome.files)))
    untouched = all(walk.ours.get(x) == walk.pristine.get(x) for x in pf.touched)
    if outcome.status == engine.OutcomeStatus.ALREADY and untouched:
        return PortedPatch(p.id, PortStatus.RETIRED, u, evidence="reverse-apply: every hunk is already in "
                           f"vllm {walk.to} (weak evidence: add a present probe)")
    return _merge(manifest, walk, p, u)


def _carry_import_errors(manifest: Manifest, walk: Walk, p: Patch, u: str, files: dict[str, bytes | None],
                         later: Callable[[], dict[str, list[bytes]]]) -> list[Conflict]:
    """``import_errors`` of the patch applied as it is, judged as the 3-way merge is: a name the patched file
    already lacked on U (the old patched file) is no new problem. U's patched files are made only when V's
    have a problem, so a patch that imports fine costs nothing more."""
    found = import_errors(walk, files, {}, None, later)
    if not found:
        return found
    old = engine.apply_patch(walk.bases[u][p.id], covered(p.load(u, manifest.base), walk.sources[u]), max_fuzz=p.fuzz)
    return import_errors(walk, files, old.files if old.ok else {}, None, later)


@dataclass
class _Merged:
    """One patch's merge as it goes: the files it made (markers included), their conflicts, the moves."""

    files: dict[str, bytes | None] = field(default_factory=dict)
    conflicts: list[Conflict] = field(default_factory=list)
    moves: list[str] = field(default_factory=list)


def _merge(manifest: Manifest, walk: Walk, p: Patch, u: str) -> PortedPatch:
    """3-way merge ``p`` (as made for ``u``) into V; hunks whose lines left their file follow them."""
    pf = covered(p.load(u, manifest.base), walk.sources[u])
    base = walk.bases[u][p.id]
    leads: dict[str, list[str]] = {}
    pf, away, unsure = _left_their_file(walk, pf, base, leads, u)
    theirs_out = engine.apply_patch(base, pf, max_fuzz=p.fuzz)
    if not theirs_out.ok:
        return PortedPatch(p.id, PortStatus.CONFLICT, u, message=f"it does not apply to vllm {u} itself "
                           f"({theirs_out.message}): fix it there first (patchset check --vllm {u})")
    m = _Merged()
    _merge_files(walk, pf, base, theirs_out.files, (f"vllm {walk.to}", f"vllm {u}", f"{p.id} on {u}"), m)
    _place_away(walk, away, m)  # after the merges: a hunk may move into a file the patch also changes
    _show_unsure(walk, unsure, m)
    # Every file that merged cleanly is checked, even when another file conflicts: the workspace
    # README then says which of the clean ones would not compile or import either.
    clean = {k: v for k, v in m.files.items() if k not in {c.file for c in m.conflicts}}
    m.conflicts += compile_errors(clean)
    broken = {c.file for c in m.conflicts}
    m.conflicts += import_errors(walk, {k: v for k, v in clean.items() if k not in broken}, theirs_out.files,
                                 m.files, functools.cache(lambda: later_adds(manifest, walk, p)))
    broken = {c.file for c in m.conflicts}
    m.conflicts += twice_errors(walk, pf, base, {k: v for k, v in clean.items() if k not in broken}, u)
    for c in m.conflicts:
        if c.file in leads and c.message == "conflict":
            c.message += ": " + "; ".join(leads.pop(c.file))
    return _merge_result(manifest, walk, p, u, pf, m)


def _merge_files(walk: Walk, pf: PatchFile, base: dict[str, bytes | None], theirs: dict[str, bytes | None],
                 labels: tuple[str, str, str], m: _Merged) -> None:
    """Each file the patch changes, merged in place; a file gone from V, hunk by hunk where its lines went."""
    target = walk.sources[walk.to]
    for path in sorted(theirs):
        if not target.covers(path):
            continue
        was = base.get(path)
        if walk.ours.get(path) is None and was is not None and theirs[path] is not None:
            found, said = _follow_file(walk, pf, path, was, m.files, labels[0])
            m.conflicts += found
            m.moves += said
            continue
        content, found = _merge_file(path, was, theirs[path], walk.ours.get(path), labels)
        m.files[path] = content
        m.conflicts += found


def _place_away(walk: Walk, away: Away, m: _Merged) -> None:
    """Hunks whose old lines left their file for one place in V: spliced in there, else a conflict there."""
    for path, h, where in away:
        dest = where.place.file
        walk.adopt(dest)
        content = m.files.get(dest, walk.ours.get(dest))
        spliced = _splice(content, *moved.core(h.kinds, h.keys)) if content is not None else None
        if spliced is None:
            m.conflicts.append(Conflict(dest, where.place.line,
                                        f"hunk {h.number} of {path}: {where}; merge it by hand"))
            m.files.setdefault(dest, content)
            continue
        m.files[dest] = spliced
        m.moves.append(f"hunk {h.number} moved from {path} to {dest}:{where.place.line} ({where.evidence})")


def _show_unsure(walk: Walk, unsure: Away, m: _Merged) -> None:
    """Hunks whose old lines stand in several places: each a conflict; the workspace shows its file and each
    candidate as V has them."""
    for path, h, where in unsure:
        m.conflicts.append(Conflict(path, 0, f"hunk {h.number}'s lines are gone from {path} and {where.evidence}; "
                                    "merge it by hand where it belongs"))
        for x in [path, *(pl.file for pl in where.candidates[:4])]:
            walk.adopt(x)
            m.files.setdefault(x, walk.ours.get(x))


def _merge_result(manifest: Manifest, walk: Walk, p: Patch, u: str, pf: PatchFile, m: _Merged) -> PortedPatch:
    """A conflict (its workspace kept for writing), retired (V has every change already) or ported (the new
    patch file, verified to reproduce the merge)."""
    if m.conflicts:
        _explain(m.conflicts, p, u, walk, pf)
        walk.workspaces[p.id] = (dict(walk.ours), m.files, u)
        conflicted = {c.file for c in m.conflicts}
        already = tuple(sorted(f.path for f in pf.files if f.path not in conflicted and f.path in m.files
                               and m.files[f.path] is not None and m.files[f.path] == walk.ours.get(f.path)))
        return PortedPatch(p.id, PortStatus.CONFLICT, u, conflicts=m.conflicts, files=tuple(sorted(m.files)),
                           already_in_v=already,
                           message=f"{len(m.conflicts)} conflict(s); resolve them in the workspace, then run "
                                   f"patchset refresh {p.id} --vllm {walk.to}")
    changed = {k: v for k, v in m.files.items() if v != walk.ours.get(k)}
    if not changed:
        return PortedPatch(p.id, PortStatus.RETIRED, u,
                           evidence=f"3-way merge: vllm {walk.to} already has every change")
    text = regenerate(p, manifest, u, walk.to, walk.ours, changed, how="3-way merge")
    verify(text, p, walk.ours, changed)
    upstream = ported_hunks(manifest, walk, p, u)
    walk.ours.update(changed)
    rel = new_patch_path(manifest, p, walk.to)
    return PortedPatch(p.id, PortStatus.PORTED, u, patch=rel, files=tuple(sorted(changed)), text=text,
                       message="; ".join(m.moves), upstream_change=upstream)


def ported_hunks(manifest: Manifest, walk: Walk, p: Patch, u: str) -> list[UpstreamChange]:
    """Upstream's change from U to V at each hunk the merge ported: the hunks of the patch made for U that do not
    land as they are on V with the earlier patches (every hunk, where all land and the merge was for another
    reason), each as ``next`` shows a broken hunk (verbs/next.py's ``upstream_changes``)."""
    pf = covered(p.load(u, manifest.base), walk.sources[u])
    tried = engine.apply_patch(walk.ours, pf, max_fuzz=0).hunks
    landed_as_is = (engine.HunkStatus.EXACT, engine.HunkStatus.OFFSET)
    ported = [h for h in tried if h.status not in landed_as_is] or list(tried)
    return upstream_changes(p, u, walk.to, ported, walk.sources.__getitem__, manifest, lambda _v: walk.index())


Away = list[tuple[str, Hunk, moved.Moved]]


def _left_their_file(walk: Walk, pf: PatchFile, base: dict[str, bytes | None],
                     leads: dict[str, list[str]], u: str) -> tuple[PatchFile, Away, Away]:
    """The patch without the hunks whose lines left their file for another one in V (a function moved
    between modules), those hunks with the one place their old lines stand now, and those whose old lines
    stand exactly in several places (ambiguous: each a conflict). A hunk whose lines only nearly stand in
    another file, or whose file still holds some of its context, stays, and ``leads`` gets that place for
    its conflict's message."""
    away: Away = []
    unsure: Away = []
    files = []
    for f in pf.files:
        ours = walk.ours.get(f.path)
        if f.old_path != f.new_path or ours is None or not f.path.endswith(".py"):
            files.append(f)
            continue
        keep = []
        for h in f.hunks:
            stayed = moved.stayed(h.kinds, h.keys, ours) if h.old_keys else 1.0
            found = moved.follow(walk.index(), f.path, moved.core(h.kinds, h.keys)[0], base.get(f.path), False, ours,
                                 walk.sources[u].read) if stayed < moved.STAYED else None
            if found is not None and found.candidates:  # several places: refuse rather than guess
                unsure.append((f.path, h, found))
                continue
            # Some of its context still stands in its own file: the lines may have been edited there
            # rather than moved, so another file holding them is a lead for the conflict, not a place to merge.
            if found is not None and found.sure and not stayed and found.place.file != f.path:
                away.append((f.path, h, found))
                continue
            if found is not None and found.place.file != f.path:
                leads.setdefault(f.path, []).append(f"hunk {h.number}'s lines may have moved: {found}")
            keep.append(h)
        if keep:
            files.append(replace(f, hunks=tuple(keep)))
    if not away and not unsure:
        return pf, [], []
    return PatchFile(pf.path, pf.sha256, pf.header, tuple(files)), away, unsure


def _follow_file(walk: Walk, pf: PatchFile, path: str, old: bytes, merged: dict[str, bytes | None],
                 ours_label: str) -> tuple[list[Conflict], list[str]]:
    """``path`` is gone from V: each hunk goes where its old lines stand now, when they stand there exactly.

    What moved lands in ``merged`` (under its new path); a hunk whose lines are not found, or only
    nearly, is a conflict naming the nearest place, whose file goes to the workspace as V has it.
    """
    conflicts: list[Conflict] = []
    said: list[str] = []
    hunks = [h for f in pf.files if f.path == path for h in f.hunks]
    for h in hunks:
        old_core, new_core = moved.core(h.kinds, h.keys)
        found = moved.follow(walk.index(), path, old_core, old, True)
        if found is None:
            weak = moved.lead(walk.index(), path, old)
            conflicts.append(Conflict(path, 0, f"{ours_label} has no {path} (removed or moved upstream) and hunk "
                                      f"{h.number}'s lines are nowhere in it: the code is gone, merge it by hand"
                                      + (f"; {weak}" if weak else "")))
            continue
        dest = found.place.file
        walk.adopt(dest)
        content = merged.get(dest, walk.ours.get(dest))
        spliced = _splice(content, old_core, new_core) if found.sure and content is not None else None
        if spliced is None:
            merged.setdefault(dest, content)  # the workspace shows the place as V has it
            conflicts.append(Conflict(dest, found.place.line, f"hunk {h.number} of {path}: {found}; "
                                      "merge it by hand", "\n".join(found.place.differ)))
            continue
        merged[dest] = spliced
        walk.index().update(dest, spliced)
        note = f"moved from {path} to {dest}"
        said.append(f"hunk {h.number} {note}:{found.place.line} ({found.evidence})")
    return conflicts, said


def _splice(content: bytes, old: list[bytes], new: list[bytes]) -> bytes | None:
    """``content`` with the one place of the lines ``old`` replaced by ``new``; None unless exactly one."""
    lines = split_lines(content)
    k = len(old)
    places = [i for i in range(len(lines) - k + 1) if lines[i] == old[0] and lines[i:i + k] == old] if k else []
    if len(places) != 1:
        return None
    i = places[0]
    return b"".join(lines[:i] + list(new) + lines[i + k:])


def import_errors(walk: Walk, files: dict[str, bytes | None], old_patched: dict[str, bytes | None],
                  tree: dict[str, bytes | None] | None = None,
                  later: Callable[[], dict[str, list[bytes]]] | None = None) -> list[Conflict]:
    """A merged Python file that would not import (a name nothing defines, a vllm import that does not
    resolve in V) is a conflict too, even when it merged cleanly and compiles.

    Imports resolve against ``tree`` (every file of this merge, conflicted ones included: a name the
    patch adds to a module that conflicts is not missing, that module is) and then V as the walk has it.
    A name a later patch of the series adds to that file (``later``: file -> lines added) is not missing
    either: the file is judged as the series leaves it, and that patch's own port decides it."""
    out = []
    merged = files if tree is None else tree

    def read(x: str) -> bytes | None:
        return merged[x] if x in merged else walk.read(x)

    for path, content in sorted(files.items()):
        if content is None or not path.endswith(".py") or content == walk.ours.get(path):
            continue
        found = semantic.problems(content, walk.pristine.get(path), old_patched.get(path), read, path,
                                  lambda name: walk.index().where_defined(name), walk.to)
        if found and later is not None:
            found = semantic.unpromised(found, later())
        if found:
            out.append(Conflict(path, found[0].line, semantic.describe(found)))
    return out


def twice_errors(walk: Walk, pf: PatchFile, base: Mapping[str, bytes | None], files: Mapping[str, bytes | None],
                 u: str) -> list[Conflict]:
    """A file that merged (or applied) cleanly but carries a second copy of lines upstream added itself between
    U and V (a backport that landed at another place: core/landed.py) is a conflict: its merge is not the
    maintainer's port."""
    out = []
    for f in pf.files:
        content = files.get(f.path)
        if content is None or content == walk.ours.get(f.path):
            continue
        found = landed.carried_twice([(h.number, h.kinds, h.keys) for h in f.hunks], base.get(f.path),
                                     walk.ours.get(f.path), content, f.path)
        if found:
            out.append(Conflict(f.path, found[0].line, landed.describe(f.path, found, walk.to, u)))
    return out


def later_adds(manifest: Manifest, walk: Walk, p: Patch) -> dict[str, list[bytes]]:
    """file -> the lines the patches after ``p`` in the series add to it (each from the file it would be
    ported from)."""
    out: dict[str, list[bytes]] = {}
    after = manifest.patches[[q.id for q in manifest.patches].index(p.id) + 1:]
    for q in after:
        u = walk_from(manifest, q, walk.from_option, walk.to)
        choice = q.choice_for(walk.to) or (q.choice_for(u) if u else None)
        if choice is None:
            continue
        for path, lines in semantic.added_lines(_load(q, choice.path, manifest).files).items():
            out.setdefault(path, []).extend(lines)
    return out


def _merge_file(path: str, base: bytes | None, theirs: bytes | None, ours: bytes | None,
                labels: tuple[str, str, str]) -> tuple[bytes | None, list[Conflict]]:
    if theirs is None:  # the patch deletes the file
        if ours == base or ours is None:
            return None, []
        return ours, [Conflict(path, 0, f"the patch deletes {path} but {labels[0]} changed it")]
    if ours is None:
        if base is None:
            return theirs, []
        return None, [Conflict(path, 0, f"{labels[0]} has no {path} (removed or moved upstream)")]
    m = merge.merge3(ours, base or b"", theirs, labels)
    if m.clean:
        return m.content, []
    starts = [n for n in merge.marker_lines(m.content) if m.content.splitlines()[n - 1].startswith(b"<<<<<<<")]
    return m.content, [Conflict(path, n, "conflict") for n in starts]


def compile_errors(files: dict[str, bytes | None]) -> list[Conflict]:
    """A clean merge of a Python file that does not compile is a conflict too."""
    return [Conflict(path, e.lineno or 0, f"merged cleanly but does not compile: {e.msg}")
            for path, e in python_syntax_errors(files)]


def _explain(conflicts: list[Conflict], p: Patch, u: str, walk: Walk, pf: PatchFile) -> None:
    """Attach to each conflict the upstream change (U → V) on the hunk nearest to it."""
    old_src = walk.sources[u]
    for c in conflicts:
        hunks = [h for f in pf.files if f.path == c.file for h in f.hunks]
        if not hunks:
            continue
        best = min(hunks, key=lambda h: abs(h.source_start - c.line))
        # a merge conflict where upstream changed nothing: an earlier patch of the series did; a clean merge
        # refused for what it would do (not import, upstream's lines twice) says nothing of the kind
        because = EARLIER if c.message.startswith("conflict") else ""
        change = window_change(c.file, best, u, walk.to, old_src.read(c.file), walk.pristine.get(c.file), because)
        c.upstream = change.diff or change.summary


def new_patch_path(manifest: Manifest, p: Patch, version: str) -> str:
    """recipes/ID/vllm-V.patch, beside the patch file it replaces."""
    folder = p.choices[-1].path.parent if p.choices else manifest.base / manifest.recipes / p.id
    return os.path.relpath(folder / f"vllm-{version}.patch", manifest.base)


def regenerate(p: Patch, manifest: Manifest, u: str, to: str, before: dict[str, bytes | None],
               after: dict[str, bytes | None], how: str) -> str:
    """The patch file turning ``before`` into ``after``, under the old patch's DEP-3 header."""
    body = merge.render_diff({k: before.get(k) for k in after}, after, strip=p.strip, root=p.root)
    choice = p.choice_for(u) or p.choices[-1]
    old = choice.path.read_text(encoding="utf-8", errors="surrogateescape")
    return header_of(old, f"Ported: from vLLM {u} to {to} by {how} (patchset)") + body


def verify(text: str, p: Patch, before: dict[str, bytes | None], after: dict[str, bytes | None]) -> None:
    """The patch we write must turn ``before`` into ``after`` with every hunk exact, or we write nothing."""
    pf = parse_patch(text.encode("utf-8", errors="surrogateescape"), name="(regenerated)", strip=p.strip,
                     root=p.root)
    outcome = engine.apply_patch(before, pf)
    if not outcome.ok or any(h.status != engine.HunkStatus.EXACT for h in outcome.hunks) \
            or any(outcome.files.get(k) != v for k, v in after.items()):
        raise PatchsetError(f"patch {p.id}: the regenerated patch does not reproduce the merged files "
                            f"({outcome.message or 'content differs'}): this is a bug in patchset")


DIFF_START = re.compile(r"^(diff --git |Index: |--- (?!$))", re.M)


def source_date() -> datetime.date:
    """Today, or the day ``SOURCE_DATE_EPOCH`` names (reproducible-builds.org's variable): the upgrade workflow
    sets it to its base commit's time, so a run on another day writes the same patch files and leaves the pull
    request as it is."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch.isdigit():
        return datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc).date()
    return datetime.date.today()


def header_of(patch_text: str, note: str | None = None, today: datetime.date | None = None) -> str:
    """The DEP-3 header of a patch file, Last-Update bumped and ``note`` added before it."""
    m = DIFF_START.search(patch_text)
    head = patch_text[:m.start()] if m else ""
    day = (today or source_date()).isoformat()
    lines = head.splitlines(keepends=True)
    out: list[str] = []
    noted = note is None
    for line in lines:
        if line.startswith("Ported: ") and note is not None:
            continue  # one line says where this file came from: the latest port
        if line.startswith("Last-Update:"):
            if not noted:
                out.append(note + "\n")  # type: ignore[operator]
                noted = True
            out.append(f"Last-Update: {day}\n")
            continue
        out.append(line)
    if not noted:
        sep = next((i for i, ln in enumerate(out) if ln.strip() == "---"), len(out))
        out[sep:sep] = [note + "\n", f"Last-Update: {day}\n"]  # type: ignore[operator]
    return "".join(out)


def plan_manifest(manifest: Manifest, report: PortReport, walk: Walk) -> ManifestEditor:
    """The manifest as it will be after this port: only decided patches change."""
    editor = ManifestEditor(manifest.path)
    for r in report.patches:
        if r.result == PortStatus.CARRIED:
            assert r.from_release is not None
            editor.carry(r.id, report.to, r.from_release)
        elif r.result == PortStatus.RETIRED:
            editor.retire(r.id, report.to, r.evidence)
        elif r.result == PortStatus.PORTED:
            assert r.patch is not None
            editor.add_patch_file(r.id, report.to, r.patch)
            editor.include(r.id, report.to)
    if report.ok and len(report.patches) == len([p for p in manifest.patches if p.id in walk.results]):
        editor.add_target(report.to)  # only a finished series makes V a target that check holds to
    return editor


def write(manifest: Manifest, report: PortReport, editor: ManifestEditor, walk: Walk, work: Path,
          scratch: bool = True) -> list[str]:
    """New patch files, the manifest and the workspaces; on any failure, none of the first two."""
    created: list[Path] = []
    written: list[str] = []
    # Workspaces first: they live outside the manifest and recipes, and a refused one stops the port
    # before anything the series is made of has changed.
    conflicts = [r for r in report.patches
                 if r.result == PortStatus.CONFLICT and r.workspace and r.id in walk.workspaces]
    for r in conflicts:
        _check_workspace(Path(r.workspace or ""), walk.workspaces[r.id][1])
    if conflicts and scratch and work == manifest.base / DEFAULT_WORKDIR:
        written += _ignored_by_git(work.parent)
    for r in conflicts:
        written += write_workspace(Path(r.workspace or ""), r, walk, report.to)
    try:
        for r in report.patches:
            if r.result == PortStatus.PORTED and r.text is not None and r.patch:
                dest = manifest.base / r.patch
                if dest.exists() and dest.read_text(encoding="utf-8", errors="surrogateescape") != r.text:
                    raise PatchsetError(f"{r.patch} exists and differs from the port",
                                        hint="move it away or delete it, then port again")
                if not dest.exists():
                    atomic_write(dest, r.text.encode("utf-8", errors="surrogateescape"))
                    created.append(dest)
                written.append(r.patch)
        saved = save_manifest(manifest, editor)
        written += [saved] if saved else []
    except BaseException:
        for f in created:
            f.unlink(missing_ok=True)
        raise
    return written


SCRATCH = b"# Written by patchset port: conflict workspaces are scratch, never part of the fork's commits.\n*\n"


def _ignored_by_git(folder: Path) -> list[str]:
    """The default workspaces' folder (``.patchset/`` beside the manifest) ignores itself in git, as pytest's and
    mypy's caches do: ``git add -A`` after a port must not commit copies of vLLM's files. A ``.gitignore`` already
    there is the maintainer's and is left alone; a ``--workdir`` of their own is theirs to place."""
    ignore = folder / ".gitignore"
    if ignore.exists():
        return []
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write(ignore, SCRATCH)
    return [str(ignore)]


def _check_workspace(folder: Path, merged: dict[str, bytes | None]) -> None:
    """Never overwrite a conflict the maintainer may be resolving."""
    for path, content in merged.items():
        f = folder / path
        if f.is_file() and f.read_bytes() != content:
            raise PatchsetError(f"{f} differs from what this port would write there (resolved by hand?)",
                                hint=f"run patchset refresh {folder.name} first, or delete {folder} to start over")


def save_manifest(manifest: Manifest, editor: ManifestEditor) -> str | None:
    """Write the edited manifest when it changed and still loads; its path as written down, else None."""
    text = editor.text()
    if text == editor.original:
        return None
    check_manifest(manifest.path, text)
    atomic_write(manifest.path, text.encode("utf-8"))
    return os.path.relpath(manifest.path, manifest.base)


def check_manifest(path: Path, text: str) -> None:
    """The rewritten manifest must load: a port never leaves an invalid series behind."""
    fd, tmp = tempfile.mkstemp(prefix=".port-", suffix=".yaml", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        load_manifest(tmp)
    finally:
        os.unlink(tmp)


def write_workspace(folder: Path, r: PortedPatch, walk: Walk, to: str) -> list[str]:
    """V's files with the earlier ports and this patch's merge (markers included), a README and metadata."""
    _, merged, u = walk.workspaces[r.id]
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for path, content in sorted(merged.items()):
        f = folder / path
        if content is None:
            f.unlink(missing_ok=True)
            continue
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(content)
        out.append(str(f))
    meta = {"id": r.id, "from": u, "from_option": walk.from_option, "to": to, "files": sorted(merged)}
    (folder / WORKSPACE_META).write_text(json.dumps(meta, indent=2) + "\n")
    (folder / "README.md").write_text(workspace_readme(r, to, folder))
    return out + [str(folder / "README.md")]


def _upstream_block(diff: str) -> list[str]:
    """A README list item's "what upstream changed there" diff block (none for no diff)."""
    if not diff:
        return []
    return ["", "  What upstream changed there:", "", "  ```diff", *("  " + x for x in diff.rstrip("\n").splitlines()),
            "  ```", ""]


def workspace_readme(r: PortedPatch, to: str, folder: Path) -> str:
    lines = [f"# {r.id}: port from vLLM {r.from_release} to {to} conflicts", "",
             f"This folder holds vLLM {to}'s files with the earlier patches of the series applied and "
             f"this patch merged into them. Conflicts are marked diff3-style: `<<<<<<< vllm {to}` "
             f"(what {to} has), `||||||| vllm {r.from_release}` (what the patch was written against), "
             f"`>>>>>>> {r.id} on {r.from_release}` (what the patch made of it).", "",
             "## Conflicts", ""]
    for c in r.conflicts:
        where = f"{c.file}:{c.line}" if c.line else c.file
        lines.append(f"- `{where}`: {c.message}")
        lines += _upstream_block(c.upstream)
    if r.already_in_v:
        lines += ["", f"## Already in vLLM {to}", "",
                  f"This patch's change to these files is already in vLLM {to} (with the patches before it): "
                  "the merge leaves each as it is there, and nothing of it is left to carry.", ""]
        lines += [f"- `{f}`" for f in r.already_in_v]
    if r.review:
        lines += ["", "## To review", "",
                  "Files this patch creates that copy a file upstream changed where the copy follows it, or "
                  "removed: bring each copy up to date, or keep it as it is.", ""]
        for x in r.review:
            lines += [f"- {x.message}", *_upstream_block(x.diff)]
    lines += ["", "## Then", "",
              "Edit the files until no marker is left and every Python file compiles, then run:", "",
              f"    patchset refresh {r.id} --vllm {to} --workdir {folder.parent}", "",
              f"and `patchset port --to {to}` again to carry the patches after it. "
              f"A port is proven by its tests, not by merging: `patchset test --vllm {to}`.", ""]
    return "\n".join(lines)
