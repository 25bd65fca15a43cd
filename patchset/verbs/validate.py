"""`patchset validate`: the manifest and every patch file it names, without any vLLM tree."""

from __future__ import annotations

from pathlib import Path

from patchset.core.manifest import load_manifest
from patchset.core.patchfile import read_patch


def validate(manifest_path: str | Path) -> str:
    """Raise ManifestError / PatchFileError on the first problem; return a one-line summary."""
    manifest = load_manifest(manifest_path)
    files = hunks = 0
    for p in manifest.patches:
        for choice in p.choices:
            pf = read_patch(choice.path, strip=p.strip, root=p.root,
                            display=str(choice.path.relative_to(manifest.base.resolve()))
                            if choice.path.is_relative_to(manifest.base.resolve()) else str(choice.path))
            files += 1
            hunks += len(pf.hunks)
    return (f"{manifest.path}: ok: {len(manifest.patches)} patches, {files} patch files, {hunks} hunks, "
            f"targets {', '.join(t.version for t in manifest.targets)}")
