"""``toolmend serve``: the strict provider server from a shell, until Ctrl-C.

``toolmend serve [--port N] [--provider P]`` (also ``python -m toolmend.testing``) starts a
:class:`~toolmend.testing.StrictProviderServer` on 127.0.0.1, prints the base URL each SDK takes
(as environment variables where the SDK reads one, so a line can be pasted in front of a
command), and serves until Ctrl-C or SIGTERM, which stop it and exit 0. An app that reads
``OPENAI_BASE_URL`` from its environment (``examples/legacy_app.py``) then runs against it
unchanged. The server judges each request's history with toolmend's profile of the provider it
emulates and answers ``OK`` to every history the provider accepts; nothing is scripted.

Exit codes: 0 when stopped by Ctrl-C or SIGTERM, 2 for a bad argument (an unknown provider, a
port that cannot be bound).
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from types import FrameType
from typing import TextIO

from .._report import UnknownNameError
from ..profiles import get_profile, primary_names
from .server import StrictProviderServer

__all__ = ["add_arguments", "base_urls", "main", "run"]

EXIT_CODES = "exit codes: 0 stopped by Ctrl-C (or SIGTERM), 2 bad argument or port in use"


def base_urls(server: StrictProviderServer) -> list[tuple[str, str, str]]:
    """``(client, setting, value)`` for each SDK, as ``docs/testing-server.md`` lists them:
    the environment variable the SDK reads where it reads one, else the argument to pass."""
    root = server.base_url
    return [
        (
            "openai, and OpenAI-compatible clients (DeepSeek, Mistral, Groq)",
            "OPENAI_BASE_URL",
            server.openai_base_url,
        ),
        ("anthropic", "ANTHROPIC_BASE_URL", server.anthropic_base_url),
        ("google-genai", "GOOGLE_GEMINI_BASE_URL", server.gemini_base_url),
        ("LiteLLM, an OpenAI-compatible model", "api_base", server.openai_base_url),
        ("LiteLLM, a gemini/ model", "api_base", root + "/v1beta"),
        ("LiteLLM, a bedrock/converse/ model", "api_base", root),
    ]


def run(
    *,
    port: int = 0,
    provider: str | None = None,
    out: TextIO | None = None,
    stop: threading.Event | None = None,
) -> int:
    """Serve until ``stop`` is set, or until Ctrl-C (KeyboardInterrupt) or SIGTERM; 0 then.

    Prints the addresses to ``out`` (standard output) first, flushed, so a script reading it
    line by line can start its client at once. Raises ``OSError`` when the port cannot be bound
    and :class:`toolmend.UnknownNameError` for an unknown provider."""
    stream = sys.stdout if out is None else out
    done = threading.Event() if stop is None else stop
    server = StrictProviderServer(provider=provider, port=port).start()
    restore = _on_signals(done)
    try:
        judged = f"as {server.provider}" if server.provider else "each route as its own provider"
        print(f"toolmend strict provider server on {server.base_url} ({judged})", file=stream)
        for client, setting, value in base_urls(server):
            print(f"  {setting}={value}    # {client}", file=stream)
        print("Any API key will do. Ctrl-C stops it.", file=stream, flush=True)
        try:
            while not done.wait(0.5):  # a short wait: Ctrl-C lands between waits on any platform
                pass
        except KeyboardInterrupt:
            pass
        # a reader that went away (``| head -1``) cannot read it: the stop is clean all the same
        with contextlib.suppress(OSError):
            print("toolmend strict provider server stopped", file=stream, flush=True)
    finally:
        server.stop()
        restore()
    return 0


def _on_signals(done: threading.Event) -> Callable[[], None]:
    """Make SIGTERM stop the server as Ctrl-C does, and Ctrl-C raise KeyboardInterrupt even
    when the shell that started the process ignores SIGINT (a background job); returns what
    puts the previous handlers back. Main thread only: elsewhere a handler cannot be set, and
    the caller's ``stop`` event is the way to stop."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, frame: FrameType | None) -> None:
        done.set()

    previous = {
        signal.SIGTERM: signal.signal(signal.SIGTERM, handler),
        signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler),
    }

    def restore() -> None:
        for signum, old in previous.items():
            signal.signal(signum, old if old is not None else signal.SIG_DFL)

    return restore


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``toolmend serve`` and ``python -m toolmend.testing``."""
    parser.add_argument(
        "--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)"
    )
    parser.add_argument(
        "--provider",
        "-p",
        default=None,
        help="emulate this provider on every route (default: each route its own): "
        + ", ".join(primary_names()),
    )


def main(argv: Sequence[str] | None = None, *, prog: str = "python -m toolmend.testing") -> int:
    """``python -m toolmend.testing [--port N] [--provider P]``."""
    summary = "run the strict provider server on 127.0.0.1 until Ctrl-C"
    parser = argparse.ArgumentParser(prog=prog, description=summary, epilog=EXIT_CODES)
    add_arguments(parser)
    args = parser.parse_args(argv)
    return serve(args.port, args.provider)


def serve(port: int, provider: str | None) -> int:
    """:func:`run` with its errors as one line on standard error and exit 2."""
    try:
        if provider is not None:
            get_profile(provider)
        return run(port=port, provider=provider)
    except UnknownNameError as error:
        print(f"toolmend serve: {error}", file=sys.stderr)
    except OSError as error:
        print(f"toolmend serve: port {port}: {error.strerror or error}", file=sys.stderr)
    except OverflowError as error:  # a port outside 0-65535
        print(f"toolmend serve: port {port}: {error}", file=sys.stderr)
    return 2
