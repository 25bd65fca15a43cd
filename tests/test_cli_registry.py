"""The README's command list, every verb's --help and the argument parsers cannot drift apart."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from patchset.cli import build_parser
from patchset.cli.registry import VERBS

ROOT = Path(__file__).resolve().parents[1]
# The README lists every verb; every option is documented in the README or a page under docs/.
README = (ROOT / "README.md").read_text()
DOCS = README + "".join(p.read_text() for p in sorted((ROOT / "docs").glob("*.md")))


def command_list() -> str:
    return README.split("## The commands", 1)[1].split("Exit codes", 1)[0]


def subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_the_readme_lists_every_verb_and_no_other():
    listed = set(re.findall(r"^\s+patchset (\w+)", command_list(), re.M))
    assert listed == set(VERBS)


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_every_option_of_a_verb_is_in_the_readme_or_docs(verb):
    options = {o for a in subparsers()[verb]._actions for o in a.option_strings if o.startswith("--") and o != "--help"}
    missing = sorted(o for o in options if not re.search(re.escape(o) + r"\b", DOCS))
    assert not missing, f"patchset {verb}: {missing} undocumented in README.md and docs/"


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_every_verb_help_has_a_paragraph_exit_codes_and_an_example(verb):
    out = subprocess.run([sys.executable, "-m", "patchset", verb, "--help"], capture_output=True, text=True,
                         env={"COLUMNS": "80", "PATH": "/usr/bin:/bin"}, check=True).stdout
    assert "exit codes: 0" in out and f"example:\n  patchset {verb}" in out
    assert max(len(line) for line in out.splitlines()) <= 80, "help must fit 80 columns"


def test_top_level_help_imports_no_verb():
    code = ("import sys; from patchset.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('patchset.verbs')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
