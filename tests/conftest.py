"""Shared test settings: hypothesis profiles (CI keeps runs short; TOOLMEND_FUZZ=1 runs long),
and the run's coverage counts, summed over pytest-xdist's worker processes."""

from __future__ import annotations

import os
import sys
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# LiteLLM fetches its model cost map over the network when imported; the suite has loopback only,
# so every test process reads the copy LiteLLM ships (set before any test module imports it).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

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


_COUNTS: dict[str, Counter[Any]] = {"judged": Counter(), "runs": Counter(), "hostile": Counter()}
"""What the worker processes counted (``pytest -n``: each runs some test files and sends its
counts back when it finishes; see :func:`pytest_testnodedown`)."""


def _local_counts() -> dict[str, Counter[Any]]:
    """This process's counts: the judges' acceptances (tests/test_judges.py) and the fuzz and
    hostile cases run (tests/support/fuzz_cases.py)."""
    judged = getattr(sys.modules.get("test_judges"), "JUDGED", None) or Counter()
    cases = sys.modules.get("support.fuzz_cases")
    runs = cases.RUNS if cases is not None else Counter()
    hostile = cases.HOSTILE_RUNS if cases is not None else Counter()
    return {"judged": Counter(judged), "runs": Counter(runs), "hostile": Counter(hostile)}


def pytest_sessionfinish(session: Any) -> None:
    """In a pytest-xdist worker: hand this worker's counts to the controller (as lists of
    pairs: what crosses the process boundary must be plain data)."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["toolmend_counts"] = {
            name: [
                [list(key) if isinstance(key, tuple) else key, count] for key, count in c.items()
            ]
            for name, c in _local_counts().items()
        }


@pytest.hookimpl(optionalhook=True)  # an xdist hook: `-p no:xdist -o addopts=` still runs
def pytest_testnodedown(node: Any, error: Any) -> None:
    """In the controller of ``pytest -n``: add up what a worker counted."""
    received = getattr(node, "workeroutput", {}).get("toolmend_counts", {})
    for name, pairs in received.items():
        for key, count in pairs:
            _COUNTS[name][tuple(key) if isinstance(key, list) else key] += count


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """How many fuzz cases ran (tests/test_fuzz.py, tests/test_hostile.py) and how many
    repairs the outside judges accepted (tests/test_judges.py), so a run shows what it
    covered."""
    counts = _local_counts()
    for name, received in _COUNTS.items():
        counts[name].update(received)
    judged, runs, hostile = counts["judged"], counts["runs"], counts["hostile"]
    if judged:
        terminalreporter.write_line(
            "toolmend judges: "
            + ", ".join(f"{name} accepted {count}" for name, count in sorted(judged.items()))
        )
    profile = "fuzz" if os.environ.get("TOOLMEND_FUZZ") else "default"
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
