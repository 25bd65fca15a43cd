"""A vLLM tree to patch in place: site-packages, an upstream checkout, or the package folder.

Paths stay in repository layout (``vllm/...``, ``tests/...``); this class maps
them onto the folder whatever its layout.
"""

from __future__ import annotations

from pathlib import Path

from patchset.errors import SourceError
from patchset.sources.local import is_source_tree, stated_version

REPO = "repo"  # DIR/vllm/__init__.py: site-packages or an upstream checkout
PACKAGE = "package"  # DIR/__init__.py and DIR is the vllm package itself (fork layout)


class TargetTree:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()
        if (self.root / "vllm" / "__init__.py").is_file():
            self.layout = REPO
        elif (self.root / "__init__.py").is_file() and self.root.name == "vllm":
            self.layout = PACKAGE
        else:
            raise SourceError(f"{root} holds no vllm package",
                              hint="give site-packages, an upstream source tree, or the vllm package folder")
        self.identity = f"dir:{self.root}"
        # tests/ (or anything beside vllm/) is patched only in an upstream tree; in site-packages it is someone else's.
        self.source_tree = self.layout == REPO and is_source_tree(self.root)
        self.kind = "source tree" if self.source_tree else "site-packages" if self.layout == REPO else "package folder"

    @property
    def package(self) -> Path:
        """The vllm package folder, where the provenance record and an apply's journal live."""
        return self.root / "vllm" if self.layout == REPO else self.root

    def local(self, path: str) -> Path | None:
        """Where a repository-layout path lives in this tree, or None if the tree cannot hold it."""
        if self.layout == REPO:
            return self.root / path
        if path.startswith("vllm/"):
            return self.root / path[len("vllm/"):]
        return None

    def covers(self, path: str) -> bool:
        """Whether this kind of tree can hold ``path``: an upstream tree every path (a missing one fails)."""
        return path.startswith("vllm/") or self.source_tree

    def read(self, path: str) -> bytes | None:
        f = self.local(path)
        if f is None:
            return None
        try:
            return f.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:  # a folder where the patch names a file, no permission: the tree's, not ours
            raise SourceError(f"cannot read {path} in {self.root}: {e.strerror}",
                              hint="the patch names something in the tree that is not a readable file") from e

    def version(self) -> tuple[str, str] | None:
        """The vLLM release this tree says it holds and the file that says so (_version.py, dist-info, PKG-INFO)."""
        return stated_version(self.package.parent)
