"""pytest plugin loaded by patchset into every test run (``-p patchset_pytest_plugin``).

It stays outside the upstream tree on purpose: no upstream file is edited to
make the tests run here.

* Each item's node id goes into the JUnit XML as a property, so patchset maps
  results back to node ids exactly (the XML's classname/name pair loses the
  file path and parameter brackets do not survive the round trip reliably).
* With PATCHSET_SKIP_GLOBAL_CLEANUP=1 (CPU runs), every item gets vLLM's
  ``skip_global_cleanup`` marker: the autouse ``cleanup_fixture`` of
  ``tests/conftest.py`` calls ``torch.accelerator.empty_cache()``, which
  raises when there is no accelerator, and it skips items with that marker.
"""

import os

import pytest

NODEID_PROPERTY = "patchset_nodeid"


def pytest_configure(config):
    config.addinivalue_line("markers", "skip_global_cleanup: set by patchset on runs without an accelerator")


def pytest_collection_modifyitems(session, config, items):
    skip_cleanup = os.environ.get("PATCHSET_SKIP_GLOBAL_CLEANUP") == "1"
    for item in items:
        item.user_properties.append((NODEID_PROPERTY, item.nodeid))
        if skip_cleanup:
            item.add_marker(pytest.mark.skip_global_cleanup)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """End the multiprocessing children tests left behind, once every result is written.

    A test that fails midway (a queue that times out under load) can leave
    non-daemon children that wait forever; Python joins those at exit, so
    pytest would hang after its summary until the run's timeout killed it,
    and a finished run would read as a crashed one.
    """
    import multiprocessing

    left = multiprocessing.active_children()
    for child in left:
        child.terminate()
    for child in left:
        child.join(5)
        if child.is_alive():
            child.kill()
            child.join(5)
