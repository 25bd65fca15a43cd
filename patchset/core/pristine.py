"""The pristine tree of a target, whether a release on the index or a commit the manifest pins.

Every verb opens a release's tree here rather than through :func:`patchset.sources.open_source` alone:
a target that names its own source (``source: {git, commit}``, docs/pinned.md) has no sdist or wheel
on the index, so the index's kinds (``pypi``, ``sdist``, ``wheel``) give its commit's tree instead;
``git:PATH`` reads that commit from a local clone (not a tag); ``dir:PATH`` is the folder given, as for a
release. A commit that cannot be had is bad input at its manifest line.
"""

from __future__ import annotations

import hashlib
import re
import urllib.parse
from pathlib import Path

from patchset.cache import CHUNK, Cache
from patchset.core.manifest import Manifest, Pin, Target
from patchset.core.manifest_load import is_local_repository, local_repository
from patchset.errors import ManifestError, NoSuchRelease, SourceError
from patchset.sources import Source, canonical_name, open_source
from patchset.sources.index import IndexFile
from patchset.versions import same_release

#: The --source kinds that name the package index: a commit target's tree replaces them.
INDEX_KINDS = ("pypi", "sdist", "wheel")


def open_release(manifest: Manifest, version: str, spec: str = "pypi", *, cache: Cache | None = None) -> Source:
    """The pristine tree of ``version``: its pinned commit's where the manifest pins one, else ``spec``'s."""
    target = manifest.pinned(version)
    if target is None:
        return _from_index(manifest, version, spec, cache)
    pin = target.source
    assert pin is not None  # pinned() gives only targets with a source
    kind, _, arg = spec.partition(":")
    try:
        if kind in INDEX_KINDS and not arg:
            from patchset.sources.commit import CommitSource

            return CommitSource(repository(manifest, pin), pin.commit, manifest.pypi, target.version,
                                cache or Cache())
        if kind == "git" and arg:
            from patchset.sources.git import GitSource

            return GitSource(arg, pin.commit)
    except SourceError as e:
        raise ManifestError(f"target {target.version}: {e.what()}", file=str(manifest.path),
                            line=pin.line or target.line or None) from e
    return _from_index(manifest, version, spec, cache)


def _from_index(manifest: Manifest, version: str, spec: str, cache: Cache | None) -> Source:
    """``spec``'s tree of ``version``; a release the index lacks is named at the manifest's line where the
    manifest names it (a target), else as the command line gave it."""
    try:
        return open_source(spec, version, project=manifest.pypi, tag=manifest.tag, cache=cache)
    except NoSuchRelease as e:
        t = next((t for t in manifest.targets if same_release(t.version, version)), None)
        if t is None or e.file:
            raise
        raise NoSuchRelease(e.message, file=str(manifest.path), line=t.line or None, hint=e.hint) from e


def repository(manifest: Manifest, pin: Pin) -> str:
    """What git fetches from: a remote URL as written, a local path made absolute (relative to the manifest)."""
    if is_local_repository(pin.git):
        return str(local_repository(pin.git, manifest.base))
    return pin.git


def target_wheel(manifest: Manifest, target: Target) -> IndexFile | None:
    """The vLLM wheel the target's ``wheel:`` names, with its sha256, for ``test --venv``; None for a release
    that names none (its wheel comes from the index). A commit target without one is refused: nothing on
    the index was built from that commit, and building vLLM from its tree (C++ and CUDA kernels, an hour
    of compiler time, a toolchain CI machines rarely hold) is not what a proof should wait for.

    A file (a path relative to the manifest, or a ``file://`` URL) is hashed here; a remote URL must carry
    its digest (``URL#sha256=HEX``, as pip writes it): the download is verified against it.
    """
    if target.wheel is None:
        if target.source is None:
            return None
        raise _bad(manifest, target, f"vLLM {target.version} is pinned to commit {target.source.commit[:12]}: "
                   "`test --venv` needs the wheel built from it, and the target names none",
                   hint="set wheel: under the target (a file or URL#sha256=HEX), or test in an image built "
                        "from that commit with --image")
    url, _, fragment = target.wheel.partition("#")
    if "://" in url and not url.startswith("file://"):
        digest = re.fullmatch(r"sha256=([0-9a-f]{64})", fragment)
        if digest is None:
            raise _bad(manifest, target, f"target {target.version}: wheel {url} says no sha256",
                       hint="write it as URL#sha256=HEX (`sha256sum` of the wheel), so the download can be "
                            "verified")
        filename, sha, size = urllib.parse.unquote(urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1]), \
            digest.group(1), None
    else:
        path = Path(url.removeprefix("file://")) if url.startswith("file://") else manifest.base / url
        if not path.is_file():
            raise _bad(manifest, target, f"target {target.version}: wheel {target.wheel} is no file here",
                       hint="a path is relative to the manifest")
        sha, size = _sha256(path), path.stat().st_size
        filename, url = path.name, path.resolve().as_uri()
    _check_wheel_name(manifest, target, filename)
    return IndexFile(filename, url, sha, size)


def _check_wheel_name(manifest: Manifest, target: Target, filename: str) -> None:
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        name, version = parse_wheel_filename(filename)[:2]
    except InvalidWheelFilename as e:
        raise _bad(manifest, target, f"target {target.version}: {filename} is not a wheel's file name ({e})") \
            from e
    pin = target.source
    if canonical_name(str(name)) != canonical_name(manifest.pypi) or not same_release(str(version), target.version) \
            or (pin is not None and pin.contradicts(str(version))):
        raise _bad(manifest, target, f"target {target.version}: {filename} is {name} {version}, not "
                   f"{manifest.pypi} {target.version}", hint="name the wheel built for this target")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _bad(manifest: Manifest, target: Target, message: str, hint: str | None = None) -> ManifestError:
    """Bad input at the target's line of the manifest."""
    return ManifestError(message, file=str(manifest.path), line=target.line or None, hint=hint)
