"""The one cache: content addressed, verified, safe for concurrent CI jobs.

Every entry is written under a temporary name and renamed into place, so a
reader sees a whole entry or none; a file lock per entry keeps two jobs from
downloading the same 40 MB at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

from filelock import FileLock

from patchset.errors import SourceError

CHUNK = 1 << 20


def cache_root() -> Path:
    return Path(os.environ.get("PATCHSET_CACHE") or Path.home() / ".cache" / "patchset")


class Cache:
    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root else cache_root()

    def path(self, *parts: str) -> Path:
        return self.root.joinpath(*parts)

    @contextlib.contextmanager
    def lock(self, *parts: str) -> Iterator[None]:
        lock_path = self.path("locks", *parts)
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(lock_path) + ".lock"):
            yield

    def blob(self, sha256: str, url: str, *, progress: Callable[[int, int], None] | None = None) -> Path:
        """The verified file with this sha256, downloaded from url when not cached."""
        final = self.path("blobs", sha256[:2], sha256)
        if final.is_file():
            return final
        with self.lock("blobs", sha256):
            if final.is_file():
                return final
            final.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=final.parent, prefix=".part-")
            try:
                digest = hashlib.sha256()
                with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=300) as resp:
                    total = int(resp.headers.get("Content-Length") or 0)
                    done = 0
                    while chunk := resp.read(CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        done += len(chunk)
                        if progress:
                            progress(done, total)
                if digest.hexdigest() != sha256:
                    raise SourceError(f"{url.rsplit('/', 1)[-1]}: sha256 {digest.hexdigest()} does not match the "
                                      f"index's {sha256}", hint="the download was corrupted or the index lies")
                os.replace(tmp, final)
            except OSError as e:
                raise SourceError(f"cannot download {url.rsplit('/', 1)[-1]}: {e}") from e
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
        return final

    def put_bytes(self, data: bytes, *parts: str) -> Path:
        final = self.path(*parts)
        final.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=final.parent, prefix=".part-")
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, final)
        return final

    def tree(self, key: str, fill: Callable[[Path], None]) -> Path:
        """A directory built once by ``fill`` into a temporary place, then renamed in."""
        final = self.path("trees", key)
        if final.is_dir():
            return final
        with self.lock("trees", key):
            if final.is_dir():
                return final
            final.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=".part-"))
            try:
                fill(tmp)
                os.replace(tmp, final)
            finally:
                if tmp.exists():
                    shutil.rmtree(tmp, ignore_errors=True)
        return final
