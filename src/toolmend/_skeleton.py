"""The skeleton: a small read-only view of a native history, the same for every wire format.

A format reads the caller's list once and records, per message, only what the tool-call
rules look at: its kind, the calls it makes, the results it carries, a few flags, and any shape
defects it saw on the way. Nothing is copied; the native objects stay where they are, and the
skeleton refers to them by index.

The skeleton is deliberately sparse, because it is built on every request: ``kinds`` and
``roles`` have one entry per message, while ``calls``, ``results`` and ``marks`` hold entries
only for the messages that have any. A valid history of plain chat messages costs two list
appends per message.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = [
    "ASSISTANT",
    "BLOCKS",
    "MESSAGES",
    "OTHER",
    "SYSTEM",
    "TOOL",
    "USER",
    "Call",
    "Defect",
    "Result",
    "Skeleton",
    "block_kind",
]

USER = "user"
"""A message from the user (text, images), with no tool results."""
ASSISTANT = "assistant"
"""A message from the model; it may carry calls."""
TOOL = "tool"
"""A message whose job is to carry tool results (OpenAI's ``role: tool``; an Anthropic user
message whose content is tool results)."""
SYSTEM = "system"
"""System or developer instructions."""
OTHER = "other"
"""A role toolmend does not know; the profile decides whether the provider accepts it."""

MESSAGES = "messages"
"""Skeleton layout: every tool result is a message of its own (OpenAI chat)."""
BLOCKS = "blocks"
"""Skeleton layout: calls and results are blocks inside messages (Anthropic, Gemini, Bedrock)."""


class Call(NamedTuple):
    """A tool call an assistant message makes. ``slot`` is its position in that message."""

    id: str | None
    name: str | None
    slot: int


class Result(NamedTuple):
    """A tool result a message carries. ``name`` is the function name it states, if any."""

    id: str | None
    name: str | None
    slot: int


class Defect(NamedTuple):
    """A shape problem the reader saw in one message (``slot`` -1 when it is the whole message).

    Defect codes are problem codes (see :mod:`toolmend._rules`); the profile decides whether the
    provider rejects them.
    """

    at: int
    """The index of the message."""
    code: str
    slot: int = -1
    detail: str = ""
    """The field concerned, for error texts that name it (``"type"``, ``"reasoning_content"``)."""
    id: str = ""
    """The id concerned (an item id), for error texts that name it."""


@dataclass(slots=True, eq=False)
class Skeleton:
    """What the rules and the repair planner know about a history.

    ``format`` names the format that read it and can apply edits back.
    """

    format: str
    kinds: list[str] = field(default_factory=list)
    """One of the kind constants above, per message."""
    roles: list[str] = field(default_factory=list)
    """The native role string, per message (``"developer"``, ``"function"``, ...)."""
    calls: dict[int, tuple[Call, ...]] = field(default_factory=dict)
    """Message index -> the calls it makes; only messages that make calls."""
    results: dict[int, tuple[Result, ...]] = field(default_factory=dict)
    """Message index -> the results it carries; only messages that carry results."""
    marks: dict[str, set[int]] = field(default_factory=dict)
    """Flag name -> indexes of the messages that have it. Flags: ``"reasoning"`` (carries a
    reasoning field),
    ``"reasoning_field"`` (has the field at all, even null), ``"no_text"`` (a calling message
    with no content besides its calls), ``"blank_text"`` (an assistant message whose content
    holds only blank text, which a gateway drops), ``"prefix"`` (a Mistral prefix message),
    ``"thinking"`` (holds a thinking or redacted-thinking block), ``"thinking_first"`` (its first
    block is one), ``"unsigned"`` (a Gemini content whose first function call has no thought
    signature), ``"interleaved"`` (a block other than a call follows a call in the message).
    Responses items: ``"reasoning_item"``, ``"output_item"`` (an item whose type ends in
    ``_output``), ``"id_required"`` (a type whose ``id`` the API requires), ``"reference"``
    (an ``item_reference``)."""
    defects: list[Defect] = field(default_factory=list)
    """Shape problems the reader saw, in message order."""
    layout: str = MESSAGES
    """:data:`MESSAGES` (a result is a message of its own, OpenAI chat) or :data:`BLOCKS` (calls
    and results are blocks inside messages: Anthropic, Gemini, Bedrock; a ``slot`` is then the
    block's position in the message's content). The rules and the planner pick their pairing
    model by it."""
    extras: dict[int, tuple[int, ...]] = field(default_factory=dict)
    """Block layout only: for each message that makes calls, carries results or has a block
    defect, the slots of its other blocks (text, media, thinking), in order. A result lies in
    the message's leading run when no other block comes before it, and a message whose calls,
    results and extras are all moved out is empty."""

    base: int = 0
    """Where this skeleton starts in the caller's history: non-zero when a damaged range is read
    on its own (see ``Format.dirty_spans``). Problems and changes add it to their
    indexes, so they always point into the caller's list."""
    whole: bool = True
    """Whether the skeleton covers the whole history. Decisions about the history's end (the
    live frontier, never returning an empty request) are made only on a whole skeleton."""
    ends: bool = True
    """Whether the skeleton reaches the history's end (a whole one, or the last damaged range):
    the newest input is at its end (see ``toolmend._planstate.newest_results``)."""

    def __len__(self) -> int:
        return len(self.kinds)

    def marked(self, flag: str) -> Set[int]:
        """The indexes carrying ``flag`` (an empty set when none do)."""
        return self.marks.get(flag, _NO_INDEXES)

    def mark(self, flag: str, index: int) -> None:
        """Record that message ``index`` carries ``flag``."""
        found = self.marks.get(flag)
        if found is None:
            self.marks[flag] = {index}
        else:
            found.add(index)


_NO_INDEXES: frozenset[int] = frozenset()


_MODEL_ROLES = frozenset({"assistant", "model"})


def block_kind(role: object, has_results: bool = False) -> str:
    """The kind of a block-layout message (Anthropic, Gemini, Bedrock): the model's turn is the
    assistant, a user turn that carries tool results is a result message, and the rest by role."""
    if role in _MODEL_ROLES:
        return ASSISTANT
    if has_results:
        return TOOL
    if role == "user":
        return USER
    return SYSTEM if role == "system" else OTHER
