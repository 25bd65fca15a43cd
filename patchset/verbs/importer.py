"""`patchset import`: adopt a series a fork already carries, in whatever shape it has.

Sources: a quilt ``series`` file, a directory of patches (its ``series`` file
if it has one, else file-name order), ``git format-patch`` files or an mbox,
and ``git:PATH@REV`` (upstream commits from a local clone, as projects that
cherry-pick by hash carry them). Each patch becomes ``recipes/<id>/<file>``
and one manifest entry; the layout of each patch is found by trying both
layouts against the first target's pristine tree, and the ``after:`` lists
are what ``patchset deps`` infers. Everything is built and validated in a
scratch directory first: on any error nothing is written.
"""

from __future__ import annotations

import email
import email.errors
import email.message
import email.parser
import email.policy
import email.utils
import gzip
import io
import json
import re
import shutil
import tempfile
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import git
from packaging.version import InvalidVersion, Version

from patchset import __version__
from patchset.core.manifest import DEFAULT_MANIFEST, PATCH_SUFFIXES
from patchset.core.manifest_load import load_manifest
from patchset.core.patchfile import PatchFile, all_crlf, parse_dep3, parse_patch
from patchset.core.series import ReleaseResult, evaluate_release
from patchset.errors import PatchFileError, PatchFileErrors, PatchsetError
from patchset.sources import Source, open_source
from patchset.verbs.check import CheckReport
from patchset.verbs.deps import Edge, infer_edges
from patchset.verbs.init import InitError, default_action_ref, scaffold
from patchset.verbs.validate import validate

LAYOUTS = {"auto": ("", "vllm"), "repo": ("",), "package": ("vllm",)}
LAYOUT_SPEC = re.compile(r"strip=(\d+)(?:,root=([^,]*))?")
#: The most leading components tried: a monorepo's ``a/<dir>/<dir>/vllm/...`` needs 3 or 4.
MAX_STRIP = 16
MBOX_FROM = re.compile(rb"^From \S+ +\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4}\s*$")
GIT_FROM = re.compile(rb"^From ([0-9a-f]{40}) ")
PR_REFS = (re.compile(r"vllm-project/vllm#(\d+)"), re.compile(r"vllm-project/vllm/pull/(\d+)"),
           re.compile(r"/pull/(\d+)"))


SUBJECT_PR = re.compile(r"\(#(\d+)\)\s*$")  # upstream vLLM's squash-merge subjects end in "(#54288)"
CHERRY = re.compile(r"cherry[- ]picked from commit ([0-9a-f]{7,40})")
COMMIT_URL = re.compile(r"vllm-project/vllm/commit/([0-9a-f]{7,40})")
PATCH_NAME = re.compile(r"\.(patch|diff)(\.gz)?$")
DISABLED_ENTRY = re.compile(r"#\s*(\S+)(?:\s+-p\d+)?\s*")  # "# name.patch" or "#name.patch -p1", nothing else
SUBJECT_TAGS = re.compile(r"^(\[[^\]]*PATCH[^\]]*\]\s*)+")  # "[PATCH] ", "[PATCH v2 3/7] "
SIGNATURE_END = re.compile(rb"\n-- \n[^\n]*\n\n\Z")  # git format-patch ends a mail "-- \n2.43.0\n\n"
#: The most a .patch.gz may unpack to: a fork's whole series of ~50 patches is under 1 MiB.
MAX_PATCH = 64 * 1024 * 1024


class SeriesImportError(PatchsetError):
    """The series to import cannot be read or written."""


@dataclass(frozen=True)
class Layout:
    """How patch paths are read: ``strip`` leading components dropped (None: found per patch, as ``patch`` has
    no way to say it), then taken under one of ``roots`` (tried in order)."""

    strip: int | None
    roots: tuple[str, ...]

    @property
    def told(self) -> str:
        return "" if self.strip is None else f"strip={self.strip}" + (f",root={self.roots[0]}" if self.roots[0] else "")


def parse_layout(text: str) -> Layout:
    """``auto``, ``repo``, ``package`` or ``strip=N[,root=DIR]`` (the manifest's ``layout: {strip, root}``)."""
    if text in LAYOUTS:
        return Layout(None, LAYOUTS[text])
    m = LAYOUT_SPEC.fullmatch(text.strip())
    root = (m.group(2) or "").strip().strip("/") if m else ""
    if not m or root.startswith(".") or "/." in root or "\\" in root:
        raise SeriesImportError(f"unknown layout {text!r}", hint="use auto, repo, package, or strip=N[,root=DIR] "
                                "(strip=3 for paths like a/<dir>/<dir>/vllm/x.py; root=vllm for paths "
                                "relative to the package)")
    return Layout(int(m.group(1)), (root,))


@dataclass
class Entry:
    """One patch as the source gives it."""

    name: str  # its file name (or mail subject), for the id
    where: str  # SOURCE[:LINE], for messages about the series (a series file's line)
    data: bytes = b""  # the patch file's bytes (gunzipped)
    strip: int | None = None  # quilt's per-line -pN
    mail: dict[str, str] = field(default_factory=dict)  # author, subject, date, body of a format-patch mail
    commit: str | None = None  # the upstream commit (git: sources)
    disabled: bool = False  # a '#'-ed out line of a quilt series
    file: str = ""  # the patch file (or mbox, or git: spec) its bytes come from: what errors about them name
    first: int = 0  # the line of ``file`` before its bytes (a mail further down an mbox)
    mail_no: int = 0  # which mail of an mbox of several (0: the file holds one)

    @property
    def label(self) -> str:
        """The patch file, for a message about the patch as a whole."""
        return (self.file or self.where) + (f" (mail {self.mail_no})" if self.mail_no else "")


@dataclass
class Planned:
    """One patch as it will be written."""

    id: str
    file: str  # recipes/<id>/<name>, relative to the manifest
    content: bytes
    strip: int
    root: str
    title: str
    origin: str
    pr: int | None = None
    commit: str | None = None
    after: list[str] = field(default_factory=list)
    source: str = ""  # the patch file it comes from, when it is one file of its own (what --move moves)


@dataclass
class ImportResult:
    """An imported series: the manifest written for it, its patches, and what needs a person's eye."""

    manifest: Path
    dry_run: bool
    text: str  # the manifest
    patches: list[Planned]
    disabled: list[str]
    notes: list[str]
    edges: list[Edge]
    check: CheckReport
    written: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # what a real run would refuse (a dry run goes on)
    moved: list[tuple[str, str]] = field(default_factory=list)  # (patch file, recipe) moved with git mv
    sources: list[str] = field(default_factory=list)  # the patch files read, which patchset does not read again

    @property
    def kept(self) -> list[str]:
        """The patch files read that stay where they were (a copy patchset does not read)."""
        gone = {src for src, _ in self.moved}
        return [x for x in self.sources if x not in gone]

    @property
    def ok(self) -> bool:
        return self.check.ok


def import_series(sources: Sequence[str], into: str | Path = ".", targets: Sequence[str] = (),
                  layout: str = "auto", *, dry_run: bool = False, force: bool = False,
                  source: str = "pypi", ci: bool = False, action: str | None = None,
                  move: bool = False, upgrade: bool = True) -> ImportResult:
    """Read the series, write the manifest and recipes (unless ``dry_run``), and check it on ``targets``;
    with ``ci``, also what ``patchset init`` writes beside a manifest (pre-commit entry, CI workflow), using
    the patchset ``action`` (``OWNER/NAME@REF``; default: this patchset's release). With ``move``, each patch
    file that becomes a recipe of its own is moved there with ``git mv`` (its history follows), not copied."""
    versions = _versions(targets)
    told = parse_layout(layout)
    into = Path(into)
    refusals = _refusals(into, versions, dry_run=dry_run, force=force, ci=ci, action=action, upgrade=upgrade)
    entries, notes = read_sources(sources)
    if ci and action is None and default_action_ref(__version__).endswith("@main"):
        notes.append(f"the CI files use {default_action_ref(__version__)}: this patchset ({__version__}) is not a "
                     "release; pin a tag or commit with --action OWNER/NAME@REF")
    trees = {v: open_source(source, v) for v in versions}
    plans = plan(entries, trees[versions[0]], told, notes, versions[0])
    try:
        _refuse_clobber(into, plans, force)
        moves = _moves(into, plans) if move else []
    except SeriesImportError as e:
        if not dry_run:
            raise
        refusals.append(e)
        moves = []
    with tempfile.TemporaryDirectory(prefix="patchset-import-") as scratch:
        stage = Path(scratch)
        result = _staged(stage, into / DEFAULT_MANIFEST, entries, plans, trees, sources, notes, dry_run)
        result.refused = [str(e) for e in refusals]
        result.moved = [(p.source, p.file) for _, p in moves]
        if not dry_run:
            _move(moves, into)
            result.written = _install(stage, into, [p.file for p in plans] + [DEFAULT_MANIFEST])
            if ci:
                result.written += scaffold(into, versions, manifest=False, action=action, verb="import",
                                           upgrade=upgrade).written
    return result


def _refusals(into: Path, versions: list[str], *, dry_run: bool, force: bool, ci: bool, action: str | None,
              upgrade: bool) -> list[SeriesImportError]:
    """What would stop a real run before anything is read: raised at once, or, for a dry run (which writes
    nothing), returned to be reported while the run goes on."""
    manifest_path = into / DEFAULT_MANIFEST
    refusals: list[SeriesImportError] = []
    if manifest_path.exists() and not force:
        refusals.append(SeriesImportError(f"{manifest_path} exists",
                                          hint="pass --force to replace it, or --into another folder"))
    if action is not None and not ci:
        raise SeriesImportError("--action names the action the CI files use: it goes with --ci")
    if ci:  # refused before anything is read or written, as init refuses
        try:
            scaffold(into, versions, manifest=False, dry_run=True, action=action, verb="import", upgrade=upgrade)
        except InitError as e:
            if not dry_run or e.message.startswith("--action"):
                raise
            refusals.append(SeriesImportError(e.message, hint=e.hint))
    if refusals and not dry_run:
        raise refusals[0]
    return refusals


def _staged(stage: Path, manifest_path: Path, entries: list, plans: list, trees: dict, sources: Sequence[str],
            notes: list[str], dry_run: bool) -> ImportResult:
    """The manifest and recipes written under ``stage`` (the ``after:`` order the hunks need inferred), checked
    to load, and the series checked on every target: what import reports, nothing installed yet."""
    versions = list(trees)
    text = _stage(stage, entries, plans, versions, sources)
    edges = _infer(stage, trees)
    if edges:
        _set_after(plans, edges)
        text = _stage(stage, entries, plans, versions, sources)
    checked = validate(stage / DEFAULT_MANIFEST)
    if not checked.ok:  # what import wrote must load: a problem here is import's own
        raise SeriesImportError(f"the manifest it would write is not valid: {checked.errors[0]}",
                                hint="nothing was written; please report this")
    manifest = load_manifest(stage / DEFAULT_MANIFEST)
    report = CheckReport(str(manifest_path), [evaluate_release(manifest, v, t) for v, t in trees.items()])
    disabled = [f"{e.where}: {e.name}" for e in entries if e.disabled]
    result = ImportResult(manifest_path, dry_run, text, plans, disabled, notes, edges, report)
    result.sources = list(dict.fromkeys(e.file for e in entries if e.file and not e.disabled))
    return result


def _versions(targets: Sequence[str]) -> list[str]:
    if not targets:
        raise SeriesImportError("no target release", hint="name the pinned vLLM release(s): --target 0.29.0")
    for v in targets:
        try:
            Version(v)
        except InvalidVersion:
            raise SeriesImportError(f"target {v!r} is not a PEP 440 version", hint="e.g. --target 0.29.0") from None
    return list(dict.fromkeys(targets))


# -- reading the sources ---------------------------------------------------------------------------------


def read_sources(specs: Sequence[str]) -> tuple[list[Entry], list[str]]:
    entries: list[Entry] = []
    notes: list[str] = []
    for spec in specs:
        if spec.startswith("git:"):
            entries += read_git(spec)
            continue
        path = Path(spec)
        if path.is_dir():
            found, note = read_dir(path)
            entries += found
            notes += [note] if note else []
        elif path.is_file():
            entries += read_series(path) if _is_series(path) else read_file(path, str(path))
        else:
            raise SeriesImportError(f"{spec}: no such file or directory",
                               hint="a series file, a folder of patches, an mbox, or git:PATH@REV")
    if not [e for e in entries if not e.disabled]:
        raise SeriesImportError("no patch found in " + ", ".join(specs))
    return entries, notes


def _is_series(path: Path) -> bool:
    if path.name == "series":
        return True
    if PATCH_NAME.search(path.name) or path.suffix in (".mbox", ".eml", ".gz"):
        return False
    head = path.read_bytes()[:1 << 20]
    return not re.search(rb"^(@@ |diff |--- )", head, re.M) and not MBOX_FROM.match(head.split(b"\n", 1)[0])


def read_series(path: Path) -> list[Entry]:
    """A quilt series: one patch a line, ``-pN`` options, ``#`` comments and disabled entries."""
    out: list[Entry] = []
    base = path.parent
    for n, raw in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        line = raw.strip()
        where = f"{path}:{n}"
        if line.startswith("#"):
            # Only a comment that is nothing but an entry is one switched off: prose that names a patch is not.
            m = DISABLED_ENTRY.fullmatch(line)
            if m and PATCH_NAME.search(m.group(1)) and _is_file(base / m.group(1)):
                out.append(Entry(m.group(1), where, disabled=True))
            continue
        line = re.split(r"\s+#", line, maxsplit=1)[0].strip()
        if not line:
            continue
        name, *opts = line.split()
        if not _is_file(base / name):
            if path.name != "series" and not out:  # e.g. a script beside the patches: neither a diff nor a series
                raise SeriesImportError(f"is neither a patch (it holds no diff) nor a quilt series (its first "
                                        f"entry {name[:200]!r} is not a file in {base})", file=str(path), line=n,
                                        hint="give the patches, their folder, or their series file")
            raise SeriesImportError(f"names {name[:200]}, which does not exist in {base}", file=str(path), line=n)
        strip = None
        for opt in opts:
            m = re.fullmatch(r"-p(\d+)", opt)
            if not m:
                raise SeriesImportError(f"option {opt!r} is not supported", file=str(path), line=n,
                                   hint="only -pN: apply reversed patches reversed before importing them")
            strip = int(m.group(1))
        for e in read_file(base / name, where):
            e.strip = strip
            if "/" in name and not e.mail:  # nested folders may hold two __init__.py.patch: the id keeps the path
                e.name = name
            out.append(e)
    active = {e.name for e in out if not e.disabled}
    return [e for e in out if not (e.disabled and e.name in active)]  # the entry is on further down


def _is_file(path: Path) -> bool:
    """Whether a name a series gives is a file; a name no file system can hold (too long, a NUL) is not one."""
    try:
        return path.is_file()
    except (OSError, ValueError):  # ENAMETOOLONG; ValueError: embedded null byte
        return False


def read_dir(path: Path) -> tuple[list[Entry], str]:
    if (path / "series").is_file():
        return read_series(path / "series"), ""
    files = sorted(f for f in path.iterdir() if f.is_file() and PATCH_NAME.search(f.name))
    if not files:
        nested = sorted(str(f.relative_to(path)) for f in path.rglob("*") if PATCH_NAME.search(f.name))
        if nested:  # which of them, in which order, only the project's apply script knows
            raise SeriesImportError(f"{path} holds no series file and no patch at its top, but {len(nested)} "
                                    f"in folders under it (e.g. {nested[0]})",
                                    hint=f"write {path / 'series'} naming them (paths relative to it) in the "
                                    "order the project applies them")
        raise SeriesImportError(f"{path} holds no series file and no *.patch, *.diff or *.patch.gz")
    entries = [e for f in files for e in read_file(f, str(f))]
    return entries, (f"{path} has no series file: its patches were taken in file-name order, which is a guess; "
                     "the after: entries written are what the hunks need")


def read_file(path: Path, where: str) -> list[Entry]:
    data = path.read_bytes()
    if path.suffix == ".gz":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as gz:
                data = gz.read(MAX_PATCH + 1)  # a gzip bomb stops here, not when memory runs out
        except (OSError, EOFError, zlib.error) as e:
            raise SeriesImportError(f"cannot gunzip: {e}", file=str(path)) from e
        if len(data) > MAX_PATCH:
            raise SeriesImportError(f"unpacks to more than {MAX_PATCH // (1024 * 1024)} MiB, more than any patch "
                                    "series holds", file=str(path), hint="is it really a patch?")
    name = path.name[:-3] if path.suffix == ".gz" else path.name
    if MBOX_FROM.match(data.split(b"\n", 1)[0]):
        return read_mails(data, name, where, str(path))
    return [Entry(name, where, data, file=str(path))]


def read_mails(data: bytes, name: str, where: str, file: str = "") -> list[Entry]:
    """``git format-patch`` output: one mail per patch, or several in one mbox."""
    lines = data.splitlines(keepends=True)
    starts = [i for i, ln in enumerate(lines) if MBOX_FROM.match(ln)] + [len(lines)]
    out = []
    for k, (a, b) in enumerate(zip(starts, starts[1:], strict=False)):
        msg = b"".join(lines[a:b])
        # The blank line before the next From_ line is the mbox's, not the diff's; but git format-patch
        # writes one after its signature itself, in every mail, and the recipe keeps the mail's bytes.
        if msg.endswith(b"\n\n") and not SIGNATURE_END.search(msg):
            msg = msg[:-1]
        mail = _mail(msg, f"{where} (mail {k + 1})")
        label = name if len(starts) == 2 and PATCH_NAME.search(name) else mail["subject"]
        m = GIT_FROM.match(lines[a])
        out.append(Entry(label, f"{where}" + (f" (mail {k + 1})" if len(starts) > 2 else ""), msg, mail=mail,
                         commit=m.group(1).decode() if m else None, file=file or where, first=a,
                         mail_no=k + 1 if len(starts) > 2 else 0))
    return out


def _mail(msg: bytes, where: str) -> dict[str, str]:
    # Only the headers are read from the parse (the body is taken from the bytes below): headersonly keeps the
    # email library from parsing a long diff line by line as a MIME body.
    parsed = email.parser.BytesParser(policy=email.policy.default).parsebytes(msg, headersonly=True)
    cte = _header(parsed, "Content-Transfer-Encoding").lower()
    if cte in ("base64", "quoted-printable"):
        raise SeriesImportError(f"{where}: the mail is {cte}-encoded", hint="re-create it with git format-patch")
    subject = SUBJECT_TAGS.sub("", " ".join(_header(parsed, "Subject").split()))
    date = ""
    if written := _header(parsed, "Date"):  # fetched once: each fetch parses the header again
        try:
            date = email.utils.parsedate_to_datetime(written).date().isoformat()
        except (TypeError, ValueError, OverflowError, IndexError):
            date = ""
    head, _, body = (msg.replace(b"\r\n", b"\n") if all_crlf(msg) else msg).partition(b"\n\n")
    message = re.split(rb"^---\s*$", body, maxsplit=1, flags=re.M)[0].decode("utf-8", "replace").strip()
    return {"author": _header(parsed, "From"), "subject": subject, "date": date, "body": message}


def _header(parsed: email.message.Message, name: str) -> str:
    """A mail header as text; decoded where the standard library can, else as it stands in the mail.

    The library's structured header parser fails on some malformed values with errors of its own
    (an address group without a local part raised AttributeError, found by fuzzing): such a header
    is still a header, and its raw text is what a person would read.
    """
    try:
        return str(parsed.get(name, ""))
    except (AttributeError, IndexError, TypeError, ValueError, OverflowError, LookupError, email.errors.MessageError):
        raw = next((value for key, value in parsed.raw_items() if key.lower() == name.lower()), "")
        return " ".join(str(raw).split())


def read_git(spec: str) -> list[Entry]:
    """``git:PATH@REV``: REV a commit or a range ``A..B``, from a local clone, oldest first."""
    path, sep, rev = spec[4:].rpartition("@")
    if not sep or not path or not rev:
        raise SeriesImportError(f"{spec}: expected git:PATH@COMMIT or git:PATH@A..B")
    try:
        repo = git.Repo(path)
        args = ["--stdout", "--no-signature", rev] if ".." in rev else ["--stdout", "--no-signature", "-1", rev]
        data = repo.git.format_patch(*args, stdout_as_string=False)
    except (git.GitError, OSError) as e:
        raise SeriesImportError(f"{spec}: git cannot give the commit: {str(e).strip().splitlines()[-1]}") from e
    if not data.strip():
        raise SeriesImportError(f"{spec}: no commit in that range")
    return read_mails(data + (b"" if data.endswith(b"\n") else b"\n"), rev, spec)


# -- planning ----------------------------------------------------------------------------------------------


def plan(entries: list[Entry], tree: Source, layout: Layout, notes: list[str], version: str) -> list[Planned]:
    """Ids, file contents, metadata and layout for every enabled entry (``notes`` gains what looks odd);
    ``tree`` is vLLM ``version``'s, where the layout is found."""
    out: list[Planned] = []
    taken: set[str] = set()
    created: set[str] = set()
    unusable: list[PatchFileError] = []  # every file that cannot be read, named at once
    for e in entries:
        if e.disabled:
            continue
        pid = _unique(_id_from_name(e.name), taken)
        try:
            content, text = _content(e)
            strip, root, pf, note = _layout(e, content, tree, layout, created, version)
        except PatchFileError as err:
            unusable.append(err)
            continue
        notes += [f"{e.label}: {note}"] if note else []
        made = {f.new_path for f in pf.files if f.old_path is None and f.new_path}
        notes += [f"{e.label} creates {x}: a leftover of a patch tool? (kept; drop that section if so)"
                  for x in sorted(made) if x.endswith((".orig", ".rej"))]
        created |= made
        pr, commit = _refs(text, e)
        own = e.file if e.file and not e.mail_no and not e.where.startswith("git:") else ""
        out.append(Planned(pid, f"recipes/{pid}/{_file_name(e.name, pid)}", content, strip, root,
                           _title(e, text, pid), "backport" if pr or commit else "fork", pr, commit, source=own))
    if len(unusable) > 1:
        raise PatchFileErrors(unusable)
    if unusable:
        raise unusable[0]
    return out


def _id_from_name(name: str) -> str:
    base = PATCH_NAME.sub("", name).lower()
    base = re.sub(r"[^a-z0-9._-]+", "-", base).strip("-._")
    trimmed = re.sub(r"^\d{1,4}[-_.]+", "", base)
    return (trimmed or base or "patch")[:60].strip("-._") or "patch"


def _unique(pid: str, taken: set[str]) -> str:
    n, out = 1, pid
    while out in taken:
        n += 1
        out = f"{pid}-{n}"
    taken.add(out)
    return out


def _file_name(name: str, pid: str) -> str:
    base = name[:-3] if name.endswith(".gz") else name
    if not base.endswith(PATCH_SUFFIXES) or "/" in base:
        return pid + ".patch"
    return base


def _diff_start(data: bytes) -> int:
    """Where the diff begins: everything before it is the preamble."""
    lines = data.splitlines(keepends=True)
    pos = 0
    for i, ln in enumerate(lines):
        if ln.startswith((b"diff ", b"Index: ")) or (ln.startswith(b"--- ") and i + 1 < len(lines)
                                                        and lines[i + 1].startswith(b"+++ ")):
            return pos
        pos += len(ln)
    return -1


def _content(e: Entry) -> tuple[bytes, str]:
    """The recipe's bytes, and the text its metadata is read from (preamble or mail)."""
    at = _diff_start(e.data)
    if at < 0:
        raise PatchFileError("contains no diff", file=e.label, hint="expected '--- a/...' and '+++ b/...' lines")
    # A patch converted to CRLF as a whole gets its header in CRLF too: it is read as GNU patch reads it,
    # CRs stripped, only while every line ends so.
    crlf = all_crlf(e.data)
    if e.mail:
        m = e.mail
        text = m["subject"] + "\n\n" + m["body"]
        fields = [("Author", m["author"]), ("Last-Update", m["date"])]
        return _eol(_dep3(text, fields, e), crlf) + e.data[at:], text
    preamble = e.data[:at].decode("utf-8", "replace").replace("\r\n", "\n")
    if {"Description", "Subject"} & set(parse_dep3(preamble)):
        return e.data, preamble  # a DEP-3 header already: byte for byte
    return _eol(_dep3(preamble, [], e), crlf) + e.data[at:], preamble


def _eol(header: bytes, crlf: bool) -> bytes:
    return header.replace(b"\n", b"\r\n") if crlf else header


def _dep3(text: str, fields: list[tuple[str, str]], e: Entry) -> bytes:
    """A DEP-3 header whose Description keeps the free-form preamble, line for line."""
    lines = [ln.rstrip() for ln in text.strip().splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    first = lines[0] if lines else _id_from_name(e.name)
    body = [" " + ln if ln else " ." for ln in lines[1:]]
    pr, commit = _refs(text, e)
    origin = f"upstream, commit:{commit}" if commit else f"backport, vllm-project/vllm#{pr}" if pr else ""
    head = [f"Description: {first}"] + body
    head += [f"Origin: {origin}"] if origin else []
    head += [f"{k}: {v}" for k, v in fields if v]
    return ("\n".join(head) + "\n---\n").encode()


def _refs(text: str, e: Entry) -> tuple[int | None, str | None]:
    """The upstream PR and commit a patch's text names."""
    pr = None
    first = text.strip().splitlines()[0] if text.strip() else ""
    m = SUBJECT_PR.search(first) if e.mail else None
    for rx in PR_REFS:
        m = m or rx.search(text)
    if m:
        pr = int(m.group(1))
    c = CHERRY.search(text) or COMMIT_URL.search(text)
    commit = c.group(1) if c else e.commit if e.where.startswith("git:") else None
    return pr, commit


def _title(e: Entry, text: str, pid: str) -> str:
    if e.mail and e.mail["subject"]:
        return e.mail["subject"][:120]
    fields = parse_dep3(text)
    for key in ("Subject", "Description"):
        if fields.get(key):
            return SUBJECT_TAGS.sub("", fields[key].splitlines()[0])[:120] or pid
    for ln in text.splitlines():
        ln = ln.strip().lstrip("#").strip()
        if ln and not ln.startswith(("From ", "Index:")):
            return ln[:120]
    return pid


def _layout(e: Entry, content: bytes, tree: Source, layout: Layout, created: set[str],
            version: str) -> tuple[int, str, PatchFile, str]:
    """The (strip, root) under which every file the patch edits exists in vLLM ``version``'s pristine tree,
    and, where none does, a note saying which reading names the most of them (or which one fits, where the
    layout was told)."""
    told = e.strip is not None or layout.strip is not None
    strips = [e.strip] if e.strip is not None else [layout.strip] if layout.strip is not None else _strips(content)
    tried: list[tuple[int, str, PatchFile]] = []
    errors: list[PatchsetError] = []
    for strip in strips:
        for root in layout.roots:
            try:
                pf = parse_patch(content, name=e.file or e.where, strip=strip, root=root)
            except PatchFileError as err:
                errors.append(err)
                continue
            if _fits(pf, tree, created):
                return strip, root, pf, ""
            tried.append((strip, root, pf))
    if not tried:
        raise _at_their_line(errors[0], e, content)
    if told:  # kept as told, even where it finds nothing; the note says which reading would
        strip, root, pf = tried[0]
        how = f"-p{e.strip} (the series says so)" if e.strip is not None else f"--layout {layout.told}"
        found = next(((s, r) for s in _strips(content) for r in LAYOUTS["auto"]
                      if (s, r) != (strip, root) and _fits_as(content, s, r, tree, created)), None)
        return strip, root, pf, (f"its paths read with {how} do not name every file it changes in vLLM {version}"
                                 + (f"; {_spec(*found)} does" if found else ""))
    strip, root, pf = max(tried, key=lambda t: len(_named(t[2], tree, created)))  # the first of the best
    named = _named(pf, tree, created)
    paths = [f.old_path for f in pf.files if f.old_path is not None]
    if not named:
        return strip, root, pf, (
            f"no layout names a file it changes in vLLM {version} (tried strip 0 to {max(strips)}, under the "
            f"repository root and under vllm/): a typo, a file removed upstream, or another project's patch? "
            f"(kept as strip={strip}; --layout strip=N[,root=DIR] sets it)")
    gone = [x for x in paths if x not in named]
    return strip, root, pf, (
        f"no layout names every file it changes in vLLM {version}: {_spec(strip, root)} names {len(named)} of "
        f"{len(paths)} (not {', '.join(gone[:3])}{', ...' if len(gone) > 3 else ''}); kept that one")


def _strips(content: bytes) -> list[int]:
    """The strips to try, in order: 1 and 0 (0 first where no path has git's prefixes), then deeper ones as
    far as every file header's path has components to spare."""
    first = [0, 1] if _unprefixed(content) else [1, 0]
    names = [_name(ln[4:]) for ln in content.splitlines() if ln.startswith((b"--- ", b"+++ "))]
    depth = min((n.count(b"/") for n in names if n and n != b"/dev/null"), default=1)
    return first + list(range(2, min(depth, MAX_STRIP) + 1))


def _name(raw: bytes) -> bytes:
    return raw.split(b"\t", 1)[0].strip().strip(b'"')


def _spec(strip: int, root: str) -> str:
    return f"--layout strip={strip}" + (f",root={root}" if root else "")


def _fits_as(content: bytes, strip: int, root: str, tree: Source, created: set[str]) -> bool:
    try:
        return _fits(parse_patch(content, name="", strip=strip, root=root), tree, created)
    except PatchFileError:
        return False


def _named(pf: PatchFile, tree: Source, created: set[str]) -> set[str]:
    """The files the patch edits that the tree (or an earlier patch) has."""
    return {f.old_path for f in pf.files if f.old_path is not None and tree.covers(f.old_path)
            and (f.old_path in created or _read(tree, f.old_path) is not None)}


def _unprefixed(content: bytes) -> bool:
    """Whether no file header has git's ``a/`` or ``b/`` prefix (``--- vllm/x.py.orig``, as FreeBSD's ports and
    ``diff -u`` inside a tree write them, applied with ``patch -p0``): then ``-p0`` is tried first, so that the
    manifest says the layout the patches have where another one would name the same files too."""
    heads = [ln for ln in content.splitlines() if ln.startswith((b"--- ", b"+++ "))]
    return bool(heads) and not any(ln[4:].lstrip().startswith((b"a/", b"b/")) for ln in heads)


def _at_their_line(err: PatchsetError, e: Entry, content: bytes) -> PatchsetError:
    """The error at its line in the user's own file: import parses the recipe it would write, whose DEP-3
    header stands where the file's preamble (or mail header) stood, with another number of lines."""
    body = e.data[_diff_start(e.data):]
    added = content[:len(content) - len(body)].count(b"\n") - e.data[:len(e.data) - len(body)].count(b"\n")
    if (not added and not e.first) or err.line is None:
        return err
    return type(err)(err.message, file=err.file, line=err.line - added + e.first, patch=err.patch, hunk=err.hunk,
                     hint=err.hint)


def _fits(pf: PatchFile, tree: Source, created: set[str]) -> bool:
    for f in pf.files:
        path = f.old_path or f.new_path or ""
        if not tree.covers(path):
            return False
        if f.old_path is not None and f.old_path not in created and _read(tree, f.old_path) is None:
            return False
    return True


def _read(tree: Source, path: str) -> bytes | None:
    try:
        return tree.read(path)
    except OSError:  # a folder where the patch expects a file
        return None


# -- writing -----------------------------------------------------------------------------------------------


def _refuse_clobber(into: Path, plans: list[Planned], force: bool) -> None:
    ours = {(into / p.file).resolve() for p in plans}
    for p in plans:
        if (into / p.file).exists() and not force:
            raise SeriesImportError(f"{into / p.file} exists", hint="pass --force to replace it")
    folder = into / "recipes"
    if folder.is_dir():
        others = [f for f in sorted(folder.rglob("*")) if f.suffix in PATCH_SUFFIXES and f.resolve() not in ours]
        if others:
            raise SeriesImportError(f"{others[0]} is a patch the imported series does not name "
                               f"({len(others)} such files under {folder})",
                               hint="move them away or import into another folder (--into)")


def _moves(into: Path, plans: list[Planned]) -> list[tuple[Path, Planned]]:
    """What ``--move`` moves: each patch file that is a recipe of its own, tracked by the git repository that
    holds ``into`` (refused, naming the file, when one is not: git mv could not keep its history)."""
    try:
        repo = git.Repo(_nearest_folder(into), search_parent_directories=True)
    except (git.GitError, OSError):
        raise SeriesImportError(f"--move moves the patch files with git mv, and {into} is not in a git repository",
                                hint="import into the repository that holds them, or copy them (no --move)") from None
    top = Path(repo.working_tree_dir or ".").resolve()
    tracked = set(repo.git.ls_files("-z").split("\0")) - {""}
    out = []
    for p in plans:
        if not p.source:
            continue
        src = Path(p.source).resolve()
        try:
            rel: str | None = src.relative_to(top).as_posix()
        except ValueError:
            rel = None
        if rel not in tracked:
            raise SeriesImportError(f"--move: {p.source} is not a file git tracks in {top}",
                                    hint="commit it first (git add), or copy it (no --move)")
        out.append((src, p))
    return out


def _nearest_folder(path: Path) -> Path:
    """``path``, or the nearest folder above it that exists (``--into`` may name one import makes)."""
    path = path.resolve()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _move(moves: list[tuple[Path, Planned]], into: Path) -> None:
    """``git mv`` each patch file to its recipe's place (the staged recipe is copied over it next)."""
    if not moves:
        return
    repo = git.Repo(_nearest_folder(into), search_parent_directories=True)
    for src, p in moves:
        dest = (into / p.file).resolve()
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            repo.git.mv(*(["-f"] if dest.exists() else []), str(src), str(dest))  # -f: --force let it replace
        except git.GitError as e:
            raise SeriesImportError(f"git mv {src} {dest} failed: {str(e).strip().splitlines()[-1]}",
                                    hint="the files moved before it stay moved (git status shows them)") from e


def _stage(stage: Path, entries: list[Entry], plans: list[Planned], versions: list[str],
           sources: Sequence[str]) -> str:
    for p in plans:
        f = stage / p.file
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(p.content)
    text = manifest_text(entries, plans, versions, sources)
    (stage / DEFAULT_MANIFEST).write_text(text, encoding="utf-8")
    return text


def _infer(stage: Path, trees: dict[str, Source]) -> list[Edge]:
    """The union over the targets of what each patch needs."""
    manifest = load_manifest(stage / DEFAULT_MANIFEST)
    edges: dict[tuple[str, str], Edge] = {}
    for version, tree in trees.items():
        result: ReleaseResult = evaluate_release(manifest, version, tree)
        for e in infer_edges(manifest, result):
            edges.setdefault((e.patch, e.needs), e)
    order = {p.id: i for i, p in enumerate(manifest.patches)}
    return sorted(edges.values(), key=lambda e: (order[e.patch], order[e.needs]))


def _set_after(plans: list[Planned], edges: list[Edge]) -> None:
    by_id = {p.id: p for p in plans}
    for e in edges:
        by_id[e.patch].after.append(e.needs)


def _install(stage: Path, into: Path, files: list[str]) -> list[str]:
    """Copy the staged files into place, the manifest last; on failure take back what was written."""
    written: list[Path] = []
    made: list[Path] = []
    try:
        for rel in files:
            dest = into / rel
            for d in reversed(dest.parents):
                if not d.exists():
                    d.mkdir()
                    made.append(d)
            shutil.copyfile(stage / rel, dest)
            written.append(dest)
    except OSError as e:
        for f in written:
            f.unlink(missing_ok=True)
        for d in reversed(made):
            shutil.rmtree(d, ignore_errors=True)
        raise SeriesImportError(f"cannot write {into}: {e.strerror}", hint="nothing was written") from e
    return [str(f) for f in written]


def q(text: str) -> str:
    """A YAML double-quoted scalar (JSON's string syntax is a subset of it)."""
    return json.dumps(text, ensure_ascii=False)


def manifest_text(entries: list[Entry], plans: list[Planned], versions: list[str], sources: Sequence[str]) -> str:
    layout = Counter((p.strip, p.root) for p in plans).most_common(1)[0][0]
    out = [f"# Imported by `patchset import` from {', '.join(sources)}.",
           "# The list order under patches: is the series order; after: lists are what the hunks need",
           "# (patchset deps shows why). Review titles and origins, then add tests: and present: probes.",
           "schema: 1", "upstream:", "  pypi: vllm", '  tag: "v{version}"',
           f"layout: {{strip: {layout[0]}, root: {q(layout[1])}}}", "targets:"]
    out += [f"  {q(v)}: {{}}" for v in versions]
    out.append("patches:")
    todo = iter(plans)
    # Exactly the releases the series was imported for: a target added later takes a patch in only when a
    # port decides it carries there (docs/lifecycle.md), never silently through an open range.
    releases = " || ".join(f"=={v}" for v in versions)
    for e in entries:
        if e.disabled:
            out.append(f"  # disabled in {e.where}: {e.name}")
            continue
        out += _entry_text(next(todo), layout, releases)
    return "\n".join(out) + "\n"


def _entry_text(p: Planned, layout: tuple[int, str], releases: str) -> list[str]:
    out = [f"  - id: {p.id}", f"    title: {q(p.title)}", f"    origin: {p.origin}"]
    up = [f"pr: {p.pr}"] * (p.pr is not None) + [f"commit: {p.commit}"] * (p.commit is not None)
    if up:
        out.append(f"    upstream: {{{', '.join(up)}}}")
    out.append(f"    releases: {q(releases)}")
    out.append(f"    patch: {q(p.file)}")
    if p.strip != layout[0]:
        out.append(f"    strip: {p.strip}")
    if p.root != layout[1]:
        out.append(f"    root: {q(p.root)}")
    if p.after:
        out.append(f"    after: [{', '.join(p.after)}]")
    return out
