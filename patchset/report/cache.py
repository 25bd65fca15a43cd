"""How `patchset cache info` and `patchset cache prune` look: a table per kind and release, or JSON."""

from __future__ import annotations

import time

from patchset.report.common import dump_json, render, table
from patchset.verbs.cache import KINDS, CacheInfo, PruneResult


def size_text(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return f"{n} B"  # pragma: no cover


def info_doc(info: CacheInfo) -> dict:
    return {"ok": True, "root": str(info.root), "bytes": info.size,
            "kinds": [{"release": r, "kind": k, "entries": n, "bytes": b} for r, k, n, b in info.by_kind()],
            "releases": [{"release": r, "last_used": round(t)} for r, t in info.releases().items()]}


def info_table(info: CacheInfo) -> str:
    used = info.releases()
    rows = [(r or "-", k, str(n), size_text(b),
             time.strftime("%Y-%m-%d %H:%M", time.localtime(used[r])) if r else "-",
             KINDS.get(k, "not patchset's: never pruned")) for r, k, n, b in info.by_kind()]
    text = render(table(f"patchset cache: {info.root}", ("release", "kind", "entries", "size", "last used", "what"),
                        rows))
    return text + f"total {size_text(info.size)} in {info.root}\n"


def prune_doc(result: PruneResult) -> dict:
    return {"ok": True, "root": str(result.root), "dry_run": result.dry_run, "freed_bytes": result.freed,
            "removed": [{"kind": e.kind, "release": e.release, "path": str(e.path), "bytes": e.size}
                        for e in result.removed],
            "kept": result.kept, "in_use": result.in_use, "busy": [str(e.path) for e in result.busy]}


def prune_table(result: PruneResult) -> str:
    verb = "would remove" if result.dry_run else "removed"
    out = [f"{verb} {e.path} ({size_text(e.size)})" for e in result.removed]
    out += [f"kept {r} (in use by a running patchset)" for r in result.in_use]
    out += [f"kept {e.path} (being filled)" for e in result.busy]
    out.append(f"{verb} {len(result.removed)} entries, {size_text(result.freed)}; kept releases: "
               f"{', '.join(result.kept + result.in_use) or 'none'}")
    return "\n".join(out) + "\n"


INFO = {"table": info_table, "json": lambda info: dump_json(info_doc(info))}
PRUNE = {"table": prune_table, "json": lambda result: dump_json(prune_doc(result))}
