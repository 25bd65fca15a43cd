from __future__ import annotations

import argparse
import sys

from patchset.cli.options import add_dry_run, add_format, add_manifest, add_source, add_workdir, manifest_from, release
from patchset.cli.registry import subparser
from patchset.errors import EXIT_OK
from patchset.report import refresh as render
from patchset.verbs.port import DEFAULT_WORKDIR
from patchset.verbs.refresh import refresh


def add_parser(sub) -> argparse.ArgumentParser:
    p = subparser(sub, "refresh")
    p.add_argument("id", metavar="ID", help="the patch")
    p.add_argument("--vllm", required=True, metavar="V", type=release, help="the release the patch is for")
    add_workdir(p, "where port left the workspace", DEFAULT_WORKDIR)
    add_dry_run(p)
    add_manifest(p)
    add_format(p, render.REFRESH)
    add_source(p)
    return p


def run(args: argparse.Namespace) -> int:
    manifest = manifest_from(args)
    report = refresh(manifest, args.id, args.vllm, workdir=args.workdir, source=args.source, dry_run=args.dry_run)
    sys.stdout.write(render.REFRESH[args.format](report))
    return EXIT_OK
