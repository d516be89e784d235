"""The strict provider server, driven through the real SDKs: openai (chat and responses),
anthropic, google-genai and litellm.

For each provider a broken history must come back as the SDK's own 400 error carrying the
provider's exact text, and a valid one as a parsed 200 reply, plain and streamed. LiteLLM runs
offline: ``LITELLM_LOCAL_MODEL_COST_MAP=True`` keeps it from fetching its model cost map at
import, and every request goes to 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import socket
import urllib.error
import urllib.request
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

import toolmend
from toolmend.formats import names as format_names
from toolmend.profiles import PROFILES
from toolmend.testing import RecordedRequest, Reply, StrictProviderServer, ToolCall

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

pytestmark = pytest.mark.filterwarnings(
    # LiteLLM's own typed dicts make pydantic warn on import; nothing of ours.
    "ignore:.*ReadOnly.*:UserWarning"
)


def _needs(format_name: str, provider: str) -> pytest.MarkDecorator:
    missing = [
        what
        for what, present in (
            (f"format {format_name!r}", format_name in format_names()),
            (f"profile {provider!r}", provider in PROFILES),
        )
        if not present
    ]
    return pytest.mark.skipif(
        bool(missing),
        reason=f"{' and '.join(missing)} not in toolmend yet: the server answers 200 unjudged",
    )


needs_responses = _needs("openai-responses", "openai")
needs_anthropic = _needs("anthropic", "anthropic")
needs_gemini = _needs("gemini", "gemini")

# --- histories ---------------------------------------------------------------------------------


def _call(call_id: str, name: str = "get_weather", arguments: str = '{"city": "Paris"}') -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _chat_valid(call_id: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [_call(call_id)]},
        {"role": "tool", "tool_call_id": call_id, "content": "21 C"},
    ]


ORPHAN_AFTER_SYSTEM = [
    {"role": "system", "content": "Be brief."},
    {"role": "tool", "tool_call_id": "call_1", "content": "21 C"},
    {"role": "user", "content": "And tomorrow?"},
]

# provider -> (model, valid history, broken history, exact error, envelope checks)
CHAT_CASES: dict[str, tuple[str, list[dict[str, Any]], list[dict[str, Any]], str, dict]] = {
    "openai": (
        "gpt-4o",
        _chat_valid("call_abc123"),
        ORPHAN_AFTER_SYSTEM,
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
        "message with 'tool_calls'.",
        {"type": "invalid_request_error", "param": "messages.[1].role", "code": None},
    ),
    "deepseek": (
        "deepseek-chat",
        _chat_valid("call_00_abc"),
        ORPHAN_AFTER_SYSTEM,
        "Messages with role 'tool' must be a response to a preceding message with 'tool_calls'",
        {"type": "invalid_request_error", "param": None, "code": "invalid_request_error"},
    ),
    "mistral": (
        "mistral-large-latest",
        _chat_valid("D681PevKs"),
        [*_chat_valid("D681PevKs"), {"role": "user", "content": "Thanks, and tomorrow?"}],
        "Unexpected role 'user' after role 'tool'",
        {"type": "invalid_request_message_order", "param": None, "code": "3230"},
    ),
    "groq": (
        "llama-3.3-70b-versatile",
        _chat_valid("call_abc123"),
        [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": "Sunny.", "reasoning_content": "easy"},
            {"role": "user", "content": "Thanks"},
        ],
        "'messages.1' : for 'role:assistant' the following must be satisfied"
        "[('messages.1' : property 'reasoning_content' is unsupported)]",
        {"type": "invalid_request_error"},
    ),
}


def _openai_client(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(api_key="test-key", base_url=base_url, max_retries=0)


@pytest.fixture
def server() -> Any:
    with StrictProviderServer() as running:
        yield running


# --- OpenAI Chat Completions and its family, through the openai SDK ---------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("provider", sorted(CHAT_CASES))
def test_chat_broken_history_gets_the_providers_400(
    server: StrictProviderServer, provider: str, stream: bool
) -> None:
    model, _, broken, text, envelope = CHAT_CASES[provider]
    client = _openai_client(server.base_url_for(provider) + "/v1")
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model=model, messages=broken, stream=stream)
    error = raised.value
    assert error.status_code == 400
    assert isinstance(error.body, dict)
    assert error.body["message"] == text
    for key, value in envelope.items():
        assert error.body[key] == value
    assert text in str(error)
    record = server.last_request
    assert (record.provider, record.status, record.error) == (provider, 400, text)
    assert record.problems and record.problems[0].provider_error == text


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("provider", sorted(CHAT_CASES))
def test_chat_valid_history_gets_the_scripted_reply(
    provider: str, stream: bool, strict_provider_factory: Any
) -> None:
    model, valid, _, _, _ = CHAT_CASES[provider]
    server = strict_provider_factory(provider)
    server.script([Reply.tool_calls(("get_time", {"zone": "CET"}), text="Let me check.")])
    client = _openai_client(server.openai_base_url)
    if stream:
        with client.chat.completions.stream(model=model, messages=valid) as events:
            for _ in events:
                pass
            message = events.get_final_completion().choices[0].message
    else:
        message = client.chat.completions.create(model=model, messages=valid).choices[0].message
    assert message.content == "Let me check."
    assert message.tool_calls is not None and len(message.tool_calls) == 1
    call = message.tool_calls[0]
    assert call.type == "function"
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "get_time",
        {"zone": "CET"},
    )
    assert call.id == server.last_request.call_ids[0]
    assert server.last_request.accepted and server.last_request.problems == ()


def test_async_clients_in_parallel(server: StrictProviderServer) -> None:
    import asyncio

    async def main() -> list[str | None]:
        client = openai.AsyncOpenAI(
            api_key="test-key", base_url=server.openai_base_url, max_retries=0
        )
        async with client:
            history = [{"role": "user", "content": "hi"}]
            completions = await asyncio.gather(
                *(client.chat.completions.create(model="m", messages=history) for _ in range(8))
            )
        return [c.choices[0].message.content for c in completions]

    server.script([f"reply {n}" for n in range(8)])
    answers = asyncio.run(main())
    assert sorted(answers, key=str) == sorted(f"reply {n}" for n in range(8))
    assert len(server.requests) == 8 and all(r.accepted for r in server.requests)


def test_chat_text_reply_plain_and_streamed(server: StrictProviderServer) -> None:
    client = _openai_client(server.openai_base_url)
    history = [{"role": "user", "content": "hi"}]
    server.script(["Hello there, how can I help you today?"])
    completion = client.chat.completions.create(model="gpt-4o", messages=history)
    assert completion.choices[0].message.content == "Hello there, how can I help you today?"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None and completion.usage.total_tokens > 0
    server.script(["Hello there, how can I help you today?"])
    chunks = list(
        client.chat.completions.create(
            model="gpt-4o",
            messages=history,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert text == "Hello there, how can I help you today?"
    assert chunks[-1].usage is not None


def test_parallel_calls_have_provider_shaped_ids(strict_provider_factory: Any) -> None:
    reply = Reply.tool_calls(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"}))
    shapes = {
        "openai": r"call_[A-Za-z0-9]{24}",
        "deepseek": r"call_00_[A-Za-z0-9]{24}",
        "mistral": r"[A-Za-z0-9]{9}",
        "groq": r"call_[A-Za-z0-9]{24}",
    }
    for provider, shape in shapes.items():
        server = strict_provider_factory(provider, replies=[reply])
        completion = _openai_client(server.openai_base_url).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Paris and Oslo?"}]
        )
        calls = completion.choices[0].message.tool_calls or []
        assert [c.function.name for c in calls] == ["get_weather", "get_weather"]
        assert all(__import__("re").fullmatch(shape, c.id) for c in calls), provider
        assert len({c.id for c in calls}) == 2


@pytest.mark.parametrize("provider", ["openai", "mistral", "deepseek"])
def test_an_agent_loop_runs_against_the_server(provider: str, strict_provider_factory: Any) -> None:
    server = strict_provider_factory(
        provider,
        replies=[
            Reply.tool_calls(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})),
            Reply.text("Paris 21 C, Oslo 12 C."),
        ],
    )
    client = _openai_client(server.openai_base_url)
    messages: list[Any] = [{"role": "user", "content": "Weather in Paris and Oslo?"}]
    for _ in range(5):
        message = client.chat.completions.create(model="m", messages=messages).choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            break
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": "some degrees"})
    assert messages[-1] == {"role": "assistant", "content": "Paris 21 C, Oslo 12 C."}
    assert [r.status for r in server.requests] == [200, 200]
    assert server.requests[1].history == messages[:-1]


# --- OpenAI Responses ---------------------------------------------------------------------------

RESPONSES_VALID = [
    {"role": "user", "content": "Weather in Paris?"},
    {
        "type": "function_call",
        "call_id": "call_abc123",
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
    },
    {"type": "function_call_output", "call_id": "call_abc123", "output": "21 C"},
]
RESPONSES_BROKEN = [
    {"role": "user", "content": "Weather in Paris?"},
    {"type": "function_call_output", "call_id": "call_abc123", "output": "21 C"},
]


@needs_responses
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_responses_broken_history_gets_openais_400(
    server: StrictProviderServer, stream: bool
) -> None:
    client = _openai_client(server.openai_base_url)
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.create(model="gpt-4.1", input=RESPONSES_BROKEN, stream=stream)
    text = "No tool call found for function call output with call_id call_abc123."
    assert isinstance(raised.value.body, dict)
    assert raised.value.body["message"] == text
    assert raised.value.body["param"] == "input"
    assert server.last_request.api == "responses" and server.last_request.status == 400


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_responses_valid_history_gets_the_scripted_reply(
    server: StrictProviderServer, stream: bool
) -> None:
    client = _openai_client(server.openai_base_url)
    server.script([Reply.tool_calls(("get_time", {"zone": "CET"}), text="Let me check.")])
    if stream:
        with client.responses.stream(model="gpt-4.1", input=RESPONSES_VALID) as events:
            kinds = [event.type for event in events]
            response = events.get_final_response()
        assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    else:
        response = client.responses.create(model="gpt-4.1", input=RESPONSES_VALID)
    assert response.output_text == "Let me check."
    calls = [item for item in response.output if item.type == "function_call"]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("get_time", {"zone": "CET"})]
    assert calls[0].call_id == server.last_request.call_ids[0]
    assert server.last_request.accepted


@needs_responses
def test_responses_previous_response_id_chains_stored_responses(
    server: StrictProviderServer,
) -> None:
    # An agent loop on stored responses sends only the new outputs; the calls they answer are
    # in the response it chains to, as on the real API.
    client = _openai_client(server.openai_base_url)
    server.script([Reply.tool_calls(("get_weather", {"city": "Paris"})), "21 C in Paris."])
    first = client.responses.create(model="gpt-4.1", input="Weather in Paris?")
    (call,) = [item for item in first.output if item.type == "function_call"]
    output = {"type": "function_call_output", "call_id": call.call_id, "output": "21 C"}
    second = client.responses.create(model="gpt-4.1", previous_response_id=first.id, input=[output])
    assert second.output_text == "21 C in Paris."
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.create(model="gpt-4.1", input=[output])
    assert raised.value.body["message"] == (
        f"No tool call found for function call output with call_id {call.call_id}."
    )
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.create(model="gpt-4.1", previous_response_id="resp_nope", input="hi")
    assert raised.value.code == "previous_response_not_found"


def test_responses_string_input_is_accepted(server: StrictProviderServer) -> None:
    response = _openai_client(server.openai_base_url).responses.create(model="gpt-4.1", input="hi")
    assert response.output_text == "OK"


# --- Anthropic Messages -------------------------------------------------------------------------

ANTHROPIC_VALID = [
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Checking."},
            {
                "type": "tool_use",
                "id": "toolu_01A",
                "name": "get_weather",
                "input": {"city": "Paris"},
            },
        ],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_01A", "content": "21 C"}],
    },
]
ANTHROPIC_BROKEN = [
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": [
            {
                "type": "tool_use",
                "id": "toolu_01A",
                "name": "get_weather",
                "input": {"city": "Paris"},
            },
        ],
    },
    {"role": "user", "content": "Are you there?"},
]
ANTHROPIC_ERROR = (
    "messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: "
    "toolu_01A. Each `tool_use` block must have a corresponding `tool_result` block in the next "
    "message."
)


def _anthropic_client(server: StrictProviderServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="test-key", base_url=server.anthropic_base_url, max_retries=0
    )


@needs_anthropic
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_anthropic_broken_history_gets_anthropics_400(
    server: StrictProviderServer, stream: bool
) -> None:
    client = _anthropic_client(server)
    kwargs: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 256,
        "messages": ANTHROPIC_BROKEN,
    }

    def send() -> Any:
        if not stream:
            return client.messages.create(**kwargs)
        with client.messages.stream(**kwargs) as events:
            return events.get_final_message()

    with pytest.raises(anthropic.BadRequestError) as raised:
        send()
    body = raised.value.body
    assert isinstance(body, dict)
    assert body["type"] == "error"
    assert body["error"] == {"type": "invalid_request_error", "message": ANTHROPIC_ERROR}
    assert server.last_request.provider == "anthropic-no-prefill"  # a Claude 4.6 model


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_anthropic_valid_history_gets_the_scripted_reply(
    server: StrictProviderServer, stream: bool
) -> None:
    client = _anthropic_client(server)
    server.script(
        [Reply.tool_calls(("get_time", {"zone": "CET"}), ("get_date", {}), text="Let me check.")]
    )
    kwargs: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 256,
        "messages": ANTHROPIC_VALID,
    }
    if stream:
        with client.messages.stream(**kwargs) as events:
            message = events.get_final_message()
    else:
        message = client.messages.create(**kwargs)
    assert message.stop_reason == "tool_use"
    assert message.content[0].type == "text" and message.content[0].text == "Let me check."
    uses = [block for block in message.content if block.type == "tool_use"]
    assert [(u.name, u.input) for u in uses] == [("get_time", {"zone": "CET"}), ("get_date", {})]
    assert all(u.id.startswith("toolu_01") for u in uses)
    assert [u.id for u in uses] == list(server.last_request.call_ids)


# --- Gemini -------------------------------------------------------------------------------------

GEMINI_VALID = [
    {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
    {
        "role": "model",
        "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}],
    },
    {
        "role": "user",
        "parts": [{"functionResponse": {"name": "get_weather", "response": {"result": "21 C"}}}],
    },
]
GEMINI_BROKEN = [
    {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
    {
        "role": "user",
        "parts": [{"functionResponse": {"name": "get_weather", "response": {"result": "21 C"}}}],
    },
]
GEMINI_ERROR = (
    "Please ensure that function response turn comes immediately after a function call turn."
)


def _genai_client(server: StrictProviderServer) -> genai.Client:
    return genai.Client(
        api_key="test-key", http_options=genai_types.HttpOptions(base_url=server.gemini_base_url)
    )


@needs_gemini
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_gemini_broken_history_gets_googles_400(server: StrictProviderServer, stream: bool) -> None:
    client = _genai_client(server)

    def send() -> Any:
        models = client.models
        if stream:
            return list(
                models.generate_content_stream(model="gemini-2.5-flash", contents=GEMINI_BROKEN)
            )
        return models.generate_content(model="gemini-2.5-flash", contents=GEMINI_BROKEN)

    with pytest.raises(genai_errors.ClientError) as raised:
        send()
    error = raised.value
    assert (error.code, error.status, error.message) == (400, "INVALID_ARGUMENT", GEMINI_ERROR)
    assert server.last_request.provider == "gemini"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_gemini_valid_history_gets_the_scripted_reply(
    server: StrictProviderServer, stream: bool
) -> None:
    client = _genai_client(server)
    server.script([Reply.tool_calls(("get_time", {"zone": "CET"}), ("get_date", {}))])
    if stream:
        chunks = list(
            client.models.generate_content_stream(model="gemini-2.5-flash", contents=GEMINI_VALID)
        )
        calls = [call for chunk in chunks for call in chunk.function_calls or []]
    else:
        response = client.models.generate_content(model="gemini-2.5-flash", contents=GEMINI_VALID)
        calls = response.function_calls or []
    assert [(c.name, c.args) for c in calls] == [("get_time", {"zone": "CET"}), ("get_date", {})]
    assert server.last_request.stream is stream
    assert server.last_request.query.get("alt") == ("sse" if stream else None)


def test_gemini_text_reply_streams_in_pieces(server: StrictProviderServer) -> None:
    server.script(["It is sunny in Paris today."])
    client = _genai_client(server)  # keep it: a collected client closes its connection
    chunks = list(
        client.models.generate_content_stream(model="gemini-2.5-flash", contents="Weather?")
    )
    assert len(chunks) > 1
    assert "".join(chunk.text or "" for chunk in chunks) == "It is sunny in Paris today."


def test_gemini_3_calls_carry_a_thought_signature(server: StrictProviderServer) -> None:
    server.script([Reply.tool_calls(("get_weather", {"city": "Paris"}), ("get_time", {}))])
    client = _genai_client(server)
    response = client.models.generate_content(model="gemini-3-flash-preview", contents="Weather?")
    assert response.candidates and response.candidates[0].content
    parts = response.candidates[0].content.parts or []
    assert parts[0].thought_signature and not parts[1].thought_signature


@needs_gemini
def test_gemini_3_loop_keeps_signatures_and_unsigned_history_is_rejected(
    server: StrictProviderServer,
) -> None:
    client = _genai_client(server)
    server.script([Reply.tool_calls(("get_weather", {"city": "Paris"})), "21 C."])
    model = "gemini-3-flash-preview"
    contents: list[Any] = [genai_types.Content(role="user", parts=[genai_types.Part(text="Hi")])]
    first = client.models.generate_content(model=model, contents=contents)
    assert first.candidates and first.candidates[0].content
    contents.append(first.candidates[0].content)
    contents.append(
        genai_types.Content(
            role="user",
            parts=[genai_types.Part.from_function_response(name="get_weather", response={"t": 21})],
        )
    )
    assert client.models.generate_content(model=model, contents=contents).text == "21 C."
    assert server.last_request.provider == "gemini-3"
    with pytest.raises(genai_errors.ClientError) as raised:
        client.models.generate_content(model=model, contents=GEMINI_VALID)
    assert "missing a thought_signature" in (raised.value.message or "")
    assert client.models.generate_content(model="gemini-2.5-flash", contents=GEMINI_VALID).text
    assert server.last_request.provider == "gemini"


@needs_anthropic
def test_anthropic_thinking_requests_are_judged_with_thinking_rules(
    server: StrictProviderServer,
) -> None:
    client = _anthropic_client(server)
    with pytest.raises(anthropic.BadRequestError) as raised:
        client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=2048,
            thinking={"type": "enabled", "budget_tokens": 1024},
            messages=ANTHROPIC_VALID,
        )
    assert server.last_request.provider == "anthropic-thinking-no-prefill"  # a Claude 4.6 model
    assert "When `thinking` is enabled, a final `assistant` message must start with a thinking" in (
        str(raised.value)
    )
    client.messages.create(model="claude-sonnet-4-6", max_tokens=256, messages=ANTHROPIC_VALID)
    assert server.last_request.provider == "anthropic-no-prefill"  # a Claude 4.6 model


@needs_anthropic
def test_a_prefill_to_a_claude_4_6_model_is_refused_with_thinking_on_too(
    server: StrictProviderServer,
) -> None:
    """Thinking on does not give the models without prefill their prefill back: the request
    ending on assistant text gets Anthropic's refusal (it was judged by ``anthropic-thinking``,
    which has no prefill rule, and accepted), and its repair is accepted."""
    client = _anthropic_client(server)
    adaptive = {"type": "adaptive"}
    prefill = [
        {"role": "user", "content": "Write a haiku."},
        {"role": "assistant", "content": [{"type": "text", "text": "Autumn"}]},
    ]
    with pytest.raises(anthropic.BadRequestError) as raised:
        client.messages.create(
            model="claude-opus-4-6", max_tokens=2048, thinking=adaptive, messages=prefill
        )
    assert server.last_request.provider == "anthropic-thinking-no-prefill"
    body = raised.value.body
    assert isinstance(body, dict)
    assert body["error"] == {
        "type": "invalid_request_error",
        "message": "This model does not support assistant message prefill. The conversation "
        "must end with a user message.",
    }
    profile = toolmend.request_profile("anthropic", model="claude-opus-4-6", thinking=adaptive)
    fixed = toolmend.sanitize(prefill, provider=profile, format="anthropic")
    client.messages.create(
        model="claude-opus-4-6", max_tokens=2048, thinking=adaptive, messages=fixed
    )
    assert server.last_request.accepted
    client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=2048,
        thinking={"type": "enabled", "budget_tokens": 1024},
        messages=prefill,
    )
    assert server.last_request.accepted  # a model that takes prefill


# --- LiteLLM ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def litellm() -> Any:
    module = pytest.importorskip("litellm")
    module.suppress_debug_info = True
    return module


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_litellm_deepseek_broken_and_valid(
    server: StrictProviderServer, litellm: Any, stream: bool
) -> None:
    api_base = server.base_url_for("deepseek") + "/v1"
    _, valid, broken, text, _ = CHAT_CASES["deepseek"]

    def send(messages: list[dict[str, Any]]) -> Any:
        response = litellm.completion(
            model="deepseek/deepseek-chat",
            api_base=api_base,
            api_key="k",
            messages=messages,
            stream=stream,
        )
        return list(response) if stream else response

    with pytest.raises(litellm.BadRequestError) as raised:
        send(broken)
    assert raised.value.status_code == 400
    assert text in str(raised.value)
    server.script([Reply.text("Sunny and 21 degrees in Paris.")])
    response = send(valid)
    if stream:
        content = "".join(chunk.choices[0].delta.content or "" for chunk in response)
    else:
        content = response.choices[0].message.content
    assert content == "Sunny and 21 degrees in Paris."
    assert [r.provider for r in server.requests] == ["deepseek", "deepseek"]


def test_litellm_mistral_is_judged_by_its_model_name(
    server: StrictProviderServer, litellm: Any
) -> None:
    _, valid, broken, text, _ = CHAT_CASES["mistral"]
    with pytest.raises(litellm.BadRequestError) as raised:
        litellm.completion(
            model="mistral/mistral-large-latest",
            api_base=server.openai_base_url,
            api_key="k",
            messages=broken,
        )
    assert text in str(raised.value)
    assert server.last_request.provider == "mistral"
    server.script([Reply.tool_calls(("get_time", {}))])
    response = litellm.completion(
        model="mistral/mistral-large-latest",
        api_base=server.openai_base_url,
        api_key="k",
        messages=valid,
    )
    call_id = response.choices[0].message.tool_calls[0].id
    assert len(call_id) == 9 and call_id.isalnum()


@needs_anthropic
def test_litellm_anthropic_broken_history(server: StrictProviderServer, litellm: Any) -> None:
    # LiteLLM turns an OpenAI history into Anthropic blocks; a user turn between a call and
    # its result reaches Anthropic as a tool_use without its tool_result right after it.
    broken = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [_call("toolu_01A")]},
        {"role": "user", "content": "Are you there?"},
    ]
    with pytest.raises(litellm.BadRequestError) as raised:
        litellm.completion(
            model="anthropic/claude-sonnet-4-6",
            api_base=server.anthropic_base_url,
            api_key="k",
            messages=broken,
        )
    assert "`tool_use` ids were found without `tool_result` blocks" in str(raised.value)
    assert server.last_request.api == "messages"


def test_litellm_reaches_anthropic_and_gemini_routes(
    server: StrictProviderServer, litellm: Any
) -> None:
    history = [{"role": "user", "content": "Weather in Paris?"}]
    server.script(["Sunny.", Reply.tool_calls(("get_weather", {"city": "Paris"}))])
    claude = litellm.completion(
        model="anthropic/claude-sonnet-4-6",
        api_base=server.anthropic_base_url,
        api_key="k",
        messages=history,
    )
    assert claude.choices[0].message.content == "Sunny."
    gemini = litellm.completion(
        model="gemini/gemini-2.5-flash",
        api_base=server.base_url + "/v1beta",
        api_key="k",
        messages=history,
    )
    call = gemini.choices[0].message.tool_calls[0]
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "get_weather",
        {"city": "Paris"},
    )
    assert [r.api for r in server.requests] == ["messages", "gemini"]


# --- choosing the provider, recording, lifecycle ------------------------------------------------


def _post(url: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_provider_is_picked_by_header_path_model_server_and_route(
    strict_provider_factory: Any,
) -> None:
    server = strict_provider_factory()
    chat = {"model": "gpt-4o", "messages": ORPHAN_AFTER_SYSTEM}
    url = server.openai_base_url + "/chat/completions"
    _post(url, chat)
    _post(url, chat, {"X-Toolmend-Provider": "deepseek"})
    _post(server.base_url_for("mistral") + "/v1/chat/completions", chat)
    _post(url, {**chat, "model": "groq/llama-3.3-70b-versatile"})
    _post(url, {**chat, "model": "deepseek-reasoner"})
    _post(url, {**chat, "model": "codestral-latest"})
    assert [r.provider for r in server.requests] == [
        "openai",
        "deepseek",
        "mistral",
        "groq",
        "deepseek-reasoner",
        "mistral",
    ]
    pinned = strict_provider_factory("groq")
    _post(pinned.openai_base_url + "/chat/completions", {**chat, "model": "deepseek-chat"})
    _post(pinned.openai_base_url + "/chat/completions", chat, {"X-Toolmend-Provider": "openai"})
    assert [r.provider for r in pinned.requests] == ["groq", "openai"]


def test_unknown_provider_header_is_a_400_naming_it(server: StrictProviderServer) -> None:
    status, body = _post(
        server.openai_base_url + "/chat/completions",
        {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        {"X-Toolmend-Provider": "deepsek"},
    )
    assert status == 400
    assert "Unknown provider 'deepsek'. Did you mean 'deepseek'?" in body["error"]["message"]


def test_unknown_provider_argument_fails_at_once() -> None:
    with pytest.raises(toolmend.UnknownNameError, match="Did you mean 'mistral'"):
        StrictProviderServer(provider="mistrall")


def test_requests_are_recorded_without_credentials(server: StrictProviderServer) -> None:
    client = openai.OpenAI(
        api_key="sk-secret",
        base_url=server.openai_base_url,
        max_retries=0,
        default_headers={"X-Trace": "t-1"},
    )
    history = [{"role": "user", "content": "hi"}]
    client.chat.completions.create(model="gpt-4o", messages=history)
    record = server.last_request
    assert isinstance(record, RecordedRequest)
    assert (record.method, record.path, record.api, record.format) == (
        "POST",
        "/v1/chat/completions",
        "chat",
        "openai",
    )
    assert record.body["messages"] == history and record.history == history
    assert record.headers["x-trace"] == "t-1"
    assert "authorization" not in record.headers
    assert "sk-secret" not in json.dumps(dict(record.headers))
    assert record.judged and record.accepted and record.reply == Reply.text("OK")
    gemini = genai.Client(
        api_key="g-secret", http_options=genai_types.HttpOptions(base_url=server.gemini_base_url)
    )
    gemini.models.generate_content(model="gemini-2.5-flash", contents="hi")
    assert "x-goog-api-key" not in server.last_request.headers
    assert "g-secret" not in json.dumps([dict(r.headers) for r in server.requests])


def test_script_is_used_only_by_accepted_requests(server: StrictProviderServer) -> None:
    server.script([Reply.text("first"), "second"])
    client = _openai_client(server.openai_base_url)
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="gpt-4o", messages=ORPHAN_AFTER_SYSTEM)
    history = [{"role": "user", "content": "hi"}]
    answers = [
        client.chat.completions.create(model="gpt-4o", messages=history).choices[0].message.content
        for _ in range(3)
    ]
    assert answers == ["first", "second", "OK"]
    assert server.pending_replies == []
    server.clear()
    assert server.requests == []
    with pytest.raises(LookupError):
        _ = server.last_request


def test_default_reply_and_replies_argument() -> None:
    with StrictProviderServer(replies=["one"], default_reply=Reply.text("fallback")) as server:
        client = _openai_client(server.openai_base_url)
        history = [{"role": "user", "content": "hi"}]
        answers = [
            client.chat.completions.create(model="m", messages=history).choices[0].message.content
            for _ in range(2)
        ]
    assert answers == ["one", "fallback"]


def test_reply_builders() -> None:
    reply = Reply.tool_calls(ToolCall("a", {"x": 1}), ("b", {"y": 2}), ("c",), "d", text="t")
    assert [(c.name, dict(c.arguments)) for c in reply.calls] == [
        ("a", {"x": 1}),
        ("b", {"y": 2}),
        ("c", {}),
        ("d", {}),
    ]
    assert reply.content == "t" and not reply.finished and Reply.text("x").finished
    with pytest.raises(ValueError, match="at least one"):
        Reply.tool_calls()
    with pytest.raises(TypeError):
        Reply.tool_calls(("a", "not a mapping"))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        StrictProviderServer(replies=[42])  # type: ignore[list-item]


def test_bad_requests_get_json_errors(server: StrictProviderServer) -> None:
    status, body = _post(server.openai_base_url + "/chat/completions", b"{not json")
    assert status == 400 and body["error"]["type"] == "invalid_request_error"
    status, body = _post(server.openai_base_url + "/chat/completions", {"model": "m"})
    assert (status, body["error"]["message"]) == (400, "Missing required parameter: 'messages'.")
    status, body = _post(server.base_url + "/v1/embeddings", {"input": "x"})
    assert status == 404 and body["error"]["code"] == "unknown_url"
    assert [r.status for r in server.requests] == [400, 400, 404]
    assert server.requests[-1].api is None


def test_unreadable_history_is_a_400_naming_the_message(server: StrictProviderServer) -> None:
    status, body = _post(
        server.openai_base_url + "/chat/completions",
        {"model": "m", "messages": [{"role": "user", "content": "hi"}, "not a message"]},
    )
    assert status == 400
    assert "message 1" in body["error"]["message"]


def test_start_stop_lifecycle() -> None:
    server = StrictProviderServer()
    assert not server.running
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.base_url
    server.start()
    assert server.start() is server and server.running
    port = server.port
    client = _openai_client(server.openai_base_url)
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    server.stop()
    server.stop()
    assert not server.running
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0


def test_each_route_has_its_own_address(server: StrictProviderServer) -> None:
    assert server.base_url.startswith("http://127.0.0.1:")
    assert server.openai_base_url == server.base_url + "/v1"
    assert server.anthropic_base_url == server.gemini_base_url == server.base_url
    assert server.base_url_for("azure") == server.base_url + "/openai"


# --- the pytest plugin --------------------------------------------------------------------------


def test_plugin_fixture_gives_a_running_server(strict_provider: StrictProviderServer) -> None:
    assert strict_provider.running and strict_provider.provider is None
    completion = _openai_client(strict_provider.openai_base_url).chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "hi"}]
    )
    assert completion.choices[0].message.content == "OK"


@pytest.mark.strict_provider(provider="deepseek", replies=["scripted"])
def test_plugin_marker_configures_the_server(strict_provider: StrictProviderServer) -> None:
    assert strict_provider.provider == "deepseek"
    client = _openai_client(strict_provider.openai_base_url)
    with pytest.raises(openai.BadRequestError, match="preceding message"):
        client.chat.completions.create(model="gpt-4o", messages=ORPHAN_AFTER_SYSTEM)
    completion = client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "hi"}]
    )
    assert completion.choices[0].message.content == "scripted"


def test_plugin_is_registered_as_an_entry_point() -> None:
    from importlib.metadata import entry_points

    found = [ep for ep in entry_points(group="pytest11") if ep.name == "toolmend"]
    assert [ep.value for ep in found] == ["toolmend.testing.plugin"]


@pytest.mark.slow
def test_testing_package_imports_no_sdk() -> None:
    import subprocess
    import sys

    code = (
        "import sys, toolmend.testing, toolmend.testing.plugin;"
        "print(sorted(m for m in ('openai', 'anthropic', 'google.genai', 'litellm', 'httpx')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
