"""``TOOLMEND_LOG`` (issue 33): toolmend's lines on standard error where the app configured no
logging, never a second handler, never in the way of an app's own logging; honoured by
``toolmend-run`` against the strict server, and by a real LiteLLM Proxy started as
docs/observability.md's recipe says, whose log ``toolmend stats`` then counts."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolmend._stats import logs
from toolmend.integrations import logswitch
from toolmend.integrations.logswitch import StderrHandler, log_from_env
from toolmend.testing import StrictProviderServer

from support import litellm_proxy

ROOT = Path(__file__).resolve().parent.parent
LEGACY_APP = ROOT / "examples" / "legacy_app.py"

INTERLEAVED = [
    {"role": "user", "content": "Weather?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "w", "arguments": "{}"}}
        ],
    },
    {"role": "user", "content": "Are you there?"},
    {"role": "tool", "tool_call_id": "call_1", "content": "21 C"},
]


@pytest.fixture
def toolmend_logger() -> Iterator[logging.Logger]:
    """Logger ``toolmend`` as the test found it, put back afterwards."""
    logger = logging.getLogger("toolmend")
    handlers, level = list(logger.handlers), logger.level
    logger.handlers = [h for h in handlers if not isinstance(h, StderrHandler)]
    logger.setLevel(logging.NOTSET)
    yield logger
    logger.handlers = handlers
    logger.setLevel(level)


def ours(logger: logging.Logger) -> list[logging.Handler]:
    return [h for h in logger.handlers if isinstance(h, StderrHandler)]


@pytest.mark.parametrize("value", [None, "", "0", "off", "OFF"])
def test_off_touches_nothing(toolmend_logger: logging.Logger, value: str | None) -> None:
    env = {} if value is None else {"TOOLMEND_LOG": value}
    assert log_from_env(env) is None
    assert ours(toolmend_logger) == [] and toolmend_logger.level == logging.NOTSET


@pytest.mark.parametrize(
    ("value", "level"),
    [("info", logging.INFO), ("DEBUG", logging.DEBUG), (" Warning ", logging.WARNING)],
)
def test_a_level_adds_one_handler_and_sets_the_level(
    toolmend_logger: logging.Logger, value: str, level: int
) -> None:
    handler = log_from_env({"TOOLMEND_LOG": value})
    assert ours(toolmend_logger) == [handler]
    assert toolmend_logger.level == level


def test_never_a_second_handler(toolmend_logger: logging.Logger) -> None:
    first = log_from_env({"TOOLMEND_LOG": "info"})
    again = log_from_env({"TOOLMEND_LOG": "debug"})
    assert again is first and ours(toolmend_logger) == [first]
    assert toolmend_logger.level == logging.DEBUG  # the switch's own level may change


def test_an_apps_own_handler_and_level_are_left_alone(toolmend_logger: logging.Logger) -> None:
    apps = logging.NullHandler()
    toolmend_logger.addHandler(apps)
    toolmend_logger.setLevel(logging.ERROR)
    assert log_from_env({"TOOLMEND_LOG": "info"}) is None
    assert toolmend_logger.handlers[-1] is apps and ours(toolmend_logger) == []
    assert toolmend_logger.level == logging.ERROR


def test_an_unknown_value_is_one_warning(
    toolmend_logger: logging.Logger, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="toolmend"):
        assert log_from_env({"TOOLMEND_LOG": "verbose"}) is None
    assert ours(toolmend_logger) == []
    assert [r.getMessage() for r in caplog.records] == [
        "toolmend: TOOLMEND_LOG='verbose' is not a level; use debug, info, warning, warn, error"
    ]


def test_the_handler_writes_once_and_stands_aside_for_an_apps_root_logging(
    toolmend_logger: logging.Logger, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])  # pytest's own capture handlers, set aside
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    log_from_env({"TOOLMEND_LOG": "info"})
    toolmend_logger.info("toolmend repaired x for openai: moved_result@3[call_1]")
    lines = stderr.getvalue().splitlines()
    assert len(lines) == 1
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\d [\d:,]+ INFO toolmend repaired x for openai: moved_result@3\[call_1\]",
        lines[0],
    )
    # the app configures logging afterwards: its handler gets the line, ours stays quiet
    apps = io.StringIO()
    monkeypatch.setattr(root, "handlers", [logging.StreamHandler(apps)])
    toolmend_logger.info("toolmend repaired y for openai: moved_result@3[call_1]")
    assert len(stderr.getvalue().splitlines()) == 1
    assert apps.getvalue() == "toolmend repaired y for openai: moved_result@3[call_1]\n"


def test_importing_the_hooks_reads_the_variable(
    toolmend_logger: logging.Logger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The package every hook imports applies the variable when it is imported (run again
    here by a reload: the first import happened before the test)."""
    import importlib

    import toolmend.integrations

    assert logswitch.ENV_LOG == "TOOLMEND_LOG"
    monkeypatch.delenv("TOOLMEND_LOG", raising=False)
    importlib.reload(toolmend.integrations)
    assert ours(toolmend_logger) == [] and toolmend_logger.level == logging.NOTSET
    monkeypatch.setenv("TOOLMEND_LOG", "info")
    importlib.reload(toolmend.integrations)
    assert len(ours(toolmend_logger)) == 1 and toolmend_logger.level == logging.INFO


# --- through a process ------------------------------------------------------------------------------


def _toolmend_run() -> str:
    found = shutil.which("toolmend-run", path=str(Path(sys.executable).parent))
    assert found, "toolmend-run is not installed next to this Python"
    return found


@pytest.mark.slow
@pytest.mark.parametrize("switch", ["info", None])
def test_toolmend_run_prints_the_line_with_toolmend_log(tmp_path: Path, switch: str | None) -> None:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("TOOLMEND_LOG", "PYTHONPATH", "TOOLMEND_PATCH")
    }
    if switch:
        env["TOOLMEND_LOG"] = switch
    with StrictProviderServer() as server:
        env["OPENAI_BASE_URL"] = server.openai_base_url
        done = subprocess.run(
            [_toolmend_run(), sys.executable, str(LEGACY_APP)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert [r.status for r in server.requests] == [200]
    assert done.returncode == 0 and done.stdout.startswith("accepted"), done.stderr
    lines = [line for line in done.stderr.splitlines() if "toolmend repaired" in line]
    if switch is None:
        assert lines == []  # before TOOLMEND_LOG: silent
        return
    assert len(lines) == 1, done.stderr
    assert "toolmend repaired openai.Completions.create for openai: " in lines[0]
    assert "21 C" not in done.stderr  # codes and ids, never content
    log = tmp_path / "app.log"
    log.write_text(done.stderr)
    stats = logs.read_files([str(log)])
    assert stats.repaired.total_requests == 1
    assert dict(stats.repaired.code_items) == {
        ("openai", "moved_message"): 1,
        ("openai", "moved_result"): 1,
    }


def _recipe() -> str:
    """The proxy's config.yaml from docs/observability.md, as a user copies it."""
    text = (ROOT / "docs" / "observability.md").read_text()
    section = text.split("### A LiteLLM Proxy whose lines `toolmend stats` reads", 1)[1]
    return section.split("```yaml\n", 1)[1].split("```", 1)[0]


@pytest.mark.slow
def test_the_proxy_recipe_logs_a_line_that_stats_counts(tmp_path: Path) -> None:
    reason = litellm_proxy.unavailable()
    if reason:
        pytest.skip(reason)
    config = tmp_path / "config.yaml"
    config.write_text(_recipe())
    with StrictProviderServer() as server:
        proxy = litellm_proxy.Proxy(
            config,
            tmp_path,
            {
                "TOOLMEND_LOG": "info",
                "OPENAI_BASE_URL": server.openai_base_url,
                "OPENAI_API_KEY": "test",
                "LITELLM_MASTER_KEY": "sk-toolmend-recipe",
            },
        )
        try:
            proxy.wait_ready()
            request = urllib.request.Request(
                proxy.base + "/v1/chat/completions",
                data=json.dumps({"model": "gpt-4o", "messages": INTERLEAVED}).encode(),
                headers={
                    "Content-Type": "application/json",
                    "Authorization": "Bearer sk-toolmend-recipe",
                },
            )
            with urllib.request.urlopen(request, timeout=60) as reply:
                assert reply.status == 200
        finally:
            proxy.stop()
        assert [r.status for r in server.requests] == [200]
    log = tmp_path / "proxy.log"
    found = [line for line in log.read_text().splitlines() if "toolmend repaired" in line]
    assert len(found) == 1, log.read_text()[-3000:]
    done = subprocess.run(
        [sys.executable, "-m", "toolmend", "stats", "--json", str(log)],
        capture_output=True,
        text=True,
        check=True,
    )
    summary = json.loads(done.stdout)
    assert summary["repaired"]["requests"] == 1
    assert summary["hooks"] == {
        "litellm.acompletion": {"repaired": 1, "problems_left": 0, "loop": 0, "failed_open": 0}
    }
