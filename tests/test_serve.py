"""``toolmend serve`` and ``python -m toolmend.testing`` (issue 33): the strict provider server
from a shell, its base URLs printed, stopped by Ctrl-C (exit 0, no traceback); and
``examples/legacy_app.py`` run as its docstring says, against the URL it prints."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import openai
import pytest

from toolmend.testing.serve import serve

from support.litellm_proxy import free_port

ROOT = Path(__file__).resolve().parent.parent
LEGACY_APP = ROOT / "examples" / "legacy_app.py"

ORPHAN = [
    {"role": "user", "content": "hi"},
    {"role": "tool", "tool_call_id": "call_1", "content": "21 C"},
]


def _script(name: str) -> list[str]:
    found = shutil.which(name, path=str(Path(sys.executable).parent))
    assert found, f"{name} is not installed next to this Python"
    return [found]


@contextmanager
def serving(command: list[str]) -> Iterator[tuple[subprocess.Popen[str], dict[str, str]]]:
    """The server process, once it printed its addresses (read line by line until the last),
    and those addresses as ``{setting: url}`` (the first of each setting)."""
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy()
    )
    try:
        assert process.stdout is not None
        urls: dict[str, str] = {}
        for line in process.stdout:
            if "=" in line and line.startswith("  "):
                setting, _, rest = line.strip().partition("=")
                urls.setdefault(setting, rest.split()[0])
            if "Ctrl-C stops it" in line:
                break
        else:
            pytest.fail(f"no addresses printed: {process.stderr.read() if process.stderr else ''}")
        yield process, urls
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _stopped(process: subprocess.Popen[str], how: signal.Signals) -> tuple[int, str, str]:
    process.send_signal(how)
    out, err = process.communicate(timeout=60)
    return process.returncode, out, err


@pytest.mark.slow
def test_serve_prints_the_urls_judges_requests_and_stops_on_ctrl_c() -> None:
    port = free_port()
    with serving([*_script("toolmend"), "serve", "--port", str(port), "-p", "deepseek"]) as (
        process,
        urls,
    ):
        assert urls["OPENAI_BASE_URL"] == f"http://127.0.0.1:{port}/v1"
        assert urls["ANTHROPIC_BASE_URL"] == f"http://127.0.0.1:{port}"
        assert urls["GOOGLE_GEMINI_BASE_URL"] == f"http://127.0.0.1:{port}"
        client = openai.OpenAI(api_key="test", base_url=urls["OPENAI_BASE_URL"], max_retries=0)
        with pytest.raises(openai.BadRequestError, match="must be a response to a preceding"):
            client.chat.completions.create(model="deepseek-chat", messages=ORPHAN)  # type: ignore[arg-type]
        reply = client.chat.completions.create(
            model="deepseek-chat",
            messages=[{"role": "user", "content": "hi"}],
        )
        assert reply.choices[0].message.content == "OK"
        code, out, err = _stopped(process, signal.SIGINT)
    assert code == 0, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert out.strip().endswith("toolmend strict provider server stopped")
    with socket.socket() as probe:  # nothing listens on the port any more
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past TIME_WAIT
        probe.bind(("127.0.0.1", port))


@pytest.mark.slow
def test_python_m_toolmend_testing_is_the_same_and_sigterm_stops_it() -> None:
    with serving([sys.executable, "-m", "toolmend.testing"]) as (process, urls):
        assert urls["OPENAI_BASE_URL"].startswith("http://127.0.0.1:")
        code, _, err = _stopped(process, signal.SIGTERM)
    assert code == 0 and "Traceback" not in err


@pytest.mark.slow
def test_the_legacy_app_runs_against_serve_as_its_docstring_says() -> None:
    """``OPENAI_BASE_URL=<what serve prints> toolmend-run python examples/legacy_app.py``."""
    with serving([*_script("toolmend"), "serve"]) as (process, urls):
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TOOLMEND_PATCH")}
        env["OPENAI_BASE_URL"] = urls["OPENAI_BASE_URL"]
        plain = subprocess.run(
            [sys.executable, str(LEGACY_APP)], env=env, capture_output=True, text=True, timeout=120
        )
        mended = subprocess.run(
            [*_script("toolmend-run"), sys.executable, str(LEGACY_APP)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        code, _, err = _stopped(process, signal.SIGINT)
    assert (plain.returncode, plain.stdout.split(":")[0]) == (1, "rejected"), plain.stderr
    assert (mended.returncode, mended.stdout.split(":")[0]) == (0, "accepted"), mended.stderr
    assert code == 0, err
    assert "toolmend serve" in LEGACY_APP.read_text()  # the docstring names the command


def test_a_bad_provider_or_a_taken_port_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert serve(0, "no-such-provider") == 2
    err = capsys.readouterr().err
    assert err.startswith("toolmend serve: Unknown provider 'no-such-provider'")
    assert len(err.strip().splitlines()) == 1
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert serve(port, None) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"toolmend serve: port {port}: ") and len(err.strip().splitlines()) == 1


class _ReaderGone:
    """Standard output whose reader has gone (``toolmend serve | head -1``, a supervisor that
    closed the pipe): every write after the first lines fails with EPIPE."""

    def __init__(self, lines: int) -> None:
        self.left = lines

    def write(self, text: str) -> int:
        if self.left <= 0:
            raise BrokenPipeError(32, "Broken pipe")
        self.left -= text.count("\n")
        return len(text)

    def flush(self) -> None:
        pass


def test_a_reader_gone_at_the_stop_line_is_still_a_clean_stop() -> None:
    """Stopped (here: its ``stop`` event, as by Ctrl-C or SIGTERM) after its reader went away:
    the server stops and the exit is 0, as docs/cli.md says, not a ``port N: Broken pipe``
    failure (the last line cannot reach anyone)."""
    import threading

    from toolmend.testing.serve import run

    stop = threading.Event()
    stop.set()
    assert run(port=0, out=_ReaderGone(lines=8), stop=stop) == 0  # type: ignore[arg-type]
