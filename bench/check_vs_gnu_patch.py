"""Benchmark: `patchset check` (warm cache) against the conventional way, in one run.

The conventional way, as fork scripts do it: unpack each pinned release's sdist
into a fresh tree, then for each patch of the series in order run GNU
`patch -p1 --dry-run` and `patch -p1`. patchset instead reads only the files
the series touches from its unpacked cache and applies hunks in memory.

Both sides are timed in this process run on this machine, on the same manifest
and the same (already downloaded) sdists; only the ratio is meaningful.

    .venv/bin/python bench/check_vs_gnu_patch.py [--manifest patches.yaml] [--repeat 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from patchset.cache import Cache
from patchset.core.manifest import load_manifest
from patchset.sources import index
from patchset.verbs.check import check


def conventional(manifest, version: str, sdist: Path) -> bool:
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        with tarfile.open(sdist, "r:gz") as tar:
            tar.extractall(tmp, filter="data")
        root = next(Path(tmp).iterdir())
        ok = True
        for p in manifest.patches:
            if not p.targets(version):
                continue
            choice = p.choice_for(version)
            for args in (["--dry-run"], []):
                r = subprocess.run(["patch", "-p1", "--batch", "--forward", *args, "-i", str(choice.path)],
                                   cwd=root, capture_output=True)
                ok = ok and r.returncode == 0
        return ok


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--manifest", default="patches.yaml")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    manifest = load_manifest(args.manifest)
    versions = [t.version for t in manifest.targets]
    cache = Cache()

    # Warm the cache once (download + unpack), outside the timings.
    check(manifest, versions)
    sdists = {v: cache.blob(index.sdist(manifest.pypi, v).sha256, index.sdist(manifest.pypi, v).url)
              for v in versions}

    in_process = timed(lambda: check(manifest, versions), args.repeat)
    cli = timed(lambda: subprocess.run([sys.executable, "-m", "patchset", "check", "--manifest", args.manifest,
                                        "--format", "json"], capture_output=True, check=True), args.repeat)
    baseline = timed(lambda: [conventional(manifest, v, sdists[v]) for v in versions], args.repeat)

    b = statistics.median(baseline)
    print(f"releases: {', '.join(versions)}; patches: {len(manifest.patches)}; repeat: {args.repeat} (medians)")
    print(f"conventional (unpack sdist + GNU patch --dry-run/apply per patch): {b:8.3f} s")
    print(f"patchset check, in process, warm cache:                         {statistics.median(in_process):8.3f} s"
          f"   ratio {b / statistics.median(in_process):6.1f}x faster")
    print(f"patchset check, CLI process, warm cache:                        {statistics.median(cli):8.3f} s"
          f"   ratio {b / statistics.median(cli):6.1f}x faster")
    if shutil.which("patch") is None:
        print("GNU patch is not installed: the baseline is meaningless", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
