"""`patchset schema`: the JSON Schema of patches.yaml, for editors and other tools."""

from __future__ import annotations

import argparse
import sys

from patchset.core.schema import schema_text


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "schema", help="print the JSON Schema of the manifest (patches.yaml, schema 1)",
        description="Print the JSON Schema of patches.yaml. Editors that speak the YAML language server "
        "complete and check keys with it: save it as patches.schema.json and put "
        "'# yaml-language-server: $schema=patches.schema.json' on the manifest's first line. "
        "Exit codes: 0. Example: patchset schema > patches.schema.json")
    return p


def run(args: argparse.Namespace) -> int:
    sys.stdout.write(schema_text())
    return 0
