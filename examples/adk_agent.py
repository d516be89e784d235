"""Google ADK with toolmend: a poisoned session goes through again.

A stored session holds a function response named after its call's id instead of the function
(a converter's bug), so every model call of the agent is refused with HTTP 400. Runs offline
against toolmend's strict provider server, which answers like the Gemini API:

    python examples/adk_agent.py
"""

from __future__ import annotations

import asyncio
import logging
import os

os.environ.setdefault("GOOGLE_API_KEY", "test")  # a dummy key: nothing leaves 127.0.0.1
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from google.adk.agents import LlmAgent
from google.adk.events import Event
from google.adk.models import Gemini
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import errors, types

from toolmend.integrations.adk import ToolMendPlugin, repair_session
from toolmend.testing import Reply, StrictProviderServer


def get_weather(city: str) -> dict[str, str]:
    """The weather in ``city``."""
    return {"result": f"21 C, sunny in {city}"}


POISONED = [
    types.Content(role="user", parts=[types.Part(text="Weather in Paris?")]),
    types.Content(
        role="model",
        parts=[types.Part(function_call=types.FunctionCall(name="get_weather", id="adk-1"))],
    ),
    types.Content(  # named after the call id, not the function
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(
                    name="call_8f2a", id="adk-1", response={"result": "21 C"}
                )
            )
        ],
    ),
    types.Content(role="model", parts=[types.Part(text="21 C and sunny.")]),
]


async def main() -> None:
    logging.basicConfig(format="%(name)s: %(message)s")
    logging.getLogger("toolmend").setLevel(logging.INFO)  # one line per repaired request
    logging.getLogger("google_adk").setLevel(logging.CRITICAL)  # ADK logs the 400 at length

    with StrictProviderServer() as server:
        sessions = InMemorySessionService()
        session = await sessions.create_session(app_name="weather", user_id="u1")
        for content in POISONED:
            author = "user" if content.parts[0].text and content.role == "user" else "agent"
            await sessions.append_event(session, Event(author=author, content=content))

        def runner(*plugins: ToolMendPlugin) -> Runner:
            model = Gemini(model="gemini-2.5-flash", base_url=server.gemini_base_url)
            agent = LlmAgent(name="agent", model=model, tools=[get_weather])
            return Runner(
                app_name="weather", agent=agent, session_service=sessions, plugins=list(plugins)
            )

        async def ask(app: Runner, session_id: str, question: str) -> str:
            message = types.Content(role="user", parts=[types.Part(text=question)])
            texts = []
            async for event in app.run_async(
                user_id="u1", session_id=session_id, new_message=message
            ):
                texts += [p.text for p in (event.content.parts if event.content else ()) if p.text]
            return " ".join(texts)

        try:
            await ask(runner(), session.id, "And in Lyon?")
        except errors.ClientError as error:
            print(f"without toolmend: HTTP {error.code} {server.last_request.error!r}")

        server.script([Reply.tool_calls(("get_weather", {"city": "Lyon"})), Reply.text("Sunny.")])
        answer = await ask(runner(ToolMendPlugin()), session.id, "And in Lyon?")
        print(f"with ToolMendPlugin: accepted, the tool ran, reply {answer!r}")

        healed = await repair_session(
            sessions, app_name="weather", user_id="u1", session_id=session.id
        )
        print(f"repair_session: {[c.code for c in healed.changes]} -> session {healed.session.id}")
        server.script([Reply.text("Rain tomorrow.")])
        answer = await ask(runner(), healed.session.id, "And tomorrow?")
        print(f"the repaired session, without the plugin: accepted, reply {answer!r}")
        assert all(request.accepted for request in server.requests[1:])


if __name__ == "__main__":
    asyncio.run(main())
