"""LiteLLM with toolmend: one line, and a broken tool history goes through.

Runs offline against toolmend's strict provider server, which answers like DeepSeek (HTTP 400
for a tool result without its call) and like Anthropic:

    python examples/litellm_sdk.py

It also sends a Claude Code history with an interrupted tool call through LiteLLM's
``/v1/messages`` route (``litellm.anthropic_messages``) to an OpenAI model.
"""

from __future__ import annotations

import asyncio
import logging
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # LiteLLM stays offline

import litellm

from toolmend.integrations.litellm import ToolMend
from toolmend.testing import StrictProviderServer

# Claude Code's /v1/messages request after an interrupted tool call: the call has no result.
CLAUDE_CODE = [
    {"role": "user", "content": "Run the tests."},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_01Bash", "name": "Bash", "input": {}}],
    },
    {"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user]"}]},
]

# An agent lost track of a call: its tool result is left without the assistant turn that made it.
HISTORY = [
    {"role": "system", "content": "You are a weather assistant."},
    {"role": "user", "content": "What's the weather in Paris?"},
    {"role": "tool", "tool_call_id": "call_8f2a", "content": "21 C, sunny"},
    {"role": "user", "content": "And tomorrow?"},
]


def main() -> None:
    logging.basicConfig(format="%(name)s: %(message)s")
    logging.getLogger("toolmend").setLevel(logging.INFO)  # one line per repaired request

    with StrictProviderServer() as server:
        deepseek = {"model": "deepseek/deepseek-chat", "api_base": server.openai_base_url}
        anthropic = {"model": "anthropic/claude-sonnet-4-5", "api_base": server.base_url}

        try:
            litellm.completion(messages=HISTORY, api_key="test", max_retries=0, **deepseek)
        except litellm.BadRequestError:
            print(f"without toolmend: HTTP 400 {server.last_request.error!r}")

        litellm.callbacks = [ToolMend()]  # the one line

        reply = litellm.completion(messages=HISTORY, api_key="test", max_retries=0, **deepseek)
        record = reply._hidden_params["toolmend"]
        print(f"with toolmend, sync: accepted, changes {[c['code'] for c in record['changes']]}")

        async def streamed() -> None:
            stream = await litellm.acompletion(
                messages=HISTORY, api_key="test", stream=True, max_retries=0, **anthropic
            )
            text = "".join([chunk.choices[0].delta.content or "" async for chunk in stream])
            provider = stream._hidden_params["toolmend"]["provider"]
            print(f"with toolmend, async stream to {provider}: accepted, reply {text!r}")
            # the proxy's /v1/messages (Claude Code) routed to an OpenAI model: LiteLLM
            # translates it to the Responses API after toolmend repaired it
            await litellm.anthropic_messages(
                messages=CLAUDE_CODE,
                model="openai/gpt-4.1",
                api_base=server.openai_base_url,
                api_key="test",
                max_tokens=256,
            )
            route = server.last_request.path
            print(f"with toolmend, Claude Code's /v1/messages to GPT: accepted at {route}")

        asyncio.run(streamed())
        assert all(request.accepted for request in server.requests[1:])
        assert HISTORY[2]["role"] == "tool"  # the caller's list is never changed


if __name__ == "__main__":
    main()
