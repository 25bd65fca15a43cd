"""Hand-written index client and wheel range reader against the libraries issue 13 names.

    pip install --target /tmp/eco-libs pypi-simple==1.8.0 remotezip==0.12.6
    PYTHONPATH=/tmp/eco-libs .venv/bin/python bench/libs.py [--rounds 5]

Needs the package index (PATCHSET_INDEX_URL / PIP_INDEX_URL / pip's own, as patchset finds it).
Prints, for each pair, the median wall time over the rounds, the HTTP requests made and the
bytes received, and whether both return the same answer. Neither library is a dependency of
patchset: this script is how the decision in sources/index.py and sources/wheel.py was measured.
"""

from __future__ import annotations

import argparse
import statistics
import time
import zipfile
from collections.abc import Callable

import requests

from patchset.sources import http, index, pip, urls, wheel

PROJECT, VERSION = "vllm", "0.29.0"
MEMBER = "vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py"


class Counter:
    """Counts requests and body bytes through requests' response hook (both libraries use requests)."""

    def __init__(self) -> None:
        self.requests = 0
        self.bytes = 0

    def hook(self, resp: requests.Response, *args, **kwargs) -> None:
        self.requests += 1
        self.bytes += int(resp.headers.get("Content-Length") or 0)


def timed(fn: Callable[[], object], rounds: int, counter: Counter) -> tuple[float, float, float, object]:
    """(median seconds, requests per round, KiB received per round, the last answer)."""
    times, answer = [], None
    counter.requests = counter.bytes = 0
    for _ in range(rounds):
        t0 = time.perf_counter()
        answer = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), counter.requests / rounds, counter.bytes / rounds / 1024, answer


def hand_index() -> dict[str, str]:
    index.project_files.cache_clear()
    return {f.filename: f.sha256 for f in index.project_files(PROJECT)}


def lib_index(session: requests.Session) -> dict[str, str]:
    from pypi_simple import PyPISimple

    public, creds = urls.split_credentials(pip.index_url())
    session.auth, session.verify = creds, http.ca_bundle()
    with PyPISimple(endpoint=public, session=session) as client:
        page = client.get_project_page(PROJECT)
    return {p.filename: (p.digests or {}).get("sha256", "") for p in page.packages}


def hand_member(url: str, size: int | None) -> bytes | None:
    reader = wheel._Reader(zipfile.ZipFile(wheel._RangeFile(url, size)), whole=False)
    return reader.read(MEMBER)


def lib_member(url: str, session: requests.Session) -> bytes | None:
    """remotezip in place of _RangeFile; the RECORD sha256 check (wheel._Reader) kept on top, as adopting it would."""
    from remotezip import RemoteZip

    with RemoteZip(url, session=session, headers={"Accept-Encoding": "identity"}) as z:
        return wheel._Reader(z, whole=False).read(MEMBER)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    rounds = ap.parse_args().rounds
    counter = Counter()
    http.session().hooks["response"].append(counter.hook)
    own = requests.Session()
    own.hooks["response"].append(counter.hook)

    rows = []
    t, n, kib, hand = timed(hand_index, rounds, counter)
    rows.append(("index: hand (sources/index.py)", t, n, kib, f"{len(hand)} files"))
    t, n, kib, lib = timed(lambda: lib_index(own), rounds, counter)
    rows.append(("index: pypi-simple 1.8.0", t, n, kib, f"{len(lib)} files"))
    same_index = {k: v for k, v in lib.items() if v} == hand

    found = index.wheel(PROJECT, VERSION)
    t, n, kib, mine = timed(lambda: hand_member(found.url, found.size), rounds, counter)
    rows.append(("wheel member: hand (sources/wheel.py)", t, n, kib, f"{len(mine or b'')} B"))
    t, n, kib, theirs = timed(lambda: lib_member(found.url, own), rounds, counter)
    rows.append(("wheel member: remotezip 0.12.6 + RECORD", t, n, kib, f"{len(theirs or b'')} B"))

    print(f"{'what':42} {'median s':>9} {'requests':>9} {'KiB in':>9}  answer")
    for what, t, n, kib, answer in rows:
        print(f"{what:42} {t:9.3f} {n:9.1f} {kib:9.0f}  {answer}")
    print(f"same files and sha256: {same_index}; same member bytes: {mine == theirs}")
    misbehaving(http.session())  # with patchset's urllib3 Retry: the fairest setting for remotezip


def misbehaving(session: requests.Session) -> None:
    """The test suite's misbehaving range servers (tests/test_sources.py), against both readers.

    ``ok`` is the right bytes by range; ``FULL`` means the reader gave up on ranges, which in
    patchset means downloading the whole wheel (316 MB for vLLM); ``WRONG`` would be accepted bad bytes.
    """
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import test_sources as t
    from remotezip import RemoteZip

    class Suffixes(t._WheelHandler):  # remotezip asks for the tail as `bytes=-N`, as the real file host allows
        def do_GET(self) -> None:
            wanted = self.headers.get("Range") or ""
            if wanted.startswith("bytes=-"):
                total = len(self.server.ranged)
                del self.headers["Range"]
                self.headers["Range"] = f"bytes={max(0, total - int(wanted[7:]))}-{total - 1}"
            super().do_GET()

    t._WheelHandler = Suffixes
    http.BACKOFF = 0.01
    wheel_bytes = t.real_wheel().read_bytes()
    want = t._member(wheel_bytes, t.LARGER)

    def hand(url: str) -> bytes | None:
        return wheel._Reader(zipfile.ZipFile(wheel._RangeFile(url, len(wheel_bytes))), whole=False).read(t.LARGER)

    def lib(url: str) -> bytes | None:
        with RemoteZip(url, session=session) as z:
            return wheel._Reader(z, whole=False).read(t.LARGER)

    print(f"\n{'range server (tests/test_sources.py)':24} {'hand':>24} {'remotezip':>24}")
    for mode, failures in (("honest", 0), ("short", 10**6), ("liar", 10**6), ("misplaced", 10**6),
                           ("drop", 10**6), ("drop", 1), ("busy", 1), ("none", 0)):
        cells = []
        for reader in (hand, lib):
            server = t.WheelServer(wheel_bytes, mode=mode, failures=failures)
            try:
                got = reader(server.url())
                cells.append(f"ok ({len(server.ranges)} req)" if got == want else "WRONG")
            except Exception as e:  # noqa: BLE001 - any failure means: give up ranges, download whole
                cells.append(f"FULL ({type(e).__name__.lstrip('_')})"[:24])
            finally:
                server.shutdown()
        print(f"{mode + ('' if failures in (0, 10**6) else ' once'):24} {cells[0]:>24} {cells[1]:>24}")


if __name__ == "__main__":
    main()
