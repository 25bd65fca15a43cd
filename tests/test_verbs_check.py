"""The repository's own series against the real vLLM releases from the package index."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from patchset.core.manifest_load import load_manifest
from patchset.sources import open_source
from patchset.verbs.apply import ApplyError, apply_series
from patchset.verbs.check import check

pytestmark = pytest.mark.network

REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / "patches.yaml"
SCHED = "vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py"
FIXES = ("offload-finished-watermark", "offload-recurrent-load-boundary", "offload-mtp-eagle-serve")


@pytest.fixture(scope="module")
def report():
    return check(load_manifest(MANIFEST))


def test_all_three_fixes_apply_on_the_pinned_releases(report):
    assert report.ok
    for target in report.targets[:2]:
        assert target.vllm in ("0.28.0", "0.29.0")
        assert [p.status for p in target.patches] == ["applies"] * 3
        for p in target.patches:
            assert {h.status for h in p.hunks} <= {"exact", "offset"}, p.id


def test_all_three_fixes_are_upstream_in_0_30_0_with_probe_evidence(report):
    target = report.targets[2]
    assert target.vllm == "0.30.0"
    for p in target.patches:
        assert p.status == "upstream" and p.evidence.startswith(f"probe: {SCHED}:")
    assert not target.warnings


def test_the_wheel_source_checks_the_package_part_only():
    manifest = load_manifest(MANIFEST)
    report = check(manifest, ["0.29.0"], source="wheel")
    assert report.ok
    p = report.targets[0].patch("offload-finished-watermark")
    assert p.status == "applies"
    assert p.skipped == ("tests/v1/kv_connector/unit/offloading_connector/test_scheduler.py",)


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def real_tree(tmp_path) -> Path:
    """A copy of the real 0.29.0 tree: the package and the offload tests."""
    src = open_source("pypi", "0.29.0")
    dest = tmp_path / "vllm-0.29.0"
    shutil.copytree(src.root / "vllm", dest / "vllm")
    shutil.copytree(src.root / "tests", dest / "tests")
    return dest


def test_apply_to_the_real_0_29_0_tree_then_again(real_tree):
    manifest = load_manifest(MANIFEST)
    report = apply_series(manifest, "0.29.0", real_tree)
    assert report.ok and SCHED in report.written
    text = (real_tree / SCHED).read_text()
    assert "num_tokens_after_batch = max(req.num_prompt_tokens, req.num_tokens - 1)" in text
    assert "for i in range(first_fresh_gpu_block_idx, num_gpu_blocks):" in text
    before = snapshot(real_tree)
    again = apply_series(manifest, "0.29.0", real_tree)
    assert again.already
    assert snapshot(real_tree) == before


def test_a_series_with_one_broken_hunk_leaves_the_real_tree_byte_identical(real_tree, tmp_path):
    # Copy the manifest and recipes, then break the last hunk of the last patch.
    work = tmp_path / "fork"
    shutil.copytree(REPO / "recipes", work / "recipes")
    shutil.copy(MANIFEST, work / "patches.yaml")
    victim = work / "recipes/offload-mtp-eagle-serve/vllm-0.29.patch"
    lines = victim.read_text().splitlines(keepends=True)
    last_context = max(i for i, ln in enumerate(lines) if ln.startswith(" ") and ln.strip())
    lines[last_context] = " " + lines[last_context][1:].rstrip("\n") + "  # not upstream\n"
    victim.write_text("".join(lines))
    before = snapshot(real_tree)
    with pytest.raises(ApplyError) as e:
        apply_series(load_manifest(work / "patches.yaml"), "0.29.0", real_tree)
    assert "offload-mtp-eagle-serve failed" in str(e.value)
    assert "recipes/offload-mtp-eagle-serve/vllm-0.29.patch:" in str(e.value)
    assert snapshot(real_tree) == before


def test_the_fast_paths_print_the_bytes_the_slow_ones_print(tmp_path, monkeypatch, capsys):
    """Releases side by side (forked) or one by one, the manifest's and patches' parse from the cache or
    not: one JSON.

    A fork-shaped series from real 0.29.0 files (bench/forkseries.py) on three releases, where many
    hunks fail on the later two, so the failure path (nearest candidates, differing lines) is compared too.
    """
    import sys

    sys.path.insert(0, str(REPO / "bench"))
    import forkseries

    from patchset.cli import main
    from patchset.core import patchfile

    series = forkseries.generate(Path(open_source("pypi", "0.29.0").root), tmp_path / "fork", count=12,
                                 targets=["0.29.0", "0.30.0", "0.31.0"])
    outputs = {}
    for name, env in {"serial, parsed": {"PATCHSET_JOBS": "1", "PATCHSET_NO_PARSE_CACHE": "1"},
                      "forked, parsed": {"PATCHSET_JOBS": "3", "PATCHSET_NO_PARSE_CACHE": "1"},
                      "forked, kept parse": {"PATCHSET_JOBS": "3"},
                      "forked, kept parse again": {"PATCHSET_JOBS": "3"}}.items():
        for key in ("PATCHSET_JOBS", "PATCHSET_NO_PARSE_CACHE"):
            monkeypatch.delenv(key, raising=False)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        patchfile._parsed.cache_clear()  # as a new process would: patches parsed, or read back from the cache
        code = main(["check", "--manifest", str(series.manifest), "--format", "json"])
        outputs[name] = (code, capsys.readouterr().out)
    assert len(set(outputs.values())) == 1, {k: v[0] for k, v in outputs.items()}
    assert outputs["serial, parsed"][0] == 1 and '"failed"' in outputs["serial, parsed"][1]


def test_without_files_the_reports_are_the_same(report):
    """``check(files=False)`` (every format but Markdown) drops the touched files, and nothing else."""
    from patchset.report import check as render

    lean = check(load_manifest(MANIFEST), files=False)
    assert all(t.files == {} and t.pristine == {} for t in lean.targets)
    assert any(t.files for t in report.targets)
    for fmt in ("json", "junit", "table"):
        assert render.RENDERERS[fmt](lean) == render.RENDERERS[fmt](report), fmt


# --- a fork's repository-layout series on 0.9.0: files beside the package, a manylinux1 wheel -------


@pytest.fixture(scope="module")
def fork090(tmp_path_factory) -> Path:
    from fork090 import VERSION, write_series

    return write_series(tmp_path_factory.mktemp("fork090"), open_source("pypi", VERSION).root)


def _check_json(capsys, manifest: Path, *source: str) -> tuple[int, dict]:
    import json

    from patchset.cli import main

    code = main(["check", "--vllm", "0.9.0", "--manifest", str(manifest), *source, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_repo_layout_series_on_0_9_0_checks_every_hunk_on_the_sdist(fork090, capsys):
    code, doc = _check_json(capsys, fork090, "--source", "pypi")
    (target,) = doc["targets"]
    assert code == 0 and target["source"].startswith("sdist:vllm-0.9.0.tar.gz@")
    assert {p["id"]: p["status"] for p in target["patches"]} == dict.fromkeys(
        ("kernel-guard", "deps-regex", "sched-comment", "config-test"), "applies")
    assert {h["status"] for p in target["patches"] for h in p["hunks"]} == {"exact"}
    assert not any("skipped_files" in p for p in target["patches"])


@pytest.mark.slow  # the first run reads the 0.9.0 wheel's central directory (377 MB wheel, by range)
def test_the_same_series_checks_on_the_0_9_0_wheel_its_hunks_beside_the_package_not_in_tree(fork090, capsys):
    from fork090 import CONFIG_TEST, DOCKERFILE, KERNEL, OPS, REQS, SCHED, SCHED_TEST, WHEEL

    code, doc = _check_json(capsys, fork090, "--source", "wheel")
    (target,) = doc["targets"]
    assert code == 0 and target["ok"]
    assert target["source"].startswith(f"wheel:{WHEEL}@sha256:")  # manylinux1: no manylinux_2_28 wheel for 0.9.0
    patches = {p["id"]: p for p in target["patches"]}
    assert {pid: p["status"] for pid, p in patches.items()} == {
        "kernel-guard": "applies", "deps-regex": "not-in-tree", "sched-comment": "applies",
        "config-test": "not-in-tree"}
    hunks = {(h["file"], h["status"]) for p in patches.values() for h in p["hunks"]}
    assert hunks == {(KERNEL, "not-in-tree"), (OPS, "exact"), (REQS, "not-in-tree"), (DOCKERFILE, "not-in-tree"),
                     (SCHED, "exact"), (SCHED_TEST, "not-in-tree"), (CONFIG_TEST, "not-in-tree")}
    assert patches["deps-regex"]["skipped_files"] == [DOCKERFILE, REQS] and patches["deps-regex"]["tree"] == "wheel"
    assert "nothing of it is in this wheel" in patches["config-test"]["message"]
    assert all("typo" not in (p.get("message") or "") for p in patches.values())  # was: failed, "(a typo, ...)"
