"""The journal on its own: the lock, and the cases recovery must refuse rather than guess."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil

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
    assert journal.recover(root, pkg) == "removed an empty journal (the interrupted apply had changed nothing)"
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


# --- found by mutation testing (make mutate, docs/records/mutation.md) -----------------------------------------


def three_files(tmp_path):
    """A tree of three modules (one executable) and a journal replacing all three, staged completely."""
    root, pkg = tree(tmp_path)
    (pkg / "c.py").write_text("c = 1\n")
    (pkg / "c.py").chmod(0o755)
    files = [(f"vllm/{m}.py", f"vllm/{m}.py", f"{m} = 2\n".encode(), None) for m in "abc"]
    files.append(("vllm/new/deeper/d.py", "vllm/new/deeper/d.py", b"d = 2\n", None))
    plan, new, old = journal.plan(root, pkg, "vllm/.rec", files)
    plan.record_sha256 = str(journal.sha256(b"{}"))
    plan.dir.mkdir()
    journal.begin(plan, new, old, b"{}")
    return root, pkg, plan


def contents(pkg) -> dict[str, tuple[str, int]]:
    return {p.relative_to(pkg).as_posix(): (p.read_text(), p.stat().st_mode & 0o777) for p in sorted(pkg.rglob("*"))
            if p.is_file() and p.suffix != ".pyc"}


PRISTINE = {"a.py": ("a = 1\n", 0o644), "b.py": ("b = 1\n", 0o644), "c.py": ("c = 1\n", 0o755)}


@pytest.mark.parametrize("done", [1, 2, 3])
def test_a_rollback_after_part_of_the_commit_restores_every_file_with_its_mode(tmp_path, done):
    """What an error in the middle of commit leaves (replace_files then rolls back): the first ``done`` files
    replaced, the rest still pristine. Every file comes back, the executable one still executable, and the
    folders the apply made go, deepest first."""
    root, pkg, plan = three_files(tmp_path)
    for e in plan.entries[:done]:
        (root / e.local).parent.mkdir(parents=True, exist_ok=True)
        plan.staged(e).replace(root / e.local)
    journal.rollback(plan)
    assert contents(pkg) == PRISTINE
    assert sorted(p.name for p in pkg.iterdir()) == ["a.py", "b.py", "c.py"]


def test_a_rollback_whose_pristine_copy_is_gone_says_so_and_what_to_do(tmp_path):
    root, pkg, plan = three_files(tmp_path)
    for e in plan.entries:
        plan.staged(e).replace(root / e.local)
    plan.backup(plan.entries[1]).unlink()
    with pytest.raises(JournalError) as e:
        journal.rollback(plan)
    assert (e.value.message, e.value.file, e.value.hint) == (
        "vllm/b.py: the pristine copy kept by the interrupted apply is missing or damaged",
        str(plan.backup(plan.entries[1])), "restore the tree from its release")


def pyc_of(source, *, checked: bool | None = None, magic: bytes | None = None, mtime_off: int = 0) -> bytes:
    """The 16-byte header Python writes for ``source``: checked-hash, unchecked-hash (checked=False) or
    timestamp (None), with another magic number or an mtime off by some seconds if asked."""
    import py_compile

    mode = {None: py_compile.PycInvalidationMode.TIMESTAMP, True: py_compile.PycInvalidationMode.CHECKED_HASH,
            False: py_compile.PycInvalidationMode.UNCHECKED_HASH}[checked]
    cfile = importlib.util.cache_from_source(str(source))
    py_compile.compile(str(source), cfile=cfile, doraise=True, invalidation_mode=mode)
    with open(cfile, "rb") as f:
        data = bytearray(f.read())
    if magic is not None:
        data[:4] = magic
    if mtime_off:
        data[8:12] = (int.from_bytes(data[8:12], "little") + mtime_off).to_bytes(4, "little")
    with open(cfile, "wb") as f:
        f.write(data)
    return bytes(data[:16])


@pytest.mark.parametrize(("how", "valid"), [
    ({"checked": True}, True), ({"checked": False}, True), ({}, True),
    ({"checked": True, "magic": b"\x00\x00\r\n"}, False), ({"mtime_off": 1}, False),
])
def test_bytecode_matches_as_the_interpreter_validates_it(tmp_path, how, valid):
    source = tmp_path / "m.py"
    source.write_text("x = 1\n")
    header = pyc_of(source, **how)
    assert journal.bytecode_matches(source) is valid
    data, st = source.read_bytes(), source.stat()
    assert journal._pyc_valid(header, data, st) is valid
    assert journal._pyc_valid(header[:15], data, st) is False  # a torn header
    source.write_text("x = 2\n")  # the same size: a hash pyc no longer matches, a timestamp one may not either
    if how.get("checked") is not None:
        assert journal.bytecode_matches(source) is False


def test_bytecode_matches_only_without_a_legacy_pyc_and_with_its_source(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("x = 1\n")
    assert journal.bytecode_matches(source) is True  # nothing cached
    pyc_of(source, checked=True)
    assert journal.bytecode_matches(source) is True
    legacy = tmp_path / "m.pyc"
    legacy.write_bytes(b"")
    assert journal.bytecode_matches(source) is False  # beside the source, it shadows it once the source goes
    legacy.unlink()
    source.unlink()
    assert journal.bytecode_matches(source) is False


def test_a_rollback_whose_new_folder_became_a_file_meanwhile_leaves_that_file(tmp_path):
    root, pkg, plan = three_files(tmp_path)
    plan.staged(plan.entries[0]).write_bytes(b"torn")  # so recovery rolls back
    new = pkg / "new"
    for p in sorted(new.rglob("*"), reverse=True):
        p.unlink() if p.is_file() else p.rmdir()
    new.rmdir()
    new.write_text("someone else's file\n")
    assert journal.recover(root, pkg) == "rolled back the interrupted apply (4 files restored to pristine)"
    assert contents(pkg) == {**PRISTINE, "new": ("someone else's file\n", 0o644)}


LONG = "x" * 300


@pytest.mark.parametrize("edit, why", [
    (lambda b: {**b, "schema": 2}, "schema 2"),
    (lambda b: [b], "schema None"),
    (lambda b: {**b, "record_sha256": None}, "a sha256 is None, not a string"),
    (lambda b: {**b, "compile": "yes"}, "compile is 'yes', not true or false"),
    (lambda b: {**b, "entries": [{**b["entries"][0], "path": 5}]}, "path is 5, not a string"),
    (lambda b: {**b, "entries": [{**b["entries"][0], "local": 5}]}, "a path is 5, not a string"),
    (lambda b: {**b, "entries": [{**b["entries"][0], "local": "vllm//a.py"}]},
     "'vllm//a.py' is not a path inside the tree"),
    (lambda b: {**b, "entries": [{**b["entries"][0], "new_sha256": 7}]}, "a sha256 is 7, not a string"),
    (lambda b: {**b, "entries": [{**b["entries"][0], "new_sha256": "X" * 64}]}, f"{'X' * 64!r} is not a sha256"),
    (lambda b: {**b, "entries": [{"path": LONG}]},
     "an entry is not one this patchset writes: " + str({"path": LONG})[:200]),
    (lambda b: {**b, "entries": {}}, "entries and new_dirs must be lists"),
    (lambda b: {**b, "new_dirs": {}}, "entries and new_dirs must be lists"),
    (lambda b: {**b, "entries": [{**b["entries"][0], "new_sha256": "a" * 63}]}, f"{'a' * 63!r} is not a sha256"),
    (lambda b: {**b, "entries": [{**b["entries"][0], "local": "vllm/a\0.py"}]},
     "'vllm/a\\x00.py' is not a path inside the tree"),
    (lambda b: {**b, "entries": [{**b["entries"][0], "local": "vllm/./a.py"}]},
     "'vllm/./a.py' is not a path inside the tree"),
    (lambda b: {**b, "entries": [{**b["entries"][0], "local": ""}]}, "'' is not a path inside the tree"),
])
def test_a_damaged_journal_says_exactly_what_is_wrong(tmp_path, edit, why):
    root, pkg = tree(tmp_path)
    _damaged(root, pkg, edit)
    with pytest.raises(JournalError) as e:
        journal.recover(root, pkg)
    assert e.value.message == f"unreadable apply journal: {why}"
    assert e.value.hint == "this patchset cannot finish that apply; restore the tree"


def test_a_file_mode_is_a_number_of_at_most_six_octal_digits():
    assert [journal._mode(m) for m in (None, 0, 0o100644, 0o777777)] == [None, 0, 0o100644, 0o777777]
    for bad in (-1, 0o1000000, True, 1.0, "0o644"):
        with pytest.raises(ValueError, match="is not a file mode"):
            journal._mode(bad)


def test_someone_elses_change_is_refused_naming_the_journal_and_the_pristine_copy(tmp_path):
    root, pkg = tree(tmp_path)
    plan = interrupted(root, pkg)
    (pkg / "b.py").write_text("b = 'edited by hand'\n")
    with pytest.raises(JournalError) as e:
        journal.recover(root, pkg)
    assert (e.value.message, e.value.file, e.value.hint) == (
        "vllm/b.py changed while an apply was interrupted: it is neither the pristine nor the patched file",
        str(plan.dir), f"restore it by hand (its pristine bytes are in {plan.backup(plan.entries[1])}), then run "
        "`patchset apply --recover` again")


def test_a_damaged_staged_record_is_rolled_back_not_committed(tmp_path):
    root, pkg = tree(tmp_path)
    plan = interrupted(root, pkg)
    (plan.dir / "record.json").write_text("{torn")
    assert journal.recover(root, pkg) == "rolled back the interrupted apply (2 files restored to pristine)"
    assert contents(pkg) == {k: v for k, v in PRISTINE.items() if k != "c.py"}


def test_a_damaged_staged_file_after_one_already_in_place_is_rolled_back(tmp_path):
    root, pkg = tree(tmp_path)
    plan = interrupted(root, pkg)
    plan.staged(plan.entries[0]).replace(root / plan.entries[0].local)  # a.py done
    plan.staged(plan.entries[1]).write_text("b = 2 torn")  # b.py's new bytes damaged
    assert journal.recover(root, pkg) == "rolled back the interrupted apply (2 files restored to pristine)"
    assert contents(pkg) == {k: v for k, v in PRISTINE.items() if k != "c.py"}


def test_a_roll_forward_that_fails_is_rolled_back_then_refused(tmp_path):
    """The record cannot be put in place (a folder stands there): the files go back, the journal goes, and
    the error says what stopped it."""
    root, pkg = tree(tmp_path)
    interrupted(root, pkg)
    (pkg / ".rec").mkdir()
    with pytest.raises(JournalError, match="cannot finish or undo the interrupted apply: Is a directory") as e:
        journal.recover(root, pkg)
    assert e.value.hint == "restore the tree from its release"
    assert contents(pkg) == {k: v for k, v in PRISTINE.items() if k != "c.py"}
    assert not (pkg / ".patchset-journal").exists()


def test_a_rollback_leaves_a_new_folder_that_someone_else_put_a_file_in(tmp_path):
    root, pkg, plan = three_files(tmp_path)
    (pkg / "new" / "deeper" / "theirs.txt").write_text("kept\n")
    journal.rollback(plan)
    assert contents(pkg) == {**PRISTINE, "new/deeper/theirs.txt": ("kept\n", 0o644)}


def test_a_failed_commit_is_rolled_back_and_its_error_raised(tmp_path):
    root, pkg = tree(tmp_path)
    plan, new, old = journal.plan(root, pkg, "vllm/.rec", [("vllm/a.py", "vllm/a.py", b"a = 2\n", None)])
    (pkg / ".rec").mkdir()  # the record cannot be put in place
    with pytest.raises(IsADirectoryError):
        journal.replace_files(plan, new, old, b"{}")
    assert contents(pkg) == {"a.py": ("a = 1\n", 0o644), "b.py": ("b = 1\n", 0o644)}
    assert not plan.dir.exists()


def test_the_plan_keeps_modes_skips_what_does_not_change_and_names_the_folders_it_makes(tmp_path):
    root, pkg = tree(tmp_path)
    (pkg / "c.py").write_text("c = 1\n")
    (pkg / "c.py").chmod(0o755)
    plan, _, _ = journal.plan(root, pkg, "vllm/.rec", [
        ("vllm/a.py", "vllm/a.py", b"a = 1\n", None),  # unchanged: left out, and the rest still planned
        ("vllm/c.py", "vllm/c.py", b"c = 2\n", None),  # keeps its executable mode
        ("vllm/new/deeper/d.py", "vllm/new/deeper/d.py", b"d = 1\n", 0o100755),  # a new file with a mode
        ("vllm/e.py", "vllm/e.py", b"e = 1\n", None),  # a new file without one
    ])
    assert [(e.path, e.old_mode, e.new_mode) for e in plan.entries] == [
        ("vllm/c.py", 0o100755, 0o100755), ("vllm/new/deeper/d.py", None, 0o100755),
        ("vllm/e.py", None, 0o100644)]
    assert plan.new_dirs == ["vllm/new", "vllm/new/deeper"]


@pytest.mark.parametrize("kind", ["symlink", "folder"])
def test_the_plan_refuses_what_is_not_a_regular_file(tmp_path, kind):
    root, pkg = tree(tmp_path)
    target = pkg / "x.py"
    if kind == "symlink":
        target.symlink_to(pkg / "a.py")  # to a regular file, even
    else:
        target.mkdir()
    with pytest.raises(JournalError) as e:
        journal.plan(root, pkg, "vllm/.rec", [("vllm/x.py", "vllm/x.py", b"x = 1\n", None)])
    assert (e.value.message, e.value.file) == (
        "vllm/x.py is not a regular file in this tree; patchset replaces regular files only", str(target))


def test_a_staged_file_keeps_its_mode_through_the_roll_forward(tmp_path):
    root, pkg, plan = three_files(tmp_path)
    assert journal.recover(root, pkg) == "finished the interrupted apply (4 files)"
    assert {k: v for k, v in contents(pkg).items() if k != ".rec"} == {
        "a.py": ("a = 2\n", 0o644), "b.py": ("b = 2\n", 0o644), "c.py": ("c = 2\n", 0o755),
        "new/deeper/d.py": ("d = 2\n", 0o644)}


def test_what_the_journal_says_of_a_deleted_and_a_new_file(tmp_path):
    root, pkg = tree(tmp_path)
    plan, _, _ = journal.plan(root, pkg, "vllm/.rec", [("vllm/a.py", "vllm/a.py", None, None),
                                                       ("vllm/n.py", "vllm/n.py", b"n = 1\n", None)])
    gone, made = json.loads(plan.dumps())["entries"]
    assert (gone["staged"], gone["backup"]) == (None, f"vllm/.patchset-journal/old/{gone['old_sha256']}")
    assert (made["staged"], made["backup"]) == ("vllm/.patchset-tmp-n.py", None)


def test_a_committed_journal_whose_pristine_copies_are_gone_already_is_cleaned_up(tmp_path):
    """A kill during cleanup (after old/ went, before the journal did)."""
    root, pkg = tree(tmp_path)
    plan = interrupted(root, pkg)
    (pkg / ".rec").write_bytes(b"{}")  # the record in place: committed (the files are pristine or new alike)
    shutil.rmtree(plan.dir / "old")
    assert journal.recover(root, pkg) == "the interrupted apply had committed; removed its journal"
    assert not plan.dir.exists()


def test_recovery_sweeps_temporary_files_from_the_tree_its_bytecode_and_the_package(tmp_path):
    root, pkg = tree(tmp_path)
    (pkg / "sub").mkdir()
    (pkg / "sub" / "s.py").write_text("s = 1\n")
    plan, new, old = journal.plan(root, pkg, "vllm/.rec", [("vllm/sub/s.py", "vllm/sub/s.py", b"s = 2\n", None)])
    plan.record_sha256 = str(journal.sha256(b"{}"))
    plan.dir.mkdir()
    journal.begin(plan, new, old, b"{}")
    strays = [pkg / ".patchset-tmp-stray.py", pkg / "sub" / ".patchset-tmp-stray.py",
              pkg / "sub" / "__pycache__" / ".patchset-tmp-stray.pyc"]  # not a name the compile uses
    for stray in strays:
        stray.parent.mkdir(exist_ok=True)
        stray.write_bytes(b"left by a kill")
    assert journal.recover(root, pkg).startswith("finished")
    assert [p for p in root.rglob("*") if p.name.startswith(".patchset-tmp-")] == []
    assert not plan.dir.exists()


def test_a_journal_that_compiles_nothing_leaves_no_bytecode(tmp_path):
    root, pkg = tree(tmp_path)
    plan, new, old = journal.plan(root, pkg, "vllm/.rec", [("vllm/a.py", "vllm/a.py", b"a = 2\n", None)])
    plan.record_sha256 = str(journal.sha256(b"{}"))
    plan.compile = False
    plan.dir.mkdir()
    journal.begin(plan, new, old, b"{}")
    assert journal.recover(root, pkg) == "finished the interrupted apply (1 files)"
    assert not (pkg / "__pycache__").exists() or list((pkg / "__pycache__").iterdir()) == []


def test_the_bytecode_compiled_is_checked_hash_and_a_syntax_error_compiles_nothing(tmp_path):
    root, pkg = tree(tmp_path)
    plan, new, old = journal.plan(root, pkg, "vllm/.rec", [("vllm/a.py", "vllm/a.py", b"a = 2\n", None),
                                                          ("vllm/b.py", "vllm/b.py", b"def (\n", None)])
    plan.record_sha256 = str(journal.sha256(b"{}"))
    plan.dir.mkdir()
    journal.begin(plan, new, old, b"{}")
    assert journal.recover(root, pkg) == "finished the interrupted apply (2 files)"
    pycs = sorted(p.name for p in (pkg / "__pycache__").iterdir())
    assert pycs == [pyc_name("a")]  # none for b.py, and no temporary file
    header = (pkg / "__pycache__" / pycs[0]).read_bytes()[:16]
    assert int.from_bytes(header[4:8], "little") == 0b11  # checked-hash
    assert header[8:16] == importlib.util.source_hash(b"a = 2\n")


def test_a_legacy_pyc_beside_the_source_is_removed_with_the_cached_ones(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("x = 1\n")
    cached = pyc_of(source, checked=True) and importlib.util.cache_from_source(str(source))
    (tmp_path / "m.pyc").write_bytes(b"old")
    removed = journal.remove_stale_bytecode(source)
    assert sorted(map(str, removed)) == sorted([cached, str(tmp_path / "m.pyc")])
    assert not (tmp_path / "m.pyc").exists() and not os.path.exists(cached)


def test_write_synced_replaces_longer_bytes_and_never_follows_a_link(tmp_path):
    path = tmp_path / "f"
    journal._write_synced(path, b"a longer first version", 0o100640)
    journal._write_synced(path, b"short", 0o100644)
    assert (path.read_bytes(), path.stat().st_mode & 0o777) == (b"short", 0o644)
    outside = tmp_path / "outside"
    outside.write_bytes(b"theirs")
    link = tmp_path / "link"
    link.symlink_to(outside)
    with pytest.raises(OSError):
        journal._write_synced(link, b"mine", 0o100644)
    assert outside.read_bytes() == b"theirs"


def test_begin_takes_a_new_folder_that_appeared_since_the_plan(tmp_path):
    root, pkg = tree(tmp_path)
    plan, new, old = journal.plan(root, pkg, "vllm/.rec", [("vllm/n/x.py", "vllm/n/x.py", b"x = 1\n", None)])
    (pkg / "n").mkdir()  # made by someone else meanwhile
    plan.record_sha256 = str(journal.sha256(b"{}"))
    plan.dir.mkdir()
    journal.begin(plan, new, old, b"{}")
    assert journal.recover(root, pkg) == "finished the interrupted apply (1 files)"


def test_the_sealed_record_is_written_as_provenance_writes_records(tmp_path):
    from patchset.core import provenance

    root, pkg = tree(tmp_path)
    record = b'{"zeta": 1, "alpha": 2}'
    plan, new, old = journal.plan(root, pkg, "vllm/.rec", [("vllm/a.py", "vllm/a.py", b"a = 2\n", None)])
    plan.record_sha256 = str(journal.sha256(record))
    plan.dir.mkdir()
    journal.begin(plan, new, old, record)
    assert journal.recover(root, pkg) == "finished the interrupted apply (1 files)"
    sealed = (pkg / ".rec").read_bytes()
    assert sealed == provenance.dumps(json.loads(sealed))  # two-space indent, keys sorted, a final newline
    assert list(json.loads(sealed)) == ["alpha", "bytecode", "zeta"]
