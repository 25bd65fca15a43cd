"""patches.yaml's model: what the fork carries, in which order, for which releases.

:mod:`patchset.core.manifest_load` builds these objects from the file, validating everything that can be
checked without a vLLM tree (every error names the manifest file and line);
:mod:`patchset.core.manifest_export` gives a manifest as of a git revision.
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from patchset.core.patchfile import PatchFile, read_patch
from patchset.errors import ManifestError
from patchset.versions import Release, Releases, is_release, public

DEFAULT_MANIFEST = "patches.yaml"
ORIGINS = ("backport", "fork", "local")
PATCH_SUFFIXES = (".patch", ".diff")


@dataclass(frozen=True)
class Probe:
    """Evidence that a fix is in a tree: a file containing a literal text."""

    file: str
    contains: str

    def holds(self, content: bytes | None) -> bool:
        return content is not None and self.contains.encode() in content

    def describe(self, content: bytes | None) -> str:
        if content is None:
            return f"{self.file} is absent"
        at = content.find(self.contains.encode())
        if at < 0:
            return f"{self.file} lacks {self.contains!r}"
        line = content.count(b"\n", 0, at) + 1
        return f"{self.file}:{line} contains {self.contains!r}"


@dataclass(frozen=True)
class PatchChoice:
    """One patch file and the releases it is for."""

    specifier: Releases
    path: Path
    line: int


@dataclass(frozen=True)
class Patch:
    """One patch of the series, as the manifest describes it: where it comes from, which file for which
    releases, how it applies and what proves it."""

    id: str
    title: str
    origin: str
    releases: Releases
    choices: tuple[PatchChoice, ...]
    after: tuple[str, ...] = ()
    tests: tuple[str, ...] = ()
    present: tuple[Probe, ...] = ()
    upstream_pr: int | None = None
    upstream_commit: str | None = None
    fuzz: int = 0
    strip: int = 1
    root: str = ""
    line: int = 0

    def targets(self, version: str) -> bool:
        return version in self.releases

    def choice_for(self, version: str) -> PatchChoice | None:
        v = Release(version)
        for c in self.choices:
            if v in c.specifier:
                return c
        return None

    def load(self, version: str, base: Path) -> PatchFile:
        choice = self.choice_for(version)
        if choice is None:
            raise ManifestError(f"no patch file is given for vLLM {version}", patch=self.id)
        rel = display_path(choice.path, base)
        return read_patch(choice.path, strip=self.strip, root=self.root, display=rel)


@dataclass(frozen=True)
class Suite:
    """An upstream test folder, file or node id run as a whole, judged against the pristine release."""

    path: str
    gpu: bool = False  # runs only where the runner has an accelerator; needs-gpu elsewhere
    timeout: float | None = None  # seconds for each pytest run of this suite (default: the run's --timeout)
    deselect: tuple[str, ...] = ()  # node ids (or files) inside path that are not run
    line: int = 0


@dataclass(frozen=True)
class Pin:
    """Where a target's tree comes from when it is no release on the index: a git repository at one commit
    (docs/pinned.md). ``git`` is as the manifest writes it (a URL, a ``file://`` URL or a path relative to
    the manifest); ``commit`` is a full commit id."""

    git: str
    commit: str
    line: int = 0  # the line of source: in the manifest, for every error about fetching it

    def contradicts(self, installed: str) -> bool:
        """Does an installed vLLM's version name another commit? A build from a git tree says which in its
        local label (setuptools_scm's ``+g<abbreviated id>``, ``0.29.1.dev1+g251bc8456.cu128``)."""
        named = _commit_label(installed)
        return named is not None and not self.commit.startswith(named)

    def named_by(self, installed: str) -> bool:
        """Does an installed vLLM's version name this commit in its local label?"""
        named = _commit_label(installed)
        return named is not None and self.commit.startswith(named)


def _commit_label(installed: str) -> str | None:
    """The abbreviated commit id in a version's local label (``+g251bc8456``), or None."""
    for part in installed.partition("+")[2].lower().split("."):
        if re.fullmatch(r"g[0-9a-f]{7,64}", part):
            return part[1:]
    return None


@dataclass(frozen=True)
class Target:
    """A pinned release (or commit), and the image built for it."""

    version: str
    image: str | None = None
    source: Pin | None = None  # a commit's tree instead of the release's sdist
    base: str | None = None  # the base image `build` starts from when --base names none
    wheel: str | None = None  # the vLLM wheel `test --venv` installs: a file, a URL or a wheel index
    line: int = 0


@dataclass(frozen=True)
class Manifest:
    """patches.yaml, loaded and validated: the upstream project, the pinned releases and the ordered series."""

    path: Path
    sha256: str
    pypi: str
    git: str | None
    tag: str
    targets: tuple[Target, ...]
    patches: tuple[Patch, ...]
    suites: tuple[Suite, ...] = ()
    recipes: str = "recipes"
    warnings: tuple[str, ...] = field(default_factory=tuple)
    targets_line: int = 0  # the line of targets: in the file, for "not a target" (0: unknown)

    @property
    def base(self) -> Path:
        return self.path.parent

    def target(self, version: str) -> Target:
        for t in self.targets:
            if Release(t.version) == Release(version):
                return t
        known = ", ".join(t.version for t in self.targets)
        raise ManifestError(f"vLLM {version} is not a target (targets: {known})", file=str(self.path),
                            line=self.targets_line or None, hint="add it under targets:")

    def pinned(self, version: str) -> Target | None:
        """The target ``version`` when it names its own source (a commit), else None (a release, or no target)."""
        for t in self.targets:
            if t.source is not None and Release(t.version) == Release(version):
                return t
        return None

    def installed_as(self, installed: str) -> str:
        """The target an installed vLLM's version string stands for: a target written exactly so; else the
        commit target its ``+g<id>`` label names (a build at ``g251bc8456`` says ``0.29.1.dev1+g251bc8456``,
        perhaps with a build label after it); else the release without its local label (``0.29.0+cu128``
        is 0.29.0); else the one commit target with the same public version."""
        mine = [t for t in self.targets if t.version == installed]
        if mine:
            return mine[0].version
        plain = public(installed)
        named = [t for t in self.targets if t.source is not None and public(t.version) == plain
                 and t.source.named_by(installed)]
        if len(named) == 1:  # its +g label names the commit a target pins
            return named[0].version
        if any(t.source is None and Release(t.version) == Release(plain) for t in self.targets
               if is_release(plain)):
            return plain
        pins = [t for t in self.targets if t.source is not None and public(t.version) == plain]
        return pins[0].version if len(pins) == 1 else plain

    def patch(self, patch_id: str) -> Patch:
        for p in self.patches:
            if p.id == patch_id:
                return p
        raise ManifestError(f"no patch with id {patch_id!r}", file=str(self.path),
                            hint=did_you_mean(patch_id, [p.id for p in self.patches], "patch ids"))

    def dependants(self, patch_id: str) -> set[str]:
        """Every patch that needs ``patch_id`` applied first, directly or not."""
        out: set[str] = set()
        frontier = {patch_id}
        while frontier:
            nxt = {p.id for p in self.patches if frontier & set(p.after)} - out
            out |= nxt
            frontier = nxt
        return out


def closest(word: str, known: list[str]) -> str | None:
    """The known word ``word`` is most likely a misspelling of, if any is close."""
    close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(word: str, known: list[str], what: str) -> str:
    """``did you mean 'releases'? known keys: …`` when one is close, else just the list."""
    close = closest(word, known)
    listed = f"{what}: {', '.join(known)}"
    return f"did you mean {close!r}? {listed}" if close else listed



@functools.lru_cache(maxsize=1024)
def display_path(path: Path, base: Path) -> str:
    """``path`` as messages show it: relative to the manifest's folder when inside it. Kept per process:
    every release of a check loads each patch again, and resolving both paths each time is slow."""
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path)
