"""A release's tree from a git repository at its tag (GitPython)."""

from __future__ import annotations

import re

import git

from patchset.errors import SourceError


class GitSource:
    def __init__(self, repo_path: str, tag: str) -> None:
        try:
            self.repo = git.Repo(repo_path)
        except (git.NoSuchPathError, git.InvalidGitRepositoryError) as e:
            raise SourceError(f"{repo_path} is not a git repository") from e
        try:
            self.commit = self.repo.commit(tag)
        except (git.BadName, ValueError) as e:
            if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", tag):  # a target pinned to a commit
                raise SourceError(f"{repo_path} has no commit {tag}", hint="fetch it into that clone") from e
            raise SourceError(f"{repo_path} has no tag {tag}", hint="fetch the tags, or fix upstream.tag") from e
        self.tag = tag
        self.identity = f"git:{repo_path}@{tag}={self.commit.hexsha[:12]}"
        self.kind = "git tag"  # the whole repository

    def covers(self, path: str) -> bool:
        return True  # an upstream tree: every path is checked, a missing one fails

    def read(self, path: str) -> bytes | None:
        try:
            blob = self.commit.tree / path
        except KeyError:
            return None
        if blob.type != "blob":
            return None
        return blob.data_stream.read()

    def listing(self, prefix: str) -> list[str]:
        """Every blob under the folder ``prefix`` at the tag."""
        try:
            tree = self.commit.tree / prefix.rstrip("/")
        except KeyError:
            return []
        return sorted(str(b.path) for b in tree.traverse() if getattr(b, "type", "") == "blob")  # type: ignore[union-attr]

    def contains_commit(self, sha: str) -> bool | None:
        """Is the upstream commit an ancestor of this tag? None when the repo does not know it."""
        try:
            commit = self.repo.commit(sha)
        except (git.BadName, ValueError):
            return None
        return self.repo.is_ancestor(commit, self.commit)
