"""One pytest run through a runner, and what its outcome says about the tests it was asked for.

Shared by ``patchset test``'s proofs (:mod:`patchset.verbs.test`) and its suites
(:mod:`patchset.verbs.suites`): the test tree a run reads, which results a selector names, why a run
cannot be read as test outcomes (a crash, a timeout) and which results only say an accelerator was missing.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from patchset.runners import NodeResult, Outcome, Progress, RunConfig, Runner, RunOutcome

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
        for text in (r.message, last_error_line(r.detail)):
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
                why = f"pytest exited with code {outcome.exit_code}: {_crash_line(outcome.output)}"
            hits = [NodeResult(s, Outcome.ERROR, why)]
        for r in hits:
            out.setdefault(r.nodeid, r)
    return list(out.values())


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


_NOT_FOUND = re.compile(r"ERROR: (?:file or directory )?not found: (.+?)\s*$", re.M)


def run_pytest(runner: Runner, config: RunConfig, progress: Progress) -> tuple[RunOutcome, dict[str, str]]:
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


def slug(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9._-]+", "-", text).strip("-")


def _last_output_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no output"


def _crash_line(text: str) -> str:
    """The line that says why pytest died: faulthandler's, else the last one."""
    fatal = re.search(r"^Fatal Python error: .*$", text, re.M)
    return fatal.group(0)[:300] if fatal else _last_output_line(text)


def last_error_line(text: str) -> str:
    for line in reversed(text.splitlines()):
        if line.startswith("E   "):
            return line[4:].strip()
    return ""
