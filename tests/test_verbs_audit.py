"""patchset audit: verdicts from the image's files, for local images and images in a registry."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import pytest

from patchset.cli import main
from patchset.core.manifest import load_manifest
from patchset.verbs.audit import audit
from patchset.verbs.build import build_image

pytest_plugins = ["conftest_docker"]
pytestmark = [pytest.mark.docker, pytest.mark.slow]

VERSION = "0.29.0"
SCHEDULER = "vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py"
WATERMARK = "offload-finished-watermark"


def run_audit(capsys, manifest: Path, source: str, *images: str, pull: bool = False) -> tuple[int, dict]:
    argv = ["audit", *images, "--manifest", str(manifest), "--source", source, "--format", "json"]
    code = main(argv + (["--pull"] if pull else []))
    out = capsys.readouterr().out
    return code, json.loads(out)


def statuses(doc: dict, index: int = 0) -> dict[str, str]:
    return {f["id"]: f["status"] for f in doc["images"][index]["fixes"]}


def older_manifest(manifest_path: Path, dest: Path) -> Path:
    """A copy of the manifest whose watermark patch is an earlier revision (other comment text)."""
    shutil.copytree(manifest_path.parent / "recipes", dest / "recipes")
    shutil.copy(manifest_path, dest / "patches.yaml")
    manifest = load_manifest(dest / "patches.yaml")
    patch_file = manifest.patch(WATERMARK).choice_for(VERSION).path
    text = patch_file.read_text()
    assert "slot is never committed" in text
    patch_file.write_text(text.replace("slot is never committed", "slot is never written to"))
    return dest / "patches.yaml"


@pytest.fixture(scope="module")
def stale_image(docker_client, standin, session_repo, manifest_path, tmp_path_factory):
    old = older_manifest(manifest_path, tmp_path_factory.mktemp("older"))
    report = build_image(load_manifest(old), VERSION, base=standin, tag=f"{session_repo}:older",
                         client=docker_client)
    return report.tag


@pytest.fixture(scope="module")
def tampered_image(docker_client, built, session_repo, derive_image):
    from patchset import docker_engine

    with docker_engine.ImageFiles(docker_client, built.tag) as files:
        path = f"{built.site}/{SCHEDULER}"
        content = files.read(path)
    return derive_image(built.tag, f"{session_repo}:tampered",
                  write={path: content.replace(b"max(req.num_prompt_tokens, req.num_tokens - 1)",
                                               b"req.num_tokens  # reverted by hand")})


def test_built_image_carries_every_fix(capsys, built, manifest_path, pristine_source, series_manifest):
    code, doc = run_audit(capsys, manifest_path, pristine_source, built.tag)
    assert code == 0 and doc["ok"] is True
    image = doc["images"][0]
    assert image["image"] == built.tag and image["vllm"] == VERSION and image["provenance"]
    assert statuses(doc) == {p.id: "carried" for p in series_manifest.patches}
    assert all("provenance sha256 matches" in f["evidence"] for f in image["fixes"])


def test_bare_base_misses_every_fix(capsys, standin, manifest_path, pristine_source, series_manifest):
    code, doc = run_audit(capsys, manifest_path, pristine_source, standin)
    assert code == 1 and doc["ok"] is False
    assert doc["images"][0]["provenance"] is None
    assert statuses(doc) == {p.id: "missing" for p in series_manifest.patches}
    assert all("pristine vLLM 0.29.0" in f["evidence"] for f in doc["images"][0]["fixes"])


def test_an_edited_file_is_tampered(capsys, tampered_image, manifest_path, pristine_source, series_manifest):
    code, doc = run_audit(capsys, manifest_path, pristine_source, tampered_image)
    assert code == 1
    # All three fixes write scheduler.py: the provenance cannot vouch for any of them any more.
    assert statuses(doc) == {p.id: "tampered" for p in series_manifest.patches}
    evidence = doc["images"][0]["fixes"][0]["evidence"]
    assert SCHEDULER in evidence and "provenance record" in evidence


def test_an_image_built_from_an_older_manifest_is_stale(capsys, stale_image, manifest_path, pristine_source,
                                                        series_manifest):
    code, doc = run_audit(capsys, manifest_path, pristine_source, stale_image)
    assert code == 1
    found = statuses(doc)
    assert found[WATERMARK] == "stale"
    assert {i: s for i, s in found.items() if i != WATERMARK} == \
        {p.id: "carried" for p in series_manifest.patches if p.id != WATERMARK}
    watermark = next(f for f in doc["images"][0]["fixes"] if f["id"] == WATERMARK)
    assert "the manifest's" in watermark["evidence"]


def test_stale_without_provenance_is_found_in_the_manifests_git_history(
        capsys, docker_client, stale_image, manifest_path, pristine_source, session_repo, tmp_path, derive_image):
    """An image patched by hand with an older revision: git history of the patch file says so."""
    import git

    from patchset import docker_engine
    from patchset.core import provenance

    repo_dir = tmp_path / "fork"
    old = older_manifest(manifest_path, repo_dir)
    repo = git.Repo.init(repo_dir)
    repo.index.add(["patches.yaml", "recipes"])
    repo.index.commit("older revision of the watermark backport")
    old_patch = load_manifest(old).patch(WATERMARK).choice_for(VERSION).path
    shutil.copy(manifest_path.parent / old_patch.relative_to(repo_dir.resolve()), old_patch)
    repo.index.add(["recipes"])
    repo.index.commit("current revision")

    with docker_engine.ImageFiles(docker_client, stale_image) as files:
        site = files.locate_vllm().site
    by_hand = derive_image(stale_image, f"{session_repo}:older-no-record",
                     remove=(f"{site}/{provenance.PROVENANCE_PATH}",))
    code, doc = run_audit(capsys, old, pristine_source, by_hand)
    assert code == 1 and doc["images"][0]["provenance"] is None
    watermark = next(f for f in doc["images"][0]["fixes"] if f["id"] == WATERMARK)
    assert watermark["status"] == "stale"
    assert "older revision" in watermark["evidence"] and "commit" in watermark["evidence"]


def test_a_hand_patched_image_without_provenance_is_audited_from_its_files(
        capsys, built, standin, session_repo, manifest_path, pristine_source, series_manifest, derive_image):
    content = built.result.files[SCHEDULER]
    by_hand = derive_image(standin, f"{session_repo}:by-hand",
                     write={f"{built.site}/{SCHEDULER}": content})
    code, doc = run_audit(capsys, manifest_path, pristine_source, by_hand)
    assert code == 0, doc
    assert doc["images"][0]["provenance"] is None
    assert statuses(doc) == {p.id: "carried" for p in series_manifest.patches}
    assert all("no provenance record" in f["evidence"] for f in doc["images"][0]["fixes"])


def test_an_image_without_vllm_cannot_be_audited(capsys, standin, docker_client, manifest_path, pristine_source):
    debian = "patchset-standin/debian:bookworm"
    code, doc = run_audit(capsys, manifest_path, pristine_source, debian)
    assert code == 1
    assert "vllm" in doc["images"][0]["error"]


def test_images_in_a_registry_get_the_same_verdicts(capsys, docker_client, registry, built, standin,
                                                   tampered_image, stale_image, manifest_path, pristine_source):
    local = {"patched": built.tag, "base": standin, "tampered": tampered_image, "stale": stale_image}
    remote = {}
    t0 = time.monotonic()
    for name, ref in local.items():
        target = f"{registry}/vllm-openai:{name}"
        docker_client.images.get(ref).tag(f"{registry}/vllm-openai", tag=name)
        for line in docker_client.images.push(f"{registry}/vllm-openai", tag=name, stream=True, decode=True):
            assert "error" not in line, line
        docker_client.images.remove(target)  # audit must pull it from the registry
        remote[name] = target
    print(f"\npushed 4 images to the local registry in {time.monotonic() - t0:.1f} s", file=sys.stderr)

    local_code, local_doc = run_audit(capsys, manifest_path, pristine_source, *local.values())
    remote_code, remote_doc = run_audit(capsys, manifest_path, pristine_source, *remote.values(), pull=True)
    assert local_code == remote_code == 1
    for i in range(len(local)):
        assert statuses(remote_doc, i) == statuses(local_doc, i)
        assert remote_doc["images"][i]["image"] == list(remote.values())[i]
    assert statuses(remote_doc, 0) and set(statuses(remote_doc, 0).values()) == {"carried"}
    digests = [img["digest"] for img in remote_doc["images"]]
    assert all(d and d.startswith("sha256:") for d in digests)


@pytest.mark.network
def test_audit_compares_with_the_wheel_from_the_index_by_default(docker_client, built, series_manifest):
    report = audit(series_manifest, [built.tag], client=docker_client)
    assert report.ok, report.to_json()
    assert {f.id: f.status for f in report.images[0].fixes} == {p.id: "carried" for p in series_manifest.patches}


def test_table_output_names_every_fix(capsys, built, manifest_path, pristine_source, series_manifest):
    assert main(["audit", built.tag, "--manifest", str(manifest_path), "--source", pristine_source]) == 0
    out = capsys.readouterr().out
    assert built.tag in out and "carried" in out
    for p in series_manifest.patches:
        assert p.id in out
