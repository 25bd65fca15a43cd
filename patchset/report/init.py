"""How an init result looks: the files written (or, dry run, their text) and what to do next."""

from __future__ import annotations

from patchset.report.common import dump_json
from patchset.verbs.init import InitResult

NEXT_STEPS = (
    "next: add patches under patches: (or `patchset import SERIES --target V` for a series you carry),",
    "      `patchset validate`, `patchset check`, then commit the three files.",
)


def init_doc(result: InitResult) -> dict:
    return {"ok": True, "into": str(result.into), "dry_run": result.dry_run, "files": list(result.files),
            "written": result.written}


def render_json(result: InitResult) -> str:
    return dump_json(init_doc(result))


def render_table(result: InitResult) -> str:
    if result.dry_run:
        out = [f"--- {rel}\n{text}" for rel, text in result.files.items()] + ["dry run: nothing written"]
    else:
        out = [f"wrote {path}" for path in result.written] + list(NEXT_STEPS)
    return "\n".join(out) + "\n"


RENDERERS = {"table": render_table, "json": render_json}
