"""Who serves a request: the vendors and self-hosted servers a user names as ``provider=``, and
the profile each one's endpoints take.

A profile is a vendor-and-API pair (``openai-responses``, ``deepseek``); a user names the
vendor. The history's format says which of the vendor's APIs it goes to (Responses items to
``/v1/responses``, anything else to the chat API or the vendor's own), and this table gives that
API's profile; :func:`toolmend._routing.request_profile` then lets the model pick a variant.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["RESPONSES_API", "VENDORS", "Vendor", "vendor_named"]

RESPONSES_API = "openai-responses"
"""The native provider of the Responses item format (``Format.native_provider``): a history in
that format goes to a vendor's ``/v1/responses``."""


@dataclass(frozen=True)
class Vendor:
    """One vendor or self-hosted server and the profiles of the APIs it serves."""

    name: str
    """The name users pass as ``provider=``."""
    chat: str
    """The profile of its chat API (for a vendor with its own block format, the family profile,
    which judges both the OpenAI-shaped history a gateway converts and the native one)."""
    responses: str | None = None
    """The profile of its ``/v1/responses``; None when it serves none toolmend has rules for."""
    server: bool = False
    """A self-hosted server: the model's chat template picks the chat rules
    (:func:`toolmend.profiles._templates.template_profile`)."""
    aliases: tuple[str, ...] = ()
    """Other names for it."""
    why: str = ""
    """Why these profiles (docs/providers.md prints it)."""

    def profile(self, native: str) -> str | None:
        """The profile for a history whose format's own provider is ``native``: the Responses
        profile for Responses items, else the chat profile (None: it serves no such API)."""
        return self.responses if native == RESPONSES_API else self.chat


VENDORS: tuple[Vendor, ...] = (
    Vendor(
        "openai",
        "openai",
        "openai-responses",
        why="OpenAI's own Chat Completions and Responses APIs.",
    ),
    Vendor(
        "azure",
        "openai",
        "openai-responses",
        aliases=("azure-openai",),
        why="Azure OpenAI serves OpenAI's models behind the same two APIs and answers with "
        "OpenAI's errors.",
    ),
    Vendor(
        "deepseek",
        "deepseek",
        "deepseek-responses",
        why="DeepSeek's chat API pairs results by count; its `/v1/responses` (2026) wants the "
        "outputs of a run of calls right after the run. `deepseek-reasoner` models meet "
        "`deepseek-reasoner`.",
    ),
    Vendor(
        "mistral",
        "mistral",
        why="La Plateforme, judged by mistral-common's validator; no Responses API.",
    ),
    Vendor("groq", "groq", why="Groq's chat API (its Responses API is beta; no rules known)."),
    Vendor(
        "anthropic",
        "anthropic",
        why="The Messages API, or an OpenAI-shaped history a gateway converts for it; thinking "
        "requests meet `anthropic-thinking`.",
    ),
    Vendor(
        "gemini",
        "gemini",
        aliases=("vertex",),
        why="The Gemini API and Vertex AI (`contents`, or an OpenAI-shaped history a gateway "
        "converts); Gemini 3 models meet `gemini-3`.",
    ),
    Vendor(
        "bedrock",
        "bedrock",
        why="The Converse API, or an OpenAI-shaped history LiteLLM converts for it.",
    ),
    Vendor(
        "openrouter",
        "openai",
        why="A gateway taking OpenAI's chat schema for every upstream; the upstream's own rules "
        "are unknown to it, so OpenAI's apply (name the upstream vendor when it is known).",
    ),
    Vendor(
        "vllm",
        "hf-template",
        "hf-template-responses",
        server=True,
        why="Renders the model's chat template; serves `/v1/responses` through it.",
    ),
    Vendor(
        "ollama",
        "hf-template",
        "hf-template-responses",
        server=True,
        why="Renders the model's chat template; `/v1/responses` since 0.13.3 (stateless).",
    ),
    Vendor(
        "lm-studio",
        "hf-template",
        "hf-template-responses",
        server=True,
        aliases=("lmstudio",),
        why="Renders the model's chat template; `/v1/responses` since 0.3.29.",
    ),
    Vendor(
        "llama.cpp",
        "hf-template",
        server=True,
        aliases=("llama-server",),
        why="Renders the model's chat template; no `/v1/responses` (ggml-org/llama.cpp#19138).",
    ),
    Vendor(
        "tgi",
        "hf-template",
        server=True,
        why="Text Generation Inference renders the model's chat template; no `/v1/responses`.",
    ),
    Vendor(
        "hf-template",
        "hf-template",
        "hf-template-responses",
        server=True,
        why="Any other OpenAI-compatible server that renders the model's chat template.",
    ),
)
"""Every vendor and server toolmend knows, in the order help texts list them."""

_BY_NAME: Mapping[str, Vendor] = MappingProxyType(
    {name: vendor for vendor in VENDORS for name in (vendor.name, *vendor.aliases)}
)


def vendor_named(name: str) -> Vendor | None:
    """The vendor or server called ``name`` (or one of its aliases), case-insensitive; None for
    any other name (a profile named outright, or an unknown one)."""
    found = _BY_NAME.get(name)
    return found if found is not None else _BY_NAME.get(name.strip().lower())
