"""patchset: keep a fork's backports of upstream vLLM fixes honest."""

try:  # written by setuptools-scm from the git tags when patchset is built or installed
    from patchset._version import __version__
except ImportError:  # a checkout run without installing it
    __version__ = "0+unknown"
