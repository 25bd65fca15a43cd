"""Range reads of a wheel fetch little: a member as its own span, the central directory in few requests."""

from __future__ import annotations

import hashlib
import zipfile

import pytest
from test_sources import LARGER, SMALL, WheelServer, _member, real_wheel

from patchset.cache import Cache
from patchset.sources import http, wheel
from patchset.sources.index import IndexFile
from patchset.sources.wheel import WheelSource


def _open(server: WheelServer, data: bytes, tmp_path, name: str) -> tuple[WheelSource, str]:
    url = server.url(f"/{tmp_path.name}/{name}.whl")  # a URL of its own: counted apart from other tests'
    file = IndexFile("pip-23.2.1-py3-none-any.whl", url, hashlib.sha256(data).hexdigest(), len(data))
    return WheelSource(file, Cache(tmp_path / name), package="pip"), url


def test_a_member_costs_its_own_bytes_not_a_block(tmp_path):
    data = real_wheel().read_bytes()
    with zipfile.ZipFile(real_wheel()) as z:
        info = z.getinfo(LARGER)
    server = WheelServer(data)
    try:
        src, url = _open(server, data, tmp_path, "span")
        assert src.read(SMALL) == _member(data, SMALL)  # opens the wheel: central directory, RECORD
        opened = http.fetched(url)
        assert src.read(LARGER) == _member(data, LARGER)
    finally:
        server.shutdown()
    answers, received = (a - b for a, b in zip(http.fetched(url), opened, strict=True))
    assert answers == 1
    assert info.compress_size <= received <= info.compress_size + 30 + len(LARGER) + len(info.extra) + wheel.SLACK
    assert received < wheel.BLOCK
    assert src.fallback_reason is None


@pytest.mark.parametrize("mode", ["honest", "short"])
def test_the_central_directory_comes_in_one_request_not_one_per_block(tmp_path, monkeypatch, mode):
    monkeypatch.setattr(wheel, "BLOCK", 4096)  # pip's 40 KB central directory and RECORD: 16 blocks
    monkeypatch.setattr(http, "BACKOFF", 0.01)
    data = real_wheel().read_bytes()
    server = WheelServer(data, mode=mode)
    try:
        src, url = _open(server, data, tmp_path, mode)
        assert src.read(SMALL) == _member(data, SMALL)
        assert src.read(LARGER) == _member(data, LARGER)
    finally:
        server.shutdown()
    if mode == "honest":
        # the last block (end of central directory), the rest of it, RECORD, two members
        assert len(server.ranges) <= 5, server.ranges
        assert src.fallback_reason is None
    else:  # 1000-byte answers: still verified bytes, then the whole wheel (never a loop)
        assert "pieces too short" in (src.fallback_reason or "")
        assert len(server.ranges) <= 64


def _members(data: bytes, n: int) -> list[str]:
    """``n`` members of the wheel spread over it, under the package."""
    with zipfile.ZipFile(real_wheel()) as z:
        names = [i.filename for i in z.infolist() if i.filename.startswith("pip/") and i.compress_size]
    return names[:: max(1, len(names) // n)][:n]


def test_members_fetched_together_read_the_same_as_one_by_one(tmp_path):
    data = real_wheel().read_bytes()
    names = _members(data, 40)
    server = WheelServer(data)
    try:
        serial, _ = _open(server, data, tmp_path, "serial")
        one_by_one = {n: serial.read(n) for n in names}
        asked = len(server.ranges)
        server.ranges.clear()
        together, url = _open(server, data, tmp_path, "together")
        together.prefetch([*names, "pip/not-there.py", "tests/elsewhere.py"])
        fetched = http.fetched(url)
        read = {n: together.read(n) for n in names}
    finally:
        server.shutdown()
    assert read == one_by_one == {n: _member(data, n) for n in names}
    assert http.fetched(url) == fetched  # every member was there already: no request while reading
    assert len(server.ranges) < asked  # nearby members shared a range
    assert together.fallback_reason is None and serial.fallback_reason is None


@pytest.mark.parametrize("mode, failures, falls_back", [
    ("drop", 2, False),      # two answers cut mid-body: retried, in whichever thread they came
    ("liar", 10**6, True),   # every Content-Range lies: the whole wheel, verified
    ("busy", 3, False),      # 503s: urllib3's Retry
])
def test_members_fetched_together_from_a_misbehaving_server_are_verified(tmp_path, monkeypatch, mode, failures,
                                                                         falls_back):
    monkeypatch.setattr(http, "BACKOFF", 0.01)
    data = real_wheel().read_bytes()
    names = _members(data, 20)
    server = WheelServer(data, mode=mode, failures=failures)
    try:
        src, _ = _open(server, data, tmp_path, mode)
        src.prefetch(names)
        read = {n: src.read(n) for n in names}
    finally:
        server.shutdown()
    assert read == {n: _member(data, n) for n in names}
    assert (src.fallback_reason is not None) is falls_back, src.fallback_reason
    assert len(server.ranges) <= 64


# --- found by fuzzing (tests/fuzz, issue 26): a damaged zip is "unverified" (fall back or refuse), never a crash ---


def _small_wheel(members: dict[str, bytes]) -> bytearray:
    import base64
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        rows = [f"{n},sha256={base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()},{len(d)}"
                for n, d in members.items()]
        for name, data in members.items():
            z.writestr(name, data)
        z.writestr("x-1.dist-info/RECORD", "\n".join(rows) + "\n")
    return bytearray(buf.getvalue())


def _central(data: bytearray, name: bytes) -> int:
    """Where the central directory entry of ``name`` starts."""
    at = data.index(b"PK\x01\x02")
    while data[at + 46:at + 46 + len(name)] != name:
        at = data.index(b"PK\x01\x02", at + 1)
    return at


@pytest.mark.parametrize("damage, why", [
    ("method", "compression"),  # NotImplementedError from zipfile
    ("encrypted", "encrypted"),  # RuntimeError from zipfile
    ("size", "more than any wheel member"),  # a zip bomb's claim, refused before inflating
])
def test_a_member_zipfile_cannot_or_must_not_read_is_unverified(damage, why):
    import io
    import struct

    data = _small_wheel({"vllm/a.py": b"a = 1\n"})
    at = _central(data, b"vllm/a.py")
    if damage == "method":
        data[at + 10:at + 12] = struct.pack("<H", 77)
    elif damage == "encrypted":
        data[at + 8:at + 10] = struct.pack("<H", 1)
    else:
        data[at + 24:at + 28] = struct.pack("<I", wheel.MAX_MEMBER + 1)
    reader = wheel.open_reader(io.BytesIO(bytes(data)), whole=True)
    with pytest.raises(wheel.Unverified, match=why):
        reader.read("vllm/a.py")


def test_a_record_that_is_not_csv_is_unverified():
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("vllm/a.py", b"a = 1\n")
        z.writestr("x-1.dist-info/RECORD", '"' + "x" * 200_000 + '"\n')  # a field over csv's limit: csv.Error
    with pytest.raises(wheel.Unverified, match="not CSV"):
        wheel.open_reader(io.BytesIO(buf.getvalue()), whole=False)


def test_a_central_directory_that_is_not_a_zip_is_unverified():
    import io

    with pytest.raises(wheel.Unverified, match="central directory"):
        wheel.open_reader(io.BytesIO(b"PK\x05\x06" + b"\xff" * 18), whole=False)
