"""What a message says, for display only: a one-line preview and the full content as JSON.

The rest of toolmend never looks at message content beyond what the rules need, and never puts
it in a log line or an exception. ``toolmend show`` is the one place a user asks to see it, so
the reading lives here, apart from the core, and works on any shape: dicts, SDK pydantic
objects, LangChain messages, google-genai Contents. It never raises on odd input; a value it
cannot read is shown by its type name.

The preview walks only the keys that hold text (``content``, ``text``, ``output``, ``parts``,
``summary``, ``thinking``, ``refusal``), so call arguments, ids and opaque blobs
(``encrypted_content``, signatures) stay out of it; media parts show as ``[image]`` or
``[file]``. Control characters, line breaks and the invisible characters that reorder or hide
text (bidi overrides, zero-width spaces) are escaped, so a preview can neither drive the
terminal nor hide what it says.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .._escape import TERMINAL_ESCAPES as _ESCAPES

__all__ = ["FULL_LIMIT", "data_of", "full_text", "one_line", "text_of"]

FULL_LIMIT = 100_000
"""The most characters of one message's full content shown; the rest is counted, not shown."""

_TEXT_KEYS = frozenset({"content", "text", "output", "parts", "summary", "thinking", "refusal"})
_IMAGE_KEYS = frozenset({"image_url", "image", "inlineData", "inline_data", "input_image"})
_FILE_KEYS = frozenset({"fileData", "file_data", "document", "file", "input_audio", "video"})
_MAX_DEPTH = 24
_BUDGET = 4_000
"""Characters of text gathered for a preview before the walk stops: a preview needs a line."""
_MAX_VISITS = 20_000
"""Values a preview's walk reads before it stops: content whose parts are shared (``x = [x,
x]`` nested 24 deep is 2^24 paths) must not cost a walk of every path."""
_COUNT_LIMIT = 50 * FULL_LIMIT
"""Characters of JSON counted past what is shown before the count stops at "more than":
content with shared parts may serialise to far more text than it holds."""


def data_of(message: Any) -> Any:
    """``message`` as plain JSON-like data: dicts and lists as they are, pydantic models dumped,
    other objects by their public attributes."""
    if message is None or isinstance(message, (Mapping, list, tuple, str, int, float, bool)):
        return message
    dump = getattr(message, "model_dump", None)
    if callable(dump):
        try:
            return dump(mode="json", exclude_none=True)
        except Exception:  # a model that cannot dump itself is still shown, by its attributes
            pass
    try:
        fields = vars(message)
    except TypeError:
        return f"<{type(message).__name__}>"
    return {key: value for key, value in fields.items() if not key.startswith("_")}


def text_of(message: Any) -> str:
    """The text a message shows, its pieces joined by a space (may be long; see ``one_line``)."""
    pieces = _Pieces()
    pieces.walk(data_of(message), 0)
    return " ".join(piece for piece in pieces.found if piece)


class _Pieces:
    """The text pieces found so far, and how many characters they hold."""

    def __init__(self) -> None:
        self.found: list[str] = []
        self.size = 0
        self.visits = 0

    def add(self, piece: str) -> None:
        self.found.append(piece)
        self.size += len(piece)

    def walk(self, value: Any, depth: int) -> None:
        self.visits += 1
        if depth > _MAX_DEPTH or self.size > _BUDGET or self.visits > _MAX_VISITS:
            return
        if isinstance(value, str):
            self.add(value)
        elif isinstance(value, Mapping):
            kind = value.get("type")
            kind = kind if isinstance(kind, str) else ""
            if "image" in kind or _IMAGE_KEYS.intersection(value):
                self.add("[image]")
            elif kind in ("file", "document", "input_file") or _FILE_KEYS.intersection(value):
                self.add("[file]")
            else:
                for key, item in value.items():
                    if key in _TEXT_KEYS:
                        self.walk(item, depth + 1)
        elif isinstance(value, (list, tuple)):
            for item in value:
                if self.size > _BUDGET:
                    break
                self.walk(data_of(item), depth + 1)
        elif value is not None and not isinstance(value, bool):
            self.add(str(value))


def one_line(text: str, limit: int) -> str:
    """``text`` on one line of at most ``limit`` characters: control and invisible characters
    escaped (``\\n``, ``\\x1b``, ``\\u202e``), the end cut off with ``...`` when too long."""
    head = text[: limit + 1].translate(_ESCAPES)
    if len(text) <= limit and len(head) <= limit:
        return head
    out: list[str] = []
    width = 0
    for char in text:
        piece = _ESCAPES.get(ord(char), char)
        if width + len(piece) > limit - 3:
            break
        out.append(piece)
        width += len(piece)
    return "".join(out) + "..."


def full_text(message: Any) -> str:
    """The whole message as indented JSON (at most :data:`FULL_LIMIT` characters)."""
    data = data_of(message)
    encoder = json.JSONEncoder(indent=2, ensure_ascii=False, default=_fallback)
    shown: list[str] = []
    size = 0
    try:
        # written piece by piece, and counted only so far past the limit: shared parts can
        # make the JSON exponentially longer than the message (x = [x, x] nested 40 deep)
        for piece in encoder.iterencode(data):
            if size < FULL_LIMIT:
                shown.append(piece)
            size += len(piece)
            if size > FULL_LIMIT + _COUNT_LIMIT:
                break
    except (ValueError, RecursionError):  # a cycle, or nesting deeper than json can go
        return f"<{type(message).__name__}: not shown as JSON>"
    text = "".join(shown)
    if size > FULL_LIMIT + _COUNT_LIMIT:
        return f"{text[:FULL_LIMIT]}\n... more than {_COUNT_LIMIT} more characters not shown"
    if size > FULL_LIMIT:
        return f"{text[:FULL_LIMIT]}\n... {size - FULL_LIMIT} more characters not shown"
    return text


def _fallback(value: Any) -> Any:
    data = data_of(value)
    return data if data is not value else f"<{type(value).__name__}>"
