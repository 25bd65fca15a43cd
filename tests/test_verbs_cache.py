"""`patchset cache info` and `patchset cache prune`: a real cache filled through the code that fills it
(downloads verified by sha256, trees built under their locks, index answers remembered), pruned while
another process reads one of its releases."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from patchset.cache import Cache, keep_derived, release_uses
from patchset.cli import main
from patchset.sources import download, index
from patchset.verbs.cache import cache_info, prune

RELEASES = ("0.28.0", "0.29.0", "0.30.0")


def fill(cache: Cache, tmp: Path, version: str, *, used: float) -> None:
    """One release as a check leaves it: its sdist downloaded, unpacked, its index answer remembered."""
    archive = tmp / f"vllm-{version}.tar.gz"
    archive.write_bytes(version.encode() * 20000)
    sha = hashlib.sha256(archive.read_bytes()).hexdigest()
    found = index.IndexFile(archive.name, archive.as_uri(), sha, archive.stat().st_size)
    index.remembered(cache, "sdist", "vllm", version, lambda project, v: found)
    blob = download.blob(cache, sha, found.url)

    def unpack(dest: Path) -> None:
        (dest / "vllm").mkdir()
        (dest / "vllm" / "sched.py").write_bytes(blob.read_bytes()[:5000])

    cache.tree(f"sdist-{sha}", unpack)
    os.utime(cache.path("index", f"vllm-{version}-sdist.json"), (used, used))
    for entry in (blob, cache.path("trees", f"sdist-{sha}")):
        os.utime(entry, (used - 60, used - 60))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("PATCHSET_CACHE", str(root))
    c = Cache(root)
    now = time.time()
    for age_days, version in zip((30, 2, 0.01), RELEASES, strict=True):
        fill(c, tmp_path, version, used=now - age_days * 86400)
    old = now - 40 * 86400
    keep_derived(root / "derived" / "patch" / ("0" * 64 + ".json"), {"parsed": True})
    os.utime(root / "derived" / "patch" / ("0" * 64 + ".json"), (old, old))
    release_uses()  # the job that filled the cache has ended
    (root / "standin").mkdir()
    (root / "standin" / "theirs").write_text("not patchset's")
    return c


def sizes(info) -> dict[tuple[str | None, str], int]:
    return {(r, k): b for r, k, _, b in info.by_kind()}


def test_info_gives_the_size_per_release_and_kind(cache):
    info = cache_info(cache)
    by = sizes(info)
    for v in RELEASES:
        assert by[(f"vllm {v}", "blobs")] >= len(v) * 20000
        assert (f"vllm {v}", "trees") in by and (f"vllm {v}", "index") in by
    assert (None, "derived") in by and (None, "other") in by
    assert list(info.releases()) == [f"vllm {v}" for v in reversed(RELEASES)], "most recently used first"
    assert info.size == sum(by.values())


def test_info_cli_json_and_table(cache, capsys):
    assert main(["cache", "info", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["root"] == str(cache.root) and doc["bytes"] > 0
    assert {k["kind"] for k in doc["kinds"]} >= {"blobs", "trees", "index", "derived", "other"}
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert "vllm 0.29.0  trees" in out and f"in {cache.root}" in out


def test_prune_keep_removes_the_least_recently_used_releases(cache, capsys):
    assert main(["cache", "prune", "--keep", "2", "--dry-run"]) == 0
    assert "would remove" in capsys.readouterr().out
    assert {r for r, _, _, _ in cache_info(cache).by_kind()} >= {"vllm 0.28.0"}, "a dry run removes nothing"
    assert main(["cache", "prune", "--keep", "2", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {e["release"] for e in doc["removed"]} == {"vllm 0.28.0"} and doc["freed_bytes"] > 0
    left = {r for r, _, _, _ in cache_info(cache).by_kind()}
    assert left == {"vllm 0.29.0", "vllm 0.30.0", None}
    assert (cache.root / "standin" / "theirs").exists(), "folders that are not patchset's stay"


def test_prune_older_than_removes_old_releases_and_old_parses(cache):
    result = prune(cache, older_than=7)
    assert {e.release for e in result.removed} == {"vllm 0.28.0", None}
    assert not (cache.root / "derived" / "patch" / ("0" * 64 + ".json")).exists()
    assert sorted(result.kept) == ["vllm 0.29.0", "vllm 0.30.0"]


def test_prune_needs_one_rule(cache, capsys):
    assert main(["cache", "prune"]) == 2
    assert main(["cache", "prune", "--older-than", "soon"]) == 2
    assert "--older-than 'soon'" in capsys.readouterr().err


READER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from patchset.cache import Cache
    from patchset.sources import index

    cache = Cache(Path(sys.argv[1]))
    found = index.remembered(cache, "sdist", "vllm", sys.argv[2], lambda p, v: None)  # the warm path
    tree = cache.path("trees", f"sdist-{found.sha256}")
    print("reading", flush=True)
    reads = 0
    while not Path(sys.argv[3]).exists():
        (tree / "vllm" / "sched.py").read_bytes()  # raises if a prune took the tree away
        reads += 1
    print("read", reads, flush=True)
""")


def test_prune_leaves_a_release_a_running_process_reads(cache, tmp_path):
    stop = tmp_path / "stop"
    reader = subprocess.Popen([sys.executable, "-c", READER, str(cache.root), "0.28.0", str(stop)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert reader.stdout is not None and reader.stdout.readline() == "reading\n"
        result = prune(cache, keep=0)
        assert result.in_use == ["vllm 0.28.0"]
        assert {e.release for e in result.removed} == {"vllm 0.29.0", "vllm 0.30.0"}
        time.sleep(0.2)  # the reader keeps reading the tree it uses
    finally:
        stop.touch()
        out, err = reader.communicate(timeout=30)
    assert reader.returncode == 0, err
    assert int(out.split()[-1]) > 0
    # Once the reader is gone, its release goes too.
    assert {e.release for e in prune(cache, keep=0).removed} == {"vllm 0.28.0"}
    assert not any(r for r, _, _, _ in cache_info(cache).by_kind())


def test_an_entry_being_filled_is_left_alone(cache):
    info = cache_info(cache)
    tree = next(e for e in info.entries if e.kind == "trees" and e.release == "vllm 0.28.0")
    with cache.lock("trees", tree.path.name):  # a job filling (or refilling) this tree
        result = prune(cache, keep=2)
    assert [e.path for e in result.busy] == [tree.path] and tree.path.is_dir()


def test_prune_removes_a_release_line_index_with_the_release(cache):
    """A release's line index (made when a hunk failed there) is the release's: it goes with its sdist."""
    from patchset.sources import lineindex
    from patchset.sources.sdist import SdistSource

    for v in RELEASES:
        _, made = lineindex.for_source(SdistSource("vllm", v, cache), "vllm", cache)
        assert made
    release_uses()
    info = cache_info(cache)
    assert {r for r, k, _, _ in info.by_kind() if k == "lines"} == {f"vllm {v}" for v in RELEASES}
    result = prune(cache, keep=2)
    assert {(e.kind, e.release) for e in result.removed if e.kind == "lines"} == {("lines", "vllm 0.28.0")}
    left = sorted(p.name.split("-")[0] for p in (cache.root / "lines").iterdir())
    kept = {SdistSource("vllm", v, cache).sha256 for v in ("0.29.0", "0.30.0")}
    assert set(left) == kept and len(left) == 2
