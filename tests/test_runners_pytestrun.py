"""The pytest-running helpers on their own: why a run counts as crashed, GPU reasons, selectors."""

from __future__ import annotations

import pytest

from patchset.runners import ERROR, FAILED, SKIPPED, NodeResult, RunOutcome, pytestrun


def outcome(code: int, output: str = "last words\n", problem: str | None = None) -> RunOutcome:
    return RunOutcome({}, code, 1.0, [], output, None, problem)


@pytest.mark.parametrize(("run", "not_found", "crash"), [
    (outcome(0), {}, None),
    (outcome(1), {}, None),
    (outcome(5), {}, None),  # nothing collected: each selector is reported as not collected
    (outcome(4), {"t": "pytest: not found: t"}, None),  # only unknown node ids
    (outcome(4, "ERROR: found no collectors for t\n"), {}, "pytest exit 4 (usage error"),
    (outcome(2), {}, "pytest exit 2 (interrupted"),
    (outcome(3), {}, "pytest exit 3 (internal error): last words"),
    (outcome(-1), {}, "pytest timed out after 60 s"),
    (outcome(-11), {}, "pytest exit -11 (killed by signal 11)"),
    (outcome(137), {}, "pytest exit 137 (killed by signal 9)"),
    (outcome(1, problem="pytest wrote no JUnit report (junit.xml)"), {}, "pytest exit 1; pytest wrote no JUnit"),
])
def test_crash_reasons_name_the_exit_code(run, not_found, crash):
    got = pytestrun.crash_reason(run, ("t",), not_found, timeout=60)
    assert (got is None) if crash is None else got.startswith(crash)


@pytest.mark.parametrize(("result", "gpu"), [
    (NodeResult("t", SKIPPED, "CUDA is not available"), True),
    (NodeResult("t", SKIPPED, "Requires at least 2 GPUs"), True),
    (NodeResult("t", SKIPPED, "needs an accelerator"), True),
    (NodeResult("t", SKIPPED, "got empty parameter set for (backend)"), False),
    (NodeResult("t", ERROR, 'failed on setup with "RuntimeError: Found no NVIDIA driver on your system"'), True),
    (NodeResult("t", FAILED, "AssertionError: Torch not compiled with CUDA enabled"), True),
    (NodeResult("t", FAILED, "AssertionError: assert gpu_blocks == 3"), False),
])
def test_gpu_reasons_are_recognised(result, gpu):
    assert (pytestrun.gpu_reason(result) is not None) == gpu


def test_selectors_overlapping_a_suite_run_once():
    assert pytestrun.minimal_selectors(["tests/a", "tests/a/test_x.py::test_y", "tests/b.py::t", "./tests/a/"]) == (
        "tests/a", "tests/b.py::t")
    assert pytestrun.covers("tests/a.py::test_y", "tests/a.py::test_y[1-2]")
    assert not pytestrun.covers("tests/a.py::test_y", "tests/a.py::test_yz")
