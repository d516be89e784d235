"""DeepSeek: its chat API and the reasoner (thinking mode)."""

from __future__ import annotations

from ._base import ISSUE_20, Check, Profile, checks, shape_checks

# --- DeepSeek -------------------------------------------------------------------------------------

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
_DEEPSEEK_STRICT = checks(
    unknown_result_id=Check(
        "DS-TOOL-UNKNOWN-ID", "", "none (DeepSeek checks counts only)", status="inferred"
    ),
)

_DEEPSEEK_SERDE = (
    ISSUE_20 + ": DeepSeek answers 400 to a call without the 'function' wrapper or 'type' (a "
    "public report); the wording is DeepSeek's JSON-body error form"
)
_DEEPSEEK_SHAPE = shape_checks(
    Check(
        "DS-TOOL-CALL-SHAPE",
        "Failed to deserialize the JSON body into the target type: messages[{index}]: "
        "tool_calls[{slot}]: missing field `{property}`",
        _DEEPSEEK_SERDE,
        status="inferred",
    ),
    Check(
        "DS-TOOL-CALL-ARGUMENTS",
        "Failed to deserialize the JSON body into the target type: messages[{index}]: "
        "tool_calls[{slot}].function.arguments: invalid type: map, expected a string",
        _DEEPSEEK_SERDE,
        status="inferred",
    ),
    Check(
        "DS-EMPTY-TOOL-CALLS",
        "Invalid 'messages[{index}].tool_calls': empty array. Expected an array with minimum "
        "length 1, but got an empty array instead.",
        "OpenAI's wording (OA-EMPTY-TOOL-CALLS), which DeepSeek's compatible API follows; "
        + ISSUE_20,
        status="inferred",
    ),
)

DEEPSEEK = Profile(
    name="deepseek",
    aliases=("deepseek-chat",),
    pairing="count",
    checks=checks(
        orphan_result=_DEEPSEEK_ORPHAN, missing_result=_DEEPSEEK_INSUFFICIENT, **_DEEPSEEK_SHAPE
    ),
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
    checks=checks(
        orphan_result=_DEEPSEEK_ORPHAN,
        missing_result=_DEEPSEEK_INSUFFICIENT,
        missing_reasoning=_DEEPSEEK_REASONING,
        **_DEEPSEEK_SHAPE,
    ),
    reasoning_in_tool_turns=True,
    strict_checks=checks(
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
