"""Loading patches.yaml: every error names the manifest file and line.

Loading validates everything that can be checked without a vLLM tree and builds
:class:`patchset.core.manifest.Manifest`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from patchset.core import yamlcache, yamlnodes
from patchset.core.manifest import (
    DEFAULT_MANIFEST,
    ORIGINS,
    PATCH_SUFFIXES,
    Manifest,
    Patch,
    PatchChoice,
    Pin,
    Probe,
    Suite,
    Target,
    closest,
    did_you_mean,
    display_path,
)
from patchset.errors import ManifestError
from patchset.versions import InvalidRange, InvalidRelease, Release, Releases

ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
MAX_ERRORS = 50  # enough to fix a manifest in one pass; a broken file must not print thousands
_T = TypeVar("_T")
_U = TypeVar("_U")

TOP_KEYS = {"schema", "upstream", "layout", "targets", "suites", "patches", "recipes"}
UPSTREAM_KEYS = {"pypi", "git", "tag"}
LAYOUT_KEYS = {"strip", "root"}
TARGET_KEYS = {"image", "source", "base", "wheel"}
PIN_KEYS = {"git", "commit"}
FULL_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # SHA-1, or SHA-256 object format
PATCH_KEYS = {"id", "title", "origin", "upstream", "releases", "patch", "after", "tests", "present", "fuzz",
              "strip", "root"}
PROBE_KEYS = {"file", "contains"}
SUITE_KEYS = {"path", "gpu", "timeout", "deselect"}


def find_manifest(start: str | Path = ".") -> Path:
    """The manifest a verb run in ``start`` means, as git and pre-commit find their own: ``patches.yaml`` in
    ``start`` or in the nearest folder above it, up to the root of the git repository holding ``start``
    (never above it; outside a repository, ``start`` alone). Relative to ``start`` when ``start`` is, so
    messages name it as the user would (``../patches.yaml``); ``start``'s own when there is none anywhere (its
    loader then says how to start one)."""
    here = Path(start)
    folder = here.resolve()
    chain = [folder, *folder.parents]
    top = next((i for i, d in enumerate(chain) if (d / ".git").exists()), None)
    for up, d in enumerate(chain[:1] if top is None else chain[:top + 1]):
        if (d / DEFAULT_MANIFEST).is_file():
            return here / Path(*[".."] * up, DEFAULT_MANIFEST) if up else here / DEFAULT_MANIFEST
    return here / DEFAULT_MANIFEST


def load_manifest(path: str | Path = DEFAULT_MANIFEST) -> Manifest:
    """Load and validate the manifest; raise ManifestErrors naming every problem (the first is the message).

    A ``.patch`` under recipes/ that no patch names is a warning here (``Manifest.warnings``): a file
    being worked on must not stop a check or an audit. ``validate`` refuses it.
    """
    manifest, errors = inspect_manifest(path, orphans_are_errors=False)
    if errors:
        raise ManifestErrors(errors)
    assert manifest is not None  # no errors means the loader built it
    return manifest


def inspect_manifest(path: str | Path = DEFAULT_MANIFEST, *,
                     orphans_are_errors: bool = True) -> tuple[Manifest | None, list[ManifestError]]:
    """Every problem in the manifest (up to MAX_ERRORS) and the manifest as far as it could be read.

    With problems, the manifest (None when not even its shape could be read) is only good for
    reporting more of them, such as broken patch files: every choice it holds is an existing file.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        # The first thing a fork without a manifest sees: say how to get one.
        return None, [ManifestError("no manifest here", file=str(path), hint=(
            "start one with `patchset init --vllm V`, or adopt a series the fork already carries with "
            "`patchset import SERIES`; or point --manifest at it"))]
    except OSError as e:
        return None, [ManifestError(f"cannot read the manifest: {e.strerror}", file=str(path))]
    try:
        doc = yamlcache.load(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        return None, [ManifestError(f"not UTF-8 text: {e.reason} at byte {e.start}", file=str(path))]
    except yamlnodes.SyntaxProblem as e:
        return None, [ManifestError(f"not valid YAML: {e.message}", file=str(path), line=e.line)]
    loader = _Loader(path, raw, doc, orphans_are_errors)
    manifest = loader.load()
    if manifest is not None and not loader.errors:
        yamlcache.keep(raw.decode("utf-8"), doc)
    return manifest, loader.errors


class ManifestErrors(ManifestError):
    """Every problem found in one manifest; the first one is this error's own file, line and message."""

    def __init__(self, errors: Sequence[ManifestError]) -> None:
        self.errors = tuple(errors)
        first = self.errors[0]
        super().__init__(first.message, file=first.file, line=first.line, patch=first.patch, hint=first.hint)

    def render(self) -> str:
        more = len(self.errors) - 1
        return super().render() + (f" [and {more} more: `patchset validate` lists them all]" if more else "")


class _Abandon(Exception):
    """fail() has recorded the problem: the caller drops the part it was reading and goes on."""


class _TooMany(Exception):
    """MAX_ERRORS problems are recorded: stop reading."""


class _Loader:
    def __init__(self, path: Path, raw: bytes, doc: yamlnodes.Document, orphans_are_errors: bool) -> None:
        self.path = path
        self.raw = raw
        self.doc = doc
        self.data = doc.data
        self.file = str(path)
        self.orphans_are_errors = orphans_are_errors
        self.errors: list[ManifestError] = []
        self.items: dict[str, yamlnodes.Mapping] = {}  # patch id -> its mapping, for the order checks
        self.mentioned: set[Path] = set()  # every file a patch: names, even where the entry is broken

    def note(self, message: str, line: int | None = None, patch: str | None = None, hint: str | None = None) -> None:
        error = ManifestError(message, file=self.file, line=line or None, patch=patch, hint=hint)
        if all(str(e) != str(error) for e in self.errors):
            self.errors.append(error)
        if len(self.errors) >= MAX_ERRORS:
            raise _TooMany

    def fail(self, message: str, line: int | None = None, patch: str | None = None,
             hint: str | None = None) -> NoReturn:
        self.note(message, line, patch, hint)
        raise _Abandon

    def attempt(self, read: Callable[..., _T], *args: Any, default: _U) -> _T | _U:
        try:
            return read(*args)
        except _Abandon:
            return default

    def load(self) -> Manifest | None:
        try:  # MAX_ERRORS duplicate keys stop the reading too (found by fuzzing: _TooMany escaped)
            for dup in self.doc.duplicates:
                self.note(f"key {dup.key!r} is written twice, at lines {dup.first} and {dup.again}", dup.again,
                          hint="YAML would silently keep only one: delete or merge the other")
            return self.manifest()
        except (_Abandon, _TooMany):
            return None

    def manifest(self) -> Manifest:
        d = self.data
        if not isinstance(d, yamlnodes.Mapping):
            self.fail("the manifest must be a mapping with schema, upstream, targets and patches", 1)
        self.keys(d, TOP_KEYS, "the manifest")
        schema = d.get("schema")
        if (schema != 1 or isinstance(schema, bool)) and not self.misspelled(d, "schema", TOP_KEYS):
            self.note(f"schema must be 1, not {schema!r}", yamlnodes.line_of(d, "schema"))
        pypi, git, tag = self.attempt(self.upstream, d, default=("vllm", None, "v{version}"))
        strip, root = self.attempt(self.layout, d, default=(1, ""))
        targets = self.attempt(self.targets, d, default=())
        suites = self.attempt(self.suites, d, default=())
        recipes = self.attempt(self.string, d, "recipes", "recipes", None, default="recipes")
        patches = self.attempt(self.patches, d, strip, root, targets, default=())
        # with the patch list misspelled, every patch file is unnamed: its own error says so already
        warnings = () if self.misspelled(d, "patches", TOP_KEYS) else self.orphans(d, patches, recipes)
        return Manifest(
            path=self.path, sha256=hashlib.sha256(self.raw).hexdigest(), pypi=pypi, git=git, tag=tag,
            targets=targets, patches=patches, suites=suites, recipes=recipes, warnings=warnings,
            targets_line=yamlnodes.line_of(d, "targets") or 0)

    def upstream(self, d: yamlnodes.Mapping) -> tuple[str, str | None, str]:
        up = d.get("upstream")
        up = yamlnodes.Mapping() if up is None else up
        if not isinstance(up, yamlnodes.Mapping):
            self.fail("upstream must be a mapping", yamlnodes.line_of(d, "upstream"))
        self.keys(up, UPSTREAM_KEYS, "upstream")
        tag = self.string(up, "tag", "v{version}", None)
        if "{version}" not in tag:
            self.fail("upstream.tag must contain {version}", yamlnodes.line_of(up, "tag"))
        git = up.get("git")
        return self.string(up, "pypi", "vllm", None), (self.string(up, "git", "", None) if git else None), tag

    def layout(self, d: yamlnodes.Mapping) -> tuple[int, str]:
        layout = d.get("layout")
        layout = yamlnodes.Mapping() if layout is None else layout
        if not isinstance(layout, yamlnodes.Mapping):
            self.fail("layout must be a mapping like {strip: 1, root: vllm}", yamlnodes.line_of(d, "layout"))
        self.keys(layout, LAYOUT_KEYS, "layout")
        return self.int_field(layout, "strip", 1, None), self.string(layout, "root", "", None)

    def keys(self, m: dict, allowed: set[str], what: str, patch: str | None = None) -> None:
        for k in m:
            if k not in allowed:
                where = "" if patch is not None and what == f"patch {patch}" else f" in {what}"  # already said
                self.note(f"unknown key {k!r}{where}", yamlnodes.line_of(m, k), patch,
                          hint=did_you_mean(str(k), sorted(allowed), "known keys"))

    @staticmethod
    def misspelled(m: dict, key: str, allowed: set[str]) -> bool:
        """Whether ``key`` is missing from ``m`` because an unknown key there is its misspelling (``targts:``):
        that key's own error says so, with the did-you-mean, so the missing one gets no second error."""
        return key not in m and any(k not in allowed and closest(str(k), sorted(allowed)) == key for k in m)

    def int_field(self, m: yamlnodes.Mapping, key: str, default: int, patch: str | None) -> int:
        v = m.get(key, default)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            self.fail(f"{key} must be a whole number >= 0, not {v!r}", yamlnodes.line_of(m, key), patch)
        return int(v)

    def string(self, m: yamlnodes.Mapping, key: str, default: str, patch: str | None) -> str:
        v = m.get(key, default)
        if v is None:
            return default
        if not isinstance(v, str):
            self.fail(f"{key} must be a string, not {self.written(m, key, v)}", yamlnodes.line_of(m, key), patch,
                      hint=f'quote it: "{self.written(m, key, v)}"')
        return str(v)

    def written(self, m: object, key: object, value: object) -> str:
        """How a value was typed in the file (``0.30``, not the float 0.3 YAML made of it)."""
        return self.doc.text_at(yamlnodes.value_position(m, key), value) or str(value)

    def not_a_string(self, what: str, text: str, value: object, line: int, patch: str | None = None,
                     quoted: str | None = None) -> NoReturn:
        kind = "null" if value is None else "true/false" if isinstance(value, bool) else \
            f"the number {value!r}" if isinstance(value, (int, float)) else type(value).__name__
        self.fail(f"{what} {text} is not a string: unquoted, YAML reads it as {kind}", line, patch,
                  hint=f'quote it: "{quoted or text}"')

    def str_list(self, m: yamlnodes.Mapping, key: str, patch: str | None) -> list[str]:
        v = m.get(key)
        if v is None:
            return []
        if isinstance(v, str):
            return [v]
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            self.fail(f"{key} must be a list of strings", yamlnodes.line_of(m, key), patch,
                      hint="quote every item that YAML could read as a number")
        return [str(x) for x in v]

    def suites(self, d: yamlnodes.Mapping) -> tuple[Suite, ...]:
        items = d.get("suites")
        if items is None:
            return ()
        if isinstance(items, str):
            return (Suite(items, line=yamlnodes.line_of(d, "suites")),)
        if not isinstance(items, yamlnodes.Sequence):
            self.fail("suites must be a list of test paths or {path, gpu, timeout, deselect} mappings",
                      yamlnodes.line_of(d, "suites"))
        out = [self.attempt(self.suite, items, i, default=None) for i in range(len(items))]
        return tuple(x for x in out if x is not None)

    def suite(self, items: yamlnodes.Sequence, i: int) -> Suite:
        item, line = items[i], yamlnodes.item_line(items, i)
        if isinstance(item, str):
            return Suite(item, line=line)
        if not isinstance(item, yamlnodes.Mapping) or not isinstance(item.get("path"), str):
            self.fail("a suite is a test path or a mapping with at least path:", line,
                      hint="e.g. - {path: tests/v1/kv_offload, gpu: true}")
        self.keys(item, SUITE_KEYS, f"suite {item['path']}")
        gpu = item.get("gpu", False)
        if not isinstance(gpu, bool):
            self.fail(f"suite {item['path']}: gpu must be true or false, not {gpu!r}", yamlnodes.line_of(item, "gpu"))
        timeout = item.get("timeout")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                    or timeout <= 0):
            self.fail(f"suite {item['path']}: timeout must be a number of seconds > 0, not {timeout!r}",
                      yamlnodes.line_of(item, "timeout"))
        deselect = self.str_list(item, "deselect", None)
        outside = [x for x in deselect if not _inside(item["path"], x)]
        if outside:
            self.fail(f"suite {item['path']}: deselect {outside[0]!r} is not inside the suite",
                      yamlnodes.line_of(item, "deselect"), hint="deselect names tests under the suite's path")
        return Suite(item["path"], gpu, float(timeout) if timeout is not None else None, tuple(deselect), line)

    def targets(self, d: yamlnodes.Mapping) -> tuple[Target, ...]:
        t = d.get("targets")
        if t is None and self.misspelled(d, "targets", TOP_KEYS):
            raise _Abandon
        if not isinstance(t, yamlnodes.Mapping) or not t:
            self.fail("targets must map each pinned vLLM release to its settings", yamlnodes.line_of(d, "targets"),
                      hint='e.g. targets: {"0.29.0": {image: "vllm/vllm-openai:v0.29.0"}}')
        seen: dict[Release, tuple[str, int]] = {}
        out = [self.attempt(self.target, t, version, seen, default=None) for version in t]
        return tuple(sorted((x for x in out if x is not None), key=lambda x: Release(x.version)))

    def target(self, t: yamlnodes.Mapping, version: object, seen: dict[Release, tuple[str, int]]) -> Target:
        line = yamlnodes.line_of(t, version)
        if not isinstance(version, str):
            text = self.doc.text_at(yamlnodes.key_position(t, version), version)
            self.not_a_string("target", text, version, line)
        try:
            v = Release(version)
        except InvalidRelease:
            self.fail(f"target {version!r} is not a PEP 440 version", line, hint='quote it: "0.29.0"')
        if v in seen:
            self.fail(f"target {version} is the same release as {seen[v][0]} (line {seen[v][1]})", line,
                      hint="keep one of them")
        seen[v] = (version, line)
        settings = t[version]
        settings = yamlnodes.Mapping() if settings is None else settings
        if not isinstance(settings, yamlnodes.Mapping):
            self.fail(f"target {version} must be a mapping", line)
        self.keys(settings, TARGET_KEYS, f"target {version}")
        image = settings.get("image")
        if image is not None and not isinstance(image, str):
            self.fail(f"target {version}: image must be an image reference, not {image!r}",
                      yamlnodes.line_of(settings, "image"), hint='e.g. image: "vllm/vllm-openai:v0.29.0"')
        for key in ("base", "wheel"):
            value = settings.get(key)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                self.fail(f"target {version}: {key} must be a string, not {value!r}",
                          yamlnodes.line_of(settings, key),
                          hint='e.g. base: "my-registry/cuda-python:12.8"' if key == "base"
                          else 'e.g. wheel: "dist/vllm-0.31.1.dev45-cp38-abi3-manylinux_2_28_x86_64.whl"')
        pin = self.pin(settings, version) if "source" in settings else None
        return Target(version=version, image=image, source=pin, base=settings.get("base"),
                      wheel=settings.get("wheel"), line=line)

    def pin(self, settings: yamlnodes.Mapping, version: str) -> Pin:
        """A target's own source: ``{git: URL-or-path, commit: FULL_ID}``."""
        src = settings["source"]
        line = yamlnodes.line_of(settings, "source")
        example = 'e.g. source: {git: "https://example.org/vllm.git", commit: "<40 hex digits>"}'
        if not isinstance(src, yamlnodes.Mapping):
            self.fail(f"target {version}: source must be a mapping with git and commit", line, hint=example)
        self.keys(src, PIN_KEYS, f"target {version} source")
        url = src.get("git")
        if not isinstance(url, str) or not url.strip():
            self.fail(f"target {version}: source.git must name the repository (a URL or a local path)",
                      yamlnodes.line_of(src, "git") or line, hint=example)
        commit = src.get("commit")
        commit_line = yamlnodes.line_of(src, "commit") or line
        if commit is None:
            self.fail(f"target {version}: source.commit is missing", commit_line,
                      hint="name the commit by its full id: `git rev-parse BRANCH` prints it")
        if not isinstance(commit, str):
            self.not_a_string(f"target {version}: source.commit", self.written(src, "commit", commit), commit,
                              commit_line)
        if not FULL_COMMIT.fullmatch(commit):
            short = re.fullmatch(r"[0-9a-fA-F]{4,39}", commit)
            self.fail(f"target {version}: source.commit {commit!r} is not a full commit id"
                      + (" (it is abbreviated)" if short else ""), commit_line,
                      hint="write all 40 lower-case hex digits: `git rev-parse COMMIT` prints them; a branch or a "
                           "tag moves, a commit id does not")
        url = url.strip()
        if is_local_repository(url):
            folder = local_repository(url, self.path.parent)
            if not folder.is_dir():
                self.fail(f"target {version}: source.git {url} is no folder here", yamlnodes.line_of(src, "git"),
                          hint="a local path is relative to the manifest; or give the repository's URL")
        return Pin(git=url, commit=commit, line=commit_line)

    def patches(self, d: yamlnodes.Mapping, strip: int, root: str, targets: tuple[Target, ...]) -> tuple[Patch, ...]:
        items = d.get("patches")
        if items is None and self.misspelled(d, "patches", TOP_KEYS):
            raise _Abandon
        if not isinstance(items, yamlnodes.Sequence):
            self.fail("patches must be a list", yamlnodes.line_of(d, "patches"))
        out: list[Patch] = []
        seen: dict[str, int] = {}
        for i, item in enumerate(items):
            line = yamlnodes.item_line(items, i)
            if not isinstance(item, yamlnodes.Mapping):
                self.note("each patch must be a mapping with at least id and patch", line)
                continue
            pid = item.get("id")
            id_line = yamlnodes.line_of(item, "id")
            if not isinstance(pid, str) or not ID_RE.match(pid):
                self.note(f"patch id {pid!r} must be lower-case letters, digits, '.', '_' or '-'", id_line)
                pid = pid if isinstance(pid, str) and pid else f"#{i + 1}"
            patch = self.patch(item, pid, strip, root, targets)
            if pid in seen:
                self.note(f"duplicate patch id {pid!r} (first at line {seen[pid]})", id_line, pid)
                continue
            seen[pid] = id_line
            self.items[pid] = item
            out.append(patch)
        self.check_order(out)
        return tuple(out)

    def patch(self, item: yamlnodes.Mapping, pid: str, strip: int, root: str, targets: tuple[Target, ...]) -> Patch:
        self.keys(item, PATCH_KEYS, f"patch {pid}", pid)
        origin = item.get("origin", "backport")
        if origin not in ORIGINS:
            self.note(f"origin must be one of {', '.join(ORIGINS)}, not {origin!r}",
                      yamlnodes.line_of(item, "origin"), pid)
        releases = self.attempt(self.releases, item, pid, default=None)
        pr, commit = self.attempt(self.upstream_ref, item, pid, default=(None, None))
        line = yamlnodes.line(item)
        return Patch(
            id=pid, title=self.attempt(self.string, item, "title", pid, pid, default=pid), origin=str(origin),
            releases=releases if releases is not None else Releases(),
            choices=self.attempt(self.choices, item, pid, releases, targets, default=()),
            after=tuple(self.attempt(self.str_list, item, "after", pid, default=[])),
            tests=tuple(self.attempt(self.str_list, item, "tests", pid, default=[])),
            present=self.attempt(self.probes, item, pid, default=()), upstream_pr=pr, upstream_commit=commit,
            fuzz=self.attempt(self.int_field, item, "fuzz", 0, pid, default=0),
            strip=self.attempt(self.int_field, item, "strip", strip, pid, default=strip),
            root=self.attempt(self.string, item, "root", root, pid, default=root), line=line)

    def releases(self, item: yamlnodes.Mapping, pid: str) -> Releases:
        if "releases" not in item:
            return Releases()
        text = item["releases"]
        line = yamlnodes.line_of(item, "releases")
        if not isinstance(text, str):
            written = self.written(item, "releases", text)
            self.not_a_string("releases", written, text, line, pid, quoted=f"=={written}")
        return self.specifier(text, line, pid)

    def upstream_ref(self, item: yamlnodes.Mapping, pid: str) -> tuple[int | None, str | None]:
        up = item.get("upstream")
        up = {} if up is None else up
        line = yamlnodes.line_of(item, "upstream")
        if not isinstance(up, dict):
            self.fail("upstream must be a mapping like {pr: 54288, commit: abc123}", line, pid)
        pr = up.get("pr")
        if pr is not None and (not isinstance(pr, int) or isinstance(pr, bool)):
            self.fail(f"upstream.pr must be a number, not {pr!r}", line, pid)
        commit = up.get("commit")
        if commit is not None:
            commit = str(commit)
            if not re.fullmatch(r"[0-9a-f]{7,40}", commit):
                self.fail(f"upstream.commit {commit!r} is not a git commit id", line, pid,
                          hint="quote it if YAML could read it as a number")
        return pr, commit

    def specifier(self, text: str, line: int, pid: str) -> Releases:
        try:
            return Releases(text)
        except InvalidRange:
            self.fail(f"releases {text!r} is not a PEP 440 specifier", line, pid,
                      hint='e.g. ">=0.28.0,<0.30.0", or several joined by ||: "==0.28.0 || ==0.29.0"')

    def choices(self, item: yamlnodes.Mapping, pid: str, releases: Releases | None,
                targets: tuple[Target, ...]) -> tuple[PatchChoice, ...]:
        spec = item.get("patch")
        line = yamlnodes.line_of(item, "patch")
        if spec is None:
            self.fail("patch: is missing (the patch file, or a mapping of release ranges to files)",
                      yamlnodes.line(item), pid)
        if isinstance(spec, str):
            entries: list[tuple[object, object, int]] = [("", spec, line)]
        elif isinstance(spec, yamlnodes.Mapping):
            entries = [(k, v, yamlnodes.line_of(spec, k)) for k, v in spec.items()]
        else:
            self.fail("patch must be a path or a mapping of release ranges to paths", line, pid)
        out = [self.attempt(self.choice, spec, rng, rel, ln, pid, default=None) for rng, rel, ln in entries]
        found = [c for c in out if c is not None]
        if releases is not None and len(found) == len(out):
            self.coverage(found, releases, targets, line, pid)
        return tuple(found)

    def choice(self, spec: object, rng: object, rel: object, line: int, pid: str) -> PatchChoice:
        if not isinstance(rel, str):
            self.fail(f"patch file for {rng or 'all releases'} must be a path, not {rel!r}", line, pid)
        file = (self.path.parent / rel).resolve()
        self.mentioned.add(file)
        if not isinstance(rng, str):
            text = self.doc.text_at(yamlnodes.key_position(spec, rng), rng)
            self.not_a_string("release range", text, rng, line, pid, quoted=f"=={text}")
        specifier = self.specifier(rng, line, pid)
        if not file.is_file():
            self.fail(f"patch file {rel} does not exist", line, pid, hint="paths are relative to the manifest")
        return PatchChoice(specifier, file, line)

    def coverage(self, choices: list[PatchChoice], releases: Releases, targets: tuple[Target, ...],
                 line: int, pid: str) -> None:
        for t in targets:
            if t.version not in releases:
                continue
            hits = [c for c in choices if t.version in c.specifier]
            if not hits:
                self.note(f"no patch file covers target {t.version}, which releases {str(releases)!r} includes",
                          line, pid)
            if len(hits) > 1:
                self.note(f"target {t.version} matches {len(hits)} patch files; ranges must not overlap", line, pid)

    def probes(self, item: yamlnodes.Mapping, pid: str) -> tuple[Probe, ...]:
        raw = item.get("present")
        if raw is None:
            return ()
        items = raw if isinstance(raw, list) else [raw]
        out = []
        for p in items:
            if not isinstance(p, dict) or not isinstance(p.get("file"), str) or not isinstance(p.get("contains"), str):
                self.fail("present must be {file: PATH, contains: TEXT} (or a list of them)",
                          yamlnodes.line_of(item, "present"), pid)
            self.keys(p, PROBE_KEYS, "present", pid)
            out.append(Probe(p["file"], p["contains"]))
        return tuple(out)

    def check_order(self, patches: list[Patch]) -> None:
        ids = {p.id: i for i, p in enumerate(patches)}
        unknown = False
        for p in patches:
            for dep in p.after:
                if dep not in ids:
                    unknown = True
                    self.note(f"after: names unknown patch {dep!r}", yamlnodes.line_of(self.items[p.id], "after"),
                              p.id)
        cycle = _find_cycle({p.id: tuple(d for d in p.after if d in ids) for p in patches})
        if cycle:
            first = cycle[0]
            self.note("dependency cycle: " + " -> ".join(cycle + [first]),
                      yamlnodes.line_of(self.items[first], "after"), first)
        if cycle or unknown:
            return  # an order check on a broken graph would only repeat the problems above
        for p in patches:
            for dep in p.after:
                if ids[dep] > ids[p.id]:
                    self.note(f"listed before {dep!r}, which it must come after",
                              yamlnodes.line_of(self.items[p.id], "after"), p.id,
                              hint="the list order is the series order: move it below")

    def orphans(self, d: yamlnodes.Mapping, patches: tuple[Patch, ...], recipes: str) -> tuple[str, ...]:
        folder = (self.path.parent / recipes).resolve()
        if not folder.is_dir():
            return ()
        named = {c.path for p in patches for c in p.choices} | self.mentioned
        warnings = []
        for f in sorted(folder.rglob("*")):
            # f is under the resolved folder: resolved again only when it may be a link to a named file
            if f.suffix in PATCH_SUFFIXES and f.is_file() and f not in named and f.resolve() not in named:
                error = ManifestError(f"{display_path(f, self.path.parent)} is not named by any patch",
                                      file=self.file, line=yamlnodes.line_of(d, "patches"),
                                      hint="add it to the manifest or delete it")
                if self.orphans_are_errors:
                    self.note(error.message, error.line, hint=error.hint)
                else:
                    warnings.append(str(error))
        return tuple(warnings)


def is_local_repository(url: str) -> bool:
    """A path or ``file://`` URL rather than a remote (``https://``, ``ssh://``, ``git@host:path``)."""
    if url.startswith("file://"):
        return True
    return "://" not in url and not re.match(r"^[\w.-]+@[\w.-]+:", url)


def local_repository(url: str, base: Path) -> Path:
    """The folder a local ``source.git`` names: a ``file://`` URL's path, or a path relative to the manifest."""
    return Path(url.removeprefix("file://")) if url.startswith("file://") else (base / url).resolve()


def _find_cycle(graph: dict[str, tuple[str, ...]]) -> list[str]:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str]:
        state[n] = 1
        stack.append(n)
        for m in graph.get(n, ()):
            if state.get(m) == 1:
                return stack[stack.index(m):]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return []

    for n in graph:
        if n not in state:
            found = visit(n)
            if found:
                return found
    return []


def _inside(path: str, selector: str) -> bool:
    p, s = path.strip().rstrip("/"), selector.strip()
    return s == p or s.startswith((p + "/", p + "::"))
