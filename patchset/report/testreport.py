"""Rendering `patchset test` results: table, JSON, JUnit XML, Markdown."""

from __future__ import annotations

from patchset.report.common import Case, dump_json, github_annotation, junit, markdown_table, render, table
from patchset.runners import NodeResult, Outcome
from patchset.runners.pytestrun import ConfigRun
from patchset.verbs import baseline as bl
from patchset.verbs.baseline import Baseline
from patchset.verbs.proof import PatchVerdict, ProofReport, SuiteResult, Verdict

MARK = {Verdict.PROVEN: "✔", Verdict.UPSTREAM: "·", Verdict.NOT_TARGETED: "·"}


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
        if s.not_run:
            yield [s.path, s.result, "not run (gpu: true)", s.not_run]
            continue
        if s.run.crash:  # its outcomes cannot be read: no test-by-test judgement either
            yield [s.path, s.result, s.run.summary(), "; ".join(filter(None, [s.run.crash, _baseline_note(s)]))]
            continue
        if s.comparison is None:
            detail = ", ".join(s.run.failing[:10]) or "; ".join(f"{n}: {w}" for n, w in s.run.needs_gpu[:5])
            skips = sorted({r.message for r in s.run.results if r.outcome == Outcome.SKIPPED})
            if skips and not s.run.failing:
                detail = "; ".join(filter(None, [detail, "skipped: " + "; ".join(skips[:5])]))
            detail = "; ".join(filter(None, [detail, _baseline_note(s)]))
            yield [s.path, s.result, s.run.summary(), detail]
            continue
        counts = ", ".join(f"{n} {c}" for c, n in s.comparison.counts().items() if c not in (bl.PASSES, bl.SKIPS))
        yield [s.path, s.result, s.run.summary() + (f" ({counts})" if counts else ""), _suite_detail(s)]


def _suite_detail(s: SuiteResult) -> str:
    """What fails the suite first, then what the runner cannot do, what the series fixed, the baseline."""
    c = s.comparison
    assert c is not None
    parts = [f"{t.status}: {t.nodeid}" + (f" ({t.message})" if t.message else "") for t in c.failures[:10]]
    if len(c.failures) > 10:
        parts.append(f"... and {len(c.failures) - 10} more")
    for status, what in ((bl.PRE_EXISTING, "pre-existing (fail on the pristine release too)"),
                         (bl.NEEDS_GPU, "needs-gpu"), (bl.FLAKY, "flaky on the pristine release")):
        tests = c.of(status)
        if tests:
            parts.append(f"{len(tests)} {what}, e.g. {tests[0].nodeid}"
                         + (f": {tests[0].message}" if tests[0].message else ""))
    for t in c.of(bl.FIXED)[:5]:
        parts.append(f"fixed: {t.nodeid}" + (f" (tests of {', '.join(t.patches)})" if t.patches else ""))
    if s.run.count(Outcome.PASSED) == 0:
        parts.append("nothing passed")
    parts.append(_baseline_note(s))
    return "; ".join(p for p in parts if p)


def _baseline_note(s: SuiteResult) -> str:
    b = s.baseline
    if b is None:
        return ""
    if b.error:
        return f"no pristine baseline ({b.error}): every failure counts"
    how = "reused from the cache" if b.cached else "run now and cached"
    return f"pristine baseline {how} (key {b.key[:12]})"


def _footer(report: ProofReport) -> str:
    verdict = "OK" if report.ok else "NOT OK"
    secs = ", ".join(f"{k} {v:.0f} s" for k, v in report.seconds.items())
    runs = f"{report.jobs} side by side" if report.jobs > 1 else "one at a time"
    peak = f", largest run's peak memory {report.peak_rss_mb:.0f} MB" if report.peak_rss_mb else ""
    return (f"vLLM {report.vllm}: {verdict} ({report.runner} runner: {report.environment})"
            + (f"\ntime: {secs} (configurations {runs}{peak})" if secs else ""))


def render_table(report: ProofReport) -> str:
    items: list[object] = [table(f"patchset test: vLLM {report.vllm}",
                                 ["patch", "verdict", "without fix", "with fix", "why"], _rows(report))]
    if report.suites:
        items.append(table("suites (full series)", ["suite", "result", "tests", "detail"], _suite_rows(report)))
    out = [render(*items).rstrip("\n")]
    out += [f"suite {s.path}: {_baseline_note(s)}" for s in report.suites if s.baseline is not None]
    out += [f"warning: {w}" for w in report.warnings]
    out.append(_footer(report))
    return "\n".join(out) + "\n"


def node_doc(r: NodeResult) -> dict:
    out: dict = {"nodeid": r.nodeid, "outcome": r.outcome}
    if r.message:
        out["message"] = r.message
    return out


def config_run_doc(run: ConfigRun) -> dict:
    return {
        "config": run.label,
        "excluded": list(run.excluded),
        "selectors": list(run.selectors),
        "exit_code": run.exit_code, "crash": run.crash,
        **{str(o): run.count(o) for o in Outcome},
        "failing": run.failing,
        "needs_gpu": [{"nodeid": n, "reason": why} for n, why in run.needs_gpu],
        "summary": run.summary(),
        "tests": [node_doc(r) for r in run.results],
    }


def patch_verdict_doc(p: PatchVerdict) -> dict:
    return {"id": p.id, "verdict": p.verdict, "reason": p.reason,
            "without_fix": config_run_doc(p.without_fix) if p.without_fix else None,
            "with_fix": config_run_doc(p.with_fix) if p.with_fix else None}


def baseline_doc(b: Baseline) -> dict:
    out: dict = {"cached": b.cached, "key": b.key}
    if b.error:
        out["error"] = b.error
    return out


def comparison_doc(t: bl.TestComparison) -> dict:
    out: dict = {"nodeid": t.nodeid, "patched": list(t.patched), "pristine": list(t.pristine)}
    if t.message:
        out["message"] = t.message
    if t.status == bl.FIXED:
        out["patches"] = list(t.patches)
    return out


def suite_baseline_doc(s: SuiteResult) -> dict:
    """The fields of a suite's JSON that judge it against the pristine release."""
    c = s.comparison
    out: dict = {"result": s.result, "gpu": s.gpu,
                 "baseline": baseline_doc(s.baseline) if s.baseline is not None else None}
    if s.not_run:
        out["not_run"] = s.not_run
        out["needs_gpu"] = [{"nodeid": s.path, "reason": s.not_run}]
    if c is None:
        return {**out, "regressions": [], "pre_existing": [], "fixed": [], "flaky": [], "new": []}
    status = {t.nodeid: t.status for t in c.tests}
    out.update({
        "regressions": [comparison_doc(t) for t in c.of(bl.REGRESSION)],
        "pre_existing": [comparison_doc(t) for t in c.of(bl.PRE_EXISTING)],
        "fixed": [comparison_doc(t) for t in c.of(bl.FIXED)],
        "flaky": [comparison_doc(t) for t in c.of(bl.FLAKY)],
        "new": [comparison_doc(t) for t in c.of(bl.NEW)],
        "needs_gpu": [{"nodeid": t.nodeid, "reason": t.message} for t in c.of(bl.NEEDS_GPU)],
        # every test keeps its outcome and gains its class
        "tests": [{**node_doc(r), "class": status.get(r.nodeid, bl.PASSES)} for r in s.run.results],
    })
    return out


def suite_doc(s: SuiteResult) -> dict:
    out = {"path": s.path, "ok": s.ok, **{k: v for k, v in config_run_doc(s.run).items() if k != "selectors"}}
    return {**out, **suite_baseline_doc(s)}


def proof_doc(report: ProofReport) -> dict:
    return {"ok": report.ok, "vllm": report.vllm, "patches": [patch_verdict_doc(p) for p in report.patches],
            "suites": [suite_doc(s) for s in report.suites], "warnings": list(report.warnings)}


def render_json(report: ProofReport) -> str:
    return dump_json(proof_doc(report))


def _markdown_failures(report: ProofReport) -> list[str]:
    """Regressions lead: the tests that passed on the pristine release and fail with the series."""
    out = []
    for s in report.suites:
        for t in s.comparison.failures if s.comparison else []:
            why = "passes on the pristine release, fails with the series" if t.status == bl.REGRESSION \
                else "new with the series, and fails"
            out.append(f"- **{t.status}** `{t.nodeid}` ({why})" + (f": {t.message}" if t.message else ""))
    return ([f"**{len(out)} regression(s)** in the suites:", "", *out, ""] if out else [])


def _markdown_details(report: ProofReport) -> list[str]:
    out = []
    for s in report.suites:
        if s.comparison is None:
            continue
        for status, title in ((bl.PRE_EXISTING, "pre-existing: fail on the pristine release too"),
                              (bl.NEEDS_GPU, "needs-gpu"), (bl.FLAKY, "flaky on the pristine release"),
                              (bl.FIXED, "fixed by the series")):
            tests = s.comparison.of(status)
            if tests:
                out += ["", f"<details><summary><code>{s.path}</code>: {len(tests)} {title}</summary>", ""]
                out += [f"- `{t.nodeid}`" + (f": {t.message}" if t.message else "")
                        + (f" (tests of {', '.join(t.patches)})" if t.patches else "") for t in tests]
                out += ["", "</details>"]
    return out


def render_markdown(report: ProofReport) -> str:
    out = [f"### patchset test: vLLM {report.vllm} — {'✅ OK' if report.ok else '❌ NOT OK'}", ""]
    out += _markdown_failures(report)
    out.append(markdown_table(["patch", "verdict", "without fix", "with fix", "why"],
                              ([f"`{r[0]}`", f"{MARK.get(r[1], '✘')} {r[1]}", *r[2:]] for r in _rows(report))))
    if report.suites:
        out.append("")
        out.append(markdown_table(["suite (full series)", "result", "tests", "detail"],
                                  ([f"`{r[0]}`", *r[1:]] for r in _suite_rows(report))))
        out += _markdown_details(report)
    for w in report.warnings:
        out.append(f"\n> warning: {w}")
    out.append("")
    out.append(f"_{report.runner} runner: {report.environment}_")
    return "\n".join(out) + "\n"


def _patch_case(report: ProofReport, p: PatchVerdict) -> Case:
    suite = f"patchset.test.vllm-{report.vllm}"
    if p.verdict in (Verdict.UPSTREAM, Verdict.NOT_TARGETED) or (p.verdict == Verdict.UNPROVEN and not p.tests):
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
    if s.not_run:
        return Case(suite, s.path, skipped=f"needs-gpu: {s.not_run}")
    if s.ok:
        return Case(suite, s.path, detail=s.run.summary() + "\n" + _baseline_note(s))
    if s.comparison is not None:
        return Case(suite, s.path, failure=f"{len(s.comparison.failures)} regression(s): {s.run.summary()}",
                    detail="\n".join(f"{t.nodeid}: {t.status} {t.message}" for t in s.comparison.failures))
    bad = [r for r in s.run.results if r.outcome in (Outcome.FAILED, Outcome.ERROR)]
    return Case(suite, s.path, failure=s.run.summary(),
                detail="\n".join(f"{r.nodeid}: {r.outcome} {r.message}" for r in bad))


def _test_cases(report: ProofReport, s: SuiteResult) -> list[Case]:
    """A case per test the baseline says something about (the unremarkable ones stay in the suite's case)."""
    suite = f"patchset.test.vllm-{report.vllm}.suites.{s.path}"
    out = []
    for t in s.comparison.tests if s.comparison else []:
        said = f"{t.status}: {t.message}".rstrip(": ")
        if t.fails_suite:
            out.append(Case(suite, t.nodeid, failure=said, detail=f"with the series: {', '.join(t.patched)}; "
                                                                  f"pristine: {', '.join(t.pristine) or 'absent'}"))
        elif t.status in (bl.PRE_EXISTING, bl.NEEDS_GPU, bl.FLAKY):
            out.append(Case(suite, t.nodeid, skipped=said))
        elif t.status == bl.FIXED:
            out.append(Case(suite, t.nodeid, detail=said + (f" (tests of {', '.join(t.patches)})" if t.patches
                                                            else "")))
    return out


def render_junit(report: ProofReport) -> str:
    cases = [_patch_case(report, p) for p in report.patches] + [_suite_case(report, s) for s in report.suites]
    cases += [c for s in report.suites for c in _test_cases(report, s)]
    return junit(cases, name=f"patchset test vllm {report.vllm}", warnings=report.warnings)


# the --format choices on stdout; JUnit goes to the file --junit names (render_junit)
RENDERERS = {"table": render_table, "json": render_json, "markdown": render_markdown}


def github_annotations(report: ProofReport) -> list[str]:
    out = []
    for p in report.patches:
        if not p.ok:
            line = github_annotation("error", f"vLLM {report.vllm}: {p.id} is {p.verdict}: {p.reason}")
            if line:
                out.append(line)
    for s in report.suites:
        for t in s.comparison.failures if s.comparison else []:
            line = github_annotation("error", f"vLLM {report.vllm}: {t.status} in {s.path}: {t.nodeid}: {t.message}")
            if line:
                out.append(line)
    for w in report.warnings:
        line = github_annotation("warning", f"vLLM {report.vllm}: {w}")
        if line:
            out.append(line)
    return out
