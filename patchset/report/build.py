"""How a build report looks as JSON (the text summary is printed by cli/build.py as the build goes)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from patchset.report.common import dump_json

if TYPE_CHECKING:  # verbs.build imports the docker SDK: the CLI imports it only when it builds
    from patchset.verbs.build import BuildReport


def build_doc(report: BuildReport) -> dict:
    return {
        "ok": True, "vllm": report.vllm, "image": report.tag, "id": report.image_id,
        "base": {"name": report.base, "digest": report.base_digest}, "site": report.site,
        "patches": [{"id": p.id, "status": p.status, "sha256": p.sha256} for p in report.result.patches],
        "written": report.written, "deleted": report.deleted, "labels": report.labels,
        "layers": [{"created_by": layer.created_by, "size": layer.size} for layer in report.layers],
        "added_bytes": report.added_bytes, "left_out": report.left_out, "not_carried": report.not_carried,
    } | ({"sbom": report.sbom} if report.sbom else {})


def render_json(report: BuildReport) -> str:
    return dump_json(build_doc(report))
