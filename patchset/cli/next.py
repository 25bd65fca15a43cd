from __future__ import annotations

import argparse
import sys

from patchset.cli.options import (
    add_format,
    add_manifest,
    add_source,
    add_summary,
    manifest_from,
    progress_printer,
    release,
    write_summary,
)
from patchset.cli.registry import subparser
from patchset.errors import EXIT_FINDING, EXIT_OK, UsageError
from patchset.report import next as render
from patchset.verbs.next import next_release


def add_parser(sub) -> argparse.ArgumentParser:
    p = subparser(sub, "next")
    p.add_argument("--vllm", metavar="V", type=release,
                   help="the release to evaluate (default: the newest on the index)")
    p.add_argument("--pre", action="store_true", help="count pre-releases as releases")
    p.add_argument("--detail", action="store_true",
                   help="table: upstream's diff under each hunk that no longer lands (Markdown and JSON always "
                        "have them)")
    p.add_argument("--all", action="store_true",
                   help="every release newer than the targets, a row each with its counts (not with --vllm)")
    add_manifest(p)
    add_format(p, render.NEXT)
    add_source(p)
    add_summary(p)
    return p


def run(args: argparse.Namespace) -> int:
    manifest = manifest_from(args)
    if args.all:
        return run_all(args, manifest)
    progress = progress_printer(args, "evaluating the series on vLLM {} ...")
    report = next_release(manifest, args.vllm, pre=args.pre, source=args.source, on_release=progress)
    if args.format == "table":
        sys.stdout.write(render.next_table(report, detail=args.detail))
    else:
        sys.stdout.write(render.NEXT[args.format](report))
    write_summary(args, lambda: render.next_markdown(report))
    return EXIT_OK if report.ok else EXIT_FINDING


def run_all(args: argparse.Namespace, manifest) -> int:
    """``--all``: how far behind the fork is, every newer release counted (report/next_all.py)."""
    from patchset.report import next_all
    from patchset.verbs.next import every_newer_release

    if args.vllm:
        raise UsageError("--all evaluates every newer release: leave out --vllm", hint="see patchset next --help")
    progress = progress_printer(args, "evaluating the series on vLLM {} ...")
    report = every_newer_release(manifest, pre=args.pre, source=args.source, on_release=progress)
    sys.stdout.write(next_all.ALL[args.format](report))
    write_summary(args, lambda: next_all.all_markdown(report))
    return EXIT_OK if report.ok else EXIT_FINDING
