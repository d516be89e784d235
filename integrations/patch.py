"""Repair the history of every chat request the raw SDKs send: openai, google-genai, anthropic.

Usage
-----

.. code-block:: python

    import toolmend.integrations.patch as tm

    tm.patch()                       # every supported SDK, now or whenever it is imported later
    tm.patch(openai=True, google_genai=False, provider="deepseek")   # choices and overrides
    tm.unpatch()                     # removes toolmend's wrappers, and only those

For an app whose code must not change, ``toolmend-run python app.py`` (or ``TOOLMEND_PATCH=1``
with ``toolmend/integrations/bootstrap`` on ``PYTHONPATH``) calls :func:`patch_from_env` at
interpreter start, as ``ddtrace-run`` and ``opentelemetry-instrument`` do.

What is patched
---------------
:data:`TARGETS` is the whole list, one row per method (SDK, defining module, ``"Class.method"``,
where the history is, its format, the oldest SDK version the row was checked against).
:func:`patch` and :func:`unpatch` loop over it and nothing else:

* openai: Chat Completions and Responses, sync and async, ``create`` and ``parse`` (``parse``
  posts by itself). The ``stream()`` helpers, ``stream=True``, ``with_raw_response`` and
  ``with_streaming_response`` all end in ``create`` or ``parse``, so each call is repaired
  exactly once; ``client.beta.responses`` is a class of its own and has its own rows.
* google-genai: ``models.generate_content`` and ``generate_content_stream``, sync and async
  (``client.aio``), whatever shape ``contents`` takes. Chats send through these methods, so a
  chat's requests are repaired too. With ``repair_chat_history=True`` the rows on
  ``Chat``/``AsyncChat.send_message(_stream)`` also repair the chat's stored (curated) history
  before each turn, so the next turn starts clean (the comprehensive history that
  ``get_history()`` returns by default stays as it was recorded).
* anthropic: ``messages.create``, ``messages.stream`` and ``messages.parse`` (``stream`` and
  ``parse`` post by themselves), GA and ``client.beta``, sync and async. Bedrock and Vertex
  clients reuse these classes; their beta ``messages`` copy the methods when anthropic is
  imported, so they are covered when :func:`patch` runs first (as under ``toolmend-run``).

Not covered (no HTTP chat request through these methods, or the history lives server-side):
openai ``responses.connect()`` (WebSocket), ``previous_response_id``/``conversation`` state,
google-genai ``live`` and ``interactions``, anthropic message threads, batches.

Which provider's rules
----------------------
anthropic rows use ``anthropic`` (``anthropic-thinking`` when the request turns thinking on),
google-genai rows ``gemini`` (``gemini-3`` for a Gemini 3 model). An OpenAI client is often
pointed elsewhere, so openai rows take, first to last: ``patch(provider=...)``; the provider
:func:`toolmend._routing.provider_for_host` gives the host of the client's ``base_url`` (the one
host table, :data:`toolmend._routing.HOSTS`, re-exported here as :data:`HOSTS`); for any other
host (a local server, a gateway such as OpenRouter or a LiteLLM proxy) the request's model: one
whose chat template toolmend knows gets that template's rules (as ``provider="vllm"`` would),
one only one provider serves (``deepseek-*``, ``devstral-*`` and the other Mistral families)
that provider's; else ``openai``. The model and the request's ``thinking`` setting then pick
the variant through :func:`toolmend._routing.request_profile`: a ``deepseek-reasoner`` model on
DeepSeek and a Gemini 3 model on Gemini's OpenAI endpoint get those variants. The Responses rows
take the same provider's ``/v1/responses`` rules (``request_profile(provider,
format="openai-responses", model=...)``): ``deepseek-responses`` for DeepSeek's host,
``hf-template-responses`` for a self-hosted server (a host no table names, with a model whose
chat template toolmend knows), ``openai-responses`` (``openai-responses-reasoning`` for a
reasoning model) for OpenAI, Azure and any other host. A provider that serves no Responses API
toolmend has rules for (Mistral, a chat profile named outright) gets ``openai-responses``, the
API's own rules: a chat profile refuses Responses input.

How it behaves
--------------
* :func:`patch` registers a post-import hook per module and wraps when the module is imported
  (at once if it already is); it never imports an SDK. Calling it again with the same
  arguments changes nothing; with other arguments it switches SDKs on or off to match.
* :func:`unpatch` removes exactly the wrappers toolmend installed (``wrapt.unwrap_object``
  with the handle kept at wrap time), even when another instrumentor wrapped on top.
* Every wrapper checks a per-call switch, so a method bound while patched (a
  ``with_raw_response`` cached on a client, a class attribute copied at import) calls straight
  through after :func:`unpatch`. A method bound *before* :func:`patch` is not seen, which is why
  patching at startup (import hooks, ``toolmend-run``) is the way to use this module.
* The caller's objects are never changed: the request gets the repaired list, the caller keeps
  theirs. A toolmend error is logged with its traceback and the original history goes out;
  only :class:`toolmend.ToolLoopError` (``on_loop="raise"``) and :class:`toolmend.ToolChainError`
  (``policy="strict"``) reach the caller, because they asked for them. A history toolmend
  cannot read (an item that is not a message, an id that is a number) goes out as it is, with
  one WARNING naming the message index and field; ``None``, a string, a dict or any other value
  that is not a list of messages is left to the SDK without a word.
* An async method's long history (``TOOLMEND_OFFLOAD_ITEMS`` items or more) is repaired off the
  event loop within the budget (:mod:`toolmend.integrations.budget`): the wrapper then returns a
  coroutine of its own that awaits the repair, then the SDK's call. A ``ToolLoopError`` or
  ``ToolChainError`` comes out of the ``await`` instead of the call.
* When the provider still refuses a repaired request with HTTP 400 about its tool history,
  the request is sent **once** more with the history :func:`toolmend.rescue` rewrites (the
  repair of a rule toolmend knows, else the refused tool exchanges written as text), through
  :func:`toolmend.integrations.rescue.retry_history`: same arguments, the history keyword
  replaced, the provider and format of the first repair. The retry happens where the refusal
  surfaces: around the call (``stream=True`` included), in the ``await`` of an async method,
  in the ``__enter__``/``__aenter__`` of anthropic's ``messages.stream`` manager (returned
  behind a ``wrapt.ObjectProxy`` that passes everything else through), and at the first item
  of google-genai's ``generate_content_stream``. The ``stream()`` helpers and
  ``with_raw_response`` end in a patched ``create``/``parse``, so they retry once too. Any other
  error (context length, content policy, auth, rate limits, a 400 about something else), a
  second refusal, ``patch(rescue=False)``, ``TOOLMEND_RESCUE=0`` and the ``report`` and
  ``strict`` policies (toolmend changes nothing on its own) reach the caller as the SDK raised
  them. A request accepted the first time pays nothing before it is sent.
* Each repaired request logs one line on logger ``toolmend``: the row (SDK, class, method), the
  provider, the change codes with message index and ids; never content. An SDK older than its
  rows is skipped with one warning naming both versions; methods the installed SDK lacks
  (``parse`` before anthropic added it) with one warning per module naming them.

Configuration (read by :func:`patch_from_env`, i.e. by ``toolmend-run``)
----------------------------------------------------------------------------
``TOOLMEND_PATCH``
    ``1`` (or ``true``, ``yes``, ``on``) patches at interpreter start; ``toolmend-run`` sets it.
``TOOLMEND_PATCH_DISABLED``
    Comma-separated SDKs to leave alone: ``openai``, ``anthropic``, ``google_genai`` (also
    spelt ``google-genai``; the older ``genai`` and ``gemini`` still work).
``TOOLMEND_PROVIDER``
    The ``provider=`` of the openai rows (``deepseek``, ``mistral``, ...).
``TOOLMEND_REPAIR_CHAT_HISTORY``
    ``1`` also repairs google-genai chats' stored history (``repair_chat_history=True``).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.metadata
import inspect
import logging
import os
import re
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from toolmend._api import read_history
from toolmend._policy import Policy, as_policy
from toolmend._report import (
    InvalidHistoryError,
    ToolChainError,
    ToolLoopError,
    ToolmendError,
    UnknownNameError,
)
from toolmend._routing import HOSTS, provider_for_host, request_profile
from toolmend._skeleton import ASSISTANT
from toolmend.formats import get as get_format
from toolmend.profiles import get_profile
from toolmend.profiles._vendors import RESPONSES_API

from . import budget as budgets
from . import telemetry
from .hooks import HookOptions, OnLoop, check_names, compatible_provider, mend
from .rescue import retry_history

__all__ = [
    "ENV_DISABLED",
    "ENV_PATCH",
    "ENV_PROVIDER",
    "ENV_REPAIR_CHAT_HISTORY",
    "HOSTS",
    "SDKS",
    "TARGETS",
    "WRAPT_FLOOR",
    "Sdk",
    "Target",
    "floors",
    "patch",
    "patch_from_env",
    "patched",
    "provider_for_host",
    "unpatch",
]

logger = logging.getLogger("toolmend")

WRAPT_FLOOR = "2.4"
"""The oldest wrapt with ``unwrap_object`` (remove one wrapper by its handle)."""

ENV_PATCH = "TOOLMEND_PATCH"
ENV_DISABLED = "TOOLMEND_PATCH_DISABLED"
ENV_PROVIDER = "TOOLMEND_PROVIDER"
ENV_REPAIR_CHAT_HISTORY = "TOOLMEND_REPAIR_CHAT_HISTORY"


@dataclass(frozen=True)
class Sdk:
    """One SDK :func:`patch` can switch on: its distribution and the toolmend extra for it."""

    distribution: str
    """The name ``importlib.metadata`` knows it by."""
    extra: str
    """``pip install 'toolmend[<extra>]'`` installs it with wrapt."""
    aliases: tuple[str, ...] = ()
    """Other names accepted in ``TOOLMEND_PATCH_DISABLED``."""


SDKS: Mapping[str, Sdk] = {
    "openai": Sdk("openai", "openai"),
    # one spelling: the distribution's, google-genai, written google_genai where a Python name
    # or a value must be one (patch()'s keyword, log labels); both are the same extra (PEP 685)
    # and the same value of TOOLMEND_PATCH_DISABLED. genai and gemini, older names, still work
    "google_genai": Sdk("google-genai", "google-genai", ("google_genai", "genai", "gemini")),
    "anthropic": Sdk("anthropic", "anthropic"),
}
"""The SDKs, by the keyword :func:`patch` takes for each."""


@dataclass(frozen=True)
class Target:
    """One patched method: a row of :data:`TARGETS`."""

    sdk: str
    """The key in :data:`SDKS` (the :func:`patch` keyword)."""
    module: str
    """The module that defines the class; its post-import hook installs the wrapper."""
    name: str
    """``"Class.method"`` in that module."""
    history: str
    """The keyword argument holding the history, or, for a row that ``stores``, the instance
    attribute holding the stored history."""
    format: str
    """The toolmend format of that history; the provider profile of the same name is the
    default (see the module docstring for what overrides it)."""
    since: str
    """The oldest SDK version this row was checked against; older versions are skipped."""
    stores: bool = False
    """True for a row that repairs a chat's stored history (``repair_chat_history=True``)."""

    @property
    def label(self) -> str:
        """How log lines name the row: ``openai.Completions.create``,
        ``anthropic.beta.AsyncMessages.stream``."""
        beta = ".beta" if ".beta." in self.module else ""
        return f"{self.sdk}{beta}.{self.name}"


_CHAT = "openai.resources.chat.completions.completions"
_RESPONSES = "openai.resources.responses.responses"
_BETA_RESPONSES = "openai.resources.beta.responses.responses"
_MODELS = "google.genai.models"
_CHATS = "google.genai.chats"
_MESSAGES = "anthropic.resources.messages.messages"
_BETA_MESSAGES = "anthropic.resources.beta.messages.messages"

# fmt: off
TARGETS: tuple[Target, ...] = (
    # openai: create + parse; the stream() helpers and with_*_response go through them.
    Target("openai", _CHAT, "Completions.create", "messages", "openai", "1.92.0"),
    Target("openai", _CHAT, "Completions.parse", "messages", "openai", "1.92.0"),
    Target("openai", _CHAT, "AsyncCompletions.create", "messages", "openai", "1.92.0"),
    Target("openai", _CHAT, "AsyncCompletions.parse", "messages", "openai", "1.92.0"),
    Target("openai", _RESPONSES, "Responses.create", "input", "openai-responses", "1.92.0"),
    Target("openai", _RESPONSES, "Responses.parse", "input", "openai-responses", "1.92.0"),
    Target("openai", _RESPONSES, "AsyncResponses.create", "input", "openai-responses", "1.92.0"),
    Target("openai", _RESPONSES, "AsyncResponses.parse", "input", "openai-responses", "1.92.0"),
    Target("openai", _BETA_RESPONSES, "Responses.create", "input", "openai-responses", "1.92.0"),
    Target("openai", _BETA_RESPONSES, "AsyncResponses.create", "input", "openai-responses",
           "1.92.0"),
    # google-genai: these four carry every request, chats' included.
    Target("google_genai", _MODELS, "Models.generate_content", "contents", "gemini", "1.0.0"),
    Target("google_genai", _MODELS, "Models.generate_content_stream", "contents", "gemini",
           "1.0.0"),
    Target("google_genai", _MODELS, "AsyncModels.generate_content", "contents", "gemini",
           "1.0.0"),
    Target("google_genai", _MODELS, "AsyncModels.generate_content_stream", "contents", "gemini",
           "1.0.0"),
    # google-genai chats' stored history: only with repair_chat_history=True.
    Target("google_genai", _CHATS, "Chat.send_message", "_curated_history", "gemini", "1.0.0",
           stores=True),
    Target("google_genai", _CHATS, "Chat.send_message_stream", "_curated_history", "gemini",
           "1.0.0", stores=True),
    Target("google_genai", _CHATS, "AsyncChat.send_message", "_curated_history", "gemini",
           "1.0.0", stores=True),
    Target("google_genai", _CHATS, "AsyncChat.send_message_stream", "_curated_history",
           "gemini", "1.0.0", stores=True),
    # anthropic: create, stream and parse each post by themselves; GA and beta.
    Target("anthropic", _MESSAGES, "Messages.create", "messages", "anthropic", "0.41.0"),
    Target("anthropic", _MESSAGES, "Messages.stream", "messages", "anthropic", "0.41.0"),
    Target("anthropic", _MESSAGES, "Messages.parse", "messages", "anthropic", "0.41.0"),
    Target("anthropic", _MESSAGES, "AsyncMessages.create", "messages", "anthropic", "0.41.0"),
    Target("anthropic", _MESSAGES, "AsyncMessages.stream", "messages", "anthropic", "0.41.0"),
    Target("anthropic", _MESSAGES, "AsyncMessages.parse", "messages", "anthropic", "0.41.0"),
    Target("anthropic", _BETA_MESSAGES, "Messages.create", "messages", "anthropic", "0.41.0"),
    Target("anthropic", _BETA_MESSAGES, "Messages.stream", "messages", "anthropic", "0.41.0"),
    Target("anthropic", _BETA_MESSAGES, "Messages.parse", "messages", "anthropic", "0.41.0"),
    Target("anthropic", _BETA_MESSAGES, "AsyncMessages.create", "messages", "anthropic",
           "0.41.0"),
    Target("anthropic", _BETA_MESSAGES, "AsyncMessages.stream", "messages", "anthropic",
           "0.41.0"),
    Target("anthropic", _BETA_MESSAGES, "AsyncMessages.parse", "messages", "anthropic",
           "0.41.0"),
)
# fmt: on
"""Every method toolmend wraps, one row each."""

_OPENAI_NAMES = frozenset({"openai", "azure"})
_RESPONSES_PAIRING = get_format(RESPONSES_API).required_pairing
"""The pairing every Responses profile has (a chat profile has another and refuses the input)."""
_TRUE = frozenset({"1", "true", "yes", "on"})


def floors() -> dict[str, str]:
    """The oldest supported version of each SDK distribution: the lowest ``since`` of its rows.

    The ``[openai]``, ``[google-genai]`` and ``[anthropic]`` extras in ``pyproject.toml`` name the
    same versions (a test compares them).
    """
    found: dict[str, str] = {}
    for row in TARGETS:
        dist = SDKS[row.sdk].distribution
        if dist not in found or _version(row.since) < _version(found[dist]):
            found[dist] = row.since
    return found


# --- the patch registry -------------------------------------------------------------------------


class _Registry:
    """All of the module's state: what is wanted, and the handle of every installed wrapper."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.wanted: frozenset[str] = frozenset()
        self.options = HookOptions()
        self.chat_history = False
        self.rescues = self.options.rescues
        """``options.rescues``, worked out once per :func:`patch` (read on every call)."""
        self.hooked: set[str] = set()
        """Modules whose post-import hook is registered (hooks cannot be withdrawn)."""
        self.handles: dict[Target, tuple[ModuleType, Any]] = {}
        """The installed wrappers: row -> (module, the FunctionWrapper wrap_object returned)."""
        self.hosts: dict[str, str | None] = {}
        self.logged: set[str] = set()


_registry = _Registry()


def patch(
    *,
    openai: bool = True,
    google_genai: bool = True,
    anthropic: bool = True,
    provider: str | None = None,
    policy: Policy | str | None = None,
    on_loop: OnLoop = "warn",
    repair_chat_history: bool = False,
    rescue: bool = True,
) -> None:
    """Repair the history of every request the chosen SDKs send, from now on.

    **Parameters:**

    * **openai**, **google_genai**, **anthropic** - *(optional)* which SDKs to patch (all by
      default); an SDK patched earlier and now ``False`` is unpatched.
    * **provider** - *(optional)* the provider profile for the openai rows (an openai client
      pointed at DeepSeek, Mistral, Groq, a gateway); left out, the ``base_url`` host decides
      (:data:`HOSTS`), else ``openai``.
    * **policy** - *(optional)* a :class:`toolmend.Policy`, or ``"repair"`` (default),
      ``"strict"`` (raise :class:`toolmend.ToolChainError`), ``"report"`` (only log).
    * **on_loop** - *(optional)* the loop guard: ``"warn"`` (default), ``"raise"``, ``"off"``.
    * **repair_chat_history** - *(optional)* also repair google-genai chats' stored history.
    * **rescue** - *(optional)* after the provider's HTTP 400 about the history's tool calls,
      send the request once more with the history :func:`toolmend.rescue` rewrites (default);
      ``False`` re-raises the provider's error as it came (so does ``TOOLMEND_RESCUE=0``, read
      on each refusal, and the ``report`` and ``strict`` policies, which ask toolmend to change
      nothing on its own).

    Works before or after the SDKs are imported and imports none of them. Idempotent.
    Raises ``ImportError`` naming the extra when wrapt is missing or older than
    :data:`WRAPT_FLOOR`, and :class:`toolmend.UnknownNameError` for an unknown provider or
    policy name.

    >>> import toolmend.integrations.patch as tm
    >>> tm.patch(google_genai=False, anthropic=False, provider="deepseek")
    >>> tm.unpatch()
    """
    wrapt = _wrapt()
    # an unknown provider or policy name fails here; a toolmend bug is logged and patching
    # goes on (every patched call fails open)
    check_names(provider=provider, policy=policy, source="patch()")
    if on_loop not in ("off", "warn", "raise"):
        raise UnknownNameError(f"on_loop must be 'off', 'warn' or 'raise', not {on_loop!r}")
    chosen = {"openai": openai, "google_genai": google_genai, "anthropic": anthropic}
    with _registry.lock:
        _registry.options = HookOptions(
            provider=provider, policy=policy, on_loop=on_loop, rescue=rescue
        )
        _registry.rescues = _registry.options.rescues
        _registry.chat_history = repair_chat_history
        _registry.wanted = frozenset(sdk for sdk, on in chosen.items() if on)
        for name in dict.fromkeys(row.module for row in TARGETS):
            if name not in _registry.hooked:
                _registry.hooked.add(name)
                wrapt.register_post_import_hook(_on_import, name)  # runs now if imported
            elif name in sys.modules:  # imported since its hook ran: sync it now
                _on_import(sys.modules[name])


def unpatch() -> None:
    """Remove every wrapper :func:`patch` installed, and only those. Safe to call any time.

    Methods bound while patched stay bound to a wrapper, which now calls straight through.
    """
    with _registry.lock:
        _registry.wanted = frozenset()
        for module in {module for module, _ in _registry.handles.values()}:
            _on_import(module)


def patched() -> tuple[str, ...]:
    """The labels of the rows whose wrapper is installed now, in :data:`TARGETS` order."""
    with _registry.lock:
        held = dict(_registry.handles)
    if not held:
        return ()
    wrapt = _wrapt()
    labels = []
    for row in TARGETS:
        if row in held:
            module, handle = held[row]
            owner = module.__dict__.get(row.name.split(".")[0])
            current = inspect.getattr_static(owner, row.name.split(".")[1], None)
            if current is not None and wrapt.find_wrapper(current, handle) is not None:
                labels.append(row.label)
    return tuple(labels)


def patch_from_env(environ: Mapping[str, str] | None = None) -> bool:
    """Call :func:`patch` as the environment says (see the module docstring); ``True`` if it did.

    Nothing happens unless ``TOOLMEND_PATCH`` is on. ``toolmend-run`` and the bootstrap
    ``sitecustomize`` call this; an error is logged, never raised, so the app still starts.
    """
    env = os.environ if environ is None else environ
    if env.get(ENV_PATCH, "").strip().lower() not in _TRUE:
        return False
    disabled = {n.strip().lower() for n in env.get(ENV_DISABLED, "").split(",") if n.strip()}
    names = {
        alias: sdk
        for sdk, info in SDKS.items()
        for alias in (sdk, info.distribution, info.extra, *info.aliases)
    }
    unknown = sorted(disabled - names.keys())
    if unknown:
        logger.warning(
            "toolmend: %s names unknown SDKs %s (known: %s)",
            ENV_DISABLED,
            ", ".join(unknown),
            ", ".join(SDKS),
        )
    off = {names[name] for name in disabled if name in names}
    try:
        patch(
            openai="openai" not in off,
            google_genai="google_genai" not in off,
            anthropic="anthropic" not in off,
            provider=env.get(ENV_PROVIDER) or None,
            repair_chat_history=env.get(ENV_REPAIR_CHAT_HISTORY, "").lower() in _TRUE,
        )
    except Exception:
        logger.exception("toolmend: %s is set but patching failed; nothing is patched", ENV_PATCH)
        return False
    return True


# --- installing and removing wrappers -----------------------------------------------------------


def _on_import(module: ModuleType) -> None:
    """The post-import hook: make ``module``'s rows match what is wanted. Never raises (a hook
    that raises would fail the user's ``import``)."""
    try:
        with _registry.lock:
            _sync(module)
    except Exception:
        logger.exception("toolmend: patching %s failed; it is left as it was", module.__name__)


def _sync(module: ModuleType) -> None:
    """Wrap the wanted rows of ``module`` not wrapped yet; unwrap the wrapped ones not wanted."""
    wrapt = _wrapt()
    skipped = []
    for row in TARGETS:
        if row.module != module.__name__:
            continue
        held = _registry.handles.get(row)
        if _wanted(row) and held is None:
            reason = _unsupported(row, module)
            if reason:
                skipped.append(reason)
                continue
            handle = wrapt.wrap_object(
                module, row.name, wrapt.FunctionWrapper, (_wrapper(row), _switch(row))
            )
            _registry.handles[row] = (module, handle)
        elif not _wanted(row) and held is not None:
            try:
                wrapt.unwrap_object(held[0], row.name, held[1], missing_ok=True)
            except Exception:  # WrapperNotOutermostError: a non-wrapt decorator sits on top
                logger.warning(
                    "toolmend: cannot remove the wrapper of %s (wrapped over by something that "
                    "is not wrapt); it stays installed, switched off",
                    row.label,
                    exc_info=True,
                )
                continue
            del _registry.handles[row]
    if skipped:  # one line; the same too-old SDK in its next module repeats it, so once
        _log_once(f"toolmend: not patching {'; '.join(dict.fromkeys(skipped))}")


def _wanted(row: Target) -> bool:
    return row.sdk in _registry.wanted and (not row.stores or _registry.chat_history)


def _switch(row: Target) -> Callable[[], bool]:
    """The per-call ``enabled`` switch of ``row``'s wrapper (wrapt evaluates it on every call)."""

    def enabled() -> bool:
        return row.sdk in _registry.wanted and (not row.stores or _registry.chat_history)

    return enabled


def _unsupported(row: Target, module: ModuleType) -> str | None:
    """Why ``row`` cannot be wrapped in this installation, as the log says it, or ``None``."""
    dist = SDKS[row.sdk].distribution
    installed = _installed(dist)
    if installed is not None and _version(installed) < _version(row.since):
        return f"{dist} {installed} (toolmend supports {dist}>={row.since})"
    owner_name, attribute = row.name.split(".")
    owner = module.__dict__.get(owner_name)
    if owner is None or inspect.getattr_static(owner, attribute, None) is None:
        return f"{row.label} (missing in {dist} {installed or '?'})"
    return None


def _installed(distribution: str) -> str | None:
    """The installed version of ``distribution`` (``None`` when its metadata is missing)."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _version(text: str) -> tuple[int, ...]:
    """``"1.92rc1"`` -> ``(1, 92, 0)``: enough to compare release numbers."""
    numbers = [0, 0, 0]
    for position, part in enumerate(text.split(".")[:3]):
        digits = re.match(r"\d+", part)
        numbers[position] = int(digits.group()) if digits else 0
    return tuple(numbers)


def _log_once(line: str) -> None:
    if line not in _registry.logged:
        _registry.logged.add(line)
        logger.warning("%s", line)


def _wrapt() -> Any:
    """wrapt, imported on first use; an ImportError naming the extra when it is missing."""
    try:
        wrapt = importlib.import_module("wrapt")
    except ImportError as error:
        raise ImportError(
            "toolmend.integrations.patch needs wrapt: pip install 'toolmend[openai]' "
            "(or [google-genai], [anthropic])"
        ) from error
    if not hasattr(wrapt, "unwrap_object"):
        raise ImportError(
            f"toolmend.integrations.patch needs wrapt>={WRAPT_FLOOR}, found "
            f"{getattr(wrapt, '__version__', '?')}: pip install -U 'toolmend[openai]'"
        )
    return wrapt


# --- the wrappers -------------------------------------------------------------------------------


def _wrapper(row: Target) -> Callable[[Any, Any, tuple[Any, ...], dict[str, Any]], Any]:
    """The wrapper of ``row``: one sync function for sync, async and streaming methods alike.

    It replaces the history keyword (or the stored chat history) and returns what
    ``wrapped(*args, **kwargs)`` returns, coroutine or stream, with the rescue around the call
    (:data:`_SENDERS`): toolmend never reads responses, only the error of a refused request.
    """
    prepare = _heal_chat if row.stores else _mend_kwargs
    send = _SENDERS.get(row.name, _send)

    def prepared(instance: Any, kwargs: dict[str, Any]) -> _Prepared:
        try:
            return prepare(row, instance, kwargs)
        except (ToolLoopError, ToolChainError):
            raise
        except Exception:
            logger.exception("toolmend failed on %s; the original request was sent", row.label)
            if not row.stores:  # a chat's stored history: its request is counted where it is sent
                telemetry.failed_open(row.label)
            return kwargs, None

    def wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if row.name in _AWAITED:
            history = kwargs.get(row.history)
            if isinstance(history, list | tuple) and budgets.offloads(
                history, _registry.options.budget
            ):
                return _later(row, wrapped, args, kwargs, prepared, instance)
        sent, provider = prepared(instance, kwargs)
        if provider is None or not _registry.rescues:
            return wrapped(*args, **sent)
        return send(row, wrapped, args, sent, provider)

    return wrapper


_Prepared = tuple[dict[str, Any], str | None]
"""The keyword arguments to send and the profile their history was held to (``None``: no
history was read, or toolmend failed on it, so there is nothing to rescue)."""

_AWAITED = frozenset(
    {
        "AsyncCompletions.create",
        "AsyncCompletions.parse",
        "AsyncResponses.create",
        "AsyncResponses.parse",
        "AsyncModels.generate_content",
        "AsyncMessages.create",
        "AsyncMessages.parse",
    }
)
"""The rows whose method is a coroutine function and whose history is a keyword argument: a
long history is repaired off the event loop (:func:`_later`). The async ``stream`` methods
return a stream manager at once, and a chat's stored history is changed in place: those are
repaired inline."""


async def _later(
    row: Target,
    wrapped: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    prepared: Callable[[Any, dict[str, Any]], _Prepared],
    instance: Any,
) -> Any:
    """The async call of ``row``, its history repaired off the event loop within the budget
    (:func:`toolmend.integrations.budget.run`); past the budget the original is sent (and not
    rescued: toolmend did not read it)."""

    def given_up() -> _Prepared:
        telemetry.failed_open(row.label, reason="time_budget")
        return kwargs, None

    sent, provider = await budgets.run(
        kwargs[row.history],
        lambda: prepared(instance, kwargs),
        given_up,
        source=row.label,
        budget=_registry.options.budget,
    )
    if provider is None or not _registry.rescues:
        return await wrapped(*args, **sent)
    return await _send_awaited(row, wrapped, args, sent, provider)


# --- the rescue: one retry after the provider's 400 about tool history --------------------------
#
# Each sender makes the call as the SDK makes it and, where the provider's refusal surfaces
# (the call, its await, a stream manager's __enter__, a stream's first item), hands the error to
# retry_history; None re-raises it unchanged, else the same call is made once more with the
# rescued history. The retry is made outside the ``except`` block, so its own error propagates
# as the provider raised it (no retry of the retry, no chained context).


def _again(
    row: Target, sent: dict[str, Any], provider: str, error: BaseException
) -> dict[str, Any] | None:
    """The keyword arguments of the one retry after ``error``, or ``None`` (re-raise it)."""
    model = sent.get("model")
    rescued = retry_history(
        sent[row.history],
        error,
        provider=provider,
        source=row.label,
        format=row.format,
        model=model if isinstance(model, str) else None,
        rescue_on=_registry.rescues,
    )
    return None if rescued is None else {**sent, row.history: rescued.messages}


def _send(
    row: Target, wrapped: Any, args: tuple[Any, ...], sent: dict[str, Any], provider: str
) -> Any:
    """A method that sends before it returns (sync ``create``/``parse``, ``stream=True``)."""
    try:
        return wrapped(*args, **sent)
    except Exception as error:
        again = _again(row, sent, provider, error)
        if again is None:
            raise
    return wrapped(*args, **again)


async def _send_awaited(
    row: Target, wrapped: Any, args: tuple[Any, ...], sent: dict[str, Any], provider: str
) -> Any:
    """A coroutine method (async ``create``/``parse``, ``generate_content``): the refusal comes
    out of the ``await``."""
    try:
        return await wrapped(*args, **sent)
    except Exception as error:
        again = _again(row, sent, provider, error)
        if again is None:
            raise
    return await wrapped(*args, **again)


def _send_manager(
    row: Target, wrapped: Any, args: tuple[Any, ...], sent: dict[str, Any], provider: str
) -> Any:
    """anthropic ``messages.stream``: it returns a stream manager that posts in ``__enter__``
    (``__aenter__``), so the manager is handed back behind a proxy whose ``__enter__`` rescues
    (the proxy passes everything else through, ``isinstance`` included)."""
    return _manager_proxy()(wrapped(*args, **sent), (row, wrapped, args, sent, provider))


def _send_generator(
    row: Target, wrapped: Any, args: tuple[Any, ...], sent: dict[str, Any], provider: str
) -> Any:
    """google-genai's sync ``generate_content_stream``, a generator: it posts when the first
    item is asked for."""
    return _rescued_items(iter(wrapped(*args, **sent)), row, wrapped, args, sent, provider)


def _rescued_items(
    items: Iterator[Any],
    row: Target,
    wrapped: Any,
    args: tuple[Any, ...],
    sent: dict[str, Any],
    provider: str,
) -> Iterator[Any]:
    """``items``, or after a refusal at the first item, the retry's items; the stream in use is
    closed when this one is (a caller that stops early)."""
    try:
        try:
            first = next(items)
        except StopIteration:
            return
        except Exception as error:
            again = _again(row, sent, provider, error)
            if again is None:
                raise
        else:
            again = None
            yield first
        if again is not None:
            items = iter(wrapped(*args, **again))
        yield from items
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()


async def _send_async_stream(
    row: Target, wrapped: Any, args: tuple[Any, ...], sent: dict[str, Any], provider: str
) -> Any:
    """google-genai's async ``generate_content_stream``: a coroutine giving an async iterator
    that posts when iteration starts (a refusal out of the ``await`` itself is rescued too)."""
    try:
        items = await wrapped(*args, **sent)
    except Exception as error:
        again = _again(row, sent, provider, error)
        if again is None:
            raise
    else:
        return _rescued_async_items(items, row, wrapped, args, sent, provider)
    return await wrapped(*args, **again)


async def _rescued_async_items(
    items: AsyncIterator[Any],
    row: Target,
    wrapped: Any,
    args: tuple[Any, ...],
    sent: dict[str, Any],
    provider: str,
) -> AsyncIterator[Any]:
    """:func:`_rescued_items` for an async iterator."""
    try:
        try:
            first = await anext(items)
        except StopAsyncIteration:
            return
        except Exception as error:
            again = _again(row, sent, provider, error)
            if again is None:
                raise
        else:
            again = None
            yield first
        if again is not None:
            items = await wrapped(*args, **again)
        async for item in items:
            yield item
    finally:
        close = getattr(items, "aclose", None)
        if close is not None:
            await close()


_Sender = Callable[[Target, Any, tuple[Any, ...], dict[str, Any], str], Any]

_SENDERS: Mapping[str, _Sender] = {
    **dict.fromkeys(_AWAITED, _send_awaited),
    "Messages.stream": _send_manager,
    "AsyncMessages.stream": _send_manager,
    "Models.generate_content_stream": _send_generator,
    "AsyncModels.generate_content_stream": _send_async_stream,
}
"""How each row's method reaches the provider, where it is not :func:`_send` (a sync call)."""


@functools.cache
def _manager_proxy() -> Any:
    """The proxy class of a stream manager (built on first use: wrapt is imported lazily)."""

    class RescuingManager(_wrapt().ObjectProxy):  # type: ignore[misc]
        """A stream manager whose ``__enter__``/``__aenter__`` retries once after a 400."""

        def __init__(self, manager: Any, call: tuple[Any, ...]) -> None:
            super().__init__(manager)
            self._self_call = call

        def _self_retry(self, error: BaseException) -> Any:
            row, wrapped, args, sent, provider = self._self_call
            again = _again(row, sent, provider, error)
            if again is None:
                return None
            self.__wrapped__ = wrapped(*args, **again)  # __exit__ closes the retry's stream
            return self.__wrapped__

        def __enter__(self) -> Any:
            try:
                return self.__wrapped__.__enter__()
            except Exception as error:
                manager = self._self_retry(error)
                if manager is None:
                    raise
            return manager.__enter__()

        def __exit__(self, *exc: Any) -> Any:
            return self.__wrapped__.__exit__(*exc)

        async def __aenter__(self) -> Any:
            try:
                return await self.__wrapped__.__aenter__()
            except Exception as error:
                manager = self._self_retry(error)
                if manager is None:
                    raise
            return await manager.__aenter__()

        async def __aexit__(self, *exc: Any) -> Any:
            return await self.__wrapped__.__aexit__(*exc)

    return RescuingManager


def _mend_kwargs(row: Target, instance: Any, kwargs: dict[str, Any]) -> _Prepared:
    """``kwargs`` with the repaired history (``kwargs`` itself when nothing changed) and the
    profile it was held to (``None`` when there was no history, or toolmend could not read it
    or failed on it: the original went out, and a rescue would read it no better)."""
    history = kwargs.get(row.history)
    if history is None or isinstance(history, str):
        return kwargs, None
    if row.format != "gemini" and not isinstance(history, (list, tuple)):
        if isinstance(history, Mapping) or not isinstance(history, Iterable):
            return kwargs, None  # not a history: the SDK will say so
        # an iterable of messages: read it once, and send the list, even if toolmend fails
        # below (``kwargs`` is this call's own dict, so the wrapper sends what it holds)
        history = kwargs[row.history] = list(history)
    if row.format == RESPONSES_API:
        provider = _responses_profile(instance, kwargs.get("model"))
    else:
        provider = _variant(_provider(row, instance, kwargs.get("model")), kwargs)
    mended = mend(
        history, provider=provider, source=row.label, options=_registry.options, format=row.format
    )
    if mended.failed:  # toolmend could not read it (or failed): nothing to rescue either
        return kwargs, None
    if mended.messages is kwargs[row.history]:
        return kwargs, provider
    return {**kwargs, row.history: mended.messages}, provider


def _heal_chat(row: Target, instance: Any, kwargs: dict[str, Any]) -> _Prepared:
    """Give the chat its stored history repaired (the opt-in), keeping calls still waiting for
    the results this very turn may carry. The request itself is repaired by the Models rows."""
    stored = getattr(instance, row.history, None)
    if not isinstance(stored, list) or not stored:
        return kwargs, None
    options = dataclasses.replace(
        _registry.options,
        policy=dataclasses.replace(as_policy(_registry.options.policy), frontier="keep"),
        on_loop="off",  # the request rows run the loop guard on the whole request
    )
    provider = _variant(row.format, {"model": getattr(instance, "_model", None)})
    # the model's calls in the last content wait for this very turn's responses: healed
    # without them, so the rule on a request's trailing calls says nothing about them
    head = stored[:-1] if _ends_on_calls(stored, row.format) else stored
    if not head:
        return kwargs, None
    mended = mend(
        head,
        provider=provider,
        source=row.label,
        options=options,
        format=row.format,
        request=False,  # the chat's stored history: the request is counted where it is sent
    )
    if mended.messages is not head:
        # a new list, not stored[:] = ...: google-genai 1.0 keeps the caller's own history list
        setattr(instance, row.history, [*mended.messages, *stored[len(head) :]])
    return kwargs, None


def _ends_on_calls(stored: list[Any], format: str) -> bool:
    """Whether the last message of a stored history is the model's, making calls."""
    try:
        _, skeleton = read_history(stored[-1:], format)
    except ToolmendError:  # unreadable: the whole history goes to mend, which says so
        return False
    return skeleton.kinds[0] == ASSISTANT and bool(skeleton.calls.get(0))


def _provider(row: Target, instance: Any, model: object) -> str:
    """The provider for a request of ``row`` for ``model`` made through the resource
    ``instance`` (:func:`toolmend.integrations.hooks.compatible_provider` of its client's
    host, for an OpenAI client)."""
    if row.sdk != "openai":
        return row.format
    chosen = _registry.options.provider
    if chosen is None:
        chosen = compatible_provider(_host_provider(instance), model)
    if chosen in _OPENAI_NAMES:
        return row.format
    return str(chosen)


def _responses_profile(instance: Any, model: object) -> str:
    """The profile of the ``/v1/responses`` a Responses request for ``model`` through the
    resource ``instance`` meets: that of the provider :func:`_provider` would pick for a chat
    request (``patch(provider=...)``, the client's host, else the model), its Responses API, the
    model picking the variant."""
    name = model if isinstance(model, str) else None
    chosen = _registry.options.provider
    if chosen is None:
        chosen = compatible_provider(_host_provider(instance), name)
    return _responses_named(chosen, name)


def _responses_named(provider: str, model: str | None) -> str:
    """:func:`_responses_profile` once the provider is known (no cache of its own:
    :func:`request_profile` caches what it derives, and a fault in it must reach this request).
    ``openai-responses`` (model-picked) for a provider with no Responses rules: a chat profile
    would refuse the input, and before any host was read every Responses row used it."""
    try:
        profile = request_profile(provider, format=RESPONSES_API, model=model)
    except InvalidHistoryError:  # the vendor serves no Responses API toolmend has rules for
        profile = None
    if profile is None or get_profile(profile).pairing != _RESPONSES_PAIRING:
        return request_profile(RESPONSES_API, model=model)
    return profile


def _host_provider(instance: Any) -> str | None:
    """The :data:`HOSTS` provider of the client behind an openai resource (cached per host)."""
    base_url = getattr(getattr(instance, "_client", None), "base_url", None)
    host = getattr(base_url, "host", None)
    if not isinstance(host, str):
        return None
    try:
        return _registry.hosts[host]
    except KeyError:
        found = _registry.hosts[host] = provider_for_host(host)
        return found


def _variant(provider: str, kwargs: Mapping[str, Any]) -> str:
    """The profile variant this request meets (see :func:`toolmend.request_profile`)."""
    model = kwargs.get("model")
    return request_profile(
        provider, model=model if isinstance(model, str) else None, thinking=kwargs.get("thinking")
    )
