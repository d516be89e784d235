"""The LangGraph hooks, through real LangGraph: ``ToolMendPreModelHook`` and ``repair_thread``.

A real ``create_react_agent`` graph with a real ``@tool`` and ``ChatOpenAI`` pointed at the
strict provider server (OpenAI's rules), checkpointed in memory (``InMemorySaver``) and on a
SQLite file (``SqliteSaver``). A thread is interrupted between a tool call and its result the
two ways it happens: the run is paused before its tools (``interrupt_before``) or the tool
process dies after the call was checkpointed; then the user sends a new message. Without
toolmend the graph refuses to call the model (LangGraph's own ``INVALID_CHAT_HISTORY``); with
the hook it goes on (the stored thread untouched), and after ``repair_thread`` it goes on
without any hook (the stored thread healed). A stored tool result without its call passes
LangGraph's check and gets the provider's 400 instead, until toolmend drops it.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import operator
import runpy
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Annotated, Any, TypedDict

import openai
import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    trim_messages,
)
from langchain_core.tools import tool as lc_tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import StateGraph

import toolmend
import toolmend._fastpath
from toolmend.integrations import langgraph as tm
from toolmend.integrations.langgraph import (
    ThreadRepair,
    ToolMendPreModelHook,
    arepair_thread,
    repair_thread,
)
from toolmend.testing import Reply, StrictProviderServer

from support.event_loops import close_loop
from support.faults import patch_everywhere

ROOT = Path(__file__).resolve().parent.parent

with warnings.catch_warnings():  # create_react_agent is deprecated (LangGraph's own warning)
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MODEL = "gpt-4o-mini"
PARIS = "21 C and sunny in Paris"


@pytest.fixture(scope="module")
def server() -> Iterator[StrictProviderServer]:
    with StrictProviderServer() as running:
        yield running


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """One event loop for the module: ``ChatOpenAI`` caches its async HTTP client per base URL,
    bound to the loop of its first call."""
    running = asyncio.new_event_loop()
    yield running
    close_loop(running)


@pytest.fixture
def strict(server: StrictProviderServer) -> StrictProviderServer:
    server.clear()
    return server


@pytest.fixture(params=["memory", "sqlite"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield InMemorySaver()
    else:
        with SqliteSaver.from_conn_string(str(tmp_path / "threads.db")) as sqlite:
            yield sqlite


crashes: list[str] = []
"""Cities whose next weather call 'kills the process' (raises out of the graph)."""


class ProcessDiedError(BaseException):
    """What a tool dying with its process looks like to the graph: nothing handles it."""


@lc_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    if city in crashes:
        crashes.remove(city)
        raise ProcessDiedError(city)
    return f"21 C and sunny in {city}"


def chat_model(server: StrictProviderServer) -> ChatOpenAI:
    return ChatOpenAI(
        base_url=server.openai_base_url, api_key="sk-test", model=MODEL, max_retries=0
    )


def agent(
    server: StrictProviderServer, saver: Any, hook: Any = None, *, pause: bool = False
) -> Any:
    """A ``create_react_agent`` graph; ``pause`` compiles in a stop before its tools (the
    human-in-the-loop setup)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(
            chat_model(server),
            [get_weather],
            pre_model_hook=hook,
            checkpointer=saver,
            interrupt_before=["tools"] if pause else None,
        )


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def interrupt(graph: Any, server: StrictProviderServer, config: Any, how: str) -> None:
    """A whole first turn (Paris, with its real tool result), then a second turn stopped
    between the model's call for Rome and its result: paused before the tools, or the tool's
    process died."""
    server.script(
        [
            Reply.tool_calls(("get_weather", {"city": "Paris"})),
            Reply.text("Sunny in Paris."),
            Reply.tool_calls(("get_weather", {"city": "Rome"})),
        ]
    )
    graph.invoke({"messages": [HumanMessage("Weather in Paris?")]}, config)
    if how == "paused":
        graph.invoke({"messages": [HumanMessage("And Rome?")]}, config, interrupt_before=["tools"])
    else:
        crashes.append("Rome")
        with pytest.raises(ProcessDiedError):
            graph.invoke({"messages": [HumanMessage("And Rome?")]}, config)
    stored = graph.get_state(config)
    assert stored.next == ("tools",)
    assert isinstance(stored.values["messages"][-1], AIMessage)
    assert stored.values["messages"][-1].tool_calls
    assert [r.status for r in server.requests] == [200, 200, 200]


def waiting_call(messages: list[BaseMessage]) -> str:
    """The id of the Rome call, which has no result in the stored thread."""
    calls = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    (waiting,) = [c for c in calls if c not in answered]
    return waiting


def assert_sent_whole(request: Any, call_id: str) -> None:
    """The accepted request answers the interrupted call and keeps the real result exactly."""
    assert request.accepted, request.error
    history = request.history
    results = {m["tool_call_id"]: m["content"] for m in history if m["role"] == "tool"}
    assert PARIS in results.values()
    assert results[call_id] == toolmend.PLACEHOLDER_TEXT
    assert toolmend.check(history, provider="openai") == []


# --- an interrupted thread ----------------------------------------------------------------------


@pytest.mark.parametrize("how", ["paused", "died"])
def test_an_interrupted_thread_is_unusable_without_toolmend(
    how: str, strict: StrictProviderServer, saver: Any
) -> None:
    graph = agent(strict, saver)
    config = thread(f"plain-{how}")
    interrupt(graph, strict, config, how)
    with pytest.raises(ValueError, match="INVALID_CHAT_HISTORY"):
        graph.invoke({"messages": [HumanMessage("Never mind. Berlin?")]}, config)
    assert len(strict.requests) == 3  # refused before the model was called
    with pytest.raises(ValueError, match="INVALID_CHAT_HISTORY"):  # and every later turn too
        graph.invoke({"messages": [HumanMessage("Hello?")]}, config)


@pytest.mark.parametrize("how", ["paused", "died"])
def test_the_pre_model_hook_lets_an_interrupted_thread_go_on(
    how: str, strict: StrictProviderServer, saver: Any
) -> None:
    graph = agent(strict, saver, ToolMendPreModelHook(model=chat_model(strict)))
    config = thread(f"hook-{how}")
    interrupt(graph, strict, config, how)
    call_id = waiting_call(graph.get_state(config).values["messages"])
    # the new turn calls the tool and answers: two model calls, each repaired
    strict.script([Reply.tool_calls(("get_weather", {"city": "Berlin"})), Reply.text("Mild.")])
    state = graph.invoke({"messages": [HumanMessage("Never mind. Berlin?")]}, config)
    assert state["messages"][-1].content == "Mild."
    assert [r.status for r in strict.requests] == [200] * 5
    for request in strict.requests[3:]:
        assert_sent_whole(request, call_id)
    # the second call of the run carries the Berlin result: not an earlier call's list
    assert "21 C and sunny in Berlin" in str(strict.requests[-1].history)
    stored = graph.get_state(config).values["messages"]
    assert waiting_call(stored) == call_id  # the stored thread is left as it was
    assert not any(m.content == toolmend.PLACEHOLDER_TEXT for m in stored)


@pytest.mark.parametrize("how", ["paused", "died"])
def test_repair_thread_heals_the_stored_thread(
    how: str, strict: StrictProviderServer, saver: Any
) -> None:
    graph = agent(strict, saver)  # no hook at all
    config = thread(f"repair-{how}")
    interrupt(graph, strict, config, how)
    with pytest.raises(ValueError, match="INVALID_CHAT_HISTORY"):
        graph.invoke({"messages": [HumanMessage("Never mind. Berlin?")]}, config)
    before = graph.get_state(config)
    call_id = waiting_call(before.values["messages"])
    done = repair_thread(graph, config, provider="openai")
    assert done.written
    assert [(c.code, c.ids) for c in done.changes] == [("answered_missing_call", (call_id,))]
    healed = graph.get_state(config)
    assert healed.next == before.next == ("agent",)  # the graph goes on where it stood
    messages = healed.values["messages"]
    assert toolmend.check(messages, provider="openai") == []
    assert [m.id for m in messages if m.id in {b.id for b in before.values["messages"]}] == [
        b.id for b in before.values["messages"]
    ]
    assert len({m.id for m in messages}) == len(messages)
    assert PARIS in [m.content for m in messages if isinstance(m, ToolMessage)]
    # the checkpoint read is kept as it was: repair_thread writes a new one
    assert graph.get_state(before.config).values == before.values
    # nothing more to do: nothing written
    assert repair_thread(graph, config) == ThreadRepair()
    strict.script([Reply.text("Mild.")])
    state = graph.invoke(None, config)  # the stopped turn goes on
    assert state["messages"][-1].content == "Mild."
    assert_sent_whole(strict.last_request, call_id)
    strict.script([Reply.text("Bye.")])
    graph.invoke({"messages": [HumanMessage("Thanks!")]}, config)
    assert [r.status for r in strict.requests] == [200] * 5


def test_repair_thread_leaves_a_paused_thread_waiting_for_its_tools(
    strict: StrictProviderServer,
) -> None:
    graph = agent(strict, InMemorySaver(), pause=True)
    config = thread("paused")
    strict.script([Reply.tool_calls(("get_weather", {"city": "Rome"}))])
    graph.invoke({"messages": [HumanMessage("And Rome?")]}, config)
    assert graph.get_state(config).next == ("tools",)
    done = repair_thread(graph, config)
    assert done == ThreadRepair()  # the waiting call is no problem: resuming answers it
    strict.script([Reply.text("Warm in Rome.")])
    state = graph.invoke(None, config)  # resuming runs the tool for real
    assert "21 C and sunny in Rome" in [m.content for m in state["messages"]]
    assert strict.last_request.accepted


def test_repair_thread_heals_a_create_agent_thread(strict: StrictProviderServer) -> None:
    """LangChain's ``create_agent`` does not check the history: the provider's 400 instead."""
    from langchain.agents import create_agent

    graph = create_agent(chat_model(strict), [get_weather], checkpointer=InMemorySaver())
    config = thread("create_agent")
    strict.script([Reply.tool_calls(("get_weather", {"city": "Rome"}))])
    graph.invoke({"messages": [HumanMessage("And Rome?")]}, config, interrupt_before=["tools"])
    with pytest.raises(openai.BadRequestError, match="must be followed by tool messages"):
        graph.invoke({"messages": [HumanMessage("Never mind. Berlin?")]}, config)
    done = repair_thread(graph, config)
    assert [c.code for c in done.changes] == ["answered_missing_call"]
    strict.script([Reply.text("Mild.")])
    assert graph.invoke(None, config)["messages"][-1].content == "Mild."
    assert [r.status for r in strict.requests] == [200, 400, 200]


@pytest.mark.parametrize("how", ["paused", "died"])
def test_repair_thread_answers_a_call_its_run_left_behind(
    how: str, strict: StrictProviderServer, saver: Any
) -> None:
    """The README's case: a run stopped between a call and its result (a tool process that
    died, a one-off ``interrupt_before``), ``repair_thread``, then a new user message. The
    thread is not paused on purpose, so the call is answered and the new turn goes on."""
    graph = agent(strict, saver)  # no hook at all
    config = thread(f"left-{how}")
    interrupt(graph, strict, config, how)
    call_id = waiting_call(graph.get_state(config).values["messages"])
    done = repair_thread(graph, config)
    assert [(c.code, c.ids) for c in done.changes] == [("answered_missing_call", (call_id,))]
    assert done.written and done.problems_left == ()
    assert toolmend.check(graph.get_state(config).values["messages"], provider="openai") == []
    strict.script([Reply.text("Mild.")])
    state = graph.invoke({"messages": [HumanMessage("Never mind. Berlin?")]}, config)
    assert state["messages"][-1].content == "Mild."
    assert_sent_whole(strict.last_request, call_id)
    assert [r.status for r in strict.requests] == [200] * 4


def test_repair_thread_answers_a_create_agent_call_its_run_left_behind(
    strict: StrictProviderServer,
) -> None:
    """The README's agent (``create_agent``, no middleware): a tool process died, then
    ``repair_thread`` and a new user message. The repair is written as the ``tools`` node that
    was to answer the call (as the model node, LangGraph's update fails in the agent's edge)."""
    from langchain.agents import create_agent

    graph = create_agent(chat_model(strict), [get_weather], checkpointer=InMemorySaver())
    config = thread("create_agent-died")
    strict.script([Reply.tool_calls(("get_weather", {"city": "Rome"}))])
    crashes.append("Rome")
    with pytest.raises(ProcessDiedError):
        graph.invoke({"messages": [HumanMessage("And Rome?")]}, config)
    call_id = waiting_call(graph.get_state(config).values["messages"])
    done = repair_thread(graph, config)
    assert [(c.code, c.ids) for c in done.changes] == [("answered_missing_call", (call_id,))]
    assert graph.get_state(config).next == ("model",)
    strict.script([Reply.text("Mild.")])
    state = graph.invoke({"messages": [HumanMessage("Never mind. Berlin?")]}, config)
    assert state["messages"][-1].content == "Mild."
    assert strict.last_request.accepted
    assert toolmend.PLACEHOLDER_TEXT in str(strict.last_request.history)
    assert [r.status for r in strict.requests] == [200, 200]


def test_arepair_thread_answers_a_call_its_run_left_behind(
    strict: StrictProviderServer, loop: asyncio.AbstractEventLoop
) -> None:
    """The same through ``aget_state``/``aupdate_state``: written as the ``tools`` node."""
    graph = agent(strict, InMemorySaver())
    config = thread("async-died")

    async def run() -> None:
        strict.script([Reply.tool_calls(("get_weather", {"city": "Rome"})), Reply.text("Mild.")])
        crashes.append("Rome")
        with pytest.raises(ProcessDiedError):
            await graph.ainvoke({"messages": [HumanMessage("Rome?")]}, config)
        done = await arepair_thread(graph, config)
        assert [c.code for c in done.changes] == ["answered_missing_call"]
        assert (await graph.aget_state(config)).next == ("agent",)
        state = await graph.ainvoke({"messages": [HumanMessage("Berlin?")]}, config)
        assert state["messages"][-1].content == "Mild."

    loop.run_until_complete(run())
    assert [r.status for r in strict.requests] == [200, 200]


def test_repair_thread_keeps_a_one_off_pause_when_told(strict: StrictProviderServer) -> None:
    """A run paused by ``invoke(..., interrupt_before=...)`` looks like a crashed one:
    ``Policy(frontier="keep")`` keeps its call waiting, and resuming runs the tool."""
    graph = agent(strict, InMemorySaver())
    config = thread("one-off")
    interrupt(graph, strict, config, "paused")
    done = repair_thread(graph, config, policy=toolmend.Policy(frontier="keep"))
    assert done == ThreadRepair()
    strict.script([Reply.text("Warm in Rome.")])
    state = graph.invoke(None, config)
    assert "21 C and sunny in Rome" in [m.content for m in state["messages"]]


@lc_tool
def approved_weather(city: str) -> str:
    """The weather in a city, once a human approves the call."""
    from langgraph.types import interrupt as ask

    return f"{ask(f'look up {city}?')}: 21 C and sunny in {city}"


def test_repair_thread_keeps_a_call_an_open_interrupt_waits_on(
    strict: StrictProviderServer,
) -> None:
    """A tool waiting in ``interrupt()`` for a human: pending, so the thread is left as it is
    and resuming with the answer runs the tool."""
    from langgraph.types import Command

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = create_react_agent(
            chat_model(strict), [approved_weather], checkpointer=InMemorySaver()
        )
    config = thread("approval")
    strict.script([Reply.tool_calls(("approved_weather", {"city": "Rome"}))])
    graph.invoke({"messages": [HumanMessage("Rome?")]}, config)
    assert graph.get_state(config).interrupts
    assert repair_thread(graph, config) == ThreadRepair()
    strict.script([Reply.text("Warm.")])
    state = graph.invoke(Command(resume="yes"), config)
    assert "yes: 21 C and sunny in Rome" in [m.content for m in state["messages"]]
    assert [r.status for r in strict.requests] == [200, 200]


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_async_hook_and_repair(
    store: str, strict: StrictProviderServer, tmp_path: Path, loop: asyncio.AbstractEventLoop
) -> None:
    """``ainvoke`` through the hook, and ``arepair_thread`` (``AsyncSqliteSaver`` on SQLite)."""
    config = thread("async")

    async def run(saver: Any) -> None:
        hooked = agent(strict, saver, ToolMendPreModelHook(provider="openai"))
        plain = agent(strict, saver)
        strict.script([Reply.tool_calls(("get_weather", {"city": "Rome"})), Reply.text("Mild.")])
        await plain.ainvoke(
            {"messages": [HumanMessage("Rome?")]}, config, interrupt_before=["tools"]
        )
        call_id = waiting_call((await plain.aget_state(config)).values["messages"])
        with pytest.raises(ValueError, match="INVALID_CHAT_HISTORY"):
            await plain.ainvoke({"messages": [HumanMessage("Berlin?")]}, config)
        await hooked.ainvoke({"messages": [HumanMessage("Berlin?")]}, config)
        assert strict.last_request.accepted
        assert call_id in str(strict.last_request.history)
        done = await arepair_thread(plain, config)
        assert [c.code for c in done.changes] == ["answered_missing_call"]
        strict.script([Reply.text("Bye.")])
        await plain.ainvoke({"messages": [HumanMessage("Thanks!")]}, config)

    async def on_sqlite() -> None:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "threads.db")) as saver:
            await run(saver)

    loop.run_until_complete(run(InMemorySaver()) if store == "memory" else on_sqlite())
    assert [r.status for r in strict.requests] == [200] * 3


# --- a tool result without its call --------------------------------------------------------------


def orphaned(graph: Any, server: StrictProviderServer, config: Any) -> None:
    """A finished turn, then a late tool result stored for a call the thread never had."""
    server.script(
        [Reply.tool_calls(("get_weather", {"city": "Paris"})), Reply.text("Sunny in Paris.")]
    )
    graph.invoke({"messages": [HumanMessage("Weather in Paris?")]}, config)
    late = ToolMessage("SECRET late result", tool_call_id="call_gone", name="get_weather")
    graph.update_state(config, {"messages": [late]})


def test_repair_thread_keeps_a_paused_thread_paused(strict: StrictProviderServer) -> None:
    """Damage before the waiting call is repaired; the graph still runs the tool on resume."""
    saver = InMemorySaver()
    graph = agent(strict, saver)
    config = thread("paused-orphan")
    orphaned(graph, strict, config)
    strict.script([Reply.tool_calls(("get_weather", {"city": "Rome"})), Reply.text("Warm.")])
    # gets past the orphan, then pauses before its tools
    hooked = agent(strict, saver, ToolMendPreModelHook(), pause=True)
    hooked.invoke({"messages": [HumanMessage("And Rome?")]}, config)
    done = repair_thread(hooked, config)  # the graph that pauses: its calls wait
    assert [c.code for c in done.changes] == ["dropped_orphan_result"]
    assert graph.get_state(config).next == ("tools",)
    state = graph.invoke(None, config)
    assert "21 C and sunny in Rome" in [m.content for m in state["messages"]]
    assert [r.status for r in strict.requests] == [200] * 4


def test_a_stored_orphan_result_gets_the_providers_400_without_toolmend(
    strict: StrictProviderServer, saver: Any
) -> None:
    graph = agent(strict, saver)
    config = thread("orphan-plain")
    orphaned(graph, strict, config)
    with pytest.raises(openai.BadRequestError, match="role 'tool' must be a response"):
        graph.invoke({"messages": [HumanMessage("And Rome?")]}, config)
    assert [r.status for r in strict.requests] == [200, 200, 400]


def test_an_orphan_result_is_dropped_by_the_hook_and_by_repair_thread(
    strict: StrictProviderServer, saver: Any, caplog: pytest.LogCaptureFixture
) -> None:
    hooked = agent(strict, saver, ToolMendPreModelHook())
    config = thread("orphan")
    orphaned(hooked, strict, config)
    strict.script([Reply.text("Warm.")])
    with caplog.at_level(logging.INFO, logger="toolmend"):
        hooked.invoke({"messages": [HumanMessage("And Rome?")]}, config)
    assert "dropped_orphan_result" in caplog.text and "SECRET" not in caplog.text
    assert strict.last_request.accepted
    assert "call_gone" not in str(strict.last_request.history)
    assert PARIS in str(strict.last_request.history)
    stored = hooked.get_state(config).values["messages"]
    assert any(getattr(m, "tool_call_id", None) == "call_gone" for m in stored)
    done = repair_thread(agent(strict, saver), config)
    assert [c.code for c in done.changes] == ["dropped_orphan_result"]
    healed = hooked.get_state(config).values["messages"]
    assert not any(getattr(m, "tool_call_id", None) == "call_gone" for m in healed)
    assert len(healed) == len(stored) - 1


def test_the_hook_repairs_what_a_trimming_hook_of_your_own_broke(
    strict: StrictProviderServer,
) -> None:
    """``trim_messages`` keeping the last messages cuts a tool result off from its call."""

    def trimming(state: dict[str, Any]) -> list[BaseMessage]:
        return trim_messages(state["messages"], max_tokens=3, token_counter=len, strategy="last")

    mend = ToolMendPreModelHook()
    for hook, status in (
        (lambda state: {"llm_input_messages": trimming(state)}, 400),
        (lambda state: {"llm_input_messages": mend.repair(trimming(state))}, 200),
    ):
        strict.clear()
        strict.script([Reply.tool_calls(("get_weather", {"city": "Paris"})), Reply.text("Sunny.")])
        graph = agent(strict, InMemorySaver(), hook)
        graph.invoke({"messages": [HumanMessage("Weather in Paris?")]}, thread("trim"))
        # the next turn's window is [result, answer, question]: the call was trimmed away
        with suppress(openai.BadRequestError):
            graph.invoke({"messages": [HumanMessage("And Rome?")]}, thread("trim"))
        assert [r.status for r in strict.requests] == [200, 200, status]
    assert PARIS not in str(strict.last_request.history)


# --- what the hook sends, and what it leaves alone --------------------------------------------


def broken_state() -> dict[str, Any]:
    return {
        "messages": [
            HumanMessage("Weather in Paris?", id="h1"),
            AIMessage(
                "",
                id="a1",
                tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1"}],
            ),
            HumanMessage("Never mind.", id="h2"),
        ]
    }


def test_the_hook_never_touches_the_state() -> None:
    state = broken_state()
    before = copy.deepcopy(state)
    messages = state["messages"]
    update = ToolMendPreModelHook()(state)
    assert state == before and state["messages"] is messages
    assert [m.type for m in update["llm_input_messages"]] == ["human", "ai", "tool", "human"]
    valid = {"messages": [HumanMessage("hi")]}
    assert ToolMendPreModelHook()(valid) == {"llm_input_messages": []}  # the state's own list


@pytest.mark.parametrize(
    "messages",
    [None, "hi", {"role": "user"}, [HumanMessage("hi"), 42], [HumanMessage("hi"), None]],
    ids=["None", "a string", "a dict", "a number in it", "None in it"],
)
def test_hostile_state_goes_on_as_it_is(messages: Any, caplog: pytest.LogCaptureFixture) -> None:
    """What toolmend cannot read is left to LangGraph, with at most one WARNING, no traceback."""
    with caplog.at_level(logging.INFO, logger="toolmend"):
        assert ToolMendPreModelHook()({"messages": messages}) == {"llm_input_messages": []}
    assert len(caplog.records) <= 1
    assert all(r.levelno == logging.WARNING and r.exc_info is None for r in caplog.records)


def test_the_hook_names_an_unknown_policy_or_provider_where_it_is_built() -> None:
    with pytest.raises(toolmend.UnknownNameError, match="Unknown policy"):
        ToolMendPreModelHook(policy="repiar")
    with pytest.raises(toolmend.UnknownNameError):
        ToolMendPreModelHook(provider="nope")
    with pytest.raises(toolmend.UnknownNameError):
        repair_thread(None, thread("x"), policy="repiar")


def test_the_hook_works_the_provider_out_from_the_model() -> None:
    assert ToolMendPreModelHook().provider == "openai"
    deepseek = ChatOpenAI(base_url="https://api.deepseek.com", api_key="sk-test", model="x")
    assert ToolMendPreModelHook(model=deepseek).provider == "deepseek"
    assert ToolMendPreModelHook("mistral", model=deepseek).provider == "mistral"


def test_the_loop_guard_raises_before_the_model_is_called(strict: StrictProviderServer) -> None:
    looping: list[BaseMessage] = [HumanMessage("Weather in Paris?")]
    for n in range(3):
        looping += [
            AIMessage(
                "", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": f"c{n}"}]
            ),
            ToolMessage(PARIS, tool_call_id=f"c{n}", name="get_weather"),
        ]
    graph = agent(strict, InMemorySaver(), ToolMendPreModelHook(on_loop="raise"))
    with pytest.raises(toolmend.ToolLoopError):
        graph.invoke({"messages": looping}, thread("loop"))
    assert strict.requests == []


class AddedState(TypedDict):
    messages: Annotated[list[BaseMessage], operator.add]


class PlainState(TypedDict):
    messages: list[BaseMessage]


def echo(schema: type) -> Any:
    builder = StateGraph(schema)
    builder.add_node("echo", lambda state: {})
    builder.set_entry_point("echo")
    return builder.compile(checkpointer=InMemorySaver())


def test_repair_thread_writes_a_channel_without_reducer_as_a_whole() -> None:
    graph = echo(PlainState)
    config = thread("plain")
    graph.invoke(broken_state(), config)
    assert [c.code for c in repair_thread(graph, config).changes] == ["answered_missing_call"]
    messages = graph.get_state(config).values["messages"]
    assert [m.type for m in messages] == ["human", "ai", "tool", "human"]
    assert [m.id for m in messages][:2] == ["h1", "a1"] and messages[2].id


def test_repair_thread_refuses_a_reducer_it_cannot_write_through() -> None:
    graph = echo(AddedState)
    config = thread("add")
    graph.invoke(broken_state(), config)
    with pytest.raises(ValueError, match="add_messages"):
        repair_thread(graph, config)
    assert graph.get_state(config).values == broken_state()


# --- fail open ----------------------------------------------------------------------------------


class InjectedFaultError(RuntimeError):
    """What every injected fault raises."""


def _raise(*args: Any, **kwargs: Any) -> Any:
    raise InjectedFaultError("injected fault inside toolmend")


FAULTS: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "vouch": lambda mp: mp.setattr(toolmend._fastpath, "vouch", _raise),
    "repair": lambda mp: patch_everywhere(mp, "repair", _raise),
    "the hook's own code": lambda mp: mp.setattr(tm, "_messages_of", _raise),
    "the thread's ids": lambda mp: mp.setattr(tm, "_with_ids", _raise),
}


@contextmanager
def logged_once(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    with caplog.at_level(logging.INFO, logger="toolmend"):
        yield
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and errors[0].exc_info is not None
    assert "injected fault" in caplog.text


@pytest.mark.parametrize("fault", ["vouch", "repair", "the hook's own code"])
def test_a_toolmend_fault_in_the_hook_runs_the_graph_as_without_it(
    fault: str,
    strict: StrictProviderServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    graph = agent(strict, InMemorySaver(), ToolMendPreModelHook())
    config = thread("fault")
    interrupt(graph, strict, config, "paused")
    FAULTS[fault](monkeypatch)
    if fault != "repair":  # a valid turn goes through untouched (repair is never reached)
        strict.script([Reply.text("Hi.")])
        with logged_once(caplog):
            graph.invoke({"messages": [HumanMessage("Hi")]}, thread("valid"))
        assert strict.last_request.accepted
        caplog.clear()
    with logged_once(caplog), pytest.raises(ValueError, match="INVALID_CHAT_HISTORY"):
        graph.invoke({"messages": [HumanMessage("Never mind. Berlin?")]}, config)


def test_a_toolmend_fault_reading_the_model_still_builds_the_hook(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    patch_everywhere(monkeypatch, "request_profile", _raise)
    model = ChatOpenAI(base_url="https://api.deepseek.com", api_key="sk-test", model="x")
    with logged_once(caplog):
        hook = ToolMendPreModelHook(model=model)
    assert hook.provider == "openai"
    assert [m.type for m in hook(broken_state())["llm_input_messages"]][2] == "tool"


@pytest.mark.parametrize("fault", ["vouch", "repair", "the thread's ids"])
def test_a_toolmend_fault_in_repair_thread_writes_nothing(
    fault: str,
    strict: StrictProviderServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    graph = agent(strict, InMemorySaver())
    config = thread("fault")
    interrupt(graph, strict, config, "paused")
    with pytest.raises(ValueError, match="INVALID_CHAT_HISTORY"):
        graph.invoke({"messages": [HumanMessage("Never mind. Berlin?")]}, config)
    before = graph.get_state(config)
    FAULTS[fault](monkeypatch)
    with logged_once(caplog):
        done = repair_thread(graph, config)
    assert done.failed and not done.written and done.changes == ()
    after = graph.get_state(config)
    assert after.config == before.config and after.values == before.values


# --- the example, and the extra ------------------------------------------------------------------


@pytest.mark.slow
def test_the_example_runs_offline(capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(ROOT / "examples" / "langgraph_agent.py"), run_name="__main__")
    assert "every request accepted" in capsys.readouterr().out


@pytest.mark.slow
def test_a_missing_langgraph_names_the_extra() -> None:
    code = "import sys\nsys.modules['langgraph'] = None\nimport toolmend.integrations.langgraph\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode != 0
    assert "pip install 'toolmend[langgraph]'" in done.stderr


# --- telemetry ---------------------------------------------------------------------------------


def test_the_hook_reports_each_model_call_and_repair_thread_only_its_changes(
    strict: StrictProviderServer,
) -> None:
    from toolmend.integrations import telemetry

    heard: list[telemetry.HookReport] = []
    telemetry.add_sink(heard.append)
    try:
        graph = agent(strict, InMemorySaver(), ToolMendPreModelHook(model=chat_model(strict)))
        config = thread("telemetry")
        interrupt(graph, strict, config, "died")
        heard.clear()
        strict.script([Reply.text("Mild.")])
        graph.invoke({"messages": [HumanMessage("Never mind. Berlin?")]}, config)
        model_calls = list(heard)
        heard.clear()
        repair_thread(graph, config, provider="openai")
    finally:
        telemetry.remove_sink(heard.append)
    assert [(r.hook, r.request, r.outcome) for r in model_calls] == [
        ("langgraph.pre_model_hook", True, "repaired")
    ]
    assert model_calls[0].change_codes == ("answered_missing_call",)
    assert [(r.request, r.change_codes) for r in heard] == [(False, ("answered_missing_call",))]
