"""The one content digest patchset records and compares: sha256 of bytes, hex."""

from __future__ import annotations

import hashlib


def sha256(data: bytes | None) -> str | None:
    """The hex sha256 of ``data``; None for a file that is absent (so absent never equals any content)."""
    return hashlib.sha256(data).hexdigest() if data is not None else None
