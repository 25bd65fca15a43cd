"""Release order and membership: the same under every `packaging` the project allows, the oldest included,
and the same whether packaging or the plain-release rule decides."""

from __future__ import annotations

import json
import re
import subprocess
import venv
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from patchset.versions import (
    InvalidRange,
    InvalidRelease,
    Release,
    Releases,
    in_range,
    is_release,
    public,
    same_release,
)

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
    assert (version in Releases(releases)) is member


# Plain releases, written as people write them (0.29, 0.29.0, 00.29.0), and ranges of plain comparisons.
_numbers = st.lists(st.integers(0, 12), min_size=1, max_size=4)
plain = st.builds(lambda ns, pad: ".".join(("0" if pad and n < 10 else "") + str(n) for n in ns), _numbers,
                  st.booleans())
clause = st.builds(lambda op, sp, v: f"{op}{sp}{v}", st.sampled_from(["==", "!=", "<", "<=", ">", ">="]),
                   st.sampled_from(["", " "]), plain)
plain_range = st.builds(", ".join, st.lists(clause, max_size=3))
# What packaging alone decides: pre-, post-, dev- and local releases, epochs, a v prefix, ~=, wildcards, ===.
# Built on the same plain releases, so that `v1.2` meets `1.2.0` and `1.2rc1` meets `<1.2`.
other = st.builds(lambda p, form: form.format(p), plain,
                  st.sampled_from(["{}rc1", "{}.post1", "{}+cpu", "1!{}", "v{}", "{}.dev2", "{}a1", "V{}.0"]))
other_clause = st.builds(lambda p, form: form.format(p), plain,
                        st.sampled_from([">={}rc1", "~={}.0", "=={}.*", "!={}.*", "<{}rc2", "==={}", ">{}.post1",
                                         "<=1!{}", "=={}+cpu"]))
release = st.one_of(plain, other)
mixed_range = st.builds(lambda a, b: ",".join(x for x in (a, b) if x), plain_range, other_clause)


@given(release, st.one_of(plain_range, mixed_range))
def test_membership_is_packagings(version, text):
    assert (version in Releases(text)) is in_range(version, SpecifierSet(text))


@given(release, release)
def test_order_and_equality_are_packagings(a, b):
    va, vb = Version(a), Version(b)
    ra, rb = Release(a), Release(b)
    assert (ra == rb) is (va == vb)
    assert (ra < rb) is (va < vb)
    if ra == rb:
        assert hash(ra) == hash(rb)
    assert same_release(a, b) is (Version(va.public) == Version(vb.public))
    assert public(a) == str(Version(va.public))


@given(st.one_of(plain_range, mixed_range))
def test_a_range_is_written_as_packaging_writes_it(text):
    assert str(Releases(text)) == str(SpecifierSet(text))


@given(release, st.lists(st.one_of(plain_range, mixed_range), min_size=1, max_size=3))
def test_a_union_admits_what_any_of_its_specifiers_admits(version, texts):
    union = Releases(" || ".join(x or ">=0" for x in texts))
    assert (version in union) is any(in_range(version, SpecifierSet(x or ">=0")) for x in texts)
    assert str(union) == " || ".join(str(SpecifierSet(x or ">=0")) for x in texts)


def test_a_union_with_an_empty_alternative_is_refused():
    for bad in ("==0.28.0 ||", "|| ==0.28.0", "==0.28.0 |||| ==0.29.0"):
        with pytest.raises(InvalidRange, match="empty alternative"):
            Releases(bad)
    assert Releases("==0.28.0 || ==0.29.0").alternatives == ["==0.28.0", "==0.29.0"]


def test_what_is_no_version_is_refused():
    for bad in (">=banana", "0.29", ">=0.28,,foo", "=>0.28"):
        with pytest.raises(InvalidRange):
            Releases(bad)
    for bad in ("banana", "0.29.", "", ">=0.28"):
        assert not is_release(bad)
        with pytest.raises(InvalidRelease):
            Release(bad)
    assert same_release("banana", "banana") and not same_release("banana", "0.29.0")
    assert public("banana") == "banana"


PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import packaging
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from patchset.versions import Releases, in_range
cases = json.loads(sys.argv[2])
print(json.dumps({"packaging": packaging.__version__,
                  "ours": [in_range(v, SpecifierSet(s)) for v, s, _ in cases],
                  "ranges": [v in Releases(s) for v, s, _ in cases],
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
    assert there["ranges"] == there["ours"]
    # The plain `in` really differs there: this test is what catches a return to it.
    assert there["plain"] != there["ours"]

