from __future__ import annotations

import argparse

from patchset.cli.options import add_manifest
from patchset.verbs.validate import validate


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("validate", help="check the manifest and every patch file, without any vLLM tree")
    add_manifest(p)
    return p


def run(args: argparse.Namespace) -> int:
    summary = validate(args.manifest)
    print(summary)
    return 0
