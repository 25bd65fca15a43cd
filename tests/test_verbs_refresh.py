"""`patchset refresh`: a resolved workspace becomes the patch for V; offsets become exact line numbers."""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path

import portfixture
import pytest
from test_verbs_next import REPO, SCHED, TESTS, only_028
from test_verbs_port import _applied, results

from patchset.cli import main
from patchset.core.manifest_load import load_manifest
from patchset.errors import PatchsetError
from patchset.verbs.check import check
from patchset.verbs.port import port
from patchset.verbs.refresh import refresh


@pytest.fixture
def ported(tmp_path: Path):
    manifest = portfixture.build(tmp_path)
    src = portfixture.source(tmp_path)
    port(load_manifest(manifest), "0.29.0", source=src)
    return manifest, src, manifest.parent / ".patchset/port"


def resolve(work: Path, pid: str, old: str, new: str) -> None:
    f = work / pid / "vllm" / f"{pid}.py"
    text = f.read_text()
    text = re.sub(r"<<<<<<< .*?>>>>>>> [^\n]*\n", new, text, flags=re.S) if old == "markers" else \
        text.replace(old, new)
    f.write_text(text)


def test_refused_while_conflict_markers_remain(ported):
    manifest, src, work = ported
    before = portfixture.snapshot(manifest.parent)
    with pytest.raises(PatchsetError, match=r"clash\.py:20: patch clash: conflict markers remain at line\(s\) 20, 22"):
        refresh(load_manifest(manifest), "clash", "0.29.0", source=src)
    assert portfixture.snapshot(manifest.parent) == before


def test_refused_while_a_python_file_does_not_compile(ported, capsys):
    manifest, src, work = ported
    before = portfixture.snapshot(manifest.parent)
    code = main(["refresh", "syntax", "--vllm", "0.29.0", "--manifest", str(manifest), "--source", src])
    assert code == 2
    assert "syntax.py:5: patch syntax: does not compile: 'return' outside function" in capsys.readouterr().err
    assert portfixture.snapshot(manifest.parent) == before


def test_a_resolved_conflict_becomes_the_patch_for_v_and_the_series_continues(ported):
    manifest, src, work = ported
    resolve(work, "clash", "markers", "line_20 = -20  # upstream\n")
    r = refresh(load_manifest(manifest), "clash", "0.29.0", source=src)
    assert r.mode == "workspace" and r.patch == "recipes/clash/vllm-0.29.0.patch"
    text = (manifest.parent / r.patch).read_text()
    assert text.startswith("Description: clash\nOrigin: backport, upstream PR 1\n"
                           "Ported: from vLLM 0.28.0 to 0.29.0 by 3-way merge, conflicts resolved by hand (patchset)\n")
    assert "-line_20 = 20  # upstream\n+line_20 = -20  # upstream\n" in text
    assert '      ">=0.29.0": recipes/clash/vllm-0.29.0.patch\n' in manifest.read_text()
    resolve(work, "syntax", "if True:", "def f():")  # the maintainer keeps the function the patch returns from
    assert refresh(load_manifest(manifest), "syntax", "0.29.0", source=src).mode == "workspace"
    again = port(load_manifest(manifest), "0.29.0", source=src)
    assert results(again) == {"carry": "carried", "retire": "retired", "merge": "carried", "clash": "carried",
                              "after": "carried", "syntax": "carried", "partly": "carried"}
    assert '  "0.29.0": {image: "img:v0.29.0"}\n' in manifest.read_text()  # the finished series targets 0.29.0
    assert check(load_manifest(manifest), source=src).ok


def test_offsets_become_exact_line_numbers_and_the_header_stays(ported):
    manifest, src, _ = ported
    f = manifest.parent / "recipes/carry/vllm-0.28.patch"
    old = f.read_text()
    before = check(load_manifest(manifest), ["0.28.0"], source=src)
    r = refresh(load_manifest(manifest), "carry", "0.29.0", source=src)
    assert r.mode == "offsets" and "offsets +5 removed" in r.message
    # the 0.28 file also serves the target 0.28.0: it stays as it is, 0.29.0 gets a file of its own
    assert "recipes/carry/vllm-0.28.patch still serves 0.28.0" in r.message
    assert f.read_text() == old and r.patch == "recipes/carry/vllm-0.29.0.patch"
    new = (manifest.parent / r.patch).read_text()
    today = datetime.date.today().isoformat()
    assert new.split("\n---\n", 1)[0] == old.split("\n---\n", 1)[0].replace("2026-01-01", today)
    assert re.sub(r"@@ -\d+,\d+ \+\d+,\d+ @@.*", "@@", new.split("\n---\n", 1)[1]) == \
        re.sub(r"@@ -\d+,\d+ \+\d+,\d+ @@", "@@", old.split("\n---\n", 1)[1])
    assert "@@ -17,7 +17,7 @@" in new and "@@ -12,7 +12,7 @@" in old
    m = load_manifest(manifest)
    assert m.patch("carry").choice_for("0.29.0").path.name == "vllm-0.29.0.patch"
    assert m.patch("carry").choice_for("0.28.0").path.name == "vllm-0.28.patch"
    assert check(m, ["0.28.0"], source=src).targets == before.targets
    again = refresh(load_manifest(manifest), "carry", "0.29.0", source=src)
    assert again.mode == "exact" and again.written == []


def test_refresh_json(ported, capsys):
    manifest, src, work = ported
    resolve(work, "clash", "markers", "line_20 = -20  # upstream\n")
    code = main(["refresh", "clash", "--vllm", "0.29.0", "--manifest", str(manifest), "--source", src,
                 "--format", "json", "--dry-run"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["mode"] == "workspace" and out["written"] == []
    assert not (manifest.parent / "recipes/clash/vllm-0.29.0.patch").exists()
    assert out["next"] == "patchset port --to 0.29.0"  # the patches after it, and the target, wait on a port


def test_a_refreshed_workspace_names_the_port_that_carries_the_rest_and_line_numbers_name_nothing(ported, capsys):
    manifest, src, work = ported
    resolve(work, "clash", "markers", "line_20 = -20  # upstream\n")
    assert main(["refresh", "clash", "--vllm", "0.29.0", "--manifest", str(manifest), "--source", src]) == 0
    assert capsys.readouterr().out.rstrip().endswith(
        "next: patchset port --to 0.29.0 (it carries the patches after clash; vLLM 0.29.0 becomes a target once "
        "none conflicts)")
    assert main(["refresh", "carry", "--vllm", "0.29.0", "--manifest", str(manifest), "--source", src]) == 0
    assert "next:" not in capsys.readouterr().out


@pytest.mark.network
def test_resolving_the_import_as_the_hand_recipe_did_reproduces_it(tmp_path):
    manifest = only_028(tmp_path / "p")
    port(load_manifest(manifest), "0.29.0")
    hand = _applied(tmp_path, "0.29.0", [REPO / "recipes/offload-finished-watermark/fix.patch",
                                         REPO / "recipes/offload-recurrent-load-boundary/vllm-0.29.patch"],
                    [SCHED, TESTS])
    work = manifest.parent / ".patchset/port/offload-recurrent-load-boundary"
    (work / TESTS).write_bytes(hand[TESTS])  # the maintainer resolves the import conflict as the hand port did
    r = refresh(load_manifest(manifest), "offload-recurrent-load-boundary", "0.29.0")
    made = (manifest.parent / r.patch).read_text()
    want = (REPO / "recipes/offload-recurrent-load-boundary/vllm-0.29.patch").read_text()
    assert made[made.index("diff --git"):] == want[want.index("diff --git"):]
    again = port(load_manifest(manifest), "0.29.0")
    assert set(results(again).values()) == {"carried"}
    report = check(load_manifest(manifest), ["0.29.0"])
    assert report.ok


@pytest.mark.network
def test_quilt_refresh_of_the_watermark_fix_on_028(tmp_path):
    import shutil

    shutil.copytree(REPO / "recipes", tmp_path / "recipes")
    shutil.copy(REPO / "patches.yaml", tmp_path / "patches.yaml")
    r = refresh(load_manifest(tmp_path / "patches.yaml"), "offload-finished-watermark", "0.28.0")
    assert r.mode == "offsets" and "-86" in r.message and "-74" in r.message
    report = check(load_manifest(tmp_path / "patches.yaml"), ["0.28.0"])
    assert {h.status for h in report.targets[0].patch("offload-finished-watermark").hunks} == {"exact"}


@pytest.mark.network
@pytest.mark.slow
def test_the_proof_on_the_ported_series_names_the_patch_that_only_applied(tmp_path, capsys):
    """The hand recipes are all proven on 0.29.0 (recipes/NOTES.md). The port reproduces two of them;
    the third carried its 0.28 recipe unchanged, and its tests must say it no longer means what it did."""
    manifest = only_028(tmp_path / "p")
    port(load_manifest(manifest), "0.29.0")
    hand = _applied(tmp_path, "0.29.0", [REPO / "recipes/offload-finished-watermark/fix.patch",
                                         REPO / "recipes/offload-recurrent-load-boundary/vllm-0.29.patch"],
                    [SCHED, TESTS])
    (manifest.parent / ".patchset/port/offload-recurrent-load-boundary" / TESTS).write_bytes(hand[TESTS])
    refresh(load_manifest(manifest), "offload-recurrent-load-boundary", "0.29.0")
    assert port(load_manifest(manifest), "0.29.0").ok
    capsys.readouterr()
    code = main(["test", "--vllm", "0.29.0", "--venv", "--manifest", str(manifest), "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    verdicts = {p["id"]: p["verdict"] for p in out["patches"]}
    assert verdicts == {"offload-finished-watermark": "proven", "offload-recurrent-load-boundary": "proven",
                        "offload-mtp-eagle-serve": "failing"}
    mtp = next(p for p in out["patches"] if p["id"] == "offload-mtp-eagle-serve")
    assert sorted(x.split("::", 1)[1] for x in mtp["with_fix"]["failing"]) == [
        "TestMambaHybridOffloadServing::test_annotated_eagle_group_does_not_starve_coarse_sibling",
        "TestMambaHybridOffloadServing::test_shared_group_mtp_serves_like_non_speculative"]
