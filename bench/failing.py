"""A series that fails two releases on, as a fork meets it: ``check``, ``next`` and ``port --dry-run``, warm and
cold, with time, peak memory and the cache they leave, beside the touched-files GNU loop (issue 36).

The series is the bench's fork-shaped one (bench/forkseries.py, seed 1: 37 patches made from real 0.29.0
files, package layout) on the real 0.29.0, 0.30.0 and 0.31.0: on the two newer releases about a third of
its hunks fail, some files are gone, and eleven hunks are followed to where their code went (the moved-code
leads). ``check`` runs on the three targets; ``next --vllm 0.31.0`` and ``port --to 0.31.0 --dry-run`` on
the same patches made for 0.29.0 only (two releases on).

Warm: the default cache (whole trees where the other workloads unpacked them, the line indexes and each
release's kept verdicts made by a first run outside the timings); "one patch edited" prepends a line to one
patch file's header before each run, so no release's kept verdicts hold and all are worked out again.
Each check is paired with ``bench/gnu_loop.sh`` on the same warm trees (patchset, then the loop,
alternating), medians. Cold: each run on an empty ``PATCHSET_CACHE`` (the
sdists downloaded and streamed over the network: compare cold numbers of one run only); its peak RSS is
the largest of the process and its forked children (``ru_maxrss`` of the children), its cache the bytes
of the files it left.

    .venv/bin/python bench/failing.py [--repeat 5] [--cold-repeat 2]     (also: make bench)

Goals (issue 36): warm check >= 2x faster than the loop; cold check <= 8 s and <= 60 MB of cache; warm
next <= 2 s; warm port --dry-run <= 5 s.
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import forkseries  # noqa: E402
import run  # noqa: E402

from patchset.cache import Cache  # noqa: E402
from patchset.core.manifest_load import load_manifest  # noqa: E402

RELEASES = ["0.29.0", "0.30.0", "0.31.0"]
COMMANDS = {
    "check": ["check", "--manifest", "{fork}/patches.yaml", "--format", "json"],
    # the same, each run after an edit of one patch file (a line of its header): no release's kept verdicts
    # hold, so every release is worked out again, as after a maintainer's edit
    "check, one patch edited": ["check", "--manifest", "{fork}/patches.yaml", "--format", "json"],
    "next": ["next", "--vllm", "0.31.0", "--manifest", "{fork}/patches29.yaml", "--format", "json"],
    "port --dry-run": ["port", "--to", "0.31.0", "--dry-run", "--manifest", "{fork}/patches29.yaml", "--format",
                       "json"],
}


def make_fork(dest: Path, cache: Cache) -> Path:
    """The series (and ``patches29.yaml``, the same patches made for 0.29.0 only) under ``dest``."""
    series = forkseries.generate(run.tree_of("0.29.0", cache), dest, count=37, targets=RELEASES)
    text = series.manifest.read_text()
    (dest / "patches29.yaml").write_text(re.sub(r'\n  "0\.3[01]\.0": \{\}', "", text))
    return dest


def cold_run(cmd: list[str]) -> tuple[float, int, int]:
    """(seconds, peak RSS in KiB of the process or any child, bytes left in its cache) on an empty cache."""
    with tempfile.TemporaryDirectory(prefix="patchset-failing-") as tmp:
        cache = Path(tmp) / "cache"
        code = ("import os, resource, subprocess, sys, time\n"
                "t = time.perf_counter()\n"
                "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
                "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
        out = subprocess.run([sys.executable, "-S", "-c", code, *cmd], capture_output=True, text=True, check=True,
                             env={**os.environ, "PATCHSET_CACHE": str(cache)}).stdout.split()
        size = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())
    return float(out[0]), int(out[1]), size


def rows(repeat: int = 5, cold_repeat: int = 2) -> list[str]:
    cache = Cache()
    out = [f"failing fork series (37 patches, package layout; check x {'/'.join(RELEASES)}, next and port two "
           f"releases on): warm medians of {repeat} paired runs, cold medians of {cold_repeat} runs on empty "
           f"caches (none without --cold); {os.cpu_count()} cores", "",
           "| command | warm | touched-files GNU loop | ratio | warm peak RSS | cold | cold peak RSS | cold cache |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    with tempfile.TemporaryDirectory(prefix="patchset-failing-fork-") as tmp:
        fork = make_fork(Path(tmp) / "fork", cache)
        m = load_manifest(fork / "patches.yaml")
        loop = ["bash", str(run.LOOP), *run.loop_args(m, RELEASES, cache, fork, "vllm")]
        met = {}
        for name, argv in COMMANDS.items():
            cli = [sys.executable, "-m", "patchset", *(a.replace("{fork}", str(fork)) for a in argv)]
            subprocess.run(cli, capture_output=True)  # the line indexes made, the trees warm, outside the timings
            ours, theirs = [], []
            edited = next(fork.glob("recipes/*/*.patch"))
            for i in range(repeat):
                if name.endswith("edited"):
                    edited.write_bytes(f"bench edit {time.time()} {i}\n".encode() + edited.read_bytes())
                ours.append(run.timed(cli).seconds)
                if name.startswith("check"):
                    theirs.append(run.timed(loop).seconds)
            warm, rss = statistics.median(ours), run.peak_rss_kb(cli)
            cold_runs = cold_repeat if not name.endswith("edited") else 0  # an edit changes nothing cold
            colds = [cold_run(cli) for _ in range(cold_runs)] or [(0.0, 0, 0)]  # none: not asked for
            c_time = statistics.median(c[0] for c in colds)
            c_rss = statistics.median(c[1] for c in colds)
            c_size = statistics.median(c[2] for c in colds)
            if theirs:
                base = statistics.median(theirs)
                ratio = base / warm
                word = f"patchset {ratio:.2f}x faster" if ratio >= 1 else f"patchset {1 / ratio:.2f}x slower"
                gnu = f"{base:.3f} s"
                if name == "check":
                    met["warm check >= 2x faster than the loop"] = ratio >= 2
                if cold_repeat and name == "check":
                    met["cold check <= 8 s and <= 60 MB of cache"] = c_time <= 8 and c_size <= 60e6
            else:
                gnu = word = "-"
            if name == "next":
                met["warm next <= 2 s"] = warm <= 2
            if name == "port --dry-run":
                met["warm port --dry-run <= 5 s"] = warm <= 5
            cold = (f"{c_time:.2f} s | {c_rss / 1024:.0f} MB | {c_size / 1e6:.1f} MB"
                    if cold_repeat and not name.endswith("edited") else "- | - | -")
            out.append(f"| {name} | {warm:.3f} s | {gnu} | {word} | {rss / 1024:.0f} MB | {cold} |")
    out.append("")
    out += [f"goal: {goal}: {'met' if ok else 'MISSED'}" for goal, ok in met.items()]
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cold-repeat", type=int, default=2)
    args = ap.parse_args()
    start = time.perf_counter()
    # bytecode compiled, as an installed package's is (PYTHONDONTWRITEBYTECODE would leave every run compiling)
    compileall.compile_dir(str(Path(__file__).resolve().parent.parent / "patchset"), quiet=1)
    print("\n".join(rows(args.repeat, args.cold_repeat)))
    print(f"\n({time.perf_counter() - start:.0f} s in all)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
