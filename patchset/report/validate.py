"""How a validate report looks: text (a summary, or one problem a line on stderr) and JSON."""

from __future__ import annotations

from collections.abc import Callable

from patchset.report.common import dump_json, error_doc
from patchset.verbs.validate import ValidateReport


def validate_doc(report: ValidateReport) -> dict:
    """A manifest that holds: what it holds. One that does not: every verb's error document, the first problem
    under ``error`` and the others under its ``more`` (``truncated``: validate stopped at its limit)."""
    if report.errors:
        out: dict = {"ok": False, "error": error_doc(report.errors[0], report.errors[1:])}
        if report.truncated:
            out["truncated"] = True
        return out
    out = {"ok": report.ok, "manifest": report.manifest, "patches": report.patches, "patch_files": report.files,
           "hunks": report.hunks, "targets": report.targets}
    if report.unresolved:  # unfinished port conflicts: a finding (exit 1), not bad input
        out["unresolved"] = [{"file": e.file, "line": e.line, "patch": e.patch, "message": e.message,
                              "hint": e.hint} for e in report.unresolved]
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
