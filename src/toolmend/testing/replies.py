"""What the strict server answers when it accepts a request: scripted replies and their ids.

A :class:`Reply` says *what* the model answers (text, tool calls, or both); the wire modules say
*how* each API spells it. Tool call ids are generated here, shaped like the provider's own, so a
client that stores and echoes them back sends what it would send in production: ``call_`` plus
24 characters for OpenAI, nine alphanumerics for Mistral (its validator rejects anything else),
``toolu_01`` plus 22 for Anthropic. Gemini calls carry no id, only the function name.
"""

from __future__ import annotations

import base64
import random
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["IdMaker", "Reply", "ToolCall"]


@dataclass(frozen=True)
class ToolCall:
    """One tool call the scripted model makes: the function name and its arguments."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


CallSpec = ToolCall | tuple[str, Mapping[str, Any]] | tuple[str] | str
"""A tool call as :meth:`Reply.tool_calls` accepts it: a :class:`ToolCall`, ``(name, args)``,
``(name,)`` or a bare name."""


@dataclass(frozen=True)
class Reply:
    """One scripted model answer.

    ``content`` is the assistant text (``None`` for none); ``calls`` the tool calls, in order.
    Build one with :meth:`text` or :meth:`tool_calls`:

    >>> from toolmend.testing import Reply
    >>> Reply.text("hi").content
    'hi'
    >>> [c.name for c in Reply.tool_calls(("get_weather", {"city": "Paris"}), "get_time").calls]
    ['get_weather', 'get_time']
    """

    content: str | None = None
    calls: tuple[ToolCall, ...] = ()

    @classmethod
    def text(cls, text: str) -> Reply:
        """A plain text answer."""
        return cls(content=text)

    @classmethod
    def tool_calls(cls, *calls: CallSpec, text: str | None = None) -> Reply:
        """An answer that calls one tool, or several in parallel, optionally after some text."""
        if not calls:
            raise ValueError("Reply.tool_calls needs at least one call")
        return cls(content=text, calls=tuple(_as_call(call) for call in calls))

    @property
    def finished(self) -> bool:
        """Whether the model stops here (no calls) rather than waiting for tool results."""
        return not self.calls


def _as_call(spec: CallSpec) -> ToolCall:
    if isinstance(spec, ToolCall):
        return spec
    if isinstance(spec, str):
        return ToolCall(spec)
    if isinstance(spec, tuple) and spec and isinstance(spec[0], str):
        arguments = spec[1] if len(spec) > 1 else {}
        if not isinstance(arguments, Mapping):
            raise TypeError(f"arguments of tool call {spec[0]!r} must be a mapping")
        return ToolCall(spec[0], dict(arguments))
    raise TypeError(f"expected a ToolCall, (name, arguments) or a name, got {spec!r}")


def as_reply(item: Reply | str) -> Reply:
    """A script item as a :class:`Reply`; a bare string is a text reply."""
    if isinstance(item, Reply):
        return item
    if isinstance(item, str):
        return Reply.text(item)
    raise TypeError(f"script items are Reply objects or strings, got {type(item).__name__}")


def as_replies(items: Iterable[Reply | str]) -> list[Reply]:
    """Every item of a script as a :class:`Reply`."""
    return [as_reply(item) for item in items]


_ALNUM = string.ascii_letters + string.digits
_HEX = "0123456789abcdef"


class IdMaker:
    """Provider-shaped ids from a seeded generator, so a test run is reproducible."""

    def __init__(self, seed: int | str | None = 0) -> None:
        self._random = random.Random(seed)

    def _chars(self, alphabet: str, count: int) -> str:
        return "".join(self._random.choice(alphabet) for _ in range(count))

    def tool_call(self, provider: str) -> str:
        """A Chat Completions tool call id as ``provider`` would return it."""
        if provider == "mistral":
            return self._chars(_ALNUM, 9)
        if provider.startswith("deepseek"):
            return "call_00_" + self._chars(_ALNUM, 24)
        return "call_" + self._chars(_ALNUM, 24)

    def anthropic_tool_use(self) -> str:
        """An Anthropic ``tool_use`` id (``toolu_01...``)."""
        return "toolu_01" + self._chars(_ALNUM, 22)

    def prefixed(self, prefix: str, count: int = 24, alphabet: str = _ALNUM) -> str:
        """``prefix`` plus ``count`` random characters (message, response and item ids)."""
        return prefix + self._chars(alphabet, count)

    def hex(self, prefix: str, count: int = 48) -> str:
        """``prefix`` plus ``count`` hex digits (Responses API item ids)."""
        return prefix + self._chars(_HEX, count)

    def signature(self) -> str:
        """An opaque base64 blob like Gemini's ``thoughtSignature``."""
        return base64.b64encode(self._random.randbytes(48)).decode("ascii")
