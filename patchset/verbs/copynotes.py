"""Review notes on copies, for ``port`` and ``next`` alike: the files a patch creates that copy a file of the
release it was made for, where the new release changed the lines the copy holds (core/copies.py's rule)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from patchset.core import copies, engine
from patchset.core.manifest import Manifest
from patchset.core.moved import PyIndex
from patchset.core.patchfile import PatchFile
from patchset.sources import Source, python_files


@dataclass(frozen=True)
class Review:
    """A note on one file for a person to review: which file, the upstream file it copies, and the words."""

    file: str
    copy_of: str
    message: str
    diff: str = ""  # upstream's change to what the copy holds (only those hunks of the source's diff)

    def to_json(self) -> dict[str, str]:
        return {"file": self.file, "copy_of": self.copy_of, "message": self.message, "diff": self.diff}


def made_by(pf: PatchFile, u_source: Source) -> dict[str, bytes]:
    """The Python files a patch creates on U (``--- /dev/null``, and U does not ship them), as the patch alone makes
    them. Only those files of U are read."""
    out: dict[str, bytes] = {}
    for f in pf.files:
        path = f.path
        if f.old_path is not None or f.new_path is None or not path.endswith(".py") \
                or (u_source.covers(path) and u_source.read(path)):
            continue
        made = engine.apply_patch({path: None}, PatchFile(pf.path, pf.sha256, pf.header, (f,)), max_fuzz=0)
        if made.ok and made.files.get(path):
            out[path] = made.files[path] or b""
    return out


def series_made(manifest: Manifest, u: str, u_source: Source) -> dict[str, bytes | None]:
    """What the series creates on U: the files each patch with a file for U creates, as that patch makes them."""
    out: dict[str, bytes | None] = {}
    for q in manifest.patches:
        if q.choice_for(u) is not None:
            out.update(made_by(q.load(u, manifest.base), u_source))
    return out


def u_index(u_source: Source, package: str, series_made: Mapping[str, bytes | None]) -> PyIndex:
    """Where a created file may have been copied from: U's own Python files and those the series creates on U."""
    files = python_files(u_source, package)
    files.update({k: v for k, v in series_made.items() if v is not None and k.endswith(".py")})
    return PyIndex(files)


def notes(made: Mapping[str, bytes], u: str, v: str, u_source: Source, v_source: Source,
          series_made: Mapping[str, bytes | None], index: PyIndex,
          index_v: Callable[[], PyIndex] | None = None, own: frozenset[str] = frozenset()) -> tuple[Review, ...]:
    """One note per file of ``made`` (created by a patch made for ``u``, not shipped by ``v``) that copies a U file
    whose copied lines ``v`` changed, or that ``v`` removed. U's source is U's own file, else the series' (a
    backport); where ``v`` lacks its path, ``index_v`` (V's files, less ``own``: those the series creates) says
    whether ``v`` moved it."""
    def old(path: str) -> bytes | None:
        return (u_source.read(path) if u_source.covers(path) else None) or series_made.get(path)

    def new(path: str) -> bytes | None:
        return v_source.read(path) if v_source.covers(path) else None

    def shipped(path: str) -> bool:
        return u_source.covers(path) and u_source.read(path) is not None

    found = (copies.drift(path, data, index, old, new, index_v, own, shipped) for path, data in sorted(made.items()))
    return tuple(Review(d.file, d.source, d.message(u, v), d.diff) for d in found if d is not None)
