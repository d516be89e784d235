"""The rules of block-layout histories (Anthropic, Gemini, Bedrock) and the cross-target checks.

In these formats calls and results are blocks inside messages, so pairing is about turns and
block positions rather than about adjacent tool messages. :mod:`toolmend._rules` picks one of
the pairings below by the profile's ``block_pairing`` when the skeleton's layout is
:data:`~toolmend._skeleton.BLOCKS`, then runs :func:`check_blocks` for the rest:

``turns`` (:func:`pair_turns`, Anthropic)
    Consecutive same-role messages form one turn, as the API merges them. Every ``tool_use`` of
    an assistant turn must be answered by a ``tool_result`` in the leading run of the next
    turn, the ``tool_use`` blocks must close their turn, a result must answer a call of the
    turn just before, and only once. A request ending on an assistant turn with calls leaves
    them unanswered (``missing_result``; issue 32, case 7); one ending on assistant text is a
    prefill, which only the models without prefill refuse (``prefill_unsupported``).
``contents`` (:func:`pair_contents`, Gemini)
    Each Content is a turn. A function-call turn comes right after a user Content; the next
    Content holds exactly as many ``functionResponse`` parts as the turn has calls, nothing
    else, each named after its call (through ids when every part has one, else as a multiset
    of names); a response turn comes right after a call turn. Calls in the last Content are
    left unanswered (``missing_result``, as in Anthropic's).
``converse`` (:func:`pair_converse`, Bedrock)
    The message after an assistant ``toolUse`` message holds a ``toolResult`` for each call, no
    more, and no other blocks; a ``toolUse`` sits in an assistant message (``misplaced_part``),
    alone there for the models that demand it (``call_with_text``). Calls in the last message
    are left unanswered (``missing_result``, as in Anthropic's).

For an OpenAI-shaped history checked against these providers (message layout), the OpenAI
pairing runs and :func:`check_cross_target` adds what a gateway's conversion needs: the tool
message's ``name`` equal to the called function (Gemini) and a first message from the user
(Bedrock).

Problem codes added here (see :mod:`toolmend._rules` for the shared ones):

=========================  ==================================================================
``system_role``            a ``system`` message inside Anthropic ``messages``
``empty_content``          a message with empty content (Anthropic)
``text_empty``             an empty text block / part
``text_whitespace``        a text block with only whitespace (Anthropic)
``trailing_whitespace``    a final assistant message ending in whitespace (Anthropic)
``result_id_format``       a result id outside the provider's pattern
``input_not_object``       ``tool_use.input`` that is not an object (Anthropic)
``thinking_fields``        a thinking block without its ``thinking``/``signature``/``data``
``thinking_required``      thinking on, the answered assistant turn does not start thinking
``parts_empty``            a Gemini Content without parts
``part_no_data``           a Gemini Part without a data field
``result_name_empty``      a ``functionResponse`` without a name
``response_is_list``       a ``functionResponse.response`` given as a list
``mixed_call_and_response``  one Gemini Content with calls and responses
``misplaced_part``         a response in a model Content, or a call in a user Content (Gemini);
                           a ``toolUse`` in a user message (Bedrock)
``call_turn_position``     a function-call turn not right after a user turn
``response_extra_parts``   other parts beside the responses of a function-response turn
``result_name_mismatch``   a response named differently from the call it answers
``thought_signature_missing``  Gemini 3: the first call of a model turn without a signature
``unknown_field``          an ``id`` on a Gemini endpoint that does not know it
``first_not_user``         a conversation that does not start with the user (Bedrock)
``prefill_unsupported``    a request ending on an assistant message, for a model without prefill
``result_with_text``       other blocks beside tool results in one message (Bedrock)
``call_with_text``         other blocks beside tool uses in one message (Bedrock, Llama/Mistral)
``text_blank``             an empty or whitespace-only text block (Bedrock)
``result_text_blank``      an empty or whitespace-only text inside a toolResult (Bedrock)
=========================  ==================================================================
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._report import shown_name
from ._skeleton import ASSISTANT, OTHER, SYSTEM, TOOL, USER, Call, Result, Skeleton
from .formats import get

if TYPE_CHECKING:
    from ._findings import Report
    from .profiles import Profile

__all__ = [
    "check_blocks",
    "check_cross_target",
    "check_prefill",
    "flat_order",
    "pair_contents",
    "pair_converse",
    "pair_turns",
    "prompt_boundary",
]


def flat_order(skeleton: Skeleton, index: int) -> list[tuple[int, str]]:
    """The blocks of a message that has calls, results or extras, as ``(slot, what)`` in order;
    ``what`` is ``"call"``, ``"result"`` or ``"other"``."""
    blocks = [(call.slot, "call") for call in skeleton.calls.get(index, ())]
    blocks += [(result.slot, "result") for result in skeleton.results.get(index, ())]
    blocks += [(slot, "other") for slot in skeleton.extras.get(index, ())]
    blocks.sort()
    return blocks


def _closing_calls(skeleton: Skeleton, turn: range) -> tuple[list[tuple[int, Call]], set[str]]:
    """Every call of an assistant turn in order, and the ids of those in the turn's final run.

    A call is answerable only if nothing but other calls follows it in the turn (the API checks
    the flat block sequence of the merged turn)."""
    calls = skeleton.calls
    every: list[tuple[int, Call]] = []
    run: list[Call] = []
    for index in turn:
        found = calls.get(index)
        if found is None:
            run = []
            continue
        by_slot = {call.slot: call for call in found}
        for slot, what in flat_order(skeleton, index):
            if what == "call":
                call = by_slot[slot]
                every.append((index, call))
                run.append(call)
            else:
                run = []
    return every, {call.id for call in run if call.id is not None}


def _leading(skeleton: Skeleton, turn: range) -> set[tuple[int, int]]:
    """The results in the leading run of a user turn, as ``(message, slot)``."""
    results, extras = skeleton.results, skeleton.extras
    lead: set[tuple[int, int]] = set()
    for index in turn:
        carried = results.get(index)
        if carried is None:
            break
        others = extras.get(index, ())
        first_other = others[0] if others else 1 << 30
        lead.update((index, result.slot) for result in carried if result.slot < first_other)
        if others:
            break
    return lead


def pair_turns(skeleton: Skeleton, report: Report) -> None:
    """Anthropic: pairing on merged turns (see the module docstring)."""
    kinds, results = skeleton.kinds, skeleton.results
    n = len(kinds)
    start = 0
    previous: list[tuple[int, Call]] = []
    closing: set[str] = set()
    while start < n:
        assistant = kinds[start] == ASSISTANT
        end = start + 1
        while end < n and (kinds[end] == ASSISTANT) == assistant:
            end += 1
        turn = range(start, end)
        if assistant:
            previous, closing = _closing_calls(skeleton, turn)
            if end == n and previous and skeleton.whole:
                _trailing_calls(report, previous)
            start = end
            continue
        expected = {call.id for _, call in previous if call.id is not None}
        lead = _leading(skeleton, turn) if previous else set()
        answered: set[str] = set()
        seen: set[str] = set()
        for index in turn:
            for result in results.get(index, ()):
                _judge_turn_result(report, index, result, previous, expected, seen)
                if result.id is not None and (index, result.slot) in lead:
                    answered.add(result.id)
        missing = tuple(
            call.id
            for _, call in previous
            if call.id is not None and (call.id not in answered or call.id not in closing)
        )
        if missing:
            report.add(
                "missing_result",
                start,
                f"{len(missing)} call(s) not answered at the start of the next turn",
                ids=missing,
            )
        previous, closing = [], set()
        start = end


def _trailing_calls(report: Report, calls: Sequence[tuple[int, Call]]) -> None:
    """A request that ends on an assistant turn with calls (issue 32, case 7): the calls are
    never answered, which the API refuses (Anthropic: its rule on ``tool_use`` without results;
    the models without prefill refuse any final assistant message too). Gemini and Bedrock get
    the same rule ("a trailing call is never something to send unanswered"): their texts for
    calls without responses. Reported at the last calling message, once the skeleton is the
    whole history (a range cannot tell its end)."""
    ids = tuple(call.id for _, call in calls if call.id is not None)
    report.add(
        "missing_result",
        calls[-1][0],
        f"{len(calls)} call(s) at the end of the request without a result",
        ids=ids,
    )


def _judge_turn_result(
    report: Report,
    index: int,
    result: Result,
    previous: Sequence[tuple[int, Call]],
    expected: set[str],
    seen: set[str],
) -> None:
    if result.id is None:
        report.add("result_without_id", index, "tool result without an id", slot=result.slot)
    elif not previous:
        report.add(
            "orphan_result",
            index,
            "tool result without a calling turn before it",
            slot=result.slot,
            id=result.id,
            ids=(result.id,),
        )
    elif result.id not in expected:
        report.add(
            "unknown_result_id",
            index,
            "tool result answers no call of the previous turn",
            slot=result.slot,
            id=result.id,
            ids=(result.id,),
        )
    elif result.id in seen:
        report.add(
            "duplicate_result",
            index,
            "call answered twice",
            slot=result.slot,
            id=result.id,
            ids=(result.id,),
        )
    else:
        seen.add(result.id)


def _names_match(found: Sequence[Call], responses: Sequence[Result]) -> bool:
    """Gemini: by id when every part has one (and the calls' ids are unique, so that an id
    names one call), else the names as a multiset."""
    if all(call.id for call in found) and all(result.id for result in responses):
        names = {call.id: call.name for call in found}
        if len(names) == len(found):
            return all(names.get(result.id, "\0") == result.name for result in responses)
    return sorted(call.name or "" for call in found) == sorted(r.name or "" for r in responses)


def _repeated_id(found: Sequence[Call], responses: Sequence[Result]) -> bool:
    """Gemini: every part has an id, the calls' ids are unique and a response's id repeats,
    so one call is answered twice and another not at all."""
    if not all(call.id for call in found) or not all(result.id for result in responses):
        return False
    return len({call.id for call in found}) == len(found) and len(
        {result.id for result in responses}
    ) < len(responses)


def pair_contents(skeleton: Skeleton, report: Report) -> None:
    """Gemini: Content by Content (see the module docstring)."""
    kinds, calls, results, extras = (
        skeleton.kinds,
        skeleton.calls,
        skeleton.results,
        skeleton.extras,
    )
    n = len(kinds)
    for index in sorted(calls.keys() | results.keys()):
        found = calls.get(index)
        carried = results.get(index)
        kind = kinds[index]
        if found and carried:
            report.add("mixed_call_and_response", index, "calls and responses in one content")
        elif (found and kind != ASSISTANT) or (carried and kind == ASSISTANT):
            report.add("misplaced_part", index, "call or response in the wrong role's content")
        if found:
            if index == 0 or kinds[index - 1] not in (USER, TOOL):
                report.add("call_turn_position", index, "function call turn not after a user turn")
            after = index + 1
            if after < n:
                responses = results.get(after, ()) if kinds[after] != ASSISTANT else ()
                _judge_responses(report, after, found, responses)
                if responses and extras.get(after):
                    report.add(
                        "response_extra_parts",
                        after,
                        "other parts beside the function responses",
                        slot=extras[after][0],
                    )
            elif skeleton.whole and kind == ASSISTANT:  # a user content's calls are misplaced
                _trailing_calls(report, [(index, call) for call in found])
        elif carried and (index == 0 or not calls.get(index - 1)):
            report.add(
                "orphan_result",
                index,
                "function response turn not after a function call turn",
                ids=tuple(r.id for r in carried if r.id),
            )
        if carried:
            for result in carried:
                if not result.name:
                    report.add(
                        "result_name_empty",
                        index,
                        "function response without a name",
                        slot=result.slot,
                    )


def _judge_responses(
    report: Report, index: int, found: Sequence[Call], responses: Sequence[Result]
) -> None:
    if len(responses) < len(found):
        answered = {r.id for r in responses if r.id}
        report.add(
            "missing_result",
            index,
            f"{len(found) - len(responses)} call(s) without a response",
            ids=tuple(c.id for c in found if c.id and c.id not in answered),
        )
    elif len(responses) > len(found):
        report.add(
            "unknown_result_id",
            index,
            f"{len(responses) - len(found)} response(s) more than calls",
            ids=tuple(r.id for r in responses if r.id),
        )
    elif _repeated_id(found, responses):
        named = {r.id for r in responses}
        report.add(
            "missing_result",
            index,
            "a response id repeated, so a call has no response",
            ids=tuple(c.id for c in found if c.id and c.id not in named),
        )
    elif not _names_match(found, responses):
        report.add(
            "result_name_mismatch",
            index,
            "function response named differently from its call",
            ids=tuple(r.id for r in responses if r.id),
        )


def pair_converse(skeleton: Skeleton, report: Report) -> None:
    """Bedrock: the message after a ``toolUse`` message (see the module docstring)."""
    kinds, calls, results, extras = (
        skeleton.kinds,
        skeleton.calls,
        skeleton.results,
        skeleton.extras,
    )
    if report.wants("misplaced_part") or report.wants("call_with_text"):
        for index, found in calls.items():
            if kinds[index] != ASSISTANT:
                report.add(
                    "misplaced_part", index, "toolUse in a user message",
                    ids=tuple(call.id for call in found if call.id),
                )  # fmt: skip
            elif extras.get(index):
                report.add("call_with_text", index, "other blocks beside toolUse")
    for index in sorted(results.keys() | {i + 1 for i in calls if i + 1 < len(kinds)}):
        if kinds[index] == ASSISTANT:
            if (
                kinds[index - 1] == ASSISTANT
                and calls.get(index - 1)
                and not report.wants("roles_not_alternating")
            ):
                # the calls' turn is over without a result. Bedrock refuses the two assistant
                # messages first (its alternation error); a profile with the pairing rules
                # alone (trim's) must still see the unanswered calls, which its repair answers
                missing = tuple(c.id for c in calls[index - 1] if c.id is not None)
                if missing:
                    report.add(
                        "missing_result", index, f"{len(missing)} call(s) without a result",
                        ids=missing,
                    )  # fmt: skip
            continue
        previous = calls.get(index - 1, ()) if index and kinds[index - 1] == ASSISTANT else ()
        carried = results.get(index, ())
        if len(carried) > len(previous):
            ids = [r.id for r in carried]
            if not previous:
                code = "orphan_result"
            elif len(set(ids)) < len(ids):
                code = "duplicate_result"
            else:
                code = "unknown_result_id"
            report.add(code, index, "more tool results than calls", ids=tuple(i for i in ids if i))
        if carried and extras.get(index):
            report.add("result_with_text", index, "other blocks beside tool results")
        if previous:
            got = {result.id for result in carried}
            missing = tuple(c.id for c in previous if c.id is not None and c.id not in got)
            if missing:
                report.add(
                    "missing_result", index, f"{len(missing)} call(s) without a result", ids=missing
                )
    last = len(kinds) - 1
    if skeleton.whole and last >= 0 and kinds[last] == ASSISTANT and calls.get(last):
        _trailing_calls(report, [(last, call) for call in calls[last]])


def prompt_boundary(skeleton: Skeleton) -> int:
    """Gemini: the index of the last user Content with ordinary content (text or media, not
    only function responses), or -1. Everything after it is the current turn."""
    kinds, extras = skeleton.kinds, skeleton.extras
    for index in range(len(kinds) - 1, -1, -1):
        kind = kinds[index]
        if kind == USER or (kind == TOOL and extras.get(index)):
            return index
    return -1


def check_blocks(skeleton: Skeleton, profile: Profile, report: Report) -> None:
    """The block-layout rules beyond pairing: roles, alternation, thinking, signatures, ids."""
    kinds, roles = skeleton.kinds, skeleton.roles
    if report.wants("invalid_role") or report.wants("system_role"):
        valid = ("user", get(skeleton.format).assistant_role)
        for index, role in enumerate(roles):
            if role in valid:
                continue
            if kinds[index] == SYSTEM and report.wants("system_role"):
                report.add("system_role", index, "system message inside messages", role=role)
            else:
                report.add("invalid_role", index, f"unknown role {shown_name(role)}", role=role)
    if profile.first_user:
        _check_first_user(skeleton, report)
    if report.wants("roles_not_alternating"):
        for index in range(1, len(kinds)):
            if (kinds[index] == ASSISTANT) == (kinds[index - 1] == ASSISTANT):
                report.add(
                    "roles_not_alternating",
                    index,
                    "two messages of one role in a row",
                    role=roles[index],
                )
    if profile.thinking:
        _check_thinking(skeleton, report)
    if profile.thought_signatures:
        _check_signatures(skeleton, report)
    if profile.reject_function_ids:
        _check_function_ids(skeleton, report)
    if skeleton.defects:
        _check_final_message(skeleton, report)


def _check_final_message(skeleton: Skeleton, report: Report) -> None:
    """Anthropic's rules about the final message hold only where the history really ends: an
    empty final assistant message is allowed (reported when the skeleton is a slice), trailing
    whitespace is not (reported only on the whole history)."""
    for defect in skeleton.defects:
        if defect.code == "final_thinking" and skeleton.whole:
            report.add(
                "thinking_final_assistant_disabled",
                defect.at,
                "thinking block in the final assistant message, thinking off",
                slot=defect.slot,
            )
        if defect.code == "final_whitespace" and skeleton.whole:
            report.add(
                "trailing_whitespace",
                defect.at,
                "final message ends in whitespace",
                slot=defect.slot,
            )
        elif defect.code == "final_empty" and not skeleton.whole:
            report.add("empty_content", defect.at, "message with empty content")


def _check_first_user(skeleton: Skeleton, report: Report) -> None:
    for index, kind in enumerate(skeleton.kinds):
        if kind == SYSTEM:
            continue
        if kind not in (USER, TOOL, OTHER):
            report.add("first_not_user", index, "the conversation starts with the assistant")
        return


def _check_thinking(skeleton: Skeleton, report: Report) -> None:
    """Anthropic, thinking on: the assistant turn answered by the final tool results."""
    kinds = skeleton.kinds
    end = len(kinds)
    start = end
    while start > 0 and kinds[start - 1] != ASSISTANT:
        start -= 1
    if start == end or not any(i in skeleton.results for i in range(start, end)):
        return
    first = start - 1
    while first > 0 and kinds[first - 1] == ASSISTANT:
        first -= 1
    if first < 0 or not any(i in skeleton.calls for i in range(first, start)):
        return
    if first in skeleton.marked("thinking_first"):
        return
    found = skeleton.calls.get(first, ())
    block = "tool_use" if found and found[0].slot == 0 else "text"
    report.add(
        "thinking_required",
        first,
        "the answered assistant turn does not start with thinking",
        property=block,
    )


def _check_signatures(skeleton: Skeleton, report: Report) -> None:
    """Gemini 3: the first call of every model Content in the current turn is signed."""
    boundary = prompt_boundary(skeleton)
    kinds = skeleton.kinds
    for index in sorted(skeleton.marked("unsigned")):
        if index > boundary and kinds[index] == ASSISTANT:
            first = skeleton.calls[index][0]
            report.add(
                "thought_signature_missing",
                index,
                "function call without a thought signature",
                slot=first.slot,
                name=first.name or "",
                position=index + 1,
                ids=(first.id,) if first.id else (),
            )


def _check_function_ids(skeleton: Skeleton, report: Report) -> None:
    for where, field in (
        (skeleton.calls, "function_call"),
        (skeleton.results, "function_response"),
    ):
        for index, entries in where.items():
            for entry in entries:
                if entry.id is not None:
                    report.add(
                        "unknown_field",
                        index,
                        f"{field}.id on an endpoint that does not know it",
                        slot=entry.slot,
                        property=field,
                    )


def check_prefill(skeleton: Skeleton, report: Report) -> None:
    """The Claude models without prefill (``prefill_unsupported``): the request must end with
    a user message. The last message that is not a system message (sent apart) is judged,
    only on the whole history; a final assistant message with calls is left to
    ``missing_result`` (its placeholder results end the request)."""
    if not skeleton.whole:
        return
    kinds = skeleton.kinds
    index = len(kinds) - 1
    while index >= 0 and kinds[index] == SYSTEM:
        index -= 1
    if index >= 0 and kinds[index] == ASSISTANT and index not in skeleton.calls:
        report.add("prefill_unsupported", index, "the request ends on an assistant message")


def check_cross_target(skeleton: Skeleton, profile: Profile, report: Report) -> None:
    """An OpenAI-shaped history bound for Gemini or Bedrock through a gateway (the opening
    only where the skeleton holds it: not in a range after the history's start)."""
    if profile.first_user and not skeleton.base:
        _check_first_user(skeleton, report)
    if profile.results_need_name:
        _check_result_names(skeleton, report)


def _check_result_names(skeleton: Skeleton, report: Report) -> None:
    """Every tool message names the function of the call it answers (seed 003)."""
    kinds, calls, results = skeleton.kinds, skeleton.calls, skeleton.results
    names: dict[str, str | None] = {}
    for index, kind in enumerate(kinds):
        if kind == TOOL:
            for result in results.get(index, ()):
                if result.id in names and result.name != names[result.id]:
                    report.add(
                        "result_name_mismatch",
                        index,
                        "tool message without the called function's name",
                        id=result.id or "",
                        ids=(result.id,) if result.id else (),
                    )
            continue
        found = calls.get(index) if kind == ASSISTANT else None
        names = {call.id: call.name for call in found if call.id} if found else {}
