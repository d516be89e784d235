"""``toolmend.rescue``: the history to send once more after a provider's 400 about tool history.

Held here: which errors are retried (about tool history, and nothing no rewrite cures), the
known-rule path (another profile's rule, named by its error text, repaired where the hook's
profile did not ask), the last resort (tool exchanges written as text: the pointed ones, else
all), and the invariants over generated histories in every block and message format: the
caller's history is never changed, every call's name and arguments and every result's content
are still in the retry verbatim, the hook's profile accepts the retry, and a second rescue of
the retry has nothing left to do. The hooks' use of it is held by the ``test_rescue_*`` files.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolmend
from toolmend._api import read_history

from support.block_histories import convert
from support.histories import valid_conversations
from support.line_count import lines_executed

UNKNOWN = "This deployment cannot take tool messages in the conversation history."
"""A tool-history refusal no profile holds (the last resort answers it)."""

NOT_RETRIED = [
    # context length (OpenAI; Anthropic; Gemini)
    "This model's maximum context length is 128000 tokens. However, your messages resulted in "
    "130511 tokens (130000 in the messages, 511 in the functions). Please reduce the length of "
    "the messages or functions.",
    "prompt is too long: 212345 tokens > 200000 maximum",
    "The input token count (1048577) exceeds the maximum number of tokens allowed (1048576).",
    # content policy
    "Invalid prompt: your prompt was flagged as potentially violating our usage policy. Please "
    "try again with a different prompt.",
    # authentication, rate limits
    "Incorrect API key provided: sk-abc. You can find your API key at "
    "https://platform.openai.com/account/api-keys.",
    "API key not valid. Please pass a valid API key.",
    "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM).",
    # a 400 about something else
    "Invalid value for 'temperature': 3 is greater than the maximum of 2.",
    "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
    "'max_completion_tokens' instead.",
]

WEATHER = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}


def _history() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [WEATHER]},
        {"role": "tool", "tool_call_id": "call_1", "content": "21 C and sunny"},
        {"role": "assistant", "content": "It is 21 C."},
        {"role": "user", "content": "And Rome?"},
        {
            "role": "assistant",
            "content": "Looking.",
            "tool_calls": [
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city": "Rome"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_2", "content": "25 C"},
    ]


def _texts(value: Any) -> list[str]:
    """Every string in ``value``, however deep."""
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return found


def _holds(output: Any, piece: str) -> bool:
    return any(piece in text for text in _texts(output))


def _traffic(history: Any, format: str) -> int:
    skeleton = read_history(history, format)[1]
    return len(skeleton.calls) + len(skeleton.results)


# --- which errors ------------------------------------------------------------------------------


@pytest.mark.parametrize("error", NOT_RETRIED)
def test_an_error_no_rewrite_cures_is_not_retried(error: str) -> None:
    assert toolmend.rescue(_history(), error) is None


def test_a_context_length_error_that_quotes_tool_calls_is_still_not_retried() -> None:
    error = "maximum context length exceeded: the tool_calls of messages[2] are too long"
    assert toolmend.rescue(_history(), error) is None


def test_the_error_must_be_text() -> None:
    with pytest.raises(TypeError, match="provider's message"):
        toolmend.rescue(_history(), {"message": UNKNOWN})  # type: ignore[arg-type]


def test_a_history_without_tool_traffic_has_nothing_to_rescue() -> None:
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert toolmend.rescue(history, UNKNOWN) is None


# --- the last resort ---------------------------------------------------------------------------


def test_unknown_tool_error_writes_every_exchange_as_text() -> None:
    history = _history()
    before = copy.deepcopy(history)
    retry = toolmend.rescue(history, UNKNOWN)
    assert retry is not None and retry.rule == "flattened" and retry.profile == "openai"
    assert history == before
    assert [m["role"] for m in retry.messages] == [
        "system", "user", "assistant", "user", "assistant", "user", "assistant", "user"
    ]  # fmt: skip
    assert retry.messages[2]["content"] == "[tool call call_1: weather({})]"
    assert retry.messages[3]["content"] == "[tool result call_1 (tool)]\n21 C and sunny"
    assert retry.messages[6]["content"] == 'Looking.\n[tool call call_2: weather({"city": "Rome"})]'
    assert [c.index for c in retry.changes] == [2, 3, 6, 7]
    assert {c.code for c in retry.changes} == {"flattened_tool_traffic"}
    assert toolmend.check(retry.messages) == []


def test_a_quoted_call_id_flattens_that_exchange_only() -> None:
    retry = toolmend.rescue(_history(), "tool call call_2 cannot be replayed on this model")
    assert retry is not None and retry.pointed == ("call_2",)
    assert retry.messages[2]["tool_calls"] == [WEATHER]  # the other exchange is kept
    assert retry.messages[3]["role"] == "tool"
    assert "tool_calls" not in retry.messages[6] and retry.messages[7]["role"] == "user"
    assert [c.index for c in retry.changes] == [6, 7]


def test_a_quoted_index_flattens_the_exchange_there() -> None:
    retry = toolmend.rescue(_history(), "messages.7: this tool_result block cannot be used here")
    assert retry is not None and retry.pointed == ("index 7",)
    assert retry.messages[2]["tool_calls"] == [WEATHER]
    assert [c.index for c in retry.changes] == [6, 7]


def test_a_flattened_message_takes_its_other_exchanges_along() -> None:
    """The quoted call shares its message with another call: both results become text, so no
    call is left without its result."""
    history = _history()[:4]
    history[2] = {**history[2], "tool_calls": [WEATHER, {**WEATHER, "id": "call_9"}]}
    history.append({"role": "tool", "tool_call_id": "call_9", "content": "9 C"})
    retry = toolmend.rescue(history, "tool call call_1 is not allowed")
    assert retry is not None
    assert _traffic(retry.messages, "openai") == 0
    assert _holds(retry.messages, "9 C") and _holds(retry.messages, "21 C and sunny")


def test_anthropic_blocks_are_flattened_by_their_own_writer() -> None:
    history = [
        {"role": "user", "content": "w?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "checking"},
                {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {"c": "P"}},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "21"}]},
    ]  # fmt: skip
    error = (
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
        "toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the "
        "next message."
    )
    retry = toolmend.rescue(history, error, provider="anthropic")
    # the profile finds nothing wrong, so the known rule does not apply: the exchange is text
    assert retry is not None and retry.rule == "flattened" and retry.pointed == ("toolu_1",)
    assert retry.messages[1]["content"] == [
        {"type": "text", "text": 'checking\n[tool call toolu_1: w({"c": "P"})]'}
    ]
    assert retry.messages[2]["content"] == [{"type": "text", "text": "[tool result toolu_1]\n21"}]


# --- a known rule -------------------------------------------------------------------------------


def test_another_profiles_rule_is_repaired_where_the_error_names_it() -> None:
    """Sent as OpenAI accepts it, refused by a Mistral server: its error text is the Mistral
    profile's ``role_order`` rule, so the retry is Mistral's repair (bridge and ids)."""
    history = [*_history()[:4], {"role": "user", "content": "More?"}]
    retry = toolmend.rescue(history, "Unexpected role 'user' after role 'tool'", provider="openai")
    assert retry is not None and (retry.rule, retry.profile) == ("role_order", "mistral")
    assert toolmend.check(retry.messages, provider="mistral") == []
    assert toolmend.check(retry.messages, provider="openai") == []
    assert _holds(retry.messages, "21 C and sunny")


def test_a_known_rule_the_history_does_not_break_falls_to_the_last_resort() -> None:
    retry = toolmend.rescue(_history(), "Unexpected role 'user' after role 'tool'")
    assert retry is not None and retry.rule == "flattened"


def test_a_known_rule_through_a_gateway_prefix_and_a_cut_closing_sentence() -> None:
    history = [*_history()[:4], {"role": "user", "content": "More?"}]
    error = (
        "litellm.BadRequestError: MistralException - "
        '{"object":"error","message":"Unexpected role \'user\' after role \'tool\'"}'
    )
    retry = toolmend.rescue(history, error, provider="openai")
    assert retry is not None and retry.rule == "role_order"


# --- properties --------------------------------------------------------------------------------

FORMATS = {
    "openai": "openai",
    "anthropic": "anthropic",
    "gemini": "gemini",
    "bedrock": "bedrock",
}


def _contents(history: list[dict[str, Any]]) -> list[str]:
    """Every tool result content and call name and argument value of an OpenAI history."""
    pieces: list[str] = []
    for message in history:
        if message.get("role") == "tool":
            pieces.append(message["content"])
        for call in message.get("tool_calls") or ():
            pieces.append(call["function"]["name"])
            pieces.extend(_texts(json.loads(call["function"]["arguments"] or "{}")))
    return pieces


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=valid_conversations(id_style="any"), format=st.sampled_from(sorted(FORMATS)))
def test_the_last_resort_keeps_everything_and_is_accepted(
    history: list[dict[str, Any]], format: str
) -> None:
    sent = history if format == "openai" else convert(history, format)
    if _traffic(sent, format) == 0:
        return
    before = copy.deepcopy(sent)
    retry = toolmend.rescue(sent, UNKNOWN, provider=FORMATS[format], format=format)
    assert retry is not None and retry.rule == "flattened"
    assert sent == before  # the caller's history is untouched
    assert _traffic(retry.messages, format) == 0
    for piece in _contents(history):
        assert _holds(retry.messages, piece), piece
    assert toolmend.check(retry.messages, provider=FORMATS[format], format=format) == []
    # idempotent: nothing is left to rewrite
    assert toolmend.rescue(retry.messages, UNKNOWN, provider=FORMATS[format], format=format) is None


@settings(max_examples=40, deadline=None)
@given(history=valid_conversations(id_style="openai"), pick=st.integers(0, 10**6))
def test_a_quoted_id_leaves_every_other_exchange_as_it_was(
    history: list[dict[str, Any]], pick: int
) -> None:
    ids = [call["id"] for m in history for call in m.get("tool_calls") or ()]
    if not ids:
        return
    quoted = ids[pick % len(ids)]
    retry = toolmend.rescue(history, f"tool call {quoted} is refused by this server")
    assert retry is not None and retry.pointed == (quoted,)
    kept = {call["id"] for m in retry.messages for call in m.get("tool_calls") or ()}
    holder = next(m for m in history if quoted in {c["id"] for c in m.get("tool_calls") or ()})
    assert kept == set(ids) - {c["id"] for c in holder["tool_calls"]}
    for piece in _contents(history):
        assert _holds(retry.messages, piece)
    assert toolmend.check(retry.messages) == []


# --- cost --------------------------------------------------------------------------------------


def _one_id_everywhere(n: int) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for _ in range(n):
        history.append({"role": "assistant", "content": None, "tool_calls": [WEATHER]})
        history.append({"role": "tool", "tool_call_id": "call_1", "content": "r"})
    return history


@pytest.mark.slow
@pytest.mark.parametrize(
    "error", [UNKNOWN, "tool call call_1 is refused", "messages.5: bad tool_result " * 50]
)
def test_work_grows_about_linearly_with_one_id_everywhere(error: str) -> None:
    lines_executed(lambda: toolmend.rescue(_one_id_everywhere(4), error))
    small, large = _one_id_everywhere(100), _one_id_everywhere(400)
    ratio = lines_executed(lambda: toolmend.rescue(large, error)) / lines_executed(
        lambda: toolmend.rescue(small, error)
    )
    assert ratio < 6, ratio


# --- the hooks' reader and caller ---------------------------------------------------------------


class _RefusedError(Exception):
    """An SDK-like error: a status and a message (what ``provider_error`` reads)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status_code = status
        self.message = message


def test_a_history_the_hook_could_not_read_is_not_rescued_and_logs_no_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from toolmend.integrations.rescue import retry_history

    unreadable = [{"role": "tool", "tool_call_id": 7, "content": "x"}]
    with caplog.at_level("DEBUG", logger="toolmend"):
        found = retry_history(unreadable, _RefusedError(UNKNOWN), provider="openai", source="t")
    assert found is None and not [r for r in caplog.records if r.exc_info]


def test_a_body_nested_past_the_interpreters_limit_is_read_as_text() -> None:
    from toolmend.integrations.rescue import provider_error

    error = _RefusedError("litellm.BadRequestError: X - " + "[" * 4000)
    del error.message
    assert provider_error(error) == (400, str(error))


def test_a_rule_run_only_by_a_variant_is_repaired_by_that_variant() -> None:
    """Gemini 3's thought-signature text is held by ``gemini`` among its rules not run; the
    profile that runs it, ``gemini-3``, repairs it (a signature, not the exchange as text)."""
    contents = [
        {"role": "user", "parts": [{"text": "w?"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "w", "args": {"c": "P"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "w", "response": {"t": 21}}}]},
    ]
    error = (
        "Function call is missing a thought_signature in functionCall parts. This is required "
        "for tools to work correctly, and missing thought_signature may lead to degraded model "
        "performance. Additional data, function call `default_api:w` , position 2. Please refer "
        "to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
    )
    retry = toolmend.rescue(contents, error, provider="gemini")
    assert retry is not None
    assert (retry.rule, retry.profile) == ("thought_signature_missing", "gemini-3")
    assert toolmend.check(retry.messages, provider="gemini-3") == []
    assert "functionCall" in retry.messages[1]["parts"][0]


def test_an_error_raised_from_the_sdks_error_is_read_through_its_cause() -> None:
    """A framework's own error without a status, raised from the SDK's (LangChain's Google
    chat model): the SDK's status and message are read; a chain with none has none."""
    from toolmend.integrations.rescue import provider_error

    sdk = _RefusedError(UNKNOWN)
    wrapped = RuntimeError("the chat model failed")
    wrapped.__cause__ = sdk
    assert provider_error(wrapped) == (400, UNKNOWN)
    assert provider_error(RuntimeError("no status")) is None
