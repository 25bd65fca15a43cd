"""Containers of an image: one-off runs of the image's own Python, and the test runner's containers.

Every container patchset makes has no network and carries a label saying what made it. A test
container also says who owns it (host, process id and that process' start time) and when it must
be gone (:data:`DEADLINE_LABEL`), so that a later run can :func:`sweep` what a cancelled or killed
run left, without touching a live run's container.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any

import docker
import docker.errors
from docker.models.containers import Container
from docker.models.images import Image
from docker.types import DeviceRequest, Ulimit

from patchset.errors import PatchsetError

INSPECT_LABEL = "io.patchset.inspect"
OWNER_LABEL = "io.patchset.owner"  # HOST:PID:START of the patchset process that made the container
DEADLINE_LABEL = "io.patchset.deadline"  # Unix time after which the container is nobody's


class ContainerFailed(RuntimeError):
    """The engine refused to create, start or wait for a container; the message is the engine's."""


def run_once(client: docker.DockerClient, image: Image, entrypoint: list[str], *, timeout: int,
             environment: dict[str, str] | None = None) -> tuple[int | None, str, str]:
    """(exit status, stdout, stderr) of ``entrypoint`` run in a throwaway container of ``image``."""
    container = client.containers.create(image, entrypoint=entrypoint, environment=environment or None,
                                         network_disabled=True,
                                         labels=inspect_labels(deadline=time.time() + timeout + 60))
    try:
        container.start()
        status = container.wait(timeout=timeout)
        out = container.logs(stdout=True, stderr=False).decode("utf-8", "replace").strip()
        err = container.logs(stdout=False, stderr=True).decode("utf-8", "replace").strip()
        return status.get("StatusCode"), out, err
    except docker.errors.APIError as e:
        raise ContainerFailed(str(e.explanation or e)) from e
    finally:
        container.remove(force=True)


def inspect_labels(deadline: float | None = None) -> dict[str, str]:
    """The labels of a container made to look into an image: whose it is (and until when), so that
    :func:`sweep` removes it once a killed run has left it behind, and never while its run goes on."""
    labels = {INSPECT_LABEL: "1", OWNER_LABEL: owner()}
    if deadline is not None:
        labels[DEADLINE_LABEL] = f"{deadline:.0f}"
    return labels


def device_requests(gpus: str | None) -> list[DeviceRequest]:
    """``docker run --gpus`` values: ``all``, a count, or ``device=0,1``."""
    if not gpus:
        return []
    if gpus == "all":
        return [DeviceRequest(count=-1, capabilities=[["gpu"]])]
    if gpus.isdigit():
        return [DeviceRequest(count=int(gpus), capabilities=[["gpu"]])]
    if gpus.startswith("device="):
        ids = [d for d in gpus[len("device="):].strip("\"'").split(",") if d]
        return [DeviceRequest(device_ids=ids, capabilities=[["gpu"]])]
    raise PatchsetError(f"--gpus {gpus!r}: use all, a number, or device=ID[,ID...]")


def create(client: docker.DockerClient, image: Image, *, entrypoint: list[str], command: list[str],
           working_dir: str, environment: dict[str, str], volumes: dict[str, dict[str, str]],
           tmpfs: dict[str, str], gpus: str | None, labels: dict[str, str], shm_size: str | None = None,
           ulimits: Mapping[str, int] | None = None, init: bool = False, auto_remove: bool = False) -> Container:
    """A container of ``image`` with no network, created and not started; ``gpus`` as ``docker run --gpus``,
    ``ulimits`` by name (soft and hard alike, -1 unlimited), ``init`` as ``docker run --init``."""
    return client.containers.create(
        image,
        entrypoint=entrypoint,
        command=command,
        working_dir=working_dir,
        environment=environment,
        volumes=volumes,
        tmpfs=tmpfs,
        network_disabled=True,
        device_requests=device_requests(gpus) or None,
        labels=labels,
        shm_size=shm_size,
        ulimits=[Ulimit(name=n, soft=v, hard=v) for n, v in (ulimits or {}).items()] or None,
        init=init or None,
        auto_remove=auto_remove,
    )


def start(container: Container) -> None:
    try:
        container.start()
    except docker.errors.APIError as e:
        raise ContainerFailed(str(e.explanation or e)) from e


class ExitWatch:
    """The exit status of a container the engine may remove as soon as it exits (``auto_remove``).

    Asked for before the container starts, as ``docker run --rm`` does: asked after, the container
    can be gone with its status. None when the engine could not say (the container vanished first).
    """

    def __init__(self, container: Container) -> None:
        self._status: list[int | None] = []
        self._thread = threading.Thread(target=self._wait, args=(container,), daemon=True,
                                        name="patchset-wait")
        self._thread.start()

    def _wait(self, container: Container) -> None:
        try:
            result = container.wait(condition="removed", timeout=None)
            self._status.append(int(result.get("StatusCode", -1)))
        except (docker.errors.APIError, OSError, ValueError):
            self._status.append(None)

    def status(self, timeout: float | None = None) -> int | None:
        self._thread.join(timeout)
        return self._status[0] if self._status else None


def logs(container: Container) -> Any:
    """The container's output as it comes, stdout and stderr together, in chunks of bytes; nothing when the
    container is already gone (one the engine removed on exit, before its output was asked for)."""
    try:
        return container.logs(stream=True, follow=True, stdout=True, stderr=True)
    except docker.errors.NotFound:
        return iter(())


def wait(container: Container) -> int:
    return int(container.wait().get("StatusCode", -1))


def remove(container: Container) -> None:
    """Remove a run's container; one already gone (or going) is what was wanted, not an error."""
    try:
        container.remove(force=True)
    except docker.errors.APIError as e:
        if e.status_code not in (404, 409):
            raise


def owner() -> str:
    """``HOST:PID:START``: this process, told apart from a later one that reuses its id."""
    return f"{socket.gethostname()}:{os.getpid()}:{_started(os.getpid())}"


def _started(pid: int) -> str:
    """The process' start time in clock ticks since boot (``/proc/PID/stat`` field 22); "" where unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return ""
    fields = stat[stat.rfind(b")") + 2:].split()  # the command name may hold spaces and parentheses
    return fields[19].decode() if len(fields) > 19 else ""


def owner_gone(label: str) -> bool:
    """Whether the process a container's owner label names has ended (only said of this host's processes)."""
    parts = label.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit() or parts[0] != socket.gethostname():
        return False
    pid, started = int(parts[1]), parts[2]
    if started:
        return _started(pid) != started
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def sweep(client: docker.DockerClient, label: str) -> list[str]:
    """Remove the containers labelled ``label`` that nobody runs any more; their names.

    Nobody's: stopped (or never started) with no live owner, past its deadline, or owned by a
    process of this host that has ended (a job killed before it could clean up). A running
    container of a live run, here or on another host sharing the engine, is left alone.
    """
    removed = []
    now = time.time()
    for container in client.containers.list(all=True, filters={"label": label}):
        labels = container.labels or {}
        deadline = labels.get(DEADLINE_LABEL, "")
        mine = labels.get(OWNER_LABEL)
        expired = deadline.replace(".", "", 1).isdigit() and float(deadline) < now
        orphan = owner_gone(mine) if mine else container.status != "running"
        if expired or orphan:
            with contextlib.suppress(docker.errors.NotFound):
                remove(container)
                removed.append(str(container.name))
    return removed


def kill(container: Container, killed: threading.Event) -> None:
    killed.set()
    with contextlib.suppress(docker.errors.APIError):
        container.kill()
