"""Forked evaluation gives what the serial one gives, whatever a child does."""

from __future__ import annotations

import os
import signal

import pytest

from patchset import parallel

PARENT = os.getpid()


def square(x: int) -> int:
    return x * x


@pytest.mark.parametrize("processes", [1, 2, 3, 7])
def test_results_come_back_in_order(processes: int) -> None:
    items = list(range(10))
    assert parallel.ordered_map(square, items, processes) == [x * x for x in items]


def test_each_share_but_the_first_runs_in_its_own_forked_child() -> None:
    """A map that never forks gives the same results; only where the work ran tells them apart."""

    def where(x: int) -> tuple[int, int, int]:
        return x, os.getpid(), os.getppid()

    out = parallel.ordered_map(where, list(range(10)), 3)
    assert [x for x, _, _ in out] == list(range(10))
    pids = [pid for _, pid, _ in out]
    # runs of neighbours: 4, 3 and 3 items; the parent keeps the first
    assert pids[:4] == [PARENT] * 4 and len(set(pids[4:7])) == 1 and len(set(pids[7:])) == 1
    children = {pids[4], pids[7]}
    assert len(children) == 2 and PARENT not in children
    assert {ppid for _, pid, ppid in out if pid != PARENT} == {PARENT}  # forked by this process
    for pid in children:  # and waited for: no zombie left behind
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_one_process_or_one_item_runs_in_the_parent() -> None:
    assert set(parallel.ordered_map(lambda _: os.getpid(), list(range(5)), 1)) == {PARENT}
    assert parallel.ordered_map(lambda _: os.getpid(), [0], 4) == [PARENT]


def test_a_child_that_raises_has_its_items_run_again_in_the_parent() -> None:
    ran_in = []

    def fn(x: int) -> tuple[int, int]:
        if os.getpid() != PARENT:
            raise RuntimeError("only in a child")
        ran_in.append(x)
        return x, os.getpid()

    out = parallel.ordered_map(fn, list(range(6)), 3)
    assert [x for x, _ in out] == list(range(6))
    assert all(pid == PARENT for _, pid in out) and sorted(ran_in) == list(range(6))


def test_a_child_killed_mid_way_has_its_items_run_again_in_the_parent() -> None:
    def fn(x: int) -> int:
        if os.getpid() != PARENT:
            os.kill(os.getpid(), signal.SIGKILL)
        return -x

    assert parallel.ordered_map(fn, [1, 2, 3, 4], 2) == [-1, -2, -3, -4]


def test_an_error_is_the_serial_runs_error() -> None:
    def fn(x: int) -> int:
        if x == 3:
            raise KeyError(x)
        return x

    with pytest.raises(KeyError):
        parallel.ordered_map(fn, list(range(5)), 2)


def test_jobs_are_asked_for_or_sized_by_the_work(monkeypatch) -> None:
    monkeypatch.setenv("PATCHSET_JOBS", "1")
    assert parallel.workers(10, 10**6) == 1
    monkeypatch.setenv("PATCHSET_JOBS", "4")
    assert parallel.workers(3, 1) == 3
    monkeypatch.delenv("PATCHSET_JOBS")
    assert parallel.workers(3, parallel.MIN_WORK - 1) == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})  # two cores
    assert [parallel.workers(n, 10**6) for n in (1, 2, 3, 5, 6, 10)] == [1, 2, 2, 2, 3, 3]
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert parallel.workers(10, 10**6) == 1
