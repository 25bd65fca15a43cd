from __future__ import annotations

import argparse
import sys

from patchset.cli.options import add_manifest, add_vllm, manifest_from
from patchset.verbs.apply import apply_series, recover_tree


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("apply", help="apply the series for one release to a tree, all or nothing")
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
        return 0
    if not args.vllm:
        print("patchset apply: error: --vllm is required (the release the tree holds)", file=sys.stderr)
        return 2
    manifest = manifest_from(args)
    report = apply_series(manifest, args.vllm, args.dir, compile_bytecode=not args.no_compile,
                          allow_version_mismatch=args.allow_version_mismatch)
    if report.recovered:
        print(f"{report.tree}: {report.recovered}")
    if report.already:
        print(f"{report.tree}: {report.message}")
        return 0
    assert report.result is not None
    for p in report.result.patches:
        extra = p.evidence if p.status != "applies" else ", ".join(p.files)
        print(f"  {p.id:36} {p.status:12} {extra}")
    for path in report.written:
        print(f"  wrote   {path}")
    for path in report.deleted:
        print(f"  deleted {path}")
    if report.skipped:
        print(f"  not in this tree (left out): {', '.join(report.skipped)}")
    for w in report.result.warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"{report.tree}: {report.message}; provenance in {report.record}")
    return 0
