"""patchset.images.engine without an engine: one error type, mapped once by the CLI for every verb."""

from __future__ import annotations

import json

import pytest
from helpers import ONE_PATCH_MANIFEST, udiff

from patchset.cli import main
from patchset.errors import EXIT_BAD_INPUT, PatchsetError
from patchset.images import engine

NO_ENGINE = "unix:///nonexistent/docker.sock"
MOD = "vllm/sched.py"
PRISTINE = "".join(f"line{i} = {i}\n" for i in range(1, 31))


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A valid series on a dir: tree (tests/ included), in the working directory; no engine answers."""
    tree = tmp_path / "trees" / "0.29.0"
    (tree / "vllm").mkdir(parents=True)
    (tree / "tests").mkdir()
    (tree / MOD).write_text(PRISTINE)
    (tree / "vllm" / "__init__.py").write_text("")
    (tree / "tests" / "test_sched.py").write_text("def test_sched():\n    pass\n")
    (tmp_path / "recipes" / "fix").mkdir(parents=True)
    (tmp_path / "recipes" / "fix" / "fix.patch").write_text(
        "Description: test patch\n---\n" + udiff(MOD, PRISTINE, PRISTINE.replace("line10 = 10\n", "line10 = 9\n")))
    (tmp_path / "patches.yaml").write_text(ONE_PATCH_MANIFEST)
    monkeypatch.setenv("PATCHSET_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DOCKER_HOST", NO_ENGINE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_no_engine_is_bad_input_with_what_to_do(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", NO_ENGINE)
    with pytest.raises(engine.EngineUnavailable) as caught:
        engine.connect(timeout=10)
    assert isinstance(caught.value, engine.ImageError) and isinstance(caught.value, PatchsetError)
    assert caught.value.exit_code == EXIT_BAD_INPUT
    assert caught.value.hint == engine.ENGINE_HINT
    assert str(caught.value).startswith("no Docker engine answers: ")


@pytest.mark.parametrize("argv", [
    ["build", "--vllm", "0.29.0"],
    ["audit", "example/vllm:1"],
    ["sbom", "example/vllm:1"],  # exit 3, an internal error with a traceback, when the CLI mapped it per verb
    ["test", "--vllm", "0.29.0", "--image", "example/vllm:1", "--source", "dir:trees/{version}"],
], ids=lambda argv: argv[0])
def test_every_docker_verb_says_no_engine_in_one_line_with_the_hint(project, capsys, argv):
    assert main(argv) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"patchset {argv[0]}: error: no Docker engine answers: "), err
    assert err.endswith(f"({engine.ENGINE_HINT})"), err
    assert err.count(engine.ENGINE_HINT) == 1, err


@pytest.mark.parametrize("argv", [
    ["build", "--vllm", "0.29.0"],
    ["audit", "example/vllm:1"],
    ["test", "--vllm", "0.29.0", "--image", "example/vllm:1", "--source", "dir:trees/{version}"],
], ids=lambda argv: argv[0])
def test_no_engine_in_json_is_one_document_with_the_hint(project, capsys, argv):
    assert main([*argv, "--format", "json"]) == EXIT_BAD_INPUT
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False
    assert doc["error"]["message"].startswith("no Docker engine answers: ")
    assert doc["error"]["hint"] == engine.ENGINE_HINT
