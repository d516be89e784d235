"""Patch the SDKs at interpreter start, then run the ``sitecustomize`` this one shadows.

Python imports ``sitecustomize`` once, from the first folder on ``sys.path`` that has one.
``toolmend-run`` puts this folder first on ``PYTHONPATH``; with ``TOOLMEND_PATCH=1`` this module
calls :func:`toolmend.integrations.patch.patch_from_env`, which only registers import hooks, so
startup stays cheap and the app's own imports get patched whenever they happen. Whatever goes
wrong here is logged, never raised: the app must start regardless. Then the next
``sitecustomize`` on the path (the user's, a virtualenv's, the distribution's) is imported, as
if this one were not there.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import logging
import os
import sys


def _patch() -> None:
    try:
        # imported by name at run time: this file runs as the top-level ``sitecustomize``
        importlib.import_module("toolmend.integrations.patch").patch_from_env()
    except Exception:  # never stop the app from starting
        logging.getLogger("toolmend").exception("toolmend: patching at startup failed")


def _chain() -> None:
    """Import the ``sitecustomize`` found on ``sys.path`` after this folder, if any."""
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        logging.getLogger("toolmend").exception("toolmend: the shadowed sitecustomize failed")


if os.environ.get("TOOLMEND_PATCH"):
    _patch()
_chain()
