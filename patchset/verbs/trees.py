"""Pristine trees by release for the verbs that walk several releases (``next``, ``port``)."""

from __future__ import annotations

from packaging.version import Version

from patchset.core.manifest import Manifest, Patch
from patchset.sources import Source, open_source


class Trees:
    """Pristine trees by release, opened once."""

    def __init__(self, manifest: Manifest, source: str) -> None:
        self.manifest = manifest
        self.source = source
        self.opened: dict[str, Source] = {}

    def get(self, version: str) -> Source:
        if version not in self.opened:
            self.opened[version] = open_source(self.source, version, project=self.manifest.pypi,
                                               tag=self.manifest.tag)
        return self.opened[version]


def newest_covered_target(manifest: Manifest, p: Patch) -> str | None:
    """The release ``p`` was last made for: the newest target its releases include."""
    covered = [t.version for t in manifest.targets if p.targets(t.version)]
    return max(covered, key=Version) if covered else None
