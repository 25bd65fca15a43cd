"""The manifest's YAML as the loader reads it: plain containers that know where each key and item stands.

Parsing is ruamel.yaml's (:mod:`patchset.core.yamlparse`): YAML 1.2, every key of a mapping seen so a key
written twice is reported with both lines, positions recorded for every key, value and list item. Its
result is turned into :class:`Mapping` and :class:`Sequence`, which carry the same positions (``.lc``).

Parsing costs more than everything else a warm ``check`` does (ruamel.yaml is pure Python: about 20 ms to
import and 20 ms to read a manifest), so once the loader has found no problem in a manifest, its parse
is kept in the cache under the sha256 of the text and of the parser's own files, and read back as JSON:
the same text gives the same document, containers, positions, duplicates and written forms alike. Only
documents of plain scalars (str, int, bool, null) with no aliases are kept; anything else (a float, a
date, a block string, an anchor) is parsed every time, so the loader's messages about those never
depend on the cache. ``PATCHSET_NO_PARSE_CACHE=1``
turns the cache off. A cache that cannot be read or written is passed over silently: it only saves time.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from patchset import TYPE_CHECKING
from patchset.cache import derived, keep_derived, read_derived

if TYPE_CHECKING:
    from typing import Any

STR_TAG = "tag:yaml.org,2002:str"
PLAIN = (str, int, bool, type(None))  # exact types: a subclass (ruamel's HexInt, LiteralScalarString) is not plain


class SyntaxProblem(Exception):
    """The text is not YAML; ``line`` is 1-based, or None when the parser gave no position."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


class LineCol:
    """0-based positions, as ruamel.yaml's ``.lc``: the container's, and per key (key then value) or item."""

    def __init__(self, line: int | None = None, col: int | None = None, data: dict | None = None) -> None:
        self.line, self.col = line, col
        self.data: dict[Any, list[int]] = data if data is not None else {}

    def key(self, k: object) -> tuple[int, int]:
        return self.data[k][0], self.data[k][1]

    def value(self, k: object) -> tuple[int, int]:
        return self.data[k][2], self.data[k][3]

    def item(self, i: int) -> tuple[int, int]:
        return self.data[i][0], self.data[i][1]


class Mapping(dict):
    """A YAML mapping, in the order written."""

    lc: LineCol

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lc = LineCol()


class Sequence(list):
    """A YAML list."""

    lc: LineCol

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.lc = LineCol()


@dataclass(frozen=True)
class Duplicate:
    """A mapping key written twice in the manifest, with both lines."""

    key: str
    first: int  # 1-based lines
    again: int


@dataclass
class Document:
    """A parsed manifest: its data with line numbers, its duplicate keys and how its scalars were written."""

    data: Any
    duplicates: list[Duplicate] = field(default_factory=list)
    # How a scalar that is not a string was written, by its 0-based (line, column): `0.30` stays
    # `0.30` in the hint, where the loaded float would print as 0.3.
    written: dict[tuple[int, int], str] = field(default_factory=dict)
    plain: bool = True  # only plain scalars, no aliases: the JSON form gives back the same document

    def text_at(self, position: tuple[int, int] | None, value: object) -> str:
        if position is not None and tuple(position) in self.written:
            return self.written[(position[0], position[1])]
        return str(value)


def load(text: str) -> Document:
    """Parse ``text`` (from the cache when it was kept); raise SyntaxProblem when it is not YAML."""
    kept = read_derived(_entry(text))
    if kept is not None:
        with contextlib.suppress(ValueError, KeyError, TypeError, IndexError):
            return _from_json(kept)  # type: ignore[arg-type]
    from patchset.core import yamlparse

    return yamlparse.parse(text)


def keep(text: str, doc: Document) -> None:
    """Keep the parse of a text the loader found no problem in (bad input writes nothing, not even this)."""
    if doc.plain:
        keep_derived(_entry(text), _to_json(doc))


def line(container: object) -> int:
    """The 1-based line where a mapping or list starts (0 when unknown)."""
    lc = getattr(container, "lc", None)
    return lc.line + 1 if lc is not None and lc.line is not None else 0


def line_of(m: object, key: object) -> int:
    """The 1-based line of a key in a mapping, else of the mapping itself."""
    try:
        return m.lc.key(key)[0] + 1  # type: ignore[attr-defined]
    except (AttributeError, KeyError, TypeError):
        return line(m)


def item_line(seq: object, index: int) -> int:
    try:
        return seq.lc.item(index)[0] + 1  # type: ignore[attr-defined]
    except (AttributeError, KeyError, TypeError, IndexError):
        return line(seq)


def key_position(m: object, key: object) -> tuple[int, int] | None:
    try:
        return tuple(m.lc.key(key))  # type: ignore[attr-defined,return-value]
    except (AttributeError, KeyError, TypeError):
        return None


def value_position(m: object, key: object) -> tuple[int, int] | None:
    try:
        return tuple(m.lc.value(key))  # type: ignore[attr-defined,return-value]
    except (AttributeError, KeyError, TypeError):
        return None


def _entry(text: str) -> Path | None:
    """Where the parse of ``text`` is kept, or None when the cache is off."""
    return derived("yaml", text.encode("utf-8", "surrogatepass"), _parser_files())


def _parser_files() -> list[str]:
    """The files the parse depends on besides the text: the parser module and ruamel.yaml's.

    Found on ``sys.path`` without importing ruamel.yaml (``find_spec`` of a dotted name would import its parents).
    """
    from importlib.machinery import PathFinder  # importlib.util would cost a warm run 5 million instructions

    files = [os.path.join(os.path.dirname(__file__), "yamlparse.py"), __file__]
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
