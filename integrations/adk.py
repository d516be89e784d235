"""Google ADK: repair the ``contents`` of every model call an ADK agent makes, and heal a
session's stored events.

Usage
-----

.. code-block:: python

    from google.adk.runners import Runner
    from toolmend.integrations.adk import ToolMendPlugin, before_model_callback

    runner = Runner(agent=agent, app_name="app", session_service=sessions,
                    plugins=[ToolMendPlugin()])                 # every agent of the runner
    agent = LlmAgent(..., before_model_callback=before_model_callback)  # or one agent

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

:func:`repair_events` and :func:`repair_session` repair the stored events themselves, so a
poisoned session is healed once instead of being repaired on every request (and runs without
the callback, or under an ADK that raises while building the request, work again); see
``docs/hooks.md``.

It needs ``pip install 'toolmend[adk]'`` (``google-adk``).
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import toolmend
from toolmend import _policy as policies

from .hooks import HookOptions, OnLoop, check_names, hook_policy, mend

try:
    from google.adk.events import Event
    from google.adk.plugins.base_plugin import BasePlugin
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "toolmend.integrations.adk needs Google ADK: pip install 'toolmend[adk]'"
    ) from error

if TYPE_CHECKING:
    from google.adk.agents.callback_context import CallbackContext
    from google.adk.models.llm_request import LlmRequest
    from google.adk.sessions import BaseSessionService, Session

__all__ = [
    "RepairedSession",
    "ToolMendPlugin",
    "before_model_callback",
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
    try:
        contents = llm_request.contents
        if not contents:
            return
        model = llm_request.model
        provider = options.provider or toolmend.request_profile(
            PROVIDER, model=model if isinstance(model, str) else None
        )
        mended = mend(contents, provider=provider, source=source, options=options, format=FORMAT)
        if mended.messages is not contents:
            llm_request.contents = list(mended.messages)
    except (toolmend.ToolLoopError, toolmend.ToolChainError):
        raise
    except Exception:
        logger.exception("toolmend failed on %s; the request was sent as ADK built it", source)


class ToolMendPlugin(BasePlugin):
    """An ADK plugin that repairs the contents of every model call of a ``Runner`` or ``App``.

    **Parameters:**

    * **provider** - *(optional)* the provider profile; by default ``gemini``, or ``gemini-3``
      for a Gemini 3 model (:func:`toolmend.request_profile` on the request's model).
    * **policy** - *(optional)* a :class:`toolmend.Policy`, ``"repair"`` (default),
      ``"strict"`` or ``"report"``.
    * **on_loop** - *(optional)* the loop guard: ``"warn"`` (default), ``"raise"``
      (:class:`toolmend.ToolLoopError` before the call is made) or ``"off"``.
    * **name** - *(optional)* the plugin's name in the runner (default ``"toolmend"``).

    >>> runner = Runner(agent=agent, app_name="app", session_service=sessions,
    ...                 plugins=[ToolMendPlugin()])  # doctest: +SKIP
    """

    def __init__(
        self,
        provider: str | None = None,
        policy: toolmend.Policy | str | None = None,
        on_loop: OnLoop = "warn",
        *,
        name: str = "toolmend",
    ) -> None:
        super().__init__(name)
        # an unknown provider or policy name fails here; a toolmend bug is logged and the
        # plugin built anyway (each call fails open)
        check_names(provider=provider, policy=policy, source="ToolMendPlugin")
        self.options = HookOptions(provider=provider, policy=policy, on_loop=on_loop)

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> None:
        """Repair ``llm_request.contents`` in place of the list ADK built; the call goes on."""
        _repair_request(llm_request, self.options, "adk.ToolMendPlugin")


def before_model_callback(callback_context: CallbackContext, llm_request: LlmRequest) -> None:
    """An ``LlmAgent(before_model_callback=...)`` that repairs the request's contents for the
    request's model (the defaults of :class:`ToolMendPlugin`) and lets the call go on."""
    _repair_request(llm_request, _DEFAULT, "adk.before_model_callback")


_DEFAULT = HookOptions()


# --- the stored events ---------------------------------------------------------------------------


def _has_history(event: Event) -> bool:
    return bool(event.content is not None and event.content.parts)


def repair_events(
    events: Sequence[Event],
    *,
    provider: str = PROVIDER,
    policy: toolmend.Policy | str | None = None,
) -> list[Event]:
    """``events`` (a session's stored events) with their contents repaired for ``provider``.

    The contents of the events that carry parts are read as one Gemini history and repaired
    (see :func:`toolmend.repair`). A lost call gets toolmend's placeholder answer, except the
    calls of long-running tools at the very end (``Event.long_running_tool_ids``), which their
    tools may still answer; a call at the very end that nothing follows is a history Gemini
    accepts, and stays (once the next user message is stored after it, it is answered).

    An event whose content is unchanged comes back as the very same object; a changed one is a
    copy with the new content; a placeholder answer to a lost call is a new event of the call's
    author and invocation, timed between its neighbours; an event whose content was dropped (an
    orphan response, a duplicate) is kept without content when it carries actions (a state
    delta, an artifact), and left out otherwise. Events without content keep their place.
    ``events`` and its objects are never changed.
    """
    repaired, _ = _repaired_events(events, provider=provider, policy=policy)
    return repaired


def _repaired_events(
    events: Sequence[Event], *, provider: str, policy: toolmend.Policy | str | None
) -> tuple[list[Event], Sequence[toolmend.Change]]:
    rows = [i for i, event in enumerate(events) if _has_history(event)]
    contents = [events[i].content for i in rows]
    waiting = bool(rows) and _waits(events[rows[-1]])
    result = toolmend.repair(
        contents,
        provider=provider,
        format=FORMAT,
        policy=policies.as_policy(policy, frontier="keep" if waiting else "answer"),
    )
    if not result.changes:
        return list(events), ()
    new_contents = list(result.messages)
    placed: dict[int, list[Event]] = {}  # original event index -> events that take its place
    matcher = difflib.SequenceMatcher(
        None, [id(c) for c in contents], [id(c) for c in new_contents], autojunk=False
    )
    last = -1  # the original event index the previous new content came from
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                placed.setdefault(rows[i1 + k], []).append(events[rows[i1 + k]])
            last = rows[i2 - 1]
            continue
        olds, news = list(range(i1, i2)), new_contents[j1:j2]
        for k, content in enumerate(news):
            if k < len(olds):  # a content changed in place: the event keeps its metadata
                origin = events[rows[olds[k]]]
                placed.setdefault(rows[olds[k]], []).append(
                    origin.model_copy(update={"content": content})
                )
                last = rows[olds[k]]
            else:  # a new content (a placeholder answer): after the last one placed
                placed.setdefault(last, []).append(_new_event(events, last, content))
        for k in olds[len(news) :]:  # a content dropped
            origin = events[rows[k]]
            placed.setdefault(rows[k], [])
            if _carries_actions(origin):
                placed[rows[k]].append(origin.model_copy(update={"content": None}))
    out: list[Event] = list(placed.get(-1, ()))
    for i, event in enumerate(events):
        out.extend(placed.get(i, ()) if i in placed else (event,))
    return _ordered(out), result.changes


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


def _new_event(events: Sequence[Event], after: int, content: Any) -> Event:
    """A new event for ``content``, by the author and in the invocation of ``events[after]``."""
    source = events[after] if after >= 0 else None
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
    changes: Sequence[toolmend.Change] = ()
    """The changes made, by index in the session's history (the events that carry content)."""


async def repair_session(
    session_service: BaseSessionService,
    *,
    app_name: str,
    user_id: str,
    session_id: str,
    provider: str = PROVIDER,
    policy: toolmend.Policy | str | None = None,
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
    """
    session = await session_service.get_session(
        app_name=app_name, user_id=user_id, session_id=session_id
    )
    if session is None:
        raise ValueError(f"no session {session_id!r} for app {app_name!r}, user {user_id!r}")
    hook_policy(policy)  # an unknown policy name raises here
    events, changes = _repaired_events(session.events, provider=provider, policy=policy)
    if not changes:
        return RepairedSession(session)
    own_state = {k: v for k, v in session.state.items() if not k.startswith(_SHARED_STATE)}
    if replace:
        await session_service.delete_session(
            app_name=app_name, user_id=user_id, session_id=session_id
        )
        new_session_id = session_id
    fresh = await session_service.create_session(
        app_name=app_name, user_id=user_id, state=own_state, session_id=new_session_id
    )
    for event in events:
        await session_service.append_event(fresh, _without_shared_state(event))
    stored = await session_service.get_session(
        app_name=app_name, user_id=user_id, session_id=fresh.id
    )
    return RepairedSession(stored or fresh, changes)


def _without_shared_state(event: Event) -> Event:
    """A copy of ``event`` to append: new objects, so the store never shares the original's,
    and no ``app:``/``user:`` keys in its state delta."""
    copy = event.model_copy(deep=True)
    if copy.actions is not None and copy.actions.state_delta:
        copy.actions.state_delta = {
            k: v for k, v in copy.actions.state_delta.items() if not k.startswith(_SHARED_STATE)
        }
    return copy
