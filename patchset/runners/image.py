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
    Image,
    ImageFiles,
    ImageNotFound,
    VllmInstall,
    VllmNotFound,
    connect,
    get_image,
    image_digest,
)
from patchset.runners import PLUGIN_DIR, Progress, RunConfig, RunOutcome, junit_env, no_progress, pytest_args
from patchset.runners.junit import read_junit
from patchset.runners.offline import cpu_env, write_hf_home
from patchset.runners.output import RunOutput
from patchset.runners.overlay import package_path
from patchset.versions import same_release

TREE, BOOT, OUT, PLUGIN, OVERLAY, HF, TOOLS = (
    "/patchset/tree", "/patchset/boot", "/patchset/out", "/patchset/plugin", "/patchset/overlay", "/patchset/hf",
    "/patchset/pytest")
#: What the tests need that a serving image usually lacks (the venv runner installs the same).
TEST_TOOLS = ("pytest", "pytest-asyncio", "tblib")
LABEL = "io.patchset.test"


class ImageRunner:
    """Runs pytest in containers of ``image``."""

    name = "image"

    def __init__(self, image: str, *, gpus: str | None = None, client: Client | None = None,
                 python: str | None = None) -> None:
        self.image_ref = image
        self.gpus = gpus
        containers.device_requests(gpus)  # refuse a bad --gpus before anything is pulled
        self.client = client
        self.python = python
        self.image: Image | None = None
        self.install: VllmInstall | None = None
        self.tools: Path | None = None  # host folder of pytest & co, when the image has no pytest

    @property
    def needs_accelerator_reason(self) -> str | None:
        if self.gpus:
            return None
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
        digest = image_digest(self.image)
        gpus = f", GPUs: {self.gpus}" if self.gpus else ", no GPU"
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
        if self.gpus:
            env = junit_env(skip_global_cleanup=False)
        else:
            write_hf_home(hf)
            os.chmod(hf, 0o777)
            env = cpu_env(Path(HF))
        env.update({"PYTHONPATH": f"{OVERLAY}:{PLUGIN}", "PYTHONDONTWRITEBYTECODE": "1"})
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
        return containers.create(
            self.client,
            self.image,
            entrypoint=[self.python or "python3", f"{BOOT}/bootstrap.py", BOOT, OVERLAY],
            command=args,
            working_dir=TREE,
            environment=env,
            volumes=mounts,
            tmpfs={OVERLAY: "mode=1777", "/tmp": "mode=1777"},
            gpus=self.gpus,
            labels={LABEL: config.label},
        )

    def run(self, config: RunConfig) -> RunOutcome:
        container = self.create(config)
        junit = config.workdir / "out" / "junit.xml"
        cmd = ["docker-sdk:run", self.image_ref, *container.attrs["Config"]["Entrypoint"],
               *container.attrs["Config"]["Cmd"]]
        t0 = time.monotonic()
        killed = threading.Event()
        timer = None
        try:
            try:
                containers.start(container)
            except containers.ContainerFailed as e:
                raise PatchsetError(f"cannot start a container of {self.image_ref}: {e}",
                                    hint="a GPU request needs the NVIDIA container toolkit on this engine"
                                    if self.gpus else None) from e
            if config.timeout:
                timer = threading.Timer(config.timeout, containers.kill, args=(container, killed))
                timer.daemon = True
                timer.start()
            tail = self._follow(container, config, config.workdir / "pytest.log")
            code = containers.wait(container)
        finally:
            if timer:
                timer.cancel()
            containers.remove(container)
        if killed.is_set():
            tail += f"\n[patchset: killed after {config.timeout:.0f} s]\n"
            code = -1
        results, problem = read_junit(junit)
        return RunOutcome(results, code, time.monotonic() - t0, cmd, tail, junit, problem)

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


