"""HTTP to the package index and its file hosts: credentials, CA bundle, retries, no secrets shown.

Private indexes take credentials the way pip does: ``user:token@`` in the index URL (sent to that
host only, also for file URLs the index serves from the same host) or a netrc entry for the host.
The CA bundle is pip's (``PIP_CERT``, then ``REQUESTS_CA_BUNDLE``, then pip's ``cert`` setting).
Every message that may hold a URL goes through :func:`redact`, so a token never reaches a log.

Connection failures and 429/5xx answers are retried a bounded number of times with backoff
(urllib3's ``Retry``); what is retried beyond that (a body cut short) is up to the caller.

Every answer's body is counted (:func:`record`, :func:`fetched`): how many bytes a cold run really
fetches is what decides its time. ``PATCHSET_HTTP_LOG=FILE`` also appends one JSON line per answer
(URL without credentials, status, bytes, seconds) for the benchmark and for whoever wonders why a
run is slow; the JSON documents of the verbs stay as they are.
"""

from __future__ import annotations

import _thread  # its lock only
import json
import os
import time
from functools import cache
from typing import TYPE_CHECKING, Any

from patchset.errors import SourceError
from patchset.sources import pip
from patchset.sources.urls import redact, split_credentials

if TYPE_CHECKING:  # requests is imported when a request is made: a warm cache never pays for it
    import ssl

    import requests

#: Bounded retries of one request; the wheel reader uses the same number for bodies cut short.
RETRIES = 3
#: Seconds: 0.2, 0.4, 0.8 between attempts.
BACKOFF = 0.2
TIMEOUT = 120

#: URL -> [answers, body bytes]; locked, as callers may fetch from several threads.
_fetched: dict[str, list[int]] = {}
_fetched_lock = _thread.allocate_lock()


def ca_bundle() -> str | bool:
    """The CA bundle pip would use, else the system's (True)."""
    for var in ("PIP_CERT", "REQUESTS_CA_BUNDLE"):
        if os.environ.get(var):
            return os.environ[var]
    return pip.pip_setting("cert") or True


def session() -> requests.Session:
    """This process's session. A forked child gets its own: pooled connections are sockets, and two
    processes reading answers from one socket would each get pieces of the other's."""
    return _session(os.getpid())


@cache
def _session(pid: int) -> requests.Session:
    import requests
    import requests.adapters
    from urllib3.util.retry import Retry

    retry = Retry(total=RETRIES, connect=RETRIES, read=RETRIES, status=RETRIES, backoff_factor=BACKOFF,
                  status_forcelist=(429, 500, 502, 503, 504), allowed_methods=frozenset({"GET"}),
                  raise_on_status=False, respect_retry_after_header=True)
    s = requests.Session()  # trust_env: netrc (NETRC or ~/.netrc) and proxies, as pip honours them
    adapter = _adapter_class()(max_retries=retry, pool_maxsize=16)  # range reads run side by side (wheel.py)
    s.mount("http://", adapter)
    s.mount("https://", adapter)
    return s


@cache
def _adapter_class() -> type:
    import requests.adapters

    class BundleOnce(requests.adapters.HTTPAdapter):
        """Loads a CA bundle file once, not on every new connection (loading one is slow, and a cold run
        opens one per host and per range read in flight). The same bundle, the same checks."""

        def build_connection_pool_key_attributes(self, request: Any, verify: Any, cert: Any = None) -> Any:
            host_params, pool_kwargs = super().build_connection_pool_key_attributes(request, verify, cert)
            if isinstance(verify, str) and pool_kwargs.get("ca_certs") == verify:
                try:
                    pool_kwargs["ssl_context"] = ssl_context(verify)
                except OSError:  # not a bundle: urllib3 says so on connecting, as a requests error
                    return host_params, pool_kwargs
                del pool_kwargs["ca_certs"]
            return host_params, pool_kwargs

    return BundleOnce


@cache
def ssl_context(bundle: str) -> ssl.SSLContext:
    """urllib3's own TLS context (its defaults, hostname checks included) trusting ``bundle`` only."""
    from urllib3.util.ssl_ import create_urllib3_context

    context = create_urllib3_context()
    context.load_verify_locations(cafile=bundle)
    return context


def get(url: str, *, headers: dict[str, str] | None = None, stream: bool = False,
        credentials: tuple[str, str] | None = None) -> requests.Response:
    """GET ``url``; credentials from the URL, else ``credentials`` (the index's, same host), else netrc.

    Raises :class:`requests.RequestException` (with secrets in it: pass it through :func:`describe`).
    """
    public, own = split_credentials(url)
    auth = own or credentials or pip.credentials_for(public)  # None: requests falls back to netrc
    started = time.monotonic()
    resp = session().get(public, headers=headers, stream=stream, timeout=TIMEOUT, auth=auth,
                         verify=ca_bundle(), allow_redirects=True)
    if not stream:  # a streamed body is counted by whoever reads it
        record(public, resp.status_code, _wire_bytes(resp), time.monotonic() - started)
    return resp


def read_body(resp: requests.Response, limit: int, url: str) -> bytes:
    """The body of an answer asked for with ``stream=True``, refused past ``limit`` bytes and counted.

    A body its ``Content-Length`` says is larger is refused before a byte is read, a longer one as soon as
    it passes the limit: an answer to a 64 KiB range that declares (or sends) 10 GB is never held in memory.
    Raises :class:`requests.RequestException` for that, retried or refused like any failed answer.
    """
    import requests

    started, declared, body = time.monotonic(), resp.headers.get("Content-Length", "").strip(), bytearray()
    try:
        if declared.isdigit() and int(declared) > limit:
            raise requests.RequestException(f"the answer declares {declared} bytes, more than the {limit} expected")
        for chunk in resp.iter_content(64 * 1024):
            body += chunk
            if len(body) > limit:
                raise requests.RequestException(f"the answer sends more than the {limit} bytes expected")
    finally:
        resp.close()
        record(split_credentials(url)[0], resp.status_code, len(body), time.monotonic() - started)
    return bytes(body)


def _wire_bytes(resp: requests.Response) -> int:
    """The body's bytes as they came (compressed, if they were), else as decoded."""
    try:
        return int(resp.raw.tell())
    except (AttributeError, TypeError, ValueError, OSError):
        return len(resp.content)


def record(url: str, status: int, nbytes: int, seconds: float = 0.0) -> None:
    """Count one answer from ``url`` (a URL without credentials) and its ``nbytes`` of body."""
    with _fetched_lock:
        entry = _fetched.setdefault(url, [0, 0])
        entry[0] += 1
        entry[1] += nbytes
    log = os.environ.get("PATCHSET_HTTP_LOG")
    if log:
        line = json.dumps({"url": redact(url), "status": status, "bytes": nbytes, "seconds": round(seconds, 4)})
        with open(log, "a", encoding="utf-8") as out:  # one write per line: lines of threads never mix
            out.write(line + "\n")


def fetched(url: str | None = None) -> tuple[int, int]:
    """(answers, body bytes) received from ``url`` in this process, or from every URL."""
    with _fetched_lock:
        rows = [_fetched.get(url, [0, 0])] if url else list(_fetched.values())
        return sum(r[0] for r in rows), sum(r[1] for r in rows)


def describe(error: BaseException) -> str:
    """A one-line, secret-free account of a failed request."""
    import requests

    if isinstance(error, requests.HTTPError) and error.response is not None:
        return f"HTTP {error.response.status_code} {error.response.reason}"
    return redact(str(error))


def check(resp: requests.Response, what: str) -> None:
    """Raise a SourceError naming ``what`` when the answer is not a success."""
    if resp.status_code < 400:
        return
    hint = None
    if resp.status_code in (401, 403):
        hint = "the index wants credentials: put user:token@ in the index URL or the host in ~/.netrc"
    raise SourceError(f"{redact(what)}: HTTP {resp.status_code} {resp.reason}", hint=hint)


def error(what: str, exc: BaseException, hint: str | None = None) -> SourceError:
    return SourceError(f"{redact(what)}: {describe(exc)}", hint=hint)
