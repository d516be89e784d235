"""Broken histories, one per format, and helpers shared by the tests/test_patch*.py files.

Each history is rejected by the strict provider server as it is and accepted once toolmend has
repaired it, so a test can tell a patched call path from an unpatched one by the HTTP status.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import toolmend
import toolmend.integrations.patch as tm

CHAT = [
    {"role": "user", "content": "Weather in Paris?"},
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
    {"role": "user", "content": "Still there?"},
    {"role": "tool", "tool_call_id": "call_1", "content": "21 C"},
]
"""OpenAI Chat Completions: a user message between a call and its result."""

RESPONSES = [
    {"role": "user", "content": "Weather in Paris?"},
    {
        "type": "function_call",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
    },
    {"role": "user", "content": "Still there?"},
]
"""OpenAI Responses: a function call with no output."""

ANTHROPIC = [
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me check."},
            {
                "type": "tool_use",
                "id": "toolu_01",
                "name": "get_weather",
                "input": {"city": "Paris"},
            },
        ],
    },
    {"role": "user", "content": "Still there?"},
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "21 C"}],
    },
]
"""Anthropic Messages: a user message between a tool_use and its tool_result."""


def seed_003() -> list[Any]:
    """Seed 003 on the wire: a functionResponse named after the OpenAI tool_call_id
    (``call_1073557``) instead of the function (``steal_meme_to_smile``), then the next turn,
    as google-genai ``types.Content`` objects."""
    from google.genai import types

    return [
        types.Content(role="user", parts=[types.Part(text="Make me smile")]),
        types.Content(
            role="model",
            parts=[
                types.Part(
                    function_call=types.FunctionCall(
                        name="steal_meme_to_smile", args={"topic": "cats"}
                    )
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
        types.Content(role="user", parts=[types.Part(text="Another one")]),
    ]


def wire(value: Any) -> Any:
    """``value`` as it looks in a JSON body (SDK objects dumped the way the SDKs dump them)."""
    if isinstance(value, list):
        return [wire(item) for item in value]
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return wire(dump(mode="json", exclude_none=True, by_alias=True))
    return json.loads(json.dumps(value))


def expected(history: Any, provider: str, format: str) -> Any:
    """What toolmend makes of ``history`` for ``provider``, as a JSON body carries it."""
    return wire(toolmend.sanitize(history, provider=provider, format=format))


@contextmanager
def unchanged(history: Any) -> Iterator[None]:
    """Assert that the block leaves the caller's ``history`` exactly as it was."""
    before = copy.deepcopy(history)
    items = list(history) if isinstance(history, list) else None
    yield
    assert history == before
    if items is not None:
        assert all(a is b for a, b in zip(history, items, strict=True))


class MendCounter:
    """Counts the wrapper's calls into ``hooks.mend`` (each call path must make exactly one)."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self._real = tm.mend

    def __call__(self, messages: Any, **kwargs: Any) -> Any:
        self.calls.append(kwargs["source"])
        return self._real(messages, **kwargs)
