"""Provider rule profiles: which checks a provider enforces, with which parameters, and the exact
error text each one prevents.

A profile is data, not a code path. :mod:`toolmend.rules` runs the checks a profile enables and
:mod:`toolmend.repair` reads the same fields to decide how to repair. Every enabled check carries
the provider's own error text and where that text was seen (``shared/provider-rules`` in the
project's design notes); a test fails on a check whose text or source is empty.

Rules the evidence marks "strict-only" (inferred wording, model-dependent or historical) are kept
in ``strict_checks`` for the record and are not run.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from .report import UnknownNameError

__all__ = ["PROFILES", "Check", "Profile", "get_profile", "profile_names"]


@dataclass(frozen=True)
class Check:
    """One provider rule: its id in the evidence catalogue, its error text and its source.

    ``error`` is a ``str.format`` template; the fields it may use are ``index``, ``slot``,
    ``id``, ``ids``, ``length``, ``role``, ``prev``, ``name`` and ``property``.
    """

    rule: str
    error: str
    source: str
    status: str = "observed"
    """``observed`` (quoted from a real response), ``documented`` or ``inferred`` (wording)."""


@dataclass(frozen=True)
class Profile:
    """Everything toolmend knows about one provider's tool-call rules."""

    name: str
    """The provider name users pass as ``provider=``."""
    checks: Mapping[str, Check]
    """Problem code -> the provider rule it breaks. Only these codes are reported."""
    pairing: str = "adjacent"
    """How results are paired with calls. ``"adjacent"``: OpenAI, a contiguous block of tool
    messages right after the calling assistant message, matched by id. ``"count"``: DeepSeek,
    the same block matched by count only. ``"latest"``: Mistral, results match the latest
    assistant message's ids, counted at the next assistant message. ``"none"``: not checked."""
    call_id_max_length: int | None = None
    """Longest tool call id the provider accepts (OpenAI: 40 on some deployments)."""
    call_id_pattern: str | None = None
    """Regular expression every call id must match in full (Mistral: 9 alphanumerics)."""
    call_id_length: int | None = None
    """Exact length of generated ids when ``call_id_pattern`` forces one (Mistral: 9)."""
    function_name_pattern: str | None = None
    """Regular expression a called function's name must match (Mistral)."""
    role_successors: Mapping[str, frozenset[str]] | None = None
    """Message kind -> the kinds allowed right after it (Mistral's validator)."""
    last_kinds: frozenset[str] | None = None
    """Kinds the last message of a request may have (Mistral: user or tool, or a prefix)."""
    reasoning_in_tool_turns: bool = False
    """Every assistant message of a user turn that used tools must carry ``reasoning_content``
    (DeepSeek thinking mode)."""
    alternation: str | None = None
    """``"tool-aware"``: after an optional system message, user and assistant text messages
    alternate, tool traffic aside (HF chat templates with a tool role). ``"strict"``: every
    message alternates by position, so tool traffic must be flattened to text (templates with no
    tool role)."""
    known_roles: frozenset[str] | None = None
    """The roles the provider accepts, when it rejects others (OpenAI's role list)."""
    strict_checks: Mapping[str, Check] = field(default_factory=dict)
    """Rules with weak evidence, recorded but not run."""
    aliases: tuple[str, ...] = ()
    """Other names that pick this profile (``"azure"`` for openai)."""


def _checks(**by_code: Check) -> Mapping[str, Check]:
    return MappingProxyType(by_code)


_OA_ISSUES = "https://github.com/smarter-sh/smarter/issues/264"

# --- OpenAI Chat Completions (openai-family.md section 1) -------------------------------------

_OPENAI_ORPHAN = Check(
    "OA-TOOL-ORPHAN",
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
    "with 'tool_calls'.",
    _OA_ISSUES,
)
_OPENAI_MISSING = Check(
    "OA-MISSING-TOOL-RESPONSE",
    "An assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id'. The following tool_call_ids did not have response messages: {ids}",
    "https://github.com/router-for-me/CLIProxyAPI/issues/2798",
)
_OPENAI_NO_ID = Check(
    "OA-TOOL-NO-ID",
    "Missing parameter 'tool_call_id': messages with role 'tool' must have a 'tool_call_id'.",
    "https://github.com/langchain-ai/langchain/issues/22600",
)

OPENAI = Profile(
    name="openai",
    aliases=("azure", "openai-chat"),
    checks=_checks(
        empty_history=Check(
            "OA-EMPTY-MESSAGES",
            "Invalid 'messages': empty array. Expected an array with minimum length 1, but got "
            "an empty array instead.",
            "https://github.com/CopilotKit/CopilotKit/issues/529",
        ),
        invalid_role=Check(
            "OA-INVALID-ROLE",
            "Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', "
            "'function', 'tool', and 'developer'.",
            "public learning notes quoting the API (openai-family.md)",
        ),
        orphan_result=_OPENAI_ORPHAN,
        unknown_result_id=Check(
            "OA-TOOL-UNKNOWN-ID",
            "Invalid parameter: 'tool_call_id' of '{id}' not found in 'tool_calls' of previous "
            "message.",
            "https://github.com/dapr/dapr-agents/issues/145",
        ),
        missing_result=_OPENAI_MISSING,
        empty_tool_calls=Check(
            "OA-EMPTY-TOOL-CALLS",
            "Invalid 'messages[{index}].tool_calls': empty array. Expected an array with minimum "
            "length 1, but got an empty array instead.",
            "https://github.com/openai/openai-python/issues/2061",
        ),
        result_without_id=_OPENAI_NO_ID,
        null_content=Check(
            "OA-ASSISTANT-NULL-CONTENT",
            "Invalid value for 'content': expected a string, got null.",
            "n8n docs page 'Internal error: 400 Invalid value for 'content'' (openai-family.md)",
        ),
        call_id_too_long=Check(
            "OA-TOOL-CALL-ID-LEN",
            "Invalid 'messages[{index}].tool_calls[{slot}].id': string too long. Expected a "
            "string with maximum length 40, but got a string with length {length} instead.",
            "https://github.com/agno-agi/agno/issues/5382",
        ),
        arguments_not_string=Check(
            "OA-ARGS-NOT-STRING",
            "Invalid type for 'messages[{index}].tool_calls[{slot}].function.arguments': "
            "expected a string, but got an object instead.",
            "public code quoting the API error (openai-family.md)",
        ),
        call_name_empty=Check(
            "OA-FN-NAME-EMPTY",
            "Invalid 'messages[{index}].tool_calls[{slot}].function.name': empty string. "
            "Expected a string with minimum length 1, but got an empty string instead.",
            "https://github.com/continuedev/continue/issues/11645",
        ),
        call_shape=Check(
            "OA-TOOL-CALL-SHAPE",
            "Missing required parameter: 'messages[{index}].tool_calls[{slot}].{property}'.",
            "wording of OpenAI's missing-parameter errors (openai-family.md OR-CALL-ID-MISSING); "
            "stores and proxies that drop the 'type'/'function' wrapper",
            status="inferred",
        ),
        call_without_id=Check(
            "OA-TOOL-CALL-NO-ID",
            "Missing required parameter: 'messages[{index}].tool_calls[{slot}].id'.",
            "wording of OpenAI's missing-parameter errors (openai-family.md OR-CALL-ID-MISSING)",
            status="inferred",
        ),
    ),
    call_id_max_length=40,
    known_roles=frozenset({"system", "assistant", "user", "function", "tool", "developer"}),
    strict_checks=_checks(
        null_tool_content=Check(
            "OA-TOOL-NULL-CONTENT",
            "Invalid value for 'content': expected a string, got null.",
            "none (openai-family.md: inferred)",
            status="inferred",
        ),
    ),
)

# --- DeepSeek (section 3) ---------------------------------------------------------------------

_DEEPSEEK_ORPHAN = Check(
    "DS-TOOL-ORPHAN",
    "Messages with role 'tool' must be a response to a preceding message with 'tool_calls'",
    "https://github.com/FoundationAgents/OpenManus/issues/23",
)
_DEEPSEEK_INSUFFICIENT = Check(
    "DS-INSUFFICIENT-TOOL-MESSAGES",
    "An assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id'. (insufficient tool messages following tool_calls message)",
    "https://github.com/TurixAI/TuriX-CUA/issues/15",
)
_DEEPSEEK_STRICT = _checks(
    unknown_result_id=Check(
        "DS-TOOL-UNKNOWN-ID", "", "none (DeepSeek checks counts only)", status="inferred"
    ),
)

DEEPSEEK = Profile(
    name="deepseek",
    aliases=("deepseek-chat",),
    pairing="count",
    checks=_checks(orphan_result=_DEEPSEEK_ORPHAN, missing_result=_DEEPSEEK_INSUFFICIENT),
    strict_checks=_DEEPSEEK_STRICT,
)

_DEEPSEEK_REASONING = Check(
    "DSR-REASONING-ON-TOOL-CALL",
    "The `reasoning_content` in the thinking mode must be passed back to the API.",
    "https://api-docs.deepseek.com/guides/thinking_mode ; "
    "https://github.com/anomalyco/opencode/issues/25000",
    status="documented",
)

DEEPSEEK_REASONER = Profile(
    name="deepseek-reasoner",
    aliases=("deepseek-thinking",),
    pairing="count",
    checks=_checks(
        orphan_result=_DEEPSEEK_ORPHAN,
        missing_result=_DEEPSEEK_INSUFFICIENT,
        missing_reasoning=_DEEPSEEK_REASONING,
    ),
    reasoning_in_tool_turns=True,
    strict_checks=_checks(
        **_DEEPSEEK_STRICT,
        roles_not_alternating=Check(
            "DSR-R1-SUCCESSIVE-ROLES",
            "deepseek-reasoner does not support successive user or assistant messages "
            "(messages[{prev}] and messages[{index}] in your input). You should interleave the "
            "user/assistant messages in the message sequence.",
            "https://github.com/deepseek-ai/DeepSeek-R1/issues/21 (historical, R1 only)",
        ),
    ),
)

# --- Mistral La Plateforme (section 4) --------------------------------------------------------

_MISTRAL_VALIDATOR = (
    "mistral_common src/mistral_common/protocol/instruct/validator.py (MistralRequestValidatorV13)"
)
_MISTRAL_UNEXPECTED = Check(
    "MI-UNEXPECTED-TOOL-ID",
    "Unexpected tool call id {id} in tool results",
    "https://github.com/pydantic/pydantic-ai/issues/3733",
)
_MISTRAL_ID_MISSING = Check(
    "MI-TOOL-ID-MISSING",
    "Tool call id has to be defined.",
    "https://github.com/Gage-Technologies/mistral-go/issues/8",
)
_MISTRAL_EMPTY_ASSISTANT = Check(
    "MI-EMPTY-ASSISTANT",
    "Assistant message must have either content or tool_calls, but not none.",
    "https://github.com/OpenHands/OpenHands/issues/8685",
)

MISTRAL = Profile(
    name="mistral",
    aliases=("mistral-ai", "codestral"),
    pairing="latest",
    checks=_checks(
        role_order=Check(
            "MI-ROLE-ORDER",
            "Unexpected role '{role}' after role '{prev}'",
            "https://github.com/zed-industries/zed/issues/37021 ; " + _MISTRAL_VALIDATOR,
        ),
        call_id_format=Check(
            "MI-TOOL-CALL-ID-FORMAT",
            "Tool call id was {id} but must be a-z, A-Z, 0-9, with a length of 9.",
            "https://github.com/karthink/gptel/issues/1203",
        ),
        call_without_id=_MISTRAL_ID_MISSING,
        result_without_id=_MISTRAL_ID_MISSING,
        missing_result=Check(
            "MI-CALL-COUNT",
            "Not the same number of function calls and responses",
            "https://github.com/mistralai/client-ts/issues/106",
        ),
        unknown_result_id=_MISTRAL_UNEXPECTED,
        orphan_result=_MISTRAL_UNEXPECTED,
        duplicate_result=Check(
            "MI-DUPLICATE-TOOL-ID",
            "Duplicate tool call id {id} in tool results",
            _MISTRAL_VALIDATOR,
            status="documented",
        ),
        duplicate_call_id=Check(
            "MI-DUPLICATE-TOOL-ID",
            "Duplicate tool call id {id} in assistant message",
            _MISTRAL_VALIDATOR,
            status="documented",
        ),
        last_role=Check(
            "MI-LAST-ROLE",
            "Expected last role User or Tool (or Assistant with prefix True) for serving but "
            "got {role}",
            "https://github.com/0xPlaygrounds/rig/issues/708",
        ),
        empty_assistant=_MISTRAL_EMPTY_ASSISTANT,
        null_content=_MISTRAL_EMPTY_ASSISTANT,
        function_name_format=Check(
            "MI-FUNCTION-NAME",
            "Function name was {name} but must be a-z, A-Z, 0-9, or contain underscores and "
            "dashes, with a maximum length of 64.",
            _MISTRAL_VALIDATOR,
            status="documented",
        ),
    ),
    call_id_pattern=r"[a-zA-Z0-9]{9}",
    call_id_length=9,
    function_name_pattern=r"[a-zA-Z0-9_-]{1,64}",
    role_successors=MappingProxyType(
        {
            "system": frozenset({"user", "assistant", "system"}),
            "user": frozenset({"assistant", "system", "user"}),
            "assistant": frozenset({"assistant", "user", "tool"}),
            "tool": frozenset({"assistant", "tool"}),
        }
    ),
    last_kinds=frozenset({"user", "tool"}),
    strict_checks=_checks(
        content_and_tool_calls=Check(
            "MI-CONTENT-AND-TOOL-CALLS",
            "Assistant message must have either content or tool_calls, but not both.",
            "https://github.com/langchain-ai/langchain/issues/21196 (older tokenizers only)",
        ),
    ),
)

# --- Groq (section 5) -------------------------------------------------------------------------

_GROQ_UNSUPPORTED = Check(
    "GQ-UNSUPPORTED-PROPERTY",
    "'messages.{index}' : for 'role:{role}' the following must be satisfied"
    "[('messages.{index}' : property '{property}' is unsupported)]",
    "https://github.com/tashfeenahmed/freellmapi/issues/1070",
)

GROQ = Profile(
    name="groq",
    pairing="none",
    checks=_checks(
        unsupported_property=_GROQ_UNSUPPORTED,
        function_call_null=Check(
            "GQ-UNSUPPORTED-PROPERTY",
            _GROQ_UNSUPPORTED.error,
            "Groq's per-role schema (openai-family.md section 5); explicit null function_call "
            "next to tool_calls",
            status="inferred",
        ),
        result_without_id=Check(
            "GQ-TOOL-NO-ID",
            "'messages.{index}' : for 'role:tool' the following must be satisfied"
            "[('messages.{index}.tool_call_id' : property 'tool_call_id' is missing)]",
            "https://github.com/hackclub/ai/issues/22",
        ),
        tool_content_not_string=Check(
            "GQ-TOOL-CONTENT-NOT-STRING",
            "'messages.{index}' : for 'role:tool' the following must be satisfied"
            "[('messages.{index}.content' : value must be a string)]",
            "https://github.com/CherryHQ/cherry-studio/issues/3307",
        ),
    ),
    strict_checks=_checks(orphan_result=_OPENAI_ORPHAN, missing_result=_OPENAI_MISSING),
)

# --- Open-model servers: HF chat templates (section 6) ----------------------------------------

HF_TEMPLATE = Profile(
    name="hf-template",
    aliases=("vllm", "tgi", "llama.cpp"),
    pairing="none",
    alternation="tool-aware",
    checks=_checks(
        roles_not_alternating=Check(
            "HF-ALTERNATION-TOOL-AWARE",
            "After the optional system message, conversation roles must alternate "
            "user/assistant/user/assistant/...",
            "Mistral-7B-Instruct-v0.3 chat template; https://github.com/microsoft/autogen/issues/1037",
            status="documented",
        ),
    ),
)

HF_TEMPLATE_STRICT = Profile(
    name="hf-template-strict",
    aliases=("gemma",),
    pairing="none",
    alternation="strict",
    checks=_checks(
        roles_not_alternating=Check(
            "HF-ALTERNATION-STRICT",
            "Conversation roles must alternate user/assistant/user/assistant/...",
            "https://github.com/huggingface/text-generation-inference/issues/3198",
        ),
    ),
)

PROFILES: Mapping[str, Profile] = MappingProxyType(
    {
        p.name: p
        for p in (
            OPENAI,
            DEEPSEEK,
            DEEPSEEK_REASONER,
            MISTRAL,
            GROQ,
            HF_TEMPLATE,
            HF_TEMPLATE_STRICT,
        )
    }
)
"""Every profile by its name."""

_BY_ALIAS: Mapping[str, Profile] = MappingProxyType(
    {alias: p for p in PROFILES.values() for alias in p.aliases}
)


def profile_names() -> list[str]:
    """Every provider name and alias toolmend accepts, sorted."""
    return sorted([*PROFILES, *_BY_ALIAS])


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
    close = difflib.get_close_matches(key, profile_names(), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise UnknownNameError(
        f"Unknown provider {provider!r}.{hint} Known: {', '.join(profile_names())}"
    )


def compiled(pattern: str | None) -> re.Pattern[str] | None:
    """The pattern compiled for full matches, cached by :mod:`re`."""
    return re.compile(pattern) if pattern else None
