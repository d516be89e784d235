"""The LiteLLM integration, through real LiteLLM and real HTTP to the strict provider server.

Each provider gets one broken history; it must fail with that provider's 400 without the callback
and go through, accepted, with it, in all four call modes (sync, async, each streamed or not).
The damage kinds are spread across the providers. Then: Router fallbacks from DeepSeek to
Anthropic repaired per attempt, what the callback must never do (mutate, abort on its own bug),
the loop guard, where the changes show, the sync-path wrappers, and a real LiteLLM Proxy.
"""

from __future__ import annotations

import os

# before LiteLLM is imported: its cost map, and the Hugging Face tokenizers it fetches to count a
# Llama stream's tokens (Groq), stay local
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import asyncio
import copy
import importlib.util
import json
import logging
import runpy
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import litellm
import pytest
import wrapt
from litellm.integrations.custom_logger import CustomLogger

import toolmend
import toolmend._fastpath
from toolmend.integrations import litellm as hook
from toolmend.integrations.litellm import ToolMend
from toolmend.testing import StrictProviderServer

from support import litellm_proxy
from support.event_loops import close_loop
from support.litellm_proxy import free_port

ROOT = Path(__file__).resolve().parent.parent
MODES = ("sync", "async", "sync+stream", "async+stream")
Kwargs = dict[str, Any]

# --- histories ---------------------------------------------------------------------------------

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


def _call(call_id: str, name: str = "get_weather") -> dict[str, Any]:
    arguments = json.dumps({"city": "Paris"})
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _asks(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


def _result(call_id: str, text: str = "21 C", **extra: Any) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text, **extra}


def _user(text: str = "What's the weather in Paris?") -> dict[str, Any]:
    return {"role": "user", "content": text}


def history(damage: str, call_id: str = "call_1") -> list[Any]:
    """A history with one kind of damage (``call_id`` in the provider's own id shape)."""
    if damage == "orphan_result":
        return [_user(), _result("call_x"), _user("And tomorrow?")]
    if damage == "missing_result":
        return [_user(), _asks(_call(call_id)), _user("And tomorrow?")]
    if damage == "missing_result_at_end":
        return [_user(), _asks(_call(call_id), _call("call_2", "get_time")), _result("call_2")]
    if damage == "result_after_user_turn":
        return [_user(), _asks(_call(call_id)), _user("Still there?"), _result(call_id)]
    if damage == "duplicate_result":
        return [
            _user(),
            _asks(_call(call_id)),
            _result(call_id),
            _result(call_id),
            _user("And tomorrow?"),
        ]
    if damage == "gemini_opaque_id_name":
        # the result names the call by its opaque id and comes after a later call turn, so
        # LiteLLM cannot recover the function name and sends the id as the name
        return [
            _user(),
            _asks(_call(call_id)),
            _asks(_call("call_2", "get_time")),
            _result("call_2", "noon"),
            _result(call_id, name=call_id),
        ]
    if damage == "tool_content_parts":
        parts = [{"type": "text", "text": "21 C"}]
        return [_user(), _asks(_call(call_id)), _result(call_id, parts), _user("Thanks")]
    raise AssertionError(damage)


# --- where each provider lives on the strict server ---------------------------------------------


@dataclass(frozen=True)
class Target:
    """One LiteLLM provider: its deployment settings against the server and its damage."""

    provider: str
    profile: str
    damage: str
    settings: Callable[[StrictProviderServer, Kwargs], Kwargs]
    call_id: str = "call_1"

    @property
    def hook_profile(self) -> str:
        """The profile the callback holds the OpenAI-shaped history to: LiteLLM's own
        converter carries it to Gemini (``gemini-litellm``); the server judges what it sent
        with ``profile``."""
        return "gemini-litellm" if self.profile == "gemini" else self.profile


_AWS = {
    "aws_access_key_id": "AKIDTOOLMEND",
    "aws_secret_access_key": "toolmend-secret",
    "aws_region_name": "us-east-1",
}

TARGETS = [
    Target(
        "openai",
        "openai",
        "orphan_result",
        lambda s, _: {"model": "openai/gpt-4o", "api_base": s.openai_base_url, "api_key": "t"},
    ),
    Target(
        "azure",
        "openai",
        "missing_result",
        lambda s, _: {
            "model": "azure/my-gpt-4o",
            "api_base": s.base_url,
            "api_key": "t",
            "api_version": "2024-10-21",
        },
    ),
    Target(
        "deepseek",
        "deepseek",
        "duplicate_result",
        lambda s, _: {
            "model": "deepseek/deepseek-chat",
            "api_base": s.openai_base_url,
            "api_key": "t",
        },
    ),
    Target(
        "mistral",
        "mistral",
        "result_after_user_turn",
        lambda s, _: {
            "model": "mistral/mistral-large-latest",
            "api_base": s.openai_base_url,
            "api_key": "t",
        },
        call_id="aB3dE5gH7",
    ),
    Target(
        "groq",
        "groq",
        "tool_content_parts",
        lambda s, _: {
            "model": "groq/llama-3.3-70b-versatile",
            "api_base": s.base_url_for("groq") + "/openai/v1",
            "api_key": "t",
        },
    ),
    Target(
        "anthropic",
        "anthropic",
        "result_after_user_turn",
        lambda s, _: {
            "model": "anthropic/claude-sonnet-4-5",
            "api_base": s.base_url,
            "api_key": "t",
        },
        call_id="toolu_01A09q90qw90lq917835lq9",
    ),
    Target(
        "gemini",
        "gemini",
        "gemini_opaque_id_name",
        lambda s, _: {
            "model": "gemini/gemini-2.0-flash",
            "api_base": s.base_url + "/v1beta",
            "api_key": "t",
        },
    ),
    Target(
        "vertex_ai",
        "gemini",
        "missing_result",
        lambda s, extra: {
            "model": "vertex_ai/gemini-2.0-flash",
            "api_base": s.base_url,
            "vertex_project": "toolmend-test",
            "vertex_location": "us-central1",
            **extra,
        },
    ),
    Target(
        "bedrock",
        "bedrock",
        "missing_result_at_end",
        lambda s, _: {
            "model": "bedrock/converse/anthropic.claude-3-5-sonnet-20240620-v1:0",
            "api_base": s.base_url,
            **_AWS,
        },
    ),
]


# --- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[StrictProviderServer]:
    with StrictProviderServer() as running:
        yield running


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """One event loop for every async call, so LiteLLM's cached async clients stay usable."""
    running = asyncio.new_event_loop()
    yield running
    close_loop(running)


@pytest.fixture(scope="module")
def vertex(server: StrictProviderServer) -> Kwargs:
    """Service-account credentials whose token endpoint is the strict server's ``/token``."""
    rsa = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.rsa")
    serialization = pytest.importorskip("cryptography.hazmat.primitives.serialization")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    credentials = {
        "type": "service_account",
        "project_id": "toolmend-test",
        "private_key_id": "toolmend",
        "private_key": pem,
        "client_email": "test@toolmend-test.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": server.base_url + "/token",
    }
    return {"vertex_credentials": json.dumps(credentials)}


@pytest.fixture(autouse=True)
def callbacks(server: StrictProviderServer) -> Iterator[None]:
    """No callback unless a test installs one; the server forgets earlier requests."""
    saved = list(litellm.callbacks)
    litellm.callbacks = []
    server.clear()
    yield
    litellm.callbacks = saved
    hook.install()


# --- helpers -----------------------------------------------------------------------------------


def run(loop: asyncio.AbstractEventLoop, mode: str, target: Callable[..., Any], **kw: Any) -> Any:
    """Call ``target`` (``litellm.completion`` or a Router's ``completion``) in ``mode``; streams
    are read to the end. Returns the response (or the stream object)."""
    stream = mode.endswith("+stream")
    if mode.startswith("sync"):
        response = target(stream=stream, **kw)
        if stream:
            list(response)
        return response

    async def go() -> Any:
        response = await target(stream=stream, **kw)
        if stream:
            async for _ in response:
                pass
        return response

    return loop.run_until_complete(go())


def completion(mode: str) -> Callable[..., Any]:
    return litellm.completion if mode.startswith("sync") else litellm.acompletion


def accepted_and_valid(server: StrictProviderServer, profile: str) -> None:
    """The last request reached the server, was accepted, and its history is valid."""
    last = server.last_request
    assert last.accepted, (last.status, last.error)
    assert last.judged
    assert last.provider is not None
    assert last.provider == profile
    assert toolmend.check(last.history, provider=profile, format=last.format) == []


def record_of(response: Any) -> dict[str, Any]:
    record = response._hidden_params.get(hook.RECORD_KEY)
    assert isinstance(record, dict), response._hidden_params
    return record


def _as_sent(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as LiteLLM puts them on the wire (it leaves ``None`` fields out)."""
    return [{key: value for key, value in m.items() if value is not None} for m in messages]


# --- the matrix: each provider, each call mode --------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("target", TARGETS, ids=lambda t: f"{t.provider}-{t.damage}")
def test_broken_history_fails_without_and_passes_with_the_callback(
    server: StrictProviderServer,
    loop: asyncio.AbstractEventLoop,
    vertex: Kwargs,
    target: Target,
    mode: str,
) -> None:
    messages = history(target.damage, target.call_id)
    untouched = copy.deepcopy(messages)
    settings = target.settings(server, vertex)

    with pytest.raises(litellm.BadRequestError) as raised:
        run(loop, mode, completion(mode), messages=messages, tools=TOOLS, max_retries=0, **settings)
    rejected = server.last_request
    assert rejected.status == 400
    assert rejected.problems
    assert raised.value.status_code == 400

    litellm.callbacks = [ToolMend()]
    response = run(
        loop, mode, completion(mode), messages=messages, tools=TOOLS, max_retries=0, **settings
    )
    accepted_and_valid(server, target.profile)
    assert len(server.requests) == 2  # one rejected, one accepted: the repair is not a retry
    record = record_of(response)
    assert record["provider"] == target.hook_profile
    assert record["changes"]
    assert messages == untouched


def test_gemini_orphan_is_sent_at_all_only_with_the_callback(
    server: StrictProviderServer, loop: asyncio.AbstractEventLoop
) -> None:
    """LiteLLM's own Gemini converter raises on an orphan result before sending anything."""
    settings = {"model": "gemini/gemini-2.0-flash", "api_base": server.base_url + "/v1beta"}
    messages = history("orphan_result")
    with pytest.raises(litellm.APIConnectionError):
        litellm.completion(messages=messages, api_key="t", max_retries=0, **settings)
    assert server.requests == []
    litellm.callbacks = [ToolMend()]
    litellm.completion(messages=messages, api_key="t", max_retries=0, **settings)
    accepted_and_valid(server, "gemini")


def test_bedrock_results_followed_by_a_user_message(server: StrictProviderServer) -> None:
    """LiteLLM merges the tool results and the next user message into one Converse turn, which
    Bedrock rejects; the bedrock profile bridges them with an assistant message."""
    messages = [_user(), _asks(_call("call_1")), _result("call_1"), _user("And tomorrow?")]
    settings = {
        "model": "bedrock/converse/anthropic.claude-3-5-sonnet-20240620-v1:0",
        "api_base": server.base_url,
        **_AWS,
    }
    with pytest.raises(litellm.BadRequestError):
        litellm.completion(messages=messages, tools=TOOLS, max_retries=0, **settings)
    assert [p.code for p in server.last_request.problems] == ["result_with_text"]
    litellm.callbacks = [ToolMend()]
    response = litellm.completion(messages=messages, tools=TOOLS, max_retries=0, **settings)
    accepted_and_valid(server, "bedrock")
    assert [c["code"] for c in record_of(response)["changes"]] == ["inserted_message"]


def test_bedrock_llama_text_beside_calls_is_split_by_the_callback(
    server: StrictProviderServer,
) -> None:
    """Issue 32, case 4: an assistant message with text beside its ``tool_calls``, which
    LiteLLM sends as one Converse turn holding both, is refused for a Llama model ("Conversation
    blocks and tool use blocks cannot be provided in the same turn."); the callback, given the
    deployment's model, splits it (text, the fixed user bridge, the calls)."""
    said = "Let me check."
    asks = {**_asks(_call("call_1")), "content": said}
    messages = [_user(), asks, _result("call_1"), {"role": "assistant", "content": "21 C."}]
    messages.append(_user("Thanks."))
    settings = {
        "model": "bedrock/converse/us.meta.llama3-1-70b-instruct-v1:0",
        "api_base": server.base_url,
        **_AWS,
    }
    with pytest.raises(litellm.BadRequestError) as refused:
        litellm.completion(messages=messages, tools=TOOLS, max_retries=0, **settings)
    assert "Conversation blocks and tool use blocks cannot be provided" in str(refused.value)
    assert [p.code for p in server.last_request.problems] == ["call_with_text"]
    litellm.callbacks = [ToolMend()]
    response = litellm.completion(messages=messages, tools=TOOLS, max_retries=0, **settings)
    accepted_and_valid(server, "bedrock-tools-alone")
    assert sorted(c["code"] for c in record_of(response)["changes"]) == [
        "inserted_message",
        "moved_message",
    ]
    sent = server.last_request.body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant"] * 3 + ["user"]
    assert sent[1]["content"] == [{"text": said}]  # the text kept as it was written
    assert [list(block) for block in sent[3]["content"]] == [["toolUse"]]


# --- Router: a fallback from DeepSeek to Anthropic, repaired per attempt ------------------------


@pytest.mark.parametrize("mode", MODES)
def test_router_fallback_from_deepseek_to_anthropic_is_repaired_per_attempt(
    server: StrictProviderServer,
    loop: asyncio.AbstractEventLoop,
    mode: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    router = litellm.Router(
        model_list=[
            {
                "model_name": "chat",
                "litellm_params": {
                    "model": "deepseek/deepseek-chat",
                    "api_base": f"http://127.0.0.1:{free_port()}/v1",  # nobody listens: fails
                    "api_key": "t",
                },
            },
            {
                "model_name": "claude",
                "litellm_params": {
                    "model": "anthropic/claude-sonnet-4-5",
                    "api_base": server.base_url,
                    "api_key": "t",
                },
            },
        ],
        fallbacks=[{"chat": ["claude"]}],
        num_retries=0,
    )
    litellm.callbacks = [ToolMend()]
    messages = history("result_after_user_turn")
    call = router.completion if mode.startswith("sync") else router.acompletion
    with caplog.at_level(logging.INFO, logger="toolmend"):
        response = run(loop, mode, call, model="chat", messages=messages)
    assert [r.api for r in server.requests] == ["messages"]
    accepted_and_valid(server, "anthropic")
    assert record_of(response)["provider"] == "anthropic"
    repaired = [r.getMessage() for r in caplog.records if "repaired" in r.getMessage()]
    assert any("deepseek/deepseek-chat" in line and "for deepseek" in line for line in repaired)
    assert any("claude-sonnet-4-5" in line and "for anthropic" in line for line in repaired)


# --- what the callback must never do -----------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_litellm_message_objects_and_the_callers_list_are_not_mutated(
    server: StrictProviderServer, loop: asyncio.AbstractEventLoop, mode: str
) -> None:
    """For Gemini, LiteLLM hands the hook the caller's own list, with its Message objects."""
    messages: list[Any] = [
        litellm.Message(role="user", content="Weather?"),
        litellm.Message(role="assistant", content=None, tool_calls=[_call("call_1")]),
        {"role": "user", "content": "Hello?"},
    ]
    objects = list(messages)
    dumps = [m.model_dump() if isinstance(m, litellm.Message) else dict(m) for m in messages]
    litellm.callbacks = [ToolMend()]
    run(
        loop,
        mode,
        completion(mode),
        model="gemini/gemini-2.0-flash",
        api_base=server.base_url + "/v1beta",
        api_key="t",
        messages=messages,
        max_retries=0,
    )
    accepted_and_valid(server, "gemini")
    assert messages == objects
    assert all(a is b for a, b in zip(messages, objects, strict=True))
    assert dumps == [
        m.model_dump() if isinstance(m, litellm.Message) else dict(m) for m in messages
    ]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_valid_history_goes_out_as_it_is_with_no_record(
    server: StrictProviderServer, loop: asyncio.AbstractEventLoop, mode: str
) -> None:
    messages = [_user(), _asks(_call("call_1")), _result("call_1"), _user("Thanks")]
    litellm.callbacks = [ToolMend()]
    response = run(
        loop,
        mode,
        completion(mode),
        model="openai/gpt-4o",
        api_base=server.openai_base_url,
        api_key="t",
        messages=messages,
        max_retries=0,
    )
    assert server.last_request.history == _as_sent(messages)
    assert hook.RECORD_KEY not in response._hidden_params


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_toolmend_bug_never_aborts_the_call(
    server: StrictProviderServer,
    loop: asyncio.AbstractEventLoop,
    mode: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("toolmend bug")

    monkeypatch.setattr(toolmend._fastpath, "vouch", broken)  # the first step of every request
    messages = [_user(), _asks(_call("call_1")), _result("call_1"), _user("Thanks")]
    litellm.callbacks = [ToolMend()]
    with caplog.at_level(logging.ERROR, logger="toolmend"):
        response = run(
            loop,
            mode,
            completion(mode),
            model="openai/gpt-4o",
            api_base=server.openai_base_url,
            api_key="t",
            messages=messages,
            max_retries=0,
        )
    assert server.last_request.accepted
    assert server.last_request.history == _as_sent(messages)
    assert any(r.exc_info for r in caplog.records if r.name == "toolmend")
    assert record_of(response)["failed"] is True


def _looping_history() -> list[Any]:
    messages: list[Any] = [_user("Fix the build")]
    for n in range(4):
        messages += [_asks(_call(f"call_{n}")), _result(f"call_{n}", "failed")]
    return messages


@pytest.mark.parametrize("mode", ["sync", "async", "async+stream"])
def test_loop_guard_raise_fails_the_call_before_anything_is_sent(
    server: StrictProviderServer, loop: asyncio.AbstractEventLoop, mode: str
) -> None:
    litellm.callbacks = [ToolMend(on_loop="raise")]
    with pytest.raises(toolmend.ToolLoopError):
        run(
            loop,
            mode,
            completion(mode),
            model="openai/gpt-4o",
            api_base=server.openai_base_url,
            api_key="t",
            messages=_looping_history(),
            max_retries=0,
        )
    assert server.requests == []


def test_loop_guard_warn_logs_and_records(
    server: StrictProviderServer, caplog: pytest.LogCaptureFixture
) -> None:
    litellm.callbacks = [ToolMend()]
    with caplog.at_level(logging.WARNING, logger="toolmend"):
        response = litellm.completion(
            model="openai/gpt-4o",
            api_base=server.openai_base_url,
            api_key="t",
            messages=_looping_history(),
            max_retries=0,
        )
    assert server.last_request.accepted
    assert [loop["code"] for loop in record_of(response)["loops"]] == ["repeated_call"]
    assert any("loop guard" in r.getMessage() for r in caplog.records)


def test_strict_policy_raises_tool_chain_error(server: StrictProviderServer) -> None:
    litellm.callbacks = [ToolMend(policy="strict")]
    with pytest.raises(toolmend.ToolChainError):
        litellm.completion(
            model="openai/gpt-4o",
            api_base=server.openai_base_url,
            api_key="t",
            messages=history("orphan_result"),
            max_retries=0,
        )
    assert server.requests == []


def test_provider_overrides_the_deployment(server: StrictProviderServer) -> None:
    litellm.callbacks = [ToolMend(provider="deepseek")]
    response = litellm.completion(
        model="openai/gpt-4o",
        api_base=server.openai_base_url,
        api_key="t",
        messages=history("duplicate_result"),  # fine for OpenAI, an orphan for DeepSeek
        max_retries=0,
    )
    assert record_of(response)["provider"] == "deepseek"
    assert [c["code"] for c in record_of(response)["changes"]] == ["dropped_duplicate_result"]


def test_an_unknown_provider_name_fails_at_construction() -> None:
    with pytest.raises(toolmend.UnknownNameError):
        ToolMend(provider="deepsek")


# --- where the changes show --------------------------------------------------------------------


class _Recorder(CustomLogger):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[Any] = []

    def log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self.seen.append(kwargs.get(hook.RECORD_KEY))


def test_logging_callbacks_see_the_record_in_their_kwargs(server: StrictProviderServer) -> None:
    recorder = _Recorder()
    litellm.callbacks = [ToolMend(), recorder]
    response = litellm.completion(
        model="openai/gpt-4o",
        api_base=server.openai_base_url,
        api_key="t",
        messages=history("orphan_result"),
        max_retries=0,
    )
    record = record_of(response)
    assert record["changes"][0]["ids"] == ["call_x"]
    deadline = time.monotonic() + 120  # LiteLLM logs success in a background thread
    while record not in recorder.seen and time.monotonic() < deadline:
        time.sleep(0.02)
    assert record in recorder.seen


def test_repair_logs_one_line_with_codes_and_ids_but_no_content(
    server: StrictProviderServer, caplog: pytest.LogCaptureFixture
) -> None:
    litellm.callbacks = [ToolMend()]
    messages = history("orphan_result")
    with caplog.at_level(logging.INFO, logger="toolmend"):
        litellm.completion(
            model="deepseek/deepseek-chat",
            api_base=server.openai_base_url,
            api_key="t",
            messages=messages,
            max_retries=0,
        )
    lines = [r.getMessage() for r in caplog.records if r.name == "toolmend"]
    assert len(lines) == 1
    assert "deepseek/deepseek-chat" in lines[0]
    assert "dropped_orphan_result@1[call_x]" in lines[0]
    assert "21 C" not in lines[0]


# --- the sync-path wrappers --------------------------------------------------------------------


def test_without_a_callback_the_sync_wrappers_call_straight_through(
    server: StrictProviderServer,
) -> None:
    ToolMend()  # installed, but not in litellm.callbacks
    with pytest.raises(litellm.BadRequestError):
        litellm.completion(
            model="openai/gpt-4o",
            api_base=server.openai_base_url,
            api_key="t",
            messages=history("orphan_result"),
            max_retries=0,
        )


def test_install_is_idempotent() -> None:
    ToolMend()
    ToolMend()
    for module, name, _ in hook._TARGETS:
        installed = getattr(importlib.import_module(module), name)
        assert isinstance(installed, wrapt.FunctionWrapper)
        assert not isinstance(installed.__wrapped__, wrapt.FunctionWrapper)


def test_uninstall_removes_only_ours(
    server: StrictProviderServer, loop: asyncio.AbstractEventLoop
) -> None:
    import litellm.utils

    hook.install()
    calls: list[str] = []

    def theirs(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        calls.append(args[0])
        return wrapped(*args, **kwargs)

    handle = wrapt.wrap_object(litellm.utils, "function_setup", wrapt.FunctionWrapper, (theirs,))
    try:
        hook.uninstall()
        settings = {"model": "openai/gpt-4o", "api_base": server.openai_base_url, "api_key": "t"}
        litellm.callbacks = [_callback_without_install()]
        with pytest.raises(litellm.BadRequestError):  # sync: no longer repaired
            litellm.completion(messages=history("orphan_result"), max_retries=0, **settings)
        assert calls == ["completion"]  # their wrapper still runs
        run(loop, "async", litellm.acompletion, messages=history("orphan_result"), **settings)
        assert server.last_request.accepted  # async: the hook still repairs
    finally:
        wrapt.unwrap_object(litellm.utils, "function_setup", handle)
    hook.install()
    assert isinstance(litellm.utils.function_setup, wrapt.FunctionWrapper)


def _callback_without_install() -> ToolMend:
    """A ToolMend built without re-installing the wrappers (to test the state after uninstall)."""
    callback = ToolMend.__new__(ToolMend)
    CustomLogger.__init__(callback)
    callback.options = hook.HookOptions()
    return callback


def test_positional_messages_are_logged_once(
    server: StrictProviderServer, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hook, "_warned_positional", False)
    litellm.callbacks = [ToolMend()]
    with caplog.at_level(logging.WARNING, logger="toolmend"):
        for _ in range(2):
            litellm.completion(
                "openai/gpt-4o",
                [_user()],
                api_base=server.openai_base_url,
                api_key="t",
                max_retries=0,
            )
    assert sum("positionally" in r.getMessage() for r in caplog.records) == 1


@pytest.mark.parametrize(
    ("model", "profile"),
    [
        ("gpt-4o", "openai"),
        ("azure/my-deployment", "openai"),
        ("deepseek/deepseek-chat", "deepseek"),
        ("deepseek/deepseek-reasoner", "deepseek-reasoner"),
        ("mistral/mistral-large-latest", "mistral"),
        ("groq/llama-3.3-70b-versatile", "groq"),
        ("anthropic/claude-sonnet-4-5", "anthropic"),
        ("gemini/gemini-2.5-flash", "gemini-litellm"),
        ("vertex_ai/gemini-2.5-flash", "gemini-litellm"),
        ("vertex_ai/claude-sonnet-4-5@20250929", "anthropic"),
        ("bedrock/converse/anthropic.claude-3-5-sonnet-20240620-v1:0", "bedrock"),
        ("together_ai/meta-llama/Llama-3-70b-chat-hf", "openai"),
    ],
)
def test_profile_for_the_deployment_model(model: str, profile: str) -> None:
    assert hook.profile_for(model) == profile


# --- the example -------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_sdk_example_runs_offline(capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(ROOT / "examples" / "litellm_sdk.py"), run_name="__main__")
    printed = capsys.readouterr().out
    assert "without toolmend: HTTP 400" in printed
    assert "with toolmend, sync: accepted, changes ['dropped_orphan_result']" in printed
    assert "async stream to anthropic: accepted" in printed
    assert "Claude Code's /v1/messages to GPT: accepted at /v1/responses" in printed


# --- the LiteLLM Proxy -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def proxy(server: StrictProviderServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``litellm --config`` process on 127.0.0.1 in front of the strict server (the
    example config)."""
    with litellm_proxy.example_proxy(server, tmp_path_factory.mktemp("proxy")) as base:
        yield base


_post = litellm_proxy.post


@pytest.mark.slow
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize(
    ("model", "route", "profile"),
    [("my-deepseek", "chat", "deepseek"), ("my-unreachable", "messages", "anthropic")],
    ids=["deepseek", "fallback-to-anthropic"],
)
def test_proxy_repairs_each_deployment_attempt(
    server: StrictProviderServer, proxy: str, model: str, route: str, profile: str, stream: bool
) -> None:
    status, headers, body = _post(
        proxy, {"model": model, "messages": history("duplicate_result"), "stream": stream}
    )
    assert status == 200, body
    assert [r.api for r in server.requests] == [route]
    accepted_and_valid(server, profile)
    lowered = {name.lower(): value for name, value in headers.items()}
    assert lowered["x-toolmend-provider"] == profile
    assert "dropped_duplicate_result@3[call_1]" in lowered["x-toolmend-changes"]
