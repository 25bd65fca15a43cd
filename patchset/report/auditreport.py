"""How an audit report looks: a terminal table per image, or one JSON object."""

from __future__ import annotations

from collections import Counter

from patchset.report.common import dump_json, github_annotation, markdown_table, render, table
from patchset.verbs.audit import AuditReport, FixStatus, FixVerdict, ImageAudit

HEADERS = ("fix", "status", "evidence")


def _status(f: FixVerdict) -> str:
    if f.targeted or f.status in (FixStatus.UPSTREAM, FixStatus.CARRIED):
        return f.status
    return f"{f.status} (not targeted)"


def _title(i: ImageAudit) -> str:
    what = f"vLLM {i.vllm}" if i.vllm else "vLLM ?"
    prov = "provenance record" if i.provenance else "no provenance record"
    verdict = "ok" if i.ok else "FAILED"
    return f"{i.image}: {what}, {prov} - {verdict}"


def _bytecode(i: ImageAudit) -> str:
    """One line on the cached bytecode of the touched modules (what Python runs, not the .py)."""
    if not i.bytecode:
        return ""
    counts = ", ".join(f"{n} {verdict}" for verdict, n in sorted(Counter(b["verdict"] for b in i.bytecode).items()))
    return f"  bytecode of the touched modules: {len(i.bytecode)} .pyc ({counts})\n"


def render_table(report: AuditReport) -> str:
    parts = []
    for i in report.images:
        if i.error:
            parts.append(f"{i.image}: cannot audit: {i.error}\n")
            continue
        parts.append(render(table(_title(i), HEADERS, ((f.id, _status(f), f.evidence) for f in i.fixes))))
        parts.append(_bytecode(i))
        parts += [f"  warning: {w}\n" for w in i.warnings]
    return "".join(parts)


def fix_doc(f: FixVerdict) -> dict:
    return {"id": f.id, "title": f.title, "origin": f.origin, "upstream": f.upstream,
            "status": f.status, "evidence": f.evidence, "targeted": f.targeted, "sha256": f.sha256}


BYTECODE_KEYS = ("pyc", "tag", "level", "kind", "verdict")  # of each judged .pyc; "why" and digests stay out


def image_doc(i: ImageAudit) -> dict:
    out: dict = {"image": i.image, "vllm": i.vllm, "ok": i.ok, "digest": i.digest, "id": i.id,
                 "site": i.site, "provenance": i.provenance, "fixes": [fix_doc(f) for f in i.fixes],
                 "bytecode": [{k: b[k] for k in BYTECODE_KEYS} for b in i.bytecode], "warnings": i.warnings}
    if i.error:
        out["error"] = i.error
    return out


def audit_doc(report: AuditReport) -> dict:
    return {"ok": report.ok, "manifest": report.manifest, "images": [image_doc(i) for i in report.images]}


def render_json(report: AuditReport) -> str:
    return dump_json(audit_doc(report))


def render_markdown(report: AuditReport) -> str:
    out = []
    for i in report.images:
        out.append(f"### {'✅' if i.ok else '❌'} `{i.image}` (vLLM {i.vllm or '?'})\n\n")
        if i.error:
            out.append(f"cannot audit: {i.error}\n\n")
            continue
        out.append(markdown_table(HEADERS, ((f.id, _status(f), f.evidence) for f in i.fixes)) + "\n")
        out.append(_bytecode(i).strip() + "\n\n" if i.bytecode else "")
    return "".join(out)


RENDERERS = {"table": render_table, "json": render_json, "markdown": render_markdown}


def github_annotations(report: AuditReport) -> list[str]:
    lines = []
    for i in report.images:
        if i.error:
            line = github_annotation("error", f"{i.image}: cannot audit: {i.error}")
            lines += [line] if line else []
        for f in i.fixes:
            if f.failing:
                line = github_annotation("error", f"{i.image}: {f.id} is {f.status}: {f.evidence}")
                lines += [line] if line else []
    return lines
