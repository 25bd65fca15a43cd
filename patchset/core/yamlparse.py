"""Parsing the manifest's YAML with ruamel.yaml, into :mod:`patchset.core.yamlnodes`' containers.

ruamel.yaml's round-trip loader records where each key, value and list item stands (``.lc``),
which the hand-written node tracker this replaces had to rebuild; its composer sees every key of
a mapping, so a key written twice is found with both lines instead of the second silently winning.
Only :func:`patchset.core.yamlcache.load` calls this, when its cache has no parse of the text.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.constructor import DuplicateKeyError
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from patchset.core.yamlnodes import PLAIN, STR_TAG, Document, Duplicate, Mapping, Sequence, SyntaxProblem


def parse(text: str) -> Document:
    """Parse ``text``; raise SyntaxProblem when it is not YAML. Duplicates are reported, not raised."""
    try:
        root = _loader().compose(io.StringIO(text))
    except YAMLError as e:
        raise _syntax(e) from e
    except NotImplementedError as e:  # ruamel.yaml's "overlap in comment" while parsing (found by fuzzing)
        raise SyntaxProblem(f"cannot be read as YAML ({str(e)[:200]})", None) from e
    doc = Document(None)
    if root is None:
        return doc
    for node in _walk(root):
        if isinstance(node, MappingNode):
            for key, _value in node.value:
                if isinstance(key, (MappingNode, SequenceNode)):  # ruamel.yaml raises TypeError constructing it
                    raise SyntaxProblem("a list or mapping used as a key ('? ' complex key); keys are plain values",
                                        key.start_mark.line + 1)
            doc.duplicates += _duplicates(node)
        elif isinstance(node, ScalarNode) and _tag(node) != STR_TAG:
            doc.written[(node.start_mark.line, node.start_mark.column)] = node.value
    try:  # built from the nodes already composed: the text is parsed once
        doc.data = _construct_reporting(root, doc)
    except YAMLError as e:  # a merge key (<<) written twice, even in the retry: never allowed (found by fuzzing)
        raise _syntax(e) from e
    # What ruamel.yaml lets through constructing: IndexError for a plain "+_" read as an int (found by fuzzing).
    except (TypeError, ValueError, OverflowError, RecursionError, IndexError) as e:
        raise SyntaxProblem(f"cannot be read as data ({type(e).__name__}: {str(e)[:200]})", None) from e
    converted = _Converted()
    doc.data = converted.node(doc.data)
    doc.plain = converted.plain
    return doc


class _Converted:
    """ruamel.yaml's CommentedMap/CommentedSeq as yamlnodes' Mapping/Sequence, positions and all."""

    def __init__(self) -> None:
        self.seen: dict[int, object] = {}
        self.plain = True  # no alias and only plain scalars so far

    def node(self, value: object) -> object:
        if not isinstance(value, (CommentedMap, CommentedSeq)):
            self.plain = self.plain and type(value) in PLAIN
            return value
        if id(value) in self.seen:  # an alias: the same container again (or one holding itself)
            self.plain = False
            return self.seen[id(value)]
        out: Mapping | Sequence = Mapping() if isinstance(value, CommentedMap) else Sequence()
        self.seen[id(value)] = out
        out.lc.line, out.lc.col = value.lc.line, value.lc.col
        out.lc.data = {k: list(at) for k, at in (value.lc.data or {}).items()}
        if isinstance(value, CommentedMap) and isinstance(out, Mapping):
            for k, v in value.items():
                out[self.node(k)] = self.node(v)
        elif isinstance(out, Sequence):
            out.extend(self.node(v) for v in value)
        return out


def _construct_reporting(root: Node, doc: Document) -> object:
    """The data of ``root``; a key equal to another once loaded (0.3 and 0.30) is added to ``doc``'s duplicates."""
    try:
        return _construct(root, allow_duplicates=bool(doc.duplicates))
    except DuplicateKeyError as e:
        key = re.search(r'duplicate key "(.*?)"', str(e.problem))
        doc.duplicates.append(Duplicate(key.group(1) if key else str(e.problem), _line(e.context_mark) or 0,
                                        _line(e.problem_mark) or 0))
        return _construct(root, allow_duplicates=True)


def _construct(root: Node, *, allow_duplicates: bool) -> object:
    return _loader(allow_duplicates=allow_duplicates).constructor.construct_document(root)


def _loader(*, allow_duplicates: bool = False) -> YAML:
    # Once a duplicate is reported, the rest of the file is still read (keeping the first of the
    # two) so that one run lists every problem.
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = allow_duplicates
    return yaml


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
        here = key.start_mark.line + 1
        ident: tuple[bool, object] = (True, key.value) if _tag(key) == STR_TAG else (False, _scalar(key.value, here))
        if ident in first:
            out.append(Duplicate(key.value, first[ident], here))
        else:
            first[ident] = here
    return out


def _scalar(text: str, line: int) -> object:
    """A plain key's loaded value (its text where it is not YAML alone); a key ruamel.yaml fails to load (a key
    "+_" raises IndexError: found by the long fuzz run) is a syntax problem at its line."""
    try:
        value = _loader().load(text)
    except YAMLError:
        return text
    except (TypeError, ValueError, OverflowError, RecursionError, IndexError, NotImplementedError) as e:
        raise SyntaxProblem(f"cannot be read as data: the key {text[:80]!r} ({type(e).__name__}: {str(e)[:120]})",
                            line) from e
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
