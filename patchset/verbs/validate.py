"""`patchset validate`: the manifest and every patch file it names, without any vLLM tree.

Every problem is reported, up to MAX_ERRORS, so one run is enough to fix a manifest; a ``.patch``
under recipes/ that no patch names is one of them here (``check``/``audit``/``build`` only warn).

A port conflict not finished yet is a finding (exit 1, as a conflicting port is), not bad input: a
workspace under ``.patchset/port/`` whose files still hold conflict markers, or whose patch has no file
for the workspace's release yet (``patchset refresh`` was not run). ``upgrade`` commits such workspaces
to its branch; this keeps that pull request from being merged as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from patchset.core.manifest import Manifest
from patchset.core.manifest_load import MAX_ERRORS, inspect_manifest
from patchset.core.patchfile import read_patch
from patchset.errors import Finding, PatchsetError


@dataclass
class ValidateReport:
    """The manifest and every patch file it names, checked without a vLLM tree."""

    manifest: str
    errors: list[PatchsetError] = field(default_factory=list)
    patches: int = 0
    files: int = 0
    hunks: int = 0
    targets: list[str] = field(default_factory=list)
    unresolved: list[Finding] = field(default_factory=list)  # port workspaces not finished

    @property
    def ok(self) -> bool:
        return not self.errors and not self.unresolved

    @property
    def truncated(self) -> bool:
        """True when the limit stopped the search: there may be more than these."""
        return len(self.errors) >= MAX_ERRORS

    def summary(self) -> str:
        if self.ok:
            return (f"{self.manifest}: ok: {self.patches} patches, {self.files} patch files, {self.hunks} hunks, "
                    f"targets {', '.join(self.targets)}")
        more = f" (stopped at {MAX_ERRORS}; fix these and run it again)" if self.truncated else ""
        if not self.errors:
            n = len(self.unresolved)
            return f"{self.manifest}: {n} unfinished port conflict{'s' if n != 1 else ''}"
        return f"{self.manifest}: {len(self.errors)} problem{'s' if len(self.errors) != 1 else ''}{more}"


def validate(manifest_path: str | Path) -> ValidateReport:
    """Every problem of the manifest and its patch files, up to MAX_ERRORS; none means it is valid."""
    manifest, problems = inspect_manifest(manifest_path, orphans_are_errors=True)
    report = ValidateReport(str(manifest_path), list(problems))
    if manifest is None:
        return report
    report.manifest = str(manifest.path)
    report.patches = len(manifest.patches)
    report.targets = [t.version for t in manifest.targets]
    _read_patch_files(manifest, report)
    del report.errors[MAX_ERRORS:]
    report.unresolved = unresolved_workspaces(manifest)
    return report


WORKDIR = Path(".patchset") / "port"  # port's default workspaces (verbs/port.py DEFAULT_WORKDIR)


def unresolved_workspaces(manifest: Manifest) -> list[Finding]:
    """Each port workspace beside the manifest that still needs a person: a marker left, or not refreshed."""
    work = manifest.base / WORKDIR
    if not work.is_dir():
        return []
    from patchset.verbs import port  # only where a workspace is: validate runs on every commit

    out = []
    for folder in sorted(work.iterdir()):
        meta = folder / port.WORKSPACE_META
        if not meta.is_file():
            continue
        out += _unresolved(manifest, folder, meta)
    return out


def _unresolved(manifest: Manifest, folder: Path, meta_file: Path) -> list[Finding]:
    import json

    from patchset.core.merge import marker_lines

    rel = folder.relative_to(manifest.base)
    try:
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
        pid, version, files = str(meta["id"]), str(meta["to"]), [str(f) for f in meta["files"]]
    except (ValueError, KeyError, TypeError, OSError):
        return [Finding("not a port workspace patchset can read", file=str(meta_file.relative_to(manifest.base)),
                        hint=f"delete {rel} and port again")]
    refresh = f"patchset refresh {pid} --vllm {version}"
    out = []
    for path in files:
        f = folder / path
        lines = marker_lines(f.read_bytes()) if f.is_file() else []
        if lines:
            out.append(Finding(f"conflict markers remain at line(s) {', '.join(map(str, lines[:8]))}",
                               file=str(rel / path), line=lines[0], patch=pid,
                               hint=f"resolve the port conflict to vLLM {version}, then run {refresh}"))
    if out:
        return out
    patch = next((p for p in manifest.patches if p.id == pid), None)
    if patch is None:
        return [Finding(f"a port workspace for patch {pid}, which the manifest no longer has", file=str(rel),
                        hint=f"delete {rel}")]
    choice = patch.choice_for(version)
    if choice is None or choice.path.name != f"vllm-{version}.patch" or not patch.targets(version):
        return [Finding(f"the port conflict to vLLM {version} is resolved but no patch file was made from it",
                        file=str(rel), patch=pid, hint=f"run {refresh}, then patchset upgrade --to {version}")]
    return []


def _read_patch_files(manifest: Manifest, report: ValidateReport) -> None:
    base = manifest.base.resolve()
    for p in manifest.patches:
        for choice in p.choices:
            display = str(choice.path.relative_to(base)) if choice.path.is_relative_to(base) else str(choice.path)
            try:
                pf = read_patch(choice.path, strip=p.strip, root=p.root, display=display)
            except PatchsetError as e:
                report.errors.append(e)
                continue
            report.files += 1
            report.hunks += len(pf.hunks)
