"""The command line: argument parsing and rendering only; one module per verb."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from patchset import __version__
from patchset.errors import PatchsetError

# Each module has add_parser(subparsers) and run(args) -> exit code.
VERBS = ("validate", "check", "apply", "test", "build", "audit", "targets", "schema", "sbom", "importer", "deps",
         "next", "port", "refresh")

EXIT_OK = 0
EXIT_FAILED = 1  # what was asked does not hold
EXIT_ERROR = 2  # bad input: manifest, patch file, arguments, environment


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="patchset", description="Keep a fork's vLLM backports honest.")
    parser.add_argument("--version", action="version", version=f"patchset {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    sub.required = True
    for name in VERBS:
        try:
            module = importlib.import_module(f"patchset.cli.{name}")
        except ModuleNotFoundError as e:
            if e.name == f"patchset.cli.{name}":
                continue
            raise
        p = module.add_parser(sub)
        p.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except PatchsetError as e:
        print(f"patchset {args.verb}: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
