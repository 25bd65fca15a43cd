from __future__ import annotations

import argparse
import sys

from patchset.cli.options import add_manifest, image_reference, manifest_from


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("audit", help="which fixes each image carries, verified against the image's files")
    p.add_argument("images", nargs="+", metavar="IMAGE", type=image_reference, help="local image or registry reference")
    add_manifest(p)
    p.add_argument("--format", choices=("table", "json", "markdown"), default="table",
                   help="output format (default: table)")
    p.add_argument("--source", default="wheel", metavar="KIND",
                   help="where the pristine release to compare with comes from: wheel (default), pypi (sdist), "
                        "git:PATH, dir:PATH (PATH may contain {version})")
    p.add_argument("--pull", action="store_true",
                   help="pull every image from its registry first, even when a local copy exists")
    return p


def run(args: argparse.Namespace) -> int:
    from patchset import docker_engine
    from patchset.errors import PatchsetError
    from patchset.report import auditreport as render
    from patchset.verbs.audit import audit

    manifest = manifest_from(args)

    def progress(ref: str) -> None:
        if args.format != "json" and sys.stderr.isatty():
            print(f"auditing {ref} ...", file=sys.stderr)

    try:
        report = audit(manifest, args.images, source=args.source, pull=args.pull, on_image=progress)
    except docker_engine.EngineUnavailable as e:
        raise PatchsetError(str(e), hint="start dockerd (.ci/docker.sh) or set DOCKER_HOST") from e
    sys.stdout.write(render.RENDERERS[args.format](report))
    for line in render.annotations(report):
        print(line, file=sys.stderr)
    return 0 if report.ok else 1
