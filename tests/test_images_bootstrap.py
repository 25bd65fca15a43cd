"""patchset/images/bootstrap.py: the shipped file, run standalone by a plain Python as a container runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from patchset.images import shipped


def test_the_bootstrap_lays_the_configuration_over_the_installed_package_and_runs_pytest(tmp_path):
    site, boot, overlay, tree = (tmp_path / name for name in ("site", "boot", "overlay", "tree"))
    pkg = site / "pkg"
    (pkg / "__pycache__").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "kept.py").write_text("VALUE = 'installed'\n")
    (pkg / "changed.py").write_text("VALUE = 'installed'\n")
    (pkg / "gone.py").write_text("VALUE = 'installed'\n")
    (pkg / "grpc" / "__pycache__").mkdir(parents=True)  # a folder the configuration empties: it goes too
    (pkg / "grpc" / "__init__.py").write_text("")
    (pkg / "grpc" / "__pycache__" / f"__init__.{sys.implementation.cache_tag}.pyc").write_bytes(b"bytecode")
    stale = pkg / "__pycache__" / f"changed.{sys.implementation.cache_tag}.pyc"
    stale.write_bytes(b"stale bytecode of the installed source")
    (boot / "files").mkdir(parents=True)
    (boot / "files" / "changed.py").write_text("VALUE = 'configuration'\n")
    spec = {"package": "pkg", "write": ["changed.py"], "delete": ["gone.py", "grpc/__init__.py"]}
    (boot / "files.json").write_text(json.dumps(spec))
    # Copied out of the package, as the image runner mounts it: nothing of patchset is importable there.
    (boot / "bootstrap.py").write_bytes(shipped("bootstrap.py").read_bytes())
    tree.mkdir()
    overlay.mkdir()
    (tree / "test_overlay.py").write_text(textwrap.dedent("""\
        import importlib.util, os
        import pkg.changed, pkg.kept

        def test_the_configuration_is_what_imports():
            assert pkg.changed.VALUE == "configuration" and pkg.kept.VALUE == "installed"
            assert importlib.util.find_spec("pkg.gone") is None
            assert importlib.util.find_spec("pkg.grpc") is None  # not an empty namespace package
            assert os.path.islink(pkg.kept.__file__) and not os.path.islink(pkg.changed.__file__)
        """))
    env = {**os.environ, "PYTHONPATH": f"{overlay}{os.pathsep}{site}", "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PATCHSET_TEST_TOOLS", None)
    out = subprocess.run([sys.executable, "-B", str(boot / "bootstrap.py"), str(boot), str(overlay),
                          "-q", "-p", "no:cacheprovider", "test_overlay.py"],
                         cwd=tree, env=env, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "patchset: pkg from " in out.stdout and "1 files replaced, 2 removed" in out.stdout
    assert "1 passed" in out.stdout
    assert not (overlay / "pkg" / "__pycache__" / stale.name).exists()  # its bytecode went with the old source
    assert not (overlay / "pkg" / "grpc").exists()
    assert stale.exists() and (pkg / "gone.py").exists()  # the installed package itself is never changed


def test_importing_the_bootstrap_runs_nothing():
    import patchset.images.bootstrap as bootstrap

    assert callable(bootstrap.main)


def test_the_deadline_outlives_the_exec_into_pytest_and_ends_it(tmp_path):
    """PATCHSET_DEADLINE: what stops a container whose patchset was killed. The alarm is armed before exec and
    pytest leaves SIGALRM at its default, so a run that would sleep a minute ends after the deadline."""
    import signal

    site, boot, overlay, tree = (tmp_path / name for name in ("site", "boot", "overlay", "tree"))
    for folder in (site / "pkg", boot / "files", overlay, tree):
        folder.mkdir(parents=True)
    (site / "pkg" / "__init__.py").write_text("")
    (boot / "files.json").write_text(json.dumps({"package": "pkg", "write": [], "delete": []}))
    (boot / "bootstrap.py").write_bytes(shipped("bootstrap.py").read_bytes())
    (tree / "test_slow.py").write_text("import time\n\ndef test_hangs():\n    time.sleep(60)\n")
    env = {**os.environ, "PYTHONPATH": f"{overlay}{os.pathsep}{site}", "PATCHSET_DEADLINE": "2"}
    env.pop("PATCHSET_TEST_TOOLS", None)
    out = subprocess.run([sys.executable, "-B", str(boot / "bootstrap.py"), str(boot), str(overlay),
                          "-q", "-p", "no:cacheprovider", "test_slow.py"],
                         cwd=tree, env=env, capture_output=True, text=True, check=False, timeout=55)
    assert out.returncode == -signal.SIGALRM, out.stdout + out.stderr  # the alarm, not the sleep's end
