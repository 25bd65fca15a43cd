"""The JSON Schema of the manifest, shipped as package data.

The schema is for editors and pre-commit; the loader in ``core.manifest``
stays the authority (it checks what a schema cannot: files exist, ranges
cover targets, order). A test keeps the two in step key by key.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

SCHEMA_RESOURCE = "manifest.schema.json"


def schema_text() -> str:
    return resources.files("patchset.data").joinpath(SCHEMA_RESOURCE).read_text(encoding="utf-8")


def manifest_schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(schema_text())
    return loaded
