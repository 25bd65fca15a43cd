"""Port against hand ports, file by file: identical · flagged · different.

A maintainer's own port of a series to a newer release is the reference: ``port`` merges the
old series onto the new release's pristine files, the hand-made patch files are applied to the same
files with GNU patch, and every file either touches is compared.

* identical: port's file is the hand port's, byte for byte;
* flagged: port refused it (a conflict, with its reason: a merge conflict, a moved file, a merge
  that would not import) — a person looks at it, as the hand port did;
* same code: port's file parses to the same AST as the hand port's (only whitespace or comments differ, or the
  order of the imports in one block of consecutive module-level imports);
* same port + new work: port's changes all stand in the hand port's file, whose other edits touch only lines
  port left as V has them and bring no line the old patch added (``_judge``);
* different: port accepted a file that is not the hand port's by any rule above. The goal is none;
* hand-only: the hand port changes a file the old patch never touched (new work, not a port).

    python bench/handports.py this-repo       # this repository's 0.28 recipes -> the hand-made 0.29 ones
    python bench/handports.py sllm GITDIR     # a public project's one vLLM patch, kept by hand for
                                              # 0.5.0.post1 -> 0.6.6 -> 0.9.0.1 -> 0.11.2 (GITDIR: its clone)
    python bench/handports.py omni-infer GITDIR  # another project's series for 0.8.3 -> its series for 0.9.0
    python bench/handports.py dynamo SRC...   # NVIDIA Dynamo's vLLM patches (0.7.2 -> 0.8.4, 0.20.1 -> 0.21.0,
                                              # 0.21.0 -> 0.22.0);
                                              # SRC: git directories or COMMIT/PATH folders, tried in order
    python bench/handports.py pairs FILES [PROJECT...]  # the projects of PAIRS (llumnix, psrl, kvcached, aibrix,
                                              # FlagScale, TorchSpec, TraceLens, gpustack-runner, ucm,
                                              # llm-scaler, ipex-llm); FILES: COMMIT/PATH

The second is ServerlessLLM's ``sllm_store/vllm_patch/sllm_load.patch`` (repository layout, applied
with ``patch -p2 -d site-packages/vllm``), taken at the last commit of its main line that pinned each
release.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from patchset.cache import Cache
from patchset.core.manifest import Manifest
from patchset.core.manifest_load import load_manifest
from patchset.sources import open_source
from patchset.verbs.port import PortStatus, prepare, step, walk_from

REPO = Path(__file__).resolve().parent.parent


def gnu(release: str, patches: list[Path], paths: list[str], tmp: Path, fuzz: int = 0,
        source: str = "pypi") -> dict[str, bytes | None]:
    """The release's files (its sdist, or its wheel when told) with the hand-made patches applied by GNU patch
    (-F0 unless told)."""
    src = open_source(source, release, cache=Cache())
    if hasattr(src, "prefetch"):
        src.prefetch(paths)
    tree = tmp / f"hand-{release}"
    for path in paths:
        if src.covers(path) and (data := src.read(path)) is not None:
            (tree / path).parent.mkdir(parents=True, exist_ok=True)
            (tree / path).write_bytes(data)
    for p in patches:
        tree.mkdir(parents=True, exist_ok=True)
        subprocess.run(["patch", "-p1", f"-F{fuzz}", "-s", "-i", str(p)], cwd=tree, check=True)
    return {path: (tree / path).read_bytes() if (tree / path).is_file() else None for path in paths}


def compare(manifest: Manifest | Path, to: str, hand: list[Path], tmp: Path,
            fuzz: int = 0, source: str = "pypi") -> list[tuple[str, str, str, str]]:
    """(file, verdict, why, merge) for every file port or the hand port changes; ``merge`` judges port's own
    merge of a file that waits in a workspace (a clean file of a conflicting patch) against the hand port,
    by the same rule as an accepted file (``_judge``), and is empty for the other rows."""
    m = load_manifest(manifest) if isinstance(manifest, Path) else manifest
    walk = prepare(m, to, None, source)
    flagged: dict[str, list[str]] = {}  # file -> its own conflicts' reasons
    merged: dict[str, bytes | None] = {}  # what port made of each file, clean or not
    waiting: dict[str, bytes | None] = {}  # clean files of conflicting patches that no later patch changes
    review: dict[str, list[str]] = {}  # file -> port's notes on it (a copy whose source upstream changed)
    for p in m.patches:
        if walk_from(m, p, None) is None:
            continue
        before = dict(walk.ours)
        r = step(m, walk, p, None)
        for c in r.conflicts:
            flagged.setdefault(c.file, []).append(f"{c.message}" + (f" (line {c.line})" if c.line else ""))
        for note in r.review:
            review.setdefault(note.file, []).append(note.message)
        for f in list(waiting):
            if f in r.files:
                waiting.pop(f)  # a later patch changes it too: the workspace copy is not the final file
        if r.result == PortStatus.CONFLICT:  # a clean file of a conflicting patch waits in the workspace
            elsewhere = sorted({c.file for c in r.conflicts})
            for f in r.files:
                if f not in flagged:
                    flagged[f] = [f"merged cleanly, but its patch conflicts in {len(elsewhere)} other file(s) ("
                                  + ", ".join(elsewhere) + "): it waits in the workspace"
                                  + ("; port says V already carries its change" if f in r.already_in_v else "")]
                    waiting[f] = walk.workspaces[p.id][1].get(f) if p.id in walk.workspaces else None
        if r.result == PortStatus.CONFLICT and p.id in walk.workspaces:
            merged.update(walk.workspaces[p.id][1])
        merged.update({k: v for k, v in walk.ours.items() if v != before.get(k)})
    pristine = walk.pristine
    old_added = _old_added(m)
    paths = set(merged) | set(flagged) | set(pristine) | {f for h in hand for f in touched(h)}
    hand_files = gnu(to, hand, sorted(paths), tmp, fuzz, source)
    hand_changed = {k for k, v in hand_files.items() if v != pristine.get(k, walk.read(k))}
    rows = []
    for path in sorted({k for k, v in merged.items() if v != pristine.get(k)} | hand_changed | set(flagged)):
        judged = _judge(pristine.get(path), merged.get(path, pristine.get(path)), hand_files.get(path),
                        old_added.get(path, set()))
        if path in flagged:
            kind = _flag_kind(path, flagged[path], path in hand_changed, walk.read(path) is None, hand_files)
            why = _mark_leads("; ".join(flagged[path] + [f"review: {x}" for x in review.get(path, [])]), hand_changed)
            rows.append((path, kind, why, judged if path in waiting else ""))
        elif path in review and judged != "identical":
            rows.append((path, "flagged", "review: " + "; ".join(review[path]), ""))  # the maintainer changed it
        elif path in review:
            rows.append((path, "identical (a review note: the maintainer keeps the copy as it is)",
                         "merged cleanly; review: " + "; ".join(review[path]), ""))
        elif path not in merged:
            rows.append((path, "hand-only", "the hand port extends the patch to a file the old one never touched", ""))
        elif judged == "identical":
            rows.append((path, "identical", "merged cleanly", ""))
        elif judged == "same code":
            rows.append((path, "same code", "merged cleanly; the same AST as the hand port (whitespace, comments or "
                         "import order differ)", ""))
        elif judged == "same port + new work":
            rows.append((path, "same port + new work", "merged cleanly; every line port changed stands in the "
                         "hand port as port has it, and the hand port also changes lines the old patch never had (" +
                         _inserted(merged[path], hand_files.get(path)) + ")", ""))
        else:
            rows.append((path, "different", "merged cleanly, differs from the hand port", ""))
    return rows


LEAD = re.compile(r"may have moved: moved_to: (\S+?):\d+")  # port's lead for a hunk whose own file still exists
FOLLOWED, PASSED = " [the hand port changes that file]", " [the hand port leaves that file alone]"


def _mark_leads(why: str, hand_changed: set[str]) -> str:
    """Each lead to another file in a flag's reasons, marked with whether the maintainer's port changes that
    file (a lead a maintainer took, or one they passed over): ``summary`` counts both from the rows."""
    return LEAD.sub(lambda m: m.group(0) + (FOLLOWED if m.group(1) in hand_changed else PASSED), why)


def _judge(pristine: bytes | None, ours: bytes | None, hand: bytes | None, old_added: set[bytes]) -> str:
    """Port's file against the hand port's, by a fixed rule (applied to every project alike):

    * ``identical``: byte for byte;
    * ``same code``: the same AST (only whitespace or comments differ, or the order of one block of
      consecutive module-level imports: FlagScale's 0.8.5 hand port moved its ``import contextlib`` line);
    * ``same port + new work``: every line port changed stands in the hand port's file as port has it, and
      the hand port's other edits (lines inserted, or V's own lines replaced or removed) touch only lines
      port left as V has them, and none of the lines they bring (blank ones aside) is a line the old patch
      added to that file: port made every change the old patch makes exactly as the maintainer did, and
      the maintainer also made changes the old patch never had (new work, not a port);
    * ``different``: anything else.
    """
    import difflib

    if ours == hand:
        return "identical"
    if ours is None or hand is None:
        return "different"
    if _squash(ours) == _squash(hand):
        return "same code"
    v, a, b = (pristine or b"").splitlines(), ours.splitlines(), hand.splitlines()
    untouched = {i for tag, _i1, _i2, j1, j2 in difflib.SequenceMatcher(None, v, a, autojunk=False).get_opcodes()
                 if tag == "equal" for i in range(j1, j2)}  # port's lines that are V's own
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if any(i not in untouched for i in range(i1, i2)):
            return "different"  # the hand port changed or dropped a line port changed
        if any(x.strip() and x.strip() in old_added for x in b[j1:j2]):
            return "different"  # the hand port brings a line of the old patch's that port did not place there
    return "same port + new work"


def _inserted(ours: bytes | None, hand: bytes | None) -> str:
    """The lines the hand port has where port's file has others or none, shortened for a table."""
    import difflib

    a, b = (ours or b"").splitlines(), (hand or b"").splitlines()
    lines = [line.decode(errors="replace").strip() for tag, _i1, _i2, j1, j2 in
             difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if tag != "equal" for line in b[j1:j2]]
    lines = [x for x in lines if x]
    return f"{len(lines)} line(s): " + " · ".join(x[:60] for x in lines[:3]) + (" …" if len(lines) > 3 else "")


def _old_added(m: Manifest) -> dict[str, set[bytes]]:
    """Each file's lines (stripped) that the old series adds, from every patch's file for its old release."""
    out: dict[str, set[bytes]] = {}
    for p in m.patches:
        u = walk_from(m, p, None)
        if u is None:
            continue
        for f in p.load(u, m.base).files:
            for h in f.hunks:
                out.setdefault(f.path, set()).update(k.strip() for kind, k in zip(h.kinds, h.keys, strict=True)
                                                     if kind == "+")
    return out


def _flag_kind(path: str, reasons: list[str], hand_changed: bool, gone: bool,
               hand_files: dict[str, bytes | None]) -> str:
    """Whether a flag is on the right file, judged against the hand port alone:

    * the hand port changes the file too: a person had to (``flagged``);
    * the file is gone from V and the hand port has none either: the flag says the code is gone and
      names no place for it, and the maintainer found none there either (``flagged (gone ...)``);
    * a hunk of a gone file was followed here, the file this one is the rename of (it holds at least half
      of the gone file's lines, as ``git diff -M`` counts a rename), and the hand port leaves it alone: the
      code's home, where the maintainer dropped the change (``flagged (the gone file's rename ...)``);
    * a hunk of another file was followed here on weaker evidence (its own lines nearly there, in one part
      of a split) and the hand port leaves this file alone: port named a place the maintainer did not
      take (``flagged (another place ...)``), not the right reason;
    * the file's own hunks conflict (or would not import) and the hand port drops the change
      (``flagged (the maintainer dropped ...)``): refused where the maintainer refused too;
    * the file merged cleanly and only waits for its patch's other conflicts, port says V already carries
      its change (the merge leaves the file as V has it: ``already_in_v``, added 2026-12-02), and the hand
      port leaves it as V has it (``flagged (already in V ...)``): port's word for it is the maintainer's;
    * the file merged cleanly and only waits for its patch's other conflicts, and the hand port drops
      the change (``flagged (held ...)``): nothing was wrong with it, so not counted as the right reason.
    """
    if hand_changed:
        return "flagged"
    held = all(r.startswith("merged cleanly, but its patch conflicts") for r in reasons)
    if gone and hand_files.get(path) is None and not held:  # a held file's flag says nothing about V
        return "flagged (gone from V; the hand port has no such file either)"
    followed = [r for r in reasons if (m := re.match(r"hunk \d+ of (\S+):", r)) and m.group(1) != path]
    if followed and all("(a rename)" in r for r in followed):
        return "flagged (the gone file's rename; the maintainer dropped the change)"
    if followed:
        return "flagged (another place than the maintainer's: the hand port leaves it alone)"
    if held and all(r.endswith("port says V already carries its change") for r in reasons):
        return "flagged (already in V: port says so; the hand port leaves it as V has it)"
    if held:
        return "flagged (held: merged cleanly, waits for its patch; the maintainer dropped the change)"
    return "flagged (the maintainer dropped the change: the hand port leaves it alone)"


def _squash(data: bytes | None) -> object:
    """The code a file holds: its AST when it parses (formatting and comments left out; each run of consecutive
    module-level imports in sorted order), else its lines without trailing whitespace."""
    import ast

    if data is None:
        return None
    try:
        body = [ast.dump(node) for node in ast.parse(data).body]
    except (SyntaxError, ValueError):
        return b"\n".join(line.rstrip() for line in data.splitlines())
    out: list[str] = []
    run: list[str] = []
    for node in body:
        if node.startswith(("Import(", "ImportFrom(")):
            run.append(node)
            continue
        out += sorted(run) + [node]
        run = []
    return out + sorted(run)


def touched(patch: Path) -> list[str]:
    """The repository paths a patch file names on its --- and +++ lines (a file it deletes has only the first)."""
    return list(dict.fromkeys(line[6:].split("\t")[0].strip() for line in patch.read_text(errors="replace").splitlines()
                              if line.startswith(("+++ b/", "--- a/"))))


SLLM = (("0.5.0.post1", "74051d0"), ("0.6.6", "d909012"), ("0.9.0.1", "e0252db"), ("0.11.2", "e06eaa0"))
SLLM_PATCH = "sllm_store/vllm_patch/sllm_load.patch"


def sllm(tmp: Path, gitdir: str) -> list[tuple[str, str, str, str]]:
    """Each release's patch ported to the next release, against the maintainers' patch for it."""
    rows = []
    for (u, cu), (v, cv) in zip(SLLM, SLLM[1:], strict=False):
        root = tmp / f"sllm-{u}"
        (root / "recipes/sllm-load").mkdir(parents=True)
        for version, commit in ((u, cu), (v, cv)):
            text = subprocess.run(["git", "--git-dir", gitdir, "show", f"{commit}:{SLLM_PATCH}"], check=True,
                                  capture_output=True).stdout
            (root / f"recipes/sllm-load/vllm-{version}.patch").write_bytes(text)
        (root / "patches.yaml").write_text(
            f'schema: 1\ntargets:\n  "{u}": {{}}\npatches:\n  - id: sllm-load\n    origin: fork\n'
            f'    releases: "=={u}"\n    patch: recipes/sllm-load/vllm-{u}.patch\n')
        found = compare(root / "patches.yaml", v, [root / f"recipes/sllm-load/vllm-{v}.patch"], root, fuzz=2)
        rows += [(f"{u} -> {v}: {row[0]}", *row[1:]) for row in found]
    return rows


OMNI_AT = "0d409dfc8a13893eed45369351738720eba96d78"
OMNI_DIR = "omni/adaptors/vllm/patches"
OMNI_SCRIPTS = ("infer_engines/bash_install_code_v0.8.3.sh", "infer_engines/bash_install_code.sh")


def omni(tmp: Path, gitdir: str) -> list[tuple[str, str, str, str]]:
    """omni-infer's series for vLLM 0.8.3 (4 patches) ported to 0.9.0, against the maintainers' series for
    0.9.0 (19 patches, made by hand from it and extended), each in the order its install script applies."""
    def show(path: str) -> bytes:
        return subprocess.run(["git", "--git-dir", gitdir, "show", f"{OMNI_AT}:{path}"], check=True,
                              capture_output=True).stdout

    old, new = (re.findall(r"git apply --whitespace=nowarn \$PATCH_ROOT/(\S+\.patch)", show(s).decode())
                for s in OMNI_SCRIPTS)
    entries = []
    for rel in old:
        pid = Path(rel).stem.replace("_", "-")
        (tmp / "recipes" / pid).mkdir(parents=True)
        (tmp / "recipes" / pid / "vllm-0.8.3.patch").write_bytes(show(f"{OMNI_DIR}/{rel}"))
        entries.append(f'  - id: {pid}\n    origin: fork\n    releases: "==0.8.3"\n'
                       f'    patch: recipes/{pid}/vllm-0.8.3.patch\n')
    (tmp / "patches.yaml").write_text('schema: 1\ntargets:\n  "0.8.3": {}\npatches:\n' + "".join(entries))
    hand = []
    for rel in new:
        (tmp / "hand").mkdir(exist_ok=True)
        (tmp / "hand" / rel).write_bytes(show(f"{OMNI_DIR}/{rel}"))
        hand.append(tmp / "hand" / rel)
    return [(f"0.8.3 -> 0.9.0: {row[0]}", *row[1:]) for row in compare(tmp / "patches.yaml", "0.9.0", hand, tmp)]


DYNAMO_DIR = "container/deps/vllm"
# (label, old release, new release, [(commit, old patch path)], [(commit, hand-made patch path)], source), each
# series in the order its build applies it (patch -p1 in the unpacked wheel or site-packages: paths vllm/..., GNU
# patch's default fuzz 2 allowed for both series, as the builds run it); ``source``: the releases' pristine files,
# from the sdist ("pypi") or, where the build patches the installed wheel and it differs, the wheel.
DYNAMO: tuple[tuple[str, str, str, list[tuple[str, str]], list[tuple[str, str]], str], ...] = (
    # "feat: bump vLLM version to v0.8.4 (#690)": the 0.7.2 patch and its hand port, side by side in that commit
    ("kv-disagg", "0.7.2", "0.8.4",
     [("00730fc6aaa43a64d7d4eb916ed0b9a7f104708f", f"{DYNAMO_DIR}/vllm_v0.7.2-dynamo-kv-disagg-patch.patch")],
     [("00730fc6aaa43a64d7d4eb916ed0b9a7f104708f", f"{DYNAMO_DIR}/vllm_v0.8.4-dynamo-kv-disagg-patch.patch")], "pypi"),
    # a backport of upstream PR 40984 for 0.20.1 (one method inlined in v1/engine/core.py; GNU patch takes it
    # only with fuzz 1: its hunk has more leading than trailing context), replaced for 0.21.0 by the PR itself
    ("pr40984", "0.20.1", "0.21.0",
     [("08af65a89a284dda388c069282a7567f46a926fc",
       f"{DYNAMO_DIR}/patches/v0.20.1/0002-pr40984-backport-get-kv-cache-group-metadata.patch")],
     [("b5e4bc86f43631e45a7b76267f091fdb9b2b2f2a",
       f"{DYNAMO_DIR}/patches/v0.21.0/0001-pr40984-emit-kv-cache-metadata.patch")], "pypi"),
    # Nemotron-Ultra: "build: add Nemotron Ultra vLLM runtime support" (6d4653c9, 2 June) wrote the 0.22.0 series;
    # "build(vllm): add Ultra v0.21 fallback overlay" (c590042c, 3 June, the same parent) the 0.21.0 one, whose 0001
    # is a 599-file overlay; the 0.22.0 series as its release branch holds it with 0005 (8c5667de). Both builds run
    # patch --batch --forward -p1 in site-packages; 0.21.0's wheel differs from its sdist in deepseek_v4.py and
    # deepseek_v4_mtp.py, which 0001 patches (its index lines name the wheel's blobs), so both sides read the wheels
    # (0.22.0's wheel and sdist are the same on every path either series touches). 0.22.0's 0005 needs fuzz 1.
    ("ultra", "0.21.0", "0.22.0",
     [("c590042ca665141faa3a77e1d4c4f68ac7b9e15a", f"{DYNAMO_DIR}/patches/v0.21.0/ultra/{name}") for name in (
         "0001-pr42554-ultra-mamba-spec-runtime.patch", "0002-ultra-hybrid-hash-block-kv-events.patch",
         "0003-ultra-mtp-ds-conv-state-layout.patch", "0004-ultra-ssm-nixl-tailfix.patch")],
     [("8c5667de03a671b4ef582103adadfbea7033114b", f"{DYNAMO_DIR}/patches/v0.22.0/ultra/{name}") for name in (
         "0001-pr42554-mamba-prefix-cache-pd-runtime.patch", "0002-ultra-hybrid-hash-block-kv-events.patch",
         "0003-ultra-mtp-ds-conv-state-layout.patch", "0004-ultra-ssm-nixl-tailfix.patch",
         "0005-ultra-ds-tail-copy-i64-offsets.patch")], "wheel"),
)


def dynamo(tmp: Path, sources: list[str]) -> list[tuple[str, str, str, str]]:
    """NVIDIA Dynamo's vLLM patches, each series kept by hand for the next release (``container/deps/vllm``).

    ``sources``, tried in order: a clone's git directory (``git show COMMIT:PATH``; a fork holds the older
    commits), or a folder holding ``COMMIT/PATH`` files (the same files, fetched one by one where a clone is
    too large to bring)."""
    def show(commit: str, path: str) -> bytes:
        for source in sources:
            if (Path(source) / commit / path).is_file():
                return (Path(source) / commit / path).read_bytes()
            got = subprocess.run(["git", "--git-dir", source, "show", f"{commit}:{path}"], capture_output=True)
            if got.returncode == 0:
                return got.stdout
        raise SystemExit(f"{commit}:{path} is in none of {', '.join(sources)}")

    rows = []
    for label, u, v, old, new, source in DYNAMO:
        root = tmp / f"dynamo-{label}"
        entries = []
        for commit, path in old:
            pid = re.sub(r"[^a-z0-9]+", "-", Path(path).stem.lower()).strip("-")
            (root / "recipes" / pid).mkdir(parents=True)
            (root / "recipes" / pid / f"vllm-{u}.patch").write_bytes(show(commit, path))
            entries.append(f'  - id: {pid}\n    origin: fork\n    releases: "=={u}"\n    fuzz: 2\n'
                           f'    patch: recipes/{pid}/vllm-{u}.patch\n')
        (root / "patches.yaml").write_text(f'schema: 1\ntargets:\n  "{u}": {{}}\npatches:\n' + "".join(entries))
        hand = []
        for i, (commit, path) in enumerate(new):
            (root / "hand").mkdir(exist_ok=True)
            (root / "hand" / f"{i:02}-{Path(path).name}").write_bytes(show(commit, path))
            hand.append(root / "hand" / f"{i:02}-{Path(path).name}")
        rows += [(f"{label} {u} -> {v}: {row[0]}", *row[1:])
                 for row in compare(root / "patches.yaml", v, hand, root, fuzz=2, source=source)]
    return rows


# More projects that kept a vLLM patch by hand for two releases, found 2026-12-02 (docs/records/port.md, "More
# projects"): (project, label, old release, new release, the old series, the hand-made one, the fuzz the
# project's build allows (0: `git apply`; 2: `patch -p1`'s default), kind). Each series is [(commit, path)] in
# the order the build applies it; with kind "overlay" each is [(commit, folder)] whose vllm/ holds whole
# modified copies of vLLM files (FlagScale before its .patch files), read as one patch per file against the
# release's pristine file (`diff -u`), and with kind "dir" [(commit, folder)] of per-file *.patch files.
TRACELENS = "examples/custom_workflows/inference_analysis/vllm_patches"
PAIRS: tuple[tuple[str, str, str, str, list[tuple[str, str]], list[tuple[str, str]], int, str], ...] = (
    ("llumnix", "0.12.0 -> 0.18.0", "0.12.0", "0.18.0",
     [("6b8b00d6a322d9c968f4f03f3a8da2732e1740ee", "patches/vllm/vllm_v0.12.0.patch")],
     [("89a00c4f6d7dccd16a583485316046496cda581e", "patches/vllm/vllm_v0.18.0.patch")], 2, "patch"),
    ("psrl", "0.9.0.1 -> 0.10.0", "0.9.0.1", "0.10.0",
     [("cfd17416229319c3dce0568f392c448a03c57cdc", "patch/vllm/v0.9.0.1.patch")],
     [("86fb496cc9f0303284a4b167ebcfb9bec1e6f659", "patch/vllm/v0.10.0.patch")], 0, "patch"),
    ("psrl", "0.10.0 -> 0.10.2", "0.10.0", "0.10.2",
     [("002357f29864689c1bc82c0140fd5ce23479b0e3", "patch/vllm/v0.10.0.patch")],
     [("2bc630a90dedfc611995eabc4d87b4e7cc4bd3f4", "patch/vllm/v0.10.2.patch")], 0, "patch"),
    ("psrl", "0.10.2 -> 0.12.0", "0.10.2", "0.12.0",
     [("3091048be56820bc2047299b9cc4f353b33571a9", "patch/vllm/v0.10.2.patch")],
     [("7307f8971e574a6d226953a2ca3f486ef17f4851", "patch/vllm/v0.12.0.patch")], 0, "patch"),
    ("psrl", "0.12.0 -> 0.18.1", "0.12.0", "0.18.1",
     [("0bcdf9a33c1d31721142dd686631487502b8f1f0", "patch/vllm/v0.12.0.patch")],
     [("8b4ad70e503668a8db3a3c689cdc0d85f0ac60fd", "patch/vllm/v0.18.1.patch")], 0, "patch"),
    ("psrl", "0.18.0 -> 0.22.0", "0.18.0", "0.22.0",
     [("26c8fead5c9687db553516cc0c2556b7f2c42e0d", "patch/vllm/v0.18.0.patch")],
     [("06adb640050bfd570e7f3f31a024aa191fcb8923", "patch/vllm/v0.22.0.patch")], 0, "patch"),
    ("psrl", "0.29.0 -> 0.30.0", "0.29.0", "0.30.0",
     [("22a39a85e48b732d3c09d2f74520549201d98849", "patch/vllm/v0.29.0.patch")],
     [("28a5b5f2d0fd165c65cc3fd7e85e07111d1d5efc", "patch/vllm/v0.30.0.patch")], 0, "patch"),
    ("kvcached", "0.8.4 -> 0.9.2", "0.8.4", "0.9.2",
     [("abfc4d72f8098488d33fd7bed08fc4fc78d4578a", "engine_integration/scripts/kvcached-vllm-v0.8.4.patch")],
     [("c8996d7466f22df246db60d89420dfe24ebb534e", "engine_integration/scripts/kvcached-vllm-v0.9.2.patch")],
     0, "patch"),
    ("aibrix", "0.8.5 -> 0.9.1", "0.8.5", "0.9.1",
     [("e07132d37648bfc2b130f4872ef4c99672802e09",
       "python/aibrix_kvcache/integration/vllm/vllm_v0.8.5-aibrix-kvcache.patch")],
     [("d7c378bbb30e79d5b152758229ea7f39773c6daa",
       "python/aibrix_kvcache/integration/vllm/vllm_v0.9.1-aibrix-kvcache.patch")], 2, "patch"),
    ("aibrix", "0.9.1 -> 0.10.2", "0.9.1", "0.10.2",
     [("de8c48034d3255be94f64a2442b0ad72f92b6223",
       "python/aibrix_kvcache/integration/vllm/vllm_v0.9.1-aibrix-kvcache.patch")],
     [("563a41881b19ebffbc761d1534a99bd8ea994a98",
       "python/aibrix_kvcache/integration/vllm/vllm_v0.10.2-aibrix-kvcache.patch")], 2, "patch"),
    ("aibrix", "0.10.2 -> 0.14.0", "0.10.2", "0.14.0",
     [("7745002694f47bd45e9c061a97dfd00e241396a3",
       "python/aibrix_kvcache/integration/vllm/patches/vllm_v0.10.2-aibrix-kvcache.patch")],
     [("fdbce8cc447c2c792f940056037cb7eb205cf325",
       "python/aibrix_kvcache/integration/vllm/patches/vllm_v0.14.0-aibrix-kvcache.patch")], 2, "patch"),
    ("FlagScale", "0.8.4 -> 0.8.5", "0.8.4", "0.8.5",
     [("495c0a6a8c5b43d12af8af5efe4682f7929d7970", "flagscale/backends/vllm")],
     [("326ecb580b115cc3240b6a264c78330536f1c393", "flagscale/backends/vllm")], 0, "overlay"),
    ("FlagScale", "0.8.5 -> 0.9.1", "0.8.5", "0.9.1",
     [("81bb8725b9387816b3e2992ac842ac7047758d57", "flagscale/backends/vllm")],
     [("4d33f203b4603dee92a0cc6e8c966c903f9456cd", "flagscale/backends/vllm")], 0, "overlay"),
    ("FlagScale", "0.9.1 -> 0.10.0", "0.9.1", "0.10.0",
     [("a81b701dec0ce9b1022a4a43aa041e87cefda804", "flagscale/backends/vllm")],
     [("82945ef57cd48cb0f62728ea445521671f7c35e6", "flagscale/backends/vllm")], 0, "overlay"),
    ("FlagScale", "0.10.0 -> 0.11.0", "0.10.0", "0.11.0",
     [("34a33ea318683c06686cc528ea36991057798b5b", "flagscale/backends/vllm")],
     [("33439e917819540d066275ea78753c9fe0b603cb", "flagscale/backends/vllm")], 0, "dir"),
    ("TorchSpec", "0.19.1 -> 0.22.1", "0.19.1", "0.22.1",
     [("6f21829cd0e333c3b54d9d2706a0b0c8dc10de9d", "patches/vllm/v0.19.1/hybrid_kv_cache.patch"),
      ("6f21829cd0e333c3b54d9d2706a0b0c8dc10de9d", "patches/vllm/v0.19.1/vllm.patch")],
     [("87055aae8b73834f140cadd876b3769e42cfdce4", "patches/vllm/v0.22.1/vllm.patch")], 2, "patch"),
    ("llm-scaler", "0.8.3 -> 0.9.0", "0.8.3", "0.9.0",
     [("fa68e67b555799524570fedb65fa263f54271fe9", "vllm/patches/vllm_for_multi_arc.patch")],
     [("5a58f3fc65e9a3900700d54a6ef4095c3a25fa39", "vllm/patches/vllm_for_multi_arc.patch")], 0, "patch"),
    ("llm-scaler", "0.9.0 -> 0.10.0", "0.9.0", "0.10.0",
     [("8249baf872649f50fa27a09afa4dababdcd9d613", "vllm/patches/vllm_for_multi_arc.patch")],
     [("c04b5f5e9714420b467d4ef60987216f445aa4fb", "vllm/patches/vllm_for_multi_arc.patch")], 0, "patch"),
    ("llm-scaler", "0.10.0 -> 0.11.1", "0.10.0", "0.11.1",
     [("d2183e0bf8d99cc866971b7261dd1c11d6fb79c7", "vllm/patches/vllm_for_multi_arc.patch")],
     [("0560e618e6570cde4d01849fed784290714bc409", "vllm/patches/vllm_for_multi_arc.patch")], 0, "patch"),
    ("llm-scaler", "0.11.1 -> 0.14.0", "0.11.1", "0.14.0",
     [("0560e618e6570cde4d01849fed784290714bc409", "vllm/patches/vllm_for_multi_arc.patch")],
     [("4a65586f00ff584f8833fb89df377b81fa80d00c", "vllm/patches/vllm_for_multi_arc.patch")], 0, "patch"),
    ("llm-scaler", "0.14.0 -> 0.21.0", "0.14.0", "0.21.0",
     [("0a8556449aba3d6b2fc9b53794ed579396b785cf", "vllm/patches/vllm_for_multi_arc.patch")],
     [("e9f2496614eb0dd3f125a5b418527aaa5970bc8c", "vllm/patches/vllm_for_multi_arc.patch")], 0, "patch"),
    # found 2026-12-02 (second pass): TraceLens's profiling config patch, remade for each release (the pairs
    # where the new file was made while the old one stood in the tree: PRs #670, #790, #933; each old file
    # as of the new one's parent commit); gpustack/runner's two fixes, rewritten by hand for 0.27.1 (its
    # PR #251 says how); UCM's sparse-attention adaptation, redone on 0.11.0. Not FlexKV's connector
    # (0.10.1.1 -> "0.14.1 and up"): its new patch applies to 0.14.1 only with fuzz, which the project's
    # `git apply` does not allow
    ("TraceLens", "0.20.0 -> 0.21.0", "0.20.0", "0.21.0",
     [("cc6a1652e43cc04317e3e77cd38550430c717218", f"{TRACELENS}/config_vllm_v0.20.0.patch")],
     [("0f7e8e419ec8dfdb8c124e318e253a715fb92146", f"{TRACELENS}/config_vllm_v0.21.0.patch")], 0, "patch"),
    ("TraceLens", "0.21.0 -> 0.22.0", "0.21.0", "0.22.0",
     [("3d6d26b45040a8560bfcd7f6888a3841eb44a832", f"{TRACELENS}/config_vllm_v0.21.0.patch")],
     [("4413036c2bbae9ad9cf4b67252dd6a06c9222823", f"{TRACELENS}/config_vllm_v0.22.0.patch")], 0, "patch"),
    ("TraceLens", "0.24.0 -> 0.25.0", "0.24.0", "0.25.0",
     [("84efff1e797f3c6700f34ae1479de480b9be296f", f"{TRACELENS}/config_vllm_v0.24.0.patch")],
     [("42d62edff8d656bfa3a19848d86d952bed4456ef", f"{TRACELENS}/config_vllm_v0.25.0.patch")], 0, "patch"),
    ("gpustack-runner", "0.25.1 -> 0.27.1", "0.25.1", "0.27.1",
     [("d6645638297fe0112d249e211d8902fa4f0e7463", "pack/cuda/patches/vllm/001_wrong_dp_ray.patch"),
      ("d6645638297fe0112d249e211d8902fa4f0e7463", "pack/cuda/patches/vllm/002_shm_broadcast_port_race.patch")],
     [("e5292b1cc893bbcda427f4fe88ebbea7d2df35b8", "pack/cuda/patches/vllm/001_wrong_dp_ray.patch"),
      ("e5292b1cc893bbcda427f4fe88ebbea7d2df35b8", "pack/cuda/patches/vllm/002_shm_broadcast_port_race.patch")],
     2, "patch"),
    ("ucm", "0.9.2 -> 0.11.0", "0.9.2", "0.11.0",
     [("bf2e529884a2f92a843183e6d4a29bb9407d4009", "ucm/integration/vllm/patch/0.9.2/vllm-adapt-sparse.patch")],
     [("f5261e9f18d2782eb7b9e29014ef89fb0919cc10", "ucm/integration/vllm/patch/0.11.0/vllm-adapt-sparse.patch")],
     0, "patch"),
    ("ucm", "0.9.2 -> 0.11.0 rerope", "0.9.2", "0.11.0",  # its PR #686; each UCM patch is applied alone
     [("6cac4da702169019022a13e6d75a045bbae4d8c2", "ucm/integration/vllm/patch/0.9.2/vllm-adapt-rerope.patch")],
     [("4695d36f2bb9503bc2b928e8e9fc44f1fb16ca15", "ucm/integration/vllm/patch/0.11.0/vllm-adapt-rerope.patch")],
     0, "patch"),
    ("ipex-llm", "0.6.6.post1 -> 0.8.3", "0.6.6.post1", "0.8.3",
     [("73198d5b80dd584de58fc3625ca0cdf78b4f8e42", "docker/llm/serving/xpu/docker/vllm_for_multi_arc.patch")],
     [("51b41faad76da6757195670bf9e5f946cac6460c", "docker/llm/serving/xpu/docker/vllm_for_multi_arc.patch")],
     0, "patch"),
)


def _series(files: Path, release: str, entries: list[tuple[str, str]], kind: str, out: Path) -> list[Path]:
    """The patch files a series is, in order, written under ``out``: the files themselves, a folder's *.patch
    files by path, or an overlay's copies each made a patch against the release's pristine file."""
    out.mkdir(parents=True, exist_ok=True)
    made: list[Path] = []
    for commit, path in entries:
        at = files / commit / path
        if not at.exists():
            raise SystemExit(f"{at} is missing: bring {commit}:{path} from the project (docs/records/port.md)")
        if kind == "patch":
            made.append(out / f"{len(made):03}-{at.name}")
            made[-1].write_bytes(at.read_bytes())
            continue
        if kind == "dir":
            for f in sorted(at.rglob("*.patch")):
                made.append(out / f"{len(made):03}-{f.name}")
                made[-1].write_bytes(f.read_bytes())
            continue
        src = open_source("pypi", release, cache=Cache())
        for f in sorted(x for x in (at / "vllm").rglob("*") if x.is_file()):
            rel = f.relative_to(at).as_posix()
            before = out / "pristine" / rel
            before.parent.mkdir(parents=True, exist_ok=True)
            data = src.read(rel) if src.covers(rel) else None
            before.write_bytes(data or b"")
            diff = subprocess.run(["diff", "-u", "--label", f"a/{rel}" if data is not None else "/dev/null",
                                   "--label", f"b/{rel}", str(before), str(f)], capture_output=True)
            if diff.returncode == 1:
                made.append(out / f"{len(made):03}-{f.name}.patch")
                made[-1].write_bytes(diff.stdout)
            elif diff.returncode != 0:
                raise SystemExit(diff.stderr.decode())
    return made


def pairs(tmp: Path, files: str, only: list[str]) -> list[tuple[str, str, str, str]]:
    """Each pair of PAIRS (those of the projects named, or all): the old series, one patch per file, ported to
    the new release, against the hand-made series. ``files``: a folder of ``COMMIT/PATH`` files, or of
    ``PROJECT/COMMIT/PATH``."""
    rows = []
    for project, label, u, v, old, new, fuzz, kind in PAIRS:
        if only and project not in only:
            continue
        root = tmp / re.sub(r"[^A-Za-z0-9.]+", "-", f"{project}-{label}")
        base = Path(files) / project if (Path(files) / project).is_dir() else Path(files)
        entries = []
        for i, patch in enumerate(_series(base, u, old, kind, root / "old")):
            pid = f"p{i:03}-" + re.sub(r"[^a-z0-9]+", "-", patch.name[4:].lower()).strip("-")[:60]
            (root / "recipes" / pid).mkdir(parents=True)
            (root / "recipes" / pid / f"vllm-{u}.patch").write_bytes(patch.read_bytes())
            entries.append(f'  - id: {pid}\n    origin: fork\n    releases: "=={u}"\n'
                           + (f"    fuzz: {fuzz}\n" if fuzz else "") + f"    patch: recipes/{pid}/vllm-{u}.patch\n")
        (root / "patches.yaml").write_text(f'schema: 1\ntargets:\n  "{u}": {{}}\npatches:\n' + "".join(entries))
        hand = _series(base, v, new, kind, root / "hand")
        rows += [(f"{project} {label}: {row[0]}", *row[1:])
                 for row in compare(root / "patches.yaml", v, hand, root, fuzz=fuzz)]
    return rows


def this_repo(tmp: Path) -> list[tuple[str, str, str, str]]:
    """This repository's series as it stood before the hand-made 0.29 recipes, ported to 0.29.0."""
    shutil.copytree(REPO / "recipes", tmp / "recipes")
    for f in (tmp / "recipes").glob("*/vllm-0.29.patch"):
        f.unlink()
    text = (REPO / "patches.yaml").read_text()
    text = re.sub(r'  "0\.(29|30)\.0": \{image: "[^"]*"\}\n', "", text)
    text = re.sub(r'\n      ">=0.29,<0.30": recipes/[a-z-]+/vllm-0.29.patch', "", text)
    (tmp / "patches.yaml").write_text(text)
    hand = [REPO / "recipes/offload-finished-watermark/fix.patch",
            REPO / "recipes/offload-recurrent-load-boundary/vllm-0.29.patch",
            REPO / "recipes/offload-mtp-eagle-serve/vllm-0.29.patch"]
    return compare(tmp / "patches.yaml", "0.29.0", hand, tmp)


def _only_held(why: str) -> bool:
    """Whether a flag's reasons are all "merged cleanly, but its patch conflicts elsewhere" (compare's words; a
    review note on the file, which ``compare`` puts after them, is no reason)."""
    why = why.split("; review: ")[0]
    return all(r.startswith("merged cleanly, but its patch conflicts") for r in why.split("; ")
               if not r.startswith("port says V already carries"))


def summary(rows: list[tuple[str, str, str, str]]) -> dict[str, int]:
    """The counts the docs' tables give, from the rows alone (``flagged`` counts only flags on the right file:
    not the ``held`` ones, nor those at another place)."""
    def n(prefix: str) -> int:
        return sum(1 for r in rows if r[1].startswith(prefix))

    held = [r for r in rows if r[1].startswith("flagged (held")]
    out = {"files": len(rows), "hand-only": n("hand-only"), "identical": n("identical"), "same code": n("same code"),
           "same port + new work": n("same port + new work"),
           "flagged": n("flagged") - n("flagged (held") - n("flagged (another place"),
           "another place": n("flagged (another place"), "held": len(held), "different": n("different"),
           "review notes": sum(1 for r in rows if "review: " in r[2]),
           # a copy carried as it is, or waiting in a conflicting patch's workspace, that the hand port keeps as
           # port has it
           "review notes the maintainer did not need": n("identical (a review note") + sum(
               1 for r in rows if r[1].startswith("flagged") and "review: " in r[2] and r[3] in ("identical",
                                                                                                  "same code"))}
    out["handled"] = out["files"] - out["hand-only"]
    out["right"] = out["identical"] + out["same code"] + out["flagged"]
    for verdict in ("identical", "same code", "same port + new work", "different"):
        out[f"held, merge {verdict}"] = sum(1 for r in held if r[3] == verdict)
    # Strictly: a file flagged only because its patch conflicts elsewhere (the hand port changed it too, so the
    # flag counts as right above) counts here only when its waiting merge is the hand port's (identical or the
    # same code); one whose merge cannot be judged (a later patch changes the file too) counts as not right.
    only_held = [r for r in rows if r[1] == "flagged" and _only_held(r[2])]
    out["right, strict"] = out["right"] - sum(1 for r in only_held if r[3] not in ("identical", "same code"))
    out["right, wider"] = (out["right"] + out["same port + new work"] + out["held, merge identical"]
                           + out["held, merge same code"])
    out["leads"] = sum(len(LEAD.findall(r[2])) for r in rows)
    out["leads to a file the hand port changes"] = sum(r[2].count(FOLLOWED) for r in rows)
    out["waiting merges"] = sum(1 for r in rows if r[3])
    for verdict in ("identical", "same code", "same port + new work", "different"):
        out[f"waiting, merge {verdict}"] = sum(1 for r in rows if r[3] == verdict)
    return out


def main() -> int:
    which = sys.argv[1] if len(sys.argv) > 1 else "this-repo"
    with tempfile.TemporaryDirectory(prefix="handports-") as tmp:
        runs = {"sllm": lambda: sllm(Path(tmp), sys.argv[2]), "omni-infer": lambda: omni(Path(tmp), sys.argv[2]),
                "dynamo": lambda: dynamo(Path(tmp), sys.argv[2:]),
                "pairs": lambda: pairs(Path(tmp), sys.argv[2], sys.argv[3:])}
        rows = runs.get(which, lambda: this_repo(Path(tmp)))()
    print("| file | port vs hand port | why | its waiting merge vs the hand port |\n| --- | --- | --- | --- |")
    for path, verdict, why, merge in rows:
        print(f"| {path} | {verdict} | {why.replace('|', '/')[:300]} | {merge} |")
    c = summary(rows)
    print("\n" + ", ".join(f"{k}: {v}" for k, v in c.items()))
    h = max(c["handled"], 1)
    print(f"{c['right']} of {c['handled']} files port handled are identical, the same code or flagged on the right "
          f"file ({c['right'] / h:.0%}); with the {c['same port + new work']} 'same port + new work' files, "
          f"{c['right'] + c['same port + new work']} ({(c['right'] + c['same port + new work']) / h:.0%}); with "
          f"those and the held files whose waiting merge is identical or the same code as the hand port's, "
          f"{c['right, wider']} ({c['right, wider'] / h:.0%}); "
          f"strictly (a file flagged only for its patch's other conflicts counts when its waiting merge is the "
          f"hand port's), {c['right, strict']} ({c['right, strict'] / h:.0%}); "
          f"{c['another place']} flagged at another place than the maintainer's; {c['held']} held (clean, waiting "
          f"for their patch) where the maintainer dropped the change; {c['different']} accepted yet different; "
          f"{c['review notes']} review note(s) on copies, {c['review notes the maintainer did not need']} on a copy "
          f"the maintainer kept as it is; {c['leads']} lead(s) to another file for a hunk whose file still exists, "
          f"{c['leads to a file the hand port changes']} to a file the hand port changes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
