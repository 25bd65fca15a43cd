"""`patchset test`: upstream tests as proof that each patch fixes something.

For a release V, every runner goes through the same steps, decided here:

1. Evaluate the series on V (the core engine, in memory). A series that does
   not apply cannot be tested: that is ``patchset check``'s finding.
2. The test tree: V's upstream ``tests/`` with the test hunks of the whole
   series applied. It is the same for every configuration, so that a patch's
   own tests (often new ones, added by its test hunks) exist without the fix.
3. Configuration "series": the package files as the full series leaves them.
   Every selected patch's tests run there. Each of the manifest's suites runs
   with the same files in a run of its own and is judged, test by test,
   against the pristine release (:mod:`patchset.verbs.suites`).
4. Configuration "without P", per patch P with tests: the package files as
   the series minus P (and minus every patch that comes ``after`` P) leaves
   them. Only P's tests run there: the negative control.
5. Verdicts. ``proven``: some test passes with the fix and fails without it,
   and none fails with it. ``not-discriminating``: they all pass without the
   fix too (the test proves nothing). ``failing``: some fail with the fix.
   ``unproven``: no tests, or none that ran. ``needs-gpu``: a test skipped or
   errored for lack of an accelerator (with the reason it gave); never
   counted as a pass.

Runners (venv, image) only run pytest for a configuration; see
:mod:`patchset.runners`.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.utils import canonicalize_name

from patchset.core.manifest import Manifest, Patch
from patchset.errors import PatchsetError
from patchset.runners import (
    ERROR,
    FAILED,
    PASSED,
    SKIPPED,
    NodeResult,
    Progress,
    RunConfig,
    Runner,
    RunOutcome,
    no_progress,
)
from patchset.verbs.baseline import Comparison, suite_json

PROVEN = "proven"
NOT_DISCRIMINATING = "not-discriminating"
FAILING = "failing"
UNPROVEN = "unproven"
NEEDS_GPU = "needs-gpu"
VERDICTS = (PROVEN, NOT_DISCRIMINATING, FAILING, UNPROVEN, NEEDS_GPU)
# Patches with nothing to prove on this release keep their status word from `check`.
UPSTREAM = "upstream"
NOT_TARGETED = "not-targeted"

SERIES = "series"
#: Upstream files that configure pytest for the tests/ tree (markers, asyncio mode).
PYTEST_CONFIG_FILES = ("pyproject.toml", "pytest.ini", "setup.cfg", "tox.ini", "conftest.py")

#: A skip reason that says the test needs an accelerator.
_GPU_SKIP = re.compile(
    r"\b(cuda|gpus?|accelerators?|rocm|xpu|tpu|nvidia|nccl|flash[-_ ]?attn|flashinfer|"
    r"(compute|device) capability|sm_?\d{2,3}|hopper|blackwell|ampere|multi-?gpu)\b", re.I)
#: An error or failure message that says the same (narrower: failures mention gpu_blocks and the like).
_GPU_ERROR = re.compile(
    r"(no nvidia driver|found no nvidia|cuda is not available|not compiled with cuda|no cuda gpus|"
    r"cuda driver|cudaerror|cuda error|cuda_home|nvcc|libcuda|libcudart|nccl error|"
    r"requires? (an? )?(gpu|cuda|accelerator)|no accelerator|torch\.accelerator\.\w+\(\) .*not available)",
    re.I)

Evaluate = Callable[..., object]  # patchset.core.series.evaluate_release
if TYPE_CHECKING:
    from patchset.cache import Cache
    from patchset.verbs.suites import Baseline


def gpu_reason(r: NodeResult) -> str | None:
    """The reason a result says it needs an accelerator, or None."""
    if r.outcome == SKIPPED and _GPU_SKIP.search(r.message):
        return r.message
    if r.outcome in (ERROR, FAILED):
        for text in (r.message, _last_error_line(r.detail)):
            if text and _GPU_ERROR.search(text):
                return text
    return None


@dataclass
class ConfigRun:
    """What one configuration said about some node ids (a patch's tests, a suite)."""

    label: str
    excluded: tuple[str, ...]
    selectors: tuple[str, ...]
    results: list[NodeResult]
    exit_code: int = 0
    duration: float = 0.0

    def count(self, outcome: str) -> int:
        return sum(1 for r in self.results if r.outcome == outcome)

    @property
    def failing(self) -> list[str]:
        return [r.nodeid for r in self.results if r.outcome in (FAILED, ERROR) and not gpu_reason(r)]

    @property
    def needs_gpu(self) -> list[tuple[str, str]]:
        return [(r.nodeid, reason) for r in self.results if (reason := gpu_reason(r))]

    @property
    def needs_gpu_errors(self) -> list[str]:
        """Tests that errored or failed for lack of an accelerator (skips are upstream's own choice)."""
        return [n for n, _ in self.needs_gpu if self.outcome_of(n) in (FAILED, ERROR)]

    def outcome_of(self, nodeid: str) -> str | None:
        exact = next((r.outcome for r in self.results if r.nodeid == nodeid), None)
        if exact is None and any(r.outcome == ERROR and covers(r.nodeid, nodeid) for r in self.results):
            return ERROR  # its file failed to import: the test could not even be collected
        return exact

    def summary(self) -> str:
        parts = [f"{self.count(o)} {o}" for o in (PASSED, FAILED, ERROR, SKIPPED) if self.count(o)]
        if self.needs_gpu:
            parts.append(f"{len(self.needs_gpu)} need a GPU")
        return ", ".join(parts) or "nothing ran"

    def to_json(self) -> dict:
        return {
            "config": self.label,
            "excluded": list(self.excluded),
            "selectors": list(self.selectors),
            "passed": self.count(PASSED), "failed": self.count(FAILED), "error": self.count(ERROR),
            "skipped": self.count(SKIPPED),
            "failing": self.failing,
            "needs_gpu": [{"nodeid": n, "reason": why} for n, why in self.needs_gpu],
            "summary": self.summary(),
            "tests": [r.to_json() for r in self.results],
        }


@dataclass
class PatchVerdict:
    id: str
    verdict: str
    reason: str
    tests: tuple[str, ...] = ()
    with_fix: ConfigRun | None = None
    without_fix: ConfigRun | None = None

    @property
    def ok(self) -> bool:
        if self.verdict in (PROVEN, UPSTREAM, NOT_TARGETED):
            return True
        return self.verdict == UNPROVEN and not self.tests  # nothing claimed, nothing to prove

    def to_json(self) -> dict:
        return {"id": self.id, "verdict": self.verdict,
                "without_fix": self.without_fix.to_json() if self.without_fix else None,
                "with_fix": self.with_fix.to_json() if self.with_fix else None}


@dataclass
class SuiteResult:
    path: str
    run: ConfigRun
    comparison: Comparison | None = None  # test by test against the pristine release (patchset.verbs.baseline)
    baseline: Baseline | None = None  # where the pristine results came from
    gpu: bool = False  # the manifest marks it gpu: true
    not_run: str = ""  # a gpu: true suite on a runner without an accelerator: why it did not run

    @property
    def result(self) -> str:
        return NEEDS_GPU if self.not_run else "pass" if self.ok else "FAIL"

    @property
    def ok(self) -> bool:
        if self.not_run:
            return True
        if self.comparison is not None:  # what the series broke, not what the runner cannot do
            return self.comparison.ok and self.run.count(PASSED) > 0
        return not self.run.failing and not self.run.needs_gpu_errors and self.run.count(PASSED) > 0

    def to_json(self) -> dict:
        out = {"path": self.path, "ok": self.ok, **{k: v for k, v in self.run.to_json().items()
                                                     if k not in ("selectors",)}}
        return {**out, **suite_json(self)}


@dataclass
class ProofReport:
    vllm: str
    runner: str
    environment: str
    patches: list[PatchVerdict]
    suites: list[SuiteResult]
    warnings: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(p.ok for p in self.patches) and all(s.ok for s in self.suites)

    def to_json(self) -> dict:
        return {"ok": self.ok, "vllm": self.vllm, "patches": [p.to_json() for p in self.patches],
                "suites": [s.to_json() for s in self.suites]}


# --- the test tree ---------------------------------------------------------------------------------------


def import_name(project: str) -> str:
    return canonicalize_name(project).replace("-", "_")


def pristine_tests_root(source) -> Path:
    """The folder of a pristine tree that holds ``tests/`` (an unpacked sdist, a checkout, dir:PATH)."""
    root = getattr(source, "root", None)
    if root is None or not (Path(root) / "tests").is_dir():
        raise PatchsetError(f"{getattr(source, 'identity', source)} has no tests/ folder",
                            hint="upstream tests come from the sdist (--source pypi) or a source tree (dir:PATH)")
    return Path(root)


def prepare_test_tree(pristine: Path, files: dict[str, bytes | None], dest: Path) -> Path:
    """``dest``: pristine ``tests/`` and pytest config, with every ``tests/...`` file of ``files`` written in."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(pristine / "tests", dest / "tests", symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in PYTEST_CONFIG_FILES:
        if (pristine / name).is_file():
            shutil.copy2(pristine / name, dest / name)
    for path, content in files.items():
        if not path.startswith("tests/"):
            continue
        target = dest / path
        if content is None:
            target.unlink(missing_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
    return dest


# --- selection ---------------------------------------------------------------------------------------------


def normalise_selector(sel: str) -> str:
    sel = sel.strip()
    while sel.startswith("./"):
        sel = sel[2:]
    return sel.rstrip("/") if "::" not in sel else sel


def covers(selector: str, nodeid: str) -> bool:
    """Whether running ``selector`` runs ``nodeid`` (a folder, a file, a test, a parametrised test)."""
    s = normalise_selector(selector)
    return nodeid == s or nodeid.startswith((s + "[", s + "::", s + "/"))


def minimal_selectors(selectors: Sequence[str]) -> tuple[str, ...]:
    """Drop selectors another one already runs (pytest would run such tests twice)."""
    out: list[str] = []
    norm = [normalise_selector(s) for s in selectors]
    for i, s in enumerate(norm):
        if s in out:
            continue
        if any(j != i and t != s and covers(t, s) for j, t in enumerate(norm)):
            continue
        out.append(s)
    return tuple(out)


def select(outcome: RunOutcome, selectors: Sequence[str], not_found: dict[str, str]) -> list[NodeResult]:
    """The results of the tests ``selectors`` name, with an error for each selector that ran nothing."""
    out: dict[str, NodeResult] = {}
    for sel in selectors:
        s = normalise_selector(sel)
        hits = [r for nid, r in outcome.results.items() if covers(s, nid)]
        # a file that failed to import is reported under its path; it "covers" the selector the other way
        hits += [r for nid, r in outcome.results.items() if r.outcome == ERROR and covers(nid, s) and nid != s]
        if not hits:
            if s in not_found:
                why = f"not collected: {not_found[s]}"
            elif outcome.exit_code in (0, 1, 5):
                why = "not collected: no test matches this node id"
            else:
                why = f"pytest exited with code {outcome.exit_code}: {_last_output_line(outcome.output)}"
            hits = [NodeResult(s, ERROR, why)]
        for r in hits:
            out.setdefault(r.nodeid, r)
    return list(out.values())


# --- verdicts ------------------------------------------------------------------------------------------


def decide(patch_id: str, tests: Sequence[str], with_fix: ConfigRun | None,
           without_fix: ConfigRun | None) -> PatchVerdict:
    tests = tuple(tests)
    if not tests:
        return PatchVerdict(patch_id, UNPROVEN, "the manifest names no tests for it", tests, with_fix, without_fix)
    assert with_fix is not None
    failing = with_fix.failing
    if failing:
        return PatchVerdict(patch_id, FAILING, f"{len(failing)} fail with the fix: " + ", ".join(failing),
                            tests, with_fix, without_fix)
    gpu = with_fix.needs_gpu
    if gpu:
        return PatchVerdict(patch_id, NEEDS_GPU, "; ".join(f"{n}: {why}" for n, why in gpu), tests, with_fix,
                            without_fix)
    passed = [r.nodeid for r in with_fix.results if r.outcome == PASSED]
    if not passed:
        reasons = sorted({r.message for r in with_fix.results if r.outcome == SKIPPED})
        return PatchVerdict(patch_id, UNPROVEN, "none of its tests ran: skipped (" + "; ".join(reasons) + ")",
                            tests, with_fix, without_fix)
    if without_fix is None:
        return PatchVerdict(patch_id, UNPROVEN, "no negative control was run", tests, with_fix, without_fix)
    caught = [n for n in passed if without_fix.outcome_of(n) in (FAILED, ERROR)
              and not any(m == n for m, _ in without_fix.needs_gpu)]
    if caught:
        return PatchVerdict(patch_id, PROVEN,
                            f"{len(caught)} of {len(passed)} fail without the fix and pass with it", tests,
                            with_fix, without_fix)
    gpu = without_fix.needs_gpu
    if gpu:
        return PatchVerdict(patch_id, NEEDS_GPU, "without the fix: " + "; ".join(f"{n}: {why}" for n, why in gpu),
                            tests, with_fix, without_fix)
    return PatchVerdict(patch_id, NOT_DISCRIMINATING,
                        f"all {len(passed)} that pass with the fix also pass without it: they prove nothing",
                        tests, with_fix, without_fix)


# --- the verb ------------------------------------------------------------------------------------------


def prove(manifest: Manifest, version: str, runner: Runner, source, *, workdir: Path,
          patch_ids: Sequence[str] = (), suites: bool = True, timeout: float | None = None,
          progress: Progress = no_progress, evaluate: Evaluate | None = None, cache: Cache | None = None,
          rebaseline: bool = False) -> ProofReport:
    """Run each selected patch's tests with and without it, and the suites, on ``version``."""
    import time

    if evaluate is None:
        from patchset.core.series import evaluate_release as evaluate
    version = manifest.target(version).version
    for pid in patch_ids:
        manifest.patch(pid)  # unknown ids are an error, not silently nothing
    selected = [p for p in manifest.patches if not patch_ids or p.id in patch_ids]
    t0 = time.monotonic()
    seconds: dict[str, float] = {}

    progress(f"evaluating the series on vLLM {version} ...")
    full = evaluate(manifest, version, source)
    status = {r.id: r for r in full.patches}
    broken = [r for r in full.patches if r.status in ("failed", "blocked")]
    if broken:
        raise PatchsetError(f"the series does not apply to vLLM {version}: "
                            + ", ".join(f"{r.id} {r.status}" for r in broken),
                            hint=f"run patchset check --vllm {version}")
    package = import_name(manifest.pypi)
    package_paths = sorted(p for p in full.files if p.startswith(package + "/"))
    full_files = {p: full.files[p] for p in package_paths}

    progress("preparing the test tree (upstream tests/ + the series' test hunks) ...")
    tree = prepare_test_tree(pristine_tests_root(source), full.files, workdir / "tree")

    environment = runner.prepare(manifest.pypi, version, progress)
    seconds["prepare"] = round(time.monotonic() - t0, 1)

    testable = [p for p in selected if status[p.id].status == "applies" and p.tests]
    wanted = [t for p in testable for t in p.tests]
    verdicts: dict[str, PatchVerdict] = {}
    suite_results: list[SuiteResult] = []
    if wanted:
        series_run, not_found = _run(runner, RunConfig(
            SERIES, package, full_files, tree, minimal_selectors(wanted), workdir / "runs" / SERIES,
            timeout, progress), progress)
        seconds[SERIES] = round(series_run.duration, 1)
        for p in testable:
            with_fix = ConfigRun(SERIES, (), p.tests, select(series_run, p.tests, not_found), series_run.exit_code,
                                 series_run.duration)
            without_fix = _negative_control(manifest, version, source, evaluate, p, full, package_paths, tree,
                                            runner, workdir, timeout, progress, seconds)
            if isinstance(without_fix, str):
                verdicts[p.id] = PatchVerdict(p.id, UNPROVEN, without_fix, p.tests, with_fix, None)
            else:
                verdicts[p.id] = decide(p.id, p.tests, with_fix, without_fix)
            why_no_gpu = getattr(runner, "needs_accelerator_reason", None)
            if verdicts[p.id].verdict == NEEDS_GPU and why_no_gpu:
                verdicts[p.id].reason += f" ({why_no_gpu})"
            progress(f"{p.id}: {verdicts[p.id].verdict} ({verdicts[p.id].reason})")

    if suites and manifest.suites:
        suite_results = _suites(manifest, version, runner, source, full, package_paths, tree, workdir, timeout,
                                progress, cache, rebaseline, seconds)
    out: list[PatchVerdict] = []
    for p in selected:
        st = status[p.id].status
        if p.id in verdicts:
            out.append(verdicts[p.id])
        elif st in (UPSTREAM, NOT_TARGETED):
            out.append(PatchVerdict(p.id, st, status[p.id].evidence or st, p.tests))
        else:
            out.append(decide(p.id, p.tests, None, None))
    seconds["total"] = round(time.monotonic() - t0, 1)
    return ProofReport(version, runner.name, environment, out, suite_results, list(full.warnings), seconds)


def _suites(manifest: Manifest, version: str, runner: Runner, source, full, package_paths: list[str], tree: Path,
            workdir: Path, timeout: float | None, progress: Progress, cache: Cache | None, rebaseline: bool,
            seconds: dict) -> list[SuiteResult]:
    """The manifest's suites, each judged against the pristine release (patchset.verbs.suites)."""
    from patchset.cache import Cache
    from patchset.verbs.suites import SuiteJob, run_suite

    job = SuiteJob(runner, manifest.pypi, version, import_name(manifest.pypi),
                   {p: full.files[p] for p in package_paths}, {p: full.pristine.get(p) for p in package_paths},
                   tree, pristine_tests_root(source), workdir, timeout, progress,
                   {p.id: p.tests for p in manifest.patches}, cache or Cache(), rebaseline, seconds)
    return [run_suite(job, s) for s in manifest.suites]


def _negative_control(manifest: Manifest, version: str, source, evaluate: Evaluate, p: Patch, full,
                      package_paths: list[str], tree: Path, runner: Runner, workdir: Path,
                      timeout: float | None, progress: Progress, seconds: dict) -> ConfigRun | str:
    excluded = tuple(x.id for x in manifest.patches if x.id == p.id or x.id in manifest.dependants(p.id))
    label = f"without {p.id}"
    progress(f"{label}: evaluating the series minus {', '.join(excluded)} ...")
    ev = evaluate(manifest, version, source, exclude=frozenset(excluded))
    broken = [r for r in ev.patches if r.status in ("failed", "blocked")]
    if broken:
        return (f"without {p.id} the rest of the series does not apply ("
                + ", ".join(f"{r.id} {r.status}" for r in broken)
                + f"): declare after: [{p.id}] on them")
    # Files only the excluded patches touch are absent from this evaluation: they are pristine here.
    files = {path: ev.files[path] if path in ev.files else full.pristine.get(path) for path in package_paths}
    run, not_found = _run(runner, RunConfig(label, import_name(manifest.pypi), files, tree,
                                            minimal_selectors(p.tests), workdir / "runs" / _slug(label),
                                            timeout, progress), progress)
    seconds[label] = round(run.duration, 1)
    return ConfigRun(label, excluded, p.tests, select(run, p.tests, not_found), run.exit_code, run.duration)


_NOT_FOUND = re.compile(r"ERROR: (?:file or directory )?not found: (.+?)\s*$", re.M)


def _run(runner: Runner, config: RunConfig, progress: Progress) -> tuple[RunOutcome, dict[str, str]]:
    """Run a configuration; if pytest refuses unknown node ids (it then runs nothing), run the others."""
    progress(f"{config.label}: running {len(config.selectors)} selector(s) with the {runner.name} runner ...")
    outcome = runner.run(config)
    not_found: dict[str, str] = {}
    if outcome.exit_code == 4:
        for m in _NOT_FOUND.finditer(outcome.output):
            said = m.group(1)
            for sel in config.selectors:
                if said == sel or said.endswith("/" + sel) or said.endswith(sel) and said[:-len(sel)].endswith("/"):
                    not_found[sel] = f"pytest: not found: {sel}"
        rest = tuple(s for s in config.selectors if s not in not_found)
        if not_found and rest:
            outcome = runner.run(replace(config, selectors=rest, workdir=config.workdir.with_name(
                config.workdir.name + "-retry")))
    progress(f"{config.label}: pytest exit {outcome.exit_code} in {outcome.duration:.0f} s "
             f"({_counts(outcome.results)})")
    return outcome, not_found


def _counts(results: dict[str, NodeResult]) -> str:
    c: dict[str, int] = {}
    for r in results.values():
        c[r.outcome] = c.get(r.outcome, 0) + 1
    return ", ".join(f"{n} {o}" for o, n in c.items()) or "no results"


def _slug(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9._-]+", "-", text).strip("-")


def _last_output_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no output"


def _last_error_line(text: str) -> str:
    for line in reversed(text.splitlines()):
        if line.startswith("E   "):
            return line[4:].strip()
    return ""
