"""Google ADK: repair the ``contents`` of every model call an ADK agent makes, and heal a
session's stored events.

Usage
-----

.. code-block:: python

    from google.adk.runners import Runner
    from toolmend.integrations.adk import (
        ToolMendPlugin, before_model_callback, on_model_error_callback)

    runner = Runner(agent=agent, app_name="app", session_service=sessions,
                    plugins=[ToolMendPlugin()])                 # every agent of the runner
    agent = LlmAgent(..., before_model_callback=before_model_callback,  # or one agent
                     on_model_error_callback=on_model_error_callback)

How it works
------------
ADK builds each model call's ``llm_request.contents`` (google-genai ``types.Content`` objects)
from the session's events, then runs the plugins' and the agent's ``before_model_callback``,
then sends the request. The callback repairs ``llm_request.contents`` in toolmend's ``gemini``
format for the profile the request meets (:func:`toolmend.request_profile` on
``llm_request.model``: ``gemini-3`` for a Gemini 3 model, which wants thought signatures), puts
the repaired list in its place and returns None, so the request goes on. ADK's contents are
shallow copies of the session's Contents that share the nested call and response objects with
the stored events; toolmend never changes an object it is handed (a changed Content or Part is
a new one), so the session stays exactly as it was.

A toolmend failure is logged once on logger ``toolmend`` and the request goes out as ADK built
it: the callback never raises for toolmend's own sake (ADK's ``PluginManager`` would turn that
into a ``RuntimeError`` that ends the run). Only what the caller asks for raises:
``policy="strict"`` (:class:`toolmend.ToolChainError`) and ``on_loop="raise"``
(:class:`toolmend.ToolLoopError`).

After the provider's 400
------------------------
When the model still raises the provider's HTTP 400 about the history's tool calls
(google-genai's ``ClientError`` from ``Gemini``, LiteLLM's ``BadRequestError`` from
``LiteLlm``), ADK runs the plugins' ``on_model_error_callback``, then the agent's; the first
that returns an ``LlmResponse`` answers the model call in the error's place (it goes through
``after_model_callback`` like the model's own). :meth:`ToolMendPlugin.on_model_error_callback`
and :func:`on_model_error_callback` ask :mod:`toolmend.integrations.rescue` for the contents to
send once more (a rule toolmend knows, or the tool exchanges written as text), call the agent's
own model **once** with a copy of the request holding them (``stream=False``: the one answer
a callback can return, also under SSE streaming) and return its answer. ADK's request and the
session's events stay as they were. The plugin is the better place (it sees every agent of the
runner and runs first); the plain callback serves an agent without plugins. When the retry
fails too, the plain callback lets its error through, while the plugin logs it and returns None
so that ADK raises the provider's first error as it came (an error raised by a plugin reaches
the caller wrapped in ADK's ``RuntimeError``). ``ToolMendPlugin(rescue=False)`` (or a
``"report"`` or ``"strict"`` policy, which ask toolmend to change nothing on its own), leaving
the plain callback out, or ``TOOLMEND_RESCUE=0`` turns the retry off; a live (bidi) run is never
retried.

:func:`repair_events` and :func:`repair_session` repair the stored events themselves, so a
poisoned session is healed once instead of being repaired on every request (and runs without
the callback, or under an ADK that raises while building the request, work again); see
``docs/hooks.md``.

It needs ``pip install 'toolmend[adk]'`` (``google-adk``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from toolmend import _api as api
from toolmend import _policy as policies
from toolmend._edits import Blocks, Keep, Placeholder, source_index
from toolmend._policy import Policy
from toolmend._report import Change, Problem, ToolChainError, ToolLoopError
from toolmend._routing import request_profile

from . import budget as budgets
from . import telemetry
from .hooks import HookOptions, OnLoop, check_names, hook_policy, log_repair, mend
from .rescue import enabled, provider_error, retry_history

try:
    from google.adk.events import Event
    from google.adk.plugins.base_plugin import BasePlugin
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "toolmend.integrations.adk needs Google ADK: pip install 'toolmend[adk]'"
    ) from error

if TYPE_CHECKING:
    from google.adk.agents.callback_context import CallbackContext
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.sessions import BaseSessionService, Session
    from google.genai import types

__all__ = [
    "RepairedSession",
    "ToolMendPlugin",
    "before_model_callback",
    "on_model_error_callback",
    "repair_events",
    "repair_session",
]

logger = logging.getLogger("toolmend")

FORMAT = "gemini"
PROVIDER = "gemini"

_SHARED_STATE = ("app:", "user:", "temp:")
"""State key prefixes that are not the session's own: ``app:`` and ``user:`` state is stored
once for every session of the app or user, ``temp:`` state is never stored."""


def _repair_request(llm_request: LlmRequest, options: HookOptions, source: str) -> None:
    """Replace ``llm_request.contents`` with its repair, when it needs one.

    A toolmend failure is logged and the request is left as it was."""
    repaired = _repaired_contents(llm_request, options, source)
    if repaired is not None:
        llm_request.contents = repaired


def _repaired_contents(
    llm_request: LlmRequest, options: HookOptions, source: str
) -> list[types.Content] | None:
    """The repair of ``llm_request.contents``, or ``None`` when they need none or toolmend
    failed (logged). Changes nothing: the async path runs it off the event loop."""
    try:
        contents = llm_request.contents
        if not contents:
            return None
        model = llm_request.model
        provider = options.provider or request_profile(
            PROVIDER, model=model if isinstance(model, str) else None
        )
        mended = mend(contents, provider=provider, source=source, options=options, format=FORMAT)
        return None if mended.messages is contents else list(mended.messages)
    except (ToolLoopError, ToolChainError):
        raise
    except Exception:
        logger.exception("toolmend failed on %s; the request was sent as ADK built it", source)
        telemetry.failed_open(source, options.provider)
        return None


class ToolMendPlugin(BasePlugin):
    """An ADK plugin that repairs the contents of every model call of a ``Runner`` or ``App``.

    **Parameters:**

    * **provider** - *(optional)* the provider profile; by default ``gemini``, or ``gemini-3``
      for a Gemini 3 model (:func:`toolmend.request_profile` on the request's model).
    * **policy** - *(optional)* a :class:`toolmend.Policy`, ``"repair"`` (default),
      ``"strict"`` or ``"report"``.
    * **on_loop** - *(optional)* the loop guard: ``"warn"`` (default), ``"raise"``
      (:class:`toolmend.ToolLoopError` before the call is made) or ``"off"``.
    * **rescue** - *(optional)* after the provider's HTTP 400 about tool history, call the
      model once more with the contents rewritten (:meth:`on_model_error_callback`; default
      True), under the ``repair`` policy only; ``False`` lets ADK raise the provider's error
      as it came.
    * **name** - *(optional)* the plugin's name in the runner (default ``"toolmend"``).

    >>> runner = Runner(agent=agent, app_name="app", session_service=sessions,
    ...                 plugins=[ToolMendPlugin()])  # doctest: +SKIP
    """

    def __init__(
        self,
        provider: str | None = None,
        policy: Policy | str | None = None,
        on_loop: OnLoop = "warn",
        *,
        rescue: bool = True,
        name: str = "toolmend",
    ) -> None:
        super().__init__(name)
        # an unknown provider or policy name fails here; a toolmend bug is logged and the
        # plugin built anyway (each call fails open)
        check_names(provider=provider, policy=policy, source="ToolMendPlugin")
        self.options = HookOptions(provider=provider, policy=policy, on_loop=on_loop, rescue=rescue)

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> None:
        """Repair ``llm_request.contents`` in place of the list ADK built; the call goes on.
        A long history is repaired off the event loop, within the budget
        (:mod:`toolmend.integrations.budget`): past it the request goes as ADK built it."""
        source = "adk.ToolMendPlugin"
        repaired = await budgets.run(
            llm_request.contents or (),
            lambda: _repaired_contents(llm_request, self.options, source),
            lambda: telemetry.failed_open(source, self.options.provider, reason="time_budget"),
            source=source,
            budget=self.options.budget,
        )
        if repaired is not None:
            llm_request.contents = repaired

    async def on_model_error_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest, error: Exception
    ) -> LlmResponse | None:
        """After the provider's 400 about tool history, the answer of one more call of the
        agent's model with the contents rescued; ``None`` (ADK raises ``error``) otherwise, and
        when the retry fails too (logged)."""
        source = "adk.ToolMendPlugin"
        retry = await _retry(callback_context, llm_request, error, self.options, source)
        if retry is None:
            return None
        llm, request = retry
        try:
            return await _send_once(llm, request)
        except Exception as failed:
            found = provider_error(failed)
            logger.warning(
                "toolmend's rescued retry of %s failed too (%s %s); ADK raises the provider's "
                "first error",
                source,
                type(failed).__name__,
                found[0] if found else "-",
            )
            return None


def before_model_callback(callback_context: CallbackContext, llm_request: LlmRequest) -> None:
    """An ``LlmAgent(before_model_callback=...)`` that repairs the request's contents for the
    request's model (the defaults of :class:`ToolMendPlugin`) and lets the call go on."""
    _repair_request(llm_request, _DEFAULT, "adk.before_model_callback")


async def on_model_error_callback(
    callback_context: CallbackContext, llm_request: LlmRequest, error: Exception
) -> LlmResponse | None:
    """An ``LlmAgent(on_model_error_callback=...)`` that answers the provider's 400 about tool
    history with one more call of the agent's model, the contents rescued
    (:mod:`toolmend.integrations.rescue`), and returns that answer; ``None`` (ADK raises
    ``error``) for any other error. If the retry fails too, its error is raised."""
    source = "adk.on_model_error_callback"
    retry = await _retry(callback_context, llm_request, error, _DEFAULT, source)
    if retry is None:
        return None
    llm, request = retry
    return await _send_once(llm, request)


_DEFAULT = HookOptions()

_TRIED: weakref.WeakSet[BaseException] = weakref.WeakSet()
"""The model errors a rescue was tried for: when the plugin's retry fails, ADK hands the same
error to the agent's callbacks, which must not retry it again."""


async def _retry(
    callback_context: CallbackContext,
    llm_request: LlmRequest,
    error: Exception,
    options: HookOptions,
    source: str,
) -> tuple[BaseLlm, LlmRequest] | None:
    """The agent's model and a copy of ``llm_request`` holding the rescued contents, or
    ``None``: rescue off, a live run, not a 400 about tool history, or toolmend failed
    (logged). A long history is rescued off the event loop, within the budget."""
    contents = llm_request.contents
    if not enabled(options.rescues) or not contents or error in _TRIED:
        return None
    _TRIED.add(error)  # the plugin and the agent's callback: one retry between them
    try:
        llm = await _agent_model(callback_context)
        model = llm_request.model
        provider = options.provider or request_profile(
            PROVIDER, model=model if isinstance(model, str) else None
        )
    except Exception:
        logger.exception("toolmend failed while rescuing %s after a 400", source)
        return None
    if llm is None:
        return None
    rescued = await budgets.run(
        contents,
        lambda: retry_history(
            contents,
            error,
            provider=provider,
            source=source,
            format=FORMAT,
            rescue_on=options.rescues,
        ),
        lambda: None,
        source=source,
        budget=options.budget,
    )
    if rescued is None:
        return None
    return llm, llm_request.model_copy(update={"contents": list(rescued.messages)})


async def _agent_model(callback_context: CallbackContext) -> BaseLlm | None:
    """The model the failed call went to: the agent's, as ADK's flow resolves it (``None`` in
    a live run, whose connection a callback cannot reopen)."""
    context = callback_context._invocation_context
    if context.live_request_queue is not None:
        return None
    agent = context.agent
    resolve = getattr(agent, "canonical_model_async", None)
    if resolve is not None:
        llm: BaseLlm = await resolve(callback_context)
        return llm
    model: BaseLlm | None = getattr(agent, "canonical_model", None)
    return model


async def _send_once(llm: BaseLlm, request: LlmRequest) -> LlmResponse | None:
    """``request`` sent to ``llm`` once, unstreamed: its (last) response."""
    final: LlmResponse | None = None
    async with contextlib.aclosing(llm.generate_content_async(request, stream=False)) as replies:
        async for reply in replies:
            final = reply
    return final


# --- the stored events ---------------------------------------------------------------------------


def _has_history(event: Event) -> bool:
    return bool(event.content is not None and event.content.parts)


def repair_events(
    events: Sequence[Event],
    *,
    provider: str = PROVIDER,
    policy: Policy | str | None = None,
) -> list[Event]:
    """``events`` (a session's stored events) with their contents repaired for ``provider``.

    The contents of the events that carry parts are read as one Gemini history and repaired
    (see :func:`toolmend.repair`). A lost call gets toolmend's placeholder answer, except the
    calls of long-running tools at the very end (``Event.long_running_tool_ids``), which their
    tools may still answer; a call at the very end that nothing follows is a history Gemini
    accepts, and stays (once the next user message is stored after it, it is answered).

    An event whose content is unchanged comes back as the very same object; a changed one is a
    copy with the new content (each content stays in the event it came from, whatever is
    dropped next to it; responses gathered from several events to follow their call go in the
    first one's); a placeholder answer to a lost call is a new event of the call's author and
    invocation, timed between its neighbours; an event whose content was dropped (an
    orphan response, a duplicate) is kept without content when it carries actions (a state
    delta, an artifact), and left out otherwise. Events without content keep their place.
    ``events`` and its objects are never changed.
    """
    repaired, _, _ = _repaired_events(events, provider=provider, policy=policy)
    return repaired


def _repaired_events(
    events: Sequence[Event], *, provider: str, policy: Policy | str | None
) -> tuple[list[Event], Sequence[Change], Sequence[Problem]]:
    """The repaired events, the changes made and the problems found in the stored contents."""
    rows = [i for i, event in enumerate(events) if _has_history(event)]
    contents = [events[i].content for i in rows]
    waiting = bool(rows) and _waits(events[rows[-1]])
    chosen = policies.as_policy(policy, frontier="keep" if waiting else "answer")
    module = api.format_of(contents, FORMAT)
    profile = api.profile_for(provider, module)
    damaged = api.damage_in(module, contents, profile, chosen) if contents else None
    if damaged is None:
        return list(events), (), ()
    if chosen.mode is not policies.Mode.REPAIR:  # as toolmend.repair: strict raises
        problems = tuple(problem for damage in damaged for problem in damage.problems)
        if chosen.mode is policies.Mode.STRICT:
            raise ToolChainError(problems=problems)
        return list(events), (), problems
    mended = api.mend_damage(module, contents, profile, chosen, damaged)
    problems = tuple(mended.problems)
    if not mended.changes:
        return list(events), (), problems
    sources = _sources(mended, len(contents))
    # the repaired content that takes each old content's place, its event keeping its metadata:
    # the content the plan kept (maybe edited), else one made of it (its responses gathered,
    # merged, written as text) when the plan kept nothing of it; never a placeholder answer
    taker: dict[int, int] = {}
    for wanted in (_KEPT, _MADE):
        for position, (origin, kind) in enumerate(sources):
            if kind == wanted and origin >= 0 and origin not in taker:
                taker[origin] = position
    taken = {rows[origin] for origin in taker}
    out: list[Event] = []
    flushed = 0  # the events before this index are placed, or dropped

    def flush(upto: int) -> None:
        nonlocal flushed
        for index in range(flushed, upto):
            event = events[index]
            if not _has_history(event):
                out.append(event)  # an event without content keeps its place
            elif index not in taken and _carries_actions(event):
                out.append(event.model_copy(update={"content": None}))  # its content dropped
        flushed = max(flushed, upto)

    previous: Event | None = None  # the event of the latest content placed
    for position, content in enumerate(mended.messages):
        origin, _ = sources[position]
        if origin >= 0 and taker.get(origin) == position:
            flush(rows[origin])
            source = events[rows[origin]]
            event = (
                source
                if content is source.content
                else source.model_copy(update={"content": content})
            )
            flushed = max(flushed, rows[origin] + 1)
        else:  # a new content: by the author, in the invocation, of what it came from
            event = _new_event(events[rows[origin]] if origin >= 0 else previous, content)
        out.append(event)
        previous = event
    flush(len(events))
    return _ordered(out), tuple(mended.changes), problems


_KEPT, _MADE, _ANSWER = "kept", "made", "answer"


def _sources(mended: Any, count: int) -> list[tuple[int, str]]:
    """For each repaired content, the index of the old content it comes from (-1: none) and
    how: :data:`_KEPT` (that content, maybe edited), :data:`_MADE` (a new content made of its
    parts: responses gathered from it, a merge, its parts written as text) or :data:`_ANSWER`
    (a placeholder answer to one of its calls)."""
    out: list[tuple[int, str]] = []
    position = 0
    for damage, plan, applied in mended.parts:
        out.extend((i, _KEPT) for i in range(position, damage.low))
        if len(plan.items) != len(applied):  # the block writer makes one content per item
            raise AssertionError("toolmend: a repair plan and its contents differ in length")
        for item in plan.items:
            found = source_index(item)
            kind = _KEPT if isinstance(item, Keep) else _MADE
            if isinstance(item, Placeholder) or (
                isinstance(item, Blocks) and item.parts and isinstance(item.parts[0], Placeholder)
            ):
                kind = _ANSWER
            out.append((damage.low + found if found >= 0 else -1, kind))
        position = damage.high
    out.extend((i, _KEPT) for i in range(position, count))
    return out


def _waits(event: Event) -> bool:
    """Is ``event`` a call of long-running tools still waiting for their answers? ADK runs
    every other tool within the invocation that called it, so an unanswered call of one is
    lost for good (the process stopped, the run was cancelled)."""
    calls = event.get_function_calls()
    waiting = event.long_running_tool_ids or set()
    return bool(calls) and all(c.id in waiting for c in calls)


def _carries_actions(event: Event) -> bool:
    actions = event.actions
    return bool(
        actions is not None
        and (actions.state_delta or actions.artifact_delta or actions.transfer_to_agent)
    )


def _new_event(source: Event | None, content: Any) -> Event:
    """A new event for ``content``, by the author and in the invocation of ``source``."""
    author = "user"
    if source is not None and source.author and source.author != "user":
        author = source.author
    return Event(
        author=author,
        invocation_id=source.invocation_id if source is not None else "",
        branch=source.branch if source is not None else None,
        content=content,
        timestamp=source.timestamp if source is not None else 0.0,
    )


def _ordered(events: list[Event]) -> list[Event]:
    """``events`` with the new ones timed strictly between their neighbours, so a store that
    sorts by timestamp reads them back in this order."""
    out = list(events)
    for i in range(1, len(out)):
        if out[i].timestamp <= out[i - 1].timestamp:
            following = next(
                (e.timestamp for e in out[i + 1 :] if e.timestamp > out[i - 1].timestamp), None
            )
            step = (following - out[i - 1].timestamp) / 2 if following is not None else 1e-3
            out[i] = out[i].model_copy(update={"timestamp": out[i - 1].timestamp + step})
    return out


@dataclasses.dataclass(frozen=True)
class RepairedSession:
    """What :func:`repair_session` did."""

    session: Session
    """The session to use from now on: the repaired one (or the original, when it was valid)."""
    changes: Sequence[Change] = ()
    """The changes made, by index in the session's history (the events that carry content)."""


async def repair_session(
    session_service: BaseSessionService,
    *,
    app_name: str,
    user_id: str,
    session_id: str,
    provider: str = PROVIDER,
    policy: Policy | str | None = None,
    replace: bool = False,
    new_session_id: str | None = None,
) -> RepairedSession:
    """Repair a stored session's events (:func:`repair_events`) and store the repair.

    ADK's session services only append events, so the repair is written as a new session:
    created with the session's own state (its ``app:`` and ``user:`` state is shared and stays
    as it is stored) and the repaired events appended in order (their ``app:`` and ``user:``
    state deltas left out, so that replaying them cannot roll shared state back).

    * ``replace=False`` (default): the new session gets ``new_session_id`` (or an id from the
      service) and the old one is left as it was: nothing is lost if anything fails, and the
      caller switches to ``result.session.id``.
    * ``replace=True``: the old session is deleted and the new one created under the same id.
      Do it while no run uses the session.

    A valid session is not touched: ``result.session`` is it and ``result.changes`` is empty.
    Raises ``ValueError`` when the session does not exist. The policy's ``"strict"`` raises
    :class:`toolmend.ToolChainError` on a broken session; ``"report"`` changes nothing.

    Like every hook it writes one line on logger ``toolmend`` (source ``adk.repair_session``,
    the provider, change codes with content index and call ids; never content): INFO once a
    repair is stored, WARNING for problems found and left (``"report"``), none for a valid
    session.
    """
    session = await session_service.get_session(
        app_name=app_name, user_id=user_id, session_id=session_id
    )
    if session is None:
        raise ValueError(f"no session {session_id!r} for app {app_name!r}, user {user_id!r}")
    hook_policy(policy)  # an unknown policy name raises here
    events, changes, problems = _repaired_events(session.events, provider=provider, policy=policy)
    if not changes:
        log_repair(_SESSION_SOURCE, provider, (), problems=problems)
        return RepairedSession(session)
    own_state = {k: v for k, v in session.state.items() if not k.startswith(_SHARED_STATE)}
    # every copy made before anything is deleted: only the service's own calls come after
    copies = [_without_shared_state(event) for event in events]
    if replace:
        await session_service.delete_session(
            app_name=app_name, user_id=user_id, session_id=session_id
        )
        new_session_id = session_id
    fresh = await session_service.create_session(
        app_name=app_name, user_id=user_id, state=own_state, session_id=new_session_id
    )
    for copy in copies:
        await session_service.append_event(fresh, copy)
    stored = await session_service.get_session(
        app_name=app_name, user_id=user_id, session_id=fresh.id
    )
    log_repair(_SESSION_SOURCE, provider, changes)  # once it is stored, as it happened
    return RepairedSession(stored or fresh, changes)


_SESSION_SOURCE = "adk.repair_session"


def _without_shared_state(event: Event) -> Event:
    """A copy of ``event`` to append: new objects, so the store never shares the original's,
    and no ``app:``/``user:`` keys in its state delta."""
    copy = event.model_copy(deep=True)
    if copy.actions is not None and copy.actions.state_delta:
        copy.actions.state_delta = {
            k: v for k, v in copy.actions.state_delta.items() if not k.startswith(_SHARED_STATE)
        }
    return copy
