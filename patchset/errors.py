"""Errors a user can act on: each names where the problem is and what to do."""

from __future__ import annotations


class PatchsetError(Exception):
    """A problem with the user's input or environment, reported without a traceback."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 patch: str | None = None, hunk: int | None = None, hint: str | None = None) -> None:
        self.file = file
        self.line = line
        self.patch = patch
        self.hunk = hunk
        self.hint = hint
        self.message = message
        super().__init__(self.render())

    def render(self) -> str:
        where = ""
        if self.file:
            where = self.file + (f":{self.line}" if self.line else "") + ": "
        what = ""
        if self.patch:
            what = f"patch {self.patch}" + (f", hunk {self.hunk}" if self.hunk else "") + ": "
        text = f"{where}{what}{self.message}"
        if self.hint:
            text += f" ({self.hint})"
        return text


class ManifestError(PatchsetError):
    """patches.yaml is invalid."""


class PatchFileError(PatchsetError):
    """A patch file cannot be used."""


class SourceError(PatchsetError):
    """A pristine tree could not be obtained."""
