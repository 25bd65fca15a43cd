"""`patchset upgrade`: pick the release, port there, make it a target, leave a branch a pull request finishes.

The acceptance cases run on the real releases from the package index and real git: this repository's own
series, and a fork's series of real vLLM code (tests/realfixture.py) carried 0.29.0 → 0.30.0, where a patch
of every kind meets the release (carried, ported, retired, conflict); that branch alone finishes the conflict.
The small cases use the fixture series on trees in folders (tests/portfixture.py).
"""

from __future__ import annotations

import datetime
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import portfixture
import pytest
from helpers import udiff, write_manifest, write_patch
from packaging.version import Version

from patchset.cli import main
from patchset.core.manifest_load import load_manifest
from patchset.report.upgrade import upgrade_body, upgrade_json
from patchset.verbs.port import SCRATCH, port
from patchset.verbs.upgrade import upgrade

REPO = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).with_name("golden")


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` but git's own, for byte-identical comparisons."""
    return {str(f.relative_to(folder)): f.read_bytes() for f in sorted(folder.rglob("*"))
            if f.is_file() and ".git" not in f.relative_to(folder).parts}


def results(report) -> dict[str, str]:
    return {p.id: str(p.result) for p in report.port.patches}


def take_the_patchs_side(path: Path) -> None:
    """Resolve every diff3 conflict of ``path`` as a maintainer keeping the fork's lines would."""
    text = path.read_text()
    resolved = re.sub(r"<<<<<<< [^\n]*\n.*?\n\|\|\|\|\|\|\| [^\n]*\n.*?=======\n(.*?)>>>>>>> [^\n]*\n", r"\1", text,
                      flags=re.S)
    assert resolved != text and "<<<<<<<" not in resolved
    path.write_text(resolved)


# --- the small fixture series (trees in folders) -----------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path):
    return portfixture.build(tmp_path), portfixture.source(tmp_path)


def test_no_release_newer_than_the_targets_changes_nothing_and_holds(project):
    manifest, src = project
    before = tree(manifest.parent)
    r = upgrade(load_manifest(manifest), source=src, released=["0.27.0", "0.28.0"])
    assert r.vllm is None and r.ok and r.port is None and r.branch is None
    assert tree(manifest.parent) == before
    assert "nothing changed" in upgrade_body(r)


def test_it_picks_the_newest_release_and_runs_ports_walk(project):
    manifest, src = project
    expected = {r.id: str(r.result) for r in port(load_manifest(manifest), "0.29.0", source=src,
                                                   dry_run=True).patches}
    r = upgrade(load_manifest(manifest), source=src, released=["0.28.0", "0.29.0"], dry_run=True)
    assert r.vllm == "0.29.0" and r.newer == ["0.29.0"] and r.branch == "patchset/vllm-0.29.0"
    assert results(r) == expected  # the same walk as port, patch for patch
    assert r.title == "vLLM 0.29.0: 1 carried, 2 ported, 1 retired, 2 conflict, 1 blocked"
    assert not r.ok and r.draft and not r.targeted


def test_a_dry_run_writes_nothing(project, tmp_path):
    manifest, src = project
    before = tree(manifest.parent)
    code = main(["upgrade", "--to", "0.29.0", "--manifest", str(manifest), "--source", src, "--dry-run",
                 "--body", str(tmp_path / "body.md")])
    assert code == 1 and tree(manifest.parent) == before
    assert (tmp_path / "body.md").read_text().startswith("vLLM 0.29.0: 1 carried, 2 ported")


def test_conflict_workspaces_are_not_ignored_by_git_on_the_upgrade_branch(project):
    manifest, src = project
    base = manifest.parent
    git(base, "init", "-q")
    (base / ".patchset").mkdir()
    (base / ".patchset" / ".gitignore").write_bytes(SCRATCH)  # left by a local port before
    r = upgrade(load_manifest(manifest), "0.29.0", source=src)
    assert not r.ok and not r.targeted and r.warnings == []
    assert not (base / ".patchset" / ".gitignore").exists()
    git(base, "add", "-A")
    tracked = git(base, "ls-files").splitlines()
    assert ".patchset/port/clash/vllm/clash.py" in tracked and ".patchset/port/clash/README.md" in tracked
    assert '"0.29.0"' not in manifest.read_text().split("patches:")[0]  # V is no target yet


def test_a_maintainers_own_gitignore_is_left_alone(project):
    manifest, src = project
    (manifest.parent / ".patchset").mkdir()
    (manifest.parent / ".patchset" / ".gitignore").write_text("cache/\n")
    upgrade(load_manifest(manifest), "0.29.0", source=src)
    assert (manifest.parent / ".patchset" / ".gitignore").read_text() == "cache/\n"


def test_exit_codes_and_one_json_document(project, capsys):
    manifest, src = project
    code = main(["upgrade", "--to", "0.29.0", "--manifest", str(manifest), "--source", src, "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and doc["ok"] is False and doc["draft"] is True and doc["targeted"] is False
    assert doc["branch"] == "patchset/vllm-0.29.0" and doc["title"].startswith("vLLM 0.29.0: ")
    assert doc["next"] == "patchset refresh clash --vllm 0.29.0"
    assert {p["id"]: p["result"] for p in doc["port"]["patches"]}["carry"] == "carried"


def test_a_series_that_carries_becomes_a_target_and_a_second_run_changes_nothing(tmp_path, capsys):
    project = tmp_path / "project"
    lines = "".join(f"x{i} = {i}\n" for i in range(9))
    for v, text in (("0.28.0", lines), ("0.29.0", "z = 0\n" + lines)):
        (tmp_path / "trees" / v / "vllm").mkdir(parents=True)
        (tmp_path / "trees" / v / "vllm" / "m.py").write_text(text)
        (tmp_path / "trees" / v / "vllm" / "__init__.py").write_text(f'__version__ = "{v}"\n')
    write_patch(project, "recipes/p/p.patch", udiff("vllm/m.py", lines, lines.replace("x4 = 4", "x4 = 40")))
    manifest = write_manifest(project, """\
        schema: 1
        targets:
          "0.28.0": {image: "img:v0.28.0"}  # the release we run
        patches:
          - id: p
            releases: ">=0.28.0"
            patch: recipes/p/p.patch
        """)
    src = f"dir:{tmp_path / 'trees'}/{{version}}"
    assert main(["upgrade", "--to", "0.29.0", "--manifest", str(manifest), "--source", src]) == 0
    out = capsys.readouterr().out
    assert "vLLM 0.29.0: 1 carried" in out and "vLLM 0.29.0 is a target now" in out
    text = manifest.read_text()
    assert '  "0.28.0": {image: "img:v0.28.0"}  # the release we run\n  "0.29.0": {image: "img:v0.29.0"}\n' in text
    before = tree(project)
    assert main(["upgrade", "--to", "0.29.0", "--manifest", str(manifest), "--source", src]) == 0
    assert tree(project) == before


def test_a_ported_patch_shows_upstreams_change_at_each_hunk_the_merge_ported(project):
    manifest, src = project
    r = upgrade(load_manifest(manifest), "0.29.0", source=src, dry_run=True)
    ported = {p.id: p.upstream_change for p in r.port.patches if str(p.result) == "ported"}
    assert [(c.file, c.hunk, c.line) for c in ported["merge"]] == [("vllm/merge.py", 1, 7)]
    assert "\n-line_12 = 12\n+line_12 = 12  # upstream\n" in ported["merge"][0].diff  # the context it edited
    # partly's second hunk lands as it is: only its first, upstream's own now, was ported (dropped)
    assert [(c.file, c.hunk) for c in ported["partly"]] == [("vllm/partly.py", 1)]
    assert "\n-line_5 = 5\n+line_5 = -5\n" in ported["partly"][0].diff
    section = upgrade_body(r).split("### ported: merge\n")[1].split("\n### ")[0]
    assert "What upstream changed at each hunk the merge ported (vLLM 0.28.0 to 0.29.0):\n\n" \
           "- `vllm/merge.py` hunk 1, line 7: upstream changed 1 of these lines, added 1; the hunk's lines moved " \
           "from 7 to 10\n\n  ```diff\n  --- vllm/merge.py (vllm 0.28.0)\n" in section
    assert "\n  -line_12 = 12\n  +line_12 = 12  # upstream\n" in section
    doc = json.loads(upgrade_json(r))
    assert [c["hunk"] for c in doc["ported_upstream"]["partly"]] == [1]
    assert doc["ported_upstream"]["merge"][0]["diff"] == ported["merge"][0].diff


def _releases_with_fixes(tmp_path: Path, versions: list[str], fixed: dict[str, str]) -> str:
    """A tree a release in folders, ``vllm/m.py`` fixed (x4 = 40) from ``fixed["m"]`` on, ``vllm/n.py``
    (y2 = 20) from ``fixed["n"]`` on; the source that reads them."""
    lines = "".join(f"x{i} = {i}\n" for i in range(9))
    other = "".join(f"y{i} = {i}\n" for i in range(9))
    for v in versions:
        root = tmp_path / "trees" / v / "vllm"
        root.mkdir(parents=True)
        m = lines.replace("x4 = 4", "x4 = 40") if Version(v) >= Version(fixed["m"]) else lines
        n = other.replace("y2 = 2", "y2 = 20") if Version(v) >= Version(fixed["n"]) else other
        (root / "m.py").write_text(m + f"# {v}\n")
        (root / "n.py").write_text(n + f"# {v}\n")
        (root / "__init__.py").write_text(f'__version__ = "{v}"\n')
    return f"dir:{tmp_path / 'trees'}/{{version}}"


def _probed_project(project: Path, unprobed: bool) -> Path:
    """A project on 1.0 with the fix of vllm/m.py (a probe says when upstream has it) and, when asked, the fix of
    vllm/n.py (no probe: only its hunks say)."""
    lines = "".join(f"x{i} = {i}\n" for i in range(9)) + "# 1.0\n"
    write_patch(project, "recipes/m/fix.patch", udiff("vllm/m.py", lines, lines.replace("x4 = 4", "x4 = 40")))
    text = """\
        schema: 1
        targets:
          "1.0": {}
        patches:
          - id: probed
            releases: ">=1.0"
            patch: recipes/m/fix.patch
            present: {file: vllm/m.py, contains: "x4 = 40"}
        """
    if unprobed:
        other = "".join(f"y{i} = {i}\n" for i in range(9)) + "# 1.0\n"
        write_patch(project, "recipes/n/fix.patch", udiff("vllm/n.py", other, other.replace("y2 = 2", "y2 = 20")))
        text = text.rstrip(" ") + """\
          - id: unprobed
            releases: ">=1.0"
            patch: recipes/n/fix.patch
        """
    return write_manifest(project, text)


def test_a_retired_patch_names_the_first_release_that_carries_it_found_by_bisection(tmp_path):
    versions = ["1.0", "1.1", "1.2", "1.3", "1.4", "1.5"]
    src = _releases_with_fixes(tmp_path, versions, {"m": "1.2", "n": "1.3"})
    manifest = _probed_project(tmp_path / "project", unprobed=True)
    r = upgrade(load_manifest(manifest), "1.5", source=src, released=versions)
    assert results(r) == {"probed": "retired", "unprobed": "retired"} and r.targeted
    # 1.1 to 1.4 lie between the target and V: bisected, 1.4 is never opened for either
    assert (r.upstream["probed"].release, r.upstream["probed"].looked) == ("1.2", ("1.1", "1.2", "1.3"))
    assert r.upstream["probed"].evidence == "probe: vllm/m.py:5 contains 'x4 = 40'"
    assert (r.upstream["unprobed"].release, r.upstream["unprobed"].looked) == ("1.3", ("1.2", "1.3"))
    assert r.upstream["unprobed"].evidence.startswith("reverse-apply: every hunk is already in vllm 1.3")
    body = upgrade_body(r)
    assert "| probed | retired | 1.0 | - | upstream since vLLM 1.2 |" in body
    assert ("Upstream carries it since vLLM 1.2, the first release after vLLM 1.0 that does (trees opened to "
            "find it: 1.1, 1.2, 1.3): probe: vllm/m.py:5 contains 'x4 = 40'.\nIn vLLM 1.5: probe: ") in body
    # the manifest's note keeps the release the port retired it for
    assert "# retired for 1.5: upstream there (probe: vllm/m.py:5" in manifest.read_text()
    doc = json.loads(upgrade_json(r))
    assert doc["upstream"]["unprobed"] == {"release": "1.3", "looked": ["1.2", "1.3"],
                                           "evidence": "reverse-apply: every hunk is already in vllm 1.3"}


def test_a_fix_upstream_only_in_v_names_v_and_opens_no_tree_without_releases_between(tmp_path):
    versions = ["1.0", "1.1"]
    src = _releases_with_fixes(tmp_path, versions, {"m": "1.1", "n": "9"})
    manifest = _probed_project(tmp_path / "project", unprobed=False)
    r = upgrade(load_manifest(manifest), "1.1", source=src, dry_run=True)  # a dir: source: no index asked
    assert r.upstream["probed"].release == "1.1" and r.upstream["probed"].looked == ()
    assert r.upstream["probed"].evidence == r.port.patches[0].evidence


# --- the real releases -------------------------------------------------------------------------------------


@pytest.mark.network
def test_this_repositorys_series_upgrades_to_the_newest_release_and_a_second_run_changes_nothing(tmp_path):
    from patchset.verbs.next import newer_releases

    shutil.copytree(REPO / "recipes", tmp_path / "recipes")
    text = (REPO / "patches.yaml").read_text()
    (tmp_path / "patches.yaml").write_text(re.sub(r'  "0\.30\.0": \{[^\n]*\}\n', "", text))
    m = load_manifest(tmp_path / "patches.yaml")
    assert [t.version for t in m.targets] == ["0.28.0", "0.29.0"]
    newest = newer_releases(m)[-1]
    git(tmp_path, "init", "-q")

    assert main(["upgrade", "--manifest", str(tmp_path / "patches.yaml"), "--body", str(tmp_path / "b.md"),
                 "-q"]) == 0
    after = load_manifest(tmp_path / "patches.yaml")
    assert [t.version for t in after.targets] == ["0.28.0", "0.29.0", newest]
    text = (tmp_path / "patches.yaml").read_text()
    for pid in ("offload-finished-watermark", "offload-recurrent-load-boundary", "offload-mtp-eagle-serve"):
        # retired, with the evidence on the entry; its range stays as it was (it stopped before 0.30.0)
        assert re.search(rf"- id: {pid}\n(?:    .*\n)*?    # retired for {newest}: upstream there \(probe: ", text)
    body = (tmp_path / "b.md").read_text()
    assert body.startswith(f"vLLM {newest}: 3 retired\n")
    assert body.count("| retired |") == 3 and f"**vLLM {newest} is a target now**" in body
    # the fixes landed in 0.30.0 (tests/test_core_pristine.py): the body names it, found among the releases
    # between 0.29.0 and the newest by bisection, with the probe's line there
    assert body.count("| upstream since vLLM 0.30.0 |") == 3
    assert "Upstream carries it since vLLM 0.30.0, the first release after vLLM 0.29.0 that does (trees opened " \
           "to find it: 0.30.0, " in body
    assert "scheduler.py:1485 contains 'max(req.num_prompt_tokens, req.num_tokens - 1)'" \
           in body
    (tmp_path / "b.md").unlink()
    before = tree(tmp_path)
    r = upgrade(load_manifest(tmp_path / "patches.yaml"))
    assert r.vllm is None and r.ok
    assert tree(tmp_path) == before  # byte-identical


def _fork_at_029(root: Path) -> Path:
    """The fork's series of real vLLM code (realfixture) with targets 0.28.0 and 0.29.0, as its maintainer had it
    after the 0.29.0 port: the one conflict finished with the hand recipe, committed on main."""
    import realfixture
    from test_verbs_port import SCHED, TESTS, _applied

    from patchset.cache import Cache
    from patchset.sources.sdist import SdistSource
    from patchset.verbs.refresh import refresh

    pristine = SdistSource("vllm", "0.28.0", Cache()).root
    manifest = realfixture.build(root / "fork", lambda path: (pristine / path).read_text())
    port(load_manifest(manifest), "0.29.0")
    hand = _applied(root, "0.29.0", [REPO / "recipes/offload-finished-watermark/fix.patch",
                                     REPO / "recipes/offload-recurrent-load-boundary/vllm-0.29.patch"],
                    [SCHED, TESTS])
    (manifest.parent / ".patchset/port/recurrent-boundary" / TESTS).write_bytes(hand[TESTS])
    refresh(load_manifest(manifest), "recurrent-boundary", "0.29.0")
    assert port(load_manifest(manifest), "0.29.0").ok
    shutil.rmtree(manifest.parent / ".patchset")
    fork = manifest.parent
    git(fork, "init", "-q", "-b", "main")
    git(fork, "add", "-A")
    git(fork, "commit", "-q", "-m", "the series on 0.28.0 and 0.29.0")
    return manifest


@pytest.fixture(scope="module")
def fork_029(tmp_path_factory) -> Path:
    return _fork_at_029(tmp_path_factory.mktemp("fork029"))


def stable_body(text: str) -> str:
    """The body with today's date (a ported patch's Last-Update) as a placeholder."""
    return text.replace(datetime.date.today().isoformat(), "YYYY-MM-DD")


@pytest.mark.network
def test_a_fork_series_upgrade_carries_ports_retires_and_conflicts_and_the_branch_alone_finishes_it(fork_029,
                                                                                                     tmp_path):
    fork = tmp_path / "fork"
    shutil.copytree(fork_029.parent, fork)
    manifest = fork / "patches.yaml"
    git(fork, "checkout", "-q", "-b", "patchset/vllm-0.30.0")
    body = tmp_path / "body.md"
    assert main(["upgrade", "--to", "0.30.0", "--manifest", str(manifest), "--body", str(body), "-q"]) == 1
    r = upgrade(load_manifest(manifest), "0.30.0", dry_run=True)  # what the branch holds now, said again
    assert results(r) == {
        "outputs-doc": "carried", "request-placeholder": "carried", "request-high-water": "carried",
        "sampling-extra-args": "carried", "watermark": "retired", "recurrent-boundary": "retired",
        "mtp-eagle": "retired", "logger-error-once": "conflict"}

    # the pull request's body, as a golden file
    text = stable_body(body.read_text())
    golden = GOLDEN / "upgrade-body-0.30.0.md"
    if os.environ.get("PATCHSET_UPDATE_GOLDEN") == "1":
        golden.write_text(text)
    assert text == golden.read_text()
    assert text.startswith("vLLM 0.30.0: 3 carried, 1 ported, 3 retired, 1 conflict\n")
    for pid, result in (("sampling-extra-args", "ported"), ("watermark", "retired"),
                        ("logger-error-once", "conflict"), ("outputs-doc", "carried")):
        assert f"| {pid} | {result} |" in text
    assert "`.patchset/port/logger-error-once/vllm/logger.py line 93`" in text
    # the ported patch: upstream's change where its first two hunks stood (upstream added them: dropped)
    ported = text.split("### ported: sampling-extra-args\n")[1].split("\n### ")[0]
    assert "- `vllm/sampling_params.py` hunk 1, line 544: upstream changed 0 of these lines, added 2" in ported
    assert "  +        if self.extra_args:\n  +            self._verify_extra_args()\n" in ported
    assert "- `vllm/sampling_params.py` hunk 2, line 654: " in ported and "hunk 3" not in ported
    assert "patchset refresh logger-error-once --vllm 0.30.0\npatchset upgrade --to 0.30.0\n" in text

    # the branch: the workspace is committed with the rest; V is no target; validate fails (a finding, exit 1)
    git(fork, "add", "-A")
    git(fork, "commit", "-q", "-m", "vLLM 0.30.0")
    assert ".patchset/port/logger-error-once/vllm/logger.py" in git(fork, "ls-files").splitlines()
    assert main(["validate", "--manifest", str(manifest)]) == 1

    # the branch alone: a fresh clone of it, the conflict resolved, refresh, upgrade again
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--branch", "patchset/vllm-0.30.0", str(fork), str(clone))
    cloned = clone / "patches.yaml"
    assert main(["validate", "--manifest", str(cloned)]) == 1
    take_the_patchs_side(clone / ".patchset/port/logger-error-once/vllm/logger.py")
    assert main(["validate", "--manifest", str(cloned)]) == 1  # resolved, but no patch file made from it yet
    assert main(["refresh", "logger-error-once", "--vllm", "0.30.0", "--manifest", str(cloned), "-q"]) == 0
    assert main(["validate", "--manifest", str(cloned)]) == 0
    assert main(["upgrade", "--to", "0.30.0", "--manifest", str(cloned), "-q"]) == 0
    assert "0.30.0" in [t.version for t in load_manifest(cloned).targets]
    assert not (clone / ".patchset").exists(), "the finished workspace leaves the branch"
    assert main(["check", "--manifest", str(cloned), "-q"]) == 0
    assert main(["validate", "--manifest", str(cloned)]) == 0
    assert "fork: errors deduplicated" in (clone / "recipes/logger-error-once/vllm-0.30.0.patch").read_text()


@pytest.mark.network
def test_prove_with_nothing_to_prove_says_so(fork_029, tmp_path):
    fork = tmp_path / "fork"
    shutil.copytree(fork_029.parent, fork)
    r = upgrade(load_manifest(fork / "patches.yaml"), "0.30.0", prove=True)
    assert r.proof is None and r.not_run[0] == "the proof: no carried or ported patch names tests"
    assert "## Not run here" in upgrade_body(r)


# --- --prove: the carried patches' tests, with and without each (tests/test_verbs_test.py's tiny project) ----


def _toy_upgrade(root: Path, fixed: str, monkeypatch) -> Path:
    import sys
    import textwrap

    from test_verbs_test import WATERMARK, fix_patch, make_project

    from patchset.runners.venv import PythonEnv, VenvRunner
    from patchset.verbs import test as vt

    src, site = make_project(root)
    newer = root / "trees" / "1.1"
    shutil.copytree(src, newer)
    (newer / "toypkg" / "util.py").write_text("def double(x):\n    return x + x\n")
    shutil.copytree(src, root / "trees" / "1.0")
    assert (newer / "toypkg" / "watermark.py").read_text() == WATERMARK
    project = root / "project"
    write_patch(project, "recipes/watermark.patch", fix_patch(fixed))
    (project / "patches.yaml").write_text(textwrap.dedent("""\
        schema: 1
        upstream: {pypi: toypkg}
        targets:
          "1.0": {}
        patches:
          - id: watermark
            releases: ">=1.0"
            patch: recipes/watermark.patch
            tests: ["tests/test_watermark.py::test_final_sampled_token_is_not_offloaded"]
        """))
    monkeypatch.setattr(vt, "make_runner", lambda image, gpus, device=None: VenvRunner(
        PythonEnv(Path(sys.executable), site, "this interpreter"), cpu=False))
    return project / "patches.yaml"


def test_prove_runs_each_carried_patchs_tests_with_and_without_it(tmp_path, monkeypatch, capsys):
    from test_verbs_test import WATERMARK_FIXED

    manifest = _toy_upgrade(tmp_path, WATERMARK_FIXED, monkeypatch)
    body = tmp_path / "body.md"
    code = main(["upgrade", "--to", "1.1", "--prove", "--manifest", str(manifest), "--source",
                 f"dir:{tmp_path / 'trees'}/{{version}}", "--body", str(body), "--format", "json", "-q"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0, doc
    assert doc["targeted"] is True and doc["proof"]["patches"][0]["verdict"] == "proven"
    assert doc["proof"]["suites"] == [] and doc["next"] == ""
    text = body.read_text()
    assert "| watermark | carried | 1.0 | proven | applies as it is |" in text
    assert "## Proof" in text and "fail without the fix and pass with it" in text


def test_a_proof_that_fails_makes_the_upgrade_exit_1(tmp_path, monkeypatch, capsys):
    from test_verbs_test import WATERMARK_BROKEN_FIX

    manifest = _toy_upgrade(tmp_path, WATERMARK_BROKEN_FIX, monkeypatch)
    code = main(["upgrade", "--to", "1.1", "--prove", "--manifest", str(manifest), "--source",
                 f"dir:{tmp_path / 'trees'}/{{version}}", "-q"])
    out = capsys.readouterr().out
    assert code == 1 and re.search(r"watermark\s+carried\s+1\.0\s+failing\s", out), out
    assert "vLLM 1.1 is a target now" in out  # the port holds; its proof does not


def test_a_workspace_the_maintainers_gitignore_hides_is_named_not_unignored(project):
    manifest, src = project
    base = manifest.parent
    git(base, "init", "-q")
    (base / ".gitignore").write_text(".patchset/\n")
    r = upgrade(load_manifest(manifest), "0.29.0", source=src)
    assert (base / ".gitignore").read_text() == ".patchset/\n"
    assert [w.split(" is ignored")[0] for w in r.warnings] == [".patchset/port/clash", ".patchset/port/syntax"]
    assert "> **Warning:** .patchset/port/clash is ignored by git" in upgrade_body(r)


# --- a target pinned to a commit (docs/pinned.md): tests/pinnedfixture.py's history of real release trees ----


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    from pinnedfixture import release_history

    root = tmp_path_factory.mktemp("history")
    return root / "vllm", release_history(root / "vllm")


def _pinned_fork(root: Path, version: str, source: str | None) -> Path:
    """This repository's three fixes on one target, without the probes that say they are upstream on 0.30.0:
    two of them conflict there (tests/test_core_pristine.py)."""
    from test_core_pristine import _fork_on

    path = _fork_on(root, version, source)
    path.write_text(re.sub(r"\n    present:\n      file: .*\n      contains: .*(?=\n  - id: offload-mtp|\n$)", "",
                           path.read_text()))
    return path


@pytest.mark.network
def test_from_a_commit_target_it_picks_the_next_release_by_pep_440_and_ports_from_the_commits_tree(history,
                                                                                                   tmp_path):
    from pinnedfixture import nightly

    from patchset.verbs.next import released_versions
    from patchset.verbs.upgrade import pick

    repo, commits = history
    pinned = nightly("0.29.0", commits["0.29.0"])  # 0.29.1.dev1+g…: after 0.29.0, before 0.30.0 by PEP 440
    manifest = _pinned_fork(tmp_path / "commit", pinned, f'{{git: "{repo}", commit: "{commits["0.29.0"]}"}}')
    on_index = [str(v) for v in released_versions("vllm")]
    version, newer = pick(load_manifest(manifest), None, False, on_index)
    assert "0.29.0" in on_index and newer[0] == "0.30.0" and "0.29.0" not in newer and version == on_index[-1]
    # PEP 440: a release with the nightly's numbers is newer than it (0.29.1 > 0.29.1.dev1), and a fork's local
    # label on 0.29.0 (0.29.0+fork.1) is newer than 0.29.0 itself
    assert pick(load_manifest(manifest), None, False, ["0.29.0", "0.29.1", "0.30.0"])[1] == ["0.29.1", "0.30.0"]
    fork = _pinned_fork(tmp_path / "fork", "0.29.0+fork.1", f'{{git: "{repo}", commit: "{commits["0.29.0"]}"}}')
    assert pick(load_manifest(fork), None, False, on_index)[1][0] == "0.30.0"

    upto = [v for v in on_index if Version(v) <= Version("0.30.0")]
    body = tmp_path / "body.md"
    r = upgrade(load_manifest(manifest), released=upto)
    assert r.vllm == "0.30.0" and r.newer == ["0.30.0"] and r.targets_before == [pinned]
    # the same walk as from the release whose tree the commit holds: the base is the commit's tree
    release = _pinned_fork(tmp_path / "release", "0.29.0", None)
    expected = upgrade(load_manifest(release), "0.30.0", dry_run=True)
    assert [(p.id, str(p.result), p.from_release) for p in r.port.patches] == [
        (p.id, str(p.result), pinned) for p in expected.port.patches]
    assert {str(p.result) for p in r.port.patches} >= {"conflict"} and not r.targeted
    workspace = Path(r.port.first_conflict.workspace)
    readme = (workspace / "README.md").read_text()
    assert pinned in readme and "0.30.0" in readme
    body.write_text(upgrade_body(r))
    assert f"the series carried from vLLM {pinned} to vLLM 0.30.0" in body.read_text()


@pytest.mark.network
def test_from_a_commit_target_the_fixes_retire_and_the_next_release_becomes_a_target(history, tmp_path):
    from pinnedfixture import nightly
    from test_core_pristine import _fork_on

    repo, commits = history
    pinned = nightly("0.29.0", commits["0.29.0"])
    manifest = _fork_on(tmp_path, pinned, f'{{git: "{repo}", commit: "{commits["0.29.0"]}"}}')
    upto = ["0.28.0", "0.29.0", "0.30.0"]
    r = upgrade(load_manifest(manifest), released=upto)
    assert r.vllm == "0.30.0" and r.ok and r.targeted
    assert {p.id: (str(p.result), p.from_release) for p in r.port.patches} == {
        pid: ("retired", pinned) for pid in ("offload-finished-watermark", "offload-recurrent-load-boundary",
                                             "offload-mtp-eagle-serve")}
    assert {u.release for u in r.upstream.values()} == {"0.30.0"}  # none between the nightly and 0.30.0
    after = load_manifest(manifest)
    assert [t.version for t in after.targets] == [pinned, "0.30.0"]
    assert after.target(pinned).source.commit == commits["0.29.0"] and after.target("0.30.0").source is None
    assert f"Upstream carries it since vLLM 0.30.0, the first release after vLLM {pinned} that does: probe: " \
           in upgrade_body(r)
    before = tree(tmp_path)
    again = upgrade(load_manifest(manifest), released=upto)
    assert again.vllm is None and again.ok and tree(tmp_path) == before


@pytest.mark.network
def test_an_index_that_does_not_answer_leaves_v_named_and_says_why(history, tmp_path, monkeypatch):
    """--source git: reads the trees from a clone (its tags), the releases between come from the index: when
    it does not answer, the retired patches name V, which carries them, and the body says why."""
    from test_core_pristine import _fork_on

    repo, _ = history
    manifest = _fork_on(tmp_path, "0.29.0", None)
    from patchset.sources import index

    monkeypatch.setenv("PATCHSET_INDEX_URL", "http://127.0.0.1:9/simple/")  # nothing listens there
    index.project_files.cache_clear()  # an earlier test's listing, from the real index, is remembered per process
    r = upgrade(load_manifest(manifest), "0.30.0", source=f"git:{repo}", dry_run=True)
    assert r.ok and {u.release for u in r.upstream.values()} == {"0.30.0"}
    assert [w.split(" (")[0] for w in r.warnings] == ["the releases before vLLM 0.30.0 could not be listed"]
    assert "> **Warning:** the releases before vLLM 0.30.0 could not be listed (cannot list vllm" in upgrade_body(r)


def test_a_dry_runs_conflict_says_how_to_get_its_workspace_not_to_mend_its_own_release(project):
    """A dry run writes no workspace: its conflict is one that merges badly into V, not one that fails on the
    release it came from, so the body says to run upgrade for real rather than `check --vllm U`."""
    manifest, src = project
    r = upgrade(load_manifest(manifest), "0.29.0", source=src, dry_run=True)
    section = upgrade_body(r).split("### conflict: clash\n")[1].split("\n### ")[0]
    assert "Run `patchset upgrade --to 0.29.0` (without --dry-run) to write its workspace" in section
    assert "Mend it there first" not in section
