"""Issue 20's findings, one test each: what the outside judges refused, now repaired.

The exact provider texts of the new rules are asserted in ``test_rules_openai_family.py`` (the
OpenAI-family profiles) and below (the others); ``test_judges.py`` runs the judges themselves.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

import toolmend

from support import judges
from support.cases import assistant, calls, result, system, user

MISTRAL_ID = "abcDEF123"


def _flat_call_turn() -> list[dict[str, Any]]:
    return [
        user(),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}],
        },
        result("call_1"),
        assistant("21 C"),
        user(),
    ]


@pytest.mark.parametrize(
    "provider",
    ["deepseek", "groq", "mistral", "hf-template", "anthropic", "gemini", "bedrock"],
)
def test_finding_1_every_openai_shaped_profile_normalizes_calls(provider: str) -> None:
    history = _flat_call_turn()
    if provider == "mistral":
        history[1]["tool_calls"][0]["id"] = MISTRAL_ID
        history[2]["tool_call_id"] = MISTRAL_ID
    before = copy.deepcopy(history)
    fixed = toolmend.repair(history, provider=provider)
    assert history == before  # the caller's input is not touched
    assert "normalized_tool_call" in {change.code for change in fixed.changes}
    call = fixed.messages[1]["tool_calls"][0]
    assert call["type"] == "function"
    assert isinstance(call["function"]["arguments"], str)
    assert toolmend.check(fixed.messages, provider=provider) == []
    assert toolmend.sanitize(fixed.messages, provider=provider) is fixed.messages


def test_finding_1_litellm_texts_for_anthropic_gemini_bedrock() -> None:
    history = _flat_call_turn()
    history[1]["tool_calls"][0] = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
    }
    errors = {
        provider: {p.provider_error for p in toolmend.check(history, provider=provider)}
        for provider in ("anthropic", "gemini", "bedrock")
    }
    assert "'dict' object has no attribute 'strip'" in errors["anthropic"]
    assert (
        "Unable to convert openai tool calls to gemini tool calls. Received error=the JSON "
        "object must be str, bytes or bytearray, not dict" in errors["gemini"]
    )
    assert (
        "Unable to convert openai tool calls with ids=call_1 to bedrock tool calls."
        in errors["bedrock"]
    )
    # and LiteLLM itself says so, unrepaired
    assert "'dict' object has no attribute 'strip'" in (
        judges.litellm_error("anthropic", history) or ""
    )


GEMINI_EMPTY_TEXT = (
    "Unable to submit request because it has an empty text parameter. Add a value to the "
    "parameter and try again. Learn more: "
    "https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/gemini"
)


def test_finding_2_gemini_empty_text_beside_calls_and_empty_user() -> None:
    history = [user(""), calls("c1", text=""), result("c1", name="get_weather"), assistant("ok")]
    problems = toolmend.check(history, provider="gemini")
    assert {(p.code, p.index) for p in problems} == {("content_empty", 0), ("content_empty", 1)}
    assert {p.provider_error for p in problems} == {GEMINI_EMPTY_TEXT}
    fixed = toolmend.repair(history, provider="gemini")
    assert fixed.messages[0]["content"] == "Continue."
    assert fixed.messages[1]["content"] is None
    assert [c.code for c in fixed.changes] == ["filled_content", "filled_content"]
    assert judges.litellm_error("gemini", list(fixed.messages)) is None


def test_finding_2_bedrock_user_without_text() -> None:
    history = [user(None), assistant("hi"), user()]  # type: ignore[arg-type]
    problems = toolmend.check(history, provider="bedrock")
    assert [p.code for p in problems] == ["content_null"]
    assert problems[0].provider_error.startswith("A conversation must start with a user message")
    assert judges.litellm_error("bedrock", history) is not None
    fixed = toolmend.repair(history, provider="bedrock")
    assert judges.litellm_error("bedrock", list(fixed.messages)) is None


@pytest.mark.parametrize("provider", ["mistral", "hf-template"])
def test_finding_2_null_content_filled_with_an_empty_string(provider: str) -> None:
    call_id = MISTRAL_ID if provider == "mistral" else "call_1"
    history = [user(), calls(call_id, text=""), result(call_id, text=None), assistant("ok"), user()]  # type: ignore[arg-type]
    fixed = toolmend.repair(history, provider=provider)
    assert fixed.messages[2]["content"] == ""
    assert [c.code for c in fixed.changes] == ["filled_content"]
    assert toolmend.repair(fixed.messages, provider=provider).messages is fixed.messages


def test_finding_3_gemini_openai_shaped_history_opening_with_a_call() -> None:
    history = [calls("c1"), result("c1", name="get_weather"), assistant("ok"), user()]
    problems = toolmend.check(history, provider="gemini")
    assert [p.provider_error for p in problems] == [
        "Please ensure that function call turn comes immediately after a user turn or after a "
        "function response turn."
    ]
    fixed = toolmend.repair(history, provider="gemini")
    assert fixed.messages[0] == {"role": "user", "content": "Continue."}
    assert [c.code for c in fixed.changes] == ["inserted_message"]
    assert judges.litellm_error("gemini", list(fixed.messages)) is None


def test_finding_3_mistral_history_opening_with_a_call() -> None:
    history = [calls(MISTRAL_ID), result(MISTRAL_ID), assistant("ok"), user()]
    assert "Unexpected tool call id" in (judges.mistral_error(history) or "")
    fixed = toolmend.repair(history, provider="mistral")
    assert fixed.messages[0] == {"role": "user", "content": "Continue."}
    assert judges.mistral_error(list(fixed.messages)) is None


@pytest.mark.parametrize(
    ("provider", "history", "error"),
    [
        ("mistral", [], "Conversation must have at least one message"),
        ("anthropic", [], "messages: at least one message is required"),
        ("anthropic", [system()], "messages: at least one message is required"),
        ("bedrock", [system()], "A conversation must start with a user message."),
        ("hf-template", [], "list object has no element 0"),
        ("hf-template", [system()], "list object has no element 0"),
    ],
)
def test_finding_4_nothing_to_send_is_a_problem_left(
    provider: str, history: list[Any], error: str
) -> None:
    problems = toolmend.check(history, provider=provider)
    assert [p.code for p in problems] == ["empty_history"]
    assert problems[0].provider_error.startswith(error)
    fixed = toolmend.repair(history, provider=provider)
    assert fixed.messages is history
    assert [p.code for p in fixed.problems_left] == ["empty_history"]


def test_finding_4_a_repair_that_drops_everything_says_so() -> None:
    fixed = toolmend.repair([assistant(None)], provider="mistral")
    assert fixed.messages == []
    assert [c.code for c in fixed.changes] == ["dropped_empty_message"]
    assert [p.code for p in fixed.problems_left] == ["empty_history"]
    # LiteLLM drops an assistant message without text for Anthropic: nothing left to send
    history = [system(), assistant(None)]
    assert [p.code for p in toolmend.check(history, provider="anthropic")] == ["empty_history"]


def test_finding_5_mistral_system_after_the_start_is_sent_as_user() -> None:
    history = [user(), assistant("hi"), system("Answer in French."), user("Weather?")]
    problems = toolmend.check(history, provider="mistral")
    assert [p.provider_error for p in problems] == [
        "Unexpected role 'system' after role 'assistant'"
    ]
    fixed = toolmend.repair(history, provider="mistral")
    assert fixed.messages[2] == {"role": "user", "content": "Answer in French."}
    assert [c.code for c in fixed.changes] == ["system_to_user"]
    assert judges.mistral_error(list(fixed.messages)) is None
    # after a tool result: user text then needs the assistant bridge
    history = [user(), calls(MISTRAL_ID), result(MISTRAL_ID), system("Be brief."), user()]
    fixed = toolmend.repair(history, provider="mistral")
    assert judges.mistral_error(list(fixed.messages)) is None
    assert toolmend.check(fixed.messages, provider="mistral") == []


def test_finding_6_gemma_2_system_folded_into_the_first_user_turn() -> None:
    history = [system("Be brief."), user("Weather?"), assistant("Sunny."), user("Thanks.")]
    gemma2 = "llamacpp__google-gemma-2-2b-it.jinja"
    assert judges.template_error(gemma2, history) == "TemplateError: System role not supported"
    fixed = toolmend.repair(history, provider="hf-template-strict")
    assert [m["role"] for m in fixed.messages] == ["user", "assistant", "user"]
    assert "Be brief." in fixed.messages[0]["content"]
    assert "Weather?" in fixed.messages[0]["content"]
    assert judges.template_error(gemma2, list(fixed.messages)) is None


def test_finding_6_hf_template_pairs_results() -> None:
    history = [user(), result("c9"), assistant("hi"), user()]
    gpt_oss = "llamacpp__openai-gpt-oss-120b.jinja"
    assert "no previous assistant message with a tool call" in (
        judges.template_error(gpt_oss, history) or ""
    )
    fixed = toolmend.repair(history, provider="hf-template")
    assert [c.code for c in fixed.changes] == ["dropped_orphan_result"]
    assert judges.template_error(gpt_oss, list(fixed.messages)) is None


def test_finding_7_groq_tool_message_with_null_content() -> None:
    history = [user(), calls("c1"), result("c1", text=None)]  # type: ignore[arg-type]
    assert [p.code for p in toolmend.check(history, provider="groq")] == ["content_null"]
    fixed = toolmend.repair(history, provider="groq")
    assert fixed.messages[2]["content"] == ""


@pytest.mark.parametrize("provider", ["openai", "deepseek", "anthropic"])
def test_finding_7_an_empty_id_is_rewritten_not_answered_with_an_empty_id(provider: str) -> None:
    history = [user(), calls(""), result(""), assistant("ok"), user()]
    problems = toolmend.check(history, provider=provider)
    if provider != "deepseek":  # DeepSeek pairs by count and does not read ids
        assert problems
    fixed = toolmend.repair(history, provider=provider)
    if provider == "deepseek":
        return
    new_id = fixed.messages[1]["tool_calls"][0]["id"]
    assert new_id
    assert fixed.messages[2]["tool_call_id"] == new_id
    assert toolmend.check(fixed.messages, provider=provider) == []


def test_finding_7_responses_empty_call_id_is_rewritten() -> None:
    items = [
        {"type": "message", "role": "user", "content": "Weather?"},
        {"type": "function_call", "call_id": "", "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "", "output": "21 C"},
    ]
    problems = toolmend.check(items, provider="openai-responses")
    assert "Missing required parameter: 'input[1].call_id'." in {p.provider_error for p in problems}
    fixed = toolmend.repair(items, provider="openai-responses")
    assert fixed.messages[1]["call_id"]
    assert fixed.messages[2]["call_id"] == fixed.messages[1]["call_id"]
    assert toolmend.check(fixed.messages, provider="openai-responses") == []


def _responses_parallel() -> list[dict[str, Any]]:
    return [
        {"type": "message", "role": "user", "content": "Weather in Paris and Rome?"},
        {"type": "function_call", "call_id": "a", "name": "get_weather", "arguments": "{}"},
        {"type": "function_call", "call_id": "b", "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "a", "output": "21 C"},
        {"type": "function_call_output", "call_id": "b", "output": "18 C"},
    ]


def test_finding_8_the_default_provider_follows_the_format() -> None:
    items = _responses_parallel()
    assert toolmend.check(items) == []
    assert toolmend.repair(items).messages is items
    assert toolmend.sanitize(items) is items
    # and for chat messages the default stays OpenAI's rules
    assert [p.code for p in toolmend.check([user(), calls("c1")])] == ["missing_result"]


@pytest.mark.parametrize("provider", ["openai-chat", "deepseek-chat", "deepseek-reasoner"])
def test_finding_8_a_chat_profile_refuses_a_responses_history(provider: str) -> None:
    """A chat profile named outright judges no Responses items (issue 32: a vendor's name, by
    contrast, follows the history's format to that vendor's Responses API)."""
    with pytest.raises(toolmend.InvalidHistoryError, match="openai-responses"):
        toolmend.repair(_responses_parallel(), provider=provider)
    with pytest.raises(toolmend.InvalidHistoryError, match="openai-responses"):
        toolmend.check(_responses_parallel(), provider=provider)


@pytest.mark.parametrize("provider", ["groq", "anthropic"])
def test_finding_8_a_vendor_without_a_responses_api_refuses_a_responses_history(
    provider: str,
) -> None:
    with pytest.raises(toolmend.InvalidHistoryError, match="serves no Responses API"):
        toolmend.repair(_responses_parallel(), provider=provider)
    with pytest.raises(toolmend.InvalidHistoryError, match="serves no Responses API"):
        toolmend.check(_responses_parallel(), provider=provider)


@pytest.mark.parametrize("provider", ["openai", "azure", "deepseek"])
def test_finding_8_a_vendor_name_follows_the_format_to_its_responses_api(provider: str) -> None:
    items = _responses_parallel()
    assert toolmend.check(items, provider=provider) == []
    assert toolmend.repair(items, provider=provider).messages is items


def _thinking(text: str = "Paris first.") -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": "sig=="}


def test_finding_7_final_assistant_thinking_with_thinking_off() -> None:
    history = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": [_thinking(), {"type": "text", "text": "Sunny"}]},
    ]
    problems = toolmend.check(history, provider="anthropic")
    assert [p.provider_error for p in problems] == [
        "messages.1.content.0: When thinking is disabled, an `assistant` message in the final "
        "position cannot contain `thinking`. To use thinking blocks, enable `thinking` in your "
        "request."
    ]
    fixed = toolmend.repair(history, provider="anthropic")
    assert fixed.messages[1]["content"] == [{"type": "text", "text": "Sunny"}]
    assert [c.code for c in fixed.changes] == ["dropped_thinking_block"]
    assert toolmend.check(fixed.messages, provider="anthropic") == []
    # thinking on, or not the final message: nothing to do
    assert toolmend.check(history, provider="anthropic-thinking") == []
    assert toolmend.check([*history, {"role": "user", "content": "ok"}], provider="anthropic") == []


def test_finding_7_anthropic_thinking_write_out_keeps_the_thinking_text() -> None:
    history = [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "21 C"}],
        },
    ]
    unthought = toolmend.repair(history, provider="anthropic-thinking")
    assert "flattened_tool_traffic" in {c.code for c in unthought.changes}
    # a thinking block that is not first is written out with the text, not dropped
    history[1]["content"].insert(1, _thinking("Check Paris."))
    fixed = toolmend.repair(history, provider="anthropic-thinking")
    written = str(fixed.messages)
    assert "Check Paris." in written
    assert toolmend.check(fixed.messages, provider="anthropic-thinking") == []
