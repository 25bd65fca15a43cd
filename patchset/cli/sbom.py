"""`patchset sbom IMAGE`: a CycloneDX SBOM of what an image carries, from an audit of its files."""

from __future__ import annotations

import argparse
import sys

from patchset.cli.options import add_manifest, image_reference, manifest_from
from patchset.cli.registry import subparser
from patchset.errors import EXIT_BAD_INPUT, EXIT_FINDING, EXIT_OK
from patchset.report.sbom import RENDERERS
from patchset.verbs.sbom import sbom


def add_parser(sub) -> argparse.ArgumentParser:
    p = subparser(sub, "sbom")
    p.add_argument("image", metavar="IMAGE", type=image_reference, help="local image or registry reference")
    add_manifest(p)
    p.add_argument("--format", choices=tuple(RENDERERS), default="cyclonedx-json", help="output format")
    p.add_argument("--source", default="wheel", metavar="KIND",
                   help="where the pristine release comes from (as for audit; default: wheel)")
    return p


def run(args: argparse.Namespace) -> int:
    report = sbom(manifest_from(args), args.image, source=args.source)
    if report.audit.error:
        print(f"patchset sbom: error: {report.audit.error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    sys.stdout.write(RENDERERS[args.format](report))
    return EXIT_OK if report.ok else EXIT_FINDING
