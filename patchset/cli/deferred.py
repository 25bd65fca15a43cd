"""Standard modules the command line loads only when something reads them.

``dataclasses`` imports ``inspect`` (and with it ast, dis, tokenize and linecache) at its top, but
reads it only to write a docstring for a class that has none, and every class a check creates has
one. Loading it cost 23 million of the 392 million instructions (callgrind) and 5 ms of the 85 ms of
this repository's warm ``check`` (medians of 15 paired runs).

:func:`defer` puts a stand-in in ``sys.modules``: ``import inspect`` binds the stand-in, and the first
attribute read through it (``inspect.signature``, or a ``from inspect import`` of anything) imports
the real module, which replaces the stand-in in ``sys.modules``; the stand-in forwards every later
read. Importing this module defers :data:`DEFERRED`; only the command line imports it, before
anything that loads dataclasses (a program that imports patchset's library modules alone keeps its
own ``sys.modules`` as it was).
"""

from __future__ import annotations

import importlib
import sys
import types

#: Imported at the top of a module on every verb's path, and read only in cases that verb never meets.
DEFERRED = ("inspect",)


class _StandIn(types.ModuleType):
    """A module that is not loaded yet: any attribute it lacks loads the real module and comes from there."""

    def __getattr__(self, name: str) -> object:
        return getattr(_real(self.__name__), name)


def _real(name: str) -> types.ModuleType:
    if isinstance(sys.modules.get(name), _StandIn):
        del sys.modules[name]
    return importlib.import_module(name)


def defer(*names: str) -> None:
    """Stand in for each of ``names`` that nothing has imported yet."""
    for name in names:
        if name not in sys.modules:
            stand_in = _StandIn(name)
            # set, so that the import statement's check of __spec__ (still initialising?) reads None
            # here rather than loading the module
            stand_in.__spec__ = None
            sys.modules[name] = stand_in


def loaded(name: str) -> bool:
    """Is the real module ``name`` imported (not a stand-in)?"""
    return name in sys.modules and not isinstance(sys.modules[name], _StandIn)


defer(*DEFERRED)
