"""Download progress: on a terminal, after two seconds, one self-overwriting line; silent otherwise."""

from __future__ import annotations

import io
import sys

from patchset import cache
from patchset.cli import progress
from patchset.sources import download


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_long_download_shows_one_line_that_ends_when_it_is_done(monkeypatch):
    clock, err = Clock(), io.StringIO()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    monkeypatch.setattr(sys, "stderr", err)
    line = progress.DownloadLine()
    line("vllm-0.29.0.tar.gz", 1_000_000, 41_000_000)
    assert err.getvalue() == ""  # under two seconds: nothing
    clock.now += 3
    line("vllm-0.29.0.tar.gz", 12_000_000, 41_000_000)
    clock.now += 0.1
    line("vllm-0.29.0.tar.gz", 13_000_000, 41_000_000)  # too soon for another update
    clock.now += 0.1
    line("vllm-0.29.0.tar.gz", 41_000_000, 41_000_000)
    assert err.getvalue() == ("\rdownloading vllm-0.29.0.tar.gz: 12.0 of 41.0 MB"
                              "\rdownloading vllm-0.29.0.tar.gz: 41.0 of 41.0 MB\n")


def test_progress_is_silent_when_stderr_is_not_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    progress.install()
    assert download.download_progress is None


def test_a_download_reports_to_the_installed_line(tmp_path, monkeypatch):
    import hashlib

    blob = tmp_path / "f.bin"
    blob.write_bytes(b"x" * 3_000_000)
    seen: list[tuple[str, int, int]] = []
    monkeypatch.setattr(download, "download_progress", lambda name, done, total: seen.append((name, done, total)))
    sha = hashlib.sha256(blob.read_bytes()).hexdigest()
    download.blob(cache.Cache(tmp_path / "c"), sha, blob.as_uri())
    assert seen and seen[-1] == ("f.bin", 3_000_000, 3_000_000)
