"""Which profile a request meets: the provider behind a base URL, and the variant a model or a
request setting switches on.

Hooks know a provider name, a model string, a client's base URL, a request's ``thinking``
setting; the profiles are finer than provider names (Gemini 3 enforces thought signatures,
Anthropic with extended thinking wants thinking blocks kept, DeepSeek's reasoner wants
``reasoning_content``). This table and these two functions are the one place that knowledge
lives, so every hook (and the strict test server) judges a request the same way.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from urllib.parse import urlsplit

from .profiles._anthropic import NO_PREFILL_MODELS
from .profiles._templates import template_profile

__all__ = [
    "HOSTS",
    "MODEL_FAMILIES",
    "converted_profile",
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


SERVERS = frozenset({"hf-template", "vllm", "tgi", "llama.cpp"})
"""Self-hosted servers: a request's rules there come from the model's chat template."""

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


def request_profile(provider: str, *, model: str | None = None, thinking: object = None) -> str:
    """The profile a request to ``provider`` meets, given its model and ``thinking`` setting.

    A Gemini 3 model (``gemini-3*``, the ``gemini-*-latest`` aliases; not ``gemini-3-pro-image*``,
    documented as not enforcing signatures) meets ``gemini-3``; an Anthropic request with
    thinking ``enabled`` or ``adaptive`` meets ``anthropic-thinking``, one to a Claude model
    without prefill (:data:`~toolmend.profiles._anthropic.NO_PREFILL_MODELS`) otherwise
    ``anthropic-no-prefill``; DeepSeek's reasoner model meets ``deepseek-reasoner``. Anything
    else meets ``provider`` itself.

    >>> request_profile("gemini", model="models/gemini-3.7-flash")
    'gemini-3'
    >>> request_profile("anthropic", thinking={"type": "enabled", "budget_tokens": 2048})
    'anthropic-thinking'
    >>> request_profile("anthropic", model="claude-sonnet-4-6")
    'anthropic-no-prefill'
    >>> request_profile("deepseek", model="deepseek-chat")
    'deepseek'
    """
    if provider in SERVERS:
        return template_profile(model) or provider
    name = model.lower().rsplit("/", 1)[-1] if isinstance(model, str) else ""
    if provider == "gemini" and (
        (name.startswith("gemini-3") and not name.startswith("gemini-3-pro-image"))
        or (name.startswith("gemini-") and name.endswith("-latest"))
    ):
        return "gemini-3"
    if provider == "anthropic":
        if isinstance(thinking, Mapping) and thinking.get("type") in ("enabled", "adaptive"):
            return "anthropic-thinking"
        # Bedrock's and Vertex's ids wrap the name (``us.anthropic.claude-opus-4-6-v1``)
        at = name.find("claude-")
        if at >= 0 and name.startswith(NO_PREFILL_MODELS, at):
            return "anthropic-no-prefill"
    elif provider == "deepseek" and name.startswith("deepseek-reasoner"):
        return "deepseek-reasoner"
    return provider


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
