"""A release's sdist from the package index: the full upstream tree at the tag.

A check needs only the files its series touches, so those are what the cache keeps: the sdist is
streamed once (downloaded, verified against the index's sha256, decompressed and read member by
member in one pass, without keeping the archive) and the members asked for are written under
``sdist-members/<sha256>/``, with the archive's listing beside them. A release checked there costs
under a megabyte of cache, not the 150 MB of the unpacked tree. The whole tree is unpacked (into
``trees/sdist-<sha256>``, as before) only when something needs it on disk: :attr:`SdistSource.root`
(the test runner's upstream tests, a fork-shaped fixture), or a read of a file the streamed pass did
not keep. Once the whole tree is there, every read comes from it. A pass asked to (``check`` on a cold
cache, ``next``, ``port``) also holds the package's Python modules in memory for the process: a release's
line index is made from them (sources/lineindex.py) and the modules a moved-code search reads come from
them (and are then kept as members), so following moved code needs no whole tree either.

Cache layout, one entry per sdist (``patchset cache`` reads it)::

    sdist-members/<sha256>/about.json    {"filename", "tops", "listed"}: what the archive is
    sdist-members/<sha256>/listing       every file of the archive, one path a line
    sdist-members/<sha256>/files/<path>  the members kept, byte for byte as in the archive

Each file is written whole under a temporary name and renamed into place, members first and
``about.json`` last, and only after the stream's digest matched: a reader sees a verified member or
none, and trusts ``listing`` (to answer "not in the sdist") only once it is whole.
"""

from __future__ import annotations

import json
import tarfile
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from patchset.cache import Cache
from patchset.errors import SourceError
from patchset.sources import download, index
from patchset.sources.local import DirSource

if TYPE_CHECKING:  # tarfile only when an sdist is read: a warm cache reads plain files
    import tarfile

MEMBERS = "sdist-members"


class SdistSource(DirSource):
    """The sdist's tree: the members a check asked for, or the whole unpacked tree once one exists."""

    def __init__(self, project: str, version: str, cache: Cache, *, progress=None) -> None:
        found = index.remembered(cache, "sdist", project, version, index.sdist)
        self.cache, self.found, self.progress = cache, found, progress
        self.identity = f"sdist:{found.filename}@sha256:{found.sha256[:12]}"
        self.sha256 = found.sha256
        self.warnings: list[str] = []
        self.source_tree: bool | None = True
        self.kind = "sdist"  # the full upstream tree at the tag
        self.package = ""
        self.store = cache.path(MEMBERS, found.sha256)
        whole = cache.path("trees", f"sdist-{found.sha256}")
        self._root: Path | None = whole if whole.is_dir() else None
        self._about: dict | None = None
        self._listing: frozenset[str] | None = None
        #: A package's Python files as this process's streamed pass read them (kept in memory, not in the
        #: cache): what the release's line index is made from, and the files a moved-code search reads.
        self._held: dict[str, bytes] = {}
        self._held_package: str | None = None
        #: The package whose Python files every streamed pass holds (``next`` and ``port`` read modules
        #: beyond the series' files: the pass that reads the series' files serves them too).
        self.collect: str | None = None

    @property
    def root(self) -> Path:  # type: ignore[override]  # DirSource's attribute, filled on first use here
        """The whole unpacked tree (downloaded and unpacked now if it is not in the cache)."""
        if self._root is None:
            blob = download.blob(self.cache, self.sha256, self.found.url, size=self.found.size, progress=self.progress)
            self._root = self.cache.tree(f"sdist-{self.sha256}", lambda tmp: _unpack(blob, tmp, self.found.filename))
        return self._root

    @root.setter
    def root(self, value: Path) -> None:
        self._root = Path(value)

    def covers(self, path: str) -> bool:
        """Every path: an upstream tree checks every hunk, and a file it lacks fails (core.trees)."""
        return True

    def read(self, path: str) -> bytes | None:
        if self._root is None:
            try:
                return (self.store / "files" / path).read_bytes()
            except (FileNotFoundError, NotADirectoryError):
                pass
            if path in self._held:  # a module this process's pass read (for the line index), not kept
                return self._held[path]
            if not (self.store / "about.json").is_file():  # never streamed: one pass keeps this file
                self.prefetch([path])
                return self.read(path)
            if path not in self._read_listing():
                return None  # not in the archive: nothing to unpack for it
        return super().read(path)  # in the archive, not kept: the whole tree serves this read and the next

    def pending(self, paths: Iterable[str]) -> bool:
        """Whether :meth:`prefetch` of ``paths`` would stream the sdist (the cache cannot answer them all)."""
        return self._root is None and self._needs_pass(sorted(set(paths)))

    def prefetch(self, paths: Iterable[str], python: str | None = None) -> dict[str, bytes] | None:
        """Keep ``paths`` from one streamed pass over the sdist, unless the cache answers them all.

        ``python``: a package whose Python files that pass, if it happens, also holds in memory (not in the
        cache) for this process: the release's line index is made from them if a hunk fails (check). They
        are returned as well, for a parent process to :meth:`hold` (None: no pass, nothing held)."""
        if self._root is not None:
            return None
        wanted = sorted(set(paths))
        if not self._needs_pass(wanted):
            return None
        with self.cache.lock(MEMBERS, self.sha256):
            self._about = self._listing = None  # another job may have filled it while we waited
            if not self._needs_pass(wanted):
                return None
            return self._pass(wanted, python or self.collect)

    def _pass(self, wanted: list[str], python: str | None) -> dict[str, bytes] | None:
        """One streamed pass (the caller holds the entry's lock): ``wanted`` kept, ``python``'s files held."""
        collect = f"{python}/" if python else None
        # What an earlier pass kept stays; this pass reads them again, from the same verified bytes.
        kept, listing, tops = download.read_through(self.cache,
            self.sha256, self.found.url,
            lambda chunks: stream_members(chunks, set(wanted), self.found.filename, collect=collect),
            size=self.found.size, progress=self.progress)
        held, asked = {}, set(wanted)
        for path, data in kept.items():
            if path in asked:
                self.cache.put_bytes(data, MEMBERS, self.sha256, "files", *path.split("/"))
            if collect and path.startswith(collect) and path.endswith(".py"):
                held[path] = data
        self.cache.put_bytes("".join(p + "\n" for p in listing).encode(), MEMBERS, self.sha256, "listing")
        about = {"filename": self.found.filename, "tops": sorted(tops), "listed": len(listing)}
        self.cache.put_bytes(json.dumps(about).encode(), MEMBERS, self.sha256, "about.json")
        self._about, self._listing = about, frozenset(listing)
        if python is None:
            return None
        self.hold(python, held)
        return held

    def hold(self, package: str, files: dict[str, bytes] | None) -> None:
        """Hold ``package``'s Python files, as a streamed pass (maybe another process's) read them all."""
        if files is not None:
            self._held, self._held_package = files, package

    def drop_held(self) -> None:
        """Forget the modules a pass held (nothing will be followed in this release)."""
        self._held, self._held_package = {}, None

    def python_files(self, package: str) -> dict[str, bytes]:
        """Every Python module of ``package``, in path order: from the whole tree where there is one, else
        from this process's streamed pass, else from a pass made now (nothing more is kept in the cache)."""
        if self._root is not None:
            from patchset.sources import listed_python_files

            return listed_python_files(self, package)
        if self._held_package != package:
            with self.cache.lock(MEMBERS, self.sha256):
                self._about = self._listing = None
                self._pass([], package)
        return dict(sorted(self._held.items()))

    def read_python(self, path: str) -> bytes | None:
        """A module a moved-code search names: kept, or held from a pass (and then kept, for the next run
        that asks), or a pass made now for the package's files, not the whole tree."""
        if self._root is not None:
            return self.read(path)
        try:
            return (self.store / "files" / path).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            pass
        package = path.split("/", 1)[0]
        if path not in self._held and self._held_package != package and path in self._read_listing():
            self.python_files(package)
        data = self._held.get(path)
        if data is None:
            return self.read(path)
        self.cache.put_bytes(data, MEMBERS, self.sha256, "files", *path.split("/"))
        return data

    def _needs_pass(self, paths: list[str]) -> bool:
        """Whether the cache entry cannot answer ``paths`` (or, asked for none, has no listing yet)."""
        if not paths:
            return not (self.store / "about.json").is_file()
        return bool(self._missing(paths))

    def _missing(self, paths: list[str]) -> list[str]:
        """The paths this cache entry cannot answer yet (all of them when it has no listing)."""
        absent = [p for p in paths if not (self.store / "files" / p).is_file()]
        if not absent:  # every one kept: no need to read the listing
            return []
        try:
            listing = self._read_listing(fill=False)
        except FileNotFoundError:
            return absent
        return [p for p in absent if p in listing]

    def _read_about(self) -> dict:
        if self._about is None:
            self._about = read_about(self.store / "about.json")
            if self._about is None:
                self.prefetch([])  # the listing and tops, from a pass that keeps no member
                if self._about is None:  # a whole tree appeared meanwhile (another job's test)
                    self._about = {"tops": sorted(p.name for p in self.root.iterdir())}
        return self._about

    def _read_listing(self, *, fill: bool = True) -> frozenset[str]:
        if self._listing is None:
            if not (self.store / "about.json").is_file():  # about.json is written last: the listing is whole
                if not fill:
                    raise FileNotFoundError(self.store / "about.json")
                self._read_about()
                if self._listing is not None:
                    return self._listing
            self._listing = frozenset((self.store / "listing").read_text("utf-8", "surrogateescape").splitlines())
        return self._listing


def read_about(path: Path) -> dict | None:
    """What a streamed pass kept about the archive (``about.json``); None when it is missing or damaged (not
    a JSON object whose ``tops`` are names): the sdist is streamed again (fuzzed: docs/fuzzing.md)."""
    try:
        about = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    tops = about.get("tops") if isinstance(about, dict) else None
    if not isinstance(tops, list) or not all(isinstance(t, str) for t in tops):
        return None
    return about


class _Chunks:
    """A read-only file over an iterator of byte strings, as tarfile's stream mode reads one."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._buf = memoryview(b"")

    def read(self, size: int = -1) -> bytes:
        if not self._buf:
            self._buf = memoryview(next(self._chunks, b""))
        if size < 0 or size >= len(self._buf):
            out, self._buf = bytes(self._buf), memoryview(b"")
            return out
        out, self._buf = bytes(self._buf[:size]), self._buf[size:]
        return out


def stream_members(chunks: Iterator[bytes], wanted: set[str], name: str,
                   collect: str | None = None) -> tuple[dict[str, bytes], list[str], set[str]]:
    """One pass over a .tar.gz given as chunks: (the wanted files' bytes, every file's path, the top-level names).

    ``collect``: a folder (``vllm/``) whose ``.py`` files are returned as well, as if wanted.

    Paths are relative to the archive's top folder, as :func:`safe_members` renames them; a member
    that :func:`safe_members` would refuse refuses the whole archive here too, before anything is kept.
    """

    kept: dict[str, bytes] = {}
    listing: list[str] = []
    tops: set[str] = set()
    prefix: str | None = None
    try:
        with tarfile.open(fileobj=_Chunks(chunks), mode="r|gz") as tar:  # type: ignore[call-overload]
            for m in tar:
                if prefix is None:
                    prefix = m.name.split("/", 1)[0] + "/"
                safe = safe_members([m], name, prefix)
                if not safe:
                    continue
                rel = safe[0].name
                tops.add(rel.split("/", 1)[0])
                if not m.isfile():
                    continue
                listing.append(rel)
                if rel in wanted or collect and rel.startswith(collect) and rel.endswith(".py"):
                    f = tar.extractfile(m)
                    assert f is not None  # a regular file always has one
                    kept[rel] = f.read()
    except (tarfile.TarError, OSError, EOFError) as e:
        raise SourceError(f"cannot unpack {name}: {e}") from e
    listing.sort()
    return kept, listing, tops


def _unpack(blob: Path, dest: Path, name: str) -> None:
    try:
        with tarfile.open(blob, "r:gz") as tar:
            keep = safe_members(tar.getmembers(), name)
            # Python's own data filter where this Python has it (3.10.12+, 3.11.4+), as a second line;
            # safe_members has already refused links, absolute paths and `..` on every Python.
            if hasattr(tarfile, "data_filter"):
                tar.extractall(dest, members=keep, filter="data")
            else:
                tar.extractall(dest, members=keep)  # every member was checked above
    except (tarfile.TarError, OSError, EOFError, zlib.error) as e:  # zlib/EOF: a damaged or cut gzip stream
        raise SourceError(f"cannot unpack {name}: {e}", file=name) from e


#: Sizes no vLLM sdist comes near (its largest file is a few MiB, the whole tree about 150 MiB unpacked):
#: a member or archive beyond them would fill the cache's disk, so the archive is refused before unpacking.
MAX_MEMBER = 256 * 1024 * 1024
MAX_TOTAL = 4 * 1024 * 1024 * 1024


def safe_members(members: list[tarfile.TarInfo], name: str, prefix: str | None = None) -> list[tarfile.TarInfo]:
    """The members under the archive's top folder, renamed relative to it; any unsafe one refuses it all.

    An sdist holds regular files and folders only: a link, a device, an absolute path or a `..`
    could write outside the cache (or read through a link later), so the whole archive is refused.
    ``prefix``: the top folder, when ``members`` is not the whole archive from its first member on.
    """
    if prefix is None:
        prefix = members[0].name.split("/", 1)[0] + "/" if members else ""
    keep = []
    total = 0
    for m in members:
        total += m.size
        if m.size > MAX_MEMBER or total > MAX_TOTAL or m.issparse():
            what = "a sparse file" if m.issparse() else f"{m.size} bytes" if m.size > MAX_MEMBER else \
                f"past {MAX_TOTAL} bytes in all"
            raise SourceError(f"{name}: member {m.name!r} is {what}, more than a vLLM sdist holds; nothing was "
                              "unpacked", file=name, hint="the sdist is corrupt or malicious; do not use it")
        parts = m.name.split("/")
        if m.name.startswith("/") or ".." in parts or "\\" in m.name or ":" in parts[0]:
            raise SourceError(f"{name}: member {m.name!r} points outside the archive; nothing was unpacked", file=name,
                              hint="the sdist is corrupt or malicious; do not use it")
        if not (m.isfile() or m.isdir()):
            raise SourceError(f"{name}: member {m.name!r} is a {_kind(m)}, not a file or folder; nothing was "
                              f"unpacked", file=name, hint="an sdist holds files and folders only")
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


def release_listing(project: str, version: str, cache: Cache | None = None) -> tuple[frozenset[str], frozenset[str]]:
    """Every file of the release's sdist and the names at its top (one streamed pass the first time, kept in the
    cache after): what the release holds beside its package, for trees that hold the package alone."""
    src = SdistSource(project, version, cache or Cache())
    tops = frozenset(src._read_about()["tops"])
    try:
        return src._read_listing(), tops
    except FileNotFoundError:  # a whole unpacked tree answered, with no listing kept beside it
        root = src.root
        return frozenset(str(f.relative_to(root)) for f in root.rglob("*") if f.is_file()), tops
