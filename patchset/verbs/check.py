"""`patchset check`: every hunk of the series on every pinned release."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from patchset.core.manifest import Manifest
from patchset.core.series import ReleaseResult, evaluate_release
from patchset.sources import open_source

__all__ = ["CheckReport", "check", "evaluate_release", "releases_to_check"]


@dataclass
class CheckReport:
    manifest: str
    targets: list[ReleaseResult]

    @property
    def ok(self) -> bool:
        return all(t.ok for t in self.targets)


def releases_to_check(manifest: Manifest, asked: Sequence[str]) -> list[str]:
    if not asked:
        return [t.version for t in manifest.targets]
    return [manifest.target(v).version for v in asked]


def check(manifest: Manifest, versions: Sequence[str] = (), source: str = "pypi",
          on_release: Callable[[str], None] | None = None) -> CheckReport:
    results = []
    for version in releases_to_check(manifest, versions):
        if on_release:
            on_release(version)
        tree = open_source(source, version, project=manifest.pypi, tag=manifest.tag)
        result = evaluate_release(manifest, version, tree)
        # what a dir: tree could not prove about itself, and e.g. a .patch no patch names (validate refuses it)
        result.warnings[:0] = [*getattr(tree, "warnings", []), *manifest.warnings]
        results.append(result)
    return CheckReport(str(manifest.path), results)
