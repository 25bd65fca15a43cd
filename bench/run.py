"""`make bench`: patchset check against the best hand loop on the same warm trees, in one run.

Baseline (the fair one): ``bench/gnu_loop.sh`` — per release, copy only the files the series touches
into a scratch tree, then GNU ``patch -F0`` each patch in series order. The old baseline (unpack the
sdist, then GNU patch) is shown beside it for what it is: what CI scripts without a cache do.
Whole process against whole process, paired runs (patchset, then the loop, alternating), medians.
Only ratios measured in the same run mean anything; no test asserts on time. Bytes read are the
kernel's count of bytes every read() returned (``rchar``, page cache included) for the command and
its children, taken once per side outside the timed runs; peak memory is patchset's maximum RSS (of
the process itself: forked children evaluating releases have their own), also taken outside them.

    .venv/bin/python bench/run.py [--repeat 5] [--quick] [--cold] [--proof]

``--cold`` adds the cold workload of ``bench/cold.py`` (empty caches, over the network), the cold
default-source check among it; ``--proof`` the ``patchset test`` workload of ``bench/proof.py``
(``make bench BENCH_ARGS=--proof``); ``--proof-only`` prints just that and the cold check.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import forkseries  # noqa: E402

from patchset.cache import Cache  # noqa: E402
from patchset.core.manifest import Manifest
from patchset.core.manifest_load import load_manifest  # noqa: E402
from patchset.sources import download  # noqa: E402
from patchset.sources.sdist import SdistSource  # noqa: E402

HERE = Path(__file__).parent
LOOP = HERE / "gnu_loop.sh"
BIG_RELEASES = ["0.24.0", "0.25.0", "0.26.0", "0.27.0", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0",
                "0.33.0"]


@dataclass
class Run:
    seconds: float
    code: int


@dataclass
class Workload:
    name: str
    manifest: Path
    releases: list[str]
    loop_args: list[str]  # TOUCHED SUBDIR TREE=SERIES...
    unpack: bool = True


def timed(cmd: list[str]) -> Run:
    """Wall time of one whole process (its peak memory: :func:`peak_rss_kb`)."""
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, _ = os.wait4(p.pid, 0)
    return Run(time.perf_counter() - start, os.waitstatus_to_exitcode(status))


_PEAK = ("import os, sys\n"
         "pid = os.fork()\n"
         "if pid == 0:\n"
         "    os.execvp(sys.argv[1], sys.argv[1:])\n"
         "_, _, usage = os.wait4(pid, 0)\n"
         "print(usage.ru_maxrss)\n")


def peak_rss_kb(cmd: list[str]) -> int:
    """``cmd``'s maximum resident set, in KiB, as the kernel counts it. Measured through a small wrapper
    process: a child forked straight from this (large) benchmark would count this process's pages,
    which it shares until it execs, as its own."""
    out = subprocess.run([sys.executable, "-S", "-c", _PEAK, *cmd], capture_output=True, text=True, check=False)
    return int(out.stdout.split()[-1])


def bytes_read(cmd: list[str]) -> int:
    """What ``cmd`` and its children read (``rchar``): a shell runs it, waits, then reads its own
    /proc entry, which by then holds the reaped children's counts (the shell itself reads nothing)."""
    script = '"$@" >/dev/null 2>&1; cat /proc/$$/io'
    out = subprocess.run(["sh", "-c", script, "sh", *cmd], capture_output=True, text=True, check=True).stdout
    return next(int(line.split()[1]) for line in out.splitlines() if line.startswith("rchar:"))


def tree_of(version: str, cache: Cache) -> Path:
    return Path(SdistSource("vllm", version, cache).root)


def loop_args(manifest: Manifest, releases: list[str], cache: Cache, work: Path, sub: str) -> list[str]:
    touched: set[str] = set()
    pairs = []
    for v in releases:
        files = []
        for p in manifest.patches:
            if p.targets(v) and p.choice_for(v) is not None:
                pf = p.load(v, manifest.base)
                touched.update(pf.touched)
                files.append(str(p.choice_for(v).path))  # type: ignore[union-attr]
        series = work / f"series-{v}.txt"
        series.write_text("".join(f + "\n" for f in files))
        pairs.append(f"{tree_of(v, cache)}={series}")
    listed = work / "touched.txt"
    listed.write_text("".join(t + "\n" for t in sorted(touched)))
    return [str(listed), sub, *pairs]


def unpack_loop(manifest: Manifest, releases: list[str], cache: Cache, sub: str) -> None:
    """The old baseline: unpack each sdist, then GNU patch each patch in order."""
    for v in releases:
        src = SdistSource("vllm", v, cache)
        blob = download.blob(cache, src.sha256, "")
        with tempfile.TemporaryDirectory(prefix="bench-unpack-") as tmp:
            with tarfile.open(blob, "r:gz") as tar:
                tar.extractall(tmp, filter="data")
            root = next(Path(tmp).iterdir()) / sub
            for p in manifest.patches:
                choice = p.choice_for(v) if p.targets(v) else None
                if choice is not None:
                    subprocess.run(["patch", "-s", "-p1", "-F0", "--batch", "-r", "-", "-i", str(choice.path)],
                                   cwd=root, capture_output=True)


def measure(w: Workload, repeat: int, cache: Cache) -> dict:
    cli = [sys.executable, "-m", "patchset", "check", "--manifest", str(w.manifest), "--format", "json"]
    subprocess.run(cli, capture_output=True)  # warm every tree once, outside the timings
    ours, loop, unpack = [], [], []
    for _ in range(repeat):
        ours.append(timed(cli))
        loop.append(timed(["bash", str(LOOP), *w.loop_args]))
    if w.unpack:
        m = load_manifest(w.manifest)
        sub = "vllm" if w.loop_args[1] == "vllm" else "."
        for _ in range(max(1, repeat // 2)):
            t = time.perf_counter()
            unpack_loop(m, w.releases, cache, sub)
            unpack.append(time.perf_counter() - t)
    return {"ours": statistics.median(r.seconds for r in ours), "rss": peak_rss_kb(cli),
            "loop": statistics.median(r.seconds for r in loop),
            "unpack": statistics.median(unpack) if unpack else None,
            "read": bytes_read(cli), "loop_read": bytes_read(["bash", str(LOOP), *w.loop_args])}


def workloads(work: Path, cache: Cache, quick: bool) -> list[Workload]:
    repo = load_manifest("patches.yaml")
    out = [Workload("this repository (3 patches) x its targets", repo.path.resolve(),
                    [t.version for t in repo.targets],
                    loop_args(repo, [t.version for t in repo.targets], cache, _mk(work / "repo"), "."))]
    fork_releases = ["0.29.0", "0.30.0", "0.31.0"]
    fork = forkseries.generate(tree_of("0.29.0", cache), _mk(work / "fork"), count=37, targets=fork_releases)
    m = load_manifest(fork.manifest)
    out.append(Workload("fork-shaped, 37 patches, package layout x 0.29/0.30/0.31", fork.manifest, fork_releases,
                        loop_args(m, fork_releases, cache, work / "fork", "vllm")))
    if not quick:
        big = forkseries.generate(tree_of("0.29.0", cache), _mk(work / "big"), count=500, targets=BIG_RELEASES)
        m = load_manifest(big.manifest)
        out.append(Workload("500 patches x 10 releases (0.24-0.33)", big.manifest, BIG_RELEASES,
                            loop_args(m, BIG_RELEASES, cache, work / "big", "vllm"), unpack=False))
    return out


def _mk(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="leave out the 500 x 10 workload")
    ap.add_argument("--cold", action="store_true", help="also the cold workload (bench/cold.py; network)")
    ap.add_argument("--proof", action="store_true",
                    help="also `patchset test` on the CPU venv, --jobs 1 against the default (bench/proof.py; "
                         "minutes: builds the venv the first time)")
    ap.add_argument("--proof-only", action="store_true", help="only the proof workload and the cold check")
    args = ap.parse_args()
    if args.proof_only:
        import cold
        import proof

        print("\n".join(proof.proof_rows()))
        print()
        print("\n".join(cold.sdist_rows(3)))
        return 0
    # Bytecode compiled, as an installed package's is (PYTHONDONTWRITEBYTECODE would leave every run compiling).
    compileall.compile_dir(str(Path(__file__).resolve().parent.parent / "patchset"), quiet=1)
    cache = Cache()
    with tempfile.TemporaryDirectory(prefix="patchset-bench-") as tmp:
        rows = [(w, measure(w, args.repeat, cache)) for w in workloads(Path(tmp), cache, args.quick)]
    print(f"medians of {args.repeat} paired runs; whole processes; warm cache; {os.cpu_count()} cores\n")
    print("| workload | patchset check | touched-files GNU loop | ratio | unpack + GNU loop | "
          "bytes read: patchset / loop | peak RSS |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for w, r in rows:
        ratio = r["loop"] / r["ours"]
        word = f"{ratio:.2f}x faster" if ratio >= 1 else f"{1 / ratio:.2f}x slower"
        unpack = f"{r['unpack']:.2f} s ({r['unpack'] / r['ours']:.0f}x patchset)" if r["unpack"] is not None else "-"
        print(f"| {w.name} | {r['ours']:.3f} s | {r['loop']:.3f} s | patchset {word} | {unpack} | "
              f"{r['read'] / 1e6:.1f} / {r['loop_read'] / 1e6:.1f} MB | {r['rss'] / 1024:.0f} MB |")
    print()
    for line in start_up(args.repeat):
        print(line)
    import failing  # a series that fails two releases on: check, next, port (issue 36)

    print()
    print("\n".join(failing.rows(args.repeat, max(1, args.repeat // 3) if args.cold else 0)))
    if args.cold:
        import cold

        print()
        print("\n".join(cold.cold_rows(max(3, args.repeat // 2))))
    if args.proof:
        import proof

        print()
        print("\n".join(proof.proof_rows()))
    return 0


def start_up(repeat: int) -> list[str]:
    """``patchset --help`` and ``patchset validate`` on this repository: whole processes, medians."""
    out = []
    for argv in (["--help"], ["validate"]):
        cmd = [sys.executable, "-m", "patchset", *argv]
        subprocess.run(cmd, capture_output=True)
        runs = [timed(cmd) for _ in range(max(repeat, 5))]
        out.append(f"patchset {' '.join(argv)}: {statistics.median(r.seconds for r in runs) * 1000:.0f} ms "
                   f"(median of {len(runs)})")
    return out


if __name__ == "__main__":
    raise SystemExit(main())
