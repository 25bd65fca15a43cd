"""Release membership by PEP 440, the same under every `packaging` this project allows.

``Version("0.31.0rc1") in SpecifierSet(">=0.28")`` is False under packaging 23.2 and True under
26.x. A target the fork pinned is a release it runs, whatever its tag, so membership is decided
by version order alone: pre-releases are always admitted.
This module needs nothing but `packaging`, so a test can run it under the oldest allowed one.
"""

from __future__ import annotations

from packaging.specifiers import SpecifierSet
from packaging.version import Version


def in_range(version: str | Version, releases: SpecifierSet) -> bool:
    """Does ``releases`` include ``version``? ``0.31.0rc1`` is in ``>=0.28`` and ``0.30.0rc1`` is not in ``<0.30``."""
    v = version if isinstance(version, Version) else Version(version)
    return releases.contains(v, prereleases=True)
