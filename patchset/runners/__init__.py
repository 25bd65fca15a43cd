"""Where upstream tests run: the interface every runner implements.

A runner gets one *configuration* at a time (the series, or the series minus
a patch): the package files that configuration changes, a prepared test
tree and the node ids to run. It returns what pytest said about each node
id. It decides nothing: which configurations exist, which tests prove which
patch, and what the results mean live in :mod:`patchset.verbs.test`, so that
the venv runner (CPU) and the image runner (Docker, GPUs) agree.

What every runner shares lives here and in the small modules next to it:
the pytest command line (:func:`pytest_args`), the pytest plugin shipped in
``data/`` (:data:`PLUGIN_DIR`), JUnit parsing (:mod:`.junit`), the overlay
of patched files (:mod:`.overlay`) and what upstream tests need to run
offline (:mod:`.offline`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from patchset.core.words import Word

#: A progress line for humans (stderr); verbs and runners never print.
Progress = Callable[[str], None]

#: The folder holding ``patchset_pytest_plugin.py``: put it on PYTHONPATH and pass ``-p PLUGIN``.
PLUGIN_DIR = Path(__file__).with_name("data")
PLUGIN = "patchset_pytest_plugin"



class Outcome(Word):
    """What pytest said about one test (junit.py reads it from the JUnit XML)."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"


PASSED, FAILED, ERROR, SKIPPED = Outcome.PASSED, Outcome.FAILED, Outcome.ERROR, Outcome.SKIPPED


def no_progress(_: str) -> None:
    return None


@dataclass(frozen=True)
class NodeResult:
    """What pytest said about one collected test (a node id, parameters included)."""

    nodeid: str
    outcome: Outcome
    message: str = ""  # the skip reason, or the failure's one-line summary
    detail: str = ""  # the traceback tail, for failures and errors
    duration: float = 0.0


@dataclass(frozen=True)
class RunConfig:
    """One configuration to test.

    ``files`` holds, in repository layout (``vllm/...``), the content of every
    package file the manifest's series touches, as this configuration has it
    (None: the file does not exist). A runner shows the package with exactly
    these files replaced, never by changing the installed package itself.
    """

    label: str  # "series", "without offload-finished-watermark", ...
    package: str  # the import package, e.g. "vllm"
    files: Mapping[str, bytes | None]
    tree: Path  # the test tree: holds tests/ (patched) and upstream's pytest config
    selectors: tuple[str, ...]  # node ids, files or folders relative to ``tree``
    workdir: Path  # scratch space of this configuration on the host (junit, logs, overlay)
    timeout: float | None = None
    progress: Progress = no_progress
    #: Run as the serial path runs, whatever the jobs: a fresh process with no other configuration of this
    #: proof beside it. The re-runs that decide a regression are made so: a timing-sensitive test that fails
    #: only when its processes wait for a core must not be called a regression of the series.
    alone: bool = False

    def package_files(self) -> dict[str, bytes | None]:
        """``files`` relative to the package folder (``distributed/...`` for ``vllm/distributed/...``)."""
        prefix = self.package + "/"
        return {p[len(prefix):]: c for p, c in self.files.items() if p.startswith(prefix)}


@dataclass
class RunOutcome:
    """One pytest run as a runner saw it: each test's result, the exit code, the time and the output's tail."""

    results: dict[str, NodeResult]  # by node id
    exit_code: int  # pytest's (0 all passed, 1 failures, 2 interrupted, 4 usage, 5 none collected); -1: timeout
    duration: float
    command: list[str] = field(default_factory=list)
    output: str = ""  # the tail of pytest's output
    junit: Path | None = None
    report_problem: str | None = None  # why the JUnit report is missing or unreadable; None when it was read


@runtime_checkable
class Runner(Protocol):
    """Runs pytest for a configuration somewhere: a local venv, a container."""

    name: str  # "venv", "image"

    @property
    def needs_accelerator_reason(self) -> str | None:
        """Why GPU-only tests cannot run here, or None if they can."""
        ...

    def prepare(self, project: str, version: str, progress: Progress) -> str:
        """Make the environment for ``version`` ready (build, pull, cache); say what it is."""
        ...

    def run(self, config: RunConfig) -> RunOutcome: ...


def pytest_args(selectors: tuple[str, ...], *, junit: str, rootdir: str) -> list[str]:
    """The arguments after ``python -m pytest``, the same for every runner.

    ``-p no:cacheprovider`` keeps pytest from writing into the tree; the
    plugin records each item's node id in the JUnit XML, so results map back
    to node ids exactly, parameters included. A file that fails to import
    must not stop the others (pytest otherwise runs nothing at all).
    """
    return ["-p", PLUGIN, "-p", "no:cacheprovider", "-q", "-rfEs", "--color=no", "--continue-on-collection-errors",
            f"--rootdir={rootdir}", f"--junitxml={junit}", "-o", "junit_family=xunit2",
            "-o", "junit_duration_report=call", *selectors]


def junit_env(*, skip_global_cleanup: bool) -> dict[str, str]:
    """Environment the plugin reads."""
    return {"PATCHSET_SKIP_GLOBAL_CLEANUP": "1" if skip_global_cleanup else "0"}

