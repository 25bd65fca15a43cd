"""`patchset next --all`: every release newer than the targets in one table, counted per release."""

from __future__ import annotations

import json

import portfixture
import pytest

from patchset.cli import main
from patchset.core.manifest_load import load_manifest
from patchset.report.next_all import all_markdown
from patchset.verbs.next import every_newer_release
from patchset.verbs.port import port


def test_each_newer_release_is_counted_and_a_port_made_file_counts_as_ported(tmp_path):
    manifest = portfixture.build(tmp_path)
    src = portfixture.source(tmp_path)
    before = every_newer_release(load_manifest(manifest), source=src, released=["0.28.0", "0.29.0"])
    assert [r.vllm for r in before.releases] == ["0.29.0"] and not before.ok
    counts = before.releases[0].counts
    assert counts == {"carries": 1, "ported": 0, "upstream": 1, "partly-upstream": 1, "needs-port": 3,
                      "blocked": 1}
    assert before.releases[0].needs_work == ["merge", "clash", "after", "syntax", "partly"]
    port(load_manifest(manifest), "0.29.0", source=src)  # merge and partly get files for 0.29.0; clash conflicts
    after = every_newer_release(load_manifest(manifest), source=src, released=["0.29.0"])
    assert after.releases[0].counts["ported"] == 2 and after.releases[0].needs_work == ["clash", "after", "syntax"]
    text = all_markdown(after)
    assert text.startswith("### patchset next --all: 1 release newer than the targets (0.28.0), newest 0.29.0\n")
    assert "| release | carries | ported | upstream | partly-upstream | needs-port | blocked | needs work |" in text
    assert "| 0.29.0 | 1 | 2 | 1 | 0 | 2 | 1 | clash, after, syntax |" in text


def test_none_newer_says_so(tmp_path):
    manifest = portfixture.build(tmp_path)
    r = every_newer_release(load_manifest(manifest), released=["0.28.0"])
    assert r.releases == [] and r.ok
    assert "No release on the index is newer than the targets" in all_markdown(r)


def test_all_with_vllm_is_bad_input(tmp_path, capsys):
    manifest = portfixture.build(tmp_path)
    assert main(["next", "--all", "--vllm", "0.29.0", "--manifest", str(manifest)]) == 2
    assert "--all evaluates every newer release" in capsys.readouterr().err


@pytest.mark.network
def test_this_repositorys_series_on_every_release_after_its_targets(capsys):
    from test_verbs_upgrade import REPO

    assert main(["next", "--all", "--format", "json", "--manifest", str(REPO / "patches.yaml"), "-q"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is True and doc["targets"] == ["0.28.0", "0.29.0", "0.30.0"]
    assert [r["vllm"] for r in doc["releases"]][:4] == ["0.31.0", "0.32.0", "0.33.0", "0.34.0"]
    assert all(r["counts"]["upstream"] == 3 and r["needs_work"] == [] for r in doc["releases"])
