"""The sdist source: members streamed out of the archive, byte for byte the unpacked tree's."""

from __future__ import annotations

import hashlib
import io
import json
import multiprocessing
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from patchset.cache import Cache
from patchset.errors import SourceError
from patchset.sources import open_source
from patchset.sources.sdist import MEMBERS, SdistSource

SCHED = "vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py"
TESTS = "tests/v1/kv_connector/unit/offloading_connector/"


def _tar_gz(path: Path, members: list[tuple[str, str, bytes | str]]) -> Path:
    """A .tar.gz of (kind, name, data-or-link-target) members, kind in file|dir|sym."""
    with tarfile.open(path, "w:gz") as tar:
        for kind, name, data in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                assert isinstance(data, bytes)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
                continue
            info.type = {"dir": tarfile.DIRTYPE, "sym": tarfile.SYMTYPE}[kind]
            info.linkname = data if isinstance(data, str) else ""
            tar.addfile(info)
    return path


def _release(cache: Cache, blob: Path, version: str = "0.29.0", sha256: str | None = None) -> SdistSource:
    """The sdist source of a local archive, as if the index had named it (file: URL, its digest)."""
    entry = {"filename": blob.name, "url": blob.as_uri(),
             "sha256": sha256 or hashlib.sha256(blob.read_bytes()).hexdigest(), "size": blob.stat().st_size}
    cache.put_bytes(json.dumps(entry).encode(), "index", f"vllm-{version}-sdist.json")
    return SdistSource("vllm", version, cache)


SMALL = [("dir", "vllm-0.29.0", b""), ("file", "vllm-0.29.0/PKG-INFO", b"Version: 0.29.0\n"),
         ("dir", "vllm-0.29.0/vllm", b""), ("file", "vllm-0.29.0/vllm/a.py", b"a = 1\n"),
         ("file", "vllm-0.29.0/vllm/b.py", b"b = 2\n"), ("file", "vllm-0.29.0/tests/t.py", b"def test(): pass\n"),
         ("file", "other-top/stray.py", b"not under the top folder\n")]


def test_a_check_keeps_only_the_members_it_reads_and_unpacks_nothing(tmp_path):
    cache = Cache(tmp_path / "cache")
    src = _release(cache, _tar_gz(tmp_path / "vllm-0.29.0.tar.gz", SMALL))
    assert src.pending(["vllm/a.py", "vllm/new.py"])
    src.prefetch(["vllm/a.py", "vllm/new.py"])
    assert not src.pending(["vllm/a.py", "vllm/new.py"])
    assert src.read("vllm/a.py") == b"a = 1\n"
    assert src.read("vllm/new.py") is None  # not in the archive: answered by the listing
    # an upstream tree: every path is checked, and one the archive lacks reads as absent (it fails a hunk)
    assert src.covers("tests/t.py") and src.covers("vllm/x.py") and src.covers("docs/x.md")
    assert src.read("docs/x.md") is None
    assert not (tmp_path / "cache" / "trees").exists() and not (tmp_path / "cache" / "blobs").exists()
    store = tmp_path / "cache" / MEMBERS / src.sha256
    assert sorted(p.relative_to(store / "files").as_posix() for p in (store / "files").rglob("*") if p.is_file()) \
        == ["vllm/a.py"]
    assert (store / "listing").read_text().splitlines() == ["PKG-INFO", "tests/t.py", "vllm/a.py", "vllm/b.py"]
    assert json.loads((store / "about.json").read_text()) == {
        "filename": "vllm-0.29.0.tar.gz", "tops": ["PKG-INFO", "tests", "vllm"], "listed": 4}


def test_a_member_not_kept_is_read_from_the_whole_tree_unpacked_then(tmp_path):
    cache = Cache(tmp_path / "cache")
    src = _release(cache, _tar_gz(tmp_path / "vllm-0.29.0.tar.gz", SMALL))
    src.prefetch(["vllm/a.py"])
    assert src.read("vllm/b.py") == b"b = 2\n"  # in the listing, not kept: the whole tree now
    assert (src.root / "vllm" / "a.py").read_bytes() == b"a = 1\n"
    assert src.root == tmp_path / "cache" / "trees" / f"sdist-{src.sha256}"
    again = SdistSource("vllm", "0.29.0", cache)  # a new run finds the whole tree and reads it
    assert again.read("tests/t.py") == b"def test(): pass\n" and again.read("vllm/zzz.py") is None
    assert not again.pending(["vllm/zzz.py"])


def test_a_wrong_digest_keeps_nothing(tmp_path):
    cache = Cache(tmp_path / "cache")
    src = _release(cache, _tar_gz(tmp_path / "vllm-0.29.0.tar.gz", SMALL), sha256="0" * 64)
    with pytest.raises(SourceError, match="does not match"):
        src.prefetch(["vllm/a.py"])
    assert not (tmp_path / "cache" / MEMBERS).exists() or not list((tmp_path / "cache" / MEMBERS).rglob("*.py"))


def test_a_corrupt_download_is_named_by_its_digest_not_as_a_bad_archive(tmp_path):
    blob = _tar_gz(tmp_path / "vllm-0.29.0.tar.gz", SMALL)
    good = hashlib.sha256(blob.read_bytes()).hexdigest()
    blob.write_bytes(blob.read_bytes()[:200])  # cut short where it is served: gzip fails before the digest is known
    src = _release(Cache(tmp_path / "cache"), blob, sha256=good)
    with pytest.raises(SourceError, match="does not match"):
        src.prefetch(["vllm/a.py"])


@pytest.mark.parametrize("evil, why", [
    (("file", "vllm-0.29.0/../../outside.txt", b"x"), "points outside"),
    (("file", "/tmp/absolute-outside-stream.txt", b"x"), "points outside"),
    (("sym", "vllm-0.29.0/vllm/link.py", "/etc/passwd"), "symbolic link"),
])
def test_an_unsafe_member_refuses_the_streamed_archive_whole(tmp_path, evil, why):
    cache = Cache(tmp_path / "cache")
    src = _release(cache, _tar_gz(tmp_path / "vllm-0.29.0.tar.gz", [*SMALL[:4], evil, *SMALL[4:]]))
    with pytest.raises(SourceError, match=why):
        src.prefetch(["vllm/a.py", "vllm/b.py"])
    assert not (tmp_path / "cache" / MEMBERS).exists() or not list((tmp_path / "cache" / MEMBERS).rglob("*"))[2:]
    assert not list((tmp_path / "cache").rglob("a.py")) and not Path("/tmp/absolute-outside-stream.txt").exists()


def _prefetch(args: tuple[str, str]) -> dict[str, str]:
    root, blob = args
    src = SdistSource("vllm", "0.29.0", Cache(Path(root)))
    src.prefetch(["vllm/a.py", "vllm/b.py"])
    return {p: (src.read(p) or b"").decode() for p in ("vllm/a.py", "vllm/b.py", "vllm/none.py")}


def test_jobs_streaming_one_sdist_at_once_all_read_whole_members(tmp_path):
    cache = Cache(tmp_path / "cache")
    _release(cache, _tar_gz(tmp_path / "vllm-0.29.0.tar.gz", SMALL))
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        seen = pool.map(_prefetch, [(str(tmp_path / "cache"), "")] * 4)
    assert all(s == {"vllm/a.py": "a = 1\n", "vllm/b.py": "b = 2\n", "vllm/none.py": ""} for s in seen)
    assert not [p for p in (tmp_path / "cache").rglob(".*.part-*")]


# --- the real releases ------------------------------------------------------------------------------


@pytest.mark.network
def test_streamed_members_of_the_real_sdist_are_the_unpacked_trees_bytes(tmp_path):
    whole = Path(open_source("pypi", "0.29.0").root)  # the shared cache's unpacked tree
    streamed = SdistSource("vllm", "0.29.0", Cache(tmp_path / "cache"))  # an empty cache: over the network
    every = sorted(p.relative_to(whole).as_posix() for p in whole.rglob("*") if p.is_file())
    # A sample from all over the tree: every 7th file, the offload code and tests, the top-level files.
    wanted = sorted({*every[::7], *(p for p in every if p.startswith((TESTS, SCHED.rsplit("/", 1)[0], "PKG-INFO"))),
                     "vllm/not-in-the-sdist.py"})
    streamed.prefetch(wanted)
    assert streamed.read("vllm/not-in-the-sdist.py") is None
    for path in wanted:
        if path != "vllm/not-in-the-sdist.py":
            assert streamed.read(path) == (whole / path).read_bytes(), path
    listing = (tmp_path / "cache" / MEMBERS / streamed.sha256 / "listing").read_text().splitlines()
    assert listing == every
    assert sorted(json.loads((tmp_path / "cache" / MEMBERS / streamed.sha256 / "about.json").read_text())["tops"]) \
        == sorted(p.name for p in whole.iterdir())
    assert streamed._root is None and not (tmp_path / "cache" / "trees").exists()
    assert not (tmp_path / "cache" / "blobs").exists()  # the archive was not kept


@pytest.mark.network
def test_a_cold_check_caches_kilobytes_and_says_what_the_unpacked_trees_say(tmp_path):
    def check(cache: Path | None) -> str:
        env = {**os.environ, "PATCHSET_CACHE": str(cache or Cache().root)}
        done = subprocess.run([sys.executable, "-m", "patchset", "check", "--format", "json"], env=env,
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    cold = check(tmp_path / "cache")
    for v in ("0.28.0", "0.29.0", "0.30.0"):
        SdistSource("vllm", v, Cache()).root  # noqa: B018 -- the shared cache's unpacked trees, as before
    assert check(None) == cold
    size = sum(p.stat().st_size for p in (tmp_path / "cache").rglob("*") if p.is_file())
    assert size < 5 << 20, size
    assert not (tmp_path / "cache" / "trees").exists() and not (tmp_path / "cache" / "blobs").exists()


@pytest.mark.parametrize("content", [b"", b"{", b"[]", b"\xff", b"[" * 100_000 + b"]" * 100_000, b"{}",
                                     b'{"tops": "vllm"}', b'{"tops": [1]}'])
def test_a_damaged_about_json_is_streamed_again(tmp_path, content):
    """Found writing the cache-entries fuzz target (issue 26): JSON nested 100,000 deep raised RecursionError."""
    from patchset.sources.sdist import read_about

    (tmp_path / "about.json").write_bytes(content)
    assert read_about(tmp_path / "about.json") is None
    (tmp_path / "about.json").write_text('{"filename": "vllm-0.29.0.tar.gz", "tops": ["vllm-0.29.0"], "listed": 4}')
    assert read_about(tmp_path / "about.json")["tops"] == ["vllm-0.29.0"]


def test_a_release_line_index_and_the_modules_a_search_reads_come_from_a_pass_not_a_whole_tree(tmp_path):
    """A check's pass holds the package's modules: the release's line index is made from them, a module a
    search names is read from them and then kept as a member; a later job with the index kept and no pass of
    its own reads that member, and one that needs another module streams once more, unpacking nothing."""
    from patchset.core.moved import release_index
    from patchset.sources import lineindex

    cache = Cache(tmp_path / "cache")
    blob = _tar_gz(tmp_path / "vllm-0.29.0.tar.gz", [*SMALL[:5], ("file", "vllm-0.29.0/vllm/c.py", b"ccc = 3\n"),
                                                        *SMALL[5:]])
    src = _release(cache, blob)
    held = src.prefetch(["vllm/a.py"], python="vllm")
    assert held == {"vllm/a.py": b"a = 1\n", "vllm/b.py": b"b = 2\n", "vllm/c.py": b"ccc = 3\n"}
    index = release_index(src, "vllm")
    assert index.places(b"ccc = 3\n") == [("vllm/c.py", 0)]
    assert index.lines("vllm/b.py") == [b"b = 2\n"]  # read from what the pass held, and kept
    store = tmp_path / "cache" / MEMBERS / src.sha256 / "files"
    assert sorted(p.name for p in (store / "vllm").iterdir()) == ["a.py", "b.py"]
    later = SdistSource("vllm", "0.29.0", cache)  # another job: the index is kept, nothing held
    _, made = lineindex.for_source(later, "vllm", cache)
    assert not made
    again = release_index(later, "vllm")
    assert again.lines("vllm/b.py") == [b"b = 2\n"] and again.lines("vllm/c.py") == [b"ccc = 3\n"]
    assert not (tmp_path / "cache" / "trees").exists() and not (tmp_path / "cache" / "blobs").exists()
