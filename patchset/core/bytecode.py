"""The bytecode Python will really run for a module, and whether it is the source's code.

An interpreter trusts a cached ``.pyc`` by its 16-byte header alone: a checked-hash pyc whose
header holds the hash of the source on disk, an unchecked-hash pyc, or a timestamp pyc whose
mtime and size match the source are loaded as they are, and the header says nothing about the
code inside. So for every ``.pyc`` of a module this decides whether the interpreter of its cache
tag would load it for the current source, and if so compares its code object with the source
compiled by that interpreter (at the pyc's optimisation level).

"Same code" is code-object equality, the comparison CPython makes of everything marshal writes
for a code object (instructions, constants, nested code, names, line and exception tables)
except ``co_filename``, which only names where the file was compiled. Comparing the marshal
bytes themselves would flag identical code: marshal's back-references depend on reference
counts, and installers compile under other paths. Patch releases of one Python share the magic
number but not always the compiler (3.11.7 threads a ``continue`` straight back to the loop head
where 3.11.2 jumps forward to a backward jump), so code that is not equal is compared once more
with every chain of unconditional jumps resolved to where it ends and the line table left out:
the same instructions, operands, constants and names, which run the same way.

This file is also shipped as text: the audit runs it with the image's own Python in a throwaway
container, ``build`` runs it in the image's compile stage, and it re-runs itself with any other
Python of the image whose cache tag a pyc carries. So it imports only the standard library at
module level and keeps to Python 3.9.
"""

from __future__ import annotations

import contextlib
import dis
import hashlib
import importlib.util
import json
import marshal
import os
import subprocess
import sys
import tempfile
import types
from dataclasses import asdict, dataclass

TIMESTAMP = "timestamp"
CHECKED_HASH = "checked-hash"
UNCHECKED_HASH = "unchecked-hash"

# What one .pyc means for the module (PycFinding.verdict).
MATCHES = "matches"  # loaded, and its code is the source's
DIFFERS = "differs"  # loaded, and its code is not the source's (or does not load): a finding
IGNORED = "ignored"  # its interpreter recompiles from source instead (stale timestamp, other magic, ...)
DORMANT = "dormant"  # a checked-hash pyc of other source bytes: loaded only under --check-hash-based-pycs never
NO_INTERPRETER = "no-interpreter"  # no Python here has its cache tag
UNINSPECTED = "uninspected"  # a Python with its tag exists but could not judge it

ACCEPTED = "accepted"  # acceptance(): the interpreter loads it (then MATCHES or DIFFERS)

LEVELS = (0, 1, 2)  # plain, -O, -OO
#: The environment variable that carries this file's text into a container (see BOOT).
SCRIPT_ENV = "PATCHSET_BYTECODE_SCRIPT"
BOOT = f"import os; exec(compile(os.environ[{SCRIPT_ENV!r}], 'patchset-bytecode', 'exec'))"
#: Where build's compile stage finds the provenance record (provenance.PROVENANCE_PATH; kept in
#: step by a test, since this file cannot import patchset).
RECORD_PATH = "vllm/.patchset-provenance.json"


@dataclass(frozen=True)
class PycHeader:
    """The 16-byte header of a .pyc: its magic number and how it is tied to its source."""

    magic: bytes
    kind: str  # TIMESTAMP, CHECKED_HASH or UNCHECKED_HASH
    source_hash: bytes | None = None  # hash-based pycs
    mtime: int | None = None  # timestamp pycs
    size: int | None = None


@dataclass
class PycFinding:
    """One .pyc beside a module the series touches, and whether it still answers to that module's source."""

    pyc: str  # absolute path
    source: str  # absolute path of the module's .py
    tag: str  # interpreter cache tag from the file name (cpython-311)
    level: int | None  # optimisation level from the file name; None for a name no interpreter loads
    sha256: str
    verdict: str
    kind: str = ""  # header kind, when the header was read
    why: str = ""
    python: str = ""  # the interpreter that judged it

    def to_json(self) -> dict:
        return asdict(self)


def parse_header(data: bytes) -> PycHeader:
    """The header of a pyc (PEP 552); ValueError for what no interpreter would classify."""
    if len(data) < 16:
        raise ValueError(f"{len(data)} bytes, shorter than a pyc header")
    flags = int.from_bytes(data[4:8], "little")
    if flags & ~0b11:
        raise ValueError(f"invalid flags {flags:#x}")
    if flags & 0b1:
        return PycHeader(data[:4], CHECKED_HASH if flags & 0b10 else UNCHECKED_HASH, source_hash=data[8:16])
    return PycHeader(data[:4], TIMESTAMP, mtime=int.from_bytes(data[8:12], "little"),
                     size=int.from_bytes(data[12:16], "little"))


def cache_name(filename: str, stem: str) -> tuple[str, int | None] | None:
    """``scheduler.cpython-311.opt-1.pyc`` -> (``cpython-311``, 1); None when not a pyc of ``stem``.

    The level is None for names no interpreter loads (``opt-3``, extra dots).
    """
    if not (filename.startswith(stem + ".") and filename.endswith(".pyc")):
        return None
    parts = filename[len(stem) + 1:-4].split(".")
    if not parts[0]:
        return None
    if len(parts) == 1:
        return parts[0], 0
    if len(parts) == 2 and parts[1] in ("opt-1", "opt-2"):
        return parts[0], int(parts[1][-1])
    return parts[0], None


def acceptance(header: PycHeader, source: bytes, st_mtime: float, st_size: int, *,
               magic: bytes | None = None, check_hash_based: str | None = None) -> tuple[str, str]:
    """Would the running interpreter load this pyc for ``source``? (status, why).

    Returns ``(ACCEPTED, why)``, ``(IGNORED, why)`` or ``(DORMANT, why)``; follows
    ``SourceLoader.get_code`` of CPython 3.7+ (``_classify_pyc``, ``_validate_*_pyc``).
    """
    magic = importlib.util.MAGIC_NUMBER if magic is None else magic
    if check_hash_based is None:
        import _imp

        check_hash_based = _imp.check_hash_based_pycs
    if header.magic != magic:
        return IGNORED, f"magic {header.magic.hex()} is not this interpreter's {magic.hex()}"
    if header.kind == TIMESTAMP:
        if header.mtime == int(st_mtime) & 0xFFFFFFFF and header.size == st_size & 0xFFFFFFFF:
            return ACCEPTED, "timestamp pyc whose mtime and size match the source"
        return IGNORED, "timestamp pyc of another mtime or size: recompiled from source"
    checked = check_hash_based == "always" or (header.kind == CHECKED_HASH and check_hash_based != "never")
    if not checked:
        return ACCEPTED, f"{header.kind} pyc: loaded without looking at the source"
    if header.source_hash == importlib.util.source_hash(source):
        return ACCEPTED, f"{header.kind} pyc holding the hash of the current source"
    if header.kind == CHECKED_HASH:
        return DORMANT, "checked-hash pyc of other source bytes: loaded only under --check-hash-based-pycs never"
    return IGNORED, "unchecked-hash pyc of other source bytes, checked because of --check-hash-based-pycs always"


def same_code(data: bytes, source: bytes, path: str, level: int) -> tuple[bool, str]:
    """Is the code of pyc ``data`` the code ``source`` compiles to at ``level``? (True, "") or (False, why)."""
    try:
        cached = marshal.loads(data[16:])
    except (EOFError, ValueError, TypeError) as e:
        return False, f"its code does not unmarshal ({e}): importing the module fails"
    if not isinstance(cached, types.CodeType):
        return False, f"it holds a {type(cached).__name__}, not code: importing the module fails"
    try:
        fresh = compile(source, path, "exec", dont_inherit=True, optimize=level)
    except (SyntaxError, ValueError) as e:
        return False, f"the source does not compile ({e}); this bytecode runs instead"
    if cached == fresh:
        return True, ""
    if _shape(cached) == _shape(fresh):
        return True, "the same code up to jump encoding and line table (another patch release's compiler)"
    return False, f"its code differs from the source's (first in {_first_difference(cached, fresh)})"


def _first_difference(a: types.CodeType, b: types.CodeType, where: str = "") -> str:
    name = f"{where}.{a.co_name}" if where else a.co_name
    inner_a = [c for c in a.co_consts if isinstance(c, types.CodeType)]
    inner_b = [c for c in b.co_consts if isinstance(c, types.CodeType)]
    if len(inner_a) == len(inner_b):
        for i, inner in enumerate(inner_a):  # zip(strict=) is 3.10+; this file runs on 3.9
            if _shape(inner) != _shape(inner_b[i]):
                return _first_difference(inner, inner_b[i], name)
    return name


_UNCONDITIONAL = {"JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP_ABSOLUTE", "JUMP"}
_JUMPS = set(dis.hasjrel) | set(dis.hasjabs)


def _shape(code: types.CodeType) -> tuple:
    """What a code object does, without its line table and with every jump chain resolved."""
    instructions = list(dis.get_instructions(code))
    at = {i.offset: i for i in instructions}

    def landing(target: int) -> int:
        for _ in range(len(instructions)):  # bounded: a cycle of jumps ends the walk
            i = at.get(target)
            if i is None or i.opname not in _UNCONDITIONAL:
                break
            target = i.argval
        return target

    ops = tuple(("JUMP" if i.opname in _UNCONDITIONAL else i.opname, landing(i.argval)) if i.opcode in _JUMPS
                else (i.opname, i.arg) for i in instructions)
    consts = tuple(_shape(c) if isinstance(c, types.CodeType)
                   else (type(c).__name__, sorted(map(repr, c)) if isinstance(c, frozenset) else repr(c))
                   for c in code.co_consts)
    return (code.co_name, code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags,
            code.co_names, code.co_varnames, code.co_cellvars, code.co_freevars, consts, ops,
            getattr(code, "co_exceptiontable", b""))


def candidates(source_path: str) -> list[str]:
    """Every cached pyc of the module: its ``__pycache__`` and, when set, ``sys.pycache_prefix``'s copy."""
    folder, name = os.path.split(source_path)
    stem = name[:-3]
    dirs = [os.path.join(folder, "__pycache__")]
    with contextlib.suppress(NotImplementedError, ValueError):
        prefixed = os.path.dirname(importlib.util.cache_from_source(source_path))
        if prefixed not in dirs:
            dirs.append(prefixed)
    out = []
    for d in dirs:
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        out += [os.path.join(d, n) for n in names if cache_name(n, stem) is not None]
    return out


def judge(pyc: str, source_path: str) -> PycFinding:
    """The verdict of the running interpreter on one pyc of its own cache tag."""
    with open(pyc, "rb") as f:
        data = f.read()
    parsed = cache_name(os.path.basename(pyc), os.path.basename(source_path)[:-3])
    tag, level = parsed if parsed else ("", None)
    finding = PycFinding(pyc, source_path, tag, level, hashlib.sha256(data).hexdigest(), IGNORED,
                         python=f"{sys.implementation.name} {'.'.join(map(str, sys.version_info[:3]))}")
    if level is None:
        finding.why = "no interpreter loads a pyc of this name"
        return finding
    try:
        header = parse_header(data)
        with open(source_path, "rb") as f:
            source = f.read()
        st = os.stat(source_path)
    except ValueError as e:
        finding.why = f"unreadable header ({e}): recompiled from source"
        return finding
    except FileNotFoundError:
        finding.why = "no source: a __pycache__ pyc is never loaded without its .py"
        return finding
    finding.kind = header.kind
    status, finding.why = acceptance(header, source, st.st_mtime, st.st_size)
    if status != ACCEPTED:
        finding.verdict = status
        return finding
    same, why = same_code(data, source, source_path, level)
    finding.verdict = MATCHES if same else DIFFERS
    finding.why = f"{finding.why}, {'and' if same else 'but'} {why}" if why else finding.why
    return finding


def inspect(sources: list[str], only_tag: str | None = None) -> list[PycFinding]:
    """Judge every pyc of these modules: this interpreter's own, and other tags with their own Python."""
    own = sys.implementation.cache_tag
    findings: list[PycFinding] = []
    foreign: dict[str, list[tuple[str, str, int | None]]] = {}
    for source in sources:
        stem = os.path.basename(source)[:-3]
        for pyc in candidates(source):
            tag, level = cache_name(os.path.basename(pyc), stem) or ("", None)
            if tag == own:
                findings.append(judge(pyc, source))
            elif only_tag is None:
                foreign.setdefault(tag, []).append((pyc, source, level))
    if foreign:
        pythons = interpreters()
        for tag, items in sorted(foreign.items()):
            findings += _judged_elsewhere(pythons.get(tag), tag, items)
    return findings


def _judged_elsewhere(exe: str | None, tag: str, items: list[tuple[str, str, int | None]]) -> list[PycFinding]:
    def unjudged(verdict: str, why: str) -> list[PycFinding]:
        return [PycFinding(pyc, source, tag, level, _sha256(pyc), verdict, why=why) for pyc, source, level in items]

    if exe is None:
        return unjudged(NO_INTERPRETER, f"no Python here has cache tag {tag}: never loaded")
    sources = sorted({source for _pyc, source, _level in items})
    try:
        done = subprocess.run([exe, "-B", "-c", BOOT, "inspect", json.dumps({"sources": sources, "tag": tag})],
                              env={**os.environ, SCRIPT_ENV: script()}, capture_output=True, timeout=300)
        rows = json.loads(done.stdout.decode().strip().splitlines()[-1]) if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as e:
        return unjudged(UNINSPECTED, f"{exe} could not judge it: {e}")
    if rows is None:
        return unjudged(UNINSPECTED, f"{exe} could not judge it: {done.stderr.decode(errors='replace')[-300:]}")
    return [PycFinding(**row) for row in rows]


def interpreters() -> dict[str, str]:
    """cache tag -> executable, for every Python found on PATH and in the usual bin folders."""
    found: dict[str, str] = {sys.implementation.cache_tag: sys.executable}
    seen = {os.path.realpath(sys.executable)}
    folders = os.environ.get("PATH", "").split(os.pathsep) + ["/usr/bin", "/usr/local/bin"]
    for folder in folders:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            exe = os.path.join(folder, name)
            if not _looks_like_python(name) or os.path.realpath(exe) in seen or not os.access(exe, os.X_OK):
                continue
            seen.add(os.path.realpath(exe))
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                done = subprocess.run([exe, "-c", "import sys; print(sys.implementation.cache_tag)"],
                                      capture_output=True, timeout=60)
                tag = done.stdout.decode().strip()
                if done.returncode == 0 and tag and tag != "None":
                    found.setdefault(tag, exe)
    return found


def _looks_like_python(name: str) -> bool:
    for prefix in ("python", "pypy"):
        if name.startswith(prefix):
            rest = name[len(prefix):]
            return rest == "" or rest.replace(".", "").isdigit() and not rest.startswith(".")
    return False


def _sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def script() -> str:
    """This module's text, to run with another interpreter (``python -c BOOT`` with SCRIPT_ENV set)."""
    text = os.environ.get(SCRIPT_ENV)
    if text:
        return text
    with open(__file__, encoding="utf-8") as f:
        return f.read()


# --- build: compile the touched modules in the image and record their bytecode ---------------------


def compile_layer(layer: str, site: str, touched: list[str]) -> dict[str, str]:
    """Compile each touched module staged under ``layer`` at every level; {bytecode path: sha256}.

    Hash-checked pycs stay valid only while the source bytes are exactly these. The paths are
    the ones this interpreter reads (``cache_from_source``), relative to ``site`` when under it.
    """
    import py_compile

    written = {}
    for rel in touched:
        module = os.path.join(site, rel)
        if not rel.endswith(".py") or not os.path.exists(layer + module):
            continue
        for level in LEVELS:
            cfile = importlib.util.cache_from_source(module, optimization=level or "")
            py_compile.compile(layer + module, cfile=layer + cfile, dfile=module, optimize=level, doraise=True,
                               invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
            key = os.path.relpath(cfile, site) if cfile.startswith(site.rstrip("/") + "/") else cfile
            written[key] = _sha256(layer + cfile)
    return written


def record_bytecode(record_file: str, written: dict[str, str]) -> None:
    """Add ``written`` as the record's ``bytecode`` map (same layout as provenance.dumps)."""
    with open(record_file, "rb") as f:
        record = json.load(f)
    record["bytecode"] = dict(sorted(written.items()))
    folder = os.path.dirname(record_file)
    mode = os.stat(record_file).st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".provenance.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(record, indent=2, sort_keys=True) + "\n")
        os.chmod(tmp, mode)
        os.replace(tmp, record_file)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


# --- apply: a tree is applied only when no old bytecode of it would still run -----------------------


def settle_tree(modules: dict[str, os.PathLike | str | None]) -> dict[str, str]:
    """After apply: remove every pyc an interpreter would load with other code, verify, map the rest.

    ``modules`` maps the touched repository-layout paths to their files in the tree. Returns the
    provenance ``bytecode`` map (path -> sha256 of every pyc left). Raises PatchsetError when such
    bytecode cannot be removed: the tree would run old code.
    """
    for finding in inspect(sorted(_tree_sources(modules))):
        if finding.verdict == DIFFERS:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(finding.pyc)
    findings = verify_tree(modules)
    local = _tree_sources(modules)
    recorded = {}
    for f in findings:
        rel = local[f.source]
        cache = os.path.join(os.path.dirname(f.source), "__pycache__")
        key = f"{os.path.dirname(rel)}/__pycache__/{os.path.basename(f.pyc)}" if os.path.dirname(f.pyc) == cache \
            else f.pyc
        recorded[key] = f.sha256
    return dict(sorted(recorded.items()))


def verify_tree(modules: dict[str, os.PathLike | str | None]) -> list[PycFinding]:
    """The findings for these modules of a tree; PatchsetError if a pyc that would be loaded holds other code."""
    from patchset.errors import PatchsetError  # host side only: the shipped text never reaches here

    findings = inspect(sorted(_tree_sources(modules)))
    wrong = [f for f in findings if f.verdict == DIFFERS]
    if wrong:
        raise PatchsetError(f"Python would run {wrong[0].pyc} instead of the patched source: {wrong[0].why}",
                            file=wrong[0].pyc, hint="remove that bytecode file; the series is not in effect")
    return findings


def _tree_sources(modules: dict[str, os.PathLike | str | None]) -> dict[str, str]:
    """file in the tree -> repository-layout path, for the touched Python modules that exist."""
    return {os.fspath(path): rel for rel, path in modules.items()
            if path is not None and rel.endswith(".py") and os.path.isfile(path)}


# --- entry point for the shipped text ------------------------------------------------------------


def main(argv: list[str]) -> int:
    """``inspect JSON`` (prints the findings as one JSON line) or ``compile LAYER SITE TOUCHED``."""
    if argv[:1] == ["inspect"] and len(argv) == 2:
        args = json.loads(argv[1])
        print(json.dumps([f.to_json() for f in inspect(args["sources"], args.get("tag"))]))
        return 0
    if argv[:1] == ["compile"] and len(argv) == 4:
        layer, site, touched = argv[1], argv[2], argv[3].split()
        written = compile_layer(layer, site, touched)
        record = layer + os.path.join(site, RECORD_PATH)
        if os.path.exists(record):
            record_bytecode(record, written)
        print(f"patchset: compiled {len(written)} bytecode files ({len(LEVELS)} optimisation levels)")
        return 0
    print("usage: inspect JSON | compile LAYER SITE TOUCHED", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
