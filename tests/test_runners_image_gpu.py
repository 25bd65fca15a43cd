"""The GPU path, less the device: `patchset test --image … --gpus all` on an engine that takes GPU requests.

A private dockerd (tests/gpuengine.py) with a stand-in ``nvidia-container-runtime-hook`` on its PATH
registers Docker's nvidia device driver, accepts ``--gpus all`` as a GPU runner's engine does and runs
the hook before each GPU container starts; the container gets no device. ``--device cpu`` is the one
difference from a real GPU run: vLLM is told to use the CPU, so that it has a platform. Everything
else (environment, mounts, /dev/shm, IPC, ulimits, init, deadline, auto-removal, the sweep, the SIGTERM
path) is the GPU path's own (test_runners_image.py asserts the container specs differ only there).

``make gpu-standin`` runs this file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest_plugins = ["conftest_docker"]

VERSION = "0.29.0"
REPO = Path(__file__).resolve().parents[1]
GPU_REHEARSAL = ("--gpus", "all", "--device", "cpu")


@pytest.fixture(scope="module")
def gpu_engine():
    """(DOCKER_HOST, hook log) of a private engine whose nvidia device driver is registered."""
    import gpuengine

    try:
        with gpuengine.private_engine() as engine:
            yield engine
    except SystemExit as e:
        from conftest_docker import unavailable

        unavailable(f"no private engine: {e}")


@pytest.fixture(scope="module")
def gpu_client(gpu_engine):
    import docker

    client = docker.DockerClient(base_url=gpu_engine[0], timeout=600)
    yield client
    client.close()


@pytest.fixture(scope="module")
def gpu_standin(gpu_client, series_manifest):
    """The CPU stand-in (tests/standin.py) written into the private engine: once, its data root is kept."""
    import standin as builder

    from patchset.runners.venv import VenvBuilder

    env = VenvBuilder().venv_for(series_manifest.pypi, VERSION)
    t0 = time.monotonic()
    tag = builder.cpu_image(gpu_client, VERSION, env.site_packages)
    print(f"[gpu-standin] {tag} in the private engine after {time.monotonic() - t0:.1f} s")
    return tag


def patchset(*args: str, docker_host: str | None = None, **kw) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "DOCKER_HOST"}
    if docker_host:
        env["DOCKER_HOST"] = docker_host
    return subprocess.Popen([sys.executable, "-m", "patchset", *args], cwd=REPO, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def test_the_engine_takes_a_gpu_request_and_runs_the_hook(gpu_engine, gpu_client, gpu_standin, docker_client,
                                                           standin):
    """What makes the rest mean anything: the private engine really goes through Docker's nvidia path."""
    import docker.errors
    from docker.types import DeviceRequest

    every_gpu = [DeviceRequest(count=-1, capabilities=[["gpu"]])]
    host, hook_log = gpu_engine
    before = hook_log.read_text().count("prestart") if hook_log.exists() else 0
    out = gpu_client.containers.run(gpu_standin, entrypoint=["sh", "-c", "echo $NVIDIA_VISIBLE_DEVICES"],
                                    device_requests=every_gpu, network_disabled=True, remove=True)
    assert out.decode().strip() == "all"  # set by the engine's nvidia driver, not by patchset
    assert hook_log.read_text().count("prestart") == before + 1
    # The machine's own engine has no such driver: the same request is refused there.
    refused = docker_client.containers.create(standin, entrypoint=["true"], device_requests=every_gpu)
    try:
        with pytest.raises(docker.errors.APIError, match="could not select device driver"):
            refused.start()
    finally:
        refused.remove(force=True)


def _test_containers(client) -> list:
    return client.containers.list(all=True, filters={"label": "io.patchset.test"})


@pytest.mark.slow
@pytest.mark.network
def test_sigterm_during_a_suite_leaves_no_container(gpu_engine, gpu_client, gpu_standin, tmp_path):
    """A cancelled GPU job: SIGTERM while a suite runs; patchset removes its container and exits 143."""
    host, hook_log = gpu_engine
    proc = patchset("test", "--vllm", VERSION, "--image", gpu_standin, *GPU_REHEARSAL,
                    "--patch", "offload-recurrent-load-boundary", "--workdir", str(tmp_path / "work"),
                    docker_host=host)
    running = None
    try:
        deadline = time.monotonic() + 900
        while running is None and proc.poll() is None and time.monotonic() < deadline:
            for c in _test_containers(gpu_client):
                label = c.labels.get("io.patchset.test", "")
                if c.status == "running" and label.startswith(("suite ", "pristine ")):
                    running = c
            time.sleep(1)
        assert running is not None, f"no suite container ran (exit {proc.poll()})"
        running.reload()
        host_config, env = running.attrs["HostConfig"], running.attrs["Config"]["Env"]
        # The live container of a suite is the GPU path's: device request, the engine's nvidia driver, HF offline.
        assert host_config["DeviceRequests"][0]["Count"] == -1
        init_env = running.exec_run(["cat", "/proc/1/environ"]).output.split(b"\0")
        assert b"NVIDIA_VISIBLE_DEVICES=all" in init_env  # put there by the engine's nvidia driver
        assert "HF_HUB_OFFLINE=1" in env and host_config["ShmSize"] == 8 << 30
        time.sleep(3)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 143, err[-2000:]
    assert "terminated (SIGTERM)" in err
    assert _test_containers(gpu_client) == [], "the cancelled run left its container"


@pytest.mark.slow
@pytest.mark.network
def test_the_gpu_path_less_the_device_proves_and_judges_as_the_cpu_venv_path(gpu_engine, gpu_client, gpu_standin,
                                                                            tmp_path):
    """`test --image STANDIN --gpus all --device cpu` on the private engine: the three fixes proven and the
    suites judged exactly as `test --venv` judges them, and nothing left on the engine."""
    host, hook_log = gpu_engine
    runs_before = hook_log.read_text().count("prestart") if hook_log.exists() else 0
    image = patchset("test", "--vllm", VERSION, "--image", gpu_standin, *GPU_REHEARSAL, "--format", "json",
                     "--workdir", str(tmp_path / "image"), docker_host=host)
    image_out, image_err = image.communicate(timeout=3000)
    venv = patchset("test", "--vllm", VERSION, "--venv", "--format", "json")
    venv_out, venv_err = venv.communicate(timeout=3000)
    on_gpu_path, on_venv = json.loads(image_out), json.loads(venv_out)
    assert image.returncode == venv.returncode == 0, image_err[-3000:] + venv_err[-3000:]
    verdicts = {p["id"]: p["verdict"] for p in on_gpu_path["patches"]}
    assert verdicts == {p["id"]: p["verdict"] for p in on_venv["patches"]}
    assert set(verdicts.values()) == {"proven"}

    def judged(report: dict) -> list:
        return [(s["path"], s["ok"], s["result"], sorted(t["nodeid"] for t in s["regressions"]))
                for s in report["suites"]]

    assert judged(on_gpu_path) == judged(on_venv)
    # Every container went through the engine's nvidia path (the hook ran as its prestart hook).
    assert hook_log.read_text().count("prestart") - runs_before >= 1 + len(verdicts)
    logs = "".join(p.read_text(errors="replace") for p in (tmp_path / "image" / "runs").glob("*/pytest.log"))
    assert "Temporary failure in name resolution" not in logs  # HF offline: no test waited for the Hub
    assert "Insufficient space in /dev/shm" not in logs
    assert _test_containers(gpu_client) == []
