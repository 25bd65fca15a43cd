"""Edits to patches.yaml that keep the maintainer's comments, order, quoting and layout.

``port`` and ``refresh`` change a few values (a release range, a patch file
for a new range, a new target); everything else must come back byte for
byte, so that the diff shown before writing is the whole story. ruamel.yaml's
round-trip mode keeps comments and styles; the release arithmetic uses
``packaging`` like the loader does.
"""

from __future__ import annotations

import copy
import difflib
import io
import re
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString

from patchset.errors import ManifestError

UPPER = ("<", "<=")
LOWER = (">", ">=")


def _yaml() -> YAML:
    y = YAML()  # round-trip mode
    y.preserve_quotes = True
    y.width = 4096  # never re-wrap a long line the maintainer wrote on one line
    y.indent(mapping=2, sequence=4, offset=2)
    return y


def _like(old: Any, text: str) -> Any:
    """``text`` quoted the way ``old`` was."""
    if isinstance(old, (DoubleQuotedScalarString, SingleQuotedScalarString)):
        return type(old)(text)
    return DoubleQuotedScalarString(text) if re.search(r"[<>=!,: ]", text) else text


def widened(spec: str, version: str) -> str:
    """``spec`` changed as little as possible so that it includes ``version``."""
    s = SpecifierSet(spec)
    v = Version(version)
    if v in s:
        return spec
    keep = [x for x in s if v in SpecifierSet(str(x))]
    dropped_upper = any(x.operator in UPPER for x in s if x not in keep)
    parts = sorted((str(x) for x in keep), key=_order)
    if dropped_upper:
        parts.append(f"<={version}")
    return ",".join(parts)


def narrowed(spec: str, version: str) -> str:
    """``spec`` stopped before ``version``."""
    s = SpecifierSet(spec)
    if Version(version) not in s and not any(Version(version) < Version(x.version) for x in s
                                             if x.operator in LOWER):
        return spec
    keep = [str(x) for x in s if not (x.operator in UPPER and Version(x.version) > Version(version))]
    return ",".join(sorted(keep, key=_order) + [f"<{version}"])


def _order(s: str) -> tuple[int, str]:
    return (0 if s.startswith(">") else 1 if s.startswith("=") else 2, s)


class ManifestEditor:
    """patches.yaml as a round-trip document, with the edits ``port`` makes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.original = path.read_text(encoding="utf-8")
        self.yaml = _yaml()
        self.doc = self.yaml.load(self.original)

    def entry(self, patch_id: str) -> CommentedMap:
        for item in self.doc["patches"]:
            if item.get("id") == patch_id:
                return item
        raise ManifestError(f"no patch with id {patch_id!r}", file=str(self.path))

    def include(self, patch_id: str, version: str) -> None:
        """Widen the patch's releases so that they include ``version``."""
        e = self.entry(patch_id)
        old = e.get("releases", "")
        new = widened(str(old), version)
        if new != str(old):
            e["releases"] = _like(old, new)

    def carry(self, patch_id: str, version: str, from_release: str) -> None:
        """Widen the releases, and the patch-file range that served ``from_release``, to include ``version``."""
        self.include(patch_id, version)
        spec = self.entry(patch_id).get("patch")
        if not isinstance(spec, CommentedMap) or any(Version(version) in SpecifierSet(str(k)) for k in spec):
            return
        for i, (key, value) in enumerate(list(spec.items())):
            if Version(from_release) in SpecifierSet(str(key)):
                _rename(spec, i, key, _like(key, widened(str(key), version)), value)
                return

    def retire(self, patch_id: str, version: str, evidence: str) -> None:
        """Stop the patch's releases before ``version`` and say why, in a comment on the entry."""
        e = self.entry(patch_id)
        old = e.get("releases", "")
        new = narrowed(str(old), version)
        if new != str(old):
            e["releases"] = _like(old, new)
        note = f"retired for {version}: upstream there ({_one_line(evidence)})"
        key = "releases" if "releases" in e else "patch"
        if f"# retired for {version}:" in _comment_text(e):
            return  # ported to V before: the evidence is there already
        e.yaml_set_comment_before_after_key(key, before=note, indent=e.lc.col)  # added after any comment there

    def add_patch_file(self, patch_id: str, version: str, rel: str) -> None:
        """Name ``rel`` as the patch file from ``version`` on, narrowing the choice that served it."""
        e = self.entry(patch_id)
        spec = e.get("patch")
        v = Version(version)
        if isinstance(spec, str):
            m = CommentedMap()
            m[_like(None, f"<{version}")] = spec
            m[_like(None, f">={version}")] = rel
            e["patch"] = m
            return
        if not isinstance(spec, CommentedMap):
            raise ManifestError(f"patch {patch_id}: patch: is neither a path nor a mapping", file=str(self.path))
        new_key = [f">={version}"]
        for i, (key, value) in enumerate(list(spec.items())):
            s = SpecifierSet(str(key))
            if v in s:
                new_key += [str(x) for x in s if x.operator in UPPER]
                _rename(spec, i, key, _like(key, narrowed(str(key), version)), value)
            elif any(x.operator in LOWER and Version(x.version) > v for x in s):
                new_key.append(f"<{min(Version(x.version) for x in s if x.operator in LOWER)}")
        last = list(spec)[-1]
        key = _like(last, ",".join(dict.fromkeys(new_key)))
        spec[key] = rel
        _move_trailing_comment(spec, last, key)

    def add_target(self, version: str) -> None:
        """Add ``version`` under targets:, its settings copied from the newest target with the version swapped."""
        targets = self.doc["targets"]
        if any(Version(str(k)) == Version(version) for k in targets):
            return
        keys = list(targets)
        older = [k for k in keys if Version(str(k)) < Version(version)]
        pos = keys.index(max(older, key=lambda k: Version(str(k)))) + 1 if older else 0
        model = targets[keys[pos - 1]] if older else None
        settings = CommentedMap()
        if isinstance(model, CommentedMap):
            for k, val in model.items():
                settings[k] = _like(val, str(val).replace(str(keys[pos - 1]), version)) if isinstance(val, str) \
                    else val
            if model.fa.flow_style():
                settings.fa.set_flow_style()
        targets.insert(pos, _like(keys[0] if keys else None, version), settings)

    def text(self) -> str:
        out = io.StringIO()
        self.yaml.dump(self.doc, out)
        return out.getvalue()

    def diff(self) -> str:
        name = self.path.name
        return "".join(difflib.unified_diff(self.original.splitlines(keepends=True),
                                            self.text().splitlines(keepends=True), f"a/{name}", f"b/{name}"))


def _rename(m: CommentedMap, pos: int, old: Any, new: Any, value: Any) -> None:
    if old == new:
        return
    comment = m.ca.items.pop(old, None)
    del m[old]
    m.insert(pos, new, value)
    if comment is not None:
        m.ca.items[new] = comment
        token = comment[2] if len(comment) > 2 else None
        if token is not None and token.value.startswith("#"):
            token.column += len(str(new)) - len(str(old))  # the end-of-line comment keeps its gap


def _move_trailing_comment(m: CommentedMap, last: Any, new: Any) -> None:
    """Comment lines after the mapping's last entry follow the entry appended after it.

    ruamel stores them with the last key's end-of-line comment, which stays where it is.
    """
    comment = m.ca.items.get(last)
    token = comment[2] if comment and len(comment) > 2 else None
    if token is None:
        return
    eol, nl, rest = token.value.partition("\n")
    if not rest:
        return
    moved = copy.copy(token)
    moved.value = "\n" + rest
    m.ca.items[new] = [None, None, moved, None]
    if eol.strip():
        token.value = eol + nl
    else:
        del m.ca.items[last]


def _comment_text(m: CommentedMap) -> str:
    """Every comment ruamel attached inside a mapping, wherever it chose to keep it."""
    out: list[str] = []

    def walk(x: Any) -> None:
        if isinstance(x, list):
            for y in x:
                walk(y)
        elif x is not None and hasattr(x, "value"):
            out.append(str(x.value))

    walk(list(m.ca.items.values()))
    walk(m.ca.comment)
    return "".join(out)


def _one_line(text: str) -> str:
    return " ".join(text.split())
