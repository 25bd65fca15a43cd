"""A tree on disk: an unpacked sdist, a checkout, or a site-packages folder."""

from __future__ import annotations

from pathlib import Path

from patchset.errors import SourceError


class DirSource:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise SourceError(f"{root} is not a directory")
        self.identity = f"dir:{self.root.resolve()}"

    def covers(self, path: str) -> bool:
        top = path.split("/", 1)[0]
        return (self.root / top).exists()

    def read(self, path: str) -> bytes | None:
        f = self.root / path
        try:
            return f.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
