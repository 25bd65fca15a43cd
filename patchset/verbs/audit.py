"""`patchset audit`: which fixes an image carries, verified against its files.

Labels and the provenance record say what an image was meant to carry; the files say what it
does. For every image the audit reads the vLLM release from the image's own dist-info, reads the
files the series touches (and the provenance record, when there is one) straight out of the
image, and compares them with what the manifest's series produces on the pristine release.

Status of a fix in an image:

``carried``   its hunks are in the image's files: the files equal the series' output on the
              pristine release, or every hunk of the current patch is already applied;
``upstream``  the release itself has the fix (probe or ancestry evidence, as ``check`` says);
``missing``   the fix is not there (the files are pristine, or its hunks would still apply);
              for a release the manifest does not target, reported but not a failure;
``stale``     the image carries another revision of the patch than the manifest's (the
              provenance names another sha256, or an older revision of the patch file in the
              manifest's git history is what the files hold);
``tampered``  a file the patch wrote differs from what the provenance record says was written, or
              Python would run bytecode of a touched module that is not its source's code (an
              accepted ``.pyc`` whose code differs, or one that differs from the record's sha256);
``unknown``   the files fit none of the above (neither pristine nor patched), or there is
              nothing to compare them with.

A fix whose patch changes compiled code (``csrc/``, ``*.cu``, ``*.cpp``, ``CMakeLists.txt``:
``core.trees``) is never ``carried``: an image's files cannot show a kernel, and copying files
onto an image cannot carry one. It is ``missing`` when the provenance record says its compiled
code was left out (``build --python-only``), else at best ``unknown``, the evidence naming the files.

The audit fails (``ok`` false) when a fix the manifest targets for the image's release is
``missing``, ``stale`` or ``tampered``, or when an image cannot be audited at all.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import InvalidVersion, Version

from patchset.core import bytecode, engine, provenance
from patchset.core.digest import sha256
from patchset.core.manifest import Manifest, Patch
from patchset.core.patchfile import PatchFile, parse_patch
from patchset.core.sbom import SBOM_PATH, embedded_claims
from patchset.core.series import PatchResult, PatchStatus, ReleaseResult, evaluate_release, open_release
from patchset.core.trees import compiled
from patchset.core.words import Word
from patchset.errors import PatchsetError
from patchset.images.containers import ContainerFailed, run_once
from patchset.images.engine import (
    APIError,
    Client,
    Image,
    ImageFiles,
    ImageNotFound,
    VllmInstall,
    VllmNotFound,
    connect,
    get_image,
    split_reference,
)
from patchset.images.engine import pull as pull_image
from patchset.sources import Source


class FixStatus(Word):
    """What an image holds of one fix, judged from its files (decided by ``_Judge``)."""

    CARRIED = "carried"
    UPSTREAM = "upstream"
    MISSING = "missing"
    STALE = "stale"  # carries another revision of the patch than the manifest's
    TAMPERED = "tampered"  # a file differs from what the provenance record says
    UNKNOWN = "unknown"

    @property
    def failing(self) -> bool:
        """A targeted fix in this state is a finding."""
        return self in (FixStatus.MISSING, FixStatus.STALE, FixStatus.TAMPERED)


# the short names verbs/sbom.py and the tests import
CARRIED, MISSING, STALE = FixStatus.CARRIED, FixStatus.MISSING, FixStatus.STALE
TAMPERED, UNKNOWN = FixStatus.TAMPERED, FixStatus.UNKNOWN
LABEL_PREFIX = "io.patchset.patch."  # written by `patchset build`
STATUSES = tuple(FixStatus)


@dataclass
class FixVerdict:
    """Whether one fix of the series is in an image, and the evidence."""

    id: str
    status: FixStatus
    evidence: str
    targeted: bool
    title: str = ""
    origin: str = ""
    upstream: dict = field(default_factory=dict)  # {"pr": int | None, "commit": str | None}, as the manifest says
    sha256: str | None = None  # the patch revision the image carries (None when it carries none)

    @property
    def failing(self) -> bool:
        return self.targeted and self.status.failing


@dataclass
class ImageAudit:
    """One image: its identity, its vLLM release, its provenance record and a verdict per fix."""

    image: str
    vllm: str | None = None
    digest: str | None = None  # the repository digest, when the image came from a registry
    id: str | None = None  # the local image id (config digest)
    site: str | None = None
    provenance: dict | None = None  # the record's summary, when the image has one
    fixes: list[FixVerdict] = field(default_factory=list)
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    bytecode: list[dict] = field(default_factory=list)  # every .pyc of the touched modules, judged

    @property
    def ok(self) -> bool:
        return self.error is None and not any(f.failing for f in self.fixes)


@dataclass
class AuditReport:
    """Every image audited against the manifest."""

    manifest: str
    images: list[ImageAudit]

    @property
    def ok(self) -> bool:
        return all(i.ok for i in self.images)


def audit(manifest: Manifest, images: Sequence[str], *, source: str = "wheel", pull: bool = False,
          client: Client | None = None,
          on_image: Callable[[str], None] | None = None) -> AuditReport:
    """Audit each image; ``pull`` fetches every image from its registry first, even if it is local."""
    client = client or connect()
    out = []
    for ref in images:
        if on_image:
            on_image(ref)
        out.append(audit_image(client, manifest, ref, source=source, pull=pull))
    return AuditReport(str(manifest.path), out)


def audit_image(client: Client, manifest: Manifest, ref: str, *, source: str = "wheel",
                pull: bool = False, pristine: Source | None = None) -> ImageAudit:
    """``pristine``, when given, is the release to compare with instead of the ``source`` spec's."""
    result = ImageAudit(ref, warnings=list(manifest.warnings))  # e.g. a .patch no patch names
    try:
        if pull:
            pull_image(client, ref)
        image = get_image(client, ref)
    except (ImageNotFound, APIError) as e:
        result.error = str(e) if isinstance(e, ImageNotFound) else f"{ref}: {e}"
        return result
    result.digest, result.id = repo_digest(image, ref), image.id
    with ImageFiles(client, image) as files:
        try:
            install = files.locate_vllm()
        except VllmNotFound as e:
            result.error = str(e)
            return result
        result.vllm, result.site = install.version, install.site
        record = _read_record(files, install, result)
        try:
            version = str(Version(install.version).public)
        except InvalidVersion:
            version = install.version
        try:
            pristine = pristine or open_release(manifest, source, version)
            expected = evaluate_release(manifest, version, pristine)
        except PatchsetError as e:
            result.error = f"no pristine vLLM {version} to compare with: {e}"
            return result
        paths = {p for p in expected.files if p.startswith("vllm/")}
        if record:
            paths |= {p for p in record.get("files", {}) if p.startswith("vllm/")}
        image_files = {p: files.read(install.path_of(p)) for p in sorted(paths)}
        embedded_sbom = files.read(SBOM_PATH)
    if record and record.get("vllm") and record["vllm"] != version:
        result.warnings.append(f"the provenance record was written for vLLM {record['vllm']}, "
                               f"the image holds {install.version}")
    if not _judge_bytecode(result, client, image, install, _modules(image_files, record)):
        return result
    judge = _Judge(manifest, version, expected, image_files, record, result.bytecode)
    result.fixes = [judge.verdict(p) for p in manifest.patches]
    result.warnings += _labels_disagree(image.labels or {}, result.fixes)
    if embedded_sbom is not None:
        result.warnings += _sbom_disagrees(embedded_sbom, install.version, result.fixes)
    return result


def repo_digest(image: Image, ref: str) -> str | None:
    """The digest the registry of ``ref`` gives the image (None for an image not pulled or pushed as ``ref``)."""
    if "@" in ref:
        return ref.split("@", 1)[1]
    want = _familiar(split_reference(ref)[0])
    for name, _, digest in (d.partition("@") for d in image.attrs.get("RepoDigests") or []):
        if _familiar(name) == want:
            return digest
    return None


def _familiar(repository: str) -> str:
    """``docker.io/library/x`` and ``x`` name the same repository (the engine reports the short form)."""
    for prefix in ("docker.io/", "index.docker.io/", "library/"):
        repository = repository.removeprefix(prefix)
    return repository


class BytecodeUninspectable(RuntimeError):
    """The image's Python could not judge the bytecode of the touched modules."""


def _judge_bytecode(result: ImageAudit, client: Client, image: Image,
                    install: VllmInstall, modules: list[str]) -> bool:
    """Fill ``result.bytecode`` and its warnings; False, with ``result.error``, when there is no verdict."""
    try:
        result.bytecode = inspect_bytecode(client, image, install, modules)
        unjudged = [f"{b['pyc']}: {b['why']}" for b in result.bytecode if b["verdict"] == bytecode.UNINSPECTED]
        if unjudged:
            raise BytecodeUninspectable("; ".join(unjudged))
    except BytecodeUninspectable as e:
        result.error = f"cannot tell which bytecode Python would run for the touched modules: {e}"
        return False
    result.warnings += [f"{b['pyc']}: {b['why']} (not a failure)" for b in result.bytecode
                        if b["verdict"] in (bytecode.NO_INTERPRETER, bytecode.DORMANT)]
    return True


def _modules(image_files: dict[str, bytes | None], record: dict | None) -> list[str]:
    """The touched modules present in the image, and those whose bytecode the record lists."""
    modules = {p for p, content in image_files.items() if p.endswith(".py") and content is not None}
    modules |= {_module_of(key) for key in ((record or {}).get("bytecode") or {})}
    return sorted(m for m in modules if m)


def _module_of(pyc: str) -> str:
    """``vllm/a/__pycache__/m.cpython-311.opt-1.pyc`` -> ``vllm/a/m.py`` ("" outside a __pycache__)."""
    folder, _, name = pyc.rpartition("/__pycache__/")
    return f"{folder}/{name.split('.', 1)[0]}.py" if folder and name else ""


def inspect_bytecode(client: Client, image: Image, install: VllmInstall,
                     modules: list[str]) -> list[dict]:
    """bytecode.inspect on these modules, run by the image's own Python in a throwaway container.

    The container has no network and runs only patchset's bytecode module (sent through the
    environment); it imports nothing from the image's packages. Paths come back in repository
    layout (``vllm/...``) when they are under the image's site-packages.
    """
    if not modules:
        return []
    args = json.dumps({"sources": [install.path_of(m) for m in modules]})
    entrypoint = [install.python_executable, "-B", "-c", bytecode.BOOT, "inspect", args]
    try:
        status, out, err = run_once(client, image, entrypoint, environment={bytecode.SCRIPT_ENV: bytecode.script()},
                                    timeout=600)
        if status != 0 or not out:
            raise BytecodeUninspectable(f"{install.python_executable} exited {status}: {err[-500:]}")
        findings = json.loads(out.splitlines()[-1])
    except ContainerFailed as e:
        raise BytecodeUninspectable(str(e)) from e
    except (ValueError, OSError) as e:  # not one JSON line, or the engine timed out waiting
        raise BytecodeUninspectable(f"{install.python_executable} gave no verdict: {e}") from e
    site = install.site.rstrip("/") + "/"
    for f in findings:
        f["pyc"], f["source"] = (p[len(site):] if p.startswith(site) else p for p in (f["pyc"], f["source"]))
    return findings


def _labels_disagree(labels: dict[str, str], fixes: list[FixVerdict]) -> list[str]:
    """Labels are claims; say where the files contradict them (the verdicts never use labels)."""
    out = []
    for f in fixes:
        claimed = labels.get(f"{LABEL_PREFIX}{f.id}")
        if claimed and f.status != FixStatus.CARRIED:
            out.append(f"the image's label {LABEL_PREFIX}{f.id} claims the fix is carried; its files say {f.status}")
    return out


def _sbom_disagrees(raw: bytes, vllm: str, fixes: list[FixVerdict]) -> list[str]:
    """Where the SBOM the image carries (``build --sbom``) claims other than its files show."""
    try:
        version, claims, listed = embedded_claims(raw)
    except ValueError as e:
        return [f"the image's SBOM {SBOM_PATH} is unreadable: {e}"]
    out = []
    if version != vllm:
        out.append(f"the image's SBOM {SBOM_PATH} describes vLLM {version}; the image holds {vllm}")
    for f in fixes:
        claimed = claims.get(f.id)
        if claimed != f.status:
            said = f"says {f.id} is {claimed}" if claimed else f"does not mention {f.id}"
            out.append(f"the image's SBOM {SBOM_PATH} {said}; its files say {f.status}")
    carried = sum(status == FixStatus.CARRIED for status in claims.values())
    if listed != carried:
        out.append(f"the image's SBOM {SBOM_PATH} lists {listed} patches in the vLLM pedigree but claims "
                   f"{carried} fixes carried")
    return out


def _read_record(files: ImageFiles, install: VllmInstall,
                 result: ImageAudit) -> dict | None:
    raw = files.read(install.path_of(provenance.PROVENANCE_PATH))
    if raw is None:
        return None
    try:
        record = provenance.loads(raw)
    except ValueError as e:
        result.warnings.append(f"unreadable provenance record {provenance.PROVENANCE_PATH}: {e}; "
                               "audited from the files alone")
        return None
    result.provenance = {
        "path": install.path_of(provenance.PROVENANCE_PATH),
        "manifest_sha256": (record.get("manifest") or {}).get("sha256"),
        "applied_at": record.get("applied_at"),
        "tool": record.get("tool"),
    }
    return record


class _Judge:
    """Decides each fix's status from the expected series, the image's files and the record."""

    def __init__(self, manifest: Manifest, version: str, expected: ReleaseResult,
                 image: dict[str, bytes | None], record: dict | None, pycs: list[dict] | None = None):
        self.pycs = pycs or []
        self.manifest = manifest
        self.version = version
        self.expected = expected
        self.image = image
        self.record = record
        self.recorded = {p["id"]: p for p in (record or {}).get("patches", [])}
        self.revision_found: str | None = None  # the sha256 of an older revision the files hold (stale)
        vllm_paths = [p for p in expected.files if p.startswith("vllm/")]
        self.series_equal = bool(vllm_paths) and all(image.get(p) == expected.files[p] for p in vllm_paths)

    def verdict(self, patch: Patch) -> FixVerdict:
        targeted = patch.targets(self.version)
        self.revision_found = None
        status, evidence = self._decide(patch, targeted)
        upstream = {"pr": patch.upstream_pr, "commit": patch.upstream_commit}
        return FixVerdict(patch.id, status, evidence, targeted, title=patch.title, origin=patch.origin,
                          upstream=upstream, sha256=self._carried_sha256(patch, status))

    def _carried_sha256(self, patch: Patch, status: FixStatus) -> str | None:
        """The sha256 of the patch revision the image carries: the record's, else the one its files show."""
        entry = self.recorded.get(patch.id, {})
        recorded = entry.get("status") == PatchStatus.APPLIES and entry.get("sha256")
        if status in (FixStatus.CARRIED, FixStatus.STALE, FixStatus.TAMPERED) and recorded:
            return str(entry["sha256"])
        if status == FixStatus.STALE:
            return self.revision_found
        current = self._load(patch) if status == FixStatus.CARRIED else None
        return current.sha256 if current is not None else None

    def _decide(self, patch: Patch, targeted: bool) -> tuple[FixStatus, str]:
        """In order: tampered, upstream, no patch to compare, the record's claim, then the files alone."""
        r = self.expected.patch(patch.id)
        entry = self.recorded.get(patch.id, {})
        carried_per_record = entry.get("status") == PatchStatus.APPLIES

        tampered = self._tampered_evidence(patch, r, entry, carried_per_record)
        if tampered:
            return FixStatus.TAMPERED, tampered
        if r.status == PatchStatus.UPSTREAM:
            return FixStatus.UPSTREAM, r.evidence

        current = self._load(patch)
        if current is None:  # no patch file for this release
            if r.status == PatchStatus.NOT_TARGETED:
                return FixStatus.MISSING, f"not targeted: {r.evidence}"
            return FixStatus.UNKNOWN, r.message or "no patch for this release"
        code = compiled(current.touched)
        if code:
            return self._decide_compiled(patch, r, entry, current, code)
        if not _vllm_files(current):
            return FixStatus.UNKNOWN, f"{current.path} changes nothing under vllm/: an image cannot show it"
        if carried_per_record:
            return self._decide_recorded(patch, r, entry, current)
        return self._decide_from_files(patch, r, current)

    def _decide_compiled(self, patch: Patch, r: PatchResult, entry: dict, current: PatchFile,
                         code: list[str]) -> tuple[FixStatus, str]:
        """A patch that changes compiled code: never carried, whatever its Python files show."""
        left = provenance.left_out_compiled(entry)
        if left:
            return FixStatus.MISSING, (f"the provenance record says its compiled code was left out "
                                       f"({', '.join(left)}): copying files onto an image cannot carry it")
        note = f"it changes compiled code ({', '.join(code)}), which an image's files cannot show"
        if not _vllm_files(current):
            return FixStatus.UNKNOWN, note
        if entry.get("status") == PatchStatus.APPLIES:
            status, why = self._decide_recorded(patch, r, entry, current)
        else:
            status, why = self._decide_from_files(patch, r, current)
        if status == FixStatus.CARRIED:
            return FixStatus.UNKNOWN, f"its Python hunks are in the image's files ({why}), but {note}"
        return status, f"{why}; {note}"

    def _decide_recorded(self, patch: Patch, r: PatchResult, entry: dict,
                         current: PatchFile) -> tuple[FixStatus, str]:
        """The provenance record says the image carries the patch: which revision, and do the files agree."""
        recorded_sha = entry.get("sha256") or ""
        if recorded_sha != current.sha256:
            older = self._revision_named(patch, recorded_sha)
            return FixStatus.STALE, (f"the image carries {entry.get('patch') or patch.id} sha256 "
                                     f"{recorded_sha[:12]}{older}; the manifest's {current.path} is sha256 "
                                     f"{current.sha256[:12]}")
        present = self._hunks_present(current)
        if present or (self.series_equal and r.status == PatchStatus.APPLIES):
            return FixStatus.CARRIED, self._carried_evidence(present, "provenance sha256 matches the manifest")
        return FixStatus.UNKNOWN, ("the provenance record lists this patch and its files match the record, but "
                                   f"the files are not what the series makes of pristine vLLM {self.version}")

    def _decide_from_files(self, patch: Patch, r: PatchResult, current: PatchFile) -> tuple[FixStatus, str]:
        """No record claims the patch: the image's files alone say carried, stale, missing or unknown."""
        present = self._hunks_present(current)
        if r.status == PatchStatus.APPLIES and self.series_equal:
            return FixStatus.CARRIED, self._carried_evidence(present, "no provenance record")
        if present:
            note = "no provenance record" if self.record is None else "not in the provenance record"
            return FixStatus.CARRIED, f"every hunk of {current.path} is already in the image's files ({note})"
        older = self._older_revision_present(patch)
        if older:
            return FixStatus.STALE, older
        if r.status == PatchStatus.NOT_TARGETED:
            return FixStatus.MISSING, f"not targeted: {r.evidence}"
        own = _vllm_paths(current)
        if all(self.image.get(f) == self.expected.pristine.get(f) for f in own):
            return FixStatus.MISSING, (f"{', '.join(own)} {'is' if len(own) == 1 else 'are'} pristine "
                                       f"vLLM {self.version}")
        if r.status in (PatchStatus.FAILED, PatchStatus.BLOCKED):
            return FixStatus.UNKNOWN, (f"the series does not apply to pristine vLLM {self.version} "
                                       f"({r.status}: {r.message})")
        outcome = engine.apply_patch(self.image, _only_vllm(current), max_fuzz=patch.fuzz)
        if outcome.ok:
            return FixStatus.MISSING, f"the hunks of {current.path} would still apply to the image's files"
        return FixStatus.UNKNOWN, f"the files are neither pristine nor patched: {outcome.message}"

    # --- evidence ----------------------------------------------------------------------------------

    def _tampered_evidence(self, patch: Patch, r: PatchResult, entry: dict, carried_per_record: bool) -> str:
        """Why the files or the bytecode Python runs are not what the patch wrote ("" when they are)."""
        tampered = self._tampered(entry.get("files") or []) if carried_per_record else []
        applied = r.files if r.status == PatchStatus.APPLIES else ()
        written = (entry.get("files") or []) if carried_per_record else applied
        tampered += self._bytecode_tampered(set(written))
        if not tampered:
            return ""
        current = self._load(patch)
        still = current is not None and _vllm_files(current) and self._hunks_present(current)
        return "; ".join(tampered) + ("; the patch's own hunks are still there" if still
                                      else "; the patch's own hunks are no longer all there")

    def _tampered(self, files: list[str]) -> list[str]:
        out = []
        recorded = (self.record or {}).get("files", {})
        applied_at = (self.record or {}).get("applied_at", "?")
        for path in files:
            want = (recorded.get(path) or {}).get("sha256")
            if not path.startswith("vllm/") or want is None and path not in recorded:
                continue
            found = sha256(self.image.get(path))
            if found != want:
                what = "is gone" if found is None else f"has sha256 {found[:12]}"
                out.append(f"{path} {what}; the provenance record (applied {applied_at}) says "
                           f"{(want or 'deleted')[:12]}")
        return out

    def _bytecode_tampered(self, modules: set[str]) -> list[str]:
        """Bytecode Python would run for these modules that is not their source's code, or not the record's."""
        out = [f"{b['pyc']} (optimisation level {b['level']}) runs instead of {posixpath.basename(b['source'])}: "
               f"{b['why']}" for b in self.pycs if b["source"] in modules and b["verdict"] == bytecode.DIFFERS]
        found = {b["pyc"]: b["sha256"] for b in self.pycs}
        applied_at = (self.record or {}).get("applied_at", "?")
        for pyc, want in sorted(((self.record or {}).get("bytecode") or {}).items()):
            if _module_of(pyc) in modules and found.get(pyc) != want:
                what = "is gone" if pyc not in found else f"has sha256 {found[pyc][:12]}"
                out.append(f"{pyc} {what}; the provenance record (applied {applied_at}) says {want[:12]}")
        return out

    def _carried_evidence(self, present: bool, prefix: str) -> str:
        if self.series_equal:
            return f"{prefix}; the files equal the series' output on pristine vLLM {self.version}"
        return f"{prefix}; every hunk is in the image's files"

    def _load(self, patch: Patch) -> PatchFile | None:
        try:
            return patch.load(self.version, self.manifest.base)
        except PatchsetError:
            return None

    def _hunks_present(self, pf: PatchFile) -> bool:
        outcome = engine.apply_patch(self.image, _only_vllm(pf))
        return outcome.status == engine.OutcomeStatus.ALREADY

    def _revision_named(self, patch: Patch, sha: str) -> str:
        for rev in _git_revisions(self.manifest, patch, self.version):
            if rev.sha256 == sha:
                return f" ({rev.describe()})"
        return ""

    def _older_revision_present(self, patch: Patch) -> str:
        for rev in _git_revisions(self.manifest, patch, self.version):
            try:
                older = parse_patch(rev.data, name=rev.path, strip=patch.strip, root=patch.root)
            except PatchsetError:
                continue
            if _vllm_files(older) and self._hunks_present(older):
                self.revision_found = rev.sha256
                return f"the image's files hold an older revision of the patch: {rev.describe()}"
        return ""


@dataclass(frozen=True)
class _Revision:
    """One past revision of a patch file, from git history."""

    path: str
    commit: str
    date: str
    sha256: str
    data: bytes

    def describe(self) -> str:
        return f"{self.path} as of commit {self.commit[:12]}, {self.date}"


def _git_revisions(manifest: Manifest, patch: Patch, version: str) -> Iterator[_Revision]:
    """Earlier committed revisions of the patch file, newest first (nothing outside a git work tree)."""
    choice = patch.choice_for(version)
    if choice is None:
        return
    try:
        import git

        repo = git.Repo(manifest.base, search_parent_directories=True)
        root = Path(repo.working_tree_dir or "").resolve()
        rel = Path(choice.path).resolve().relative_to(root).as_posix()
        current = hashlib.sha256(Path(choice.path).read_bytes()).hexdigest()
        commits = list(repo.iter_commits(paths=rel, max_count=50))
    except Exception:  # no repository, no commits, file outside it: no history to consult
        return
    for commit in commits:
        try:
            data = (commit.tree / rel).data_stream.read()
        except KeyError:
            continue
        digest = hashlib.sha256(data).hexdigest()
        if digest != current:
            yield _Revision(rel, commit.hexsha, commit.committed_datetime.date().isoformat(), digest, data)


def _vllm_files(pf: PatchFile) -> list:
    return [f for f in pf.files if all(p.startswith("vllm/") for p in f.touched)]


def _vllm_paths(pf: PatchFile) -> list[str]:
    return sorted({p for f in _vllm_files(pf) for p in f.touched})


def _only_vllm(pf: PatchFile) -> PatchFile:
    return PatchFile(pf.path, pf.sha256, pf.header, tuple(_vllm_files(pf)))
