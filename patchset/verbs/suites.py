"""Running the manifest's suites: with the series, and on the pristine release (cached).

Each suite runs in its own pytest run with the series (its own timeout, its
own crash; side by side, a folder's test files in parts, one run each, read
as one run: shard_selectors), and once per (release, runner, pristine test tree, selection)
on the pristine release: the package files the series touches as the
release ships them, the release's own ``tests/`` (no test hunks). That
pristine result is cached, so the next ``patchset test`` costs one suite
run, not two. Tests the pristine run saw fail are run a second time there,
so that a flaky pristine result is recognised (and cached as such) instead
of excusing a regression. :mod:`patchset.verbs.baseline` judges the two.

The pristine run uses the same runner as the patched one: the same venv,
or the same image. Every configuration replaces every file the series
touches, so on an image ``patchset build`` made, the pristine run sees the
base image's files; its cache key names the base image's digest (from the
image's labels), which is what the pristine run really depends on.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import math
import os
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

from patchset.cache import Cache
from patchset.core.manifest import Suite
from patchset.images import engine as docker_engine
from patchset.runners import ERROR, FAILED, NodeResult, Outcome, Progress, RunConfig, Runner, RunOutcome
from patchset.runners.pytestrun import (
    PYTEST_CONFIG_FILES,
    ConfigRun,
    covers,
    crash_reason,
    gpu_reason,
    normalise_selector,
    prepare_test_tree,
    run_pytest,
    select,
    slug,
)
from patchset.verbs import baseline as bl
from patchset.verbs.baseline import Baseline
from patchset.verbs.proof import SuiteResult

#: Bump when what a cached pristine result means changes (selection, re-runs, the stored fields).
#: 2: the second look at the pristine failures runs alone (a baseline of 1 may hold failures the load caused).
BASELINE_FORMAT = 2
#: How many more times a test that fails with the series and passed pristine runs before its verdict.
FLAKY_RERUNS = 2
#: pytest's default ``norecursedirs``: folders a run of a folder does not walk into (nor do its parts).
NORECURSEDIRS = ("*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}")
#: Labels an image built by ``patchset build`` carries (OCI annotations).
BASE_DIGEST_LABEL = "org.opencontainers.image.base.digest"


@dataclass
class SuiteJob:
    """What every suite of one ``patchset test`` shares."""

    runner: Runner
    project: str
    version: str
    package: str
    files: Mapping[str, bytes | None]  # the package files as the series leaves them
    pristine_files: Mapping[str, bytes | None]  # the same paths, as the release ships them
    tree: Path  # the patched test tree
    pristine_root: Path  # the pristine source tree (holds tests/)
    workdir: Path
    timeout: float | None
    progress: Progress
    credit: Mapping[str, Sequence[str]]  # patch id -> its tests, to credit fixed tests
    cache: Cache
    rebaseline: bool = False  # ignore a cached pristine result (it is replaced)
    seconds: dict[str, float] = field(default_factory=dict)
    shards: int = 1  # a suite's folder is split among this many runs side by side (shard_selectors)
    _pristine_tree: Path | None = None
    _digest: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)  # suites run side by side (--jobs)

    def pristine_tree(self) -> Path:
        """The pristine test tree, copied out of the source only when a pristine run is due."""
        with self._lock:
            if self._pristine_tree is None:
                self._pristine_tree = prepare_test_tree(self.pristine_root, {}, self.workdir / "pristine-tree")
            return self._pristine_tree

    def pristine_digest(self) -> str:
        """The digest of the pristine test tree: what prepare_test_tree copies (tests/, pytest's config)."""
        with self._lock:
            if self._digest is None:
                files = [self.pristine_root / name for name in PYTEST_CONFIG_FILES]
                self._digest = tree_digest(self.pristine_root, [self.pristine_root / "tests", *files])
            return self._digest


def run_suite(job: SuiteJob, suite: Suite, pristine: Future[Baseline] | None = None) -> SuiteResult:
    """Run one suite with the series and judge it against the pristine release (``pristine``: its pristine
    result, being made beside this run; None: made here, after it)."""
    if suite.gpu and job.runner.needs_accelerator_reason:
        job.progress(f"suite {suite.path}: needs-gpu, not run ({job.runner.needs_accelerator_reason})")
        return SuiteResult(suite.path, ConfigRun(_label(suite), (), (suite.path,), []), gpu=True,
                           not_run=job.runner.needs_accelerator_reason)
    accelerator = job.runner.needs_accelerator_reason is None
    out = _selected(job, suite, _label(suite), job.files, job.tree, selection(suite))
    patched = out.results
    run = ConfigRun(_label(suite), (), (suite.path,), list(patched.values()), out.exit_code, out.duration, out.crash,
                    accelerator)
    if out.crash:  # nothing to judge: the suite fails, as any crashed run is no evidence
        return SuiteResult(suite.path, run, None, None, gpu=suite.gpu)
    base = pristine.result() if pristine is not None else pristine_baseline(job, suite)
    if base.error:
        job.progress(f"suite {suite.path}: no pristine baseline ({base.error}): every failure counts")
        return SuiteResult(suite.path, run, None, base, gpu=suite.gpu)
    reruns = _rerun(job, suite, bl.rerun_candidates(patched, base.runs))
    controls = _control(job, suite, bl.control_candidates(patched, base.runs, reruns))
    comparison = bl.classify(patched, base.runs, gpu_reason=partial(gpu_reason, accelerator=accelerator),
                             reruns=reruns, credit=job.credit, controls=controls)
    counts = ", ".join(f"{n} {c}" for c, n in comparison.counts().items())
    job.progress(f"suite {suite.path}: {counts or 'no tests'} (pristine baseline "
                 f"{'reused from the cache' if base.cached else 'run now and cached'}, key {base.key[:12]})")
    return SuiteResult(suite.path, run, comparison, base, gpu=suite.gpu)


def selection(suite: Suite) -> tuple[str, ...]:
    """pytest's positional arguments for a suite; pytest takes ``--deselect`` among them."""
    return (suite.path, *(f"--deselect={d}" for d in suite.deselect))


def pristine_baseline(job: SuiteJob, suite: Suite) -> Baseline:
    """The suite's pristine results: from the cache, else run now (under a lock) and cached."""
    key = baseline_key(job.project, job.version, runner_identity(job.runner), job.pristine_digest(),
                       selection(suite))
    where = ("baselines", key[:2], key + ".json")
    if not job.rebaseline and (cached := load_baseline(job.cache.path(*where), key)) is not None:
        return cached
    with job.cache.lock("baselines", key):
        if not job.rebaseline and (cached := load_baseline(job.cache.path(*where), key)) is not None:
            return cached  # another job ran it while this one waited
        label = f"pristine {suite.path}"
        tree = job.pristine_tree()
        first = _selected(job, suite, label, job.pristine_files, tree, selection(suite))
        if first.crash:  # not cached: the next run tries again
            return Baseline(key, False, [first.results], f"the pristine run crashed: {first.crash}", first.duration)
        runs, secs = [first.results], first.duration
        failing = sorted(n for n, r in first.results.items() if r.outcome in (FAILED, ERROR))
        if failing:  # a second look at what failed: a flaky pristine failure must not excuse a regression.
            # Alone, as the re-runs with the series are: a failure the load caused is not kept as the release's
            again = _selected(job, suite, label + " (failures again)", job.pristine_files, tree, tuple(failing),
                              alone=True)
            runs.append({n: r for n, r in again.results.items() if n in first.results})
            secs += again.duration
        base = Baseline(key, False, runs, "", secs)
        job.cache.put_bytes(dump_baseline(base).encode(), *where)
        return base


def baseline_key(project: str, version: str, runner: str, tree: str, selectors: Sequence[str]) -> str:
    """What a pristine result depends on: release, runner identity, test-tree digest, selected tests."""
    text = json.dumps({"format": BASELINE_FORMAT, "project": project, "version": version, "runner": runner,
                       "tree": tree, "selectors": list(selectors)}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def runner_identity(runner: Runner) -> str:
    """The environment a pristine result depends on: the venv, or the (base) image and its GPUs."""
    env = getattr(runner, "env", None)
    if env is not None:
        return f"venv {env.python} {env.site_packages}"  # a cached venv's path names the wheel's sha256
    image = getattr(runner, "image", None)
    if image is not None:
        labels = image.attrs.get("Config", {}).get("Labels") or {}
        digest = labels.get(BASE_DIGEST_LABEL) or docker_engine.image_digest(image)
        gpus = getattr(runner, "gpus", None) or ""
        # A GPU container told to run vLLM on the CPU (--device cpu) is another baseline than the GPU's.
        return f"image {digest} gpus={gpus}" + (" device=cpu" if gpus and getattr(runner, "cpu", False) else "")
    return f"{runner.name} {runner.needs_accelerator_reason or 'accelerator'}"


def tree_digest(root: Path, tops: Sequence[Path] | None = None) -> str:
    """sha256 over the files under ``tops`` (default: all of ``root``), paths relative to ``root``.

    Bytecode is left out, as prepare_test_tree leaves it out; a top that does
    not exist counts as absent, so adding a pytest config file changes it.
    """
    h = hashlib.sha256()
    for top in tops if tops is not None else [root]:
        h.update(str(top.relative_to(root)).encode() + (b"\0" if top.exists() else b"\1"))
        paths = [top] if top.is_file() else sorted(
            Path(folder) / name for folder, dirs, names in os.walk(top) if "__pycache__" not in Path(folder).parts
            for name in names if not name.endswith(".pyc"))
        for path in paths:
            h.update(str(path.relative_to(root)).encode() + b"\0")
            h.update(hashlib.sha256(path.read_bytes()).digest() if path.is_file() else b"-")
    return h.hexdigest()


def dump_baseline(base: Baseline) -> str:
    runs = [{n: {"outcome": r.outcome, "message": r.message, "detail": _tail(r.detail)} for n, r in run.items()}
            for run in base.runs]
    return json.dumps({"format": BASELINE_FORMAT, "key": base.key, "seconds": round(base.duration, 1),
                       "runs": runs}, indent=1) + "\n"


def load_baseline(path: Path, key: str) -> Baseline | None:
    """A cached pristine result, or None (absent, written by another format, or damaged: run it again)."""
    try:
        data = json.loads(path.read_text())
        if data.get("format") != BASELINE_FORMAT or data.get("key") != key:
            return None
        runs = [{n: NodeResult(n, Outcome(r["outcome"]), _text(r.get("message", "")), _text(r.get("detail", "")))
                 for n, r in run.items()} for run in data["runs"]]
        seconds = float(data.get("seconds", 0))
        if not math.isfinite(seconds):
            return None
    # A cut or edited file holds JSON of any shape (a list, a string where a mapping was): found by fuzzing.
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None
    return Baseline(key, True, runs, "", seconds)


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{value!r} is no text")
    return value


def _rerun(job: SuiteJob, suite: Suite, candidates: list[str]) -> list[dict[str, NodeResult]]:
    """Re-run with the series, at most FLAKY_RERUNS times, the failures that passed on the pristine release."""
    reruns: list[dict[str, NodeResult]] = []
    for i in range(FLAKY_RERUNS):
        if not candidates:
            break
        job.progress(f"suite {suite.path}: {len(candidates)} test(s) fail with the series and passed on the "
                     f"pristine release; running them again before a verdict ({i + 1} of {FLAKY_RERUNS})")
        again = _selected(job, suite, f"{_label(suite)} (again {i + 1})", job.files, job.tree,
                          tuple(candidates), alone=True).results
        reruns.append(again)
        # one pass is enough to show the series does not always break it
        candidates = [n for n in candidates if n in again and again[n].outcome in (FAILED, ERROR)]
    return reruns


def _control(job: SuiteJob, suite: Suite, candidates: list[str]) -> list[dict[str, NodeResult]]:
    """Run on the pristine release, once and alone, what failed every time with the series: the same
    conditions as those re-runs, so that a failure the machine causes is not blamed on the series."""
    if not candidates:
        return []
    job.progress(f"suite {suite.path}: {len(candidates)} test(s) failed every run with the series; running "
                 "them once more on the pristine release before a verdict")
    return [_selected(job, suite, f"pristine {suite.path} (control)", job.pristine_files, job.pristine_tree(),
                      tuple(candidates), alone=True).results]


@dataclass
class _Ran:
    """One pytest run of a suite's selected tests, read as outcomes or as a crash."""

    results: dict[str, NodeResult]  # the tests the selectors name, by node id
    exit_code: int
    duration: float
    crash: str | None  # why the run cannot be read as test outcomes (patchset.verbs.test.crash_reason)


def _selected(job: SuiteJob, suite: Suite, label: str, files: Mapping[str, bytes | None], tree: Path,
              selectors: tuple[str, ...], *, alone: bool = False) -> _Ran:
    """Run ``selectors`` in one configuration; the results of the tests they name, by node id. ``alone``: a
    re-run of what may be a regression, run as the serial path runs (RunConfig.alone). A suite's folder is
    split among ``job.shards`` runs side by side where that collects the same tests (shard_selectors)."""
    parts = [] if alone or job.shards <= 1 else shard_selectors(tree, selectors, job.shards)
    if len(parts) <= 1:
        return _selected_once(job, suite, label, files, tree, selectors, alone=alone)
    wanted = [s for s in selectors if not s.startswith("--")]  # the folder: results are read as its run's
    with ThreadPoolExecutor(len(parts), thread_name_prefix="patchset-shard") as pool:
        ran = list(pool.map(lambda i: _selected_once(job, suite, f"{label} [{i + 1} of {len(parts)}]", files, tree,
                                                       parts[i], wanted=wanted), range(len(parts))))
    job.seconds[label] = max(r.duration for r in ran)
    # in the order the folder's run reports them: by file, as pytest walks a folder (each level by name), and
    # within a file as it ran (sorted() keeps that order)
    merged = [(n, r) for part in ran for n, r in part.results.items()]
    results = dict(sorted(merged, key=lambda item: Path(item[0].split("::")[0]).parts))
    folder = normalise_selector(wanted[0])
    if folder in results and len(results) > 1:  # a part that collected nothing, where the others did
        results.pop(folder)
    return _Ran(results, _merged_exit([r.exit_code for r in ran]), max(r.duration for r in ran),
                "; ".join(f"part {i + 1} of {len(ran)}: {r.crash}" for i, r in enumerate(ran) if r.crash) or None)


def shard_selectors(tree: Path, selectors: tuple[str, ...], shards: int) -> list[tuple[str, ...]]:
    """``selectors`` (one folder, then ``--deselect`` options) as up to ``shards`` selections of its test files,
    balanced by size, that together collect what the folder does; ``[]`` where that cannot be known here: not
    one folder, or a pytest configuration or conftest that changes which files are collected
    (``python_files``, ``norecursedirs``, ``collect_ignore``, ``pytest_ignore_collect``, ``--ignore``,
    ``confcutdir``). Folders pytest does not walk into by default (``build``, ``venv``, dot-folders…) are
    left out, as a run of the folder leaves them."""
    paths = [s for s in selectors if not s.startswith("--")]
    if len(paths) != 1 or "::" in paths[0] or not (tree / paths[0]).is_dir():
        return []
    folder = tree / paths[0]
    configs = [tree / name for name in PYTEST_CONFIG_FILES]
    conftests = [*(p / "conftest.py" for p in [folder, *folder.parents] if tree in [p, *p.parents]),
                 *folder.rglob("conftest.py")]
    for f in [*configs, *conftests]:
        text = f.read_text(errors="replace") if f.is_file() else ""
        if any(word in text for word in ("python_files", "norecursedirs", "collect_ignore", "pytest_ignore_collect",
                                         "--ignore", "confcutdir")):
            return []
    options = tuple(s for s in selectors if s.startswith("--"))
    deselected = [o.split("=", 1)[1] for o in options if o.startswith("--deselect=")]
    tests = sorted(p for p in folder.rglob("*.py") if (p.name.startswith("test_") or p.name.endswith("_test.py"))
                   and not any(part == "__pycache__" or any(fnmatch.fnmatch(part, d) for d in NORECURSEDIRS)
                               for part in p.relative_to(folder).parts[:-1])
                   and not any(covers(d, p.relative_to(tree).as_posix()) for d in deselected))
    if len(tests) < 2:
        return []
    bins: list[list[Path]] = [[] for _ in range(min(shards, len(tests)))]
    sizes = [0] * len(bins)
    for test in sorted(tests, key=lambda p: -p.stat().st_size):  # largest first, each to the lightest part
        i = sizes.index(min(sizes))
        bins[i].append(test)
        sizes[i] += test.stat().st_size
    return [(*(p.relative_to(tree).as_posix() for p in sorted(b)), *options) for b in bins]


def _merged_exit(codes: list[int]) -> int:
    """One exit code for runs that are parts of one: the first abnormal one, else 1 if any test failed, else 0 if
    any ran, else 5 (pytest's "no tests collected")."""
    abnormal = [c for c in codes if c not in (0, 1, 5)]
    return abnormal[0] if abnormal else 1 if 1 in codes else 0 if 0 in codes else 5


def _selected_once(job: SuiteJob, suite: Suite, label: str, files: Mapping[str, bytes | None], tree: Path,
                   selectors: tuple[str, ...], *, alone: bool = False, wanted: Sequence[str] | None = None) -> _Ran:
    """One pytest run of ``selectors`` (see _selected); ``wanted``: the selectors whose tests are read from it
    (a part of a folder's run: the folder), else the run's own."""

    timeout = suite.timeout or job.timeout
    config = RunConfig(label, job.package, files, tree, selectors, job.workdir / "runs" / slug(label), timeout,
                       job.progress, alone)
    outcome, not_found = run_pytest(job.runner, config, job.progress)
    job.seconds[label] = round(outcome.duration, 1)
    crash = crash_reason(outcome, selectors, not_found, timeout)
    if crash:
        job.progress(f"{label}: {crash}")
    if wanted is None:
        wanted = [s for s in selectors if not s.startswith("--")]
    results = {r.nodeid: r for r in select(_unless_deselected(outcome, suite), wanted, not_found)}
    return _Ran(results, outcome.exit_code, outcome.duration, crash)


def _unless_deselected(outcome: RunOutcome, suite: Suite) -> RunOutcome:
    """Drop what the suite deselects, should pytest have reported it anyway (a file that failed to import)."""
    if not suite.deselect:
        return outcome
    kept = {n: r for n, r in outcome.results.items() if not any(covers(d, n) for d in suite.deselect)}
    return replace(outcome, results=kept)


def _label(suite: Suite) -> str:
    return f"suite {suite.path}"


def _tail(text: str, limit: int = 1500) -> str:
    return text[-limit:]
