"""How the series' dependency graph looks: table, JSON, Mermaid (GitHub Markdown), Graphviz dot."""

from __future__ import annotations

import json

from patchset.core.series import PatchStatus
from patchset.report.common import dump_json, render, table
from patchset.verbs.check import CheckReport
from patchset.verbs.deps import DepsReport, Edge, Stale

# Colours by status on the release, light enough to read the ids on.
FILL = {PatchStatus.APPLIES: "#d4edda", PatchStatus.UPSTREAM: "#cce5ff", PatchStatus.NOT_TARGETED: "#eeeeee",
        PatchStatus.FAILED: "#f8d7da", PatchStatus.BLOCKED: "#fff3cd", PatchStatus.EXCLUDED: "#eeeeee",
        PatchStatus.NOT_IN_TREE: "#eeeeee"}


def render_table(report: DepsReport) -> str:
    rows = []
    undeclared = {(e.patch, e.needs) for e in report.undeclared}
    for e in report.edges:
        said = "UNDECLARED" if (e.patch, e.needs) in undeclared else "declared"
        rows.append((e.patch, e.needs, said, e.why))
    for s in report.stale:
        rows.append((s.patch, s.after, "STALE", s.why))
    out = [render(table(f"patchset deps: vLLM {report.vllm}", ("patch", "needs", "after:", "why"), rows))
           .rstrip("\n")]
    if not rows:
        out.append("no patch of the series needs another")
    if report.free:
        out.append("could move freely: " + ", ".join(report.free))
    for e in report.undeclared:
        out.append(f"undeclared: {e.patch} needs {e.needs} but does not say so (add after: [{e.needs}])")
    for s in report.stale:
        out.append(f"stale: {s.patch} says after: [{s.after}], which no hunk needs on {report.vllm} "
                   "(keep it only if something else, such as its tests, needs it)")
    out.append("ok" if report.ok else "FAILED: the order holds only by the luck of listing")
    return "\n".join(out) + "\n"


def edge_doc(e: Edge) -> dict:
    return {"patch": e.patch, "needs": e.needs, "why": e.why}


def stale_doc(s: Stale) -> dict:
    return {"patch": s.patch, "after": s.after, "why": s.why}


def deps_doc(report: DepsReport) -> dict:
    return {"ok": report.ok, "vllm": report.vllm, "edges": [edge_doc(e) for e in report.edges],
            "undeclared": [edge_doc(e) for e in report.undeclared], "stale": [stale_doc(s) for s in report.stale],
            "free": report.free, "patches": [{"id": i, "status": report.statuses[i]} for i in report.order]}


def render_json(report: DepsReport) -> str:
    return dump_json(deps_doc(report))


def _label(text: str) -> str:
    return text.replace('"', "#quot;")


def render_mermaid(report: DepsReport, *, fenced: bool = True) -> str:
    """A flowchart that GitHub renders in job summaries and Markdown: arrows point to what comes later."""
    node = {pid: f"p{i}" for i, pid in enumerate(report.order)}
    lines = ["flowchart TD"]
    for pid in report.order:
        status = report.statuses.get(pid, PatchStatus.APPLIES)
        lines.append(f'  {node[pid]}["{_label(pid)}<br/>{status}"]:::{_cls(status)}')
    undeclared = {(e.patch, e.needs) for e in report.undeclared}
    for e in report.edges:
        arrow = "-. undeclared .->" if (e.patch, e.needs) in undeclared else "-->"
        lines.append(f"  {node[e.needs]} {arrow} {node[e.patch]}")
    for s in report.stale:
        lines.append(f"  {node[s.after]} -. stale .-> {node[s.patch]}")
    for status, colour in FILL.items():
        lines.append(f"  classDef {_cls(status)} fill:{colour},stroke:#555")
    body = "\n".join(lines) + "\n"
    return f"```mermaid\n{body}```\n" if fenced else body


def _cls(status: str) -> str:
    return "s_" + status.replace("-", "_")


def render_dot(report: DepsReport) -> str:
    q = json.dumps  # a JSON string is a valid dot ID, quotes and backslashes escaped
    lines = [f"digraph {q('patchset deps ' + report.vllm)} {{", "  rankdir=TB;",
             '  node [shape=box, style="rounded,filled", fontname="Helvetica"];']
    for pid in report.order:
        status = report.statuses.get(pid, PatchStatus.APPLIES)
        lines.append(f"  {q(pid)} [fillcolor={q(FILL.get(status, '#ffffff'))}, tooltip={q(status)}];")
    undeclared = {(e.patch, e.needs) for e in report.undeclared}
    for e in report.edges:
        style = ', style=dashed, color="#c0392b", label="undeclared"' if (e.patch, e.needs) in undeclared else ""
        lines.append(f"  {q(e.needs)} -> {q(e.patch)} [tooltip={q(e.why)}{style}];")
    for s in report.stale:
        lines.append(f'  {q(s.after)} -> {q(s.patch)} [style=dotted, color="#999999", label="stale"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def check_graph(report: CheckReport) -> str:
    """The series' shape for a check summary: a Mermaid graph when any patch needs or names another."""
    if report.graph_error:
        return f"- the series' dependency graph is not shown: {report.graph_error}\n"
    graph = report.graph
    if graph is None or (not graph.edges and not graph.declared):
        return ""
    return (f"#### The series' dependencies (vLLM {graph.vllm}; arrows point to the patch that needs "
            f"the other)\n\n" + render_mermaid(graph))


RENDERERS = {"table": render_table, "json": render_json, "mermaid": render_mermaid, "dot": render_dot}
