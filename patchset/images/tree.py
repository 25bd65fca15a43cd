"""The ``vllm/`` part of an image's filesystem as a pristine-tree source (repository layout).

What ``build`` applies the series to and what ``build --sbom`` audits against: the base image's
own bytes, read through :class:`~patchset.images.engine.ImageFiles`, so what is checked is what
gets shipped.
"""

from __future__ import annotations

from patchset.images.engine import ImageFiles, VllmInstall, image_digest


class ImageTree:
    """A :class:`~patchset.sources.Source` over an open :class:`ImageFiles` (only ``vllm/`` is covered)."""

    def __init__(self, files: ImageFiles, install: VllmInstall, name: str) -> None:
        self.files = files
        self.install = install
        self.identity = f"image:{name}@{image_digest(files.image)}"
        self.kind = "image"  # its site-packages: the package alone (patchset.core.trees)
        self._read: dict[str, bytes | None] = {}

    def covers(self, path: str) -> bool:
        return path.startswith("vllm/")

    def read(self, path: str) -> bytes | None:
        if not self.covers(path):
            return None
        if path not in self._read:
            self._read[path] = self.files.read(self.install.path_of(path))
        return self._read[path]
