"""Provider rule profiles: which checks a provider enforces, with which parameters, and the exact
error text each one prevents.

A profile is data, not a code path. :mod:`toolmend._rules` runs the checks a profile enables and
:mod:`toolmend._repair` reads the same fields to decide how to repair. Every enabled check carries
the provider's own error text and where that text was seen (``docs/providers.md`` lists them
all, generated from this module); a test fails on a check whose text or source is empty.

Rules the evidence marks "strict-only" (inferred wording, model-dependent or historical) are kept
in ``strict_checks`` for the record and are not run.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from ._report import UnknownNameError

__all__ = ["PROFILES", "Check", "Profile", "get_profile", "profile_names"]


@dataclass(frozen=True)
class Check:
    """One provider rule: its id in the evidence catalogue, its error text and its source.

    ``error`` is a ``str.format`` template; the fields it may use are ``index``, ``slot``,
    ``id``, ``ids``, ``length``, ``role``, ``prev``, ``name`` and ``property`` (and
    ``position``, the 1-based message position, for the checks that pass it).
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
    assistant message's ids, counted at the next assistant message. ``"ordered"``: OpenAI
    Responses, no adjacency: a result needs a call with its id somewhere before it, a call a
    result somewhere after it. ``"none"``: not checked."""
    call_id_max_length: int | None = None
    """Longest tool call id the provider accepts (OpenAI: 40 on some deployments)."""
    call_id_pattern: str | None = None
    """Regular expression every call id must match in full (Mistral: 9 alphanumerics)."""
    call_id_length: int | None = None
    """Exact length of generated ids when ``call_id_pattern`` forces one (Mistral: 9)."""
    function_name_pattern: str | None = None
    """Regular expression a called function's name must match (Mistral)."""
    role_successors: Mapping[str, frozenset[str]] | None = None
    """Message kind -> the kinds allowed right after it (Mistral's validator; Bedrock, for
    OpenAI-shaped histories, after tool results). Reported as ``role_order``; repaired with the
    fixed assistant bridge. Judged on message layouts only."""
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
    block_pairing: str | None = None
    """How calls and results pair in a block-layout history (the anthropic, gemini and bedrock
    formats). ``"turns"``: Anthropic, consecutive same-role messages form one turn, and every
    call of an assistant turn needs its result in the leading run of the next turn.
    ``"contents"``: Gemini, each Content is a turn, and the Content after a function-call turn
    holds exactly one response per call, named after it. ``"converse"``: Bedrock, the next
    message holds every result of the turn and nothing else. ``None``: the profile has no rules
    for block histories, and judging one is an error."""
    call_id_scope: str = "message"
    """Where call ids must be unique: within each ``"message"``, or in the whole ``"request"``
    (Anthropic)."""
    results_need_name: bool = False
    """Every result must name the function of the call it answers (Gemini's
    ``functionResponse.name``; for an OpenAI-shaped history bound for Gemini, the tool
    message's ``name``)."""
    first_user: bool = False
    """The first message after any system message must come from the user (Bedrock)."""
    call_after_user: bool = False
    """OpenAI-shaped histories: an assistant message with calls may not open the conversation
    (Gemini's function-call turn position; Mistral's validator never pairs a call at message
    0). Reported as ``call_turn_position``; the fixed user bridge goes before it, as for
    ``first_user``."""
    system_apart: bool = False
    """OpenAI-shaped histories: system messages are sent apart from the conversation (LiteLLM
    for Anthropic and Bedrock), or the conversation needs a user message (chat templates that
    put the tools into it), so a history of system messages only (and assistant messages
    without text or calls, which LiteLLM drops) is ``empty_history``."""
    thinking: bool = False
    """Anthropic extended thinking is on: the assistant turn answered by the final tool results
    must start with a thinking block."""
    thought_signatures: bool = False
    """Gemini 3: the first function call of every model Content since the last user prompt must
    carry a thought signature."""
    reject_function_ids: bool = False
    """The Gemini endpoint does not know ``functionCall.id`` / ``functionResponse.id``."""
    content_string_kinds: frozenset[str] = frozenset()
    """Kinds of OpenAI-shaped messages whose ``content`` must be a string, not null (checked on
    user, system and tool messages and on assistant messages with calls; an assistant message
    without calls has ``null_content``). Reported as ``content_null``, repaired with ``""``."""
    content_text_kinds: frozenset[str] = frozenset()
    """Kinds of OpenAI-shaped messages whose ``content`` must hold text: neither null nor empty
    (Gemini through LiteLLM turns ``""`` into an empty text part; Bedrock through LiteLLM loses a
    user message without text). Reported as ``content_null`` / ``content_empty``; a user message
    gets the fixed user bridge text, an assistant message with calls loses the empty text."""
    strict_checks: Mapping[str, Check] = field(default_factory=dict)
    """Rules with weak evidence, recorded but not run."""
    aliases: tuple[str, ...] = ()
    """Other names that pick this profile (``"azure"`` for openai)."""


def _checks(**by_code: Check) -> Mapping[str, Check]:
    return MappingProxyType(by_code)


_OA_ISSUES = "https://github.com/smarter-sh/smarter/issues/264"

_ISSUE_20 = "toolmend issue 20 (the judges in tests/support/judges.py)"


def _shape_checks(
    call_shape: Check, arguments: Check | None = None, empty: Check | None = None
) -> dict[str, Check]:
    """The call-shape rules of a profile that takes OpenAI-shaped messages: a call without its
    ``function`` wrapper or ``type``, object ``arguments`` and ``tool_calls: []`` are put in
    the canonical shape (``normalized_tool_call``), which every such provider accepts."""
    return {
        "call_shape": call_shape,
        "arguments_not_string": arguments or call_shape,
        "empty_tool_calls": empty or call_shape,
    }


# --- OpenAI Chat Completions ----------------------------------------------------------------------

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
            "public learning notes quoting the API",
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
        duplicate_result=Check(
            "OA-DUPLICATE-TOOL-CALL-ID",
            "Invalid parameter: Duplicate value for 'tool_call_id' of '{id}', in "
            "messages[{first}] and messages[{index}].",
            "public report of the API's answer (GPT-4.1), quoted in toolmend issue 19: two tool "
            "messages answering one call in one block",
        ),
        null_content=Check(
            "OA-ASSISTANT-NULL-CONTENT",
            "Invalid value for 'content': expected a string, got null.",
            "n8n docs page 'Internal error: 400 Invalid value for 'content''",
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
            "public code quoting the API error",
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
            "wording of OpenAI's missing-parameter errors (the form of OR-CALL-ID-MISSING); "
            "stores and proxies that drop the 'type'/'function' wrapper",
            status="inferred",
        ),
        call_without_id=Check(
            "OA-TOOL-CALL-NO-ID",
            "Missing required parameter: 'messages[{index}].tool_calls[{slot}].id'.",
            "wording of OpenAI's missing-parameter errors (the form of OR-CALL-ID-MISSING)",
            status="inferred",
        ),
    ),
    call_id_max_length=40,
    known_roles=frozenset({"system", "assistant", "user", "function", "tool", "developer"}),
    strict_checks=_checks(
        null_tool_content=Check(
            "OA-TOOL-NULL-CONTENT",
            "Invalid value for 'content': expected a string, got null.",
            "none (inferred)",
            status="inferred",
        ),
    ),
)

# --- OpenAI Responses API: ``input`` items, stateless ---------------------------------------------

_RESPONSES_NOTES = "public learning notes quoting the API"
_RESPONSES_CALL_ID_MISSING = Check(
    "OR-CALL-ID-MISSING", "Missing required parameter: 'input[{index}].call_id'.", _RESPONSES_NOTES
)
_RESPONSES_DUPLICATE = Check(
    "OR-DUPLICATE-ITEM-ID",
    "Duplicate item found with id {id}. Remove duplicate items from your input and try again.",
    "https://github.com/earendil-works/pi/issues/5149",
)

OPENAI_RESPONSES = Profile(
    name="openai-responses",
    aliases=("responses",),
    pairing="ordered",
    checks=_checks(
        orphan_result=Check(
            "OR-NO-TOOL-CALL",
            "No tool call found for function call output with call_id {id}.",
            "https://github.com/continuedev/continue/issues/10092",
        ),
        missing_result=Check(
            "OR-NO-TOOL-OUTPUT",
            "No tool output found for function call {id}.",
            "https://github.com/tjardoo/openai-client/pull/124",
        ),
        reasoning_without_follower=Check(
            "OR-REASONING-NO-FOLLOWER",
            "Item '{id}' of type 'reasoning' was provided without its required following item.",
            "https://github.com/continuedev/continue/issues/8933 (static part of the rule: the "
            "next item exists and is no user message, output or reasoning item)",
        ),
        reasoning_without_summary=Check(
            "OR-REASONING-NO-SUMMARY",
            "Missing required parameter: 'input[{index}].summary'.",
            "public code quoting the error; https://github.com/newo-ether/Agora/issues/141",
        ),
        call_without_id=_RESPONSES_CALL_ID_MISSING,
        result_without_id=_RESPONSES_CALL_ID_MISSING,
        result_without_output=Check(
            "OR-OUTPUT-MISSING",
            "Missing required parameter: 'input[{index}].output'.",
            _RESPONSES_NOTES,
        ),
        call_id_too_long=Check(
            "OR-CALL-ID-LEN",
            "Invalid 'input[{index}].call_id': string too long. Expected a string with maximum "
            "length 64, but got a string with length {length} instead.",
            "https://github.com/AnswerDotAI/fastllm/issues/45",
        ),
        item_id_prefix=Check(
            "OR-ITEM-ID-PREFIX",
            "Invalid 'input[{index}].id': '{id}'. Expected an ID that begins with '{property}'.",
            "https://github.com/jlcodes99/cockpit-tools/issues/2090 ({property} is the prefix)",
        ),
        item_id_charset=Check(
            "OR-ITEM-ID-CHARSET",
            "Invalid 'input[{index}].id': '{id}'. Expected an ID that contains letters, numbers, "
            "underscores, or dashes, but this value contained additional characters.",
            "https://github.com/langchain-ai/langchainjs/issues/11044",
        ),
        duplicate_item_id=_RESPONSES_DUPLICATE,
        duplicate_item=_RESPONSES_DUPLICATE,
        null_content=Check(
            "OR-MESSAGE-NULL-CONTENT",
            "Invalid type for 'input[{index}].content': expected one of an array of objects or "
            "string, but got null instead.",
            _RESPONSES_NOTES,
        ),
    ),
    call_id_max_length=64,
    strict_checks=_checks(
        item_id_too_long=Check(
            "OR-ITEM-ID-LEN",
            "Invalid 'input[{index}].id': string too long. Expected a string with maximum length "
            "64, but got a string with length {length} instead.",
            "hermes-agent clamps input[*].id to 64 (https://github.com/NousResearch/hermes-agent/"
            "pull/73538); wording mirrors OR-CALL-ID-LEN",
            status="inferred",
        ),
        invalid_role=Check(
            "OR-INVALID-ROLE",
            "Invalid value: '{role}'. Supported values are: 'user', 'assistant', 'system', and "
            "'developer'.",
            _RESPONSES_NOTES + "; the observed variant lists item types, this list is inferred",
            status="inferred",
        ),
    ),
)

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
_DEEPSEEK_STRICT = _checks(
    unknown_result_id=Check(
        "DS-TOOL-UNKNOWN-ID", "", "none (DeepSeek checks counts only)", status="inferred"
    ),
)

_DEEPSEEK_SERDE = (
    _ISSUE_20 + ": DeepSeek answers 400 to a call without the 'function' wrapper or 'type' (a "
    "public report); the wording is DeepSeek's JSON-body error form"
)
_DEEPSEEK_SHAPE = _shape_checks(
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
        + _ISSUE_20,
        status="inferred",
    ),
)

DEEPSEEK = Profile(
    name="deepseek",
    aliases=("deepseek-chat",),
    pairing="count",
    checks=_checks(
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
    checks=_checks(
        orphan_result=_DEEPSEEK_ORPHAN,
        missing_result=_DEEPSEEK_INSUFFICIENT,
        missing_reasoning=_DEEPSEEK_REASONING,
        **_DEEPSEEK_SHAPE,
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

# --- Mistral La Plateforme ------------------------------------------------------------------------

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
        first_not_user=Check(
            "MI-FIRST-NOT-USER",
            "Conversation must start with a user message or system message",
            _MISTRAL_VALIDATOR + " (a one-message conversation; a call at message 0 is never "
            "paired: 'Unexpected tool call id ... in tool results'); Mistral's chat templates "
            "(tests/data/chat_templates) want user first after the system message; " + _ISSUE_20,
        ),
        empty_history=Check(
            "MI-EMPTY-CONVERSATION",
            "Conversation must have at least one message",
            _MISTRAL_VALIDATOR + "; " + _ISSUE_20,
        ),
        content_null=Check(
            "MI-CONTENT-NOT-STRING",
            "messages.{index}.{role}.content.str: Input should be a valid string",
            "mistral_common protocol/instruct/messages.py (pydantic); " + _ISSUE_20,
        ),
        # mistral-common takes object arguments (it serializes them) and a call without
        # ``type`` (a default); not a call without its ``function`` wrapper, which is put in
        # the canonical shape with the rest of the call
        call_shape=Check(
            "MI-TOOL-CALL-SHAPE",
            "messages.{index}.assistant.tool_calls.{slot}.function: Field required",
            "mistral_common protocol/instruct/tool_calls.py (pydantic); " + _ISSUE_20,
        ),
        # ``tool_calls: []`` passes mistral-common, but Mistral's chat templates count the
        # message as a call turn and no longer see user and assistant alternate
        empty_tool_calls=Check(
            "MI-EMPTY-TOOL-CALLS",
            "After the optional system message, conversation roles must alternate "
            "user/assistant/user/assistant/...",
            "Mistral's chat templates (tests/data/chat_templates), rendered by the judge in "
            "tests/support/judges.py; " + _ISSUE_20,
        ),
    ),
    content_string_kinds=frozenset({"user", "system", "tool"}),
    first_user=True,
    call_id_pattern=r"[a-zA-Z0-9]{9}",
    call_id_length=9,
    function_name_pattern=r"[a-zA-Z0-9_-]{1,64}",
    # Consecutive user (or assistant) messages stay: mistral-common accepts them and Mistral's
    # API merges them. Mistral's chat templates (vLLM, Nemo) want strict alternation instead;
    # that is the template's rule, not the API's, and the judges leave such histories out
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

# --- Groq -----------------------------------------------------------------------------------------

_GROQ_UNSUPPORTED = Check(
    "GQ-UNSUPPORTED-PROPERTY",
    "'messages.{index}' : for 'role:{role}' the following must be satisfied"
    "[('messages.{index}' : property '{property}' is unsupported)]",
    "https://github.com/tashfeenahmed/freellmapi/issues/1070",
)

_GROQ_SCHEMA = "Groq's per-role schema; " + _ISSUE_20
_GROQ_TOOL_CONTENT = Check(
    "GQ-TOOL-CONTENT-NOT-STRING",
    "'messages.{index}' : for 'role:tool' the following must be satisfied"
    "[('messages.{index}.content' : value must be a string)]",
    "https://github.com/CherryHQ/cherry-studio/issues/3307",
)

GROQ = Profile(
    name="groq",
    pairing="none",
    checks=_checks(
        unsupported_property=_GROQ_UNSUPPORTED,
        function_call_null=Check(
            "GQ-UNSUPPORTED-PROPERTY",
            _GROQ_UNSUPPORTED.error,
            "Groq's per-role schema; explicit null function_call next to tool_calls",
            status="inferred",
        ),
        result_without_id=Check(
            "GQ-TOOL-NO-ID",
            "'messages.{index}' : for 'role:tool' the following must be satisfied"
            "[('messages.{index}.tool_call_id' : property 'tool_call_id' is missing)]",
            "https://github.com/hackclub/ai/issues/22",
        ),
        tool_content_not_string=_GROQ_TOOL_CONTENT,
        content_null=_GROQ_TOOL_CONTENT,
        **_shape_checks(
            Check(
                "GQ-TOOL-CALL-SHAPE",
                "'messages.{index}' : for 'role:assistant' the following must be satisfied"
                "[('messages.{index}.tool_calls.{slot}.{property}' : property '{property}' is "
                "missing)]",
                _GROQ_SCHEMA,
                status="inferred",
            ),
            Check(
                "GQ-TOOL-CALL-ARGUMENTS",
                "'messages.{index}' : for 'role:assistant' the following must be satisfied"
                "[('messages.{index}.tool_calls.{slot}.function.arguments' : value must be a "
                "string)]",
                _GROQ_SCHEMA,
                status="inferred",
            ),
            Check(
                "GQ-EMPTY-TOOL-CALLS",
                "'messages.{index}' : for 'role:assistant' the following must be satisfied"
                "[('messages.{index}.tool_calls' : minimum number of items is 1)]",
                _GROQ_SCHEMA,
                status="inferred",
            ),
        ),
    ),
    content_string_kinds=frozenset({"tool"}),
    strict_checks=_checks(orphan_result=_OPENAI_ORPHAN, missing_result=_OPENAI_MISSING),
)

# --- Open-model servers: HF chat templates --------------------------------------------------------

_HF_JUDGE = "rendered by the judge in tests/support/judges.py, as transformers renders it"
_HF_CONTENT_NULL = Check(
    "HF-CONTENT-NOT-STRING",
    'can only concatenate str (not "NoneType") to str',
    "Mistral, Llama 3.1 and gpt-oss chat templates (tests/data/chat_templates), " + _HF_JUDGE,
)
_HF_EMPTY = Check(
    "HF-EMPTY-CONVERSATION",
    "list object has no element 0",
    "templates that read messages[0] (tests/data/chat_templates), " + _HF_JUDGE,
)
_HF_SHAPE = _shape_checks(
    Check(
        "HF-TOOL-CALL-SHAPE",
        "'dict object' has no attribute 'function'",
        "Llama 3.1 / 3.2 chat templates (tests/data/chat_templates), " + _HF_JUDGE + "; vLLM "
        "takes only tool_calls of type 'function'",
    )
)
_HF_ORPHAN = Check(
    "HF-TOOL-ORPHAN",
    "Message has tool role, but there was no previous assistant message with a tool call!",
    "gpt-oss chat template (tests/data/chat_templates), " + _HF_JUDGE,
)
_HF_ALL_KINDS = frozenset({"user", "system", "tool", "assistant"})

HF_TEMPLATE = Profile(
    name="hf-template",
    aliases=("vllm", "tgi", "llama.cpp"),
    pairing="adjacent",
    alternation="tool-aware",
    checks=_checks(
        roles_not_alternating=Check(
            "HF-ALTERNATION-TOOL-AWARE",
            "After the optional system message, conversation roles must alternate "
            "user/assistant/user/assistant/...",
            "Mistral-7B-Instruct-v0.3 chat template; https://github.com/microsoft/autogen/issues/1037",
            status="documented",
        ),
        # templates read a result's call from the message before it (gpt-oss names the
        # function of the latest call), so results sit right after their call, by id
        orphan_result=_HF_ORPHAN,
        unknown_result_id=_HF_ORPHAN,
        result_without_id=Check(
            "HF-TOOL-NO-ID",
            "Tool call IDs should be alphanumeric strings with length >= 9! (2)",
            "vLLM's Mistral tool template (tests/data/chat_templates), " + _HF_JUDGE,
        ),
        empty_history=_HF_EMPTY,
        content_null=_HF_CONTENT_NULL,
        null_content=_HF_CONTENT_NULL,
        **_HF_SHAPE,
    ),
    # every kind: gpt-oss's template also tests ``"..." in message.content`` beside calls
    content_string_kinds=_HF_ALL_KINDS,
    # Llama 3.1 / 3.2 put the tools into the first user message and raise without one
    system_apart=True,
)
"""Open-model servers (vLLM, TGI, llama.cpp) rendering a Hugging Face chat template with a tool
role: tool traffic stays, user and assistant text alternate around it, results follow their
call, every ``content`` is a string (templates concatenate it). Templates that need Mistral's
9-character call ids are served by the ``mistral`` profile."""

_HF_CONTENT_TYPE = Check(
    "HF-CONTENT-TYPE",
    "Invalid content type",
    "Gemma 3 chat template (tests/data/chat_templates), " + _HF_JUDGE,
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
        system_unsupported=Check(
            "HF-SYSTEM-UNSUPPORTED",
            "System role not supported",
            "Gemma 2 chat template (tests/data/chat_templates); Gemma 3's template folds the "
            "system message into the first user turn itself, as the repair does",
        ),
        empty_history=_HF_EMPTY,
        content_null=_HF_CONTENT_TYPE,
        null_content=_HF_CONTENT_TYPE,
    ),
    # every kind: a message with calls that stays one (no result to write out with it) is
    # rendered as plain assistant text, and Gemma 3 refuses a null content
    content_string_kinds=_HF_ALL_KINDS,
)
"""Chat templates with no tool role and strict alternation (Gemma 2 and 3): tool traffic is
written out as text, same-role neighbours merge, and a system message is folded into the
first user turn."""

# --- Anthropic Messages API -----------------------------------------------------------------------

_AN_DOC = "https://platform.claude.com/docs/en/agents-and-tools/tool-use/handle-tool-calls"
_AN_UNEXPECTED = Check(
    "anthropic.tool_result_unexpected",
    "messages.{index}.content.{slot}: unexpected `tool_use_id` found in `tool_result` blocks: "
    "{id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous "
    "message.",
    "https://github.com/continuedev/continue/issues/4751 ; "
    "https://github.com/anthropics/claude-code/issues/10834",
)
_AN_MISSING = Check(
    "anthropic.tool_use_without_result",
    "messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately "
    "after: {ids}. Each `tool_use` block must have a corresponding `tool_result` block in the "
    "next message.",
    _AN_DOC + " ; https://github.com/anthropics/claude-code/issues/5989",
    status="documented",
)
_AN_CHECKS = {
    "system_role": Check(
        "anthropic.role_invalid",
        'messages: Unexpected role "system". The Messages API accepts a top-level `system` '
        'parameter, not "system" as an input message role.',
        "https://github.com/Maol-1997/cursor-claude-connector/issues/3",
    ),
    "invalid_role": Check(
        "anthropic.role_invalid",
        "messages.{index}.role: Input should be 'user' or 'assistant'",
        "https://docs.anthropic.com/en/api/messages (pydantic wording quoted in code comments)",
        status="documented",
    ),
    "empty_content": Check(
        "anthropic.content_empty",
        "messages.{index}: all messages must have non-empty content except for the optional "
        "final assistant message",
        "https://github.com/microsoft/autogen/issues/6083",
    ),
    "text_empty": Check(
        "anthropic.text_empty",
        "messages: text content blocks must be non-empty",
        "https://github.com/anthropics/claude-code/issues/59812",
    ),
    "text_whitespace": Check(
        "anthropic.text_whitespace",
        "messages: text content blocks must contain non-whitespace text",
        "https://github.com/anthropics/claude-code/issues/23440",
    ),
    "trailing_whitespace": Check(
        "anthropic.final_assistant_trailing_whitespace",
        "messages: final assistant content cannot end with trailing whitespace",
        "https://github.com/tailcallhq/forgecode/issues/1872",
    ),
    "call_id_format": Check(
        "anthropic.tool_use_id_pattern",
        "messages.{index}.content.{slot}.tool_use.id: String should match pattern "
        "'^[a-zA-Z0-9_-]+$'",
        "https://github.com/CommandCodeAI/command-code/issues/323",
    ),
    "call_without_id": Check(
        "anthropic.tool_use_id_pattern",
        "messages.{index}.content.{slot}.tool_use.id: Field required",
        "the API reference (the id is required; this wording is inferred)",
        status="inferred",
    ),
    "result_id_format": Check(
        "anthropic.tool_result_id_pattern",
        "messages.{index}.content.{slot}.tool_result.tool_use_id: String should match pattern "
        "'^[a-zA-Z0-9_-]+$'",
        "https://github.com/HKUDS/nanobot/pull/4356",
    ),
    "result_without_id": Check(
        "anthropic.tool_result_id_pattern",
        "messages.{index}.content.{slot}.tool_result.tool_use_id: Field required",
        "the API reference (the id is required; this wording is inferred)",
        status="inferred",
    ),
    "call_name_empty": Check(
        "anthropic.tool_use_name_length",
        "messages.{index}.content.{slot}.tool_use.name: String should have at least 1 character",
        "https://github.com/sipeed/picoclaw/issues/1658",
    ),
    "function_name_format": Check(
        "anthropic.tool_use_name_length",
        "messages.{index}.content.{slot}.tool_use.name: String should have at most 200 characters",
        "https://github.com/anthropics/claude-code/issues/2673",
    ),
    "input_not_object": Check(
        "anthropic.tool_use_input_not_dict",
        "messages.{index}.content.{slot}.tool_use.input: Input should be a valid dictionary",
        "https://github.com/anthropics/anthropic-sdk-typescript/issues/648",
    ),
    "duplicate_call_id": Check(
        "anthropic.tool_use_id_duplicate",
        "messages.{index}.content.{slot}: `tool_use` ids must be unique",
        "https://github.com/trycua/cua/issues/524",
    ),
    "missing_result": _AN_MISSING,
    "orphan_result": _AN_UNEXPECTED,
    "unknown_result_id": _AN_UNEXPECTED,
    "duplicate_result": Check(
        "anthropic.tool_result_duplicate",
        "messages.{index}.content.{slot}: each tool_use must have a single result. Found "
        "multiple `tool_result` blocks with id: {id}",
        "https://github.com/sipeed/picoclaw/pull/1793 ; "
        "https://github.com/QwenLM/qwen-code/pull/8163",
    ),
    "thinking_fields": Check(
        "anthropic.thinking_block_fields",
        "messages.{index}.content.{slot}.{property}: Field required",
        "https://github.com/langchain-ai/langchain/pull/29971",
    ),
}
_AN_STRICT = {
    "first_message_not_user": Check(
        "anthropic.first_message_not_user",
        'messages: first message must use the "user" role',
        "https://github.com/lobehub/lobehub/issues/1601 (retired around late 2024)",
    ),
    "roles_not_alternating": Check(
        "anthropic.roles_not_alternating",
        'messages: roles must alternate between "user" and "assistant", but found multiple '
        '"{role}" roles in a row',
        "https://github.com/FlowiseAI/Flowise/issues/2006 (retired: turns are merged now)",
    ),
    "prefill_unsupported": Check(
        "anthropic.prefill_unsupported",
        "This model does not support assistant message prefill. The conversation must end with "
        "a user message.",
        "https://platform.claude.com/docs/en/api/errors (Claude >= 4.6 only: model-dependent)",
        status="documented",
    ),
    "thinking_final_assistant_disabled": Check(
        "anthropic.thinking_final_assistant_disabled",
        "messages.{index}.content.{slot}: When thinking is disabled, an `assistant` message in "
        "the final position cannot contain `thinking`. To use thinking blocks, enable "
        "`thinking` in your request.",
        "https://github.com/tailcallhq/forgecode/issues/1853 (enforced under the ``anthropic`` "
        "profile, the request with thinking off)",
    ),
    "tools_undefined": Check(
        "anthropic.tools_undefined",
        "Requests which include tool_use or tool_result blocks must define tools.",
        "https://github.com/anthropics/anthropic-sdk-python/issues/494 (2024; not checkable "
        "from messages)",
    ),
}
_AN_THINKING_REQUIRED = Check(
    "anthropic.thinking_required",
    "messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
    "`{property}`. When `thinking` is enabled, a final `assistant` message must start with a "
    "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We "
    "recommend you include thinking blocks from previous turns. To avoid this requirement, "
    "disable `thinking`. Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking",
    "https://platform.claude.com/docs/build-with-claude/thinking-tool-workflows ; "
    "https://github.com/Kilo-Org/kilocode/issues/5219",
    status="documented",
)

_LITELLM_FACTORY = "LiteLLM litellm_core_utils/prompt_templates/factory.py"
_AN_OPENAI_SHAPED = {
    # OpenAI-shaped histories only: LiteLLM's converter drops a call without ``type`` (its
    # result then answers nothing) and fails on object arguments
    **_shape_checks(
        Check(
            "anthropic.openai_tool_call_shape",
            "messages.{index}.content.{slot}: unexpected `tool_use_id` found in `tool_result` "
            "blocks. Each `tool_result` block must have a corresponding `tool_use` block in the "
            "previous message.",
            _LITELLM_FACTORY + " (convert_to_anthropic_tool_invoke keeps type 'function' "
            "calls only); " + _ISSUE_20,
        ),
        Check(
            "anthropic.openai_arguments_not_string",
            "'dict' object has no attribute 'strip'",
            _LITELLM_FACTORY + " (convert_to_anthropic_tool_invoke); " + _ISSUE_20,
        ),
    ),
    "empty_history": Check(
        "anthropic.messages_empty",
        "messages: at least one message is required",
        "https://docs.anthropic.com/en/api/messages (messages: minItems 1); a history of "
        "system messages only is sent as `system` and no message (LiteLLM); " + _ISSUE_20,
        status="documented",
    ),
}

_AN_THINKING_OFF = {
    # the ``anthropic`` profile is the request with thinking off (``anthropic-thinking`` has
    # it on), so the request's setting is known from the profile
    "thinking_final_assistant_disabled": _AN_STRICT["thinking_final_assistant_disabled"],
}

ANTHROPIC = Profile(
    name="anthropic",
    aliases=("claude", "anthropic-messages"),
    checks=_checks(**_AN_CHECKS, **_AN_OPENAI_SHAPED, **_AN_THINKING_OFF),
    system_apart=True,
    block_pairing="turns",
    call_id_pattern=r"[a-zA-Z0-9_-]+",
    function_name_pattern=r"(?s:.{1,200})",
    call_id_scope="request",
    strict_checks=_checks(
        **{k: v for k, v in _AN_STRICT.items() if k not in _AN_THINKING_OFF},
        thinking_required=_AN_THINKING_REQUIRED,
    ),
)
"""Anthropic Messages API.

Native ``messages`` (Messages API dicts and the anthropic SDK's block objects) are judged on
merged turns, as the API merges consecutive same-role messages: every ``tool_use`` of an
assistant turn needs its ``tool_result`` in the leading run of the next turn, with nothing
after the ``tool_use`` blocks and nothing before the results. A request ending on an assistant
turn with calls is a prefill and is left alone (``prefill_unsupported`` is model-dependent and
recorded in ``strict_checks``). Thinking blocks are never rewritten; an incomplete one (without
``signature``, say) is dropped, since the API refuses it whole.

An OpenAI-shaped history checked against this profile (what LiteLLM and gateways convert) uses
OpenAI's adjacency pairing (``pairing="adjacent"``) with the Anthropic error texts; ids reused
across turns are rewritten, since Anthropic wants them unique in the whole request.
"""

ANTHROPIC_THINKING = replace(
    ANTHROPIC,
    name="anthropic-thinking",
    aliases=("claude-thinking",),
    checks=_checks(**_AN_CHECKS, **_AN_OPENAI_SHAPED, thinking_required=_AN_THINKING_REQUIRED),
    thinking=True,
    strict_checks=_checks(**_AN_STRICT),
)
"""Anthropic with extended thinking on: the assistant turn before the final user turn that
carries tool results must start with a thinking block. toolmend cannot invent one (it needs the
signature the API gave), so the repair writes that last tool exchange out as text instead,
which the API accepts; every call and result stays readable."""

# --- Gemini generateContent -----------------------------------------------------------------------

_GM_COUNT = Check(
    "gemini.function_response_count",
    "Please ensure that the number of function response parts is equal to the number of "
    "function call parts of the function call turn.",
    "https://github.com/google-gemini/gemini-cli/issues/4217 ; "
    "https://github.com/microsoft/vscode/issues/299295",
)
_GM_INVALID_ARGUMENT = "Request contains an invalid argument."
_GM_CHECKS = {
    "empty_history": Check(
        "gemini.contents_empty",
        "* GenerateContentRequest.contents: contents is not specified\n",
        "https://github.com/vercel/ai/issues/3775",
    ),
    "invalid_role": Check(
        "gemini.role_invalid",
        "Please use a valid role: user, model.",
        "https://ai.google.dev/api/caching#Content ; "
        "https://github.com/the-open-agent/openagent/issues/1666",
        status="documented",
    ),
    "parts_empty": Check(
        "gemini.parts_empty",
        "* GenerateContentRequest.contents[{index}].parts: contents.parts must not be empty.\n",
        "https://github.com/langchain-ai/langchain-google/issues/691 (Gemini API wording)",
    ),
    "part_no_data": Check(
        "gemini.part_no_data",
        "* GenerateContentRequest.contents[{index}].parts[{slot}].data: required oneof field "
        "'data' must have one initialized field\n",
        "https://github.com/router-for-me/CLIProxyAPI/issues/1292",
    ),
    "text_empty": Check(
        "gemini.text_empty",
        "Unable to submit request because it has an empty text parameter. Add a value to the "
        "parameter and try again. Learn more: "
        "https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/gemini",
        "https://github.com/google-gemini/deprecated-generative-ai-js/issues/361 (enforcement "
        "has changed back and forth)",
    ),
    "result_name_empty": Check(
        "gemini.function_response_name_empty",
        "* GenerateContentRequest.contents[{index}].parts[{slot}].function_response.name: "
        "Name cannot be empty.\n",
        "https://github.com/openclaw/openclaw/issues/47857",
    ),
    "response_is_list": Check(
        "gemini.function_response_not_object",
        'Invalid JSON payload received. Unknown name "response" at '
        "'contents[{index}].parts[{slot}].function_response': Proto field is not repeating, "
        "cannot start list.",
        "https://github.com/vercel/ai/pull/3589",
    ),
    "mixed_call_and_response": Check(
        "gemini.mixed_call_and_response",
        "Please ensure that function call turn contains at least one function_call part which "
        "can not be mixed with function_response parts.",
        "https://github.com/googleapis/python-genai/issues/81",
    ),
    "call_turn_position": Check(
        "gemini.function_call_turn_position",
        "Please ensure that function call turn comes immediately after a user turn or after a "
        "function response turn.",
        "https://github.com/google-gemini/gemini-cli/issues/11814",
    ),
    "orphan_result": Check(
        "gemini.function_response_turn_position",
        "Please ensure that function response turn comes immediately after a function call turn.",
        "https://github.com/langchain-ai/langchain/issues/27799",
    ),
    "missing_result": _GM_COUNT,
    "unknown_result_id": _GM_COUNT,
    # an OpenAI-shaped history: two tool messages for one call become two responses
    "duplicate_result": _GM_COUNT,
    "response_extra_parts": Check(
        "gemini.function_response_count",
        _GM_COUNT.error,
        "https://github.com/google-gemini/gemini-cli/pull/16137 (a sibling inlineData part in "
        "a parallel function-response turn gives the 400) ; toolmend issue 3",
        status="inferred",
    ),
    "misplaced_part": Check(
        "gemini.function_response_role",
        _GM_INVALID_ARGUMENT,
        "https://github.com/maximhq/bifrost/pull/2222 (the 400 is observed; the text is the "
        "generic INVALID_ARGUMENT wording)",
        status="inferred",
    ),
    "result_name_mismatch": Check(
        "gemini.function_response_name_mismatch",
        _GM_INVALID_ARGUMENT,
        "https://github.com/archestra-ai/archestra/pull/7583 (bisected live on Vertex); seed "
        "003 (AstrBot: functionResponse.name taken from an opaque tool_call_id)",
        status="inferred",
    ),
}
_GM_UNKNOWN_FIELD = Check(
    "gemini.unknown_field",
    'Invalid JSON payload received. Unknown name "id" at \'contents[{index}].parts[{slot}].'
    "{property}': Cannot find field.",
    "https://github.com/JetBrains/koog/issues/735 ; https://github.com/looplj/axonhub/issues/874",
)
_GM_STRICT = {
    "call_name_empty": Check(
        "gemini.function_call_name_empty",
        "* GenerateContentRequest.contents[{index}].parts[{slot}].function_call.name: Name "
        "cannot be empty.\n",
        "inferred from the function_response twin",
        status="inferred",
    ),
    "args_not_object": Check(
        "gemini.function_call_args_not_object",
        "Invalid value at 'contents[{index}].parts[{slot}].function_call.args' "
        "(type.googleapis.com/google.protobuf.Struct), {property}",
        "inferred from the function_response twin",
        status="inferred",
    ),
    "response_not_object": Check(
        "gemini.function_response_not_object",
        "Invalid value at 'contents[{index}].parts[{slot}].function_response.response' "
        "(type.googleapis.com/google.protobuf.Struct), {property}",
        "https://github.com/randombet/bodhi_realtime_agent/issues/10 (Live API; the REST "
        "wording is inferred)",
        status="inferred",
    ),
    "unknown_field": _GM_UNKNOWN_FIELD,
}
_GM_SIGNATURE = Check(
    "gemini.thought_signature_missing",
    "Function call is missing a thought_signature in functionCall parts. This is required for "
    "tools to work correctly, and missing thought_signature may lead to degraded model "
    "performance. Additional data, function call `default_api:{name}` , position {position}. "
    "Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",
    "https://ai.google.dev/gemini-api/docs/thought-signatures ; "
    "https://github.com/chatboxai/chatbox/issues/3308",
    status="documented",
)

_GM_OPENAI_SHAPED = {
    **_shape_checks(
        Check(
            "gemini.openai_tool_call_shape",
            "Missing corresponding tool call for tool response message.",
            _LITELLM_FACTORY
            + " (a call without its 'function' wrapper is not converted); "
            + _ISSUE_20,
        ),
        Check(
            "gemini.openai_arguments_not_string",
            "Unable to convert openai tool calls to gemini tool calls. Received error=the JSON "
            "object must be str, bytes or bytearray, not dict",
            _LITELLM_FACTORY + " (convert_to_gemini_tool_call_invoke); " + _ISSUE_20,
        ),
    ),
    # LiteLLM writes an empty or null user text as an empty text part and drops it beside
    # calls only when null: the text_empty error
    "content_null": _GM_CHECKS["text_empty"],
    "content_empty": _GM_CHECKS["text_empty"],
    "empty_assistant": _GM_CHECKS["text_empty"],
}

GEMINI = Profile(
    name="gemini",
    aliases=("vertex", "vertex_ai", "vertex-ai", "google", "google-genai", "gemini-2"),
    checks=_checks(**_GM_CHECKS, **_GM_OPENAI_SHAPED),
    block_pairing="contents",
    results_need_name=True,
    call_after_user=True,
    content_text_kinds=frozenset({"user", "assistant"}),
    strict_checks=_checks(**_GM_STRICT, thought_signature_missing=_GM_SIGNATURE),
)
"""Gemini ``generateContent`` (Gemini API and Vertex AI; texts in the Gemini API wording).

Native ``contents`` (REST dicts in camelCase or snake_case, google-genai ``types.Content``
objects, and the other shapes ``generate_content`` accepts) are judged Content by Content, with
no merging: a function-call turn right after a user turn, the next Content holding exactly one
``functionResponse`` per call and nothing else, each named after the call it answers (paired
through the ids when every part has one, else by name, an opaque id stored as the name, or
position). Repairs gather the responses right after their call turn, move other parts into a
user Content of their own, fill names from the calls and write a response's id back onto its
call where the call lost it. A trailing function-call turn is left alone.

An OpenAI-shaped history checked against this profile (what LiteLLM and gateways convert) uses
OpenAI's adjacency pairing and, because ``results_need_name`` is set, needs every tool message
to carry the called function's ``name``: a missing name, or one that is really the opaque call
id (seed 003), is replaced by the call's function name.

Gemini 3 thought signatures are model-dependent: use the ``gemini-3`` profile. Endpoints that
reject ``functionCall.id``: use ``gemini-no-ids``.
"""

GEMINI_3 = replace(
    GEMINI,
    name="gemini-3",
    aliases=("gemini3", "vertex-gemini-3"),
    checks=_checks(**_GM_CHECKS, **_GM_OPENAI_SHAPED, thought_signature_missing=_GM_SIGNATURE),
    thought_signatures=True,
    strict_checks=_checks(**_GM_STRICT),
)
"""Gemini 3 models (``gemini-3*``, ``gemini-3.x``, ``gemini-*-latest``; not
``gemini-3-pro-image*``): as ``gemini``, plus the thought-signature rule. Since the last user
prompt, the first function call of every model Content must carry ``thoughtSignature``; a
history that came from another model or provider has none, so the repair writes the documented
placeholder ``skip_thought_signature_validator`` there (and only there). The model is learned
from the profile name: pick ``gemini-3`` for those models."""

GEMINI_NO_IDS = replace(
    GEMINI,
    name="gemini-no-ids",
    aliases=("gemini-legacy",),
    checks=_checks(**_GM_CHECKS, **_GM_OPENAI_SHAPED, unknown_field=_GM_UNKNOWN_FIELD),
    reject_function_ids=True,
    strict_checks=_checks(**{k: v for k, v in _GM_STRICT.items() if k != "unknown_field"}),
)
"""Gemini endpoints that do not know ``functionCall.id`` / ``functionResponse.id`` (Google AI
before v1beta defined it, Vertex before 2026-09): as ``gemini``, and every id is removed from
calls and responses alike (pairing then rests on names and positions)."""

# --- AWS Bedrock Converse -------------------------------------------------------------------------

_BR_PUBLIC_CODE = "public code quoting the ValidationException"
_BR_EXCESS = Check(
    "BR-TOOL-RESULT-EXCESS",
    "The number of toolResult blocks at messages.{index}.content exceeds the number of toolUse "
    "blocks of previous turn.",
    "https://github.com/Just-Curieous/Curie/issues/16 ; "
    "https://github.com/pydantic/pydantic-ai/issues/2327",
)
_BR_ID = (
    "1 validation error detected: Value '{{id}}' at 'messages.{{index}}.member.content.{{slot}}"
    ".member.{part}' failed to satisfy constraint: Member must satisfy regular expression "
    "pattern: [a-zA-Z0-9_.:-]+ and have length between 1 and 64"
)
_BR_ID_SOURCE = (
    "https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ToolUseBlock.html "
    "(AWS standard validation wording; exact text not found)"
)
_BR_CALL_ID = Check(
    "BR-TOOL-USE-ID-FORMAT", _BR_ID.format(part="toolUse.toolUseId"), _BR_ID_SOURCE, "documented"
)

_BR_RESULT_ID = Check(
    "BR-TOOL-USE-ID-FORMAT", _BR_ID.format(part="toolResult.toolUseId"), _BR_ID_SOURCE, "documented"
)

_BR_RESULT_WITH_TEXT = Check(
    "BR-TOOL-RESULT-WITH-TEXT",
    "messages.{index}.content: Conversation blocks and tool result blocks cannot be "
    "provided in the same turn.",
    "https://github.com/BerriAI/litellm/issues/6053 ; "
    "https://github.com/langchain-ai/langchain-aws/issues/141",
)

_BR_FIRST_NOT_USER = Check(
    "BR-FIRST-NOT-USER",
    "A conversation must start with a user message. Try again with a conversation that "
    "starts with a user message.",
    _BR_PUBLIC_CODE,
)

_BR_NOT_ALTERNATING = Check(
    "BR-ROLES-NOT-ALTERNATING",
    "A conversation must alternate between user and assistant roles. Make sure the "
    "conversation alternates between user and assistant roles and try again.",
    "https://github.com/langgenius/dify/issues/9294 ; "
    "https://github.com/langchain-ai/langchain-aws/issues/192 ; an OpenAI-shaped assistant "
    "message without text is dropped by LiteLLM's converter (" + _ISSUE_20 + ")",
)

BEDROCK = Profile(
    name="bedrock",
    aliases=("bedrock-converse", "converse", "aws-bedrock"),
    checks=_checks(
        first_not_user=_BR_FIRST_NOT_USER,
        roles_not_alternating=_BR_NOT_ALTERNATING,
        orphan_result=_BR_EXCESS,
        unknown_result_id=_BR_EXCESS,
        duplicate_result=_BR_EXCESS,
        missing_result=Check(
            "BR-TOOL-RESULT-MISSING",
            "Expected toolResult blocks at messages.{index}.content for the following Ids: {ids}",
            _BR_PUBLIC_CODE,
        ),
        result_with_text=_BR_RESULT_WITH_TEXT,
        # OpenAI-shaped histories: LiteLLM and gateways fold the tool messages and a user message
        # right after them into one Converse user turn, which then holds both.
        role_order=_BR_RESULT_WITH_TEXT,
        call_id_format=_BR_CALL_ID,
        call_without_id=_BR_CALL_ID,
        result_id_format=_BR_RESULT_ID,
        # an OpenAI-shaped tool message without ``tool_call_id``: converted, a toolResult
        # without toolUseId, and one more result than the turn has calls
        result_without_id=_BR_RESULT_ID,
        # OpenAI-shaped histories through LiteLLM: a malformed call fails the conversion, a
        # user message without text is lost (and the roles then no longer alternate)
        **_shape_checks(
            Check(
                "BR-OPENAI-TOOL-CALL-SHAPE",
                "Unable to convert openai tool calls with ids={ids} to bedrock tool calls.",
                _LITELLM_FACTORY + " (_convert_to_bedrock_tool_call_invoke); " + _ISSUE_20,
            )
        ),
        content_null=_BR_FIRST_NOT_USER,
        content_empty=_BR_FIRST_NOT_USER,
        null_content=_BR_NOT_ALTERNATING,
        empty_assistant=_BR_NOT_ALTERNATING,
        empty_history=_BR_FIRST_NOT_USER,
    ),
    system_apart=True,
    content_text_kinds=frozenset({"user"}),
    block_pairing="converse",
    call_id_pattern=r"[a-zA-Z0-9_.:-]{1,64}",
    first_user=True,
    role_successors=MappingProxyType({"tool": frozenset({"assistant", "tool"})}),
    strict_checks=_checks(
        text_blank=Check(
            "BR-BLANK-TEXT",
            "The text field in the ContentBlock object at messages.{index}.content.{slot} is "
            "blank. Add text to the text field, and try again.",
            "public code quoting the error (model-dependent: Llama, Nova, DeepSeek, Cohere)",
        ),
        call_with_text=Check(
            "BR-TOOL-USE-WITH-TEXT",
            "messages.{index}.content: Conversation blocks and tool use blocks cannot be "
            "provided in the same turn.",
            "https://github.com/quarkiverse/quarkus-langchain4j/issues/1983 (model-dependent)",
        ),
        trailing_call=Check(
            "BR-TRAILING-TOOL-USE",
            "Expected toolResult blocks at messages.{index}.content for the following Ids: {ids}",
            "none (inferred)",
            status="inferred",
        ),
    ),
)
"""AWS Bedrock Converse.

Native ``messages`` (``toolUse`` / ``toolResult`` blocks) are judged message by message: the
first message from the user, roles strictly alternating, the message after an assistant
``toolUse`` turn holding a ``toolResult`` for every call, no more, and no other blocks beside
them. Repairs gather the results into that one user message, answer missing calls with the
placeholder (``status: "error"``), move text beside results into a user message of its own
behind the fixed assistant bridge ("Tool results received."), merge same-role neighbours and
open with the fixed user bridge ("Continue.") where the history starts with the assistant.

An OpenAI-shaped history checked against this profile (what LiteLLM converts) uses OpenAI's
adjacency pairing and the first-user rule; LiteLLM itself merges consecutive same-role messages.
"""

PROFILES: Mapping[str, Profile] = MappingProxyType(
    {
        p.name: p
        for p in (
            OPENAI,
            OPENAI_RESPONSES,
            DEEPSEEK,
            DEEPSEEK_REASONER,
            MISTRAL,
            GROQ,
            HF_TEMPLATE,
            HF_TEMPLATE_STRICT,
            ANTHROPIC,
            ANTHROPIC_THINKING,
            GEMINI,
            GEMINI_3,
            GEMINI_NO_IDS,
            BEDROCK,
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


def primary_names() -> list[str]:
    """The provider names without their aliases (the vendors' APIs and the chat template
    servers), in the table's order: what help texts and errors list; the aliases (``claude``,
    ``vllm``, ``vertex``, ...) are in docs/providers.md."""
    return list(PROFILES)


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
        f"Unknown provider {provider!r}.{hint} Known: {', '.join(primary_names())} "
        "(and their aliases: docs/providers.md)"
    )


def compiled(pattern: str | None) -> re.Pattern[str] | None:
    """The pattern compiled for full matches, cached by :mod:`re`."""
    return re.compile(pattern) if pattern else None
