"""patches.yaml: what the fork carries, in which order, for which releases.

Loading validates everything that can be checked without a vLLM tree, and
every error names the manifest file and line.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from patchset.core import yamlnodes
from patchset.core.patchfile import PatchFile, read_patch
from patchset.errors import ManifestError

DEFAULT_MANIFEST = "patches.yaml"
ORIGINS = ("backport", "fork", "local")
PATCH_SUFFIXES = (".patch", ".diff")
ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")

TOP_KEYS = {"schema", "upstream", "layout", "targets", "suites", "patches", "recipes"}
UPSTREAM_KEYS = {"pypi", "git", "tag"}
LAYOUT_KEYS = {"strip", "root"}
TARGET_KEYS = {"image"}
PATCH_KEYS = {"id", "title", "origin", "upstream", "releases", "patch", "after", "tests", "present", "fuzz",
              "strip", "root"}
PROBE_KEYS = {"file", "contains"}


@dataclass(frozen=True)
class Probe:
    """Evidence that a fix is in a tree: a file containing a literal text."""

    file: str
    contains: str

    def holds(self, content: bytes | None) -> bool:
        return content is not None and self.contains.encode() in content

    def describe(self, content: bytes | None) -> str:
        if content is None:
            return f"{self.file} is absent"
        at = content.find(self.contains.encode())
        if at < 0:
            return f"{self.file} lacks {self.contains!r}"
        line = content.count(b"\n", 0, at) + 1
        return f"{self.file}:{line} contains {self.contains!r}"


@dataclass(frozen=True)
class PatchChoice:
    """One patch file and the releases it is for."""

    specifier: SpecifierSet
    path: Path
    line: int


@dataclass(frozen=True)
class Patch:
    id: str
    title: str
    origin: str
    releases: SpecifierSet
    choices: tuple[PatchChoice, ...]
    after: tuple[str, ...] = ()
    tests: tuple[str, ...] = ()
    present: tuple[Probe, ...] = ()
    upstream_pr: int | None = None
    upstream_commit: str | None = None
    fuzz: int = 0
    strip: int = 1
    root: str = ""
    line: int = 0

    def targets(self, version: str) -> bool:
        return Version(version) in self.releases

    def choice_for(self, version: str) -> PatchChoice | None:
        v = Version(version)
        for c in self.choices:
            if v in c.specifier:
                return c
        return None

    def load(self, version: str, base: Path) -> PatchFile:
        choice = self.choice_for(version)
        if choice is None:
            raise ManifestError(f"no patch file is given for vLLM {version}", patch=self.id)
        rel = _display(choice.path, base)
        return read_patch(choice.path, strip=self.strip, root=self.root, display=rel)


@dataclass(frozen=True)
class Target:
    version: str
    image: str | None = None


@dataclass(frozen=True)
class Manifest:
    path: Path
    sha256: str
    pypi: str
    git: str | None
    tag: str
    targets: tuple[Target, ...]
    patches: tuple[Patch, ...]
    suites: tuple[str, ...] = ()
    recipes: str = "recipes"
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def base(self) -> Path:
        return self.path.parent

    def target(self, version: str) -> Target:
        for t in self.targets:
            if Version(t.version) == Version(version):
                return t
        known = ", ".join(t.version for t in self.targets)
        raise ManifestError(f"vLLM {version} is not a target (targets: {known})", file=str(self.path),
                            hint="add it under targets:")

    def patch(self, patch_id: str) -> Patch:
        for p in self.patches:
            if p.id == patch_id:
                return p
        raise ManifestError(f"no patch with id {patch_id!r}", file=str(self.path))

    def dependants(self, patch_id: str) -> set[str]:
        """Every patch that needs ``patch_id`` applied first, directly or not."""
        out: set[str] = set()
        frontier = {patch_id}
        while frontier:
            nxt = {p.id for p in self.patches if frontier & set(p.after)} - out
            out |= nxt
            frontier = nxt
        return out


def load_manifest(path: str | Path = DEFAULT_MANIFEST) -> Manifest:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ManifestError(f"cannot read the manifest: {e.strerror}", file=str(path)) from e
    try:
        data = yamlnodes.load(raw.decode("utf-8"))
    except Exception as e:  # yaml errors carry their own position
        mark = getattr(e, "problem_mark", None)
        raise ManifestError(f"not valid YAML: {getattr(e, 'problem', e)}", file=str(path),
                            line=mark.line + 1 if mark else None) from e
    return _Loader(path, raw, data).load()


class _Loader:
    def __init__(self, path: Path, raw: bytes, data: object) -> None:
        self.path = path
        self.raw = raw
        self.data = data
        self.file = str(path)

    def fail(self, message: str, line: int | None = None, patch: str | None = None, hint: str | None = None):
        raise ManifestError(message, file=self.file, line=line, patch=patch, hint=hint)

    def load(self) -> Manifest:
        d = self.data
        if not isinstance(d, yamlnodes.Mapping):
            self.fail("the manifest must be a mapping with schema, upstream, targets and patches", 1)
        self.keys(d, TOP_KEYS, "the manifest")
        if d.get("schema") != 1:
            self.fail(f"schema must be 1, not {d.get('schema')!r}", d.line_of("schema"))
        up = d.get("upstream") or yamlnodes.Mapping()
        if not isinstance(up, dict):
            self.fail("upstream must be a mapping", d.line_of("upstream"))
        if isinstance(up, yamlnodes.Mapping):
            self.keys(up, UPSTREAM_KEYS, "upstream")
        tag = str(up.get("tag", "v{version}"))
        if "{version}" not in tag:
            self.fail("upstream.tag must contain {version}", d.line_of("upstream"))
        layout = d.get("layout") or yamlnodes.Mapping()
        if isinstance(layout, yamlnodes.Mapping):
            self.keys(layout, LAYOUT_KEYS, "layout")
        strip = self.int_field(layout, "strip", 1, d.line_of("layout"))
        root = str(layout.get("root", "") or "")
        targets = self.targets(d)
        suites = tuple(str(s) for s in self.str_list(d, "suites", None))
        recipes = str(d.get("recipes", "recipes"))
        patches = self.patches(d, strip, root, targets)
        warnings = self.orphans(d, patches, recipes)
        return Manifest(
            path=self.path, sha256=hashlib.sha256(self.raw).hexdigest(), pypi=str(up.get("pypi", "vllm")),
            git=str(up["git"]) if up.get("git") else None, tag=tag, targets=targets, patches=patches,
            suites=suites, recipes=recipes, warnings=warnings)

    def keys(self, m: yamlnodes.Mapping, allowed: set[str], what: str, patch: str | None = None) -> None:
        for k in m:
            if k not in allowed:
                self.fail(f"unknown key {k!r} in {what}", m.line_of(k), patch,
                          hint="known keys: " + ", ".join(sorted(allowed)))

    def int_field(self, m, key: str, default: int, line: int, patch: str | None = None) -> int:
        v = m.get(key, default) if isinstance(m, dict) else default
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            self.fail(f"{key} must be a whole number >= 0, not {v!r}",
                      m.line_of(key) if isinstance(m, yamlnodes.Mapping) else line, patch)
        return v

    def str_list(self, m: yamlnodes.Mapping, key: str, patch: str | None) -> list[str]:
        v = m.get(key)
        if v is None:
            return []
        if isinstance(v, str):
            return [v]
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            self.fail(f"{key} must be a list of strings", m.line_of(key), patch)
        return list(v)

    def targets(self, d: yamlnodes.Mapping) -> tuple[Target, ...]:
        t = d.get("targets")
        if not isinstance(t, yamlnodes.Mapping) or not t:
            self.fail("targets must map each pinned vLLM release to its settings", d.line_of("targets"),
                      hint='e.g. targets: {"0.29.0": {image: "vllm/vllm-openai:v0.29.0"}}')
        out = []
        for version, settings in t.items():
            line = t.line_of(version)
            try:
                Version(version)
            except InvalidVersion:
                self.fail(f"target {version!r} is not a PEP 440 version", line, hint='quote it: "0.29.0"')
            settings = settings or yamlnodes.Mapping()
            if not isinstance(settings, dict):
                self.fail(f"target {version} must be a mapping", line)
            if isinstance(settings, yamlnodes.Mapping):
                self.keys(settings, TARGET_KEYS, f"target {version}")
            out.append(Target(version=version, image=settings.get("image")))
        return tuple(sorted(out, key=lambda x: Version(x.version)))

    def patches(self, d: yamlnodes.Mapping, strip: int, root: str, targets) -> tuple[Patch, ...]:
        items = d.get("patches")
        if not isinstance(items, yamlnodes.Sequence):
            self.fail("patches must be a list", d.line_of("patches"))
        out: list[Patch] = []
        seen: dict[str, int] = {}
        for i, item in enumerate(items):
            line = items.item_lines[i]
            if not isinstance(item, yamlnodes.Mapping):
                self.fail("each patch must be a mapping with at least id and patch", line)
            pid = item.get("id")
            if not isinstance(pid, str) or not ID_RE.match(pid):
                self.fail(f"patch id {pid!r} must be lower-case letters, digits, '.', '_' or '-'",
                          item.line_of("id"))
            if pid in seen:
                self.fail(f"duplicate patch id {pid!r} (first at line {seen[pid]})", item.line_of("id"), pid)
            seen[pid] = item.line_of("id")
            out.append(self.patch(item, pid, strip, root, targets))
        self.check_order(out)
        return tuple(out)

    def patch(self, item: yamlnodes.Mapping, pid: str, strip: int, root: str, targets) -> Patch:
        self.keys(item, PATCH_KEYS, f"patch {pid}", pid)
        origin = item.get("origin", "backport")
        if origin not in ORIGINS:
            self.fail(f"origin must be one of {', '.join(ORIGINS)}, not {origin!r}", item.line_of("origin"), pid)
        releases = self.specifier(item.get("releases", ""), item.line_of("releases"), pid)
        up = item.get("upstream") or {}
        if not isinstance(up, dict):
            self.fail("upstream must be a mapping like {pr: 54288, commit: abc123}", item.line_of("upstream"), pid)
        pr = up.get("pr")
        if pr is not None and not isinstance(pr, int):
            self.fail(f"upstream.pr must be a number, not {pr!r}", item.line_of("upstream"), pid)
        commit = up.get("commit")
        if commit is not None:
            commit = str(commit)
            if not re.fullmatch(r"[0-9a-f]{7,40}", commit):
                self.fail(f"upstream.commit {commit!r} is not a git commit id", item.line_of("upstream"), pid)
        choices = self.choices(item, pid, releases, targets)
        probes = self.probes(item, pid)
        return Patch(
            id=pid, title=str(item.get("title", pid)), origin=origin, releases=releases, choices=choices,
            after=tuple(self.str_list(item, "after", pid)), tests=tuple(self.str_list(item, "tests", pid)),
            present=probes, upstream_pr=pr, upstream_commit=commit,
            fuzz=self.int_field(item, "fuzz", 0, item.line, pid),
            strip=self.int_field(item, "strip", strip, item.line, pid),
            root=str(item.get("root", root) or ""), line=item.line)

    def specifier(self, text, line: int, pid: str) -> SpecifierSet:
        try:
            return SpecifierSet(str(text))
        except InvalidSpecifier:
            self.fail(f"releases {text!r} is not a PEP 440 specifier", line, pid,
                      hint='e.g. ">=0.28.0,<0.30.0"')
        raise AssertionError  # unreachable: fail raises

    def choices(self, item: yamlnodes.Mapping, pid: str, releases: SpecifierSet, targets) -> tuple[PatchChoice, ...]:
        spec = item.get("patch")
        line = item.line_of("patch")
        if spec is None:
            self.fail("patch: is missing (the patch file, or a mapping of release ranges to files)", item.line, pid)
        entries: list[tuple[str, object, int]] = []
        if isinstance(spec, str):
            entries.append(("", spec, line))
        elif isinstance(spec, yamlnodes.Mapping):
            entries = [(k, v, spec.line_of(k)) for k, v in spec.items()]
        else:
            self.fail("patch must be a path or a mapping of release ranges to paths", line, pid)
        out = []
        for rng, rel, ln in entries:
            if not isinstance(rel, str):
                self.fail(f"patch file for {rng or 'all releases'} must be a path", ln, pid)
            file = (self.path.parent / rel).resolve()
            if not file.is_file():
                self.fail(f"patch file {rel} does not exist", ln, pid, hint="paths are relative to the manifest")
            out.append(PatchChoice(self.specifier(rng, ln, pid), file, ln))
        for t in targets:
            v = Version(t.version)
            if v not in releases:
                continue
            hits = [c for c in out if v in c.specifier]
            if not hits:
                self.fail(f"no patch file covers target {t.version}, which releases {str(releases)!r} includes",
                          line, pid)
            if len(hits) > 1:
                self.fail(f"target {t.version} matches {len(hits)} patch files; ranges must not overlap", line, pid)
        return tuple(out)

    def probes(self, item: yamlnodes.Mapping, pid: str) -> tuple[Probe, ...]:
        raw = item.get("present")
        if raw is None:
            return ()
        items = raw if isinstance(raw, list) else [raw]
        out = []
        for p in items:
            if not isinstance(p, dict) or not isinstance(p.get("file"), str) or not isinstance(p.get("contains"), str):
                self.fail("present must be {file: PATH, contains: TEXT} (or a list of them)",
                          item.line_of("present"), pid)
            if isinstance(p, yamlnodes.Mapping):
                self.keys(p, PROBE_KEYS, "present", pid)
            out.append(Probe(p["file"], p["contains"]))
        return tuple(out)

    def check_order(self, patches: list[Patch]) -> None:
        ids = {p.id: i for i, p in enumerate(patches)}
        items = self.data["patches"]
        for p in patches:
            for dep in p.after:
                if dep not in ids:
                    self.fail(f"after: names unknown patch {dep!r}", items[ids[p.id]].line_of("after"), p.id)
        cycle = _find_cycle({p.id: p.after for p in patches})
        if cycle:
            first = cycle[0]
            self.fail("dependency cycle: " + " -> ".join(cycle + [first]),
                      items[ids[first]].line_of("after"), first)
        for p in patches:
            for dep in p.after:
                if ids[dep] > ids[p.id]:
                    self.fail(f"listed before {dep!r}, which it must come after", items[ids[p.id]].line_of("after"),
                              p.id, hint="the list order is the series order: move it below")

    def orphans(self, d: yamlnodes.Mapping, patches: tuple[Patch, ...], recipes: str) -> tuple[str, ...]:
        folder = (self.path.parent / recipes).resolve()
        if not folder.is_dir():
            return ()
        named = {c.path for p in patches for c in p.choices}
        for f in sorted(folder.rglob("*")):
            if f.suffix in PATCH_SUFFIXES and f.is_file() and f.resolve() not in named:
                self.fail(f"{_display(f, self.path.parent)} is not named by any patch",
                          d.line_of("patches"), hint="add it to the manifest or delete it")
        return ()


def same_release(found: str, wanted: str) -> bool:
    """Does an installed version string name this release? ``0.29.0+cpu`` is 0.29.0 with a local label."""
    try:
        return Version(Version(found).public) == Version(Version(wanted).public)  # 0.29 == 0.29.0
    except InvalidVersion:
        return found == wanted


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


def _display(path: Path, base: Path) -> str:
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path)
