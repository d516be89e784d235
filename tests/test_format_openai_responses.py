"""The OpenAI Responses ``input`` format and the ``openai-responses`` profile.

Every enabled check has a breaking and a passing input with the exact provider error text, and
a repair that makes the breaking one pass with the expected changes. SDK items are built with
the real openai package. Property tests turn the chat conversations of
``tests/support/histories.py`` into Responses items (tool calls -> ``function_call`` items, tool
messages -> ``function_call_output``, reasoning items before each model turn), damage them the
ways agents do, and check the core invariants.
"""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from openai import OpenAI
from openai.types.responses import (
    EasyInputMessage,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
)
from openai.types.responses.response_input_item import FunctionCallOutput
from openai.types.responses.response_reasoning_item import Summary

import toolmend
from toolmend._rules import judge
from toolmend.formats import _openai_responses as responses
from toolmend.formats import detect
from toolmend.profiles import PROFILES
from toolmend.testing import StrictProviderServer

from support.histories import valid_conversations
from support.whole_path import whole_repair

PROVIDER = "openai-responses"
Item = dict[str, Any]
KEEP_EVERYTHING = toolmend.Policy(orphan_result="text")


# --- builders ---------------------------------------------------------------------------------


def msg(role: str = "user", text: str | None = "hello", **extra: Any) -> Item:
    return {"role": role, "content": text, **extra}


def item_msg(role: str = "assistant", text: str | None = "hi", **extra: Any) -> Item:
    """A message with ``"type": "message"``, as Responses items are usually stored."""
    return {"type": "message", "role": role, "content": text, **extra}


def fc(
    call_id: str | None = "call_1", item_id: str | None = None, name: str = "get_weather"
) -> Item:
    item: Item = {"type": "function_call", "name": name, "arguments": '{"city": "Paris"}'}
    if call_id is not None:
        item["call_id"] = call_id
    if item_id is not None:
        item["id"] = item_id
    return item


def out(call_id: str | None = "call_1", text: str | None = "21 C", **extra: Any) -> Item:
    item: Item = {"type": "function_call_output", **extra}
    if call_id is not None:
        item["call_id"] = call_id
    if text is not None:
        item["output"] = text
    return item


def rs(item_id: str = "rs_1", summary: bool = True) -> Item:
    item: Item = {"type": "reasoning", "id": item_id, "encrypted_content": "gAAAA"}
    if summary:
        item["summary"] = [{"type": "summary_text", "text": "look it up"}]
    return item


LONG = "call_" + "x" * 65

# (code, breaking input, exact provider error, passing input, change codes of the repair)
ROWS: list[tuple[str, list[Any], str, list[Any], set[str]]] = [
    (
        "orphan_result",
        # (an orphan last is the newest input, kept as text since issue 32: a user text follows)
        [msg(), out("call_uelfkqtHfJDC4Btqeoozq82e"), msg("user", "and?")],
        "No tool call found for function call output with call_id call_uelfkqtHfJDC4Btqeoozq82e.",
        [msg(), fc("call_uelfkqtHfJDC4Btqeoozq82e"), out("call_uelfkqtHfJDC4Btqeoozq82e")],
        {"dropped_orphan_result"},
    ),
    (
        "orphan_result",
        [msg(), out("call_1"), fc("call_1"), msg("assistant", "done")],
        "No tool call found for function call output with call_id call_1.",
        [msg(), fc("call_1"), msg("assistant", "thinking aloud"), out("call_1")],
        {"moved_result"},
    ),
    (
        "missing_result",
        [msg(), fc("call_XXX"), msg("user", "still there?")],
        "No tool output found for function call call_XXX.",
        [msg(), fc("call_XXX"), msg("user", "still there?"), out("call_XXX")],
        {"answered_missing_call"},
    ),
    (
        "reasoning_without_follower",
        [msg(), rs("rs_0c3876fcd4da19ef"), msg("user", "again")],
        "Item 'rs_0c3876fcd4da19ef' of type 'reasoning' was provided without its required "
        "following item.",
        [msg(), rs("rs_0c3876fcd4da19ef"), msg("assistant", "hi"), msg("user", "again")],
        {"dropped_reasoning"},
    ),
    (
        "reasoning_without_follower",
        [msg(), rs(), out("call_1")],
        "Item 'rs_1' of type 'reasoning' was provided without its required following item.",
        [msg(), rs(), fc("call_1"), out("call_1")],
        {"dropped_reasoning", "dropped_orphan_result"},
    ),
    (
        "reasoning_without_summary",
        [msg(), rs(summary=False), fc(), out()],
        "Missing required parameter: 'input[1].summary'.",
        [msg(), rs(), fc(), out()],
        {"filled_summary"},
    ),
    (
        "call_without_id",
        [msg(), fc(None)],
        "Missing required parameter: 'input[1].call_id'.",
        [msg(), fc("call_1"), out("call_1")],
        {"rewrote_call_id", "answered_missing_call"},
    ),
    (
        "result_without_id",
        [msg(), fc("call_1"), out(None)],
        "Missing required parameter: 'input[2].call_id'.",
        [msg(), fc("call_1"), out("call_1")],
        {"filled_result_id"},
    ),
    (
        "result_without_output",
        [msg(), fc("call_1"), out("call_1", None)],
        "Missing required parameter: 'input[2].output'.",
        [msg(), fc("call_1"), out("call_1", "")],
        {"filled_output"},
    ),
    (
        "call_id_too_long",
        [msg(), fc(LONG), out(LONG)],
        "Invalid 'input[1].call_id': string too long. Expected a string with maximum length 64, "
        "but got a string with length 70 instead.",
        [msg(), fc(LONG[:64]), out(LONG[:64])],
        {"rewrote_call_id"},
    ),
    (
        "item_id_prefix",
        [msg(), fc("call_1", "__fake_id__"), out("call_1")],
        "Invalid 'input[1].id': '__fake_id__'. Expected an ID that begins with 'fc'.",
        [msg(), fc("call_1", "fc_1"), out("call_1")],
        {"removed_item_id"},
    ),
    (
        "item_id_prefix",
        [msg(), rs("item_df7e40c3f04fc8ade5c3800e"), fc("call_1"), out("call_1")],
        "Invalid 'input[1].id': 'item_df7e40c3f04fc8ade5c3800e'. Expected an ID that begins with "
        "'rs'.",
        [msg(), rs("rs_df7e40c3f04fc8ade5c3800e"), fc("call_1"), out("call_1")],
        {"dropped_reasoning"},
    ),
    (
        "item_id_charset",
        [msg(), item_msg("assistant", "hi", id="")],
        "Invalid 'input[1].id': ''. Expected an ID that contains letters, numbers, underscores, "
        "or dashes, but this value contained additional characters.",
        [msg(), item_msg("assistant", "hi", id="msg_1")],
        {"removed_item_id"},
    ),
    (
        "duplicate_item_id",
        [msg(), item_msg(text="one", id="msg_4"), msg(), item_msg(text="two", id="msg_4")],
        "Duplicate item found with id msg_4. Remove duplicate items from your input and try again.",
        [msg(), item_msg(text="one", id="msg_4"), msg(), item_msg(text="two", id="msg_5")],
        {"removed_item_id"},
    ),
    (
        "duplicate_item",
        [msg(), fc("call_1", "fc_1"), out("call_1"), fc("call_1", "fc_1")],
        "Duplicate item found with id fc_1. Remove duplicate items from your input and try again.",
        [msg(), fc("call_1", "fc_1"), out("call_1"), fc("call_2", "fc_2"), out("call_2")],
        {"dropped_duplicate_item"},
    ),
    (
        "missing_tool_output",
        [msg(), {"type": "custom_tool_call", "call_id": "call_7", "name": "x", "input": "a"}],
        "No tool output found for custom tool call call_7.",
        [
            msg(),
            {"type": "custom_tool_call", "call_id": "call_7", "name": "x", "input": "a"},
            {"type": "custom_tool_call_output", "call_id": "call_7", "output": "done"},
        ],
        {"answered_missing_call"},
    ),
    (
        "orphan_tool_output",
        # (a user text follows: an orphan last is the newest input, kept as text)
        [msg(), {"type": "shell_call_output", "call_id": "call_8", "output": []}, msg()],
        "No tool call found for shell call output with call_id call_8.",
        [msg()],
        {"dropped_orphan_result"},
    ),
    (
        "null_content",
        [msg(), item_msg("assistant", None)],
        "Invalid type for 'input[1].content': expected one of an array of objects or string, but "
        "got null instead.",
        [msg(), item_msg("assistant", "")],
        {"filled_content"},
    ),
]


@pytest.mark.parametrize(
    ("code", "broken", "error", "passing", "changes"),
    ROWS,
    ids=[f"{row[0]}-{n}" for n, row in enumerate(ROWS)],
)
def test_rule_breaks_and_passes(
    code: str, broken: list[Any], error: str, passing: list[Any], changes: set[str]
) -> None:
    problems = toolmend.check(broken, provider=PROVIDER)
    matching = [p for p in problems if p.code == code]
    assert matching, f"{code} not reported: {problems}"
    assert error in {p.provider_error for p in matching}
    assert all(p.rule == PROFILES[PROVIDER].checks[code].rule for p in matching)
    assert toolmend.check(passing, provider=PROVIDER) == []
    assert toolmend.sanitize(passing, provider=PROVIDER) is passing
    before = copy.deepcopy(broken)
    repaired = toolmend.repair(broken, provider=PROVIDER)
    assert broken == before
    assert repaired.problems_left == ()
    assert toolmend.check(repaired.messages, provider=PROVIDER) == []
    assert {change.code for change in repaired.changes} == changes
    assert toolmend.sanitize(repaired.messages, provider=PROVIDER) is repaired.messages


def test_every_enabled_check_has_a_row() -> None:
    covered = {row[0] for row in ROWS}
    assert set(PROFILES[PROVIDER].checks) - covered == set()


def test_strict_checks_are_recorded_not_run() -> None:
    profile = PROFILES[PROVIDER]
    assert {check.rule for check in profile.strict_checks.values()} == {
        "OR-ITEM-ID-LEN",
        "OR-INVALID-ROLE",
    }
    long_id = "msg_" + "a" * 80
    items = [item_msg("tool", "x"), item_msg("assistant", "y", id=long_id)]
    assert toolmend.check(items, provider=PROVIDER, format=PROVIDER) == []


# --- repairs in detail ------------------------------------------------------------------------


def test_outputs_after_their_call_stay_where_they_are() -> None:
    items = [
        msg(),
        rs(),
        fc("call_a", "fc_a"),
        fc("call_b", "fc_b"),
        msg("user", "hurry up"),
        out("call_b"),
        msg("assistant", "one is back"),
        out("call_a"),
    ]
    assert toolmend.check(items, provider=PROVIDER) == []
    assert toolmend.sanitize(items, provider=PROVIDER) is items
    damaged = [*items[:5], out("call_x"), *items[5:]]
    repaired = toolmend.sanitize(damaged, provider=PROVIDER)
    assert repaired == items
    assert all(a is b for a, b in zip(repaired, items, strict=True))


def test_placeholder_goes_right_after_its_call() -> None:
    items = [msg(), rs(), fc("call_a"), fc("call_b"), out("call_b"), msg("user", "next")]
    result = toolmend.repair(items, provider=PROVIDER)
    assert result.messages[:3] == items[:3]
    assert result.messages[3] == {
        "type": "function_call_output",
        "call_id": "call_a",
        "output": toolmend.PLACEHOLDER_TEXT,
    }
    assert result.messages[4:] == items[3:]
    assert [(c.code, c.index, c.ids) for c in result.changes] == [
        ("answered_missing_call", 2, ("call_a",))
    ]


def test_calls_still_running_at_the_end_can_be_kept_waiting() -> None:
    items = [msg(), rs(), fc("call_a"), fc("call_b"), out("call_b")]
    waiting = toolmend.repair(items, provider=PROVIDER, policy=toolmend.Policy(frontier="keep"))
    assert waiting.messages == items
    assert [p.code for p in waiting.problems_left] == ["missing_result"]
    answered = toolmend.sanitize(items, provider=PROVIDER)
    assert answered[3]["output"] == toolmend.PLACEHOLDER_TEXT


def test_reused_ids_count_as_answered_by_a_later_output() -> None:
    items = [msg(), fc("call_0"), msg("user", "and?"), fc("call_0"), out("call_0"), out("x")]
    result = toolmend.repair(items, provider=PROVIDER)
    assert result.messages == items[:5]
    assert [c.code for c in result.changes] == ["dropped_orphan_result"]


def test_remove_call_takes_its_reasoning_along() -> None:
    items = [msg(), rs("rs_1"), fc("call_a"), msg("user", "next"), rs("rs_2"), msg("assistant")]
    result = toolmend.repair(
        items, provider=PROVIDER, policy=toolmend.Policy(missing_result="remove_call")
    )
    assert result.messages == [msg(), msg("user", "next"), rs("rs_2"), msg("assistant")]
    assert [(c.code, c.index) for c in result.changes] == [
        ("dropped_reasoning", 1),
        ("removed_call", 2),
    ]


def test_dropping_a_call_strands_its_reasoning_and_orphans_its_output() -> None:
    items = [msg(), rs(), out("call_a", "sunny"), msg("assistant", "It is sunny.")]
    result = toolmend.repair(items, provider=PROVIDER)
    assert result.messages == [msg(), msg("assistant", "It is sunny.")]
    assert [c.code for c in result.changes] == ["dropped_reasoning", "dropped_orphan_result"]
    kept = toolmend.repair(items, provider=PROVIDER, policy=KEEP_EVERYTHING)
    assert kept.messages == [
        msg(),
        {"role": "user", "content": "[tool result call_a]\nsunny"},
        msg("assistant", "It is sunny."),
    ]
    assert [c.code for c in kept.changes] == ["dropped_reasoning", "orphan_result_to_text"]


def test_orphan_output_with_parts_keeps_them_as_user_content() -> None:
    image = {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}
    output = [{"type": "input_text", "text": "chart attached"}, image]
    items = [msg(), {"type": "function_call_output", "call_id": "call_z", "output": output}]
    repaired = toolmend.sanitize(items, provider=PROVIDER, policy=KEEP_EVERYTHING)
    assert repaired[1] == {
        "role": "user",
        "content": [{"type": "input_text", "text": "[tool result call_z]"}, *output],
    }


def test_stub_before_its_call_is_dropped_when_the_call_has_its_result() -> None:
    items = [
        msg(),
        out("call_1", "Tool call was aborted."),
        fc("call_1"),
        out("call_1", "21 C"),
    ]
    result = toolmend.repair(items, provider=PROVIDER)
    assert result.messages == [msg(), fc("call_1"), out("call_1", "21 C")]
    assert [c.code for c in result.changes] == ["dropped_duplicate_result"]


def test_long_call_ids_are_rewritten_on_both_sides_deterministically() -> None:
    items = [msg(), fc(LONG, "fc_1"), msg("user", "x"), out(LONG)]
    first = toolmend.sanitize(items, provider=PROVIDER)
    assert first == toolmend.sanitize(copy.deepcopy(items), provider=PROVIDER)
    assert first[1]["call_id"] == first[3]["call_id"]
    assert len(first[1]["call_id"]) <= 64
    assert first[1]["id"] == "fc_1"


def test_required_ids_are_rewritten_and_references_dropped() -> None:
    search = {"type": "web_search_call", "id": "ws_1", "status": "completed"}
    other = {**search, "status": "failed"}
    items = [msg(), search, msg("assistant", "found it"), other, {"id": "bad id!"}]
    result = toolmend.repair(items, provider=PROVIDER)
    assert [c.code for c in result.changes] == ["rewrote_item_id", "dropped_reference"]
    fresh = result.messages[3]["id"]
    assert fresh.startswith("ws_") and fresh != "ws_1"
    assert result.messages[:3] == items[:3]
    assert len(result.messages) == 4


def test_other_item_types_pass_through_untouched() -> None:
    items = [
        msg("developer", "be brief"),
        msg(),
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {}},
        {"type": "computer_call", "id": "cu_1", "call_id": "c1", "action": {}, "status": "done"},
        {"type": "computer_call_output", "call_id": "c1", "output": {"type": "input_image"}},
        {"type": "custom_tool_call", "call_id": "t1", "name": "grep", "input": "x"},
        {"type": "custom_tool_call_output", "call_id": "t1", "output": "y"},
        {"type": "mcp_call", "id": "mcp_1", "name": "n", "server_label": "s", "arguments": "{}"},
        {"type": "item_reference", "id": "msg_9"},
        {"id": "msg_10"},
        msg("assistant", "done"),
    ]
    assert detect(items).name == PROVIDER
    assert toolmend.check(items, provider=PROVIDER) == []
    assert toolmend.sanitize(items, provider=PROVIDER) is items
    damaged = [*items[:-1], out("call_gone"), items[-1]]  # (last, it is the newest input)
    repaired = toolmend.sanitize(damaged, provider=PROVIDER)
    assert repaired == items
    assert all(a is b for a, b in zip(repaired, items, strict=True))


def test_a_string_input_is_one_valid_user_message() -> None:
    assert toolmend.check("What is the weather?", provider=PROVIDER) == []
    text = "What is the weather?"
    assert toolmend.sanitize(text, provider=PROVIDER) is text
    assert toolmend.sanitize(text, provider=PROVIDER, format=PROVIDER) is text
    with pytest.raises(toolmend.InvalidHistoryError):
        toolmend.check(text, format="openai")


def test_unreadable_items_name_index_and_field() -> None:
    with pytest.raises(toolmend.InvalidMessageError, match=r"message 1, field 'call_id'"):
        toolmend.check([msg(), {"type": "function_call", "call_id": 7}], format=PROVIDER)
    with pytest.raises(toolmend.InvalidMessageError, match=r"message 0, field 'role'"):
        toolmend.check([{"type": "message", "content": "x"}], format=PROVIDER)
    with pytest.raises(toolmend.InvalidMessageError, match=r"message 1\b"):
        toolmend.check([msg(), 42], format=PROVIDER)


# --- detection --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("items", "name"),
    [
        ([msg("developer", "x"), msg(), fc(), out()], PROVIDER),
        ([msg("system", "x"), msg(), rs(), msg("assistant", "y")], PROVIDER),
        ([msg(), {"role": "user", "content": [{"type": "input_text", "text": "hi"}]}], PROVIDER),
        (
            [
                msg(),
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "hi", "annotations": []}],
                },
            ],
            PROVIDER,
        ),
        (
            [msg("system", "x"), msg(), {"role": "tool", "tool_call_id": "c", "content": "y"}],
            "openai",
        ),
        (
            [
                msg("system", "x"),
                msg(),
                msg(
                    "assistant",
                    None,
                    tool_calls=[
                        {
                            "id": "c",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                ),
            ],
            "openai",
        ),
        ([msg(), {"role": "user", "content": [{"type": "text", "text": "hi"}]}], "openai"),
        ([msg("developer", "x"), msg(), msg("assistant", "y")], "openai"),
    ],
    ids=[
        "developer-then-call",
        "system-then-reasoning",
        "input-text-part",
        "output-text-part",
        "chat-tool-message",
        "chat-tool-calls",
        "chat-text-part",
        "plain-reads-as-chat",
    ],
)
def test_detection(items: list[Any], name: str) -> None:
    assert name == detect(items).name


# --- SDK objects ------------------------------------------------------------------------------


def sdk_turn() -> list[Any]:
    return [
        EasyInputMessage(role="user", content="Weather in Paris?"),
        ResponseReasoningItem(
            id="rs_1", type="reasoning", summary=[Summary(text="look it up", type="summary_text")]
        ),
        ResponseFunctionToolCall(
            id="fc_1",
            call_id="call_1",
            name="get_weather",
            arguments='{"city": "Paris"}',
            type="function_call",
            status="completed",
        ),
        FunctionCallOutput(call_id="call_1", output="21 C", type="function_call_output"),
        ResponseOutputMessage(
            id="msg_1",
            role="assistant",
            status="completed",
            type="message",
            content=[ResponseOutputText(text="It is 21 C.", type="output_text", annotations=[])],
        ),
    ]


def test_sdk_objects_valid_come_back_as_the_same_object() -> None:
    items = sdk_turn()
    assert detect(items).name == PROVIDER
    assert toolmend.check(items, provider=PROVIDER) == []
    assert toolmend.sanitize(items, provider=PROVIDER) is items


def test_sdk_objects_missing_output_is_answered_and_the_rest_kept_as_is() -> None:
    items = sdk_turn()
    del items[3]
    result = toolmend.repair(items, provider=PROVIDER)
    assert [c.code for c in result.changes] == ["answered_missing_call"]
    assert [a is b for a, b in zip(result.messages[:3], items[:3], strict=True)] == [True] * 3
    assert result.messages[3]["call_id"] == "call_1"
    assert result.messages[4] is items[3]


def test_sdk_objects_dropped_call_strands_reasoning_and_orphans_output() -> None:
    items = sdk_turn()
    del items[2]
    result = toolmend.repair(items, provider=PROVIDER)
    assert [c.code for c in result.changes] == ["dropped_reasoning", "dropped_orphan_result"]
    assert result.messages == [items[0], items[3]]
    assert result.messages[1] is items[3]


def test_sdk_objects_edited_become_dicts_with_api_names() -> None:
    reasoning = ResponseReasoningItem.model_construct(id="rs_1", type="reasoning")
    items = [*sdk_turn()[:1], reasoning, *sdk_turn()[2:]]
    result = toolmend.repair(items, provider=PROVIDER)
    assert [c.code for c in result.changes] == ["filled_summary"]
    assert result.messages[1] == {"id": "rs_1", "type": "reasoning", "summary": []}
    long_call = sdk_turn()
    long_call[2] = long_call[2].model_copy(update={"call_id": LONG})
    long_call[3] = long_call[3].model_copy(update={"call_id": LONG})
    fixed = toolmend.sanitize(long_call, provider=PROVIDER)
    assert fixed[2]["call_id"] == fixed[3]["call_id"] != LONG
    assert fixed[2]["type"] == "function_call" and fixed[2]["id"] == "fc_1"
    assert fixed[3]["output"] == "21 C"


def test_repaired_sdk_input_goes_through_the_real_client() -> None:
    items = sdk_turn()
    del items[3]
    repaired = toolmend.sanitize(items, provider=PROVIDER)
    with StrictProviderServer(provider=PROVIDER) as server:
        client = OpenAI(api_key="test", base_url=server.openai_base_url, max_retries=0)
        with pytest.raises(Exception, match="No tool output found"):
            client.responses.create(model="gpt-5", input=items)  # the broken input: a 400
        client.responses.create(model="gpt-5", input=repaired)
        assert server.last_request.status == 200
        body_input = server.last_request.body["input"]
    assert toolmend.check(body_input, provider=PROVIDER) == []
    assert [item.get("type") for item in body_input] == [
        None,
        "reasoning",
        "function_call",
        "function_call_output",
        "message",
    ]


# --- properties -------------------------------------------------------------------------------


def to_items(history: list[Item], *, reasoning: bool, typed: bool) -> list[Item]:
    """A chat conversation as Responses items, the way ``response.output`` is replayed."""
    items: list[Item] = []
    turn = 0
    for message in history:
        role, content = message["role"], message.get("content")
        if role == "system":
            items.append(msg("developer", content))
        elif role == "user":
            parts = [{"type": "input_text", "text": content}]
            items.append(msg("user", parts if typed else content))
        elif role == "tool":
            items.append(out(message["tool_call_id"], content))
        else:
            turn += 1
            if reasoning:
                summary = [{"type": "summary_text", "text": f"plan {turn}"}]
                items.append({"type": "reasoning", "id": f"rs_{turn}", "summary": summary})
            if content:
                if typed:
                    part = {"type": "output_text", "text": content, "annotations": []}
                    items.append(
                        {
                            "type": "message",
                            "role": "assistant",
                            "id": f"msg_{turn}",
                            "status": "completed",
                            "content": [part],
                        }
                    )
                else:
                    items.append(msg("assistant", content))
            for slot, call in enumerate(message.get("tool_calls") or []):
                item = fc(call["id"], f"fc_{turn}_{slot}", call["function"]["name"])
                item["arguments"] = call["function"]["arguments"]
                items.append(item)
    return items


@st.composite
def valid_inputs(draw: st.DrawFn) -> list[Item]:
    history = draw(valid_conversations(id_style=draw(st.sampled_from(["openai", "reused"]))))
    return to_items(history, reasoning=draw(st.booleans()), typed=draw(st.booleans()))


def content_strings(items: list[Any]) -> set[str]:
    """User text, assistant text and tool output text (not instructions, not reasoning)."""
    found: set[str] = set()
    for item in items:
        if item.get("type") == "function_call_output":
            value = item.get("output")
        elif item.get("type") in (None, "message") and item.get("role") in ("user", "assistant"):
            value = item.get("content")
        else:
            continue
        if isinstance(value, str):
            found.add(value)
        elif isinstance(value, list):
            found.update(p["text"] for p in value if isinstance(p.get("text"), str))
    return found - {""}


def _pick(items: list[Item], rnd: random.Random, test: Callable[[int, Item], bool]) -> int | None:
    found = [n for n, item in enumerate(items) if test(n, item)]
    return rnd.choice(found) if found else None


def _is(kind: str) -> Callable[[int, Item], bool]:
    return lambda _n, item: item.get("type") == kind


def drop_call(items: list[Item], rnd: random.Random) -> list[Item]:
    at = _pick(items, rnd, _is("function_call"))
    return items if at is None else items[:at] + items[at + 1 :]


def drop_output(items: list[Item], rnd: random.Random) -> list[Item]:
    at = _pick(items, rnd, _is("function_call_output"))
    return items if at is None else items[:at] + items[at + 1 :]


def output_before_call(items: list[Item], rnd: random.Random) -> list[Item]:
    at = _pick(items, rnd, _is("function_call_output"))
    if at is None:
        return items
    call_id = items[at]["call_id"]
    calls = [n for n in range(at) if items[n].get("call_id") == call_id]
    if not calls:
        return items
    rest = items[:at] + items[at + 1 :]
    rest.insert(rnd.randint(0, calls[-1]), items[at])
    return rest


def drop_reasoning_follower(items: list[Item], rnd: random.Random) -> list[Item]:
    at = _pick(items, rnd, lambda n, item: item.get("type") == "reasoning" and n + 1 < len(items))
    return items if at is None else items[: at + 1] + items[at + 2 :]


def duplicate_item(items: list[Item], rnd: random.Random) -> list[Item]:
    at = _pick(items, rnd, lambda _n, item: "id" in item)
    if at is None:
        return items
    twin = copy.deepcopy(items[at])
    if twin.get("type") == "message" and rnd.random() < 0.5:
        twin["content"] = [{"type": "output_text", "text": f"second take {at}", "annotations": []}]
    elif twin.get("type") == "reasoning" and rnd.random() < 0.5:
        twin["summary"] = []
    out = list(items)
    out.insert(rnd.randint(at + 1, len(out)), twin)
    return out


def long_call_id(items: list[Item], rnd: random.Random) -> list[Item]:
    at = _pick(items, rnd, _is("function_call"))
    if at is None:
        return items
    old, new = items[at]["call_id"], f"call_{rnd.randrange(10**6):06d}_" + "z" * 90
    out = copy.deepcopy(items)
    for item in out[at:]:
        if item is not out[at] and item.get("type") == "function_call" and item["call_id"] == old:
            break
        if item.get("call_id") == old:
            item["call_id"] = new
    return out


def break_item(items: list[Item], rnd: random.Random) -> list[Item]:
    """A fake id, a missing summary, a missing output or null assistant content."""
    at = _pick(
        items,
        rnd,
        lambda _n, item: (
            item.get("type") in ("function_call", "reasoning", "function_call_output")
            or item.get("role") == "assistant"
        ),
    )
    if at is None:
        return items
    out = copy.deepcopy(items)
    item = out[at]
    if item.get("type") == "function_call":
        item["id"] = "__fake_id__"
    elif item.get("type") == "reasoning":
        item.pop("summary", None)
    elif item.get("type") == "function_call_output":
        item.pop("output", None)
    else:
        item["content"] = None
    return out


def truncate_head(items: list[Item], rnd: random.Random) -> list[Item]:
    start = 1 if items and items[0].get("role") == "developer" else 0
    if len(items) <= start + 1:
        return items
    return items[:start] + items[rnd.randint(start + 1, len(items) - 1) :]


DAMAGE = [
    drop_call,
    drop_output,
    output_before_call,
    drop_reasoning_follower,
    duplicate_item,
    long_call_id,
    break_item,
    truncate_head,
]


@st.composite
def damaged_inputs(draw: st.DrawFn) -> list[Item]:
    ops = draw(st.lists(st.sampled_from(DAMAGE), min_size=1, max_size=3))
    rnd = random.Random(draw(st.integers(0, 2**32 - 1)))
    items = draw(valid_inputs())
    for op in ops:
        items = op(items, rnd)
    return items


POLICIES = [
    toolmend.Policy(),
    KEEP_EVERYTHING,
    toolmend.Policy(missing_result="remove_call"),
]


@given(items=damaged_inputs(), policy=st.sampled_from(POLICIES))
def test_repair_makes_damaged_inputs_pass_and_is_idempotent(
    items: list[Item], policy: toolmend.Policy
) -> None:
    before = copy.deepcopy(items)
    result = toolmend.repair(items, provider=PROVIDER, policy=policy)
    assert items == before, "the input was mutated"
    assert toolmend.check(result.messages, provider=PROVIDER) == []
    assert result.problems_left == ()
    assert toolmend.sanitize(result.messages, provider=PROVIDER, policy=policy) is result.messages
    assert (result.messages is items) == (result.changes == ())


@given(items=damaged_inputs())
def test_no_real_content_is_lost(items: list[Item]) -> None:
    result = toolmend.repair(items, provider=PROVIDER, policy=KEEP_EVERYTHING)
    text = json.dumps(result.messages, ensure_ascii=False)
    for content in content_strings(items):
        assert json.dumps(content, ensure_ascii=False)[1:-1] in text, content


@given(items=valid_inputs())
def test_valid_inputs_pass_and_come_back_as_the_same_object(items: list[Item]) -> None:
    before = copy.deepcopy(items)
    assert toolmend.check(items, provider=PROVIDER) == []
    assert toolmend.sanitize(items, provider=PROVIDER) is items
    assert items == before
    assert responses.quick_valid(items, PROFILES[PROVIDER]), "the one-pass test must vouch"


@pytest.mark.parametrize(
    "items",
    [
        [msg(), item_msg(id="a b")],
        [msg(), item_msg(id="")],
        [msg(), item_msg(id=7)],
        [msg(), item_msg(id="msg_1"), msg(), item_msg(id="msg_1")],
        [msg(), fc("call_1", "item_1"), out("call_1")],
        [msg(), rs("x_1"), msg("assistant")],
        [msg(), rs(), msg("user")],
        [msg(), fc("call_1"), out("call_1"), rs()],
        [msg(), fc("call_1"), msg("user", "x"), out("call_1", None)],
    ],
    ids=[
        "space",
        "empty",
        "number",
        "repeat",
        "fc-prefix",
        "rs-prefix",
        "no-follower",
        "last",
        "no-output",
    ],
)
def test_the_one_pass_test_refuses_what_the_rules_refuse(items: list[Item]) -> None:
    assert not responses.quick_valid(items, PROFILES[PROVIDER])
    spans = responses.dirty_spans(items, PROFILES[PROVIDER])
    assert spans is None or spans
    if items[1].get("id") == 7:
        with pytest.raises(toolmend.InvalidMessageError, match=r"message 1, field 'id'"):
            toolmend.check(items, provider=PROVIDER, format=PROVIDER)
    else:
        assert toolmend.check(items, provider=PROVIDER, format=PROVIDER) != []


@given(items=st.one_of(valid_inputs(), damaged_inputs()), policy=st.sampled_from(POLICIES))
def test_the_one_pass_scans_agree_with_the_whole_input(
    items: list[Item], policy: toolmend.Policy
) -> None:
    profile = PROFILES[PROVIDER]
    whole = judge(detect(items).read(items), profile)
    if responses.quick_valid(items, profile):
        assert whole == []
    assert toolmend.check(items, provider=PROVIDER) == whole
    messages, changes = whole_repair(detect(items), items, profile, policy)
    result = toolmend.repair(items, provider=PROVIDER, policy=policy)
    assert result.messages == messages
    assert list(result.changes) == changes


# --- the bundled example, through the command line ---------------------------------------------

EXAMPLE = Path(__file__).resolve().parent.parent / "examples/histories/responses_orphan_output.json"


@pytest.mark.slow
def test_example_request_body_is_repaired_by_the_cli(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "toolmend"]
    checked = subprocess.run(
        [*command, "check", str(EXAMPLE), "--provider", PROVIDER], capture_output=True, text=True
    )
    assert checked.returncode == 1
    assert "No tool call found for function call output with call_id" in checked.stdout
    done = subprocess.run(
        [*command, "repair", str(EXAMPLE), "--provider", PROVIDER], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "dropped_reasoning" in done.stderr and "dropped_orphan_result" in done.stderr
    body = json.loads(done.stdout)
    assert body["model"] == "gpt-5"
    assert toolmend.check(body["input"], provider=PROVIDER) == []
    original = json.loads(EXAMPLE.read_text())["input"]
    assert body["input"] == [original[n] for n in (0, 1, 4, 5, 6)]
