"""How a validate report looks as JSON (the text form is the report's own summary and error lines)."""

from __future__ import annotations

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
    return out


def render_json(report: ValidateReport) -> str:
    return dump_json(validate_doc(report))
