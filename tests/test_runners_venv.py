"""The venv runner's parts: overlay, JUnit reading, offline model configs, venv building and caching."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from patchset.cache import Cache
from patchset.errors import PatchsetError
from patchset.runners import ERROR, FAILED, PASSED, PLUGIN, PLUGIN_DIR, SKIPPED, RunConfig, Runner, pytest_args
from patchset.runners import venv as venv_mod
from patchset.runners.junit import parse_junit, read_junit, xml_safe
from patchset.runners.offline import cpu_env, model_configs, write_hf_home
from patchset.runners.overlay import make_overlay
from patchset.runners.venv import MARKER, PythonEnv, VenvBuilder, VenvError, VenvRunner, cpu_requirements
from patchset.sources.index import IndexFile

# --- overlay -----------------------------------------------------------------------------------------------


def test_overlay_links_every_file_and_writes_the_configurations_files(tmp_path):
    pkg = tmp_path / "site" / "pkg"
    (pkg / "sub" / "__pycache__").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "mod.py").write_text("OLD = 1\n")
    (pkg / "sub" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"stale")
    (pkg / "sub" / "gone.py").write_text("")
    (pkg / "data.bin").write_bytes(b"\0")
    (pkg / "untouched" / "deep").mkdir(parents=True)
    (pkg / "untouched" / "deep" / "x.py").write_text("X = 1\n")
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", pkg / "linked")
    root = make_overlay(pkg, tmp_path / "ov", {"sub/mod.py": b"NEW = 1\n", "sub/gone.py": None,
                                               "sub/new/added.py": b"ADDED = 1\n"})
    top = root / "pkg"
    assert (top / "__init__.py").is_symlink() and (top / "data.bin").read_bytes() == b"\0"
    assert (top / "sub" / "mod.py").read_text() == "NEW = 1\n" and not (top / "sub" / "mod.py").is_symlink()
    assert not (top / "sub" / "__pycache__" / "mod.cpython-311.pyc").exists()
    assert not (top / "sub" / "gone.py").exists()
    assert (top / "sub" / "new" / "added.py").read_text() == "ADDED = 1\n"
    assert (top / "linked").is_symlink()
    # a folder the configuration leaves alone is one link, not a farm of links (cheap to make and remove)
    assert (top / "untouched").is_symlink() and (top / "untouched" / "deep" / "x.py").read_text() == "X = 1\n"
    assert not (top / "sub").is_symlink() and not (top / "sub" / "__pycache__").is_symlink()
    assert (pkg / "sub" / "mod.py").read_text() == "OLD = 1\n" and (pkg / "sub" / "gone.py").exists()
    out = subprocess.run([sys.executable, "-c", "import pkg.sub.mod as m; print(m.NEW, m.__file__)"],
                         env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1", str(top / "sub" / "mod.py")]


def test_overlay_drops_the_folders_its_deletions_empty_as_gnu_patch_does(tmp_path):
    pkg = tmp_path / "site" / "pkg"
    (pkg / "grpc" / "proto" / "__pycache__").mkdir(parents=True)
    (pkg / "keep").mkdir()
    for path in ("__init__.py", "grpc/__init__.py", "grpc/proto/gen.py", "keep/a.py", "keep/b.py"):
        (pkg / path).write_text("")
    (pkg / "grpc" / "proto" / "__pycache__" / "gen.cpython-311.pyc").write_bytes(b"stale")
    root = make_overlay(pkg, tmp_path / "ov", {"grpc/__init__.py": None, "grpc/proto/gen.py": None,
                                               "keep/b.py": None})
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*")) == ["pkg", "pkg/__init__.py", "pkg/keep",
                                                                         "pkg/keep/a.py"]
    gone = subprocess.run([sys.executable, "-c", "import pkg.grpc"], env={**os.environ, "PYTHONPATH": str(root)},
                          capture_output=True, text=True)
    assert "No module named 'pkg.grpc'" in gone.stderr  # not an empty namespace package
    assert (pkg / "grpc" / "proto" / "gen.py").exists()


@pytest.mark.parametrize("bad", ["../x.py", "/etc/passwd", ""])
def test_overlay_refuses_paths_outside_the_package(tmp_path, bad):
    (tmp_path / "pkg").mkdir()
    with pytest.raises(PatchsetError):
        make_overlay(tmp_path / "pkg", tmp_path / f"ov{len(bad)}", {bad: b""})


# --- JUnit, through a real pytest run with the plugin ------------------------------------------------------


def run_pytest(tree: Path, *selectors: str) -> tuple[int, dict]:
    junit = tree / "junit.xml"
    env = {**os.environ, "PYTHONPATH": str(PLUGIN_DIR), "PATCHSET_SKIP_GLOBAL_CLEANUP": "1"}
    proc = subprocess.run([sys.executable, "-m", "pytest", *pytest_args(selectors, junit=str(junit),
                                                                       rootdir=str(tree))],
                          cwd=tree, env=env, capture_output=True, text=True)
    return proc.returncode, parse_junit(junit)


def test_junit_results_map_back_to_node_ids(tmp_path):
    tests = tmp_path / "tests"
    (tests / "sub").mkdir(parents=True)
    (tests / "sub" / "test_a.py").write_text(textwrap.dedent('''\
        import pytest

        @pytest.fixture
        def broken_teardown():
            yield
            raise RuntimeError("teardown broke")

        @pytest.mark.parametrize("x", [1, "a/b::c", 3])
        def test_param(x):
            assert x != 3

        def test_skip():
            pytest.skip("needs CUDA 12")

        @pytest.mark.xfail(reason="known")
        def test_xfail():
            assert False

        def test_fail_and_teardown(broken_teardown):
            assert 1 == 2

        class TestGroup:
            def test_in_class(self, request):
                assert request.node.get_closest_marker("skip_global_cleanup") is not None
        '''))
    (tests / "test_broken.py").write_text("import no_such_module_anywhere\n")
    code, results = run_pytest(tmp_path, "tests")
    assert code == 1
    got = {k: (r.outcome, r.message) for k, r in results.items()}
    assert got["tests/sub/test_a.py::test_param[1]"] == (PASSED, "")
    assert got["tests/sub/test_a.py::test_param[a/b::c]"][0] == PASSED
    assert got["tests/sub/test_a.py::test_param[3]"] == (FAILED, "assert 3 != 3")
    assert got["tests/sub/test_a.py::test_skip"] == (SKIPPED, "needs CUDA 12")
    assert got["tests/sub/test_a.py::test_xfail"][0] == SKIPPED
    assert got["tests/sub/test_a.py::test_fail_and_teardown"][0] == FAILED  # the worse of call and teardown
    assert got["tests/sub/test_a.py::TestGroup::test_in_class"] == (PASSED, "")  # the plugin marked it
    assert got["tests/test_broken.py"][0] == ERROR
    assert "no_such_module_anywhere" in results["tests/test_broken.py"].detail


def test_children_a_test_leaves_behind_do_not_keep_pytest_from_exiting(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_leak.py").write_text(textwrap.dedent('''\
        import multiprocessing
        import time


        def test_leaves_a_child_behind():
            multiprocessing.get_context("spawn").Process(target=time.sleep, args=(600,)).start()
            assert False, "failed midway"
        '''))
    env = {**os.environ, "PYTHONPATH": str(PLUGIN_DIR)}
    cmd = [sys.executable, "-m", "pytest", *pytest_args(("tests",), junit=str(tmp_path / "j.xml"),
                                                        rootdir=str(tmp_path))]
    code, output, _ = venv_mod.run_streaming(cmd, cwd=tmp_path, env=env, timeout=120, log=tmp_path / "log",
                                             progress=lambda s: None, label="x")
    assert code == 1, output  # pytest's own exit code, not a kill (-1) at the timeout
    assert parse_junit(tmp_path / "j.xml")["tests/test_leak.py::test_leaves_a_child_behind"].outcome == FAILED


def test_a_missing_or_cut_off_junit_file_means_no_results_and_a_problem(tmp_path):
    assert parse_junit(tmp_path / "nope.xml") == {}
    assert read_junit(tmp_path / "nope.xml") == ({}, "pytest wrote no JUnit report (nope.xml)")
    (tmp_path / "bad.xml").write_text("<testsuites><testsuite>")
    results, problem = read_junit(tmp_path / "bad.xml")
    assert results == {} and problem is not None and "not well-formed" in problem


def test_junit_parses_when_tests_print_control_characters(tmp_path):
    # upstream's own pytest config: everything captured goes into the report, and a suite name
    # pytest writes without escaping; the tests print and fail with terminal codes and NULs
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\njunit_logging = "all"\njunit_suite_name = "vllm\\u001b[1m"\n')
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_ctl.py").write_text(textwrap.dedent('''\
        import sys

        import pytest


        def test_prints():
            print("\\x1b[31mred\\x1b[0m nul \\x00 bell \\x07 \\x0b\\x0c del \\x7f \\ufffe")
            sys.stderr.write("err \\x00\\x01\\x1b\\n")


        def test_fails():
            print("\\x00\\x1b")
            assert False, "bad \\x1b[1m\\x00 value"


        def test_skips():
            pytest.skip("needs \\x1b[33mCUDA\\x00")
        '''))
    code, _ = run_pytest(tmp_path, "tests")
    assert code == 1
    raw = (tmp_path / "junit.xml").read_bytes()
    assert b"\x1b" in raw  # pytest itself wrote a report no XML parser accepts as it is
    results, problem = read_junit(tmp_path / "junit.xml")
    assert problem is None
    got = {k: (r.outcome, r.message) for k, r in results.items()}
    assert got == {"tests/test_ctl.py::test_prints": (PASSED, ""),
                   "tests/test_ctl.py::test_fails": (FAILED, "AssertionError: bad #x1B[1m#x00 value"),
                   "tests/test_ctl.py::test_skips": (SKIPPED, "needs #x1B[33mCUDA#x00")}


@pytest.mark.parametrize(("text", "safe"), [
    ("a\x1bb", "a#x1Bb"), ("\x00", "#x00"), ("&#27;", "#x1B"), ("&#x0;", "#x00"), ("&#xD800;", "#xD800"),
    ("&#38;&#x41;", "&#38;&#x41;"), ("tab\tnl\ncr\r", "tab\tnl\ncr\r"), ("\ufffe", "#xFFFE"), ("é", "é"),
])
def test_xml_safe_spells_what_xml_cannot_hold_as_pytest_does(text, safe):
    assert xml_safe(text) == safe


# --- offline model configs ------------------------------------------------------------------------------


def test_the_opt_125m_config_is_shipped_as_the_facts_describe(tmp_path):
    cfg = json.loads(model_configs()["facebook/opt-125m"])
    assert (cfg["model_type"], cfg["architectures"], cfg["hidden_size"], cfg["num_hidden_layers"],
            cfg["num_attention_heads"], cfg["ffn_dim"], cfg["vocab_size"], cfg["max_position_embeddings"]) == (
        "opt", ["OPTForCausalLM"], 768, 12, 12, 3072, 50272, 2048)
    home = write_hf_home(tmp_path / "hf")
    repo = home / "hub" / "models--facebook--opt-125m"
    rev = (repo / "refs" / "main").read_text()
    assert len(rev) == 40 and json.loads((repo / "snapshots" / rev / "config.json").read_text()) == cfg
    env = cpu_env(home)
    assert env["VLLM_TARGET_DEVICE"] == "cpu" and env["HF_HUB_OFFLINE"] == "1" and env["HF_HOME"] == str(home)


def test_the_plugin_is_a_data_file_next_to_the_package():
    assert (PLUGIN_DIR / f"{PLUGIN}.py").is_file()


# --- requirements -------------------------------------------------------------------------------------


def test_cpu_requirements_leave_out_cuda_and_extras():
    meta = textwrap.dedent('''\
        Metadata-Version: 2.1
        Name: vllm
        Version: 0.29.0
        Requires-Dist: regex
        Requires-Dist: fastapi[standard]<0.137.0,>=0.133.0
        Requires-Dist: six>=1.16.0; python_version > "3.11"
        Requires-Dist: torch==2.13.0
        Requires-Dist: torchvision==0.28.0
        Requires-Dist: flashinfer-python==0.6.18
        Requires-Dist: nvidia-cutlass-dsl[cu13]==4.6.2
        Requires-Dist: numba==0.65.0
        Requires-Dist: PyNvVideoCodec==2.0.4
        Requires-Dist: pandas; extra == "bench"

        ''')
    keep, dropped, torch = cpu_requirements(meta)
    assert keep == ["regex", "fastapi[standard]<0.137.0,>=0.133.0", 'six>=1.16.0; python_version > "3.11"']
    assert [d.split("=")[0].split("[")[0] for d in dropped] == [
        "torch", "torchvision", "flashinfer-python", "nvidia-cutlass-dsl", "numba", "PyNvVideoCodec"]
    assert torch == "2.13.0"


# --- building and caching the venv -------------------------------------------------------------------


@pytest.fixture
def fake_index(monkeypatch):
    from patchset.sources import index

    wheel = IndexFile("vllm-9.9.9-cp38-abi3-manylinux_2_28_x86_64.whl", "http://index.invalid/w.whl", "ab" * 32)
    monkeypatch.setattr(index, "wheel", lambda project, version, tags=None: wheel)
    return wheel


def test_a_failed_build_leaves_nothing_behind_and_a_finished_one_is_reused(tmp_path, fake_index, monkeypatch):
    cache = Cache(tmp_path / "cache")
    lines: list[str] = []
    builder = VenvBuilder(cache, progress=lines.append)

    def broken(self, final, project, version, wheel):
        tmp = final.parent / f".{final.name}.part-x"
        tmp.mkdir(parents=True)
        raise VenvError("pip failed halfway")

    monkeypatch.setattr(VenvBuilder, "_build", broken)
    with pytest.raises(VenvError):
        builder.venv_for("vllm", "9.9.9")
    venvs = cache.path("venvs")
    assert not [p for p in venvs.iterdir() if not p.name.startswith(".")]

    def finished(self, final, project, version, wheel):
        (final / "bin").mkdir(parents=True)
        os.symlink(sys.executable, final / "bin" / "python")
        (final / "lib").mkdir()
        (final / MARKER).write_text(json.dumps({"site_packages": "lib", "torch": "2.13.0+cpu"}))
        finished.calls += 1

    finished.calls = 0
    monkeypatch.setattr(VenvBuilder, "_build", finished)
    env = builder.venv_for("vllm", "9.9.9")
    assert not list(venvs.glob(".*.part-*"))  # a dead builder's leftovers go once the lock is held
    again = builder.venv_for("vllm", "9.9.9")
    assert finished.calls == 1 and env == again
    assert env.site_packages.name == "lib" and "ab" * 8 in str(env.python)
    assert any("reusing" in line for line in lines)


def test_the_torch_check_refuses_a_cuda_build(tmp_path, monkeypatch):
    builder = VenvBuilder(Cache(tmp_path))

    def fake_check(cmd, cwd):
        if "--dry-run" in cmd:
            report = Path(cmd[cmd.index("--report") + 1])
            report.write_text(json.dumps({"install": [
                {"metadata": {"name": "torch", "version": "2.13.0"}},
                {"metadata": {"name": "nvidia-cublas", "version": "13.0"}}]}))
        else:
            raise AssertionError("must not install")

    monkeypatch.setattr(builder, "_check", fake_check)
    with pytest.raises(VenvError, match="CUDA build of torch"):
        builder._install_torch(["pip", "install"], "python", "2.13.0", [], tmp_path)


def test_the_venv_runner_is_a_runner():
    assert isinstance(VenvRunner(PythonEnv(Path(sys.executable), Path("."))), Runner)


def test_run_config_package_files_strip_the_package_folder(tmp_path):
    c = RunConfig("x", "vllm", {"vllm/a/b.py": b"1", "tests/t.py": b"2", "vllmx/c.py": b"3"}, tmp_path, (),
                  tmp_path)
    assert c.package_files() == {"a/b.py": b"1"}


def test_a_pytest_run_that_exceeds_its_timeout_is_killed(tmp_path):
    log = tmp_path / "log"
    code, output, secs = venv_mod.run_streaming(
        [sys.executable, "-c", "import time; print('started', flush=True); time.sleep(60)"], cwd=tmp_path,
        env=dict(os.environ), timeout=1, log=log, progress=lambda s: None, label="x")
    assert code == -1 and secs < 30 and "killed after" in output


# --- the real thing ----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.network
def test_patchset_test_proves_the_real_series_on_vllm_0_29_0(tmp_path):
    """The CI job: a real CPU venv for vLLM 0.29.0 (cached in $PATCHSET_CACHE), the real series."""
    repo = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-m", "patchset", "test", "--vllm", "0.29.0", "--venv", "--format", "json",
                          "--manifest", str(repo / "patches.yaml")], cwd=repo, capture_output=True, text=True,
                         timeout=3600)
    assert out.returncode == 0, out.stdout + out.stderr[-5000:]
    data = json.loads(out.stdout)
    assert data["ok"]
    verdicts = {p["id"]: p["verdict"] for p in data["patches"]}
    assert verdicts == {"offload-finished-watermark": "proven", "offload-recurrent-load-boundary": "proven",
                        "offload-mtp-eagle-serve": "proven"}
    for p in data["patches"]:  # the negative control ran and really failed, the fix really passed
        assert p["without_fix"]["failed"] > 0 and p["without_fix"]["crash"] is None, p["id"]
        assert p["with_fix"]["failed"] == p["with_fix"]["error"] == 0 and p["with_fix"]["passed"] > 0, p["id"]
    connector = data["suites"][0]
    assert connector["path"] == "tests/v1/kv_connector/unit/offloading_connector"
    assert connector["ok"] and connector["passed"] > 300 and connector["regressions"] == []
    assert all(s["ok"] for s in data["suites"])


DAMAGED = [b"", b"{", b"5", b"\xff", b"[" * 100_000 + b"]" * 100_000]


@pytest.mark.parametrize("content", [*DAMAGED, b"[]", b"{}", b'{"site_packages": 1}', b'{"site_packages": "/usr/lib"}',
                                     b'{"site_packages": "../../lib"}', b'{"site_packages": ""}',
                                     b'{"site_packages": "."}'])  # the venv itself: found by the long run (issue 26)
def test_a_damaged_venv_marker_is_no_finished_venv(tmp_path, content):
    """Found writing the cache-entries fuzz target (issue 26): a marker that is not the JSON the build writes
    failed the run (ValueError, KeyError, RecursionError) or led outside the venv; now the venv is built again."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").write_text("")
    (tmp_path / venv_mod.MARKER).write_bytes(content)
    assert venv_mod.read_marker(tmp_path / venv_mod.MARKER) is None
    assert not venv_mod.VenvBuilder._complete(tmp_path)
    (tmp_path / venv_mod.MARKER).write_text(json.dumps({"site_packages": "lib/python3.11/site-packages"}))
    assert venv_mod.VenvBuilder._complete(tmp_path)


@pytest.mark.parametrize("content", [*DAMAGED, b'"vllm"', b"[1]", b'["vllm; x"]', b'[""]', b'{"vllm": 1}'])
def test_damaged_probed_modules_are_probed_again(tmp_path, content):
    """Found writing the cache-entries fuzz target (issue 26): `tuple(5)` raised TypeError."""
    (tmp_path / "w.json").write_bytes(content)
    assert venv_mod.read_probed(tmp_path / "w.json") is None
    (tmp_path / "w.json").write_text('["vllm", "vllm.config", "tests.conftest"]')
    assert venv_mod.read_probed(tmp_path / "w.json") == ("vllm", "vllm.config", "tests.conftest")


def test_probed_modules_keep_cpythons_own_hyphenated_module(tmp_path):
    """Every real probe lists sysconfig's data module; refusing its name made every run probe again (8-10 s)."""
    names = ["torch", "_sysconfigdata__linux_x86_64-linux-gnu", "vllm.config"]
    (tmp_path / "w.json").write_text(json.dumps(names))
    assert venv_mod.read_probed(tmp_path / "w.json") == tuple(names)
