"""`patchset port`: carried, retired, ported (3-way merge), conflict, blocked; all or nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import portfixture
import pytest
from helpers import udiff, write_manifest, write_patch
from test_verbs_next import REPO, SCHED, TESTS, only_028

from patchset.cli import main
from patchset.core.manifest_load import load_manifest
from patchset.core.patchfile import read_patch
from patchset.report.check import render_table
from patchset.verbs.check import check
from patchset.verbs.next import next_release
from patchset.verbs.port import header_of, port


@pytest.fixture
def project(tmp_path: Path):
    manifest = portfixture.build(tmp_path)
    return manifest, portfixture.source(tmp_path)


def results(report) -> dict[str, str]:
    return {p.id: p.result for p in report.patches}


EXPECTED = {"carry": "carried", "retire": "retired", "merge": "ported", "clash": "conflict", "after": "blocked",
            "syntax": "conflict", "partly": "ported"}


def test_every_result_on_the_fixture_series(project):
    manifest, src = project
    r = port(load_manifest(manifest), "0.29.0", source=src)
    assert results(r) == EXPECTED
    assert not r.ok
    by = {p.id: p for p in r.patches}
    assert by["retire"].evidence.startswith("probe: vllm/retire.py:16 contains")
    assert by["after"].message == "comes after clash (conflict)"
    assert "does not compile" in by["syntax"].conflicts[0].message
    assert by["clash"].conflicts[0].file == "vllm/clash.py" and by["clash"].conflicts[0].line == 20


def test_a_ported_patch_keeps_its_header_and_applies_exactly_on_the_new_release(project, tmp_path):
    manifest, src = project
    port(load_manifest(manifest), "0.29.0", source=src)
    new = manifest.parent / "recipes/merge/vllm-0.29.0.patch"
    text = new.read_text()
    assert text.startswith("Description: merge\nOrigin: backport, upstream PR 1\n"
                           "Ported: from vLLM 0.28.0 to 0.29.0 by 3-way merge (patchset)\nLast-Update: ")
    assert "-line_10 = 10\n+line_10 = -10\n" in text
    assert "@@ -10,7 +10,7 @@" in text  # at the line it has on 0.29.0 (three lines were added above)
    partly = (manifest.parent / "recipes/partly/vllm-0.29.0.patch").read_text()
    assert "line_25 = -25" in partly and "+line_5 = -5" not in partly  # only what upstream lacks
    m = load_manifest(manifest)
    assert m.patch("merge").choice_for("0.29.0").path == new.resolve()
    assert m.patch("merge").choice_for("0.28.0").path.name == "vllm-0.28.patch"
    assert read_patch(new).hunks[0].source_start == 10


def test_the_manifest_changes_only_where_a_patch_moved_and_keeps_its_comments(project):
    manifest, src = project
    before = manifest.read_text()
    r = port(load_manifest(manifest), "0.29.0", source=src)
    after = manifest.read_text()
    assert r.manifest_diff and after != before
    assert after.startswith("# the series\n")
    assert '      "<=0.29.0": recipes/carry/vllm-0.28.patch  # made on 0.28.0\n' in after
    assert '      ">=0.29.0": recipes/merge/vllm-0.29.0.patch\n' in after
    assert "    # retired for 0.29.0: upstream there (probe: vllm/retire.py:16" in after
    assert '    releases: ">=0.28.0,<0.29.0"\n' in after  # retire's range stops before 0.29.0
    assert '"0.29.0": {image' not in after  # not a target while patches conflict
    for pid in ("clash", "after", "syntax"):
        block = after.split(f"  - id: {pid}\n")[1].split("  - id:")[0]
        assert block == before.split(f"  - id: {pid}\n")[1].split("  - id:")[0]


def test_a_conflict_leaves_a_workspace_with_diff3_markers_and_a_readme(project, tmp_path):
    manifest, src = project
    work = tmp_path / "work"
    r = port(load_manifest(manifest), "0.29.0", source=src, workdir=work)
    clash = (work / "clash/vllm/clash.py").read_text()
    assert ("<<<<<<< vllm 0.29.0\nline_20 = 20  # upstream\n||||||| vllm 0.28.0\nline_20 = 20\n=======\n"
            "line_20 = -20\n>>>>>>> clash on 0.28.0\n") in clash
    readme = (work / "clash/README.md").read_text()
    assert "`vllm/clash.py:20`: conflict" in readme
    assert "+line_20 = 20  # upstream" in readme  # the upstream change that caused it
    assert f"patchset refresh clash --vllm 0.29.0 --workdir {work}" in readme
    assert next(p for p in r.patches if p.id == "clash").workspace == str(work / "clash")
    assert "return z" in (work / "syntax/vllm/syntax.py").read_text()


def test_dry_run_writes_nothing_and_shows_the_same_plan(project, tmp_path):
    manifest, src = project
    before = portfixture.snapshot(manifest.parent)
    r = port(load_manifest(manifest), "0.29.0", source=src, dry_run=True)
    assert results(r) == EXPECTED
    assert r.written == [] and "+      \">=0.29.0\": recipes/merge/vllm-0.29.0.patch" in r.manifest_diff
    assert portfixture.snapshot(manifest.parent) == before
    assert not (manifest.parent / ".patchset").exists()


def test_a_dry_run_points_at_no_workspace_it_did_not_write(project, tmp_path):
    manifest, src = project
    work = tmp_path / "work"
    r = port(load_manifest(manifest), "0.29.0", source=src, workdir=work, dry_run=True)
    clash = next(p for p in r.patches if p.id == "clash")
    assert clash.workspace is None and not work.exists()
    assert clash.message == \
        f"1 conflict(s); a port without --dry-run writes them with diff3 markers to {work / 'clash'}"
    assert "resolve them in the workspace" not in clash.message


def test_a_port_to_an_older_release_keeps_the_newer_targets_file(tmp_path):
    """Issue 21, item 4: with 0.29.0 a target, a port to the older 0.28.0 gives 0.28.0 a file of its own."""
    manifest = portfixture.build(tmp_path)
    text = manifest.read_text().replace('targets:\n  "0.28.0": {image: "img:v0.28.0"}',
                                        'targets:\n  "0.29.0": {image: "img:v0.29.0"}')
    text = text.replace(">=0.28.0,<0.30.0", ">=0.29.0,<0.30.0").replace('"<0.29"', '">=0.29"')
    manifest.write_text(text)
    # the series was made for 0.29.0 here: 0.28.0 is the older release it is ported back to
    for name in portfixture.PATCHES:
        old, new = tmp_path / "trees/0.28.0" / f"vllm/{name}.py", tmp_path / "trees/0.29.0" / f"vllm/{name}.py"
        a, b = old.read_bytes(), new.read_bytes()
        old.write_bytes(b), new.write_bytes(a)
    src = portfixture.source(tmp_path)
    before = check(load_manifest(manifest), ["0.29.0"], source=src)
    r = port(load_manifest(manifest), "0.28.0", source=src)
    assert any(p.result == "ported" for p in r.patches)
    after = load_manifest(manifest)
    for p in after.patches:
        assert p.choice_for("0.29.0").path.name == "vllm-0.28.patch"  # what 0.29.0 uses stays
    assert check(after, ["0.29.0"], source=src).targets == before.targets
    assert '      ">=0.28.0,<0.29": recipes/merge/vllm-0.28.0.patch\n' in manifest.read_text()


def test_a_write_failing_midway_leaves_manifest_and_recipes_byte_identical(project):
    manifest, src = project
    (manifest.parent / "recipes/partly/vllm-0.29.0.patch").mkdir()  # the second new patch file cannot be written
    before = portfixture.snapshot(manifest.parent)
    with pytest.raises(IsADirectoryError):
        port(load_manifest(manifest), "0.29.0", source=src)
    assert portfixture.snapshot(manifest.parent) == before
    assert not (manifest.parent / "recipes/merge/vllm-0.29.0.patch").exists()


def test_porting_again_carries_what_was_ported_and_keeps_the_workspaces(project):
    manifest, src = project
    port(load_manifest(manifest), "0.29.0", source=src)
    first = portfixture.snapshot(manifest.parent)
    again = port(load_manifest(manifest), "0.29.0", source=src)
    assert results(again) == dict(EXPECTED, merge="carried", partly="carried")
    assert portfixture.snapshot(manifest.parent) == first


def test_the_default_workspaces_are_ignored_by_git_so_a_commit_after_a_port_leaves_them_out(project, tmp_path):
    """`git add -A` after a port with conflicts must not commit V's files from .patchset/port (pytest's and mypy's
    caches ignore themselves the same way); a --workdir of the maintainer's own gets no .gitignore."""
    import subprocess

    manifest, src = project
    root = manifest.parent
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    r = port(load_manifest(manifest), "0.29.0", source=src)
    assert str(root / ".patchset/.gitignore") in r.written
    assert (root / ".patchset/port/clash/vllm/clash.py").is_file()
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=root, check=True,
                            capture_output=True, text=True).stdout
    assert "recipes/merge/vllm-0.29.0.patch" in status and ".patchset" not in status
    (root / ".patchset/.gitignore").write_text("# mine\n")
    port(load_manifest(manifest), "0.29.0", source=src)
    assert (root / ".patchset/.gitignore").read_text() == "# mine\n"  # the maintainer's own is left alone
    port(load_manifest(manifest), "0.29.0", source=src, workdir=tmp_path / "mine")
    assert not (tmp_path / ".gitignore").exists() and not (tmp_path / "mine/.gitignore").exists()


def test_a_workspace_edited_by_hand_is_never_overwritten(project, capsys):
    manifest, src = project
    port(load_manifest(manifest), "0.29.0", source=src)
    edited = manifest.parent / ".patchset/port/clash/vllm/clash.py"
    edited.write_text(edited.read_text().replace("<<<<<<< vllm 0.29.0\n", ""))
    before = portfixture.snapshot(manifest.parent)
    code = main(["port", "--to", "0.29.0", "--manifest", str(manifest), "--source", src])
    assert code == 2
    assert "resolved by hand?" in capsys.readouterr().err
    assert portfixture.snapshot(manifest.parent) == before


def test_only_the_named_patches_are_reported_and_rewritten(project):
    manifest, src = project
    r = port(load_manifest(manifest), "0.29.0", source=src, only=["merge"])
    assert results(r) == {"merge": "ported"}
    text = manifest.read_text()
    assert "recipes/merge/vllm-0.29.0.patch" in text and "retired for" not in text


def test_cli_json_and_exit_codes(project, capsys):
    manifest, src = project
    code = main(["port", "--to", "0.29.0", "--manifest", str(manifest), "--source", src, "--format", "json",
                 "--dry-run"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    assert out["to"] == "0.29.0" and out["next"] == "patchset port --to 0.29.0"  # a dry run with conflicts
    clash = next(p for p in out["patches"] if p["id"] == "clash")
    assert set(clash) >= {"id", "result", "from", "patch", "workspace", "conflicts"}
    assert clash["conflicts"][0]["line"] == 20
    assert main(["port", "--to", "0.29.0", "--manifest", str(manifest), "--source", src, "--patch", "nope"]) == 2


def test_header_of_bumps_last_update_and_keeps_one_port_line():
    old = "Description: x\n more\nPorted: from vLLM 0.27.0 to 0.28.0 by 3-way merge (patchset)\n" \
          "Last-Update: 2020-01-01\n---\ndiff --git a/x b/x\n"
    import datetime

    head = header_of(old, "Ported: from vLLM 0.28.0 to 0.29.0 by 3-way merge (patchset)", datetime.date(2026, 11, 30))
    assert head == ("Description: x\n more\nPorted: from vLLM 0.28.0 to 0.29.0 by 3-way merge (patchset)\n"
                    "Last-Update: 2026-11-30\n---\n")
    assert header_of("Description: y\n---\n--- a/x\n+++ b/x\n", "Ported: z", datetime.date(2026, 1, 2)) == \
        "Description: y\nPorted: z\nLast-Update: 2026-01-02\n---\n"


# --- the real releases -------------------------------------------------------------------------


def _applied(tmp: Path, release: str, patches: list[Path], paths: list[str]) -> dict[str, bytes]:
    """Files of a real release with patches applied by GNU patch (the hand recipes' own tool)."""
    import subprocess

    from patchset.cache import Cache
    from patchset.sources.sdist import SdistSource

    src = SdistSource("vllm", release, Cache())
    tree = tmp / f"gnu-{release}-{len(patches)}"
    for path in paths:
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src.root / path, tree / path)
    for p in patches:
        subprocess.run(["patch", "-p1", "-F0", "-s", "-i", str(p)], cwd=tree, check=True)
    return {path: (tree / path).read_bytes() for path in paths}


@pytest.mark.network
def test_this_repositorys_028_recipes_port_to_029_like_the_hand_recipes(tmp_path):
    manifest = only_028(tmp_path / "p")
    r = port(load_manifest(manifest), "0.29.0")
    assert results(r) == {"offload-finished-watermark": "carried", "offload-recurrent-load-boundary": "conflict",
                          "offload-mtp-eagle-serve": "carried"}
    rec = next(p for p in r.patches if p.id == "offload-recurrent-load-boundary")
    assert [c.file for c in rec.conflicts] == [TESTS]
    assert "KVCacheBlockCopy" in rec.conflicts[0].upstream  # the upstream import change that caused it
    hand = _applied(tmp_path, "0.29.0", [REPO / "recipes/offload-finished-watermark/fix.patch",
                                         REPO / "recipes/offload-recurrent-load-boundary/vllm-0.29.patch"],
                    [SCHED, TESTS])
    work = manifest.parent / ".patchset/port/offload-recurrent-load-boundary"
    assert (work / SCHED).read_bytes() == hand[SCHED]  # the clean merge is the hand port, byte for byte
    assert b"<<<<<<< vllm 0.29.0\n" in (work / TESTS).read_bytes()
    assert b">>>>>>> offload-recurrent-load-boundary on 0.28.0\n" in (work / TESTS).read_bytes()


@pytest.mark.network
def test_porting_this_repository_to_the_newest_release_leaves_its_retired_fixes_alone(tmp_path):
    shutil.copytree(REPO / "recipes", tmp_path / "recipes")
    shutil.copy(REPO / "patches.yaml", tmp_path / "patches.yaml")
    from patchset.verbs.next import newer_releases

    m = load_manifest(tmp_path / "patches.yaml")
    newest = newer_releases(m)[-1]
    before = (tmp_path / "patches.yaml").read_text()
    r = port(m, newest)
    # every fix stops before the target 0.30.0 (upstream there): none is decided again for a later release
    assert r.patches == [] and r.ok
    text = (tmp_path / "patches.yaml").read_text()
    assert "# retired for" not in text
    assert text.replace(f'  "{newest}": {{image: "vllm/vllm-openai:v{newest}"}}\n', "") == before
    report = check(load_manifest(tmp_path / "patches.yaml"), [newest])
    assert report.ok and {p.status for p in report.targets[0].patches} == {"upstream"}


@pytest.mark.network
def test_a_fork_series_of_real_vllm_code_from_028_through_029_to_030(tmp_path):
    import realfixture

    from patchset.cache import Cache
    from patchset.sources.sdist import SdistSource
    from patchset.verbs.next import next_release
    from patchset.verbs.refresh import refresh

    pristine = SdistSource("vllm", "0.28.0", Cache()).root
    manifest = realfixture.build(tmp_path / "fork", lambda path: (pristine / path).read_text())
    assert check(load_manifest(manifest)).ok
    seen = next_release(load_manifest(manifest), "0.29.0", released=["0.29.0", "0.30.0"])
    assert {p.id: p.status for p in seen.patches} == {
        "outputs-doc": "carries", "request-placeholder": "needs-port", "request-high-water": "blocked",
        "sampling-extra-args": "carries", "watermark": "carries", "recurrent-boundary": "needs-port",
        "mtp-eagle": "blocked", "logger-error-once": "carries"}
    first = port(load_manifest(manifest), "0.29.0")
    assert results(first) == {
        "outputs-doc": "carried", "request-placeholder": "ported", "request-high-water": "carried",
        "sampling-extra-args": "carried", "watermark": "carried", "recurrent-boundary": "conflict",
        "mtp-eagle": "blocked", "logger-error-once": "carried"}
    placeholder = (manifest.parent / "recipes/request-placeholder/vllm-0.29.0.patch").read_text()
    assert "Ported: from vLLM 0.28.0 to 0.29.0 by 3-way merge (patchset)" in placeholder
    hand = _applied(tmp_path, "0.29.0", [REPO / "recipes/offload-finished-watermark/fix.patch",
                                         REPO / "recipes/offload-recurrent-load-boundary/vllm-0.29.patch"],
                    [SCHED, TESTS])
    (manifest.parent / ".patchset/port/recurrent-boundary" / TESTS).write_bytes(hand[TESTS])
    refresh(load_manifest(manifest), "recurrent-boundary", "0.29.0")
    second = port(load_manifest(manifest), "0.29.0")
    assert set(results(second).values()) == {"carried"}
    assert check(load_manifest(manifest)).ok  # 0.28.0 and the new target 0.29.0
    seen = next_release(load_manifest(manifest), released=["0.29.0", "0.30.0"])
    assert seen.vllm == "0.30.0"
    assert {p.id: p.status for p in seen.patches} == {
        "outputs-doc": "carries", "request-placeholder": "carries", "request-high-water": "carries",
        "sampling-extra-args": "partly-upstream", "watermark": "upstream", "recurrent-boundary": "upstream",
        "mtp-eagle": "upstream", "logger-error-once": "needs-port"}
    third = port(load_manifest(manifest), "0.30.0")
    assert results(third) == {
        "outputs-doc": "carried", "request-placeholder": "carried", "request-high-water": "carried",
        "sampling-extra-args": "ported", "watermark": "retired", "recurrent-boundary": "retired",
        "mtp-eagle": "retired", "logger-error-once": "conflict"}
    sampling = (manifest.parent / "recipes/sampling-extra-args/vllm-0.30.0.patch").read_text()
    assert "_verify_extra_args" not in sampling and "fork: pinned llguidance" in sampling  # only what 0.30 lacks
    logger = (manifest.parent / ".patchset/port/logger-error-once/vllm/logger.py").read_text()
    assert "<<<<<<< vllm 0.30.0\n" in logger and ">>>>>>> logger-error-once on 0.29.0\n" in logger


@pytest.fixture(scope="module")
def moved_project(tmp_path_factory):
    """A series made on real vLLM 0.10.2 code (tests/movedfixture.py), to port to the real 0.11.2."""
    import movedfixture

    from patchset.cache import Cache
    from patchset.sources.sdist import SdistSource

    pristine = SdistSource("vllm", "0.10.2", Cache()).root
    return movedfixture.build(tmp_path_factory.mktemp("moved"), lambda path: (pristine / path).read_text())


@pytest.mark.network
def test_port_follows_code_that_upstream_moved_and_refuses_a_clean_merge_that_would_not_import(moved_project,
                                                                                               tmp_path):
    import movedfixture as mf

    project = tmp_path / "p"
    shutil.copytree(moved_project.parent, project)
    r = port(load_manifest(project / "patches.yaml"), "0.11.2")
    assert results(r) == {"torch-dtype": "ported", "transformers": "ported", "kept-names": "conflict",
                          "registry-and-old": "conflict"}
    by = {p.id: p for p in r.patches}
    # A function moved between modules (the old module stays): the hunk lands in its new home.
    assert by["torch-dtype"].files == ("vllm/utils/torch_utils.py",)
    assert f"moved from {mf.UTILS} to vllm/utils/torch_utils.py:57" in by["torch-dtype"].message
    text = (project / "recipes/torch-dtype/vllm-0.11.2.patch").read_text()
    assert "+++ b/vllm/utils/torch_utils.py" in text and "+    finally:" in text and mf.UTILS not in text
    # A file split in two: each hunk follows its lines into its part.
    assert by["transformers"].files == ("vllm/model_executor/models/transformers/base.py",
                                        "vllm/model_executor/models/transformers/multimodal.py")
    assert "split across" in by["transformers"].message
    # Clean and compiling, but it would raise at import: a conflict, with the reason and the new home.
    (c,) = by["kept-names"].conflicts
    assert c.file == mf.METADATA and c.message == (
        "merges cleanly but would not import: 'set_default_torch_dtype' is not in "
        "vllm/model_executor/model_loader/utils.py in 0.11.2 (it is in vllm/utils/torch_utils.py); "
        "'Optional' is undefined at line 31")
    # A hunk of a gone file whose lines only nearly stand somewhere: the place goes to the workspace.
    (moved,) = by["registry-and-old"].conflicts
    assert moved.file == "vllm/model_executor/models/transformers/base.py" and moved.line == 234
    assert "moved_to: vllm/model_executor/models/transformers/base.py:234" in moved.message
    work = project / ".patchset/port/registry-and-old"
    assert (work / moved.file).is_file()
    assert "moved_to: vllm/model_executor/models/transformers/base.py:234" in (work / "README.md").read_text()


@pytest.mark.network
def test_next_and_check_report_every_hunk_with_one_file_missing_and_where_its_lines_went(moved_project, tmp_path):
    import movedfixture as mf

    from patchset.report.next import next_json
    from patchset.verbs.next import next_release

    seen = next_release(load_manifest(moved_project), "0.11.2", released=["0.11.2"])
    by = {p.id: p for p in seen.patches}
    assert {p.id: p.status for p in seen.patches} == {
        "torch-dtype": "needs-port", "transformers": "needs-port", "kept-names": "needs-port",
        "registry-and-old": "needs-port"}
    mixed = by["registry-and-old"].result
    assert [(h.file, h.status) for h in mixed.hunks] == [(mf.REGISTRY, "fuzz"), (mf.TRANSFORMERS, "failed")]
    assert f"{mf.TRANSFORMERS}: not in sdist:vllm-0.11.2" in mixed.hunks[1].message
    assert [c.moved for c in by["transformers"].upstream_change] == [
        "vllm/model_executor/models/transformers/multimodal.py:227",
        "vllm/model_executor/models/transformers/base.py:243"]
    assert all(c.moved_exact for c in by["transformers"].upstream_change)
    (dtype,) = by["torch-dtype"].upstream_change
    assert dtype.moved == "vllm/utils/torch_utils.py:57" and "moved_to: vllm/utils/torch_utils.py:57" in dtype.summary
    assert "'Optional' is undefined at line 31" in by["kept-names"].result.message
    doc = json.loads(next_json(seen))
    hunks = {p["id"]: p["hunks"] for p in doc["patches"]}
    assert len(hunks["registry-and-old"]) == 2 and len(hunks["transformers"]) == 2
    assert doc["patches"][1]["upstream_change"][0]["moved"].endswith("multimodal.py:227")
    both = tmp_path / "patches.yaml"
    both.write_text(moved_project.read_text().replace('"0.10.2": {}', '"0.10.2": {}\n  "0.11.2": {}'))
    shutil.copytree(moved_project.parent / "recipes", tmp_path / "recipes")
    report = check(load_manifest(both), ["0.11.2"])
    assert [(h.file, h.status) for h in report.targets[0].patch("registry-and-old").hunks] == [
        (mf.REGISTRY, "fuzz"), (mf.TRANSFORMERS, "failed")]
    # check says where the gone file's hunks went too, on their own lines' evidence
    assert [(h.moved, h.moved_evidence) for h in report.targets[0].patch("registry-and-old").hunks] == [
        ("", ""), ("vllm/model_executor/models/transformers/base.py:234", f"{mf.TRANSFORMERS} is gone; nearest "
                   "candidate vllm/model_executor/models/transformers/base.py:234: 67% of the hunk's lines agree, "
                   "4 differ")]
    text = render_table(report)
    assert "    moved_to: vllm/model_executor/models/transformers/base.py:234 (" in text


FUNC_F = "def f(x):\n    total = x * 2\n    total += compute_offset(x)\n    return total\n"


def _one_patch_project(root: Path, trees: dict[str, dict[str, str]], patch: str) -> tuple[Path, str]:
    """``root/trees/VERSION/vllm/NAME`` for each release's files (an ``__init__.py`` naming the release), and a
    project whose one patch ``f`` (``patch``) serves 0.28.0 on: its manifest and the source of the trees."""
    for version, files in trees.items():
        for name, text in {"__init__.py": f'__version__ = "{version}"\n', **files}.items():
            f = root / "trees" / version / "vllm" / name
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(text)
    project = root / "project"
    write_patch(project, "recipes/f/vllm-0.28.patch", patch)
    manifest = write_manifest(project, """\
        schema: 1
        targets:
          "0.28.0": {}
        patches:
          - id: f
            releases: ">=0.28.0"
            patch: recipes/f/vllm-0.28.patch
        """)
    return manifest, f"dir:{root / 'trees'}/{{version}}"


def _moved_project(root: Path, b_text: str) -> tuple[Path, str]:
    """vllm/a.py on 0.28.0 holds f; 0.29.0 moved f to vllm/b.py (``b_text``); a patch edits f in a.py."""
    a_old = "import os\n\n\n" + FUNC_F + "\n\nKEEP = 1\n"
    trees = {"0.28.0": {"a.py": a_old}, "0.29.0": {"a.py": "import os\n\n\nKEEP = 1\n", "b.py": b_text}}
    fixed = a_old.replace("    total += compute_offset(x)\n", "    total += compute_offset(x, fast=True)\n")
    return _one_patch_project(root, trees, udiff("vllm/a.py", a_old, fixed))


def test_a_function_moved_to_another_module_is_ported_where_its_lines_stand(tmp_path):
    manifest, src = _moved_project(tmp_path, "import sys\n\n\n" + FUNC_F)
    r = port(load_manifest(manifest), "0.29.0", source=src)
    (p,) = r.patches
    assert p.result == "ported" and p.files == ("vllm/b.py",)
    assert "hunk 1 moved from vllm/a.py to vllm/b.py:4" in p.message
    text = (manifest.parent / p.patch).read_text()
    assert "+++ b/vllm/b.py" in text and "+    total += compute_offset(x, fast=True)" in text
    from patchset.report.port import port_table

    assert "hunk 1 moved from vllm/a.py to vllm/b.py:4" in port_table(r)


def test_a_conflict_names_where_the_lines_nearly_stand_now(tmp_path):
    manifest, src = _moved_project(tmp_path, "import sys\n\n\n" + FUNC_F.replace("x * 2", "x * 3"))
    r = port(load_manifest(manifest), "0.29.0", source=src)
    (p,) = r.patches
    assert p.result == "conflict"
    (c,) = p.conflicts
    assert c.file == "vllm/a.py" and "hunk 1's lines may have moved: moved_to: vllm/b.py:4" in c.message
    assert "moved_to: vllm/b.py:4" in (Path(p.workspace or "") / "README.md").read_text()


def test_a_sibling_that_held_the_lines_all_along_is_no_new_place(tmp_path):
    """0.29.0 drops f from a.py, which keeps its other code; b.py held a copy of f in 0.28.0 already. The code
    did not move there: port neither merges the hunk into b.py (exact copy) nor names b.py (near copy)."""
    rest = "".join(f"def keep_{i}(y):\n    return y + {i}\n\n\n" for i in range(8))
    a_old = "import os\n\n\n" + FUNC_F + "\n\n" + rest
    fixed = a_old.replace("    total += compute_offset(x)\n", "    total += compute_offset(x, fast=True)\n")
    for copy in (FUNC_F, FUNC_F.replace("x * 2", "x * 3")):
        root = tmp_path / str(len(list(tmp_path.iterdir())))
        b = "import sys\n\n\n" + FUNC_F
        trees = {"0.28.0": {"a.py": a_old, "b.py": b},
                 "0.29.0": {"a.py": "import os\n\n\n" + rest, "b.py": "import sys\n\n\n" + copy}}
        manifest, src = _one_patch_project(root, trees, udiff("vllm/a.py", a_old, fixed))
        (p,) = port(load_manifest(manifest), "0.29.0", source=src).patches
        assert p.result == "conflict" and p.files == ("vllm/a.py",)
        (c,) = p.conflicts
        assert c.file == "vllm/a.py" and "b.py" not in c.message


def _twin(i: int, how: str = "") -> str:
    return {"": f"line_{i} = {i}\n", "fixed": f"line_{i} = -{i}\n", "up": f"line_{i} = {i}  # upstream\n"}[how]


TWIN = "".join(_twin(i) for i in range(1, 31))


def _fixes(*lines: int) -> str:
    text = TWIN
    for i in lines:
        text = text.replace(_twin(i), _twin(i, "fixed"))
    return text


def _twins_project(root: Path, new_p0: str, others: tuple[str, ...] = ("p1",),
                   fixes: tuple[int, ...] = (15,)) -> tuple[Path, str]:
    """Modules vllm/p0.py and ``others`` with identical lines on 0.8.0; each patch edits its own module
    (the lines ``fixes``); 0.9.0 leaves the others alone and has ``new_p0`` for vllm/p0.py."""
    trees = {"0.8.0": dict.fromkeys(("p0", *others), TWIN), "0.9.0": {"p0": new_p0, **dict.fromkeys(others, TWIN)}}
    for version, files in trees.items():
        for name, text in {"__init__": f'__version__ = "{version}"\n', **files}.items():
            f = root / "trees" / version / "vllm" / f"{name}.py"
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(text)
    project = root / "project"
    entries = ""
    for pid in ("p0", *others):
        write_patch(project, f"recipes/{pid}/vllm-0.8.patch", udiff(f"vllm/{pid}.py", TWIN, _fixes(*fixes)))
        entries += f"  - id: {pid}\n    patch: recipes/{pid}/vllm-0.8.patch\n"
    manifest = write_manifest(project, 'schema: 1\ntargets:\n  "0.8.0": {}\npatches:\n' + entries)
    return manifest, f"dir:{root / 'trees'}/{{version}}"


def test_a_hunk_already_in_its_own_file_is_not_moved_into_a_twin_module(tmp_path):
    # p0's first hunk is upstream in 0.9.0's p0.py, its second is not: p1.py holds the first hunk's old
    # lines too, but they did not move there.
    manifest, src = _twins_project(tmp_path, _fixes(5), fixes=(5, 25))
    r = port(load_manifest(manifest), "0.9.0", source=src)
    by = {p.id: p for p in r.patches}
    assert (by["p0"].result, by["p0"].files, by["p0"].message) == ("ported", ("vllm/p0.py",), "")
    text = (manifest.parent / by["p0"].patch).read_text()
    assert "+line_25 = -25\n" in text and "line_5 = -5" not in text and "p1.py" not in text
    assert (by["p1"].result, by["p1"].files) == ("carried", ("vllm/p1.py",))


def test_a_fix_upstream_wrote_its_own_way_conflicts_in_its_own_file_not_in_a_twin(tmp_path):
    # 0.9.0 has p0's change with a line of its own in the middle: the hunk's context stays in p0.py.
    upstream = TWIN.replace(_twin(15), _twin(15, "fixed") + "fixed_p0 = True\n")
    manifest, src = _twins_project(tmp_path, upstream)
    r = port(load_manifest(manifest), "0.9.0", source=src)
    by = {p.id: p for p in r.patches}
    assert by["p0"].result == "conflict"
    assert [(c.file, c.line, c.message) for c in by["p0"].conflicts] == [("vllm/p0.py", 15, "conflict")]
    assert (by["p1"].result, by["p1"].files) == ("carried", ("vllm/p1.py",))
    nr = next_release(load_manifest(manifest), "0.9.0", source=src, released=["0.9.0"])
    (change,) = next(p for p in nr.patches if p.id == "p0").upstream_change
    assert change.file == "vllm/p0.py" and not change.moved and "moved_to" not in change.summary


def test_lines_standing_in_their_own_file_at_an_offset_win_over_a_twin_module(tmp_path):
    # 0.9.0 shifted p0.py by four lines and edited beside the second hunk (a 3-way merge): p1.py holds the
    # first hunk's lines at their old place, but p0.py holds them too, at an offset.
    shifted = "new = 0\n" * 4 + TWIN.replace(_twin(22), _twin(22, "up"))
    manifest, src = _twins_project(tmp_path, shifted, fixes=(5, 25))
    r = port(load_manifest(manifest), "0.9.0", source=src)
    by = {p.id: p for p in r.patches}
    assert (by["p0"].result, by["p0"].files, by["p0"].message) == ("ported", ("vllm/p0.py",), "")
    text = (manifest.parent / by["p0"].patch).read_text()
    assert "@@ -6,7 +6,7 @@" in text and "+line_5 = -5\n" in text and "+line_25 = -25\n" in text
    assert (by["p1"].result, by["p1"].files) == ("carried", ("vllm/p1.py",))


def test_lines_gone_from_their_file_that_stand_in_several_modules_are_a_conflict_naming_each(tmp_path):
    # p0.py lost the lines; p1.py and p2.py both hold them exactly: no one place to merge into.
    manifest, src = _twins_project(tmp_path, "KEEP = 1\n", others=("p1", "p2"))
    r = port(load_manifest(manifest), "0.9.0", source=src)
    by = {p.id: p for p in r.patches}
    assert by["p0"].result == "conflict" and by["p0"].patch is None
    (c,) = by["p0"].conflicts
    assert "vllm/p1.py:12" in c.message and "vllm/p2.py:12" in c.message and "ambiguous" in c.message
    assert {by["p1"].result, by["p2"].result} == {"carried"}
    assert not (manifest.parent / "recipes/p0/vllm-0.9.0.patch").exists()
    workspace = Path(by["p0"].workspace or "")
    assert "vllm/p2.py:12" in (workspace / "README.md").read_text()
    assert {x.name for x in (workspace / "vllm").iterdir()} >= {"p0.py", "p1.py", "p2.py"}


def test_a_gone_file_whose_lines_stand_in_its_rename_and_elsewhere_is_a_conflict_naming_both(tmp_path):
    a_old = "import os\n\n\n" + FUNC_F + "\n\nKEEP = 1\n"
    manifest, src = _moved_project(tmp_path, a_old)  # b.py: a.py renamed
    (tmp_path / "trees/0.29.0/vllm/a.py").unlink()
    (tmp_path / "trees/0.29.0/vllm/c.py").write_text("import sys\n\n\n" + FUNC_F)
    r = port(load_manifest(manifest), "0.29.0", source=src)
    (p,) = r.patches
    assert p.result == "conflict" and p.patch is None
    (c,) = p.conflicts
    assert "vllm/b.py:4" in c.message and "vllm/c.py:4" in c.message and "ambiguous" in c.message


@pytest.mark.network
def test_a_hunk_of_a_gone_file_whose_lines_stand_nowhere_names_no_place_only_a_weak_lead(tmp_path):
    """ServerlessLLM's hunk for vLLM 0.9.0.1 (a member of ``LoadFormat`` in vllm/config.py): 0.11.2 split
    config.py into a package and dropped the enum. vllm/config/model.py holds a tenth of config.py's
    lines, none of the hunk's: that is a lead for the message, never the hunk's new place."""
    from patchset.cache import Cache
    from patchset.sources.sdist import SdistSource

    config = (SdistSource("vllm", "0.9.0.1", Cache()).root / "vllm/config.py").read_text()
    member = '    FASTSAFETENSORS = "fastsafetensors"\n'
    write_patch(tmp_path, "recipes/load-format/vllm-0.9.patch",
                udiff("vllm/config.py", config, config.replace(member, member + '    SERVERLESS_LLM = "sllm"\n')))
    manifest = write_manifest(tmp_path, """\
        schema: 1
        targets:
          "0.9.0.1": {}
        patches:
          - id: load-format
            releases: "==0.9.0.1"
            patch: recipes/load-format/vllm-0.9.patch
        """)
    r = port(load_manifest(manifest), "0.11.2", dry_run=True)
    (c,) = r.patches[0].conflicts
    assert c.file == "vllm/config.py" and c.line == 0
    assert c.message.startswith("vllm 0.11.2 has no vllm/config.py (removed or moved upstream) and hunk 1's "
                                "lines are nowhere in it: the code is gone, merge it by hand; nearest: "
                                "vllm/config/model.py (weak: it holds ")
    assert "moved_to" not in c.message
    seen = next_release(load_manifest(manifest), "0.11.2", released=["0.11.2"])
    (change,) = seen.patches[0].upstream_change
    assert change.moved == "" and "moved_to" not in change.summary


def test_a_conflicting_patch_says_which_of_its_files_the_new_release_already_carries(tmp_path):
    """omni-infer 0.8.3 -> 0.9.0 (docs/records/port.md): ten clean files of conflicting patches merged into 0.9.0's own
    files; the maintainer left them as 0.9.0 has them. port now says so, in the result and the README."""
    a_old, b_old = "A = 1\nB = 2\nC = 3\n", "X = 1\nY = 2\nZ = 3\n"
    a_fixed, b_fixed = a_old.replace("B = 2", "B = 20"), b_old.replace("Y = 2", "Y = 20")
    trees = {"0.28.0": {"a.py": a_old, "b.py": b_old},
             "0.29.0": {"a.py": a_fixed, "b.py": b_old.replace("Y = 2", "Y = 200")}}  # a.py: upstream took it
    manifest, src = _one_patch_project(tmp_path, trees, udiff("vllm/a.py", a_old, a_fixed)
                                       + udiff("vllm/b.py", b_old, b_fixed))
    r = port(load_manifest(manifest), "0.29.0", source=src)
    (p,) = r.patches
    assert p.result == "conflict" and [c.file for c in p.conflicts] == ["vllm/b.py"]
    assert p.already_in_v == ("vllm/a.py",)
    from patchset.report.port import port_doc, port_table

    assert port_doc(r)["patches"][0]["already_in_v"] == ["vllm/a.py"]
    assert "[its change already in vllm/a.py]" in port_table(r)
    readme = (Path(p.workspace or "") / "README.md").read_text()
    assert "## Already in vLLM 0.29.0" in readme and "- `vllm/a.py`" in readme


REGISTRY = "vllm/model_executor/models/registry.py"
ZAMBA2 = '    "Zamba2ForCausalLM": ("zamba2", "Zamba2ForCausalLM"),\n'
LLAMA = '    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),\n'


@pytest.mark.network
def test_a_backport_upstream_landed_at_another_place_is_refused_not_carried_twice(tmp_path):
    """FlagScale's 0.9.1 -> 0.10.0 hand port (docs/records/port.md): the fork had backported the Ernie 4.5 registry
    entries after Zamba2, between its marker comments; 0.10.0 added them itself, in alphabetical order. The
    merge was clean and put them in twice (in factory.py the same made a connector registered twice, which
    raises at import); the maintainer dropped the backport. port and next now say so; a fork's own entry
    beside it still carries."""
    from patchset.cache import Cache
    from patchset.sources.sdist import SdistSource

    old = (SdistSource("vllm", "0.9.1", Cache()).root / REGISTRY).read_text()
    new = (SdistSource("vllm", "0.10.0", Cache()).root / REGISTRY).read_text()
    ernie = [x + "\n" for x in new.splitlines() if x.startswith('    "Ernie4_5_')]
    assert len(ernie) == 2 and not any(x in old for x in ernie)  # real: 0.10.0 added them, 0.9.1 lacks them
    backport = old.replace(ZAMBA2, ZAMBA2 + "    # --- FORK BEG ---\n" + "".join(ernie) + "    # --- FORK END ---\n")
    own = old.replace(LLAMA, LLAMA + '    "ForkLMForCausalLM": ("forklm", "ForkLMForCausalLM"),  # fork\n')
    project = tmp_path / "p"
    write_patch(project, "recipes/ernie/vllm-0.9.1.patch", udiff(REGISTRY, old, backport))
    write_patch(project, "recipes/own/vllm-0.9.1.patch", udiff(REGISTRY, old, own))
    manifest = write_manifest(project, """\
        schema: 1
        targets:
          "0.9.1": {}
        patches:
          - id: ernie
            releases: ">=0.9.1"
            patch: recipes/ernie/vllm-0.9.1.patch
          - id: own
            releases: ">=0.9.1"
            patch: recipes/own/vllm-0.9.1.patch
        """)
    line = new.splitlines(keepends=True).index(ernie[0]) + 1
    nxt = next_release(load_manifest(manifest), "0.10.0")
    by = {p.id: p for p in nxt.patches}
    assert by["ernie"].status == "needs-port"
    assert f"vllm 0.10.0 added itself after 0.9.1, at {REGISTRY}:{line}" in by["ernie"].result.message
    r = port(load_manifest(manifest), "0.10.0")
    by_port = {p.id: p for p in r.patches}
    assert by_port["ernie"].result == "conflict"
    (c,) = by_port["ernie"].conflicts
    assert (c.file, c.line) == (REGISTRY, line)
    assert c.message.startswith("merges cleanly but would carry upstream's own lines twice: hunk 1 adds 2 line(s)")
    # what upstream changed near the hunk is shown, with no guess that an earlier patch is to blame
    assert c.upstream.startswith("upstream did not change lines") and "earlier patch" not in c.upstream
    assert by["own"].status == "carries" and by_port["own"].result == "carried"  # the fork's own entry


SHARED = "vllm/distributed/kv_transfer/kv_connector/v1/shared_storage_connector.py"
SIMPLE = "vllm/distributed/kv_transfer/kv_connector/simple_connector.py"


def new_file(path: str, text: str) -> str:
    """A git-style patch that creates ``path``."""
    return udiff(path, "", text).replace(f"--- a/{path}", "--- /dev/null").replace(
        f"diff --git a/{path} b/{path}\n", f"diff --git a/{path} b/{path}\nnew file mode 100644\n")


def series_of_new_files(project: Path, files: dict[str, tuple[str, str]]) -> Path:
    """A series on 0.9.1, one patch per entry (id -> (path, text)), each creating that file."""
    entries = ""
    for pid, (path, text) in files.items():
        write_patch(project, f"recipes/{pid}/vllm-0.9.1.patch", new_file(path, text))
        entries += f'  - id: {pid}\n    releases: ">=0.9.1"\n    patch: recipes/{pid}/vllm-0.9.1.patch\n'
    return write_manifest(project, 'schema: 1\ntargets:\n  "0.9.1": {}\npatches:\n' + entries)


def test_a_copy_of_an_upstream_file_whose_copied_lines_upstream_changed_is_carried_with_a_note(tmp_path):
    """A fork's connector made from 0.9.1's SharedStorageConnector: 0.10.0 turned
    ``scheduler_output.scheduled_cached_reqs`` from a list of requests into one struct of lists, and its own
    connector now walks ``cached_reqs.req_ids``. The copy still iterates the old way; nothing conflicts and it
    imports, so port carries it (and next says it carries), and both say the copy's source changed where the
    copy follows it (as FlagScale's FlagCX engine, docs/records/port.md). A copy of a file upstream left alone gets no
    note."""
    from patchset.cache import Cache
    from patchset.report.next import next_table
    from patchset.report.port import port_markdown, port_table, ported_doc
    from patchset.sources.sdist import SdistSource

    u, v = SdistSource("vllm", "0.9.1", Cache()).root, SdistSource("vllm", "0.10.0", Cache()).root
    shared = (u / SHARED).read_text()
    loop = "        for cached_req in scheduler_output.scheduled_cached_reqs:\n"
    assert loop in shared and loop not in (v / SHARED).read_text()  # real: 0.10.0 changed the loop
    assert (u / SIMPLE).read_bytes() == (v / SIMPLE).read_bytes()  # real: 0.10.0 left this one alone
    fork_path = SHARED.replace("shared_storage", "fork_storage")
    fork = shared.replace("SharedStorageConnector", "ForkStorageConnector")
    mine = SIMPLE.replace("simple_connector", "fork_simple_connector")
    manifest = series_of_new_files(tmp_path / "p", {
        "fork-storage": (fork_path, fork),
        "fork-simple": (mine, (u / SIMPLE).read_text().replace("SimpleConnector", "ForkSimpleConnector"))})
    r = port(load_manifest(manifest), "0.10.0", dry_run=True)
    by = {p.id: p for p in r.patches}
    assert by["fork-storage"].result == "carried" and by["fork-simple"].result == "carried" and r.ok
    (review,) = by["fork-storage"].review
    note = review.message
    assert (review.file, review.copy_of) == (fork_path, SHARED)
    line = fork.splitlines(keepends=True).index(loop) + 1
    assert note.startswith(f"{fork_path} is a copy of {SHARED} (")
    assert "vllm 0.10.0 changed " in note and f"(first at {fork_path}:{line}: 'for cached_req in " in note
    assert note.endswith("bring the copy up to date, or keep it as it is")
    assert by["fork-simple"].review == ()
    # the terminal shows the note in full below the table (a cell would cut it short), the cell says so
    assert f"fork-storage, review: {note}" in port_table(r) and "1 copy to review (below)" in port_table(r)
    # and what upstream changed there: only the changes to lines the copy holds, as a diff of the source that
    # applies to 0.9.1's file with GNU patch -F0 (tests/test_core_copies.py)
    assert "-        for cached_req in scheduler_output.scheduled_cached_reqs:\n" in review.diff
    assert "+        for i, req_id in enumerate(cached_reqs.req_ids):\n" in review.diff
    assert review.diff.startswith(f"--- a/{SHARED}\n+++ b/{SHARED}\n@@ -306,")
    assert "    -        for cached_req in scheduler_output.scheduled_cached_reqs:" in port_table(r)
    md = port_markdown(r)
    assert f"- fork-storage, review: {note}\n  <details><summary>what upstream changed there</summary>" in md
    assert "  ```diff\n  --- a/" + SHARED in md
    assert ported_doc(by["fork-storage"])["review"] == [{"file": fork_path, "copy_of": SHARED, "message": note,
                                                         "diff": review.diff}]
    # next says the same of the patch, and it still carries
    nxt = {p.id: p for p in next_release(load_manifest(manifest), "0.10.0").patches}
    assert nxt["fork-storage"].status == "carries" and nxt["fork-storage"].review == (review,)
    shown = next_table(next_release(load_manifest(manifest), "0.10.0"))
    assert f"fork-storage, review: {note}" in shown and "1 copy to review (below)" in shown
    assert "    +        for i, req_id in enumerate(cached_reqs.req_ids):" in shown
    assert nxt["fork-simple"].status == "carries" and nxt["fork-simple"].review == ()


def test_a_copy_in_a_patch_that_conflicts_elsewhere_is_named_in_its_workspace_readme(tmp_path):
    """The same copy, in a patch that also edits the loop 0.10.0 rewrote in SharedStorageConnector itself: the
    patch conflicts there, and whoever resolves it reads, in the workspace README, that the copy follows the
    old loop too (llm-scaler's squashes carry their XPU runners, copies of the GPU ones, this way)."""
    from patchset.cache import Cache
    from patchset.report.port import port_table
    from patchset.sources.sdist import SdistSource

    u = SdistSource("vllm", "0.9.1", Cache()).root
    shared = (u / SHARED).read_text()
    loop = "        for cached_req in scheduler_output.scheduled_cached_reqs:\n"
    fork_path = SHARED.replace("shared_storage", "fork_storage")
    edited = shared.replace(loop, loop + "            # fork: every cached request is logged\n")
    project = tmp_path / "p"
    write_patch(project, "recipes/fork/vllm-0.9.1.patch",
                new_file(fork_path, shared.replace("SharedStorageConnector", "ForkStorageConnector"))
                + udiff(SHARED, shared, edited))
    manifest = write_manifest(project, """\
        schema: 1
        targets:
          "0.9.1": {}
        patches:
          - id: fork
            releases: ">=0.9.1"
            patch: recipes/fork/vllm-0.9.1.patch
        """)
    r = port(load_manifest(manifest), "0.10.0", workdir=tmp_path / "work")
    (p,) = r.patches
    assert p.result == "conflict" and [c.file for c in p.conflicts] == [SHARED]
    (review,) = p.review
    note = review.message
    assert note.startswith(f"{fork_path} is a copy of {SHARED} (")
    readme = (tmp_path / "work" / "fork" / "README.md").read_text()
    assert "## To review" in readme and f"- {note}" in readme
    assert "  ```diff\n  --- a/" + SHARED in readme and "  -        for cached_req in " in readme
    assert "1 copy to review (below)" in port_table(r) and f"fork, review: {note}" in port_table(r)


def test_a_copy_of_a_file_upstream_removed_or_moved_gets_a_note_naming_which(tmp_path):
    """Real 0.9.1 -> 0.10.0: 0.10.0 removed the V0 ``xpu_model_runner.py`` (no file of it holds half its lines)
    and folded ``attention/ops/ipex_attn.py`` into ``v1/attention/backends/cpu_attn.py``, changing lines there. A
    fork's copy of each imports fine and carries; the notes say the first's source is gone and where the second's
    went (llm-scaler kept such XPU copies and reworked them when upstream removed their sources,
    docs/records/port.md)."""
    from patchset.cache import Cache
    from patchset.report.port import ported_doc
    from patchset.sources.sdist import SdistSource

    xpu, ipex, cpu = ("vllm/worker/xpu_model_runner.py", "vllm/attention/ops/ipex_attn.py",
                      "vllm/v1/attention/backends/cpu_attn.py")
    u, v = SdistSource("vllm", "0.9.1", Cache()).root, SdistSource("vllm", "0.10.0", Cache()).root
    assert (u / xpu).is_file() and (u / ipex).is_file() and (v / cpu).is_file()  # real
    assert not (v / xpu).exists() and not (v / ipex).exists()
    fork_xpu, fork_ipex = "vllm/worker/fork_xpu_model_runner.py", "vllm/attention/ops/fork_ipex_attn.py"
    manifest = series_of_new_files(tmp_path / "p", {
        "fork-xpu": (fork_xpu, (u / xpu).read_text().replace("XPUModelRunner", "ForkXPUModelRunner")),
        "fork-ipex": (fork_ipex, (u / ipex).read_text().replace("_PagedAttention", "_ForkPagedAttention"))})
    r = port(load_manifest(manifest), "0.10.0", dry_run=True)
    by = {p.id: p for p in r.patches}
    assert [by[x].result for x in ("fork-xpu", "fork-ipex")] == ["carried", "carried"] and r.ok
    (gone,) = by["fork-xpu"].review
    assert (gone.file, gone.copy_of) == (fork_xpu, xpu)
    assert f"vllm 0.10.0 no longer ships {xpu}, and none of its files holds half of its lines" in gone.message
    (moved,) = by["fork-ipex"].review
    assert (moved.file, moved.copy_of) == (fork_ipex, ipex)
    assert f"of {ipex} (moved to {cpu}) that the copy still holds (first at {fork_ipex}:" in moved.message
    assert ported_doc(by["fork-xpu"])["review"] == [{"file": fork_xpu, "copy_of": xpu, "message": gone.message,
                                                     "diff": ""}]
    # the moved source's diff is its own changed lines, not the file it was folded into (700 lines more)
    assert moved.diff.startswith(f"--- a/{ipex}\n+++ b/{cpu}\n") and len(moved.diff.splitlines()) < 100
    assert "-    def get_supported_head_sizes() -> List[int]:\n" in moved.diff
    nxt = {p.id: p for p in next_release(load_manifest(manifest), "0.10.0").patches}
    assert nxt["fork-xpu"].review == (gone,) and nxt["fork-ipex"].review == (moved,)


def test_a_name_the_patched_file_already_lacked_on_its_release_is_no_new_problem(tmp_path):
    """A file the patch creates uses a name nothing defines, on 0.9.1 as on 0.10.0: the port brings no new
    problem, so port carries the patch as it is (before, the carry was refused and the 3-way merge rewrote
    the same file as "ported") and next says it carries (before, next alone called it needs-port). A name
    only the new release leaves undefined stays a refusal (``test_port_follows_code_that_upstream_moved...``)."""
    text = "import torch\n\n\ndef fork_step(x):\n    return fork_helper(torch.as_tensor(x))\n"
    manifest = series_of_new_files(tmp_path / "p", {"fork": ("vllm/fork_step.py", text)})
    (p,) = port(load_manifest(manifest), "0.10.0", dry_run=True).patches
    assert p.result == "carried" and p.text is None
    (n,) = next_release(load_manifest(manifest), "0.10.0").patches
    assert n.status == "carries", n.result.message


def test_source_date_epoch_dates_a_ported_patch_so_a_rerun_on_another_day_writes_the_same_file(monkeypatch):
    head = "Description: x\nLast-Update: 2020-01-01\n---\n--- a/f\n"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1764892800")  # 2025-12-05 00:00 UTC
    assert "Last-Update: 2025-12-05\n" in header_of(head, "Ported: by test")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "not a number")
    import datetime

    assert f"Last-Update: {datetime.date.today().isoformat()}\n" in header_of(head)
