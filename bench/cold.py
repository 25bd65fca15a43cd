"""Cold runs: `patchset check --source wheel` and `patchset next` with an empty cache, over the network.

Every run starts with a fresh ``PATCHSET_CACHE`` (a new temporary folder), so it lists the index,
reads each wheel's central directory and RECORD by range and fetches the members the series
touches. ``PATCHSET_HTTP_LOG`` makes patchset write one line per HTTP answer; the bytes per release
are summed from it (the index listing is shared by all releases and shown on its own).

    .venv/bin/python bench/cold.py [--repeat 3]      (also: make bench, through bench/run.py --cold)

Goal (issue 12): < 0.5 s per release for the cold check; `next` over every release on the index
since 0.28.0 in < 10 s cold. Whole processes, medians of ``--repeat`` runs. These runs go over the
network: the package index's latency and bandwidth vary from run to run and from place to place,
so compare runs made the same hour on the same machine only.
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
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import parse_wheel_filename
from packaging.version import Version

SINCE = "0.28.0"
FORK_RELEASES = ["0.29.0", "0.30.0", "0.31.0"]
NOISE = ("cold runs go over the network: index latency and bandwidth vary between runs; "
         "compare numbers from one run only")


@dataclass
class ColdRun:
    seconds: float
    code: int
    bytes_by_release: dict[str, int] = field(default_factory=dict)
    requests_by_release: dict[str, int] = field(default_factory=dict)
    listing_bytes: int = 0
    cpu: float = 0.0  # user + system seconds of the process and its children: less at the mercy of other load
    cache_bytes: int = 0  # what the run left in its cache, when it started from an empty one


def cold(args: list[str], cache: Path | None = None, env: dict[str, str] | None = None) -> ColdRun:
    """One whole ``patchset ARGS`` process on an empty (or the given) cache; its HTTP answers summed."""
    with tempfile.TemporaryDirectory(prefix="patchset-cold-") as tmp:
        log = Path(tmp) / "http.jsonl"
        env = {**os.environ, **(env or {}), "PATCHSET_CACHE": str(cache or Path(tmp) / "cache"),
               "PATCHSET_HTTP_LOG": str(log)}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        code = subprocess.run([sys.executable, "-m", "patchset", *args], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=env).returncode
        run = ColdRun(time.perf_counter() - start, code)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the process and its forked children, reaped
        run.cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        lines = log.read_text().splitlines() if log.exists() else []
        if cache is None:
            run.cache_bytes = sum(p.stat().st_size for p in (Path(tmp) / "cache").rglob("*") if p.is_file())
    for line in lines:
        answer = json.loads(line)
        name = answer["url"].rstrip("/").rsplit("/", 1)[-1]
        if name.endswith(".tar.gz"):
            version = name[:-len(".tar.gz")].rsplit("-", 1)[-1]
        elif name.endswith(".whl"):
            version = str(parse_wheel_filename(name)[1])
        else:
            run.listing_bytes += answer["bytes"]
            continue
        run.bytes_by_release[version] = run.bytes_by_release.get(version, 0) + answer["bytes"]
        run.requests_by_release[version] = run.requests_by_release.get(version, 0) + 1
    return run


def releases_since(since: str = SINCE) -> list[str]:
    """Every final release on the index from ``since`` on (asked once, outside the timings)."""
    from patchset.verbs.next import released_versions

    return [str(v) for v in released_versions("vllm") if v >= Version(since)]


def check_row(manifest: str, repeat: int, versions: list[str], env: dict[str, str] | None = None,
              source: str = "wheel") -> dict:
    """A cold ``check --source SOURCE`` of ``versions``, each run on an empty cache."""
    args = ["check", "--manifest", manifest, "--source", source, "--format", "json"]
    for v in versions:
        args += ["--vllm", v]
    runs = [cold(args, env=env) for _ in range(repeat)]
    releases = versions
    seconds = statistics.median(r.seconds for r in runs)
    return {"seconds": seconds, "per_release": seconds / max(1, len(releases)), "releases": releases,
            "codes": sorted({r.code for r in runs}),
            "bytes": {v: statistics.median(r.bytes_by_release.get(v, 0) for r in runs) for v in releases},
            "requests": {v: statistics.median(r.requests_by_release.get(v, 0) for r in runs) for v in releases},
            "listing": statistics.median(r.listing_bytes for r in runs),
            "cache": statistics.median(r.cache_bytes for r in runs),
            "cpu": statistics.median(r.cpu for r in runs)}


def sdist_rows(repeat: int = 3, manifest: str = "patches.yaml") -> list[str]:
    """The cold ``check`` with the default source (the sdists, streamed): seconds and the cache it leaves.
    Goal (issue 24): this repository's targets in <= 5 s, <= 50 MB of cache."""
    from patchset.core.manifest_load import load_manifest

    targets = [t.version for t in load_manifest(manifest).targets]
    row = check_row(manifest, repeat, targets, source="pypi")
    fetched = ", ".join(f"{v}: {row['bytes'][v] / 1e6:.1f} MB" for v in targets)
    met = row["seconds"] <= 5 and row["cache"] <= 50e6
    return [f"cold check (default source: sdists streamed), this repository x {len(targets)} targets (exit "
            f"{row['codes']}): {row['seconds']:.2f} s ({row['cpu']:.2f} s CPU), cache left "
            f"{row['cache'] / 1e6:.2f} MB, fetched {fetched}; median of {repeat} runs on empty caches",
            f"goal: cold check <= 5 s and cache <= 50 MB: {'met' if met else 'MISSED'}"]


def next_row(manifest: str, repeat: int, versions: list[str]) -> dict:
    """`patchset next --vllm V` for every V, one process each, on one cache that starts empty."""
    totals, per_run = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="patchset-cold-next-") as tmp:
            runs = [cold(["next", "--manifest", manifest, "--vllm", v, "--source", "wheel", "--format", "json"],
                         Path(tmp) / "cache") for v in versions]
        totals.append(sum(r.seconds for r in runs))
        per_run += [r.seconds for r in runs]
    return {"seconds": statistics.median(totals), "each": statistics.median(per_run), "versions": versions}


def fork_manifest(work: Path) -> str:
    """bench/run.py's fork-shaped series (37 patches, package layout), made from the warm 0.29.0 sdist."""
    sys.path.insert(0, str(Path(__file__).parent))
    import forkseries

    from patchset.cache import Cache
    from patchset.sources.sdist import SdistSource

    tree = Path(SdistSource("vllm", "0.29.0", Cache()).root)
    return str(forkseries.generate(tree, work, count=37, targets=FORK_RELEASES).manifest)


def cold_rows(repeat: int = 3, manifest: str = "patches.yaml") -> list[str]:
    """The cold workload's lines (Markdown), ready to print."""
    from patchset.core.manifest_load import load_manifest
    from patchset.sources import pip

    versions = releases_since()
    targets = [t.version for t in load_manifest(manifest).targets]
    whole = check_row(manifest, repeat, targets)
    one = check_row(manifest, repeat, targets[-1:])
    # The index named in the environment, as CI often does: no pip child is asked for it.
    given = check_row(manifest, repeat, targets[-1:], {"PATCHSET_INDEX_URL": pip.index_url()})
    with tempfile.TemporaryDirectory(prefix="patchset-cold-fork-") as tmp:
        fork = check_row(fork_manifest(Path(tmp)), repeat, FORK_RELEASES)
    nxt = next_row(manifest, repeat, versions)
    out = [f"cold (empty PATCHSET_CACHE each run), medians of {repeat} runs; {NOISE}", "",
           *sdist_rows(repeat, manifest), "",
           "| cold workload | seconds | per release | bytes fetched per release (requests) |",
           "| --- | --- | --- | --- |"]
    for name, row in ((f"check --source wheel, this repository x {len(targets)} targets", whole),
                      (f"check --source wheel --vllm {targets[-1]}", one),
                      (f"check --source wheel --vllm {targets[-1]}, PATCHSET_INDEX_URL set", given),
                      ("check --source wheel, fork-shaped 37 patches x 0.29/0.30/0.31", fork)):
        fetched = ", ".join(f"{v}: {row['bytes'][v] / 1024:.0f} KiB ({row['requests'][v]:.0f})"
                            for v in row["releases"])
        out.append(f"| {name} (exit {row['codes']}) | {row['seconds']:.3f} s | {row['per_release']:.3f} s | "
                   f"{fetched}; index listing {row['listing'] / 1024:.0f} KiB |")
    out.append(f"| next --vllm V --source wheel, V = {', '.join(versions)} (one process each) | "
               f"{nxt['seconds']:.3f} s | {nxt['each']:.3f} s per next | - |")
    out.append("")
    worst = max(whole["per_release"], fork["per_release"])
    out.append(f"goals: cold check < 0.5 s per release: {'met' if worst < 0.5 else 'MISSED'} "
               f"(worst of the two series: {worst:.3f} s); next over every release since {SINCE} < 10 s: "
               f"{'met' if nxt['seconds'] < 10 else 'MISSED'} ({nxt['seconds']:.2f} s)")
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--manifest", default="patches.yaml")
    ap.add_argument("--sdist-only", action="store_true", help="only the cold check with the default source")
    args = ap.parse_args()
    rows = sdist_rows(args.repeat, args.manifest) if args.sdist_only else cold_rows(args.repeat, args.manifest)
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
