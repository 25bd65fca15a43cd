"""Forked evaluation gives what the serial one gives, whatever a child does."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from patchset import parallel


def square(x: int) -> int:
    return x * x


def mapped(tmp_path, fn, items, processes):
    """``ordered_map`` in this process; a child that comes back into this code (rather than leaving with
    os._exit) leaves a mark and goes, so the test sees it and does not run on in two processes."""
    caller = os.getpid()
    try:
        return parallel.ordered_map(fn, items, processes)
    finally:
        if os.getpid() != caller:
            (tmp_path / f"returned-{os.getpid()}").touch()
            os._exit(0)


def returned(tmp_path) -> list[str]:
    return sorted(p.name for p in tmp_path.glob("returned-*"))


@pytest.mark.parametrize("processes", [1, 2, 3, 7])
def test_results_come_back_in_order(processes: int) -> None:
    items = list(range(10))
    assert parallel.ordered_map(square, items, processes) == [x * x for x in items]


@pytest.mark.parametrize(("items", "processes", "shares"), [(2, 2, [1, 1]), (5, 2, [3, 2]), (10, 3, [4, 3, 3])])
def test_each_share_but_the_first_runs_in_its_own_forked_child(tmp_path, items, processes, shares) -> None:
    """A map that never forks gives the same results; only where the work ran tells them apart."""
    parent = os.getpid()  # at run time: a runner may fork the process that imported this module

    def where(x: int) -> tuple[int, int, int]:
        return x, os.getpid(), os.getppid()

    out = mapped(tmp_path, where, list(range(items)), processes)
    assert [x for x, _, _ in out] == list(range(items)) and returned(tmp_path) == []
    pids = [pid for _, pid, _ in out]
    # runs of neighbours, the parent keeping the first
    runs = [len(list(group)) for _, group in itertools.groupby(pids)]
    assert runs == shares and pids[0] == parent and len(set(pids)) == processes
    assert {ppid for _, pid, ppid in out if pid != parent} == {parent}  # forked by this process
    for pid in set(pids) - {parent}:  # and waited for: no zombie left behind
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_one_process_or_one_item_runs_in_the_parent(monkeypatch) -> None:
    parent = os.getpid()
    forks = []
    real_fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or real_fork())  # counts, and really forks
    assert set(parallel.ordered_map(lambda _: os.getpid(), list(range(5)), 1)) == {parent}
    assert parallel.ordered_map(lambda _: os.getpid(), [0], 4) == [parent]
    assert parallel.ordered_map(lambda _: os.getpid(), [], 4) == []
    assert forks == []  # not even a child with nothing to do
    monkeypatch.delattr(os, "fork")  # a platform without fork
    assert set(parallel.ordered_map(lambda _: os.getpid(), list(range(5)), 3)) == {parent}


def test_only_the_caller_returns_from_ordered_map() -> None:
    """Run in a process of its own, as the CLI runs it: the process that called ordered_map prints the
    results and exits 0; a child that returned into the caller's code (or a parent that left as a child
    does) would print something else, or nothing, from another pid."""
    script = textwrap.dedent("""
        import os
        from patchset import parallel
        caller = os.getpid()
        out = parallel.ordered_map(lambda x: (x, os.getpid() == caller), list(range(6)), 3)
        print(os.getpid() == caller, out)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (
        0, "True [(0, True), (1, True), (2, False), (3, False), (4, False), (5, False)]\n", "")


def test_a_child_that_raises_has_its_items_run_again_in_the_parent(tmp_path) -> None:
    ran_in = []
    parent = os.getpid()

    def fn(x: int) -> tuple[int, int]:
        if os.getpid() != parent:
            raise RuntimeError("only in a child")
        ran_in.append(x)
        return x, os.getpid()

    out = mapped(tmp_path, fn, list(range(6)), 3)
    assert [x for x, _ in out] == list(range(6)) and returned(tmp_path) == []  # each child left by os._exit
    assert all(pid == parent for _, pid in out) and sorted(ran_in) == list(range(6))


def test_a_child_killed_mid_way_has_its_items_run_again_in_the_parent() -> None:
    parent = os.getpid()

    def fn(x: int) -> int:
        if os.getpid() != parent:
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
    assert parallel.workers(2, parallel.MIN_WORK) == 2  # from MIN_WORK on it is forked
    for asked in ("0", "many", " "):  # not a number of processes: sized by the work
        monkeypatch.setenv("PATCHSET_JOBS", asked)
        assert parallel.workers(10, 10**6) == 3
    monkeypatch.delenv("PATCHSET_JOBS")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert parallel.workers(10, 10**6) == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.delattr(os, "fork")
    assert parallel.workers(10, 10**6) == 1


def test_heavy_items_get_one_process_per_core_or_as_asked(monkeypatch) -> None:
    monkeypatch.delenv("PATCHSET_JOBS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})
    assert [parallel.heavy_workers(n) for n in (0, 1, 2, 3, 7)] == [1, 1, 2, 3, 3]
    monkeypatch.setenv("PATCHSET_JOBS", "2")
    assert [parallel.heavy_workers(n) for n in (1, 5)] == [1, 2]
    monkeypatch.setenv("PATCHSET_JOBS", "1")
    assert parallel.heavy_workers(5) == 1
    monkeypatch.setenv("PATCHSET_JOBS", "0")
    assert parallel.heavy_workers(5) == 3
    monkeypatch.delenv("PATCHSET_JOBS")
    monkeypatch.delattr(os, "fork")
    assert parallel.heavy_workers(5) == 1


def test_usable_cores_are_this_processs_affinity_or_else_the_count(monkeypatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3})
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert parallel.usable_cores() == 2
    monkeypatch.delattr(os, "sched_getaffinity")
    assert parallel.usable_cores() == 8
    monkeypatch.setattr(os, "cpu_count", lambda: None)  # unknown
    assert parallel.usable_cores() == 1
