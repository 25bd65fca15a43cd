"""The image runner: upstream tests inside a container of an image, through the docker SDK.

Same contract as the venv runner (:mod:`patchset.runners`): one configuration at a time, the
package shown with exactly the configuration's files, results as JUnit. Per configuration a
container of the image runs with:

* the prepared test tree mounted read-only at ``/patchset/tree`` (the working directory);
* the configuration's package files and a tiny bootstrap mounted read-only at ``/patchset/boot``;
  the bootstrap builds a symlink farm of the image's installed package in a tmpfs, writes the
  configuration's files into it (dropping their bytecode), and ``exec``\\ s pytest with that farm
  first on ``PYTHONPATH``: the image itself is never changed, whatever user it runs as;
* ``/patchset/out`` writable, where pytest writes its JUnit XML, read back on the host;
* pytest, pytest-asyncio and tblib mounted read-only when the image has no pytest (serving images
  don't): resolved by pip on the host for the image's Python version, cached, and put on
  ``sys.path`` after site-packages so the image's own packages always win;
* no network; GPUs only when asked (``--gpus all`` → a ``DeviceRequest`` for every GPU, the SDK's
  spelling of ``docker run --gpus all``).

The GPU path and the CPU path make the same container but for the device: the same offline Hugging
Face set-up (a container has no network), a private ``/dev/shm`` of :data:`SHM_SIZE` and the ulimits
vLLM's GPU containers are run with (:data:`ULIMITS`), a bytecode cache in a tmpfs
(``PYTHONPYCACHEPREFIX``: a serving image installs vLLM without ``.pyc``, and every container and
spawned worker would compile vLLM and torch again), ``docker-init`` as PID 1 and a deadline of its
own. Only the device request and the device choice (:func:`~patchset.runners.offline.device_env`)
differ: ``device="cpu"`` with ``--gpus`` runs the GPU path's container with vLLM on the CPU, which
is how the GPU path is rehearsed on a machine without a GPU.

A private ``/dev/shm`` rather than ``--ipc=host``: vLLM's offload buffers live there, and a private
one goes with its container, where the host's would keep what a killed run mapped.

Cancelled runs leave nothing: each container is labelled with its owner and deadline, and removed
by the engine when it exits (``auto_remove``); the run that owns it removes it on any exception
(SIGTERM becomes one in the CLI); the container stops itself at its deadline
(:data:`GRACE` after the run's timeout) when patchset was killed outright; and every run first
sweeps the containers a killed run left (:func:`~patchset.images.containers.sweep`).

Because every configuration replaces every file the series touches, the verdicts do not depend
on whether IMAGE is the unpatched base or an image ``patchset build`` made: "with the fix" is the
series' files, "without the fix" the series minus the patch, as with the venv runner. On the
unpatched base image and a single-patch series, "without" is exactly the base image's own files.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from patchset.cache import Cache
from patchset.errors import PatchsetError
from patchset.images import containers, shipped
from patchset.images.engine import (
    Client,
    Container,
    Image,
    ImageFiles,
    ImageNotFound,
    VllmInstall,
    VllmNotFound,
    connect,
    get_image,
    image_digest,
    image_env,
)
from patchset.runners import PLUGIN_DIR, Progress, RunConfig, RunOutcome, driver, no_progress, pytest_args
from patchset.runners.junit import read_junit
from patchset.runners.offline import device_env, offline_env, write_hf_home
from patchset.runners.output import RunOutput
from patchset.runners.overlay import package_path
from patchset.versions import same_release

TREE, BOOT, OUT, PLUGIN, OVERLAY, HF, TOOLS, PYCACHE = (
    "/patchset/tree", "/patchset/boot", "/patchset/out", "/patchset/plugin", "/patchset/overlay", "/patchset/hf",
    "/patchset/pytest", "/patchset/pycache")
#: What the tests need that a serving image usually lacks (the venv runner installs the same).
TEST_TOOLS = ("pytest", "pytest-asyncio", "tblib")
LABEL = "io.patchset.test"
#: /dev/shm of every test container (Docker's default is 64 MB; vLLM refuses to map its offload
#: buffers when /dev/shm is short). A limit, not a reservation: tmpfs pages exist only when written.
SHM_SIZE = "8g"
#: What vLLM's and NVIDIA's container instructions give: pinned memory unlimited, a 64 MiB stack.
ULIMITS = {"memlock": -1, "stack": 67108864}
#: Seconds a container outlives its run's timeout before it stops itself (patchset killed outright).
GRACE = 60
#: Seconds to wait, once a container's output has ended, for the engine to say how it exited.
REMOVAL_WAIT = 120
_MEMLOCK_REFUSED = "rlimit type 8"  # runc's words when the engine may not raise RLIMIT_MEMLOCK


class ImageRunner:
    """Runs pytest in containers of ``image``."""

    name = "image"

    def __init__(self, image: str, *, gpus: str | None = None, client: Client | None = None,
                 python: str | None = None, device: str | None = None) -> None:
        self.image_ref = image
        self.gpus = gpus
        containers.device_requests(gpus)  # refuse a bad --gpus before anything is pulled
        if device not in (None, "cpu", "auto"):
            raise PatchsetError(f"--device {device!r}: use cpu or auto")
        #: vLLM's device in the container: "cpu" (VLLM_TARGET_DEVICE=cpu), else vLLM finds the GPU.
        self.device = device if device in ("cpu", "auto") else ("auto" if gpus else "cpu")
        self.client = client
        self.python = python
        self.image: Image | None = None
        self.install: VllmInstall | None = None
        self.tools: Path | None = None  # host folder of pytest & co, when the image has no pytest
        self.preflight_env: dict[str, str] = {}  # what the driver preflight decided (CUDA compatibility)
        self.ulimits = dict(ULIMITS)
        self.warnings: list[str] = []
        self._live: dict[str, Container] = {}  # created and not yet removed, by id: removed by close()

    @property
    def cpu(self) -> bool:
        return self.device == "cpu"

    @property
    def needs_accelerator_reason(self) -> str | None:
        if self.gpus and not self.cpu:
            return None
        if self.gpus:
            return f"vLLM was told to use the CPU in the container of {self.image_ref} (--device cpu)"
        return f"the container of {self.image_ref} was given no GPU (pass --gpus all on a GPU runner)"

    def prepare(self, project: str, version: str, progress: Progress = no_progress) -> str:
        if self.client is None:
            self.client = connect()
        progress(f"image: {self.image_ref} (pulled if not local) ...")
        try:
            self.image = get_image(self.client, self.image_ref)
        except ImageNotFound as e:
            raise PatchsetError(str(e)) from e
        with ImageFiles(self.client, self.image) as files:
            try:
                self.install = files.locate_vllm()
            except VllmNotFound as e:
                raise PatchsetError(str(e)) from e
        if project.lower() == "vllm" and not same_release(self.install.version, version):
            raise PatchsetError(f"{self.image_ref} holds vLLM {self.install.version}, not {version}",
                                hint="test an image of the release asked for")
        self.python = self.python or self.install.python_executable
        if not self.install.has_pytest:
            self.tools = pytest_for(self.install.python, progress)
        swept = containers.sweep(self.client, LABEL)
        if swept:
            progress(f"image: removed {len(swept)} test container(s) a cancelled run left: {', '.join(swept)}")
        if self.gpus:
            check = driver.preflight(driver.host_driver(), image_env(self.image))
            if check.refuse:
                raise PatchsetError(f"{self.image_ref}: {check.refuse}", hint=check.hint)
            self.preflight_env = check.env
            progress(f"image: {check.note}")
            if check.warning:
                self.warnings.append(check.warning)
        digest = image_digest(self.image)
        gpus = f", GPUs: {self.gpus}" if self.gpus else ", no GPU"
        if self.gpus and self.cpu:
            gpus += ", vLLM on the CPU (--device cpu)"
        tools = f", {' '.join(TEST_TOOLS)} mounted from {self.tools}" if self.tools else ""
        return (f"image {self.image_ref} ({digest[:19]}), vLLM {self.install.version} in {self.install.site}, "
                f"Python {self.install.python}{gpus}{tools}")

    # --- one configuration ------------------------------------------------------------------------

    def create(self, config: RunConfig):
        """The container for ``config``, created and not started (tests inspect its HostConfig)."""
        if self.client is None or self.image is None:
            raise PatchsetError("ImageRunner.run before prepare")
        work = config.workdir
        boot, out, hf = work / "boot", work / "out", work / "hf"
        for folder in (boot / "files", out, hf):
            folder.mkdir(parents=True, exist_ok=True)
        _write_boot(boot, config)
        os.chmod(out, 0o777)  # whatever user the image runs as writes the results here
        write_hf_home(hf)
        os.chmod(hf, 0o777)
        env = container_env(cpu=self.cpu, timeout=config.timeout)
        env.update(self.preflight_env)
        if self.tools:
            env["PATCHSET_TEST_TOOLS"] = TOOLS
        args = pytest_args(config.selectors, junit=f"{OUT}/junit.xml", rootdir=TREE)
        mounts = {
            str(config.tree.resolve()): {"bind": TREE, "mode": "ro"},
            str(boot.resolve()): {"bind": BOOT, "mode": "ro"},
            str(PLUGIN_DIR.resolve()): {"bind": PLUGIN, "mode": "ro"},
            str(out.resolve()): {"bind": OUT, "mode": "rw"},
            str(hf.resolve()): {"bind": HF, "mode": "rw"},
        }
        if self.tools:
            mounts[str(self.tools.resolve())] = {"bind": TOOLS, "mode": "ro"}
        labels = {LABEL: config.label, containers.OWNER_LABEL: containers.owner()}
        if config.timeout:
            labels[containers.DEADLINE_LABEL] = str(int(time.time() + config.timeout + 2 * GRACE))
        container = containers.create(
            self.client,
            self.image,
            entrypoint=[self.python or "python3", f"{BOOT}/bootstrap.py", BOOT, OVERLAY],
            command=args,
            working_dir=TREE,
            environment=env,
            volumes=mounts,
            tmpfs={OVERLAY: "mode=1777", "/tmp": "mode=1777", PYCACHE: "mode=1777"},
            gpus=self.gpus,
            labels=labels,
            shm_size=SHM_SIZE,
            ulimits=self.ulimits,
            init=True,
            auto_remove=True,
        )
        self._live[str(container.id)] = container
        return container

    def run(self, config: RunConfig) -> RunOutcome:
        container = self.create(config)
        junit = config.workdir / "out" / "junit.xml"
        cmd = ["docker-sdk:run", self.image_ref, *container.attrs["Config"]["Entrypoint"],
               *container.attrs["Config"]["Cmd"]]
        t0 = time.monotonic()
        killed = threading.Event()
        timer = None
        try:
            exited = containers.ExitWatch(container)  # asked before the start: the engine removes it on exit
            try:
                containers.start(container)
            except containers.ContainerFailed as e:
                if _MEMLOCK_REFUSED in str(e) and "memlock" in self.ulimits:
                    return self._without_memlock(config, str(e))
                raise PatchsetError(f"cannot start a container of {self.image_ref}: {e}",
                                    hint="a GPU request needs the NVIDIA container toolkit on this engine"
                                    if self.gpus else None) from e
            if config.timeout:
                timer = threading.Timer(config.timeout, containers.kill, args=(container, killed))
                timer.daemon = True
                timer.start()
            tail = self._follow(container, config, config.workdir / "pytest.log")
            status = exited.status(timeout=REMOVAL_WAIT)  # the output ends when it stops; removal follows
        finally:
            if timer:
                timer.cancel()
            self._remove(container)
        code = -1 if status is None else status
        if status is None:
            tail += "\n[patchset: the engine gave no exit status: the container was gone first]\n"
        if killed.is_set():
            tail += f"\n[patchset: killed after {config.timeout:.0f} s]\n"
            code = -1
        results, problem = read_junit(junit)
        return RunOutcome(results, code, time.monotonic() - t0, cmd, tail, junit, problem)

    def _without_memlock(self, config: RunConfig, refusal: str) -> RunOutcome:
        """The engine may not raise RLIMIT_MEMLOCK (dockerd without CAP_SYS_RESOURCE, e.g. inside a container):
        every later container keeps the engine's own limit, and the report says so."""
        del self.ulimits["memlock"]
        said = refusal[refusal.find("error setting rlimit"):].split(": unknown")[0]
        self.warnings.append(f"the engine may not lift the memlock limit ({said}): the test containers keep the "
                             "engine's own; give dockerd an unlimited memlock (LimitMEMLOCK=infinity, or run it "
                             "with CAP_SYS_RESOURCE)")
        return self.run(config)

    def _remove(self, container: Container) -> None:
        containers.remove(container)
        self._live.pop(str(container.id), None)

    def close(self) -> None:
        """Remove every container this runner made that is still there (called however the proof ended)."""
        for container in list(self._live.values()):
            self._remove(container)

    @staticmethod
    def _follow(container, config: RunConfig, log: Path) -> str:
        pending = b""
        with log.open("w") as sink:
            out = RunOutput(sink, config.progress, config.label)
            for chunk in containers.logs(container):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for raw in lines:
                    out.line(raw.decode("utf-8", "replace") + "\n")
            if pending:
                out.line(pending.decode("utf-8", "replace"))
        return out.tail


def container_env(*, cpu: bool, timeout: float | None) -> dict[str, str]:
    """A test container's environment: the same on every path but for the device choice (:func:`device_env`)."""
    env = {**offline_env(Path(HF)), **device_env(cpu=cpu),
           "PYTHONPATH": f"{OVERLAY}:{PLUGIN}", "PYTHONPYCACHEPREFIX": PYCACHE}
    if timeout:
        env["PATCHSET_DEADLINE"] = str(int(timeout) + GRACE)  # bootstrap.py: the container stops itself then
    return env


def pytest_for(python: str, progress: Progress = no_progress) -> Path:
    """pytest & co for the image's Python ``X.Y``, installed on the host once and cached.

    Serving images (``vllm/vllm-openai``) carry vLLM and its requirements but no test tools.
    Pure-Python wheels resolved for the image's Python version are mounted read-only instead of
    changing the image; containers have no network, so pip runs here, with pip's own index.
    """
    cache = Cache()
    folder = cache.path("image-test-tools", f"py{python}")
    done = folder / ".complete"
    if done.is_file():
        return folder
    with cache.lock("image-test-tools", f"py{python}"):
        if done.is_file():
            return folder
        progress(f"image: the image has no pytest; installing {' '.join(TEST_TOOLS)} for Python {python} (cached)")
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-input",
               "--target", str(partial), "--python-version", python, "--only-binary", ":all:", "--no-compile",
               *TEST_TOOLS]
        proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise PatchsetError(f"cannot install {' '.join(TEST_TOOLS)} for the image's Python {python}:\n{tail}",
                                hint="or test an image that has pytest installed")
        shutil.rmtree(partial / "bin", ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(partial, folder)
        done.write_text(" ".join(TEST_TOOLS) + "\n")
    return folder


def _write_boot(boot: Path, config: RunConfig) -> None:
    """What the bootstrap reads in the container: the configuration's files and which to delete."""
    files = config.package_files()
    for rel, content in files.items():
        if content is not None:
            target = boot / "files" / package_path(rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
    (boot / "files.json").write_text(json.dumps({
        "package": config.package,
        "write": sorted(r for r, c in files.items() if c is not None),
        "delete": sorted(r for r, c in files.items() if c is None)}))
    (boot / "bootstrap.py").write_bytes(shipped("bootstrap.py").read_bytes())


