"""A LangChain v1 agent whose every model call is repaired: ToolMendMiddleware.

Runs offline against toolmend's strict provider server emulating DeepSeek. The agent starts
from a thread that seed 000's memory poisoned (an assistant message that lost its tool_calls,
then its tool result); without the middleware DeepSeek answers HTTP 400. With it each model
call goes out repaired, sync and async; ``persist=True`` also heals the stored thread.

    python examples/langchain_middleware.py
"""

from __future__ import annotations

import asyncio
import logging

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from toolmend.integrations.langchain import ToolMendMiddleware
from toolmend.testing import Reply, StrictProviderServer


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"21 C and sunny in {city}"


POISONED = [
    HumanMessage("Weather in Paris?"),
    AIMessage("Let me check."),  # lost its tool_calls
    ToolMessage("21 C", tool_call_id="call_lost", name="get_weather"),
    HumanMessage("And in Rome?"),
]


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    logging.getLogger("toolmend").setLevel(logging.INFO)  # one line per repaired call
    with StrictProviderServer(provider="deepseek") as server:
        model = ChatOpenAI(base_url=server.openai_base_url, api_key="test", model="deepseek-chat")
        for persist in (False, True):
            server.script(
                [Reply.tool_calls(("get_weather", {"city": "Rome"})), Reply.text("Warm.")]
            )
            agent = create_agent(
                model,
                tools=[get_weather],
                middleware=[ToolMendMiddleware(persist=persist)],
                checkpointer=InMemorySaver(),
            )
            config = {"configurable": {"thread_id": f"persist={persist}"}}
            if persist:
                state = asyncio.run(agent.ainvoke({"messages": POISONED}, config))
            else:
                state = agent.invoke({"messages": POISONED}, config)
            kept = any(getattr(m, "tool_call_id", None) == "call_lost" for m in state["messages"])
            print(
                f"persist={persist}: {state['messages'][-1].content!r}; "
                f"dangling result still in the thread: {kept}"
            )
        statuses = [request.status for request in server.requests]
        print(f"requests: {statuses}")
        assert statuses == [200] * 4, statuses
        print("every request accepted")


if __name__ == "__main__":
    main()
