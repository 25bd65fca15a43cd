"""Reading pytest's JUnit XML back into results per node id."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from patchset.runners import ERROR, FAILED, PASSED, SKIPPED, NodeResult

NODEID_PROPERTY = "patchset_nodeid"  # written by data/patchset_pytest_plugin.py
DETAIL_CHARS = 4000
_RANK = {PASSED: 0, SKIPPED: 1, ERROR: 2, FAILED: 3}


def parse_junit(path: Path) -> dict[str, NodeResult]:
    """Results by node id; a file that fails to collect appears as ``error`` under its path."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return {}
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
    duration = float(case.get("time") or 0)
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
    cls = []
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
