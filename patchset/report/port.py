"""How `port` looks: terminal table, JSON, Markdown."""

from __future__ import annotations

from patchset.report.common import dump_json, markdown_table, plural, render, table
from patchset.report.review import review_markdown, review_text
from patchset.verbs.port import Conflict, PortedPatch, PortReport, PortStatus

PORT_HEADERS = ("patch", "result", "from", "detail")


def port_detail(p: PortedPatch) -> str:
    if p.result == PortStatus.RETIRED:
        return p.evidence
    if p.result == PortStatus.CONFLICT:
        where = "; ".join(f"{c.file}:{c.line}" if c.line else c.file for c in p.conflicts)
        already = f"its change already in {p.already_in_v[0]}" if len(p.already_in_v) == 1 else \
            f"its change already in {len(p.already_in_v)} files" if p.already_in_v else ""
        review = plural(len(p.review), "copy", "copies") + " to review (below)" if p.review else ""
        return " ".join(x for x in (p.message, f"({where})" if where else "", f"[{review}]" if review else "",
                                    f"[{already}]" if already else "", f"workspace {p.workspace}" if p.workspace
                                    else "") if x)
    if p.result == PortStatus.BLOCKED:
        return p.message
    if not p.patch:
        return p.message
    review = "; " + plural(len(p.review), "copy", "copies") + " to review (below)" if p.review else ""
    return f"{p.patch} ({len(p.files)} file(s))" + (f"; {p.message}" if p.message else "") + review


def review_lines(report: PortReport) -> list[str]:
    """Each review note in full (a table cell would cut it short), with upstream's change under it."""
    return [x for p in report.patches for note in p.review for x in review_text(p.id, note)]


def _port_rows(report: PortReport):
    for p in report.patches:
        yield (p.id, p.result, p.from_release or "-", port_detail(p))


def port_table(report: PortReport) -> str:
    title = f"patchset port --to {report.to}" + (" (dry run: nothing written)" if report.dry_run else "")
    out = [render(table(title, PORT_HEADERS, _port_rows(report))).rstrip("\n")]
    out += review_lines(report)
    out += [f"wrote {w}" for w in report.written]
    counts = {k: sum(1 for p in report.patches if p.result == k)
              for k in PortStatus}
    out.append(", ".join(f"{n} {k}" for k, n in counts.items()) + f" in {report.seconds:.1f} s")
    out.append(_next_line(report))
    return "\n".join(out) + "\n"


def _next_line(report: PortReport) -> str:
    first = report.first_conflict
    if first is None:
        return f"a merge is not a proof: run {report.next_step}"
    if first.workspace:
        return (f"next: resolve {first.id} in {first.workspace} (its README.md lists each conflict), then "
                f"{report.next_step}, and port again for the patches after it")
    if first.conflicts:
        return (f"next: {report.next_step} writes each conflict's workspace (vLLM {report.to}'s files with diff3 "
                "markers, a README)")
    return f"next: {report.next_step}: {first.id} does not apply to vLLM {first.from_release} itself; mend it there"


def conflict_doc(c: Conflict) -> dict:
    return {"file": c.file, "line": c.line, "message": c.message, "upstream_change": c.upstream}


def ported_doc(p: PortedPatch) -> dict:
    return {"id": p.id, "result": p.result, "from": p.from_release, "patch": p.patch,
            "workspace": p.workspace, "conflicts": [conflict_doc(c) for c in p.conflicts],
            "evidence": p.evidence or None, "message": p.message or None, "files": list(p.files),
            "already_in_v": list(p.already_in_v), "review": [note.to_json() for note in p.review]}


def port_doc(report: PortReport) -> dict:
    return {"ok": report.ok, "to": report.to, "manifest": report.manifest, "dry_run": report.dry_run,
            "patches": [ported_doc(p) for p in report.patches], "manifest_diff": report.manifest_diff,
            "written": report.written, "next": report.next_step,
            "seconds": round(report.seconds, 2)}


def port_json(report: PortReport) -> str:
    return dump_json(port_doc(report))


def port_markdown(report: PortReport) -> str:
    head = f"### patchset port --to {report.to}\n\n"
    body = markdown_table(PORT_HEADERS, _port_rows(report))
    notes = "".join(review_markdown(p.id, note) for p in report.patches for note in p.review)
    notes = f"\n**Review:**\n\n{notes}" if notes else ""
    diff = f"\n```diff\n{report.manifest_diff}```\n" if report.manifest_diff else ""
    return head + body + notes + diff + f"\nNext: `{report.next_step}`\n"


PORT = {"table": port_table, "json": port_json, "markdown": port_markdown}
