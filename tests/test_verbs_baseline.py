"""The per-test classification of a suite against the pristine release (pure: results in, classes out)."""

from __future__ import annotations

import pytest

from patchset.runners import ERROR, FAILED, PASSED, SKIPPED, NodeResult
from patchset.runners.pytestrun import gpu_reason
from patchset.verbs import baseline as bl

T = "tests/a/test_x.py::test_y"


def res(outcome: str, nodeid: str = T, message: str = "") -> NodeResult:
    return NodeResult(nodeid, outcome, message or ("boom" if outcome in (FAILED, ERROR) else ""))


def one(patched: str, *pristine: str, reruns: tuple[str, ...] = (), message: str = "",
        control: tuple[str, ...] = ()) -> bl.TestComparison:
    runs = [{T: res(o)} for o in pristine]
    again = [{T: res(o)} for o in reruns]
    controls = [{T: res(o)} for o in control]
    (t,) = bl.classify({T: res(patched, message=message)}, runs, gpu_reason=gpu_reason, reruns=again,
                       controls=controls).tests
    return t


@pytest.mark.parametrize(("patched", "pristine", "status", "fails"), [
    (FAILED, (PASSED,), bl.REGRESSION, True),
    (ERROR, (PASSED,), bl.REGRESSION, True),
    (FAILED, (SKIPPED,), bl.REGRESSION, True),  # ran and failed where the release did not even run it
    (FAILED, (FAILED, FAILED), bl.PRE_EXISTING, False),
    (ERROR, (FAILED, ERROR), bl.PRE_EXISTING, False),
    (PASSED, (FAILED, FAILED), bl.FIXED, False),
    (PASSED, (PASSED,), bl.PASSES, False),
    (PASSED, (SKIPPED,), bl.PASSES, False),
    (SKIPPED, (SKIPPED,), bl.SKIPS, False),
    (SKIPPED, (PASSED,), bl.SKIPS, False),
    (PASSED, (), bl.NEW, False),
    (FAILED, (), bl.NEW, True),  # a test only the series adds must pass
])
def test_classes(patched, pristine, status, fails):
    t = one(patched, *pristine)
    assert (t.status, t.fails_suite) == (status, fails)
    assert t.patched == (patched,) and t.pristine == pristine


def test_accelerator_failures_are_needs_gpu_not_pre_existing_or_new():
    msg = "RuntimeError: Found no NVIDIA driver on your system"
    assert one(FAILED, FAILED, FAILED, message=msg).status == bl.NEEDS_GPU
    assert one(ERROR, message=msg).status == bl.NEEDS_GPU
    assert one(SKIPPED, SKIPPED, message="requires CUDA").status == bl.NEEDS_GPU
    assert one(ERROR, SKIPPED, message=msg).status == bl.NEEDS_GPU
    # it passed on the same runner without the series: the accelerator is not what is missing
    assert one(FAILED, PASSED, message=msg).status == bl.REGRESSION


def test_a_flaky_pristine_result_does_not_hide_a_regression():
    # failed once, passed once on the pristine release: re-run with the series, which fails every time
    t = one(FAILED, FAILED, PASSED, reruns=(FAILED, FAILED))
    assert t.status == bl.REGRESSION and t.fails_suite and t.patched == (FAILED, FAILED, FAILED)
    assert "fails 3 of 3 runs" in t.message
    # the series lets it pass once: it is flaky, reported, not a failure of the suite
    t = one(FAILED, FAILED, PASSED, reruns=(PASSED,))
    assert t.status == bl.FLAKY and not t.fails_suite
    # flaky between failures and skips only: never passed pristine, so nothing to regress from
    assert one(FAILED, FAILED, SKIPPED, reruns=(FAILED,)).status == bl.FLAKY


def test_a_failure_with_the_series_that_passes_when_run_again_is_flaky_not_a_regression():
    assert one(FAILED, PASSED, reruns=(PASSED,)).status == bl.FLAKY
    t = one(FAILED, PASSED, reruns=(FAILED, FAILED))
    assert t.status == bl.REGRESSION and t.patched == (FAILED, FAILED, FAILED)


def test_a_failure_the_pristine_control_run_shares_is_the_machines_not_a_regression():
    # failed every time with the series, and the pristine release fails it too when run again after them
    t = one(FAILED, PASSED, reruns=(FAILED, FAILED), control=(FAILED,))
    assert t.status == bl.FLAKY and not t.fails_suite
    assert t.pristine == (PASSED, FAILED) and "the machine's, not the series'" in t.message
    # the control passes: the series breaks it, every time
    t = one(FAILED, PASSED, reruns=(FAILED, FAILED), control=(PASSED,))
    assert t.status == bl.REGRESSION and t.fails_suite and t.pristine == (PASSED, PASSED)


def test_control_candidates_are_the_failures_every_rerun_repeated():
    patched = {"a": res(FAILED, "a"), "b": res(FAILED, "b"), "c": res(FAILED, "c")}
    pristine = [{"a": res(PASSED, "a"), "b": res(PASSED, "b"), "c": res(FAILED, "c")}]
    reruns = [{"a": res(FAILED, "a"), "b": res(PASSED, "b")}, {"a": res(ERROR, "a")}]
    assert bl.control_candidates(patched, pristine, reruns) == ["a"]


def test_rerun_candidates_are_the_failures_that_passed_on_the_pristine_release():
    patched = {"a": res(FAILED, "a"), "b": res(FAILED, "b"), "c": res(PASSED, "c"), "d": res(ERROR, "d")}
    pristine = [{"a": res(FAILED, "a"), "b": res(FAILED, "b"), "c": res(FAILED, "c"), "d": res(PASSED, "d")},
                {"a": res(PASSED, "a"), "b": res(FAILED, "b"), "c": res(PASSED, "c")}]
    assert bl.rerun_candidates(patched, pristine) == ["a", "d"]


def test_import_errors_stand_for_every_test_in_their_file():
    f = "tests/a/test_x.py"
    pristine_ok = {f"{f}::test_y": res(PASSED, f"{f}::test_y"), f"{f}::test_z": res(FAILED, f"{f}::test_z")}
    # the series breaks the file's import: compared with the tests the file held
    c = bl.classify({f: res(ERROR, f)}, [pristine_ok], gpu_reason=gpu_reason)
    assert [(t.nodeid, t.status) for t in c.tests] == [(f, bl.REGRESSION)]
    # the release could not import it, the series can: its tests are fixed or pre-existing
    c = bl.classify(pristine_ok, [{f: res(ERROR, f)}], gpu_reason=gpu_reason)
    assert [(t.nodeid, t.status) for t in c.tests] == [(f"{f}::test_y", bl.FIXED), (f"{f}::test_z", bl.PRE_EXISTING)]


def test_fixed_tests_credit_the_patches_whose_tests_cover_them():
    c = bl.classify({T: res(PASSED)}, [{T: res(FAILED)}], gpu_reason=gpu_reason,
                    credit={"p1": ["tests/a/test_x.py"], "p2": ["tests/b"], "p3": [T]})
    assert c.tests[0].patches == ("p1", "p3")


def test_regressions_come_first_and_decide_the_suite():
    patched = {"n": res(FAILED, "n"), "r": res(FAILED, "r"), "p": res(FAILED, "p"), "ok": res(PASSED, "ok")}
    pristine = [{"r": res(PASSED, "r"), "p": res(FAILED, "p"), "ok": res(PASSED, "ok")}]
    c = bl.classify(patched, pristine, gpu_reason=gpu_reason)
    assert [t.nodeid for t in c.failures] == ["r", "n"] and not c.ok
    assert c.counts() == {bl.REGRESSION: 1, bl.PRE_EXISTING: 1, bl.NEW: 1, bl.PASSES: 1}
    assert bl.classify({"ok": res(PASSED, "ok")}, pristine, gpu_reason=gpu_reason).ok


def test_the_first_error_line_is_kept_for_pre_existing_failures():
    r = NodeResult(T, FAILED, "", "def test_y():\n>   assert f() == 2\nE   assert 1 == 2\nE   more\n")
    (t,) = bl.classify({T: r}, [{T: res(FAILED)}], gpu_reason=gpu_reason).tests
    assert (t.status, t.message) == (bl.PRE_EXISTING, "assert 1 == 2")
