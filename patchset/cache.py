"""The one cache: content addressed, verified, safe for concurrent CI jobs.

Every entry is written under a temporary name and renamed into place, so a
reader sees a whole entry or none; a file lock per entry keeps two jobs from
downloading the same 40 MB at once. Entries get the modes the umask allows
(a CI group sharing one cache can read them all and take every lock), not the
owner-only modes of ``mkstemp``/``mkdtemp``.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

CHUNK = 1 << 20


def cache_root() -> Path:
    return Path(os.environ.get("PATCHSET_CACHE") or Path.home() / ".cache" / "patchset")


def umask() -> int:
    """The process umask, read without changing it where the system says it (Linux)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def shared_mode(path: Path | str) -> None:
    """Give a file or folder made owner-only by mkstemp/mkdtemp the modes a plain create would have."""
    full = 0o777 if os.path.isdir(path) else 0o666
    os.chmod(path, full & ~umask())


#: (file name, bytes so far, total or 0): where downloads report progress when the caller gave no callback.
#: The CLI sets it for a terminal (patchset.cli.progress); the library itself never prints.


class Cache:
    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root else cache_root()

    def path(self, *parts: str) -> Path:
        return self.root.joinpath(*parts)

    @contextlib.contextmanager
    def lock(self, *parts: str) -> Iterator[None]:
        lock_path = self.path("locks", *parts)
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        from filelock import FileLock  # only when an entry is filled: warm reads take no lock

        # filelock chmods the lock file to `mode` itself, past the umask: apply the umask here.
        with FileLock(str(lock_path) + ".lock", mode=0o666 & ~umask()):
            yield

    def blob(self, sha256: str, fetch: Callable[[Path], None]) -> Path:
        """The file with this sha256; when it is not cached, ``fetch(final)`` puts the verified file at ``final``
        (under a ``.part-`` name first, then renamed into place), holding the entry's lock."""
        final = self.path("blobs", sha256[:2], sha256)
        if final.is_file():
            return final
        with self.lock("blobs", sha256):
            if final.is_file():
                return final
            final.parent.mkdir(parents=True, exist_ok=True)
            _clear_parts(final)
            fetch(final)
        return final

    def put_bytes(self, data: bytes, *parts: str) -> Path:
        final = self.path(*parts)
        final.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=final.parent, prefix=f".{final.name}.part-")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            shared_mode(tmp)
            os.replace(tmp, final)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        return final

    def tree(self, key: str, fill: Callable[[Path], None], *, folder: str = "trees") -> Path:
        """A directory built once by ``fill`` into a temporary place, then renamed in (under ``folder``)."""
        final = self.path(folder, key)
        if final.is_dir():
            return final
        with self.lock(folder, key):
            if final.is_dir():
                return final
            final.parent.mkdir(parents=True, exist_ok=True)
            _clear_parts(final)

            tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{key}.part-"))
            try:
                shared_mode(tmp)
                fill(tmp)
                os.replace(tmp, final)
            finally:
                if tmp.exists():
                    shutil.rmtree(tmp, ignore_errors=True)
        return final


    def in_use(self, project: str, version: str, record: Path | None = None) -> None:
        """Say that this process uses ``project`` ``version``'s entries until it exits.

        A shared lock on ``locks/use/PROJECT-VERSION`` (flock, held by an open descriptor for the life
        of the process, forked children included), which ``patchset cache prune`` must take exclusively
        before it removes anything of that release: a running check or test never loses a tree under
        it, and a prune of a release waits for nobody (it skips the release). ``record`` (the
        release's index entry) gets its modification time set: that is when the release was last used.
        """
        path = self.path("locks", "use", f"{project}-{version}")
        if str(path) not in _HELD:
            with contextlib.suppress(OSError, ImportError):  # no lock (read-only cache, no fcntl): no prune safety

                path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666 & ~umask())
                fcntl.flock(fd, fcntl.LOCK_SH)  # waits while a prune removes this release
                _HELD[str(path)] = fd
        if record is not None:
            with contextlib.suppress(OSError):
                os.utime(record)

    @contextlib.contextmanager
    def claim(self, project: str, version: str) -> Iterator[bool]:
        """Whether nobody uses ``project`` ``version`` now; while True, nobody starts to (see :meth:`in_use`)."""
        path = self.path("locks", "use", f"{project}-{version}")
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666 & ~umask())
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            yield True
        finally:
            os.close(fd)  # closing releases the lock

    @contextlib.contextmanager
    def claim_entry(self, *parts: str) -> Iterator[bool]:
        """Whether nobody is filling the entry ``parts`` now (its fill lock, not waited for)."""
        from filelock import FileLock, Timeout

        lock_path = self.path("locks", *parts)
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(lock_path) + ".lock", mode=0o666 & ~umask())
        try:
            lock.acquire(timeout=0)
        except Timeout:
            yield False
            return
        try:
            yield True
        finally:
            lock.release()


#: Releases this process uses: the path of its use lock -> the descriptor holding the shared lock.
_HELD: dict[str, int] = {}


def release_uses() -> None:
    """Stop saying this process uses the releases it used (a long-lived process between two jobs)."""
    while _HELD:
        with contextlib.suppress(OSError):
            os.close(_HELD.popitem()[1])


def _clear_parts(final: Path) -> None:
    """Remove what an interrupted fill of ``final`` left behind; the caller holds ``final``'s lock."""
    for part in final.parent.glob(f".{final.name}.part-*"):
        if part.is_dir() and not part.is_symlink():
            shutil.rmtree(part, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                part.unlink()


def derived(kind: str, content: bytes, code: Sequence[str], suffix: str = ".json") -> Path | None:
    """Where a result computed from ``content`` by the code in the files ``code`` is kept (as JSON, or
    what ``suffix`` says).

    The key is the sha256 of the content and of each code file's path, size and modification time,
    so an upgrade or an edit of the code (an editable install) starts afresh. None when
    ``PATCHSET_NO_PARSE_CACHE`` is set. Only pure functions of their input are kept here (a manifest's
    parse, a patch file's): an entry can be deleted at any time, and one that cannot be read is
    computed again.
    """
    if os.environ.get("PATCHSET_NO_PARSE_CACHE"):
        return None
    key = hashlib.sha256(_code_key(tuple(code)))
    key.update(content)
    return cache_root() / "derived" / kind / f"{key.hexdigest()}{suffix}"


@functools.lru_cache(maxsize=16)
def _code_key(code: tuple[str, ...]) -> bytes:
    """The code files' part of a derived entry's key, once per process (a check asks for it per patch)."""
    out = []
    for f in code:
        try:
            st = os.stat(f)
            out.append(f"{f}:{st.st_size}:{st.st_mtime_ns}\0")
        except OSError:
            out.append(f"{f}:?\0")
    return "".join(out).encode()


def read_derived(entry: Path | None) -> object | None:
    """The JSON kept at ``entry``, or None when there is none or it cannot be read."""
    data = read_derived_bytes(entry)
    if data is None:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None


def read_derived_bytes(entry: Path | None) -> bytes | None:
    """The bytes kept at ``entry``, or None when there are none or they cannot be read."""
    if entry is None:
        return None
    try:
        return entry.read_bytes()
    except OSError:
        return None


def keep_derived(entry: Path | None, value: object) -> None:
    """Keep ``value`` at ``entry`` as JSON (whole or not at all); a cache that cannot be written only costs time."""
    keep_derived_bytes(entry, json.dumps(value, separators=(",", ":")).encode())


def keep_derived_bytes(entry: Path | None, data: bytes, *, replace: bool = False) -> None:
    """Keep ``data`` at ``entry`` (whole or not at all); ``replace``: also over an entry found damaged."""
    if entry is None or (entry.exists() and not replace):
        return
    with contextlib.suppress(OSError):
        Cache(entry.parent.parent.parent).put_bytes(data, *entry.parts[-3:])
