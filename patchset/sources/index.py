"""A PEP 691 package index client: which files a release has, and their digests.

The legacy JSON API is not served by every index (nor by the one here), and
``pip download`` of vLLM's sdist runs its build backend, which imports torch.
The simple API answers everywhere pip works, mirrors included.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from functools import cache

from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename
from packaging.version import Version

from patchset.errors import SourceError

ACCEPT = "application/vnd.pypi.simple.v1+json"


@dataclass(frozen=True)
class IndexFile:
    filename: str
    url: str
    sha256: str
    size: int | None = None


def index_url() -> str:
    """The index pip would use: PATCHSET_INDEX_URL, PIP_INDEX_URL, pip's config, pip's default."""
    for var in ("PATCHSET_INDEX_URL", "PIP_INDEX_URL"):
        if os.environ.get(var):
            return os.environ[var].rstrip("/") + "/"
    return _configured_index()


@cache
def _configured_index() -> str:
    try:
        out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    for line in out.splitlines():
        key, _, value = line.partition("=")
        if key.strip().endswith(".index-url"):
            return value.strip().strip("'\"").rstrip("/") + "/"
    from pip._internal.models.index import PyPI  # pip's own default, without naming a host here

    return PyPI.simple_url.rstrip("/") + "/"


@cache
def project_files(project: str, base: str | None = None) -> tuple[IndexFile, ...]:
    url = (base or index_url()) + canonicalize_name(project) + "/"
    req = urllib.request.Request(url, headers={"Accept": ACCEPT})
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            data = json.load(resp)
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise SourceError(f"cannot list {project} on the package index ({url}): {e}",
                          hint="set PIP_INDEX_URL or PATCHSET_INDEX_URL to a PEP 691 index") from e
    out = []
    for f in data.get("files", []):
        sha = (f.get("hashes") or {}).get("sha256")
        if sha:
            out.append(IndexFile(f["filename"], urllib.parse.urljoin(url, f["url"]), sha, f.get("size")))
    return tuple(out)


def sdist(project: str, version: str) -> IndexFile:
    for f in project_files(project):
        if f.filename.endswith(".tar.gz"):
            try:
                name, ver = parse_sdist_filename(f.filename)
            except Exception:
                continue
            if name == canonicalize_name(project) and ver == Version(version):
                return f
    raise SourceError(f"{project} {version} has no source distribution on the index")


def wheel(project: str, version: str, platform: str = "manylinux_2_28_x86_64") -> IndexFile:
    for f in project_files(project):
        if not f.filename.endswith(".whl"):
            continue
        try:
            name, ver, _, tags = parse_wheel_filename(f.filename)
        except Exception:
            continue
        if name == canonicalize_name(project) and ver == Version(version) and any(
                t.platform == platform or t.platform == "any" for t in tags):
            return f
    raise SourceError(f"{project} {version} has no wheel for {platform} on the index")


def remembered(cache, kind: str, project: str, version: str, find) -> IndexFile:
    """The index's answer for a release's file, remembered in the cache.

    A release's files never change on an index (they can only be yanked), so
    once the digest is known a warm cache needs no index round trip at all.
    """
    key = f"{canonicalize_name(project)}-{version}-{kind}.json"
    path = cache.path("index", key)
    try:
        data = json.loads(path.read_text())
        return IndexFile(data["filename"], data["url"], data["sha256"], data.get("size"))
    except (OSError, ValueError, KeyError):
        pass
    found = find(project, version)
    cache.put_bytes(json.dumps(found.__dict__).encode(), "index", key)
    return found
