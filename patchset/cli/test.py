"""`patchset test --vllm V [--image IMAGE | --venv] [--gpus all] [--patch ID]...`"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from patchset.cli import progress as reporter
from patchset.cli.options import add_manifest, add_summary, add_vllm, image_reference, manifest_from, write_summary
from patchset.cli.registry import subparser
from patchset.errors import EXIT_FINDING, EXIT_OK, UsageError
from patchset.report import testreport
from patchset.verbs import test as verb


def add_parser(sub) -> argparse.ArgumentParser:
    p = subparser(sub, "test")
    add_vllm(p, required=True)
    where = p.add_mutually_exclusive_group()
    where.add_argument("--venv", action="store_true",
                       help="run in a cached CPU venv built for the release (the default)")
    where.add_argument("--image", metavar="IMAGE", type=image_reference,
                       help="run inside a container of IMAGE (Docker)")
    p.add_argument("--gpus", metavar="all", help="with --image: the GPUs to give the container (docker --gpus)")
    p.add_argument("--device", choices=("auto", "cpu"),
                   help="with --image: vLLM's device in the container; cpu sets VLLM_TARGET_DEVICE=cpu (the "
                        "default without --gpus), auto lets vLLM find the GPU (the default with --gpus). "
                        "--gpus all --device cpu rehearses the GPU path's container on a machine without a GPU")
    p.add_argument("--patch", action="append", default=[], metavar="ID",
                   help="prove only this patch (repeatable; default: every patch)")
    add_manifest(p)
    p.add_argument("--format", choices=tuple(testreport.RENDERERS), default="table",
                   help="output format on stdout (default: table)")
    p.add_argument("--junit", metavar="FILE", help="also write JUnit XML to FILE")
    add_summary(p)
    p.add_argument("--source", default="pypi", metavar="KIND",
                   help="where the pristine tree and its tests/ come from: pypi (sdist, default) or dir:PATH")
    p.add_argument("--no-suites", action="store_true", help="skip the manifest's suites")
    p.add_argument("--rebaseline", action="store_true",
                   help="run the suites on the pristine release again instead of using the cached result "
                        "(the new result replaces it)")
    p.add_argument("--timeout", type=seconds, default=3600, metavar="SECONDS",
                   help="limit for each pytest run (default: 3600)")
    p.add_argument("--jobs", type=jobs, default=None, metavar="N|auto",
                   help="configurations run side by side, each forked from a warm interpreter that imported "
                        "torch and the test dependencies once (venv runner; auto: what the cores and the "
                        "memory allow, the default); 1: one process per configuration, one after another")
    p.add_argument("--workdir", metavar="DIR",
                   help="keep the test tree, overlays, JUnit files and pytest logs in DIR (default: a "
                        "temporary folder, removed afterwards)")
    return p


def seconds(value: str) -> float:
    try:
        limit = float(value)
    except ValueError:
        limit = float("nan")
    if not limit > 0 or limit == float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds greater than 0")
    return limit


def jobs(value: str) -> int:
    """``auto`` is 0: what the cores and the memory allow (decided where the configurations are known)."""
    if value == "auto":
        return 0
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of runs, 1 or more, nor auto")
    return int(value)


def check_outputs(args: argparse.Namespace) -> None:
    """Refuse unusable output paths before anything runs (an hour of tests must not end in a traceback)."""
    if args.workdir is not None:
        workdir = Path(args.workdir)
        if workdir.exists() and not workdir.is_dir():
            raise UsageError(f"--workdir {workdir} is not a folder", hint="name an empty or new folder")
        if workdir.is_dir() and any(workdir.iterdir()):
            raise UsageError(f"--workdir {workdir} is not empty", hint="name an empty or new folder")
    if args.junit is not None:
        junit = Path(args.junit)
        if junit.is_dir() or not junit.parent.is_dir():
            raise UsageError(f"--junit {junit}: " + ("is a folder" if junit.is_dir() else
                                                      f"the folder {junit.parent} does not exist"),
                             hint="name a file in an existing folder")


def progress(line: str) -> None:
    """Each step (pristine tree, venv or image, each run and suite): a stage of this run (cli/progress.py)."""
    reporter.current.stage(line)


def run(args: argparse.Namespace) -> int:
    manifest = manifest_from(args)
    check_outputs(args)
    options = verb.ProofOptions(patch_ids=tuple(args.patch), suites=not args.no_suites, timeout=args.timeout,
                                rebaseline=args.rebaseline, progress=progress, jobs=args.jobs)
    report = verb.prove_release(manifest, args.vllm, source=args.source, image=args.image, gpus=args.gpus,
                                workdir=Path(args.workdir) if args.workdir is not None else None, options=options,
                                device=args.device)
    if args.junit:
        Path(args.junit).write_text(testreport.render_junit(report))
    sys.stdout.write(testreport.RENDERERS[args.format](report))
    write_summary(args, lambda: testreport.render_markdown(report))
    for line in testreport.github_annotations(report):
        print(line, file=sys.stderr)
    return EXIT_OK if report.ok else EXIT_FINDING
