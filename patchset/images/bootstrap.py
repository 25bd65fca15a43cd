"""Runs first in a test container, with the image's own Python: ``python3 bootstrap.py BOOT OVERLAY PYTEST-ARGS...``.

Standalone (the image has no patchset; only the standard library): the image runner
(:mod:`patchset.runners.image`) copies this file into the read-only ``BOOT`` mount. It builds a
symlink farm of the image's installed package under ``OVERLAY`` (a tmpfs), replaces or removes
the configuration's files in it (``BOOT/files.json``, ``BOOT/files/``) together with their
bytecode, and runs pytest with the farm first on ``PYTHONPATH``: the image itself never changes.

``PATCHSET_DEADLINE`` (seconds) arms an alarm first: it survives the ``exec`` into pytest, and
SIGALRM ends pytest (and with it the container, ``docker-init`` being PID 1) when nobody is left
to stop it, e.g. when patchset itself was killed.
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import shutil
import signal
import sys


def farm(installed: str, top: str) -> None:
    """A symlink to every file (and symlinked folder) of ``installed``, at the same place under ``top``."""
    for folder, dirs, names in os.walk(installed):
        here = os.path.join(top, os.path.relpath(folder, installed))
        os.makedirs(here, exist_ok=True)
        for name in names:
            os.symlink(os.path.join(folder, name), os.path.join(here, name))
        for name in [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            os.symlink(os.path.join(folder, name), os.path.join(here, name))
            dirs.remove(name)


def replace(boot: str, top: str, write: list[str], delete: list[str]) -> None:
    """Drop every file of the configuration, and the bytecode of its modules, then write the new ones."""
    for rel in write + delete:
        target = os.path.join(top, rel)
        if os.path.lexists(target):
            os.unlink(target)
        if rel.endswith(".py"):
            # journal.bytecode_files' rule (__pycache__/STEM.*.pyc), written again here: this file
            # runs on the image's Python, where patchset is not installed.
            stem = os.path.basename(rel)[:-3]
            for pyc in glob.glob(os.path.join(os.path.dirname(target), "__pycache__", stem + ".*.pyc")):
                os.unlink(pyc)
    # The folders the deletions left empty go, as GNU patch and `patchset apply` remove them (an empty one
    # would import as a namespace package); deepest first, __pycache__ (emptied just above) before its folder.
    folders = {os.path.dirname(rel) for rel in delete}
    for folder in list(folders):
        while folder:
            folders.add(folder)
            folder = os.path.dirname(folder)
    for folder in sorted(folders - {""}, key=lambda f: -f.count("/")):
        for here in (os.path.join(top, folder, "__pycache__"), os.path.join(top, folder)):
            if os.path.isdir(here) and not os.path.islink(here) and not os.listdir(here):
                os.rmdir(here)
    for rel in write:
        target = os.path.join(top, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(boot, "files", rel), target)


def main() -> None:
    boot, overlay = sys.argv[1], sys.argv[2]
    with open(os.path.join(boot, "files.json")) as f:
        spec = json.load(f)
    package = spec["package"]
    found = importlib.util.find_spec(package)
    if found is None or not found.submodule_search_locations:
        sys.exit(f"patchset: {package} is not installed in this image")
    installed = os.path.realpath(list(found.submodule_search_locations)[0])
    top = os.path.join(overlay, package)
    farm(installed, top)
    replace(boot, top, spec["write"], spec["delete"])
    print(f"patchset: {package} from {installed}, {len(spec['write'])} files replaced, "
          f"{len(spec['delete'])} removed", flush=True)
    deadline = os.environ.get("PATCHSET_DEADLINE", "")
    if deadline.isdigit() and int(deadline) > 0:
        signal.alarm(int(deadline))  # kept across exec(); pytest leaves SIGALRM at its default: the end
    tools = os.environ.get("PATCHSET_TEST_TOOLS")
    if tools:
        # pytest & co from the host go *after* site-packages: the image's own packages always win.
        sys.path[0] = os.getcwd()  # what `python -m pytest` puts first
        sys.path.append(tools)
        import pytest

        sys.exit(pytest.main(sys.argv[3:]))
    os.execv(sys.executable, [sys.executable, "-m", "pytest"] + sys.argv[3:])


if __name__ == "__main__":
    main()
