"""A release's line index (sources/lineindex.py): the places it answers are the ones a scan of the files finds,
it is made once and kept, a damaged entry is made again rather than believed, and jobs that start together
on one cache make it once (the entry's lock).

The files are real vLLM modules (a part of 0.29.0's package, as the sdist holds it); the cache is a real one
in a temporary folder, and the concurrent jobs are real processes.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from patchset.cache import Cache
from patchset.core.moved import PyIndex, meaningful
from patchset.core.patchfile import split_lines
from patchset.sources import lineindex, python_files
from patchset.sources.local import DirSource
from patchset.sources.sdist import SdistSource

PARTS = ("vllm/v1/core", "vllm/v1/worker", "vllm/distributed/kv_transfer", "vllm/model_executor/layers/fused_moe")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding a part of real vLLM 0.29.0's package (a few hundred modules)."""
    release = Path(SdistSource("vllm", "0.29.0", Cache()).root)
    dest = tmp_path_factory.mktemp("tree")
    for part in PARTS:
        shutil.copytree(release / part, dest / part)
    return dest


def entries(cache: Path) -> list[Path]:
    return sorted((cache / lineindex.KIND).glob("*.idx"))


def indexed(tree: Path, cache: Path) -> PyIndex:
    source = DirSource(tree)
    index, _ = lineindex.for_source(source, "vllm", Cache(cache))
    return PyIndex(index=index, read=source.read)


@pytest.mark.network
def test_the_index_answers_what_a_scan_of_the_files_finds(tree: Path, tmp_path: Path) -> None:
    files = python_files(DirSource(tree), "vllm")
    scan, fast = PyIndex(files), indexed(tree, tmp_path / "cache")
    rng = random.Random(7)
    lines = sorted({ln for data in files.values() for ln in split_lines(data)})
    asked = rng.sample(lines, 3000) + [b"        return hidden_states\n", b"import torch\n",
                                                         b"not a line of vLLM\n", b"\n", b"pass\n"]
    for line in asked:
        assert fast.places(line) == scan.places(line), line
        if meaningful(line):
            assert fast.rare(line) == scan.rare(line)
    path = "vllm/v1/core/sched/scheduler.py"
    block = split_lines(files[path])[200:212]
    assert fast.find_block(block) == scan.find_block(block) != []
    assert fast.nearest(block[:5] + [b"    # a fork's line\n"] + block[6:]) == \
        scan.nearest(block[:5] + [b"    # a fork's line\n"] + block[6:])
    assert fast.renamed_to(files[path]) == scan.renamed_to(files[path])
    assert fast.where_defined("Scheduler") == scan.where_defined("Scheduler") == [path]
    # a port changes files as it goes: both search the changed file, at the end of their order
    moved_in = files[path].replace(b"class Scheduler(", b"class Planner(")
    for index in (fast, scan):
        index.update(path, moved_in)
        index.update("vllm/v1/core/new_home.py", block[0] + b"".join(block))
    for line in [*asked[:300], *block]:
        assert fast.places(line) == scan.places(line), line
    assert fast.find_block(block) == scan.find_block(block)
    assert fast.where_defined("Planner") == scan.where_defined("Planner") == [path]
    assert fast.where_defined("Scheduler") == scan.where_defined("Scheduler") == []


@pytest.mark.network
def test_the_index_is_made_once_and_kept(tree: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    script = textwrap.dedent(f"""
        from patchset.cache import Cache
        from patchset.sources import lineindex
        from patchset.sources.local import DirSource
        print(lineindex.for_source(DirSource({str(tree)!r}), "vllm", Cache({str(cache)!r}))[1])
    """)
    first = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    (entry,) = entries(cache)
    made = entry.stat()
    second = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert (first.stdout, second.stdout) == ("True\n", "False\n")
    again = entry.stat()
    assert (again.st_ino, again.st_mtime_ns) == (made.st_ino, made.st_mtime_ns)  # read, not written again
    assert made.st_size < 10 * 1024 * 1024


@pytest.mark.network
@pytest.mark.parametrize("damage", ["flip", "cut", "empty", "other-tree"])
def test_a_damaged_index_is_made_again_not_believed(tree: Path, tmp_path: Path, damage: str) -> None:
    cache = tmp_path / "cache"
    want = PyIndex(python_files(DirSource(tree), "vllm"))
    indexed(tree, cache)
    (entry,) = entries(cache)
    data = bytearray(entry.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x40  # one bit, in the middle of the places
    elif damage == "cut":
        data = data[:len(data) // 3]
    elif damage == "empty":
        data = bytearray()
    else:  # a whole index, but of another tree, under this one's name
        other = lineindex.build([("vllm/x.py", b"import torch\n")], "f" * 64, "vllm")
        data = bytearray(other)
    entry.write_bytes(bytes(data))
    assert lineindex.load(Cache(cache), entry.name.split("-vllm-")[0], "vllm") is None
    source = DirSource(tree)
    index, made = lineindex.for_source(source, "vllm", Cache(cache))
    assert made
    fast = PyIndex(index=index, read=source.read)
    line = b"        self.kv_cache_config = kv_cache_config\n"
    assert fast.places(line) == want.places(line) != []
    assert lineindex.for_source(source, "vllm", Cache(cache))[1] is False  # and kept again, whole


@pytest.mark.network
def test_jobs_starting_together_make_the_index_once(tree: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    go = tmp_path / "go"
    script = textwrap.dedent(f"""
        import os, time
        from patchset.cache import Cache
        from patchset.sources import lineindex
        from patchset.sources.local import DirSource
        source = DirSource({str(tree)!r})
        while not os.path.exists({str(go)!r}):
            time.sleep(0.005)
        print(lineindex.for_source(source, "vllm", Cache({str(cache)!r}))[1])
    """)
    jobs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) for _ in range(4)]
    go.touch()
    said = sorted(job.communicate(timeout=600)[0] for job in jobs)
    assert said == ["False\n", "False\n", "False\n", "True\n"]
    assert len(entries(cache)) == 1
    assert not [p for p in (cache / lineindex.KIND).iterdir() if p.name.startswith(".")]  # no part left


def test_places_of_a_key_two_lines_share_are_read_to_tell_them_apart(tmp_path: Path) -> None:
    """Two lines with one 64-bit key (never seen in a release, but possible): the index says the key is shared,
    and PyIndex reads each place's line before naming it."""
    one, two = b"    return self.scheduler.schedule()", b"    return self.scheduler.finish()"
    files = {"vllm/a.py": b"import os\n" + one + b"\n", "vllm/b.py": two + b"\n" + one + b"\n"}
    index = lineindex.LineIndex(lineindex.build(files.items(), "k", "vllm"), "k", "vllm")
    # what a collision would have made: the places of both lines under one key, the key said to be shared
    mine = index.places(one)
    index.places = lambda line: sorted({*mine, *[(1, 0)]})  # type: ignore[method-assign]
    index.shared = frozenset({lineindex.line_hash(one)})
    fast = PyIndex(index=index, read=files.get)
    assert fast.places(one + b"\n") == PyIndex(files).places(one + b"\n") == [("vllm/a.py", 1), ("vllm/b.py", 1)]
