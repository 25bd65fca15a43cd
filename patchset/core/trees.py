"""What each kind of tree can hold, and which files of a patch are compiled code.

An upstream tree (an sdist, a git tag, a source checkout) holds the whole repository, so every
hunk of a patch is checked against it. A wheel, an installed site-packages and an image hold the
package alone (``vllm/``): the files forks patch beside it (``requirements/*.txt``, ``setup.py``,
``CMakeLists.txt``, ``csrc/`` kernels, ``docker/``, ``tests/``) are not there. A hunk on such a
file is ``not-in-tree`` in that tree: neither applied nor failed, and always reported with the
kind of tree that cannot hold it (docs/trees.md). Only a path the release holds beside its package
(its sdist's listing says which; a file a patch creates, under a folder the release has) is left out
so: any other path (``vlm/x.py``, a typo) fails, in every kind of tree.

Compiled code reaches an installed vLLM only through a build of its extensions: overlaying
Python files onto an image or a site-packages cannot carry a change to it, so ``build`` refuses
to call such a patch carried and ``audit`` never reports it ``carried``.
"""

from __future__ import annotations

from collections.abc import Iterable

#: Kinds of tree (``Source.kind``) that hold the whole upstream repository.
UPSTREAM_KINDS = ("sdist", "git tag", "source tree")
#: Kinds of tree that hold the package alone.
PACKAGE_KINDS = ("wheel", "site-packages", "image")
#: Folders of the upstream repository whose files are built, not installed as they are.
COMPILED_FOLDERS = ("csrc/", "cmake/", "rust/")
#: Sources of compiled code wherever they stand, and the build's own definition.
COMPILED_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", ".cmake", ".rs")
COMPILED_NAMES = ("CMakeLists.txt",)


#: What vLLM's sdists hold beside the package at their top (0.11 ... 0.34): what a package-only tree's paths are
#: judged by when the release's own listing cannot be read (no index, no cache).
BESIDE_TOPS = frozenset({
    ".agents", ".buildkite", ".clang-format", ".claude", ".coveragerc", ".dockerignore", ".gemini",
    ".git-blame-ignore-revs", ".github", ".gitignore", ".markdownlint.yaml", ".pre-commit-config.yaml",
    ".readthedocs.yaml", ".shellcheckrc", ".yapfignore", "AGENTS.md", "CLAUDE.md", "CMakeLists.txt",
    "CODE_OF_CONDUCT.md", "CONTRIBUTING.md", "DCO", "LICENSE", "MANIFEST.in", "PKG-INFO", "README.md", "RELEASE.md",
    "SECURITY.md", "benchmarks", "build_rust.sh", "build_vllm_ppc64le.sh", "cmake", "codecov.yml", "csrc", "docker",
    "docs", "examples", "mkdocs.yaml", "pyproject.toml", "recipes", "requirements", "rust", "rust-toolchain.toml",
    "scripts", "setup.cfg", "setup.py", "tests", "tools", "use_existing_torch.py", "vllm.egg-info"})


def held_beside(path: str, created: bool, listing: frozenset[str] | None, tops: frozenset[str]) -> bool:
    """Whether the release holds ``path`` beside its package: in its ``listing`` (the sdist's files), or, for a
    file a patch creates, under one of its ``tops``; without a listing, by ``tops`` alone."""
    if listing is not None and path in listing:
        return True
    return (created or listing is None) and path.split("/", 1)[0] in tops


def is_compiled(path: str) -> bool:
    """Whether a change to ``path`` (repository layout) only takes effect through a build of vLLM."""
    name = path.rsplit("/", 1)[-1]
    return path.startswith(COMPILED_FOLDERS) or name in COMPILED_NAMES or name.endswith(COMPILED_SUFFIXES)


def compiled(paths: Iterable[str]) -> list[str]:
    """The paths among ``paths`` that are compiled code, sorted."""
    return sorted({p for p in paths if is_compiled(p)})

