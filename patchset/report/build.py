"""How a build report looks: a summary for a person, or JSON."""

from __future__ import annotations

from patchset.core.series import PatchStatus
from patchset.report.common import dump_json, plural
from patchset.verbs.build import BuildReport


def build_doc(report: BuildReport) -> dict:
    return {
        "ok": True, "vllm": report.vllm, "image": report.tag, "id": report.image_id,
        "base": {"name": report.base, "digest": report.base_digest}, "site": report.site,
        "patches": [{"id": p.id, "status": p.status, "sha256": p.sha256} for p in report.result.patches],
        "written": report.written, "deleted": report.deleted, "labels": report.labels,
        "layers": [{"created_by": layer.created_by, "size": layer.size} for layer in report.layers],
        "added_bytes": report.added_bytes, "left_out": report.left_out, "not_carried": report.not_carried,
        "warnings": report.warnings,
    } | ({"sbom": report.sbom} if report.sbom else {})


def render_json(report: BuildReport) -> str:
    return dump_json(build_doc(report))


def render_text(report: BuildReport) -> str:
    """What the build made, for a person: the image, what it carries, the layers it added."""
    out: list[str] = []
    carried = [p.id for p in report.result.patches
               if p.status == PatchStatus.APPLIES and p.id not in report.not_carried]
    upstream = [p.id for p in report.result.patches if p.status == PatchStatus.UPSTREAM]
    out.append(f"built {report.tag} ({report.image_id[:19]}) from {report.base}")
    out.append(f"  vLLM {report.vllm}; carries {', '.join(carried) or 'nothing'}"
               + (f"; upstream: {', '.join(upstream)}" if upstream else ""))
    out.append(f"  wrote {plural(len(report.written), 'file')}"
               + (f", deleted {plural(len(report.deleted), 'file')}" if report.deleted else "")
               + f"; added {plural(len(report.layers), 'layer')}, {_size(report.added_bytes)}:")
    for layer in report.layers:
        out.append(f"    {_size(layer.size):>9}  {_short(layer.created_by)}")
    for pid, files in report.not_carried.items():
        out.append(f"  not carried: {pid} (its compiled code is left out: {', '.join(files)})")
    left = sorted({f for files in report.left_out.values() for f in files} - {
        f for files in report.not_carried.values() for f in files})
    if left:
        out.append(f"  not in an image (left out): {', '.join(left)}")
    if report.sbom:
        out.append(f"  SBOM: {report.sbom['path']} in the image, and {report.sbom['file']}")
    return "".join(line + "\n" for line in out)


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def _short(created_by: str) -> str:
    text = created_by.replace("/bin/sh -c #(nop) ", "").strip()
    return text if len(text) <= 70 else text[:67] + "..."


RENDERERS = {"text": render_text, "json": render_json}
