"""Pristine trees: local git tags, the real releases on the package index, the cache."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
from pathlib import Path

import git
import pytest

from patchset.cache import Cache
from patchset.errors import SourceError
from patchset.sources import open_source
from patchset.sources.git import GitSource

SCHED = "vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py"


def test_git_tag_source_reads_blobs_at_the_tag(tmp_path):
    repo = git.Repo.init(tmp_path)
    (tmp_path / "vllm").mkdir()
    (tmp_path / "vllm" / "a.py").write_text("old\n")
    repo.index.add(["vllm/a.py"])
    repo.index.commit("one")
    repo.create_tag("v0.29.0")
    (tmp_path / "vllm" / "a.py").write_text("new\n")
    repo.index.add(["vllm/a.py"])
    repo.index.commit("two")
    src = open_source(f"git:{tmp_path}", "0.29.0")
    assert src.read("vllm/a.py") == b"old\n"
    assert src.read("vllm/missing.py") is None
    with pytest.raises(SourceError, match="has no tag v0.30.0"):
        GitSource(str(tmp_path), "v0.30.0")


def test_unknown_source_kind_is_explained():
    with pytest.raises(SourceError, match="unknown source"):
        open_source("ftp:x", "0.29.0")


def _fill(args):
    root, payload = args
    cache = Cache(Path(root))

    def fill(tmp: Path) -> None:
        (tmp / "data").write_bytes(payload)
        (tmp / "who").write_text(str(os.getpid()))

    return str(cache.tree("k", fill))


def test_two_processes_filling_one_cache_entry_see_one_whole_entry(tmp_path):
    payload = os.urandom(1 << 20)
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        paths = pool.map(_fill, [(str(tmp_path), payload)] * 4)
    assert len(set(paths)) == 1
    entry = Path(paths[0])
    assert (entry / "data").read_bytes() == payload
    assert not [p for p in entry.parent.iterdir() if p.name.startswith(".part-")]


def test_blob_with_a_wrong_digest_is_never_cached(tmp_path):
    src = tmp_path / "file.bin"
    src.write_bytes(b"hello")
    cache = Cache(tmp_path / "cache")
    with pytest.raises(SourceError, match="does not match"):
        cache.blob("0" * 64, src.as_uri())
    assert not list((tmp_path / "cache" / "blobs").rglob("*0000*"))
    good = hashlib.sha256(b"hello").hexdigest()
    assert cache.blob(good, src.as_uri()).read_bytes() == b"hello"


@pytest.mark.network
@pytest.mark.parametrize("version, fixed", [("0.28.0", False), ("0.29.0", False), ("0.30.0", True)])
def test_real_sdist_from_the_index(version, fixed):
    src = open_source("pypi", version)
    text = src.read(SCHED)
    assert text is not None
    assert (b"max(req.num_prompt_tokens, req.num_tokens - 1)" in text) is fixed
    assert src.read("tests/v1/kv_connector/unit/offloading_connector/test_scheduler.py") is not None


@pytest.mark.network
def test_real_wheel_members_by_range_requests(tmp_path):
    src = open_source("wheel", "0.29.0", cache=Cache(tmp_path))
    text = src.read(SCHED)
    assert text is not None and b"num_tokens_after_batch = req.num_tokens\n" in text
    assert src.read("tests/conftest.py") is None and not src.covers("tests/conftest.py")
    cached = list((tmp_path / "wheel-members").rglob("scheduler.py"))
    assert len(cached) == 1


def _serve(folder: Path):
    """A plain HTTP server on 127.0.0.1 that, like some mirrors, ignores Range headers."""
    import functools
    import http.server
    import threading

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *a: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_a_wheel_server_without_ranges_gets_the_whole_wheel_verified(tmp_path):
    import zipfile

    from patchset.sources.index import IndexFile
    from patchset.sources.wheel import WheelSource

    wheel = tmp_path / "srv" / "vllm-0.29.0-py3-none-any.whl"
    wheel.parent.mkdir()
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr(SCHED, b"num_tokens_after_batch = req.num_tokens\n")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    server = _serve(wheel.parent)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/{wheel.name}"
        src = WheelSource(IndexFile(wheel.name, url, digest, wheel.stat().st_size), Cache(tmp_path / "cache"))
        assert src.read(SCHED) == b"num_tokens_after_batch = req.num_tokens\n"
        assert src.read("vllm/absent.py") is None
    finally:
        server.shutdown()
    # The whole wheel was downloaded (no ranges), verified and kept by its digest.
    assert (tmp_path / "cache" / "blobs" / digest[:2] / digest).is_file()
    # Members are cached: a new source reads them with the server gone.
    again = WheelSource(IndexFile(wheel.name, url, digest, wheel.stat().st_size), Cache(tmp_path / "cache"))
    assert again.read(SCHED) is not None


@pytest.mark.network
def test_a_warm_cache_needs_no_index(tmp_path, monkeypatch):
    cache = Cache(tmp_path)
    first = open_source("pypi", "0.29.0", cache=cache)
    # The index is now unreachable; the release's sdist is known by digest and unpacked already.
    monkeypatch.setenv("PATCHSET_INDEX_URL", "http://127.0.0.1:9/simple/")
    from patchset.sources import index

    index.project_files.cache_clear()
    second = open_source("pypi", "0.29.0", cache=cache)
    assert second.identity == first.identity
    assert second.read(SCHED) == first.read(SCHED)


# --- dir:PATH proves what it is ------------------------------------------------------------------------


def vllm_dir(root: Path, version: str | None = "0.29.0", *, kind: str = "source") -> Path:
    """An upstream tree (pyproject.toml, _version.py) or a site-packages folder (dist-info)."""
    (root / "vllm").mkdir(parents=True)
    (root / "vllm" / "__init__.py").write_text("")
    (root / SCHED.replace("scheduler.py", "")).mkdir(parents=True)
    (root / SCHED).write_text("num_tokens_after_batch = req.num_tokens\n")
    if kind == "source":
        (root / "pyproject.toml").write_text("[project]\nname = 'vllm'\n")
        if version:
            (root / "vllm" / "_version.py").write_text(f"__version__ = version = '{version}'\n")
    elif version:
        (root / f"vllm-{version}.dist-info").mkdir()
        (root / f"vllm-{version}.dist-info" / "METADATA").write_text(f"Name: vllm\nVersion: {version}\n")
    return root


def test_a_dir_of_another_release_is_refused(tmp_path):
    root = vllm_dir(tmp_path / "tree", "0.29.0")
    assert open_source(f"dir:{root}", "0.29.0").read(SCHED) is not None
    with pytest.raises(SourceError, match=r"holds vllm 0.29.0 \(vllm/_version.py\), not 0.28.0") as e:
        open_source(f"dir:{root}", "0.28.0")
    assert "--vllm 0.29.0" in str(e.value) and "\n" not in str(e.value)


def test_the_release_is_read_from_pkg_info_and_dist_info_too(tmp_path):
    sdist = vllm_dir(tmp_path / "sdist", None)
    (sdist / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.30.0\n")
    with pytest.raises(SourceError, match=r"holds vllm 0.30.0 \(PKG-INFO\), not 0.29.0"):
        open_source(f"dir:{sdist}", "0.29.0")
    site = vllm_dir(tmp_path / "site", "0.29.0+cu129", kind="site")
    assert open_source(f"dir:{site}", "0.29.0").read(SCHED) is not None  # a local label is the same release
    with pytest.raises(SourceError, match=r"holds vllm 0.29.0\+cu129 \(vllm-0.29.0\+cu129.dist-info/METADATA\)"):
        open_source(f"dir:{site}", "0.28.0")


def test_a_tree_whose_files_disagree_about_its_release_is_refused(tmp_path):
    site = vllm_dir(tmp_path / "site", "0.29.0", kind="site")
    (site / "vllm-0.28.0.dist-info").mkdir()
    (site / "vllm-0.28.0.dist-info" / "METADATA").write_text("Name: vllm\nVersion: 0.28.0\n")
    with pytest.raises(SourceError, match="says it holds several releases: 0.28.0 .*, 0.29.0"):
        open_source(f"dir:{site}", "0.29.0")


def test_a_dir_that_is_not_vllm_is_refused(tmp_path):
    (tmp_path / "other" / "pkg").mkdir(parents=True)
    (tmp_path / "other" / "pkg" / "__init__.py").write_text("")
    with pytest.raises(SourceError, match=r"holds no vllm package \(vllm/__init__.py\)"):
        open_source(f"dir:{tmp_path / 'other'}", "0.29.0")
    tree = vllm_dir(tmp_path / "tree")
    with pytest.raises(SourceError, match="give the folder that holds it"):
        open_source(f"dir:{tree / 'vllm'}", "0.29.0")


def test_a_tree_patched_or_half_patched_by_apply_is_refused(tmp_path):
    tree = vllm_dir(tmp_path / "tree")
    (tree / "vllm" / ".patchset-journal").mkdir()
    with pytest.raises(SourceError, match=r"interrupted `patchset apply`.*apply --recover"):
        open_source(f"dir:{tree}", "0.29.0")
    (tree / "vllm" / ".patchset-journal").rmdir()
    (tree / "vllm" / ".patchset-provenance.json").write_text("{}")
    with pytest.raises(SourceError, match="already carries a patchset series"):
        open_source(f"dir:{tree}", "0.29.0")


def test_a_stray_tests_folder_in_site_packages_is_not_upstream_tests(tmp_path):
    site = vllm_dir(tmp_path / "site", kind="site")
    (site / "tests").mkdir()  # some other package installed one
    src = open_source(f"dir:{site}", "0.29.0")
    assert not src.covers("tests/v1/test_scheduler.py") and src.covers(SCHED)
    tree = vllm_dir(tmp_path / "tree")
    (tree / "tests").mkdir()
    assert open_source(f"dir:{tree}", "0.29.0").covers("tests/v1/test_scheduler.py")


def test_a_dir_that_does_not_say_its_release_is_checked_with_a_warning(tmp_path):
    from helpers import udiff, write_manifest, write_patch

    from patchset.core.manifest import load_manifest
    from patchset.verbs.check import check

    tree = vllm_dir(tmp_path / "tree", None)
    old = "num_tokens_after_batch = req.num_tokens\n"
    write_patch(tmp_path, "recipes/fix.patch", udiff(SCHED, old, old.replace("num_tokens\n", "num_tokens - 1\n")))
    manifest = write_manifest(tmp_path, """
        schema: 1
        targets: {"0.29.0": {}}
        patches:
          - {id: fix, releases: "==0.29.0", patch: recipes/fix.patch}
        """)
    (result,) = check(load_manifest(manifest), ["0.29.0"], source=f"dir:{tree}").targets
    assert result.ok and "does not say which release it holds" in result.warnings[0]


def test_check_cli_refuses_a_dir_of_another_release_with_exit_2(tmp_path, capsys):
    from helpers import write_manifest

    from patchset.cli import main

    tree = vllm_dir(tmp_path / "tree", "0.29.0")
    manifest = write_manifest(tmp_path, 'schema: 1\ntargets: {"0.28.0": {}}\npatches: []\n')
    assert main(["check", "--manifest", str(manifest), "--source", f"dir:{tree}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "holds vllm 0.29.0" in err and "not 0.28.0" in err


@pytest.mark.network
def test_the_real_0_29_0_sdist_checked_as_0_28_0_is_refused():
    real = open_source("pypi", "0.29.0")
    with pytest.raises(SourceError, match=r"holds vllm 0\.29\.0 \(.*\), not 0\.28\.0"):
        open_source(f"dir:{real.root}", "0.28.0")
    assert open_source(f"dir:{real.root}", "0.29.0").covers("tests/conftest.py")
