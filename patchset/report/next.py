"""How `next` looks: terminal table, JSON, Markdown."""

from __future__ import annotations

from patchset.core.engine import HunkResult, HunkStatus
from patchset.report.check import hunk_summary, patch_doc
from patchset.report.common import dump_json, markdown_table, plural, render, table
from patchset.report.review import review_markdown, review_text
from patchset.verbs.next import NextPatch, NextReport, NextStatus, UpstreamChange

NEXT_HEADERS = ("patch", "status", "from", "detail")


def next_detail(p: NextPatch) -> str:
    r = p.result
    if p.status == NextStatus.UPSTREAM:
        return r.evidence
    text = hunk_summary(r.hunks)
    if p.already:
        text += f"; upstream already has hunk(s) {', '.join(map(str, p.already))}"
    if r.message and p.status != NextStatus.CARRIES:
        text = (text + "; " if text else "") + r.message
    if p.review:
        text = (text + "; " if text else "") + plural(len(p.review), "copy", "copies") + " to review (below)"
    return text


def _next_rows(report: NextReport):
    for p in report.patches:
        yield (p.id, p.status, p.from_release or "-", next_detail(p))


def _place(h: HunkResult, c: UpstreamChange | None) -> str:
    """FILE:LINE of a failing hunk in the new release: where its lines went when they left their file, else
    where it comes nearest in its own file."""
    if c is not None and c.moved:
        return c.moved
    line = h.line if h.line else c.moved_to or c.line if c is not None else None
    return f"{h.file}:{line}" if line else h.file


def failing_hunk_lines(p: NextPatch) -> list[str]:
    """One line per hunk that no longer lands: its place in the new release, why, and what upstream did there
    (with the lead when its lines moved). The diffs themselves: ``--detail``, Markdown and JSON."""
    changes = {(c.file, c.hunk): c for c in p.upstream_change}
    out = []
    for h in p.result.hunks:
        if h.status not in (HunkStatus.FAILED, HunkStatus.FUZZ):
            continue
        c = changes.get((h.file, h.number))
        why = f"{h.status}" + (f" - {h.message}" if h.message else "")
        upstream = c.summary if c is not None and c.summary else ""
        if not upstream and h.moved:
            upstream = f"moved_to: {h.moved} ({h.moved_evidence})"
        out.append(f"  {p.id} hunk {h.number}: {_place(h, c)}: {why}" + (f"; {upstream}" if upstream else ""))
    return out


def _diffs_text(p: NextPatch) -> list[str]:
    """Each failing hunk's upstream diff, indented; a diff the patch showed already for another hunk is named,
    not shown again."""
    out: list[str] = []
    shown: dict[str, int] = {}
    for c in p.upstream_change:
        out.append(f"\n{p.id}, hunk {c.hunk} ({c.file}): {c.summary}")
        if c.diff and c.diff in shown:
            out.append(f"    (the same upstream change as hunk {shown[c.diff]} above)")
            continue
        shown.setdefault(c.diff, c.hunk)
        out += ["    " + x for x in c.diff.rstrip("\n").splitlines()]
    return out


def next_table(report: NextReport, detail: bool = False) -> str:
    """The table, then one line per failing hunk (``detail``: upstream's diff under each instead), the review
    notes in full, the warnings and the verdict."""
    if report.vllm is None:
        return "no release on the index is newer than the targets (--pre counts pre-releases)\n"
    out = [render(table(f"patchset next: vLLM {report.vllm} ({_standing(report)})", NEXT_HEADERS,
                        _next_rows(report))).rstrip("\n")]
    if detail:
        out += [x for p in report.patches for x in _diffs_text(p)]
    else:
        hunks = [x for p in report.patches for x in failing_hunk_lines(p)]
        if hunks:
            out += ["", "hunks that no longer land (upstream's diff under each: --detail, or --format markdown):",
                    *hunks]
    for p in report.patches:
        for note in p.review:  # in full: a table cell would cut it short
            out += ["", *review_text(p.id, note)]
    out += [f"warning: {w}" for w in report.warnings]
    verdict = "every patch carries or is upstream on" if report.ok else "the series needs porting to"
    out.append(f"{verdict} vLLM {report.vllm}" + ("" if report.ok else f": patchset port --to {report.vllm}"))
    return "\n".join(out) + "\n"


def _standing(report: NextReport) -> str:
    """Where the release stands, with the targets and the newer releases said apart: only one newer than every
    target is "newer than every target"."""
    targets = f"targets: {', '.join(report.targets)}" if report.targets else ""
    if report.standing == "target":
        return "a target already: patchset check shows it as the manifest has it"
    if report.standing == "older":
        return "older than the newest target" + (f"; {targets}" if targets else "")
    newer = f"releases newer than the targets: {', '.join(report.newer) or 'none'}"
    return "newer than every target; " + "; ".join(x for x in (targets, newer) if x)


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
    out["review"] = [note.to_json() for note in p.review]
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
        extra += [review_markdown(p.id, note) for note in p.review]
    return head + body + ("\n" + "\n".join(extra) if extra else "")


NEXT = {"table": next_table, "json": next_json, "markdown": next_markdown}
