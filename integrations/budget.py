"""What one request may cost a hook, and where its repair runs: never on the event loop.

toolmend's main home is a shared process (a LiteLLM Proxy, an agent server) where one event
loop serves every client. Two limits keep one request from holding it:

- **The size cap** (:attr:`Budget.max_items`, ``TOOLMEND_MAX_ITEMS``, default 100,000): before
  the loop guard and the repair, :func:`toolmend.integrations.hooks.mend` counts the history's
  items (:func:`size_of`: each message, each tool call, each content block or part). Past the
  cap the request goes out as it was sent, with one WARNING on logger ``toolmend`` and a
  ``failed_open`` report whose reason is ``size_cap``. Deterministic: the same history is always
  over or under it. The default is far above real histories (a long agent run is a few thousand
  items). A history the one-pass check (:mod:`toolmend._fastpath`, linear) vouches for needs no
  repair and is not counted.
- **Off the loop, with a wall-clock budget** (:func:`run`): an async hook hands its repair to
  :func:`run`. A history of :attr:`Budget.offload_items` items or more
  (``TOOLMEND_OFFLOAD_ITEMS``, default 500) is repaired on a small shared thread pool while the
  loop serves other clients; a smaller one inline: its repair takes a few milliseconds at most,
  and a thread would not free the loop sooner (a running repair holds the GIL until the
  interpreter's switch interval, 5 ms, hands it over) while the hop adds its own cost
  (``benchmarks/bench_offload.py``; the figures are in docs/hooks.md). The awaiting coroutine
  waits at most :attr:`Budget.seconds` (``TOOLMEND_BUDGET_SECONDS``, default 2.0): past it the
  request goes out as sent, with one WARNING and a ``failed_open`` report whose reason is
  ``time_budget``; the thread's result is discarded (it writes no line and reports nothing).

A bad environment value is logged once and the default used. A hook built with its own
:class:`Budget` (``ToolMend(budget=...)``, :class:`~toolmend.integrations.hooks.HookOptions`)
ignores the environment.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import queue
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from toolmend import _escape as escape

__all__ = ["Budget", "abandoned", "current", "offloads", "run", "size_of"]

logger = logging.getLogger("toolmend")

T = TypeVar("T")

MAX_ITEMS: Final = 100_000
"""The default size cap, in items (:func:`size_of`)."""
OFFLOAD_ITEMS: Final = 500
"""The default size from which an async hook repairs off the event loop."""
SECONDS: Final = 2.0
"""The default wall-clock budget of a repair off the loop, in seconds."""
WORKERS: Final = 4
"""Threads in the shared pool: a repair holds the GIL while it runs, so more threads would not
repair faster; a few keep one slow request from queueing every other behind it."""

_ENV = ("TOOLMEND_MAX_ITEMS", "TOOLMEND_OFFLOAD_ITEMS", "TOOLMEND_BUDGET_SECONDS")


@dataclass(frozen=True)
class Budget:
    """The limits a hook holds one request to (see the module docstring)."""

    max_items: int = MAX_ITEMS
    """Past this many items (:func:`size_of`) the history goes out as sent, unrepaired."""
    offload_items: int = OFFLOAD_ITEMS
    """From this many items an async hook repairs on a worker thread, not on the loop."""
    seconds: float = SECONDS
    """How long an async hook waits for a repair off the loop before it sends the original."""

    def __post_init__(self) -> None:
        if self.max_items < 1 or self.offload_items < 0 or not self.seconds > 0:
            raise ValueError(
                "Budget needs max_items >= 1, offload_items >= 0 and seconds > 0, got "
                f"{self.max_items!r}, {self.offload_items!r}, {self.seconds!r}"
            )


_cached: tuple[tuple[str | None, ...], Budget] = ((None, None, None), Budget())
_warned: set[str] = set()


def current() -> Budget:
    """The budget from the environment (``TOOLMEND_MAX_ITEMS``, ``TOOLMEND_OFFLOAD_ITEMS``,
    ``TOOLMEND_BUDGET_SECONDS``), read on each call (three lookups; parsed again only when one
    changed). A value that is not a positive number is logged once and its default used."""
    global _cached
    key = tuple(os.environ.get(name) for name in _ENV)
    if key == _cached[0]:
        return _cached[1]
    values: dict[str, Any] = {}
    for name, field, kind in zip(
        _ENV, ("max_items", "offload_items", "seconds"), (int, int, float), strict=True
    ):
        text = os.environ.get(name)
        if text is None:
            continue
        try:
            value = kind(text)
            if not value > 0 and not (field == "offload_items" and value == 0):
                raise ValueError(text)
            values[field] = value
        except ValueError:
            if name not in _warned:
                _warned.add(name)
                logger.warning(
                    "toolmend ignores %s: not a positive number; using the default", name
                )
    budget = Budget(**values)
    _cached = (key, budget)
    return budget


def size_of(messages: Sequence[Any], *, stop: int | None = None) -> int:
    """How many items ``messages`` holds: each message, plus each tool call and each content
    block or part of a message (``tool_calls``, ``content``, ``parts``, as a key or an
    attribute). One pass, no copy: what the repair's cost grows with, counted before it runs;
    with ``stop``, the count stops as soon as it reaches ``stop``. Anything but a list or a
    tuple (a lone Gemini content, a value the repair will refuse) is one item."""
    if not isinstance(messages, list | tuple):
        return 1
    total = len(messages)
    limit = stop if stop is not None else sys.maxsize
    for message in messages:
        if total >= limit:
            break
        if message.__class__ is dict:  # most messages: three lookups, no call
            get = message.get
            field = get("content")
            if field.__class__ in _SEQUENCES:
                total += len(field)
            field = get("tool_calls")
            if field.__class__ in _SEQUENCES:
                total += len(field)
            field = get("parts")
            if field.__class__ in _SEQUENCES:
                total += len(field)
            continue
        for name in _FIELDS:
            field = getattr(message, name, None)
            if isinstance(field, list | tuple):
                total += len(field)
    return total


_SEQUENCES: Final = frozenset({list, tuple})
_FIELDS: Final = ("content", "tool_calls", "parts")


_gave_up: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar(
    "toolmend_gave_up", default=None
)


class _Pool(Executor):
    """:data:`WORKERS` daemon threads named ``toolmend_N`` taking jobs in order.

    Not a ``ThreadPoolExecutor``: its threads are joined when the interpreter exits, so a
    repair abandoned at its budget would hold a proxy's shutdown until it ended. A job
    cancelled before it starts never runs. :meth:`shutdown` lets the running jobs end (and
    waits for them when asked); the tests use it."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]]
        self._jobs = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._work, name=f"toolmend_{n}", daemon=True)
            for n in range(WORKERS)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        self._jobs.put((future, lambda *a: fn(*a, **kwargs), args))
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        for _ in self._threads:
            self._jobs.put(_STOP)
        if wait:
            for thread in self._threads:
                thread.join()

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is _STOP:
                return
            future, fn, args = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args)
            except BaseException as error:
                future.set_exception(error)
            else:
                future.set_result(result)


_STOP: Any = (None, None, ())
_pool: _Pool | None = None
_pool_lock = threading.Lock()


def _forget_pool() -> None:
    """In a forked child: the parent's pool has no threads here (a fork copies only the thread
    that forked), and its lock may have been held by one that is gone. A gunicorn or uvicorn
    worker forks after the app was imported, maybe warmed up: the child starts its own pool on
    its first repair off the loop, instead of queueing every one to threads that never run."""
    global _pool, _pool_lock
    _pool = None
    _pool_lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # not on Windows, which does not fork
    os.register_at_fork(after_in_child=_forget_pool)


def abandoned() -> bool:
    """Whether the coroutine this repair runs for stopped waiting (:func:`run`): its result
    will be discarded, so :func:`~toolmend.integrations.hooks.mend` writes no line and reports
    nothing for it."""
    event = _gave_up.get()
    return event is not None and event.is_set()


def _executor() -> _Pool:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = _Pool()
        return _pool


def offloads(messages: Sequence[Any], budget: Budget | None = None) -> bool:
    """Whether :func:`run` would repair ``messages`` on a worker thread: for a hook that must
    decide before it has a coroutine (a sync entry point that returns one when it may)."""
    limits = budget or current()
    if isinstance(messages, list | tuple) and len(messages) >= limits.offload_items:
        return len(messages) <= limits.max_items  # no walk: the count is at least the length
    try:
        return size_of(messages, stop=limits.offload_items) >= limits.offload_items
    except Exception:  # a message that cannot be read: the repair, inline, fails open on it
        return False


async def run(
    messages: Sequence[Any],
    work: Callable[[], T],
    give_up: Callable[[], T],
    *,
    source: str,
    budget: Budget | None = None,
) -> T:
    """``work()`` (the repair of ``messages``), run so that the event loop is never held.

    Below :attr:`Budget.offload_items` items (or past :attr:`Budget.max_items`, which
    :func:`~toolmend.integrations.hooks.mend` turns away at once) it runs inline. Otherwise it
    runs on the shared pool, in a copy of the caller's context (the current span stays
    current), while this coroutine waits at most :attr:`Budget.seconds`; past that it logs one
    WARNING naming ``source`` and returns ``give_up()`` (the hook's "send the original"), and the
    thread's result is discarded. What ``work`` raises is raised here."""
    limits = budget or current()
    if not offloads(messages, limits):  # past max_items by its length alone: mend says no
        return work()
    gave_up = threading.Event()
    context = contextvars.copy_context()
    context.run(_gave_up.set, gave_up)
    future = asyncio.get_running_loop().run_in_executor(_executor(), context.run, work)
    try:
        return await asyncio.wait_for(asyncio.shield(future), limits.seconds)
    except asyncio.TimeoutError as timeout:  # TimeoutError itself from 3.11 on
        if future.done() and not future.cancelled() and future.exception() is timeout:
            raise  # the work's own TimeoutError, not the budget's
        gave_up.set()
        future.cancel()  # a repair still queued never starts
        try:
            items = size_of(messages)
        except Exception:  # a message it cannot read: the original goes out all the same
            items = len(messages)
        logger.warning(
            "toolmend gave up on %s after its %.3g s budget (%d items); the original was sent",
            escape.log_source(source),
            limits.seconds,
            items,
        )
        return give_up()
    finally:
        if not future.done():  # the caller was cancelled: nobody reads the result
            gave_up.set()
            future.cancel()
