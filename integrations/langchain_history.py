"""LangChain: a chat message history that never stores a broken tool chain.

Seed 000: a conversation memory let a dangling tool result (or an assistant message that had
lost its ``tool_calls``) into the stored history, and every later request failed with HTTP 400
until the history was cleared. :class:`ToolMendHistory` wraps any ``BaseChatMessageHistory``
(in memory, SQL, Redis, ...) and is one itself, so ``RunnableWithMessageHistory`` and existing
code take it unchanged. What may be stored is decided by :mod:`toolmend._appending` (the same
rule for every format); this module holds the store: its locks, its shared index, its reads
and its write-backs.

*Writes* all go through one validated path (``add_message``, ``add_messages``,
``aadd_messages``, ``add_user_message``, ``add_ai_message``,
:meth:`~ToolMendHistory.add_tool_call_chain`, and every writer a subclass overrides or adds:
see :meth:`~ToolMendHistory.__init_subclass__`). A ``ToolMessage`` is stored when
its call is in the stored history and still unanswered, wherever other messages landed
since (with several writers on one session, another writer's messages often come between
a call and its results; reads move the result next to its call), once per call, with the
call's name if it states one. A ``ToolMessage`` whose call the history lacks, or has
answered already, is not stored; it is kept in :attr:`~ToolMendHistory.rejected` with the
reason, and logged (ids only). Every other message is stored: user text, and assistant
messages with or without calls (calls may wait for their results while tools run, and the
final answer after the results is never refused).
:meth:`~ToolMendHistory.add_tool_call_chain` writes an ``AIMessage`` and its results all
or nothing, after checking them.

*Reads* (``messages``, ``aget_messages``) return the stored history repaired for the
provider, for stores poisoned before the wrapper existed or by another process sharing the
store. The live frontier (the last ``AIMessage`` whose calls are still waiting, followed
only by results for them) is left waiting, because the next input may carry those results;
every other call without a result is answered with toolmend's placeholder. That is
``Policy(frontier="keep")``, the default here; pass ``policy=toolmend.Policy()`` (frontier
``"answer"``) for an app that never feeds tool results in as input. ``write_back=True``
writes a read's repair into the store; messages a write-back drops go to ``rejected``. A
``window=Window(...)`` trims what a read returns through :func:`toolmend.trim`, so a group
of calls and results is never cut in half; writes are validated whatever the window.

*Several writers on one session* (threads, asyncio tasks, wrappers, processes): nothing is
lost, duplicated or refused that the rules above store. Writes only append. The wrappers
of one store object in a process share an index of its calls and results, and one lock (an
``asyncio.Lock`` per event loop for a store that only works async, such as
``SQLChatMessageHistory`` on an async engine): a batch, a chain, and a read with its
write-back each run while no other writer of that store in the process does. A result that
finds no open call in the index is judged again against the store, read at that moment, so
a call another process stored counts. (Two processes storing a result for the same call
at the same moment can both succeed; the read-side repair drops the second.)

A write-back is a compare-and-swap: it replaces the store's history only if the store still
holds exactly what the read repaired, and otherwise writes nothing (logged at INFO; the next
read tries again). Refusing when the store moved was chosen over merging (a repair computed on a
history that has changed is not a repair of the new one) and over writing only the difference
(LangChain stores can only append or clear). The swap is one atomic step of the store itself
(:mod:`.langchain_stores`): a transaction on ``SQLChatMessageHistory`` over SQLite (``BEGIN
IMMEDIATE``) or PostgreSQL (a ``LOCK TABLE`` that shuts out every other writer of the table
until it commits), the same on langchain-postgres's ``PostgresChatMessageHistory``,
``WATCH``/``MULTI``/``EXEC`` on langchain-community's ``RedisChatMessageHistory``, one
assignment on ``InMemoryChatMessageHistory``. So no writer, in this process or another, on this
host or another, through a wrapper or not (in memory: through a wrapper, whose lock the swap
holds), can write in between, and a swap that fails commits nothing: the read logs the error and
still returns the repaired history. On any other store ``write_back=True`` raises ``ValueError``
when the wrapper is built, unless ``write_back="unguarded"`` opts into compare, ``clear()``,
``add_messages()`` under the lock above (safe only when every writer of the session goes through
wrappers of that one store object in this process; a refill that fails puts the history read
back). A write-back never stores a result the repair made up (toolmend's placeholders): a call
another writer stored may still be waiting for the result that writer is about to store, and a
placeholder would turn it into a duplicate. Reads answer such calls again each time, with the
same text, so what is sent is the same.

Every read and write goes through toolmend's fail-open path: a toolmend failure is logged and
the original history goes out (a read returns what the store holds, a write stores the batch as
given). Items that are not LangChain messages are stored as given, with one WARNING naming
their positions. Nothing here adds a deprecation warning of its own (LangChain marks
``BaseChatMessageHistory`` deprecated, but warns only for its own classes, not subclasses).

Import it from :mod:`toolmend.integrations.langchain`; it needs ``pip install
'toolmend[langchain]'`` (``langchain-core``): the wrapper subclasses LangChain's own base class,
so LangChain is imported when this module is.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import inspect
import logging
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from toolmend import _appending as appending
from toolmend import _escape as escape
from toolmend._appending import AppendIndex
from toolmend._policy import Policy
from toolmend._report import Change, Problem, ToolChainError, TrimError
from toolmend._trim import trim

from . import langchain_stores as stores
from . import telemetry
from .hooks import HookOptions, check_names, hook_policy, mend

try:
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.messages import BaseMessage
    from langchain_core.runnables.config import run_in_executor
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "toolmend.integrations.langchain needs LangChain: pip install 'toolmend[langchain]'"
    ) from error

__all__ = ["Rejected", "ToolMendHistory", "Window"]

logger = logging.getLogger("toolmend")

FORMAT = "langchain"

_TOOL_TYPES = frozenset({"tool", "ToolMessageChunk"})


@dataclass(frozen=True)
class Window:
    """What a read of :class:`ToolMendHistory` returns at most (see :func:`toolmend.trim`).

    ``keep_first`` messages are always kept (a system prompt, the task); then the newest whole
    groups that fit ``max_messages`` and ``max_tokens`` (counted by ``token_counter``: a
    callable ``(message) -> int``, ``"tiktoken"``, ``"litellm"``, or toolmend's estimate).
    """

    max_messages: int | None = None
    max_tokens: int | None = None
    keep_first: int = 0
    token_counter: Callable[[Any], int] | str | None = None


@dataclass(frozen=True)
class Rejected:
    """A message the wrapper did not store, and why (``reason`` is a code, safe to log).

    Reasons: ``"no_open_call"`` (no call with its id in the stored history),
    ``"duplicate_result"`` (its call already has a result), ``"name_mismatch"`` (it names
    another function than its call), ``"dropped_on_write_back"`` (a write-back repair dropped
    it from the store: an orphan or a duplicate stored before the wrapper).
    """

    message: BaseMessage
    reason: str


_NEEDS_READ = object()
"""What :meth:`ToolMendHistory._screen` returns when it must see the store first."""


class _Guard(threading.local):
    depth = 0


@dataclass
class _StoreLocks:
    """What every wrapper of one store object shares in this process: a thread lock, an
    ``asyncio.Lock`` per event loop for a store that only works async, and the store's index
    (so a result another wrapper stored counts at once). Store objects that share one
    connection (langchain-postgres: a psycopg connection runs one transaction at a time) share
    the thread lock and the ``asyncio`` locks too, so a write-back's transaction never has
    another store's write and commit run inside it."""

    thread: threading.RLock = field(default_factory=threading.RLock)
    loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = field(
        default_factory=weakref.WeakKeyDictionary
    )
    wrappers: int = 0
    index: AppendIndex | None = None
    """The store's calls and results as its wrappers last saw them (None: read the store)."""
    connection: int | None = None
    """``id`` of the connection whose lock :attr:`thread` is (see :data:`_CONNECTION_LOCKS`)."""


_STORE_LOCKS: dict[int, _StoreLocks] = {}
"""By ``id(store)``. Each wrapper holds its store, so the id cannot be reused while a wrapper
of it lives; once the last wrapper of a store is collected, the next :func:`_locks_for` removes the
entry (stores are often pydantic models, which take no weak reference, hence ids and a
count)."""
_CONNECTION_LOCKS: dict[
    int,
    tuple[threading.RLock, weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock], int],
] = {}
"""By ``id(connection)``: the thread lock and the per-loop ``asyncio`` locks of the stores
sharing that connection, and how many :class:`_StoreLocks` use them (each holds a store, which
holds the connection)."""
_STORE_LOCKS_LOCK = threading.Lock()
_COLLECTED: collections.deque[int] = collections.deque()
"""Keys of the wrappers collected since the registries were last tidied. A wrapper's finalizer
runs inside whatever allocation set off a garbage collection, in any thread, possibly one
that holds :data:`_STORE_LOCKS_LOCK` at that moment (:func:`_locks_for` and
``_async_lock`` allocate under it): a finalizer that took the lock would deadlock that thread
and every later wrapper. So the finalizer only appends here (``deque.append`` is atomic and takes
no lock) and :func:`_locks_for` releases them under the lock, before it looks a store up: a
collected store's id, free for reuse, is gone from the registries before any new store is
looked up by it."""


def _locks_for(store: Any, owner: Any) -> _StoreLocks:
    """The shared locks of ``store``, held until ``owner`` (a wrapper) is collected."""
    key = id(store)
    with _STORE_LOCKS_LOCK:
        _release_collected()
        locks = _STORE_LOCKS.get(key)
        if locks is None:
            connection = stores.shared_connection(store)
            if connection is None:
                locks = _StoreLocks()
            else:
                lock, loops, users = _CONNECTION_LOCKS.get(
                    id(connection), (threading.RLock(), weakref.WeakKeyDictionary(), 0)
                )
                _CONNECTION_LOCKS[id(connection)] = (lock, loops, users + 1)
                locks = _StoreLocks(thread=lock, loops=loops, connection=id(connection))
            _STORE_LOCKS[key] = locks
        locks.wrappers += 1
    weakref.finalize(owner, _COLLECTED.append, key)
    return locks


def _release_collected() -> None:
    """Drop the collected wrappers' share of the registries (under :data:`_STORE_LOCKS_LOCK`);
    a collection that runs meanwhile only appends, and is released here too or next time."""
    while _COLLECTED:
        locks = _STORE_LOCKS.get(key := _COLLECTED.popleft())
        if locks is None:
            continue
        locks.wrappers -= 1
        if locks.wrappers <= 0:
            del _STORE_LOCKS[key]
            if locks.connection is not None:
                lock, loops, users = _CONNECTION_LOCKS[locks.connection]
                if users <= 1:
                    del _CONNECTION_LOCKS[locks.connection]
                else:
                    _CONNECTION_LOCKS[locks.connection] = (lock, loops, users - 1)


class ToolMendHistory(BaseChatMessageHistory):
    """A ``BaseChatMessageHistory`` that validates every write and repairs every read.

    **Parameters:**

    * **inner** - the store to wrap: any ``BaseChatMessageHistory``.
    * **provider** - *(optional)* the provider the history is sent to (default ``"deepseek"``,
      whose rule seed 000 broke; any toolmend provider name).
    * **window** - *(optional)* a :class:`Window` trimming what reads return.
    * **policy** - *(optional)* a :class:`toolmend.Policy`, or ``"repair"`` (default),
      ``"strict"`` (a write that would be rejected raises :class:`toolmend.ToolChainError` and
      writes nothing; a broken stored history raises on read) or ``"report"`` (store and
      return everything as it is, and log what is wrong).
    * **repair_on_read** - *(optional)* repair what reads return (default True).
    * **write_back** - *(optional)* also write a read's repair into the store (default False),
      only while the store still holds what was read, in one atomic step of the store
      (compare-and-swap; see the module docstring), and never toolmend's placeholder results.
      ``True`` needs a store that can swap atomically (``ValueError`` otherwise, naming them);
      ``"unguarded"`` is the weaker mode for any store (one process, one store object).

    >>> from langchain_core.chat_history import InMemoryChatMessageHistory
    >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    >>> history = ToolMendHistory(InMemoryChatMessageHistory())
    >>> history.add_messages([HumanMessage("Weather?"), ToolMessage("21 C", tool_call_id="c1")])
    >>> [m.type for m in history.messages], [r.reason for r in history.rejected]
    (['human'], ['no_open_call'])
    """

    _WRITERS: ClassVar[tuple[str, ...]] = (
        "add_message",
        "add_messages",
        "aadd_messages",
        "add_user_message",
        "add_ai_message",
        "add_tool_call_chain",
        "aadd_tool_call_chain",
    )

    def __init__(
        self,
        inner: BaseChatMessageHistory,
        provider: str = "deepseek",
        window: Window | None = None,
        policy: Policy | str | None = None,
        repair_on_read: bool = True,
        write_back: bool | str = False,
    ) -> None:
        super().__init__()
        # an unknown provider or policy name fails here, not on every read; a toolmend bug is
        # logged and the wrapper built anyway (its reads and writes fail open)
        check_names(provider=provider, policy=policy, source="ToolMendHistory")
        self.inner = inner
        self.provider = provider
        self.window = window
        self.policy = hook_policy(policy, frontier="keep")
        self.repair_on_read = repair_on_read
        self.write_back = _checked_write_back(inner, write_back)
        self._keep_options = HookOptions(provider=provider, policy=self.policy, on_loop="off")
        self._answer_options = replace(
            self._keep_options, policy=replace(self.policy, frontier="answer")
        )
        self._locks = _locks_for(inner, self)
        self._lock = self._locks.thread
        self._guard = _Guard()
        self._rejected: list[Rejected] = []

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass's own writers still go through the validated path (seed 000: a
        windowed subclass must not bypass its parent). Every writer it defines (the ones
        above, and any method it adds whose name starts with ``add_`` or ``aadd_``) has the
        messages it is given screened first: a message, or a list of messages, as its first
        argument; and the wrapper re-reads the store after it."""
        super().__init_subclass__(**kwargs)
        for name, override in list(cls.__dict__.items()):
            if not (name in cls._WRITERS or name.startswith(("add_", "aadd_"))):
                continue
            if inspect.isfunction(override) and not getattr(override, "_toolmend_guarded", False):
                setattr(cls, name, _guarded(name, override))

    # --- what the wrapper knows -------------------------------------------------------------

    @property
    def rejected(self) -> list[Rejected]:
        """Every message the wrapper did not store, oldest first (a copy)."""
        with self._lock:
            return list(self._rejected)

    @property
    def _index(self) -> AppendIndex | None:
        """The store's index, shared by its wrappers in this process (see :class:`_StoreLocks`);
        set under the lock."""
        return self._locks.index

    @_index.setter
    def _index(self, index: AppendIndex | None) -> None:
        self._locks.index = index

    @property
    def async_only(self) -> bool:
        """Whether the wrapped store works only through its async methods."""
        return stores.is_async_only(self.inner)

    # --- reads --------------------------------------------------------------------------------

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The stored history, repaired for the provider and windowed (see the class)."""
        with self._lock:
            raw = self.inner.messages
            if self.write_back:  # the store as read, to compare with before writing back
                raw = list(raw)
            view, write = self._view(raw)
            if write is not None:
                self._write_back_sync(raw, *write)
            return view

    async def aget_messages(self) -> list[BaseMessage]:
        """``messages``, for async code (the store's own async read when it has only that)."""
        if not self.async_only:
            return await run_in_executor(None, lambda: self.messages)
        async with self._async_lock():
            raw = await self.inner.aget_messages()
            with self._lock:
                view, write = self._view(raw)
            if write is not None:
                await self._write_back_async(raw, *write)
            return view

    def _view(self, raw: list[BaseMessage]) -> tuple[list[BaseMessage], _WriteBack | None]:
        """What a read returns, and what to write back (or None). Fails open: a toolmend error
        is logged and the read returns the store's messages as they are."""
        try:
            return self._repaired_view(raw)
        except ToolChainError:  # the strict policy asked for it
            raise
        except Exception:
            logger.exception("toolmend failed on a LangChain history read; returned as stored")
            telemetry.failed_open("langchain.history", self.provider)
            return raw, None

    def _repaired_view(self, raw: list[BaseMessage]) -> tuple[list[BaseMessage], _WriteBack | None]:
        if not raw:
            return raw, None
        repaired: Any = raw
        changes: tuple[Change, ...] = ()
        if self.repair_on_read:
            waiting = bool(appending.waiting_calls(raw, FORMAT))
            repaired, changes = self._repaired(raw, waiting)
        view = self._windowed(repaired) if self.window is not None else repaired
        if not (changes and self.write_back):
            return view, None
        write = _with_newest_stored(
            raw, _without_placeholders(raw, repaired, self.policy.placeholder), changes
        )
        if write is None:
            return view, None
        return view, (None if stores.same(write, raw) else (write, changes))

    def _repaired(self, raw: list[BaseMessage], waiting: bool) -> tuple[Any, tuple[Change, ...]]:
        """The stored history repaired, a live frontier left waiting (see the class).

        A clean frontier (the last calling message and only its own results) is set aside and
        the rest repaired as a request would be; a messy one is repaired in place under the
        ``frontier="keep"`` policy. With nothing waiting, both policies agree, and the answering
        one lets a valid history through in one pass that builds nothing."""
        start, options = len(raw), self._answer_options
        if waiting and self.policy.frontier == "keep":
            start = appending.frontier_start(raw, FORMAT)
            if start == len(raw):
                options = self._keep_options
        part = raw[:start]
        if not part:
            return raw, ()
        mended = mend(
            part, provider=self.provider, source="langchain.history", options=options, format=FORMAT
        )
        if not mended.changes:
            return raw, ()
        if start == len(raw):
            return mended.messages, tuple(mended.changes)
        return [*mended.messages, *raw[start:]], tuple(mended.changes)

    def _windowed(self, view: Any) -> Any:
        """``view`` trimmed to the window; a live frontier stays waiting.

        :func:`toolmend.trim` answers a waiting call with a placeholder (a trimmed request
        must), so those are taken off again; ``max_messages`` counts them out, and under
        ``max_tokens`` they only make the window a little smaller, never larger."""
        window = self.window
        assert window is not None
        waiting = (
            len(appending.waiting_calls(view, FORMAT)) if self.policy.frontier == "keep" else 0
        )
        max_messages = window.max_messages
        if max_messages is not None and max_messages > 0:
            max_messages += waiting
        try:
            trimmed = trim(
                view,
                max_messages=max_messages,
                max_tokens=window.max_tokens,
                token_counter=window.token_counter,
                keep_first=window.keep_first,
                format=FORMAT,
            )
        except TrimError:
            logger.warning(
                "toolmend: the window of a LangChain history is too small for its newest "
                "group; the whole history was returned",
                exc_info=True,
            )
            return view
        if trimmed is view:
            return view
        if waiting:
            kept = {id(message) for message in view}
            trimmed = list(trimmed)
            while trimmed and id(trimmed[-1]) not in kept:
                trimmed.pop()
            if len(trimmed) == len(view):
                return view
        return trimmed

    def _note_dropped(self, raw: Sequence[BaseMessage], changes: Sequence[Change]) -> None:
        """Messages a write-back removed from the store go to ``rejected``: nothing vanishes."""
        dropped = {
            change.index
            for change in changes
            if change.code in ("dropped_orphan_result", "dropped_duplicate_result")
        }
        for index in sorted(dropped):
            if 0 <= index < len(raw):
                self._rejected.append(Rejected(raw[index], "dropped_on_write_back"))
                logger.warning(
                    "toolmend: write-back dropped stored message %d (%s); kept in .rejected",
                    index,
                    _ids_of(raw[index]),
                )

    def _write_back_sync(
        self,
        raw: list[BaseMessage],
        repaired: list[BaseMessage],
        changes: Sequence[Change],
    ) -> None:
        """Replace the store's ``raw`` with ``repaired``, only if the store still holds exactly
        ``raw``, in one atomic step of the store (:mod:`.langchain_stores`). Fails open: an
        error of the store (the swap wrote nothing) is logged and the read goes on."""
        self._index = None
        try:
            swapped = stores.swap(self.inner, raw, repaired)
            if swapped is None and self.write_back == stores.UNGUARDED:
                swapped = stores.unguarded_swap(self.inner, raw, repaired)
        except Exception:
            self._swap_failed()
            return
        self._wrote_back(bool(swapped), raw, repaired, changes)

    async def _write_back_async(
        self,
        raw: list[BaseMessage],
        repaired: list[BaseMessage],
        changes: Sequence[Change],
    ) -> None:
        with self._lock:
            self._index = None
        try:
            swapped = await stores.aswap(self.inner, raw, repaired)
            if swapped is None and self.write_back == stores.UNGUARDED:
                swapped = await stores.aunguarded_swap(self.inner, raw, repaired)
        except Exception:
            self._swap_failed()
            return
        with self._lock:
            self._wrote_back(bool(swapped), raw, repaired, changes)

    def _swap_failed(self) -> None:
        logger.exception(
            "toolmend could not write the repaired history back (the store is as it was); "
            "the read returned the repaired history"
        )
        telemetry.failed_open("langchain.history", self.provider)

    def _wrote_back(
        self,
        swapped: bool,
        raw: list[BaseMessage],
        repaired: list[BaseMessage],
        changes: Sequence[Change],
    ) -> None:
        if not swapped:
            logger.info(
                "toolmend did not write the repaired history back: another writer changed the "
                "store since it was read; the next read tries again"
            )
            return
        self._note_dropped(raw, changes)
        logger.info("toolmend wrote the repaired history back (%d messages)", len(repaired))

    # --- writes -------------------------------------------------------------------------------

    def add_message(self, message: BaseMessage) -> None:
        """Store one message if its place is valid (see the class)."""
        self._write([message], "add_message")

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Store a batch: each message is judged after the ones before it, and the accepted
        ones are written in one call to the store while no other writer runs."""
        self._write(list(messages), "add_messages")

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """``add_messages``, for async code."""
        if not self.async_only:
            await run_in_executor(None, self.add_messages, list(messages))
            return
        await self._awrite(list(messages), "aadd_messages")

    def add_tool_call_chain(
        self, ai_message: BaseMessage, tool_messages: Sequence[BaseMessage]
    ) -> None:
        """Store an ``AIMessage`` and all its results, or nothing.

        Checks first (:func:`toolmend._appending.check_chain`) that ``ai_message`` is an
        ``AIMessage`` making tool calls (every call it sends, as the LangChain format reads
        them: ``tool_calls``, ``invalid_tool_calls``, ``tool_use`` blocks; each with an id of
        its own), that ``tool_messages`` is not empty and holds only ``ToolMessage``s, and
        that they answer exactly its calls: every id once, no unknown id, the call's name where
        a result states one. A chain that fails raises :class:`toolmend.ToolChainError` naming each
        problem (chain position, code, ids) and writes nothing.
        """
        chain = _checked_chain(ai_message, tool_messages)
        self._write(chain, "add_tool_call_chain")

    async def aadd_tool_call_chain(
        self, ai_message: BaseMessage, tool_messages: Sequence[BaseMessage]
    ) -> None:
        """``add_tool_call_chain``, for async code."""
        chain = _checked_chain(ai_message, tool_messages)
        if not self.async_only:
            await run_in_executor(None, self._write, chain, "aadd_tool_call_chain")
            return
        await self._awrite(chain, "aadd_tool_call_chain")

    def clear(self) -> None:
        """Empty the store (``rejected`` is kept)."""
        with self._lock:
            self.inner.clear()
            self._index = AppendIndex(FORMAT)

    async def aclear(self) -> None:
        """``clear``, for async code."""
        if not self.async_only:
            await run_in_executor(None, self.clear)
            return
        async with self._async_lock():
            await self.inner.aclear()
            with self._lock:
                self._index = AppendIndex(FORMAT)

    def _screen(
        self, batch: list[BaseMessage], source: str, raw: list[BaseMessage] | None = None
    ) -> Any:
        """The messages of ``batch`` to store and the store's index after them; records (or,
        under the strict policy, raises for) the others. Called under the lock.

        Judged against the index the wrapper keeps; a result that finds no open call there is
        judged again against the store itself (read now: another writer, wrapper or process
        may have stored its call), so only a result whose call the store lacks or has answered
        is refused. ``raw`` is the store's history when the caller has just read it; for an
        async-only store, which cannot be read here, :data:`_NEEDS_READ` asks the caller to
        read it and call again. Fails open: a toolmend error is logged and the whole batch is
        stored as given (index unknown)."""
        try:
            fresh = raw is not None or self._index is None
            index = self._index if raw is None and self._index is not None else None
            if index is None:
                if raw is None and self.async_only:
                    return _NEEDS_READ
                index = appending.index_of(self.inner.messages if raw is None else raw, FORMAT)
            verdicts, after = _judged(batch, index)
            if not fresh and any(reason for _, reason in verdicts):
                if self.async_only:
                    return _NEEDS_READ
                verdicts, after = _judged(batch, appending.index_of(self.inner.messages, FORMAT))
            return self._sorted_out(verdicts, source), after
        except ToolChainError:  # the strict policy asked for it
            raise
        except Exception:
            logger.exception("toolmend failed on %s; the messages were stored as given", source)
            return list(batch), None

    def _sorted_out(self, verdicts: list[tuple[BaseMessage, str | None]], source: str) -> Any:
        """The messages to store; the refused ones are logged and recorded (or raised)."""
        mode = self.policy.mode.value
        strays = [str(p) for p, (m, _) in enumerate(verdicts) if not isinstance(m, BaseMessage)]
        if strays:  # not judged: the store gets them as given and decides
            logger.warning(
                "toolmend: %s got items that are not LangChain messages (message %s); "
                "stored as given",
                source,
                ",".join(strays[:10]),
            )
        refused = [(p, m, reason) for p, (m, reason) in enumerate(verdicts) if reason]
        if refused and mode == "strict":
            raise ToolChainError(
                f"{source} refused {len(refused)} tool message(s); nothing was written: "
                + "; ".join(f"message {p} ({_ids_of(m)}): {reason}" for p, m, reason in refused),
                problems=[
                    Problem(
                        "orphan_result" if reason == "no_open_call" else reason,
                        position,
                        appending.REASONS[reason],
                        "",
                        ids=tuple(i for i in (getattr(message, "tool_call_id", None),) if i),
                    )
                    for position, message, reason in refused
                ],
            )
        for position, message, reason in refused:
            logger.log(
                logging.INFO if mode == "report" else logging.WARNING,
                "toolmend %s %s (message %d of %s): %s%s",
                "stored" if mode == "report" else "rejected",
                _ids_of(message),
                position,
                source,
                reason,
                "" if mode == "report" else "; kept in .rejected",
            )
            if mode != "report":
                self._rejected.append(Rejected(message, reason))
        if mode == "report":
            return [message for message, _ in verdicts]
        return [message for message, reason in verdicts if reason is None]

    def _write(self, batch: list[BaseMessage], source: str) -> None:
        with self._lock:
            self._guard.depth += 1
            try:
                accepted, index = self._screen(batch, source)
                self._index = None
                if accepted:
                    self.inner.add_messages(accepted)
                self._index = index if self.policy.mode.value != "report" else None
            finally:
                self._guard.depth -= 1

    async def _awrite(self, batch: list[BaseMessage], source: str) -> None:
        async with self._async_lock():
            raw = await self.inner.aget_messages() if self._index is None else None
            with self._lock:
                screened = self._screen(batch, source, raw)
            if screened is _NEEDS_READ:
                raw = await self.inner.aget_messages()
                with self._lock:
                    screened = self._screen(batch, source, raw)
            accepted, index = screened
            with self._lock:
                self._index = None
            if accepted:
                await self.inner.aadd_messages(accepted)
            with self._lock:
                self._index = index if self.policy.mode.value != "report" else None

    def _async_lock(self) -> asyncio.Lock:
        """The lock ordering the async writers of this store in the running event loop."""
        loop = asyncio.get_running_loop()
        with _STORE_LOCKS_LOCK:  # not the store's lock: never wait behind its I/O here
            found = self._locks.loops.get(loop)
            if found is None:
                found = self._locks.loops[loop] = asyncio.Lock()
            return found


def _judged(
    batch: Sequence[BaseMessage], index: AppendIndex
) -> tuple[list[tuple[BaseMessage, str | None]], AppendIndex]:
    """Each message of ``batch`` with the reason to refuse it (None: store it), and the index
    after the accepted ones (see :func:`toolmend._appending.judge_appends`)."""
    verdicts, after = appending.judge_appends(batch, index)
    return list(zip(batch, verdicts, strict=True)), after


def _message_type(message: Any) -> Any:
    return getattr(message, "type", None)


def _ids_of(message: Any) -> str:
    """The ids of a refused or dropped message (a tool message), for a log line (never its
    content)."""
    message_type = _message_type(message)
    if message_type in _TOOL_TYPES:
        return f"{message_type} tool_call_id={escape.log(str(message.tool_call_id))}"
    return escape.log(str(message_type))


_WriteBack = tuple[list[BaseMessage], tuple[Change, ...]]
"""What a read writes back: the repaired history, and the changes that made it."""


def _without_placeholders(
    raw: Sequence[Any], repaired: Sequence[Any], placeholder: str
) -> list[BaseMessage]:
    """``repaired`` without the results the repair made up: a write-back never answers a call
    for its writer. With several writers on one session, a call another writer stored may
    still be waiting for the result that writer is about to store; a placeholder in the store
    would turn that real result into a duplicate. Reads add the placeholders again every time
    (the same text), so what is sent is the same.

    A result the repair made up is one not in ``raw`` that holds the ``placeholder`` text and
    whose call id no stored result with that text has. Matching by call id alone (before issue
    31) let a placeholder through when the call's real result was stored too: two racing
    refills left a call and its result twice, the repair dropped the second result and
    answered the second copy of the call with a placeholder, which the write-back stored. A
    real result the repair rewrote (its empty id filled from its call, an id rewritten for
    Mistral) is a new object with an id no stored result has, but not a placeholder: it is
    written back (matching by id and content left it out, and the store lost the output)."""
    results = {
        (m.tool_call_id, _content_key(m.content)) for m in raw if _message_type(m) in _TOOL_TYPES
    }
    stored = {id(m) for m in raw}
    return [
        m
        for m in repaired
        if id(m) in stored
        or _message_type(m) not in _TOOL_TYPES
        or m.content != placeholder
        or (m.tool_call_id, _content_key(m.content)) in results
    ]


def _with_newest_stored(
    raw: Sequence[Any], write: list[BaseMessage], changes: Sequence[Change]
) -> list[BaseMessage] | None:
    """``write`` with the stored newest input as it was stored: a trailing tool result whose
    call is not in the history is sent as user text (issue 32, case 2), which a write-back
    must not store in its place (it only takes messages out or moves them; reads convert it
    again every time, as they add placeholders again). None when the converted messages cannot
    be told apart from the rest (nothing is written back)."""
    newest = {
        change.index
        for change in changes
        if change.code == "orphan_result_to_text" and change.detail.startswith("newest input")
    }
    if not newest:
        return write
    start = min(newest)
    tail = raw[start:]
    if not 0 < len(tail) <= len(write):
        return None
    kept = write[len(write) - len(tail) :]
    for offset, (stored, written) in enumerate(zip(tail, kept, strict=True)):
        if written is not stored and start + offset not in newest:
            return None
    return [*write[: len(write) - len(tail)], *tail]


def _content_key(content: Any) -> str:
    """A message content (a string, or a list of blocks) as something to compare and hash."""
    return content if isinstance(content, str) else repr(content)


def _checked_write_back(inner: Any, write_back: bool | str) -> bool | str:
    """``write_back`` if the store can take it: ``True`` needs a store whose swap is atomic
    (:data:`.langchain_stores.SUPPORTED`); ``"unguarded"`` is the weaker mode any store takes.
    Anything else raises ``ValueError`` naming the store's class."""
    if write_back is False or write_back == stores.UNGUARDED:
        return write_back
    if write_back is not True:
        raise ValueError(
            f"ToolMendHistory: write_back must be True, False or {stores.UNGUARDED!r}, "
            f"not {write_back!r}"
        )
    if stores.kind_of(inner) is None:
        store = f"{type(inner).__module__}.{type(inner).__qualname__}"
        raise ValueError(
            f"ToolMendHistory: write_back=True needs a store that can replace a session's "
            f"history atomically, and {store} cannot; supported: {'; '.join(stores.SUPPORTED)}. "
            f"Pass write_back={stores.UNGUARDED!r} for the weaker mode (compare, clear, add under "
            "this process's lock: safe only when every writer of the session goes through "
            "wrappers of this store object in this process), or write_back=False (reads are "
            "repaired all the same)."
        )
    return True


def _checked_chain(ai_message: Any, tool_messages: Sequence[Any]) -> list[BaseMessage]:
    """``[ai_message, *tool_messages]`` if they form one complete chain (see
    :func:`toolmend._appending.check_chain`), else :class:`toolmend.ToolChainError` naming every
    problem (see :meth:`ToolMendHistory.add_tool_call_chain`)."""
    problems = appending.check_chain(ai_message, tool_messages, FORMAT)
    if problems:
        listed = "; ".join(
            f"message {p.index}: {p.code}" + (f" [{','.join(p.ids)}]" if p.ids else "")
            for p in problems
        )
        raise ToolChainError(
            f"add_tool_call_chain refused the chain; nothing was written: {listed}",
            problems=problems,
        )
    return [ai_message, *(tool_messages or ())]


def _guarded(name: str, override: Callable[..., Any]) -> Callable[..., Any]:
    """A subclass's writer ``override``, screened by the validated path (see
    ``ToolMendHistory.__init_subclass__``)."""
    if asyncio.iscoroutinefunction(override):

        @functools.wraps(override)
        async def guarded_async(self: ToolMendHistory, *args: Any, **kwargs: Any) -> Any:
            screened = _screened(self, name, args)
            if screened is None:
                return None
            try:
                return await override(self, *screened, **kwargs)
            finally:
                with self._lock:
                    self._index = None

        guarded_async._toolmend_guarded = True  # type: ignore[attr-defined]
        return guarded_async

    @functools.wraps(override)
    def guarded(self: ToolMendHistory, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            if self._guard.depth:
                return override(self, *args, **kwargs)
            screened = _screened(self, name, args)
            if screened is None:
                return None
            self._guard.depth += 1
            try:
                return override(self, *screened, **kwargs)
            finally:
                self._guard.depth -= 1
                self._index = None

    guarded._toolmend_guarded = True  # type: ignore[attr-defined]
    return guarded


def _screened(self: ToolMendHistory, name: str, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The arguments a subclass's writer may go on with (None: nothing left to write)."""
    if name in ("add_tool_call_chain", "aadd_tool_call_chain"):
        _checked_chain(*args[:2])
        return args
    first = args[0] if args else None
    if isinstance(first, BaseMessage):
        with self._lock:
            screened = self._screen([first], name)
        if screened is _NEEDS_READ:  # an async-only store, not read here: stored as given
            return args
        return args if screened[0] else None
    if isinstance(first, (list, tuple)) and all(isinstance(m, BaseMessage) for m in first):
        with self._lock:
            screened = self._screen(list(first), name)
        if screened is _NEEDS_READ:
            return args
        return (screened[0], *args[1:]) if screened[0] else None
    return args  # a string (add_user_message) or something that is not a message
