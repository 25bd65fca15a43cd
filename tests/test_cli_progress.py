"""Progress on stderr: a live display on a terminal, one plain line per stage of the long verbs in a pipe
or a log, nothing with -q, the short verbs' stages too with -v; stdout never carries any of it."""

from __future__ import annotations

import io
import json
import sys

from helpers import SCRATCH_SOURCE, scratch_fork

from patchset import cache
from patchset.cli import main, progress
from patchset.sources import download


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_in_a_log_a_long_verb_says_each_stage_in_one_line(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    r = progress.Reporter("test", tty=False)
    r.stage("vLLM 0.29.0: getting the pristine tree ...")
    r.stage("checking vLLM 0.29.0 ...", plain=False)  # a short verb's stage: only on a terminal
    assert err.getvalue() == "patchset test: vLLM 0.29.0: getting the pristine tree ...\n"


def test_quiet_says_nothing_and_verbose_says_the_short_stages_too(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    progress.Reporter("test", quiet=True, tty=False).stage("a stage")
    progress.Reporter("test", quiet=True, tty=True).stage("a stage")
    assert err.getvalue() == ""
    progress.Reporter("check", verbose=True, tty=False).stage("checking vLLM 0.29.0 ...", plain=False)
    assert err.getvalue() == "patchset check: checking vLLM 0.29.0 ...\n"


def test_a_long_download_in_a_log_is_a_line_when_it_has_taken_a_while_and_one_when_it_ends(monkeypatch):
    clock, err = Clock(), io.StringIO()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    monkeypatch.setattr(sys, "stderr", err)
    r = progress.Reporter("check", tty=False)
    r.download("vllm-0.29.0.tar.gz", 1_000_000, 41_000_000)
    assert err.getvalue() == ""  # under two seconds: nothing
    clock.now += 3
    r.download("vllm-0.29.0.tar.gz", 12_000_000, 41_000_000)
    r.download("vllm-0.29.0.tar.gz", 13_000_000, 41_000_000)
    clock.now += 1
    r.download("vllm-0.29.0.tar.gz", 41_000_000, 41_000_000)
    assert err.getvalue() == ("patchset check: downloading vllm-0.29.0.tar.gz (41.0 MB)\n"
                              "patchset check: downloaded vllm-0.29.0.tar.gz in 4 s\n")


def test_on_a_terminal_each_stage_stays_as_a_line_once_the_next_begins(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setenv("NO_COLOR", "1")
    r = progress.Reporter("test", tty=True)
    r.stage("preparing the test tree ...")
    r.download("vllm-0.29.0-cp38-abi3-manylinux_2_28_x86_64.whl", 10, 100)
    r.stage("offload-fix: running with the fix ...")
    r.finish()
    lines = err.getvalue().splitlines()
    assert "test: preparing the test tree ..." in lines and "test: offload-fix: running with the fix ..." in lines
    assert "\x1b[3" not in err.getvalue(), "NO_COLOR: no colours"


def test_install_routes_downloads_unless_quiet():
    progress.install("check")
    assert download.download_progress == progress.current.download
    progress.install("check", quiet=True)
    assert download.download_progress is None


def test_a_download_reports_to_the_installed_callback(tmp_path, monkeypatch):
    import hashlib

    blob = tmp_path / "f.bin"
    blob.write_bytes(b"x" * 3_000_000)
    seen: list[tuple[str, int, int]] = []
    monkeypatch.setattr(download, "download_progress", lambda name, done, total: seen.append((name, done, total)))
    sha = hashlib.sha256(blob.read_bytes()).hexdigest()
    download.blob(cache.Cache(tmp_path / "c"), sha, blob.as_uri())
    assert seen and seen[-1] == ("f.bin", 3_000_000, 3_000_000)


def test_check_with_v_and_q_in_a_pipe(tmp_path, monkeypatch, capsys):
    fork = scratch_fork(tmp_path / "fork")
    monkeypatch.chdir(fork)
    assert main(["check", "--source", SCRATCH_SOURCE, "--format", "json", "-v"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["ok"] is True, "stdout is still one document"
    assert out.err.splitlines() == [f"patchset check: checking vLLM {v} ..." for v in ("0.29.0", "0.30.0")]
    assert main(["check", "--source", SCRATCH_SOURCE, "-q"]) == 0
    assert capsys.readouterr().err == ""
    assert main(["check", "--source", SCRATCH_SOURCE]) == 0
    assert capsys.readouterr().err == "", "a short verb's stages stay off a log without -v"


def test_a_warning_is_said_even_with_q_and_above_a_live_display(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    progress.Reporter("build", quiet=True, tty=False).say("warning: x is not carried")
    live = progress.Reporter("build", tty=True)
    live.stage("Step 1/6 : FROM base")
    live.say("warning: y is not carried")
    live.finish()
    assert "warning: x is not carried\n" in err.getvalue() and "warning: y is not carried" in err.getvalue()
