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

Arguments are read through the format module's optional ``call_arguments(message, slot)``
when it has one; otherwise from the call found by its id in the message's dicts (or its
``model_dump()``), which covers the OpenAI, Anthropic, Bedrock, Gemini and LangChain shapes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any

from .api import _items, format_of, read_history
from .history import ASSISTANT, USER, Call, Skeleton
from .report import Problem, ToolLoopError

__all__ = ["LOOP_CODES", "detect_loops"]

LOOP_CODES = ("repeated_call", "repeated_tool", "long_tool_run")
"""The problem codes the loop guard reports."""

_RULES = {
    "repeated_call": "LOOP-REPEATED-CALL",
    "repeated_tool": "LOOP-REPEATED-TOOL",
    "long_tool_run": "LOOP-LONG-RUN",
}


def detect_loops(
    messages: Sequence[Any],
    *,
    format: str | None = None,
    repeat: int | None = 3,
    repeat_tool: int | None = 5,
    max_rounds: int | None = 25,
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
    if live_only:
        module = format_of(messages, format)
        items = _items(module, messages)
        start = _live_start(module, items)
        if start:
            tail = detect_loops(
                items[start:], format=module.NAME, repeat=repeat, repeat_tool=repeat_tool,
                max_rounds=max_rounds,
            )  # fmt: skip
            shifted = [replace(problem, index=problem.index + start) for problem in tail]
            if raise_:
                _raise_live(shifted)
            return shifted
    module, skeleton = read_history(messages, format)
    guard = _Guard(repeat, repeat_tool, max_rounds)
    live_from = 0
    for index, kind in enumerate(skeleton.kinds):
        if kind == USER:
            guard.close()
            live_from = index + 1
            continue
        found = skeleton.calls.get(index) if kind == ASSISTANT else None
        if found:
            guard.round(
                index,
                [(call, _arguments(module, skeleton, messages, index, call)) for call in found],
            )
    guard.close()
    problems = sorted(guard.problems, key=lambda problem: problem.index)
    if raise_:
        _raise_live([problem for problem in problems if problem.index >= live_from])
    return problems


def _raise_live(live: list[Problem]) -> None:
    if live:
        listed = "; ".join(str(problem) for problem in live)
        raise ToolLoopError(f"tool loop: {listed}", problems=live)


def _live_start(module: ModuleType, items: Sequence[Any]) -> int:
    """The index after the last user message, read one message at a time from the end, so
    the runs before it cost nothing; 0 when there is none (or a message cannot be read alone,
    and the full read will report it)."""
    kind_of = getattr(module, "kind_of", None)
    for index in range(len(items) - 1, -1, -1):
        try:
            if kind_of is not None:
                kind = kind_of(items[index])
            else:
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
    """One tool called in consecutive rounds: how many, where, with how many argument sets."""

    rounds: int = 0
    last: int = -1
    arguments: set[str] = field(default_factory=set)
    ids: list[str] = field(default_factory=list)


@dataclass
class _Guard:
    """The state of the current run, and the problems found so far."""

    repeat: int | None
    repeat_tool: int | None
    max_rounds: int | None
    problems: list[Problem] = field(default_factory=list)
    same: dict[tuple[str, str], list[tuple[int, str]]] = field(default_factory=dict)
    """(tool, arguments as sent) -> (message index, call id) of each call in the run. Arguments
    are put in canonical form only for the few tools called often enough to matter: parsing
    every call's JSON on every request is what a hook cannot afford."""
    streaks: dict[str, _Streak] = field(default_factory=dict)
    rounds: int = 0
    crossed: int = -1
    """The round that went past ``max_rounds``, if one did."""
    per_tool: dict[str, int] = field(default_factory=dict)

    def round(self, index: int, calls: list[tuple[Call, str]]) -> None:
        self.rounds += 1
        if self.max_rounds is not None and self.rounds == self.max_rounds + 1:
            self.crossed = index
        names: set[str] = set()
        for call, arguments in calls:
            name = call.name or "?"
            names.add(name)
            self.per_tool[name] = self.per_tool.get(name, 0) + 1
            self.same.setdefault((name, arguments), []).append((index, call.id or ""))
        for name in list(self.streaks):
            if name not in names:
                self._end_streak(name)
        for call, arguments in calls:
            name = call.name or "?"
            streak = self.streaks.setdefault(name, _Streak())
            if streak.last != index:
                streak.rounds += 1
                streak.last = index
            streak.arguments.add(arguments)
            if call.id:
                streak.ids.append(call.id)

    def _end_streak(self, name: str) -> None:
        streak = self.streaks.pop(name)
        limit = self.repeat_tool
        if (
            limit is not None
            and streak.rounds >= limit
            and len({_canonical(arguments) for arguments in streak.arguments}) > 1
        ):
            self._add(
                "repeated_tool",
                streak.last,
                f"tool {name!r} called in {streak.rounds} rounds in a row with changing arguments",
                streak.ids,
            )

    def close(self) -> None:
        """End the run: report what it showed and start afresh."""
        for name in list(self.streaks):
            self._end_streak(name)
        if self.repeat is not None:
            groups: dict[tuple[str, str], list[tuple[int, str]]] = {}
            for (name, arguments), found in self.same.items():
                if self.per_tool.get(name, 0) >= self.repeat:
                    groups.setdefault((name, _canonical(arguments)), []).extend(found)
            for (name, _), seen in groups.items():
                if len(seen) >= self.repeat:
                    seen.sort()
                    self._add(
                        "repeated_call",
                        seen[-1][0],
                        f"tool {name!r} called {len(seen)} times with the same arguments "
                        "since the last user message",
                        [call_id for _, call_id in seen],
                    )
        if self.crossed >= 0:
            name, calls = max(self.per_tool.items(), key=lambda item: item[1])
            self._add(
                "long_tool_run",
                self.crossed,
                f"{self.rounds} tool rounds without a user message (limit {self.max_rounds}); "
                f"most called: tool {name!r}, {calls} times",
                [],
            )
        self.same, self.per_tool = {}, {}
        self.rounds, self.crossed = 0, -1

    def _add(self, code: str, index: int, message: str, ids: Sequence[str]) -> None:
        unique = tuple(dict.fromkeys(call_id for call_id in ids if call_id))
        self.problems.append(Problem(code, index, message, "", _RULES[code], unique))


# --- arguments --------------------------------------------------------------------------------


def _arguments(
    module: ModuleType, skeleton: Skeleton, messages: Sequence[Any], index: int, call: Call
) -> str:
    """The call's arguments as canonical JSON text (compared, never shown)."""
    reader = getattr(module, "call_arguments", None)
    if callable(reader):
        return _as_sent(reader(messages[index], call.slot))
    siblings = [c for c in skeleton.calls.get(index, ()) if c.name == call.name]
    return _as_sent(_find_arguments(messages[index], call, siblings.index(call)))


def _as_sent(arguments: Any) -> str:
    """The arguments as text: JSON text as it is, anything else serialised (keys sorted)."""
    if isinstance(arguments, str):
        return arguments
    return _canonical(arguments)


def _canonical(arguments: Any) -> str:
    if arguments is None:
        return "{}"
    if isinstance(arguments, str):
        text = arguments
        try:
            arguments = json.loads(text)
        except ValueError:
            return text
    try:
        return json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return repr(arguments)


_ID_KEYS = ("id", "toolUseId", "call_id")
_ARGUMENT_KEYS = ("arguments", "input", "args")


def _find_arguments(message: Any, call: Call, nth_of_name: int) -> Any:
    """Find a call in a message's nested dicts: by its id, or, for calls without ids
    (Gemini), as the ``nth_of_name``-th call of that name."""
    if not isinstance(message, Mapping):
        dump = getattr(message, "model_dump", None)
        message = dump() if callable(dump) else getattr(message, "__dict__", {})
    found: list[Mapping[str, Any]] = []
    _call_like(message, found, 0)
    if call.id is not None:
        for candidate in found:
            if any(candidate.get(key) == call.id for key in _ID_KEYS):
                return _arguments_of(candidate)
    named = [candidate for candidate in found if _name_of(candidate) == call.name]
    if nth_of_name < len(named):
        return _arguments_of(named[nth_of_name])
    return None


def _call_like(value: Any, found: list[Mapping[str, Any]], depth: int) -> None:
    if depth > 6:
        return
    if isinstance(value, Mapping):
        if any(key in value for key in _ARGUMENT_KEYS) or isinstance(
            value.get("function"), Mapping
        ):
            found.append(value)
        for item in value.values():
            if isinstance(item, (Mapping, list, tuple)):
                _call_like(item, found, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _call_like(item, found, depth + 1)


def _arguments_of(candidate: Mapping[str, Any]) -> Any:
    function = candidate.get("function")
    if isinstance(function, Mapping) and "arguments" in function:
        return function["arguments"]
    for key in _ARGUMENT_KEYS:
        if key in candidate:
            return candidate[key]
    return None


def _name_of(candidate: Mapping[str, Any]) -> Any:
    function = candidate.get("function")
    if isinstance(function, Mapping):
        return function.get("name")
    return candidate.get("name")
