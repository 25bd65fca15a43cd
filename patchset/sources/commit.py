"""A target pinned to a git commit: that commit's tree, fetched once into the cache (GitPython).

A nightly, a commit between releases or a fork's own branch has no sdist on the index: the manifest names
its repository and full commit id (``targets: {V: {source: {git: URL, commit: ID}}}``, docs/pinned.md).
The commit alone is fetched (``git fetch --depth 1 URL ID`` into a scratch repository: a URL, a
``file://`` URL and a local path alike), its id checked against the one asked for (git names every object
by a hash of its content, and ``fetch.fsckObjects`` checks each one it receives), and its tree checked out
into the cache. The repository is then dropped: what stays is the tree, as an unpacked sdist stays.

Cache layout, one entry per commit (``patchset cache`` reads it, ``cache prune`` removes it)::

    commits/<commit>/about.json   {"project", "version", "git", "commit", "tree"}: what the entry is
    commits/<commit>/tree/...     the commit's files (symbolic links checked out as plain files)

The entry is filled under a temporary name and renamed into place (``Cache.tree``): a reader sees a
whole, verified tree or none.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from patchset.cache import Cache
from patchset.errors import SourceError
from patchset.sources import canonical_name, urls
from patchset.sources.local import DirSource, import_name

COMMITS = "commits"
#: How long one fetch may take: vLLM's tree at one commit is tens of megabytes.
FETCH_TIMEOUT = 900


class CommitSource(DirSource):
    """The tree of one commit of a git repository, as the cache keeps it."""

    def __init__(self, repository: str, commit: str, project: str, version: str, cache: Cache) -> None:
        self.repository = repository
        self.public_url = urls.redact(urls.split_credentials(repository)[0])
        self.commit = commit
        self.entry = cache.path(COMMITS, commit)
        about = self.entry / "about.json"
        # Before the entry is read or filled: `patchset cache prune` leaves it alone while this process runs.
        cache.in_use(canonical_name(project), version)
        if not about.is_file():
            cache.tree(commit, lambda tmp: _fill(tmp, repository, commit, project, version, self.public_url),
                       folder=COMMITS)
        cache.in_use(canonical_name(project), version, about)  # touched: when this commit was last used
        try:
            recorded = json.loads(about.read_bytes())
        except (OSError, ValueError):
            recorded = {}
        if isinstance(recorded, dict) and recorded.get("version") not in (None, version):
            # Another target pinned this commit first: prune knows the entry by that target's version.
            cache.in_use(canonical_name(project), str(recorded["version"]))
        super().__init__(self.entry / "tree")
        self.identity = f"git:{self.public_url}@{commit[:12]}"
        self.kind = "git commit"  # the whole repository at that commit: an upstream tree
        self.source_tree, self.package = True, import_name(project)
        self.tree_id = str(recorded.get("tree", "")) if isinstance(recorded, dict) else ""

    def covers(self, path: str) -> bool:
        return True  # an upstream tree: every path is checked, a missing one fails


def _fill(tmp: Path, repository: str, commit: str, project: str, version: str, public_url: str) -> None:
    import git  # GitPython only when a commit is fetched: a warm read is plain files

    scratch = tmp / "repo"
    repo = git.Repo.init(scratch, bare=True)
    try:
        _fetch(repo, repository, commit, public_url)
        fetched = repo.commit("FETCH_HEAD")
        if fetched.hexsha != commit:  # a server answering with another commit than the one asked for
            raise SourceError(f"{public_url} answered commit {fetched.hexsha} when asked for {commit}; nothing "
                              "was kept", hint="the repository or a proxy in between is not to be trusted")
        tree = tmp / "tree"
        tree.mkdir()
        # Links as plain files holding their target: nothing in the cache points outside it.
        repo.git.execute(["git", "-c", "core.symlinks=false", "--work-tree", str(tree), "checkout", "--force",
                          commit, "--", "."])
        about = {"project": canonical_name(project), "version": version, "git": public_url, "commit": commit,
                 "tree": fetched.tree.hexsha}
        (tmp / "about.json").write_text(json.dumps(about) + "\n")
    finally:
        repo.close()
        import shutil

        shutil.rmtree(scratch, ignore_errors=True)


def _fetch(repo, repository: str, commit: str, public_url: str) -> None:
    import git

    try:
        repo.git.execute(["git", "-c", "fetch.fsckObjects=true", "-c", "protocol.version=2", "fetch", "--quiet",
                          "--no-tags", "--depth", "1", repository, commit], kill_after_timeout=FETCH_TIMEOUT)
    except git.GitCommandError as e:
        said = urls.redact(str(e.stderr or "").strip().replace("\n", " "))
        said = re.sub(r"^stderr: ", "", said).strip("' ")
        if re.search(r"not our ref|couldn't find remote ref|no such remote ref|not a tree|unadvertised object|"
                     r"upload-pack: not", said, re.I):
            raise SourceError(f"{public_url} has no commit {commit}",
                              hint="the id is wrong, or the commit was never pushed there; in a clone, "
                                   "`git log -1 COMMIT` says whether it has it") from e
        raise SourceError(f"cannot fetch commit {commit} from {public_url}: {said or 'git failed'}",
                          hint="is the repository reachable from here? A local path or a file:// URL of a "
                               "clone works offline") from e
