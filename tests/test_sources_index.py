"""pip's answers (its configuration, its default index) are asked side by side, and give what one by one gave."""

from __future__ import annotations

import os

import pytest

from patchset.sources import index


@pytest.fixture
def fresh_pip(monkeypatch):
    for var in ("PATCHSET_INDEX_URL", "PIP_INDEX_URL", "PIP_CERT", "REQUESTS_CA_BUNDLE"):
        monkeypatch.delenv(var, raising=False)
    index._pip_config.cache_clear()
    index._pip_default_index.cache_clear()
    yield
    for proc in index._started.values():  # a test that failed half-way leaves none running
        proc.kill()
        proc.communicate()
    index._started.clear()
    index._pip_config.cache_clear()
    index._pip_default_index.cache_clear()


def _serial_index() -> str:
    index._pip_config.cache_clear()
    index._pip_default_index.cache_clear()
    return index.index_url()


def test_both_pip_children_run_side_by_side_and_answer_as_one_by_one(fresh_pip, monkeypatch):
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # nothing configured: pip's own default
    index.start_pip_queries()
    running = dict(index._started)
    assert set(running) == {index._CONFIG, index._HELP}
    assert all(p.poll() is None or p.returncode == 0 for p in running.values())
    concurrent = index.index_url()
    assert not index._started  # both answers were taken
    assert concurrent == _serial_index()
    assert concurrent.startswith("https://") and concurrent.endswith("/simple/")


def test_a_configured_index_stops_the_default_lookup(fresh_pip, monkeypatch, tmp_path):
    config = tmp_path / "pip.conf"
    config.write_text("[global]\nindex-url = http://127.0.0.1:9/mirror/simple\ncert = /etc/mirror-ca.pem\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    index.start_pip_queries()
    helper = index._started[index._HELP]
    assert index.index_url() == "http://127.0.0.1:9/mirror/simple/" == _serial_index()
    assert helper.returncode is not None and not index._started  # not left running
    assert index.pip_setting("cert") == "/etc/mirror-ca.pem"


def test_an_index_in_the_environment_starts_no_child_for_it(fresh_pip, monkeypatch):
    monkeypatch.setenv("PATCHSET_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_CERT", "/etc/ca.pem")
    index.start_pip_queries()
    assert not index._started
    assert index.index_url() == "http://127.0.0.1:9/simple/"
