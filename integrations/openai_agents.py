"""OpenAI Agents SDK: repair each model call's input, and what a ``Session`` hands back.

Usage
-----

.. code-block:: python

    from agents import RunConfig, Runner
    from toolmend.integrations.openai_agents import call_model_input_filter, session_input_callback

    config = RunConfig(call_model_input_filter=call_model_input_filter,
                       session_input_callback=session_input_callback,
                       model_provider=ToolMendModelProvider())  # the retry after a 400
    result = await Runner.run(agent, "hi", session=session, run_config=config)

Two hooks, both of ``RunConfig``:

* :data:`call_model_input_filter` (a :class:`ToolMendInputFilter`; build your own with
  ``provider=``, ``policy=``, ``on_loop=``, ``model=``) runs right before every model call of
  the run loop and returns a new ``ModelInputData`` whose ``input`` (Responses input items) is
  repaired for the model the agent calls; ``instructions`` are kept as they are.
* :data:`session_input_callback` (a :class:`ToolMendSessionInput`) merges the ``Session``'s
  history with the turn's new input and drops what would poison the run: an orphan
  ``function_call_output``, a ``function_call`` without output (the SDK drops those itself
  too), a reasoning item without its follower; it never adds or rewrites an item, because the
  SDK stores what the callback returns that it did not hand over. :func:`repair_session` heals
  the stored items themselves, once.

Which rules the input must meet
-------------------------------
The SDK always hands the filter Responses items, whatever the model is. What the provider then
receives depends on the model (:func:`target_for`):

* an ``OpenAIResponsesModel`` (the SDK's default for OpenAI) sends the items as they are: they
  are judged and repaired with the ``openai-responses`` profile;
* an ``OpenAIChatCompletionsModel`` or a ``LitellmModel`` converts the items to Chat Completions
  messages first (``agents.models.chatcmpl_converter.Converter.items_to_messages``), so the
  rules to meet are the chat provider's, on the converted messages: the provider comes from the
  model name and base URL (:mod:`toolmend._routing`), or LiteLLM's own provider of the model
  (:func:`toolmend.integrations.litellm.profile_for`), through the core's converted-profile
  routing. A one-pass scan of the items (:func:`quick_chat_valid`) vouches for their
  conversion where it can (the ``openai`` and ``deepseek`` profiles); otherwise the SDK's own
  converter converts them, as the model will (instructions first), and the chat profile judges
  the result (the strict policy raises what it finds there). When the profile refuses it, the
  repair is made on the items, the only thing the filter may return (the log line names item
  indexes): calls and outputs are paired by the Responses
  pairing rules (:data:`_PAIRING`), then each output with another item between it and its
  call (valid for Responses, whose outputs only have to come after their calls; a 400 for Chat
  Completions, whose tool messages must follow the assistant message holding the calls) is
  moved right after the call (:func:`_outputs_after_calls`), and the conversion is judged
  again. What a chat provider wants that items cannot say (Mistral's 9-character call ids) is
  logged as left.

The agent's model is read from the filter's data (``CallModelData.agent.model``). The filter
cannot see the ``RunConfig``: when the ``RunConfig`` sets ``model=`` (or a model provider that
turns names into Chat Completions models), pass the same model to
``ToolMendInputFilter(model=...)``, or name the profile with ``provider=``. A model name with
no ``Model`` object is resolved as the SDK's default provider would: ``litellm/...`` names go
to LiteLLM, any other name to OpenAI's Responses API (Chat Completions after
``agents.set_default_openai_api("chat_completions")``).

After the provider's 400
------------------------
No hook of the SDK sees the model's error and can send again: ``call_model_input_filter`` runs
before the call, ``RunHooks``/``AgentHooks`` only observe (``on_llm_start``/``on_llm_end``; an
error ends the run before any hook hears of it), and the SDK's own retry
(``ModelSettings(retry=...)``, ``Model.get_retry_advice``) resends the same input. The place
is the ``Model`` itself: :class:`ToolMendModel` wraps the agent's model, and
:class:`ToolMendModelProvider` wraps a ``ModelProvider`` (``RunConfig(model_provider=...)``;
the SDK's default ``MultiProvider`` when none is given) so that every model it makes is wrapped
(the provider is only asked for models given by name; an agent whose ``model`` is a ``Model``
object is wrapped with :class:`ToolMendModel`). When the wrapped model raises the provider's
HTTP 400 about the history's tool calls (``openai.BadRequestError``, LiteLLM's
``BadRequestError``), ``get_response`` calls it **once** more with the input items
:mod:`toolmend.integrations.rescue` rewrote (a rule toolmend knows, or the tool exchanges
written as text, judged as Responses items: ``openai-responses``); ``stream_response`` does the
same when the error comes before the first event (a provider's 400 does), and lets an error
after it through. The run's items and the session are not changed. ``rescue=False`` (or
``TOOLMEND_RESCUE=0``) re-raises the provider's error as it came. One limit of wrapping: the
SDK tells an ``OpenAIChatCompletionsModel`` by its class in one place (output guardrails with a
server-managed conversation), which a wrapped one no longer matches.

Failing open
------------
The SDK lets an exception raised in the filter or the callback abort the run. Every toolmend
failure is therefore logged once on logger ``toolmend`` with its traceback and the input goes
out as it came; only :class:`toolmend.ToolLoopError` (``on_loop="raise"``) and
:class:`toolmend.ToolChainError` (``policy="strict"``) get out, because the options asked for
them. Neither hook changes the lists or items it is handed.

Import it as :mod:`toolmend.integrations.openai_agents`; it needs
``pip install 'toolmend[openai-agents]'``.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import AsyncIterator, Coroutine, Mapping, Sequence
from time import perf_counter
from typing import TYPE_CHECKING, Any, NamedTuple

from toolmend import _escape as escape
from toolmend import _fastpath as fastpath
from toolmend import _routing as routing
from toolmend._api import check, repair
from toolmend._loops import detect_loops
from toolmend._policy import Mode, Policy
from toolmend._report import InvalidHistoryError, Problem, Repair, ToolChainError, ToolLoopError
from toolmend.profiles import Profile, get_profile

from . import budget as budgets
from . import telemetry
from .hooks import (
    HookOptions,
    OnLoop,
    change_codes,
    check_names,
    compatible_provider,
    hook_policy,
    log_source,
    mend,
    problem_codes,
)
from .rescue import enabled, retry_history

try:
    from agents.models import _openai_shared
    from agents.models.chatcmpl_converter import Converter
    from agents.models.interface import Model, ModelProvider
    from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
    from agents.run_config import ModelInputData
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "toolmend.integrations.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'toolmend[openai-agents]'"
    ) from error

if TYPE_CHECKING:
    from agents.agent_output import AgentOutputSchemaBase
    from agents.handoffs import Handoff
    from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
    from agents.memory import Session
    from agents.model_settings import ModelSettings
    from agents.models.interface import ModelTracing
    from agents.retry import ModelRetryAdvice, ModelRetryAdviceRequest
    from agents.run_config import CallModelData
    from agents.tool import Tool
    from openai.types.responses.response_prompt_param import ResponsePromptParam

__all__ = [
    "FORMAT",
    "Target",
    "ToolMendInputFilter",
    "ToolMendModel",
    "ToolMendModelProvider",
    "ToolMendSessionInput",
    "call_model_input_filter",
    "quick_chat_valid",
    "repair_session",
    "session_input_callback",
    "target_for",
]

logger = logging.getLogger("toolmend")

FORMAT = "openai-responses"
"""The format of every item list the SDK hands the hooks: Responses input items."""

_RESPONSES = "openai-responses"
_CHAT_FORMAT = "openai"


def _rules(*codes: str) -> Profile:
    """The ``openai-responses`` profile with only the rules ``codes`` name."""
    profile = get_profile(_RESPONSES)
    checks = {code: check for code, check in profile.checks.items() if code in codes}
    return dataclasses.replace(profile, checks=checks, strict_checks={})


_PAIRING = _rules(
    "orphan_result",
    "missing_result",
    "call_without_id",
    "result_without_id",
    "result_without_output",
)
"""The Responses rules that still matter once a model converts the items to Chat Completions
messages: how calls and outputs pair. The rest of the ``openai-responses`` profile is about
fields the converter drops or needs as they are (item ids: a Chat Completions model's own items
carry ``__fake_id__``, and the converter refuses an assistant ``message`` item without an id;
reasoning items become ``reasoning_content`` or nothing), so applying it would change items for
nothing, every turn, or break the conversion."""

_SESSION = _rules("orphan_result", "missing_result", "reasoning_without_follower")
"""The rules a session's items are held to, whatever model reads them: a call and its output
pair, and a reasoning item keeps its follower. Their repairs drop or move items, never rewrite
one: the SDK stores every item the session callback returns that it did not hand over, so a
rewritten item would be stored twice. Item ids are left alone: a session written by a Chat
Completions model holds ``__fake_id__`` items its converter needs as they are (the input
filter removes them from a Responses request, where they do not belong)."""


class Target(NamedTuple):
    """Where a model call's input goes: the profile it must meet, and how it is sent."""

    profile: str
    """The toolmend profile of the provider that receives the request."""
    chat: bool
    """True when the model converts the items to Chat Completions messages before sending
    (``OpenAIChatCompletionsModel``, ``LitellmModel``): the profile judges the conversion."""
    model: Any = None
    """The ``Model`` object, when there is one (its converter settings are the SDK's)."""
    name: str | None = None
    """The model name."""


def _name_of(model: object) -> str | None:
    name = getattr(model, "model", model)
    return name if isinstance(name, str) and name else None


def _is_litellm(model: object) -> bool:
    # by class name: agents.extensions.models.litellm_model imports litellm, which this module
    # must not import for users who do not use it
    return any(cls.__name__ == "LitellmModel" for cls in type(model).__mro__)


def _litellm_profile(name: str, base_url: object = None) -> str:
    """The profile of a LiteLLM model name, as the LiteLLM hook judges it (LiteLLM's own
    provider of the model, through the converted-profile routing)."""
    from . import litellm as litellm_hook  # only when the agent uses LiteLLM: litellm is there

    return litellm_hook.profile_for(name, None, base_url if isinstance(base_url, str) else None)


@functools.lru_cache(maxsize=256)
def _chat_profile(name: str | None, base_url: str | None = None) -> str:
    """The profile of an OpenAI-compatible Chat Completions endpoint: the provider of the base
    URL's host, else the model's (:func:`toolmend.integrations.hooks.compatible_provider`: its
    chat template's rules when toolmend knows them, else the one provider serving it), else
    OpenAI; without a base URL, the one provider serving the model, else OpenAI."""
    if base_url:
        provider = compatible_provider(routing.provider_for_base_url(base_url), name)
    else:
        provider = routing.provider_for_model(name) or "openai"
    return routing.converted_profile(provider, name)


def target_for(model: object) -> Target:
    """Where a request of ``model`` goes (an agent's ``model``: a ``Model``, a name, or None).

    >>> target_for("gpt-5").profile
    'openai-responses'
    """
    while isinstance(model, ToolMendModel):  # the rescue's wrapper sends as its model does
        model = model.wrapped
    if isinstance(model, OpenAIChatCompletionsModel):
        base_url = getattr(getattr(model, "_client", None), "base_url", None)
        name = _name_of(model)
        profile = _chat_profile(name, None if base_url is None else str(base_url))
        return Target(profile, True, model, name)
    if _is_litellm(model):
        litellm_name = _name_of(model) or ""
        profile = _litellm_profile(litellm_name, getattr(model, "base_url", None))
        return Target(profile, True, model, litellm_name)
    if model is None or isinstance(model, str):
        # what the SDK's default provider (MultiProvider) makes of a name
        name = model or None
        if name is not None and name.startswith("litellm/"):
            rest = name.removeprefix("litellm/")
            return Target(_litellm_profile(rest), True, None, rest)
        if name is not None and name.startswith("openai/"):
            name = name.removeprefix("openai/")
        if _openai_shared.get_use_responses_by_default():
            return Target(_RESPONSES, False, None, name)
        return Target(_chat_profile(name), True, None, name)
    # OpenAIResponsesModel (HTTP or websocket), or a Model of the user's own: it receives
    # Responses items, and what it does with them is its own business
    return Target(_RESPONSES, False, model, _name_of(model))


# --- the Chat Completions view of the items ----------------------------------------------------


def _converted(items: Sequence[Any], target: Target, instructions: str | None) -> list[Any] | None:
    """The Chat Completions messages the model sends for ``items`` (the SDK's own converter,
    called as the model calls it, instructions first as a system message), or None when the
    SDK cannot convert them (it then raises its own error on the model call)."""
    model = target.model
    try:
        if model is not None and _is_litellm(model):
            # as LitellmModel._fetch_response calls it; its thinking blocks (on with a reasoning
            # effort) do not change how calls and results pair, so they are left out here
            messages = Converter.items_to_messages(
                items,
                base_url=getattr(model, "base_url", None),
                preserve_tool_output_all_content=True,
                model=model.model,
                should_replay_reasoning_content=getattr(
                    model, "should_replay_reasoning_content", None
                ),
            )
            # LiteLLM's model puts tool results after their calls itself for these providers
            fix = getattr(model, "_fix_tool_message_ordering", None)
            name = str(model.model).lower()
            if fix is not None and any(p in name for p in ("anthropic", "claude", "gemini")):
                messages = fix(messages)
        elif model is not None:
            client = getattr(model, "_client", None)
            base_url = getattr(client, "base_url", None)
            messages = Converter.items_to_messages(
                items,
                model=target.name,
                base_url=str(base_url) if base_url is not None else None,
                should_replay_reasoning_content=getattr(
                    model, "should_replay_reasoning_content", None
                ),
            )
        else:
            messages = Converter.items_to_messages(items, model=target.name)
    except Exception:  # the caller's input; the SDK says what is wrong with it on the call
        return None
    if instructions:
        messages.insert(0, {"role": "system", "content": instructions})
    return list(messages)


def _chat_problems(messages: list[Any], profile: str) -> tuple[Problem, ...]:
    """What ``profile`` finds in the converted ``messages`` (nothing when it vouches)."""
    if fastpath.vouch(messages, provider=profile, format=_CHAT_FORMAT) is not None:
        return ()
    try:
        return tuple(check(messages, provider=profile, format=_CHAT_FORMAT))
    except InvalidHistoryError:
        return ()  # a message the chat rules cannot read: the provider says what it thinks


_CONVERTED_ROLES = frozenset({"user", "system", "developer", "assistant", "tool"})
"""The roles the SDK's converter writes."""

_SCANNED_CODES = frozenset(
    {
        "arguments_not_string",
        "call_id_too_long",
        "call_name_empty",
        "call_shape",
        "call_without_id",
        "duplicate_result",
        "empty_history",
        "empty_tool_calls",
        "invalid_role",
        "missing_result",
        "null_content",
        "orphan_result",
        "result_without_id",
        "unknown_result_id",
    }
)
"""The problem codes :func:`quick_chat_valid` rules out on the conversion."""

_SCANNED_FIELDS = tuple(
    f.name
    for f in dataclasses.fields(Profile)
    if f.name not in ("name", "checks", "strict_checks", "aliases", "pairing")
    and f.name not in ("call_id_max_length", "known_roles")
)


_SCANNABLE: dict[str, bool] = {}
"""Profile name -> :func:`_scannable` of it (the profiles are fixed tables)."""


def _scannable(profile: Profile) -> bool:
    """Whether :func:`quick_chat_valid` can answer for ``profile`` (``openai``, ``deepseek``):
    its rules on Chat Completions messages are about pairing, call ids, shapes and roles only,
    which the scan reads off the items; any other rule (Mistral's roles and ids, DeepSeek's
    reasoner, the block providers behind LiteLLM...) needs the conversion itself."""
    default = Profile(name=profile.name, checks={})
    return (
        profile.pairing in ("adjacent", "count")
        and profile.checks.keys() <= _SCANNED_CODES
        and (profile.known_roles is None or profile.known_roles >= _CONVERTED_ROLES)
        and all(getattr(profile, name) == getattr(default, name) for name in _SCANNED_FIELDS)
    )


def quick_chat_valid(items: Sequence[Any], profile: Profile) -> bool:
    """True only when the SDK's Chat Completions conversion of ``items`` passes ``profile``
    (a :func:`_scannable` one): one pass over the items, no conversion. Conservative: anything
    but plain dicts of messages, calls, outputs and reasoning items answers False, and the
    conversion decides. A test asserts that True always agrees with the conversion judged.

    The converter makes one assistant message of a run of ``function_call`` items (with the
    assistant text before it) and a tool message of each output where it stands, so the
    conversion pairs when each run's outputs follow it at once, each answering a call of the
    run once, and all of the run's calls are answered before anything else comes."""
    max_length = profile.call_id_max_length or 1 << 30
    calls: set[str] | None = None  # the call ids of the open run, None when none is open
    answered: set[str] = set()
    messages = 0
    for item in items:
        if type(item) is not dict:
            return False
        kind = item.get("type")
        if kind == "function_call":
            call_id, name = item.get("call_id"), item.get("name")
            if (
                type(call_id) is not str
                or not call_id
                or len(call_id) > max_length
                or type(name) is not str
                or not name
                or type(item.get("arguments")) is not str
            ):
                return False
            if calls is None or answered:
                if calls is not None and answered != calls:
                    return False
                calls, answered = set(), set()
            if call_id in calls:
                return False
            calls.add(call_id)
            continue
        if kind == "function_call_output":
            call_id = item.get("call_id")
            if calls is None or call_id not in calls or call_id in answered:
                return False
            output = item.get("output")
            if type(output) is not str:  # a list of parts may convert to nothing
                return False
            answered.add(call_id)
            continue
        if calls is not None:
            if answered != calls:
                return False
            calls = None
        if kind == "reasoning":
            continue
        role, content = item.get("role"), item.get("content")
        if role not in _CONVERTED_ROLES or role == "tool" or kind not in (None, "message"):
            return False
        if not content or not isinstance(content, (str, list)):
            return False
        messages += 1
    return messages > 0 and (calls is None or answered == calls)


def _outputs_after_calls(items: Sequence[Any]) -> tuple[list[Any], list[tuple[int, str]]]:
    """``items`` with every ``function_call_output`` moved right after the run of
    ``function_call`` items holding its call (and the outputs already there), and the moves
    (old index, call id).

    Why: the SDK's converter makes one assistant message of a run of ``function_call`` items
    and a tool message of each output where it stands. Responses only needs an output after its
    call; Chat Completions needs the tool messages right after the assistant message holding
    the calls. This is toolmend's chat repair of a result away from its call (``moved_result``)
    done on the items, so that the conversion has it."""
    segments: list[list[Any]] = []  # each: [calls, outputs] or [[item], []]
    owner: dict[str, list[Any]] = {}
    open_run: list[Any] | None = None
    moves: list[tuple[int, str]] = []
    for index, item in enumerate(items):
        kind, call_id = _kind(item)
        if kind == "function_call":
            if open_run is None or open_run[1]:
                open_run = [[item], []]
                segments.append(open_run)
            else:
                open_run[0].append(item)
            if call_id is not None:
                owner.setdefault(call_id, open_run)
            continue
        if kind == "function_call_output" and call_id is not None and call_id in owner:
            segment = owner[call_id]
            if segment is not open_run:
                moves.append((index, call_id))
            segment[1].append(item)
            continue
        segments.append([[item], []])
        open_run = None
    if not moves:
        return list(items), []
    return [item for calls, outputs in segments for item in (*calls, *outputs)], moves


def _kind(item: Any) -> tuple[str | None, str | None]:
    if isinstance(item, Mapping):
        kind, call_id = item.get("type"), item.get("call_id")
    else:
        kind, call_id = getattr(item, "type", None), getattr(item, "call_id", None)
    return (
        kind if isinstance(kind, str) else None,
        call_id if isinstance(call_id, str) else None,
    )


# --- call_model_input_filter -------------------------------------------------------------------


class ToolMendInputFilter:
    """A ``RunConfig.call_model_input_filter`` that repairs each model call's input items.

    **Parameters:**

    * **provider** - *(optional)* the profile every call must meet; ``"openai-responses"`` judges
      the items as they are, a chat profile judges their Chat Completions conversion. Left out,
      :func:`target_for` the agent's model (or ``model``) decides.
    * **policy** - *(optional)* a :class:`toolmend.Policy`, ``"repair"`` (default),
      ``"strict"`` or ``"report"``.
    * **on_loop** - *(optional)* the loop guard: ``"warn"`` (default), ``"raise"``
      (:class:`toolmend.ToolLoopError` before the call is made) or ``"off"``.
    * **model** - *(optional)* the ``RunConfig``'s ``model`` when it sets one (the filter only
      sees the agent); a ``Model`` or a name.

    >>> from agents import RunConfig  # doctest: +SKIP
    >>> RunConfig(call_model_input_filter=ToolMendInputFilter(on_loop="raise"))  # doctest: +SKIP
    """

    def __init__(
        self,
        provider: str | None = None,
        policy: Policy | str | None = None,
        on_loop: OnLoop = "warn",
        model: Model | str | None = None,
    ) -> None:
        # an unknown provider or policy name fails here, not once per model call; a toolmend
        # bug is logged and the filter built anyway (each call fails open)
        check_names(provider=provider, policy=policy, source="ToolMendInputFilter")
        self.options = HookOptions(provider=provider, policy=policy, on_loop=on_loop)
        self.model = model
        self._last: tuple[tuple[Any, ...], Target] | None = None

    def __repr__(self) -> str:
        o = self.options
        return (
            f"ToolMendInputFilter(provider={o.provider!r}, policy={o.policy!r}, "
            f"on_loop={o.on_loop!r}, model={self.model!r})"
        )

    def __call__(
        self, data: CallModelData[Any]
    ) -> ModelInputData | Coroutine[Any, Any, ModelInputData]:
        """The model call's input, repaired; ``data.model_data`` itself when nothing changed or
        when toolmend failed (logged). A long input is repaired off the event loop within the
        budget (:mod:`toolmend.integrations.budget`): the filter then returns a coroutine,
        which the SDK awaits."""
        items = data.model_data.input
        if isinstance(items, list) and budgets.offloads(items, self.options.budget):
            return self._later(data)
        return self._filtered(data)

    async def _later(self, data: CallModelData[Any]) -> ModelInputData:
        source = "agents.call_model_input_filter"

        def given_up() -> ModelInputData:
            telemetry.failed_open(source, self.options.provider, reason="time_budget")
            return data.model_data

        return await budgets.run(
            data.model_data.input,
            lambda: self._filtered(data),
            given_up,
            source=source,
            budget=self.options.budget,
        )

    def _filtered(self, data: CallModelData[Any]) -> ModelInputData:
        model_data = data.model_data
        try:
            items = self.repaired(data)
        except (ToolLoopError, ToolChainError):
            raise
        except Exception:
            logger.exception(
                "toolmend failed on agents.call_model_input_filter; the input was sent unchanged"
            )
            telemetry.failed_open("agents.call_model_input_filter", self.options.provider)
            return model_data
        if items is None:
            return model_data
        return ModelInputData(input=items, instructions=model_data.instructions)

    def target(self, data: CallModelData[Any]) -> Target:
        """Where this call goes: :func:`target_for` the filter's ``model`` or the agent's,
        with ``provider`` (when given) as the profile."""
        agent = getattr(data, "agent", None)
        model = self.model if self.model is not None else getattr(agent, "model", None)
        # the run loop asks for the same model on every call: the last answer, while the
        # model, its name, its client and the SDK's default API are the ones it was for
        key = (
            model,
            getattr(model, "model", None),
            getattr(model, "_client", None),
            _openai_shared.get_use_responses_by_default(),
        )
        last = self._last
        if last is not None and all(last[0][i] is key[i] for i in range(4)):
            target = last[1]
        else:
            target = target_for(model)
            self._last = (key, target)
        provider = self.options.provider
        if provider is None:
            return target
        profile = get_profile(provider).name
        return target._replace(profile=profile, chat=profile != _RESPONSES)

    def repaired(self, data: CallModelData[Any]) -> list[Any] | None:
        """The repaired input items, or None when they need no change."""
        model_data = data.model_data
        items = model_data.input
        if not isinstance(items, list) or not items:
            return None
        target = self.target(data)
        source = f"agents.call_model_input_filter({target.name or 'default model'})"
        if not target.chat:
            mended = mend(
                items, provider=_RESPONSES, source=source, options=self.options, format=FORMAT
            )
            return None if mended.messages is items else list(mended.messages)
        started = perf_counter()
        try:
            found = self._for_chat(items, target, model_data.instructions, source)
        except (ToolLoopError, ToolChainError) as refused:
            # refused before anything is sent: problems left, as mend() reports it
            if telemetry.is_active():
                found_loops = refused.problems if isinstance(refused, ToolLoopError) else ()
                refused_codes = telemetry.codes_of(found_loops)
                _report_chat(
                    source, target.profile, started, (), len(refused.problems), refused_codes
                )
            raise
        if telemetry.is_active():
            _, codes, left, loops = found
            _report_chat(source, target.profile, started, codes, left, loops)
        return found[0]

    def _loop_guard(self, items: list[Any], source: str, profile: str) -> tuple[str, ...]:
        """The loop guard of :func:`toolmend.integrations.hooks.mend`, on the items (the
        Responses format reads their live run straight off them)."""
        if self.options.on_loop == "off":
            return ()
        loops = detect_loops(
            items, format=FORMAT, raise_=self.options.on_loop == "raise", live_only=True
        )
        if loops:
            logger.warning(
                "toolmend loop guard on %s for %s: %s",
                log_source(source),
                escape.log(profile),
                problem_codes(loops),
            )
        return telemetry.codes_of(loops)

    def _for_chat(
        self, items: list[Any], target: Target, instructions: str | None, source: str
    ) -> tuple[list[Any] | None, tuple[str, ...], int, tuple[str, ...]]:
        """``items`` made to pass ``target``'s chat profile once the model converts them (see
        the module docstring), or None when the conversion passes as it is; then the codes of
        the changes made, how many problems are left and what the loop guard found."""
        profile = get_profile(target.profile)
        scannable = _SCANNABLE.get(target.profile)
        if scannable is None:
            scannable = _SCANNABLE[target.profile] = _scannable(profile)
        if scannable and quick_chat_valid(items, profile):
            # nearly every call: the items vouch for their conversion without making it
            return None, (), 0, self._loop_guard(items, source, target.profile)
        messages = _converted(items, target, instructions)
        if messages is None:
            return None, (), 0, ()  # the SDK cannot convert them either, and says why
        # judged on what the provider receives: the converted messages
        loops = self._loop_guard(items, source, target.profile)
        problems = _chat_problems(messages, target.profile)
        if not problems:
            return None, (), 0, loops
        policy = hook_policy(self.options.policy)
        if policy.mode is Mode.STRICT:
            raise ToolChainError(problems=problems)
        if policy.mode is Mode.REPORT:
            _log_left(source, target.profile, problems, "and changed nothing")
            return None, (), len(problems), loops
        repaired = repair(items, provider=_PAIRING, format=FORMAT, policy=policy)
        fixed, moved = _outputs_after_calls(repaired.messages)
        changes = change_codes(repaired.changes) + [
            f"moved_result@{index}[{escape.log(str(call_id))}]" for index, call_id in moved
        ]
        if changes:
            logger.info(
                "toolmend repaired %s for %s: %s",
                log_source(source),
                escape.log(target.profile),
                " ".join(changes),
            )
        converted = _converted(fixed, target, instructions)
        left = _chat_problems(converted, target.profile) if converted is not None else ()
        if left:
            _log_left(source, target.profile, left, "that the items cannot mend")
        codes = telemetry.codes_of(repaired.changes) + ("moved_result",) * len(moved)
        return (fixed if changes else None), codes, len(left), loops


def _report_chat(
    source: str,
    profile: str,
    started: float,
    codes: tuple[str, ...],
    left: int,
    loops: tuple[str, ...],
) -> None:
    """The telemetry report of one model call judged on the Chat Completions path."""
    telemetry.record(
        telemetry.HookReport(
            telemetry.hook_name(source),
            profile,
            telemetry.outcome_of(changed=bool(codes), problems_left=left),
            codes,
            left,
            loops,
            perf_counter() - started,
        )
    )


def _log_left(source: str, profile: str, problems: Sequence[Problem], why: str) -> None:
    """The WARNING for problems of the Chat Completions conversion left as they are."""
    logger.warning(
        "toolmend found %d problem(s) in %s for %s (in the Chat Completions conversion) %s: %s",
        len(problems),
        log_source(source),
        escape.log(profile),
        why,
        problem_codes(problems),
    )


call_model_input_filter = ToolMendInputFilter()
"""The ready filter: ``RunConfig(call_model_input_filter=call_model_input_filter)``."""


# --- session_input_callback --------------------------------------------------------------------


_SESSION_POLICY = Policy(missing_result="remove_call")
"""A session's history is stored: a call with no output is left out of the run (what the SDK
itself does with such calls), never answered, because the SDK stores every item the callback
returns that it did not hand over, and a stored placeholder would shadow a real output that a
resumed run (a tool approval) still adds."""


class ToolMendSessionInput:
    """A ``RunConfig.session_input_callback``: the session's history followed by the turn's new
    items, with what would poison the run dropped or moved next to its call.

    The items are held to the session rules (:data:`_SESSION`: a session stores Responses items
    whatever model reads them; the input filter then meets the model's own rules). By default a
    ``function_call`` without output is left out, not answered: see :data:`_SESSION_POLICY`.
    Dropped items stay in the store; :func:`repair_session` removes them there.

    **Parameters:**

    * **policy** - *(optional)* a :class:`toolmend.Policy`, ``"repair"`` (default, with calls
      left out rather than answered), ``"strict"`` or ``"report"``.
    """

    def __init__(self, policy: Policy | str | None = None) -> None:
        check_names(policy=policy, source="ToolMendSessionInput")
        if policy is None or policy == "repair":
            policy = _SESSION_POLICY
        self.policy = hook_policy(policy)

    def __repr__(self) -> str:
        return f"ToolMendSessionInput(policy={self.policy!r})"

    def __call__(self, history_items: list[Any], new_items: list[Any]) -> list[Any]:
        """The history, then the new items, repaired (their own objects where unchanged)."""
        combined = [*history_items, *new_items]
        source = "agents.session_input_callback"
        try:
            started = perf_counter()
            result = repair(combined, provider=_SESSION, format=FORMAT, policy=self.policy)
            _log(source, result)
            if result.changes and telemetry.is_active():
                # the session's stored items, not the request: the input filter counts that
                report = telemetry.HookReport(
                    source,
                    _RESPONSES,
                    "repaired",
                    telemetry.codes_of(result.changes),
                    duration=perf_counter() - started,
                    request=False,
                )
                telemetry.record(report)
        except ToolChainError:
            raise
        except InvalidHistoryError as error:  # the caller's data, not a toolmend bug
            logger.warning(
                "toolmend cannot read the items on %s (%s); left as they are",
                log_source(source),
                escape.terminal(error),
            )
            return combined
        except Exception:
            logger.exception(
                "toolmend failed on %s; the items were left as they are", log_source(source)
            )
            return combined
        return combined if result.messages is combined else list(result.messages)


def _log(source: str, result: Repair) -> None:
    """The one line a repair of the session rules writes (codes, indexes and call ids)."""
    if result.changes:
        logger.info(
            "toolmend repaired %s for openai-responses (session rules): %s",
            log_source(source),
            " ".join(change_codes(result.changes)),
        )
    elif result.problems:
        logger.warning(
            "toolmend found %d problem(s) in %s and changed nothing: %s",
            len(result.problems),
            log_source(source),
            problem_codes(result.problems),
        )


session_input_callback = ToolMendSessionInput()
"""The ready callback: ``RunConfig(session_input_callback=session_input_callback)``."""


# --- healing the store ---------------------------------------------------------------------


async def repair_session(
    session: Session,
    *,
    policy: Policy | str | None = None,
) -> Repair:
    """Repair the items ``session`` stores, in place, and return the repair.

    Reads every item (``get_items``), repairs them with the session rules (:data:`_SESSION`) and,
    when anything changed, replaces the store's content (``clear_session``, then ``add_items``
    with the repaired list). The default policy answers a call with no output with toolmend's
    placeholder only where something follows it, and leaves the last calls waiting
    (``frontier="keep"``); ``policy=toolmend.Policy(missing_result="remove_call")`` removes such
    calls instead. Not atomic: run it when no run writes to the session.
    """
    items = await session.get_items()
    result = repair(
        items,
        provider=_SESSION,
        format=FORMAT,
        policy=policy if policy is not None else Policy(frontier="keep"),
    )
    if result.messages is not items and result.changes:
        await session.clear_session()
        await session.add_items(list(result.messages))
    _log("agents.repair_session", result)
    return result


# --- the retry after a provider's 400 ----------------------------------------------------------

_RESCUE_SOURCE = "agents.ToolMendModel"


class ToolMendModel(Model):
    """A ``Model`` that answers the provider's HTTP 400 about tool history by calling the model
    it wraps once more, with the input items rescued (see the module docstring).

    **Parameters:**

    * **model** - the agent's ``Model`` (``OpenAIResponsesModel``,
      ``OpenAIChatCompletionsModel``, ``LitellmModel``, one of your own).
    * **rescue** - *(optional)* retry after such a 400 (default True); ``False`` re-raises the
      provider's error as it came, as does ``TOOLMEND_RESCUE=0``.

    >>> Agent(name="a", model=ToolMendModel(OpenAIResponsesModel("gpt-5", api)))  # doctest: +SKIP
    """

    def __init__(self, model: Model, *, rescue: bool = True) -> None:
        self.wrapped = model
        """The model every call goes to."""
        self.rescue = rescue

    def __repr__(self) -> str:
        return f"ToolMendModel({self.wrapped!r}, rescue={self.rescue!r})"

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> ModelResponse:
        """The wrapped model's response; after a 400 about tool history, that of one retry."""
        send = functools.partial(
            self.wrapped.get_response,
            system_instructions,
            model_settings=model_settings,
            tools=tools,
            output_schema=output_schema,
            handoffs=handoffs,
            tracing=tracing,
            previous_response_id=previous_response_id,
            conversation_id=conversation_id,
            prompt=prompt,
        )
        try:
            return await send(input=input)
        except Exception as error:
            retry = await self._retry(input, error)
            if retry is None:
                raise
        return await send(input=retry)

    async def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        """The wrapped model's events; after a 400 about tool history that came before the
        first event, those of one retry (an error after an event is let through)."""
        send = functools.partial(
            self.wrapped.stream_response,
            system_instructions,
            model_settings=model_settings,
            tools=tools,
            output_schema=output_schema,
            handoffs=handoffs,
            tracing=tracing,
            previous_response_id=previous_response_id,
            conversation_id=conversation_id,
            prompt=prompt,
        )
        started = False
        try:
            async for event in send(input=input):
                started = True
                yield event
            return
        except Exception as error:
            retry = None if started else await self._retry(input, error)
            if retry is None:
                raise
        async for event in send(input=retry):
            yield event

    async def _retry(self, items: object, error: Exception) -> list[Any] | None:
        """The rescued input items, or None: the caller re-raises ``error``. A long input is
        rescued off the event loop, within the budget."""
        if not enabled(self.rescue) or not isinstance(items, list) or not items:
            return None
        return await budgets.run(
            items,
            lambda: self._rescued(items, error),
            lambda: None,
            source=_RESCUE_SOURCE,
        )

    def _rescued(self, items: list[Any], error: Exception) -> list[Any] | None:
        rescued = retry_history(
            items,
            error,
            provider=_RESPONSES,
            source=f"{_RESCUE_SOURCE}({_name_of(self.wrapped) or 'model'})",
            format=FORMAT,
            rescue_on=self.rescue,
        )
        return None if rescued is None else list(rescued.messages)

    def get_retry_advice(self, request: ModelRetryAdviceRequest) -> ModelRetryAdvice | None:
        """The wrapped model's advice to the SDK's own retry."""
        return self.wrapped.get_retry_advice(request)

    async def _cleanup_on_run_end(self, owner: object) -> None:
        await self.wrapped._cleanup_on_run_end(owner)

    async def close(self) -> None:
        """Close the wrapped model."""
        await self.wrapped.close()


class ToolMendModelProvider(ModelProvider):
    """A ``RunConfig(model_provider=...)`` whose every model is a :class:`ToolMendModel`.

    **Parameters:**

    * **provider** - *(optional)* the ``ModelProvider`` that makes the models (default: the
      SDK's ``MultiProvider``, as a ``RunConfig`` without one uses).
    * **rescue** - *(optional)* as for :class:`ToolMendModel` (default True).

    >>> RunConfig(model_provider=ToolMendModelProvider())  # doctest: +SKIP
    """

    def __init__(self, provider: ModelProvider | None = None, *, rescue: bool = True) -> None:
        if provider is None:
            from agents.models.multi_provider import MultiProvider

            provider = MultiProvider()
        self.wrapped = provider
        """The provider that makes the models."""
        self.rescue = rescue

    def __repr__(self) -> str:
        return f"ToolMendModelProvider({self.wrapped!r}, rescue={self.rescue!r})"

    def get_model(self, model_name: str | None) -> Model:
        """The wrapped provider's model for ``model_name``, wrapped."""
        model = self.wrapped.get_model(model_name)
        return (
            model if isinstance(model, ToolMendModel) else ToolMendModel(model, rescue=self.rescue)
        )

    async def aclose(self) -> None:
        """Close the wrapped provider."""
        await self.wrapped.aclose()
