"""How `apply` looks: what each patch did to the tree, the files written and deleted, the provenance record."""

from __future__ import annotations

from pathlib import Path

from patchset.core.series import PatchStatus
from patchset.core.trees import compiled
from patchset.sources.tree import TargetTree
from patchset.verbs.apply import ApplyReport


def render_text(report: ApplyReport, given: str) -> str:
    """The report for a person; paths relative to ``given``, the DIR the command named."""
    out = []
    if report.recovered:
        out.append(f"{report.tree}: {report.recovered}")
    if report.already:
        out.append(f"{report.tree}: {report.message}")
        return "".join(line + "\n" for line in out)
    assert report.result is not None
    for p in report.result.patches:
        applied = p.status == PatchStatus.APPLIES
        extra = ", ".join(_shown(given, f) for f in p.files) if applied else p.evidence or p.message
        if applied and compiled(p.skipped):
            extra += f" (not carried: its compiled code is left out: {', '.join(compiled(p.skipped))})"
        out.append(f"  {p.id:36} {'applied' if applied else p.status:12} {extra}")
    for path in report.written:
        out.append(f"  wrote   {_shown(given, path)}")
    for path in report.deleted:
        out.append(f"  deleted {_shown(given, path)}")
    for path in report.removed_dirs:
        out.append(f"  removed {_shown(given, path)}/ (the deletions emptied it)")
    if report.skipped:
        kind = next(p.tree for p in report.result.patches if p.skipped)
        out.append(f"  not in this {kind} (left out): {', '.join(report.skipped)}")
    if report.compiled:
        out.append(f"  compiled code left out (only a build of vLLM carries it): {', '.join(report.compiled)}")
    out.append(f"{report.tree}: {report.message}; provenance in {_shown(given, report.record)}")
    return "".join(line + "\n" for line in out)


def warnings(report: ApplyReport) -> list[str]:
    """What the series said about this tree besides its verdicts (for stderr)."""
    return list(report.result.warnings) if report.result is not None and not report.already else []


def _shown(tree: str, path: str) -> str:
    """A path as the user can open it: relative to the DIR they gave (which may be the vllm package itself)."""
    where = Path(path) if Path(path).is_absolute() else TargetTree(tree).local(path)
    if where is None:
        return path
    try:
        return str(where.resolve().relative_to(Path(tree).resolve()))
    except ValueError:
        return path
