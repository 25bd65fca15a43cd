"""A release's wheel from the package index, read member by member.

A vLLM wheel is over 300 MB, but a check needs a handful of files: the zip's
central directory and those members are fetched with HTTP range requests (as
pip's lazy wheel does). Nothing read by range is trusted as is: each member
must match its CRC and the sha256 the wheel's own ``RECORD`` gives for it, and
every answer must carry the ``Content-Range`` that was asked for. A range that
fails is retried a bounded number of times; then (or when the index ignores
ranges) the whole wheel is downloaded and verified against the index's sha256.
Only verified members are cached, by the wheel's digest.

The range reader (``_RangeFile``) is kept rather than ``remotezip`` (issue 13), measured
with ``bench/libs.py`` (see sources/index.py for the command; 2026-11-30, scheduler.py out of the
vLLM 0.29.0 wheel, RECORD sha256 checked on top of both): 0.069 s median, 5 requests, 1100 KiB
here; 0.059 s, 4 requests, 839 KiB with ``RemoteZip`` (its suffix range reads the tail in one
go), the same bytes. Against the misbehaving range servers of tests/test_sources.py, both end in
verified bytes or give up on ranges (short answers, a Content-Range that lies, bytes of another
offset, every answer cut, no range support; remotezip only via BadZipFile, not naming the
Content-Range), but one connection cut mid-body makes remotezip give up where this reader retries
(``drop once``: ok in 3 requests here), and giving up means downloading the whole 316 MB wheel.
Keeping that bounded retry with remotezip needs a fetcher subclass over its internal
``RemoteFetcher.fetch`` protocol: no less code than this, against a less stable interface.
Since then (issue 12) a member is fetched as its own span and the central directory's missing
blocks in one request: 776 KiB in 4 requests for 0.29.0's scheduler.py (``bench/cold.py``).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import re
import struct
import time
import zipfile
import zlib
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import IO, TYPE_CHECKING

from patchset.cache import Cache
from patchset.errors import SourceError
from patchset.sources import download, http, index, urls

if TYPE_CHECKING:
    from pathlib import Path

BLOCK = 256 * 1024
#: Bytes read past a member's expected end, for a local extra field longer than the central one.
SLACK = 1024
#: Members this close together are fetched as one range: fewer bytes than a round trip costs.
GAP = 32 * 1024
#: Range requests in flight at once when members are fetched together.
THREADS = 4
#: Requests one block may take when a server answers short ranges; beyond it, the full download.
MAX_PIECES = 16
_RECORD = re.compile(r"^[^/]+\.dist-info/RECORD$")
_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+|\*)$")


class WheelSource:
    def __init__(self, file: index.IndexFile, cache: Cache, *, package: str = "vllm") -> None:
        self.file = file
        self.cache = cache
        self.package = package
        self.identity = f"wheel:{self.file.filename}@sha256:{self.file.sha256[:12]}"
        self.kind = "wheel"  # the package alone: nothing beside it (patchset.core.trees)
        self._reader: _Reader | None = None
        #: Why the range reads were given up for the full download (None: they were not).
        self.fallback_reason: str | None = None

    @classmethod
    def of(cls, project: str, version: str, cache: Cache) -> WheelSource:
        """The release's wheel that fits this machine best, as the package index lists it (``index.wheel``)."""
        found = index.remembered(cache, index.wheel_kind(), project, version, index.wheel)
        return cls(found, cache, package=project.lower().replace("-", "_"))

    def covers(self, path: str) -> bool:
        return path.startswith(self.package + "/")

    def read(self, path: str) -> bytes | None:
        if not self.covers(path):
            return None
        cached = self.cache.path("wheel-members", self.file.sha256, path)
        if cached.is_file():
            return cached.read_bytes()
        missing = self.cache.path("wheel-members", self.file.sha256, path + ".absent")
        if missing.exists():
            return None
        data = self._verified(path)
        if data is None:
            self.cache.put_bytes(b"", "wheel-members", self.file.sha256, path + ".absent")
            return None
        self.cache.put_bytes(data, "wheel-members", self.file.sha256, path)
        return data

    def listing(self, prefix: str) -> list[str]:
        """Every member under the folder ``prefix`` (from the central directory: no member is read)."""
        prefix = prefix.rstrip("/") + "/"
        return sorted(n for n in self._open().names if n.startswith(prefix) and not n.endswith("/"))

    def prefetch(self, paths: Iterable[str]) -> None:
        """Fetch the members ``paths`` name together: nearby ones in one range, the ranges side by side.

        One request after another, a series touching 50 files waits 50 round trips per release.
        Only a speed-up: each member is verified when :meth:`read` reads it, as before.
        """
        wanted = [p for p in paths if self.covers(p) and not self._cached(p)]
        if not wanted:
            return
        reader = self._open()
        if reader.whole or reader.ranges is None:
            return
        spans = [_member_span(reader.zip.getinfo(p)) for p in wanted if p in reader.names]
        try:
            reader.ranges.prefetch_many(_coalesced(spans))
        except _Unverified as e:
            self._fall_back(str(e))

    def _cached(self, path: str) -> bool:
        return (self.cache.path("wheel-members", self.file.sha256, path).is_file()
                or self.cache.path("wheel-members", self.file.sha256, path + ".absent").exists())

    def _open(self) -> _Reader:
        if self._reader is None and self.cache.path("blobs", self.file.sha256[:2], self.file.sha256).is_file():
            self._open_whole()  # downloaded already (the venv runner does): no range request needed
        if self._reader is None:
            try:
                ranges = _RangeFile(self.file.url, self.file.size)
                self._reader = open_reader(ranges, whole=False, ranges=ranges)
            except _Unverified as e:
                self._fall_back(str(e))
        assert self._reader is not None
        return self._reader

    def _verified(self, path: str) -> bytes | None:
        self._open()
        assert self._reader is not None
        if not self._reader.whole:
            try:
                return self._reader.read(path)
            except _Unverified as e:
                self._fall_back(str(e))
        try:
            return self._reader.read(path)
        except _Unverified as e:
            raise SourceError(f"{self.file.filename}: {e}",
                              hint="the wheel matched the index's sha256, so the wheel itself is broken") from e

    def _fall_back(self, reason: str) -> None:
        """Read from the whole wheel, downloaded and checked against the index's sha256."""
        self.fallback_reason = urls.redact(reason)
        self._open_whole()

    def _open_whole(self) -> None:
        blob = download.blob(self.cache, self.file.sha256, self.file.url, size=self.file.size)
        try:
            self._reader = open_reader(blob, whole=True)
        except (OSError, _Unverified) as e:
            raise SourceError(f"cannot read {self.file.filename}: {e}") from e


class _Unverified(Exception):
    """Bytes read by range that cannot be trusted (or could not be read)."""


Unverified = _Unverified  # what open_reader and _Reader.read raise: the range reader falls back, a whole wheel refuses


#: The most a member may hold once inflated: vLLM's largest Python file is well under 1 MiB, its RECORD a few;
#: a zip bomb's member declares (and zipfile then stops at) far more.
MAX_MEMBER = 64 * 1024 * 1024


def open_reader(file: Path | IO[bytes] | _RangeFile, *, whole: bool,
                ranges: _RangeFile | None = None) -> _Reader:
    """The wheel in ``file`` (a whole download, or the remote file read by range), or ``_Unverified``
    saying why its zip cannot be read: a damaged central directory is never an internal error."""
    try:
        return _Reader(zipfile.ZipFile(file), whole=whole, ranges=ranges)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError, struct.error,
            UnicodeDecodeError, NotImplementedError) as e:
        raise _Unverified(f"the zip's central directory is unusable ({e})") from e


class _Reader:
    """Members of an open wheel, each checked against its CRC and the wheel's RECORD."""

    def __init__(self, z: zipfile.ZipFile, *, whole: bool, ranges: _RangeFile | None = None) -> None:
        self.zip = z
        self.whole = whole  # the file as a whole matched the index's sha256
        self.ranges = ranges  # the remote file under ``z``, when it is read by range
        self.names = set(z.namelist())
        records = [n for n in self.names if _RECORD.match(n)]
        if len(records) != 1 and not whole:
            raise _Unverified(f"the wheel has {len(records)} RECORD files, not one")
        self.hashes = _record_hashes(self._raw(records[0])) if len(records) == 1 else {}

    def read(self, path: str) -> bytes | None:
        if path not in self.names:
            if path in self.hashes and not self.whole:
                raise _Unverified(f"{path} is in RECORD but not in the central directory read by range")
            return None
        data = self._raw(path)
        expected = self.hashes.get(path)
        if expected is None and not self.whole:
            raise _Unverified(f"RECORD gives no sha256 for {path}")
        if expected is not None and _record_digest(data) != expected:
            raise _Unverified(f"{path} does not match the sha256 in the wheel's RECORD")
        return data

    def _raw(self, name: str) -> bytes:
        try:
            size = self.zip.getinfo(name).file_size
            if size > MAX_MEMBER:
                raise _Unverified(f"{name} says it holds {size} bytes inflated, more than any wheel member "
                                  f"patchset reads ({MAX_MEMBER})")
            if self.ranges is not None:
                self.ranges.prefetch(*_member_span(self.zip.getinfo(name)))
            return self.zip.read(name)  # checks the CRC
        except (zipfile.BadZipFile, EOFError, OSError, ValueError, zlib.error, NotImplementedError,
                RuntimeError) as e:  # NotImplementedError: a compression zipfile lacks; RuntimeError: encrypted
            raise _Unverified(f"{name}: {e}") from e


def _member_span(info: zipfile.ZipInfo) -> tuple[int, int]:
    """The bytes a member's local header and data most likely take: one range request reads it.

    The local header's extra field may differ from the central one; ``SLACK`` covers the usual
    difference, and a member that still reaches beyond is completed by block reads, as before.
    """
    header = 30 + len(info.orig_filename.encode("utf-8")) + len(info.extra)
    return info.header_offset, info.header_offset + header + info.compress_size + SLACK - 1


def _coalesced(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The spans in order, each merged with the next when no more than ``GAP`` bytes lie between."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start - out[-1][1] <= GAP:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _record_hashes(data: bytes) -> dict[str, str]:
    out = {}
    try:
        for row in csv.reader(io.StringIO(data.decode("utf-8", "replace"))):
            if len(row) >= 2 and row[1].startswith("sha256="):
                out[row[0]] = row[1][len("sha256="):]
    except csv.Error as e:  # a field over csv's limit, a NUL: not a RECORD a wheel tool wrote
        raise _Unverified(f"the wheel's RECORD is not CSV ({e})") from e
    return out


def _record_digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


class _NoRanges(_Unverified):
    """The server answers ranges with the whole file, or refuses them: no point in retrying."""


class _RangeFile(io.RawIOBase):
    """A read-only, seekable view of a remote file, fetched by verified range requests.

    What zipfile reads on its own (the central directory) comes in aligned blocks, the missing
    blocks of one read in one request; a member is fetched as the exact span it takes
    (:meth:`prefetch`), so a 16 KB member costs 16 KB, not a 256 KiB block.
    """

    def __init__(self, url: str, size: int | None) -> None:
        self.url = url
        self.pos = 0
        self.blocks: dict[int, bytes] = {}
        self.spans: list[tuple[int, bytes]] = []  # (first byte, bytes) fetched by prefetch
        self.size = 0  # unknown until an answer says it
        self.total = 0
        if not size:
            self._fetch(0, 0)
        self.size = size or self.total

    def _fetch(self, start: int, end: int) -> bytes:
        """Bytes ``start..end`` (inclusive), in as many answers as the server splits them into."""
        import requests  # here, not at the top: the index listing starts pip's children first (index.py)

        out = bytearray()
        failures = 0
        for _piece in range(MAX_PIECES + http.RETRIES):
            if start + len(out) > end:
                return bytes(out)
            try:
                _, got, _ = self._answer(start + len(out), end)
            except _NoRanges:
                raise
            except (_Unverified, requests.RequestException) as e:
                failures += 1
                if failures > http.RETRIES:
                    raise _Unverified(f"range {start}-{end}: {http.describe(e)} ({failures} attempts)") from e
                time.sleep(http.BACKOFF * 2 ** (failures - 1))
                continue
            out += got
        if start + len(out) > end:
            return bytes(out)
        raise _Unverified(f"range {start}-{end}: the server answers in pieces too short to finish")

    def _answer(self, start: int, end: int) -> tuple[int, bytes, int]:
        """One range request: (first byte, the bytes, total size), all as ``Content-Range`` says."""
        # Streamed: the body is read only once the answer proved to be the range asked for, and no more
        # of it than that range (a server that ignores ranges would send the whole 316 MB wheel).
        resp = http.get(self.url, headers={"Range": f"bytes={start}-{end}", "Accept-Encoding": "identity"},
                        stream=True)
        try:
            if resp.status_code == 200:
                raise _NoRanges("the server ignores range requests")
            if resp.status_code in (401, 403, 404, 410, 416):
                raise _NoRanges(f"HTTP {resp.status_code} {resp.reason} to a range request")
            if resp.status_code != 206:
                raise _Unverified(f"HTTP {resp.status_code} {resp.reason} to a range request")
            found = _CONTENT_RANGE.match(resp.headers.get("Content-Range", "").strip())
            if not found:
                raise _Unverified(f"no usable Content-Range ({resp.headers.get('Content-Range')!r})")
            first, last, total = int(found[1]), int(found[2]), found[3]
            if first != start or last < first or last > end:
                raise _Unverified(f"asked for bytes {start}-{end}, the Content-Range says {first}-{last}")
            if total != "*" and self.size and int(total) != self.size:
                raise _Unverified(f"the Content-Range gives the size as {total}, not {self.size}")
            declared = resp.headers.get("Content-Length", "").strip()
            if declared.isdigit() and int(declared) > last - first + 1:  # a server that lies so is not retried
                raise _NoRanges(f"bytes {first}-{last}: the answer declares {declared} bytes, more than "
                               f"the {last - first + 1} of the range")
        except BaseException:
            resp.close()  # the body unread: counted as an answer of no bytes
            http.record(http.split_credentials(self.url)[0], resp.status_code, 0)
            raise
        body = http.read_body(resp, last - first + 1, self.url)
        if len(body) != last - first + 1:
            raise _Unverified(f"bytes {first}-{last}: {len(body)} bytes came")
        if total != "*":
            self.total = int(total)
        return first, body, self.total

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

    def prefetch(self, start: int, end: int) -> None:
        """Fetch bytes ``start..end`` (inclusive) in one request, less what is held already."""
        self.prefetch_many([(start, end)])

    def prefetch_many(self, spans: list[tuple[int, int]]) -> None:
        """Fetch each span (less what is held) in one request, several requests at once.

        The answers are kept in the order asked, so what is read does not depend on which came first.
        """
        todo = [span for span in (self._missing(s, e) for s, e in spans) if span]
        if len(todo) <= 1:
            self.spans += [(s, self._fetch(s, e)) for s, e in todo]
            return
        with ThreadPoolExecutor(max_workers=min(THREADS, len(todo))) as pool:
            self.spans += list(pool.map(lambda span: (span[0], self._fetch(*span)), todo))

    def _missing(self, start: int, end: int) -> tuple[int, int] | None:
        """``start..end`` less the held bytes at either end."""
        end = min(end, self.size - 1)
        while start <= end and self._held(start):
            start = (start // BLOCK + 1) * BLOCK if start // BLOCK in self.blocks else self._span_end(start)
        while start <= end and self._held(end):
            end = end // BLOCK * BLOCK - 1 if end // BLOCK in self.blocks else self._span_start(end) - 1
        return (start, end) if start <= end else None

    def _held(self, pos: int) -> bool:
        return pos // BLOCK in self.blocks or any(s <= pos < s + len(d) for s, d in self.spans)

    def _span_end(self, pos: int) -> int:
        return max(s + len(d) for s, d in self.spans if s <= pos < s + len(d))

    def _span_start(self, pos: int) -> int:
        return min(s for s, d in self.spans if s <= pos < s + len(d))

    def readinto(self, buf) -> int:
        n = min(len(buf), self.size - self.pos)
        if n <= 0:
            return 0
        out = bytearray()
        pos = self.pos
        while len(out) < n:
            take = self._from_spans(pos, n - len(out))
            if not take:
                b = pos // BLOCK
                if b not in self.blocks:
                    self._fetch_blocks(b, (self.pos + n - 1) // BLOCK)
                take = self.blocks[b][pos - b * BLOCK:][: n - len(out)]
            if not take:  # cannot happen with a verified block; never spin on it
                raise _Unverified(f"block {pos // BLOCK} holds no byte {pos}")
            out += take
            pos += len(take)
        buf[:n] = out
        self.pos = pos
        return n

    def _from_spans(self, pos: int, n: int) -> bytes:
        for s, d in self.spans:
            if s <= pos < s + len(d):
                return d[pos - s:pos - s + n]
        return b""

    def _fetch_blocks(self, first: int, last: int) -> None:
        """Blocks ``first``.. up to ``last`` or the first one held already, in one request."""
        stop = first
        while stop < last and stop + 1 not in self.blocks:
            stop += 1
        data = self._fetch(first * BLOCK, min(self.size, (stop + 1) * BLOCK) - 1)
        for b in range(first, stop + 1):
            self.blocks[b] = data[(b - first) * BLOCK:(b - first + 1) * BLOCK]
