"""bench/realforks.py's named disagreements with the reference tools (docs/records/real-forks.md)."""

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import realforks  # noqa: E402

RENAME = ("diff --git a/tmpl/400-bug report.yml b/tmpl/400-bug-report.yml\nsimilarity index 100%\n"
          "rename from tmpl/400-bug report.yml\nrename to tmpl/400-bug-report.yml\n")


@pytest.mark.skipif(not shutil.which("patch") or not shutil.which("git"), reason="GNU patch and git are the reference")
def test_a_rename_gnu_patch_cannot_read_is_named_as_its_limit(tmp_path: Path) -> None:
    """ipex-llm's squash for 0.6.6.post1 renames issue templates whose names hold a space: git apply (what the
    project runs) and patchset take it, GNU patch 2.7.6 refuses the whole patch. The bench names it."""
    patch = tmp_path / "rename.patch"
    patch.write_text(RENAME)
    row = {}
    for tool in ("gnu-F0", "git-apply"):
        tree = tmp_path / tool
        (tree / "tmpl").mkdir(parents=True)
        (tree / "tmpl/400-bug report.yml").write_text("name: bug\n")
        ok, said = realforks.run_tool(tool, tree, patch)
        row[tool], row[tool + "_said"] = ("applies" if ok else "fails"), said
    assert row["git-apply"] == "applies" and (tmp_path / "git-apply/tmpl/400-bug-report.yml").is_file()
    assert row["gnu-F0"] == "fails"
    assert realforks._gnu_limit(row, git=True).startswith("GNU patch's own limit")
    assert realforks._gnu_limit({"gnu-F0_said": "Hunk #1 FAILED at 3."}, git=True) == ""


def test_the_later_projects_series_are_the_old_side_of_handports_pairs() -> None:
    """One list of their commits: every patch-kind pair of handports.PAIRS is a series, on its old release."""
    import handports

    names = [realforks.series_name(project, label, u) for project, label, u, *_ in handports.PAIRS]
    assert len(set(names)) == len(names)
    for (_project, _label, u, v, old, _new, _fuzz, kind), name in zip(handports.PAIRS, names, strict=True):
        if kind == "overlay":
            assert name not in realforks.SERIES  # whole copies, not patches
            continue
        s = realforks.SERIES[name]
        assert (s.commit, s.release, s.port_to) == (old[0][0], u, v)
        if kind == "patch":
            assert s.patches == tuple(p for _, p in old)
        else:
            assert s.folder == old[0][1]
