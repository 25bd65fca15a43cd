"""Replace a set of files in a tree so that a crash at any instant is recoverable.

The order, and why:

1. Under an exclusive lock on the package folder, the journal
   (``<package>/.patchset-journal/journal.json``, written by an fsynced rename)
   names every path with its pristine and new sha256 and mode, where its new
   bytes are staged and where its old bytes are kept.
2. Staging: old bytes into ``<journal>/old/<sha256>``, new bytes beside each
   target as ``.patchset-tmp-<name>`` (same directory, so the rename is atomic),
   the commit record into ``<journal>/record.json``; all fsynced.
3. The bytecode of every touched module is dropped before any source changes,
   so from here on no stale ``.pyc`` can run under any source; then each staged
   file is renamed over its target (or the target deleted); then each folder the deletions left empty
   is removed, deepest first, as GNU patch and git apply do (the journal lists them with their modes, so a
   rollback makes them again before it puts their files back; a folder the patch does not empty, or one
   empty before it, stays).
4. Checked-hash pycs are compiled (also through ``.patchset-tmp-`` files); any
   pyc that would still run other code than its source is removed, and the
   staged record is sealed with the sha256 of the bytecode left (the journal
   learns the sealed record's sha256 first, so a kill between the two is
   rolled back, and one after it rolled forward).
5. The record is renamed into place: the commit point. Then the journal goes.

A kill anywhere leaves the journal. ``recover`` rolls forward when every new
file is in place or staged intact (always true once step 3 began), and back
otherwise; it is idempotent, so a kill during recovery is recovered by the next
run. Every temporary file starts with ``.patchset-tmp-`` or lies in the journal.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import itertools
import json
import os
import py_compile
import shutil
import signal
import stat
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from patchset.core import bytecode
from patchset.core.digest import sha256
from patchset.errors import PatchsetError
from patchset.sources.local import JOURNAL_NAME

PREFIX = ".patchset-tmp-"
SCHEMA = 1
REGULAR = stat.S_IFREG | 0o644
# Test-only hook: "rename:N" SIGKILLs this process just before its N-th rename or deletion in the
# tree (staged file, pyc, record, rollback): the crash harness uses it to stop apply at every step.
# "committed" SIGKILLs it just after the commit point (the record in place, the journal not yet gone).
KILL_ENV = "PATCHSET_TEST_KILL_AT"
KILL_COMMITTED = "committed"
_steps = itertools.count(1)


class JournalError(PatchsetError):
    """An interrupted apply cannot be finished or undone without a person."""


@dataclass
class Entry:
    """One file an apply writes or deletes, with its content hashes and modes before and after."""

    path: str  # repository layout, for messages
    local: str  # relative to the tree root
    old_sha256: str | None  # None: the file does not exist before
    new_sha256: str | None  # None: the file is deleted
    old_mode: int | None
    new_mode: int | None


@dataclass
class Journal:
    """What an apply is about to do to a tree, written down first so that it can be finished or undone."""

    root: Path  # the tree
    package: Path  # the package folder: holds the journal and the record
    record: str  # the provenance record, relative to root
    record_sha256: str
    entries: list[Entry]
    compile: bool = True
    new_dirs: list[str] = field(default_factory=list)  # created by staging, removed by a rollback
    gone_dirs: list[tuple[str, int]] = field(default_factory=list)  # (folder, mode) the deletions empty

    @property
    def dir(self) -> Path:
        return self.package / JOURNAL_NAME

    def target(self, e: Entry) -> Path:
        return self.root / e.local

    def staged(self, e: Entry) -> Path:
        t = self.target(e)
        return t.with_name(PREFIX + t.name)

    def backup(self, e: Entry) -> Path:
        return self.dir / "old" / str(e.old_sha256)

    def dumps(self) -> bytes:
        # Where each file's bytes wait is derived from its path; written out too, for a person reading this.
        entries = [{**asdict(e), "staged": str(self.staged(e).relative_to(self.root)) if e.new_sha256 else None,
                    "backup": str(self.backup(e).relative_to(self.root)) if e.old_sha256 else None}
                   for e in self.entries]
        body = {"schema": SCHEMA, "record": self.record, "record_sha256": self.record_sha256,
                "compile": self.compile, "new_dirs": self.new_dirs, "entries": entries,
                "gone_dirs": [{"local": d, "mode": m} for d, m in self.gone_dirs]}
        return (json.dumps(body, indent=1, sort_keys=True) + "\n").encode()

    @classmethod
    def load(cls, root: Path, package: Path) -> Journal:
        path = package / JOURNAL_NAME / "journal.json"
        try:
            body = json.loads(path.read_bytes())
            if not isinstance(body, dict) or body.get("schema") != SCHEMA:
                raise ValueError(f"schema {body.get('schema') if isinstance(body, dict) else None!r}")
            entries = body["entries"]
            if not isinstance(entries, list) or not isinstance(body["new_dirs"], list):
                raise ValueError("entries and new_dirs must be lists")
            if (root / _inside(body["record"])).parent != package:
                raise ValueError(f"the record {body['record']!r:.200} is not a file in the package folder")
            gone = body.get("gone_dirs", [])  # absent from a journal an older patchset wrote: none
            if not isinstance(gone, list):
                raise ValueError("gone_dirs must be a list")
            journal = cls(root, package, body["record"], str(_digest(body["record_sha256"])),
                          [_entry(e) for e in entries], _bool(body["compile"], "compile"),
                          [_inside(d) for d in body["new_dirs"]], [_gone(d) for d in gone])
        except (ValueError, KeyError, TypeError, RecursionError) as e:
            raise JournalError(f"unreadable apply journal: {e!s:.300}", file=str(path),
                               hint="this patchset cannot finish that apply; restore the tree") from e
        return journal


def _entry(body: object) -> Entry:
    """One entry as this patchset writes it; anything else (a damaged or foreign journal) is a ValueError."""
    if not isinstance(body, dict) or set(body) - {"staged", "backup"} != _ENTRY_FIELDS:
        raise ValueError(f"an entry is not one this patchset writes: {str(body)[:200]}")
    return Entry(_str(body["path"], "path"), _inside(body["local"]), _digest(body["old_sha256"], True),
                 _digest(body["new_sha256"], True), _mode(body["old_mode"]), _mode(body["new_mode"]))


def _gone(body: object) -> tuple[str, int]:
    if not isinstance(body, dict) or set(body) != {"local", "mode"} or _mode(body["mode"]) is None:
        raise ValueError(f"a removed folder is not one this patchset writes: {str(body)[:200]}")
    return _inside(body["local"]), int(body["mode"])


_ENTRY_FIELDS = {"path", "local", "old_sha256", "new_sha256", "old_mode", "new_mode"}


def _str(value: object, key: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{key} is {value!r:.80}, not a string")
    return value


def _bool(value: object, key: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{key} is {value!r:.80}, not true or false")
    return value


def _inside(value: object) -> str:
    """A path the journal names: relative, inside the tree, no '..' (recovery writes and deletes there)."""
    path = _str(value, "a path")
    parts = path.split("/")
    if not path or path.startswith("/") or "\0" in path or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{path!r:.200} is not a path inside the tree")
    return path


def _digest(value: object, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    text = _str(value, "a sha256")
    if len(text) != 64 or text.strip("0123456789abcdef"):
        raise ValueError(f"{text!r:.80} is not a sha256")
    return text


def _mode(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 0o1000000:
        raise ValueError(f"mode {value!r:.80} is not a file mode")
    return value


@contextlib.contextmanager
def locked(package: Path) -> Iterator[None]:
    """One apply or recovery at a time per tree: a lock on the folder itself leaves no file behind."""
    fd = os.open(package, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as e:
            raise JournalError("another patchset apply is running on this tree", file=str(package),
                               hint="wait for it to finish") from e
        yield
    finally:
        os.close(fd)  # releases the lock


# --- writing ------------------------------------------------------------------------------------------


def plan(root: Path, package: Path, record: str,
         files: list[tuple[str, str, bytes | None, int | None]]) -> tuple[Journal, dict[str, bytes], dict[str, bytes]]:
    """The journal for writing ``files`` (path, local path, new bytes or None, mode or None) into the tree.

    Returns it with the new and old bytes by sha256. A file whose bytes and mode would not change is left out;
    a new file without a mode is 0644, a rewritten one keeps its mode.
    """
    entries: list[Entry] = []
    new: dict[str, bytes] = {}
    old: dict[str, bytes] = {}
    new_dirs: set[str] = set()
    for path, local, content, wanted in files:
        target = root / local
        if target.is_symlink() or (target.exists() and not target.is_file()):
            raise JournalError(f"{path} is not a regular file in this tree; patchset replaces regular files only",
                               file=str(target))
        before = target.read_bytes() if target.exists() else None
        old_mode = _state(target)[1]
        mode = None if content is None else (wanted or old_mode or REGULAR)
        if (content, mode) == (before, old_mode):
            continue
        entries.append(Entry(path, local, sha256(before), sha256(content), old_mode, mode))
        if before is not None:
            old[str(sha256(before))] = before
        if content is not None:
            new[str(sha256(content))] = content
            new_dirs |= _missing_dirs(root, target.parent)
    return (Journal(root, package, record, "", entries, new_dirs=sorted(new_dirs, key=len),
                    gone_dirs=_emptied_dirs(root, package, entries)), new, old)


def _emptied_dirs(root: Path, package: Path, entries: list[Entry]) -> list[tuple[str, int]]:
    """(folder, mode) of every folder these deletions leave empty, deepest first: GNU patch and git apply
    remove them. A folder holding anything else, one that gains a file, the package folder (it holds the
    journal) and those above it stay. The bytecode of a deleted module goes with it, so a ``__pycache__``
    holding only such bytecode does not keep its folder."""
    deleted = {root / e.local for e in entries if e.new_sha256 is None}
    if not deleted:
        return []
    kept = {package, *package.parents}
    for e in entries:
        if e.new_sha256 is not None:
            kept |= set((root / e.local).parents)
    stems = {(p.parent, p.stem) for p in deleted if p.suffix == ".py"}
    emptied: dict[Path, bool] = {}

    def goes(path: Path) -> bool:
        if path in deleted:
            return True
        if path.is_symlink() or not path.is_dir():
            return path.suffix == ".pyc" and (path.parent, path.stem) in stems  # a legacy pyc beside it
        if path.name == "__pycache__":
            return all(not c.is_symlink() and c.is_file() and (path.parent, c.name.split(".", 1)[0]) in stems
                       and c.suffix == ".pyc" for c in path.iterdir())
        return empties(path)

    def empties(folder: Path) -> bool:
        if folder not in emptied:
            emptied[folder] = (folder not in kept and root in folder.parents and not folder.is_symlink()
                               and any(True for _ in folder.iterdir()) and all(goes(c) for c in folder.iterdir()))
        return emptied[folder]

    out = set()
    for path in deleted:
        folder = path.parent
        while empties(folder):
            out.add(folder)
            folder = folder.parent
    return [(str(d.relative_to(root)), stat.S_IFMT(d.stat().st_mode) | stat.S_IMODE(d.stat().st_mode))
            for d in sorted(out, key=lambda d: (-len(d.parts), str(d)))]


def _missing_dirs(root: Path, folder: Path) -> set[str]:
    missing = set()
    while folder != root and not folder.exists():
        missing.add(str(folder.relative_to(root)))
        folder = folder.parent
    return missing


def replace_files(journal: Journal, new: dict[str, bytes], old: dict[str, bytes], record: bytes,
                  *, compile_bytecode: bool = True) -> None:
    """Carry out ``journal`` (new and old bytes by sha256) with ``record`` as its commit; undo on any error."""
    journal.record_sha256 = str(sha256(record))
    journal.compile = compile_bytecode
    journal.dir.mkdir()  # exists: an unrecovered apply, which the caller recovers first under the lock
    try:
        begin(journal, new, old, record)
        commit(journal)
    except BaseException:
        rollback(journal)
        raise


def begin(journal: Journal, new: dict[str, bytes], old: dict[str, bytes], record: bytes) -> None:
    _write_journal(journal)
    _fsync_dir(journal.package)
    (journal.dir / "old").mkdir()
    for d in journal.new_dirs:
        (journal.root / d).mkdir(exist_ok=True)
    for e in journal.entries:
        if e.old_sha256 is not None and not journal.backup(e).exists():
            _write_synced(journal.backup(e), old[e.old_sha256], REGULAR)
        if e.new_sha256 is not None:
            _write_synced(journal.staged(e), new[e.new_sha256], e.new_mode or REGULAR)
    _write_synced(journal.dir / "record.json", record, REGULAR)
    folders = {journal.staged(e).parent for e in journal.entries} | {journal.dir / "old", journal.dir}
    for folder in folders | {(journal.root / d).parent for d in journal.new_dirs}:
        _fsync_dir(folder)


def _write_journal(journal: Journal) -> None:
    tmp = journal.dir / (PREFIX + "journal.json")
    _write_synced(tmp, journal.dumps(), REGULAR)
    _step()
    os.replace(tmp, journal.dir / "journal.json")
    _fsync_dir(journal.dir)


def commit(journal: Journal) -> None:
    """Steps 3 to 5: from a complete staging to the record in place, then the journal removed."""
    sources = [journal.target(e) for e in journal.entries if e.path.endswith(".py")]
    for source in sources:
        remove_stale_bytecode(source)
    for e in journal.entries:
        if _done(journal, e):
            continue
        if e.new_sha256 is None:
            _step()
            journal.target(e).unlink()
        else:
            _step()
            os.replace(journal.staged(e), journal.target(e))
    for folder in {journal.target(e).parent for e in journal.entries}:
        _fsync_dir(folder)
    for source in sources:
        refresh_bytecode(source, compile_bytecode=journal.compile)
    _remove_emptied(journal)
    _seal_record(journal)
    _step()
    os.replace(journal.dir / "record.json", journal.root / journal.record)
    _fsync_dir(journal.package)
    _step(KILL_COMMITTED)
    cleanup(journal)


def _remove_emptied(journal: Journal) -> None:
    """The folders the deletions left empty, deepest first (a rerun after a kill finds some gone already)."""
    for local, _ in journal.gone_dirs:
        folder = journal.root / local
        _remove_empty(folder / "__pycache__")  # emptied of the deleted modules' bytecode just now
        if folder.is_dir():
            _step()
            _remove_empty(folder)
        _fsync_dir(folder.parent)


def _remove_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):  # gone already, or not empty: something else lives there now, and stays
        folder.rmdir()


def _seal_record(journal: Journal) -> None:
    """The staged record gains the bytecode this commit leaves; the journal names the sealed record."""
    staged = journal.dir / "record.json"
    record = json.loads(staged.read_bytes())
    record["bytecode"] = bytecode.settle_tree({e.path: journal.target(e) for e in journal.entries})
    data = (json.dumps(record, indent=2, sort_keys=True) + "\n").encode()  # as provenance.dumps writes it
    if sha256(data) == journal.record_sha256:
        return
    tmp = journal.dir / (PREFIX + "record.json")
    _write_synced(tmp, data, REGULAR)
    journal.record_sha256 = str(sha256(data))
    _write_journal(journal)
    _step()
    os.replace(tmp, staged)
    _fsync_dir(journal.dir)


def rollback(journal: Journal) -> None:
    """Put every file back as the journal found it, drop bytecode that does not match, forget the journal."""
    for local, _ in reversed(journal.gone_dirs):  # shallowest first: the folders the deletions emptied
        folder = journal.root / local
        if not folder.is_dir():
            folder.mkdir(0o700)  # its own mode once its files are back in it
            _fsync_dir(folder.parent)
    for e in reversed(journal.entries):
        if _state(journal.target(e)) == (e.old_sha256, e.old_mode):
            continue
        target = journal.target(e)
        if e.old_sha256 is None:
            _step()
            target.unlink()
            continue
        backup = journal.backup(e)
        if _state(backup)[0] != e.old_sha256:
            raise JournalError(f"{e.path}: the pristine copy kept by the interrupted apply is missing or damaged",
                               file=str(backup), hint="restore the tree from its release")
        _write_synced(journal.staged(e), backup.read_bytes(), e.old_mode or REGULAR)
        _step()
        os.replace(journal.staged(e), target)
    # Every touched module, not only those restored now: a kill during an earlier rollback may have left
    # new pycs. Python rebuilds what is removed; nothing is compiled, so a rollback adds no file.
    for source in {journal.target(e) for e in journal.entries if e.path.endswith(".py")}:
        if not bytecode_matches(source):
            remove_stale_bytecode(source)
    _remove_temporaries(journal)  # a kill while staging left some in the new folders, which must go empty
    for d in sorted(journal.new_dirs, key=len, reverse=True):
        _remove_empty(journal.root / d / "__pycache__")  # a new module's, its bytecode dropped just above
        _remove_empty(journal.root / d)
    for local, mode in journal.gone_dirs:  # as recorded (a kill after a mkdir above left 0700)
        with contextlib.suppress(FileNotFoundError):
            os.chmod(journal.root / local, stat.S_IMODE(mode))
    cleanup(journal)


def cleanup(journal: Journal) -> None:
    """Every temporary file of this journal, the journal last (so a kill here is cleaned up next time)."""
    _remove_temporaries(journal)
    shutil.rmtree(journal.dir / "old", ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        (journal.dir / "record.json").unlink()
    shutil.rmtree(journal.dir)
    _fsync_dir(journal.package)


def _remove_temporaries(journal: Journal) -> None:
    folders = {journal.target(e).parent for e in journal.entries}
    folders |= {f / "__pycache__" for f in folders} | {journal.package}
    for folder in folders:
        for tmp in folder.glob(PREFIX + "*") if folder.is_dir() else ():
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()


# --- recovery -----------------------------------------------------------------------------------------


def recover(root: Path, package: Path) -> str:
    """Finish or undo an interrupted apply; '' when there was none. Idempotent."""
    jdir = package / JOURNAL_NAME
    if not jdir.exists():
        return ""
    if not (jdir / "journal.json").is_file():
        shutil.rmtree(jdir)  # killed before the journal existed: nothing outside it was touched yet
        return "removed an empty journal (the interrupted apply had changed nothing)"
    journal = Journal.load(root, package)
    try:
        return _recover(journal)
    except OSError as e:  # a folder the journal names is gone, a file cannot be written: a person must look
        raise JournalError(f"cannot finish or undo the interrupted apply: {e.strerror}: {e.filename}",
                           file=str(jdir / "journal.json"), hint="restore the tree from its release") from e


def _recover(journal: Journal) -> str:
    root = journal.root
    _refuse_foreign_changes(journal)
    if _state(root / journal.record)[0] == journal.record_sha256:
        cleanup(journal)
        return "the interrupted apply had committed; removed its journal"
    if _can_roll_forward(journal):
        try:
            commit(journal)
        except BaseException:
            rollback(journal)
            raise
        return f"finished the interrupted apply ({len(journal.entries)} files)"
    rollback(journal)
    return f"rolled back the interrupted apply ({len(journal.entries)} files restored to pristine)"


def _can_roll_forward(journal: Journal) -> bool:
    if _state(journal.dir / "record.json")[0] != journal.record_sha256:
        return False
    for e in journal.entries:
        if _done(journal, e) or e.new_sha256 is None:
            continue
        if _state(journal.staged(e)) != (e.new_sha256, e.new_mode):
            return False
    return True


def _refuse_foreign_changes(journal: Journal) -> None:
    for e in journal.entries:
        now = _state(journal.target(e))
        if now not in ((e.old_sha256, e.old_mode), (e.new_sha256, e.new_mode)):
            raise JournalError(f"{e.path} changed while an apply was interrupted: it is neither the pristine "
                               "nor the patched file", file=str(journal.dir),
                               hint=f"restore it by hand (its pristine bytes are in {journal.backup(e)}), "
                                    "then run `patchset apply --recover` again")


def _done(journal: Journal, e: Entry) -> bool:
    return _state(journal.target(e)) == (e.new_sha256, e.new_mode)


def _state(path: Path) -> tuple[str | None, int | None]:
    """(sha256, mode) of a regular file, (None, None) when there is none."""
    try:
        st = path.lstat()
        if not stat.S_ISREG(st.st_mode):
            return ("not a regular file", st.st_mode)
        return sha256(path.read_bytes()), stat.S_IFMT(st.st_mode) | stat.S_IMODE(st.st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return None, None


# --- bytecode -----------------------------------------------------------------------------------------


def bytecode_files(source: Path) -> list[Path]:
    """The cached bytecode of this module for any interpreter and optimisation level (``__pycache__``).

    images/bootstrap.py applies the same rule inside test containers with its own few lines: it runs
    on the image's Python, where patchset is not installed.
    """
    return list((source.parent / "__pycache__").glob(f"{source.stem}.*.pyc"))


def remove_stale_bytecode(source: Path) -> list[Path]:
    """Every cached bytecode file of this module, for any interpreter."""
    stale = bytecode_files(source)
    legacy = source.with_suffix(".pyc")
    if legacy.exists():
        stale.append(legacy)
    for f in stale:
        with contextlib.suppress(FileNotFoundError):
            f.unlink()
    return stale


def bytecode_matches(source: Path) -> bool:
    """Does every cached pyc of this module validate against its source, as this interpreter checks it?"""
    pycs = bytecode_files(source)
    if source.with_suffix(".pyc").exists():
        return False  # a legacy pyc beside the source shadows it when the source is gone
    if not pycs:
        return True
    try:
        data, st = source.read_bytes(), source.stat()
    except FileNotFoundError:
        return False
    return all(_pyc_valid(pyc.read_bytes()[:16], data, st) for pyc in pycs)


def _pyc_valid(header: bytes, source: bytes, st: os.stat_result) -> bool:
    if len(header) < 16 or header[:4] != importlib.util.MAGIC_NUMBER:
        return False  # another interpreter's: it cannot be checked here, so it goes
    flags = int.from_bytes(header[4:8], "little")
    if flags & 0b1:
        return header[8:16] == importlib.util.source_hash(source)
    mtime, size = int.from_bytes(header[8:12], "little"), int.from_bytes(header[12:16], "little")
    return mtime == int(st.st_mtime) & 0xFFFFFFFF and size == st.st_size & 0xFFFFFFFF


def refresh_bytecode(source: Path, *, compile_bytecode: bool = True) -> None:
    remove_stale_bytecode(source)
    if compile_bytecode and source.exists():
        compile_checked(source)


def compile_checked(source: Path) -> None:
    """A checked-hash pyc for this interpreter, written through a .patchset-tmp- file (never torn)."""
    final = Path(importlib.util.cache_from_source(str(source)))
    tmp = final.with_name(PREFIX + final.name)
    try:
        py_compile.compile(str(source), cfile=str(tmp), doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    except (py_compile.PyCompileError, OSError):
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        return  # Python compiles it on import; the stale pyc is gone already
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    _step()
    os.replace(tmp, final)


# --- small pieces -------------------------------------------------------------------------------------


def _write_synced(path: Path, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fchmod(fd, stat.S_IMODE(mode))
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _step(point: str = "") -> None:
    """The test-only kill hook (see KILL_ENV) before a rename, or at a named ``point``; costs one environment
    lookup otherwise."""
    spec = os.environ.get(KILL_ENV)
    if not spec:
        return
    if point:
        if spec == point:
            os.kill(os.getpid(), signal.SIGKILL)
    elif spec.startswith("rename:") and next(_steps) == int(spec[len("rename:"):]):
        os.kill(os.getpid(), signal.SIGKILL)
