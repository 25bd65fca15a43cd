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

import re
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.utils import canonicalize_name

from patchset.core.manifest import Manifest, Patch
from patchset.core.series import PatchStatus
from patchset.core.words import Word
from patchset.errors import Finding, PatchsetError
from patchset.runners import (
    NodeResult,
    Outcome,
    Progress,
    RunConfig,
    Runner,
    RunOutcome,
    no_progress,
)
from patchset.verbs.baseline import Comparison


class Verdict(Word):
    """What a patch's tests prove on a release (decided by :func:`decide`)."""

    PROVEN = "proven"
    NOT_DISCRIMINATING = "not-discriminating"
    FAILING = "failing"
    UNPROVEN = "unproven"
    NEEDS_GPU = "needs-gpu"
    INCONCLUSIVE = "inconclusive"
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

Evaluate = Callable[..., Any]  # patchset.core.series.evaluate_release
if TYPE_CHECKING:
    from patchset.cache import Cache
    from patchset.verbs.suites import Baseline


def gpu_reason(r: NodeResult, accelerator: bool = False) -> str | None:
    """The reason a result says it needs an accelerator, or None.

    Always None on a run that had an accelerator: there a CUDA error is the
    test's own failure, and a skip is upstream's choice, not a missing device.
    """
    if accelerator:
        return None
    if r.outcome == Outcome.SKIPPED and _GPU_SKIP.search(r.message):
        return r.message
    if r.outcome in (Outcome.ERROR, Outcome.FAILED):
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
    crash: str | None = None  # why the run cannot be read as test outcomes (timeout, pytest exit 2/3/4, no report)
    accelerator: bool = False  # the run had an accelerator (GPU runner given --gpus)

    def count(self, outcome: Outcome) -> int:
        return sum(1 for r in self.results if r.outcome == outcome)

    @property
    def failing(self) -> list[str]:
        return [r.nodeid for r in self.results
                if r.outcome in (Outcome.FAILED, Outcome.ERROR) and not gpu_reason(r, self.accelerator)]

    @property
    def needs_gpu(self) -> list[tuple[str, str]]:
        return [(r.nodeid, reason) for r in self.results if (reason := gpu_reason(r, self.accelerator))]

    @property
    def needs_gpu_errors(self) -> list[str]:
        """Tests that errored or failed for lack of an accelerator (skips are upstream's own choice)."""
        return [n for n, _ in self.needs_gpu if self.outcome_of(n) in (Outcome.FAILED, Outcome.ERROR)]

    def outcome_of(self, nodeid: str) -> Outcome | None:
        exact = next((r.outcome for r in self.results if r.nodeid == nodeid), None)
        if exact is None and any(r.outcome == Outcome.ERROR and covers(r.nodeid, nodeid) for r in self.results):
            return Outcome.ERROR  # its file failed to import: the test could not even be collected
        return exact

    def summary(self) -> str:
        parts = [f"{self.count(o)} {o}" for o in Outcome if self.count(o)]
        if self.crash:
            parts.insert(0, f"crashed (pytest exit {self.exit_code})")
        if self.needs_gpu:
            parts.append(f"{len(self.needs_gpu)} need a GPU")
        return ", ".join(parts) or "nothing ran"


@dataclass
class PatchVerdict:
    """Whether a patch's own tests prove it, with the runs with and without the fix."""

    id: str
    verdict: Verdict
    reason: str
    tests: tuple[str, ...] = ()
    with_fix: ConfigRun | None = None
    without_fix: ConfigRun | None = None

    @property
    def ok(self) -> bool:
        if self.verdict in (Verdict.PROVEN, Verdict.UPSTREAM, Verdict.NOT_TARGETED):
            return True
        return self.verdict == Verdict.UNPROVEN and not self.tests  # nothing claimed, nothing to prove


@dataclass
class SuiteResult:
    """A whole upstream suite on the patched release, compared test by test with the pristine one."""

    path: str
    run: ConfigRun
    comparison: Comparison | None = None  # test by test against the pristine release (patchset.verbs.baseline)
    baseline: Baseline | None = None  # where the pristine results came from
    gpu: bool = False  # the manifest marks it gpu: true
    not_run: str = ""  # a gpu: true suite on a runner without an accelerator: why it did not run

    @property
    def result(self) -> str:
        return Verdict.NEEDS_GPU if self.not_run else "pass" if self.ok else "FAIL"

    @property
    def ok(self) -> bool:
        if self.not_run:
            return True
        if self.run.crash:
            return False
        if self.comparison is not None:  # what the series broke, not what the runner cannot do
            return self.comparison.ok and self.run.count(Outcome.PASSED) > 0
        return not self.run.failing and not self.run.needs_gpu_errors and self.run.count(Outcome.PASSED) > 0


@dataclass
class ProofReport:
    """Every patch's proof and every suite's comparison on one release."""

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


@dataclass(frozen=True)
class ProofOptions:
    """What one ``patchset test`` proves and how: the choices its caller makes, in one value."""

    patch_ids: tuple[str, ...] = ()  # prove only these patches (default: every patch)
    suites: bool = True  # run the manifest's suites too
    timeout: float | None = None  # the limit for each pytest run, in seconds
    rebaseline: bool = False  # run the suites on the pristine release again instead of using the cache
    progress: Progress = no_progress


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
        hits += [r for nid, r in outcome.results.items() if r.outcome == Outcome.ERROR and covers(nid, s) and nid != s]
        if not hits:
            if s in not_found:
                why = f"not collected: {not_found[s]}"
            elif outcome.exit_code in (0, 1, 5):
                why = "not collected: no test matches this node id"
            else:
                why = f"pytest exited with code {outcome.exit_code}: {_last_output_line(outcome.output)}"
            hits = [NodeResult(s, Outcome.ERROR, why)]
        for r in hits:
            out.setdefault(r.nodeid, r)
    return list(out.values())


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
        why = next((_last_error_line(r.detail) or r.message for r in without_fix.results
                    if r.nodeid == n or covers(r.nodeid, n)), "")
        said = outcome[n] or "not collected"
        return Verdict.INCONCLUSIVE, (f"without the fix {len(did_not_run)} of {len(passed)} did not run "
                              f"({n}: {said}{': ' + why if why else ''}); only a test that runs and fails "
                              "without the fix proves it (import what the fix adds inside the test)")
    return (Verdict.NOT_DISCRIMINATING,
            f"all {len(passed)} that pass with the fix also pass without it: they prove nothing")


#: pytest's exit codes that mean the run did not end normally (0 passed, 1 some failed, 5 nothing collected).
_EXIT_MEANING = {2: "interrupted (e.g. an error during collection)", 3: "internal error",
                 4: "usage error, or a named test in a file that could not be collected"}


def crash_reason(outcome: RunOutcome, selectors: Sequence[str], not_found: Mapping[str, str],
                 timeout: float | None = None) -> str | None:
    """Why a run cannot be read as test outcomes, or None when it can."""
    code = outcome.exit_code
    if code == 4 and not_found and set(not_found) >= set(selectors):
        return None  # pytest refused only unknown node ids: each is reported as not collected
    last = _crash_line(outcome.output)
    if code == -1:
        limit = f" after {timeout:.0f} s" if timeout else ""
        return f"pytest timed out{limit} and was killed (exit -1): {last}"
    if code in (0, 1, 5) and outcome.report_problem is None:
        return None
    if code < 0 or code > 128:
        meaning = f" (killed by signal {-code if code < 0 else code - 128})"
    elif code in (0, 1, 5):
        meaning = ""
    else:
        meaning = f" ({_EXIT_MEANING.get(code, 'abnormal exit')})"
    problem = f"; {outcome.report_problem}" if outcome.report_problem else ""
    return f"pytest exit {code}{meaning}{problem}: {last}"


# --- the verb ------------------------------------------------------------------------------------------


def make_runner(image: str | None = None, gpus: str | None = None) -> Runner:
    """The image runner for ``image`` (Docker, ``gpus`` as ``docker --gpus``), else the venv runner (CPU)."""
    if image:
        from patchset.runners.image import ImageRunner  # Docker's client: imported only for the image runner

        return ImageRunner(image, gpus=gpus)
    from patchset.runners.venv import VenvRunner

    return VenvRunner()


def prove_release(manifest: Manifest, vllm: str, *, source: str = "pypi", image: str | None = None,
                  gpus: str | None = None, workdir: Path | None = None,
                  options: ProofOptions | None = None) -> ProofReport:
    """:func:`prove` on the release ``vllm`` names, with the runner and the pristine source (``pypi``,
    ``dir:PATH``) named; in ``workdir`` (kept), else in a temporary folder removed afterwards."""
    from patchset.sources import open_source

    options = options or ProofOptions()
    version = manifest.target(vllm).version
    for pid in options.patch_ids:
        manifest.patch(pid)  # an unknown id is bad input before anything is fetched or built
    if gpus and not image:
        raise PatchsetError("--gpus needs --image: the venv runner runs on the CPU")
    runner = make_runner(image, gpus)
    options.progress(f"vLLM {version}: getting the pristine tree ({source}) ...")
    tree = open_source(source, version, project=manifest.pypi, tag=manifest.tag)

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
        from patchset.core.series import evaluate_release

        evaluate = evaluate_release
    options = options or ProofOptions()
    patch_ids, progress = options.patch_ids, options.progress
    version = manifest.target(version).version
    for pid in patch_ids:
        manifest.patch(pid)  # unknown ids are an error, not silently nothing
    selected = [p for p in manifest.patches if not patch_ids or p.id in patch_ids]
    t0 = time.monotonic()
    progress(f"evaluating the series on vLLM {version} ...")
    full = evaluate(manifest, version, source)
    status = {r.id: r for r in full.patches}
    broken = [r for r in full.patches if r.status in (PatchStatus.FAILED, PatchStatus.BLOCKED)]
    if broken:
        raise Finding(f"the series does not apply to vLLM {version}: "
                      + ", ".join(f"{r.id} {r.status}" for r in broken),
                      hint=f"run patchset check --vllm {version}")
    package = import_name(manifest.pypi)
    package_paths = sorted(p for p in full.files if p.startswith(package + "/"))
    progress("preparing the test tree (upstream tests/ + the series' test hunks) ...")
    tree = prepare_test_tree(pristine_tests_root(source), full.files, workdir / "tree")
    environment = runner.prepare(manifest.pypi, version, progress)
    session = _Session(manifest=manifest, version=version, source=source, evaluate=evaluate, full=full,
                       package_paths=package_paths, tree=tree, runner=runner, workdir=workdir, options=options,
                       seconds={"prepare": round(time.monotonic() - t0, 1)})

    testable = [p for p in selected if status[p.id].status == PatchStatus.APPLIES and p.tests]
    verdicts, _ = session.prove(testable, [])
    suite_results: list[SuiteResult] = []
    if options.suites and manifest.suites:
        suite_results = _suites(session, cache)
    out: list[PatchVerdict] = []
    for p in selected:
        st = status[p.id].status
        if p.id in verdicts:
            out.append(verdicts[p.id])
        elif st in (PatchStatus.UPSTREAM, PatchStatus.NOT_TARGETED):
            out.append(PatchVerdict(p.id, Verdict(st), status[p.id].evidence or st, p.tests))
        else:
            out.append(decide(p.id, p.tests, None, None))
    session.seconds["total"] = round(time.monotonic() - t0, 1)
    return ProofReport(version, runner.name, environment, out, suite_results, list(full.warnings), session.seconds)


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
        verdicts: dict[str, PatchVerdict] = {}
        why_no_gpu = getattr(self.runner, "needs_accelerator_reason", None)
        for p in testable:
            with_fix = series.view(SERIES, (), p.tests)
            v = decide(p.id, p.tests, with_fix, self.negative_control(p))
            if v.verdict == Verdict.NEEDS_GPU and why_no_gpu:
                v.reason += f" ({why_no_gpu})"
            verdicts[p.id] = v
            self.progress(f"{p.id}: {v.verdict} ({v.reason})")
        return verdicts, suites

    def run(self, label: str, files: dict[str, bytes | None], selectors: Sequence[str]) -> _Ran:
        config = RunConfig(label, import_name(self.manifest.pypi), files, self.tree, minimal_selectors(selectors),
                           self.workdir / "runs" / _slug(label), self.timeout, self.progress)
        outcome, not_found = _run(self.runner, config, self.progress)
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


def _suites(session: _Session, cache: Cache | None) -> list[SuiteResult]:
    """The manifest's suites, each in a run of its own, judged against the pristine release (verbs.suites)."""
    from patchset.cache import Cache
    from patchset.verbs.suites import SuiteJob, run_suite

    s, paths = session, session.package_paths
    job = SuiteJob(s.runner, s.manifest.pypi, s.version, import_name(s.manifest.pypi),
                   {p: s.full.files[p] for p in paths}, {p: s.full.pristine.get(p) for p in paths},
                   s.tree, pristine_tests_root(s.source), s.workdir, s.timeout, s.progress,
                   {p.id: p.tests for p in s.manifest.patches}, cache or Cache(), s.options.rebaseline, s.seconds)
    return [run_suite(job, suite) for suite in s.manifest.suites]


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


def _crash_line(text: str) -> str:
    """The line that says why pytest died: faulthandler's, else the last one."""
    fatal = re.search(r"^Fatal Python error: .*$", text, re.M)
    return fatal.group(0)[:300] if fatal else _last_output_line(text)


def _last_error_line(text: str) -> str:
    for line in reversed(text.splitlines()):
        if line.startswith("E   "):
            return line[4:].strip()
    return ""
