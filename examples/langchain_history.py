"""A LangChain chat history that stays valid: ToolMendHistory under RunnableWithMessageHistory.

Runs offline against toolmend's strict provider server emulating DeepSeek (no API key, nothing
leaves 127.0.0.1). Between two tool-calling turns the app writes what seed 000's memory wrote:
an assistant message that lost its tool_calls, then a tool result that now dangles. Without the
wrapper the next request fails with DeepSeek's HTTP 400, and so does every request after it;
with it the dangling result is refused (and kept in ``history.rejected``), and every request is
accepted.

    python examples/langchain_history.py
"""

from __future__ import annotations

import logging
import warnings

from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from toolmend.integrations.langchain import ToolMendHistory
from toolmend.testing import Reply, StrictProviderServer


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"21 C and sunny in {city}"


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    with StrictProviderServer(provider="deepseek") as server:
        for city in ("Paris", "Rome"):
            server.script([Reply.tool_calls(("get_weather", {"city": city})), Reply.text("Sunny.")])
        with warnings.catch_warnings():  # LangChain deprecates its history classes
            warnings.simplefilter("ignore", DeprecationWarning)
            history = ToolMendHistory(InMemoryChatMessageHistory(), provider="deepseek")
            model = ChatOpenAI(
                base_url=server.openai_base_url, api_key="test", model="deepseek-chat"
            )
            prompt = ChatPromptTemplate.from_messages(
                [
                    ("system", "Be brief."),
                    MessagesPlaceholder("history"),
                    ("placeholder", "{input}"),
                ]
            )
            chain = RunnableWithMessageHistory(
                prompt | model.bind_tools([get_weather]),
                lambda session_id: history,
                input_messages_key="input",
                history_messages_key="history",
            )
        config = {"configurable": {"session_id": "demo"}}
        for city in ("Paris", "Rome"):
            reply = chain.invoke({"input": [HumanMessage(f"Weather in {city}?")]}, config)
            call = reply.tool_calls[0]
            result = ToolMessage(
                get_weather.invoke(call["args"]), tool_call_id=call["id"], name=call["name"]
            )
            final = chain.invoke({"input": [result]}, config)
            print(f"{city}: {final.content}")
            # The broken writes of seed 000: refused by the wrapper, kept in history.rejected.
            history.add_message(AIMessage("Let me check that."))
            history.add_message(ToolMessage("21 C", tool_call_id="call_lost", name="get_weather"))

        statuses = [request.status for request in server.requests]
        print(f"requests: {statuses}; rejected: {[r.reason for r in history.rejected]}")
        assert statuses == [200] * 4, statuses
        print("every request accepted")


if __name__ == "__main__":
    main()
