"""A manifest's parse, kept: the loader reads the JSON form back instead of parsing the text again.

Parsing costs more than everything else a warm ``check`` does (ruamel.yaml is pure Python, slow to
import and to run; the figures are in docs/records/performance.md), so once the loader has found no problem in a
manifest, its parse is kept in the cache under the sha256 of the text and of the parser's own files, and
read back as JSON: the same text gives the same document, containers, positions, duplicates and written
forms alike. Only documents of plain scalars (str, int, bool, null) with no aliases are kept; anything
else (a float, a date, a block string, an anchor) is parsed every time, so the loader's messages about
those never depend on the cache. ``PATCHSET_NO_PARSE_CACHE=1`` turns the cache off. A cache that cannot
be read or written is passed over silently: it only saves time.

An entry is the sha256 of its JSON, then the JSON: one cut short or damaged anywhere (a full disk, a bad
block, a hand edit) is not whole, and the text is parsed again; a whole one is read back only into the
shapes the parser makes (fuzzed: docs/fuzzing.md), anything else is passed over the same way.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from importlib.machinery import PathFinder
from pathlib import Path
from typing import TypeVar, cast

from patchset.cache import derived, keep_derived_bytes, read_derived_bytes
from patchset.core import yamlnodes
from patchset.core.yamlnodes import Document, Duplicate, Mapping, Sequence

_T = TypeVar("_T")


def load(text: str) -> Document:
    """Parse ``text`` (from the cache when it was kept); raise SyntaxProblem when it is not YAML."""
    kept = _unkept(read_derived_bytes(_entry(text)))
    if kept is not None:
        return kept
    from patchset.core import yamlparse  # imports ruamel.yaml: only when the text was not kept

    return yamlparse.parse(text)


def keep(text: str, doc: Document) -> None:
    """Keep the parse of a text the loader found no problem in (bad input writes nothing, not even this)."""
    if doc.plain:
        payload = json.dumps(_to_json(doc), separators=(",", ":")).encode()
        keep_derived_bytes(_entry(text), hashlib.sha256(payload).digest() + payload)  # read back only when whole


def _unkept(data: bytes | None) -> Document | None:
    """The Document :func:`keep` wrote; None when ``data`` is missing, not whole, or not of the parser's shapes."""
    if data is None or hashlib.sha256(data[32:]).digest() != data[:32]:
        return None
    with contextlib.suppress(ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError):
        return _from_json(json.loads(data[32:]))
    return None


def _entry(text: str) -> Path | None:
    """Where the parse of ``text`` is kept, or None when the cache is off."""
    return derived("yaml", text.encode("utf-8", "surrogatepass"), _parser_files())


@functools.cache  # once per process: where the parser lives does not change under it
def _parser_files() -> tuple[str, ...]:
    """The files the parse depends on besides the text: the parser module and ruamel.yaml's.

    Found on ``sys.path`` without importing ruamel.yaml (``find_spec`` of a dotted name would import its parents).
    """
    files = [os.path.join(os.path.dirname(__file__), "yamlparse.py"), yamlnodes.__file__, __file__]
    spec = PathFinder.find_spec("ruamel")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        files += [os.path.join(folder, "yaml", name) for name in ("__init__.py", "main.py", "constructor.py")]
    return tuple(files)


def _to_json(doc: Document) -> dict:
    return {"data": _node_to_json(doc.data),
            "duplicates": [[d.key, d.first, d.again] for d in doc.duplicates],
            "written": [[line_, col, text] for (line_, col), text in doc.written.items()]}


def _node_to_json(node: object) -> object:
    if isinstance(node, Mapping):
        return {"m": [[_node_to_json(k), _node_to_json(v), node.lc.data.get(k)] for k, v in node.items()],
                "at": [node.lc.line, node.lc.col]}
    if isinstance(node, Sequence):
        return {"s": [[_node_to_json(v), node.lc.data.get(i)] for i, v in enumerate(node)],
                "at": [node.lc.line, node.lc.col]}
    return node


def _from_json(d: dict) -> Document:
    """Raises ValueError (or TypeError, KeyError...) where ``d`` is not what :func:`_to_json` writes."""
    duplicates = [Duplicate(_of(k, str), _of(a, int), _of(b, int)) for k, a, b in d["duplicates"]]
    written = {(_of(line_, int), _of(col, int)): _of(text, str) for line_, col, text in d["written"]}
    return Document(_node_from_json(d["data"]), duplicates, written, plain=True)


def _of(value: object, kind: type[_T]) -> _T:
    if type(value) is not kind:  # exact: True is no line number
        raise ValueError(f"{value!r} is no {kind.__name__}")
    return cast(_T, value)


def _at(at: object, size: int) -> list[int]:
    if not isinstance(at, list) or len(at) != size or any(type(n) is not int for n in at):
        raise ValueError(f"{at!r} is no position")
    return at


def _node_from_json(node: object) -> object:
    if not isinstance(node, dict):
        if type(node) not in yamlnodes.PLAIN:  # a float, a list: nothing keep() writes as a scalar
            raise ValueError(f"{node!r} is no plain scalar")
        return node
    if "m" in node:
        m = Mapping()
        for k, v, at in node["m"]:
            key = _node_from_json(k)
            if isinstance(key, (Mapping, Sequence)):
                raise ValueError("a container as a key")
            m[key] = _node_from_json(v)
            if at is not None:
                m.lc.data[key] = _at(at, 4)
        m.lc.line, m.lc.col = _at(node["at"], 2)
        return m
    s = Sequence()
    for i, (v, at) in enumerate(node["s"]):
        s.append(_node_from_json(v))
        if at is not None:
            s.lc.data[i] = _at(at, 2)
    s.lc.line, s.lc.col = _at(node["at"], 2)
    return s
