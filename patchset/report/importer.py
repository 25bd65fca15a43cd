"""How an import result looks: the manifest (dry run) or what was written, the edges found, then the check."""

from __future__ import annotations

from patchset.report import check as check_report
from patchset.report.common import dump_json
from patchset.report.deps import edge_doc
from patchset.verbs.importer import ImportResult, Planned


def planned_doc(p: Planned) -> dict:
    return {"id": p.id, "patch": p.file, "layout": {"strip": p.strip, "root": p.root},
            "origin": p.origin, "upstream": {"pr": p.pr, "commit": p.commit}, "after": p.after}


def import_doc(result: ImportResult) -> dict:
    return {"ok": result.ok, "manifest": str(result.manifest), "dry_run": result.dry_run, "written": result.written,
            "warnings": result.notes, "disabled": result.disabled, "would_refuse": result.refused,
            "patches": [planned_doc(p) for p in result.patches], "reads": reads(result),
            "moved": [{"from": a, "to": b} for a, b in result.moved], "kept": result.kept,
            "edges": [edge_doc(e) for e in result.edges], "check": check_report.check_doc(result.check)}


def render_json(result: ImportResult) -> str:
    return dump_json(import_doc(result))


def render_table(result: ImportResult) -> str:
    out = []
    if result.dry_run:
        out += [result.text, "dry run: nothing written"]
        out += [f"without --dry-run, import would refuse: {r}" for r in result.refused]
    else:
        out.append(f"wrote {result.manifest} and {len(result.patches)} patch files under "
                   f"{result.manifest.parent / 'recipes'}")
    out += [f"note: {n}" for n in result.notes]
    out += [f"kept as a comment (disabled in the series): {d}" for d in result.disabled]
    for e in result.edges:
        out.append(f"after: {e.patch} needs {e.needs}: {e.why}")
    out.append("")
    out.append(check_report.render_table(result.check).rstrip("\n"))
    out += last_lines(result)
    return "\n".join(out) + "\n"


def reads(result: ImportResult) -> str:
    """Which copy of the series patchset reads."""
    return f"{result.manifest} and {result.manifest.parent / 'recipes'}"


def last_lines(result: ImportResult) -> list[str]:
    """Which copy patchset reads, and what becomes of the one it was imported from."""
    would = "would read" if result.dry_run else "reads"
    out = [f"patchset {would} {reads(result)}/ (the recipes are its copy of each patch)"]
    if result.moved:
        verb = "would move" if result.dry_run else "moved"
        files = "patch file" if len(result.moved) == 1 else "patch files"
        out.append(f"{verb} {len(result.moved)} {files} into recipes/ with git mv (history follows); "
                   "commit the move (a series file that named them is left as it was)")
    if result.kept:
        shown = ", ".join(result.kept[:3]) + (f" and {len(result.kept) - 3} more" if len(result.kept) > 3 else "")
        them, their = ("it", "its") if len(result.kept) == 1 else ("them", "their")
        out.append(f"patchset does not read {shown}: remove {them} once nothing else does"
                   + ("" if result.moved else f", or import with --move (and --force over this import) to move "
                      f"{them} with git mv, so {their} history follows"))
    return out


RENDERERS = {"table": render_table, "json": render_json}
