"""The version of toolmend, in one place: ``toolmend.__version__``, ``toolmend --version`` and
the package metadata (``pyproject.toml`` reads it with setuptools' dynamic ``attr:``) all come
from here."""

__all__ = ["VERSION"]

VERSION = "0.2.0"
