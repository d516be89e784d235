"""Judge a skeleton against a profile: skeleton + profile -> problems.

Each check is a small function over the skeleton. The pairing checks walk the message kinds
once; the id, name and defect checks visit only the sparse entries that have calls, results or
defects, so a long valid history costs little more than one loop over its kinds.

Problem codes (the ``code`` of :class:`toolmend.Problem`, the same for every provider):

=========================  ==================================================================
``empty_history``          no messages at all
``invalid_role``           a role the provider does not know
``orphan_result``          a tool result with no open call before it
``unknown_result_id``      a result whose id is not among the open calls
``missing_result``         a call left without a result
``duplicate_result``       a call answered twice
``duplicate_call_id``      two calls with one id in one message
``parallel_calls``         more than one call in one message, for a model that takes one
``result_without_id``      a tool message without ``tool_call_id``
``call_without_id``        a tool call without an id
``call_id_too_long``       an id longer than the provider accepts
``call_id_format``         an id outside the provider's pattern
``call_shape``             a tool call missing its ``type`` or ``function`` wrapper
``arguments_not_string``   arguments given as an object instead of a JSON string
``call_name_empty``        a call without a function name
``function_name_format``   a function name outside the provider's pattern
``empty_tool_calls``       ``tool_calls: []``
``null_content``           an assistant message with neither content nor calls (content null)
``content_null``           null ``content`` where the profile wants a string (see the profile)
``content_empty``          empty ``content`` where the profile wants text (see the profile)
``call_turn_position``     a conversation that opens with an assistant call
``system_unsupported``     a system message for a chat template with no system role
``empty_assistant``        an assistant message with neither content nor calls
``text_empty``             empty user text bound for Anthropic (also a block rule)
``text_whitespace``        whitespace-only user text bound for Anthropic (also a block rule)
``call_with_text``         text beside calls in one turn, for Bedrock's Llama and Mistral models
                           (also a block rule)
``result_text_blank``      an empty or whitespace-only tool result text bound for Bedrock (also
                           a block rule)
``missing_reasoning``      DeepSeek thinking mode: ``reasoning_content`` missing in a tool turn
``role_order``             a role the provider does not accept after the previous one
``last_role``              a request that does not end on a role the provider serves
``roles_not_alternating``  a chat template that needs user/assistant alternation
``unsupported_property``   a field the provider's schema rejects on that role
``function_call_null``     an explicit ``function_call: null`` (rejected by strict schemas)
``tool_content_not_string``  tool content given as parts where a string is required
``result_without_output``  a Responses ``function_call_output`` without ``output``
``reasoning_without_follower``  a Responses reasoning item not followed by the item it belongs to
``reasoning_without_summary``  a Responses reasoning item without ``summary``
``item_id_prefix``         a Responses item id without its type prefix (``fc``, ``rs``)
``item_id_charset``        a Responses item id with characters other than ``[A-Za-z0-9_-]``
``duplicate_item_id``      a Responses item id used twice (``duplicate_item``: an exact copy)
=========================  ==================================================================

A block-layout skeleton (Anthropic, Gemini, Bedrock) is paired by the profile's
``block_pairing`` instead; those pairings and their own codes live in
:mod:`toolmend._block_rules`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from ._block_rules import (
    check_blocks,
    check_cross_target,
    check_prefill,
    pair_contents,
    pair_converse,
    pair_turns,
)
from ._findings import Report
from ._report import InvalidHistoryError, Problem, shown_name
from ._skeleton import ASSISTANT, BLOCKS, OTHER, SYSTEM, TOOL, USER, Result, Skeleton
from .formats import get
from .profiles import PROFILES, Profile, compiled

__all__ = ["answer_result", "judge", "missing_results", "pair_by_count"]


def judge(skeleton: Skeleton, profile: Profile) -> list[Problem]:
    """Every problem ``skeleton`` has under ``profile``, in message order."""
    report = Report(profile, skeleton.base)
    blocks = skeleton.layout == BLOCKS
    if not skeleton.kinds or (
        profile.system_apart and not blocks and skeleton.whole and _nothing_to_send(skeleton)
    ):
        report.add("empty_history", 0, "no message to send")
        return report.problems
    if profile.known_roles is not None and not blocks:
        _check_roles(skeleton, profile.known_roles, report)
    if report.wants("result_without_id") and not blocks:
        _check_result_ids(skeleton, report)
    if blocks:
        _block_pairing(skeleton, profile)(skeleton, report)
        check_blocks(skeleton, profile, report)
    else:
        _pairing(profile)(skeleton, report)
        if profile.results_need_name or profile.first_user:
            check_cross_target(skeleton, profile, report)
    if skeleton.calls:
        _check_calls(skeleton, profile, report)
        if profile.single_call and not blocks:
            _check_single_call(skeleton, report)
    if skeleton.results and profile.call_id_pattern is not None:
        # whether or not the history makes calls: a range of it may make none
        _check_result_id_format(skeleton, profile, report)
    if skeleton.defects:
        _check_defects(skeleton, profile, report)
        if not blocks and report.wants("text_whitespace"):
            _check_blank_user_text(skeleton, report)
    if profile.call_after_user and not blocks:
        _check_leading_call(skeleton, report)
    if report.wants("call_with_text") and not blocks:
        _check_call_text(skeleton, report)
    if report.wants("system_unsupported"):
        for index, kind in enumerate(skeleton.kinds):
            if kind == SYSTEM:
                report.add("system_unsupported", index, "the template has no system role")
    if report.wants("unsupported_property"):
        _check_reasoning_field(skeleton, report)
    if profile.reasoning_in_tool_turns:
        _check_reasoning(skeleton, report)
    if profile.role_successors is not None and not blocks:
        _check_role_order(skeleton, profile, report)
    if profile.last_kinds is not None and skeleton.ends:  # (a range before the end: not last)
        _check_last_role(skeleton, profile, report)
    if profile.alternation is not None:
        _check_alternation(skeleton, profile.alternation, report)
    if report.wants("prefill_unsupported"):
        check_prefill(skeleton, report)
    report.problems.sort(key=lambda problem: problem.index)
    return report.problems


def _nothing_to_send(skeleton: Skeleton) -> bool:
    """Only system messages, and assistant messages without text or calls: a conversation
    sent without its system prompt, and without what LiteLLM drops, is empty."""
    empty = {defect.at for defect in skeleton.defects if defect.code == "empty_assistant"}
    return all(
        kind == SYSTEM or (kind == ASSISTANT and index in empty)
        for index, kind in enumerate(skeleton.kinds)
    )


def _check_roles(skeleton: Skeleton, known: frozenset[str], report: Report) -> None:
    for index, kind in enumerate(skeleton.kinds):
        if kind == OTHER and skeleton.roles[index] not in known:
            role = skeleton.roles[index]
            report.add("invalid_role", index, f"unknown role {shown_name(role)}", role=role)


def _check_result_ids(skeleton: Skeleton, report: Report) -> None:
    for index, carried in skeleton.results.items():
        if skeleton.kinds[index] == TOOL and any(not result.id for result in carried):
            report.add("result_without_id", index, "tool result without tool_call_id")


def _pair_adjacent(skeleton: Skeleton, report: Report) -> None:
    """OpenAI: tool messages form a contiguous block right after the calling message."""
    calls, results = skeleton.calls, skeleton.results
    owner = -1
    expected: set[str] = set()
    answered: dict[str, int] = {}
    for index, kind in enumerate(skeleton.kinds):
        if kind == TOOL:
            if owner < 0:
                ids = tuple(result.id for result in results.get(index, ()) if result.id)
                report.add(
                    "orphan_result",
                    index,
                    "tool result without a calling message before it",
                    ids=ids,
                )
                continue
            for result in results.get(index, ()):
                if result.id is not None:
                    answer_result(report, index, result.id, expected, answered)
            continue
        if owner >= 0 and len(answered) < len(expected):
            missing_results(report, owner, expected, answered)
        found = calls.get(index) if kind == ASSISTANT else None
        if found:
            owner = index
            expected = {call.id for call in found if call.id is not None}
            answered = {}
        else:
            owner = -1
    if owner >= 0 and len(answered) < len(expected):
        missing_results(report, owner, expected, answered)


def answer_result(
    report: Report, index: int, result_id: str, expected: set[str], answered: dict[str, int]
) -> None:
    """One result of the open block: it must answer one of its calls, once (also the one-walk
    range repair's, :func:`toolmend._quickmend.mended_range`, under Mistral's pairing)."""
    if result_id not in expected:
        report.add(
            "unknown_result_id",
            index,
            "tool result answers no open call",
            id=result_id,
            ids=(result_id,),
        )
    elif result_id in answered:
        report.add(
            "duplicate_result",
            index,
            "call answered twice",
            id=result_id,
            ids=(result_id,),
            first=answered[result_id] + report.base,
        )
    else:
        answered[result_id] = index


def missing_results(
    report: Report, owner: int, expected: set[str], answered: Collection[str]
) -> None:
    missing = tuple(sorted(expected.difference(answered)))
    report.add("missing_result", owner, f"{len(missing)} call(s) without a result", ids=missing)


def _pair_by_count(skeleton: Skeleton, report: Report) -> None:
    """DeepSeek: as many tool messages right after the calling message as it has calls."""
    pair_by_count(skeleton.kinds, skeleton.calls.get, lambda index: _ids(skeleton, index), report)


def pair_by_count(
    kinds: Sequence[str],
    calls_at: Callable[[int], Any],
    ids_at: Callable[[int], tuple[str, ...]],
    report: Report,
) -> None:
    """The pairing by count (DeepSeek: as many tool messages right after the calling message
    as it has calls) over messages of ``kinds``: ``calls_at(index)`` the calls of an assistant
    message (empty or None for none), ``ids_at(index)`` their ids. The judge's over a skeleton,
    and :func:`toolmend._quickmend.mended_range`'s over a range's messages, which must report
    exactly what the judge reports."""
    owner, remaining = -1, 0
    for index, kind in enumerate(kinds):
        if kind == TOOL:
            if remaining <= 0:
                report.add("orphan_result", index, "tool result without a pending call")
            else:
                remaining -= 1
            continue
        if remaining > 0:
            report.add(
                "missing_result", owner, f"{remaining} call(s) without a result", ids=ids_at(owner)
            )
        found = calls_at(index) if kind == ASSISTANT else None
        owner, remaining = (index, len(found)) if found else (-1, 0)
    if remaining > 0:
        report.add(
            "missing_result", owner, f"{remaining} call(s) without a result", ids=ids_at(owner)
        )


def _ids(skeleton: Skeleton, index: int) -> tuple[str, ...]:
    return tuple(call.id for call in skeleton.calls.get(index, ()) if call.id is not None)


def _pair_latest(skeleton: Skeleton, report: Report) -> None:
    """Mistral: results match the latest assistant's ids; counts compared at the next one."""
    calls, results = skeleton.calls, skeleton.results
    owner = -1
    expected: set[str] = set()
    answered: dict[str, int] = {}
    for index, kind in enumerate(skeleton.kinds):
        if kind == ASSISTANT:
            if owner >= 0 and len(answered) != len(expected):
                missing_results(report, owner, expected, answered)
            found = calls.get(index)
            owner = index if found else -1
            expected = {call.id for call in found if call.id is not None} if found else set()
            answered = {}
        elif kind == TOOL:
            _block_results(
                report,
                results.get(index, ()),
                index,
                owner,
                expected,
                answered,
                "tool result without a calling message",
            )
    if owner >= 0 and len(answered) != len(expected):
        missing_results(report, owner, expected, answered)


def _block_results(
    report: Report,
    found: tuple[Result, ...],
    index: int,
    owner: int,
    expected: set[str],
    answered: dict[str, int],
    orphan: str,
) -> None:
    """The results of a tool message (or output item) in a block that must follow its calls:
    each answers one of ``expected``, or is an orphan (described as ``orphan``) when no calling
    message opened the block (``owner`` < 0)."""
    for result in found:
        if result.id is None:
            continue
        if owner < 0:
            report.add(
                "orphan_result",
                index,
                orphan,
                id=result.id,
                ids=(result.id,),
            )
        else:
            answer_result(report, index, result.id, expected, answered)


def _pair_batched(skeleton: Skeleton, report: Report) -> None:
    """DeepSeek's Responses endpoint (``Profile.batched_outputs``): a run of consecutive calling
    items is one assistant turn, and the outputs of all its calls form the block right after
    the run, as tool messages follow their assistant message in chat."""
    calls, results = skeleton.calls, skeleton.results
    owner = -1  # the first calling item of the open run
    expected: set[str] = set()
    answered: dict[str, int] = {}
    in_run = False  # the item before was a calling item
    for index, kind in enumerate(skeleton.kinds):
        if kind == TOOL:
            in_run = False
            _block_results(
                report,
                results.get(index, ()),
                index,
                owner,
                expected,
                answered,
                "output without its call's run right before it",
            )
            continue
        found = calls.get(index) if kind == ASSISTANT else None
        if found and in_run:
            expected.update(call.id for call in found if call.id is not None)
            continue
        if owner >= 0 and len(answered) < len(expected):
            missing_results(report, owner, expected, answered)
        in_run = bool(found)
        owner = index if found else -1
        expected = {call.id for call in found if call.id is not None} if found else set()
        answered = {}
    if owner >= 0 and len(answered) < len(expected):
        missing_results(report, owner, expected, answered)


def _pair_none(skeleton: Skeleton, report: Report) -> None:
    """Providers whose pairing is not known to be checked."""


def _pair_ordered(skeleton: Skeleton, report: Report) -> None:
    """OpenAI Responses: no adjacency. A result needs a call with its id anywhere before it,
    and a call needs a result with its id anywhere after it. Visits only the calling and
    result entries, in input order."""
    calls, results, kinds = skeleton.calls, skeleton.results, skeleton.kinds
    last_result: dict[str, int] = {}
    for index, carried in results.items():
        if kinds[index] == TOOL:
            for result in carried:
                if result.id is not None and last_result.get(result.id, -1) < index:
                    last_result[result.id] = index
    called: set[str] = set()
    for index in sorted(calls.keys() | results.keys()):
        kind = kinds[index]
        if kind == ASSISTANT:
            for call in calls.get(index, ()):
                if call.id is None:
                    continue
                called.add(call.id)
                if last_result.get(call.id, -1) < index:
                    report.add(
                        "missing_result",
                        index,
                        "call without a result after it",
                        id=call.id,
                        ids=(call.id,),
                    )
        elif kind == TOOL:
            for result in results.get(index, ()):
                if result.id is not None and result.id not in called:
                    report.add(
                        "orphan_result",
                        index,
                        "tool result without a call before it",
                        id=result.id,
                        ids=(result.id,),
                    )


_PAIRINGS: dict[str, Callable[[Skeleton, Report], None]] = {
    "adjacent": _pair_adjacent,
    "count": _pair_by_count,
    "latest": _pair_latest,
    "ordered": _pair_ordered,
    "none": _pair_none,
    "turns": pair_turns,
    "contents": pair_contents,
    "converse": pair_converse,
}


def _pairing(profile: Profile) -> Callable[[Skeleton, Report], None]:
    """The pairing of a messages- or items-layout history under ``profile``."""
    return _pair_batched if profile.batched_outputs else _PAIRINGS[profile.pairing]


def _block_pairing(skeleton: Skeleton, profile: Profile) -> Callable[[Skeleton, Report], None]:
    """The pairing of a block-layout history under ``profile`` (its ``block_pairing``)."""
    pairing = _PAIRINGS.get(profile.block_pairing or "")
    # a provider takes its own block format only: an Anthropic history judged by the Gemini
    # rules would get repairs no request could use
    if pairing is None or get(skeleton.format).block_pairing != profile.block_pairing:
        raise InvalidHistoryError(
            f"the {profile.name!r} profile has no rules for {skeleton.format!r} histories; "
            f"pick one of its providers: {', '.join(_providers_of(skeleton.format))}"
        )
    return pairing


def _providers_of(format_name: str) -> list[str]:
    """The profiles whose block pairing judges ``format_name`` histories."""
    block_pairing = get(format_name).block_pairing
    if block_pairing is None:
        return []
    return [name for name, profile in PROFILES.items() if profile.block_pairing == block_pairing]


def _check_calls(skeleton: Skeleton, profile: Profile, report: Report) -> None:
    """Ids and names of every call: present, unique in their message (or in the request, per
    ``call_id_scope``), in the provider's form."""
    max_length = profile.call_id_max_length
    id_pattern = compiled(profile.call_id_pattern)
    name_pattern = compiled(profile.function_name_pattern)
    request_wide = profile.call_id_scope == "request"
    seen: set[str] = set()
    for index in sorted(skeleton.calls) if request_wide else skeleton.calls:
        found = skeleton.calls[index]
        if not request_wide:
            seen = set()
        for call in found:
            call_id = call.id
            if not call_id:  # missing or "": the provider refuses both
                report.add("call_without_id", index, "tool call without an id", slot=call.slot)
                continue
            if call_id in seen:
                report.add(
                    "duplicate_call_id",
                    index,
                    "two calls share one id",
                    id=call_id,
                    ids=(call_id,),
                    slot=call.slot,
                )
            seen.add(call_id)
            if max_length is not None and len(call_id) > max_length:
                report.add(
                    "call_id_too_long",
                    index,
                    f"call id of {len(call_id)} characters",
                    slot=call.slot,
                    length=len(call_id),
                    ids=(call_id,),
                )
            if id_pattern is not None and id_pattern.fullmatch(call_id) is None:
                report.add(
                    "call_id_format",
                    index,
                    "call id outside the provider's pattern",
                    id=call_id,
                    ids=(call_id,),
                    slot=call.slot,
                )
            if not call.name:
                report.add(
                    "call_name_empty",
                    index,
                    "tool call without a function name",
                    slot=call.slot,
                    ids=(call_id,),
                )
            elif name_pattern is not None and name_pattern.fullmatch(call.name) is None:
                report.add(
                    "function_name_format",
                    index,
                    "function name outside the pattern",
                    name=call.name,
                    slot=call.slot,
                    ids=(call_id,),
                )


def _check_result_id_format(skeleton: Skeleton, profile: Profile, report: Report) -> None:
    """The ids results carry, in the provider's form (as their calls' must be)."""
    id_pattern = compiled(profile.call_id_pattern)
    if id_pattern is not None:
        code = "result_id_format" if report.wants("result_id_format") else "call_id_format"
        for index, carried in skeleton.results.items():
            for result in carried:
                if result.id is not None and id_pattern.fullmatch(result.id) is None:
                    report.add(
                        code,
                        index,
                        "result id outside the provider's pattern",
                        id=result.id,
                        ids=(result.id,),
                        slot=result.slot,
                    )


def _check_single_call(skeleton: Skeleton, report: Report) -> None:
    """A model that takes one call per assistant message (the Llama 3.x JSON templates)."""
    for index, found in skeleton.calls.items():
        if len(found) > 1 and skeleton.kinds[index] == ASSISTANT:
            report.add(
                "parallel_calls",
                index,
                f"{len(found)} calls in one message",
                ids=tuple(call.id for call in found if call.id),
            )


def _check_defects(skeleton: Skeleton, profile: Profile, report: Report) -> None:
    """Shape problems the format reader saw, reported where the provider rejects them (a
    null or empty ``content`` where the profile wants text of that message's kind)."""
    roles, kinds = skeleton.roles, skeleton.kinds
    for defect in skeleton.defects:
        code = defect.code
        if code == "content_null" and not (
            kinds[defect.at] in profile.content_string_kinds
            # null text beside calls is no text part at all
            or (kinds[defect.at] in profile.content_text_kinds and kinds[defect.at] != ASSISTANT)
        ):
            continue
        if (
            code == "content_empty"
            and kinds[defect.at] == TOOL
            and report.wants("result_text_blank")
        ):
            # Bedrock through a gateway: an empty tool message becomes a blank toolResult text
            report.add("result_text_blank", defect.at, "empty tool result", property="be non-empty")
            continue
        if code == "blank_text" and kinds[defect.at] == TOOL:
            # the same for whitespace-only tool text (or a blank text part): LiteLLM sends it
            # as it is, a toolResult text Bedrock refuses; no other profile has a rule on it
            if report.wants("result_text_blank"):
                report.add(
                    "result_text_blank",
                    defect.at,
                    "blank tool result text",
                    slot=max(defect.slot, 0),
                    property="be non-empty"
                    if defect.detail == "empty"
                    else "contain non-whitespace text",
                )
            continue
        if code == "content_empty" and kinds[defect.at] not in profile.content_text_kinds:
            continue
        report.add(
            defect.code,
            defect.at,
            f"malformed message ({defect.code})",
            slot=max(defect.slot, 0),
            property=defect.detail,
            role=roles[defect.at],
            id=defect.id,
            ids=(defect.id,) if defect.id else (),
        )


def _check_blank_user_text(skeleton: Skeleton, report: Report) -> None:
    """An OpenAI-shaped history bound for Anthropic (issue 32, case 8): a user message whose
    text is empty or only whitespace becomes a text block Anthropic refuses ("text content
    blocks must be non-empty" / "must contain non-whitespace text"), as LiteLLM's sanitizer
    tests show (an empty content, whitespace only, blank text parts)."""
    kinds = skeleton.kinds
    for defect in skeleton.defects:
        if kinds[defect.at] != USER:
            continue
        if defect.code == "content_empty" or (
            defect.code == "blank_text" and defect.detail == "empty"
        ):
            code = "text_empty"
        elif defect.code == "blank_text":
            code = "text_whitespace"
        else:
            continue
        report.add(code, defect.at, f"user message with blank text ({code})", slot=defect.slot)


def _check_call_text(skeleton: Skeleton, report: Report) -> None:
    """An OpenAI-shaped history bound for Bedrock's Llama and Mistral models
    (``call_with_text``): LiteLLM's converter makes one Converse turn of consecutive assistant
    messages, with the text of a calling message (blank text aside) and of the assistant text
    messages right before it ahead of the ``toolUse`` blocks, a turn those models refuse."""
    kinds, calls = skeleton.kinds, skeleton.calls
    bare = skeleton.marked("no_text") | skeleton.marked("blank_text")
    empty: set[int] | None = None
    for index in calls:
        if kinds[index] != ASSISTANT:
            continue
        joined = index not in bare
        before = index - 1
        while not joined and before >= 0 and kinds[before] == ASSISTANT and before not in calls:
            if empty is None:
                empty = {d.at for d in skeleton.defects if d.code == "empty_assistant"}
            joined = before not in empty and before not in bare
            before -= 1
        if joined:
            report.add(
                "call_with_text",
                index,
                "text beside the calls in one assistant turn",
                ids=tuple(call.id for call in calls[index] if call.id),
            )


def _check_leading_call(skeleton: Skeleton, report: Report) -> None:
    """A conversation that opens (after its system messages) with an assistant call."""
    for index, kind in enumerate(skeleton.kinds):
        if kind == SYSTEM:
            continue
        if kind == ASSISTANT and index in skeleton.calls and skeleton.whole:
            found = skeleton.calls[index]
            first = found[0].id or ""
            report.add(
                "call_turn_position",
                index,
                "the conversation opens with a tool call",
                id=first,
                ids=tuple(call.id for call in found if call.id),
            )
        return


def _check_reasoning_field(skeleton: Skeleton, report: Report) -> None:
    """Providers whose schema has no ``reasoning_content`` on assistant messages (Groq)."""
    for index in sorted(skeleton.marked("reasoning_field")):
        report.add(
            "unsupported_property",
            index,
            "reasoning_content is not accepted",
            role=skeleton.roles[index],
            property="reasoning_content",
        )


def _check_reasoning(skeleton: Skeleton, report: Report) -> None:
    """DeepSeek thinking mode: every assistant message of a user turn that used tools."""
    for turn in _user_turns(skeleton):
        if not any(index in skeleton.calls for index in turn):
            continue
        reasoning = skeleton.marked("reasoning")
        for index in turn:
            if skeleton.kinds[index] == ASSISTANT and index not in reasoning:
                report.add("missing_reasoning", index, "reasoning_content missing in a tool turn")


def _user_turns(skeleton: Skeleton) -> list[list[int]]:
    """The messages between consecutive user messages, as lists of indexes."""
    turns: list[list[int]] = [[]]
    for index, kind in enumerate(skeleton.kinds):
        if kind == USER:
            turns.append([])
        else:
            turns[-1].append(index)
    return [turn for turn in turns if turn]


def _check_role_order(skeleton: Skeleton, profile: Profile, report: Report) -> None:
    successors = profile.role_successors
    assert successors is not None
    kinds = skeleton.kinds
    for index in range(1, len(kinds)):
        prev, kind = kinds[index - 1], kinds[index]
        allowed = successors.get(prev)
        if allowed is not None and kind not in allowed:
            report.add("role_order", index, f"{kind} right after {prev}", role=kind, prev=prev)


def _check_last_role(skeleton: Skeleton, profile: Profile, report: Report) -> None:
    assert profile.last_kinds is not None
    last = len(skeleton.kinds) - 1
    kind = skeleton.kinds[last]
    if kind in profile.last_kinds or last in skeleton.marked("prefix"):
        return
    report.add("last_role", last, f"request ends on {kind}", role=kind)


def _check_alternation(skeleton: Skeleton, style: str, report: Report) -> None:
    kinds, calls = skeleton.kinds, skeleton.calls
    expected = USER
    start = 1 if kinds[0] == SYSTEM else 0
    for index in range(start, len(kinds)):
        kind = kinds[index]
        if style == "tool-aware" and (kind == TOOL or (kind == ASSISTANT and index in calls)):
            continue
        if kind != expected:
            report.add(
                "roles_not_alternating",
                index,
                f"{kind} where {expected} was due",
                role=kind,
                prev=expected,
            )
        expected = USER if kind == ASSISTANT else ASSISTANT
