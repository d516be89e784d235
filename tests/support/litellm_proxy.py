"""A real LiteLLM Proxy for the tests: ``litellm --config`` started on 127.0.0.1 in front of
the strict server, waited for, and stopped. ``tests/test_litellm.py`` and
``tests/test_escaping.py`` run the example config through it (:func:`example_proxy`);
``tests/test_fail_open.py`` a handler with a fault inside toolmend."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

MODULES = (
    "fastapi",
    "uvicorn",
    "orjson",
    "backoff",
    "redis",
    "apscheduler",
    "jwt",
    "semver",
    "multipart",
    "expression",
    "fastapi_sso",
    "mcp",
    "soundfile",
    "yaml",
)
"""What ``litellm --config`` imports at startup (``toolmend[litellm-proxy]`` installs them)."""

STARTUP_SECONDS = 300
"""How long a proxy may take to answer its liveliness check: generous, since a busy 2-core machine
starts it slowly and a process that exits fails the wait at once."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def unavailable() -> str:
    """Why the proxy cannot run here ("" when it can): a module it needs, or its command."""
    missing = [name for name in MODULES if importlib.util.find_spec(name) is None]
    if missing:
        return (
            f"the LiteLLM Proxy needs {', '.join(missing)}: pip install 'toolmend[litellm-proxy]'"
        )
    if _executable() is None:
        return "the `litellm` command is not installed next to this Python"
    return ""


def _executable() -> str | None:
    return shutil.which("litellm", path=str(Path(sys.executable).parent))


class Proxy:
    """One ``litellm --config CONFIG`` process, its output in ``folder / "proxy.log"``."""

    def __init__(self, config: Path, folder: Path, env: dict[str, str]) -> None:
        executable = _executable()
        assert executable is not None, unavailable()
        port = free_port()
        self.folder = folder
        self.base = f"http://127.0.0.1:{port}"
        command = [executable, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
        with (folder / "proxy.log").open("w") as output:
            self.process = subprocess.Popen(
                command,
                cwd=folder,
                stdout=output,
                stderr=subprocess.STDOUT,
                env={
                    **os.environ,
                    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                    "NO_DOCS": "True",
                    **env,
                },
            )

    def wait_ready(self, seconds: float = STARTUP_SECONDS) -> None:
        """Until ``/health/liveliness`` answers; fails the test with the log's tail otherwise."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                urllib.request.urlopen(self.base + "/health/liveliness", timeout=1).read()
                return
            except (urllib.error.URLError, OSError):
                if self.process.poll() is not None or time.monotonic() > deadline:
                    tail = (self.folder / "proxy.log").read_text()[-3000:]
                    pytest.fail(f"the LiteLLM Proxy did not start:\n{tail}")
                time.sleep(0.2)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


EXAMPLE_CONFIG = Path(__file__).resolve().parents[2] / "examples" / "litellm_proxy" / "config.yaml"


@contextlib.contextmanager
def example_proxy(server: Any, folder: Path) -> Iterator[str]:
    """The base URL of a proxy running the example config in front of ``server`` (a
    :class:`toolmend.testing.StrictProviderServer`); skips where the proxy cannot run."""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    running = Proxy(
        EXAMPLE_CONFIG,
        folder,
        {
            # the example config reads its endpoints and keys from here
            "TOOLMEND_DEEPSEEK_BASE": server.openai_base_url,
            "TOOLMEND_UNREACHABLE_BASE": f"http://127.0.0.1:{free_port()}/v1",
            "TOOLMEND_ANTHROPIC_BASE": server.base_url,
            "DEEPSEEK_API_KEY": "t",
            "ANTHROPIC_API_KEY": "t",
        },
    )
    try:
        running.wait_ready()
        yield running.base
    finally:
        running.stop()


def post(base: str, body: dict[str, Any], timeout: float = 120) -> tuple[int, dict[str, str], str]:
    """POST ``body`` to the proxy's ``/v1/chat/completions`` with the example master key: the
    status, the headers (names lower-cased) and the body."""
    request = urllib.request.Request(
        base + "/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer sk-toolmend"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            headers = {k.lower(): v for k, v in reply.headers.items()}
            return reply.status, headers, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read().decode()
