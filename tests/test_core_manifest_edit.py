"""Round-trip edits of patches.yaml: only what port changes may change."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from patchset.core.manifest_edit import ManifestEditor, narrowed, widened
from patchset.core.manifest_load import load_manifest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    shutil.copy(REPO / "patches.yaml", tmp_path / "patches.yaml")
    shutil.copytree(REPO / "recipes", tmp_path / "recipes")
    return tmp_path / "patches.yaml"


def test_no_edit_gives_back_the_file_byte_for_byte(repo_copy):
    e = ManifestEditor(repo_copy)
    assert e.text() == repo_copy.read_text()
    assert e.diff() == ""


@pytest.mark.parametrize(("spec", "version", "want"), [
    (">=0.28.0,<0.30.0", "0.29.0", ">=0.28.0,<0.30.0"),
    (">=0.28.0,<0.29", "0.29.0", ">=0.28.0,<0.29 || ==0.29.0"),
    ("<0.29", "0.29.0", "<0.29 || ==0.29.0"),
    ("==0.28.0", "0.29.0", "==0.28.0 || ==0.29.0"),
    ("==0.28.0 || ==0.29.0", "0.29.0", "==0.28.0 || ==0.29.0"),
    (">=0.28.0,<0.30.0", "0.31.0", ">=0.28.0,<0.30.0 || ==0.31.0"),
    (">=0.28.0", "0.33.0", ">=0.28.0"),
    (">=0.28.0,!=0.29.0", "0.29.0", ">=0.28.0"),
])
def test_widened_admits_exactly_one_release_more(spec, version, want):
    assert widened(spec, version) == want


@pytest.mark.parametrize(("spec", "version", "want"), [
    (">=0.28.0,<0.30.0", "0.29.0", ">=0.28.0,<0.29.0"),
    (">=0.28.0,<0.30.0", "0.33.0", ">=0.28.0,<0.30.0"),
    (">=0.28.0", "0.33.0", ">=0.28.0,<0.33.0"),
])
def test_narrowed_stops_before_the_release(spec, version, want):
    assert narrowed(spec, version) == want


def test_a_new_patch_file_keeps_the_comment_after_the_mapping(repo_copy):
    e = ManifestEditor(repo_copy)
    e.add_patch_file("offload-mtp-eagle-serve", "0.29.5", "recipes/offload-mtp-eagle-serve/vllm-0.29.5.patch")
    text = e.text()
    assert ('      ">=0.29,<0.29.5": recipes/offload-mtp-eagle-serve/vllm-0.29.patch\n'
            '      ">=0.29.5,<0.30": recipes/offload-mtp-eagle-serve/vllm-0.29.5.patch\n'
            '    # Upstream wrote 52771 on a tree that already had 54288') in text
    changed = [ln[0] for ln in e.diff().splitlines()[2:] if ln[:1] in "+-"]
    assert sorted(changed) == ["+", "+", "-"]  # one range narrowed, one file added, nothing else


def test_a_single_patch_path_becomes_a_mapping_split_at_the_release(repo_copy):
    e = ManifestEditor(repo_copy)
    e.add_patch_file("offload-finished-watermark", "0.29.0", "recipes/offload-finished-watermark/vllm-0.29.0.patch")
    assert ('    patch:\n      "<0.29.0": recipes/offload-finished-watermark/fix.patch\n'
            '      ">=0.29.0": recipes/offload-finished-watermark/vllm-0.29.0.patch\n') in e.text()


def test_carry_widens_the_range_of_the_file_that_served_the_old_release(repo_copy):
    e = ManifestEditor(repo_copy)
    e.carry("offload-recurrent-load-boundary", "0.31.0", "0.29.0")
    text = e.text()
    assert '      ">=0.29,<=0.31.0": recipes/offload-recurrent-load-boundary/vllm-0.29.patch\n' in text
    assert '    releases: ">=0.28.0,<0.30.0 || ==0.31.0"\n' in text  # 0.30.0 stays out


def test_retire_records_the_evidence_once(repo_copy):
    e = ManifestEditor(repo_copy)
    for _ in range(2):
        e.retire("offload-recurrent-load-boundary", "0.29.0", "probe: scheduler.py:1405 contains 'for i'")
    text = e.text()
    assert text.count("# retired for 0.29.0: upstream there (probe: scheduler.py:1405 contains 'for i')\n") == 1
    assert '    releases: ">=0.28.0,<0.29.0"\n' in text


def test_add_target_copies_the_newest_targets_settings_in_order(repo_copy):
    e = ManifestEditor(repo_copy)
    e.add_target("0.31.0")
    e.add_target("0.29.0")  # there already: nothing
    text = e.text()
    assert ('  "0.30.0": {image: "vllm/vllm-openai:v0.30.0"}\n'
            '  "0.31.0": {image: "vllm/vllm-openai:v0.31.0"}\n') in text
    assert text.count('"0.29.0": {image:') == 1


def test_the_edited_manifest_loads(repo_copy):
    new = repo_copy.parent / "recipes/offload-mtp-eagle-serve/vllm-0.29.5.patch"
    shutil.copy(repo_copy.parent / "recipes/offload-mtp-eagle-serve/vllm-0.29.patch", new)
    e = ManifestEditor(repo_copy)
    e.add_patch_file("offload-mtp-eagle-serve", "0.29.5", "recipes/offload-mtp-eagle-serve/vllm-0.29.5.patch")
    e.include("offload-mtp-eagle-serve", "0.29.5")
    e.add_target("0.29.5")
    for pid in ("offload-finished-watermark", "offload-recurrent-load-boundary"):
        e.retire(pid, "0.29.5", "probe")
    repo_copy.write_text(e.text())
    m = load_manifest(repo_copy)
    assert m.patch("offload-mtp-eagle-serve").choice_for("0.29.5").path == new.resolve()
    assert [t.version for t in m.targets] == ["0.28.0", "0.29.0", "0.29.5", "0.30.0"]
    assert not m.patch("offload-finished-watermark").targets("0.29.5")


def test_a_file_for_an_older_release_leaves_the_newer_targets_their_file(repo_copy):
    """Issue 21, item 4: a port to 0.28.5 must not hand 0.29.0 the file made for 0.28.5."""
    e = ManifestEditor(repo_copy)
    e.add_patch_file("offload-finished-watermark", "0.28.5", "recipes/offload-finished-watermark/vllm-0.28.5.patch")
    assert ('    patch:\n      "!=0.28.5": recipes/offload-finished-watermark/fix.patch\n'
            '      "==0.28.5": recipes/offload-finished-watermark/vllm-0.28.5.patch\n') in e.text()
    e.add_patch_file("offload-recurrent-load-boundary", "0.28.5",
                     "recipes/offload-recurrent-load-boundary/vllm-0.28.5.patch")
    assert ('      "<0.28.5": recipes/offload-recurrent-load-boundary/vllm-0.28.patch\n'
            '      ">=0.29,<0.30": recipes/offload-recurrent-load-boundary/vllm-0.29.patch\n'
            '      ">=0.28.5,<0.29": recipes/offload-recurrent-load-boundary/vllm-0.28.5.patch\n') in e.text()


def test_retiring_for_an_older_release_keeps_a_newer_target_in_range(repo_copy):
    assert narrowed(">=0.28.0,<0.30.0", "0.28.5", ["0.28.0", "0.29.0"]) == ">=0.28.0,<0.30.0,!=0.28.5"
    assert narrowed(">=0.28.0,<0.30.0", "0.29.5", ["0.28.0", "0.29.0", "0.30.0"]) == ">=0.28.0,<0.29.5"
    assert narrowed("==0.28.0 || ==0.31.0", "0.30.0") == "==0.28.0"
    e = ManifestEditor(repo_copy)
    e.retire("offload-finished-watermark", "0.28.5", "probe")
    assert '    releases: ">=0.28.0,<0.30.0,!=0.28.5"\n' in e.text()
