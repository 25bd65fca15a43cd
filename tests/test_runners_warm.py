"""The warm interpreter: configurations forked from it, side by side, say what one process each says.

A tiny real project (test_verbs_test's shape): six patches, each on a module of its own, each with
a test it adds, so one proof meets every way a run ends: proven, not-discriminating, failing, and
negative controls that crash (SIGSEGV), are killed (SIGKILL) and hang past the timeout.
"""

from __future__ import annotations

import compileall
import json
import os
import shutil
import signal
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers import stable, udiff, write_patch

from patchset.cache import Cache
from patchset.core.manifest_load import load_manifest
from patchset.report import testreport
from patchset.runners import warm
from patchset.runners.venv import PythonEnv, VenvRunner
from patchset.sources.local import DirSource
from patchset.verbs import proof
from patchset.verbs import test as vt

MODULE = "def value():\n    return 1\n"
TIMEOUT = 20  # the hanging control waits this long, twice; a loaded 2-core machine needs the margin

#: patch id -> (the module as the fix leaves it, the test the patch adds)
PATCHES = {
    "proven": ("def value():\n    return 2\n", "assert value() == 2"),
    "useless": ("def value():\n    return 2\n", "assert value() in (1, 2)"),
    "failing": ("def value():\n    return 3\n", "assert value() == 2"),
    "crashes": ("def value():\n    return 2\n",
                "if value() != 2:\n        os.kill(os.getpid(), signal.SIGSEGV)"),
    "killed": ("def value():\n    return 2\n",
               "if value() != 2:\n        os.kill(os.getpid(), signal.SIGKILL)"),
    "hangs": ("def value():\n    return 2\n",
              "while value() != 2:\n        time.sleep(0.2)"),
}


def project(root: Path) -> tuple[Path, Path, Path]:
    """(pristine source tree, site-packages, manifest) of the six-patch toy series."""
    src, site = root / "src", root / "site"
    (src / "toypkg").mkdir(parents=True)
    (src / "toypkg" / "__init__.py").write_text("")
    for pid in PATCHES:
        (src / "toypkg" / f"{pid}.py").write_text(MODULE)
    (src / "tests").mkdir()
    (src / "tests" / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    (src / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    shutil.copytree(src / "toypkg", site / "toypkg")
    compileall.compile_dir(site, quiet=1)
    entries = []
    for pid, (fixed, body) in PATCHES.items():
        test = (f"import os\nimport signal\nimport time\n\nfrom toypkg.{pid} import value\n\n\n"
                f"def test_{pid}():\n    {body}\n")
        text = udiff(f"toypkg/{pid}.py", MODULE, fixed) + udiff(f"tests/test_{pid}.py", "", test).replace(
            f"--- a/tests/test_{pid}.py", "--- /dev/null")
        write_patch(root, f"recipes/{pid}.patch", text)
        entries.append(f"  - id: {pid}\n    patch: recipes/{pid}.patch\n"
                       f"    tests: [\"tests/test_{pid}.py::test_{pid}\"]\n")
    manifest = root / "patches.yaml"
    manifest.write_text('schema: 1\nupstream: {pypi: toypkg}\ntargets:\n  "1.0": {}\n'
                        'suites: ["tests/test_nothing.py"]\npatches:\n' + "".join(entries))
    return src, site, manifest


def prove(root: Path, jobs: int, name: str) -> proof.ProofReport:
    src, site, manifest = root / "src", root / "site", root / "patches.yaml"
    runner = VenvRunner(PythonEnv(Path(sys.executable), site, "this interpreter"), cpu=False)
    work = root / name
    work.mkdir()
    options = proof.ProofOptions(timeout=TIMEOUT, jobs=jobs)
    return vt.prove(load_manifest(manifest), "1.0", runner, DirSource(src), workdir=work, options=options,
                    cache=Cache(root / f"cache-{name}"))


EXPECTED = {"proven": "proven", "useless": "not-discriminating", "failing": "failing", "crashes": "inconclusive",
            "killed": "inconclusive", "hangs": "inconclusive"}


def _doc(report: proof.ProofReport) -> object:
    """The JSON document less its timings (they differ from run to run; nothing else may)."""
    return stable(json.loads(testreport.render_json(report)), {"duration", "seconds"})


@pytest.mark.slow
def test_side_by_side_forked_runs_give_the_serial_paths_verdicts_and_json(tmp_path):
    project(tmp_path)
    serial = prove(tmp_path, 1, "serial")
    fast = prove(tmp_path, 3, "fast")
    assert {p.id: str(p.verdict) for p in serial.patches} == EXPECTED
    assert _doc(fast) == _doc(serial)
    assert (serial.jobs, fast.jobs, fast.warnings, serial.warnings) == (1, 3, [], [])
    by_id = {p.id: p for p in fast.patches}
    assert by_id["crashes"].without_fix.exit_code == -signal.SIGSEGV
    assert "Fatal Python error: Segmentation fault" in by_id["crashes"].reason
    assert by_id["killed"].without_fix.exit_code == -signal.SIGKILL and "killed by signal 9" in by_id["killed"].reason
    assert by_id["hangs"].without_fix.exit_code == -1 and f"timed out after {TIMEOUT} s" in by_id["hangs"].reason
    assert fast.peak_rss_mb > 0


def test_each_configuration_imports_the_package_from_its_own_overlay(tmp_path):
    src, site, _ = project(tmp_path)
    report = prove(tmp_path, 2, "fast")  # `proven` is only proven if the two configurations differ
    assert str(next(p for p in report.patches if p.id == "proven").verdict) == "proven"
    # and the warm interpreter never imported it: a package it had imported would be refused (below)


@pytest.mark.parametrize(("module", "why"), [
    ("toypkg", "a warm import imported toypkg, the code under test"),
    ("starts_a_thread", "a warm import started 1 thread(s)"),
])
def test_where_forking_is_not_safe_the_serial_path_runs_with_a_warning(tmp_path, monkeypatch, module, why):
    src, site, _ = project(tmp_path)
    (site / "starts_a_thread.py").write_text("import threading, time\n"
                                             "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n")
    monkeypatch.setattr(warm, "WARM_MODULES", ("pytest", module))
    # the server finds the module in the site the runs' overlays link (the runs set PYTHONPATH themselves)
    report = prove_only(tmp_path, ["proven", "useless"], jobs=2, env={"PYTHONPATH": str(site)})
    assert {p.id: str(p.verdict) for p in report.patches} == {"proven": "proven", "useless": "not-discriminating"}
    assert len(report.warnings) == 1 and why in report.warnings[0] and "one after another" in report.warnings[0]
    # every format says it, not only the table and Markdown
    assert json.loads(testreport.render_json(report))["warnings"] == report.warnings
    props = ET.fromstring(testreport.render_junit(report)).findall("./testsuite/properties/property")
    assert [(p.get("name"), p.get("value")) for p in props] == [("warning", report.warnings[0])]
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert f"::warning::vLLM {report.vllm}: {report.warnings[0]}" in testreport.github_annotations(report)


def test_a_warm_interpreter_that_dies_leaves_the_runs_to_the_serial_path(tmp_path, monkeypatch):
    project(tmp_path)
    started = []
    original = warm.WarmServer.start

    def start_then_die(self):
        why = original(self)
        started.append(self.proc)
        os.killpg(self.proc.pid, signal.SIGKILL)  # the server (and any child) gone before the first run
        self.proc.wait()
        return why

    monkeypatch.setattr(warm.WarmServer, "start", start_then_die)
    report = prove_only(tmp_path, ["proven", "useless"], jobs=2)
    assert started and {p.id: str(p.verdict) for p in report.patches} == {"proven": "proven",
                                                                        "useless": "not-discriminating"}
    assert any("the warm interpreter failed" in w for w in report.warnings)


def prove_only(root: Path, ids: list[str], jobs: int, env: dict[str, str] | None = None) -> proof.ProofReport:
    runner = VenvRunner(PythonEnv(Path(sys.executable), root / "site", "this interpreter", env or {}), cpu=False)
    work = root / f"only-{jobs}"
    work.mkdir()
    options = proof.ProofOptions(patch_ids=tuple(ids), suites=False, timeout=TIMEOUT, jobs=jobs)
    return vt.prove(load_manifest(root / "patches.yaml"), "1.0", runner, DirSource(root / "src"), workdir=work,
                    options=options, cache=Cache(root / "cache"))


def test_jobs_by_default_fit_the_cores_and_the_memory(monkeypatch):
    monkeypatch.setattr(warm, "_mem_available", lambda: 5 << 30)
    monkeypatch.setattr("patchset.parallel.usable_cores", lambda: 8)
    assert warm.default_jobs(6, per_run_bytes=2 << 30) == 2  # memory for two
    assert warm.default_jobs(1, per_run_bytes=2 << 30) == 1
    monkeypatch.setattr(warm, "_mem_available", lambda: 64 << 30)
    assert warm.default_jobs(6, per_run_bytes=2 << 30) == 6
    monkeypatch.setattr("patchset.parallel.usable_cores", lambda: 2)
    assert warm.default_jobs(6, per_run_bytes=2 << 30) == 2
    runner = VenvRunner(PythonEnv(Path(sys.executable), Path("site"), "this interpreter"))
    # the default (no --jobs) is the fast path, as --jobs auto; --jobs 1 the serial one
    assert (vt.side_by_side(runner, None, 6), vt.side_by_side(runner, 0, 6), vt.side_by_side(runner, 1, 6)) == (2, 2, 1)


def test_the_server_script_is_shipped_beside_the_plugin():
    assert warm.SERVER.is_file() and textwrap.dedent(warm.SERVER.read_text()).startswith('"""A warm interpreter')


#: An upstream-shaped test (vLLM's kv_offload tests do this through get_mp_context()): processes started
#: with multiprocessing inside a configuration, by fork and by spawn, must import the package from that
#: configuration's overlay, exactly as the test process does.
GRANDCHILDREN = """import multiprocessing
import subprocess
import sys
import tempfile

import toypkg.proven


def report(queue):
    import toypkg.proven as again

    queue.put((again.value(), again.__file__))


def test_processes_it_starts_see_its_overlay():
    for method in ("fork", "spawn"):
        ctx = multiprocessing.get_context(method)
        queue = ctx.Queue()
        p = ctx.Process(target=report, args=(queue,))
        p.start()
        seen = queue.get(timeout=60)
        p.join(60)
        assert seen == (toypkg.proven.value(), toypkg.proven.__file__), method


def test_programs_it_starts_see_its_overlay():
    # a program, not a multiprocessing child: it finds the package through PYTHONPATH alone (run elsewhere:
    # this toy's tree holds the pristine package, which a program started here would import first)
    out = subprocess.run([sys.executable, "-c", "import toypkg.proven as m; print(m.value(), m.__file__)"],
                         cwd=tempfile.gettempdir(), capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == [str(toypkg.proven.value()), toypkg.proven.__file__], out.stderr
"""


@pytest.mark.slow
def test_processes_a_configurations_tests_start_import_the_package_from_its_overlay(tmp_path):
    src, _, manifest = project(tmp_path)
    (src / "tests" / "test_grandchildren.py").write_text(GRANDCHILDREN)
    manifest.write_text(manifest.read_text().replace('suites: ["tests/test_nothing.py"]',
                                                     'suites: ["tests/test_grandchildren.py"]'))
    runner = VenvRunner(PythonEnv(Path(sys.executable), tmp_path / "site", "this interpreter"), cpu=False)
    (tmp_path / "fast").mkdir()
    report = vt.prove(load_manifest(manifest), "1.0", runner, DirSource(src), workdir=tmp_path / "fast",
                      options=proof.ProofOptions(patch_ids=("proven",), timeout=60, jobs=2),
                      cache=Cache(tmp_path / "cache"))
    assert report.jobs == 2 and report.warnings == []
    (suite,) = report.suites
    # with the series, value() is 2 in the test process: a grandchild that imported the installed
    # package (1), or one the warm interpreter had imported, would differ
    assert [(t.nodeid, str(t.outcome)) for t in suite.run.results] == [
        ("tests/test_grandchildren.py::test_processes_it_starts_see_its_overlay", "passed"),
        ("tests/test_grandchildren.py::test_programs_it_starts_see_its_overlay", "passed")]
    assert str(report.patches[0].verdict) == "proven"


#: Each planted test notes when it ran (the configurations run side by side in the same tree).
TIMED = """import os
import sys
import time


def test_timed():
    start = time.monotonic()
    junit = next(a for a in sys.argv if a.startswith("--junitxml="))
    label = os.path.basename(os.path.dirname(junit))  # the configuration's workdir
    time.sleep(3.0 if label == "first" else 0.5)
    with open(os.environ["TOY_TIMES"], "a") as f:
        f.write(f"{label} {start} {time.monotonic()} {os.getppid()}\\n")
"""


def test_a_rerun_that_decides_a_regression_runs_as_the_serial_path_alone(tmp_path):
    """A timing-sensitive upstream test (kv_offload's test_mp_barrier_unlinks_file_and_survives_sigkill races
    its own worker processes by some milliseconds) can fail only because another configuration shares the
    cores. Its re-runs (RunConfig.alone) must then run as the serial path runs everything: a fresh process,
    nothing beside it."""
    from concurrent.futures import ThreadPoolExecutor

    from patchset.runners import RunConfig

    src, site, _ = project(tmp_path)
    (src / "tests" / "test_timed.py").write_text(TIMED)
    times = tmp_path / "times"
    runner = VenvRunner(PythonEnv(Path(sys.executable), site, "this interpreter", {"TOY_TIMES": str(times)}),
                        cpu=False, jobs=2)

    def run(label: str, alone: bool = False):
        return runner.run(RunConfig(label, "toypkg", {}, src, ("tests/test_timed.py",), tmp_path / label, 60,
                                    alone=alone))

    try:
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(run, "first")
            import time

            time.sleep(0.5)
            again = pool.submit(run, "again", True)
            time.sleep(0.5)
            after = pool.submit(run, "after")
            codes = [f.result().exit_code for f in (first, again, after)]
    finally:
        runner.close()
    assert codes == [0, 0, 0]
    spans = {label: (float(a), float(b), int(parent))
             for label, a, b, parent in (line.split() for line in times.read_text().splitlines())}
    assert spans["first"][1] <= spans["again"][0], "the re-run started while another run was under way"
    assert spans["again"][1] <= spans["after"][0], "a run started beside the re-run"
    # the others are children of the warm interpreter; the re-run is a fresh process, as on the serial path
    assert spans["again"][2] == os.getpid() and spans["first"][2] == spans["after"][2] != os.getpid()


def test_the_warm_interpreter_starts_before_the_first_run_once_its_imports_are_known(tmp_path):
    from patchset.runners import RunConfig

    src, site, _ = project(tmp_path)
    # as importing vLLM imports sysconfig's _sysconfigdata__linux_x86_64-linux-gnu: a module named with hyphens
    (tmp_path / "extra").mkdir()
    (tmp_path / "extra" / "_toydata__linux_x86_64-linux-gnu.py").write_text("")
    for where in (site, src):  # the runs' folder is src here: its toypkg comes first on their path
        with open(where / "toypkg" / "__init__.py", "a") as init:
            init.write(f"\nimport importlib as _il, sys as _sys\n_sys.path.append({str(tmp_path / 'extra')!r})\n"
                       "_il.import_module('_toydata__linux_x86_64-linux-gnu')\n")

    def runner() -> VenvRunner:
        return VenvRunner(PythonEnv(Path(sys.executable), site, "this interpreter"), cpu=False, jobs=2)

    first = runner()
    try:
        first.warm_up("toypkg")  # nothing known of this venv yet: the first run finds what to import
        assert first._warming is not None
        first._warming.join()
        assert first._server is None and not first._server_failed
        config = RunConfig("first", "toypkg", {}, src, ("tests/test_nothing.py",), tmp_path / "first", 60)
        assert first.run(config).exit_code == 0 and first._server is not None
    finally:
        first.close()
    second = runner()
    try:
        second.warm_up("toypkg")
        assert second._warming is not None
        second._warming.join()
        assert second._server is not None and second._server.hello["ready"]  # before any run
        assert second._server.probe is None  # what the first run found was read back, not probed again
        assert "_toydata__linux_x86_64-linux-gnu" in second._server.modules
        config = RunConfig("second", "toypkg", {}, src, ("tests/test_nothing.py",), tmp_path / "second", 60)
        assert second.run(config).exit_code == 0
    finally:
        second.close()


def test_turns_keep_runs_side_by_side_within_the_limit():
    """A suite in parts asks for more runs than the pool has workers: the runner's turns hold the limit."""
    import threading

    turns, lock = warm.Turns(), threading.Lock()
    now, most, beside_alone = [0], [0], []

    def one(alone: bool) -> None:
        with turns.turn(alone, limit=2):
            with lock:
                now[0] += 1
                most[0] = max(most[0], now[0])
                if alone and now[0] != 1:  # read in the test's thread: an assert here would fail no test
                    beside_alone.append(now[0])
            time.sleep(0.05)
            with lock:
                now[0] -= 1

    threads = [threading.Thread(target=one, args=(i == 3,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert most[0] == 2 and now[0] == 0 and beside_alone == []
