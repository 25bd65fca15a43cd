"""`patchset cache info` and `patchset cache prune`: see what the cache holds, remove what is not used."""

from __future__ import annotations

import argparse
import sys

from patchset.cli.options import add_dry_run
from patchset.cli.registry import subparser
from patchset.errors import EXIT_OK
from patchset.report import cache as render
from patchset.verbs import cache as verb


def add_parser(sub) -> argparse.ArgumentParser:
    p = subparser(sub, "cache")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    info = actions.add_parser("info", help="size per kind and release, and where the cache is")
    info.add_argument("--format", choices=tuple(render.INFO), default="table", help="output format (default: table)")
    prune = actions.add_parser("prune", help="remove the entries of releases no longer used")
    what = prune.add_mutually_exclusive_group(required=True)
    what.add_argument("--keep", type=int, metavar="N", help="keep the N most recently used releases, remove the rest")
    what.add_argument("--older-than", metavar="DAYS",
                      help="remove releases (and parsed files, suite results) not used for DAYS days")
    add_dry_run(prune, "say what would be removed; remove nothing")
    prune.add_argument("--format", choices=tuple(render.PRUNE), default="table", help="output format (default: table)")
    return p


def run(args: argparse.Namespace) -> int:
    if args.action == "info":
        sys.stdout.write(render.INFO[args.format](verb.cache_info()))
        return EXIT_OK
    older = verb.parse_days(args.older_than) if args.older_than is not None else None
    result = verb.prune(keep=args.keep, older_than=older, dry_run=args.dry_run)
    sys.stdout.write(render.PRUNE[args.format](result))
    return EXIT_OK
