"""How `targets` looks: a table, JSON, or one line of JSON for a CI job matrix."""

from __future__ import annotations

import json

from patchset.verbs.targets import TargetRow


def render_table(rows: list[TargetRow]) -> str:
    return "".join(f"{r.vllm:10} {r.image or '-':40} {', '.join(r.patches) or '(nothing carried)'}"
                   + (f"  [commit {r.commit[:12]} of {r.git}]" if r.commit else "") + "\n" for r in rows)


def _pin(r: TargetRow) -> dict:
    """A target pinned to a commit says which (a release on the index says nothing more)."""
    return {"git": r.git, "commit": r.commit} if r.commit else {}


def render_json(rows: list[TargetRow]) -> str:
    doc = {"targets": [{"vllm": r.vllm, "image": r.image, "patches": list(r.patches), **_pin(r)} for r in rows]}
    return json.dumps(doc, indent=2) + "\n"


def render_matrix(rows: list[TargetRow]) -> str:
    """One line of JSON for GitHub Actions' ``fromJSON()``: per release its image, ``no_proof`` (the CPU test job
    has nothing to prove there: no carried patch has ``tests:`` and no suite runs without a GPU),
    ``untested``, the carried patches without ``tests:``, for the job summary, and a commit target's git and
    commit."""
    return json.dumps({"include": [{"vllm": r.vllm, "image": r.image, "no_proof": not r.proves,
                                    "untested": ", ".join(r.untested), **_pin(r)} for r in rows]}) + "\n"


RENDERERS = {"table": render_table, "json": render_json, "matrix": render_matrix}
