"""A tree on disk: an unpacked sdist, a checkout, or a site-packages folder.

``DirSource(root)`` reads whatever is there (the sdist source builds on it).
``DirSource.release(root, version)`` is what ``--source dir:PATH`` gets: a
directory the user names is trusted only as far as it proves what it is (the
package, the release it says it holds, no series applied to it already).
"""

from __future__ import annotations

import re
from pathlib import Path

from patchset.errors import SourceError
from patchset.sources import canonical_name
from patchset.versions import public, same_release

PROVENANCE_NAME = ".patchset-provenance.json"  # inside the package folder
JOURNAL_NAME = ".patchset-journal"  # inside the package folder, while an apply is not finished
# An upstream tree (checkout or sdist) has one of these beside the package; site-packages never does.
# A stray tests/ folder (some packages install one into site-packages) proves nothing.
SOURCE_TREE_MARKERS = ("pyproject.toml", "setup.py", "PKG-INFO")


class DirSource:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise SourceError(f"{root} is not a directory")
        self.identity = f"dir:{self.root.resolve()}"
        self.warnings: list[str] = []
        self.source_tree: bool | None = None  # None: judge a path beside the package by its folder's presence
        self.package = ""
        self.kind = "folder"  # until release() says which: "source tree" or "site-packages"

    @classmethod
    def release(cls, root: str | Path, version: str, project: str = "vllm") -> DirSource:
        """The pristine tree of ``version`` at ``root``, or a one-line refusal saying why it is not."""
        src = cls(root)
        package = import_name(project)
        if not (src.root / package / "__init__.py").is_file():
            hint = ("give the folder that holds it (site-packages or the source tree)"
                    if src.root.name == package else f"give a {project} source tree or the site-packages holding it")
            raise SourceError(f"{root} holds no {package} package ({package}/__init__.py)", hint=hint)
        refuse_patched(src.root / package, str(root))
        _check_release(src.root, package, version, str(root), src.warnings)
        src.source_tree, src.package = is_source_tree(src.root), package
        src.kind = "source tree" if src.source_tree else "site-packages"
        return src

    def covers(self, path: str) -> bool:
        """Whether a tree of this kind can hold ``path``: an upstream tree every path (a missing one fails),
        site-packages only its package (tests/ or docs/ beside it are someone else's)."""
        if self.source_tree:
            return True
        top = path.split("/", 1)[0]
        if self.source_tree is False and top != self.package:
            return False
        return (self.root / top).exists()

    def listing(self, prefix: str) -> list[str]:
        """Every file under the folder ``prefix`` (repository layout), for following code that moved."""
        base = self.root / prefix
        if not base.is_dir():
            return []
        return sorted(str(f.relative_to(self.root)) for f in base.rglob("*") if f.is_file() and not f.is_symlink())

    def read(self, path: str) -> bytes | None:
        f = self.root / path
        try:
            return f.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:  # a folder where the patch names a file, no permission: the tree's, not ours
            raise SourceError(f"cannot read {path} in {self.root}: {e.strerror}",
                              hint="the patch names something in the tree that is not a readable file") from e


def import_name(project: str) -> str:
    return canonical_name(project).replace("-", "_")


def is_source_tree(root: Path) -> bool:
    """An upstream checkout or unpacked sdist (tests/ belong to it), not an installed package."""
    return any((root / name).is_file() for name in SOURCE_TREE_MARKERS)


def version_claims(root: Path, package: str = "vllm") -> list[tuple[str, str]]:
    """(version, file that says so) for every place a tree states its release."""
    claims = []
    ver = root / package / "_version.py"
    if ver.is_file():
        m = re.search(r"""__version__\s*=\s*(?:version\s*=\s*)?['"]([^'"]+)['"]""", ver.read_text(errors="replace"))
        if m:
            claims.append((m.group(1), f"{package}/_version.py"))
    metadata = [root / "PKG-INFO", *sorted(root.glob(f"{package}-*.dist-info/METADATA"))]
    for meta in metadata:
        if meta.is_file():
            m = re.search(r"^Version: *(.+)$", meta.read_text(errors="replace"), re.M)
            if m:
                claims.append((m.group(1).strip(), str(meta.relative_to(root))))
    return claims


def stated_version(root: Path, package: str = "vllm") -> tuple[str, str] | None:
    """The one release a tree says it holds, with where it says so; refused when its files disagree."""
    claims = version_claims(root, package)
    if not claims:
        return None
    if len({public(v) for v, _ in claims}) > 1:
        said = ", ".join(f"{v} ({where})" for v, where in claims)
        raise SourceError(f"{root} says it holds several releases: {said}",
                          hint="an install over another one left stale metadata; reinstall the release cleanly")
    return claims[0]


def refuse_patched(package_dir: Path, where: str) -> None:
    """A tree patchset already patched (or left half-patched) is not a pristine release."""
    if (package_dir / JOURNAL_NAME).exists():
        raise SourceError(f"{where}: an interrupted `patchset apply` left {package_dir / JOURNAL_NAME}",
                          hint=f"run `patchset apply --recover {where}` first")
    record = package_dir / PROVENANCE_NAME
    if record.is_file():
        raise SourceError(f"{where} already carries a patchset series (provenance record {record}), "
                          "so it cannot say what the release holds",
                          hint="check a pristine tree: --source pypi, wheel, or an unpatched copy")


def _check_release(root: Path, package: str, version: str, where: str, warnings: list[str]) -> None:
    stated = stated_version(root, package)
    if stated is None:
        warnings.append(f"{where} does not say which release it holds (no PKG-INFO, {package}/_version.py "
                        f"or dist-info): checked as {version} on trust")
        return
    found, said_by = stated
    if not same_release(found, version):
        raise SourceError(f"{where} holds {package} {found} ({said_by}), not {version}",
                          hint=f"check it as --vllm {found}, or put {{version}} in dir:PATH to pick a tree per release")

