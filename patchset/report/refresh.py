"""How `refresh` looks: text and JSON."""

from __future__ import annotations

from patchset.report.common import dump_json
from patchset.verbs.refresh import RefreshReport


def refresh_text(report: RefreshReport) -> str:
    out = [f"{report.id} on vLLM {report.vllm}: {report.message}"]
    if report.manifest_diff:
        out += ["", report.manifest_diff.rstrip("\n")]
    out += [f"wrote {w}" for w in report.written]
    if report.next_step:
        out.append(f"next: {report.next_step} (it carries the patches after {report.id}; vLLM {report.vllm} "
                   "becomes a target once none conflicts)")
    return "\n".join(out) + "\n"


def refresh_doc(report: RefreshReport) -> dict:
    return {"ok": True, "id": report.id, "vllm": report.vllm, "mode": report.mode, "patch": report.patch,
            "message": report.message, "manifest_diff": report.manifest_diff, "written": report.written,
            "next": report.next_step or None}


def refresh_json(report: RefreshReport) -> str:
    return dump_json(refresh_doc(report))


REFRESH = {"table": refresh_text, "json": refresh_json}
