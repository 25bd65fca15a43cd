"""patchset: keep a fork's backports of upstream vLLM fixes honest."""

__version__ = "0.1.0"

#: ``typing.TYPE_CHECKING`` without importing typing: mypy treats any name ``TYPE_CHECKING`` as True. The
#: modules a warm ``check`` loads import typing only under it: leaving typing out took this repository's
#: check from 327 to 314 million instructions (callgrind) and spares about 200 page faults.
TYPE_CHECKING = False
