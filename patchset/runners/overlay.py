"""A package as one configuration sees it, without touching the installed one.

The overlay links the installed package: the folders on the way to a file
the configuration changes are real folders, every other entry (file or
folder) is one symlink, and the configuration's files are real files (or
are absent, when the configuration deletes them). Put its parent first on
PYTHONPATH and ``import vllm`` finds it before site-packages. For a series
touching a few files that is a few folders and a few hundred links (why not
a link per file: docs/records/performance.md), so every configuration gets a fresh
one and the cached environment stays read-only, safe to share between
concurrent runs (runs do not write bytecode).

Bytecode: the ``__pycache__`` entries of replaced files are dropped, so a
stale ``.pyc`` can never run old code under a patched source.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from patchset.errors import PatchsetError
from patchset.journal import bytecode_files


def make_overlay(installed: Path, dest: Path, files: Mapping[str, bytes | None]) -> Path:
    """Make ``dest/<installed.name>``: ``installed`` as links, with ``files`` written in.

    ``files`` is keyed by paths relative to the package folder. Returns the
    folder to put on PYTHONPATH (``dest``).
    """
    installed = installed.resolve()
    if not installed.is_dir():
        raise PatchsetError(f"{installed} is not an installed package folder")
    top = dest / installed.name
    if top.exists():
        raise PatchsetError(f"{top} already exists; an overlay is made once, in a fresh folder")
    changed = [Path(package_path(path)) for path in files]
    real = {Path(".")} | {folder for path in changed for folder in path.parents}
    for rel in sorted(real, key=lambda p: len(p.parts)):
        _mirror(installed / rel, top / rel, real={p.name for p in real if p.parent == rel and p != rel})
    for path, content in files.items():
        target = top / package_path(path)
        target.unlink(missing_ok=True)
        if target.suffix == ".py":
            for pyc in bytecode_files(target):
                pyc.unlink()
        if content is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
    _drop_emptied(top, [Path(package_path(p)) for p, c in files.items() if c is None])
    return dest


def _drop_emptied(top: Path, deleted: list[Path]) -> None:
    """The folders the deletions left empty go, as GNU patch and ``patchset apply`` remove them: an empty
    folder would still import, as a namespace package, where the patched tree has no such module."""
    for rel in sorted({f for p in deleted for f in p.parents} - {Path(".")}, key=lambda p: -len(p.parts)):
        for folder in (top / rel / "__pycache__", top / rel):  # the bytecode of the deleted modules went above
            if folder.is_dir() and not folder.is_symlink() and not any(folder.iterdir()):
                folder.rmdir()


def _mirror(source: Path, folder: Path, *, real: set[str]) -> None:
    """``folder``, a real folder linking every entry of ``source`` (when it exists) but those in ``real``
    (made real by the caller) and ``__pycache__``, whose files are linked one by one (so that a replaced
    module's bytecode can be dropped here, never in the installed package)."""
    folder.mkdir(parents=True, exist_ok=True)
    if not source.is_dir():
        return  # a folder the configuration adds
    for entry in os.scandir(source):
        if entry.name in real:
            continue
        if entry.name == "__pycache__" and entry.is_dir(follow_symlinks=False):
            _mirror(Path(entry.path), folder / entry.name, real=set())
        else:
            os.symlink(entry.path, folder / entry.name)


def package_path(rel: str) -> str:
    """``rel``, a path relative to the package folder, refused if it would lead out of it."""
    parts = Path(rel).parts
    if not parts or Path(rel).is_absolute() or ".." in parts:
        raise PatchsetError(f"refusing to write {rel!r} outside the package")
    return rel
