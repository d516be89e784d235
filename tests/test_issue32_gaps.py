"""Issue 32, the gaps the first round left: each class with a test that fails on the code before.

1. The openai patch's Responses rows follow the client's host: DeepSeek's ``/v1/responses``,
   a self-hosted server's, OpenAI's and Azure's (model-picked), through the real SDK against
   the strict server.
2. A trailing call on Bedrock (Converse) and Gemini (``contents``) is reported and answered with
   the format's placeholder, unless the policy keeps the frontier waiting; the one-pass checks
   and range scans hand it to the full path; the strict server refuses it.
3. LangChain messages with blank user text bound for Anthropic are flagged and repaired as the
   OpenAI-shaped ones are.
"""

from __future__ import annotations

import importlib
import json
import logging
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import toolmend
import toolmend.integrations.patch as tm
from toolmend._planstate import USER_BRIDGE_TEXT as BRIDGE
from toolmend.formats import get as get_format
from toolmend.profiles import get_profile

from support.patch_cases import wire

# --- 1. the openai patch's Responses rows follow the host ----------------------------------------

INTERRUPTED = [
    {"role": "user", "content": "Weather in Paris?"},
    {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{}"},
    {"role": "developer", "content": "Answer briefly."},
    {"type": "function_call_output", "call_id": "call_1", "output": "21 C"},
]
"""A developer message between a call and its output: OpenAI's Responses API takes it, DeepSeek's
refuses it ("No tool output found for tool call call_1.")."""

UNANSWERED = [
    {"role": "user", "content": "Weather in Paris?"},
    {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{}"},
    {"role": "user", "content": "Never mind, tell me a joke."},
]
"""A call left without an output: OpenAI's rules answer it with a placeholder; a self-hosted
server renders it as it is (its templates take an unanswered call)."""


@pytest.fixture
def _patch_clean() -> Iterator[None]:
    tm.unpatch()
    yield
    tm.unpatch()


@pytest.fixture
def providers(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The provider each patched call hands to ``hooks.mend``, in order."""
    seen: list[str] = []
    real = tm.mend

    def recording(messages: Any, **kwargs: Any) -> Any:
        seen.append(kwargs["provider"])
        return real(messages, **kwargs)

    monkeypatch.setattr(tm, "mend", recording)
    return seen


def _openai() -> Any:
    return pytest.importorskip("openai")


def _to_server(port: int) -> Any:
    """An http client for openai that sends every request to the strict server on 127.0.0.1,
    whatever host the client was given (the path is kept)."""
    openai = _openai()
    http = next(
        importlib.import_module(base.__module__.split(".")[0])
        for base in openai.DefaultHttpxClient.__mro__
        if base.__name__ == "Client" and base.__module__.startswith("httpx")
    )

    class ToServer(http.HTTPTransport):  # type: ignore[misc,name-defined]
        def handle_request(self, request: Any) -> Any:
            request.url = request.url.copy_with(scheme="http", host="127.0.0.1", port=port)
            return super().handle_request(request)

    return openai.DefaultHttpxClient(transport=ToServer())


def _respond(base_url: str, model: str, history: Any, port: int | None = None) -> None:
    openai = _openai()
    client: dict[str, Any] = {} if port is None else {"http_client": _to_server(port)}
    with openai.OpenAI(api_key="test", base_url=base_url, max_retries=0, **client) as c:
        c.responses.create(model=model, input=history)


@pytest.mark.usefixtures("_patch_clean")
def test_responses_on_deepseek_host_meet_deepseek_responses(
    strict_provider_factory: Callable[..., Any], providers: list[str]
) -> None:
    assert toolmend.check(INTERRUPTED, provider="openai", format="openai-responses") == []
    server = strict_provider_factory("deepseek")  # its /v1/responses judges deepseek-responses
    openai = _openai()
    with pytest.raises(openai.BadRequestError, match="No tool output found for tool call call_1"):
        _respond("https://api.deepseek.com/v1", "deepseek-chat", INTERRUPTED, server.port)
    tm.patch()
    _respond("https://api.deepseek.com/v1", "deepseek-chat", INTERRUPTED, server.port)
    assert server.last_request.path == "/v1/responses"
    assert server.last_request.accepted, server.last_request.error
    assert providers == ["deepseek-responses"]
    assert server.last_request.history == wire(
        toolmend.sanitize(INTERRUPTED, provider="deepseek", format="openai-responses")
    )


@pytest.mark.usefixtures("_patch_clean")
def test_responses_on_self_hosted_server_meet_its_rules(
    strict_provider_factory: Callable[..., Any], providers: list[str]
) -> None:
    server = strict_provider_factory("vllm")
    tm.patch()
    # a model whose chat template toolmend knows, at a host no table names: a self-hosted server
    _respond(server.openai_base_url, "mistralai/Devstral-Small-2505", UNANSWERED)
    assert server.last_request.accepted, server.last_request.error
    assert providers == ["hf-template-responses"]
    assert server.last_request.history == wire(UNANSWERED)  # its templates take the call as it is


@pytest.mark.parametrize(
    ("base_url", "model", "profile"),
    [
        ("https://api.openai.com/v1", "gpt-4o", "openai-responses"),
        ("https://api.openai.com/v1", "o3", "openai-responses-reasoning"),
        ("https://myco.openai.azure.com/openai/v1", "gpt-5", "openai-responses-reasoning"),
        ("https://gateway.example.com/v1", "gpt-4o", "openai-responses"),
    ],
)
@pytest.mark.usefixtures("_patch_clean")
def test_responses_on_openai_hosts_meet_model_picked_profile(
    base_url: str,
    model: str,
    profile: str,
    strict_provider_factory: Callable[..., Any],
    providers: list[str],
) -> None:
    server = strict_provider_factory()
    tm.patch()
    _respond(base_url, model, UNANSWERED, server.port)
    assert server.last_request.accepted, server.last_request.error
    assert providers == [profile]


@pytest.mark.parametrize(
    ("provider", "profile"),
    [
        ("deepseek", "deepseek-responses"),  # named: wins over api.openai.com
        ("mistral", "openai-responses"),  # no Responses API toolmend has rules for
        ("deepseek-reasoner", "openai-responses"),  # a chat profile would refuse the input
    ],
)
@pytest.mark.usefixtures("_patch_clean")
def test_responses_named_provider(
    provider: str,
    profile: str,
    strict_provider_factory: Callable[..., Any],
    providers: list[str],
) -> None:
    server = strict_provider_factory()
    tm.patch(provider=provider)
    _respond("https://api.openai.com/v1", "gpt-4o", INTERRUPTED, server.port)
    assert server.last_request.accepted, server.last_request.error
    assert providers == [profile]


# --- 2. a trailing call on Bedrock and Gemini ----------------------------------------------------

BEDROCK_TRAILING = [
    {"role": "user", "content": [{"text": "Weather in Paris?"}]},
    {
        "role": "assistant",
        "content": [
            {"text": "Checking."},
            {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {}}},
            {"toolUse": {"toolUseId": "tooluse_2", "name": "get_time", "input": {}}},
        ],
    },
]
GEMINI_TRAILING = [
    {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
    {
        "role": "model",
        "parts": [
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
            {"functionCall": {"name": "get_time", "args": {}}},
        ],
    },
]
TRAILING = {"bedrock": BEDROCK_TRAILING, "gemini": GEMINI_TRAILING}


@pytest.mark.parametrize("provider", ["bedrock", "bedrock-tools-alone", "gemini", "gemini-3"])
def test_a_trailing_call_is_reported(provider: str) -> None:
    history = TRAILING[provider.split("-")[0]]
    problems = toolmend.check(history, provider=provider)
    trailing = [p for p in problems if p.code == "missing_result"]
    assert [p.index for p in trailing] == [1]
    assert trailing[0].rule == get_profile(provider).checks["missing_result"].rule


def test_a_trailing_bedrock_call_is_answered_with_an_error_result() -> None:
    fixed = toolmend.repair(BEDROCK_TRAILING, provider="bedrock")
    assert fixed.messages[:2] == BEDROCK_TRAILING
    assert fixed.messages[2] == {
        "role": "user",
        "content": [
            {
                "toolResult": {
                    "toolUseId": call_id,
                    "content": [{"text": toolmend.PLACEHOLDER_TEXT}],
                    "status": "error",
                }
            }
            for call_id in ("tooluse_1", "tooluse_2")
        ],
    }
    assert [c.code for c in fixed.changes] == ["answered_missing_call"] * 2
    assert toolmend.check(fixed.messages, provider="bedrock") == []


def test_a_trailing_gemini_call_is_answered_by_name() -> None:
    fixed = toolmend.repair(GEMINI_TRAILING, provider="gemini")
    assert fixed.messages[2] == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": name, "response": {"error": toolmend.PLACEHOLDER_TEXT}}}
            for name in ("get_weather", "get_time")
        ],
    }
    assert toolmend.check(fixed.messages, provider="gemini") == []


@pytest.mark.parametrize("provider", ["bedrock", "gemini"])
def test_a_trailing_call_waits_where_the_frontier_is_kept(provider: str) -> None:
    history = TRAILING[provider]
    kept = toolmend.repair(history, provider=provider, policy=toolmend.Policy(frontier="keep"))
    assert kept.messages is history
    assert [p.code for p in kept.problems_left] == ["missing_result"]


@pytest.mark.parametrize("provider", ["bedrock", "gemini"])
def test_the_scans_hand_a_trailing_call_to_the_full_path(provider: str) -> None:
    history = TRAILING[provider]
    module = get_format(provider)
    profile = get_profile(provider)
    assert module.quick_valid(history, profile) is False
    assert module.dirty_spans(history, profile) is None
    # a long clean history before it: the whole is still repaired, the placeholder last
    answered = toolmend.sanitize(history, provider=provider)
    key, model = ("content", "assistant") if provider == "bedrock" else ("parts", "model")
    chat = [{"role": "user", key: [{"text": "Hi"}]}, {"role": model, key: [{"text": "Hello"}]}]
    long = [*chat * 50, *history]
    assert module.quick_valid(long[:-1], profile) is True
    fixed = toolmend.sanitize(long, provider=provider)
    assert fixed[:-1] == long
    assert fixed[-1] == answered[-1]


def _post(url: str, body: Any) -> tuple[int, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_the_strict_server_refuses_a_trailing_call(strict_provider: Any) -> None:
    root = strict_provider.base_url
    status, body = _post(
        f"{root}/model/anthropic.claude-3-5-sonnet-20240620-v1:0/converse",
        {"messages": BEDROCK_TRAILING},
    )
    assert status == 400
    assert "Expected toolResult blocks" in body["message"]
    status, body = _post(
        f"{root}/v1beta/models/gemini-2.5-flash:generateContent", {"contents": GEMINI_TRAILING}
    )
    assert status == 400
    assert "number of function response parts" in body["error"]["message"]
    for path, key, provider in (
        ("/model/anthropic.claude-3-5-sonnet-20240620-v1:0/converse", "messages", "bedrock"),
        ("/v1beta/models/gemini-2.5-flash:generateContent", "contents", "gemini"),
    ):
        fixed = toolmend.sanitize(TRAILING[provider], provider=provider)
        status, body = _post(root + path, {key: fixed})
        assert status == 200, body


# --- 3. blank user text in LangChain messages bound for Anthropic ------------------------------

BLANK_CONTENTS: list[tuple[Any, Any]] = [
    # (the human message's content, what the repair leaves of it)
    ("", BRIDGE),
    ("  \n", BRIDGE),
    ([], BRIDGE),
    ([{"type": "text", "text": " "}], BRIDGE),
    ([{"type": "text", "text": ""}, {"type": "text", "text": "\t"}], BRIDGE),
    ([{"type": "text", "text": "Weather?"}, {"type": "text", "text": ""}], None),
    (["Weather?", "   "], None),
]


@pytest.mark.parametrize(("content", "repaired"), BLANK_CONTENTS)
def test_blank_langchain_user_text_bound_for_anthropic(content: Any, repaired: Any) -> None:
    messages = pytest.importorskip("langchain_core.messages")
    history = [
        messages.HumanMessage(content="Hi"),
        messages.AIMessage(content="Hello."),
        messages.HumanMessage(content=content),
    ]
    problems = toolmend.check(history, provider="anthropic")
    assert [p.index for p in problems] == [2]
    assert problems[0].code in ("text_empty", "text_whitespace")
    # the same message written OpenAI-shaped is judged the same way
    shaped = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": content},
    ]
    if not any(isinstance(part, str) for part in content if isinstance(content, list)):
        assert [(p.code, p.index) for p in toolmend.check(shaped, provider="anthropic")] == [
            (p.code, p.index) for p in problems
        ]
    fixed = toolmend.repair(history, provider="anthropic")
    assert fixed.messages[:2] == history[:2]
    kept = [part for part in content if part not in ("   ", {"type": "text", "text": ""})]
    assert fixed.messages[2].content == (repaired if repaired is not None else kept)
    assert type(fixed.messages[2]) is messages.HumanMessage
    assert history[2].content == content  # the caller's message is not changed
    assert toolmend.check(fixed.messages, provider="anthropic") == []
    assert toolmend.check(history, provider="openai") == []  # OpenAI takes blank user text


@pytest.mark.usefixtures("_patch_clean")
def test_a_chat_waiting_for_this_turns_response_is_no_problem(
    strict_provider: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """google-genai chats with ``repair_chat_history=True``: the stored history ends on the
    model's calls that the turn being sent answers. Healing it says nothing about them (the
    rule on a trailing call is the request's, and the request carries the response)."""
    genai = pytest.importorskip("google.genai")
    types = pytest.importorskip("google.genai.types")
    tm.patch(repair_chat_history=True)
    client = genai.Client(
        api_key="test", http_options={"base_url": strict_provider.gemini_base_url}
    )
    history = [
        types.Content(role="user", parts=[types.Part(text="Weather in Paris?")]),
        types.Content(
            role="model",
            parts=[types.Part(function_call=types.FunctionCall(name="get_weather", args={}))],
        ),
    ]
    chat = client.chats.create(model="gemini-2.5-flash", history=history)
    response = types.FunctionResponse(name="get_weather", response={"result": "21 C"})
    with caplog.at_level(logging.INFO, logger="toolmend"):
        chat.send_message(types.Part(function_response=response))
    assert strict_provider.last_request.accepted, strict_provider.last_request.error
    assert [r.getMessage() for r in caplog.records if r.name == "toolmend"] == []
