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
    untested: tuple[str, ...] = ()  # the patches carried here that name no upstream test (no ``tests:``)
    proves: bool = False  # ``test --venv`` proves something here: a carried patch has tests, or a CPU suite runs
    git: str | None = None
    commit: str | None = None


def targets(manifest: Manifest, *, carrying: bool = False) -> list[TargetRow]:
    """Every target in the manifest's order; ``carrying``: only those at least one patch targets."""
    rows = []
    for t in manifest.targets:
        patches = [p for p in manifest.patches if p.targets(t.version)]
        if carrying and not patches:
            continue
        untested = tuple(p.id for p in patches if not p.tests)
        proves = len(untested) < len(patches) or any(not s.gpu for s in manifest.suites)
        pin = t.source
        rows.append(TargetRow(
            t.version, t.image, tuple(p.id for p in patches), untested, proves,
            pin.git if pin else None, pin.commit if pin else None,
        ))
    return rows
