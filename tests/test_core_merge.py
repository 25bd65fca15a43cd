"""3-way merges and patch generation through real git (merge-file, diff --no-index)."""

from __future__ import annotations

import pytest
from helpers import lines

from patchset.core import engine, merge
from patchset.core.patchfile import parse_patch
from patchset.errors import PatchsetError

LABELS = ("vllm 0.29.0", "vllm 0.28.0", "fix on 0.28.0")
BASE = lines(30)


def test_a_patch_merges_onto_lines_upstream_moved():
    theirs = BASE.replace("line 20\n", "line 20 fixed\n")
    ours = "new header\n" * 5 + BASE  # upstream added lines above: the fix must follow its line
    m = merge.merge3(ours.encode(), BASE.encode(), theirs.encode(), LABELS)
    assert m.clean
    assert m.content == ("new header\n" * 5 + theirs).encode()


def test_overlapping_edits_conflict_with_release_labels_and_the_base():
    theirs = BASE.replace("line 10\n", "line 10 fixed\n")
    ours = BASE.replace("line 10\n", "line 10 upstream\n")
    m = merge.merge3(ours.encode(), BASE.encode(), theirs.encode(), LABELS)
    assert m.conflicts == 1
    text = m.content.decode()
    assert "<<<<<<< vllm 0.29.0\nline 10 upstream\n||||||| vllm 0.28.0\nline 10\n=======\nline 10 fixed\n" \
           ">>>>>>> fix on 0.28.0\n" in text
    assert merge.marker_lines(m.content) == [10, 12, 14, 16]


def test_the_same_change_on_both_sides_merges_cleanly():
    theirs = BASE.replace("line 10\n", "line 10 fixed\n")
    m = merge.merge3(theirs.encode(), BASE.encode(), theirs.encode(), LABELS)
    assert m.clean and m.content == theirs.encode()


def test_marker_lines_ignore_lookalikes():
    assert merge.marker_lines(b"a = '<<<<<<<'\n<<<<<<<< eight\n=======\n") == [3]


def test_render_diff_writes_a_git_patch_the_engine_applies_exactly():
    old = {"vllm/a.py": BASE.encode(), "tests/t.py": b"x = 1\n"}
    new = {"vllm/a.py": BASE.replace("line 5\n", "line 5\nadded\n").encode(), "tests/t.py": b"x = 2\n"}
    text = merge.render_diff(old, new)
    assert text.startswith("diff --git a/tests/t.py b/tests/t.py\n--- a/tests/t.py\n+++ b/tests/t.py\n@@ -1 +1 @@\n")
    assert "index " not in text
    pf = parse_patch(text.encode(), name="gen")
    out = engine.apply_patch(old, pf)
    assert out.ok and {h.status for h in out.hunks} == {"exact"}
    assert out.files == new


def test_render_diff_creations_deletions_and_layouts():
    created = merge.render_diff({"vllm/n.py": None}, {"vllm/n.py": b"a\n"}, root="vllm")
    assert created.startswith("diff --git a/n.py b/n.py\nnew file mode 100644\n--- /dev/null\n+++ b/n.py\n")
    deleted = merge.render_diff({"vllm/n.py": b"a\n"}, {"vllm/n.py": None}, strip=0)
    assert "--- vllm/n.py\n+++ /dev/null\n" in deleted
    assert merge.render_diff({"vllm/n.py": b"a\n"}, {"vllm/n.py": b"a\n"}) == ""
    with pytest.raises(PatchsetError, match="outside the patch root"):
        merge.render_diff({"tests/t.py": None}, {"tests/t.py": b"a\n"}, root="vllm")
    with pytest.raises(PatchsetError, match="strip 2"):
        merge.render_diff({"vllm/n.py": None}, {"vllm/n.py": b"a\n"}, strip=2)


def test_a_users_git_config_does_not_change_the_bytes(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[diff]\n\tnoprefix = true\n\tcontext = 9\n\tsuppressBlankEmpty = true\n"
                                     "[merge]\n\tconflictStyle = merge\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    before = BASE.replace("line 13\n", "\n")
    text = merge.render_diff({"vllm/a.py": before.encode()}, {"vllm/a.py": before.replace("line 15\n", "x\n").encode()})
    assert "--- a/vllm/a.py" in text and "@@ -12,7 +12,7 @@" in text
    assert "\n \n line 14\n" in text  # a blank context line keeps its leading space, as GNU patch expects
    m = merge.merge3(BASE.replace("line 3\n", "u\n").encode(), BASE.encode(), BASE.replace("line 3\n", "t\n").encode(),
                     LABELS)
    assert b"||||||| vllm 0.28.0" in m.content
