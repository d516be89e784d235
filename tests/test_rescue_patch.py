"""The rescue in the raw-SDK patches (issue 34): one retry after a provider's 400 about tools.

Every test goes through the real SDKs (openai, anthropic, google-genai) against the strict
provider server. The server plays a rule toolmend does not know (``refuse=``): a history the
profile accepts is refused with a provider's text, in that route's own error envelope. Through
every way each SDK sends (sync and async, ``stream=True``, the stream managers and helpers,
``with_raw_response``, beta), the request then ends in a 200 on exactly one retry, every real
tool result still in the request that succeeded, the caller's history unchanged. Errors a
rewrite cannot cure, ``rescue=False``, ``TOOLMEND_RESCUE=0`` and a second refusal reach the
caller as the SDK raised them.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

import toolmend
import toolmend.integrations.patch as tm
from toolmend.integrations import budget
from toolmend.testing import Refusal

from support.faults import patch_everywhere

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
genai = pytest.importorskip("google.genai")

UNKNOWN = "Tool call history is not supported by this deployment; send tool results as text."
"""A refusal no profile holds the text of, about tool history: the rescue flattens."""

AGAIN = "Tool results must be plain text for this deployment (second refusal)."
"""What a server that refuses the retry too says the second time."""

NOT_CURABLE = {
    "context length": (
        "This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 130532 tokens (129800 in the messages, 732 in the tool_calls). Please "
        "reduce the length of the messages or functions."
    ),
    "content policy": (
        "Your request was rejected as a result of our safety system. Your prompt may contain "
        "text that is not allowed by our safety system."
    ),
    "api key": "API key not valid. Please pass a valid API key.",
    "unrelated 400": (
        "Invalid value for 'temperature': expected a decimal between 0 and 2, but got 3.5 instead."
    ),
}
"""Real providers' texts for 400s no rewritten history cures (never retried)."""

RESULTS = ("21 C and sunny in Paris (RESULT-A)", "Rain expected at 16:00 (RESULT-B)")
"""The tool results' contents: each must be in the request that succeeded."""

CHAT = [
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "get_forecast", "arguments": '{"city": "Paris"}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": RESULTS[0]},
    {"role": "tool", "tool_call_id": "call_2", "content": RESULTS[1]},
    {"role": "user", "content": "And tomorrow?"},
]

RESPONSES = [
    {"role": "user", "content": "Weather in Paris?"},
    {
        "type": "function_call",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
    },
    {"type": "function_call_output", "call_id": "call_1", "output": RESULTS[0]},
    {
        "type": "function_call",
        "call_id": "call_2",
        "name": "get_forecast",
        "arguments": '{"city": "Paris"}',
    },
    {"type": "function_call_output", "call_id": "call_2", "output": RESULTS[1]},
    {"role": "user", "content": "And tomorrow?"},
]

ANTHROPIC = [
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me check."},
            {
                "type": "tool_use",
                "id": "toolu_01",
                "name": "get_weather",
                "input": {"city": "Paris"},
            },
            {
                "type": "tool_use",
                "id": "toolu_02",
                "name": "get_forecast",
                "input": {"city": "Paris"},
            },
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01", "content": RESULTS[0]},
            {"type": "tool_result", "tool_use_id": "toolu_02", "content": RESULTS[1]},
        ],
    },
    {"role": "assistant", "content": "Sunny now, rain later."},
    {"role": "user", "content": "And tomorrow?"},
]

GEMINI = [
    {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
    {
        "role": "model",
        "parts": [
            {"function_call": {"name": "get_weather", "args": {"city": "Paris"}}},
            {"function_call": {"name": "get_forecast", "args": {"city": "Paris"}}},
        ],
    },
    {
        "role": "user",
        "parts": [
            {"function_response": {"name": "get_weather", "response": {"result": RESULTS[0]}}},
            {"function_response": {"name": "get_forecast", "response": {"result": RESULTS[1]}}},
        ],
    },
    {"role": "model", "parts": [{"text": "Sunny now, rain later."}]},
    {"role": "user", "parts": [{"text": "And tomorrow?"}]},
]

OPENAI_MODEL = "gpt-4o"
ANTHROPIC_ARGS: dict[str, Any] = {"model": "claude-sonnet-5-5", "max_tokens": 64}
GEMINI_MODEL = "gemini-2.5-flash"


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("TOOLMEND_RESCUE", raising=False)
    tm.unpatch()
    yield
    tm.unpatch()


# --- the call paths: (client, history) -> None, one per way each SDK sends -------------------


def _chat_create(c: Any, h: Any) -> None:
    c.chat.completions.create(model=OPENAI_MODEL, messages=h)


def _chat_create_stream(c: Any, h: Any) -> None:
    for _ in c.chat.completions.create(model=OPENAI_MODEL, messages=h, stream=True):
        pass


def _chat_stream_helper(c: Any, h: Any) -> None:
    with c.chat.completions.stream(model=OPENAI_MODEL, messages=h) as stream:
        stream.get_final_completion()


def _chat_parse(c: Any, h: Any) -> None:
    c.chat.completions.parse(model=OPENAI_MODEL, messages=h)


def _chat_raw_create(c: Any, h: Any) -> None:
    c.chat.completions.with_raw_response.create(model=OPENAI_MODEL, messages=h).parse()


def _chat_streaming_response(c: Any, h: Any) -> None:
    with c.chat.completions.with_streaming_response.create(
        model=OPENAI_MODEL, messages=h
    ) as response:
        response.read()


async def _achat_create(c: Any, h: Any) -> None:
    await c.chat.completions.create(model=OPENAI_MODEL, messages=h)


async def _achat_create_stream(c: Any, h: Any) -> None:
    async for _ in await c.chat.completions.create(model=OPENAI_MODEL, messages=h, stream=True):
        pass


async def _achat_stream_helper(c: Any, h: Any) -> None:
    async with c.chat.completions.stream(model=OPENAI_MODEL, messages=h) as stream:
        await stream.get_final_completion()


async def _achat_parse(c: Any, h: Any) -> None:
    await c.chat.completions.parse(model=OPENAI_MODEL, messages=h)


async def _achat_raw_create(c: Any, h: Any) -> None:
    response = await c.chat.completions.with_raw_response.create(model=OPENAI_MODEL, messages=h)
    response.parse()


def _responses_create(c: Any, h: Any) -> None:
    c.responses.create(model=OPENAI_MODEL, input=h)


def _responses_create_stream(c: Any, h: Any) -> None:
    for _ in c.responses.create(model=OPENAI_MODEL, input=h, stream=True):
        pass


def _responses_stream_helper(c: Any, h: Any) -> None:
    with c.responses.stream(model=OPENAI_MODEL, input=h) as stream:
        stream.get_final_response()


def _responses_parse(c: Any, h: Any) -> None:
    c.responses.parse(model=OPENAI_MODEL, input=h)


def _responses_raw_create(c: Any, h: Any) -> None:
    c.responses.with_raw_response.create(model=OPENAI_MODEL, input=h).parse()


def _responses_beta_create(c: Any, h: Any) -> None:
    c.beta.responses.create(model=OPENAI_MODEL, input=h)


async def _aresponses_create(c: Any, h: Any) -> None:
    await c.responses.create(model=OPENAI_MODEL, input=h)


async def _aresponses_create_stream(c: Any, h: Any) -> None:
    async for _ in await c.responses.create(model=OPENAI_MODEL, input=h, stream=True):
        pass


async def _aresponses_stream_helper(c: Any, h: Any) -> None:
    async with c.responses.stream(model=OPENAI_MODEL, input=h) as stream:
        await stream.get_final_response()


async def _aresponses_parse(c: Any, h: Any) -> None:
    await c.responses.parse(model=OPENAI_MODEL, input=h)


async def _aresponses_beta_create(c: Any, h: Any) -> None:
    await c.beta.responses.create(model=OPENAI_MODEL, input=h)


def _messages_create(c: Any, h: Any) -> None:
    c.messages.create(messages=h, **ANTHROPIC_ARGS)


def _messages_create_stream(c: Any, h: Any) -> None:
    for _ in c.messages.create(messages=h, stream=True, **ANTHROPIC_ARGS):
        pass


def _messages_stream(c: Any, h: Any) -> None:
    manager = c.messages.stream(messages=h, **ANTHROPIC_ARGS)
    assert isinstance(manager, anthropic.MessageStreamManager)  # the proxy passes it through
    with manager as stream:
        stream.get_final_message()


def _messages_parse(c: Any, h: Any) -> None:
    c.messages.parse(messages=h, **ANTHROPIC_ARGS)


def _messages_raw_create(c: Any, h: Any) -> None:
    c.messages.with_raw_response.create(messages=h, **ANTHROPIC_ARGS).parse()


def _beta_messages_create(c: Any, h: Any) -> None:
    c.beta.messages.create(messages=h, **ANTHROPIC_ARGS)


def _beta_messages_stream(c: Any, h: Any) -> None:
    with c.beta.messages.stream(messages=h, **ANTHROPIC_ARGS) as stream:
        stream.get_final_message()


def _beta_messages_parse(c: Any, h: Any) -> None:
    c.beta.messages.parse(messages=h, **ANTHROPIC_ARGS)


async def _amessages_create(c: Any, h: Any) -> None:
    await c.messages.create(messages=h, **ANTHROPIC_ARGS)


async def _amessages_create_stream(c: Any, h: Any) -> None:
    async for _ in await c.messages.create(messages=h, stream=True, **ANTHROPIC_ARGS):
        pass


async def _amessages_stream(c: Any, h: Any) -> None:
    manager = c.messages.stream(messages=h, **ANTHROPIC_ARGS)
    assert isinstance(manager, anthropic.AsyncMessageStreamManager)
    async with manager as stream:
        await stream.get_final_message()


async def _amessages_parse(c: Any, h: Any) -> None:
    await c.messages.parse(messages=h, **ANTHROPIC_ARGS)


async def _abeta_messages_create(c: Any, h: Any) -> None:
    await c.beta.messages.create(messages=h, **ANTHROPIC_ARGS)


async def _abeta_messages_stream(c: Any, h: Any) -> None:
    async with c.beta.messages.stream(messages=h, **ANTHROPIC_ARGS) as stream:
        await stream.get_final_message()


async def _abeta_messages_parse(c: Any, h: Any) -> None:
    await c.beta.messages.parse(messages=h, **ANTHROPIC_ARGS)


def _generate(c: Any, h: Any) -> None:
    c.models.generate_content(model=GEMINI_MODEL, contents=h)


def _generate_stream(c: Any, h: Any) -> None:
    chunks = list(c.models.generate_content_stream(model=GEMINI_MODEL, contents=h))
    assert chunks


def _chat_send(c: Any, h: Any) -> None:
    c.chats.create(model=GEMINI_MODEL, history=h[:-1]).send_message("And tomorrow?")


def _chat_send_stream(c: Any, h: Any) -> None:
    chat = c.chats.create(model=GEMINI_MODEL, history=h[:-1])
    assert list(chat.send_message_stream("And tomorrow?"))


async def _agenerate(c: Any, h: Any) -> None:
    await c.aio.models.generate_content(model=GEMINI_MODEL, contents=h)


async def _agenerate_stream(c: Any, h: Any) -> None:
    chunks = [
        chunk
        async for chunk in await c.aio.models.generate_content_stream(
            model=GEMINI_MODEL, contents=h
        )
    ]
    assert chunks


async def _achat_send(c: Any, h: Any) -> None:
    await c.aio.chats.create(model=GEMINI_MODEL, history=h[:-1]).send_message("And tomorrow?")


async def _achat_send_stream(c: Any, h: Any) -> None:
    chat = c.aio.chats.create(model=GEMINI_MODEL, history=h[:-1])
    assert [chunk async for chunk in await chat.send_message_stream("And tomorrow?")]


@dataclass(frozen=True)
class Sdk:
    """One SDK's client, the valid history its paths send and the row label prefix."""

    name: str
    client: Callable[[Any, bool], Any]
    """(server, asynchronous) -> a client of the SDK for that server."""
    history: list[Any]
    label: str
    """The row's class in the log line (``openai.Completions``); ``Async`` is put in front of
    the class for async paths."""
    error: type[BaseException]


def _openai_client(server: Any, asynchronous: bool) -> Any:
    kind = openai.AsyncOpenAI if asynchronous else openai.OpenAI
    return kind(api_key="test", base_url=server.openai_base_url, max_retries=0)


def _anthropic_client(server: Any, asynchronous: bool) -> Any:
    kind = anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic
    return kind(api_key="test", base_url=server.anthropic_base_url, max_retries=0)


def _genai_client(server: Any, asynchronous: bool) -> Any:
    return genai.Client(api_key="test", http_options={"base_url": server.gemini_base_url})


CHAT_SDK = Sdk("openai chat", _openai_client, CHAT, "openai.{}Completions", openai.APIStatusError)
RESPONSES_SDK = Sdk(
    "openai responses", _openai_client, RESPONSES, "openai.{}Responses", openai.APIStatusError
)
ANTHROPIC_SDK = Sdk(
    "anthropic", _anthropic_client, ANTHROPIC, "anthropic.{}Messages", anthropic.APIStatusError
)
GEMINI_SDK = Sdk(
    "google-genai", _genai_client, GEMINI, "google_genai.{}Models", genai.errors.APIError
)

PATHS: dict[str, tuple[Sdk, Callable[[Any, Any], Any], str]] = {
    "chat create": (CHAT_SDK, _chat_create, "create"),
    "chat create(stream=True)": (CHAT_SDK, _chat_create_stream, "create"),
    "chat stream()": (CHAT_SDK, _chat_stream_helper, "create"),
    "chat parse": (CHAT_SDK, _chat_parse, "parse"),
    "chat with_raw_response.create": (CHAT_SDK, _chat_raw_create, "create"),
    "chat with_streaming_response.create": (CHAT_SDK, _chat_streaming_response, "create"),
    "async chat create": (CHAT_SDK, _achat_create, "create"),
    "async chat create(stream=True)": (CHAT_SDK, _achat_create_stream, "create"),
    "async chat stream()": (CHAT_SDK, _achat_stream_helper, "create"),
    "async chat parse": (CHAT_SDK, _achat_parse, "parse"),
    "async chat with_raw_response.create": (CHAT_SDK, _achat_raw_create, "create"),
    "responses create": (RESPONSES_SDK, _responses_create, "create"),
    "responses create(stream=True)": (RESPONSES_SDK, _responses_create_stream, "create"),
    "responses stream()": (RESPONSES_SDK, _responses_stream_helper, "create"),
    "responses parse": (RESPONSES_SDK, _responses_parse, "parse"),
    "responses with_raw_response.create": (RESPONSES_SDK, _responses_raw_create, "create"),
    "responses beta.create": (RESPONSES_SDK, _responses_beta_create, "create"),
    "async responses create": (RESPONSES_SDK, _aresponses_create, "create"),
    "async responses create(stream=True)": (RESPONSES_SDK, _aresponses_create_stream, "create"),
    "async responses stream()": (RESPONSES_SDK, _aresponses_stream_helper, "create"),
    "async responses parse": (RESPONSES_SDK, _aresponses_parse, "parse"),
    "async responses beta.create": (RESPONSES_SDK, _aresponses_beta_create, "create"),
    "messages.create": (ANTHROPIC_SDK, _messages_create, "create"),
    "messages.create(stream=True)": (ANTHROPIC_SDK, _messages_create_stream, "create"),
    "messages.stream()": (ANTHROPIC_SDK, _messages_stream, "stream"),
    "messages.parse": (ANTHROPIC_SDK, _messages_parse, "parse"),
    "messages.with_raw_response.create": (ANTHROPIC_SDK, _messages_raw_create, "create"),
    "beta.messages.create": (ANTHROPIC_SDK, _beta_messages_create, "create"),
    "beta.messages.stream()": (ANTHROPIC_SDK, _beta_messages_stream, "stream"),
    "beta.messages.parse": (ANTHROPIC_SDK, _beta_messages_parse, "parse"),
    "async messages.create": (ANTHROPIC_SDK, _amessages_create, "create"),
    "async messages.create(stream=True)": (ANTHROPIC_SDK, _amessages_create_stream, "create"),
    "async messages.stream()": (ANTHROPIC_SDK, _amessages_stream, "stream"),
    "async messages.parse": (ANTHROPIC_SDK, _amessages_parse, "parse"),
    "async beta.messages.create": (ANTHROPIC_SDK, _abeta_messages_create, "create"),
    "async beta.messages.stream()": (ANTHROPIC_SDK, _abeta_messages_stream, "stream"),
    "async beta.messages.parse": (ANTHROPIC_SDK, _abeta_messages_parse, "parse"),
    "models.generate_content": (GEMINI_SDK, _generate, "generate_content"),
    "models.generate_content_stream": (GEMINI_SDK, _generate_stream, "generate_content_stream"),
    "chats.send_message": (GEMINI_SDK, _chat_send, "generate_content"),
    "chats.send_message_stream": (GEMINI_SDK, _chat_send_stream, "generate_content_stream"),
    "aio.models.generate_content": (GEMINI_SDK, _agenerate, "generate_content"),
    "aio.models.generate_content_stream": (
        GEMINI_SDK,
        _agenerate_stream,
        "generate_content_stream",
    ),
    "aio.chats.send_message": (GEMINI_SDK, _achat_send, "generate_content"),
    "aio.chats.send_message_stream": (GEMINI_SDK, _achat_send_stream, "generate_content_stream"),
}


def _label(name: str) -> str:
    """The patched row a path goes through, as the log line names it."""
    sdk, path, method = PATHS[name]
    label = sdk.label.format("Async" if asyncio.iscoroutinefunction(path) else "")
    if "beta." in name:
        label = label.replace(".", ".beta.", 1)
    return f"{label}.{method}"


def _send(server: Any, name: str, history: Any) -> None:
    """Run the path ``name`` with a fresh client (an async one, in its own loop, if async)."""
    sdk, path, _ = PATHS[name]
    if asyncio.iscoroutinefunction(path):

        async def main() -> None:
            client = sdk.client(server, True)
            await path(client, history)

        asyncio.run(main())
    else:
        path(sdk.client(server, False), history)


def _history(name: str) -> list[Any]:
    return copy.deepcopy(PATHS[name][0].history)


def _rescued_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("toolmend rescued")]


def _skip_missing(name: str) -> None:
    """Skip a path the installed SDK does not have (beta Responses, anthropic parse)."""
    if name.startswith(("responses beta", "async responses beta")) and not hasattr(
        openai.resources.beta.Beta, "responses"
    ):
        pytest.skip(f"openai {openai.__version__} has no client.beta.responses")
    if "parse" in name and PATHS[name][0] is ANTHROPIC_SDK:
        from anthropic.resources.messages import Messages

        if not hasattr(Messages, "parse"):
            pytest.skip(f"anthropic {anthropic.__version__} has no messages.parse")


# --- the rescue, through every path ------------------------------------------------------------


@pytest.mark.parametrize("name", PATHS)
def test_unknown_rule_rescued_by_one_retry(
    name: str, strict_provider_factory: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    _skip_missing(name)
    server = strict_provider_factory(refuse=UNKNOWN)
    history = _history(name)
    held = copy.deepcopy(history)
    tm.patch()
    with caplog.at_level(logging.INFO, logger="toolmend"):
        _send(server, name, history)
    assert history == held  # the caller's objects, untouched
    first, last = server.requests
    assert first.refused and first.status == 400
    assert last.accepted, last.error
    assert not last.refused
    body = json.dumps(last.body)
    for content in RESULTS:
        assert content in body
    lines = _rescued_lines(caplog)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"toolmend rescued {_label(name)} for ")
    assert "after a 400: flattened (" in lines[0]
    assert "flattened_tool_traffic@" in lines[0]
    assert "Tool%20call%20history" in lines[0] or "Tool call history" in lines[0]
    for content in (*RESULTS, "Paris"):
        assert content not in lines[0]


@pytest.mark.parametrize(
    "name",
    ["chat create", "responses create", "messages.stream()", "models.generate_content_stream"],
)
def test_second_refusal_propagates(name: str, strict_provider_factory: Callable[..., Any]) -> None:
    """A retry refused too raises its own error, as the SDK raised it; no third request."""
    server = strict_provider_factory(
        refuse=[Refusal(UNKNOWN, times=1), Refusal(AGAIN, when="always")]
    )
    history = _history(name)
    tm.patch()
    with pytest.raises(PATHS[name][0].error) as raised:
        _send(server, name, history)
    assert AGAIN in str(raised.value)
    # raised after the first error was handled, not during it: the SDK's own context only
    assert not isinstance(raised.value.__context__, PATHS[name][0].error)
    assert [r.error for r in server.requests] == [UNKNOWN, AGAIN]


@pytest.mark.parametrize(
    "name",
    [
        "chat create",
        "async responses create(stream=True)",
        "async messages.stream()",
        "aio.models.generate_content_stream",
    ],
)
@pytest.mark.parametrize("text", NOT_CURABLE)
def test_not_about_tool_history_is_not_retried(
    name: str,
    text: str,
    strict_provider_factory: Callable[..., Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = strict_provider_factory(refuse=NOT_CURABLE[text])
    history = _history(name)
    tm.patch()
    with (
        caplog.at_level(logging.INFO, logger="toolmend"),
        pytest.raises(PATHS[name][0].error) as raised,
    ):
        _send(server, name, history)
    assert NOT_CURABLE[text] in str(raised.value)
    assert len(server.requests) == 1
    assert _rescued_lines(caplog) == []


@pytest.mark.parametrize(
    "name", ["chat create", "async messages.create", "aio.models.generate_content_stream"]
)
def test_a_non_400_is_not_retried(name: str, strict_provider_factory: Callable[..., Any]) -> None:
    server = strict_provider_factory(refuse=Refusal(UNKNOWN, status=422))
    tm.patch()
    with pytest.raises(PATHS[name][0].error):
        _send(server, name, _history(name))
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "name",
    [
        "chat create(stream=True)",
        "messages.stream()",
        "async messages.stream()",
        "models.generate_content_stream",
        "aio.models.generate_content",
    ],
)
@pytest.mark.parametrize("switch", ["patch(rescue=False)", "TOOLMEND_RESCUE=0"])
def test_rescue_switched_off(
    name: str,
    switch: str,
    strict_provider_factory: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = strict_provider_factory(refuse=UNKNOWN)
    if switch == "TOOLMEND_RESCUE=0":
        monkeypatch.setenv("TOOLMEND_RESCUE", "0")
        tm.patch()
    else:
        tm.patch(rescue=False)
    with pytest.raises(PATHS[name][0].error) as raised:
        _send(server, name, _history(name))
    assert UNKNOWN in str(raised.value)
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "name", ["chat create", "async messages.stream()", "models.generate_content"]
)
@pytest.mark.parametrize("policy", ["report", "strict"])
def test_no_rescue_under_report_or_strict_policy(
    name: str, policy: str, strict_provider_factory: Callable[..., Any]
) -> None:
    """``report`` and ``strict`` ask toolmend to change nothing on its own: no rewritten retry."""
    server = strict_provider_factory(refuse=UNKNOWN)
    tm.patch(policy=policy)
    with pytest.raises(PATHS[name][0].error) as raised:
        _send(server, name, _history(name))
    assert UNKNOWN in str(raised.value)
    assert len(server.requests) == 1


@pytest.mark.parametrize("name", PATHS)
def test_accepted_first_time_sends_once_and_never_rescues(
    name: str, strict_provider: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request the provider takes at once: one request, toolmend.rescue never called."""
    _skip_missing(name)
    rescues: list[str] = []
    real = toolmend.rescue

    def counted(*args: Any, **kwargs: Any) -> Any:
        rescues.append(str(kwargs.get("provider")))
        return real(*args, **kwargs)

    patch_everywhere(monkeypatch, "rescue", counted)
    tm.patch()
    _send(strict_provider, name, _history(name))
    assert [r.status for r in strict_provider.requests] == [200]
    assert rescues == []


# --- the known-rule path: the error names a rule of another profile ------------------------


MISTRAL_IDS = [
    {"role": "user", "content": "Weather?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_abcdefghijklmnopqrstuvwxyz",  # Mistral wants 9 alphanumerics
                "type": "function",
                "function": {"name": "get_weather", "arguments": "{}"},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_abcdefghijklmnopqrstuvwxyz", "content": RESULTS[0]},
]


@pytest.mark.parametrize("name", ["chat create", "async chat create(stream=True)", "chat stream()"])
def test_known_rule_of_the_server_is_repaired(
    name: str, strict_provider_factory: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    """The hook holds the history to ``openai``; the server judges it as Mistral and refuses it
    with Mistral's own text for its call id rule: the retry carries Mistral's repair."""
    server = strict_provider_factory("mistral")
    history = copy.deepcopy(MISTRAL_IDS)
    tm.patch(provider="openai")
    with caplog.at_level(logging.INFO, logger="toolmend"):
        _send(server, name, history)
    assert history == MISTRAL_IDS
    first, last = server.requests
    assert first.status == 400 and not first.refused
    assert last.accepted, last.error
    assert last.history == json.loads(
        json.dumps(toolmend.sanitize(MISTRAL_IDS, provider="mistral", format="openai"))
    )
    (line,) = _rescued_lines(caplog)
    code = first.problems[0].code
    assert f"after a 400: {code} (mistral)" in line, line
    assert RESULTS[0] not in line


# --- the offloaded repair (a long async history) keeps the rescue -----------------------------


def test_offloaded_async_repair_is_rescued(
    strict_provider_factory: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLMEND_OFFLOAD_ITEMS", "2")
    server = strict_provider_factory(refuse=UNKNOWN)
    history = _history("async chat create")
    assert budget.offloads(history)
    tm.patch()
    _send(server, "async chat create", history)
    assert [r.status for r in server.requests] == [400, 200]
    assert all(content in json.dumps(server.requests[-1].body) for content in RESULTS)


def test_history_toolmend_cannot_read_is_not_rescued(
    strict_provider: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """An id that is a number: toolmend sends it as it is, and does not try to rewrite it after
    the provider's 400 either (one request, the provider's error, no toolmend traceback)."""
    history = _history("chat create")
    history[1]["tool_calls"][0]["id"] = 1
    history[2]["tool_call_id"] = 1
    tm.patch()
    with (
        caplog.at_level(logging.INFO, logger="toolmend"),
        pytest.raises(openai.BadRequestError),
    ):
        _send(strict_provider, "chat create", history)
    assert len(strict_provider.requests) == 1
    assert _rescued_lines(caplog) == []
    assert not [r for r in caplog.records if r.exc_info]


# --- the stream senders' edges, on plain generators (the SDKs' streams are generators too) ----


def _row(name: str) -> tm.Target:
    return next(row for row in tm.TARGETS if row.sdk == "google_genai" and row.name == name)


def _refusal() -> BaseException:
    return genai.errors.ClientError(
        400, {"error": {"code": 400, "message": UNKNOWN, "status": "INVALID_ARGUMENT"}}
    )


def test_a_stream_left_early_is_closed() -> None:
    """The caller stops after the first chunk: the SDK's stream under it is closed too."""
    closed: list[str] = []

    def chunks() -> Iterator[str]:
        try:
            yield "one"
            yield "two"
        finally:
            closed.append("sdk stream")

    row = _row("Models.generate_content_stream")
    sent = {"model": GEMINI_MODEL, "contents": _history("models.generate_content")}
    sdk = chunks()  # held here too: closed by the wrapper, not by garbage collection
    stream = tm._rescued_items(sdk, row, chunks, (), sent, "gemini")
    assert next(stream) == "one"
    stream.close()
    assert closed == ["sdk stream"]


def test_async_stream_refused_at_the_await_is_rescued() -> None:
    """A google-genai whose async stream posts in the ``await`` (not at the first chunk)."""
    sent_histories: list[Any] = []

    async def chunks() -> Any:
        yield "one"

    async def generate_content_stream(*, model: str, contents: Any) -> Any:
        sent_histories.append(contents)
        if len(sent_histories) == 1:
            raise _refusal()
        return chunks()

    async def main() -> list[str]:
        row = _row("AsyncModels.generate_content_stream")
        history = _history("models.generate_content")
        sent = {"model": GEMINI_MODEL, "contents": history}
        stream = await tm._send_async_stream(row, generate_content_stream, (), sent, "gemini")
        return [chunk async for chunk in stream]

    assert asyncio.run(main()) == ["one"]
    first, retried = sent_histories
    assert first == GEMINI
    assert retried != GEMINI and all(content in json.dumps(retried) for content in RESULTS)


def test_sdk_objects_in_the_history_are_rescued(
    strict_provider_factory: Callable[..., Any],
) -> None:
    """The assistant turns as the SDKs returned them (pydantic objects): written as text in the
    retry, the caller's objects untouched."""
    from anthropic.types import TextBlock, ToolUseBlock
    from openai.types.chat import ChatCompletionMessage

    server = strict_provider_factory(refuse=UNKNOWN)
    tm.patch()
    chat = _history("chat create")
    chat[1] = ChatCompletionMessage.model_validate({**chat[1], "content": None})
    held = copy.deepcopy(chat)
    _send(server, "chat create", chat)
    assert chat == held
    claude = _history("messages.create")
    claude[1] = {
        "role": "assistant",
        "content": [
            TextBlock(type="text", text="Let me check."),
            *(ToolUseBlock.model_validate(block) for block in claude[1]["content"][1:]),
        ],
    }
    held = copy.deepcopy(claude)
    _send(server, "messages.create", claude)
    assert claude == held
    assert [r.status for r in server.requests] == [400, 200, 400, 200]
    for request in server.requests[1::2]:
        body = json.dumps(request.body)
        assert all(content in body for content in RESULTS)
        assert "get_forecast" in body


@pytest.mark.parametrize("name", ["async responses stream()", "beta.messages.stream()"])
def test_telemetry_hears_the_request_and_the_rescue(
    name: str, strict_provider_factory: Callable[..., Any]
) -> None:
    from toolmend.integrations import telemetry

    heard: list[Any] = []
    server = strict_provider_factory(refuse=UNKNOWN)
    tm.patch()
    telemetry.add_sink(heard.append)
    try:
        _send(server, name, _history(name))
    finally:
        telemetry.remove_sink(heard.append)
    assert [report.outcome for report in heard][-1] == "rescued"
    assert heard[-1].rule == "flattened"
    assert heard[-1].hook == telemetry.hook_name(_label(name))
    assert "flattened_tool_traffic" in heard[-1].change_codes
    assert len(heard) == 2  # the request as first sent, then the rescue
