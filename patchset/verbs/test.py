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
5. Verdicts, all from :func:`decide`. ``proven``: some test ran and passed
   with the fix, and the same node ran and failed (an assertion or exception
   inside the test) without it, and none fails with it. ``not-discriminating``:
   they all pass without the fix too (the test proves nothing). ``failing``:
   some fail with the fix. ``unproven``: no tests, or none that ran.
   ``needs-gpu``: on a run that had no accelerator, a test skipped or errored
   for lack of one (with the reason it gave); never counted as a pass. With
   an accelerator a CUDA error is a failure like any other.
   ``inconclusive``: a run crashed (timeout, pytest exit 2/3/4, killed, no
   readable JUnit report) or, without the fix, the tests could not run at all
   (collection or setup error, skipped, not collected): a crash is never proof.

Runners (venv, image) only run pytest for a configuration; see
:mod:`patchset.runners`.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Generic, TypeVar

from patchset.cache import Cache
from patchset.core.manifest import Manifest, Patch
from patchset.core.series import PatchResult, PatchStatus, ReleaseResult, evaluate_release, open_release
from patchset.errors import Finding, PatchsetError
from patchset.runners import (
    Outcome,
    Progress,
    RunConfig,
    Runner,
    RunOutcome,
)
from patchset.runners.image import ImageRunner
from patchset.runners.pytestrun import (
    ConfigRun,
    covers,
    crash_reason,
    last_error_line,
    minimal_selectors,
    prepare_test_tree,
    run_pytest,
    select,
    slug,
)
from patchset.runners.venv import VenvRunner
from patchset.sources.local import import_name
from patchset.verbs.proof import PatchVerdict, ProofOptions, ProofReport, SuiteResult, Verdict
from patchset.verbs.suites import SuiteJob, pristine_baseline, run_suite

SERIES = "series"
_T = TypeVar("_T")


Evaluate = Callable[..., Any]  # patchset.core.series.evaluate_release


# --- the test tree ---------------------------------------------------------------------------------------



def pristine_tests_root(source) -> Path:
    """The folder of a pristine tree that holds ``tests/`` (an unpacked sdist, a checkout, dir:PATH)."""
    root = getattr(source, "root", None)
    if root is None or not (Path(root) / "tests").is_dir():
        raise PatchsetError(f"{getattr(source, 'identity', source)} has no tests/ folder",
                            hint="upstream tests come from the sdist (--source pypi) or a source tree (dir:PATH)")
    return Path(root)


# --- selection ---------------------------------------------------------------------------------------------


# --- verdicts ------------------------------------------------------------------------------------------


def decide(patch_id: str, tests: Sequence[str], with_fix: ConfigRun | None,
           without_fix: ConfigRun | str | None) -> PatchVerdict:
    """The one place verdicts come from: what the runs with and without the fix mean for ``patch_id``.

    ``without_fix`` is the negative control's run, or why there could be none.
    """
    tests = tuple(tests)
    control = without_fix if isinstance(without_fix, ConfigRun) else None

    def verdict(word: Verdict, reason: str) -> PatchVerdict:
        return PatchVerdict(patch_id, word, reason, tests, with_fix, control)

    if not tests:
        return verdict(Verdict.UNPROVEN, "the manifest names no tests for it")
    assert with_fix is not None
    if with_fix.crash:
        return verdict(Verdict.INCONCLUSIVE, f"with the fix: {with_fix.crash}")
    failing = with_fix.failing
    if failing:
        return verdict(Verdict.FAILING, f"{len(failing)} fail with the fix: " + ", ".join(failing))
    gpu = with_fix.needs_gpu
    if gpu:
        return verdict(Verdict.NEEDS_GPU, "; ".join(f"{n}: {why}" for n, why in gpu))
    passed = [r.nodeid for r in with_fix.results if r.outcome == Outcome.PASSED]
    if not passed:
        reasons = sorted({r.message for r in with_fix.results if r.outcome == Outcome.SKIPPED})
        return verdict(Verdict.UNPROVEN, "none of its tests ran: skipped (" + "; ".join(reasons) + ")")
    if control is None:
        return verdict(Verdict.UNPROVEN, without_fix if isinstance(without_fix, str) else "no negative control was run")
    return verdict(*_negative_verdict(passed, control))


def _negative_verdict(passed: list[str], without_fix: ConfigRun) -> tuple[Verdict, str]:
    """What the negative control says about the tests that passed with the fix."""
    if without_fix.crash:
        return Verdict.INCONCLUSIVE, f"without the fix: {without_fix.crash} (a crashed run is no proof)"
    gpu_nodes = {n for n, _ in without_fix.needs_gpu}
    outcome = {n: without_fix.outcome_of(n) for n in passed}
    # Only a test that ran and failed inside the test proves the fix; an error is collection or setup.
    caught = [n for n in passed if outcome[n] == Outcome.FAILED and n not in gpu_nodes]
    if caught:
        return Verdict.PROVEN, f"{len(caught)} of {len(passed)} fail without the fix and pass with it"
    if without_fix.needs_gpu:
        return Verdict.NEEDS_GPU, "without the fix: " + "; ".join(f"{n}: {why}" for n, why in without_fix.needs_gpu)
    did_not_run = [n for n in passed if outcome[n] != Outcome.PASSED]
    if did_not_run:
        n = did_not_run[0]
        # pytest's message for a collection error is "collection failure": the exception line says why
        why = next((last_error_line(r.detail) or r.message for r in without_fix.results
                    if r.nodeid == n or covers(r.nodeid, n)), "")
        said = outcome[n] or "not collected"
        return Verdict.INCONCLUSIVE, (f"without the fix {len(did_not_run)} of {len(passed)} did not run "
                              f"({n}: {said}{': ' + why if why else ''}); only a test that runs and fails "
                              "without the fix proves it (import what the fix adds inside the test)")
    return (Verdict.NOT_DISCRIMINATING,
            f"all {len(passed)} that pass with the fix also pass without it: they prove nothing")


# --- the verb ------------------------------------------------------------------------------------------


def make_runner(image: str | None = None, gpus: str | None = None) -> Runner:
    """The image runner for ``image`` (Docker, ``gpus`` as ``docker --gpus``), else the venv runner (CPU)."""
    if image:
        return ImageRunner(image, gpus=gpus)

    return VenvRunner()


def configurations(manifest: Manifest, testable: list[Patch], suites: bool) -> int:
    """How many pytest runs a proof makes at least: the series, one per negative control, one per suite."""
    return 1 + len(testable) + (len(manifest.suites) if suites else 0)


def side_by_side(runner: Runner, asked: int | None, runs: int) -> int:
    """Configurations to run at once: ``asked`` (--jobs N), else (None, or 0 for --jobs auto) what the cores and
    the memory allow. Only a runner with ``jobs`` runs them so (the venv runner); elsewhere one process per
    configuration. Second looks at failures run alone whatever this says (RunConfig.alone)."""
    if not hasattr(runner, "jobs"):
        return 1
    if not asked:
        from patchset.runners.warm import default_jobs

        asked = default_jobs(runs)
    return max(1, asked)


def prove_release(manifest: Manifest, vllm: str, *, source: str = "pypi", image: str | None = None,
                  gpus: str | None = None, workdir: Path | None = None,
                  options: ProofOptions | None = None) -> ProofReport:
    """:func:`prove` on the release ``vllm`` names, with the runner and the pristine source (``pypi``,
    ``dir:PATH``) named; in ``workdir`` (kept), else in a temporary folder removed afterwards."""

    options = options or ProofOptions()
    version = manifest.target(vllm).version
    for pid in options.patch_ids:
        manifest.patch(pid)  # an unknown id is bad input before anything is fetched or built
    if gpus and not image:
        raise PatchsetError("--gpus needs --image: the venv runner runs on the CPU")
    runner = make_runner(image, gpus)
    options.progress(f"vLLM {version}: getting the pristine tree ({source}) ...")
    tree = open_release(manifest, source, version)

    def in_(folder: Path) -> ProofReport:
        return prove(manifest, version, runner, tree, workdir=folder, options=options)

    if workdir is not None:
        workdir = workdir.resolve()  # runs happen in the tree: a relative path would move
        workdir.mkdir(parents=True, exist_ok=True)
        return in_(workdir)
    scratch = Path(tempfile.mkdtemp(prefix=f"patchset-test-{version}-"))
    try:
        return in_(scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def prove(manifest: Manifest, version: str, runner: Runner, source, *, workdir: Path,
          options: ProofOptions | None = None, evaluate: Evaluate | None = None,
          cache: Cache | None = None) -> ProofReport:
    """Run each selected patch's tests with and without it, and the suites, on ``version``."""
    if evaluate is None:
        evaluate = evaluate_release
    options = options or ProofOptions()
    patch_ids, progress = options.patch_ids, options.progress
    version = manifest.target(version).version
    for pid in patch_ids:
        manifest.patch(pid)  # unknown ids are an error, not silently nothing
    selected = [p for p in manifest.patches if not patch_ids or p.id in patch_ids]
    t0 = time.monotonic()
    progress(f"evaluating the series on vLLM {version} ...")
    full = _series_that_applies(manifest, version, source, evaluate)
    status = {r.id: r for r in full.patches}
    package = import_name(manifest.pypi)
    package_paths = sorted(p for p in full.files if p.startswith(package + "/"))
    environment = runner.prepare(manifest.pypi, version, progress)
    testable = [p for p in selected if status[p.id].status == PatchStatus.APPLIES and p.tests]
    jobs = side_by_side(runner, options.jobs, configurations(manifest, testable, options.suites))
    if hasattr(runner, "jobs"):
        runner.jobs = jobs
    warm_up = getattr(runner, "warm_up", None)
    if warm_up is not None:  # the warm interpreter imports while the test tree is made
        warm_up(package)
    progress("preparing the test tree (upstream tests/ + the series' test hunks) ...")
    tree = prepare_test_tree(pristine_tests_root(source), full.files, workdir / "tree")
    session = _Session(manifest=manifest, version=version, source=source, evaluate=evaluate, full=full,
                       package_paths=package_paths, tree=tree, runner=runner, workdir=workdir, options=options,
                       seconds={"prepare": round(time.monotonic() - t0, 1)})

    verdicts, suite_results = _run_all(session, testable, cache, jobs)
    out = [_verdict(p, status[p.id], verdicts) for p in selected]
    session.seconds["total"] = round(time.monotonic() - t0, 1)
    warnings = [*full.warnings, *getattr(runner, "warnings", [])]
    peak = getattr(runner, "peak_rss_kb", 0) / 1024
    return ProofReport(version, runner.name, environment, out, suite_results, warnings, session.seconds,
                       round(peak, 1), jobs)



def _run_all(session: _Session, testable: list, cache: Cache | None, jobs: int) -> tuple[dict, list]:
    """Every configuration: one after another in this thread, or handed to a pool of ``jobs`` (the
    suites, the longest runs, first) and read in order; the runner is closed either way."""
    pool = ThreadPoolExecutor(jobs, thread_name_prefix="patchset-run") if jobs > 1 else None
    session = replace(session, pool=pool, jobs=jobs)
    with_suites = session.options.suites and bool(session.manifest.suites)
    try:
        if pool is None:  # one configuration after another, in this thread: the proofs, then the suites
            verdicts, _ = session.prove(testable, [])
            suite_results = [s.result() for s in _suites(session, cache)] if with_suites else []
        else:  # all handed to the pool first (the suites, the longest runs, first), then read in order
            suites = _suites(session, cache) if with_suites else []
            started = session.start(testable)
            verdicts = session.finish(testable, started)
            suite_results = [s.result() for s in suites]
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
        close = getattr(session.runner, "close", None)
        if close is not None:
            close()
    return verdicts, suite_results


def _series_that_applies(manifest: Manifest, version: str, source, evaluate: Evaluate) -> ReleaseResult:
    """The series evaluated on ``version``; a finding when a patch fails or is blocked (nothing to prove)."""
    full = evaluate(manifest, version, source)
    broken = [r for r in full.patches if r.status in (PatchStatus.FAILED, PatchStatus.BLOCKED)]
    if broken:
        raise Finding(f"the series does not apply to vLLM {version}: "
                      + ", ".join(f"{r.id} {r.status}" for r in broken),
                      hint=f"run patchset check --vllm {version}")
    return full


def _verdict(p: Patch, result: PatchResult, verdicts: dict[str, PatchVerdict]) -> PatchVerdict:
    """A patch's verdict: its proof where it ran, else what the series said of it (upstream, not targeted)."""
    if p.id in verdicts:
        return verdicts[p.id]
    if result.status in (PatchStatus.UPSTREAM, PatchStatus.NOT_TARGETED):
        return PatchVerdict(p.id, Verdict(result.status), result.evidence or result.status, p.tests)
    return decide(p.id, p.tests, None, None)


@dataclass
class _Ran:
    """One pytest run of a configuration, before it is split into the node ids each verdict needs."""

    outcome: RunOutcome
    not_found: dict[str, str]
    crash: str | None
    accelerator: bool

    def view(self, label: str, excluded: tuple[str, ...], selectors: Sequence[str]) -> ConfigRun:
        return ConfigRun(label, excluded, tuple(selectors), select(self.outcome, selectors, self.not_found),
                         self.outcome.exit_code, self.outcome.duration, self.crash, self.accelerator)


@dataclass(frozen=True)
class _Session:
    """What every configuration of one ``prove`` shares."""

    manifest: Manifest
    version: str
    source: object
    evaluate: Evaluate
    full: Any  # patchset.core.series.ReleaseResult of the whole series
    package_paths: list[str]
    tree: Path
    runner: Runner
    workdir: Path
    options: ProofOptions
    seconds: dict[str, float]  # by configuration label, filled in as they run
    pool: ThreadPoolExecutor | None = None  # runs side by side; None: one after another, in this thread
    jobs: int = 1  # how many side by side (the pool's size)

    @property
    def progress(self) -> Progress:
        return self.options.progress

    @property
    def timeout(self) -> float | None:
        return self.options.timeout

    def prove(self, testable: list[Patch], suite_paths: list[str]) -> tuple[dict[str, PatchVerdict],
                                                                           list[SuiteResult]]:
        wanted = [t for p in testable for t in p.tests] + suite_paths
        if not wanted:
            return {}, []
        series = self.run(SERIES, {p: self.full.files[p] for p in self.package_paths}, wanted)
        suites = [SuiteResult(path, series.view(SERIES, (), (path,))) for path in suite_paths]
        return self.decide_all(testable, series, {p.id: _Later(self.negative_control, p) for p in testable}), suites

    def start(self, testable: list[Patch]) -> tuple[Future[_Ran], dict[str, Future[ConfigRun | str]]] | None:
        """Every configuration of the proofs handed to the pool at once (it runs as many side by side as it
        has threads): the series, then each negative control. None when no patch has tests to run."""
        assert self.pool is not None
        if not testable:
            return None
        wanted = [t for p in testable for t in p.tests]
        series = self.pool.submit(self.run, SERIES, {p: self.full.files[p] for p in self.package_paths}, wanted)
        return series, {p.id: self.pool.submit(self.negative_control, p) for p in testable}

    def finish(self, testable: list[Patch], started: tuple[Future[_Ran], dict[str, Future[ConfigRun | str]]] | None
               ) -> dict[str, PatchVerdict]:
        """The verdicts of what :meth:`start` ran, decided in the manifest's order as the serial path does."""
        if started is None:
            return {}
        series, controls = started
        return self.decide_all(testable, series.result(), controls)

    def decide_all(self, testable: list[Patch], series: _Ran,
                   controls: Mapping[str, _Later | Future[ConfigRun | str]]) -> dict[str, PatchVerdict]:
        verdicts: dict[str, PatchVerdict] = {}
        why_no_gpu = getattr(self.runner, "needs_accelerator_reason", None)
        for p in testable:
            with_fix = series.view(SERIES, (), p.tests)
            v = decide(p.id, p.tests, with_fix, controls[p.id].result())
            if v.verdict == Verdict.NEEDS_GPU and why_no_gpu:
                v.reason += f" ({why_no_gpu})"
            verdicts[p.id] = v
            self.progress(f"{p.id}: {v.verdict} ({v.reason})")
        return verdicts

    def run(self, label: str, files: dict[str, bytes | None], selectors: Sequence[str]) -> _Ran:
        config = RunConfig(label, import_name(self.manifest.pypi), files, self.tree, minimal_selectors(selectors),
                           self.workdir / "runs" / slug(label), self.timeout, self.progress)
        outcome, not_found = run_pytest(self.runner, config, self.progress)
        self.seconds[label] = round(outcome.duration, 1)
        crash = crash_reason(outcome, config.selectors, not_found, self.timeout)
        if crash:
            self.progress(f"{label}: {crash}")
        return _Ran(outcome, not_found, crash, getattr(self.runner, "needs_accelerator_reason", "") is None)

    def negative_control(self, p: Patch) -> ConfigRun | str:
        """``p``'s tests on the series minus ``p`` and its dependants, or why that configuration does not exist."""
        excluded = tuple(x.id for x in self.manifest.patches
                         if x.id == p.id or x.id in self.manifest.dependants(p.id))
        label = f"without {p.id}"
        self.progress(f"{label}: evaluating the series minus {', '.join(excluded)} ...")
        ev = self.evaluate(self.manifest, self.version, self.source, exclude=frozenset(excluded))
        broken = [r for r in ev.patches if r.status in (PatchStatus.FAILED, PatchStatus.BLOCKED)]
        if broken:
            return (f"without {p.id} the rest of the series does not apply ("
                    + ", ".join(f"{r.id} {r.status}" for r in broken)
                    + f"): declare after: [{p.id}] on them")
        # Files only the excluded patches touch are absent from this evaluation: they are pristine here.
        files = {path: ev.files[path] if path in ev.files else self.full.pristine.get(path)
                 for path in self.package_paths}
        return self.run(label, files, p.tests).view(label, excluded, p.tests)


def _suites(session: _Session, cache: Cache | None) -> list[Future[SuiteResult] | _Done[SuiteResult]]:
    """The manifest's suites, each in a run of its own, judged against the pristine release (verbs.suites).
    With a pool, each suite is a task of it (started now); without, each is run here, in turn."""
    s, paths = session, session.package_paths
    job = SuiteJob(s.runner, s.manifest.pypi, s.version, import_name(s.manifest.pypi),
                   {p: s.full.files[p] for p in paths}, {p: s.full.pristine.get(p) for p in paths},
                   s.tree, pristine_tests_root(s.source), s.workdir, s.timeout, s.progress,
                   {p.id: p.tests for p in s.manifest.patches}, cache or Cache(), s.options.rebaseline, s.seconds,
                   shards=s.jobs if s.pool is not None else 1)
    if s.pool is None:
        return [_Done(run_suite(job, suite)) for suite in s.manifest.suites]
    # Each pristine result is a task of its own, handed to the pool before its suite: it runs beside the
    # suite's run with the series instead of after it, and a suite waits only on a task taken before it.
    runs = [not (suite.gpu and s.runner.needs_accelerator_reason) for suite in s.manifest.suites]
    pristine = [s.pool.submit(pristine_baseline, job, suite) if run else None
                for suite, run in zip(s.manifest.suites, runs, strict=True)]
    return [s.pool.submit(run_suite, job, suite, base) for suite, base in zip(s.manifest.suites, pristine, strict=True)]


class _Done(Generic[_T]):
    """A result already there, read like a Future's."""

    def __init__(self, value: _T) -> None:
        self.value = value

    def result(self) -> _T:
        return self.value


class _Later:
    """A negative control run when its verdict is decided (the serial path's order), read like a Future."""

    def __init__(self, fn: Callable[[Patch], ConfigRun | str], patch: Patch) -> None:
        self.fn, self.patch = fn, patch

    def result(self) -> ConfigRun | str:
        return self.fn(self.patch)


