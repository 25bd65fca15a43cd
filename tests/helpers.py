"""Small builders shared by the tests: patch text, manifests, trees."""

from __future__ import annotations

import difflib
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from patchset.core.patchfile import PatchFile, parse_patch


def udiff(path: str, before: str, after: str, n: int = 3) -> str:
    """A git-style unified diff of one file, as upstream PRs are written."""
    out = [f"diff --git a/{path} b/{path}\n"]
    body = list(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                     f"a/{path}", f"b/{path}", n=n))
    for line in body:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def patch_of(text: str, name: str = "t.patch") -> PatchFile:
    return parse_patch(text.encode(), name=name)


def lines(n: int, prefix: str = "line") -> str:
    return "".join(f"{prefix} {i}\n" for i in range(1, n + 1))


def write_manifest(root: Path, body: str) -> Path:
    path = root / "patches.yaml"
    path.write_text(textwrap.dedent(body).lstrip())
    schema_agrees(path)
    return path


def load_yaml(text: str) -> object:
    """Plain data, read as the manifest loader reads it (YAML 1.2, ruamel)."""
    from ruamel.yaml import YAML

    return YAML(typ="safe", pure=True).load(text)


def schema_agrees(path: Path) -> None:
    """Every fixture manifest the loader accepts, the shipped JSON Schema accepts too.

    Checked where fixtures are written, so no test manifest escapes it. Manifests the loader
    refuses (bad-input tests, patch files not written yet) are not the schema's business.
    """
    import jsonschema

    from patchset.core.manifest_load import load_manifest
    from patchset.core.schema import manifest_schema
    from patchset.errors import PatchsetError

    try:
        load_manifest(path)
    except PatchsetError:
        return
    jsonschema.validate(load_yaml(path.read_text()), manifest_schema())


def write_patch(root: Path, rel: str, text: str, header: str = "Description: test patch\n---\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + text)
    return path


#: One patch "fix" (recipes/fix/fix.patch) on target 0.29.0, proven by tests/test_sched.py.
ONE_PATCH_MANIFEST = textwrap.dedent("""\
    schema: 1
    targets:
      "0.29.0": {}
    patches:
      - id: fix
        releases: ">=0.28.0"
        patch: recipes/fix/fix.patch
        tests: ["tests/test_sched.py"]
    """)


SCRATCH_MOD = "vllm/sched.py"
SCRATCH_PRISTINE = "".join(f"line{i} = {i}\n" for i in range(1, 31))
SCRATCH_FIXED = SCRATCH_PRISTINE.replace("line10 = 10\n", "line10 = 10 - 1\n")
#: ``--source`` for a scratch fork: its pristine releases are plain folders beside the manifest.
SCRATCH_SOURCE = "dir:trees/{version}"


def scratch_fork(root: Path) -> Path:
    """A fork's git repository carrying one fix on 0.29.0 (upstream in 0.30.0), with its two pristine
    releases as folders under trees/ (``--source dir:trees/{version}``): a check needs no network."""
    import subprocess

    for v, text in (("0.29.0", SCRATCH_PRISTINE), ("0.30.0", SCRATCH_FIXED)):
        (root / "trees" / v / "vllm").mkdir(parents=True)
        (root / "trees" / v / SCRATCH_MOD).write_text(text)
        (root / "trees" / v / "vllm" / "__init__.py").write_text("")
    write_patch(root, "recipes/fix/fix.patch", udiff(SCRATCH_MOD, SCRATCH_PRISTINE, SCRATCH_FIXED))
    write_manifest(root, f"""
        schema: 1
        targets: {{"0.29.0": {{}}, "0.30.0": {{}}}}
        patches:
          - id: fix
            releases: ">=0.29.0,<0.30.0"
            patch: recipes/fix/fix.patch
            present: {{file: {SCRATCH_MOD}, contains: "line10 = 10 - 1"}}
        """)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q", str(root)], check=True)
    subprocess.run([*git, "-C", str(root), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(root), "commit", "-q", "-m", "fork"], check=True)
    return root


def stable(doc: object, volatile: set[str]) -> object:
    """A JSON document less the keys whose values vary from run to run (timings, ids), at any depth."""
    if isinstance(doc, dict):
        return {k: stable(v, volatile) for k, v in doc.items() if k not in volatile}
    if isinstance(doc, list):
        return [stable(v, volatile) for v in doc]
    return doc


#: The tests that compare with GNU patch skip where it is not installed (CI installs it).
needs_patch = pytest.mark.skipif(shutil.which("patch") is None, reason="GNU patch is not installed")


def gnu_patch(tmp_path: Path, files: dict[str, bytes], diff: str, *extra: str) -> tuple[int, str, dict]:
    work = tmp_path / "gnu"
    shutil.rmtree(work, ignore_errors=True)
    for name, data in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_bytes(data)
    work.mkdir(exist_ok=True)
    (tmp_path / "x.patch").write_text(diff)
    r = subprocess.run(["patch", "-p1", "--batch", "--no-backup-if-mismatch", "-i", str(tmp_path / "x.patch"),
                        *extra], cwd=work, capture_output=True, text=True)
    result = {str(p.relative_to(work)): p.read_bytes() for p in work.rglob("*") if p.is_file()
              and not p.name.endswith(".rej")}
    return r.returncode, r.stdout + r.stderr, result


def git_apply(tmp_path: Path, files: dict[str, bytes], diff: str, *extra: str) -> tuple[int, str, dict]:
    work = tmp_path / "git"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    for name, data in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_bytes(data)
    (tmp_path / "x.patch").write_text(diff)
    r = subprocess.run(["git", "apply", *extra, str(tmp_path / "x.patch")], cwd=work, capture_output=True, text=True)
    result = {str(p.relative_to(work)): p.read_bytes() for p in work.rglob("*") if p.is_file()
              and ".git" not in p.parts}
    return r.returncode, r.stdout + r.stderr, result
