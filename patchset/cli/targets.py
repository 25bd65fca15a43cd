"""`patchset targets`: the pinned releases, e.g. as a CI job matrix produced from the manifest."""

from __future__ import annotations

import argparse
import json

from patchset.cli.options import add_manifest, manifest_from
from patchset.cli.registry import subparser
from patchset.errors import EXIT_OK


def add_parser(sub) -> argparse.ArgumentParser:
    p = subparser(sub, "targets")
    add_manifest(p)
    p.add_argument("--format", choices=("table", "json", "matrix"), default="table",
                   help="matrix: one line of JSON for GitHub Actions' fromJSON()")
    p.add_argument("--carrying", action="store_true",
                   help="only releases for which the manifest targets at least one patch")
    return p


def run(args: argparse.Namespace) -> int:
    manifest = manifest_from(args)
    rows: list[dict] = []
    for t in manifest.targets:
        carried = [p.id for p in manifest.patches if p.targets(t.version)]
        if args.carrying and not carried:
            continue
        rows.append({"vllm": t.version, "image": t.image, "patches": carried})
    if args.format == "matrix":
        print(json.dumps({"include": [{"vllm": r["vllm"], "image": r["image"]} for r in rows]}))
    elif args.format == "json":
        print(json.dumps({"targets": rows}, indent=2))
    else:
        for r in rows:
            print(f"{r['vllm']:10} {r['image'] or '-':40} {', '.join(r['patches']) or '(nothing carried)'}")
    return EXIT_OK
