"""LiteLLM's routes that carry a history, and the passes toolmend makes over one client request.

:mod:`toolmend.integrations.litellm` asks this module two things, neither of which needs
LiteLLM itself:

* **Which history a call type carries, in which format, judged by which profile**
  (:data:`ROUTES`, :func:`route_profile`). LiteLLM fires ``async_pre_call_deployment_hook`` for
  chat completions (``messages``, OpenAI-shaped), for ``anthropic_messages`` (the proxy's
  ``/v1/messages``: Anthropic-shaped ``messages``, with the system prompt in its own ``system``
  argument) and for ``aresponses`` / ``responses`` (the proxy's ``/v1/responses``: Responses
  ``input`` items; a plain string input carries no history).
* **Whether a hook call is the first pass over a client request or a second one**
  (:class:`Passes`). LiteLLM serves a route the deployment does not speak by translating the
  request and calling its own entry point for another route, which fires the hook again with
  the same logging object: ``/v1/messages`` to an OpenAI model becomes ``aresponses``, to
  Gemini and most others ``acompletion``; ``/v1/responses`` to a provider without a Responses
  API becomes ``acompletion``. The second pass sees the history LiteLLM built: it finds
  nothing when the first pass did its work, and repairs only what the translation broke or what
  only the deployment's provider forbids. It writes no line of its own when the first pass
  wrote one, and its changes join the first pass's record, so a client request gets one line
  and one record. A new deployment attempt on the first route (a retry, a fallback) starts over.
  :meth:`Passes.summary` gives the request as the passes so far left it (its record, the
  problems left, its time), for its guardrail entry and its telemetry.

The state of a client request lives in a :class:`weakref.WeakKeyDictionary` keyed by LiteLLM's
logging object (one per client request, handed from route to route), so nothing is added to
LiteLLM's objects but the record itself and nothing outlives the request.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from toolmend import _routing as routing

__all__ = ["ROUTES", "Passes", "Route", "Summary", "route_profile"]


@dataclass(frozen=True)
class Route:
    """One LiteLLM call type that carries a history."""

    name: str
    """The call type (``CallTypes`` value): ``"acompletion"``, ``"anthropic_messages"``."""
    key: str
    """The request argument that holds the history: ``"messages"`` or ``"input"``."""
    format: str
    """The toolmend format of that history."""

    def continues(self, kwargs: Mapping[str, object]) -> bool:
        """Whether the history is only the tail of one the provider stores (a Responses
        ``previous_response_id`` or ``conversation``): its outputs may answer calls toolmend
        cannot see, so it is left alone (LiteLLM's bridge to another provider rebuilds the
        whole history, and the chat pass judges that)."""
        return self.format == "openai-responses" and any(
            kwargs.get(name) for name in ("previous_response_id", "conversation")
        )


_CHAT = ("messages", "openai")
_ANTHROPIC = ("messages", "anthropic")
_RESPONSES = ("input", "openai-responses")

ROUTES: Mapping[str, Route] = {
    name: Route(name, *shape)
    for name, shape in {
        "completion": _CHAT,
        "acompletion": _CHAT,
        "anthropic_messages": _ANTHROPIC,
        "aanthropic_messages": _ANTHROPIC,
        "responses": _RESPONSES,
        "aresponses": _RESPONSES,
    }.items()
}
"""LiteLLM call type -> the history it carries. Any other call type is left alone."""

_ANTHROPIC_PROFILES = frozenset({"anthropic", "anthropic-thinking", "anthropic-no-prefill"})
"""The profiles of an Anthropic deployment (the model and ``thinking`` pick among them)."""


def route_profile(
    route: Route, deployment: str, *, thinking: object = None, model: str | None = None
) -> str:
    """The profile that judges ``route``'s history for a deployment whose provider has the
    profile ``deployment`` (:func:`toolmend.integrations.litellm.profile_for`, or the hook's
    ``provider=``).

    * OpenAI-shaped ``messages``: ``deployment`` itself (LiteLLM converts them for it).
    * Responses ``input``: ``openai-responses`` (the variant the deployment's ``model`` picks,
      :func:`toolmend._routing.request_profile`), the only profile that reads Responses items.
      A deployment with a Responses API gets them as they are; for any other LiteLLM's bridge
      turns each ``function_call`` and its ``function_call_output`` into a tool call and its
      tool message, so the Responses pairing rules are what the bridge needs, and the chat pass
      that follows judges the result for the deployment's own profile.
    * Anthropic ``messages`` to Anthropic (passed through as they are): Anthropic's profile for
      the deployment's ``model`` and the request's ``thinking`` setting.
    * Anthropic ``messages`` to any other provider: ``anthropic`` with thinking off, whatever
      the request's setting. LiteLLM's translation keeps the pairing Anthropic's rules demand
      (every ``tool_use`` answered by a ``tool_result`` at the head of the next user turn, no
      result without its call, ids unique) as tool messages right after their call (chat) or
      ``function_call_output`` items right after their ``function_call`` (Responses), which is
      what OpenAI and Gemini require; a history looser than that (text before the results, an
      interrupted call, a stale result) comes out as one those providers refuse. The thinking
      rules are the Anthropic API's alone: ``anthropic-thinking`` would write the last tool
      exchange out as text when its assistant turn has no thinking block, which a GPT or Gemini
      turn never has. What only the deployment's provider forbids (Gemini's function names,
      Mistral's ids) cannot be judged on an Anthropic-shaped history: the second pass, on the
      history LiteLLM translated, applies it.
    """
    if route.format == "openai":
        return deployment
    if route.format == "openai-responses":
        return routing.request_profile("openai-responses", model=model)
    if deployment in _ANTHROPIC_PROFILES:
        return routing.request_profile("anthropic", model=model, thinking=thinking)
    return "anthropic"


Pass = Literal["first", "second", "skip"]
"""``"first"``: repair and report; ``"second"``: repair quietly and merge into the first pass's
record; ``"skip"``: the first pass failed open, so the translated request goes out as it is."""


@dataclass(slots=True)
class _Request:
    """What toolmend did with one client request so far."""

    route: str
    setup: bool
    """The first pass ran in the sync setup wrapper; the hook may still fire for the same
    route (sync ``responses`` to a deployment with a Responses API)."""
    spoke: bool = False
    """The first pass wrote a line (changes, problems left, a loop, a failure)."""
    failed: bool = False
    record: dict[str, Any] | None = None
    later: dict[str, dict[str, list[dict[str, Any]]]] | None = None
    """Route -> the changes and problems its second pass found (replaced when a route is tried
    again, so an inner retry is not counted twice); made by the first second pass with
    something to tell (most requests have none, and a hook pays for every object it makes)."""
    names: dict[str, Any] | None = None
    """``provider`` and ``model`` of the latest second pass with something to tell, for a record
    the first pass did not start."""
    provider: str = "unknown"
    """The profile the first pass held the history to."""
    started: float = 0.0
    """When the first pass started (epoch seconds)."""
    ended: float = 0.0
    """When the latest pass ended (epoch seconds)."""
    spent: float = 0.0
    """Seconds toolmend spent on the request, every pass added up."""
    current: dict[str, Any] | None = None
    """The request's record as it is now (the first pass's, merged with the later ones')."""
    left: tuple[str, ...] = ()
    """The codes of the problems the history sent still has (after the latest pass)."""


class Summary(NamedTuple):
    """A client request so far, for its guardrail entry and its telemetry."""

    route: str
    """The route of the first pass."""
    provider: str
    record: dict[str, Any] | None
    failed: bool
    started: float
    ended: float
    spent: float
    left: tuple[str, ...]


class Passes:
    """The state of each client request in flight, keyed by LiteLLM's logging object."""

    def __init__(self) -> None:
        self._requests: weakref.WeakKeyDictionary[object, _Request] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def begin(self, logging_obj: object, route: str) -> Pass:
        """Which pass a hook call for ``route`` on ``logging_obj`` is."""
        if logging_obj is None:
            return "first"
        with self._lock:
            request = self._requests.get(logging_obj)
            if request is None:
                return "first"
            if request.route == route and not request.setup:
                return "first"  # another deployment attempt of the same client request
            request.setup = False  # the hook after the sync setup pass: once only
        return "skip" if request.failed else "second"

    def first(
        self,
        logging_obj: object,
        route: str,
        record: dict[str, Any] | None,
        *,
        failed: bool = False,
        setup: bool = False,
        provider: str = "unknown",
        started: float = 0.0,
        spent: float = 0.0,
        left: tuple[str, ...] = (),
    ) -> None:
        """Note the first pass over the client request ``logging_obj`` stands for: its
        ``record``, and whether toolmend ``failed`` (then a second pass is skipped: the
        translated request goes out as LiteLLM built it, and the failure is logged once); its
        ``provider`` profile, when it ``started`` (epoch seconds), the seconds it ``spent`` and the
        codes of the problems ``left`` in the history it sent."""
        if logging_obj is None:
            return
        request = _Request(
            route,
            setup,
            spoke=record is not None or failed,
            record=record,
            provider=provider,
            started=started,
            ended=started + spent,
            spent=spent,
            current=record,
            left=left,
        )
        request.failed = failed or bool(record and record.get("failed"))
        with self._lock:
            self._requests[logging_obj] = request

    def spoke(self, logging_obj: object) -> bool:
        """Whether the first pass over this client request wrote a line."""
        request = self._requests.get(logging_obj) if logging_obj is not None else None
        return request is not None and request.spoke

    def summary(self, logging_obj: object) -> Summary | None:
        """The client request ``logging_obj`` stands for, as the passes so far left it."""
        request = self._requests.get(logging_obj) if logging_obj is not None else None
        if request is None:
            return None
        return Summary(
            request.route,
            request.provider,
            request.current,
            request.failed,
            request.started,
            request.ended,
            request.spent,
            request.left,
        )

    def second(
        self,
        logging_obj: object,
        route: str,
        record: dict[str, Any] | None,
        *,
        ended: float = 0.0,
        spent: float = 0.0,
        failed: bool = False,
        left: tuple[str, ...] = (),
    ) -> tuple[bool, dict[str, Any] | None]:
        """Merge a second pass's ``record`` into the client request's record: whether the
        record on the logging object must be replaced, and by what (``None``: nothing to tell).
        Each change and problem of a second pass carries ``"route"``: its index is into the
        history LiteLLM built for that route. Its problems are kept only when the first pass
        left none (the same problems seen again in the translated shape are not news). The pass
        ``ended`` then (epoch seconds) and ``spent`` that many seconds; ``failed`` says toolmend
        failed on it (outside the repair, so ``record`` cannot say it); ``left`` are the codes of
        the problems the history it sent still has, which the request's now are."""
        with self._lock:
            request = self._requests.get(logging_obj)
            if request is None:  # pragma: no cover - begin() said "second"
                return True, record
            request.ended = max(request.ended, ended)
            request.spent += spent
            request.failed = request.failed or failed
            request.left = left
            if record is None:
                if request.later is None or request.later.pop(route, None) is None:
                    return False, None  # nothing new: the record in place stays
            else:
                request.spoke = True  # a later pass of this request stays quiet
                request.names = {"provider": record["provider"], "model": record["model"]}
                if request.later is None:
                    request.later = {}
                request.later[route] = {
                    "changes": [{**c, "route": route} for c in record["changes"]],
                    "problems": [{**p, "route": route} for p in record["problems"]],
                    "problems_left": [
                        {**p, "route": route} for p in record.get("problems_left", ())
                    ],
                }
                if record.get("failed"):
                    request.failed = True
            request.current = self._merged(request)
            return True, request.current

    @staticmethod
    def _merged(request: _Request) -> dict[str, Any] | None:
        if not request.later:
            return request.record
        base = request.record or {
            **(request.names or {}),
            "changes": [],
            "problems": [],
            "loops": [],
            "failed": False,
        }
        merged = {**base, "changes": list(base["changes"]), "problems": list(base["problems"])}
        for found in request.later.values():
            merged["changes"].extend(found["changes"])
            if not base["problems"]:
                merged["problems"].extend(found["problems"])
        merged["problems_before"] = list(merged["problems"])
        # what the request sent still breaks: the last pass's history is the one sent
        merged["problems_left"] = list(found["problems_left"])
        merged["failed"] = request.failed
        if any(merged[key] for key in ("changes", "problems", "problems_left", "loops", "failed")):
            return merged
        return None
