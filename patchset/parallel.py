"""Evaluating releases side by side: forked processes, results in order, the same as one at a time.

Releases are independent (each is its own tree, patched in memory), so a series checked on several
releases can use every core. ``concurrent.futures`` costs more to import and to start a pool than a
small series takes to check (docs/records/performance.md), so this forks by hand: a child
inherits the loaded manifest, parsed patches and opened trees, runs its share of the items and sends
its results back pickled through a pipe (parent and child are the same program at the same moment,
so the pickle never crosses a trust boundary), then leaves with ``os._exit``: no atexit handler,
no flush of a buffer it shares with the parent.

Nothing a child does can change the answer: when a child fails in any way (an exception, a crash, a
kill, a result that does not unpickle), its items are run again in the parent, so the result, or
the exception with its own type and traceback, is the serial run's. Work is forked only where it
pays (:func:`workers`): ``PATCHSET_JOBS=1`` turns it off, ``PATCHSET_JOBS=N`` sets the number of
processes; platforms without ``fork`` run serially.
"""

from __future__ import annotations

import gc
import os
import pickle
from collections.abc import Callable, Sequence
from typing import TypeVar

_T = TypeVar("_T")
_R = TypeVar("_R")

#: Below this many hunk evaluations (hunks x releases) a fork is not worth it: this repository's series
#: (132) gains nothing forked, the fork-shaped 37-patch series on three releases (2,244) does
#: (docs/records/performance.md).
MIN_WORK = 300


def workers(items: int, work: int) -> int:
    """How many processes to use for ``items`` independent items of ``work`` hunk evaluations in all."""
    asked = os.environ.get("PATCHSET_JOBS", "").strip()
    if asked.isdigit() and int(asked) > 0:
        return max(1, min(items, int(asked)))
    if not hasattr(os, "fork") or work < MIN_WORK:
        return 1
    cores = usable_cores()
    if cores <= 1:
        return 1
    # One more process than cores when each still gets two items or more: the shares are fixed in
    # advance and releases differ in cost (one where hunks fail costs more), so an extra share lets the
    # scheduler even them out. With fewer items, a child with one release spends as much on its start
    # (copy-on-write faults, sending its results) as the extra share saves (docs/records/performance.md).
    return min(items, cores + 1 if items >= 2 * (cores + 1) else cores)


def heavy_workers(items: int) -> int:
    """Processes for ``items`` that each take most of a second of CPU or more (an sdist streamed and
    read member by member): one per core, as ``PATCHSET_JOBS`` allows."""
    asked = os.environ.get("PATCHSET_JOBS", "").strip()
    if asked.isdigit() and int(asked) > 0:
        return max(1, min(items, int(asked)))
    return max(1, min(items, usable_cores())) if hasattr(os, "fork") else 1


def usable_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def ordered_map(fn: Callable[[_T], _R], items: Sequence[_T], processes: int) -> list[_R]:
    """``[fn(x) for x in items]``, with items shared among ``processes`` (the parent is one) in runs of
    neighbours: neighbouring releases share most files, which the engine then places once per process."""
    if processes <= 1 or len(items) <= 1 or not hasattr(os, "fork"):
        return [fn(x) for x in items]
    size, extra = divmod(len(items), processes)
    bounds = [k * size + min(k, extra) for k in range(processes + 1)]
    shares = [list(range(bounds[k], bounds[k + 1])) for k in range(processes)]
    gc.freeze()  # what exists now stays out of the children's collections: less copy-on-write
    try:
        children = [_fork(fn, items, share) for share in shares[1:]]
        results: dict[int, _R] = {i: fn(items[i]) for i in shares[0]}
        for (pid, fd), share in zip(children, shares[1:], strict=True):
            got = _collect(pid, fd)
            for i in share:
                results[i] = got[i] if got is not None and i in got else fn(items[i])
    finally:
        gc.unfreeze()
    return [results[i] for i in range(len(items))]


def _fork(fn: Callable[[_T], _R], items: Sequence[_T], share: list[int]) -> tuple[int, int]:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 1
        try:
            os.close(read_end)
            data = pickle.dumps({i: fn(items[i]) for i in share}, protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write_end, "wb") as out:
                out.write(data)
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    return pid, read_end


def _collect(pid: int, fd: int) -> dict | None:
    """The child's results, or None when it did not finish them all (the parent runs them again)."""
    with os.fdopen(fd, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        return None
    try:
        got = pickle.loads(data)
    except Exception:  # noqa: BLE001 -- anything short of a whole result: the parent does the work itself
        return None
    return got if isinstance(got, dict) else None
