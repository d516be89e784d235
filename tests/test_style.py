"""Style is part of the suite: ruff (lint and format) and mypy in strict mode on src/, and the
doctests of the public API. Each runs the tool from the test environment."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import toolmend

ROOT = Path(__file__).resolve().parent.parent
TARGETS = [
    p for p in ("src", "integrations", "tests", "benchmarks", "examples") if (ROOT / p).exists()
]


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[test]'")
    return found


@pytest.mark.slow
def test_ruff_lint_is_clean() -> None:
    done = subprocess.run(
        [_tool("ruff"), "check", *TARGETS], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_ruff_format_is_clean() -> None:
    done = subprocess.run(
        [_tool("ruff"), "format", "--check", *TARGETS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_mypy_strict_is_clean() -> None:
    done = subprocess.run([_tool("mypy")], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_doctests_of_the_public_api() -> None:
    failures = 0
    modules = [toolmend]
    for info in pkgutil.walk_packages(toolmend.__path__, "toolmend."):
        if info.name.endswith("__main__") or ".integrations" in info.name:
            continue
        modules.append(importlib.import_module(info.name))
    for module in modules:
        failures += doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed
    assert failures == 0
