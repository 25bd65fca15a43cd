"""Release membership is the same under every `packaging` the project allows, the oldest included."""

from __future__ import annotations

import json
import re
import subprocess
import venv
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from patchset.core.versions import in_range

REPO = Path(__file__).resolve().parents[1]

# (release, range, member?) by PEP 440 version order, pre-releases admitted.
CASES = [
    ("0.31.0rc1", ">=0.28", True),  # packaging 23.2 says no unless asked
    ("0.31.0rc1", "", True),  # a patch without `releases` is for every target
    ("0.31.0.dev1", ">=0.28", True),
    ("0.30.0rc1", "<0.30.0rc2", True),
    ("0.30.0rc1", "!=0.30.0", True),
    ("0.30.0rc1", "<0.30.0", False),  # `<V` never admits V's own pre-releases
    ("0.30.0rc1", ">=0.28,<0.30", False),
    ("0.29.0.post1", ">0.29.0", False),  # nor `>V` V's post-releases
    ("0.29.0.post1", ">=0.28,<0.30", True),
    ("0.29.0", ">=0.28.0,<0.30.0", True),
    ("0.30.0", ">=0.28.0,<0.30.0", False),
]


@pytest.mark.parametrize("version, releases, member", CASES)
def test_membership_by_version_order(version, releases, member):
    assert in_range(version, SpecifierSet(releases)) is member


PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import packaging
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from patchset.core.versions import in_range
cases = json.loads(sys.argv[2])
print(json.dumps({"packaging": packaging.__version__,
                  "ours": [in_range(v, SpecifierSet(s)) for v, s, _ in cases],
                  "plain": [Version(v) in SpecifierSet(s) for v, s, _ in cases]}))
"""


def oldest_packaging() -> str:
    found = re.search(r'"packaging>=([0-9.]+)"', (REPO / "pyproject.toml").read_text())
    assert found, "pyproject.toml must give packaging a lower bound"
    return found.group(1)


@pytest.mark.network
@pytest.mark.slow
def test_membership_is_the_same_under_the_oldest_packaging_allowed(tmp_path):
    oldest = oldest_packaging()
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    f"packaging=={oldest}"], check=True, timeout=300)
    # -I: nothing from this interpreter's site-packages leaks in; only the repository is added.
    out = subprocess.run([str(python), "-I", "-c", PROBE, str(REPO), json.dumps(CASES)], check=True,
                         capture_output=True, text=True, timeout=60).stdout
    there = json.loads(out)
    assert there["packaging"] == oldest
    assert there["ours"] == [member for _, _, member in CASES]
    # The plain `in` really differs there: this test is what catches a return to it.
    assert there["plain"] != there["ours"]

