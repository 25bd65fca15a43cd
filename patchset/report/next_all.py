"""How `next --all` looks: every release newer than the targets, a row each (a dashboard issue, a job summary)."""

from __future__ import annotations

from patchset.report.common import dump_json, markdown_table, render, table
from patchset.verbs.next import COUNTED, AllReleasesReport

HEADERS = ("release", *COUNTED, "needs work")
NONE = "no release on the index is newer than the targets (--pre counts pre-releases)"


def _rows(report: AllReleasesReport):
    for r in report.releases:
        yield (r.vllm, *(str(r.counts[k]) for k in COUNTED), ", ".join(r.needs_work) or "-")


def _head(report: AllReleasesReport) -> str:
    n = len(report.releases)
    return (f"{n} release{'s' if n != 1 else ''} newer than the targets ({', '.join(report.targets)})"
            f"{', newest ' + report.releases[-1].vllm if n else ''}")


NEXT = "`patchset upgrade` carries the series to the newest; `patchset upgrade --to V`, one release at a time"


def all_table(report: AllReleasesReport) -> str:
    if not report.releases:
        return NONE + "\n"
    return render(table(f"patchset next --all: {_head(report)}", HEADERS, _rows(report))).rstrip("\n") + \
        f"\nnext: {NEXT.replace('`', '')}\n"


def all_json(report: AllReleasesReport) -> str:
    return dump_json({"ok": report.ok, "targets": report.targets,
                      "releases": [{"vllm": r.vllm, "counts": r.counts, "needs_work": r.needs_work}
                                   for r in report.releases]})


def all_markdown(report: AllReleasesReport) -> str:
    if not report.releases:
        return f"### patchset next --all\n\n{NONE[0].upper()}{NONE[1:]}.\n"
    return (f"### patchset next --all: {_head(report)}\n\n" + markdown_table(HEADERS, _rows(report))
            + f"\nNext: {NEXT}.\n")


ALL = {"table": all_table, "json": all_json, "markdown": all_markdown}
