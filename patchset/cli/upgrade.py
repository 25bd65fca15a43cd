"""`patchset upgrade [--to V] [--prove] [--body FILE] [--dry-run] [--format ...]`"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from patchset.cli import progress as reporter
from patchset.cli.options import (
    add_dry_run,
    add_format,
    add_manifest,
    add_source,
    add_summary,
    manifest_from,
    progress_printer,
    release,
    write_summary,
)
from patchset.cli.registry import subparser
from patchset.cli.test import jobs
from patchset.errors import EXIT_FINDING, EXIT_OK, UsageError
from patchset.report import upgrade as render
from patchset.verbs.upgrade import upgrade


def add_parser(sub) -> argparse.ArgumentParser:
    p = subparser(sub, "upgrade")
    p.add_argument("--to", "--vllm", dest="to", metavar="V", type=release,
                   help="the release to upgrade to (default: the newest on the index newer than every target; "
                        "--vllm is the same, for the action's vllm input)")
    p.add_argument("--pre", action="store_true", help="count pre-releases as releases")
    p.add_argument("--prove", action="store_true",
                   help="then prove every carried or ported patch with its tests (test --venv --vllm V)")
    p.add_argument("--body", metavar="FILE", help="write the pull request's Markdown to FILE")
    p.add_argument("--jobs", type=jobs, default=None, metavar="N|auto", help="with --prove: as test --jobs")
    add_dry_run(p)
    add_manifest(p)
    add_format(p, render.UPGRADE)
    add_source(p)
    add_summary(p)
    return p


def run(args: argparse.Namespace) -> int:
    if args.body is not None and (Path(args.body).is_dir() or not Path(args.body).absolute().parent.is_dir()):
        raise UsageError(f"--body {args.body}: " + ("is a folder" if Path(args.body).is_dir() else
                                                    "its folder does not exist"), hint="name a file in a folder")
    manifest = manifest_from(args)
    report = upgrade(manifest, args.to, pre=args.pre, prove=args.prove, dry_run=args.dry_run, source=args.source,
                     on_patch=progress_printer(args, "porting {} ..."), progress=reporter.current.stage,
                     jobs=args.jobs)
    if args.body is not None:
        Path(args.body).write_text(render.upgrade_body(report), encoding="utf-8")
    sys.stdout.write(render.UPGRADE[args.format](report))
    write_summary(args, lambda: render.upgrade_markdown(report))
    return EXIT_OK if report.ok else EXIT_FINDING
