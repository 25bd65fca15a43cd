"""A vLLM tree to patch in place: site-packages, an upstream checkout, or the package folder.

Paths stay in repository layout (``vllm/...``, ``tests/...``); this class maps
them onto the folder whatever its layout.
"""

from __future__ import annotations

import re
from pathlib import Path

from patchset.errors import SourceError

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

    def local(self, path: str) -> Path | None:
        """Where a repository-layout path lives in this tree, or None if the tree cannot hold it."""
        if self.layout == REPO:
            return self.root / path
        if path.startswith("vllm/"):
            return self.root / path[len("vllm/"):]
        return None

    def covers(self, path: str) -> bool:
        if path.startswith("vllm/"):
            return True
        return self.layout == REPO and (self.root / path.split("/", 1)[0]).is_dir()

    def read(self, path: str) -> bytes | None:
        f = self.local(path)
        if f is None:
            return None
        try:
            return f.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None

    def version(self) -> str | None:
        """The vLLM release this tree holds, from _version.py or the dist-info beside it."""
        pkg = self.local("vllm/__init__.py").parent  # type: ignore[union-attr]
        ver = pkg / "_version.py"
        if ver.is_file():
            m = re.search(r"""__version__\s*=\s*(?:version\s*=\s*)?['"]([^'"]+)['"]""", ver.read_text())
            if m:
                return m.group(1)
        for meta in sorted(pkg.parent.glob("vllm-*.dist-info/METADATA")):
            m = re.search(r"^Version: (.+)$", meta.read_text(errors="replace"), re.M)
            if m:
                return m.group(1).strip()
        return None
