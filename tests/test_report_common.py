"""Tables that fit where they go: a terminal, COLUMNS, or a plain log."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from patchset.report.common import CELL_LIMIT, dump_json, render, table

IDS = ["offload-recurrent-load-boundary", "offload-mtp-eagle-serve"]


def rows() -> list[tuple[str, str, str]]:
    return [(i, "applies", "probe: " + "vllm/distributed/kv_transfer/scheduler.py contains 'x' " * 3) for i in IDS]


def test_a_pipe_without_columns_gets_plain_lines(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    out = render(table("patchset check", ("patch", "status", "detail"), rows()))
    assert not any(ch in out for ch in "┏┃│━")
    lines = out.splitlines()
    assert lines[:2] == ["patchset check", "patch  status  detail"]
    assert lines[2].startswith("offload-recurrent-load-boundary  applies  probe: ")


def test_at_80_columns_ids_stay_whole_and_the_detail_wraps(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = render(table("patchset check", ("patch", "status", "detail"), rows()))
    assert max(len(line.rstrip()) for line in out.splitlines()) <= 80
    for i in IDS:
        assert i in out  # never folded across lines


def test_very_long_cells_are_shortened_in_tables(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    out = render(table("t", ("id", "detail"), [("x", "y" * (CELL_LIMIT + 50))]))
    assert "y" * (CELL_LIMIT - 1) + "…" in out and "y" * CELL_LIMIT not in out


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.text()),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.tuples(inner, inner),
                            st.dictionaries(st.one_of(st.text(), st.integers(), st.booleans(), st.none()), inner,
                                            max_size=4)),
    max_leaves=30)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(json_values)
def test_dump_json_writes_the_bytes_json_dumps_writes(value: object) -> None:
    """The fast writer and ``json.dumps(indent=2)`` agree on every document, odd keys and floats included."""
    assert dump_json(value) == json.dumps(value, indent=2) + "\n"


def test_dump_json_leaves_what_json_refuses_to_json() -> None:
    with pytest.raises(TypeError):
        dump_json({"a": {1, 2}})
    deep: object = 1
    for _ in range(100):  # deeper than the shared indentation strings reach
        deep = [{"k": deep}]
    assert dump_json(deep) == json.dumps(deep, indent=2) + "\n"


def test_only_the_last_dumped_text_counts_as_one_document() -> None:
    from patchset.report.common import is_dumped

    text = dump_json({"ok": True})
    assert is_dumped(text) and not is_dumped(text + text) and not is_dumped(text[:-2])


def test_dump_json_writes_status_words_itself(monkeypatch) -> None:
    """A check document (str-enum status words, nested lists) takes the fast path, not json.dumps."""
    from patchset.core.engine import HunkStatus
    from patchset.report import common

    doc = {"ok": True, "hunks": [{"status": list(HunkStatus)[0], "line": 3, "differ": ["-a", "+b"]}], "x": 1.5}
    expected = json.dumps(doc, indent=2) + "\n"
    monkeypatch.setattr(common.json, "dumps", lambda *a, **k: pytest.fail("fell back to json.dumps"))
    assert dump_json(doc) == expected
