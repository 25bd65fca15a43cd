"""`patchset init`: what a fork needs to start carrying its vLLM backports with patchset.

Four files, each what its tool expects: a starter ``patches.yaml`` (the schema modeline for editors,
the pinned releases, no patches yet), a ``.pre-commit-config.yaml`` entry running ``patchset validate``
on every commit, ``.github/workflows/patchset.yml`` running the patchset action (check on every
target, the proof per target, images on a GPU runner), and ``.github/workflows/patchset-upgrade.yml``
(daily: ``patchset upgrade`` as one pull request per new vLLM release; ``upgrade=False`` leaves it
out). It never overwrites: when any of them exists, nothing is written and the error names every one.
``patchset import --ci`` writes the CI files beside an imported series with the same code.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from packaging.version import InvalidVersion, Version

from patchset import __version__
from patchset.core.manifest import DEFAULT_MANIFEST
from patchset.errors import PatchsetError

#: Where patchset lives on GitHub: the action (``uses:``) and the pre-commit hooks (``repo:``) are taken
#: from there. ``patchset init --action OWNER/NAME@REF`` points at a fork or a mirror instead.
HOME = "vllm-patchset/patchset"
WORKFLOW = ".github/workflows/patchset.yml"
UPGRADE_WORKFLOW = ".github/workflows/patchset-upgrade.yml"
PRE_COMMIT = ".pre-commit-config.yaml"
#: ``OWNER/NAME@REF`` (a GitHub action may live in a sub-folder: ``OWNER/NAME/PATH@REF``).
ACTION_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_./-]+)?@[A-Za-z0-9_./-]+")
SCHEMA_URL = f"https://raw.githubusercontent.com/{HOME}/main/patchset/data/manifest.schema.json"


class InitError(PatchsetError):
    """A file init would write is already there, or the folder cannot be written: nothing was written."""


@dataclass
class InitResult:
    """What init wrote (or, with ``dry_run``, would write): path → text, in the order written."""

    into: Path
    files: dict[str, str]
    dry_run: bool
    written: list[str] = field(default_factory=list)


def default_action_ref(version: str) -> str:
    """``OWNER/NAME@vX.Y.Z`` for a released patchset (a pre- or post-release too: each is tagged), ``@main``
    for a development build (``.devN``, or a local ``+g<sha>`` build between tags)."""
    try:
        v = Version(version)
    except InvalidVersion:
        return f"{HOME}@main"
    return f"{HOME}@main" if v.is_devrelease or v.local else f"{HOME}@v{v}"


def manifest_text(versions: Sequence[str]) -> str:
    targets = "\n".join(f'  "{v}": {{}}  # image: "vllm/vllm-openai:v{v}" to build and audit images' for v in versions)
    return f"""\
# yaml-language-server: $schema={SCHEMA_URL}
# The fork's series: which backports it carries on which pinned vLLM releases, in order.
# Add a patch with an entry under patches: (the list order is the series order), e.g.
#   - id: offload-finished-watermark
#     title: "Stop offloading the final sampled token's KV slot"
#     origin: backport            # backport | fork | local
#     upstream: {{pr: 54288}}
#     releases: ">=0.28.0,<0.30.0"
#     patch: recipes/offload-finished-watermark/fix.patch
#     tests: ["tests/v1/...::test_..."]
# `patchset validate` checks this file; `patchset check` checks every hunk on every target.
schema: 1
upstream:
  pypi: vllm
  tag: "v{{version}}"
targets:
{targets}
patches: []
"""


def pre_commit_text(action: str, verb: str = "init") -> str:
    repo, _, rev = action.partition("@")
    repo = "/".join(repo.split("/")[:2])  # the hooks are at the repository's root, whatever folder the action is in
    return f"""\
# pre-commit (https://pre-commit.com), written by `patchset {verb}`: `pre-commit install` once, then every
# commit that touches the series is validated offline; `pre-commit run patchset-check --hook-stage manual`
# checks every hunk.
repos:
  - repo: https://github.com/{repo}
    rev: {rev or "main"}
    hooks:
      - id: patchset-validate
      - id: patchset-check
"""


def upgrade_workflow_text(action: str, verb: str = "init") -> str:
    """The scheduled workflow that turns each new vLLM release into a pull request (docs/upgrade.md)."""
    template = resources.files("patchset.data").joinpath("upgrade-workflow.yml").read_text(encoding="utf-8")
    return template.replace("@ACTION@", action).replace("@VERB@", verb)


def workflow_text(action: str, versions: Sequence[str], verb: str = "init") -> str:
    template = resources.files("patchset.data").joinpath("workflow.yml").read_text(encoding="utf-8")
    return template.replace("@ACTION@", action).replace("@TARGETS@", ", ".join(versions)).replace("@VERB@", verb)


def scaffold(into: str | Path, versions: Sequence[str], *, action: str | None = None, manifest: bool = True,
             dry_run: bool = False, verb: str = "init", upgrade: bool = True) -> InitResult:
    """Write the starter files under ``into`` (the fork's repository), or none when any exists; their
    headers name ``verb`` (``init``, or ``import`` writing them beside an imported series); ``upgrade``: the
    scheduled upgrade workflow too."""

    if manifest and not versions:
        raise InitError("no target release", hint="name the pinned vLLM release(s): --vllm 0.29.0")
    into = Path(into)
    if into.exists() and not into.is_dir():
        raise InitError(f"{into} is not a folder", hint="run it in the fork's repository, or pass --into DIR")
    if action is not None and not ACTION_REF.fullmatch(action):
        raise InitError(f"--action {action!r} is not OWNER/NAME@REF",
                        hint=f"e.g. --action {HOME}@v1.0.0, or a fork or mirror of it at a tag or commit")
    action = action or default_action_ref(__version__)
    files: dict[str, str] = {}
    if manifest:
        files[DEFAULT_MANIFEST] = manifest_text(versions)
    files[PRE_COMMIT] = pre_commit_text(action, verb)
    files[WORKFLOW] = workflow_text(action, versions, verb)
    if upgrade:
        files[UPGRADE_WORKFLOW] = upgrade_workflow_text(action, verb)
    there = [rel for rel in files if os.path.lexists(into / rel)]
    if there:
        raise InitError(f"{', '.join(str(into / rel) for rel in there)} already "
                        f"{'exists' if len(there) == 1 else 'exist'}; nothing was written",
                        hint="init never overwrites: move them away, or add what they lack by hand")
    result = InitResult(into, files, dry_run)
    if not dry_run:
        result.written = _write(into, files)
    return result


def _write(into: Path, files: dict[str, str]) -> list[str]:
    """Every file or none: each created exclusively (a file that appeared meanwhile is not overwritten)."""
    written: list[Path] = []
    try:
        for rel, text in files.items():
            dest = into / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            with open(dest, "x", encoding="utf-8") as out:
                written.append(dest)
                out.write(text)
    except OSError as e:
        for path in written:
            path.unlink(missing_ok=True)
        raise InitError(f"cannot write {e.filename or into}: {e.strerror}", hint="nothing was written") from e
    return [str(f) for f in written]
