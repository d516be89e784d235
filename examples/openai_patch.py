"""Patch the openai SDK so every chat request goes out with a history the provider accepts.

Runs offline against toolmend's strict provider server (a local stand-in for the API that
answers HTTP 400 exactly where the provider would):

    python examples/openai_patch.py

The same history is sent three times: unpatched (rejected), patched for OpenAI, and patched for
a client pointed at DeepSeek through ``provider=`` (in real use the ``base_url`` host
``api.deepseek.com`` picks DeepSeek by itself). The log shows one line per repaired request.
"""

import logging
import sys

import openai

import toolmend.integrations.patch as tm
from toolmend.testing import StrictProviderServer

logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
logging.getLogger("httpx").setLevel(logging.WARNING)
logging.getLogger("httpx2").setLevel(logging.WARNING)

HISTORY = [
    {"role": "user", "content": "What's the weather in Paris?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    },
    {"role": "user", "content": "Are you still there?"},
    {"role": "tool", "tool_call_id": "call_1", "content": "21 C, sunny"},
]


def ask(base_url: str, model: str) -> bool:
    """Send HISTORY with a fresh client; whether the server accepted it."""
    with openai.OpenAI(api_key="test", base_url=base_url, max_retries=0) as client:
        try:
            reply = client.chat.completions.create(model=model, messages=HISTORY)
        except openai.BadRequestError as error:
            print("  rejected:", error.message)
            return False
    print("  accepted:", reply.choices[0].message.content)
    return True


def main() -> int:
    with StrictProviderServer() as server:
        print("unpatched:")
        before = ask(server.openai_base_url, "gpt-4o")

        tm.patch()
        print("patched:")
        after = ask(server.openai_base_url, "gpt-4o")

        tm.patch(provider="deepseek")
        print("patched, provider='deepseek':")
        deepseek = ask(server.base_url_for("deepseek") + "/v1", "deepseek-chat")
        tm.unpatch()
    return 0 if (not before and after and deepseek) else 1


if __name__ == "__main__":
    sys.exit(main())
