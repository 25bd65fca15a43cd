"""YAML loading that remembers line numbers, so manifest errors can name them."""

from __future__ import annotations

from typing import Any

import yaml


class Mapping(dict):
    """A dict that knows the line of itself and of each key (1-based)."""

    line: int = 0
    key_lines: dict[str, int]

    def line_of(self, key: str) -> int:
        return self.key_lines.get(key, self.line)


class Sequence(list):
    line: int = 0
    item_lines: list[int]


def load(text: str) -> Any:
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    if node is None:
        return None
    return _convert(node)


def _convert(node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        out = Mapping()
        out.line = node.start_mark.line + 1
        out.key_lines = {}
        for k, v in node.value:
            key = _scalar(k)
            out[str(key)] = _convert(v)
            out.key_lines[str(key)] = k.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        seq = Sequence(_convert(v) for v in node.value)
        seq.line = node.start_mark.line + 1
        seq.item_lines = [v.start_mark.line + 1 for v in node.value]
        return seq
    return _scalar(node)


def _scalar(node: yaml.Node) -> Any:
    # Resolve with the safe constructor so `1` is an int and `"0.29.0"` a string, like yaml.safe_load.
    return yaml.SafeLoader(" ").construct_object(node, deep=True) if not isinstance(
        node, (yaml.MappingNode, yaml.SequenceNode)) else node
