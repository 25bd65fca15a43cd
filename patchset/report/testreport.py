"""Rendering `patchset test` results: table, JSON, JUnit XML, Markdown."""

from __future__ import annotations

from patchset.report.common import Case, dump_json, junit, markdown_table, render, table
from patchset.verbs.test import ConfigRun, PatchVerdict, ProofReport, SuiteResult

MARK = {"proven": "✔", "upstream": "·", "not-targeted": "·"}


def _run_cell(run: ConfigRun | None, patch_id: str = "") -> str:
    if run is None:
        return "-"
    also = [x for x in run.excluded if x != patch_id]
    return run.summary() + (f" (also left out: {', '.join(also)})" if also else "")


def _rows(report: ProofReport):
    for p in report.patches:
        yield [p.id, p.verdict, _run_cell(p.without_fix, p.id), _run_cell(p.with_fix), p.reason]


def _suite_rows(report: ProofReport):
    for s in report.suites:
        detail = ", ".join(s.run.failing[:10]) or "; ".join(f"{n}: {w}" for n, w in s.run.needs_gpu[:5])
        skips = sorted({r.message for r in s.run.results if r.outcome == "skipped"})
        if skips and not s.run.failing:
            detail = "; ".join(filter(None, [detail, "skipped: " + "; ".join(skips[:5])]))
        if s.run.crash:
            detail = s.run.crash
        yield [s.path, "pass" if s.ok else "FAIL", s.run.summary(), detail]


def _footer(report: ProofReport) -> str:
    verdict = "OK" if report.ok else "NOT OK"
    secs = ", ".join(f"{k} {v:.0f} s" for k, v in report.seconds.items())
    return (f"vLLM {report.vllm}: {verdict} ({report.runner} runner: {report.environment})"
            + (f"\ntime: {secs}" if secs else ""))


def render_table(report: ProofReport) -> str:
    items: list[object] = [table(f"patchset test: vLLM {report.vllm}",
                                 ["patch", "verdict", "without fix", "with fix", "why"], _rows(report))]
    if report.suites:
        items.append(table("suites (full series)", ["suite", "result", "tests", "detail"], _suite_rows(report)))
    out = [render(*items).rstrip("\n")]
    out += [f"warning: {w}" for w in report.warnings]
    out.append(_footer(report))
    return "\n".join(out) + "\n"


def render_json(report: ProofReport) -> str:
    return dump_json(report.to_json())


def render_markdown(report: ProofReport) -> str:
    out = [f"### patchset test: vLLM {report.vllm} — {'✅ OK' if report.ok else '❌ NOT OK'}", ""]
    out.append(markdown_table(["patch", "verdict", "without fix", "with fix", "why"],
                              ([f"`{r[0]}`", f"{MARK.get(r[1], '✘')} {r[1]}", *r[2:]] for r in _rows(report))))
    if report.suites:
        out.append("")
        out.append(markdown_table(["suite (full series)", "result", "tests", "detail"],
                                  ([f"`{r[0]}`", *r[1:]] for r in _suite_rows(report))))
    for w in report.warnings:
        out.append(f"\n> warning: {w}")
    out.append("")
    out.append(f"_{report.runner} runner: {report.environment}_")
    return "\n".join(out) + "\n"


def _patch_case(report: ProofReport, p: PatchVerdict) -> Case:
    suite = f"patchset.test.vllm-{report.vllm}"
    if p.verdict in ("upstream", "not-targeted") or (p.verdict == "unproven" and not p.tests):
        return Case(suite, p.id, skipped=f"{p.verdict}: {p.reason}")
    if p.ok:
        return Case(suite, p.id, detail=f"{p.verdict}: {p.reason}")
    detail = []
    for run in (p.without_fix, p.with_fix):
        if run:
            detail.append(f"{run.label}: {run.summary()}")
            detail += [f"  {r.nodeid}: {r.outcome} {r.message}".rstrip() for r in run.results]
    return Case(suite, p.id, failure=f"{p.verdict}: {p.reason}", detail="\n".join(detail))


def _suite_case(report: ProofReport, s: SuiteResult) -> Case:
    suite = f"patchset.test.vllm-{report.vllm}.suites"
    if s.ok:
        return Case(suite, s.path, detail=s.run.summary())
    bad = [r for r in s.run.results if r.outcome in ("failed", "error")]
    return Case(suite, s.path, failure=s.run.summary(),
                detail="\n".join(f"{r.nodeid}: {r.outcome} {r.message}" for r in bad))


def render_junit(report: ProofReport) -> str:
    cases = [_patch_case(report, p) for p in report.patches] + [_suite_case(report, s) for s in report.suites]
    return junit(cases, name=f"patchset test vllm {report.vllm}")


RENDERERS = {"table": render_table, "json": render_json, "markdown": render_markdown, "junit": render_junit}


def github_annotations(report: ProofReport) -> list[str]:
    from patchset.report.common import github_annotation

    out = []
    for p in report.patches:
        if not p.ok:
            line = github_annotation("error", f"vLLM {report.vllm}: {p.id} is {p.verdict}: {p.reason}")
            if line:
                out.append(line)
    return out
