"""Wire formats: one :class:`Format` per shape of history, in one registry.

Each format is a subclass of :class:`Format` (see :mod:`toolmend.formats._base` for the
contract) with one registered instance. The built-in formats live in this package, one module
each, imported on first use; another format registers with one line::

    toolmend.formats.register(MyFormat())

Detection (:func:`detect`) asks the formats in registration order.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Sequence
from typing import Any

from .._report import InvalidHistoryError, InvalidMessageError, UnknownNameError
from ._base import Format, LiveRounds, message_dict

__all__ = ["Format", "LiveRounds", "detect", "get", "message_dict", "names", "register"]

_BUILT_IN: dict[str, str] = {
    "openai": "toolmend.formats._openai_chat",
    "openai-responses": "toolmend.formats._openai_responses",
    "anthropic": "toolmend.formats._anthropic",
    "gemini": "toolmend.formats._gemini",
    "bedrock": "toolmend.formats._bedrock",
    "langchain": "toolmend.formats._langchain",
}
"""The built-in formats by name -> the module that defines and registers each (imported when
first asked for: by name, or by :func:`detect`, which asks them all)."""

_registered: dict[str, Format] = {}
"""Every format imported so far, by name, in registration order."""

_aliases: dict[str, str] = {
    "openai-chat": "openai",
    "chat": "openai",
    "claude": "anthropic",
    "google-genai": "gemini",
    "genai": "gemini",
    "vertex": "gemini",
    "converse": "bedrock",
}
"""Other names of the built-in formats (a registered format adds its own ``aliases``)."""


def register(format: Format) -> Format:
    """Add a format to the registry and return it; register it before the first request that
    uses it (the hooks remember which format a provider's requests are in).

    A format of the same name is replaced; an alias that is already another format's name or
    alias is an error. Detection asks the built-in formats first, then the others in the order
    they registered.
    """
    if not isinstance(format, Format):
        raise TypeError(f"register() takes a Format instance, got {type(format).__name__}")
    name = getattr(format, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"{type(format).__name__} has no name: set the class attribute `name`")
    for alias in format.aliases:
        owner = _aliases.get(alias, alias if alias in _BUILT_IN or alias in _registered else None)
        if owner is not None and owner != name:
            raise ValueError(f"the alias {alias!r} of format {name!r} is already {owner!r}'s")
    _registered[name] = format
    for alias in format.aliases:
        _aliases[alias] = name
    _in_order[0] = ((), False)
    return format


def names() -> tuple[str, ...]:
    """The names of every known format: the built-in ones and those registered since."""
    return (*_BUILT_IN, *(name for name in _registered if name not in _BUILT_IN))


def get(name: str) -> Format:
    """The format called ``name`` (or one of its aliases), or a clear error suggesting a known
    one."""
    if not isinstance(name, str):
        raise UnknownNameError(f"Unknown format {name!r}: a format is named by a string")
    found = _registered.get(name)
    if found is not None:
        return found
    key = name if name in _BUILT_IN else _aliases.get(name, name)
    found = _registered.get(key)
    if found is not None:
        return found
    path = _BUILT_IN.get(key)
    if path is None:
        known = names()
        close = difflib.get_close_matches(str(name), [*known, *_aliases], n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise UnknownNameError(f"Unknown format {name!r}.{hint} Known: {', '.join(known)}")
    importlib.import_module(path)  # the module registers its format
    return _registered[key]


def detect(messages: Sequence[Any]) -> Format:
    """The format for a history, from the first message that shows a telling feature.

    A history of plain text messages with roles reads the same in every chat format, so it is
    read as ``"openai"``. A shape no format knows is an error, not a guess.
    """
    modules, built_in_only = _in_order[0]
    if not modules:
        modules, built_in_only = _every_format()
    if isinstance(messages, str):
        return _text_input(modules)
    plain = True  # every message so far is a plain text message with a chat role
    for message in messages:
        if (
            type(message) is dict
            and type(message.get("content")) is str
            and type(role := message.get("role")) is str
            and role in _PLAIN_ROLES
            and message.keys() <= _PLAIN_KEYS
        ):
            continue  # no format claims it: a chat with no tool call yet is all such messages
        plain = False
        if built_in_only and _chat_only(message):
            return modules[0]  # (what asking each format answers: see _chat_only)
        claimed = [module for module in modules if module.claims(message)]
        if len(claimed) == 1:
            return claimed[0]
        exclusive = [module for module in claimed if module.exclusive]
        if len(exclusive) == 1:  # its claim rests on the message's class (LangChain)
            return exclusive[0]
        if len(claimed) > 1:
            listed = ", ".join(module.name for module in claimed)
            raise InvalidHistoryError(
                f"ambiguous history: it could be any of {listed}; pass format="
            )
    if not plain:
        for index, message in enumerate(messages):
            _require_role(index, message)
    return get("openai")


_PLAIN_ROLES = frozenset({"user", "assistant", "system", "developer"})
_PLAIN_KEYS = frozenset({"role", "content", "name"})
"""A dict with only these keys, a string ``content`` and one of these roles tells no format
(no format's ``claims`` takes it, and its role is a string): :func:`detect` passes over it
without asking every format, which made a tool-free chat cost several times ``json.dumps``."""


_in_order: list[tuple[tuple[Format, ...], bool]] = [((), False)]
"""Every format in the order :func:`detect` asks them, once all are imported, and whether
they are the built-in ones and no other (the pair is replaced, never changed: a detection
under way keeps the one it took); ``((), False)`` again after :func:`register`. Looking
every format up on each call was a sixth of the cost of repairing a short valid history."""


def _every_format() -> tuple[tuple[Format, ...], bool]:
    """Every format, imported, in :func:`names` order, and whether they are the built-in
    ones alone, ``"openai"`` first (kept in :data:`_in_order`)."""
    modules = tuple(get(name) for name in names())
    built_in_only = len(modules) == len(_BUILT_IN) and all(
        type(module).__module__ == _BUILT_IN.get(module.name) for module in modules
    )
    _in_order[0] = (modules, built_in_only and modules[0].name == "openai")
    return _in_order[0]


def _chat_only(message: Any) -> bool:
    """Whether ``message`` is one only the built-in Chat Completions format claims: a dict of
    chat keys alone, string or null ``content`` (no list of blocks or parts for another
    format to read), and a role no other format uses with a chat-only feature (a ``tool`` or
    ``function`` role, ``tool_calls``, ``tool_call_id``). Every built-in ``claims`` answers
    such a message without being asked (``tests/test_format_toy.py`` holds it to them): the
    six calls, each loading its code, were half of a short history's repair right after other
    work."""
    if type(message) is not dict or not message.keys() <= _CHAT_KEYS:
        return False
    content = message.get("content")
    role = message.get("role")
    return (
        (content is None or type(content) is str)
        and type(role) is str
        and role in _CHAT_ROLES
        and (role != "assistant" or "tool_calls" in message or "tool_call_id" in message)
    )


_CHAT_KEYS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id"})
_CHAT_ROLES = frozenset({"assistant", "tool", "function"})


def _text_input(modules: Sequence[Format]) -> Format:
    """A bare string is one user message to the formats that take one
    (:attr:`Format.text_input`: the Responses ``input``); it reads the same in all of them, so
    the first is as good as any."""
    for module in modules:
        if module.text_input:
            return module
    raise InvalidHistoryError("a bare string is not a history: pass a list of messages")


def _require_role(index: int, message: Any) -> None:
    """A plain chat message has a string role; say which message has none, and why."""
    if isinstance(message, dict) or hasattr(message, "role"):
        role = message.get("role") if isinstance(message, dict) else message.role
        if not isinstance(role, str):
            raise InvalidMessageError(index, "role", "a string", role)
    else:
        raise InvalidMessageError(index, "", "a message (a dict or an object with a role)", message)
