"""URLs that may hold credentials: split them off, and keep them out of every message."""

from __future__ import annotations

import re
import urllib.parse

_USERINFO = re.compile(r"(?<=://)[^/@\s'\"]+@")


_secrets: set[str] = set()


def redact(text: str) -> str:
    """``text`` with every ``user:password@`` of a URL and every known secret replaced by ``***``."""
    text = _USERINFO.sub("***@", text)
    for secret in sorted(_secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """(the URL without ``user:password@``, the credentials it held, or None)."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    user, password = urllib.parse.unquote(user), urllib.parse.unquote(password)
    for secret in (password, userinfo, urllib.parse.quote(password, safe="")):
        if len(secret) >= 3:  # never redact single letters all over a message
            _secrets.add(secret)
    return urllib.parse.urlunsplit(parts._replace(netloc=hostport)), (user, password)


def host_of(url: str) -> str:
    return urllib.parse.urlsplit(url).netloc.rpartition("@")[2].lower()
