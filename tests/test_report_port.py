"""How next, port and refresh read: table, Markdown, JSON."""

from __future__ import annotations

import json
from pathlib import Path

import portfixture

from patchset.core.manifest_load import load_manifest
from patchset.report import next as render_next
from patchset.report import port as render
from patchset.verbs.next import next_release
from patchset.verbs.port import port


def test_next_renderers_show_statuses_and_the_upstream_change(tmp_path: Path):
    m = load_manifest(portfixture.build(tmp_path))
    r = next_release(m, "0.29.0", source=portfixture.source(tmp_path), released=["0.29.0"])
    text = render_next.next_table(r)
    assert "partly-upstream" in text and "upstream already has hunk(s) 1" in text
    assert "  merge hunk 1: vllm/merge.py:10: fuzz" in text and "+line_12" not in text  # the diffs: --detail
    assert text.rstrip().endswith("the series needs porting to vLLM 0.29.0: patchset port --to 0.29.0")
    detail = render_next.next_table(r, detail=True)
    assert "merge, hunk 1 (vllm/merge.py): upstream changed 1 of these lines" in detail
    assert "    +line_12 = 12  # upstream" in detail
    md = render_next.next_markdown(r)
    assert "| clash | needs-port | 0.28.0 |" in md and "```diff\n--- vllm/clash.py (vllm 0.28.0)" in md
    assert json.loads(render_next.next_json(r))["vllm"] == "0.29.0"


def test_port_renderers_count_results_and_end_with_the_proof_command(tmp_path: Path):
    m = load_manifest(portfixture.build(tmp_path))
    r = port(m, "0.29.0", source=portfixture.source(tmp_path), dry_run=True)
    text = render.port_table(r)
    assert "(dry run: nothing written)" in text
    assert "1 carried, 1 retired, 2 ported, 2 conflict, 1 blocked in" in text
    # 0.29.0 is no target while a patch conflicts (test --vllm 0.29.0 would refuse it): the next step writes them
    assert text.rstrip().endswith("next: patchset port --to 0.29.0 writes each conflict's workspace (vLLM 0.29.0's "
                                  "files with diff3 markers, a README)")
    md = render.port_markdown(r)
    assert "| after | blocked | 0.28.0 | comes after clash (conflict) |" in md
    assert "```diff\n--- a/patches.yaml" in md and "Next: `patchset port --to 0.29.0`" in md


def test_port_names_the_next_step_the_first_conflict_or_the_proof(tmp_path: Path):
    """b4 tells the maintainer what to run next; so does port, and never a command that would refuse its input."""
    path = portfixture.build(tmp_path)
    work = tmp_path / "work"
    r = port(load_manifest(path), "0.29.0", source=portfixture.source(tmp_path), workdir=work)
    refresh = f"patchset refresh clash --vllm 0.29.0 --workdir {work}"
    assert render.port_table(r).rstrip().endswith(
        f"next: resolve clash in {work / 'clash'} (its README.md lists each conflict), then {refresh}, and port "
        "again for the patches after it")
    assert json.loads(render.port_json(r))["next"] == refresh and f"Next: `{refresh}`" in render.port_markdown(r)
    clean = port(load_manifest(path), "0.29.0", source=portfixture.source(tmp_path),
                 only=["merge"], dry_run=True)
    assert clean.first_conflict is None
    assert render.port_table(clean).rstrip().endswith("a merge is not a proof: run patchset test --vllm 0.29.0")


def test_a_patch_that_does_not_apply_to_its_own_release_gets_no_workspace_and_its_next_step_is_check(tmp_path: Path):
    """Port merges nothing for a patch that fails on the release it was made for: no workspace is named (none is
    written), and the next step is to mend it there, not a refresh of a workspace that does not exist."""
    path = portfixture.build(tmp_path)
    (tmp_path / "trees/0.28.0/vllm/merge.py").write_text("nothing the patch knows\n")
    r = port(load_manifest(path), "0.29.0", source=portfixture.source(tmp_path), only=["merge"])
    merge = r.first_conflict
    assert merge is not None and merge.id == "merge" and merge.workspace is None
    assert not (path.parent / ".patchset/port/merge").exists()
    assert r.next_step == "patchset check --vllm 0.28.0"
    assert render.port_table(r).rstrip().endswith(
        "next: patchset check --vllm 0.28.0: merge does not apply to vLLM 0.28.0 itself; mend it there")
