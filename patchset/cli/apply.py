from __future__ import annotations

import argparse
import sys
from pathlib import Path

from patchset.cli.options import add_manifest, add_vllm, manifest_from
from patchset.cli.registry import subparser
from patchset.core.series import PatchStatus
from patchset.core.trees import compiled
from patchset.errors import EXIT_BAD_INPUT, EXIT_OK
from patchset.sources.tree import TargetTree
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
    if report.recovered:
        print(f"{report.tree}: {report.recovered}")
    if report.already:
        print(f"{report.tree}: {report.message}")
        return EXIT_OK
    assert report.result is not None
    for p in report.result.patches:
        applied = p.status == PatchStatus.APPLIES
        extra = ", ".join(_shown(args.dir, f) for f in p.files) if applied else p.evidence or p.message
        if applied and compiled(p.skipped):
            extra += f" (not carried: its compiled code is left out: {', '.join(compiled(p.skipped))})"
        print(f"  {p.id:36} {'applied' if applied else p.status:12} {extra}")
    for path in report.written:
        print(f"  wrote   {_shown(args.dir, path)}")
    for path in report.deleted:
        print(f"  deleted {_shown(args.dir, path)}")
    if report.skipped:
        kind = next(p.tree for p in report.result.patches if p.skipped)
        print(f"  not in this {kind} (left out): {', '.join(report.skipped)}")
    if report.compiled:
        print(f"  compiled code left out (only a build of vLLM carries it): {', '.join(report.compiled)}")
    for w in report.result.warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"{report.tree}: {report.message}; provenance in {_shown(args.dir, report.record)}")
    return EXIT_OK


def _shown(tree: str, path: str) -> str:
    """A path as the user can open it: relative to the DIR they gave (which may be the vllm package itself)."""

    where = Path(path) if Path(path).is_absolute() else TargetTree(tree).local(path)
    if where is None:
        return path
    try:
        return str(where.resolve().relative_to(Path(tree).resolve()))
    except ValueError:
        return path
