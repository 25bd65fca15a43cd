"""`patchset import`: adopt a fork's existing series (quilt, patch folder, format-patch, git commits)."""

from __future__ import annotations

import argparse
import sys

from patchset.report import check as check_report
from patchset.report.common import dump_json
from patchset.verbs.importer import LAYOUTS, ImportResult, import_series


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("import", help="adopt an existing series: quilt series, patch folder, format-patch, git",
                       description="Write patches.yaml and recipes/ from a series a fork already carries, "
                                   "then check it on the targets.")
    p.add_argument("sources", nargs="+", metavar="SOURCE",
                   help="a quilt series file, a folder of patches (*.patch, *.diff, *.patch.gz; its series file "
                        "if it has one), git format-patch files or an mbox, or git:PATH@COMMIT (or @A..B)")
    p.add_argument("--into", default=".", metavar="DIR", help="where patches.yaml and recipes/ go (default: .)")
    p.add_argument("--target", action="append", default=[], metavar="V",
                   help="a pinned vLLM release to target (repeatable; at least one)")
    p.add_argument("--layout", choices=tuple(LAYOUTS), default="auto",
                   help="patch paths: repo (a/vllm/...), package (a/v1/..., patch -d site-packages/vllm), "
                        "or auto: whichever finds every file in the first target's tree (default)")
    p.add_argument("--dry-run", action="store_true", help="show the manifest and the check, write nothing")
    p.add_argument("--force", action="store_true", help="replace an existing patches.yaml and recipe files")
    p.add_argument("--format", choices=("table", "json"), default="table", help="output format (default: table)")
    p.add_argument("--source", default="pypi", metavar="KIND",
                   help="where pristine trees come from: pypi (sdist, default), wheel, git:PATH, dir:PATH")
    return p


def run(args: argparse.Namespace) -> int:
    result = import_series(args.sources, args.into, args.target, args.layout, dry_run=args.dry_run,
                           force=args.force, source=args.source)
    sys.stdout.write(dump_json(result.to_json()) if args.format == "json" else render(result))
    return 0 if result.ok else 1


def render(result: ImportResult) -> str:
    out = []
    if result.dry_run:
        out += [result.text, "dry run: nothing written"]
    else:
        out.append(f"wrote {result.manifest} and {len(result.patches)} patch files under "
                   f"{result.manifest.parent / 'recipes'}")
    out += [f"note: {n}" for n in result.notes]
    out += [f"kept as a comment (disabled in the series): {d}" for d in result.disabled]
    for e in result.edges:
        out.append(f"after: {e.patch} needs {e.needs}: {e.why}")
    out.append("")
    out.append(check_report.render_table(result.check).rstrip("\n"))
    return "\n".join(out) + "\n"
