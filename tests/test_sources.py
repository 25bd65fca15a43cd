"""Pristine trees: local git tags, the real releases on the package index, the cache."""

from __future__ import annotations

import base64
import hashlib
import io
import multiprocessing
import os
import socket
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import git
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from patchset.cache import Cache
from patchset.errors import SourceError
from patchset.sources import download, open_source
from patchset.sources import http as patchset_http
from patchset.sources.git import GitSource
from patchset.sources.index import IndexFile
from patchset.sources.wheel import WheelSource

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
        download.blob(cache, "0" * 64, src.as_uri())
    assert not list((tmp_path / "cache" / "blobs").rglob("*0000*"))
    good = hashlib.sha256(b"hello").hexdigest()
    assert download.blob(cache, good, src.as_uri()).read_bytes() == b"hello"


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
    assert src.fallback_reason is None  # verified against the real wheel's RECORD, read by range
    assert not (tmp_path / "blobs").exists()


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

    from patchset.core.manifest_load import load_manifest
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


# --- wheels read by range from a real HTTP server that misbehaves -----------------------------------



def real_wheel() -> Path:
    """pip's own wheel, as Python ships it: a real wheel with a RECORD, no download needed."""
    import ensurepip

    return next((Path(ensurepip.__file__).parent / "_bundled").glob("pip-*.whl"))


#: Members of pip's wheel: a small one and one that spans blocks.
SMALL, LARGER = "pip/__init__.py", "pip/_internal/req/req_install.py"


class WheelServer(ThreadingHTTPServer):
    """Serves ``full`` whole (no Range) and ``ranged`` by range, misbehaving as ``mode`` says.

    modes: honest, short (1000-byte answers, honest Content-Range), liar (Content-Range claims more
    than the body holds), misplaced (the bytes and Content-Range of another offset), drop (the
    connection closes mid-body; only the first ``failures`` times when that is set), busy (503 first),
    none (ranges ignored: 200 with the whole file), huge (a range answered with a Content-Length of 10 GB
    and bytes until the reader stops reading, up to 64 MiB an answer; ``sent`` counts them); announces (the
    whole file asked for: a Content-Length of 10 GB and bytes as in huge), endless (the same without a
    Content-Length). ``wholes`` counts the requests without a Range.
    """

    def __init__(self, full: bytes, ranged: bytes | None = None, mode: str = "honest", failures: int = 10**6,
                 auth: str | None = None) -> None:
        self.full, self.ranged, self.mode, self.failures, self.auth = full, ranged or full, mode, failures, auth
        self.ranges: list[str] = []
        self.wholes = 0
        self.sent = 0
        self.files: dict[str, bytes] = {}
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _WheelHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def url(self, path: str = "/pkg.whl") -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"

    def misbehave(self) -> bool:
        with self.lock:
            self.failures -= 1
            return self.failures >= 0


class _WheelHandler(BaseHTTPRequestHandler):
    server: WheelServer

    def log_message(self, *args) -> None:
        pass

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None, cut: bool = False) -> None:
        self.send_response(status)
        for k, v in {"Content-Length": str(len(body)), **(headers or {})}.items():
            self.send_header(k, v)
        self.end_headers()
        if cut:
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        self.wfile.write(body)

    def _flood(self, content_range: str | None, announce: bool = True) -> None:
        self.send_response(206 if content_range else 200)
        if content_range:
            self.send_header("Content-Range", content_range)
        if announce:
            self.send_header("Content-Length", str(10 * 1024**3))
        self.end_headers()
        self.close_connection = True
        chunk = b"\0" * 65536
        try:
            for _ in range(1024):
                self.wfile.write(chunk)
                self.server.sent += len(chunk)
        except OSError:
            pass  # the reader hung up: what it did not read was never sent

    def do_GET(self) -> None:
        srv = self.server
        if srv.auth and self.headers.get("Authorization") != "Basic " + base64.b64encode(srv.auth.encode()).decode():
            return self._send(401, b"no", {"WWW-Authenticate": 'Basic realm="index"'})
        if self.path in srv.files:
            return self._send(200, srv.files[self.path], {"Content-Type": "application/vnd.pypi.simple.v1+json"})
        wanted = self.headers.get("Range")
        if not wanted:
            srv.wholes += 1
        if not wanted and srv.mode in ("announces", "endless"):
            return self._flood(None, announce=srv.mode == "announces")
        if not wanted or srv.mode == "none":
            return self._send(200, srv.full)
        srv.ranges.append(wanted)
        start, end = (int(x) for x in wanted.split("=")[1].split("-"))
        data, total = srv.ranged, len(srv.ranged)
        end = min(end, total - 1)
        if srv.mode == "huge":
            return self._flood(f"bytes {start}-{end}/{total}")
        misbehave = srv.mode != "honest" and srv.misbehave()
        if misbehave and srv.mode == "busy":
            return self._send(503, b"busy")
        if misbehave and srv.mode == "short":
            end = min(end, start + 999)
        if misbehave and srv.mode == "misplaced" and start > 0:
            start, end = 0, end - start
        body = data[start:end + 1]
        claimed = f"bytes {start}-{end}/{total}"
        if misbehave and srv.mode == "liar":
            body = body[: max(1, len(body) // 2)]
        self._send(206, body, {"Content-Range": claimed}, cut=misbehave and srv.mode == "drop")


@pytest.fixture
def fast_retries(monkeypatch):
    monkeypatch.setattr(patchset_http, "BACKOFF", 0.01)


def _member(wheel: bytes, name: str) -> bytes:
    with zipfile.ZipFile(io.BytesIO(wheel)) as z:
        return z.read(name)


def _forged(wheel: bytes, name: str, content: bytes) -> bytes:
    """The wheel with one member's bytes replaced and a CRC that fits them; RECORD left as it was."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(wheel)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info, content if info.filename == name else src.read(info))
    return out.getvalue()


def _corrupted(wheel: bytes, name: str) -> bytes:
    """The wheel with bytes of one member's compressed data flipped (same size, same headers)."""
    with zipfile.ZipFile(io.BytesIO(wheel)) as z:
        info = z.getinfo(name)
    data = bytearray(wheel)
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for i in range(start + 10, start + 20):
        data[i] ^= 0xFF
    return bytes(data)


def _source(server: WheelServer, wheel: bytes, cache: Cache, size: int | None = None) -> WheelSource:
    digest = hashlib.sha256(wheel).hexdigest()
    return WheelSource(IndexFile("pip-23.2.1-py3-none-any.whl", server.url(), digest, size), cache, package="pip")


def test_an_honest_range_server_gives_verified_members_without_the_whole_wheel(tmp_path):
    wheel = real_wheel().read_bytes()
    server = WheelServer(wheel)
    try:
        src = _source(server, wheel, Cache(tmp_path), len(wheel))
        assert src.read(SMALL) == _member(wheel, SMALL)
        assert src.read(LARGER) == _member(wheel, LARGER)
        assert src.read("pip/not-there.py") is None
    finally:
        server.shutdown()
    assert src.fallback_reason is None
    assert not (tmp_path / "blobs").exists()  # never downloaded whole
    assert len(server.ranges) < 10


@pytest.mark.parametrize("mode, failures, falls_back, reason", [
    ("short", 10**6, True, "pieces too short"),       # 1000 bytes an answer: bounded, then the full wheel
    ("liar", 10**6, True, "bytes came"),              # Content-Range claims more than the body holds
    ("misplaced", 10**6, True, "Content-Range says"),  # the bytes of another offset
    ("drop", 10**6, True, "attempts"),                # every range answer cut mid-body
    ("drop", 1, False, None),                         # one cut answer: retried, no full download
    ("busy", 1, False, None),                         # one 503: retried by urllib3's Retry
    ("none", 0, True, "ignores range"),               # no range support at all
])
def test_a_misbehaving_range_server_ends_in_verified_bytes(tmp_path, fast_retries, mode, failures, falls_back,
                                                           reason):
    wheel = real_wheel().read_bytes()
    server = WheelServer(wheel, mode=mode, failures=failures)
    try:
        src = _source(server, wheel, Cache(tmp_path), len(wheel))
        assert src.read(LARGER) == _member(wheel, LARGER)
        assert src.read(SMALL) == _member(wheel, SMALL)
    finally:
        server.shutdown()
    assert (src.fallback_reason is not None) is falls_back, src.fallback_reason
    if reason:
        assert reason in src.fallback_reason
    assert (tmp_path / "blobs").exists() is falls_back
    assert len(server.ranges) <= 64  # never a loop: a bounded number of requests, then the full wheel


@pytest.mark.parametrize("tamper, reason", [
    (lambda w: _forged(w, LARGER, b"import os\n"), "does not match the sha256 in the wheel's RECORD"),
    (lambda w: _corrupted(w, LARGER), LARGER),
])
def test_wrong_bytes_by_range_are_never_cached(tmp_path, fast_retries, tamper, reason):
    wheel = real_wheel().read_bytes()
    server = WheelServer(wheel, ranged=tamper(wheel))  # ranges lie, the whole file is the real one
    try:
        src = _source(server, wheel, Cache(tmp_path))  # size unknown: the Content-Range gives it
        assert src.read(LARGER) == _member(wheel, LARGER)
    finally:
        server.shutdown()
    assert reason in src.fallback_reason
    cached = tmp_path / "wheel-members" / hashlib.sha256(wheel).hexdigest() / LARGER
    assert cached.read_bytes() == _member(wheel, LARGER)


@pytest.mark.parametrize("mode, reason", [
    ("announces", "the server announces 10737418240 bytes"),  # refused before a byte of the body is read
    ("endless", "the server sent more than the"),  # no Content-Length: refused at the first chunk past the size
])
def test_a_download_longer_than_the_index_says_is_refused_early(tmp_path, fast_retries, mode, reason):
    """Issue 26: a blob download was bounded by its sha256 alone, checked only once every byte had come."""
    wheel = real_wheel().read_bytes()
    digest = hashlib.sha256(wheel).hexdigest()
    server = WheelServer(wheel, mode=mode)
    try:
        with pytest.raises(SourceError, match=reason) as e:
            download.blob(Cache(tmp_path), digest, server.url(), size=len(wheel))
        assert f"the file has {len(wheel)}" in e.value.message or f"the {len(wheel)} bytes" in e.value.message
        assert server.wholes == 1  # refused, not tried again
        with pytest.raises(SourceError, match=reason):
            download.read_through(Cache(tmp_path), digest, server.url(), lambda chunks: sum(map(len, chunks)),
                                  size=len(wheel))
        assert server.wholes == 2
        bounded = server.sent
        assert bounded < 24 * 1024**2  # what the sockets' buffers hold at most, not the 128 MiB of two floods
        # Without the index's size, nothing stops it before the body ends: the whole flood is read (and a cut
        # one read again).
        with pytest.raises(SourceError, match="does not match the index's|more expected"):
            download.blob(Cache(tmp_path), digest, server.url())
        assert server.sent - bounded >= 64 * 1024**2
    finally:
        server.shutdown()
    assert not [p for p in (tmp_path / "blobs").rglob("*") if p.is_file()]  # no blob, no part left


def test_a_wheel_whose_full_download_is_wrong_too_is_refused(tmp_path, fast_retries):
    wheel = real_wheel().read_bytes()
    forged = _forged(wheel, LARGER, b"evil\n")
    server = WheelServer(forged)  # the index's sha256 is the real wheel's
    try:
        src = _source(server, wheel, Cache(tmp_path))
        with pytest.raises(SourceError, match="does not match the index's"):
            src.read(LARGER)
    finally:
        server.shutdown()
    assert not list(tmp_path.rglob("req_install.py"))


# --- private indexes: credentials in the URL or netrc, never printed -------------------------------

TOKEN = "tok-3f9a7c21e5d84b06"


def _index_server(wheel: bytes, auth: str | None) -> WheelServer:
    """A PEP 691 index on 127.0.0.1 listing pip's wheel, its file served by the same host."""
    import json

    server = WheelServer(wheel, auth=auth)
    name = "pip-23.2.1-py3-none-any.whl"
    server.files["/simple/pip/"] = json.dumps({"meta": {"api-version": "1.0"}, "name": "pip", "files": [
        {"filename": name, "url": f"../../files/{name}", "hashes": {"sha256": hashlib.sha256(wheel).hexdigest()},
         "size": len(wheel)}]}).encode()
    return server


def _use_index(monkeypatch, url: str) -> None:
    from patchset.sources import index

    monkeypatch.setenv("PATCHSET_INDEX_URL", url)
    monkeypatch.setenv("NETRC", "/nonexistent")  # no ~/.netrc of this machine's user gets in the way
    index.project_files.cache_clear()


def _all_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


def test_a_private_index_with_a_token_in_its_url(tmp_path, monkeypatch):
    wheel = real_wheel().read_bytes()
    server = _index_server(wheel, auth=f"ci:{TOKEN}")
    try:
        _use_index(monkeypatch, server.url("/simple/").replace("://", f"://ci:{TOKEN}@"))
        src = WheelSource.of("pip", "23.2.1", Cache(tmp_path))
        assert TOKEN not in src.file.url
        assert src.read(SMALL) == _member(wheel, SMALL)  # the file host is the index's: same credentials
    finally:
        server.shutdown()
    assert src.fallback_reason is None and server.ranges
    assert TOKEN.encode() not in _all_bytes(tmp_path)  # nothing in the cache remembers the token


def test_a_private_index_with_netrc_credentials(tmp_path, monkeypatch):
    wheel = real_wheel().read_bytes()
    server = _index_server(wheel, auth=f"ci:{TOKEN}")
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine 127.0.0.1 login ci password {TOKEN}\n")
    netrc.chmod(0o600)
    try:
        _use_index(monkeypatch, server.url("/simple/"))
        monkeypatch.setenv("NETRC", str(netrc))
        src = WheelSource.of("pip", "23.2.1", Cache(tmp_path / "cache"))
        assert src.read(SMALL) == _member(wheel, SMALL)
    finally:
        server.shutdown()


@pytest.mark.parametrize("where", ["wrong token", "no server"])
def test_index_errors_never_print_the_token(tmp_path, monkeypatch, where):
    from patchset.sources import index

    server = _index_server(real_wheel().read_bytes(), auth="ci:the-right-one")
    try:
        url = server.url("/simple/") if where == "wrong token" else "http://127.0.0.1:9/simple/"
        _use_index(monkeypatch, url.replace("://", f"://ci:{TOKEN}@"))
        with pytest.raises(SourceError) as caught:
            index.project_files("pip")
    finally:
        server.shutdown()
    message = str(caught.value)
    assert TOKEN not in message and TOKEN not in repr(caught.value.__cause__ or "")
    assert "http://127.0.0.1" in message
    if where == "wrong token":
        assert "HTTP 401" in message and "netrc" in message


def test_the_default_index_comes_from_pip_without_its_private_api(tmp_path):
    import subprocess
    import sys

    code = ("import sys; sys.modules['pip._internal'] = None\n"  # importing it would now fail
            "from patchset.sources import pip; print(pip.index_url())")
    env = {k: v for k, v in os.environ.items() if k not in ("PATCHSET_INDEX_URL", "PIP_INDEX_URL")}
    env["PIP_CONFIG_FILE"] = os.devnull  # no configured index: pip's built-in default
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.startswith("https://") and out.strip().endswith("/simple/"), out


def test_pip_config_names_the_index_and_the_ca_bundle(tmp_path, monkeypatch):
    from patchset.sources import pip

    config = tmp_path / "pip.conf"
    config.write_text("[global]\nindex-url = http://127.0.0.1:9/mirror/simple\ncert = /etc/mirror-ca.pem\n")
    for var in ("PATCHSET_INDEX_URL", "PIP_INDEX_URL", "PIP_CERT", "REQUESTS_CA_BUNDLE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    pip._pip_config.cache_clear()
    try:
        assert pip.index_url() == "http://127.0.0.1:9/mirror/simple/"
        assert patchset_http.ca_bundle() == "/etc/mirror-ca.pem"
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/etc/requests.pem")
        assert patchset_http.ca_bundle() == "/etc/requests.pem"
        monkeypatch.setenv("PIP_CERT", "/etc/pip.pem")
        assert patchset_http.ca_bundle() == "/etc/pip.pem"
    finally:
        pip._pip_config.cache_clear()


def test_pip_cert_lets_a_tls_index_with_a_private_ca_answer(tmp_path, monkeypatch):
    import ssl
    import subprocess

    from patchset.sources import index

    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    server = _index_server(real_wheel().read_bytes(), auth=None)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    try:
        url = server.url("/simple/").replace("http://", "https://")
        _use_index(monkeypatch, url)
        monkeypatch.setenv("PIP_CERT", str(tmp_path / "other.pem"))
        (tmp_path / "other.pem").write_bytes(Path(ssl.get_default_verify_paths().cafile or cert).read_bytes())
        with pytest.raises(SourceError, match="cannot list pip"):
            index.project_files("pip")
        monkeypatch.setenv("PIP_CERT", str(cert))
        index.project_files.cache_clear()
        assert [f.filename for f in index.project_files("pip")] == ["pip-23.2.1-py3-none-any.whl"]
    finally:
        server.shutdown()


# --- sdists: unsafe members refused on every Python, interrupted unpacks cleaned up -----------------


def _sdist(path: Path, members: list[tuple[str, str, bytes | str]]) -> Path:
    """A .tar.gz of (kind, name, data-or-link-target) members, kind in file|dir|sym|lnk."""
    import tarfile

    with tarfile.open(path, "w:gz") as tar:
        for kind, name, data in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))  # type: ignore[arg-type]
                continue
            info.type = {"dir": tarfile.DIRTYPE, "sym": tarfile.SYMTYPE, "lnk": tarfile.LNKTYPE}[kind]
            info.linkname = data if isinstance(data, str) else ""
            tar.addfile(info)
    return path


@pytest.mark.parametrize("evil, why", [
    (("file", "vllm-0.29.0/../../outside.txt", b"x"), "points outside"),
    (("file", "/tmp/absolute-outside.txt", b"x"), "points outside"),
    (("sym", "vllm-0.29.0/vllm/link.py", "/etc/passwd"), "symbolic link"),
    (("lnk", "vllm-0.29.0/vllm/hard.py", "vllm-0.29.0/vllm/a.py"), "hard link"),
])
@pytest.mark.parametrize("python_filter", [True, False], ids=["data_filter", "no_data_filter"])
def test_an_sdist_with_an_unsafe_member_is_refused_whole(tmp_path, monkeypatch, evil, why, python_filter):
    import tarfile

    from patchset.sources.sdist import _unpack

    if not python_filter:  # a Python without the data filter (3.10 before 3.10.12, 3.11 before 3.11.4)
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    blob = _sdist(tmp_path / "vllm-0.29.0.tar.gz", [("dir", "vllm-0.29.0", b""),
                                                     ("file", "vllm-0.29.0/vllm/a.py", b"a\n"), evil])
    dest = tmp_path / "cache" / "trees" / "dest"
    dest.mkdir(parents=True)
    with pytest.raises(SourceError, match=why):
        _unpack(blob, dest, blob.name)
    assert not list(dest.iterdir())  # nothing was unpacked
    assert not (tmp_path / "cache" / "outside.txt").exists() and not (tmp_path / "outside.txt").exists()
    assert not Path("/tmp/absolute-outside.txt").exists()


def test_a_safe_sdist_unpacks_below_its_top_folder(tmp_path, monkeypatch):
    import tarfile

    from patchset.sources.sdist import _unpack

    monkeypatch.delattr(tarfile, "data_filter", raising=False)
    blob = _sdist(tmp_path / "x.tar.gz", [("dir", "vllm-0.29.0", b""), ("file", "vllm-0.29.0/vllm/a.py", b"a\n")])
    _unpack(blob, tmp_path / "out", blob.name)
    assert (tmp_path / "out" / "vllm" / "a.py").read_bytes() == b"a\n"


def test_an_interrupted_fill_is_cleaned_up_by_the_next_run(tmp_path):
    cache = Cache(tmp_path)
    leftover = tmp_path / "trees" / ".sdist-abc.part-x1y2z3"  # what a killed unpack leaves
    (leftover / "vllm").mkdir(parents=True)
    (leftover / "vllm" / "half.py").write_text("half")
    other = tmp_path / "trees" / ".sdist-other.part-q"  # another entry's fill, maybe running now
    other.mkdir()
    entry = cache.tree("sdist-abc", lambda tmp: (tmp / "done").write_text("yes"))
    assert (entry / "done").read_text() == "yes"
    assert not leftover.exists()
    assert other.exists()


def test_a_wheel_already_downloaded_whole_is_read_without_the_network(tmp_path):
    wheel = tmp_path / "pip-23.2.1-py3-none-any.whl"
    wheel.write_bytes(real_wheel().read_bytes())
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    cache = Cache(tmp_path / "cache")
    download.blob(cache, digest, wheel.as_uri())  # as the venv runner leaves it
    src = WheelSource(IndexFile(wheel.name, "http://127.0.0.1:9/gone.whl", digest), cache, package="pip")
    assert src.read(SMALL) == _member(wheel.read_bytes(), SMALL)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(alphabet="abcXYZ019-_.", min_size=1, max_size=12))
def test_canonical_name_is_packagings(name: str) -> None:
    """The PEP 503 name the cache keys use, written out to keep packaging.utils off the warm path, is packaging's."""
    from packaging.utils import canonicalize_name

    from patchset.sources import canonical_name

    assert canonical_name(name) == canonicalize_name(name)


# --- found by fuzzing (tests/fuzz, issue 26): a damaged or oversized sdist is a SourceError, never a crash -------


def test_a_damaged_gzip_stream_is_refused_with_the_file(tmp_path):
    """zlib.error ('invalid distance too far back') escaped _unpack as an internal error."""
    from patchset.sources.sdist import _unpack

    good = _sdist(tmp_path / "good.tar.gz", [("dir", "vllm-0.29.0", b""),
                                              ("file", "vllm-0.29.0/vllm/a.py", bytes(range(256)) * 64)]).read_bytes()
    blob = tmp_path / "vllm-0.29.0.tar.gz"
    blob.write_bytes(good[:40] + bytes(b ^ 0x55 for b in good[40:80]) + good[80:])
    (tmp_path / "out").mkdir()
    with pytest.raises(SourceError) as e:
        _unpack(blob, tmp_path / "out", blob.name)
    assert e.value.file == blob.name and "cannot unpack" in e.value.message


@pytest.mark.parametrize("size, why", [(300 * 1024 * 1024, "314572800 bytes"), (None, "a sparse file")])
def test_a_member_larger_than_any_sdist_holds_is_refused_before_unpacking(tmp_path, size, why):
    """A header may claim any size (or a GNU sparse map): the archive is refused before a byte is written."""
    import tarfile

    from patchset.sources.sdist import safe_members

    top = tarfile.TarInfo("vllm-0.29.0")
    top.type = tarfile.DIRTYPE
    big = tarfile.TarInfo("vllm-0.29.0/vllm/big.py")
    if size is None:
        big.type, big.sparse = tarfile.GNUTYPE_SPARSE, [(0, 1)]  # type: ignore[attr-defined]
    else:
        big.size = size
    with pytest.raises(SourceError, match=why):
        safe_members([top, big], "vllm-0.29.0.tar.gz")


def test_a_range_answer_declaring_10_gb_is_refused_unread(tmp_path, fast_retries):
    """Issue 26: a body's size is bounded before it is read; an answer to a range that declares 10 GB (and
    sends on) is refused from its header, and the wheel comes whole, verified, as for any unusable range."""
    wheel = real_wheel().read_bytes()
    server = WheelServer(wheel, mode="huge")
    try:
        src = _source(server, wheel, Cache(tmp_path), len(wheel))
        assert src.read(SMALL) == _member(wheel, SMALL)
    finally:
        server.shutdown()
    assert "the answer declares 10737418240 bytes" in src.fallback_reason
    # read whole, the answers (one and its retries) would have taken 64 MiB each off the socket
    assert server.sent < 64 * 1024 * 1024, server.sent
