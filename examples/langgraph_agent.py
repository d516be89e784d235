"""A LangGraph agent whose thread was interrupted between a tool call and its result.

Runs offline against toolmend's strict provider server (OpenAI's rules). The agent
(``create_react_agent``, checkpointed in memory) asks for a tool and is paused before the tool
runs; the user then sends a new message. Without toolmend LangGraph refuses to call the model
(``INVALID_CHAT_HISTORY``) on that turn and every later one. ``ToolMendPreModelHook`` repairs
each model call and leaves the stored thread as it is; ``repair_thread`` heals the stored
thread once, so the agent goes on without any hook.

    python examples/langgraph_agent.py
"""

from __future__ import annotations

import logging
import warnings
from contextlib import suppress
from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from toolmend.integrations.langgraph import ToolMendPreModelHook, repair_thread
from toolmend.testing import Reply, StrictProviderServer

with warnings.catch_warnings():  # deprecated in favour of langchain's create_agent
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"21 C and sunny in {city}"


def interrupted(server: StrictProviderServer, hook: Any, name: str) -> tuple[Any, Any]:
    """An agent and a thread paused between its call for Rome's weather and the result."""
    model = ChatOpenAI(base_url=server.openai_base_url, api_key="sk-test", model="gpt-4o-mini")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = create_react_agent(
            model, [get_weather], pre_model_hook=hook, checkpointer=InMemorySaver()
        )
    config = {"configurable": {"thread_id": name}}
    server.script([Reply.tool_calls(("get_weather", {"city": "Rome"}))])
    agent.invoke(
        {"messages": [HumanMessage("Weather in Rome?")]}, config, interrupt_before=["tools"]
    )
    return agent, config


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    logging.getLogger("toolmend").setLevel(logging.INFO)  # one line per repair
    with StrictProviderServer() as server:
        new_turn = {"messages": [HumanMessage("Never mind. Berlin?")]}

        agent, config = interrupted(server, None, "plain")
        try:
            agent.invoke(new_turn, config)
        except ValueError as error:
            print(f"without toolmend: {str(error).splitlines()[0][:60]}...")

        agent, config = interrupted(server, ToolMendPreModelHook(), "hook")
        server.script([Reply.text("Mild in Berlin.")])
        state = agent.invoke(new_turn, config)
        print(f"with the pre_model_hook: {state['messages'][-1].content!r}")

        agent, config = interrupted(server, None, "repair")
        done = repair_thread(agent, config)  # the paused call is waiting for its tool: kept
        print(f"repair_thread on the paused thread: written={done.written}")
        with suppress(ValueError):  # the user moved on: the new turn stops before the model
            agent.invoke(new_turn, config)
        done = repair_thread(agent, config)
        print(f"repair_thread: {[c.code for c in done.changes]}, written={done.written}")
        server.script([Reply.text("Mild in Berlin.")])
        state = agent.invoke(None, config)  # the stopped turn goes on
        print(f"after repair_thread, no hook: {state['messages'][-1].content!r}")

        statuses = [request.status for request in server.requests]
        print(f"requests: {statuses}")
        assert statuses == [200] * 5, statuses
        print("every request accepted")


if __name__ == "__main__":
    main()
