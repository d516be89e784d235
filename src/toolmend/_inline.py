"""An OpenAI-shaped history bound for Mistral repaired in one walk (issue 32).

Mistral's rules pair each result with the latest calling message and refuse every ``call_...``
id, so a damaged history's repair went scan -> ranges -> stretches -> assembly, each part near
0.2x ``json.dumps`` at 1k messages, and an intact one took a pass listing the refused ids and a
second walk copying them. :func:`walk_mend` checks each message as the one-pass check of an
intact history does (``formats/_openai_cross.py``, mode ``"ids"``), copies it with the
request's new ids (made in history order, as the planner's id step makes them) and mends the
common damages where it meets them: a calling message's calls left without results
(placeholders after its results), a result sent twice (dropped, or moved to the first copy of a
calling message sent twice), a result no call of the latest calling message waits for
(dropped), a user message inside or right after a block of results (the late results moved
next to their call, the assistant bridge before the user message). Anything else, or damage in
the history's first or last stretch, answers None and the other paths run unchanged.

The walk keeps only a tuple for each damage it meets; :func:`walk_report` writes the changes
and problems from them when the report is first read (:meth:`toolmend.Repair._deferred`).
Property tests (``tests/test_damaged_speed.py``) hold the messages and the report to the whole
history's repair.
"""

from __future__ import annotations

from collections.abc import Sequence
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
from ._skeleton import ASSISTANT, TOOL
from .formats import Format, _openai_chat
from .formats._openai_chat import FORMAT, same_result
from .formats._openai_cross import cross_rules, opening_ok
from .profiles import Profile, compiled, get_profile

__all__ = ["walk_mend", "walk_report", "walks"]

_WALKED: dict[int, tuple[Profile, bool]] = {}
"""``id(profile)`` -> (the profile, whether :func:`walk_mend` answers for it)."""


def walks(module: Format, profile: Profile, policy: Policy) -> bool:
    """Whether :func:`walk_mend` answers for ``module``'s histories under ``profile`` and
    ``policy``: OpenAI chat messages, Mistral's own profile (its rules are the ones the walk
    checks, line for line), the default repairs."""
    if (
        module is not FORMAT
        or policy.missing_result != "placeholder"
        or policy.orphan_result != "drop"
        or policy.frontier == "keep"
    ):
        return False
    entry = _WALKED.get(id(profile))
    if entry is None or entry[0] is not profile:
        mistral = get_profile("mistral")
        ok = profile == mistral and cross_rules(profile) is not None
        if len(_WALKED) >= 64:
            _WALKED.clear()
        entry = _WALKED[id(profile)] = (profile, ok)
    return entry[1]


_NO_SYSTEM = frozenset({"assistant", "tool"})
"""The roles after which Mistral's role order (``profiles/_mistral.py``) takes no system
message; it takes an assistant message after any, a result after an assistant message or a
result, a user message after any but a result (the planner's bridge goes between)."""


def walk_mend(
    messages: Sequence[Any], profile: Profile, policy: Policy
) -> tuple[list[Any], list[tuple[Any, ...]]] | None:
    """The messages ``toolmend.repair(messages, provider=profile, policy=policy)`` sends, for a
    history :func:`walks` says the walk answers for, made in one walk, and the damage it
    mended, for :func:`walk_report` (none: only the ids rewritten, as
    :func:`toolmend._quickmend.quick_mend` rewrites them); None where the walk cannot tell
    (anything but the common damages between the first and the last stretch, ids in the
    provider's form, a new id another call of the request may hold): the other paths decide
    then."""
    try:
        walked = _walk(messages, profile, policy, False)
        if walked is _CAREFUL:  # (an id's tail is no new id: each checked as it is made)
            walked = _walk(messages, profile, policy, True)
    except (KeyError, TypeError, AttributeError):
        return None  # (a field missing or of another type: the range path reports it)
    return None if walked is _CAREFUL else walked


_CAREFUL: Any = object()
"""What :func:`_walk` answers, not ``careful``, where a new id it made of a seed's tail is not
the one :func:`toolmend._plan_ids.fresh_id` makes: the tail not nine letters and digits, or
another call's new id."""


def _walk(
    messages: Sequence[Any], profile: Profile, policy: Policy, careful: bool
) -> tuple[list[Any], list[tuple[Any, ...]]] | None:
    """:func:`walk_mend`; not ``careful``, each seed's first new id is its tail, checked for
    all the calls at once at the end (:data:`_CAREFUL` where one is not the planner's)."""
    rules = cross_rules(profile)
    if rules is None or len(messages) < 3 or not opening_ok(messages, rules):
        return None
    last = messages[-1]
    if type(last) is not dict or last.get("role") not in ("user", "tool"):
        return None
    accepted = compiled(profile.call_id_pattern)
    length = profile.call_id_length
    if accepted is None or length is None:
        return None
    in_form = accepted.fullmatch
    name_ok = compiled(profile.function_name_pattern)
    placeholder_text = policy.placeholder
    out: list[Any] = []
    append = out.append
    made: set[str] = set()  # the new ids made (but ``new_ids[synced:]`` unless ``careful``)
    new_ids: list[str] = []  # (unless ``careful``) every new id, in order of making
    synced = 0
    next_try: dict[str, int] = {}  # seed -> the counter after its last id (``fresh_id``)
    calls_of: dict[str, int] = {}  # a seed of two calls or more -> how many
    names: set[str] = set()
    dropped: list[str] = []  # the ids of the results dropped as orphans
    repeats: list[str] = []  # the ids of the results dropped as repeats
    pending: dict[str, str] = {}  # the latest calling message's unanswered calls -> new ids
    answered: dict[str, int] = {}  # its answered calls -> the result that answered
    owner = -1  # the latest calling message (-1: assistant text since, or none)
    open_block = False  # its results come now, nothing between them and it
    held: list[Any] = []  # user messages inside its block, before results still to come
    late: list[Any] = []  # the results after them (moved next to their call)
    # a calling message whose calls got placeholders, right before the next calling message:
    # where its placeholders start in ``out``, its calls still placeheld (id -> new id), the
    # results moved to it from the next one's block, and that message
    placed, moves_to, moved_from = -1, -1, -1
    events: list[tuple[Any, ...]] = []  # the damage met, in message order: see ``walk_report``
    placeheld: dict[str, str] = {}
    moved: list[Any] = []
    twice: list[str] = []  # the ids of the results so moved
    first_event = last_event = -1
    first_assistant = -1
    last_assistant = -1
    for index, message in enumerate(messages):
        if type(message) is not dict:
            return None
        role = message["role"]
        if role == "tool":
            call_id = message["tool_call_id"]
            if message["content"] is None:
                return None
            new_id = pending.pop(call_id, None)
            if new_id is not None and open_block and type(call_id) is str:  # (the common case)
                answered[call_id] = index
                copy = message.copy()
                copy["tool_call_id"] = new_id
                append(copy)
                continue
            if type(call_id) is not str or not call_id:
                return None
            if owner < 0:  # no calling message since the last assistant text: an orphan
                dropped.append(call_id)
                events.append(("orphan", index, call_id))
                if first_event < 0:
                    first_event = index
                last_event = index
                continue
            if new_id is None and not open_block:  # (after a user message in or after it)
                first = answered.get(call_id)
                if first is None:
                    dropped.append(call_id)  # (an id of no call of the block: an orphan)
                    events.append(("unknown", index, call_id))
                elif same_result(messages[first], message):
                    repeats.append(call_id)
                    events.append(("repeat", index, call_id, first))
                else:
                    return None  # (another text: the planner's strength test)
                last_event = index
                continue
            if held:  # (a user message came inside the block)
                copy = message.copy()
                copy["tool_call_id"] = new_id
                late.append(copy)
                answered[call_id] = index
                events.append(("late", index, call_id, owner))
                continue
            if new_id is None:
                first = answered.get(call_id)
                if first is None:  # (an id of no call of the block: an orphan)
                    dropped.append(call_id)
                    events.append(("unknown", index, call_id))
                elif not same_result(messages[first], message):
                    return None  # (another text: the planner's strength test)
                elif owner == moves_to and call_id in placeheld:
                    # a calling message sent twice, this result too: the pairing gives the
                    # repeat to the first message's call, left open, and it goes there
                    if calls_of.get(call_id) != 2:
                        return None
                    copy = message.copy()
                    copy["tool_call_id"] = placeheld.pop(call_id)
                    moved.append(copy)  # (laid out in ``out`` once the moves end: _settle)
                    twice.append(call_id)
                    events.append(("twice", index, call_id, first, moved_from))
                else:
                    repeats.append(call_id)
                    events.append(("repeat", index, call_id, first))
                last_event = index
                if first_event < 0:
                    first_event = index
                continue
            return None  # (not reached: a result of an open block is the common case)
        if role == "user":
            if "tool_calls" in message or message["content"] is None:
                return None
            if owner >= 0 and (held or (open_block and pending)):
                if not held:
                    events.append(("bridge", index))  # (before it, once the block is laid out)
                held.append(message)  # (inside the block: results may come after it)
                open_block = False
                last_event = index
                if first_event < 0:
                    first_event = owner
                continue
            if out and out[-1]["role"] == "tool":
                append(_BRIDGE.copy())
                events.append(("bridge", index))
                last_event = index
                if first_event < 0:
                    first_event = index
            open_block = False
            append(message)
            continue
        if role == "system" or role == "developer":
            if "tool_calls" in message or message["content"] is None:
                return None
            if held or (open_block and pending) or (out and out[-1]["role"] in _NO_SYSTEM):
                return None
            open_block = False
            append(message)
            continue
        if role != "assistant" or "function_call" in message:
            return None
        # an assistant message: the latest calling message's block ends
        if held or pending:
            if moved:
                _settle(out, placed, moved, placeheld, placeholder_text)
            if held:
                out.extend(late)
                late = []
            if pending:  # (the judge's missing results: those still waiting here)
                events.append(("missing", owner, tuple(pending)))
            placed = len(out)
            moved_from = owner
            placeheld = pending  # (until the next calling message's results end)
            moved = []
            for new_id in pending.values():  # (in slot order: the message's order)
                append(_placeholder(new_id, placeholder_text))
            moves_to = -1 if held else index  # (this message, if it calls)
            if held:
                append(_BRIDGE.copy())
                out.extend(held)
                held = []
            last_event = index - 1
            if first_event < 0:
                first_event = owner
            pending = {}
        if first_assistant < 0:
            first_assistant = index
        last_assistant = index
        tool_calls = message.get("tool_calls")
        if tool_calls is None:
            if not message["content"]:
                return None
            owner = -1
            open_block = False
            append(message)
            continue
        if type(tool_calls) is not list or not tool_calls:
            return None
        answered = {}
        calls = []
        for call in tool_calls:
            if type(call) is not dict or call["type"] is None:
                return None
            call_id = call["id"]
            function = call["function"]
            if (
                type(call_id) is not str
                or not call_id
                or call_id in pending
                or type(function) is not dict
            ):
                return None
            name = function["name"]
            if type(function["arguments"]) is not str or type(name) is not str or not name:
                return None
            names.add(name)
            if len(call_id) == length and in_form(call_id) is not None:
                return None  # (an id kept: a new id may be another call's)
            if call_id in next_try:  # (a seed met before: its next try)
                calls_of[call_id] = calls_of.get(call_id, 1) + 1
                made.update(new_ids[synced:])
                new_id = fresh_id(call_id, profile, made, next_try)
                new_ids.append(new_id)
                synced = len(new_ids)
            elif careful:
                tail = call_id[-length:]
                if tail in made or len(tail) != length or not tail.isascii() or not tail.isalnum():
                    new_id = fresh_id(call_id, profile, made, next_try)
                else:
                    new_id = tail
                    made.add(tail)
                    next_try[call_id] = 1
            else:  # (each seed's tail: checked for all of them at the end)
                new_id = call_id[-length:]
                next_try[call_id] = 1
                new_ids.append(new_id)
            pending[call_id] = new_id
            copy = call.copy()
            copy["id"] = new_id
            calls.append(copy)
        copy = message.copy()
        copy["tool_calls"] = calls
        append(copy)
        owner = index
        open_block = True
    if held or pending or (first_event < 0 and not next_try):
        return None  # (waiting at the end: the newest input's rules; or nothing to change)
    if moved:
        _settle(out, placed, moved, placeheld, placeholder_text)
    if first_event >= 0 and (first_event < first_assistant or last_event >= last_assistant):
        return None  # (damage in the first or last stretch: the range path's rules there)
    if name_ok is not None and not all(map(name_ok.fullmatch, names)):
        return None
    for call_id in dropped:  # (a result another call answers: the whole history decides)
        if call_id in next_try:
            return None
    for call_id in repeats:
        if call_id in calls_of:
            return None
    for call_id in twice:
        if calls_of[call_id] != 2:
            return None
    if not careful:  # (what ``tail_ids`` checks of the tails, here of every new id)
        joined = "".join(new_ids)
        if (
            len(joined) != length * len(new_ids)
            or not joined.isascii()
            or not joined.isalnum()
            or len(set(new_ids)) != len(new_ids)
        ):
            return _CAREFUL  # type: ignore[no-any-return]
    return out, events


def _settle(
    out: list[Any], placed: int, moved: list[Any], placeheld: dict[str, str], text: str
) -> None:
    """Lay out the results moved to a calling message sent twice (``moved``, in the order
    they came) and the placeholders of its calls still unanswered (``placeheld``, in slot
    order) where its placeholders went at ``placed`` in ``out``: once, when the moves end (a
    rewrite a move was quadratic in a block of thousands of results sent twice)."""
    out[placed : placed + len(moved) + len(placeheld)] = [
        *moved,
        *(_placeholder(new_id, text) for new_id in placeheld.values()),
    ]


def _placeholder(new_id: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": new_id, "content": text}


_BRIDGE = {"role": "assistant", "content": ASSISTANT_BRIDGE_TEXT}


def walk_report(
    messages: Sequence[Any],
    repaired: Sequence[Any],
    profile: Profile,
    events: list[tuple[Any, ...]],
) -> tuple[list[Change], list[Problem]]:
    """The changes and problems of the repair :func:`walk_mend` made of ``messages``
    (``repaired``, with the damage ``events`` it met), as the whole history's planner and
    judge report them: in message order, and at one message in the order of their steps (the
    judge: the pairing, the calls' ids, the result's id, the role order; the planner: answered
    and dropped results, moved results, moved messages, the ids, the bridges). One pass over
    the messages for the ids and the role order; the damage from ``events``."""
    code = "call_id_format"
    result_code = "result_id_format" if "result_id_format" in profile.checks else code
    call_problem = _quickmend._maker(
        profile, profile.checks[code], code, "call id outside the provider's pattern"
    )
    result_problem = _quickmend._maker(
        profile,
        profile.checks[result_code],
        result_code,
        "result id outside the provider's pattern",
    )
    new_ids = iter(
        [
            call["id"]
            for message in repaired
            if message["role"] == "assistant"
            for call in message.get("tool_calls") or ()
        ]
    )
    detail = "call id the provider would refuse"
    accepted = compiled(profile.call_id_pattern)
    assert accepted is not None  # (Mistral's, :func:`walks`)
    in_form = accepted.fullmatch
    length = profile.call_id_length
    damage_changes, damage_problems = _damage_report(messages, profile, events)
    marked = damage_changes.keys() | damage_problems.keys()
    changes: list[Change] = []
    problems: list[Problem] = []
    successors = profile.role_successors or {}
    kinds = _openai_chat._KINDS
    change = _quickmend._change
    allowed: Any = ()  # the kinds that may follow the message before (the first: any)
    for index, message in enumerate(messages):
        kind = kinds[message["role"]]
        if index not in marked and (not allowed or kind in allowed):  # (nearly every message)
            allowed = successors.get(kind)
            if kind == ASSISTANT:
                for slot, call in enumerate(message.get("tool_calls") or ()):
                    old = call["id"]
                    changes.append(change("rewrote_call_id", index, detail, (old, next(new_ids))))
                    problems.append(call_problem(index, old, slot))
            elif kind == TOOL and (
                len(result_id := message["tool_call_id"]) != length or not in_form(result_id)
            ):
                problems.append(result_problem(index, result_id, 0))
            continue
        at_changes: list[tuple[int, Change]] = list(damage_changes.get(index, ()))
        at_problems: list[tuple[int, Problem]] = list(damage_problems.get(index, ()))
        if kind == ASSISTANT:
            for slot, call in enumerate(message.get("tool_calls") or ()):
                old = call["id"]
                made = change("rewrote_call_id", index, detail, (old, next(new_ids)))
                at_changes.append((_IDS, made))
                at_problems.append((_CALL_IDS, call_problem(index, old, slot)))
        elif kind == TOOL and (
            len(result_id := message["tool_call_id"]) != length or not in_form(result_id)
        ):
            found = result_problem(index, result_id, 0)  # (an orphan's id may be in the form)
            at_problems.append((_RESULT_ID, found))
        if allowed and kind not in allowed:
            previous = kinds[messages[index - 1]["role"]]
            text = f"{kind} right after {previous}"
            found = _rare(profile, "role_order", index, text, role=kind, prev=previous)
            at_problems.append((_ROLE_ORDER, found))
        allowed = successors.get(kind)
        changes += [made for _, made in sorted(at_changes, key=_step)]
        problems += [found for _, found in sorted(at_problems, key=_step)]
    return changes, problems


# the steps of the judge (problems) and of the planner (changes) at one message, in order
_PAIRING, _CALL_IDS, _RESULT_ID, _ROLE_ORDER = range(4)
_RESULTS, _MOVED_RESULT, _MOVED_MESSAGE, _IDS, _BRIDGE_STEP = range(5)


def _step(entry: tuple[int, Any]) -> int:
    return entry[0]


def _damage_report(
    messages: Sequence[Any], profile: Profile, events: list[tuple[Any, ...]]
) -> tuple[dict[int, list[tuple[int, Change]]], dict[int, list[tuple[int, Problem]]]]:
    """The changes and problems of the damage of ``events`` (:func:`walk_mend`'s), by message
    index, each with its step (see :func:`walk_report`)."""
    changes: dict[int, list[tuple[int, Change]]] = {}
    problems: dict[int, list[tuple[int, Problem]]] = {}
    moved_to: set[tuple[int, str]] = set()  # (calling message, call id) a result moved to
    last_late: dict[int, int] = {}  # calling message -> its last result moved to it
    waiting: list[tuple[int, str]] = []  # (calling message, call id) left unanswered
    change = _quickmend._change

    def problem(index: int, code: str, message: str, **fields: Any) -> None:
        found = _rare(profile, code, index, message, **fields)
        problems.setdefault(index, []).append((_PAIRING, found))

    for event in events:
        kind, index = event[0], event[1]
        if kind == "orphan" or kind == "unknown":
            call_id = event[2]
            if kind == "orphan":
                text, code = "tool result without a calling message", "orphan_result"
            else:
                text, code = "tool result answers no open call", "unknown_result_id"
            problem(index, code, text, id=call_id, ids=(call_id,))
            made = change("dropped_orphan_result", index, _ORPHAN_DROPPED, (call_id,))
            changes.setdefault(index, []).append((_RESULTS, made))
        elif kind == "repeat" or kind == "twice":
            call_id, first = event[2], event[3]
            text = "call answered twice"
            problem(index, "duplicate_result", text, id=call_id, ids=(call_id,), first=first)
            if kind == "repeat":
                made = change("dropped_duplicate_result", index, _REPEAT_DROPPED, (call_id,))
                changes.setdefault(index, []).append((_RESULTS, made))
            else:
                caller = event[4]
                moved_to.add((caller, call_id))
                last_late[caller] = index
                text = f"moved next to its call in message {caller}"
                made = change("moved_result", index, text, (call_id,))
                changes.setdefault(index, []).append((_MOVED_RESULT, made))
        elif kind == "late":
            call_id, caller = event[2], event[3]
            last_late[caller] = index
            made = change(
                "moved_result", index, f"moved next to its call in message {caller}", (call_id,)
            )
            changes.setdefault(index, []).append((_MOVED_RESULT, made))
        elif kind == "bridge":
            made = change("inserted_message", index, _BRIDGED, ())
            changes.setdefault(index, []).append((_BRIDGE_STEP, made))
        else:  # "missing": the calls still waiting at the next assistant message
            missing = tuple(sorted(event[2]))
            problem(
                index, "missing_result", f"{len(missing)} call(s) without a result", ids=missing
            )
            waiting += ((index, call_id) for call_id in event[2])
    for index, call_id in waiting:  # (in slot order), but those a repeat was moved to
        if (index, call_id) not in moved_to:
            made = change("answered_missing_call", index, _ANSWERED, (call_id,))
            changes.setdefault(index, []).append((_RESULTS, made))
    between: set[int] = set()  # the messages a moved result went before
    for caller, last in last_late.items():
        between.update(i for i in range(caller + 1, last) if messages[i]["role"] != "tool")
    for index in sorted(between):
        made = change("moved_message", index, _MOVED_MESSAGE_TEXT, ())
        changes.setdefault(index, []).append((_MOVED_MESSAGE, made))
    return changes, problems


_MOVED_MESSAGE_TEXT = "moved after the tool results it interrupted"


def _rare(profile: Profile, code: str, index: int, message: str, **fields: Any) -> Problem:
    """The problem :class:`toolmend._findings.Report` writes (a damage's: a few a history;
    every code the walk meets is one Mistral's profile reports, :func:`walks`)."""
    report = Report(profile)
    report.add(code, index, message, **fields)
    return report.problems[0]
