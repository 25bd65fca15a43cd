"""Writing a file so that a reader sees the old bytes or the new ones, never a half-written file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write(dest: Path, data: bytes) -> None:
    """Write ``data`` to ``dest`` under a temporary name beside it, then rename it into place (keeping its mode)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if dest.exists():
            os.chmod(tmp, dest.stat().st_mode & 0o777)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
