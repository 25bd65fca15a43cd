"""A release's sdist from the package index: the full upstream tree at the tag.

The sdist is downloaded once, verified against the index's sha256 and unpacked
into the cache; later reads are plain file reads.
"""

from __future__ import annotations

from pathlib import Path

from patchset import TYPE_CHECKING
from patchset.cache import Cache
from patchset.errors import SourceError
from patchset.sources import index
from patchset.sources.local import DirSource

if TYPE_CHECKING:  # tarfile only when an sdist is unpacked: a warm cache reads plain files
    import tarfile


class SdistSource(DirSource):
    def __init__(self, project: str, version: str, cache: Cache, *, progress=None) -> None:
        found = index.remembered(cache, "sdist", project, version, index.sdist)
        blob = cache.blob(found.sha256, found.url, progress=progress)
        root = cache.tree(f"sdist-{found.sha256}", lambda tmp: _unpack(blob, tmp, found.filename))
        super().__init__(root)
        self.identity = f"sdist:{found.filename}@sha256:{found.sha256[:12]}"
        self.sha256 = found.sha256


def _unpack(blob: Path, dest: Path, name: str) -> None:
    import tarfile

    try:
        with tarfile.open(blob, "r:gz") as tar:
            keep = safe_members(tar.getmembers(), name)
            # Python's own data filter where this Python has it (3.10.12+, 3.11.4+), as a second line;
            # safe_members has already refused links, absolute paths and `..` on every Python.
            if hasattr(tarfile, "data_filter"):
                tar.extractall(dest, members=keep, filter="data")
            else:
                tar.extractall(dest, members=keep)  # every member was checked above
    except (tarfile.TarError, OSError) as e:
        raise SourceError(f"cannot unpack {name}: {e}") from e


def safe_members(members: list[tarfile.TarInfo], name: str) -> list[tarfile.TarInfo]:
    """The members under the archive's top folder, renamed relative to it; any unsafe one refuses it all.

    An sdist holds regular files and folders only: a link, a device, an absolute path or a `..`
    could write outside the cache (or read through a link later), so the whole archive is refused.
    """
    prefix = members[0].name.split("/", 1)[0] + "/" if members else ""
    keep = []
    for m in members:
        parts = m.name.split("/")
        if m.name.startswith("/") or ".." in parts or "\\" in m.name or ":" in parts[0]:
            raise SourceError(f"{name}: member {m.name!r} points outside the archive; nothing was unpacked",
                              hint="the sdist is corrupt or malicious; do not use it")
        if not (m.isfile() or m.isdir()):
            raise SourceError(f"{name}: member {m.name!r} is a {_kind(m)}, not a file or folder; nothing was "
                              f"unpacked", hint="an sdist holds files and folders only")
        if not m.name.startswith(prefix):
            continue
        m.name = m.name[len(prefix):]
        m.mode &= 0o755 if m.isdir() else 0o644 | (m.mode & 0o111)  # no setuid, no world-writable files
        if m.name:
            keep.append(m)
    return keep


def _kind(m: tarfile.TarInfo) -> str:
    if m.issym():
        return f"symbolic link to {m.linkname!r}"
    if m.islnk():
        return f"hard link to {m.linkname!r}"
    return "device or special file"
