"""A legacy app that never imports toolmend: it sends an OpenAI chat history whose tool result
got separated from its call by a user message, which the API refuses with HTTP 400.

Run it unchanged under toolmend and the request goes out repaired:

    OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 toolmend-run python examples/legacy_app.py

The openai client reads ``OPENAI_BASE_URL`` (and ``OPENAI_API_KEY``) from the environment, as
legacy apps usually do. To try it offline, ``toolmend serve`` (in another shell) starts the
strict provider server and prints the ``OPENAI_BASE_URL`` to use, until Ctrl-C. Prints
``accepted: ...`` and exits 0, or ``rejected: ...`` and exits 1.
"""

import os
import sys

import openai

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


def main() -> int:
    client = openai.OpenAI(api_key=os.environ.get("OPENAI_API_KEY", "test"), max_retries=0)
    try:
        reply = client.chat.completions.create(model="gpt-4o", messages=HISTORY)
    except openai.BadRequestError as error:
        print("rejected:", error.message)
        return 1
    print("accepted:", reply.choices[0].message.content)
    return 0


if __name__ == "__main__":
    sys.exit(main())
