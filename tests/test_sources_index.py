"""pip's answers (its configuration, its default index) are asked side by side, and give what one by one gave."""

from __future__ import annotations

import os

import pytest

from patchset.sources import index, pip


@pytest.fixture
def fresh_pip(monkeypatch):
    for var in ("PATCHSET_INDEX_URL", "PIP_INDEX_URL", "PIP_CERT", "REQUESTS_CA_BUNDLE"):
        monkeypatch.delenv(var, raising=False)
    pip._pip_config.cache_clear()
    pip._pip_default_index.cache_clear()
    yield
    for proc in pip._started.values():  # a test that failed half-way leaves none running
        proc.kill()
        proc.communicate()
    pip._started.clear()
    pip._pip_config.cache_clear()
    pip._pip_default_index.cache_clear()


def _serial_index() -> str:
    pip._pip_config.cache_clear()
    pip._pip_default_index.cache_clear()
    return pip.index_url()


def test_both_pip_children_run_side_by_side_and_answer_as_one_by_one(fresh_pip, monkeypatch):
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # nothing configured: pip's own default
    pip.start_pip_queries()
    running = dict(pip._started)
    assert set(running) == {pip._CONFIG, pip._HELP}
    assert all(p.poll() is None or p.returncode == 0 for p in running.values())
    concurrent = pip.index_url()
    assert not pip._started  # both answers were taken
    assert concurrent == _serial_index()
    assert concurrent.startswith("https://") and concurrent.endswith("/simple/")


def test_a_configured_index_stops_the_default_lookup(fresh_pip, monkeypatch, tmp_path):
    config = tmp_path / "pip.conf"
    config.write_text("[global]\nindex-url = http://127.0.0.1:9/mirror/simple\ncert = /etc/mirror-ca.pem\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    pip.start_pip_queries()
    helper = pip._started[pip._HELP]
    assert pip.index_url() == "http://127.0.0.1:9/mirror/simple/" == _serial_index()
    assert helper.returncode is not None and not pip._started  # not left running
    assert pip.pip_setting("cert") == "/etc/mirror-ca.pem"


def test_an_index_in_the_environment_starts_no_child_for_it(fresh_pip, monkeypatch):
    monkeypatch.setenv("PATCHSET_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_CERT", "/etc/ca.pem")
    pip.start_pip_queries()
    assert not pip._started
    assert pip.index_url() == "http://127.0.0.1:9/simple/"


# --- choosing a release's wheel by compatible tags --------------------------------------------------


def _files(*names: str) -> list[index.IndexFile]:
    return [index.IndexFile(n, f"http://index.invalid/{n}", "ab" * 32) for n in names]


def _linux_x86_64(python=(3, 11), glibc_minor=28):
    from packaging import tags

    platforms = index._manylinux(glibc_minor, "x86_64")
    return [*tags.cpython_tags(python, platforms=platforms), *tags.compatible_tags(python, platforms=platforms)]


#: What the index lists for these releases (names as they are there).
RELEASES = _files(
    "vllm-0.9.0-cp38-abi3-manylinux1_x86_64.whl", "vllm-0.9.0.tar.gz",
    "vllm-0.21.0-1-cp38-abi3-manylinux_2_24_x86_64.whl", "vllm-0.21.0-cp38-abi3-manylinux_2_24_x86_64.whl",
    "vllm-0.21.0-cp38-abi3-manylinux_2_24_aarch64.whl", "vllm-0.21.0.tar.gz",
    "vllm-0.29.0-cp38-abi3-manylinux_2_28_aarch64.whl", "vllm-0.29.0-cp38-abi3-manylinux_2_28_x86_64.whl",
    "vllm-0.29.0.tar.gz")


@pytest.mark.parametrize("version,expected", [
    ("0.9.0", "vllm-0.9.0-cp38-abi3-manylinux1_x86_64.whl"),  # no manylinux_2_28 wheel before 0.22
    ("0.21.0", "vllm-0.21.0-1-cp38-abi3-manylinux_2_24_x86_64.whl"),  # the higher build tag, as pip takes it
    ("0.29.0", "vllm-0.29.0-cp38-abi3-manylinux_2_28_x86_64.whl"),
])
def test_a_release_s_wheel_is_the_one_this_platform_accepts(version, expected):
    assert index.choose_wheel(RELEASES, "vllm", version, _linux_x86_64()).filename == expected


def test_the_most_specific_tag_wins_and_a_pure_wheel_is_the_last_resort():
    both = _files("x-1.0-py3-none-any.whl", "x-1.0-cp38-abi3-manylinux1_x86_64.whl",
                  "x-1.0-cp38-abi3-manylinux_2_28_x86_64.whl", "x-1.0-cp311-cp311-manylinux_2_17_x86_64.whl")
    assert index.choose_wheel(both, "x", "1.0", _linux_x86_64()).filename == \
        "x-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"
    assert index.choose_wheel(both[:3], "x", "1.0", _linux_x86_64()).filename == \
        "x-1.0-cp38-abi3-manylinux_2_28_x86_64.whl"
    assert index.choose_wheel(both[:2], "x", "1.0", _linux_x86_64(glibc_minor=17)).filename == \
        "x-1.0-cp38-abi3-manylinux1_x86_64.whl"
    assert index.choose_wheel(both[:1], "x", "1.0", _linux_x86_64()).filename == "x-1.0-py3-none-any.whl"


def test_no_fitting_wheel_is_refused_listing_what_the_index_has():
    too_old = _linux_x86_64(glibc_minor=17)  # a manylinux2014 machine: 0.29.0 needs glibc 2.28
    with pytest.raises(index.SourceError) as e:
        index.choose_wheel(RELEASES, "vllm", "0.29.0", too_old)
    assert e.value.exit_code == 2 and "\n" not in str(e.value)
    assert "vllm 0.29.0 has no wheel for this platform (cp311, manylinux_2_17_x86_64 down to manylinux1_x86_64" \
        in e.value.message
    assert e.value.message.endswith("it has: vllm-0.29.0-cp38-abi3-manylinux_2_28_aarch64.whl, "
                                    "vllm-0.29.0-cp38-abi3-manylinux_2_28_x86_64.whl, vllm-0.29.0.tar.gz")
    with pytest.raises(index.NoSuchRelease, match=r"vllm 0\.9\.1 is not a release on the index \(the releases next "
                       r"to it: 0\.9\.0, 0\.21\.0, 0\.29\.0\)"):
        index.choose_wheel(RELEASES, "vllm", "0.9.1", _linux_x86_64())


def test_the_cache_key_names_what_decides_the_choice():
    assert index.wheel_kind((3, 12)).startswith("wheel-cp312-")
    assert index.wheel_kind((3, 11)) != index.wheel_kind((3, 12))


@pytest.mark.network
def test_the_real_index_gives_0_9_0_its_manylinux1_wheel(tmp_path):
    from patchset.cache import Cache
    from patchset.sources import open_source

    src = open_source("wheel", "0.9.0", cache=Cache(tmp_path))
    assert src.identity.startswith("wheel:vllm-0.9.0-cp38-abi3-manylinux1_x86_64.whl@sha256:")
    assert b"reshape_and_cache" in (src.read("vllm/_custom_ops.py") or b"")


@pytest.mark.network
def test_a_release_the_real_index_lacks_is_named_with_its_neighbours_and_wheels_only_says_use_the_wheel():
    """Issue 38: 0.14.9 does not exist and 0.15.0 has wheels only; both said "has no source distribution"."""
    with pytest.raises(index.NoSuchRelease) as e:
        index.sdist("vllm", "0.14.9")
    assert e.value.message == ("vllm 0.14.9 is not a release on the index (the releases next to it: 0.13.0, 0.14.0, "
                               "0.14.1, 0.15.0, 0.15.1, 0.16.0)") and e.value.hint == "name a release the index has"
    with pytest.raises(index.NoSuchRelease) as e:
        index.wheel("vllm", "0.14.9")
    assert "0.14.9 is not a release on the index" in e.value.message
    with pytest.raises(index.NoSuchRelease) as e:
        index.sdist("vllm", "0.15.0")
    assert e.value.message.startswith("vllm 0.15.0 has no source distribution on the index, only vllm-0.15.0-")
    assert "--source wheel" in (e.value.hint or "")
    assert index.wheel("vllm", "0.15.0").filename.startswith("vllm-0.15.0-")


# --- found by fuzzing (tests/fuzz, issue 26): an answer that is not a PEP 691 page is refused, naming the URL ----

PAGE = "https://index.invalid/simple/vllm/"


@pytest.mark.parametrize("data, why", [
    (b"[]", "no list of files"),  # list.get: AttributeError before
    (b'{"files": {"a": 1}}', "no list of files"),
    (b'{"files": ["vllm-0.29.0.tar.gz"]}', None),  # an entry with no sha256 is left out, as before
    (b'{"files": [{"filename": 1, "url": "x", "hashes": {"sha256": "ab"}}]}', "not shaped as PEP 691 says"),
    (b'{"files": [{"filename": "a", "hashes": {"sha256": "ab"}}]}', "not shaped as PEP 691 says"),  # KeyError
    (b'{"files": [{"filename": "a", "url": "http://[x/", "hashes": {"sha256": "ab"}}]}', "unusable URL"),
    (b'{"files": [{"filename": "a", "url": "x", "hashes": {"sha256": "ab"}, "size": "big"}]}', "not shaped"),
    (b"[" * 100_000, "did not answer PEP 691 JSON"),  # RecursionError
])
def test_a_project_page_that_is_not_pep_691_is_refused_naming_the_url(data, why):
    if why is None:
        assert index.project_page(data, PAGE) == ()
        return
    with pytest.raises(index.SourceError, match=why) as e:
        index.project_page(data, PAGE)
    assert e.value.file == PAGE


def test_a_damaged_remembered_answer_is_asked_for_again(tmp_path):
    from patchset.cache import Cache

    cache = Cache(tmp_path)
    found = index.IndexFile("vllm-0.29.0.tar.gz", "https://index.invalid/x.tar.gz", "0" * 64)
    for damaged in (b"[]", b'"x"', b'{"url": 1, "filename": "f", "sha256": "s"}', b"[" * 100_000):
        cache.put_bytes(damaged, "index", "vllm-0.29.0-sdist.json")
        assert index.remembered(cache, "sdist", "vllm", "0.29.0", lambda project, version: found) == found
