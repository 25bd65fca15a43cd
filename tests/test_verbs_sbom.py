"""CycloneDX SBOM: backport pedigree derived from the audit of an image's files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator

from patchset.cli import main
from patchset.core.manifest_load import load_manifest
from patchset.core.sbom import embedded_claims
from patchset.verbs import sbom
from patchset.verbs.audit import CARRIED, MISSING, TAMPERED, FixVerdict, ImageAudit

pytest_plugins = ["conftest_docker"]
REPO = Path(__file__).resolve().parents[1]
WATERMARK, RECURRENT, MTP = "offload-finished-watermark", "offload-recurrent-load-boundary", "offload-mtp-eagle-serve"


@pytest.fixture
def manifest():
    return load_manifest(REPO / "patches.yaml")


def audited(*verdicts: tuple[str, str]) -> ImageAudit:
    fixes = [FixVerdict(i, s, f"{s} (test)", True) for i, s in verdicts]
    return ImageAudit("fork/vllm:0.29.0", vllm="0.29.0", digest="sha256:" + "ab" * 32, fixes=fixes)


def valid(doc: str) -> dict:
    errors = JsonStrictValidator(SchemaVersion.V1_6).validate_str(doc)
    assert errors is None, errors
    out: dict = json.loads(doc)
    assert out["specVersion"] == "1.6"
    return out


def vllm_of(doc: dict) -> dict:
    return next(c for c in doc["components"] if c["name"] == "vllm")


def test_only_carried_fixes_are_backport_patches(manifest):
    doc = valid(sbom.document(audited((WATERMARK, CARRIED), (RECURRENT, MISSING), (MTP, TAMPERED)), manifest))
    vllm = vllm_of(doc)
    assert vllm["purl"] == "pkg:pypi/vllm@0.29.0"
    patches = vllm["pedigree"]["patches"]
    assert len(patches) == 1 and patches[0]["type"] == "backport"
    assert patches[0]["resolves"][0]["id"] == "#54288"
    assert patches[0]["resolves"][0]["source"]["url"].endswith("/pull/54288")
    assert "num_tokens_after_batch" in patches[0]["diff"]["text"]["content"]
    props = {p["name"]: p["value"] for p in vllm["properties"]}
    assert props[f"patchset:fix:{RECURRENT}"].startswith("missing")
    assert props[f"patchset:fix:{MTP}"].startswith("tampered")


def test_an_image_with_nothing_carried_has_no_pedigree(manifest):
    doc = valid(sbom.document(audited((WATERMARK, MISSING)), manifest))
    assert "pedigree" not in vllm_of(doc)


def test_source_date_epoch_makes_the_document_reproducible(manifest, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    a = sbom.document(audited((WATERMARK, CARRIED)), manifest)
    b = sbom.document(audited((WATERMARK, CARRIED)), manifest)
    assert a == b and json.loads(a)["metadata"]["timestamp"].startswith("2023-11-14T22:13:20")



def test_embedded_claims_read_back_what_the_document_says(manifest):
    doc = sbom.document(audited((WATERMARK, CARRIED), (RECURRENT, MISSING), (MTP, TAMPERED)), manifest)
    assert embedded_claims(doc.encode()) == ("0.29.0", {WATERMARK: CARRIED, RECURRENT: MISSING, MTP: TAMPERED}, 1)


@pytest.mark.parametrize("raw", [b"not json", b"[]", b'{"bomFormat": "SPDX"}', b'{"bomFormat": "CycloneDX"}'])
def test_embedded_claims_refuse_what_is_not_such_a_document(raw):
    with pytest.raises(ValueError):
        embedded_claims(raw)


def test_the_image_is_named_by_its_registry_digest_else_its_id(manifest):
    image = audited((WATERMARK, CARRIED))
    assert json.loads(sbom.document(image, manifest))["metadata"]["component"]["version"] == image.digest
    image.digest, image.id = None, "sha256:" + "cd" * 32
    assert json.loads(sbom.document(image, manifest))["metadata"]["component"]["version"] == image.id


@pytest.mark.docker
@pytest.mark.slow
def test_sbom_of_a_built_image_lists_what_its_files_carry(capsys, built, manifest_path, pristine_source):
    code = main(["sbom", built.tag, "--manifest", str(manifest_path), "--source", pristine_source])
    doc = valid(capsys.readouterr().out)
    assert code == 0
    patches = vllm_of(doc)["pedigree"]["patches"]
    assert sorted(p["resolves"][0]["id"] for p in patches) == ["#52771", "#52807", "#54288"]


@pytest.mark.docker
@pytest.mark.slow
def test_sbom_of_the_bare_base_lists_no_patch(capsys, standin, manifest_path, pristine_source):
    code = main(["sbom", standin, "--manifest", str(manifest_path), "--source", pristine_source])
    doc = valid(capsys.readouterr().out)
    assert code == 1 and "pedigree" not in vllm_of(doc)


def test_an_image_built_from_a_pinned_commit_names_it_as_a_vcs_reference(tmp_path):
    commit = "251bc8456987b089152af24f5712f7ac24777952"
    (tmp_path / "clone").mkdir()
    text = (REPO / "patches.yaml").read_text().replace(
        '  "0.30.0": {image: "vllm/vllm-openai:v0.30.0"}\n',
        '  "0.30.0": {image: "vllm/vllm-openai:v0.30.0"}\n'
        f'  "0.29.1.dev1+g251bc8456":\n    source: {{git: clone, commit: "{commit}"}}\n')
    (tmp_path / "patches.yaml").write_text(text)
    (tmp_path / "recipes").symlink_to(REPO / "recipes")
    manifest = load_manifest(tmp_path / "patches.yaml")
    image = ImageAudit("fork/vllm:nightly", vllm="0.29.1.dev1+g251bc8456.cu128", digest="sha256:" + "ab" * 32,
                       fixes=[FixVerdict(WATERMARK, CARRIED, "carried (test)", True)])
    vllm = vllm_of(valid(sbom.document(image, manifest)))
    clone = (tmp_path / "clone").resolve().as_uri()
    assert vllm["externalReferences"] == [{"type": "vcs", "url": clone, "comment": f"commit {commit}"}]
    assert vllm["purl"] == f"pkg:pypi/vllm@0.29.1.dev1%2Bg251bc8456.cu128?vcs_url=git%2B{clone}%40{commit}"
    assert {"name": "patchset:vllm:commit", "value": commit} in vllm["properties"]
    release = vllm_of(valid(sbom.document(audited((WATERMARK, CARRIED)), load_manifest(REPO / "patches.yaml"))))
    assert "externalReferences" not in release and "?" not in release["purl"]  # a release says no commit
