"""Manifest errors name the file and line and say what to do."""

from __future__ import annotations

import pytest
from helpers import udiff, write_manifest, write_patch

from patchset.core.manifest import load_manifest
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
    assert m.suites == ("tests/v1/x",)
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
    e = error(tmp_path, ONE)
    assert "recipes/stray/old.patch is not named by any patch" in str(e)


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
    from patchset.core.manifest import same_release

    assert same_release("0.29.0+cpu", "0.29.0")
    assert same_release("0.29.0", "0.29")
    assert not same_release("0.29.1", "0.29.0")
    assert not same_release("0.29.0.post1", "0.29.0")
