"""The OpenAI Agents SDK with toolmend: a poisoned Session stops failing every run.

Runs offline against toolmend's strict provider server (OpenAI's Responses API and DeepSeek's
Chat Completions, on 127.0.0.1, no key):

    python examples/openai_agents.py

The session holds a tool output whose call is gone. The SDK replays it on every run and the
provider answers HTTP 400, run after run. With toolmend's two ``RunConfig`` hooks the run goes
through, a real tool is called, and ``repair_session`` heals the store for good.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
from pathlib import Path

import agents
import openai
from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    SQLiteSession,
    function_tool,
)

from toolmend.integrations.openai_agents import (
    call_model_input_filter,
    repair_session,
    session_input_callback,
)
from toolmend.testing import Reply, StrictProviderServer

agents.set_tracing_disabled(True)  # offline: no trace export

# A store lost the call of this output (trimmed, or a crash between two writes).
POISONED = [
    {"role": "user", "content": "What's the weather in Paris?"},
    {"type": "function_call_output", "call_id": "call_8f2a", "output": "21 C, sunny"},
    {"role": "assistant", "content": "It is sunny in Paris."},
]

TOOLMEND = RunConfig(
    call_model_input_filter=call_model_input_filter,  # each model call, for the model's provider
    session_input_callback=session_input_callback,  # what the session hands back
)


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"19 C and clear in {city}"


async def main(folder: Path) -> None:
    with StrictProviderServer() as server:
        client = openai.AsyncOpenAI(base_url=server.openai_base_url, api_key="sk-test")
        for label, model in [
            ("OpenAI Responses", OpenAIResponsesModel("gpt-4.1", client)),
            ("DeepSeek chat", OpenAIChatCompletionsModel("deepseek-chat", client)),
        ]:
            agent = Agent(name="weather", model=model, tools=[get_weather])
            session = SQLiteSession(label, db_path=folder / "sessions.db")
            await session.add_items(POISONED)
            try:
                await Runner.run(agent, "And in Lyon?", session=session)
            except openai.BadRequestError:
                print(f"{label}, without toolmend: HTTP 400 {server.last_request.error!r}")
            server.clear()
            server.script(
                [Reply.tool_calls(("get_weather", {"city": "Lyon"})), Reply.text("Clear.")]
            )
            result = await Runner.run(agent, "And in Lyon?", session=session, run_config=TOOLMEND)
            assert all(request.accepted for request in server.requests)
            print(f"{label}, with toolmend: {result.final_output!r}, every request accepted")

            repaired = await repair_session(session)  # heal the store itself, once
            print(f"{label}, session repaired: {[c.code for c in repaired.changes]}")
            await Runner.run(agent, "Thanks!", session=session)  # no hook needed any more
            assert server.last_request.accepted


if __name__ == "__main__":
    logging.basicConfig(format="%(name)s: %(message)s")
    logging.getLogger("toolmend").setLevel(logging.INFO)  # one line per repaired request
    logging.getLogger("openai.agents").setLevel(logging.CRITICAL)  # the expected 400 above
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(main(Path(folder)))
