"""The loop guard: find a model calling tools over and over without getting anywhere.

Seed 002's converter lost tool results, so the model never saw them and called the same tools
again, round after round. Whatever the cause, the history shows the symptom, and three
detectors look for it within each *run*: the tool rounds since the last user message (a user
message ends a run; a user asking "check again" is not a loop).

``repeated_call``
    The same tool with the same arguments called ``repeat`` times (default 3) in one run,
    straight in a row or in a cycle (``git diff``, ``git status``, ``git log``, again).
    Arguments are compared as canonical JSON, so key order and spacing do not matter.
``repeated_tool``
    The same tool called in ``repeat_tool`` consecutive rounds (default 5) with changing
    arguments (a search rephrased again and again). Parallel calls in one round count once.
``long_tool_run``
    More than ``max_rounds`` tool rounds (default 25) without a user message.

Problems name the tool, the count and the message index, never the arguments. With
``raise_=True``, :class:`toolmend.ToolLoopError` is raised for problems in the live run (the
one the history ends in); earlier runs were ended by a user message and are only reported.

Arguments are read through the format's ``call_arguments(message, slot)``.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ._api import format_of, read_history, sequence_of
from ._report import InvalidMessageError, Problem, ToolLoopError
from ._skeleton import ASSISTANT, USER, Call, Skeleton
from .formats import Format

__all__ = [
    "LOOP_CODES",
    "MAX_ROUNDS",
    "REPEAT",
    "REPEAT_TOOL",
    "detect_loops",
    "quiet_live_run",
]

LOOP_CODES = ("repeated_call", "repeated_tool", "long_tool_run")
"""The problem codes the loop guard reports."""

REPEAT = 3
"""Identical calls in one run that make a ``repeated_call`` (the default of ``repeat``)."""
REPEAT_TOOL = 5
"""Consecutive rounds calling one tool that make a ``repeated_tool`` (default)."""
MAX_ROUNDS = 25
"""The most tool rounds in a run before ``long_tool_run`` (default)."""

_RULES = {
    "repeated_call": "LOOP-REPEATED-CALL",
    "repeated_tool": "LOOP-REPEATED-TOOL",
    "long_tool_run": "LOOP-LONG-RUN",
}


def detect_loops(
    messages: Sequence[Any],
    *,
    format: str | None = None,
    repeat: int | None = REPEAT,
    repeat_tool: int | None = REPEAT_TOOL,
    max_rounds: int | None = MAX_ROUNDS,
    raise_: bool = False,
    live_only: bool = False,
) -> list[Problem]:
    """Every sign of a tool loop in ``messages``, in message order.

    **Parameters:**

    * **messages** - the history, in any supported format.
    * **format** - *(optional)* the format name; detected when left out.
    * **repeat** - *(optional)* identical calls (same tool, same arguments) in one run that
      make a ``repeated_call`` (default 3; ``None`` turns the check off).
    * **repeat_tool** - *(optional)* consecutive rounds calling one tool with changing
      arguments that make a ``repeated_tool`` (default 5; ``None`` turns it off).
    * **max_rounds** - *(optional)* the most tool rounds in a run before ``long_tool_run``
      (default 25; ``None`` turns it off).
    * **raise_** - *(optional)* raise :class:`toolmend.ToolLoopError` when the live run (the
      one the history ends in) has a problem.
    * **live_only** - *(optional)* look at the live run alone; earlier runs are skipped without
      reading their arguments. Hooks use it: a run the user has ended was reported while it was
      live, and a request's history repeats every earlier run.

    **Returns:** a list of :class:`toolmend.Problem` with codes ``repeated_call``,
    ``repeated_tool`` and ``long_tool_run``; empty when nothing looks like a loop.

    >>> import toolmend
    >>> def round_(n):
    ...     call = {"id": f"call_{n}", "type": "function",
    ...             "function": {"name": "git_status", "arguments": "{}"}}
    ...     return [{"role": "assistant", "content": None, "tool_calls": [call]},
    ...             {"role": "tool", "tool_call_id": f"call_{n}", "content": "clean"}]
    >>> history = [{"role": "user", "content": "Is it committed?"}]
    >>> history += round_(1) + round_(2) + round_(3)
    >>> problems = toolmend.detect_loops(history)
    >>> [(problem.code, problem.index) for problem in problems]
    [('repeated_call', 5)]
    >>> problems[0].message
    "tool 'git_status' called 3 times with the same arguments since the last user message"
    """
    _check_limit("repeat", repeat, 2)
    _check_limit("repeat_tool", repeat_tool, 2)
    _check_limit("max_rounds", max_rounds, 1)
    start = 0
    rounds: list[tuple[int, tuple[Call, ...]]] | None = None
    skeleton: Skeleton | None = None
    if live_only:
        module = format_of(messages, format)
        messages = sequence_of(module, messages)
        live = module.live_rounds(messages)
        if live is not None:  # the run read straight off plain dicts, indexes as they are
            live_from, rounds = live
        else:
            start = _live_start(module, messages)
            if start:
                messages = messages[start:]
            skeleton = _read_shifted(module, messages, start)
    else:
        module, skeleton = read_history(messages, format)
    read: dict[tuple[int, int], str] = {}

    def arguments_of(index: int, call: Call) -> str:
        key = (index, call.slot)
        text = read.get(key)
        if text is None:
            text = read[key] = _canonical(module.call_arguments(messages[index], call.slot))
        return text

    if rounds is not None:
        short = _short_run(rounds, repeat, repeat_tool, max_rounds, arguments_of)
        if short is not None:
            short.sort(key=lambda problem: problem.index)
            if raise_:
                _raise_live(short)
            return short
    guard = _Guard(repeat, repeat_tool, max_rounds, arguments_of)
    if rounds is not None:
        for index, calls in rounds:
            guard.round(index, calls)
    else:
        assert skeleton is not None
        live_from = 0
        for index, kind in enumerate(skeleton.kinds):
            if kind == USER:
                guard.close()
                live_from = index + 1
                continue
            found = skeleton.calls.get(index) if kind == ASSISTANT else None
            if found:
                guard.round(index, found)
    guard.close()
    problems = sorted(guard.problems, key=lambda problem: problem.index)
    if start:
        problems = [replace(problem, index=problem.index + start) for problem in problems]
        live_from += start
    if raise_:
        _raise_live([problem for problem in problems if problem.index >= live_from])
    return problems


def quiet_live_run(rounds: int, calls: Sequence[tuple[str, Any]]) -> bool:
    """True only when :func:`detect_loops` with the default limits and ``live_only=True`` finds
    nothing in a live run of ``rounds`` tool rounds making ``calls`` (name, arguments; every
    name a non-empty string; every round makes at least one call, and ``calls`` lists them
    round by round, forwards or backwards). False says nothing: ask :func:`detect_loops`.

    The hooks' fast path (:func:`toolmend._fastpath.vouch`) gets the run from the format's
    one-pass check of the whole history, and most runs end here without reading an argument:
    a run too short for ``repeated_tool`` and ``long_tool_run`` can only hold a
    ``repeated_call``, which needs a tool called ``REPEAT`` times. A longer run whose rounds
    each make one call (a Responses run: every ``function_call`` item is a round) holds a
    ``repeated_tool`` only where ``REPEAT_TOOL`` calls in a row name one tool, which is read
    off the names too."""
    if rounds > MAX_ROUNDS:
        return False
    if rounds >= REPEAT_TOOL:
        if rounds != len(calls):  # a round with parallel calls: the guard follows the rounds
            return False
        streak, previous = 0, None
        for name, _ in calls:
            streak = streak + 1 if name == previous else 1
            if streak >= REPEAT_TOOL:
                return False
            previous = name
    counts: dict[str, int] = {}
    crowded = False
    for name, _ in calls:
        count = counts[name] = counts.get(name, 0) + 1
        crowded = crowded or count >= REPEAT
    if not crowded:
        return True
    return not _repeats(calls, counts)


def _repeats(calls: Sequence[tuple[str, Any]], counts: Mapping[str, int]) -> bool:
    """Whether a tool called ``REPEAT`` times or more (``counts``) may have been called
    ``REPEAT`` times with the same canonical arguments. Each tool's calls are compared by a
    key equal wherever their canonical JSON is: :func:`_flat_key` when every one of them is a
    flat JSON object (no JSON text to parse or write), else the canonical text itself."""
    by_name: dict[str, list[Any]] = {}
    for name, arguments in calls:
        if counts[name] >= REPEAT:
            by_name.setdefault(name, []).append(arguments)
    for called in by_name.values():
        keys: list[Any] = []
        for arguments in called:
            key = _flat_key(arguments)
            if key is None:
                keys = [_canonical(arguments) for arguments in called]
                break
            keys.append(key)
        same: dict[Any, int] = {}
        for key in keys:
            count = same[key] = same.get(key, 0) + 1
            if count >= REPEAT:
                return True
    return False


_SCALARS = frozenset({str, int, bool, type(None)})


def _flat_key(arguments: Any) -> frozenset[tuple[str, Any]] | None:
    """A dict of string keys and ``str``, ``int``, ``bool`` or ``None`` values (exactly those
    types) as the set of its items; None for anything else. Two such dicts have the same
    canonical JSON only when their items are equal (JSON writes each of those types apart, and
    each value one way), so equal canonical arguments always have equal keys; the converse may
    fail (``1 == True``), which only makes the guard be asked. Floats are left out: ``nan`` is
    not equal to itself."""
    if type(arguments) is not dict:
        return None
    if not (
        set(map(type, arguments)) <= _STR_ONLY and set(map(type, arguments.values())) <= _SCALARS
    ):
        return None
    return frozenset(arguments.items())


_STR_ONLY = frozenset({str})


def _read_shifted(module: Format, items: Sequence[Any], start: int) -> Skeleton:
    """The skeleton of the live run ``items`` (which begins at ``start`` in the history); a
    message it cannot read is reported at its index in the whole history."""
    try:
        skeleton: Skeleton = module.read(items)
    except InvalidMessageError as error:
        raise error.shifted(start) from None
    return skeleton


def _raise_live(live: list[Problem]) -> None:
    if live:
        listed = "; ".join(str(problem) for problem in live)
        raise ToolLoopError(f"tool loop: {listed}", problems=live)


def _live_start(module: Format, items: Sequence[Any]) -> int:
    """The index after the last user message, read one message at a time from the end, so
    the runs before it cost nothing; 0 when there is none (or a message cannot be read alone,
    and the full read will report it)."""
    for index in range(len(items) - 1, -1, -1):
        try:
            kind = module.kind_of(items[index])
            if kind is None:
                kind = module.read(items[index : index + 1]).kinds[0]
        except Exception:
            return 0
        if kind == USER:
            return index + 1
    return 0


def _check_limit(name: str, value: int | None, least: int) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name} must be a whole number >= {least} or None, got {value!r}")


@dataclass
class _Streak:
    """One tool called in consecutive rounds: how many rounds, the last one, and its calls."""

    rounds: int = 0
    last: int = -1
    calls: list[tuple[int, Call]] = field(default_factory=list)


@dataclass
class _Guard:
    """The state of the current run, and the problems found so far.

    Rounds are recorded by tool name alone; a call's arguments are read (and put in canonical
    form) only for a tool called often enough in the run to make a problem, through
    ``arguments_of``: reading and parsing every call's arguments on every request is what a
    hook cannot afford."""

    repeat: int | None
    repeat_tool: int | None
    max_rounds: int | None
    arguments_of: Callable[[int, Call], str]
    """The canonical arguments of the call at a message index (compared, never shown)."""
    problems: list[Problem] = field(default_factory=list)
    calls: dict[str, list[tuple[int, Call]]] = field(default_factory=dict)
    """Tool name -> (message index, call) of each of its calls in the run."""
    streaks: dict[str, _Streak] = field(default_factory=dict)
    rounds: int = 0
    crossed: int = -1
    """The round that went past ``max_rounds``, if one did."""

    def round(self, index: int, calls: Sequence[Call]) -> None:
        self.rounds += 1
        if self.max_rounds is not None and self.rounds == self.max_rounds + 1:
            self.crossed = index
        names: set[str] = set()
        for call in calls:
            name = call.name or "?"
            names.add(name)
            found = self.calls.get(name)
            if found is None:
                self.calls[name] = [(index, call)]
            else:
                found.append((index, call))
        for name in list(self.streaks):
            if name not in names:
                self._end_streak(name)
        for call in calls:
            name = call.name or "?"
            streak = self.streaks.get(name)
            if streak is None:
                streak = self.streaks[name] = _Streak()
            if streak.last != index:
                streak.rounds += 1
                streak.last = index
            streak.calls.append((index, call))

    def _end_streak(self, name: str) -> None:
        streak = self.streaks.pop(name)
        limit = self.repeat_tool
        if (
            limit is not None
            and streak.rounds >= limit
            and len({self.arguments_of(index, call) for index, call in streak.calls}) > 1
        ):
            self._add(
                "repeated_tool",
                streak.last,
                f"tool {name!r} called in {streak.rounds} rounds in a row with changing arguments",
                [call.id or "" for _, call in streak.calls],
            )

    def close(self) -> None:
        """End the run: report what it showed and start afresh."""
        for name in list(self.streaks):
            self._end_streak(name)
        if self.repeat is not None:
            self.problems += _repeated_calls(self.calls, self.repeat, self.arguments_of)
        if self.crossed >= 0:
            name, calls = max(self.calls.items(), key=lambda item: len(item[1]))
            self._add(
                "long_tool_run",
                self.crossed,
                f"{self.rounds} tool rounds without a user message (limit {self.max_rounds}); "
                f"most called: tool {name!r}, {len(calls)} times",
                [],
            )
        self.calls = {}
        self.rounds, self.crossed = 0, -1

    def _add(self, code: str, index: int, message: str, ids: Sequence[str]) -> None:
        self.problems.append(_problem(code, index, message, ids))


def _problem(code: str, index: int, message: str, ids: Sequence[str]) -> Problem:
    unique = tuple(dict.fromkeys(call_id for call_id in ids if call_id))
    return Problem(code, index, message, "", _RULES[code], unique)


def _repeated_calls(
    calls: Mapping[str, Sequence[tuple[int, Call]]],
    repeat: int,
    arguments_of: Callable[[int, Call], str],
) -> list[Problem]:
    """``repeated_call`` for each tool of one run (name -> its calls) called ``repeat`` times
    or more with the same arguments. Only a tool with that many calls has its arguments read."""
    found: list[Problem] = []
    for name, called in calls.items():
        if len(called) < repeat:
            continue  # too few calls to repeat: their arguments are never read
        same: dict[str, list[tuple[int, str]]] = {}
        for index, call in called:
            same.setdefault(arguments_of(index, call), []).append((index, call.id or ""))
        for seen in same.values():
            if len(seen) >= repeat:
                found.append(
                    _problem(
                        "repeated_call",
                        seen[-1][0],
                        f"tool {name!r} called {len(seen)} times with the same arguments "
                        "since the last user message",
                        [call_id for _, call_id in seen],
                    )
                )
    return found


def _short_run(
    rounds: Sequence[tuple[int, Sequence[Call]]],
    repeat: int | None,
    repeat_tool: int | None,
    max_rounds: int | None,
    arguments_of: Callable[[int, Call], str],
) -> list[Problem] | None:
    """The problems of a live run too short for ``repeated_tool`` and ``long_tool_run``, found
    without the guard's per-round bookkeeping (a hook's usual case, on every request); None when
    the run is long enough for those, and the guard must follow it round by round."""
    if (repeat_tool is not None and len(rounds) >= repeat_tool) or (
        max_rounds is not None and len(rounds) > max_rounds
    ):
        return None
    if repeat is None:
        return []
    calls: dict[str, list[tuple[int, Call]]] = {}
    for index, round_calls in rounds:
        for call in round_calls:
            calls.setdefault(call.name or "?", []).append((index, call))
    return _repeated_calls(calls, repeat, arguments_of)


# --- arguments --------------------------------------------------------------------------------


def _canonical(arguments: Any) -> str:
    """The arguments as canonical JSON text (keys sorted, no spaces), so that two calls with
    the same arguments compare equal however they were written."""
    if arguments is None:
        return "{}"
    if isinstance(arguments, str):
        if len(arguments) <= _CACHED_LENGTH:
            return _canonical_cached(arguments)
        return _canonical_text(arguments)
    return _dumps(arguments)


_CACHED_LENGTH = 2048
"""The longest arguments text whose canonical form is cached."""


@functools.lru_cache(maxsize=1024)
def _canonical_cached(text: str) -> str:
    """:func:`_canonical_text`, cached: an agent loop sends the same history, so the same
    argument strings, on every turn, and parsing them is most of the guard's cost. The cache
    holds at most 1,024 short argument strings (4 MB at the very most) in this process; it is
    never logged, and long arguments are parsed afresh rather than kept."""
    return _canonical_text(text)


def _canonical_text(text: str) -> str:
    """JSON arguments text in canonical form (its own text when it is not JSON)."""
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
        return text
    return _dumps(parsed)


def _dumps(arguments: Any) -> str:
    if isinstance(arguments, (dict, list, tuple)):
        try:
            written, held = _written_size(arguments, {})
        except (_CycleError, RecursionError):  # what json.dumps would refuse below
            return object.__repr__(arguments)
        if written > 4 * len(held) + _SHARED_SLACK:
            return _digest(arguments, {})
    try:
        return json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError, RecursionError):  # unsortable keys, a cycle, too deep
        return object.__repr__(arguments)  # equal to no other call's arguments


_SHARED_SLACK = 10_000
"""Containers JSON may write beyond four times those the arguments hold before they are
compared by digest instead of by text (see :func:`_written_size`)."""


class _CycleError(Exception):
    """A container inside itself: JSON cannot write it."""


def _written_size(value: Any, sizes: dict[int, int]) -> tuple[int, dict[int, int]]:
    """How many containers JSON would write for ``value`` (each reference written again), and
    the containers it holds (by identity, each read once: -1 while being read, to find a
    cycle). Shared containers (``x = [x, x]`` nested 40 times) would make ``json.dumps``
    write 2^40 of them: such arguments are compared by :func:`_digest`."""
    known = sizes.get(id(value))
    if known is not None:
        if known < 0:
            raise _CycleError
        return known, sizes
    sizes[id(value)] = -1
    total = 1
    for item in value.values() if isinstance(value, dict) else value:
        if isinstance(item, (dict, list, tuple)):
            total += _written_size(item, sizes)[0]
    sizes[id(value)] = total
    return total, sizes


def _digest(value: Any, digests: dict[int, str]) -> str:
    """A canonical form of arguments whose JSON would be far larger than they are: a hash of
    the structure, each shared container hashed once. Equal arguments give equal digests; a
    digest equals no JSON text (the arguments of a call written as text cannot be that
    large without the history being as large)."""
    known = digests.get(id(value))
    if known is not None:
        return known
    if isinstance(value, dict):
        parts = [
            f"{json.dumps(str(key))}:{_digest(item, digests)}"
            for key, item in sorted(value.items(), key=lambda pair: str(pair[0]))
        ]
        text = "{" + ",".join(parts) + "}"
    elif isinstance(value, (list, tuple)):
        text = "[" + ",".join(_digest(item, digests) for item in value) + "]"
    else:
        text = json.dumps(value, default=str)
    found = "#" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    if isinstance(value, (dict, list, tuple)):
        digests[id(value)] = found
    return found
