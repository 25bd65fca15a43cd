"""A release's line index: every meaningful line of its package's Python files -> the files and line numbers
that hold it, made in one pass and kept in the cache.

Following code that moved (core/moved.py) asks where a line stands in the release, a few hundred times
for a series that fails two releases on; scanning the release's 36 MB of Python for each question cost
seconds a check. The index answers each from a sorted table instead, and only the candidate files it
names are read.

Kept under ``lines/<key>-<package>-<code>.idx``: ``key`` is the tree's identity by content (the sdist's
or wheel's sha256, a git tag's tree, a folder's Python files' digest), ``code`` this module's own digest
(a change of what it keeps starts afresh). The file is written whole or not at all (Cache.put_bytes) and
read back only when its sha256 matches and it names the tree asked for: a damaged entry is built again,
never believed. ``patchset cache prune`` removes a release's index with the release (its sha256 is in
the name).

The layout (little-endian arrays, as ``array`` writes them)::

    MAGIC, sha256 of the rest (32 bytes), then the rest:
    meta length (8 bytes), meta (zlib JSON: key, package, paths, array type codes and lengths),
    hashes  (Q)  the distinct meaningful lines' 64-bit BLAKE2b, sorted
    starts  (I)  where each line's places begin below (one more than hashes)
    places  (I, or Q past 65,535 files or lines) file << shift | 0-based line: the file (index into paths) in
                 path order, then line order
    defines (zlib) "name\\tfile,file..." lines: the top-level def/class names and the files that define them
"""

from __future__ import annotations

import bisect
import functools
import gc
import hashlib
import itertools
import json
import re
import sys
import zlib
from array import array
from collections.abc import Callable, Iterable
from pathlib import Path

from patchset.cache import Cache

MAGIC = b"patchset-lines 1\n"
KIND = "lines"  # the cache's folder
_DEFINES = re.compile(rb"^(?:async def|def|class) (\w+)", re.M)
_WORD = re.compile(r"\w+", re.ASCII)
_BORING = frozenset((b"else:", b"try:", b"pass", b"return", b"finally:", b"return None"))


def meaningful(line: bytes) -> bool:
    """A line that says something about where it is: not blank, not a lone bracket or keyword."""
    s = line.strip()
    return len(s) > 3 and s not in _BORING


def line_hash(line: bytes) -> int:
    """The 64-bit key of a line (without its newline)."""
    return int.from_bytes(hashlib.blake2b(line, digest_size=8).digest(), "big")


def build(files: Iterable[tuple[str, bytes]], key: str, package: str) -> bytes:
    """The index of ``files`` (path, content), in their order, as kept in the cache.

    A line is what lies between two newlines (a file that does not end with one is read as if it did),
    numbered from 0: the places ``PyIndex`` found by scanning the files joined.
    """
    frozen = gc.isenabled()
    gc.disable()  # half a million lists, none of them in a cycle: the collector would only walk them
    try:
        files = list(files)
        shift = 16 if len(files) < 1 << 16 and all(d.count(b"\n") < 1 << 16 for _, d in files) else 32
        return _build(files, key, package, shift)
    finally:
        if frozen:
            gc.enable()


def _build(files: list[tuple[str, bytes]], key: str, package: str, shift: int) -> bytes:
    paths: list[str] = []
    places: dict[bytes, list[int]] = {}
    defines: dict[bytes, list[int]] = {}
    boring = _BORING
    for fid, (path, data) in enumerate(files):
        paths.append(path)
        base = fid << shift
        for n, ln in enumerate(data.split(b"\n")):
            s = ln.strip()
            if len(s) > 3 and s not in boring:
                got = places.get(ln)
                if got is None:
                    places[ln] = [base | n]
                else:
                    got.append(base | n)
        for name in set(_DEFINES.findall(data)):
            defines.setdefault(name, []).append(fid)
    b2 = hashlib.blake2b
    digests = [b2(ln, digest_size=8).digest() for ln in places]  # big-endian: bytes order is number order
    order = sorted(range(len(digests)), key=digests.__getitem__)
    hashes = array("Q")
    hashes.frombytes(b"".join([digests[i] for i in order]))
    if sys.byteorder == "little":
        hashes.byteswap()
    at = list(places.values())
    runs = [at[i] for i in order]
    # Two lines, one key (about 2**-45 a release): their places as one run, the key said to be shared, and
    # PyIndex reads those places to tell the lines apart.
    shared = sorted({h for h, g in zip(hashes, hashes[1:], strict=False) if h == g})
    if shared:
        merged: dict[int, list[int]] = {}
        for h, run in zip(hashes, runs, strict=True):
            merged.setdefault(h, []).extend(run)
        hashes, runs = array("Q", merged), list(merged.values())
    starts = array("I", itertools.accumulate(map(len, runs), initial=0))
    posts = array("I" if shift == 16 else "Q", itertools.chain.from_iterable(runs))
    text = b"".join(name + b"\t" + b",".join(b"%d" % f for f in fs) + b"\n" for name, fs in sorted(defines.items()))
    meta = {"key": key, "package": package, "paths": paths, "shift": shift,
            "sizes": [len(hashes), len(starts), len(posts)], "shared": shared}
    arrays = [hashes, starts, posts]
    if sys.byteorder != "little":  # pragma: no cover  (kept little-endian, as the digest says)
        for a in arrays:
            a.byteswap()
    packed = zlib.compress(json.dumps(meta, separators=(",", ":")).encode(), 6)
    rest = b"".join([len(packed).to_bytes(8, "little"), packed, *(a.tobytes() for a in arrays),
                     zlib.compress(text, 6)])
    return MAGIC + hashlib.sha256(rest).digest() + rest


class LineIndex:
    """A kept index, read back: where each meaningful line stands, and which files define a name."""

    def __init__(self, data: bytes, key: str, package: str) -> None:
        """Raise ValueError when ``data`` is not a whole index of ``key``'s ``package``."""
        head = len(MAGIC) + 32
        if not data.startswith(MAGIC) or hashlib.sha256(memoryview(data)[head:]).digest() != data[len(MAGIC):head]:
            raise ValueError("not a whole line index")
        at = head + 8
        size = int.from_bytes(data[head:at], "little")
        meta = json.loads(zlib.decompress(data[at:at + size]))
        if meta.get("key") != key or meta.get("package") != package:
            raise ValueError("the index of another tree")
        at += size
        self.paths: list[str] = meta["paths"]
        self.shared = frozenset(meta["shared"])  # keys two lines share: their places must be read to be told apart
        arrays = []
        self._shift = meta["shift"]
        for code, n in zip(("Q", "I", "I" if self._shift == 16 else "Q"), meta["sizes"], strict=True):
            a = array(code)
            end = at + n * a.itemsize
            a.frombytes(data[at:end])
            if sys.byteorder != "little":  # pragma: no cover
                a.byteswap()
            arrays.append(a)
            at = end
        self._hashes, self._starts, self._posts = arrays
        self._defines_data = data[at:]
        self._defines: dict[str, list[int]] | None = None

    def places(self, line: bytes) -> list[tuple[int, int]]:
        """(file number, 0-based line) of every place of ``line`` (a meaningful line, without its newline),
        in path order then line order; a place of another line with the same key may be among them."""
        h = line_hash(line)
        i = bisect.bisect_left(self._hashes, h)
        if i == len(self._hashes) or self._hashes[i] != h:
            return []
        shift, mask = self._shift, (1 << self._shift) - 1
        return [(p >> shift, p & mask) for p in self._posts[self._starts[i]:self._starts[i + 1]]]

    def defines(self, name: str) -> list[int]:
        """The files (numbers) with a top-level ``def``/``async def``/``class`` named ``name`` (an ASCII word)."""
        if self._defines is None:
            self._defines = {}
            for row in zlib.decompress(self._defines_data).decode("utf-8", "surrogateescape").splitlines():
                word, _, fids = row.partition("\t")
                self._defines[word] = [int(f) for f in fids.split(",")]
        return self._defines.get(name, [])


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """This module's own digest: what the index holds, and how, is its code's."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def entry_name(key: str, package: str) -> str:
    return f"{key}-{package}-{code_digest()}.idx"


def kept(cache: Cache, key: str, package: str) -> bool:
    """Whether the cache has an entry for ``key``'s ``package`` (not read: it may still be damaged)."""
    return cache.path(KIND, entry_name(key, package)).is_file()


def load(cache: Cache, key: str, package: str) -> LineIndex | None:
    """The kept index of ``key``'s ``package``; None when there is none or it is damaged."""
    try:
        data = cache.path(KIND, entry_name(key, package)).read_bytes()
        return LineIndex(data, key, package)
    except (OSError, ValueError, KeyError, TypeError, zlib.error, EOFError):
        return None


def load_or_build(cache: Cache, key: str, package: str,
                  files: Callable[[], Iterable[tuple[str, bytes]]]) -> tuple[LineIndex, bool]:
    """The index of ``key``'s ``package``, built from ``files()`` (path, content pairs, in path order) and kept
    when the cache has none (or a damaged one); True when this call built it. One builder at a time
    (the entry's lock): a job that waited reads what the other kept."""
    found = load(cache, key, package)
    if found is not None:
        return found, False
    name = entry_name(key, package)
    with cache.lock(KIND, name):
        found = load(cache, key, package)
        if found is not None:
            return found, False
        data = build(files(), key, package)
        cache.put_bytes(data, KIND, name)
    return LineIndex(data, key, package), True


def tree_key(source: object) -> str | None:
    """The tree's identity by content, for the index's key: the sdist's or wheel's sha256, a git tag's tree;
    None for a folder (its Python files' digest is the key: :func:`for_source`)."""
    sha = getattr(source, "sha256", None) or getattr(getattr(source, "file", None), "sha256", None)
    if isinstance(sha, str):
        return sha
    commit = getattr(source, "commit", None)
    tree = getattr(getattr(commit, "tree", None), "hexsha", None)
    return f"git-{tree}" if isinstance(tree, str) else None


def for_source(source: object, package: str, cache: Cache | None = None) -> tuple[LineIndex, bool]:
    """The line index of ``package``'s Python files in ``source`` (made now, and kept, if the cache has none);
    True when this call made it. A streamed sdist makes it from what its pass held of the package (or from a
    pass made now), not from a whole tree (``python_files``)."""
    from patchset.sources import python_files

    cache = cache or getattr(source, "cache", None) or Cache()
    key = tree_key(source)
    files: dict[str, bytes] | None = None
    if key is None:  # a folder: by content
        files = python_files(source, package)  # type: ignore[arg-type]  # any source with listing
        digest = hashlib.sha256()
        for path, data in files.items():
            digest.update(b"%s\0%d\0" % (path.encode("utf-8", "surrogateescape"), len(data)))
            digest.update(data)
        key = digest.hexdigest()

    def read_all() -> Iterable[tuple[str, bytes]]:  # a streamed sdist's own pass: no whole tree
        return (files if files is not None else python_files(source, package)).items()  # type: ignore[arg-type]

    return load_or_build(cache, key, package, read_all)
