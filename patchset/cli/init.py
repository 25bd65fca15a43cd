"""`patchset init`: a starter manifest, a pre-commit entry and a CI workflow in a fork's repository."""

from __future__ import annotations

import argparse
import sys

from patchset.cli.options import add_dry_run, release
from patchset.cli.registry import subparser
from patchset.errors import EXIT_OK
from patchset.report import init as render
from patchset.verbs.init import scaffold


def add_parser(sub) -> argparse.ArgumentParser:
    p = subparser(sub, "init")
    p.add_argument("--vllm", action="append", default=[], metavar="V", type=release, required=True,
                   help="a pinned vLLM release the fork targets (repeatable; at least one)")
    p.add_argument("--into", default=".", metavar="DIR", help="the fork's repository (default: .)")
    p.add_argument("--action", metavar="OWNER/NAME@REF",
                   help="the patchset action and hooks to use (default: this patchset's release on GitHub)")
    p.add_argument("--no-upgrade-workflow", dest="upgrade", action="store_false",
                   help="leave out .github/workflows/patchset-upgrade.yml (a pull request for each new vLLM release)")
    add_dry_run(p, "print the files, write nothing")
    p.add_argument("--format", choices=tuple(render.RENDERERS), default="table", help="output format (default: table)")
    return p


def run(args: argparse.Namespace) -> int:
    result = scaffold(args.into, args.vllm, action=args.action, dry_run=args.dry_run, upgrade=args.upgrade)
    sys.stdout.write(render.RENDERERS[args.format](result))
    return EXIT_OK
