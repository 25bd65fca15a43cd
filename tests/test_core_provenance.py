"""The provenance record read back: a record patchset did not write is refused, naming the file (issue 26)."""

from __future__ import annotations

import json

import pytest

from patchset.core import provenance
from patchset.errors import PatchsetError

GOOD = {"schema": 1, "vllm": "0.29.0", "manifest": {"path": "patches.yaml", "sha256": "0" * 64},
        "patches": [{"id": "fix", "status": "applies", "sha256": "1" * 64}],
        "files": {"vllm/a.py": {"sha256": "2" * 64, "pristine_sha256": None, "mode": "100644"}}}


def test_a_record_patchset_wrote_is_read_back():
    record = provenance.loads(provenance.dumps(GOOD))
    assert provenance.carried_ids(record) == {"fix": "1" * 64}


@pytest.mark.parametrize("data, why", [
    # found by the fuzzer: carried_ids read p["id"] of an entry without one (KeyError, exit 3)
    ({**GOOD, "patches": [{"status": "applies"}]}, r"patches\[0\]\.id"),
    (b"[" * 100_000, "not JSON"),  # RecursionError from json, nested 100,000 deep
    (b'{"schema": 1, "x": 1e999999}', None),  # inf is JSON to Python; not a field anyone reads
    ({**GOOD, "manifest": []}, "manifest is list"),
    ({**GOOD, "files": {"../../etc/passwd": {"sha256": "0" * 64}}}, "not a path inside the tree"),
    ({**GOOD, "files": {"/etc/passwd": {"sha256": "0" * 64}}}, "not a path inside the tree"),
    ({**GOOD, "files": {"vllm/a.py": {"sha256": "2" * 64, "mode": "rwx"}}}, "not an octal mode"),
    ({**GOOD, "patches": {"fix": 1}}, "patches is dict"),
])
def test_a_record_not_shaped_as_patchset_writes_it_is_refused_naming_the_file(data, why):
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    if why is None:
        provenance.loads(raw)
        return
    with pytest.raises(PatchsetError, match=why) as e:
        provenance.loads(raw, "site/vllm/.patchset-provenance.json")
    assert e.value.file == "site/vllm/.patchset-provenance.json"
    assert isinstance(e.value, ValueError)  # apply and audit catch it as they always did
