"""The one base of every status word type (hunk status, patch status, fix status, ...).

Each vocabulary is a ``Word`` subclass defined next to the code that decides
it. A member is a ``str``: it compares, hashes, prints, formats and
serialises (``json.dumps``) exactly as the bare word did, so the JSON and the
tables read the same; Python 3.10 has no ``enum.StrEnum``, hence this base.
"""

from __future__ import annotations

import enum


class Word(str, enum.Enum):
    """A status word: an enum member that reads as its own text."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)
