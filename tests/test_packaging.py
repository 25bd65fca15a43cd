"""patchset as a tool: a built wheel installs into a fresh venv outside the checkout and works there.

The version has one source, the git tags (setuptools-scm): a tagged commit builds that version, a
clone without tags a development version counted from the fallback.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from helpers import SCRATCH_SOURCE, scratch_fork

ROOT = Path(__file__).resolve().parents[1]
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "advice.detachedHead=false"]

pytestmark = pytest.mark.slow


def clone_of_the_checkout(dest: Path) -> Path:
    """This working tree (committed or not) as a fresh clone: one commit, no tags."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        if (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    subprocess.run([*GIT, "init", "-q", str(dest)], check=True)
    subprocess.run([*GIT, "-C", str(dest), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(dest), "commit", "-q", "-m", "snapshot"], check=True)
    return dest


def build_wheel(src: Path, out: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out), str(src)],
                   check=True, capture_output=True)
    (wheel,) = out.glob("patchset-*.whl")
    return wheel


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    return clone_of_the_checkout(tmp_path_factory.mktemp("clone") / "patchset")


def test_a_clone_without_tags_builds_a_development_version(clone, tmp_path):
    wheel = build_wheel(clone, tmp_path)
    assert re.fullmatch(r"patchset-0\.1\.1\.dev1\+g[0-9a-f]+-py3-none-any\.whl", wheel.name), wheel.name


def test_the_wheel_installs_in_a_fresh_venv_and_checks_a_fork(clone, tmp_path):
    subprocess.run([*GIT, "-C", str(clone), "tag", "v1.2.3"], check=True)
    try:
        wheel = build_wheel(clone, tmp_path / "dist")
    finally:
        subprocess.run(["git", "-C", str(clone), "tag", "-d", "v1.2.3"], check=True, capture_output=True)
    assert wheel.name == "patchset-1.2.3-py3-none-any.whl"
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel)],
                   check=True, capture_output=True)
    fork = scratch_fork(tmp_path / "fork")
    # Run from the fork, with nothing of the checkout on the path: the installed wheel alone.
    env = {"PATH": f"{env_dir / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path / "home"),
           "PATCHSET_CACHE": str(tmp_path / "cache")}
    version = subprocess.run(["patchset", "--version"], cwd=fork, env=env, capture_output=True, text=True, check=True)
    assert re.fullmatch(r"patchset 1\.2\.3 \(Python 3\.\d+\.\d+ \w+, \w+ \S+ \w+\)\n", version.stdout), version.stdout
    where = subprocess.run([str(py), "-c", "import patchset; print(patchset.__file__)"], cwd=fork, env=env,
                           capture_output=True, text=True, check=True).stdout
    assert Path(where.strip()).is_relative_to(env_dir), where
    check = subprocess.run(["patchset", "check", "--source", SCRATCH_SOURCE, "--format", "json"], cwd=fork, env=env,
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    doc = json.loads(check.stdout)
    assert [(t["vllm"], t["patches"][0]["status"]) for t in doc["targets"]] == [("0.29.0", "applies"),
                                                                              ("0.30.0", "upstream")]
    # What init needs ships in the wheel too (the workflow template).
    init = subprocess.run(["patchset", "init", "--vllm", "0.29.0", "--into", str(tmp_path / "new")], cwd=fork,
                          env=env, capture_output=True, text=True)
    assert init.returncode == 0, init.stderr
    assert (tmp_path / "new" / ".github" / "workflows" / "patchset.yml").is_file()
