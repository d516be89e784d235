"""Small builders for OpenAI chat messages, so rule tables read like the histories they test."""

from __future__ import annotations

import json
from typing import Any

Message = dict[str, Any]


def user(text: str = "hello") -> Message:
    return {"role": "user", "content": text}


def system(text: str = "be brief") -> Message:
    return {"role": "system", "content": text}


def assistant(text: str | None = "hi there", **extra: Any) -> Message:
    return {"role": "assistant", "content": text, **extra}


def tool_call(call_id: str, name: str = "get_weather", **arguments: Any) -> Message:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments or {"city": "Paris"})},
    }


def calls(*call_ids: str, text: str | None = None, **extra: Any) -> Message:
    """An assistant message calling one tool per id."""
    return {
        "role": "assistant",
        "content": text,
        "tool_calls": [tool_call(i) for i in call_ids],
        **extra,
    }


def result(call_id: str | None, text: str = "21 C", **extra: Any) -> Message:
    message: Message = {"role": "tool", "content": text, **extra}
    if call_id is not None:
        message["tool_call_id"] = call_id
    return message
