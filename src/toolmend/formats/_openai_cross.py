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
checks them in one pass over plain dicts that builds nothing.

Like the plain pass, it is a promise, never a verdict: it answers only when the full
``judge(read(messages), profile)`` would find nothing, and returns None whenever it is not sure;
property tests hold it to the full path for every profile (``tests/test_fastpath.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .._skeleton import ASSISTANT, SYSTEM, TOOL, USER

if TYPE_CHECKING:
    from ..profiles import Profile

__all__ = ["CrossRules", "Fixes", "cross_fixes", "cross_rules", "cross_valid", "opening_ok"]

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


def _content_ok(content: Any, level: int) -> bool:
    if level == 3:
        return bool(content) and blank_free(content)
    return level == 0 or (bool(content) if level == 2 else content is not None)


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

    The loop is the plain pass's, each added rule behind one test of a local that is false for
    the profiles without it; the id and name patterns and the request-wide uniqueness of ids
    are checked after it, over the ids and names it gathered (``map`` over a compiled pattern
    costs a fraction of a pattern call per call in the loop)."""
    if not messages or not opening_ok(messages, rules):
        return None
    last_roles = rules.last_roles
    if last_roles is not None:
        last = messages[-1]
        if type(last) is not dict or last["role"] not in last_roles:
            return None
    max_length, repeats_pass = rules.max_length, rules.repeats_pass
    reasoning_field_ok, successors = rules.reasoning_field_ok, rules.successors
    user_content, system_content = rules.user_content, rules.system_content
    tool_content, named = rules.tool_content, rules.names
    tool_checks = rules.tool_text or tool_content
    tool_rules = tool_checks or named
    after_tool = rules.after_tool
    null_ok, empty_ok = rules.call_content_null_ok, rules.call_content_empty_ok
    call_content = not (null_ok and empty_ok)
    id_match = rules.id_match
    gather = id_match is not None or rules.name_match is not None or rules.request_ids
    ids: list[str] = []
    function_names: set[str] = set()
    pending: set[str] | None = None  # the turn's calls still waiting for their results
    tool_calls: Any = ()  # the calls of the turn whose results come now
    called: set[Any] | None = None  # their ids, gathered at the turn's first repeated result
    names: dict[str, str] = {}  # call id -> function name, for the turn (``names``)
    live: list[Any] = []
    previous = ""  # the kind of the message before (``successors`` only; none at first)
    for message in messages:
        if type(message) is not dict:
            return None
        role = message["role"]
        if successors is not None:
            kind = _KIND_OF_ROLE.get(role)
            allowed = successors.get(previous)
            if kind is None or (allowed is not None and kind not in allowed):
                return None
            previous = kind
        if role == "tool":
            call_id = message["tool_call_id"]
            if pending is None or type(call_id) is not str or not call_id:
                return None
            try:
                pending.remove(call_id)
            except KeyError:
                if not repeats_pass:
                    return None
                if called is None:
                    called = {call.get("id") for call in tool_calls if type(call) is dict}
                if call_id not in called:
                    return None
            if tool_rules:
                if named and message.get("name") != names[call_id]:
                    return None
                if tool_checks and not _tool_ok(message["content"], rules):
                    return None
            continue
        if pending:
            return None
        if pending is not None and after_tool is not None and role not in after_tool:
            return None  # (only tool messages come between a call turn and this message)
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
            if call_content:
                content = message["content"]
                if not content and not (null_ok if content is None else empty_ok):
                    return None
            live.append(tool_calls)
            called = None
            pending = set()
            if named:
                names = {}
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
                if gather:
                    if not ids and id_match is not None and id_match(call_id) is None:
                        return None  # the first id tells a history of refused ids at once
                    ids.append(call_id)
                    function_names.add(name)
                if named:
                    names[call_id] = name
        elif role == "user":
            if "tool_calls" in message:
                return None
            if user_content:
                content = message["content"]
                if not content and (user_content >= 2 or content is None):
                    return None
                if user_content == 3 and not blank_free(content):
                    return None
            live = []
        elif role == "system" or role == "developer":
            if "tool_calls" in message or (
                system_content and not _content_ok(message["content"], system_content)
            ):
                return None
        else:
            return None
    if pending or (gather and not _ids_and_names_ok(ids, function_names, rules)):
        return None
    return live


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


def _tool_ok(content: Any, rules: CrossRules) -> bool:
    """A tool message's content, under a profile with rules on it."""
    if rules.tool_text and type(content) is not str:
        return False
    return not rules.tool_content or _content_ok(content, rules.tool_content)


def _ids_and_names_ok(ids: list[str], function_names: set[str], rules: CrossRules) -> bool:
    """Every call id and function name in the profile's form, and the ids unique in the
    request where the profile wants that."""
    if rules.request_ids and len(set(ids)) != len(ids):
        return False
    if rules.id_match is not None and not all(map(rules.id_match, ids)):
        return False
    return rules.name_match is None or all(map(rules.name_match, function_names))


Fixes = tuple[list[tuple[int, str, str]], list[tuple[int, int, str]], list[tuple[int, int, int]]]
"""What :func:`cross_fixes` found to change: result names (tool message index, call id, the
call's function name), call ids outside the profile's pattern (assistant message index, slot,
id), and the tool messages answering those calls (index, the calling message's index, slot)."""

_RELAXED: dict[int, tuple[CrossRules, CrossRules, CrossRules]] = {}
"""``id(rules)`` -> (the rules, the same without the result-name and id-pattern rules, and
those without the rules on a conversation's opening either)."""


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
    path would read, judge and plan all of it to find the same edits (issue 32)."""
    entry = _RELAXED.get(id(rules))
    if entry is None or entry[0] is not rules:
        relaxed = replace(rules, names=False, id_match=None)
        mid = replace(relaxed, first_user=False, no_leading_call=False, needs_message=False)
        if len(_RELAXED) >= 64:
            _RELAXED.clear()
        entry = _RELAXED[id(rules)] = (rules, relaxed, mid)
    if (not rules.names and rules.id_match is None) or (rules.names and rules.id_match):
        return None
    try:
        if cross_valid(messages, entry[1] if opening else entry[2]) is None:
            return None
    except (KeyError, TypeError):
        return None
    if rules.names:
        names = _name_fixes(messages)
        return (names, [], []) if names else None
    assert rules.id_match is not None
    fixes = _id_fixes(messages, rules.id_match, id_length)
    return ([], *fixes) if fixes is not None and fixes[0] else None


def _name_fixes(messages: Sequence[Any]) -> list[tuple[int, str, str]]:
    """The tool messages whose ``name`` is not their call's function name (the history is
    known to pass every other rule: plain dicts, each result right after its call)."""
    found: list[tuple[int, str, str]] = []
    names: dict[str, str] = {}
    for index, message in enumerate(messages):
        role = message["role"]
        if role == "tool":
            call_id = message["tool_call_id"]
            name = names[call_id]
            if message.get("name") != name:
                found.append((index, call_id, name))
        elif role == "assistant":
            tool_calls = message.get("tool_calls")
            if tool_calls:
                names = {call["id"]: call["function"]["name"] for call in tool_calls}
    return found


def _id_fixes(
    messages: Sequence[Any], id_match: Callable[[str], Any], id_length: int | None
) -> tuple[list[tuple[int, int, str]], list[tuple[int, int, int]]] | None:
    """The calls whose id is outside the pattern, and the tool messages answering them; None
    for an id in the pattern but not ``id_length`` long."""
    calls: list[tuple[int, int, str]] = []
    results: list[tuple[int, int, int]] = []
    refused: dict[str, tuple[int, int]] = {}  # the turn's refused ids -> (index, slot)
    for index, message in enumerate(messages):
        role = message["role"]
        if role == "tool":
            ref = refused.get(message["tool_call_id"])
            if ref is not None:
                results.append((index, *ref))
        elif role == "assistant":
            tool_calls = message.get("tool_calls")
            if tool_calls:
                refused = {}
                for slot, call in enumerate(tool_calls):
                    call_id = call["id"]
                    if id_match(call_id) is None:
                        refused[call_id] = (index, slot)
                        calls.append((index, slot, call_id))
                    elif id_length is not None and len(call_id) != id_length:
                        return None
    return calls, results
