"""Shared test settings: hypothesis profiles (CI keeps runs short; TOOLMEND_FUZZ=1 runs long)."""

from __future__ import annotations

import os
import sys
from typing import Any

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "fuzz",
    max_examples=int(os.environ.get("TOOLMEND_FUZZ_EXAMPLES") or 20_000),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
settings.load_profile("fuzz" if os.environ.get("TOOLMEND_FUZZ") else "default")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """How many fuzz cases ran (tests/test_fuzz.py, tests/test_hostile.py) and how many
    repairs the outside judges accepted (tests/test_judges.py), so a run shows what it
    covered."""
    judged = getattr(sys.modules.get("test_judges"), "JUDGED", None)
    if judged:
        terminalreporter.write_line(
            "toolmend judges: "
            + ", ".join(f"{name} accepted {count}" for name, count in sorted(judged.items()))
        )
    cases = sys.modules.get("support.fuzz_cases")
    if cases is None:
        return
    profile = "fuzz" if os.environ.get("TOOLMEND_FUZZ") else "default"
    runs, hostile = cases.RUNS, cases.HOSTILE_RUNS
    if runs:
        formats = len({format for format, _ in runs})
        profiles = len({provider for _, provider in runs})
        terminalreporter.write_line(
            f"toolmend fuzz: {sum(runs.values())} cases over {formats} formats x {profiles} "
            f"profiles ({len(runs)} pairs; hypothesis profile={profile})"
        )
    if hostile:
        terminalreporter.write_line(
            f"toolmend hostile: {sum(hostile.values())} generated cases over {len(hostile)} "
            f"formats (hypothesis profile={profile})"
        )
