from __future__ import annotations

import argparse
import sys

from patchset.cli.options import add_format, add_manifest, manifest_from, release
from patchset.report import port as render
from patchset.verbs.port import DEFAULT_WORKDIR, port


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("port", help="carry the series to a new release: carry, retire, 3-way merge, or conflict")
    p.add_argument("--to", required=True, metavar="V", type=release, help="the release to port to")
    p.add_argument("--from", dest="from_release", metavar="U", type=release,
                   help="the release the patches were made for (default: the newest target each covers)")
    p.add_argument("--patch", action="append", default=[], metavar="ID",
                   help="port only this patch (repeatable; the others still shape the tree)")
    p.add_argument("--workdir", metavar="DIR", help=f"where conflicts go (default: {DEFAULT_WORKDIR} beside the "
                                                    "manifest)")
    p.add_argument("--dry-run", action="store_true", help="show what would change; write nothing")
    add_manifest(p)
    add_format(p, choices=("table", "json", "markdown"))
    p.add_argument("--source", default="pypi", metavar="KIND",
                   help="where pristine trees come from: pypi (sdist, default), wheel, git:PATH, dir:PATH")
    return p


def run(args: argparse.Namespace) -> int:
    manifest = manifest_from(args)

    def progress(patch_id: str) -> None:
        if args.format != "json" and sys.stderr.isatty():
            print(f"porting {patch_id} ...", file=sys.stderr)

    def plan(diff: str) -> None:
        if args.format == "table" and diff:  # the change to the manifest, before it is made
            sys.stdout.write(diff)
            sys.stdout.flush()

    report = port(manifest, args.to, from_release=args.from_release, only=args.patch, workdir=args.workdir,
                  dry_run=args.dry_run, source=args.source, on_patch=progress, on_plan=plan)
    sys.stdout.write(render.PORT[args.format](report))
    return 0 if report.ok else 1
