"""`patchset build`: the base image plus the series for one release, in one small change set.

The series is applied on the host, by the same engine as ``check`` and ``apply``, to the files
read out of the base image itself: what gets checked is exactly what gets shipped, and a hunk
cannot land somewhere else inside the build than where ``check`` said it would. The image
definition (``images/vllm-patched/Dockerfile`` next to the manifest, else the one shipped in the
package) then only copies the changed files and the
provenance record onto the base and recompiles the touched modules with the image's Python.

Under ``SOURCE_DATE_EPOCH`` every byte and label of the added layer is a function of the inputs
(the record's ``applied_at``, file and folder mtimes, labels); the bytecode is hash-checked. The
throwaway compile stage is removed by the id this build gave it, never by a prune.

Refused, with nothing built, when the base does not hold the release asked for, already carries
a series, or when the series does not apply to it.

An image holds the package alone: files beside it (``requirements/``, ``tests/``, ``docker/``) are
left out and listed. A patch that changes compiled code (``csrc/``, ``*.cu``, ``*.cpp``,
``CMakeLists.txt``: ``core.trees``) cannot be carried by copying files onto the base: the build is
refused (a finding, naming the patch and the files) unless ``python_only`` asks for the image
without that code, and then the image's labels and provenance never call that patch carried.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from patchset.core import provenance
from patchset.core.manifest import Manifest
from patchset.core.sbom import SBOM_PATH
from patchset.core.series import (
    PatchStatus,
    ReleaseResult,
    evaluate_release,
    failure_summary,
    syntax_error,
)
from patchset.core.trees import compiled
from patchset.errors import Finding
from patchset.files import atomic_write
from patchset.images.builder import BuildError, remove_stages, run_build, untag
from patchset.images.context import build_context, build_time, dockerfile_for, sbom_context
from patchset.images.engine import (
    Client,
    Image,
    ImageFiles,
    ImageNotFound,
    VllmInstall,
    VllmNotFound,
    connect,
    get_image,
    image_digest,
    local_id,
    split_reference,
)
from patchset.images.tree import ImageTree
from patchset.sources import urls
from patchset.verbs import sbom as cyclonedx
from patchset.verbs.audit import audit_image
from patchset.versions import same_release

LABEL_NS = "io.patchset"
OCI = "org.opencontainers.image"


class SeriesFails(BuildError, Finding):
    """The series does not apply to the base image's files: a finding (exit 1), nothing was built."""


@dataclass
class Layer:
    """One layer of a built image, as its history reports it."""

    created_by: str
    size: int


@dataclass
class BuildReport:
    """A built image: its base, tag and id, and the series' result on its release."""

    vllm: str
    base: str
    base_digest: str
    tag: str
    image_id: str
    site: str
    result: ReleaseResult
    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    layers: list[Layer] = field(default_factory=list)  # what this build added on top of the base
    context_bytes: int = 0
    removed_stages: list[str] = field(default_factory=list)  # the throwaway stages' image ids, removed
    sbom: dict | None = None  # build --sbom: {"path": in the image, "file": on the host, "sha256": of both}
    left_out: dict[str, list[str]] = field(default_factory=dict)  # patch id -> its files an image cannot hold
    not_carried: dict[str, list[str]] = field(default_factory=dict)  # patch id -> its compiled code (python_only)
    warnings: list[str] = field(default_factory=list)  # the manifest's and the series' (said as it ran, too)

    @property
    def ok(self) -> bool:
        return True  # a report exists only for an image that was built

    @property
    def added_bytes(self) -> int:
        return sum(layer.size for layer in self.layers)


def default_base(manifest: Manifest, version: str) -> str:
    """The target's ``base:`` or ``image:``; for a release without either, upstream's image of it. A commit
    target has no upstream image: without --base or ``base:`` it is refused."""
    target = manifest.target(version)
    if target.base or target.image:
        return target.base or target.image or ""
    if target.source is not None:
        raise BuildError(f"vLLM {target.version} is pinned to commit {target.source.commit[:12]}, for which no "
                         "release image exists; nothing was built", file=str(manifest.path),
                         line=target.line or None,
                         hint="pass --base IMAGE (an image holding vLLM built from that commit), or set base: "
                              "under the target")
    return f"vllm/vllm-openai:v{version}"


def default_tag(base: str) -> str:
    repository, tag = split_reference(base)
    return f"{repository}:{tag or 'latest'}-patched"


def build_image(manifest: Manifest, version: str, *, base: str | None = None, tag: str | None = None,
                client: Client | None = None,
                progress: Callable[[str], None] | None = None, nocache: bool = False,
                sbom: Path | None = None, python_only: bool = False) -> BuildReport:
    """``sbom``: also audit the built image and embed its CycloneDX SBOM (and write it to that file).
    ``python_only``: build even though patches change compiled code, without it (never labelled carried)."""
    version = manifest.target(version).version
    base = base or default_base(manifest, version)
    tag = tag or default_tag(base)
    say = progress or (lambda _line: None)
    client = client or connect()

    try:
        image = get_image(client, base)
    except ImageNotFound as e:
        raise BuildError(str(e), hint="pass --base with an image this engine has or can pull") from e
    base_digest = image_digest(image)
    say(f"base {base} ({base_digest})\n")

    for warning in manifest.warnings:  # e.g. a .patch no patch names: validate refuses it
        say(f"warning: {warning}\n")
    install, result, changed, modes = _series_on_base(client, image, base, manifest, version)
    for warning in result.warnings:  # e.g. a patch file read with its CRs stripped, as GNU patch reads it
        say(f"warning: {warning}\n")
    not_carried = _compiled_left_out(result, base, python_only, say)
    record = provenance.make_record(manifest, result, layout="repo",
                                    modes={p: 0o100000 | m for p, m in modes.items() if m is not None})
    record["image"] = {"base": base, "base_digest": base_digest, "site": install.site}
    labels = image_labels(manifest, version, base, base_digest, result, not_carried)
    written = sorted(p for p, c in changed.items() if c is not None)
    deleted = sorted(p for p, c in changed.items() if c is None)
    mtime = build_time()
    context = build_context(install, changed, modes, provenance.dumps(record), dockerfile_for(manifest), mtime)
    say(f"series: {sum(p.status == PatchStatus.APPLIES for p in result.patches)} patches apply; "
        f"{len(written)} files to write, {len(deleted)} to delete; context {len(context)} bytes\n")

    buildargs = _buildargs(image, install, changed, deleted, mtime)
    image_id, stages = run_build(client, context, tag, buildargs, labels, say, nocache=nocache)
    built = client.images.get(image_id)
    removed = remove_stages(client, stages, keep={local_id(image), local_id(built)}, say=say)
    report = BuildReport(version, base, base_digest, tag, local_id(built), install.site, result, written, deleted,
                         labels, _added_layers(image, built), len(context), removed,
                         left_out={p.id: list(p.skipped) for p in result.patches if p.skipped},
                         not_carried=not_carried, warnings=[*manifest.warnings, *result.warnings])
    if sbom is not None:
        add_sbom(client, manifest, image, install, report, sbom, say=say, nocache=nocache)
    return report


def _compiled_left_out(result: ReleaseResult, base: str, python_only: bool,
                       say: Callable[[str], None]) -> dict[str, list[str]]:
    """Compiled files each patch changes; a refusal unless ``python_only`` leaves them out (with a warning)."""
    not_carried = compiled_changes(result)
    if not_carried and not python_only:
        said = "; ".join(f"patch {pid} changes {', '.join(files)}" for pid, files in not_carried.items())
        raise SeriesFails(f"{said}: compiled code, which copying files onto {base} cannot carry; nothing was built",
                          hint="build vLLM from source with the series for it, or pass --python-only to build the "
                               "image without that code (audit will not call those fixes carried)")
    for pid, files in not_carried.items():
        say(f"warning: {pid} is not carried: its compiled code ({', '.join(files)}) is left out\n")
    return not_carried


def _buildargs(image: Image, install: VllmInstall, changed: dict[str, bytes | None], deleted: list[str],
               mtime: int) -> dict[str, str]:
    """The Dockerfile's build arguments."""
    return {
        "BASE": local_id(image),  # the exact bytes that were checked, whatever the tag points at later
        "PYTHON": install.python_executable,
        "SITE": install.site,
        "TOUCHED": " ".join(p for p in sorted(changed) if p.endswith(".py")),
        # In-image paths: the deleted modules and every bytecode file they may have left.
        "DELETED": " ".join(_deleted_paths(install, deleted)),
        "BASE_USER": (image.attrs.get("Config") or {}).get("User") or "root",
        "MTIME": str(mtime),
    }


SBOM_LABEL = f"{LABEL_NS}.sbom"
def sbom_file_for(tag: str) -> Path:
    """The default host copy of a build's SBOM: ``./<tag, / and : as _>.cdx.json``."""
    return Path(re.sub(r"[/:@]", "_", tag) + ".cdx.json")


def add_sbom(client: Client, manifest: Manifest, base: Image, install: VllmInstall,
             report: BuildReport, file: Path, *, say: Callable[[str], None], nocache: bool = False) -> None:
    """Audit the built image, embed the SBOM derived from that audit at SBOM_PATH, and write it to ``file``.

    The pristine release the audit compares with is the base image's own files (what the build
    applied the series to); the SBOM goes into a layer of its own on top of the built image, so
    nothing is built twice. The tag moves to the image with the SBOM; on any failure it is removed:
    ``--sbom`` never leaves an image without one under the tag asked for.
    """
    try:
        with ImageFiles(client, base) as base_files:
            audited = audit_image(client, manifest, report.image_id,
                                  pristine=ImageTree(base_files, install, report.base))
        if not audited.ok:
            failing = audited.error or "; ".join(f"{f.id} is {f.status}" for f in audited.fixes if f.failing)
            raise BuildError(f"{report.tag} fails its own audit: {failing}", hint="no SBOM was embedded")
        # An image cannot name its own id or digest: the SBOM names it by the tag it is built as.
        document = cyclonedx.document(dataclasses.replace(audited, image=report.tag, digest=None, id=None),
                                    manifest).encode()
        context = sbom_context(document, SBOM_PATH, build_time())
        image_id, _ = run_build(client, context, report.tag, {"BASE": report.image_id},
                                 {SBOM_LABEL: SBOM_PATH}, say, nocache=nocache)
    except BaseException:
        untag(client, report.tag, say)  # the tag names the image asked for, with its SBOM, or nothing
        raise
    atomic_write(file, document)
    built = client.images.get(image_id)
    report.image_id, report.labels[SBOM_LABEL] = local_id(built), SBOM_PATH
    report.layers = _added_layers(base, built)
    report.sbom = {"path": SBOM_PATH, "file": str(file), "sha256": provenance.sha256(document)}
    say(f"SBOM: {SBOM_PATH} in the image, and {file}\n")


def _series_on_base(client: Client, image: Image, base: str, manifest: Manifest,
                    version: str) -> tuple[VllmInstall, ReleaseResult, dict[str, bytes | None],
                                           dict[str, int | None]]:
    """The series evaluated on the base's own files: (install, result, changed files, their modes)."""
    with ImageFiles(client, image) as files:
        try:
            install = files.locate_vllm()
        except VllmNotFound as e:
            raise BuildError(str(e)) from e
        pin = manifest.target(version).source
        if not same_release(install.version, version) or (pin is not None and pin.contradicts(install.version)):
            raise BuildError(f"{base} holds vLLM {install.version} ({install.metadata_path}), not {version}",
                             hint="pass the base image of that release with --base")
        if files.read(install.path_of(provenance.PROVENANCE_PATH)) is not None:
            raise BuildError(f"{base} already carries a patchset series "
                             f"({install.path_of(provenance.PROVENANCE_PATH)})",
                             hint="build from the pristine release image; patchset never stacks a series twice")
        tree = ImageTree(files, install, base)
        result = evaluate_release(manifest, version, tree)
        if not result.ok:
            raise SeriesFails(failure_summary(result, f" in {base}"),
                             hint="nothing was built; `patchset check` shows every hunk")
        changed = {path: content for path, content in result.changed.items() if tree.covers(path)}
        for path in result.modes:  # a mode-only change still puts the file, with its new mode, in the layer
            if path not in changed and tree.covers(path) and result.files.get(path) is not None:
                changed[path] = result.files[path]
        # The mode a patch sets (new file mode 100755, new mode) wins; else the file keeps the base's.
        modes = {path: (result.modes[path] & 0o7777) if path in result.modes else files.mode(install.path_of(path))
                 for path in changed}
    broken = syntax_error(result)
    if broken:
        raise SeriesFails(broken[0], patch=broken[1], hint="nothing was built")
    return install, result, changed, modes


def compiled_changes(result: ReleaseResult) -> dict[str, list[str]]:
    """patch id -> the compiled-code files it changes, for each patch the series would apply (or could not hold)."""
    out = {}
    for p in result.patches:
        if p.status in (PatchStatus.APPLIES, PatchStatus.NOT_IN_TREE):
            files = compiled({h.file for h in p.hunks} | set(p.files) | set(p.skipped))
            if files:
                out[p.id] = files
    return out


def _deleted_paths(install: VllmInstall, deleted: list[str]) -> list[str]:
    out = []
    for path in deleted:
        full = install.path_of(path)
        out.append(full)
        if full.endswith(".py"):
            folder, name = full.rsplit("/", 1)
            out.append(f"{folder}/__pycache__/{name[:-3]}.*.pyc")
    return out


def image_labels(manifest: Manifest, version: str, base: str, base_digest: str,
                 result: ReleaseResult, not_carried: dict[str, list[str]] | None = None) -> dict[str, str]:
    created = dt.datetime.fromtimestamp(build_time(), dt.timezone.utc)
    labels = {
        f"{OCI}.title": f"vLLM {version} with the {manifest.path.name} series",
        f"{OCI}.version": version,
        f"{OCI}.base.name": base,
        f"{OCI}.base.digest": base_digest,
        f"{OCI}.created": created.replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        f"{LABEL_NS}.vllm": version,
        f"{LABEL_NS}.manifest.sha256": manifest.sha256,
        f"{LABEL_NS}.provenance": provenance.PROVENANCE_PATH,
    }
    labels.update(_git_labels(manifest.base))
    for p in result.patches:
        if p.id in (not_carried or {}):  # its compiled code is not in the image: never claim it
            labels[f"{LABEL_NS}.left-out.{p.id}"] = ", ".join((not_carried or {})[p.id])
        elif p.status == PatchStatus.APPLIES and p.sha256:
            labels[f"{LABEL_NS}.patch.{p.id}"] = p.sha256
        elif p.status == PatchStatus.UPSTREAM:
            labels[f"{LABEL_NS}.upstream.{p.id}"] = p.evidence or str(PatchStatus.UPSTREAM)
    return labels


def _git_labels(where: Path) -> dict[str, str]:
    """revision and source of the repository holding the manifest, when it is a git work tree."""
    try:
        import git
    except ImportError:  # pragma: no cover - GitPython is a dependency
        return {}
    try:
        repo = git.Repo(where, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return {}
    out: dict[str, str] = {}
    try:
        out[f"{OCI}.revision"] = repo.head.commit.hexsha
        if repo.is_dirty(untracked_files=False):
            out[f"{LABEL_NS}.dirty"] = "true"  # the revision alone does not describe the inputs
    except ValueError:  # a repository without commits
        pass
    try:
        if repo.remotes:
            remote = repo.remotes["origin"] if "origin" in [r.name for r in repo.remotes] else repo.remotes[0]
            # A CI checkout's remote often holds a token (https://x-access-token:...@): never label it.
            out[f"{OCI}.source"] = urls.split_credentials(remote.url)[0]
    except (git.GitCommandError, IndexError, ValueError):
        pass
    return out


def _added_layers(base: Image, built: Image) -> list[Layer]:
    base_depth = len(base.history())
    new = built.history()[: max(0, len(built.history()) - base_depth)]
    return [Layer(h.get("CreatedBy", ""), int(h.get("Size", 0))) for h in reversed(new) if h.get("Size", 0)]
