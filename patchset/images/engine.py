"""Reaching a Docker engine and reading files out of images, through the docker SDK only.

Everything that touches an image's filesystem goes through :class:`ImageFiles`: a container is
*created* from the image (never started) and files are copied out of it with the archive API.
That reads exactly the bytes the image holds, runs none of the image's code and works the same
for an image built here, pulled from a registry, or committed by hand.

Finding where vLLM lives needs one short-lived process: the image's own Python answers
``importlib.util.find_spec("vllm")`` without importing vLLM, with networking disabled. The
version is then read from the ``vllm-*.dist-info/METADATA`` file itself, never from labels.
"""

from __future__ import annotations

import io
import json
import os
import posixpath
import tarfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

import docker
import docker.errors
from docker.models.containers import Container
from docker.models.images import Image

from patchset.errors import PatchsetError
from patchset.images.containers import INSPECT_LABEL, ContainerFailed, inspect_labels, run_once, sweep

#: The SDK's names for the engine, its images and its refusals, for modules outside this package to hold them by.
Client = docker.DockerClient
APIError = docker.errors.APIError

#: What to do when no engine answers (every verb that needs Docker says the same).
ENGINE_HINT = "start dockerd (.ci/docker.sh) or set DOCKER_HOST"

#: Sentinel entrypoint of the inspection containers: they are created, read and removed, never
#: started, so the program does not have to exist in the image.
_NEVER_STARTED = ["/patchset-inspect-never-started"]

#: Asked of the image's Python; imports nothing from vLLM.
_LOCATE_SCRIPT = r"""
import importlib.util, json, os, sys
spec = importlib.util.find_spec("vllm")
if spec is None or not spec.submodule_search_locations:
    print(json.dumps({"error": "vllm is not importable"})); sys.exit(0)
pkg = os.path.realpath(list(spec.submodule_search_locations)[0])
site = os.path.dirname(pkg)
infos = sorted(n for n in os.listdir(site)
               if n.lower().startswith("vllm-") and n.endswith((".dist-info", ".egg-info")))
print(json.dumps({"package": pkg, "site": site, "dist_infos": infos,
                  "python": "%d.%d" % sys.version_info[:2],
                  "pytest": importlib.util.find_spec("pytest") is not None}))
"""


class ImageError(PatchsetError):
    """Docker could not give what was asked: bad input or environment (exit 2), never a traceback."""


class EngineUnavailable(ImageError):
    """No Docker engine answers (not installed, not running, or no permission on its socket)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, hint=ENGINE_HINT)


class ImageNotFound(ImageError):
    """The image is neither local nor pullable."""


class VllmNotFound(ImageError):
    """The image holds no importable vLLM package."""


def connect(timeout: int = 600) -> docker.DockerClient:
    """A client for the engine named by ``DOCKER_HOST`` (or the default socket), known to answer."""
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except docker.errors.DockerException as exc:
        raise EngineUnavailable(f"no Docker engine answers: {exc}") from exc
    except OSError as exc:  # e.g. a socket that exists but nobody listens on
        raise EngineUnavailable(f"no Docker engine answers: {exc}") from exc
    return client


def get_image(client: docker.DockerClient, ref: str, *, pull: bool = True) -> Image:
    """The local image ``ref``; pulled first when it is not local and ``pull`` is set."""
    try:
        return client.images.get(ref)
    except docker.errors.ImageNotFound:
        if not pull:
            raise ImageNotFound(f"{ref}: no such local image") from None
    except docker.errors.APIError as exc:
        raise ImageNotFound(f"{ref}: {exc.explanation or exc}") from exc
    repository, tag = split_reference(ref)
    try:
        return client.images.pull(repository, tag=tag)
    except docker.errors.APIError as exc:
        raise ImageNotFound(f"{ref}: not local, and pulling failed: {exc.explanation or exc}") from exc


def pull(client: docker.DockerClient, ref: str) -> None:
    """Fetch ``ref`` from its registry, even when the engine has an image of that name."""
    repository, tag = split_reference(ref)
    client.images.pull(repository, tag=tag)


def split_reference(ref: str) -> tuple[str, str | None]:
    """``registry:5000/a/b:tag`` → (``registry:5000/a/b``, ``tag``); digests stay in the name."""
    if "@" in ref:
        return ref, None
    slash = ref.rfind("/")
    colon = ref.rfind(":")
    if colon > slash:
        return ref[:colon], ref[colon + 1 :]
    return ref, "latest"


def image_digest(image: Image) -> str:
    """The content digest a registry knows the image by, else its local image id."""
    for repo_digest in image.attrs.get("RepoDigests") or []:
        return str(repo_digest).split("@", 1)[1]
    return local_id(image)


def image_env(image: Image) -> dict[str, str]:
    """The image's own environment (``ENV``) and labels, labels first: what its definition says it is."""
    config = image.attrs.get("Config") or {}
    out = {str(k): str(v) for k, v in (config.get("Labels") or {}).items()}
    for item in config.get("Env") or []:
        name, _, value = str(item).partition("=")
        out[name] = value
    return out


def local_id(image: Image) -> str:
    """The local image id (``sha256:...``): every image the engine describes has one."""
    return str(image.attrs["Id"])


class ImageFiles:
    """Read-only access to an image's filesystem (``with ImageFiles(client, image) as files``)."""

    def __init__(self, client: docker.DockerClient, image: Image | str):
        self.client = client
        self.image = image if isinstance(image, Image) else get_image(client, image)
        self._container: Container | None = None
        self._modes: dict[str, int] = {}

    def __enter__(self) -> ImageFiles:
        sweep(self.client, INSPECT_LABEL)  # what a killed run left behind
        self._container = self.client.containers.create(
            self.image, entrypoint=_NEVER_STARTED, network_disabled=True, labels=inspect_labels()
        )
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._container is not None:
            self._container.remove(force=True)
            self._container = None

    def read(self, path: str, *, _depth: int = 0) -> bytes | None:
        """The bytes of the regular file at absolute ``path``; ``None`` when there is none."""
        assert self._container is not None, "use ImageFiles as a context manager"
        try:
            stream, _stat = self._container.get_archive(path)
        except docker.errors.NotFound:
            return None
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream)), mode="r|") as tar:
            for member in tar:
                if member.issym() and _depth < 8:
                    target = posixpath.normpath(posixpath.join(posixpath.dirname(path), member.linkname))
                    return self.read(target, _depth=_depth + 1)
                if not member.isfile():
                    return None
                handle = tar.extractfile(member)
                if handle is None:
                    return None
                self._modes[path] = member.mode & 0o7777
                return handle.read()
        return None

    def mode(self, path: str) -> int | None:
        """Permission bits of the file at ``path`` (after :meth:`read`, or read now)."""
        if path not in self._modes:
            self.read(path)
        return self._modes.get(path)

    def locate_vllm(self) -> VllmInstall:
        return locate_vllm(self.client, self.image, self)


@dataclass(frozen=True)
class VllmInstall:
    """Where an image holds vLLM, and which release its metadata says it is."""

    site: str  # the site-packages directory holding the ``vllm`` package
    version: str  # from METADATA's ``Version:``
    metadata_path: str
    python: str  # the image Python's major.minor, for bytecode paths
    python_executable: str = "python3"  # what answered on the image's PATH
    has_pytest: bool = False

    def path_of(self, repo_path: str) -> str:
        """Absolute in-image path of a repository-layout path (``vllm/...``)."""
        return posixpath.join(self.site, repo_path)


def locate_vllm(client: docker.DockerClient, image: Image, files: ImageFiles) -> VllmInstall:
    found = _ask_image_python(client, image)
    if "error" in found:
        raise VllmNotFound(f"{_name(image)}: {found['error']}")
    for info in found["dist_infos"]:
        metadata_path = posixpath.join(found["site"], info, "METADATA" if info.endswith(".dist-info") else "PKG-INFO")
        raw = files.read(metadata_path)
        if raw is None:
            continue
        headers = HeaderParser().parsestr(raw.decode("utf-8", "replace"), headersonly=True)
        if (headers.get("Name") or "").lower() == "vllm" and headers.get("Version"):
            return VllmInstall(found["site"], headers["Version"], metadata_path, found["python"], found["executable"],
                               bool(found.get("pytest")))
    raise VllmNotFound(f"{_name(image)}: vllm package at {found['package']} has no readable dist-info METADATA")


def _ask_image_python(client: docker.DockerClient, image: Image) -> dict[str, Any]:
    last_error = ""
    for python in ("python3", "python"):
        try:
            status, output, errors = run_once(client, image, [python, "-c", _LOCATE_SCRIPT], timeout=120)
        except ContainerFailed as exc:  # e.g. the interpreter is not in the image
            last_error = str(exc)
            continue
        if status == 0 and output:
            return {**json.loads(output.splitlines()[-1]), "executable": python}
        last_error = errors[-500:]
    raise VllmNotFound(f"{_name(image)}: no Python in the image could locate vllm ({last_error})")


def _name(image: Image) -> str:
    return (image.tags or [image.short_id])[0]


# --- writing into images -------------------------------------------------------------------------


def commit(container: Container, image: Image, tag: str, changes: Sequence[str] = ()) -> Image:
    """Commit ``container`` (made from ``image``) as ``tag``, keeping ``image``'s entrypoint and command.

    A container created to receive files has its own entrypoint; committing it as is would make
    that the new image's. ``changes`` (Dockerfile instructions) apply after the restored ones.
    """
    config = image.attrs.get("Config") or {}
    restore = [f"ENTRYPOINT {json.dumps(config.get('Entrypoint') or [])}",
               f"CMD {json.dumps(config.get('Cmd') or [])}"]
    repository, version_tag = split_reference(tag)
    return container.commit(repository=repository, tag=version_tag, changes=[*restore, *changes])



def tar_stream(members: Iterable[tuple[str, Path | bytes]], *, chunk: int = 1 << 20) -> Iterator[bytes]:
    """A tar archive of ``(arcname, file-or-bytes)`` pairs, produced lazily.

    A generator makes docker-py send the body chunked, so a multi-hundred-megabyte tree streams
    into the engine without being staged in memory or in a temporary file.
    """
    read_end, write_end = os.pipe()

    def produce() -> None:
        with os.fdopen(write_end, "wb") as sink, \
                tarfile.open(fileobj=sink, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            for arcname, source in members:
                if isinstance(source, bytes):
                    info = tarfile.TarInfo(arcname)
                    info.size = len(source)
                    info.mode = 0o644
                    tar.addfile(info, io.BytesIO(source))
                else:
                    tar.add(str(source), arcname=arcname, recursive=False)

    errors: list[BaseException] = []

    def run() -> None:
        try:
            produce()
        except BaseException as exc:  # surfaced by the consumer below
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    with os.fdopen(read_end, "rb") as source:
        while block := source.read(chunk):
            yield block
    thread.join()
    if errors:
        raise errors[0]


def tree_members(root: Path, prefix: str = "", *, skip: Iterable[str] = ()) -> Iterator[tuple[str, Path]]:
    """``(arcname, path)`` for ``root`` and everything under it, directories before their contents."""
    skipped = set(skip)
    for directory, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(directory, root)
        if rel == ".":
            dirnames[:] = sorted(d for d in dirnames if d not in skipped)
            filenames = [f for f in filenames if f not in skipped]
        else:
            dirnames.sort()
        base = prefix if rel == "." else posixpath.join(prefix, rel.replace(os.sep, "/"))
        if rel != ".":
            yield base, Path(directory)
        for name in sorted(filenames) + [d for d in dirnames if os.path.islink(os.path.join(directory, d))]:
            yield posixpath.join(base, name), Path(directory, name)
