"""Provider rule profiles: which checks a provider enforces, with which parameters, and the exact
error text each one prevents.

A profile is data, not a code path, kept in one module per provider family (as
:mod:`toolmend.formats` keeps one per format): :mod:`toolmend._rules` runs the checks a profile
enables and :mod:`toolmend._repair` reads the same fields to decide how to repair. Every enabled
check carries the provider's own error text and where that text was seen (``docs/providers.md``
lists them all, generated from this package); a test fails on a check whose text or source is
empty.

Rules the evidence marks "strict-only" (inferred wording, model-dependent or historical) are kept
in ``strict_checks`` for the record and are not run.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from types import MappingProxyType

from .._report import UnknownNameError
from ._anthropic import (
    ANTHROPIC,
    ANTHROPIC_NO_PREFILL,
    ANTHROPIC_THINKING,
    ANTHROPIC_THINKING_NO_PREFILL,
)
from ._base import Check, Profile, compiled
from ._bedrock import BEDROCK, BEDROCK_NO_PREFILL, BEDROCK_TOOLS_ALONE
from ._deepseek import DEEPSEEK, DEEPSEEK_REASONER, DEEPSEEK_RESPONSES
from ._gemini import GEMINI, GEMINI_3, GEMINI_LITELLM, GEMINI_NO_IDS
from ._groq import GROQ
from ._mistral import MISTRAL
from ._openai import OPENAI, OPENAI_RESPONSES, OPENAI_RESPONSES_REASONING
from ._servers import HF_TEMPLATE_RESPONSES
from ._templates import HF_GEMMA_3, HF_LLAMA_3, HF_MISTRAL, HF_TEMPLATE, HF_TEMPLATE_STRICT
from ._vendors import VENDORS, vendor_named

__all__ = [
    "PROFILES",
    "Check",
    "Profile",
    "compiled",
    "get_profile",
    "primary_names",
    "profile_names",
]

PROFILES: Mapping[str, Profile] = MappingProxyType(
    {
        p.name: p
        for p in (
            OPENAI,
            OPENAI_RESPONSES,
            OPENAI_RESPONSES_REASONING,
            DEEPSEEK,
            DEEPSEEK_REASONER,
            DEEPSEEK_RESPONSES,
            MISTRAL,
            GROQ,
            HF_TEMPLATE,
            HF_TEMPLATE_STRICT,
            HF_TEMPLATE_RESPONSES,
            HF_GEMMA_3,
            HF_LLAMA_3,
            HF_MISTRAL,
            ANTHROPIC,
            ANTHROPIC_THINKING,
            ANTHROPIC_NO_PREFILL,
            ANTHROPIC_THINKING_NO_PREFILL,
            GEMINI,
            GEMINI_3,
            GEMINI_NO_IDS,
            GEMINI_LITELLM,
            BEDROCK,
            BEDROCK_TOOLS_ALONE,
            BEDROCK_NO_PREFILL,
        )
    }
)
"""Every profile by its name."""

_BY_ALIAS: Mapping[str, Profile] = MappingProxyType(
    {alias: p for p in PROFILES.values() for alias in p.aliases}
)


def profile_names() -> list[str]:
    """Every provider name and alias toolmend accepts, sorted: the vendors and servers, the
    profiles (vendor-and-API pairs, variants) and their aliases."""
    vendors = {name for vendor in VENDORS for name in (vendor.name, *vendor.aliases)}
    return sorted({*PROFILES, *_BY_ALIAS, *vendors})


def primary_names() -> list[str]:
    """The vendors and self-hosted servers, in the table's order: what help texts and errors
    list. The profiles they lead to (``openai-responses``, ``deepseek-reasoner``, ...) and the
    aliases are accepted too, and listed in docs/providers.md."""
    return [vendor.name for vendor in VENDORS]


def get_profile(provider: str | Profile) -> Profile:
    """The profile for a provider name (case-insensitive), or a clear error suggesting one."""
    if isinstance(provider, Profile):
        return provider
    if not isinstance(provider, str):
        raise UnknownNameError(f"provider must be a name, got {type(provider).__name__}")
    key = provider.strip().lower()
    found = PROFILES.get(key) or _BY_ALIAS.get(key)
    if found is not None:
        return found
    vendor = vendor_named(key)
    if vendor is not None:  # a vendor or server named alone: its chat API's profile
        return PROFILES[vendor.chat]
    close = difflib.get_close_matches(key, profile_names(), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise UnknownNameError(
        f"Unknown provider {provider!r}.{hint} Vendors and servers: "
        f"{', '.join(primary_names())} (profiles and aliases: docs/providers.md)"
    )
