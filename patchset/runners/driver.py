"""Before a GPU container starts: can the host's NVIDIA driver run the image's CUDA?

A CUDA M.x image needs a driver of at least the branch NVIDIA's minor-version compatibility names
for M (:data:`MINIMUM`). Older data-centre drivers of some branches can still run it through CUDA
forward compatibility (the image's ``cuda-compat`` libraries), which vLLM's images switch on with
``VLLM_ENABLE_CUDA_COMPATIBILITY=1`` (they ship ``=0``). So, per run with ``--gpus``: the driver is
read on the host (``nvidia-smi``, else ``nvidia-container-cli info``), the CUDA version from the
image's own ``CUDA_VERSION``, and :func:`preflight` says go, go with the switch, or no and why.

Without this, a CUDA 13 image on an R570 host fails every test with CUDA error 803 (or the engine
refuses to start it), and the report says only that the toolkit may be missing.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field

#: CUDA major → the oldest driver that runs every CUDA M.x release (NVIDIA's CUDA compatibility guide).
MINIMUM = {11: "450.80.02", 12: "525.60.13", 13: "580.65.06"}
#: CUDA major → the older driver branches CUDA forward compatibility supports for it (data-centre GPUs).
FORWARD = {12: (470, 535), 13: (535, 570)}
SWITCH = "VLLM_ENABLE_CUDA_COMPATIBILITY"


@dataclass
class Preflight:
    """What the check decided: the container's extra environment, or why the run must not start."""

    note: str  # one line for the progress output
    env: dict[str, str] = field(default_factory=dict)
    refuse: str | None = None
    hint: str | None = None
    warning: str | None = None  # for the report: what could not be checked


def version(text: str) -> tuple[int, ...] | None:
    """``580.65.06`` → (580, 65, 6); None for anything else."""
    found = re.match(r"\s*(\d+(?:\.\d+)*)", text or "")
    return tuple(int(p) for p in found[1].split(".")) if found else None


def host_driver(timeout: float = 30) -> str | None:
    """The host's NVIDIA driver version, from ``nvidia-smi`` or the NVIDIA container CLI; None when neither says."""
    asks = (["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            ["nvidia-container-cli", "info"])
    for cmd in asks:
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode != 0:
            continue
        if cmd[0] == "nvidia-smi":
            first = next((line.strip() for line in done.stdout.splitlines() if line.strip()), "")
            if version(first):
                return first
        else:
            found = re.search(r"^NVRM version:\s*(\S+)", done.stdout, re.M)
            if found and version(found[1]):
                return found[1]
    return None


def preflight(driver: str | None, image: Mapping[str, str]) -> Preflight:
    """Whether a driver of version ``driver`` runs an image whose environment and labels are ``image``."""
    cuda_text = image.get("CUDA_VERSION", "")
    cuda = version(cuda_text)
    if cuda is None:
        return Preflight("driver check: the image names no CUDA_VERSION; nothing to check")
    if driver is None or version(driver) is None:
        why = (f"the host's NVIDIA driver could not be read (nvidia-smi, nvidia-container-cli): whether it runs "
               f"the image's CUDA {cuda_text} was not checked")
        return Preflight("driver check: " + why, warning=why)
    have = version(driver)
    assert have is not None
    need = MINIMUM.get(cuda[0])
    if need is None or version(need) is None:
        return Preflight(f"driver check: driver {driver}; CUDA {cuda_text} is not one this check knows",
                         warning=f"CUDA {cuda_text}: no driver minimum known to patchset; not checked")
    if have >= (version(need) or ()):
        return Preflight(f"driver check: driver {driver} runs CUDA {cuda_text} (needs {need} or newer)")
    branch = have[0]
    if branch in FORWARD.get(cuda[0], ()):
        if image.get(SWITCH, "").strip().lower() in ("1", "true", "yes"):
            return Preflight(f"driver check: driver {driver} runs CUDA {cuda_text} through forward "
                             f"compatibility, which the image switches on itself")
        if SWITCH in image:
            return Preflight(f"driver check: driver {driver} is older than CUDA {cuda_text} needs "
                             f"({need}); R{branch} runs it through CUDA forward compatibility: "
                             f"{SWITCH}=1 (data-centre GPUs only)", env={SWITCH: "1"})
        return Preflight("", refuse=f"the host's driver {driver} is older than the image's CUDA {cuda_text} "
                         f"needs ({need} or newer), and the image has no {SWITCH} switch for "
                         f"CUDA forward compatibility",
                         hint=f"update the runner's driver to {need} or newer")
    return Preflight("", refuse=f"the host's driver {driver} is older than the image's CUDA {cuda_text} needs "
                     f"({need} or newer), and CUDA forward compatibility does not cover R{branch}"
                     + (f" (it covers R{', R'.join(map(str, FORWARD[cuda[0]]))})" if cuda[0] in FORWARD else ""),
                     hint=f"update the runner's driver to {need} or newer")
