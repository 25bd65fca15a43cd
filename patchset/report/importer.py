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
            "notes": result.notes, "disabled": result.disabled, "would_refuse": result.refused,
            "patches": [planned_doc(p) for p in result.patches],
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
    return "\n".join(out) + "\n"


RENDERERS = {"table": render_table, "json": render_json}
