"""The command line contract: exit codes, one JSON object on stdout, JUnit, Markdown, annotations."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers import udiff, write_manifest, write_patch

from patchset.cli import main

MOD = "vllm/sched.py"
PRISTINE = "".join(f"line{i} = {i}\n" for i in range(1, 31))
FIXED = PRISTINE.replace("line10 = 10\n", "line10 = 10 - 1\n")


@pytest.fixture
def project(tmp_path, monkeypatch):
    for v, text in (("0.28.0", "x\n" * 4 + PRISTINE), ("0.29.0", PRISTINE), ("0.30.0", FIXED)):
        (tmp_path / "trees" / v / "vllm").mkdir(parents=True)
        (tmp_path / "trees" / v / MOD).write_text(text)
        (tmp_path / "trees" / v / "vllm" / "__init__.py").write_text("")
    write_patch(tmp_path, "recipes/fix/fix.patch", udiff(MOD, PRISTINE, FIXED))
    write_manifest(tmp_path, f"""
        schema: 1
        targets: {{"0.28.0": {{}}, "0.29.0": {{}}, "0.30.0": {{}}}}
        patches:
          - id: fix
            releases: ">=0.28.0,<0.30.0"
            patch: recipes/fix/fix.patch
            present: {{file: {MOD}, contains: "line10 = 10 - 1"}}
        """)
    monkeypatch.chdir(tmp_path)
    return tmp_path


SRC = ["--source", "dir:trees/{version}"]


def test_check_json_is_one_object_with_the_documented_shape(project, capsys):
    assert main(["check", *SRC, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is True
    assert [t["vllm"] for t in out["targets"]] == ["0.28.0", "0.29.0", "0.30.0"]
    p28 = out["targets"][0]["patches"][0]
    assert p28["id"] == "fix" and p28["status"] == "applies"
    assert p28["hunks"] == [{"file": MOD, "hunk": 1, "status": "offset", "line": 11, "offset": 4,
                             "patch_line": 6}]
    p30 = out["targets"][2]["patches"][0]
    assert p30["status"] == "upstream" and p30["evidence"].startswith("probe:")


def test_check_fails_with_exit_1_and_names_the_hunk(project, capsys, monkeypatch):
    (project / "trees/0.29.0" / MOD).write_text(PRISTINE.replace("line11 = 11", "line11 = 12"))
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert main(["check", *SRC, "--vllm", "0.29.0"]) == 1
    captured = capsys.readouterr()
    out = captured.out
    assert "failed" in out and "recipes/fix/fix.patch:6: hunk 1" in out
    assert "::error file=recipes/fix/fix.patch,line=6::vLLM 0.29.0: fix failed" in captured.err
    assert "::error" not in out
    # one line per failing hunk on a terminal; the lines that differ where it comes nearest on asking
    assert "-line11 = 11" not in out and "--detail" in out.splitlines()[-2]
    assert main(["check", *SRC, "--vllm", "0.29.0", "--detail"]) == 1
    detailed = capsys.readouterr().out
    assert "-line11 = 11" in detailed and "+line11 = 12" in detailed and "--detail" not in detailed
    assert main(["check", *SRC, "--vllm", "0.29.0", "--format", "markdown"]) == 1
    assert "+line11 = 12" in capsys.readouterr().out


def test_check_junit_and_markdown(project, capsys):
    assert main(["check", *SRC, "--format", "junit"]) == 0
    root = ET.fromstring(capsys.readouterr().out)
    cases = root.findall(".//testcase")
    assert len(cases) == 3 and not root.findall(".//failure")
    assert main(["check", *SRC, "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("### patchset check") and "| 0.30.0 | fix | upstream |" in md


def test_bad_manifest_exits_2_with_file_and_line(project, capsys):
    (project / "patches.yaml").write_text((project / "patches.yaml").read_text().replace("releases", "relases"))
    assert main(["validate"]) == 2
    err = capsys.readouterr().err
    assert "patches.yaml:5: patch fix: unknown key 'relases'" in err


def test_validate_summarises(project, capsys):
    assert main(["validate"]) == 0
    assert "ok: 1 patches, 1 patch files, 1 hunks" in capsys.readouterr().out


def test_unknown_target_is_an_error(project, capsys):
    assert main(["check", *SRC, "--vllm", "0.31.0"]) == 2
    assert "0.31.0 is not a target" in capsys.readouterr().err


def test_apply_cli_twice(project, capsys, tmp_path):
    import shutil

    shutil.copytree(project / "trees/0.29.0", tmp_path / "work")
    assert main(["apply", "--vllm", "0.29.0", str(tmp_path / "work")]) == 0
    assert "applied 1 patch" in capsys.readouterr().out
    assert main(["apply", "--vllm", "0.29.0", str(tmp_path / "work")]) == 0
    assert "already applied" in capsys.readouterr().out
    assert (tmp_path / "work" / MOD).read_text() == FIXED


def test_targets_matrix_for_ci(project, capsys):
    assert main(["targets", "--format", "matrix", "--carrying"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == {"include": [{"vllm": "0.28.0", "image": None, "no_proof": True, "untested": "fix"},
                               {"vllm": "0.29.0", "image": None, "no_proof": True, "untested": "fix"}]}


def test_check_table_groups_hunks_by_placement(project, capsys):
    assert main(["check", *SRC, "--vllm", "0.28.0", "--vllm", "0.29.0"]) == 0
    out = capsys.readouterr().out
    assert "1 hunk: 1 offset +4" in out and "1 hunk: 1 exact" in out


# --- one contract for exit codes and output ---------------------------------------------------------------


def test_apply_with_a_failing_hunk_is_a_finding_exit_1_and_writes_nothing(project, capsys, tmp_path):
    import shutil

    shutil.copytree(project / "trees/0.29.0", tmp_path / "work")
    (tmp_path / "work" / MOD).write_text(PRISTINE.replace("line11 = 11", "line11 = 12"))
    before = (tmp_path / "work" / MOD).read_bytes()
    assert main(["apply", "--vllm", "0.29.0", str(tmp_path / "work")]) == 1
    err = capsys.readouterr().err
    assert "patchset apply: error: " in err and "fix" in err and "Traceback" not in err
    assert (tmp_path / "work" / MOD).read_bytes() == before
    assert sorted(p.name for p in (tmp_path / "work" / "vllm").iterdir()) == ["__init__.py", "sched.py"]


def broken_check(*args, **kwargs):
    return {}["a bug"]  # a KeyError no user can act on


def test_an_internal_error_exits_3_with_one_line_and_the_traceback_in_a_file(project, capsys, monkeypatch,
                                                                             tmp_path):
    import tempfile

    from patchset.cli import check as cli_check

    monkeypatch.setattr(cli_check, "check", broken_check)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert main(["check", *SRC]) == 3
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.splitlines()
    assert line.startswith("patchset check: internal error: KeyError: 'a bug' (full traceback in ")
    path = line.split("full traceback in ", 1)[1].split(";", 1)[0]
    text = Path(path).read_text()
    assert "Traceback (most recent call last)" in text and "broken_check" in text

    assert main(["check", *SRC, "--format", "json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and doc["error"]["message"] == "internal error: KeyError: 'a bug'"
    assert "broken_check" in Path(doc["error"]["traceback"]).read_text()


def test_json_errors_are_one_document_with_file_and_line(project, capsys):
    (project / "patches.yaml").write_text((project / "patches.yaml").read_text().replace("releases", "relases"))
    assert main(["check", *SRC, "--format", "json"]) == 2
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["ok"] is False
    assert doc["error"]["file"] == "patches.yaml" and doc["error"]["line"] == 5
    assert "unknown key 'relases'" in doc["error"]["message"]
    assert doc["error"]["hint"].startswith("did you mean 'releases'? known keys")
    assert "patches.yaml:5:" in captured.err  # the line for people still goes to stderr
    assert "more" not in doc["error"]  # one problem: no list of others


def test_json_errors_list_every_problem_of_a_manifest_that_has_several(project, capsys):
    text = (project / "patches.yaml").read_text()
    two = text.replace("releases", "relases").replace("patch: recipes", "pach: recipes")  # two unknown keys
    (project / "patches.yaml").write_text(two)
    assert main(["check", *SRC, "--format", "json"]) == 2
    doc = json.loads(capsys.readouterr().out)["error"]
    said = [doc["message"]] + [m["message"] for m in doc["more"]]
    assert all(set(m) == {"file", "line", "message", "hint"} for m in doc["more"])
    assert any("unknown key 'relases'" in x for x in said) and any("unknown key 'pach'" in x for x in said)


def test_a_parse_error_asked_for_as_json_is_json_too(project, capsys):
    assert main(["check", "--format=json", "--vllm", "foo"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["error"]["message"] == "argument --vllm: 'foo' is not a release version (PEP 440, e.g. 0.29.0)"
    assert doc["error"]["hint"] == "see patchset check --help"


def test_stdout_that_is_not_one_json_document_is_an_internal_error(project, capsys, monkeypatch):
    from patchset.report import check as render

    monkeypatch.setitem(render.RENDERERS, "json", lambda report: '{"ok": true}\n{"ok": true}\n')
    assert main(["check", *SRC, "--format", "json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and "other than one JSON document" in doc["error"]["message"]


def test_an_interrupt_is_130_and_still_one_json_document(project, capsys, monkeypatch):
    from patchset.cli import check as cli_check

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_check, "check", interrupted)
    assert main(["check", *SRC, "--format", "json"]) == 130
    assert json.loads(capsys.readouterr().out)["error"]["message"] == "interrupted"


def test_sigterm_unwinds_like_an_interrupt_and_is_143(project, capsys, monkeypatch):
    """A cancelled CI job's SIGTERM, really sent: the verb's clean-up runs (a second SIGTERM cannot cut it
    short), the exit is 143 and JSON is still one document; the handler is put back afterwards."""
    import os
    import signal
    import time

    from patchset.cli import check as cli_check

    cleaned = []

    def cancelled(*args, **kwargs):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(10)  # the signal arrives here, in the middle of the work
        finally:
            os.kill(os.getpid(), signal.SIGTERM)  # ignored while cleaning up
            cleaned.append(True)

    monkeypatch.setattr(cli_check, "check", cancelled)
    before = signal.getsignal(signal.SIGTERM)
    assert main(["check", *SRC, "--format", "json"]) == 143
    assert cleaned == [True]
    assert json.loads(capsys.readouterr().out)["error"]["message"] == "terminated (SIGTERM)"
    assert signal.getsignal(signal.SIGTERM) is before


REPO = Path(__file__).resolve().parents[1]


@pytest.mark.network
@pytest.mark.parametrize("source", ["pypi", "wheel"])
def test_eight_processes_checking_at_once_on_one_empty_cache_agree(tmp_path, source):
    """The real series on the real 0.29.0 sdist / wheel, eight CI jobs sharing one cold cache."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PATCHSET_CACHE": str(tmp_path / "cache")}
    env.pop("GITHUB_ACTIONS", None)
    cmd = [sys.executable, "-m", "patchset", "check", "--vllm", "0.29.0", "--source", source, "--format", "json"]
    procs = [subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(8)]
    results = [(*p.communicate(), p.returncode) for p in procs]  # communicate first: never block on a full pipe
    for _, err, code in results:
        assert code == 0, err
    outputs = {out for out, _, _ in results}
    assert len(outputs) == 1
    doc = json.loads(outputs.pop())
    assert doc["ok"] is True and doc["targets"][0]["vllm"] == "0.29.0"
    assert [p["status"] for p in doc["targets"][0]["patches"]] == ["applies"] * len(doc["targets"][0]["patches"])
    # and a ninth, on the cache the eight filled, says the same
    warm = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    assert warm.returncode == 0 and json.loads(warm.stdout) == doc


def test_check_junit_parses_when_the_tree_holds_control_characters(project, capsys):
    # a form feed (common in old sources) and an escape on the line a hunk fails on reach the report
    (project / "trees/0.29.0" / MOD).write_text(PRISTINE.replace("line11 = 11", "line11 = 11\x0c\x1b[0m"))
    assert main(["check", *SRC, "--vllm", "0.29.0", "--format", "junit"]) == 1
    root = ET.fromstring(capsys.readouterr().out)
    failure = root.find(".//failure")
    assert failure is not None and "line11 = 11#x0C" in failure.text and "#x1B[0m" in failure.text


def test_a_reader_that_closed_stdout_gets_no_traceback(project):
    import os
    import subprocess
    import sys

    read, write = os.pipe()
    os.close(read)  # `patchset check | head -0`: the reader is gone before anything is written
    try:
        proc = subprocess.run([sys.executable, "-m", "patchset", "check", *SRC, "--format", "json"], cwd=project,
                              stdout=write, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(write)
    assert proc.returncode == 141 and proc.stderr == ""


def test_apply_says_applied_with_paths_relative_to_the_tree_given(project, capsys):
    tree = project / "site" / "vllm"  # the package folder itself, as forks patch site-packages/vllm
    shutil.copytree(project / "trees" / "0.29.0" / "vllm", tree)
    assert main(["apply", "--vllm", "0.29.0", str(tree), "--allow-version-mismatch"]) == 0
    out = capsys.readouterr().out
    assert "  fix" in out and " applied " in out and " applies " not in out
    assert "  wrote   sched.py\n" in out  # not vllm/sched.py: relative to the folder given
    assert out.rstrip().endswith("applied 1 patch; provenance in .patchset-provenance.json")


def test_a_run_imports_its_own_verb_and_nothing_of_docker(project):
    """The one lazy import is at the verb boundary: the CLI imports a verb's modules when that verb runs. A
    validate or a check loads no other verb's modules and nothing of Docker."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PATCHSET_CACHE": str(project / "cache")}
    probe = ("import sys, io, contextlib\nfrom patchset.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n    main(sys.argv[1:])\n"
             "print(' '.join(sorted(sys.modules)))")
    shared = {"patchset.cli.options", "patchset.cli.registry", "patchset.cli.progress"}
    uses = {"validate": {"patchset.verbs.validate"}, "check": {"patchset.verbs.check", "patchset.verbs.deps"}}
    for argv in (["validate", "--format", "json"], ["check", *SRC, "--format", "json"]):
        done = subprocess.run([sys.executable, "-c", probe, *argv], cwd=project, env=env, capture_output=True,
                              text=True, check=True)
        loaded = set(done.stdout.split())
        verb = argv[0]
        assert {m for m in loaded if m.startswith("patchset.cli.")} - shared == {f"patchset.cli.{verb}"}, argv
        assert {m for m in loaded if m.startswith("patchset.verbs.")} == uses[verb], argv
        assert not {m for m in loaded if m.split(".")[0] == "docker" or m.startswith("patchset.images")}, argv


def test_a_run_builds_its_own_verbs_parser_and_a_typo_lists_them_all():
    from patchset.cli import VERBS, build_parser

    def verbs_of(parser):
        return set(next(a for a in parser._actions if a.dest == "verb").choices)

    assert verbs_of(build_parser("check")) == {"check"}
    assert verbs_of(build_parser("chek")) == set(VERBS)  # the error names every choice
    assert verbs_of(build_parser("")) == set(VERBS)  # `patchset --help` lists them
