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

# --- DeepSeek's Responses API (``/v1/responses``) -------------------------------------------------

_DS_RESPONSES_ADJACENT = (
    "https://github.com/deepseek-ai/awesome-deepseek-integration/issues/740 (any item between a "
    "call and its output, a developer message or a reasoning item, fails); "
    "https://github.com/deepseek-ai/DeepSeek-V3/issues/1588"
)
_DS_RESPONSES_ORPHAN = Check(
    "DSR-RESPONSES-NO-TOOL-CALL",
    "No tool call found for tool output with call_id {id}.",
    "https://github.com/deepseek-ai/DeepSeek-V3/issues/1611 ; "
    "https://github.com/CherryHQ/cherry-studio/issues/17936",
)

DEEPSEEK_RESPONSES = Profile(
    name="deepseek-responses",
    pairing="ordered",
    batched_outputs=True,
    checks=checks(
        orphan_result=_DS_RESPONSES_ORPHAN,
        unknown_result_id=_DS_RESPONSES_ORPHAN,
        missing_result=Check(
            "DSR-RESPONSES-NO-TOOL-OUTPUT",
            "No tool output found for tool call {id}.",
            _DS_RESPONSES_ADJACENT,
        ),
    ),
)
"""DeepSeek's ``/v1/responses`` (https://api-docs.deepseek.com/guides/responses_api): Responses
items, but paired as its chat API pairs messages. A run of consecutive ``function_call`` items
is one assistant turn, and the outputs of all its calls must come right after the run: an item
between a call and its output fails with "No tool output found", although OpenAI's API takes it
(the reports above, 2026). Splitting a run of parallel calls into call, output, call, output is
no fix: the second call becomes an assistant turn of its own, without the reasoning its model
wants (https://github.com/Kohaku-Lab/KohakuTerrarium/pull/323), so a repair keeps the run and
gathers its outputs after it."""
