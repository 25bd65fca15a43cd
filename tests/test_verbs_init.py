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
from patchset.verbs.init import HOME, PRE_COMMIT, WORKFLOW, default_action_ref

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


def test_a_malformed_action_is_bad_input_and_the_header_names_init(repo, capsys):
    for bad in ("me/patchset", "patchset@v1", "me/patchset@", "me/p atchset@v1"):
        assert main(["init", "--vllm", "0.29.0", "--action", bad]) == 2
        assert "is not OWNER/NAME@REF" in capsys.readouterr().err
    assert list(repo.iterdir()) == [repo / ".git"]
    assert main(["init", "--vllm", "0.29.0", "--dry-run", "--action", "me/patchset/sub@0123abc"]) == 0
    out = capsys.readouterr().out
    assert "uses: me/patchset/sub@0123abc" in out and "repo: https://github.com/me/patchset\n" in out
    assert "Written by `patchset init`" in out and "written by `patchset init`" in out
