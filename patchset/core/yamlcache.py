"""A manifest's parse, kept: the loader reads the JSON form back instead of parsing the text again.

Parsing costs more than everything else a warm ``check`` does (ruamel.yaml is pure Python, slow to
import and to run; the figures are in docs/performance.md), so once the loader has found no problem in a
manifest, its parse is kept in the cache under the sha256 of the text and of the parser's own files, and
read back as JSON: the same text gives the same document, containers, positions, duplicates and written
forms alike. Only documents of plain scalars (str, int, bool, null) with no aliases are kept; anything
else (a float, a date, a block string, an anchor) is parsed every time, so the loader's messages about
those never depend on the cache. ``PATCHSET_NO_PARSE_CACHE=1`` turns the cache off. A cache that cannot
be read or written is passed over silently: it only saves time.
"""

from __future__ import annotations

import contextlib
import os
from importlib.machinery import PathFinder
from pathlib import Path

from patchset.cache import derived, keep_derived, read_derived
from patchset.core import yamlnodes
from patchset.core.yamlnodes import Document, Duplicate, Mapping, Sequence


def load(text: str) -> Document:
    """Parse ``text`` (from the cache when it was kept); raise SyntaxProblem when it is not YAML."""
    kept = read_derived(_entry(text))
    if kept is not None:
        with contextlib.suppress(ValueError, KeyError, TypeError, IndexError):
            return _from_json(kept)  # type: ignore[arg-type]
    from patchset.core import yamlparse  # imports ruamel.yaml: only when the text was not kept

    return yamlparse.parse(text)


def keep(text: str, doc: Document) -> None:
    """Keep the parse of a text the loader found no problem in (bad input writes nothing, not even this)."""
    if doc.plain:
        keep_derived(_entry(text), _to_json(doc))


def _entry(text: str) -> Path | None:
    """Where the parse of ``text`` is kept, or None when the cache is off."""
    return derived("yaml", text.encode("utf-8", "surrogatepass"), _parser_files())


def _parser_files() -> list[str]:
    """The files the parse depends on besides the text: the parser module and ruamel.yaml's.

    Found on ``sys.path`` without importing ruamel.yaml (``find_spec`` of a dotted name would import its parents).
    """
    files = [os.path.join(os.path.dirname(__file__), "yamlparse.py"), yamlnodes.__file__, __file__]
    spec = PathFinder.find_spec("ruamel")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        files += [os.path.join(folder, "yaml", name) for name in ("__init__.py", "main.py", "constructor.py")]
    return files


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
    return Document(_node_from_json(d["data"]), [Duplicate(k, a, b) for k, a, b in d["duplicates"]],
                    {(line_, col): text for line_, col, text in d["written"]})


def _node_from_json(node: object) -> object:
    if not isinstance(node, dict):
        return node
    if "m" in node:
        m = Mapping()
        for k, v, at in node["m"]:
            key = _node_from_json(k)
            m[key] = _node_from_json(v)
            if at is not None:
                m.lc.data[key] = at
        m.lc.line, m.lc.col = node["at"]
        return m
    s = Sequence()
    for i, (v, at) in enumerate(node["s"]):
        s.append(_node_from_json(v))
        if at is not None:
            s.lc.data[i] = at
    s.lc.line, s.lc.col = node["at"]
    return s
