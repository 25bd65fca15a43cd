"""Options several verbs share, spelled the same everywhere."""

from __future__ import annotations

import argparse

from patchset.core.manifest import DEFAULT_MANIFEST, Manifest, load_manifest


def add_manifest(p: argparse.ArgumentParser) -> None:
    p.add_argument("--manifest", default=DEFAULT_MANIFEST, metavar="FILE",
                   help=f"the series manifest (default: {DEFAULT_MANIFEST})")


def add_vllm(p: argparse.ArgumentParser, *, required: bool = False, many: bool = False) -> None:
    if many:
        p.add_argument("--vllm", action="append", default=[], metavar="V",
                       help="a pinned vLLM release (repeatable; default: every target)")
    else:
        p.add_argument("--vllm", required=required, metavar="V", help="the pinned vLLM release")


def add_format(p: argparse.ArgumentParser, choices=("table", "json", "junit", "markdown")) -> None:
    p.add_argument("--format", choices=choices, default="table", help="output format (default: table)")


def manifest_from(args: argparse.Namespace) -> Manifest:
    return load_manifest(args.manifest)
