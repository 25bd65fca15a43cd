"""Public vLLM patch series from other projects through patchset, against GNU ``patch -F0`` and ``git apply``.

For each series (a public repository, a commit, the patches in the order the project applies them, the
vLLM release it pins): extract the patches from a local clone of that repository, then run the real
command line as a new user would -- ``import`` -> ``check`` -> ``deps`` -> ``next`` -> ``port --dry-run``
-- and apply the same patches, in the same order, with GNU ``patch -p1 -F0`` and with ``git apply``
(and with GNU patch at its default fuzz, which is what several projects run) on copies of the same
pristine tree (the release's sdist). Every patch's verdicts side by side; every file the series touches
compared byte for byte between patchset's result and each tool's. Hand ports (one patch the project
kept for two releases) are compared with ``port``'s 3-way merge, file by file.

The other projects' patches are read from their repositories at run time and never copied into this
one. Results and the exact commands are in docs/records/real-forks.md.

    git clone https://github.com/OWNER/NAME /tmp/NAME      # each repository the series below name
    .venv/bin/python bench/realforks.py --clone OWNER/NAME=/tmp/NAME ... --work /tmp/realforks [SERIES...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from patchset.core.manifest_load import load_manifest  # noqa: E402
from patchset.core.patchfile import parse_patch  # noqa: E402
from patchset.core.series import evaluate_release  # noqa: E402
from patchset.sources import open_source  # noqa: E402
from patchset.verbs.next import as_target  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import handports  # noqa: E402  (PAIRS: the one list of the later projects' commits)


@dataclass(frozen=True)
class Series:
    """A public series as its project applies it."""

    name: str
    repo: str  # OWNER/NAME on GitHub
    commit: str
    release: str  # the vLLM release it pins
    port_to: str  # the release `port --dry-run` and `next` are asked about
    patches: tuple[str, ...] = ()  # paths in the repository, in order ...
    script: str = ""  # ... or the project's own apply script, whose order is read
    folder: str = ""  # where the script's $PATCH_ROOT points
    applied_with: str = ""  # how the project applies them (for the record)


@dataclass(frozen=True)
class HandPort:
    """One patch the project kept for two releases: the old and the new file."""

    name: str
    repo: str
    old: tuple[str, str, str]  # commit, path, release
    new: tuple[str, str, str]


OMNI = "zhengjinhuan/omni-infer"
OMNI_AT = "0d409dfc8a13893eed45369351738720eba96d78"
SLLM = "ServerlessLLM/ServerlessLLM"
EMU = "baaivision/Emu3.5"
# The projects found 2026-12-02 with the hand ports of docs/records/port.md ("More projects"): each pair's old series
# (handports.PAIRS, the one list of their commits) as its project applies it, on its release, asked about the
# release the project moved to. FlagScale's overlays (whole copies, not patches) are left out.
REPOS = {"llumnix": "llumnix-project/llumnix", "psrl": "Somoku/psrl", "kvcached": "ovg-project/kvcached",
         "aibrix": "vllm-project/aibrix", "FlagScale": "flagos-ai/FlagScale", "TorchSpec": "lightseekorg/TorchSpec",
         "llm-scaler": "intel/llm-scaler", "ipex-llm": "intel/ipex-llm", "TraceLens": "AMD-AGI/TraceLens",
         "gpustack-runner": "gpustack/runner", "ucm": "ModelEngine-Group/unified-cache-management"}
APPLIED_WITH = {
    "llumnix": "patch -p1 (GNU patch, default fuzz) on the releases/vREL branch",
    "psrl": "git apply on the vREL tag (patch/vllm/apply_patch.sh)",
    "kvcached": "git apply on the vREL tag (engine_integration/scripts/setup.sh)",
    "aibrix": "patch -p 1 -l (GNU patch, default fuzz) in site-packages",
    "FlagScale": "git apply, every *.py.patch under flagscale/backends/vllm (tools/patch/unpatch.py)",
    "TorchSpec": "patch -p1 (GNU patch, default fuzz) in dist-packages, in glob order",
    "llm-scaler": "git apply on the vREL tag (vllm/docker/Dockerfile); one squash of Intel's XPU branch",
    "ipex-llm": "git apply on the vREL tag (its Dockerfile); one squash of Intel's XPU branch",
    "TraceLens": "git apply, else patch -p1 --fuzz=10, in the vREL image's site-packages",
    "gpustack-runner": "patch -p1 (GNU patch, default fuzz) in site-packages, in name order",
    "ucm": "git apply in the vREL source tree (its Dockerfiles)"}


def series_name(project: str, label: str, u: str) -> str:
    """A pair's series: ``project-U``, and the label's words after the releases where a project has two
    pairs from one release (UCM's sparse and ReRoPE patches, each applied alone)."""
    return "-".join([project.lower(), u, *label.split()[3:]])


def _from_pairs() -> list[Series]:
    out = []
    for project, label, u, v, old, _new, _fuzz, kind in handports.PAIRS:
        if kind == "overlay":
            continue
        out.append(Series(series_name(project, label, u), REPOS[project], old[0][0], u, v,
                          patches=tuple(path for _, path in old) if kind == "patch" else (),
                          folder=old[0][1] if kind == "dir" else "",
                          applied_with=APPLIED_WITH[project].replace("REL", u)))
    return out


SERIES = {s.name: s for s in (
    Series("omni-infer-0.9.0", OMNI, OMNI_AT, "0.9.0", "0.9.1", script="infer_engines/bash_install_code.sh",
           folder="omni/adaptors/vllm/patches",
           applied_with="git apply --whitespace=nowarn, one by one, on the v0.9.0 tag (repository layout)"),
    Series("omni-infer-0.8.3", OMNI, OMNI_AT, "0.8.3", "0.9.0", script="infer_engines/bash_install_code_v0.8.3.sh",
           folder="omni/adaptors/vllm/patches",
           applied_with="git apply --whitespace=nowarn, one by one, on the v0.8.3 tag (repository layout)"),
    Series("emu3.5-0.11.0", EMU, "8fcf1da48f9c5252fe0a0b8dc842e07b6efcd745", "0.11.0", "0.11.1",
           folder="third_party/vllm",
           applied_with="patch -p2 in site-packages/vllm (GNU patch, default fuzz), every *.patch under "
                        "third_party/vllm in sorted path order, one patch per vLLM file"),
    Series("serverlessllm-0.11.2", SLLM, "e06eaa0", "0.11.2", "0.12.0",
           patches=("sllm_store/vllm_patch/sllm_load.patch",),
           applied_with="patch -p2 -d site-packages/vllm (GNU patch, default fuzz) on the installed wheel"),
    Series("serverlessllm-0.9.0.1", SLLM, "7b3afd7", "0.9.0.1", "0.9.1",
           patches=("sllm_store/vllm_patch/sllm_load.patch",),
           applied_with="patch -p2 -d site-packages/vllm (GNU patch, default fuzz) on the installed wheel"),
    Series("serverlessllm-0.6.6", SLLM, "d92fa91", "0.6.6", "0.6.6.post1",
           patches=("sllm_store/vllm_patch/sllm_load.patch",),
           applied_with="patch -p2 -d site-packages/vllm (GNU patch, default fuzz) on the installed wheel"),
    Series("serverlessllm-0.5.0.post1", SLLM, "f773b68", "0.5.0.post1", "0.6.6",
           patches=("sllm_store/vllm_patch/sllm_load.patch",),
           applied_with="patch -p2 -d site-packages/vllm (GNU patch, default fuzz) on the installed wheel"),
    *_from_pairs(),
)}

HAND_PORTS = {h.name: h for h in (
    HandPort("omni-infer common_dependency 0.8.3 -> 0.9.0", OMNI,
             (OMNI_AT, "omni/adaptors/vllm/patches/v0.8.3/common_dependency.patch", "0.8.3"),
             (OMNI_AT, "omni/adaptors/vllm/patches/common_dependency.patch", "0.9.0")),
    HandPort("serverlessllm sllm_load 0.5.0.post1 -> 0.6.6", SLLM,
             ("f773b68", "sllm_store/vllm_patch/sllm_load.patch", "0.5.0.post1"),
             ("d92fa91", "sllm_store/vllm_patch/sllm_load.patch", "0.6.6")),
    HandPort("serverlessllm sllm_load 0.9.0.1 -> 0.11.2", SLLM,
             ("7b3afd7", "sllm_store/vllm_patch/sllm_load.patch", "0.9.0.1"),
             ("e06eaa0", "sllm_store/vllm_patch/sllm_load.patch", "0.11.2")),
)}


# --- running things -------------------------------------------------------------------------------------


@dataclass
class Ran:
    argv: list[str]
    rc: int
    out: str
    err: str

    def contract(self) -> list[str]:
        """What breaks the command line's contract: a traceback, an exit code outside 0-2, or a refusal
        that is not one line naming where."""
        bad = []
        if "Traceback" in self.err or self.rc not in (0, 1, 2):
            bad.append(f"exit {self.rc}: {self.err.strip()[-300:]}")
        if self.rc == 2 and len([ln for ln in self.err.splitlines() if ln.strip()]) != 1:
            bad.append(f"exit 2 with {len(self.err.splitlines())} lines on stderr")
        if "--format" in self.argv and "json" in self.argv:
            try:
                json.loads(self.out)
            except ValueError:
                bad.append("--format json did not print one JSON document")
        return bad


def patchset(*args: str, cwd: Path | None = None) -> Ran:
    argv = [sys.executable, "-m", "patchset", *args]
    r = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    return Ran(["patchset", *args], r.returncode, r.stdout, r.stderr)


def git_show(clone: Path, commit: str, path: str) -> bytes:
    return subprocess.run(["git", "-C", str(clone), "show", f"{commit}:{path}"], capture_output=True,
                          check=True).stdout


def series_paths(clone: Path, s: Series) -> list[str]:
    if s.patches:
        return list(s.patches)
    if not s.script:  # every *.patch under the folder, sorted by path (the project's ``sorted(rglob)``)
        listing = subprocess.run(["git", "-C", str(clone), "ls-tree", "-r", "--name-only", s.commit, s.folder],
                                 capture_output=True, text=True, check=True).stdout.split()
        return sorted(p for p in listing if p.endswith(".patch"))
    script = git_show(clone, s.commit, s.script).decode()
    names = [m.group(1) for ln in script.splitlines() if not ln.lstrip().startswith("#")
             for m in [re.search(r"\$PATCH_ROOT/+([\w./-]+\.patch)", ln)] if m]
    return [f"{s.folder}/{n}" for n in names]


def extract(clone: Path, s: Series, into: Path) -> list[Path]:
    """The series' patch files, and a quilt ``series`` file in the project's order."""
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    out = []
    for path in series_paths(clone, s):
        # the path under the project's patch folder: nested folders may hold two files of one name
        dest = into / (path[len(s.folder) + 1:] if s.folder and path.startswith(s.folder + "/") else Path(path).name)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(git_show(clone, s.commit, path))
        out.append(dest)
    (into / "series").write_text("".join(f"{p.relative_to(into)}\n" for p in out))
    return out


# --- the reference tools ------------------------------------------------------------------------------


def touched(patches: list[Path]) -> list[str]:
    paths: set[str] = set()
    for p in patches:
        paths |= set(parse_patch(p.read_bytes(), name=p.name).touched)
    return sorted(paths)


def scratch_tree(root: Path, pristine: Path, paths: list[str]) -> Path:
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    for rel in paths:
        src = pristine / rel
        if src.is_file():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, root / rel)
    return root


TOOLS = {
    "gnu-F0": lambda p: ["patch", "-p1", "-F0", "-N", "--batch", "--no-backup-if-mismatch", "-r", "-", "-i", str(p)],
    "gnu-default": lambda p: ["patch", "-p1", "-N", "--batch", "--no-backup-if-mismatch", "-r", "-", "-i", str(p)],
    "git-apply": lambda p: ["git", "apply", "--whitespace=nowarn", str(p)],
}


def run_tool(tool: str, tree: Path, patch: Path) -> tuple[bool, str]:
    """Dry run first (so a refused patch leaves nothing behind), then for real. (applied, what it said)."""
    cmd = TOOLS[tool](patch.resolve())
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tree.parent)}
    dry = cmd[:2] + ["--check"] + cmd[2:] if tool == "git-apply" else cmd[:1] + ["--dry-run"] + cmd[1:]
    r = subprocess.run(dry, cwd=tree, capture_output=True, text=True, env=env)
    said = (r.stdout + r.stderr).strip()
    if r.returncode != 0:
        return False, said
    r = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, env=env)
    return r.returncode == 0, said


def fuzz_lines(said: str) -> list[str]:
    return [ln for ln in said.splitlines() if "fuzz" in ln or "offset" in ln.lower()]


# --- one series -----------------------------------------------------------------------------------------


@dataclass
class SeriesRun:
    series: Series
    commands: list[Ran] = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)
    files: dict[str, dict[str, str]] = field(default_factory=dict)  # path -> tool -> same/differs/...
    next_rows: list[dict] = field(default_factory=list)  # the same on the release `next` and `port` are asked about
    next_files: dict[str, dict[str, str]] = field(default_factory=dict)

    def broken_contract(self) -> list[str]:
        return [f"{' '.join(c.argv)}: {b}" for c in self.commands for b in c.contract()]


def run_series(clone: Path, s: Series, work: Path) -> SeriesRun:
    run = SeriesRun(s)
    src = work / "src"
    patches = extract(clone, s, src)
    proj = work / "project"
    shutil.rmtree(proj, ignore_errors=True)
    manifest = str(proj / "patches.yaml")
    run.commands.append(patchset("import", str(src), "--into", str(proj), "--target", s.release))
    if not (proj / "patches.yaml").exists():
        return run
    check = patchset("check", "--manifest", manifest, "--format", "json")
    run.commands += [check,
                     patchset("deps", "--manifest", manifest, "--format", "json"),
                     patchset("next", "--manifest", manifest, "--vllm", s.port_to, "--format", "json"),
                     patchset("port", "--manifest", manifest, "--to", s.port_to, "--dry-run", "--format", "json")]
    verdicts = {p["id"]: p for p in json.loads(check.out)["targets"][0]["patches"]} if check.rc in (0, 1) else {}
    m = load_manifest(proj / "patches.yaml")
    paths = touched(patches)
    run.rows, run.files = compare(m, patches, paths, s.release, verdicts, work / s.release)
    deps = run.commands[2]
    if deps.rc in (0, 1):  # deps' edges against GNU patch -F0 applying each patch alone on the pristine tree
        needs: dict[str, list[str]] = {}
        for e in json.loads(deps.out)["edges"]:
            needs.setdefault(e["patch"], []).append(e["needs"])
        pristine = Path(open_source("pypi", s.release).root)  # type: ignore[attr-defined]
        for entry, patch, row in zip(m.patches, patches, run.rows, strict=True):
            alone = scratch_tree(work / "alone", pristine, touched([patch]))
            row["alone"] = "applies" if run_tool("gnu-F0", alone, patch)[0] else "fails"
            row["needs"] = needs.get(entry.id, [])
    nxt = run.commands[3]
    if nxt.rc in (0, 1):  # next's verdicts on the newer release, against the tools on its pristine tree
        later = {p["id"]: p for p in json.loads(nxt.out)["patches"]}
        run.next_rows, run.next_files = compare(m, patches, paths, s.port_to, later, work / s.port_to, as_if=True)
    return run


def compare(m, patches: list[Path], paths: list[str], release: str, verdicts: dict, work: Path,
            as_if: bool = False) -> tuple[list[dict], dict[str, dict[str, str]]]:
    """Every patch's verdict (``verdicts``: check's or next's JSON, by id) beside the tools' on the pristine
    ``release``, cumulatively in series order; and every touched file, patchset's result against each tool's."""
    source = open_source("pypi", release)
    pristine = Path(source.root)  # type: ignore[attr-defined]
    trees = {tool: scratch_tree(work / tool, pristine, paths) for tool in TOOLS}
    rows = []
    for entry, patch in zip(m.patches, patches, strict=True):
        row: dict = {"id": entry.id, "file": patch.name}
        v = verdicts.get(entry.id, {})
        row["patchset"] = v.get("status", "?")
        row["patchset_detail"] = "; ".join(
            f"hunk {h['hunk']} {h['file']}: {h['status']}" + (f" ({h['message']})" if h.get("message") else "")
            for h in v.get("hunks", []) if h.get("status") not in ("exact", "offset")) or v.get("message") or ""
        for tool, tree in trees.items():
            ok, said = run_tool(tool, tree, patch)
            row[tool] = "applies" if ok else "fails"
            # the tail says where it stopped; a "Cannot rename" refusal comes early, so it is kept as well
            limit = [ln for ln in said.splitlines() if ln.startswith("Cannot rename file")][:1]
            row[tool + "_said"] = "\n".join(limit + [said[-600:]]) if not ok else "\n".join(fuzz_lines(said))
        rows.append(row)
    result = evaluate_release(as_target(m, release) if as_if else m, release, source)
    files = {path: {tool: _same(result.files.get(path), tree / path) for tool, tree in trees.items()}
             for path in paths}
    return rows, files


def _same(ours: bytes | None, theirs: Path) -> str:
    there = theirs.read_bytes() if theirs.is_file() else None
    return "same" if ours == there else "differs"


# --- hand ports -----------------------------------------------------------------------------------------


@dataclass
class PortRun:
    hand: HandPort
    commands: list[Ran] = field(default_factory=list)
    result: str = ""
    files: dict[str, str] = field(default_factory=dict)  # path -> identical / differs (N lines) / conflict ...


def run_hand_port(clone: Path, h: HandPort, work: Path) -> PortRun:
    run = PortRun(h)
    (old_commit, old_path, u), (new_commit, new_path, v) = h.old, h.new
    shutil.rmtree(work, ignore_errors=True)
    (work / "src").mkdir(parents=True)
    old = work / "src" / Path(old_path).name
    old.write_bytes(git_show(clone, old_commit, old_path))
    hand = work / ("hand-" + Path(new_path).name)
    hand.write_bytes(git_show(clone, new_commit, new_path))
    proj = work / "project"
    manifest = str(proj / "patches.yaml")
    run.commands.append(patchset("import", str(old), "--into", str(proj), "--target", u))
    port = patchset("port", "--manifest", manifest, "--to", v, "--workdir", str(work / "ws"), "--format", "json")
    run.commands.append(port)
    if port.rc not in (0, 1):
        run.result = f"port exit {port.rc}"
        return run
    doc = json.loads(port.out)
    ported = doc["patches"][0]
    run.result = ported["result"]
    pristine = Path(open_source("pypi", v).root)  # type: ignore[attr-defined]
    hand_paths = touched([hand])
    ours_file = proj / ported["patch"] if ported.get("patch") else None
    our_paths = touched([ours_file]) if ours_file and ours_file.is_file() else list(ported.get("files", []))
    paths = sorted(set(hand_paths) | set(our_paths))
    theirs_tree = scratch_tree(work / "hand-tree", pristine, paths)
    ok, said = run_tool("gnu-F0", theirs_tree, hand)
    if not ok:
        run.result += f" (the hand port itself does not apply with -F0: {said[-200:]})"
    ours_tree = scratch_tree(work / "port-tree", pristine, paths)
    if ours_file and ours_file.is_file() and run.result in ("carried", "ported"):
        run_tool("gnu-F0", ours_tree, ours_file)
    workspace = Path(ported["workspace"]) if ported.get("workspace") else None
    said: dict[str, str] = {}  # path -> what port says needs a person there (conflict, moved code, an import)
    for c in ported.get("conflicts", []):
        said.setdefault(c["file"], c["message"])
    for path in paths:
        if path in said:
            run.files[path] = f"port: {said[path][:160]}" + (
                "" if path in hand_paths else " (not in the hand port)")
            continue
        if path not in hand_paths:
            run.files[path] = "not in the hand port; " + (
                f"vLLM {v} has no such file: port reports a conflict (removed or moved upstream)"
                if not (pristine / path).is_file() else "port changes it")
            continue
        if path not in our_paths:
            run.files[path] = "only the hand port changes it (the maintainer moved the change here)"
            continue
        mine = ours_tree / path
        if workspace is not None:
            ws = workspace / path
            if ws.is_file() and b"<<<<<<<" in ws.read_bytes():
                run.files[path] = "conflict (markers in the workspace)"
                continue
            mine = ws if ws.is_file() else mine
        a = mine.read_bytes() if mine.is_file() else None
        b = (theirs_tree / path).read_bytes() if (theirs_tree / path).is_file() else None
        run.files[path] = "identical to the hand port" if a == b else "merged cleanly but " + _how_differ(a, b)
    return run


def _how_differ(a: bytes | None, b: bytes | None) -> str:
    """How the port's file differs from the hand port's: only in trailing whitespace, only in where the same
    lines stand, or in content (with the count of differing lines)."""
    import difflib

    x, y = (a or b"").decode(errors="replace").splitlines(), (b or b"").decode(errors="replace").splitlines()
    delta = [ln for ln in difflib.unified_diff(x, y, n=0, lineterm="")
             if ln[:1] in "+-" and ln[:3] not in ("+++", "---")]
    if [ln.rstrip() for ln in x] == [ln.rstrip() for ln in y]:
        return f"differs from the hand port in trailing whitespace only ({len(delta)} lines)"
    if sorted(ln.rstrip() for ln in x) == sorted(ln.rstrip() for ln in y):
        return f"differs from the hand port only in where the same lines stand ({len(delta)} lines)"
    return f"differs from the hand port in content ({len(delta)} lines)"


# --- report ---------------------------------------------------------------------------------------------


def report_series(run: SeriesRun) -> str:
    s = run.series
    out = [f"### {s.name}: {s.repo} @ {s.commit[:12]}, vLLM {s.release}", "",
           f"Applied by the project with: {s.applied_with}.", ""]
    for c in run.commands:
        first = (c.err.strip().splitlines() or [""])[-1]
        out.append(f"- `{' '.join(c.argv[:2])}` exit {c.rc}" + (f": {first}" if c.rc == 2 else ""))
    broken = run.broken_contract()
    out += ["", "Contract: " + ("every command exits 0, 1 or 2, no traceback, one JSON document each"
                                if not broken else "BROKEN: " + "; ".join(broken)), ""]
    out += table(run.rows, run.files, f"check on {s.release}", ("applies",))
    out += table(run.next_rows, run.next_files, f"next --vllm {s.port_to}", ("carries",))
    return "\n".join(out) + "\n"


def table(rows: list[dict], files: dict[str, dict[str, str]], title: str, good: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    if rows:
        out += [f"#### {title}", "",
                "| # | patch | patchset | GNU -F0 | git apply | GNU default fuzz | agree |",
                "| --- | --- | --- | --- | --- | --- | --- |"]
        for i, r in enumerate(rows, 1):
            ps_ok = r["patchset"] in good
            gnu, git = r["gnu-F0"] == "applies", r["git-apply"] == "applies"
            agree = "yes" if ps_ok == gnu == git else _named(r) if not ps_ok else _gnu_limit(r, git) or "NO"
            out.append(f"| {i} | {r['id']} | {r['patchset']} | {r['gnu-F0']} | {r['git-apply']} | "
                       f"{r['gnu-default']} | {agree} |")
        details = [r for r in rows if r["patchset"] not in good or r["gnu-default_said"]]
        for r in details:
            out += ["", f"- **{r['id']}**: patchset: {r['patchset_detail'][:900]}"]
            for tool in TOOLS:
                if r[tool + "_said"]:
                    said = " / ".join(r[tool + "_said"].splitlines()[-4:])
                    out.append(f"  - {tool}: {said[:400]}")
        if rows and "alone" in rows[0]:
            fail_alone = [r["id"] for r in rows if r["alone"] == "fails"]
            edged = [r["id"] for r in rows if r["needs"] and r["alone"] == "applies"]
            free = [r["id"] for r in rows if not r["needs"]]
            out += ["", f"`deps`: {sum(1 for r in rows if r['needs'])} patches need an earlier one "
                    f"({sum(len(r['needs']) for r in rows)} edges). GNU patch -F0, each patch alone on the pristine "
                    f"tree: {len(fail_alone)} fail alone ({', '.join(fail_alone) or 'none'}); of those, "
                    f"{len([x for x in fail_alone if x in free])} have no edge in deps "
                    f"({', '.join(x for x in fail_alone if x in free) or 'none'}); patches with an edge that "
                    f"apply alone: {', '.join(edged) or 'none'}"]
        same = {tool: sum(1 for f in files.values() if f[tool] == "same") for tool in TOOLS}
        out += ["", f"Files touched: {len(files)}; byte-identical to patchset's result: "
                + ", ".join(f"{tool} {n}/{len(files)}" for tool, n in same.items())]
        differ = {p: f for p, f in files.items() if "differs" in f.values()}
        out += [f"- {p}: " + ", ".join(f"{t} {v}" for t, v in f.items()) for p, f in differ.items()]
        out.append("")
    return out


#: patchset's refusals that are intended where a tool applies (core/engine.py's docstring), by their words
NAMED = (("comes after", "blocked: an earlier patch it needs failed"),
         ("would not import", "named refusal: the result would not import"),
         ("tools disagree", "named refusal: the tools disagree on the place"),
         ("ambiguous", "named refusal: ambiguous"),
         ("fuzz", "named refusal: fuzz"),
         ("must land at the", "named refusal: anchoring"),
         ("line endings", "named refusal: line endings"))


def _gnu_limit(row: dict, git: bool) -> str:
    """Where patchset and git apply take a patch that GNU patch cannot read: its limit, named (ipex-llm's
    squash renames `.github/ISSUE_TEMPLATE/400-bug report.yml`: GNU patch 2.7.6 says "Cannot rename file
    without two valid file names" for a git rename whose names hold a space)."""
    if git and "Cannot rename file without two valid file names" in row.get("gnu-F0_said", ""):
        return "GNU patch's own limit: it cannot rename a file whose name holds a space (git apply can)"
    return ""


def _named(row: dict) -> str:
    return next((label for words, label in NAMED if words in row["patchset_detail"]), "NO")


def report_port(run: PortRun) -> str:
    h = run.hand
    out = [f"### {h.name} ({h.repo}: {h.old[0][:12]}:{h.old[1]} -> {h.new[0][:12]}:{h.new[1]})", "",
           f"`port` result: {run.result}", ""]
    for c in run.commands:
        if c.contract():
            out.append(f"- BROKEN contract: {' '.join(c.argv)}: {c.contract()}")
    out += [f"- {p}: {v}" for p, v in run.files.items()]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="series or hand ports to run (default: all)")
    ap.add_argument("--clone", action="append", default=[], metavar="OWNER/NAME=PATH",
                    help="a local clone (or bare git dir) of each repository")
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--json", type=Path, help="also write the raw rows here")
    args = ap.parse_args(argv)
    clones = dict(c.split("=", 1) for c in args.clone)
    names = args.names or [*SERIES, *HAND_PORTS]
    raw: dict = {}
    for name in names:
        if name in SERIES:
            s = SERIES[name]
            run = run_series(Path(clones[s.repo]), s, args.work / re.sub(r"\W+", "-", name))
            print(report_series(run), flush=True)
            raw[name] = {"rows": run.rows, "files": run.files, "next_rows": run.next_rows,
                         "next_files": run.next_files,
                         "commands": [{"argv": c.argv, "rc": c.rc, "err": c.err[-2000:]} for c in run.commands]}
        else:
            h = HAND_PORTS[name]
            prun = run_hand_port(Path(clones[h.repo]), h, args.work / re.sub(r"\W+", "-", name))
            print(report_port(prun), flush=True)
            raw[name] = {"result": prun.result, "files": prun.files,
                         "commands": [{"argv": c.argv, "rc": c.rc, "err": c.err[-2000:]} for c in prun.commands]}
    if args.json:
        args.json.write_text(json.dumps(raw, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
