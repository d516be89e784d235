"""JSON text that toolmend writes or reads itself, with one clear error for hostile values.

A repair sometimes turns a value into JSON text (a call's arguments must be a string; a call or
a result kept as plain text) or parses it (arguments given as text where an object belongs).
Ordinary values are plain JSON. A hostile one (a cycle, nesting deeper than Python's recursion
limit, an object JSON cannot write) must not escape as a ``RecursionError`` or a ``TypeError``
from deep inside :mod:`json`: the formats call :func:`dumps` and :func:`loads`, which raise
:class:`UnwritableValueError` carrying the value, and the API (:func:`toolmend._api.mend_damage`)
finds which message and field hold it, on that error path only, and raises
:class:`toolmend.InvalidMessageError` naming them. Nothing here runs on the valid path.

What toolmend writes is strict JSON (``allow_nan=False``): a provider's parser rejects ``NaN``
and ``Infinity``. A value holding one raises :class:`NonFiniteNumberError`, and the repair
leaves the range of messages holding it as it was: its problems stay, reported in
``problems_left`` (:func:`toolmend._api.mend_damage`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["NonFiniteNumberError", "UnwritableValueError", "dumps", "loads", "locate"]


class UnwritableValueError(Exception):
    """Internal: ``value`` cannot be written (or read) as JSON; ``reason`` says why. The API
    turns it into :class:`toolmend.InvalidMessageError` naming the message and field."""

    def __init__(self, value: object, reason: str) -> None:
        super().__init__(reason)
        self.value = value
        self.reason = reason


class NonFiniteNumberError(UnwritableValueError):
    """Internal: ``value`` holds a float JSON has no number for (NaN, Infinity)."""


def dumps(value: Any, **options: Any) -> str:
    """:func:`json.dumps` with ``allow_nan=False`` (strict JSON), raising
    :class:`UnwritableValueError` for what JSON cannot write (:class:`NonFiniteNumberError`
    for NaN and Infinity)."""
    try:
        return json.dumps(value, **options, allow_nan=False)
    except RecursionError:
        raise UnwritableValueError(value, "nested too deeply to write as JSON") from None
    except ValueError as error:
        if "Out of range float" in str(error):
            raise NonFiniteNumberError(value, "NaN or Infinity, which JSON cannot write") from None
        raise UnwritableValueError(value, "a cycle or an object JSON cannot write") from None
    except TypeError:  # an object without a JSON form
        raise UnwritableValueError(value, "a cycle or an object JSON cannot write") from None


def loads(text: str) -> Any:
    """:func:`json.loads`: text that is not JSON raises ``ValueError`` as usual (callers keep
    it as text); JSON nested too deeply to read raises :class:`UnwritableValueError`."""
    try:
        return json.loads(text)
    except RecursionError:
        raise UnwritableValueError(text, "JSON text nested too deeply to read") from None


def locate(messages: Sequence[Any], value: object, max_depth: int = 8) -> tuple[int, str] | None:
    """The index of the message holding ``value`` (the very object) and the path to it inside
    that message (``tool_calls[0].function.arguments``), or None when no message holds it
    within ``max_depth`` levels."""
    for index, message in enumerate(messages):
        path = _path_to(message, value, max_depth)
        if path is not None:
            return index, path
    return None


def _path_to(root: Any, value: object, max_depth: int) -> str | None:
    """Depth-first, without recursion, each container visited once (cycles end the walk)."""
    seen: set[int] = set()
    stack: list[tuple[Any, str, int]] = [(root, "", 0)]
    while stack:
        node, path, depth = stack.pop()
        if node is value:
            return path
        if depth >= max_depth or id(node) in seen:
            continue
        seen.add(id(node))
        for key, child in reversed(_children(node)):
            step = f"[{key}]" if isinstance(key, int) else (f".{key}" if path else str(key))
            stack.append((child, path + step, depth + 1))
    return None


def _children(node: Any) -> list[tuple[int | str, Any]]:
    if isinstance(node, Mapping):
        return [(str(key), child) for key, child in node.items()]
    if isinstance(node, (list, tuple)):
        return list(enumerate(node))
    if isinstance(node, (str, bytes, int, float)) or node is None:
        return []
    fields = getattr(node, "__dict__", None)  # SDK objects: their public attributes
    if isinstance(fields, dict):
        return [(key, child) for key, child in fields.items() if not key.startswith("_")]
    return []
