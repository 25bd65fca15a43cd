"""What each kind of tree can hold, and which files of a patch are compiled code.

An upstream tree (an sdist, a git tag, a source checkout) holds the whole repository, so every
hunk of a patch is checked against it. A wheel, an installed site-packages and an image hold the
package alone (``vllm/``): the files forks patch beside it (``requirements/*.txt``, ``setup.py``,
``CMakeLists.txt``, ``csrc/`` kernels, ``docker/``, ``tests/``) are not there. A hunk on such a
file is ``not-in-tree`` in that tree: neither applied nor failed, and always reported with the
kind of tree that cannot hold it (docs/trees.md).

Compiled code reaches an installed vLLM only through a build of its extensions: overlaying
Python files onto an image or a site-packages cannot carry a change to it, so ``build`` refuses
to call such a patch carried and ``audit`` never reports it ``carried``.
"""

from __future__ import annotations

from collections.abc import Iterable

#: Kinds of tree (``Source.kind``) that hold the whole upstream repository.
UPSTREAM_KINDS = ("sdist", "git tag", "source tree")
#: Folders of the upstream repository whose files are built, not installed as they are.
COMPILED_FOLDERS = ("csrc/", "cmake/", "rust/")
#: Sources of compiled code wherever they stand, and the build's own definition.
COMPILED_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", ".cmake", ".rs")
COMPILED_NAMES = ("CMakeLists.txt",)


def is_compiled(path: str) -> bool:
    """Whether a change to ``path`` (repository layout) only takes effect through a build of vLLM."""
    name = path.rsplit("/", 1)[-1]
    return path.startswith(COMPILED_FOLDERS) or name in COMPILED_NAMES or name.endswith(COMPILED_SUFFIXES)


def compiled(paths: Iterable[str]) -> list[str]:
    """The paths among ``paths`` that are compiled code, sorted."""
    return sorted({p for p in paths if is_compiled(p)})

