from __future__ import annotations

import argparse
import sys
from pathlib import Path

from patchset.cli import progress as reporter
from patchset.cli.options import add_manifest, add_vllm, image_reference, image_tag, manifest_from
from patchset.cli.registry import subparser
from patchset.errors import EXIT_OK
from patchset.report.build import RENDERERS
from patchset.verbs.build import build_image, default_base, default_tag, sbom_file_for


def add_parser(sub) -> argparse.ArgumentParser:
    p = subparser(sub, "build")
    add_vllm(p, required=True)
    add_manifest(p)
    p.add_argument("--base", metavar="IMAGE", type=image_reference,
                   help="the image to build on (default: the target's image in the manifest)")
    p.add_argument("--tag", metavar="TAG", type=image_tag,
                   help="the tag of the built image (default: BASE's tag + '-patched')")
    p.add_argument("--sbom", nargs="?", const="", default=None, metavar="FILE",
                   help="audit the built image and embed its CycloneDX SBOM at /usr/share/patchset/sbom.cdx.json; "
                        "also write it to FILE (default: ./TAG.cdx.json, with / and : as _)")
    p.add_argument("--format", choices=tuple(RENDERERS), default="text",
                   help="json: one object on stdout describing the image; build output goes to stderr")
    p.add_argument("--python-only", action="store_true",
                   help="build even though patches change compiled code (csrc/, *.cu, CMakeLists.txt): their "
                        "Python files go in, their compiled code cannot; the image never claims those fixes")
    return p


def run(args: argparse.Namespace) -> int:
    manifest = manifest_from(args)
    sbom = None
    if args.sbom is not None:
        tag = args.tag or default_tag(args.base or default_base(manifest, args.vllm))
        sbom = Path(args.sbom) if args.sbom else sbom_file_for(tag)

    def progress(text: str) -> None:
        """Warnings always; on a terminal the steps as the live display's stage (the builder's own output
        with -v); in a log the builder's whole output, as docker prints it."""
        if text.startswith(("warning:", "patchset: left")):
            reporter.current.say(text)
        elif args.quiet:
            return
        elif reporter.current.tty:
            line = text.strip()
            if line and (not text.startswith(" ") and not line.startswith("--->") or args.verbose):
                reporter.current.stage(line)
        else:
            sys.stderr.write(text)
            sys.stderr.flush()

    report = build_image(manifest, args.vllm, base=args.base, tag=args.tag, progress=progress, sbom=sbom,
                         python_only=args.python_only)
    sys.stdout.write(RENDERERS[args.format](report))
    return EXIT_OK
