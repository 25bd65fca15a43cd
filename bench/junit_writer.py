"""The hand-written JUnit writer (report/common.py) against junitparser, on the same 300 cases.

    PYTHONPATH=<junitparser installed with pip --target> .venv/bin/python bench/junit_writer.py
"""

from __future__ import annotations

import statistics
import time
import xml.etree.ElementTree as ET

from patchset.report.common import Case, junit
from patchset.runners.junit import escape_illegal as x


def with_junitparser(cases: list[Case], name: str = "patchset") -> str:
    from junitparser import Failure, JUnitXml, Skipped, TestCase, TestSuite

    xml = JUnitXml(name=x(name))
    suites: dict[str, list[Case]] = {}
    for c in cases:
        suites.setdefault(x(c.suite), []).append(c)
    for sname, items in suites.items():
        suite = TestSuite(sname)
        for c in items:
            tc = TestCase(x(c.name), classname=sname)
            if c.failure:
                failure = Failure(x(c.failure))
                failure.text = x(c.detail)
                tc.result = [failure]
            elif c.skipped:
                tc.result = [Skipped(x(c.skipped))]
            elif c.detail:
                tc.system_out = x(c.detail)
            suite.add_testcase(tc)
        suite.update_statistics()
        xml.add_testsuite(suite)
    return ET.tostring(xml._elem, encoding="unicode")


def main() -> None:
    cases = [Case("0.29.0", f"p{i}", "failed" if i % 3 == 0 else None, "skip" if i % 3 == 1 else None,
                  "detail \x1b text " * 5) for i in range(300)]
    for fn in (junit, with_junitparser):
        runs = []
        for _ in range(20):
            t = time.perf_counter()
            fn(cases)
            runs.append(time.perf_counter() - t)
        print(f"{fn.__name__:18} {statistics.median(runs) * 1000:8.1f} ms (median of 20, 300 cases)")


if __name__ == "__main__":
    main()
