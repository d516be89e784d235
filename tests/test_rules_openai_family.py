"""Every enabled check of the OpenAI-family profiles: a history that breaks it, one that passes.

Each row asserts the exact provider error text ``check`` reports, that the passing history has
no problem of that code, and that ``repair`` turns the breaking history into one the profile
accepts. A test below fails when a profile enables a code that has no row here.
"""

from __future__ import annotations

from typing import Any

import pytest

import toolmend
from toolmend.profiles import PROFILES

from support.cases import assistant, calls, result, system, tool_call, user
from support.histories import OPENAI_FAMILY

MISTRAL_ID = "abcDEF123"
MISTRAL_ID2 = "xyzXYZ789"


def _flat(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with its first call flattened to ``{"id", "name", "arguments"}``."""
    call = message["tool_calls"][0]
    flat = {"id": call["id"], **call["function"]}
    return {**message, "tool_calls": [flat, *message["tool_calls"][1:]]}


def _object_arguments(message: dict[str, Any]) -> dict[str, Any]:
    call = message["tool_calls"][0]
    changed = {**call, "function": {**call["function"], "arguments": {"city": "Paris"}}}
    return {**message, "tool_calls": [changed, *message["tool_calls"][1:]]}


def _shape_rows(
    provider: str, call_id: str, shape: str, arguments: str, empty: str, text: str | None = None
) -> list[tuple[str, str, list[Any], str, list[Any]]]:
    """Issue 20, finding 1: the call-shape rules of a profile taking OpenAI-shaped messages."""
    good = calls(call_id, text=text)
    tail = [result(call_id), assistant("21 C"), user()]
    return [
        (provider, "call_shape", [user(), _flat(good), *tail], shape, [user(), good, *tail]),
        (
            provider,
            "arguments_not_string",
            [user(), _object_arguments(good), *tail],
            arguments,
            [user(), good, *tail],
        ),
        (
            provider,
            "empty_tool_calls",
            [user(), assistant("hi", tool_calls=[]), user()],
            empty,
            [user(), assistant("hi"), user()],
        ),
    ]


_DS_SHAPE = "Failed to deserialize the JSON body into the target type: messages[1]: tool_calls[0]: missing field `{}`"
_GQ_SHAPE = "'messages.1' : for 'role:assistant' the following must be satisfied[('messages.1.tool_calls.0.{0}' : property '{0}' is missing)]"
_MI_SHAPE = "messages.1.assistant.tool_calls.0.function: Field required"
_HF_SHAPE = "'dict object' has no attribute 'function'"

ISSUE_20_ROWS: list[tuple[str, str, list[Any], str, list[Any]]] = [
    *_shape_rows(
        "deepseek",
        "c1",
        _DS_SHAPE.format("type"),
        "Failed to deserialize the JSON body into the target type: messages[1]: tool_calls[0].function.arguments: invalid type: map, expected a string",
        "Invalid 'messages[1].tool_calls': empty array. Expected an array with minimum length 1, but got an empty array instead.",
    ),
    *_shape_rows(
        "groq",
        "c1",
        _GQ_SHAPE.format("type"),
        "'messages.1' : for 'role:assistant' the following must be satisfied[('messages.1.tool_calls.0.function.arguments' : value must be a string)]",
        "'messages.1' : for 'role:assistant' the following must be satisfied[('messages.1.tool_calls' : minimum number of items is 1)]",
    ),
    *[
        row
        for row in _shape_rows(
            "mistral",
            MISTRAL_ID,
            _MI_SHAPE,
            "",
            "After the optional system message, conversation roles must alternate "
            "user/assistant/user/assistant/...",
        )
        if row[1] != "arguments_not_string"  # mistral-common serializes object arguments
    ],
    *_shape_rows("hf-template", "c1", _HF_SHAPE, _HF_SHAPE, _HF_SHAPE, text=""),
    # finding 2: null content where the provider wants a string
    (
        "mistral",
        "content_null",
        [user(), calls(MISTRAL_ID), result(MISTRAL_ID, text=None), assistant("ok"), user()],  # type: ignore[arg-type]
        "messages.2.tool.content.str: Input should be a valid string",
        [user(), calls(MISTRAL_ID), result(MISTRAL_ID, text=""), assistant("ok"), user()],
    ),
    (
        "groq",
        "content_null",
        [user(), calls("c1"), result("c1", text=None)],  # type: ignore[arg-type]
        "'messages.2' : for 'role:tool' the following must be satisfied[('messages.2.content' : "
        "value must be a string)]",
        [user(), calls("c1"), result("c1", text="")],
    ),
    (
        "hf-template",
        "content_null",
        [user(None), assistant("hi"), user()],
        'can only concatenate str (not "NoneType") to str',
        [user(""), assistant("hi"), user()],
    ),
    (
        "hf-template",
        "null_content",
        [user(), assistant(None), user()],
        'can only concatenate str (not "NoneType") to str',
        [user(), assistant(""), user()],
    ),
    (
        "hf-template-strict",
        "content_null",
        [user(None), assistant("hi"), user()],
        "Invalid content type",
        [user(""), assistant("hi"), user()],
    ),
    (
        "hf-template-strict",
        "null_content",
        [user(), assistant(None), user()],
        "Invalid content type",
        [user(), assistant(""), user()],
    ),
    # finding 3: a conversation opening with an assistant call (Mistral: the first-user rule)
    (
        "mistral",
        "first_not_user",
        [calls(MISTRAL_ID), result(MISTRAL_ID), assistant("ok"), user()],
        "Conversation must start with a user message or system message",
        [user(), calls(MISTRAL_ID), result(MISTRAL_ID), assistant("ok"), user()],
    ),
    # finding 4: nothing to send
    ("mistral", "empty_history", [], "Conversation must have at least one message", [user()]),
    ("hf-template", "empty_history", [], "list object has no element 0", [user()]),
    ("hf-template-strict", "empty_history", [], "list object has no element 0", [user()]),
    # finding 6: templates
    (
        "hf-template-strict",
        "system_unsupported",
        [system(), user(), assistant("hi"), user()],
        "System role not supported",
        [user(), assistant("hi"), user()],
    ),
    (
        "hf-template",
        "orphan_result",
        [user(), result("c1"), assistant("hi"), user()],
        "Message has tool role, but there was no previous assistant message with a tool call!",
        [user(), calls("c1", text=""), result("c1"), assistant("hi"), user()],
    ),
    (
        "hf-template",
        "unknown_result_id",
        [user(), calls("c1", text=""), result("c2"), assistant("hi"), user()],
        "Message has tool role, but there was no previous assistant message with a tool call!",
        [user(), calls("c1", text=""), result("c1"), assistant("hi"), user()],
    ),
    (
        "hf-template",
        "result_without_id",
        [user(), calls("c1", text=""), result(None), assistant("hi"), user()],
        "Tool call IDs should be alphanumeric strings with length >= 9! (2)",
        [user(), calls("c1", text=""), result("c1"), assistant("hi"), user()],
    ),
]

# (provider, code, breaking history, exact provider error, passing history)
ROWS: list[tuple[str, str, list[Any], str, list[Any]]] = [
    (
        "openai",
        "empty_history",
        [],
        "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty "
        "array instead.",
        [user()],
    ),
    (
        "openai",
        "invalid_role",
        [user(), {"role": "tooool", "content": "x"}],
        "Invalid value: 'tooool'. Supported values are: 'system', 'assistant', 'user', 'function', "
        "'tool', and 'developer'.",
        [user(), {"role": "developer", "content": "x"}],
    ),
    (
        "openai",
        "orphan_result",
        [system(), result("call_1"), user()],
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
        "'tool_calls'.",
        [system(), user(), calls("call_1"), result("call_1")],
    ),
    (
        "openai",
        "unknown_result_id",
        [user(), calls("call_1"), result("call_2")],
        "Invalid parameter: 'tool_call_id' of 'call_2' not found in 'tool_calls' of previous message.",
        [user(), calls("call_1"), result("call_1")],
    ),
    (
        "openai",
        "duplicate_result",
        [user(), calls("a"), result("a", "Tool execution aborted"), result("a", "R")],
        "Invalid parameter: Duplicate value for 'tool_call_id' of 'a', in messages[2] and "
        "messages[3].",
        [user(), calls("a"), result("a", "R")],
    ),
    (
        "openai",
        "missing_result",
        [user(), calls("call_1", "call_2"), result("call_1"), user()],
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        "'tool_call_id'. The following tool_call_ids did not have response messages: call_2",
        [user(), calls("call_1", "call_2"), result("call_2"), result("call_1"), user()],
    ),
    (
        "openai",
        "empty_tool_calls",
        [user(), assistant("ok", tool_calls=[])],
        "Invalid 'messages[1].tool_calls': empty array. Expected an array with minimum length 1, but "
        "got an empty array instead.",
        [user(), assistant("ok")],
    ),
    (
        "openai",
        "result_without_id",
        [user(), calls("call_1", "call_2"), result("call_1"), result(None)],
        "Missing parameter 'tool_call_id': messages with role 'tool' must have a 'tool_call_id'.",
        [user(), calls("call_1", "call_2"), result("call_1"), result("call_2")],
    ),
    (
        "openai",
        "null_content",
        [user(), assistant(None)],
        "Invalid value for 'content': expected a string, got null.",
        [user(), calls("c"), result("c")],
    ),
    (
        "openai",
        "call_id_too_long",
        [user(), calls("call_" + "x" * 45), result("call_" + "x" * 45)],
        "Invalid 'messages[1].tool_calls[0].id': string too long. Expected a string with maximum "
        "length 40, but got a string with length 50 instead.",
        [user(), calls("call_" + "x" * 35), result("call_" + "x" * 35)],
    ),
    (
        "openai",
        "arguments_not_string",
        [
            user(),
            assistant(
                None,
                tool_calls=[
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "f", "arguments": {"a": 1}},
                    }
                ],
            ),
            result("c1"),
        ],
        "Invalid type for 'messages[1].tool_calls[0].function.arguments': expected a string, but got "
        "an object instead.",
        [user(), calls("c1"), result("c1")],
    ),
    (
        "openai",
        "call_name_empty",
        [user(), assistant(None, tool_calls=[tool_call("c1", name="")]), result("c1")],
        "Invalid 'messages[1].tool_calls[0].function.name': empty string. Expected a string with "
        "minimum length 1, but got an empty string instead.",
        [user(), calls("c1"), result("c1")],
    ),
    (
        "openai",
        "call_shape",
        [
            user(),
            assistant(None, tool_calls=[{"id": "c1", "name": "f", "arguments": "{}"}]),
            result("c1"),
        ],
        "Missing required parameter: 'messages[1].tool_calls[0].function'.",
        [user(), calls("c1"), result("c1")],
    ),
    (
        "openai",
        "call_without_id",
        [
            user(),
            assistant(
                None,
                tool_calls=[{"type": "function", "function": {"name": "f", "arguments": "{}"}}],
            ),
        ],
        "Missing required parameter: 'messages[1].tool_calls[0].id'.",
        [user(), calls("c1"), result("c1")],
    ),
    (
        "deepseek",
        "orphan_result",
        [user(), assistant(""), result("call_00_x"), user()],
        "Messages with role 'tool' must be a response to a preceding message with 'tool_calls'",
        [user(), calls("call_00_x"), result("call_00_x"), user()],
    ),
    (
        "deepseek",
        "missing_result",
        [user(), calls("a", "b"), result("a"), user()],
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        "'tool_call_id'. (insufficient tool messages following tool_calls message)",
        [user(), calls("a", "b"), result("a"), result("b"), user()],
    ),
    (
        "deepseek-reasoner",
        "missing_reasoning",
        [
            user(),
            calls("a", reasoning_content="let me look"),
            result("a"),
            assistant("21 C"),
            user(),
        ],
        "The `reasoning_content` in the thinking mode must be passed back to the API.",
        [
            user(),
            calls("a", reasoning_content="let me look"),
            result("a"),
            assistant("21 C", reasoning_content=""),
            user(),
            assistant("no tools, no reasoning"),
        ],
    ),
    (
        "mistral",
        "role_order",
        [user(), calls(MISTRAL_ID), result(MISTRAL_ID), user()],
        "Unexpected role 'user' after role 'tool'",
        [user(), calls(MISTRAL_ID), result(MISTRAL_ID), assistant("done"), user()],
    ),
    (
        "mistral",
        "call_id_format",
        [user(), calls("call_0fypS1hVX"), result("call_0fypS1hVX")],
        "Tool call id was call_0fypS1hVX but must be a-z, A-Z, 0-9, with a length of 9.",
        [user(), calls(MISTRAL_ID), result(MISTRAL_ID)],
    ),
    (
        "mistral",
        "call_without_id",
        [
            user(),
            assistant(
                None,
                tool_calls=[{"type": "function", "function": {"name": "f", "arguments": "{}"}}],
            ),
        ],
        "Tool call id has to be defined.",
        [user(), calls(MISTRAL_ID), result(MISTRAL_ID)],
    ),
    (
        "mistral",
        "result_without_id",
        [user(), calls(MISTRAL_ID, MISTRAL_ID2), result(MISTRAL_ID), result(None)],
        "Tool call id has to be defined.",
        [user(), calls(MISTRAL_ID, MISTRAL_ID2), result(MISTRAL_ID), result(MISTRAL_ID2)],
    ),
    (
        "mistral",
        "missing_result",
        [user(), calls(MISTRAL_ID, MISTRAL_ID2), result(MISTRAL_ID)],
        "Not the same number of function calls and responses",
        [user(), calls(MISTRAL_ID, MISTRAL_ID2), result(MISTRAL_ID), result(MISTRAL_ID2)],
    ),
    (
        "mistral",
        "unknown_result_id",
        [user(), calls(MISTRAL_ID), result(MISTRAL_ID2)],
        f"Unexpected tool call id {MISTRAL_ID2} in tool results",
        [user(), calls(MISTRAL_ID), result(MISTRAL_ID)],
    ),
    (
        "mistral",
        "orphan_result",
        [user(), assistant("hm"), result(MISTRAL_ID)],
        f"Unexpected tool call id {MISTRAL_ID} in tool results",
        [user(), calls(MISTRAL_ID), result(MISTRAL_ID)],
    ),
    (
        "mistral",
        "duplicate_result",
        [user(), calls(MISTRAL_ID, MISTRAL_ID2), result(MISTRAL_ID), result(MISTRAL_ID)],
        f"Duplicate tool call id {MISTRAL_ID} in tool results",
        [user(), calls(MISTRAL_ID, MISTRAL_ID2), result(MISTRAL_ID), result(MISTRAL_ID2)],
    ),
    (
        "mistral",
        "duplicate_call_id",
        [user(), calls(MISTRAL_ID, MISTRAL_ID), result(MISTRAL_ID), result(MISTRAL_ID)],
        f"Duplicate tool call id {MISTRAL_ID} in assistant message",
        [user(), calls(MISTRAL_ID, MISTRAL_ID2), result(MISTRAL_ID), result(MISTRAL_ID2)],
    ),
    (
        "mistral",
        "last_role",
        [user(), assistant("The answer is")],
        "Expected last role User or Tool (or Assistant with prefix True) for serving but got "
        "assistant",
        [user(), assistant("The answer is", prefix=True)],
    ),
    (
        "mistral",
        "empty_assistant",
        [user(), assistant(""), user()],
        "Assistant message must have either content or tool_calls, but not none.",
        [user(), assistant("ok"), user()],
    ),
    (
        "mistral",
        "null_content",
        [user(), assistant(None), user()],
        "Assistant message must have either content or tool_calls, but not none.",
        [user(), assistant("ok"), user()],
    ),
    (
        "mistral",
        "function_name_format",
        [
            user(),
            assistant(None, tool_calls=[tool_call(MISTRAL_ID, name="get weather!")]),
            result(MISTRAL_ID),
        ],
        "Function name was get weather! but must be a-z, A-Z, 0-9, or contain underscores and "
        "dashes, with a maximum length of 64.",
        [user(), calls(MISTRAL_ID), result(MISTRAL_ID)],
    ),
    (
        "groq",
        "unsupported_property",
        [user(), assistant("hi", reasoning_content="hmm")],
        "'messages.1' : for 'role:assistant' the following must be satisfied[('messages.1' : property "
        "'reasoning_content' is unsupported)]",
        [user(), assistant("hi")],
    ),
    (
        "groq",
        "function_call_null",
        [user(), calls("c1", function_call=None), result("c1")],
        "'messages.1' : for 'role:assistant' the following must be satisfied[('messages.1' : property "
        "'function_call' is unsupported)]",
        [user(), calls("c1"), result("c1")],
    ),
    (
        "groq",
        "result_without_id",
        [user(), calls("c1"), result(None)],
        "'messages.2' : for 'role:tool' the following must be satisfied[('messages.2.tool_call_id' : "
        "property 'tool_call_id' is missing)]",
        [user(), calls("c1"), result("c1")],
    ),
    (
        "groq",
        "tool_content_not_string",
        [user(), calls("c1"), result("c1", text=[{"type": "text", "text": "21 C"}])],  # type: ignore[arg-type]
        "'messages.2' : for 'role:tool' the following must be satisfied[('messages.2.content' : value "
        "must be a string)]",
        [user(), calls("c1"), result("c1")],
    ),
    (
        "hf-template",
        "roles_not_alternating",
        [user(), calls("c1"), result("c1"), user()],
        "After the optional system message, conversation roles must alternate "
        "user/assistant/user/assistant/...",
        [system(), user(), calls("c1", text=""), result("c1"), assistant("21 C"), user()],
    ),
    (
        "hf-template-strict",
        "roles_not_alternating",
        [user(), calls("c1"), result("c1")],
        "Conversation roles must alternate user/assistant/user/assistant/...",
        [user(), assistant("21 C"), user()],
    ),
    *ISSUE_20_ROWS,
]


@pytest.mark.parametrize(
    ("provider", "code", "broken", "error", "passing"),
    ROWS,
    ids=[f"{row[0]}-{row[1]}" for row in ROWS],
)
def test_rule_breaks_and_passes(
    provider: str, code: str, broken: list[Any], error: str, passing: list[Any]
) -> None:
    problems = toolmend.check(broken, provider=provider)
    matching = [p for p in problems if p.code == code]
    assert matching, f"{code} not reported: {problems}"
    assert error in {p.provider_error for p in matching}
    assert all(p.rule == PROFILES[provider].checks[code].rule for p in matching)
    assert toolmend.check(passing, provider=provider) == []
    if broken:
        repaired = toolmend.repair(broken, provider=provider)
        assert repaired.problems_left == ()
        assert toolmend.check(repaired.messages, provider=provider) == []
        assert repaired.changes


def test_every_enabled_check_has_a_row() -> None:
    covered = {(row[0], row[1]) for row in ROWS}
    openai_family = OPENAI_FAMILY
    missing = [
        (name, code)
        for name in openai_family
        for code in PROFILES[name].checks
        if (name, code) not in covered
        and not (name == "deepseek-reasoner" and (("deepseek", code) in covered))
    ]
    assert missing == []
