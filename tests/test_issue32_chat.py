"""Issue 32, cases 1, 2, 7, 8 and 10: what the repair got wrong on chat histories.

1. a call id reused in a later turn: the call answered by a placeholder gets a fresh id, so no
   two results share one;
2. an orphan result that is the newest input is kept as user text, never dropped;
7. a request never ends on unanswered calls (Anthropic too), and the Claude models without
   prefill (``anthropic-no-prefill``) get a user message after a final assistant message;
8. blank user text bound for Anthropic (OpenAI-shaped, as LiteLLM's sanitizer tests have it);
10. a user message whose ``tool_result`` blocks are moved out keeps its other keys.

Each case in the formats it occurs in (OpenAI chat, Anthropic blocks, LangChain messages), and
through the strict test server and the patched anthropic SDK where the provider's answer shows.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

import toolmend
import toolmend.integrations.patch as tm
from toolmend._routing import converted_profile, request_profile
from toolmend.formats import get as get_format
from toolmend.profiles import get_profile
from toolmend.testing import StrictProviderServer

from support.histories import damaged_conversations
from support.whole_path import whole_repair

PLACEHOLDER = toolmend.PLACEHOLDER_TEXT
BRIDGE = "Continue."


def call(call_id: str, name: str = "get_weather") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def calling(*ids: str) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [call(i) for i in ids]}


def tool(call_id: str, content: str = "21 C") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


def assistant(content: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def use(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "get_weather", "input": {}}


def result(call_id: str, content: str = "21 C") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def assert_stable(repaired: toolmend.Repair, provider: str, format: str | None = None) -> None:
    """Nothing left, and a second repair changes nothing (idempotent)."""
    assert repaired.problems_left == ()
    again = toolmend.repair(repaired.messages, provider=provider, format=format)
    assert again.messages is repaired.messages and again.changes == ()


def result_ids(messages: list[dict[str, Any]]) -> list[str]:
    return [m["tool_call_id"] for m in messages if m.get("role") == "tool"]


# --- 1. an id reused in a later turn -----------------------------------------------------------

REUSED = [
    user("Weather?"),
    calling("call_1"),
    tool("call_1", "21 C"),
    user("And now?"),
    calling("call_1"),  # the model reused the id; no result came
    user("Hello?"),
]
"""The later call is unanswered: its placeholder took the same id, two results shared it."""

REUSED_FIRST_OPEN = [
    user("Weather?"),
    calling("call_1"),  # no result came
    user("And now?"),
    calling("call_1"),
    tool("call_1", "22 C"),
]
"""The mirror: the earlier call is the unanswered one, the later pair is real."""


@pytest.mark.parametrize("provider", ["openai", "deepseek", "anthropic", "gemini"])
def test_a_reused_id_answered_by_a_placeholder_gets_a_fresh_one(provider: str) -> None:
    before = copy.deepcopy(REUSED)
    repaired = toolmend.repair(REUSED, provider=provider)
    assert before == REUSED
    out = repaired.messages
    ids = result_ids(out)
    assert len(ids) == len(set(ids)) == 2, ids  # was ["call_1", "call_1"]
    real = out[1]["tool_calls"][0]["id"]  # the real pair keeps its id
    assert out[2]["tool_call_id"] == real and out[2]["content"] == "21 C"
    fresh = out[4]["tool_calls"][0]["id"]
    assert fresh != real and out[5]["tool_call_id"] == fresh
    assert out[5]["content"] == PLACEHOLDER
    assert ("rewrote_call_id", 4) in [(c.code, c.index) for c in repaired.changes]
    assert real == "call_1"
    assert toolmend.repair(REUSED, provider=provider).messages == out  # deterministic
    assert_stable(repaired, provider)


def test_the_real_pair_keeps_its_id_when_the_earlier_call_is_the_unanswered_one() -> None:
    repaired = toolmend.repair(REUSED_FIRST_OPEN, provider="openai")
    out = repaired.messages
    assert out[-2:] == REUSED_FIRST_OPEN[-2:]
    assert out[1]["tool_calls"][0]["id"] == out[2]["tool_call_id"] != "call_1"
    assert out[2]["content"] == PLACEHOLDER
    assert_stable(repaired, "openai")


def test_a_reused_id_in_a_long_history_is_renamed_as_in_a_short_one() -> None:
    """The damaged ranges of a long history cannot see the earlier call: the whole decides."""
    padding = []
    for n in range(30):
        padding += [user(f"q{n}"), calling(f"call_p{n}"), tool(f"call_p{n}")]
    history = REUSED[:3] + padding + REUSED[3:]
    ids = result_ids(toolmend.sanitize(history))
    assert len(ids) == len(set(ids))


def test_a_reused_anthropic_tool_use_id_gets_a_fresh_one() -> None:
    history = [
        user("Weather?"),
        assistant([use("toolu_1")]),
        user([result("toolu_1")]),
        assistant("It is 21 C."),
        user("And now?"),
        assistant([use("toolu_1")]),
        user("Hello?"),
    ]
    repaired = toolmend.repair(history, provider="anthropic", format="anthropic")
    out = repaired.messages
    fresh = out[5]["content"][0]["id"]
    assert fresh != "toolu_1" and out[6]["content"][0]["tool_use_id"] == fresh
    assert out[1:3] == history[1:3]
    assert_stable(repaired, "anthropic", "anthropic")


def test_a_reused_langchain_call_id_gets_a_fresh_one() -> None:
    history = [
        HumanMessage("Weather?"),
        AIMessage("", tool_calls=[{"id": "call_1", "name": "get_weather", "args": {}}]),
        ToolMessage("21 C", tool_call_id="call_1"),
        HumanMessage("And now?"),
        AIMessage("", tool_calls=[{"id": "call_1", "name": "get_weather", "args": {}}]),
        HumanMessage("Hello?"),
    ]
    out = toolmend.sanitize(history, provider="openai")
    answers = [m.tool_call_id for m in out if isinstance(m, ToolMessage)]
    assert len(answers) == len(set(answers)) == 2
    assert out[4].tool_calls[0]["id"] == answers[1] != "call_1"


# --- 2. the newest input is never dropped ------------------------------------------------------

ORPHAN_LAST = [
    user("Hi"),
    assistant("Hello! What can I do?"),
    tool("call_gone", "What is the weather in Paris?"),  # the user's follow-up, as a result
]


@pytest.mark.parametrize("policy", [None, toolmend.Policy(orphan_result="drop")])
@pytest.mark.parametrize("provider", ["openai", "deepseek", "anthropic", "mistral"])
def test_an_orphan_result_that_is_the_newest_input_is_kept_as_text(
    provider: str, policy: toolmend.Policy | None
) -> None:
    assert "orphan_result" in {p.code for p in toolmend.check(ORPHAN_LAST, provider=provider)}
    repaired = toolmend.repair(ORPHAN_LAST, provider=provider, policy=policy)
    kept = [m for m in repaired.messages if "What is the weather in Paris?" in str(m)]
    assert len(kept) == 1 and kept[0]["role"] == "user"
    assert kept[0]["content"] == "[tool result call_gone (tool)]\nWhat is the weather in Paris?"
    assert "orphan_result_to_text" in {c.code for c in repaired.changes}
    assert "dropped_orphan_result" not in {c.code for c in repaired.changes}
    assert_stable(repaired, provider)


def test_newest_means_after_the_last_user_or_assistant_message_system_messages_aside() -> None:
    """A system message after the result (an app appending instructions) does not make it old;
    a user message after it does, and a result among the last call's results is that turn's
    stray, not a new input: both are dropped as before."""
    late_system = [*ORPHAN_LAST, {"role": "system", "content": "Be brief."}]
    out = toolmend.sanitize(late_system)
    assert out[2]["role"] == "user" and "Paris" in out[2]["content"] and out[3] == late_system[3]
    answered_later = [*ORPHAN_LAST, user("Anyone?")]
    assert toolmend.sanitize(answered_later) == [ORPHAN_LAST[0], ORPHAN_LAST[1], user("Anyone?")]
    stray = [user("Hi"), calling("call_1"), tool("call_1"), tool("call_gone", "stale")]
    assert toolmend.sanitize(stray) == stray[:3]


def test_the_newest_input_is_kept_in_a_long_damaged_history() -> None:
    """The last damaged range reaches the end: it knows the newest input as the whole does."""
    history = []
    for n in range(30):
        history += [user(f"q{n}"), calling(f"call_{n}"), user("still there?"), tool(f"call_{n}")]
    history += ORPHAN_LAST[1:]
    out = toolmend.sanitize(history)
    assert out[-1] == user("[tool result call_gone (tool)]\nWhat is the weather in Paris?")


def test_an_anthropic_orphan_in_the_newest_message_is_kept_as_text() -> None:
    history = [
        user("Hi"),
        assistant("Hello!"),
        user([result("toolu_gone", "What is the weather in Paris?")]),
    ]
    repaired = toolmend.repair(history, provider="anthropic", format="anthropic")
    assert repaired.messages[2] == user(
        [text("[tool result toolu_gone]\nWhat is the weather in Paris?")]
    )
    assert_stable(repaired, "anthropic", "anthropic")


def test_a_stale_result_beside_the_users_text_is_no_new_input() -> None:
    """Claude Code's compacted leftovers (the demo's case): the user's input is the text."""
    history = [
        user("Hi"),
        assistant("Hello!"),
        user([result("toolu_old", "stale"), text("Just fix the expectation.")]),
    ]
    out = toolmend.sanitize(history, provider="anthropic", format="anthropic")
    assert out[2] == user([text("Just fix the expectation.")])


def test_a_langchain_orphan_that_is_the_newest_input_is_kept_as_text() -> None:
    history = [
        SystemMessage("Be brief."),
        HumanMessage("Hi"),
        AIMessage("Hello!"),
        ToolMessage("What is the weather in Paris?", tool_call_id="call_gone"),
    ]
    out = toolmend.sanitize(history, provider="openai")
    assert isinstance(out[-1], HumanMessage)
    assert "What is the weather in Paris?" in out[-1].content


# --- 7. a request that ends on an assistant turn -----------------------------------------------

TRAILING_USE = [user("Weather?"), assistant([text("Let me look."), use("toolu_1")])]


def test_a_trailing_anthropic_call_is_reported_and_answered() -> None:
    """Twelve fixtures of four suites (pydantic-ai, LiteLLM's sanitizer, deepagents, the
    Agents SDK) end on an assistant ``tool_use`` and expect it answered; toolmend left it."""
    [problem] = toolmend.check(TRAILING_USE, provider="anthropic")
    assert (problem.code, problem.index, problem.ids) == ("missing_result", 1, ("toolu_1",))
    repaired = toolmend.repair(TRAILING_USE, provider="anthropic")
    assert repaired.messages[:2] == TRAILING_USE
    assert repaired.messages[2] == user(
        [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": PLACEHOLDER,
                "is_error": True,
            }
        ]
    )
    assert_stable(repaired, "anthropic")
    with pytest.raises(toolmend.ToolChainError):
        toolmend.repair(TRAILING_USE, provider="anthropic", policy="strict")
    reported = toolmend.repair(TRAILING_USE, provider="anthropic", policy="report")
    assert reported.messages is TRAILING_USE and reported.problems_left == (problem,)


def test_a_trailing_call_stays_waiting_where_the_frontier_is_kept() -> None:
    """A history written while tools run (``frontier="keep"``) is no request."""
    keep = toolmend.Policy(frontier="keep")
    assert toolmend.sanitize(TRAILING_USE, provider="anthropic", policy=keep) is TRAILING_USE


@pytest.mark.parametrize("provider", ["openai", "anthropic", "deepseek"])
def test_a_trailing_openai_call_is_answered(provider: str) -> None:
    history = [user("Weather?"), calling("call_1")]
    assert [p.code for p in toolmend.check(history, provider=provider)] == ["missing_result"]
    assert toolmend.sanitize(history, provider=provider)[-1]["content"] == PLACEHOLDER


@pytest.mark.parametrize(
    ("model", "thinking", "profile"),
    [
        ("claude-opus-4-6", None, "anthropic-no-prefill"),
        ("claude-opus-4-7-20260301", None, "anthropic-no-prefill"),
        ("claude-sonnet-4-6", None, "anthropic-no-prefill"),
        ("us.anthropic.claude-opus-4-6-v1", None, "anthropic-no-prefill"),
        ("anthropic/claude-sonnet-4-6@20260217", None, "anthropic-no-prefill"),
        ("claude-sonnet-4-5", None, "anthropic"),
        ("claude-opus-4-1", None, "anthropic"),
        (None, None, "anthropic"),
        ("claude-sonnet-4-6", {"type": "adaptive"}, "anthropic-thinking-no-prefill"),
        ("claude-sonnet-4-5", {"type": "adaptive"}, "anthropic-thinking"),
    ],
)
def test_the_models_without_prefill_pick_their_profile(
    model: str | None, thinking: Any, profile: str
) -> None:
    assert request_profile("anthropic", model=model, thinking=thinking) == profile


def test_a_gateways_claude_deployment_without_prefill_meets_the_rule() -> None:
    assert converted_profile("gemini", "claude-sonnet-4-6@20260217") == "anthropic-no-prefill"
    assert converted_profile("anthropic", "claude-opus-4-6") == "anthropic-no-prefill"


PREFILL_ERROR = (
    "This model does not support assistant message prefill. The conversation must end with a "
    "user message."
)


@pytest.mark.parametrize("format", ["anthropic", "openai"])
def test_a_final_assistant_message_gets_the_bridge_without_prefill(format: str) -> None:
    history = [user("Write a haiku."), assistant([text("Autumn")])]
    if format == "openai":
        history = [user("Write a haiku."), assistant("Autumn"), {"role": "system", "content": "x"}]
    assert toolmend.check(history, provider="anthropic", format=format) == []
    [problem] = toolmend.check(history, provider="anthropic-no-prefill", format=format)
    assert (problem.code, problem.index, problem.provider_error) == (
        "prefill_unsupported",
        1,
        PREFILL_ERROR,
    )
    repaired = toolmend.repair(history, provider="anthropic-no-prefill", format=format)
    assert repaired.messages[: len(history)] == history  # the model's words stay its own
    assert repaired.messages[len(history)] == user(BRIDGE)
    assert [(c.code, c.index) for c in repaired.changes] == [("inserted_message", 1)]
    assert_stable(repaired, "anthropic-no-prefill", format)


def test_an_empty_final_assistant_message_is_dropped_without_prefill() -> None:
    history = [user("Hi"), assistant([text("Hello")]), user("Go on"), assistant("")]
    repaired = toolmend.repair(history, provider="anthropic-no-prefill", format="anthropic")
    assert repaired.messages == history[:3]
    assert [c.code for c in repaired.changes] == ["dropped_empty_message"]
    assert_stable(repaired, "anthropic-no-prefill", "anthropic")


def test_an_empty_final_message_after_an_unthought_tool_exchange_with_thinking() -> None:
    """Thinking on, no prefill: the empty final assistant message goes, which leaves the tool
    exchange before it last; its assistant turn has no thinking block, so the exchange is
    written as text, as it is when nothing follows it. (Hypothesis found it, ``null_content``:
    the message went after the flattening had looked at the final exchange, and the repair
    left ``thinking_required``; the fuzz pair anthropic->anthropic-thinking-no-prefill.)"""
    history = [
        user("user 1"),
        assistant([use("toolu_1")]),
        user([result("toolu_1", "result 2")]),
        assistant(""),
    ]
    profile = "anthropic-thinking-no-prefill"
    assert toolmend.check(history, provider="anthropic-thinking", format="anthropic") == []
    repaired = toolmend.repair(history, provider=profile, format="anthropic")
    assert [(c.code, c.index) for c in repaired.changes] == [
        ("flattened_tool_traffic", 1),
        ("flattened_tool_traffic", 2),
        ("dropped_empty_message", 3),
    ]
    assert [m["role"] for m in repaired.messages] == ["user", "assistant", "user"]
    assert "result 2" in repaired.messages[2]["content"][0]["text"]
    assert_stable(repaired, profile, "anthropic")
    assert toolmend.repair(history[:3], provider=profile, format="anthropic").messages == (
        repaired.messages
    )


def test_a_trailing_call_without_prefill_ends_on_its_placeholder() -> None:
    repaired = toolmend.repair(TRAILING_USE, provider="anthropic-no-prefill")
    assert [c.code for c in repaired.changes] == ["answered_missing_call"]
    assert repaired.messages[-1]["role"] == "user"
    assert_stable(repaired, "anthropic-no-prefill")


def test_the_prefill_rule_carries_its_source() -> None:
    check = get_profile("anthropic-no-prefill").checks["prefill_unsupported"]
    assert check.error == PREFILL_ERROR and "platform.claude.com" in check.source
    assert "prefill_unsupported" not in get_profile("anthropic").checks


# --- 8. blank user text bound for Anthropic ----------------------------------------------------

EMPTY = "messages: text content blocks must be non-empty"
WHITESPACE = "messages: text content blocks must contain non-whitespace text"


@pytest.mark.parametrize(
    ("content", "error", "fixed"),
    [
        ("", EMPTY, BRIDGE),
        ("   \n  \t  ", WHITESPACE, BRIDGE),
        ([text("")], EMPTY, BRIDGE),
        ([text(""), text("  \n  ")], WHITESPACE, BRIDGE),
        ([text("real content"), text(""), text("  \n  ")], EMPTY, [text("real content")]),
        ([text("  "), {"type": "image_url", "image_url": {"url": "x"}}], WHITESPACE, None),
    ],
    ids=["empty", "whitespace", "empty-part", "blank-parts", "beside-real-text", "beside-image"],
)
def test_blank_user_text_is_flagged_and_repaired_for_anthropic(
    content: Any, error: str, fixed: Any
) -> None:
    """LiteLLM's sanitizer tests (``test_message_sanitization.py``, case C and the pydantic-ai
    regression): Anthropic refuses these text blocks."""
    history = [user("Hi"), assistant("Hello"), user(content)]
    assert toolmend.check(history, provider="openai") == []
    problems = toolmend.check(history, provider="anthropic")
    assert [(p.index, p.provider_error) for p in problems][:1] == [(2, error)]
    repaired = toolmend.repair(history, provider="anthropic")
    expected = fixed if fixed is not None else content[1:]
    assert repaired.messages[2] == user(expected)
    assert repaired.messages[:2] == history[:2]
    assert_stable(repaired, "anthropic")


# --- 10. keys kept when a tool_result block moves ----------------------------------------------


def test_a_user_message_emptied_of_its_results_keeps_its_other_keys() -> None:
    moved = {
        "role": "user",
        "name": "bob",
        "cache_control": {"type": "ephemeral"},
        "x_app_key": 7,
        "content": [result("toolu_1")],
    }
    history = [user("Weather?"), assistant([use("toolu_1")]), user("Still there?"), moved]
    repaired = toolmend.repair(history, provider="anthropic")
    assert repaired.messages[2] == {**moved, "content": [result("toolu_1")]}
    assert list(repaired.messages[2]) == list(moved)  # in their order
    assert repaired.messages[3] == user("Still there?")
    assert_stable(repaired, "anthropic")


# --- the strict server and the patched SDK ----------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[StrictProviderServer]:
    with StrictProviderServer() as running:
        yield running


@pytest.fixture
def client(server: StrictProviderServer) -> Iterator[anthropic.Anthropic]:
    tm.unpatch()
    yield anthropic.Anthropic(api_key="test-key", base_url=server.anthropic_base_url, max_retries=0)
    tm.unpatch()


@pytest.mark.parametrize(
    ("history", "model", "error"),
    [
        (TRAILING_USE, "claude-sonnet-4-5", "`tool_use` ids were found without `tool_result`"),
        ([user("Hi"), assistant("Hello")], "claude-sonnet-4-6", PREFILL_ERROR),
        (
            [user("Hi"), assistant("Hello"), user([result("toolu_gone", "Paris?")])],
            "claude-sonnet-4-6",
            "unexpected `tool_use_id` found in `tool_result` blocks: toolu_gone",
        ),
    ],
    ids=["trailing-call", "prefill", "newest-orphan"],
)
def test_the_server_refuses_the_history_and_takes_the_patched_requests(
    server: StrictProviderServer,
    client: anthropic.Anthropic,
    history: list[dict[str, Any]],
    model: str,
    error: str,
) -> None:
    with pytest.raises(anthropic.BadRequestError, match=error.replace("`", ".")):
        client.messages.create(model=model, max_tokens=64, messages=history)  # type: ignore[arg-type]
    tm.patch()
    client.messages.create(model=model, max_tokens=64, messages=history)  # type: ignore[arg-type]
    sent = server.last_request
    assert sent.accepted and sent.provider == request_profile("anthropic", model=model)
    assert "Paris?" in str(sent.history) or "Paris?" not in str(history)  # nothing dropped


# --- properties --------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "deepseek", "anthropic"])
@given(case=damaged_conversations(id_style="any"))
def test_a_placeholder_never_shares_its_id_and_ranges_agree_with_the_whole(
    provider: str, case: Any
) -> None:
    """Whatever the damage and the id style (ids reused every turn among them): no placeholder
    result carries an id another call of the repaired history has (case 1), and the damaged
    ranges are repaired as the whole history is."""
    _, damaged, _ = case
    repaired = toolmend.repair(damaged, provider=provider)
    out = repaired.messages
    call_ids = [
        c["id"] for m in out if m.get("role") == "assistant" for c in m.get("tool_calls") or []
    ]
    for message in out:
        if message.get("role") == "tool" and message.get("content") == PLACEHOLDER:
            assert call_ids.count(message["tool_call_id"]) == 1, message["tool_call_id"]
    if provider != "deepseek":  # (count pairing: its ranges and the whole differ on main too)
        module = get_format("openai")
        whole, _ = whole_repair(module, damaged, get_profile(provider), toolmend.Policy())
        assert out == whole


@given(case=damaged_conversations(id_style="any"), question=st.text(min_size=1, max_size=20))
def test_the_newest_input_is_never_dropped(case: Any, question: str) -> None:
    """An orphan result appended after a turn that ends on text (case 2): its content is in the
    repaired history under every policy."""
    _, damaged, _ = case
    assume(damaged and damaged[-1].get("role") in ("user", "assistant"))
    assume(not damaged[-1].get("tool_calls"))
    marker = f"<<{question}>>"
    history = [*damaged, tool("call_not_there", marker)]
    for policy in (toolmend.Policy(), toolmend.Policy(orphan_result="drop")):
        out = toolmend.sanitize(history, provider="openai", policy=policy)
        assert json.dumps(out[-1]).count(json.dumps(marker)[1:-1]) == 1
