"""Patch google-genai: seed 003's history, fixed on the wire, and a chat that heals itself.

An app that stores its history in OpenAI shape and rebuilds Gemini ``contents`` from it named
the functionResponse after the tool_call_id (``call_1073557``) instead of the function
(``steal_meme_to_smile``), so Gemini refused that request and every later turn of the
conversation. Runs offline against toolmend's strict provider server:

    python examples/genai_patch.py
"""

import logging
import sys

from google import genai
from google.genai import errors, types

import toolmend.integrations.patch as tm
from toolmend.testing import StrictProviderServer

logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
logging.getLogger("httpx").setLevel(logging.WARNING)
logging.getLogger("httpx2").setLevel(logging.WARNING)
logging.getLogger("google_genai").setLevel(logging.WARNING)

MODEL = "gemini-3.6-flash-high"

HISTORY = [
    types.Content(role="user", parts=[types.Part(text="Make me smile")]),
    types.Content(
        role="model",
        parts=[
            types.Part(
                function_call=types.FunctionCall(name="steal_meme_to_smile", args={"q": "cats"})
            )
        ],
    ),
    types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(
                    name="call_1073557", response={"result": "meme.png"}
                )
            )
        ],
    ),
    types.Content(role="model", parts=[types.Part(text="Here is a meme.")]),
]


def stored_names(chat: "genai.chats.Chat") -> list[str]:
    return [
        part.function_response.name
        for content in chat.get_history(curated=True)
        for part in content.parts or ()
        if part.function_response
    ]


def main() -> int:
    with StrictProviderServer() as server:
        client = genai.Client(api_key="test", http_options={"base_url": server.gemini_base_url})
        print("unpatched:")
        try:
            client.models.generate_content(model=MODEL, contents=[*HISTORY, "Another one"])
            print("  accepted")
            return 1
        except errors.ClientError as error:
            print("  rejected:", error.code, server.last_request.error)

        tm.patch(repair_chat_history=True)
        print("patched, models.generate_content:")
        reply = client.models.generate_content(model=MODEL, contents=[*HISTORY, "Another one"])
        print("  accepted:", reply.text)

        print("patched, a chat with repair_chat_history=True:")
        chat = client.chats.create(model=MODEL, history=HISTORY)
        print("  stored functionResponse names before:", stored_names(chat))
        print("  accepted:", chat.send_message("Another one").text)
        print("  stored functionResponse names after: ", stored_names(chat))
        healed = stored_names(chat) == ["steal_meme_to_smile"]
        tm.unpatch()
        print("unpatched again, the chat's next turn:")
        print("  accepted:", chat.send_message("And one more").text)
    return 0 if healed else 1


if __name__ == "__main__":
    sys.exit(main())
