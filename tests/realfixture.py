"""A fork's series made of real vLLM code, for porting 0.28.0 → 0.29.0 → 0.30.0.

Five fork patches are written here as exact edits of real 0.28.0 files (each
anchor must occur once, or building fails); three are this repository's own
0.28 recipes. What the real releases did to their lines:

| patch               | 0.28.0 → 0.29.0                             | 0.29.0 → 0.30.0                               |
| ------------------- | ------------------------------------------- | --------------------------------------------- |
| outputs-doc         | lines moved (+6): carried                    | untouched: carried                            |
| request-placeholder | context rewritten upstream: ported           | untouched: carried                            |
| request-high-water  | needs request-placeholder's line: carried    | carried                                       |
| sampling-extra-args | offsets: carried                             | 2 of 3 hunks upstream: ported (partly)        |
| watermark           | carried                                      | upstream: retired                             |
| recurrent-boundary  | test import conflicts; refreshed by hand     | upstream: retired                             |
| mtp-eagle           | comes after recurrent-boundary: blocked      | upstream: retired                             |
| logger-error-once   | untouched: carried                           | upstream wrote its own: conflict              |
"""

from __future__ import annotations

import shutil
from pathlib import Path

from helpers import udiff

REPO = Path(__file__).resolve().parent.parent
HEADER = "Description: {title}\nOrigin: fork\nLast-Update: 2026-11-01\n---\n"

EXTRA_ARGS_CALL = "        if self.extra_args:\n            self._verify_extra_args()\n"
EXTRA_ARGS_METHOD = '''    def _verify_extra_args(self) -> None:
        # JSON accepts arbitrary integers, but the engine's MessagePack
        # transport only supports signed/unsigned 64-bit integers.
        pending: list[Any] = [self.extra_args]
        visited: set[int] = set()
        while pending:
            value = pending.pop()
            if isinstance(value, int) and not -(2**63) <= value < 2**64:
                raise VLLMValidationError(
                    "extra_args integers must be between -2**63 and 2**64 - 1.",
                    parameter="extra_args",
                )
            if isinstance(value, (dict, list, tuple)) and id(value) not in visited:
                visited.add(id(value))
                if isinstance(value, dict):
                    pending.extend(value.keys())
                    pending.extend(value.values())
                else:
                    pending.extend(value)

'''
ERROR_ONCE = '''@lru_cache
def _print_error_once(logger: Logger, msg: str, *args: Hashable) -> None:
    # fork: errors deduplicated like warnings (our dashboards count them)
    logger.error(msg, *args, stacklevel=3)


'''
PLACEHOLDERS = "        self.num_output_placeholders = 0\n"


def _edit(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:
        raise AssertionError(f"anchor occurs {text.count(old)} times, not once: {old!r}")
    return text.replace(old, new)


def fork_patches(read) -> dict[str, tuple[str, str, str]]:
    """id -> (title, path, unified diff) for the fork's own patches, from 0.28.0's files (``read(path)``)."""
    out = {}
    path = "vllm/outputs.py"
    old = read(path)
    new = _edit(old, "        finished: Whether the whole request is finished.\n",
                "        finished: Whether the whole request is finished (fork: see docs/outputs.md).\n")
    out["outputs-doc"] = ("Document the fork's finished semantics", path, udiff(path, old, new))
    path = "vllm/v1/request.py"
    old = read(path)
    mid = _edit(old, PLACEHOLDERS, PLACEHOLDERS[:-1] + "  # fork: reset per step by the scheduler\n")
    out["request-placeholder"] = ("Say who resets the placeholders", path, udiff(path, old, mid))
    new = _edit(mid, "# fork: reset per step by the scheduler\n",
                "# fork: reset per step by the scheduler\n        self.fork_placeholder_high_water = 0\n")
    out["request-high-water"] = ("Track the placeholder high-water mark", path, udiff(path, mid, new))
    path = "vllm/sampling_params.py"
    old = read(path)
    new = _edit(old, '        _verify_num_sequences(self.n, "n")\n',
                '        _verify_num_sequences(self.n, "n")\n' + EXTRA_ARGS_CALL)
    new = _edit(new, "    def _verify_greedy_sampling(self) -> None:\n",
                EXTRA_ARGS_METHOD + "    def _verify_greedy_sampling(self) -> None:\n")
    new = _edit(new, "                    # Fall back to guidance by default.\n",
                "                    # Fall back to guidance by default (fork: pinned llguidance).\n")
    out["sampling-extra-args"] = ("Backport the extra_args integer check, plus a fork note", path,
                                  udiff(path, old, new))
    path = "vllm/logger.py"
    old = read(path)
    new = _edit(old, 'LogScope = Literal["process", "global", "local"]\n',
                ERROR_ONCE + 'LogScope = Literal["process", "global", "local"]\n')
    out["logger-error-once"] = ("An error_once helper for the fork", path, udiff(path, old, new))
    return out


REAL = {  # this repository's recipes, as they stood for 0.28.0
    "watermark": ("recipes/offload-finished-watermark/fix.patch", "offload-finished-watermark", []),
    "recurrent-boundary": ("recipes/offload-recurrent-load-boundary/vllm-0.28.patch",
                           "offload-recurrent-load-boundary", []),
    "mtp-eagle": ("recipes/offload-mtp-eagle-serve/vllm-0.28.patch", "offload-mtp-eagle-serve",
                  ["watermark", "recurrent-boundary"]),
}
PROBES = {
    "watermark": "num_tokens_after_batch = max(req.num_prompt_tokens, req.num_tokens - 1)",
    "recurrent-boundary": "for i in range(first_fresh_gpu_block_idx, num_gpu_blocks):",
    "mtp-eagle": "if group_config.is_eagle_group and is_decoding and not self.req.is_finished():",
}
SCHED = "vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py"
ORDER = ["outputs-doc", "request-placeholder", "request-high-water", "sampling-extra-args", "watermark",
         "recurrent-boundary", "mtp-eagle", "logger-error-once"]


def build(root: Path, read) -> Path:
    """The fork's project under ``root``: recipes/ and patches.yaml targeting 0.28.0 only."""
    fork = fork_patches(read)
    entries = []
    for pid in ORDER:
        folder = root / "recipes" / pid
        folder.mkdir(parents=True)
        if pid in fork:
            title, _, diff = fork[pid]
            (folder / "vllm-0.28.patch").write_text(HEADER.format(title=title) + diff)
            after = ["request-placeholder"] if pid == "request-high-water" else []
            entry = [f"  - id: {pid}", f'    title: "{title}"', "    origin: fork", '    releases: ">=0.28.0"']
            entry.append(f"    patch: recipes/{pid}/vllm-0.28.patch" if pid == "outputs-doc" else
                         f'    patch:\n      "<0.29": recipes/{pid}/vllm-0.28.patch')
        else:
            src, _, after = REAL[pid]
            name = Path(src).name
            shutil.copy(REPO / src, folder / name)
            entry = [f"  - id: {pid}", "    origin: backport", '    releases: ">=0.28.0,<0.30.0"',
                     f"    patch: recipes/{pid}/{name}" if name == "fix.patch" else
                     f'    patch:\n      "<0.29": recipes/{pid}/{name}',
                     f'    present: {{file: {SCHED}, contains: "{PROBES[pid]}"}}']
        if after:
            entry.append(f"    after: [{', '.join(after)}]")
        entries.append("\n".join(entry))
    manifest = root / "patches.yaml"
    manifest.write_text("# A fork's series (real vLLM code)\nschema: 1\nupstream: {pypi: vllm}\ntargets:\n"
                        '  "0.28.0": {image: "vllm/vllm-openai:v0.28.0"}  # the release we run\npatches:\n'
                        + "\n\n".join(entries) + "\n")
    return manifest
