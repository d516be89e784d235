"""OpenAI: Chat Completions and the Responses API."""

from __future__ import annotations

from ._base import Check, Profile, checks

_OA_ISSUES = "https://github.com/smarter-sh/smarter/issues/264"

# --- OpenAI Chat Completions ----------------------------------------------------------------------

OPENAI_ORPHAN = Check(
    "OA-TOOL-ORPHAN",
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
    "with 'tool_calls'.",
    _OA_ISSUES,
)
OPENAI_MISSING = Check(
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
    checks=checks(
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
        orphan_result=OPENAI_ORPHAN,
        unknown_result_id=Check(
            "OA-TOOL-UNKNOWN-ID",
            "Invalid parameter: 'tool_call_id' of '{id}' not found in 'tool_calls' of previous "
            "message.",
            "https://github.com/dapr/dapr-agents/issues/145",
        ),
        missing_result=OPENAI_MISSING,
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
    strict_checks=checks(
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

_NO_TOOL_OUTPUT = Check(
    "OR-NO-TOOL-OUTPUT-ITEM",
    "No tool output found for {property} {id}.",
    "https://github.com/openai/openai-agents-python/pull/1855 (local shell call); "
    "https://github.com/microsoft/agent-framework/issues/8663 (shell call); public code quoting "
    "the API for custom tool, apply patch and computer calls. {property} is the API's name of "
    "the call type",
)
_NO_TOOL_CALL = Check(
    "OR-NO-TOOL-CALL-ITEM",
    "No tool call found for {property} output with call_id {id}.",
    "public code quoting the Codex backend for custom tool call outputs; the wording of "
    "OR-NO-TOOL-CALL, whose type it names",
)

OPENAI_RESPONSES = Profile(
    name="openai-responses",
    aliases=("responses",),
    pairing="ordered",
    checks=checks(
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
        missing_tool_output=_NO_TOOL_OUTPUT,
        orphan_tool_output=_NO_TOOL_CALL,
        null_content=Check(
            "OR-MESSAGE-NULL-CONTENT",
            "Invalid type for 'input[{index}].content': expected one of an array of objects or "
            "string, but got null instead.",
            _RESPONSES_NOTES,
        ),
    ),
    call_id_max_length=64,
    strict_checks=checks(
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

# --- OpenAI Responses API, other tool calls and reasoning models ----------------------------------

RESPONSES_REASONING_MODELS: tuple[str, ...] = ("o1", "o3", "o4", "gpt-5", "codex-")
"""Model name prefixes of OpenAI's reasoning models on the Responses API (``gpt-5*`` includes
``gpt-5-codex`` and the ``gpt-5.x`` releases): a request naming one meets
``openai-responses-reasoning`` (see :func:`toolmend.request_profile`)."""

OPENAI_RESPONSES_REASONING = Profile(
    name="openai-responses-reasoning",
    pairing="ordered",
    checks=checks(
        **OPENAI_RESPONSES.checks,
        # A reasoning model's output run starts with its reasoning item, and the server ties
        # every ``fc_`` item id of that run to it. Sent by id without it (a store or trimmer
        # kept the call and lost the reasoning item), the call is refused. The repair removes
        # the item id: the call goes as a new item the API does not tie to anything, with its
        # ``call_id``, name and arguments, so its output still answers it; the reasoning text
        # was already gone (laravel/ai#1052, continuedev/continue#11785, TanStack/ai#1365).
        call_without_reasoning=Check(
            "OR-CALL-WITHOUT-REASONING",
            "Item '{id}' of type 'function_call' was provided without its required 'reasoning' "
            "item: 'rs_...'.",
            "https://github.com/cline/cline/issues/12242 ; "
            "https://github.com/mastra-ai/mastra/issues/8738 ; "
            "https://github.com/continuedev/continue/issues/10018 (o3, gpt-5, gpt-5.2, gpt-5.5; "
            "'rs_...' stands for the reasoning item's id, which only the server knows)",
        ),
    ),
    call_id_max_length=64,
    strict_checks=OPENAI_RESPONSES.strict_checks,
)
"""OpenAI Responses for a reasoning model (o-series, gpt-5*, codex): the rules of
``openai-responses``, and a ``function_call`` with a server ``fc_`` id must follow the reasoning
item of its output run (an assistant message or other calls of the run may come between).
Not enforced for other models, whose calls carry ``fc_`` ids with no reasoning item at all."""
