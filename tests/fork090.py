"""A fork's repository-layout series for vLLM 0.9.0, made of exact edits of the real 0.9.0 sdist.

0.9.0 predates the ``manylinux_2_28`` wheels (its wheel is ``cp38-abi3-manylinux1_x86_64``), and
its fork patches reach beside the package, as real forks' do:

| patch         | files                                       | in a wheel or site-packages          |
| ------------- | ------------------------------------------- | ------------------------------------ |
| kernel-guard  | csrc/cache_kernels.cu, vllm/_custom_ops.py  | applies; the kernel (compiled) is not-in-tree |
| deps-regex    | requirements/common.txt, docker/Dockerfile  | not-in-tree                          |
| sched-comment | vllm/v1/core/sched/scheduler.py, its test   | applies; the test is not-in-tree     |
| config-test   | tests/test_config.py                        | not-in-tree                          |

Each anchor must occur once in its file, or building the series fails.
"""

from __future__ import annotations

from pathlib import Path

from helpers import udiff, write_manifest

VERSION = "0.9.0"
WHEEL = "vllm-0.9.0-cp38-abi3-manylinux1_x86_64.whl"
KERNEL = "csrc/cache_kernels.cu"
OPS = "vllm/_custom_ops.py"
REQS = "requirements/common.txt"
DOCKERFILE = "docker/Dockerfile"
SCHED = "vllm/v1/core/sched/scheduler.py"
SCHED_TEST = "tests/v1/core/test_scheduler.py"
CONFIG_TEST = "tests/test_config.py"

#: patch id -> [(file, anchor, replacement)]
EDITS: dict[str, list[tuple[str, str, str]]] = {
    "kernel-guard": [
        (KERNEL, "    // Padding token that should be ignored.\n",
         "    // Padding token that should be ignored (a fork guards it twice).\n"),
        (OPS, "    torch.ops._C_cache_ops.reshape_and_cache(key, value, key_cache,\n",
         "    # the kernel skips padding slots (slot < 0)\n"
         "    torch.ops._C_cache_ops.reshape_and_cache(key, value, key_cache,\n"),
    ],
    "deps-regex": [
        (REQS, "regex # Replace re for higher-performance regex matching\n",
         "regex >= 2024.4.16 # Replace re for higher-performance regex matching\n"),
        (DOCKERFILE, "ARG PYTHON_VERSION=3.12\n", "ARG PYTHON_VERSION=3.12\nARG FORK_BUILD=1\n"),
    ],
    "sched-comment": [
        (SCHED, "        self.max_num_running_reqs = self.scheduler_config.max_num_seqs\n",
         "        # a fork caps running requests at max_num_seqs, as upstream does\n"
         "        self.max_num_running_reqs = self.scheduler_config.max_num_seqs\n"),
        (SCHED_TEST, "def test_add_requests():\n", "def test_add_requests():  # fork: unchanged behaviour\n"),
    ],
    "config-test": [
        (CONFIG_TEST, "def test_config(test_config, expected_error):\n",
         "def test_config(test_config, expected_error):  # fork: also run on CPU\n"),
    ],
}


def write_series(project: Path, sdist_root: Path) -> Path:
    """Write ``recipes/ID/vllm-0.9.0.patch`` for each patch and ``patches.yaml``; return the manifest."""
    entries = []
    for pid, edits in EDITS.items():
        diff = ""
        for path, anchor, replacement in edits:
            before = (sdist_root / path).read_text()
            count = before.count(anchor)
            if path == DOCKERFILE:  # two build stages declare it: edit the first only
                count = min(count, 1)
            assert count == 1, f"{path}: anchor found {before.count(anchor)} times: {anchor!r}"
            diff += udiff(path, before, before.replace(anchor, replacement, 1))
        patch = project / "recipes" / pid / "vllm-0.9.0.patch"
        patch.parent.mkdir(parents=True, exist_ok=True)
        patch.write_text(f"Description: {pid}\nOrigin: fork\n---\n{diff}")
        entries.append(f'  - {{id: {pid}, releases: "=={VERSION}", patch: recipes/{pid}/vllm-0.9.0.patch}}\n')
    return write_manifest(project, f'schema: 1\ntargets: {{"{VERSION}": {{}}}}\npatches:\n' + "".join(entries))
