from __future__ import annotations

import argparse
import sys

from patchset.cli.options import (
    add_dry_run,
    add_format,
    add_manifest,
    add_source,
    add_workdir,
    manifest_from,
    progress_printer,
    release,
)
from patchset.cli.registry import subparser
from patchset.errors import EXIT_FINDING, EXIT_OK
from patchset.report import port as render
from patchset.verbs.port import DEFAULT_WORKDIR, port


def add_parser(sub) -> argparse.ArgumentParser:
    p = subparser(sub, "port")
    p.add_argument("--to", required=True, metavar="V", type=release, help="the release to port to")
    p.add_argument("--from", dest="from_release", metavar="U", type=release,
                   help="the release the patches were made for (default: the newest target each covers)")
    p.add_argument("--patch", action="append", default=[], metavar="ID",
                   help="port only this patch (repeatable; the others still shape the tree)")
    add_workdir(p, "where conflicts go", DEFAULT_WORKDIR)
    add_dry_run(p)
    add_manifest(p)
    add_format(p, render.PORT)
    add_source(p)
    return p


def run(args: argparse.Namespace) -> int:
    manifest = manifest_from(args)

    progress = progress_printer(args, "porting {} ...")

    def plan(diff: str) -> None:
        if args.format == "table" and diff:  # the change to the manifest, before it is made
            sys.stdout.write(diff)
            sys.stdout.flush()

    report = port(manifest, args.to, from_release=args.from_release, only=args.patch, workdir=args.workdir,
                  dry_run=args.dry_run, source=args.source, on_patch=progress, on_plan=plan)
    sys.stdout.write(render.PORT[args.format](report))
    return EXIT_OK if report.ok else EXIT_FINDING
