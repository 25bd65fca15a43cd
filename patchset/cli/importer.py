"""`patchset import`: adopt a fork's existing series (quilt, patch folder, format-patch, git commits)."""

from __future__ import annotations

import argparse
import sys

from patchset.cli.options import add_dry_run, add_source
from patchset.cli.registry import subparser
from patchset.errors import EXIT_FINDING, EXIT_OK
from patchset.report import importer as render
from patchset.verbs.importer import import_series


def add_parser(sub) -> argparse.ArgumentParser:
    p = subparser(sub, "import")
    p.add_argument("sources", nargs="+", metavar="SOURCE",
                   help="a quilt series file, a folder of patches (*.patch, *.diff, *.patch.gz; its series file "
                        "if it has one), git format-patch files or an mbox, or git:PATH@COMMIT (or @A..B)")
    p.add_argument("--into", default=".", metavar="DIR", help="where patches.yaml and recipes/ go (default: .)")
    p.add_argument("--target", action="append", default=[], metavar="V",
                   help="a pinned vLLM release to target (repeatable; at least one)")
    p.add_argument("--layout", default="auto", metavar="auto|repo|package|strip=N[,root=DIR]",
                   help="patch paths: repo (a/vllm/...), package (a/v1/..., patch -d site-packages/vllm), "
                        "strip=N[,root=DIR] (as patch -pN, e.g. strip=3 for a/<dir>/<dir>/vllm/...), or auto: "
                        "the strip and root that find every file in the first target's tree (default)")
    add_dry_run(p, "show the manifest and the check, write nothing")
    p.add_argument("--force", action="store_true", help="replace an existing patches.yaml and recipe files")
    p.add_argument("--ci", action="store_true",
                   help="also write what `patchset init` writes beside a manifest: a .pre-commit-config.yaml "
                        "entry, .github/workflows/patchset.yml and patchset-upgrade.yml (never overwritten)")
    p.add_argument("--no-upgrade-workflow", dest="upgrade", action="store_false",
                   help="with --ci: leave out .github/workflows/patchset-upgrade.yml")
    p.add_argument("--move", action="store_true",
                   help="move each patch file into recipes/ with git mv (its history follows) instead of copying it")
    p.add_argument("--action", metavar="OWNER/NAME@REF",
                   help="with --ci: the patchset action and hooks to use (default: this patchset's release on GitHub)")
    p.add_argument("--format", choices=tuple(render.RENDERERS), default="table", help="output format (default: table)")
    add_source(p)
    return p


def run(args: argparse.Namespace) -> int:
    result = import_series(args.sources, args.into, args.target, args.layout, dry_run=args.dry_run,
                           force=args.force, source=args.source, ci=args.ci, action=args.action,
                           move=args.move, upgrade=args.upgrade)
    sys.stdout.write(render.RENDERERS[args.format](result))
    return EXIT_OK if result.ok else EXIT_FINDING

