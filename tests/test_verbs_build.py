"""patchset build: on the stand-in 0.29.0 base, through a real Docker engine."""

from __future__ import annotations

import io
import json
import tarfile

import docker.errors
import pytest
from helpers import write_manifest, write_patch

from patchset.core import provenance
from patchset.images import engine
from patchset.images.context import build_context
from patchset.verbs.build import BuildError, build_image, default_tag

pytest_plugins = ["conftest_docker"]

VERSION = "0.29.0"
SCHEDULER = "vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py"


# --- without an engine ------------------------------------------------------------------------------


def test_build_context_holds_only_the_changed_files_and_the_record():
    install = engine.VllmInstall("/usr/lib/python3/dist-packages", "0.29.0", "x", "3.12")
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


def known_digests(image) -> set[str]:
    """Every digest an image is known by: its local id, and each registry's digest for it."""
    return {image.id, *(d.split("@", 1)[1] for d in image.attrs.get("RepoDigests") or [])}



@pytest.mark.docker
@pytest.mark.slow
def test_build_applies_the_series_in_one_small_change_set(built, docker_client, series_manifest, standin):
    report = built
    # the digest a registry knew the base by when it was built (RepoDigests), else its local id: one of the
    # names the base has now (a later test pushes it to a registry, which adds one; the session's fixtures
    # are shared, so the build may come before or after that push)
    assert report.base == standin and report.base_digest in known_digests(docker_client.images.get(standin))
    assert {p.id: p.status for p in report.result.patches} == {p.id: "applies" for p in series_manifest.patches}
    assert report.written == [SCHEDULER]
    # One thin layer (the files, their bytecode, the provenance record) and nothing else of any size.
    assert len(report.layers) == 1, report.layers
    assert "COPY" in report.layers[0].created_by
    assert report.added_bytes < 512 * 1024, report.added_bytes
    print(f"\nlayers added by patchset build: {[(lay.created_by[:40], lay.size) for lay in report.layers]}, "
          f"total {report.added_bytes} bytes")

    with engine.ImageFiles(docker_client, report.image_id) as files:
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
    assert labels["org.opencontainers.image.base.digest"] == built.base_digest
    assert built.base_digest in known_digests(docker_client.images.get(standin))
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
    from patchset.core.manifest_load import load_manifest

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
    with pytest.raises(BuildError, match="does not apply") as e:
        build_image(manifest, VERSION, base=standin, tag=tag, client=docker_client)
    assert e.value.exit_code == 1  # a finding, as for check and apply; not bad input
    assert not docker_client.images.list(name=tag)


@pytest.mark.docker
@pytest.mark.slow
def test_the_mode_a_patch_sets_is_the_mode_in_the_layer(tmp_path, docker_client, standin, session_repo):
    from patchset.core.manifest_load import load_manifest
    from patchset.images.engine import ImageFiles

    write_patch(tmp_path, "recipes/exec.patch", f"diff --git a/{SCHEDULER} b/{SCHEDULER}\nold mode 100644\n"
                "new mode 100755\n")
    manifest = load_manifest(write_manifest(tmp_path, """
        schema: 1
        targets: {"0.29.0": {}}
        patches:
          - {id: exec, title: executable, origin: local, releases: ">=0.29", patch: recipes/exec.patch}
    """))
    report = build_image(manifest, VERSION, base=standin, tag=f"{session_repo}:exec", client=docker_client)
    with ImageFiles(docker_client, report.tag) as files:
        assert files.mode(f"{report.site}/{SCHEDULER}") == 0o755
    record = json.loads(files_read(docker_client, report.tag, f"{report.site}/vllm/.patchset-provenance.json"))
    assert record["files"][SCHEDULER]["mode"] == "100755"


def files_read(client, image: str, path: str) -> bytes:
    from patchset.images.engine import ImageFiles

    with ImageFiles(client, image) as files:
        content = files.read(path)
    assert content is not None
    return content


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
    assert doc["warnings"] == []  # the key every verb's JSON has (the manifest's and the series' warnings)
    assert "Step 1/" in err and "COPY layer/ /" in err  # the engine's build output, streamed
    assert docker_client.images.get(tag).id == doc["id"]
    assert main(["build", "--vllm", VERSION, "--manifest", str(manifest_path), "--base", standin,
                 "--tag", tag, "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert "Step 1/" not in err and f"built {tag}" in out  # --quiet: no builder log, the summary stays
    assert "wrote 1 file; added 1 layer," in out


def test_build_without_an_engine_is_an_error(monkeypatch, manifest_path, capsys):
    from patchset.cli import main

    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    assert main(["build", "--vllm", VERSION, "--manifest", str(manifest_path)]) == 2
    assert "no Docker engine answers" in capsys.readouterr().err


# --- reproducible builds, nothing left behind -------------------------------------------------------

EPOCH = "1700000000"  # 2023-11-14T22:13:20Z


@pytest.mark.docker
@pytest.mark.slow
def test_two_builds_under_source_date_epoch_are_the_same_image(docker_client, standin, series_manifest,
                                                               session_repo, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    first = build_image(series_manifest, VERSION, base=standin, tag=f"{session_repo}:sde1", client=docker_client)
    second = build_image(series_manifest, VERSION, base=standin, tag=f"{session_repo}:sde2", client=docker_client)
    assert first.image_id == second.image_id
    assert first.labels == second.labels
    assert first.labels["org.opencontainers.image.created"] == "2023-11-14T22:13:20Z"
    with engine.ImageFiles(docker_client, first.image_id) as files:
        install = files.locate_vllm()
        record = provenance.loads(files.read(install.path_of(provenance.PROVENANCE_PATH)))
    assert record["applied_at"] == "2023-11-14T22:13:20+00:00"


@pytest.mark.docker
@pytest.mark.slow
def test_the_added_layer_is_byte_for_byte_the_same_without_the_build_cache(docker_client, standin,
                                                                         series_manifest, session_repo,
                                                                         monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    layers = []
    for n in (1, 2):  # nothing cached: every file, folder and pyc of the layer is made afresh
        report = build_image(series_manifest, VERSION, base=standin, tag=f"{session_repo}:nocache{n}",
                             client=docker_client, nocache=True)
        layers.append(docker_client.images.get(report.image_id).attrs["RootFS"]["Layers"])
        with engine.ImageFiles(docker_client, report.image_id) as files:
            install = files.locate_vllm()
            stream, _ = files._container.get_archive(install.path_of("vllm/distributed"))
            with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
                touched = [m for m in tar.getmembers() if "offloading/" in m.name and "scheduler" in m.name]
        assert touched and {m.mtime for m in touched} == {int(EPOCH)}, [(m.name, m.mtime) for m in touched]
    base_layers = len(docker_client.images.get(standin).attrs["RootFS"]["Layers"])
    assert layers[0][base_layers:] == layers[1][base_layers:]  # the diff ids: sha256 of each added layer


@pytest.mark.docker
@pytest.mark.slow
def test_the_compile_stage_is_not_left_behind(built, docker_client):
    assert built.removed_stages, "the build named no compile stage"
    for stage in built.removed_stages:
        with pytest.raises(docker.errors.ImageNotFound):
            docker_client.images.get(stage)
    # What the image needs is still there: its own layers and its parents.
    assert docker_client.images.get(built.image_id).id == built.image_id


# --- from an installed wheel, not a checkout ---------------------------------------------------------

_FROM_THE_WHEEL = """
import io, sys, tarfile, types
from pathlib import Path
import patchset
from patchset.images import engine, shipped
from patchset.images.context import build_context, dockerfile_for
assert Path(patchset.__file__).is_relative_to(sys.prefix), patchset.__file__  # the wheel's copy, not a checkout
fork = types.SimpleNamespace(base=Path.cwd())  # a manifest's folder without images/ of its own
dockerfile = dockerfile_for(fork)
install = engine.VllmInstall("/usr/lib/python3/dist-packages", "0.29.0", "x", "3.11")
context = build_context(install, {"vllm/a.py": b"new\\n"}, {}, b"{}", dockerfile, 0)
with tarfile.open(fileobj=io.BytesIO(context)) as tar:
    assert tar.extractfile("Dockerfile").read() == dockerfile
assert b"def main()" in shipped("bootstrap.py").read_bytes()  # the image runner's bootstrap ships too
sys.stdout.buffer.write(dockerfile)
"""


@pytest.fixture(scope="module")
def wheel_python(tmp_path_factory):
    """(python, env): a clean venv holding patchset from its wheel; dependencies come after it on the path."""
    import os
    import shutil
    import subprocess
    import sys
    import sysconfig
    from pathlib import Path

    tmp = tmp_path_factory.mktemp("wheel")
    repo = Path(__file__).resolve().parents[1]
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(repo / name, src / name)
    shutil.copytree(repo / "patchset", src / "patchset", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp / "dist"), str(src)],
                   check=True, capture_output=True)
    wheel = next((tmp / "dist").glob("patchset-*.whl"))
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                   check=True, capture_output=True)
    # The editable install of this checkout is a .pth hook, which PYTHONPATH entries do not run.
    return venv / "bin" / "python", {**os.environ, "PYTHONPATH": sysconfig.get_paths()["purelib"]}


@pytest.mark.network  # the wheel's build backend (setuptools) comes from the package index
@pytest.mark.slow
def test_build_finds_its_dockerfile_in_an_installed_wheel(tmp_path, wheel_python):
    import subprocess
    from pathlib import Path

    python, env = wheel_python
    out = subprocess.run([python, "-c", _FROM_THE_WHEEL], cwd=tmp_path, env=env, capture_output=True, check=False)
    assert out.returncode == 0, out.stderr.decode()
    repo = Path(__file__).resolve().parents[1]
    assert out.stdout == (repo / "patchset" / "images" / "vllm-patched" / "Dockerfile").read_bytes()


@pytest.mark.network
@pytest.mark.docker
@pytest.mark.slow
def test_patchset_build_runs_from_an_installed_wheel(tmp_path, wheel_python, manifest_path, standin, session_repo,
                                                     docker_client):
    import subprocess

    python, env = wheel_python
    tag = f"{session_repo}:from-wheel"
    out = subprocess.run([python, "-m", "patchset", "build", "--vllm", VERSION, "--manifest", str(manifest_path),
                          "--base", standin, "--tag", tag, "--format", "json"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout)
    assert doc["ok"] and docker_client.images.get(tag).id == doc["id"]
    assert not (manifest_path.parent / "images" / "vllm-patched" / "Dockerfile").exists()  # the wheel's was used


def test_the_source_label_never_carries_the_remotes_token(tmp_path):
    import git

    from patchset.verbs.build import _git_labels

    repo = git.Repo.init(tmp_path)
    (tmp_path / "patches.yaml").write_text("schema: 1\n")
    repo.index.add(["patches.yaml"])
    repo.index.commit("one")
    repo.create_remote("origin", "https://x-access-token:ghs_s3cr3tT0ken@127.0.0.1/fork/vllm-patches.git")
    labels = _git_labels(tmp_path)
    assert labels["org.opencontainers.image.source"] == "https://127.0.0.1/fork/vllm-patches.git"
    assert "s3cr3t" not in json.dumps(labels)


# --- build --sbom: the SBOM derived from an audit of the built image, embedded in a layer of its own -----


def test_sbom_context_is_the_document_under_sbom_path_with_fixed_mtimes():
    from patchset.core.sbom import SBOM_PATH
    from patchset.images.context import SBOM_DOCKERFILE, sbom_context

    with tarfile.open(fileobj=io.BytesIO(sbom_context(b'{"bomFormat": "CycloneDX"}', SBOM_PATH, 1700000000))) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert tar.extractfile("Dockerfile").read() == SBOM_DOCKERFILE
        assert tar.extractfile("sbom" + SBOM_PATH).read() == b'{"bomFormat": "CycloneDX"}'
    assert sorted(members) == ["Dockerfile", "sbom/usr", "sbom/usr/share", "sbom/usr/share/patchset",
                               "sbom/usr/share/patchset/sbom.cdx.json"]
    assert {m.mtime for m in members.values()} == {1700000000}
    assert all(members[d].isdir() and members[d].mode == 0o755
               for d in ("sbom/usr", "sbom/usr/share", "sbom/usr/share/patchset"))


def test_the_default_sbom_file_is_named_after_the_tag():
    from patchset.verbs.build import sbom_file_for

    assert str(sbom_file_for("127.0.0.1:5000/team/vllm:v1-patched")) == "127.0.0.1_5000_team_vllm_v1-patched.cdx.json"


@pytest.fixture(scope="module")
def sbom_build(docker_client, standin, manifest_path, session_repo, tmp_path_factory):
    """``patchset build --sbom`` (no FILE) run in a scratch folder: (the JSON it printed, that folder)."""
    import contextlib
    import os

    from patchset.cli import main

    where = tmp_path_factory.mktemp("sbom-build")
    tag = f"{session_repo}:sbom"
    out, cwd = io.StringIO(), os.getcwd()
    os.chdir(where)
    try:
        with contextlib.redirect_stdout(out):
            code = main(["build", "--vllm", VERSION, "--manifest", str(manifest_path), "--base", standin,
                         "--tag", tag, "--sbom", "--format", "json"])
    finally:
        os.chdir(cwd)
    assert code == 0, out.getvalue()
    return json.loads(out.getvalue()), where


def sbom_patches(document: bytes) -> list[str]:
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(document.decode()) is None
    vllm = next(c for c in json.loads(document)["components"] if c["name"] == "vllm")
    return sorted(p["resolves"][0]["id"] for p in vllm["pedigree"]["patches"])


@pytest.mark.docker
@pytest.mark.slow
def test_build_sbom_embeds_the_audited_sbom_in_one_small_extra_layer(sbom_build, docker_client, series_manifest):
    from patchset.core.sbom import SBOM_PATH

    doc, where = sbom_build
    assert doc["sbom"]["path"] == SBOM_PATH
    host_copy = where / doc["sbom"]["file"]
    assert doc["sbom"]["file"] == doc["image"].replace("/", "_").replace(":", "_") + ".cdx.json"
    image = docker_client.images.get(doc["image"])
    assert image.id == doc["id"] and image.labels["io.patchset.sbom"] == SBOM_PATH
    with engine.ImageFiles(docker_client, image) as files:
        embedded = files.read(SBOM_PATH)
    assert embedded == host_copy.read_bytes()
    assert doc["sbom"]["sha256"] == provenance.sha256(embedded)
    assert sbom_patches(embedded) == sorted(f"#{p.upstream_pr}" for p in series_manifest.patches)
    # The series' layer, then the SBOM's: one COPY of a few tens of KiB, no second build of the series.
    assert len(doc["layers"]) == 2 and "COPY" in doc["layers"][1]["created_by"]
    assert doc["layers"][1]["size"] < 256 * 1024, doc["layers"]
    print(f"\nlayers added by patchset build --sbom: {[layer['size'] for layer in doc['layers']]} bytes")


@pytest.mark.docker
@pytest.mark.slow
def test_audit_warns_when_the_embedded_sbom_disagrees_with_the_files(sbom_build, docker_client, session_repo,
                                                                     manifest_path, pristine_source, derive_image,
                                                                     capsys):
    from patchset.cli import main

    doc, _ = sbom_build
    tag = doc["image"]
    assert main(["audit", tag, "--manifest", str(manifest_path), "--source", pristine_source,
                 "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["images"][0]["warnings"] == []  # SBOM and files agree

    with engine.ImageFiles(docker_client, tag) as files:
        site = files.locate_vllm().site
        content = files.read(f"{site}/{SCHEDULER}")
    reverted = derive_image(tag, f"{session_repo}:sbom-reverted", write={
        f"{site}/{SCHEDULER}": content.replace(b"max(req.num_prompt_tokens, req.num_tokens - 1)", b"req.num_tokens")})
    assert main(["audit", reverted, "--manifest", str(manifest_path), "--source", pristine_source,
                 "--format", "json"]) == 1
    warnings = json.loads(capsys.readouterr().out)["images"][0]["warnings"]
    assert ("the image's SBOM /usr/share/patchset/sbom.cdx.json says offload-finished-watermark is carried; "
            "its files say tampered") in warnings


@pytest.mark.docker
@pytest.mark.slow
def test_the_sbom_layer_is_byte_for_byte_the_same_under_source_date_epoch(built, docker_client, standin,
                                                                        series_manifest, session_repo,
                                                                        tmp_path, monkeypatch):
    import dataclasses

    from patchset.verbs.build import add_sbom

    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    base = docker_client.images.get(standin)
    with engine.ImageFiles(docker_client, base) as files:
        install = files.locate_vllm()
    layers, documents = [], []
    for n in (1, 2):  # nothing cached: the SBOM layer is made afresh from a fresh audit each time
        report = dataclasses.replace(built, tag=f"{session_repo}:sbom-sde", labels=dict(built.labels))
        add_sbom(docker_client, series_manifest, base, install, report, tmp_path / f"{n}.cdx.json",
                 say=lambda _line: None, nocache=True)
        layers.append(docker_client.images.get(report.image_id).attrs["RootFS"]["Layers"][-1])
        documents.append((tmp_path / f"{n}.cdx.json").read_bytes())
    assert documents[0] == documents[1]
    assert json.loads(documents[0])["metadata"]["timestamp"].startswith("2023-11-14T22:13:20")
    assert layers[0] == layers[1]  # the diff id: sha256 of the layer's tar


# --- compiled code cannot be carried by copying files onto an image ---------------------------------

KERNEL_HEADER = "csrc/cache.h"
OPS = "vllm/_custom_ops.py"


@pytest.fixture(scope="module")
def kernel_manifest(tmp_path_factory):
    """0.29.0's own files: a fix in csrc/cache.h and vllm/_custom_ops.py, and a plain Python fix."""
    from helpers import udiff

    from patchset.core.manifest_load import load_manifest
    from patchset.sources import open_source

    sdist = open_source("pypi", VERSION)
    project = tmp_path_factory.mktemp("kernel")
    header, ops = (sdist.read(p).decode() for p in (KERNEL_HEADER, OPS))
    sched = sdist.read(SCHEDULER).decode()
    anchors = {KERNEL_HEADER: "void reshape_and_cache(torch::Tensor& key, torch::Tensor& value,\n",
               OPS: "    torch.ops._C_cache_ops.reshape_and_cache(\n",
               SCHEDULER: "class OffloadingConnectorScheduler"}
    assert header.count(anchors[KERNEL_HEADER]) == ops.count(anchors[OPS]) == sched.count(anchors[SCHEDULER]) == 1
    fixed_header = header.replace(anchors[KERNEL_HEADER], "// a fork: slots < 0 are padding\n" + anchors[KERNEL_HEADER])
    write_patch(project, "recipes/kernel/fix.patch", udiff(KERNEL_HEADER, header, fixed_header)
                + udiff(OPS, ops, ops.replace(anchors[OPS], "    # padding slots are skipped\n" + anchors[OPS])))
    write_patch(project, "recipes/plain/fix.patch",
                udiff(SCHEDULER, sched, sched.replace(anchors[SCHEDULER], "# a fork's note\n" + anchors[SCHEDULER])))
    return load_manifest(write_manifest(project, f"""
        schema: 1
        targets: {{"{VERSION}": {{}}}}
        patches:
          - {{id: kernel, releases: "=={VERSION}", patch: recipes/kernel/fix.patch}}
          - {{id: plain, releases: "=={VERSION}", patch: recipes/plain/fix.patch}}
        """))


@pytest.mark.docker
@pytest.mark.slow
def test_a_csrc_hunk_is_never_carried_by_build_or_audit(kernel_manifest, docker_client, standin, session_repo,
                                                        pristine_source, derive_image):
    from patchset.errors import EXIT_FINDING
    from patchset.verbs import sbom as cyclonedx
    from patchset.verbs.audit import audit_image

    tag = f"{session_repo}:kernel"
    with pytest.raises(BuildError) as refused:
        build_image(kernel_manifest, VERSION, base=standin, tag=tag, client=docker_client)
    assert refused.value.exit_code == EXIT_FINDING
    assert f"patch kernel changes {KERNEL_HEADER}: compiled code" in str(refused.value)
    assert "nothing was built" in str(refused.value) and "--python-only" in str(refused.value)
    with pytest.raises(docker.errors.ImageNotFound):
        docker_client.images.get(tag)

    report = build_image(kernel_manifest, VERSION, base=standin, tag=tag, client=docker_client, python_only=True)
    assert report.not_carried == {"kernel": [KERNEL_HEADER]} and report.left_out == {"kernel": [KERNEL_HEADER]}
    assert sorted(report.written) == sorted([OPS, SCHEDULER])  # its Python part goes in: it cannot be left half
    assert "io.patchset.patch.kernel" not in report.labels and "io.patchset.patch.plain" in report.labels
    assert report.labels["io.patchset.left-out.kernel"] == KERNEL_HEADER

    audited = audit_image(docker_client, kernel_manifest, tag, source=pristine_source)
    fixes = {f.id: f for f in audited.fixes}
    assert fixes["plain"].status == "carried"
    assert fixes["kernel"].status == "missing" and KERNEL_HEADER in fixes["kernel"].evidence
    assert not audited.ok  # a targeted fix is missing: the audit fails, as the build's refusal said it would
    sbom = cyclonedx.document(audited, kernel_manifest)
    assert '"value": "missing: the provenance record says its compiled code was left out' in sbom

    # The same Python files put in by hand, without a record: the files cannot show the kernel either.
    with engine.ImageFiles(docker_client, tag) as files:
        install = files.locate_vllm()
        patched = {install.path_of(p): files.read(install.path_of(p)) for p in (OPS, SCHEDULER)}
    by_hand = derive_image(standin, f"{session_repo}:kernel-by-hand", write=patched)
    audited = audit_image(docker_client, kernel_manifest, by_hand, source=pristine_source)
    fixes = {f.id: f for f in audited.fixes}
    assert fixes["plain"].status == "carried"
    assert fixes["kernel"].status == "unknown"
    assert "its Python hunks are in the image's files" in fixes["kernel"].evidence
    assert f"it changes compiled code ({KERNEL_HEADER})" in fixes["kernel"].evidence


@pytest.mark.docker
@pytest.mark.slow
def test_a_folder_the_series_empties_is_gone_from_the_image(tmp_path, docker_client, standin, session_repo):
    """As GNU patch, git apply and `patchset apply` leave the tree (else the folder imports as a namespace)."""
    from patchset.core.manifest_load import load_manifest
    from patchset.sources import open_source

    folder = "vllm/v1/kv_offload/tiering/example"
    pristine = open_source("pypi", VERSION).root
    patch = ""
    for name in ("__init__.py", "manager.py"):
        path, text = f"{folder}/{name}", (pristine / folder / name).read_text()
        body = "".join(f"-{line}" for line in text.splitlines(keepends=True))
        patch += f"diff --git a/{path} b/{path}\ndeleted file mode 100644\n"  # an empty file: git writes no hunk
        patch += f"--- a/{path}\n+++ /dev/null\n@@ -1,{len(text.splitlines())} +0,0 @@\n{body}" if text else ""
    write_patch(tmp_path, "recipes/drop.patch", patch)
    manifest = load_manifest(write_manifest(tmp_path, """
        schema: 1
        targets: {"0.29.0": {}}
        patches:
          - {id: drop, title: drop the example, origin: local, releases: ">=0.29", patch: recipes/drop.patch}
    """))
    report = build_image(manifest, VERSION, base=standin, tag=f"{session_repo}:drop", client=docker_client)
    assert report.deleted == [f"{folder}/__init__.py", f"{folder}/manager.py"]
    said = docker_client.containers.run(report.tag, remove=True, network_disabled=True, entrypoint=[
        "python3", "-c", "import os, sys; print([os.path.isdir(os.path.join(sys.argv[1], f)) for f in sys.argv[2:]])",
        report.site, folder, folder.rsplit("/", 1)[0]])
    assert said.decode().strip() == "[False, True]"
