"""`patchset test` on the CPU venv: configurations forked from a warm interpreter, side by side, against
one process per configuration in turn (``--jobs 1``), in one run, as paired ratios.

    .venv/bin/python bench/proof.py [--repeat 1] [--vllm 0.29.0]      (also: make bench BENCH_ARGS=--proof)

Workloads (issue 24's goals): ``--no-suites`` (fast at least 3x), both suites with their pristine
baselines cached (at least 2x), and the first run with baselines (``--rebaseline``: they are run again;
under 2 minutes). Each pair runs the serial path and the default one back to back on the same warm
venv and trees, so both meet the same load; the JSON documents (timings left out) must be identical.
Peak memory is the largest sum of the resident sets of patchset and every process under it, sampled
every 0.2 s (forked children share pages with their server, so this overstates it a little).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def _tree_rss_kb(root: int) -> int:
    """The resident memory of ``root`` and every process under it, from /proc."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            parents[int(entry)] = int(fields[1])
            rss[int(entry)] = int(fields[21]) * PAGE_KB
        except (OSError, IndexError, ValueError):
            continue
    total, todo, seen = 0, [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += rss.get(pid, 0)
        todo += [child for child, parent in parents.items() if parent == pid]
    return total


def run(args: list[str]) -> dict:
    """One whole ``patchset test`` process: seconds, CPU seconds, exit code, peak tree memory, its JSON."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryFile("w+") as sink:  # a pipe read only at the end would fill and stop it
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "patchset", "test", *args, "--format", "json"],
                                stdout=sink, stderr=subprocess.DEVNULL, text=True)
        peak = 0
        while proc.poll() is None:
            peak = max(peak, _tree_rss_kb(proc.pid))
            time.sleep(0.2)
        seconds = time.perf_counter() - start
        sink.seek(0)
        out = sink.read()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"seconds": seconds, "cpu": cpu, "load": os.getloadavg()[0], "niced": _niced(),
            "code": proc.returncode, "peak_kb": peak, "doc": _timeless(out)}


def _niced() -> int:
    """How many processes on the machine run niced (a fuzzer beside the benchmark), at the end of a run."""
    count = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        count += int(fields[16]) > 0  # the nice value (field 19 of stat)
    return count


def _timeless(text: str) -> object:
    """The JSON document less its timings (they differ from run to run; nothing else may)."""
    def strip(x: object) -> object:
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in ("duration", "seconds")}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x

    try:
        return strip(json.loads(text))
    except ValueError:
        return {"not json": text[-300:]}


def _differences(a: object, b: object, where: str = "", limit: int = 6) -> list[str]:
    """Where two JSON documents differ (the first few places), to say why a pair's documents are not equal."""
    if type(a) is not type(b):
        return [f"{where or '/'}: {str(a)[:80]} != {str(b)[:80]}"]
    out: list[str] = []
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            out += _differences(a.get(k), b.get(k), f"{where}/{k}", limit - len(out))
            if len(out) >= limit:
                break
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            key = x.get("nodeid") or x.get("id") or x.get("path") or i if isinstance(x, dict) else i
            out += _differences(x, y, f"{where}[{key}]", limit - len(out))
            if len(out) >= limit:
                break
    elif a != b:
        out.append(f"{where or '/'}: {str(a)[:80]} != {str(b)[:80]}")
    return out[:limit]


def pair(base: list[str], repeat: int) -> dict:
    serial, fast = [], []
    for _ in range(repeat):
        serial.append(run([*base, "--jobs", "1"]))
        fast.append(run([*base, "--jobs", "auto"]))
    s = statistics.median(r["seconds"] for r in serial)
    f = statistics.median(r["seconds"] for r in fast)
    return {"serial": s, "fast": f, "ratio": s / f,
            "serial_cpu": statistics.median(r["cpu"] for r in serial),
            "fast_cpu": statistics.median(r["cpu"] for r in fast),
            "serial_peak": max(r["peak_kb"] for r in serial), "fast_peak": max(r["peak_kb"] for r in fast),
            "same": all(a["doc"] == b["doc"] for a in serial for b in fast),
            "differences": _differences(serial[0]["doc"], fast[0]["doc"]),
            "load": [round(r["load"], 1) for pair in zip(serial, fast, strict=True) for r in pair],
            "niced": max(r["niced"] for r in serial + fast),
            "codes": sorted({r["code"] for r in serial + fast}),
            "verdicts": [p.get("verdict") for p in (fast[0]["doc"] or {}).get("patches", [])]  # type: ignore[union-attr]
            if isinstance(fast[0]["doc"], dict) else []}


def proof_rows(repeat: int = 1, vllm: str = "0.29.0") -> list[str]:
    """The proof workload's lines (Markdown), ready to print."""
    base = ["--vllm", vllm, "--venv"]
    run([*base, "--no-suites", "--jobs", "1"])  # the venv, the trees and the warm list made, outside the timings
    run(base)  # the pristine baselines cached
    rows = [("test --no-suites", pair([*base, "--no-suites"], repeat), 3.0),
            ("test, suites with cached baselines", pair(base, repeat), 2.0),
            ("test --rebaseline (the first run with baselines)", pair([*base, "--rebaseline"], repeat), None)]
    out = [f"patchset test --vllm {vllm} --venv: one process per configuration (--jobs 1) against --jobs auto "
           f"(warm interpreter, configurations side by side); medians of {repeat} paired run(s); "
           f"{os.cpu_count()} cores", "",
           "| workload | --jobs 1 | --jobs auto | ratio | CPU s: --jobs 1 / auto | peak memory: --jobs 1 / auto "
           "| verdicts | JSON less timings identical |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    goals = []
    for name, r, goal in rows:
        out.append(f"| {name} (exit {r['codes']}) | {r['serial']:.1f} s | {r['fast']:.1f} s | {r['ratio']:.2f}x | "
                   f"{r['serial_cpu']:.0f} / {r['fast_cpu']:.0f} | {r['serial_peak'] / 1024:.0f} / "
                   f"{r['fast_peak'] / 1024:.0f} MB | {', '.join(r['verdicts'])} | {'yes' if r['same'] else 'NO'} |")
        if goal:
            goals.append(f"{name} >= {goal:.0f}x: {'met' if r['ratio'] >= goal else 'MISSED'} ({r['ratio']:.2f}x)")
        else:
            goals.append(f"{name} < 120 s: {'met' if r['fast'] < 120 else 'MISSED'} ({r['fast']:.0f} s)")
    for name, r, _ in rows:
        out.append(f"{name}: 1-minute load average at the end of each run (--jobs 1, auto, ...): "
                   f"{', '.join(map(str, r['load']))}; niced processes on the machine: up to {r['niced']}")
    for name, r, _ in rows:
        if not r["same"]:
            out.append(f"{name}: the documents differ (--jobs 1 != --jobs auto) at " + "; ".join(r["differences"]))
    return [*out, "", "goals: " + "; ".join(goals)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--vllm", default="0.29.0")
    args = ap.parse_args()
    print("\n".join(proof_rows(args.repeat, args.vllm)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
