"""Work measured without a clock: the Python lines a call executes (``sys.settrace`` counts
every line of every Python frame), so a busy machine changes the time of a test, never its
count. ``tests/test_bounds.py`` has the budgeted variant its shapes use."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

__all__ = ["lines_executed"]


def lines_executed(run: Callable[[], object]) -> int:
    """The Python lines executed by ``run()``."""
    count = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    previous = sys.gettrace()
    sys.settrace(lambda frame, event, arg: local)
    try:
        run()
    finally:
        sys.settrace(previous)
    return count
