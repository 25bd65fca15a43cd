"""Fixtures for the tests that need a real Docker engine (import them into a test module).

A test that needs Docker and finds no engine is skipped, or FAILS when ``PATCHSET_REQUIRE_DOCKER=1``
(CI sets it: a green run must mean the image tests ran). The engine is started by
``.ci/docker.sh``; the stand-in base images come from ``tests/standin.py`` (no image registry is
reachable, so ``vllm/vllm-openai`` cannot be pulled); a real registry, Debian's
``docker-registry``, is started on 127.0.0.1 for the pull/push tests.

Every image a test makes is tagged under a per-session repository and removed at the end.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import docker.errors
import pytest

REPO = Path(__file__).resolve().parents[1]
VERSION = "0.29.0"


def require_docker() -> bool:
    return os.environ.get("PATCHSET_REQUIRE_DOCKER") == "1"


def unavailable(reason: str):
    """Fail under PATCHSET_REQUIRE_DOCKER=1, skip otherwise."""
    if require_docker():
        pytest.fail(f"PATCHSET_REQUIRE_DOCKER=1 but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def docker_client():
    from patchset.images import engine

    try:
        client = engine.connect()
    except engine.EngineUnavailable as e:
        unavailable(f"no Docker engine: {e} (run .ci/docker.sh as root)")
    yield client
    client.close()


@pytest.fixture(scope="session")
def session_repo(docker_client) -> Iterator[str]:
    """A repository name for this session's images; everything tagged under it goes at the end."""
    repo = f"patchset-test/{uuid.uuid4().hex[:10]}"
    yield repo
    for image in docker_client.images.list(name=repo):
        for tag in image.tags:
            if tag.startswith(repo + ":"):
                docker_client.images.remove(tag, force=True, noprune=False)
    # Only what runs no more: a running one belongs to another session (or a user's `patchset test --image`).
    for status in ("exited", "created", "dead"):
        for container in docker_client.containers.list(all=True, filters={"label": "io.patchset.test",
                                                                          "status": status}):
            with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):  # gone, or being removed
                container.remove()


@pytest.fixture(scope="session")
def standin(docker_client) -> str:
    """``patchset-standin/vllm-openai:v0.29.0``: Debian + Python 3.11 + the real 0.29.0 package files."""
    import standin as builder

    try:
        return builder.build(VERSION)
    except SystemExit as e:  # debootstrap missing, no apt source
        unavailable(f"cannot make the stand-in base image: {e}")


@pytest.fixture(scope="session")
def pristine_source(standin) -> str:
    """A ``--source`` spec for pristine 0.29.0: the very wheel files the stand-in image was given."""
    import standin as builder

    return f"dir:{builder.vllm_target(VERSION)}"


@pytest.fixture(scope="session")
def manifest_path() -> Path:
    """The manifest the image tests build: the repository's own (PATCHSET_TEST_MANIFEST overrides)."""
    path = Path(os.environ.get("PATCHSET_TEST_MANIFEST") or REPO / "patches.yaml")
    if not path.is_file():
        pytest.fail(f"{path} does not exist", pytrace=False)
    return path


@pytest.fixture(scope="session")
def series_manifest(manifest_path):
    from patchset.core.manifest_load import load_manifest

    return load_manifest(manifest_path)


@pytest.fixture(scope="session")
def built(docker_client, standin, series_manifest, session_repo):
    """``patchset build --vllm 0.29.0`` on the stand-in: the BuildReport."""
    from patchset.verbs.build import build_image

    return build_image(series_manifest, VERSION, base=standin, tag=f"{session_repo}:patched",
                       client=docker_client)


@pytest.fixture(scope="session")
def derive_image(docker_client):
    """``derive_image(image, tag, write={path: bytes}, remove=(path,))``: see :func:`derive`."""
    return lambda image, tag, **kw: derive(docker_client, image, tag, **kw)


def derive(client, image: str, tag: str, *, write: dict[str, bytes] | None = None,
           remove: tuple[str, ...] = ()) -> str:
    """A new image from ``image`` with files written or removed (absolute paths), as a person would."""
    import io
    import tarfile

    from patchset.images.engine import commit

    original = client.images.get(image)
    container = client.containers.create(image, entrypoint=["/bin/true"], network_disabled=True)
    try:
        if write:
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w") as tar:
                for path, data in write.items():
                    info = tarfile.TarInfo(path.lstrip("/"))
                    info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
                    tar.addfile(info, io.BytesIO(data))
            assert container.put_archive("/", buf.getvalue())
        commit(container, original, tag)
    finally:
        container.remove(force=True)
    if remove:
        # A second step: `rm` runs in the image, as a Dockerfile RUN would.
        container = client.containers.run(tag, entrypoint=["rm", "-f", *remove], detach=True,
                                          network_disabled=True)
        try:
            assert container.wait()["StatusCode"] == 0
            commit(container, original, tag)
        finally:
            container.remove(force=True)
    return tag


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def registry(docker_client, tmp_path_factory) -> Iterator[str]:
    """A real registry (Debian's docker-registry, distribution 2.8) on 127.0.0.1: ``host:port``."""
    exe = shutil.which("docker-registry")
    if exe is None:
        unavailable("docker-registry is not installed (.ci/docker.sh installs it)")
    root = tmp_path_factory.mktemp("registry")
    port = _free_port()
    config = root / "config.yml"
    config.write_text(
        "version: 0.1\n"
        "log: {level: warn}\n"
        f"storage: {{filesystem: {{rootdirectory: {root / 'data'}}}, delete: {{enabled: true}}}}\n"
        f"http: {{addr: 127.0.0.1:{port}}}\n"
    )
    log = (root / "registry.log").open("w")
    proc = subprocess.Popen([exe, "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://{address}/v2/", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"docker-registry did not start: {(root / 'registry.log').read_text()[-2000:]}")
                time.sleep(0.2)
        yield address
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        # 127.0.0.0/8 registries are trusted without TLS by dockerd; drop what this session pushed.
        for image in docker_client.images.list():
            for tag in image.tags:
                if tag.startswith(address + "/"):
                    docker_client.images.remove(tag, force=True)
