"""Files beside the package: not-in-tree where the kind of tree cannot hold them, checked where it can."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import udiff, write_manifest, write_patch

from patchset.core.manifest_load import load_manifest
from patchset.core.series import evaluate_release
from patchset.core.trees import compiled, is_compiled
from patchset.report.check import RENDERERS
from patchset.sources.local import DirSource
from patchset.verbs.check import CheckReport

MOD = "vllm/utils.py"
PRISTINE = "".join(f"x{i} = {i}\n" for i in range(1, 31))
PATCHED = PRISTINE.replace("x10 = 10\n", "x10 = 10 - 1\n")
REQS = "requirements/common.txt"
REQS_BEFORE = "numpy\nrequests >= 2.26.0\ntqdm\n"
KERNEL = "csrc/custom_quickreduce.cu"  # files of the real 0.29.0 (its sdist lists what is beside the package)
KERNEL_BEFORE = "".join(f"// line {i}\n" for i in range(1, 21))
TEST = "tests/utils.py"  # its tail names vllm/utils.py: a guessed layout must not claim it


@pytest.mark.parametrize("path,expected", [
    ("csrc/cache_kernels.cu", True), ("csrc/attention/attention_kernels.cuh", True), ("csrc/ops.h", True),
    ("CMakeLists.txt", True), ("cmake/utils.cmake", True), ("csrc/cpu/torch_bindings.cpp", True),
    ("rust/src/lib.rs", True), ("vllm/_custom_ops.py", False), ("requirements/cuda.txt", False),
    ("setup.py", False), ("tests/kernels/test_cache.py", False), ("docker/Dockerfile", False),
])
def test_compiled_code_is_what_only_a_build_carries(path, expected):
    assert is_compiled(path) is expected
    assert compiled([path, "vllm/x.py"]) == ([path] if expected else [])


def make_tree(root: Path, *, upstream: bool, beside: bool = True) -> Path:
    (root / "vllm").mkdir(parents=True)
    (root / "vllm" / "__init__.py").write_text("")
    (root / MOD).write_text(PRISTINE)
    if upstream:
        (root / "pyproject.toml").write_text("[project]\nname = 'vllm'\n")
        (root / "PKG-INFO").write_text("Name: vllm\nVersion: 0.29.0\n")
    else:
        (root / "vllm-0.29.0.dist-info").mkdir()
        (root / "vllm-0.29.0.dist-info" / "METADATA").write_text("Name: vllm\nVersion: 0.29.0\n")
    if beside:
        for path, text in ((REQS, REQS_BEFORE), (KERNEL, KERNEL_BEFORE), (TEST, "def f():\n    pass\n")):
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text)  # in site-packages, someone else's tests/ and csrc/ (never patched)
    return root


def manifest(tmp_path: Path) -> Path:
    write_patch(tmp_path, "recipes/kernel/fix.patch",
                udiff(MOD, PRISTINE, PATCHED) + udiff(KERNEL, KERNEL_BEFORE, KERNEL_BEFORE.replace("line 9", "l9"))
                + udiff(TEST, "def f():\n    pass\n", "def f():\n    return 1\n"))
    write_patch(tmp_path, "recipes/deps/fix.patch", udiff(REQS, REQS_BEFORE, REQS_BEFORE + "regex\n"))
    write_patch(tmp_path, "recipes/later/fix.patch",
                udiff(MOD, PATCHED, PATCHED.replace("x20 = 20\n", "x20 = 21\n")))
    return write_manifest(tmp_path, """
        schema: 1
        targets: {"0.29.0": {}}
        patches:
          - {id: kernel, releases: "==0.29.0", patch: recipes/kernel/fix.patch}
          - {id: deps, releases: "==0.29.0", patch: recipes/deps/fix.patch}
          - {id: later, releases: "==0.29.0", patch: recipes/later/fix.patch, after: [kernel, deps]}
        """)


def test_site_packages_gives_the_hunks_beside_the_package_their_own_status(tmp_path):
    site = DirSource.release(make_tree(tmp_path / "site", upstream=False), "0.29.0")
    assert site.kind == "site-packages"
    r = evaluate_release(load_manifest(manifest(tmp_path)), "0.29.0", site)
    kernel, deps, later = r.patches
    assert kernel.status == "applies" and kernel.tree == "site-packages"
    assert kernel.skipped == (KERNEL, TEST)
    assert [(h.file, h.status) for h in kernel.hunks] == [(MOD, "exact"), (KERNEL, "not-in-tree"),
                                                           (TEST, "not-in-tree")]
    assert "this site-packages holds only the package" in kernel.hunks[1].message
    assert kernel.hunks[1].patch_line > 0 and not kernel.hunks[1].fails
    assert deps.status == "not-in-tree" and deps.status != "applies"  # was "failed": "(a typo, ...)"
    assert REQS in deps.message and "site-packages" in deps.message and "--source pypi" in deps.message
    assert later.status == "applies"  # a not-in-tree patch blocks nothing after it
    assert r.ok and r.changed == {MOD: PATCHED.replace("x20 = 20\n", "x20 = 21\n").encode()}


def test_an_upstream_tree_checks_every_hunk(tmp_path):
    tree = DirSource.release(make_tree(tmp_path / "tree", upstream=True), "0.29.0")
    assert tree.kind == "source tree"
    r = evaluate_release(load_manifest(manifest(tmp_path)), "0.29.0", tree)
    assert [p.status for p in r.patches] == ["applies"] * 3
    assert {h.status for p in r.patches for h in p.hunks} == {"exact"}
    assert not any(p.skipped for p in r.patches)
    assert r.changed[REQS] == (REQS_BEFORE + "regex\n").encode()
    # the same tree without requirements/: a missing file in an upstream tree fails, it is never left out
    (tmp_path / "tree" / REQS).unlink()
    r = evaluate_release(load_manifest(manifest(tmp_path)), "0.29.0", tree)
    assert r.patch("deps").status == "failed" and f"{REQS}: not in dir:" in r.patch("deps").message
    assert r.patch("later").status == "blocked"


def test_a_layout_mistake_is_never_mistaken_for_a_file_beside_the_package(tmp_path):
    site = DirSource.release(make_tree(tmp_path / "site", upstream=False), "0.29.0")
    write_patch(tmp_path, "recipes/p/fix.patch", udiff("utils.py", PRISTINE, PATCHED))  # package layout, no root
    m = write_manifest(tmp_path, """
        schema: 1
        targets: {"0.29.0": {}}
        patches:
          - {id: p, releases: "==0.29.0", patch: recipes/p/fix.patch}
        """)
    p = evaluate_release(load_manifest(m), "0.29.0", site).patch("p")
    assert p.status == "failed" and not p.skipped
    assert "vllm/utils.py exists: the patch is in package layout: set root: vllm" in p.message


def test_every_renderer_shows_the_new_words(tmp_path):
    site = DirSource.release(make_tree(tmp_path / "site", upstream=False), "0.29.0")
    report = CheckReport("patches.yaml", [evaluate_release(load_manifest(manifest(tmp_path)), "0.29.0", site)])
    table = RENDERERS["table"](report)
    assert "not-in-tree" in table and f"not in this site-packages: {KERNEL}, {TEST}" in table
    assert table.rstrip().endswith("ok")
    assert '"status": "not-in-tree"' in RENDERERS["json"](report)
    assert '"tree": "site-packages"' in RENDERERS["json"](report)
    assert "| 0.29.0 | deps | not-in-tree |" in RENDERERS["markdown"](report)
    junit = RENDERERS["junit"](report)
    assert 'skipped message="not-in-tree: nothing of it is in this site-packages' in junit
