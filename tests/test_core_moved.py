"""core/moved.py: where a gone file or a hunk's lines went."""

from __future__ import annotations

from patchset.core import moved

OLD = b"".join(b"value_%d = compute(%d)  # step\n" % (i, i) for i in range(40))


def test_a_rename_and_a_split_are_told_by_shared_lines():
    first, second = OLD[:OLD.index(b"value_20")], OLD[OLD.index(b"value_20"):]
    idx = moved.PyIndex({"pkg/first.py": b"import os\n" + first, "pkg/second.py": second + b"tail = 1\n"})
    assert idx.renamed_to(OLD) == [("pkg/first.py", 0.5), ("pkg/second.py", 0.5)]
    idx = moved.PyIndex({"pkg/new_name.py": OLD, "pkg/other.py": b"unrelated = True\n"})
    assert idx.renamed_to(OLD) == [("pkg/new_name.py", 1.0)]


def test_a_block_is_found_exactly_once_else_its_nearest_candidate_with_the_lines_that_differ():
    block = OLD.splitlines(keepends=True)[10:16]
    idx = moved.PyIndex({"pkg/a.py": b"x = 1\n" + OLD})
    found = moved.follow(idx, "pkg/gone.py", block, OLD, True)
    assert found is not None and found.sure and str(found.place) == "pkg/a.py:12"
    assert "pkg/gone.py is gone; pkg/a.py holds 100% of its lines (a rename)" in found.evidence
    edited = moved.PyIndex({"pkg/a.py": OLD.replace(b"value_12 = compute(12)", b"value_12 = compute(12, fast=True)")})
    found = moved.follow(edited, "pkg/gone.py", block, OLD, True)
    assert found is not None and not found.sure and str(found.place) == "pkg/a.py:11"
    assert "+value_12 = compute(12, fast=True)  # step" in found.place.differ
    twice = moved.PyIndex({"pkg/a.py": OLD, "pkg/b.py": OLD})
    found = moved.follow(twice, "pkg/gone.py", block, None, True)
    assert found is not None and not found.sure and "ambiguous" in found.evidence
    assert moved.follow(moved.PyIndex({"pkg/a.py": b"nothing = 0\n"}), "pkg/gone.py", block, None, True) is None


def test_where_defined_and_an_update_is_searched_from_then_on():
    idx = moved.PyIndex({"pkg/a.py": b"def helper():\n    pass\n", "pkg/b.py": b"helper = 1\n"})
    assert idx.where_defined("helper") == ["pkg/a.py"]
    idx.update("pkg/b.py", b"class helper:\n    pass\n")
    assert idx.where_defined("helper") == ["pkg/a.py", "pkg/b.py"]
    assert idx.find_block([b"class helper:\n", b"    pass\n"]) == [moved.Place("pkg/b.py", 1, True)]


def _hunk(before: list[bytes], old: list[bytes], new: list[bytes], after: list[bytes]) -> tuple[str, tuple[bytes, ...]]:
    kinds = " " * len(before) + "-" * len(old) + "+" * len(new) + " " * len(after)
    return kinds, tuple(before + old + new + after)


def test_a_hunk_stays_in_its_file_while_the_file_holds_its_lines_its_result_or_most_of_its_context():
    lines = OLD.splitlines(keepends=True)
    kinds, keys = _hunk(lines[10:13], [lines[13]], [b"value_13 = fixed()\n"], lines[14:17])
    assert moved.stayed(kinds, keys, b"x = 1\n" + OLD) == 1.0  # at an offset
    assert moved.stayed(kinds, keys, OLD.replace(lines[13], b"value_13 = fixed()\n")) == 1.0  # applied already
    own_way = OLD.replace(lines[13], b"value_13 = fixed()\nextra = True\n")  # upstream's fix, a line more
    assert moved.stayed(kinds, keys, own_way) == 1.0
    beside = OLD.replace(lines[11], b"value_11 = changed()\n")
    assert moved.stayed(kinds, keys, beside) == 5 / 6
    assert moved.stayed(kinds, keys, b"".join(lines[:10] + lines[30:])) == 0.0  # the block left the file
    assert moved.stayed(kinds, keys, None) == 0.0


def test_lines_that_stand_exactly_in_several_files_are_ambiguous_with_every_candidate():
    block = OLD.splitlines(keepends=True)[10:16]
    idx = moved.PyIndex({"pkg/a.py": OLD, "pkg/b.py": b"y = 2\n" + OLD, "pkg/renamed.py": OLD + b"z = 3\n"})
    found = moved.follow(idx, "pkg/gone.py", block, OLD + b"z = 3\n", True)
    assert found is not None and not found.sure
    assert [str(p) for p in found.candidates] == ["pkg/renamed.py:11", "pkg/a.py:11", "pkg/b.py:12"]
    assert "3 places" in found.evidence and "(ambiguous)" in found.evidence


def test_a_file_that_still_exists_wins_a_tie_for_its_own_hunk_over_a_sibling_module():
    """kvcached's gpu_model_runner.py hunk led to tpu_model_runner.py (docs/records/port.md): where the hunk's own file
    holds as much of its lines as a sibling, the lead is the hunk's own file, and no other file is named."""
    block = OLD.splitlines(keepends=True)[10:16]
    edited = OLD.replace(b"value_12 = compute(12)", b"value_12 = compute(12, fast=True)")
    both = moved.PyIndex({"pkg/gpu.py": edited, "pkg/tpu.py": edited})
    found = moved.follow(both, "pkg/gpu.py", block, OLD, False)
    assert found is not None and found.place.file == "pkg/gpu.py"
    found = moved.follow(both, "pkg/zzz.py", block, OLD, False)  # the same tie, the hunk's own file elsewhere
    assert found is not None and found.place.file == "pkg/tpu.py"  # a tie between others goes by name, as before
    better = moved.PyIndex({"pkg/gpu.py": edited.replace(b"value_13 = compute(13)", b"value_13 = other(13)"),
                            "pkg/tpu.py": edited})
    found = moved.follow(better, "pkg/gpu.py", block, OLD, False)  # the sibling holds more: it is the lead
    assert found is not None and found.place.file == "pkg/tpu.py"


def test_one_file_holding_a_share_of_a_gone_file_is_no_split():
    """ServerlessLLM's hunk of 0.9.0.1's worker/worker.py: 0.11.2's v1 gpu_worker.py holds 15 % of its lines, which
    the message called a split "across" that one file. One file with less than half is said as what it is;
    several files holding shares stay a split (0.10.2's models/transformers.py, split into a package)."""
    block = OLD.splitlines(keepends=True)[10:16]
    sibling = moved.PyIndex({"pkg/sibling.py": b"".join(OLD.splitlines(keepends=True)[8:18]) + b"own = 1\n"})
    found = moved.follow(sibling, "pkg/gone.py", block, OLD, True)
    assert found is not None and found.place.file == "pkg/sibling.py"  # still the lead for this hunk
    assert "pkg/gone.py is gone and no file holds most of its lines (pkg/sibling.py holds 25%)" in found.evidence
    assert "split" not in found.evidence


PLAIN = [b"config = load_config(path)\n", b"options = parse_options(config, strict=True)\n",
         b"graph = build_graph(options)\n", b"graph.optimise(level=3)\n", b"live = [n for n in graph if n.live]\n",
         b"kernels = compile_kernels(live)\n", b"table = dict(zip(names, kernels))\n",
         b"plan = schedule(table, workers=8)\n", b"result = run_batch(plan)\n", b"report = summarise(result)\n",
         b"emit(report, stream=sys.stdout)\n", b"cleanup(tmpdir)\n", b"logger.info('done in %s', elapsed)\n",
         b"return report\n"]
DISTINCT = b"".join(PLAIN)


def test_another_file_is_named_only_for_lines_that_came_to_it():
    """psrl's 0.18.0 hunk of multimodal/inputs.py (context: ``return inputs`` and a class 0.22.0 removed) was
    led to a Helion kernel that also ends a function with ``return inputs``; gpu_model_runner.py hunks were led
    to tpu_model_runner.py, which held the same lines in both releases. A line the hunk's own file still holds
    (as it was, or edited), or one the other file held in the old release too, is no sign that the code went
    there, nor is a line many files hold, nor one line alone."""
    block = PLAIN[4:10]
    edited = DISTINCT.replace(b"graph = build_graph(options)", b"graph = build_graph(options, cache=True)")
    gpu = edited.replace(PLAIN[6] + PLAIN[7], b"")  # the table and the plan left gpu.py
    better = moved.PyIndex({"pkg/gpu.py": gpu, "pkg/tpu.py": edited})
    # those two lines left gpu.py and stand in tpu.py: without the old release, a lead
    found = moved.follow(better, "pkg/gpu.py", block, DISTINCT, False, gpu)
    assert found is not None and found.place.file == "pkg/tpu.py"
    # tpu.py held them in the old release too: a sibling's copy, not a move; the hunk's own file is what is left
    found = moved.follow(better, "pkg/gpu.py", block, DISTINCT, False, gpu, {"pkg/tpu.py": edited}.get)
    assert found is None
    # gpu.py still holds them, edited (a new model built from the template keeps the lines as they were)
    reworded = edited.replace(PLAIN[6], b"table = dict(zip(names, kernels, strict=True))\n").replace(
        PLAIN[7], b"plan = schedule(table, workers=16)\n")
    idx = moved.PyIndex({"pkg/gpu.py": reworded, "pkg/new_model.py": edited})
    found = moved.follow(idx, "pkg/gpu.py", block, DISTINCT, False, reworded, {}.get)
    assert found is not None and not found.sure and found.candidates == ()
    assert (str(found.place), found.place.exact, found.place.score) == ("pkg/gpu.py:5", False, 0.667)
    assert found.place.differ == ("--- patch expects", "+++ pkg/gpu.py", "@@ -2,4 +2,4 @@",
                                  " kernels = compile_kernels(live)", "-table = dict(zip(names, kernels))",
                                  "-plan = schedule(table, workers=8)",
                                  "+table = dict(zip(names, kernels, strict=True))",
                                  "+plan = schedule(table, workers=16)", " result = run_batch(plan)")
    assert found.evidence == "nearest candidate pkg/gpu.py:5: 67% of the hunk's lines agree, 4 differ"
    # a file new in the release (the code moved there) is named, exactly
    moved_away = b"".join(PLAIN[:4] + PLAIN[10:])
    idx = moved.PyIndex({"pkg/gpu.py": moved_away, "pkg/tpu.py": edited, "pkg/helpers.py": DISTINCT})
    found = moved.follow(idx, "pkg/gpu.py", block, DISTINCT, False, moved_away, {"pkg/tpu.py": edited}.get)
    assert found is not None and found.sure and str(found.place) == "pkg/helpers.py:5"
    # a gone file's sibling that held the lines all along is still where its hunk goes (V0's worker.py -> V1's)
    found = moved.follow(better, "pkg/gone.py", block, DISTINCT, True, None, {"pkg/tpu.py": edited}.get)
    assert found is not None and found.place.file == "pkg/tpu.py"
    # a file upstream emptied (a stub where the code was) is as good as gone: llm-scaler's 0.10.0 hunk of
    # benchmarks/benchmark_serving.py, whose code 0.11.1 keeps only in vllm/benchmarks/serve.py
    stub = b"import sys\nprint('moved to vllm bench serve', file=sys.stderr)\n"
    emptied = moved.PyIndex({"pkg/gpu.py": stub, "pkg/tpu.py": edited})
    found = moved.follow(emptied, "pkg/gpu.py", block, DISTINCT, False, stub, {"pkg/tpu.py": edited}.get)
    assert found is not None and found.place.file == "pkg/tpu.py"
    # lines that left their file but stand in many files are boilerplate, not a trail
    common = b"from pkg.utils import helper  # shared\n"
    trail = [common, PLAIN[6], PLAIN[7]]
    stays = b"".join(PLAIN[:6] + PLAIN[8:])
    many = {f"pkg/new{i}.py": common + PLAIN[6] + b"other = %d\n" % i for i in range(6)}
    idx = moved.PyIndex({"pkg/gpu.py": stays, **many})
    found = moved.follow(idx, "pkg/gpu.py", trail, DISTINCT, False, stays, {}.get)
    assert found is None
    found = moved.follow(idx, "pkg/gone.py", trail, DISTINCT, True, None, {}.get)  # a gone file's hunk alike: its
    assert found is not None and found.place == moved.Place("pkg/gpu.py", 0, False)  # rename, no place in it
    few = moved.PyIndex({"pkg/gpu.py": stays, "pkg/new0.py": many["pkg/new0.py"]})
    found = moved.follow(few, "pkg/gpu.py", trail, DISTINCT, False, stays, {}.get)
    assert found is not None and found.place.file == "pkg/new0.py"
    # one line in common is not a trail for a hunk whose file is still there (psrl's `return inputs`)
    one = moved.PyIndex({"pkg/gpu.py": stays, "pkg/new0.py": common + b"other = 0\n"})
    found = moved.follow(one, "pkg/gpu.py", trail[:2], DISTINCT, False, stays, {}.get)
    assert found is None
    assert moved.follow(one, "pkg/gpu.py", trail[:2], DISTINCT, False).place.file == "pkg/new0.py"  # no new_file
    # the lines it shares with another file all stand in its own file still (apart: upstream edited between
    # them): they did not go anywhere, whatever file holds them together
    trail3 = [b"first = load(config)\n", b"second = build(first)\n", b"third = run(second)\n"]
    own = trail3[0] + b"inserted = upstream_line()\n" * 20 + trail3[1]
    idx = moved.PyIndex({"pkg/own.py": own, "pkg/other.py": trail3[0] + trail3[1] + b"third = other()\n"})
    assert moved.follow(idx, "pkg/own.py", trail3, None, False).place.file == "pkg/other.py"  # without new_file
    found = moved.follow(idx, "pkg/own.py", trail3, None, False, own)
    assert found is None


def test_the_near_twin_test_says_what_get_close_matches_says() -> None:
    """``_close`` (an early stop) and difflib's ``get_close_matches`` agree, on the lines of real Python files
    (this package's own) and their edits."""
    import difflib
    import random
    from pathlib import Path

    from patchset.core.moved import EDITED, _close

    root = Path(moved.__file__).resolve().parent.parent
    lines = sorted({ln.strip() for f in sorted(root.rglob("*.py")) for ln in f.read_text().splitlines()
                    if len(ln.strip()) > 3})
    rng = random.Random(3)
    for _ in range(300):
        pool = rng.sample(lines, 200)
        word = rng.choice(pool)
        word = rng.choice([word, word[:-2], word + " x", word.replace("self", "cls"), rng.choice(lines)])
        assert _close(word, pool, EDITED) == bool(difflib.get_close_matches(word, pool, n=1, cutoff=EDITED)), word
