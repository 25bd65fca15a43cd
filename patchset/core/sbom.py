"""Where an image's CycloneDX SBOM lives and what it claims: shared by ``build --sbom``, which embeds
the document :mod:`patchset.verbs.sbom` makes, and ``audit``, which checks those claims against the
image's files."""

from __future__ import annotations

import json

SBOM_PATH = "/usr/share/patchset/sbom.cdx.json"  # where `patchset build --sbom` puts the document
FIX_PROPERTY = "patchset:fix:"  # the vLLM component's property per fix: "patchset:fix:<id>" = "<status>: <evidence>"


def embedded_claims(raw: bytes) -> tuple[str | None, dict[str, str], int]:
    """What an SBOM :mod:`patchset.verbs.sbom` made claims: (vLLM version, {fix id: status}, patches in the pedigree).

    Raises ValueError when it is not such a document.
    """
    doc = json.loads(raw)
    if not isinstance(doc, dict) or doc.get("bomFormat") != "CycloneDX":
        raise ValueError("not a CycloneDX JSON document")
    vllm = next((c for c in doc.get("components") or [] if isinstance(c, dict) and c.get("name") == "vllm"), None)
    if vllm is None:
        raise ValueError("no vllm component")
    claims = {}
    for prop in vllm.get("properties") or []:
        if not isinstance(prop, dict):
            continue
        name, value = str(prop.get("name", "")), str(prop.get("value", ""))
        if name.startswith(FIX_PROPERTY):
            claims[name[len(FIX_PROPERTY):]] = value.split(":", 1)[0]
    return vllm.get("version"), claims, len((vllm.get("pedigree") or {}).get("patches") or [])
