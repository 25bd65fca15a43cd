"""`patchset deps`: the series' real dependency graph on a release."""

from __future__ import annotations

import argparse
import sys

from patchset.cli.options import add_format, add_manifest, add_source, manifest_from, release
from patchset.cli.registry import subparser
from patchset.errors import EXIT_FINDING, EXIT_OK
from patchset.report import deps as render
from patchset.verbs.deps import deps


def add_parser(sub) -> argparse.ArgumentParser:
    p = subparser(sub, "deps")
    p.add_argument("--vllm", metavar="V", type=release,
                   help="the pinned release to infer on (default: the first target)")
    add_manifest(p)
    add_format(p, render.RENDERERS)
    add_source(p, what="where the pristine tree comes from")
    return p


def run(args: argparse.Namespace) -> int:
    report = deps(manifest_from(args), args.vllm, args.source)
    sys.stdout.write(render.RENDERERS[args.format](report))
    return EXIT_OK if report.ok else EXIT_FINDING
