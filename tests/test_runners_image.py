"""The image runner: pytest inside containers, the same verdicts as the venv runner."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from helpers import udiff, write_patch

from patchset.core.manifest_load import load_manifest
from patchset.errors import PatchsetError
from patchset.images import containers
from patchset.images.containers import device_requests
from patchset.report import testreport
from patchset.runners import RunConfig
from patchset.runners.image import GRACE, ImageRunner
from patchset.sources.local import DirSource
from patchset.verbs import proof
from patchset.verbs import test as vt

pytest_plugins = ["conftest_docker"]

VERSION = "0.29.0"
SITE = "/usr/local/lib/python3.11/dist-packages"

# --- without an engine ------------------------------------------------------------------------------


def test_gpus_values_map_to_device_requests():
    assert device_requests(None) == []
    (every,) = device_requests("all")
    assert every["Count"] == -1 and every["Capabilities"] == [["gpu"]]
    (two,) = device_requests("2")
    assert two["Count"] == 2
    (some,) = device_requests("device=0,3")
    assert some["DeviceIDs"] == ["0", "3"] and some["Capabilities"] == [["gpu"]]
    with pytest.raises(PatchsetError, match="--gpus"):
        device_requests("lots")


def test_the_runner_only_claims_an_accelerator_when_given_one():
    assert ImageRunner("x", gpus="all").needs_accelerator_reason is None
    assert "no GPU" in ImageRunner("x").needs_accelerator_reason


def test_device_cpu_with_gpus_is_the_gpu_container_with_vllm_on_the_cpu():
    rehearsal = ImageRunner("x", gpus="all", device="cpu")
    assert rehearsal.cpu and "--device cpu" in rehearsal.needs_accelerator_reason  # judged as a CPU run
    assert ImageRunner("x").cpu and not ImageRunner("x", gpus="all").cpu
    with pytest.raises(PatchsetError, match="--device 'gpu'"):
        ImageRunner("x", device="gpu")


# --- with an engine ---------------------------------------------------------------------------------


def _config(tmp_path: Path, **kw) -> RunConfig:
    tree = tmp_path / "tree"
    (tree / "tests").mkdir(parents=True, exist_ok=True)
    defaults = dict(label="series", package="vllm", files={}, tree=tree, selectors=("tests",),
                    workdir=tmp_path / "work")
    return RunConfig(**{**defaults, **kw})


@pytest.mark.docker
def test_gpus_all_puts_a_device_request_into_the_host_config(docker_client, standin, tmp_path):
    runner = ImageRunner(standin, gpus="all", client=docker_client)
    assert "GPUs: all" in runner.prepare("vllm", VERSION)
    container = runner.create(_config(tmp_path))
    try:
        container.reload()
        host = container.attrs["HostConfig"]
        (request,) = host["DeviceRequests"]
        assert request["Count"] == -1 and request["Capabilities"] == [["gpu"]] and not request["DeviceIDs"]
        assert container.attrs["Config"]["NetworkDisabled"] is True
        mounts = {m["Destination"]: m for m in container.attrs["Mounts"]}
        assert mounts["/patchset/tree"]["RW"] is False and mounts["/patchset/boot"]["RW"] is False
        assert mounts["/patchset/out"]["RW"] is True
        assert "VLLM_TARGET_DEVICE=cpu" not in container.attrs["Config"]["Env"]
    finally:
        container.remove(force=True)
    if "nvidia" not in (docker_client.info().get("Runtimes") or {}):
        # No GPU here: starting must fail loudly, never run the tests without the GPU asked for.
        with pytest.raises(PatchsetError, match="cannot start a container"):
            runner.run(_config(tmp_path / "again"))


@pytest.mark.docker
def test_without_gpus_there_is_no_device_request(docker_client, standin, tmp_path):
    runner = ImageRunner(standin, client=docker_client)
    runner.prepare("vllm", VERSION)
    container = runner.create(_config(tmp_path))
    try:
        assert not container.attrs["HostConfig"].get("DeviceRequests")
        assert "VLLM_TARGET_DEVICE=cpu" in container.attrs["Config"]["Env"]
    finally:
        container.remove(force=True)


def _spec(runner: ImageRunner, config: RunConfig) -> dict:
    """What the engine says of the container ``runner`` makes for ``config``: its Config and HostConfig."""
    container = runner.create(config)
    try:
        container.reload()
        attrs = container.attrs
    finally:
        runner.close()
    labels = dict(attrs["Config"]["Labels"])
    labels["io.patchset.deadline"] = "<time>"  # seconds from now: differs between any two containers
    return {"Env": sorted(attrs["Config"]["Env"]), "Labels": labels,
            **{k: attrs["Config"][k] for k in ("Entrypoint", "Cmd", "WorkingDir", "NetworkDisabled")},
            **{k: v for k, v in attrs["HostConfig"].items()}}


def _differences(a: dict, b: dict) -> dict:
    return {k: (a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}


@pytest.mark.docker
def test_the_gpu_path_makes_the_cpu_paths_container_but_for_the_device(docker_client, standin, tmp_path):
    """The container `test --image --gpus all` makes differs from the CPU path's in the device alone: the
    device request, and the device choice (VLLM_TARGET_DEVICE=cpu, the accelerator-only cleanup skipped)."""
    config = _config(tmp_path, timeout=600)
    specs = {}
    for name, kw in {"cpu": {}, "gpu": {"gpus": "all"}, "rehearsal": {"gpus": "all", "device": "cpu"}}.items():
        runner = ImageRunner(standin, client=docker_client, **kw)
        runner.prepare("vllm", VERSION)
        specs[name] = _spec(runner, config)
    cpu, gpu, rehearsal = specs["cpu"], specs["gpu"], specs["rehearsal"]
    device_choice = {"VLLM_TARGET_DEVICE=cpu", "PATCHSET_SKIP_GLOBAL_CLEANUP=1"}
    assert _differences(cpu, gpu).keys() == {"Env", "DeviceRequests"}
    assert set(cpu["Env"]) - set(gpu["Env"]) == device_choice
    assert set(gpu["Env"]) - set(cpu["Env"]) == {"PATCHSET_SKIP_GLOBAL_CLEANUP=0"}
    # --gpus all --device cpu (how the GPU path is rehearsed without a GPU): the GPU's container, vLLM on the CPU.
    assert _differences(rehearsal, gpu).keys() == {"Env"}
    assert set(rehearsal["Env"]) ^ set(gpu["Env"]) == device_choice | {"PATCHSET_SKIP_GLOBAL_CLEANUP=0"}

    env = dict(e.split("=", 1) for e in gpu["Env"])
    # 1. offline Hugging Face, as on the CPU path (the GPU path had none: 96.6 s a test retrying the Hub)
    assert {env["HF_HUB_OFFLINE"], env["TRANSFORMERS_OFFLINE"], env["HF_HOME"]} == {"1", "/patchset/hf"}
    # 2. a private /dev/shm of 8 GiB (not Docker's 64 MB) and the ulimits vLLM's containers get
    assert gpu["ShmSize"] == 8 << 30 and gpu["IpcMode"] == "private"
    assert {u["Name"]: (u["Soft"], u["Hard"]) for u in gpu["Ulimits"]} == {
        "memlock": (-1, -1), "stack": (67108864, 67108864)}
    # 3. removed by the engine when it exits, stopped by its own deadline, owned and swept by patchset
    assert gpu["AutoRemove"] is True and gpu["Init"] is True
    assert env["PATCHSET_DEADLINE"] == str(600 + GRACE)
    assert gpu["Labels"]["io.patchset.owner"].split(":")[1] == str(os.getpid())
    # 5. bytecode in a tmpfs of the container, never in the image and never switched off
    assert env["PYTHONPYCACHEPREFIX"] == "/patchset/pycache" and "/patchset/pycache" in gpu["Tmpfs"]
    assert "PYTHONDONTWRITEBYTECODE" not in env
    assert not docker_client.containers.list(all=True, filters={"label": "io.patchset.owner=" + containers.owner()})


@pytest.mark.docker
def test_an_image_of_another_release_is_refused(docker_client, standin):
    with pytest.raises(PatchsetError, match="holds vLLM 0.29.0, not 0.28.0"):
        ImageRunner(standin, client=docker_client).prepare("vllm", "0.28.0")


# --- pytest in containers: a toy package (seconds), then the real offload tests (minutes) -------------

INIT = '"""A toy package."""\n'
WATERMARK = 'def watermark(num_tokens, num_prompt_tokens):\n    return num_tokens\n'
FIXED = WATERMARK.replace("return num_tokens", "return max(num_prompt_tokens, num_tokens - 1)")
TEST = textwrap.dedent('''\
    import pytest

    from toypkg.watermark import watermark


    @pytest.mark.parametrize("prompt", [4, 9])
    def test_final_token_is_not_offloaded(prompt):
        assert watermark(10, prompt) == 9
    ''')


@pytest.fixture(scope="session")
def cpu_standin(docker_client, standin, series_manifest):
    """The stand-in plus what the upstream tests need on a CPU (the venv runner's packages)."""
    import standin as builder

    from patchset.runners.venv import VenvBuilder

    env = VenvBuilder().venv_for(series_manifest.pypi, VERSION)
    return builder.cpu_image(docker_client, VERSION, env.site_packages)


@pytest.mark.docker
@pytest.mark.slow
def test_a_toy_fix_is_proven_inside_a_container(docker_client, standin, session_repo, derive_image, tmp_path):
    """On the bare stand-in, which has no pytest: the runner mounts pytest & co for the image's Python."""
    src = tmp_path / "src"
    (src / "toypkg").mkdir(parents=True)
    (src / "toypkg" / "__init__.py").write_text(INIT)
    (src / "toypkg" / "watermark.py").write_text(WATERMARK)
    (src / "tests").mkdir()
    (src / "tests" / "test_util.py").write_text("def test_nothing():\n    pass\n")
    image = derive_image(standin, f"{session_repo}:toy",
                         write={f"{SITE}/toypkg/__init__.py": INIT.encode(),
                                f"{SITE}/toypkg/watermark.py": WATERMARK.encode()})
    useless = "def test_always():\n    assert 2 > 1  # planted: passes with or without the fix\n"
    write_patch(tmp_path, "recipes/fix.patch", udiff("toypkg/watermark.py", WATERMARK, FIXED)
                + udiff("tests/test_watermark.py", "", TEST).replace("--- a/tests/test_watermark.py", "--- /dev/null"))
    write_patch(tmp_path, "recipes/useless.patch", udiff("toypkg/__init__.py", INIT, INIT + "# nothing\n")
                + udiff("tests/test_useless.py", "", useless).replace("--- a/tests/test_useless.py", "--- /dev/null"))
    (tmp_path / "patches.yaml").write_text(textwrap.dedent("""\
        schema: 1
        upstream: {pypi: toypkg}
        targets: {"1.0": {}}
        patches:
          - {id: fix, title: t, origin: local, releases: ">=1", patch: recipes/fix.patch,
             tests: ["tests/test_watermark.py::test_final_token_is_not_offloaded"]}
          - {id: useless, title: t, origin: local, releases: ">=1", patch: recipes/useless.patch,
             tests: ["tests/test_useless.py"]}
        """))
    manifest = load_manifest(tmp_path / "patches.yaml")
    runner = ImageRunner(image, client=docker_client)
    assert "pytest pytest-asyncio tblib mounted from" in runner.prepare("toypkg", "1.0")
    work = tmp_path / "work"
    report = vt.prove(manifest, "1.0", runner, DirSource(src), workdir=work, options=proof.ProofOptions(timeout=300))
    assert {p.id: p.verdict for p in report.patches} == {"fix": "proven", "useless": "not-discriminating"}
    fix = report.patches[0]
    assert fix.without_fix.count("failed") == 2 and fix.with_fix.count("passed") == 2
    # Results came back through the writable mount; nothing was written into the image.
    assert (work / "runs" / "series" / "out" / "junit.xml").is_file()


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.network
def test_the_offload_tests_give_the_same_verdicts_in_the_image_as_in_the_venv(
        docker_client, cpu_standin, series_manifest, session_repo, tmp_path):
    """Must show: `patchset test --image` on the CPU, with the venv runner's verdicts."""
    from patchset.runners.venv import VenvRunner
    from patchset.sources import open_source
    from patchset.verbs.build import build_image

    built = build_image(series_manifest, VERSION, base=cpu_standin, tag=f"{session_repo}:cpu-patched",
                        client=docker_client)
    source = open_source("pypi", VERSION, project=series_manifest.pypi, tag=series_manifest.tag)
    lines: list[str] = []
    in_image = vt.prove(series_manifest, VERSION, ImageRunner(built.tag, client=docker_client), source,
                        workdir=tmp_path / "image", options=proof.ProofOptions(timeout=1200, progress=lines.append))
    in_venv = vt.prove(series_manifest, VERSION, VenvRunner(), source, workdir=tmp_path / "venv",
                       options=proof.ProofOptions(timeout=1200))
    image_verdicts = {p.id: p.verdict for p in in_image.patches}
    assert image_verdicts == {p.id: p.verdict for p in in_venv.patches}, "\n".join(lines[-20:])
    assert set(image_verdicts.values()) == {"proven"}, testreport.proof_doc(in_image)
    assert [s.ok for s in in_image.suites] == [s.ok for s in in_venv.suites]
    assert in_image.ok, testreport.proof_doc(in_image)


@pytest.mark.docker
def test_the_pristine_baseline_of_a_built_image_is_keyed_by_its_base_image(docker_client, standin, built):
    """A suite's pristine run on an image patchset built is the base image's: one cached result for both."""
    from patchset.images import engine as docker_engine
    from patchset.verbs.suites import runner_identity

    on_built, on_base = ImageRunner(built.tag, client=docker_client), ImageRunner(standin, client=docker_client)
    on_gpu = ImageRunner(built.tag, gpus="all", client=docker_client)
    rehearsal = ImageRunner(built.tag, gpus="all", device="cpu", client=docker_client)
    for runner in (on_built, on_base, on_gpu, rehearsal):
        runner.prepare("vllm", VERSION)
    base_digest = docker_engine.image_digest(docker_engine.get_image(docker_client, standin))
    assert runner_identity(on_built) == runner_identity(on_base) == f"image {base_digest} gpus="
    assert runner_identity(on_gpu) == f"image {base_digest} gpus=all"  # a GPU run is another baseline
    assert runner_identity(rehearsal) == f"image {base_digest} gpus=all device=cpu"  # and vLLM on the CPU another
