"""The rescue (issue 34) through real LiteLLM: a history the strict server refuses with a rule
toolmend does not model is sent once more, rewritten, and accepted.

Each provider's error envelope (OpenAI, Anthropic, Gemini, Bedrock Converse) reaches LiteLLM,
which wraps it in ``litellm.BadRequestError``; the callback reads the provider's text out of it
and retries once, on every route that carries a history (``completion`` / ``acompletion``,
streamed or not, ``anthropic_messages``, ``responses`` / ``aresponses``) and through the
``Router``. The request that succeeded must still hold every real tool result, the caller's
list must be unchanged, and the negatives (context length, content policy, a 400 about
something else, the rescue turned off) must reach the server exactly once.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import asyncio
import copy
import json
import logging
import re
from collections.abc import Callable, Iterator
from typing import Any

import litellm
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolmend
from toolmend.integrations import litellm as hook
from toolmend.integrations import rescue as rescues
from toolmend.integrations.litellm import ToolMend
from toolmend.testing import StrictProviderServer

from support.event_loops import close_loop
from support.faults import patch_everywhere

Kwargs = dict[str, Any]
MODES = ("sync", "async", "sync+stream", "async+stream")
WEATHER = "RESULT-weather-Paris: 21 C and sunny"
TIME = "RESULT-time-Paris: 14:05"
UNKNOWN_RULE = "Tool use is not enabled for this deployment."
"""A refusal no profile holds: only the last resort (``flattened``) answers it."""

_AWS = {
    "aws_access_key_id": "AKIDTOOLMEND",
    "aws_secret_access_key": "toolmend-secret",
    "aws_region_name": "us-east-1",
}

DEPLOYMENTS: dict[str, Callable[[StrictProviderServer], Kwargs]] = {
    "openai": lambda s: {"model": "openai/gpt-4o", "api_base": s.openai_base_url, "api_key": "t"},
    "anthropic": lambda s: {
        "model": "anthropic/claude-sonnet-4-5",
        "api_base": s.base_url,
        "api_key": "t",
    },
    "gemini": lambda s: {
        "model": "gemini/gemini-2.0-flash",
        "api_base": s.base_url + "/v1beta",
        "api_key": "t",
    },
    "bedrock": lambda s: {
        "model": "bedrock/converse/anthropic.claude-3-5-sonnet-20240620-v1:0",
        "api_base": s.base_url,
        **_AWS,
    },
}


def _call(call_id: str, name: str) -> dict[str, Any]:
    arguments = json.dumps({"city": "Paris"})
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def chat_history(first: str = "call_1", second: str = "call_2") -> list[dict[str, Any]]:
    """A valid history with two tool exchanges (every profile accepts it)."""
    return [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [_call(first, "get_weather")]},
        {"role": "tool", "tool_call_id": first, "content": WEATHER},
        {"role": "user", "content": "And the time?"},
        {"role": "assistant", "content": None, "tool_calls": [_call(second, "get_time")]},
        {"role": "tool", "tool_call_id": second, "content": TIME},
        {"role": "user", "content": "Thanks, summarize."},
    ]


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": "Look something up for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
    for name in ("get_weather", "get_time")
]


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """One event loop for every async call, so LiteLLM's cached async clients stay usable."""
    running = asyncio.new_event_loop()
    yield running
    close_loop(running)


@pytest.fixture
def server() -> Iterator[StrictProviderServer]:
    with StrictProviderServer() as running:
        yield running


@pytest.fixture(autouse=True)
def callbacks() -> Iterator[None]:
    """A plain ``ToolMend()`` unless a test installs its own."""
    saved = list(litellm.callbacks)
    litellm.callbacks = [ToolMend()]
    yield
    litellm.callbacks = saved


def run(loop: asyncio.AbstractEventLoop, mode: str, **kwargs: Any) -> Any:
    """``litellm.completion`` or ``acompletion`` in ``mode``; a stream is read to the end."""
    stream = mode.endswith("+stream")
    if mode.startswith("sync"):
        response = litellm.completion(stream=stream, **kwargs)
        if stream:
            list(response)
        return response

    async def go() -> Any:
        response = await litellm.acompletion(stream=stream, **kwargs)
        if stream:
            async for _ in response:
                pass
        return response

    return loop.run_until_complete(go())


def rescued_rule(response: Any) -> str | None:
    record = response._hidden_params.get(hook.RECORD_KEY)
    return record["rescued"]["rule"] if isinstance(record, dict) and "rescued" in record else None


def assert_rescued(server: StrictProviderServer, *contents: str) -> None:
    """Exactly two requests: the refused one and the accepted retry, which holds ``contents``."""
    statuses = [(r.status, r.refused) for r in server.requests]
    assert statuses == [(400, True), (200, False)], statuses
    sent = json.dumps(server.requests[-1].body)
    for content in contents:
        assert json.dumps(content)[1:-1] in sent, content


# --- the last resort on every provider and call mode --------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("provider", sorted(DEPLOYMENTS))
def test_an_unknown_rule_is_rescued_by_flattening_in_every_mode(
    server: StrictProviderServer,
    loop: asyncio.AbstractEventLoop,
    provider: str,
    mode: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server.refuse(UNKNOWN_RULE)
    messages = chat_history()
    before = copy.deepcopy(messages)
    with caplog.at_level(logging.WARNING, logger="toolmend"):
        response = run(loop, mode, messages=messages, tools=TOOLS, **DEPLOYMENTS[provider](server))
    assert messages == before
    assert_rescued(server, WEATHER, TIME)
    assert rescued_rule(response) == "flattened"
    lines = [r.getMessage() for r in caplog.records if "toolmend rescued" in r.getMessage()]
    assert len(lines) == 1, lines
    assert "after a 400: flattened" in lines[0]
    assert "Tool%20use%20is%20not%20enabled" in lines[0]  # the provider's text, not LiteLLM's
    assert WEATHER not in lines[0] and "RESULT" not in lines[0]


def test_the_retry_that_fails_too_raises_its_error_after_two_requests(
    server: StrictProviderServer, loop: asyncio.AbstractEventLoop
) -> None:
    server.refuse(UNKNOWN_RULE, when="always")
    with pytest.raises(litellm.BadRequestError, match="Tool use is not enabled"):
        run(loop, "async", messages=chat_history(), **DEPLOYMENTS["openai"](server))
    assert [r.refused for r in server.requests] == [True, True]


# --- a rule toolmend knows, which the hook's profile did not ask for ---------------------------


@pytest.mark.parametrize("mode", ["sync", "async+stream"])
def test_a_known_rule_of_another_profile_is_applied(
    server: StrictProviderServer, loop: asyncio.AbstractEventLoop, mode: str
) -> None:
    """The hook believes it talks to OpenAI; the server is Mistral, whose 400 about call ids
    names a rule the ``mistral`` profile holds: the retry is that profile's repair (ids
    renamed, every result kept), not the last resort."""
    litellm.callbacks = [ToolMend(provider="openai")]
    messages = chat_history()
    response = run(
        loop,
        mode,
        messages=messages,
        model="mistral/mistral-large-latest",
        api_base=server.base_url_for("mistral") + "/v1",
        api_key="t",
    )
    first, last = server.requests
    assert first.status == 400 and not first.refused and first.problems
    assert last.accepted, (last.status, last.error)
    record = response._hidden_params[hook.RECORD_KEY]
    assert record["rescued"]["rule"] == first.problems[0].code
    assert record["rescued"]["profile"].startswith("mistral")
    ids = [call["id"] for m in last.history for call in m.get("tool_calls") or ()]
    assert len(ids) == 2 and all(re.fullmatch("[A-Za-z0-9]{9}", i) for i in ids), ids
    results = [m["content"] for m in last.history if m["role"] == "tool"]
    assert results == [WEATHER, TIME]
    assert messages == chat_history()


# --- what is never retried --------------------------------------------------------------------

NEGATIVES = {
    "context_length": (
        "This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 131072 tokens (130000 in the messages, 1072 in the functions). Please "
        "reduce the length of the messages or functions."
    ),
    "content_policy": (
        "Invalid prompt: your prompt was flagged as potentially violating our usage policy. "
        "Please try again with a different prompt."
    ),
    "unrelated": "Invalid value for 'temperature': expected a number between 0 and 2.",
    "anthropic_too_long": "prompt is too long: 215321 tokens > 200000 maximum",
}


@pytest.mark.parametrize("text", sorted(NEGATIVES))
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_error_not_about_tool_history_is_not_retried(
    server: StrictProviderServer, loop: asyncio.AbstractEventLoop, provider: str, text: str
) -> None:
    server.refuse(NEGATIVES[text])
    with pytest.raises(litellm.BadRequestError) as raised:
        run(loop, "async", messages=chat_history(), **DEPLOYMENTS[provider](server))
    assert NEGATIVES[text][:40] in str(raised.value)
    assert [r.refused for r in server.requests] == [True]


def test_an_error_other_than_400_is_not_retried(
    server: StrictProviderServer, loop: asyncio.AbstractEventLoop
) -> None:
    """LiteLLM raises its ``BadRequestError`` for a 422 too, with the real status on it."""
    server.refuse(UNKNOWN_RULE, status=422)
    with pytest.raises(litellm.BadRequestError) as raised:
        run(loop, "sync", messages=chat_history(), **DEPLOYMENTS["openai"](server))
    assert getattr(raised.value, "status_code", None) == 422
    assert len(server.requests) == 1


@pytest.mark.parametrize("switch", ["option", "environment"])
def test_rescue_off_lets_the_providers_error_through(
    server: StrictProviderServer,
    loop: asyncio.AbstractEventLoop,
    monkeypatch: pytest.MonkeyPatch,
    switch: str,
) -> None:
    if switch == "option":
        litellm.callbacks = [ToolMend(rescue=False)]
    else:
        monkeypatch.setenv(rescues.ENV_RESCUE, "0")
    server.refuse(UNKNOWN_RULE)
    for mode in ("sync", "async+stream"):
        with pytest.raises(litellm.BadRequestError, match="Tool use is not enabled"):
            run(loop, mode, messages=chat_history(), **DEPLOYMENTS["anthropic"](server))
    assert [r.refused for r in server.requests] == [True, True]  # one per call


@pytest.mark.parametrize("mode", ["sync", "async+stream"])
def test_the_report_policy_never_retries(
    server: StrictProviderServer, loop: asyncio.AbstractEventLoop, mode: str
) -> None:
    """``policy="report"`` asks toolmend to change nothing on its own: the rescue too."""
    litellm.callbacks = [ToolMend(policy="report")]
    server.refuse(UNKNOWN_RULE)
    with pytest.raises(litellm.BadRequestError, match="Tool use is not enabled"):
        run(loop, mode, messages=chat_history(), **DEPLOYMENTS["openai"](server))
    assert [r.refused for r in server.requests] == [True]


def test_a_request_accepted_first_time_is_sent_once_and_never_rescued(
    server: StrictProviderServer, loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rescue adds nothing to a request that succeeds: one request, no rescue work at all
    (``toolmend.rescue`` would raise if it ran), no rescue in the record."""
    asked: list[object] = []

    def never(*args: Any, **kwargs: Any) -> Any:
        asked.append(args)
        raise AssertionError("rescue ran for an accepted request")

    patch_everywhere(monkeypatch, "rescue", never)
    for mode in MODES:
        response = run(loop, mode, messages=chat_history(), **DEPLOYMENTS["openai"](server))
        assert rescued_rule(response) is None
    assert [r.status for r in server.requests] == [200] * len(MODES)
    assert asked == []


def test_a_toolmend_failure_in_the_rescue_raises_the_providers_error(
    server: StrictProviderServer, loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("injected fault inside toolmend")

    patch_everywhere(monkeypatch, "rescue", broken)
    server.refuse(UNKNOWN_RULE)
    with pytest.raises(litellm.BadRequestError, match="Tool use is not enabled"):
        run(loop, "sync", messages=chat_history(), **DEPLOYMENTS["openai"](server))
    assert len(server.requests) == 1


# --- the other routes: anthropic_messages (Claude Code), responses (Codex), the Router ----------


def anthropic_history() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Fix the failing test."},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading the test."},
                {"type": "tool_use", "id": "toolu_01Read", "name": "Read", "input": {"f": "t.py"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_01Read", "content": WEATHER}],
        },
        {"role": "user", "content": "Now fix it."},
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize(
    ("model", "base"),
    [("anthropic/claude-sonnet-4-5", "base_url"), ("openai/gpt-4.1", "openai_base_url")],
    ids=["claude", "gpt-translated"],
)
def test_anthropic_messages_is_rescued(
    server: StrictProviderServer,
    loop: asyncio.AbstractEventLoop,
    model: str,
    base: str,
    stream: bool,
) -> None:
    """Claude Code's route, to Claude and to GPT (LiteLLM translates it to its Responses
    route, a nested call the rescue leaves to the outer one: still two requests)."""
    server.refuse(UNKNOWN_RULE)
    messages = anthropic_history()
    before = copy.deepcopy(messages)

    async def go() -> Any:
        response = await litellm.anthropic_messages(
            messages=messages,
            max_tokens=64,
            api_key="t",
            model=model,
            api_base=getattr(server, base),
            stream=stream,
        )
        if stream:
            return [event async for event in response]  # type: ignore[union-attr]
        return response

    response = loop.run_until_complete(go())
    assert messages == before
    assert_rescued(server, WEATHER)
    if stream:
        assert response
    else:
        assert isinstance(response, dict) and response["type"] == "message"


def responses_input() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "List the project, then the time."},
        {"type": "function_call", "call_id": "call_ls", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_ls", "output": WEATHER},
        {"type": "function_call", "call_id": "call_tm", "name": "time", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_tm", "output": TIME},
        {"role": "user", "content": "Summarize."},
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("sync", [True, False], ids=["responses", "aresponses"])
def test_responses_is_rescued(
    server: StrictProviderServer, loop: asyncio.AbstractEventLoop, sync: bool, stream: bool
) -> None:
    server.refuse(UNKNOWN_RULE)
    items = responses_input()
    before = copy.deepcopy(items)
    params = {"model": "openai/gpt-4.1", "api_base": server.openai_base_url, "api_key": "t"}
    if sync:
        response = litellm.responses(input=items, stream=stream, **params)
        events = list(response) if stream else []  # type: ignore[arg-type]
    else:

        async def go() -> tuple[Any, list[Any]]:
            got = await litellm.aresponses(input=items, stream=stream, **params)
            return got, [event async for event in got] if stream else []  # type: ignore[union-attr]

        response, events = loop.run_until_complete(go())
    assert items == before
    assert_rescued(server, WEATHER, TIME)
    if stream:
        assert events
    else:
        assert getattr(response, "status", None) == "completed"


def test_router_attempt_is_rescued_once(
    server: StrictProviderServer, loop: asyncio.AbstractEventLoop
) -> None:
    router = litellm.Router(
        model_list=[{"model_name": "claude", "litellm_params": DEPLOYMENTS["anthropic"](server)}],
        num_retries=2,
    )
    server.refuse(UNKNOWN_RULE)
    response = loop.run_until_complete(router.acompletion(model="claude", messages=chat_history()))
    assert_rescued(server, WEATHER, TIME)
    assert rescued_rule(response) == "flattened"


@pytest.mark.parametrize("sync", [True, False], ids=["completion", "acompletion"])
def test_router_gemini_stream_opened_by_the_router_is_rescued(
    server: StrictProviderServer, loop: asyncio.AbstractEventLoop, sync: bool
) -> None:
    """The Router opens a Gemini stream (whose request LiteLLM makes at the first chunk)
    itself, inside its attempt: the 400 comes from there and is rescued there."""
    router = litellm.Router(
        model_list=[{"model_name": "g", "litellm_params": DEPLOYMENTS["gemini"](server)}]
    )
    server.refuse(UNKNOWN_RULE)
    if sync:
        chunks = list(router.completion(model="g", messages=chat_history(), stream=True))
    else:

        async def go() -> list[Any]:
            stream = await router.acompletion(model="g", messages=chat_history(), stream=True)
            return [chunk async for chunk in stream]

        chunks = loop.run_until_complete(go())
    assert chunks
    assert_rescued(server, WEATHER, TIME)


@pytest.mark.parametrize("sync", [True, False], ids=["completion", "acompletion"])
def test_router_with_retries_sends_an_unrelated_400_once(
    server: StrictProviderServer, loop: asyncio.AbstractEventLoop, sync: bool
) -> None:
    """Neither toolmend nor the Router's own retries (``num_retries``) send a 400 again."""
    router = litellm.Router(
        model_list=[{"model_name": "claude", "litellm_params": DEPLOYMENTS["anthropic"](server)}],
        num_retries=2,
    )
    server.refuse(NEGATIVES["unrelated"], when="always")
    call: Callable[[], Any] = (
        (lambda: router.completion(model="claude", messages=chat_history()))
        if sync
        else lambda: loop.run_until_complete(
            router.acompletion(model="claude", messages=chat_history())
        )
    )
    with pytest.raises(litellm.BadRequestError):
        call()
    assert len(server.requests) == 1


class WrappedError(Exception):
    """An error as LiteLLM raises it: a status and only a text (no ``body``)."""

    status_code = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message: str | bytes = message


def test_provider_error_reads_the_providers_text_out_of_litellms_error() -> None:
    wrapped = (
        "litellm.BadRequestError: AnthropicException - "
        '{"type": "error", "error": {"type": "invalid_request_error", "message": "m1"}}'
    )
    streamed = (
        "litellm.BadRequestError: Vertex_ai_betaException BadRequestError - "
        'b\'{"error": {"code": 400, "message": "m2", "status": "INVALID_ARGUMENT"}}\''
    )
    assert rescues.provider_error(WrappedError(wrapped)) == (400, "m1")
    assert rescues.provider_error(WrappedError(streamed)) == (400, "m2")
    assert rescues.provider_error(WrappedError("plain - {not json")) == (400, "plain - {not json")
    raw = WrappedError("x")
    raw.message = b'{"error": {"code": 400, "message": "m3"}}'
    assert rescues.provider_error(raw) == (400, "m3")  # an error LiteLLM did not map
    assert toolmend.rescue(chat_history(), "m1") is None  # not about tool history


ENVELOPES: dict[str, Callable[[str], object]] = {
    "openai": lambda m: {"error": {"message": m, "type": "invalid_request_error", "code": None}},
    "anthropic": lambda m: {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": m},
        "request_id": "req_1",
    },
    "gemini": lambda m: {"error": {"code": 400, "message": m, "status": "INVALID_ARGUMENT"}},
    "bedrock": lambda m: {"message": m},
}


@settings(max_examples=200, deadline=None)
@given(
    message=st.text(min_size=1, max_size=300),
    envelope=st.sampled_from(sorted(ENVELOPES)),
    streamed=st.booleans(),
    prefix=st.sampled_from(["AnthropicException", "GeminiException BadRequestError", "X"]),
)
def test_provider_error_finds_the_message_in_every_wrapping(
    message: str, envelope: str, streamed: bool, prefix: str
) -> None:
    """Whatever the provider's message holds, LiteLLM's text of its error (the body as JSON,
    or the repr of a streamed body's bytes) gives it back exactly."""
    quoted = json.dumps(ENVELOPES[envelope](message))
    if streamed:
        quoted = repr(quoted.encode())
    error = WrappedError(f"litellm.BadRequestError: {prefix} - {quoted}")
    assert rescues.provider_error(error) == (400, message)


def test_install_skips_an_entry_point_this_litellm_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    """An older LiteLLM without one of the entry points: the others are wrapped all the same."""
    hook.uninstall()
    monkeypatch.delattr(litellm, "anthropic_messages")
    hook.install()
    assert "litellm.anthropic_messages" not in hook._handles
    assert "litellm.acompletion" in hook._handles
    monkeypatch.undo()
    hook.install()
    assert "litellm.anthropic_messages" in hook._handles
