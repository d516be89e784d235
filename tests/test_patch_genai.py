"""google-genai through toolmend.integrations.patch: real SDK, real HTTP, seed 003 on the wire.

Seed 003: a history rebuilt from OpenAI-shaped storage names the functionResponse after the
tool_call_id (``call_1073557``) instead of the function (``steal_meme_to_smile``); Gemini
answers 400, on every later turn too. Every shape ``contents`` can take, the streaming and the
async methods and the chats all go through the four ``Models``/``AsyncModels`` rows; with
``repair_chat_history=True`` the chat's stored history is repaired as well.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import toolmend
import toolmend.integrations.patch as tm

from support.patch_cases import MendCounter, seed_003, unchanged, wire

genai = pytest.importorskip("google.genai")
types = pytest.importorskip("google.genai.types")
errors = pytest.importorskip("google.genai.errors")

pytestmark = pytest.mark.filterwarnings(
    "ignore:Inheritance class AiohttpClientSession:DeprecationWarning"  # google-genai's own
)

SIGNATURES = "thought_signature" in types.Part.model_fields
"""An old google-genai (1.0) has no ``Part.thought_signature``, so it cannot talk to Gemini 3."""
MODEL = "gemini-3.6-flash-high" if SIGNATURES else "gemini-2.5-flash"  # seed 003's model
PROFILE = "gemini-3" if SIGNATURES else "gemini"


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


def _client(server: Any) -> Any:
    """A client for ``server``. Keep a reference while using it: a collected ``Client`` closes
    its connection pool under its ``models`` and chats."""
    return genai.Client(api_key="test", http_options={"base_url": server.gemini_base_url})


# --- every shape of ``contents``, each carrying seed 003's wrong name ------------------------


def _call() -> dict[str, Any]:
    return {"name": "steal_meme_to_smile", "args": {"topic": "cats"}}


def _response() -> dict[str, Any]:
    return {"name": "call_1073557", "response": {"result": "meme.png"}}


def _shapes() -> dict[str, Any]:
    seed = seed_003()
    return {
        "list[Content]": seed,
        "list[ContentDict]": [
            {"role": "user", "parts": [{"text": "Make me smile"}]},
            {"role": "model", "parts": [{"function_call": _call()}]},
            {"role": "user", "parts": [{"function_response": _response()}]},
            {"role": "user", "parts": [{"text": "Another one"}]},
        ],
        "list[camelCase dict]": [
            {"role": "user", "parts": [{"text": "Make me smile"}]},
            {"role": "model", "parts": [{"functionCall": _call()}]},
            {"role": "user", "parts": [{"functionResponse": _response()}]},
        ],
        "list[Part]": [
            types.Part(text="Make me smile"),
            types.Part(function_call=types.FunctionCall(**_call())),
            types.Part(function_response=types.FunctionResponse(**_response())),
        ],
        "list[PartDict]": [
            {"text": "Make me smile"},
            {"function_call": _call()},
            {"function_response": _response()},
        ],
        "list[str and Content]": ["Make me smile", seed[1], seed[2], "Another one"],
    }


SHAPES = list(_shapes())


def _expected_body(server: Any, contents: Any) -> Any:
    """What the SDK sends, unpatched, for toolmend's repair of ``contents``."""
    fixed = toolmend.sanitize(contents, provider=PROFILE, format="gemini")
    client = _client(server)
    client.models.generate_content(model=MODEL, contents=fixed)
    assert server.last_request.accepted, server.last_request.error
    return server.last_request.history


@pytest.mark.parametrize("shape", SHAPES)
def test_every_contents_shape(shape: str, strict_provider: Any, mends: MendCounter) -> None:
    contents = _shapes()[shape]
    client = _client(strict_provider)
    with unchanged(contents):
        with pytest.raises(errors.ClientError):
            client.models.generate_content(model=MODEL, contents=contents)
        want = _expected_body(strict_provider, contents)
        tm.patch()
        client = _client(strict_provider)
        client.models.generate_content(model=MODEL, contents=contents)
    record = strict_provider.last_request
    assert record.accepted, record.error
    assert record.history == want
    assert mends.calls == ["google_genai.Models.generate_content"]


@pytest.mark.parametrize(
    "contents", ["Hello", {"role": "user", "parts": [{"text": "Hello"}]}], ids=["str", "dict"]
)
def test_single_content_passes_through(contents: Any, strict_provider: Any) -> None:
    tm.patch()
    client = _client(strict_provider)
    client.models.generate_content(model=MODEL, contents=contents)
    assert strict_provider.last_request.accepted


# --- every method, sync and async, models and chats ------------------------------------------


def _generate(c: Any, h: Any) -> None:
    c.models.generate_content(model=MODEL, contents=h)


def _generate_stream(c: Any, h: Any) -> None:
    for _ in c.models.generate_content_stream(model=MODEL, contents=h):
        pass


def _chat(c: Any, h: Any) -> None:
    c.chats.create(model=MODEL, history=h[:-1]).send_message(h[-1].parts[0].text)


def _chat_stream(c: Any, h: Any) -> None:
    for _ in c.chats.create(model=MODEL, history=h[:-1]).send_message_stream("Another one"):
        pass


async def _agenerate(c: Any, h: Any) -> None:
    await c.aio.models.generate_content(model=MODEL, contents=h)


async def _agenerate_stream(c: Any, h: Any) -> None:
    async for _ in await c.aio.models.generate_content_stream(model=MODEL, contents=h):
        pass


async def _achat(c: Any, h: Any) -> None:
    await c.aio.chats.create(model=MODEL, history=h[:-1]).send_message("Another one")


async def _achat_stream(c: Any, h: Any) -> None:
    chat = c.aio.chats.create(model=MODEL, history=h[:-1])
    async for _ in await chat.send_message_stream("Another one"):
        pass


METHODS: dict[str, tuple[Callable[[Any, Any], Any], str]] = {
    "models.generate_content": (_generate, "Models.generate_content"),
    "models.generate_content_stream": (_generate_stream, "Models.generate_content_stream"),
    "chats.send_message": (_chat, "Models.generate_content"),
    "chats.send_message_stream": (_chat_stream, "Models.generate_content_stream"),
    "aio.models.generate_content": (_agenerate, "AsyncModels.generate_content"),
    "aio.models.generate_content_stream": (
        _agenerate_stream,
        "AsyncModels.generate_content_stream",
    ),
    "aio.chats.send_message": (_achat, "AsyncModels.generate_content"),
    "aio.chats.send_message_stream": (_achat_stream, "AsyncModels.generate_content_stream"),
}


def _send(server: Any, method: Callable[[Any, Any], Any], history: Any) -> None:
    client = _client(server)
    if asyncio.iscoroutinefunction(method):
        asyncio.run(method(client, history))
    else:
        method(client, history)


def _names(record: Any) -> list[str]:
    return [
        part["functionResponse"]["name"]
        for content in record.history
        for part in content["parts"]
        if "functionResponse" in part
    ]


@pytest.mark.parametrize("name", METHODS)
def test_seed_003_fixed_on_the_wire(name: str, strict_provider: Any, mends: MendCounter) -> None:
    method, row = METHODS[name]
    history = seed_003()
    with unchanged(history):
        with pytest.raises(errors.ClientError):
            _send(strict_provider, method, history)
        assert strict_provider.last_request.status == 400
        assert _names(strict_provider.last_request) == ["call_1073557"]
        tm.patch()
        _send(strict_provider, method, history)
    record = strict_provider.last_request
    assert record.accepted, record.error
    assert record.provider == PROFILE
    assert _names(record) == ["steal_meme_to_smile"]
    assert record.history == wire(toolmend.sanitize(history, provider=PROFILE, format="gemini"))
    assert mends.calls == [f"google_genai.{row}"]


# --- the opt-in: repair the chat's stored history ---------------------------------------------


def _stored_names(chat: Any, curated: bool) -> list[str]:
    if hasattr(chat, "get_history"):
        stored = chat.get_history(curated=curated)
    elif curated:  # google-genai before get_history (1.0)
        stored = chat._curated_history
    else:
        pytest.skip("this google-genai keeps no comprehensive history")
    return [
        part.function_response.name
        for content in stored
        for part in content.parts or ()
        if part.function_response
    ]


def test_chat_history_is_left_alone_by_default(strict_provider: Any) -> None:
    tm.patch()
    client = _client(strict_provider)
    chat = client.chats.create(model=MODEL, history=seed_003()[:-1])
    chat.send_message("Another one")
    assert strict_provider.last_request.accepted
    assert _stored_names(chat, curated=True) == ["call_1073557"]


@pytest.mark.parametrize("stream", [False, True], ids=["send_message", "send_message_stream"])
def test_repair_chat_history_heals_the_stored_history(
    stream: bool, strict_provider: Any, mends: MendCounter
) -> None:
    history = seed_003()[:-1]
    tm.patch(repair_chat_history=True)
    client = _client(strict_provider)
    chat = client.chats.create(model=MODEL, history=history)
    with unchanged(history):
        if stream:
            for _ in chat.send_message_stream("Another one"):
                pass
        else:
            chat.send_message("Another one")
    assert strict_provider.last_request.accepted, strict_provider.last_request.error
    assert _stored_names(chat, curated=True) == ["steal_meme_to_smile"]
    assert history[2].parts[0].function_response.name == "call_1073557"  # caller's objects
    assert mends.calls[0].startswith("google_genai.Chat.send_message")
    # the next turn starts clean, unpatched
    tm.unpatch()
    chat.send_message("And one more")
    assert strict_provider.last_request.accepted, strict_provider.last_request.error
    assert _stored_names(chat, curated=False) == ["call_1073557"]  # recorded as it was


def test_repair_chat_history_async(strict_provider: Any) -> None:
    tm.patch(repair_chat_history=True)
    client = _client(strict_provider)

    async def main() -> Any:
        chat = client.aio.chats.create(model=MODEL, history=seed_003()[:-1])
        await chat.send_message("Another one")
        return chat

    chat = asyncio.run(main())
    assert strict_provider.last_request.accepted, strict_provider.last_request.error
    assert _stored_names(chat, curated=True) == ["steal_meme_to_smile"]


def test_repair_chat_history_keeps_calls_this_turn_answers(strict_provider: Any) -> None:
    """A stored history ending in a function call: the turn being sent carries its response,
    so the stored call must not be answered with a placeholder first."""
    history = seed_003()[:2]
    tm.patch(repair_chat_history=True)
    client = _client(strict_provider)
    chat = client.chats.create(model=MODEL, history=history)
    chat.send_message(
        types.Part(
            function_response=types.FunctionResponse(
                name="steal_meme_to_smile", response={"result": "meme.png"}
            )
        )
    )
    record = strict_provider.last_request
    assert record.accepted, record.error
    assert [c["role"] for c in record.history] == ["user", "model", "user"]
    assert record.history[2]["parts"][0]["functionResponse"]["response"] == {"result": "meme.png"}


def test_a_fault_healing_the_chat_history_is_not_a_failed_request(
    strict_provider: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stored-history heal is not the request (the ``Models`` row sends and counts it), so a
    toolmend fault in the heal reports no ``failed_open`` request of its own: the turn counts
    once, as the request row saw it."""
    from toolmend.integrations import telemetry

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("injected fault inside toolmend")

    heard: list[telemetry.HookReport] = []
    telemetry.add_sink(heard.append)
    monkeypatch.setattr(tm, "as_policy", broken)  # the heal's own step, before its mend
    try:
        tm.patch(repair_chat_history=True)
        client = _client(strict_provider)
        chat = client.chats.create(model=MODEL, history=seed_003()[:-1])
        chat.send_message("Another one")
    finally:
        telemetry.remove_sink(heard.append)
    assert strict_provider.last_request.accepted, strict_provider.last_request.error
    assert [(r.hook, r.outcome) for r in heard if r.request] == [
        ("google_genai.Models.generate_content", "repaired")
    ]
