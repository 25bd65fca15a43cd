"""Golden JSON of a failing series on real releases: ``check``, ``next`` and ``port --dry-run`` of the bench's
fork-shaped series (37 patches made from real 0.29.0 files, package layout), kept byte-stable.

On 0.30.0 and 0.31.0 about a third of its hunks fail and eleven of them are followed to another file
(``moved``/``moved_evidence``): the files were captured before the per-release line index
(core/lineindex.py) answered those searches, which must say the same, byte for byte. The series is
generated again here (seeded; bench/forkseries.py) into a temporary folder; only its path and the timings
vary from run to run. ``PATCHSET_UPDATE_GOLDEN=1`` rewrites the files after an intended change.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import stable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import forkseries  # noqa: E402

from patchset.cache import Cache  # noqa: E402
from patchset.sources.sdist import SdistSource  # noqa: E402

GOLDEN = Path(__file__).with_name("golden")
RELEASES = ["0.29.0", "0.30.0", "0.31.0"]
CASES = {
    # the three targets: 0.30.0 and 0.31.0 fail, and check follows the moved code
    "fork-check": ["check", "--manifest", "{fork}/patches.yaml"],
    # the series made for 0.29.0, two releases on
    "fork-next-0.31.0": ["next", "--vllm", "0.31.0", "--manifest", "{fork}/patches29.yaml"],
    "fork-port-0.31.0-dry-run": ["port", "--to", "0.31.0", "--dry-run", "--manifest", "{fork}/patches29.yaml"],
}


def make_fork(dest: Path) -> Path:
    """The bench's fork-shaped series (bench/run.py's, seed 1) under ``dest``, with ``patches29.yaml`` beside its
    manifest: the same patches, made for 0.29.0 only."""
    tree = Path(SdistSource("vllm", "0.29.0", Cache()).root)
    series = forkseries.generate(tree, dest, count=37, targets=RELEASES)
    text = series.manifest.read_text()
    (dest / "patches29.yaml").write_text(re.sub(r'\n  "0\.3[01]\.0": \{\}', "", text))
    return dest


@pytest.fixture(scope="module")
def fork(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_fork(tmp_path_factory.mktemp("fork"))


def normalized(out: str, fork: Path) -> str:
    doc = json.loads(out.replace(str(fork), "FORK"))  # exactly one document, whatever the exit code
    return json.dumps(stable(doc, {"seconds"}), indent=1, sort_keys=True) + "\n"


@pytest.mark.network
@pytest.mark.parametrize("name", sorted(CASES))
def test_failing_series_json_is_unchanged(name: str, fork: Path) -> None:
    argv = [a.replace("{fork}", str(fork)) for a in CASES[name]]
    run = subprocess.run([sys.executable, "-m", "patchset", *argv, "--format", "json"],
                         capture_output=True, text=True, timeout=900)
    got = f"exit {run.returncode}\n" + normalized(run.stdout, fork)
    path = GOLDEN / f"{name}.json.gz"
    if os.environ.get("PATCHSET_UPDATE_GOLDEN") == "1":
        path.write_bytes(gzip.compress(got.encode(), mtime=0))
    assert path.is_file(), f"no golden file {path}: run with PATCHSET_UPDATE_GOLDEN=1 once and review it"
    want = gzip.decompress(path.read_bytes()).decode()
    if got != want:
        lines, wanted = got.splitlines(), want.splitlines()
        at = next((i for i, (a, b) in enumerate(zip(lines, wanted, strict=False)) if a != b),
                  min(len(lines), len(wanted)))
        pytest.fail(f"{name}: --format json changed at line {at + 1}: {lines[at] if at < len(lines) else ''!r}, "
                    f"was {wanted[at] if at < len(wanted) else ''!r} (PATCHSET_UPDATE_GOLDEN=1 to accept)")
    assert "moved" in want or "fork-port" in name  # the leads are part of what is compared


@pytest.mark.network
def test_a_cold_check_of_the_failing_series_keeps_no_whole_tree_and_says_the_same(fork: Path, tmp_path: Path) -> None:
    """An empty cache: each sdist is streamed once, and the line index of each release where a hunk failed
    (0.30.0, 0.31.0) is made from that pass, not from an unpacked tree; the second run reads what the first
    kept (the index is not made again) and still unpacks nothing."""
    cache = tmp_path / "cache"
    env = {**os.environ, "PATCHSET_CACHE": str(cache)}
    argv = [sys.executable, "-m", "patchset", "check", "-q", "--manifest", str(fork / "patches.yaml"), "--format",
            "json"]
    want = gzip.decompress((GOLDEN / "fork-check.json.gz").read_bytes()).decode()
    cold = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
    assert f"exit {cold.returncode}\n" + normalized(cold.stdout, fork) == want
    indexes = sorted((cache / "lines").iterdir())
    made = {p.name.split("-")[0] for p in indexes}
    assert made == {SdistSource("vllm", v, Cache(cache)).sha256 for v in ("0.30.0", "0.31.0")}
    stats = [(p.stat().st_ino, p.stat().st_mtime_ns) for p in indexes]
    assert not (cache / "trees").exists() and not (cache / "blobs").exists()
    assert all(p.stat().st_size < 10 << 20 for p in indexes)
    warm = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
    assert f"exit {warm.returncode}\n" + normalized(warm.stdout, fork) == want
    assert [(p.stat().st_ino, p.stat().st_mtime_ns) for p in sorted((cache / "lines").iterdir())] == stats
    assert not (cache / "trees").exists() and not (cache / "blobs").exists()
    size = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())
    assert size < 60 << 20, size
