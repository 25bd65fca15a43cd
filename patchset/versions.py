"""Releases and release ranges (PEP 440): the one home of version order and membership.

Membership is the same under every `packaging` this project allows.
``Version("0.31.0rc1") in SpecifierSet(">=0.28")`` is False under packaging 23.2 and True under
26.x. A target the fork pinned is a release it runs, whatever its tag, so membership is decided
by version order alone: pre-releases are always admitted (:func:`in_range`).

`packaging` decides, except what it would answer the obvious way.
A plain release (``0.29.0``: numbers and dots, nothing else) is ordered
by its numbers with trailing zeros dropped, and a range made only of ``==``, ``!=``, ``<``,
``<=``, ``>``, ``>=`` clauses on plain releases admits a plain release by those comparisons:
that is PEP 440's rule for final releases (``==0.29`` is ``0.29.0``; the exclusions ``<V`` and
``>V`` make for pre-, post- and local releases never touch a plain one). Anything else (a
pre-release, a local label, a ``v`` prefix, ``~=``, ``==0.29.*``, ``===``, an epoch, a text that is
no version at all) goes to packaging. ``tests/test_core_versions.py`` holds both ways to the same
answers over generated cases, and under the oldest packaging allowed.
A range may join several specifiers with ``||`` (``==0.28.0 || ==0.29.0``): a release is in it when
any of them admits it, each decided as above. ``port`` writes that form when a range must admit exactly
one release more (docs/lifecycle.md).
This module needs nothing but `packaging` (and patchset's own package), so a test can run it under the oldest
allowed one.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

_PLAIN = re.compile(r"[0-9]+(?:\.[0-9]+)*")
_CLAUSE = re.compile(r"(==|!=|<=|>=|<|>)\s*([0-9]+(?:\.[0-9]+)*)")


class InvalidRelease(ValueError):
    """Not a PEP 440 version."""


class InvalidRange(ValueError):
    """Not a PEP 440 version specifier."""


def _plain(text: str) -> tuple[int, ...] | None:
    """A plain release's numbers without trailing zeros (``0.29.0`` -> (0, 29)), or None."""
    if not _PLAIN.fullmatch(text):
        return None
    return _without_trailing_zeros([int(x) for x in text.split(".")])


def _without_trailing_zeros(numbers: list[int]) -> tuple[int, ...]:
    while numbers and numbers[-1] == 0:
        numbers.pop()
    return tuple(numbers)


def _version(text: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion as e:
        raise InvalidRelease(str(e)) from None


class Release:
    """A release as written (``text``), compared by PEP 440 order: ``Release("0.29") == Release("0.29.0")``."""

    __slots__ = ("text", "_key")

    def __init__(self, text: str) -> None:
        self.text = text
        self._key = _plain(text)
        if self._key is None:
            _version(text)  # raises InvalidRelease

    @property
    def version(self) -> Version:
        """packaging's Version, for what only it knows (``.public``, ``.is_prerelease``)."""
        return _version(self.text)

    def _compare(self, other: Release) -> int:
        a, b = self._key, other._key
        if a is None or b is None:
            va, vb = self.version, other.version
            return (va > vb) - (va < vb)
        return (a > b) - (a < b)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Release) and self._compare(other) == 0

    def __lt__(self, other: Release) -> bool:
        return self._compare(other) < 0

    def __hash__(self) -> int:  # equal releases have the same numbers, trailing zeros dropped
        key = self._key
        if key is None:
            key = _without_trailing_zeros(list(self.version.release))
        return hash(key)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Release({self.text!r})"


def is_release(text: str) -> bool:
    """Is ``text`` a PEP 440 version?"""
    try:
        Release(text)
    except InvalidRelease:
        return False
    return True


#: Separates the alternatives of a union range (``==0.28.0 || ==0.29.0``): PEP 440 has no "or", and a range
#: widened to one more release must admit exactly that release more (docs/lifecycle.md), which a single
#: specifier can rarely say. The word is the one npm and Poetry use for the same thing.
UNION = "||"


class Releases:
    """A release range as the manifest writes it: a PEP 440 specifier ("" admits every release), or several
    joined by ``||`` (a release is in the range when any of them admits it).
    Two ranges are equal when they are written alike."""

    __slots__ = ("text", "_pieces")

    def __init__(self, text: str = "") -> None:
        self.text = text
        parts = text.split(UNION)
        if len(parts) > 1 and any(not x.strip() for x in parts):
            raise InvalidRange(f"{text!r} has an empty alternative around {UNION!r}")
        self._pieces = [_Piece(x) for x in parts]

    @property
    def alternatives(self) -> list[str]:
        """The PEP 440 specifiers joined by ``||``, as written (one for a plain range)."""
        return [x.text.strip() for x in self._pieces]

    def __contains__(self, release: object) -> bool:
        r = release if isinstance(release, Release) else Release(str(release))
        return any(r in x for x in self._pieces)

    def __str__(self) -> str:
        """As packaging writes each specifier (clauses sorted, spaces dropped): ``>=0.28, <0.30`` is
        ``<0.30,>=0.28``."""
        return f" {UNION} ".join(str(x.specifier) for x in self._pieces)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Releases) and self.text == other.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"Releases({self.text!r})"


class _Piece:
    """One PEP 440 specifier of a range: plain comparisons decided here, anything else by packaging."""

    __slots__ = ("text", "_clauses")

    def __init__(self, text: str) -> None:
        self.text = text
        self._clauses = _clauses(text)
        if self._clauses is None:
            self.specifier  # noqa: B018 -- raises InvalidRange

    @property
    def specifier(self) -> SpecifierSet:
        """packaging's SpecifierSet for this specifier."""
        try:
            return SpecifierSet(self.text)
        except InvalidSpecifier as e:
            raise InvalidRange(str(e)) from None

    def __contains__(self, r: Release) -> bool:
        if self._clauses is None or r._key is None:
            return in_range(r.text, self.specifier)
        v = r._key
        return all(_holds(op, v, w) for op, w in self._clauses)


def _clauses(text: str) -> list[tuple[str, tuple[int, ...]]] | None:
    """The range's comparisons on plain releases, or None when it has anything else."""
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue  # packaging drops empty parts too
        m = _CLAUSE.fullmatch(part)
        if m is None:
            return None
        key = _plain(m.group(2))
        assert key is not None  # the pattern admits only plain releases
        out.append((m.group(1), key))
    return out


def _holds(op: str, v: tuple[int, ...], w: tuple[int, ...]) -> bool:
    if op == "==":
        return v == w
    if op == "!=":
        return v != w
    if op == "<":
        return v < w
    if op == "<=":
        return v <= w
    if op == ">":
        return v > w
    return v >= w


def public(version: str) -> str:
    """The release without its local label (``0.29.0+cpu`` is ``0.29.0``), as packaging writes it; a text
    that is no version comes back as it is."""
    if _PLAIN.fullmatch(version):
        return ".".join(str(int(x)) for x in version.split("."))  # packaging's form: 00.29 is 0.29

    try:
        return str(Version(Version(version).public))
    except InvalidVersion:
        return version


def same_release(found: str, wanted: str) -> bool:
    """Does an installed version string name this release? ``0.29.0+cpu`` is 0.29.0 with a local label,
    and ``0.29`` is ``0.29.0``; a text that is no version is only itself."""
    a, b = _plain(found), _plain(wanted)
    if a is not None and b is not None:
        return a == b

    try:
        return Version(Version(found).public) == Version(Version(wanted).public)
    except InvalidVersion:
        return found == wanted


def in_range(version: str | Version, releases: SpecifierSet) -> bool:
    """Does ``releases`` include ``version``, by packaging? ``0.31.0rc1`` is in ``>=0.28`` and ``0.30.0rc1``
    is not in ``<0.30``."""
    v = version if isinstance(version, Version) else Version(version)
    return releases.contains(v, prereleases=True)
