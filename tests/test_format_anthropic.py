"""The anthropic format and profile: one breaking and one passing history per rule, with the
exact provider error text, the repair's change codes, and the anthropic SDK's own objects.

Property tests over random histories live in ``test_block_properties.py``.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from anthropic.types import (
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)

import toolmend
from toolmend.formats import _anthropic as anthropic_format
from toolmend.formats import detect
from toolmend.profiles import get_profile

PROVIDER = "anthropic"


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


def assistant(content: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def use(call_id: Any, name: Any = "get_weather", input: Any = None) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": call_id,
        "name": name,
        "input": {"city": "Paris"} if input is None else input,
    }


def result(call_id: Any, content: Any = "21 C") -> dict[str, Any]:
    block = {"type": "tool_result", "content": content}
    if call_id is not None:
        block["tool_use_id"] = call_id
    return block


def thinking(signature: Any = "c2lnbmF0dXJl") -> dict[str, Any]:
    block = {"type": "thinking", "thinking": "Let me look that up."}
    if signature is not None:
        block["signature"] = signature
    return block


MISSING = (
    "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: "
    "{ids}. Each `tool_use` block must have a corresponding `tool_result` block in the next "
    "message."
)
UNEXPECTED = (
    "messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. "
    "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
)

# (case id, broken history, [(code, index, exact provider error)], change codes, passing history)
CASES: list[tuple[str, list[Any], list[tuple[str, int, str]], set[str], list[Any]]] = [
    (
        "result-not-at-the-start-of-the-next-turn",
        [
            user("Weather in Paris?"),
            assistant([text("Checking."), use("toolu_1")]),
            user([text("also hurry"), result("toolu_1")]),
        ],
        [("missing_result", 2, MISSING.format(i=2, ids="toolu_1"))],
        {"moved_result"},
        [
            user("Weather in Paris?"),
            assistant([text("Checking."), use("toolu_1")]),
            user([result("toolu_1"), text("also hurry")]),
        ],
    ),
    (
        "user-message-between-call-and-results",
        [
            user("Weather in Paris and Oslo?"),
            assistant([use("toolu_1"), use("toolu_2", input={"city": "Oslo"})]),
            user("Are you there?"),
            user([result("toolu_1"), result("toolu_2", "3 C")]),
        ],
        [("missing_result", 2, MISSING.format(i=2, ids="toolu_1, toolu_2"))],
        {"moved_result"},
        [
            user("Weather in Paris and Oslo?"),
            assistant([use("toolu_1"), use("toolu_2", input={"city": "Oslo"})]),
            user([result("toolu_1")]),
            user([result("toolu_2", "3 C"), text("Are you there?")]),
        ],
    ),
    (
        "text-after-tool-use",
        [
            user("Weather?"),
            assistant([use("toolu_1"), text("One moment.")]),
            user([result("toolu_1")]),
        ],
        [("missing_result", 2, MISSING.format(i=2, ids="toolu_1"))],
        {"reordered_blocks"},
        [
            user("Weather?"),
            assistant([text("One moment.")]),
            assistant([use("toolu_1")]),
            user([result("toolu_1")]),
        ],
    ),
    (
        "call-without-result",
        [
            user("Weather?"),
            assistant([use("toolu_1"), use("toolu_2")]),
            user([result("toolu_1")]),
            assistant("It is 21 C."),
        ],
        [("missing_result", 2, MISSING.format(i=2, ids="toolu_2"))],
        {"answered_missing_call"},
        [
            user("Weather?"),
            assistant([use("toolu_1")]),
            user([result("toolu_1")]),
            assistant("It is 21 C."),
        ],
    ),
    (
        "orphan-result",
        [user("Hi"), assistant("Hello"), user([result("toolu_9"), text("thanks")])],
        [("orphan_result", 2, UNEXPECTED.format(i=2, j=0, id="toolu_9"))],
        {"dropped_orphan_result"},
        [user("Hi"), assistant("Hello"), user([text("thanks")])],
    ),
    (
        "result-for-an-unknown-id",
        [
            user("Weather?"),
            assistant([use("toolu_1")]),
            user([result("toolu_1"), result("toolu_7")]),
        ],
        [("unknown_result_id", 2, UNEXPECTED.format(i=2, j=1, id="toolu_7"))],
        {"dropped_orphan_result"},
        [user("Weather?"), assistant([use("toolu_1")]), user([result("toolu_1")])],
    ),
    (
        "duplicate-result",
        [
            user("Weather?"),
            assistant([use("toolu_1")]),
            user([result("toolu_1"), result("toolu_1")]),
        ],
        [
            (
                "duplicate_result",
                2,
                "messages.2.content.1: each tool_use must have a single result. Found multiple "
                "`tool_result` blocks with id: toolu_1",
            )
        ],
        {"dropped_duplicate_result"},
        [user("Weather?"), assistant([use("toolu_1")]), user([result("toolu_1")])],
    ),
    (
        "duplicate-call-id-across-turns",
        [
            user("Weather?"),
            assistant([use("call_0")]),
            user([result("call_0")]),
            assistant([use("call_0", input={"city": "Oslo"})]),
            user([result("call_0", "3 C")]),
        ],
        [("duplicate_call_id", 3, "messages.3.content.0: `tool_use` ids must be unique")],
        {"rewrote_call_id"},
        [
            user("Weather?"),
            assistant([use("call_0")]),
            user([result("call_0")]),
            assistant([use("call_1", input={"city": "Oslo"})]),
            user([result("call_1", "3 C")]),
        ],
    ),
    (
        "call-id-outside-the-pattern",
        [user("Weather?"), assistant([use("call.1")]), user([result("call.1")])],
        [
            (
                "call_id_format",
                1,
                "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
            ),
            (
                "result_id_format",
                2,
                "messages.2.content.0.tool_result.tool_use_id: String should match pattern "
                "'^[a-zA-Z0-9_-]+$'",
            ),
        ],
        {"rewrote_call_id"},
        [user("Weather?"), assistant([use("call_1")]), user([result("call_1")])],
    ),
    (
        "call-without-id",
        [user("Weather?"), assistant([use(None)]), user([result(None)])],
        [
            ("call_without_id", 1, "messages.1.content.0.tool_use.id: Field required"),
            (
                "result_without_id",
                2,
                "messages.2.content.0.tool_result.tool_use_id: Field required",
            ),
        ],
        {"rewrote_call_id", "filled_result_id"},
        [user("Weather?"), assistant([use("toolu_1")]), user([result("toolu_1")])],
    ),
    (
        "empty-function-name",
        [user("Weather?"), assistant([use("toolu_1", name="")]), user([result("toolu_1")])],
        [
            (
                "call_name_empty",
                1,
                "messages.1.content.0.tool_use.name: String should have at least 1 character",
            )
        ],
        {"renamed_function"},
        [user("Weather?"), assistant([use("toolu_1")]), user([result("toolu_1")])],
    ),
    (
        "function-name-too-long",
        [user("Weather?"), assistant([use("toolu_1", name="w" * 201)]), user([result("toolu_1")])],
        [
            (
                "function_name_format",
                1,
                "messages.1.content.0.tool_use.name: String should have at most 200 characters",
            )
        ],
        {"renamed_function"},
        [user("Weather?"), assistant([use("toolu_1", name="w" * 200)]), user([result("toolu_1")])],
    ),
    (
        "input-as-json-text",
        [
            user("Weather?"),
            assistant([use("toolu_1", input='{"city": "Paris"}')]),
            user([result("toolu_1")]),
        ],
        [
            (
                "input_not_object",
                1,
                "messages.1.content.0.tool_use.input: Input should be a valid dictionary",
            )
        ],
        {"normalized_tool_call"},
        [user("Weather?"), assistant([use("toolu_1")]), user([result("toolu_1")])],
    ),
    (
        "system-message-inside-messages",
        [{"role": "system", "content": "Be brief."}, user("Hi")],
        [
            (
                "system_role",
                0,
                'messages: Unexpected role "system". The Messages API accepts a top-level '
                '`system` parameter, not "system" as an input message role.',
            )
        ],
        {"system_to_user"},
        [user("Be brief."), user("Hi")],
    ),
    (
        "unknown-role",
        [user("Hi"), {"role": "bot", "content": "Hello"}],
        [("invalid_role", 1, "messages.1.role: Input should be 'user' or 'assistant'")],
        {"renamed_role"},
        [user("Hi"), assistant("Hello")],
    ),
    (
        "empty-content",
        [user(""), user("Hi")],
        [
            (
                "empty_content",
                0,
                "messages.0: all messages must have non-empty content except for the optional "
                "final assistant message",
            )
        ],
        {"dropped_empty_message"},
        [user("Hi"), assistant("")],
    ),
    (
        "empty-text-block",
        [user("Hi"), assistant([text(""), use("toolu_1")]), user([result("toolu_1")])],
        [("text_empty", 1, "messages: text content blocks must be non-empty")],
        {"dropped_empty_block"},
        [user("Hi"), assistant([use("toolu_1")]), user([result("toolu_1")])],
    ),
    (
        "whitespace-text-block",
        [user([text("Hi"), text("  \n")])],
        [("text_whitespace", 0, "messages: text content blocks must contain non-whitespace text")],
        {"dropped_empty_block"},
        [user([text("Hi")])],
    ),
    (
        "final-assistant-trailing-whitespace",
        [user("Write a haiku"), assistant("Autumn moon \n")],
        [
            (
                "trailing_whitespace",
                1,
                "messages: final assistant content cannot end with trailing whitespace",
            )
        ],
        {"trimmed_whitespace"},
        [user("Write a haiku"), assistant("Autumn moon"), user("Another one")],
    ),
    (
        "thinking-block-without-signature",
        [user("Weather?"), assistant([thinking(None), use("toolu_1")]), user([result("toolu_1")])],
        [("thinking_fields", 1, "messages.1.content.0.thinking.signature: Field required")],
        {"dropped_thinking_block"},
        [user("Weather?"), assistant([thinking(), use("toolu_1")]), user([result("toolu_1")])],
    ),
]


@pytest.mark.parametrize(
    ("broken", "expected", "changes", "passing"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_each_rule_breaks_and_is_repaired(
    broken: list[Any],
    expected: list[tuple[str, int, str]],
    changes: set[str],
    passing: list[Any],
) -> None:
    before = copy.deepcopy(broken)
    native = {"provider": PROVIDER, "format": "anthropic"}  # plain text alone reads as openai
    problems = toolmend.check(broken, **native)
    assert [(p.code, p.index, p.provider_error) for p in problems] == expected
    assert all(p.rule.startswith("anthropic.") for p in problems)
    fixed = toolmend.repair(broken, **native)
    assert broken == before, "the input was mutated"
    assert changes <= {change.code for change in fixed.changes}
    assert fixed.problems_left == ()
    assert toolmend.check(fixed.messages, **native) == []
    assert toolmend.sanitize(fixed.messages, **native) is fixed.messages
    assert toolmend.check(passing, **native) == []
    assert toolmend.sanitize(passing, **native) is passing


def test_text_typed_before_the_results_moves_after_them() -> None:
    broken = CASES[0][1]
    fixed = toolmend.sanitize(broken, provider=PROVIDER)
    assert fixed[:2] == broken[:2] and fixed[0] is broken[0] and fixed[1] is broken[1]
    assert fixed[2:] == [user([result("toolu_1")]), user([text("also hurry")])]
    assert fixed[2]["content"][0] is broken[2]["content"][1], "the block itself is kept"


def test_a_message_emptied_by_the_move_disappears() -> None:
    broken = [
        user("Weather?"),
        assistant([use("toolu_1"), use("toolu_2")]),
        user([result("toolu_1")]),
        user("Hello?"),
        user([result("toolu_2")]),
    ]
    fixed = toolmend.repair(broken, provider=PROVIDER)
    assert fixed.messages == [
        user("Weather?"),
        assistant([use("toolu_1"), use("toolu_2")]),
        user([result("toolu_1"), result("toolu_2")]),
        user("Hello?"),
    ]
    assert [c.code for c in fixed.changes] == ["moved_result", "moved_result"]


def test_placeholder_result_is_marked_as_an_error() -> None:
    fixed = toolmend.sanitize(CASES[3][1], provider=PROVIDER)
    placeholder = fixed[2]["content"][0]
    assert placeholder == {
        "type": "tool_result",
        "tool_use_id": "toolu_2",
        "content": toolmend.PLACEHOLDER_TEXT,
        "is_error": True,
    }
    assert fixed[3]["content"] == [result("toolu_1")]


def test_consecutive_messages_form_one_turn() -> None:
    history = [
        user("Weather?"),
        assistant([text("Let me check.")]),
        assistant([use("toolu_1"), use("toolu_2")]),
        user([result("toolu_1")]),
        user([result("toolu_2"), text("thanks")]),
    ]
    assert toolmend.check(history, provider=PROVIDER) == []
    assert toolmend.sanitize(history, provider=PROVIDER) is history


def test_a_trailing_call_turn_is_answered_unless_the_frontier_is_kept() -> None:
    """Issue 32, case 7 (was: left alone as a prefill): a request never ends on calls."""
    history = [user("Weather?"), assistant([use("toolu_1")])]
    assert [p.code for p in toolmend.check(history, provider=PROVIDER)] == ["missing_result"]
    kept = toolmend.repair(history, provider=PROVIDER, policy=toolmend.Policy(frontier="keep"))
    assert kept.messages is history


def test_the_final_assistant_message_may_be_empty() -> None:
    history = [user("Hi"), assistant("")]
    assert toolmend.check(history, provider=PROVIDER) == []


def test_nested_empty_text_in_a_tool_result_is_removed() -> None:
    broken = [
        user("Weather?"),
        assistant([use("toolu_1")]),
        user([result("toolu_1", [text("21 C"), text("")])]),
    ]
    assert [p.code for p in toolmend.check(broken, provider=PROVIDER)] == ["text_empty"]
    fixed = toolmend.sanitize(broken, provider=PROVIDER)
    assert fixed[2]["content"][0]["content"] == [text("21 C")]


def test_orphan_kept_as_text_under_that_policy() -> None:
    broken = CASES[4][1]
    policy = toolmend.Policy(orphan_result="text")
    fixed = toolmend.repair(broken, provider=PROVIDER, policy=policy)
    assert [c.code for c in fixed.changes] == ["orphan_result_to_text"]
    assert fixed.messages[2]["content"][0] == text("[tool result toolu_9]\n21 C")


def test_remove_call_policy_drops_the_unanswered_call() -> None:
    broken = CASES[3][1]
    policy = toolmend.Policy(missing_result="remove_call")
    fixed = toolmend.repair(broken, provider=PROVIDER, policy=policy)
    assert [c.code for c in fixed.changes] == ["removed_call"]
    assert fixed.messages[1] == assistant([use("toolu_1")])


# --- thinking -----------------------------------------------------------------------------------


def test_thinking_profile_requires_thinking_before_the_final_tool_exchange() -> None:
    broken = [user("Weather?"), assistant([use("toolu_1")]), user([result("toolu_1")])]
    problems = toolmend.check(broken, provider="anthropic-thinking")
    assert [(p.code, p.index, p.rule) for p in problems] == [
        ("thinking_required", 1, "anthropic.thinking_required")
    ]
    assert problems[0].provider_error.startswith(
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
        "`tool_use`. When `thinking` is enabled, a final `assistant` message must start with a "
        "thinking block"
    )
    fixed = toolmend.repair(broken, provider="anthropic-thinking")
    assert {c.code for c in fixed.changes} == {"flattened_tool_traffic"}
    assert fixed.messages[1] == {
        "role": "assistant",
        "content": [text('[tool call toolu_1: get_weather({"city": "Paris"})]')],
    }
    assert fixed.messages[2] == {"role": "user", "content": [text("[tool result toolu_1]\n21 C")]}
    assert toolmend.check(fixed.messages, provider="anthropic-thinking") == []
    passing = [user("Weather?"), assistant([thinking(), use("toolu_1")]), user([result("toolu_1")])]
    assert toolmend.sanitize(passing, provider="anthropic-thinking") is passing
    earlier = [*passing, assistant("21 C."), user("Thanks")]
    earlier[1] = assistant([use("toolu_1")])  # earlier turns may drop their thinking
    assert toolmend.check(earlier, provider="anthropic-thinking") == []


def test_thinking_blocks_are_never_rewritten() -> None:
    block = ThinkingBlock(type="thinking", thinking="hmm", signature="c2ln")
    redacted = RedactedThinkingBlock(type="redacted_thinking", data="ZGF0YQ==")
    broken = [
        user("Weather?"),
        assistant([block, redacted, use("toolu_1"), text("wait")]),
        user([result("toolu_1")]),
    ]
    fixed = toolmend.sanitize(broken, provider=PROVIDER)
    content = fixed[1]["content"]
    assert content[0] is block and content[1] is redacted
    assert [getattr(b, "type", None) or b["type"] for b in content] == [
        "thinking",
        "redacted_thinking",
        "text",
        "tool_use",
    ]


# --- the anthropic SDK's objects ----------------------------------------------------------------


def sdk_message(*blocks: Any) -> Message:
    return Message(
        id="msg_1",
        type="message",
        role="assistant",
        model="claude-sonnet-4-5",
        content=list(blocks),
        stop_reason="tool_use",
        stop_sequence=None,
        usage=Usage(input_tokens=1, output_tokens=1),
    )


def test_sdk_blocks_in_dict_messages_are_read_and_kept() -> None:
    call = ToolUseBlock(type="tool_use", id="toolu_1", name="get_weather", input={"city": "Paris"})
    history = [
        user("Weather?"),
        {"role": "assistant", "content": [TextBlock(type="text", text="Checking."), call]},
        user([result("toolu_1")]),
    ]
    assert detect(history).name == "anthropic"
    assert toolmend.check(history, provider=PROVIDER) == []
    assert toolmend.sanitize(history, provider=PROVIDER) is history


def test_sdk_message_objects_and_blocks_are_repaired() -> None:
    reply = sdk_message(
        ToolUseBlock(type="tool_use", id="call.1", name="get_weather", input={"city": "Paris"}),
        TextBlock(type="text", text="One moment."),
    )
    broken = [user("Weather?"), reply, user([result("call.1")])]
    problems = toolmend.check(broken, provider=PROVIDER)
    assert [p.code for p in problems] == ["call_id_format", "missing_result", "result_id_format"]
    fixed = toolmend.repair(broken, provider=PROVIDER)
    assert {c.code for c in fixed.changes} == {"reordered_blocks", "rewrote_call_id"}
    message = fixed.messages[1]
    assert message["role"] == "assistant"
    text_block, call = message["content"]
    assert text_block is reply.content[1]
    assert isinstance(call, ToolUseBlock) and call.id != "call.1"
    assert fixed.messages[2]["content"][0]["tool_use_id"] == call.id
    assert reply.content[0].id == "call.1", "the SDK object was not changed"
    assert toolmend.check(fixed.messages, provider=PROVIDER) == []


def test_the_repaired_history_is_what_the_sdk_sends() -> None:
    """The anthropic SDK serialises dict messages holding its own block objects."""
    from anthropic._utils._json import openapi_dumps

    call = ToolUseBlock(type="tool_use", id="toolu_1", name="get_weather", input={"city": "Paris"})
    broken = [
        user("Weather?"),
        {"role": "assistant", "content": [call]},
        user("hello?"),
        user([result("toolu_1")]),
    ]
    fixed = toolmend.sanitize(broken, provider=PROVIDER)
    wire = json.loads(openapi_dumps({"messages": fixed}))
    assert wire["messages"][2] == user([result("toolu_1")])
    assert wire["messages"][1]["content"][0]["id"] == "toolu_1"


def test_bad_input_names_the_message_and_field() -> None:
    with pytest.raises(toolmend.InvalidMessageError, match=r"message 1, field 'content\[0\]\.id'"):
        toolmend.check([user("q"), assistant([use(7)])], provider=PROVIDER)
    with pytest.raises(toolmend.InvalidMessageError, match="message 0, field 'content'"):
        toolmend.check([user(None)], provider=PROVIDER, format="anthropic")


def test_an_anthropic_history_needs_a_block_profile() -> None:
    history = [user("Weather?"), assistant([use("toolu_1")]), user([result("toolu_1")])]
    with pytest.raises(toolmend.InvalidHistoryError, match="'openai' profile has no rules"):
        toolmend.check(history, provider="openai")


def test_the_one_pass_scan_agrees_with_the_rules() -> None:
    profile = get_profile(PROVIDER)
    for _, broken, _, _, passing in CASES:
        spans = anthropic_format.dirty_spans(broken, profile)
        assert spans is None or spans != []
        assert anthropic_format.dirty_spans(passing, profile) in ([], None)


@pytest.mark.parametrize(
    "blocks",
    [
        # an empty text block, dropped by the repair, in front of the thinking block
        [{"type": "text", "text": ""}, {"type": "thinking", "thinking": "t", "signature": "c2ln"}],
        # thinking after text
        [{"type": "text", "text": "a"}, {"type": "thinking", "thinking": "t", "signature": "c2ln"}],
    ],
    ids=["after-an-empty-text", "after-text"],
)
def test_a_message_the_repair_leaves_last_keeps_no_thinking_block(blocks: list[Any]) -> None:
    """With thinking off, Anthropic refuses a thinking block anywhere in the final assistant
    message; when the repair drops what followed a message, that message is final and loses
    its thinking blocks too, wherever they sit (hypothesis found the empty-text case)."""
    # a copy of an answered call's result, dropped (an orphan there would be the newest
    # input, which issue 32 keeps as text)
    call = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}
    answer = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}
    history = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [answer]},
        {"role": "assistant", "content": blocks},
        {"role": "user", "content": [dict(answer)]},
    ]
    result = toolmend.repair(history, provider="anthropic", format="anthropic")
    assert toolmend.check(result.messages, provider="anthropic", format="anthropic") == []
    assert "dropped_thinking_block" in [change.code for change in result.changes]
    assert not any(b["type"] == "thinking" for b in result.messages[-1]["content"])
    kept = toolmend.repair(history, provider="anthropic-thinking", format="anthropic")
    assert "dropped_thinking_block" not in [change.code for change in kept.changes]
