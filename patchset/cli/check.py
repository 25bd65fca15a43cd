from __future__ import annotations

import argparse
import sys

from patchset.cli.options import (
    add_format,
    add_manifest,
    add_source,
    add_summary,
    add_vllm,
    manifest_from,
    progress_printer,
    write_summary,
)
from patchset.cli.registry import subparser
from patchset.errors import EXIT_FINDING, EXIT_OK
from patchset.report import check as render
from patchset.verbs.check import check


def add_parser(sub) -> argparse.ArgumentParser:
    p = subparser(sub, "check")
    add_vllm(p, many=True)
    add_manifest(p)
    add_format(p, render.RENDERERS)
    p.add_argument("--detail", action="store_true",
                   help="table: the lines that differ under each failed hunk (Markdown, JUnit and JSON always "
                        "have them)")
    add_source(p)
    add_summary(p)
    return p


def run(args: argparse.Namespace) -> int:
    manifest = manifest_from(args)
    markdown = args.format == "markdown" or bool(args.summary)  # the Markdown report shows the dependencies
    report = check(manifest, args.vllm, args.source, on_release=progress_printer(args, "checking vLLM {} ..."),
                   files=markdown, graph=markdown)
    if args.format == "table":
        sys.stdout.write(render.render_table(report, detail=args.detail))
    else:
        sys.stdout.write(render.RENDERERS[args.format](report))
    write_summary(args, lambda: render.render_markdown(report))
    # Annotations go to stderr whatever the format: the runner reads both streams, and stdout
    # must stay one clean document (JSON, JUnit XML or Markdown for the step summary).
    for line in render.github_annotations(report):
        print(line, file=sys.stderr)
    return EXIT_OK if report.ok else EXIT_FINDING
