from __future__ import annotations

import argparse
import sys

from patchset.cli.options import add_manifest, add_vllm, manifest_from
from patchset.cli.registry import subparser
from patchset.errors import EXIT_BAD_INPUT, EXIT_OK
from patchset.report.apply import render_text, warnings
from patchset.verbs.apply import apply_series, recover_tree


def add_parser(sub) -> argparse.ArgumentParser:
    p = subparser(sub, "apply")
    add_vllm(p)
    p.add_argument("dir", metavar="DIR", help="site-packages, an upstream source tree, or the vllm package folder")
    add_manifest(p)
    p.add_argument("--no-compile", action="store_true", help="remove stale bytecode but do not recompile")
    p.add_argument("--allow-version-mismatch", action="store_true",
                   help="apply even though the tree says it holds another vLLM release")
    p.add_argument("--recover", action="store_true",
                   help="only finish or undo an interrupted apply on DIR (every apply does this first)")
    return p


def run(args: argparse.Namespace) -> int:
    if args.recover:
        print(f"{args.dir}: {recover_tree(args.dir)}")
        return EXIT_OK
    if not args.vllm:
        print("patchset apply: error: --vllm is required (the release the tree holds)", file=sys.stderr)
        return EXIT_BAD_INPUT
    manifest = manifest_from(args)
    report = apply_series(manifest, args.vllm, args.dir, compile_bytecode=not args.no_compile,
                          allow_version_mismatch=args.allow_version_mismatch)
    sys.stdout.write(render_text(report, args.dir))
    for warning in warnings(report):
        print(f"warning: {warning}", file=sys.stderr)
    return EXIT_OK
