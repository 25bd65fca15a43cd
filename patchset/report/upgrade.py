"""How `upgrade` looks: terminal table, JSON, Markdown, and the pull request's body (``--body FILE``)."""

from __future__ import annotations

import os
from pathlib import Path

from patchset.report.common import dump_json, markdown_table, render, table
from patchset.report.next import upstream_change_doc
from patchset.report.port import port_detail, port_doc
from patchset.report.testreport import proof_doc
from patchset.verbs.port import PortedPatch, PortStatus
from patchset.verbs.proof import PatchVerdict
from patchset.verbs.upgrade import UpgradeReport, patch_file_change

HEADERS = ("patch", "result", "from", "proof", "detail")


def _proof_of(report: UpgradeReport) -> dict[str, PatchVerdict]:
    return {v.id: v for v in report.proof.patches} if report.proof else {}


def _proof_cell(report: UpgradeReport, p: PortedPatch) -> str:
    v = _proof_of(report).get(p.id)
    if v is not None:
        return str(v.verdict)
    if p.result in (PortStatus.CARRIED, PortStatus.PORTED):
        return "not run"
    return "-"


def _rel(report: UpgradeReport, path: str | None) -> str:
    """A path as the branch holds it: relative to the manifest's folder."""
    if not path:
        return ""
    base = Path(report.manifest).parent
    return os.path.relpath(path, base) if os.path.isabs(path) else path


def _since(report: UpgradeReport, p: PortedPatch) -> tuple[str, str]:
    """The first release that carries a retired patch upstream, and the evidence there (V's, by default)."""
    first = report.upstream.get(p.id)
    return (first.release, first.evidence) if first else (report.vllm or "", p.evidence)


def _detail(report: UpgradeReport, p: PortedPatch) -> str:
    if p.result == PortStatus.RETIRED:
        release, evidence = _since(report, p)
        return f"upstream since vLLM {release}: {evidence}"
    return port_detail(p)


def _rows(report: UpgradeReport, detail=None):
    assert report.port is not None
    for p in report.port.patches:
        yield (p.id, p.result, p.from_release or "-", _proof_cell(report, p),
               detail(p) if detail else _detail(report, p))


def _nothing(report: UpgradeReport) -> str:
    targets = ", ".join(report.targets_before)
    return f"patchset upgrade: no vLLM release on the index is newer than the targets ({targets}); nothing changed\n"


def upgrade_table(report: UpgradeReport) -> str:
    if report.port is None:
        return _nothing(report)
    title = f"patchset upgrade --to {report.vllm}" + (" (dry run: nothing written)" if report.dry_run else "")
    out = [render(table(title, HEADERS, _rows(report))).rstrip("\n")]
    out += [f"wrote {w}" for w in report.port.written]
    out += [f"removed {w} (resolved)" for w in report.removed]
    out += [f"warning: {w}" for w in report.warnings]
    out.append(report.title + f" in {report.seconds:.1f} s")
    now = "would become a target" if report.dry_run else "is a target now"
    out.append(f"vLLM {report.vllm} " + (now if report.targeted else "is not a target yet"))
    out += [f"not run: {x}" for x in report.not_run]
    if report.next_step:
        out.append(f"next: {report.next_step}")
    return "\n".join(out) + "\n"


def upgrade_doc(report: UpgradeReport) -> dict:
    return {"ok": report.ok, "vllm": report.vllm, "newer": report.newer, "manifest": report.manifest,
            "title": report.title, "branch": report.branch, "draft": report.draft, "targeted": report.targeted,
            "targets_before": report.targets_before, "dry_run": report.dry_run,
            "port": port_doc(report.port) if report.port else None,
            "proof": proof_doc(report.proof) if report.proof else None,
            "upstream": {k: {"release": u.release, "evidence": u.evidence, "looked": list(u.looked)}
                         for k, u in report.upstream.items()},
            "ported_upstream": {p.id: [upstream_change_doc(c) for c in p.upstream_change]
                                for p in (report.port.patches if report.port else []) if p.result == PortStatus.PORTED},
            "removed": report.removed, "warnings": report.warnings, "not_run": report.not_run, "next": report.next_step,
            "seconds": round(report.seconds, 2)}


def upgrade_json(report: UpgradeReport) -> str:
    return dump_json(upgrade_doc(report))


def upgrade_markdown(report: UpgradeReport) -> str:
    """The job summary's view: the title, the table, what is next (the body has every detail)."""
    if report.port is None:
        return _nothing(report)
    out = f"### patchset upgrade: {report.title}\n\n" + markdown_table(HEADERS, _rows(report))
    return out + (f"\nNext: `{report.next_step}`\n" if report.next_step else "")


def _fence(text: str, lang: str = "diff") -> list[str]:
    ticks = "````" if "```" in text else "```"
    return [f"{ticks}{lang}", *text.rstrip("\n").splitlines(), ticks]


def _short(p: PortedPatch, report: UpgradeReport) -> str:
    """The table's detail: one line a patch (the sections below say the rest)."""
    if p.result == PortStatus.RETIRED:
        return f"upstream since vLLM {_since(report, p)[0]}"
    if p.result == PortStatus.PORTED:
        return f"`{p.patch}`"
    if p.result == PortStatus.CONFLICT:
        return f"{len(p.conflicts)} conflict(s): see below" if p.conflicts else p.message
    if p.result == PortStatus.BLOCKED:
        return p.message
    return "applies as it is"


def upgrade_body(report: UpgradeReport) -> str:
    """The pull request's Markdown: a title line, the table, a section per ported, retired and conflicting
    patch, the proof, the manifest's diff, what was not run. Nothing in it changes from run to run unless the
    upgrade does (no times), so a re-run leaves the pull request as it is."""
    if report.port is None:
        return report.title + "\n\n" + _nothing(report)
    v, port = report.vllm, report.port
    lines = [report.title, "",
             f"Written by `patchset upgrade`: the series carried from vLLM {', '.join(report.targets_before)} to "
             f"vLLM {v}, patch by patch (`patchset port --to {v}`). The branch `{report.branch}` is updated in "
             "place by the next run while nothing else changed it."
             + (" (A dry run: nothing was written.)" if report.dry_run else ""), ""]
    lines += [f"> **Warning:** {w}" for w in report.warnings] + ([""] if report.warnings else [])
    if report.targeted:
        now = "would be a target" if report.dry_run else "is a target now"
        lines += [f"**vLLM {v} {now}**: every patch carried, retired or ported.", ""]
    else:
        first = port.first_conflict
        lines += [f"**vLLM {v} is not a target yet**: {first.id if first else 'a patch'} conflicts. This pull "
                  "request is a draft, and `patchset validate` fails on it until the conflict is finished "
                  "(see below); it is finished from this branch alone.", ""]
    lines += ["## Patches", "", markdown_table(HEADERS, _rows(report, lambda p: _short(p, report))).rstrip("\n"), ""]
    proofs = _proof_of(report)
    for p in port.patches:
        if p.result == PortStatus.PORTED:
            lines += _ported(report, p)
        elif p.result == PortStatus.RETIRED:
            lines += _retired(report, p)
        elif p.result == PortStatus.CONFLICT:
            lines += _conflict(report, p)
    if proofs:
        lines += ["## Proof", "", f"`patchset test --venv --vllm {v}` on this runner (CPU), each patch's tests "
                  "with and without it:", ""]
        lines += [markdown_table(("patch", "verdict", "why"), ((x.id, x.verdict, x.reason)
                                                           for x in proofs.values())).rstrip("\n"), ""]
    if port.manifest_diff:
        lines += ["## The manifest", "", *_fence(port.manifest_diff), ""]
    lines += ["## Not run here", "", *[f"- {x}" for x in report.not_run], ""]
    return "\n".join(lines)


def _ported(report: UpgradeReport, p: PortedPatch) -> list[str]:
    out = [f"### ported: {p.id}", "",
           f"A 3-way merge of vLLM {p.from_release} and {report.vllm} (each release's pristine files, the earlier "
           f"patches applied) gave `{p.patch}`, {len(p.files)} file(s). A clean merge is not a proof: its tests "
           "are.", ""]
    old = report.old_patches.get(p.id)
    if old is not None and p.text is not None and p.patch:
        change = patch_file_change(old[1], p.text, old[0], p.patch)
        if change:
            out += ["<details><summary>The patch file before and after: upstream's changes around its "
                    "lines</summary>", "", *_fence(change), "", "</details>", ""]
    if p.message:
        out += [p.message, ""]
    return out + _upstream_at_hunks(report, p)


def _upstream_at_hunks(report: UpgradeReport, p: PortedPatch) -> list[str]:
    """Upstream's change at each hunk the merge ported, as ``patchset next`` shows it; a diff shown already for
    another hunk is named, not shown again."""
    if not p.upstream_change:
        return []
    out = [f"What upstream changed at each hunk the merge ported (vLLM {p.from_release} to {report.vllm}):", ""]
    shown: dict[str, int] = {}
    for c in p.upstream_change:
        line = f", line {c.line}" if c.line else ""
        out.append(f"- `{c.file}` hunk {c.hunk}{line}: {c.summary}")
        if c.diff and c.diff in shown:
            out += ["", f"  (the same upstream change as hunk {shown[c.diff]})"]
        elif c.diff:
            shown[c.diff] = c.hunk
            out += ["", *("  " + x for x in _fence(c.diff))]
        out.append("")
    return out


def _retired(report: UpgradeReport, p: PortedPatch) -> list[str]:
    v = report.vllm
    release, evidence = _since(report, p)
    first = report.upstream.get(p.id)
    looked = f" (trees opened to find it: {', '.join(first.looked)})" if first and first.looked else ""
    out = [f"### retired: {p.id}", "",
           f"Upstream carries it since vLLM {release}, the first release after vLLM {p.from_release} that does"
           f"{looked}: {evidence}."]
    if release != v:
        out.append(f"In vLLM {v}: {p.evidence}.")
    return out + [f"Its releases stop before {v}; the evidence in {v} is noted on its entry in the manifest.", ""]


def _conflict(report: UpgradeReport, p: PortedPatch) -> list[str]:
    v = report.vllm
    folder = _rel(report, p.workspace)
    out = [f"### conflict: {p.id}", ""]
    if not p.workspace and report.dry_run:  # a dry run writes no workspace: the conflict is only named
        return out + [p.message or f"it does not merge cleanly into vLLM {v}", "",
                      f"Run `patchset upgrade --to {v}` (without --dry-run) to write its workspace: vLLM {v}'s "
                      "files with the conflicts marked, and what to run once they are resolved.", ""]
    if not p.workspace:
        return out + [p.message or "it does not apply to the release it came from", "",
                      f"Mend it there first: `patchset check --vllm {p.from_release}`.", ""]
    out += [f"Its workspace `{folder}/` holds vLLM {v}'s files with the earlier patches and this patch merged, "
            "conflicts marked diff3-style. Edit each file below until no marker is left and it compiles:", ""]
    for c in p.conflicts:
        where = f"{folder}/{c.file}" + (f" line {c.line}" if c.line else "")
        out.append(f"- `{where}`: {c.message}")
        if c.upstream:
            out += ["", "  What upstream changed there:", "",
                    *("  " + x for x in _fence(c.upstream)), ""]
    out += ["", "Then run, on this branch:", "", "```sh", f"patchset refresh {p.id} --vllm {v}",
            f"patchset upgrade --to {v}", "```", "",
            "and commit: the first writes the patch for vLLM " + f"{v} from the workspace, the second carries the "
            f"patches after it and makes {v} a target once none conflicts (and removes the workspaces).", ""]
    return out


UPGRADE = {"table": upgrade_table, "json": upgrade_json, "markdown": upgrade_markdown}
