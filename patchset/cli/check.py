from __future__ import annotations

import argparse
import sys

from patchset.cli.options import add_format, add_manifest, add_vllm, manifest_from
from patchset.report import check as render
from patchset.verbs.check import check


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("check", help="check every hunk of the series against pinned releases")
    add_vllm(p, many=True)
    add_manifest(p)
    add_format(p)
    p.add_argument("--source", default="pypi", metavar="KIND",
                   help="where pristine trees come from: pypi (sdist, default), wheel, git:PATH, dir:PATH "
                        "(PATH may contain {version})")
    return p


def run(args: argparse.Namespace) -> int:
    manifest = manifest_from(args)
    quiet = args.format == "json"

    def progress(version: str) -> None:
        if not quiet and sys.stderr.isatty():
            print(f"checking vLLM {version} ...", file=sys.stderr)

    report = check(manifest, args.vllm, args.source, on_release=progress)
    sys.stdout.write(render.RENDERERS[args.format](report))
    # Annotations go to stderr whatever the format: the runner reads both streams, and stdout
    # must stay one clean document (JSON, JUnit XML or Markdown for the step summary).
    for line in render.github_annotations(report):
        print(line, file=sys.stderr)
    return 0 if report.ok else 1
