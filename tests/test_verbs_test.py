"""`patchset test` end to end on a tiny real project: real patches, real pytest runs, real overlays.

The project mirrors the vLLM situation at small scale: an installed package
(the "wheel"), a source tree with tests/ (the "sdist"), patches that carry
both a fix and the upstream tests that prove it. Only the interpreter is
this one instead of a venv built for a release.
"""

from __future__ import annotations

import compileall
import json
import shutil
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers import udiff, write_patch

from patchset.cache import Cache
from patchset.core.manifest import load_manifest
from patchset.errors import PatchsetError
from patchset.report import testreport
from patchset.runners import ERROR, FAILED, PASSED, SKIPPED, NodeResult
from patchset.runners.venv import PythonEnv, VenvRunner
from patchset.sources.local import DirSource
from patchset.verbs import test as vt

WATERMARK = textwrap.dedent('''\
    def watermark(num_tokens, num_prompt_tokens):
        """How many tokens of a finished request may be offloaded."""
        return num_tokens
    ''')
WATERMARK_FIXED = WATERMARK.replace("return num_tokens", "return max(num_prompt_tokens, num_tokens - 1)")
WATERMARK_BROKEN_FIX = WATERMARK.replace("return num_tokens", "return num_tokens - 2")
UTIL = "def double(x):\n    return 2 * x\n"
OLD_TESTS = textwrap.dedent('''\
    from toypkg.util import double


    def test_double():
        assert double(2) == 4
    ''')
WATERMARK_TEST = textwrap.dedent('''\
    import pytest

    from toypkg.watermark import watermark


    @pytest.mark.parametrize("prompt", [4, 9])
    def test_final_sampled_token_is_not_offloaded(prompt):
        assert watermark(10, prompt) == 9
    ''')


def make_project(root: Path) -> tuple[Path, Path]:
    """(pristine source tree, site-packages with the package installed and byte-compiled)."""
    src = root / "src"
    (src / "toypkg").mkdir(parents=True)
    (src / "toypkg" / "__init__.py").write_text("")
    (src / "toypkg" / "watermark.py").write_text(WATERMARK)
    (src / "toypkg" / "util.py").write_text(UTIL)
    (src / "tests").mkdir()
    (src / "tests" / "test_util.py").write_text(OLD_TESTS)
    (src / "pyproject.toml").write_text('[tool.pytest.ini_options]\nmarkers = ["upstream_marker"]\n')
    site = root / "site"
    site.mkdir()
    shutil.copytree(src / "toypkg", site / "toypkg")
    # an installer leaves bytecode; a stale .pyc must never run old code under a patched source
    compileall.compile_dir(site, quiet=1)
    return src, site


def fix_patch(after: str, test: str = WATERMARK_TEST) -> str:
    return (udiff("toypkg/watermark.py", WATERMARK, after)
            + udiff("tests/test_watermark.py", "", test).replace("--- a/tests/test_watermark.py",
                                                                 "--- /dev/null"))


def new_file(path: str, text: str) -> str:
    return udiff(path, "", text).replace(f"--- a/{path}", "--- /dev/null")


@pytest.fixture
def project(tmp_path):
    src, site = make_project(tmp_path)
    return tmp_path, src, site


def manifest_with(root: Path, patches: dict[str, str], entries: str, suites: str = "") -> Path:
    for name, text in patches.items():
        write_patch(root, f"recipes/{name}.patch", text)
    head = 'schema: 1\nupstream: {pypi: toypkg}\ntargets:\n  "1.0": {}\n' + (suites + "\n" if suites else "")
    path = root / "patches.yaml"
    path.write_text(head + "patches:\n" + textwrap.indent(textwrap.dedent(entries).strip("\n"), "  ") + "\n")
    return path


def run_prove(root: Path, src: Path, site: Path, manifest: Path, **kw) -> vt.ProofReport:
    runner = VenvRunner(PythonEnv(Path(sys.executable), site, "this interpreter"), cpu=False)
    work = root / "work"
    work.mkdir(exist_ok=True)
    kw.setdefault("cache", Cache(root / "cache"))
    return vt.prove(load_manifest(manifest), "1.0", runner, DirSource(src), workdir=work, timeout=300, **kw)


def verdicts(report: vt.ProofReport) -> dict[str, str]:
    return {p.id: p.verdict for p in report.patches}


def test_a_real_fix_is_proven_and_a_planted_useless_test_is_not_discriminating(project):
    root, src, site = project
    useless_test = "def test_always_true():\n    assert 1 + 1 == 2\n"
    manifest = manifest_with(root, {
        "watermark": fix_patch(WATERMARK_FIXED),
        "useless": udiff("toypkg/util.py", UTIL, UTIL + "\n\ndef triple(x):\n    return 3 * x\n")
        + new_file("tests/test_useless.py", useless_test),
    }, """
        - id: watermark
          patch: recipes/watermark.patch
          tests: ["tests/test_watermark.py::test_final_sampled_token_is_not_offloaded"]
        - id: useless
          patch: recipes/useless.patch
          tests: ["tests/test_useless.py::test_always_true"]
        """, suites='suites: ["tests/test_util.py"]')
    report = run_prove(root, src, site, manifest)
    assert verdicts(report) == {"watermark": "proven", "useless": "not-discriminating"}
    w = report.patches[0]
    # both parameters ran, and both fail on the unfixed package (it counts the final token)
    assert {r.nodeid: r.outcome for r in w.with_fix.results} == {
        "tests/test_watermark.py::test_final_sampled_token_is_not_offloaded[4]": PASSED,
        "tests/test_watermark.py::test_final_sampled_token_is_not_offloaded[9]": PASSED}
    assert w.without_fix.count(FAILED) == 2
    assert w.without_fix.excluded == ("watermark",)
    assert report.suites[0].ok and report.suites[0].run.count(PASSED) == 1
    assert not report.ok  # the useless test proves nothing, so the run must not pass
    assert "prove nothing" in report.patches[1].reason


def test_a_broken_fix_is_failing_with_the_failing_node_ids(project):
    root, src, site = project
    manifest = manifest_with(root, {"broken": fix_patch(WATERMARK_BROKEN_FIX)}, """
        - id: broken
          patch: recipes/broken.patch
          tests: ["tests/test_watermark.py::test_final_sampled_token_is_not_offloaded"]
        """)
    report = run_prove(root, src, site, manifest)
    (p,) = report.patches
    assert p.verdict == "failing"
    assert p.with_fix.failing == ["tests/test_watermark.py::test_final_sampled_token_is_not_offloaded[4]",
                                  "tests/test_watermark.py::test_final_sampled_token_is_not_offloaded[9]"]
    assert "test_final_sampled_token_is_not_offloaded[4]" in p.reason
    assert not report.ok


def test_the_overlay_hides_stale_bytecode_and_leaves_the_installed_package_alone(project):
    root, src, site = project
    before = {p: p.read_bytes() for p in site.rglob("*") if p.is_file()}
    manifest = manifest_with(root, {"watermark": fix_patch(WATERMARK_FIXED)}, """
        - id: watermark
          patch: recipes/watermark.patch
          tests: ["tests/test_watermark.py"]
        """)
    report = run_prove(root, src, site, manifest)
    assert verdicts(report) == {"watermark": "proven"}
    assert {p: p.read_bytes() for p in site.rglob("*") if p.is_file()} == before
    overlay = root / "work" / "runs" / "series" / "overlay" / "toypkg"
    assert (overlay / "watermark.py").read_text() == WATERMARK_FIXED and not (overlay / "watermark.py").is_symlink()
    assert not list((overlay / "__pycache__").glob("watermark.*"))
    assert (overlay / "util.py").is_symlink()
    without = root / "work" / "runs" / "without-watermark" / "overlay" / "toypkg" / "watermark.py"
    assert without.read_text() == WATERMARK


def test_dependants_are_left_out_with_the_patch_they_need(project):
    root, src, site = project
    extended = WATERMARK_FIXED + "\n\ndef finished_watermark(req):\n    return watermark(*req)\n"
    # imported at module level: without the fix the file fails to import, which must count as failing
    dep_test = textwrap.dedent('''\
        from toypkg.watermark import finished_watermark

        def test_finished_watermark():
            assert finished_watermark((10, 4)) == 9
        ''')
    manifest = manifest_with(root, {
        "watermark": fix_patch(WATERMARK_FIXED),
        "follow-up": udiff("toypkg/watermark.py", WATERMARK_FIXED, extended)
        + new_file("tests/test_follow_up.py", dep_test),
    }, """
        - id: watermark
          patch: recipes/watermark.patch
          tests: ["tests/test_watermark.py::test_final_sampled_token_is_not_offloaded"]
        - id: follow-up
          patch: recipes/follow-up.patch
          after: [watermark]
          tests: ["tests/test_follow_up.py::test_finished_watermark"]
        """)
    report = run_prove(root, src, site, manifest)
    assert verdicts(report) == {"watermark": "proven", "follow-up": "proven"}
    assert report.patches[0].without_fix.excluded == ("watermark", "follow-up")
    assert report.patches[1].without_fix.excluded == ("follow-up",)
    (err,) = report.patches[1].without_fix.results
    assert (err.nodeid, err.outcome) == ("tests/test_follow_up.py", ERROR) and "finished_watermark" in err.detail
    assert report.ok


def test_gpu_skips_are_needs_gpu_and_missing_tests_and_no_tests_are_reported(project):
    root, src, site = project
    gpu_test = textwrap.dedent('''\
        import pytest

        def test_on_device():
            pytest.skip("requires a CUDA device (compute capability 9.0)")
        ''')
    manifest = manifest_with(root, {
        "gpu": udiff("toypkg/util.py", UTIL, UTIL + "\nX = 1\n") + new_file("tests/test_gpu.py", gpu_test),
        "typo": fix_patch(WATERMARK_FIXED),
        "untested": udiff("toypkg/util.py", UTIL + "\nX = 1\n", UTIL + "\nX = 2\n"),
    }, """
        - id: gpu
          patch: recipes/gpu.patch
          tests: ["tests/test_gpu.py::test_on_device"]
        - id: typo
          patch: recipes/typo.patch
          tests: ["tests/test_watermark.py::test_final_sampled_token_is_not_offloaded",
                  "tests/test_watermark.py::test_no_such_test"]
        - id: untested
          patch: recipes/untested.patch
          after: [gpu]
        """)
    report = run_prove(root, src, site, manifest)
    v = {p.id: p for p in report.patches}
    assert v["gpu"].verdict == "needs-gpu"
    assert "requires a CUDA device" in v["gpu"].reason
    assert v["gpu"].with_fix.needs_gpu == [("tests/test_gpu.py::test_on_device",
                                            "requires a CUDA device (compute capability 9.0)")]
    # an unknown node id is an error, and it does not stop the other tests from running
    assert v["typo"].verdict == "failing"
    assert v["typo"].with_fix.failing == ["tests/test_watermark.py::test_no_such_test"]
    assert v["typo"].with_fix.count(PASSED) == 2
    assert v["untested"].verdict == "unproven" and v["untested"].ok
    assert not report.ok


def test_a_patch_upstream_in_the_release_is_not_run(project):
    root, src, site = project
    (src / "toypkg" / "watermark.py").write_text(WATERMARK_FIXED)
    manifest = manifest_with(root, {"watermark": fix_patch(WATERMARK_FIXED)}, """
        - id: watermark
          patch: recipes/watermark.patch
          tests: ["tests/test_watermark.py"]
          present: {file: toypkg/watermark.py, contains: "num_tokens - 1"}
        """)
    report = run_prove(root, src, site, manifest)
    assert verdicts(report) == {"watermark": "upstream"}
    assert report.ok and report.patches[0].with_fix is None


def test_a_series_that_does_not_apply_is_refused(project):
    root, src, site = project
    stale = udiff("toypkg/watermark.py", WATERMARK.replace("tokens", "toks"), WATERMARK_FIXED)
    manifest = manifest_with(root, {"stale": stale}, """
        - id: stale
          patch: recipes/stale.patch
          tests: ["tests/test_util.py"]
        """)
    with pytest.raises(PatchsetError, match="does not apply"):
        run_prove(root, src, site, manifest)


def test_reports_have_the_documented_shapes(project):
    root, src, site = project
    manifest = manifest_with(root, {"watermark": fix_patch(WATERMARK_FIXED)}, """
        - id: watermark
          patch: recipes/watermark.patch
          tests: ["tests/test_watermark.py::test_final_sampled_token_is_not_offloaded"]
        """, suites='suites: ["tests"]')
    report = run_prove(root, src, site, manifest)
    data = json.loads(testreport.render_json(report))
    assert set(data) == {"ok", "vllm", "patches", "suites"}
    assert data["ok"] is True and data["vllm"] == "1.0"
    (p,) = data["patches"]
    assert set(p) == {"id", "verdict", "without_fix", "with_fix"}
    assert p["verdict"] == "proven" and p["without_fix"]["failed"] == 2 and p["with_fix"]["passed"] == 2
    assert data["suites"][0]["path"] == "tests" and data["suites"][0]["ok"] and data["suites"][0]["passed"] == 3
    root_el = ET.fromstring(testreport.render_junit(report))
    assert [c.get("name") for c in root_el.iter("testcase")] == ["watermark", "tests"]
    md = testreport.render_markdown(report)
    assert "| `watermark` | ✔ proven |" in md
    table = testreport.render_table(report)
    assert "watermark" in table and "proven" in table and "OK" in table


def test_cli_runs_the_verb_and_exits_by_the_verdicts(project, monkeypatch, capsys, tmp_path):
    from patchset.cli import main
    from patchset.cli import test as cli_test

    root, src, site = project
    manifest = manifest_with(root, {"watermark": fix_patch(WATERMARK_FIXED)}, """
        - id: watermark
          patch: recipes/watermark.patch
          tests: ["tests/test_watermark.py::test_final_sampled_token_is_not_offloaded"]
        """)
    monkeypatch.setattr(cli_test, "make_runner", lambda args: VenvRunner(
        PythonEnv(Path(sys.executable), site, "this interpreter"), cpu=False))
    junit = tmp_path / "out.xml"
    code = main(["test", "--vllm", "1.0", "--venv", "--manifest", str(manifest), "--source", f"dir:{src}",
                 "--format", "json", "--junit", str(junit)])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert json.loads(out.out)["patches"][0]["verdict"] == "proven"
    assert "patchset test:" in out.err  # progress goes to stderr
    assert ET.parse(junit).getroot().find(".//testcase").get("name") == "watermark"
    assert main(["test", "--vllm", "1.0", "--manifest", str(manifest), "--patch", "nope"]) == 2
    assert main(["test", "--vllm", "1.0", "--manifest", str(manifest), "--gpus", "all"]) == 2


# --- the verdict rules on their own -------------------------------------------------------------------


def run_of(*results: NodeResult, label: str = "series") -> vt.ConfigRun:
    return vt.ConfigRun(label, (), ("t",), list(results))


@pytest.mark.parametrize(("with_fix", "without_fix", "verdict"), [
    ([PASSED, PASSED], [FAILED, PASSED], "proven"),
    ([PASSED], [ERROR], "proven"),
    ([PASSED, PASSED], [PASSED, PASSED], "not-discriminating"),
    ([PASSED, FAILED], [FAILED, FAILED], "failing"),
    ([SKIPPED], [SKIPPED], "unproven"),
    # a test that fails without the fix but is skipped with it proves nothing
    ([PASSED, SKIPPED], [PASSED, FAILED], "not-discriminating"),
])
def test_verdict_rules(with_fix, without_fix, verdict):
    w = run_of(*(NodeResult(f"t{i}", o, "some reason" if o == SKIPPED else "") for i, o in enumerate(with_fix)))
    wo = run_of(*(NodeResult(f"t{i}", o) for i, o in enumerate(without_fix)))
    assert vt.decide("p", ("t",), w, wo).verdict == verdict


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
    assert (vt.gpu_reason(result) is not None) == gpu


def test_selectors_overlapping_a_suite_run_once():
    assert vt.minimal_selectors(["tests/a", "tests/a/test_x.py::test_y", "tests/b.py::t", "./tests/a/"]) == (
        "tests/a", "tests/b.py::t")
    assert vt.covers("tests/a.py::test_y", "tests/a.py::test_y[1-2]")
    assert not vt.covers("tests/a.py::test_y", "tests/a.py::test_yz")
