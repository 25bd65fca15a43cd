"""`patchset refresh`: write a patch file for V from what is on V.

Two cases, as a maintainer meets them:

* after ``port`` left a conflict in ``WORKDIR/ID/`` and the maintainer resolved
  it: the patch is regenerated from the workspace against V's pristine files
  plus the earlier patches, under the old header, and the manifest names it
  for V, as ``port`` does for a clean merge;
* with no workspace: a patch that applies to V only with offsets is rewritten
  so that every hunk is exact there (quilt's refresh), header kept.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from patchset.core import engine, merge
from patchset.core.manifest import Manifest, Patch
from patchset.core.manifest_edit import ManifestEditor
from patchset.core.words import Word
from patchset.errors import PatchsetError
from patchset.files import atomic_write
from patchset.verbs import port as porting


class RefreshMode(Word):
    """What ``refresh`` did to the patch file (``RefreshReport.mode``)."""

    WORKSPACE = "workspace"  # regenerated from a resolved conflict
    OFFSETS = "offsets"  # line numbers made exact
    EXACT = "exact"  # nothing to do


@dataclass
class RefreshReport:
    """A refreshed patch file: how it was made again and the manifest's change."""

    id: str
    vllm: str
    mode: RefreshMode
    patch: str | None
    message: str
    manifest_diff: str = ""
    written: list[str] = field(default_factory=list)

    ok = True  # a refresh that cannot be done raises: bad input, exit 2

    @property
    def next_step(self) -> str:
        """After a resolved conflict, port again: it carries the patches after this one, and V becomes a target
        once none conflicts. A refresh of line numbers leaves nothing to run."""
        return f"patchset port --to {self.vllm}" if self.mode == RefreshMode.WORKSPACE else ""


def refresh(manifest: Manifest, patch_id: str, version: str, *, workdir: str | Path | None = None,
            source: str = "pypi", dry_run: bool = False) -> RefreshReport:
    p = manifest.patch(patch_id)
    folder = (Path(workdir) if workdir else manifest.base / porting.DEFAULT_WORKDIR) / patch_id
    meta = folder / porting.WORKSPACE_META
    ask = _Ask(manifest, p, version, source, dry_run)
    if meta.is_file():
        return _from_workspace(ask, folder, json.loads(meta.read_text()))
    return _exact_offsets(ask)


@dataclass(frozen=True)
class _Ask:
    """One refresh: the patch, the release, where its pristine tree comes from, and whether to write."""

    manifest: Manifest
    patch: Patch
    version: str
    source: str
    dry_run: bool


def _walk_to(manifest: Manifest, p: Patch, version: str, from_release: str | None,
             source: str) -> porting.Walk:
    """V's tree with every patch before ``p`` carried or ported, as ``port`` would have left it."""
    walk = porting.prepare(manifest, version, from_release, source)
    for q in manifest.patches:
        if q.id == p.id:
            return walk
        if not porting.in_play(manifest, q, version, from_release):
            continue
        r = porting.step(manifest, walk, q, from_release)
        if r.result in (porting.PortStatus.CONFLICT, porting.PortStatus.BLOCKED) and q.id in p.after:
            raise PatchsetError(f"{p.id} comes after {q.id}, which is a {r.result} on vLLM {version}",
                                patch=p.id, hint=f"resolve {q.id} first (patchset refresh {q.id} --vllm {version})")
    raise AssertionError("unreachable: p is in the series")


def _from_workspace(ask: _Ask, folder: Path, meta: dict) -> RefreshReport:
    manifest, p, version = ask.manifest, ask.patch, ask.version
    if meta.get("to") != version:
        raise PatchsetError(f"{folder} holds a port to vLLM {meta.get('to')}, not {version}", patch=p.id)
    files = _resolved_files(p, folder, meta)
    walk = _walk_to(manifest, p, version, meta.get("from_option"), ask.source)
    changed = {k: v for k, v in files.items() if v != walk.ours.get(k)}
    if not changed:
        raise PatchsetError(f"the workspace changes nothing on vLLM {version}", file=str(folder), patch=p.id,
                            hint=f"if upstream has the fix, retire it: patchset port --to {version}")
    u = meta["from"]
    text = porting.regenerate(p, manifest, u, version, walk.ours, changed,
                              how="3-way merge, conflicts resolved by hand")
    porting.verify(text, p, walk.ours, changed)
    rel = porting.new_patch_path(manifest, p, version)
    editor = ManifestEditor(manifest.path)
    if os.path.abspath(manifest.base / rel) not in {os.path.abspath(c.path) for c in p.choices}:
        editor.add_patch_file(p.id, version, rel)
    editor.include(p.id, version)
    report = RefreshReport(p.id, version, RefreshMode.WORKSPACE, rel,
                           f"regenerated from {folder} ({len(changed)} file(s))", editor.diff())
    if not ask.dry_run:
        report.written = _write(manifest, rel, text, editor)
    return report


def _resolved_files(p: Patch, folder: Path, meta: dict) -> dict[str, bytes | None]:
    """The workspace's files, once every conflict is resolved by hand and every module compiles."""
    files: dict[str, bytes | None] = {}
    for path in meta["files"]:
        f = folder / path
        content = f.read_bytes() if f.is_file() else None
        markers = merge.marker_lines(content or b"")
        if markers:
            raise PatchsetError(f"conflict markers remain at line(s) {', '.join(map(str, markers[:8]))}",
                                file=str(f), line=markers[0], patch=p.id,
                                hint="resolve every conflict, remove the markers, then refresh")
        files[path] = content
    errors = porting.compile_errors(files)
    if errors:
        e = errors[0]
        raise PatchsetError(f"does not compile: {e.message.split(': ', 1)[-1]}", file=str(folder / e.file),
                            line=e.line, patch=p.id, hint="fix the file, then refresh")
    return files


def _exact_offsets(ask: _Ask) -> RefreshReport:
    manifest, p, version = ask.manifest, ask.patch, ask.version
    choice = p.choice_for(version)
    if choice is None:
        raise PatchsetError(f"no patch file serves vLLM {version} and no workspace holds a port",
                            patch=p.id, hint=f"port it first: patchset port --to {version} --patch {p.id}")
    walk = _walk_to(manifest, p, version, None, ask.source)
    pf = porting.covered(p.load(version, manifest.base), walk.sources[version])
    outcome = engine.apply_patch(walk.ours, pf)
    rel = os.path.relpath(choice.path, manifest.base)
    if not outcome.ok:
        raise PatchsetError(f"does not apply to vLLM {version} ({outcome.message})", file=rel, patch=p.id,
                            hint=f"port it: patchset port --to {version} --patch {p.id}")
    if all(h.status == engine.HunkStatus.EXACT for h in outcome.hunks):
        return RefreshReport(p.id, version, RefreshMode.EXACT, rel, "every hunk is exact already: nothing to do")
    old = choice.path.read_text(encoding="utf-8", errors="surrogateescape")
    body = merge.render_diff({k: walk.ours.get(k) for k in outcome.files}, outcome.files, strip=p.strip,
                             root=p.root)
    text = porting.header_of(old) + body
    porting.verify(text, p, walk.ours, outcome.files)
    moved = sorted({h.offset for h in outcome.hunks if h.offset})
    msg = f"line numbers made exact (offsets {', '.join(f'{o:+d}' for o in moved)} removed)"
    others = [t.version for t in manifest.targets if t.version != version and p.targets(t.version)
              and p.choice_for(t.version) == choice]
    if not others:
        report = RefreshReport(p.id, version, RefreshMode.OFFSETS, rel, msg)
        if not ask.dry_run:
            atomic_write(choice.path, text.encode("utf-8", errors="surrogateescape"))
            report.written = [rel]
        return report
    # The file serves other targets too: rewriting it would change what they check (their hunks would move
    # by the offsets removed here). vLLM {version} gets a file of its own; the others keep theirs.
    new = porting.new_patch_path(manifest, p, version)
    if os.path.abspath(manifest.base / new) == os.path.abspath(choice.path):
        raise PatchsetError(f"{rel} serves vLLM {version} and {', '.join(others)}: refreshing it for {version} "
                            f"would change what they check", file=rel, patch=p.id,
                            hint=f"give {', '.join(others)} a file of their own under patch:, then refresh")
    existing = manifest.base / new
    if existing.exists() and existing.read_text(encoding="utf-8", errors="surrogateescape") != text:
        raise PatchsetError(f"{new} exists and differs from the refreshed patch", file=new, patch=p.id,
                            hint="move it away or delete it, then refresh again")
    editor = ManifestEditor(manifest.path)
    editor.add_patch_file(p.id, version, new)
    editor.include(p.id, version)
    msg += f"; written as {new} for vLLM {version} ({rel} still serves {', '.join(others)})"
    report = RefreshReport(p.id, version, RefreshMode.OFFSETS, new, msg, editor.diff())
    if not ask.dry_run:
        report.written = _write(manifest, new, text, editor)
    return report


def _write(manifest: Manifest, rel: str, text: str, editor: ManifestEditor) -> list[str]:
    dest = manifest.base / rel
    previous = dest.read_bytes() if dest.exists() else None
    atomic_write(dest, text.encode("utf-8", errors="surrogateescape"))
    written = [rel]
    try:
        saved = porting.save_manifest(manifest, editor)
        written += [saved] if saved else []
    except BaseException:
        if previous is None:
            dest.unlink(missing_ok=True)
        else:
            atomic_write(dest, previous)
        raise
    return written
