"""The sound stretches of a damaged history whose only fault is call ids outside the profile's
form (Mistral), rewritten between its damaged ranges in the order the whole history's planner
rewrites them.

Bound for Mistral, every ``call_...`` id of an OpenAI-shaped history is refused, and the
rewrite takes ids from the whole request: a new id must not be one the request holds, and a
seed used again (``call_0`` in every round) gets its next counter. So the range scan leaves
ids to this rewrite (``formats._openai_chat._ordered_rules``), the damaged ranges are planned
with the request's :class:`toolmend._skeleton.RequestIds` on their skeleton, and the stretches
between them are rewritten here with the same one, each in its turn: every call gets the id,
every message the change and the problem the whole history's repair gives it, in the same
order (``tests/test_fastpath.py`` holds it to the full path).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._findings import Report
from ._plan_ids import fresh_id
from ._report import Change, Problem
from ._skeleton import RequestIds
from .profiles import Profile

__all__ = ["Stretch", "rewrite_stretch", "stretch_problems"]


@dataclass(frozen=True)
class Stretch:
    """A sound range ``[low, high)`` of a damaged history between its damaged ranges, whose
    only fault is call ids outside the profile's form."""

    low: int
    high: int
    calls: list[tuple[int, int, str]]
    """(message index, slot, id) of each call to give a new id, in history order."""
    results: list[tuple[int, int, int]]
    """(message index, calling message index, slot) of each tool message answering one."""
    problems: list[Problem]
    """What the judge of the whole history reports in the stretch, in message order."""
    request: RequestIds
    """The request's id rewrite, shared with the other stretches and the damaged ranges."""


def stretch_problems(
    profile: Profile, calls: list[tuple[int, int, str]], results: list[tuple[int, int, int]]
) -> list[Problem]:
    """The problems the judge reports for the refused ids of a sound stretch: ``call_id_format``
    on each call (in slot order), and on each result under the profile's result code, in
    message order (each call message's results come right after it)."""
    report = Report(profile)
    code = "result_id_format" if report.wants("result_id_format") else "call_id_format"
    old_of = {(index, slot): old for index, slot, old in calls}
    next_result, count = 0, len(results)
    for index, slot, old in calls:
        while next_result < count and results[next_result][0] < index:
            _result_problem(report, code, results[next_result], old_of)
            next_result += 1
        report.add(
            "call_id_format",
            index,
            "call id outside the provider's pattern",
            id=old,
            ids=(old,),
            slot=slot,
        )
    for entry in results[next_result:]:
        _result_problem(report, code, entry, old_of)
    return report.problems


def _result_problem(
    report: Report,
    code: str,
    entry: tuple[int, int, int],
    old_of: dict[tuple[int, int], str],
) -> None:
    index, call_index, slot = entry
    old = old_of[(call_index, slot)]
    report.add(code, index, "result id outside the provider's pattern", id=old, ids=(old,), slot=0)


def rewrite_stretch(
    messages: Sequence[Any], profile: Profile, stretch: Stretch
) -> tuple[list[Any], list[Change]]:
    """``messages[stretch.low:stretch.high]`` with each refused call and its results given the
    call's new id (a shallow copy of each changed message and call, as the planner's edits
    make them), and the ``rewrote_call_id`` changes, in call order."""
    low = stretch.low
    part = list(messages[low : stretch.high])
    request = stretch.request
    taken, next_try = request.taken, request.next_try
    changes: list[Change] = []
    new_of: dict[tuple[int, int], str] = {}
    copied = -1
    tool_calls: list[Any] = []
    for index, slot, old in stretch.calls:
        new = fresh_id(old, profile, taken, next_try)
        new_of[(index, slot)] = new
        if index != copied:
            copy = dict(messages[index])
            tool_calls = copy["tool_calls"] = list(copy["tool_calls"])
            part[index - low] = copy
            copied = index
        call = dict(tool_calls[slot])
        call["id"] = new
        tool_calls[slot] = call
        changes.append(
            Change("rewrote_call_id", index, "call id the provider would refuse", (old, new))
        )
    for index, call_index, slot in stretch.results:
        copy = dict(messages[index])
        copy["tool_call_id"] = new_of[(call_index, slot)]
        part[index - low] = copy
    return part, changes
