from __future__ import annotations

import argparse
import sys

from patchset.cli.options import add_format, add_manifest, manifest_from, release
from patchset.report import port as render
from patchset.verbs.next import next_release


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("next", help="evaluate the series on a release newer than every target, as if it were one")
    p.add_argument("--vllm", metavar="V", type=release,
                   help="the release to evaluate (default: the newest on the index)")
    p.add_argument("--pre", action="store_true", help="count pre-releases as releases")
    add_manifest(p)
    add_format(p, choices=("table", "json", "markdown"))
    p.add_argument("--source", default="pypi", metavar="KIND",
                   help="where pristine trees come from: pypi (sdist, default), wheel, git:PATH, dir:PATH")
    return p


def run(args: argparse.Namespace) -> int:
    manifest = manifest_from(args)

    def progress(version: str) -> None:
        if args.format != "json" and sys.stderr.isatty():
            print(f"evaluating the series on vLLM {version} ...", file=sys.stderr)

    report = next_release(manifest, args.vllm, pre=args.pre, source=args.source, on_release=progress)
    sys.stdout.write(render.NEXT[args.format](report))
    return 0 if report.ok else 1
