"""The provenance record: what a patched tree carries, written next to the code.

It lives at ``vllm/.patchset-provenance.json`` (repository layout), so it
travels with the package whether the tree is a site-packages folder, an
upstream checkout or an image layer. Audits trust it only as far as the
file digests it lists still match the files.

What the tree could not hold is recorded too: each patch's ``left_out``
files (``requirements/``, ``csrc/``, ``tests/`` beside a site-packages or an
image), and the ``tree`` kind that left them out. A patch whose left-out
files include compiled code is never counted as carried (``carried_ids``).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re

from patchset import __version__
from patchset.core.digest import sha256
from patchset.core.manifest import Manifest
from patchset.core.series import PatchStatus, ReleaseResult
from patchset.core.trees import compiled
from patchset.errors import PatchsetError
from patchset.sources.local import PROVENANCE_NAME

PROVENANCE_PATH = f"vllm/{PROVENANCE_NAME}"
SCHEMA = 1


def make_record(manifest: Manifest, result: ReleaseResult, *, layout: str = "repo",
                modes: dict[str, int] | None = None) -> dict:
    """The record of ``result``; ``modes`` (path -> st_mode written, default: the modes the patches set)
    go into the file entries as git writes them ("100755")."""
    if modes is None:  # only files the series rewrites: a mode-only change needs the caller's bytes
        modes = {p: m for p, m in getattr(result, "modes", {}).items() if p in result.changed}
    files = {}
    for path in sorted(set(result.changed) | set(modes)):
        content = result.changed.get(path, result.files.get(path))
        files[path] = {"sha256": sha256(content), "pristine_sha256": sha256(result.pristine.get(path))}
        if path in modes and content is not None:
            files[path]["mode"] = f"{modes[path]:o}"
    patches = []
    for p in result.patches:
        entry: dict[str, object] = {"id": p.id, "status": p.status}
        if p.status == PatchStatus.APPLIES:
            entry.update({"sha256": p.sha256, "patch": p.patch_file, "files": list(p.files)})
        elif p.status == PatchStatus.NOT_IN_TREE:
            entry.update({"sha256": p.sha256, "patch": p.patch_file})
        elif p.evidence:
            entry["evidence"] = p.evidence
        if p.skipped:
            entry["left_out"] = list(p.skipped)
        patches.append(entry)
    left_out = sorted({f for p in result.patches for f in p.skipped})
    return {
        "schema": SCHEMA,
        "tool": f"patchset {__version__}",
        "vllm": result.vllm,
        "manifest": {"path": manifest.path.name, "sha256": manifest.sha256},
        "source": result.source,
        "layout": layout,
        "applied_at": _applied_at(),
        "patches": patches,
        "files": files,
    } | ({"left_out": {"tree": next(p.tree for p in result.patches if p.skipped), "files": left_out}}
         if left_out else {})


def source_date_epoch() -> int | None:
    """SOURCE_DATE_EPOCH when set (reproducible builds): the time to record instead of now."""
    value = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    return int(value) if value.isdigit() else None


def record_time() -> dt.datetime:
    """The time a record, an image or an SBOM says it was made: SOURCE_DATE_EPOCH, else now (UTC, whole seconds)."""
    epoch = source_date_epoch()
    when = dt.datetime.fromtimestamp(epoch, dt.timezone.utc) if epoch is not None else dt.datetime.now(dt.timezone.utc)
    return when.replace(microsecond=0)


def _applied_at() -> str:
    return record_time().isoformat()


def dumps(record: dict) -> bytes:
    return (json.dumps(record, indent=2, sort_keys=True) + "\n").encode()


class RecordError(PatchsetError, ValueError):
    """A provenance record that is not one patchset wrote (a ValueError too: readers refuse or warn on it)."""


def loads(data: bytes, name: str = PROVENANCE_PATH) -> dict:
    """The record in ``data``, its shape checked: every field a reader uses has the type patchset writes,
    and every file it names is a path inside the tree (the record is input: a copy, an image layer)."""
    try:
        record = json.loads(data)
    except (ValueError, RecursionError) as e:  # RecursionError: a record nested thousands deep
        raise RecordError(f"not JSON ({str(e) or type(e).__name__})", file=name) from e
    if not isinstance(record, dict) or record.get("schema") != SCHEMA:
        raise RecordError("not a patchset provenance record of schema 1", file=name)
    for key in ("vllm", "applied_at", "tool", "source", "layout"):
        _want(record.get(key), (str, type(None)), key, name)
    _want(record.get("manifest", {}), dict, "manifest", name)
    _want(record.get("manifest", {}).get("sha256"), (str, type(None)), "manifest.sha256", name)
    _want(record.get("patches", []), list, "patches", name)
    for i, p in enumerate(record.get("patches", [])):
        _want(p, dict, f"patches[{i}]", name)
        for key in ("id", "status"):
            _want(p.get(key), str, f"patches[{i}].{key}", name)
        _want(p.get("sha256", ""), str, f"patches[{i}].sha256", name)
    _want(record.get("files", {}), dict, "files", name)
    for path, entry in record.get("files", {}).items():
        parts = path.split("/")
        if not path or path.startswith("/") or "\0" in path or any(c in ("", ".", "..") for c in parts):
            raise RecordError(f"names {path!r}, which is not a path inside the tree", file=name)
        _want(entry, dict, f"files[{path!r}]", name)
        for key in ("sha256", "pristine_sha256"):
            _want(entry.get(key), (str, type(None)), f"files[{path!r}].{key}", name)
        mode = entry.get("mode")
        if mode is not None and not (isinstance(mode, str) and re.fullmatch(r"[0-7]{1,7}", mode)):
            raise RecordError(f"files[{path!r}].mode is {mode!r}, not an octal mode", file=name)
    return record


def _want(value: object, kind: type | tuple[type, ...], key: str, name: str) -> None:
    if not isinstance(value, kind):
        raise RecordError(f"{key} is {type(value).__name__}, not what patchset writes there", file=name)


def carried_ids(record: dict) -> dict[str, str]:
    """patch id -> sha256 of the patch file, for the patches the record says were applied whole: one whose
    compiled code was left out (overlaying files cannot carry it) is not carried."""
    return {p["id"]: p.get("sha256", "") for p in record.get("patches", [])
            if p.get("status") == PatchStatus.APPLIES and not left_out_compiled(p)}


def left_out_compiled(entry: dict) -> list[str]:
    """The compiled-code files a record's patch entry says were left out of the tree."""
    return compiled(entry.get("left_out") or [])
