"""Bad input, each kind once: exit 2, one line that names where (FILE:LINE for files) and what to do,
nothing written; with ``--format json`` stdout is one JSON document saying so.

The manifest cases assert the file and a line number, never the wording of the
loader's messages (the manifest loader's messages are its own to refine).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers import ONE_PATCH_MANIFEST, udiff

from patchset.cli import main

MOD = "vllm/sched.py"
PRISTINE = "".join(f"line{i} = {i}\n" for i in range(1, 31))
FIXED = PRISTINE.replace("line10 = 10\n", "line10 = 10 - 1\n")
HEADER = "Description: test patch\n---\n"
GOOD_PATCH = HEADER + udiff(MOD, PRISTINE, FIXED)
MANIFEST = ONE_PATCH_MANIFEST
SRC = ["--source", "dir:trees/{version}"]
AT_MANIFEST = r"patches\.yaml:\d+: "
AT_PATCH = r"recipes/fix/fix\.patch:\d+: "


@dataclass
class Case:
    argv: list[str]
    manifest: str | None = None  # replaces patches.yaml
    patch: str | None = None  # replaces recipes/fix/fix.patch
    where: str = ""  # a regex the error line must contain
    files: dict[str, str] = field(default_factory=dict)  # more files to write first


def edit(old: str, new: str) -> str:
    assert old in MANIFEST
    return MANIFEST.replace(old, new)


def with_patch(entry: str) -> str:
    return MANIFEST + textwrap.indent(textwrap.dedent(entry), "  ")


MANIFEST_CASES = {
    "not-yaml": "schema: 1\ntargets: [\n",
    "a-list": "- schema\n- targets\n",
    "empty": "",
    "unknown-top-key": MANIFEST + "tragets: {}\n",
    "schema-2": edit("schema: 1", "schema: 2"),
    "no-schema": edit("schema: 1\n", ""),
    "no-targets": edit('targets:\n  "0.29.0": {}\n', ""),
    "empty-targets": edit('targets:\n  "0.29.0": {}\n', "targets: {}\n"),
    "target-not-a-version": edit('"0.29.0": {}', '"banana": {}'),
    "target-settings-a-list": edit('"0.29.0": {}', '"0.29.0": [1]'),
    "unknown-target-key": edit('"0.29.0": {}', '"0.29.0": {imag: "x:y"}'),
    "upstream-not-a-mapping": edit("schema: 1\n", "schema: 1\nupstream: vllm\n"),
    "tag-without-version": edit("schema: 1\n", "schema: 1\nupstream: {tag: v1}\n"),
    "unknown-upstream-key": edit("schema: 1\n", "schema: 1\nupstream: {pypy: vllm}\n"),
    "patches-not-a-list": edit(MANIFEST[MANIFEST.index("patches:"):], "patches: fix\n"),
    "patch-entry-a-string": edit(MANIFEST[MANIFEST.index("patches:"):], "patches:\n  - fix\n"),
    "patch-without-id": edit("  - id: fix\n    releases", "  - releases"),
    "patch-id-with-spaces": edit("id: fix", "id: Fix Me"),
    "duplicate-patch-id": with_patch("""\
        - id: fix
          patch: recipes/fix/fix.patch
        """),
    "unknown-patch-key": edit("releases:", "relases:"),
    "releases-not-a-specifier": edit('">=0.28.0"', '">=banana"'),
    "patch-missing": edit("    patch: recipes/fix/fix.patch\n", ""),
    "patch-file-absent": edit("recipes/fix/fix.patch", "recipes/fix/nope.patch"),
    "patch-a-number": edit("patch: recipes/fix/fix.patch", "patch: 3"),
    "patch-map-overlaps": edit("patch: recipes/fix/fix.patch",
                               'patch: {">=0.28": recipes/fix/fix.patch, "<0.30": recipes/fix/fix.patch}'),
    "patch-map-leaves-a-target-out": edit("patch: recipes/fix/fix.patch",
                                          'patch: {"<0.29": recipes/fix/fix.patch}'),
    "after-unknown-id": edit("    tests:", "    after: [nope]\n    tests:"),
    "after-cycle": edit("    tests:", "    after: [other]\n    tests:") + textwrap.indent(textwrap.dedent("""\
        - id: other
          after: [fix]
          patch: recipes/fix/fix.patch
        """), "  "),
    "origin-unknown": edit("    tests:", "    origin: upstreamish\n    tests:"),
    "pr-not-a-number": edit("    tests:", "    upstream: {pr: fifty}\n    tests:"),
    "commit-not-hex": edit("    tests:", "    upstream: {commit: zzz}\n    tests:"),
    "tests-a-mapping": edit('tests: ["tests/test_sched.py"]', "tests: {a: 1}"),
    "probe-unknown-key": edit("    tests:", "    present: {file: vllm/sched.py, has: x}\n    tests:"),
    "fuzz-negative": edit("    tests:", "    fuzz: -1\n    tests:"),
    "strip-a-word": edit("    tests:", "    strip: one\n    tests:"),
    "target-an-unquoted-float": edit('"0.29.0": {}', "0.30: {}"),
    "releases-an-unquoted-float": edit('releases: ">=0.28.0"', "releases: 0.29"),
    "duplicate-key": edit('    releases: ">=0.28.0"\n', '    releases: ">=0.28.0"\n    releases: ">=0.29.0"\n'),
}

#: Each malformed in its own way; checked by `validate` (the verb that refuses bad patch files).
PATCH_CASES = {
    "no-diff": HEADER + "just prose, no diff\n",
    "hunk-too-short": GOOD_PATCH.replace(" line13 = 13\n", ""),
    "hunk-too-long": GOOD_PATCH.replace("+line10 = 10 - 1\n", "+line10 = 10 - 1\n+extra = 1\n"),
    "binary": GOOD_PATCH + "diff --git a/vllm/x.bin b/vllm/x.bin\nGIT binary patch\nliteral 1\nIcmZp00001\n",
    "leaves-the-tree": GOOD_PATCH.replace("a/vllm/sched.py", "a/../../etc/passwd"),
    # a plain (not git) diff edits the file its +++ line names; GNU patch and git apply take it. Refused all
    # the same: a patch that names a path outside the tree is not one to carry (issue 21)
    "old-path-leaves-the-tree": GOOD_PATCH.replace(f"diff --git a/{MOD} b/{MOD}\n", "")
                                          .replace(f"--- a/{MOD}", "--- a/../../etc/passwd"),
    "too-few-components": GOOD_PATCH.replace("a/vllm/sched.py", "sched.py").replace("b/vllm/sched.py", "sched.py"),
    "line-without-prefix": GOOD_PATCH.replace(" line8 = 8\n", "line8 = 8\n"),
    # found by a mutated fork patch (issue 26): opening such a path failed with ENAMETOOLONG, exit 3
    "path-component-too-long": GOOD_PATCH.replace("b/vllm/sched.py", "b/vllm/" + "x" * 300 + "/sched.py"),
    "path-with-nul": GOOD_PATCH.replace("b/vllm/sched.py", "b/vllm/sch\0ed.py"),
}

ARG_CASES = {
    "vllm-not-a-version": Case(["check", *SRC, "--vllm", "foo"], where="'foo' is not a release version"),
    "vllm-not-a-version-apply": Case(["apply", "--vllm", "0.29.x", "trees/0.29.0"], where="--vllm"),
    "vllm-not-a-version-test": Case(["test", "--vllm", "latest"], where="--vllm"),
    "vllm-not-a-target": Case(["check", *SRC, "--vllm", "0.31.0"],
                              where=r"patches\.yaml:\d+: vLLM 0\.31\.0 is not a target"),
    "unknown-source": Case(["check", "--source", "ftp:x"], where="unknown source"),
    "unknown-format": Case(["check", "--format", "xml"], where="--format"),
    "unknown-option": Case(["check", "--bogus"], where="--bogus"),
    "no-verb": Case([], where="VERB"),
    "unknown-verb": Case(["frobnicate"], where="frobnicate"),
    "apply-without-dir": Case(["apply", "--vllm", "0.29.0"], where="DIR"),
    "manifest-absent": Case(["check", "--manifest", "nope.yaml"], where="nope.yaml"),
    "manifest-a-folder": Case(["check", "--manifest", "recipes"], where="recipes"),
    "test-unknown-patch": Case(["test", "--vllm", "0.29.0", "--patch", "nope"], where="nope"),
    "test-gpus-without-image": Case(["test", "--vllm", "0.29.0", "--gpus", "all"], where="--gpus"),
    "test-venv-and-image": Case(["test", "--vllm", "0.29.0", "--venv", "--image", "a:b"], where="--image"),
    "test-timeout-negative": Case(["test", "--vllm", "0.29.0", "--timeout", "-1"], where="--timeout"),
    "test-timeout-a-word": Case(["test", "--vllm", "0.29.0", "--timeout", "soon"], where="--timeout"),
    "test-workdir-a-file": Case(["test", "--vllm", "0.29.0", "--workdir", "patches.yaml"], where="--workdir"),
    "test-workdir-not-empty": Case(["test", "--vllm", "0.29.0", "--workdir", "recipes"], where="--workdir"),
    "test-junit-folder-missing": Case(["test", "--vllm", "0.29.0", "--junit", "no/such/out.xml"], where="--junit"),
    "test-image-malformed": Case(["test", "--vllm", "0.29.0", "--image", "::bad"], where="--image"),
    "test-gpus-malformed": Case(["test", "--vllm", "0.29.0", "--image", "a:b", "--gpus", "some"], where="--gpus"),
    "build-tag-with-space": Case(["build", "--vllm", "0.29.0", "--tag", "my image:v1"], where="--tag"),
    "build-tag-upper-case": Case(["build", "--vllm", "0.29.0", "--tag", "fork/vLLM:v1"], where="--tag"),
    "build-tag-with-digest": Case(["build", "--vllm", "0.29.0", "--tag", "fork/vllm@sha256:" + "a" * 64],
                                  where="--tag"),
    "build-tag-too-long": Case(["build", "--vllm", "0.29.0", "--tag", "fork/vllm:" + "v" * 129], where="--tag"),
    "build-base-malformed": Case(["build", "--vllm", "0.29.0", "--base", "vllm:v1:v2"], where="--base"),
    "audit-malformed-image": Case(["audit", "not an image!"], where="IMAGE"),
    "audit-without-image": Case(["audit"], where="IMAGE"),
    "targets-unknown-format": Case(["targets", "--format", "yaml"], where="--format"),
    "deps-vllm-not-a-version": Case(["deps", "--vllm", "foo"], where="--vllm"),
    "next-vllm-not-a-version": Case(["next", "--vllm", "newest"], where="--vllm"),
    "port-to-not-a-version": Case(["port", "--to", "latest"], where="--to"),
    "port-from-not-a-version": Case(["port", "--to", "0.30.0", "--from", "0.29.x"], where="--from"),
    "refresh-vllm-not-a-version": Case(["refresh", "fix", "--vllm", "foo"], where="--vllm"),
}


def snapshot(*roots: Path) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for root in roots:
        for p in sorted(root.rglob("*")):
            out[str(p)] = p.read_bytes() if p.is_file() else None
    return out


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "project"
    (root / "trees" / "0.29.0" / "vllm").mkdir(parents=True)
    (root / "trees" / "0.29.0" / MOD).write_text(PRISTINE)
    (root / "trees" / "0.29.0" / "vllm" / "__init__.py").write_text("")
    (root / "recipes" / "fix").mkdir(parents=True)
    (root / "recipes" / "fix" / "fix.patch").write_text(GOOD_PATCH)
    (root / "patches.yaml").write_text(MANIFEST)
    for folder in ("cache", "tmp"):
        (tmp_path / folder).mkdir()
    monkeypatch.setenv("PATCHSET_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.chdir(root)
    assert main(["validate"]) == 0  # the project is good until a case breaks it
    return tmp_path


def refused(project: Path, capsys, argv: list[str], where: str) -> dict | None:
    """Run argv; assert the contract of bad input. Returns the JSON error object, if JSON was asked for."""
    capsys.readouterr()
    before = snapshot(project)
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (argv, out, err)
    lines = err.splitlines()
    assert "Traceback" not in err
    if argv[:1] == ["validate"]:
        # validate lists every problem, one a line, FILE first, then how many there were (an orphaned
        # recipes/ file is one more when the case broke the entry that named it)
        assert len(lines) >= 2 and re.fullmatch(r"patchset validate: error: patches\.yaml: \d+ problems?", lines[-1])
        assert all(re.match(r"(patches\.yaml|recipes/fix/fix\.patch):", line) for line in lines[:-1]), err
    else:
        assert len(lines) == 1 and lines[0].startswith("patchset") and ": error: " in lines[0], err
    assert re.search(where, lines[0]), (where, lines[0])
    assert snapshot(project) == before, "bad input must write nothing"
    if "json" not in argv:
        assert out == ""
        return None
    doc = json.loads(out)
    assert doc["ok"] is False and set(doc["error"]) == {"file", "line", "message", "hint"}
    return doc["error"]


@pytest.mark.parametrize("name", sorted(MANIFEST_CASES))
def test_malformed_manifests_are_refused_with_file_and_line(project, capsys, name):
    (project / "project" / "patches.yaml").write_text(MANIFEST_CASES[name])
    refused(project, capsys, ["validate"], "^" + AT_MANIFEST)
    error = refused(project, capsys, ["check", *SRC, "--format", "json"], AT_MANIFEST)
    assert error is not None and error["file"].endswith("patches.yaml") and error["line"] >= 1


@pytest.mark.parametrize("name", sorted(PATCH_CASES))
def test_malformed_patch_files_are_refused_with_file_and_line(project, capsys, name):
    (project / "project" / "recipes" / "fix" / "fix.patch").write_text(PATCH_CASES[name])
    # a file with no diff at all is wrong as a whole: it is named without a line
    at = r"recipes/fix/fix\.patch: " if name == "no-diff" else AT_PATCH
    refused(project, capsys, ["validate"], "^" + at)
    # check and apply too: bad input (exit 2), not "a fix is missing" (exit 1), and the patch is named
    refused(project, capsys, ["check", *SRC], ": error: " + at + "patch fix: ")
    error = refused(project, capsys, ["check", *SRC, "--format", "json"], at)
    assert error is not None and error["file"] == "recipes/fix/fix.patch" and error["message"].startswith("patch fix: ")
    assert (error["line"] is None) == (name == "no-diff")
    refused(project, capsys, ["apply", "--vllm", "0.29.0", "trees/0.29.0"], ": error: " + at + "patch fix: ")


@pytest.mark.parametrize("name", sorted(ARG_CASES))
def test_bad_arguments_are_refused_with_what_to_do(project, capsys, name):
    case = ARG_CASES[name]
    refused(project, capsys, case.argv, case.where)
    if "--format" not in case.argv and case.argv and case.argv[0] in ("check", "audit", "test", "targets"):
        # the same mistake asked for as JSON: one document on stdout, still exit 2
        error = refused(project, capsys, [*case.argv, "--format", "json"], case.where)
        assert error is not None and error["message"]


def test_there_are_at_least_forty_distinct_cases():
    assert len(MANIFEST_CASES) + len(PATCH_CASES) + len(ARG_CASES) >= 40
    texts = [*MANIFEST_CASES.values(), *PATCH_CASES.values()]
    assert len(set(texts)) == len(texts)


def test_a_real_process_exits_2_with_one_line(project):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-m", "patchset", "check", "--vllm", "foo", "--format", "json"],
                          cwd=project / "project", capture_output=True, text=True, env=env)
    assert proc.returncode == 2
    assert len(proc.stderr.splitlines()) == 1 and "'foo' is not a release version" in proc.stderr
    assert json.loads(proc.stdout)["ok"] is False


@pytest.mark.parametrize("name", ["path-component-too-long", "path-with-nul"])
def test_check_names_an_unopenable_patch_path_instead_of_crashing(project, capsys, name):
    """Issue 26: `check` read such a path from the tree and died with OSError (ENAMETOOLONG), exit 3.

    A malformed patch is bad input (issue 21): exit 2, the patch file, the line of the path and the patch named.
    """
    (project / "project" / "recipes" / "fix" / "fix.patch").write_text(PATCH_CASES[name])
    capsys.readouterr()
    code = main(["check", *SRC])
    out, err = capsys.readouterr()
    assert code == 2 and "internal error" not in err, err
    line = PATCH_CASES[name].splitlines().index(next(x for x in PATCH_CASES[name].splitlines()
                                                     if x.startswith("+++ "))) + 1
    assert f"recipes/fix/fix.patch:{line}: patch fix: path " in out + err, out + err
