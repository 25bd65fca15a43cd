"""Rendering helpers shared by every report: JSON, JUnit XML, Markdown, terminal tables."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import sys
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import orjson

from patchset.errors import PatchsetError

if TYPE_CHECKING:  # rich is imported for tables only: --format json never pays for it
    from rich.console import Console
    from rich.table import Table


def dump_json(obj: object) -> str:
    """``--format json``'s document: ``json.dumps(obj, indent=2)`` and a newline.

    orjson writes it (the standard library's indenting encoder is pure Python), then every character
    past ASCII's printable range is escaped as ``json.dumps`` escapes it (``\\u00e9``, surrogate pairs),
    so the bytes are json's. What orjson refuses (a key that is not a string, an integer beyond 64 bits,
    a lone surrogate, a dataclass) goes to ``json.dumps``. One difference is left: a float below 1e-4
    (but 0) is the same number in orjson's own form (``0.00001``, ``1e-7`` for json's ``1e-05``,
    ``1e-07``); patchset's documents hold only seconds rounded to hundredths.
    """
    try:
        text = orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_PASSTHROUGH_DATACLASS
                            | orjson.OPT_PASSTHROUGH_DATETIME).decode()
    except TypeError:  # orjson.JSONEncodeError is one
        return json.dumps(obj, indent=2) + "\n"
    return _NOT_ASCII.sub(_escaped, text) + "\n"


_NOT_ASCII = re.compile("[\x7f-\U0010ffff]")


def _escaped(m: re.Match[str]) -> str:
    c = ord(m.group())
    if c < 0x10000:
        return f"\\u{c:04x}"
    c -= 0x10000
    return f"\\u{0xD800 + (c >> 10):04x}\\u{0xDC00 + (c & 0x3FF):04x}"


def error_doc(e: PatchsetError, more: Sequence[PatchsetError] | None = None) -> dict:
    """The ``error`` object of ``{"ok": false, "error": ...}`` (``--format json``, every verb): the first problem,
    and where one input held several (every patch file of an import that cannot be read, every problem of a
    manifest), the others under ``more`` (default: the error's own siblings), each an object of the same four
    keys."""
    doc: dict[str, object] = {"file": e.file, "line": e.line, "message": e.subject() + e.message, "hint": e.hint}
    others = e.errors[1:] if more is None else more
    if others:
        doc["more"] = [error_doc(x, ()) for x in others]
    return doc


@dataclass
class Case:
    """One JUnit test case: a patch on a release, a fix in an image, a test of a patch."""

    suite: str
    name: str
    failure: str | None = None
    skipped: str | None = None
    detail: str = ""


def junit(cases: Iterable[Case], name: str = "patchset", warnings: Sequence[str] = ()) -> str:
    """JUnit XML that parses whatever the texts hold (a hunk line with a form feed, a test that printed ``\\x1b``).

    ``warnings`` (what ``--format json`` lists under ``warnings``) are properties named ``warning`` of the
    first test suite, one each (JUnit has no place for them on ``testsuites``); a suite named ``name`` holds
    them when there is no case.

    Written with ElementTree rather than junitparser on purpose: junitparser writes the same XML with no
    less code, much slower (its per-case statistics update; ``bench/junit_writer.py``, figures in
    docs/records/performance.md), and does not escape illegal characters either.
    """
    import xml.etree.ElementTree as ET  # JUnit only: --format json and the tables never pay for it

    from patchset.runners.junit import escape_illegal as x

    cases = [Case(x(c.suite), x(c.name), c.failure and x(c.failure), c.skipped and x(c.skipped), x(c.detail))
             for c in cases]
    root = ET.Element("testsuites", name=x(name))
    suites: dict[str, list[Case]] = {}
    for c in cases:
        suites.setdefault(c.suite, []).append(c)
    if warnings and not suites:
        suites[name] = []
    for sname, items in suites.items():
        s = ET.SubElement(root, "testsuite", name=x(sname), tests=str(len(items)),
                          failures=str(sum(1 for c in items if c.failure)),
                          skipped=str(sum(1 for c in items if c.skipped)))
        if warnings and len(root) == 1:
            props = ET.SubElement(s, "properties")
            for w in warnings:
                ET.SubElement(props, "property", name="warning", value=x(w))
        for c in items:
            tc = ET.SubElement(s, "testcase", classname=sname, name=c.name)
            if c.failure:
                f = ET.SubElement(tc, "failure", message=c.failure)
                f.text = c.detail
            elif c.skipped:
                ET.SubElement(tc, "skipped", message=c.skipped)
            elif c.detail:
                out = ET.SubElement(tc, "system-out")
                out.text = c.detail
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    def cell(s: str) -> str:
        return str(s).replace("|", "\\|").replace("\n", "<br>")

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def console(stderr: bool = False) -> Console:
    from rich.console import Console

    return Console(file=sys.stderr if stderr else sys.stdout, highlight=False, soft_wrap=True)


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 file``, ``2 files``: counts that read as English."""
    return f"{n} {word if n == 1 else many or word + 's'}"


#: A detail cell longer than this is shortened in tables (the whole text is in --format json); ids, versions,
#: statuses and paths (every column but the last) are never cut.
CELL_LIMIT = 240


def styled() -> bool:
    """Whether a terminal gets styles: not with ``NO_COLOR`` set (https://no-color.org) or ``TERM=dumb``."""
    return not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def render(*items: object, tty: bool | None = None, width: int | None = None) -> str:
    """Rich renderables as text, fitted to where they go.

    On a terminal: its width, in colour unless :func:`styled` says no; tables keep every column but the
    last whole (ids, versions, paths) and wrap the last one, the detail. In a pipe or a CI log, whatever
    ``COLUMNS`` says: plain text, tables aligned in columns two spaces apart, without box drawing, so that
    logs stay greppable and nothing is cut.
    """
    from rich.table import Table

    tty = sys.stdout.isatty() if tty is None else tty
    if not tty:
        return "".join(_plain(item) if isinstance(item, Table) else f"{item}\n" for item in items)
    from rich import box
    from rich.console import Console

    if width is None:
        width = shutil.get_terminal_size((160, 24)).columns
    styles = styled()
    buf = io.StringIO()
    c = Console(file=buf, width=max(width, 40), force_terminal=True, color_system="auto" if styles else None,
                highlight=False, soft_wrap=False, emoji=False)
    for item in items:
        if isinstance(item, Table) and os.environ.get("TERM") == "dumb":
            item.box = box.ASCII
        if isinstance(item, Table) and len(item.columns) > 1 and not _fits(item, max(width, 40)):
            c.print(_stacked(item, max(width, 40)), end="", overflow="ignore", crop=False, markup=False)
            continue
        c.print(item)
    return buf.getvalue()


def _fits(t: Table, width: int) -> bool:
    """Make every column but the last as wide as its widest cell, never wrapped nor cut, the last taking
    the rest and wrapping between words; False when that leaves the last too narrow for its longest word
    or for 12 columns (then :func:`_stacked` shows it)."""
    columns = t.columns
    for col in columns[:-1]:
        widest = max([len(str(col.header)), *(len(str(c)) for c in col._cells)])
        col.min_width = col.width = widest
        col.no_wrap = True
    fixed = sum(col.width or 0 for col in columns[:-1]) + 3 * len(columns) + 1
    # The detail wraps between words; a word (a path) wider than its room would be cut: stack instead.
    longest = max([12, *(len(word) for c in columns[-1]._cells for word in str(c).split())])
    return fixed + longest <= width


def _stacked(t: Table, width: int) -> str:
    """A table too wide for the terminal: a row is its cells but the last on one line, whole, and the
    detail wrapped below it between words, indented (a word longer than the line stays whole)."""
    columns = [[str(c) for c in col._cells] for col in t.columns]
    lines = [str(t.title)] if t.title else []
    for row in zip(*columns, strict=True):
        lines.append("  ".join(row[:-1]))
        lines += textwrap.wrap(row[-1], width - 4, initial_indent="    ", subsequent_indent="    ",
                               break_long_words=False, break_on_hyphens=False) if row[-1] else []
    return "\n".join(lines) + "\n"


def table(title: str, headers: Sequence[str], rows: Iterable[Sequence[str]]) -> Table:
    """A table; :func:`render` decides how it looks where it goes (terminal or plain)."""
    from rich.table import Table
    from rich.text import Text

    t = Table(title=title, title_justify="left", show_lines=False)
    for i, h in enumerate(headers):
        last = i == len(headers) - 1
        t.add_column(h, overflow="fold" if last else "ignore", ratio=1 if last else None,
                     min_width=12 if last else None)
    for r in rows:
        cells = [str(c) for c in r]
        if cells:
            cells[-1] = _shorten(cells[-1])
        t.add_row(*(Text(c) for c in cells))  # text, never markup: a test id's [param] stays as it is
    return t


def _shorten(text: str) -> str:
    return text if len(text) <= CELL_LIMIT else text[: CELL_LIMIT - 1] + "…"


def _plain(t: Table) -> str:
    """The table as aligned plain text: each column but the last padded to its widest cell."""
    columns = [[str(col.header), *(str(c) for c in col._cells)] for col in t.columns]
    widths = [max(len(cell) for cell in col) for col in columns[:-1]]
    lines = [str(t.title)] if t.title else []
    for row in zip(*columns, strict=True):
        lines.append("  ".join([*(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=False)), row[-1]])
                     .rstrip())
    return "\n".join(lines) + "\n"


def github_annotation(level: str, message: str, file: str | None = None, line: int | None = None) -> str | None:
    """A GitHub Actions workflow command, or None outside Actions."""
    if os.environ.get("GITHUB_ACTIONS") != "true":
        return None
    props = []
    if file:
        props.append(f"file={file}")
    if line:
        props.append(f"line={line}")
    msg = message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return f"::{level} {','.join(props)}::{msg}" if props else f"::{level}::{msg}"
