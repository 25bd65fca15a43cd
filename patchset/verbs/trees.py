"""Pristine trees by release for the verbs that walk several releases (``next``, ``port``)."""

from __future__ import annotations

from packaging.version import Version

from patchset.core.manifest import Manifest, Patch
from patchset.core.moved import PyIndex, release_index
from patchset.core.pristine import open_release
from patchset.sources import Source


class Trees:
    """Pristine trees by release, opened once; a release's Python files indexed once, when asked."""

    def __init__(self, manifest: Manifest, source: str) -> None:
        self.manifest = manifest
        self.source = source
        self.opened: dict[str, Source] = {}
        self.indexes: dict[str, PyIndex] = {}

    def index(self, version: str) -> PyIndex:
        """The package's Python files of ``version`` (to follow moved code): read and indexed on the first
        search only."""
        if version not in self.indexes:
            package = self.manifest.pypi.lower().replace("-", "_")
            self.indexes[version] = release_index(self.get(version), package)
        return self.indexes[version]

    def get(self, version: str) -> Source:
        if version not in self.opened:
            self.opened[version] = open_release(self.manifest, version, self.source)
            if hasattr(self.opened[version], "collect"):  # a streamed sdist: its one pass holds the package's
                # modules, which following code and the import checks read, so no whole tree is unpacked
                self.opened[version].collect = self.manifest.pypi.lower().replace("-", "_")  # type: ignore[attr-defined]
        return self.opened[version]


def newest_covered_target(manifest: Manifest, p: Patch) -> str | None:
    """The release ``p`` was last made for: the newest target its releases include."""
    covered = [t.version for t in manifest.targets if p.targets(t.version)]
    return max(covered, key=Version) if covered else None
