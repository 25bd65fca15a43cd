"""`patchset apply`: the series for one release onto a real tree, all or nothing.

Every hunk is verified in memory first; nothing is written unless the whole
series applies and every resulting Python file compiles. Files are replaced
by atomic renames, and if a write fails midway the files already replaced
are put back, so the tree is either pristine or fully patched. Stale bytecode
of touched modules is removed and rebuilt with hash-checked pycs, so an old
``.pyc`` can never run under a patched source.
"""

from __future__ import annotations

import contextlib
import os
import py_compile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from patchset.core import bytecode, provenance
from patchset.core.manifest import Manifest, same_release
from patchset.core.series import ReleaseResult, evaluate_release, failure_summary, syntax_error
from patchset.errors import PatchsetError
from patchset.sources.tree import TargetTree


class ApplyError(PatchsetError):
    """The series cannot be applied; the tree was left as it was."""


@dataclass
class ApplyReport:
    vllm: str
    tree: str
    result: ReleaseResult | None
    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # files of the series this tree cannot hold
    record: str = ""
    already: bool = False
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.already or (self.result is not None and self.result.ok)


def apply_series(manifest: Manifest, version: str, directory: str | Path, *, compile_bytecode: bool = True,
                 allow_version_mismatch: bool = False) -> ApplyReport:
    tree = TargetTree(directory)
    version = manifest.target(version).version
    _check_version(tree, version, allow_version_mismatch)
    record_path = tree.local(provenance.PROVENANCE_PATH)
    assert record_path is not None
    if record_path.is_file():
        return _already(manifest, version, tree, record_path)

    result = evaluate_release(manifest, version, tree)
    if not result.ok:
        raise ApplyError(failure_summary(result), file=str(tree.root),
                         hint="nothing was written; `patchset check` shows every hunk")
    broken = syntax_error(result)
    if broken:
        raise ApplyError(broken[0], patch=broken[1], hint="nothing was written")
    changed = result.changed
    record = provenance.make_record(manifest, result, layout=tree.layout)
    report = ApplyReport(version, str(tree.root), result, record=str(record_path))
    report.skipped = sorted({f for p in result.patches for f in p.skipped})
    _write_all(tree, changed, {**result.pristine}, record_path, provenance.dumps(record))
    report.written = sorted(p for p, c in changed.items() if c is not None)
    report.deleted = sorted(p for p, c in changed.items() if c is None)
    if compile_bytecode:
        _refresh_bytecode(tree, changed)
    bytecode.settle_tree(record_path, {p: tree.local(p) for p in changed})  # no old bytecode may still run
    report.message = f"applied {sum(1 for p in result.patches if p.status == 'applies')} patches"
    return report


def _check_version(tree: TargetTree, version: str, allow: bool) -> None:
    found = tree.version()
    if found is None or allow:
        return
    if not same_release(found, version):
        raise ApplyError(f"the tree holds vLLM {found}, not {version}", file=str(tree.root),
                         hint="pass the release the tree really holds")


def _already(manifest: Manifest, version: str, tree: TargetTree, record_path: Path) -> ApplyReport:
    try:
        record = provenance.loads(record_path.read_bytes())
    except ValueError as e:
        raise ApplyError(f"unreadable provenance record: {e}", file=str(record_path)) from e
    if record.get("manifest", {}).get("sha256") != manifest.sha256 or record.get("vllm") != version:
        raise ApplyError(
            f"the tree already carries a series (vLLM {record.get('vllm')}, manifest sha256 "
            f"{str(record.get('manifest', {}).get('sha256'))[:12]}, applied {record.get('applied_at')})",
            file=str(record_path), hint="apply to a pristine tree; patchset never stacks a series twice")
    for path, entry in record.get("files", {}).items():
        if provenance.sha256(tree.read(path)) != entry.get("sha256"):
            raise ApplyError(f"{path} differs from what the provenance record says was written",
                             file=str(record_path), hint="the tree was changed after patchset applied the series")
    bytecode.verify_tree({p: tree.local(p) for p in record.get("files", {})})  # and no old bytecode runs
    return ApplyReport(version, str(tree.root), None, record=str(record_path), already=True,
                       message="the series is already applied (provenance record matches); nothing changed")


def _write_all(tree: TargetTree, changed: dict[str, bytes | None], before: dict[str, bytes | None],
               record_path: Path, record: bytes) -> None:
    done: list[str] = []
    try:
        for path, content in sorted(changed.items()):
            target = tree.local(path)
            if target is None:
                continue
            if content is None:
                target.unlink()
            else:
                _atomic_write(target, content)
            done.append(path)
        _atomic_write(record_path, record)
    except BaseException:
        for path in reversed(done):  # put back what was replaced, newest first
            target = tree.local(path)
            old = before.get(path)
            if target is None:
                continue
            if old is None:
                with contextlib.suppress(FileNotFoundError):
                    target.unlink()
            else:
                _atomic_write(target, old)
        with contextlib.suppress(FileNotFoundError):
            record_path.unlink()
        raise


def _atomic_write(target: Path, content: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = target.stat().st_mode & 0o7777 if target.exists() else 0o644
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(content)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _refresh_bytecode(tree: TargetTree, changed: dict[str, bytes | None]) -> None:
    for path, content in changed.items():
        if not path.endswith(".py"):
            continue
        source = tree.local(path)
        if source is None:
            continue
        remove_stale_bytecode(source)
        if content is not None:
            with contextlib.suppress(py_compile.PyCompileError, OSError):
                py_compile.compile(str(source), doraise=True,
                                   invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)


def remove_stale_bytecode(source: Path) -> list[Path]:
    """Every cached bytecode file of this module, for any interpreter."""
    stale = list((source.parent / "__pycache__").glob(f"{source.stem}.*.pyc"))
    legacy = source.with_suffix(".pyc")
    if legacy.exists():
        stale.append(legacy)
    for f in stale:
        with contextlib.suppress(FileNotFoundError):
            f.unlink()
    return stale
