"""Golden JSON: every verb's ``--format json`` on this repository, kept byte-stable across refactors.

A refactor must not change what scripts read. Each case runs the real CLI in a subprocess (the way
CI calls it) on this repository's manifest and real releases, drops only what varies from run to run
(timings, the index's list of newer releases), and compares with ``tests/golden/<name>.json``.
``PATCHSET_UPDATE_GOLDEN=1`` rewrites the files after an intended change; review the diff.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import stable

pytest_plugins = ["conftest_docker"]

REPO = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).with_name("golden")
VOLATILE = {"seconds", "duration", "newer"}

CASES = {
    "validate": ["validate"],
    "check": ["check"],
    "check-0.29.0-wheel": ["check", "--vllm", "0.29.0", "--source", "wheel"],
    "targets": ["targets"],
    "deps": ["deps"],
    "next-0.33.0": ["next", "--vllm", "0.33.0"],
    "port-0.33.0-dry-run": ["port", "--to", "0.33.0", "--dry-run"],
    "bad-input": ["check", "--vllm", "nonsense"],
}


# "tool" names the patchset that wrote the image's record: its version comes from git (setuptools-scm)
# and so moves with every commit.
IMAGE_VOLATILE = VOLATILE | {"id", "digest", "base_digest", "image", "applied_at", "created", "manifest_sha256",
                             "tool"}


def golden_cli(name: str, argv: list[str], volatile: set[str] = VOLATILE) -> None:
    run = subprocess.run([sys.executable, "-m", "patchset", *argv, "--format", "json"], cwd=REPO,
                         capture_output=True, text=True, timeout=900)
    doc = json.loads(run.stdout)  # exactly one document, whatever the exit code
    got = json.dumps({"exit": run.returncode, "output": stable(doc, volatile)}, indent=2, sort_keys=True) + "\n"
    path = GOLDEN / f"{name}.json"
    if os.environ.get("PATCHSET_UPDATE_GOLDEN") == "1":
        path.write_text(got)
    assert path.is_file(), f"no golden file {path}: run with PATCHSET_UPDATE_GOLDEN=1 once and review it"
    assert got == path.read_text(), f"{name}: --format json changed (PATCHSET_UPDATE_GOLDEN=1 to accept)"


@pytest.mark.network
@pytest.mark.parametrize("name", sorted(CASES))
def test_json_output_is_unchanged(name):
    golden_cli(name, CASES[name])


@pytest.mark.docker
@pytest.mark.slow
def test_audit_json_is_unchanged(built, standin, pristine_source):
    golden_cli("audit", ["audit", built.tag, standin, "--source", pristine_source], IMAGE_VOLATILE)
