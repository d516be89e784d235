"""LiteLLM: repair the tool history of every call that carries one (``completion``, the
Anthropic-shaped ``anthropic_messages`` and the Responses API's ``responses``), sync or async,
streamed or not, through ``litellm``, ``litellm.Router`` and the LiteLLM Proxy (its
``/v1/chat/completions``, ``/v1/messages`` and ``/v1/responses``).

Usage
-----

.. code-block:: python

    import litellm
    from toolmend.integrations.litellm import ToolMend

    litellm.callbacks = [ToolMend()]  # provider=None, policy=None, on_loop="warn"

and, for the proxy, in ``config.yaml``:

.. code-block:: yaml

    litellm_settings:
      callbacks: toolmend.integrations.litellm.proxy_handler

Options: ``provider=`` forces one toolmend profile for every chat call, and stands for the
deployment's provider on the other routes (default: worked out per deployment attempt, see
below); ``policy=`` is a :class:`toolmend.Policy` or ``"repair"`` (the
default), ``"strict"`` (raise :class:`toolmend.ToolChainError`) or ``"report"`` (only log);
``on_loop=`` is the loop guard: ``"warn"`` logs, ``"raise"`` fails the call with
:class:`toolmend.ToolLoopError` before anything is sent, ``"off"``; ``rescue=`` (default
``True``) sends a call once more after the provider's 400 about its tool history (see "The
rescue" below; ``TOOLMEND_RESCUE=0`` turns it off everywhere).

How it works
------------
LiteLLM hands the hook each route's history before its own per-provider transformation, so it
is repaired in its own shape (:mod:`toolmend.integrations.litellm_routes` has the table and the
reasons):

* ``completion`` / ``acompletion``: OpenAI-shaped ``messages`` (``format="openai"``), for the
  profile of the provider it is going to: the anthropic, gemini and bedrock profiles know what
  an OpenAI-shaped history must look like to survive LiteLLM's conversion (to Gemini, the
  ``gemini-litellm`` variant: LiteLLM's converter names each function response after its call,
  so a tool message needs no ``name``).
* ``anthropic_messages`` (``/v1/messages``, Claude Code): Anthropic-shaped ``messages``
  (``format="anthropic"``; the ``system`` argument is left as it is). To Anthropic, Anthropic's
  profile for the request's ``thinking``; to any other provider ``anthropic`` with thinking off,
  since LiteLLM's translation keeps Anthropic's pairing (each ``tool_use`` answered at the head
  of the next user turn) as the adjacency OpenAI and Gemini require, and Anthropic's thinking
  rules do not apply to a GPT or Gemini turn.
* ``aresponses`` / ``responses`` (``/v1/responses``, Codex): Responses ``input`` items
  (``format="openai-responses"``, its own profile whatever the provider; a plain string input
  carries no history, and an input continuing a ``previous_response_id`` or ``conversation`` is
  left alone, since its outputs answer calls toolmend cannot see).

**A request LiteLLM translates fires the hook again** with the same logging object:
``/v1/messages`` to an OpenAI model also fires ``aresponses``, to Gemini (and most others)
``acompletion``; ``/v1/responses`` to a provider without a Responses API fires ``acompletion``.
That second pass judges the history LiteLLM built for the deployment's own profile: it finds
nothing when the first pass did its work, and repairs what the translation broke or what only
that provider forbids (Gemini wants user text that is not empty); it never undoes the
first pass, whose history it starts from. It writes no line of its own when the first pass
wrote one, its changes join the first pass's record (each with ``"route"``: its index is into
the translated history), and no loop guard runs twice: one line and one record per client
request. When the first pass failed open, the second is skipped (the failure is logged once).

* **Async** (``litellm.acompletion``, ``Router.acompletion``, the proxy): LiteLLM calls
  :meth:`ToolMend.async_pre_call_deployment_hook` once per deployment attempt (first try,
  retries, each fallback), with the deployment's real model, before it processes the messages.
  The hook returns the request with a new, repaired ``messages`` list.
* **Sync** (``litellm.completion``, ``Router.completion``): LiteLLM calls no hook that can change
  the request there (checked against litellm 1.110.2). So the first
  :class:`ToolMend` built installs, once per process, a wrapt wrapper on
  ``litellm.utils.function_setup``: the first step of LiteLLM's ``@client`` decorator, which
  every sync ``completion`` call (every Router attempt too) passes through with its model and
  messages, before anything is logged, transformed or sent. Sync ``responses`` is repaired
  there too: LiteLLM fires the hook for it only on a deployment with a Responses API
  (``_run_sync_responses_pre_call_deployment_hook``, a second pass then), and bridges every
  other deployment to a sync ``completion`` that already has its logging object, so passes
  neither the hook nor this wrapper. LiteLLM looks the function up as a
  module global on each call, so the wrapper works however ``completion`` was imported. It
  repairs ``messages`` only while a :class:`ToolMend` is in ``litellm.callbacks`` and calls
  straight through otherwise (and for every other call type, including the async ones, which
  the hook handles). Nothing to do for the user: the one-liner covers both paths.
* A second wrapper, on ``litellm.utils.update_response_metadata`` (which LiteLLM runs on every
  response, streamed or not, just before handing it back), copies what changed onto the
  response. :func:`uninstall` removes these wrappers (and the rescue's, below) by their
  handles (``wrapt.unwrap_object``), leaving any other wrapper in place; building another
  :class:`ToolMend` installs them again.

Every attempt is judged for its own provider: ``litellm.get_llm_provider(model,
custom_llm_provider, api_base)`` names LiteLLM's provider and :data:`PROFILE_BY_PROVIDER` maps
that name to a toolmend profile (providers not in the table speak the OpenAI Chat Completions
API through LiteLLM and get the ``openai`` profile). A failure in toolmend never aborts the
call: it is logged on logger ``toolmend`` with its traceback and the original history goes out.

Where to see what changed
-------------------------
Each repaired request logs one line on logger ``toolmend`` (source, model, provider, change
codes and call ids; never content). When toolmend changed something, found something it left,
saw a loop or failed, the attempt also carries a record, a plain dict::

    {"provider": "anthropic", "model": "anthropic/claude-sonnet-4-5",
     "changes": [{"code": "dropped_orphan_result", "index": 1, "ids": ["call_x"], "detail": "..."}],
     "problems_before": [{"code": "orphan_result", "index": 1, "ids": ["call_x"]}],
     "problems_left": [], "loops": [], "failed": False}

``problems_before`` is what the history broke before the repair and ``problems_left`` what the
history sent still breaks, as :attr:`toolmend.Repair.problems_left`; ``problems``, the name
``problems_before`` had before 0.2.0, is still written, with the same list.

* on the response: ``response._hidden_params["toolmend"]`` (where LiteLLM puts its own per-call
  metadata such as ``response_cost``), for streams on the stream object itself;
* for logging callbacks: ``kwargs["toolmend"]`` in ``log_success_event`` /
  ``async_log_success_event`` / the failure events (LiteLLM's ``model_call_details``);
* on the proxy: the ``x-toolmend-changes`` response header (``code@index[ids]``, space
  separated; ``code@route:index[ids]`` for a second pass's change; printable ASCII, at most
  4 KiB whatever the ids hold: see :func:`changes_header`) and ``x-toolmend-provider``,
  on ``/v1/messages`` too (whose response is a plain dict: the record comes from the logging
  object);
* on the proxy's ``/metrics``, when LiteLLM's own ``prometheus`` callback is configured too:
  toolmend's request, change and duration metrics (:mod:`toolmend.integrations.prometheus`).
* for LiteLLM's logging integrations and traces: a guardrail entry named ``toolmend`` in the
  standard logging payload's ``guardrail_information``, for every request the callback saw,
  clean ones too (:mod:`toolmend.integrations.litellm_guardrail`), which LiteLLM's ``otel``
  callback exports as a ``guardrail`` span.

Telemetry (:mod:`toolmend.integrations.telemetry`): a client request is reported once, by its
first pass; a second pass that finds something adds its changes with
:func:`~toolmend.integrations.telemetry.record_later` (no second request), and a toolmend error
in this module before the repair reports ``failed_open``.

The rescue
----------
When the deployment still answers HTTP 400 and its error is about the history's tool calls (a
rule no profile holds yet, a provider the callback was not told), the call is sent **once**
more (:mod:`toolmend.integrations.rescue`, :func:`toolmend.rescue`): with the repair of the rule
another profile holds when the error names one, else with the refused tool exchanges written as
text (``flattened``). The first :class:`ToolMend` built wraps LiteLLM's entry points on the
``litellm`` module (``completion``, ``acompletion``, ``responses``, ``aresponses``,
``anthropic_messages``), which the SDK, ``Router`` (once per deployment attempt) and the proxy
look up there on each call; ``uninstall`` removes them with the other wrappers.

* The call's first pass (the hook or the sync setup wrapper) notes the history it sent and the
  profile it held it to, in a :class:`contextvars.ContextVar` slot the entry-point wrapper made;
  on a 400 the wrapper asks :func:`toolmend.integrations.rescue.retry_history` for the history
  to send again (it reads the provider's own message out of LiteLLM's
  ``litellm.BadRequestError: AnthropicException - {...}`` text) and calls the entry point once
  more with it in place of the caller's, every other argument the same. The second send's
  first pass sends that history as it is (no repair on top of the rescue) and writes the
  record: the first pass's, with ``"rescued": {"rule", "profile", "changes", "pointed"}``; on
  the proxy the ``x-toolmend-rescued`` header carries the rule. A second failure is raised:
  never a third send.
* A call made inside another entry-point call (LiteLLM translating ``/v1/messages`` to its
  Responses or chat route) is left to the outer one, so a client request is sent at most
  twice. A stream whose request LiteLLM makes at its first chunk (Gemini, Vertex AI; the
  ``Router`` opens it inside its attempt with ``fetch_stream``) comes back in a proxy object
  (:mod:`wrapt`) that rescues that first chunk and then reads the second send's stream.
* Nothing is retried without a :class:`ToolMend` in ``litellm.callbacks``, with ``rescue=False``
  or ``TOOLMEND_RESCUE=0``, under the ``report`` or ``strict`` policy (they ask toolmend to
  change nothing on its own), for any status but 400, or for a 400 about anything else
  (context length, content policy, parameters). A request accepted the first time costs the
  wrapper a slot and a context variable (a few microseconds), nothing more.

Limits
------
* ``messages`` must be passed by keyword (``completion(model=..., messages=...)``, as LiteLLM's
  documentation, ``Router`` and the proxy do): LiteLLM does not hand positional messages to
  either path. Such a call goes out unrepaired and is logged once on logger ``toolmend``.
* Chat completions, ``anthropic_messages`` (async; the proxy's ``/v1/messages``) and
  ``responses`` (sync and async) are repaired; text completions, embeddings and LiteLLM's sync
  Anthropic interface (``litellm.anthropic.messages.create``, which no hook sees) are left
  alone, as is a Responses input that continues a stored conversation.
* One line and one record per client request needs LiteLLM's logging object, which LiteLLM
  hands from route to route; a call without one gets a line per pass.
* The routes' hooks and call types were checked against litellm 1.110.2; an older LiteLLM that
  does not fire the hook for a route leaves that route unrepaired.
* The rescue needs the call to go through the ``litellm`` module's attribute: a function
  imported by name before the first :class:`ToolMend` was built (``from litellm import
  completion``) is repaired but never retried, as are ``completion(..., acompletion=True)``
  and positional ``messages``; so is a streamed ``anthropic_messages`` to Gemini or Vertex AI,
  whose translated stream LiteLLM opens inside its Anthropic adapter (the 400 surfaces there,
  mid-stream). A direct sync ``completion`` with LiteLLM's own ``num_retries``
  resends a 400 itself first (the ``Router`` does not); the rescue comes after those.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from toolmend import _escape as escape
from toolmend import _routing as routing
from toolmend._policy import Policy
from toolmend._report import ToolChainError, ToolLoopError
from toolmend._rescue import Rescue

from . import budget as budgets
from . import litellm_guardrail, telemetry
from . import rescue as rescues
from .budget import Budget
from .hooks import (
    HookOptions,
    Mended,
    OnLoop,
    check_names,
    compatible_provider,
    log_source,
    mend,
)
from .litellm_routes import ROUTES, Pass, Passes, Route, Summary, route_profile

try:
    import litellm
    from litellm.integrations.custom_logger import CustomLogger
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "toolmend.integrations.litellm needs LiteLLM: pip install 'toolmend[litellm]'"
    ) from error

if TYPE_CHECKING:
    from litellm.types.utils import CallTypes

__all__ = [
    "PROFILE_BY_PROVIDER",
    "RECORD_KEY",
    "ToolMend",
    "changes_header",
    "install",
    "profile_for",
    "proxy_handler",
    "uninstall",
]

logger = logging.getLogger("toolmend")

RECORD_KEY = "toolmend"
"""The key of the change record in ``response._hidden_params`` and in the callbacks' kwargs."""

PROFILE_BY_PROVIDER: Mapping[str, str] = {
    "openai": "openai",
    "azure": "openai",
    "azure_ai": "openai",
    "deepseek": "deepseek",
    "mistral": "mistral",
    "codestral": "mistral",
    "groq": "groq",
    "anthropic": "anthropic",
    "gemini": "gemini",
    "vertex_ai": "gemini",
    "vertex_ai_beta": "gemini",
    "bedrock": "bedrock",
    "bedrock_converse": "bedrock",
    "hosted_vllm": "vllm",
    "vllm": "vllm",
    "llamafile": "llama.cpp",
}
"""LiteLLM provider name (the second item of ``litellm.get_llm_provider``) -> toolmend profile.

A name mapping only; the rules live in the profiles. The deployment's model then picks the
variant through :func:`toolmend._routing.converted_profile` (a ``deepseek-reasoner`` model gets
``deepseek-reasoner``, a Claude model on ``vertex_ai`` gets ``anthropic``, a model on a
self-hosted server its chat template's rules). LiteLLM's ``openai`` provider with an
``api_base`` is whatever that base URL serves
(:func:`toolmend.integrations.hooks.compatible_provider`: its host, else the model). Any other
provider gets ``openai``."""

_COMPATIBLE = frozenset({"openai", "openai_like", "custom_openai"})
"""LiteLLM providers that send OpenAI's API to whatever ``api_base`` names."""

_CONVERTED_BY_LITELLM = {"gemini": "gemini-litellm"}
"""Profile -> the variant for a history LiteLLM's own converter carries to that API: which
converter carries the request is part of who serves it. LiteLLM's Gemini converter derives each
``functionResponse.name`` from the call, so a tool message needs none (see the
``gemini-litellm`` profile)."""

_DEFAULT_PROFILE = "openai"
_CHANGES_HEADER = "x-toolmend-changes"
_PROVIDER_HEADER = "x-toolmend-provider"
_RESCUED_HEADER = "x-toolmend-rescued"
HEADER_LIMIT = 4096
"""The most characters (printable ASCII, so bytes) of a toolmend response header."""
HEADER_ID_LIMIT = 64
"""The most characters of one escaped id in ``x-toolmend-changes``; a longer one is cut and
ends in ``%..`` (never part of an escaped id: a ``%`` in an id is written ``%25``)."""
_CUT = "%.."


def _header_id(call_id: object) -> str:
    """``call_id`` escaped for a header (:func:`toolmend._escape.header`), cut to
    :data:`HEADER_ID_LIMIT` characters; only the start of a long id is read."""
    text = call_id if isinstance(call_id, str) else str(call_id)
    shown = escape.header(text[: HEADER_ID_LIMIT + 1])
    if len(shown) <= HEADER_ID_LIMIT and len(text) <= HEADER_ID_LIMIT:
        return shown
    room = HEADER_ID_LIMIT - len(_CUT)
    pieces: list[str] = []
    width = 0
    for char in text[:room]:
        piece = escape.header(char)
        if width + len(piece) > room:
            break
        pieces.append(piece)
        width += len(piece)
    return "".join(pieces) + _CUT


def changes_header(changes: Sequence[Mapping[str, Any]]) -> str:
    """The value of ``x-toolmend-changes`` for a record's changes: printable ASCII, at most
    :data:`HEADER_LIMIT` characters, whatever the ids hold.

    Each change is ``code@index[id,...]`` (``code@route:index[...]`` for a second pass's),
    space separated, each id escaped by :func:`toolmend._escape.header` and cut to
    :data:`HEADER_ID_LIMIT` characters. When that does not fit, the codes and indexes come
    first: the ids are left out, and the list ends with ``+N more`` when even those do not
    fit. ``none`` when nothing was changed."""
    if not changes:
        return "none"
    heads = [f"{c['code']}@{c['route'] + ':' if 'route' in c else ''}{c['index']}" for c in changes]
    size = len(heads) - 1
    tokens: list[str] = []
    for head, change in zip(heads, changes, strict=True):
        ids = change.get("ids") or ()
        token = f"{head}[{','.join(map(_header_id, ids))}]" if ids else head
        tokens.append(token)
        size += len(token)
        if size > HEADER_LIMIT:
            break
    else:
        return " ".join(tokens)
    kept: list[str] = []
    size = 0
    for number, head in enumerate(heads):
        rest = len(heads) - number - 1  # room is kept for "+rest more" after this one
        if size + len(head) + (len(f" +{rest} more") if rest else 0) > HEADER_LIMIT:
            kept.append(f"+{len(heads) - number} more")
            break
        kept.append(head)
        size += len(head) + 1
    return " ".join(kept)


@functools.lru_cache(maxsize=512)
def profile_for(
    model: str, custom_llm_provider: str | None = None, api_base: str | None = None
) -> str:
    """The toolmend profile for a LiteLLM deployment ``model`` (``"deepseek/deepseek-chat"``).

    >>> profile_for("anthropic/claude-sonnet-4-5")
    'anthropic'
    >>> profile_for("vertex_ai/gemini-2.5-flash")
    'gemini-litellm'
    """
    try:
        name, provider, _, _ = litellm.get_llm_provider(
            model, custom_llm_provider=custom_llm_provider, api_base=api_base
        )
    except Exception:  # LiteLLM does not know the model: it will fail the call itself
        profile = PROFILE_BY_PROVIDER.get(custom_llm_provider or "", _DEFAULT_PROFILE)
    else:
        profile = routing.converted_profile(_deployment(provider, name, api_base), name)
    return _CONVERTED_BY_LITELLM.get(profile, profile)


def _deployment(provider: str, model: str, api_base: str | None) -> str:
    """The profile of LiteLLM's ``provider`` (:data:`PROFILE_BY_PROVIDER`); for an
    OpenAI-compatible one with an ``api_base``, the provider that base URL serves the model
    from."""
    if provider in _COMPATIBLE and api_base:
        return compatible_provider(routing.provider_for_base_url(api_base), model)
    return PROFILE_BY_PROVIDER.get(provider, _DEFAULT_PROFILE)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _record(provider: str, model: str, mended: Mended) -> dict[str, Any]:
    """The JSON-friendly record of one attempt: codes, indexes and call ids, never content."""
    before = [{"code": p.code, "index": p.index, "ids": list(p.ids)} for p in mended.problems]
    return {
        "provider": provider,
        "model": model,
        "changes": [
            {"code": c.code, "index": c.index, "ids": list(c.ids), "detail": c.detail}
            for c in mended.changes
        ],
        # "problems" is the first name of "problems_before", kept for readers of older records
        "problems": before,
        "problems_before": before,
        "problems_left": [
            {"code": p.code, "index": p.index, "ids": list(p.ids)} for p in mended.left
        ],
        "loops": [{"code": p.code, "index": p.index} for p in mended.loops],
        "failed": mended.failed,
    }


def _attach(logging_obj: object, record: dict[str, Any] | None) -> None:
    """Put ``record`` on LiteLLM's logging object: its ``model_call_details`` become the kwargs
    of every logging callback, and :func:`_copy_record` reads it back for the response."""
    details = getattr(logging_obj, "model_call_details", None)
    if isinstance(details, dict):
        if record is None:
            details.pop(RECORD_KEY, None)
        else:
            details[RECORD_KEY] = record


class ToolMend(CustomLogger):
    """A LiteLLM callback that repairs each request's tool history for the provider it goes to.

    **Parameters:**

    * **provider** - *(optional)* a toolmend profile name for every call; left out, each
      deployment attempt gets the profile of its own provider (:func:`profile_for`).
    * **policy** - *(optional)* a :class:`toolmend.Policy`, or ``"repair"`` (default),
      ``"strict"``, ``"report"``.
    * **on_loop** - *(optional)* ``"warn"`` (default), ``"raise"`` or ``"off"``.
    * **budget** - *(optional)* what one request may cost
      (:class:`toolmend.integrations.budget.Budget`: the size cap, the size from which the async
      path repairs off the event loop, the wall-clock budget); left out, read from the
      environment.
    * **rescue** - *(optional)* ``True`` (default): after a provider's HTTP 400 about the tool
      history toolmend sent, send the call once more with the history :func:`toolmend.rescue`
      rewrites (see the module docstring; under the ``repair`` policy only); ``False`` (or
      ``TOOLMEND_RESCUE=0``) lets the provider's error through as it came.

    >>> import litellm
    >>> litellm.callbacks = [ToolMend()]  # doctest: +SKIP
    """

    def __init__(
        self,
        provider: str | None = None,
        policy: Policy | str | None = None,
        on_loop: OnLoop = "warn",
        *,
        budget: Budget | None = None,
        rescue: bool = True,
    ) -> None:
        super().__init__()
        # an unknown provider or policy name fails here, not per call; a toolmend bug is
        # logged and the callback built anyway: every call fails open, and LiteLLM (or the
        # proxy loading ``proxy_handler``) still starts
        check_names(provider=provider, policy=policy, source="litellm ToolMend")
        self.options = HookOptions(
            provider=provider, policy=policy, on_loop=on_loop, budget=budget, rescue=rescue
        )
        try:
            install()
        except ImportError:  # wrapt missing: the extra to install, said at once
            raise
        except Exception:
            logger.exception(
                "toolmend could not wrap LiteLLM's sync path; sync calls go out unrepaired"
            )

    def __repr__(self) -> str:
        o = self.options
        return (
            f"ToolMend(provider={o.provider!r}, policy={o.policy!r}, on_loop={o.on_loop!r}, "
            f"rescue={o.rescue!r})"
        )

    # --- the repair both paths share -----------------------------------------------------------

    def mend_request(
        self,
        messages: Sequence[Any],
        *,
        model: object,
        custom_llm_provider: object = None,
        api_base: object = None,
        source: str,
        route: str = "completion",
        thinking: object = None,
        second: bool = False,
        quiet: bool = False,
    ) -> tuple[Any, dict[str, Any] | None]:
        """The history to send for one deployment attempt (``messages`` itself when nothing
        changed, else a new list) and the attempt's record (``None`` when there is nothing to
        tell; see the module docstring).

        ``route`` is the LiteLLM call type, which says the history's format and profile
        (:mod:`toolmend.integrations.litellm_routes`); ``thinking`` the request's setting (the
        Anthropic route); ``second`` a pass over a request LiteLLM translated from another
        route (no loop guard: the first pass ran it), ``quiet`` with no line of its own.

        Fails open like :func:`toolmend.integrations.hooks.mend`: only
        :class:`toolmend.ToolLoopError` and :class:`toolmend.ToolChainError`, which the options
        asked for, get out; any other error is logged and ``messages`` go out as they are."""
        outcome = self._repair(
            messages,
            model=model,
            custom_llm_provider=custom_llm_provider,
            api_base=api_base,
            source=source,
            route=route,
            thinking=thinking,
            second=second,
            quiet=quiet,
        )
        return outcome.history, outcome.record

    def _repair(
        self,
        messages: Sequence[Any],
        *,
        model: object,
        custom_llm_provider: object,
        api_base: object,
        source: str,
        route: str,
        thinking: object,
        second: bool,
        quiet: bool,
        logging_obj: object = None,
    ) -> _Outcome:
        """One pass (see :meth:`mend_request`). A request the options refuse (the loop guard's
        ``"raise"``, the strict policy) gets its guardrail entry on ``logging_obj``, LiteLLM's
        logging object, before the refusal is raised: the failure LiteLLM logs carries it."""
        started = time.time()
        clock = time.perf_counter()
        provider: str | None = None
        reported = False
        try:
            model_name = _text(model) or ""
            deployment = self.options.provider or profile_for(
                model_name, _text(custom_llm_provider), _text(api_base)
            )
            way = ROUTES[route]
            provider = route_profile(way, deployment, thinking=thinking, model=model_name or None)
            options = replace(self.options, on_loop="off") if second else self.options
            mended = mend(
                messages,
                provider=provider,
                source=f"{source}({model_name})",
                options=options,
                format=way.format,
                quiet=quiet,
                report=not second,  # a request is reported once, by its first pass
            )
            reported = True
            if mended.changes or mended.problems or mended.loops or mended.failed:
                record = _record(provider, model_name, mended)
                left = tuple(problem.code for problem in mended.left)
                spent = time.perf_counter() - clock
                return _Outcome(
                    mended.messages, record, mended.failed, provider, started, spent, left
                )
            spent = time.perf_counter() - clock
            return _Outcome(mended.messages, None, False, provider, started, spent)
        except (ToolLoopError, ToolChainError) as refused:
            # abandoned at the budget: the original went out, and LiteLLM is reading this
            # logging object on its loop; the refusal reaches nobody
            if logging_obj is not None and provider is not None and not budgets.abandoned():
                _note_refusal(logging_obj, ROUTES[route], refused, provider, started, clock)
            raise
        except Exception:
            logger.exception(
                "toolmend's LiteLLM hook failed on %s; sent unchanged", log_source(source)
            )
            if not (second or reported):
                telemetry.failed_open(source, provider)
            spent = time.perf_counter() - clock
            return _Outcome(messages, None, True, provider or "unknown", started, spent)

    # --- LiteLLM hooks -------------------------------------------------------------------------

    async def async_pre_call_deployment_hook(
        self, kwargs: dict[str, object], call_type: CallTypes | None
    ) -> dict[str, object] | None:
        """Async path, proxy, and sync ``responses``: repair the request's history for this
        deployment attempt, in the format of its route (:data:`ROUTES`).

        Returns a new kwargs dict: the new history when one was repaired, and toolmend's
        guardrail entry in its metadata (:mod:`toolmend.integrations.litellm_guardrail`);
        ``None`` when toolmend has nothing to do with the call (LiteLLM then keeps the request
        as it is)."""
        _follow_prometheus()
        route = ROUTES.get(str(getattr(call_type, "value", call_type)))
        if route is None:
            return None
        history = kwargs.get(route.key)
        if not isinstance(history, list) or not history or route.continues(kwargs):
            return None
        logging_obj = kwargs.get("litellm_logging_obj")
        try:
            step = _passes.begin(logging_obj, route.name)
        except Exception:
            logger.exception(
                "toolmend's LiteLLM hook failed on litellm.%s; sent unchanged", route.name
            )
            telemetry.failed_open(f"litellm.{route.name}")
            return None
        if step == "skip":  # the first pass failed open: its entry goes on with the request
            return _with_guardrail(kwargs, _request_entry(logging_obj, None), route)
        source = f"litellm.{route.name}"
        started, clock = time.time(), time.perf_counter()

        def given_up() -> _Outcome:  # the budget ran out: the original goes out
            if step != "second":
                telemetry.failed_open(source, reason="time_budget")
            return _Outcome(history, None, True, "unknown", started, time.perf_counter() - clock)

        slot = _sent.get() if step == "first" else None
        resent = slot.resend(history) if slot is not None else None
        outcome = (
            resent
            if resent is not None
            else await budgets.run(
                history,
                lambda: self._repair(
                    history,
                    model=kwargs.get("model"),
                    custom_llm_provider=kwargs.get("custom_llm_provider"),
                    api_base=kwargs.get("api_base"),
                    source=source,
                    route=route.name,
                    thinking=kwargs.get("thinking"),
                    second=step == "second",
                    quiet=step == "second" and _passes.spoke(logging_obj),
                    logging_obj=logging_obj,
                ),
                given_up,
                source=source,
                budget=self.options.budget,
            )
        )
        if slot is not None and resent is None:
            slot.note(route, outcome, _text(kwargs.get("model")) or "")
        _note_pass(logging_obj, route.name, step, outcome)
        sent = kwargs if outcome.history is history else {**kwargs, route.key: outcome.history}
        return _with_guardrail(sent, _request_entry(logging_obj, outcome), route)

    async def async_post_call_response_headers_hook(
        self,
        data: dict[str, Any],
        user_api_key_dict: Any,
        response: object,
        request_headers: dict[str, str] | None = None,
        litellm_call_info: dict[str, object] | None = None,
    ) -> dict[str, str] | None:
        """Proxy: tell the client what was changed, in ``x-toolmend-changes``, and the rescue's
        rule in ``x-toolmend-rescued`` when the deployment was sent a second time."""
        hidden = getattr(response, "_hidden_params", None)
        record = hidden.get(RECORD_KEY) if isinstance(hidden, dict) else None
        if not isinstance(record, dict):  # an Anthropic-shaped response is a plain dict
            details = getattr(data.get("litellm_logging_obj"), "model_call_details", None)
            record = details.get(RECORD_KEY) if isinstance(details, dict) else None
        if not isinstance(record, dict):
            return None
        try:
            headers = {
                _CHANGES_HEADER: changes_header(record["changes"]),
                _PROVIDER_HEADER: escape.header(record["provider"])[:HEADER_LIMIT],
            }
            rescued = record.get("rescued")
            if isinstance(rescued, dict):
                headers[_RESCUED_HEADER] = escape.header(rescued["rule"])[:HEADER_LIMIT]
            return headers
        except Exception:  # a header must never fail the response
            logger.exception("toolmend could not write its proxy response headers")
            return None


# --- the sync path: wrapt wrappers, installed once ---------------------------------------------

_lock = threading.Lock()
_handles: dict[str, Any] = {}
_warned_positional = False


def _active() -> ToolMend | None:
    """The first :class:`ToolMend` in ``litellm.callbacks``, if any."""
    for callback in litellm.callbacks:
        if isinstance(callback, ToolMend):
            return callback
    return None


def _enabled() -> bool:
    return bool(_handles)


def _function_setup(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``litellm.utils.function_setup(call_type, rules, start_time, *call_args,
    **call_kwargs)``: repair a sync ``completion`` call's ``messages`` or a sync ``responses``
    call's ``input`` before LiteLLM sets the call up, then record the outcome on the logging
    object it returns. Fails open: a toolmend error anywhere here is logged and the call goes on
    as the caller made it."""
    try:
        prepared = _sync_request(args, kwargs)
    except (ToolLoopError, ToolChainError):
        raise
    except Exception:
        logger.exception(
            "toolmend's LiteLLM hook failed on litellm.%s; sent unchanged", escape.log(str(args[0]))
        )
        telemetry.failed_open(f"litellm.{args[0]}")
        prepared = None
    if prepared is None:
        return wrapped(*args, **kwargs)
    call_kwargs, route, outcome = prepared
    result = wrapped(*args, **call_kwargs)
    if isinstance(result, tuple) and result:
        _note_pass(result[0], route, "first", outcome, setup=True)
    return result


_SYNC_AT = {"completion": (3, 4), "responses": (4, 3)}
"""Sync call type -> where its model and its history sit among ``function_setup``'s positional
arguments (after ``call_type, rules, start_time``): ``completion(model, messages)``,
``responses(input, model)``."""


def _sync_request(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[dict[str, Any], str, _Outcome] | None:
    """The kwargs a sync ``completion`` or ``responses`` call goes on with, its route and the
    outcome of the repair, or ``None`` when toolmend has nothing to do with the call.

    Sync ``responses`` is repaired here, not only in the hook LiteLLM fires for it: a
    deployment with a Responses API fires the hook, but one LiteLLM bridges to chat completions
    (Anthropic, Gemini, ...) calls sync ``completion`` with the logging object already made,
    which passes neither the hook nor this wrapper. The hook that may follow is a second pass
    (:mod:`toolmend.integrations.litellm_routes`)."""
    at = _SYNC_AT.get(args[0]) if args else None
    handler = _active() if at is not None else None
    if handler is None or at is None:
        return None
    _follow_prometheus()
    route = ROUTES[args[0]]
    history = kwargs.get(route.key)
    if not isinstance(history, list) or not history or route.continues(kwargs):
        if len(args) > at[1]:
            _warn_positional(route.name, route.key)
        return None
    model = args[at[0]] if len(args) > at[0] else kwargs.get("model")
    slot = _sent.get()
    outcome = slot.resend(history) if slot is not None else None
    if outcome is None:
        outcome = handler._repair(
            history,
            model=model,
            custom_llm_provider=kwargs.get("custom_llm_provider"),
            api_base=kwargs.get("api_base") or kwargs.get("base_url"),
            source=f"litellm.{route.name}",
            route=route.name,
            thinking=None,
            second=False,
            quiet=False,
        )
        if slot is not None:
            slot.note(route, outcome, _text(model) or "")
    sent = kwargs if outcome.history is history else {**kwargs, route.key: outcome.history}
    return _with_guardrail(sent, _entry(outcome), route), route.name, outcome


class _Outcome(NamedTuple):
    """One pass over a request's history: what to send, the record, whether toolmend failed,
    the profile it was held to, when the pass started (epoch seconds) and how long it took."""

    history: Any
    record: dict[str, Any] | None
    failed: bool
    provider: str = "unknown"
    started: float = 0.0
    spent: float = 0.0
    left: tuple[str, ...] = ()
    """The code of each problem the history sent still has."""


_passes = Passes()
"""Every client request in flight, by LiteLLM's logging object (see :class:`Passes`)."""


def _note_pass(
    logging_obj: object, route: str, step: Pass, outcome: _Outcome, *, setup: bool = False
) -> None:
    """Remember a pass over the client request ``logging_obj`` stands for and put the
    request's record on it (:func:`_attach`), after the request is built: a failure is logged,
    the call goes on. A second pass that found something tells telemetry what it added."""
    try:
        if step == "first":
            _passes.first(
                logging_obj,
                route,
                outcome.record,
                failed=outcome.failed,
                setup=setup,
                provider=outcome.provider,
                started=outcome.started,
                spent=outcome.spent,
                left=outcome.left,
            )
            _attach(logging_obj, outcome.record)
        else:
            replace_record, merged = _passes.second(
                logging_obj,
                route,
                outcome.record,
                ended=outcome.started + outcome.spent,
                spent=outcome.spent,
                failed=outcome.failed,
                left=outcome.left,
            )
            if replace_record:
                _attach(logging_obj, merged)
            if (outcome.record is not None or outcome.failed) and telemetry.is_active():
                _report_later(logging_obj, route, outcome)
    except Exception:
        logger.exception("toolmend could not attach its record to the LiteLLM call")


def _report_later(logging_obj: object, route: str, outcome: _Outcome) -> None:
    """Telemetry for a second pass that found something: the request was counted by its first
    pass, so only what this pass added (:func:`toolmend.integrations.telemetry.record_later`)."""
    summary = _passes.summary(logging_obj)
    if summary is None:
        return
    telemetry.record_later(
        _report(f"litellm.{summary.route}", summary),
        _report(f"litellm.{route}", outcome),
    )


def _report(hook: str, seen: _Outcome | Summary) -> telemetry.HookReport:
    """The telemetry report of a pass (``_Outcome``) or of a whole request (``Summary``)."""
    record = seen.record
    changes = tuple(c["code"] for c in record["changes"]) if record else ()
    return telemetry.HookReport(
        hook,
        seen.provider,
        telemetry.outcome_of(
            changed=bool(changes), problems_left=len(seen.left), failed=seen.failed
        ),
        changes,
        len(seen.left),
        tuple(p["code"] for p in record["loops"]) if record else (),
    )


def _entry(seen: _Outcome | Summary) -> dict[str, Any] | None:
    """toolmend's guardrail entry for a request seen by one pass (``_Outcome``) or by every
    pass so far (``Summary``)."""
    try:
        ended = seen.ended if isinstance(seen, Summary) else seen.started + seen.spent
        return litellm_guardrail.entry(
            seen.record,
            provider=seen.provider,
            left=seen.left,
            started=seen.started,
            ended=ended,
            duration=seen.spent,
            failed=seen.failed,
        )
    except Exception:
        logger.exception("toolmend could not make its guardrail record for the LiteLLM call")
        return None


def _request_entry(logging_obj: object, outcome: _Outcome | None) -> dict[str, Any] | None:
    """toolmend's guardrail entry for the client request ``logging_obj`` stands for, every pass
    so far in it; for ``outcome`` alone when LiteLLM gave no logging object."""
    try:
        summary = _passes.summary(logging_obj)
    except Exception:
        logger.exception("toolmend could not make its guardrail record for the LiteLLM call")
        return None
    if summary is None:
        return None if outcome is None else _entry(outcome)
    return _entry(summary)


def _note_refusal(
    logging_obj: object,
    route: Route,
    refused: ToolLoopError | ToolChainError,
    provider: str,
    started: float,
    clock: float,
) -> None:
    """Put the guardrail entry of a request toolmend refused on LiteLLM's logging object (the
    hook hands no request back then): ``guardrail_intervened``, as LiteLLM's guardrails record
    a request they block, with the problems found. A failure here is logged; the refusal goes
    on."""
    try:
        codes = tuple(p.code for p in refused.problems)
        loops = [{"code": code} for code in codes]
        record = {
            "changes": [],
            "problems": [],
            "problems_before": [],
            "problems_left": [],
            "loops": loops if isinstance(refused, ToolLoopError) else [],
            "failed": False,
        }
        spent = time.perf_counter() - clock
        guardrail = litellm_guardrail.entry(
            record,
            provider=provider,
            left=codes,
            started=started,
            ended=started + spent,
            duration=spent,
            refused=True,
        )
        details = getattr(logging_obj, "model_call_details", None)
        targets = (
            getattr(logging_obj, "litellm_params", None),
            details.get("litellm_params") if isinstance(details, dict) else None,
        )
        done: list[object] = []
        for params in targets:
            if isinstance(params, dict) and not any(params is d for d in done):
                done.append(params)
                params.update(_new_buckets(params, guardrail, chat=route.format == "openai"))
    except Exception:
        logger.exception("toolmend could not add its guardrail record to the LiteLLM call")


def _new_buckets(
    params: dict[str, Any], guardrail: dict[str, Any], *, chat: bool
) -> dict[str, object]:
    """The metadata buckets of ``params`` that :func:`litellm_guardrail.with_entry` made new."""
    made = litellm_guardrail.with_entry(params, guardrail, chat=chat)
    return {
        name: made[name]
        for name in ("metadata", "litellm_metadata")
        if name in made and made[name] is not params.get(name)
    }


def _with_guardrail(
    kwargs: dict[str, object], guardrail: dict[str, Any] | None, route: Route
) -> dict[str, object]:
    """``kwargs`` with ``guardrail`` in their metadata (or as they are, when there is no entry
    or it cannot be put there: logged, and the call goes on)."""
    if guardrail is None:
        return kwargs
    try:
        return litellm_guardrail.with_entry(kwargs, guardrail, chat=route.format == "openai")
    except Exception:
        logger.exception("toolmend could not add its guardrail record to the LiteLLM call")
        return kwargs


def _update_response_metadata(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``litellm.utils.update_response_metadata(result, logging_obj, ...)``: copy the
    attempt's record onto ``result._hidden_params``."""
    outcome = wrapped(*args, **kwargs)
    try:
        _copy_record(
            kwargs.get("result", args[0] if args else None),
            kwargs.get("logging_obj", args[1] if len(args) > 1 else None),
        )
    except Exception:
        logger.exception("toolmend could not attach its record to the LiteLLM response")
    return outcome


def _copy_record(result: object, logging_obj: object) -> None:
    details = getattr(logging_obj, "model_call_details", None)
    record = details.get(RECORD_KEY) if isinstance(details, dict) else None
    if record is None:
        return
    hidden = getattr(result, "_hidden_params", None)
    if isinstance(hidden, dict):
        hidden[RECORD_KEY] = record
    elif hidden is not None:
        setattr(hidden, RECORD_KEY, record)


def _warn_positional(call: str, key: str) -> None:
    global _warned_positional
    if not _warned_positional:
        _warned_positional = True
        logger.warning(
            "toolmend: litellm.%s got %s positionally; LiteLLM does not hand them to toolmend, "
            "so such calls go out unrepaired. Pass %s=... by keyword.",
            call,
            key,
            key,
        )


# --- the rescue: one more send after a provider's 400 about the tool history ---------------------


@dataclass(slots=True)
class _Sent:
    """One call of a LiteLLM entry point (:data:`_ENTRY_POINTS`): what its first pass sent, for
    the rescue, and the rescue once there is one."""

    route: Route | None = None
    """The route of the first pass (``None`` until one sent a history toolmend judged)."""
    history: Any = None
    """The history that pass sent (the repaired one, or the caller's when nothing changed)."""
    provider: str = "unknown"
    """The profile that pass held the history to."""
    model: str = ""
    record: dict[str, Any] | None = None
    """That pass's record (``None``: nothing to tell)."""
    rescued: Rescue | None = None
    """The rescue, once the call is being sent again."""
    resent: bool = False
    """The hook has seen the second send."""

    def note(self, route: Route, outcome: _Outcome, model: str) -> None:
        """Keep what the call's first pass sent (later passes, translated routes and nested
        calls, leave it: the call is retried on its own route)."""
        if self.route is None and self.rescued is None and not outcome.failed:
            self.route, self.history, self.provider = route, outcome.history, outcome.provider
            self.model, self.record = model, outcome.record

    def resend(self, history: Any) -> _Outcome | None:
        """The outcome of the second send's first pass: ``history`` (the rescue's) goes out as
        it is, with the first pass's record and the rescue in it; ``None`` on any other pass."""
        if self.rescued is None or self.resent:
            return None
        self.resent = True
        base = self.record or {
            "provider": self.provider,
            "model": self.model,
            "changes": [],
            "problems": [],
            "problems_before": [],
            "problems_left": [],
            "loops": [],
            "failed": False,
        }
        rescued = self.rescued
        entry = {
            "rule": rescued.rule,
            "profile": rescued.profile,
            "changes": [
                {"code": c.code, "index": c.index, "ids": list(c.ids), "detail": c.detail}
                for c in rescued.changes
            ],
            "pointed": list(rescued.pointed),
        }
        return _Outcome(history, {**base, "rescued": entry}, False, self.provider, time.time())


_sent: contextvars.ContextVar[_Sent | None] = contextvars.ContextVar(
    "toolmend_litellm_sent", default=None
)
"""The entry-point call in progress in this context (``None`` outside one)."""


def _again(
    handler: ToolMend, slot: _Sent, kwargs: dict[str, Any], error: BaseException
) -> dict[str, Any] | None:
    """The kwargs to send the call with once more after ``error``, or ``None`` (re-raise it):
    the first pass's history rewritten by :func:`toolmend.integrations.rescue.retry_history`
    in place of the caller's, every other argument the same. Never raises."""
    try:
        route = slot.route
        if route is None or route.key not in kwargs:
            return None
        rescued = rescues.retry_history(
            slot.history,
            error,
            provider=slot.provider,
            source=f"litellm.{route.name}",
            format=route.format,
            rescue_on=handler.options.rescues,
        )
        if rescued is None:
            return None
        slot.rescued = rescued
        return {**kwargs, route.key: rescued.messages}
    except Exception:
        logger.exception("toolmend failed while rescuing a LiteLLM call; the error was raised")
        return None


def _rescuer() -> ToolMend | None:
    """The :class:`ToolMend` that rescues a call starting now, or ``None`` (call straight
    through): none in ``litellm.callbacks``, the rescue off, or inside another entry-point
    call (LiteLLM translating a route calls its entry points again: only the outer call is
    retried, so a call is never sent more than twice)."""
    try:
        if _sent.get() is not None:
            return None
        for callback in litellm.callbacks:
            if isinstance(callback, ToolMend):
                return callback if rescues.enabled(callback.options.rescues) else None
        return None
    except Exception:  # the call goes on without the rescue
        logger.exception("toolmend could not prepare its rescue of a LiteLLM call")
        return None


def _entry_point(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Around LiteLLM's sync entry points (``litellm.completion``, ``litellm.responses``):
    the call, and once more with the rescued history after a 400 about tool history (at the
    call, or at the first chunk of a stream whose request LiteLLM makes then)."""
    handler = _rescuer()
    if handler is None:
        return wrapped(*args, **kwargs)
    slot = _Sent()
    token = _sent.set(slot)
    try:
        try:
            result = wrapped(*args, **kwargs)
        except Exception as error:
            again = _again(handler, slot, kwargs, error)
            if again is None:
                raise
            return wrapped(*args, **again)
    finally:
        _sent.reset(token)
    if slot.route is None or not _unsent(result):
        return result

    def resend(error: BaseException) -> Any:
        again = _again(handler, slot, kwargs, error)
        if again is None:
            return None
        token = _sent.set(slot)
        try:
            return wrapped(*args, **again)
        finally:
            _sent.reset(token)

    return _late_stream()(result, resend, None)


def _async_entry_point(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around LiteLLM's async entry points (``litellm.acompletion``, ``litellm.aresponses``,
    ``litellm.anthropic_messages``), as :func:`_entry_point`."""
    handler = _rescuer()
    if handler is None:
        return wrapped(*args, **kwargs)
    return _rescued_call(handler, wrapped, args, kwargs)


async def _rescued_call(
    handler: ToolMend, wrapped: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    slot = _Sent()
    token = _sent.set(slot)
    try:
        try:
            result = await wrapped(*args, **kwargs)
        except Exception as error:
            again = _again(handler, slot, kwargs, error)
            if again is None:
                raise
            return await wrapped(*args, **again)
    finally:
        _sent.reset(token)
    if slot.route is None or not _unsent(result):
        return result

    async def resend(error: BaseException) -> Any:
        again = _again(handler, slot, kwargs, error)
        if again is None:
            return None
        token = _sent.set(slot)
        try:
            return await wrapped(*args, **again)
        finally:
            _sent.reset(token)

    return _late_stream()(result, None, resend)


def _unsent(result: object) -> bool:
    """Whether ``result`` is a LiteLLM stream whose request is made at its first chunk
    (``CustomStreamWrapper`` with a ``make_call`` and no stream yet: Gemini and Vertex AI), so
    the provider's 400 comes from iterating it, not from the call."""
    return (
        getattr(result, "make_call", None) is not None
        and getattr(result, "completion_stream", True) is None
    )


@functools.cache
def _late_stream() -> Any:
    """The class of a stream that sends its call once more when its first chunk is a 400 about
    tool history (built on first use: ``wrapt`` is imported lazily, as in :func:`install`)."""
    import wrapt

    class LateStream(wrapt.ObjectProxy):  # type: ignore[type-arg]
        """A LiteLLM stream (every attribute is the stream's) whose first chunk, when the
        provider refuses the request then, is the first chunk of the call sent once more:
        ``resend(error)`` (sync) or ``aresend(error)`` (async) gives the new stream, or
        ``None`` to raise ``error``. Later chunks come straight from the stream."""

        def __init__(self, stream: Any, resend: Any, aresend: Any) -> None:
            super().__init__(stream)
            self._self_resend = resend
            self._self_aresend = aresend
            self._self_started = False

        def __iter__(self) -> Any:
            return self

        def __next__(self) -> Any:
            if self._self_started:
                return next(self.__wrapped__)
            self._self_started = True
            try:
                return next(self.__wrapped__)
            except StopIteration:
                raise
            except Exception as error:
                again = self._self_resend(error) if self._self_resend else None
                if again is None:
                    raise
            self.__wrapped__ = again
            return next(again)

        def fetch_sync_stream(self) -> Any:
            """LiteLLM's own way to open the stream (the Router's attempt calls it)."""
            if self._self_started:
                return self.__wrapped__.fetch_sync_stream()
            self._self_started = True
            try:
                return self.__wrapped__.fetch_sync_stream()
            except Exception as error:
                again = self._self_resend(error) if self._self_resend else None
                if again is None:
                    raise
            self.__wrapped__ = again
            return again.fetch_sync_stream()

        async def fetch_stream(self) -> Any:
            """As :meth:`fetch_sync_stream`, async."""
            if self._self_started:
                return await self.__wrapped__.fetch_stream()
            self._self_started = True
            try:
                return await self.__wrapped__.fetch_stream()
            except Exception as error:
                again = await self._self_aresend(error) if self._self_aresend else None
                if again is None:
                    raise
            self.__wrapped__ = again
            return await again.fetch_stream()

        def __aiter__(self) -> Any:
            return self

        async def __anext__(self) -> Any:
            if self._self_started:
                return await self.__wrapped__.__anext__()
            self._self_started = True
            try:
                return await self.__wrapped__.__anext__()
            except StopAsyncIteration:
                raise
            except Exception as error:
                again = await self._self_aresend(error) if self._self_aresend else None
                if again is None:
                    raise
            self.__wrapped__ = again
            return await again.__anext__()

    return LateStream


_ENTRY_POINTS = ("completion", "acompletion", "responses", "aresponses", "anthropic_messages")
"""The ``litellm`` functions the rescue wraps: every route with a history, as the SDK, the
Router and the proxy call them (the Router looks each up on ``litellm`` per attempt)."""

_ASYNC_ENTRY_POINTS = frozenset({"acompletion", "aresponses", "anthropic_messages"})

_TARGETS: tuple[tuple[str, str, Any], ...] = (
    ("litellm.utils", "function_setup", _function_setup),
    ("litellm.utils", "update_response_metadata", _update_response_metadata),
    *(
        ("litellm", name, _async_entry_point if name in _ASYNC_ENTRY_POINTS else _entry_point)
        for name in _ENTRY_POINTS
    ),
)
"""(module, attribute, wrapper) for every wrapt wrapper this integration installs."""


def install() -> None:
    """Install the wrappers of :data:`_TARGETS` (the sync path, the response record, the
    rescue's entry points); idempotent, :class:`ToolMend` calls it."""
    try:
        import wrapt
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "toolmend.integrations.litellm needs wrapt: pip install 'toolmend[litellm]'"
        ) from error
    import importlib

    with _lock:
        for module_name, attribute, wrapper in _TARGETS:
            key = f"{module_name}.{attribute}"
            module = importlib.import_module(module_name)
            if module_name == "litellm" and getattr(module, attribute, None) is None:
                continue  # an entry point this LiteLLM lacks: that route has no rescue
            handle = _handles.get(key)
            if handle is not None and wrapt.is_wrapped_by(getattr(module, attribute), handle):
                continue
            _handles[key] = wrapt.wrap_object(
                module, attribute, wrapt.FunctionWrapper, (wrapper, _enabled)
            )


def uninstall() -> None:
    """Remove the wrappers :func:`install` put in, only ours, by their handles (the sync path
    and the rescue go with them). The async hook stays with any :class:`ToolMend` left in
    ``litellm.callbacks``."""
    import importlib

    import wrapt

    with _lock:
        for key, handle in list(_handles.items()):
            module_name, attribute = key.rsplit(".", 1)
            module = importlib.import_module(module_name)
            wrapt.unwrap_object(module, attribute, handle, missing_ok=True)
            del _handles[key]


# --- Prometheus: toolmend's metrics beside LiteLLM's own ----------------------------------------

PROMETHEUS_ENV = "TOOLMEND_PROMETHEUS"
"""``1`` counts every request in :mod:`toolmend.integrations.prometheus` even without LiteLLM's
``prometheus`` callback, ``0`` never does; unset, the metrics follow LiteLLM's callback."""

_callbacks_seen: tuple[int, int] | None = None


def _follow_prometheus() -> None:
    """Turn toolmend's Prometheus metrics on when LiteLLM's own ``prometheus`` callback is
    configured (the proxy's ``/metrics`` then shows them; see :data:`PROMETHEUS_ENV`).

    LiteLLM's callback lists are read again only when their lengths change (the proxy fills them
    after building this callback, and may add one later), so a request pays two ``len()``. A
    failure is logged once per change and the request goes on without the metrics."""
    global _callbacks_seen
    try:  # called first thing on every request, before the hook's own fail-open guard
        seen = (len(litellm.callbacks), len(litellm.success_callback))
        if seen == _callbacks_seen:
            return
        _callbacks_seen = seen
        wanted = os.environ.get(PROMETHEUS_ENV, "")
        if wanted == "0" or not (wanted == "1" or _litellm_prometheus()):
            return
        from . import prometheus

        prometheus.enable()
    except Exception:
        logger.exception("toolmend could not turn on its Prometheus metrics; requests go on")


def _litellm_prometheus() -> bool:
    """Whether LiteLLM's ``prometheus`` callback is configured (by name or as its logger)."""
    return any(
        callback == "prometheus" or type(callback).__name__ == "PrometheusLogger"
        for callback in (*litellm.callbacks, *litellm.success_callback)
    )


proxy_handler: ToolMend
"""The instance the LiteLLM Proxy loads (``litellm_settings: callbacks:
toolmend.integrations.litellm.proxy_handler``); built on first access by :func:`__getattr__`."""

_proxy_handler: ToolMend | None = None


def __getattr__(name: str) -> ToolMend:
    """``proxy_handler``: the instance the LiteLLM Proxy loads from ``litellm_settings:
    callbacks:``, built on first access so that importing this module patches nothing."""
    global _proxy_handler
    if name != "proxy_handler":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if _proxy_handler is None:
        _proxy_handler = ToolMend()
    return _proxy_handler
