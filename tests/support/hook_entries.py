"""Every hook entry point as one table: how to make a real SDK call through it, with toolmend on
or off, against the strict provider server, and what the server then received.

Shared by test_fail_open.py (faults inside toolmend, hostile input) and test_privacy.py. Each
:class:`Hook` knows the history format it takes, a valid and a broken history in that format
(the broken one gets the provider's 400 unless toolmend repairs it), and ``call(server,
history, options)``: ``options`` are the hook's keyword arguments (``{}`` for the defaults), or
``None`` to make the very same call without toolmend, which is the baseline a fail-open call
must match. A call installs toolmend for itself and removes it afterwards.
"""

from __future__ import annotations

import os

# before LiteLLM is imported: its cost map and the tokenizers it fetches stay local
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import asyncio
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from toolmend.testing import StrictProviderServer

Options = dict[str, Any]

__all__ = ["HOOKS", "Hook", "Outcome", "outcome", "shared_loop"]


# --- histories, a valid and a broken one per format ----------------------------------------------


def _call(call_id: str = "call_1") -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }


def chat_valid() -> list[Any]:
    return [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [_call()]},
        {"role": "tool", "tool_call_id": "call_1", "content": "21 C"},
        {"role": "user", "content": "Thanks"},
    ]


def chat_broken() -> list[Any]:
    """A user message between a call and its result (every OpenAI-family provider says 400)."""
    valid = chat_valid()
    return [valid[0], valid[1], {"role": "user", "content": "Still there?"}, valid[2]]


def responses_valid() -> list[Any]:
    call = {"type": "function_call", "call_id": "call_1", "name": "get_weather"}
    return [
        {"role": "user", "content": "Weather in Paris?"},
        {**call, "arguments": '{"city": "Paris"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "21 C"},
        {"role": "user", "content": "Thanks"},
    ]


def responses_broken() -> list[Any]:
    """A function call without its output."""
    valid = responses_valid()
    return [valid[0], valid[1], {"role": "user", "content": "Still there?"}]


def anthropic_valid() -> list[Any]:
    use = {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}}
    return [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": [{"type": "text", "text": "Let me check."}, use]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": "21 C"},
                {"type": "text", "text": "Thanks"},
            ],
        },
    ]


def anthropic_broken() -> list[Any]:
    """A user message between a tool_use and its tool_result."""
    valid = anthropic_valid()
    result = {"role": "user", "content": [valid[2]["content"][0]]}
    return [valid[0], valid[1], {"role": "user", "content": "Still there?"}, result]


def gemini_valid(name: str = "get_weather") -> list[Any]:
    return [
        {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
        {"role": "model", "parts": [{"function_call": {"name": "get_weather", "args": {}}}]},
        {"role": "user", "parts": [{"function_response": {"name": name, "response": {}}}]},
        {"role": "model", "parts": [{"text": "Sunny."}]},
        {"role": "user", "parts": [{"text": "Thanks"}]},
    ]


def gemini_broken() -> list[Any]:
    """Seed 003: the functionResponse named after the OpenAI call id, not the function."""
    return gemini_valid(name="call_1073557")


def _ids(*messages: Any) -> list[Any]:
    """The messages with ids of their own: LangGraph gives a message without one a fresh id,
    in place, which would read as a change to the caller's history."""
    for number, message in enumerate(messages):
        message.id = f"m{number}"
    return list(messages)


def langchain_valid() -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    call = {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1", "type": "tool_call"}
    return _ids(
        HumanMessage("Weather in Paris?"),
        AIMessage("", tool_calls=[call]),
        ToolMessage("21 C", tool_call_id="call_1", name="get_weather"),
        HumanMessage("Thanks"),
    )


def langchain_broken() -> list[Any]:
    """Seed 000: an assistant message that lost its tool_calls, then its dangling result."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    return _ids(
        HumanMessage("Weather in Paris?"),
        AIMessage("Let me check."),
        ToolMessage("21 C", tool_call_id="call_lost", name="get_weather"),
        HumanMessage("And Rome?"),
    )


HISTORIES: dict[str, tuple[Callable[[], list[Any]], Callable[[], list[Any]]]] = {
    "openai": (chat_valid, chat_broken),
    "openai-responses": (responses_valid, responses_broken),
    "anthropic": (anthropic_valid, anthropic_broken),
    "gemini": (gemini_valid, gemini_broken),
    "langchain": (langchain_valid, langchain_broken),
}
"""format -> (valid, broken): each call builds a fresh history."""


# --- running a call --------------------------------------------------------------------------


_loop: asyncio.AbstractEventLoop | None = None


def shared_loop() -> asyncio.AbstractEventLoop:
    """One event loop for every LiteLLM async call, so its cached async clients stay usable."""
    global _loop
    if _loop is None or _loop.is_closed():
        _loop = asyncio.new_event_loop()
    return _loop


@dataclass(frozen=True)
class Outcome:
    """What a call did: the error it raised (type name, or None) and what the server got."""

    error: str | None
    sent: tuple[Any, ...]
    """The history of every request the server received, in order (as JSON)."""
    statuses: tuple[int, ...]


def outcome(
    hook: Hook, server: StrictProviderServer, history: Any, options: Options | None
) -> Outcome:
    """Make ``hook``'s call with ``history`` (toolmend on with ``options``, off for None)."""
    server.clear()
    error: str | None = None
    try:
        hook.call(server, history, options)
    except Exception as raised:  # the SDK's own error is part of the outcome
        error = type(raised).__name__
    requests = server.requests
    return Outcome(error, tuple(r.history for r in requests), tuple(r.status for r in requests))


@dataclass(frozen=True)
class Hook:
    """One hook entry point."""

    name: str
    family: str
    """``litellm``, ``patch``, ``history`` or ``middleware``: which integration module."""
    format: str
    call: Callable[[StrictProviderServer, Any, Options | None], Any]
    loop_guard: bool = True
    """Whether the hook runs the loop guard (``toolmend.detect_loops``)."""
    before_mend: tuple[str, ...] = ()
    """Names of faults in the hook's own code that run before ``mend`` (see test_fail_open)."""

    def valid(self) -> list[Any]:
        return HISTORIES[self.format][0]()

    def broken(self) -> list[Any]:
        return HISTORIES[self.format][1]()

    def __str__(self) -> str:
        return self.name


# --- LiteLLM ---------------------------------------------------------------------------------


@contextmanager
def _litellm(options: Options | None) -> Iterator[Any]:
    import litellm

    from toolmend.integrations.litellm import ToolMend

    litellm.suppress_debug_info = True  # no "Give Feedback" banner on each provider 400
    saved = list(litellm.callbacks)
    litellm.callbacks = [] if options is None else [ToolMend(**options)]
    try:
        yield litellm
    finally:
        litellm.callbacks = saved


def _litellm_kwargs(server: StrictProviderServer, history: Any) -> dict[str, Any]:
    return {
        "model": "openai/gpt-4o",
        "api_base": server.openai_base_url,
        "api_key": "t",
        "messages": history,
        "max_retries": 0,
    }


def _litellm_call(mode: str) -> Callable[[StrictProviderServer, Any, Options | None], Any]:
    def call(server: StrictProviderServer, history: Any, options: Options | None) -> Any:
        with _litellm(options) as litellm:
            kwargs = _litellm_kwargs(server, history)
            stream = mode.endswith("stream")
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

            return shared_loop().run_until_complete(go())

    return call


_routers: dict[str, Any] = {}


def _router_call(mode: str) -> Callable[[StrictProviderServer, Any, Options | None], Any]:
    def call(server: StrictProviderServer, history: Any, options: Options | None) -> Any:
        with _litellm(options) as litellm:
            router = _routers.get(server.base_url)
            if router is None:
                params = _litellm_kwargs(server, None)
                del params["messages"], params["max_retries"]
                router = _routers[server.base_url] = litellm.Router(
                    model_list=[{"model_name": "gpt", "litellm_params": params}], num_retries=0
                )
            if mode == "sync":
                return router.completion(model="gpt", messages=history)
            return shared_loop().run_until_complete(
                router.acompletion(model="gpt", messages=history)
            )

    return call


# --- the patched SDKs ------------------------------------------------------------------------


def _patched(
    send: Callable[[StrictProviderServer, Any], Any],
) -> Callable[[StrictProviderServer, Any, Options | None], Any]:
    def call(server: StrictProviderServer, history: Any, options: Options | None) -> Any:
        import toolmend.integrations.patch as tm

        tm.unpatch()
        if options is not None:
            tm.patch(**options)
        try:
            return send(server, history)
        finally:
            tm.unpatch()

    return call


_clients: dict[tuple[str, str], Any] = {}


def _client(kind: str, server: StrictProviderServer) -> Any:
    """One SDK client per kind and server, kept for the module (async ones live on the shared
    loop): building one per call costs more than the call."""
    key = (kind, server.base_url)
    if key not in _clients:
        _clients[key] = _CLIENTS[kind](server)
    return _clients[key]


def _new_client(kind: str) -> Callable[[StrictProviderServer], Any]:
    def build(server: StrictProviderServer) -> Any:
        if kind.endswith("openai"):
            import openai

            cls = openai.AsyncOpenAI if kind.startswith("async") else openai.OpenAI
            return cls(api_key="test", base_url=server.openai_base_url, max_retries=0)
        if kind.endswith("anthropic"):
            import anthropic

            cls = anthropic.AsyncAnthropic if kind.startswith("async") else anthropic.Anthropic
            return cls(api_key="test", base_url=server.anthropic_base_url, max_retries=0)
        from google import genai

        return genai.Client(api_key="test", http_options={"base_url": server.gemini_base_url})

    return build


_CLIENTS = {
    kind: _new_client(kind)
    for kind in ("openai", "async-openai", "anthropic", "async-anthropic", "genai")
}


def _run(coroutine: Any) -> Any:
    return shared_loop().run_until_complete(coroutine)


def _chat(server: StrictProviderServer, history: Any) -> Any:
    return _client("openai", server).chat.completions.create(model="gpt-4o", messages=history)


def _chat_generator(server: StrictProviderServer, history: Any) -> Any:
    """``messages`` as a generator: toolmend must read it once and still send every message."""
    items = (message for message in history) if isinstance(history, list) else history
    return _client("openai", server).chat.completions.create(model="gpt-4o", messages=items)


def _chat_stream(server: StrictProviderServer, history: Any) -> Any:
    client = _client("openai", server)
    return list(client.chat.completions.create(model="gpt-4o", messages=history, stream=True))


def _achat(server: StrictProviderServer, history: Any) -> Any:
    client = _client("async-openai", server)
    return _run(client.chat.completions.create(model="gpt-4o", messages=history))


def _responses(server: StrictProviderServer, history: Any) -> Any:
    return _client("openai", server).responses.create(model="gpt-4o", input=history)


def _aresponses(server: StrictProviderServer, history: Any) -> Any:
    return _run(_client("async-openai", server).responses.create(model="gpt-4o", input=history))


_CLAUDE = {"model": "claude-sonnet-4-5", "max_tokens": 64}


def _anthropic(server: StrictProviderServer, history: Any) -> Any:
    return _client("anthropic", server).messages.create(messages=history, **_CLAUDE)


def _anthropic_stream(server: StrictProviderServer, history: Any) -> Any:
    with _client("anthropic", server).messages.stream(messages=history, **_CLAUDE) as stream:
        return stream.get_final_message()


def _aanthropic(server: StrictProviderServer, history: Any) -> Any:
    return _run(_client("async-anthropic", server).messages.create(messages=history, **_CLAUDE))


_GEMINI = "gemini-2.5-flash"


def _generate(server: StrictProviderServer, history: Any) -> Any:
    return _client("genai", server).models.generate_content(model=_GEMINI, contents=history)


def _generate_stream(server: StrictProviderServer, history: Any) -> Any:
    models = _client("genai", server).models
    return list(models.generate_content_stream(model=_GEMINI, contents=history))


def _agenerate(server: StrictProviderServer, history: Any) -> Any:
    models = _client("genai", server).aio.models
    return _run(models.generate_content(model=_GEMINI, contents=history))


# --- LangChain -------------------------------------------------------------------------------


def in_memory() -> Any:
    """LangChain's in-memory store, built without its own deprecation warning."""
    from langchain_core._api.deprecation import LangChainDeprecationWarning
    from langchain_core.chat_history import InMemoryChatMessageHistory

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LangChainDeprecationWarning)
        return InMemoryChatMessageHistory()


def chat_model(server: StrictProviderServer) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        base_url=server.openai_base_url, api_key="test", model="deepseek-chat", max_retries=0
    )


def _history_call(
    mode: str,
) -> Callable[[StrictProviderServer, Any, Options | None], Any]:
    """Write ``history`` into a store (through the wrapper for ``write``), read it back (through
    the wrapper for ``read``) and send what the read returns."""

    def call(server: StrictProviderServer, history: Any, options: Options | None) -> Any:
        from toolmend.integrations.langchain import ToolMendHistory

        store = in_memory()
        wrapped = None if options is None else ToolMendHistory(store, **options)
        writer = wrapped if wrapped is not None and "write" in mode else store
        reader = wrapped if wrapped is not None and "read" in mode else store
        if mode.startswith("async"):

            async def main() -> Any:
                await writer.aadd_messages(history)
                return await reader.aget_messages()

            messages = _run(main())
        else:
            writer.add_messages(history)
            messages = reader.messages
        return chat_model(server).invoke(messages)

    return call


def _middleware_call(mode: str) -> Callable[[StrictProviderServer, Any, Options | None], Any]:
    def call(server: StrictProviderServer, history: Any, options: Options | None) -> Any:
        from langchain.agents import create_agent
        from langchain_core.tools import tool

        from toolmend.integrations.langchain import ToolMendMiddleware

        @tool
        def get_weather(city: str) -> str:
            """The weather in a city."""
            return f"21 C in {city}"

        middleware = [] if options is None else [ToolMendMiddleware(**options)]
        agent = create_agent(chat_model(server), tools=[get_weather], middleware=middleware)
        state = {"messages": history}
        if mode == "sync":
            return agent.invoke(state)
        return _run(agent.ainvoke(state))

    return call


# --- the table -------------------------------------------------------------------------------

HOOKS: tuple[Hook, ...] = (
    Hook("litellm.completion", "litellm", "openai", _litellm_call("sync"), before_mend=("active",)),
    Hook(
        "litellm.completion+stream",
        "litellm",
        "openai",
        _litellm_call("sync+stream"),
        before_mend=("active",),
    ),
    Hook("litellm.acompletion", "litellm", "openai", _litellm_call("async")),
    Hook("litellm.acompletion+stream", "litellm", "openai", _litellm_call("async+stream")),
    Hook(
        "litellm.Router.completion",
        "litellm",
        "openai",
        _router_call("sync"),
        before_mend=("active",),
    ),
    Hook("litellm.Router.acompletion", "litellm", "openai", _router_call("async")),
    Hook("openai.chat", "patch", "openai", _patched(_chat)),
    Hook("openai.chat(generator)", "patch", "openai", _patched(_chat_generator)),
    Hook("openai.chat+stream", "patch", "openai", _patched(_chat_stream)),
    Hook("openai.async.chat", "patch", "openai", _patched(_achat)),
    Hook("openai.responses", "patch", "openai-responses", _patched(_responses)),
    Hook("openai.async.responses", "patch", "openai-responses", _patched(_aresponses)),
    Hook("anthropic.messages", "patch", "anthropic", _patched(_anthropic)),
    Hook("anthropic.messages.stream", "patch", "anthropic", _patched(_anthropic_stream)),
    Hook("anthropic.async.messages", "patch", "anthropic", _patched(_aanthropic)),
    Hook("genai.generate_content", "patch", "gemini", _patched(_generate)),
    Hook("genai.generate_content_stream", "patch", "gemini", _patched(_generate_stream)),
    Hook("genai.aio.generate_content", "patch", "gemini", _patched(_agenerate)),
    Hook("ToolMendHistory.read", "history", "langchain", _history_call("sync-read"), False),
    Hook("ToolMendHistory.aread", "history", "langchain", _history_call("async-read"), False),
    Hook("ToolMendHistory.write", "history", "langchain", _history_call("sync-write"), False),
    Hook("ToolMendHistory.awrite", "history", "langchain", _history_call("async-write"), False),
    Hook("ToolMendMiddleware", "middleware", "langchain", _middleware_call("sync")),
    Hook("ToolMendMiddleware.async", "middleware", "langchain", _middleware_call("async")),
)
