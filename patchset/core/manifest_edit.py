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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString

from patchset.errors import ManifestError
from patchset.versions import UNION, Release, Releases

UPPER = ("<", "<=")
LOWER = (">", ">=")

#: A target's settings that name its own tree, never copied to another target (docs/pinned.md).
OWN_TREE = ("source", "wheel")


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
    """``spec`` admitting exactly one release more: every release it admitted, ``version``, and nothing else.

    PEP 440 has no "or", so the release is joined with ``||`` (``==0.28.0 || ==0.29.0``); only a clause
    ``!=V`` that alone kept V out is dropped instead, which admits exactly what ``==V`` admits more.
    Bounds are never dropped: ``>=0.28.0,<0.30.0`` widened to 0.31.0 must not take in 0.30.0.
    """
    r = Releases(spec)
    if version in r:
        return spec
    alts = r.alternatives
    for i, alt in enumerate(alts):
        clauses = [c.strip() for c in alt.split(",") if c.strip()]
        rest = [c for c in clauses if not _excludes(c, version)]
        if len(rest) < len(clauses) and rest and version in Releases(",".join(rest)):
            return _union(alts[:i] + [",".join(rest)] + alts[i + 1:])
    return _union(alts + [f"=={version}"])


def narrowed(spec: str, version: str, targets: Sequence[str] = ()) -> str:
    """``spec`` stopped before ``version``: it admits no release from ``version`` on, as it admitted the older ones.

    ``targets`` are the releases the manifest checks: one newer than ``version`` that ``spec`` admits keeps
    being admitted (a port to an older release retires nothing a newer target uses); then only ``version``
    itself is taken out (``!=V``).
    """
    r = Releases(spec)
    alts = [_stopped(a, version) for a in r.alternatives]
    kept = [a for a in alts if a is not None] or [f"{r.alternatives[0]},<{version}".lstrip(",")]
    new = _union(kept)
    if new != spec and any(t in r and t not in Releases(new) for t in targets if not _same(t, version)):
        if version not in r:
            return spec
        new = _union([f"{a},!={version}" if version in Releases(a) else a for a in r.alternatives])
    return new


def _stopped(alt: str, version: str) -> str | None:
    """One specifier stopped before ``version``; None when nothing it admits is older."""
    v = Version(version)
    clauses = list(SpecifierSet(alt))
    below = [x for x in clauses if x.operator in UPPER + ("==",) and "*" not in x.version
             and (Version(x.version) < v or (x.operator == "<" and Version(x.version) == v))]
    if below:
        return alt  # it ends before version already
    if any(x.operator in ("==", "===") for x in clauses):
        return None  # it admits only releases from version on
    keep = [str(x) for x in clauses if not (x.operator in UPPER and Version(x.version) >= v)]
    return ",".join(sorted(keep, key=_order) + [f"<{version}"])


def _excludes(clause: str, version: str) -> bool:
    """Is ``clause`` ``!=V`` for this very release, written plainly?"""
    m = re.fullmatch(r"!=\s*([0-9]+(?:\.[0-9]+)*)", clause)
    return m is not None and _same(m.group(1), version)


def _same(a: str, b: str) -> bool:
    return Release(a) == Release(b)


def _union(alts: list[str]) -> str:
    return f" {UNION} ".join(alts)


def _order(s: str) -> tuple[int, str]:
    return (0 if s.startswith(">") else 1 if s.startswith("=") else 2, s)


def _readable_widening(spec: str, version: str) -> str:
    """``spec`` with the clauses that keep ``version`` out dropped, an upper bound at ``version`` kept.

    Not exact (``<0.29`` becomes ``<=0.29.0``, which admits 0.29.0's pre-releases too): used only for a patch
    file's range, and only where no target's patch file changes (``ManifestEditor`` checks that).
    """
    s = SpecifierSet(spec) if UNION not in spec else None
    v = Version(version)
    if s is None:
        return widened(spec, version)
    if v in s:
        return spec
    keep = [x for x in s if v in SpecifierSet(str(x))]
    dropped_upper = any(x.operator in UPPER for x in s if x not in keep)
    parts = sorted((str(x) for x in keep), key=_order)
    if dropped_upper:
        parts.append(f"<={version}")
    return ",".join(parts)


def _serving(keys: Sequence[str], version: str) -> int | None:
    """The position of the first range in ``keys`` that admits ``version`` (the loader's choice)."""
    for i, k in enumerate(keys):
        if version in Releases(k):
            return i
    return None


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

    def targets(self, but: str | None = None) -> list[str]:
        """The releases under targets:, ``but`` left out (the release the user asked for)."""
        out = [str(k) for k in self.doc.get("targets") or {}]
        return [t for t in out if but is None or not _same(t, but)]

    def uses(self, patch_id: str, but: str) -> list[str]:
        """The targets (``but`` left out) that the patch's releases admit: the ones whose patch file counts."""
        releases = Releases(str(self.entry(patch_id).get("releases", "")))
        return [t for t in self.targets(but=but) if t in releases]

    def retired_for(self, patch_id: str) -> list[str]:
        """The releases a port retired the patch for, as its ``# retired for V:`` notes record them."""
        return re.findall(r"# retired for (\S+?):", _comment_text(self.entry(patch_id)))

    def include(self, patch_id: str, version: str) -> None:
        """Widen the patch's releases so that they admit ``version`` and nothing else more."""
        e = self.entry(patch_id)
        old = e.get("releases", "")
        new = widened(str(old), version)
        if new != str(old):
            e["releases"] = _like(old, new)

    def carry(self, patch_id: str, version: str, from_release: str) -> None:
        """Widen the releases, and the patch-file range that served ``from_release``, to admit ``version``."""
        self.include(patch_id, version)
        spec = self.entry(patch_id).get("patch")
        if not isinstance(spec, CommentedMap) or _serving([str(k) for k in spec], version) is not None:
            return  # one file serves every release, or one serves version already (the file port tried)
        keys = [str(k) for k in spec]
        i = _serving(keys, from_release)
        if i is None:
            return
        others = self.uses(patch_id, but=version)
        for new in (_readable_widening(keys[i], version), widened(keys[i], version)):
            after = keys[:i] + [new] + keys[i + 1:]
            if _serving(after, version) == i and all(_serving(after, t) == _serving(keys, t) for t in others):
                break
        old = list(spec)[i]
        _rename(spec, i, old, _like(old, new), spec[old])

    def retire(self, patch_id: str, version: str, evidence: str) -> None:
        """Stop the patch's releases before ``version`` and say why, in a comment on the entry."""
        e = self.entry(patch_id)
        old = e.get("releases", "")
        new = narrowed(str(old), version, self.targets(but=version))
        if new != str(old):
            e["releases"] = _like(old, new)
        note = f"retired for {version}: upstream there ({_one_line(evidence)})"
        key = "releases" if "releases" in e else "patch"
        if f"# retired for {version}:" in _comment_text(e):
            return  # ported to V before: the evidence is there already
        e.yaml_set_comment_before_after_key(key, before=note, indent=e.lc.col)  # added after any comment there

    def add_patch_file(self, patch_id: str, version: str, rel: str) -> None:
        """Name ``rel`` as the patch file for ``version``; every other target keeps the file it has.

        Readable first: the range that served ``version`` stops before it and the new file takes over from
        ``version`` on (``"<0.29.0"``/``">=0.29.0"``). Where that would hand a target another file (a port to
        a release older than a target), the new file serves exactly ``version`` (``==V``) and the old range
        leaves out exactly ``version`` (``!=V``).
        """
        e = self.entry(patch_id)
        spec = e.get("patch")
        others = self.uses(patch_id, but=version)
        if isinstance(spec, str):
            for keys in ([f"<{version}", f">={version}"], [f"!={version}", f"=={version}"]):
                if all(_serving(keys, t) == 0 for t in others):
                    break
            m = CommentedMap()
            m[_like(None, keys[0])] = spec
            m[_like(None, keys[1])] = rel
            e["patch"] = m
            return
        if not isinstance(spec, CommentedMap):
            raise ManifestError(f"patch {patch_id}: patch: is neither a path nor a mapping", file=str(self.path))
        keys = [str(k) for k in spec]
        values = [spec[k] for k in spec]
        before = {t: _serving(keys, t) for t in others}
        plan = _forward_split(keys, version)
        if not _keeps(plan, before, version, len(keys)):
            plan = _exact_split(keys, version)
        renamed, new_key, pos = plan
        originals = list(spec)
        for i, (old, new) in enumerate(zip(originals, renamed, strict=True)):
            _rename(spec, i, old, _like(old, new), values[i])
        originals = list(spec)
        last = originals[-1]
        spec.insert(pos, _like(originals[pos - 1] if pos else last, new_key), rel)
        if pos == len(originals):
            _move_trailing_comment(spec, last, list(spec)[pos])

    def add_target(self, version: str) -> None:
        """Add ``version`` under targets:, its settings copied from the newest target with the version swapped
        (but a commit target's ``source`` and ``wheel``: they are that commit's own)."""
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
                if k in OWN_TREE:
                    continue
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


Split = tuple[list[str], str, int]  # the old ranges renamed, the new file's range, where it goes


def _forward_split(keys: list[str], version: str) -> Split:
    """The range that served ``version`` stops before it; the new file serves from ``version`` up to the
    next range that starts above it (appended last)."""
    v = Version(version)
    new_key = [f">={version}"]
    renamed = list(keys)
    for i, key in enumerate(keys):
        s = SpecifierSet(key) if UNION not in key else None
        if s is None:
            continue
        if v in s:
            new_key += [str(x) for x in s if x.operator in UPPER]
            renamed[i] = narrowed(key, version)
        elif any(x.operator in LOWER and Version(x.version) > v for x in s):
            new_key.append(f"<{min(Version(x.version) for x in s if x.operator in LOWER)}")
    return renamed, ",".join(dict.fromkeys(new_key)), len(keys)


def _exact_split(keys: list[str], version: str) -> Split:
    """The range that served ``version`` leaves out exactly ``version``; ``==V`` goes right after it."""
    i = _serving(keys, version)
    renamed = list(keys)
    if i is None:
        return renamed, f"=={version}", len(keys)
    renamed[i] = _union([f"{a},!={version}" if version in Releases(a) else a
                         for a in Releases(keys[i]).alternatives])
    return renamed, f"=={version}", i + 1


def _keeps(plan: Split, before: dict[str, int | None], version: str, n: int) -> bool:
    """Does every target keep its file, and does ``version`` get the new one?"""
    renamed, new_key, pos = plan
    after = renamed[:pos] + [new_key] + renamed[pos:]

    def old_index(j: int | None) -> int | None:
        if j is None or j == pos:
            return None if j is None else -1
        return j if j < pos else j - 1

    return _serving(after, version) == pos and all(old_index(_serving(after, t)) == i for t, i in before.items())


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
