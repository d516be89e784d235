"""``toolmend demo``: the console script runs every scenario offline and exits 0 when toolmend
fixed them all; a missing SDK gives an install hint instead of a traceback."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from toolmend import Change
from toolmend._demo import SCENARIOS, Scenario, render, run
from toolmend.formats import names as format_names
from toolmend.profiles import PROFILES

MISSING = sorted(
    {f"format {s.format!r}" for s in SCENARIOS if s.format not in format_names()}
    | {f"profile {s.provider!r}" for s in SCENARIOS if s.provider not in PROFILES}
)
SCRIPT = Path(sys.executable).with_name("toolmend")


def _run_script(*args: str, code: str | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", code] if code else [str(SCRIPT), *args]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "140"}
    )


@pytest.mark.slow
@pytest.mark.skipif(bool(MISSING), reason=f"{', '.join(MISSING)} not in toolmend yet")
def test_console_script_demo_fixes_every_scenario() -> None:
    assert SCRIPT.exists(), "the toolmend console script is not installed in this venv"
    done = _run_script("demo")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    header = next(line for line in lines if line.startswith("scenario"))
    for column in ("SDK", "provider", "without toolmend", "with", "changes"):
        assert column in header
    for scenario in SCENARIOS:
        row = next(line for line in lines if line.startswith(scenario.title))
        assert f" {scenario.sdk} " in row and f" {scenario.provider} " in row
        assert " 400 " in row and " 200 " in row, row
    assert f"{len(SCENARIOS)}/{len(SCENARIOS)} accepted with toolmend" in done.stdout
    assert done.stderr == ""


def test_every_scenario_is_rejected_without_and_accepted_with_toolmend() -> None:
    rows = run()
    for row in rows:
        if row.skipped:
            assert row.skipped.startswith(("format", "profile")), row.skipped
            continue
        assert row.without is not None and row.with_ is not None
        assert (row.without.accepted, row.without.status) == (False, 400), row.scenario.title
        assert row.with_.accepted, (row.scenario.title, row.with_)
        assert row.changes, row.scenario.title
    assert {s.sdk for s in SCENARIOS} == {"openai", "anthropic", "google-genai", "litellm"}
    assert sum("seed" in s.source or s.title[:3].isdigit() for s in SCENARIOS) >= 4


def test_the_histories_a_scenario_points_to_are_in_the_repository() -> None:
    root = Path(__file__).resolve().parent.parent
    named = [s.source.rpartition("; ")[2] for s in SCENARIOS if "examples/" in s.source]
    assert len(named) >= 4
    for pattern in named:
        assert len(list(root.glob(pattern))) == 1, pattern


def test_verbose_output_names_the_full_error_and_each_change() -> None:
    rows = run(SCENARIOS[:1])
    text = render(rows, width=140, verbose=True)
    assert (
        "without:  400 Messages with role 'tool' must be a response to a preceding message "
        "with 'tool_calls'" in text
    )
    assert "change:   message 3: dropped_orphan_result" in text


def test_a_hook_replaces_sanitize_per_scenario() -> None:
    seen: list[str] = []

    def hook(scenario: Scenario, send: Any, history: Any) -> tuple[str, Sequence[Change]]:
        seen.append(scenario.title)
        fixed = [m for m in history if m.get("role") != "tool"]
        return send(fixed), [Change("custom_hook", 0, "dropped every tool message")]

    scenario = dataclasses.replace(SCENARIOS[0], hook=hook)
    (row,) = run([scenario])
    assert seen == [scenario.title]
    assert row.with_ is not None and row.with_.accepted
    assert [c.code for c in row.changes] == ["custom_hook"]


@pytest.mark.slow
def test_missing_sdk_gives_the_install_hint_not_a_traceback() -> None:
    code = (
        "import sys; sys.modules['anthropic'] = None\n"
        "from toolmend._cli import main\n"
        "raise SystemExit(main(['demo']))\n"
    )
    done = _run_script(code=code)
    assert done.returncode == 1
    assert "Traceback" not in done.stdout + done.stderr
    assert "pip install 'toolmend[demo]'" in done.stdout
    assert "needs anthropic" in done.stdout


@pytest.mark.slow
def test_the_core_does_not_import_the_sdks_for_the_demo_module() -> None:
    code = (
        "import sys, toolmend, toolmend._cli, toolmend._demo\n"
        "print(sorted(m for m in ('openai', 'anthropic', 'google.genai', 'litellm') if m in sys.modules))\n"
    )
    done = _run_script(code=code)
    assert done.stdout.strip() == "[]", done.stderr


def test_every_row_has_a_label_of_its_own() -> None:
    """Each row of the table starts with its own label: bug report 002 gives two scenarios,
    labelled 002a and 002b, not two rows that both read "002"."""
    labels = [scenario.title.split()[0] for scenario in SCENARIOS]
    numbered = [label for label in labels if label[:3].isdigit()]
    assert len(set(numbered)) == len(numbered), numbered
    assert len({scenario.title for scenario in SCENARIOS}) == len(SCENARIOS)
    assert {"002a", "002b"} <= set(numbered)
