"""The series on one release: cumulative order, blocked, upstream evidence, warnings."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import git
import helpers
import pytest
from helpers import udiff, write_manifest, write_patch

from patchset.cli import main
from patchset.core.manifest_load import load_manifest
from patchset.core.series import evaluate_release, failure_summary
from patchset.errors import PatchFileError
from patchset.sources.git import GitSource
from patchset.sources.local import DirSource

MOD = "vllm/sched.py"
PRISTINE = "".join(f"line {i}\n" for i in range(1, 31))
FIRST = PRISTINE.replace("line 10\n", "line 10\nwatermark = tokens - 1\n")
SECOND = FIRST.replace("watermark = tokens - 1\n", "watermark = tokens - 1\nserve_hits = True\n")


def project(tmp_path: Path, first_after: str = "", releases: str = ">=0.28.0,<0.30.0") -> Path:
    write_patch(tmp_path, "recipes/first/fix.patch", udiff(MOD, PRISTINE, FIRST))
    write_patch(tmp_path, "recipes/second/fix.patch", udiff(MOD, FIRST, SECOND))
    return write_manifest(tmp_path, f"""
        schema: 1
        targets: {{"0.28.0": {{}}, "0.29.0": {{}}, "0.30.0": {{}}}}
        patches:
          - id: first
            releases: "{releases}"
            patch: recipes/first/fix.patch
            present: {{file: {MOD}, contains: "watermark = tokens - 1"}}
          - id: second
            releases: ">=0.28.0,<0.30.0"
            patch: recipes/second/fix.patch
            after: [first]
        """)


def tree(tmp_path: Path, name: str, content: str) -> DirSource:
    root = tmp_path / name
    (root / "vllm").mkdir(parents=True)
    (root / MOD).write_text(content)
    return DirSource(root)


def statuses(result):
    return {p.id: p.status for p in result.patches}


def test_series_applies_cumulatively(tmp_path):
    m = load_manifest(project(tmp_path))
    r = evaluate_release(m, "0.29.0", tree(tmp_path, "t", PRISTINE))
    assert statuses(r) == {"first": "applies", "second": "applies"}
    assert r.files[MOD] == SECOND.encode()
    assert r.changed == {MOD: SECOND.encode()}
    assert r.ok


def test_a_failed_patch_blocks_what_comes_after_it(tmp_path):
    m = load_manifest(project(tmp_path))
    broken = PRISTINE.replace("line 11\n", "line eleven\n")
    r = evaluate_release(m, "0.29.0", tree(tmp_path, "t", broken))
    assert statuses(r) == {"first": "failed", "second": "blocked"}
    assert "comes after first (failed)" in r.patch("second").message
    assert r.patch("first").hunks[0].patch_line > 0
    assert not r.ok


def test_a_hunk_that_stands_on_a_failed_patchs_lines_names_it_without_an_after_list(tmp_path):
    """A series imported on a release where an earlier patch fails has no after: list to block the later one (import
    infers them where the series applies): its failed hunk names the patch whose lines it stands on, which did
    not apply and so left the tree without them (a real 0.30.0 series checked on 0.31.0: three later patches
    failed on envs.py lines the second one adds)."""
    manifest = project(tmp_path)
    manifest.write_text(manifest.read_text().replace("after: [first]", "fuzz: 0"))
    m = load_manifest(manifest)
    broken = PRISTINE.replace("line 11\n", "line eleven\n")
    r = evaluate_release(m, "0.29.0", tree(tmp_path, "t", broken))
    assert statuses(r) == {"first": "failed", "second": "failed"}
    second = r.patch("second")
    assert "hunk 1 stands on lines first adds, which does not apply here: mend first first" in second.message
    assert second.hunks[0].message.endswith("; it stands on lines first adds, which does not apply here")
    assert "stands on" not in r.patch("first").message
    # a failure of its own, after the same failed patch (its context lacks a line no earlier patch adds), names none
    write_patch(tmp_path, "recipes/third/fix.patch", udiff(MOD, PRISTINE, PRISTINE.replace("line 25\n", "line 25!\n")))
    manifest.write_text(manifest.read_text() + "  - id: third\n    releases: '>=0.28.0'\n"
                        "    patch: recipes/third/fix.patch\n")
    both = broken.replace("line 24\n", "line twenty-four\n")
    r = evaluate_release(load_manifest(manifest), "0.29.0", tree(tmp_path, "u", both))
    assert statuses(r) == {"first": "failed", "second": "failed", "third": "failed"}
    assert "stands on" in r.patch("second").message and "stands on" not in r.patch("third").message


def test_probe_says_upstream_and_dependants_still_apply(tmp_path):
    m = load_manifest(project(tmp_path))
    r = evaluate_release(m, "0.30.0", tree(tmp_path, "t", FIRST))
    assert r.patch("first").status == "upstream"
    assert r.patch("first").evidence.startswith("probe: vllm/sched.py:11 contains")
    assert r.patch("second").status == "not-targeted"


def test_upstream_inside_the_releases_range_warns_to_retire(tmp_path):
    m = load_manifest(project(tmp_path, releases=">=0.28.0"))
    r = evaluate_release(m, "0.30.0", tree(tmp_path, "t", FIRST))
    assert r.patch("first").status == "upstream"
    assert any("narrow the range to retire" in w for w in r.warnings)


def test_excluded_patch_and_its_dependants_for_negative_controls(tmp_path):
    m = load_manifest(project(tmp_path))
    r = evaluate_release(m, "0.29.0", tree(tmp_path, "t", PRISTINE), exclude=frozenset({"first", "second"}))
    assert statuses(r) == {"first": "excluded", "second": "excluded"}
    assert r.changed == {}


def test_git_ancestry_is_evidence(tmp_path):
    repo_dir = tmp_path / "upstream"
    repo = git.Repo.init(repo_dir)
    (repo_dir / "vllm").mkdir()
    (repo_dir / MOD).write_text(PRISTINE)
    repo.index.add([MOD])
    repo.index.commit("base")
    repo.create_tag("v0.29.0")
    (repo_dir / MOD).write_text(FIRST.replace("watermark = tokens - 1", "watermark = max(p, tokens - 1)"))
    repo.index.add([MOD])
    fix = repo.index.commit("the fix, reworded upstream")
    repo.create_tag("v0.30.0")
    (repo_dir / "README.md").write_text("main moved on after the tag\n")
    repo.index.add(["README.md"])
    repo.index.commit("after the release")
    manifest = project(tmp_path)
    text = manifest.read_text().replace("present: {file: vllm/sched.py, contains: \"watermark = tokens - 1\"}",
                                        f"upstream: {{pr: 54288, commit: \"{fix.hexsha[:10]}\"}}")
    manifest.write_text(text)
    m = load_manifest(manifest)
    r = evaluate_release(m, "0.30.0", GitSource(str(repo_dir), "v0.30.0"))
    assert r.patch("first").status == "upstream"
    assert r.patch("first").evidence == f"ancestry: upstream commit {fix.hexsha[:10]} is an ancestor of v0.30.0"
    r = evaluate_release(m, "0.29.0", GitSource(str(repo_dir), "v0.29.0"))
    assert r.patch("first").status == "applies" and r.settled  # a commit the repository knows: not upstream
    # a commit the repository does not know yet: not evidence now, but a fetch may make it so, so the
    # verdict is not one to keep (core/kept.py)
    manifest.write_text(text.replace(fix.hexsha[:10], "ab" * 20))
    r = evaluate_release(load_manifest(manifest), "0.29.0", GitSource(str(repo_dir), "v0.29.0"))
    assert r.patch("first").status == "applies" and not r.settled


def test_reverse_apply_is_weak_evidence_and_says_so(tmp_path):
    manifest = project(tmp_path)
    manifest.write_text(manifest.read_text().replace(
        "present: {file: vllm/sched.py, contains: \"watermark = tokens - 1\"}", "fuzz: 0"))
    m = load_manifest(manifest)
    r = evaluate_release(m, "0.29.0", tree(tmp_path, "t", FIRST))
    assert r.patch("first").status == "upstream"
    assert "weak evidence" in r.patch("first").evidence


def test_probe_that_cannot_see_the_fix_is_warned_about(tmp_path):
    manifest = project(tmp_path)
    manifest.write_text(manifest.read_text().replace('contains: "watermark = tokens - 1"', 'contains: "nowhere"'))
    m = load_manifest(manifest)
    r = evaluate_release(m, "0.29.0", tree(tmp_path, "t", PRISTINE))
    assert r.ok
    assert any("probe does not hold after applying" in w for w in r.warnings)


def test_a_malformed_patch_file_is_bad_input_naming_file_line_and_patch(tmp_path):
    # not "failed": that is a finding about the release (exit 1), and CI would read "a fix is missing"
    m = load_manifest(project(tmp_path))
    broken = tmp_path / "recipes/first/fix.patch"
    broken.write_text(broken.read_text() + "+one line too many\n")
    with pytest.raises(PatchFileError, match=r"recipes/first/fix\.patch:\d+: patch first: .*more lines than its "
                       r"header") as caught:
        evaluate_release(m, "0.29.0", tree(tmp_path, "t", PRISTINE))
    assert caught.value.exit_code == 2 and caught.value.patch == "first"
    assert caught.value.hint == "regenerate the patch rather than editing hunks by hand"


# --- issue 7: missing paths, partly upstream, modes --------------------------------------------------


def one_patch(tmp_path: Path, diff: str, extra: str = "") -> Path:
    write_patch(tmp_path, "recipes/p/fix.patch", diff)
    return write_manifest(tmp_path, f"""
        schema: 1
        targets: {{"0.29.0": {{}}}}
        patches:
          - id: p
            releases: ">=0.28.0"
            patch: recipes/p/fix.patch{extra}
          - id: later
            releases: ">=0.28.0"
            patch: recipes/p/fix.patch
            after: [p]
        """)


def test_a_package_layout_patch_read_as_repository_layout_fails_and_names_the_layout(tmp_path):
    m = load_manifest(one_patch(tmp_path, udiff("sched.py", PRISTINE, FIRST)))
    r = evaluate_release(m, "0.29.0", tree(tmp_path, "t", PRISTINE))
    p = r.patch("p")
    assert p.status == "failed" and not r.ok  # was "applies": "nothing to apply in this tree"
    assert "sched.py: not in dir:" in p.message
    assert "vllm/sched.py exists: the patch is in package layout: set root: vllm" in p.message
    assert r.patch("later").status == "blocked"


def test_a_path_no_layout_finds_fails_naming_it(tmp_path):
    m = load_manifest(one_patch(tmp_path, udiff("vllm/shed.py", PRISTINE, FIRST)))
    r = evaluate_release(m, "0.29.0", tree(tmp_path, "t", PRISTINE))
    assert r.patch("p").status == "failed"
    assert "vllm/shed.py: not in dir:" in r.patch("p").message
    assert "no other layout names a file there" in r.patch("p").message


def test_only_tests_are_skipped_and_only_on_a_source_without_tests(tmp_path):
    diff = udiff(MOD, PRISTINE, FIRST) + udiff("tests/test_sequence.py", "old\n", "new\n")  # a real 0.29.0 file
    m = load_manifest(one_patch(tmp_path, diff))
    r = evaluate_release(m, "0.29.0", tree(tmp_path, "t", PRISTINE))  # a tree without tests/
    assert r.patch("p").status == "applies"
    assert r.patch("p").skipped == ("tests/test_sequence.py",)
    with_tests = tree(tmp_path, "u", PRISTINE)
    (with_tests.root / "tests").mkdir()
    r = evaluate_release(m, "0.29.0", with_tests)
    assert r.patch("p").status == "failed" and "tests/test_sequence.py: not in" in r.patch("p").message


def test_some_hunks_in_the_release_is_partly_upstream(tmp_path):
    after = PRISTINE.replace("line 5\n", "line 5!\n").replace("line 25\n", "line 25!\n")
    m = load_manifest(one_patch(tmp_path, udiff(MOD, PRISTINE, after)))
    half = PRISTINE.replace("line 5\n", "line 5!\n")
    r = evaluate_release(m, "0.29.0", tree(tmp_path, "t", half))
    p = r.patch("p")
    assert p.status == "partly-upstream" and not r.ok  # was "failed"
    assert "hunk 1 already in vLLM 0.29.0" in p.message and "the other hunks would apply" in p.message
    assert [h.status for h in p.hunks] == ["already-applied", "exact"]
    assert r.patch("later").status == "blocked"


def test_a_drifted_deletion_is_not_reported_upstream(tmp_path):
    block = "a = 1\nb = 2\nc = 3\nremove_me()\nd = 4\ne = 5\nf = 6\n"
    before = block + "\n" * 10
    m = load_manifest(one_patch(tmp_path, udiff(MOD, before, before.replace("remove_me()\n", ""))))
    drifted = block.replace("c = 3", "c = 30") + "\n" * 10 + block.replace("remove_me()\n", "")
    r = evaluate_release(m, "0.29.0", tree(tmp_path, "t", drifted))
    assert r.patch("p").status == "failed"  # was "upstream" (reverse-apply), exit 0


def test_modes_the_series_sets_are_carried_up(tmp_path):
    diff = f"diff --git a/{MOD} b/{MOD}\nold mode 100644\nnew mode 100755\n" + udiff(MOD, PRISTINE, FIRST)
    m = load_manifest(one_patch(tmp_path, diff))
    r = evaluate_release(m, "0.29.0", tree(tmp_path, "t", PRISTINE))
    assert r.patch("p").status == "applies"
    assert r.modes == {MOD: 0o100755}
    assert r.patch("p").files == (MOD,)


def test_a_wrong_strip_is_named(tmp_path):
    m = load_manifest(one_patch(tmp_path, udiff(MOD, PRISTINE, FIRST), "\n            strip: 0"))
    r = evaluate_release(m, "0.29.0", tree(tmp_path, "t", PRISTINE))
    assert r.patch("p").status == "failed"
    assert "vllm/sched.py exists: its paths have one more leading component: strip: 1" in r.patch("p").message


def test_the_releases_of_one_run_read_each_patch_file_once(tmp_path, monkeypatch):
    """``loads``, shared by the releases a caller evaluates together: one read per patch file, the same
    results as reading afresh, and a refusal that names its own release."""
    from patchset.core import manifest as manifest_module
    from patchset.core.series import load_patches

    m = load_manifest(project(tmp_path, releases=">=0.28.0"))
    reads: list[str] = []
    real = manifest_module.read_patch
    monkeypatch.setattr(manifest_module, "read_patch", lambda path, **kw: reads.append(str(path)) or real(path, **kw))
    loads: dict = {}
    shared = [evaluate_release(m, v, tree(tmp_path, v, PRISTINE), loads=loads) for v in ("0.28.0", "0.29.0")]
    assert sorted(reads) == sorted({str(c.path) for p in m.patches for c in p.choices})
    fresh = [evaluate_release(m, v, tree(tmp_path, v + "b", PRISTINE)) for v in ("0.28.0", "0.29.0")]
    assert [[(r.id, r.status, r.hunks) for r in x.patches] for x in shared] == \
        [[(r.id, r.status, r.hunks) for r in x.patches] for x in fresh]
    # no file for 0.30.0 (second's range ends before it): each release's refusal names that release
    first = m.patches[0]
    bare = type(first)(**{**first.__dict__, "choices": ()})
    gone = type(m)(**{**m.__dict__, "patches": (bare,)})
    for v in ("0.28.0", "0.29.0"):
        _, errors = load_patches(gone, v, loads=loads)
        assert f"vLLM {v}" in str(errors["first"])


# -- open_release: a release the package index lacks, named one way by every verb (issue 38), at the
# manifest's line when the manifest names it

NOT_THERE = ("vllm 0.14.9 is not a release on the index (the releases next to it: 0.13.0, 0.14.0, 0.14.1, 0.15.0, "
             "0.15.1, 0.16.0) (name a release the index has)")


@pytest.fixture
def unreleased_fork(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "patches.yaml").write_text('schema: 1\nupstream:\n  pypi: vllm\n  tag: "v{version}"\ntargets:\n'
                                           '  "0.14.1": {}\npatches: []\n')
    (tmp_path / "a.patch").write_text("--- a/vllm/x.py\n+++ b/vllm/x.py\n@@ -1 +1 @@\n-x\n+y\n")
    return tmp_path


@pytest.mark.network
@pytest.mark.parametrize("argv", [["next", "--vllm", "0.14.9"], ["port", "--to", "0.14.9", "--dry-run"],
                                  ["import", "a.patch", "--target", "0.14.9", "--into", "out"]])
def test_next_port_and_import_say_the_same_of_a_release_that_does_not_exist(unreleased_fork, capsys, argv):
    assert main(argv) == 2
    assert capsys.readouterr().err == f"patchset {argv[0]}: error: {NOT_THERE}\n"
    assert not (unreleased_fork / "out").exists()


@pytest.mark.network
def test_a_target_the_index_lacks_is_named_at_its_line_of_the_manifest(unreleased_fork, capsys):
    manifest = unreleased_fork / "patches.yaml"
    manifest.write_text(manifest.read_text().replace('"0.14.1": {}\n', '"0.14.1": {}\n  "0.14.9": {}\n'))
    assert main(["next", "--vllm", "0.14.9"]) == 2
    assert capsys.readouterr().err == f"patchset next: error: patches.yaml:7: {NOT_THERE}\n"
    assert main(["check", "--format", "json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert (error["file"], error["line"]) == ("patches.yaml", 7)
    assert error["message"].startswith("vllm 0.14.9 is not a release on the index")


@pytest.mark.network
def test_a_release_with_wheels_only_says_to_check_it_against_the_wheel(unreleased_fork, capsys):
    assert main(["next", "--vllm", "0.15.0"]) == 2
    err = capsys.readouterr().err
    assert "vllm 0.15.0 has no source distribution on the index, only vllm-0.15.0-" in err
    assert "(--source wheel)" in err


# -- every field of a verdict (issue 41: the survivors of mutating series.py) -----------------------------------

needs_patch = pytest.mark.skipif(shutil.which("patch") is None, reason="GNU patch is not installed")
NO_LAYOUT = "; no other layout names a file there either (a typo, or a file removed upstream?)"


def seen(result) -> list:
    """Every field of each patch's verdict a report shows, hunk by hunk."""
    return [(p.id, str(p.status), p.evidence, p.message, p.patch_file, p.skipped, p.tree, p.files,
             [(h.file, h.number, str(h.status), h.applied, h.line, h.patch_line, h.message) for h in p.hunks])
            for p in result.patches]


def series(tmp_path: Path, diffs: dict[str, str], extra: dict[str, str] | None = None, releases: str = ">=0.28.0") \
        -> Path:
    """A manifest of one patch per id (``extra``: more of its YAML fields), in this order, each on ``releases``."""
    body = ""
    for pid, diff in diffs.items():
        write_patch(tmp_path, f"recipes/{pid}.patch", diff)
        body += f"  - {{id: {pid}, releases: '{releases}', patch: recipes/{pid}.patch{(extra or {}).get(pid, '')}}}\n"
    return write_manifest(tmp_path, 'schema: 1\ntargets: {"0.29.0": {}}\npatches:\n' + body)


def folder(tmp_path: Path, files: dict[str, str]) -> DirSource:
    root = tmp_path / "tree"
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return DirSource(root)


def gnu_patch(tmp_path: Path, files: dict[str, str], diff: str, *extra: str) -> tuple[int, str]:
    """GNU patch's answer (exit status, output) on the same bytes, in a folder of its own, without writing."""
    code, said, _ = helpers.gnu_patch(tmp_path, {p: t.encode() for p, t in files.items()}, diff, "--dry-run", *extra)
    return code, said


def git_apply_check(tmp_path: Path, files: dict[str, str], diff: str) -> tuple[int, str]:
    code, said, _ = helpers.git_apply(tmp_path, {p: t.encode() for p, t in files.items()}, diff, "--check")
    return code, said


TWO_HUNKS = PRISTINE.replace("line 5\n", "line 5!\n").replace("line 25\n", "line 25!\n")


@needs_patch
def test_a_missing_file_fails_its_hunks_and_the_files_present_are_still_placed(tmp_path):
    """Each missing file's hunks (or its change without a hunk) fail naming it, in the patch's order; the files
    that are there are placed (on a copy: the failed patch changes nothing) and what fails there is said too."""
    diff = (udiff("vllm/gone.py", "a\nb\n", "a\nc\n")
            + "diff --git a/vllm/mode.py b/vllm/mode.py\nold mode 100644\nnew mode 100755\n"
            + "diff --git a/vllm/run.py b/vllm/run.py\nold mode 100644\nnew mode 100755\n"
            + udiff(MOD, PRISTINE, TWO_HUNKS))
    m = load_manifest(series(tmp_path, {"p": diff, "later": udiff(MOD, PRISTINE, FIRST)}, {"later": ", after: [p]"}))
    src = folder(tmp_path, {MOD: PRISTINE, "vllm/run.py": "run()\n"})
    gone = f"vllm/gone.py: not in {src.identity}{NO_LAYOUT}"
    mode = f"vllm/mode.py: not in {src.identity}{NO_LAYOUT}"
    r = evaluate_release(m, "0.29.0", src)
    assert seen(r) == [
        ("p", "failed", "", f"{gone}; {mode}", "recipes/p.patch", (), "", (),
         [("vllm/gone.py", 1, "failed", False, None, 6, gone), ("vllm/mode.py", 0, "failed", False, None, 10, mode),
          ("vllm/run.py", 0, "exact", True, None, 13, "mode 100644 -> 100755"),
          (MOD, 2, "exact", True, 2, 19, ""), (MOD, 3, "exact", True, 22, 28, "")]),
        ("later", "blocked", "", "comes after p (failed)", "recipes/later.patch", (), "", (), [])]
    assert r.changed == {} and r.modes == {}
    assert failure_summary(r) == ("the series does not apply to vLLM 0.29.0: patch p failed (recipes/p.patch:6, "
                                  f"hunk 1, vllm/gone.py: failed, {gone}): {gone}; {mode}; "
                                  "patch later blocked: comes after p (failed)")
    # a hunk of a file that is there fails as well: the engine's word for it follows the missing files'
    src = folder(tmp_path, {MOD: PRISTINE.replace("line 24\n", "line 24?\n"), "vllm/run.py": "run()\n"})
    p = evaluate_release(m, "0.29.0", src).patch("p")
    assert p.message == f"{gone}; {mode}; hunk 3 ({MOD}): failed - context not found; nearest candidate at line 22"
    assert [(h.file, h.number, str(h.status), h.patch_line) for h in p.hunks][3:] == \
        [(MOD, 2, "exact", 19), (MOD, 3, "failed", 28)]
    assert gnu_patch(tmp_path, {MOD: PRISTINE.replace("line 24\n", "line 24?\n")}, udiff(MOD, PRISTINE, TWO_HUNKS),
                     "-F0")[1].splitlines()[1:] == ["Hunk #2 FAILED at 22.", "1 out of 2 hunks FAILED"]


def test_a_change_without_a_hunk_is_named_by_its_line_in_the_patch(tmp_path):
    """A mode change, a rename onto a file that exists (git apply refuses it too): their results name the patch
    file's line of their diff, as a hunk's names its @@ line (the summary said ``p.patch:0``)."""
    diff = ("diff --git a/vllm/run.py b/vllm/run.py\nold mode 100644\nnew mode 100755\n"
            "diff --git a/vllm/a.py b/vllm/b.py\nsimilarity index 100%\nrename from vllm/a.py\nrename to vllm/b.py\n"
            + udiff("vllm/new.py", "", "made = True\n").replace("--- a/vllm/new.py",
                                                                  "new file mode 100644\n--- /dev/null"))
    files = {"vllm/run.py": "run()\n", "vllm/a.py": "x = 1\n", "vllm/b.py": "y = 2\n"}
    m = load_manifest(series(tmp_path, {"p": diff}))
    r = evaluate_release(m, "0.29.0", folder(tmp_path, files))
    refusal = "the patch renames vllm/a.py onto a file that exists"
    assert seen(r) == [("p", "failed", "", f"hunk 0 (vllm/b.py): failed - {refusal}", "recipes/p.patch", (), "", (),
                        [("vllm/run.py", 0, "exact", True, None, 3, "mode 100644 -> 100755"),
                         ("vllm/b.py", 0, "failed", False, None, 6, refusal),
                         ("vllm/new.py", 1, "exact", True, 1, 14, "")])]
    assert failure_summary(r, " (dir)") == ("the series does not apply to vLLM 0.29.0 (dir): patch p failed "
                                            f"(recipes/p.patch:6, hunk 0, vllm/b.py: failed, {refusal}): "
                                            f"hunk 0 (vllm/b.py): failed - {refusal}")
    code, said = git_apply_check(tmp_path, files, diff)
    assert code == 1 and "vllm/b.py: already exists in working directory" in said
    del files["vllm/b.py"]  # then it applies: a mode, a rename and a new file, each at its line
    r = evaluate_release(m, "0.29.0", folder(tmp_path / "ok", files))
    assert seen(r) == [("p", "applies", "", "", "recipes/p.patch", (), "", ("vllm/a.py", "vllm/b.py", "vllm/new.py",
                                                                            "vllm/run.py"),
                        [("vllm/run.py", 0, "exact", True, None, 3, "mode 100644 -> 100755"),
                         ("vllm/b.py", 0, "exact", True, None, 6, "renamed from vllm/a.py"),
                         ("vllm/new.py", 1, "exact", True, 1, 14, "")])]
    assert r.modes == {"vllm/run.py": 0o100755, "vllm/new.py": 0o100644}
    assert git_apply_check(tmp_path, files, diff) == (0, "")


def new_file(path: str, text: str) -> str:
    return udiff(path, "", text).replace(f"--- a/{path}", "new file mode 100644\n--- /dev/null")


def site_packages(tmp_path: Path, version: str = "0.29.0") -> DirSource:
    site = tmp_path / "site"
    (site / "vllm").mkdir(parents=True)
    (site / "vllm/__init__.py").write_text("")
    (site / MOD).write_text(PRISTINE)
    (site / f"vllm-{version}.dist-info").mkdir()
    (site / f"vllm-{version}.dist-info/METADATA").write_text(f"Name: vllm\nVersion: {version}\n")
    return DirSource.release(site, version)


REQS = "requirements/common.txt"  # in the real 0.29.0 sdist's listing, as setup.py is


@pytest.mark.network  # the real 0.29.0 sdist's listing (read once, then cached)
def test_site_packages_judges_each_path_beside_the_package_by_the_releases_listing(tmp_path):
    """Beside the package of a site-packages: a file of the release's sdist, or one a patch creates under one of its
    top folders, is not-in-tree (each hunk, or the change without one, at its line, in the patch's order); a file
    the release never had fails as a typo would, and a new file under a top it lacks fails naming its top (and
    the layout that would find it)."""
    diffs = {"mixed": (udiff(REQS, "numpy\n", "numpy\nregex\n")
                       + "diff --git a/vllm/__init__.py b/vllm/__init__.py\nold mode 100644\nnew mode 100755\n"
                       + "diff --git a/setup.py b/setup.py\nold mode 100644\nnew mode 100755\n"
                       + udiff(MOD, PRISTINE, PRISTINE.replace("line 5\n", "line 5!\n"))),
             "test": new_file("tests/test_new_thing.py", "x = 1\n"),
             "typo": udiff("tests/test_no_such_file_here.py", "a\n", "b\n"),
             "top": new_file("extra/sub/new.py", "x = 1\n"),
             "deeper": new_file("x/sched.py", "x = 1\n"),
             "deps": udiff(REQS, "numpy\n", "numpy\nregex\n")
             + "diff --git a/setup.py b/setup.py\nold mode 100644\nnew mode 100755\n"}
    m = load_manifest(series(tmp_path, diffs))
    src = site_packages(tmp_path)
    r = evaluate_release(m, "0.29.0", src)
    beside = "this site-packages holds only the package: {} lies beside it"
    typo = ("tests/test_no_such_file_here.py: not in the package this site-packages holds, nor beside it in vLLM "
            f"0.29.0 (its sdist's listing){NO_LAYOUT}")
    top = f"extra/sub/new.py: the patch creates it under extra/, which is not in {src.identity}"
    deeper = (f"x/sched.py: the patch creates it under x/, which is not in {src.identity}; vllm/sched.py exists: "
              "package layout with one more leading component: root: vllm, strip: 2")
    elsewhere = "check it against an upstream tree (--source pypi or git:PATH)"
    assert seen(r) == [
        ("mixed", "applies", "", "", "recipes/mixed.patch", (REQS, "setup.py"), "site-packages",
         ("vllm/__init__.py", MOD),
         [(REQS, 1, "not-in-tree", False, None, 6, beside.format(REQS)),
          ("vllm/__init__.py", 0, "exact", True, None, 9, "mode 100644 -> 100755"),
          ("setup.py", 0, "not-in-tree", False, None, 12, beside.format("setup.py")),
          (MOD, 2, "exact", True, 2, 18, "")]),
        ("test", "not-in-tree", "", f"nothing of it is in this site-packages (tests/test_new_thing.py): {elsewhere}",
         "recipes/test.patch", ("tests/test_new_thing.py",), "site-packages", (),
         [("tests/test_new_thing.py", 1, "not-in-tree", False, None, 7, beside.format("tests/test_new_thing.py"))]),
        ("typo", "failed", "", typo, "recipes/typo.patch", (), "", (),
         [("tests/test_no_such_file_here.py", 1, "failed", False, None, 6, typo)]),
        ("top", "failed", "", top, "recipes/top.patch", (), "", (),
         [("extra/sub/new.py", 1, "failed", False, None, 7, top)]),
        ("deeper", "failed", "", deeper, "recipes/deeper.patch", (), "", (),
         [("x/sched.py", 1, "failed", False, None, 7, deeper)]),
        ("deps", "not-in-tree", "", f"nothing of it is in this site-packages ({REQS}, setup.py): {elsewhere}",
         "recipes/deps.patch", (REQS, "setup.py"), "site-packages", (),
         [(REQS, 1, "not-in-tree", False, None, 6, beside.format(REQS)),
          ("setup.py", 0, "not-in-tree", False, None, 9, beside.format("setup.py"))])]
    assert r.warnings == [] and r.modes == {"vllm/__init__.py": 0o100755}
    assert r.source == src.identity and r.vllm == "0.29.0"


@pytest.mark.network  # asks the index, which has only wheels of 0.15.0
def test_without_the_releases_listing_paths_beside_the_package_are_judged_by_their_top_folder(tmp_path):
    m = load_manifest(series(tmp_path, {"deps": udiff(REQS, "numpy\n", "numpy\nregex\n"),
                                        "test": udiff("tests/test_no_such_file_here.py", "a\n", "b\n")},
                                       releases=">=0.15.0"))
    r = evaluate_release(m, "0.15.0", site_packages(tmp_path, "0.15.0"))
    assert [(p.id, str(p.status), p.skipped) for p in r.patches] == \
        [("deps", "not-in-tree", (REQS,)), ("test", "not-in-tree", ("tests/test_no_such_file_here.py",))]
    assert len(r.warnings) == 1
    assert r.warnings[0].startswith("the listing of vllm 0.15.0's sdist cannot be read (vllm 0.15.0 has no source "
                                    "distribution on the index")
    assert r.warnings[0].endswith("): paths beside the package are judged by their top folder")


RENAME = "diff --git a/vllm/a.py b/vllm/b.py\nsimilarity index 100%\nrename from vllm/a.py\nrename to vllm/b.py\n"
ONTO = "the patch renames vllm/a.py onto a file that exists"


@needs_patch
def test_a_failed_hunk_names_the_unapplied_patches_whose_added_lines_it_stands_on(tmp_path):
    """Only a line the tree lacks and an earlier patch that did not apply adds (not one of that patch's context
    lines, not one the tree has elsewhere, not a line the hunk adds itself); each such patch named once, with the
    hunks standing on it; GNU patch -F0 fails the same hunks on the same bytes."""
    base = PRISTINE.replace("line 27\n", "common = 1\n")
    first = base.replace("line 10\n", "line 10\nwatermark = 1\ncommon = 1\nshared = 2\n").replace(
        "line 20\n", "line 20\nlate = 1\n")
    other = "".join(f"other {i}\n" for i in range(1, 21))
    helped = other.replace("other 5\n", "other 5\nhelper = 3\n")
    diffs = {
        "first": udiff(MOD, base, first),  # fails: its context line 8 is not in the tree
        "helper": udiff("vllm/other.py", other, helped),  # fails too
        # a hunk on each of first's two blocks (with one line of context: none of first's), one on helper's line:
        # both named, first once for its two hunks
        "second": udiff(MOD, first, first.replace("watermark = 1\n", "watermark = 2\n").replace("late = 1\n",
                                                                                               "late = 2\n"), n=1)
        + udiff("vllm/other.py", helped, helped.replace("helper = 3\n", "helper = 4\n")),
        # its hunk has "common = 1" (the tree has it) in its context and adds "shared = 2": neither is a reason
        "third": udiff(MOD, base, base.replace("line 25\n", "line 25\nshared = 2\n").replace("line 24\n",
                                                                                          "line 24?\n")),
        "fourth": udiff("vllm/other.py", other, other.replace("other 15\n", "other 15!\n")),  # fails on its own
        "fifth": RENAME,
    }
    tree = {"vllm/a.py": "a = 1\n", "vllm/b.py": "b = 1\n",  # fifth fails without a hunk: it stands on nothing
            MOD: base.replace("line 8\n", "line eight\n").replace("line 24\n", "line twenty-four\n"),
            "vllm/other.py": other.replace("other 4\n", "other four\n").replace("other 16\n", "other sixteen\n")}
    r = evaluate_release(load_manifest(series(tmp_path, diffs)), "0.29.0", folder(tmp_path, tree))
    assert {p.id: str(p.status) for p in r.patches} == {x: "failed" for x in diffs}
    on_first = "; it stands on lines first adds, which does not apply here"
    second = r.patch("second")
    assert [(h.file, h.number, h.message) for h in second.hunks] == [
        (MOD, 1, "context not found; nearest candidate at line 10" + on_first),
        (MOD, 2, "context not found; nearest candidate at line 20" + on_first),
        ("vllm/other.py", 3, "context not found; nearest candidate at line 2; it stands on lines helper adds, "
                             "which does not apply here")]
    assert second.message == (f"hunk 1 ({MOD}): failed - context not found; nearest candidate at line 10; hunk 2 "
                              f"({MOD}): failed - context not found; nearest candidate at line 20; hunk 3 "
                              "(vllm/other.py): failed - context not found; nearest candidate at line 2; hunks 1, 2 "
                              "stand on lines first adds, which does not apply here: mend first first; hunk 3 stands "
                              "on lines helper adds, which does not apply here: mend helper first")
    for own in ("first", "third", "fourth", "fifth"):
        assert "stands on" not in r.patch(own).message and not any("stands on" in h.message
                                                                    for h in r.patch(own).hunks)
    assert r.patch("third").message == f"hunk 1 ({MOD}): failed - context not found; nearest candidate at line 21"
    assert r.patch("fifth").message == f"hunk 0 (vllm/b.py): failed - {ONTO}"
    assert gnu_patch(tmp_path, tree, diffs["second"], "-F0")[1].count("FAILED at") == 3


def test_what_a_series_says_of_each_patch_word_for_word(tmp_path):
    """Evidence, warnings and messages of upstream, not-targeted, excluded and blocked patches, exactly."""
    manifest = project(tmp_path, releases=">=0.28.0")
    text = manifest.read_text().replace("after: [first]", "after: [first]\n    present: {file: vllm/sched.py, "
                                        "contains: \"serve_hits = True\"}")
    manifest.write_text(text + "  - {id: third, releases: '>=0.28.0', patch: recipes/second/fix.patch, "
                        "after: [first, second]}\n")
    m = load_manifest(manifest)
    r = evaluate_release(m, "0.29.0", tree(tmp_path, "t", PRISTINE))
    assert [(p.id, str(p.status), p.evidence, p.message) for p in r.patches] == [
        ("first", "applies", "", ""), ("second", "applies", "", ""),
        ("third", "failed", "", "every hunk is already in the tree")]
    assert r.warnings == []  # the probes hold after applying: nothing to say of them
    r = evaluate_release(m, "0.30.0", tree(tmp_path, "u", FIRST))
    probe = "vllm/sched.py:11 contains 'watermark = tokens - 1'"
    assert [(p.id, str(p.status), p.evidence, p.message) for p in r.patches] == [
        ("first", "upstream", f"probe: {probe}", ""),
        ("second", "not-targeted", "outside releases '<0.30.0,>=0.28.0'; vllm/sched.py lacks 'serve_hits = True'", ""),
        ("third", "applies", "", "")]
    assert r.warnings == [f"first is upstream in 0.30.0 (probe: {probe}) but releases '>=0.28.0' still includes it: "
                          "narrow the range to retire the patch there"]
    r = evaluate_release(m, "0.29.0", tree(tmp_path, "v", PRISTINE.replace("line 11\n", "line eleven\n")),
                         exclude=frozenset({"second"}))
    assert [(p.id, str(p.status), p.message) for p in r.patches] == [
        ("first", "failed", f"hunk 1 ({MOD}): failed - context not found; nearest candidate at line 8"),
        ("second", "excluded", "left out on purpose"),
        ("third", "blocked", "comes after first (failed)")]
    r = evaluate_release(m, "0.29.0", tree(tmp_path, "w", PRISTINE.replace("line 11\n", "line eleven\n")))
    assert r.patch("third").message == "comes after first (failed), second (blocked)"
    assert r.patch("first").sha256 == hashlib.sha256((tmp_path / "recipes/first/fix.patch").read_bytes()).hexdigest()


def test_every_probe_of_a_patch_must_hold_and_each_is_named(tmp_path):
    manifest = project(tmp_path)
    manifest.write_text(manifest.read_text().replace(
        'present: {file: vllm/sched.py, contains: "watermark = tokens - 1"}',
        'present: [{file: vllm/sched.py, contains: "watermark = tokens - 1"}, {file: vllm/sched.py, contains: '
        '"line 30"}]'))
    r = evaluate_release(load_manifest(manifest), "0.29.0", tree(tmp_path, "t", FIRST))
    assert (str(r.patch("first").status), r.patch("first").evidence) == \
        ("upstream", "probe: vllm/sched.py:11 contains 'watermark = tokens - 1'; vllm/sched.py:31 contains 'line 30'")
    r = evaluate_release(load_manifest(manifest), "0.29.0", tree(tmp_path, "u", PRISTINE.replace("line 30\n", "")))
    assert (str(r.patch("first").status), r.patch("first").evidence) == ("applies", "")
    r = evaluate_release(load_manifest(manifest), "0.30.0", tree(tmp_path, "v", PRISTINE))  # outside its releases
    assert (str(r.patch("first").status), r.patch("first").evidence) == \
        ("not-targeted", "outside releases '<0.30.0,>=0.28.0'; vllm/sched.py lacks 'watermark = tokens - 1'; "
                         "vllm/sched.py:30 contains 'line 30'")


def test_reverse_apply_and_a_blind_probe_are_warned_about_word_for_word(tmp_path):
    manifest = project(tmp_path)
    manifest.write_text(manifest.read_text().replace('contains: "watermark = tokens - 1"', 'contains: "nowhere"'))
    r = evaluate_release(load_manifest(manifest), "0.29.0", tree(tmp_path, "t", PRISTINE))
    assert r.warnings == ["first: its present probe does not hold after applying it (vllm/sched.py lacks 'nowhere'): "
                          "the probe cannot detect the fix"]
    manifest.write_text(manifest.read_text().replace('present: {file: vllm/sched.py, contains: "nowhere"}', "fuzz: 0"))
    r = evaluate_release(load_manifest(manifest), "0.29.0", tree(tmp_path, "u", FIRST))
    assert (str(r.patch("first").status), r.patch("first").evidence) == \
        ("upstream", "reverse-apply: every hunk is already in the pristine tree (weak evidence: add a present probe)")
    assert r.warnings == ["first: every hunk is already in 0.29.0; if the fix is upstream there, narrow releases to "
                          "retire the patch"]


def test_partly_upstream_names_the_hunks_already_there_and_those_failing(tmp_path):
    after = PRISTINE.replace("line 3\n", "line 3!\n").replace("line 15\n", "line 15!\n").replace("line 27\n",
                                                                                               "line 27!\n")
    m = load_manifest(series(tmp_path, {"p": udiff(MOD, PRISTINE, after)}))
    half = PRISTINE.replace("line 3\n", "line 3!\n").replace("line 27\n", "line 27!\n").replace("line 14\n", "l14\n")
    p = evaluate_release(m, "0.29.0", folder(tmp_path, {MOD: half})).patch("p")
    assert (str(p.status), p.message) == ("partly-upstream", "hunks 1, 3 already in vLLM 0.29.0, hunk 2 failing: port "
                                                             "the patch (drop what is upstream)")
    assert [str(h.status) for h in p.hunks] == ["already-applied", "failed", "already-applied"]
    p = evaluate_release(m, "0.29.0", folder(tmp_path / "u", {MOD: half.replace("l14\n", "line 14\n")})).patch("p")
    assert (str(p.status), p.message) == ("partly-upstream", "hunks 1, 3 already in vLLM 0.29.0, the other hunks would "
                                                             "apply: port the patch (drop what is upstream)")


@needs_patch
def test_the_fuzz_the_manifest_allows_places_a_hunk_where_gnu_patch_does(tmp_path):
    """A hunk whose outer context line drifted: refused at fuzz 0 (as GNU patch -F0 refuses it), placed at
    fuzz 1 when the manifest allows it (as patch -F1 places it), also beside a file that is missing."""
    drifted = PRISTINE.replace("line 13\n", "line thirteen\n")
    diff = udiff(MOD, PRISTINE, FIRST)
    m = load_manifest(series(tmp_path, {"strict": diff, "missing": udiff("vllm/gone.py", "a\n", "b\n") + diff,
                                        "fuzzy": diff}, {"fuzzy": ", fuzz: 1", "missing": ", fuzz: 1"}))
    r = evaluate_release(m, "0.29.0", folder(tmp_path, {MOD: drifted}))
    fuzzed = (MOD, 1, "fuzz", True, 8, 6, "placed with fuzz 1")
    assert [(p.id, str(p.status), [(h.file, h.number, str(h.status), h.applied, h.line, h.patch_line, h.message)
                                   for h in p.hunks]) for p in r.patches] == [
        ("strict", "failed", [(MOD, 1, "fuzz", False, 8, 6, "matches only with fuzz 1 at line 8 (GNU patch would "
                               "place it there); refused: allow fuzz for this patch in the manifest only if you "
                               "checked that place")]),
        ("missing", "failed", [("vllm/gone.py", 1, "failed", False, None, 6, f"vllm/gone.py: not in "
                                f"{r.source}{NO_LAYOUT}"), (MOD, 2, "fuzz", True, 8, 12, "placed with fuzz 1")]),
        ("fuzzy", "applies", [fuzzed])]
    assert r.changed == {MOD: drifted.replace("line 10\n", "line 10\nwatermark = tokens - 1\n").encode()}
    assert gnu_patch(tmp_path, {MOD: drifted}, diff, "-F0")[0] == 1
    code, said = gnu_patch(tmp_path, {MOD: drifted}, diff, "-F1")
    assert code == 0 and "Hunk #1 succeeded at 8 with fuzz 1." in said


def test_modes_follow_the_series_through_edits_and_deletions(tmp_path):
    modes = ("diff --git a/vllm/run.py b/vllm/run.py\nold mode 100644\nnew mode 100755\n"
             "diff --git a/vllm/tool.py b/vllm/tool.py\nold mode 100644\nnew mode 100755\n")
    delete = "diff --git a/vllm/tool.py b/vllm/tool.py\ndeleted file mode 100755\n--- a/vllm/tool.py\n+++ /dev/null\n" \
             "@@ -1 +0,0 @@\n-tool()\n"
    m = load_manifest(series(tmp_path, {"modes": modes, "edit": udiff("vllm/run.py", "run()\n", "run(1)\n"),
                                        "delete": delete}))
    r = evaluate_release(m, "0.29.0", folder(tmp_path, {"vllm/run.py": "run()\n", "vllm/tool.py": "tool()\n"}))
    assert [(p.id, str(p.status), p.files) for p in r.patches] == [
        ("modes", "applies", ("vllm/run.py", "vllm/tool.py")), ("edit", "applies", ("vllm/run.py",)),
        ("delete", "applies", ("vllm/tool.py",))]
    assert r.modes == {"vllm/run.py": 0o100755}
    assert r.changed == {"vllm/run.py": b"run(1)\n", "vllm/tool.py": None}


def test_only_the_patches_a_release_takes_are_read_each_its_own_file(tmp_path):
    """A patch outside the release is not read (its CRLF file says nothing), nor one left out (its broken file is
    no refusal); a patch with a file per range gets the file of each release, also when the releases share
    their reads; a release it has no file for fails it, saying so."""
    write_patch(tmp_path, "recipes/old.patch", udiff("vllm/old.py", "a\n", "b\n").replace("\n", "\r\n"),
                header="Description: an old fix\r\n---\r\n")
    write_patch(tmp_path, "recipes/broken.patch", udiff(MOD, PRISTINE, FIRST) + "+one line too many\n")
    write_patch(tmp_path, "recipes/fix-0.28.patch", udiff(MOD, PRISTINE, FIRST))
    write_patch(tmp_path, "recipes/fix-0.29.patch", udiff(MOD, PRISTINE, PRISTINE.replace("line 20\n", "line 20!\n")))
    manifest = write_manifest(tmp_path, """
        schema: 1
        targets: {"0.28.0": {}, "0.29.0": {}}
        patches:
          - {id: old, releases: "<0.20", patch: recipes/old.patch}
          - {id: broken, releases: ">=0.28.0", patch: recipes/broken.patch}
          - id: fix
            releases: ">=0.27.0"
            patch: {"==0.28.0": recipes/fix-0.28.patch, ">=0.29.0": recipes/fix-0.29.patch}
        """)
    m = load_manifest(manifest)
    loads: dict = {}
    got = {v: evaluate_release(m, v, tree(tmp_path, v, PRISTINE), frozenset({"broken"}), loads)
           for v in ("0.28.0", "0.29.0")}
    for v, r in got.items():
        assert [(p.id, str(p.status), p.patch_file) for p in r.patches] == [
            ("old", "not-targeted", None), ("broken", "excluded", None),
            ("fix", "applies", f"recipes/fix-{v[:4]}.patch")]
        assert r.warnings == []
    assert got["0.28.0"].changed == {MOD: FIRST.encode()}
    assert got["0.29.0"].changed == {MOD: PRISTINE.replace("line 20\n", "line 20!\n").encode()}
    r = evaluate_release(m, "0.27.0", tree(tmp_path, "0.27.0", PRISTINE), frozenset({"broken"}))
    assert [(p.id, str(p.status), p.message) for p in r.patches][2] == \
        ("fix", "failed", "patch fix: no patch file is given for vLLM 0.27.0")


def test_a_patched_module_that_no_longer_compiles_names_its_line_and_the_patches_that_wrote_it(tmp_path):
    from patchset.core.series import python_syntax_errors, syntax_error

    module = "".join(f"x{i} = {i}\n" for i in range(1, 31))
    broken = module.replace("x10 = 10\n", "x10 = (10\n")
    m = load_manifest(series(tmp_path, {"first": udiff(MOD, module, broken),
                                        "second": udiff(MOD, broken, broken.replace("x25 = 25\n", "x25 = 26\n")),
                                        "other": udiff("vllm/other.py", "x = 1\n", "x = 2\n")}))
    r = evaluate_release(m, "0.29.0", folder(tmp_path, {MOD: module, "vllm/other.py": "x = 1\n"}))
    assert [str(p.status) for p in r.patches] == ["applies"] * 3
    assert syntax_error(r) == ("vllm/sched.py:10: the patched file does not compile: '(' was never closed",
                               "first, second")
    r = evaluate_release(m, "0.29.0", folder(tmp_path / "u", {MOD: module, "vllm/other.py": "x = 1\n"}),
                         exclude=frozenset({"first", "second"}))
    assert syntax_error(r) is None
    found = python_syntax_errors({"vllm/gone.py": None, "vllm/a.txt": b"(", "vllm/b.py": b"x = 1\n",
                                  "vllm/c.py": b"def f(:\n"})
    assert [(path, e.lineno, e.msg) for path, e in found] == [("vllm/c.py", 1, "invalid syntax")]
    # judged as Python imports the module, not under patchset's own ``from __future__ import annotations``: an
    # assignment expression in a local annotation is valid, and refused only where the module asks for the future
    walrus = b"def f():\n    x: (y := 1) = 1\n"
    found = python_syntax_errors({"vllm/a.py": walrus, "vllm/b.py": b"from __future__ import annotations\n" + walrus})
    assert [(path, e.lineno, e.msg) for path, e in found] == \
        [("vllm/b.py", 3, "'named expression' can not be used within an annotation")]


def source_tree(tmp_path: Path, files: dict[str, str]) -> DirSource:
    root = tmp_path / "src"
    for path, text in {"vllm/__init__.py": "", "PKG-INFO": "Name: vllm\nVersion: 0.29.0\n", "setup.py": "setup()\n",
                       MOD: PRISTINE, **files}.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return DirSource.release(root, "0.29.0")


def test_a_path_read_in_the_wrong_layout_is_named_with_the_layout_that_finds_it(tmp_path):
    """In an upstream tree, where every path is checked: each reading of a path that finds a file is named with the
    setting that gives it, and a path no reading finds says so."""
    diff = udiff(MOD, PRISTINE, FIRST)
    diffs = {"rooted": diff,  # repository layout under root: vllm
             "monorepo": diff.replace("a/vllm/", "a/svc/fork/vllm/").replace("b/vllm/", "b/svc/fork/vllm/"),
             "extra": diff.replace("a/vllm/", "a/x/").replace("b/vllm/", "b/x/"),  # package layout, one more part
             "stray": diff.replace("a/vllm/", "a/_vllm/").replace("b/vllm/", "b/_vllm/"),  # a folder not the package's
             "basename": udiff("pkg/sub/setup.py", "setup()\n", "setup(1)\n"),  # only the name: no reading
             "created": new_file("x/new.py", "x = 1\n") + udiff("vllm/gone.py", "a\n", "b\n")}  # and the next
    m = load_manifest(series(tmp_path, diffs, {"rooted": ", root: vllm"}))
    src = source_tree(tmp_path, {})
    messages = {p.id: p.message for p in evaluate_release(m, "0.29.0", src).patches}
    assert messages == {
        "rooted": f"vllm/vllm/sched.py: not in {src.identity}; vllm/sched.py exists: the patch is in repository "
                  "layout: drop root: vllm",
        "monorepo": f"svc/fork/vllm/sched.py: not in {src.identity}; vllm/sched.py exists: its paths have 2 more "
                    "leading components: strip: 3",
        "extra": f"x/sched.py: not in {src.identity}; vllm/sched.py exists: package layout with one more leading "
                 "component: root: vllm, strip: 2",
        "stray": f"_vllm/sched.py: not in {src.identity}; vllm/sched.py exists: package layout with one more leading "
                 "component: root: vllm, strip: 2",
        "basename": f"pkg/sub/setup.py: not in {src.identity}{NO_LAYOUT}",
        "created": f"vllm/gone.py: not in {src.identity}{NO_LAYOUT}"}


def test_a_deletion_or_a_rename_done_already_is_upstream_by_reverse_apply(tmp_path):
    """Not a missing file: the deleted file gone, the renamed one at its new path (only a probe would be proof)."""
    delete = "diff --git a/vllm/tool.py b/vllm/tool.py\ndeleted file mode 100644\n--- a/vllm/tool.py\n+++ /dev/null\n" \
             "@@ -1 +0,0 @@\n-tool()\n"
    m = load_manifest(series(tmp_path, {"delete": delete, "rename": RENAME}))
    r = evaluate_release(m, "0.29.0", folder(tmp_path, {"vllm/b.py": "a = 1\n", MOD: PRISTINE}))
    weak = "reverse-apply: every hunk is already in the pristine tree (weak evidence: add a present probe)"
    assert seen(r) == [
        ("delete", "upstream", weak, "", "recipes/delete.patch", (), "", (),
         [("vllm/tool.py", 1, "already-applied", False, 1, 7, "the file is gone already")]),
        ("rename", "upstream", weak, "", "recipes/rename.patch", (), "", (),
         [("vllm/b.py", 0, "already-applied", False, 1, 3, "renames vllm/a.py: done already")])]


@pytest.mark.network  # the real vLLM 0.29.0 wheel (its members fetched together, then cached)
def test_the_series_on_the_real_wheel_of_a_release(tmp_path):
    from patchset.sources import open_source

    wheel = open_source("wheel", "0.29.0")
    envs = wheel.read("vllm/envs.py").decode()
    line = envs.splitlines(keepends=True)[2]  # the blank line after the licence header
    diffs = {"envs": udiff("vllm/envs.py", envs, envs.replace(line, line + "# patched\n", 1))
             + udiff(REQS, "numpy\n", "numpy\nregex\n")}
    r = evaluate_release(load_manifest(series(tmp_path, diffs)), "0.29.0", wheel)
    assert seen(r) == [("envs", "applies", "", "", "recipes/envs.patch", (REQS,), "wheel", ("vllm/envs.py",),
                        [("vllm/envs.py", 1, "exact", True, 1, 6, ""),
                         (REQS, 2, "not-in-tree", False, None, 15, f"this wheel holds only the package: {REQS} lies "
                                                                    "beside it")])]
    assert r.source == wheel.identity
