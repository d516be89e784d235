"""After the README's ``pip install -e '.[test]'``, ``mypy --strict`` on a user's own code finds
``toolmend`` and ``toolmend.integrations`` (issue 33): the hooks live in the top-level
``integrations/``, outside ``src/``, which setuptools' default editable layout serves through
an import hook that type checkers cannot follow; ``pyproject.toml`` asks for its strict mode,
a tree of links on a plain ``.pth`` path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

USER_CODE = """\
import toolmend
from toolmend.integrations.hooks import HookOptions
from toolmend.integrations.patch import patch


def count(history: list[dict[str, object]]) -> int:
    result: toolmend.Repair = toolmend.repair(history, provider="openai")
    patch(openai=True)
    options: HookOptions = HookOptions(provider="openai")
    return len(result.changes) + (0 if options.provider else 1)
"""


def test_pyproject_asks_for_an_editable_install_type_checkers_can_read() -> None:
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert config["tool"]["distutils"]["editable_wheel"] == {"mode": "strict"}
    # the design card's layout stays: the hooks are the top-level integrations/
    assert config["tool"]["setuptools"]["package-dir"]["toolmend.integrations"] == "integrations"


@pytest.mark.slow
def test_mypy_strict_finds_toolmend_from_user_code(tmp_path: Path) -> None:
    """The project's own environment, installed as the README says; the user's file and mypy's
    cache in a folder of their own, so nothing of the repository is on mypy's path but what the
    installation put there."""
    (tmp_path / "app.py").write_text(USER_CODE)
    (tmp_path / "wrong.py").write_text(
        "import toolmend\n\nx: int = toolmend.repair([], provider='openai')\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            str(tmp_path / ".cache"),
            "app.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # and it reads the real types (not Any): a wrong use is caught
    wrong = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            str(tmp_path / ".cache"),
            "wrong.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert wrong.returncode == 1
    assert 'expression has type "Repair", variable has type "int"' in wrong.stdout
