"""Errors a user can act on: each names where the problem is and what to do.

Every error carries the exit code the command line ends with (the contract
of every verb: 0 holds, 1 a finding, 2 bad input, 3 an internal error).
Anything that is not a :class:`PatchsetError` is an internal error.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDING = 1  # what was asked does not hold: a hunk fails, a fix is missing, not proven
EXIT_BAD_INPUT = 2  # manifest, patch file, arguments, environment
EXIT_INTERNAL = 3  # a bug in patchset: one line on stderr, the traceback in a file
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a tool stopped by Ctrl-C
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: stdout's reader left (`| head`)
EXIT_TERMINATED = 143  # 128 + SIGTERM: a CI job cancelled or past its time


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process is (the CLI's handler): every ``finally`` runs, as on Ctrl-C, so
    a cancelled job removes its containers and scratch folders instead of dying with them in place."""


class PatchsetError(Exception):
    """A problem with the user's input or environment, reported without a traceback."""

    exit_code = EXIT_BAD_INPUT
    # Every problem one input held, this one first (a manifest's, the patch files an import reads); a single
    # error holds none. ``--format json`` lists the others under "more".
    errors: tuple[PatchsetError, ...] = ()

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
        return f"{where}{self.what()}"

    def what(self) -> str:
        """The message without the file and line: patch, hunk, what is wrong, what to do."""
        return f"{self.subject()}{self.message}" + (f" ({self.hint})" if self.hint else "")

    def subject(self) -> str:
        """``patch P, hunk N: `` (or nothing): what the message is about, before the message."""
        if not self.patch:
            return ""
        return f"patch {self.patch}" + (f", hunk {self.hunk}" if self.hunk else "") + ": "


class Finding(PatchsetError):
    """What was asked does not hold (the series does not apply): exit 1, like a failing check, not bad input."""

    exit_code = EXIT_FINDING


class UsageError(PatchsetError):
    """The command line itself is wrong: an unknown option, a missing or malformed argument."""


class ManifestError(PatchsetError):
    """patches.yaml is invalid."""


class PatchFileError(PatchsetError):
    """A patch file cannot be used."""


class PatchFileErrors(PatchFileError):
    """Several patch files cannot be used: the first one's file, line and message, then where the others are,
    so that one run names every file to mend (a series imported from a folder may hold several)."""

    def __init__(self, errors: list[PatchFileError]) -> None:
        self.errors = tuple(errors)
        first = self.errors[0]
        super().__init__(first.message, file=first.file, line=first.line, patch=first.patch, hunk=first.hunk,
                         hint=first.hint)

    def render(self) -> str:
        others = [f"{e.file}:{e.line}" if e.line else str(e.file) for e in self.errors[1:]]
        more = f" [and {len(others)} more: {', '.join(others)}]" if others else ""
        return super().render() + more


class SourceError(PatchsetError):
    """A pristine tree could not be obtained."""


class NoSuchRelease(SourceError):
    """The package index has no such release, or not the kind of file asked for (an sdist where it has
    wheels only): one message shape wherever a release is named, at the manifest's line where it is one."""
