"""The cache: entries a CI group can share, downloads retried a bounded number of times."""

from __future__ import annotations

import hashlib
import os
import socket
import stat
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from patchset.cache import Cache
from patchset.errors import SourceError
from patchset.sources import download, http


@pytest.fixture
def group_umask():
    old = os.umask(0o002)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_cache_entries_are_usable_by_the_group_that_shares_the_cache(tmp_path, group_umask):
    cache = Cache(tmp_path)
    src = tmp_path / "src.bin"
    src.write_bytes(b"hello")
    blob = download.blob(cache, hashlib.sha256(b"hello").hexdigest(), src.as_uri())
    put = cache.put_bytes(b"{}", "index", "x.json")
    tree = cache.tree("k", lambda tmp: (tmp / "f").write_text("x"))
    assert _mode(tree) == 0o775  # mkdtemp alone makes 0700
    assert _mode(blob) == 0o664 and _mode(put) == 0o664  # mkstemp alone makes 0600
    locks = [p for p in (tmp_path / "locks").rglob("*.lock")]
    assert locks and all(_mode(p) == 0o664 for p in locks)  # another member of the group can take the lock


def test_a_private_umask_keeps_entries_private(tmp_path):
    old = os.umask(0o077)
    try:
        tree = Cache(tmp_path).tree("k", lambda tmp: None)
        put = Cache(tmp_path).put_bytes(b"x", "a")
    finally:
        os.umask(old)
    assert _mode(tree) == 0o700 and _mode(put) == 0o600


class _Flaky(ThreadingHTTPServer):
    """Serves ``body``, cutting the connection mid-body the first ``cuts`` times."""

    def __init__(self, body: bytes, cuts: int) -> None:
        self.body, self.cuts, self.gets = body, cuts, 0
        super().__init__(("127.0.0.1", 0), _FlakyHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()


class _FlakyHandler(BaseHTTPRequestHandler):
    server: _Flaky

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        self.server.gets += 1
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.server.body)))
        self.end_headers()
        if self.server.gets <= self.server.cuts:
            self.wfile.write(self.server.body[:100])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        self.wfile.write(self.server.body)


@pytest.mark.parametrize("cuts, ok", [(2, True), (100, False)])
def test_a_download_cut_short_is_retried_a_bounded_number_of_times(tmp_path, monkeypatch, cuts, ok):
    monkeypatch.setattr(http, "BACKOFF", 0.01)
    body = os.urandom(300_000)
    digest = hashlib.sha256(body).hexdigest()
    server = _Flaky(body, cuts)
    url = f"http://127.0.0.1:{server.server_address[1]}/f.bin"
    try:
        if ok:
            assert download.blob(Cache(tmp_path), digest, url).read_bytes() == body
        else:
            with pytest.raises(SourceError, match="attempts"):
                download.blob(Cache(tmp_path), digest, url)
    finally:
        server.shutdown()
    assert server.gets == (cuts + 1 if ok else http.RETRIES + 1)
    assert not [p for p in (tmp_path / "blobs").rglob("*") if ".part-" in p.name]
