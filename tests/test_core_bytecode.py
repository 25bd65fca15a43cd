"""bytecode: which cached .pyc the interpreter loads for a source, and whether its code is the source's.

Every verdict is checked against the interpreter itself: ``SourceFileLoader.get_code`` says which
code Python really runs for the module.
"""

from __future__ import annotations

import hashlib
import importlib._bootstrap_external as bootstrap
import importlib.machinery
import importlib.util
import json
import marshal
import os
import py_compile
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers import udiff, write_manifest, write_patch

from patchset.core import bytecode, provenance
from patchset.core.manifest_load import load_manifest
from patchset.errors import PatchsetError
from patchset.verbs.apply import apply_series

PRISTINE = b"def watermark(req):\n    return req.num_tokens\n"
PATCHED = b"def watermark(req):\n    return max(req.num_prompt_tokens, req.num_tokens - 1)\n"
TAG = sys.implementation.cache_tag


def module(tmp_path: Path, content: bytes = PATCHED, name: str = "scheduler") -> Path:
    path = tmp_path / f"{name}.py"
    path.write_bytes(content)
    return path


def pyc_path(source: Path, level: int = 0, tag: str = TAG) -> Path:
    suffix = f".opt-{level}" if level else ""
    return source.parent / "__pycache__" / f"{source.stem}.{tag}{suffix}.pyc"


def write_pyc(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def code_of(source: bytes, level: int = 0):
    return compile(source, "anywhere.py", "exec", dont_inherit=True, optimize=level)


def hash_pyc(code_source: bytes, hash_of: bytes, checked: bool = True) -> bytes:
    return bytes(bootstrap._code_to_hash_pyc(code_of(code_source), importlib.util.source_hash(hash_of), checked))


def timestamp_pyc(code_source: bytes, mtime: int, size: int) -> bytes:
    return bytes(bootstrap._code_to_timestamp_pyc(code_of(code_source), mtime, size))


def loaded_code(source: Path):
    """The code object Python really runs for the module at level 0. Only looks: where a pyc is stale,
    the loader would write a fresh one unless told not to (PYTHONDONTWRITEBYTECODE may be unset)."""
    before = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        return importlib.machinery.SourceFileLoader(source.stem, str(source)).get_code(source.stem)
    finally:
        sys.dont_write_bytecode = before


def verdicts(source: Path) -> dict[str, str]:
    return {Path(f.pyc).name: f.verdict for f in bytecode.inspect([str(source)])}


# --- headers, names, acceptance --------------------------------------------------------------------


def test_the_header_says_which_kind_of_pyc_it_is():
    ts = bytecode.parse_header(timestamp_pyc(PRISTINE, 1234, 56))
    assert (ts.kind, ts.mtime, ts.size) == (bytecode.TIMESTAMP, 1234, 56)
    checked = bytecode.parse_header(hash_pyc(PRISTINE, PATCHED))
    assert (checked.kind, checked.source_hash) == (bytecode.CHECKED_HASH, importlib.util.source_hash(PATCHED))
    assert bytecode.parse_header(hash_pyc(PRISTINE, PATCHED, checked=False)).kind == bytecode.UNCHECKED_HASH
    with pytest.raises(ValueError, match="flags"):
        bytecode.parse_header(importlib.util.MAGIC_NUMBER + (4).to_bytes(4, "little") + bytes(8))
    with pytest.raises(ValueError, match="shorter"):
        bytecode.parse_header(b"\x00" * 15)


def test_the_file_name_gives_tag_and_optimisation_level():
    assert bytecode.cache_name("scheduler.cpython-311.pyc", "scheduler") == ("cpython-311", 0)
    assert bytecode.cache_name("scheduler.cpython-311.opt-2.pyc", "scheduler") == ("cpython-311", 2)
    assert bytecode.cache_name("scheduler.cpython-311.opt-3.pyc", "scheduler") == ("cpython-311", None)
    assert bytecode.cache_name("scheduler_x.cpython-311.pyc", "scheduler") is None
    assert bytecode.cache_name("scheduler.py", "scheduler") is None


def test_acceptance_follows_each_kind_of_pyc():
    magic = importlib.util.MAGIC_NUMBER
    size = len(PATCHED)

    def status(data: bytes, mtime: float = 1000.7, mode: str = "default") -> str:
        return bytecode.acceptance(bytecode.parse_header(data), PATCHED, mtime, size, check_hash_based=mode)[0]

    assert status(timestamp_pyc(PRISTINE, 1000, size)) == bytecode.ACCEPTED
    assert status(timestamp_pyc(PRISTINE, 1001, size)) == bytecode.IGNORED
    assert status(timestamp_pyc(PRISTINE, 1000, size + 1)) == bytecode.IGNORED
    assert status(hash_pyc(PRISTINE, PATCHED)) == bytecode.ACCEPTED
    assert status(hash_pyc(PRISTINE, PRISTINE)) == bytecode.DORMANT
    assert status(hash_pyc(PRISTINE, PRISTINE), mode="never") == bytecode.ACCEPTED
    assert status(hash_pyc(PRISTINE, PRISTINE, checked=False)) == bytecode.ACCEPTED
    assert status(hash_pyc(PRISTINE, PRISTINE, checked=False), mode="always") == bytecode.IGNORED
    other_magic = b"\x00\x00" + magic[2:]
    assert status(other_magic + hash_pyc(PRISTINE, PATCHED)[4:]) == bytecode.IGNORED


def test_same_code_ignores_where_it_was_compiled_but_not_what_it_does():
    # co_filename differs (an installer compiles elsewhere); every flag, including __future__ ones, counts.
    data = bytes(bootstrap._code_to_hash_pyc(compile(PATCHED, "/build/x.py", "exec", dont_inherit=True),
                                             b"\0" * 8, True))
    assert bytecode.same_code(data, PATCHED, "/site/x.py", 0) == (True, "")
    same, why = bytecode.same_code(hash_pyc(PRISTINE, PATCHED), PATCHED, "/site/x.py", 0)
    assert not same and "<module>.watermark" in why
    same, why = bytecode.same_code(data[:16] + b"garbage", PATCHED, "/site/x.py", 0)
    assert not same and "importing the module fails" in why
    # -O strips asserts: the level-1 code of a source with an assert is not its level-0 code.
    with_assert = b"def f(x):\n    assert x\n    return x\n"
    level0 = bytes(bootstrap._code_to_hash_pyc(code_of(with_assert, 0), b"\0" * 8, True))
    assert bytecode.same_code(level0, with_assert, "x.py", 0)[0]
    assert not bytecode.same_code(level0, with_assert, "x.py", 1)[0]


# --- what the interpreter loads for a module ---------------------------------------------------------


def test_old_code_under_the_new_sources_hash_is_found_and_is_what_python_runs(tmp_path):
    source = module(tmp_path)
    write_pyc(pyc_path(source), hash_pyc(PRISTINE, PATCHED))
    assert loaded_code(source) == code_of(PRISTINE)  # the interpreter really runs the old code
    (finding,) = bytecode.inspect([str(source)])
    assert (finding.verdict, finding.kind, finding.level, finding.tag) == (bytecode.DIFFERS, "checked-hash", 0, TAG)
    assert "watermark" in finding.why


def test_a_stale_timestamp_pyc_runs_only_when_mtime_and_size_match(tmp_path):
    source = module(tmp_path)
    st = source.stat()
    pyc = write_pyc(pyc_path(source), timestamp_pyc(PRISTINE, int(st.st_mtime), st.st_size))
    assert loaded_code(source) == code_of(PRISTINE)
    assert verdicts(source) == {pyc.name: bytecode.DIFFERS}

    write_pyc(pyc, timestamp_pyc(PRISTINE, int(st.st_mtime) - 1, st.st_size))
    assert loaded_code(source) == code_of(PATCHED)
    assert verdicts(source) == {pyc.name: bytecode.IGNORED}


def test_bytecode_compiled_from_the_source_matches_at_every_level(tmp_path):
    source = module(tmp_path, b'"""doc"""\nassert __debug__\n' + PATCHED)
    for level in bytecode.LEVELS:
        py_compile.compile(str(source), cfile=str(pyc_path(source, level)), optimize=level,
                           invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH, doraise=True)
    found = bytecode.inspect([str(source)])
    assert sorted(f.level for f in found) == [0, 1, 2]
    assert {f.verdict for f in found} == {bytecode.MATCHES}
    # The level decides what the source is compared with: level-0 code under the -OO name differs.
    write_pyc(pyc_path(source, 2), pyc_path(source, 0).read_bytes())
    assert verdicts(source)[pyc_path(source, 2).name] == bytecode.DIFFERS


def test_a_pyc_no_python_here_loads_is_named_not_judged(tmp_path):
    source = module(tmp_path)
    foreign = write_pyc(pyc_path(source, tag="cpython-299"), hash_pyc(PRISTINE, PATCHED))
    (finding,) = bytecode.inspect([str(source)])
    assert finding.pyc == str(foreign) and finding.verdict == bytecode.NO_INTERPRETER
    assert "cpython-299" in finding.why


def test_another_interpreter_judges_its_own_pycs_from_the_shipped_text(tmp_path):
    """What happens for a second Python in an image: this file's text runs in that interpreter."""
    source = module(tmp_path)
    pyc = write_pyc(pyc_path(source), hash_pyc(PRISTINE, PATCHED))
    (finding,) = bytecode._judged_elsewhere(sys.executable, TAG, [(str(pyc), str(source), 0)])
    assert finding.verdict == bytecode.DIFFERS and finding.python.startswith(sys.implementation.name)
    assert TAG in bytecode.interpreters()


def test_the_shipped_text_runs_with_python_c_and_prints_one_json_line(tmp_path):
    source = module(tmp_path)
    write_pyc(pyc_path(source), hash_pyc(PRISTINE, PATCHED))
    done = subprocess.run([sys.executable, "-B", "-c", bytecode.BOOT, "inspect",
                           json.dumps({"sources": [str(source)]})],
                          env={**os.environ, bytecode.SCRIPT_ENV: bytecode.script()}, capture_output=True,
                          check=True, cwd=tmp_path)
    (row,) = json.loads(done.stdout)
    assert row["verdict"] == bytecode.DIFFERS and row["pyc"] == str(pyc_path(source))


# --- build's compile stage ----------------------------------------------------------------------------


#: a module whose code differs at each optimisation level (-O drops the assert, -OO the docstring too)
SCHED = b'"""The scheduler."""\n' + PATCHED + b"assert watermark\n"


def compile_stage(tmp_path: Path, site: str, touched: str, check: bool = True, preexec_fn=None,
                  record: dict | None = None, **env: str) -> tuple[Path, subprocess.CompletedProcess]:
    """Build's compile stage on a layer holding a patched module, a text file and the provenance record (mode
    0640), run as the Dockerfile runs it: (the layer's site folder, the finished process)."""
    layer = tmp_path / "layer"
    root = layer / site.strip("/")
    (root / "vllm" / "core").mkdir(parents=True)
    (root / "vllm" / "core" / "sched.py").write_bytes(SCHED)
    (root / "vllm" / "notes.txt").write_text("not Python\n")
    record_file = root / bytecode.RECORD_PATH
    record_file.write_bytes(provenance.dumps(record or {"schema": 1, "files": {}}))
    record_file.chmod(0o640)
    script = tmp_path / "patchset-bytecode.py"
    script.write_text(bytecode.script())
    done = subprocess.run([sys.executable, str(script), "compile", str(layer), site, touched], check=check,
                          capture_output=True, text=True, env={**os.environ, **env}, preexec_fn=preexec_fn)
    return root, done


def test_compile_stage_writes_checked_pycs_and_records_their_sha256(tmp_path):
    site = "/usr/lib/python3/dist-packages"
    # a text file, a module the series deleted, then the module: only the module is compiled
    root, done = compile_stage(tmp_path, site, "vllm/notes.txt vllm/core/gone.py vllm/core/sched.py")
    assert done.stdout == "patchset: compiled 3 bytecode files (3 optimisation levels)\n"
    record_file = root / bytecode.RECORD_PATH
    record = provenance.loads(record_file.read_bytes())
    names = [f"vllm/core/__pycache__/sched.{TAG}{suffix}.pyc" for suffix in ("", ".opt-1", ".opt-2")]
    assert sorted(record["bytecode"]) == sorted(names)
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) == sorted(
        [*names, bytecode.RECORD_PATH, "vllm/core/sched.py", "vllm/notes.txt"])
    for level, name in enumerate(names):
        data = (root / name).read_bytes()
        assert record["bytecode"][name] == bytecode._sha256(str(root / name))
        header = bytecode.parse_header(data)
        assert (header.kind, header.source_hash) == (bytecode.CHECKED_HASH, importlib.util.source_hash(SCHED))
        assert marshal.loads(data[16:]) == code_of(SCHED, level)
        assert marshal.loads(data[16:]).co_filename == f"{site}/vllm/core/sched.py"
    assert len({code_of(SCHED, level) for level in bytecode.LEVELS}) == 3
    assert record_file.read_bytes() == provenance.dumps(record)  # the layout provenance writes
    assert record_file.stat().st_mode & 0o7777 == 0o640


def test_compile_stage_records_where_python_reads_the_pycs(tmp_path):
    """A site given with a trailing slash names the same pycs; under PYTHONPYCACHEPREFIX they are the
    prefix's, recorded by their absolute path."""
    root, _ = compile_stage(tmp_path / "slash", "/usr/lib/python3/dist-packages/", "vllm/core/sched.py")
    assert sorted(provenance.loads((root / bytecode.RECORD_PATH).read_bytes())["bytecode"]) == [
        f"vllm/core/__pycache__/sched.{TAG}{suffix}.pyc" for suffix in (".opt-1", ".opt-2", "")]
    site = "/usr/lib/python3/dist-packages"
    root, _ = compile_stage(tmp_path / "prefix", site, "vllm/core/sched.py", PYTHONPYCACHEPREFIX="/pycache")
    names = [f"/pycache{site}/vllm/core/sched.{TAG}{suffix}.pyc" for suffix in (".opt-1", ".opt-2", "")]
    layer = tmp_path / "prefix" / "layer"
    assert provenance.loads((root / bytecode.RECORD_PATH).read_bytes())["bytecode"] == {
        name: bytecode._sha256(str(layer) + name) for name in names}
    assert not (root / "vllm" / "core" / "__pycache__").exists()


def test_compile_stage_replaces_the_record_in_its_own_folder_whatever_tmpdir(tmp_path):
    """With TMPDIR on another file system (a tmpfs), the record is still replaced whole, and nothing is left there."""
    other = Path("/dev/shm")
    if not other.is_dir() or other.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("no folder on another file system than the tests' temporary folder (/dev/shm)")
    tmpdir = Path(tempfile.mkdtemp(dir=other))
    try:
        root, _ = compile_stage(tmp_path, "/usr/lib/python3/dist-packages", "vllm/core/sched.py", TMPDIR=str(tmpdir))
        assert list(tmpdir.iterdir()) == []
    finally:
        shutil.rmtree(tmpdir)
    assert len(provenance.loads((root / bytecode.RECORD_PATH).read_bytes())["bytecode"]) == 3


def test_compile_stage_that_cannot_write_the_record_fails_and_leaves_it_whole(tmp_path):
    """A file system that refuses the new record (here: a file size limit below its size, as a full disk
    would) fails the stage, and the old record stays, with no temporary beside it."""
    record = {"schema": 1, "files": {}, "vllm": "0.29.0", "source": f"sdist vllm-0.29.0.tar.gz {'0' * 64}"}
    names = [f"vllm/core/__pycache__/sched.{TAG}{suffix}.pyc" for suffix in ("", ".opt-1", ".opt-2")]
    written = len(provenance.dumps({**record, "bytecode": {name: "0" * 64 for name in names}}))
    limit = max(16 + len(marshal.dumps(code_of(SCHED, level))) for level in bytecode.LEVELS) + 1
    assert written > limit  # every pyc fits under the limit, the new record does not

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    root, done = compile_stage(tmp_path, "/usr/lib/python3/dist-packages", "vllm/core/sched.py", check=False,
                               preexec_fn=small_files, record=record)
    assert done.returncode == 1 and done.stderr.splitlines()[-1] == "OSError: [Errno 27] File too large"
    assert provenance.loads((root / bytecode.RECORD_PATH).read_bytes()) == record
    assert sorted(p.name for p in (root / "vllm").iterdir()) == [".patchset-provenance.json", "core", "notes.txt"]
    assert sorted(str(p.relative_to(root)) for p in (root / "vllm" / "core" / "__pycache__").iterdir()) == sorted(names)


def test_the_shipped_text_says_its_usage_and_exits_2(tmp_path):
    for argv in ([], ["inspect"], ["compile", "x"], ["inspect", "{}", "x"], ["judge", "a", "b", "c"],
                 ["compile", "a", "b", "c", "d"]):
        done = subprocess.run([sys.executable, "-B", "-c", bytecode.BOOT, *argv], capture_output=True, text=True,
                              env={**os.environ, bytecode.SCRIPT_ENV: bytecode.script()}, cwd=tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (
            2, "", "usage: inspect JSON | compile LAYER SITE TOUCHED\n"), argv


def test_the_record_path_is_provenances():
    assert bytecode.RECORD_PATH == provenance.PROVENANCE_PATH


# --- apply: a tree whose old bytecode would still run is never reported applied ------------------------

MOD = "vllm/core/sched.py"
OLD = "".join(f"x{i} = {i}\n" for i in range(1, 21))
NEW = OLD.replace("x10 = 10\n", "x10 = 10 - 1\n")


def tree_and_manifest(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "tree"
    (root / "vllm" / "core").mkdir(parents=True)
    (root / "vllm" / "__init__.py").write_text("")
    (root / "vllm" / "core" / "__init__.py").write_text("")
    (root / MOD).write_text(OLD)
    write_patch(tmp_path, "recipes/fix/fix.patch", udiff(MOD, OLD, NEW))
    manifest = write_manifest(tmp_path, """
        schema: 1
        targets: {"0.29.0": {}}
        patches:
          - id: fix
            releases: "==0.29.0"
            patch: recipes/fix/fix.patch
        """)
    return root, manifest


def test_apply_records_the_bytecode_it_writes(tmp_path):
    root, manifest = tree_and_manifest(tmp_path)
    report = apply_series(load_manifest(manifest), "0.29.0", root)
    record = provenance.loads(Path(report.record).read_bytes())
    name = f"vllm/core/__pycache__/sched.{TAG}.pyc"
    assert record["bytecode"] == {name: bytecode._sha256(str(root / name))}
    assert verdicts(root / MOD) == {Path(name).name: bytecode.MATCHES}


def test_apply_leaves_no_old_bytecode_that_would_still_run(tmp_path, monkeypatch):
    """An unchecked-hash pyc of the old code under PYTHONPYCACHEPREFIX survives the stale-pyc sweep."""
    root, manifest = tree_and_manifest(tmp_path)
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "pycache-prefix"))
    source = root / MOD
    prefixed = Path(importlib.util.cache_from_source(str(source)))
    write_pyc(prefixed, hash_pyc(OLD.encode(), OLD.encode(), checked=False))
    assert loaded_code(source) == code_of(OLD.encode())

    apply_series(load_manifest(manifest), "0.29.0", root, compile_bytecode=False)
    assert source.read_text() == NEW
    assert loaded_code(source) == code_of(NEW.encode())  # what Python runs is the patched code
    assert not prefixed.exists()


def test_line_numbers_and_jump_encoding_are_not_code_but_an_operator_is():
    """Patch releases of one Python differ in line tables and jump threading, never in what runs."""
    source = b"def f(xs):\n    for x in xs:\n        if x < 2:\n            continue\n        return x\n"
    moved = compile(source, "x.py", "exec", dont_inherit=True).replace(co_firstlineno=7)
    data = bytes(bootstrap._code_to_hash_pyc(moved, b"\0" * 8, True))
    same, why = bytecode.same_code(data, source, "x.py", 0)
    assert same and "jump encoding and line table" in why
    other = bytes(bootstrap._code_to_hash_pyc(code_of(source.replace(b"x < 2", b"x <= 2")), b"\0" * 8, True))
    same, why = bytecode.same_code(other, source, "x.py", 0)
    assert not same and "<module>.f" in why


def test_an_applied_tree_whose_old_bytecode_came_back_is_not_reported_applied(tmp_path):
    root, manifest = tree_and_manifest(tmp_path)
    apply_series(load_manifest(manifest), "0.29.0", root)
    source = root / MOD
    pyc = write_pyc(pyc_path(source), hash_pyc(OLD.encode(), NEW.encode()))  # e.g. a later layer's cache
    assert loaded_code(source) == code_of(OLD.encode())
    with pytest.raises(PatchsetError, match=f"Python would run {pyc}"):
        apply_series(load_manifest(manifest), "0.29.0", root)


def test_a_change_of_a_constant_alone_is_other_code():
    """Many backports change only a constant: a stale pyc of ``n - 2`` is not the code of ``n - 1``, whatever
    kind of constant it is, and neither is one whose line table also moved (the jump-resolved comparison)."""
    source = b"def budget(n):\n    return n - 1\n"
    for old in (b"n - 2", b"n - 1.0", b"n - True", b"n - (1,)", b"n - 'a'", b"n - b'a'", b"n - None"):
        stale = source.replace(b"n - 1", old)
        data = hash_pyc(stale, source)
        same, why = bytecode.same_code(data, source, "x.py", 0)
        assert (same, why) == (False, "its code differs from the source's (first in <module>.budget)"), old
        moved = compile(stale, "x.py", "exec", dont_inherit=True).replace(co_firstlineno=9)
        assert not bytecode.same_code(bytes(bootstrap._code_to_hash_pyc(moved, b"\0" * 8, True)), source, "x.py", 0)[0]
    # a module-level constant and a string, as in a default or a message
    assert not bytecode.same_code(hash_pyc(b"LIMIT = 4096\n", b""), b"LIMIT = 8192\n", "x.py", 0)[0]
    assert not bytecode.same_code(hash_pyc(b"x = 'old'\n", b""), b"x = 'new'\n", "x.py", 0)[0]
    assert not bytecode.same_code(hash_pyc(b"x = frozenset({1})\ny = 1 in {1}\n", b""),
                                  b"x = frozenset({1})\ny = 1 in {2}\n", "x.py", 0)[0]


def test_a_stale_pyc_whose_only_change_is_a_constant_is_what_python_runs_and_is_found(tmp_path):
    source = module(tmp_path, b"def budget(n):\n    return n - 1\n")
    write_pyc(pyc_path(source), hash_pyc(b"def budget(n):\n    return n - 2\n", source.read_bytes()))
    namespace: dict = {}
    exec(loaded_code(source), namespace)  # noqa: S102 -- the code the interpreter really loads for it
    assert namespace["budget"](10) == 8  # the old constant runs
    (finding,) = bytecode.inspect([str(source)])
    assert (finding.verdict, finding.kind) == (bytecode.DIFFERS, "checked-hash")
    assert finding.why.endswith("but its code differs from the source's (first in <module>.budget)")


# --- jump chains: another compiler's jump encoding is the same code, another jump target is not ----------

LOOP = b"def f(xs):\n    for x in xs:\n        if x:\n            a()\n        else:\n            b()\n"


def pyc_of(code) -> bytes:
    return bytes(bootstrap._code_to_hash_pyc(code, b"\0" * 8, True))


def unthreaded(code):
    """``code`` as a compiler that does not thread jumps would write it: the first unconditional jump whose
    target another unconditional jump after it also reaches now jumps to that one (a chain of two)."""
    import dis

    ops = list(dis.get_instructions(code))
    jumps = [i for i in ops if i.opname in ("JUMP_FORWARD", "JUMP_BACKWARD")]
    first, later = next((a, b) for a in jumps for b in jumps if b.offset > a.offset and a.argval == b.argval)
    raw = bytearray(code.co_code)
    raw[first.offset:first.offset + 2] = bytes([dis.opmap["JUMP_FORWARD"], (later.offset - first.offset - 2) // 2])
    return code.replace(co_code=bytes(raw))


def run_f(code, xs) -> list[str]:
    calls: list[str] = []
    namespace = {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}
    exec(code, namespace)  # noqa: S102 -- the code under comparison, run to show what it does
    namespace["f"](xs)
    return calls


def test_a_jump_to_a_jump_is_the_code_of_the_threaded_jump():
    """The same loop with one jump chained through another (as an unthreading compiler writes it) runs the
    same and is judged the same; only the jump-resolved comparison can see that."""
    module_code = code_of(LOOP)
    f = module_code.co_consts[0]
    chained = module_code.replace(co_consts=(unthreaded(f), *module_code.co_consts[1:]))
    assert chained != module_code and chained.co_consts[0].co_code != f.co_code
    assert run_f(chained, [1, 0, 1]) == run_f(module_code, [1, 0, 1]) == ["a", "b", "a"]
    assert bytecode.same_code(pyc_of(chained), LOOP, "x.py", 0) == (
        True, "the same code up to jump encoding and line table (another patch release's compiler)")
    assert bytecode._shape(chained) == bytecode._shape(module_code)


def test_a_chain_that_lands_elsewhere_is_other_code():
    """A jump retargeted to the loop's exit (break instead of continue) is other code, chained or not."""
    import dis

    f = code_of(LOOP).co_consts[0]
    ops = list(dis.get_instructions(f))
    first = next(i for i in ops if i.opname == "JUMP_BACKWARD")
    exit_ = next(i for i in ops if i.opname == "FOR_ITER").argval
    raw = bytearray(f.co_code)
    raw[first.offset + 1] = (exit_ - first.offset - 2) // 2
    raw[first.offset] = dis.opmap["JUMP_FORWARD"]
    broken = code_of(LOOP).replace(co_consts=(f.replace(co_code=bytes(raw)), *code_of(LOOP).co_consts[1:]))
    assert run_f(broken, [1, 0, 1]) == ["a"]
    assert bytecode.same_code(pyc_of(broken), LOOP, "x.py", 0) == (
        False, "its code differs from the source's (first in <module>.f)")


#: pairs of sources whose code differs only in where a jump goes, or in which way a condition jumps
OTHER_PROGRAMS = [
    (b"if a:\n    x()\n", b"if not a:\n    x()\n"),
    # only where one conditional jump lands differs (y() inside or outside the inner if)
    (b"if a:\n    if b:\n        x()\n    y()\nz()\n", b"if a:\n    if b:\n        x()\n        y()\nz()\n"),
    (b"while a:\n    if b:\n        x()\n    y()\nz()\n", b"while a:\n    if b:\n        x()\n        y()\nz()\n"),
    (b"for v in vs:\n    if v:\n        continue\n    x()\ny()\n",
     b"for v in vs:\n    if v:\n        break\n    x()\ny()\n"),
    (b"while a:\n    if b:\n        x()\n    else:\n        y()\n    z()\n",
     b"while a:\n    if b:\n        x()\n    else:\n        y()\nz()\n"),
    (b"r = a and b or c\n", b"r = a or b and c\n"),
    (b"r = (a and b) or c\n", b"r = a and (b or c)\n"),
    (b"try:\n    x()\nfinally:\n    y()\nz()\n", b"try:\n    x()\n    y()\nfinally:\n    z()\n"),
]


@pytest.mark.parametrize(("stale", "source"), OTHER_PROGRAMS)
def test_programs_that_differ_in_a_jump_are_judged_different(stale, source):
    """Compiled here, with the line table also moved (so only the jump-resolved comparison decides)."""
    for old, new in ((stale, source), (source, stale)):
        moved = code_of(b"\n\n" + old)
        same, why = bytecode.same_code(pyc_of(moved), new, "x.py", 0)
        assert (same, why) == (False, "its code differs from the source's (first in <module>)"), (old, new)


@pytest.mark.parametrize("source", [s for pair in OTHER_PROGRAMS for s in pair] + [LOOP])
def test_the_same_program_moved_down_the_file_is_the_same_code(source):
    assert bytecode.same_code(pyc_of(code_of(source)), source, "x.py", 0) == (True, "")
    moved = code_of(b"# a comment\n\n" + source)
    assert moved != code_of(source)
    assert bytecode.same_code(pyc_of(moved), source, "x.py", 0) == (
        True, "the same code up to jump encoding and line table (another patch release's compiler)")


def test_py_compiled_bytecode_of_the_moved_source_matches_and_of_another_jump_differs(tmp_path):
    """py_compile's pyc of the file before a patch that only moved it (or changed a jump), under the new
    source's hash: the audit's verdict on each, exactly."""
    stale, new = OTHER_PROGRAMS[1]
    source = module(tmp_path, new)
    for old, verdict, why in ((b"\n\n\n" + new, bytecode.MATCHES, "and the same code up to jump encoding and line "
                               "table (another patch release's compiler)"),
                              (stale, bytecode.DIFFERS, "but its code differs from the source's (first in <module>)")):
        before = tmp_path / "before.py"
        before.write_bytes(old)
        cfile = tmp_path / "before.pyc"
        py_compile.compile(str(before), cfile=str(cfile), doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
        code = marshal.loads(cfile.read_bytes()[16:])
        pyc = write_pyc(pyc_path(source), bytes(bootstrap._code_to_hash_pyc(
            code, importlib.util.source_hash(source.read_bytes()), True)))
        finding = bytecode.judge(str(pyc), str(source))
        assert (finding.verdict, finding.kind, finding.level) == (verdict, bytecode.CHECKED_HASH, 0)
        assert finding.why == f"checked-hash pyc holding the hash of the current source, {why}"


# --- exact verdicts and reasons --------------------------------------------------------------------------


def test_acceptance_says_why_exactly():
    magic = importlib.util.MAGIC_NUMBER
    size = len(PATCHED)

    def verdict(data: bytes, mtime: float = 1000.7, st_size: int = size, **kw) -> tuple[str, str]:
        return bytecode.acceptance(bytecode.parse_header(data), PATCHED, mtime, st_size, **kw)

    assert verdict(timestamp_pyc(PRISTINE, 1000, size), check_hash_based="default") == (
        bytecode.ACCEPTED, "timestamp pyc whose mtime and size match the source")
    # the header keeps mtime and size modulo 2**32, and so does the loader's comparison
    assert verdict(timestamp_pyc(PRISTINE, 1000, size), mtime=2**32 + 1000.7, st_size=2**32 + size,
                   check_hash_based="default")[0] == bytecode.ACCEPTED
    assert verdict(timestamp_pyc(PRISTINE, 1000, size), mtime=2**32 + 1001.0, check_hash_based="default") == (
        bytecode.IGNORED, "timestamp pyc of another mtime or size: recompiled from source")
    assert verdict(hash_pyc(PRISTINE, PATCHED), check_hash_based="default") == (
        bytecode.ACCEPTED, "checked-hash pyc holding the hash of the current source")
    assert verdict(hash_pyc(PRISTINE, PATCHED), check_hash_based="always") == (
        bytecode.ACCEPTED, "checked-hash pyc holding the hash of the current source")
    assert verdict(hash_pyc(PRISTINE, PRISTINE), check_hash_based="default") == (
        bytecode.DORMANT, "checked-hash pyc of other source bytes: loaded only under --check-hash-based-pycs never")
    assert verdict(hash_pyc(PRISTINE, PRISTINE), check_hash_based="never") == (
        bytecode.ACCEPTED, "checked-hash pyc: loaded without looking at the source")
    assert verdict(hash_pyc(PRISTINE, PRISTINE, checked=False), check_hash_based="default") == (
        bytecode.ACCEPTED, "unchecked-hash pyc: loaded without looking at the source")
    assert verdict(hash_pyc(PRISTINE, PATCHED, checked=False), check_hash_based="always") == (
        bytecode.ACCEPTED, "unchecked-hash pyc holding the hash of the current source")
    assert verdict(hash_pyc(PRISTINE, PRISTINE, checked=False), check_hash_based="always") == (
        bytecode.IGNORED, "unchecked-hash pyc of other source bytes, checked because of --check-hash-based-pycs always")
    other = b"\x00\x00" + magic[2:]
    assert verdict(other + hash_pyc(PRISTINE, PATCHED)[4:], check_hash_based="default") == (
        bytecode.IGNORED, f"magic {other.hex()} is not this interpreter's {magic.hex()}")
    # another interpreter's magic, given: its own pycs are judged by it
    assert verdict(other + hash_pyc(PRISTINE, PATCHED)[4:], magic=other, check_hash_based="default")[0] == (
        bytecode.ACCEPTED)
    # unset, the mode is this interpreter's own (the default unless run with --check-hash-based-pycs)
    import _imp

    assert _imp.check_hash_based_pycs == "default"
    assert verdict(hash_pyc(PRISTINE, PRISTINE))[0] == bytecode.DORMANT
    assert verdict(hash_pyc(PRISTINE, PRISTINE, checked=False))[0] == bytecode.ACCEPTED


def test_same_code_says_why_code_cannot_run():
    header = hash_pyc(PATCHED, PATCHED)[:16]
    assert bytecode.same_code(header + marshal.dumps(7), PATCHED, "x.py", 0) == (
        False, "it holds a int, not code: importing the module fails")
    assert bytecode.same_code(header, PATCHED, "x.py", 0) == (
        False, "its code does not unmarshal (EOF read where object expected): importing the module fails")
    assert bytecode.same_code(header + b"\xff", PATCHED, "x.py", 0) == (
        False, "its code does not unmarshal (bad marshal data (unknown type code)): importing the module fails")
    same, why = bytecode.same_code(hash_pyc(PATCHED, PATCHED), b"def watermark(req:\n", "x.py", 0)
    assert not same
    assert why.startswith("the source does not compile (") and why.endswith("); this bytecode runs instead")
    assert bytecode.same_code(hash_pyc(PATCHED, PATCHED), b"x = 1\0", "x.py", 0)[0] is False


def test_candidates_are_every_pyc_of_the_module_in_order(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "pycache_prefix", None)
    source = module(tmp_path)
    assert bytecode.candidates(str(source)) == []  # no __pycache__ at all
    cache = tmp_path / "__pycache__"
    for name in ("scheduler.cpython-311.opt-1.pyc", "scheduler.cpython-39.pyc", "scheduler.cpython-311.pyc",
                 "scheduler_x.cpython-311.pyc", "other.cpython-311.pyc", "scheduler.cpython-311.pyc.tmp"):
        write_pyc(cache / name, b"")
    ours = [str(cache / n) for n in ("scheduler.cpython-311.opt-1.pyc", "scheduler.cpython-311.pyc",
                                     "scheduler.cpython-39.pyc")]
    assert bytecode.candidates(str(source)) == ours
    prefix = tmp_path / "prefix"
    monkeypatch.setattr(sys, "pycache_prefix", str(prefix))
    assert bytecode.candidates(str(source)) == ours  # the prefix folder does not exist: nothing more
    prefixed = write_pyc(Path(importlib.util.cache_from_source(str(source))), b"")
    assert prefixed.parent != cache
    assert bytecode.candidates(str(source)) == [*ours, str(prefixed)]


def test_judge_names_the_interpreter_the_hash_and_why(tmp_path):
    source = module(tmp_path)
    python = f"{sys.implementation.name} {'.'.join(map(str, sys.version_info[:3]))}"
    data = hash_pyc(PATCHED, PATCHED)
    pyc = write_pyc(pyc_path(source), data)
    finding = bytecode.judge(str(pyc), str(source))
    assert finding == bytecode.PycFinding(str(pyc), str(source), TAG, 0, hashlib.sha256(data).hexdigest(),
                                          bytecode.MATCHES, bytecode.CHECKED_HASH,
                                          "checked-hash pyc holding the hash of the current source", python)
    stale = write_pyc(pyc_path(source, 1), hash_pyc(PRISTINE, PATCHED))
    finding = bytecode.judge(str(stale), str(source))
    assert (finding.verdict, finding.level, finding.why) == (
        bytecode.DIFFERS, 1, "checked-hash pyc holding the hash of the current source, but its code differs from "
        "the source's (first in <module>.watermark)")
    dormant = write_pyc(pyc_path(source, 2), hash_pyc(PRISTINE, PRISTINE))
    finding = bytecode.judge(str(dormant), str(source))
    assert (finding.verdict, finding.kind, finding.why) == (
        bytecode.DORMANT, bytecode.CHECKED_HASH,
        "checked-hash pyc of other source bytes: loaded only under --check-hash-based-pycs never")
    odd = write_pyc(source.parent / "__pycache__" / f"scheduler.{TAG}.opt-3.pyc", data)
    assert bytecode.judge(str(odd), str(source)) == bytecode.PycFinding(
        str(odd), str(source), TAG, None, hashlib.sha256(data).hexdigest(), bytecode.IGNORED, "",
        "no interpreter loads a pyc of this name", python)
    short = write_pyc(pyc, data[:10])
    finding = bytecode.judge(str(short), str(source))
    assert (finding.verdict, finding.kind, finding.why) == (
        bytecode.IGNORED, "", "unreadable header (10 bytes, shorter than a pyc header): recompiled from source")
    write_pyc(pyc, data)
    source.unlink()
    finding = bytecode.judge(str(pyc), str(source))
    assert (finding.verdict, finding.kind, finding.why) == (
        bytecode.IGNORED, "", "no source: a __pycache__ pyc is never loaded without its .py")


def test_a_set_constant_read_back_from_a_pyc_is_the_compilers_set():
    """Marshal writes a frozenset's members in its own order, the compiler keeps the source's: ``{16, 8}``
    read back from a pyc iterates as ``{8, 16}`` (16 and 8 share a hash slot), and is the same constant."""
    source = b"def f(v):\n    return v in {16, 8}\n"
    moved = code_of(b"\n" + source)
    assert repr(marshal.loads(pyc_of(moved)[16:]).co_consts[0].co_consts) != repr(code_of(source).co_consts[0]
                                                                                  .co_consts)
    assert bytecode.same_code(pyc_of(moved), source, "x.py", 0) == (
        True, "the same code up to jump encoding and line table (another patch release's compiler)")
    assert bytecode.same_code(pyc_of(moved), source.replace(b"16", b"24"), "x.py", 0) == (
        False, "its code differs from the source's (first in <module>.f)")


def test_code_without_its_exception_handler_is_other_code():
    """Same instructions, but the handler no longer covers the call: an exception escapes."""
    source = b"def f():\n    try:\n        x()\n    except ValueError:\n        return 1\n"
    f = code_of(source).co_consts[0]
    assert f.co_exceptiontable
    unguarded = code_of(b"\n" + source).replace(co_consts=(f.replace(co_exceptiontable=b""),
                                                           *code_of(source).co_consts[1:]))
    assert bytecode.same_code(pyc_of(unguarded), source, "x.py", 0) == (
        False, "its code differs from the source's (first in <module>.f)")


def test_judge_of_a_name_that_is_not_the_modules_pyc(tmp_path):
    source = module(tmp_path)
    other = write_pyc(source.parent / "__pycache__" / f"other.{TAG}.pyc", hash_pyc(PATCHED, PATCHED))
    finding = bytecode.judge(str(other), str(source))
    assert (finding.tag, finding.level, finding.verdict, finding.why) == (
        "", None, bytecode.IGNORED, "no interpreter loads a pyc of this name")


def test_candidates_without_a_cache_tag_still_lists_pycache(tmp_path, monkeypatch):
    """An implementation without a cache tag (``cache_from_source`` raises NotImplementedError)."""
    source = module(tmp_path)
    pyc = write_pyc(pyc_path(source), b"")
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "prefix"))
    monkeypatch.setattr(sys.implementation, "cache_tag", None)
    assert bytecode.candidates(str(source)) == [str(pyc)]


def test_inspect_keeps_its_own_findings_beside_another_tags(tmp_path):
    source = module(tmp_path)
    own = write_pyc(pyc_path(source), hash_pyc(PATCHED, PATCHED))
    foreign = write_pyc(pyc_path(source, tag="cpython-299"), hash_pyc(PRISTINE, PATCHED))
    assert [(f.pyc, f.verdict) for f in bytecode.inspect([str(source)])] == [
        (str(own), bytecode.MATCHES), (str(foreign), bytecode.NO_INTERPRETER)]
    assert [f.pyc for f in bytecode.inspect([str(source)], only_tag=TAG)] == [str(own)]


def test_verify_tree_names_the_pyc_and_what_to_do(tmp_path):
    source = module(tmp_path)
    (tmp_path / "notes.txt").write_text("x")
    modules = {"vllm/scheduler.py": source, "vllm/notes.txt": tmp_path / "notes.txt",
               "vllm/gone.py": tmp_path / "gone.py", "vllm/deleted.py": None}
    assert bytecode._tree_sources(modules) == {str(source): "vllm/scheduler.py"}
    pyc = write_pyc(pyc_path(source), hash_pyc(PRISTINE, PATCHED))
    with pytest.raises(PatchsetError) as e:
        bytecode.verify_tree(modules)
    assert e.value.message == (f"Python would run {pyc} instead of the patched source: checked-hash pyc holding the "
                            "hash of the current source, but its code differs from the source's (first in "
                            "<module>.watermark)")
    assert (e.value.file, e.value.hint) == (str(pyc), "remove that bytecode file; the series is not in effect")


def test_settle_tree_records_a_prefixed_pyc_by_its_own_path(tmp_path, monkeypatch):
    source = module(tmp_path)
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "prefix"))
    prefixed = write_pyc(Path(importlib.util.cache_from_source(str(source))), hash_pyc(PATCHED, PATCHED))
    local = write_pyc(pyc_path(source), hash_pyc(PATCHED, PATCHED))
    stale = write_pyc(pyc_path(source, 1), hash_pyc(PRISTINE, PATCHED))
    recorded = bytecode.settle_tree({"vllm/scheduler.py": source})
    assert not stale.exists()
    assert recorded == {str(prefixed): bytecode._sha256(str(prefixed)),
                        f"vllm/__pycache__/{local.name}": bytecode._sha256(str(local))}


def test_acceptance_unasked_follows_the_interpreters_own_mode(tmp_path):
    """Under ``--check-hash-based-pycs always`` an unchecked-hash pyc of other source is not loaded."""
    data = hash_pyc(PRISTINE, PRISTINE, checked=False)
    probe = ("import sys; from patchset.core import bytecode as b; d = bytes.fromhex(sys.argv[1]); "
             "print(b.acceptance(b.parse_header(d), sys.argv[2].encode(), 0.0, 0)[0])")
    for mode, expected in (("always", bytecode.IGNORED), ("never", bytecode.ACCEPTED),
                           ("default", bytecode.ACCEPTED)):
        done = subprocess.run([sys.executable, "--check-hash-based-pycs", mode, "-c", probe, data.hex(),
                               PATCHED.decode()], capture_output=True, text=True, check=True)
        assert done.stdout.strip() == expected, mode


def test_which_file_names_are_taken_for_a_python():
    for name in ("python", "python3", "python3.11", "pypy", "pypy3.10"):
        assert bytecode._looks_like_python(name), name
    for name in ("python3-config", "python3.11-config", "python.3", "pythonw", "xpython3", "PYTHON3", "pip3"):
        assert not bytecode._looks_like_python(name), name


# --- another Python: a real second CPython judges the pycs of its own cache tag ---------------------------

#: Where the tests look for a second CPython (another cache tag) when PATCHSET_OTHER_PYTHON is unset:
#: ``sh .ci/other-python.sh`` puts Debian 11's python3.9 there.
OTHER_PYTHON_ENV = "PATCHSET_OTHER_PYTHON"


@pytest.fixture(scope="session")
def another_python() -> tuple[str, str, str]:
    """A real CPython of another version: (executable, its cache tag, its ``PycFinding.python``)."""
    cache = os.environ.get("PATCHSET_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "patchset")
    exe = os.environ.get(OTHER_PYTHON_ENV) or os.path.join(cache, "other-python", "usr", "bin", "python3.9")
    probe = ("import sys; print(sys.implementation.cache_tag, sys.implementation.name, "
             "'.'.join(map(str, sys.version_info[:3])))")
    try:
        tag, name, version = subprocess.run([exe, "-c", probe], capture_output=True, text=True,
                                            timeout=60).stdout.split()
    except (OSError, ValueError, subprocess.SubprocessError):
        tag = name = version = ""
    if not tag or tag == TAG:
        reason = (f"no second Python with a cache tag other than {TAG} at {exe}: `sh .ci/other-python.sh` puts "
                  f"Debian 11's python3.9 there (about 5 MB), or set {OTHER_PYTHON_ENV}")
        if os.environ.get("CI"):  # .ci/run installs it: a green CI run must mean these tests ran
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    return exe, tag, f"{name} {version}"


def executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_interpreters_finds_each_python_on_path_by_its_cache_tag(tmp_path, monkeypatch, another_python):
    exe, tag, _ = another_python
    folder = tmp_path / "tools and pythons"  # a space in a PATH folder
    folder.mkdir()
    ran = tmp_path / "ran"
    executable(folder / "pip3", f"#!/bin/sh\necho $0 >> {ran}\n")  # not a Python: never run
    (folder / "python3.9").symlink_to(exe)
    executable(folder / "python2", "#!/bin/sh\necho 'pyenv: python2: command not found'\nexit 127\n")
    executable(folder / "python3.0", "#!/bin/sh\necho None\n")  # a Python without a bytecode cache
    executable(folder / "python3.8", "").write_bytes(b"\x7fELF\x02 not for this machine")  # exec fails
    (folder / "python3.99").write_text(f"#!/bin/sh\necho $0 >> {ran}\n")  # not executable: never run
    monkeypatch.setenv("PATH", str(tmp_path / "gone"))
    usual = bytecode.interpreters()  # only /usr/bin and /usr/local/bin: a PATH folder that is gone is passed
    assert usual[TAG] == sys.executable
    monkeypatch.setenv("PATH", os.pathsep.join([str(tmp_path / "gone"), str(folder)]))
    assert bytecode.interpreters() == {**usual, tag: str(folder / "python3.9")}
    assert not ran.exists()
    monkeypatch.delenv("PATH")
    assert bytecode.interpreters() == usual


def test_a_pyc_of_a_tag_no_python_here_has_is_named_exactly(tmp_path):
    source = module(tmp_path)
    pyc = write_pyc(pyc_path(source, tag="cpython-36"), hash_pyc(PRISTINE, PATCHED))
    items = [(str(pyc), str(source), 0)]
    unjudged = bytecode.PycFinding(str(pyc), str(source), "cpython-36", 0, bytecode._sha256(str(pyc)),
                                   bytecode.NO_INTERPRETER, why="no Python here has cache tag cpython-36: never loaded")
    assert bytecode._judged_elsewhere(None, "cpython-36", items) == [unjudged]


def test_a_python_that_cannot_run_the_shipped_text_leaves_its_pycs_uninspected_and_says_why(tmp_path):
    source = module(tmp_path)
    pyc = write_pyc(pyc_path(source, tag="cpython-36"), hash_pyc(PRISTINE, PATCHED))
    items = [(str(pyc), str(source), 0)]
    gone = str(tmp_path / "python3.6")
    unjudged = bytecode.PycFinding(str(pyc), str(source), "cpython-36", 0, bytecode._sha256(str(pyc)),
                                   bytecode.UNINSPECTED)
    unjudged.why = f"{gone} could not judge it: [Errno 2] No such file or directory: '{gone}'"
    assert bytecode._judged_elsewhere(gone, "cpython-36", items) == [unjudged]
    # a Python too old for the shipped text stops at its first line, here after 600 bytes of warnings
    # and in a folder whose name is not UTF-8: the last 300 bytes of what it said, undecodable bytes replaced
    said = (b"<frozen importlib._bootstrap>:1: ImportWarning: a stale path hook\n" * 9
            + b'  File "/opt/caf\xe9/patchset-bytecode", line 26\n'
            + b"SyntaxError: future feature annotations is not defined\n")
    (tmp_path / "said").write_bytes(said)
    old = executable(tmp_path / "python3.6", f"#!/bin/sh\ncat {tmp_path / 'said'} >&2\nexit 1\n")
    unjudged.why = f"{old} could not judge it: {said.decode(errors='replace')[-300:]}"
    assert len(said) > 600 and unjudged.why.endswith("caf\ufffd/patchset-bytecode\", line 26\nSyntaxError: future "
                                                     "feature annotations is not defined\n")
    assert bytecode._judged_elsewhere(str(old), "cpython-36", items) == [unjudged]


def compile_with(python: str, source: Path, level: int, mode: str) -> Path:
    """``py_compile`` run by that Python: the pyc it writes for ``source`` at ``level``."""
    code = ("import sys, py_compile as p; print(p.compile(sys.argv[1], optimize=int(sys.argv[2]), doraise=True, "
            "invalidation_mode=p.PycInvalidationMode[sys.argv[3]]))")
    done = subprocess.run([python, "-B", "-c", code, str(source), str(level), mode], capture_output=True, text=True,
                          check=True)
    return Path(done.stdout.strip())


def loaded_by(python: str, source: Path, level: int, old: bytes) -> str:
    """Which code that Python really runs for the module at ``level``: the ``old`` source's or the current one's."""
    code = ("import sys, importlib.machinery as m; sys.dont_write_bytecode = True; path, old = sys.argv[1:]; "
            "got = m.SourceFileLoader('scheduler', path).get_code('scheduler'); "
            "c = lambda s: compile(s, path, 'exec', dont_inherit=True, optimize=sys.flags.optimize); "
            "print('old' if got == c(old) else 'current' if got == c(open(path, 'rb').read()) else 'other')")
    flags = ["-O"] * level
    return subprocess.run([python, *flags, "-c", code, str(source), old.decode()], capture_output=True, text=True,
                          check=True).stdout.strip()


def pycs_of_another_python(tmp_path: Path, monkeypatch, another_python) -> tuple[Path, list[bytecode.PycFinding]]:
    """An image whose second Python compiled the module before it was patched, that Python on PATH: the
    module, and the findings expected for its pycs (this interpreter's own first)."""
    exe, tag, python = another_python
    source = module(tmp_path, PRISTINE)
    old = compile_with(exe, source, 0, "UNCHECKED_HASH")  # loaded without looking at the source
    ignored = compile_with(exe, source, 2, "TIMESTAMP")
    source.write_bytes(PATCHED)  # patched after compiling; another size
    fresh = compile_with(exe, source, 1, "CHECKED_HASH")
    own = write_pyc(pyc_path(source), hash_pyc(PATCHED, PATCHED))
    assert [loaded_by(exe, source, level, PRISTINE) for level in bytecode.LEVELS] == ["old", "current", "current"]
    assert [p.name for p in (old, fresh, ignored)] == [f"scheduler.{tag}{s}.pyc" for s in ("", ".opt-1", ".opt-2")]
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "python3.9").symlink_to(exe)
    monkeypatch.setenv("PATH", os.pathsep.join([str(folder), os.environ.get("PATH", "")]))

    def finding(pyc: Path, level: int, verdict: str, kind: str, why: str) -> bytecode.PycFinding:
        return bytecode.PycFinding(str(pyc), str(source), tag, level, bytecode._sha256(str(pyc)), verdict, kind, why,
                                   python)

    own_finding = bytecode.PycFinding(str(own), str(source), TAG, 0, bytecode._sha256(str(own)), bytecode.MATCHES,
                                      bytecode.CHECKED_HASH, "checked-hash pyc holding the hash of the current source",
                                      f"{sys.implementation.name} {'.'.join(map(str, sys.version_info[:3]))}")
    return source, [own_finding,  # then the other Python's, in the order of their names
                    finding(fresh, 1, bytecode.MATCHES, bytecode.CHECKED_HASH, "checked-hash pyc holding the hash of "
                            "the current source"),
                    finding(ignored, 2, bytecode.IGNORED, bytecode.TIMESTAMP, "timestamp pyc of another mtime or "
                            "size: recompiled from source"),
                    finding(old, 0, bytecode.DIFFERS, bytecode.UNCHECKED_HASH, "unchecked-hash pyc: loaded without "
                            "looking at the source, but its code differs from the source's (first in "
                            "<module>.watermark)")]


def test_another_python_judges_the_pycs_it_compiled_for_an_old_source(tmp_path, monkeypatch, another_python):
    source, expected = pycs_of_another_python(tmp_path, monkeypatch, another_python)
    assert bytecode.inspect([str(source)]) == expected


def test_the_shipped_text_run_as_the_audit_runs_it_has_another_python_judge_its_pycs(
        tmp_path, monkeypatch, another_python):
    """The audit runs this file's text with the image's Python, which hands another tag's pycs to that Python."""
    source, expected = pycs_of_another_python(tmp_path, monkeypatch, another_python)
    argv = ["inspect", json.dumps({"sources": [str(source)]})]
    done = subprocess.run([sys.executable, "-B", "-c", bytecode.BOOT, *argv],
                          env={**os.environ, bytecode.SCRIPT_ENV: bytecode.script()}, capture_output=True, check=True,
                          cwd=tmp_path, text=True)
    assert done.stdout == json.dumps([f.to_json() for f in expected]) + "\n"


def test_another_python_running_the_shipped_text_without_path_finds_usr_bins_python(
        tmp_path, monkeypatch, another_python):
    """An image whose Python runs with a PATH that leaves out /usr/bin still has /usr/bin's Python judge its pycs."""
    probe = "import sys; print(sys.implementation.cache_tag, sys.implementation.name, sys.version.split()[0])"
    try:
        usr_tag, *usr_python = subprocess.run(["/usr/bin/python3", "-c", probe], capture_output=True, text=True,
                                              check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        usr_tag = ""
    if usr_tag != TAG:
        pytest.skip(f"/usr/bin/python3 is not a Python of cache tag {TAG}")
    exe, tag, python = another_python
    source, expected = pycs_of_another_python(tmp_path, monkeypatch, another_python)
    own, *others = expected
    own.python = " ".join(usr_python)  # /usr/bin's judged it
    env = {k: v for k, v in os.environ.items() if k != "PATH"}
    done = subprocess.run([exe, "-B", "-c", bytecode.BOOT, "inspect", json.dumps({"sources": [str(source)]})],
                          env={**env, bytecode.SCRIPT_ENV: bytecode.script()}, capture_output=True, check=True,
                          cwd=tmp_path, text=True)
    assert json.loads(done.stdout) == [f.to_json() for f in [*others, own]]


def test_another_python_judging_writes_no_bytecode_of_its_own(tmp_path, monkeypatch, another_python):
    """Judging runs the other Python with -B: nothing is written into that Python's own installation."""
    exe, tag, _ = another_python
    prefix = Path(exe).parents[2]
    copy = tmp_path / "python"
    shutil.copytree(prefix, copy, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    source = module(tmp_path, PRISTINE)
    pyc = compile_with(exe, source, 0, "UNCHECKED_HASH")
    source.write_bytes(PATCHED)
    judge_with = str(copy / Path(exe).relative_to(prefix))
    (finding,) = bytecode._judged_elsewhere(judge_with, tag, [(str(pyc), str(source), 0)])
    assert finding.verdict == bytecode.DIFFERS
    assert sorted(copy.rglob("__pycache__")) == []
