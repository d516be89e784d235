"""May these messages be appended to this history? The write rule of a history store.

A store written while tools run (a chat memory, a checkpoint) holds calls whose results come
later, and often with other messages in between: with several writers on one session, another
writer's messages land between a call and its results. Reads repair the order (the results
go next to their calls); what a write must not let in is a result that can never be paired.
So a message is refused only for a result it carries:

``"no_open_call"``
    no call with the result's id is in the history (or the result has no id);
``"duplicate_result"``
    the call has a result already (in the history, or earlier in the same message);
``"name_mismatch"``
    the result names another function than its call.

Every other message may be appended: user text, and calling messages with or without their
results (the calls wait while the tools run, and the answer after the results is never
refused). A message refused for one of its results is refused whole (in the block layouts a
message carries all the results of a turn).

The rule needs only each call (id -> name) and the ids already answered, wherever they are in
the history: an :class:`AppendIndex`, built once from a history by :func:`index_of` and carried
forward by :func:`judge_appends`, so a store's writer never reads the history back. Messages
are read through their format's reader (the skeleton), so the rule is the same for every
format whose results carry their call's id. A result without an id is refused
(``"no_open_call"``): in Gemini, where a response may answer its call by position alone, one
message at a time cannot show which call an id-less response answers. A message the reader
cannot read (an item that is not a message of the format) is not judged: it may be appended,
and it adds nothing to the index.

The *live frontier* of a store is the last calling message whose calls are still waiting,
followed only by results for them: :func:`waiting_calls` and :func:`frontier_start` find it
(reads leave it waiting, since the next input may carry those results). :func:`check_chain`
judges a calling message and its results written together, all or nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ._report import InvalidMessageError, Problem
from ._skeleton import ASSISTANT, TOOL, Call, Result, Skeleton
from .formats import get

__all__ = [
    "REASONS",
    "AppendIndex",
    "check_chain",
    "frontier_start",
    "index_of",
    "judge_appends",
    "waiting_calls",
]

REASONS: dict[str, str] = {
    "no_open_call": "tool result whose call is not in the history",
    "duplicate_result": "second result for one call",
    "name_mismatch": "tool result naming another function than its call",
}
"""Why a message may not be appended: reason code -> what it means (no message content)."""


@dataclass
class AppendIndex:
    """What a history holds, as far as appending needs it: every call (id -> name; a call
    reusing an id replaces the earlier one) and the ids already answered. A result may be
    appended when its call is here and not answered, wherever in the history that call is."""

    format: str
    """The format of the history's messages (a name :mod:`toolmend.formats` knows)."""
    calls: dict[str, str | None] = field(default_factory=dict)
    answered: set[str] = field(default_factory=set)

    def copy(self) -> AppendIndex:
        return AppendIndex(self.format, dict(self.calls), set(self.answered))

    def note(self, message: _Read) -> None:
        """Take a message appended after the others into account."""
        for result in message.results:
            if result.id in self.calls:
                self.answered.add(result.id)
        for call in message.calls:
            if call.id:
                self.calls[call.id] = call.name
                self.answered.discard(call.id)


class _Read(NamedTuple):
    """One message as the rules see it; ``kind`` is None for an item the reader refused."""

    kind: str | None
    role: str | None
    calls: tuple[Call, ...]
    results: tuple[Result, ...]


_UNREAD = _Read(None, None, (), ())


def _reader(format: str) -> Callable[[Sequence[Any]], Skeleton]:
    """The format's reader: the one thing this module asks of :mod:`toolmend.formats`."""
    read: Callable[[Sequence[Any]], Skeleton] = get(format).read
    return read


def _each(skeleton: Skeleton) -> list[_Read]:
    """Each message of ``skeleton``, in order."""
    calls, results = skeleton.calls, skeleton.results
    return [
        _Read(kind, skeleton.roles[index], calls.get(index, ()), results.get(index, ()))
        for index, kind in enumerate(skeleton.kinds)
    ]


def _read_one(read: Callable[[Sequence[Any]], Skeleton], message: Any) -> _Read:
    """One message read on its own (:data:`_UNREAD` when the reader refuses it)."""
    try:
        (found,) = _each(read([message]))
    except InvalidMessageError:
        return _UNREAD
    return found


def _read_all(messages: Sequence[Any], format: str) -> list[_Read]:
    """Every message read: in one pass, or one at a time when some item cannot be read."""
    read = _reader(format)
    try:
        return _each(read(messages))
    except InvalidMessageError:
        return [_read_one(read, message) for message in messages]


def index_of(messages: Sequence[Any], format: str) -> AppendIndex:
    """The :class:`AppendIndex` of a stored history of ``format`` (one read of it).

    >>> history = [{"role": "user", "content": "Weather?"},
    ...            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1",
    ...             "type": "function", "function": {"name": "weather", "arguments": "{}"}}]}]
    >>> index_of(history, "openai").calls
    {'c1': 'weather'}
    """
    index = AppendIndex(format)
    read = _reader(format)
    try:
        skeleton = read(messages)
    except InvalidMessageError:
        for message in messages:
            index.note(_read_one(read, message))
        return index
    calls, results, answered = skeleton.calls, skeleton.results, index.answered
    known = index.calls
    for position in sorted(calls.keys() | results.keys()):
        for result in results.get(position, ()):
            if result.id in known:
                answered.add(result.id)
        for call in calls.get(position, ()):
            if call.id:
                known[call.id] = call.name
                answered.discard(call.id)
    return index


def _reason(message: _Read, index: AppendIndex) -> str | None:
    seen: set[str] = set()
    for result in message.results:
        if result.id is None or result.id not in index.calls:
            return "no_open_call"
        if result.id in index.answered or result.id in seen:
            return "duplicate_result"
        expected = index.calls[result.id]
        if result.name and expected and result.name != expected:
            return "name_mismatch"
        seen.add(result.id)
    return None


def judge_appends(batch: Sequence[Any], index: AppendIndex) -> tuple[list[str | None], AppendIndex]:
    """Why each message of ``batch`` may not be appended to the history ``index`` describes
    (None: it may), each judged after the accepted ones before it; and the index after the
    accepted ones. ``index`` itself is left as it was (the one returned is ``index`` when no
    accepted message changed it).

    >>> history = [{"role": "user", "content": "Weather?"}]
    >>> batch = [{"role": "tool", "tool_call_id": "c1", "content": "21 C"}]
    >>> judge_appends(batch, index_of(history, "openai"))[0]
    ['no_open_call']
    """
    after = index
    verdicts: list[str | None] = []
    for message in _read_all(batch, index.format):
        reason = _reason(message, after)
        verdicts.append(reason)
        if reason is None and (message.calls or message.results):
            if after is index:
                after = index.copy()
            after.note(message)
    return verdicts, after


def _tail(messages: Sequence[Any], format: str) -> tuple[int, list[_Read], _Read]:
    """The trailing run of result messages (read, last first) and what precedes it: its index
    (-1 when nothing does) and the message read. Only the tail is read, one message at a
    time."""
    read = _reader(format)
    position = len(messages) - 1
    run: list[_Read] = []
    while position >= 0:
        found = _read_one(read, messages[position])
        if found.kind != TOOL:
            return position, run, found
        run.append(found)
        position -= 1
    return position, run, _UNREAD


def waiting_calls(messages: Sequence[Any], format: str) -> dict[str, str | None]:
    """The live frontier's waiting calls (id -> name): the calls of the last calling message
    that no result after it answers, when only result messages follow it; empty when there
    is none.

    >>> call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    >>> waiting_calls([{"role": "assistant", "content": None, "tool_calls": [call]}], "openai")
    {'c1': 'f'}
    """
    _, run, head = _tail(messages, format)
    if head.kind != ASSISTANT:
        return {}
    answered = {result.id for message in run for result in message.results}
    return {call.id: call.name for call in head.calls if call.id and call.id not in answered}


def frontier_start(messages: Sequence[Any], format: str) -> int:
    """Where a clean live frontier starts: the last calling message, with calls still waiting,
    each with its own id, followed only by single results for some of its calls.
    ``len(messages)`` when there is none (no frontier, or a messy one)."""
    position, run, head = _tail(messages, format)
    if head.kind != ASSISTANT:
        return len(messages)
    seen = [result.id for message in run for result in message.results]
    ids = [call.id for call in head.calls]
    if (
        not ids
        or None in ids
        or len(set(ids)) != len(ids)
        or len(set(seen)) != len(seen)
        or not set(seen) < set(ids)
    ):
        return len(messages)
    return position


def check_chain(calling: Any, results: Sequence[Any], format: str) -> list[Problem]:
    """What stops ``[calling, *results]`` from being one complete chain: a calling message
    whose calls each have an id of their own, and result messages that answer exactly those
    calls, each once, naming the call's function where they name one. Empty when it is one.

    Problem indexes are chain positions (0: the calling message); codes start with
    ``chain_``; texts name roles, ids and function names, never content.

    >>> call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    >>> calling = {"role": "assistant", "content": None, "tool_calls": [call]}
    >>> check_chain(calling, [{"role": "tool", "tool_call_id": "c1", "content": "ok"}], "openai")
    []
    >>> [p.code for p in check_chain(calling, [], "openai")]
    ['chain_without_results']
    """
    problems: list[Problem] = []

    def problem(code: str, position: int, text: str, *ids: str | None) -> None:
        found = tuple(i for i in ids if i)
        problems.append(Problem(code, position, text, "", ids=found))

    read = _reader(format)
    head = _read_one(read, calling)
    calls: tuple[Call, ...] = ()
    if head.kind != ASSISTANT:
        problem("chain_not_ai_message", 0, f"expected an assistant message, got {_shown(head)}")
    else:
        calls = head.calls
        if not calls:
            problem("chain_without_calls", 0, "the assistant message makes no tool calls")
    names: dict[str, str | None] = {}
    for call in calls:
        if not call.id:
            problem("chain_call_without_id", 0, f"tool call {call.slot} has no id")
        elif call.id in names:
            problem("chain_duplicate_call_id", 0, "two calls share one id", call.id)
        else:
            names[call.id] = call.name
    results = list(results or ())
    if not results:
        problem("chain_without_results", 1, "no tool messages")
    answered: set[str | None] = set()
    for position, message in enumerate(results, start=1):
        found = _read_one(read, message)
        if found.kind != TOOL or not found.results:
            problem("chain_not_tool_message", position, f"got {_shown(found)}")
            continue
        for result in found.results:
            if result.id in answered:
                problem("chain_duplicate_result", position, "second result for one call", result.id)
            elif result.id not in names:
                problem(
                    "chain_unknown_call_id", position, "answers no call of the message", result.id
                )
            elif result.name and names[result.id] and result.name != names[result.id]:
                problem(
                    "chain_name_mismatch",
                    position,
                    f"names {result.name!r}, its call is {names[result.id]!r}",
                    result.id,
                )
            answered.add(result.id)
    if results and names:
        for call_id in names:
            if call_id not in answered:
                problem("chain_missing_result", 0, "call without a result", call_id)
    return problems


def _shown(message: _Read) -> str:
    """A message's role for a problem text (never its content)."""
    return (
        "an item that is not a message of the format" if message.kind is None else str(message.role)
    )
