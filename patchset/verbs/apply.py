"""`patchset apply`: the series for one release onto a real tree, all or nothing.

Every hunk is verified in memory first; nothing is written unless the whole
series applies and every resulting Python file compiles. Files the kind of tree
cannot hold (``requirements/``, ``csrc/``, ``tests/`` beside a site-packages)
are left out, listed in the report and in the provenance record (docs/trees.md). The files are then
replaced through a journal (``patchset.journal``): an error rolls the tree
back, and a kill at any instant is finished or undone by the next ``apply``
(or ``apply --recover``), so the tree is either pristine or fully patched.
Stale bytecode of touched modules is removed and rebuilt with hash-checked
pycs before the provenance record, the commit point, is written.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass, field
from pathlib import Path

from patchset import journal
from patchset.core import bytecode, provenance
from patchset.core.manifest import Manifest
from patchset.core.series import PatchStatus, ReleaseResult, evaluate_release, failure_summary, syntax_error
from patchset.core.trees import compiled
from patchset.errors import Finding, PatchsetError
from patchset.sources.tree import TargetTree
from patchset.versions import same_release


class ApplyError(PatchsetError):
    """The series cannot be applied; the tree was left as it was."""


class SeriesFails(ApplyError, Finding):
    """A hunk fails (or the result does not compile) on this tree: a finding, exit 1; nothing was written."""


@dataclass
class ApplyReport:
    """What an apply did to a tree: the series' result and the files written, deleted and skipped."""

    vllm: str
    tree: str
    result: ReleaseResult | None
    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    removed_dirs: list[str] = field(default_factory=list)  # folders the deletions emptied, gone as with GNU patch
    skipped: list[str] = field(default_factory=list)  # files of the series this kind of tree cannot hold: left out
    compiled: list[str] = field(default_factory=list)  # those of them that are compiled code (csrc/, *.cu, ...)
    record: str = ""
    already: bool = False
    message: str = ""
    recovered: str = ""  # what was done about an interrupted earlier apply, if there was one

    @property
    def ok(self) -> bool:
        return self.already or (self.result is not None and self.result.ok)


def apply_series(manifest: Manifest, version: str, directory: str | Path, *, compile_bytecode: bool = True,
                 allow_version_mismatch: bool = False) -> ApplyReport:
    tree = TargetTree(directory)
    version = manifest.target(version).version
    with journal.locked(tree.package):
        recovered = journal.recover(tree.root, tree.package)
        report = _apply_locked(manifest, version, tree, compile_bytecode, allow_version_mismatch)
    report.recovered = recovered
    if recovered and report.already:  # the recovery just finished it: "nothing changed" would be untrue
        report.message = "the series is applied (provenance record matches)"
    return report


def recover_tree(directory: str | Path) -> str:
    """Finish or undo an apply that was interrupted (killed, power lost); says what it did."""
    tree = TargetTree(directory)
    with journal.locked(tree.package):
        return journal.recover(tree.root, tree.package) or "no interrupted apply: nothing to recover"


def _apply_locked(manifest: Manifest, version: str, tree: TargetTree, compile_bytecode: bool,
                  allow_version_mismatch: bool) -> ApplyReport:
    unsure = _check_version(tree, version, allow_version_mismatch)
    record_path = tree.local(provenance.PROVENANCE_PATH)
    assert record_path is not None
    if record_path.is_file():
        return _already(manifest, version, tree, record_path, compile_bytecode)

    result = evaluate_release(manifest, version, tree)
    result.warnings[:0] = unsure
    if not result.ok:
        raise SeriesFails(failure_summary(result), file=str(tree.root),
                         hint="nothing was written; `patchset check` shows every hunk")
    broken = syntax_error(result)
    if broken:
        raise SeriesFails(broken[0], patch=broken[1], hint="nothing was written")
    plan, new, old = journal.plan(tree.root, tree.package, str(record_path.relative_to(tree.root)),
                                  _files_to_write(tree, result))
    modes = {e.path: e.new_mode for e in plan.entries if e.new_mode is not None}
    record = provenance.make_record(manifest, result, layout=tree.layout, modes=modes)
    journal.replace_files(plan, new, old, provenance.dumps(record), compile_bytecode=compile_bytecode)
    report = ApplyReport(version, str(tree.root), result, record=str(record_path))
    report.skipped = sorted({f for p in result.patches for f in p.skipped})
    report.compiled = compiled(report.skipped)
    report.written = sorted(e.path for e in plan.entries if e.new_sha256 is not None)
    report.deleted = sorted(e.path for e in plan.entries if e.new_sha256 is None)
    report.removed_dirs = sorted(str(tree.root / d) for d, _ in plan.gone_dirs)
    applied = sum(1 for p in result.patches if p.status == PatchStatus.APPLIES)
    report.message = f"applied {applied} patch{'' if applied == 1 else 'es'}"
    if report.skipped:
        n = len(report.skipped)
        report.message += f"; left out {n} file{'' if n == 1 else 's'} this {tree.kind} cannot hold"
    return report


def _files_to_write(tree: TargetTree, result: ReleaseResult) -> list[tuple[str, str, bytes | None, int | None]]:
    """(path, local path, new bytes, mode the patch sets) for every file the series changes here."""
    modes: dict[str, int] = getattr(result, "modes", {})  # the git modes a patch sets (new file mode 100755)
    for path, mode in modes.items():
        if not stat.S_ISREG(mode):
            raise ApplyError(f"{path}: the series sets mode {mode:o}; patchset writes regular files only",
                             hint="symbolic links and other file types are refused")
    out = []
    for path in sorted(set(result.changed) | set(modes)):
        local = tree.local(path)
        if local is None or not tree.covers(path):
            continue
        if path in result.changed:
            content = result.changed[path]
        else:  # a mode-only change: the bytes stay, and the record lists them like any file it wrote
            content = result.files.get(path, tree.read(path))
            if content is None:
                continue  # a mode for a file this tree does not hold
            result.files.setdefault(path, content)
            result.pristine.setdefault(path, content)
        out.append((path, str(local.relative_to(tree.root)), content, modes.get(path)))
    return out


def _check_version(tree: TargetTree, version: str, allow: bool) -> list[str]:
    """Refuse a tree of another release; a warning when the tree does not say which one it holds."""
    if allow:
        return []
    stated = tree.version()
    if stated is None:
        return [f"{tree.root} does not say which vLLM release it holds (no vllm/_version.py, dist-info or "
                f"PKG-INFO): applied as {version} on trust"]
    found, said_by = stated
    if not same_release(found, version):
        raise ApplyError(f"the tree holds vLLM {found} ({said_by}), not {version}", file=str(tree.root),
                         hint="pass the release the tree really holds")
    return []


def _already(manifest: Manifest, version: str, tree: TargetTree, record_path: Path,
             compile_bytecode: bool) -> ApplyReport:
    try:
        record = provenance.loads(record_path.read_bytes(), str(record_path))
    except ValueError as e:
        raise ApplyError(f"unreadable provenance record: {e}", file=str(record_path)) from e
    if record.get("manifest", {}).get("sha256") != manifest.sha256 or record.get("vllm") != version:
        raise ApplyError(
            f"the tree already carries a series (vLLM {record.get('vllm')}, manifest sha256 "
            f"{str(record.get('manifest', {}).get('sha256'))[:12]}, applied {record.get('applied_at')})",
            file=str(record_path), hint="apply to a pristine tree; patchset never stacks a series twice")
    for path, entry in record.get("files", {}).items():
        if _differs(tree, path, entry):
            raise ApplyError(f"{path} differs from what the provenance record says was written",
                             file=str(record_path), hint="the tree was changed after patchset applied the series")
    # The record says the bytecode was refreshed; an old pyc brought back since (a copy, a restore) must not run.
    stale = [p for p in record.get("files", {}) if p.endswith(".py") and _stale_bytecode(tree, p)]
    for path in stale:
        journal.refresh_bytecode(tree.local(path), compile_bytecode=compile_bytecode)  # type: ignore[arg-type]
    bytecode.verify_tree({p: tree.local(p) for p in record.get("files", {})})  # and no other old bytecode runs
    done = f"refreshed the stale bytecode of {len(stale)} modules" if stale else "nothing changed"
    return ApplyReport(version, str(tree.root), None, record=str(record_path), already=True,
                       message=f"the series is already applied (provenance record matches); {done}")


def _differs(tree: TargetTree, path: str, entry: dict) -> bool:
    if provenance.sha256(tree.read(path)) != entry.get("sha256"):
        return True
    local = tree.local(path)
    if not entry.get("mode") or local is None or not local.exists():
        return False
    return f"{local.stat().st_mode & 0o177777:o}" != entry["mode"]


def _stale_bytecode(tree: TargetTree, path: str) -> bool:
    local = tree.local(path)
    return local is not None and not journal.bytecode_matches(local)
