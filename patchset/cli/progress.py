"""Progress on stderr for steps that take a while (downloads), on a terminal only; silent in pipes and CI logs."""

from __future__ import annotations

import sys
import time

from patchset.sources import download

EVERY = 0.5  # seconds between updates
AFTER = 2.0  # a step that ends sooner than this says nothing


class DownloadLine:
    """One self-overwriting line a download: ``downloading vllm-0.29.0.tar.gz: 12.0 of 41.3 MB``."""

    def __init__(self) -> None:
        self.started: dict[str, float] = {}
        self.shown = 0.0

    def __call__(self, name: str, done: int, total: int) -> None:
        now = time.monotonic()
        start = self.started.setdefault(name, now)
        finished = total and done >= total
        if now - start < AFTER or (now - self.shown < EVERY and not finished):
            return
        self.shown = now
        size = f"{done / 1e6:.1f} of {total / 1e6:.1f} MB" if total else f"{done / 1e6:.1f} MB"
        sys.stderr.write(f"\rdownloading {name}: {size}" + ("\n" if finished else ""))
        sys.stderr.flush()


def install() -> None:
    """Downloads show progress when stderr is a terminal."""
    download.download_progress = DownloadLine() if sys.stderr.isatty() else None
