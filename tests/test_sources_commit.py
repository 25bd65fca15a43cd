"""A commit's tree in the cache (sources/commit.py), with real git: fetched once, verified, read offline after."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import git
import pytest

from patchset.cache import Cache
from patchset.errors import SourceError
from patchset.sources.commit import CommitSource

ENV = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.org", "GIT_COMMITTER_NAME": "a",
       "GIT_COMMITTER_EMAIL": "a@example.org"}


@pytest.fixture
def repo(tmp_path) -> tuple[Path, list[str]]:
    """A repository of two commits; the first holds a symbolic link out of the tree."""
    path = tmp_path / "upstream"
    r = git.Repo.init(path)
    shas = []
    for i, text in enumerate(("one\n", "two\n")):
        (path / "vllm").mkdir(exist_ok=True)
        (path / "vllm" / "__init__.py").write_text(text)
        if i == 0:
            os.symlink("/etc/passwd", path / "vllm" / "link")
        with r.git.custom_environment(**ENV):
            r.git.add("-A")
            r.git.commit("-q", "--no-gpg-sign", "-m", f"commit {i}")
        shas.append(r.head.commit.hexsha)
    r.close()
    return path, shas


def test_a_commit_is_fetched_once_and_read_from_the_cache_after(repo, tmp_path):
    path, shas = repo
    cache = Cache(tmp_path / "cache")
    first = CommitSource(str(path), shas[0], "vllm", "0.1.dev1", cache)
    assert first.read("vllm/__init__.py") == b"one\n" and first.kind == "git commit" and first.covers("tests/x")
    about = json.loads((cache.path("commits", shas[0], "about.json")).read_text())
    assert about == {"project": "vllm", "version": "0.1.dev1", "git": str(path), "commit": shas[0],
                     "tree": git.Repo(path).commit(shas[0]).tree.hexsha}
    shutil.rmtree(path)  # the repository is gone: the cached tree still answers, nothing is fetched
    again = CommitSource(str(path), shas[0], "vllm", "0.1.dev1", cache)
    assert again.read("vllm/__init__.py") == b"one\n" and again.tree_id == about["tree"]
    assert [p.name for p in cache.path("commits").iterdir()] == [shas[0]]  # no scratch repository left


def test_a_link_in_the_commit_is_a_plain_file_in_the_cache(repo, tmp_path):
    path, shas = repo
    src = CommitSource(str(path), shas[0], "vllm", "0.1.dev1", Cache(tmp_path / "cache"))
    link = Path(src.root) / "vllm" / "link"
    assert not link.is_symlink() and link.read_text() == "/etc/passwd"  # its target, as text: nothing to follow


def test_each_commit_is_its_own_entry_and_the_second_is_the_newer_tree(repo, tmp_path):
    path, shas = repo
    cache = Cache(tmp_path / "cache")
    trees = [CommitSource(path.as_uri(), sha, "vllm", f"0.1.dev{i}", cache) for i, sha in enumerate(shas)]
    assert [t.read("vllm/__init__.py") for t in trees] == [b"one\n", b"two\n"]
    assert sorted(p.name for p in cache.path("commits").iterdir()) == sorted(shas)


def test_a_missing_commit_or_repository_is_refused_and_nothing_is_kept(repo, tmp_path):
    path, _ = repo
    cache = Cache(tmp_path / "cache")
    with pytest.raises(SourceError, match=f"{path} has no commit {'0' * 40}"):
        CommitSource(str(path), "0" * 40, "vllm", "0.1.dev1", cache)
    with pytest.raises(SourceError, match="cannot fetch commit"):
        CommitSource(str(tmp_path / "nowhere"), "0" * 40, "vllm", "0.1.dev1", cache)
    assert not list(cache.path("commits").iterdir())  # neither the entry nor a part of it


def test_credentials_in_the_url_are_never_shown(repo, tmp_path):
    with pytest.raises(SourceError) as e:
        CommitSource("https://user:s3cret-token@127.0.0.1:9/vllm.git", "0" * 40, "vllm", "0.1.dev1",
                     Cache(tmp_path / "cache"))
    assert "s3cret-token" not in str(e.value) and "127.0.0.1:9/vllm.git" in str(e.value)


def test_a_commit_two_targets_pin_is_held_for_prune_under_the_version_it_is_listed_by(repo, tmp_path):
    from patchset.cache import release_uses
    from patchset.verbs.cache import prune

    path, shas = repo
    cache = Cache(tmp_path / "cache")
    CommitSource(str(path), shas[0], "vllm", "0.1.dev1", cache)
    release_uses()
    CommitSource(str(path), shas[0], "vllm", "0.1.dev1+fork", cache)  # the same commit, another target's key
    held = prune(cache, keep=0)
    assert held.in_use == ["vllm 0.1.dev1"] and not held.removed
    release_uses()
    assert [e.path.name for e in prune(cache, keep=0).removed] == [shas[0]]
