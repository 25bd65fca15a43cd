"""patchset audit: verdicts from the image's files, for local images and images in a registry."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import time
from pathlib import Path

import pytest

from patchset.cli import main
from patchset.core.manifest_load import load_manifest
from patchset.report.auditreport import audit_doc
from patchset.verbs.audit import audit
from patchset.verbs.build import build_image

pytest_plugins = ["conftest_docker"]
pytestmark = [pytest.mark.docker, pytest.mark.slow]

VERSION = "0.29.0"
SCHEDULER = "vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py"
WATERMARK = "offload-finished-watermark"


def run_audit(capsys, manifest: Path | str, source: str, *images: str, pull: bool = False) -> tuple[int, dict]:
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
    from patchset.images import engine

    with engine.ImageFiles(docker_client, built.tag) as files:
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
    # What a dashboard shows without the manifest at hand: what each fix is, where from, which revision.
    for fix, patch, built_patch in zip(image["fixes"], series_manifest.patches, built.result.patches, strict=True):
        assert (fix["title"], fix["origin"]) == (patch.title, patch.origin)
        assert fix["upstream"] == {"pr": patch.upstream_pr, "commit": patch.upstream_commit}
        assert fix["sha256"] == built_patch.sha256 and len(fix["sha256"]) == 64
    assert image["id"] == built.image_id
    assert image["digest"] is None  # built here, never pulled: no registry digest
    assert image["warnings"] == []


def test_bare_base_misses_every_fix(capsys, standin, manifest_path, pristine_source, series_manifest):
    code, doc = run_audit(capsys, manifest_path, pristine_source, standin)
    assert code == 1 and doc["ok"] is False
    assert doc["images"][0]["provenance"] is None
    assert statuses(doc) == {p.id: "missing" for p in series_manifest.patches}
    assert all("pristine vLLM 0.29.0" in f["evidence"] for f in doc["images"][0]["fixes"])
    assert [f["sha256"] for f in doc["images"][0]["fixes"]] == [None] * len(series_manifest.patches)


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
    # The sha256 is the revision the image carries, not the manifest's.
    current = series_manifest.patch(WATERMARK).load(VERSION, series_manifest.base).sha256
    assert watermark["sha256"] and watermark["sha256"] != current
    assert watermark["sha256"][:12] in watermark["evidence"]


def test_stale_without_provenance_is_found_in_the_manifests_git_history(
        capsys, docker_client, stale_image, manifest_path, pristine_source, session_repo, tmp_path, derive_image):
    """An image patched by hand with an older revision: git history of the patch file says so."""
    import git

    from patchset.core import provenance
    from patchset.images import engine

    repo_dir = tmp_path / "fork"
    old = older_manifest(manifest_path, repo_dir)
    repo = git.Repo.init(repo_dir)
    repo.index.add(["patches.yaml", "recipes"])
    repo.index.commit("older revision of the watermark backport")
    old_patch = load_manifest(old).patch(WATERMARK).choice_for(VERSION).path
    shutil.copy(manifest_path.parent / old_patch.relative_to(repo_dir.resolve()), old_patch)
    repo.index.add(["recipes"])
    repo.index.commit("current revision")

    with engine.ImageFiles(docker_client, stale_image) as files:
        site = files.locate_vllm().site
    by_hand = derive_image(stale_image, f"{session_repo}:older-no-record",
                     remove=(f"{site}/{provenance.PROVENANCE_PATH}",))
    code, doc = run_audit(capsys, old, pristine_source, by_hand)
    assert code == 1 and doc["images"][0]["provenance"] is None
    watermark = next(f for f in doc["images"][0]["fixes"] if f["id"] == WATERMARK)
    assert watermark["status"] == "stale"
    assert "older revision" in watermark["evidence"] and "commit" in watermark["evidence"]
    older_sha = hashlib.sha256(repo.commit("HEAD~1").tree.join(
        old_patch.relative_to(repo_dir.resolve()).as_posix()).data_stream.read()).hexdigest()
    assert watermark["sha256"] == older_sha  # found in the git history, without a record


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
    for img, ref in zip(remote_doc["images"], remote.values(), strict=True):
        pulled = docker_client.images.get(ref)
        # The registry's digest (what `docker pull NAME@DIGEST` takes); the image id is given apart.
        assert f"{ref.rsplit(':', 1)[0]}@{img['digest']}" in pulled.attrs["RepoDigests"]
        assert img["id"] == pulled.id != img["digest"]


@pytest.mark.network
def test_audit_compares_with_the_wheel_from_the_index_by_default(docker_client, built, series_manifest):
    report = audit(series_manifest, [built.tag], client=docker_client)
    assert report.ok, audit_doc(report)
    assert {f.id: f.status for f in report.images[0].fixes} == {p.id: "carried" for p in series_manifest.patches}


def test_table_output_names_every_fix(capsys, built, manifest_path, pristine_source, series_manifest):
    assert main(["audit", built.tag, "--manifest", str(manifest_path), "--source", pristine_source]) == 0
    out = capsys.readouterr().out
    assert built.tag in out and "carried" in out
    assert "bytecode of the touched modules: 3 .pyc (3 matches)" in out
    for p in series_manifest.patches:
        assert p.id in out


# --- bytecode: what Python will really run (issue 15) --------------------------------------------------

CACHE = SCHEDULER.rsplit("/", 1)[0] + "/__pycache__"
PYCS = [f"{CACHE}/scheduler.cpython-311{suffix}.pyc" for suffix in ("", ".opt-1", ".opt-2")]


def put_files(client, image: str, tag: str, files: dict[str, bytes], mtime: int, *, mode: int = 0o644,
              changes: tuple[str, ...] = ()) -> str:
    """A new image from ``image`` with ``files`` (absolute paths) written, all with modification time ``mtime``."""
    import io
    import tarfile

    from patchset.images.engine import commit

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path, data in files.items():
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size, info.mode, info.mtime = len(data), mode, mtime
            tar.addfile(info, io.BytesIO(data))
    container = client.containers.create(image, entrypoint=["/bin/true"], network_disabled=True)
    try:
        assert container.put_archive("/", buf.getvalue())
        commit(container, client.images.get(image), tag, list(changes))
    finally:
        container.remove(force=True)
    return tag


def old_code_under_the_new_hash(built) -> dict[str, bytes]:
    """The three scheduler pycs of ``built``: the UNPATCHED code under the PATCHED source's hash."""
    import importlib._bootstrap_external as bootstrap
    import importlib.util

    pristine, patched = built.result.pristine[SCHEDULER], built.result.files[SCHEDULER]
    site_path = f"{built.site}/{SCHEDULER}"
    out = {}
    for level, pyc in enumerate(PYCS):
        code = compile(pristine, site_path, "exec", dont_inherit=True, optimize=level)
        out[f"{built.site}/{pyc}"] = bytes(bootstrap._code_to_hash_pyc(code, importlib.util.source_hash(patched), True))
    return out


@pytest.fixture(scope="module")
def old_bytecode_image(docker_client, built, session_repo, derive_image):
    import importlib.util

    from patchset.images import engine

    with engine.ImageFiles(docker_client, built.tag) as files:
        magic = files.read(f"{built.site}/{PYCS[0]}")[:4]

    assert magic == importlib.util.MAGIC_NUMBER, "the host Python must write the image Python's bytecode"
    return derive_image(built.tag, f"{session_repo}:old-bytecode", write=old_code_under_the_new_hash(built))


def bytecode_of(doc: dict) -> dict[str, dict]:
    return {b["pyc"]: b for b in doc["images"][0]["bytecode"]}


def test_built_image_bytecode_is_recorded_and_is_its_sources(capsys, docker_client, built, manifest_path,
                                                             pristine_source, series_manifest):
    from patchset.core import bytecode, provenance
    from patchset.images import engine

    with engine.ImageFiles(docker_client, built.tag) as files:
        record = provenance.loads(files.read(f"{built.site}/{provenance.PROVENANCE_PATH}"))
        on_disk = {pyc: provenance.sha256(files.read(f"{built.site}/{pyc}")) for pyc in PYCS}
    assert record["bytecode"] == on_disk  # every level the build wrote, by sha256

    code, doc = run_audit(capsys, manifest_path, pristine_source, built.tag)
    assert code == 0 and statuses(doc) == {p.id: "carried" for p in series_manifest.patches}
    found = bytecode_of(doc)
    assert sorted(found) == sorted(PYCS)
    assert {(b["verdict"], b["kind"], b["tag"]) for b in found.values()} == \
        {(bytecode.MATCHES, bytecode.CHECKED_HASH, "cpython-311")}
    assert sorted(b["level"] for b in found.values()) == [0, 1, 2]
    assert doc["images"][0]["warnings"] == []


def test_old_code_under_the_patched_sources_hash_is_tampered(capsys, old_bytecode_image, manifest_path,
                                                             pristine_source, series_manifest):
    code, doc = run_audit(capsys, manifest_path, pristine_source, old_bytecode_image)
    assert code == 1 and doc["ok"] is False
    assert statuses(doc) == {p.id: "tampered" for p in series_manifest.patches}
    evidence = doc["images"][0]["fixes"][0]["evidence"]
    for pyc in PYCS:
        assert f"{pyc} (optimisation level {PYCS.index(pyc)}) runs instead of scheduler.py" in evidence
        assert f"{pyc} has sha256" in evidence  # and the provenance record's sha256 no longer holds
    assert "its code differs from the source's (first in <module>." in evidence  # names the function
    assert {b["verdict"] for b in bytecode_of(doc).values()} == {"differs"}


def test_old_bytecode_is_tampered_without_a_provenance_record(capsys, old_bytecode_image, session_repo,
                                                              manifest_path, pristine_source, series_manifest,
                                                              derive_image, built):
    from patchset.core import provenance

    bare = derive_image(old_bytecode_image, f"{session_repo}:old-bytecode-no-record",
                        remove=(f"{built.site}/{provenance.PROVENANCE_PATH}",))
    code, doc = run_audit(capsys, manifest_path, pristine_source, bare)
    assert code == 1 and doc["images"][0]["provenance"] is None
    assert statuses(doc) == {p.id: "tampered" for p in series_manifest.patches}
    assert f"{PYCS[0]} (optimisation level 0) runs instead of scheduler.py" in doc["images"][0]["fixes"][0]["evidence"]


def test_a_stale_timestamp_pyc_with_matching_mtime_and_size_is_tampered(capsys, docker_client, built, standin,
                                                                         session_repo, manifest_path,
                                                                         pristine_source, series_manifest):
    """Patched by hand, no record: the base's pristine timestamp pyc is re-stamped with the new source's mtime/size."""
    from patchset.images import engine

    with engine.ImageFiles(docker_client, standin) as files:
        old = files.read(f"{built.site}/{PYCS[0]}")
    patched = built.result.files[SCHEDULER]
    assert int.from_bytes(old[4:8], "little") == 0  # pip left a timestamp pyc of the pristine source
    mtime = 1_700_000_000
    stamped = old[:8] + mtime.to_bytes(4, "little") + len(patched).to_bytes(4, "little") + old[16:]
    image = put_files(docker_client, standin, f"{session_repo}:stale-timestamp-pyc",
                      {f"{built.site}/{SCHEDULER}": patched, f"{built.site}/{PYCS[0]}": stamped}, mtime)
    code, doc = run_audit(capsys, manifest_path, pristine_source, image)
    assert code == 1
    assert statuses(doc) == {p.id: "tampered" for p in series_manifest.patches}
    evidence = doc["images"][0]["fixes"][0]["evidence"]
    assert f"{PYCS[0]} (optimisation level 0) runs instead of scheduler.py: timestamp pyc" in evidence

    # The same pyc one second off is ignored by Python, and so by the audit: the fix is carried.
    image = put_files(docker_client, standin, f"{session_repo}:stale-timestamp-pyc-ignored",
                      {f"{built.site}/{SCHEDULER}": patched, f"{built.site}/{PYCS[0]}": stamped}, mtime + 1)
    code, doc = run_audit(capsys, manifest_path, pristine_source, image)
    assert code == 0 and statuses(doc) == {p.id: "carried" for p in series_manifest.patches}
    assert bytecode_of(doc)[PYCS[0]]["verdict"] == "ignored"


def test_a_pyc_for_a_python_the_image_lacks_is_a_warning(capsys, docker_client, built, session_repo, derive_image,
                                                         manifest_path, pristine_source, series_manifest):
    foreign = f"{CACHE}/scheduler.cpython-399.pyc"
    content = old_code_under_the_new_hash(built)[f"{built.site}/{PYCS[0]}"]
    image = derive_image(built.tag, f"{session_repo}:foreign-pyc", write={f"{built.site}/{foreign}": content})
    code, doc = run_audit(capsys, manifest_path, pristine_source, image)
    assert code == 0 and doc["ok"] is True
    assert statuses(doc) == {p.id: "carried" for p in series_manifest.patches}
    assert bytecode_of(doc)[foreign]["verdict"] == "no-interpreter"
    (warning,) = doc["images"][0]["warnings"]
    assert foreign in warning and "cpython-399" in warning and "not a failure" in warning


def test_an_image_whose_python_cannot_judge_its_bytecode_cannot_be_audited(capsys, docker_client, built,
                                                                            session_repo, manifest_path,
                                                                            pristine_source):
    """The image runs as nobody and cannot read one pyc: no verdict is an audit error, not a pass."""
    from patchset.images import engine

    with engine.ImageFiles(docker_client, built.tag) as files:
        pyc = files.read(f"{built.site}/{PYCS[0]}")
    image = put_files(docker_client, built.tag, f"{session_repo}:unreadable-pyc", {f"{built.site}/{PYCS[0]}": pyc},
                      1_700_000_000, mode=0o000, changes=("USER nobody",))
    code, doc = run_audit(capsys, manifest_path, pristine_source, image)
    assert code == 1 and doc["ok"] is False
    assert "cannot tell which bytecode Python would run" in doc["images"][0]["error"]
    assert "Permission" in doc["images"][0]["error"]


# --- which manifest: none here, or one as of a git revision ----------------------------------------------


def test_no_manifest_here_says_how_to_point_at_one(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["audit", "any/image:tag"]) == 2
    err = capsys.readouterr().err
    assert "no manifest at patches.yaml" in err and "--manifest FILE@REV" in err


def tagged_fork(manifest_path: Path, where: Path):
    """A fork repository whose tag v1 holds an older watermark revision; the working tree holds the current one."""
    import git

    old = older_manifest(manifest_path, where)
    repo = git.Repo.init(where)
    repo.index.add(["patches.yaml", "recipes"])
    repo.index.commit("older revision of the watermark backport")
    repo.create_tag("v1")
    current = load_manifest(old).patch(WATERMARK).choice_for(VERSION).path
    shutil.copy(manifest_path.parent / current.relative_to(where.resolve()), current)
    return repo


def test_audit_against_a_tagged_manifest_reads_it_and_its_patches_at_the_tag(
        capsys, built, manifest_path, pristine_source, series_manifest, tmp_path, monkeypatch):
    fork = tmp_path / "fork"
    repo = tagged_fork(manifest_path, fork)
    monkeypatch.chdir(fork)
    # The working tree (uncommitted) holds the patch the image was built from: carried.
    code, doc = run_audit(capsys, Path("patches.yaml"), pristine_source, built.tag)
    assert code == 0 and statuses(doc) == {p.id: "carried" for p in series_manifest.patches}
    # As of v1 the watermark patch was another revision: the image carries a newer one than v1's.
    code, doc = run_audit(capsys, "patches.yaml@v1", pristine_source, built.tag)
    assert code == 1 and doc["manifest"] == "patches.yaml@v1"
    assert statuses(doc)[WATERMARK] == "stale"
    v1_sha = hashlib.sha256(repo.commit("v1").tree.join(
        load_manifest(fork / "patches.yaml").patch(WATERMARK).choice_for(VERSION).path
        .relative_to(fork.resolve()).as_posix()).data_stream.read()).hexdigest()
    assert v1_sha[:12] in next(f for f in doc["images"][0]["fixes"] if f["id"] == WATERMARK)["evidence"]
    assert not (fork / "patches.yaml@v1").exists() and repo.is_dirty()  # the working tree is left as it was


def test_a_revision_that_does_not_exist_is_bad_input(capsys, manifest_path, tmp_path, monkeypatch):
    tagged_fork(manifest_path, tmp_path / "fork")
    monkeypatch.chdir(tmp_path / "fork")
    assert main(["audit", "any/image:tag", "--manifest", "patches.yaml@v9"]) == 2
    assert "no revision 'v9'" in capsys.readouterr().err
    assert main(["audit", "any/image:tag", "--manifest", "nothere.yaml@v1"]) == 2
    assert "nothere.yaml does not exist at commit" in capsys.readouterr().err
