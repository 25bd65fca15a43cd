"""Manifest errors name the file and line and say what to do."""

from __future__ import annotations

import pytest
from helpers import udiff, write_manifest, write_patch

from patchset.core.manifest_load import MAX_ERRORS, ManifestErrors, inspect_manifest, load_manifest
from patchset.errors import ManifestError

DIFF = udiff("vllm/x.py", "a\n", "b\n")


def make(tmp_path, patches: str, extra: str = "", files=("recipes/one/fix.patch",)):
    for f in files:
        write_patch(tmp_path, f, DIFF)
    return write_manifest(tmp_path, f"""
        schema: 1
        upstream: {{pypi: vllm}}
        targets:
          "0.28.0": {{image: "vllm/vllm-openai:v0.28.0"}}
          "0.29.0": {{}}
        {extra}
        patches:
        {patches}
        """)


ONE = """
          - id: one
            releases: ">=0.28.0,<0.30.0"
            patch: recipes/one/fix.patch
"""


def test_a_good_manifest_loads(tmp_path):
    m = load_manifest(make(tmp_path, ONE, extra="suites: [tests/v1/x]"))
    assert [t.version for t in m.targets] == ["0.28.0", "0.29.0"]
    assert m.targets[0].image == "vllm/vllm-openai:v0.28.0"
    (p,) = m.patches
    assert p.id == "one" and p.targets("0.29.0") and not p.targets("0.30.0")
    assert [s.path for s in m.suites] == ["tests/v1/x"] and not m.suites[0].gpu
    assert len(m.sha256) == 64


def error(tmp_path, patches, **kw) -> ManifestError:
    with pytest.raises(ManifestError) as e:
        load_manifest(make(tmp_path, patches, **kw))
    return e.value


def test_duplicate_id_names_both_lines(tmp_path):
    e = error(tmp_path, ONE + ONE)
    assert "duplicate patch id 'one' (first at line 9)" in str(e)
    assert e.line == 13 and e.file.endswith("patches.yaml")


def test_unknown_after_and_cycles(tmp_path):
    e = error(tmp_path, ONE.rstrip() + "\n            after: [ghost]\n")
    assert "unknown patch 'ghost'" in str(e) and e.patch == "one"
    two = ONE.replace("id: one", "id: two").rstrip() + "\n            after: [three]\n"
    three = ONE.replace("id: one", "id: three").rstrip() + "\n            after: [two]\n"
    e = error(tmp_path, two + three)
    assert "dependency cycle: two -> three -> two" in str(e)


def test_after_must_come_earlier_in_the_series(tmp_path):
    first = ONE.replace("id: one", "id: first").rstrip() + "\n            after: [second]\n"
    second = ONE.replace("id: one", "id: second")
    e = error(tmp_path, first + second)
    assert "listed before 'second'" in str(e) and "move it below" in str(e)


def test_missing_patch_file_and_orphan_patch_file(tmp_path):
    e = error(tmp_path, ONE.replace("recipes/one/fix.patch", "recipes/one/nope.patch"))
    assert "recipes/one/nope.patch does not exist" in str(e) and e.line == 11
    write_patch(tmp_path, "recipes/stray/old.patch", DIFF)
    # A file being worked on must not stop a check or an audit: loading warns, validate refuses.
    m = load_manifest(make(tmp_path, ONE))
    assert m.warnings == (f"{m.path}:7: recipes/stray/old.patch is not named by any patch "
                          "(add it to the manifest or delete it)",)
    _, errors = inspect_manifest(m.path)
    assert [(x.line, x.message) for x in errors] == [(7, "recipes/stray/old.patch is not named by any patch")]
    # a link to a named file is that file, not an orphan
    (tmp_path / "recipes/stray/old.patch").unlink()
    (tmp_path / "recipes/alias.patch").symlink_to(tmp_path / "recipes/one/fix.patch")
    assert load_manifest(m.path).warnings == ()


def test_bad_specifier_and_version(tmp_path):
    e = error(tmp_path, ONE.replace('">=0.28.0,<0.30.0"', '">=0.28,,banana"'))
    assert "not a PEP 440 specifier" in str(e) and e.line == 10
    m = make(tmp_path, ONE)
    m.write_text(m.read_text().replace('"0.29.0": {}', '"zero": {}'))
    with pytest.raises(ManifestError, match="not a PEP 440 version"):
        load_manifest(m)


def test_unknown_key_is_a_typo_not_silently_ignored(tmp_path):
    e = error(tmp_path, ONE.rstrip() + "\n            relases: '>=1'\n")
    assert "unknown key 'relases'" in str(e) and "releases" in e.hint


def test_per_release_patch_files_must_cover_every_targeted_release(tmp_path):
    per = """
          - id: one
            releases: ">=0.28.0,<0.30.0"
            patch:
              "<0.29": recipes/one/vllm-0.28.patch
"""
    e = error(tmp_path, per, files=("recipes/one/vllm-0.28.patch",))
    assert "no patch file covers target 0.29.0" in str(e)
    ok = per + '              ">=0.29,<0.30": recipes/one/vllm-0.29.patch\n'
    m = load_manifest(make(tmp_path, ok, files=("recipes/one/vllm-0.28.patch", "recipes/one/vllm-0.29.patch")))
    assert m.patches[0].choice_for("0.29.0").path.name == "vllm-0.29.patch"
    assert m.patches[0].choice_for("0.28.0").path.name == "vllm-0.28.patch"


def test_invalid_yaml_names_the_line(tmp_path):
    path = tmp_path / "patches.yaml"
    path.write_text("schema: 1\ntargets: [\n")
    with pytest.raises(ManifestError) as e:
        load_manifest(path)
    assert "not valid YAML" in str(e.value) and e.value.line == 3


def test_dependants_are_transitive(tmp_path):
    two = ONE.replace("id: one", "id: two").rstrip() + "\n            after: [one]\n"
    three = ONE.replace("id: one", "id: three").rstrip() + "\n            after: [two]\n"
    m = load_manifest(make(tmp_path, ONE + two + three))
    assert m.dependants("one") == {"two", "three"}
    assert m.dependants("three") == set()


def test_an_installed_version_with_a_local_label_is_the_same_release():
    from patchset.versions import same_release

    assert same_release("0.29.0+cpu", "0.29.0")
    assert same_release("0.29.0", "0.29")
    assert not same_release("0.29.1", "0.29.0")
    assert not same_release("0.29.0.post1", "0.29.0")


# --- the manifest means what it says ----------------------------------------------------------------


def problems(path) -> list[tuple[int | None, str]]:
    _, errors = inspect_manifest(path)
    return [(e.line, e.render().split(": ", 1)[1]) for e in errors]


def test_an_unquoted_target_is_refused_as_written_with_the_fix(tmp_path):
    m = make(tmp_path, ONE)
    m.write_text(m.read_text().replace('"0.29.0": {}', "0.30: {}\n  1: {}"))
    assert problems(m) == [
        (5, 'target 0.30 is not a string: unquoted, YAML reads it as the number 0.3 (quote it: "0.30")'),
        (6, 'target 1 is not a string: unquoted, YAML reads it as the number 1 (quote it: "1")'),
    ]


def test_an_unquoted_target_in_flow_style_names_its_line(tmp_path):
    m = make(tmp_path, ONE)
    text = m.read_text()
    block = text[text.index("targets:"):text.index("\n\n")]
    m.write_text(text.replace(block, 'targets: {"0.28.0": {}, 0.29: {image: x}, 0.30: {}}'))
    assert problems(m) == [
        (3, 'target 0.29 is not a string: unquoted, YAML reads it as the number 0.29 (quote it: "0.29")'),
        (3, 'target 0.30 is not a string: unquoted, YAML reads it as the number 0.3 (quote it: "0.30")')]


def test_unquoted_versions_in_releases_and_the_patch_map_are_refused(tmp_path):
    per = """
          - id: one
            releases: 0.30
            patch: {0.29: recipes/one/fix.patch}
"""
    assert problems(make(tmp_path, per)) == [
        (10, 'patch one: releases 0.30 is not a string: unquoted, YAML reads it as the number 0.3 '
             '(quote it: "==0.30")'),
        (11, 'patch one: release range 0.29 is not a string: unquoted, YAML reads it as the number 0.29 '
             '(quote it: "==0.29")'),
    ]


def test_the_same_release_written_twice_is_refused(tmp_path):
    m = make(tmp_path, ONE)
    m.write_text(m.read_text().replace('"0.29.0": {}', '"0.29.0": {}\n  "0.29": {}'))
    assert problems(m) == [(6, "target 0.29 is the same release as 0.29.0 (line 5) (keep one of them)")]


@pytest.mark.parametrize("where, body, lines", [
    ("a patch", ONE.rstrip() + '\n            releases: ">=0.29.0"\n', (10, 12)),
    ("the top", ONE + "        schema: 2\n", (1, 12)),
    ("targets", None, (4, 6)),
])
def test_a_key_written_twice_is_refused_naming_both_lines(tmp_path, where, body, lines):
    m = make(tmp_path, body or ONE)
    if where == "targets":
        m.write_text(m.read_text().replace('"0.29.0": {}', '"0.29.0": {}\n  "0.28.0": {}'))
    key = {"a patch": "releases", "the top": "schema", "targets": "0.28.0"}[where]
    e = error(tmp_path, body or ONE) if where != "targets" else pytest.raises(ManifestError, load_manifest, m).value
    assert e.line == lines[1]
    assert f"key {key!r} is written twice, at lines {lines[0]} and {lines[1]}" in str(e)


def test_keys_equal_once_loaded_are_duplicates_too(tmp_path):
    m = make(tmp_path, ONE)
    m.write_text(m.read_text().replace('"0.29.0": {}', "0.3: {}\n  0.30: {}"))
    assert problems(m)[0] == (6, "key '0.30' is written twice, at lines 5 and 6 "
                                 "(YAML would silently keep only one: delete or merge the other)")


def test_every_problem_is_collected_and_the_first_is_the_message(tmp_path):
    broken = ONE.replace("id: one", "id: One").rstrip() + "\n            fuzz: -1\n            relases: x\n"
    e = error(tmp_path, broken + ONE.replace("recipes/one/fix.patch", "recipes/one/nope.patch"))
    assert isinstance(e, ManifestErrors)
    assert [(x.line, x.message) for x in e.errors] == [
        (9, "patch id 'One' must be lower-case letters, digits, '.', '_' or '-'"),
        (13, "unknown key 'relases'"),  # its subject says "patch One: "
        (12, "fuzz must be a whole number >= 0, not -1"),
        (17, "patch file recipes/one/nope.patch does not exist"),
    ]
    assert e.line == 9 and str(e).endswith("[and 3 more: `patchset validate` lists them all]")


def test_problems_stop_at_the_limit(tmp_path):
    many = "\n" + "".join(f"          - {{id: p{i}, patch: recipes/one/fix.patch, typo: 1}}\n" for i in range(80))
    e = error(tmp_path, many)
    assert len(e.errors) == MAX_ERRORS == 50


def test_duplicate_keys_stop_at_the_limit_too(tmp_path):
    """Found by the long fuzz run (issue 26): 50 duplicate keys raised the loader's own _TooMany, an internal error."""
    path = tmp_path / "patches.yaml"
    path.write_text("schema: 1\n" + "".join(f"k{i}: 1\nk{i}: 2\n" for i in range(60)))
    with pytest.raises(ManifestErrors) as e:
        load_manifest(path)
    assert len(e.value.errors) == MAX_ERRORS and e.value.file == str(path) and e.value.line == 3
    _, errors = inspect_manifest(path)
    assert len(errors) == MAX_ERRORS and "written twice" in errors[-1].message


def test_schema_true_is_not_schema_1(tmp_path):
    m = make(tmp_path, ONE)
    m.write_text(m.read_text().replace("schema: 1", "schema: true"))
    assert problems(m) == [(1, "schema must be 1, not True")]


# --- pre-releases -------------------------------------------------------------------------------------


def test_a_pre_release_target_is_in_a_range_by_version_order(tmp_path):
    patches = ONE.replace('">=0.28.0,<0.30.0"', '">=0.28"') + ONE.replace("id: one", "id: old").replace(
        '">=0.28.0,<0.30.0"', '"<0.30"')
    m = make(tmp_path, patches)
    m.write_text(m.read_text().replace('"0.29.0": {}', '"0.30.0rc1": {}\n  "0.31.0rc1": {}'))
    new, old = load_manifest(m).patches
    assert new.targets("0.31.0rc1") and new.targets("0.30.0rc1") and new.choice_for("0.31.0rc1")
    # PEP 440: `<0.30` excludes the pre-releases of 0.30 itself, whatever packaging is installed.
    assert not old.targets("0.30.0rc1") and not old.targets("0.31.0rc1")


def test_unknown_keys_and_ids_get_a_did_you_mean(tmp_path):
    write_patch(tmp_path, "recipes/a.patch", "--- a/vllm/x.py\n+++ b/vllm/x.py\n@@ -1 +1 @@\n-a\n+b\n")
    write_manifest(tmp_path, """
        schema: 1
        targets: {"0.29.0": {}}
        patches:
          - {id: offload-fix, relases: ">=0.29", patch: recipes/a.patch}
        """)
    with pytest.raises(ManifestError) as e:
        load_manifest(tmp_path / "patches.yaml")
    assert e.value.hint is not None and e.value.hint.startswith("did you mean 'releases'? known keys: after")
    write_manifest(tmp_path, """
        schema: 1
        targets: {"0.29.0": {}}
        patches:
          - {id: offload-fix, releases: ">=0.29", patch: recipes/a.patch}
        """)
    with pytest.raises(ManifestError, match="no patch with id 'offload-fx'") as e:
        load_manifest(tmp_path / "patches.yaml").patch("offload-fx")
    assert e.value.hint == "did you mean 'offload-fix'? patch ids: offload-fix"


SUITES = """suites:
          - tests/v1/a
          - path: tests/v1/kv_offload
            deselect: [tests/v1/kv_offload/cpu/test_swap.py, "tests/v1/kv_offload/test_x.py::test_y[1]"]
            timeout: 900
          - {path: tests/v1/kv_offload/cpu/test_swap.py, gpu: true}"""


def test_suites_are_paths_or_mappings_with_gpu_timeout_and_deselect(tmp_path):
    from patchset.core.manifest import Suite

    m = load_manifest(make(tmp_path, ONE, extra=SUITES))
    plain, tree, gpu = m.suites
    assert (plain.path, plain.gpu, plain.timeout, plain.deselect) == ("tests/v1/a", False, None, ())
    assert tree == Suite("tests/v1/kv_offload", False, 900.0, ("tests/v1/kv_offload/cpu/test_swap.py",
                                                                  "tests/v1/kv_offload/test_x.py::test_y[1]"),
                         tree.line)
    assert (gpu.path, gpu.gpu) == ("tests/v1/kv_offload/cpu/test_swap.py", True)
    assert (plain.line, tree.line, gpu.line) == (7, 8, 11)


@pytest.mark.parametrize(("suite", "says"), [
    ("{path: tests/a, gpu: yes please}", "gpu must be true or false"),
    ("{path: tests/a, timeout: 0}", "timeout must be a number of seconds > 0"),
    ("{path: tests/a, timeout: true}", "timeout must be a number of seconds > 0"),
    ("{path: tests/a, deselect: [tests/b/test_x.py]}", "deselect 'tests/b/test_x.py' is not inside the suite"),
    ("{path: tests/a, deselect: [tests/ab.py]}", "is not inside the suite"),
    ("{path: tests/a, gpus: true}", "unknown key 'gpus' in suite tests/a"),
    ("{gpu: true}", "a suite is a test path or a mapping with at least path:"),
    ("42", "a suite is a test path or a mapping with at least path:"),
])
def test_bad_suite_entries_are_refused_with_their_line(tmp_path, suite, says):
    e = error(tmp_path, ONE, extra=f"suites:\n          - {suite}")
    assert says in str(e) and e.line == 7


SHA = "ac9126e58" + "0" * 31


def pinned(tmp_path, source: str, more: str = ""):
    """A manifest with a commit target whose source: is ``source`` (YAML, flow style), on its own line."""
    (tmp_path / "clone").mkdir(exist_ok=True)
    write_patch(tmp_path, "recipes/one/fix.patch", DIFF)
    path = tmp_path / "patches.yaml"
    path.write_text('schema: 1\ntargets:\n  "0.29.0": {}\n  "0.31.1.dev45+gac9126e58":\n'
                    f"    source: {source}\n{more}patches:\n  - id: one\n    patch: recipes/one/fix.patch\n")
    return path


def test_a_commit_target_loads_with_its_source_base_and_wheel(tmp_path):
    m = load_manifest(pinned(tmp_path, f'{{git: clone, commit: "{SHA}"}}',
                             '    base: "registry.example.org/vllm:nightly"\n    wheel: dist/vllm.whl\n'))
    t = m.target("0.31.1.dev45+gac9126e58")
    assert (t.source.git, t.source.commit, t.source.line, t.line) == ("clone", SHA, 5, 4)
    assert (t.base, t.wheel) == ("registry.example.org/vllm:nightly", "dist/vllm.whl")
    assert m.pinned("0.31.1.dev45+gac9126e58") is t and m.pinned("0.29.0") is None
    assert [x.version for x in m.targets] == ["0.29.0", "0.31.1.dev45+gac9126e58"]  # PEP 440 order


@pytest.mark.parametrize("source, says", [
    ('{git: clone, commit: "ac9126e58"}', "source.commit 'ac9126e58' is not a full commit id (it is abbreviated)"),
    ('{git: clone, commit: main}', "source.commit 'main' is not a full commit id"),
    ('{git: clone, commit: 1234567890123456789012345678901234567890}',
     "source.commit 1234567890123456789012345678901234567890 is not a string: unquoted, YAML reads it as the number"),
    ("{git: clone}", "source.commit is missing"),
    (f'{{commit: "{SHA}"}}', "source.git must name the repository"),
    (f'{{git: no-such-clone, commit: "{SHA}"}}', "source.git no-such-clone is no folder here"),
    (f'{{git: clone, commit: "{SHA}", branch: main}}', "unknown key 'branch' in target 0.31.1.dev45+gac9126e58 source"),
    ('"https://example.org/vllm.git"', "source must be a mapping with git and commit"),
])
def test_a_bad_source_is_refused_at_its_line(tmp_path, source, says):
    path = pinned(tmp_path, source)
    with pytest.raises(ManifestErrors) as e:
        load_manifest(path)
    assert says in e.value.message and e.value.line == 5 and e.value.file == str(path)


def test_a_remote_repository_is_not_looked_for_on_disk(tmp_path):
    for url in ("https://example.org/vllm.git", "ssh://git@example.org/vllm.git", "git@example.org:org/vllm.git"):
        assert load_manifest(pinned(tmp_path, f'{{git: "{url}", commit: "{SHA}"}}')).targets[1].source.git == url
    file_url = (tmp_path / "clone").as_uri()
    assert load_manifest(pinned(tmp_path, f'{{git: "{file_url}", commit: "{SHA}"}}')).targets[1].source.git == file_url
