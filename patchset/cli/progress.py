"""Progress on stderr, never on stdout (which holds the report, or the one JSON document).

On a terminal: a live display (rich) for what takes a while: downloads with their bytes, and the stage
a verb is at (each release of ``next``, each ``test`` run and suite, each ``build`` step), each stage
left as a line once the next begins. Elsewhere (a pipe, a CI log): one plain line per stage of the
long verbs (``test``, ``build``) and per download, nothing that redraws. ``-q`` silences all of it;
``-v`` adds the short verbs' stages (each release a ``check`` evaluates) to a pipe or a log too. The
library itself never prints: verbs take a callback.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from patchset.report.common import styled
from patchset.sources import download

EVERY = 0.5  # seconds between updates of a plain download line
AFTER = 2.0  # a download that ends sooner than this says nothing


class Reporter:
    """Where a verb's progress goes, decided once from -q/-v and whether stderr is a terminal."""

    def __init__(self, verb: str, *, quiet: bool = False, verbose: bool = False, tty: bool | None = None) -> None:
        self.verb, self.quiet, self.verbose = verb, quiet, verbose
        self.tty = sys.stderr.isatty() if tty is None else tty
        self._live: Any = None  # rich.progress.Progress, started on first use
        self._stage_task: Any = None
        self._downloads: dict[str, Any] = {}
        self._started: dict[str, float] = {}
        self._shown = 0.0

    # -- stages ------------------------------------------------------------------------------------------

    def stage(self, text: str, *, plain: bool = True) -> None:
        """A stage begins. ``plain``: also said in a pipe or a log (long verbs); else only on a terminal
        or with -v."""
        if self.quiet:
            return
        if self.tty:
            live = self._start()
            if self._stage_task is None:
                self._stage_task = live.add_task(text, total=None)
            else:
                live.console.print(f"[dim]{self.verb}:[/dim] {live.tasks[0].description}", markup=True,
                                   highlight=False)
                live.update(self._stage_task, description=text)
        elif plain or self.verbose:
            print(f"patchset {self.verb}: {text}", file=sys.stderr, flush=True)

    def say(self, text: str) -> None:
        """A line that must be seen (a warning), above the live display when there is one; even with -q."""
        if self._live is not None:
            self._live.console.print(text.rstrip("\n"), markup=False, highlight=False)
        else:
            sys.stderr.write(text if text.endswith("\n") else text + "\n")
            sys.stderr.flush()

    # -- downloads ---------------------------------------------------------------------------------------

    def download(self, name: str, done: int, total: int) -> None:
        if self.quiet:
            return
        now = time.monotonic()
        start = self._started.setdefault(name, now)
        finished = bool(total) and done >= total
        if self.tty:
            live = self._start()
            task = self._downloads.get(name)
            if task is None:
                task = self._downloads[name] = live.add_task(f"downloading {name}", total=total or None)
            live.update(task, completed=done)
            if finished:
                live.remove_task(task)
            return
        # A log: one line when a download has taken a while, one when it ends.
        if name not in self._downloads and now - start >= AFTER:
            self._downloads[name] = True
            size = f" ({total / 1e6:.1f} MB)" if total else ""
            print(f"patchset {self.verb}: downloading {name}{size}", file=sys.stderr, flush=True)
        if finished and name in self._downloads:
            print(f"patchset {self.verb}: downloaded {name} in {now - start:.0f} s", file=sys.stderr, flush=True)

    # -- the live display --------------------------------------------------------------------------------

    def _start(self) -> Any:
        if self._live is None:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
            )

            console = Console(file=sys.stderr, color_system="auto" if styled() else None, highlight=False)
            self._live = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                                  TimeElapsedColumn(), console=console, transient=True)
            self._live.start()
        return self._live

    def finish(self) -> None:
        """End the live display (before the report is written), leaving the last stage as a line."""
        if self._live is not None:
            if self._stage_task is not None:
                self._live.console.print(f"[dim]{self.verb}:[/dim] {self._live.tasks[0].description}",
                                         highlight=False)
            self._live.stop()
            self._live = None


#: The reporter of this run (the CLI installs it; tests and library calls get a quiet one).
current = Reporter("patchset", quiet=True, tty=False)


def install(verb: str = "patchset", *, quiet: bool = False, verbose: bool = False) -> Reporter:
    """This run's reporter; downloads report to it."""
    global current
    current = Reporter(verb, quiet=quiet, verbose=verbose)
    download.download_progress = None if quiet else current.download
    return current


def finish() -> None:
    current.finish()
