"""Everything patchset does with Docker, in one place, through the docker SDK only.

* :mod:`~patchset.images.engine`: reaching the engine, reading files out of images, committing;
  :class:`ImageError` and its kinds, the one error type the CLI maps (exit 2, with a hint);
* :mod:`~patchset.images.tree`: the ``vllm/`` files of an image as a pristine-tree source;
* :mod:`~patchset.images.context`: the build context of ``patchset build`` and its Dockerfile;
* package data, shipped in the wheel and read with :func:`shipped`: ``vllm-patched/Dockerfile``
  (the image definition) and ``bootstrap.py`` (run by the image's own Python before the tests).

Verbs and runners import this package; it imports ``core``, ``sources`` and ``errors``, never
back up.
"""

from __future__ import annotations

import importlib.resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable


def shipped(*parts: str) -> Traversable:
    """A file this package ships: read through importlib.resources, so it works from any install."""
    return importlib.resources.files(__name__).joinpath(*parts)
