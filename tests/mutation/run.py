"""Mutation testing (mutmut) of the modules verdicts rest on, one module at a time, each with its own tests.

    python tests/mutation/run.py [--module core/engine] ... [--minutes N] [--workdir DIR] [--children N]
                                 [--results FILE] [--plain] [--only NAME ...] [--report]

For each module, a copy of the repository's tracked files goes to ``WORKDIR/NAME`` (the checkout is
never mutated); there mutmut makes every mutant of that module alone and runs, for each, the tests of
``MODULES`` that cover the mutated function (mutmut learns which from a first run), stopping at the
first failure. Tests that run a module's own text in another process (``PLAIN``: another Python,
``python -c``, build's compile stage) cannot run against mutmut's rewritten text (trampolines that
import mutmut); with ``--plain``, each mutant mutmut left (survived, or no test reached) is then put
alone into a plain copy of the repository (``WORKDIR/NAME/plain``, as ``mutmut apply`` writes it) and
those tests run there; a mutant they fail counts as ``killed (plain)``. With ``--minutes``, a module's
run is stopped after that long and the mutants not reached are counted as such. Prints per module:
mutants, killed, survived, those no test of the subset reaches and those not run; then each survivor
as its diff (mutmut's log is in the copy). ``docs/records/mutation.md`` keeps the last run's figures
and says of every survivor why it lives (an equivalent mutant) or which test now kills it. Not run by
CI (far too slow); ``make mutate`` runs it at the lowest CPU priority.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: module (under patchset/, without .py) -> the tests that judge it: fast, deterministic, and enough to
#: kill what they can. The slow, seeded runs (the 1,000 differential cases, fifty random kills) stay out.
MODULES: dict[str, list[str]] = {
    "parallel": ["tests/test_parallel.py"],
    "journal": ["tests/test_journal.py", "tests/test_verbs_apply_crash.py",
                "--deselect",
                "tests/test_verbs_apply_crash.py::test_fifty_random_kills_leave_a_pristine_or_patched_tree"],
    # The tests that run bytecode.py's own text or import it in another process are left to --plain (PLAIN).
    "core/bytecode": ["tests/test_core_bytecode.py", "-k",
                      "not (shipped_text or another_python or compile_stage or own_mode)"],
    # series.py decides not-in-tree too, and tests/test_core_trees.py (2 s) is where that is tested.
    "core/series": ["tests/test_core_series.py", "tests/test_core_trees.py"],
    "core/patchfile": ["tests/test_core_patchfile.py"],
    # The planted-engine tests read engine.py's source, which mutmut rewrites: they judge the harness, not
    # the engine, and stay out.
    "core/engine": ["tests/test_core_engine.py", "tests/test_differential.py",
                    "--deselect", "tests/test_differential.py::"
                    "test_every_disagreement_with_gnu_patch_and_git_apply_is_an_intended_refusal",
                    "--deselect", "tests/test_differential.py::test_a_planted_engine"],
}
#: module -> the tests that run the module's own text, or import it afresh, in another process (another
#: Python, ``python -c``, build's compile stage, an interpreter started with other flags). mutmut's
#: rewritten text (every mutant behind trampolines that import mutmut) cannot be that text, so MODULES
#: leaves them out and ``--plain`` runs them on each mutant mutmut left.
PLAIN: dict[str, list[str]] = {
    "core/bytecode": ["tests/test_core_bytecode.py", "-k",
                      "shipped_text or another_python or compile_stage or own_mode"],
}
#: Seconds the PLAIN tests may take on one mutant (about 10 s unmutated here) before it counts as killed.
PLAIN_TIMEOUT = 120
#: mutmut's words for a mutant's fate -> ours. A test process killed by a signal (mutmut: "segfault")
#: did not pass: the crash tests' own kill hook or a child that returned into pytest ended it.
KILLED = {"killed", "segfault", "timeout", "caught by type check"}
UNRUN = {"not checked", "check was interrupted by user"}


def copy_tree(dest: Path) -> None:
    """The repository's tracked files (and the generated version file) into ``dest``."""
    shutil.rmtree(dest, ignore_errors=True)
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for rel in [*files.decode().split("\0"), "patchset/_version.py"]:
        src = ROOT / rel
        if rel and src.is_file() and not src.is_symlink():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def configure(dest: Path, module: str) -> None:
    tests = MODULES[module]
    (dest / "setup.cfg").write_text("[mutmut]\nsource_paths=patchset\n"
                                    f"only_mutate=patchset/{module}.py\n"
                                    "pytest_add_cli_args_test_selection=\n" + "".join(f"    {t}\n" for t in tests)
                                    + "pytest_add_cli_args=\n    -p\n    no:cacheprovider\n")


def mutmut_command(*args: str, cwd: Path) -> tuple[list[str], dict[str, str]]:
    exe = Path(sys.executable).with_name("mutmut")
    # The mutants' own test subprocesses (python -m patchset, python -c) must import the mutated copy.
    return [str(exe), *args], {**os.environ, "PYTHONPATH": str(cwd / "mutants")}


def mutmut(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    cmd, env = mutmut_command(*args, cwd=cwd)
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)


def run_mutants(dest: Path, children: int, minutes: float, only: list[str]) -> tuple[int, bool]:
    """``mutmut run`` in ``dest`` (of the mutants named in ``only``, if any), stopped (as by Ctrl-C: what
    ran is kept) after ``minutes`` when not 0. Its exit status, and whether it was stopped."""
    cmd, env = mutmut_command("run", "--max-children", str(children), *only, cwd=dest)
    with open(dest / "mutmut-run.log", "w") as log:
        proc = subprocess.Popen(cmd, cwd=dest, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            return proc.wait(timeout=minutes * 60 or None), False
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            return 0, True


#: Every survivor's diff from one process (mutmut's own functions, as ``mutmut show`` uses them): a
#: ``mutmut show`` per survivor costs a second each.
DIFFS = """
import json, sys
from mutmut.__main__ import find_mutant
from mutmut.mutation.diff_apply import get_diff_for_mutant
print(json.dumps({n: get_diff_for_mutant(n, path=find_mutant(n).path) for n in json.loads(sys.stdin.read())}))
"""


def diffs(names: list[str], cwd: Path) -> dict[str, str]:
    cmd, env = mutmut_command(cwd=cwd)
    done = subprocess.run([sys.executable, "-c", DIFFS], cwd=cwd, env=env, input=json.dumps(names),
                          capture_output=True, text=True)
    if done.returncode == 0:
        return json.loads(done.stdout)
    return {n: mutmut("show", n, cwd=cwd).stdout for n in names}  # mutmut's internals moved: one at a time


#: Each mutant's own text of its file, as ``mutmut apply`` writes it (the mutated function put in place
#: of the original in the plain file, no trampolines), from one process; the plain file is restored.
APPLY = """
import json, pathlib, sys
from mutmut.mutation.diff_apply import apply_mutant, find_mutant
texts = {}
for name in json.loads(sys.stdin.read()):
    path = pathlib.Path(find_mutant(name).path)
    plain = path.read_text()
    try:
        apply_mutant(name)
        texts[name] = path.read_text()
    finally:
        path.write_text(plain)
print(json.dumps(texts))
"""


def run_plain(module: str, dest: Path, names: list[str]) -> dict[str, str]:
    """Each mutant in ``names`` put by mutmut into a plain copy of the repository (``dest/plain``) in turn,
    and ``PLAIN[module]``'s tests run there, stopping at the first failure: {name: "killed" or "survived"}.
    Raises RuntimeError if the plain copy fails those tests unmutated."""
    plain = dest / "plain"
    copy_tree(plain)
    target = plain / f"patchset/{module}.py"
    original = target.read_text()
    cmd, env = mutmut_command(cwd=dest)
    done = subprocess.run([sys.executable, "-c", APPLY], cwd=dest, env=env, input=json.dumps(names),
                          capture_output=True, text=True, check=True)
    texts = json.loads(done.stdout)
    pytest = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *PLAIN[module]]
    env = {**os.environ, "PYTHONPATH": str(plain)}  # the copy's patchset, in the tests' own subprocesses too

    def passes() -> bool:
        """The tests pass. Run in a session of their own, which is ended whatever they leave running: a
        mutant can make the text re-run itself without end (one that drops ``inspect``'s tag); one that
        runs past PLAIN_TIMEOUT is killed, as mutmut's timeouts are."""
        proc = subprocess.Popen(pytest, cwd=plain, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            return proc.wait(timeout=PLAIN_TIMEOUT) == 0
        except subprocess.TimeoutExpired:
            return False
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    if not passes():
        raise RuntimeError(f"the plain copy in {plain} fails {' '.join(PLAIN[module])} unmutated")
    fates = {}
    for name in names:
        if texts.get(name, original) == original:
            raise RuntimeError(f"mutmut put no change of {name} into {target}")
        target.write_text(texts[name])
        fates[name] = "survived" if passes() else "killed"
    target.write_text(original)
    return fates


def run_module(module: str, workdir: Path, children: int, minutes: float = 0, only: list[str] | None = None,
               run: bool = True, plain: bool = False) -> dict:
    dest = workdir / module.replace("/", "_")
    t0 = time.monotonic()
    code, stopped = 0, False
    if run:
        copy_tree(dest)
        configure(dest, module)
        (dest / "mutants").mkdir()  # before PYTHONPATH names it: a folder missing at start is never looked in
        code, stopped = run_mutants(dest, children, minutes, only or [])
    seconds = time.monotonic() - t0
    if code != 0:
        tail = (dest / "mutmut-run.log").read_text(errors="replace")[-3000:]
        return {"module": module, "error": f"mutmut run exited {code}:\n{tail}", "seconds": seconds}
    listed = mutmut("results", "--all", "true", cwd=dest).stdout
    fates = dict(re.findall(r"^\s*(\S+): (.+)$", listed, re.M))
    if only:
        fates = {k: v for k, v in fates.items() if any(fnmatch.fnmatchcase(k, pattern) for pattern in only)}
    counts: dict[str, int] = {}
    for fate in fates.values():
        counts[fate] = counts.get(fate, 0) + 1
    living = [name for name, fate in sorted(fates.items(), key=lambda kv: _natural(kv[0]))
              if fate not in KILLED | UNRUN]
    plain_seconds = 0
    if plain and living and module in PLAIN:
        t1 = time.monotonic()
        for name, fate in run_plain(module, dest, living).items():
            if fate == "killed":
                counts[fates[name]] -= 1
                fates[name] = "killed (plain)"
                counts[fates[name]] = counts.get(fates[name], 0) + 1
        plain_seconds = round(time.monotonic() - t1)
        living = [name for name in living if fates[name] != "killed (plain)"]
    shown = diffs(living, dest) if living else {}
    survivors = [{"name": name, "fate": fates[name],
                  "diff": "\n".join(ln for ln in shown.get(name, "").splitlines()
                                    if ln.startswith(("-", "+", "@@")) and not ln.startswith(("---", "+++")))}
                 for name in living]
    return {"module": module, "tests": MODULES[module], "mutants": len(fates), "counts": counts,
            "killed": sum(n for f, n in counts.items() if f in KILLED | {"killed (plain)"}), "survivors": survivors,
            "not_run": sum(n for f, n in counts.items() if f in UNRUN), "stopped": stopped,
            "seconds": round(seconds), "plain_seconds": plain_seconds}


def _natural(name: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--module", action="append", choices=sorted(MODULES),
                    help="a module to mutate (repeatable); default: all, smallest first")
    ap.add_argument("--workdir", default=None, help="where the copies go (default: a folder under /tmp)")
    ap.add_argument("--children", type=int, default=1, help="mutants tested side by side (default 1)")
    ap.add_argument("--minutes", type=float, default=0, help="stop each module's run after this long (0: never)")
    ap.add_argument("--results", help="also write the results here as JSON")
    ap.add_argument("--report", action="store_true",
                    help="do not run: report what the last run in WORKDIR left (after --minutes, or a Ctrl-C)")
    ap.add_argument("--plain", action="store_true",
                    help="then judge each mutant mutmut left (survived, or no test reached) by the module's PLAIN "
                         "tests, on a plain copy with that mutant alone applied")
    ap.add_argument("--only", action="append", default=[],
                    help="run only this mutant (a name as printed, or a glob; repeatable): to check survivors again")
    args = ap.parse_args(argv)
    if shutil.which("mutmut", path=str(Path(sys.executable).parent)) is None:
        print("mutmut is not installed in this environment: pip install -e '.[mutate]'", file=sys.stderr)
        return 2
    modules = args.module or sorted(MODULES, key=lambda m: (ROOT / f"patchset/{m}.py").stat().st_size)
    workdir = Path(args.workdir or f"/tmp/patchset-mutate-{os.getuid()}")
    results = []
    for module in modules:
        print(f"== patchset/{module}.py: {' '.join(MODULES[module])}", flush=True)
        only = [n for n in args.only if n.startswith("patchset." + module.replace("/", ".") + ".")]
        if args.only and not only:
            continue
        r = run_module(module, workdir, args.children, args.minutes, only, run=not args.report, plain=args.plain)
        results.append(r)
        if "error" in r:
            print(r["error"], flush=True)
            continue
        fates = ", ".join(f"{n} {f}" for f, n in sorted(r["counts"].items()))
        print(f"   {r['mutants']} mutants: {r['killed']} killed, {len(r['survivors'])} survived or not reached, "
              f"{r['not_run']} not run ({fates}); {r['seconds']} s" + (" (stopped)" if r["stopped"] else "")
              + (f", then {r['plain_seconds']} s of --plain" if r["plain_seconds"] else ""),
              flush=True)
        for s in r["survivors"]:
            print(f"   {s['name']} ({s['fate']})\n" + "".join(f"      {ln}\n" for ln in s["diff"].splitlines()),
                  end="", flush=True)
        if args.results:
            Path(args.results).write_text(json.dumps(results, indent=1) + "\n")
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
