"""`patchset sbom IMAGE`: a CycloneDX SBOM of what an image carries, from an audit of its files."""

from __future__ import annotations

import argparse
import sys

from patchset.cli.options import add_manifest, image_reference, manifest_from
from patchset.cli.registry import subparser


def add_parser(sub) -> argparse.ArgumentParser:
    p = subparser(sub, "sbom")
    p.add_argument("image", metavar="IMAGE", type=image_reference, help="local image or registry reference")
    add_manifest(p)
    p.add_argument("--format", choices=("cyclonedx-json",), default="cyclonedx-json", help="output format")
    p.add_argument("--source", default="wheel", metavar="KIND",
                   help="where the pristine release comes from (as for audit; default: wheel)")
    return p


def run(args: argparse.Namespace) -> int:
    from patchset.report import sbom
    from patchset.verbs.audit import audit

    manifest = manifest_from(args)
    report = audit(manifest, [args.image], source=args.source)
    image = report.images[0]
    if image.error:
        print(f"patchset sbom: error: {image.error}", file=sys.stderr)
        return 2
    sys.stdout.write(sbom.render(image, manifest))
    return 0 if image.ok else 1
