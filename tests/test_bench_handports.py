"""bench/handports.py's verdicts on flagged files (docs/records/port.md, "Measured on real hand ports")."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import handports  # noqa: E402

HELD = "merged cleanly, but its patch conflicts in 21 other file(s) (vllm/config/vllm.py, …): it waits in the workspace"
GONE = ("vllm 0.11.2 has no vllm/executor/ray_distributed_executor.py (removed or moved upstream) and hunk 4's lines "
        "are nowhere in it: the code is gone, merge it by hand")


def test_a_gone_file_that_only_waits_for_its_patch_is_held_not_a_right_flag() -> None:
    """Dynamo's ultra overlay deletes vllm/beam_search.py, which 0.22.0 no longer has either: the file merges
    cleanly and only waits for the overlay's conflicts elsewhere, so its flag says nothing about V."""
    files: dict[str, bytes | None] = {"vllm/beam_search.py": None}
    kind = handports._flag_kind("vllm/beam_search.py", [HELD], False, True, files)
    assert kind.startswith("flagged (held")
    assert handports.summary([("vllm/beam_search.py", kind, HELD, "identical")])["right"] == 0


def test_a_gone_file_whose_flag_says_the_code_is_gone_is_a_right_flag() -> None:
    path = "vllm/executor/ray_distributed_executor.py"
    assert handports._flag_kind(path, [GONE], False, True, {path: None}).startswith("flagged (gone from V")
    assert handports._flag_kind(path, [HELD, GONE], False, True, {path: None}).startswith("flagged (gone from V")


def test_a_held_file_port_says_v_already_carries_is_a_right_flag_only_where_the_hand_port_agrees() -> None:
    """omni-infer 0.8.3 -> 0.9.0: clean files of conflicting patches whose merge is 0.9.0's own file."""
    said = HELD + "; port says V already carries its change"
    path = "vllm/model_executor/layers/linear.py"
    kind = handports._flag_kind(path, [said], False, False, {path: b"V's own file\n"})
    assert kind.startswith("flagged (already in V")
    assert handports.summary([(path, kind, said, "identical")])["right"] == 1
    # the hand port changes the file after all: a person had to, and the plain flag says so
    assert handports._flag_kind(path, [said], True, False, {path: b"changed\n"}) == "flagged"
    # a held file port says nothing about stays held
    assert handports._flag_kind(path, [HELD], False, False, {path: b"V's own file\n"}).startswith("flagged (held")


def test_touched_names_a_file_the_patch_deletes_so_the_hand_tree_holds_it(tmp_path) -> None:
    """llm-scaler's squashes delete files (``+++ /dev/null``): with only the ``+++ b/`` names the hand tree
    lacked them and GNU patch refused the deletion as already applied."""
    patch = tmp_path / "p.patch"
    patch.write_text("--- a/vllm/gone.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x = 1\n"
                     "--- a/vllm/kept.py\n+++ b/vllm/kept.py\n@@ -1 +1 @@\n-y = 1\n+y = 2\n")
    assert handports.touched(patch) == ["vllm/gone.py", "vllm/kept.py"]


def test_strictly_a_file_flagged_only_for_its_patchs_other_conflicts_counts_when_its_merge_is_the_hand_ports() -> None:
    rows = [("a.py", "flagged", "conflict (line 3)", ""),  # its own conflict: right either way
            ("b.py", "flagged", HELD, "identical"),  # held, and its waiting merge is the hand port's
            ("c.py", "flagged", HELD, "different"),  # held, the hand port changed it otherwise
            ("d.py", "flagged", HELD, ""),  # held, a later patch changes it too: not judged
            ("e.py", "identical", "merged cleanly", "")]
    c = handports.summary(rows)
    assert (c["right"], c["right, strict"], c["handled"]) == (5, 3, 5)


def test_same_code_forgives_the_order_of_one_block_of_imports_and_nothing_else() -> None:
    """FlagScale's 0.8.5 hand port moved its ``import contextlib`` line within the imports: the same code."""
    ours = b"import enum\nimport os\nimport contextlib  # fork\nfrom collections import deque\n\nX = 1\n"
    hand = b"import contextlib  # fork\nimport enum\nimport os\nfrom collections import deque\n\nX = 1\n"
    assert handports._judge(b"", ours, hand, set()) == "same code"
    # an import moved past code is not the same code (the name is bound later), nor are two statements swapped
    late = b"import enum\nimport os\nfrom collections import deque\n\nX = 1\nimport contextlib  # fork\n"
    assert handports._judge(b"", ours, late, set()) == "different"
    assert handports._judge(b"", b"x = 1\ny = 2\n", b"y = 2\nx = 1\n", set()) == "different"


def test_a_review_note_counts_as_a_flag_only_where_the_maintainer_changed_the_copy() -> None:
    note = "review: vllm/x_copy.py is a copy of vllm/x.py (80% of its lines stand there in vllm 0.9.1); …"
    rows = [("vllm/x_copy.py", "flagged", note, ""),
            ("vllm/y_copy.py", "identical (a review note: the maintainer keeps the copy as it is)", note, "")]
    c = handports.summary(rows)
    assert (c["review notes"], c["review notes the maintainer did not need"], c["right"]) == (2, 1, 2)
    # a copy waiting in a conflicting patch's workspace: its note follows the reasons, and is no reason itself
    held = "merged cleanly, but its patch conflicts in 1 other file(s) (vllm/x.py): it waits in the workspace"
    waiting = [("vllm/z_copy.py", "flagged", f"{held}; {note}", "identical"),
               ("vllm/w_copy.py", "flagged", f"{held}; {note}", "different")]
    c = handports.summary(waiting)
    assert (c["review notes"], c["review notes the maintainer did not need"]) == (2, 1)
    assert (c["right"], c["right, strict"]) == (2, 1)  # strictly, the copy whose merge is not the hand port's


def test_a_lead_to_another_file_is_marked_with_whether_the_hand_port_changes_that_file() -> None:
    """The docs' count of port's leads, and of those naming a file the maintainer's port changes, comes from the
    rows (``summary``), not from a script beside the bench."""
    why = ("conflict (line 7); hunk 295's lines may have moved: moved_to: vllm/v1/executor/uniproc_executor.py:17 "
           "(nearest candidate …); hunk 8's lines may have moved: moved_to: vllm/benchmarks/serve.py:534 (…)")
    marked = handports._mark_leads(why, {"vllm/benchmarks/serve.py", "vllm/v1/executor/ray_distributed_executor.py"})
    assert "uniproc_executor.py:17 [the hand port leaves that file alone]" in marked
    assert "serve.py:534 [the hand port changes that file]" in marked
    c = handports.summary([("vllm/v1/executor/ray_distributed_executor.py", "flagged", marked, ""),
                           ("a.py", "flagged", "conflict (line 3)", "")])
    assert (c["leads"], c["leads to a file the hand port changes"]) == (2, 1)
