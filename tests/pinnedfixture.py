"""A real git history made of real vLLM release trees, for targets pinned to a commit.

vLLM's own repository is over a gigabyte and out of reach here, so the history is built from the sdists
on the package index: one commit holds 0.29.0's tree, the next 0.30.0's, each tagged ``v<release>`` as
upstream tags them. To keep the repository small only what this repository's series touches and needs
beside it is committed (``SUBTREES``: the KV-transfer package, its tests and the test helpers they
import, ``vllm/__init__.py`` and ``pyproject.toml``), not the whole tree. Author, committer and dates
are fixed, so the commit ids are the same on every run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import git

from patchset.cache import Cache
from patchset.sources.sdist import SdistSource

RELEASES = ("0.29.0", "0.30.0")
SUBTREES = ("pyproject.toml", "vllm/__init__.py", "vllm/distributed/kv_transfer", "tests/v1/kv_connector",
            # what the upstream tests of the series import beside their folder (`test --venv` runs them)
            "tests/*.py", "tests/models/*.py", "tests/v1/*.py")
_ENV = {"GIT_AUTHOR_NAME": "vLLM", "GIT_AUTHOR_EMAIL": "vllm@example.org", "GIT_COMMITTER_NAME": "vLLM",
        "GIT_COMMITTER_EMAIL": "vllm@example.org"}


def release_history(dest: Path) -> dict[str, str]:
    """A repository at ``dest`` with one commit per release tree: release -> commit id."""
    repo = git.Repo.init(dest)
    out = {}
    for i, version in enumerate(RELEASES):
        root = SdistSource("vllm", version, Cache()).root
        for sub in SUBTREES:
            for old in dest.glob(sub):
                shutil.rmtree(old) if old.is_dir() else old.unlink()
            for path in root.glob(sub):
                here = dest / path.relative_to(root)
                here.parent.mkdir(parents=True, exist_ok=True)
                if path.is_dir():
                    shutil.copytree(path, here, ignore=shutil.ignore_patterns("__pycache__"))
                else:
                    shutil.copy2(path, here)
        date = f"2026-0{i + 1}-01T00:00:00+00:00"
        with repo.git.custom_environment(**_ENV, GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date):
            repo.git.add("-A")
            repo.git.commit("-q", "--no-gpg-sign", "-m", f"vLLM {version}'s tree ({', '.join(SUBTREES)})")
        repo.create_tag(f"v{version}")  # as upstream tags its releases
        out[version] = repo.head.commit.hexsha
    repo.close()
    return out


def nightly(version: str, commit: str) -> str:
    """The version a nightly built at ``commit`` just after ``version`` says it is (``0.29.1.dev1+gabc1234``)."""
    major, minor, micro = version.split(".")
    return f"{major}.{minor}.{int(micro) + 1}.dev1+g{commit[:9]}"
