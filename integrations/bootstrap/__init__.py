"""``toolmend-run``: run a program with the raw SDKs patched, without changing its code.

``toolmend-run python app.py`` puts this folder first on ``PYTHONPATH`` and sets
``TOOLMEND_PATCH=1``, then replaces itself with the command (``os.execvp``). Every Python
interpreter started under it imports this folder's ``sitecustomize``, which calls
:func:`toolmend.integrations.patch.patch_from_env` and then imports the ``sitecustomize`` it
shadowed, if there is one. Child Python processes inherit the environment and are patched too.
``TOOLMEND_PATCH_DISABLED=openai,anthropic`` leaves single SDKs alone (see
:mod:`toolmend.integrations.patch` for every variable), and ``TOOLMEND_LOG=info`` shows each
repaired request's line on standard error (:mod:`toolmend.integrations.logswitch`). Like
``ddtrace-run``.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence

__all__ = ["BOOTSTRAP_DIR", "environment", "main"]

BOOTSTRAP_DIR = os.path.dirname(os.path.abspath(__file__))
"""The folder holding the ``sitecustomize`` that patches at interpreter start."""

_USAGE = """usage: toolmend-run COMMAND [ARGS...]

Run COMMAND with toolmend patching the openai, google-genai and anthropic SDKs in every Python
interpreter it starts. Environment: TOOLMEND_PATCH_DISABLED=openai,anthropic,google_genai
switches single SDKs off; TOOLMEND_PROVIDER=deepseek sets the provider of openai clients;
TOOLMEND_LOG=info prints a line per repaired request on standard error.
"""


def environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment ``toolmend-run`` gives the command: the bootstrap folder first on
    ``PYTHONPATH`` (once) and ``TOOLMEND_PATCH=1``."""
    env = dict(os.environ if environ is None else environ)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != BOOTSTRAP_DIR]
    env["PYTHONPATH"] = os.pathsep.join([BOOTSTRAP_DIR, *paths])
    env["TOOLMEND_PATCH"] = "1"
    return env


def main(argv: Sequence[str] | None = None) -> int:
    """The ``toolmend-run`` console script: exec ``argv`` (default ``sys.argv[1:]``) patched.

    Returns only when it cannot run the command: 2 for a usage error, 127 when the command is
    not found (as a shell does).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(_USAGE, file=sys.stderr if not args else sys.stdout, end="")
        return 2 if not args else 0
    executable = shutil.which(args[0])
    if executable is None:
        print(f"toolmend-run: command not found: {args[0]}", file=sys.stderr)
        return 127
    os.execve(executable, args, environment())
    return 0  # not reached: execve replaces this process
