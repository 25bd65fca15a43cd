"""Reading pytest's JUnit XML back: a report that cannot be read is a problem string, never an exception."""

from __future__ import annotations

import pytest

from patchset.runners.junit import read_junit

CASE = ('<testsuites><testsuite><testcase classname="tests.test_a" name="test_x" time="{time}">'
        "</testcase></testsuite></testsuites>")


@pytest.mark.parametrize("declaration", ['<?xml version="1.0" encoding="utf-6"?>',
                                         '<?xml version="1.0" encoding="Jutf-8"?>'])
def test_an_encoding_python_lacks_is_a_problem_not_a_crash(tmp_path, declaration):
    """Found by the fuzzer (issue 26): LookupError from the XML declaration escaped as an internal error."""
    path = tmp_path / "junit.xml"
    path.write_text(declaration + CASE.format(time="0.1"))
    results, problem = read_junit(path)
    assert results == {} and problem is not None and "junit.xml" in problem


@pytest.mark.parametrize("time", ["soon", "nan", "inf", ""])
def test_a_time_that_is_not_a_number_counts_as_zero(tmp_path, time):
    path = tmp_path / "junit.xml"
    path.write_text(CASE.format(time=time))
    results, problem = read_junit(path)
    assert problem is None and results["tests/test_a.py::test_x"].duration == 0.0
