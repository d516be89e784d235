"""A LangGraph agent whose thread was interrupted between a tool call and its result.

Runs offline against toolmend's strict provider server (OpenAI's rules). The agent is built the
way LangGraph recommends since 1.0, with LangChain's ``create_agent``, checkpointed in memory:
it asks for a tool and is paused before the tool runs (a stop compiled into the agent, as for a
human's approval); the user then sends a new message.
Without toolmend the provider refuses that turn (HTTP 400: the call has no result) and every
later one. ``ToolMendMiddleware`` repairs each model call and leaves the stored thread as it
is; ``repair_thread`` heals the stored thread once, so the agent goes on without any hook.
(For the older ``create_react_agent``, toolmend's ``ToolMendPreModelHook`` does what the
middleware does: see docs/hooks.md.)

    python examples/langgraph_agent.py
"""

from __future__ import annotations

import logging
from contextlib import suppress
from typing import Any

import openai
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from toolmend.integrations.langchain import ToolMendMiddleware
from toolmend.integrations.langgraph import repair_thread
from toolmend.testing import Reply, StrictProviderServer


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"21 C and sunny in {city}"


def interrupted(server: StrictProviderServer, middleware: list[Any], name: str) -> tuple[Any, Any]:
    """An agent and a thread paused between its call for Rome's weather and the result."""
    model = ChatOpenAI(base_url=server.openai_base_url, api_key="sk-test", model="gpt-4o-mini")
    agent = create_agent(
        model,
        [get_weather],
        middleware=middleware,
        checkpointer=InMemorySaver(),
        interrupt_before=["tools"],
    )
    config = {"configurable": {"thread_id": name}}
    server.script([Reply.tool_calls(("get_weather", {"city": "Rome"}))])
    agent.invoke({"messages": [HumanMessage("Weather in Rome?")]}, config)
    return agent, config


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    logging.getLogger("toolmend").setLevel(logging.INFO)  # one line per repair
    with StrictProviderServer() as server:
        new_turn = {"messages": [HumanMessage("Never mind. Berlin?")]}

        agent, config = interrupted(server, [], "plain")
        try:
            agent.invoke(new_turn, config)
        except openai.BadRequestError as error:
            print(f"without toolmend: HTTP {error.status_code} from the provider")

        agent, config = interrupted(server, [ToolMendMiddleware()], "middleware")
        server.script([Reply.text("Mild in Berlin.")])
        state = agent.invoke(new_turn, config)
        print(f"with ToolMendMiddleware: {state['messages'][-1].content!r}")

        agent, config = interrupted(server, [], "repair")
        done = repair_thread(agent, config)  # the paused call is waiting for its tool: kept
        print(f"repair_thread on the paused thread: written={done.written}")
        with suppress(openai.BadRequestError):  # the user moved on: the provider refuses it
            agent.invoke(new_turn, config)
        done = repair_thread(agent, config)
        print(f"repair_thread: {[c.code for c in done.changes]}, written={done.written}")
        server.script([Reply.text("Mild in Berlin.")])
        state = agent.invoke(None, config)  # the turn goes on, no middleware
        print(f"after repair_thread, no hook: {state['messages'][-1].content!r}")

        statuses = [request.status for request in server.requests]
        print(f"requests: {statuses}")
        assert statuses == [200, 400, 200, 200, 200, 400, 200], statuses
        print("every request accepted with toolmend; without it, the provider's 400")


if __name__ == "__main__":
    main()
