"""What ``patchset test`` finds: each patch's verdict, each suite's comparison, the report of a release."""

from __future__ import annotations

from dataclasses import dataclass, field

from patchset.core.words import Word
from patchset.runners import Outcome, Progress, no_progress
from patchset.runners.pytestrun import ConfigRun
from patchset.verbs.baseline import Baseline, Comparison


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
    peak_rss_mb: float = 0.0  # the largest single run's peak memory, where the runner measures it
    jobs: int = 1  # configurations run side by side

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
    #: Configurations run side by side (the venv runner: each a child of a warm interpreter). None: what
    #: the cores and the memory allow (runners.warm.default_jobs); 1: one process per configuration, in turn.
    jobs: int | None = None
