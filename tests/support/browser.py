"""Headless chromium for the HTML pages' tests (``show --html``, ``stats --html``).

The binary and launch options are those of ``examples/show_screenshot.py`` (Debian's chromium,
``TOOLMEND_CHROMIUM`` for another), so the example and the tests cannot drift apart.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent

__all__ = ["ARGS", "CHROMIUM", "SCREENSHOT_EXAMPLE", "chromium", "needs_chromium"]


def _screenshot_example() -> Any:
    spec = importlib.util.spec_from_file_location(
        "show_screenshot", ROOT / "examples" / "show_screenshot.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCREENSHOT_EXAMPLE = _screenshot_example()
CHROMIUM: str = SCREENSHOT_EXAMPLE.CHROMIUM
ARGS: list[str] = list(SCREENSHOT_EXAMPLE.CHROMIUM_ARGS)

needs_chromium = pytest.mark.skipif(
    not Path(CHROMIUM).exists(),
    reason=f"no chromium at {CHROMIUM}: apt-get install chromium (or set TOOLMEND_CHROMIUM)",
)
"""Skip where there is no chromium."""


def chromium() -> Iterator[Any]:
    """A launched headless chromium, for a module-scoped fixture to yield from."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install -e '.[test]'")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()
