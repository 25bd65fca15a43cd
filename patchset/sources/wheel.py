"""A release's wheel from the package index, read member by member.

A vLLM wheel is over 300 MB, but a check needs a handful of files: the zip's
central directory and those members are fetched with HTTP range requests (as
pip's lazy wheel does), and each member is cached by the wheel's digest. An
index that ignores ranges gets the whole wheel downloaded and verified.
"""

from __future__ import annotations

import io
import urllib.request
import zipfile

from patchset.cache import Cache
from patchset.errors import SourceError
from patchset.sources import index

BLOCK = 256 * 1024


class WheelSource:
    def __init__(self, file: index.IndexFile, cache: Cache) -> None:
        self.file = file
        self.cache = cache
        self.identity = f"wheel:{self.file.filename}@sha256:{self.file.sha256[:12]}"
        self._zip: zipfile.ZipFile | None = None

    @classmethod
    def of(cls, project: str, version: str, cache: Cache) -> WheelSource:
        """The release's wheel as the package index lists it."""
        return cls(index.remembered(cache, "wheel", project, version, index.wheel), cache)

    def covers(self, path: str) -> bool:
        return path.startswith("vllm/")

    def read(self, path: str) -> bytes | None:
        if not self.covers(path):
            return None
        cached = self.cache.path("wheel-members", self.file.sha256, path)
        if cached.is_file():
            return cached.read_bytes()
        missing = self.cache.path("wheel-members", self.file.sha256, path + ".absent")
        if missing.exists():
            return None
        z = self._open()
        try:
            data = z.read(path)
        except KeyError:
            self.cache.put_bytes(b"", "wheel-members", self.file.sha256, path + ".absent")
            return None
        self.cache.put_bytes(data, "wheel-members", self.file.sha256, path)
        return data

    def _open(self) -> zipfile.ZipFile:
        if self._zip is None:
            try:
                self._zip = zipfile.ZipFile(_RangeFile(self.file.url, self.file.size))
            except _NoRanges:
                blob = self.cache.blob(self.file.sha256, self.file.url)
                self._zip = zipfile.ZipFile(blob)
            except (OSError, zipfile.BadZipFile) as e:
                raise SourceError(f"cannot read {self.file.filename}: {e}") from e
        return self._zip


class _NoRanges(Exception):
    pass


class _RangeFile(io.RawIOBase):
    """A read-only, seekable view of a remote file, fetched in blocks."""

    def __init__(self, url: str, size: int | None) -> None:
        self.url = url
        self.pos = 0
        self.blocks: dict[int, bytes] = {}
        self.size = size if size else self._probe_size()

    def _probe_size(self) -> int:
        data, total = self._get(0, 0)
        return total

    def _get(self, start: int, end: int) -> tuple[bytes, int]:
        req = urllib.request.Request(self.url, headers={"Range": f"bytes={start}-{end}"})
        with urllib.request.urlopen(req, timeout=120) as resp:
            if getattr(resp, "status", None) != 206:
                raise _NoRanges()
            total = int(resp.headers["Content-Range"].rsplit("/", 1)[1])
            return resp.read(), total

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.pos, 2: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def readinto(self, buf) -> int:
        n = min(len(buf), self.size - self.pos)
        if n <= 0:
            return 0
        out = bytearray()
        pos = self.pos
        while len(out) < n:
            b = pos // BLOCK
            if b not in self.blocks:
                start = b * BLOCK
                self.blocks[b], _ = self._get(start, min(self.size, start + BLOCK) - 1)
            chunk = self.blocks[b][pos - b * BLOCK:]
            take = chunk[: n - len(out)]
            out += take
            pos += len(take)
        buf[:n] = out
        self.pos = pos
        return n
