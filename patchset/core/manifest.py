"""patches.yaml's model: what the fork carries, in which order, for which releases.

:mod:`patchset.core.manifest_load` builds these objects from the file, validating everything that can be
checked without a vLLM tree (every error names the manifest file and line);
:mod:`patchset.core.manifest_export` gives a manifest as of a git revision.
"""

from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass, field
from pathlib import Path

from patchset.core.patchfile import PatchFile, read_patch
from patchset.errors import ManifestError
from patchset.versions import Release, Releases

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
class Target:
    """A pinned release, and the image built for it."""

    version: str
    image: str | None = None
    line: int = 0  # where the manifest names it (0: unknown)


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


def did_you_mean(word: str, known: list[str], what: str) -> str:
    """``did you mean 'releases'? known keys: …`` when one is close, else just the list."""
    close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    listed = f"{what}: {', '.join(known)}"
    return f"did you mean {close[0]!r}? {listed}" if close else listed



@functools.lru_cache(maxsize=1024)
def display_path(path: Path, base: Path) -> str:
    """``path`` as messages show it: relative to the manifest's folder when inside it. Kept per process:
    every release of a check loads each patch again, and resolving both paths each time is slow."""
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path)
