"""A release the package index lacks, named one way by every verb (issue 38), at the manifest's line when the
manifest names it."""

from __future__ import annotations

import json

import pytest

from patchset.cli import main

pytestmark = pytest.mark.network

NOT_THERE = ("vllm 0.14.9 is not a release on the index (the releases next to it: 0.13.0, 0.14.0, 0.14.1, 0.15.0, "
             "0.15.1, 0.16.0) (name a release the index has)")


@pytest.fixture
def fork(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "patches.yaml").write_text('schema: 1\nupstream:\n  pypi: vllm\n  tag: "v{version}"\ntargets:\n'
                                           '  "0.14.1": {}\npatches: []\n')
    (tmp_path / "a.patch").write_text("--- a/vllm/x.py\n+++ b/vllm/x.py\n@@ -1 +1 @@\n-x\n+y\n")
    return tmp_path


@pytest.mark.parametrize("argv", [["next", "--vllm", "0.14.9"], ["port", "--to", "0.14.9", "--dry-run"],
                                  ["import", "a.patch", "--target", "0.14.9", "--into", "out"]])
def test_next_port_and_import_say_the_same_of_a_release_that_does_not_exist(fork, capsys, argv):
    assert main(argv) == 2
    assert capsys.readouterr().err == f"patchset {argv[0]}: error: {NOT_THERE}\n"
    assert not (fork / "out").exists()


def test_a_target_the_index_lacks_is_named_at_its_line_of_the_manifest(fork, capsys):
    manifest = fork / "patches.yaml"
    manifest.write_text(manifest.read_text().replace('"0.14.1": {}\n', '"0.14.1": {}\n  "0.14.9": {}\n'))
    assert main(["next", "--vllm", "0.14.9"]) == 2
    assert capsys.readouterr().err == f"patchset next: error: patches.yaml:7: {NOT_THERE}\n"
    assert main(["check", "--format", "json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert (error["file"], error["line"]) == ("patches.yaml", 7)
    assert error["message"].startswith("vllm 0.14.9 is not a release on the index")


def test_a_release_with_wheels_only_says_to_check_it_against_the_wheel(fork, capsys):
    assert main(["next", "--vllm", "0.15.0"]) == 2
    err = capsys.readouterr().err
    assert "vllm 0.15.0 has no source distribution on the index, only vllm-0.15.0-" in err
    assert "(--source wheel)" in err
