from __future__ import annotations

import argparse
import sys
from pathlib import Path

from patchset.cli.options import (
    add_format,
    add_source,
    add_summary,
    image_reference,
    manifest_path,
    progress_printer,
    write_summary,
)
from patchset.cli.registry import subparser
from patchset.core.manifest import DEFAULT_MANIFEST
from patchset.core.manifest_export import manifest_at, split_revision
from patchset.errors import EXIT_FINDING, EXIT_OK, PatchsetError
from patchset.report import auditreport as render
from patchset.verbs.audit import audit


def add_parser(sub) -> argparse.ArgumentParser:
    p = subparser(sub, "audit")
    p.add_argument("images", nargs="+", metavar="IMAGE", type=image_reference, help="local image or registry reference")
    p.add_argument("--manifest", metavar="FILE[@REV]",
                   help=f"the series manifest (default: {DEFAULT_MANIFEST} here or above); FILE@REV reads it and "
                        "its patch files as of a git revision of the repository holding FILE, e.g. patches.yaml@v1.2")
    add_format(p, render.RENDERERS)
    add_source(p, default="wheel", what="where the pristine release to compare with comes from")
    p.add_argument("--pull", action="store_true",
                   help="pull every image from its registry first, even when a local copy exists")
    add_summary(p)
    return p


def run(args: argparse.Namespace) -> int:
    progress = progress_printer(args, "auditing {} ...")
    path, rev = split_revision(manifest_path(args))
    if rev is None and not Path(path).is_file():
        raise PatchsetError(f"no manifest at {path}", hint="pass --manifest FILE, or --manifest FILE@REV to audit "
                            "against the manifest of a git tag or commit (e.g. --manifest patches.yaml@v1.2)")
    with manifest_at(args.manifest) as manifest:
        report = audit(manifest, args.images, source=args.source, pull=args.pull, on_image=progress)
    if rev is not None:
        report.manifest = args.manifest  # what was asked for, not the temporary copy it was read from
    sys.stdout.write(render.RENDERERS[args.format](report))
    write_summary(args, lambda: render.render_markdown(report))
    for line in render.github_annotations(report):
        print(line, file=sys.stderr)
    return EXIT_OK if report.ok else EXIT_FINDING
