"""LangGraph: repair what an agent graph's model node sends, and heal a checkpointed thread.

:class:`ToolMendPreModelHook` (and :data:`pre_model_hook`, one built with the defaults) is a
``pre_model_hook`` for ``langgraph.prebuilt.create_react_agent``: before every model call it
reads the state's ``messages``, repairs them for the provider, and returns them as
``llm_input_messages``, the list the ``agent`` node sends to the model instead of the stored
one. The stored thread is left as it was. The ``agent`` node validates what it is about to send
(``_validate_chat_history``, the ``INVALID_CHAT_HISTORY`` error) after the hook has run, so a
thread holding a tool call without its result passes once the hook has answered the call.

:func:`repair_thread` (and :func:`arepair_thread`) heal the thread itself: they read a
checkpointed thread's ``messages`` (``graph.get_state(config)``), repair them, and write the
repair back with ``graph.update_state`` (``RemoveMessage(id=REMOVE_ALL_MESSAGES)`` and the
repaired list), so every later run, with or without the hook, and any other reader of the
thread, sees a valid history. Nothing is written when the thread needs no repair.

``create_react_agent`` is deprecated in favour of ``langchain.agents.create_agent``; for those
agents use :class:`toolmend.integrations.langchain.ToolMendMiddleware`. :func:`repair_thread`
works on any graph whose ``messages`` use LangGraph's ``add_messages`` reducer (``create_agent``,
``create_react_agent``, ``MessagesState``), on any checkpointer.

No retry after the provider's 400 (:func:`toolmend.rescue`) is made here: the hook runs
before the ``agent`` node and never sees the model's answer or error; ``post_model_hook`` runs
only after an answer, and a node's ``RetryPolicy`` reruns the node on the same state. For the
retry, use ``create_agent`` with :class:`toolmend.integrations.langchain.ToolMendMiddleware`
(whose ``wrap_model_call`` sees the error and calls the model again) or the raw SDK patch.

Both fail open: a toolmend failure is logged once, with its traceback, on logger ``toolmend``;
the hook then lets the agent send the stored messages as they are, and :func:`repair_thread`
writes nothing and says so (:attr:`ThreadRepair.failed`). Needs ``pip install
'toolmend[langgraph]'``.
"""

from __future__ import annotations

import logging
import uuid
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from toolmend import _appending as appending
from toolmend._policy import Policy
from toolmend._report import Change, InvalidHistoryError, Problem, ToolChainError, ToolLoopError

from . import budget as budgets
from . import telemetry
from .hooks import HookOptions, Mended, OnLoop, check_names, hook_policy, mend

try:
    from langchain_core.messages import RemoveMessage
    from langgraph.channels.binop import BinaryOperatorAggregate
    from langgraph.channels.last_value import LastValue
    from langgraph.graph.message import REMOVE_ALL_MESSAGES
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "toolmend.integrations.langgraph needs LangGraph: pip install 'toolmend[langgraph]'"
    ) from error

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

__all__ = [
    "DEFAULT_PROVIDER",
    "ThreadRepair",
    "ToolMendPreModelHook",
    "arepair_thread",
    "pre_model_hook",
    "repair_thread",
]

logger = logging.getLogger("toolmend")

FORMAT = "langchain"

DEFAULT_PROVIDER = "openai"
"""The profile used when neither ``provider`` nor ``model`` is given: a graph's state does not
name its model, and OpenAI is the strictest about where tool results go."""


def _provider(provider: str | None, model: Any, source: str) -> str:
    """``provider``, else the profile of the LangChain chat ``model``
    (:func:`toolmend.integrations.langchain.provider_for`), else :data:`DEFAULT_PROVIDER`.

    A failure reading the model is toolmend's: logged once, and the default is used."""
    if provider is not None:
        return provider
    if model is None:
        return DEFAULT_PROVIDER
    try:
        from .langchain_middleware import provider_for

        return provider_for(model)
    except Exception:
        logger.exception(
            "toolmend failed reading the model for %s; it repairs for %s", source, DEFAULT_PROVIDER
        )
        return DEFAULT_PROVIDER


def _messages_of(state: Any, key: str) -> Any:
    """The ``key`` entry of a graph state: a dict (TypedDict schemas) or a model's attribute."""
    if isinstance(state, Mapping):
        return state.get(key)
    return getattr(state, key, None)


class ToolMendPreModelHook:
    """A ``pre_model_hook`` for ``create_react_agent`` that repairs every model call's messages.

    **Parameters:**

    * **provider** - *(optional)* the provider profile to repair for.
    * **model** - *(optional)* the agent's chat model, to work the profile out from instead
      (its class, model name and base URL, as ``ToolMendMiddleware`` does). With neither,
      :data:`DEFAULT_PROVIDER`: the hook never sees the model the agent calls.
    * **policy** - *(optional)* a :class:`toolmend.Policy`, ``"repair"`` (default),
      ``"strict"`` or ``"report"``.
    * **on_loop** - *(optional)* the loop guard: ``"warn"`` (default), ``"raise"``
      (:class:`toolmend.ToolLoopError` before the model is called) or ``"off"``.
    * **key** - *(optional)* the state key holding the messages (default ``"messages"``).

    It returns ``{"llm_input_messages": repaired}`` when the messages need repair, and
    ``{"llm_input_messages": []}`` when they do not (or when toolmend failed): the ``agent``
    node then sends the state's own ``messages``. It always returns the key, because LangGraph
    keeps ``llm_input_messages`` in the state: a hook that returned nothing would let the model
    see an earlier call's list again.

    >>> from langgraph.prebuilt import create_react_agent  # doctest: +SKIP
    >>> agent = create_react_agent(model, tools,
    ...     pre_model_hook=ToolMendPreModelHook(model=model))  # doctest: +SKIP
    """

    def __init__(
        self,
        provider: str | None = None,
        *,
        model: Any = None,
        policy: Policy | str | None = None,
        on_loop: OnLoop = "warn",
        key: str = "messages",
    ) -> None:
        # an unknown provider or policy name fails here, not once per model call; a toolmend
        # bug is logged and the hook built anyway (each call fails open)
        check_names(provider=provider, policy=policy, source="ToolMendPreModelHook")
        self.provider = _provider(provider, model, "ToolMendPreModelHook")
        self.policy = policy
        self.on_loop = on_loop
        self.key = key
        self._options = HookOptions(provider=self.provider, policy=policy, on_loop=on_loop)

    def __repr__(self) -> str:
        return f"ToolMendPreModelHook(provider={self.provider!r})"

    def __call__(self, state: Any) -> dict[str, Any]:
        """The state update for the ``agent`` node: the messages it is to send."""
        try:
            messages = _messages_of(state, self.key)
        except Exception:
            logger.exception(
                "toolmend failed on langgraph.pre_model_hook; the state's messages were sent"
            )
            telemetry.failed_open("langgraph.pre_model_hook", self.provider)
            return {"llm_input_messages": []}
        repaired = self.repair(messages)
        return {"llm_input_messages": [] if repaired is messages else list(repaired)}

    def repair(self, messages: Any) -> Any:
        """``messages`` repaired, or ``messages`` itself when they need no repair (or toolmend
        failed: logged, as in every hook). For a ``pre_model_hook`` of your own that also trims
        or summarises: return ``{"llm_input_messages": hook.repair(trimmed)}``."""
        if not isinstance(messages, Sequence) or isinstance(messages, str) or not messages:
            return messages  # not a history: LangGraph reports its own error
        try:
            mended = mend(
                messages,
                provider=self.provider,
                source="langgraph.pre_model_hook",
                options=self._options,
                format=FORMAT,
            )
        except (ToolLoopError, ToolChainError):
            raise
        except Exception:  # mend fails open itself; this is the hook's own code around it
            logger.exception(
                "toolmend failed on langgraph.pre_model_hook; the state's messages were sent"
            )
            telemetry.failed_open("langgraph.pre_model_hook", self.provider)
            return messages
        return mended.messages


pre_model_hook = ToolMendPreModelHook()
"""A :class:`ToolMendPreModelHook` with the defaults (the ``openai`` profile)."""


@dataclass(frozen=True)
class ThreadRepair:
    """What :func:`repair_thread` did to a thread."""

    changes: tuple[Change, ...] = ()
    """The edits written back (empty when the thread was valid, or nothing was written)."""
    problems_before: tuple[Problem, ...] = ()
    """What the stored thread broke, before the repair (as :attr:`toolmend.Repair.problems`)."""
    config: RunnableConfig | None = None
    """The config ``update_state`` returned (the new checkpoint), or None: nothing written."""
    failed: bool = False
    """True when toolmend itself failed: the error was logged and nothing was written."""
    problems_left: tuple[Problem, ...] = ()
    """What the thread still breaks after the repair (as :attr:`toolmend.Repair.problems_left`):
    empty after a repair that was written, the problems found when nothing was changed."""

    @property
    def problems(self) -> tuple[Problem, ...]:
        """Deprecated: :attr:`problems_before`, this field's name before 0.2.0."""
        warnings.warn(
            "ThreadRepair.problems is deprecated; use problems_before (or problems_left)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.problems_before

    @property
    def written(self) -> bool:
        """Whether the repair was written to the thread."""
        return self.config is not None


def repair_thread(
    graph: Any,
    config: RunnableConfig,
    *,
    provider: str | None = None,
    model: Any = None,
    policy: Policy | str | None = None,
    as_node: str | None = None,
    key: str = "messages",
) -> ThreadRepair:
    """Repair the ``messages`` of the checkpointed thread ``config`` names, and write them back.

    ``graph`` is a compiled graph with a checkpointer; ``config`` names the thread
    (``{"configurable": {"thread_id": ...}}``, optionally a ``checkpoint_id``: the repair is
    then written on top of that checkpoint). The messages are repaired for ``provider`` (or
    ``model``'s profile; :data:`DEFAULT_PROVIDER` with neither) and, when anything changed,
    written with ``graph.update_state(config, {key: [RemoveMessage(REMOVE_ALL_MESSAGES),
    *repaired]}, as_node=as_node)``. ``as_node=None`` lets LangGraph take the node that wrote
    last, so the graph goes on where it stood (a thread paused before its tools still runs
    them). Every message keeps its id; one without an id, or repeating an earlier one (toolmend's
    placeholder results among them), gets a fresh one.

    Calls of the thread's last message still waiting for their results are **pending** while
    the thread is paused on purpose: an interrupt is open (``interrupt()``, human-in-the-loop
    middleware) or the next node is one the graph was compiled to interrupt before (or after a
    node, ``interrupt_after``). Resuming the graph runs them, so they are left waiting. Any other
    trailing call was **interrupted**: the thread is idle (``next`` empty), or its run stopped
    while the tools ran (the process died, a tool raised). LangGraph's agent node refuses a
    history holding such a call (``INVALID_CHAT_HISTORY``) as soon as a new message comes in,
    so it is answered with a placeholder result. A run paused by ``invoke(...,
    interrupt_before=[...])`` leaves a checkpoint identical to a crashed one: pass
    ``policy=toolmend.Policy(frontier="keep")`` to keep its calls waiting (and
    ``policy=toolmend.Policy()`` to answer pending ones too).

    Returns a :class:`ThreadRepair`. A toolmend failure is logged and nothing is written
    (``failed=True``); LangGraph's own errors (no checkpointer, an ambiguous ``as_node``) and
    a ``messages`` reducer other than ``add_messages`` raise. Run it between runs of the
    thread: LangGraph does not lock a thread against a run writing to it meanwhile.
    """
    check_names(provider=provider, policy=policy, source="repair_thread")
    snapshot = graph.get_state(config)
    found = _plan(graph, snapshot, provider, model, policy, key)
    if found is None or isinstance(found, ThreadRepair):
        return found or ThreadRepair()
    mended, update, writer = found
    written = graph.update_state(snapshot.config, {key: update}, as_node=as_node or writer)
    return ThreadRepair(
        tuple(mended.changes), tuple(mended.problems), written, problems_left=tuple(mended.left)
    )


async def arepair_thread(
    graph: Any,
    config: RunnableConfig,
    *,
    provider: str | None = None,
    model: Any = None,
    policy: Policy | str | None = None,
    as_node: str | None = None,
    key: str = "messages",
) -> ThreadRepair:
    """:func:`repair_thread` through ``aget_state`` and ``aupdate_state`` (async checkpointers
    such as ``AsyncSqliteSaver``). A long thread is repaired off the event loop, within the
    budget (:mod:`toolmend.integrations.budget`): past it nothing is written and the result
    says ``failed``."""
    check_names(provider=provider, policy=policy, source="repair_thread")
    snapshot = await graph.aget_state(config)
    try:
        held = _messages_of(snapshot.values, key)
    except Exception:  # _plan says what is wrong with it
        held = ()
    found = await budgets.run(
        held if isinstance(held, list) else (),
        lambda: _plan(graph, snapshot, provider, model, policy, key),
        lambda: ThreadRepair(failed=True),
        source="langgraph.repair_thread",
    )
    if found is None or isinstance(found, ThreadRepair):
        return found or ThreadRepair()
    mended, update, writer = found
    written = await graph.aupdate_state(snapshot.config, {key: update}, as_node=as_node or writer)
    return ThreadRepair(
        tuple(mended.changes), tuple(mended.problems), written, problems_left=tuple(mended.left)
    )


def _plan(
    graph: Any,
    snapshot: Any,
    provider: str | None,
    model: Any,
    policy: Policy | str | None,
    key: str,
) -> tuple[Mended, list[Any], str | None] | ThreadRepair | None:
    """The repair of the thread in ``snapshot``, the update that writes it and the node to
    write it as (``None``: LangGraph's choice); a :class:`ThreadRepair` when nothing is to be
    written, None for an empty thread.

    When the calls a stopped run left behind are answered, the update is written as the node
    that was to run them (``snapshot.next``, when it is one node: ``tools``), as if it had
    answered them: the graph then goes on from that node's edges, and an agent's model node,
    whose edges do not lead back to itself (``create_agent``), is not taken as the writer."""
    source = "langgraph.repair_thread"
    update_for = _writer(graph, key)  # an unsupported reducer raises before anything is read
    messages = _messages_of(snapshot.values, key)
    if not isinstance(messages, Sequence) or not messages:
        return None
    frontier: Literal["answer", "keep"] = "answer"
    if _paused(graph, snapshot, source):
        frontier = "keep"
    chosen = _provider(provider, model, source)
    mended = _mend_thread(messages, chosen, policy, source, frontier=frontier)
    if mended.failed or mended.messages is messages or not mended.changes:
        return ThreadRepair(
            problems_before=tuple(mended.problems),
            failed=mended.failed,
            problems_left=tuple(mended.left),
        )
    try:
        update = update_for(_with_ids(mended.messages))
    except Exception:
        logger.exception("toolmend failed on %s; nothing was written", source)
        problems = tuple(mended.problems)
        return ThreadRepair(problems_before=problems, failed=True, problems_left=problems)
    return mended, update, _writer_node(snapshot, mended, messages)


def _writer_node(snapshot: Any, mended: Mended, messages: Sequence[Any]) -> str | None:
    """The node that was to run the thread's last calls (``snapshot.next``, one node name),
    when the repair answered them; else ``None``."""
    upcoming = set(getattr(snapshot, "next", ()) or ())
    try:
        last = appending.frontier_start(messages, FORMAT)
    except Exception:  # the repair read it: this cannot fail but on a toolmend bug
        logger.exception("toolmend failed on langgraph.repair_thread; LangGraph picks the node")
        return None
    answered = any(c.code == "answered_missing_call" and c.index == last for c in mended.changes)
    if answered and len(upcoming) == 1:
        return str(upcoming.pop())
    return None


def _paused(graph: Any, snapshot: Any, source: str) -> bool:
    """Whether the thread in ``snapshot`` is paused on purpose, so that resuming runs the calls
    still waiting: an interrupt is open, or the graph was compiled to stop before the next node
    (or after a node, with a node to run next). A failure reading the graph is toolmend's:
    logged, and the calls are kept waiting (what resuming would need)."""
    try:
        if getattr(snapshot, "interrupts", ()) or any(
            getattr(task, "interrupts", ()) for task in getattr(snapshot, "tasks", ()) or ()
        ):
            return True
        upcoming = tuple(getattr(snapshot, "next", ()) or ())
        if not upcoming:
            return False
        before = getattr(graph, "interrupt_before_nodes", None) or ()
        after = getattr(graph, "interrupt_after_nodes", None) or ()
        return before == "*" or any(node in before for node in upcoming) or bool(after)
    except Exception:
        logger.exception("toolmend failed reading the thread's state on %s; its calls wait", source)
        return True


def _mend_thread(
    messages: Sequence[Any],
    provider: str,
    policy: Policy | str | None,
    source: str,
    *,
    frontier: Literal["answer", "keep"] = "keep",
) -> Mended:
    """``messages`` mended as the history wrapper mends a store: under ``frontier="keep"`` (the
    default of a policy given by name or left out) a clean live frontier (the last calling
    message, its calls waiting, followed only by some of their results) is set aside and left
    waiting, and the rest is repaired as a request would be; a messy frontier is repaired in
    place under the ``frontier="keep"`` policy. Under ``frontier="answer"`` the waiting calls
    are answered, as in a request."""
    keep = hook_policy(policy, frontier=frontier)
    start = len(messages)
    try:
        if keep.frontier == "keep" and appending.waiting_calls(messages, FORMAT):
            start = appending.frontier_start(messages, FORMAT)
    except InvalidHistoryError:
        pass  # mend says what it cannot read
    except Exception:
        logger.exception("toolmend failed on %s; nothing was written", source)
        return Mended(messages, failed=True)
    if start == len(messages):
        options = HookOptions(provider=provider, policy=keep, on_loop="off")
        return mend(
            messages,
            provider=provider,
            source=source,
            options=options,
            format=FORMAT,
            request=False,
        )
    part = list(messages[:start])
    answer = replace(keep, frontier="answer")
    options = HookOptions(provider=provider, policy=answer, on_loop="off")
    mended = mend(
        part, provider=provider, source=source, options=options, format=FORMAT, request=False
    )
    if mended.failed or mended.messages is part:
        return Mended(messages, problems=mended.problems, failed=mended.failed, left=mended.left)
    return replace(mended, messages=[*mended.messages, *messages[start:]])


def _writer(graph: Any, key: str) -> Any:
    """How to write a whole new ``key`` list into ``graph``'s state: through ``add_messages``
    (remove all, then the list), or as the new value of a channel without a reducer."""
    channels = getattr(graph, "channels", None)
    channel = channels.get(key) if isinstance(channels, Mapping) else None
    if isinstance(channel, LastValue):
        return list
    if channel is None or (
        isinstance(channel, BinaryOperatorAggregate) and _is_add_messages(channel.operator)
    ):
        return lambda messages: [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages]
    raise ValueError(
        f"repair_thread writes the thread's {key!r} through LangGraph's add_messages reducer "
        f"(MessagesState, create_agent, create_react_agent); this graph's {key!r} channel is a "
        f"{type(channel).__name__} with reducer {getattr(channel, 'operator', None)!r}"
    )


def _is_add_messages(operator: Any) -> bool:
    operator = getattr(operator, "func", operator)  # functools.partial(add_messages, format=...)
    return getattr(operator, "__module__", None) == "langgraph.graph.message"


def _with_ids(messages: Sequence[Any]) -> list[Any]:
    """``messages``, each with an id of its own: ``add_messages`` matches messages by id, and
    gives a message without one an id by setting it on the object."""
    seen: set[Any] = set()
    out: list[Any] = []
    for message in messages:
        ident = getattr(message, "id", None)
        if (not ident or ident in seen) and hasattr(message, "model_copy"):
            ident = str(uuid.uuid4())
            message = message.model_copy(update={"id": ident})
        seen.add(ident)
        out.append(message)
    return out
