"""How `next`, `port` and `refresh` look: terminal table, JSON, Markdown."""

from __future__ import annotations

from patchset.report.check import hunk_summary, patch_doc
from patchset.report.common import dump_json, markdown_table, render, table
from patchset.verbs.next import NextPatch, NextReport, NextStatus, UpstreamChange
from patchset.verbs.port import Conflict, PortedPatch, PortReport, PortStatus
from patchset.verbs.refresh import RefreshReport

NEXT_HEADERS = ("patch", "status", "from", "detail")
PORT_HEADERS = ("patch", "result", "from", "detail")


def next_detail(p: NextPatch) -> str:
    r = p.result
    if p.status == NextStatus.UPSTREAM:
        return r.evidence
    text = hunk_summary(r.hunks)
    if p.already:
        text += f"; upstream already has hunk(s) {', '.join(map(str, p.already))}"
    if r.message and p.status != NextStatus.CARRIES:
        text = (text + "; " if text else "") + r.message
    return text


def _next_rows(report: NextReport):
    for p in report.patches:
        yield (p.id, p.status, p.from_release or "-", next_detail(p))


def _changes_text(report: NextReport) -> list[str]:
    out = []
    for p in report.patches:
        for c in p.upstream_change:
            out.append(f"\n{p.id}, hunk {c.hunk} ({c.file}): {c.summary}")
            out += ["    " + x for x in c.diff.rstrip("\n").splitlines()]
    return out


def next_table(report: NextReport) -> str:
    if report.vllm is None:
        return "no release on the index is newer than the targets (--pre counts pre-releases)\n"
    out = [render(table(f"patchset next: vLLM {report.vllm} ({_standing(report)})", NEXT_HEADERS,
                        _next_rows(report))).rstrip("\n")]
    out += _changes_text(report)
    out += [f"warning: {w}" for w in report.warnings]
    verdict = "every patch carries or is upstream on" if report.ok else "the series needs porting to"
    out.append(f"{verdict} vLLM {report.vllm}" + ("" if report.ok else f": patchset port --to {report.vllm}"))
    return "\n".join(out) + "\n"


def _standing(report: NextReport) -> str:
    """Where the release stands: only one newer than every target is "newer than the targets"."""
    if report.standing == "target":
        return "a target already: patchset check shows it as the manifest has it"
    if report.standing == "older":
        return "older than the newest target"
    return f"newer than the targets: {', '.join(report.newer) or 'none'}"


def upstream_change_doc(c: UpstreamChange) -> dict:
    out = {"file": c.file, "hunk": c.hunk, "diff": c.diff, "line": c.line, "moved_to": c.moved_to,
           "summary": c.summary}
    if c.moved:  # the lines left their file: where they stand in the new release, and the evidence
        out.update(moved=c.moved, moved_exact=c.moved_exact, moved_evidence=c.moved_evidence)
    return out


def next_patch_doc(p: NextPatch) -> dict:
    """check's patch object, with the status on the next release and what upstream changed."""
    out = patch_doc(p.result)
    out.update(status=p.status, **{"from": p.from_release})
    if p.already:
        out["already_upstream"] = list(p.already)
    out["upstream_change"] = [upstream_change_doc(c) for c in p.upstream_change]
    return out


def next_doc(report: NextReport) -> dict:
    return {"ok": report.ok, "vllm": report.vllm, "standing": report.standing, "newer": report.newer,
            "source": report.source,
            "patches": [next_patch_doc(p) for p in report.patches], "warnings": report.warnings}


def next_json(report: NextReport) -> str:
    return dump_json(next_doc(report))


def next_markdown(report: NextReport) -> str:
    if report.vllm is None:
        return "### patchset next\n\nNo release on the index is newer than the targets.\n"
    head = f"### patchset next: vLLM {report.vllm}\n\n{_standing(report).capitalize()}\n\n"
    body = markdown_table(NEXT_HEADERS, _next_rows(report))
    extra = []
    for p in report.patches:
        for c in p.upstream_change:
            extra.append(f"<details><summary>{p.id}, hunk {c.hunk} ({c.file}): {c.summary}</summary>\n\n"
                         f"```diff\n{c.diff}```\n</details>\n")
    return head + body + ("\n" + "\n".join(extra) if extra else "")


def port_detail(p: PortedPatch) -> str:
    if p.result == PortStatus.RETIRED:
        return p.evidence
    if p.result == PortStatus.CONFLICT:
        where = "; ".join(f"{c.file}:{c.line}" if c.line else c.file for c in p.conflicts)
        return " ".join(x for x in (p.message, f"({where})" if where else "", f"workspace {p.workspace}"
                                    if p.workspace else "") if x)
    if p.result == PortStatus.BLOCKED:
        return p.message
    if not p.patch:
        return p.message
    return f"{p.patch} ({len(p.files)} file(s))" + (f"; {p.message}" if p.message else "")  # "moved from A to B"


def _port_rows(report: PortReport):
    for p in report.patches:
        yield (p.id, p.result, p.from_release or "-", port_detail(p))


def port_table(report: PortReport) -> str:
    title = f"patchset port --to {report.to}" + (" (dry run: nothing written)" if report.dry_run else "")
    out = [render(table(title, PORT_HEADERS, _port_rows(report))).rstrip("\n")]
    out += [f"wrote {w}" for w in report.written]
    counts = {k: sum(1 for p in report.patches if p.result == k)
              for k in PortStatus}
    out.append(", ".join(f"{n} {k}" for k, n in counts.items()) + f" in {report.seconds:.1f} s")
    out.append(f"a merge is not a proof: run patchset test --vllm {report.to}")
    return "\n".join(out) + "\n"


def conflict_doc(c: Conflict) -> dict:
    return {"file": c.file, "line": c.line, "message": c.message, "upstream_change": c.upstream}


def ported_doc(p: PortedPatch) -> dict:
    return {"id": p.id, "result": p.result, "from": p.from_release, "patch": p.patch,
            "workspace": p.workspace, "conflicts": [conflict_doc(c) for c in p.conflicts],
            "evidence": p.evidence or None, "message": p.message or None, "files": list(p.files)}


def port_doc(report: PortReport) -> dict:
    return {"ok": report.ok, "to": report.to, "manifest": report.manifest, "dry_run": report.dry_run,
            "patches": [ported_doc(p) for p in report.patches], "manifest_diff": report.manifest_diff,
            "written": report.written, "next": f"patchset test --vllm {report.to}",
            "seconds": round(report.seconds, 2)}


def port_json(report: PortReport) -> str:
    return dump_json(port_doc(report))


def port_markdown(report: PortReport) -> str:
    head = f"### patchset port --to {report.to}\n\n"
    body = markdown_table(PORT_HEADERS, _port_rows(report))
    diff = f"\n```diff\n{report.manifest_diff}```\n" if report.manifest_diff else ""
    return head + body + diff + f"\nNext: `patchset test --vllm {report.to}`\n"


def refresh_text(report: RefreshReport) -> str:
    out = [f"{report.id} on vLLM {report.vllm}: {report.message}"]
    if report.manifest_diff:
        out += ["", report.manifest_diff.rstrip("\n")]
    out += [f"wrote {w}" for w in report.written]
    return "\n".join(out) + "\n"


def refresh_doc(report: RefreshReport) -> dict:
    return {"ok": True, "id": report.id, "vllm": report.vllm, "mode": report.mode, "patch": report.patch,
            "message": report.message, "manifest_diff": report.manifest_diff, "written": report.written}


def refresh_json(report: RefreshReport) -> str:
    return dump_json(refresh_doc(report))


NEXT = {"table": next_table, "json": next_json, "markdown": next_markdown}
PORT = {"table": port_table, "json": port_json, "markdown": port_markdown}
REFRESH = {"table": refresh_text, "json": refresh_json}
