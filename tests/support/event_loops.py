"""Closing the event loops the tests keep across calls the way ``asyncio.run`` closes its own.

LiteLLM starts a logging worker task on the loop of its first async call and moves to a new
loop when a later call runs on one, leaving the old task waiting forever. A task still pending
when its loop is closed is destroyed whenever the garbage collector reaches it, in the middle
of whatever test runs then; closing its coroutine raises ``Event loop is closed``, and pytest
formats that traceback, which on Python 3.11 calls ``ast.parse``. Inside another ``ast.parse``
(``inspect.getsource``) that nested call breaks the outer one with ``SystemError: AST constructor
recursion depth mismatch`` (reproduced outside pytest: a finalizer formatting a traceback during
``ast.parse`` raises it every time; the error reports of CPython gh-106905 and pytest #10763 are
the same message). One such run failed CI on an unrelated test.

LiteLLM's worker also carries the logging calls still queued on the old loop onto the new one,
where they reach the callbacks of whatever test runs then: a test that collects logging
payloads got another module's Anthropic request (seen once, in a run of the files in another
order). :func:`finish_litellm_logging` runs them on their own module's loop."""

from __future__ import annotations

import asyncio
import contextlib
import sys

__all__ = ["close_loop", "finish_litellm_logging"]

FLUSH_SECONDS = 120
"""At most this long for the logging calls left: they take milliseconds, so only a stuck one
comes near it; the loop is then closed as before."""


def close_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel the tasks still pending on ``loop``, let them finish, then close it."""
    if loop.is_closed():
        return
    finish_litellm_logging(loop)
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()


def finish_litellm_logging(loop: asyncio.AbstractEventLoop) -> None:
    """Run on ``loop`` every logging call LiteLLM's worker still holds, those carried over from
    earlier loops included (each under the worker's own per-call timeout, the whole under
    :data:`FLUSH_SECONDS`); nothing where LiteLLM was never imported."""
    if "litellm" not in sys.modules:
        return
    from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER

    with contextlib.suppress(asyncio.TimeoutError):  # a bound for a hang, not a timing
        loop.run_until_complete(asyncio.wait_for(GLOBAL_LOGGING_WORKER.flush(), FLUSH_SECONDS))
