"""An OpenAI-shaped history bound for Gemini (names filled), Bedrock, Anthropic, OpenAI or
DeepSeek repaired in one walk (issue 32).

These profiles pair each result with the calling message right before its block of results
(``pairing="adjacent"``); Gemini wants every tool message to carry its call's function name,
Bedrock takes no user or system message right after a result, Anthropic wants call ids unique
in the request. The range path (scan, ranges, stretches, assembly) cost near 0.5x
``json.dumps`` on a damaged history; :func:`walk_adjacent` does what
:func:`toolmend._inline.walk_mend` does for Mistral: it checks each message as the one-pass
check of an intact history does (``formats/_openai_cross.py``), copies what changes (a
result's name filled) and mends the common damages where it meets them:

* a calling message's calls left without results: placeholders after its results, when the
  next assistant message comes;
* a result sent twice within its block (the same text): dropped; after a calling message
  sent twice, moved to the first copy's open call, as the planner moves it;
* a result no call of its block waits for (its calling message lost): dropped;
* a user message inside a block of results, before results still to come: those results
  moved next to their call, the placeholders after them, then (Bedrock) the assistant bridge
  and the user message;
* (Bedrock) a user message right after a block of results: the assistant bridge before it;
* a call answered by a placeholder whose id another call has, and (Anthropic) a later call of
  an id an earlier call kept: a new id, as the planner's id step makes it.

Anything else (a dropped result whose id a call has, a repeat with another text, blank
content the full path would mend, damage in the first or last stretch, a call left waiting at
the end) answers None and the other paths run unchanged.

The walk keeps only a tuple for each damage it meets; :func:`walk_report` writes the changes
and problems from them when the report is first read (:meth:`toolmend.Repair._deferred`).
``repair`` walks Gemini (and ``gemini-litellm``, LiteLLM's converter's: no names to fill),
Bedrock, Anthropic, OpenAI's own profile and DeepSeek's (:data:`_FAMILIES`);
for DeepSeek, whose judge pairs results by count (``Profile.pairing == "count"``) while the
planner pairs ids, the walk's messages and changes are the id pairing's, the problems the
judge's count over the whole history (:func:`toolmend._rules.pair_by_count`), and where every
block holds as many results as calls (a repeat, or a result of no call, in place of a lost
one) the judge finds nothing to mend and the walk answers None;
for Anthropic (ids unique in the request) the walk also keeps each later call of an id an
earlier call has (the judge's ``duplicate_call_id``) and whether a new id was a reused id's
or a placeheld call's (the planner's two texts).
Property tests (``tests/test_damaged_speed.py``) hold the messages and the report to the
whole history's repair.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import Any

from . import _quickmend
from ._findings import Report
from ._plan_ids import fresh_id
from ._planstate import ANSWERED_TEXT as _ANSWERED
from ._planstate import ASSISTANT_BRIDGE_TEXT
from ._planstate import BRIDGED_TEXT as _BRIDGED
from ._planstate import ORPHAN_DROPPED_TEXT as _ORPHAN_DROPPED
from ._planstate import REPEAT_DROPPED_TEXT as _REPEAT_DROPPED
from ._policy import Policy
from ._report import Change, Problem
from ._rules import pair_by_count
from ._skeleton import TOOL
from .formats import Format, _openai_chat
from .formats._openai_chat import FORMAT, same_result
from .formats._openai_cross import (
    CrossRules,
    all_ids_match,
    blank_free,
    cross_rules,
    opening_ok,
)
from .profiles import Profile, get_profile

__all__ = ["walk_adjacent", "walk_report", "walks_adjacent"]

_WALKED: dict[int, tuple[Profile, CrossRules | None]] = {}
"""``id(profile)`` -> (the profile, its rules where :func:`walk_adjacent` answers for it)."""

_FAMILIES = ("gemini", "openai", "bedrock", "anthropic", "gemini-litellm", "deepseek")
"""The profiles ``repair`` walks: their own, as :func:`toolmend.profiles.get_profile` gives
them (a model-picked variant has other rules: the other paths take it)."""


def walks_adjacent(module: Format, profile: Profile, policy: Policy) -> bool:
    """Whether :func:`walk_adjacent` answers for ``module``'s histories under ``profile`` and
    ``policy``: OpenAI chat messages, the own profile of one of :data:`_FAMILIES`, the
    default repairs."""
    if (
        module is not FORMAT
        or policy.missing_result != "placeholder"
        or policy.orphan_result != "drop"
        or policy.frontier == "keep"
    ):
        return False
    return _rules_of(profile) is not None


def _rules_of(profile: Profile) -> CrossRules | None:
    entry = _WALKED.get(id(profile))
    if entry is None or entry[0] is not profile:
        rules = None
        if any(profile == get_profile(name) for name in _FAMILIES):
            rules = cross_rules(profile)
        if len(_WALKED) >= 64:
            _WALKED.clear()
        entry = _WALKED[id(profile)] = (profile, rules)
    return entry[1]


def walk_adjacent(
    messages: Sequence[Any], profile: Profile, policy: Policy
) -> tuple[list[Any], list[tuple[Any, ...]]] | None:
    """The messages ``toolmend.repair(messages, provider=profile, policy=policy)`` sends, for a
    history :func:`walks_adjacent` says the walk answers for, made in one walk, and whether it
    mended damage (else it only filled names); None where the walk cannot tell or nothing
    changes: the other paths decide then."""
    rules = _rules_of(profile)
    if rules is None:
        return None
    try:
        return _walk(messages, rules, profile, policy.placeholder)
    except (KeyError, TypeError, AttributeError):
        return None  # (a field missing or of another type: the range path reports it)


def _content_fails(level: int) -> Callable[[Any], bool]:
    """The test a message's content fails at content ``level`` (see :class:`CrossRules`)."""
    if level == 1:
        return _null
    if level == 2:
        return _falsy
    if level == 3:
        return _blank
    return _never


def _null(content: Any) -> bool:
    return content is None


def _falsy(content: Any) -> bool:
    return not content


def _blank(content: Any) -> bool:
    if not content:
        return True
    if type(content) is str:
        return content.isspace()
    return type(content) is list and not blank_free(content)


def _never(content: Any) -> bool:
    return False


def _call_content_fails(rules: CrossRules) -> Callable[[Any], bool]:
    """The test the ``content`` of an assistant message with calls fails."""
    null_ok, empty_ok = rules.call_content_null_ok, rules.call_content_empty_ok
    if null_ok and empty_ok:
        return _never
    if null_ok:
        return lambda content: content is not None and not content
    if empty_ok:
        return _null
    return _falsy


def _walk(
    messages: Sequence[Any], rules: CrossRules, profile: Profile, placeholder_text: str
) -> tuple[list[Any], list[tuple[Any, ...]]] | None:
    """:func:`walk_adjacent` under ``rules`` (a ``KeyError`` or ``TypeError`` from a field
    missing or of another type is the caller's None)."""
    if len(messages) < 3 or not opening_ok(messages, rules):
        return None
    last = messages[-1]
    if type(last) is not dict or last.get("role") not in ("user", "tool"):
        return None
    names = rules.names
    bridge = rules.after_tool is not None and "user" not in rules.after_tool
    if rules.after_tool is not None and "system" in rules.after_tool:
        return None
    if rules.successors is not None or rules.last_roles is not None or rules.tool_text:
        return None
    request_ids = rules.request_ids
    name_match = rules.name_match
    function_names: set[str] = set()
    user_fails = _content_fails(rules.user_content)
    system_fails = _content_fails(rules.system_content)
    tool_fails = _content_fails(rules.tool_content)
    call_fails = _call_content_fails(rules)
    max_length = rules.max_length
    tool_level = rules.tool_content
    ids_ok = all_ids_match(rules.id_match) if rules.id_match is not None else None
    out: list[Any] = []
    append = out.append
    call_ids: list[str] = []  # every call id, in order
    callers: list[int] = []  # the calling messages' places in ``out``
    caller_indexes: list[int] = []  # and their indexes
    events: list[tuple[Any, ...]] = []  # the damage met, in message order: see ``walk_report``
    late_ids: list[str] = []  # the ids of the results in ``late``
    moved_from_index = -1
    orphans: list[str] = []  # the ids of the results dropped as no call's of their block
    repeats: list[str] = []  # the ids of the results dropped as a block's second
    pending: dict[str, str] = {}  # the latest calling message's unanswered calls -> names
    owner = -1  # its place in ``out``
    index_of_owner = -1  # its index
    # a calling message whose calls got placeholders, right before the next calling message:
    # where its placeholders start in ``out``, its place there, its calls still placeheld
    # (id -> name), the results moved to it from the next one's block, and that message
    placed, moved_from, moves_to = -1, -1, -1
    left_open: dict[str, str] = {}
    moved: list[Any] = []
    moved_ids: list[str] = []
    placeheld: list[tuple[int, int, str]] = []  # (a call's message, its placeholder, its id)
    open_block = False  # its results come now, nothing between them and it
    held: list[Any] = []  # user messages inside its block, before results still to come
    late: list[Any] = []  # the results after them (moved next to their call)
    first_event = last_event = -1
    first_assistant = last_assistant = -1
    renamed = False  # a result's name filled
    for index, message in enumerate(messages):
        if type(message) is not dict:
            return None
        role = message["role"]
        if role == "tool":
            call_id = message["tool_call_id"]
            if tool_level:
                content = message["content"]
                if (
                    (not content or (type(content) is str and content.isspace()))
                    if tool_level == 3
                    else tool_fails(content)
                ):
                    return None
                if type(content) is list and tool_level == 3 and not blank_free(content):
                    return None
            name = pending.pop(call_id, None)
            if name is not None:
                if names and message.get("name") != name:
                    copy = message.copy()
                    copy["name"] = name
                    message = copy
                    renamed = True
                if open_block:  # (the common case: its call's result)
                    append(message)
                    continue
                if not held:
                    return None  # (not reached: a result of a closed block is no call's)
                late.append(message)
                late_ids.append(call_id)
                events.append(("late", index, call_id, index_of_owner))
                last_event = index
                continue
            if type(call_id) is not str or not call_id or held:
                return None
            if not open_block:  # (after assistant text or a user message: no call's)
                orphans.append(call_id)
                events.append(("orphan", index, call_id))
                if first_event < 0:
                    first_event = index
                last_event = index
                continue
            if index - index_of_owner > _LONGEST_BLOCK:
                return None  # (each extra result reads its block back: the range path)
            first = _answered_at(messages, index_of_owner, index, call_id)
            if first is not None and not any(
                call["id"] == call_id for call in messages[index_of_owner]["tool_calls"]
            ):
                return None  # (an orphan sent twice: the range path)
            if first is not None and not same_result(messages[first], message):
                return None  # (another text: the planner's strength test)
            if first is None:
                orphans.append(call_id)
                events.append(("unknown", index, call_id))
            elif moves_to == index_of_owner and call_id in left_open:
                # a calling message sent twice, this result too: the pairing gives the repeat
                # to the first copy's call, left open, and it goes there
                if names and message.get("name") != left_open[call_id]:
                    message = message.copy()
                    message["name"] = left_open[call_id]
                del left_open[call_id]
                moved.append(message)
                moved_ids.append(call_id)
                events.append(("twice", index, call_id, first, moved_from_index))
                count = len(moved) + len(left_open)
                out[placed : placed + count] = [
                    *moved,
                    *(
                        _placeholder(open_id, name, placeholder_text, names)
                        for open_id, name in left_open.items()
                    ),
                ]
                del placeheld[len(placeheld) - len(left_open) - 1 :]
                placeheld += (
                    (moved_from, placed + len(moved) + slot, open_id)
                    for slot, open_id in enumerate(left_open)
                )
            else:
                repeats.append(call_id)
                events.append(("repeat", index, call_id, first))
            if first_event < 0:
                first_event = index
            last_event = index
            continue
        if role == "user":
            if "tool_calls" in message or user_fails(message["content"]):
                return None
            if held or (open_block and pending):
                if bridge and not held:
                    events.append(("bridge", index))  # (before it, once the block is laid out)
                held.append(message)  # (inside the block: results may come after it)
                open_block = False
                last_event = index
                if first_event < 0:
                    first_event = index
                continue
            if bridge and out and out[-1]["role"] == "tool":
                append(_BRIDGE.copy())
                events.append(("bridge", index))
                last_event = index
                if first_event < 0:
                    first_event = index
            open_block = False
            append(message)
            continue
        if role == "system" or role == "developer":
            if "tool_calls" in message or system_fails(message["content"]):
                return None
            if held or (open_block and pending) or (bridge and out and out[-1]["role"] == "tool"):
                return None
            open_block = False
            append(message)
            continue
        if role != "assistant" or "function_call" in message:
            return None
        # an assistant message: the latest calling message's block ends
        if held or pending:
            out.extend(late)
            late = []
            placed, moved_from, left_open, moved = len(out), owner, pending, []
            moved_from_index = index_of_owner
            events.append(("missing", index_of_owner, (*pending, *late_ids), tuple(pending)))
            late_ids = []
            moves_to = -1 if held else index  # (this message, if it calls)
            for call_id, name in pending.items():  # (in slot order: the message's order)
                placeheld.append((owner, len(out), call_id))
                append(_placeholder(call_id, name, placeholder_text, names))
            if held:
                if bridge:
                    append(_BRIDGE.copy())
                out.extend(held)
                held = []
            last_event = index - 1
            if first_event < 0:
                first_event = index - 1
            pending = {}
        if first_assistant < 0:
            first_assistant = index
        last_assistant = index
        tool_calls = message.get("tool_calls")
        if tool_calls is None:
            if not message["content"]:
                return None
            open_block = False
            append(message)
            continue
        if type(tool_calls) is not list or not tool_calls or call_fails(message["content"]):
            return None
        for call in tool_calls:
            if type(call) is not dict or call["type"] is None:
                return None
            call_id = call["id"]
            function = call["function"]
            if (
                type(call_id) is not str
                or not call_id
                or len(call_id) > max_length
                or call_id in pending
                or type(function) is not dict
            ):
                return None
            name = function["name"]
            if type(function["arguments"]) is not str or type(name) is not str or not name:
                return None
            pending[call_id] = name
            call_ids.append(call_id)
            function_names.add(name)
        index_of_owner = index
        owner = len(out)
        callers.append(owner)
        caller_indexes.append(index)
        append(message)
        open_block = True
    if held or pending:
        return None  # (waiting at the end: the newest input's rules)
    if first_event >= 0 and (first_event < first_assistant or last_event >= last_assistant):
        return None  # (damage in the first or last stretch: the range path's rules there)
    if first_event < 0 and not renamed:
        return None  # (nothing to change: the one-pass check decides)
    known = set(call_ids)
    if not known.isdisjoint(orphans):
        return None  # (a result another call answers: the whole history decides)
    if ids_ok is not None and not ids_ok(call_ids):
        return None
    if name_match is not None and not all(map(name_match, function_names)):
        return None
    if profile.pairing == "count" and not _counts_break(events, caller_indexes):
        return None  # (DeepSeek: each block holds as many results as calls, nothing to mend)
    if len(known) != len(call_ids) or moved_ids:
        if not _repeats_apart(call_ids, repeats, moved_ids):
            return None  # (a repeat the planner moves to a copy of its calling message)
        renewed, again = _renew_shared(
            out, call_ids, known, placeheld, callers, profile, request_ids
        )
        if renewed or again:
            index_at = dict(zip(callers, caller_indexes, strict=True))
            events += (("again", index_at[at], old, slot) for at, old, slot in again)
            events += (("renewed", index_at[at], old, new, kept) for at, old, new, kept in renewed)
    return out, events


def _counts_break(events: list[tuple[Any, ...]], caller_indexes: list[int]) -> bool:
    """Whether the judge's pairing by count (DeepSeek: as many results right after a calling
    message as it has calls) finds a problem in the damage ``events`` the walk met: a result
    after no calling message (or after a user message inside a block), a block with more or
    fewer results than calls. A block whose results answer no open call (or one twice) as
    many times as it leaves calls unanswered passes the count."""
    extras: dict[int, int] = {}  # a calling message's index -> its results the walk dropped
    short: dict[int, int] = {}  # and its calls left without results
    for event in events:
        kind = event[0]
        if kind == "unknown" or kind == "repeat":  # (a result inside its block)
            owner = caller_indexes[bisect_right(caller_indexes, event[1]) - 1]
            extras[owner] = extras.get(owner, 0) + 1
        elif kind == "missing":
            short[event[1]] = len(event[3])
        else:  # a result after no calling message, moved, or a user message in a block
            return True
    return extras != short


def _repeats_apart(call_ids: list[str], repeats: list[str], moved_ids: list[str]) -> bool:
    """Whether no dropped repeat answers a call whose id another call has, and each repeat
    moved to a copy of its calling message answers an id two calls have, no more."""
    uses: dict[str, int] = {}
    for call_id in call_ids:
        uses[call_id] = uses.get(call_id, 0) + 1
    return all(uses[call_id] == 1 for call_id in repeats) and all(
        uses[call_id] == 2 for call_id in moved_ids
    )


def _renew_shared(
    out: list[Any],
    call_ids: list[str],
    known: set[str],
    placeheld: list[tuple[int, int, str]],
    callers: list[int],
    profile: Profile,
    request_ids: bool,
) -> tuple[list[tuple[int, str, str, bool]], list[tuple[int, str, int]]]:
    """Give new ids, in history order, as the planner's id step does
    (:func:`toolmend._plan_ids.rewrite_ids`), to each call answered with a placeholder whose
    id another call has (a calling message sent twice, the first copy's calls left without
    results) and, where ids are unique in the request (``request_ids``), to each later call
    of an id a call before it kept; a result takes its call's new id. Only the ids two calls
    share are looked at. Returns the new ids (a calling message's place, the old id, the new
    one, whether the call was a later call of an id an earlier one kept rather than a
    placeheld call) and, ids unique in the request, each later call of an id an earlier call
    has (its calling message's place, the id, its slot: the judge's ``duplicate_call_id``)."""
    uses: dict[str, int] = {}
    for call_id in call_ids:
        uses[call_id] = uses.get(call_id, 0) + 1
    shared_ids = {call_id for call_id, count in uses.items() if count > 1}
    shared = {(at, call_id) for at, _, call_id in placeheld if call_id in shared_ids}
    taken = set(known)
    next_try: dict[str, int] = {}
    seen: set[str] = set()  # (the ids kept, and the new ones: only shared ids repeat)
    renewed: list[tuple[int, str, str, bool]] = []  # (a calling message's place, ids, reused)
    again: list[tuple[int, str, int]] = []  # (a calling message's place, id, slot)
    met: set[str] = set()  # (the shared ids of the calls so far, kept or not)
    for at in callers if request_ids else sorted({at for at, _ in shared}):
        message = out[at]
        tool_calls = message["tool_calls"]
        renamed: dict[str, str] = {}
        for slot, call in enumerate(tool_calls):
            call_id = call["id"]
            if call_id not in shared_ids:
                continue
            if request_ids:
                if call_id in met:
                    again.append((at, call_id, slot))
                met.add(call_id)
            if (request_ids and call_id in seen) or (at, call_id) in shared:
                new_id = renamed[call_id] = fresh_id(call_id, profile, taken, next_try)
                renewed.append((at, call_id, new_id, (at, call_id) not in shared))
                seen.add(new_id)
            else:
                seen.add(call_id)
        if not renamed:
            continue
        copy = out[at] = message.copy()
        copy["tool_calls"] = [
            {**call, "id": renamed[call["id"]]} if call["id"] in renamed else call
            for call in tool_calls
        ]
        for after in range(at + 1, len(out)):
            result = out[after]
            if result["role"] != "tool":
                break
            if result["tool_call_id"] in renamed:
                result = out[after] = result.copy()
                result["tool_call_id"] = renamed[result["tool_call_id"]]
    return renewed, again


_LONGEST_BLOCK = 256
"""The most messages between a calling message and a result it does not wait for (a repeat
or an orphan) that the walk reads back for its first answer; beyond, the range path."""


def _answered_at(messages: Sequence[Any], owner: int, index: int, call_id: str) -> int | None:
    """The index of the first result of the block of the calling message at ``owner`` that
    answers ``call_id`` before ``index``, if any (the block's results are all tool messages,
    but for the repeats and orphans the walk drops among them)."""
    for at in range(owner + 1, index):
        message = messages[at]
        if message["role"] == "tool" and message["tool_call_id"] == call_id:
            return at
    return None


def _placeholder(call_id: str, name: str, text: str, names: bool) -> dict[str, Any]:
    if names:
        return {"role": "tool", "tool_call_id": call_id, "content": text, "name": name}
    return {"role": "tool", "tool_call_id": call_id, "content": text}


_BRIDGE = {"role": "assistant", "content": ASSISTANT_BRIDGE_TEXT}


def walk_report(
    messages: Sequence[Any], profile: Profile, events: list[tuple[Any, ...]]
) -> tuple[list[Change], list[Problem]]:
    """The changes and problems of the repair :func:`walk_adjacent` made of ``messages``
    bound for one of :data:`_FAMILIES` (the damage ``events`` it met), as the whole history's
    judge and planner report them: in message order, and at one message in the order of their
    steps (the judge: the pairing, the result's name, (Anthropic) ids two calls share, the
    role order; the planner: answered and dropped results,
    moved results, moved messages, new ids, names). One pass over the messages for the
    names; the damage from ``events``; under DeepSeek's pairing by count, the judge's count
    over the messages for the pairing's problems."""
    change = _quickmend._change
    code = "result_name_mismatch"
    named = profile.results_need_name
    name_problem: Any = (
        _quickmend._maker(
            profile, profile.checks[code], code, "tool message without the called function's name"
        )
        if named
        else None
    )
    at_changes: dict[int, list[tuple[int, Change]]] = {}
    at_problems: dict[int, list[tuple[int, Problem]]] = {}
    kinds: dict[int, str] = {}  # a tool message met as damage -> what it was

    def add_change(index: int, step: int, made: Change) -> None:
        at_changes.setdefault(index, []).append((step, made))

    by_count = profile.pairing == "count"  # (DeepSeek) the judge counts, the planner pairs ids

    def add_problem(code: str, index: int, text: str, call_id: str | None, **fields: Any) -> None:
        """The judge's pairing problem at ``index``, unless it counts results (then its
        count over the whole history, below)."""
        if not by_count:
            found = _rare(profile, code, index, text, call_id, **fields)
            at_problems.setdefault(index, []).append((_PAIRING, found))

    last_moved: dict[int, int] = {}  # calling message -> the last result moved to it
    moved_to: set[tuple[int, str]] = set()  # (calling message, call id) a repeat moved to
    waiting: list[tuple[int, str]] = []  # (calling message, call id) placeheld
    for event in events:
        kind, index = event[0], event[1]
        if kind == "orphan" or kind == "unknown":
            call_id = event[2]
            kinds[index] = kind
            if kind == "orphan":
                text, found_code = (
                    "tool result without a calling message before it",
                    "orphan_result",
                )
            else:
                text, found_code = "tool result answers no open call", "unknown_result_id"
            add_problem(found_code, index, text, call_id)
            made = change("dropped_orphan_result", index, _ORPHAN_DROPPED, (call_id,))
            add_change(index, _RESULTS, made)
        elif kind == "repeat" or kind == "twice":
            call_id, first = event[2], event[3]
            kinds[index] = kind
            add_problem("duplicate_result", index, "call answered twice", call_id, first=first)
            if kind == "repeat":
                made = change("dropped_duplicate_result", index, _REPEAT_DROPPED, (call_id,))
                add_change(index, _RESULTS, made)
            else:
                caller = event[4]
                moved_to.add((caller, call_id))
                last_moved[caller] = index
                text = f"moved next to its call in message {caller}"
                add_change(index, _MOVED_RESULT, change("moved_result", index, text, (call_id,)))
        elif kind == "late":
            call_id, caller = event[2], event[3]
            kinds[index] = kind
            last_moved[caller] = index
            add_problem("orphan_result", index, _NO_CALLER, call_id)
            text = f"moved next to its call in message {caller}"
            add_change(index, _MOVED_RESULT, change("moved_result", index, text, (call_id,)))
        elif kind == "bridge":
            made = change("inserted_message", index, _BRIDGED, ())
            add_change(index, _BRIDGE_STEP, made)
        elif kind == "missing":
            missing = tuple(sorted(event[2]))
            text = f"{len(missing)} call(s) without a result"
            add_problem("missing_result", index, text, None, ids=missing)
            waiting += ((index, call_id) for call_id in event[3])
        elif kind == "again":  # (ids unique in the request) a later call of an id
            call_id, slot = event[2], event[3]
            found = _rare(
                profile, "duplicate_call_id", index, "two calls share one id", call_id, slot=slot
            )
            at_problems.setdefault(index, []).append((_CALL_IDS, found))
        else:  # "renewed": a placeheld call's new id, or a later call's of a kept id
            old, new = event[2], event[3]
            text = _REFUSED if event[4] else _RENEWED
            add_change(index, _IDS, change("rewrote_call_id", index, text, (old, new)))
    if by_count:  # the judge's pairing by count over the whole history (the planner's ids)
        counted = Report(profile)
        pair_by_count(
            [message["role"] for message in messages],
            lambda index: messages[index].get("tool_calls"),
            lambda index: tuple(call["id"] for call in messages[index]["tool_calls"]),
            counted,
        )
        for found in counted.problems:
            at_problems.setdefault(found.index, []).append((_PAIRING, found))
    for index, call_id in waiting:  # (in slot order), but those a repeat was moved to
        if (index, call_id) not in moved_to:
            made = change("answered_missing_call", index, _ANSWERED, (call_id,))
            add_change(index, _RESULTS, made)
    for caller, last in last_moved.items():
        for index in range(caller + 1, last):
            if messages[index]["role"] != "tool":
                add_change(index, _MOVED_MESSAGE, change("moved_message", index, _MOVED, ()))
    changes: list[Change] = []
    problems: list[Problem] = []
    names: dict[str, str] = {}  # the latest calling message's calls -> their function names
    after_tool = (profile.role_successors or {}).get(TOOL)
    role_kinds = _openai_chat._KINDS
    previous = ""
    for index, message in enumerate(messages):
        role = message["role"]
        if after_tool is not None:
            if previous == "tool" and role != "tool" and role_kinds[role] not in after_tool:
                kind_now = role_kinds[role]
                text = f"{kind_now} right after {TOOL}"
                found = _rare(profile, "role_order", index, text, None, role=kind_now, prev=TOOL)
                at_problems.setdefault(index, []).append((_ROLE_ORDER, found))
            previous = role
        if role == "tool":
            call_id = message["tool_call_id"]
            kind = kinds.get(index)
            if kind is None:  # (nearly every result)
                if by_count and index in at_problems:  # (a result past its block's count)
                    problems += [found for _, found in at_problems[index]]
                if not named:
                    continue
                name = names[call_id]
                if message.get("name") != name:
                    problems.append(name_problem(index, call_id, 0))
                    changes.append(_named(change, index, call_id, name))
                continue
            if named and kind in ("repeat", "twice", "late"):
                name = names[call_id]
                if message.get("name") != name:
                    if kind != "late":
                        found = name_problem(index, call_id, 0)
                        at_problems.setdefault(index, []).append((_NAME_PROBLEM, found))
                    if kind != "repeat":
                        add_change(index, _NAME, _named(change, index, call_id, name))
        elif role == "assistant":
            tool_calls = message.get("tool_calls")
            if tool_calls:
                names = {call["id"]: call["function"]["name"] for call in tool_calls}
        if index in at_changes:
            changes += [made for _, made in sorted(at_changes[index], key=_step)]
        if index in at_problems:
            problems += [found for _, found in sorted(at_problems[index], key=_step)]
    return changes, problems


# the steps of the judge (problems) and of the planner (changes) at one message, in order
_PAIRING, _NAME_PROBLEM, _CALL_IDS, _ROLE_ORDER = range(4)
_RESULTS, _MOVED_RESULT, _MOVED_MESSAGE, _IDS, _NAME, _BRIDGE_STEP = range(6)


def _step(entry: tuple[int, Any]) -> int:
    return entry[0]


def _named(change: Callable[..., Change], index: int, call_id: str, name: str) -> Change:
    made: Change = change(
        "filled_result_name", index, f"function name {name!r} taken from the call", (call_id,)
    )
    return made


def _rare(
    profile: Profile,
    code: str,
    index: int,
    message: str,
    call_id: str | None,
    **fields: Any,
) -> Problem:
    """The problem :class:`toolmend._findings.Report` writes (a damage's: a few a history)."""
    report = Report(profile)
    if call_id is not None:
        fields = {"id": call_id, "ids": (call_id,), **fields}
    report.add(code, index, message, **fields)
    return report.problems[0]


_NO_CALLER = "tool result without a calling message before it"
_MOVED = "moved after the tool results it interrupted"
_RENEWED = "call id another call has, for the call the placeholder answers"
_REFUSED = "call id the provider would refuse"
