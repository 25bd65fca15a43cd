"""Port against hand ports, file by file: identical · flagged · different.

A maintainer's own port of a series to a newer release is the reference: ``port`` merges the
old series onto the new release's pristine files, the hand-made patch files are applied to the same
files with GNU patch, and every file either touches is compared.

* identical: port's file is the hand port's, byte for byte;
* flagged: port refused it (a conflict, with its reason: a merge conflict, a moved file, a merge
  that would not import) — a person looks at it, as the hand port did;
* same code: port's file parses to the same AST as the hand port's (only whitespace differs);
* different: port accepted a file that is not the hand port's. The goal is none;
* hand-only: the hand port changes a file the old patch never touched (new work, not a port).

    python bench/handports.py this-repo       # this repository's 0.28 recipes -> the hand-made 0.29 ones
    python bench/handports.py sllm GITDIR     # a public project's one vLLM patch, kept by hand for
                                              # 0.5.0.post1 -> 0.6.6 -> 0.9.0.1 -> 0.11.2 (GITDIR: its clone)

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
from patchset.core.manifest_load import load_manifest
from patchset.sources.sdist import SdistSource
from patchset.verbs.port import PortStatus, prepare, step, walk_from

REPO = Path(__file__).resolve().parent.parent


def gnu(release: str, patches: list[Path], paths: list[str], tmp: Path, fuzz: int = 0) -> dict[str, bytes | None]:
    """The release's files with the hand-made patches applied by GNU patch (-F0 unless told)."""
    src = SdistSource("vllm", release, Cache())
    tree = tmp / f"hand-{release}"
    for path in paths:
        if (src.root / path).is_file():
            (tree / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src.root / path, tree / path)
    for p in patches:
        tree.mkdir(parents=True, exist_ok=True)
        subprocess.run(["patch", "-p1", f"-F{fuzz}", "-s", "-i", str(p)], cwd=tree, check=True)
    return {path: (tree / path).read_bytes() if (tree / path).is_file() else None for path in paths}


def compare(manifest: Path, to: str, hand: list[Path], tmp: Path, fuzz: int = 0) -> list[tuple[str, str, str]]:
    """(file, verdict, why) for every file port or the hand port changes."""
    m = load_manifest(manifest)
    walk = prepare(m, to, None, "pypi")
    flagged: dict[str, list[str]] = {}  # file -> its own conflicts' reasons
    merged: dict[str, bytes | None] = {}  # what port made of each file, clean or not
    waiting: dict[str, bytes | None] = {}  # clean files of conflicting patches that no later patch changes
    for p in m.patches:
        if walk_from(m, p, None) is None:
            continue
        before = dict(walk.ours)
        r = step(m, walk, p, None)
        for c in r.conflicts:
            flagged.setdefault(c.file, []).append(f"{c.message}" + (f" (line {c.line})" if c.line else ""))
        for f in list(waiting):
            if f in r.files:
                waiting.pop(f)  # a later patch changes it too: the workspace copy is not the final file
        if r.result == PortStatus.CONFLICT:  # a clean file of a conflicting patch waits in the workspace
            elsewhere = ", ".join(sorted({c.file for c in r.conflicts}))
            for f in r.files:
                if f not in flagged:
                    flagged[f] = [f"merged cleanly, but its patch conflicts in {elsewhere}: it waits in the workspace"]
                    waiting[f] = walk.workspaces[p.id][1].get(f) if p.id in walk.workspaces else None
        if r.result == PortStatus.CONFLICT and p.id in walk.workspaces:
            merged.update(walk.workspaces[p.id][1])
        merged.update({k: v for k, v in walk.ours.items() if v != before.get(k)})
    pristine = walk.pristine
    paths = set(merged) | set(flagged) | set(pristine) | {f for h in hand for f in touched(h)}
    hand_files = gnu(to, hand, sorted(paths), tmp, fuzz)
    hand_changed = {k for k, v in hand_files.items() if v != pristine.get(k, walk.read(k))}
    rows = []
    for path in sorted({k for k, v in merged.items() if v != pristine.get(k)} | hand_changed | set(flagged)):
        if path in flagged:
            why = "; ".join(flagged[path])
            if path in waiting:
                same = waiting[path] == hand_files.get(path)
                why += " (that merge is " + ("identical to" if same else "the same code as" if _squash(
                    waiting[path]) == _squash(hand_files.get(path)) else "different from") + " the hand port)"
            rows.append((path, "flagged" if path in hand_changed else "flagged (the hand port leaves it alone)", why))
        elif merged.get(path, pristine.get(path)) == hand_files.get(path):
            rows.append((path, "identical", "merged cleanly"))
        elif path not in merged:
            rows.append((path, "hand-only", "the hand port extends the patch to a file the old one never touched"))
        elif _squash(merged[path]) == _squash(hand_files.get(path)):
            rows.append((path, "same code", "merged cleanly; the same AST as the hand port (whitespace differs)"))
        else:
            rows.append((path, "different", "merged cleanly, differs from the hand port"))
    return rows


def _squash(data: bytes | None) -> object:
    """The code a file holds: its AST when it parses (formatting and comments left out), else its lines
    without trailing whitespace."""
    import ast

    if data is None:
        return None
    try:
        return ast.dump(ast.parse(data))
    except (SyntaxError, ValueError):
        return b"\n".join(line.rstrip() for line in data.splitlines())


def touched(patch: Path) -> list[str]:
    """The repository paths a patch file names on its +++ lines."""
    return [line[6:].split("\t")[0].strip() for line in patch.read_text(errors="replace").splitlines()
            if line.startswith("+++ b/")]


SLLM = (("0.5.0.post1", "74051d0"), ("0.6.6", "d909012"), ("0.9.0.1", "e0252db"), ("0.11.2", "e06eaa0"))
SLLM_PATCH = "sllm_store/vllm_patch/sllm_load.patch"


def sllm(tmp: Path, gitdir: str) -> list[tuple[str, str, str]]:
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
        rows += [(f"{u} -> {v}: {path}", verdict, why) for path, verdict, why in found]
    return rows


def this_repo(tmp: Path) -> list[tuple[str, str, str]]:
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


def main() -> int:
    which = sys.argv[1] if len(sys.argv) > 1 else "this-repo"
    with tempfile.TemporaryDirectory(prefix="handports-") as tmp:
        rows = sllm(Path(tmp), sys.argv[2]) if which == "sllm" else this_repo(Path(tmp))
    print("| file | port vs hand port | why |\n| --- | --- | --- |")
    for path, verdict, why in rows:
        print(f"| {path} | {verdict} | {why.replace('|', '/')[:300]} |")
    counts = {v: sum(1 for r in rows if r[1].split(" (")[0] == v)
              for v in ("identical", "same code", "flagged", "different", "hand-only")}
    print("\n" + ", ".join(f"{n} {k}" for k, n in counts.items()) + f" of {len(rows)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
