"""Closing the event loops the tests keep across calls the way ``asyncio.run`` closes its own.

LiteLLM starts a logging worker task on the loop of its first async call and moves to a new
loop when a later call runs on one, leaving the old task waiting forever. A task still pending
when its loop is closed is destroyed whenever the garbage collector reaches it, in the middle
of whatever test runs then; closing its coroutine raises ``Event loop is closed``, and pytest
formats that traceback, which on Python 3.11 calls ``ast.parse``. Inside another ``ast.parse``
(``inspect.getsource``) that nested call breaks the outer one with ``SystemError: AST constructor
recursion depth mismatch`` (reproduced outside pytest: a finalizer formatting a traceback during
``ast.parse`` raises it every time; the error reports of CPython gh-106905 and pytest #10763 are
the same message). One such run failed CI on an unrelated test."""

from __future__ import annotations

import asyncio

__all__ = ["close_loop"]


def close_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel the tasks still pending on ``loop``, let them finish, then close it."""
    if loop.is_closed():
        return
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()
