"""Options several verbs share: the manifest a verb run in a subfolder uses is found as git finds its own."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import udiff, write_manifest, write_patch

from patchset.cli import main
from patchset.core.manifest_load import find_manifest

PRISTINE = "".join(f"line{i} = {i}\n" for i in range(1, 21))
MANIFEST = """
    schema: 1
    targets: {"0.29.0": {}}
    patches:
      - {id: fix, releases: ">=0.29.0", patch: recipes/fix/fix.patch}
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository holding a manifest at its root, a recipes/ folder, and a tree of vLLM 0.29.0 beside."""
    root = tmp_path / "fork"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    write_patch(root, "recipes/fix/fix.patch", udiff("vllm/mod.py", PRISTINE, PRISTINE.replace("line5 = 5", "x")))
    write_manifest(root, MANIFEST)
    tree = tmp_path / "trees/0.29.0/vllm"
    tree.mkdir(parents=True)
    (tree / "mod.py").write_text(PRISTINE)
    (tree / "__init__.py").write_text("")
    return root


def test_find_manifest_looks_upward_to_the_repository_root(repo, monkeypatch):
    deep = repo / "recipes" / "fix"
    assert find_manifest(deep) == deep / "../../patches.yaml"
    assert find_manifest(repo) == repo / "patches.yaml"
    monkeypatch.chdir(deep)
    assert find_manifest() == Path("../../patches.yaml")


def test_find_manifest_stops_at_the_repository_root(repo, tmp_path):
    """A patches.yaml above the repository is another project's: not taken."""
    shutil.move(repo / "patches.yaml", tmp_path / "patches.yaml")
    assert find_manifest(repo / "recipes") == repo / "recipes" / "patches.yaml"  # not found: its loader says so


def test_outside_a_repository_only_the_folder_itself_counts(tmp_path):
    (tmp_path / "patches.yaml").write_text("schema: 1\n")
    (tmp_path / "sub").mkdir()
    assert find_manifest(tmp_path / "sub") == tmp_path / "sub" / "patches.yaml"


def test_check_in_recipes_uses_the_root_manifest_and_says_so(repo, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(repo / "recipes")
    source = f"dir:{tmp_path}/trees/{{version}}"
    assert main(["check", "--source", source, "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["manifest"] == "../patches.yaml"
    assert "patchset: using the manifest ../patches.yaml" in err
    assert main(["validate"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("../patches.yaml: ok: 1 patch") and "using the manifest ../patches.yaml" in err


def test_at_the_root_nothing_is_said_and_an_explicit_manifest_is_taken_as_it_is(repo, monkeypatch, capsys):
    monkeypatch.chdir(repo)
    assert main(["validate"]) == 0
    assert capsys.readouterr().err == ""
    monkeypatch.chdir(repo / "recipes")
    assert main(["validate", "--manifest", "patches.yaml"]) == 2  # asked for recipes/patches.yaml: there is none
    err = capsys.readouterr().err
    assert err.startswith("patches.yaml: no manifest here") and "using the manifest" not in err
