"""LangChain: a chat message history that never stores a broken tool chain, and a v1 agent
middleware that repairs each model call.

Seed 000: a conversation memory let a dangling tool result (or an assistant message that had
lost its ``tool_calls``) into the stored history, and every later request failed with HTTP 400
until the history was cleared. Two hooks close it.

:class:`ToolMendHistory`
    Wraps any ``BaseChatMessageHistory`` (in memory, SQL, Redis, ...) and is one itself, so
    ``RunnableWithMessageHistory`` and existing code take it unchanged.

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
    holds exactly what the read repaired, and otherwise writes nothing (logged at INFO; the
    next read tries again). Refusing when the store moved was chosen over merging (a repair
    computed on a history that has changed is not a repair of the new one) and over writing
    only the difference (LangChain stores can only append or clear). On
    ``SQLChatMessageHistory`` over SQLite (sync or async) the re-read, the delete and the
    inserts run in one transaction that takes SQLite's write lock first (``BEGIN
    IMMEDIATE``), so another connection, thread or process cannot append in between. Other
    stores are compared and then cleared and refilled under the lock above: safe against every
    writer in the process that goes through a wrapper; against another process writing to
    such a store (Redis, a file), only the short step between the compare and the clear is
    open, so prefer ``write_back=False`` there. A write-back never stores toolmend's
    placeholder results: a call another writer stored may still be waiting for the result
    that writer is about to store, and a placeholder would turn it into a duplicate. Reads
    answer such calls again each time, with the same text, so what is sent is the same.

:class:`ToolMendMiddleware`
    An ``AgentMiddleware`` for ``langchain.agents.create_agent``: ``wrap_model_call`` and
    ``awrap_model_call`` repair the messages of each model call for the model's provider
    (:func:`provider_for` reads it from the chat model's class) and leave the agent state as it
    was. ``persist=True`` also writes the repair into the state before each model call
    (``before_model``), so the checkpointed thread heals too. The loop guard reports, or
    raises :class:`toolmend.ToolLoopError` with ``on_loop="raise"``, as in every other hook.

Every hook goes through :func:`toolmend.integrations.hooks.mend`: a toolmend failure is logged
and the original history goes out (a read returns what the store holds, a write stores the batch
as given, the middleware sends the agent's messages). Items that are not LangChain messages are
stored as given, with one WARNING naming their positions. Nothing here adds a deprecation
warning of its own (LangChain marks ``BaseChatMessageHistory`` deprecated, but warns only for
its own classes, not subclasses).

Needs ``pip install 'toolmend[langchain]'`` (``langchain-core``; ``langchain`` for the
middleware). Importing this module is the opt-in: the wrapper subclasses LangChain's own base
class, so LangChain is imported when this module is.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import threading
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

import toolmend

from .hooks import HookOptions, OnLoop, check_names, mend

try:
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.messages import BaseMessage
    from langchain_core.runnables.config import run_in_executor
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "toolmend.integrations.langchain needs LangChain: pip install 'toolmend[langchain]'"
    ) from error

if TYPE_CHECKING:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest
else:
    try:
        from langchain.agents.middleware import AgentMiddleware
    except ImportError:

        class AgentMiddleware:
            """Stands in for LangChain's class when the ``langchain`` package is missing."""

            def __init__(self, *args: Any, **kwargs: Any) -> None:
                raise ImportError(
                    "ToolMendMiddleware needs LangChain v1 agents: "
                    "pip install 'toolmend[langchain]'"
                )


__all__ = [
    "MODEL_PROVIDERS",
    "Rejected",
    "ToolMendHistory",
    "ToolMendMiddleware",
    "Window",
    "provider_for",
]

logger = logging.getLogger("toolmend")

FORMAT = "langchain"

_TOOL_TYPES = frozenset({"tool", "ToolMessageChunk"})
_AI_TYPES = frozenset({"ai", "AIMessageChunk"})


# --- the history wrapper ----------------------------------------------------------------------


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


@dataclass
class _Open:
    """The store's live frontier: the calls of the last ``AIMessage`` still waiting, when only
    their results follow it. ``calls`` maps each waiting id to the call's name."""

    calls: dict[str, str | None]
    answered: set[str]


def _calls_of(message: Any) -> list[tuple[str | None, str | None]]:
    """(id, name) of every call an ``AIMessage`` makes, as LangChain sends them: its
    ``tool_calls`` and ``invalid_tool_calls``, or, when both are empty, the raw
    ``additional_kwargs["tool_calls"]`` that ``ChatOpenAI`` falls back to."""
    found = [
        (call.get("id"), call.get("name"))
        for source in (message.tool_calls, message.invalid_tool_calls)
        for call in source or ()
    ]
    if not found:
        for call in (getattr(message, "additional_kwargs", None) or {}).get("tool_calls") or ():
            function = call.get("function") if isinstance(call, Mapping) else None
            name = function.get("name") if isinstance(function, Mapping) else None
            found.append((call.get("id") if isinstance(call, Mapping) else None, name))
    return found


def _message_type(message: Any) -> Any:
    return getattr(message, "type", None)


def _frontier_of(messages: Sequence[Any]) -> _Open:
    """The live frontier at the end of ``messages`` (nothing open when there is none)."""
    index = len(messages) - 1
    answered: set[str] = set()
    while index >= 0 and _message_type(messages[index]) in _TOOL_TYPES:
        answered.add(messages[index].tool_call_id)
        index -= 1
    if index < 0 or _message_type(messages[index]) not in _AI_TYPES:
        return _Open({}, set())
    calls = {
        call_id: name
        for call_id, name in _calls_of(messages[index])
        if call_id and call_id not in answered
    }
    return _Open(calls, answered)


def _clean_frontier_start(messages: Sequence[Any]) -> int:
    """Where a clean live frontier starts: the last ``AIMessage`` with calls still waiting,
    followed only by single results for its calls. ``len(messages)`` when there is none."""
    index = len(messages) - 1
    seen: list[str] = []
    while index >= 0 and _message_type(messages[index]) in _TOOL_TYPES:
        seen.append(messages[index].tool_call_id)
        index -= 1
    if index < 0 or _message_type(messages[index]) not in _AI_TYPES:
        return len(messages)
    ids = [call_id for call_id, _ in _calls_of(messages[index])]
    if (
        not ids
        or None in ids
        or "" in ids
        or len(set(ids)) != len(ids)
        or len(set(seen)) != len(seen)
        or not set(seen) < set(ids)
    ):
        return len(messages)
    return index


@dataclass
class _Index:
    """What a store holds, as far as writes need it: every call (id -> name; a call reusing an
    id replaces the earlier one) and the ids of those already answered. A result is stored
    when its call is here and not answered, wherever in the history that call is."""

    calls: dict[str, str | None] = field(default_factory=dict)
    answered: set[str] = field(default_factory=set)

    def copy(self) -> _Index:
        return _Index(dict(self.calls), set(self.answered))

    def note(self, message: Any) -> None:
        """Take ``message`` (just stored after the others) into account."""
        message_type = _message_type(message)
        if message_type in _TOOL_TYPES:
            if message.tool_call_id in self.calls:
                self.answered.add(message.tool_call_id)
        elif message_type in _AI_TYPES:
            for call_id, name in _calls_of(message):
                if call_id:
                    self.calls[call_id] = name
                    self.answered.discard(call_id)


def _index_of(messages: Sequence[Any]) -> _Index:
    """The :class:`_Index` of a stored history (one pass over it)."""
    index = _Index()
    for message in messages:
        index.note(message)
    return index


def _judge(message: Any, index: _Index) -> str | None:
    """Why ``message`` may not be stored after a store whose index is ``index`` (None: it may;
    only a ``ToolMessage`` is ever refused)."""
    if _message_type(message) not in _TOOL_TYPES:
        return None
    call_id = message.tool_call_id
    if call_id not in index.calls:
        return "no_open_call"
    if call_id in index.answered:
        return "duplicate_result"
    expected = index.calls[call_id]
    if message.name and expected and message.name != expected:
        return "name_mismatch"
    return None


def _judged(
    batch: Sequence[BaseMessage], index: _Index
) -> tuple[list[tuple[BaseMessage, str | None]], _Index]:
    """Each message of ``batch`` with the reason to refuse it (None: store it), each judged
    after the accepted ones before it; and the index after the accepted ones (``index`` is
    left as it was)."""
    after = index
    verdicts: list[tuple[BaseMessage, str | None]] = []
    for message in batch:
        reason = _judge(message, after) if isinstance(message, BaseMessage) else None
        verdicts.append((message, reason))
        if reason is None and _message_type(message) in _TOOL_TYPES | _AI_TYPES:
            if after is index:
                after = index.copy()
            after.note(message)
    return verdicts, after


_NEEDS_READ = object()
"""What :meth:`ToolMendHistory._screen` returns when it must see the store first."""


def _as_policy(policy: toolmend.Policy | str | None) -> toolmend.Policy:
    """The wrapper's policy: ``None`` and the mode names keep the live frontier waiting."""
    if policy is None:
        return toolmend.Policy(frontier="keep")
    if isinstance(policy, toolmend.Policy):
        return policy
    try:
        mode = toolmend.Mode(policy)
    except ValueError:
        raise toolmend.UnknownNameError(
            f"Unknown policy {policy!r}: use a toolmend.Policy or one of "
            "'repair', 'strict', 'report'"
        ) from None
    return toolmend.Policy(mode=mode, frontier="keep")


def _is_async_only(inner: Any) -> bool:
    """A store that refuses its sync methods (``SQLChatMessageHistory`` on an async engine)."""
    return getattr(inner, "async_mode", None) is True


class _Guard(threading.local):
    depth = 0


@dataclass
class _StoreLocks:
    """What every wrapper of one store object shares in this process: a thread lock, an
    ``asyncio.Lock`` per event loop for a store that only works async, and the store's index
    (so a result another wrapper stored counts at once)."""

    thread: threading.RLock = field(default_factory=threading.RLock)
    loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = field(
        default_factory=weakref.WeakKeyDictionary
    )
    wrappers: int = 0
    index: _Index | None = None
    """The store's calls and results as its wrappers last saw them (None: read the store)."""


_STORE_LOCKS: dict[int, _StoreLocks] = {}
"""By ``id(store)``. Each wrapper holds its store, so the id cannot be reused while an entry
lives; the last wrapper of a store to go removes the entry (stores are often pydantic models,
which take no weak reference, hence ids and a count)."""
_STORE_LOCKS_LOCK = threading.Lock()


def _locks_for(store: Any, owner: Any) -> _StoreLocks:
    """The shared locks of ``store``, held until ``owner`` (a wrapper) is collected."""
    key = id(store)
    with _STORE_LOCKS_LOCK:
        locks = _STORE_LOCKS.get(key)
        if locks is None:
            locks = _STORE_LOCKS[key] = _StoreLocks()
        locks.wrappers += 1
    weakref.finalize(owner, _release_locks, key)
    return locks


def _release_locks(key: int) -> None:
    with _STORE_LOCKS_LOCK:
        locks = _STORE_LOCKS.get(key)
        if locks is not None:
            locks.wrappers -= 1
            if locks.wrappers <= 0:
                del _STORE_LOCKS[key]


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
      only while the store still holds what was read (compare-and-swap; see the module
      docstring), and never toolmend's placeholder results.

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
        policy: toolmend.Policy | str | None = None,
        repair_on_read: bool = True,
        write_back: bool = False,
    ) -> None:
        super().__init__()
        # an unknown provider or policy name fails here, not on every read; a toolmend bug is
        # logged and the wrapper built anyway (its reads and writes fail open)
        check_names(provider=provider, policy=policy, source="ToolMendHistory")
        self.inner = inner
        self.provider = provider
        self.window = window
        self.policy = _as_policy(policy)
        self.repair_on_read = repair_on_read
        self.write_back = write_back
        self._keep_options = HookOptions(provider=provider, policy=self.policy, on_loop="off")
        self._answer_options = replace(
            self._keep_options, policy=replace(self.policy, frontier="answer")
        )
        self._locks = _locks_for(inner, self)
        self._lock = self._locks.thread
        self._guard = _Guard()
        self._rejected: list[Rejected] = []

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass's own writers still go through the validated path (seed 000, 6.3: a
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
    def _index(self) -> _Index | None:
        """The store's index, shared by its wrappers in this process (see :class:`_StoreLocks`);
        set under the lock."""
        return self._locks.index

    @_index.setter
    def _index(self, index: _Index | None) -> None:
        self._locks.index = index

    @property
    def async_only(self) -> bool:
        """Whether the wrapped store works only through its async methods."""
        return _is_async_only(self.inner)

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
        except toolmend.ToolChainError:  # the strict policy asked for it
            raise
        except Exception:
            logger.exception("toolmend failed on a LangChain history read; returned as stored")
            return raw, None

    def _repaired_view(self, raw: list[BaseMessage]) -> tuple[list[BaseMessage], _WriteBack | None]:
        if not raw:
            return raw, None
        repaired: Any = raw
        changes: tuple[toolmend.Change, ...] = ()
        if self.repair_on_read:
            repaired, changes = self._repaired(raw, bool(_frontier_of(raw).calls))
        view = self._windowed(repaired) if self.window is not None else repaired
        if not (changes and self.write_back):
            return view, None
        write = _without_placeholders(raw, repaired)
        return view, (None if _same(write, raw) else (write, changes))

    def _repaired(
        self, raw: list[BaseMessage], waiting: bool
    ) -> tuple[Any, tuple[toolmend.Change, ...]]:
        """The stored history repaired, a live frontier left waiting (see the class).

        A clean frontier (the last calling message and only its own results) is set aside and
        the rest repaired as a request would be; a messy one is repaired in place under the
        ``frontier="keep"`` policy. With nothing waiting, both policies agree, and the answering
        one lets a valid history through in one pass that builds nothing."""
        start, options = len(raw), self._answer_options
        if waiting and self.policy.frontier == "keep":
            start = _clean_frontier_start(raw)
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
            return mended.messages, mended.changes
        return [*mended.messages, *raw[start:]], mended.changes

    def _windowed(self, view: Any) -> Any:
        """``view`` trimmed to the window; a live frontier stays waiting.

        :func:`toolmend.trim` answers a waiting call with a placeholder (a trimmed request
        must), so those are taken off again; ``max_messages`` counts them out, and under
        ``max_tokens`` they only make the window a little smaller, never larger."""
        window = self.window
        assert window is not None
        waiting = len(_frontier_of(view).calls) if self.policy.frontier == "keep" else 0
        max_messages = window.max_messages
        if max_messages is not None and max_messages > 0:
            max_messages += waiting
        try:
            trimmed = toolmend.trim(
                view,
                max_messages=max_messages,
                max_tokens=window.max_tokens,
                token_counter=window.token_counter,
                keep_first=window.keep_first,
                format=FORMAT,
            )
        except toolmend.TrimError:
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

    def _note_dropped(self, raw: Sequence[BaseMessage], changes: Sequence[toolmend.Change]) -> None:
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
        changes: Sequence[toolmend.Change],
    ) -> None:
        """Replace the store's ``raw`` with ``repaired``, only if the store still holds exactly
        ``raw`` (see the class: compare and swap)."""
        self._index = None
        swapped = _sql_swap(self.inner, raw, repaired)
        if swapped is None:  # any other store: compare, then clear and add
            swapped = _same(self.inner.messages, raw)
            if swapped:
                self.inner.clear()
                self.inner.add_messages(repaired)
        self._wrote_back(swapped, raw, repaired, changes)

    async def _write_back_async(
        self,
        raw: list[BaseMessage],
        repaired: list[BaseMessage],
        changes: Sequence[toolmend.Change],
    ) -> None:
        self._index = None
        swapped = await _asql_swap(self.inner, raw, repaired)
        if swapped is None:
            swapped = _same(await self.inner.aget_messages(), raw)
            if swapped:
                await self.inner.aclear()
                await self.inner.aadd_messages(repaired)
        with self._lock:
            self._wrote_back(swapped, raw, repaired, changes)

    def _wrote_back(
        self,
        swapped: bool,
        raw: list[BaseMessage],
        repaired: list[BaseMessage],
        changes: Sequence[toolmend.Change],
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

        Checks first that ``ai_message`` is an ``AIMessage`` with ``tool_calls`` (each with an
        id), that ``tool_messages`` is not empty and holds only ``ToolMessage``s, and that they
        answer exactly its calls: every id once, no unknown id, the call's name where a result
        states one. A chain that fails raises :class:`toolmend.ToolChainError` naming each
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
            self._index = _Index()

    async def aclear(self) -> None:
        """``clear``, for async code."""
        if not self.async_only:
            await run_in_executor(None, self.clear)
            return
        async with self._async_lock():
            await self.inner.aclear()
            with self._lock:
                self._index = _Index()

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
                index = _index_of(self.inner.messages if raw is None else raw)
            verdicts, after = _judged(batch, index)
            if not fresh and any(reason for _, reason in verdicts):
                if self.async_only:
                    return _NEEDS_READ
                verdicts, after = _judged(batch, _index_of(self.inner.messages))
            return self._sorted_out(verdicts, source), after
        except toolmend.ToolChainError:  # the strict policy asked for it
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
            raise toolmend.ToolChainError(
                f"{source} refused {len(refused)} tool message(s); nothing was written: "
                + "; ".join(f"message {p} ({_ids_of(m)}): {reason}" for p, m, reason in refused),
                problems=[
                    toolmend.Problem(
                        "orphan_result" if reason == "no_open_call" else reason,
                        position,
                        _REASONS[reason],
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


_REASONS = {
    "no_open_call": "tool result whose call is not in the history",
    "duplicate_result": "second result for one call",
    "name_mismatch": "tool result naming another function than its call",
}


def _ids_of(message: Any) -> str:
    """The ids of a message, for a log line (never its content)."""
    message_type = _message_type(message)
    if message_type in _TOOL_TYPES:
        return f"{message_type} tool_call_id={message.tool_call_id}"
    if message_type in _AI_TYPES:
        ids = ",".join(str(call_id) for call_id, _ in _calls_of(message))
        return f"{message_type} calls=[{ids}]"
    return str(message_type)


_WriteBack = tuple[list[BaseMessage], tuple[toolmend.Change, ...]]
"""What a read writes back: the repaired history, and the changes that made it."""


def _same(current: Sequence[Any], raw: Sequence[Any]) -> bool:
    """Whether the store's ``current`` messages are still the ``raw`` ones a repair read."""
    return len(current) == len(raw) and all(
        a is b or a == b for a, b in zip(current, raw, strict=True)
    )


def _without_placeholders(raw: Sequence[Any], repaired: Sequence[Any]) -> list[BaseMessage]:
    """``repaired`` without the placeholder results the repair added: a write-back never
    answers a call for its writer. With several writers on one session, a call another writer
    stored may still be waiting for the result that writer is about to store; a placeholder
    in the store would turn that real result into a duplicate. Reads add the placeholders
    again every time (the same text), so what is sent is the same."""
    results = {m.tool_call_id for m in raw if _message_type(m) in _TOOL_TYPES}
    stored = {id(m) for m in raw}
    return [
        m
        for m in repaired
        if id(m) in stored or _message_type(m) not in _TOOL_TYPES or m.tool_call_id in results
    ]


def _sql_parts(inner: Any, engine: Any) -> tuple[Any, Any, Any, Any] | None:
    """(model class, session id column, session id, converter) of a
    ``SQLChatMessageHistory`` on SQLite, or None for any other store."""
    model = getattr(inner, "sql_model_class", None)
    converter = getattr(inner, "converter", None)
    field_name = getattr(inner, "session_id_field_name", None)
    dialect = getattr(getattr(engine, "dialect", None), "name", None)
    if model is None or converter is None or field_name is None or dialect != "sqlite":
        return None
    return model, getattr(model, field_name), inner.session_id, converter


def _sql_swap(inner: Any, raw: Sequence[Any], repaired: Sequence[Any]) -> bool | None:
    """Replace a SQLite session's rows holding ``raw`` with ``repaired`` in one transaction
    that holds SQLite's write lock from the re-read to the commit (``BEGIN IMMEDIATE``), so
    no other connection, thread or process, can add a row in between. True: swapped; False:
    the rows are no longer ``raw`` (nothing written); None: not a sync SQLite store."""
    if getattr(inner, "async_mode", False):
        return None
    engine: Any = getattr(inner, "engine", None)
    parts = _sql_parts(inner, engine)
    if parts is None:
        return None
    from sqlalchemy import delete, select
    from sqlalchemy.orm import Session

    model, column, session_id, converter = parts
    with engine.connect() as plain:
        connection = plain.execution_options(isolation_level="AUTOCOMMIT")
        connection.exec_driver_sql("BEGIN IMMEDIATE")
        try:
            with Session(bind=connection) as session:
                rows = session.scalars(
                    select(model).where(column == session_id).order_by(model.id.asc())
                )
                if not _same([converter.from_sql_model(row) for row in rows], raw):
                    connection.exec_driver_sql("ROLLBACK")
                    return False
                session.execute(delete(model).where(column == session_id))
                session.add_all([converter.to_sql_model(m, session_id) for m in repaired])
                session.flush()
            connection.exec_driver_sql("COMMIT")
        except BaseException:
            with contextlib.suppress(Exception):
                connection.exec_driver_sql("ROLLBACK")
            raise
    return True


async def _asql_swap(inner: Any, raw: Sequence[Any], repaired: Sequence[Any]) -> bool | None:
    """:func:`_sql_swap` for ``SQLChatMessageHistory`` on an async SQLite engine."""
    if not getattr(inner, "async_mode", False):
        return None
    engine: Any = getattr(inner, "async_engine", None)
    parts = _sql_parts(inner, engine)
    if parts is None:
        return None
    from sqlalchemy import delete, select
    from sqlalchemy.ext.asyncio import AsyncSession

    model, column, session_id, converter = parts
    async with engine.connect() as plain:
        connection = await plain.execution_options(isolation_level="AUTOCOMMIT")
        await connection.exec_driver_sql("BEGIN IMMEDIATE")
        try:
            async with AsyncSession(bind=connection) as session:
                rows = await session.scalars(
                    select(model).where(column == session_id).order_by(model.id.asc())
                )
                if not _same([converter.from_sql_model(row) for row in rows], raw):
                    await connection.exec_driver_sql("ROLLBACK")
                    return False
                await session.execute(delete(model).where(column == session_id))
                session.add_all([converter.to_sql_model(m, session_id) for m in repaired])
                await session.flush()
            await connection.exec_driver_sql("COMMIT")
        except BaseException:
            with contextlib.suppress(Exception):
                await connection.exec_driver_sql("ROLLBACK")
            raise
    return True


def _checked_chain(ai_message: Any, tool_messages: Sequence[Any]) -> list[BaseMessage]:
    """``[ai_message, *tool_messages]`` if they form one complete chain, else
    :class:`toolmend.ToolChainError` (see :meth:`ToolMendHistory.add_tool_call_chain`)."""
    problems: list[toolmend.Problem] = []

    def problem(code: str, position: int, text: str, *ids: Any) -> None:
        found = tuple(str(i) for i in ids if i)
        problems.append(toolmend.Problem(code, position, text, "", ids=found))

    calls: list[tuple[Any, Any]] = []
    if _message_type(ai_message) not in _AI_TYPES:
        problem(
            "chain_not_ai_message", 0, f"expected an AIMessage, got {_message_type(ai_message)}"
        )
    else:
        calls = [(call.get("id"), call.get("name")) for call in ai_message.tool_calls or ()]
        if not calls:
            problem("chain_without_calls", 0, "the AIMessage has no tool_calls")
    names: dict[str, Any] = {}
    for slot, (call_id, name) in enumerate(calls):
        if not call_id:
            problem("chain_call_without_id", 0, f"tool call {slot} has no id")
        elif call_id in names:
            problem("chain_duplicate_call_id", 0, "two calls share one id", call_id)
        else:
            names[call_id] = name
    tool_messages = list(tool_messages or ())
    if not tool_messages:
        problem("chain_without_results", 1, "no tool messages")
    answered: set[str] = set()
    for position, message in enumerate(tool_messages, start=1):
        if _message_type(message) not in _TOOL_TYPES:
            problem("chain_not_tool_message", position, f"got {_message_type(message)}")
            continue
        call_id = message.tool_call_id
        if call_id in answered:
            problem("chain_duplicate_result", position, "second result for one call", call_id)
        elif call_id not in names:
            problem("chain_unknown_call_id", position, "answers no call of the AIMessage", call_id)
        elif message.name and names[call_id] and message.name != names[call_id]:
            problem(
                "chain_name_mismatch",
                position,
                f"names {message.name!r}, its call is {names[call_id]!r}",
                call_id,
            )
        answered.add(call_id)
    if tool_messages and names:
        for call_id in names:
            if call_id not in answered:
                problem("chain_missing_result", 0, "call without a result", call_id)
    if problems:
        listed = "; ".join(
            f"message {p.index}: {p.code}" + (f" [{','.join(p.ids)}]" if p.ids else "")
            for p in problems
        )
        raise toolmend.ToolChainError(
            f"add_tool_call_chain refused the chain; nothing was written: {listed}",
            problems=problems,
        )
    return [ai_message, *tool_messages]


def _guarded(name: str, override: Callable[..., Any]) -> Callable[..., Any]:
    """A subclass's writer ``override``, screened by the validated path (see
    ``ToolMendHistory.__init_subclass__``)."""
    import functools

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


# --- the agent middleware ---------------------------------------------------------------------

MODEL_PROVIDERS: Mapping[str, str] = {
    "ChatOpenAI": "openai",
    "AzureChatOpenAI": "azure",
    "ChatDeepSeek": "deepseek",
    "ChatMistralAI": "mistral",
    "ChatGroq": "groq",
    "ChatAnthropic": "anthropic",
    "ChatAnthropicVertex": "anthropic",
    "ChatGoogleGenerativeAI": "gemini",
    "ChatVertexAI": "gemini",
    "ChatBedrockConverse": "bedrock",
    "ChatBedrock": "bedrock",
    "ChatHuggingFace": "hf-template",
}
"""Chat model class name (the class or one it derives from) -> the provider profile. A model
not listed is judged as ``"openai"``, the strictest about where results go."""


def provider_for(model: Any) -> str:
    """The provider profile for a LangChain chat model (see :data:`MODEL_PROVIDERS`).

    The class decides; within it, the model name and settings pick the variant the provider's
    own checks use: ``deepseek-reasoner`` for that model, ``gemini-3`` for a Gemini 3 model,
    ``anthropic-thinking`` with extended thinking on, and an OpenAI-compatible class pointed at
    DeepSeek, Mistral or Groq (by base URL or model name) gets that provider.
    """
    model = getattr(model, "bound", model)  # a RunnableBinding (bind_tools)
    provider = "openai"
    for cls in type(model).__mro__:
        if cls.__name__ in MODEL_PROVIDERS:
            provider = MODEL_PROVIDERS[cls.__name__]
            break
    name = str(getattr(model, "model_name", None) or getattr(model, "model", None) or "")
    if provider in ("openai", "deepseek"):
        base = str(
            getattr(model, "openai_api_base", None) or getattr(model, "api_base", None) or ""
        )
        host = urlsplit(base).hostname
        provider = (
            toolmend.provider_for_model(name)
            or (toolmend.provider_for_host(host) if host else None)
            or provider
        )
    return toolmend.request_profile(provider, model=name, thinking=getattr(model, "thinking", None))


class ToolMendMiddleware(AgentMiddleware):
    """Repairs the messages of every model call of a ``create_agent`` agent.

    **Parameters:**

    * **provider** - *(optional)* the provider profile; by default :func:`provider_for` the
      request's model.
    * **persist** - *(optional)* also write the repair into the agent state before each model
      call, so the checkpointed thread heals (default False: the state is left as it was).
      The state is repaired for ``provider`` (``"openai"`` when not given: the model is not
      known there); each call is still repaired for its model's provider.
    * **policy** - *(optional)* a :class:`toolmend.Policy`, ``"repair"`` (default),
      ``"strict"`` or ``"report"``.
    * **on_loop** - *(optional)* the loop guard: ``"warn"`` (default), ``"raise"``
      (:class:`toolmend.ToolLoopError` before the call is made) or ``"off"``.

    >>> from langchain.agents import create_agent  # doctest: +SKIP
    >>> agent = create_agent(model, tools, middleware=[ToolMendMiddleware()])  # doctest: +SKIP
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> ToolMendMiddleware:
        # LangChain adds a graph node for before_model when the class defines it, so only the
        # persisting variant does.
        persist = kwargs.get("persist", args[1] if len(args) > 1 else False)
        if persist and cls is ToolMendMiddleware:
            cls = _PersistingToolMendMiddleware
        return super().__new__(cls)

    def __init__(
        self,
        provider: str | None = None,
        persist: bool = False,
        policy: toolmend.Policy | str | None = None,
        on_loop: OnLoop = "warn",
    ) -> None:
        super().__init__()
        # an unknown provider or policy name fails here, not once per model call; a toolmend
        # bug is logged and the middleware built anyway (each model call fails open)
        check_names(provider=provider, policy=policy, source="ToolMendMiddleware")
        self.provider = provider
        self.persist = persist
        self.policy = policy
        self.on_loop = on_loop

    @property
    def name(self) -> str:
        return "ToolMendMiddleware"

    def _request_messages(self, request: ModelRequest[Any]) -> list[Any] | None:
        """The repaired messages of ``request``, or None when they need no change (or when
        toolmend failed: the error is logged and the call goes out as the agent made it)."""
        try:
            return self._repaired_messages(request)
        except (toolmend.ToolLoopError, toolmend.ToolChainError):
            raise
        except Exception:
            logger.exception("toolmend failed on langchain.wrap_model_call; sent unchanged")
            return None

    def _repaired_messages(self, request: ModelRequest[Any]) -> list[Any] | None:
        messages = request.messages
        if not messages:
            return None
        provider = self.provider or provider_for(request.model)
        options = HookOptions(provider=provider, policy=self.policy, on_loop=self.on_loop)
        mended = mend(
            messages,
            provider=provider,
            source="langchain.wrap_model_call",
            options=options,
            format=FORMAT,
        )
        if mended.messages is messages:
            return None
        return list(mended.messages)

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], Any]
    ) -> Any:
        """Send the request with its messages repaired; the agent state is not touched."""
        repaired = self._request_messages(request)
        return handler(request if repaired is None else request.override(messages=repaired))

    async def awrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], Awaitable[Any]]
    ) -> Any:
        """``wrap_model_call``, for ``ainvoke`` and ``astream``."""
        repaired = self._request_messages(request)
        return await handler(request if repaired is None else request.override(messages=repaired))


class _PersistingToolMendMiddleware(ToolMendMiddleware):
    """:class:`ToolMendMiddleware` with ``persist=True``: ``before_model`` heals the state."""

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Replace the state's messages with their repair, when they need one."""
        messages = state["messages"] if isinstance(state, Mapping) else state.messages
        if not messages:
            return None
        provider = self.provider or "openai"
        options = HookOptions(provider=provider, policy=self.policy, on_loop="off")
        mended = mend(
            messages,
            provider=provider,
            source="langchain.before_model",
            options=options,
            format=FORMAT,
        )
        if mended.messages is messages:
            return None
        from langchain_core.messages import RemoveMessage
        from langgraph.graph.message import REMOVE_ALL_MESSAGES

        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *mended.messages]}

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """``before_model``, for ``ainvoke`` (the repair does no I/O)."""
        return self.before_model(state, runtime)
