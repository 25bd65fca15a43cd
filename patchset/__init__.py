"""patchset: keep a fork's backports of upstream vLLM fixes honest."""

__version__ = "0.1.0"
