"""How a validate report looks: text (a summary, or one problem a line on stderr) and JSON."""

from __future__ import annotations

from collections.abc import Callable

from patchset.errors import PatchsetError
from patchset.report.common import dump_json
from patchset.verbs.validate import ValidateReport


def error_doc(e: PatchsetError) -> dict:
    """One problem, every field apart (``common.error_doc`` is the CLI's joined ``error`` object)."""
    return {"file": e.file, "line": e.line, "patch": e.patch, "hunk": e.hunk, "message": e.message,
            "hint": e.hint}


def validate_doc(report: ValidateReport) -> dict:
    out: dict = {"ok": report.ok, "manifest": report.manifest}
    if report.errors:
        out["error"] = error_doc(report.errors[0])
        out["errors"] = [error_doc(e) for e in report.errors]
        out["truncated"] = report.truncated
    else:
        out.update({"patches": report.patches, "patch_files": report.files, "hunks": report.hunks,
                    "targets": report.targets})
    if report.unresolved:  # unfinished port conflicts: a finding (exit 1), not bad input
        out["unresolved"] = [error_doc(e) for e in report.unresolved]
    return out


def render_json(report: ValidateReport) -> str:
    return dump_json(validate_doc(report))


def render_text(report: ValidateReport) -> str:
    """The summary line of a manifest that holds; nothing on stdout for one that does not."""
    return f"{report.summary()}\n" if report.ok else ""


def render_problems(report: ValidateReport) -> str:
    """For stderr: one problem a line, FILE:LINE first, as compilers print them (editors and CI
    annotate each), then the count; empty when the manifest holds or the format is JSON."""
    if report.ok:
        return ""
    lines = [str(error) for error in [*report.errors, *report.unresolved]]
    lines.append(f"patchset validate: error: {report.summary()}")
    return "".join(f"{line}\n" for line in lines)


RENDERERS: dict[str, Callable[[ValidateReport], str]] = {"text": render_text, "json": render_json}
