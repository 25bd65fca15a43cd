"""`patchset schema`: the JSON Schema of patches.yaml, for editors and other tools."""

from __future__ import annotations

import argparse
import sys

from patchset.cli.registry import subparser
from patchset.core.schema import schema_text
from patchset.errors import EXIT_OK


def add_parser(sub) -> argparse.ArgumentParser:
    p = subparser(sub, "schema")
    return p


def run(args: argparse.Namespace) -> int:
    sys.stdout.write(schema_text())
    return EXIT_OK
