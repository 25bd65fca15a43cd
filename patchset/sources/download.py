"""Downloading a file the package index names into the cache, verified against the index's sha256.

A download that is cut short (the body ends early, the connection drops) is tried again, a few
times, with backoff; a body whose digest differs is refused. Where the index gives the file's size, a
server that announces more (``Content-Length``) is refused before a byte is read, and one that sends
more is refused at the first chunk past it: the digest alone would read all it sends (issue 26).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from patchset.cache import CHUNK, Cache, shared_mode
from patchset.errors import SourceError
from patchset.sources import http, urls

_T = TypeVar("_T")
DownloadProgress = Callable[[str, int, int], None]
#: Set by the command line when stderr is a terminal: the progress of every download without its own.
download_progress: DownloadProgress | None = None


def blob(cache: Cache, sha256: str, url: str, *, size: int | None = None,
         progress: Callable[[int, int], None] | None = None) -> Path:
    """The verified file with this sha256 (and ``size`` bytes, when the index says), downloaded from url when
    not cached."""
    return cache.blob(sha256, lambda final: _with_retries(sha256, url, final, progress, size))


def read_through(cache: Cache, sha256: str, url: str, consume: Callable[[Iterator[bytes]], _T], *,
                 size: int | None = None, progress: Callable[[int, int], None] | None = None) -> _T:
    """``consume(chunks)`` over the file with this sha256, read once, without keeping the file.

    From the cached blob when there is one, else streamed from ``url`` and verified: what
    ``consume`` returns is handed back only once every byte has passed and the digest matched, so
    a caller that keeps nothing before that keeps nothing unverified. A body cut short starts
    ``consume`` again from the first byte (a bounded number of times); one longer than ``size`` is refused.
    """
    final = cache.path("blobs", sha256[:2], sha256)
    if final.is_file():  # verified when it was downloaded, like every reader of it trusts
        with open(final, "rb") as f:
            return consume(iter(lambda: f.read(CHUNK), b""))
    for attempt in range(1, http.RETRIES + 2):
        try:
            got, hexdigest = _read_once(url, size, sha256, consume, progress)
        except _CutShort as e:
            if attempt > http.RETRIES:
                raise SourceError(f"cannot download {_name(url)}: {e} ({attempt} attempts)") from e
            time.sleep(http.BACKOFF * 2 ** (attempt - 1))
            continue
        except OSError as e:
            raise SourceError(f"cannot download {_name(url)}: {urls.redact(str(e))}") from e
        if hexdigest != sha256:
            raise SourceError(f"{_name(url)}: sha256 {hexdigest} does not match the "
                              f"index's {sha256}", hint="the download was corrupted or the index lies")
        return got  # type: ignore[return-value]  # None only when the digest check above raised
    raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover


def _read_once(url: str, size: int | None, sha256: str, consume: Callable[[Iterator[bytes]], _T],
               progress: Callable[[int, int], None] | None) -> tuple[_T | None, str]:
    """One streaming of ``url`` through ``consume``: what it returned and the body's sha256.

    None stands for what ``consume`` made of a body whose digest is wrong (it refused it: the caller
    says the digest is wrong instead). A body longer than ``size`` is refused whatever ``consume``
    made of the error; one cut short raises ``_CutShort`` for the caller to try again.
    """
    digest = hashlib.sha256()
    oversize: list[SourceError] = []  # what the consumer cannot hide, whatever it makes of the error

    def chunks() -> Iterator[bytes]:
        try:
            for chunk, done, total in _stream(url, size):
                digest.update(chunk)
                if progress:
                    progress(done, total)
                elif download_progress:
                    download_progress(_name(url), done, total)
                yield chunk
        except _Oversize as e:
            oversize.append(e)
            raise

    body = chunks()
    got: _T | None
    try:
        got = consume(body)
    except _Oversize:
        raise
    except SourceError:
        if oversize:
            raise oversize[0] from None
        # a corrupt download can look like a corrupt archive: the digest says which it is
        for _ in body:
            pass
        if digest.hexdigest() == sha256:
            raise
        got = None
    for _ in body:  # what the consumer did not need still counts for the digest
        pass
    if oversize:
        raise oversize[0]
    return got, digest.hexdigest()


def _with_retries(sha256: str, url: str, final: Path, progress: Callable[[int, int], None] | None,
                  size: int | None = None) -> None:
    for attempt in range(1, http.RETRIES + 2):
        try:
            _download(sha256, url, final, progress, size)
            return
        except _CutShort as e:
            if attempt > http.RETRIES:
                raise SourceError(f"cannot download {_name(url)}: {e} ({attempt} attempts)") from e
            time.sleep(http.BACKOFF * 2 ** (attempt - 1))


def _download(sha256: str, url: str, final: Path, progress: Callable[[int, int], None] | None,
              size: int | None = None) -> None:
    fd, tmp = tempfile.mkstemp(dir=final.parent, prefix=f".{final.name}.part-")
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out:
            for chunk, done, total in _stream(url, size):
                out.write(chunk)
                digest.update(chunk)
                if progress:
                    progress(done, total)
                elif download_progress:
                    download_progress(_name(url), done, total)
        if digest.hexdigest() != sha256:
            raise SourceError(f"{_name(url)}: sha256 {digest.hexdigest()} does not match the "
                              f"index's {sha256}", hint="the download was corrupted or the index lies")
        shared_mode(tmp)
        os.replace(tmp, final)
    except OSError as e:
        raise SourceError(f"cannot download {_name(url)}: {urls.redact(str(e))}") from e
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


class _CutShort(Exception):
    """The body ended early or the connection dropped: worth another try."""


class _Oversize(SourceError):
    """The server announces or sends more than the index's size of the file: never tried again."""


def _bounded(url: str, size: int | None, total: int, done: int) -> None:
    """Refuse a body announced (``total``) or sent (``done``) longer than the index's ``size``."""
    if size is None:
        return
    if total > size:
        raise _Oversize(f"cannot download {_name(url)}: the server announces {total} bytes (Content-Length), "
                        f"the index says the file has {size}", hint="the server or a proxy is not serving that file")
    if done > size:
        raise _Oversize(f"cannot download {_name(url)}: the server sent more than the {size} bytes the index "
                        "says the file has", hint="the server or a proxy is not serving that file")


def _name(url: str) -> str:
    return urls.redact(url.rsplit("/", 1)[-1])


def _stream(url: str, size: int | None = None) -> Iterator[tuple[bytes, int, int]]:
    """(chunk, bytes so far, total or 0) of ``url``, no more than ``size`` bytes; file: URLs are read directly."""
    if url.startswith("file:"):
        import urllib.request  # file: URLs only (a local mirror, the tests); see docs/records/performance.md

        with urllib.request.urlopen(url) as resp:
            total, done = int(resp.headers.get("Content-Length") or 0), 0
            _bounded(url, size, total, done)
            while chunk := resp.read(CHUNK):
                done += len(chunk)
                _bounded(url, size, total, done)
                yield chunk, done, total
        return
    import requests  # only when something is downloaded: see docs/records/performance.md

    try:
        with http.get(url, stream=True, headers={"Accept-Encoding": "identity"}) as resp:  # the bytes, as hashed
            http.check(resp, f"cannot download {url}")
            total, done, started = _length(resp.headers.get("Content-Length")), 0, time.monotonic()
            _bounded(url, size, total, done)  # before a byte of the body is read
            try:
                for chunk in resp.iter_content(CHUNK):
                    done += len(chunk)
                    _bounded(url, size, total, done)
                    yield chunk, done, total
            finally:
                http.record(urls.split_credentials(url)[0], resp.status_code, done, time.monotonic() - started)
            if total and done != total:  # urllib3 1.x does not enforce Content-Length itself
                raise _CutShort(f"{done} of {total} bytes came")
    except (requests.exceptions.ChunkedEncodingError, requests.exceptions.ConnectionError,
            requests.exceptions.Timeout) as e:
        raise _CutShort(http.describe(e)) from e
    except requests.RequestException as e:
        raise http.error(f"cannot download {url}", e) from e


def _length(header: str | None) -> int:
    """A Content-Length as a number; 0 when there is none or it is no number (then only what comes counts)."""
    try:
        return max(0, int(header or 0))
    except ValueError:
        return 0
