"""Judging a suite against the pristine release: what the series changed, test by test.

A whole upstream suite rarely passes everywhere: some tests fail on a given
runner whatever the series does (no accelerator, a platform limit). What
matters is what the *series* changed, so every test of a suite is compared
with the same test on the pristine release, run by the same runner:

``regression``
    passed on the pristine release (or was not run there), fails or errors
    with the series. Fails the suite.
``pre-existing``
    fails both ways: the runner's or the release's problem. Shown with its
    first error line; does not fail the suite.
``fixed``
    fails on the pristine release, passes with the series: credit to the
    series (and to the patches whose tests name it).
``needs-gpu``
    skipped or errored for want of an accelerator, both ways (as the patch
    verdicts say). Never a pass, never a failure.
``new``
    only in the patched test tree (a patch's test hunks added it): it must
    pass, so a failing new test fails the suite.
``flaky``
    the pristine outcomes of the test disagree between pristine runs (the
    pristine failures are run twice), or it failed with the series and
    passed when run again. Every test that fails with the series and passed
    on the pristine release is re-run with the series (bounded) before its
    verdict: failing every time, it is a regression; otherwise flaky. One
    that failed every time is then run once more on the pristine release, at
    once and alone (the *control*): failing there too, under the same
    conditions, it is flaky (the machine's load or state fails it, not the
    series); passing, the regression stands. A flaky result, pristine or
    patched, never hides a regression nor makes one.

Everything else (passed both ways, skipped both ways) is unremarkable.
This module is pure: results in, classification out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from patchset.core.words import Word
from patchset.runners import ERROR, FAILED, PASSED, SKIPPED, NodeResult, Outcome


class BaselineClass(Word):
    """What one test of a suite did with the series, against the pristine release (decided by :func:`compare`)."""

    REGRESSION = "regression"
    PRE_EXISTING = "pre-existing"
    FIXED = "fixed"
    NEEDS_GPU = "needs-gpu"
    NEW = "new"
    FLAKY = "flaky"
    PASSES = "passes"  # passes with the series, as it did (or was skipped) without
    SKIPS = "skips"  # skipped with the series for a reason other than an accelerator


# the short names the report and the tests use
REGRESSION, PRE_EXISTING, FIXED = BaselineClass.REGRESSION, BaselineClass.PRE_EXISTING, BaselineClass.FIXED
NEEDS_GPU, NEW, FLAKY = BaselineClass.NEEDS_GPU, BaselineClass.NEW, BaselineClass.FLAKY
PASSES, SKIPS = BaselineClass.PASSES, BaselineClass.SKIPS

_BAD = (FAILED, ERROR)

#: Says why a result needs an accelerator, or None (patchset.verbs.test.gpu_reason).
GpuReason = Callable[[NodeResult], "str | None"]
#: Results by node id, as one run reported them.
Results = Mapping[str, NodeResult]


@dataclass(frozen=True)
class TestComparison:
    """One test of a suite: what it did with the series and on the pristine release."""

    nodeid: str
    status: BaselineClass
    patched: tuple[Outcome, ...]  # outcomes with the series, first run first (re-runs of a flaky test after it)
    pristine: tuple[Outcome, ...]  # outcomes on the pristine release; empty: the test does not exist there
    message: str = ""  # the first error line (failures), the reason (needs-gpu, skips)
    patches: tuple[str, ...] = ()  # fixed: the patches whose tests name this test

    @property
    def fails_suite(self) -> bool:
        return self.status == REGRESSION or (self.status == NEW and self.patched[-1] in _BAD)


@dataclass
class Comparison:
    """Every test of a suite, classified."""

    tests: list[TestComparison] = field(default_factory=list)

    def of(self, status: BaselineClass) -> list[TestComparison]:
        return [t for t in self.tests if t.status == status]

    @property
    def failures(self) -> list[TestComparison]:
        """What fails the suite: regressions first, then new tests that fail."""
        return self.of(REGRESSION) + [t for t in self.of(NEW) if t.fails_suite]

    @property
    def ok(self) -> bool:
        return not self.failures

    def counts(self) -> dict[str, int]:
        return {c: n for c in BaselineClass if (n := len(self.of(c)))}


def pristine_view(nodeid: str, runs: Sequence[Results]) -> tuple[Outcome, ...]:
    """Every pristine outcome of ``nodeid``, one per run that reported it.

    Node ids need not match one to one: a file that fails to import is
    reported under its path, and then stands for every test in it (both
    ways round: a pristine import error covers the patched tree's tests, a
    patched import error is compared with all of the pristine file's tests).
    """
    out: list[Outcome] = []
    for run in runs:
        if nodeid in run:
            out.append(run[nodeid].outcome)
            continue
        outer = [r for nid, r in run.items() if r.outcome == ERROR and _covers(nid, nodeid)]
        inner = [r for nid, r in run.items() if _covers(nodeid, nid)]
        if outer:
            out.append(ERROR)
        elif inner:
            # the worst first: one pristine pass inside a file that now fails to import is a regression
            outcomes = {r.outcome for r in inner}
            out.append(PASSED if PASSED in outcomes else FAILED if outcomes & set(_BAD) else SKIPPED)
    return tuple(out)


def classify(patched: Results, pristine: Sequence[Results], *, gpu_reason: GpuReason,
             reruns: Sequence[Results] = (), credit: Mapping[str, Sequence[str]] | None = None,
             controls: Sequence[Results] = ()) -> Comparison:
    """Classify every test ``patched`` reports.

    ``pristine``: the pristine run first, then any re-runs of some of its
    tests (a re-run reports only the tests it ran). ``reruns``: re-runs of
    flaky tests with the series. ``credit``: node id selectors by patch id,
    to name the patches whose tests cover a fixed test. ``controls``: the
    pristine runs made after the re-runs of the tests that failed every time
    (see :func:`control_candidates`).
    """
    out = Comparison()
    for nodeid in sorted(patched):
        result = patched[nodeid]
        again = tuple(run[nodeid].outcome for run in reruns if nodeid in run)
        control = tuple(run[nodeid].outcome for run in controls if nodeid in run)
        out.tests.append(compare(result, pristine_view(nodeid, pristine), again, gpu_reason, credit or {},
                                 control))
    return out


def compare(result: NodeResult, before: tuple[Outcome, ...], again: tuple[Outcome, ...], gpu_reason: GpuReason,
            credit: Mapping[str, Sequence[str]], control: tuple[Outcome, ...] = ()) -> TestComparison:
    """One test: ``result`` with the series, ``before`` its pristine outcomes, ``again`` its re-runs,
    ``control`` its pristine run made after them (shown after ``before``)."""
    nodeid, outcome = result.nodeid, result.outcome
    seen = (outcome, *again)
    gpu = gpu_reason(result)
    first_line = result.message or _first_error_line(result.detail)

    def make(status: BaselineClass, message: str = "", patches: tuple[str, ...] = ()) -> TestComparison:
        return TestComparison(nodeid, status, seen, (*before, *control), message, patches)

    if outcome in _BAD and PASSED not in again and any(o in _BAD for o in control):
        return make(FLAKY, f"fails {len(seen)} of {len(seen)} runs with the series, and on the pristine "
                           f"release too when run again after them: the machine's, not the series': {first_line}")
    if not before:
        return make(NEEDS_GPU, gpu) if gpu else make(NEW, first_line if outcome in _BAD else "")
    if outcome in _BAD and PASSED in again:
        return make(FLAKY, first_line)  # the series does not always break it
    if outcome in _BAD and _disagree(before):
        # the pristine result is unreliable: only a test that fails every time with the series regressed
        if PASSED in before:
            return make(REGRESSION, f"fails {len(seen)} of {len(seen)} runs with the series, "
                                    f"pristine: {', '.join(before)}: {first_line}")
        return make(FLAKY, first_line)
    if outcome == PASSED:
        if all(o in _BAD for o in before):
            return make(FIXED, patches=tuple(pid for pid, sels in credit.items()
                                             if any(_covers(s, nodeid) for s in sels)))
        return make(PASSES)
    if outcome == SKIPPED:
        return make(NEEDS_GPU, gpu) if gpu else make(SKIPS, result.message)
    if all(o in _BAD for o in before):
        return make(NEEDS_GPU, gpu) if gpu else make(PRE_EXISTING, first_line)
    if SKIPPED in before and gpu:
        return make(NEEDS_GPU, gpu)  # skipped for want of a GPU before, errors for the same reason now
    return make(REGRESSION, first_line)


def rerun_candidates(patched: Results, pristine: Sequence[Results]) -> list[str]:
    """Tests to run again with the series before a verdict: those that fail there and passed pristine.

    Both a flaky pristine result and a flaky run with the series could
    otherwise decide: a regression is a test that fails every time with the
    series; one that passes in some run is flaky.
    """
    return [nodeid for nodeid, r in sorted(patched.items())
            if r.outcome in _BAD and PASSED in pristine_view(nodeid, pristine)]


def control_candidates(patched: Results, pristine: Sequence[Results], reruns: Sequence[Results]) -> list[str]:
    """The re-run candidates that failed in every re-run with the series: each is run once more on the
    pristine release before it is called a regression (the control)."""
    return [nodeid for nodeid in rerun_candidates(patched, pristine)
            if all(nodeid in run and run[nodeid].outcome in _BAD for run in reruns)]


def _disagree(outcomes: Sequence[Outcome]) -> bool:
    """Whether pristine runs disagree on a test (failed and error agree: it does not pass)."""
    return len({FAILED if o in _BAD else o for o in outcomes}) > 1


def _covers(selector: str, nodeid: str) -> bool:
    s = selector.strip().rstrip("/") if "::" not in selector else selector.strip()
    return nodeid == s or nodeid.startswith((s + "[", s + "::", s + "/"))


def _first_error_line(detail: str) -> str:
    for line in detail.splitlines():
        if line.startswith("E   "):
            return line[4:].strip()[:300]
    return ""


@dataclass
class Baseline:
    """The pristine release's results for one suite, and where they came from."""

    key: str
    cached: bool
    runs: list[dict[str, NodeResult]] = field(default_factory=list)  # the run, then its failures again
    error: str = ""  # why there is no usable pristine result
    duration: float = 0.0
