"""Suites judged against the pristine release, end to end on the tiny real project of test_verbs_test.

Real pytest runs through the venv runner (this interpreter), a real cache
folder: the pristine run happens once, the next `prove` reuses it.
"""

from __future__ import annotations

import json
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers import stable, udiff
from test_verbs_test import UTIL, WATERMARK, WATERMARK_FIXED, fix_patch, make_project, manifest_with

from patchset.cache import Cache
from patchset.core.manifest_load import load_manifest
from patchset.report import testreport
from patchset.runners.venv import PythonEnv, VenvRunner
from patchset.sources.local import DirSource
from patchset.verbs import baseline as bl
from patchset.verbs import proof
from patchset.verbs import suites as vs
from patchset.verbs import test as vt

REPO = Path(__file__).resolve().parents[1]
TRANSFER = "tests/v1/kv_offload/cpu/test_gpu_worker.py::test_transfer["
KV_OFFLOAD = "tests/v1/kv_offload"
BROKEN_UTIL = UTIL.replace("2 * x", "2 * x + 1")
# fails on the pristine release and with the series alike: a limit of the runner, not the series' doing
PRE_EXISTING = textwrap.dedent('''\
    import pytest


    @pytest.mark.parametrize("device", ["cpu:0", "meta"])
    def test_transfer(device):
        assert device == "meta", "pin_memory is not supported on this platform"
    ''')


def run_prove(root: Path, src: Path, site: Path, manifest: Path, **kw) -> proof.ProofReport:
    """One `patchset test` in a fresh work folder; the cache (and its pristine results) is kept between calls."""
    runner = VenvRunner(PythonEnv(Path(sys.executable), site, "this interpreter"), cpu=False)
    n = len(list(root.glob("work*")))
    work = root / (f"work{n}" if n else "work")
    work.mkdir()
    return vt.prove(load_manifest(manifest), "1.0", runner, DirSource(src), workdir=work,
                    options=proof.ProofOptions(timeout=300, **kw), cache=Cache(root / "cache"))


GPU_ONLY = 'import pytest\n\n\ndef test_kernel():\n    pytest.skip("requires CUDA")\n'


def project_with_suite(tmp_path, patches: dict[str, str], entries: str, suites: str = 'suites: ["tests"]'):
    src, site = make_project(tmp_path)
    (src / "tests" / "test_transfer.py").write_text(PRE_EXISTING)
    (src / "tests" / "test_gpu.py").write_text(GPU_ONLY)
    return src, site, manifest_with(tmp_path, patches, entries, suites=suites)


def by_class(suite) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for t in suite.comparison.tests:
        out.setdefault(t.status, []).append(t.nodeid)
    return out


def regression_project(root: Path):
    """A fix with its test, and a patch that breaks util.double (a regression the suite "tests" names)."""
    return project_with_suite(root, {
        "watermark": fix_patch(WATERMARK_FIXED),
        "oops": udiff("toypkg/util.py", UTIL, BROKEN_UTIL)}, """
        - id: watermark
          patch: recipes/watermark.patch
          tests: ["tests/test_watermark.py::test_final_sampled_token_is_not_offloaded"]
        - id: oops
          patch: recipes/oops.patch
        """)


def test_a_regression_is_named_and_pre_existing_failures_do_not_fail_the_suite(tmp_path):
    src, site, manifest = regression_project(tmp_path)
    report = run_prove(tmp_path, src, site, manifest)
    (s,) = report.suites
    assert by_class(s) == {
        bl.REGRESSION: ["tests/test_util.py::test_double"],
        bl.NEEDS_GPU: ["tests/test_gpu.py::test_kernel"],
        bl.PRE_EXISTING: ["tests/test_transfer.py::test_transfer[cpu:0]"],
        bl.PASSES: ["tests/test_transfer.py::test_transfer[meta]"],
        bl.NEW: ["tests/test_watermark.py::test_final_sampled_token_is_not_offloaded[4]",
                 "tests/test_watermark.py::test_final_sampled_token_is_not_offloaded[9]"]}
    assert not s.ok and not report.ok and s.baseline is not None and not s.baseline.cached
    assert report.patches[0].verdict == "proven"  # the patch verdicts do not change
    pre = s.comparison.of(bl.PRE_EXISTING)[0]
    assert pre.message.startswith("AssertionError: pin_memory is not supported")
    data = json.loads(testreport.render_json(report))["suites"][0]
    assert [r["nodeid"] for r in data["regressions"]] == ["tests/test_util.py::test_double"]
    # run again before the verdict: it fails every time with the series, and passes on the pristine
    # release run once more after those runs (the control)
    assert data["regressions"][0]["pristine"] == ["passed"] * 2 and data["regressions"][0]["patched"] == ["failed"] * 3
    assert [r["nodeid"] for r in data["pre_existing"]] == ["tests/test_transfer.py::test_transfer[cpu:0]"]
    assert data["needs_gpu"] == [{"nodeid": "tests/test_gpu.py::test_kernel", "reason": "requires CUDA"}]
    assert data["fixed"] == data["flaky"] == [] and data["baseline"]["cached"] is False
    assert data["baseline"]["key"] == s.baseline.key and data["result"] == "FAIL"
    md = testreport.render_markdown(report)
    assert md.index("regression** `tests/test_util.py::test_double`") < md.index("| patch |")  # leads
    assert "1 pre-existing: fail on the pristine release too" in md
    cases = {c.get("name"): c for c in ET.fromstring(testreport.render_junit(report)).iter("testcase")}
    assert cases["tests/test_util.py::test_double"].find("failure") is not None
    assert cases["tests/test_transfer.py::test_transfer[cpu:0]"].find("skipped").get("message").startswith(
        "pre-existing")
    assert "regression: tests/test_util.py::test_double" in testreport.render_table(report)


def test_the_pristine_result_is_cached_and_reused(tmp_path):
    src, site, manifest = project_with_suite(tmp_path, {"watermark": fix_patch(WATERMARK_FIXED)}, """
        - id: watermark
          patch: recipes/watermark.patch
        """)
    first = run_prove(tmp_path, src, site, manifest)
    assert first.ok and not first.suites[0].baseline.cached
    # (side by side, the suite's folder runs in parts: runs/pristine-tests-1-of-2, …)
    assert list((tmp_path / "work" / "runs").glob("pristine-tests*/pytest.log"))
    lines: list[str] = []
    second = run_prove(tmp_path, src, site, manifest, progress=lines.append)
    (s,) = second.suites
    assert s.baseline.cached and s.baseline.key == first.suites[0].baseline.key
    assert not list((tmp_path / "work1" / "runs").glob("pristine-tests*"))  # nothing ran on the pristine release
    assert not (tmp_path / "work1" / "pristine-tree").exists()  # nor was its test tree copied
    assert by_class(s) == by_class(first.suites[0])
    assert any("pristine baseline reused from the cache" in line for line in lines)
    assert "pristine baseline reused from the cache" in testreport.render_table(second)
    again = run_prove(tmp_path, src, site, manifest, rebaseline=True)
    assert not again.suites[0].baseline.cached and list((tmp_path / "work2" / "runs").glob("pristine-tests*"))
    # a different pristine test tree is a different baseline
    (src / "tests" / "test_more.py").write_text("def test_more():\n    pass\n")
    assert run_prove(tmp_path, src, site, manifest).suites[0].baseline.key != s.baseline.key


def test_a_fix_the_suite_sees_is_credited_to_the_patch(tmp_path):
    src, site = make_project(tmp_path)
    # the release ships the watermark test already, failing: the series fixes it
    (src / "tests" / "test_watermark.py").write_text(fix_patch(WATERMARK_FIXED) and textwrap.dedent('''\
        from toypkg.watermark import watermark


        def test_final():
            assert watermark(10, 4) == 9
        '''))
    manifest = manifest_with(tmp_path, {"watermark": udiff("toypkg/watermark.py", WATERMARK, WATERMARK_FIXED)}, """
        - id: watermark
          patch: recipes/watermark.patch
          tests: ["tests/test_watermark.py::test_final"]
        """, suites='suites: ["tests"]')
    report = run_prove(tmp_path, src, site, manifest)
    (s,) = report.suites
    (fixed,) = s.comparison.of(bl.FIXED)
    assert fixed.nodeid == "tests/test_watermark.py::test_final" and fixed.patches == ("watermark",)
    assert s.ok and report.ok
    assert json.loads(testreport.render_json(report))["suites"][0]["fixed"][0]["patches"] == ["watermark"]


def test_gpu_suites_do_not_run_without_an_accelerator_and_deselect_is_honoured(tmp_path):
    src, site, manifest = project_with_suite(tmp_path, {"util": udiff("toypkg/util.py", UTIL, UTIL + "\nX = 1\n")},
                                             """
        - id: util
          patch: recipes/util.patch
        """, suites=textwrap.dedent('''\
        suites:
          - path: tests/test_gpu.py
            gpu: true
          - path: tests
            deselect: ["tests/test_transfer.py::test_transfer[cpu:0]", tests/test_gpu.py]
            timeout: 120'''))
    report = run_prove(tmp_path, src, site, manifest)
    gpu, cpu = report.suites
    assert gpu.not_run and "no accelerator" in gpu.not_run and gpu.ok and gpu.result == "needs-gpu"
    assert gpu.run.results == [] and gpu.baseline is None
    assert {r.nodeid for r in cpu.run.results} == {"tests/test_util.py::test_double",
                                                   "tests/test_transfer.py::test_transfer[meta]"}
    assert cpu.ok and report.ok
    data = json.loads(testreport.render_json(report))["suites"]
    assert data[0]["result"] == "needs-gpu" and data[0]["needs_gpu"][0]["nodeid"] == "tests/test_gpu.py"
    assert data[0]["gpu"] is True and data[1]["gpu"] is False


FLAKY = textwrap.dedent('''\
    from pathlib import Path

    from toypkg.util import double

    COUNTER = Path({counter!r})


    def test_sometimes():
        n = int(COUNTER.read_text()) if COUNTER.exists() else 0
        COUNTER.write_text(str(n + 1))
        # runs in order: with the series (0), pristine (1), pristine failures again (2, only if 1 failed),
        # re-runs (then 3, 4), the pristine control (then 5, only if both re-runs failed)
        assert n not in {bad}, "flaked"
        assert double(2) == 4
    ''')


def flaky_project(tmp_path, bad: set[int], breaks: bool):
    src, site = make_project(tmp_path)
    (src / "tests" / "test_flaky.py").write_text(FLAKY.format(counter=str(tmp_path / "counter"), bad=bad))
    after = BROKEN_UTIL if breaks else UTIL + "\nX = 1\n"
    manifest = manifest_with(tmp_path, {"util": udiff("toypkg/util.py", UTIL, after)}, """
        - id: util
          patch: recipes/util.patch
        """, suites='suites: ["tests/test_flaky.py"]')
    # the counter numbers the runs in the serial path's order (side by side, the pristine run is made beside
    # the run with the series: which comes first is a race)
    return run_prove(tmp_path, src, site, manifest, jobs=1).suites[0]


def test_a_flaky_pristine_failure_does_not_hide_a_regression(tmp_path):
    s = flaky_project(tmp_path, {1}, breaks=True)
    (t,) = s.comparison.tests
    assert t.status == bl.REGRESSION and t.pristine == ("failed", "passed", "passed")
    assert t.patched == ("failed", "failed", "failed") and not s.ok


def test_a_failure_the_pristine_control_run_shares_is_not_blamed_on_the_series(tmp_path):
    # the series changes nothing the test uses: it fails with the series (0) and in both re-runs (2, 3) as
    # a loaded machine fails a timing test, and in the pristine control run after them (4)
    s = flaky_project(tmp_path, {0, 2, 3, 4}, breaks=False)
    (t,) = s.comparison.tests
    assert t.status == bl.FLAKY and t.pristine == ("passed", "failed")
    assert t.patched == ("failed", "failed", "failed") and s.comparison.ok


def test_a_test_flaky_both_ways_is_reported_flaky(tmp_path):
    s = flaky_project(tmp_path, {0, 1}, breaks=False)
    (t,) = s.comparison.tests
    assert t.status == bl.FLAKY and t.pristine == ("failed", "passed") and t.patched == ("failed", "passed")
    assert s.comparison.ok  # reported, not a failure (the suite still wants some test to pass on its run)


def test_baseline_keys_change_with_everything_the_pristine_result_depends_on(tmp_path):
    base = vs.baseline_key("vllm", "0.29.0", "venv /v", "t" * 64, ("tests/a",))
    assert base == vs.baseline_key("vllm", "0.29.0", "venv /v", "t" * 64, ("tests/a",))
    assert len({base, vs.baseline_key("vllm", "0.30.0", "venv /v", "t" * 64, ("tests/a",)),
                vs.baseline_key("vllm", "0.29.0", "venv /w", "t" * 64, ("tests/a",)),
                vs.baseline_key("vllm", "0.29.0", "venv /v", "u" * 64, ("tests/a",)),
                vs.baseline_key("vllm", "0.29.0", "venv /v", "t" * 64, ("tests/a", "--deselect=tests/a/x.py"))}) == 5
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "a.py").write_text("1")
    d1 = vs.tree_digest(tmp_path)
    (tmp_path / "tests" / "a.py").write_text("2")
    assert vs.tree_digest(tmp_path) != d1
    # a cached result of another format is not trusted
    cache = Cache(tmp_path / "cache")
    path = cache.put_bytes(json.dumps({"format": 0, "key": base, "runs": []}).encode(), "b.json")
    assert vs.load_baseline(path, base) is None


@pytest.mark.parametrize("content", [
    b"[]", b'"x"', b"[" * 100_000 + b"]" * 100_000, b"\xff\xfe",
    b'{"format": 2, "key": "K", "runs": {"a": 1}}',
    b'{"format": 2, "key": "K", "runs": [[]]}',
    b'{"format": 2, "key": "K", "runs": [{"t": {"outcome": "gone"}}]}',
    b'{"format": 2, "key": "K", "runs": [{"t": "passed"}]}',
    b'{"format": 2, "key": "K", "runs": [{"t": {"outcome": "failed", "message": 1}}]}',
    b'{"format": 2, "key": "K", "runs": [], "seconds": "soon"}',
    b'{"format": 2, "key": "K", "runs": [], "seconds": Infinity}',
])
def test_a_damaged_baseline_is_run_again(tmp_path, content):
    """Found writing the baseline fuzz target (issue 26): AttributeError, KeyError, TypeError, ValueError and
    RecursionError (JSON nested 100,000 deep) from a damaged file."""
    path = tmp_path / "b.json"
    path.write_bytes(content)
    assert vs.load_baseline(path, "K") is None
    path.write_bytes(b'{"format": 2, "key": "K", "runs": [{"t": {"outcome": "failed", "message": "m"}}], "seconds": 2}')
    assert vs.load_baseline(path, "K").runs[0]["t"].message == "m"
    # one written by the format before (its second look at failures ran side by side) is made again
    path.write_bytes(b'{"format": 1, "key": "K", "runs": [{"t": {"outcome": "failed", "message": "m"}}], "seconds": 2}')
    assert vs.load_baseline(path, "K") is None


def test_patches_tests_and_suites_run_separately(tmp_path):
    # the suite is judged on its own run: a patch test named by the suite is in both, with the same outcome
    src, site, manifest = project_with_suite(tmp_path, {"watermark": fix_patch(WATERMARK_FIXED)}, """
        - id: watermark
          patch: recipes/watermark.patch
          tests: ["tests/test_watermark.py"]
        """, suites='suites: ["tests/test_watermark.py"]')
    report = run_prove(tmp_path, src, site, manifest)
    assert report.patches[0].verdict == "proven" and report.suites[0].ok
    assert (tmp_path / "work" / "runs" / "suite-tests-test_watermark.py" / "junit.xml").is_file()


SLOW_WITHOUT_X = textwrap.dedent('''\
    import time

    import toypkg.util as util


    def test_quick_once_x_exists():
        if not hasattr(util, "X"):
            time.sleep(60)
    ''')


def test_a_crashed_run_is_never_judged_and_a_crashed_pristine_run_is_not_cached(tmp_path):
    src, site = make_project(tmp_path)
    (src / "tests" / "test_slow.py").write_text(SLOW_WITHOUT_X)
    suites = "suites:\n  - {path: tests/test_slow.py, timeout: 3}"
    manifest = manifest_with(tmp_path, {"x": udiff("toypkg/util.py", UTIL, UTIL + "\nX = 1\n")},
                             "- {id: x, patch: recipes/x.patch}", suites=suites)
    report = run_prove(tmp_path, src, site, manifest)
    (s,) = report.suites
    # with the series it passes; on the pristine release it runs into the suite's timeout
    assert s.baseline is not None and "the pristine run crashed" in s.baseline.error and s.comparison is None
    assert s.ok and not list((tmp_path / "cache").glob("baselines/*/*.json"))
    assert "no pristine baseline" in testreport.render_table(report)
    broken = manifest_with(tmp_path, {"x": udiff("toypkg/util.py", UTIL, UTIL + "\nY = 1\n")},
                           "- {id: x, patch: recipes/x.patch}", suites=suites)
    (s,) = run_prove(tmp_path, src, site, broken).suites
    assert s.run.crash and "timed out after 3 s" in s.run.crash and not s.ok and s.result == "FAIL"
    assert s.comparison is None and s.baseline is None  # a crash is no evidence either way


def test_cli_rebaseline_and_a_relative_workdir(tmp_path, monkeypatch, capsys):
    from patchset.cli import main

    src, site, manifest = project_with_suite(tmp_path, {"watermark": fix_patch(WATERMARK_FIXED)}, """
        - id: watermark
          patch: recipes/watermark.patch
        """)
    monkeypatch.setenv("PATCHSET_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(vt, "make_runner", lambda image, gpus, device=None: VenvRunner(
        PythonEnv(Path(sys.executable), site, "this interpreter"), cpu=False))
    monkeypatch.chdir(tmp_path)
    args = ["test", "--vllm", "1.0", "--manifest", str(manifest), "--source", f"dir:{src}", "--format", "json"]
    cached = []
    for extra in (["--workdir", "w1"], ["--workdir", "w2"], ["--rebaseline"]):
        assert main(args + extra) == 0
        (s,) = json.loads(capsys.readouterr().out)["suites"]
        assert s["passed"] == 4 and s["pre_existing"][0]["nodeid"].endswith("[cpu:0]")
        cached.append(s["baseline"]["cached"])
    assert cached == [False, True, False]
    assert list((tmp_path / "w1" / "runs").glob("suite-tests*/junit.xml"))  # in parts, side by side


def test_this_repositorys_gpu_suites_run_on_the_gpu_runner():
    """patches.yaml marks the CUDA-only offload tests gpu: true; the images workflow gives them a GPU."""
    import yaml

    suites = load_manifest(REPO / "patches.yaml").suites
    gpu = [s for s in suites if s.gpu]
    (tree,) = [s for s in suites if s.path == KV_OFFLOAD]
    assert gpu and not tree.gpu
    assert {s.path for s in gpu} == set(tree.deselect)  # each runs once wherever a GPU is, never twice
    jobs = yaml.safe_load((REPO / ".github" / "workflows" / "images.yml").read_text())["jobs"]
    runs = [(job["runs-on"], step["run"]) for job in jobs.values() for step in job["steps"]
            if "patchset test" in step.get("run", "")]
    assert runs and all("gpu" in where and "--gpus all" in cmd and "--no-suites" not in cmd for where, cmd in runs)


# --- the real thing: the whole upstream offload tree on vLLM 0.29.0 (CPU venv, shared cache) -------------



def patchset_test(manifest: Path, *extra: str) -> tuple[int, dict, str]:
    import subprocess
    import time

    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "patchset", "test", "--vllm", "0.29.0", "--venv", "--format", "json",
                          "--manifest", str(manifest), *extra], cwd=manifest.parent, capture_output=True, text=True,
                         timeout=5400)
    # measured for the README (printed with -s), never asserted
    print(f"\npatchset test {' '.join(extra)} --manifest {manifest.name}: {time.monotonic() - t0:.0f} s")
    assert out.returncode in (0, 1), out.stdout + out.stderr[-5000:]
    return out.returncode, json.loads(out.stdout), out.stderr


def suite(data: dict, path: str) -> dict:
    (found,) = [s for s in data["suites"] if s["path"] == path]
    return found


@pytest.mark.slow
@pytest.mark.network
def test_the_whole_offload_tree_on_vllm_0_29_0_is_judged_against_the_pristine_release():
    """This repository's manifest: pre-existing CPU failures do not fail it; the second run reuses the baseline."""
    manifest = REPO / "patches.yaml"
    code, first, err = patchset_test(manifest, "--rebaseline")
    assert code == 0, err[-5000:]
    verdicts = {p["id"]: p["verdict"] for p in first["patches"]}
    assert verdicts == {"offload-finished-watermark": "proven", "offload-recurrent-load-boundary": "proven",
                        "offload-mtp-eagle-serve": "proven"}  # unchanged by the suites
    tree = suite(first, KV_OFFLOAD)
    assert tree["ok"] and tree["result"] == "pass" and tree["passed"] > 400 and tree["regressions"] == []
    assert tree["baseline"]["cached"] is False
    pre = [t["nodeid"] for t in tree["pre_existing"]]
    transfers = [n for n in pre if n.startswith(TRANSFER) and "cpu:0" in n]
    assert len(transfers) >= 20, pre
    assert all(t["pristine"][0] in ("failed", "error") for t in tree["pre_existing"])
    gpu = [s for s in first["suites"] if s["gpu"]]
    assert len(gpu) == 2 and all(s["result"] == "needs-gpu" and s["ok"] for s in gpu)
    assert all(not n.startswith("tests/v1/kv_offload/cpu/test_swap_blocks") for n in
               (t["nodeid"] for t in tree["tests"]))  # deselected from the CPU entry

    code, second, err = patchset_test(manifest)
    assert code == 0, err[-5000:]
    again = suite(second, KV_OFFLOAD)
    assert again["baseline"] == {"cached": True, "key": tree["baseline"]["key"]}
    # (the table says "pristine baseline reused from the cache"; JSON says it as baseline.cached, above)
    assert {p["id"]: p["verdict"] for p in second["patches"]} == verdicts
    assert {t["nodeid"] for t in again["pre_existing"]} >= set(transfers)


@pytest.mark.slow
@pytest.mark.network
def test_a_planted_regression_in_the_file_mapper_is_named(tmp_path):
    """A patch with no tests of its own breaks FileMapper.get_config_file_path: the suite names the test."""
    import shutil

    recipe = tmp_path / "recipes" / "planted" / "file-mapper.patch"
    recipe.parent.mkdir(parents=True)
    shutil.copy(REPO / "tests" / "data" / "planted-regression" / "file-mapper.patch", recipe)
    # the same suite entry as this repository's manifest: the pristine result is the same cached one
    entry = next(s for s in load_manifest(REPO / "patches.yaml").suites if s.path == KV_OFFLOAD)
    manifest = tmp_path / "patches.yaml"
    manifest.write_text(textwrap.dedent(f'''\
        schema: 1
        targets: {{"0.29.0": {{}}}}
        suites:
          - path: {KV_OFFLOAD}
            deselect: {json.dumps(list(entry.deselect))}
        patches:
          - id: planted-file-mapper-regression
            releases: "==0.29.0"
            patch: recipes/planted/file-mapper.patch
        '''))
    code, data, err = patchset_test(manifest)
    assert code == 1, err[-5000:]
    tree = suite(data, KV_OFFLOAD)
    assert not tree["ok"] and not data["ok"]
    regressions = [t["nodeid"] for t in tree["regressions"]]
    assert "tests/v1/kv_offload/test_file_mapper.py::test_get_config_file_path" in regressions
    # passed on the pristine release, and again in the control run after the series' re-runs
    assert all(t["pristine"] == ["passed", "passed"] for t in tree["regressions"])
    assert all(not n.startswith(TRANSFER) for n in regressions)  # the CPU limits stay pre-existing


# --- a suite's folder in parts, side by side --------------------------------------------------------------------


def shard_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    (tree / "tests" / "sub").mkdir(parents=True)
    (tree / "tests" / "__pycache__").mkdir()
    for folder in ("build", ".hidden", "venv"):
        (tree / "tests" / folder).mkdir()
    for name, size in {"test_big.py": 900, "test_mid.py": 500, "sub/test_small.py": 300, "sub/util_test.py": 200,
                       "test_gone.py": 100, "helpers.py": 5000, "conftest.py": 10, "__pycache__/test_x.py": 1,
                       "build/test_b.py": 1, ".hidden/test_h.py": 1, "venv/test_v.py": 1}.items():
        (tree / "tests" / name).write_text("#" * size)
    (tree / "pyproject.toml").write_text("[tool.pytest.ini_options]\nmarkers = []\n")
    return tree


def test_a_suite_folder_is_split_into_parts_that_collect_what_it_does(tmp_path):
    tree = shard_tree(tmp_path)
    parts = vs.shard_selectors(tree, ("tests", "--deselect=tests/test_gone.py", "--deselect=tests/test_mid.py::t"), 2)
    # every test file once (pytest's default names), balanced by size, in pytest's order; the options in each part;
    # a file the options deselect whole is left out, as are helpers and what hides in folders pytest does not
    # walk into by default (build, venv, dot-folders, caches)
    options = ("--deselect=tests/test_gone.py", "--deselect=tests/test_mid.py::t")
    assert parts == [("tests/test_big.py", *options),
                     ("tests/sub/test_small.py", "tests/sub/util_test.py", "tests/test_mid.py", *options)]
    assert vs.shard_selectors(tree, ("tests",), 8) == [(f,) for f in [
        "tests/test_big.py", "tests/test_mid.py", "tests/sub/test_small.py", "tests/sub/util_test.py",
        "tests/test_gone.py"]]


@pytest.mark.parametrize("where", ["pyproject.toml", "tests/conftest.py", "tests/sub/conftest.py", "conftest.py"])
@pytest.mark.parametrize("word", ["python_files", "norecursedirs", "collect_ignore", "pytest_ignore_collect",
                                  "--ignore", "confcutdir"])
def test_a_folder_is_run_whole_where_its_configuration_changes_what_is_collected(tmp_path, where, word):
    tree = shard_tree(tmp_path)
    with open(tree / where, "a") as f:
        f.write(f"\n# {word}\n")
    assert vs.shard_selectors(tree, ("tests",), 2) == []


def test_only_one_folder_is_split(tmp_path):
    tree = shard_tree(tmp_path)
    for selectors in [("tests/test_big.py",), ("tests/test_big.py::test_x",), ("tests", "tests/sub"), ("nowhere",),
                      ("tests/sub/util_test.py",)]:
        assert vs.shard_selectors(tree, selectors, 2) == [], selectors
    assert vs.shard_selectors(tree, ("tests",), 1) == [("tests/sub/test_small.py", "tests/sub/util_test.py",
                                                        "tests/test_big.py", "tests/test_gone.py", "tests/test_mid.py")]


def test_parts_exit_as_one_run():
    assert [vs._merged_exit(c) for c in ([0, 0], [0, 1], [5, 0], [5, 5], [1, -9, 2], [0, 4])] == [0, 1, 0, 5, -9, 4]


def test_a_suite_in_parts_side_by_side_gives_the_serial_paths_verdicts_and_json(tmp_path):
    """The regression project above, its suite ("tests", 5 files) run whole (--jobs 1) and in two parts
    (--jobs 2): the same classes, the same document less timings."""
    docs = []
    for jobs in (1, 2):
        root = tmp_path / f"jobs{jobs}"
        src, site, manifest = regression_project(root)
        report = run_prove(root, src, site, manifest, jobs=jobs)
        runs = {p.name for p in (root / "work" / "runs").iterdir()}
        assert ({"suite-tests-1-of-2", "suite-tests-2-of-2"} <= runs) == (jobs == 2), runs  # in parts side by side
        assert ("suite-tests" in runs) == (jobs == 1), runs
        doc = json.loads(testreport.render_json(report))
        docs.append(json.loads(json.dumps(doc).replace(str(root), "ROOT")))
    volatile = {"duration", "seconds", "key"}  # the key names each project's own site-packages
    assert stable(docs[0], volatile) == stable(docs[1], volatile)
    assert [r["nodeid"] for r in docs[1]["suites"][0]["regressions"]] == ["tests/test_util.py::test_double"]


def test_the_second_look_at_pristine_failures_runs_alone(tmp_path, monkeypatch):
    """As the re-runs with the series: a pristine failure the load of runs side by side caused is not kept."""
    src, site, manifest = project_with_suite(tmp_path, {"watermark": fix_patch(WATERMARK_FIXED)}, """
        - id: watermark
          patch: recipes/watermark.patch
        """)
    seen: list[tuple[str, bool]] = []
    original = VenvRunner.run

    def run(self, config):
        seen.append((config.label, config.alone))
        return original(self, config)

    monkeypatch.setattr(VenvRunner, "run", run)
    report = run_prove(tmp_path, src, site, manifest, jobs=2)
    assert report.ok
    assert ("pristine tests (failures again)", True) in seen  # test_transfer[cpu:0] fails on the pristine release
    assert all(not alone for label, alone in seen if "again" not in label and "control" not in label)
