"""Targets pinned to a git commit, on a real history made of real release trees (tests/pinnedfixture.py).

The commits hold 0.29.0's and 0.30.0's trees, so every verb must say of each commit what it says of the
release whose tree it holds: this repository's own series, checked, applied and carried from one to
the other.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
import subprocess
from pathlib import Path

import git
import pytest
from pinnedfixture import SUBTREES, nightly, release_history

from patchset.cache import Cache, release_uses
from patchset.cli import main
from patchset.core.manifest_load import ManifestErrors, load_manifest
from patchset.core.pristine import open_release, target_wheel
from patchset.errors import ManifestError, PatchsetError
from patchset.sources.commit import CommitSource
from patchset.verbs.apply import apply_series
from patchset.verbs.cache import cache_info, prune
from patchset.verbs.check import check
from patchset.verbs.next import next_release
from patchset.verbs.port import port

pytest_plugins = ["conftest_docker"]
pytestmark = pytest.mark.network  # the release trees come from the sdists on the package index

REPO = Path(__file__).resolve().parent.parent
SCHED = "vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py"


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("history")
    return root / "vllm", release_history(root / "vllm")


def pins(history, how: str = "path") -> dict[str, tuple[str, str]]:
    """release -> (the nightly version pinned at the commit holding its tree, its source: line)."""
    repo, commits = history
    out = {}
    for release, sha in commits.items():
        where = repo.as_uri() if how == "file" else str(repo)
        out[release] = (nightly(release, sha), f'{{git: "{where}", commit: "{sha}"}}')
    return out


def this_series(dest: Path, targets: str, *, widen: bool = False) -> Path:
    """This repository's manifest and recipes at ``dest``, with ``targets`` added under targets:."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(REPO / "recipes", dest / "recipes", dirs_exist_ok=True)
    text = (REPO / "patches.yaml").read_text()
    text = text.replace('  "0.30.0": {image: "vllm/vllm-openai:v0.30.0"}\n',
                        '  "0.30.0": {image: "vllm/vllm-openai:v0.30.0"}\n' + targets)
    if widen:
        text = text.replace('">=0.28.0,<0.30.0"', '">=0.28.0"').replace('">=0.29,<0.30"', '">=0.29"')
    (dest / "patches.yaml").write_text(text)
    return dest / "patches.yaml"


def pinned_targets(history, how: str = "path") -> str:
    return "".join(f'  "{v}":\n    source: {src}\n' for v, src in pins(history, how).values())


def verdicts(result) -> list[tuple[str, str, tuple[str, ...], str]]:
    return [(p.id, str(p.status), tuple(str(h.status) for h in p.hunks), p.evidence or "") for p in result.patches]


@pytest.mark.parametrize("widen", [False, True], ids=["as-is", "ranges-open"])
def test_the_series_says_the_same_of_each_commit_as_of_the_release_whose_tree_it_holds(history, tmp_path, widen):
    manifest = load_manifest(this_series(tmp_path, pinned_targets(history, "file"), widen=widen))
    report = check(manifest)
    by = {t.vllm: t for t in report.targets}
    for release, (version, _) in pins(history).items():
        assert verdicts(by[version]) == verdicts(by[release]), release
        assert by[version].source.startswith("git:") and by[version].source.endswith(history[1][release][:12])
    assert [str(p.status) for p in by[pins(history)["0.29.0"][0]].patches] == ["applies"] * 3
    # With ranges left open 0.30.0 is targeted: each fix is upstream there, on the commit as on the release.
    assert {str(p.status) for p in by[pins(history)["0.30.0"][0]].patches} == {"upstream"}


def test_apply_into_a_copy_of_the_commit_tree(history, tmp_path):
    manifest = load_manifest(this_series(tmp_path / "fork", pinned_targets(history)))
    version = pins(history)["0.29.0"][0]
    source = open_release(manifest, version)
    assert isinstance(source, CommitSource)
    copy = tmp_path / "tree"
    shutil.copytree(source.root, copy)
    report = apply_series(manifest, version, copy, compile_bytecode=False)
    assert report.ok
    on_release = check(manifest, ["0.29.0"]).targets[0].files
    assert (copy / SCHED).read_bytes() == on_release[SCHED]  # the same bytes the release's series gives
    record = json.loads((copy / "vllm" / ".patchset-provenance.json").read_text())
    assert record["vllm"] == version
    assert (Path(source.root) / SCHED).read_bytes() != on_release[SCHED]  # the cache's tree stays pristine


def _fork_on(tmp: Path, first: str, first_source: str | None, extra: str = "") -> Path:
    """A fork whose only carried target is ``first``; its patches' ranges stop before 0.30."""
    dest = tmp
    dest.mkdir(parents=True, exist_ok=True)
    for rid in ("offload-finished-watermark", "offload-recurrent-load-boundary", "offload-mtp-eagle-serve"):
        shutil.copytree(REPO / "recipes" / rid, dest / "recipes" / rid)
        for old in (dest / "recipes" / rid).glob("vllm-0.28.patch"):
            old.unlink()
    target = f'  "{first}":\n    source: {first_source}\n' if first_source else f'  "{first}": {{}}\n'
    (dest / "patches.yaml").write_text(f"""schema: 1
targets:
{target}{extra}patches:
  - id: offload-finished-watermark
    releases: "<0.30"
    patch: recipes/offload-finished-watermark/fix.patch
    present:
      file: {SCHED}
      contains: "max(req.num_prompt_tokens, req.num_tokens - 1)"
  - id: offload-recurrent-load-boundary
    releases: "<0.30"
    patch: recipes/offload-recurrent-load-boundary/vllm-0.29.patch
    present:
      file: {SCHED}
      contains: "for i in range(first_fresh_gpu_block_idx, num_gpu_blocks):"
  - id: offload-mtp-eagle-serve
    releases: "<0.30"
    patch: recipes/offload-mtp-eagle-serve/vllm-0.29.patch
    after: [offload-finished-watermark]
    present:
      file: {SCHED}
      contains: "and not self.req.is_finished()"
""")
    return dest / "patches.yaml"


def _results(report) -> dict[str, tuple[str, str]]:
    return {p.id: (str(p.result), p.evidence or "") for p in report.patches}


def test_next_and_port_from_the_first_commit_to_the_second_as_from_release_to_release(history, tmp_path):
    (c1, s1), (c2, s2) = pins(history)["0.29.0"], pins(history)["0.30.0"]
    commits = _fork_on(tmp_path / "commits", c1, s1, f'  "{c2}":\n    source: {s2}\n')
    releases = _fork_on(tmp_path / "releases", "0.29.0", None)

    on_commits = next_release(load_manifest(commits), c2)
    on_releases = next_release(load_manifest(releases), "0.30.0")
    assert [(p.id, p.status, p.from_release) for p in on_commits.patches] == [
        (p.id, p.status, c1) for p in on_releases.patches]
    assert [str(p.status) for p in on_commits.patches] == ["upstream", "upstream", "upstream"]

    dry = port(load_manifest(commits), c2, dry_run=True)
    assert _results(dry) == _results(port(load_manifest(releases), "0.30.0", dry_run=True))
    assert {r for r, _ in _results(dry).values()} == {"retired"}
    done = port(load_manifest(commits), c2)  # the pristine base is the first commit's tree, V the second's
    assert done.ok
    text = commits.read_text()
    assert text.count(f"# retired for {c2}: upstream there") == 3
    assert load_manifest(commits).target(c2).source.commit == history[1]["0.30.0"]  # its source is kept


def test_a_port_between_commits_conflicts_where_the_release_port_does_and_leaves_its_workspace(history, tmp_path):
    """Without the probes that say the fixes are upstream, two patches conflict on 0.30.0's tree: on the
    commits exactly as on the releases, and the workspace holds the second commit's files."""
    (c1, s1), (c2, s2) = pins(history)["0.29.0"], pins(history)["0.30.0"]
    commits = _fork_on(tmp_path / "commits", c1, s1, f'  "{c2}":\n    source: {s2}\n')
    releases = _fork_on(tmp_path / "releases", "0.29.0", None)
    for path in (commits, releases):
        path.write_text(re.sub(r"\n    present:\n      file: .*\n      contains: .*(?=\n  - id: offload-mtp|\n$)",
                               "", path.read_text()))
    on_commits = port(load_manifest(commits), c2)
    assert _results(on_commits) == _results(port(load_manifest(releases), "0.30.0", dry_run=True))
    conflicts = [p for p in on_commits.patches if str(p.result) == "conflict"]
    assert conflicts and all(Path(p.workspace).is_dir() for p in conflicts)
    assert c2 in (Path(conflicts[0].workspace) / "README.md").read_text()


def test_port_from_a_commit_to_the_next_release_on_the_index(history, tmp_path):
    c1, s1 = pins(history)["0.29.0"]
    commits = _fork_on(tmp_path / "commits", c1, s1)
    releases = _fork_on(tmp_path / "releases", "0.29.0", None)
    report = port(load_manifest(commits), "0.30.0")
    assert _results(report) == _results(port(load_manifest(releases), "0.30.0", dry_run=True))
    assert report.ok
    added = load_manifest(commits).target("0.30.0")
    assert added.source is None  # the release's tree is its sdist: the commit's source is not copied to it


def test_port_from_a_release_to_a_commit(history, tmp_path):
    c2, s2 = pins(history)["0.30.0"]
    releases = _fork_on(tmp_path / "fork", "0.29.0", None, f'  "{c2}":\n    source: {s2}\n')
    report = port(load_manifest(releases), c2, dry_run=True)
    assert {r for r, _ in _results(report).values()} == {"retired"}


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.mark.parametrize("commit, said", [
    ("251bc84", "is not a full commit id (it is abbreviated)"),
    ("251BC8456987B089152AF24F5712F7AC24777952", "is not a full commit id"),
    ("main", "is not a full commit id"),
])
def test_a_short_or_malformed_commit_is_refused_at_its_manifest_line(history, tmp_path, capsys, commit, said):
    path = this_series(tmp_path, f'  "0.29.1.dev1+g251bc8456":\n    source:\n      git: "{history[0]}"\n'
                                 f'      commit: "{commit}"\n')
    with pytest.raises(ManifestErrors) as e:
        load_manifest(path)
    assert e.value.line == _line_of(path, "commit:") and said in e.value.message
    assert main(["validate", "--manifest", str(path)]) == 2
    assert f"{path}:{_line_of(path, 'commit:')}: target 0.29.1.dev1+g251bc8456: source.commit" in \
        capsys.readouterr().err


def test_a_commit_the_repository_does_not_have_is_bad_input_at_its_line(history, tmp_path, capsys):
    repo, commits = history
    missing = "f" * 40
    path = this_series(tmp_path, f'  "0.29.1.dev1+gfffffffff":\n    source: {{git: "{repo}", commit: "{missing}"}}\n')
    load_manifest(path)  # well formed: only the repository can say it lacks the commit
    with pytest.raises(ManifestError) as e:
        check(load_manifest(path), ["0.29.1.dev1+gfffffffff"])
    assert e.value.line == _line_of(path, missing)
    assert main(["check", "--manifest", str(path), "--vllm", "0.29.1.dev1+gfffffffff"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:{_line_of(path, missing)}: target 0.29.1.dev1+gfffffffff: {repo} has no commit {missing}" in err
    assert main(["check", "--manifest", str(path), "--vllm", "0.29.1.dev1+gfffffffff", "--format", "json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and doc["error"]["line"] == _line_of(path, missing)


def test_a_repository_that_is_not_there_is_bad_input_at_its_line(tmp_path):
    source = '{git: "no/such/clone", commit: "' + "a" * 40 + '"}'
    path = this_series(tmp_path, f'  "0.29.1.dev1+g0":\n    source: {source}\n')
    with pytest.raises(ManifestErrors) as e:
        load_manifest(path)
    assert "source.git no/such/clone is no folder here" in e.value.message
    assert e.value.line == _line_of(path, "no/such/clone")


def test_the_cache_holds_one_tree_per_commit_verified_and_prune_removes_it(history, tmp_path, monkeypatch):
    repo, commits = history
    monkeypatch.setenv("PATCHSET_CACHE", str(tmp_path / "cache"))
    manifest = load_manifest(_fork_on(tmp_path / "fork", *pins(history)["0.29.0"],
                                      '  "{}":\n    source: {}\n'.format(*pins(history, "file")["0.30.0"])))
    for _ in range(2):
        assert check(manifest).ok
    entries = sorted((tmp_path / "cache" / "commits").iterdir())
    assert [e.name for e in entries] == sorted(commits.values())
    clone = git.Repo(repo)
    for e in entries:
        about = json.loads((e / "about.json").read_text())
        assert about["tree"] == clone.commit(e.name).tree.hexsha
        files = sorted(str(p.relative_to(e / "tree")) for p in (e / "tree").rglob("*") if p.is_file())
        assert files == sorted(clone.git.ls_tree("-r", "--name-only", e.name).splitlines())
        assert all(any(fnmatch.fnmatch(f, sub) or f.startswith(sub + "/") or f == sub for sub in SUBTREES)
                   for f in files)
    releases = {r for r in cache_info().releases()}
    assert releases == {f"vllm {pins(history)[r][0]}" for r in ("0.29.0", "0.30.0")}
    held = prune(keep=0)
    assert sorted(held.in_use) == sorted(releases) and not held.removed  # this process still uses them
    release_uses()
    result = prune(keep=0)
    assert {e.path.name for e in result.removed if e.kind == "commits"} == set(commits.values())
    assert not list((tmp_path / "cache" / "commits").iterdir())


def test_a_git_source_option_reads_the_commit_from_a_local_clone(history, tmp_path):
    """``--source git:PATH``: a release at its tag, a commit target at its commit, from the same clone."""
    repo, commits = history
    manifest = load_manifest(this_series(tmp_path, pinned_targets(history, "file")))
    version = pins(history)["0.29.0"][0]
    report = check(manifest, [version, "0.29.0"], source=f"git:{repo}")
    assert [t.source for t in report.targets] == [f"git:{repo}@{commits['0.29.0']}={commits['0.29.0'][:12]}",
                                                  f"git:{repo}@v0.29.0={commits['0.29.0'][:12]}"]
    assert verdicts(report.targets[0]) == verdicts(report.targets[1])
    assert [str(p.status) for p in report.targets[0].patches] == ["applies"] * 3


def test_a_pinned_target_is_ordered_by_pep_440_and_its_ranges_admit_it():
    from patchset.versions import Release, Releases

    nightly_after = "0.31.1.dev45+gac9126e58"
    assert Release("0.31.0") < Release(nightly_after) < Release("0.31.1") < Release("0.32.0")
    assert nightly_after in Releases(">=0.31.0") and nightly_after in Releases("<0.32")
    assert nightly_after not in Releases("<0.31.1")  # a dev release of 0.31.1 is a pre-release of it
    assert "0.30.0+fork.3" in Releases(">=0.30.0") and "0.30.0+fork.3" in Releases("==0.30.0")
    assert "0.30.0+fork.3" not in Releases("<0.30.0")


def test_a_release_candidate_sits_outside_both_sides_of_its_releases_boundary(tmp_path):
    """PEP 440: ``<0.31.0`` leaves out 0.31.0's pre-releases and ``>=0.31.0`` is after them: a target
    0.31.0rc1 has no patch file when the files split there, and the manifest says so at the patch line."""
    from patchset.verbs.next import newer_releases
    from patchset.versions import Releases

    assert "0.31.0rc1" not in Releases("<0.31.0") and "0.31.0rc1" not in Releases(">=0.31.0")
    assert "0.31.0rc1" in Releases("<0.31.0rc2") and "0.31.0rc1" in Releases(">=0.31.0rc1")
    (tmp_path / "a.patch").write_text("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
    (tmp_path / "b.patch").write_text("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+c\n")
    path = tmp_path / "patches.yaml"
    path.write_text('schema: 1\ntargets: {"0.30.0": {}, "0.31.0rc1": {}}\npatches:\n  - id: p\n    patch:\n'
                    '      "<0.31.0": a.patch\n      ">=0.31.0": b.patch\n')
    with pytest.raises(ManifestErrors) as e:
        load_manifest(path)
    assert "no patch file covers target 0.31.0rc1" in str(e.value) and e.value.line == 5
    manifest = load_manifest(path.parent / _write(path, '"<0.31.0rc1": a.patch', '">=0.31.0rc1": b.patch'))
    assert [t.version for t in manifest.targets] == ["0.30.0", "0.31.0rc1"]
    assert manifest.patch("p").choice_for("0.31.0rc1").path.name == "b.patch"
    released = ["0.30.0", "0.31.0rc1", "0.31.0rc2", "0.31.0"]
    assert newer_releases(manifest, pre=False, released=released) == ["0.31.0"]
    assert newer_releases(manifest, pre=True, released=released) == ["0.31.0rc2", "0.31.0"]


def _write(path: Path, old: str, new: str) -> str:
    text = path.read_text().replace('"<0.31.0": a.patch', old).replace('">=0.31.0": b.patch', new)
    path.write_text(text)
    return path.name


def test_schema_and_targets_matrix_know_the_commit_form(history, tmp_path, capsys):
    import jsonschema
    from helpers import load_yaml

    from patchset.core.schema import manifest_schema

    path = this_series(tmp_path, pinned_targets(history))
    jsonschema.validate(load_yaml(path.read_text()), manifest_schema())
    bad = load_yaml(path.read_text())
    next(v for k, v in bad["targets"].items() if "dev" in k)["source"]["commit"] = "251bc84"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, manifest_schema())
    assert main(["targets", "--manifest", str(path), "--format", "matrix"]) == 0
    matrix = json.loads(capsys.readouterr().out)["include"]
    pinned = [m for m in matrix if "commit" in m]
    assert [(m["vllm"], m["commit"], m["git"]) for m in pinned] == [
        (pins(history)[r][0], history[1][r], str(history[0])) for r in ("0.29.0", "0.30.0")]
    assert all(set(m) == {"vllm", "image", "no_proof", "untested"} for m in matrix if m not in pinned)


def test_git_fetches_only_the_one_commit(history, tmp_path):
    """The fetch CommitSource makes (a shallow fetch of one commit id from a local path) brings that commit
    alone, without the history before it."""
    repo, commits = history
    scratch = tmp_path / "scratch"
    from patchset.sources.commit import _fetch

    _fetch(git.Repo.init(scratch, bare=True), str(repo), commits["0.30.0"], str(repo))
    assert (scratch / "shallow").read_text().split() == [commits["0.30.0"]]
    count = subprocess.run(["git", "-C", str(scratch), "rev-list", "--count", commits["0.30.0"]],
                           capture_output=True, text=True, check=True).stdout
    assert count.strip() == "1"


def _with(path: Path, version: str, line: str) -> Path:
    """The manifest at ``path`` with ``line`` added under the target ``version``'s settings."""
    text = path.read_text().replace(f'  "{version}":\n', f'  "{version}":\n    {line}\n')
    path.write_text(text)
    return path


def test_build_of_a_commit_target_needs_a_base(history, tmp_path, capsys):
    from patchset.verbs.build import build_image, default_base

    version = pins(history)["0.29.0"][0]
    path = this_series(tmp_path, pinned_targets(history))
    with pytest.raises(PatchsetError) as e:
        build_image(load_manifest(path), version)  # refused before any engine is asked
    assert e.value.line == _line_of(path, f'"{version}"') and "no release image exists" in e.value.message
    assert main(["build", "--manifest", str(path), "--vllm", version]) == 2
    assert f"{path}:{_line_of(path, version)}: vLLM {version} is pinned to commit" in capsys.readouterr().err
    _with(path, version, 'base: "registry.example.org/vllm-nightly:251bc8456"')
    assert default_base(load_manifest(path), version) == "registry.example.org/vllm-nightly:251bc8456"
    assert default_base(load_manifest(path), "0.29.0") == "vllm/vllm-openai:v0.29.0"


def test_test_venv_on_a_commit_target_needs_its_wheel(history, tmp_path, capsys):
    version = pins(history)["0.29.0"][0]
    path = this_series(tmp_path, pinned_targets(history))
    assert main(["test", "--manifest", str(path), "--vllm", version, "--venv", "--no-suites"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:{_line_of(path, version)}: vLLM {version} is pinned to commit" in err and "set wheel:" in err
    wheel = tmp_path / "vllm-0.30.0-cp38-abi3-manylinux_2_28_x86_64.whl"
    wheel.write_bytes(b"not opened: its name is refused first")
    _with(path, version, f"wheel: {wheel.name}")
    assert main(["test", "--manifest", str(path), "--vllm", version, "--venv", "--no-suites"]) == 2
    assert f"{wheel.name} is vllm 0.30.0, not vllm {version}" in capsys.readouterr().err
    path = this_series(tmp_path / "url", pinned_targets(history))
    _with(path, version, "wheel: https://wheels.example.org/vllm-0.29.1.dev1-cp38-abi3-manylinux_2_28_x86_64.whl")
    with pytest.raises(ManifestError, match="says no sha256"):
        target_wheel(load_manifest(path), load_manifest(path).target(version))


def test_a_wheel_that_names_another_commit_is_refused(history, tmp_path):
    c1 = history[1]["0.29.0"]
    version = f"0.29.1.dev1+g{c1[:9]}"
    path = this_series(tmp_path, f'  "{version}":\n    source: {{git: "{history[0]}", commit: "{c1}"}}\n'
                                 f'    wheel: vllm-0.29.1.dev1+gdeadbeef1-cp38-abi3-manylinux_2_28_x86_64.whl\n')
    (tmp_path / "vllm-0.29.1.dev1+gdeadbeef1-cp38-abi3-manylinux_2_28_x86_64.whl").write_bytes(b"x")
    manifest = load_manifest(path)
    with pytest.raises(ManifestError, match="not vllm 0.29.1.dev1"):
        target_wheel(manifest, manifest.target(version))
    assert manifest.target(version).source.contradicts("0.29.1.dev1+gdeadbeef1.cu128")
    assert not manifest.target(version).source.contradicts(f"0.29.1.dev1+g{c1[:9]}.cu128")
    assert manifest.installed_as(f"0.29.1.dev1+g{c1[:9]}.cu128") == version


@pytest.mark.slow
def test_test_venv_proves_a_fix_on_a_commit_target_with_the_wheel_it_names(history, tmp_path):
    """The upstream tests come from the commit's tree, vLLM from the wheel the target names: here the real
    0.29.0 wheel from the index (the commit holds 0.29.0's tree), so the target is a fork's build of 0.29.0."""
    from patchset.sources import download
    from patchset.sources.wheel import WheelSource
    from patchset.verbs.proof import ProofOptions
    from patchset.verbs.test import prove_release

    c1 = history[1]["0.29.0"]
    found = WheelSource.of("vllm", "0.29.0", Cache()).file  # the wheel pip would choose here
    blob = download.blob(Cache(), found.sha256, found.url, size=found.size)
    (tmp_path / "wheels").mkdir()
    (tmp_path / "wheels" / found.filename).symlink_to(blob)
    version = f"0.29.0+g{c1[:9]}"
    path = this_series(tmp_path, f'  "{version}":\n    source: {{git: "{history[0]}", commit: "{c1}"}}\n'
                                 f'    wheel: wheels/{found.filename}\n')
    report = prove_release(load_manifest(path), version, options=ProofOptions(
        patch_ids=("offload-finished-watermark",), suites=False))
    assert [(p.id, str(p.verdict)) for p in report.patches] == [("offload-finished-watermark", "proven")]


@pytest.mark.docker
@pytest.mark.slow
def test_build_and_sbom_of_an_image_built_from_a_commit(history, tmp_path, docker_client, standin, session_repo,
                                                        derive_image):
    """A fork's image of the commit: the stand-in 0.29.0 image whose vLLM says it was built at that commit.
    ``build`` applies the series to the image's own files; the SBOM names the commit; an image whose vLLM
    names another commit is refused."""
    from patchset.images.builder import BuildError
    from patchset.images.engine import ImageFiles
    from patchset.verbs.build import build_image

    c1 = history[1]["0.29.0"]
    version = f"0.29.0+g{c1[:9]}"
    metadata = "/usr/local/lib/python3.11/dist-packages/vllm-0.29.0.dist-info/METADATA"
    with ImageFiles(docker_client, standin) as files:
        raw = files.read(metadata)
    assert raw is not None

    def nightly_image(tag: str, said: str) -> str:
        return derive_image(standin, f"{session_repo}:{tag}", write={
            metadata: raw.replace(b"\nVersion: 0.29.0\n", f"\nVersion: {said}\n".encode())})

    ours = nightly_image("nightly", f"{version}.cpu")
    path = this_series(tmp_path, f'  "{version}":\n    source: {{git: "{history[0]}", commit: "{c1}"}}\n'
                                 f'    base: "{ours}"\n')
    report = build_image(load_manifest(path), version, tag=f"{session_repo}:nightly-patched", client=docker_client,
                         sbom=tmp_path / "sbom.json")
    assert report.base == ours and [str(p.status) for p in report.result.patches] == ["applies"] * 3
    doc = json.loads((tmp_path / "sbom.json").read_text())
    vllm = next(c for c in doc["components"] if c["name"] == "vllm")
    assert vllm["version"] == f"{version}.cpu"
    assert vllm["externalReferences"][0]["type"] == "vcs" and c1 in vllm["externalReferences"][0]["comment"]
    assert len(vllm["pedigree"]["patches"]) == 3
    theirs = nightly_image("other-commit", "0.29.0+gdeadbeef1")
    with pytest.raises(BuildError, match=f"holds vLLM 0.29.0\\+gdeadbeef1 .*, not {re.escape(version)}"):
        build_image(load_manifest(path), version, base=theirs, tag=f"{session_repo}:x", client=docker_client)
