"""What pip is configured with: the index URL, its credentials, the CA bundle.

Asked of pip itself (``pip config list``, and pip's help for its built-in default), so the index
is the one pip would use and no registry host is named here. Both answers take pip's import time;
:func:`start_pip_queries` starts them side by side ahead of need.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from functools import cache

from patchset.errors import SourceError
from patchset.sources.urls import host_of, split_credentials

_CONFIG, _HELP = ("config", "list"), ("download", "--help")


def index_url() -> str:
    """The index pip would use: PATCHSET_INDEX_URL, PIP_INDEX_URL, pip's config, pip's default.

    It may hold ``user:token@``; never print it without :func:`patchset.sources.urls.redact`.
    """
    for var in ("PATCHSET_INDEX_URL", "PIP_INDEX_URL"):
        if os.environ.get(var):
            return os.environ[var].rstrip("/") + "/"
    configured = pip_setting("index-url")
    if configured:
        _stop_pip(_HELP)  # started side by side in case the configuration named no index: not needed
    return (configured or _pip_default_index()).rstrip("/") + "/"


def credentials_for(url: str) -> tuple[str, str] | None:
    """The index URL's credentials when ``url`` is on the index's host (as pip sends them), else None."""
    try:
        public, creds = split_credentials(index_url())
    except SourceError:  # no index known: then no index credentials either
        return None
    return creds if creds and host_of(url) == host_of(public) else None


def pip_setting(name: str) -> str | None:
    """A pip configuration value (``index-url``, ``cert``), as ``pip config list`` reports it."""
    found = {}
    for line in _pip_config().splitlines():
        key, sep, value = line.partition("=")
        section, _, option = key.strip().rpartition(".")
        if sep and option == name:
            found[section] = value.strip().strip("'\"")
    for section in (":env:", "global", "download", "install"):
        if found.get(section):
            return found[section]
    return next(iter(found.values()), None)


#: pip children started ahead of need (:func:`start_pip_queries`), by their arguments.
_started: dict[tuple[str, ...], subprocess.Popen[str]] = {}


def start_pip_queries(*, index: bool = True) -> None:
    """Start the pip children the first request will wait for, side by side, and return at once.

    Each costs pip's import time (~0.25 s, most of a cold run's fixed cost); one after the other,
    and after importing requests, they used to cost twice that and more. ``index``: the index URL
    is wanted too (not only the CA bundle).
    """
    wanted = []
    if not (os.environ.get("PIP_CERT") or os.environ.get("REQUESTS_CA_BUNDLE")) or (
            index and not (os.environ.get("PATCHSET_INDEX_URL") or os.environ.get("PIP_INDEX_URL"))):
        wanted.append(_CONFIG)
    if index and not (os.environ.get("PATCHSET_INDEX_URL") or os.environ.get("PIP_INDEX_URL")):
        wanted.append(_HELP)  # needed only if the configuration names no index; it runs meanwhile
    for args in wanted:
        if args not in _started and not _answered(args):
            try:
                _started[args] = subprocess.Popen(_pip_command(args), stdout=subprocess.PIPE,
                                                  stderr=subprocess.DEVNULL, text=True, env=_pip_env())
            except OSError:
                return  # asked again when needed, and then the error is reported


def _answered(args: tuple[str, ...]) -> bool:
    info = (_pip_config if args == _CONFIG else _pip_default_index).cache_info()
    return info.currsize > 0


def _stop_pip(args: tuple[str, ...]) -> None:
    proc = _started.pop(args, None)
    if proc is not None:
        proc.kill()
        proc.communicate()


@cache
def _pip_config() -> str:
    try:
        return _pip(*_CONFIG)
    except (OSError, subprocess.SubprocessError):
        return ""


@cache
def _pip_default_index() -> str:
    """pip's built-in index, from its own help text (its public interface), so no host is named here."""
    try:
        text = " ".join(_pip(*_HELP).split())
    except (OSError, subprocess.SubprocessError) as e:
        raise SourceError(f"cannot ask pip for its default index: {e}",
                          hint="set PIP_INDEX_URL or PATCHSET_INDEX_URL") from e
    found = re.search(r"--index-url <url> [^()]*\(default (\S+?)\)", text)
    if not found:
        raise SourceError("pip's help names no default index", hint="set PIP_INDEX_URL or PATCHSET_INDEX_URL")
    return found.group(1)


def _pip(*args: str) -> str:
    proc = _started.pop(args, None)
    if proc is None:
        return subprocess.run(_pip_command(args), capture_output=True, text=True, timeout=60, check=True,
                              env=_pip_env()).stdout
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, proc.args, out)
    return out


def _pip_command(args: tuple[str, ...]) -> list[str]:
    return [sys.executable, "-m", "pip", *args]


def _pip_env() -> dict[str, str]:
    return {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
