"""A manifest as of a git revision: ``patches.yaml@v1.2`` read with its patch files from git."""

from __future__ import annotations

import contextlib
import posixpath
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import git

from patchset.core import yamlcache, yamlnodes
from patchset.core.manifest import Manifest
from patchset.core.manifest_load import load_manifest
from patchset.errors import ManifestError


def split_revision(spec: str) -> tuple[str, str | None]:
    """``patches.yaml@v1.2`` -> (``patches.yaml``, ``v1.2``); a file that exists under the whole name wins."""
    path, at, rev = spec.rpartition("@")
    if not at or not path or not rev or Path(spec).exists():
        return spec, None
    return path, rev


@contextlib.contextmanager
def manifest_at(spec: str | Path) -> Iterator[Manifest]:
    """The manifest named by ``spec``: a file, or ``FILE@REV`` read with its patch files from git.

    At a revision, the manifest, its recipes folder and every patch file it names are written as
    they were at REV into a temporary folder (the same layout, so relative paths hold), which
    lives as long as the ``with`` block: a dashboard audits against a tagged manifest without a
    checkout, and the working tree is never touched.
    """
    path, rev = split_revision(str(spec))
    if rev is None:
        yield load_manifest(path)
        return
    repo, rel = _repository_of(Path(path))
    commit = _commit(repo, rev, path)
    with tempfile.TemporaryDirectory(prefix="patchset-manifest-") as tmp:
        root = Path(tmp)
        text = _blob(commit, rel, f"{path}@{rev}")
        _write(root / rel, text)
        for extra in _named_paths(text, rel, f"{path}@{rev}"):
            _export(commit, extra, root)
        yield load_manifest(root / rel)


def _repository_of(path: Path) -> tuple[Any, str]:
    """(the git repository holding ``path``, its path inside the repository, posix)."""
    absolute = path.absolute()
    start = next((p for p in (absolute.parent, *absolute.parents) if p.is_dir()), Path.cwd())
    try:
        repo = git.Repo(start, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as e:
        raise ManifestError(f"{path}: not inside a git repository, so no revision of it can be read",
                            hint="run from the fork's checkout, or pass the manifest without @REV") from e
    top = Path(repo.working_tree_dir or start).resolve()
    try:
        rel = (start.resolve() / absolute.relative_to(start)).relative_to(top).as_posix()
    except ValueError as e:
        raise ManifestError(f"{path} is outside the repository at {top}") from e
    return repo, rel


def _commit(repo: Any, rev: str, path: str) -> Any:
    try:
        return repo.commit(rev)
    except (git.BadName, git.BadObject, ValueError) as e:
        raise ManifestError(f"{path}@{rev}: no revision {rev!r} in {repo.working_tree_dir}",
                            hint="name a tag, branch or commit that `git log` shows") from e


def _blob(commit: Any, rel: str, what: str) -> bytes:
    try:
        item = commit.tree / rel
    except KeyError as e:
        raise ManifestError(f"{what}: {rel} does not exist at commit {commit.hexsha[:12]}") from e
    if item.type != "blob":
        raise ManifestError(f"{what}: {rel} is a {item.type} at commit {commit.hexsha[:12]}, not a file")
    return bytes(item.data_stream.read())


def _write(dest: Path, data: bytes) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)


def _named_paths(text: bytes, rel: str, what: str) -> list[str]:
    """Repository paths the manifest needs beside it: its recipes folder and every ``patch:`` file."""
    try:
        data = yamlcache.load(text.decode("utf-8")).data
    except (UnicodeDecodeError, yamlnodes.SyntaxProblem):
        return []  # load_manifest says what is wrong with it, with the line
    if not isinstance(data, dict):
        return []
    here = posixpath.dirname(rel)
    recipes = data.get("recipes")
    named: list[str] = [recipes if isinstance(recipes, str) else "recipes"]
    for item in data.get("patches") or []:
        spec = item.get("patch") if isinstance(item, dict) else None
        if isinstance(spec, str):
            named.append(spec)
        elif isinstance(spec, dict):  # one file per release range
            named += [v for v in spec.values() if isinstance(v, str)]
    out = []
    for name in named:
        full = posixpath.normpath(posixpath.join(here, name))
        if full == ".." or full.startswith("../") or posixpath.isabs(name):
            raise ManifestError(f"{what}: {name} is outside the repository", hint="name files inside it")
        out.append(full)
    return out


def _export(commit: Any, rel: str, root: Path) -> None:
    """``rel`` (a file or a folder) as of ``commit``, under ``root``; absent paths are the loader's to report."""
    try:
        item = commit.tree / rel
    except KeyError:
        return
    blobs = [item] if item.type == "blob" else [b for b in item.traverse() if b.type == "blob"]
    for blob in blobs:
        if blob.mode & 0o170000 == 0o120000:  # a symlink's target could name anything on this host
            continue
        _write(root / blob.path, bytes(blob.data_stream.read()))

