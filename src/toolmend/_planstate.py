"""What every repair planner shares: the planner state, references to calls and results, and
the fixed texts the planners invent.

The planners (:mod:`toolmend._plan_messages` for OpenAI chat, :mod:`toolmend._block_repair` for
the block layouts, :mod:`toolmend._repair_items` for Responses items) and the pairing engine
(:mod:`toolmend._pairing`) all work on one :class:`PlanState`. This module imports no planner,
so none of them imports another to reach it.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field

from ._edits import EMPTY_RESULT_TEXT, AsText, Keep, Plan
from ._policy import Policy
from ._report import Change
from ._skeleton import SYSTEM, TOOL, USER, Call, Result, Skeleton
from .profiles import Profile

__all__ = [
    "ASSISTANT_BRIDGE_TEXT",
    "EMPTY",
    "EMPTY_RESULT_TEXT",
    "REAL",
    "STUB",
    "USER_BRIDGE_TEXT",
    "CallRef",
    "PlanState",
    "ResultRef",
    "call_at",
    "newest_results",
    "result_at",
]

ASSISTANT_BRIDGE_TEXT = "Tool results received."
"""The assistant message inserted where a provider forbids a user message right after tool
results (Mistral) or a chat template needs an assistant turn there. Fixed wording, so repeated
repair is stable; it claims nothing beyond what the history shows."""

ORPHAN_DROPPED_TEXT = "result of a call not in the history"
REPEAT_DROPPED_TEXT = "second result for one call"
BRIDGED_TEXT = "assistant message inserted after tool results"
ANSWERED_TEXT = "call answered with the placeholder"
"""The planner's words for its commonest changes (``dropped_orphan_result``,
``dropped_duplicate_result``, ``inserted_message`` for a bridge, ``answered_missing_call``),
for the one-walk repairs that write the same changes (``_inline``, ``_walks``)."""

USER_BRIDGE_TEXT = "Continue."
"""The user message inserted where a chat template needs a user turn before an assistant one."""


ResultRef = tuple[int, int]
"""(message index, result slot): one result in the history."""
CallRef = tuple[int, int]
"""(message index, call slot): one call in the history."""

EMPTY = 0
"""A result with nothing in it: null, empty or blank text."""
STUB = 1
"""A result that only says the tool did not finish: toolmend's placeholder, or a short text
such as "Tool execution aborted" or "[Tool result missing due to internal error]"."""
REAL = 2
"""Anything else: what the tool really returned (an error message from the tool included)."""

_STUB = re.compile(
    r"abort|interrupt|cancel|not (?:been )?(?:executed|run|completed)|no (?:recorded )?result"
    r"|did not complete|result (?:unavailable|missing)|missing (?:tool )?result|skipped|pending"
    r"|tool result missing",
    re.IGNORECASE,
)
"""Wordings agent frameworks write in place of a result they never got (stubs a retry or a
late result replaces). Only a short text counts: a real result that merely mentions one of
these words is longer."""

_STUB_LENGTH = 160


@dataclass
class PlanState:
    """What the steps share: the inputs, the pairing found, and the plan being built."""

    skeleton: Skeleton
    profile: Profile
    policy: Policy
    result_text: Callable[[int, int], str | None]
    answer: dict[CallRef, ResultRef] = field(default_factory=dict)
    """Call -> the one result that answers it."""
    answered_by: dict[ResultRef, CallRef] = field(default_factory=dict)
    """Result -> the call it answers (Responses: a second output after its call too)."""
    duplicates: set[ResultRef] = field(default_factory=set)
    """Results that repeat an answered call's result (a copy, a stub, an empty one)."""
    duplicate_of: dict[ResultRef, CallRef] = field(default_factory=dict)
    """Each duplicate -> the call whose result it repeats."""
    orphans: list[ResultRef] = field(default_factory=list)
    """Results no call of their turn can own."""
    filled_ids: dict[ResultRef, CallRef] = field(default_factory=dict)
    """Results without an id, paired with the only call of their turn left open."""
    adopted_ids: dict[CallRef, str] = field(default_factory=dict)
    """Calls without an id -> the id of the one result that answers them."""
    final_ids: dict[CallRef, str] = field(default_factory=dict)
    plan: Plan = field(default_factory=lambda: Plan([]))
    changes: list[Change] = field(default_factory=list)

    def change(self, code: str, index: int, detail: str, *ids: str | None) -> None:
        """Report a change at message ``index`` of this skeleton (in the caller's numbering)."""
        index += self.skeleton.base
        self.changes.append(Change(code, index, detail, tuple(i for i in ids if i)))

    def orphan_message(self, index: int, result_id: str | None, *, newest: bool = False) -> None:
        """A result message no call owns: dropped, or kept as user text, per policy. The
        ``newest`` input (:func:`newest_results`) is never dropped (issue 32, case 2)."""
        if newest:
            self.plan.items.append(AsText(Keep(index), USER))
            self.change(
                "orphan_result_to_text",
                index,
                "newest input: a result whose call is missing, kept as text",
                result_id,
            )
        elif self.policy.orphan_result == "text":
            self.plan.items.append(AsText(Keep(index), USER))
            self.change(
                "orphan_result_to_text", index, "result of a vanished call kept as text", result_id
            )
        else:
            self.change(
                "dropped_orphan_result", index, "result of a call not in the history", result_id
            )

    def strength(self, ref: ResultRef) -> int:
        """:data:`EMPTY`, :data:`STUB` or :data:`REAL`: how much a result says."""
        text = self.result_text(*ref)
        if text is None or not text.strip():
            return EMPTY
        if text == self.policy.placeholder or (
            len(text) < _STUB_LENGTH and _STUB.search(text) is not None
        ):
            return STUB
        return REAL


def newest_results(skeleton: Skeleton) -> int:
    """Where the newest input begins: the trailing run of result messages (system messages
    among and after them aside), the input the model is asked to answer, when it does not
    follow a calling message (then they are that turn's results, and an orphan among them is
    a stray, not a new input) and holds nothing but results (a user message of the block
    layouts with text beside a stale result has its input in the text: Claude Code's compacted
    leftovers, the demo's case); ``len(skeleton)`` when there is none, or when the skeleton is a
    range before the history's end (a range starts where no result is waiting, so the last
    range holds the whole trailing run and the message before it). An app that sends the
    user's follow-up as a tool result for a call that is not in the history (issue 32, case 2)
    must not have it dropped: an orphan there is kept as user text under every policy."""
    kinds = skeleton.kinds
    if not skeleton.ends:
        return len(kinds)
    start = len(kinds)
    while start > 0 and kinds[start - 1] in (TOOL, SYSTEM):
        start -= 1
    if start > 0 and start - 1 in skeleton.calls:
        return len(kinds)  # the results of the last call turn: an extra one is no new input
    if any(skeleton.extras.get(index) for index in range(start, len(kinds))):
        return len(kinds)  # the user wrote beside the results: that text is the input
    while start < len(kinds) and kinds[start] == SYSTEM:
        start += 1
    return start


def result_at(skeleton: Skeleton, ref: ResultRef) -> Result:
    """The result at ``(message, slot)``; in the block layout a slot is a block position."""
    carried = skeleton.results[ref[0]]
    if ref[1] < len(carried) and carried[ref[1]].slot == ref[1]:
        return carried[ref[1]]
    position = bisect_left(carried, ref[1], key=_result_slot)
    if position < len(carried) and carried[position].slot == ref[1]:
        return carried[position]
    for result in carried:
        if result.slot == ref[1]:
            return result
    raise KeyError(ref)


def call_at(skeleton: Skeleton, call_ref: CallRef) -> Call:
    """The call at ``(message, slot)``: found by position, or by bisection on the slots (in
    order), so n lookups in a message of n calls are not quadratic."""
    found = skeleton.calls[call_ref[0]]
    slot = call_ref[1]
    if slot < len(found) and found[slot].slot == slot:
        return found[slot]
    position = bisect_left(found, slot, key=_slot_of)
    if position < len(found) and found[position].slot == slot:
        return found[position]
    for call in found:  # slots out of order: not written by any reader, but never wrong
        if call.slot == slot:
            return call
    raise KeyError(call_ref)


def _slot_of(call: Call) -> int:
    return call.slot


def _result_slot(result: Result) -> int:
    return result.slot
