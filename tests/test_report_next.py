"""How `next` looks: on a terminal, the table and one line per hunk that no longer lands; upstream's diffs
only with --detail, and always in Markdown and JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

import portfixture
import pytest

from patchset.cli import main
from patchset.core.manifest_load import load_manifest
from patchset.report.next import next_json, next_markdown, next_table
from patchset.verbs.next import next_release

DIFF_LINE = re.compile(r"^\s*(@@ |--- |\+\+\+ )", re.M)


@pytest.fixture
def report(tmp_path: Path):
    m = load_manifest(portfixture.build(tmp_path))
    return next_release(m, "0.29.0", source=portfixture.source(tmp_path), released=["0.28.0", "0.29.0"])


def test_the_table_gives_one_line_per_failing_hunk_and_no_diff(report):
    text = next_table(report)
    assert not DIFF_LINE.search(text), text
    hunks = [line for line in text.splitlines() if re.match(r"  \S+ hunk \d+: ", line)]
    failing = {(p.id, h.number) for p in report.patches for h in p.result.hunks if h.status in ("failed", "fuzz")}
    assert len(hunks) == len(failing) >= 2
    (merge,) = [line for line in hunks if line.startswith("  merge hunk 1: ")]
    # the place in the new release, why, and what upstream did there
    assert merge.startswith("  merge hunk 1: vllm/merge.py:")
    assert "upstream changed 1 of these lines" in merge and "moved from 7 to 10" in merge
    assert "--detail" in text


def test_detail_shows_each_upstream_diff_as_before(report):
    text = next_table(report, detail=True)
    assert "-line_12 = 12\n" in text.replace("    -line", "-line") and DIFF_LINE.search(text)
    assert not re.search(r"^  merge hunk 1: ", text, re.M)


def test_markdown_and_json_keep_every_diff(report):
    assert "-line_12 = 12\n" in next_markdown(report)
    doc = json.loads(next_json(report))
    merge = next(p for p in doc["patches"] if p["id"] == "merge")
    assert "-line_12 = 12\n" in merge["upstream_change"][0]["diff"]
    assert "targets" not in doc  # JSON as it was


def test_the_header_says_targets_and_newer_releases_apart(report):
    head = next_table(report).splitlines()[0]
    assert head == ("patchset next: vLLM 0.29.0 (newer than every target; targets: 0.28.0; "
                    "releases newer than the targets: 0.29.0)")


def test_the_same_upstream_change_under_two_hunks_is_shown_once(report):
    from dataclasses import replace

    merge = next(p for p in report.patches if p.id == "merge")
    (c,) = merge.upstream_change
    merge.upstream_change = [c, replace(c, hunk=2)]
    text = next_table(report, detail=True)
    assert text.count("-line_12 = 12") == 1 and "(the same upstream change as hunk 1 above)" in text


def test_the_cli_table_is_short_and_detail_is_asked_for(tmp_path, capsys):
    manifest = portfixture.build(tmp_path)
    args = ["next", "--vllm", "0.29.0", "--manifest", str(manifest), "--source", portfixture.source(tmp_path)]
    assert main(args) == 1
    short = capsys.readouterr().out
    assert main([*args, "--detail"]) == 1
    detailed = capsys.readouterr().out
    assert not DIFF_LINE.search(short) and DIFF_LINE.search(detailed)
    assert len(short.splitlines()) < len(detailed.splitlines())


@pytest.mark.network
def test_on_the_real_0_29_0_the_028_recipes_read_in_a_few_lines(tmp_path, capsys):
    """This repository's 0.28.0 recipes on the real 0.29.0: the failing test-file hunk as one line naming its
    place in 0.29.0's file; upstream's import change under it only with --detail."""
    from test_verbs_next import TESTS, only_028

    args = ["next", "--vllm", "0.29.0", "--manifest", str(only_028(tmp_path))]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert f"  offload-recurrent-load-boundary hunk 1: {TESTS}:36: failed - context not found" in out
    assert "KVCacheBlockCopy" not in out and not DIFF_LINE.search(out)
    assert main([*args, "--detail"]) == 1
    assert "+from vllm.v1.core.kv_cache_utils import BlockHash, KVCacheBlock, KVCacheBlockCopy" in \
        capsys.readouterr().out
