"""verbs/copynotes.py: what a patch creates on U, and the notes port and next give on copies."""

from __future__ import annotations

from helpers import patch_of

from patchset.sources.local import DirSource
from patchset.verbs import copynotes

SOURCE = "".join(f"def step_{i}(request, scheduler_output, blocks):\n    return request.tokens[{i}] + {i}\n"
                 for i in range(30))


def _created(path: str, text: str, old: str = "/dev/null") -> str:
    lines = text.splitlines(keepends=True)
    return f"--- {old}\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n" + "".join("+" + x for x in lines)


def test_made_by_takes_the_python_files_a_patch_creates_and_nothing_u_ships(tmp_path) -> None:
    (tmp_path / "u" / "vllm").mkdir(parents=True)
    (tmp_path / "u" / "vllm" / "source.py").write_text(SOURCE)
    pf = patch_of(_created("vllm/fork.py", "x = 1\n") + _created("vllm/README.fork", "notes\n")
                  # not a creation for the engine (it refuses a missing file named on "--- a/"): not made
                  + _created("vllm/other.py", "y = 2\n", old="a/vllm/other.py")
                  + "--- a/vllm/source.py\n+++ b/vllm/source.py\n@@ -1,2 +1,2 @@\n"
                    " def step_0(request, scheduler_output, blocks):\n-    return request.tokens[0] + 0\n"
                    "+    return request.tokens[0] + 1\n")
    made = copynotes.made_by(pf, DirSource(tmp_path / "u"))
    assert made == {"vllm/fork.py": b"x = 1\n"}


def test_notes_name_a_copy_whose_copied_lines_v_changed_and_read_a_backport_from_the_series(tmp_path) -> None:
    """The source may be a file U lacks that the series itself creates (a backport V now ships changed)."""
    for release, text in (("u", None), ("v", SOURCE.replace("request.tokens[7] + 7", "request.all_tokens[7] + 7"))):
        (tmp_path / release / "vllm").mkdir(parents=True)
        if text is not None:
            (tmp_path / release / "vllm" / "backport.py").write_text(text)
    u, v = DirSource(tmp_path / "u"), DirSource(tmp_path / "v")
    series = {"vllm/backport.py": SOURCE.encode()}
    copy = SOURCE.replace("def step_0(", "def fork_step_0(").encode()
    index = copynotes.u_index(u, "vllm", series | {"vllm/fork.py": copy})
    (review,) = copynotes.notes({"vllm/fork.py": copy}, "0.9.1", "0.10.0", u, v, series, index)
    assert (review.file, review.copy_of) == ("vllm/fork.py", "vllm/backport.py")
    note = review.message
    assert note.startswith("vllm/fork.py is a copy of vllm/backport.py (")
    assert "vllm 0.10.0 changed 1 line(s) of vllm/backport.py" in note and "vllm/fork.py:16" in note
    # the same copy where V left the backport as the series had it: no note
    assert copynotes.notes({"vllm/fork.py": copy}, "0.9.1", "0.10.0", u, u, series, index) == ()


def test_a_copy_of_a_file_v_removed_gets_a_note_and_a_copy_of_the_series_own_file_does_not(tmp_path) -> None:
    """U ships the source and V nowhere (not even renamed): the note says the copied code is gone upstream. A copy
    of a file only the series creates, which V lacks too, is the fork's own business: no note."""
    (tmp_path / "u" / "vllm").mkdir(parents=True)
    (tmp_path / "v" / "vllm").mkdir(parents=True)
    (tmp_path / "u" / "vllm" / "source.py").write_text(SOURCE)
    (tmp_path / "v" / "vllm" / "other.py").write_text("x = 1\n")
    u, v = DirSource(tmp_path / "u"), DirSource(tmp_path / "v")
    copy = SOURCE.replace("def step_0(", "def fork_step_0(").encode()
    index = copynotes.u_index(u, "vllm", {})
    index_v = copynotes.u_index(v, "vllm", {})
    (review,) = copynotes.notes({"vllm/fork.py": copy}, "0.9.1", "0.10.0", u, v, {}, index, lambda: index_v)
    assert review.copy_of == "vllm/source.py"
    assert "vllm 0.10.0 no longer ships vllm/source.py" in review.message
    # the same copy made from a file only the series creates on U (U's package has it not): no note
    (tmp_path / "u" / "vllm" / "source.py").unlink()
    series = {"vllm/source.py": SOURCE.encode()}
    index = copynotes.u_index(u, "vllm", series)
    assert copynotes.notes({"vllm/fork.py": copy}, "0.9.1", "0.10.0", u, v, series, index, lambda: index_v) == ()
