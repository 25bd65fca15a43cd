"""A private Docker engine that accepts ``--gpus all`` on a machine without a GPU.

Docker registers its ``nvidia`` device driver when an executable named
``nvidia-container-runtime-hook`` is on the daemon's PATH when it starts, and runs it as each GPU
container's OCI prestart hook. Here that executable is a stand-in that reads the container state
runc gives it on stdin and exits 0 (and notes the call in ``hook.log``): the engine then takes a
device request exactly as a GPU runner's engine does, sets ``NVIDIA_VISIBLE_DEVICES``, and starts
the container with no device in it.

The engine is the real ``dockerd`` with its own socket and exec root (a short folder under /tmp:
socket paths are limited to 108 bytes) and its own data root, kept in the stand-in cache so the
stand-in images are written into it once (a lock keeps it to one engine at a time).

    python tests/gpuengine.py          # start it, print DOCKER_HOST=..., wait for Ctrl-C
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

HOOK = "nvidia-container-runtime-hook"
HOOK_SCRIPT = """#!/bin/sh
# Stand-in for the NVIDIA container toolkit's prestart hook: takes the OCI state, gives no device.
cat > /dev/null
echo "$*" >> "{log}"
exit 0
"""


def data_root() -> Path:
    from standin import cache_dir

    return cache_dir() / "gpu-engine"


def _stop(pid: int, timeout: float = 30) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def private_engine() -> Iterator[tuple[str, Path]]:
    """``(DOCKER_HOST, hook log)`` of a running private engine; stopped and its exec root removed after."""
    if shutil.which("dockerd") is None:
        raise SystemExit("dockerd is not installed (.ci/docker.sh installs it)")
    root = data_root()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        pidfile = root / "dockerd.pid"
        if pidfile.is_file():  # an engine a killed session left on this data root
            with contextlib.suppress(ValueError):
                _stop(int(pidfile.read_text().strip() or 0) or -1)
            pidfile.unlink(missing_ok=True)
        run = Path(tempfile.mkdtemp(prefix="psgpu-", dir="/tmp"))
        (run / "bin").mkdir()
        hook_log = run / "hook.log"
        hook = run / "bin" / HOOK
        hook.write_text(HOOK_SCRIPT.format(log=hook_log))
        hook.chmod(0o755)
        host = f"unix://{run}/docker.sock"
        env = {**os.environ, "PATH": f"{run / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
        log = (root / "dockerd.log").open("a")
        proc = subprocess.Popen(
            ["dockerd", "--host", host, "--data-root", str(root / "data"), "--exec-root", str(run / "exec"),
             "--pidfile", str(pidfile), "--iptables=false", "--ip-masq=false", "--bridge=none",
             "--storage-driver=overlay2"],
            env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while subprocess.run(["docker", "-H", host, "version"], capture_output=True).returncode != 0:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"the private dockerd did not start: see {root / 'dockerd.log'}")
                time.sleep(0.5)
            yield host, hook_log
        finally:
            _stop(proc.pid)
            log.close()
            shutil.rmtree(run, ignore_errors=True)


if __name__ == "__main__":
    with private_engine() as (docker_host, _):
        print(f"DOCKER_HOST={docker_host}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()
