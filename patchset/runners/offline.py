"""What upstream vLLM tests need to run with no network and no accelerator.

The offload tests build a ``ModelConfig`` for ``facebook/opt-125m`` and read
only its ``config.json``. It is shipped with patchset (``data/``, written
from the model's published configuration) and laid out as a Hugging Face
cache under a fresh ``HF_HOME`` with ``HF_HUB_OFFLINE=1``: nothing is
downloaded and no real cache is touched.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from patchset.runners import PLUGIN_DIR, junit_env

CONFIG_PREFIX = "hf-config."


def model_configs() -> dict[str, bytes]:
    """Shipped model configs by repo id (``facebook/opt-125m``)."""
    out = {}
    for f in sorted(PLUGIN_DIR.glob(CONFIG_PREFIX + "*.json")):
        repo = f.name[len(CONFIG_PREFIX):-len(".json")].replace("--", "/", 1)
        out[repo] = f.read_bytes()
    return out


def write_hf_home(hf_home: Path) -> Path:
    """An HF_HOME whose hub cache holds the shipped configs (refs/main -> snapshots/<rev>/config.json)."""
    for repo, data in model_configs().items():
        rev = hashlib.sha1(data).hexdigest()  # any stable 40-hex revision will do offline
        folder = hf_home / "hub" / ("models--" + repo.replace("/", "--"))
        (folder / "refs").mkdir(parents=True, exist_ok=True)
        (folder / "refs" / "main").write_text(rev)
        snap = folder / "snapshots" / rev
        snap.mkdir(parents=True, exist_ok=True)
        (snap / "config.json").write_bytes(data)
    return hf_home


def offline_env(hf_home: Path) -> dict[str, str]:
    """Hugging Face offline, reading the shipped configs: every runner and device, GPU containers included.

    A container has no network: without these each test that builds a ``ModelConfig`` retries the Hub
    until it gives up (96.6 s a test, measured on the image path, docs/records/images.md).
    """
    return {"HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def device_env(*, cpu: bool) -> dict[str, str]:
    """The device choice, the one thing a CPU run sets that a GPU run does not.

    VLLM_TARGET_DEVICE=cpu: otherwise vLLM picks no platform and refuses the
    hybrid KV cache manager many offload tests configure. The plugin's
    PATCHSET_SKIP_GLOBAL_CLEANUP skips the accelerator-only cleanup fixture.
    """
    return {"VLLM_TARGET_DEVICE": "cpu", **junit_env(skip_global_cleanup=True)} if cpu else \
        junit_env(skip_global_cleanup=False)


def cpu_env(hf_home: Path) -> dict[str, str]:
    """Environment for upstream tests on a CPU-only machine (see shared facts: without these 82 error)."""
    return {**offline_env(hf_home), **device_env(cpu=True)}
