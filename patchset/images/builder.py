"""``docker build`` through the engine's API, and the clean-up of the stages a build leaves behind."""

from __future__ import annotations

import io
import re
from collections.abc import Callable

import docker
import docker.errors

from patchset.errors import PatchsetError
from patchset.images.engine import local_id


class BuildError(PatchsetError):
    """The image was not built."""


_STEP_FROM = re.compile(r"^Step \d+/\d+ : FROM ", re.IGNORECASE)


_STEP_IMAGE = re.compile(r"^ ---> ([0-9a-f]{12,64})$")


def run_build(client: docker.DockerClient, context: bytes, tag: str, buildargs: dict[str, str],
               labels: dict[str, str], say: Callable[[str], None], *, nocache: bool = False) -> tuple[str, list[str]]:
    """(the image id, the ids of the stages before the last that this build made): the engine's own account.

    A stage whose last step came from the build cache was made by another build (perhaps one still
    running beside this one): it is not this build's to remove.
    """
    image_id: str | None = None
    stages: list[str] = []
    last_step_image: str | None = None
    cached = False
    try:
        stream = client.api.build(fileobj=io.BytesIO(context), custom_context=True, tag=tag, buildargs=buildargs,
                                  labels=labels, rm=True, forcerm=True, pull=False, decode=True, nocache=nocache)
        for chunk in stream:
            if "stream" in chunk:
                say(chunk["stream"])
                for line in chunk["stream"].splitlines():
                    if _STEP_FROM.match(line) and last_step_image:
                        if not cached:
                            stages.append(last_step_image)  # a stage ended: its last step's image is its result
                        last_step_image = None
                    elif line.strip() == "---> Using cache":
                        cached = True
                    elif found := _STEP_IMAGE.match(line):
                        last_step_image = found[1]
                    elif line.startswith("Step "):
                        cached = False
            if "error" in chunk:
                raise BuildError(f"docker build failed: {chunk['error'].strip()}")
            aux = chunk.get("aux") or {}
            if "ID" in aux:
                image_id = aux["ID"]
    except docker.errors.APIError as e:
        raise BuildError(f"docker build failed: {e.explanation or e}") from e
    if image_id is None:
        image_id = local_id(client.images.get(tag))
    return image_id, stages


def remove_stages(client: docker.DockerClient, stages: list[str], *, keep: set[str],
                   say: Callable[[str], None]) -> list[str]:
    """Remove the throwaway stages this build made (by id; their untagged parents go with them)."""
    removed = []
    for short in stages:
        try:
            stage = client.images.get(short)
            if local_id(stage) in keep or stage.tags:
                continue
            client.images.remove(local_id(stage), noprune=False)
            removed.append(local_id(stage))
        except docker.errors.ImageNotFound:
            continue
        except docker.errors.APIError as e:  # e.g. another build uses it right now: it is not ours to force
            say(f"patchset: left the compile stage {short}: {e.explanation or e}\n")
    return removed


def untag(client: docker.DockerClient, tag: str, say: Callable[[str], None]) -> None:
    """Remove ``tag`` after a failed build; a failure to do so is said, never raised over the one that got here."""
    try:
        client.images.remove(tag)
    except docker.errors.APIError as e:
        say(f"patchset: could not remove {tag} after the failure: {e.explanation or e}\n")
