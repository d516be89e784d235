"""The one-pass check of OpenAI-shaped messages bound for another family (Anthropic, Bedrock,
Gemini, Mistral through LiteLLM or a gateway): what :mod:`toolmend.formats._openai_chat`'s plain
pass does for the OpenAI family, plus the rules those profiles add on such a history.

The plain pass there models only the OpenAI family's rules, so every OpenAI-shaped history bound
for another family went through the full read, judge and (for a valid one) nothing else, at
several times the cost of ``json.dumps`` (issue 32). The rules the other families add on
messages are few and local: an id or function-name pattern, ids unique in the whole request,
the role allowed after tool messages, the first message after the system prompt, text a user
(or an assistant with calls) message must carry, the function name a tool message must repeat,
the role of the last message. :func:`cross_rules` turns a profile into those parameters (None
when the profile enforces a rule on messages the pass does not model), and :func:`cross_valid`
checks them in one pass over plain dicts that builds nothing: the pass is written out for each
profile from one template (:data:`_LOOP`), with the lines of its rules only, so that a vouch
for Anthropic or Bedrock costs about what OpenAI's plain pass costs; the same template, in
another mode, lists the result names or call ids a history needs (:func:`cross_fixes`).

Like the plain pass, it is a promise, never a verdict: it answers only when the full
``judge(read(messages), profile)`` would find nothing, and returns None whenever it is not sure;
property tests hold it to the full path for every profile (``tests/test_fastpath.py``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .._skeleton import ASSISTANT, SYSTEM, TOOL, USER

if TYPE_CHECKING:
    from ..profiles import Profile

__all__ = [
    "CrossRules",
    "Fixes",
    "cross_fixes",
    "cross_rules",
    "cross_valid",
    "fixes_likely",
    "opening_ok",
    "range_check",
    "scan_pass",
]

MODELLED = frozenset(
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
        "call_id_format",
        "result_id_format",
        "duplicate_call_id",
        "function_name_format",
        "call_shape",
        "arguments_not_string",
        "call_name_empty",
        "empty_tool_calls",
        "null_content",
        "empty_assistant",
        "unsupported_property",
        "function_call_null",
        "tool_content_not_string",
        "content_null",
        "content_empty",
        "role_order",
        "last_role",
        "first_not_user",
        "call_turn_position",
        "result_name_mismatch",
        "result_text_blank",  # a blank tool message bound for Bedrock: tool content level 3
    }
)
"""The problem codes the pass models on OpenAI-shaped messages."""

BLOCK_ONLY = frozenset(
    {
        "system_role",
        "empty_content",
        "text_empty",
        "text_whitespace",
        "trailing_whitespace",
        "input_not_object",
        "thinking_fields",
        "thinking_required",
        "thinking_final_assistant_disabled",
        "parts_empty",
        "part_no_data",
        "result_name_empty",
        "response_is_list",
        "mixed_call_and_response",
        "response_extra_parts",
        "misplaced_part",
        "result_with_text",
        "unknown_field",
        "thought_signature_missing",
        "roles_not_alternating",  # on messages only under ``Profile.alternation``
        "text_blank",  # Bedrock's reader's; the OpenAI reader records ``blank_text`` instead
    }
)
"""Codes only the block-layout rules report (:mod:`toolmend._block_rules`): a profile enabling
them judges OpenAI-shaped messages without them. A code in neither set makes the profile's
history take the full path: a rule added on messages must be modelled here first."""

_KIND_OF_ROLE = {
    "user": USER,
    "assistant": ASSISTANT,
    "system": SYSTEM,
    "developer": SYSTEM,
    "tool": TOOL,
}
_ANY_KIND = frozenset({USER, ASSISTANT, SYSTEM, TOOL})


@dataclass(frozen=True)
class CrossRules:
    """One profile's rules on OpenAI-shaped messages, as :func:`cross_valid` checks them."""

    max_length: int
    """Longest call id."""
    reasoning_field_ok: bool
    """Whether an assistant message may carry ``reasoning_content``."""
    repeats_pass: bool
    """Whether a second result for one of a turn's calls passes."""
    tool_text: bool
    """Tool content must be a string (Groq)."""
    id_match: Callable[[str], Any] | None
    """The call id pattern's ``fullmatch``."""
    name_match: Callable[[str], Any] | None
    """The function name pattern's ``fullmatch``."""
    request_ids: bool
    """Call ids unique in the whole request (Anthropic)."""
    successors: Mapping[str, frozenset[str]] | None
    """Message kind -> the kinds allowed right after it (``Profile.role_successors``), where it
    restricts more than what may follow a tool message."""
    after_tool: frozenset[str] | None
    """The roles allowed right after a tool message, where that is all ``role_successors``
    restricts (Bedrock): a test at the one place the pass knows the message before was one."""
    first_user: bool
    """The first message after the system messages comes from the user (Bedrock, Mistral)."""
    no_leading_call: bool
    """The conversation does not open with an assistant call (Gemini)."""
    needs_message: bool
    """A history of system messages only has nothing to send (LiteLLM to Anthropic)."""
    user_content: int
    """0: any; 1: not null; 2: text (neither null nor empty); 3: text with no blank text in it
    (no whitespace-only string, no empty or whitespace-only text part: Anthropic's user
    text, Bedrock's tool results)."""
    system_content: int
    """As ``user_content``, for system and developer messages."""
    tool_content: int
    """As ``user_content``, for tool messages."""
    call_content_null_ok: bool
    """Whether an assistant message with calls may have null ``content``."""
    call_content_empty_ok: bool
    """Whether an assistant message with calls may have ``""`` or ``[]`` as ``content``."""
    names: bool
    """Every tool message names its call's function (Gemini)."""
    last_roles: frozenset[str] | None
    """Roles the last message may have (Mistral), or None."""


def _content_level(kind: str, profile: Profile) -> int:
    if kind == USER and not BLANK_USER_TEXT.isdisjoint(profile.checks):
        return 3
    if kind == TOOL and "result_text_blank" in profile.checks:
        # Bedrock through a gateway: an empty or whitespace-only tool message (or a blank
        # text part) is a blank toolResult text (a null one is left to the full path)
        return 3
    if kind in profile.content_text_kinds:
        return 2
    return 1 if kind in profile.content_string_kinds else 0


def _fullmatch(pattern: str | None) -> Callable[[str], Any] | None:
    return re.compile(pattern).fullmatch if pattern else None


def cross_rules(profile: Profile) -> CrossRules | None:
    """The parameters of :func:`cross_valid` for ``profile``; None when the profile enforces a
    rule on OpenAI-shaped messages that the pass does not model (the full path decides)."""
    checks = profile.checks.keys()
    successors = profile.role_successors
    if successors is not None and any(
        kind not in (USER, ASSISTANT, SYSTEM, TOOL) for kind in successors
    ):
        return None
    if (
        profile.pairing not in ("adjacent", "count", "latest", "none")
        or profile.alternation is not None
        or profile.reasoning_in_tool_turns
        or not checks <= MODELLED | BLOCK_ONLY
        or not profile.content_string_kinds | profile.content_text_kinds
        <= {USER, SYSTEM, TOOL, ASSISTANT}
    ):
        return None
    after_tool = None
    if successors is not None and all(
        _ANY_KIND - ({TOOL} if kind != ASSISTANT else set()) <= successors[kind]
        for kind in successors
        if kind != TOOL
    ):
        allowed = successors.get(TOOL, _ANY_KIND)
        if TOOL not in allowed:
            return None  # parallel results would break it: nothing the pass can vouch for
        after_tool = frozenset(role for role, kind in _KIND_OF_ROLE.items() if kind in allowed)
        successors = None
    last_roles = None
    if profile.last_kinds is not None:
        last_roles = frozenset(
            role
            for role in ("user", "assistant", "system", "developer", "tool")
            if _KIND_OF_ROLE[role] in profile.last_kinds
        )
    return CrossRules(
        max_length=profile.call_id_max_length or 1 << 30,
        reasoning_field_ok="unsupported_property" not in checks,
        repeats_pass=profile.pairing != "count" and "duplicate_result" not in checks,
        tool_text="tool_content_not_string" in checks,
        id_match=_fullmatch(profile.call_id_pattern),
        name_match=_fullmatch(profile.function_name_pattern),
        request_ids=profile.call_id_scope == "request",
        successors=successors,
        after_tool=after_tool,
        first_user=profile.first_user,
        no_leading_call=profile.call_after_user,
        needs_message=profile.system_apart,
        user_content=_content_level(USER, profile),
        system_content=_content_level(SYSTEM, profile),
        tool_content=_content_level(TOOL, profile),
        call_content_null_ok=ASSISTANT not in profile.content_string_kinds,
        call_content_empty_ok=ASSISTANT not in profile.content_text_kinds,
        names=profile.results_need_name,
        last_roles=last_roles,
    )


BLANK_USER_TEXT = frozenset({"text_empty", "text_whitespace"})
"""The codes :func:`toolmend._rules` reports blank user text of an OpenAI-shaped history under
(Anthropic, issue 32 case 8): a profile with either has user content of level 3."""


def blank_free(content: Any) -> bool:
    """Whether a user (or tool) message's content has no blank text: not a whitespace-only
    string, no text part whose text is empty or whitespace only (what the OpenAI reader
    records as ``blank_text``)."""
    if type(content) is str:
        return not content.isspace()
    if type(content) is list:
        for part in content:
            if type(part) is dict and part.get("type") == "text":
                text = part.get("text")
                if type(text) is str and (not text or text.isspace()):
                    return False
    return True


def cross_valid(messages: Sequence[Any], rules: CrossRules) -> list[Any] | None:
    """None when the pass cannot vouch that ``judge(read(messages), profile)`` finds nothing
    for the profile of ``rules``; else the ``tool_calls`` lists of the assistant messages after
    the last user message (the live run, as the plain pass returns it). A missing field or one
    of the wrong kind raises ``KeyError`` or ``TypeError``: the caller takes it as "not sure".

    The loop is the plain pass's with the profile's rules added, written out for ``rules``
    alone (:func:`_pass_for`): a rule the profile lacks costs nothing, not even a test. The
    live run is read after it, backwards from the end (:func:`_live_tail`): gathered in the
    loop, it cost a list append per calling message and a new list per user message."""
    if not _ends_ok(messages, rules):
        return None
    id_match = rules.id_match
    if id_match is not None and _ids_apart(id_match) and not _first_id_ok(messages, id_match):
        return None  # the first id tells a history of refused ids at once
    if _pass_for(rules, "check")(messages) is None:
        return None
    return _live_tail(messages)


def _live_tail(messages: Sequence[Any]) -> list[Any]:
    """The ``tool_calls`` lists of the assistant messages after the last user message, in
    order, of a history the pass vouched for (every message a dict with a role; a calling
    message's ``tool_calls`` a non-empty list)."""
    live = []
    for message in reversed(messages):
        role = message["role"]
        if role == "user":
            break
        if role == "assistant":
            tool_calls = message.get("tool_calls")
            if tool_calls is not None:
                live.append(tool_calls)
    live.reverse()
    return live


def scan_pass(rules: CrossRules, record: bool) -> Callable[..., bool | None]:
    """The pass of :data:`_LOOP` that lets a range scan
    (:func:`toolmend.formats._openai_chat.dirty_spans`) skip the sound stretches of a damaged
    history at the cost of the vouch.

    Called as ``scan(messages, answered, ids, found, function_names, previous)`` (with
    ``record``, ``filled`` after them),
    ``messages`` an iterator over the messages from a clean point (no call waiting;
    ``answered``: right after a call turn's results; with ``record``, an ``enumerate`` of it;
    ``previous``: the kind of the message before, ``""`` for none, where the rules hold a
    role order), it returns None at the
    first message it cannot vouch for (the caller knows which from its iterator: the last one
    read), False when a call is left waiting at the end, True when all are sound; a missing
    field or one of the wrong kind raises ``KeyError`` or ``TypeError`` at the message being
    read. A repeated result is a failure here (the scan records it). The ids of each calling
    message it passes go into ``ids``, the function names into ``function_names`` where a
    name pattern is checked after the loop, and with ``record`` (the rules relaxed of their
    names) each result lacking its call's function name into ``found`` as index, call id and
    name (flat, three items a result), and a copy of it with the name into ``filled`` (a list
    as long as the history) at its index; the tests of the id and name patterns and of ids
    unique in the request are the caller's."""
    if record:
        entry = _RECORDING.get(id(rules))
        if entry is None or entry[0] is not rules:
            if len(_RECORDING) >= 64:
                _RECORDING.clear()
            entry = _RECORDING[id(rules)] = (rules, replace(rules, names=False))
        return _pass_for(entry[1], "scan_names")
    return _pass_for(rules, "scan")


_RECORDING: dict[int, tuple[CrossRules, CrossRules]] = {}
"""``id(rules)`` -> (the rules, the same without the result-name rule, for the names a scan
records)."""


@functools.lru_cache(maxsize=64)
def _ids_apart(id_match: Callable[[str], Any]) -> bool:
    """Whether the pass tests the ids against ``id_match`` only after its loop: a pattern
    that is not one character class, whose lengths the pass cannot test where it reads an
    id. There :func:`_first_id_ok` first tells a history of refused ids at once; for the
    others the pass's own length test does, at the first call (an OpenAI id is no Mistral id
    for its length)."""
    return _class_bounds(id_match) is None


def _first_id_ok(messages: Sequence[Any], id_match: Callable[[str], Any]) -> bool:
    """False when the first call of the first few messages has an id outside the pattern; True
    when it is in it, or when it is not there or not a string (the pass decides)."""
    for message in messages[:16]:
        if type(message) is dict and message.get("role") == "assistant":
            tool_calls = message.get("tool_calls")
            if type(tool_calls) is list and tool_calls and type(tool_calls[0]) is dict:
                call_id = tool_calls[0].get("id")
                return type(call_id) is not str or id_match(call_id) is not None
    return True


_LOOP = """
#if scan and record
def cross_pass(messages, answered, ids, found, function_names, previous, filled):
#elif scan
def cross_pass(messages, answered, ids, found, function_names, previous):
#else
def cross_pass(messages):
#endif
    pending = None  # the turn's calls still waiting for their results (``turn``), or None
#if names
    turn = {}  # (with their function names) one for all turns: no allocation a turn
#else
    turn = set()  # one for all turns: no allocation a turn
#endif
#if scan
    if answered:  # (after a call turn's results, every call answered)
        pending = turn
#endif
    tool_calls = ()  # the calls of the turn whose results come now
    called = None  # their ids, gathered at the turn's first repeated result
#if gather_ids and not scan
    ids = []
#endif
#if gather_names and not scan
    function_names = set()
#endif
#if mode == "ids"
    calls = []
    results = []
    kept = []  # the ids in the pattern
    refused = {}  # the turn's refused ids -> their position in ``calls``
#elif mode == "names"
    found = []
#endif
#if successors and not scan
    previous = ""  # the kind of the message before (none at first)
#endif
#if scan and not record
    for message in messages:
#elif scan
    for index, message in messages:
#elif mode != "check"
    for index, message in enumerate(messages):
#else
    for message in messages:
#endif
        if type(message) is not dict:
            return None
        role = message["role"]
        if role == "tool":
#if successors
            if previous not in BEFORE_TOOL:
                return None
            previous = "tool"
#endif
            call_id = message["tool_call_id"]
            if pending is None or type(call_id) is not str:
                return None  # ("" is in no turn: a call's empty id fails where it is read)
            try:
#if names
                name = pending.pop(call_id)
#else
                pending.remove(call_id)
#endif
            except KeyError:
#if repeats_pass and names
                if called is None:
                    called = {call["id"]: call["function"]["name"] for call in tool_calls}
                if call_id not in called:
                    return None
                name = called[call_id]
#elif repeats_pass
                if called is None:
                    called = {call.get("id") for call in tool_calls if type(call) is dict}
                if call_id not in called:
                    return None
#else
                return None
#endif
#if named and not scan
            if message["name"] != name:  # (none: ``KeyError``, which the caller takes as None)
                return None
#elif named
            if message.get("name") != name:
                return None
#endif
#if record
            if message.get("name") != name:
                found += index, call_id, name  # (flat: no object a result)
#if scan
                named_copy = message.copy()  # (made here, while the message is in the cache)
                named_copy["name"] = name
                filled[index] = named_copy
#endif
#elif mode == "ids"
            at = refused.get(call_id)
            if at is not None:
                results += index, at
#endif
#if tool_text
            if type(message["content"]) is not str:
                return None
#endif
#if tool_content
            if TOOL_CONTENT_FAILS:
                return None
#endif
            continue
        if pending is not None:  # the first message after a call turn's results
#if after_tool
            if pending or role not in after_tool:
                return None  # (only tool messages come between the call turn and this one)
#else
            if pending:
                return None
#endif
            pending = None
        if role == "assistant":
#if successors
            if previous not in BEFORE_ASSISTANT:
                return None
            previous = "assistant"
#endif
#if reasoning_field_ok
            if "function_call" in message:
#else
            if "function_call" in message or "reasoning_content" in message:
#endif
                return None
            tool_calls = message.get("tool_calls")
            if tool_calls is None:
                if not message["content"]:
                    return None
                continue
            if type(tool_calls) is not list or not tool_calls:
                return None
#if call_content
            if CALL_CONTENT_FAILS:
                return None
#endif
#if repeats_pass
            called = None
#endif
            pending = turn  # (empty: the turn before was answered whole)
#if mode == "ids"
            refused.clear()
            for slot, call in enumerate(tool_calls):
#else
            for call in tool_calls:
#endif
                if type(call) is not dict or call["type"] is None:
                    return None
                call_id = call["id"]
                function = call["function"]
                if (
                    type(call_id) is not str
                    or not call_id
#if id_lengths
                    or ID_LENGTH_FAILS
#endif
                    or call_id in pending
                    or type(function) is not dict
                ):
                    return None
                name = function["name"]
                if type(function["arguments"]) is not str or type(name) is not str or not name:
                    return None
#if name_max
                if len(name) > NAME_MAX:
                    return None
#endif
#if names
                pending[call_id] = name
#else
                pending.add(call_id)
#endif
#if gather_ids and not scan
                ids.append(call_id)
#endif
#if gather_names
                function_names.add(name)
#endif
#if mode == "ids"
                if REFUSED:
                    refused[call_id] = len(calls) // 3
                    calls += index, slot, call_id
#if id_length
                elif len(call_id) != ID_LENGTH:
                    return None  # in the pattern, but the rewrite would change it too
#endif
                else:
                    kept.append(call_id)
#endif
#if scan
            ids += pending  # (each id once: their order within the message tells nothing)
#endif
        elif role == "user":
            if "tool_calls" in message:
                return None
#if successors
            if previous not in BEFORE_USER:
                return None
            previous = "user"
#endif
#if user_content
            if USER_CONTENT_FAILS:
                return None
#endif
        elif role == "system" or role == "developer":
            if "tool_calls" in message:
                return None
#if successors
            if previous not in BEFORE_SYSTEM:
                return None
            previous = "system"
#endif
#if system_content
            if SYSTEM_CONTENT_FAILS:
                return None
#endif
        else:
            return None
#if scan
    return not pending  # (False: a call waits at the end; its message's ids are in ``ids``)
#else
    if pending:
        return None
#endif
#if request_ids
    if len(set(ids)) != len(ids):
        return None
#endif
#if id_match
    if not ids_match(ids):
        return None
#endif
#if gather_names and not scan
    if not all(map(name_match, function_names)):
        return None
#endif
#if mode == "ids"
    return calls, results, kept
#elif mode == "names"
    return found
#elif mode == "check"
    return True
#endif
"""
"""The one pass over OpenAI-shaped messages, with every rule :class:`CrossRules` can hold:
:func:`_pass_for` keeps the lines of the rules a profile has (``#if`` ... ``#endif``, on
:func:`_switches`) and writes its constants in. A rule added here is a line or a block; the
agreement properties of ``tests/test_fastpath.py`` hold every profile's pass to the full path.

``mode``: ``"check"`` returns the live run (:func:`cross_valid`); ``"names"`` the tool
messages lacking their call's function name and ``"ids"`` the calls whose id is outside the
pattern, their results and the ids kept (:func:`cross_fixes`); ``"scan"`` and ``"scan_names"``
the stretch a range scan vouches for (:func:`scan_pass`). The source is this template and
the profile's constants (numbers, booleans, the content tests of :data:`_FAILS`), never
anything from a history."""

_FAILS = {
    1: 'message["content"] is None',
    2: 'not message["content"]',
    3: 'not (content := message["content"]) or (content.isspace() if type(content) is str'
    " else type(content) is list and not blank_free(content))",
}
"""Content level (see :class:`CrossRules`) -> the test a message's content fails, inline (a
call a message was a fifth of the pass)."""

_CALL_FAILS = {
    (False, True): 'message["content"] is None',
    (True, False): '(content := message["content"]) is not None and not content',
    (False, False): 'not message["content"]',
    (True, True): "False",
}
"""(null ``content`` allowed, empty allowed) -> the test the ``content`` of an assistant
message with calls fails: null, or empty ("" or []), where the profile refuses it."""

_PASSES: dict[tuple[int, str, int | None], tuple[CrossRules, Callable[[Sequence[Any]], Any]]] = {}
"""(``id(rules)``, mode, id length) -> (the rules, their pass); the rules are kept so that
their id cannot be reused while the entry lives."""


def _pass_for(
    rules: CrossRules,
    mode: str,
    refuse: Callable[[str], Any] | None = None,
    id_length: int | None = None,
) -> Callable[[Sequence[Any]], Any]:
    """The pass of :data:`_LOOP` for ``rules`` in ``mode``, written once per rules and mode.
    ``refuse``: the id pattern's ``fullmatch`` the ``"ids"`` pass records the ids outside of
    (``rules`` are relaxed: they have no id pattern), ``id_length`` the profile's id length."""
    key = (id(rules), mode, id_length)
    entry = _PASSES.get(key)
    if entry is not None and entry[0] is rules:
        return entry[1]
    switches = _switches(rules, mode, id_length)
    source = _LOOP
    for level_name in ("USER", "SYSTEM", "TOOL"):
        level = switches[level_name.lower() + "_content"]
        source = source.replace(f"{level_name}_CONTENT_FAILS", _FAILS.get(level, "False"))
    source = source.replace("ID_LENGTH_FAILS", _length_test(*switches["id_lengths"] or (0, None)))
    source = source.replace(
        "CALL_CONTENT_FAILS",
        _CALL_FAILS[rules.call_content_null_ok, rules.call_content_empty_ok],
    )
    for name, value in (
        ("ID_LENGTH", switches["id_length"]),
        ("NAME_MAX", switches["name_max"]),
    ):
        source = source.replace(name, repr(value))
    source = source.replace("REFUSED", _refused_test(refuse))
    namespace: dict[str, Any] = {
        f"BEFORE_{kind.upper()}": _before(rules.successors, kind)
        for kind in (USER, ASSISTANT, SYSTEM, TOOL)
    }
    namespace.update(
        {
            "after_tool": rules.after_tool,
            "id_match": rules.id_match,
            "refuse": refuse,
            "ids_match": _ids_test(rules.id_match) if switches["id_match"] else None,
            "name_match": rules.name_match,
            "blank_free": blank_free,
        }
    )
    exec(compile(_kept(source, switches), "<toolmend cross pass>", "exec"), namespace)
    made: Callable[[Sequence[Any]], Any] = namespace["cross_pass"]
    if len(_PASSES) >= 256:
        _PASSES.clear()
    _PASSES[key] = (rules, made)
    return made


def _switches(rules: CrossRules, mode: str, id_length: int | None = None) -> dict[str, Any]:
    """The switches of :data:`_LOOP` for ``rules`` in ``mode`` (``id_length``: see
    :func:`_pass_for`)."""
    name_max = None
    pattern = getattr(rules.name_match, "__self__", None)
    if isinstance(pattern, re.Pattern):
        bounded = _ANY_NAME.fullmatch(pattern.pattern)
        if bounded is not None:
            name_max = int(bounded.group(1))  # a length test, not a pattern (Anthropic's)
    scan = mode in ("scan", "scan_names")
    least, most = 0, rules.max_length
    bounds = _class_bounds(rules.id_match) if rules.id_match is not None and not scan else None
    if bounds is not None:
        # the id pattern's lengths tested where the id is read, not in a walk over them all
        least, most = bounds[0], min(most, 1 << 30 if bounds[1] is None else bounds[1])
    return {
        "mode": mode,
        "scan": scan,
        "record": mode in ("names", "scan_names"),
        "successors": rules.successors is not None,
        "repeats_pass": rules.repeats_pass and not scan,
        "named": rules.names and mode != "scan_names",
        "names": rules.names or mode in ("names", "scan_names"),
        "tool_text": rules.tool_text,
        "tool_content": rules.tool_content,
        "user_content": rules.user_content,
        "system_content": rules.system_content,
        "after_tool": rules.after_tool is not None,
        "reasoning_field_ok": rules.reasoning_field_ok,
        "call_content": not (rules.call_content_null_ok and rules.call_content_empty_ok),
        "id_lengths": (least, most) if least > 1 or most < 1 << 30 else None,
        "gather_ids": rules.id_match is not None or rules.request_ids,
        "gather_names": rules.name_match is not None and name_max is None,
        "name_max": name_max,
        "request_ids": rules.request_ids and not scan,
        "id_match": rules.id_match is not None and not scan,
        "id_length": id_length,
    }


def _kept(source: str, switches: dict[str, Any]) -> str:
    """``source`` without the lines of the ``#if`` blocks whose switch is off (``#if``,
    ``#elif``, ``#else``, ``#endif`` at the start of a line, nested; each condition a Python
    expression over ``switches``)."""
    kept: list[str] = []
    stack: list[tuple[bool, bool]] = []  # (the enclosing block's lines kept, a branch taken)
    on = True
    for line in source.splitlines():
        word, _, condition = line.partition(" ")
        if word == "#if":
            stack.append((on, False))
        elif word == "#endif":
            on = stack.pop()[0]
            continue
        elif word not in ("#elif", "#else"):
            if on:
                kept.append(line)
            continue
        outer, done = stack[-1]
        on = (
            outer
            and not done
            and (word == "#else" or bool(eval(condition, {"__builtins__": {}}, switches)))
        )
        stack[-1] = (outer, done or on)
    return "\n".join(kept) + "\n"


def _before(successors: Mapping[str, frozenset[str]] | None, kind: str) -> frozenset[str]:
    """The kinds of message (and ``""``, none) a message of ``kind`` may follow."""
    if successors is None:
        return frozenset()
    return frozenset(
        {""} | {before for before in _ANY_KIND if kind in successors.get(before, _ANY_KIND)}
    )


def _refused_test(refuse: Callable[[str], Any] | None) -> str:
    """The test that ``call_id`` is outside the pattern of ``refuse``: its length first where
    the pattern has a count (an OpenAI id is refused by Mistral without a regex call)."""
    pattern = getattr(refuse, "__self__", None)
    text = pattern.pattern if isinstance(pattern, re.Pattern) else ""
    count = _ONE_CLASS.fullmatch(text)
    if count is None:
        return "refuse(call_id) is None"
    least, most = _counts(count)
    bound = "" if most is None else f" <= {most}"
    return f"not {least} <= len(call_id){bound} or refuse(call_id) is None"


def _length_test(least: int, most: int) -> str:
    """The test an id's length fails: shorter than ``least`` (an empty id fails the pass's own
    test), longer than ``most`` (``1 << 30``: no most)."""
    if least > 1 and least == most:
        return f"len(call_id) != {least}"
    if least > 1:
        bound = "" if most >= 1 << 30 else f" <= {most}"
        return f"not {least} <= len(call_id){bound}"
    return f"len(call_id) > {most}"


def _class_bounds(match: Callable[[str], Any]) -> tuple[int, int | None] | None:
    """The least and the most characters (None: no most) of a pattern of one character class
    without a newline in it (every id pattern of the profiles); None for any other pattern."""
    pattern = getattr(match, "__self__", None)
    text = pattern.pattern if isinstance(pattern, re.Pattern) else ""
    count = _ONE_CLASS.fullmatch(text)
    if count is None or "\n" in text:
        return None
    return _counts(count)


def _ids_test(match: Callable[[str], Any] | None) -> Callable[[list[str]], bool]:
    """The test the check pass runs on the ids it gathered: the characters alone
    (:func:`_chars_match`) where the pass tests the pattern's lengths where it reads each id
    (a pattern of one character class, :func:`_class_bounds`), else :func:`_all_match`."""
    if match is None or _class_bounds(match) is None:
        return _all_match(match)
    return _chars_match(match)


def _chars_match(match: Callable[[str], Any]) -> Callable[[list[str]], bool]:
    """A test that every id of a non-empty list is in the pattern of ``match`` (one
    character class with a count, ``\n`` not in it), for ids whose lengths are known to be
    in the count: their characters alone, joined by a member of the class, deleted by
    ``bytes.translate`` (C speed) must leave nothing; ids that are not all ASCII are matched
    one at a time."""
    pattern = getattr(match, "__self__", None)
    text = pattern.pattern if isinstance(pattern, re.Pattern) else ""
    one = re.compile(text[: text.index("]") + 1]).fullmatch
    deleted = bytes(byte for byte in range(128) if one(chr(byte)))
    if not deleted:
        return lambda ids: all(map(match, ids))
    joint = chr(deleted[0])

    def chars_match(ids: list[str]) -> bool:
        joined = joint.join(ids)
        if joined.isascii() and not joined.encode().translate(None, deleted):
            return True
        return all(map(match, ids))

    return chars_match


def _all_match(match: Callable[[str], Any] | None) -> Callable[[list[str]], bool]:
    """A test that every id of a list is in the pattern of ``match``. A pattern that is one
    character class with a count (every id pattern of the profiles) is tested on all the ids
    at once: their bytes, joined by newlines, with the class's ASCII characters deleted
    (``bytes.translate``, C speed) must leave nothing, and their lengths must fit the count;
    anything else (a newline or a character outside ASCII in an id) is matched one id at a
    time, as any other pattern is: a regex call an id was a tenth of the vouch."""
    if match is None:
        return lambda ids: True
    pattern = getattr(match, "__self__", None)
    text = pattern.pattern if isinstance(pattern, re.Pattern) else ""
    count = _ONE_CLASS.fullmatch(text)
    if count is None or "\n" in text:
        return lambda ids: all(map(match, ids))
    one = re.compile(text[: text.index("]") + 1]).fullmatch
    deleted = bytes(byte for byte in range(128) if one(chr(byte))) + b"\n"
    least, most = _counts(count)

    def all_match(ids: list[str]) -> bool:
        joined = "\n".join(ids)
        if (
            not joined.isascii()  # (a lone surrogate has no UTF-8: encoding it raised)
            or joined.encode().translate(None, deleted)
            or joined.count("\n") != len(ids) - 1
        ):
            return all(map(match, ids))
        if least == 1:
            lengths_ok = all(ids)
        else:
            lengths_ok = least == 0 or not ids or min(map(len, ids)) >= least
        return lengths_ok and (most is None or not ids or max(map(len, ids)) <= most)

    return all_match


def all_ids_match(match: Callable[[str], Any] | None) -> Callable[[list[str]], bool]:
    """A test that every id of a list is in the pattern of ``match``, lengths included
    (:func:`_all_match`): for a walk that does not test each id's length where it reads it
    (``toolmend._walks``)."""
    return _all_match(match)


def _counts(count: re.Match[str]) -> tuple[int, int | None]:
    """The least and the most characters of a match of :data:`_ONE_CLASS` (None: no most)."""
    least, most = count.group(1), count.group(2)
    if least is None:
        return (1 if count.group(0).endswith("+") else 0), None
    return int(least), (int(least) if most is None else int(most) if most else None)


_ANY_NAME = re.compile(r"\(\?s:\.\{1,(\d+)\}\)")
"""A pattern of any non-empty text up to a length (``(?s:.{1,200})``): a name in it is a
non-empty string no longer than that."""

_ONE_CLASS = re.compile(r"\[[^\]^\\]+\](?:\+|\*|\{(\d+)(?:,(\d*))?\})")
"""A pattern of one character class (not negated, no ``]`` or escape inside) and a count (its
least and, unless open, its most)."""


def opening_ok(messages: Sequence[Any], rules: CrossRules) -> bool:
    """The first message after the system messages: there is one where a history of system
    messages has nothing to send; it comes from the user, or is no assistant call, where the
    profile says so."""
    for message in messages:
        if type(message) is not dict:
            return False
        role = message.get("role")
        if role == "system" or role == "developer":
            continue
        if rules.first_user and role != "user":
            return False
        return not (rules.no_leading_call and role == "assistant" and message.get("tool_calls"))
    return not rules.needs_message


Fixes = tuple[list[Any], list[Any], list[int], list[str]]
"""What :func:`cross_fixes` found to change: result names, flat (tool message index, call id,
the call's function name, the next result's index, ...); call ids outside the profile's
pattern, flat (assistant message index, slot, id, the next call's index, slot, id, ...); the
tool messages answering those calls, flat (index, the position of their call among the
calls, ...); and the ids of the other calls (in
the pattern: a new id must not be one of them). Flat: a history bound for Mistral lists every
call and every result, and one bound for Gemini every result, and a tuple each was a third of
the objects the repair made, which the garbage collector counts and walks (issue 32)."""

_RELAXED: dict[int, tuple[CrossRules, CrossRules, CrossRules]] = {}
"""``id(rules)`` -> (the rules, the same without the result-name and id-pattern rules, and
those without the rules on a conversation's opening either)."""


def _ends_ok(messages: Sequence[Any], rules: CrossRules) -> bool:
    """Whether ``messages`` is not empty and passes ``rules``' rules on its first messages and
    on the role of its last one (a role of another type, a list perhaps, passes none)."""
    if not messages or not opening_ok(messages, rules):
        return False
    last_roles = rules.last_roles
    if last_roles is None:
        return True
    last = messages[-1]
    return type(last) is dict and type(last.get("role")) is str and last["role"] in last_roles


def cross_fixes(
    messages: Sequence[Any], rules: CrossRules, id_length: int | None = None, opening: bool = True
) -> Fixes | None:
    """The only changes the full path would make to ``messages``, when the history passes
    every rule of ``rules`` except that tool messages lack their call's function name
    (Gemini) or call ids are outside the provider's pattern (Mistral): one of the two, never
    both (the full path decides then). None when anything else is wrong, or nothing is.
    ``id_length`` is the profile's ``call_id_length``: an id in the pattern but of another
    length passes the rules, yet the full path's id rewrite would change it too (None then).
    ``opening=False``: ``messages`` is a range of a history after its start, which the full
    path judges without the rules on how a conversation opens (``Skeleton.whole`` is false).

    What a cross-family target changes on nearly every message of a valid history: the full
    path would read, judge and plan all of it to find the same edits (issue 32). One pass
    checks the other rules and lists the edits (:data:`_LOOP` in mode ``"names"`` or
    ``"ids"``)."""
    entry = _RELAXED.get(id(rules))
    if entry is None or entry[0] is not rules:
        relaxed = replace(rules, names=False, id_match=None)
        mid = replace(relaxed, first_user=False, no_leading_call=False, needs_message=False)
        if len(_RELAXED) >= 64:
            _RELAXED.clear()
        entry = _RELAXED[id(rules)] = (rules, relaxed, mid)
    if (not rules.names and rules.id_match is None) or (rules.names and rules.id_match):
        return None
    relaxed = entry[1] if opening else entry[2]
    if not _ends_ok(messages, relaxed):
        return None
    try:
        if rules.names:
            names = _pass_for(relaxed, "names")(messages)
            return (names, [], [], []) if names else None
        found = _pass_for(relaxed, "ids", rules.id_match, id_length)(messages)
    except (KeyError, TypeError):
        return None
    return ([], *found) if found is not None and found[0] else None


def fixes_likely(messages: Sequence[Any], rules: CrossRules, id_length: int | None = None) -> bool:
    """Whether a whole history that the one-pass check could not vouch for may be one that
    :func:`cross_fixes` answers for: its first call's id refused (the ids of a history bound
    for Mistral are all refused, from the first), or its first tool message without a name
    (bound for Gemini, every result of an OpenAI-shaped history lacks it). Else the check
    failed on something else (a damage), and :func:`cross_fixes` would walk up to it only to
    answer None (issue 32: 0.02x ``json.dumps`` on a damaged history); the caller leaves the
    history to its ranges, which repair it exactly as the full path does, names and ids
    included, only not in one pass."""
    if rules.names == (rules.id_match is not None):
        return False  # (:func:`cross_fixes` answers for neither both nor none)
    for message in messages:
        if type(message) is not dict:
            return False
        role = message.get("role")
        if rules.names and role == "tool":
            name = message.get("name")
            return type(name) is not str or not name
        if rules.id_match is not None and role == "assistant":
            tool_calls = message.get("tool_calls")
            if type(tool_calls) is list and tool_calls and type(tool_calls[0]) is dict:
                call_id = tool_calls[0].get("id")
                return type(call_id) is str and (
                    rules.id_match(call_id) is None
                    or (id_length is not None and len(call_id) != id_length)
                )
    return False


def range_check(rules: CrossRules) -> Callable[[Sequence[Any]], list[Any] | None]:
    """:func:`cross_valid` for a damaged range after a history's start, under ``rules`` (a
    range's: ``toolmend.formats._openai_chat.range_params``), for a range that is not empty:
    without the look at the first call's id (a shortcut for a whole history of refused ids,
    Mistral's; the pass holds a range's few calls to the pattern itself), and without the look
    at the opening and the last message where ``rules`` have no rule on them (the pass refuses
    what that look would: a message that is no dict). Raises as :func:`cross_valid` does."""
    check = _pass_for(rules, "check")
    if not (
        rules.first_user
        or rules.no_leading_call
        or rules.needs_message
        or rules.last_roles is not None
    ):

        def checked(messages: Sequence[Any]) -> list[Any] | None:
            return None if check(messages) is None else _live_tail(messages)

        return checked

    def ends_then_check(messages: Sequence[Any]) -> list[Any] | None:
        if not _ends_ok(messages, rules) or check(messages) is None:
            return None
        return _live_tail(messages)

    return ends_then_check
