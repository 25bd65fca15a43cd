"""The series on one release: cumulative order, blocked, upstream evidence, warnings."""

from __future__ import annotations

import re
from pathlib import Path

import git
from helpers import udiff, write_manifest, write_patch

from patchset.core.manifest import load_manifest
from patchset.core.series import evaluate_release
from patchset.sources.git import GitSource
from patchset.sources.local import DirSource

MOD = "vllm/sched.py"
PRISTINE = "".join(f"line {i}\n" for i in range(1, 31))
FIRST = PRISTINE.replace("line 10\n", "line 10\nwatermark = tokens - 1\n")
SECOND = FIRST.replace("watermark = tokens - 1\n", "watermark = tokens - 1\nserve_hits = True\n")


def project(tmp_path: Path, first_after: str = "", releases: str = ">=0.28.0,<0.30.0") -> Path:
    write_patch(tmp_path, "recipes/first/fix.patch", udiff(MOD, PRISTINE, FIRST))
    write_patch(tmp_path, "recipes/second/fix.patch", udiff(MOD, FIRST, SECOND))
    return write_manifest(tmp_path, f"""
        schema: 1
        targets: {{"0.28.0": {{}}, "0.29.0": {{}}, "0.30.0": {{}}}}
        patches:
          - id: first
            releases: "{releases}"
            patch: recipes/first/fix.patch
            present: {{file: {MOD}, contains: "watermark = tokens - 1"}}
          - id: second
            releases: ">=0.28.0,<0.30.0"
            patch: recipes/second/fix.patch
            after: [first]
        """)


def tree(tmp_path: Path, name: str, content: str) -> DirSource:
    root = tmp_path / name
    (root / "vllm").mkdir(parents=True)
    (root / MOD).write_text(content)
    return DirSource(root)


def statuses(result):
    return {p.id: p.status for p in result.patches}


def test_series_applies_cumulatively(tmp_path):
    m = load_manifest(project(tmp_path))
    r = evaluate_release(m, "0.29.0", tree(tmp_path, "t", PRISTINE))
    assert statuses(r) == {"first": "applies", "second": "applies"}
    assert r.files[MOD] == SECOND.encode()
    assert r.changed == {MOD: SECOND.encode()}
    assert r.ok


def test_a_failed_patch_blocks_what_comes_after_it(tmp_path):
    m = load_manifest(project(tmp_path))
    broken = PRISTINE.replace("line 11\n", "line eleven\n")
    r = evaluate_release(m, "0.29.0", tree(tmp_path, "t", broken))
    assert statuses(r) == {"first": "failed", "second": "blocked"}
    assert "comes after first (failed)" in r.patch("second").message
    assert r.patch("first").hunks[0].patch_line > 0
    assert not r.ok


def test_probe_says_upstream_and_dependants_still_apply(tmp_path):
    m = load_manifest(project(tmp_path))
    r = evaluate_release(m, "0.30.0", tree(tmp_path, "t", FIRST))
    assert r.patch("first").status == "upstream"
    assert r.patch("first").evidence.startswith("probe: vllm/sched.py:11 contains")
    assert r.patch("second").status == "not-targeted"


def test_upstream_inside_the_releases_range_warns_to_retire(tmp_path):
    m = load_manifest(project(tmp_path, releases=">=0.28.0"))
    r = evaluate_release(m, "0.30.0", tree(tmp_path, "t", FIRST))
    assert r.patch("first").status == "upstream"
    assert any("narrow the range to retire" in w for w in r.warnings)


def test_excluded_patch_and_its_dependants_for_negative_controls(tmp_path):
    m = load_manifest(project(tmp_path))
    r = evaluate_release(m, "0.29.0", tree(tmp_path, "t", PRISTINE), exclude=frozenset({"first", "second"}))
    assert statuses(r) == {"first": "excluded", "second": "excluded"}
    assert r.changed == {}


def test_git_ancestry_is_evidence(tmp_path):
    repo_dir = tmp_path / "upstream"
    repo = git.Repo.init(repo_dir)
    (repo_dir / "vllm").mkdir()
    (repo_dir / MOD).write_text(PRISTINE)
    repo.index.add([MOD])
    repo.index.commit("base")
    repo.create_tag("v0.29.0")
    (repo_dir / MOD).write_text(FIRST.replace("watermark = tokens - 1", "watermark = max(p, tokens - 1)"))
    repo.index.add([MOD])
    fix = repo.index.commit("the fix, reworded upstream")
    repo.create_tag("v0.30.0")
    manifest = project(tmp_path)
    text = manifest.read_text().replace("present: {file: vllm/sched.py, contains: \"watermark = tokens - 1\"}",
                                        f"upstream: {{pr: 54288, commit: {fix.hexsha[:10]}}}")
    manifest.write_text(text)
    m = load_manifest(manifest)
    r = evaluate_release(m, "0.30.0", GitSource(str(repo_dir), "v0.30.0"))
    assert r.patch("first").status == "upstream"
    assert "ancestry" in r.patch("first").evidence
    r = evaluate_release(m, "0.29.0", GitSource(str(repo_dir), "v0.29.0"))
    assert r.patch("first").status == "applies"


def test_reverse_apply_is_weak_evidence_and_says_so(tmp_path):
    manifest = project(tmp_path)
    manifest.write_text(manifest.read_text().replace(
        "present: {file: vllm/sched.py, contains: \"watermark = tokens - 1\"}", "fuzz: 0"))
    m = load_manifest(manifest)
    r = evaluate_release(m, "0.29.0", tree(tmp_path, "t", FIRST))
    assert r.patch("first").status == "upstream"
    assert "weak evidence" in r.patch("first").evidence


def test_probe_that_cannot_see_the_fix_is_warned_about(tmp_path):
    manifest = project(tmp_path)
    manifest.write_text(manifest.read_text().replace('contains: "watermark = tokens - 1"', 'contains: "nowhere"'))
    m = load_manifest(manifest)
    r = evaluate_release(m, "0.29.0", tree(tmp_path, "t", PRISTINE))
    assert r.ok
    assert any("probe does not hold after applying" in w for w in r.warnings)


def test_a_malformed_patch_file_fails_that_patch_naming_file_and_line(tmp_path):
    m = load_manifest(project(tmp_path))
    broken = tmp_path / "recipes/first/fix.patch"
    broken.write_text(broken.read_text() + "+one line too many\n")
    r = evaluate_release(m, "0.29.0", tree(tmp_path, "t", PRISTINE))
    assert statuses(r) == {"first": "failed", "second": "blocked"}
    assert re.search(r"recipes/first/fix\.patch:\d+: ", r.patch("first").message)
    assert "more lines than its header" in r.patch("first").message
