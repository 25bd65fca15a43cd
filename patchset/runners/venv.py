"""The CPU runner: a cached venv per release, one overlay per configuration.

The venv for vLLM V holds a CPU build of the torch V pins, V's wheel
(found through the package index, sha256 verified) installed without its
dependencies, then V's own ``Requires-Dist`` list (markers honoured) minus
the packages that only exist for CUDA, plus pytest. That is what lets the
upstream offload tests run on a machine with no accelerator (shared facts,
"Upstream offload tests run on the CPU").

The venv is built once under ``$PATCHSET_CACHE/venvs/`` in a temporary
folder and renamed into place when complete, under a file lock, so two CI
jobs never build it twice and nobody ever uses a half-built one. Runs never
write into it: each configuration's patched files live in its own overlay.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass, field
from email.parser import Parser
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

from patchset.cache import Cache
from patchset.errors import PatchsetError
from patchset.runners import (
    PLUGIN_DIR,
    Progress,
    RunConfig,
    RunOutcome,
    junit_env,
    no_progress,
    pytest_args,
    warm,
)
from patchset.runners.junit import read_junit
from patchset.runners.offline import cpu_env, write_hf_home
from patchset.runners.output import RunOutput
from patchset.runners.overlay import make_overlay
from patchset.runners.warm import ServerGone, WarmServer
from patchset.sources import download, index

#: Bump when what goes into a venv changes, so cached venvs built the old way are not reused.
VENV_FORMAT = 1
MARKER = "patchset-venv.json"  # written last: a venv without it was never finished

#: Distributions vLLM requires that exist only for CUDA (or pull CUDA in), by canonical-name prefix.
#: torch itself is installed first, pinned, as a CPU build; torchvision & co would pull a CUDA torch.
CUDA_ONLY_PREFIXES = (
    "torch", "flashinfer", "nvidia-", "cutlass", "quack", "tilelang", "tokenspeed", "humming", "numba",
    "apache-tvm-ffi", "pynvvideocodec", "fastsafetensors", "instanttensor", "nvtx",
)
TEST_REQUIREMENTS = ("pytest", "pytest-asyncio", "tblib")
CUDA_DISTRIBUTIONS = re.compile(r"^(nvidia-|cuda-)")


def read_marker(path: Path) -> dict | None:
    """A finished venv's marker (what :meth:`VenvRunner._build` wrote last); None when it is missing or damaged:
    not a JSON object, or its ``site_packages`` not a folder inside the venv (fuzzed: docs/fuzzing.md)."""
    try:
        info = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    site = info.get("site_packages") if isinstance(info, dict) else None
    if not isinstance(site, str):
        return None
    parts = Path(site).parts  # none for "." (the venv itself, found by fuzzing) and ""
    if not parts or Path(site).is_absolute() or ".." in parts:
        return None
    return info


def read_probed(path: Path) -> tuple[str, ...] | None:
    """The modules a venv's warm server was found to import, as kept in the cache; None when missing or
    damaged (not a JSON list of module names): the server finds them again (fuzzed: docs/fuzzing.md).

    A name's dotted parts are identifiers, or may hold a ``-`` as CPython's own
    ``_sysconfigdata__linux_x86_64-linux-gnu`` does (refusing that name made every run probe again)."""
    try:
        probed = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(probed, list) or not all(
            isinstance(m, str) and m and all(part.replace("-", "_").isidentifier() for part in m.split("."))
            for m in probed):
        return None
    return tuple(probed)


class VenvError(PatchsetError):
    """The CPU venv could not be built."""


@dataclass(frozen=True)
class PythonEnv:
    """An interpreter whose site-packages holds the package under test."""

    python: Path
    site_packages: Path
    description: str = ""
    env: dict[str, str] = field(default_factory=dict)


def cpu_requirements(metadata: str) -> tuple[list[str], list[str], str | None]:
    """From a wheel's METADATA: (requirements to install, requirements left out, the torch version pinned).

    Requirements of optional extras are skipped; other markers are kept for
    pip to evaluate in the venv. CUDA-only distributions are left out.
    """
    meta = Parser().parsestr(metadata)
    keep: list[str] = []
    dropped: list[str] = []
    torch_pin = None
    for line in meta.get_all("Requires-Dist") or []:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker is not None and "extra" in str(req.marker) and not req.marker.evaluate({"extra": ""}):
            continue  # an optional extra; other markers stay in, for the venv's pip to evaluate
        name = canonicalize_name(req.name)
        if name == "torch":
            pins = [s.version for s in req.specifier if s.operator in ("==", "===")]
            torch_pin = pins[0] if pins else None
        text = str(req)
        (dropped if name.startswith(CUDA_ONLY_PREFIXES) else keep).append(text)
    return keep, dropped, torch_pin


def base_python() -> str:
    """The interpreter new venvs are made from: PATCHSET_PYTHON, else the one running patchset."""
    return os.environ.get("PATCHSET_PYTHON") or getattr(sys, "_base_executable", None) or sys.executable


class VenvBuilder:
    """Builds (once) and finds the cached CPU venv for a release."""

    def __init__(self, cache: Cache | None = None, *, python: str | None = None,
                 progress: Progress = no_progress) -> None:
        self.cache = cache or Cache()
        self.python = python or base_python()
        self.progress = progress

    def venv_for(self, project: str, version: str, wheel: index.IndexFile | None = None) -> PythonEnv:
        """The venv of ``project`` ``version``'s wheel from the index, or of ``wheel`` (a target's own, named
        by the manifest: its venv is keyed by that wheel's version and digest)."""
        pytag = self._python_tag()
        python = (int(pytag[2]), int(pytag[3:]))  # "cp311": the venv's Python picks the wheel, not patchset's
        if wheel is None:
            wheel = index.remembered(self.cache, index.wheel_kind(python), project, version,
                                     lambda p, v: index.wheel(p, v, index.supported_tags(python)))
        else:
            version = str(parse_wheel_filename(wheel.filename)[1])
        key = f"{canonicalize_name(project)}-{version}-{pytag}-{wheel.sha256[:16]}-f{VENV_FORMAT}"
        final = self.cache.path("venvs", key)
        if not self._complete(final):
            self.progress(f"venv: none cached for {project} {version}; taking the build lock "
                          "(waits if another job is building it)")
            with self.cache.lock("venvs", key):
                if not self._complete(final):
                    # Holding the lock, any partial build of this key is a dead builder's leftovers.
                    for part in final.parent.glob(f".{final.name}.part-*"):
                        shutil.rmtree(part, ignore_errors=True)
                    self._build(final, project, version, wheel)
        else:
            self.progress(f"venv: reusing {final}")
        info = read_marker(final / MARKER)
        if info is None:  # built or found finished a moment ago: removed or damaged under us since
            raise VenvError(f"the cached venv {final} lost its {MARKER} while in use",
                            hint="run again: it is built afresh")
        return PythonEnv(final / "bin" / "python", final / info["site_packages"],
                         description=f"venv {final} ({project} {version}, torch {info.get('torch')})")

    def _python_tag(self) -> str:
        out = self._capture([self.python, "-c", "import sys; print('cp%d%d' % sys.version_info[:2])"])
        return out.strip()

    @staticmethod
    def _complete(path: Path) -> bool:
        """Finished: its marker readable (a damaged one, and the venv is built again) and its Python there."""
        return read_marker(path / MARKER) is not None and (path / "bin" / "python").exists()

    def _build(self, final: Path, project: str, version: str, wheel) -> None:
        final.parent.mkdir(parents=True, exist_ok=True)
        if final.exists():  # left by a build killed after the rename? never: the rename is last. Stale junk.
            shutil.rmtree(final, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}.part-"))
        timings: dict[str, float] = {}
        started = time.monotonic()
        try:
            self.progress(f"venv: building a CPU venv for {project} {version} (once; cached in {final})")
            percent = _Percent(self.progress, wheel.filename)
            blob = self._step(timings, "wheel", f"downloading {wheel.filename}",
                              lambda: download.blob(self.cache, wheel.sha256, wheel.url, size=wheel.size,
                                                    progress=percent))
            wheel_path = _wheelhouse(tmp, blob, wheel.filename)
            metadata = _wheel_metadata(blob)
            reqs, dropped, torch_pin = cpu_requirements(metadata)
            if not torch_pin:
                raise VenvError(f"{wheel.filename} does not pin torch; cannot choose a CPU build to match")
            self._step(timings, "venv", f"creating the venv with {self.python}",
                       lambda: self._check([self.python, "-m", "venv", str(tmp)], tmp))
            py = str(tmp / "bin" / "python")
            constraints = tmp / ".constraints.txt"
            constraints.write_text(f"torch=={torch_pin}\n")
            pip = [py, "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--progress-bar", "off"]
            extra = _torch_index_args()
            self._step(timings, "torch", f"installing torch=={torch_pin} (a CPU build)",
                       lambda: self._install_torch(pip, py, torch_pin, extra, tmp))
            self._step(timings, "vllm", f"installing {wheel.filename} without its dependencies",
                       lambda: self._check([*pip, "--no-deps", str(wheel_path)], tmp))
            self.progress(f"venv: leaving out {len(dropped)} CUDA-only requirements: "
                          + ", ".join(Requirement(d).name for d in dropped))
            self._step(timings, "requirements",
                       f"installing {len(reqs)} CPU-runnable requirements + {' '.join(TEST_REQUIREMENTS)}",
                       lambda: self._check([*pip, "-c", str(constraints), *extra, *reqs, *TEST_REQUIREMENTS], tmp))
            torch_version = self._cpu_torch(py)
            site = self._capture([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip()
            shutil.rmtree(wheel_path.parent)
            timings["total"] = round(time.monotonic() - started, 1)
            info = {"format": VENV_FORMAT, "project": project, "version": version, "wheel": wheel.filename,
                    "wheel_sha256": wheel.sha256, "torch": torch_version, "python": self.python,
                    "site_packages": str(Path(site).relative_to(tmp)), "requirements": reqs,
                    "left_out": dropped, "test_requirements": list(TEST_REQUIREMENTS), "seconds": timings}
            (tmp / MARKER).write_text(json.dumps(info, indent=2) + "\n")
            # Scripts in bin/ name the temporary path in their shebangs: only `bin/python -m ...` is used.
            os.replace(tmp, final)
            self.progress(f"venv: ready in {timings['total']:.0f} s: {final}")
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)

    def _cpu_torch(self, py: str) -> str:
        """The venv's torch version; a CUDA build is refused (the venv runner is for the CPU)."""
        torch_info = self._capture([py, "-c", "import torch; print(torch.__version__, torch.version.cuda)"])
        torch_version, cuda = (torch_info.split() + ["", ""])[:2]
        if cuda not in ("None", ""):
            raise VenvError(f"the venv got a CUDA build of torch ({torch_version}, CUDA {cuda})")
        return torch_version

    def _install_torch(self, pip: list[str], py: str, pin: str, extra: list[str], cwd: Path) -> None:
        # Ask pip what it would install before it downloads gigabytes of CUDA libraries.
        report = cwd / ".torch-report.json"
        self._check([*pip, "--dry-run", "--quiet", "--report", str(report), *extra, f"torch=={pin}"], cwd)
        names = [i["metadata"]["name"] + " " + i["metadata"]["version"]
                 for i in json.loads(report.read_text()).get("install", [])]
        cuda = [n for n in names if CUDA_DISTRIBUTIONS.match(canonicalize_name(n.split()[0]))]
        if cuda:
            raise VenvError(
                f"pip would install a CUDA build of torch {pin} (with {', '.join(cuda[:3])}, ...)",
                hint=f"make a CPU build of torch {pin} visible to pip: PIP_FIND_LINKS=DIR holding the "
                     "torch-*+cpu wheel, or PATCHSET_TORCH_INDEX_URL=<a CPU torch index>")
        self._check([*pip, *extra, f"torch=={pin}"], cwd)

    def _step(self, timings: dict[str, float], name: str, what: str, fn):
        self.progress(f"venv: {what} ...")
        t0 = time.monotonic()
        result = fn()
        timings[name] = round(time.monotonic() - t0, 1)
        self.progress(f"venv: {what}: done in {timings[name]:.0f} s")
        return result

    def _check(self, cmd: list[str], cwd: Path) -> None:
        proc = subprocess.run(cmd, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        log = cwd / ".build.log"
        with log.open("a") as f:
            f.write("$ " + " ".join(cmd) + "\n" + proc.stdout + proc.stderr + "\n")
        if proc.returncode != 0:
            tail = "\n".join(_useful(proc.stdout + proc.stderr)[-25:])
            raise VenvError(f"{' '.join(cmd[:4])} ... failed (exit {proc.returncode}):\n{tail}")

    @staticmethod
    def _capture(cmd: list[str]) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, check=True, stdin=subprocess.DEVNULL).stdout
        except (OSError, subprocess.CalledProcessError) as e:
            raise VenvError(f"{' '.join(cmd[:2])} failed: {getattr(e, 'stderr', '') or e}") from e


class VenvRunner:
    """Runs pytest with a venv's interpreter, the configuration's overlay first on PYTHONPATH."""

    name = "venv"
    needs_accelerator_reason = "the venv runner has no accelerator (CPU only)"

    def __init__(self, env: PythonEnv | None = None, *, builder: VenvBuilder | None = None,
                 cpu: bool = True, jobs: int = 1) -> None:
        self.env = env
        self.builder = builder
        self.wheel: index.IndexFile | None = None  # the target's own wheel (its wheel:), else the index's
        self.cpu = cpu
        #: Runs side by side; above 1, each run is a child forked from a warm interpreter (runners/warm.py).
        self.jobs = jobs
        self.warnings: list[str] = []
        self.peak_rss_kb = 0  # the largest run's peak memory (warm runs report it)
        self._server: WarmServer | None = None
        self._server_failed = False
        self._server_lock = threading.Lock()
        self._scratch: Path | None = None
        self._warming: threading.Thread | None = None
        self._turns = warm.Turns()  # runs side by side; a re-run of a possible regression runs alone

    def prepare(self, project: str, version: str, progress: Progress = no_progress) -> str:
        if self.env is None:
            builder = self.builder or VenvBuilder(progress=progress)
            self.env = builder.venv_for(project, version, self.wheel)
        return self.env.description or str(self.env.python)

    def run(self, config: RunConfig) -> RunOutcome:
        if self.env is None:
            raise PatchsetError("VenvRunner.run before prepare")
        if self.jobs <= 1:
            return self._run(config)
        with self._turns.turn(config.alone, limit=self.jobs):
            return self._run(config)

    def _run(self, config: RunConfig) -> RunOutcome:
        assert self.env is not None
        work = config.workdir
        work.mkdir(parents=True, exist_ok=True)
        installed = self.env.site_packages / config.package
        overlay = make_overlay(installed, work / "overlay", config.package_files())
        junit = work / "junit.xml"
        server = self._warm_server(config, overlay) if self.jobs > 1 and not config.alone else None
        # A warm child shares its server's HF_HOME: the hub library reads it when it is imported, in the server.
        hf_home = self._scratch / "hf" if server is not None and self._scratch else work / "hf"
        env = self._base_env(hf_home)
        env["PYTHONPATH"] = os.pathsep.join([str(overlay), str(PLUGIN_DIR)])
        args = pytest_args(config.selectors, junit=str(junit), rootdir=str(config.tree))
        cmd = [str(self.env.python), "-m", "pytest", *args]
        if server is not None:
            try:
                return self._run_warm(server, config, env, args, cmd, overlay, junit)
            except ServerGone as e:
                self._note(f"the warm interpreter failed ({e}); {config.label} and the runs after it "
                           "run the serial way")
                env = self._base_env(work / "hf")
                env["PYTHONPATH"] = os.pathsep.join([str(overlay), str(PLUGIN_DIR)])
        code, output, duration = run_streaming(cmd, cwd=config.tree, env=env, timeout=config.timeout,
                                               log=work / "pytest.log", progress=config.progress,
                                               label=config.label)
        import resource

        # the largest child this process has waited for: the runs (and, once, the venv's build)
        self.peak_rss_kb = max(self.peak_rss_kb, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
        results, problem = read_junit(junit)
        return RunOutcome(results, code, duration, cmd, output, junit, problem)

    def _base_env(self, hf_home: Path) -> dict[str, str]:
        assert self.env is not None
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
        env.update(self.env.env)
        env.update(cpu_env(write_hf_home(hf_home)) if self.cpu else junit_env(skip_global_cleanup=False))
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # never write into the shared venv
        return env

    def _run_warm(self, server: WarmServer, config: RunConfig, env: dict[str, str], args: list[str],
                  cmd: list[str], overlay: Path, junit: Path) -> RunOutcome:
        log = config.workdir / "pytest.log"
        ran = server.run(args, cwd=config.tree, env=env, path=[str(overlay), str(PLUGIN_DIR)], log=log,
                         timeout=config.timeout)
        self.peak_rss_kb = max(self.peak_rss_kb, ran.maxrss_kb)
        with open(log, encoding="utf-8", errors="replace") as written, open(os.devnull, "w") as nowhere:
            out = RunOutput(nowhere, config.progress, config.label)  # the child wrote the log: its tail is read back
            for line in written:
                out.line(line)
        code = ran.exit_code
        if ran.timed_out and code < 0:  # as run_streaming says a timeout
            note = f"\n[patchset: killed after {config.timeout:.0f} s]\n"
            out.note(note)
            with open(log, "a", encoding="utf-8") as sink_end:
                sink_end.write(note)
            code = -1
        results, problem = read_junit(junit)
        return RunOutcome(results, code, ran.seconds, cmd, out.tail, junit, problem)

    def warm_up(self, package: str) -> None:
        """Start the warm interpreter now, in the background, where what it imports is already known (kept
        in the cache): its imports then overlap the making of the test tree and the first overlays."""
        if self.jobs <= 1 or self.env is None:
            return
        self._warming = threading.Thread(target=self._start_server, args=(package, None, None),
                                         name="patchset-warm-up", daemon=True)
        self._warming.start()

    def _warm_server(self, config: RunConfig, overlay: Path) -> WarmServer | None:
        """The warm interpreter, started on the first run (unless warm_up started it); None (and a warning,
        once) where it cannot fork."""
        return self._start_server(config.package, config.tree, overlay)

    def _start_server(self, package: str, tree: Path | None, overlay: Path | None) -> WarmServer | None:
        """Start the warm interpreter unless it is started or has failed; None where it cannot fork.

        What it imports: every module importing the package and the test tree's conftest imports besides
        them, and pytest. That list is found once per venv (by a child of the server that imports the
        package from the first run's overlay; that first server imports :data:`warm.WARM_MODULES` too)
        and kept in the cache. Without the list and without a run (``tree`` None: warm_up), nothing is
        started yet.
        """
        with self._server_lock:
            if self._server is not None or self._server_failed:
                return self._server
            assert self.env is not None
            import hashlib

            key = hashlib.sha256(f"{self.env.site_packages.resolve()}\0{package}".encode()).hexdigest()[:24]
            kept = Cache().path("warm", f"{key}.json")
            if (found := read_probed(kept)) is not None:
                # exactly what importing the package and the conftest imported, not the guessed list: a module
                # of the list they never import delayed every run (docs/records/performance.md)
                modules, probe = ("pytest", *found), None
            else:
                if tree is None or overlay is None:
                    return None
                modules = warm.WARM_MODULES
                conftest = ["tests.conftest"] if (tree / "tests" / "conftest.py").is_file() else []
                probe = {"cwd": str(tree), "path": [str(overlay), str(PLUGIN_DIR)], "also": conftest}
            if self._scratch is None:
                self._scratch = Path(tempfile.mkdtemp(prefix="patchset-warm-"))
            server = WarmServer(self.env.python, package, self._base_env(self._scratch / "hf"),
                                self._scratch, modules, probe)
            why = server.start()
            if why is None and probe is not None and isinstance(server.hello.get("probed"), list):
                with contextlib.suppress(OSError):
                    Cache().put_bytes(json.dumps(server.hello["probed"]).encode(), "warm", f"{key}.json")
            if why is None:
                self._server = server
            else:
                self._server_failed = True
                self._note(f"configurations run one process each, one after another: forking a warm "
                           f"interpreter is not safe here ({why})")
            return self._server

    def _note(self, warning: str) -> None:
        if warning not in self.warnings:
            self.warnings.append(warning)

    def close(self) -> None:
        """Stop the warm interpreter, if one was started."""
        if self._warming is not None:
            self._warming.join()
            self._warming = None
        with self._server_lock:
            if self._server is not None:
                self._server.close()
                self._server = None
            if self._scratch is not None:
                shutil.rmtree(self._scratch, ignore_errors=True)
                self._scratch = None


def run_streaming(cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: float | None, log: Path,
                  progress: Progress, label: str) -> tuple[int, str, float]:
    """Run a command, keeping its output in ``log`` and passing pytest's percentages to ``progress``.

    Returns (exit code, output tail, seconds); exit code -1 on timeout (the
    whole process group is killed: pytest may have spawned workers).
    """
    t0 = time.monotonic()
    with log.open("w") as sink:
        out = RunOutput(sink, progress, label)
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace", start_new_session=True)
        deadline = t0 + timeout if timeout else None
        timer = None
        if timeout:
            timer = threading.Timer(timeout, _kill_group, args=(proc,))
            timer.daemon = True
            timer.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                out.line(line)
            code = proc.wait()
        except BaseException:
            _kill_group(proc)
            raise
        finally:
            if timer:
                timer.cancel()
    duration = time.monotonic() - t0
    if deadline and time.monotonic() >= deadline and code < 0:
        out.note(f"\n[patchset: killed after {timeout:.0f} s]\n")
        code = -1
    return code, out.tail, duration


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _wheelhouse(tmp: Path, blob: Path, filename: str) -> Path:
    """``tmp/.wheelhouse/FILENAME`` linked to the cached blob: pip wants the wheel's own file name."""
    wheelhouse = tmp / ".wheelhouse"
    wheelhouse.mkdir()
    wheel_path = wheelhouse / filename
    os.symlink(blob, wheel_path)
    return wheel_path


def _wheel_metadata(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name.count("/") == 1 and name.endswith(".dist-info/METADATA"):
                return z.read(name).decode("utf-8")
    raise VenvError(f"{wheel} has no .dist-info/METADATA")


def _torch_index_args() -> list[str]:
    url = os.environ.get("PATCHSET_TORCH_INDEX_URL")
    return ["--extra-index-url", url] if url else []


def _useful(text: str) -> list[str]:
    noise = "is ignored: it is neither a file nor a directory"
    return [ln for ln in text.splitlines() if ln.strip() and noise not in ln]


class _Percent:
    """Download progress every 10 %."""

    def __init__(self, progress: Progress, what: str) -> None:
        self.progress = progress
        self.what = what
        self.shown = -10

    def __call__(self, done: int, total: int) -> None:
        if total:
            pct = done * 100 // total
            if pct >= self.shown + 10:
                self.shown = pct - pct % 10
                self.progress(f"venv: {self.what}: {pct}% of {total / 1e6:.0f} MB")
