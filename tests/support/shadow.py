"""Make a child process import toolmend the way a default editable install serves it, so that a
folder named ``toolmend`` on ``sys.path`` shadows it as it does on the LiteLLM Proxy.

The proxy puts ``../..`` of its working directory first on ``sys.path``. A folder named
``toolmend`` there is a namespace portion, and a namespace portion loses to a regular package
anywhere on ``sys.path``: a wheel install or the strict editable install this project uses is
never shadowed. It wins when the real toolmend is not on ``sys.path`` at all but served by an
import hook placed after the path finder, as setuptools' default editable install serves a
package whose parts live in several folders (``src/toolmend`` and ``integrations/``). Then
``import toolmend`` gives the empty namespace package and each ``toolmend.X`` is still found by
the hook: the hooks' code runs against a ``toolmend`` module that holds none of toolmend's names.

:func:`child_env` writes a ``sitecustomize`` that sets up exactly that (for ``toolmend`` the path
finder over ``sys.path`` without the real package's folder; for ``toolmend.X`` the real files)
and returns the environment that loads it in a child process.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import toolmend
import toolmend.integrations

_SITECUSTOMIZE = '''"""Test-only: serve toolmend as a default editable install would (tests/support/shadow.py)."""
import importlib.machinery
import importlib.util
import json
import os
import sys

_REAL = json.loads(os.environ["TOOLMEND_TEST_REAL"])


class _EditableLike:
    """Placed first; answers only for toolmend and its first-level parts."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "toolmend":  # what the path finder finds without the real package's folder
            roots = [p for p in sys.path if os.path.abspath(p or ".") != _REAL["root"]]
            spec = importlib.machinery.PathFinder.find_spec(name, roots)
            if spec is not None and spec.loader is None:  # a namespace portion: it shadows
                return spec
            return None  # nothing there: the real toolmend, as usual
        parent, _, child = name.rpartition(".")
        if parent != "toolmend":
            return None  # deeper names are found through their parent's __path__
        if name in _REAL["packages"]:
            folder = _REAL["packages"][name]
            return importlib.util.spec_from_file_location(
                name, os.path.join(folder, "__init__.py"), submodule_search_locations=[folder]
            )
        return importlib.machinery.PathFinder.find_spec(name, [_REAL["packages"]["toolmend"]])


sys.meta_path.insert(0, _EditableLike())
'''


def child_env(folder: Path) -> dict[str, str]:
    """The environment for a child process that imports toolmend as described above; the
    ``sitecustomize`` is written into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    real_package = Path(toolmend.__file__).parent
    packages = {
        "toolmend": str(real_package),
        "toolmend.integrations": str(Path(toolmend.integrations.__file__).parent),
    }
    real = {"root": os.path.abspath(real_package.parent), "packages": packages}
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "TOOLMEND_TEST_REAL": json.dumps(real)}
