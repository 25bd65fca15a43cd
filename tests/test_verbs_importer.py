"""`patchset import` of a fork's series built from real vLLM 0.29.0 files, against real GNU patch."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path

import git
import jsonschema
import pytest
from helpers import load_yaml, udiff

from patchset.cache import Cache
from patchset.cli import main
from patchset.core.manifest_load import load_manifest
from patchset.core.schema import manifest_schema
from patchset.errors import PatchsetError
from patchset.sources.sdist import SdistSource
from patchset.verbs.importer import import_series, read_series, read_sources
from patchset.verbs.validate import validate

VERSION = "0.29.0"
N_PATCHES = 40


@pytest.fixture(scope="module")
def pristine() -> Path:
    return Path(SdistSource("vllm", VERSION, Cache()).root)


def candidates(root: Path) -> list[str]:
    """Package-relative paths of real 0.29.0 modules, a spread across the tree."""
    files = [p for p in sorted((root / "vllm").rglob("*.py")) if 3000 < p.stat().st_size < 60000
             and p.name != "__init__.py"]
    step = len(files) // (N_PATCHES + 5)
    return [str(p.relative_to(root / "vllm")) for p in files[::step]]


def insert_after(text: str, at: int, new: str) -> str:
    lines = text.splitlines(keepends=True)
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())] if lines[at].strip() else ""
    return "".join(lines[: at + 1]) + f"{indent}{new}\n" + "".join(lines[at + 1:])


def middle(text: str) -> int:
    """A line near the middle with distinct neighbours, so a hunk's context is unique."""
    lines = text.splitlines()
    i = len(lines) // 2
    while i < len(lines) - 4 and (not lines[i].strip() or lines.count(lines[i]) > 1):
        i += 1
    return i


def mail(sha: str, subject: str, body: str, diff: str) -> str:
    return (f"From {sha} Mon Sep 17 00:00:00 2001\nFrom: Ada Fork <ada@example.org>\n"
            f"Date: Tue, 3 Nov 2026 10:11:12 +0100\nSubject: [PATCH] {subject}\n\n{body}\n---\n"
            f" some/file.py | 1 +\n 1 file changed, 1 insertion(+)\n\n{diff}-- \n2.43.0\n\n")


class Fork:
    """A quilt series in package-relative layout, as a fork that runs `patch -p1 -d site-packages/vllm` keeps it."""

    def __init__(self, root: Path, where: Path) -> None:
        self.root, self.dir = root, where
        self.dir.mkdir(parents=True)
        self.series: list[str] = ["# the fork's series for vLLM 0.29.0, applied in this order", ""]
        self.files: list[str] = []  # patch files in series order
        self.state: dict[str, str] = {}  # package-relative path -> text after the patches so far

    def text(self, rel: str) -> str:
        if rel not in self.state:
            self.state[rel] = (self.root / "vllm" / rel).read_text()
        return self.state[rel]

    def add(self, name: str, rel: str, after: str, preamble: str, *, line: str = "", gz: bool = False,
            keep: bool = True) -> None:
        diff = udiff(rel, self.text(rel), after)
        data = (preamble + diff).encode()
        path = self.dir / (name + ".gz" if gz else name)
        path.write_bytes(gzip.compress(data) if gz else data)
        self.series.append(path.name + line)
        self.files.append(path.name)
        if keep:
            self.state[rel] = after

    def write_series(self) -> Path:
        out = self.dir / "series"
        out.write_text("\n".join(self.series) + "\n")
        return out


def build_fork(root: Path, where: Path) -> Fork:
    fork = Fork(root, where)
    paths = candidates(root)
    for n, rel in enumerate(paths[:N_PATCHES - 6], 1):
        text = fork.text(rel)
        pre = f"Fork tweak {n} for {rel}.\n\nSee vllm-project/vllm#{52000 + n} for the upstream discussion.\n\n"
        fork.add(f"{n:04d}-tweak-{n}.patch", rel, insert_after(text, middle(text), f"# fork tweak {n}"), pre,
                 gz=(n == 3), line=" -p1" if n == 4 else "")
    # A patch that edits the line patch 1 added, and one whose context is that line: order matters.
    rel1 = paths[0]
    t = fork.text(rel1)
    fork.add("0101-amend-tweak-1.patch", rel1, t.replace("# fork tweak 1\n", "# fork tweak 1, amended\n"),
             "Amend tweak 1 (it was too terse).\n\n")
    t = fork.text(rel1)
    i = t.splitlines().index(next(ln for ln in t.splitlines() if ln.endswith("# fork tweak 1, amended")))
    fork.add("0102-next-to-tweak-1.patch", rel1, insert_after(t, i, "# stands on the amended tweak"),
             "A note that lives next to tweak 1.\n")
    # The same file as patch 2, far from its hunk: independent of it.
    rel2 = paths[1]
    t = fork.text(rel2)
    fork.add("0103-top-of-file-2.patch", rel2, insert_after(t, 3, "# near the top"),
             "Touches the same file as tweak 2, elsewhere.\n\n")
    # Written against pristine 0.29.0, below tweak 5's line: GNU patch and patchset both place it 1 line down.
    rel5 = paths[4]
    pristine5 = (root / "vllm" / rel5).read_text()
    late = len(pristine5.splitlines()) - 8
    diff = udiff(rel5, pristine5, insert_after(pristine5, late, "# written on the pristine file"))
    (fork.dir / "0107-offset.patch").write_text("Made on a clean tree.\n\n" + diff)
    fork.series.append("0107-offset.patch")
    fork.files.append("0107-offset.patch")
    t = fork.text(rel5)
    fork.state[rel5] = insert_after(t, late + 1, "# written on the pristine file")
    # A git format-patch mail, as `git format-patch` writes it.
    rel3 = paths[N_PATCHES - 5]
    t = fork.text(rel3)
    diff = udiff(rel3, t, insert_after(t, middle(t), "# from a mail"))
    (fork.dir / "0104-from-a-mail.patch").write_text(
        mail("5" * 40, "[Bugfix] Carry the mail fix (#54321)", "Backported for the fork.\n\nMore words.", diff))
    fork.series.append("0104-from-a-mail.patch")
    fork.files.append("0104-from-a-mail.patch")
    fork.state[rel3] = insert_after(t, middle(t), "# from a mail")
    # One that GNU patch would only place with fuzz: refused by -F0 and by patchset alike.
    rel4 = paths[N_PATCHES - 4]
    t = fork.text(rel4)
    at = middle(t)
    stale = t.splitlines(keepends=True)
    stale[at - 1] = "# a context line 0.29.0 does not have\n"
    diff = udiff(rel4, "".join(stale), insert_after("".join(stale), at, "# never lands"))
    (fork.dir / "0105-stale-context.patch").write_text("Written against an older tree.\n\n" + diff)
    fork.series.append("0105-stale-context.patch")
    fork.files.append("0105-stale-context.patch")
    (fork.dir / "0106-disabled.patch").write_text("Off for now.\n\n" + udiff(rel4, t, t + "# off\n"))
    fork.series += ["# 0106-disabled.patch", "", "# end of the series"]
    return fork


def gnu_patch(root: Path, fork: Fork, work: Path) -> tuple[list[bool], dict[str, bytes]]:
    """Apply the series in order with real `patch -p1 -F0 -d site-packages/vllm`; a failed patch leaves no trace."""
    site = work / "vllm"
    for rel in fork.state:
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / "vllm" / rel, site / rel)
    ok = []
    for name in fork.files:
        data = (fork.dir / name).read_bytes()
        if name.endswith(".gz"):
            data = gzip.decompress(data)
        cmd = ["patch", "-p1", "-F0", "--batch", "--no-backup-if-mismatch", "-d", str(site)]
        dry = subprocess.run([*cmd, "--dry-run"], input=data, capture_output=True)
        ok.append(dry.returncode == 0)
        if dry.returncode == 0:
            subprocess.run(cmd, input=data, check=True, capture_output=True)
    return ok, {"vllm/" + rel: (site / rel).read_bytes() for rel in fork.state}


@pytest.fixture(scope="module")
def imported(pristine, tmp_path_factory):
    base = tmp_path_factory.mktemp("fork")
    fork = build_fork(pristine, base / "patches")
    result = import_series([str(fork.write_series())], base / "adopted", [VERSION])
    return fork, result, base


pytestmark = pytest.mark.network


def test_the_imported_manifest_validates_and_checks_like_gnu_patch_F0(imported, pristine, tmp_path):
    fork, result, base = imported
    assert "ok: 40 patches" in validate(base / "adopted" / "patches.yaml").summary()
    jsonschema.validate(load_yaml((base / "adopted" / "patches.yaml").read_text()), manifest_schema())
    ok, gnu_files = gnu_patch(pristine, fork, tmp_path)
    target = result.check.targets[0]
    assert len(target.patches) == len(fork.files) == 40
    assert [p.status == "applies" for p in target.patches] == ok
    assert ok.count(False) == 1 and target.patches[-1].status == "failed"  # the stale-context patch
    assert {h.status for h in target.patches[-1].hunks} == {"fuzz"}
    assert {path: target.files[path] for path in gnu_files} == gnu_files
    moved = target.patch("offset")
    assert [(h.status, h.offset) for h in moved.hunks] == [("offset", 1)]


def test_layout_ids_metadata_and_the_inferred_order(imported):
    fork, result, base = imported
    m = load_manifest(base / "adopted" / "patches.yaml")
    assert {(p.strip, p.root) for p in m.patches} == {(1, "vllm")}
    ids = [p.id for p in m.patches]
    assert ids[:3] == ["tweak-1", "tweak-2", "tweak-3"] and "from-a-mail" in ids
    one = m.patch("tweak-1")
    assert one.origin == "backport" and one.upstream_pr == 52001
    assert m.patch("amend-tweak-1").origin == "fork" and m.patch("amend-tweak-1").upstream_pr is None
    assert m.patch("amend-tweak-1").after == ("tweak-1",)
    assert m.patch("next-to-tweak-1").after == ("amend-tweak-1",)
    assert m.patch("top-of-file-2").after == ()  # same file as tweak-2, other lines
    assert [p.id for p in m.patches if p.after] == ["amend-tweak-1", "next-to-tweak-1"]
    mailed = m.patch("from-a-mail")
    assert mailed.title == "[Bugfix] Carry the mail fix (#54321)" and mailed.upstream_pr == 54321
    text = (base / "adopted" / "patches.yaml").read_text()
    assert "# disabled in " in text and "0106-disabled.patch" in text
    assert not (base / "adopted" / "recipes" / "disabled").exists()


def test_patch_files_keep_their_diff_byte_for_byte_under_a_dep3_header(imported):
    fork, result, base = imported
    adopted = base / "adopted" / "recipes"
    original = (fork.dir / "0001-tweak-1.patch").read_bytes()
    copy = (adopted / "tweak-1" / "0001-tweak-1.patch").read_bytes()
    head, _, diff = copy.partition(b"\n---\n")
    assert original.endswith(diff) and diff.startswith(b"diff --git a/")
    assert head.startswith(b"Description: Fork tweak 1 for ")
    assert b"\n .\n See vllm-project/vllm#52001 for the upstream discussion." in head
    gz = (adopted / "tweak-3" / "0003-tweak-3.patch").read_bytes()
    assert gzip.decompress((fork.dir / "0003-tweak-3.patch.gz").read_bytes()).endswith(gz.partition(b"\n---\n")[2])
    mailed = (adopted / "from-a-mail" / "0104-from-a-mail.patch").read_text()
    assert mailed.startswith("Description: [Bugfix] Carry the mail fix (#54321)\n .\n Backported for the fork.")
    assert "\nAuthor: Ada Fork <ada@example.org>\nLast-Update: 2026-11-03\n---\ndiff --git" in mailed


def test_a_file_with_a_dep3_header_is_copied_unchanged(pristine, tmp_path):
    rel = candidates(pristine)[5]
    text = (pristine / "vllm" / rel).read_text()
    data = "Description: already DEP-3\nOrigin: other\n---\n" + udiff(rel, text, insert_after(text, 10, "# x"))
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "one.patch").write_text(data)
    result = import_series([str(tmp_path / "p")], tmp_path / "out", [VERSION])
    assert (tmp_path / "out" / "recipes" / "one" / "one.patch").read_text() == data
    assert result.ok and "file-name order, which is a guess" in result.notes[0]
    from patchset.report.importer import import_doc

    doc = json.loads(json.dumps(import_doc(result)))  # --format json: the same key as every verb's warnings
    assert doc["warnings"] == result.notes and "notes" not in doc


def test_repo_layout_is_detected_too(pristine, tmp_path):
    rel = "vllm/" + candidates(pristine)[6]
    text = (pristine / rel).read_text()
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "up.diff").write_text(udiff(rel, text, insert_after(text, 12, "# y")))
    result = import_series([str(tmp_path / "p")], tmp_path / "out", [VERSION], dry_run=True)
    assert result.ok and (result.patches[0].strip, result.patches[0].root) == (1, "")
    assert not (tmp_path / "out").exists()  # dry run


def test_git_commits_from_a_local_clone(pristine, tmp_path):
    rel = "vllm/" + candidates(pristine)[7]
    clone = tmp_path / "clone"
    (clone / rel).parent.mkdir(parents=True)
    shutil.copyfile(pristine / rel, clone / rel)
    repo = git.Repo.init(clone)
    repo.index.add([rel])
    author = git.Actor("Up Stream", "up@example.org")
    repo.index.commit("v0.29.0", author=author, committer=author)
    text = (clone / rel).read_text()
    (clone / rel).write_text(insert_after(text, 20, "# upstream fix"))
    repo.index.add([rel])
    fix = repo.index.commit("[Bugfix] An upstream fix (#55555)\n\nLonger story.", author=author, committer=author)
    result = import_series([f"git:{clone}@{fix.hexsha}"], tmp_path / "out", [VERSION])
    assert result.ok
    m = load_manifest(tmp_path / "out" / "patches.yaml")
    p = m.patches[0]
    assert (p.origin, p.upstream_pr, p.upstream_commit) == ("backport", 55555, fix.hexsha)
    assert p.id == "bugfix-an-upstream-fix-55555" and (p.strip, p.root) == (1, "")
    text = (clone / rel).read_text()
    (clone / rel).write_text(text.replace("# upstream fix\n", "# upstream fix, then a follow-up\n"))
    repo.index.add([rel])
    repo.index.commit("Follow-up (#55556)", author=author, committer=author)
    both = import_series([f"git:{clone}@{fix.hexsha}~1..HEAD"], tmp_path / "range", [VERSION])
    assert [(x.id, x.pr, x.after) for x in both.patches] == [
        ("bugfix-an-upstream-fix-55555", 55555, []), ("follow-up-55556", 55556, ["bugfix-an-upstream-fix-55555"])]
    with pytest.raises(PatchsetError, match="git cannot give the commit"):
        import_series([f"git:{clone}@no-such-rev"], tmp_path / "bad", [VERSION])


def test_refuses_to_overwrite_and_writes_nothing_on_error(pristine, imported, tmp_path):
    fork, result, base = imported
    before = sorted(p.name for p in (base / "adopted").rglob("*"))
    with pytest.raises(PatchsetError, match="exists"):
        import_series([str(fork.dir / "series")], base / "adopted", [VERSION])
    bad = tmp_path / "series"
    shutil.copytree(fork.dir, tmp_path / "p")
    (tmp_path / "p" / "series").write_text("0001-tweak-1.patch\n0002-tweak-2.patch -R\n")
    with pytest.raises(PatchsetError, match=r"series:2: option '-R' is not supported"):
        import_series([str(tmp_path / "p" / "series")], tmp_path / "out", [VERSION])
    assert not (tmp_path / "out").exists() and not bad.exists()
    assert sorted(p.name for p in (base / "adopted").rglob("*")) == before


def test_cli_import_then_deps_then_check(pristine, imported, tmp_path, capsys):
    fork, _, _ = imported
    into = tmp_path / "cli"
    assert main(["import", str(fork.dir / "series"), "--into", str(into), "--target", VERSION, "--ci",
                 "--format", "json"]) == 1  # the stale-context patch fails, as with patch -F0
    out = json.loads(capsys.readouterr().out)
    assert not out["ok"] and len(out["patches"]) == 40 and len(out["edges"]) == 2
    # --ci: init's scaffolding beside the imported manifest, and a second import refuses before writing.
    assert {str(into / ".pre-commit-config.yaml"), str(into / ".github/workflows/patchset.yml"),
            str(into / ".github/workflows/patchset-upgrade.yml")} <= set(out["written"])
    again = tmp_path / "again"
    (again / ".github/workflows").mkdir(parents=True)
    (again / ".github/workflows/patchset.yml").write_text("mine\n")
    assert main(["import", str(fork.dir / "series"), "--into", str(again), "--target", VERSION, "--ci"]) == 2
    assert "patchset.yml already exists" in capsys.readouterr().err and not (again / "patches.yaml").exists()
    manifest = str(into / "patches.yaml")
    assert main(["deps", "--manifest", manifest, "--format", "json"]) == 0
    deps = json.loads(capsys.readouterr().out)
    assert {(e["patch"], e["needs"]) for e in deps["edges"]} == {("amend-tweak-1", "tweak-1"),
                                                               ("next-to-tweak-1", "amend-tweak-1")}
    assert deps["undeclared"] == [] and deps["stale"] == []
    assert main(["check", "--manifest", manifest, "--format", "markdown"]) == 1
    md = capsys.readouterr().out
    assert "```mermaid" in md and "stale-context" in md


def test_read_series_keeps_options_comments_and_disabled_entries(tmp_path):
    (tmp_path / "a.patch").write_text("x")
    (tmp_path / "b.patch").write_text("y")
    (tmp_path / "series").write_text("# comment\n\na.patch -p0  # trailing comment\n#b.patch\n")
    entries = read_series(tmp_path / "series")
    assert [(e.name, e.strip, e.disabled) for e in entries] == [("a.patch", 0, False), ("b.patch", None, True)]
    (tmp_path / "series").write_text("a.patch\nmissing.patch\n")
    with pytest.raises(PatchsetError, match=r"series:2: names missing.patch, which does not exist"):
        read_series(tmp_path / "series")


def test_an_mbox_of_several_mails_and_cherry_picked_commits(pristine, tmp_path):
    paths = candidates(pristine)
    mails = []
    for k, rel in enumerate(paths[8:10]):
        text = (pristine / "vllm" / rel).read_text()
        body = f"Backport {k}.\n\n(cherry picked from commit {'ab' * 20})" if k == 0 else "Fork only."
        mails.append(mail(f"{k}" * 40, f"Fix number {k}", body, udiff(rel, text, insert_after(text, 15, f"# m{k}"))))
    (tmp_path / "fork.mbox").write_text("".join(mails))
    result = import_series([str(tmp_path / "fork.mbox")], tmp_path / "out", [VERSION])
    assert result.ok
    m = load_manifest(tmp_path / "out" / "patches.yaml")
    assert [p.id for p in m.patches] == ["fix-number-0", "fix-number-1"]
    assert [(p.origin, p.upstream_commit) for p in m.patches] == [("backport", "ab" * 20), ("fork", None)]
    assert (m.patches[0].strip, m.patches[0].root) == (1, "vllm")


def test_force_replaces_a_previous_import_and_stray_patches_are_refused(pristine, tmp_path):
    rel = candidates(pristine)[11]
    text = (pristine / "vllm" / rel).read_text()
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "a.patch").write_text("A fix.\n\n" + udiff(rel, text, insert_after(text, 9, "# a")))
    import_series([str(tmp_path / "p")], tmp_path / "out", [VERSION])
    again = import_series([str(tmp_path / "p")], tmp_path / "out", [VERSION], force=True)
    assert again.ok and len(again.written) == 2
    stray = tmp_path / "out" / "recipes" / "old" / "old.patch"
    stray.parent.mkdir()
    stray.write_text("x")
    before = (tmp_path / "out" / "patches.yaml").read_bytes()
    with pytest.raises(PatchsetError, match=r"old\.patch is a patch the imported series does not name"):
        import_series([str(tmp_path / "p")], tmp_path / "out", [VERSION], force=True)
    assert (tmp_path / "out" / "patches.yaml").read_bytes() == before


def test_a_p0_series_entry_and_a_forced_layout(pristine, tmp_path):
    rel = candidates(pristine)[12]
    text = (pristine / "vllm" / rel).read_text()
    diff = udiff(rel, text, insert_after(text, 9, "# p0")).replace(f"a/{rel}", rel).replace(f"b/{rel}", rel)
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "zero.patch").write_text("No prefixes.\n\n" + diff)
    (tmp_path / "p" / "series").write_text("zero.patch -p0\n")
    result = import_series([str(tmp_path / "p")], tmp_path / "out", [VERSION])
    assert result.ok and (result.patches[0].strip, result.patches[0].root) == (0, "vllm")
    forced = import_series([str(tmp_path / "p")], tmp_path / "repo", [VERSION], "repo")
    assert (forced.patches[0].strip, forced.patches[0].root) == (0, "")  # as told, even where it finds nothing


def test_patches_without_git_prefixes_are_read_at_p0_where_p1_would_name_the_same_files(pristine, tmp_path):
    """FreeBSD's ports carry vLLM's patches as `--- vllm/x.py.orig<TAB>date` / `+++ vllm/x.py`, applied with
    patch -p0 (`setup.py` beside `vllm/`): -p1 under the package root names the same files, but the manifest
    should say the layout the patches have."""
    rel = candidates(pristine)[3]
    text = (pristine / "vllm" / rel).read_text()
    diff = udiff(rel, text, insert_after(text, 9, "# ports")).split("\n", 1)[1]  # no `diff --git` line
    diff = diff.replace(f"--- a/{rel}", f"--- vllm/{rel}.orig\t2026-05-11").replace(f"+++ b/{rel}", f"+++ vllm/{rel}")
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "patch-x").write_text(diff)
    result = import_series([str(tmp_path / "p" / "patch-x")], tmp_path / "out", [VERSION])
    assert result.ok and (result.patches[0].strip, result.patches[0].root) == (0, "")
    told = import_series([str(tmp_path / "p" / "patch-x")], tmp_path / "pkg", [VERSION], "package")
    assert told.ok and (told.patches[0].strip, told.patches[0].root) == (1, "vllm")  # the same files, as told


def test_cli_bad_input_exits_2_and_writes_nothing(pristine, tmp_path, capsys):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "empty.patch").write_text("Only words, no diff.\n")
    assert main(["import", str(tmp_path / "p"), "--into", str(tmp_path / "out")]) == 2
    assert "no target release" in capsys.readouterr().err
    assert main(["import", str(tmp_path / "p"), "--into", str(tmp_path / "out"), "--target", VERSION]) == 2
    assert "empty.patch: contains no diff" in capsys.readouterr().err
    assert main(["import", str(tmp_path / "nothing-here"), "--target", VERSION]) == 2
    assert not (tmp_path / "out").exists()


def test_every_patch_file_that_cannot_be_read_is_named_in_one_run(pristine, tmp_path, capsys):
    """Dynamo's patch folder held two files that end one blank context line short: one run names both, in the
    line and in JSON, so the maintainer mends them together; nothing is written. Each at the line of the user's
    own file where it is cut (6), not of the recipe import would write with a DEP-3 header above the diff (8)."""
    (tmp_path / "p").mkdir()
    short = "--- a/vllm/{0}.py\n+++ b/vllm/{0}.py\n@@ -1,3 +1,4 @@\n a\n+b\n c\n"
    (tmp_path / "p" / "01-one.patch").write_text(short.format("one"))
    (tmp_path / "p" / "02-fine.patch").write_text("--- a/vllm/x.py\n+++ b/vllm/x.py\n@@ -1 +1 @@\n-x\n+y\n")
    (tmp_path / "p" / "03-two.patch").write_text(short.format("two"))
    out = tmp_path / "out"
    assert main(["import", str(tmp_path / "p"), "--into", str(out), "--target", VERSION]) == 2
    err = capsys.readouterr().err
    assert "01-one.patch:6: malformed hunk: the patch file ends here, inside the hunk @@ -1,3 +1,4 @@: it is cut " \
        "short (its header says -3 +4 lines, it has -2 +3); 1 context line(s) short" in err and err.rstrip().endswith(
            f"[and 1 more: {tmp_path / 'p' / '03-two.patch'}:6]")
    assert main(["import", str(tmp_path / "p"), "--into", str(out), "--target", VERSION, "--format", "json"]) == 2
    doc = json.loads(capsys.readouterr().out)["error"]
    assert doc["file"].endswith("01-one.patch") and [(m["file"], m["line"]) for m in doc["more"]] == \
        [(str(tmp_path / "p" / "03-two.patch"), 6)]
    assert not out.exists()


def test_prose_that_names_a_patch_is_a_comment_not_a_disabled_entry(tmp_path):
    """Issue 21 item 6: only a comment that is nothing but an entry (name, perhaps quilt's -pN) is one
    switched off; a sentence that starts with a patch's name is prose, and an entry on further down wins."""
    for name in ("spec-decode-attn.patch", "prefill-attn-int8.patch", "off.patch", "off-p1.patch"):
        (tmp_path / name).write_text("x")
    (tmp_path / "series").write_text(
        "spec-decode-attn.patch\n"
        "# prefill-attn-int8.patch inserts before spec-decode-attn.patch's split-KV block, so it goes last\n"
        "# off.patch\n"
        "#off-p1.patch -p1\n"
        "# spec-decode-attn.patch\n"  # switched off here, on above: it is on
        "prefill-attn-int8.patch -p1\n")
    entries = read_series(tmp_path / "series")
    assert [(e.name, e.disabled, e.where.rsplit(":", 1)[1]) for e in entries] == [
        ("spec-decode-attn.patch", False, "1"), ("off.patch", True, "3"), ("off-p1.patch", True, "4"),
        ("prefill-attn-int8.patch", False, "6")]


def test_subject_tags_go_and_the_mail_keeps_its_bytes(pristine, tmp_path):
    """Issue 21 item 6: a bare ``Subject: [PATCH] x`` header (no mbox From_ line) is titled ``x``, and a
    format-patch mail keeps the blank line git writes after its signature."""
    rel = candidates(pristine)[13]
    text = (pristine / "vllm" / rel).read_text()
    diff = udiff(rel, text, insert_after(text, 9, "# bare"))
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "bare.patch").write_text(
        f"From: Ada Fork <ada@example.org>\nSubject: [PATCH v2 1/3] Keep the fork's knob\n\nWhy.\n---\n{diff}")
    mailed = mail("7" * 40, "Mailed fix", "Body.", udiff(rel, text, insert_after(text, 30, "# mailed")))
    assert mailed.endswith("-- \n2.43.0\n\n")
    (tmp_path / "q").mkdir()
    (tmp_path / "q" / "0001-mailed-fix.patch").write_text(mailed)
    result = import_series([str(tmp_path / "p"), str(tmp_path / "q")], tmp_path / "out", [VERSION])
    assert [p.title for p in result.patches] == ["Keep the fork's knob", "Mailed fix"]
    copy = (tmp_path / "out" / "recipes" / "mailed-fix" / "0001-mailed-fix.patch").read_text()
    assert copy.endswith(mailed[mailed.index("diff --git"):])  # the diff, its signature and the blank line after


# --- found by fuzzing (tests/fuzz, issue 26): every reader of import gives entries or a refusal naming the file ---

MAIL_FROM = b"From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\n"


@pytest.mark.parametrize("author, error", [("a@", IndexError), ("Someone <", IndexError), (":a@", IndexError),
                                           (":; ", AttributeError)])  # 'Group' has no 'local_part'
def test_a_mail_header_the_standard_library_cannot_parse_is_kept_as_written(author, error):
    """The library's address parser raises IndexError (AttributeError for some groups) on these From: values,
    which escaped import as an internal error."""
    import email
    import email.policy

    from patchset.verbs.importer import read_mails

    with pytest.raises(error):  # the library's own bug, which the reader must survive
        str(email.message_from_bytes(f"From: {author}\n\n".encode(), policy=email.policy.default)["From"])

    mail = MAIL_FROM + f"From: {author}\nSubject: [PATCH] Fix it\n\nWhy.\n---\n".encode() + udiff(
        "vllm/a.py", "x\n", "y\n").encode()
    (entry,) = read_mails(mail, "fix.patch", "fix.patch")
    assert entry.mail is not None and entry.mail["author"] == author.strip() and entry.mail["subject"] == "Fix it"


def test_a_damaged_patch_gz_is_refused_naming_it(tmp_path):
    """zlib.error ('invalid code lengths set') escaped read_file as an internal error."""
    from patchset.verbs.importer import SeriesImportError, read_file

    good = gzip.compress(bytes(range(256)) * 64, mtime=0)
    path = tmp_path / "fix.patch.gz"
    path.write_bytes(good[:20] + bytes(b ^ 0x55 for b in good[20:60]) + good[60:])
    with pytest.raises(SeriesImportError, match="cannot gunzip") as e:
        read_file(path, str(path))
    assert e.value.file == str(path)


def test_a_gzip_bomb_is_refused_before_it_fills_memory(tmp_path):
    from patchset.verbs import importer

    path = tmp_path / "fix.patch.gz"
    path.write_bytes(gzip.compress(b"\0" * (importer.MAX_PATCH + 1), compresslevel=1, mtime=0))
    with pytest.raises(importer.SeriesImportError, match="unpacks to more than 64 MiB") as e:
        importer.read_file(path, str(path))
    assert e.value.file == str(path)


@pytest.mark.parametrize("name", ["a" * 300 + ".patch", "a\0b.patch"])
def test_a_series_naming_a_file_no_file_system_holds_is_refused_at_its_line(tmp_path, name):
    """ENAMETOOLONG (and ValueError for a NUL) escaped read_series when it asked whether the file exists."""
    from patchset.verbs.importer import SeriesImportError, read_series

    (tmp_path / "series").write_text(f"# {name}\n{name}\n")
    with pytest.raises(SeriesImportError, match="which does not exist") as e:
        read_series(tmp_path / "series")
    assert (e.value.file, e.value.line) == (str(tmp_path / "series"), 2)


def test_a_script_beside_the_patches_is_neither_a_patch_nor_a_series(tmp_path):
    """Met on a real project (omni-infer keeps ``ems_patch.py`` beside its ``*.patch``): a file with no diff was
    read as a quilt series and refused for an "option 'patch_ems():'"; it says what it is instead."""
    (tmp_path / "ems_patch.py").write_text("def patch_ems():\n    return 1\n")
    with pytest.raises(PatchsetError, match=r"ems_patch\.py:1: is neither a patch \(it holds no diff\) nor a quilt "
                       r"series \(its first entry 'def' is not a file in "):
        read_sources([str(tmp_path / "ems_patch.py")])
    (tmp_path / "series").write_text("def patch_ems():\n")  # a file named series still says what it names
    with pytest.raises(PatchsetError, match=r"series:1: names def, which does not exist"):
        read_sources([str(tmp_path / "series")])


def test_a_date_header_too_large_for_the_email_library_is_no_date():
    """Found by the fuzzer (issue 26): the library's Date parser raised OverflowError on an hour of 27 digits."""
    from patchset.verbs.importer import read_mails

    mail = MAIL_FROM + b"From: A <a@example.org>\nDate: Mon, 30 Nov 2026 " + b"1" * 27 + (
        b":00:00 +0000\nSubject: [PATCH] Fix it\n\nWhy.\n---\n") + udiff("vllm/a.py", "x\n", "y\n").encode()
    (entry,) = read_mails(mail, "fix.patch", "fix.patch")
    assert entry.mail is not None and entry.mail["date"] == "" and entry.mail["subject"] == "Fix it"


def test_nested_patch_folders_need_a_series_and_keep_their_paths_in_the_ids(pristine, tmp_path):
    """Met on a real project (Emu3.5 keeps one patch per vLLM file under third_party/vllm/<package path>, two
    of them named __init__.py.patch, and applies them in sorted path order): a folder with nothing at its top
    says so and what to write; a series naming nested paths gives ids that keep the path."""
    paths = candidates(pristine)[14:16]
    for k, rel in enumerate(paths):
        text = (pristine / "vllm" / rel).read_text()
        f = tmp_path / "p" / f"sub{k}" / "__init__.py.patch"
        f.parent.mkdir(parents=True)
        f.write_text(udiff(rel, text, insert_after(text, 9, f"# n{k}")))
    with pytest.raises(PatchsetError, match=r"holds no series file and no patch at its top, but 2 in folders "
                       r"under it \(e\.g\. sub0/__init__\.py\.patch\) \(write .*series naming them"):
        read_sources([str(tmp_path / "p")])
    (tmp_path / "p" / "series").write_text("sub0/__init__.py.patch\nsub1/__init__.py.patch\n")
    result = import_series([str(tmp_path / "p")], tmp_path / "out", [VERSION])
    assert result.ok and [p.id for p in result.patches] == ["sub0-__init__.py", "sub1-__init__.py"]


MONO = "training/rl/vllm_src"  # a monorepo keeps vLLM's tree three folders down, as a training-recipes project did


def mono_mail(pristine: Path, rel: str, n: int, *, prefix: str = MONO) -> tuple[str, str]:
    """A git format-patch mail made in a monorepo that holds vLLM's tree under ``prefix``, and the file after it."""
    text = (pristine / "vllm" / rel).read_text()
    after = insert_after(text, middle(text), f"# monorepo fix {n}")
    diff = udiff(f"{prefix}/vllm/{rel}", text, after)
    return mail(f"{n}" * 40, f"rl: fix {n}", "For the trainer.", diff), after


def test_a_monorepo_prefix_is_found_at_the_strip_that_names_every_file(pristine, tmp_path):
    """Issue 38: `a/<dir>/<dir>/<dir>/vllm/...` took neither repo nor package layout and every hunk failed; the
    strip at which every file exists is found (4), and the check agrees with `patch -p4 -F0` and `git apply -p4`
    on the same bytes."""
    (tmp_path / "p").mkdir()
    rels = candidates(pristine)[17:19]
    afters = {}
    for n, rel in enumerate(rels, 1):
        text, afters["vllm/" + rel] = mono_mail(pristine, rel, n)
        (tmp_path / "p" / f"000{n}-rl-fix-{n}.patch").write_text(text)
    result = import_series([str(tmp_path / "p")], tmp_path / "out", [VERSION])
    assert result.ok and {(p.strip, p.root) for p in result.patches} == {(4, "")}, result.notes
    assert "layout: {strip: 4, root: \"\"}" in (tmp_path / "out" / "patches.yaml").read_text()
    jsonschema.validate(load_yaml((tmp_path / "out" / "patches.yaml").read_text()), manifest_schema())
    files = result.check.targets[0].files
    for tool in (["patch", "-p4", "-F0", "--batch", "-i"], ["git", "apply", "-p4"]):
        work = tmp_path / tool[0]
        for rel in rels:
            (work / "vllm" / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(pristine / "vllm" / rel, work / "vllm" / rel)
        for f in sorted((tmp_path / "p").iterdir()):
            subprocess.run([*tool, str(f)], cwd=work, check=True, capture_output=True)
        assert {path: (work / path).read_text() for path in afters} == afters
        assert {path: files[path].decode() for path in afters} == afters


def test_where_no_layout_names_every_file_the_note_says_which_strip_names_what(pristine, tmp_path, capsys):
    rels = candidates(pristine)[19:21]
    one, _ = mono_mail(pristine, rels[0], 1)
    typo = one.replace(f"{MONO}/vllm/{rels[0]}", f"{MONO}/vllm/{rels[0][:-3]}_tpyo.py")
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "typo.patch").write_text(typo)
    two, _ = mono_mail(pristine, rels[1], 2)
    (tmp_path / "p" / "both.patch").write_text(two.replace("-- \n2.43.0", "") + udiff(
        f"{MONO}/vllm/{rels[0]}", "a\n", "b\n").replace(f"{MONO}/vllm/{rels[0]}", f"{MONO}/vllm/no_such_file.py"))
    (tmp_path / "p" / "series").write_text("both.patch\ntypo.patch\n")
    result = import_series([str(tmp_path / "p")], tmp_path / "out", [VERSION], dry_run=True)
    assert not result.ok
    assert (f"both.patch: no layout names every file it changes in vLLM {VERSION}: --layout strip=4 names 1 of 2 "
            f"(not vllm/no_such_file.py); kept that one") in "\n".join(result.notes)
    assert (f"typo.patch: no layout names a file it changes in vLLM {VERSION} (tried strip 0 to "
            f"{rels[0].count('/') + 5}, under the repository root and under vllm/)") in "\n".join(result.notes)
    # Told a strip that names nothing: kept as told, and the note and the check say which one would.
    assert main(["import", str(tmp_path / "p" / "both.patch"), "--into", str(tmp_path / "told"), "--target",
                 VERSION, "--layout", "strip=2"]) == 1
    out = capsys.readouterr().out
    assert "its paths read with --layout strip=2 do not name every file it changes in vLLM 0.29.0" in out
    assert f"vllm/{rels[1]} exists: its paths have 2 more leading components: strip: 4" in out
    assert "layout: {strip: 2, root: \"\"}" in (tmp_path / "told" / "patches.yaml").read_text()
    for bad in ("strip=", "strip=2,root=../x", "p4"):
        assert main(["import", str(tmp_path / "p"), "--into", str(tmp_path / "bad"), "--target", VERSION,
                     "--layout", bad]) == 2
        assert "unknown layout" in capsys.readouterr().err and not (tmp_path / "bad").exists()


def test_crlf_mails_in_a_monorepo_are_adopted_as_gnu_patch_reads_them(pristine, tmp_path, capsys):
    """Issue 38's walk: format-patch mails under a monorepo prefix, two of them saved with CRLF endings, named by
    a series. They are read as GNU patch reads them (CRs stripped, with a warning naming each file), the recipes
    keep their bytes (a CRLF DEP-3 header where one is written), and the tree is GNU's."""
    rels = candidates(pristine)[21:24]
    (tmp_path / "p").mkdir()
    afters = {}
    for n, rel in enumerate(rels, 1):
        text, afters["vllm/" + rel] = mono_mail(pristine, rel, n)
        data = text.encode()
        (tmp_path / "p" / f"000{n}-fix.patch").write_bytes(data.replace(b"\n", b"\r\n") if n > 1 else data)
    (tmp_path / "p" / "series").write_text("".join(f"000{n}-fix.patch\n" for n in (1, 2, 3)))
    out = tmp_path / "out"
    assert main(["import", str(tmp_path / "p" / "series"), "--into", str(out), "--target", VERSION]) == 0
    said = capsys.readouterr().out
    for n in (2, 3):
        assert f"recipes/fix-{n}/000{n}-fix.patch: every line ends in CRLF: read with the CRs stripped" in said
        recipe = (out / "recipes" / f"fix-{n}" / f"000{n}-fix.patch").read_bytes()
        assert recipe.startswith(b"Description: rl: fix " + str(n).encode() + b"\r\n") and b"\n" not in \
            recipe.replace(b"\r\n", b"")
    assert "fix/0001-fix.patch: every line" not in said
    work = tmp_path / "gnu"
    for rel in rels:
        (work / "vllm" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(pristine / "vllm" / rel, work / "vllm" / rel)
    for n in (1, 2, 3):
        subprocess.run(["patch", "-p4", "-F0", "--batch", "-i", str(tmp_path / "p" / f"000{n}-fix.patch")],
                       cwd=work, check=True, capture_output=True)
    assert {path: (work / path).read_text() for path in afters} == afters
    m = load_manifest(out / "patches.yaml")
    assert [p.title for p in m.patches] == ["rl: fix 1", "rl: fix 2", "rl: fix 3"]
    assert main(["check", "--manifest", str(out / "patches.yaml"), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert sum("every line ends in CRLF" in w for w in doc["targets"][0]["warnings"]) == 2
    assert main(["check", "--manifest", str(out / "patches.yaml"), "--format", "junit"]) == 0
    import xml.etree.ElementTree as ET

    props = ET.fromstring(capsys.readouterr().out).findall("./testsuite/properties/property[@name='warning']")
    assert sum(f"{VERSION}: " in p.get("value", "") and "every line ends in CRLF" in p.get("value", "")
               for p in props) == 2


def test_an_error_in_a_patch_file_names_that_file_and_its_own_line(pristine, tmp_path, capsys):
    """Issue 38: a bad hunk at line 13 of a patch named by a series was reported as `patches/series:1:13` (JSON
    file "patches/series:1"); it is the patch file's own line (16, where the file cuts the hunk short), and a
    mail further down an mbox is named at the line of the mbox it stands on."""
    (tmp_path / "p").mkdir()
    bad = "A note.\n\n" + "\n" * 8 + "--- a/vllm/x.py\n+++ b/vllm/x.py\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n"
    assert bad.splitlines()[12].startswith("@@")  # line 13
    (tmp_path / "p" / "bad.patch").write_text(bad)
    (tmp_path / "p" / "series").write_text("bad.patch\n")
    assert main(["import", str(tmp_path / "p" / "series"), "--into", str(tmp_path / "o"), "--target", VERSION,
                 "--format", "json"]) == 2
    err = json.loads(capsys.readouterr().out)["error"]
    assert (err["file"], err["line"]) == (str(tmp_path / "p" / "bad.patch"), 16)
    rel = candidates(pristine)[24]
    good, _ = mono_mail(pristine, rel, 1, prefix=".")
    second = mail("2" * 40, "broken", "Cut.", "--- a/vllm/x.py\n+++ b/vllm/x.py\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n")
    (tmp_path / "p" / "two.mbox").write_text(good + second)
    at = (good + second).splitlines().index("@@ -1,3 +1,3 @@") + 1
    assert main(["import", str(tmp_path / "p" / "two.mbox"), "--into", str(tmp_path / "o"), "--target",
                 VERSION]) == 2
    assert f"two.mbox:{at}: malformed hunk" in capsys.readouterr().err


def test_import_ci_takes_an_action_and_its_files_name_import(pristine, tmp_path, monkeypatch, capsys):
    """Issue 38: `import --ci` wrote `@main` six times with no way to change it, and a header saying `patchset
    init` wrote the files. It takes init's --action; without one, a release pins its own tag and a development
    build says the files use @main and how to pin them."""
    from patchset.verbs import importer, init

    rel = candidates(pristine)[25]
    text = (pristine / "vllm" / rel).read_text()
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "a.patch").write_text(udiff(rel, text, insert_after(text, 9, "# a")))
    into = tmp_path / "out"
    assert main(["import", str(tmp_path / "p"), "--into", str(into), "--target", VERSION, "--ci",
                 "--action", "me/patchset@v9.9.9"]) == 0
    workflow = (into / init.WORKFLOW).read_text()
    template = init.workflow_text("@ACTION@", [VERSION])
    assert workflow.count("uses: me/patchset@v9.9.9") == template.count("uses: @ACTION@") > 0
    assert "@main" not in workflow and "Written by `patchset import`" in workflow
    upgrade = (into / init.UPGRADE_WORKFLOW).read_text()
    assert "uses: me/patchset@v9.9.9" in upgrade and "@main" not in upgrade
    assert "Written by `patchset import`" in upgrade
    hooks = (into / init.PRE_COMMIT).read_text()
    assert "rev: v9.9.9" in hooks and "written by `patchset import`" in hooks
    assert "is not a release" not in capsys.readouterr().out
    assert main(["import", str(tmp_path / "p"), "--into", str(tmp_path / "x"), "--target", VERSION,
                 "--action", "me/patchset@v1"]) == 2  # without --ci it would write nothing with it
    assert "it goes with --ci" in capsys.readouterr().err and not (tmp_path / "x").exists()
    dev = import_series([str(tmp_path / "p")], tmp_path / "dev", [VERSION], ci=True, dry_run=True)
    if "dev" in importer.__version__ or "+" in importer.__version__:
        assert any("is not a release; pin a tag or commit with --action" in n for n in dev.notes)
    monkeypatch.setattr(init, "__version__", "1.4.2")  # an installed release
    monkeypatch.setattr(importer, "__version__", "1.4.2")
    released = import_series([str(tmp_path / "p")], tmp_path / "rel", [VERSION], ci=True)
    assert released.ok and not any("not a release" in n for n in released.notes)
    uses = init.workflow_text("@ACTION@", [VERSION]).count("uses: @ACTION@")
    assert (tmp_path / "rel" / init.WORKFLOW).read_text().count(f"uses: {init.HOME}@v1.4.2") == uses
    assert "rev: v1.4.2" in (tmp_path / "rel" / init.PRE_COMMIT).read_text()


def test_a_dry_run_over_an_earlier_import_says_what_a_real_run_would_refuse(pristine, tmp_path, capsys):
    """Issue 38: `import --dry-run` refused when patches.yaml existed (`pass --force`), though a dry run writes
    nothing, and the refusal hid the real errors. It goes on and says what a real run would refuse."""
    rel = candidates(pristine)[26]
    text = (pristine / "vllm" / rel).read_text()
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "a.patch").write_text(udiff(rel, text, insert_after(text, 9, "# a")))
    out = tmp_path / "out"
    assert main(["import", str(tmp_path / "p"), "--into", str(out), "--target", VERSION, "--ci"]) == 0
    capsys.readouterr()
    before = {f: f.read_bytes() for f in out.rglob("*") if f.is_file()}
    assert main(["import", str(tmp_path / "p"), "--into", str(out), "--target", VERSION, "--ci", "--dry-run"]) == 0
    said = capsys.readouterr().out
    assert f"without --dry-run, import would refuse: {out / 'patches.yaml'} exists (pass --force" in said
    assert "patchset.yml, " in said and "patchset-upgrade.yml already exist" in said
    assert "a/a.patch exists (pass --force to replace it)" in said
    assert {f: f.read_bytes() for f in out.rglob("*") if f.is_file()} == before
    assert main(["import", str(tmp_path / "p"), "--into", str(out), "--target", VERSION, "--dry-run", "--force",
                 "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["would_refuse"] == []
    (tmp_path / "p" / "b.patch").write_text("--- a/vllm/x.py\n+++ b/vllm/x.py\n@@ -1,3 +1,3 @@\n a\n")
    assert main(["import", str(tmp_path / "p"), "--into", str(out), "--target", VERSION, "--dry-run"]) == 2
    assert "b.patch:4: malformed hunk: the patch file ends here" in capsys.readouterr().err  # not "exists"
    assert main(["import", str(tmp_path / "p"), "--into", str(out), "--target", VERSION]) == 2
    assert "patches.yaml exists" in capsys.readouterr().err  # a real run still refuses first, writing nothing
    assert {f: f.read_bytes() for f in out.rglob("*") if f.is_file()} == before


def test_import_says_which_copy_patchset_reads_and_move_takes_the_history_along(pristine, tmp_path, capsys):
    """Issue 38: after import the series sat in patches/ and in recipes/, and nothing said which one patchset
    reads. The last lines say so; --move moves each patch file with git mv, so `git log --follow` still finds
    its history."""
    repo = git.Repo.init(tmp_path / "fork")
    fork = Path(repo.working_tree_dir or "")
    (fork / "patches").mkdir()
    names = []
    for n, rel in enumerate(candidates(pristine)[27:29], 1):
        text = (pristine / "vllm" / rel).read_text()
        names.append(f"000{n}-fix-{n}.patch")
        (fork / "patches" / names[-1]).write_text(f"Fix {n}.\n\n" + udiff(rel, text, insert_after(text, 9, f"# {n}")))
    (fork / "patches" / "series").write_text("".join(n + "\n" for n in names))
    author = git.Actor("Ada Fork", "ada@example.org")
    repo.index.add(["patches/series", *[f"patches/{n}" for n in names]])
    repo.index.commit("the fork's series", author=author, committer=author)
    assert main(["import", str(fork / "patches" / "series"), "--into", str(fork), "--target", VERSION]) == 0
    last = capsys.readouterr().out.rstrip("\n").splitlines()[-2:]
    assert last[0] == f"patchset reads {fork / 'patches.yaml'} and {fork / 'recipes'}/ (the recipes are its copy " \
        "of each patch)"
    assert last[1].startswith(f"patchset does not read {fork / 'patches' / names[0]}, ") and "--move" in last[1]
    assert main(["import", str(fork / "patches" / "series"), "--into", str(fork), "--target", VERSION, "--force",
                 "--move"]) == 0
    said = capsys.readouterr().out
    assert "moved 2 patch files into recipes/ with git mv (history follows)" in said
    assert not (fork / "patches" / names[0]).exists() and (fork / "patches" / "series").exists()
    moved = fork / "recipes" / "fix-1" / names[0]
    assert moved.read_text().startswith("Description: Fix 1.")  # the recipe import writes, over the moved file
    repo.index.commit("adopt the series", author=author, committer=author)
    log = repo.git.log("--follow", "--format=%s", "--", f"recipes/fix-1/{names[0]}").splitlines()
    assert log == ["adopt the series", "the fork's series"]
    # A patch file git does not track cannot be moved with its history: refused, nothing written.
    (tmp_path / "loose").mkdir()
    (tmp_path / "loose" / "a.patch").write_text(moved.read_text())
    assert main(["import", str(tmp_path / "loose"), "--into", str(fork / "other"), "--target", VERSION,
                 "--move"]) == 2
    assert "is not a file git tracks" in capsys.readouterr().err and not (fork / "other").exists()
