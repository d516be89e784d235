"""OpenAI Chat Completions messages: plain dicts, the openai SDK's pydantic message objects and
``litellm.Message``-like objects with attributes.

Reading touches each message once through ``dict.get`` (or ``getattr`` for objects). Applying
a plan returns the original object for every message it does not change; a changed message
comes back as a shallow-copied dict (objects through ``model_dump``), which every SDK accepts
in ``messages``.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import operator
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .. import _jsontext as jsontext
from .._edits import AsText, Bridge, CallPart, Item, Keep, Merge, MessageEdit, Placeholder, Plan
from .._report import InvalidMessageError
from .._skeleton import ASSISTANT, OTHER, SYSTEM, TOOL, USER, Call, Defect, Result, Skeleton
from .._spans import all_match
from ..profiles import compiled
from . import register
from ._base import Format, message_dict
from ._openai_cross import (
    CrossRules,
    Fixes,
    blank_free,
    cross_fixes,
    cross_rules,
    cross_valid,
    fixes_likely,
    opening_ok,
    range_check,
    scan_pass,
)

if TYPE_CHECKING:
    from ..profiles import Profile

__all__ = [
    "FORMAT",
    "NAME",
    "OpenAIChat",
    "apply",
    "call_arguments",
    "claims",
    "dirty_spans",
    "kind_of",
    "live_rounds",
    "named_spans",
    "ordered_range_params",
    "range_params",
    "quick_fixes",
    "quick_live",
    "quick_valid",
    "read",
    "repeated_results",
    "request_id_fixes",
    "result_text",
]

NAME = "openai"

_KINDS = {
    "user": USER,
    "assistant": ASSISTANT,
    "tool": TOOL,
    "system": SYSTEM,
    "developer": SYSTEM,
}
_TELLING_ROLES = frozenset({"tool", "function"})
"""Roles only chat messages have. ``system`` and ``developer`` are not among them: Responses
``input`` has them too, and a plain history of such messages is read as chat anyway."""


def claims(message: Any) -> bool:
    """OpenAI-only features: tool/function roles, ``tool_calls``, ``tool_call_id``."""
    if isinstance(message, dict):
        role = message.get("role")
        return (
            (isinstance(role, str) and role in _TELLING_ROLES)
            or "tool_calls" in message
            or "tool_call_id" in message
        )
    role = getattr(message, "role", None)
    return (isinstance(role, str) and role in _TELLING_ROLES) or getattr(
        message, "tool_calls", None
    ) is not None


_QUICK_CODES = frozenset(
    {
        "empty_history",
        "invalid_role",
        "orphan_result",
        "unknown_result_id",
        "missing_result",
        "duplicate_result",
        "result_without_id",
        "call_without_id",
        "call_id_too_long",
        "call_shape",
        "arguments_not_string",
        "call_name_empty",
        "empty_tool_calls",
        "null_content",
        "missing_reasoning",
        "unsupported_property",
        "function_call_null",
        "tool_content_not_string",
        "content_null",
    }
)
"""The problem codes :func:`quick_valid` vouches for. A profile enforcing any other code, or
needing role order, alternation or an id pattern, takes the full read-and-judge path."""


def quick_valid(messages: Sequence[Any], profile: Profile) -> bool:
    """True only when the full ``judge(read(messages), profile)`` would find nothing.

    The valid history is the common case, and it must cost far less than the ``json.dumps``
    every SDK does anyway, so it gets one tight pass over plain dicts that builds nothing. The
    test is conservative: anything unusual (objects, legacy roles, an empty content, a profile
    with rules it does not know) answers False, and the full path decides. A property test
    asserts that True always agrees with the full path.
    """
    params = _plain_params(profile) if messages else None
    if params is _SCAN_TURNS:  # a rule per turn: the scan that tracks turns
        return _scan(messages, profile, first_only=True) == []
    return params is not None and _live_run(messages, params) is not None


def quick_live(
    messages: Sequence[Any], profile: Profile
) -> tuple[int, list[tuple[str, Any]]] | None:
    """:func:`quick_valid` and the loop guard's live run from the same pass: None when the pass
    cannot vouch for ``messages``; else the number of tool rounds after the last user message
    and each of their calls as (name, arguments), the name a non-empty string.

    For the hooks' fast path (:func:`toolmend._fastpath.vouch`): the guard's own walk over the
    live run cost a LiteLLM call more than the whole check of the history once it had pushed
    toolmend's code out of the CPU caches."""
    params = _plain_params(profile) if messages else None
    live = None if params is None or params is _SCAN_TURNS else _live_run(messages, params)
    if live is None:
        return None
    calls: list[tuple[str, Any]] = []
    for tool_calls in live:
        for call in tool_calls:
            function = call["function"]
            calls.append((function["name"], function["arguments"]))
    return len(live), calls


def quick_fixes(
    messages: Sequence[Any],
    profile: Profile,
    /,
    *,
    opening: bool = True,
    vouched_against: bool = False,
) -> Fixes | None:
    """The result names or call ids a cross-family profile wants, when nothing else is wrong
    (see :func:`toolmend.formats._openai_cross.cross_fixes`; ``opening=False`` for a range
    after the history's start); None otherwise. ``vouched_against``: the one-pass check
    failed on ``messages``; None also where its first call's id or first result's name says
    that was no id or name (:func:`toolmend.formats._openai_cross.fixes_likely`)."""
    params = _plain_params(profile) if messages else None
    if type(params) is not CrossRules:
        return None
    if vouched_against and not fixes_likely(messages, params, profile.call_id_length):
        return None
    return cross_fixes(messages, params, profile.call_id_length, opening)


def _live_run(messages: Sequence[Any], params: _PlainParams | CrossRules) -> list[Any] | None:
    """:func:`_plain_valid` with ``params`` (:func:`toolmend.formats._openai_cross.cross_valid`
    for a profile of another family); None also where a field is missing or of the wrong kind
    (the full path decides, and names it)."""
    try:
        if type(params) is CrossRules:
            return cross_valid(messages, params)
        return _plain_valid(messages, *params)  # type: ignore[misc]
    except (KeyError, TypeError):
        return None


def range_run(messages: Sequence[Any], params: _PlainParams | CrossRules) -> list[Any] | None:
    """:func:`_live_run` for a damaged range after the history's start, with
    :func:`range_params` (or :func:`ordered_range_params`): another family's pass without the
    looks a whole history needs and a range does not
    (:func:`toolmend.formats._openai_cross.range_check`). A damaged history's ranges are each
    checked once or twice, a few messages each: the look-ups around the pass were a fifth of
    the check."""
    if type(params) is not CrossRules:
        return _live_run(messages, params)
    entry = _RANGE_CHECKS.get(id(params))
    if entry is None or entry[0] is not params:
        if len(_RANGE_CHECKS) >= 64:
            _RANGE_CHECKS.clear()
        entry = _RANGE_CHECKS[id(params)] = (params, range_check(params))
    if not messages:
        return None
    try:
        return entry[1](messages)
    except (KeyError, TypeError):
        return None


_RANGE_CHECKS: dict[int, tuple[CrossRules, Callable[[Sequence[Any]], list[Any] | None]]] = {}
"""``id(rules)`` -> (the rules, :func:`toolmend.formats._openai_cross.range_check` of them)."""


_PlainParams = tuple[int, bool, bool, bool]
_SCAN_TURNS: _PlainParams = (0, False, False, False)
"""The stand-in for "the profile has per-turn rules": :func:`_scan` decides, not the plain pass."""

_PARAMS_BY_PROFILE: dict[int, tuple[Profile, _PlainParams | CrossRules | None]] = {}
"""``id(profile)`` -> (the profile, its :func:`_plain_valid` arguments); the profile is kept so
its id cannot be reused while the entry lives. Profiles are frozen: one whose ``checks`` mapping
is changed in place after use keeps the arguments worked out before."""


def _plain_params(profile: Profile) -> _PlainParams | CrossRules | None:
    """:func:`_plain_valid`'s arguments for ``profile`` (the rules of
    :func:`toolmend.formats._openai_cross.cross_valid` for a profile of another family; None
    when no one-pass check models its rules), worked out once per profile: on a hook's path
    every function the check runs is one more thing to load into a cold cache."""
    entry = _PARAMS_BY_PROFILE.get(id(profile))
    if entry is not None and entry[0] is profile:
        return entry[1]
    params: _PlainParams | CrossRules | None = cross_rules(profile)
    if _scannable_profile(profile):
        params = _SCAN_TURNS
        if not profile.reasoning_in_tool_turns:
            params = (
                profile.call_id_max_length or 1 << 30,
                "unsupported_property" not in profile.checks,
                _repeats_pass(profile),
                "tool_content_not_string" in profile.checks,
            )
    if len(_PARAMS_BY_PROFILE) >= 256:  # profiles built per call: keep the cache small
        _PARAMS_BY_PROFILE.clear()
    _PARAMS_BY_PROFILE[id(profile)] = (profile, params)
    return params


def _repeats_pass(profile: Profile) -> bool:
    """Whether a second result for one of a turn's calls, among the turn's results, passes the
    profile's rules: it does where results pair with calls by id and a repeat is no rule of its
    own (OpenAI takes it); counting pairing (DeepSeek) sees one result too many."""
    return profile.pairing != "count" and "duplicate_result" not in profile.checks


def _called_ids(tool_calls: Any) -> set[Any]:
    """The ids of the turn's ``tool_calls``: whether a result with no call waiting for it
    repeats one of the turn's results (gathered once a turn, not scanned for each result)."""
    return {call.get("id") for call in tool_calls if type(call) is dict}


def _plain_valid(
    messages: Sequence[Any],
    max_length: int,
    reasoning_field_ok: bool,
    repeats_pass: bool,
    content_rule: bool,
) -> list[Any] | None:
    """:func:`_scan` with ``first_only``, for a profile without per-turn rules, made as cheap
    as Python allows: the fields a valid message must have are read by subscript (a missing one
    raises ``KeyError``, which :func:`quick_valid` takes as "not sure"), nothing is counted, and
    a tool result's content is looked at only under a profile with a rule on it (Groq): on a
    hook's path every object touched costs a cache miss.

    None when it cannot vouch for ``messages``; else the ``tool_calls`` lists of the assistant
    messages after the last user message (the live run, for :func:`quick_live`), each call a
    dict with a ``function`` dict whose ``name`` is a non-empty string."""
    pending: set[str] | None = None  # the turn's calls still waiting for their results
    tool_calls: Any = ()  # the calls of the turn whose results come now
    called: set[Any] | None = None  # their ids, gathered at the turn's first repeated result
    live: list[Any] = []  # the tool_calls lists since the last user message
    for message in messages:
        if type(message) is not dict:
            return None
        role = message["role"]
        if role == "tool":
            call_id = message["tool_call_id"]
            if pending is None or type(call_id) is not str or not call_id:
                return None
            try:
                pending.remove(call_id)
            except KeyError:  # no call waits for it: a repeat of a result of this turn, or none
                if not repeats_pass:
                    return None
                if called is None:  # once a turn: n repeats must not scan n calls each
                    called = _called_ids(tool_calls)
                if call_id not in called:
                    return None
            if content_rule and type(message["content"]) is not str:
                return None
            continue
        if pending:
            return None
        pending = None
        if role == "assistant":
            if "function_call" in message or (
                not reasoning_field_ok and "reasoning_content" in message
            ):
                return None
            tool_calls = message.get("tool_calls")
            if tool_calls is None:
                if not message["content"]:
                    return None
                continue
            if type(tool_calls) is not list or not tool_calls:
                return None
            live.append(tool_calls)
            called = None
            pending = set()
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
                pending.add(call_id)
        elif role == "user":
            if "tool_calls" in message:
                return None
            live = []
        elif role == "system" or role == "developer":
            if "tool_calls" in message:
                return None
        else:
            return None
    return None if pending else live


def dirty_spans(messages: Sequence[Any], profile: Profile) -> list[tuple[int, int]] | None:
    """The ranges ``[start, stop)`` of ``messages`` that need repair, or None if unknown.

    A damaged history is mostly sound, so the repair reads, judges and plans only the ranges
    around its problems. A range starts and ends where no call is waiting for results (and, for
    a profile with per-turn rules, at a user message), so each one is judged and repaired on its
    own exactly as in the whole history; a stray result also pulls in the nearest earlier and
    later range calling its id, where the planner may find its call. Empty when the history is
    valid; None when the one-pass test cannot tell (the full path then decides).
    """
    return _scan(messages, profile, first_only=False)


_FLAT = (str, int, float, bool, type(None))
"""The values :func:`same_result` compares with ``==`` (each a bounded comparison)."""


def same_result(first: Any, second: Any) -> bool:
    """Whether the result message ``second`` repeats ``first`` word for word, where that is
    cheap to tell: the same object, or dicts with the same keys whose values are the same
    objects, equal strings, numbers, booleans or None, or lists of dicts of those (content
    parts). Anything nested deeper says False, and the path that asked leaves the message to
    the planner, which reads its text: ``==`` on a cyclic value raised RecursionError out of
    the repair, and on a value that shares its lists took time exponential in its depth."""
    if first is second:
        return True
    if type(first) is not dict or type(second) is not dict or len(first) != len(second):
        return False
    for key, value in first.items():
        other = second.get(key, second)
        if value is other:
            continue
        if type(value) is list and type(other) is list:
            if len(value) != len(other) or not all(map(_same_part, value, other)):
                return False
        elif type(value) not in _FLAT or type(other) not in _FLAT or value != other:
            return False
    return True


def _same_part(first: Any, second: Any) -> bool:
    """Whether two content parts are the same object, or dicts of equal flat values."""
    if first is second:
        return True
    if type(first) is not dict or type(second) is not dict or len(first) != len(second):
        return False
    for key, value in first.items():
        other = second.get(key, second)
        if value is not other and (
            type(value) not in _FLAT or type(other) not in _FLAT or value != other
        ):
            return False
    return True


def repeated_results(part: Sequence[Any], profile: Profile) -> list[tuple[int, str, int]] | None:
    """The tool messages of a damaged range that repeat, word for word, an earlier result of
    their calling message's block, as (index, call id, index of the first), when they are all
    that is wrong with it: each calling message of ``part`` is followed by results answering
    every one of its calls, and without the repeats ``part`` passes the one-pass check of a profile
    whose results pair by adjacency or count (another family's without the rules on a conversation's
    opening: the range comes after the history's start); None otherwise.

    The commonest damage of a sent history (a tool message sent twice): the judge's only
    problem is each repeat (``duplicate_result``) and the repair drops it, which the API
    writes without reading, judging and planning the range (issue 32)."""
    params = range_params(profile) if part else None
    if params is None or profile.pairing not in ("adjacent", "count"):
        return None
    # (Gemini) a result without a name fails the one-pass check below, kept or repeated (a
    # repeat is its first word for word): every result of an OpenAI-shaped history lacks it
    unnamed = type(params) is CrossRules and params.names
    repeats: list[tuple[int, str, int]] = []
    kept: list[Any] = []
    block: set[Any] | None = None  # the ids of the calling message whose results come now
    first_of: dict[str, int] = {}  # call id -> its first result in the block
    for index, message in enumerate(part):
        if type(message) is not dict:
            return None
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if block is None or type(call_id) is not str or call_id not in block:
                return None
            if unnamed and "name" not in message:
                return None  # (the range's repair names it)
            first = first_of.get(call_id)
            if first is None:
                first_of[call_id] = index
                kept.append(message)
            elif same_result(part[first], message):
                repeats.append((index, call_id, first))
            else:
                return None
            continue
        if block is not None and len(first_of) != len(block):
            return None  # a call of the block before without its result
        kept.append(message)
        tool_calls = message.get("tool_calls") if role == "assistant" else None
        if tool_calls is None:  # no block (the pass below judges the message)
            block = None
            continue
        if type(tool_calls) is not list:
            return None
        ids = [call.get("id") if type(call) is dict else None for call in tool_calls]
        if not all(type(call_id) is str for call_id in ids):
            return None  # a call that is no dict, or an id that is no string: the planner's
        block = set(ids)
        first_of = {}
    if (block is not None and len(first_of) != len(block)) or not repeats:
        return None
    return repeats if range_run(kept, params) is not None else None


def range_params(profile: Profile) -> Any:
    """The one-pass rules a damaged range after the history's start is held to by the
    repairs that write it without the full path (:func:`repeated_results`,
    :func:`toolmend._quickmend.mended_range`): the profile's plain rules, or another family's
    without its rules on a conversation's opening; None when they cannot judge a range (a
    per-turn rule, a role order, a rule on the last message, text beside calls)."""
    params = _plain_params(profile)
    if params is None or params is _SCAN_TURNS:
        return None
    if type(params) is CrossRules:  # another family's, but not a role order
        if (
            params.successors is not None
            or params.last_roles is not None
            or "call_with_text" in profile.checks
        ):
            return None
        params = _inner_rules(params)
    return params


_INNER: dict[int, tuple[CrossRules, CrossRules]] = {}
"""``id(rules)`` -> (the rules, the same without the rules on a conversation's opening)."""


def _inner_rules(rules: CrossRules) -> CrossRules:
    """``rules`` for a range after the history's start, which the judge holds to none of the
    rules on how a conversation opens (``Skeleton.base``)."""
    entry = _INNER.get(id(rules))
    if entry is None or entry[0] is not rules:
        inner = dataclasses.replace(
            rules, first_user=False, no_leading_call=False, needs_message=False
        )
        if len(_INNER) >= 64:
            _INNER.clear()
        entry = _INNER[id(rules)] = (rules, inner)
    return entry[1]


_MIDDLE: dict[int, tuple[Profile, CrossRules | None]] = {}
"""``id(profile)`` -> (the profile, :func:`ordered_range_params`' answer for it)."""


def ordered_range_params(profile: Profile) -> CrossRules | None:
    """:func:`range_params` for a profile whose ranges :func:`_ordered_rules` tells and whose
    refused call ids are rewritten request-wide (Mistral): the one-pass rules a damaged range
    between the history's start and its end is held to (the role order between its messages,
    none of the rules on a conversation's opening or on its last message, no id pattern: the
    request's rewrite gives every refused id one in the profile's form); None for any other
    profile."""
    entry = _MIDDLE.get(id(profile))
    if entry is not None and entry[0] is profile:
        return entry[1]
    rules = _plain_params(profile)
    middle = None
    if (
        type(rules) is CrossRules
        and rules.id_match is not None
        and (rules.successors is not None or rules.last_roles is not None)
        and "call_with_text" not in profile.checks
    ):
        ordered = _ordered_rules(rules, profile)
        if ordered is not None and ordered.id_match is None:
            middle = dataclasses.replace(_inner_rules(ordered), last_roles=None)
    if len(_MIDDLE) >= 64:
        _MIDDLE.clear()
    _MIDDLE[id(profile)] = (profile, middle)
    return middle


def named_spans(
    messages: Sequence[Any], profile: Profile
) -> tuple[list[tuple[int, int]], list[Any], list[Any]] | None:
    """:func:`dirty_spans` for a profile whose results name their call's function (Gemini):
    the ranges that need repair for anything but the names, the tool messages outside them
    whose only fault is the name, as index, call id and the function's name (flat: three items
    a result) in message order, and a copy of ``messages`` with those names filled (each such
    message copied with its name; the messages in the ranges as they are); None when the
    one-pass test cannot tell.

    Bound for Gemini, every result of an OpenAI-shaped history lacks its name, so every range
    of a damaged history was dirty and each was read (or its names filled) on its own: most of
    the repair (issue 32). The names outside the damaged ranges are filled by the scan that
    finds the ranges, as it reads each result (a second walk over them, after the scan, read
    each again from memory); the repair of a damaged range fills its own."""
    found: list[Any] = []
    filled = list(messages)
    spans = _scan(messages, profile, first_only=False, names=found, filled=filled)
    if spans is None:
        return None
    if not spans or not found:
        return spans, found, filled
    at = found[0::3]  # each entry's index, in message order: a range's entries by bisection
    outside: list[Any] = []
    done = 0
    for low, high in spans:
        first = bisect.bisect_left(at, low, done)
        outside += found[3 * done : 3 * first]
        done = bisect.bisect_left(at, high, first)
        for index in at[first:done]:  # in a range, whose repair names its own
            filled[index] = messages[index]
    outside += found[3 * done :]
    return spans, outside, filled


def _scannable(messages: Sequence[Any], profile: Profile) -> bool:
    """Whether the one-pass scans can judge ``messages`` under ``profile`` (else the full
    path)."""
    return bool(messages) and _scannable_profile(profile)


def _scannable_profile(profile: Profile) -> bool:
    """Whether the one-pass scans model every rule of ``profile``."""
    return not (
        profile.pairing not in ("adjacent", "count", "none")
        or profile.role_successors is not None
        or profile.alternation is not None
        or profile.call_id_pattern is not None
        or profile.function_name_pattern is not None
        or profile.last_kinds is not None
        or not profile.checks.keys() <= _QUICK_CODES
        # a string content is looked at on tool messages only, under a rule on it (Groq)
        or profile.content_text_kinds
        or not (
            profile.content_string_kinds <= {TOOL}
            and ("tool_content_not_string" in profile.checks or not profile.content_string_kinds)
        )
    )


def _scan(
    messages: Sequence[Any],
    profile: Profile,
    *,
    first_only: bool,
    eager: bool = False,
    names: list[Any] | None = None,
    resume: bool = True,
    filled: list[Any] | None = None,
) -> list[tuple[int, int]] | None:
    """The ranges of :func:`dirty_spans` (``first_only``: ``[]`` when the history is valid,
    None at its first problem, for :func:`quick_valid`).

    Most of a damaged history is sound, so the scan hands the sound stretches to the vouch's
    own pass (:func:`toolmend.formats._openai_cross.scan_pass`, about half the cost a message):
    it runs from a clean point until the first message it cannot vouch for, and the careful
    loop below takes over from the last range start before that message (:func:`_resume_at`:
    its state there follows from the message before it, which the pass vouched for) until the
    range has closed and a sound message with no call waiting follows, then hands back. Each
    message is read at most twice (the pass, then the loop from the last range start), so the
    scan stays linear. What needs the whole history's bookkeeping (a stray or repeated result,
    an unanswered or repeated id called also in a stretch the pass vouched for, an id or name
    outside the profile's pattern) is rare, and then the scan runs again without the pass
    (``resume=False``: every message through the loop, as it always did).

    Most messages of a damaged history are sound, so each message first meets a test of the
    fields a sound one has, read once (a call's by subscript, in ``try``: a missing field
    sends the message to the careful code, as does any test that fails); only a message that
    is not plainly sound is judged field by field, exactly as before. Both stay linear: a
    message is looked at by the plain test at most once before the careful code. The id and
    name patterns of a cross-family profile are checked after the loop over the ids and names
    it gathered, in one ``map`` each; where one fails, the scan runs again with ``eager`` (each
    call checked in place, which tells its range).

    ``names`` (a profile whose results name their call's function, Gemini): a result whose
    only fault is a missing or wrong name leaves its range clean and goes into ``names`` as
    its index, call id and the function's name (flat: three items a result), for
    :func:`named_spans`; with ``filled`` (a copy of ``messages``), a copy of that result with
    its name at its index."""
    cross = None
    if not _scannable(messages, profile):
        # a cross-family profile: its ranges, from its rules (the vouch is cross_valid's)
        cross = None if first_only or not messages else _range_rules(messages, profile)
        if cross is None:
            return None
    max_length = profile.call_id_max_length or 1 << 30
    reasoning_rule = profile.reasoning_in_tool_turns
    # ranges start at user messages only where a rule is per turn, or where a range must open
    # as a conversation does (Bedrock: with the user); elsewhere at any clean point
    # role order between any two messages (Mistral): see _ordered_rules and _ordered_start
    successors = cross.successors if cross is not None else None
    user_starts = reasoning_rule or (
        cross is not None
        and successors is None
        and (cross.first_user or cross.after_tool is not None)
    )
    after_tool = cross.after_tool if cross is not None else None
    anywhere = successors is not None and all(ASSISTANT in kinds for kinds in successors.values())
    follow = _follow_table(successors) if successors is not None else {}
    previous: str | None = None  # the kind of the message before (``successors`` only)
    order_bad = False  # whether the message's role may not follow the one before
    follows_tool = False  # whether the message before was a tool message
    follows_text = False  # whether it was assistant text without calls, sound
    turn_names: dict[Any, Any] = {}  # the turn's call id -> function name (``cross.names``)
    named = cross is not None and cross.names
    result_rules = cross is not None and (cross.tool_text or cross.tool_content or cross.names)
    content_rule = "tool_content_not_string" in profile.checks
    plain_results = not (result_rules or content_rule)
    text_results = content_rule or (cross is not None and cross.tool_text)
    tool_level = cross.tool_content if cross is not None else 0
    content_looked = text_results or bool(tool_level)  # (else a result's content is not read)
    id_match = cross.id_match if cross is not None else None
    name_match = cross.name_match if cross is not None else None
    call_content = cross is not None and not (
        cross.call_content_null_ok and cross.call_content_empty_ok
    )
    call_rules = cross is not None and (
        id_match is not None or name_match is not None or named or call_content
    )
    user_level = cross.user_content if cross is not None else 0
    system_level = cross.system_content if cross is not None else 0
    reasoning_field_ok = "unsupported_property" not in profile.checks
    reasoning_looked = reasoning_rule or not reasoning_field_ok
    repeats_pass = _repeats_pass(profile)
    tool_calls: Any = ()  # the calls of the turn whose results come now
    turn_ids: set[Any] | None = None  # their ids, gathered at the turn's first repeat
    spans: list[tuple[int, int]] = []
    starts: list[int] = [0]  # where each range of the history begins
    start = 0  # where the current one begins
    called: list[str] = []  # every call id in order, and the start of the range calling it
    called_from: list[int] = []  # (kept flat: only the ids of stray results are looked up)
    call_names: set[str] = set()  # the function names of the calls checked plainly
    strays: list[tuple[int, str]] = []  # (range start, id) of results with no waiting call
    repeats: list[tuple[int, str]] = []  # (range start, id) of a second result for a call
    pending: set[str] | None = None
    turn_calls = turn_unreasoned = dirty = False
    unanswered: list[tuple[int, str]] = []  # (range start, id) of calls left without a result
    # ranges may also start at a calling message right after results (see below) where the
    # role after results is all the order rules restrict (Bedrock)
    soft_starts = (
        not first_only
        and not reasoning_rule
        and after_tool is not None
        and cross is not None
        and cross.successors is None
        and cross.last_roles is None
    )
    soft: tuple[int, bool, int] | None = None  # such a start: (the range before, whether
    # dirty, the start) until the message after its results tells whether it stands
    fast = None  # the vouch's pass for the sound stretches (see above)
    recording = False  # whether it records the results lacking their name (numbered)
    if resume and not first_only and not eager and not reasoning_rule and type(messages) is list:
        fast, recording = _scan_pass(profile, cross, names is not None)
    size = len(messages)
    # what tells a range start from the message before it (see :func:`_start_kind`)
    starting = (
        user_starts,
        soft_starts,
        after_tool,
        None if successors is None else follow,
        anywhere,
    )
    numbered: Iterator[tuple[int, Any]] = enumerate(messages)
    rest = iter(messages)  # what neither has read yet (its length hint: how far they are)
    fast_ids: list[str] = []  # the ids of the calls in the stretches the pass vouched for
    fast_names: set[str] = set()  # their function names, where a pattern judges them
    found = names if names is not None else []  # (the pass's) results lacking their name
    if recording and filled is None:
        filled = list(messages)  # (the pass fills the names it records: here, for nobody)
    extra = (filled,) if recording else ()
    stretches: list[tuple[int, int]] = []  # the stretches [low, high) the pass vouched for
    low = 0 if fast is not None else -1  # where the pass runs next (-1: not now)
    until = -1 if fast is not None else size  # the loop hands back only after this message
    while True:
        if low >= 0:
            assert fast is not None
            # (the loop has read the message at ``low`` from ``rest``, but not looked at it)
            ahead = itertools.chain(messages[low : size - operator.length_hint(rest)], rest)
            try:
                sound = fast(
                    enumerate(ahead, low) if recording else ahead,
                    pending is not None,
                    fast_ids,
                    found,
                    fast_names,
                    previous or "",
                    *extra,
                )
            except (KeyError, TypeError):  # at the message it was reading
                sound = None
            if sound:
                stretches.append((low, size))
                break
            # where it stopped: the last message it read, or the end (a call waits there)
            failed = size if sound is False else size - operator.length_hint(rest) - 1
            at, before, drop = _resume_at(messages, low, failed, starting)
            stretches.append((low, at))
            if drop:
                del fast_ids[-drop:]  # (the loop reads their calls again)
            while found and found[-3] >= at:  # (the loop reads them again)
                popped = found[-3]
                del found[-3:]
                if filled is not None:
                    filled[popped] = messages[popped]
            if at > low:  # the loop's state after the sound message before ``at``
                prior = messages[at - 1]
                follows_tool = prior["role"] == "tool"
                follows_text = prior["role"] == "assistant" and prior.get("tool_calls") is None
                if successors is not None:
                    previous = _KINDS.get(prior["role"])
                pending = soft = None
                if before is not None:
                    start = before
            until = failed
            numbered = enumerate(itertools.chain(messages[at : failed + 1], rest), at)
            # (``at`` is ``low``: the loop goes on from there as if the pass had not run)
        for index, message in numbered:
            if index > until and not dirty and not pending:
                # a clean point past the failure: the pass goes on from here (a soft start
                # before it stands: no call waits at this message, which is no tool message,
                # or the pass fails at once and the loop goes on from here)
                low = index
                break
            if type(message) is not dict:
                return None
            try:
                role = message["role"]
            except KeyError:
                role = None
            if type(role) is not str and role is not None:
                return None  # (a role of another type, unhashable perhaps: the full path names it)
            if successors is not None:
                kind = _KINDS.get(role) if type(role) is str else None
                order_bad = kind not in follow[previous]
                previous = kind
                if order_bad:
                    dirty = True  # (no range starts at this message: it is the current range's)
            if role == "tool":
                call_id: Any = message.get("tool_call_id")
                if type(call_id) is str and call_id:
                    try:
                        pending.remove(call_id)  # type: ignore[union-attr]
                    except (KeyError, AttributeError):
                        pass  # no call waits for it (or none at all): the careful code below
                    else:  # the plain case: it answers a waiting call
                        follows_tool, follows_text = True, False
                        if plain_results:
                            continue
                        # (:func:`_cross_result_ok` and the string rule, written out)
                        content = message.get("content") if content_looked else None
                        if not content_looked or (
                            (type(content) is str or not text_results)
                            and (
                                not tool_level
                                or (
                                    content is not None
                                    if tool_level == 1
                                    else bool(content) and (tool_level == 2 or blank_free(content))
                                )
                            )
                        ):
                            if not named:
                                continue
                            name = turn_names.get(call_id)
                            if message.get("name") == name:
                                continue
                            if names is not None and type(name) is str and name:
                                names += index, call_id, name  # its only fault: apart
                                if filled is not None:
                                    named_copy = message.copy()
                                    named_copy["name"] = name
                                    filled[index] = named_copy
                                continue
                        if first_only:
                            return None
                        dirty = True
                        continue
                repeat = False
                if pending is not None and repeats_pass and type(call_id) is str and call_id:
                    if turn_ids is None:  # once a turn: n repeats must not scan n calls each
                        turn_ids = _called_ids(tool_calls)
                    repeat = call_id in turn_ids
                if repeat:  # a repeat, which the provider takes; but see the widening below
                    if not first_only:
                        repeats.append((start, call_id))
                    follows_tool, follows_text = True, False
                    if (not content_rule or type(message.get("content")) is str) and (
                        not result_rules or _cross_result_ok(message, call_id, cross, turn_names)
                    ):
                        continue
                elif not first_only:
                    if type(call_id) is not str:
                        return None  # no id: the whole history's planner may give it to any call
                    strays.append((start, call_id))
                if first_only:
                    return None
                dirty = True
                follows_tool, follows_text = True, False
                continue
            after_results = follows_tool
            if follows_tool:
                follows_tool = False
                if after_tool is not None and role not in after_tool:
                    dirty = True  # (in the tool messages' range: no range starts here)
            if reasoning_rule and role == "user":
                if turn_calls and turn_unreasoned:  # the turn this user message closes is bad
                    if first_only:
                        return None
                    dirty = True
                turn_calls = turn_unreasoned = False
            if soft is not None:  # a range started at the calling message before its results
                if pending:  # not all answered: the planner may take it away, so no range there
                    start = _unstart(soft, starts, spans, called_from, strays, repeats)
                soft = None
            if pending:
                if first_only:
                    return None
                dirty = True
                unanswered.extend((start, call_id) for call_id in pending)
            elif (
                index
                and not first_only
                and (role == "user" if user_starts else (role != "system" and role != "developer"))
                # (not at a system message: the last range then holds the history's trailing
                # run of results with any system messages after it, the newest input)
                # after tool messages only some roles may come (Bedrock): a range starts after
                # sound assistant text only, which no repair of the range before takes away
                and (after_tool is None or follows_text)
                and (successors is None or _ordered_start(role, follows_text, order_bad, anywhere))
            ):
                if successors is not None:
                    # (role order) a range starts here only if the message stays where it is: one
                    # the repair drops (an empty assistant message) would leave the range before
                    # followed by what comes after it, which its role order may refuse (a user
                    # message after results); so the start is taken back as Bedrock's soft one is
                    soft = (start, dirty, index)
                if dirty:
                    spans.append((start, index))
                    dirty = False
                starts.append(index)
                start = index
            elif (
                soft_starts and after_results and role == "assistant" and message.get("tool_calls")
            ):
                # (Bedrock) a calling message right after results: if it is sound and each of its
                # calls is answered by the results right after it, no repair of this range or the
                # one before takes it away or puts anything before it, and an assistant message may
                # follow results; if not, the range goes on from the one before (here if it is not
                # sound, at the message after its results if a call is left without one)
                soft = (start, dirty, index)
                if dirty:
                    spans.append((start, index))
                    dirty = False
                starts.append(index)
                start = index
            if role == "assistant":
                tool_calls = message.get("tool_calls")
                turn_ids = None
                ok = True
                if tool_calls is not None:
                    turn_calls = True
                    pending = set()
                    try:  # the plain case: every call a dict with every field sound
                        if type(tool_calls) is not list or not tool_calls or eager:
                            raise KeyError
                        if named:
                            turn_names.clear()
                        for call in tool_calls:
                            call_id = call["id"]
                            function = call["function"]
                            if (
                                type(call) is not dict
                                or call["type"] is None
                                or type(call_id) is not str
                                or not call_id
                                or len(call_id) > max_length
                                or call_id in pending
                                or type(function) is not dict
                            ):
                                raise KeyError
                            name = function["name"]
                            if type(function["arguments"]) is not str or type(name) is not str:
                                raise KeyError
                            if not name:
                                raise KeyError
                            pending.add(call_id)
                            if named:
                                turn_names[call_id] = name
                            if name_match is not None:
                                call_names.add(name)
                        # (each id once: their order within the message tells nothing)
                        called += pending
                        called_from += [start] * len(pending)
                        if call_content:
                            content = message.get("content")
                            if not content and not (
                                cross.call_content_null_ok  # type: ignore[union-attr]
                                if content is None
                                else cross.call_content_empty_ok  # type: ignore[union-attr]
                            ):
                                ok = False
                    except (KeyError, TypeError):  # field by field
                        pending = set()
                        ok = _careful_calls(
                            message, tool_calls, pending, called, called_from, start, max_length
                        )
                        if call_rules and not _cross_calls_ok(
                            message, tool_calls, cross, turn_names
                        ):
                            ok = False
                        if type(tool_calls) is not list or not tool_calls:
                            tool_calls = ()
                else:
                    if call_rules:
                        turn_names.clear()
                    pending = None
                    ok = bool(message.get("content"))
                if "function_call" in message:
                    ok = False
                if reasoning_looked:
                    if "reasoning_content" in message:
                        ok = ok and reasoning_field_ok
                        if message["reasoning_content"] is None:
                            turn_unreasoned = True
                    else:
                        turn_unreasoned = True
                follows_text = ok and pending is None and not order_bad
            else:
                pending = None
                follows_text = False
                if role == "user":
                    ok = "tool_calls" not in message and (
                        not user_level
                        or (
                            bool(message.get("content"))
                            if user_level == 2
                            else _level_ok(message.get("content"), user_level)
                        )
                    )
                elif role == "system" or role == "developer":
                    ok = "tool_calls" not in message and (
                        not system_level or _level_ok(message.get("content"), system_level)
                    )
                else:
                    ok = False
            if not ok:
                if first_only:
                    return None
                if soft is not None:  # the range above does not start here after all
                    start = _unstart(soft, starts, spans, called_from, strays, repeats)
                    soft = None
                dirty = True
        else:
            break
    if soft is not None and pending:
        start = _unstart(soft, starts, spans, called_from, strays, repeats)
    if pending or (reasoning_rule and turn_calls and turn_unreasoned):
        if first_only:
            return None
        dirty = True
        unanswered.extend((start, call_id) for call_id in pending or ())
    if (
        cross is not None
        and cross.last_roles is not None
        and not dirty
        and messages[-1].get("role") not in cross.last_roles  # (a prefix too)
    ):
        dirty = True
        if stretches and stretches[-1][1] == size:  # (the pass read to the end)
            start = _last_start(messages, *stretches[-1], starting, start)
    if dirty:
        spans.append((start, len(messages)))
    if not eager and (
        (
            id_match is not None
            and not (
                all_match(compiled(profile.call_id_pattern), called)
                and all_match(compiled(profile.call_id_pattern), fast_ids)
            )
        )
        or (
            name_match is not None
            and not (all(map(name_match, call_names)) and all(map(name_match, fast_names)))
        )
    ):
        # an id or name outside the profile's pattern: the scan that checks each in place
        # (after the pass, the scan without it decides: the names it gathered are not all
        # the plainly checked calls')
        if names is not None:
            names.clear()
        if filled is not None:
            filled[:] = messages
        if fast is not None:
            return _scan(
                messages, profile, first_only=False, names=names, resume=False, filled=filled
            )
        return _scan(
            messages, profile, first_only=first_only, eager=True, names=names, filled=filled
        )
    if fast_ids and _needs_whole(fast_ids, called, strays, repeats, unanswered, cross):
        # an id the ranges look up is called in a stretch the pass vouched for, whose calls
        # it does not record: the scan without the pass (rare: a reused id)
        if names is not None:
            names.clear()
        if filled is not None:
            filled[:] = messages
        return _scan(messages, profile, first_only=False, names=names, resume=False, filled=filled)
    if unanswered:
        # a call the placeholder will answer, whose id another call has: its range reaches
        # over every range calling that id, where the planner sees both and renames it
        strays.extend(_reused(called, unanswered))
    if cross is not None and cross.request_ids and len(set(called)) != len(called):
        # ids unique in the request (Anthropic): the ranges calling one id are judged as one
        # (each range alone would not see the other's call), as a stray result's are
        strays.extend((start, call_id) for call_id, start in _repeated_ids(called, called_from))
    if strays or (repeats and spans):
        stops: dict[int, int] = {}  # (many strays share a range)

        def stop_after(start: int) -> int:
            """The range start after ``start``, or the end, where the loop recorded no range
            start in the stretches the pass vouched for (see :func:`_widen_for_strays`)."""
            stop = stops.get(start)
            if stop is None:
                position = bisect.bisect_right(starts, start)
                stop = starts[position] if position < len(starts) else size
                at = bisect.bisect_right(stretches, (start, size))
                while at < len(stretches) and stretches[at][0] < stop:
                    found = _first_start(messages, *stretches[at], starting)
                    if found is not None:
                        stop = min(found, stop)
                        break
                    at += 1
                stops[start] = stop
            return stop

        # (an id is often a stray of its range twice over: its call unanswered and reused,
        # and called twice under request-wide ids; each widens the range once)
        strays = list(dict.fromkeys(strays))
        callers = _callers(called, called_from, [*strays, *repeats])
        spans = _widen_for_strays(
            spans, starts, callers, strays, repeats, size, stop_after if stretches else None
        )
    return spans


_SCAN_RULES: dict[int, tuple[Profile, CrossRules | None]] = {}
"""``id(profile)`` -> (the profile, the rules of its scan pass when the one-pass scan judges
it without another family's rules)."""


def _scan_pass(
    profile: Profile, cross: CrossRules | None, record: bool
) -> tuple[Callable[..., bool | None] | None, bool]:
    """The vouch's pass the range scan of ``profile`` runs over sound stretches (see
    :func:`_scan`): for the rules ``cross`` (another family's), or the profile's own, which
    the vouch's rules model as well (:func:`toolmend.formats._openai_cross.cross_rules`;
    None where they do not); and whether it records the results lacking their name
    (``record``, where the rules want names), which it then reads numbered."""
    rules = cross
    if rules is None:
        entry = _SCAN_RULES.get(id(profile))
        if entry is None or entry[0] is not profile:
            if len(_SCAN_RULES) >= 256:
                _SCAN_RULES.clear()
            entry = _SCAN_RULES[id(profile)] = (profile, cross_rules(profile))
        rules = entry[1]
    if rules is None:
        return None, False
    record = record and rules.names
    return scan_pass(rules, record), record


Starting = tuple[
    bool, bool, "frozenset[str] | None", "dict[str | None, frozenset[str | None]] | None", bool
]
"""What tells a range start in :func:`_scan`: whether ranges start at user messages only,
whether at a calling message right after results (a soft start), the roles allowed after
results, the role order's follow table (None without one), whether an assistant message may
follow any message."""


def _resume_at(
    messages: Sequence[Any], low: int, failed: int, starting: Starting
) -> tuple[int, int | None, int]:
    """Where the careful loop of :func:`_scan` takes over from the pass that ran from the
    clean point ``low`` and could not vouch for message ``failed`` (``len(messages)``: a call
    left waiting at the end): the last range start in ``(low, failed]``, else ``low`` (the
    loop's own state is the one there); the start of the range before it when it is a soft
    start (Bedrock: a later message may take it back), else None; and how many call ids the
    pass gathered from the messages the loop reads again (before ``failed``)."""
    at = min(failed, len(messages) - 1)
    kind = 0
    while at > low:
        if at != failed and messages[at]["role"] == "tool":
            at -= 1  # (vouched for, a dict: a result starts no range)
            continue
        kind = _start_kind(messages, at, low, starting, at == failed)
        if kind:
            break
        at -= 1
    before = None
    if kind == 2:
        earlier = at - 1
        while earlier >= low:
            if _start_kind(messages, earlier, low, starting, False):
                before = earlier
                break
            earlier -= 1
    drop = 0
    for message in messages[at:failed]:  # (vouched for: dicts, each call a dict with an id)
        if message["role"] == "assistant":
            tool_calls = message.get("tool_calls")
            if tool_calls:
                drop += len(tool_calls)
    return at, before, drop


def _start_kind(
    messages: Sequence[Any], at: int, low: int, starting: Starting, failed: bool
) -> int:
    """Whether :func:`_scan`'s loop starts a range at message ``at`` (1; 2: a soft start),
    or not (0), where the messages from the clean point ``low`` to ``at`` are sound (the
    pass vouched for them; ``failed``: all but ``at``, which may hold anything) and the one
    before ``low`` left no call waiting: the loop's test of a range start, from the message
    before."""
    if at == 0:
        return 0
    message = messages[at]
    if type(message) is not dict:
        return 0
    role = message.get("role")
    if (type(role) is not str and role is not None) or role == "tool":
        return 0
    if failed and _waiting(messages, at, low):
        return 0
    before = messages[at - 1]
    prior = before["role"]
    user_starts, soft_starts, after_tool, follow, anywhere = starting
    if follow is not None:  # a role order: a start where the role may come, taken back if
        # the message after its results finds a call waiting, or the message is not sound (2)
        if (_KINDS.get(role) if type(role) is str else None) not in follow[_KINDS.get(prior)]:
            return 0
        if role == "assistant":
            return 2 if anywhere else 0
        return (
            2 if role == "user" and prior == "assistant" and before.get("tool_calls") is None else 0
        )
    if (role == "user" if user_starts else (role != "system" and role != "developer")) and (
        after_tool is None or (prior == "assistant" and before.get("tool_calls") is None)
    ):
        return 1
    if soft_starts and prior == "tool" and role == "assistant" and message.get("tool_calls"):
        return 2
    return 0


def _waiting(messages: Sequence[Any], at: int, low: int) -> bool:
    """Whether a call waits for its result at message ``at``, the messages from ``low`` to it
    sound (each tool message answered one waiting call) and ``low`` no tool message."""
    count = 0
    before = at - 1
    while before > low and messages[before]["role"] == "tool":
        count += 1
        before -= 1
    message = messages[before]
    tool_calls = message.get("tool_calls") if message["role"] == "assistant" else None
    return tool_calls is not None and count < len(tool_calls)


def _first_start(messages: Sequence[Any], low: int, high: int, starting: Starting) -> int | None:
    """The first range start in the stretch ``[low, high)`` the pass of :func:`_scan`
    vouched for (the loop recorded none there; the widening of a stray's range looks up the
    start after its own), or None."""
    for at in range(low, high):
        if _start_kind(messages, at, low, starting, False):
            return at
    return None


def _last_start(
    messages: Sequence[Any], low: int, high: int, starting: Starting, start: int
) -> int:
    """The last range start in the stretch ``[low, high)`` the pass of :func:`_scan`
    vouched for, else ``start`` (the loop's, before it): where the range that ends the
    history begins (a rule on the last message)."""
    for at in range(high - 1, low - 1, -1):
        if _start_kind(messages, at, low, starting, False):
            return at
    return start


def _needs_whole(
    fast_ids: list[str],
    called: list[str],
    strays: list[tuple[int, str]],
    repeats: list[tuple[int, str]],
    unanswered: list[tuple[int, str]],
    cross: CrossRules | None,
) -> bool:
    """Whether an id the widening of :func:`_scan` looks up (a stray or repeated result's, an
    unanswered call's, one called twice where ids are unique in the request) is called in a
    stretch the pass vouched for (``fast_ids``), which records no range per call."""
    wanted = {call_id for _, call_id in (*strays, *repeats, *unanswered)}
    if cross is None or not cross.request_ids:
        return bool(wanted) and not wanted.isdisjoint(fast_ids)
    # (the set of the vouched ids is made anyway: the wanted ids, a few, are looked up in it)
    seen = set(fast_ids)
    return len(seen) != len(fast_ids) or not seen.isdisjoint(wanted) or not seen.isdisjoint(called)


def _careful_calls(
    message: dict[str, Any],
    tool_calls: Any,
    pending: set[str],
    called: list[str],
    called_from: list[int],
    start: int,
    max_length: int,
) -> bool:
    """An assistant message's calls judged field by field (one that is not plainly sound):
    whether they pass; each string id goes into ``pending`` and, with the range ``start``,
    into ``called`` and ``called_from``."""
    ok = True
    if type(tool_calls) is not list or not tool_calls:
        ok = False
        tool_calls = ()
    for call in tool_calls:
        if type(call) is not dict:
            ok = False
            continue
        call_id = call.get("id")
        function = call.get("function")
        if (
            call.get("type") is None  # (still a call with an id: the repair fills it)
            or type(call_id) is not str
            or not call_id
            or len(call_id) > max_length
            or call_id in pending
            or type(function) is not dict
            or type(function.get("arguments")) is not str
            or type(function.get("name")) is not str
            or not function["name"]
        ):
            ok = False
        if type(call_id) is str:
            pending.add(call_id)
            called.append(call_id)
            called_from.append(start)
    return ok


def _unstart(
    soft: tuple[int, int | bool, int],
    starts: list[int],
    spans: list[tuple[int, int]],
    called_from: list[int],
    strays: list[tuple[int, str]],
    repeats: list[tuple[int, str]],
) -> int:
    """Take back a range start at a calling message right after results (``soft``: the
    start of the range before it, whether that range was dirty, the calling message): the
    range before runs on over it, so what was recorded as in the range starting there since
    is in that range. Returns the range's start."""
    previous, was_dirty, at = soft
    starts.pop()
    if was_dirty:
        spans.pop()
    position = len(called_from) - 1
    while position >= 0 and called_from[position] == at:
        called_from[position] = previous
        position -= 1
    for found in (strays, repeats):
        position = len(found) - 1
        while position >= 0 and found[position][0] == at:
            found[position] = (previous, found[position][1])
            position -= 1
    return previous


def _reused(called: list[str], unanswered: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The unanswered calls whose id another call also has (the planner gives the call its
    placeholder answers a fresh id, and must see the other call to know)."""
    counts = dict.fromkeys([call_id for _, call_id in unanswered], 0)
    for call_id in called:
        if call_id in counts:
            counts[call_id] += 1
    return [entry for entry in unanswered if counts[entry[1]] > 1]


def _range_rules(messages: Sequence[Any], profile: Profile) -> CrossRules | None:
    """The rules of a cross-family profile whose damaged ranges :func:`_scan` can tell; None
    when only the whole history can: the opening (a history that breaks it is judged whole: a
    range is not the whole conversation). Ids unique in the whole request (Anthropic) are kept
    so by :func:`_scan`, which judges the ranges calling one id as one; the role order and the
    last message's role (Mistral) see :func:`_ordered_rules`."""
    rules = _plain_params(profile)
    if (
        type(rules) is not CrossRules
        or not opening_ok(messages, rules)
        or not _opens_with_user(messages)
    ):
        return None
    if rules.successors is not None or rules.last_roles is not None:
        return _ordered_rules(rules, profile)
    return rules


_ORDERED: dict[int, tuple[CrossRules, CrossRules | None]] = {}
"""``id(rules)`` -> (the rules, :func:`_ordered_rules`' answer for them)."""


def _ordered_rules(rules: CrossRules, profile: Profile) -> CrossRules | None:
    """The range rules of a profile with rules between any two messages (Mistral's role order)
    or on the last message: :func:`_scan` checks the role order of every two messages and the
    last role, and starts a range only at a user message right after sound assistant text
    (it must be allowed there), which no repair of the range before moves, merges or follows
    with anything; the judge applies the last-message rule to the range that ends the history
    only (``Skeleton.ends``), as in the whole history.

    Call ids outside the profile's form, when it has one of a fixed length (Mistral's nine
    alphanumerics: every ``call_...`` id), are not damage: the id rewrite takes ids from the
    whole request, so :func:`toolmend._api.damage_in` rewrites them in history order, in the
    sound parts in one pass (:func:`request_id_fixes`) and in the damaged ranges through their
    planner, sharing one ``Skeleton.ids``. None when the profile's ids are refused otherwise,
    or its role order does not let a user message follow assistant text."""
    entry = _ORDERED.get(id(rules))
    if entry is not None and entry[0] is rules:
        return entry[1]
    ordered: CrossRules | None = rules
    successors = rules.successors
    if successors is not None and USER not in successors.get(ASSISTANT, (USER,)):
        ordered = None
    elif rules.id_match is not None:
        ordered = replace(rules, id_match=None) if _ids_rewritten(profile) else None
    if len(_ORDERED) >= 64:
        _ORDERED.clear()
    _ORDERED[id(rules)] = (rules, ordered)
    return ordered


def _ids_rewritten(profile: Profile) -> bool:
    """Whether every call id outside the profile's form is rewritten, request-wide, and
    nothing else about ids is refused: a pattern of one character class repeated the id
    length's times (Mistral's ``[a-zA-Z0-9]{9}``: an id the pattern takes is never rewritten
    for its length), ids unique per message."""
    pattern, length = profile.call_id_pattern, profile.call_id_length
    fixed = re.fullmatch(r"\[[^\]]+\]\{(\d+)\}", pattern) if pattern is not None else None
    return (
        fixed is not None
        and length is not None
        and int(fixed.group(1)) == length
        and profile.call_id_scope == "message"
    )


IdStretch = tuple[int, int, list[Any], list[int], list[Any], list[str], list[str]]
"""A sound stretch ``[low, high)`` between damaged ranges, its calls whose id is outside the
profile's form (message index, slot, id, flat: three items a call) and the tool messages
answering them (index, the call's position among those calls, flat: two items a result),
indexes the history's (flat: a tuple a call and a result were a third of the objects a
damaged history's repair made, each counted and walked by the garbage collector); then the
stretch rewritten with each of those ids' last ``call_id_length`` characters as its new id,
those ids and their tails, in call order:
the ids the request's rewrite gives them in the common case, made in the walk that finds them
(:func:`toolmend._quickmend.rewrite_stretch` takes them where its ids are those)."""


def request_id_fixes(
    messages: Sequence[Any], profile: Profile, spans: list[tuple[int, int]]
) -> tuple[set[str], list[IdStretch]] | None:
    """For a history whose damaged ranges are ``spans`` (from :func:`dirty_spans`) under a
    profile whose call ids the range scan leaves to a request-wide rewrite (Mistral, see
    :func:`_ordered_rules`): every call id of the history as the reader reads it (the ids a new
    id must not take), and the sound stretches outside ``spans`` with calls to rewrite. None
    when the profile's ranges hold every fault (nothing is rewritten outside them).

    One walk: the stretches are sound (plain dicts, each call's results right after it, as the
    scan checked), the ranges may hold anything the reader reads. Each stretch comes copied
    with its refused ids' tails as their new ids, as :func:`toolmend._quickmend.rewrite_stretch`
    copies it (a second walk over the stretches' calls was a tenth of a damaged history's
    repair, issue 32)."""
    rules = _plain_params(profile)
    if type(rules) is not CrossRules or rules.id_match is None:
        return None
    if rules.successors is None and rules.last_roles is None:
        return None
    ordered = _ordered_rules(rules, profile)
    if ordered is None or ordered.id_match is not None:
        return None
    id_match, length = rules.id_match, profile.call_id_length or 0
    taken: set[str] = set()
    stretches: list[IdStretch] = []
    low = 0
    for start, stop in [*spans, (len(messages), len(messages))]:
        if low < start:
            found = _stretch_fixes(messages, low, start, id_match, length, taken)
            if found[0]:
                stretches.append((low, start, *found))
        for message in messages[start:stop]:
            _add_call_ids(message, taken)
        low = stop
    return taken, stretches


def _stretch_fixes(
    messages: Sequence[Any],
    low: int,
    high: int,
    id_match: Callable[[str], Any],
    length: int,
    taken: set[str],
) -> tuple[list[Any], list[int], list[Any], list[str], list[str]]:
    """The calls of the sound ``messages[low:high]`` whose id ``id_match`` refuses (one not
    ``length`` long at once: index, slot, id, flat), and the tool messages answering them
    (index, the call's position among those calls, flat); each call id added to ``taken``.
    Then ``messages[low:high]`` with each of those calls and results copied (a shallow copy
    of each changed message, ``tool_calls`` list and call) under the last ``length``
    characters of its id, those ids and their tails, in call order."""
    calls: list[Any] = []
    results: list[int] = []
    seeds: list[str] = []
    tails: list[str] = []
    refused: dict[str, int] = {}  # the turn's refused ids -> their position in ``calls``
    add = taken.add
    part = messages[low:high]
    if type(part) is not list:
        part = list(part)
    for at, message in enumerate(part):
        role = message["role"]
        if role == "tool":
            if refused:
                position = refused.get(message["tool_call_id"])
                if position is not None:
                    results += low + at, position
                    copy = part[at] = dict(message)
                    copy["tool_call_id"] = tails[position]
        elif role == "assistant":
            tool_calls = message.get("tool_calls")
            if tool_calls:
                refused.clear()  # (one for all turns: no allocation a turn)
                copied = None
                for slot, call in enumerate(tool_calls):
                    call_id = call["id"]
                    add(call_id)
                    if len(call_id) != length or id_match(call_id) is None:
                        refused[call_id] = len(seeds)
                        calls += low + at, slot, call_id
                        if copied is None:
                            copy = part[at] = dict(message)
                            copied = copy["tool_calls"] = list(tool_calls)
                        tail = call_id[-length:]
                        seeds.append(call_id)
                        tails.append(tail)
                        new = copied[slot] = dict(call)
                        new["id"] = tail
    return calls, results, part, seeds, tails


def _add_call_ids(message: Any, taken: set[str]) -> None:
    """The ids of a damaged range's message's calls, as :func:`read` reads them (a call the
    reader refuses makes the range's read raise)."""
    if type(message) is not dict or message.get("role") != "assistant":
        return
    tool_calls = message.get("tool_calls")
    if not isinstance(tool_calls, (list, tuple)):
        return
    for call in tool_calls:
        call_id = call.get("id") if isinstance(call, Mapping) else getattr(call, "id", None)
        if type(call_id) is str and call_id:
            taken.add(call_id)


def _ordered_start(role: Any, follows_text: bool, order_bad: bool, anywhere: bool) -> bool:
    """Whether a range may start at a message of ``role``, where no call waits for a result,
    under rules between any two messages (Mistral's role order): at an assistant message where
    an assistant may follow any message (``anywhere``: no repair of the range before can end
    it with a message the assistant may not follow), or at a user message right after sound
    assistant text (allowed there, and no repair of the range before takes that text away).
    Never at a message whose role may not follow the one before (its range holds both)."""
    if order_bad:
        return False
    if role == "assistant":
        return anywhere
    return role == "user" and follows_text


def _follow_table(
    successors: Mapping[str, frozenset[str]],
) -> dict[str | None, frozenset[str | None]]:
    """For :func:`_scan` under rules between any two messages: the kind of a message (None for
    a role the rules do not know) -> the kinds that may follow it (after an unknown role, or at
    the start, any: the judge checks no order there; a message of an unknown role is damaged
    anyway, so after a known one it counts as out of order)."""
    kinds = frozenset({USER, ASSISTANT, SYSTEM, TOOL})
    table: dict[str | None, frozenset[str | None]] = {None: frozenset({*kinds, None})}
    for kind in kinds:
        table[kind] = frozenset(successors.get(kind, kinds))
    return table


def _opens_with_user(messages: Sequence[Any]) -> bool:
    """Whether the first message after the system messages comes from the user: the repair
    of a whole history that opens otherwise may put a message before it (Gemini, Bedrock),
    which the repair of its first range alone would not."""
    for message in messages:
        role = message.get("role") if type(message) is dict else None
        if role != "system" and role != "developer":
            return role == "user"
    return False


def _repeated_ids(called: list[str], called_from: list[int]) -> list[tuple[str, int]]:
    """Each call id used more than once, with the start of the first range calling it."""
    first: dict[str, int] = {}
    repeated: dict[str, int] = {}
    for call_id, start in zip(called, called_from, strict=True):
        if call_id in first:
            repeated.setdefault(call_id, first[call_id])
        else:
            first[call_id] = start
    return list(repeated.items())


def _level_ok(content: Any, level: int) -> bool:
    """Content under a rule of :class:`CrossRules` (0: any; 1: not null; 2: text; 3: text
    with no blank text)."""
    if level == 3:
        return bool(content) and blank_free(content)
    return level == 0 or (bool(content) if level == 2 else content is not None)


def _cross_calls_ok(
    message: dict[str, Any], tool_calls: Any, rules: CrossRules | None, names: dict[Any, Any]
) -> bool:
    """An assistant message's calls under a cross-family profile's id and name patterns, and
    its text beside them; fills ``names`` with the turn's function names."""
    assert rules is not None
    names.clear()
    if type(tool_calls) is not list:
        return True  # (the plain checks judge it)
    content = message.get("content")
    ok = bool(content) or (
        rules.call_content_null_ok if content is None else rules.call_content_empty_ok
    )
    for call in tool_calls:
        if type(call) is not dict or type(call.get("function")) is not dict:
            continue
        call_id, name = call.get("id"), call["function"].get("name")
        if type(call_id) is str:  # (an id of another type answers no result: no name wanted)
            names[call_id] = name
        if type(call_id) is str and rules.id_match is not None and rules.id_match(call_id) is None:
            ok = False
        if type(name) is str and rules.name_match is not None and rules.name_match(name) is None:
            ok = False
    return ok


def _cross_result_ok(
    message: dict[str, Any], call_id: str, rules: CrossRules | None, names: dict[Any, Any]
) -> bool:
    """A tool message answering a waiting call, under a cross-family profile: its content and
    (Gemini) the called function's name."""
    assert rules is not None
    content = message.get("content")
    if rules.tool_text and type(content) is not str:
        return False
    if not _level_ok(content, rules.tool_content):
        return False
    return not rules.names or message.get("name") == names.get(call_id)


def _callers(
    called: list[str], called_from: list[int], strays: list[tuple[int, str]]
) -> dict[str, list[int]]:
    """Call id -> the starts of the ranges calling it, for the ids of stray results only (a
    list per call of a long history was most of the scan's allocations)."""
    wanted = {call_id for _, call_id in strays}
    callers: dict[str, list[int]] = {}
    for call_id, start in zip(called, called_from, strict=True):
        if call_id in wanted:
            callers.setdefault(call_id, []).append(start)
    return callers


def _widen_for_strays(
    spans: list[tuple[int, int]],
    starts: list[int],
    callers: dict[str, list[int]],
    strays: list[tuple[int, str]],
    repeats: list[tuple[int, str]],
    size: int,
    stop_of: Callable[[int], int] | None = None,
) -> list[tuple[int, int]]:
    """Widen each stray result's range over every range calling its id, then merge
    (``stop_of``: the range start after a given one, where ``starts`` does not hold them all).

    Every one, not only the nearest: with an id used by several turns, the whole history's
    planner gives the stray to an earlier call still waiting for its result, which may lie
    before the nearest caller (the nearest answering only, it was dropped there as a duplicate
    while the waiting call got a placeholder). Ids are unique in nearly every history, so this
    is one more range, rarely a long one.

    A repeated result passes the rules, but the whole history's planner also gives it to an
    earlier call with its id that still waits (whose range is then dirty): its range is widened
    over the dirty ranges calling its id."""

    def recorded_stop(start: int) -> int:
        position = bisect.bisect_right(starts, start)
        return starts[position] if position < len(starts) else size

    if stop_of is None:
        stop_of = recorded_stop

    def dirty(start: int) -> bool:
        position = bisect.bisect_right(spans, (start, size + 1)) - 1
        return position >= 0 and spans[position][0] <= start < spans[position][1]

    wanted = list(spans)
    reaches: set[tuple[int, int]] = set()  # (strays of one range often reach the same ranges)
    for start, call_id in strays:
        found = callers.get(call_id)
        if found:  # range starts in history order
            reach = (min(found[0], start), max(found[-1], start))
            if reach not in reaches:
                reaches.add(reach)
                wanted.append((reach[0], stop_of(reach[1])))
    for start, call_id in repeats:
        found = [caller for caller in callers.get(call_id, ()) if caller != start and dirty(caller)]
        if found:
            wanted.append((min(found[0], start), stop_of(max(found[-1], start))))
    wanted.sort()
    merged: list[tuple[int, int]] = []
    for low, high in wanted:
        if merged and low <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged


def _getter(message: Any, index: int) -> Callable[[str], Any]:
    if type(message) is dict:
        return message.get
    if isinstance(message, Mapping):
        return message.get
    if hasattr(message, "role"):
        return lambda name: getattr(message, name, None)
    raise InvalidMessageError(index, "", "a message dict or object with a role", message)


def read(messages: Sequence[Any]) -> Skeleton:
    """Read an OpenAI chat history into a skeleton (see :class:`toolmend.formats.Format`)."""
    skeleton = Skeleton(NAME)
    kinds, roles, results = skeleton.kinds, skeleton.roles, skeleton.results
    defects = skeleton.defects
    kind_of = _KINDS.get
    for index, message in enumerate(messages):
        get = message.get if type(message) is dict else _getter(message, index)
        role = get("role")
        if type(role) is not str:
            role = _role_text(index, role)
        kind = kind_of(role, OTHER)
        kinds.append(kind)
        roles.append(role)
        if kind == TOOL:
            call_id = get("tool_call_id")
            if call_id is not None and type(call_id) is not str:
                raise InvalidMessageError(index, "tool_call_id", "a string", call_id)
            name = get("name")
            results[index] = (
                _new_tuple(Result, (call_id, name if type(name) is str else None, 0)),
            )
            content = get("content")
            if type(content) is list:
                defects.append(Defect(index, "tool_content_not_string", -1, "content"))
                _blank_text(defects, index, content)
            elif not content:
                _empty_content(defects, index, content)
            elif type(content) is str and content.isspace():
                defects.append(Defect(index, "blank_text", -1, "whitespace"))
        elif kind == ASSISTANT:
            _read_assistant(skeleton, index, message, get)
        else:
            if get("tool_calls"):
                defects.append(Defect(index, "unsupported_property", -1, "tool_calls"))
            if kind != OTHER:
                content = get("content")
                if not content:
                    _empty_content(defects, index, content)
                elif kind == USER:
                    _blank_text(defects, index, content)
    return skeleton


def _blank_text(defects: list[Defect], index: int, content: Any) -> None:
    """A user (or tool) message's text that is only whitespace, or text parts that are empty
    or only whitespace: ``blank_text`` (slot -1 when the whole content is such text, else the
    part's position; detail ``"empty"`` or ``"whitespace"``). No profile has the code; the
    rules of the providers that refuse blank text blocks report it under their own (Anthropic
    for user text, Bedrock for a tool message's, which LiteLLM sends as a toolResult text)."""
    if type(content) is str:
        if content.isspace():
            defects.append(Defect(index, "blank_text", -1, "whitespace"))
        return
    if type(content) is not list:
        return
    blank: list[Defect] = []
    for slot, part in enumerate(content):
        if type(part) is dict and part.get("type") == "text":
            text = part.get("text")
            if type(text) is str and (not text or text.isspace()):
                blank.append(Defect(index, "blank_text", slot, "whitespace" if text else "empty"))
    if blank and len(blank) == len(content):  # nothing else in it: the whole content is blank
        empty = all(defect.detail == "empty" for defect in blank)
        defects.append(Defect(index, "blank_text", -1, "empty" if empty else "whitespace"))
    else:
        defects.extend(blank)


def _no_blocks(content: Any) -> bool:
    """Whether an assistant message's content (not empty, not a string) shows nothing a
    gateway sends as a block: LiteLLM's Converse converter keeps an assistant message's text
    parts that are not blank and its images, and nothing else."""
    if type(content) is not list:
        return False
    for part in content:
        if type(part) is not dict:
            return False
        kind = part.get("type")
        if kind == "image_url":
            return False
        if kind == "text":
            text = part.get("text")
            if type(text) is not str or (text and not text.isspace()):
                return False
    return True


def _empty_content(defects: list[Defect], index: int, content: Any) -> None:
    """A user, system or tool message (or an assistant message with calls) without text:
    ``content_null`` when null or absent, ``content_empty`` when ``""`` or ``[]``; the profile
    decides whether that kind needs text."""
    if content is None:
        defects.append(Defect(index, "content_null", -1, "content"))
    elif isinstance(content, (str, list)):
        defects.append(Defect(index, "content_empty", -1, "content"))


_new_tuple = tuple.__new__
"""Builds a NamedTuple without the Python-level ``__new__`` it generates (a hot path)."""


def kind_of(message: Any) -> str:
    """The kind of one message, cheaply (the loop guard walks back to the last user message
    with it on every request)."""
    if type(message) is dict:
        role = message.get("role")
        if type(role) is str:
            return _KINDS.get(role, OTHER)
    return read([message]).kinds[0]


def _role_text(index: int, role: Any) -> str:
    if isinstance(role, str):  # a str subclass, like an enum member
        return str(role.value) if hasattr(role, "value") else str(role)
    raise InvalidMessageError(index, "role", "a string", role)


def _read_assistant(
    skeleton: Skeleton, index: int, message: Any, get: Callable[[str], Any]
) -> None:
    tool_calls = get("tool_calls")
    defects = skeleton.defects
    if tool_calls is not None:
        if not isinstance(tool_calls, (list, tuple)):
            raise InvalidMessageError(index, "tool_calls", "a list", tool_calls)
        if tool_calls:
            skeleton.calls[index] = _read_calls(skeleton, index, tool_calls)
            content = get("content")
            if not content:
                skeleton.mark("no_text", index)
                _empty_content(defects, index, content)
            elif content.isspace() if type(content) is str else _no_blocks(content):
                skeleton.mark("blank_text", index)
        else:
            defects.append(Defect(index, "empty_tool_calls", -1, "tool_calls"))
    if not tool_calls and get("function_call") is None:
        content = get("content")
        if content is None:
            defects.append(Defect(index, "null_content", -1, "content"))
            defects.append(Defect(index, "empty_assistant", -1, "content"))
        elif not content:
            defects.append(Defect(index, "empty_assistant", -1, "content"))
        elif content.isspace() if type(content) is str else _no_blocks(content):
            skeleton.mark("blank_text", index)
    if type(message) is dict:
        if "reasoning_content" in message:
            skeleton.mark("reasoning_field", index)
            if message["reasoning_content"] is not None:
                skeleton.mark("reasoning", index)
        if "function_call" in message and message["function_call"] is None:
            defects.append(Defect(index, "function_call_null", -1, "function_call"))
        if message.get("prefix") is True:
            skeleton.mark("prefix", index)
    elif get("reasoning_content") is not None:
        skeleton.mark("reasoning_field", index)
        skeleton.mark("reasoning", index)


def _read_calls(skeleton: Skeleton, index: int, tool_calls: Sequence[Any]) -> tuple[Call, ...]:
    found = []
    defects = skeleton.defects
    for slot, tool_call in enumerate(tool_calls):
        if type(tool_call) is dict or isinstance(tool_call, Mapping):
            call_id = tool_call.get("id")
            function = tool_call.get("function")
            tag = call_id if type(call_id) is str else ""
            if function is None:
                defects.append(Defect(index, "call_shape", slot, "function", tag))
                name, arguments = tool_call.get("name"), tool_call.get("arguments")
            elif type(function) is dict or isinstance(function, Mapping):
                name, arguments = function.get("name"), function.get("arguments")
            elif hasattr(function, "name"):  # an SDK Function object
                name = function.name
                arguments = getattr(function, "arguments", None)
            else:
                field = f"tool_calls[{slot}].function"
                raise InvalidMessageError(index, field, "an object with a name", function)
            if tool_call.get("type") is None:
                defects.append(Defect(index, "call_shape", slot, "type", tag))
        elif hasattr(tool_call, "id"):
            call_id = getattr(tool_call, "id", None)
            function = getattr(tool_call, "function", None)
            name = getattr(function, "name", None)
            arguments = getattr(function, "arguments", None)
        else:
            raise InvalidMessageError(index, f"tool_calls[{slot}]", "a tool call", tool_call)
        if call_id is not None and type(call_id) is not str:
            raise InvalidMessageError(index, f"tool_calls[{slot}].id", "a string", call_id)
        if name is not None and type(name) is not str and not isinstance(name, str):
            raise InvalidMessageError(index, f"tool_calls[{slot}].function.name", "a string", name)
        if arguments is not None and type(arguments) is not str:
            defects.append(Defect(index, "arguments_not_string", slot, "arguments", call_id or ""))
        found.append(_new_tuple(Call, (call_id, name, slot)))
    return tuple(found)


def live_rounds(messages: Sequence[Any]) -> tuple[int, list[tuple[int, tuple[Call, ...]]]] | None:
    """The live run for the loop guard, read from the end straight off plain dicts: the index
    after the last user message, and each tool round after it as (message index, its calls).

    Hooks run the guard on every request, and a skeleton of the run costs more than the guard
    itself. ``None`` when a message in the run is anything but the usual plain dict (an object,
    a role that is not text, a call without a ``function`` dict): the guard then reads the run
    in full, which also reports what it cannot read. A property test holds it to the full read.
    """
    rounds: list[tuple[int, tuple[Call, ...]]] = []
    index = len(messages)
    while index:
        index -= 1
        message = messages[index]
        if type(message) is not dict:
            return None
        role = message.get("role")
        if type(role) is not str:
            return None
        if role == "user":
            rounds.reverse()
            return index + 1, rounds
        if role == "assistant":
            tool_calls = message.get("tool_calls")
            if not tool_calls:
                continue
            if type(tool_calls) is not list:
                return None
            calls = []
            for slot, tool_call in enumerate(tool_calls):
                if type(tool_call) is not dict:
                    return None
                function = tool_call.get("function")
                if type(function) is not dict:
                    return None
                call_id = tool_call.get("id")
                name = function.get("name")
                if (call_id is not None and type(call_id) is not str) or (
                    name is not None and type(name) is not str
                ):
                    return None
                calls.append(_new_tuple(Call, (call_id, name, slot)))
            rounds.append((index, tuple(calls)))
    rounds.reverse()
    return 0, rounds


def call_arguments(message: Any, slot: int) -> Any:
    """The ``function.arguments`` of ``tool_calls[slot]`` (for the loop guard, which otherwise
    searches the message for the call)."""
    if type(message) is dict:  # the common case, without the ABC checks below
        calls = message.get("tool_calls")
        if type(calls) is list and slot < len(calls):
            call = calls[slot]
            if type(call) is dict:
                function = call.get("function", call)
                if type(function) is dict:
                    return function.get("arguments")
    calls = message.get("tool_calls") if isinstance(message, Mapping) else None
    if calls is None:
        calls = getattr(message, "tool_calls", None)
    if not isinstance(calls, (list, tuple)) or slot >= len(calls):
        return None
    call = calls[slot]
    function = (
        call.get("function", call) if isinstance(call, Mapping) else getattr(call, "function", None)
    )
    if isinstance(function, Mapping):
        return function.get("arguments")
    return getattr(function, "arguments", None)


def result_text(message: Any, slot: int) -> str | None:
    """The content of a tool message as text (``slot`` is always 0 here)."""
    content = (
        message.get("content")
        if isinstance(message, Mapping)
        else getattr(message, "content", None)
    )
    return _text_of(content)


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [part.get("text") for part in content if isinstance(part, Mapping)]
        return "\n".join(text for text in texts if isinstance(text, str))
    return None


# --- applying a plan --------------------------------------------------------------------------


def apply(messages: Sequence[Any], plan: Plan) -> list[Any]:
    """Build the repaired list (see :class:`toolmend.formats.Format`)."""
    edits = plan.edits
    return [
        # (a message kept as it is, most of a range: taken without a call)
        messages[item.index]
        if type(item) is Keep and item.index not in edits
        else _build(messages, item, edits)
        for item in plan.items
    ]


def _build(messages: Sequence[Any], item: Item, edits: dict[int, MessageEdit]) -> Any:
    if isinstance(item, Keep):
        edit = edits.get(item.index)
        message = messages[item.index]
        return message if edit is None else _edited(message, edit)
    if isinstance(item, Placeholder):
        placeholder = {"role": "tool", "tool_call_id": item.call_id, "content": item.text}
        if item.named and item.name:
            placeholder["name"] = item.name
        return placeholder
    if isinstance(item, Bridge):
        return {"role": item.role, "content": item.text}
    if isinstance(item, AsText):
        return {"role": item.role, "content": _render(messages, item.item, edits)}
    if isinstance(item, CallPart):
        return _call_part(messages[item.index], (item.slot, *item.more), edits.get(item.index))
    assert isinstance(item, Merge), "Blocks items are planned for block layouts only"
    return _merged(messages, item, edits)


def _call_part(message: Any, slots: Sequence[int], edit: MessageEdit | None) -> dict[str, Any]:
    """An assistant message of its own holding calls ``slots`` of ``message`` (edited as the
    message's own edit says), with empty text: a split parallel-call message, or the calls of
    a message moved apart from its text."""
    tool_calls = message_dict(message).get("tool_calls") or []
    calls = [tool_calls[slot] for slot in slots]
    if edit is not None:
        alone = MessageEdit(
            call_ids={n: edit.call_ids[s] for n, s in enumerate(slots) if s in edit.call_ids},
            call_names={n: edit.call_names[s] for n, s in enumerate(slots) if s in edit.call_names},
            normalize_calls=edit.normalize_calls,
        )
        calls = _edited_calls(calls, alone)
    return {"role": "assistant", "content": "", "tool_calls": calls}


def _edited(message: Any, edit: MessageEdit) -> dict[str, Any]:
    """A shallow copy of ``message`` with ``edit`` applied; nested parts copied where changed."""
    copy = message_dict(message)
    if edit.result_ids:
        copy["tool_call_id"] = edit.result_ids[0]
    if edit.result_names:
        copy["name"] = edit.result_names[0]
    if edit.call_ids or edit.call_names or edit.drop_calls or edit.normalize_calls:
        calls = _edited_calls(copy.get("tool_calls") or [], edit)
        if calls:
            copy["tool_calls"] = calls
        else:
            copy.pop("tool_calls", None)
            if copy.get("content") is None:
                copy["content"] = ""
    for key in edit.drop_fields:
        copy.pop(key, None)
    if edit.drop_blocks and isinstance(copy.get("content"), list):  # blank text parts
        copy["content"] = [
            part for slot, part in enumerate(copy["content"]) if slot not in edit.drop_blocks
        ]
    copy.update(edit.set_fields)
    if edit.stringify_content:
        copy["content"] = _text_of(copy.get("content")) or ""
    return copy


def _edited_calls(tool_calls: Sequence[Any], edit: MessageEdit) -> list[Any]:
    out = []
    for slot, tool_call in enumerate(tool_calls):
        if slot in edit.drop_calls:
            continue
        changed = edit.normalize_calls or slot in edit.call_ids or slot in edit.call_names
        if not changed:
            out.append(tool_call)
            continue
        call = message_dict(tool_call)
        if edit.normalize_calls:
            call = _canonical_call(call)
        if slot in edit.call_ids:
            call["id"] = edit.call_ids[slot]
        if slot in edit.call_names:
            call["function"] = {**call.get("function", {}), "name": edit.call_names[slot]}
        out.append(call)
    return out


def _canonical_call(call: dict[str, Any]) -> dict[str, Any]:
    """``{"id", "type": "function", "function": {"name", "arguments": <JSON text>}}``."""
    function = call.get("function")
    if not isinstance(function, Mapping):
        function = {"name": call.pop("name", None), "arguments": call.pop("arguments", None)}
    function = dict(function)
    arguments = function.get("arguments")
    if arguments is None:
        function["arguments"] = "{}"
    elif not isinstance(arguments, str):
        function["arguments"] = jsontext.dumps(arguments, ensure_ascii=False)
    call["function"] = function
    call.setdefault("type", "function")
    if call.get("type") is None:
        call["type"] = "function"
    return call


def _render(
    messages: Sequence[Any], item: Keep | Placeholder, edits: dict[int, MessageEdit]
) -> str:
    """A message's calls and results written out as plain text, content first."""
    if isinstance(item, Placeholder):
        return f"[tool result {item.call_id} ({item.name or 'tool'})]\n{item.text}"
    message = messages[item.index]
    edit = edits.get(item.index)
    data = _edited(message, edit) if edit is not None else message_dict(message)
    lines = []
    text = _text_of(data.get("content"))
    if data.get("role") == "tool":
        name = data.get("name") or "tool"
        lines.append(f"[tool result {data.get('tool_call_id')} ({name})]")
        if text:
            lines.append(text)
        return "\n".join(lines)
    if text:
        lines.append(text)
    for call in data.get("tool_calls") or []:
        call = _canonical_call(message_dict(call))
        function = call["function"]
        lines.append(
            f"[tool call {call.get('id')}: {function.get('name')}({function.get('arguments')})]"
        )
    return "\n".join(lines)


def _merged(messages: Sequence[Any], item: Merge, edits: dict[int, MessageEdit]) -> dict[str, Any]:
    """One message holding every part's content in order; text parts joined, media kept."""
    pieces: list[Any] = []
    for part in item.parts:
        if isinstance(part, Keep):
            edit = edits.get(part.index)
            message = messages[part.index]
            data = _edited(message, edit) if edit is not None else message_dict(message)
            content = data.get("content")
            if content is None and data.get("tool_calls"):
                content = _render(messages, part, edits)
        elif isinstance(part, AsText):
            content = _render(messages, part.item, edits)
        else:
            content = part.text
        if isinstance(content, list):
            pieces.extend(content)
        elif content:
            pieces.append(content)
    if all(isinstance(piece, str) for piece in pieces):
        return {"role": item.role, "content": "\n\n".join(pieces)}
    parts = [{"type": "text", "text": p} if isinstance(p, str) else p for p in pieces]
    return {"role": item.role, "content": parts}


_NEVER_MERGED = frozenset({"tool", "function"})


def merge_run(run: Sequence[Any]) -> dict[str, Any]:
    """One message from a same-role run: contents joined, calls and reasoning kept."""
    parts = [message_dict(message) for message in run]
    first = dict(parts[0])
    pieces: list[Any] = []
    for part in parts:
        content = part.get("content")
        if isinstance(content, list):
            pieces.extend(content)
        elif content:
            pieces.append(content)
    if all(isinstance(piece, str) for piece in pieces):
        first["content"] = "\n\n".join(pieces) if pieces else parts[0].get("content")
    else:
        first["content"] = [
            {"type": "text", "text": piece} if isinstance(piece, str) else piece for piece in pieces
        ]
    calls = [call for part in parts for call in part.get("tool_calls") or ()]
    if calls:
        first["tool_calls"] = calls
    reasoning = [part["reasoning_content"] for part in parts if part.get("reasoning_content")]
    if reasoning:
        first["reasoning_content"] = "\n\n".join(str(text) for text in reasoning)
    return first


class OpenAIChat(Format):
    """OpenAI Chat Completions messages (and the many APIs that copy them): an assistant
    message's ``tool_calls``, each answered by one ``tool`` message with its
    ``tool_call_id``."""

    name = NAME
    native_provider = "openai"

    read = staticmethod(read)
    apply = staticmethod(apply)
    claims = staticmethod(claims)
    result_text = staticmethod(result_text)
    call_arguments = staticmethod(call_arguments)
    merge_run = staticmethod(merge_run)
    kind_of = staticmethod(kind_of)
    live_rounds = staticmethod(live_rounds)
    quick_valid = staticmethod(quick_valid)
    quick_live = staticmethod(quick_live)
    quick_fixes = staticmethod(quick_fixes)
    dirty_spans = staticmethod(dirty_spans)
    named_spans = staticmethod(named_spans)
    request_id_fixes = staticmethod(request_id_fixes)
    repeated_results = staticmethod(repeated_results)
    quick_plans = True

    def keeps_apart(self, role: Any) -> bool:
        """Tool (and legacy function) messages each answer one call id."""
        return role in _NEVER_MERGED


FORMAT = register(OpenAIChat())
