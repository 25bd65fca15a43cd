"""The CI slice of tests/fuzz: every target under atheris for a few seconds, after its whole seed corpus.

``make fuzz`` runs the same targets for a minute each (docs/fuzzing.md). Here each one replays its seeds
(the repository's recipes and test cases, and every input a finding came from) and then mutates for
``FUZZ_CI_SECONDS``; any exception other than a PatchsetError naming its file, any input over the time
bound or the memory limit, fails the test with the input kept.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

FUZZ = Path(__file__).parent / "fuzz"
sys.path.insert(0, str(FUZZ))

import run  # noqa: E402
import targets  # noqa: E402

SECONDS = float(os.environ.get("FUZZ_CI_SECONDS", "2"))


def test_every_target_has_seeds():
    for name in targets.TARGETS:
        assert any((run.CORPUS / name).iterdir()), f"no seeds for {name}: run tests/fuzz/seed.py"


@pytest.mark.skipif(importlib.util.find_spec("atheris") is not None, reason="atheris runs the seeds below")
def test_every_seed_keeps_the_contract_without_atheris():
    assert run.replay(list(targets.TARGETS)) == 0


@pytest.mark.skipif(importlib.util.find_spec("atheris") is None, reason="atheris is not installed")
def test_a_short_fuzz_of_every_target_finds_nothing(tmp_path):
    proc = subprocess.run([sys.executable, str(FUZZ / "run.py"), "--seconds", str(SECONDS), "--workdir",
                           str(tmp_path)], capture_output=True, text=True, timeout=60 + 10 * len(targets.TARGETS))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {line.split()[0]: line.split() for line in proc.stdout.splitlines()[1:-1] if not line.startswith(" ")}
    assert set(rows) == set(targets.TARGETS), proc.stdout
    for name, row in rows.items():
        assert int(row[2]) > 0 and row[5] == "0", (name, proc.stdout)


def test_a_contract_break_is_a_finding(tmp_path, monkeypatch):
    """The harness itself can fail: a reader that raises something else is reported, not swallowed."""
    def broken(data: bytes) -> None:
        raise KeyError("id")

    monkeypatch.setitem(targets.TARGETS, "patch", targets.Target("patch", broken, "broken", ()))
    monkeypatch.setattr(run, "CORPUS", FUZZ / "corpus")
    assert run.replay(["patch"]) > 0


def test_a_refusal_that_names_nothing_is_a_finding():
    from patchset.errors import PatchsetError

    with pytest.raises(targets.Finding), targets.expect("fuzz.patch"):
        raise PatchsetError("something is wrong")
    with targets.expect("fuzz.patch"):  # named in the message: kept
        raise PatchsetError("fuzz.patch: something is wrong")
