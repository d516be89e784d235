"""The repairs a cross-family target makes on nearly every message of a valid history, without
the full read, judge and plan: Gemini's function names on tool messages, Mistral's call ids.

An OpenAI-shaped history bound for Gemini (outside LiteLLM, whose converter names the results
itself) needs every tool message to carry its call's function name; one bound for Mistral needs
every ``call_...`` id rewritten into nine alphanumerics, on the call and on its result. Nothing
else is wrong in such a history, but the full path read, judged and planned all of it to find
edits one pass can list, at five to nine times the cost of ``json.dumps`` (issue 32).

:func:`quick_mend` asks the format for those edits (``Format.quick_fixes``: None unless the
history passes every other rule of the profile) and makes exactly what the full path would:
the same messages (a shallow copy of each changed message, the others the caller's own
objects), the same changes and the same problems, in the same order; ids come from
:func:`toolmend._plan_ids.fresh_id`, as the planner's do. Property tests hold it to the full path
(``tests/test_fastpath.py``).
"""

from __future__ import annotations

import itertools
import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

from ._edits import Bridge, Keep, Placeholder, Plan
from ._findings import Pending, Report
from ._jsontext import NonFiniteNumberError, UnwritableValueError
from ._plan_ids import fresh_id, id_test
from ._planstate import ASSISTANT_BRIDGE_TEXT
from ._policy import Policy
from ._report import Builder, Change, Problem
from ._rules import answer_result, missing_results, pair_by_count
from ._skeleton import ASSISTANT, SYSTEM, TOOL, USER, RequestIds
from .formats import Format, _openai_chat
from .profiles import Check, Profile, compiled

__all__ = [
    "fresh_ids",
    "mended_range",
    "names_report",
    "quick_mend",
    "quick_names",
    "rewrite_stretch",
    "stretch_report",
    "tail_ids",
]

Mended = tuple[list[Any], list[Change], list[Problem]]
Quick = tuple[list[Any], Builder]
"""The repaired list, and the function that builds its changes and problems (the report is
built on first read: :meth:`toolmend.Repair._deferred`)."""


def quick_mend(
    module: Format, messages: Sequence[Any], profile: Profile, *, vouched_against: bool = False
) -> Quick | None:
    """The repaired list of ``toolmend.repair(messages, provider=profile)`` and the builder of
    its changes and problems, when the only edits it makes are result names or call ids; None
    when the full path must decide (anything else is wrong, or the history is valid).
    ``vouched_against``: ``Format.quick_valid`` failed on it (see ``Format.quick_fixes``)."""
    fixes = module.quick_fixes(messages, profile, vouched_against=vouched_against)
    if fixes is None:
        return None
    names, calls, results, kept = fixes
    if names:
        return _fill_names(messages, profile, names)
    return _rewrite_ids(messages, profile, calls, results, kept)


def quick_names(module: Format, part: Sequence[Any], profile: Profile, base: int) -> Mended | None:
    """:func:`quick_mend` for one range of a damaged history, ``part`` starting at message
    ``base`` of it (the indexes reported are the history's): the result names the range
    lacks when nothing else is wrong in it; None when the full path must read, judge and
    plan it. Names only: a call id rewrite takes ids from the whole request (Mistral)."""
    fixes = module.quick_fixes(part, profile, opening=base == 0)
    if fixes is None or not fixes[0]:
        return None
    named = _fill_names(part, profile, fixes[0], base)
    if named is None:
        return None
    changes, problems = named[1]()
    return named[0], list(changes), list(problems)


def names_report(profile: Profile, names: list[Any], base: int = 0) -> Builder | None:
    """The builder of the changes and problems of filling the names of ``names`` (tool message
    index, call id, function name, flat: three items a result; ``filled_result_name``, reported as
    ``result_name_mismatch``), as ``name_results`` plans them, naming message ``base + index``;
    None when the profile does not report them (the full path then finds nothing and changes
    nothing). For the names ``Format.named_spans`` filled outside a damaged history's
    ranges."""
    code = "result_name_mismatch"
    check = profile.checks.get(code)
    if check is None:
        return None

    def build() -> tuple[list[Change], list[Problem]]:
        problem = _maker(profile, check, code, "tool message without the called function's name")
        indexes, call_ids = names[0::3], names[1::3]
        changes = [
            _change(
                "filled_result_name",
                base + index,
                f"function name {name!r} taken from the call",
                (call_id,),
            )
            for index, call_id, name in zip(indexes, call_ids, names[2::3], strict=True)
        ]
        problems = [
            problem(base + index, call_id, 0)
            for index, call_id in zip(indexes, call_ids, strict=True)
        ]
        return changes, problems

    return build


def _fill_names(
    messages: Sequence[Any], profile: Profile, names: list[Any], base: int = 0
) -> Quick | None:
    """Each tool message of ``names`` (index, call id, function name, flat) gets its call's function
    name in a copy of ``messages``, and the builder of the changes and problems
    (:func:`names_report`); None when the profile does not report them."""
    build = names_report(profile, names, base)
    if build is None:
        return None
    repaired = list(messages)
    for index, name in zip(names[0::3], names[2::3], strict=True):
        copy = messages[index].copy()  # (a plain dict: the one-pass test read it as one)
        copy["name"] = name
        repaired[index] = copy
    return repaired, build


def _rewrite_ids(
    messages: Sequence[Any],
    profile: Profile,
    calls: list[Any],
    results: list[int],
    kept: list[str],
) -> Quick | None:
    """Each call of ``calls`` (message index, slot, id, flat) gets a new id in the profile's
    form and its ``results`` (tool message index, position of the call, flat) carry it
    (``rewrote_call_id``, reported as ``call_id_format`` on the call and on each result), as
    ``rewrite_ids`` plans it: the same seeds, the same ids taken (every id of the request: the
    refused and the ``kept``), in the same order."""
    code = "call_id_format"
    check = profile.checks.get(code)
    result_code = "result_id_format" if "result_id_format" in profile.checks else code
    result_check = profile.checks.get(result_code)
    if check is None or result_check is None:
        return None
    indexes, slots, seeds = calls[0::3], calls[1::3], calls[2::3]
    length = profile.call_id_length
    found = None
    if length is not None and _tails_never_refused(profile):
        # (no refused id is a tail: only the kept ids can be one)
        found = tail_ids(seeds, [seed[-length:] for seed in seeds], length, set(kept), None)
    if found is not None:
        new_ids = found
    else:
        taken = set(seeds)
        taken.update(kept)
        new_ids = fresh_ids(seeds, profile, taken)
    repaired = list(messages)
    copy_index = -1
    for index, slot, new in zip(indexes, slots, new_ids, strict=True):
        if index != copy_index:
            copy = repaired[index] = dict(messages[index])
            tool_calls = copy["tool_calls"] = list(copy["tool_calls"])
            copy_index = index
        call = tool_calls[slot] = dict(tool_calls[slot])
        call["id"] = new
    result_indexes, positions = results[0::2], results[1::2]
    for index, position in zip(result_indexes, positions, strict=True):
        copy = repaired[index] = dict(messages[index])
        copy["tool_call_id"] = new_ids[position]

    def build() -> tuple[list[Change], list[Problem]]:
        """The changes in call order; the problems in message order: each call message's
        results come after it and before the next call message (the format's pass checked
        that), so the results before each call message are reported first, nothing sorted."""
        call_problem = _maker(profile, check, code, "call id outside the provider's pattern")
        result_problem = _maker(
            profile, result_check, result_code, "result id outside the provider's pattern"
        )
        detail = "call id the provider would refuse"
        changes = [
            _change("rewrote_call_id", index, detail, (old, new))
            for index, old, new in zip(indexes, seeds, new_ids, strict=True)
        ]
        problems: list[Problem] = []
        next_result, count = 0, len(result_indexes)
        for index, slot, old in zip(indexes, slots, seeds, strict=True):
            while next_result < count and result_indexes[next_result] < index:
                at = result_indexes[next_result]
                problems.append(result_problem(at, seeds[positions[next_result]], 0))
                next_result += 1
            problems.append(call_problem(index, old, slot))
        rest = zip(result_indexes[next_result:], positions[next_result:], strict=True)
        for at, position in rest:
            problems.append(result_problem(at, seeds[position], 0))
        return changes, problems

    return repaired, build


def rewrite_stretch(
    messages: Sequence[Any],
    profile: Profile,
    low: int,
    high: int,
    calls: list[Any],
    results: list[int],
    request: RequestIds,
    made: tuple[list[Any], list[str], list[str]] | None = None,
) -> tuple[list[Any], list[str]]:
    """A sound stretch ``messages[low:high]`` of a damaged history between its damaged ranges
    (Mistral), its only fault call ids outside the profile's form: each call of ``calls``
    (message index, slot, id, flat) gets a new id, and each tool message of ``results``
    (index, the call's position among ``calls``, flat) its call's, as the planner's edits
    make them (a shallow copy of each changed message and call). The ids come from
    ``request``, the whole request's rewrite shared with the other stretches and the damaged
    ranges, in history order (see :class:`toolmend._skeleton.RequestIds`). Returns the
    stretch and the new ids, in call order; :func:`stretch_report` builds its changes and
    problems.

    ``made``: the stretch already copied with new ids, the refused ids (in call order) and
    those new ids (each refused id's tail, from ``Format.request_id_fixes``'s walk): taken as
    it is where the request's ids are those (:func:`tail_ids`: the common case), else the
    stretch is made again."""
    length = profile.call_id_length
    if made is not None and length is not None and made[1]:
        found = tail_ids(made[1], made[2], length, request.taken, request.next_try)
        if found is not None:
            return made[0], found
    new_ids = fresh_ids(calls[2::3], profile, request.taken, request.next_try)
    part = list(messages[low:high])
    copy_index = -1
    for index, slot, new in zip(calls[0::3], calls[1::3], new_ids, strict=True):
        if index != copy_index:
            copy = part[index - low] = dict(messages[index])
            tool_calls = copy["tool_calls"] = list(copy["tool_calls"])
            copy_index = index
        call = tool_calls[slot] = dict(tool_calls[slot])
        call["id"] = new
    for index, position in zip(results[0::2], results[1::2], strict=True):
        copy = part[index - low] = dict(messages[index])
        copy["tool_call_id"] = new_ids[position]
    return part, new_ids


def stretch_report(
    profile: Profile,
    calls: list[Any],
    results: list[int],
    new_ids: list[str] | None,
) -> tuple[list[Change], list[Problem]]:
    """The changes (``rewrote_call_id``, in call order; none when ``new_ids`` is None, the
    stretch not rewritten) and the problems (``call_id_format`` on each call, in slot order,
    and on each result under the profile's result code, in message order: each call message's
    results come right after it) of a stretch of :func:`rewrite_stretch` (``calls`` and
    ``results`` flat, as there), as the whole history's planner and judge report them."""
    code = "call_id_format"
    check = profile.checks[code]
    result_code = "result_id_format" if "result_id_format" in profile.checks else code
    call_problem = _maker(profile, check, code, "call id outside the provider's pattern")
    result_problem = _maker(
        profile,
        profile.checks[result_code],
        result_code,
        "result id outside the provider's pattern",
    )
    indexes, slots, seeds = calls[0::3], calls[1::3], calls[2::3]
    changes: list[Change] = []
    if new_ids is not None:
        detail = "call id the provider would refuse"
        changes = [
            _change("rewrote_call_id", index, detail, (old, new))
            for index, old, new in zip(indexes, seeds, new_ids, strict=True)
        ]
    problems: list[Problem] = []
    result_indexes, positions = results[0::2], results[1::2]
    next_result, count = 0, len(result_indexes)
    for index, slot, old in zip(indexes, slots, seeds, strict=True):
        while next_result < count and result_indexes[next_result] < index:
            at = result_indexes[next_result]
            problems.append(result_problem(at, seeds[positions[next_result]], 0))
            next_result += 1
        problems.append(call_problem(index, old, slot))
    rest = zip(result_indexes[next_result:], positions[next_result:], strict=True)
    for at, position in rest:
        problems.append(result_problem(at, seeds[position], 0))
    return changes, problems


def fresh_ids(
    seeds: list[str], profile: Profile, taken: set[str], next_try: dict[str, int] | None = None
) -> list[str]:
    """``[fresh_id(seed, profile, taken, next_try) for seed in seeds]`` with one ``next_try``
    (a new one unless given: the counters of a rewrite that made ids before, see
    :class:`toolmend._skeleton.RequestIds`): the same ids, the same ``taken`` and ``next_try``
    after.

    For a profile with a fixed id length (Mistral's nine), the common case is checked for all
    the seeds at once: each seed's first candidate is its tail (:func:`fresh_id`), and when
    every tail is letters and digits, the seeds and the tails all different and no tail taken,
    those are the ids (a history bound for Mistral has every call id rewritten: a function
    call a seed was as much again as the rest of the rewrite, issue 32). Anything else goes
    to ``fresh_id`` one seed at a time."""
    length = profile.call_id_length
    counters = {} if next_try is None else next_try
    if length is not None and seeds:
        found = tail_ids(seeds, [seed[-length:] for seed in seeds], length, taken, next_try)
        if found is not None:
            return found
    return [fresh_id(seed, profile, taken, counters) for seed in seeds]


_TAILS_TAKEN: dict[int, tuple[Profile, bool]] = {}
"""``id(profile)`` -> (the profile, :func:`_tails_never_refused`' answer)."""


def _tails_never_refused(profile: Profile) -> bool:
    """Whether every ``call_id_length`` ASCII letters and digits are in the profile's id
    pattern (Mistral's ``[a-zA-Z0-9]{9}``): a tail (:func:`tail_ids`) is then never an id the
    profile refuses, so only the ids it keeps can take a tail before it is made."""
    entry = _TAILS_TAKEN.get(id(profile))
    if entry is None or entry[0] is not profile:
        pattern = compiled(profile.call_id_pattern)
        length = profile.call_id_length
        count = re.fullmatch(r"\[[^\]\\]+\]\{(\d+)\}", pattern.pattern) if pattern else None
        ok = (
            pattern is not None
            and count is not None
            and length is not None
            and int(count.group(1)) == length
            and (profile.call_id_max_length is None or profile.call_id_max_length >= length)
            and all(pattern.fullmatch(letter * length) for letter in _ALNUM)
        )
        if len(_TAILS_TAKEN) >= 64:
            _TAILS_TAKEN.clear()
        entry = _TAILS_TAKEN[id(profile)] = (profile, ok)
    return entry[1]


_ALNUM = string.ascii_letters + string.digits


def tail_ids(
    seeds: list[str],
    tails: list[str],
    length: int,
    taken: set[str],
    next_try: dict[str, int] | None,
) -> list[str] | None:
    """``tails`` (each seed's last ``length`` characters), the ids :func:`fresh_ids` gives
    ``seeds`` in the common case, when they are those ids: every tail ``length`` letters and
    digits, the seeds and the tails all different, no tail taken, no seed tried before (in
    ``next_try``); ``taken`` and ``next_try`` then updated as ``fresh_id`` one seed at a
    time would. None (nothing changed) otherwise."""
    if next_try and not next_try.keys().isdisjoint(seeds):
        return None  # (a seed tried before: its next try is not its tail)
    joined = "".join(tails)
    if len(joined) != length * len(tails) or not joined.isascii() or not joined.isalnum():
        return None
    unique = set(tails)  # (tails all different: the seeds too, as a seed's tail is its own)
    if len(unique) != len(tails) or not taken.isdisjoint(unique):
        return None
    taken |= unique
    if next_try is not None:
        next_try.update(dict.fromkeys(seeds, 1))
    return tails


def _problem(
    code: str, index: int, message: str, provider_error: str, rule: str, ids: tuple[str, ...]
) -> Problem:
    """``Problem(code, index, message, provider_error, rule, ids)``, without the frozen
    dataclass's ``__init__`` (one ``object.__setattr__`` a field): the same object, for the
    thousands a history of rewritten ids reports."""
    made = _new(Problem)
    fields = made.__dict__  # (item by item: cheaper than ``update`` with keywords)
    fields["code"] = code
    fields["index"] = index
    fields["message"] = message
    fields["provider_error"] = provider_error
    fields["rule"] = rule
    fields["ids"] = ids
    return made


def _change(code: str, index: int, detail: str, ids: tuple[str, ...]) -> Change:
    """``Change(code, index, detail, ids)``, as :func:`_problem` builds a problem."""
    made = _new(Change)
    fields = made.__dict__
    fields["code"] = code
    fields["index"] = index
    fields["detail"] = detail
    fields["ids"] = ids
    return made


_new = object.__new__


_FIELDS: dict[str, frozenset[str] | None] = {}
"""Error template -> the fields it names (None when it uses a conversion or an index into a
field, which :func:`_maker` leaves to :class:`toolmend._findings.Report`)."""

_QUICK_FIELDS = frozenset({"index", "id", "ids", "slot"})


def _fields(template: str) -> frozenset[str] | None:
    found = _FIELDS.get(template)
    if found is None and template not in _FIELDS:
        names: set[str] = set()
        plain = True
        for _, name, spec, conversion in string.Formatter().parse(template):
            if name is None:
                continue
            plain &= name.isidentifier() and not spec and conversion is None
            names.add(name)
        found = frozenset(names) if plain else None
        if len(_FIELDS) >= 256:
            _FIELDS.clear()
        _FIELDS[template] = found
    return found


def _maker(profile: Profile, check: Check, code: str, message: str) -> Any:
    """A function (index, id, slot) -> the problem :class:`toolmend._findings.Report` adds for
    ``code`` with ``id``, ``ids=(id,)`` and ``slot``: the error text written only from the fields
    its template names (a template naming another field goes through ``Report`` itself)."""
    template, rule = check.error, check.rule
    fields = _fields(template)
    if fields is None or not fields <= _QUICK_FIELDS:
        report = Report(profile)

        def through_report(index: int, found: str, slot: int) -> Problem:
            report.add(code, index, message, id=found, ids=(found,), slot=slot)
            return report.problems.pop()

        return through_report
    if not fields:

        def fixed(index: int, found: str, slot: int) -> Problem:
            return _problem(code, index, message, template, rule, (found,))

        return fixed
    if fields <= {"id", "ids"} and template.count("{") == 1 and template.count("}") == 1:
        # one field, the id (Mistral's "Tool call id was {id} but must be ..."): the text
        # around it, joined
        head, _, rest = template.partition("{")
        tail = rest.partition("}")[2]

        def joined(index: int, found: str, slot: int) -> Problem:
            return _problem(code, index, message, head + found + tail, rule, (found,))

        return joined
    wants_index, wants_id = "index" in fields, "id" in fields or "ids" in fields
    wants_slot = "slot" in fields

    def formatted(index: int, found: str, slot: int) -> Problem:
        values: dict[str, Any] = {}
        if wants_index:
            values["index"] = index
        if wants_id:
            values["id"] = values["ids"] = found
        if wants_slot:
            values["slot"] = slot
        return _problem(code, index, message, template.format(**values), rule, (found,))

    return formatted


_OTHER_ROLES = frozenset({"user", "system", "developer", "assistant"})
"""The roles :func:`mended_range` reads as messages that are not results (a ``function``
message is a result to the judge)."""


def mended_range(
    module: Format,
    part: Sequence[Any],
    profile: Profile,
    policy: Policy,
    base: int,
    *,
    request: RequestIds | None = None,
) -> tuple[list[Any], list[Change], Pending, set[str | None]] | None:
    """A damaged range ``part`` of chat messages (from message ``base``, after the history's
    start and before its end) mended of the common damages without a skeleton, a judge or a
    planner: calls left without their result, results whose call is in no message of the
    range, results repeated word for word within their block, and a calling message sent twice
    (the copy whose calls are left unanswered gets new ids for them, as the planner's id step
    gives a placeheld call whose id another call has). Returns the range repaired, the changes
    and problems the full path makes for it (in its order; the problems as a :class:`Pending`
    report, written when its ``build`` is called), and the range's call ids; None
    for anything else, or under a profile the plain one-pass check does not model (the full
    path decides).

    Each damaged range cost 40-60 us of reading, judging and planning whatever its size, most
    of a damaged history's repair after the range scan (issue 32). What it makes here is what
    those steps make, step for step: the judge's adjacency pairing (``missing_result``,
    ``orphan_result``, ``duplicate_result``) and ``quick_plan``'s items, changes and new ids,
    applied by the format; it answers only where the repaired range passes the profile's
    one-pass check and each dropped orphan passes it after a call with its id, so no other
    rule has anything to say. Under counting pairing (DeepSeek) the problems are the judge's
    count; under result names (Gemini) the answered results get their call's name; under a
    role order (Bedrock) each break is the judge's ``role_order`` and a message the order
    forbids after results (a user message) gets the planner's assistant bridge before it
    (``bridge_role_order``), a system message it would send as user text goes to the full
    path; ids
    unique in the request (Anthropic) add the judge's ``duplicate_call_id``, and a call that
    keeps an id an earlier call keeps gets the planner's new id, its result too. Property
    tests hold it to the full path (``tests/test_damaged_speed.py``).

    ``request``: the call id rewrite of the whole request, for a profile whose refused ids are
    rewritten request-wide (Mistral, :func:`toolmend._api._with_stretches`): each refused id of
    the range (and a placeheld call's id another call has) gets the id the request's planner
    gives it, in history order (``call_id_format`` on the call and on each result carrying
    it), results pair with the latest calling message (``Profile.pairing`` ``"latest"``), the
    only break of the role order before the repair a user message right after results (a
    result after a user message answers the call before it under that pairing: the full
    path's), bridged as above. Where it answers None, ``request`` is
    as it was (the full path makes the range's ids after it)."""
    if (
        profile.pairing not in (("adjacent", "count") if request is None else ("latest",))
        or policy.missing_result != "placeholder"
        or policy.orphan_result != "drop"
        or not module.quick_plans
    ):
        return None
    params = (  # (after the history's start; with ``request``, before its end)
        _openai_chat.range_params(profile)
        if request is None
        else _openai_chat.ordered_range_params(profile)
    )
    if params is None:
        return None
    successors = profile.role_successors
    breaks: list[tuple[int, str, str]] = []  # the judge's ``role_order``: index, kind, before
    if successors is not None:
        kinds: list[str] = []
        kind_of = _openai_chat._KINDS.get
        for message in part:  # (a message that is no dict, or a role of none of the kinds: no)
            role = message.get("role") if type(message) is dict else None
            kind = kind_of(role) if type(role) is str else None
            if kind is None:
                return None
            kinds.append(kind)
        breaks = _role_breaks(kinds, successors)
        if request is not None and any(
            (before, kind) not in ((TOOL, USER), (USER, TOOL)) for _, kind, before in breaks
        ):
            # (a system message after results or calls is sent as user text, a result after
            # one answers the call before it: the full path's, found first)
            return None
    pattern = compiled(profile.call_id_pattern) if request is not None else None
    refused: set[tuple[int, int]] = set()  # (with ``request``) the calls whose id it refuses
    answers: list[tuple[int, int, int]] = []  # (with ``request``) result, its call's message, slot
    request_wide = profile.call_id_scope == "request"
    id_ok = id_test(profile)  # (what the planner's id step keeps)
    named = profile.results_need_name  # (Gemini) each result names its call's function
    filled: list[tuple[int, str, str]] = []  # (Gemini) result message, name, call id
    report = Pending(profile, base)
    changes: list[Change] = []
    items: list[Any] = []  # kept messages, and (call, slot, id, name) for each placeholder
    uses: dict[str, int] = {}  # call id -> how many calls of the range have it
    placeheld: list[tuple[int, int, str, str]] = []  # calling message, slot, id, name
    orphans: list[int] = []
    mismatched: list[int] = []  # (Gemini) the results without their call's function name
    owner = -1  # the calling message whose results come now
    block: dict[str, tuple[int, str]] = {}  # its call ids -> (slot, name)
    answered: dict[str, int] = {}  # its call ids answered -> the answering message
    caller = -1  # the last calling message (``block`` and ``answered`` are its)
    late: list[tuple[int, str, int]] = []  # results after messages that interrupt their block
    gaps: dict[int, int] = {}  # where in ``items`` a block's placeholders start -> its message
    blocks: dict[int, dict[str, int]] = {}  # calling message -> its ``answered``
    callers_of: dict[str, list[int]] = {}  # call id -> the calling messages with it, in order
    repeats_moved: set[int] = set()  # of ``late``: results repeated in their block that
    # answer an earlier call
    for index, message in enumerate(part):
        if type(message) is not dict:
            return None
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if type(call_id) is not str or not call_id:
                return None
            if owner >= 0:
                if call_id not in block:
                    return None  # ``unknown_result_id``: the planner's
                first = answered.get(call_id)
                name = block[call_id][1]
                if named and message.get("name") != name:
                    if first is None:
                        filled.append((index, name, call_id))
                    mismatched.append(index)
                if first is None:
                    answered[call_id] = index
                    items.append(_keep(index))
                    if request is not None:
                        answers.append((index, owner, block[call_id][0]))
                    continue
                if not _openai_chat.same_result(part[first], message):
                    return None  # another text: the planner's strength test
                report.add(
                    "duplicate_result",
                    index,
                    "call answered twice",
                    id=call_id,
                    ids=(call_id,),
                    first=first + base,
                )
                if uses[call_id] > 1:
                    if request is not None:
                        return None  # (which call it answers under the latest pairing)
                    # the pairing pairs a result with the latest calling message whose call
                    # with its id is open: an earlier one (a calling message sent twice, its
                    # result too), and the result moves next to that call
                    earlier = _open_caller(callers_of[call_id], call_id, blocks)
                    if earlier < 0:
                        return None  # (a second result for every call with the id)
                    blocks[earlier][call_id] = index
                    late.append((index, call_id, earlier))
                    repeats_moved.add(index)
                    if named and message.get("name") != (
                        earlier_name := _name_in(part[earlier], call_id)
                    ):
                        filled.append((index, earlier_name, call_id))
                    continue
                changes.append(
                    _change(
                        "dropped_duplicate_result",
                        base + index,
                        "second result for one call",
                        (call_id,),
                    )
                )
                continue
            if request is None:
                report.add(
                    "orphan_result",
                    index,
                    "tool result without a calling message before it",
                    ids=(call_id,),
                )
            else:  # (the latest pairing's words)
                report.add(
                    "orphan_result",
                    index,
                    "tool result without a calling message",
                    id=call_id,
                    ids=(call_id,),
                )
            if caller >= 0 and call_id in block and call_id not in answered:
                # the last calling message's result after messages that interrupt its block
                # (a user message sent while the tools ran): moved next to its call, the
                # messages between after it, as the planner lays them out
                if request is not None:  # (its id rewritten with its call's)
                    answers.append((index, caller, block[call_id][0]))
                answered[call_id] = index
                late.append((index, call_id, caller))
                name = block[call_id][1]
                if named and message.get("name") != name:
                    filled.append((index, name, call_id))  # (no name problem: an orphan's)
                continue
            orphans.append(index)
            changes.append(
                _change(
                    "dropped_orphan_result",
                    base + index,
                    "result of a call not in the history",
                    (call_id,),
                )
            )
            continue
        if type(role) is not str or role not in _OTHER_ROLES:
            return None
        if owner >= 0 and len(answered) < len(block):
            gaps[len(items)] = owner
            _answer_missing(
                report, changes, items, placeheld, policy, owner, block, answered, named
            )
        items.append(_keep(index))
        owner = -1
        tool_calls = message.get("tool_calls") if role == "assistant" else None
        if tool_calls is None:
            continue
        if type(tool_calls) is not list or not tool_calls:
            return None
        block, answered = {}, {}
        for slot, call in enumerate(tool_calls):
            if type(call) is not dict:
                return None
            call_id, function = call.get("id"), call.get("function")
            if type(call_id) is not str or call_id in block or type(function) is not dict:
                return None
            function_name = function.get("name")
            if type(function_name) is not str or not function_name:
                return None
            if not id_ok(call_id):
                if pattern is None or pattern.fullmatch(call_id) is not None:
                    return None  # (an id the pattern takes but the planner rewrites)
                refused.add((index, slot))
            block[call_id] = (slot, function_name)
            uses[call_id] = uses.get(call_id, 0) + 1
            callers_of.setdefault(call_id, []).append(index)
        owner = caller = index
        blocks[index] = answered
    if owner >= 0 and len(answered) < len(block):
        _answer_missing(report, changes, items, placeheld, policy, owner, block, answered, named)
    if late:
        if any(uses[call_id] > 1 for i, call_id, _ in late if i not in repeats_moved):
            return None  # (which call a result of a shared id answers: the planner's)
        items, placeheld = _moved_late(part, base, late, gaps, items, placeheld, changes)
    if (  # (the latest pairing: a result after a user message answers the call before it,
        # so the judge's problems are its own pass's, not the walk's adjacency)
        request is not None
        and (late or any(kind == TOOL for _, kind, _ in breaks))
        and not _latest_pairing(report, part)
    ):
        return None
    if profile.pairing == "count":  # (DeepSeek) the judge counts results, the planner pairs ids
        report.found = []
        pair_by_count(
            [message["role"] for message in part],
            lambda index: part[index].get("tool_calls"),
            lambda index: tuple(call["id"] for call in part[index]["tool_calls"]),
            report,
        )
    for index in mismatched:  # the judge's, after the pairing's at the same index
        call_id = part[index]["tool_call_id"]
        report.add(
            "result_name_mismatch",
            index,
            "tool message without the called function's name",
            id=call_id,
            ids=(call_id,),
        )
    # (Anthropic) ids unique in the request: each later call with an id is a problem, and the
    # planner rewrites it unless a placeholder answers all but one call with the id
    repeated = request_wide and len(uses) < sum(uses.values())
    again = _repeated_call_ids(report, part, uses, placeheld) if repeated else []
    if again and request is not None:
        return None  # (not a profile of request-wide ids so far)
    if request is None:  # (the judge's last rule here; with ``request``, after the ids')
        _order_problems(report, breaks)
    if len(report.found) == len(mismatched) and not breaks:
        return None  # (names alone: ``quick_names``)
    for index in orphans:  # its id called nowhere in the range (else the planner's)
        call_id = part[index]["tool_call_id"]
        if call_id in uses or _openai_chat.range_run(_with_call(part[index]), params) is None:
            return None
    plan = Plan(items)
    if named:
        for index, name, call_id in filled:
            plan.edit(index).result_names[0] = name
            changes.append(
                _change(
                    "filled_result_name",
                    base + index,
                    f"function name {name!r} taken from the call",
                    (call_id,),
                )
            )
    bridges: list[int] = []  # (a role order) where in ``items`` the planner's bridges go
    if successors is not None:
        found_bridges = _bridges(kinds, items, successors)
        if found_bridges is None:
            return None
        bridges = found_bridges
    renamed: dict[tuple[int, int], str] = {}
    undo: _Undo | None = None
    if request is not None:  # the request's ids, made last: nothing after them may fail
        _id_problems(report, part, refused, pattern, profile)
        _order_problems(report, breaks)
        undo = _request_ids(part, profile, request, plan, changes, base, refused, placeheld, uses)
        renamed = undo.renamed
        for index, owner, slot in answers:
            new_id = renamed.get((owner, slot))
            if new_id is not None:
                plan.edit(index).result_ids[0] = new_id
    elif again or (placeheld and any(uses[call_id] > 1 for _, _, call_id, _ in placeheld)):
        # the planner's id step, in message and slot order: a placeheld call whose id another
        # call has gets a new one; so does (ids unique in the request) a call that keeps an id
        # an earlier call kept, and the result answering it carries it
        shared = {(owner, slot) for owner, slot, call_id, _ in placeheld if uses[call_id] > 1}
        taken = set(uses)
        next_try: dict[str, int] = {}
        for owner, slot in sorted(shared.union(again)):
            call_id = part[owner]["tool_calls"][slot]["id"]
            new_id = fresh_id(call_id, profile, taken, next_try)
            renamed[(owner, slot)] = new_id
            plan.edit(owner).call_ids[slot] = new_id
            if (owner, slot) in shared:
                detail = "call id another call has, for the call the placeholder answers"
            else:
                detail = "call id the provider would refuse"
                plan.edit(blocks[owner][call_id]).result_ids[0] = new_id
            changes.append(_change("rewrote_call_id", base + owner, detail, (call_id, new_id)))
    if placeheld:  # each placeholder made once, with its call's final id
        text = policy.placeholder
        plan.items = [
            item
            if type(item) is Keep
            else Placeholder(item[0], renamed.get(item[:2], item[2]), item[3], text, named, item[1])
            for item in items
        ]
    if bridges:  # (after the id step's changes, as ``bridge_role_order`` runs after it)
        laid: list[Any] = list(plan.items)
        plan.items = laid
        for position in bridges:
            changes.append(
                _change(
                    "inserted_message",
                    base + laid[position].index,  # (a kept message: not a result)
                    "assistant message inserted after tool results",
                    (),
                )
            )
        for position in reversed(bridges):
            laid.insert(position, Bridge(ASSISTANT, ASSISTANT_BRIDGE_TEXT))
    try:
        repaired: list[Any] = module.apply(part, plan)
    except (NonFiniteNumberError, UnwritableValueError):
        if undo is not None:
            undo.back(request)
        return None
    if _openai_chat.range_run(repaired, params) is None:
        if undo is not None:
            undo.back(request)
        return None
    changes.sort(key=_change_index)
    report.found.sort(key=_found_index)  # (the problems' order: their indexes, less ``base``)
    return repaired, changes, report, set(uses)


class _Undo:
    """The ids :func:`_request_ids` made from a request's rewrite, and how to take them back
    (the range goes to the full path, which makes them again in its turn)."""

    __slots__ = ("made", "renamed", "tried")

    def __init__(self) -> None:
        self.renamed: dict[tuple[int, int], str] = {}  # (calling message, slot) -> new id
        self.made: list[str] = []
        self.tried: dict[str, int | None] = {}  # seed -> its counter before

    def back(self, request: RequestIds | None) -> None:
        """``request`` as it was before the ids were made."""
        assert request is not None
        request.taken.difference_update(self.made)
        for seed, counter in self.tried.items():
            if counter is None:
                del request.next_try[seed]
            else:
                request.next_try[seed] = counter


def _request_ids(
    part: Sequence[Any],
    profile: Profile,
    request: RequestIds,
    plan: Plan,
    changes: list[Change],
    base: int,
    refused: set[tuple[int, int]],
    placeheld: list[tuple[int, int, str, str]],
    uses: dict[str, int],
) -> _Undo:
    """The planner's id step (:func:`toolmend._plan_ids.rewrite_ids`) over a range of a
    request whose ids are rewritten request-wide: in message and slot order, each call whose
    id the profile refuses, and each placeheld call whose id another call of the range has,
    gets the request's next id for its seed (``rewrote_call_id``)."""
    undo = _Undo()
    shared = {(owner, slot) for owner, slot, call_id, _ in placeheld if uses[call_id] > 1}
    taken, next_try, renamed = request.taken, request.next_try, undo.renamed
    rewritten = [  # (message, slot, id), in message and slot order
        (index, slot, part[index]["tool_calls"][slot]["id"])
        for index, slot in sorted(refused | shared)
    ]
    seeds = [call_id for _, _, call_id in rewritten]
    length = profile.call_id_length
    new_ids = (  # the common case at once: each id's tail (see :func:`tail_ids`)
        tail_ids(seeds, [seed[-length:] for seed in seeds], length, taken, next_try)
        if length is not None and seeds
        else None
    )
    if new_ids is not None:
        undo.tried = dict.fromkeys(seeds)  # (none tried before)
    else:
        new_ids = []
        for call_id in seeds:
            if call_id not in undo.tried:
                undo.tried[call_id] = next_try.get(call_id)
            new_ids.append(fresh_id(call_id, profile, taken, next_try))
    undo.made = new_ids
    for (index, slot, call_id), new_id in zip(rewritten, new_ids, strict=True):
        ref = (index, slot)
        renamed[ref] = new_id
        plan.edit(index).call_ids[slot] = new_id
        detail = (
            "call id the provider would refuse"
            if ref in refused
            else "call id another call has, for the call the placeholder answers"
        )
        changes.append(_change("rewrote_call_id", base + index, detail, (call_id, new_id)))
    return undo


_ID_MAKERS: dict[int, tuple[Profile, Any, Any]] = {}
"""``id(profile)`` -> (the profile, the makers of its problems on a call's and on a result's
id outside its pattern, None where it reports none): made once per profile."""


def _id_problems(
    report: Pending,
    part: Sequence[Any],
    refused: set[tuple[int, int]],
    pattern: re.Pattern[str] | None,
    profile: Profile,
) -> None:
    """The judge's ``call_id_format`` on each call of ``refused`` (message and slot order),
    then on each result whose id is outside ``pattern`` (under the profile's result code), as
    :func:`stretch_report` writes them."""
    entry = _ID_MAKERS.get(id(profile))
    if entry is None or entry[0] is not profile:
        code = "call_id_format"
        result_code = "result_id_format" if "result_id_format" in profile.checks else code
        check, result_check = profile.checks.get(code), profile.checks.get(result_code)
        entry = (
            profile,
            None
            if check is None
            else _maker(profile, check, code, "call id outside the provider's pattern"),
            None
            if result_check is None
            else _maker(
                profile, result_check, result_code, "result id outside the provider's pattern"
            ),
        )
        if len(_ID_MAKERS) >= 64:
            _ID_MAKERS.clear()
        _ID_MAKERS[id(profile)] = entry
    _, call_problem, result_problem = entry
    base = report.base
    if call_problem is not None:
        for index, slot in sorted(refused):
            report.made(
                index, call_problem(base + index, part[index]["tool_calls"][slot]["id"], slot)
            )
    if pattern is None or result_problem is None:
        return
    for index, message in enumerate(part):
        if message["role"] == "tool":
            result_id = message["tool_call_id"]
            if pattern.fullmatch(result_id) is None:
                report.made(index, result_problem(base + index, result_id, 0))


def _answer_missing(
    report: Pending,
    changes: list[Change],
    items: list[Any],
    placeheld: list[tuple[int, int, str, str]],
    policy: Policy,
    owner: int,
    block: dict[str, tuple[int, str]],
    answered: dict[str, int],
    named: bool,
) -> None:
    """The calls of message ``owner`` left without their result (``block`` minus
    ``answered``): the judge's ``missing_result`` and the planner's placeholders after the
    block's results (``named``: stating the call's function), in call order, each with its
    change."""
    missing = tuple(sorted(set(block).difference(answered)))
    report.add("missing_result", owner, f"{len(missing)} call(s) without a result", ids=missing)
    for call_id, (slot, name) in block.items():  # (in slot order: the message's order)
        if call_id in answered:
            continue
        placeheld.append((owner, slot, call_id, name))
        items.append(placeheld[-1])  # (made a :class:`Placeholder` once its id is known)
        changes.append(
            _change(
                "answered_missing_call",
                report.base + owner,
                "call answered with the placeholder",
                (call_id,),
            )
        )


def _open_caller(callers: list[int], call_id: str, blocks: dict[int, dict[str, int]]) -> int:
    """The latest of ``callers`` whose call with ``call_id`` has no result yet (-1: none), as
    the pairing by id looks it up."""
    for caller in reversed(callers):
        if call_id not in blocks[caller]:
            return caller
    return -1


def _name_in(message: Any, call_id: str) -> Any:
    """The function name of ``message``'s call with ``call_id`` (the walk checked them)."""
    for call in message["tool_calls"]:
        if call["id"] == call_id:
            return call["function"]["name"]
    return None


def _moved_late(
    part: Sequence[Any],
    base: int,
    late: list[tuple[int, str, int]],
    gaps: dict[int, int],
    items: list[Any],
    placeheld: list[tuple[int, int, str, str]],
    changes: list[Change],
) -> tuple[list[Any], list[tuple[int, int, str, str]]]:
    """The planner's layout of results that come after messages interrupting their calling
    message's block (``late``: result index, call id, calling message): each result right
    after the block's own results (``moved_result``), before the placeholders of the calls
    still unanswered, and no placeholder (nor ``answered_missing_call``) for its call; each
    message between the calling message and its last late result that stays
    (``moved_message``). The judge's problems stand (``missing_result`` at the calling
    message, ``orphan_result`` on each late result). Returns the items and placeheld calls."""
    answered_late = {(caller, call_id) for _, call_id, caller in late}
    by_caller: dict[int, list[int]] = {}
    for index, _, caller in late:
        by_caller.setdefault(caller, []).append(index)
    laid: list[Any] = []
    for position, item in enumerate(items):
        caller = gaps.get(position, -1)
        if caller in by_caller:
            laid.extend(_keep(index) for index in by_caller[caller])
        if type(item) is tuple and (item[0], item[2]) in answered_late:
            continue  # (a placeholder for a call answered after all)
        laid.append(item)
    changes[:] = [
        change
        for change in changes
        if change.code != "answered_missing_call"
        or (change.index - base, change.ids[0]) not in answered_late
    ]
    for index, call_id, caller in late:
        changes.append(
            _change(
                "moved_result",
                base + index,
                f"moved next to its call in message {base + caller}",
                (call_id,),
            )
        )
    aside: set[int] = set()  # (the spans of two calling messages may overlap)
    for caller, indexes in by_caller.items():
        aside.update(
            between
            for between in range(caller + 1, max(indexes))
            if part[between]["role"] != "tool"
        )
    for between in sorted(aside):
        changes.append(
            _change(
                "moved_message", base + between, "moved after the tool results it interrupted", ()
            )
        )
    kept = [call for call in placeheld if (call[0], call[2]) not in answered_late]
    return laid, kept


_KEEPS = [Keep(index) for index in range(256)]


def _keep(index: int) -> Keep:
    return _KEEPS[index] if index < 256 else Keep(index)


def _with_call(result: dict[str, Any]) -> list[Any]:
    """A result after a call with its id (and its name: a result no call owns is not held to
    one): what the one-pass check holds of the result alone."""
    name = result.get("name")
    if type(name) is not str or not name:
        name, result = "f", {**result, "name": "f"}
    call = {
        "id": result["tool_call_id"],
        "type": "function",
        "function": {"name": name, "arguments": "{}"},
    }
    return [{"role": "assistant", "content": None, "tool_calls": [call]}, result]


def _change_index(change: Change) -> int:
    return change.index


def _found_index(found: tuple[str, int, str, dict[str, Any]]) -> int:
    return found[1]


def _repeated_call_ids(
    report: Pending,
    part: Sequence[Any],
    uses: dict[str, int],
    placeheld: list[tuple[int, int, str, str]],
) -> list[tuple[int, int]]:
    """The judge's ``duplicate_call_id`` for each call whose id an earlier call of the range
    has (ids unique in the request); returns the calls (message, slot) that a result answers
    with an id an earlier such call keeps (the planner's id step rewrites them)."""
    held = {(owner, slot) for owner, slot, _, _ in placeheld}
    kept: set[str] = set()  # the ids of the calls that keep theirs
    seen: set[str] = set()
    again: list[tuple[int, int]] = []
    for index, message in enumerate(part):
        tool_calls = message.get("tool_calls") if message["role"] == "assistant" else None
        for slot, call in enumerate(tool_calls or ()):
            call_id = call["id"]
            if uses[call_id] < 2:
                continue
            if call_id in seen:
                report.add(
                    "duplicate_call_id",
                    index,
                    "two calls share one id",
                    id=call_id,
                    ids=(call_id,),
                    slot=slot,
                )
            seen.add(call_id)
            if (index, slot) not in held:
                if call_id in kept:
                    again.append((index, slot))
                kept.add(call_id)
    return again


def _latest_pairing(report: Pending, part: Sequence[Any]) -> bool:
    """The judge's pairing of results with the latest assistant message's calls
    (``_rules._pair_latest``, Mistral) over a range's messages (read by the walk already), in
    place of the walk's problems: ``missing_result``, ``orphan_result``, ``duplicate_result``.
    False where a result answers no call of its block (``unknown_result_id``: the
    planner's)."""
    report.found = []
    owner = -1
    expected: Any = ()
    answered: dict[str, int] = {}
    for index, message in enumerate(part):
        role = message["role"]
        if role == "assistant":
            if owner >= 0 and len(answered) != len(expected):
                missing_results(report, owner, expected, answered)
            tool_calls = message.get("tool_calls")
            owner = index if tool_calls else -1
            expected = {call["id"] for call in tool_calls} if tool_calls else ()
            answered = {}
        elif role == "tool":
            result_id = message["tool_call_id"]
            if owner < 0:
                report.add(
                    "orphan_result",
                    index,
                    "tool result without a calling message",
                    id=result_id,
                    ids=(result_id,),
                )
            elif result_id not in expected:
                return False
            else:
                answer_result(report, index, result_id, expected, answered)
    if owner >= 0 and len(answered) != len(expected):
        missing_results(report, owner, expected, answered)
    return True


def _role_breaks(
    kinds: list[str], successors: Mapping[str, frozenset[str]]
) -> list[tuple[int, str, str]]:
    """Each message of a range whose kind the profile's role order forbids after the kind
    before it (index, kind, the kind before), as the judge's ``role_order`` finds them."""
    return [
        (index, kind, before)
        for index, (before, kind) in enumerate(itertools.pairwise(kinds), 1)
        if (allowed := successors.get(before)) is not None and kind not in allowed
    ]


def _order_problems(report: Pending, breaks: list[tuple[int, str, str]]) -> None:
    """The judge's ``role_order`` on each of ``breaks`` (:func:`_role_breaks`)."""
    for index, kind, before in breaks:
        report.add("role_order", index, f"{kind} right after {before}", role=kind, prev=before)


def _bridges(
    kinds: list[str], items: Sequence[Any], successors: Mapping[str, frozenset[str]]
) -> list[int] | None:
    """Where the planner's ``bridge_role_order`` puts its assistant bridge among ``items``
    (kept messages and placeholders): before each item a result may not precede (a user
    message right after results, under Bedrock's and Mistral's role order). None where
    ``demote_system`` would send a system message as user text, or the order still breaks
    with the bridges in (the planner's)."""
    after_tool = successors.get(TOOL, frozenset())
    found: list[int] = []
    previous = ""
    for position, item in enumerate(items):
        kind = kinds[item.index] if type(item) is Keep else TOOL
        if kind == SYSTEM and previous and SYSTEM not in successors.get(previous, {SYSTEM}):
            return None
        if previous == TOOL and kind not in after_tool:
            found.append(position)
            previous = ASSISTANT
        allowed = successors.get(previous) if previous else None
        if allowed is not None and kind not in allowed:
            return None
        previous = kind
    return found
