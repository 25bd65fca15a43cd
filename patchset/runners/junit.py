"""Reading pytest's JUnit XML back into results per node id.

A report is read as written; only when the parser refuses it (a pytest or a
plugin that let a control character a test printed through unescaped, or a
character reference XML 1.0 forbids, such as ``&#27;``) are the characters
XML cannot hold replaced by pytest's own ``#xNN`` spelling and the report read
again. A report that is missing or still unreadable gives no results and a
problem, which the verdicts treat as a crashed run, never as test outcomes.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from patchset.runners import ERROR, FAILED, PASSED, SKIPPED, NodeResult

NODEID_PROPERTY = "patchset_nodeid"  # written by data/patchset_pytest_plugin.py
DETAIL_CHARS = 4000
_RANK = {PASSED: 0, SKIPPED: 1, ERROR: 2, FAILED: 3}


#: What XML 1.0 cannot hold, raw (the Char production) ...
_ILLEGAL_CHARS = re.compile("[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
#: ... or as a character reference (decimal or hex).
_CHAR_REF = re.compile(r"&#(x[0-9a-fA-F]+|[0-9]+);")


def parse_junit(path: Path) -> dict[str, NodeResult]:
    """Results by node id; a file that fails to collect appears as ``error`` under its path."""
    return read_junit(path)[0]


def read_junit(path: Path) -> tuple[dict[str, NodeResult], str | None]:
    """(results by node id, None) or ({}, why the report cannot be used)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}, f"pytest wrote no JUnit report ({path.name})"
    except OSError as e:
        return {}, f"cannot read the JUnit report {path}: {e.strerror}"
    try:
        root = ET.fromstring(data)
    except (ET.ParseError, LookupError, ValueError):  # LookupError: an encoding in the XML declaration Python lacks
        try:
            root = ET.fromstring(xml_safe(data.decode("utf-8", "replace")).encode("utf-8"))
        except (ET.ParseError, LookupError, ValueError) as e:
            return {}, f"the JUnit report {path.name} is not well-formed XML ({e}): pytest was cut off writing it?"
    return _results(root), None


def xml_safe(text: str) -> str:
    """``text`` with every character XML 1.0 cannot hold, raw or as a reference, spelled ``#xNN`` as pytest does."""
    def ref(m: re.Match[str]) -> str:
        code = int(m.group(1)[1:], 16) if m.group(1)[0] in "xX" else int(m.group(1))
        legal = code <= 0x10FFFF and not _ILLEGAL_CHARS.match(chr(code))
        return m.group(0) if legal else f"#x{code:02X}"

    return escape_illegal(_CHAR_REF.sub(ref, text))


def escape_illegal(text: str) -> str:
    """``text`` with the raw characters XML 1.0 cannot hold (``\\x1b``, ``\\x00``) spelled ``#xNN``, as pytest does."""
    return _ILLEGAL_CHARS.sub(lambda m: f"#x{ord(m.group(0)):02X}", text)


def _results(root: ET.Element) -> dict[str, NodeResult]:
    out: dict[str, NodeResult] = {}
    for case in root.iter("testcase"):
        r = _case(case)
        prev = out.get(r.nodeid)
        # a test can fail in its call and error in teardown: keep the worse, never a pass over a failure
        if prev is None or _RANK[r.outcome] > _RANK[prev.outcome]:
            out[r.nodeid] = r
    return out


def _case(case: ET.Element) -> NodeResult:
    nodeid = None
    for prop in case.iter("property"):
        if prop.get("name") == NODEID_PROPERTY:
            nodeid = prop.get("value")
            break
    if nodeid is None:
        nodeid = _guess_nodeid(case)
    duration = _seconds(case.get("time"))
    for tag, outcome in (("failure", FAILED), ("error", ERROR), ("skipped", SKIPPED)):
        el = case.find(tag)
        if el is not None:
            text = (el.text or "").strip()
            message = el.get("message") or ""
            if outcome == SKIPPED:
                # the text is "path:line: reason"; the message may be the reason or a type name
                reason = text.split(": ", 1)[1] if ": " in text.split("\n", 1)[0] else text
                message = message if message and message != "pytest.skip" else reason
            return NodeResult(nodeid, outcome, _one_line(message) or _last_exception(text),
                              text[-DETAIL_CHARS:], duration)
    return NodeResult(nodeid, PASSED, "", "", duration)


def _seconds(text: str | None) -> float:
    """A testcase's ``time``; one that is not a number (a plugin's, a cut file's) counts as 0."""
    try:
        value = float(text or 0)
    except ValueError:
        return 0.0
    return value if value == value and abs(value) != float("inf") else 0.0


def _guess_nodeid(case: ET.Element) -> str:
    """Without the plugin's property: collection errors and tests the plugin never saw.

    pytest reports a module that fails to import as classname "" and name
    "tests.a.test_b" (dotted path); map it back to the file.
    """
    classname = case.get("classname") or ""
    name = case.get("name") or ""
    if not classname:
        return name.replace(".", "/") + ".py"
    parts = classname.split(".")
    # classname is dotted module path, optionally followed by a class name (capitalised by convention)
    cls: list[str] = []
    while parts and parts[-1][:1].isupper():
        cls.insert(0, parts.pop())
    return "::".join(["/".join(parts) + ".py", *cls, name])


def _one_line(text: str) -> str:
    text = text.strip()
    return text.splitlines()[0][:500] if text else ""


def _last_exception(text: str) -> str:
    for line in reversed(text.splitlines()):
        if line.startswith("E   "):
            return line[4:].strip()[:500]
    return _one_line(text)
