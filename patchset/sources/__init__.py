"""Pristine vLLM trees, by release, behind one small interface.

A source answers ``read(path)`` for repository-layout paths (``vllm/...``,
``tests/...``) and says which paths a tree of its ``kind`` can hold (``covers``): an upstream
tree (sdist, git tag, source checkout) every path, a wheel, an installed package or an image
only the package's own (``patchset.core.trees``). A remote source may also offer ``prefetch(paths)``: fetch those
paths together before they are read (the wheel does; ``series.evaluate_release`` calls it).
Every source also answers ``listing(prefix)``: the files under a folder, which ``port`` and
``next`` read only to follow code upstream moved (:func:`python_files`).
"""

from __future__ import annotations

import re
from typing import Protocol

from patchset.cache import Cache
from patchset.errors import SourceError


class Source(Protocol):
    """A pristine tree: what the verbs read upstream files from."""

    identity: str  # what tree this is, for messages and cache keys
    kind: str  # what kind of tree: sdist, git tag, source tree, wheel, site-packages, image, ...

    def read(self, path: str) -> bytes | None: ...

    def covers(self, path: str) -> bool: ...


def python_files(source: Source, package: str = "vllm") -> dict[str, bytes]:
    """Every Python module of ``package`` in the tree, read once (prefetched together where remote), in path
    order. A source with its own way to read them all (a streamed sdist: one pass, no whole tree) is asked."""
    own = getattr(source, "python_files", None)
    if own is not None:
        return own(package)
    return listed_python_files(source, package)


def listed_python_files(source: Source, package: str = "vllm") -> dict[str, bytes]:
    """:func:`python_files` from the source's listing, each module read through it."""
    listing = getattr(source, "listing", None)
    if listing is None:
        return {}
    paths = [p for p in listing(package) if p.endswith(".py")]
    if hasattr(source, "prefetch"):
        source.prefetch(paths)
    out = {}
    for path in paths:
        data = source.read(path)
        if data is not None:
            out[path] = data
    return out


SOURCE_KINDS = "pypi (sdist), wheel, git:PATH, dir:PATH"


def canonical_name(project: str) -> str:
    """PEP 503's normalized project name, as ``packaging.utils.canonicalize_name`` gives it.

    Written out (the rule is one line of the PEP) because packaging.utils imports packaging.tags,
    platform and logging, which a warm check would otherwise pay for on every run.
    """
    return re.sub(r"[-_.]+", "-", project).lower()


def open_source(spec: str, version: str, *, project: str = "vllm", tag: str = "v{version}", cache=None) -> Source:
    """The pristine tree of ``version`` named by a --source spec.

    Each kind's module is imported when that kind is opened: a git tag's needs GitPython, whose import
    would otherwise be most of a warm check's time (docs/records/performance.md).
    """
    cache = cache or Cache()
    kind, _, arg = spec.partition(":")
    if kind in ("pypi", "sdist") and not arg:
        from patchset.sources.sdist import SdistSource

        return SdistSource(project, version, cache)
    if kind == "wheel" and not arg:
        from patchset.sources.wheel import WheelSource

        return WheelSource.of(project, version, cache)
    if kind == "git" and arg:
        from patchset.sources.git import GitSource

        return GitSource(arg, tag.format(version=version))
    if kind == "dir" and arg:
        from patchset.sources.local import DirSource

        return DirSource.release(arg.replace("{version}", version), version, project)
    raise SourceError(f"unknown source {spec!r}", hint=f"use one of {SOURCE_KINDS}")
