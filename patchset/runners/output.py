"""What a test run prints: all of it to a log file, its tail kept for reports, pytest's progress passed on."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TextIO

OUTPUT_TAIL = 12000  # characters of a run's output kept for the report; the log file has all of it
_PERCENT = re.compile(r"\[\s*(\d+)%\]\s*$")


class RunOutput:
    def __init__(self, sink: TextIO, progress: Callable[[str], None], label: str, limit: int = OUTPUT_TAIL) -> None:
        self.sink = sink
        self.progress = progress
        self.label = label
        self.limit = limit
        self._tail: list[str] = []
        self._size = 0
        self._last_pct = -1

    def line(self, line: str) -> None:
        self.sink.write(line)
        self._tail.append(line)
        self._size += len(line)
        while self._size > self.limit and len(self._tail) > 1:
            self._size -= len(self._tail.pop(0))
        m = _PERCENT.search(line)
        if m and int(m.group(1)) >= self._last_pct + 25:  # every quarter is enough for a person watching
            self._last_pct = int(m.group(1))
            self.progress(f"{self.label}: {self._last_pct}%")

    def note(self, text: str) -> None:
        self._tail.append(text)

    @property
    def tail(self) -> str:
        return "".join(self._tail)
