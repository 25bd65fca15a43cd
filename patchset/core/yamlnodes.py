"""The manifest's YAML as the loader reads it: plain containers that know where each key and item stands.

Parsing is ruamel.yaml's (:mod:`patchset.core.yamlparse`): YAML 1.2, every key of a mapping seen so a key
written twice is reported with both lines, positions recorded for every key, value and list item. Its
result is turned into :class:`Mapping` and :class:`Sequence`, which carry the same positions (``.lc``).
:mod:`patchset.core.yamlcache` keeps a parse the loader found no problem in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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


