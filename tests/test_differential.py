"""The engine against real GNU ``patch -p1 -F0`` and ``git apply`` on seeded cases from real vLLM files.

1,000 cases by default; ``make fuzz-diff N=30000 SEED=7`` (or PATCHSET_FUZZ_N / PATCHSET_FUZZ_SEED) for
more. A failure prints the class counts and each bad case: the file, the patch, what differed.
"""

from __future__ import annotations

import os
import shutil

import pytest
from differential import Case, classify, generate, misordered_cases, planted, real_files, run

from patchset.core import engine
from patchset.core.patchfile import parse_patch

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
    case = GLUE
    cls, _ = classify(case, tmp_path)
    assert cls == "agree: refused (anchoring refused)"


GLUE = Case(0, "end-of-file", "m.py", "m.py", b"".join(f"l{i} = {i}\n".encode() for i in range(1, 6)),
            b"diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,4 +1,4 @@\n l1 = 1\n l2 = 2\n l3 = 3\n"
            b"-l4 = 4\n+l4 = 44\n\\ No newline at end of file\n", 3)


@needs_tools
def test_a_planted_engine_that_places_a_hunk_anywhere_is_called_bad(tmp_path):
    """The glue case through an engine that places a hunk wherever its old lines stand (no end anchoring,
    no check for a joined line, no asking where each tool would put it): it writes the glued line. (The
    planted tests read the engine's source: `make mutate`, whose mutants rewrite it, leaves them out.)"""
    loose = planted(engine, ("self.end = (not self.zero and trail < lead) or self.unterminated or self.whole",
                             "self.end = self.whole"),
                    ("if (head or tail or self.unterminated) and (", "if False and ("),
                    ("disagree = self.tools_disagree(pick, None if self.start or self.end else found)",
                     'disagree = ""'))
    assert loose.apply_patch({"m.py": GLUE.tree}, parse_patch(GLUE.patch, name="m.patch")).files["m.py"].endswith(
        b"l4 = 44l5 = 5\n")
    cls, detail = classify(GLUE, tmp_path, loose.apply_patch)
    assert cls == "BAD: hunk placed where GNU patch fails it" and "GNU patch None" in detail


#: An engine that looks for a hunk only after the end of the previous one (issue 41's planted bug 3).
AFTER_THE_PREVIOUS_ONLY = ("self.buf.find(self.old, 0, self.start, self.end)",
                           "self.buf.find(self.old, self.floor, self.start, self.end)")


#: Each hand-written case's class through the engine, and through an engine that searches only after the
#: previous hunk.
MISORDERED = {
    "out-of-order": ("overlap refused (git apply applies)",
                     "BAD: refused for line endings this case does not have, where a tool applies"),
    "overlapping": ("overlap refused (GNU patch applies)",
                    "BAD: hunk refused, no named reason, where GNU patch places it"),
    "before-and-after": ("ambiguity refused (both tools apply)", "BAD: other bytes than a tool"),
}


@needs_tools
@pytest.mark.parametrize("case", [pytest.param(c, id=c.kind) for c in misordered_cases()])
def test_hunks_out_of_order_or_overlapping_are_refused_by_name(case, tmp_path):
    """The generator never writes misordered hunks (its diffs come from difflib): these hand-written ones
    are refused by name."""
    assert classify(case, tmp_path) == (MISORDERED[case.kind][0], "")


@needs_tools
@pytest.mark.parametrize("case", [pytest.param(c, id=c.kind) for c in misordered_cases()])
def test_a_planted_engine_that_searches_only_after_the_previous_hunk_is_called_bad(case, tmp_path):
    assert classify(case, tmp_path, planted(engine, AFTER_THE_PREVIOUS_ONLY).apply_patch)[0] == MISORDERED[case.kind][1]
