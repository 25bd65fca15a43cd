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
from patchset.core.manifest_load import load_manifest
from patchset.errors import PatchsetError
from patchset.report import testreport
from patchset.runners import ERROR, FAILED, PASSED, SKIPPED, NodeResult, pytestrun
from patchset.runners.venv import PythonEnv, VenvRunner
from patchset.sources.local import DirSource
from patchset.verbs import proof
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


OPTIONS = ("patch_ids", "suites", "timeout", "rebaseline", "progress")  # proof.ProofOptions' fields


def run_prove(root: Path, src: Path, site: Path, manifest: Path, **kw) -> proof.ProofReport:
    runner = VenvRunner(PythonEnv(Path(sys.executable), site, "this interpreter"), cpu=False)
    work = kw.pop("workdir", root / "work")
    work.mkdir(exist_ok=True)
    options = proof.ProofOptions(**{"timeout": 300, **{k: kw.pop(k) for k in OPTIONS if k in kw}})
    kw.setdefault("cache", Cache(root / "cache"))
    return vt.prove(load_manifest(manifest), "1.0", kw.pop("runner", runner), DirSource(src), workdir=work,
                    options=options, **kw)


def verdicts(report: proof.ProofReport) -> dict[str, str]:
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


def follow_up_manifest(root: Path, dep_test: str) -> Path:
    extended = WATERMARK_FIXED + "\n\ndef finished_watermark(req):\n    return watermark(*req)\n"
    return manifest_with(root, {
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


def test_dependants_are_left_out_with_the_patch_they_need(project):
    root, src, site = project
    # imported inside the test: without the fix the test runs and fails on the import, which proves it
    manifest = follow_up_manifest(root, textwrap.dedent('''\
        def test_finished_watermark():
            from toypkg.watermark import finished_watermark

            assert finished_watermark((10, 4)) == 9
        '''))
    report = run_prove(root, src, site, manifest)
    assert verdicts(report) == {"watermark": "proven", "follow-up": "proven"}
    assert report.patches[0].without_fix.excluded == ("watermark", "follow-up")
    assert report.patches[1].without_fix.excluded == ("follow-up",)
    (failed,) = report.patches[1].without_fix.results
    assert failed.outcome == FAILED and "finished_watermark" in failed.message
    assert report.ok


def test_a_test_file_that_cannot_even_be_collected_without_the_fix_proves_nothing(project):
    root, src, site = project
    # imported at module level: without the fix the file fails to import, the test never runs
    manifest = follow_up_manifest(root, textwrap.dedent('''\
        from toypkg.watermark import finished_watermark

        def test_finished_watermark():
            assert finished_watermark((10, 4)) == 9
        '''))
    report = run_prove(root, src, site, manifest)
    assert verdicts(report) == {"watermark": "proven", "follow-up": "inconclusive"}
    p = report.patches[1]
    (err,) = p.without_fix.results
    assert (err.nodeid, err.outcome) == ("tests/test_follow_up.py", ERROR) and "finished_watermark" in err.detail
    # pytest refuses a node id in a file it could not collect: the run is a crash, never proof
    assert p.without_fix.exit_code == 4 and "found no collectors" in p.without_fix.crash
    assert p.reason.startswith("without the fix: pytest exit 4") and "a crashed run is no proof" in p.reason
    assert not report.ok


def test_a_file_selector_whose_file_cannot_be_collected_without_the_fix_is_inconclusive(project):
    root, src, site = project
    manifest = follow_up_manifest(root, textwrap.dedent('''\
        from toypkg.watermark import finished_watermark

        def test_finished_watermark():
            assert finished_watermark((10, 4)) == 9
        '''))
    manifest.write_text(manifest.read_text().replace('["tests/test_follow_up.py::test_finished_watermark"]',
                                                     '["tests/test_follow_up.py"]'))
    report = run_prove(root, src, site, manifest)
    p = report.patches[1]
    # pytest went on past the collection error (exit 1, a readable report): the run is fine, the test never ran
    assert p.without_fix.crash is None and p.without_fix.exit_code == 1
    assert p.verdict == "inconclusive"
    assert "1 of 1 did not run (tests/test_follow_up.py::test_finished_watermark: error" in p.reason
    assert "ImportError" in p.reason or "cannot import" in p.reason


def one_fix(root: Path, test: str) -> Path:
    return manifest_with(root, {"watermark": fix_patch(WATERMARK_FIXED, test)}, """
        - id: watermark
          patch: recipes/watermark.patch
          tests: ["tests/test_watermark.py::test_final_sampled_token_is_not_offloaded"]
        """)


def test_a_negative_control_that_crashes_is_inconclusive(project):
    root, src, site = project
    # without the fix the process dies the way a CUDA kernel fault kills it
    manifest = one_fix(root, textwrap.dedent('''\
        import os
        import signal

        from toypkg.watermark import watermark


        def test_final_sampled_token_is_not_offloaded():
            if watermark(10, 4) != 9:
                os.kill(os.getpid(), signal.SIGSEGV)
        '''))
    report = run_prove(root, src, site, manifest)
    (p,) = report.patches
    assert (p.verdict, report.ok) == ("inconclusive", False)
    assert p.with_fix.count(PASSED) == 1
    assert p.without_fix.exit_code == -11 and "killed by signal 11" in p.reason
    assert "pytest wrote no JUnit report" in p.reason and "Fatal Python error: Segmentation fault" in p.reason
    assert json.loads(testreport.render_json(report))["patches"][0]["verdict"] == "inconclusive"


def test_control_characters_pytest_printed_do_not_break_the_junit_report(project):
    root, src, site = project
    # without the fix upstream's conftest cannot load, and says so in terminal colours (pytest exit 4)
    (src / "tests" / "conftest.py").write_text(textwrap.dedent('''\
        from toypkg.watermark import watermark

        if watermark(10, 4) != 9:
            raise RuntimeError("CUDA driver \\x1b[31mfailed\\x00 to initialise\\x1b[0m")
        '''))
    manifest = one_fix(root, WATERMARK_TEST)
    report = run_prove(root, src, site, manifest)
    (p,) = report.patches
    assert p.verdict == "inconclusive" and p.without_fix.exit_code == 4
    assert "\x1b[31mfailed\x00 to initialise" in p.reason  # pytest printed it raw; the reason keeps it
    failure = ET.fromstring(testreport.render_junit(report)).find(".//failure")
    assert failure is not None and "#x1B[31mfailed#x00 to initialise" in failure.get("message")
    assert "failed\\u0000 to" in testreport.render_json(report)


def test_a_negative_control_that_hangs_is_inconclusive(project):
    root, src, site = project
    manifest = one_fix(root, textwrap.dedent('''\
        import time

        from toypkg.watermark import watermark


        def test_final_sampled_token_is_not_offloaded():
            while watermark(10, 4) != 9:
                time.sleep(1)
        '''))
    report = run_prove(root, src, site, manifest, timeout=10)
    (p,) = report.patches
    assert p.with_fix.count(PASSED) == 1 and p.with_fix.crash is None
    assert p.verdict == "inconclusive" and p.without_fix.exit_code == -1
    assert "pytest timed out after 10 s" in p.reason


def test_a_patch_the_rest_of_the_series_needs_cannot_be_left_out_and_is_unproven(project):
    root, src, site = project
    extended = WATERMARK_FIXED + "\n\nX = 1\n"
    # follow-up's hunk has the fix as context but does not declare after: [watermark]
    manifest = manifest_with(root, {
        "watermark": fix_patch(WATERMARK_FIXED),
        "follow-up": udiff("toypkg/watermark.py", WATERMARK_FIXED, extended),
    }, """
        - id: watermark
          patch: recipes/watermark.patch
          tests: ["tests/test_watermark.py::test_final_sampled_token_is_not_offloaded"]
        - id: follow-up
          patch: recipes/follow-up.patch
        """)
    report = run_prove(root, src, site, manifest)
    p = report.patches[0]
    assert (p.verdict, p.without_fix) == ("unproven", None)
    assert "the rest of the series does not apply (follow-up failed)" in p.reason
    assert "declare after: [watermark]" in p.reason


class AcceleratedVenvRunner(VenvRunner):
    """The venv runner claiming an accelerator, as the image runner does when given --gpus."""

    needs_accelerator_reason = None


def test_a_cuda_error_on_a_runner_with_an_accelerator_is_failing(project):
    root, src, site = project
    fix = WATERMARK_FIXED.replace("    return max(", "    raise RuntimeError('CUDA error: an illegal memory access "
                                                   "was encountered')\n    return max(")
    manifest = manifest_with(root, {"watermark": fix_patch(fix)}, """
        - id: watermark
          patch: recipes/watermark.patch
          tests: ["tests/test_watermark.py::test_final_sampled_token_is_not_offloaded"]
        """)
    env = PythonEnv(Path(sys.executable), site, "this interpreter")
    assert verdicts(run_prove(root, src, site, manifest)) == {"watermark": "needs-gpu"}
    report = run_prove(root, src, site, manifest, runner=AcceleratedVenvRunner(env, cpu=False),
                       workdir=root / "work-gpu")
    (p,) = report.patches
    assert p.verdict == "failing" and p.with_fix.accelerator
    assert "illegal memory access" in p.with_fix.results[0].message


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
    with pytest.raises(PatchsetError, match="does not apply") as e:
        run_prove(root, src, site, manifest)
    assert e.value.exit_code == 1  # a finding, like `check` failing, not bad input


def test_reports_have_the_documented_shapes(project):
    root, src, site = project
    manifest = manifest_with(root, {"watermark": fix_patch(WATERMARK_FIXED)}, """
        - id: watermark
          patch: recipes/watermark.patch
          tests: ["tests/test_watermark.py::test_final_sampled_token_is_not_offloaded"]
        """, suites='suites: ["tests"]')
    report = run_prove(root, src, site, manifest)
    data = json.loads(testreport.render_json(report))
    assert set(data) == {"ok", "vllm", "patches", "suites", "warnings"} and data["warnings"] == []
    assert data["ok"] is True and data["vllm"] == "1.0"
    (p,) = data["patches"]
    assert set(p) == {"id", "verdict", "reason", "without_fix", "with_fix"}
    assert set(p["without_fix"]) >= {"exit_code", "crash"} and p["without_fix"]["crash"] is None
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

    root, src, site = project
    manifest = manifest_with(root, {"watermark": fix_patch(WATERMARK_FIXED)}, """
        - id: watermark
          patch: recipes/watermark.patch
          tests: ["tests/test_watermark.py::test_final_sampled_token_is_not_offloaded"]
        """)
    monkeypatch.setattr(vt, "make_runner", lambda image, gpus, device=None: VenvRunner(
        PythonEnv(Path(sys.executable), site, "this interpreter"), cpu=False))
    junit = tmp_path / "out.xml"
    code = main(["test", "--vllm", "1.0", "--venv", "--manifest", str(manifest), "--source", f"dir:{src}",
                 "--format", "json", "--junit", str(junit)])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert json.loads(out.out)["patches"][0]["verdict"] == "proven"
    # A pipe or a CI log gets one line per stage on stderr (stdout stays one document); -q none.
    assert any(line.startswith("patchset test: ") for line in out.err.splitlines()), out.err
    assert ET.parse(junit).getroot().find(".//testcase").get("name") == "watermark"
    assert main(["test", "--vllm", "1.0", "--manifest", str(manifest), "--patch", "nope"]) == 2
    assert main(["test", "--vllm", "1.0", "--manifest", str(manifest), "--gpus", "all"]) == 2


# --- the verdict rules on their own -------------------------------------------------------------------


def run_of(*results: NodeResult, label: str = "series") -> pytestrun.ConfigRun:
    return pytestrun.ConfigRun(label, (), ("t",), list(results))


@pytest.mark.parametrize(("with_fix", "without_fix", "verdict"), [
    ([PASSED, PASSED], [FAILED, PASSED], "proven"),
    # an error without the fix is collection or setup, not the test failing: never proof
    ([PASSED], [ERROR], "inconclusive"),
    ([PASSED, PASSED], [ERROR, PASSED], "inconclusive"),
    # one node that really ran and failed is proof, whatever else errored
    ([PASSED, PASSED], [FAILED, ERROR], "proven"),
    # skipped without the fix (for a reason that is not a missing GPU): it did not run, so nothing is shown
    ([PASSED], [SKIPPED], "inconclusive"),
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


def crashed(code: int, why: str, label: str) -> pytestrun.ConfigRun:
    # what select() makes of a run that wrote no report: an error for every selector
    return pytestrun.ConfigRun(label, (), ("t",), [NodeResult("t0", ERROR, f"pytest exited with code {code}")], code,
                        crash=why)


def test_a_crashed_negative_control_is_inconclusive_never_proven():
    v = vt.decide("p", ("t",), run_of(NodeResult("t0", PASSED)),
                  crashed(-1, "pytest timed out after 60 s and was killed (exit -1): ...", "without p"))
    assert (v.verdict, v.ok) == ("inconclusive", False)
    assert "without the fix: pytest timed out" in v.reason and "exit -1" in v.reason
    assert testreport.patch_verdict_doc(v)["without_fix"]["crash"].startswith("pytest timed out")
    assert testreport.patch_verdict_doc(v)["without_fix"]["exit_code"] == -1


def test_a_crashed_run_with_the_fix_is_inconclusive_not_failing():
    v = vt.decide("p", ("t",), crashed(3, "pytest exit 3 (internal error): INTERNALERROR> ...", "series"),
                  run_of(NodeResult("t0", FAILED)))
    assert v.verdict == "inconclusive" and v.reason.startswith("with the fix: pytest exit 3")


def test_a_cuda_error_is_needs_gpu_only_without_an_accelerator():
    cuda = NodeResult("t0", FAILED, "RuntimeError: CUDA error: an illegal memory access was encountered")
    cpu = vt.decide("p", ("t",), run_of(cuda), run_of(NodeResult("t0", FAILED)))
    assert cpu.verdict == "needs-gpu"
    gpu_run = pytestrun.ConfigRun("series", (), ("t",), [cuda], 1, accelerator=True)
    gpu = vt.decide("p", ("t",), gpu_run, run_of(NodeResult("t0", FAILED)))
    assert gpu.verdict == "failing" and "t0" in gpu.reason
    # a GPU runner's skips are upstream's own choice, not a missing device
    skipped = pytestrun.ConfigRun("series", (), ("t",), [NodeResult("t0", SKIPPED, "Requires at least 2 GPUs")],
                           accelerator=True)
    assert vt.decide("p", ("t",), skipped, None).verdict == "unproven"


def test_a_crashed_suite_run_is_not_ok_and_says_why():
    run = pytestrun.ConfigRun("series", (), ("tests",), [NodeResult("tests/test_a.py::t", PASSED)], -1,
                       crash="pytest timed out after 60 s and was killed (exit -1): ...")
    suite = proof.SuiteResult("tests", run)
    assert not suite.ok  # what passed before the kill is no reason to call the suite green
    report = proof.ProofReport("1.0", "venv", "here", [], [suite])
    assert not report.ok and "pytest timed out after 60 s" in testreport.render_table(report)
    assert json.loads(testreport.render_json(report))["suites"][0]["crash"].startswith("pytest timed out")
