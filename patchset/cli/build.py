from __future__ import annotations

import argparse
import sys
from pathlib import Path

from patchset.cli import progress as reporter
from patchset.cli.options import add_manifest, add_vllm, image_reference, image_tag, manifest_from
from patchset.cli.registry import subparser
from patchset.core.series import PatchStatus
from patchset.errors import EXIT_OK
from patchset.report.build import render_json
from patchset.report.common import plural
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
    p.add_argument("--format", choices=("text", "json"), default="text",
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
    if args.format == "json":

        sys.stdout.write(render_json(report))
        return EXIT_OK
    carried = [p.id for p in report.result.patches
               if p.status == PatchStatus.APPLIES and p.id not in report.not_carried]
    upstream = [p.id for p in report.result.patches if p.status == PatchStatus.UPSTREAM]
    print(f"built {report.tag} ({report.image_id[:19]}) from {report.base}")
    print(f"  vLLM {report.vllm}; carries {', '.join(carried) or 'nothing'}"
          + (f"; upstream: {', '.join(upstream)}" if upstream else ""))
    print(f"  wrote {plural(len(report.written), 'file')}"
          + (f", deleted {plural(len(report.deleted), 'file')}" if report.deleted else "")
          + f"; added {plural(len(report.layers), 'layer')}, {_size(report.added_bytes)}:")
    for layer in report.layers:
        print(f"    {_size(layer.size):>9}  {_short(layer.created_by)}")
    for pid, files in report.not_carried.items():
        print(f"  not carried: {pid} (its compiled code is left out: {', '.join(files)})")
    left = sorted({f for files in report.left_out.values() for f in files} - {
        f for files in report.not_carried.values() for f in files})
    if left:
        print(f"  not in an image (left out): {', '.join(left)}")
    if report.sbom:
        print(f"  SBOM: {report.sbom['path']} in the image, and {report.sbom['file']}")
    return EXIT_OK


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def _short(created_by: str) -> str:
    text = created_by.replace("/bin/sh -c #(nop) ", "").strip()
    return text if len(text) <= 70 else text[:67] + "..."
