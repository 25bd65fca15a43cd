"""A fork's series made on real vLLM 0.10.2 code, that 0.11.2 moved, split and stopped importing.

Each patch is an exact edit of a real 0.10.2 file; what 0.11.2 (a real release)
did to its lines:

| patch            | 0.10.2 → 0.11.2                                                  | port      |
| ---------------- | ---------------------------------------------------------------- | --------- |
| torch-dtype      | `set_default_torch_dtype` moved from model_loader/utils.py to     | ported    |
|                  | vllm/utils/torch_utils.py (the old module stays)                 |           |
| transformers     | models/transformers.py split into transformers/base.py and        | ported    |
|                  | transformers/multimodal.py (the old file is gone)                |           |
| kept-names       | v1/sample/metadata.py no longer imports Optional; the patch also | conflict  |
|                  | imports set_default_torch_dtype from its 0.10.2 home             |           |
| registry-and-old | one hunk in models/registry.py, one in models/transformers.py,    | conflict  |
|                  | a hunk whose lines 0.11.2 rewrote                                |           |
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from helpers import udiff, write_manifest, write_patch

HEADER = "Description: {id}\nOrigin: fork\nLast-Update: 2026-01-01\n---\n"
UTILS = "vllm/model_executor/model_loader/utils.py"
TRANSFORMERS = "vllm/model_executor/models/transformers.py"
METADATA = "vllm/v1/sample/metadata.py"
REGISTRY = "vllm/model_executor/models/registry.py"


def _edit(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"expected one {old!r}"
    return text.replace(old, new)


def patches(read: Callable[[str], str]) -> dict[str, str]:
    """id -> unified diff, made from 0.10.2's files (``read(path)``)."""
    utils = read(UTILS)
    dtype = udiff(UTILS, utils, _edit(utils, "    torch.set_default_dtype(dtype)\n    yield\n"
                                      "    torch.set_default_dtype(old_dtype)\n",
                                      "    torch.set_default_dtype(dtype)\n    try:\n        yield\n    finally:\n"
                                      "        torch.set_default_dtype(old_dtype)\n"), n=2)
    tf = read(TRANSFORMERS)
    tf_new = _edit(tf, "            if start_layer <= i and i < end_layer:\n                continue\n",
                   "            if start_layer <= i < end_layer:  # fork: chained\n                continue\n")
    tf_new = _edit(tf_new, "        if split_sizes:\n            chunked_mm_positions",
                   "        if split_sizes:  # fork: an empty split is no image\n            chunked_mm_positions")
    meta = read(METADATA)
    meta_new = _edit(meta, "from vllm.v1.sample.logits_processor import LogitsProcessors\n",
                     "from vllm.model_executor.model_loader.utils import set_default_torch_dtype\n"
                     "from vllm.v1.sample.logits_processor import LogitsProcessors\n")
    meta_new = _edit(meta_new, "    repetition_penalties: torch.Tensor\n",
                     "    repetition_penalties: torch.Tensor\n    min_p: Optional[torch.Tensor] = None  # fork\n")
    reg = read(REGISTRY)
    reg_new = _edit(reg, '    "SmolLM3ForCausalLM": ("transformers", "TransformersForCausalLM"),\n',
                    '    "SmolLM3ForCausalLM": ("transformers", "TransformersForCausalLM"),  # fork\n')
    return {"torch-dtype": dtype, "transformers": udiff(TRANSFORMERS, tf, tf_new),
            "kept-names": udiff(METADATA, meta, meta_new),
            "registry-and-old": udiff(REGISTRY, reg, reg_new)
            + udiff(TRANSFORMERS, tf, _edit(tf, "        # Module list\n", "        # Module list (fork)\n"))}


def build(root: Path, read: Callable[[str], str]) -> Path:
    """recipes/ and patches.yaml under ``root``, targeting 0.10.2 only."""
    entries = []
    for pid, diff in patches(read).items():
        write_patch(root, f"recipes/{pid}/vllm-0.10.patch", diff, header=HEADER.format(id=pid))
        entries.append(f"  - id: {pid}\n    origin: fork\n    releases: \">=0.10.2\"\n"
                       f"    patch: recipes/{pid}/vllm-0.10.patch\n")
    return write_manifest(root, "schema: 1\ntargets:\n  \"0.10.2\": {}\npatches:\n" + "".join(entries))
