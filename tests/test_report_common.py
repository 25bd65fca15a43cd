"""Tables that fit where they go: a terminal, COLUMNS, or a plain log; and the JSON document, byte for byte."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from patchset.core.engine import HunkStatus
from patchset.core.series import PatchStatus
from patchset.report.common import CELL_LIMIT, Case, dump_json, render, table

IDS = ["offload-recurrent-load-boundary", "offload-mtp-eagle-serve"]


def rows() -> list[tuple[str, str, str]]:
    return [(i, "applies", "probe: " + "vllm/distributed/kv_transfer/scheduler.py contains 'x' " * 3) for i in IDS]


HEADERS = ("vllm", "patch", "status", "detail")
PATH = "vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py"


def check_table():
    return table("patchset check", HEADERS, [("0.29.0", *r) for r in rows()] +
                 [("0.30.0", "offload-mtp-eagle-serve", "partly-upstream", f"probe: {PATH}:445 contains [x]")])


@pytest.mark.parametrize("columns", [None, "60", "200"])
def test_a_pipe_gets_plain_aligned_lines_whatever_columns_says(monkeypatch, columns):
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    out = render(check_table(), tty=False)
    assert not any(ch in out for ch in "┏┃│━\x1b")
    lines = out.splitlines()
    assert lines[:2] == ["patchset check", "vllm    patch                            status           detail"]
    assert lines[2].startswith("0.29.0  offload-recurrent-load-boundary  applies          probe: ")
    assert lines[-1] == f"0.30.0  offload-mtp-eagle-serve          partly-upstream  probe: {PATH}:445 contains [x]"


def visible(text: str) -> list[str]:
    import re

    return [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in text.splitlines()]


@pytest.mark.parametrize("width", [60, 80, 120])
def test_on_a_terminal_ids_and_paths_stay_whole_at_any_width(monkeypatch, width):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    lines = visible(render(check_table(), tty=True, width=width))
    text = "\n".join(lines)
    for whole in (*IDS, "partly-upstream", f"{PATH}:445", "[x]"):
        assert whole in text, f"{whole} cut at {width} columns:\n{text}"
    # Only a path longer than the line itself may pass the edge, alone on its line (the terminal wraps it).
    assert all(len(line.rstrip()) <= width or len(line.split()) == 1 for line in lines), text
    assert "…" not in text


def test_a_wide_terminal_gets_a_table_and_a_narrow_one_stacked_rows(monkeypatch):
    monkeypatch.setenv("TERM", "xterm-256color")
    wide = visible(render(check_table(), tty=True, width=200))
    assert any("┃" in line for line in wide)
    narrow = visible(render(check_table(), tty=True, width=60))
    assert narrow[1] == "0.29.0  offload-recurrent-load-boundary  applies"
    assert narrow[2].startswith("    probe: ")


@pytest.mark.parametrize("env", [{"NO_COLOR": "1"}, {"TERM": "dumb"}])
def test_no_color_or_a_dumb_terminal_gets_no_styles(monkeypatch, env):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    out = render(check_table(), tty=True, width=200)
    assert "\x1b" not in out and "offload-recurrent-load-boundary" in out
    if env.get("TERM") == "dumb":
        assert "┃" not in out and "|" in out


def test_styles_are_there_otherwise(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert "\x1b[" in render(check_table(), tty=True, width=200)


def test_very_long_details_are_shortened_in_tables_but_never_an_id(monkeypatch):
    out = render(table("t", ("id", "detail"), [("x" * 300, "y" * (CELL_LIMIT + 50))]), tty=False)
    assert "y" * (CELL_LIMIT - 1) + "…" in out and "y" * CELL_LIMIT not in out
    assert "x" * 300 in out




# --format json: dump_json writes what json.dumps(indent=2) writes, byte for byte, whoever writes it.

_FLOATS = st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: f == 0 or abs(f) >= 1e-4)
_LEAVES = (st.text() | st.integers() | st.booleans() | st.none() | _FLOATS
           | st.sampled_from(["é", "\x7f", "\u2028", "😀", "\udc80"]))
_DOCS = st.recursive(_LEAVES, lambda kids: st.lists(kids, max_size=4) | st.tuples(kids, kids)
                     | st.dictionaries(st.text() | st.integers() | st.booleans(), kids, max_size=4), max_leaves=25)


@settings(max_examples=600, deadline=None)
@given(_DOCS)
def test_the_json_document_is_what_json_dumps_writes(doc):
    assert dump_json(doc) == json.dumps(doc, indent=2) + "\n"


@pytest.mark.parametrize("doc", [
    {"message": "line 3: 1.5", "n": 2},  # a float's text inside a string: orjson writes it
    {"differ": ["-    eps: 1.0e-6,", "+ x\": 1.5"], "ok": False},
    # what orjson writes otherwise, or refuses: json.dumps writes it
    [1e16, -1.5e-4, 1e-4, 0.0, 0.25, 1e22], {"big": 2**70}, {1: "an int key"}, ["\udc80"],
    [{"status": PatchStatus.FAILED, "hunk": HunkStatus.EXACT}],  # status words, str enums
])
def test_the_json_document_of_edge_cases(doc):
    assert dump_json(doc) == json.dumps(doc, indent=2) + "\n"


def test_a_float_below_1e_4_is_the_same_number():
    doc = {"seconds": [1e-05, -2.5e-07, 1.5e-300]}
    assert json.loads(dump_json(doc)) == doc
    assert dump_json(doc) != json.dumps(doc, indent=2) + "\n"  # orjson's form: the difference dump_json names


def test_a_dataclass_is_refused_as_json_refuses_it():
    with pytest.raises(TypeError):
        dump_json({"x": Case("s", "n")})
