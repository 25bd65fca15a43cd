"""A release's verdicts kept in the cache (core/kept.py): read back as they were worked out, keyed by every
byte they rest on, and never believed when damaged.

The series is the bench's fork-shaped one (bench/forkseries.py: twelve patches made from real 0.29.0
files) on the real 0.29.0 and 0.31.0, where many hunks fail and some are followed to other files, so the
failure path (candidates, differing lines, moved-code leads) is what is kept and read back.
"""

from __future__ import annotations

import hashlib
import marshal
import sys
from dataclasses import replace
from pathlib import Path

import git
import pytest

from patchset.cli import main
from patchset.core import kept
from patchset.core.manifest_load import load_manifest
from patchset.core.pristine import open_release
from patchset.errors import PatchFileError
from patchset.sources import open_source
from patchset.sources.git import GitSource
from patchset.verbs import check as check_verb

pytestmark = pytest.mark.network

REPO = Path(__file__).resolve().parent.parent
RELEASES = ["0.29.0", "0.31.0"]


@pytest.fixture
def fork(tmp_path: Path) -> Path:
    """A fresh fork-shaped series (its manifest's path is new, so no entry of another run is found)."""
    sys.path.insert(0, str(REPO / "bench"))
    import forkseries

    series = forkseries.generate(Path(open_source("pypi", "0.29.0").root), tmp_path / "fork", count=12,
                                 targets=RELEASES)
    return series.manifest


def spied(monkeypatch: pytest.MonkeyPatch, owner: object, name: str, which: int) -> list:
    """Argument ``which`` of every call of ``owner.name`` from now on (each call still runs)."""
    calls: list = []
    real = getattr(owner, name)

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(args[which])
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, spy)
    return calls


def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The releases check works out (rather than reads back), in order."""
    monkeypatch.setenv("PATCHSET_JOBS", "1")  # counted in this process
    return spied(monkeypatch, check_verb, "evaluate_release", 1)


def test_a_second_check_reads_every_release_back_and_prints_the_same_bytes(fork, monkeypatch, capsys):
    worked = counted(monkeypatch)
    outputs = []
    for _ in range(2):
        code = main(["check", "--manifest", str(fork), "--format", "json"])
        outputs.append((code, capsys.readouterr().out))
    assert worked == RELEASES  # the first run only
    monkeypatch.setenv("PATCHSET_NO_PARSE_CACHE", "1")
    assert main(["check", "--manifest", str(fork), "--format", "json"]) == 1
    outputs.append((1, capsys.readouterr().out))
    assert worked == RELEASES * 2
    assert len(set(outputs)) == 1
    assert '"failed"' in outputs[0][1] and '"moved": "vllm/' in outputs[0][1]


def test_what_is_read_back_is_what_was_worked_out(fork):
    manifest = load_manifest(fork)
    report = check_verb.check(manifest, ["0.31.0"], files=False)
    result = report.targets[0]
    tree = open_release(manifest, "0.31.0", "pypi")
    result.warnings = result.warnings[len(tree.warnings) + len(manifest.warnings):]  # added on every run
    at = kept.entry(manifest, "0.31.0", tree)
    assert at is not None and at.is_file()
    back = kept.load(at)
    assert back == result
    hunks = [h for p in back.patches for h in p.hunks]
    assert any(h.moved and h.moved_evidence for h in hunks)
    assert any(h.candidates for h in hunks) and any(h.differ for h in hunks)
    assert any(h.line for h in hunks) and any(p.patch_file and p.sha256 for p in back.patches)


def test_a_byte_of_any_input_is_another_entry(fork, tmp_path):
    manifest = load_manifest(fork)
    tree = open_release(manifest, "0.29.0", "pypi")
    first = kept.entry(manifest, "0.29.0", tree)
    assert first == kept.entry(manifest, "0.29.0", tree)
    assert first != kept.entry(manifest, "0.31.0", open_release(manifest, "0.31.0", "pypi"))
    patch = Path(manifest.patches[5].choice_for("0.29.0").path)
    patch.write_bytes(patch.read_bytes().replace(b"\n", b"\n\n", 1))  # a blank line in the header: same verdicts
    assert kept.entry(manifest, "0.29.0", tree) != first
    fork.write_text(fork.read_text() + "\n")
    assert kept.entry(manifest, "0.29.0", tree) not in (first, None)
    # two commits of one tree: the same files, but another history (which upstream commits it holds)
    repo = git.Repo.init(tmp_path / "upstream")
    (tmp_path / "upstream" / "x.py").write_text("x = 1\n")
    repo.index.add(["x.py"])
    repo.index.commit("base")
    repo.create_tag("v0.29.0")
    repo.index.commit("nothing changed but the history")
    repo.create_tag("v0.29.1")
    one, other = (GitSource(str(tmp_path / "upstream"), tag) for tag in ("v0.29.0", "v0.29.1"))
    assert one.commit.tree == other.commit.tree
    assert None is not kept.entry(manifest, "0.29.0", one) != kept.entry(manifest, "0.29.0", other)
    # the code's part of the key: every module verdicts rest on
    code = {Path(f).relative_to(REPO).as_posix() for f in kept._code()}
    assert {"patchset/core/engine.py", "patchset/core/series.py", "patchset/core/patchfile.py",
            "patchset/core/moved.py", "patchset/sources/lineindex.py", "patchset/verbs/check.py"} <= code


def test_a_damaged_entry_is_worked_out_again(fork, monkeypatch, capsys):
    worked = counted(monkeypatch)
    assert main(["check", "--manifest", str(fork), "--format", "json", "--vllm", "0.31.0"]) == 1
    want = capsys.readouterr().out
    manifest = load_manifest(fork)
    at = kept.entry(manifest, "0.31.0", open_release(manifest, "0.31.0", "pypi"))
    whole = at.read_bytes()
    payload = marshal.loads(whole[32:])
    wrong_word = (*payload[:4], ((*payload[4][0][:1], "appliez", *payload[4][0][2:]), *payload[4][1:]))
    for damaged in (whole[: len(whole) // 2],  # cut short
                    whole[:-1] + bytes([whole[-1] ^ 1]),  # one bit
                    hashlib.sha256(b"x").digest() + b"x",  # whole, but not a result
                    (lambda p: hashlib.sha256(p).digest() + p)(marshal.dumps(wrong_word))):  # a word not ours
        at.write_bytes(damaged)
        assert kept.load(at) is None
        assert main(["check", "--manifest", str(fork), "--format", "json", "--vllm", "0.31.0"]) == 1
        assert capsys.readouterr().out == want
        assert kept.load(at) is not None  # written anew
    assert worked == ["0.31.0"] * 5


def test_a_refusal_is_never_kept(fork):
    manifest = load_manifest(fork)
    patch = Path(manifest.patches[0].choice_for("0.29.0").path)
    patch.write_bytes(patch.read_bytes() + b"@@ -1,2 +1,2 @@\n-cut short\n")
    for _ in range(2):  # refused every time: nothing was kept in between
        with pytest.raises(PatchFileError):
            check_verb.check(manifest, ["0.29.0"], files=False)
    assert not kept.entry(manifest, "0.29.0", open_release(manifest, "0.29.0", "pypi")).exists()


def test_nothing_is_kept_of_a_folder_or_of_a_fallback(fork, tmp_path):
    manifest = load_manifest(fork)
    tree = open_release(manifest, "0.29.0", "pypi")
    folder = open_source(f"dir:{tree.root}", "0.29.0")
    assert kept.entry(manifest, "0.29.0", folder) is None  # a folder has no identity by content here
    at = tmp_path / "derived" / "check" / "x.marshal"
    result = check_verb.check(manifest, ["0.31.0"], files=False).targets[0]
    kept.keep(at, replace(result, settled=False))  # a fallback stood in: read again next time
    assert not at.exists()
    kept.keep(at, result)
    assert kept.load(at) == result


def test_after_an_edit_the_releases_are_worked_out_again_but_no_hunk_is_followed_again(fork, monkeypatch, capsys):
    from patchset.core import moved

    worked = counted(monkeypatch)
    followed = spied(monkeypatch, moved, "follow", 1)
    at = kept.leads_entry(open_release(load_manifest(fork), "0.31.0", "pypi"), "vllm")
    at.unlink(missing_ok=True)  # a lead rests on the release and the hunk alone: another run's are as good
    assert main(["check", "--manifest", str(fork), "--format", "json"]) == 1
    first = capsys.readouterr().out
    assert worked == RELEASES and followed  # some hunks of 0.31.0 were followed to other files
    patch = Path(load_manifest(fork).patches[3].choice_for("0.29.0").path)
    data = patch.read_bytes()
    patch.write_bytes(b"an edit of its first line" + data[data.index(b"\n"):])  # no line moves
    n = len(followed)
    assert main(["check", "--manifest", str(fork), "--format", "json"]) == 1
    edited = capsys.readouterr().out
    assert worked == RELEASES * 2 and len(followed) == n  # every release again, no hunk followed again
    monkeypatch.setenv("PATCHSET_NO_PARSE_CACHE", "1")  # nothing kept: the leads found afresh
    assert main(["check", "--manifest", str(fork), "--format", "json"]) == 1
    assert capsys.readouterr().out == edited != first  # the patch's sha256 changed, nothing else
    assert len(followed) > n
    monkeypatch.delenv("PATCHSET_NO_PARSE_CACHE")
    n = len(followed)

    whole = at.read_bytes()
    assert len(kept.load_leads(at)) > 0
    for damaged in (whole[:-3], whole[:40] + bytes([whole[40] ^ 1]) + whole[41:],
                    (lambda p: hashlib.sha256(p).digest() + p)(marshal.dumps({b"k" * 32: ("a", 1, "c")}))):
        at.write_bytes(damaged)
        assert kept.load_leads(at) == {}
        patch.write_bytes(b"x" + patch.read_bytes())  # no kept verdicts either
        assert main(["check", "--manifest", str(fork), "--format", "json"]) == 1
        assert '"moved": "vllm/' in capsys.readouterr().out
        assert kept.load_leads(at) != {}  # followed again and written anew
        assert len(followed) > n
        n = len(followed)
