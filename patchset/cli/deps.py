"""`patchset deps`: the series' real dependency graph on a release."""

from __future__ import annotations

import argparse
import sys

from patchset.cli.options import add_format, add_manifest, manifest_from, release
from patchset.report import deps as render
from patchset.verbs.deps import deps


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("deps", help="which patch needs which (inferred from the hunks), against the after: lists")
    p.add_argument("--vllm", metavar="V", type=release,
                   help="the pinned release to infer on (default: the first target)")
    add_manifest(p)
    add_format(p, choices=tuple(render.RENDERERS))
    p.add_argument("--source", default="pypi", metavar="KIND",
                   help="where the pristine tree comes from: pypi (sdist, default), wheel, git:PATH, dir:PATH")
    return p


def run(args: argparse.Namespace) -> int:
    report = deps(manifest_from(args), args.vllm, args.source)
    sys.stdout.write(render.RENDERERS[args.format](report))
    return 0 if report.ok else 1
