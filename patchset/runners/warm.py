"""A warm interpreter per venv: torch and the test dependencies imported once, one forked pytest per run.

Most of a pytest run of vLLM's tests on the CPU is not the tests: it is starting Python and importing
torch, vLLM's dependencies and pytest's plugins, the same in every configuration. The server
(``data/patchset_forkserver.py``, run by the venv's Python) imports those once; each configuration is
a child forked from it that puts its own overlay first on ``sys.path`` and imports the package under
test itself, for the first time, in that child. No configuration can see a module another one
imported: the server never imports the package, and children are forked from the server, never
from each other.

A child is a process like the serial path's: its exit code (negative for a signal), its output in
a log, its JUnit file. A timeout kills its process group, as the serial path does. If the server
itself is gone, the runs still waiting are run serially. Where forking is not safe (an import
started a thread, initialised CUDA, or imported the package) the server says so and the runner
warns and runs every configuration the serial way.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from patchset.runners import PLUGIN_DIR

SERVER = PLUGIN_DIR / "patchset_forkserver.py"

#: Imported once in the first server of a venv, each when the venv has it: what a run of vLLM's tests is
#: expected to import besides vLLM itself. Later servers import what that server's probe found instead.
WARM_MODULES = (
    "torch", "numpy", "pytest", "pytest_asyncio", "tblib", "transformers", "tokenizers", "huggingface_hub",
    "safetensors", "pydantic", "fastapi", "msgspec", "zmq", "psutil", "cloudpickle", "yaml", "regex",
    "requests", "aiohttp", "openai", "prometheus_client", "sentencepiece", "tiktoken", "einops", "cbor2",
    "blake3", "partial_json_parser", "mistral_common", "compressed_tensors", "gguf", "lark", "xgrammar",
    "llguidance", "outlines_core", "diskcache", "watchfiles", "setproctitle", "pybase64", "openai_harmony",
    "anthropic", "scipy", "PIL", "cv2", "uvloop", "py_cpuinfo", "cpuinfo",
)


class ServerGone(RuntimeError):
    """The warm server ended (or never answered): the run is made the serial way instead."""


@dataclass
class WarmRun:
    """One finished child: as ``subprocess`` reports a process (exit code, seconds) and its peak memory."""

    exit_code: int
    seconds: float
    maxrss_kb: int
    timed_out: bool
    cpu: float = 0.0  # the child's user + system seconds
    minflt: int = 0  # its minor page faults (copy-on-write of the server's pages among them)


class WarmServer:
    """One server process for one venv and one environment; thread-safe ``run``."""

    def __init__(self, python: Path, package: str, env: dict[str, str], cwd: Path,
                 modules: tuple[str, ...] = WARM_MODULES, probe: dict | None = None) -> None:
        """``probe``: find what else to import first ({"cwd", "path", "also"}: a run's folder and path, and
        modules of the test tree to import with the package), in a child that imports the package itself."""
        self.python, self.package, self.env, self.cwd, self.modules = python, package, env, cwd, modules
        self.probe = probe
        self.proc: subprocess.Popen | None = None
        self.hello: dict = {}
        self._lock = threading.Lock()
        self._next = 0
        self._waiting: dict[int, dict] = {}  # request id -> answers so far
        self._changed = threading.Condition(self._lock)
        self._gone = False

    def start(self) -> str | None:
        """Start the server and wait for its warm imports; None when it is ready, else why it cannot fork."""
        probe = [f"--probe={json.dumps(self.probe)}"] if self.probe else []
        self.proc = subprocess.Popen([str(self.python), str(SERVER), self.package, *probe, *self.modules],
                                     cwd=self.cwd,
                                     env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        assert self.proc.stdout is not None
        first = self.proc.stdout.readline()
        try:
            self.hello = json.loads(first)
        except ValueError:
            self.close()
            said = first.decode(errors="replace").strip() or "no answer"
            return f"the warm interpreter did not start ({said})"
        if not self.hello.get("ready"):
            self.close()
            return str(self.hello.get("unsafe") or "the warm interpreter refused to fork")
        threading.Thread(target=self._read, name="patchset-warm-reader", daemon=True).start()
        return None

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                answer = json.loads(line)
            except ValueError:
                continue
            with self._changed:
                if answer.get("id") in self._waiting:
                    self._waiting[answer["id"]].update(answer)
                    self._changed.notify_all()
        with self._changed:
            self._gone = True
            self._changed.notify_all()

    def run(self, argv: list[str], *, cwd: Path, env: dict[str, str], path: list[str], log: Path,
            timeout: float | None) -> WarmRun:
        """One pytest run in a child forked from the server; ``ServerGone`` when there is no server."""
        with self._changed:
            if self._gone or self.proc is None or self.proc.stdin is None:
                raise ServerGone("the warm interpreter is not running")
            self._next += 1
            rid = self._next
            self._waiting[rid] = {}
            request = {"id": rid, "argv": argv, "cwd": str(cwd), "env": env, "path": path, "log": str(log)}
            try:
                self.proc.stdin.write((json.dumps(request) + "\n").encode())
                self.proc.stdin.flush()
            except OSError as e:
                del self._waiting[rid]
                raise ServerGone(f"the warm interpreter does not take requests: {e}") from e
            started = time.monotonic()
            deadline = started + timeout if timeout else None
            killed = False
            while "exit" not in self._waiting[rid]:
                if self._gone:
                    pid = self._waiting.pop(rid).get("pid")
                    if pid:
                        _kill_group(pid)
                    raise ServerGone("the warm interpreter ended during a run")
                wait = None if deadline is None or killed else max(0.0, deadline - time.monotonic())
                self._changed.wait(wait)
                if deadline is not None and not killed and time.monotonic() >= deadline and "pid" in self._waiting[rid]:
                    _kill_group(self._waiting[rid]["pid"])  # the server reaps it and says so
                    killed = True
            answer = self._waiting.pop(rid)
        return WarmRun(int(answer["exit"]), time.monotonic() - started, int(answer.get("maxrss_kb", 0)), killed,
                       float(answer.get("cpu", 0)), int(answer.get("minflt", 0)))

    def close(self) -> None:
        """End the server: closing its input makes it kill what still runs and leave."""
        proc = self.proc
        if proc is None:
            return
        with contextlib.suppress(OSError):
            if proc.stdin:
                proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            proc.wait()


class Turns:
    """Runs side by side, at most ``limit`` at a time, except one that asks to run alone: it waits until the
    runs under way have ended, and no other starts until it has ended (those waiting to run alone go first).
    The limit holds where more threads ask than the pool has workers (a suite split into parts)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._running = 0
        self._alone = False
        self._waiting_alone = 0

    @contextlib.contextmanager
    def turn(self, alone: bool, limit: int | None = None) -> Iterator[None]:
        with self._changed:
            if alone:
                self._waiting_alone += 1
                self._changed.wait_for(lambda: self._running == 0 and not self._alone)
                self._waiting_alone -= 1
                self._alone = True
            else:
                self._changed.wait_for(lambda: not self._alone and not self._waiting_alone
                                       and (limit is None or self._running < limit))
                self._running += 1
        try:
            yield
        finally:
            with self._changed:
                if alone:
                    self._alone = False
                else:
                    self._running -= 1
                self._changed.notify_all()


def _kill_group(pid: int) -> None:
    """Kill the child's process group (what its tests started too); the child alone if it has none yet."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def default_jobs(configurations: int, per_run_bytes: int = 2 << 30) -> int:
    """Runs side by side: one per core, as many as the memory available holds at ``per_run_bytes`` each."""
    from patchset.parallel import usable_cores

    available = _mem_available()
    by_memory = max(1, available // per_run_bytes) if available else 1
    return max(1, min(configurations, usable_cores(), by_memory))


def _mem_available() -> int:
    """MemAvailable from /proc/meminfo, in bytes (0 where the system does not say)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0
