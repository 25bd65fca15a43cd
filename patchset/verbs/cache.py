"""`patchset cache info` and `patchset cache prune`: what the cache holds, per kind and release, and
removing what is no longer used, safely beside running jobs.

A release's entries are found by name: the sha256 of one of its files (an sdist's blob, its unpacked
tree, its streamed members; a wheel's members) is looked up in the index entries that name the file,
and venvs and index entries carry ``PROJECT-VERSION`` in their names. A pinned commit's tree says in its
``about.json`` which target it is (sources/commit.py), and its ``about.json`` is touched on every use.
The rest (parsed manifests and patches, pristine suite results, image test tools) belongs to no release.
Folders this code does not know are listed as ``other`` and never removed.

A release was last used when one of its index entries was last touched (every use goes through
``index.remembered``, which touches it). Prune removes a release only after taking its use lock
exclusively (:meth:`Cache.claim`: a running check or test holds it shared, so its release is skipped,
and one that starts meanwhile waits) and each entry only after taking its fill lock (one being filled
is skipped). An entry is renamed aside first, then deleted: a reader sees it whole or not at all.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import InvalidVersion, Version

from patchset.cache import Cache
from patchset.errors import UsageError

#: Top-level folders and what they hold; the order is the order of `cache info`.
KINDS = {
    "blobs": "downloads (sdists, wheels), by sha256",
    "trees": "unpacked sdists",
    "commits": "git commits that targets pin, one tree each",
    "sdist-members": "files read out of sdists",
    "lines": "line indexes of releases' Python files (moved-code leads)",
    "wheel-members": "files read out of wheels",
    "venvs": "CPU test venvs",
    "index": "the index's answers (file names, digests)",
    "baselines": "pristine suite results",
    "derived": "parsed manifests and patch files, kept check verdicts and leads",
    "image-test-tools": "pytest for images",
    "warm": "what each venv's warm interpreter imports (patchset test)",
}
#: Folders of the cache that are never entries.
NOT_ENTRIES = {"locks"}
_SHA = re.compile(r"[0-9a-f]{64}")
_NAMED = re.compile(r"(?P<project>[a-z0-9]+(?:[-_.][a-z0-9]+)*?)-(?P<version>\d[0-9a-z.+!]*)-")
DAY = 86400.0


@dataclass
class Entry:
    """One entry of the cache: a file or folder under a kind's folder."""

    kind: str
    path: Path
    size: int  # bytes on disk
    used: float  # modification time: when it was made, or last used for an index entry
    release: str | None = None  # "vllm 0.29.0" when the entry is one release's


@dataclass
class CacheInfo:
    """Every entry of the cache, with the releases they belong to and when each was last used."""

    root: Path
    entries: list[Entry] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(e.size for e in self.entries)

    def releases(self) -> dict[str, float]:
        """Release → when it was last used (newest entry time), most recently used first."""
        used: dict[str, float] = {}
        for e in self.entries:
            if e.release is not None:
                used[e.release] = max(used.get(e.release, 0.0), e.used)
        return dict(sorted(used.items(), key=lambda kv: -kv[1]))

    def by_kind(self) -> list[tuple[str | None, str, int, int]]:
        """(release or None, kind, entries, bytes): releases in version order, then what belongs to none;
        kinds in KINDS order."""
        groups: dict[tuple[str | None, str], list[Entry]] = {}
        for e in self.entries:
            groups.setdefault((e.release, e.kind), []).append(e)
        kinds = list(KINDS)

        def rank(key: tuple[str | None, str]) -> tuple:
            release, kind = key
            project, _, version = (release or "").partition(" ")
            return (release is None, project, _version_key(version),
                    kinds.index(kind) if kind in kinds else len(kinds), kind)

        return [(r, k, len(es), sum(e.size for e in es)) for (r, k), es in sorted(groups.items(), key=lambda kv:
                                                                                  rank(kv[0]))]


@dataclass
class PruneResult:
    """What prune removed, and what it left because a running job uses it or fills it."""

    root: Path
    dry_run: bool
    removed: list[Entry] = field(default_factory=list)
    in_use: list[str] = field(default_factory=list)  # releases skipped: a running job holds them
    busy: list[Entry] = field(default_factory=list)  # entries skipped: being filled
    kept: list[str] = field(default_factory=list)  # releases kept by --keep

    @property
    def freed(self) -> int:
        return sum(e.size for e in self.removed)


def cache_info(cache: Cache | None = None) -> CacheInfo:
    """Every entry under the cache's root (none when the cache does not exist yet)."""
    cache = cache or Cache()
    info = CacheInfo(cache.root)
    if not cache.root.is_dir():
        return info
    releases = _releases_by_sha(cache.root / "index")
    for top in sorted(cache.root.iterdir()):
        if top.name in NOT_ENTRIES or top.name.startswith("."):
            continue
        if not top.is_dir() or top.is_symlink():
            info.entries.append(Entry("other", top, _disk_size(top), _mtime(top)))
            continue
        kind = top.name if top.name in KINDS else "other"
        for path in _entries(top):
            used = _mtime(path / "about.json" if kind == "commits" else path)  # touched on every use
            info.entries.append(Entry(kind, path, _disk_size(path), used, _release_of(path, releases)))
    return info


def prune(cache: Cache | None = None, *, keep: int | None = None, older_than: float | None = None,
          dry_run: bool = False, now: float | None = None) -> PruneResult:
    """Remove the entries of releases outside the ``keep`` most recently used, or of releases (and entries
    of no release) not used for ``older_than`` days. Entries of unknown folders are never removed."""
    if (keep is None) == (older_than is None):
        raise UsageError("say what to prune", hint="pass --keep N (releases to keep) or --older-than DAYS")
    if keep is not None and keep < 0 or older_than is not None and older_than < 0:
        raise UsageError("--keep and --older-than take a number of 0 or more")
    cache = cache or Cache()
    info = cache_info(cache)
    result = PruneResult(cache.root, dry_run)
    now = time.time() if now is None else now
    releases = info.releases()
    if keep is not None:
        result.kept = list(releases)[:keep]
        doomed = set(list(releases)[keep:])
        loose: list[Entry] = []
    else:
        assert older_than is not None
        cutoff = now - older_than * DAY
        result.kept = [r for r, used in releases.items() if used >= cutoff]
        doomed = {r for r, used in releases.items() if used < cutoff}
        loose = [e for e in info.entries if e.release is None and e.kind in KINDS and e.used < cutoff]
    for release in sorted(doomed):
        project, version = release.split(" ", 1)
        entries = [e for e in info.entries if e.release == release]
        with cache.claim(project, version) as free:
            if not free:
                result.in_use.append(release)
                continue
            for e in entries:
                _remove(cache, e, result)
    for e in loose:
        _remove(cache, e, result)
    return result


def _remove(cache: Cache, e: Entry, result: PruneResult) -> None:
    lock_parts = _lock_parts(cache, e)
    with cache.claim_entry(*lock_parts) if lock_parts else contextlib.nullcontext(True) as free:
        if not free:
            result.busy.append(e)
            return
        if not result.dry_run:
            aside = e.path.with_name(f".{e.path.name}.part-pruned-{os.getpid()}")
            try:
                os.replace(e.path, aside)  # atomic: a reader sees the whole entry or none
            except FileNotFoundError:
                return
            if aside.is_dir() and not aside.is_symlink():
                shutil.rmtree(aside, ignore_errors=True)
            else:
                aside.unlink(missing_ok=True)
        result.removed.append(e)


def _lock_parts(cache: Cache, e: Entry) -> tuple[str, ...]:
    """The fill lock of an entry, as its filler names it (``Cache.lock(kind, key)``)."""
    rel = e.path.relative_to(cache.root).parts
    if e.kind == "blobs":
        return ("blobs", rel[-1])
    if e.kind in ("trees", "commits", "venvs", "image-test-tools", "sdist-members", "wheel-members"):
        return rel[:2]
    if e.kind == "baselines":
        return ("baselines", e.path.name.removesuffix(".json"))
    if e.kind == "lines":
        return ("lines", e.path.name)
    return ()


def _version_key(version: str) -> tuple:
    try:
        return (0, Version(version))
    except InvalidVersion:
        return (1, version)


def parse_days(value: str) -> float:
    try:
        days = float(value)
    except ValueError:
        days = -1.0
    if not 0 <= days < float("inf"):
        raise UsageError(f"--older-than {value!r} is not a number of days (0 or more)")
    return days


def _entries(top: Path) -> list[Path]:
    """The entries of one kind's folder: files and folders one level down (two for blobs/xx/sha,
    baselines/xx/key.json and derived/kind/key); temporary parts of a fill are not entries."""
    depth = 2 if top.name in ("blobs", "baselines", "derived") else 1
    level = [top]
    for step in range(depth):
        nxt: list[Path] = []
        for folder in level:
            with contextlib.suppress(OSError):
                nxt += [p for p in sorted(folder.iterdir()) if not p.name.startswith(".")]
        level = [p for p in nxt if p.is_dir() and not p.is_symlink()] if step < depth - 1 else nxt
    return level


def _releases_by_sha(index: Path) -> dict[str, str]:
    """sha256 of a release's file → ``"PROJECT VERSION"``, from the index entries."""
    out: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for f in index.iterdir():
            m = _NAMED.match(f.name)
            if not m or not f.name.endswith(".json"):
                continue
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                out[json.loads(f.read_text())["sha256"]] = f"{m['project']} {m['version']}"
    return out


def _release_of(path: Path, by_sha: dict[str, str]) -> str | None:
    if path.parent.name == "commits":  # a commit's entry says which target pinned it
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            about = json.loads((path / "about.json").read_bytes())
            return f"{about['project']} {about['version']}"
        return None
    m = _SHA.search(path.name)
    if m:
        return by_sha.get(m.group())
    if path.parent.name in ("venvs", "index"):
        named = _NAMED.match(path.name)
        if named:
            return f"{named['project']} {named['version']}"
    return None


def _mtime(path: Path) -> float:
    try:
        return path.lstat().st_mtime
    except OSError:
        return 0.0


def _disk_size(path: Path) -> int:
    """Bytes on disk under ``path`` (as du counts them: blocks, each hard link once)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    stack = [str(path)]
    while stack:
        p = stack.pop()
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        total += getattr(st, "st_blocks", 0) * 512 or st.st_size
        if os.path.isdir(p) and not os.path.islink(p):
            with contextlib.suppress(OSError), os.scandir(p) as it:
                stack += [e.path for e in it]
    return total
