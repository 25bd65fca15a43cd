from __future__ import annotations

import argparse
import sys

from patchset.cli.options import add_format, add_manifest, manifest_from, release
from patchset.report import port as render
from patchset.verbs.port import DEFAULT_WORKDIR
from patchset.verbs.refresh import refresh


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("refresh", help="regenerate a patch for a release: from a resolved port workspace, "
                                       "or with exact line numbers")
    p.add_argument("id", metavar="ID", help="the patch")
    p.add_argument("--vllm", required=True, metavar="V", type=release, help="the release the patch is for")
    p.add_argument("--workdir", metavar="DIR", help=f"where port left the workspace (default: {DEFAULT_WORKDIR} "
                                                    "beside the manifest)")
    p.add_argument("--dry-run", action="store_true", help="show what would change; write nothing")
    add_manifest(p)
    add_format(p, choices=("table", "json"))
    p.add_argument("--source", default="pypi", metavar="KIND",
                   help="where pristine trees come from: pypi (sdist, default), wheel, git:PATH, dir:PATH")
    return p


def run(args: argparse.Namespace) -> int:
    manifest = manifest_from(args)
    report = refresh(manifest, args.id, args.vllm, workdir=args.workdir, source=args.source, dry_run=args.dry_run)
    sys.stdout.write(render.REFRESH[args.format](report))
    return 0
