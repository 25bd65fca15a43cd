"""The four bugs of issue 41, planted in a copy of the repository: each must fail the test written for it.

    python tests/mutation/planted.py [--workdir DIR]

Each bug is a small edit of one module that once passed every deterministic test. For each, a copy of
the tracked files gets the edit, and its tests run against the copy (``PYTHONPATH``); the run must
fail, and the test named for the bug must be among the failures. Prints one line per bug; exits 1 if
any bug passes. ``make mutate`` runs it first.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import copy_tree  # noqa: E402

#: (name, module, text as it is, text with the bug, the tests to run, the test that must fail)
BUGS = [
    ("constants left out of the bytecode comparison", "patchset/core/bytecode.py",
     """    consts = tuple(_shape(c) if isinstance(c, types.CodeType)
                   else (type(c).__name__, sorted(map(repr, c)) if isinstance(c, frozenset) else repr(c))
                   for c in code.co_consts)""",
     "    consts = tuple(_shape(c) for c in code.co_consts if isinstance(c, types.CodeType))",
     ["tests/test_core_bytecode.py"], "test_a_change_of_a_constant_alone_is_other_code"),
    ("recovery forgets that an interrupted apply had committed", "patchset/journal.py",
     """    if _state(root / journal.record)[0] == journal.record_sha256:
        cleanup(journal)
        return "the interrupted apply had committed; removed its journal"
""", "",
     ["tests/test_journal.py", "tests/test_verbs_apply_crash.py", "--deselect",
      "tests/test_verbs_apply_crash.py::test_fifty_random_kills_leave_a_pristine_or_patched_tree"],
     "test_a_kill_just_after_the_commit_point_is_recovered_as_committed"),
    ("the engine looks for a hunk only after the previous one", "patchset/core/engine.py",
     "found = self.buf.find(self.old, 0, self.start, self.end)",
     "found = self.buf.find(self.old, self.floor, self.start, self.end)",
     ["tests/test_core_engine.py"], "test_hunks_out_of_order_or_overlapping_are_refused_by_name_where_the_tools_part"),
    ("ordered_map never forks", "patchset/parallel.py",
     """    if processes <= 1 or len(items) <= 1 or not hasattr(os, "fork"):
        return [fn(x) for x in items]""",
     """    if True:
        return [fn(x) for x in items]""",
     ["tests/test_parallel.py"], "test_each_share_but_the_first_runs_in_its_own_forked_child"),
]


def plant(workdir: Path, module: str, old: str, new: str) -> Path:
    copy_tree(workdir)
    path = workdir / module
    text = path.read_text()
    assert text.count(old) == 1, f"{module}: the text to change is not there exactly once: {old!r}"
    path.write_text(text.replace(old, new))
    return workdir


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", default=f"/tmp/patchset-planted-{os.getuid()}")
    args = ap.parse_args(argv)
    missed = 0
    for name, module, old, new, tests, must_fail in BUGS:
        copy = plant(Path(args.workdir), module, old, new)
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf", *tests],
                              cwd=copy, env={**os.environ, "PYTHONPATH": str(copy)}, capture_output=True, text=True)
        failed = sorted(set(re.findall(r"^FAILED \S+::(\w+)", done.stdout, re.M)))
        caught = done.returncode == 1 and must_fail in failed
        missed += not caught
        print(f"{'caught' if caught else 'MISSED'}: {name} ({module}); failed: {', '.join(failed) or 'nothing'}",
              flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
