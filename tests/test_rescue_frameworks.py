"""The rescue after a provider's 400 (issue 34) through the framework hooks, end to end: the
LangChain v1 agent middleware (``wrap_model_call``: invoked, awaited and streamed), Google ADK's
plugin and agent model-error callbacks, and the OpenAI Agents SDK's model wrapper, each driving
its real chat model class over real HTTP to the strict server, which plays a rule toolmend does
not know (:meth:`toolmend.testing.StrictProviderServer.refuse`).

Each rescue ends in the agent's normal answer after exactly two requests, the one that
succeeded still holding every real tool result's content and the caller's objects unchanged;
the negatives (context length, content policy, authentication, a 400 about something else),
``rescue=False`` and ``TOOLMEND_RESCUE=0`` send one request and raise the provider's error.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import openai
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool as lc_tool
from langchain_openai import ChatOpenAI

from toolmend.integrations.langchain import ToolMendMiddleware
from toolmend.testing import Reply, StrictProviderServer

from support.faults import patch_everywhere

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")

REAL = "21 C, sunny at 14:00 (station LFPG)"
"""A real tool result: its content must be in the request that succeeded."""

UNKNOWN = "Tool messages are not supported by this model deployment."
"""A provider's 400 about tool history that names no rule toolmend holds."""

NOT_RETRIED = {
    "context length": (
        "This model's maximum context length is 8192 tokens. However, your messages resulted "
        "in 9011 tokens (8890 in the messages, 121 in the functions). Please reduce the length "
        "of the messages or functions."
    ),
    "content policy": (
        "Invalid prompt: your prompt was flagged as potentially violating our usage policy. "
        "Please try again with a different prompt."
    ),
    "authentication": "Incorrect API key provided: sk-test. You can find your API key at "
    "https://platform.openai.com/account/api-keys.",
    "unrelated 400": "Invalid value for 'temperature': expected a number between 0 and 2.",
}
"""Real provider texts of 400s a rewritten history cannot cure: never retried."""


def sent_text(server: StrictProviderServer, index: int = -1) -> str:
    return json.dumps(server.requests[index].body)


@pytest.fixture(autouse=True)
def _rescue_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLMEND_RESCUE", raising=False)


# --- LangChain: the v1 agent middleware ---------------------------------------------------------


@lc_tool
def get_weather(city: str) -> str:
    """The weather in ``city``."""
    return f"21 C in {city}"


def thread() -> list[BaseMessage]:
    """A valid thread with one real tool exchange, then a new question (ids given, so that
    LangGraph's reducer does not set them on the caller's objects)."""
    call = {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_paris1"}
    return [
        HumanMessage("Weather in Paris?", id="m0"),
        AIMessage("", tool_calls=[call], id="m1"),
        ToolMessage(REAL, tool_call_id="call_paris1", name="get_weather", id="m2"),
        AIMessage("Sunny in Paris.", id="m3"),
        HumanMessage("And Rome?", id="m4"),
    ]


def langchain_agent(server: StrictProviderServer, middleware: ToolMendMiddleware | None) -> Any:
    from langchain.agents import create_agent

    model = ChatOpenAI(
        base_url=server.openai_base_url, api_key="test", model="deepseek-chat", max_retries=0
    )
    return create_agent(model, tools=[get_weather], middleware=[middleware] if middleware else [])


def run_langchain(agent: Any, messages: list[BaseMessage], mode: str) -> list[BaseMessage]:
    state: dict[str, Any]
    if mode == "invoke":
        state = agent.invoke({"messages": messages})
    elif mode == "ainvoke":
        state = asyncio.run(agent.ainvoke({"messages": messages}))
    else:  # streamed token by token: the chat model streams, the 400 comes before a chunk
        chunks = list(agent.stream({"messages": messages}, stream_mode=["messages", "values"]))
        assert any(kind == "messages" for kind, _ in chunks)
        state = [value for kind, value in chunks if kind == "values"][-1]
    out: list[BaseMessage] = state["messages"]
    return out


@pytest.mark.parametrize("mode", ["invoke", "ainvoke", "stream"])
def test_langchain_unknown_rule_is_rescued_by_flattening(
    mode: str,
    strict_provider_factory: Callable[..., StrictProviderServer],
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = strict_provider_factory("deepseek", refuse=UNKNOWN)
    server.script([Reply.text("Warm in Rome.")])
    messages = thread()
    before = [m.model_dump() for m in messages]
    with caplog.at_level(logging.WARNING, logger="toolmend"):
        state = run_langchain(langchain_agent(server, ToolMendMiddleware()), messages, mode)
    assert [(r.status, r.refused) for r in server.requests] == [(400, True), (200, False)]
    assert server.requests[-1].stream is (mode == "stream")
    assert REAL in sent_text(server)  # the real result's content, written as text
    assert "tool_calls" not in sent_text(server)
    assert state[-1].content == "Warm in Rome."
    assert [m.model_dump() for m in messages] == before  # the caller's messages
    assert [m.model_dump() for m in state[: len(before)]] == before  # the agent state
    rescued = [r for r in caplog.records if "toolmend rescued" in r.getMessage()]
    assert len(rescued) == 1
    line = rescued[0].getMessage()
    assert "langchain.wrap_model_call for deepseek after a 400: flattened" in line
    assert REAL not in line and "Paris" not in line  # ids and codes, never content


def test_langchain_known_rule_is_rescued_with_its_repair(
    strict_provider_factory: Callable[..., StrictProviderServer],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The middleware believes it talks to OpenAI; the server judges as Mistral and answers
    with Mistral's own text for its call id rule, which toolmend's mistral profile repairs."""
    server = strict_provider_factory("mistral")
    server.script([Reply.text("Warm in Rome.")])
    with caplog.at_level(logging.WARNING, logger="toolmend"):
        state = run_langchain(
            langchain_agent(server, ToolMendMiddleware(provider="openai")), thread(), "invoke"
        )
    assert [r.status for r in server.requests] == [400, 200]
    assert not server.requests[0].refused  # the profile's own 400, a rule toolmend knows
    assert REAL in sent_text(server)
    assert "tool_calls" in sent_text(server)  # the exchange kept as an exchange
    assert "call_paris1" not in sent_text(server)  # its id rewritten as Mistral wants
    assert state[-1].content == "Warm in Rome."
    line = next(r.getMessage() for r in caplog.records if "toolmend rescued" in r.getMessage())
    assert "for openai after a 400: call_id_format (mistral)" in line


@pytest.mark.parametrize("vendor", ["anthropic", "gemini"])
def test_langchain_other_chat_models_are_rescued(
    vendor: str,
    strict_provider_factory: Callable[..., StrictProviderServer],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``ChatAnthropic`` raises anthropic's own ``BadRequestError`` (a LangChain subclass);
    ``ChatGoogleGenerativeAI`` raises its own error from google-genai's ``ClientError``, whose
    status the middleware finds on the error it was raised from."""
    from langchain.agents import create_agent

    server = strict_provider_factory(vendor, refuse=UNKNOWN)
    server.script([Reply.text("Warm in Rome.")])
    model: Any
    if vendor == "anthropic":
        module = pytest.importorskip("langchain_anthropic")
        model = module.ChatAnthropic(
            base_url=server.anthropic_base_url,
            api_key="test",
            model="claude-sonnet-5-5",
            max_retries=0,
        )
    else:
        module = pytest.importorskip("langchain_google_genai")
        model = module.ChatGoogleGenerativeAI(
            base_url=server.gemini_base_url,
            google_api_key="test",
            model="gemini-2.5-flash",
            max_retries=0,
        )
    agent = create_agent(model, tools=[get_weather], middleware=[ToolMendMiddleware()])
    with caplog.at_level(logging.WARNING, logger="toolmend"):
        state = run_langchain(agent, thread(), "invoke")
    assert [(r.status, r.refused) for r in server.requests] == [(400, True), (200, False)]
    assert REAL in sent_text(server)
    assert state[-1].text == "Warm in Rome."
    line = next(r.getMessage() for r in caplog.records if "toolmend rescued" in r.getMessage())
    assert f"for {vendor} after a 400: flattened" in line


@pytest.mark.parametrize("case", sorted(NOT_RETRIED))
def test_langchain_does_not_retry_what_no_rewrite_cures(
    case: str, strict_provider_factory: Callable[..., StrictProviderServer]
) -> None:
    server = strict_provider_factory("deepseek", refuse=NOT_RETRIED[case])
    server.script([Reply.text("Warm in Rome.")])
    with pytest.raises(openai.BadRequestError) as raised:  # the provider's own error
        run_langchain(langchain_agent(server, ToolMendMiddleware()), thread(), "invoke")
    assert raised.value.status_code == 400
    assert [r.status for r in server.requests] == [400]


@pytest.mark.parametrize("how", ["rescue=False", "TOOLMEND_RESCUE=0"])
def test_langchain_rescue_switched_off(
    how: str,
    strict_provider_factory: Callable[..., StrictProviderServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if how == "TOOLMEND_RESCUE=0":
        monkeypatch.setenv("TOOLMEND_RESCUE", "0")
    server = strict_provider_factory("deepseek", refuse=UNKNOWN)
    middleware = ToolMendMiddleware(rescue=how != "rescue=False")
    with pytest.raises(Exception, match="not supported by this model deployment"):
        run_langchain(langchain_agent(server, middleware), thread(), "invoke")
    assert [r.status for r in server.requests] == [400]


@pytest.mark.parametrize("policy", ["report", "strict"])
def test_langchain_no_rescue_under_a_policy_that_changes_nothing(
    policy: str, strict_provider_factory: Callable[..., StrictProviderServer]
) -> None:
    server = strict_provider_factory("deepseek", refuse=UNKNOWN)
    with pytest.raises(openai.BadRequestError, match="not supported by this model deployment"):
        run_langchain(
            langchain_agent(server, ToolMendMiddleware(policy=policy)), thread(), "invoke"
        )
    assert [r.status for r in server.requests] == [400]


def test_langchain_retry_is_sent_once_even_if_refused_again(
    strict_provider_factory: Callable[..., StrictProviderServer],
) -> None:
    """A refusal of every request: the retry's own error comes out, never a third request."""
    server = strict_provider_factory("deepseek", refuse=UNKNOWN)
    server.refuse("Request refused for this deployment (tool_calls).", when="always")
    with pytest.raises(Exception, match="Request refused for this deployment"):
        run_langchain(langchain_agent(server, ToolMendMiddleware()), thread(), "invoke")
    assert [r.status for r in server.requests] == [400, 400]


def test_langchain_a_request_that_succeeds_is_sent_once(
    strict_provider_factory: Callable[..., StrictProviderServer],
) -> None:
    server = strict_provider_factory("deepseek")
    server.script([Reply.text("Warm in Rome.")])
    state = run_langchain(langchain_agent(server, ToolMendMiddleware()), thread(), "invoke")
    assert [r.status for r in server.requests] == [200]
    assert state[-1].content == "Warm in Rome."


def test_langchain_without_the_middleware_the_refusal_ends_the_run(
    strict_provider_factory: Callable[..., StrictProviderServer],
) -> None:
    server = strict_provider_factory("deepseek", refuse=UNKNOWN)
    with pytest.raises(Exception, match="not supported by this model deployment"):
        run_langchain(langchain_agent(server, None), thread(), "invoke")
    assert [r.status for r in server.requests] == [400]


# --- Google ADK: the plugin's and the agent's model-error callbacks ------------------------------


def adk_weather(city: str) -> dict[str, Any]:
    """The weather in ``city``."""
    return {"result": f"21 C in {city}"}


def adk_session() -> tuple[Any, str]:
    """A session service holding a valid thread with one real function call and response."""
    from google.adk.events import Event
    from google.adk.sessions import InMemorySessionService
    from google.genai import types

    def event(author: str, role: str, part: types.Part, number: int) -> Event:
        content = types.Content(role=role, parts=[part])
        return Event(
            author=author, invocation_id="inv-0", content=content, timestamp=1.7e9 + number
        )

    call = types.FunctionCall(name="adk_weather", args={"city": "Paris"}, id="adk-1")
    answer = types.FunctionResponse(name="adk_weather", id="adk-1", response={"result": REAL})
    events = [
        event("user", "user", types.Part(text="Weather in Paris?"), 0),
        event("agent", "model", types.Part(function_call=call), 1),
        event("agent", "user", types.Part(function_response=answer), 2),
        event("agent", "model", types.Part(text="Sunny in Paris."), 3),
    ]
    service = InMemorySessionService()

    async def store() -> str:
        session = await service.create_session(app_name="weather", user_id="u1")
        for item in events:
            await service.append_event(session, item)
        return session.id

    return service, asyncio.run(store())


def adk_events(service: Any, session_id: str) -> list[dict[str, Any]]:
    session = asyncio.run(
        service.get_session(app_name="weather", user_id="u1", session_id=session_id)
    )
    return [event.model_dump() for event in session.events]


def run_adk(
    server: StrictProviderServer,
    *,
    plugins: tuple[Any, ...] = (),
    callback: Any = None,
    streaming: bool = False,
) -> tuple[list[str], list[dict[str, Any]], list[dict[str, Any]]]:
    """One turn of a real ``LlmAgent`` with the real ``Gemini`` model on a stored session: the
    texts it answered, the stored events before and after."""
    from google.adk.agents import LlmAgent, RunConfig
    from google.adk.agents.run_config import StreamingMode
    from google.adk.models import Gemini
    from google.adk.runners import Runner
    from google.genai import types

    agent = LlmAgent(
        name="agent",
        model=Gemini(model="gemini-2.5-flash", base_url=server.gemini_base_url),
        instruction="You answer weather questions.",
        tools=[adk_weather],
        on_model_error_callback=callback,
    )
    service, session_id = adk_session()
    before = adk_events(service, session_id)
    runner = Runner(app_name="weather", agent=agent, session_service=service, plugins=[*plugins])
    config = RunConfig(streaming_mode=StreamingMode.SSE if streaming else StreamingMode.NONE)
    texts: list[str] = []

    async def go() -> None:
        async for item in runner.run_async(
            user_id="u1",
            session_id=session_id,
            new_message=types.Content(role="user", parts=[types.Part(text="And Rome?")]),
            run_config=config,
        ):
            if not item.partial:
                texts.extend(p.text for p in (item.content.parts if item.content else []) if p.text)

    asyncio.run(go())
    return texts, before, adk_events(service, session_id)


@pytest.fixture
def adk_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """A dummy key, the Gemini Developer API (not Vertex), and no telemetry export."""
    pytest.importorskip("google.adk")
    monkeypatch.setenv("GOOGLE_API_KEY", "test")
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    for name in ("GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_AGENT_ENGINE_ID", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def adk_hooks() -> dict[str, dict[str, Any]]:
    from toolmend.integrations import adk

    return {
        "plugin": {"plugins": (adk.ToolMendPlugin(),)},
        "callback": {"callback": adk.on_model_error_callback},
    }


@pytest.mark.usefixtures("adk_offline")
@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("hook", ["plugin", "callback"])
def test_adk_unknown_rule_is_rescued_by_flattening(
    hook: str,
    streaming: bool,
    strict_provider_factory: Callable[..., StrictProviderServer],
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = strict_provider_factory(refuse=UNKNOWN)
    server.script([Reply.text("Warm in Rome.")])
    with caplog.at_level(logging.WARNING, logger="toolmend"):
        texts, before, after = run_adk(server, streaming=streaming, **adk_hooks()[hook])
    assert [(r.status, r.refused) for r in server.requests] == [(400, True), (200, False)]
    assert server.requests[0].stream is streaming
    assert REAL in sent_text(server)  # the real response's content, written as text
    assert "functionResponse" not in sent_text(server)
    assert texts == ["Warm in Rome."]
    assert after[: len(before)] == before  # the stored events stay as they were
    line = next(r.getMessage() for r in caplog.records if "toolmend rescued" in r.getMessage())
    assert f"adk.{'ToolMendPlugin' if hook == 'plugin' else 'on_model_error_callback'}" in line
    assert "for gemini after a 400: flattened (gemini)" in line
    assert REAL not in line


@pytest.mark.usefixtures("adk_offline")
@pytest.mark.parametrize("case", sorted(NOT_RETRIED))
@pytest.mark.parametrize("hook", ["plugin", "callback"])
def test_adk_does_not_retry_what_no_rewrite_cures(
    hook: str, case: str, strict_provider_factory: Callable[..., StrictProviderServer]
) -> None:
    from google.genai import errors

    server = strict_provider_factory(refuse=NOT_RETRIED[case])
    server.script([Reply.text("Warm in Rome.")])
    with pytest.raises(errors.ClientError) as raised:
        run_adk(server, **adk_hooks()[hook])
    assert raised.value.code == 400
    assert [r.status for r in server.requests] == [400]


@pytest.mark.usefixtures("adk_offline")
@pytest.mark.parametrize("how", ["rescue=False", "TOOLMEND_RESCUE=0"])
def test_adk_rescue_switched_off(
    how: str,
    strict_provider_factory: Callable[..., StrictProviderServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from google.genai import errors

    from toolmend.integrations.adk import ToolMendPlugin

    if how == "TOOLMEND_RESCUE=0":
        monkeypatch.setenv("TOOLMEND_RESCUE", "0")
    server = strict_provider_factory(refuse=UNKNOWN)
    with pytest.raises(errors.ClientError, match="not supported by this model deployment"):
        run_adk(server, plugins=(ToolMendPlugin(rescue=how != "rescue=False"),))
    assert [r.status for r in server.requests] == [400]


@pytest.mark.usefixtures("adk_offline")
def test_adk_no_rescue_under_the_report_policy(
    strict_provider_factory: Callable[..., StrictProviderServer],
) -> None:
    from google.genai import errors

    from toolmend.integrations.adk import ToolMendPlugin

    server = strict_provider_factory(refuse=UNKNOWN)
    with pytest.raises(errors.ClientError, match="not supported by this model deployment"):
        run_adk(server, plugins=(ToolMendPlugin(policy="report"),))
    assert [r.status for r in server.requests] == [400]


@pytest.mark.usefixtures("adk_offline")
@pytest.mark.parametrize("hook", ["plugin", "callback"])
def test_adk_retry_is_sent_once_even_if_refused_again(
    hook: str, strict_provider_factory: Callable[..., StrictProviderServer]
) -> None:
    """The plugin lets ADK raise the provider's first error, the plain callback the retry's;
    either way, never a third request."""
    from google.genai import errors

    server = strict_provider_factory(refuse=UNKNOWN)
    server.refuse("Request refused for this deployment (function_response).", when="always")
    first = "not supported by this model deployment"
    with pytest.raises(errors.ClientError) as raised:
        run_adk(server, **adk_hooks()[hook])
    assert (first in str(raised.value)) is (hook == "plugin")
    assert [r.status for r in server.requests] == [400, 400]


@pytest.mark.usefixtures("adk_offline")
def test_adk_plugin_and_callback_together_retry_once(
    strict_provider_factory: Callable[..., StrictProviderServer],
) -> None:
    """When the plugin's retry fails, ADK hands the first error on to the agent's callback:
    it is not retried a second time."""
    from google.genai import errors

    from toolmend.integrations import adk

    server = strict_provider_factory(refuse=UNKNOWN)
    server.refuse("Request refused for this deployment (function_response).", when="always")
    with pytest.raises(errors.ClientError, match="not supported by this model deployment"):
        run_adk(server, plugins=(adk.ToolMendPlugin(),), callback=adk.on_model_error_callback)
    assert [r.status for r in server.requests] == [400, 400]


@pytest.mark.usefixtures("adk_offline")
def test_adk_a_request_that_succeeds_is_sent_once(
    strict_provider_factory: Callable[..., StrictProviderServer],
) -> None:
    server = strict_provider_factory()
    server.script([Reply.text("Warm in Rome.")])
    texts, _, _ = run_adk(server, **adk_hooks()["plugin"])
    assert texts == ["Warm in Rome."]
    assert [r.status for r in server.requests] == [200]


@pytest.mark.usefixtures("adk_offline")
def test_adk_a_real_gemini_3_refusal_is_rescued(
    strict_provider_factory: Callable[..., StrictProviderServer],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The plugin is told the plain ``gemini`` profile; Gemini 3 wants a thought signature on
    the call of the current turn and says so in its own words (the profile's 400, not a
    refusal played by the server): the retry goes through."""
    from google.adk.agents import LlmAgent
    from google.adk.events import Event
    from google.adk.models import Gemini
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.genai import types

    from toolmend.integrations.adk import ToolMendPlugin

    server = strict_provider_factory()
    server.script([Reply.text("Sunny.")])
    service = InMemorySessionService()
    call = types.FunctionCall(name="adk_weather", args={"city": "Paris"}, id="c-1")
    answer = types.FunctionResponse(name="adk_weather", id="c-1", response={"result": REAL})

    async def go() -> list[str]:
        session = await service.create_session(app_name="weather", user_id="u1")
        for number, (role, part) in enumerate(
            [
                ("user", types.Part(text="Weather in Paris?")),
                ("model", types.Part(function_call=call)),
            ]
        ):
            content = types.Content(role=role, parts=[part])
            author = "user" if role == "user" else "agent"
            await service.append_event(
                session, Event(author=author, invocation_id="i", content=content, timestamp=number)
            )
        agent = LlmAgent(
            name="agent",
            model=Gemini(model="gemini-3-flash-preview", base_url=server.gemini_base_url),
            tools=[adk_weather],
        )
        runner = Runner(
            app_name="weather",
            agent=agent,
            session_service=service,
            plugins=[ToolMendPlugin(provider="gemini")],
        )
        message = types.Content(role="user", parts=[types.Part(function_response=answer)])
        texts: list[str] = []
        async for item in runner.run_async(
            user_id="u1", session_id=session.id, new_message=message
        ):
            texts.extend(p.text for p in (item.content.parts if item.content else []) if p.text)
        return texts

    with caplog.at_level(logging.WARNING, logger="toolmend"):
        texts = asyncio.run(go())
    assert texts == ["Sunny."]
    assert [(r.status, r.refused) for r in server.requests] == [(400, False), (200, False)]
    assert "thought_signature" in server.requests[0].error
    assert REAL in sent_text(server)
    line = next(r.getMessage() for r in caplog.records if "toolmend rescued" in r.getMessage())
    assert "adk.ToolMendPlugin for gemini after a 400:" in line


# --- OpenAI Agents SDK: the model wrapper -------------------------------------------------------


def agents_items() -> list[dict[str, Any]]:
    """A valid input with one real tool exchange, then a new question (Responses items)."""
    return [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "type": "function_call",
            "call_id": "call_paris1",
            "name": "agents_weather",
            "arguments": '{"city": "Paris"}',
        },
        {"type": "function_call_output", "call_id": "call_paris1", "output": REAL},
        {"role": "assistant", "content": "Sunny in Paris."},
        {"role": "user", "content": "And Rome?"},
    ]


def run_agents(
    server: StrictProviderServer,
    api: str,
    *,
    how: str = "model",
    rescue: bool = True,
    streamed: bool = False,
    items: list[dict[str, Any]] | None = None,
) -> str:
    """One ``Runner.run`` (or ``run_streamed``) of a real agent whose model is wrapped
    (``how="model"``) or made by the wrapping provider (``how="provider"``); its final output."""
    import openai
    from agents import Agent, OpenAIProvider, RunConfig, Runner, function_tool
    from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
    from agents.models.openai_responses import OpenAIResponsesModel

    from toolmend.integrations import openai_agents as hook

    @function_tool
    def agents_weather(city: str) -> str:
        """The weather in a city."""
        return f"21 C in {city}"

    async def go() -> str:
        client = openai.AsyncOpenAI(
            base_url=server.openai_base_url, api_key="sk-test", max_retries=0
        )
        config = RunConfig(  # no trace export: no network beyond 127.0.0.1
            call_model_input_filter=hook.ToolMendInputFilter(), tracing_disabled=True
        )
        model: Any
        if how == "model":
            inner: Any = (
                OpenAIResponsesModel("gpt-4.1", client)
                if api == "responses"
                else OpenAIChatCompletionsModel("gpt-4.1", client)
            )
            model = hook.ToolMendModel(inner, rescue=rescue)
        else:
            provider = OpenAIProvider(openai_client=client, use_responses=api == "responses")
            config.model_provider = hook.ToolMendModelProvider(provider, rescue=rescue)
            model = "gpt-4.1"
        agent = Agent(name="weather", instructions="Answer briefly.", model=model)
        agent.tools = [agents_weather]
        given = items if items is not None else agents_items()
        if not streamed:
            result = await Runner.run(agent, given, run_config=config)
            return str(result.final_output)
        streaming = Runner.run_streamed(agent, given, run_config=config)
        async for _ in streaming.stream_events():
            pass
        return str(streaming.final_output)

    return asyncio.run(go())


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("how", ["model", "provider"])
@pytest.mark.parametrize("api", ["responses", "chat"])
def test_agents_unknown_rule_is_rescued_by_flattening(
    api: str,
    how: str,
    streamed: bool,
    strict_provider_factory: Callable[..., StrictProviderServer],
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = strict_provider_factory(refuse=UNKNOWN)
    server.script([Reply.text("Warm in Rome.")])
    items = agents_items()
    before = json.dumps(items)
    with caplog.at_level(logging.WARNING, logger="toolmend"):
        answer = run_agents(server, api, how=how, streamed=streamed, items=items)
    assert answer == "Warm in Rome."
    assert [(r.status, r.refused) for r in server.requests] == [(400, True), (200, False)]
    assert server.requests[-1].stream is streamed
    assert server.requests[-1].api == ("responses" if api == "responses" else "chat")
    assert REAL in sent_text(server)
    sent = json.dumps(server.requests[-1].history)
    assert '"function_call' not in sent and "tool_calls" not in sent  # written as text
    assert json.dumps(items) == before  # the caller's items
    line = next(r.getMessage() for r in caplog.records if "toolmend rescued" in r.getMessage())
    assert "agents.ToolMendModel(gpt-4.1) for openai-responses after a 400: flattened" in line
    assert REAL not in line


@pytest.mark.parametrize("case", sorted(NOT_RETRIED))
def test_agents_does_not_retry_what_no_rewrite_cures(
    case: str, strict_provider_factory: Callable[..., StrictProviderServer]
) -> None:
    server = strict_provider_factory(refuse=NOT_RETRIED[case])
    server.script([Reply.text("Warm in Rome.")])
    with pytest.raises(openai.BadRequestError):
        run_agents(server, "responses")
    assert [r.status for r in server.requests] == [400]


@pytest.mark.parametrize("how", ["rescue=False", "TOOLMEND_RESCUE=0"])
def test_agents_rescue_switched_off(
    how: str,
    strict_provider_factory: Callable[..., StrictProviderServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if how == "TOOLMEND_RESCUE=0":
        monkeypatch.setenv("TOOLMEND_RESCUE", "0")
    server = strict_provider_factory(refuse=UNKNOWN)
    with pytest.raises(openai.BadRequestError, match="not supported by this model deployment"):
        run_agents(server, "chat", how="provider", rescue=how != "rescue=False")
    assert [r.status for r in server.requests] == [400]


@pytest.mark.parametrize("streamed", [False, True])
def test_agents_retry_is_sent_once_even_if_refused_again(
    streamed: bool, strict_provider_factory: Callable[..., StrictProviderServer]
) -> None:
    server = strict_provider_factory(refuse=UNKNOWN)
    server.refuse("Request refused for this deployment (function_call).", when="always")
    with pytest.raises(openai.BadRequestError, match="Request refused for this deployment"):
        run_agents(server, "responses", streamed=streamed)
    assert [r.status for r in server.requests] == [400, 400]


def test_agents_a_request_that_succeeds_is_sent_once(
    strict_provider_factory: Callable[..., StrictProviderServer],
) -> None:
    server = strict_provider_factory()
    server.script([Reply.text("Warm in Rome.")])
    assert run_agents(server, "chat", how="provider") == "Warm in Rome."
    assert [r.status for r in server.requests] == [200]


def test_agents_the_filter_sees_through_the_wrapper() -> None:
    """The input filter judges a wrapped model as the model it wraps (Chat Completions)."""
    import openai as sdk
    from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel

    from toolmend.integrations.openai_agents import ToolMendModel, target_for

    client = sdk.AsyncOpenAI(api_key="sk-test", base_url="http://127.0.0.1:9/v1")
    chat = OpenAIChatCompletionsModel("deepseek-chat", client)
    assert target_for(ToolMendModel(chat)) == target_for(chat)
    assert target_for(ToolMendModel(chat)).profile == "deepseek"


# --- telemetry ----------------------------------------------------------------------------------


@pytest.fixture
def reports() -> Iterator[list[Any]]:
    from toolmend.integrations import telemetry

    heard: list[Any] = []
    telemetry.add_sink(heard.append)
    yield heard
    telemetry.remove_sink(heard.append)


@pytest.mark.usefixtures("adk_offline")
@pytest.mark.parametrize("hook", ["langchain", "adk", "agents"])
def test_each_rescue_is_reported_once(
    hook: str,
    strict_provider_factory: Callable[..., StrictProviderServer],
    reports: list[Any],
) -> None:
    from toolmend.integrations.adk import ToolMendPlugin

    server = strict_provider_factory(*(("deepseek",) if hook == "langchain" else ()))
    server.refuse(UNKNOWN)
    server.script([Reply.text("Warm in Rome.")])
    if hook == "langchain":
        run_langchain(langchain_agent(server, ToolMendMiddleware()), thread(), "invoke")
    elif hook == "adk":
        run_adk(server, plugins=(ToolMendPlugin(),))
    else:
        run_agents(server, "responses")
    [rescued] = [r for r in reports if r.outcome == "rescued"]
    assert (
        rescued.hook
        == {
            "langchain": "langchain.wrap_model_call",
            "adk": "adk.ToolMendPlugin",
            "agents": "agents.ToolMendModel",
        }[hook]
    )
    assert rescued.rule == "flattened"
    assert "flattened_tool_traffic" in rescued.change_codes


# --- the fast path and failing open -------------------------------------------------------------


def run_hook(server: StrictProviderServer, hook: str) -> None:
    from toolmend.integrations.adk import ToolMendPlugin

    if hook == "langchain":
        run_langchain(langchain_agent(server, ToolMendMiddleware()), thread(), "invoke")
    elif hook == "adk":
        run_adk(server, plugins=(ToolMendPlugin(),))
    else:
        run_agents(server, "responses")


def hook_server(factory: Callable[..., StrictProviderServer], hook: str) -> StrictProviderServer:
    server = factory(*(("deepseek",) if hook == "langchain" else ()))
    server.script([Reply.text("Warm in Rome.")])
    return server


@pytest.mark.usefixtures("adk_offline")
@pytest.mark.parametrize("hook", ["langchain", "adk", "agents"])
def test_a_request_that_succeeds_never_reaches_the_rescue(
    hook: str,
    strict_provider_factory: Callable[..., StrictProviderServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[Any] = []
    patch_everywhere(monkeypatch, "rescue", lambda *args, **kwargs: calls.append(args))
    server = hook_server(strict_provider_factory, hook)
    run_hook(server, hook)
    assert [r.status for r in server.requests] == [200]
    assert calls == []


@pytest.mark.usefixtures("adk_offline")
@pytest.mark.parametrize("hook", ["langchain", "adk", "agents"])
def test_a_fault_in_the_rescue_raises_the_providers_error(
    hook: str,
    strict_provider_factory: Callable[..., StrictProviderServer],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from google.genai import errors

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("injected fault inside toolmend")

    patch_everywhere(monkeypatch, "rescue", broken)
    server = hook_server(strict_provider_factory, hook)
    server.refuse(UNKNOWN)
    expected = errors.ClientError if hook == "adk" else openai.BadRequestError
    with (
        caplog.at_level(logging.WARNING, logger="toolmend"),
        pytest.raises(expected, match="not supported by this model deployment"),
    ):
        run_hook(server, hook)
    assert [r.status for r in server.requests] == [400]
    [failed] = [r for r in caplog.records if r.name == "toolmend" and r.exc_info]
    assert "injected fault" in str(failed.exc_info[1]) if failed.exc_info else False
