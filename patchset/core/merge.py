"""Three-way merges and patch generation, through git's own tools (GitPython's command wrapper).

``git merge-file --diff3`` reproduces the ports a maintainer makes by hand
(measured on this repository's recipes and on a fork's 8-file patch), and
``git diff --no-index`` writes the hunks and function headers ``git diff``
users expect, so a regenerated patch reads like the one it replaces. Neither
needs a repository or any history: base, ours and theirs are plain bytes.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import git

from patchset.errors import PatchsetError

MARKER = re.compile(rb"^(<{7}|\|{7}|={7}|>{7})( |$)", re.M)

# A user's ~/.gitconfig (diff.noprefix, diff.algorithm, merge.conflictStyle, colour) must not
# change the bytes we write.
_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull,
        "LC_ALL": "C"}


@dataclass(frozen=True)
class Merge:
    """A three-way merge's result: the merged bytes and how many regions conflict."""

    content: bytes
    conflicts: int  # conflict regions git reported; 0 is a clean merge

    @property
    def clean(self) -> bool:
        return self.conflicts == 0


def _git(cwd: str) -> git.Git:
    g = git.Git(cwd)
    g.update_environment(**_ENV)
    return g


def merge3(ours: bytes, base: bytes, theirs: bytes, labels: tuple[str, str, str]) -> Merge:
    """Merge base→theirs into ours; conflicts are written diff3-style with the given labels.

    ``labels`` name ours, base and theirs, in git merge-file's order.
    """
    with tempfile.TemporaryDirectory(prefix="patchset-merge-") as tmp:
        names = []
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            Path(tmp, name).write_bytes(data)
            names.append(name)
        args = ["git", "merge-file", "-p", "--diff3"]
        for label in labels:
            args += ["-L", label]
        status, out, err = _git(tmp).execute(args + names, with_extended_output=True, with_exceptions=False,
                                             stdout_as_string=False, strip_newline_in_stdout=False)
    if status < 0 or status > 127:
        raise PatchsetError(f"git merge-file failed: {err}")
    assert isinstance(out, bytes)
    return Merge(out, status)


def marker_lines(content: bytes) -> list[int]:
    """1-based lines holding a conflict marker (<<<<<<<, |||||||, =======, >>>>>>>)."""
    return [content.count(b"\n", 0, m.start()) + 1 for m in MARKER.finditer(content)]


def render_diff(old: Mapping[str, bytes | None], new: Mapping[str, bytes | None], *,
                strip: int = 1, root: str = "") -> str:
    """A git-style patch turning ``old`` into ``new`` (repository-layout paths → content, None: absent).

    Paths are written in the manifest's layout: ``root`` is taken off (package-relative fork
    patches) and ``strip`` says whether the a/ b/ prefixes are there.
    """
    if strip not in (0, 1):
        raise PatchsetError(f"cannot write patches for strip {strip}: only 0 and 1 are supported",
                            hint="use layout strip 1 (a/ b/ prefixes) for patches patchset writes")
    paths = sorted(p for p in set(old) | set(new) if old.get(p) != new.get(p))
    if not paths:
        return ""
    with tempfile.TemporaryDirectory(prefix="patchset-diff-") as tmp:
        for side, tree in (("a", old), ("b", new)):
            Path(tmp, side).mkdir()
            for path in paths:
                data = tree.get(path)
                if data is not None:
                    f = Path(tmp, side, _layout_path(path, root))
                    f.parent.mkdir(parents=True, exist_ok=True)
                    f.write_bytes(data)
        args = ["git", "diff", "--no-index", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames",
                "--diff-algorithm=myers", "--indent-heuristic", "-U3", "--src-prefix=a/", "--dst-prefix=b/",
                "--", "a", "b"]
        status, out, err = _git(tmp).execute(args, with_extended_output=True, with_exceptions=False,
                                             stdout_as_string=False, strip_newline_in_stdout=False)
    if status not in (0, 1):
        raise PatchsetError(f"git diff failed: {err}")
    assert isinstance(out, bytes)
    return _tidy(out.decode("utf-8", errors="surrogateescape"), strip)


def _layout_path(path: str, root: str) -> str:
    if not root:
        return path
    prefix = root.rstrip("/") + "/"
    if not path.startswith(prefix):
        raise PatchsetError(f"{path} is outside the patch root {root!r}",
                            hint="package-relative patches can only change files of the package")
    return path[len(prefix):]


HEADER = re.compile(r"^(diff --git |--- |\+\+\+ )")
DOUBLED = re.compile(r"(?<= )([ab])/[ab]/")  # a/a/x, and a/b/x for a file only one side has
PREFIX = re.compile(r"(?<= )[ab]/")


def _tidy(text: str, strip: int) -> str:
    """Drop git's blob ids and the a/a/ b/b/ doubling that diffing two folders gives."""
    out = []
    for line in text.splitlines(keepends=True):
        if line.startswith("index "):
            continue  # blob ids of temporary files mean nothing to a reader
        if HEADER.match(line):
            line = DOUBLED.sub(r"\1/", line)
            if strip == 0:
                line = PREFIX.sub("", line)
        out.append(line)
    return "".join(out)
