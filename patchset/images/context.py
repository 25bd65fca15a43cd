"""The build contexts ``patchset build`` sends to the engine, and the Dockerfile they carry.

A context is an in-memory tar: the Dockerfile, then only what the new layer holds. Every member
gets one mtime (:func:`build_time`: ``SOURCE_DATE_EPOCH`` when set), so under a fixed epoch the
layer is a function of its inputs alone.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import TYPE_CHECKING

from patchset.core import bytecode, provenance
from patchset.images import shipped
from patchset.images.engine import ImageError, VllmInstall

if TYPE_CHECKING:
    from patchset.core.manifest import Manifest

#: A fork's own image definition, relative to its manifest's folder; the package ships the default
#: at the same path under ``patchset/``.
DOCKERFILE = Path("images") / "vllm-patched" / "Dockerfile"

SBOM_DOCKERFILE = b"""\
# patchset build --sbom: the built image plus its CycloneDX SBOM, in one small layer of its own.
ARG BASE
FROM ${BASE}
COPY sbom/ /
"""


def build_time() -> int:
    """SOURCE_DATE_EPOCH (reproducible builds), else now: the labels' ``created`` and the layer's mtimes."""
    return int(provenance.record_time().timestamp())


def dockerfile_for(manifest: Manifest) -> bytes:
    """The image definition: the fork's own copy next to its manifest, else the one patchset ships."""
    own = manifest.base / DOCKERFILE
    if own.is_file():
        return own.read_bytes()
    default = shipped(*DOCKERFILE.parts[1:])
    if default.is_file():
        return default.read_bytes()
    raise ImageError(f"no image definition found (looked for {own} and {default} in the patchset package)",
                     hint="reinstall patchset: its wheel ships the Dockerfile")


def build_context(install: VllmInstall, changed: dict[str, bytes | None], modes: dict[str, int | None],
                  record: bytes, dockerfile: bytes, mtime: int | None = None) -> bytes:
    """Dockerfile + layer/<in-image path> for each written file and the provenance record."""
    # The written files' mtime is the build's time (or SOURCE_DATE_EPOCH, for reproducible layers).
    # The recompiled bytecode is hash-checked, so no mtime can make it pass for other source bytes.
    mtime = build_time() if mtime is None else mtime
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        def add(name: str, data: bytes, mode: int = 0o644) -> None:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, mtime
            tar.addfile(info, io.BytesIO(data))

        add("Dockerfile", dockerfile)
        add("patchset-bytecode.py", bytecode.script().encode())  # compiles and records the pycs in the image
        for path, content in sorted(changed.items()):
            if content is not None:
                add("layer" + install.path_of(path), content, modes.get(path) or 0o644)
        add("layer" + install.path_of(provenance.PROVENANCE_PATH), record)
    return buf.getvalue()


def sbom_context(document: bytes, path: str, mtime: int) -> bytes:
    """Dockerfile + sbom/<path>, every folder with the same mtime: the layer is a function of the SBOM."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        def add(name: str, data: bytes | None, mode: int) -> None:
            info = tarfile.TarInfo(name)
            info.mode, info.mtime = mode, mtime
            if data is None:
                info.type = tarfile.DIRTYPE
            else:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)

        add("Dockerfile", SBOM_DOCKERFILE, 0o644)
        parts = path.strip("/").split("/")
        for depth in range(1, len(parts)):
            add("sbom/" + "/".join(parts[:depth]), None, 0o755)
        add("sbom/" + "/".join(parts), document, 0o644)
    return buf.getvalue()
