"""Lines a patch adds that upstream added itself, elsewhere: a merge that would carry them twice.

A fork often backports an upstream change (a connector's registration, a
model's registry entries) into the old release, at a place of its choosing and
often between its own marker comments. When the new release ships the same
change at its own place, the patch's hunk no longer meets upstream's lines,
so a 3-way merge (or a plain apply) is clean and puts the lines in a second
time: ``register_connector("P2pNcclConnector", ...)`` twice raises at import,
a model registry gets duplicate keys. Measured on FlagScale's 0.9.1 → 0.10.0
hand port (docs/records/port.md), where the maintainer dropped both backports.

The rule, per run of added lines (consecutive ``+`` lines of a hunk), on the
run's significant lines (stripped; blank lines and, in Python files, comment
lines left out, so a fork's marker comments do not hide the match):

* the run stands in V's file as a contiguous run of significant lines,
* it stands nowhere in U's file (as the patch found it): upstream added it
  between U and V, it is not a line both releases share,
* and the merged file holds it more often than V's file does: the merge
  added a copy.

Runs too small to mean anything on their own (one short line such as
``return None`` or ``)``) are left alone: a run counts from two significant
lines, or one of at least ``MIN_ONE_LINE`` characters.

Pure: contents in, findings out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

MIN_ONE_LINE = 40  # characters a lone added line needs (stripped) to be recognised on its own


@dataclass(frozen=True)
class Twice:
    """A run of a hunk's added lines that V already has: where V has it, and how many lines it is."""

    hunk: int
    line: int  # 1-based, in V's file: the run's first significant line
    lines: int  # significant lines in the run
    first: str  # the run's first significant line, stripped, for the message


def _significant(line: bytes, python: bool) -> bytes | None:
    s = line.strip()
    if not s or (python and s.startswith(b"#")):
        return None
    return s


def _sequence(content: bytes | None, python: bool) -> tuple[list[bytes], list[int]]:
    """A file's significant lines and their 1-based line numbers."""
    keys: list[bytes] = []
    at: list[int] = []
    for n, line in enumerate((content or b"").splitlines(), 1):
        s = _significant(line, python)
        if s is not None:
            keys.append(s)
            at.append(n)
    return keys, at


def _starts(seq: list[bytes], run: list[bytes]) -> list[int]:
    """Indexes of ``seq`` where ``run`` stands whole."""
    k = len(run)
    return [i for i in range(len(seq) - k + 1) if seq[i] == run[0] and seq[i:i + k] == run]


def runs(kinds: str, keys: Sequence[bytes]) -> list[list[bytes]]:
    """A hunk's runs of added lines (consecutive ``+`` lines), each as its lines."""
    out: list[list[bytes]] = []
    current: list[bytes] = []
    for kind, key in zip(kinds, keys, strict=True):
        if kind == "+":
            current.append(key)
        elif current:
            out.append(current)
            current = []
    if current:
        out.append(current)
    return out


def carried_twice(hunks: Sequence[tuple[int, str, Sequence[bytes]]], u: bytes | None, v: bytes | None,
                  merged: bytes | None, path: str) -> list[Twice]:
    """The runs of added lines (``hunks``: number, kinds, lines) that upstream added itself between ``u`` and
    ``v`` and that ``merged`` carries once more than ``v`` (module docstring)."""
    if v is None or merged is None:
        return []
    python = path.endswith(".py")
    useq, _ = _sequence(u, python)
    vseq, vat = _sequence(v, python)
    mseq, _ = _sequence(merged, python)
    found = []
    for number, kinds, keys in hunks:
        for run in runs(kinds, keys):
            sig = [s for s in (_significant(x, python) for x in run) if s is not None]
            if not sig or (len(sig) == 1 and len(sig[0]) < MIN_ONE_LINE):
                continue
            in_v = _starts(vseq, sig)
            if not in_v or _starts(useq, sig) or len(_starts(mseq, sig)) <= len(in_v):
                continue
            found.append(Twice(number, vat[in_v[0]], len(sig), sig[0].decode(errors="replace")))
    return found


def describe(path: str, found: Sequence[Twice], version: str, since: str) -> str:
    """The one-line reason a clean merge is refused."""
    t = found[0]
    more = f" (and {len(found) - 1} more run(s))" if len(found) > 1 else ""
    return (f"merges cleanly but would carry upstream's own lines twice: hunk {t.hunk} adds {t.lines} line(s) "
            f"({t.first[:60]!r} …) that vllm {version} added itself after {since}, at {path}:{t.line}{more}; "
            "drop them from the patch, or move the patch's change onto upstream's lines")
