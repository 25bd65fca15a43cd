"""Options several verbs share, spelled the same everywhere, checked before anything runs."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from patchset.cli import progress as reporter
from patchset.core.manifest import DEFAULT_MANIFEST, Manifest
from patchset.core.manifest_load import find_manifest, load_manifest
from patchset.versions import is_release

# Docker's reference grammar (distribution/reference): a bad name is bad input here, not a docker traceback.
_ALNUM = r"[a-z0-9]+"
_COMPONENT = rf"{_ALNUM}(?:(?:[._]|__|-+){_ALNUM})*"
_DOMAIN_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?"
_NAME = rf"(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
TAG_REFERENCE = rf"(?P<name>{_NAME})(?::{_TAG})?"
IMAGE_REFERENCE = rf"(?P<name>{_NAME})(?::{_TAG})?(?:@{_DIGEST})?"
IMAGE_ID = r"(?:sha256:)?[0-9a-f]{12,64}"
NAME_MAX = 255


def add_manifest(p: argparse.ArgumentParser) -> None:
    p.add_argument("--manifest", metavar="FILE",
                   help=f"the series manifest (default: {DEFAULT_MANIFEST} here or in the nearest folder above, "
                        "up to the repository's root)")


def manifest_path(args: argparse.Namespace) -> str:
    """``--manifest``, or the ``patches.yaml`` found here or above (``find_manifest``): said on stderr when it is
    not this folder's, so that a run in ``recipes/`` names the manifest it used. Sets ``args.manifest``."""
    if args.manifest is None:
        found = find_manifest()
        args.manifest = found.as_posix()
        if found.parent != Path() and not reporter.current.quiet:
            reporter.current.say(f"patchset: using the manifest {args.manifest} (the nearest {DEFAULT_MANIFEST} "
                                 "above this folder)")
    return str(args.manifest)


def add_vllm(p: argparse.ArgumentParser, *, required: bool = False, many: bool = False) -> None:
    if many:
        p.add_argument("--vllm", action="append", default=[], metavar="V", type=release,
                       help="a pinned vLLM release (repeatable; default: every target)")
    else:
        p.add_argument("--vllm", required=required, metavar="V", type=release, help="the pinned vLLM release")


def add_format(p: argparse.ArgumentParser, renderers: Mapping[str, object]) -> None:
    """``--format``: one choice per renderer of the verb's renderer table (``patchset/report/<verb>.py``)."""
    p.add_argument("--format", choices=tuple(renderers), default="table", help="output format (default: table)")


def add_source(p: argparse.ArgumentParser, *, default: str = "pypi",
               what: str = "where pristine trees come from") -> None:
    notes = {"pypi": ["sdist"], "wheel": [], "git:PATH": [], "dir:PATH": []}
    notes[default].append("default")
    kinds = ", ".join(k + (f" ({', '.join(n)})" if n else "") for k, n in notes.items())
    p.add_argument("--source", default=default, metavar="KIND",
                   help=f"{what}: {kinds} (PATH may contain {{version}})")


def add_summary(p: argparse.ArgumentParser) -> None:
    """``--summary FILE``: the Markdown report appended to FILE whatever --format says (a CI job's summary)."""
    p.add_argument("--summary", metavar="FILE",
                   help='also append the Markdown report to FILE, e.g. "$GITHUB_STEP_SUMMARY"')


def write_summary(args: argparse.Namespace, markdown: Callable[[], str]) -> None:
    """Append the Markdown report to ``--summary FILE`` (made only when asked for)."""
    if getattr(args, "summary", None):
        with open(args.summary, "a", encoding="utf-8") as f:
            f.write(markdown() + "\n")


def add_workdir(p: argparse.ArgumentParser, what: str, default: str) -> None:
    """``--workdir`` of port and refresh: where the conflict workspaces live (``default``: the verb's own)."""
    p.add_argument("--workdir", metavar="DIR", help=f"{what} (default: {default} beside the manifest)")


def add_dry_run(p: argparse.ArgumentParser, what: str = "show what would change; write nothing") -> None:
    p.add_argument("--dry-run", action="store_true", help=what)


def progress_printer(args: argparse.Namespace, template: str, *, plain: bool = False) -> Callable[[str], None]:
    """A progress callback: ``template`` with the item as a stage of this run (cli/progress.py): on a
    terminal, and with ``plain`` also one line in a pipe or a log."""
    def progress(item: str) -> None:
        reporter.current.stage(template.format(item), plain=plain)

    return progress


def manifest_from(args: argparse.Namespace) -> Manifest:
    return load_manifest(manifest_path(args))


def release(value: str) -> str:
    """A ``--vllm`` value: a PEP 440 version."""
    if not is_release(value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a release version (PEP 440, e.g. 0.29.0)")
    return value


def image_tag(value: str) -> str:
    """A ``--tag`` value: ``[REGISTRY/]NAME[:TAG]``, as ``docker tag`` accepts it."""
    m = re.fullmatch(TAG_REFERENCE, value)
    if not m or len(m.group("name")) > NAME_MAX:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a valid image tag (NAME[:TAG]: lowercase name components separated by '/', "
            "a tag of letters, digits, '_', '.', '-', at most 128 characters; no digest)")
    return value


def image_reference(value: str) -> str:
    """An image to read or run: ``[REGISTRY/]NAME[:TAG][@DIGEST]`` or an image id."""
    m = re.fullmatch(IMAGE_REFERENCE, value)
    if re.fullmatch(IMAGE_ID, value) or (m and len(m.group("name")) <= NAME_MAX):
        return value
    raise argparse.ArgumentTypeError(
        f"{value!r} is not a valid image reference ([REGISTRY/]NAME[:TAG][@sha256:DIGEST] with a lowercase "
        "NAME, or an image id)")
