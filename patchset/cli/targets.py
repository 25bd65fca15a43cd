"""`patchset targets`: the pinned releases, e.g. as a CI job matrix produced from the manifest."""

from __future__ import annotations

import argparse
import sys

from patchset.cli.options import add_manifest, manifest_from
from patchset.cli.registry import subparser
from patchset.errors import EXIT_OK
from patchset.report.targets import RENDERERS
from patchset.verbs.targets import targets


def add_parser(sub) -> argparse.ArgumentParser:
    p = subparser(sub, "targets")
    add_manifest(p)
    p.add_argument("--format", choices=tuple(RENDERERS), default="table",
                   help="matrix: one line of JSON for GitHub Actions' fromJSON()")
    p.add_argument("--carrying", action="store_true",
                   help="only releases for which the manifest targets at least one patch")
    return p


def run(args: argparse.Namespace) -> int:
    sys.stdout.write(RENDERERS[args.format](targets(manifest_from(args), carrying=args.carrying)))
    return EXIT_OK
