"""The pristine tree of a target, whether a release on the index or a commit the manifest pins.

Every verb opens a release's tree here rather than through :func:`patchset.sources.open_source` alone:
a target that names its own source (``source: {git, commit}``, docs/pinned.md) has no sdist or wheel
on the index, so the index's kinds (``pypi``, ``sdist``, ``wheel``) give its commit's tree instead;
``git:PATH`` reads that commit from a local clone (not a tag); ``dir:PATH`` is the folder given, as for a
release. A commit that cannot be had is bad input at its manifest line.
"""

from __future__ import annotations

from patchset.cache import Cache
from patchset.core.manifest import Manifest, Pin
from patchset.core.manifest_load import is_local_repository, local_repository
from patchset.errors import ManifestError, SourceError
from patchset.sources import Source, open_source

#: The --source kinds that name the package index: a commit target's tree replaces them.
INDEX_KINDS = ("pypi", "sdist", "wheel")


def open_release(manifest: Manifest, version: str, spec: str = "pypi", *, cache: Cache | None = None) -> Source:
    """The pristine tree of ``version``: its pinned commit's where the manifest pins one, else ``spec``'s."""
    target = manifest.pinned(version)
    if target is None:
        return open_source(spec, version, project=manifest.pypi, tag=manifest.tag, cache=cache)
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
    return open_source(spec, version, project=manifest.pypi, tag=manifest.tag, cache=cache)


def repository(manifest: Manifest, pin: Pin) -> str:
    """What git fetches from: a remote URL as written, a local path made absolute (relative to the manifest)."""
    if is_local_repository(pin.git):
        return str(local_repository(pin.git, manifest.base))
    return pin.git
