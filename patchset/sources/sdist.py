"""A release's sdist from the package index: the full upstream tree at the tag.

The sdist is downloaded once, verified against the index's sha256 and unpacked
into the cache; later reads are plain file reads.
"""

from __future__ import annotations

import sys
import tarfile
from pathlib import Path

from patchset.cache import Cache
from patchset.errors import SourceError
from patchset.sources import index
from patchset.sources.local import DirSource


class SdistSource(DirSource):
    def __init__(self, project: str, version: str, cache: Cache, *, progress=None) -> None:
        found = index.remembered(cache, "sdist", project, version, index.sdist)
        blob = cache.blob(found.sha256, found.url, progress=progress)
        root = cache.tree(f"sdist-{found.sha256}", lambda tmp: _unpack(blob, tmp, found.filename))
        super().__init__(root)
        self.identity = f"sdist:{found.filename}@sha256:{found.sha256[:12]}"
        self.sha256 = found.sha256


def _unpack(blob: Path, dest: Path, name: str) -> None:
    try:
        with tarfile.open(blob, "r:gz") as tar:
            members = tar.getmembers()
            prefix = members[0].name.split("/", 1)[0] + "/" if members else ""
            keep = []
            for m in members:
                if not m.name.startswith(prefix) or not (m.isfile() or m.isdir()):
                    continue
                m.name = m.name[len(prefix):]
                if m.name:
                    keep.append(m)
            kwargs = {"filter": "data"} if sys.version_info >= (3, 11, 4) else {}
            tar.extractall(dest, members=keep, **kwargs)
    except (tarfile.TarError, OSError) as e:
        raise SourceError(f"cannot unpack {name}: {e}") from e
