"""patchset build: on the stand-in 0.29.0 base, through a real Docker engine."""

from __future__ import annotations

import io
import json
import tarfile

import pytest
from helpers import write_manifest, write_patch

from patchset import docker_engine
from patchset.core import provenance
from patchset.verbs.build import BuildError, build_context, build_image, default_tag

pytest_plugins = ["conftest_docker"]

VERSION = "0.29.0"
SCHEDULER = "vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py"


# --- without an engine ------------------------------------------------------------------------------


def test_build_context_holds_only_the_changed_files_and_the_record():
    install = docker_engine.VllmInstall("/usr/lib/python3/dist-packages", "0.29.0", "x", "3.12")
    context = build_context(install, {"vllm/a.py": b"new\n", "vllm/gone.py": None}, {"vllm/a.py": 0o640},
                            b"{}", b"FROM scratch\n")
    with tarfile.open(fileobj=io.BytesIO(context)) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert sorted(members) == ["Dockerfile", "layer/usr/lib/python3/dist-packages/vllm/.patchset-provenance.json",
                               "layer/usr/lib/python3/dist-packages/vllm/a.py", "patchset-bytecode.py"]
    assert members["layer/usr/lib/python3/dist-packages/vllm/a.py"].mode == 0o640


def test_default_tag_keeps_the_registry_and_repository():
    assert default_tag("vllm/vllm-openai:v0.29.0") == "vllm/vllm-openai:v0.29.0-patched"
    assert default_tag("127.0.0.1:5000/team/vllm:v1") == "127.0.0.1:5000/team/vllm:v1-patched"
    assert default_tag("localhost:5000/vllm") == "localhost:5000/vllm:latest-patched"


# --- with an engine ---------------------------------------------------------------------------------



@pytest.mark.docker
@pytest.mark.slow
def test_build_applies_the_series_in_one_small_change_set(built, docker_client, series_manifest, standin):
    report = built
    base = docker_client.images.get(standin)
    assert report.base == standin and report.base_digest == base.id
    assert {p.id: p.status for p in report.result.patches} == {p.id: "applies" for p in series_manifest.patches}
    assert report.written == [SCHEDULER]
    # One thin layer (the files, their bytecode, the provenance record) and nothing else of any size.
    assert len(report.layers) == 1, report.layers
    assert "COPY" in report.layers[0].created_by
    assert report.added_bytes < 512 * 1024, report.added_bytes
    print(f"\nlayers added by patchset build: {[(lay.created_by[:40], lay.size) for lay in report.layers]}, "
          f"total {report.added_bytes} bytes")

    with docker_engine.ImageFiles(docker_client, report.image_id) as files:
        install = files.locate_vllm()
        assert install.version == VERSION
        content = files.read(install.path_of(SCHEDULER))
        assert content == report.result.files[SCHEDULER]
        record = provenance.loads(files.read(install.path_of(provenance.PROVENANCE_PATH)))
        cache = f"{install.site}/vllm/distributed/kv_transfer/kv_connector/v1/offloading/__pycache__"
        pyc = files.read(f"{cache}/scheduler.cpython-311.pyc")
        optimised = [files.read(f"{cache}/scheduler.cpython-311.opt-{level}.pyc") for level in (1, 2)]
    assert record["vllm"] == VERSION and record["manifest"]["sha256"] == series_manifest.sha256
    assert record["files"][SCHEDULER]["sha256"] == provenance.sha256(content)
    assert provenance.carried_ids(record) == {p.id: p.sha256 for p in report.result.patches}
    # The old bytecode is gone: the .pyc is hash-checked (flags 0b11) against exactly these bytes.
    import importlib.util

    for code in (pyc, *optimised):  # every optimisation level: `python -O` cannot run old bytecode either
        assert code is not None
        assert int.from_bytes(code[4:8], "little") == 0b11
        assert code[8:16] == importlib.util.source_hash(content)


@pytest.mark.docker
@pytest.mark.slow
def test_build_labels_say_what_the_image_is(built, docker_client, series_manifest, standin):
    labels = docker_client.images.get(built.image_id).labels
    assert labels["org.opencontainers.image.version"] == VERSION
    assert labels["org.opencontainers.image.base.name"] == standin
    assert labels["org.opencontainers.image.base.digest"] == docker_client.images.get(standin).id
    assert labels["org.opencontainers.image.created"].endswith("Z")
    assert labels["io.patchset.manifest.sha256"] == series_manifest.sha256
    for p in built.result.patches:
        assert labels[f"io.patchset.patch.{p.id}"] == p.sha256
    # The base's entrypoint survives the build.
    assert docker_client.images.get(built.image_id).attrs["Config"]["Entrypoint"] == \
        docker_client.images.get(standin).attrs["Config"]["Entrypoint"]


@pytest.mark.docker
@pytest.mark.slow
def test_build_refuses_when_the_series_does_not_apply(tmp_path, docker_client, standin, session_repo):
    from patchset.core.manifest import load_manifest

    write_patch(tmp_path, "recipes/bad.patch",
                f"--- a/{SCHEDULER}\n+++ b/{SCHEDULER}\n@@ -1,2 +1,2 @@\n-this line is not there\n+nor this\n"
                " and no context either\n")
    manifest = load_manifest(write_manifest(tmp_path, """
        schema: 1
        targets: {"0.29.0": {}}
        patches:
          - {id: bad, title: does not apply, origin: local, releases: ">=0.29", patch: recipes/bad.patch}
    """))
    tag = f"{session_repo}:refused"
    with pytest.raises(BuildError, match="does not apply"):
        build_image(manifest, VERSION, base=standin, tag=tag, client=docker_client)
    assert not docker_client.images.list(name=tag)


@pytest.mark.docker
@pytest.mark.slow
def test_build_refuses_a_base_of_another_release_or_already_patched(built, docker_client, series_manifest,
                                                                    standin, session_repo):
    other = next((t.version for t in series_manifest.targets if t.version != VERSION), None)
    if other:
        with pytest.raises(BuildError, match=f"holds vLLM {VERSION} .*, not {other}"):
            build_image(series_manifest, other, base=standin, tag=f"{session_repo}:wrong", client=docker_client)
    with pytest.raises(BuildError, match="already carries a patchset series"):
        build_image(series_manifest, VERSION, base=built.tag, tag=f"{session_repo}:twice", client=docker_client)


@pytest.mark.docker
@pytest.mark.slow
def test_cli_build_streams_progress_and_prints_json(manifest_path, standin, session_repo, docker_client,
                                                    capsys):
    from patchset.cli import main

    tag = f"{session_repo}:cli"
    assert main(["build", "--vllm", VERSION, "--manifest", str(manifest_path), "--base", standin,
                 "--tag", tag, "--format", "json"]) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["ok"] and doc["image"] == tag and doc["vllm"] == VERSION
    assert doc["added_bytes"] == sum(layer["size"] for layer in doc["layers"])
    assert "Step 1/" in err and "COPY layer/ /" in err  # the engine's build output, streamed
    assert docker_client.images.get(tag).id == doc["id"]


def test_build_without_an_engine_is_an_error(monkeypatch, manifest_path, capsys):
    from patchset.cli import main

    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    assert main(["build", "--vllm", VERSION, "--manifest", str(manifest_path)]) == 2
    assert "no Docker engine answers" in capsys.readouterr().err
