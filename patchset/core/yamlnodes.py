"""YAML for the manifest, through ruamel.yaml: line numbers for every error, duplicate keys refused.

ruamel.yaml's round-trip loader records where each key, value and list item stands (``.lc``),
which the hand-written node tracker this replaces had to rebuild; its composer sees every key of
a mapping, so a key written twice is found with both lines instead of the second silently winning.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.constructor import DuplicateKeyError
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

Mapping = CommentedMap
Sequence = CommentedSeq

STR_TAG = "tag:yaml.org,2002:str"


class SyntaxProblem(Exception):
    """The text is not YAML; ``line`` is 1-based, or None when the parser gave no position."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


@dataclass(frozen=True)
class Duplicate:
    key: str
    first: int  # 1-based lines
    again: int


@dataclass
class Document:
    data: Any
    duplicates: list[Duplicate] = field(default_factory=list)
    # How a scalar that is not a string was written, by its 0-based (line, column): `0.30` stays
    # `0.30` in the hint, where the loaded float would print as 0.3.
    written: dict[tuple[int, int], str] = field(default_factory=dict)

    def text_at(self, position: tuple[int, int] | None, value: object) -> str:
        if position is not None and tuple(position) in self.written:
            return self.written[(position[0], position[1])]
        return str(value)


def load(text: str) -> Document:
    """Parse ``text``; raise SyntaxProblem when it is not YAML. Duplicates are reported, not raised."""
    try:
        root = _loader().compose(io.StringIO(text))
    except YAMLError as e:
        raise _syntax(e) from e
    doc = Document(None)
    if root is None:
        return doc
    for node in _walk(root):
        if isinstance(node, MappingNode):
            doc.duplicates += _duplicates(node)
        elif isinstance(node, ScalarNode) and _tag(node) != STR_TAG:
            doc.written[(node.start_mark.line, node.start_mark.column)] = node.value
    try:  # built from the nodes already composed: the text is parsed once
        doc.data = _construct(root, allow_duplicates=bool(doc.duplicates))
    except DuplicateKeyError as e:  # keys written differently but equal once loaded: 0.3 and 0.30
        key = re.search(r'duplicate key "(.*?)"', str(e.problem))
        doc.duplicates.append(Duplicate(key.group(1) if key else str(e.problem), _line(e.context_mark) or 0,
                                        _line(e.problem_mark) or 0))
        doc.data = _construct(root, allow_duplicates=True)
    except YAMLError as e:
        raise _syntax(e) from e
    return doc


def _construct(root: Node, *, allow_duplicates: bool) -> object:
    return _loader(allow_duplicates=allow_duplicates).constructor.construct_document(root)


def _loader(*, allow_duplicates: bool = False) -> YAML:
    # Once a duplicate is reported, the rest of the file is still read (keeping the first of the
    # two) so that one run lists every problem.
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = allow_duplicates
    return yaml


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


def _walk(root: Node) -> Iterator[Node]:
    seen: set[int] = set()  # an alias shares its anchor's node; never walk it twice (or forever)
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        if isinstance(node, MappingNode):
            for k, v in node.value:
                stack += [v, k]
        elif isinstance(node, SequenceNode):
            stack += list(reversed(node.value))


def _duplicates(node: MappingNode) -> list[Duplicate]:
    first: dict[tuple[bool, object], int] = {}
    out = []
    for key, _value in node.value:
        if not isinstance(key, ScalarNode) or key.value == "<<":
            continue
        # Keys are equal when their loaded values are: 0.3 and 0.30 are one float key.
        ident: tuple[bool, object] = (True, key.value) if _tag(key) == STR_TAG else (False, _scalar(key.value))
        here = key.start_mark.line + 1
        if ident in first:
            out.append(Duplicate(key.value, first[ident], here))
        else:
            first[ident] = here
    return out


def _scalar(text: str) -> object:
    try:
        value = _loader().load(text)
    except YAMLError:
        return text
    return value if isinstance(value, (int, float, bool, type(None))) else text


def _tag(node: Node) -> str:
    tag = node.tag
    return str(getattr(tag, "value", tag))  # a str in ruamel.yaml 0.19, a Tag object in 0.18


def _line(mark: object) -> int | None:
    return mark.line + 1 if mark is not None and hasattr(mark, "line") else None


def _syntax(e: YAMLError) -> SyntaxProblem:
    if isinstance(e, MarkedYAMLError):
        return SyntaxProblem(str(e.problem or e.context or "not YAML"), _line(e.problem_mark or e.context_mark))
    return SyntaxProblem(str(e), None)
