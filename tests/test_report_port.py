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
    assert "merge, hunk 1 (vllm/merge.py): upstream changed 1 of these lines" in text
    assert "    +line_12 = 12  # upstream" in text
    assert text.rstrip().endswith("the series needs porting to vLLM 0.29.0: patchset port --to 0.29.0")
    md = render_next.next_markdown(r)
    assert "| clash | needs-port | 0.28.0 |" in md and "```diff\n--- vllm/clash.py (vllm 0.28.0)" in md
    assert json.loads(render_next.next_json(r))["vllm"] == "0.29.0"


def test_port_renderers_count_results_and_end_with_the_proof_command(tmp_path: Path):
    m = load_manifest(portfixture.build(tmp_path))
    r = port(m, "0.29.0", source=portfixture.source(tmp_path), dry_run=True)
    text = render.port_table(r)
    assert "(dry run: nothing written)" in text
    assert "1 carried, 1 retired, 2 ported, 2 conflict, 1 blocked in" in text
    assert text.rstrip().endswith("a merge is not a proof: run patchset test --vllm 0.29.0")
    md = render.port_markdown(r)
    assert "| after | blocked | 0.28.0 | comes after clash (conflict) |" in md
    assert "```diff\n--- a/patches.yaml" in md and "Next: `patchset test --vllm 0.29.0`" in md
