"""openai through toolmend.integrations.patch: every call path, real SDK, real HTTP.

For each path a broken history is rejected (HTTP 400 from the strict server) without the patch
and accepted with it; the recorded request carries what toolmend produced, the wrapper ran
exactly once, and the caller's list is unchanged. Each phase uses a fresh client, since
``with_raw_response`` caches methods bound at first use.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import toolmend
import toolmend.integrations.patch as tm

from support.patch_cases import CHAT, RESPONSES, MendCounter, expected, unchanged

openai = pytest.importorskip("openai")

MODEL = "gpt-4o"


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    tm.unpatch()
    yield
    tm.unpatch()


@pytest.fixture
def mends(monkeypatch: pytest.MonkeyPatch) -> MendCounter:
    counter = MendCounter()
    monkeypatch.setattr(tm, "mend", counter)
    return counter


# --- the call paths: (client, history) -> None, one per way the SDK can send a history -------


def _chat_create(c: Any, h: Any) -> None:
    c.chat.completions.create(model=MODEL, messages=h)


def _chat_create_stream(c: Any, h: Any) -> None:
    for _ in c.chat.completions.create(model=MODEL, messages=h, stream=True):
        pass


def _chat_stream_helper(c: Any, h: Any) -> None:
    with c.chat.completions.stream(model=MODEL, messages=h) as stream:
        stream.get_final_completion()


def _chat_parse(c: Any, h: Any) -> None:
    c.chat.completions.parse(model=MODEL, messages=h)


def _chat_raw_create(c: Any, h: Any) -> None:
    c.chat.completions.with_raw_response.create(model=MODEL, messages=h).parse()


def _chat_raw_parse(c: Any, h: Any) -> None:
    c.chat.completions.with_raw_response.parse(model=MODEL, messages=h).parse()


def _chat_streaming_response(c: Any, h: Any) -> None:
    with c.chat.completions.with_streaming_response.create(model=MODEL, messages=h) as response:
        response.read()


def _chat_beta_create(c: Any, h: Any) -> None:
    c.beta.chat.completions.create(model=MODEL, messages=h)


def _chat_generator(c: Any, h: Any) -> None:
    c.chat.completions.create(model=MODEL, messages=(message for message in h))


def _responses_create(c: Any, h: Any) -> None:
    c.responses.create(model=MODEL, input=h)


def _responses_create_stream(c: Any, h: Any) -> None:
    for _ in c.responses.create(model=MODEL, input=h, stream=True):
        pass


def _responses_stream_helper(c: Any, h: Any) -> None:
    with c.responses.stream(model=MODEL, input=h) as stream:
        stream.get_final_response()


def _responses_parse(c: Any, h: Any) -> None:
    c.responses.parse(model=MODEL, input=h)


def _responses_raw_create(c: Any, h: Any) -> None:
    c.responses.with_raw_response.create(model=MODEL, input=h).parse()


def _responses_streaming_response(c: Any, h: Any) -> None:
    with c.responses.with_streaming_response.create(model=MODEL, input=h) as response:
        response.read()


def _responses_beta_create(c: Any, h: Any) -> None:
    c.beta.responses.create(model=MODEL, input=h)


async def _achat_create(c: Any, h: Any) -> None:
    await c.chat.completions.create(model=MODEL, messages=h)


async def _achat_create_stream(c: Any, h: Any) -> None:
    async for _ in await c.chat.completions.create(model=MODEL, messages=h, stream=True):
        pass


async def _achat_stream_helper(c: Any, h: Any) -> None:
    async with c.chat.completions.stream(model=MODEL, messages=h) as stream:
        await stream.get_final_completion()


async def _achat_parse(c: Any, h: Any) -> None:
    await c.chat.completions.parse(model=MODEL, messages=h)


async def _achat_raw_create(c: Any, h: Any) -> None:
    response = await c.chat.completions.with_raw_response.create(model=MODEL, messages=h)
    response.parse()


async def _aresponses_create(c: Any, h: Any) -> None:
    await c.responses.create(model=MODEL, input=h)


async def _aresponses_create_stream(c: Any, h: Any) -> None:
    async for _ in await c.responses.create(model=MODEL, input=h, stream=True):
        pass


async def _aresponses_stream_helper(c: Any, h: Any) -> None:
    async with c.responses.stream(model=MODEL, input=h) as stream:
        await stream.get_final_response()


async def _aresponses_parse(c: Any, h: Any) -> None:
    await c.responses.parse(model=MODEL, input=h)


async def _aresponses_beta_create(c: Any, h: Any) -> None:
    await c.beta.responses.create(model=MODEL, input=h)


CHAT_PATHS: dict[str, Callable[[Any, Any], Any]] = {
    "create": _chat_create,
    "create(stream=True)": _chat_create_stream,
    "stream()": _chat_stream_helper,
    "parse": _chat_parse,
    "with_raw_response.create": _chat_raw_create,
    "with_raw_response.parse": _chat_raw_parse,
    "with_streaming_response.create": _chat_streaming_response,
    "beta.create": _chat_beta_create,
    "create(messages=generator)": _chat_generator,
    "async create": _achat_create,
    "async create(stream=True)": _achat_create_stream,
    "async stream()": _achat_stream_helper,
    "async parse": _achat_parse,
    "async with_raw_response.create": _achat_raw_create,
}
RESPONSES_PATHS: dict[str, Callable[[Any, Any], Any]] = {
    "create": _responses_create,
    "create(stream=True)": _responses_create_stream,
    "stream()": _responses_stream_helper,
    "parse": _responses_parse,
    "with_raw_response.create": _responses_raw_create,
    "with_streaming_response.create": _responses_streaming_response,
    "beta.create": _responses_beta_create,
    "async create": _aresponses_create,
    "async create(stream=True)": _aresponses_create_stream,
    "async stream()": _aresponses_stream_helper,
    "async parse": _aresponses_parse,
    "async beta.create": _aresponses_beta_create,
}


def _send(path: Callable[[Any, Any], Any], base_url: str, history: Any, **client: Any) -> None:
    """Run ``path`` with a fresh client (an async one, in its own loop, for async paths)."""
    if asyncio.iscoroutinefunction(path):

        async def main() -> None:
            async with openai.AsyncOpenAI(
                api_key="test", base_url=base_url, max_retries=0, **client
            ) as c:
                await path(c, history)

        asyncio.run(main())
    else:
        with openai.OpenAI(api_key="test", base_url=base_url, max_retries=0, **client) as c:
            path(c, history)


def _check_path(
    server: Any, mends: MendCounter, path: Callable[[Any, Any], Any], history: Any, provider: str
) -> None:
    with unchanged(history):
        with pytest.raises(openai.BadRequestError):
            _send(path, server.openai_base_url, history)
        assert server.last_request.status == 400
        assert mends.calls == []

        tm.patch()
        _send(path, server.openai_base_url, history)
    assert server.last_request.accepted, server.last_request.error
    assert server.last_request.history == expected(history, provider, provider)
    assert len(mends.calls) == 1, mends.calls


@pytest.mark.parametrize("name", CHAT_PATHS)
def test_chat_path_repaired_exactly_once(
    name: str, strict_provider: Any, mends: MendCounter
) -> None:
    _check_path(strict_provider, mends, CHAT_PATHS[name], CHAT, "openai")


@pytest.mark.parametrize("name", RESPONSES_PATHS)
def test_responses_path_repaired_exactly_once(
    name: str, strict_provider: Any, mends: MendCounter
) -> None:
    if "beta." in name and importlib.util.find_spec("openai.resources.beta.responses") is None:
        pytest.skip(f"openai {openai.__version__} has no client.beta.responses")
    _check_path(strict_provider, mends, RESPONSES_PATHS[name], RESPONSES, "openai-responses")


def test_responses_string_input_passes_through(strict_provider: Any, mends: MendCounter) -> None:
    tm.patch()
    _send(_responses_create, strict_provider.openai_base_url, "Hello")
    assert strict_provider.last_request.accepted
    assert mends.calls == []


def test_sdk_objects_in_history_are_sent_repaired(strict_provider: Any) -> None:
    """A history holding the SDK's own pydantic message (the assistant turn as returned)."""
    from openai.types.chat import ChatCompletionMessage

    assistant = ChatCompletionMessage.model_validate(CHAT[1])
    history = [CHAT[0], assistant, CHAT[2], CHAT[3]]
    tm.patch()
    with unchanged(history):
        _send(_chat_create, strict_provider.openai_base_url, history)
    assert strict_provider.last_request.accepted, strict_provider.last_request.error
    assert [m["role"] for m in strict_provider.last_request.history] == [
        "user",
        "assistant",
        "tool",
        "user",
    ]


# --- provider: patch(provider=...), the base_url host, else openai ---------------------------


def _to_server(port: int) -> Any:
    """An http client for openai that sends every request to the strict server, whatever host
    the client was given, so a client pointed at ``https://api.deepseek.com`` really talks
    (only) to 127.0.0.1. The path keeps its API tail only (Groq's ``/openai/v1/...`` would name
    a provider to the server). Built on the httpx package the installed openai uses."""
    http = next(
        importlib.import_module(base.__module__.split(".")[0])
        for base in openai.DefaultHttpxClient.__mro__
        if base.__name__ == "Client" and base.__module__.startswith("httpx")
    )

    class ToServer(http.HTTPTransport):  # type: ignore[misc,name-defined]
        def handle_request(self, request: Any) -> Any:
            path = request.url.path
            tail = path[path.index("/chat/completions") :] if "/chat/completions" in path else path
            request.url = request.url.copy_with(
                scheme="http", host="127.0.0.1", port=port, path="/v1" + tail
            )
            return super().handle_request(request)

    return openai.DefaultHttpxClient(transport=ToServer())


GROQ = [
    CHAT[0],
    {**CHAT[1], "function_call": None},  # Groq refuses the null; OpenAI does not mind
    CHAT[3],
]


@pytest.mark.parametrize(
    ("base_url", "provider", "history"),
    [
        ("https://api.deepseek.com/v1", "deepseek", CHAT),
        ("https://api.mistral.ai/v1", "mistral", CHAT),
        ("https://api.groq.com/openai/v1", "groq", GROQ),
        ("https://generativelanguage.googleapis.com/v1beta/openai", "gemini", CHAT),
        ("https://myco.openai.azure.com/openai/v1", "openai", CHAT),
        ("https://gateway.example.com/v1", "openai", CHAT),
    ],
)
def test_provider_from_base_url_host(
    base_url: str,
    provider: str,
    history: Any,
    strict_provider_factory: Callable[..., Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = strict_provider_factory(provider)
    with pytest.raises(openai.BadRequestError):
        _send(
            _chat_create,
            base_url,
            history,
            http_client=_to_server(server.port),
        )
    tm.patch()
    with caplog.at_level(logging.INFO, logger="toolmend"):
        _send(
            _chat_create,
            base_url,
            history,
            http_client=_to_server(server.port),
        )
    assert server.last_request.accepted, server.last_request.error
    assert server.last_request.history == expected(history, provider, "openai")
    repaired = [r.getMessage() for r in caplog.records if "repaired" in r.getMessage()]
    assert len(repaired) == 1
    assert repaired[0].startswith(f"toolmend repaired openai.Completions.create for {provider}: ")


def test_explicit_provider_wins_over_host(strict_provider_factory: Callable[..., Any]) -> None:
    server = strict_provider_factory("mistral")
    tm.patch(provider="mistral")
    history = [
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
        {"role": "tool", "tool_call_id": "call_abcdefghijklmnopqrstuvwxyz", "content": "21 C"},
    ]
    with pytest.raises(toolmend.UnknownNameError, match="Did you mean 'mistral'"):
        tm.patch(provider="mistrall")
    _send(
        _chat_create,
        "https://api.openai.com/v1",
        history,
        http_client=_to_server(server.port),
    )
    assert server.last_request.accepted, server.last_request.error
    assert server.last_request.history == expected(history, "mistral", "openai")


def test_provider_resolution_table() -> None:
    assert tm.provider_for_host("API.DeepSeek.com") == "deepseek"
    assert tm.provider_for_host("eastus-aiplatform.googleapis.com") == "gemini"
    assert tm.provider_for_host("x.cognitiveservices.azure.com") == "azure"
    assert tm.provider_for_host("openrouter.ai") is None
    for _, provider in tm.HOSTS:
        toolmend.check([], provider=provider, format="openai")  # every name is a known profile
