"""The strict server's refusals: a rule toolmend does not know, answered in each provider's
envelope, for the histories it applies to, as often as asked."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from toolmend.testing import Refusal, StrictProviderServer

TEXT = "Tool use is not enabled for this deployment."

CALL = {"id": "call_1", "type": "function", "function": {"name": "w", "arguments": "{}"}}
CHAT_TOOLS = [
    {"role": "user", "content": "Weather?"},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "call_1", "content": "21 C"},
]
CHAT_PLAIN = [{"role": "user", "content": "Hi"}]

ROUTES: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    # route -> (path, body with tool traffic, body without)
    "chat": (
        "/v1/chat/completions",
        {"model": "gpt-4o", "messages": CHAT_TOOLS},
        {"model": "gpt-4o", "messages": CHAT_PLAIN},
    ),
    "mistral": (
        "/mistral/v1/chat/completions",
        {"model": "mistral-large-latest", "messages": [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": "", "tool_calls": [{**CALL, "id": "abcDEF123"}]},
            {"role": "tool", "tool_call_id": "abcDEF123", "content": "21 C"},
        ]},
        {"model": "mistral-large-latest", "messages": CHAT_PLAIN},
    ),
    "responses": (
        "/v1/responses",
        {"model": "gpt-4o", "input": [
            {"role": "user", "content": "Weather?"},
            {"type": "function_call", "call_id": "call_1", "name": "w", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "21 C"},
        ]},
        {"model": "gpt-4o", "input": "Hi"},
    ),
    "messages": (
        "/v1/messages",
        {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "21 C"}]},
        ]},
        {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": CHAT_PLAIN},
    ),
    "gemini": (
        "/v1beta/models/gemini-2.5-flash:generateContent",
        {"contents": [
            {"role": "user", "parts": [{"text": "Weather?"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "w", "args": {}}}]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "w", "response": {"t": "21 C"}}}]},
        ]},
        {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]},
    ),
    "converse": (
        "/model/us.anthropic.claude-sonnet-4-5-v1/converse",
        {"messages": [
            {"role": "user", "content": [{"text": "Weather?"}]},
            {"role": "assistant", "content": [
                {"toolUse": {"toolUseId": "t1", "name": "w", "input": {}}}]},
            {"role": "user", "content": [
                {"toolResult": {"toolUseId": "t1", "content": [{"text": "21 C"}]}}]},
        ]},
        {"messages": [{"role": "user", "content": [{"text": "Hi"}]}]},
    ),
}  # fmt: skip

ENVELOPES = {
    "chat": lambda body: body["error"]["message"],
    "mistral": lambda body: body["message"] if body["object"] == "error" else None,
    "responses": lambda body: body["error"]["message"],
    "messages": lambda body: body["error"]["message"] if body["type"] == "error" else None,
    "gemini": lambda body: (
        body["error"]["message"] if body["error"]["status"] == "INVALID_ARGUMENT" else None
    ),
    "converse": lambda body: body["message"],
}


def _post(server: StrictProviderServer, path: str, body: Any) -> tuple[int, Any, Any]:
    request = urllib.request.Request(
        server.base_url + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request) as answer:
            return answer.status, json.load(answer), answer.headers
    except urllib.error.HTTPError as error:
        return error.code, json.load(error), error.headers


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_a_refusal_answers_in_the_routes_envelope(route: str) -> None:
    path, with_tools, plain = ROUTES[route]
    with StrictProviderServer(refuse=TEXT) as server:
        status, body, headers = _post(server, path, plain)
        assert status == 200, body  # no tool traffic: the default refusal does not apply
        status, body, headers = _post(server, path, with_tools)
        assert status == 400 and ENVELOPES[route](body) == TEXT
        assert server.last_request.refused and server.last_request.problems == ()
        assert server.last_request.error == TEXT
        if route == "converse":
            assert headers["x-amzn-ErrorType"] == "ValidationException"
        assert not server.requests[0].refused


def test_times_and_always_and_the_order_refusals_are_tried() -> None:
    path, with_tools, plain = ROUTES["chat"]
    with StrictProviderServer() as server:
        server.refuse("first", when="always", times=1).refuse(Refusal("second", times=2))
        answers = [_post(server, path, body)[:2] for body in (plain, with_tools, with_tools)]
        answers.append(_post(server, path, with_tools)[:2])
        assert [status for status, _ in answers] == [400, 400, 400, 200]
        assert [body.get("error", {}).get("message") for _, body in answers[:3]] == [
            "first",
            "second",
            "second",
        ]


def test_a_history_the_profile_refuses_gets_the_profiles_error_first() -> None:
    path = "/v1/chat/completions"
    orphan = [{"role": "user", "content": "Hi"}, CHAT_TOOLS[2]]
    with StrictProviderServer(refuse=TEXT) as server:
        status, body, _ = _post(server, path, {"model": "gpt-4o", "messages": orphan})
        assert status == 400 and body["error"]["message"] != TEXT
        assert not server.last_request.refused


def test_a_refusal_may_carry_another_status() -> None:
    path, with_tools, _ = ROUTES["chat"]
    with StrictProviderServer(refuse=Refusal(TEXT, status=422)) as server:
        assert _post(server, path, with_tools)[0] == 422


@pytest.mark.parametrize(
    "bad",
    [{"when": "sometimes"}, {"times": 0}, {"status": 200}],
)
def test_a_bad_refusal_is_an_error_at_once(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="Refusal"):
        Refusal(TEXT, **bad)


@pytest.mark.strict_provider(refuse=TEXT)
def test_the_pytest_marker_passes_the_refusal(strict_provider: StrictProviderServer) -> None:
    path, with_tools, _ = ROUTES["chat"]
    status, body, _ = _post(strict_provider, path, with_tools)
    assert status == 400 and body["error"]["message"] == TEXT
