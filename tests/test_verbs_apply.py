"""apply: all or nothing on a real tree, idempotent, no stale bytecode."""

from __future__ import annotations

import compileall
import hashlib
import json
import os
import py_compile
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import udiff, write_manifest, write_patch

from patchset.core.manifest_load import load_manifest
from patchset.errors import PatchFileError
from patchset.verbs.apply import ApplyError, apply_series

MOD = "vllm/core/sched.py"
TEST = "tests/test_sequence.py"  # a file of the real 0.29.0 (its sdist lists what is beside the package)
PRISTINE = "".join(f"x{i} = {i}\n" for i in range(1, 41))
PATCHED = PRISTINE.replace("x10 = 10\n", "x10 = 10 - 1\n")
TEST_BEFORE = "def test_x():\n    assert 1 + 1 == 2\n"
TEST_AFTER = TEST_BEFORE + "\n\ndef test_y():\n    pass\n"


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def make_tree(root: Path) -> Path:
    (root / "vllm" / "core").mkdir(parents=True)
    (root / "vllm" / "__init__.py").write_text("")
    (root / "vllm" / "core" / "__init__.py").write_text("")
    (root / MOD).write_text(PRISTINE)
    (root / "tests").mkdir()
    (root / TEST).write_text(TEST_BEFORE)
    (root / "pyproject.toml").write_text("[project]\nname = 'vllm'\n")  # an upstream tree: tests/ is its own
    return root


def make_manifest(tmp_path: Path, second_broken: bool = False) -> Path:
    write_patch(tmp_path, "recipes/fix/fix.patch", udiff(MOD, PRISTINE, PATCHED) + udiff(TEST, TEST_BEFORE, TEST_AFTER))
    other_before = PATCHED if not second_broken else PATCHED.replace("x30 = 30", "x30 = 31")
    write_patch(tmp_path, "recipes/more/fix.patch",
                udiff(MOD, other_before, other_before.replace("x30 = 3", "x30 = 4")))
    return write_manifest(tmp_path, """
        schema: 1
        targets: {"0.29.0": {}}
        patches:
          - id: fix
            releases: "==0.29.0"
            patch: recipes/fix/fix.patch
          - id: more
            releases: "==0.29.0"
            patch: recipes/more/fix.patch
        """)


def test_apply_writes_the_fix_and_a_provenance_record(tmp_path):
    root = make_tree(tmp_path / "tree")
    report = apply_series(load_manifest(make_manifest(tmp_path)), "0.29.0", root)
    assert report.ok and not report.already
    assert (root / MOD).read_text() == PATCHED.replace("x30 = 3", "x30 = 4")
    assert (root / TEST).read_text() == TEST_AFTER
    record = json.loads((root / "vllm" / ".patchset-provenance.json").read_text())
    assert record["vllm"] == "0.29.0"
    assert [p["id"] for p in record["patches"]] == ["fix", "more"]
    assert record["files"][MOD]["sha256"] == hashlib.sha256((root / MOD).read_bytes()).hexdigest()
    assert record["files"][MOD]["pristine_sha256"] == hashlib.sha256(PRISTINE.encode()).hexdigest()


def test_applying_twice_is_a_no_op_with_a_message(tmp_path):
    root = make_tree(tmp_path / "tree")
    m = load_manifest(make_manifest(tmp_path))
    apply_series(m, "0.29.0", root)
    before = snapshot(root)
    again = apply_series(m, "0.29.0", root)
    assert again.already and "already applied" in again.message
    assert snapshot(root) == before


def test_one_broken_hunk_leaves_the_tree_byte_identical(tmp_path):
    root = make_tree(tmp_path / "tree")
    before = snapshot(root)
    m = load_manifest(make_manifest(tmp_path, second_broken=True))
    with pytest.raises(ApplyError) as e:
        apply_series(m, "0.29.0", root)
    assert "patch more failed" in str(e.value) and "recipes/more/fix.patch:" in str(e.value)
    assert "hunk 1" in str(e.value)
    assert snapshot(root) == before


def test_a_write_failing_midway_puts_back_what_was_written(tmp_path, monkeypatch):
    root = make_tree(tmp_path / "tree")
    before = snapshot(root)
    from patchset import journal

    real = os.replace
    calls = []

    def flaky(src, dst):
        calls.append(dst)
        if len(calls) == 3:  # the journal, the first file, then the second file fails
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(journal.os, "replace", flaky)
    with pytest.raises(OSError):
        apply_series(load_manifest(make_manifest(tmp_path)), "0.29.0", root)
    monkeypatch.setattr(journal.os, "replace", real)
    assert len(calls) > 3  # the rollback renamed the first file back
    assert snapshot(root) == before


def test_stale_bytecode_is_removed_and_rebuilt_hash_checked(tmp_path):
    root = make_tree(tmp_path / "tree")
    py_compile.compile(str(root / MOD), cfile=str(root / "vllm/core/__pycache__/sched.cpython-399.pyc"))
    stale = root / "vllm/core/__pycache__/sched.cpython-399.pyc"
    assert stale.exists()
    apply_series(load_manifest(make_manifest(tmp_path)), "0.29.0", root)
    assert not stale.exists()
    fresh = list((root / "vllm/core/__pycache__").glob("sched.*.pyc"))
    assert len(fresh) == 1
    flags = int.from_bytes(fresh[0].read_bytes()[4:8], "little")
    assert flags & 0b11 == 0b11  # hash-based and checked: an old pyc can never shadow the source


def test_a_patch_that_breaks_python_syntax_writes_nothing(tmp_path):
    root = make_tree(tmp_path / "tree")
    before = snapshot(root)
    write_patch(tmp_path, "recipes/fix/fix.patch", udiff(MOD, PRISTINE, PRISTINE.replace("x10 = 10", "x10 = (")))
    manifest = write_manifest(tmp_path, """
        schema: 1
        targets: {"0.29.0": {}}
        patches:
          - {id: fix, releases: "==0.29.0", patch: recipes/fix/fix.patch}
        """)
    with pytest.raises(ApplyError, match="does not compile"):
        apply_series(load_manifest(manifest), "0.29.0", root)
    assert snapshot(root) == before


def test_site_packages_without_tests_applies_the_package_part(tmp_path):
    root = make_tree(tmp_path / "site")
    (root / TEST).unlink()
    (root / "tests").rmdir()
    (root / "pyproject.toml").unlink()  # site-packages: nothing of the upstream tree beside the package
    report = apply_series(load_manifest(make_manifest(tmp_path)), "0.29.0", root)
    assert report.skipped == [TEST]
    assert "x10 = 10 - 1" in (root / MOD).read_text()


def test_an_upstream_tree_without_its_tests_is_refused_not_skipped(tmp_path):
    root = make_tree(tmp_path / "checkout")  # pyproject.toml: an upstream tree, which holds tests/
    (root / TEST).unlink()
    (root / "tests").rmdir()
    before = snapshot(root)
    with pytest.raises(ApplyError, match=f"{TEST}: not in dir:"):
        apply_series(load_manifest(make_manifest(tmp_path)), "0.29.0", root)
    assert snapshot(root) == before


def test_package_layout_the_vllm_folder_itself(tmp_path):
    root = make_tree(tmp_path / "site")
    report = apply_series(load_manifest(make_manifest(tmp_path)), "0.29.0", root / "vllm")
    assert report.ok and "x10 = 10 - 1" in (root / MOD).read_text()
    assert (root / TEST).read_text() == TEST_BEFORE  # outside the package: not touched


def test_wrong_release_in_the_tree_is_refused(tmp_path):
    root = make_tree(tmp_path / "site")
    (root / "vllm" / "_version.py").write_text("__version__ = version = '0.28.0'\n")
    with pytest.raises(ApplyError, match=r"holds vLLM 0.28.0 \(vllm/_version.py\), not 0.29.0"):
        apply_series(load_manifest(make_manifest(tmp_path)), "0.29.0", root)


def test_a_tree_changed_after_apply_is_reported(tmp_path):
    root = make_tree(tmp_path / "tree")
    m = load_manifest(make_manifest(tmp_path))
    apply_series(m, "0.29.0", root)
    (root / MOD).write_text("tampered\n")
    with pytest.raises(ApplyError, match="differs from what the provenance record says"):
        apply_series(m, "0.29.0", root)


def test_file_modes_survive(tmp_path):
    root = make_tree(tmp_path / "tree")
    os.chmod(root / MOD, 0o755)
    apply_series(load_manifest(make_manifest(tmp_path)), "0.29.0", root)
    assert (root / MOD).stat().st_mode & 0o777 == 0o755


MODES = ("diff --git a/vllm/core/sched.py b/vllm/core/sched.py\nold mode 100644\nnew mode 100755\n"
         "diff --git a/vllm/core/__init__.py b/vllm/core/__init__.py\nold mode 100644\nnew mode 100755\n"
         "diff --git a/vllm/tool.sh b/vllm/tool.sh\nnew file mode 100755\n--- /dev/null\n+++ b/vllm/tool.sh\n"
         "@@ -0,0 +1,2 @@\n+#!/bin/sh\n+echo fork\n")


def with_patch(tmp_path: Path, text: str) -> Path:
    """make_manifest's series plus a third patch of git headers."""
    make_manifest(tmp_path)
    write_patch(tmp_path, "recipes/modes/modes.patch", text)
    manifest = tmp_path / "patches.yaml"
    manifest.write_text(manifest.read_text() + "  - id: modes\n    releases: \"==0.29.0\"\n"
                        "    patch: recipes/modes/modes.patch\n")
    return manifest


def test_modes_the_series_sets_are_written_and_recorded(tmp_path):
    root = make_tree(tmp_path / "tree")
    report = apply_series(load_manifest(with_patch(tmp_path, MODES)), "0.29.0", root)
    assert (root / MOD).stat().st_mode & 0o777 == 0o755
    assert (root / "vllm/core/__init__.py").stat().st_mode & 0o777 == 0o755  # a mode-only change
    assert (root / "vllm/tool.sh").stat().st_mode & 0o777 == 0o755  # new file mode 100755
    assert {"vllm/core/__init__.py", "vllm/tool.sh"} <= set(report.written)
    record = json.loads((root / "vllm" / ".patchset-provenance.json").read_text())
    assert record["files"][MOD]["mode"] == "100755"
    assert record["files"]["vllm/core/__init__.py"]["mode"] == "100755"
    assert record["files"]["vllm/tool.sh"]["mode"] == "100755"
    assert record["files"][TEST]["mode"] == "100644"
    os.chmod(root / MOD, 0o644)
    with pytest.raises(ApplyError, match=f"{MOD} differs from what the provenance record says"):
        apply_series(load_manifest(tmp_path / "patches.yaml"), "0.29.0", root)


def test_a_symlink_is_refused_and_nothing_written(tmp_path):
    root = make_tree(tmp_path / "tree")
    before = snapshot(root)
    link = ("diff --git a/vllm/link b/vllm/link\nnew file mode 120000\n--- /dev/null\n+++ b/vllm/link\n"
            "@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n")
    # the patch file itself is refused (bad input, exit 2), before anything is evaluated or written
    with pytest.raises(PatchFileError, match=r"\.patch:\d+: patch \S+: symlinks \(mode 120000\)") as caught:
        apply_series(load_manifest(with_patch(tmp_path, link)), "0.29.0", root)
    assert caught.value.exit_code == 2 and snapshot(root) == before


def test_a_stray_tests_folder_in_site_packages_is_left_out(tmp_path):
    root = make_tree(tmp_path / "site")
    (root / "pyproject.toml").unlink()  # site-packages: the tests/ beside vllm/ belongs to someone else
    (root / "vllm-0.29.0.dist-info").mkdir()
    (root / "vllm-0.29.0.dist-info" / "METADATA").write_text("Name: vllm\nVersion: 0.29.0\n")
    report = apply_series(load_manifest(make_manifest(tmp_path)), "0.29.0", root)
    assert report.skipped == [TEST] and (root / TEST).read_text() == TEST_BEFORE


def test_already_applied_refreshes_bytecode_that_no_longer_matches(tmp_path):
    root = make_tree(tmp_path / "tree")
    m = load_manifest(make_manifest(tmp_path))
    apply_series(m, "0.29.0", root)
    (pyc,) = (root / "vllm/core/__pycache__").glob("sched.*.pyc")
    old = tmp_path / "old.py"
    old.write_text(PRISTINE)
    py_compile.compile(str(old), cfile=str(pyc), invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    again = apply_series(m, "0.29.0", root)
    assert again.already and "refreshed the stale bytecode of 1 modules" in again.message
    import importlib.util

    assert pyc.read_bytes()[8:16] == importlib.util.source_hash((root / MOD).read_bytes())


def test_a_patched_tree_is_refused_as_a_dir_source(tmp_path):
    from patchset.errors import SourceError
    from patchset.verbs.check import check

    root = make_tree(tmp_path / "tree")
    manifest = load_manifest(make_manifest(tmp_path))
    apply_series(manifest, "0.29.0", root)
    with pytest.raises(SourceError, match="already carries a patchset series"):
        check(manifest, ["0.29.0"], source=f"dir:{root}")


def test_recover_without_an_interrupted_apply_says_so(tmp_path, capsys):
    from patchset.cli import main

    root = make_tree(tmp_path / "tree")
    assert main(["apply", "--recover", str(root)]) == 0
    assert "nothing to recover" in capsys.readouterr().out


def test_a_tree_that_does_not_say_its_release_is_applied_with_a_warning(tmp_path):
    manifest = load_manifest(make_manifest(tmp_path))
    report = apply_series(manifest, "0.29.0", make_tree(tmp_path / "tree"))
    assert report.result is not None and "does not say which vLLM release it holds" in report.result.warnings[0]
    said = make_tree(tmp_path / "said")
    (said / "vllm" / "_version.py").write_text("__version__ = version = '0.29.0'\n")
    report = apply_series(manifest, "0.29.0", said)
    assert report.result is not None and not report.result.warnings


@pytest.mark.network
def test_site_packages_of_0_9_0_gets_the_package_part_and_names_what_it_left_out(tmp_path, capsys):
    """A real fork-shaped series (requirements/, docker/, csrc/, tests/ hunks) onto the real 0.9.0 files."""
    from fork090 import CONFIG_TEST, DOCKERFILE, KERNEL, OPS, REQS, SCHED, SCHED_TEST, VERSION, write_series

    from patchset.cli import main
    from patchset.core import provenance
    from patchset.sources import open_source

    manifest = write_series(tmp_path / "project", open_source("pypi", VERSION).root)
    wheel = open_source("wheel", VERSION)  # the files as site-packages holds them: the wheel's own
    site = tmp_path / "site-packages"
    for path in ("vllm/__init__.py", OPS, SCHED):
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_bytes(wheel.read(path) or b"")
    meta = site / f"vllm-{VERSION}.dist-info" / "METADATA"
    meta.parent.mkdir()
    meta.write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {VERSION}\n")
    pristine = {p: (site / p).read_bytes() for p in (OPS, SCHED)}

    assert main(["apply", "--vllm", VERSION, str(site), "--manifest", str(manifest)]) == 0
    out = capsys.readouterr().out
    left = [CONFIG_TEST, KERNEL, DOCKERFILE, REQS, SCHED_TEST]
    assert f"not in this site-packages (left out): {', '.join(sorted(left))}" in out
    assert f"compiled code left out (only a build of vLLM carries it): {KERNEL}" in out
    assert "left out 5 files this site-packages cannot hold" in out
    assert b"# the kernel skips padding slots" in (site / OPS).read_bytes() != pristine[OPS]
    assert b"# a fork caps running requests" in (site / SCHED).read_bytes() != pristine[SCHED]
    assert sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file() and "__pycache__" not in
                  p.parts and p.suffix != ".json") == sorted(["vllm/__init__.py", OPS, SCHED,
                                                              f"vllm-{VERSION}.dist-info/METADATA"])

    record = provenance.loads((site / provenance.PROVENANCE_PATH).read_bytes())
    assert record["left_out"] == {"tree": "site-packages", "files": sorted(left)}
    entries = {p["id"]: p for p in record["patches"]}
    assert entries["kernel-guard"]["status"] == "applies" and entries["kernel-guard"]["left_out"] == [KERNEL]
    assert entries["deps-regex"]["status"] == "not-in-tree"
    assert entries["deps-regex"]["left_out"] == [DOCKERFILE, REQS]
    assert set(provenance.carried_ids(record)) == {"sched-comment"}  # the kernel's fix is not carried


TYPO_SERIES = (udiff(MOD, PRISTINE, PATCHED) + udiff("vlm/x.py", "x\n", "y\n")  # a typo for vllm/
               + udiff(TEST, TEST_BEFORE, TEST_AFTER))  # beside the package in the real 0.29.0: left out
NEW_TEST = ("diff --git a/tests/test_new.py b/tests/test_new.py\nnew file mode 100644\n--- /dev/null\n"
            "+++ b/tests/test_new.py\n@@ -0,0 +1 @@\n+def test_new(): pass\n")


@pytest.mark.network
@pytest.mark.parametrize("kind", ["site-packages", "wheel"])
def test_a_path_neither_the_package_nor_the_release_holds_fails_in_every_kind_of_tree(tmp_path, capsys, kind):
    """Issue 38: `apply --vllm 0.29.0 SITE` with a patch on `vlm/x.py` (a typo for vllm/) said `applied 0
    patches; left out 1 file this site-packages cannot hold` and exited 0. Only a path the release holds beside
    its package (the real 0.29.0 sdist's listing) is left out; a file a patch creates under tests/ too."""
    from patchset.cli import main

    write_patch(tmp_path, "recipes/fix/fix.patch", TYPO_SERIES)
    write_patch(tmp_path, "recipes/new/fix.patch", NEW_TEST)
    write_manifest(tmp_path, """
        schema: 1
        targets: {"0.29.0": {}}
        patches:
          - {id: fix, releases: "==0.29.0", patch: recipes/fix/fix.patch}
          - {id: new, releases: "==0.29.0", patch: recipes/new/fix.patch}
        """)
    manifest = str(tmp_path / "patches.yaml")
    if kind == "site-packages":
        root = make_tree(tmp_path / "site")
        (root / "pyproject.toml").unlink()
        (root / "vllm-0.29.0.dist-info").mkdir()
        (root / "vllm-0.29.0.dist-info" / "METADATA").write_text("Name: vllm\nVersion: 0.29.0\n")
        before = snapshot(root)
        assert main(["apply", "--vllm", "0.29.0", str(root), "--manifest", manifest]) == 1
        assert snapshot(root) == before
        err = capsys.readouterr().err
    else:
        assert main(["check", "--vllm", "0.29.0", "--source", "wheel", "--manifest", manifest]) == 1
        err = capsys.readouterr().out
    assert (f"vlm/x.py: not in the package this {kind} holds, nor beside it in vLLM 0.29.0 (its sdist's "
            "listing)") in err
    assert TEST + ": not in" not in err and "tests/test_new.py: not in" not in err
    # Without the typo, tests/ beside the package is left out, the created test too, and the rest applies.
    write_patch(tmp_path, "recipes/fix/fix.patch", TYPO_SERIES.split("diff --git a/vlm/x.py")[0]
                + "diff --git " + TYPO_SERIES.split("diff --git ")[-1])
    if kind == "site-packages":
        assert main(["apply", "--vllm", "0.29.0", str(root), "--manifest", manifest]) == 0
        assert "applied 1 patch; left out 2 files this site-packages cannot hold" in capsys.readouterr().out
    else:  # (vllm/core/sched.py is this test's own: the real wheel has none, so that one fails there)
        assert main(["check", "--vllm", "0.29.0", "--source", "wheel", "--manifest", manifest, "--format",
                     "json"]) == 1
        doc = json.loads(capsys.readouterr().out)
        hunks = {h["file"]: h["status"] for p in doc["targets"][0]["patches"] for h in p["hunks"]}
        assert hunks == {MOD: "failed", TEST: "not-in-tree", "tests/test_new.py": "not-in-tree"}


def _deleted(path: str, text: str, mode: str = "100644") -> str:
    return (f"diff --git a/{path} b/{path}\ndeleted file mode {mode}\n"
            + udiff(path, text, "").split("\n", 1)[1].replace(f"+++ b/{path}", "+++ /dev/null"))


def _created(path: str, text: str) -> str:
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\n"
            + udiff(path, "", text).split("\n", 1)[1].replace(f"--- a/{path}", "--- /dev/null"))


def tree_listing(root: Path) -> dict[str, tuple[str, int]]:
    """Every folder and file (kind or sha256, mode), bytecode and the provenance record aside."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if "__pycache__" in rel.parts or rel.name == ".patchset-provenance.json":
            continue
        what = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "folder"
        out[str(rel)] = (what, p.stat().st_mode & 0o7777)
    return out


def emptying_tree(root: Path) -> tuple[Path, str]:
    """A tree, and a patch deleting every file of vllm/grpc/ (one a level down, one 0755: psrl's mail for
    0.14.0 has that shape) and one of two files of vllm/keep/, creating vllm/fresh/sub/new.py."""
    make_tree(root)
    files = {"vllm/grpc/__init__.py": "# SPDX-License-Identifier: Apache-2.0\n",
             "vllm/grpc/compile_protos.py": "print('protos')\n",
             "vllm/grpc/proto/engine.proto": 'syntax = "proto3";\n', "vllm/keep/a.py": "a = 1\n",
             "vllm/keep/b.py": "b = 1\n"}
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    os.chmod(root / "vllm/grpc/compile_protos.py", 0o755)
    os.chmod(root / "vllm/grpc", 0o750)
    (root / "vllm/was_empty").mkdir()  # empty before: no patch empties it, so it stays
    patch = "".join(_deleted(p, files[p], "100755" if p.endswith("protos.py") else "100644")
                    for p in files if p.startswith("vllm/grpc/"))
    return root, patch + _deleted("vllm/keep/b.py", "b = 1\n") + _created("vllm/fresh/sub/new.py", "n = 1\n")


def test_a_folder_the_deletions_empty_is_removed_as_gnu_patch_and_git_apply_do(tmp_path):
    """The same bytes, modes and folders as both reference tools (fails where apply left vllm/grpc/ empty)."""
    root, patch = emptying_tree(tmp_path / "tree")
    write_patch(tmp_path, "recipes/grpc.patch", patch)
    manifest = write_manifest(tmp_path, 'schema: 1\ntargets: {"0.29.0": {}}\npatches:\n'
                                        '  - {id: grpc, releases: "==0.29.0", patch: recipes/grpc.patch}\n')
    gnu, git = tmp_path / "gnu", tmp_path / "git"
    shutil.copytree(root, gnu, symlinks=True)
    shutil.copytree(root, git, symlinks=True)
    subprocess.run(["patch", "-p1", "-F0", "--batch", "--no-backup-if-mismatch", "-s", "-i",
                    str(tmp_path / "recipes/grpc.patch")], cwd=gnu, check=True)
    subprocess.run(["git", "apply", str(tmp_path / "recipes/grpc.patch")], cwd=git, check=True,
                   env={**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path)})  # git apply outside a repository
    report = apply_series(load_manifest(manifest), "0.29.0", root, compile_bytecode=False)
    assert not (root / "vllm/grpc").exists() and (root / "vllm/was_empty").is_dir()
    assert (root / "vllm/keep/a.py").is_file() and (root / "vllm/fresh/sub/new.py").read_text() == "n = 1\n"
    assert tree_listing(gnu) == tree_listing(git)  # the two references agree
    assert tree_listing(root) == tree_listing(gnu)
    assert report.removed_dirs == [str(root / "vllm/grpc"), str(root / "vllm/grpc/proto")]


def test_a_byte_compiled_folder_goes_with_its_modules_bytecode(tmp_path):
    """An installed tree's __pycache__ holding only the deleted modules' bytecode does not keep the folder;
    one holding another module's does (patchset drops the deleted modules' bytecode, GNU patch does not)."""
    root, patch = emptying_tree(tmp_path / "tree")
    patch += _deleted("vllm/keep/a.py", "a = 1\n")
    (root / "vllm/keep/__pycache__").mkdir()
    (root / "vllm/keep/__pycache__/other.cpython-311.pyc").write_bytes(b"not ours")
    compileall.compile_dir(root / "vllm/grpc", quiet=1)
    assert list((root / "vllm/grpc/__pycache__").iterdir())
    write_patch(tmp_path, "recipes/grpc.patch", patch)
    manifest = write_manifest(tmp_path, 'schema: 1\ntargets: {"0.29.0": {}}\npatches:\n'
                                        '  - {id: grpc, releases: "==0.29.0", patch: recipes/grpc.patch}\n')
    apply_series(load_manifest(manifest), "0.29.0", root)
    assert not (root / "vllm/grpc").exists()
    assert sorted(p.name for p in (root / "vllm/keep").rglob("*")) == ["__pycache__", "other.cpython-311.pyc"]
