"""How a check report looks: terminal table, JSON, JUnit XML, Markdown.

Also the JSON shape of a hunk, a patch and a release, which next, import and the other verbs reuse.
"""

from __future__ import annotations

from patchset.core.engine import HunkResult, HunkStatus
from patchset.core.series import PatchResult, PatchStatus, ReleaseResult
from patchset.report.common import Case, dump_json, github_annotation, junit, markdown_table, render, table
from patchset.verbs.check import CheckReport

HEADERS = ("vLLM", "patch", "status", "detail")


def hunk_summary(hunks: tuple[HunkResult, ...]) -> str:
    """"6 hunks: 5 offset -86, 1 offset -74": how far each kind of placement strayed."""
    if not hunks:
        return ""
    kinds: dict[str, int] = {}
    for h in hunks:
        if h.status == HunkStatus.OFFSET:
            key = f"offset {h.offset:+d}"
        elif h.status == HunkStatus.FUZZ:
            key = f"fuzz {h.fuzz} (#{h.number} @ line {h.line})"
        elif h.status in (HunkStatus.EXACT, HunkStatus.ALREADY, HunkStatus.NOT_IN_TREE):
            key = h.status
        else:
            key = f"{h.status} (#{h.number})"
        kinds[key] = kinds.get(key, 0) + 1
    noun = "hunk" if len(hunks) == 1 else "hunks"
    return f"{len(hunks)} {noun}: " + ", ".join(f"{n} {k}" for k, n in kinds.items())


def detail(p: PatchResult) -> str:
    if p.status in (PatchStatus.UPSTREAM, PatchStatus.NOT_TARGETED):
        return p.evidence
    text = hunk_summary(p.hunks)
    if p.message:
        text = (text + "; " if text else "") + p.message
    if p.skipped and p.status != PatchStatus.NOT_IN_TREE:  # whose message names them already
        text += f"; not in this {p.tree or 'tree'}: {', '.join(p.skipped)}"
    return text


def failure_text(p: PatchResult, detail: bool = True) -> str:
    """Why a patch fails: its message, then a line per hunk that does not land (``detail``: with the lines
    that differ at the nearest candidate under it; a terminal asks for them with ``--detail``)."""
    lines = [p.message] if p.message else []
    for h in p.hunks:
        if h.applied or h.status == HunkStatus.NOT_IN_TREE or (h.status == HunkStatus.ALREADY
                                                               and p.status != PatchStatus.FAILED):
            continue
        where = f"{p.patch_file}:{h.patch_line}: " if h.patch_line else ""
        lines.append(f"{where}hunk {h.number} ({h.file}): {h.status}" + (f" - {h.message}" if h.message else ""))
        if detail:
            lines += ["    " + d for d in h.differ]
        if h.moved:
            lines.append(f"    moved_to: {h.moved} ({h.moved_evidence})")
    return "\n".join(lines)


def rows(report: CheckReport):
    for t in report.targets:
        for p in t.patches:
            yield (t.vllm, p.id, p.status, detail(p))


def render_table(report: CheckReport, detail: bool = False) -> str:
    """The table, then per failing patch a line per hunk that does not land; the lines that differ at each
    one's nearest candidate with ``detail`` (Markdown, JUnit and JSON always have them)."""
    out = [render(table("patchset check", HEADERS, rows(report))).rstrip("\n")]
    left_out = False
    for t in report.targets:
        for p in t.patches:
            if p.status.blocks:
                out.append(f"\n{t.vllm} {p.id}: {p.status}")
                out.append(failure_text(p, detail))
                left_out = left_out or not detail and any(h.differ for h in p.hunks)
        for w in t.warnings:
            out.append(f"warning: {t.vllm}: {w}")
    if left_out:
        out.append("\n(the lines that differ where each failed hunk comes nearest: --detail, or --format markdown)")
    out.append("ok" if report.ok else "FAILED")
    return "\n".join(out) + "\n"


def hunk_doc(h: HunkResult) -> dict:
    out: dict = {"file": h.file, "hunk": h.number, "status": h.status, "line": h.line, "offset": h.offset}
    if h.fuzz:
        out["fuzz"] = h.fuzz
    if h.message:
        out["message"] = h.message
    if h.candidates:
        out["candidates"] = list(h.candidates)
    if h.differ:
        out["differ"] = list(h.differ)
    if h.patch_line:
        out["patch_line"] = h.patch_line
    if h.moved:
        out["moved"], out["moved_evidence"] = h.moved, h.moved_evidence
    return out


def patch_doc(p: PatchResult) -> dict:
    out: dict = {"id": p.id, "status": p.status, "evidence": p.evidence or None,
                 "hunks": [hunk_doc(h) for h in p.hunks]}
    if p.message:
        out["message"] = p.message
    if p.patch_file:
        out["patch"] = p.patch_file
        out["sha256"] = p.sha256
    if p.skipped:
        out["skipped_files"] = list(p.skipped)  # their hunks are not-in-tree
        out["tree"] = p.tree
    return out


def release_doc(r: ReleaseResult) -> dict:
    return {"vllm": r.vllm, "ok": r.ok, "source": r.source, "warnings": r.warnings,
            "patches": [patch_doc(p) for p in r.patches]}


def check_doc(report: CheckReport) -> dict:
    return {"ok": report.ok, "manifest": report.manifest, "targets": [release_doc(t) for t in report.targets]}


def render_json(report: CheckReport) -> str:
    return dump_json(check_doc(report))


def render_markdown(report: CheckReport) -> str:
    head = "### patchset check: " + ("all patches apply or are upstream" if report.ok else "**failures**") + "\n\n"
    body = markdown_table(HEADERS, rows(report))
    extra = []
    for t in report.targets:
        for p in t.patches:
            if p.status.blocks:
                extra.append(f"<details><summary>{t.vllm} {p.id}: {p.status}</summary>\n\n```\n"
                             f"{failure_text(p)}\n```\n</details>\n")
        extra += [f"- warning ({t.vllm}): {w}" for w in t.warnings]

    from patchset.report.deps import check_graph  # Markdown only: the graph is drawn for no other format

    graph = check_graph(report)
    extra += [graph] if graph else []
    return head + body + ("\n" + "\n".join(extra) + "\n" if extra else "")


def render_junit(report: CheckReport) -> str:
    cases = []
    for t in report.targets:
        for p in t.patches:
            c = Case(suite=f"vllm-{t.vllm}", name=p.id, detail=detail(p))
            if p.status.blocks:
                c.failure = f"{p.status}: {p.message}"
                c.detail = failure_text(p)
            elif p.status == PatchStatus.NOT_TARGETED:
                c.skipped = str(p.status)
            elif p.status == PatchStatus.NOT_IN_TREE:
                c.skipped = f"{p.status}: {p.message}"
            cases.append(c)
    return junit(cases, "patchset check", warnings=[f"{t.vllm}: {w}" for t in report.targets for w in t.warnings])


def github_annotations(report: CheckReport) -> list[str]:
    out = []
    for t in report.targets:
        for p in t.patches:
            if not p.status.blocks:
                continue
            bad = [h for h in p.hunks if h.fails]
            line = bad[0].patch_line if bad else None
            a = github_annotation("error", f"vLLM {t.vllm}: {p.id} {p.status}: {p.message}", p.patch_file, line)
            if a:
                out.append(a)
        for w in t.warnings:
            a = github_annotation("warning", f"vLLM {t.vllm}: {w}")
            if a:
                out.append(a)
    return out


RENDERERS = {"table": render_table, "json": render_json, "junit": render_junit, "markdown": render_markdown}
