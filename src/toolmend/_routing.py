"""Which profile a request meets: who serves it, the API its history's format belongs to, and
the variant a model or a request setting switches on.

Hooks know a provider name, a model string, a client's base URL, a request's ``thinking``
setting, the history's format; the profiles are finer than provider names (a profile is a
vendor-and-API pair: ``openai-responses``; Gemini 3 enforces thought signatures, Anthropic with
extended thinking wants thinking blocks kept, DeepSeek's reasoner wants ``reasoning_content``, a
self-hosted server follows the model's chat template). This module and
:mod:`toolmend.profiles._vendors` are the one place that knowledge lives, so every hook, the
public functions and the strict test server judge a request the same way.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from ._report import InvalidHistoryError, UnknownNameError
from .formats import get as get_format
from .profiles import get_profile
from .profiles._anthropic import NO_PREFILL_MODELS
from .profiles._bedrock import TOOLS_ALONE_MODELS
from .profiles._openai import RESPONSES_REASONING_MODELS
from .profiles._templates import template_profile
from .profiles._vendors import VENDORS, vendor_named

__all__ = [
    "HOSTS",
    "MODEL_FAMILIES",
    "converted_profile",
    "derived_profile",
    "provider_for_base_url",
    "provider_for_host",
    "provider_for_model",
    "request_profile",
]

HOSTS: tuple[tuple[str, str], ...] = (
    ("api.openai.com", "openai"),
    ("*.openai.azure.com", "azure"),
    ("*.cognitiveservices.azure.com", "azure"),
    ("api.deepseek.com", "deepseek"),
    ("api.mistral.ai", "mistral"),
    ("api.groq.com", "groq"),
    ("generativelanguage.googleapis.com", "gemini"),
    ("aiplatform.googleapis.com", "gemini"),
    ("*-aiplatform.googleapis.com", "gemini"),
    ("api.anthropic.com", "anthropic"),
)
"""``base_url`` host pattern (``fnmatch``) -> provider, for OpenAI-compatible clients."""


def provider_for_host(host: str) -> str | None:
    """The provider :data:`HOSTS` gives a ``base_url`` host, or ``None`` when it has none.

    >>> provider_for_host("api.deepseek.com"), provider_for_host("myco.openai.azure.com")
    ('deepseek', 'azure')
    >>> provider_for_host("127.0.0.1") is None
    True
    """
    host = host.lower().rstrip(".")
    for pattern, provider in HOSTS:
        if fnmatch.fnmatchcase(host, pattern):
            return provider
    return None


def provider_for_base_url(base_url: object) -> str | None:
    """:func:`provider_for_host` for the host of a client's ``base_url`` (a URL string, or
    anything whose ``str`` is one); ``None`` without a host or with one :data:`HOSTS` lacks.

    >>> provider_for_base_url("https://api.deepseek.com/v1"), provider_for_base_url("")
    ('deepseek', None)
    """
    host = urlsplit(str(base_url or "")).hostname
    return provider_for_host(host) if host else None


MODEL_FAMILIES: tuple[tuple[str, str], ...] = (
    ("deepseek-reasoner", "deepseek-reasoner"),
    ("deepseek", "deepseek"),
    ("mistral", "mistral"),
    ("open-mistral", "mistral"),
    ("codestral", "mistral"),
    ("devstral", "mistral"),
    ("magistral", "mistral"),
    ("ministral", "mistral"),
    ("pixtral", "mistral"),
)
"""Model name prefix -> the provider: models only one OpenAI-compatible provider serves."""


def provider_for_model(model: str | None) -> str | None:
    """The provider :data:`MODEL_FAMILIES` gives a model name, or ``None``.

    >>> provider_for_model("deepseek-reasoner"), provider_for_model("gpt-4o") is None
    ('deepseek-reasoner', True)
    """
    name = (model or "").lower().rsplit("/", 1)[-1]
    for prefix, provider in MODEL_FAMILIES:
        if name.startswith(prefix):
            return provider
    return None


_REGION = re.compile(r"^(?:[a-z]{2}|apac|us-gov|global)\.(?=[a-z])")
"""A Bedrock cross-region inference profile's prefix (``us.``, ``eu.``, ``apac.``, ...)."""


def request_profile(
    provider: str,
    *,
    format: str | None = None,
    model: str | None = None,
    thinking: object = None,
) -> str:
    """The profile a request to ``provider`` meets, given its history's ``format``, its model and
    its ``thinking`` setting.

    ``provider`` is who serves the request: a vendor or a self-hosted server
    (:data:`toolmend.profiles._vendors.VENDORS`: ``openai``, ``deepseek``, ``vllm``, ...), or a
    profile named outright (``openai-responses``, ``deepseek-reasoner``, an alias), which is taken
    as it is. For a vendor, the format picks the API (Responses items go to its ``/v1/responses``;
    ``None`` means chat messages) and the model the variant: a Gemini 3 model (``gemini-3*``, the
    ``gemini-*-latest`` aliases; not ``gemini-3-pro-image*``, documented as not enforcing
    signatures) meets ``gemini-3``; an Anthropic request with thinking ``enabled`` or ``adaptive``
    meets ``anthropic-thinking``, one to a Claude model without prefill
    (:data:`~toolmend.profiles._anthropic.NO_PREFILL_MODELS`) ``anthropic-no-prefill``, and one with
    both ``anthropic-thinking-no-prefill``; DeepSeek's reasoner model meets ``deepseek-reasoner``;
    an OpenAI reasoning model on the Responses API (o-series, ``gpt-5*``, codex) meets
    ``openai-responses-reasoning`` (also when ``openai-responses`` is named outright); a Llama or
    Mistral model on Bedrock (``meta.llama3-1-70b-instruct-v1:0``, ``us.meta.llama...``,
    ``mistral.*``) meets ``bedrock-tools-alone``, a Claude model without prefill there
    ``bedrock-no-prefill``; on a self-hosted server the model's chat template picks the chat rules.
    Anything else meets ``provider`` itself (the name given, when it already means that profile).

    Raises :class:`toolmend.InvalidHistoryError` when the vendor serves no API for that format
    that toolmend has rules for, and :class:`toolmend.UnknownNameError` for an unknown format.

    >>> request_profile("gemini", model="models/gemini-3.7-flash")
    'gemini-3'
    >>> request_profile("anthropic", thinking={"type": "enabled", "budget_tokens": 2048})
    'anthropic-thinking'
    >>> request_profile("anthropic", model="claude-sonnet-4-6")
    'anthropic-no-prefill'
    >>> request_profile("deepseek", model="deepseek-chat")
    'deepseek'
    >>> request_profile("deepseek", format="openai-responses")
    'deepseek-responses'
    """
    native = get_format(format).native_provider if format is not None else "openai"
    return derived_profile(provider, native, model=model, thinking=thinking)


def derived_profile(
    provider: str, native: str, *, model: str | None = None, thinking: object = None
) -> str:
    """:func:`request_profile` for a history whose format's own provider is ``native``
    (``Format.native_provider``). Cached: a request costs one dictionary look-up."""
    on = isinstance(thinking, Mapping) and thinking.get("type") in ("enabled", "adaptive")
    return _derived(provider, native, model if isinstance(model, str) else None, on)


@functools.lru_cache(maxsize=2048)
def _derived(provider: str, native: str, model: str | None, thinking: bool) -> str:
    # 1. who serves it: a profile named outright is taken as it is
    vendor = vendor_named(provider)
    if vendor is None:
        return "openai-responses-reasoning" if _reasoning_named(provider, model) else provider
    # 2. the API the history's format goes to
    profile = vendor.profile(native)
    if profile is None:
        raise InvalidHistoryError(
            f"{provider!r} serves no Responses API toolmend has rules for; vendors and servers "
            f"that do: {', '.join(v.name for v in VENDORS if v.responses is not None)}"
        )
    # 3. the model: a self-hosted server's chat rules come from the model's chat template
    if vendor.server:
        if profile == vendor.chat:
            profile = template_profile(model) or profile
        return _named(provider, profile)
    # 4. the variants a model or a request setting switches on
    name = model.lower().rsplit("/", 1)[-1] if model is not None else ""
    if profile == "gemini" and (
        (name.startswith("gemini-3") and not name.startswith("gemini-3-pro-image"))
        or (name.startswith("gemini-") and name.endswith("-latest"))
    ):
        return "gemini-3"
    # Bedrock's and Vertex's ids wrap the name (``us.anthropic.claude-opus-4-6-v1``)
    at = name.find("claude-")
    no_prefill = at >= 0 and name.startswith(NO_PREFILL_MODELS, at)
    if profile == "anthropic":
        if thinking:
            return "anthropic-thinking-no-prefill" if no_prefill else "anthropic-thinking"
        if no_prefill:
            return "anthropic-no-prefill"
    elif profile == "deepseek" and name.startswith("deepseek-reasoner"):
        return "deepseek-reasoner"
    elif profile == "openai-responses" and name.startswith(RESPONSES_REASONING_MODELS):
        return "openai-responses-reasoning"
    elif profile == "bedrock" and _REGION.sub("", name).startswith(TOOLS_ALONE_MODELS):
        return "bedrock-tools-alone"
    elif profile == "bedrock" and no_prefill:
        return "bedrock-no-prefill"
    return _named(provider, profile)


def _named(provider: str, profile: str) -> str:
    """``provider`` itself when it already names ``profile`` (``azure`` for ``openai``, ``vllm``
    for ``hf-template``: hooks and logs keep the name they were given), else ``profile``."""
    return provider if get_profile(provider).name == profile else profile


def _reasoning_named(provider: str, model: str | None) -> bool:
    """``openai-responses`` named outright (the hooks' Responses rows, the strict server's
    route) for an OpenAI reasoning model: its variant applies as it does for the vendor."""
    try:
        named = get_profile(provider).name
    except UnknownNameError:
        return False
    name = model.lower().rsplit("/", 1)[-1] if model is not None else ""
    return named == "openai-responses" and name.startswith(RESPONSES_REASONING_MODELS)


def converted_profile(provider: str, model: str | None = None) -> str:
    """The profile for an OpenAI-shaped history that a gateway (LiteLLM) converts for
    ``provider``'s API, given the deployment's ``model``.

    A Claude model on Gemini's platform (Vertex AI's partner models) is sent in Anthropic's
    format and meets ``anthropic`` (``anthropic-no-prefill`` for a model without prefill);
    DeepSeek's reasoner meets ``deepseek-reasoner``, whose rule about ``reasoning_content``
    holds for OpenAI-shaped messages. A Gemini 3 model meets
    ``gemini``: its thought signatures are the gateway's to carry, in fields an OpenAI-shaped
    history does not show. Anything else meets ``provider`` itself.

    >>> converted_profile("gemini", "claude-sonnet-4-5@20250929")
    'anthropic'
    >>> converted_profile("deepseek", "deepseek-reasoner"), converted_profile("gemini", "gemini-3")
    ('deepseek-reasoner', 'gemini')
    """
    if provider == "gemini":
        claude = isinstance(model, str) and model.lower().startswith("claude")
        return request_profile("anthropic", model=model) if claude else provider
    return request_profile(provider, model=model)
