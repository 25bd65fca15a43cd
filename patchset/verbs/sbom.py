"""`patchset sbom`: an audited image as a CycloneDX software bill of materials with backport pedigree.

The SBOM is a rendering of an audit, never of labels or the manifest alone:
a fix is listed under the vLLM component's ``pedigree.patches`` only when the
audit found it ``carried`` in the image's files. Fixes the release has
upstream, and fixes the image lacks (``missing``, ``stale``, ``tampered``,
``unknown``), are recorded as ``patchset:fix:<id>`` properties saying so.

Under ``SOURCE_DATE_EPOCH`` the document is a function of its inputs (the
timestamp comes from it and the serial number from the image and manifest),
so two renderings of the same audit are byte-identical.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

from cyclonedx.model import AttachedText, ExternalReference, ExternalReferenceType, Property, XsUri
from cyclonedx.model.bom import Bom
from cyclonedx.model.component import Component, ComponentType, Diff, Patch, PatchClassification, Pedigree
from cyclonedx.model.issue import IssueClassification, IssueType, IssueTypeSource
from cyclonedx.output.json import JsonV1Dot6
from packageurl import PackageURL

from patchset import __version__
from patchset.core import pristine, provenance
from patchset.core.manifest import Manifest, Pin
from patchset.core.manifest import Patch as ManifestPatch
from patchset.core.sbom import FIX_PROPERTY
from patchset.sources import urls
from patchset.verbs.audit import CARRIED, ImageAudit, audit

UPSTREAM_REPO = "vllm-project/vllm"


@dataclass
class SbomReport:
    """One image's audit and the CycloneDX document made from it (None when the audit could not read it)."""

    audit: ImageAudit
    document: str | None

    @property
    def ok(self) -> bool:
        return self.audit.ok


def sbom(manifest: Manifest, image: str, *, source: str = "wheel") -> SbomReport:
    """Audit ``image``'s files and make its SBOM from that audit."""
    audited = audit(manifest, [image], source=source).images[0]
    return SbomReport(audited, None if audited.error else document(audited, manifest))


def document(audit: ImageAudit, manifest: Manifest) -> str:
    """The audited image as a CycloneDX 1.6 JSON document."""
    return JsonV1Dot6(image_bom(audit, manifest)).output_as_string(indent=2) + "\n"


def image_bom(audit: ImageAudit, manifest: Manifest) -> Bom:
    bom = Bom(serial_number=_serial(audit, manifest))
    bom.metadata.timestamp = provenance.record_time()
    bom.metadata.component = Component(
        name=audit.image, type=ComponentType.CONTAINER, bom_ref=f"image:{audit.image}",
        version=audit.digest or audit.id or None)
    bom.metadata.properties.add(Property(name="patchset:manifest", value=f"{manifest.path.name}@{manifest.sha256}"))
    bom.metadata.properties.add(Property(name="patchset:tool", value=f"patchset {__version__}"))
    if audit.vllm:
        vllm = _vllm_component(audit, manifest)
        bom.components.add(vllm)
        bom.register_dependency(bom.metadata.component, [vllm])
    return bom


def _vllm_component(audit: ImageAudit, manifest: Manifest) -> Component:
    assert audit.vllm is not None
    patches = []
    props = []
    for fix in audit.fixes:
        props.append(Property(name=f"{FIX_PROPERTY}{fix.id}", value=f"{fix.status}: {fix.evidence}"))
        if fix.status == CARRIED:
            patches.append(_patch(manifest.patch(fix.id), audit.vllm, manifest))
    refs, qualifiers = [], {}
    pinned = manifest.pinned(manifest.installed_as(audit.vllm))
    if pinned is not None and pinned.source is not None:  # built from a commit: say which, as a VCS reference
        url = vcs_url(manifest, pinned.source)
        qualifiers["vcs_url"] = f"git+{url}@{pinned.source.commit}"
        refs.append(ExternalReference(type=ExternalReferenceType.VCS, url=XsUri(url),
                                      comment=f"commit {pinned.source.commit}"))
        props.append(Property(name="patchset:vllm:commit", value=pinned.source.commit))
    return Component(
        name="vllm", version=audit.vllm, type=ComponentType.LIBRARY, bom_ref=f"pkg:pypi/vllm@{audit.vllm}",
        purl=PackageURL(type="pypi", name="vllm", version=audit.vllm, qualifiers=qualifiers or None),
        pedigree=Pedigree(patches=patches) if patches else None, properties=props, external_references=refs)


def vcs_url(manifest: Manifest, pin: Pin) -> str:
    """The repository a commit target names, as a URL without credentials (a local path as ``file://``)."""
    repository = pristine.repository(manifest, pin)
    if "://" not in repository and not repository.startswith("git@"):
        repository = Path(repository).as_uri()
    return urls.redact(urls.split_credentials(repository)[0])


def _patch(p: ManifestPatch, version: str, manifest: Manifest) -> Patch:
    choice = p.choice_for(version)
    diff = None
    if choice is not None:
        diff = Diff(text=AttachedText(content=choice.path.read_text(encoding="utf-8", errors="replace"),
                                      content_type="text/x-diff"))
    kind = PatchClassification.BACKPORT if p.origin == "backport" else PatchClassification.UNOFFICIAL
    return Patch(type=kind, diff=diff, resolves=_resolves(p))


def _resolves(p: ManifestPatch) -> list[IssueType]:
    if p.upstream_pr is None and p.upstream_commit is None:
        return []
    ident = f"#{p.upstream_pr}" if p.upstream_pr is not None else str(p.upstream_commit)
    url = f"https://github.com/{UPSTREAM_REPO}/pull/{p.upstream_pr}" if p.upstream_pr is not None else None
    return [IssueType(type=IssueClassification.DEFECT, id=ident, name=p.title,
                      source=IssueTypeSource(name=UPSTREAM_REPO, url=XsUri(url) if url else None))]


def _serial(audit: ImageAudit, manifest: Manifest) -> uuid.UUID:
    if provenance.source_date_epoch() is not None:
        return uuid.uuid5(uuid.NAMESPACE_URL, f"patchset:{audit.image}:{audit.digest}:{manifest.sha256}")
    return uuid.uuid4()
