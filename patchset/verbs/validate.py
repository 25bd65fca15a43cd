"""`patchset validate`: the manifest and every patch file it names, without any vLLM tree.

Every problem is reported, up to MAX_ERRORS, so one run is enough to fix a manifest; a ``.patch``
under recipes/ that no patch names is one of them here (``check``/``audit``/``build`` only warn).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from patchset.core.manifest import Manifest
from patchset.core.manifest_load import MAX_ERRORS, inspect_manifest
from patchset.core.patchfile import read_patch
from patchset.errors import PatchsetError


@dataclass
class ValidateReport:
    """The manifest and every patch file it names, checked without a vLLM tree."""

    manifest: str
    errors: list[PatchsetError] = field(default_factory=list)
    patches: int = 0
    files: int = 0
    hunks: int = 0
    targets: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def truncated(self) -> bool:
        """True when the limit stopped the search: there may be more than these."""
        return len(self.errors) >= MAX_ERRORS

    def summary(self) -> str:
        if self.ok:
            return (f"{self.manifest}: ok: {self.patches} patches, {self.files} patch files, {self.hunks} hunks, "
                    f"targets {', '.join(self.targets)}")
        more = f" (stopped at {MAX_ERRORS}; fix these and run it again)" if self.truncated else ""
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
    return report


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
