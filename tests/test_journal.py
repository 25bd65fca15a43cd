"""The journal on its own: the lock, and the cases recovery must refuse rather than guess."""

from __future__ import annotations

import importlib.util
import json

import pytest

from patchset import journal
from patchset.journal import JournalError


def tree(tmp_path):
    pkg = tmp_path / "vllm"
    pkg.mkdir()
    (pkg / "a.py").write_text("a = 1\n")
    (pkg / "b.py").write_text("b = 1\n")
    return tmp_path, pkg


def interrupted(root, pkg, content=b"a = 2\n"):
    """A journal staged completely, as a kill just before the first rename leaves it."""
    plan, new, old = journal.plan(root, pkg, "vllm/.rec", [("vllm/a.py", "vllm/a.py", content, None),
                                                          ("vllm/b.py", "vllm/b.py", b"b = 2\n", None)])
    plan.record_sha256 = str(journal.sha256(b"{}"))
    plan.dir.mkdir()
    journal.begin(plan, new, old, b"{}")
    return plan


def test_a_second_apply_on_the_same_tree_waits_its_turn(tmp_path):
    _, pkg = tree(tmp_path)
    with journal.locked(pkg), pytest.raises(JournalError, match="another patchset apply is running"), \
            journal.locked(pkg):
        pass
    with journal.locked(pkg):  # released
        pass


def pyc_name(module: str) -> str:
    return importlib.util.cache_from_source(f"{module}.py").rsplit("/", 1)[-1]


def test_recovery_rolls_forward_a_complete_staging(tmp_path):
    root, pkg = tree(tmp_path)
    interrupted(root, pkg)
    assert journal.recover(root, pkg) == "finished the interrupted apply (2 files)"
    assert (pkg / "a.py").read_text() == "a = 2\n"
    sealed = json.loads((pkg / ".rec").read_bytes())  # the record gains the bytecode the commit left
    assert list(sealed["bytecode"]) == ["vllm/__pycache__/" + pyc_name(m) for m in "ab"]
    assert sorted(p.name for p in pkg.iterdir()) == [".rec", "__pycache__", "a.py", "b.py"]


def test_recovery_rolls_back_when_a_staged_file_is_damaged(tmp_path):
    root, pkg = tree(tmp_path)
    plan = interrupted(root, pkg)
    plan.staged(plan.entries[1]).write_text("b = 2 torn")
    assert journal.recover(root, pkg).startswith("rolled back")
    assert (pkg / "a.py").read_text() == "a = 1\n" and (pkg / "b.py").read_text() == "b = 1\n"
    assert sorted(p.name for p in pkg.iterdir()) == ["a.py", "b.py"]


def test_a_file_changed_by_someone_else_meanwhile_is_refused_not_overwritten(tmp_path):
    root, pkg = tree(tmp_path)
    interrupted(root, pkg)
    (pkg / "a.py").write_text("a = 'edited by hand'\n")
    with pytest.raises(JournalError, match="vllm/a.py changed while an apply was interrupted"):
        journal.recover(root, pkg)
    assert (pkg / "a.py").read_text() == "a = 'edited by hand'\n"
    assert (pkg / ".patchset-journal").is_dir()  # kept: it holds the pristine bytes


def test_a_journal_folder_without_a_journal_is_just_removed(tmp_path):
    root, pkg = tree(tmp_path)
    (pkg / ".patchset-journal").mkdir()
    (pkg / ".patchset-journal" / ".patchset-tmp-journal.json").write_text("{")
    assert "had changed nothing" in journal.recover(root, pkg)
    assert not (pkg / ".patchset-journal").exists()


def test_an_empty_file_is_a_file_with_a_mode(tmp_path):
    root, pkg = tree(tmp_path)
    (pkg / "__init__.py").write_text("")
    plan, new, old = journal.plan(root, pkg, "vllm/.rec", [("vllm/__init__.py", "vllm/__init__.py", b"x = 1\n", None)])
    assert plan.entries[0].old_mode == 0o100644 and plan.entries[0].new_mode == 0o100644
    plan.record_sha256 = str(journal.sha256(b"{}"))
    plan.dir.mkdir()
    journal.begin(plan, new, old, b"{}")
    assert journal.recover(root, pkg).startswith("finished")
    assert (pkg / "__init__.py").read_text() == "x = 1\n"


def test_the_journal_says_where_every_file_waits(tmp_path):
    import json

    root, pkg = tree(tmp_path)
    interrupted(root, pkg)
    body = json.loads((pkg / ".patchset-journal" / "journal.json").read_text())
    a = body["entries"][0]
    assert a["path"] == "vllm/a.py" and a["staged"] == "vllm/.patchset-tmp-a.py"
    assert a["backup"] == f"vllm/.patchset-journal/old/{a['old_sha256']}"
    assert (root / a["staged"]).read_text() == "a = 2\n" and (root / a["backup"]).read_text() == "a = 1\n"
    assert a["old_mode"] == a["new_mode"] == 0o100644


# --- found by fuzzing (tests/fuzz, issue 26): a journal cut or damaged anywhere is recovered or refused ---------


def _damaged(root, pkg, edit) -> None:
    plan = interrupted(root, pkg)
    path = plan.dir / "journal.json"
    body = json.loads(path.read_bytes())
    path.write_text(json.dumps(edit(body)))


@pytest.mark.parametrize("edit, why", [
    # a record path outside the package: commit's rename failed with FileNotFoundError (found by the fuzzer)
    (lambda b: {**b, "record": "ollm/.rec"}, "not a file in the package folder"),
    (lambda b: {**b, "entries": [{**b["entries"][0], "local": "../outside.py"}]}, "not a path inside the tree"),
    (lambda b: {**b, "entries": [{**b["entries"][0], "local": "/etc/passwd"}]}, "not a path inside the tree"),
    (lambda b: {**b, "entries": [{**b["entries"][0], "new_sha256": "zz"}]}, "not a sha256"),
    (lambda b: {**b, "entries": [{**b["entries"][0], "old_mode": "644"}]}, "not a file mode"),
    (lambda b: {**b, "entries": [{"path": "x"}]}, "not one this patchset writes"),
    (lambda b: {**b, "new_dirs": ["../up"]}, "not a path inside the tree"),
    (lambda b: [b], "schema None"),
])
def test_a_damaged_journal_is_refused_naming_it_and_nothing_is_touched(tmp_path, edit, why):
    root, pkg = tree(tmp_path)
    _damaged(root, pkg, edit)
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    with pytest.raises(JournalError, match=why) as e:
        journal.recover(root, pkg)
    assert e.value.file and e.value.file.endswith("journal.json")
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("cut", [0, 1, 50, -2])
def test_a_journal_cut_anywhere_is_refused_not_a_crash(tmp_path, cut):
    root, pkg = tree(tmp_path)
    plan = interrupted(root, pkg)
    path = plan.dir / "journal.json"
    path.write_bytes(path.read_bytes()[:cut])
    with pytest.raises(JournalError, match="unreadable apply journal"):
        journal.recover(root, pkg)


def test_a_journal_naming_a_folder_that_is_gone_is_refused_not_a_crash(tmp_path):
    """Found by the long fuzz run (issue 26): a deleted file's entry under a folder that does not exist made
    the rollback write its staged copy there: FileNotFoundError, an internal error."""
    root, pkg = tree(tmp_path)
    plan, new, old = journal.plan(root, pkg, "vllm/.rec", [("vllm/a.py", "vllm/a.py", b"a = 2\n", None),
                                                          ("vllm/b.py", "vllm/b.py", None, None)])
    plan.record_sha256 = str(journal.sha256(b"{}"))
    plan.dir.mkdir()
    journal.begin(plan, new, old, b"{}")
    (pkg / "b.py").unlink()  # the deletion done, a staged copy damaged (so: roll back), the journal naming
    plan.staged(plan.entries[0]).write_bytes(b"damaged\n")  # another folder for the deleted file
    path = plan.dir / "journal.json"
    path.write_text(path.read_text().replace('"local": "vllm/b.py"', '"local": "vdlm/b.py"'))
    with pytest.raises(JournalError, match="cannot finish or undo") as e:
        journal.recover(root, pkg)
    assert e.value.file and e.value.file.endswith("journal.json")


def test_a_rollback_makes_again_the_folder_the_deletions_had_removed(tmp_path):
    root, pkg = tree(tmp_path)
    (pkg / "grpc" / "proto").mkdir(parents=True)
    (pkg / "grpc" / "__init__.py").write_text("g = 1\n")
    (pkg / "grpc" / "proto" / "e.proto").write_text("syntax\n")
    (pkg / "grpc").chmod(0o750)
    (pkg / "grpc" / "proto").chmod(0o755)
    files = [(p, p, None, None) for p in ("vllm/grpc/__init__.py", "vllm/grpc/proto/e.proto")]
    plan, new, old = journal.plan(root, pkg, "vllm/.rec", [*files, ("vllm/a.py", "vllm/a.py", b"a = 2\n", None)])
    assert plan.gone_dirs == [("vllm/grpc/proto", 0o40755), ("vllm/grpc", 0o40750)]
    plan.record_sha256 = str(journal.sha256(b"{}"))
    plan.dir.mkdir()
    journal.begin(plan, new, old, b"{}")
    for e in plan.entries[:2]:  # as a kill after the folders' removal leaves the tree
        plan.target(e).unlink()
    journal._remove_emptied(plan)
    assert not (pkg / "grpc").exists()
    (plan.dir / "record.json").write_text("torn")  # the staged record damaged: it must roll back
    assert journal.recover(root, pkg).startswith("rolled back")
    assert (pkg / "grpc" / "__init__.py").read_text() == "g = 1\n" and (pkg / "grpc/proto/e.proto").is_file()
    assert (pkg / "grpc").stat().st_mode & 0o777 == 0o750 and (pkg / "a.py").read_text() == "a = 1\n"


def test_a_journal_names_its_removed_folders_or_none(tmp_path):
    root, pkg = tree(tmp_path)
    plan = interrupted(root, pkg)
    body = json.loads((plan.dir / "journal.json").read_text())
    assert body["gone_dirs"] == []
    del body["gone_dirs"]  # as a journal an older patchset wrote it: still recovered
    (plan.dir / "journal.json").write_text(json.dumps(body))
    assert journal.recover(root, pkg) == "finished the interrupted apply (2 files)"
    plan = interrupted(root, pkg, b"a = 3\n")
    body["gone_dirs"] = [{"local": "../outside", "mode": 0o40755}]
    (plan.dir / "journal.json").write_text(json.dumps(body))
    with pytest.raises(JournalError, match="unreadable apply journal: '../outside' is not a path inside the tree"):
        journal.recover(root, pkg)
