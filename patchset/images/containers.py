"""Containers of an image: one-off runs of the image's own Python, and the test runner's containers.

Every container patchset makes has no network and carries a label saying what made it.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import docker
import docker.errors
from docker.models.containers import Container
from docker.models.images import Image
from docker.types import DeviceRequest

from patchset.errors import PatchsetError

INSPECT_LABEL = "io.patchset.inspect"


class ContainerFailed(RuntimeError):
    """The engine refused to create, start or wait for a container; the message is the engine's."""


def run_once(client: docker.DockerClient, image: Image, entrypoint: list[str], *, timeout: int,
             environment: dict[str, str] | None = None) -> tuple[int | None, str, str]:
    """(exit status, stdout, stderr) of ``entrypoint`` run in a throwaway container of ``image``."""
    container = client.containers.create(image, entrypoint=entrypoint, environment=environment or None,
                                         network_disabled=True, labels={INSPECT_LABEL: "1"})
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
           tmpfs: dict[str, str], gpus: str | None, labels: dict[str, str]) -> Container:
    """A container of ``image`` with no network, created and not started; ``gpus`` as ``docker run --gpus``."""
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
    )


def start(container: Container) -> None:
    try:
        container.start()
    except docker.errors.APIError as e:
        raise ContainerFailed(str(e.explanation or e)) from e


def logs(container: Container) -> Any:
    """The container's output as it comes, stdout and stderr together, in chunks of bytes."""
    return container.logs(stream=True, follow=True, stdout=True, stderr=True)


def wait(container: Container) -> int:
    return int(container.wait().get("StatusCode", -1))


def remove(container: Container) -> None:
    """Remove a run's container; one already gone (or going) is what was wanted, not an error."""
    try:
        container.remove(force=True)
    except docker.errors.APIError as e:
        if e.status_code not in (404, 409):
            raise


def kill(container: Container, killed: threading.Event) -> None:
    killed.set()
    with contextlib.suppress(docker.errors.APIError):
        container.kill()
