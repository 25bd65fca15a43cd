"""The shipped JSON Schema agrees with the loader: same keys, and it accepts what the loader accepts."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from helpers import load_yaml

from patchset.cli import main
from patchset.core import manifest as m
from patchset.core import manifest_load as keys
from patchset.core.schema import manifest_schema

REPO = Path(__file__).resolve().parents[1]


def _props(schema: dict, *path: str) -> set[str]:
    node = schema
    for step in path:
        node = node[step]
    return set(node["properties"])


def test_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(manifest_schema())


def test_schema_and_loader_know_the_same_keys():
    s = manifest_schema()
    assert _props(s) == keys.TOP_KEYS
    assert _props(s, "properties", "upstream") == keys.UPSTREAM_KEYS
    assert _props(s, "$defs", "layout") == keys.LAYOUT_KEYS
    assert set(s["properties"]["targets"]["additionalProperties"]["properties"]) == keys.TARGET_KEYS
    assert _props(s, "$defs", "patch") == keys.PATCH_KEYS
    assert _props(s, "$defs", "probe") == keys.PROBE_KEYS
    assert _props(s, "$defs", "suite") == keys.SUITE_KEYS
    assert set(s["$defs"]["patch"]["properties"]["origin"]["enum"]) == set(m.ORIGINS)


def test_this_repositorys_manifest_validates():
    jsonschema.validate(load_yaml((REPO / "patches.yaml").read_text()), manifest_schema())


@pytest.mark.parametrize("bad, where", [
    ({"schema": 2}, "schema"),
    ({"patches": [{"id": "x", "patch": "a.patch", "orign": "backport"}]}, "orign"),
    ({"patches": [{"id": "Upper", "patch": "a.patch"}]}, "Upper"),
    ({"patches": [{"id": "x", "patch": "a.patch", "origin": "vendor"}]}, "vendor"),
    ({"targets": {"latest": {}}}, "latest"),
    ({"suites": [{"path": "tests/a", "gpus": True}]}, "'gpus'"),
    ({"suites": [{"path": "tests/a", "gpu": "yes"}]}, "'yes' is not of type 'boolean'"),
    ({"suites": [{"gpu": True}]}, "{'gpu': True}"),
])
def test_schema_refuses_what_the_loader_refuses(bad, where):
    doc = {"schema": 1, "targets": {"0.29.0": {}}, "patches": [{"id": "x", "patch": "a.patch"}], **bad}
    with pytest.raises(jsonschema.ValidationError) as e:
        jsonschema.validate(doc, manifest_schema())
    assert where in str(e.value)


def test_schema_verb_prints_the_shipped_schema(capsys):
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == manifest_schema()


@pytest.mark.slow
@pytest.mark.network
def test_pre_commit_hooks_run_in_a_scratch_fork(tmp_path):
    """The real pre-commit installs this repository's hooks and runs them in a fork's repository."""
    if shutil.which("git") is None:
        pytest.fail("git is required")
    fork = tmp_path / "fork"
    (fork / "recipes" / "fix").mkdir(parents=True)
    (fork / "recipes" / "fix" / "fix.patch").write_text(
        "Description: a fix\n---\n--- a/vllm/x.py\n+++ b/vllm/x.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n")
    manifest = ('schema: 1\ntargets: {"0.29.0": {}}\npatches:\n'
                '  - id: fix\n    releases: ">=0.29"\n    patch: recipes/fix/fix.patch\n')
    (fork / "patches.yaml").write_text(manifest)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(fork)], check=True)
    subprocess.run([*git, "-C", str(fork), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(fork), "commit", "-qm", "fork"], check=True)
    env = {"PRE_COMMIT_HOME": str(tmp_path / "pc-home"), "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
           "HOME": str(tmp_path)}
    run = [sys.executable, "-m", "pre_commit", "try-repo", str(REPO), "patchset-validate", "--all-files"]
    ok = subprocess.run(run, cwd=fork, env=env, capture_output=True, text=True, timeout=600)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "patchset validate" in ok.stdout and "Passed" in ok.stdout
    (fork / "patches.yaml").write_text(manifest.replace("recipes/fix/fix.patch", "recipes/fix/gone.patch"))
    bad = subprocess.run(run, cwd=fork, env=env, capture_output=True, text=True, timeout=600)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "patches.yaml:" in bad.stdout and "gone.patch" in bad.stdout
