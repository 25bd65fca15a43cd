"""The manifest parse cache: what is read back from it is exactly what ruamel.yaml's parse gave."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from helpers import write_manifest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from patchset.core import yamlcache, yamlnodes, yamlparse
from patchset.core.manifest_load import inspect_manifest, load_manifest

REPO = Path(__file__).resolve().parent.parent


def shape(node: object) -> object:
    """Everything the loader can see of a node: type, value, and every recorded position."""
    if isinstance(node, yamlnodes.Mapping):
        return ("map", node.lc.line, node.lc.col, sorted(node.lc.data.items(), key=repr),
                [(shape(k), shape(v)) for k, v in node.items()])
    if isinstance(node, yamlnodes.Sequence):
        return ("seq", node.lc.line, node.lc.col, sorted(node.lc.data.items()), [shape(v) for v in node])
    return (type(node).__name__, node)


def kept_form(doc: yamlnodes.Document) -> yamlnodes.Document:
    return yamlcache._from_json(json.loads(json.dumps(yamlcache._to_json(doc))))


def same_document(a: yamlnodes.Document, b: yamlnodes.Document) -> None:
    assert shape(a.data) == shape(b.data)
    assert a.duplicates == b.duplicates and a.written == b.written


scalars = st.one_of(st.text(max_size=12), st.integers(-10**6, 10**6), st.booleans(), st.none())
keys = st.one_of(st.text(min_size=1, max_size=8), st.integers(0, 99), st.booleans())
documents = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                           st.dictionaries(keys, inner, max_size=4)), max_leaves=20)


def yaml_text(data: object, flow: bool) -> str:
    yaml = YAML(typ="rt")
    yaml.default_flow_style = flow
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


@settings(max_examples=150, deadline=None, derandomize=True)
@example({":0": None}, True)  # found in CI: ruamel.yaml writes "{:0: null}", which it refuses to read
@given(st.dictionaries(keys, documents, max_size=5), st.booleans())
def test_the_kept_form_of_any_plain_document_is_the_parse(data: dict, flow: bool) -> None:
    try:
        doc = yamlparse.parse(yaml_text(data, flow))
    except yamlnodes.SyntaxProblem:  # ruamel.yaml can write flow YAML it cannot read ({:0: null}): not ours
        assume(False)
    if doc.plain:  # others are never kept (ruamel reads some ints, 0 among them, as its own int type)
        same_document(kept_form(doc), doc)


def test_this_repositorys_manifest_reads_back_the_same() -> None:
    doc = yamlparse.parse((REPO / "patches.yaml").read_text())
    assert doc.plain and doc.written  # schema: 1 and the PR numbers are written scalars
    same_document(kept_form(doc), doc)


@pytest.mark.parametrize("text", [
    "a: 0.30\n",  # a float: its message quotes how it was written
    "a: &x [1]\nb: *x\n",  # an alias
    "a: |\n  block\n",  # a block string (a str subclass)
    "a: 0x10\n",  # a hex int (an int subclass)
    "a: 2020-01-01\n",  # a date
])
def test_documents_with_more_than_plain_scalars_are_never_kept(text: str) -> None:
    assert not yamlparse.parse(text).plain


def test_a_good_manifest_is_kept_once_and_loads_the_same_from_the_cache(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATCHSET_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("PATCHSET_NO_PARSE_CACHE", raising=False)
    parsed = load_manifest(REPO / "patches.yaml")
    kept = list((tmp_path / "cache" / "derived" / "yaml").glob("*.json"))
    assert len(kept) == 1
    assert load_manifest(REPO / "patches.yaml") == parsed
    monkeypatch.setattr(yamlparse, "parse", lambda text: pytest.fail("parsed again despite the cache"))
    assert load_manifest(REPO / "patches.yaml") == parsed


def test_a_manifest_with_problems_is_not_kept(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATCHSET_CACHE", str(tmp_path / "cache"))
    path = write_manifest(tmp_path, """
        schema: 2
        targets:
          - version: "0.29.0"
        patches: []
        """)
    _, errors = inspect_manifest(path)
    assert errors and "schema must be 1" in str(errors[0])
    assert not (tmp_path / "cache" / "derived" / "yaml").exists()


def test_a_damaged_entry_is_parsed_again(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATCHSET_CACHE", str(tmp_path / "cache"))
    parsed = load_manifest(REPO / "patches.yaml")
    [entry] = (tmp_path / "cache" / "derived" / "yaml").glob("*.json")
    entry.write_text('{"data": {"m": [[1]]')  # cut short
    assert load_manifest(REPO / "patches.yaml") == parsed


def test_an_entry_damaged_anywhere_is_parsed_again(tmp_path: Path, monkeypatch) -> None:
    """An entry is its sha256 and its JSON: a changed line number is still JSON, and was read back (issue 26)."""
    monkeypatch.setenv("PATCHSET_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("PATCHSET_NO_PARSE_CACHE", raising=False)
    parsed = load_manifest(REPO / "patches.yaml")
    [entry] = (tmp_path / "cache" / "derived" / "yaml").glob("*.json")
    kept = entry.read_bytes()
    at = kept.index(b'"at":[') + 6
    parse = yamlparse.parse
    calls: list[str] = []
    monkeypatch.setattr(yamlparse, "parse", lambda text: calls.append(text) or parse(text))
    damaged = [kept[:-9], kept[:at] + bytes([kept[at] ^ 1]) + kept[at + 1:], kept[32:], b"", kept[:31]]
    for n, bad in enumerate(damaged, 1):  # cut; a line number changed; the JSON without its sha256; empty; cut short
        entry.write_bytes(bad)
        assert load_manifest(REPO / "patches.yaml") == parsed and len(calls) == n


@pytest.mark.parametrize("content", [
    b"[]", b'"x"', b'{"data": 1, "duplicates": [], "written": {"a": 1}}',
    b'{"data": 1.5, "duplicates": [], "written": []}',  # a float: never kept
    b'{"data": {"m": [[{"s": [], "at": [0, 0]}, 1, null]], "at": [0, 0]}, "duplicates": [], "written": []}',
    b'{"data": {"m": [["a", 1, [true, 0, 0, 0]]], "at": [0, 0]}, "duplicates": [], "written": []}',
    b'{"data": {"s": [[1, [0]]], "at": [0, 0]}, "duplicates": [], "written": []}',
    b'{"data": {"x": 1}, "duplicates": [], "written": []}',
    b'{"data": 1, "duplicates": [[1, 2, 3]], "written": []}',
    b'{"data": 1, "duplicates": [], "written": [[0, 0, 5]]}',
    b"[" * 100_000 + b"]" * 100_000,
])
def test_a_whole_entry_of_another_shape_is_parsed_again(tmp_path: Path, monkeypatch, content: bytes) -> None:
    """Found writing the parse-cache fuzz target: a whole entry was read back into whatever shape it held."""
    import hashlib

    monkeypatch.setenv("PATCHSET_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("PATCHSET_NO_PARSE_CACHE", raising=False)
    parsed = load_manifest(REPO / "patches.yaml")
    [entry] = (tmp_path / "cache" / "derived" / "yaml").glob("*.json")
    entry.write_bytes(hashlib.sha256(content).digest() + content)
    assert yamlcache._unkept(entry.read_bytes()) is None
    assert load_manifest(REPO / "patches.yaml") == parsed


def test_the_cache_can_be_turned_off(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATCHSET_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATCHSET_NO_PARSE_CACHE", "1")
    load_manifest(REPO / "patches.yaml")
    assert not (tmp_path / "cache" / "derived" / "yaml").exists()


@pytest.mark.parametrize("text, line", [
    ("patches:\n ? - a\n   - b\n : x\n", 2),  # found by the fuzzer (issue 26): TypeError, unhashable CommentedSeq
    ("a: 1\n? {b: 1}\n: 2\n", 2),
])
def test_a_list_or_mapping_used_as_a_key_is_a_syntax_problem_at_its_line(tmp_path, text, line):
    with pytest.raises(yamlnodes.SyntaxProblem) as e:
        yamlparse.parse(text)
    assert e.value.line == line and "used as a key" in e.value.message
    path = tmp_path / "patches.yaml"
    path.write_text(text)
    _, errors = inspect_manifest(path)
    assert errors and (errors[0].file, errors[0].line) == (str(path), line)


def test_a_merge_key_written_twice_is_a_syntax_problem(tmp_path: Path) -> None:
    """Found by the long fuzz run (issue 26): ruamel.yaml's DuplicateKeyError for '<<' escaped the retry that
    allows duplicate keys (merge keys are never allowed twice): an internal error."""
    path = tmp_path / "patches.yaml"
    path.write_bytes((REPO / "tests" / "fuzz" / "corpus" / "manifest" / "regression-f460218f2bae").read_bytes())
    _, errors = inspect_manifest(path)
    assert errors and all(e.file == str(path) for e in errors)


@pytest.mark.parametrize("text", ["+_", "a: -_\n", "a: [+_]\n", "+_:", "? +_", "{+_}"])
def test_a_sign_and_underscores_alone_are_a_syntax_problem(tmp_path: Path, text: str) -> None:
    """Found by the long fuzz run (issue 26): ruamel.yaml reads "+_" as an int and fails with IndexError;
    as a key (the last three) it failed earlier, where keys are compared for duplicates."""
    path = tmp_path / "patches.yaml"
    path.write_text(text)
    _, errors = inspect_manifest(path)
    assert len(errors) == 1 and errors[0].file == str(path) and "cannot be read as data" in errors[0].message


def test_a_key_that_cannot_be_loaded_is_a_problem_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "patches.yaml"
    path.write_text("schema: 1\n+_: 2\n")
    _, errors = inspect_manifest(path)
    assert [(e.file, e.line) for e in errors] == [(str(path), 2)] and "the key '+_'" in errors[0].message


def test_comments_ruamel_yaml_cannot_place_are_a_syntax_problem() -> None:
    # found by the long fuzz run: ruamel.yaml's parser raised NotImplementedError ("overlap in comment")
    seed = Path(__file__).parent / "fuzz" / "corpus" / "manifest" / "regression-53584df5d556"
    with pytest.raises(yamlnodes.SyntaxProblem, match="cannot be read as YAML"):
        yamlparse.parse(seed.read_text())
