"""`patchset targets`: the pinned releases and the patches each carries, e.g. for a CI job matrix."""

from __future__ import annotations

from dataclasses import dataclass

from patchset.core.manifest import Manifest


@dataclass(frozen=True)
class TargetRow:
    """One pinned release: its image and the ids of the patches the manifest targets at it; for a target
    pinned to a commit, its repository and commit too."""

    vllm: str
    image: str | None
    patches: tuple[str, ...]
    git: str | None = None
    commit: str | None = None


def targets(manifest: Manifest, *, carrying: bool = False) -> list[TargetRow]:
    """Every target in the manifest's order; ``carrying``: only those at least one patch targets."""
    rows = []
    for t in manifest.targets:
        carried = tuple(p.id for p in manifest.patches if p.targets(t.version))
        if carrying and not carried:
            continue
        pin = t.source
        rows.append(TargetRow(t.version, t.image, carried, pin.git if pin else None, pin.commit if pin else None))
    return rows
