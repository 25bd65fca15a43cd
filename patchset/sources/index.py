"""A PEP 691 package index client: which files a release has, and their digests.

The legacy JSON API is not served by every index (nor by the one here), and
``pip download`` of vLLM's sdist runs its build backend, which imports torch.
The simple API answers everywhere pip works, mirrors included.

Kept hand-written rather than ``pypi-simple`` (issue 13), measured with ``bench/libs.py``
(``PYTHONPATH=<pypi-simple 1.8.0 and remotezip 0.12.6 installed with pip --target> .venv/bin/python
bench/libs.py --rounds 9``, 2026-11-30, listing vllm's 309 files): both make one request for the
same 125 KiB and return the same files and sha256; the median listing took 0.011 s here and 0.061 s
through ``PyPISimple(session=...).get_project_page`` (its pydantic models). The library would
replace only :func:`project_files`' 25 lines of JSON reading: the credentials, the CA bundle, the
retries (``patchset.sources.http``) and finding pip's index and settings stay ours either way, while
it brings five packages (pydantic, pydantic-core, beautifulsoup4, soupsieve, mailbits). Revisit if
the legacy HTML form of the simple API (PEP 503) must be read: that is what it would save writing.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from packaging import tags
from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from patchset.errors import NoSuchRelease, SourceError
from patchset.sources import canonical_name, http, pip, urls

if TYPE_CHECKING:
    from packaging.tags import Tag

ACCEPT = "application/vnd.pypi.simple.v1+json"
#: The most a project page may hold: a page that declares or sends more is refused unread.
MAX_PAGE = 64 * 1024 * 1024


@dataclass(frozen=True)
class IndexFile:
    """A file of a release on the package index: its name, URL and sha256."""

    filename: str
    url: str
    sha256: str
    size: int | None = None




@cache
def project_files(project: str, base: str | None = None) -> tuple[IndexFile, ...]:
    """The release files the index lists for ``project``; their URLs carry no credentials."""
    pip.start_pip_queries(index=base is None)  # they run while requests is imported
    import requests  # only when the index is asked: the cache answers most runs

    base_url, creds = urls.split_credentials(base or pip.index_url())
    url = base_url + canonicalize_name(project) + "/"
    hint = "set PIP_INDEX_URL or PATCHSET_INDEX_URL to a PEP 691 index"

    try:
        resp = http.get(url, headers={"Accept": ACCEPT}, credentials=creds, stream=True)
        if resp.status_code >= 400:
            resp.close()
        http.check(resp, f"cannot list {project} on the package index ({url})")
        data = http.read_body(resp, MAX_PAGE, url)  # vllm's page, 300 files, is 125 KiB
    except requests.RequestException as e:
        raise http.error(f"cannot list {project} on the package index ({url})", e, hint) from e
    return project_page(data, url)


def project_page(data: bytes, url: str) -> tuple[IndexFile, ...]:
    """The files of a PEP 691 project page; a page that is not one is refused, naming the URL.

    A file entry without a sha256 is left out (nothing could verify it); one that is not shaped as
    PEP 691 says (a file name, a URL, a size that is a number) refuses the page: it is not an index.
    """
    hint = "set PIP_INDEX_URL or PATCHSET_INDEX_URL to a PEP 691 index"
    where = urls.redact(url)
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as e:  # RecursionError: JSON nested thousands deep
        raise SourceError(f"{where} did not answer PEP 691 JSON ({str(e)[:200] or type(e).__name__})",
                          file=where, hint=hint) from e
    files = doc.get("files", []) if isinstance(doc, dict) else None
    if not isinstance(files, list):
        raise SourceError(f"{where} did not answer a PEP 691 project page (no list of files)", file=where, hint=hint)
    out = []
    for f in files:
        hashes = f.get("hashes") if isinstance(f, dict) else None
        sha = hashes.get("sha256") if isinstance(hashes, dict) else None
        if not sha:
            continue
        size = f.get("size")
        if not (isinstance(sha, str) and isinstance(f.get("filename"), str) and isinstance(f.get("url"), str)
                and (size is None or (isinstance(size, int) and not isinstance(size, bool) and size >= 0))):
            raise SourceError(f"{where} lists a file that is not shaped as PEP 691 says: {str(f)[:200]}",
                              file=where, hint=hint)
        try:
            file_url, _ = urls.split_credentials(urllib.parse.urljoin(url, f["url"]))
        except ValueError as e:  # urllib refuses some URLs outright (an invalid IPv6 host)
            raise SourceError(f"{where} lists a file with an unusable URL {f['url'][:200]!r} ({e})",
                              file=where, hint=hint) from e
        out.append(IndexFile(f["filename"], file_url, sha, size))
    return tuple(out)


def sdist(project: str, version: str) -> IndexFile:
    files = project_files(project)
    for f in files:
        if f.filename.endswith(".tar.gz"):
            try:
                name, ver = parse_sdist_filename(f.filename)
            except Exception:
                continue
            if name == canonicalize_name(project) and ver == Version(version):
                return f
    raise no_release(files, project, version, "sdist")


def release_of(filename: str) -> tuple[str, Version] | None:
    """The (normalised project, version) a release file is of; None for a name no tool parses."""
    try:
        if filename.endswith(".whl"):
            return parse_wheel_filename(filename)[:2]
        if filename.endswith((".tar.gz", ".zip")):
            return parse_sdist_filename(filename)
    except (ValueError, InvalidVersion):
        pass
    return None


def no_release(files: Iterable[IndexFile], project: str, version: str, kind: str) -> NoSuchRelease:
    """Why ``version``'s ``kind`` of file (``sdist`` or ``wheel``) is not on the index: the release is not
    there (naming the releases next to it), or it is there without that kind of file (saying which source
    reads what it has)."""
    name, want = canonicalize_name(project), Version(version)
    releases: dict[Version, list[str]] = {}
    for f in files:
        found = release_of(f.filename)
        if found and found[0] == name:
            releases.setdefault(found[1], []).append(f.filename)
    if want not in releases:
        known = sorted(releases)
        below = [str(v) for v in known if v < want and not v.is_prerelease][-3:]
        above = [str(v) for v in known if v > want and not v.is_prerelease][:3]
        near = ", ".join(below + above) or "none"
        return NoSuchRelease(f"{project} {version} is not a release on the index (the releases next to it: {near})",
                             hint="name a release the index has")
    if kind == "sdist":
        return NoSuchRelease(f"{project} {version} has no source distribution on the index, only "
                             f"{', '.join(sorted(releases[want]))}",
                             hint="check it against the wheel (--source wheel): it holds the package, not tests/")
    return NoSuchRelease(f"{project} {version} has no {kind} on the index; it has: {', '.join(sorted(releases[want]))}")


def wheel(project: str, version: str, tags: Sequence[Tag] | None = None) -> IndexFile:
    """The release's wheel that best fits ``tags`` (default: :func:`supported_tags`), as pip would choose it."""
    return choose_wheel(project_files(project), project, version, supported_tags() if tags is None else tags)


def choose_wheel(files: Iterable[IndexFile], project: str, version: str, tags: Sequence[Tag]) -> IndexFile:
    """The wheel of ``project`` ``version`` among ``files`` whose tags come first in ``tags``.

    ``tags`` is ordered most specific first, as ``packaging.tags.sys_tags()`` orders them: a
    ``manylinux_2_28`` wheel beats a ``manylinux1`` one on a machine that accepts both, and either
    beats ``py3-none-any``. Among wheels of equal rank the highest build tag wins (pip's rule).
    Refused, listing what the index has for the release, when no wheel fits.
    """
    files = list(files)  # read again for the refusal
    want, name = Version(version), canonicalize_name(project)
    rank: dict[Tag, int] = {}
    for i, tag in enumerate(tags):
        rank.setdefault(tag, i)
    fitting: list[tuple[int, tuple, IndexFile]] = []
    release: list[str] = []  # every file of this release, for the refusal
    for f in files:
        try:
            if f.filename.endswith(".whl"):
                found, ver, build, file_tags = parse_wheel_filename(f.filename)
            elif f.filename.endswith((".tar.gz", ".zip")):
                (found, ver), build, file_tags = parse_sdist_filename(f.filename), (), frozenset()
            else:
                continue
        except (ValueError, InvalidVersion):
            continue  # odd file names are the index's business
        if found != name or ver != want:
            continue
        release.append(f.filename)
        best = min((rank[t] for t in file_tags if t in rank), default=None)
        if best is not None:
            fitting.append((best, build, f))
    if fitting:
        fitting.sort(key=lambda c: c[1], reverse=True)  # the highest build tag first, then (stable) by rank
        return min(fitting, key=lambda c: c[0])[2]
    if not release:
        raise no_release(files, project, version, "wheel")
    has = ", ".join(sorted(release))
    raise SourceError(f"{project} {version} has no wheel for this platform ({describe_tags(tags)}) on the "
                      f"index; it has: {has}",
                      hint="check against the sdist (--source pypi), or run where one of those wheels installs")


def supported_tags(python: tuple[int, int] | None = None) -> list[Tag]:
    """The wheel tags a CPython ``python`` (default: this one) accepts here, most specific first.

    On Linux, every manylinux/musllinux tag this machine's C library accepts, ``abi3`` and
    ``py3-none-any`` (``packaging.tags``). Elsewhere (vLLM publishes Linux wheels only), the tags
    a ``manylinux_2_28_x86_64`` machine accepts: what a vLLM image holds, read from any host.
    """
    if python is None and sys.platform.startswith("linux"):
        return list(tags.sys_tags())
    version = python or (sys.version_info[0], sys.version_info[1])
    platforms = list(tags.platform_tags()) if sys.platform.startswith("linux") else _manylinux(28, "x86_64")
    return [*tags.cpython_tags(version, platforms=platforms), *tags.compatible_tags(version, platforms=platforms)]


def _manylinux(glibc_minor: int, arch: str) -> list[str]:
    """The manylinux platform tags a glibc 2.``glibc_minor`` machine accepts, newest first, with the
    legacy aliases (PEP 600: manylinux2014 is 2.17, manylinux2010 2.12, manylinux1 2.5)."""
    legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
    out = []
    for minor in range(glibc_minor, 4, -1):
        out.append(f"manylinux_2_{minor}_{arch}")
        if minor in legacy:
            out.append(f"{legacy[minor]}_{arch}")
    return out


def describe_tags(tags: Sequence[Tag]) -> str:
    """"cp311, 914 tags from cp311-cp311-manylinux_2_36_x86_64 to py3-none-any": what a refusal names."""
    if not tags:
        return "no tags"
    platforms = [t.platform for t in tags if t.platform != "any"]
    span = "pure Python only" if not platforms else platforms[0] if len(set(platforms)) == 1 else \
        f"{platforms[0]} down to {platforms[-1]}"
    return f"{tags[0].interpreter}, {span}, {len(tags)} tag{'' if len(tags) == 1 else 's'}"


def wheel_kind(python: tuple[int, int] | None = None) -> str:
    """The cache key of a release's chosen wheel: what decides the choice (Python, machine, C library).

    Cheap on purpose (no packaging.tags): a warm cache answers without computing a single tag.
    """
    major, minor = python or (sys.version_info[0], sys.version_info[1])
    if not sys.platform.startswith("linux"):
        return f"wheel-cp{major}{minor}-manylinux_2_28_x86_64"
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or "libc"
    except (ValueError, OSError):  # musl answers no glibc version
        libc = "libc"
    return f"wheel-cp{major}{minor}-{os.uname().machine}-{libc.replace(' ', '')}"


def remembered(cache, kind: str, project: str, version: str, find) -> IndexFile:
    """The index's answer for a release's file, remembered in the cache.

    A release's files never change on an index (they can only be yanked), so
    once the digest is known a warm cache needs no index round trip at all.
    """
    key = f"{canonical_name(project)}-{version}-{kind}.json"
    path = cache.path("index", key)
    # Every use of a release's files starts here: `patchset cache prune` leaves it alone while we run.
    cache.in_use(canonical_name(project), version, path)
    try:
        data = json.loads(path.read_bytes())
        url, _ = urls.split_credentials(data["url"])  # an entry written before URLs were kept public
        kept = IndexFile(data["filename"], url, data["sha256"], data.get("size"))
        if all(isinstance(v, str) for v in (kept.filename, kept.url, kept.sha256)) and (
                kept.size is None or isinstance(kept.size, int)):
            return kept
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        pass  # a damaged entry (a cut write, another version's shape) is asked for again
    found = find(project, version)
    cache.put_bytes(json.dumps(found.__dict__).encode(), "index", key)
    return found

