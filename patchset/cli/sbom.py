"""`patchset sbom IMAGE`: a CycloneDX SBOM of what an image carries, from an audit of its files."""

from __future__ import annotations

import argparse
import sys

from patchset.cli.options import add_manifest, image_reference, manifest_from


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "sbom", help="a CycloneDX SBOM of an image: vLLM with the backports the image really carries",
        description="Audit IMAGE's files (as `patchset audit` does) and print a CycloneDX 1.6 document whose "
        "vLLM component lists, under pedigree.patches, every fix the audit found carried (type backport, "
        "the diff, the upstream PR it resolves). Missing or tampered fixes are never listed as carried. "
        "Exit codes: 0 written, 1 the image lacks a targeted fix (the SBOM is still printed), 2 bad input. "
        "Example: patchset sbom myfork/vllm:0.29.0 > sbom.cdx.json")
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
