"""The README and docs/ cannot drift from the code: every command they show parses with the real
parser (or, for a synopsis with placeholders, every option it names exists), every `make` target
exists, every relative link leads to a file, and the README stays a user's README (≤ 250 lines)."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from patchset.cli import build_parser
from patchset.errors import PatchsetError

ROOT = Path(__file__).resolve().parents[1]
USER_PAGES = sorted((ROOT / "docs").glob("*.md"))
RECORDS = sorted((ROOT / "docs" / "records").glob("*.md"))
PAGES = [ROOT / "README.md", *USER_PAGES, *RECORDS, ROOT / "images" / "README.md"]
# A synopsis rather than a command: alternatives, optional parts, elisions, or placeholders in capitals
# (V, IMAGE, FILE, NEXT, WORK/NAME, ...).
PLACEHOLDER = re.compile(r"[\[\]|…()]|\.\.\.| / |(?<![\w-])(?:[A-Z]|[A-Z][A-Z_]+)\b")


def code_lines(text: str) -> list[str]:
    """Lines of fenced blocks (not JSON/YAML, nor ``text``: a command's output) and of indented blocks that
    follow a blank line."""
    out: list[str] = []
    fence: str | None = None
    indented = False
    previous_blank = True
    for line in text.splitlines():
        if fence is not None:
            if line.startswith("```"):
                fence = None
            elif fence not in ("json", "yaml", "yml", "mermaid", "text"):
                out.append(line)
            continue
        if line.startswith("```"):
            fence = line[3:].strip()
            continue
        if line.startswith("    ") and (indented or previous_blank):
            indented = True
            out.append(line.strip())
        elif line.strip():
            indented = False
        previous_blank = not line.strip()
    return out


def commands(prog: str) -> list[tuple[str, str]]:
    """(page, command line) for every line of a code block that runs ``prog``."""
    found = []
    for page in PAGES:
        for line in code_lines(page.read_text()):
            line = line.removeprefix("$ ")
            # A comment ("  # ...") or a column of prose (three spaces or more, then a word) ends the command.
            for part in re.split(r"&&|;", re.split(r"  #|\s{3,}(?=[a-z]+ [a-z])", line)[0]):
                words = part.strip().split()
                if words and words[0].rsplit("/", 1)[-1] == prog:
                    found.append((page.relative_to(ROOT).as_posix(), part.strip()))
    return found


def options_of(parser: argparse.ArgumentParser) -> set[str]:
    out = {o for a in parser._actions for o in a.option_strings}
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sub in a.choices.values():
                out |= options_of(sub)
    return out


def subcommand(parser: argparse.ArgumentParser, verb: str) -> argparse.ArgumentParser:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[verb]


PATCHSET = commands("patchset")


def test_the_docs_show_commands_at_all():
    assert len(PATCHSET) > 40 and {p for p, _ in PATCHSET} >= {"README.md", "docs/ci.md", "docs/cache.md"}


@pytest.mark.parametrize(("page", "line"), PATCHSET, ids=[f"{p}:{c[:60]}" for p, c in PATCHSET])
def test_every_patchset_command_shown_parses(page, line):
    words = shlex.split(line.split(" > ")[0].split(" 2>")[0], posix=True)
    args = words[1:]
    if not args or args[0].startswith("-"):
        assert set(a for a in args if a.startswith("--")) <= options_of(build_parser()), line
        return
    verb = args[0]
    parser = build_parser(verb)
    if PLACEHOLDER.search(line):  # a synopsis: the options it names must exist
        known = options_of(subcommand(parser, verb)) | options_of(parser)
        named = {re.sub(r"[=\[\]().,…|].*$", "", w) for w in re.findall(r"--[a-z][a-z-]*", line)}
        assert named <= known, f"{page}: {line}: {sorted(named - known)} are not options of patchset {verb}"
        return
    try:
        parser.parse_args(args)
    except PatchsetError as e:
        pytest.fail(f"{page}: `{line}` does not parse: {e}")


@pytest.mark.parametrize(("page", "line"), commands("make"), ids=[f"{p}:{c}" for p, c in commands("make")])
def test_every_make_target_shown_exists(page, line):
    targets = set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.M))
    assert line.split()[1] in targets, f"{page}: {line}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_lead_to_files(page):
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
        if "://" in target:
            continue
        assert (page.parent / target).exists(), f"{page.relative_to(ROOT)}: a link to {target} leads nowhere"


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_test_fails_rather_than_skips_where_the_docker_engine_is_missing_unless_asked():
    """`make test` (the README's command, and CI's) runs the suite under PATCHSET_REQUIRE_DOCKER=1."""
    env = {k: v for k, v in os.environ.items() if k != "PATCHSET_REQUIRE_DOCKER" and not k.startswith("MAKE")}

    def suite(*args: str, **extra: str) -> list[str]:
        done = subprocess.run(["make", "-n", "test", *args], cwd=ROOT, env={**env, **extra}, capture_output=True,
                              text=True, check=True)
        return [ln.split()[0] for ln in done.stdout.splitlines() if " -m pytest" in ln]

    assert suite() == ["PATCHSET_REQUIRE_DOCKER=1"]
    assert suite("PATCHSET_REQUIRE_DOCKER=0") == ["PATCHSET_REQUIRE_DOCKER=0"]
    assert suite(PATCHSET_REQUIRE_DOCKER="0") == ["PATCHSET_REQUIRE_DOCKER=0"]


def test_the_readme_is_a_users_readme():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250
    # Its first lines: the two commands that set up a fresh machine, as the Makefile has them.
    assert lines[2].split("#")[0].split() == ["make", "check"] and lines[3].split("#")[0].split() == ["make", "test"]


@pytest.mark.parametrize("page", USER_PAGES, ids=lambda p: p.name)
def test_a_user_page_is_a_users_page(page):
    """A page under docs/ says what a verb does, how to read its output and what to do next, in at most
    250 lines; measurements and run logs go to docs/records/, which the page links once at most."""
    text = page.read_text()
    assert len(text.splitlines()) <= 250, f"{page.name}: {len(text.splitlines())} lines; move records to docs/records/"
    for record in RECORDS:
        assert text.count(f"](records/{record.name})") <= 1, f"{page.name} links records/{record.name} more than once"


def test_each_record_has_its_user_page():
    """docs/records/X.md is for maintainers; a user page (docs/*.md or the README) links it, so it is found."""
    assert RECORDS, "docs/records/ holds the measurements"
    pages = [*USER_PAGES, ROOT / "README.md"]
    for record in RECORDS:
        link = f"records/{record.name})"
        assert any(link in p.read_text() for p in pages), f"no user page links docs/records/{record.name}"


def test_the_readmes_from_scratch_quickstart_runs(tmp_path, monkeypatch, capsys):
    """The README's "from scratch" block, run as written in an empty git repository."""
    import subprocess

    from patchset.cli import main

    block = (ROOT / "README.md").read_text().split("## Five minutes: from scratch", 1)[1].split("```", 1)[0]
    lines = [c for c in code_lines(block) if c.startswith("patchset ")]
    assert [c.split()[1] for c in lines] == ["init", "validate"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.chdir(tmp_path)
    for line in lines:
        assert main(shlex.split(line.split("  #")[0])[1:]) == 0, capsys.readouterr().err
    assert "ok: 0 patches" in capsys.readouterr().out


def test_a_synopsis_with_a_wrong_option_is_caught():
    parser = build_parser("check")
    assert "--no-such-flag" not in options_of(subcommand(parser, "check"))
    with pytest.raises(PatchsetError):
        parser.parse_args(["check", "--vllm", "0.29.0", "--formt", "json"])
