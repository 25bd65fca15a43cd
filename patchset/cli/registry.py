"""Every verb's name, module and help, in one place.

The top-level parser lists verbs from here without importing them: ``patchset
check`` imports only ``patchset.cli.check`` (and what it needs), so start-up
stays small. Each verb module builds its own subparser with :func:`subparser`,
which gives every ``--help`` the same shape: a summary, a paragraph, the exit
codes and an example. ``tests/test_cli_registry.py`` keeps the README's command
list in step with these parsers.
"""

from __future__ import annotations

import argparse
import shutil
import textwrap
from dataclasses import dataclass

EXIT_CODES = ("exit codes: 0 everything asked for holds; 1 a finding (a hunk fails, a fix is missing or not "
              "proven, a port conflicts); 2 bad input (one line naming file:line and what to do); 3 an internal "
              "error (one line and the path of a traceback file)")


@dataclass(frozen=True)
class Verb:
    """A verb of the CLI: the module that implements it and its help texts."""

    module: str  # under patchset.cli
    summary: str  # one line, for `patchset --help`
    description: str  # one paragraph, for `patchset VERB --help`
    example: str


VERBS: dict[str, Verb] = {
    "validate": Verb(
        "validate", "check the manifest and every patch file, without any vLLM tree",
        "Load patches.yaml and parse every patch file it names, offline, and report every problem found (up to "
        "50), each as FILE:LINE. A .patch under recipes/ that no patch names is an error here (a warning "
        "elsewhere).", "patchset validate --format json"),
    "check": Verb(
        "check", "check every hunk of the series against pinned releases",
        "Apply the ordered series in memory to each pinned release's pristine files, hunk by hunk, each patch on "
        "top of the previous ones, and say per patch applies / upstream / partly-upstream / not-in-tree / failed / "
        "blocked, with every hunk's placement. Never looser than GNU patch -F0 or git apply.",
        "patchset check --vllm 0.29.0 --format markdown"),
    "apply": Verb(
        "apply", "apply the series for one release to a tree, all or nothing",
        "Check every hunk in memory, then replace the files under a journal (recoverable after a crash with "
        "--recover), rebuild the bytecode of touched modules and write a provenance record. The tree is either "
        "pristine or fully patched.", "patchset apply --vllm 0.29.0 .venv/lib/python3.11/site-packages"),
    "test": Verb(
        "test", "prove each patch with its upstream tests: they fail without it and pass with it",
        "Run each patch's upstream tests on the series and on the series minus that patch (the negative control), "
        "in a CPU venv or inside an image, and judge the manifest's suites against the pristine release. A crash "
        "is never proof.", "patchset test --vllm 0.29.0 --venv"),
    "build": Verb(
        "build", "build an image: the base image plus the series for one release",
        "Read the touched files out of the base image, apply the series on the host with the engine check uses, "
        "and add one layer with the changed files, their bytecode and the provenance record; labels say what the "
        "image carries. --sbom embeds a CycloneDX SBOM from an audit of the result.",
        "patchset build --vllm 0.29.0 --tag fork/vllm:0.29.0 --sbom"),
    "audit": Verb(
        "audit", "which fixes each image carries, verified against the image's files",
        "Read the release, the touched files, their bytecode and the provenance record out of each image and "
        "compare them with what the series makes of the pristine release: carried / upstream / missing / stale / "
        "tampered / unknown. Labels are never trusted.", "patchset audit fork/vllm:0.29.0 --format json"),
    "targets": Verb(
        "targets", "list the pinned releases (--format matrix for a CI job matrix)",
        "The manifest's targets with their images and the patches each carries; --format matrix prints one line "
        "of JSON for GitHub Actions' fromJSON().", "patchset targets --format matrix --carrying"),
    "schema": Verb(
        "schema", "print the JSON Schema of the manifest (patches.yaml, schema 1)",
        "Editors that speak the YAML language server complete and check the manifest with it: save it and put "
        "'# yaml-language-server: $schema=patches.schema.json' on the manifest's first line.",
        "patchset schema > patches.schema.json"),
    "sbom": Verb(
        "sbom", "a CycloneDX SBOM of an image: vLLM with the backports the image really carries",
        "Audit IMAGE's files and print a CycloneDX 1.6 document whose vLLM component lists, under "
        "pedigree.patches, every fix the audit found carried (backport, the diff, the upstream PR it resolves). "
        "Missing or tampered fixes are never listed as carried.", "patchset sbom fork/vllm:0.29.0 > sbom.cdx.json"),
    "cache": Verb(
        "cache", "what the cache holds (size per kind and release) and pruning what is no longer used",
        "info lists the cache ($PATCHSET_CACHE, default ~/.cache/patchset) by kind and release with sizes; prune "
        "--keep N removes every release but the N most recently used, --older-than DAYS those not used for DAYS "
        "days. A release a running patchset uses, or an entry being filled, is left alone.",
        "patchset cache prune --keep 3"),
    "init": Verb(
        "init", "start a fork on patchset: a starter patches.yaml, a pre-commit entry and a CI workflow",
        "Write patches.yaml (the schema modeline, the --vllm targets, no patches yet), a .pre-commit-config.yaml "
        "running patchset validate, .github/workflows/patchset.yml running the patchset action (check on "
        "every target, test per target, images on a GPU runner) and .github/workflows/patchset-upgrade.yml (a pull "
        "request for each new vLLM release; --no-upgrade-workflow leaves it out). Never overwrites: when any of "
        "them exists, nothing is written and the error names them.", "patchset init --vllm 0.29.0 --vllm 0.30.0"),
    "import": Verb(
        "importer", "adopt an existing series: quilt series, patch folder, format-patch, git",
        "Write patches.yaml and recipes/ from a series a fork already carries (ids, DEP-3 headers, upstream PR "
        "numbers, layout and inferred after: lists), then check it on the targets. Writes nothing on any error.",
        "patchset import patches/series --target 0.29.0"),
    "deps": Verb(
        "deps", "which patch needs which (inferred from the hunks), against the after: lists",
        "Decide for every pair of patches whether the later one needs the earlier (its hunks apply on top of it "
        "but not without it, or they touch the same lines); report undeclared and stale after: edges.",
        "patchset deps --format mermaid"),
    "next": Verb(
        "next", "evaluate the series on a release newer than every target, as if it were one",
        "List the releases newer than the newest target and evaluate the series on one of them without editing "
        "the manifest: carries / upstream / partly-upstream / needs-port / blocked, with what upstream changed "
        "where a hunk no longer applies.", "patchset next --vllm 0.33.0"),
    "port": Verb(
        "port", "carry the series to a new release: carry, retire, 3-way merge, or conflict",
        "For each patch in order on the new release: widen its range (carried), narrow it (retired, upstream has "
        "it), write a new patch from a 3-way merge of the pristine releases (ported), or leave a workspace with "
        "conflict markers (conflict). The manifest is rewritten keeping comments; --dry-run shows the diff.",
        "patchset port --to 0.30.0 --dry-run"),
    "refresh": Verb(
        "refresh", "regenerate a patch for a release: from a resolved port workspace, or with exact line numbers",
        "After a port conflict is resolved in its workspace, write the patch for the release from it (refused "
        "while conflict markers remain or a file does not compile); without a workspace, rewrite a patch that "
        "applies with offsets so its line numbers are exact.", "patchset refresh offload-fix --vllm 0.30.0"),
    "upgrade": Verb(
        "upgrade", "a new vLLM release as a branch worth a pull request: port, target, proof, body",
        "Pick the newest release newer than every target (or --to V), port the series there, make it a target "
        "once every patch carried, retired or ported, and with --prove run each carried or ported patch's tests "
        "with and without it. --body FILE writes the pull request's Markdown. Conflict workspaces stay on the "
        "branch, and validate fails until they are finished.", "patchset upgrade --prove --body pr.md"),
}


def subparser(sub: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:
    """The subparser of ``name``; its paragraph, exit codes and example are filled in when help is shown.
    Every verb takes -q (no progress) and -v (progress with detail)."""
    p = sub.add_parser(name, help=VERBS[name].summary, formatter_class=argparse.RawDescriptionHelpFormatter)
    loud = p.add_mutually_exclusive_group()
    loud.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr (errors and warnings still)")
    loud.add_argument("-v", "--verbose", action="store_true", help="progress with detail on stderr")
    return p


def help_texts(name: str) -> tuple[str, str]:
    """The description and epilog of ``name``'s help (summary, paragraph, exit codes, example), fitted to the
    terminal. Made only when help is shown: a run that just parses its arguments never pays for textwrap."""
    verb = VERBS[name]
    width = max(40, min(shutil.get_terminal_size().columns, 100) - 2)
    about = textwrap.fill(f"{verb.summary[0].upper()}{verb.summary[1:]}. {verb.description}", width)
    return about, f"{textwrap.fill(EXIT_CODES + '.', width)}\n\nexample:\n  {verb.example}"
