"""The stand-ins the command line puts in sys.modules (patchset.cli.deferred)."""

from __future__ import annotations

import subprocess
import sys
import types

from patchset.cli import deferred


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


def test_inspect_loads_only_when_read_and_then_behaves_as_itself():
    out = _run(
        "import sys\n"
        "from patchset.cli import deferred\n"
        "import dataclasses\n"
        "print(deferred.loaded('inspect'), 'ast' in sys.modules)\n"
        "@dataclasses.dataclass\n"
        "class Documented:\n    'mine'\n    x: int\n"
        "print(Documented.__doc__, deferred.loaded('inspect'))\n"
        "@dataclasses.dataclass\n"
        "class Bare:\n    x: int\n"  # dataclasses reads inspect.signature for its docstring
        "print(Bare.__doc__, deferred.loaded('inspect'))\n"
        "import inspect\n"
        "from inspect import signature\n"
        "print(inspect.signature is signature, type(sys.modules['inspect']).__name__)\n")
    assert out.splitlines() == ["False False", "mine False", "Bare(x: int) True", "True module"]


def test_a_from_import_loads_the_real_module():
    out = _run("from patchset.cli import deferred\nfrom inspect import isclass\n"
               "print(isclass(int), deferred.loaded('inspect'))")
    assert out.split() == ["True", "True"]


def test_a_module_already_imported_is_left_alone():
    before = sys.modules["json"]
    deferred.defer("json")
    assert sys.modules["json"] is before and deferred.loaded("json")
    assert not deferred.loaded("no_such_module_here")


def test_a_stand_in_forwards_every_read_to_the_real_module(monkeypatch):
    name = "colorsys"  # a small standard module, not imported by the suite
    monkeypatch.delitem(sys.modules, name, raising=False)
    deferred.defer(name)
    stand_in = sys.modules[name]
    assert isinstance(stand_in, types.ModuleType) and not deferred.loaded(name)
    assert stand_in.rgb_to_hsv(1, 0, 0) == (0.0, 1.0, 1)
    real = sys.modules[name]
    assert deferred.loaded(name) and real is not stand_in and stand_in.hls_to_rgb is real.hls_to_rgb


def test_every_dataclass_has_a_docstring():
    """Without one, dataclasses reads inspect.signature to write it, and the command line pays for inspect."""
    import ast
    from pathlib import Path

    import patchset

    missing = []
    for f in sorted(Path(patchset.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ClassDef) and ast.get_docstring(node) is None \
                    and any("dataclass" in ast.unparse(d) for d in node.decorator_list):
                missing.append(f"{f.name}:{node.lineno} {node.name}")
    assert not missing
