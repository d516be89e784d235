"""``TOOLMEND_LOG``: see toolmend's log lines without configuring logging.

The hooks write one line per request they repair on logger ``toolmend`` (INFO; WARNING when
problems are left or the loop guard fires; see docs/hooks.md, "What toolmend logs"). Python
shows nothing below WARNING until an application configures logging, and a LiteLLM Proxy, a
program under ``toolmend-run`` or a script that calls :func:`toolmend.integrations.patch.patch`
often configures none for ``toolmend``: its lines are lost and ``toolmend stats`` has nothing to
count. ``TOOLMEND_LOG=info`` (or ``debug``, ``warning``, ``error``; any case) fixes that:

* logger ``toolmend`` gets that level, unless the application set one itself;
* it gets one handler writing to standard error, ``%(asctime)s %(levelname)s %(message)s``
  (each message already starts with ``toolmend``), unless the application put a handler on
  logger ``toolmend`` itself. Never a second one: setting it up again (each hook's import, a
  second :func:`log_from_env`) finds the first and only sets its level;
* that handler stands aside whenever the root logger has a handler, so an application that
  configures logging, before or after, gets each line once, through its own handlers and
  format (the levels of those handlers decide what shows).

Unset, empty, ``0`` or ``off``: nothing is touched. Any other value writes one WARNING naming
it. Importing :mod:`toolmend.integrations` (every hook does: the LiteLLM callback the proxy
loads, :func:`~toolmend.integrations.patch.patch`, the ``sitecustomize`` of ``toolmend-run``)
reads the variable once; :func:`log_from_env` reads it again.

LiteLLM's own ``LITELLM_LOG`` does not turn this on: it is LiteLLM's debugging switch (at
``DEBUG`` it prints request content), and toolmend's lines are wanted in production, where it
is off. One switch, named for toolmend, set beside it: ``TOOLMEND_LOG=info``.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import Final

__all__ = ["ENV_LOG", "FORMAT", "LEVELS", "StderrHandler", "log_from_env"]

ENV_LOG: Final = "TOOLMEND_LOG"

LEVELS: Final[Mapping[str, int]] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "warn": logging.WARNING,
    "error": logging.ERROR,
}
"""The values :data:`ENV_LOG` takes (any case)."""

_OFF: Final = frozenset({"", "0", "off", "none", "false", "no"})

FORMAT: Final = "%(asctime)s %(levelname)s %(message)s"
"""The handler's format: without ``%(name)s``, since every message starts with ``toolmend``."""

logger = logging.getLogger("toolmend")


class StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler :data:`ENV_LOG` adds: standard error (as it is when the record is written,
    so a test's or an app's replacement of ``sys.stderr`` is followed), standing aside while the
    root logger has a handler of its own."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)
        self.setFormatter(logging.Formatter(FORMAT))

    def emit(self, record: logging.LogRecord) -> None:
        if logging.getLogger().handlers:
            return  # the application configured logging: the record reaches its handlers
        self.stream = sys.stderr
        super().emit(record)


def log_from_env(environ: Mapping[str, str] | None = None) -> StderrHandler | None:
    """Apply :data:`ENV_LOG` (see the module docstring) and return toolmend's handler, or None
    when the variable is off or logger ``toolmend`` has a handler of the application's. Never
    raises: a value it does not know is logged and left."""
    env = os.environ if environ is None else environ
    value = env.get(ENV_LOG, "").strip().lower()
    if value in _OFF:
        return None
    level = LEVELS.get(value)
    if level is None:
        logger.warning(
            "toolmend: %s=%r is not a level; use %s", ENV_LOG, value[:20], ", ".join(LEVELS)
        )
        return None
    ours = [h for h in logger.handlers if isinstance(h, StderrHandler)]
    if logger.level == logging.NOTSET or ours:
        logger.setLevel(level)
    if ours:
        return ours[0]
    if logger.handlers:  # the application's own: it decides where the lines go
        return None
    handler = StderrHandler()
    logger.addHandler(handler)
    return handler
