"""The rescue (issue 34) through a real LiteLLM Proxy process: a history the strict server
refuses with a rule toolmend does not model is sent upstream once more, rewritten, and the
client gets a 200 with ``x-toolmend-rescued``; exactly two upstream requests, every real tool
result's content in the one that succeeded. Chat (plain and streamed, to OpenAI and to Gemini,
whose stream LiteLLM opens at its first chunk) and ``/v1/messages``; a 400 not about tool
history reaches the client after one upstream request.
"""

from __future__ import annotations

import contextlib
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolmend.testing import Refusal, StrictProviderServer

from support import litellm_proxy

WEATHER = "RESULT-weather-Paris: 21 C and sunny"
TIME = "RESULT-time-Paris: 14:05"
UNKNOWN_RULE = "Tool use is not enabled for this deployment."
CONTEXT_LENGTH = (
    "This model's maximum context length is 128000 tokens. However, your messages resulted in "
    "131072 tokens. Please reduce the length of the messages."
)

_CONFIG = """\
model_list:
  - model_name: gpt
    litellm_params: {{model: openai/gpt-4o, api_base: "{openai}", api_key: sk-test}}
  - model_name: gemini
    litellm_params: {{model: gemini/gemini-2.0-flash, api_base: "{gemini}", api_key: sk-test}}
  - model_name: claude
    litellm_params: {{model: anthropic/claude-sonnet-4-5, api_base: "{anthropic}", api_key: sk-test}}
  - model_name: secretly-mistral
    litellm_params: {{model: openai/gpt-4o, api_base: "{mistral}", api_key: sk-test}}
litellm_settings:
  num_retries: 0
  callbacks: ["toolmend.integrations.litellm.proxy_handler"]
general_settings:
  master_key: sk-toolmend
"""


@pytest.fixture(scope="module")
def server() -> Iterator[StrictProviderServer]:
    with StrictProviderServer() as running:
        yield running


@pytest.fixture(scope="module")
def proxy(server: StrictProviderServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with _running(server, Path(tmp_path_factory.mktemp("rescue_proxy")), {}) as base:
        yield base


@contextlib.contextmanager
def _running(server: StrictProviderServer, folder: Path, env: dict[str, str]) -> Iterator[str]:
    """A ``litellm --config`` process with toolmend's handler in front of ``server``."""
    reason = litellm_proxy.unavailable()
    if reason:
        pytest.skip(reason)
    config = folder / "config.yaml"
    config.write_text(
        _CONFIG.format(
            openai=server.openai_base_url,
            gemini=server.base_url + "/v1beta",
            anthropic=server.base_url,
            mistral=server.base_url_for("mistral") + "/v1",
        )
    )
    running = litellm_proxy.Proxy(config, folder, env)
    try:
        running.wait_ready()
        yield running.base
    finally:
        running.stop()


@pytest.fixture(autouse=True)
def fresh(server: StrictProviderServer) -> None:
    server.clear()


def refuse_next(server: StrictProviderServer, message: str) -> None:
    """Refuse the next request with tool traffic (the refusal is used up by it)."""
    server.refuse(Refusal(message, times=1))


def _call(call_id: str, name: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps({"city": "Paris"})},
    }


def chat_history() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_1", "get_weather")]},
        {"role": "tool", "tool_call_id": "call_1", "content": WEATHER},
        {"role": "user", "content": "And the time?"},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_2", "get_time")]},
        {"role": "tool", "tool_call_id": "call_2", "content": TIME},
        {"role": "user", "content": "Thanks, summarize."},
    ]


def post(base: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, str], str]:
    request = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer sk-toolmend"},
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as reply:
            headers = {k.lower(): v for k, v in reply.headers.items()}
            return reply.status, headers, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read().decode()


def assert_rescued_upstream(server: StrictProviderServer, *contents: str) -> None:
    statuses = [(r.status, r.refused) for r in server.requests]
    assert statuses == [(400, True), (200, False)], statuses
    sent = json.dumps(server.requests[-1].body)
    for content in contents:
        assert content in sent, content


@pytest.mark.slow
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("model", ["gpt", "gemini"])
def test_proxy_chat_is_rescued_with_its_header(
    server: StrictProviderServer, proxy: str, model: str, stream: bool
) -> None:
    refuse_next(server, UNKNOWN_RULE)
    status, headers, body = post(
        proxy,
        "/v1/chat/completions",
        {"model": model, "messages": chat_history(), "stream": stream},
    )
    assert status == 200, body
    assert_rescued_upstream(server, WEATHER, TIME)
    assert headers["x-toolmend-rescued"] == "flattened"
    if stream:
        assert "data: [DONE]" in body
    else:
        assert json.loads(body)["choices"][0]["message"]["role"] == "assistant"


@pytest.mark.slow
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_proxy_v1_messages_is_rescued_with_its_header(
    server: StrictProviderServer, proxy: str, stream: bool
) -> None:
    refuse_next(server, UNKNOWN_RULE)
    messages = [
        {"role": "user", "content": "Fix the failing test."},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_01Read", "name": "Read", "input": {"f": "t.py"}}
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01Read", "content": WEATHER},
                {"type": "text", "text": "Now fix it."},
            ],
        },
    ]
    status, headers, body = post(
        proxy,
        "/v1/messages",
        {"model": "claude", "max_tokens": 64, "messages": messages, "stream": stream},
    )
    assert status == 200, body
    assert_rescued_upstream(server, WEATHER)
    assert headers["x-toolmend-rescued"] == "flattened"


@pytest.mark.slow
def test_proxy_does_not_retry_a_400_about_something_else(
    server: StrictProviderServer, proxy: str
) -> None:
    refuse_next(server, CONTEXT_LENGTH)
    status, headers, body = post(
        proxy, "/v1/chat/completions", {"model": "gpt", "messages": chat_history()}
    )
    assert status == 400, body
    assert "maximum context length" in body
    assert [r.refused for r in server.requests] == [True]
    assert "x-toolmend-rescued" not in headers


@pytest.mark.slow
def test_proxy_applies_a_known_rule_of_the_provider_it_did_not_know(
    server: StrictProviderServer, proxy: str
) -> None:
    """The deployment says ``openai/gpt-4o``; the endpoint is Mistral, whose 400 about call ids
    names a rule the ``mistral`` profile holds: the retry is that rule's repair."""
    status, headers, body = post(
        proxy, "/v1/chat/completions", {"model": "secretly-mistral", "messages": chat_history()}
    )
    assert status == 200, body
    first, last = server.requests
    assert first.status == 400 and first.problems and not first.refused
    assert last.accepted, last.error
    assert headers["x-toolmend-rescued"] == first.problems[0].code
    sent = json.dumps(last.body)
    assert WEATHER in sent and TIME in sent


@pytest.mark.slow
def test_proxy_v1_responses_is_rescued_with_its_header(
    server: StrictProviderServer, proxy: str
) -> None:
    refuse_next(server, UNKNOWN_RULE)
    items = [
        {"role": "user", "content": "List the project, then the time."},
        {"type": "function_call", "call_id": "call_ls", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_ls", "output": WEATHER},
        {"role": "user", "content": "Summarize."},
    ]
    status, headers, body = post(proxy, "/v1/responses", {"model": "gpt", "input": items})
    assert status == 200, body
    assert_rescued_upstream(server, WEATHER)
    assert headers["x-toolmend-rescued"] == "flattened"


@pytest.mark.slow
def test_proxy_with_toolmend_rescue_0_lets_the_400_through(
    server: StrictProviderServer, tmp_path: Path
) -> None:
    """``TOOLMEND_RESCUE=0`` in the proxy's environment: the provider's 400 reaches the client
    after one upstream request (the same config without it rescues: the tests above)."""
    with _running(server, tmp_path, {"TOOLMEND_RESCUE": "0"}) as off:
        server.clear()  # what the proxy asked the server while it started
        refuse_next(server, UNKNOWN_RULE)
        status, headers, body = post(
            off, "/v1/chat/completions", {"model": "gpt", "messages": chat_history()}
        )
    assert status == 400, body
    assert "Tool use is not enabled" in body
    assert [r.refused for r in server.requests] == [True]
    assert "x-toolmend-rescued" not in headers
