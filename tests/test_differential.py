"""The engine against real GNU ``patch -p1 -F0`` and ``git apply`` on seeded cases from real vLLM files.

1,000 cases by default; ``make fuzz-diff N=30000 SEED=7`` (or PATCHSET_FUZZ_N / PATCHSET_FUZZ_SEED) for
more. A failure prints the class counts and each bad case: the file, the patch, what differed.
"""

from __future__ import annotations

import os
import shutil

import pytest
from differential import Case, classify, generate, real_files, run

N = int(os.environ.get("PATCHSET_FUZZ_N", "1000"))
SEED = int(os.environ.get("PATCHSET_FUZZ_SEED", "1"))

REACHED = ("agree: applies exactly", "agree: applies with offset", "agree: already-applied", "ambiguity refused",
           "anchoring refused", "line endings refused", "partial refused", "a CRLF patch read with its CRs stripped")

needs_tools = pytest.mark.skipif(shutil.which("patch") is None or shutil.which("git") is None,
                                 reason="GNU patch and git are needed")


@pytest.fixture(scope="module")
def vllm_root():
    from patchset.sources import open_source

    return open_source("pypi", "0.29.0").root


@pytest.mark.network
@needs_tools
def test_every_disagreement_with_gnu_patch_and_git_apply_is_an_intended_refusal(vllm_root):
    result = run(generate(real_files(vllm_root), vllm_root, SEED, N), keep_bad=5)
    print(f"\n{N} cases, seed {SEED}:\n{result.summary()}")
    assert sum(result.counts.values()) == N
    assert not result.bad, f"{result.summary()}\n\n" + "\n\n".join(result.bad)
    if N >= 1000:  # the perturbations reach what they are for, or the run proves little
        seen = " ".join(result.counts)
        for cls in REACHED:
            assert cls in seen, f"no case reached {cls!r}:\n{result.summary()}"


@needs_tools
def test_the_harness_calls_a_looser_verdict_bad(tmp_path):
    # The glue case of issue 7: an end-anchored hunk (it drops the final newline of l4) on a file
    # that goes on to l5. Both tools refuse; an engine placing it mid-file would write "l4 = 44l5 = 5".
    tree = b"".join(f"l{i} = {i}\n".encode() for i in range(1, 6))
    patch = (b"diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,4 +1,4 @@\n l1 = 1\n l2 = 2\n l3 = 3\n"
             b"-l4 = 4\n+l4 = 44\n\\ No newline at end of file\n")
    case = Case(0, "end-of-file", "m.py", "m.py", tree, patch, 3)
    cls, _ = classify(case, tmp_path)
    assert cls == "agree: refused (anchoring refused)"
