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
from collections.abc import Callable
from typing import Any

import openai
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool as lc_tool
from langchain_openai import ChatOpenAI

from toolmend.integrations.langchain import ToolMendMiddleware
from toolmend.testing import Reply, StrictProviderServer

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
