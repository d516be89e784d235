"""The repair plan: what the planner decided, in a form every format can apply.

The planner (:mod:`toolmend._repair`) works on the skeleton and never touches native messages.
It hands a :class:`Plan` to the format that read the history, which builds the output
list: the original object for every message kept as it was, a shallow copy for every message
with a :class:`MessageEdit`, and new messages for the invented items (placeholder results,
bridges, merges). The input is never mutated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "EMPTY_RESULT_TEXT",
    "AsText",
    "Blocks",
    "Bridge",
    "CallPart",
    "Item",
    "Keep",
    "Merge",
    "MessageEdit",
    "Placeholder",
    "Plan",
    "remove_last",
    "source_index",
]


EMPTY_RESULT_TEXT = "(empty)"
"""A tool result's text when the tool's output was empty and the provider refuses a blank text
(Bedrock Converse): says only that nothing came back (the wording hermes-agent settled on).
One of the fixed texts of :mod:`toolmend._planstate`, kept here so that formats can write it."""


@dataclass(slots=True)
class MessageEdit:
    """Changes inside one message; fields left empty change nothing."""

    result_ids: dict[int, str] = field(default_factory=dict)
    """Result slot -> the call id it must carry."""
    result_names: dict[int, str] = field(default_factory=dict)
    """Result slot -> the function name it must carry."""
    call_ids: dict[int, str] = field(default_factory=dict)
    """Call slot -> its new id (rewritten consistently with its results)."""
    call_names: dict[int, str] = field(default_factory=dict)
    """Call slot -> its new function name."""
    drop_calls: set[int] = field(default_factory=set)
    """Call slots to remove."""
    normalize_calls: bool = False
    """Put every call in the format's canonical shape (wrapper, type, arguments as JSON text)."""
    set_fields: dict[str, Any] = field(default_factory=dict)
    """Top-level fields to set (``reasoning_content``, ``prefix``, ``content``)."""
    drop_fields: set[str] = field(default_factory=set)
    """Top-level fields to remove."""
    stringify_content: bool = False
    """Join content parts into one string."""
    drop_blocks: set[int] = field(default_factory=set)
    """Block layout: block slots to remove, because they moved into a :class:`Blocks` item or
    are dropped (duplicates, orphans, empty text)."""
    results_as_text: set[int] = field(default_factory=set)
    """Block layout: result slots rewritten in place as a text block (orphans kept as text)."""
    rstrip_text: set[int] = field(default_factory=set)
    """Block layout: text block slots whose trailing whitespace is removed (Anthropic's final
    assistant message)."""
    calls_last: bool = False
    """Block layout: move the call blocks after every other block (Anthropic: the ``tool_use``
    blocks must close the assistant turn); the other blocks keep their order."""
    normalize_results: bool = False
    """Block layout: put every result's payload in the format's canonical shape (Gemini: a
    ``functionResponse.response`` that is not an object is wrapped as ``{"result": ...}``)."""
    sign_calls: set[int] = field(default_factory=set)
    """Gemini: call slots that get the documented placeholder thought signature."""
    strip_ids: bool = False
    """Gemini: remove the ``id`` of every function call and response in the message."""


@dataclass(frozen=True, slots=True)
class Keep:
    """The input message at ``index``, with its :class:`MessageEdit` if the plan has one."""

    index: int


@dataclass(frozen=True, slots=True)
class Placeholder:
    """A result invented for a call that had none."""

    call_index: int
    call_id: str
    name: str | None
    text: str
    named: bool = False
    """The result must state the function name (an OpenAI-shaped history bound for Gemini)."""
    call_slot: int = -1
    """The slot of the call it answers in message ``call_index`` (two calls of one message may
    share an id, or have none, until the ids are rewritten)."""


@dataclass(frozen=True, slots=True)
class Bridge:
    """A short message invented to satisfy a role-order rule (documented, fixed wording)."""

    role: str
    text: str


@dataclass(frozen=True, slots=True)
class AsText:
    """A message (or placeholder) whose calls and results are rendered as plain text."""

    item: Keep | Placeholder
    role: str


@dataclass(frozen=True, slots=True)
class Merge:
    """Several items joined into one text message of ``role``; nothing in them is dropped."""

    role: str
    parts: tuple[Keep | AsText | Bridge, ...]


@dataclass(frozen=True, slots=True)
class Blocks:
    """Block layout: a new message of kind ``role`` made of blocks taken from input messages.

    ``parts`` are ``(message index, slot)`` references (the source message's
    :class:`MessageEdit` applies to the block; the planner removes the block from its source
    with ``drop_blocks``) and invented :class:`Placeholder` results. The typical use gathers
    the results of one assistant turn into the user message right after it.
    """

    role: str
    parts: tuple[tuple[int, int] | Placeholder, ...]


@dataclass(frozen=True, slots=True)
class CallPart:
    """Call ``slot`` of the assistant message at ``index`` (and the calls of ``more``), alone
    in an assistant message of its own, with no text: a message split for a model that takes
    one call per message (the message itself stays a :class:`Keep` with its text, its other
    fields and its first call), or the calls of a message moved apart from its text (Bedrock's
    Llama and Mistral models; the :class:`Keep` then has every call dropped). The message's
    :class:`MessageEdit` applies to the calls (ids, names, shape)."""

    index: int
    slot: int
    role: str = "assistant"
    """Always an assistant message (what the planners ask of every invented item)."""
    more: tuple[int, ...] = ()
    """Further call slots of the message, sent in the same message after ``slot``."""


Item = Keep | Placeholder | Bridge | AsText | Merge | Blocks | CallPart


@dataclass(slots=True)
class Plan:
    """The output, item by item, and the in-message edits keyed by input index."""

    items: list[Item]
    edits: dict[int, MessageEdit] = field(default_factory=dict)

    def edit(self, index: int) -> MessageEdit:
        """The edit for input message ``index``, created on first use."""
        found = self.edits.get(index)
        if found is None:
            found = self.edits[index] = MessageEdit()
        return found


def remove_last(items: list[Item], item: Item) -> None:
    """Remove the last ``item`` of ``items``, searched from the end: a planner removes what it
    has just appended, and a search from the front would make n removals quadratic."""
    for position in range(len(items) - 1, -1, -1):
        if items[position] == item:
            del items[position]
            return
    raise ValueError(f"{item!r} not in the plan")


def source_index(item: Item) -> int:
    """The index of the input message an item stands for: a kept message's own, the call's
    for a placeholder, the first part's for a merge or a gathered block message; -1 for an
    invented item (a bridge)."""
    if isinstance(item, (Keep, CallPart)):
        return item.index
    if isinstance(item, Placeholder):
        return item.call_index
    if isinstance(item, AsText):
        return source_index(item.item)
    if isinstance(item, Merge):
        return source_index(item.parts[0]) if item.parts else -1
    if isinstance(item, Blocks):
        first = item.parts[0] if item.parts else None
        if isinstance(first, Placeholder):
            return first.call_index
        return first[0] if first is not None else -1
    return -1
