"""`patchset init`: the starter files a fork needs, accepted by validate and by the workflow schema; never
overwrites."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import pytest
from helpers import load_yaml

from patchset.cli import main
from patchset.verbs.init import HOME, PRE_COMMIT, WORKFLOW, default_action_ref, workflow_text

SCHEMAS = Path(__file__).parent / "data" / "schemastore"


@pytest.fixture
def repo(tmp_path, monkeypatch):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_init_writes_files_that_validate_and_the_workflow_schema_accept(repo, capsys):
    assert main(["init", "--vllm", "0.29.0", "--vllm", "0.30.0"]) == 0
    out = capsys.readouterr().out
    assert "wrote patches.yaml" in out and f"wrote {WORKFLOW}" in out
    manifest = (repo / "patches.yaml").read_text()
    assert manifest.startswith("# yaml-language-server: $schema=")
    assert main(["validate", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is True and doc["targets"] == ["0.29.0", "0.30.0"]
    workflow = load_yaml((repo / WORKFLOW).read_text())
    jsonschema.validate(workflow, json.loads((SCHEMAS / "github-workflows.json").read_text()))
    uses = {s["uses"] for job in workflow["jobs"].values() for s in job["steps"] if "uses" in s}
    assert any(u.startswith(f"{HOME}@") for u in uses), uses
    hooks = load_yaml((repo / PRE_COMMIT).read_text())
    assert [h["id"] for h in hooks["repos"][0]["hooks"]] == ["patchset-validate", "patchset-check"]
    # The hook ids are the ones this repository ships.
    shipped = {h["id"] for h in load_yaml((Path(__file__).parents[1] / ".pre-commit-hooks.yaml").read_text())}
    assert {"patchset-validate", "patchset-check"} <= shipped


def test_a_second_init_exits_2_naming_the_files_and_writes_nothing(repo, capsys):
    assert main(["init", "--vllm", "0.29.0"]) == 0
    (repo / "patches.yaml").write_text("# mine\n")
    capsys.readouterr()
    assert main(["init", "--vllm", "0.30.0"]) == 2
    err = capsys.readouterr().err
    assert "patches.yaml" in err and PRE_COMMIT in err and WORKFLOW in err and "nothing was written" in err
    assert (repo / "patches.yaml").read_text() == "# mine\n"


def test_one_existing_file_stops_every_file(repo, capsys):
    (repo / PRE_COMMIT).write_text("repos: []\n")
    assert main(["init", "--vllm", "0.29.0"]) == 2
    assert not (repo / "patches.yaml").exists() and not (repo / WORKFLOW).exists()
    assert capsys.readouterr().err.count("\n") == 1, "one line"


def test_init_needs_a_target(repo, capsys):
    assert main(["init"]) == 2
    assert "--vllm" in capsys.readouterr().err


def test_dry_run_prints_the_files_and_writes_nothing(repo, capsys):
    assert main(["init", "--vllm", "0.29.0", "--dry-run", "--action", "me/patchset@v1"]) == 0
    out = capsys.readouterr().out
    assert "uses: me/patchset@v1" in out and "rev: v1" in out
    assert list(repo.iterdir()) == [repo / ".git"]


def test_the_action_ref_follows_the_version():
    assert default_action_ref("1.2.3") == f"{HOME}@v1.2.3"
    assert default_action_ref("0.1.1.dev3+gabc") == f"{HOME}@main"
    assert default_action_ref("1.2.3.post1") == f"{HOME}@v1.2.3.post1"  # tagged, as every release is
    assert default_action_ref("1.3.0rc1") == f"{HOME}@v1.3.0rc1"
    assert default_action_ref("1.2.3+local") == f"{HOME}@main"  # built between tags


def test_a_missing_manifest_names_init_and_import(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["check"]) == 2
    err = capsys.readouterr().err
    assert "patchset init" in err and "patchset import" in err


# --- the test job proves something, or says why it does not ----------------------------------------------

def _value(expr: str, row: dict) -> object:
    """A step's ``${{ matrix.X }}`` / ``${{ !matrix.X }}`` on one matrix row, as the runner reads them; any
    other expression fails here, so the step stays within what this evaluates."""
    inner = expr.strip()
    assert inner.startswith("${{") and inner.endswith("}}"), expr
    inner = inner[3:-2].strip()
    negate = inner.startswith("!")
    name = inner.lstrip("!")
    assert name.startswith("matrix.") and name.count(".") == 1, expr
    value = row.get(name.split(".", 1)[1])
    return (not value) if negate else value


def _run_test_job(workflow: dict, row: dict, summary: Path) -> list[str]:
    """The test job's steps on one matrix row: which would run; each ``run`` step run with bash as the runner
    does (its env evaluated, the job summary a file)."""
    ran = []
    for step in workflow["jobs"]["test"]["steps"]:
        if "if" in step and not _value(step["if"], row):
            continue
        ran.append(step.get("name") or step["uses"].split("@")[0])
        if "run" in step:
            env = {k: str(_value(v, row) or "") for k, v in step.get("env", {}).items()}
            subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], check=True,
                           env={"PATH": "/usr/bin:/bin", "GITHUB_STEP_SUMMARY": str(summary), **env})
    return ran


def _matrix(capsys) -> list[dict]:
    assert main(["targets", "--format", "matrix"]) == 0
    return json.loads(capsys.readouterr().out)["include"]


def test_the_test_job_skips_a_release_whose_patches_name_no_test_and_says_so(tmp_path, monkeypatch, capsys):
    """A series with no `tests:` anywhere: the CPU test job downloads no wheel for nothing; its summary names
    the patches and says how to add tests. Once a patch names a test, the job runs `test --venv` again."""
    from helpers import scratch_fork

    root = scratch_fork(tmp_path / "fork")
    monkeypatch.chdir(root)
    workflow = load_yaml(workflow_text(f"{HOME}@v1", ["0.29.0"]))
    (row, _) = _matrix(capsys)
    assert row == {"vllm": "0.29.0", "image": None, "no_proof": True, "untested": "fix"}
    summary = tmp_path / "summary.md"
    ran = _run_test_job(workflow, row, summary)
    assert ran == ["Nothing to prove on this release"]
    (line,) = summary.read_text().splitlines()
    assert line.startswith("vLLM 0.29.0: test skipped, no patch names a test to prove it: fix. Add `tests: [")
    assert "to each in patches.yaml" in line

    text = (root / "patches.yaml").read_text()
    pad = text.split("patch: recipes/fix/fix.patch")[0].rsplit("\n", 1)[1]
    tests = f'{pad}tests: ["tests/test_mod.py::test_fix"]\n'
    line = "patch: recipes/fix/fix.patch\n"
    (root / "patches.yaml").write_text(text.replace(line, line + tests))
    (row, _) = _matrix(capsys)
    assert row["no_proof"] is False and row["untested"] == ""
    summary.unlink()
    assert _run_test_job(workflow, row, summary) == ["actions/checkout", "actions/cache", HOME]
    assert not summary.exists()


def test_a_malformed_action_is_bad_input_and_the_header_names_init(repo, capsys):
    for bad in ("me/patchset", "patchset@v1", "me/patchset@", "me/p atchset@v1"):
        assert main(["init", "--vllm", "0.29.0", "--action", bad]) == 2
        assert "is not OWNER/NAME@REF" in capsys.readouterr().err
    assert list(repo.iterdir()) == [repo / ".git"]
    assert main(["init", "--vllm", "0.29.0", "--dry-run", "--action", "me/patchset/sub@0123abc"]) == 0
    out = capsys.readouterr().out
    assert "uses: me/patchset/sub@0123abc" in out and "repo: https://github.com/me/patchset\n" in out
    assert "Written by `patchset init`" in out and "written by `patchset init`" in out
