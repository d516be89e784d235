"""The LangChain message format: real ``langchain_core`` messages read, judged and repaired.

Every rule the format feeds gets a breaking and a passing history; the property tests convert
the OpenAI histories of ``tests/support/histories.py`` to LangChain messages and check the core
invariants, and that what ``ChatOpenAI`` really sends for a repaired history is accepted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import example, given, settings
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_openai.chat_models.base import _convert_message_to_dict

import toolmend
from toolmend._rules import judge
from toolmend.formats import _langchain as lc_format
from toolmend.formats import detect
from toolmend.profiles import get_profile

from support.histories import (
    OPENAI_FAMILY,
    STUB_CONTENT,
    content_strings,
    damaged_conversations,
    valid_conversations,
)

KEEP_EVERYTHING = toolmend.Policy(orphan_result="text")


# --- builders ---------------------------------------------------------------------------------


def human(text: str = "Weather in Paris?") -> HumanMessage:
    return HumanMessage(text)


def ai(text: str = "", *ids: str, name: str = "get_weather", **extra: Any) -> AIMessage:
    calls = [{"name": name, "args": {"city": "Paris"}, "id": i, "type": "tool_call"} for i in ids]
    return AIMessage(text, tool_calls=calls, **extra)


def tool(call_id: str, text: str = "21 C", name: str | None = "get_weather") -> ToolMessage:
    return ToolMessage(text, tool_call_id=call_id, name=name)


def dump(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    return [message.model_dump() for message in messages]


LONG = "call_" + "x" * 60

# (provider, code, breaking history, passing history, change codes of the repair)
ROWS: list[tuple[str, str, list[BaseMessage], list[BaseMessage], set[str]]] = [
    (
        "deepseek",
        "orphan_result",
        [human(), AIMessage("I will check."), tool("call_1"), AIMessage("Sunny.")],
        [human(), ai("", "call_1"), tool("call_1"), AIMessage("Sunny.")],
        {"dropped_orphan_result"},
    ),
    (
        "openai",
        "missing_result",
        [human(), ai("", "call_1", "call_2"), tool("call_1"), human("still there?")],
        [human(), ai("", "call_1", "call_2"), tool("call_1"), tool("call_2"), human("ok")],
        {"answered_missing_call"},
    ),
    (
        "openai",
        "orphan_result",
        [human(), ai("", "call_1"), human("are you there?"), tool("call_1")],
        [human(), ai("", "call_1"), tool("call_1"), human("are you there?")],
        {"moved_result", "moved_message"},
    ),
    (
        "openai",
        "result_without_id",
        [human(), ai("", "call_1"), tool("")],
        [human(), ai("", "call_1"), tool("call_1")],
        {"filled_result_id"},
    ),
    (
        "openai",
        "call_id_too_long",
        [human(), ai("", LONG), tool(LONG)],
        [human(), ai("", "call_1"), tool("call_1")],
        {"rewrote_call_id"},
    ),
    (
        "mistral",
        "call_id_format",
        [human(), ai("", "call_1"), tool("call_1"), AIMessage("Sunny."), human("thanks")],
        [human(), ai("", "abcDEF123"), tool("abcDEF123"), AIMessage("Sunny."), human("thanks")],
        {"rewrote_call_id"},
    ),
    (
        "gemini",
        "result_name_mismatch",
        [human(), ai("", "call_1"), tool("call_1", name=None)],
        [human(), ai("", "call_1"), tool("call_1")],
        {"filled_result_name"},
    ),
    (
        "deepseek-reasoner",
        "missing_reasoning",
        [human(), ai("", "call_1"), tool("call_1"), AIMessage("Sunny.")],
        [
            human(),
            ai("", "call_1", additional_kwargs={"reasoning_content": "look it up"}),
            tool("call_1"),
            AIMessage("Sunny.", additional_kwargs={"reasoning_content": "done"}),
        ],
        {"added_reasoning_content"},
    ),
    (
        "mistral",
        "empty_assistant",
        [human(), AIMessage(""), human("hello?")],
        [human(), AIMessage("Hi."), human("hello?")],
        {"dropped_empty_message"},
    ),
    (
        "openai",
        "invalid_role",
        [human(), ChatMessage("a note", role="narrator")],
        [human(), ChatMessage("a note", role="user")],
        {"renamed_role"},
    ),
]


@pytest.mark.parametrize(
    ("provider", "code", "broken", "passing", "changes"),
    ROWS,
    ids=[f"{row[0]}-{row[1]}-{n}" for n, row in enumerate(ROWS)],
)
def test_rule_breaks_and_passes(
    provider: str,
    code: str,
    broken: list[BaseMessage],
    passing: list[BaseMessage],
    changes: set[str],
) -> None:
    problems = toolmend.check(broken, provider=provider)
    assert code in {p.code for p in problems}, problems
    assert all(p.provider_error for p in problems if p.code == code)
    assert toolmend.check(passing, provider=provider) == []
    assert toolmend.sanitize(passing, provider=provider) is passing
    before = dump(broken)
    repaired = toolmend.repair(broken, provider=provider)
    assert dump(broken) == before, "the input was mutated"
    assert repaired.problems_left == ()
    assert {change.code for change in repaired.changes} >= changes
    assert all(isinstance(m, BaseMessage) for m in repaired.messages)
    assert toolmend.sanitize(repaired.messages, provider=provider) is repaired.messages


# --- reading what LangChain sends ------------------------------------------------------------


def test_detection_picks_langchain_over_look_alikes() -> None:
    anthropic_style = AIMessage(
        [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}],
        tool_calls=[{"name": "get_weather", "args": {}, "id": "toolu_1"}],
    )
    for history in ([human()], [ai("", "call_1")], [anthropic_style], [tool("call_1")]):
        assert detect(history).name == "langchain"
    assert detect([{"role": "user", "content": "hi"}]).name == "openai"


def test_calls_are_what_the_chat_models_send() -> None:
    invalid = AIMessage(
        "",
        invalid_tool_calls=[
            {"name": "get_weather", "args": "{oops", "id": "call_2", "error": None, "type": "x"}
        ],
    )
    lost = AIMessage(
        "",
        additional_kwargs={
            "tool_calls": [
                {"id": "call_3", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ]
        },
    )
    blocks = AIMessage(
        [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_4", "name": "f", "input": {}},
        ]
    )
    skeleton = lc_format.read([human(), invalid, lost, blocks])
    assert {i: [c.id for c in calls] for i, calls in skeleton.calls.items()} == {
        1: ["call_2"],
        2: ["call_3"],
        3: ["toolu_4"],
    }
    # ChatOpenAI really sends the first two as tool_calls (the raw ones as a fallback).
    assert [c["id"] for c in _convert_message_to_dict(invalid)["tool_calls"]] == ["call_2"]
    assert [c["id"] for c in _convert_message_to_dict(lost)["tool_calls"]] == ["call_3"]
    assert skeleton.marked("no_text") == {1, 2}


def test_roles_follow_the_openai_conversion() -> None:
    developer = SystemMessage("rules", additional_kwargs={"__openai_role__": "developer"})
    skeleton = lc_format.read([developer, human(), ChatMessage("x", role="assistant")])
    assert skeleton.roles == ["developer", "user", "assistant"]
    assert skeleton.kinds == ["system", "user", "assistant"]


def test_unreadable_messages_name_index_and_field() -> None:
    with pytest.raises(toolmend.InvalidMessageError, match="message 1"):
        lc_format.read([human(), {"role": "user", "content": "a dict"}])
    broken = ToolMessage.model_construct(content="x", tool_call_id=None, type="tool")
    with pytest.raises(toolmend.InvalidMessageError, match="message 0, field 'tool_call_id'"):
        lc_format.read([broken])


# --- applying a plan -------------------------------------------------------------------------


def test_placeholder_is_a_tool_message_marked_as_an_error() -> None:
    history = [human(), ai("", "call_1"), human("moved on")]
    repaired = toolmend.sanitize(history, provider="deepseek")
    placeholder = repaired[2]
    assert type(placeholder) is ToolMessage
    assert placeholder.status == "error"
    assert (placeholder.tool_call_id, placeholder.name) == ("call_1", "get_weather")
    assert placeholder.content == toolmend.PLACEHOLDER_TEXT
    assert repaired[0] is history[0] and repaired[1] is history[1]


def test_placeholder_class_without_a_tool_message_in_the_history() -> None:
    chunk = AIMessageChunk("", tool_calls=[{"name": "f", "args": {}, "id": "call_1"}])
    repaired = toolmend.sanitize([human(), chunk, human("next")], provider="openai")
    assert type(repaired[2]) is ToolMessage


def test_edits_are_copies_that_keep_every_other_field() -> None:
    call = ai(
        "",
        LONG,
        id="run-1",
        response_metadata={"model_name": "m"},
        usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
        additional_kwargs={
            "tool_calls": [
                {
                    "id": LONG,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": "{}"},
                }
            ]
        },
    )
    result = ToolMessage("21 C", tool_call_id=LONG, name="get_weather", artifact={"raw": 21})
    history = [human(), call, result]
    before = dump(history)
    repaired = toolmend.repair(history, provider="openai")
    assert dump(history) == before
    new_call, new_result = repaired.messages[1], repaired.messages[2]
    new_id = new_call.tool_calls[0]["id"]
    assert len(new_id) <= 40 and new_result.tool_call_id == new_id
    assert new_call.additional_kwargs["tool_calls"][0]["id"] == new_id  # the raw mirror too
    assert (new_call.id, new_call.usage_metadata, new_call.response_metadata) == (
        "run-1",
        call.usage_metadata,
        {"model_name": "m"},
    )
    assert new_result.artifact == {"raw": 21}
    assert type(new_call) is AIMessage and type(new_result) is ToolMessage


def test_an_id_rewrite_reaches_anthropic_tool_use_blocks() -> None:
    call = AIMessage(
        [
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": LONG, "name": "get_weather", "input": {"city": "Paris"}},
        ],
        tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": LONG}],
    )
    repaired = toolmend.sanitize([human(), call, tool(LONG)], provider="openai")
    new_id = repaired[1].tool_calls[0]["id"]
    assert repaired[1].content[1]["id"] == new_id
    assert repaired[1].content[0] == {"type": "text", "text": "Checking."}
    assert call.content[1]["id"] == LONG


def test_removed_calls_are_not_resurrected_from_raw_tool_calls() -> None:
    raw = [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    call = AIMessage(
        "Checking.",
        tool_calls=[{"name": "f", "args": {}, "id": "call_1"}],
        additional_kwargs={"tool_calls": raw},
    )
    policy = toolmend.Policy(missing_result="remove_call")
    repaired = toolmend.sanitize([human(), call, human("next")], provider="openai", policy=policy)
    assert repaired[1].tool_calls == []
    assert "tool_calls" not in repaired[1].additional_kwargs
    assert "tool_calls" not in _convert_message_to_dict(repaired[1])


def test_orphans_kept_as_text_become_human_messages() -> None:
    history = [human(), AIMessage("Done."), tool("call_9", "a real result")]
    repaired = toolmend.sanitize(history, provider="deepseek", policy=KEEP_EVERYTHING)
    assert type(repaired[2]) is HumanMessage
    assert "a real result" in repaired[2].content and "call_9" in repaired[2].content


def test_flattened_tool_traffic_keeps_calls_and_results_as_text() -> None:
    history = [human(), ai("", "call_1"), tool("call_1", "21 C"), AIMessage("Sunny.")]
    repaired = toolmend.sanitize(history, provider="hf-template-strict")
    text = json.dumps(dump(repaired))
    assert "call_1" in text and "21 C" in text and "Sunny." in text
    assert not any(isinstance(m, ToolMessage) for m in repaired)


def test_loop_guard_reads_langchain_arguments() -> None:
    history: list[BaseMessage] = [human()]
    for n in range(3):
        history += [ai("", f"call_{n}"), tool(f"call_{n}")]
    assert [p.code for p in toolmend.detect_loops(history)] == ["repeated_call"]


def test_trim_never_cuts_a_langchain_group() -> None:
    history = [
        SystemMessage("Be brief."),
        human(),
        ai("", "call_1", "call_2"),
        tool("call_1"),
        tool("call_2"),
        AIMessage("Sunny."),
    ]
    for size in range(2, 7):
        try:
            kept = toolmend.trim(history, max_messages=size, keep_first=1)
        except toolmend.TrimError:
            continue
        assert toolmend.check(kept, provider="openai") == []


@pytest.mark.slow
def test_the_core_imports_no_langchain() -> None:
    code = (
        "import sys, toolmend\n"
        "from toolmend.formats import _langchain as langchain\n"
        "toolmend.repair([{'role': 'user', 'content': 'hi'}])\n"
        "print([m for m in sys.modules if m.startswith('langchain')])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# --- properties over converted OpenAI histories -----------------------------------------------


def to_langchain(history: list[dict[str, Any]]) -> list[BaseMessage]:
    """An OpenAI chat history as the LangChain messages an app would hold for it."""
    out: list[BaseMessage] = []
    for message in history:
        role, content = message["role"], message.get("content") or ""
        if role == "user":
            out.append(HumanMessage(content))
        elif role == "system":
            out.append(SystemMessage(content))
        elif role == "tool":
            out.append(ToolMessage(content, tool_call_id=message.get("tool_call_id") or ""))
        else:
            calls, invalid = [], []
            for call in message.get("tool_calls") or ():
                function = call.get("function") or call
                arguments = function.get("arguments")
                entry = {"name": function.get("name"), "id": call.get("id")}
                if isinstance(arguments, str):
                    try:
                        arguments = json.loads(arguments)
                    except ValueError:
                        invalid.append({**entry, "args": arguments, "error": None})
                        continue
                calls.append({**entry, "args": arguments or {}})
            extra = {}
            if message.get("reasoning_content") is not None:
                extra["reasoning_content"] = message["reasoning_content"]
            out.append(
                AIMessage(
                    content, tool_calls=calls, invalid_tool_calls=invalid, additional_kwargs=extra
                )
            )
    return out


PROVIDERS = [*OPENAI_FAMILY, "anthropic", "gemini"]
SENT_BY_CHAT_OPENAI = ["openai", "deepseek", "groq"]
"""Providers whose rules ChatOpenAI's conversion keeps everything for (it drops
``reasoning_content``, a ``ToolMessage``'s ``name`` and ``prefix``)."""


@pytest.mark.parametrize("provider", PROVIDERS)
@settings(max_examples=40)
@given(case=damaged_conversations(id_style="any"))
@example(  # an empty assistant turn is all the damage left: nothing real to send
    case=([], [{"role": "assistant", "content": None}], ["truncate_head", "null_content"])
)
def test_repair_makes_damaged_histories_pass_and_is_idempotent(provider: str, case: Any) -> None:
    history = to_langchain(case[1])
    before = dump(history)
    result = toolmend.repair(history, provider=provider)
    assert dump(history) == before, "the input was mutated"
    left = toolmend.check(result.messages, provider=provider)
    said = [text for text in content_strings(case[1]) if text.strip()]
    if not said and not any(message.get("tool_calls") for message in case[1]):
        # nothing real to send (as in test_fuzz): an empty history, and that is said
        assert [problem.code for problem in left] in ([], ["empty_history"])
        assert result.problems_left == tuple(left)
        return
    assert left == []
    assert toolmend.sanitize(result.messages, provider=provider) is result.messages
    assert all(isinstance(m, BaseMessage) for m in result.messages)
    assert (result.messages is history) == (not result.changes)
    if provider in SENT_BY_CHAT_OPENAI:
        sent = [_convert_message_to_dict(m) for m in result.messages]
        assert toolmend.check(sent, provider=provider, format="openai") == []


@pytest.mark.parametrize("provider", ["openai", "deepseek", "anthropic", "gemini"])
@settings(max_examples=40)
@given(case=damaged_conversations(id_style="any", reasoning=True))
def test_no_real_content_is_lost(provider: str, case: Any) -> None:
    damaged = case[1]
    result = toolmend.repair(to_langchain(damaged), provider=provider, policy=KEEP_EVERYTHING)
    text = json.dumps(dump(result.messages), ensure_ascii=False)
    for content in content_strings(damaged) - {STUB_CONTENT}:
        assert json.dumps(content, ensure_ascii=False)[1:-1] in text, content


@pytest.mark.parametrize("provider", ["openai", "deepseek", "groq"])
@settings(max_examples=40)
@given(history=valid_conversations(id_style="any"))
def test_valid_histories_come_back_as_the_same_object(provider: str, history: Any) -> None:
    messages = to_langchain(history)
    assert toolmend.check(messages, provider=provider) == []
    assert toolmend.sanitize(messages, provider=provider) is messages
    assert toolmend.check(history, provider=provider) == []


@pytest.mark.parametrize("provider", PROVIDERS)
@settings(max_examples=40)
@given(case=damaged_conversations(id_style="any"))
def test_one_pass_scan_never_vouches_for_a_broken_history(provider: str, case: Any) -> None:
    history = to_langchain(case[1])
    profile = get_profile(provider)
    if lc_format.dirty_spans(history, profile) == []:
        assert judge(lc_format.read(history), profile) == []


@settings(max_examples=40)
@given(history=valid_conversations(id_style="any"))
def test_one_pass_scan_vouches_for_valid_histories(history: Any) -> None:
    messages = to_langchain(history)
    assert lc_format.dirty_spans(messages, get_profile("openai")) == []
    assert lc_format.dirty_spans(messages, get_profile("deepseek")) == []


@pytest.mark.parametrize("provider", ["hf-template-strict", "mistral", "anthropic"])
def test_content_that_is_no_string_or_list_is_named(provider: str) -> None:
    """A message whose ``content`` LangChain's own validation would refuse (set around it: a
    number) is an error naming the message and the field, not a pydantic ``ValidationError``
    from the new message a repair builds around it (a system message folded into the user
    turn under ``hf-template-strict``: a random hostile case found it)."""
    system = SystemMessage(content="rules")
    object.__setattr__(system, "content", -1)
    history = [HumanMessage(content="hi"), system, HumanMessage(content="go on")]
    with pytest.raises(toolmend.InvalidMessageError) as raised:
        toolmend.repair(history, provider=provider, format="langchain")
    assert (raised.value.index, raised.value.field) == (1, "content")
