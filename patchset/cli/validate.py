from __future__ import annotations

import argparse
import sys

from patchset.cli.options import add_manifest, manifest_path
from patchset.cli.registry import subparser
from patchset.errors import EXIT_BAD_INPUT, EXIT_FINDING, EXIT_OK
from patchset.report import validate as render
from patchset.verbs.validate import validate


def add_parser(sub) -> argparse.ArgumentParser:
    p = subparser(sub, "validate")
    add_manifest(p)
    p.add_argument("--format", choices=tuple(render.RENDERERS), default="text",
                   help="json: one object on stdout with every problem (default: text)")
    return p


def run(args: argparse.Namespace) -> int:
    report = validate(manifest_path(args))
    sys.stdout.write(render.RENDERERS[args.format](report))
    if args.format == "text":
        sys.stderr.write(render.render_problems(report))
    return EXIT_OK if report.ok else EXIT_BAD_INPUT if report.errors else EXIT_FINDING
