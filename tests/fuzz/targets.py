"""The fuzz targets: every reader of outside input, each held to one contract.

A target takes the fuzzer's bytes, hands them to a reader as the reader meets them in real use
(a file on disk, bytes of a download, a tree in a folder) and returns. The contract of every reader:

* it gives a result, or refuses with a :class:`PatchsetError` that says where (``file``, and the
  line where the input has lines); ``expect`` checks that;
* any other exception is a finding: the fuzzer stops and keeps the input (``run.py`` counts it);
* it returns within the per-input time bound and the memory limit ``run.py`` gives libFuzzer.

Targets write only below one scratch folder per process (``SCRATCH``), never elsewhere: the
readers are the repository's own, the folder is the only place they are pointed at.
"""

from __future__ import annotations

import atexit
import contextlib
import gzip
import io
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from patchset.errors import PatchsetError

# In memory where the machine has it: the journal fsyncs every step, which on a disk is most of its time.
# run.py gives each target's processes a folder of their own and removes it after (a crash skips atexit).
SHM = "/dev/shm" if os.path.isdir("/dev/shm") else None
SCRATCH = Path(tempfile.mkdtemp(prefix="patchset-fuzz-", dir=os.environ.get("PATCHSET_FUZZ_SCRATCH") or SHM))
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)
PATCH = b"""Description: a fix
Origin: backport, https://github.com/vllm-project/vllm/pull/1
---
diff --git a/vllm/a.py b/vllm/a.py
--- a/vllm/a.py
+++ b/vllm/a.py
@@ -1,3 +1,3 @@
 x = 1
-y = 2
+y = 3
 z = 4
"""
PRISTINE = b"x = 1\ny = 2\nz = 4\n"


class Finding(AssertionError):
    """A reader broke its contract in a way that is not an exception of its own (a refusal that names nothing)."""


@dataclass(frozen=True)
class Target:
    """One reader under the fuzzer."""

    name: str
    run: Callable[[bytes], None]
    what: str  # the reader, for the table in docs/fuzzing.md
    modules: tuple[str, ...]  # what run.py instruments for coverage: the reader, not all of patchset
    max_len: int = 64 * 1024


def expect(where: str | None = None) -> contextlib.AbstractContextManager[None]:
    """A refusal must be a PatchsetError that names the input (``where``, when given, in its file or message)."""
    return _expect(where)


@contextlib.contextmanager
def _expect(where: str | None) -> Iterator[None]:
    try:
        yield
    except PatchsetError as e:
        named = e.file or (where is not None and where in e.message)
        if not named:
            raise Finding(f"a refusal that names no file: {e!r}") from e


def fresh(name: str) -> Path:
    """An empty folder under the scratch folder, emptied on every call."""
    folder = SCRATCH / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder


# --- core ----------------------------------------------------------------------------------------------


def patch_parser(data: bytes) -> None:
    """core/patchfile, then the engine on a small tree: a patch that parses is one the engine can be given."""
    from patchset.core.engine import apply_patch
    from patchset.core.patchfile import parse_patch

    strip, root = (data[0] % 3, "vllm" if data[0] & 4 else "") if data else (1, "")
    pf = None
    with expect("fuzz.patch"):
        pf = parse_patch(data, name="fuzz.patch", strip=strip, root=root)
    if pf is None:
        return
    for f in pf.files:  # every path is one the tree could hold
        for p in f.touched:
            if p.startswith(("/", "../")) or "\0" in p or max(len(c.encode("utf-8", "surrogateescape"))
                                                             for c in p.split("/")) > 255:
                raise Finding(f"the parser let {p!r} through")
    tree = {p: PRISTINE for p in pf.touched}
    apply_patch(tree, pf, max_fuzz=data[-1] % 3)
    apply_patch({}, pf)


def header(data: bytes) -> None:
    """The DEP-3 header of a patch file and the mail header of ``git format-patch`` (import)."""
    from patchset.core.patchfile import parse_dep3
    from patchset.verbs.importer import read_mails

    fields = parse_dep3(data.decode("utf-8", errors="surrogateescape"))
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in fields.items())
    mail = b"From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\n" + data
    with expect("fuzz.patch"):
        for entry in read_mails(mail, "fuzz.patch", "fuzz.patch"):
            assert entry.mail is not None and all(isinstance(v, str) for v in entry.mail.values())


def manifest(data: bytes) -> None:
    """patches.yaml, read from a project folder that holds one recipe."""
    from patchset.core.manifest_load import inspect_manifest, load_manifest

    root = SCRATCH / "manifest"
    if not (root / "recipes" / "fix" / "fix.patch").is_file():
        (root / "recipes" / "fix").mkdir(parents=True, exist_ok=True)
        (root / "recipes" / "fix" / "fix.patch").write_bytes(PATCH)
    path = root / "patches.yaml"
    path.write_bytes(data)
    # One reader an input (the length's parity chooses): load_manifest is inspect_manifest without orphans
    # as errors, and the YAML parse, most of the time, would otherwise be spent twice on the same text.
    if len(data) % 2 == 0:
        with expect(str(path)):
            load_manifest(path)
        return
    _, errors = inspect_manifest(path)
    for e in errors:
        if not e.file:
            raise Finding(f"a manifest problem that names no file: {e!r}")


# --- import --------------------------------------------------------------------------------------------


def _recipes(folder: Path) -> None:
    for name in ("a.patch", "b.diff", "c.patch"):
        (folder / name).write_bytes(PATCH)


def import_series(data: bytes) -> None:
    """A quilt ``series`` file beside three patches."""
    from patchset.verbs.importer import read_series

    folder = SCRATCH / "series"  # read, never written to, by the reader: made once, the series replaced
    if not (folder / "c.patch").is_file():
        folder.mkdir(exist_ok=True)
        _recipes(folder)
    (folder / "series").write_bytes(data)
    with expect(str(folder / "series")):
        read_series(folder / "series")


def import_mbox(data: bytes) -> None:
    """An mbox of ``git format-patch`` mails (or one mail), read as a file."""
    from patchset.verbs.importer import read_file

    folder = SCRATCH / "mbox"  # the reader reads this one file: replaced, not a new folder each input
    folder.mkdir(exist_ok=True)
    path = folder / "fix.mbox"
    path.write_bytes(b"From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\n" + data)
    with expect(str(path)):
        read_file(path, str(path))


def import_gz(data: bytes) -> None:
    """A ``.patch.gz``: the first byte says whether the rest is the gzip file itself or what it holds."""
    from patchset.verbs.importer import read_file

    folder = SCRATCH / "gz"
    folder.mkdir(exist_ok=True)
    path = folder / "fix.patch.gz"
    raw = data[1:] if data[:1] == b"\0" else gzip.compress(data[1:], compresslevel=1, mtime=0)
    path.write_bytes(raw)
    with expect(str(path)):
        read_file(path, str(path))


def files_of(data: bytes) -> list[tuple[str, bytes]]:
    """``data`` as files: ``NAME\\0CONTENT\\0NAME\\0CONTENT...``; names that are not plain file names are dropped."""
    parts = data.split(b"\0")
    out = []
    for name, content in zip(parts[::2], parts[1::2], strict=False):
        text = name.decode("utf-8", errors="replace")
        if text and "/" not in text and text not in (".", "..") and len(text.encode()) < 200:
            out.append((text, content))
    return out


def import_dir(data: bytes) -> None:
    """A folder of patches (with or without a ``series`` file)."""
    from patchset.verbs.importer import read_dir

    folder = fresh("dir") / "patches"
    folder.mkdir()
    for name, content in files_of(data):
        (folder / name).write_bytes(content)
    with expect(str(folder)):
        read_dir(folder)


# --- sources -------------------------------------------------------------------------------------------


def wheel(data: bytes) -> None:
    """A wheel's zip: central directory, local headers, RECORD, CRC; read as a whole file and by range."""
    from patchset.sources import wheel as wheel_source

    whole = bool(data[:1]) and data[0] & 1 == 1
    try:
        reader = wheel_source.open_reader(io.BytesIO(data[1:]), whole=whole)
        for name in sorted(reader.names)[:8] + ["vllm/a.py", "vllm-0.29.0.dist-info/RECORD"]:
            got = reader.read(name)
            assert got is None or isinstance(got, bytes)
    except wheel_source.Unverified:
        pass  # the reader's own word for "cannot be trusted": the range reader falls back, the whole wheel refuses


def _tar(data: bytes) -> bytes:
    """The first byte says whether the rest is a .tar.gz as is, or a tar to gzip (mutations inside the tar)."""
    # Level 1: the reader sees a valid stream of the same bytes either way; level 9 cost a third of the target's time.
    return data[1:] if data[:1] == b"\0" else gzip.compress(data[1:], compresslevel=1, mtime=0)


def sdist(data: bytes) -> None:
    """An sdist's tar.gz unpacked as the cache unpacks it: members, links, '..', sizes."""
    from patchset.sources.sdist import _unpack

    folder = fresh("sdist")
    blob = folder / "vllm-0.29.0.tar.gz"
    blob.write_bytes(_tar(data))
    dest = folder / "tree"
    dest.mkdir()
    with expect("vllm-0.29.0.tar.gz"):
        _unpack(blob, dest, "vllm-0.29.0.tar.gz")
    for path in folder.rglob("*"):  # nothing outside dest, nothing but files and folders
        if path != blob and dest not in path.parents and path != dest:
            raise Finding(f"unpacking wrote {path} outside the tree")
        if path.is_symlink() or not (path.is_file() or path.is_dir()):
            raise Finding(f"unpacking left {path}, neither a file nor a folder")


def index_json(data: bytes) -> None:
    """The package index's PEP 691 project page, and the answer remembered in the cache."""
    from patchset.cache import Cache
    from patchset.sources import index

    with expect("https://index.invalid/simple/vllm/"):
        files = index.project_page(data, "https://index.invalid/simple/vllm/")
        assert all(isinstance(f.filename, str) and isinstance(f.sha256, str) for f in files)
    # One cache folder for every input: the entry is replaced whole by each (put_bytes renames it in), and it is
    # all remembered() reads; nothing is gained by a new folder each input but time.
    cache = Cache(SCRATCH / "index")
    cache.put_bytes(data, "index", "vllm-0.29.0-sdist.json")
    found = index.IndexFile("vllm-0.29.0.tar.gz", "https://index.invalid/x.tar.gz", "0" * 64)
    with expect("vllm-0.29.0-sdist.json"):
        got = index.remembered(cache, "sdist", "vllm", "0.29.0", lambda project, version: found)
        assert isinstance(got.url, str) and isinstance(got.filename, str)


def provenance(data: bytes) -> None:
    """The provenance record an apply leaves in the tree (read by apply again, audit and sbom)."""
    from patchset.core import provenance as record_module

    with expect(record_module.PROVENANCE_PATH):
        record = record_module.loads(data)
        record_module.carried_ids(record)
        # what apply (verbs/apply._already) and audit (verbs/audit._read_record) read of it
        str(record.get("manifest", {}).get("sha256"))[:12]
        for path, entry in record.get("files", {}).items():
            _ = path.endswith(".py"), entry.get("sha256"), entry.get("mode") and int(entry["mode"], 8)


_JOURNALS: dict[int, tuple[Path, bytes]] = {}


def _journal_template(step: int) -> tuple[Path, bytes]:
    """The tree a real apply leaves stopped at ``step`` (the journal begun, ``step`` renames of its commit
    done) and the journal it wrote; made once per step, in the very folder the target uses (the journal
    names its paths), and copied from then on: the apply is the same work every input, the recovery is not."""
    if step in _JOURNALS:
        return _JOURNALS[step]
    from patchset import journal as j

    root = fresh("journal") / "site"
    package = root / "vllm"
    package.mkdir(parents=True)
    (package / "__init__.py").write_bytes(b"")
    (package / "a.py").write_bytes(PRISTINE)
    (package / "b.py").write_bytes(b"gone = 1\n")
    plan, new, old = j.plan(root, package, "vllm/.patchset-provenance.json",
                            [("vllm/a.py", "vllm/a.py", b"x = 1\ny = 3\nz = 4\n", None),
                             ("vllm/b.py", "vllm/b.py", None, None),
                             ("vllm/new/c.py", "vllm/new/c.py", b"c = 1\n", None)])
    record = b'{"schema": 1}\n'
    plan.record_sha256 = j.sha256(record)
    plan.compile = False
    plan.dir.mkdir()
    j.begin(plan, new, old, record)
    for e in plan.entries[:step]:  # the renames of a commit cut short
        if e.new_sha256 is None:
            plan.target(e).unlink()
        else:
            os.replace(plan.staged(e), plan.target(e))
    assert plan.dir == package / ".patchset-journal", plan.dir
    template = SCRATCH / f"journal-template-{step}"
    shutil.copytree(root, template, symlinks=True)
    _JOURNALS[step] = template, (plan.dir / "journal.json").read_bytes()
    return _JOURNALS[step]


def journal(data: bytes) -> None:
    """An apply journal as a kill at any instant leaves it, cut or damaged anywhere: recover or refuse.

    The tree is made by a real apply stopped at the step the first byte names; the rest of the input
    replaces the journal file (the first byte's high bit: only cut at that length, else replaced).
    """
    from patchset import journal as j

    step = data[0] if data else 0
    template, written = _journal_template(step % 4)
    root = fresh("journal") / "site"
    package = root / "vllm"
    shutil.copytree(template, root, symlinks=True)
    body = written[: int.from_bytes(data[1:3] or b"\0", "big") % (len(written) + 1)] if step & 0x80 else data[1:]
    (package / ".patchset-journal" / "journal.json").write_bytes(body)
    with expect(str(package)):
        j.recover(root, package)
    for path in root.parent.rglob("*"):  # a journal names paths: none may lead outside its tree
        if root not in path.parents and path != root:
            raise Finding(f"recovery wrote {path} outside the tree")


def junit(data: bytes) -> None:
    """pytest's JUnit XML, read back into results per test (never raises: a bad report is a problem string)."""
    from patchset.runners.junit import read_junit

    path = fresh("junit") / "junit.xml"
    path.write_bytes(data)
    results, problem = read_junit(path)
    assert problem is None or (isinstance(problem, str) and not results)


# --- what patchset keeps in its cache and reads back ---------------------------------------------------

MANIFEST = b"""schema: 1
upstream:
  pypi: vllm
targets:
  "0.29.0": {image: "vllm/vllm-openai:v0.29.0"}
patches:
  - id: fix
    title: A fix
    origin: backport
    upstream: {pr: 1, commit: dc02934}
    releases: ">=0.29.0"
    patch: recipes/fix/fix.patch
"""


@contextlib.contextmanager
def parse_cache(on: bool = True) -> Iterator[Path]:
    """The parse cache switched on (or off), in a cache folder of the scratch folder's (never the user's)."""
    saved = {k: os.environ.get(k) for k in ("PATCHSET_NO_PARSE_CACHE", "PATCHSET_CACHE")}
    os.environ.pop("PATCHSET_NO_PARSE_CACHE", None)
    if not on:
        os.environ["PATCHSET_NO_PARSE_CACHE"] = "1"
    os.environ["PATCHSET_CACHE"] = str(SCRATCH / "cache")
    try:
        yield SCRATCH / "cache"
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def whole(data: bytes) -> bytes:
    """``data`` as an entry the cache takes as whole: its sha256, then it."""
    import hashlib

    return hashlib.sha256(data).digest() + data


_REFERENCE: dict[str, object] = {}


def _manifest_project() -> Path:
    root = SCRATCH / "yaml-cache"
    if not (root / "recipes" / "fix" / "fix.patch").is_file():
        (root / "recipes" / "fix").mkdir(parents=True, exist_ok=True)
        (root / "recipes" / "fix" / "fix.patch").write_bytes(PATCH)
        (root / "patches.yaml").write_bytes(MANIFEST)
    return root / "patches.yaml"


_PARSES = [0]  # how many times the reader fell back to parsing the text


def _parse_once() -> None:
    """The parse the reader falls back to, of the one text this target has, done once and copied after: the
    parser itself is the manifest target's; here it would be most of the time, the same work each input."""
    import copy

    from patchset.core import yamlparse

    parse, text = yamlparse.parse, MANIFEST.decode()
    first = parse(text)

    def once(given: str) -> object:
        _PARSES[0] += 1
        return copy.deepcopy(first) if given == text else parse(given)

    yamlparse.parse = once  # type: ignore[assignment]


def _shape(node: object) -> object:
    """Everything the loader can see of a parsed node: type, value and every recorded position."""
    from patchset.core import yamlnodes

    if isinstance(node, yamlnodes.Mapping):
        return ("map", node.lc.line, node.lc.col, sorted(node.lc.data.items(), key=repr),
                [(_shape(k), _shape(v)) for k, v in node.items()])
    if isinstance(node, yamlnodes.Sequence):
        return ("seq", node.lc.line, node.lc.col, sorted(node.lc.data.items()), [_shape(v) for v in node])
    return (type(node).__name__, node)


def yaml_cache(data: bytes) -> None:
    """The kept parse of a manifest (core/yamlcache), damaged anywhere: the first byte's low bit says whether
    the rest is the entry as it stands on disk (cut, flipped: passed over, or read back as the very parse) or
    a whole entry of any content (its sha256 made right: the manifest loaded from it, or refused naming the
    manifest, never a crash)."""
    from patchset.core import yamlcache, yamlparse
    from patchset.core.manifest_load import load_manifest

    path, text = _manifest_project(), MANIFEST.decode()
    if "yaml" not in _REFERENCE:
        doc = yamlparse.parse(text)
        _REFERENCE["yaml"] = (_shape(doc.data), doc.duplicates, doc.written)
        _parse_once()
    with parse_cache():
        entry = yamlcache._entry(text)
        assert entry is not None
        entry.parent.mkdir(parents=True, exist_ok=True)
        if data[:1] and data[0] & 1:
            entry.write_bytes(whole(data[1:]))
            with expect(str(path)):
                load_manifest(path)
            return
        entry.write_bytes(data[1:])
        parses = _PARSES[0]
        doc = yamlcache.load(text)
    if _PARSES[0] == parses and (_shape(doc.data), doc.duplicates, doc.written) != _REFERENCE["yaml"]:
        raise Finding("a damaged parse-cache entry was read back as another document")


def _marshalled(data: bytes) -> bytes:
    """JSON as the marshal bytes of the values it names (lists as tuples, "b:..." as bytes), or ``data`` as is.

    Not ``data`` itself: marshal.loads of forged bytes allocates what their counts say (gigabytes), as the
    standard library documents; a whole entry is one patchset's own marshal.dumps wrote, as trusted as
    Python's __pycache__. What is fuzzed here is what the reader makes of any values such an entry holds.
    """
    import json
    import marshal

    def values(x: object) -> object:
        if isinstance(x, list):
            return tuple(values(v) for v in x)
        if isinstance(x, dict):
            return tuple((values(k), values(v)) for k, v in x.items())
        return x.encode("utf-8", "surrogateescape")[2:] if isinstance(x, str) and x.startswith("b:") else x

    try:
        return marshal.dumps(values(json.loads(data)))
    except (ValueError, RecursionError):
        return data[:0]


def patch_cache(data: bytes) -> None:
    """A patch file's kept parse (core/patchfile, marshal), damaged anywhere; the first byte as in yaml_cache.
    A damaged entry must give the parse itself; a whole one (values from JSON, see _marshalled) the parse
    or a PatchFile of the parser's types."""
    from patchset.cache import derived
    from patchset.core import patchfile

    if "patch" not in _REFERENCE:
        _REFERENCE["patch"] = patchfile.parse_patch(PATCH, name="fix.patch")
    with parse_cache():
        digest = patchfile.hashlib.sha256(PATCH).hexdigest()
        entry = derived("patch", f"{digest}\0{1}\0{''}\0{patchfile._MARSHAL}".encode(), (patchfile.__file__,),
                        ".marshal")
        assert entry is not None
        entry.parent.mkdir(parents=True, exist_ok=True)
        entry.write_bytes(whole(_marshalled(data[1:])) if data[:1] and data[0] & 1 else data[1:])
        got = patchfile._parsed.__wrapped__(PATCH, "fix.patch", 1, "")  # type: ignore[attr-defined]
    if not isinstance(got, patchfile.PatchFile) or not patchfile._parser_shaped(got):
        raise Finding(f"the kept parse gave {got!r}")
    if not (data[:1] and data[0] & 1) and got != _REFERENCE["patch"]:
        raise Finding("a damaged parse-cache entry was read back as another patch")


BASELINE_KEY = "vllm-0.29.0-sdist-0123456789ab-tests/v1"


def baseline(data: bytes) -> None:
    """A suite's pristine results kept in the cache (verbs/suites.load_baseline): a result or None, never a crash."""
    from patchset.runners import NodeResult, Outcome
    from patchset.verbs.suites import load_baseline

    path = SCRATCH / "baseline.json"
    path.write_bytes(data)
    got = load_baseline(path, BASELINE_KEY)
    if got is not None:
        for run in got.runs:
            for r in run.values():
                if not (isinstance(r, NodeResult) and isinstance(r.outcome, Outcome) and isinstance(r.message, str)
                        and isinstance(r.detail, str)):
                    raise Finding(f"a kept baseline gave {r!r}")
        f"{got.duration:.1f}"  # noqa: B018 -- as the report prints it


def cache_entries(data: bytes) -> None:
    """The other small files patchset keeps in its cache and reads back, as a damaged disk or an edit leaves
    them (the first byte chooses): a venv's marker, its warm server's probed modules, an sdist's about.json.
    Each is read back of the shape its writer gives, or passed over (None: built, probed or streamed again)."""
    from patchset.runners.venv import read_marker, read_probed
    from patchset.sources.sdist import read_about

    path = SCRATCH / "entry.json"
    path.write_bytes(data[1:])
    which = data[0] % 3 if data else 0
    if which == 0:
        info = read_marker(path)
        if info is not None and (SCRATCH / "venv").resolve() not in (SCRATCH / "venv" / info["site_packages"]
                                                                      ).resolve().parents:
            raise Finding(f"a venv marker led outside the venv: {info['site_packages']!r}")
    elif which == 1:
        probed = read_probed(path)
        if probed is not None and not all(isinstance(m, str) and m.replace(".", "_").replace("-", "_").isidentifier()
                                        for m in probed):
            raise Finding(f"probed modules of another shape: {probed!r}")
    else:
        about = read_about(path)
        if about is not None and not all(isinstance(t, str) for t in about["tops"]):
            raise Finding(f"an about.json of another shape: {about!r}")


TARGETS = {t.name: t for t in [
    Target("patch", patch_parser, "core/patchfile.parse_patch, then core/engine.apply_patch",
           ("patchset.core.patchfile", "patchset.core.engine")),
    Target("header", header, "core/patchfile.parse_dep3, verbs/importer.read_mails (format-patch header)",
           ("patchset.core.patchfile", "patchset.verbs.importer")),
    Target("manifest", manifest, "core/manifest_load.load_manifest / inspect_manifest (YAML text)",
           ("patchset.core.manifest_load", "patchset.core.manifest", "patchset.core.yamlnodes",
            "patchset.core.yamlparse", "patchset.versions")),
    Target("import-series", import_series, "verbs/importer.read_series (quilt series)", ("patchset.verbs.importer",)),
    Target("import-mbox", import_mbox, "verbs/importer.read_file on an mbox", ("patchset.verbs.importer",)),
    Target("import-gz", import_gz, "verbs/importer.read_file on a .patch.gz", ("patchset.verbs.importer",)),
    Target("import-dir", import_dir, "verbs/importer.read_dir (a folder of patches)", ("patchset.verbs.importer",)),
    Target("wheel", wheel, "sources/wheel: zip central directory, local headers, RECORD, CRC",
           ("patchset.sources.wheel",)),
    Target("sdist", sdist, "sources/sdist: tar members, links, '..', sizes", ("patchset.sources.sdist",)),
    Target("index", index_json, "sources/index: PEP 691 JSON, the remembered answer",
           ("patchset.sources.index", "patchset.sources.http")),
    Target("provenance", provenance, "core/provenance.loads and what apply/audit read of it",
           ("patchset.core.provenance",)),
    Target("journal", journal, "journal.recover on a journal cut or damaged anywhere", ("patchset.journal",)),
    Target("junit", junit, "runners/junit.read_junit", ("patchset.runners.junit",)),
    Target("yaml-cache", yaml_cache, "core/yamlcache: a manifest's kept parse, damaged or whole",
           ("patchset.core.yamlcache", "patchset.cache")),
    Target("patch-cache", patch_cache, "core/patchfile._parsed: a patch's kept parse (marshal), damaged or whole",
           ("patchset.core.patchfile", "patchset.cache")),
    Target("baseline", baseline, "verbs/suites.load_baseline: a suite's kept pristine results",
           ("patchset.verbs.suites",)),
    Target("cache-entries", cache_entries, "runners/venv.read_marker, read_probed; sources/sdist.read_about",
           ("patchset.runners.venv", "patchset.sources.sdist")),
]}


def reset() -> None:
    """Forget what one input left in the process: URLs with credentials are remembered for redaction, for
    the life of a real run (one index); across a million inputs the list would only grow."""
    from patchset.sources import urls

    urls._secrets.clear()
