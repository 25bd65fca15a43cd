from __future__ import annotations

import argparse
import sys

from patchset.cli.options import add_manifest
from patchset.cli.registry import subparser
from patchset.errors import EXIT_BAD_INPUT, EXIT_OK
from patchset.report import validate as render
from patchset.verbs.validate import validate


def add_parser(sub) -> argparse.ArgumentParser:
    p = subparser(sub, "validate")
    add_manifest(p)
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="json: one object on stdout with every problem (default: text)")
    return p


def run(args: argparse.Namespace) -> int:
    report = validate(args.manifest)
    if args.format == "json":
        sys.stdout.write(render.render_json(report))
    elif report.ok:
        print(report.summary())
    else:
        # One problem a line, FILE:LINE first, as compilers print them: editors and CI annotate each.
        for error in report.errors:
            print(error, file=sys.stderr)
        print(f"patchset validate: error: {report.summary()}", file=sys.stderr)
    return EXIT_OK if report.ok else EXIT_BAD_INPUT
