"""`patchset validate` reports every problem at once; a stray .patch stops validate, not check or audit."""

from __future__ import annotations

import json

import pytest
from helpers import udiff, write_manifest, write_patch

from patchset.cli import main
from patchset.core.manifest_load import MAX_ERRORS, load_manifest
from patchset.verbs.check import check
from patchset.verbs.validate import validate

pytest_plugins = ["conftest_docker"]

MOD = "vllm/sched.py"
PRISTINE = "".join(f"line{i} = {i}\n" for i in range(1, 21))
FIXED = PRISTINE.replace("line10 = 10\n", "line10 = 10 - 1\n")

GOOD = """
    schema: 1
    targets: {"0.29.0": {}}
    patches:
      - id: fix
        releases: ">=0.29.0"
        patch: recipes/fix/fix.patch
"""

# Four problems of four kinds, each on its own line.
BROKEN = """
    schema: 1
    targets:
      "0.29.0": {}
      0.30: {}
    patches:
      - id: fix
        releases: ">=0.29.0"
        releases: ">=0.28.0"
        patch: recipes/fix/fix.patch
      - id: other
        patch: recipes/other/gone.patch
        fuzz: lots
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "trees/0.29.0/vllm").mkdir(parents=True)
    (tmp_path / "trees/0.29.0" / MOD).write_text(PRISTINE)
    (tmp_path / "trees/0.29.0/vllm/__init__.py").write_text("")
    write_patch(tmp_path, "recipes/fix/fix.patch", udiff(MOD, PRISTINE, FIXED))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_validate_prints_every_problem_on_its_own_line_and_exits_2(project, capsys):
    write_manifest(project, BROKEN)
    assert main(["validate"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "patches.yaml:8: key 'releases' is written twice, at lines 7 and 8 "
        "(YAML would silently keep only one: delete or merge the other)",
        'patches.yaml:4: target 0.30 is not a string: unquoted, YAML reads it as the number 0.3 (quote it: "0.30")',
        "patches.yaml:11: patch other: patch file recipes/other/gone.patch does not exist "
        "(paths are relative to the manifest)",
        "patches.yaml:12: patch other: fuzz must be a whole number >= 0, not 'lots'",
        "patchset validate: error: patches.yaml: 4 problems",
    ]


def test_validate_json_holds_every_problem(project, capsys):
    write_manifest(project, BROKEN)
    assert main(["validate", "--format", "json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"ok", "error"} and doc["ok"] is False  # every verb's error document
    first, more = doc["error"], doc["error"]["more"]
    assert [(e["line"], e["message"].split(":")[0]) for e in [first, *more]] == [
        (8, "key 'releases' is written twice, at lines 7 and 8"),
        (4, "target 0.30 is not a string"), (11, "patch other"), (12, "patch other")]
    assert more[0] == {"file": "patches.yaml", "line": 4,
                       "message": "target 0.30 is not a string: unquoted, YAML reads it as the number 0.3",
                       "hint": 'quote it: "0.30"'}


def test_validate_json_has_the_shape_of_every_other_verbs_error(project, capsys):
    """The same broken manifest under validate and under check: one error document, key for key."""
    write_manifest(project, BROKEN)
    assert main(["validate", "--format", "json"]) == 2
    validated = json.loads(capsys.readouterr().out)
    assert main(["check", "--format", "json", "--source", f"dir:{project}/trees/{{version}}"]) == 2
    assert json.loads(capsys.readouterr().out) == validated


def test_validate_json_says_when_it_stopped_at_its_limit(project, capsys):
    items = "".join(f"      - {{id: p{i}, patch: recipes/fix/fix.patch, tpyo: 1}}\n" for i in range(2 * MAX_ERRORS))
    write_manifest(project, GOOD[:GOOD.index("      - id")] + items)
    assert main(["validate", "--format", "json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["truncated"] is True and len(doc["error"]["more"]) == MAX_ERRORS - 1


@pytest.mark.parametrize(("key", "typo"), [("targets", "targts"), ("patches", "pathces"), ("schema", "schem")])
def test_a_misspelled_top_level_key_is_one_error_at_that_key(project, capsys, key, typo):
    """Not a second one for the key it misses, pointing at line 1 (``schema: 1``), nor one per patch file the
    misspelled list no longer names."""
    text = GOOD.replace(f"    {key}:", f"    {typo}:", 1)
    lines = [x.strip() for x in text.strip().splitlines()]
    write_manifest(project, text)
    assert main(["validate"]) == 2
    err = capsys.readouterr().err.splitlines()
    line = next(i for i, x in enumerate(lines, 1) if x.startswith(typo))
    assert err == [f"patches.yaml:{line}: unknown key '{typo}' in the manifest (did you mean '{key}'? known keys: "
                   "layout, patches, recipes, schema, suites, targets, upstream)",
                   "patchset validate: error: patches.yaml: 1 problem"]


def test_a_missing_key_with_no_misspelling_near_it_is_still_an_error(project, capsys):
    write_manifest(project, GOOD.replace('    targets: {"0.29.0": {}}\n', "    colour: blue\n"))
    assert main(["validate"]) == 2
    err = capsys.readouterr().err
    assert "unknown key 'colour'" in err and "targets must map each pinned vLLM release" in err


def test_validate_json_when_all_is_well(project, capsys):
    write_manifest(project, GOOD)
    assert main(["validate", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "ok": True, "manifest": "patches.yaml", "patches": 1, "patch_files": 1, "hunks": 1, "targets": ["0.29.0"]}


def test_a_broken_patch_file_is_reported_with_the_manifest_problems(project):
    write_patch(project, "recipes/fix/fix.patch", f"--- a/{MOD}\n+++ b/{MOD}\n@@ -1,3 +1,3 @@\n-line1 = 1\n")
    write_manifest(project, GOOD.replace("targets:", "typo: 1\n    targets:"))
    report = validate("patches.yaml")
    assert [(e.file, e.line) for e in report.errors] == [("patches.yaml", 2), ("recipes/fix/fix.patch", 6)]  # cut there
    assert "unknown key 'typo'" in str(report.errors[0])


def test_validate_stops_at_the_limit_and_says_so(project, capsys):
    items = "".join(f"      - {{id: p{i}, patch: recipes/fix/fix.patch, tpyo: 1}}\n" for i in range(2 * MAX_ERRORS))
    write_manifest(project, GOOD[:GOOD.index("      - id")] + items)
    assert main(["validate"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == MAX_ERRORS + 1
    assert err[-1] == f"patchset validate: error: patches.yaml: {MAX_ERRORS} problems (stopped at {MAX_ERRORS}; " \
                      "fix these and run it again)"


def test_an_unnamed_patch_file_stops_validate_but_only_warns_in_check(project, capsys):
    write_manifest(project, GOOD)
    write_patch(project, "recipes/wip/next.patch", udiff(MOD, PRISTINE, FIXED))
    assert main(["validate"]) == 2
    assert "patches.yaml:3: recipes/wip/next.patch is not named by any patch" in capsys.readouterr().err
    assert main(["check", "--source", "dir:trees/{version}", "--format", "json"]) == 0
    (target,) = json.loads(capsys.readouterr().out)["targets"]
    assert ("patches.yaml:3: recipes/wip/next.patch is not named by any patch "
            "(add it to the manifest or delete it)") in target["warnings"]
    report = check(load_manifest("patches.yaml"), source="dir:trees/{version}")
    assert report.ok and report.targets[0].patches[0].status == "applies"


@pytest.mark.docker
def test_audit_warns_about_an_unnamed_patch_file(project, docker_client):
    from patchset.verbs.audit import audit

    write_manifest(project, GOOD)
    write_patch(project, "recipes/wip/next.patch", udiff(MOD, PRISTINE, FIXED))
    # An image that does not exist: the audit ends early, and the warning must be there already.
    report = audit(load_manifest("patches.yaml"), ["patchset-test/no-such-image:validate-warning"],
                   client=docker_client)
    (image,) = report.images
    assert image.error and image.warnings == ["patches.yaml:3: recipes/wip/next.patch is not named by any patch "
                                              "(add it to the manifest or delete it)"]


@pytest.mark.docker
@pytest.mark.slow
def test_build_warns_about_an_unnamed_patch_file(tmp_path, docker_client, standin, session_repo):
    from patchset.verbs.build import BuildError, build_image

    scheduler = "vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py"
    write_patch(tmp_path, "recipes/bad.patch",
                f"--- a/{scheduler}\n+++ b/{scheduler}\n@@ -1,2 +1,2 @@\n-not there\n+nor this\n context\n")
    write_patch(tmp_path, "recipes/wip/next.patch", udiff(MOD, PRISTINE, FIXED))
    manifest = load_manifest(write_manifest(tmp_path, """
        schema: 1
        targets: {"0.29.0": {}}
        patches:
          - {id: bad, releases: ">=0.29", patch: recipes/bad.patch}
    """))
    said: list[str] = []
    # The series does not apply, so nothing is built: the warning comes first, and does not stop it.
    with pytest.raises(BuildError, match="does not apply"):
        build_image(manifest, "0.29.0", base=standin, tag=f"{session_repo}:orphan", client=docker_client,
                    progress=said.append)
    assert f"warning: {tmp_path}/patches.yaml:3: recipes/wip/next.patch is not named by any patch " \
           "(add it to the manifest or delete it)\n" in said


# --- unfinished port conflicts: a finding (exit 1), so an upgrade's pull request cannot be merged as it is ---


def _conflicted(tmp_path):
    import portfixture

    from patchset.verbs.port import port

    manifest = portfixture.build(tmp_path)
    port(load_manifest(manifest), "0.29.0", source=portfixture.source(tmp_path), only=["clash"])
    return manifest, manifest.parent / ".patchset/port/clash/vllm/clash.py"


def test_a_conflict_marker_left_in_a_port_workspace_fails_validate_with_exit_1(tmp_path, capsys):
    manifest, merged = _conflicted(tmp_path)
    assert main(["validate", "--manifest", str(manifest)]) == 1
    err = capsys.readouterr().err
    assert ".patchset/port/clash/vllm/clash.py:" in err and "conflict markers remain" in err
    assert "patchset refresh clash --vllm 0.29.0" in err
    assert main(["validate", "--manifest", str(manifest), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and doc["unresolved"][0]["patch"] == "clash" and "error" not in doc


def test_a_resolved_workspace_fails_until_refresh_writes_its_patch(tmp_path, capsys):
    import portfixture

    from patchset.verbs.refresh import refresh

    manifest, merged = _conflicted(tmp_path)
    text = merged.read_text()
    ours = text.split("<<<<<<< ")[1].split("\n", 1)[1].split("|||||||")[0]
    merged.write_text(text.split("<<<<<<< ")[0] + ours.replace("line_20 = 20  # upstream", "line_20 = -20  # upstream")
                      + text.split(">>>>>>> ")[1].split("\n", 1)[1])
    report = validate(manifest)
    assert [e.message for e in report.unresolved] == [
        "the port conflict to vLLM 0.29.0 is resolved but no patch file was made from it"]
    refresh(load_manifest(manifest), "clash", "0.29.0", source=portfixture.source(tmp_path))
    assert validate(manifest).ok


def test_a_broken_manifest_with_a_workspace_is_still_bad_input(tmp_path):
    manifest, _ = _conflicted(tmp_path)
    manifest.write_text(manifest.read_text().replace("schema: 1", "schema: 7"))
    assert main(["validate", "--manifest", str(manifest)]) == 2
