"""`patchset next`: the series on a newer release, as if it were a target."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import portfixture
import pytest

from patchset.cli import main
from patchset.core.manifest_load import load_manifest
from patchset.verbs.next import as_target, newer_releases, next_release

REPO = Path(__file__).resolve().parent.parent
SCHED = "vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py"
TESTS = "tests/v1/kv_connector/unit/offloading_connector/test_scheduler.py"


@pytest.fixture
def fixture(tmp_path: Path):
    manifest = portfixture.build(tmp_path)
    return load_manifest(manifest), portfixture.source(tmp_path)


def test_every_status_word_on_the_fixture(fixture):
    m, src = fixture
    r = next_release(m, "0.29.0", source=src, released=["0.28.0", "0.29.0"])
    assert {p.id: p.status for p in r.patches} == {
        "carry": "carries", "retire": "upstream", "merge": "needs-port", "clash": "needs-port",
        "after": "blocked", "syntax": "needs-port", "partly": "partly-upstream"}
    assert not r.ok
    assert r.newer == ["0.29.0"]
    by = {p.id: p for p in r.patches}
    assert by["partly"].already == (1,)
    assert "does not compile" in by["syntax"].result.message
    assert by["retire"].result.evidence.startswith("probe: vllm/retire.py:16 contains")


def test_a_broken_hunk_shows_the_upstream_edit_and_where_its_lines_went(fixture):
    m, src = fixture
    r = next_release(m, "0.29.0", source=src, released=["0.29.0"])
    (change,) = next(p for p in r.patches if p.id == "merge").upstream_change
    assert change.file == "vllm/merge.py" and change.hunk == 1
    assert "-line_12 = 12\n+line_12 = 12  # upstream\n" in change.diff
    assert change.line == 7 and change.moved_to == 10  # three lines were added above it
    (clash,) = next(p for p in r.patches if p.id == "clash").upstream_change
    assert "-line_20 = 20\n+line_20 = 20  # upstream\n" in clash.diff and clash.moved_to is None


def test_nothing_on_disk_changes_and_ranges_are_only_pretended(fixture, tmp_path):
    m, src = fixture
    before = portfixture.snapshot(tmp_path / "project")
    pretend = as_target(m, "0.29.0")
    assert all(p.targets("0.29.0") for p in pretend.patches)
    next_release(m, "0.29.0", source=src, released=["0.29.0"])
    assert portfixture.snapshot(tmp_path / "project") == before


def test_newer_releases_skip_pre_releases_unless_asked(fixture):
    m, _ = fixture
    offered = ["0.27.1", "0.28.0", "0.29.0rc1", "0.29.0", "0.30.0.dev1"]
    assert newer_releases(m, released=offered) == ["0.29.0"]
    assert newer_releases(m, pre=True, released=offered) == ["0.29.0rc1", "0.29.0", "0.30.0.dev1"]


def test_nothing_newer_is_not_a_finding(fixture):
    from patchset.report.next import next_json, next_table

    m, src = fixture
    r = next_release(m, source=src, released=["0.27.1", "0.28.0"])
    assert r.vllm is None and r.ok and r.patches == []
    assert next_table(r).startswith("no release on the index is newer than the targets")
    assert json.loads(next_json(r))["vllm"] is None


def test_cli_json_is_one_document_and_exit_1_when_something_needs_a_port(fixture, tmp_path, capsys):
    m, src = fixture
    code = main(["next", "--vllm", "0.29.0", "--manifest", str(m.path), "--source", src, "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    assert out["vllm"] == "0.29.0"
    merge = next(p for p in out["patches"] if p["id"] == "merge")
    assert merge["status"] == "needs-port" and merge["from"] == "0.28.0"
    assert set(merge["upstream_change"][0]) >= {"file", "hunk", "diff"}


# --- the real releases -------------------------------------------------------------------------


@pytest.mark.network
def test_on_the_newest_release_every_fix_of_this_repository_is_upstream(capsys):
    code = main(["next", "--manifest", str(REPO / "patches.yaml"), "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["vllm"] == out["newer"][-1]
    assert {p["id"]: p["status"] for p in out["patches"]} == {
        "offload-finished-watermark": "upstream", "offload-recurrent-load-boundary": "upstream",
        "offload-mtp-eagle-serve": "upstream"}
    assert all(p["evidence"].startswith(f"probe: {SCHED}:") for p in out["patches"])
    assert out["warnings"] == []


def only_028(tmp_path: Path) -> Path:
    """This repository's series as it stood before the hand-made 0.29 recipes."""
    shutil.copytree(REPO / "recipes", tmp_path / "recipes")
    for f in (tmp_path / "recipes").glob("*/vllm-0.29.patch"):
        f.unlink()
    text = (REPO / "patches.yaml").read_text()
    text = re.sub(r'  "0\.(29|30)\.0": \{image: "[^"]*"\}\n', "", text)
    text = re.sub(r'\n      ">=0.29,<0.30": recipes/[a-z-]+/vllm-0.29.patch', "", text)
    (tmp_path / "patches.yaml").write_text(text)
    return tmp_path / "patches.yaml"


@pytest.mark.network
def test_on_0_29_the_028_recipes_show_the_upstream_import_change(tmp_path):
    m = load_manifest(only_028(tmp_path))
    r = next_release(m, "0.29.0")
    assert {p.id: p.status for p in r.patches} == {
        "offload-finished-watermark": "carries", "offload-recurrent-load-boundary": "needs-port",
        "offload-mtp-eagle-serve": "carries"}
    rec = next(p for p in r.patches if p.id == "offload-recurrent-load-boundary")
    (change,) = rec.upstream_change
    assert change.file == TESTS and change.hunk == 1
    assert ("-from vllm.v1.core.kv_cache_utils import BlockHash, KVCacheBlock\n"
            "+from vllm.v1.core.kv_cache_utils import BlockHash, KVCacheBlock, KVCacheBlockCopy\n") in change.diff
    assert "0.30.0" in r.newer and r.newer[0] == "0.29.0"


def test_on_a_tree_without_the_files_beside_the_package_next_says_not_in_tree(tmp_path):
    from helpers import udiff, write_manifest, write_patch

    before = "".join(f"x{i} = {i}\n" for i in range(1, 21))
    site = tmp_path / "0.29.0"  # an installed 0.29.0: the package alone
    (site / "vllm").mkdir(parents=True)
    (site / "vllm" / "__init__.py").write_text("")
    (site / "vllm" / "mod.py").write_text(before)
    (site / "vllm-0.29.0.dist-info").mkdir()
    (site / "vllm-0.29.0.dist-info" / "METADATA").write_text("Name: vllm\nVersion: 0.29.0\n")
    project = tmp_path / "project"
    write_patch(project, "recipes/kernel/fix.patch", udiff("vllm/mod.py", before, before.replace("x5 = 5", "x5 = 6"))
                + udiff("csrc/custom_quickreduce.cu", "int a;\n", "int b;\n"))
    write_patch(project, "recipes/deps/fix.patch", udiff("requirements/common.txt", "numpy\n", "numpy >= 2\n"))
    m = load_manifest(write_manifest(project, """
        schema: 1
        targets: {"0.28.0": {}}
        patches:
          - {id: kernel, releases: "==0.28.0", patch: recipes/kernel/fix.patch}
          - {id: deps, releases: "==0.28.0", patch: recipes/deps/fix.patch}
        """))
    r = next_release(m, "0.29.0", source=f"dir:{tmp_path}/{{version}}", released=["0.28.0", "0.29.0"])
    assert {p.id: p.status for p in r.patches} == {"kernel": "carries", "deps": "not-in-tree"}
    assert r.ok  # this tree cannot say: not a finding (the sdist can)
    assert [h.status for h in r.patches[0].result.hunks] == ["exact", "not-in-tree"]


def test_a_target_or_an_older_release_is_never_titled_newer_than_the_targets(fixture, tmp_path):
    import shutil

    from patchset.report.next import next_json, next_markdown, next_table

    m, src = fixture
    r = next_release(m, "0.28.0", source=src, released=["0.28.0", "0.29.0"])
    assert r.standing == "target"
    assert next_table(r).startswith("patchset next: vLLM 0.28.0 (a target already")
    assert "newer than the targets" not in next_table(r) and "Newer than" not in next_markdown(r)
    shutil.copytree(tmp_path / "trees/0.28.0", tmp_path / "trees/0.27.0")
    older = next_release(m, "0.27.0", source=src, released=["0.27.0", "0.28.0", "0.29.0"])
    assert older.standing == "older" and "(older than the newest target; targets: 0.28.0)" in next_table(older)
    assert json.loads(next_json(older))["standing"] == "older"
    newer = next_release(m, "0.29.0", source=src, released=["0.28.0", "0.29.0"])
    assert newer.standing == "newer" and newer.targets == ["0.28.0"]
    assert next_table(newer).startswith(
        "patchset next: vLLM 0.29.0 (newer than every target; targets: 0.28.0; "
        "releases newer than the targets: 0.29.0)")


def _series_providing_a_name_later(root: Path, with_export: bool) -> Path:
    """On real vLLM 0.11.0 code, the way Emu3.5 wrote its series: a model (first) imports ``ForkConfig`` from
    vllm/transformers_utils/configs; a later patch exports it there (it needs fuzz 1 on 0.11.1, as Emu3.5's
    did); a last one creates the config module."""
    from helpers import udiff, write_manifest, write_patch

    from patchset.cache import Cache
    from patchset.sources.sdist import SdistSource

    init = "vllm/transformers_utils/configs/__init__.py"
    text = (SdistSource("vllm", "0.11.0", Cache()).root / init).read_text()
    anchor = "from vllm.transformers_utils.configs.qwen3_next import Qwen3NextConfig\n"
    assert text.count(anchor) == 1 and text.count('    "Qwen3NextConfig",\n]') == 1
    exported = text.replace(anchor, anchor + "from vllm.transformers_utils.configs.fork import ForkConfig\n").replace(
        '    "Qwen3NextConfig",\n]', '    "Qwen3NextConfig",\n    "ForkConfig",\n]')
    model = "vllm/model_executor/models/fork_model.py"
    uses = "from vllm.transformers_utils.configs import ForkConfig\n\nCONFIG = ForkConfig\n"
    patches = {"model": udiff(model, "", uses),
               "export": udiff(init, text, exported),
               "config": udiff("vllm/transformers_utils/configs/fork.py", "", "class ForkConfig:\n    pass\n")}
    for name in ("model", "config"):
        patches[name] = patches[name].replace(f"--- a/{model}", "--- /dev/null").replace(
            "--- a/vllm/transformers_utils/configs/fork.py", "--- /dev/null")
    entries = ""
    for pid, diff in patches.items():
        if pid == "export" and not with_export:
            continue
        write_patch(root, f"recipes/{pid}/vllm-0.11.0.patch", diff)
        entries += f'  - id: {pid}\n    releases: "==0.11.0"\n    patch: recipes/{pid}/vllm-0.11.0.patch\n'
    return write_manifest(root, 'schema: 1\ntargets:\n  "0.11.0": {}\npatches:\n' + entries)


@pytest.mark.network
def test_a_name_a_later_patch_of_the_series_provides_is_not_blamed_on_the_patch_that_uses_it(tmp_path):
    from patchset.verbs.port import port

    manifest = _series_providing_a_name_later(tmp_path / "with", True)
    r = next_release(load_manifest(manifest), "0.11.1", released=["0.11.1"])
    assert {p.id: p.status for p in r.patches} == {"model": "carries", "export": "needs-port", "config": "carries"}
    assert "fuzz" in next(p for p in r.patches if p.id == "export").result.message
    # port judges each file as the series leaves it too: the export merges (a 3-way merge) and its import of
    # the module the last patch creates is not missing.
    ported = port(load_manifest(manifest), "0.11.1", dry_run=True)
    assert {p.id: p.result for p in ported.patches} == {"model": "carried", "export": "ported", "config": "carried"}
    # Without the patch that provides it, the name is missing after the series: the model is blamed.
    alone = _series_providing_a_name_later(tmp_path / "without", False)
    r = next_release(load_manifest(alone), "0.11.1", released=["0.11.1"])
    model = next(p for p in r.patches if p.id == "model")
    assert model.status == "needs-port"
    assert "'ForkConfig' is not in vllm/transformers_utils/configs/__init__.py in 0.11.1" in model.result.message


def _release(root: Path, version: str, text: str) -> None:
    site = root / version
    (site / "vllm").mkdir(parents=True)
    (site / "vllm" / "__init__.py").write_text("")
    (site / "vllm" / "mod.py").write_text(text)


def _next_on_029(tmp_path: Path, patches: dict[str, str]):
    """``next --vllm 0.29.0`` of a series made for 0.28.0 (id -> its patch text, in order), both releases as
    folders under ``tmp_path``."""
    from helpers import write_manifest, write_patch

    project = tmp_path / "project"
    for pid, text in patches.items():
        write_patch(project, f"recipes/{pid}/fix.patch", text)
    entries = "".join(f'  - {{id: {pid}, releases: "==0.28.0", patch: recipes/{pid}/fix.patch}}\n'
                      for pid in patches)
    m = load_manifest(write_manifest(project, 'schema: 1\ntargets: {"0.28.0": {}}\npatches:\n' + entries))
    return next_release(m, "0.29.0", source=f"dir:{tmp_path}/{{version}}", released=["0.28.0", "0.29.0"])


def test_an_ambiguous_hunk_on_lines_upstream_left_alone_is_not_blamed_on_an_earlier_patch(tmp_path):
    """A hunk that fails on lines upstream left alone is blamed on an earlier patch of the series only when its
    context is gone; when the context stands at two places (upstream added a twin elsewhere, as FlagScale's
    preprocess.py on 0.10.0), nothing earlier is to blame and next does not say so."""
    from helpers import udiff

    block = "".join(f"y{i} = {i}\n" for i in range(1, 8))
    before = "x = 0\n\n" + block + "\nz = 0\n"
    _release(tmp_path, "0.28.0", before)
    # 0.29.0 moved the block down and added a twin of it further on: the hunk's context stands at two places,
    # none at its stated line
    _release(tmp_path, "0.29.0", "w = 1\n" * 4 + before + "\n" * 6 + block)
    r = _next_on_029(tmp_path, {"p": udiff("vllm/mod.py", before, before.replace("y4 = 4", "y4 = 40"))})
    by = {p.id: p for p in r.patches}
    assert "ambiguous" in by["p"].result.hunks[0].message
    (change,) = by["p"].upstream_change
    assert change.summary.startswith("upstream did not change lines") and "earlier patch" not in change.summary


def test_a_hunk_whose_context_an_earlier_patch_changed_is_blamed_on_it_where_upstream_changed_nothing(tmp_path):
    """The other side: p cannot land on 0.29.0 (upstream changed its context), so q, made on top of p, meets
    lines upstream left alone but without p's change: its context stands nowhere, and next says an earlier
    patch of the series changed them."""
    from helpers import udiff

    before = "".join(f"y{i} = {i}\n" for i in range(1, 16))
    _release(tmp_path, "0.28.0", before)
    # p changes y7 with five lines of context (y2-y12); upstream changed y2, so p does not land; q changes y8,
    # right after p's line, so no fuzz reaches past it, and its lines (y5-y11) are ones upstream left alone
    _release(tmp_path, "0.29.0", before.replace("y2 = 2", "y2 = 22"))
    after_p = before.replace("y7 = 7", "y7 = 70")
    r = _next_on_029(tmp_path, {"p": udiff("vllm/mod.py", before, after_p, n=5),
                                "q": udiff("vllm/mod.py", after_p, after_p.replace("y8 = 8", "y8 = 80"))})
    by = {p.id: p for p in r.patches}
    assert by["q"].result.hunks[0].message.startswith("context not found")
    (change,) = by["q"].upstream_change
    assert change.summary.startswith("upstream did not change lines")
    assert change.summary.endswith("an earlier patch of the series changed them")
