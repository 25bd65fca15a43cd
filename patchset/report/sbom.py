"""Rendering ``patchset sbom``: the CycloneDX document :mod:`patchset.verbs.sbom` made, as it is."""

from __future__ import annotations

from collections.abc import Callable

from patchset.verbs.sbom import SbomReport


def cyclonedx_json(report: SbomReport) -> str:
    assert report.document is not None  # the CLI reports an image it could not read instead
    return report.document


RENDERERS: dict[str, Callable[[SbomReport], str]] = {"cyclonedx-json": cyclonedx_json}
