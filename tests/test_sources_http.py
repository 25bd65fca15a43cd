"""The HTTP layer counts what it really received: per URL, in process and in PATCHSET_HTTP_LOG."""

from __future__ import annotations

import hashlib
import json

import pytest
from test_sources import WheelServer, _member, real_wheel

from patchset.cache import Cache
from patchset.sources import download, http
from patchset.sources.index import IndexFile
from patchset.sources.wheel import WheelSource

MEMBER = "pip/__init__.py"


def _served(server: WheelServer, total: int) -> int:
    """The body bytes an honest range server sent for the ranges it was asked."""
    sent = 0
    for wanted in server.ranges:
        start, end = (int(x) for x in wanted.split("=")[1].split("-"))
        sent += min(end, total - 1) - start + 1
    return sent


def test_the_byte_counter_counts_what_range_reads_fetched(tmp_path, monkeypatch):
    log = tmp_path / "http.jsonl"
    monkeypatch.setenv("PATCHSET_HTTP_LOG", str(log))
    wheel = real_wheel().read_bytes()
    server = WheelServer(wheel)
    url = server.url(f"/{tmp_path.name}/pip.whl")  # a URL of its own: the counter is per process
    try:
        src = WheelSource(IndexFile("pip-23.2.1-py3-none-any.whl", url, hashlib.sha256(wheel).hexdigest(),
                                    len(wheel)), Cache(tmp_path / "cache"), package="pip")
        before = http.fetched()
        assert src.read(MEMBER) == _member(wheel, MEMBER)
    finally:
        server.shutdown()
    answers, received = http.fetched(url)
    assert answers == len(server.ranges) > 0
    assert received == _served(server, len(wheel))
    assert 0 < received < len(wheel)  # ranges, not the whole wheel
    assert http.fetched() == (before[0] + answers, before[1] + received)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(a["url"], a["status"]) for a in lines] == [(url, 206)] * answers
    assert sum(a["bytes"] for a in lines) == received


def test_a_full_download_is_counted_and_logged_without_credentials(tmp_path, monkeypatch):
    log = tmp_path / "http.jsonl"
    monkeypatch.setenv("PATCHSET_HTTP_LOG", str(log))
    wheel = real_wheel().read_bytes()
    server = WheelServer(wheel, auth="user:tok-5e1f0a")
    public = server.url(f"/{tmp_path.name}/pip.whl")
    try:
        blob = download.blob(Cache(tmp_path / "cache"), hashlib.sha256(wheel).hexdigest(),
                                              public.replace("http://", "http://user:tok-5e1f0a@"))
    finally:
        server.shutdown()
    assert blob.read_bytes() == wheel
    assert http.fetched(public) == (1, len(wheel))
    text = log.read_text()
    assert "tok-5e1f0a" not in text
    entry = json.loads(text)  # one line: one answer
    assert (entry["url"], entry["status"], entry["bytes"]) == (public, 200, len(wheel))


def test_a_ca_bundle_is_loaded_once_for_every_connection_and_still_checked(tmp_path, monkeypatch):
    import ssl
    import subprocess

    import requests

    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    servers = [WheelServer(b"x" * 100) for _ in range(2)]
    for server in servers:
        server.socket = context.wrap_socket(server.socket, server_side=True)
    monkeypatch.setenv("PIP_CERT", str(cert))
    try:
        urls = [server.url(f"/{tmp_path.name}").replace("http://", "https://") for server in servers]
        before = http.ssl_context.cache_info()
        for url in urls * 2:  # two hosts (ports), two connections
            assert http.get(url).content == b"x" * 100
        after = http.ssl_context.cache_info()
        assert after.misses - before.misses == 1  # loaded once
        monkeypatch.setenv("PIP_CERT", str(real_wheel()))  # not a CA bundle at all: no connection
        with pytest.raises(requests.RequestException):  # as before: callers turn it into one clear line
            http.get(urls[0] + "/again")
    finally:
        for server in servers:
            server.shutdown()
