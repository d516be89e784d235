"""Pairing fidelity (issue 19): a real tool result is never dropped or attached to the wrong call.

The examples are the failure classes of the issue, each in every format it applies to; the
properties damage valid histories (the damage of :mod:`support.histories` plus the pairing damage
below) and judge each repair from outside toolmend's own rules: a tracker written here, from
the input alone, lists every result whose call the input names unambiguously, and the output
must hold that result's exact content answering that call.
"""

from __future__ import annotations

import copy
import os
import random
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolmend
from toolmend._policy import Policy
from toolmend.formats import get as get_format

from support import toy_format
from support.block_histories import convert
from support.histories import STUB_CONTENT, History, apply_damage, valid_conversations
from support.whole_path import whole_repair

Message = dict[str, Any]

PLACEHOLDER = Policy().placeholder


def tc(call_id: str | None, name: str = "f") -> Message:
    call: Message = {"type": "function", "function": {"name": name, "arguments": "{}"}}
    if call_id is not None:
        call["id"] = call_id
    return call


def calling(*tool_calls: Message) -> Message:
    return {"role": "assistant", "content": None, "tool_calls": list(tool_calls)}


def res(call_id: str | None, content: Any, **extra: Any) -> Message:
    message: Message = {"role": "tool", "content": content, **extra}
    if call_id is not None:
        message["tool_call_id"] = call_id
    return message


U: Message = {"role": "user", "content": "hi"}
U2: Message = {"role": "user", "content": "and now?"}

OPENAI_PROVIDERS = ("openai", "deepseek", "mistral", "anthropic", "gemini", "bedrock")
"""Profiles an OpenAI-shaped history is sent to (directly, or through LiteLLM's converters)."""
OTHER_OPENAI_PROVIDERS = (
    "deepseek-reasoner",
    "groq",
    "hf-template",
    "hf-template-strict",
    "hf-gemma-3",
    "hf-llama-3",
    "hf-mistral",
    "anthropic-thinking",
    "gemini-3",
    "gemini-no-ids",
)
BLOCK_FORMATS = (("anthropic", {}), ("bedrock", {}), ("gemini", {"ids": True}))
OTHER_FORMATS: dict[str, Any] = {toy_format.NAME: toy_format}
"""Formats registered from outside toolmend, each a test module with ``from_openai`` (the
suite's histories in its shape) and ``calls_and_results`` (its tracker, read without
toolmend): the cross-format properties run on each."""
BLOCK_PROFILES = (
    ("anthropic", {"thinking": True}, "anthropic-thinking"),
    ("gemini", {"ids": True, "signed": True}, "gemini-3"),
    ("gemini", {}, "gemini-no-ids"),
    ("gemini", {}, "gemini"),
)


# --- reading any format back: calls and results ----------------------------------------------


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = [part.get("text") for part in value if isinstance(part, dict)]
        return "\n".join(t for t in texts if isinstance(t, str))
    if isinstance(value, dict):
        for key in ("result", "error"):
            if isinstance(value.get(key), str):
                return str(value[key])
    return None


def calls_and_results(
    history: list[Any], format: str
) -> tuple[list[tuple[int, str | None]], list[tuple[int, str | None, str | None]]]:
    """``([(message, call id)], [(message, result id, content)])``, read without toolmend."""
    if format in OTHER_FORMATS:
        return OTHER_FORMATS[format].calls_and_results(history)  # type: ignore[no-any-return]
    calls: list[tuple[int, str | None]] = []
    results: list[tuple[int, str | None, str | None]] = []
    for index, message in enumerate(history):
        if format == "openai-responses":
            if message.get("type") == "function_call":
                calls.append((index, message.get("call_id")))
            elif message.get("type") == "function_call_output":
                results.append((index, message.get("call_id"), _text(message.get("output"))))
            continue
        if format == "openai":
            for call in message.get("tool_calls") or []:
                calls.append((index, call.get("id")))
            if message.get("role") == "tool":
                results.append((index, message.get("tool_call_id"), _text(message.get("content"))))
            continue
        blocks = message.get("parts" if format == "gemini" else "content")
        if not isinstance(blocks, list):
            continue
        for block in blocks:
            if not isinstance(block, dict):
                continue
            if format == "anthropic":
                if block.get("type") == "tool_use":
                    calls.append((index, block.get("id")))
                elif block.get("type") == "tool_result":
                    results.append((index, block.get("tool_use_id"), _text(block.get("content"))))
            elif format == "bedrock":
                if "toolUse" in block:
                    calls.append((index, block["toolUse"].get("toolUseId")))
                elif "toolResult" in block:
                    result = block["toolResult"]
                    results.append((index, result.get("toolUseId"), _text(result.get("content"))))
            else:
                call = block.get("functionCall") or block.get("function_call")
                response = block.get("functionResponse") or block.get("function_response")
                if call is not None:
                    calls.append((index, call.get("id")))
                elif response is not None:
                    results.append((index, response.get("id"), _text(response.get("response"))))
    return calls, results


_STUBBY = re.compile(r"abort|interrupt|cancel|missing|pending|skipped", re.IGNORECASE)


def _real(content: str | None) -> bool:
    """A result worth keeping, by this test's own reading: text that is no stub."""
    return (
        bool(content and content.strip())
        and content != PLACEHOLDER
        and not (content is not None and len(content) < 160 and _STUBBY.search(content))
    )


def expected_answers(history: list[Any], format: str) -> dict[str, tuple[str, int]]:
    """Real result content -> (the id of the one call it answers, its message), for results
    the input pairs unambiguously: exactly one call has its id, and no other real result with
    that id says something else."""
    calls, results = calls_and_results(history, format)
    call_count: dict[str, int] = {}
    for _, call_id in calls:
        if call_id:
            call_count[call_id] = call_count.get(call_id, 0) + 1
    reals: dict[str, set[str]] = {}
    for _, result_id, content in results:
        if result_id and _real(content):
            assert content is not None
            reals.setdefault(result_id, set()).add(content)
    expected: dict[str, tuple[str, int]] = {}
    for index, result_id, content in results:
        if (
            result_id
            and content is not None
            and call_count.get(result_id) == 1
            and len(reals.get(result_id, ())) == 1
            and _real(content)
        ):
            expected[content] = (result_id, index)
    return expected


def final_id(changes: list[toolmend.Change], call_id: str) -> str:
    """The id a call ends with: its own, or the one a ``rewrote_call_id`` change gave it."""
    for change in changes:
        if change.code == "rewrote_call_id" and len(change.ids) == 2 and change.ids[0] == call_id:
            return change.ids[1]
    return call_id


DROP_CODES = {"dropped_orphan_result", "dropped_duplicate_result", "orphan_result_to_text"}


FLATTENING = {"hf-template-strict", "hf-gemma-3", "anthropic-thinking"}
"""Profiles that may write tool traffic out as text (a template with no tool role; Anthropic's
final exchange without a thinking block): there a result is kept as text, not as a result."""
ID_FREE = {"gemini-no-ids"}
"""Profiles that strip every id: a result is attached to its call by position and name."""


def assert_faithful(history: list[Any], format: str, provider: str) -> toolmend.Repair:
    """The four promises of issue 19 for one history (see the module docstring)."""
    before = copy.deepcopy(history)
    repaired = toolmend.repair(history, provider=provider)
    assert history == before, "the input was mutated"
    out = repaired.messages
    calls, results = calls_and_results(out, format)
    call_ids = {call_id for _, call_id in calls}
    answering = {(content, result_id) for _, result_id, content in results}
    # (i) every result whose call is in the output keeps its content, answering that call
    for content, (call_id, _) in expected_answers(history, format).items():
        if provider in FLATTENING or provider in ID_FREE:
            assert content in _all_text(out) or any(content == text for _, _, text in results), (
                f"result {content!r} of {call_id} lost"
            )
            continue
        wanted = final_id(repaired.changes, call_id)
        assert wanted in call_ids, f"call {call_id} lost ({provider})"
        assert (content, wanted) in answering, f"result {content!r} of {call_id} lost or moved"
    # (ii) a real result leaves only through a reported change at its message
    kept = {content for _, _, content in results}
    kept |= _all_text(out)
    dropped_at = {change.index for change in repaired.changes if change.code in DROP_CODES}
    for index, _, content in calls_and_results(history, format)[1]:
        if _real(content) and content not in kept:
            assert index in dropped_at, f"result {content!r} at {index} dropped unreported"
    # (iii) idempotent; (iv) what is left is exactly what check finds
    again = toolmend.repair(out, provider=provider)
    assert not again.changes, f"not idempotent: {[c.code for c in again.changes]}"
    assert list(repaired.problems_left) == toolmend.check(out, provider=provider)
    return repaired


def _all_text(history: list[Any]) -> set[str]:
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, str):
            found.add(value)
            found.update(value.split("\n"))
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(history)
    return found


# --- the failure classes of issue 19, as examples -----------------------------------------


CLASS_EXAMPLES: dict[str, list[Message]] = {
    # 1. a stray result without an id must not take the call its real result answers
    "stray-steals-slot": [U, calling(tc("call_X")), res(None, "STRAY"), res("call_X", "REAL")],
    # 2. a call that lost its id adopts the id of the one result right after it
    "idless-call": [U, calling(tc(None)), res("call_X", "REAL")],
    # 4. stubs outside the old stub pattern, and empty first copies, lose to the real result
    "stub-missing": [
        U,
        calling(tc("a")),
        res("a", "[Tool result missing due to internal error]"),
        res("a", "REAL"),
    ],
    "null-first-copy": [U, calling(tc("a")), res("a", None), res("a", "REAL")],
    "empty-first-copy": [U, calling(tc("a")), res("a", ""), res("a", "REAL")],
    # 5. two results for one call in one block: the real one stays
    "aborted-then-real": [
        U,
        calling(tc("a")),
        res("a", "Tool execution aborted"),
        res("a", "REAL"),
    ],
}


@pytest.mark.parametrize("provider", OPENAI_PROVIDERS)
@pytest.mark.parametrize("name", list(CLASS_EXAMPLES))
def test_each_failure_class_keeps_the_real_result(name: str, provider: str) -> None:
    history = CLASS_EXAMPLES[name]
    repaired = assert_faithful(history, "openai", provider)
    contents = [m.get("content") for m in repaired.messages if m.get("role") == "tool"]
    assert contents == ["REAL"], contents
    assert not repaired.problems_left


@pytest.mark.parametrize(("format", "options"), BLOCK_FORMATS)
@pytest.mark.parametrize("name", list(CLASS_EXAMPLES))
def test_each_failure_class_keeps_the_real_result_in_block_formats(
    name: str, format: str, options: dict[str, Any]
) -> None:
    if name == "null-first-copy":
        pytest.skip("the converters write a null result as an empty one (empty-first-copy)")
    history = convert(CLASS_EXAMPLES[name], format, **options)
    repaired = assert_faithful(history, format, format)
    _, results = calls_and_results(repaired.messages, format)
    assert [content for _, _, content in results] == ["REAL"]
    assert not repaired.problems_left


def test_the_exact_id_wins_over_an_idless_result_before_it() -> None:
    """Class 1: the old planner gave STRAY the id and dropped REAL as an orphan."""
    history = CLASS_EXAMPLES["stray-steals-slot"]
    repaired = toolmend.repair(history, provider="openai")
    assert repaired.messages[2] == res("call_X", "REAL")
    assert [(c.code, c.index) for c in repaired.changes] == [("dropped_orphan_result", 2)]


def test_an_idless_call_adopts_its_results_id() -> None:
    """Class 2: no placeholder, no dropped result; the call takes the result's id."""
    repaired = toolmend.repair(CLASS_EXAMPLES["idless-call"], provider="openai")
    assert repaired.messages[1]["tool_calls"][0]["id"] == "call_X"
    assert repaired.messages[2] is CLASS_EXAMPLES["idless-call"][2]
    assert [c.code for c in repaired.changes] == ["restored_call_id"]


def test_an_idless_call_answered_under_its_function_name_keeps_the_answer() -> None:
    """Class 2: frameworks that store an id-less call's result with ``tool_call_id`` set to
    the function name (a handoff): the note is kept, answering the call."""
    history = [U, calling(tc(None, "handoff")), res("handoff", "Handed over to billing.")]
    for provider in OPENAI_PROVIDERS:
        repaired = assert_faithful(history, "openai", provider)
        tools = [m for m in repaired.messages if m.get("role") == "tool"]
        assert [m["content"] for m in tools] == ["Handed over to billing."], provider
        call = repaired.messages[1]["tool_calls"][0]
        # DeepSeek pairs by count and takes an id-less call: nothing to change there
        assert tools[0]["tool_call_id"] == call.get("id", "handoff"), provider


def test_idless_calls_in_two_ranges_never_adopt_one_id_twice() -> None:
    """Found by the long run: the damaged ranges of a history are repaired one by one, and
    two id-less calls answered by copies of one result each adopted its id, so the request
    held one id twice (Anthropic: ``tool_use`` ids must be unique)."""
    history = [
        U,
        calling(tc(None)),
        res("call_000000000000000000000000", "result 2"),
        calling(tc(None)),
        {"role": "assistant", "content": "assistant 4"},
        res("call_000000000000000000000000", "result 2"),
    ]
    for format in ("openai", "anthropic"):
        converted = history if format == "openai" else convert(history, format)
        repaired = assert_faithful(converted, format, "anthropic")
        ids = [call_id for _, call_id in calls_and_results(repaired.messages, format)[0]]
        assert len(set(ids)) == len(ids) == 2, format


def test_two_idless_calls_get_two_ids_and_two_placeholders() -> None:
    """Class 3: both placeholders carried the first call's id, so a second repair changed
    the history again."""
    history = [U, calling(tc(None), tc(None, "g"))]
    for provider in ("openai", "mistral", "anthropic", "bedrock"):
        repaired = assert_faithful(history, "openai", provider)
        call_ids = [c["id"] for c in repaired.messages[1]["tool_calls"]]
        answered = [m["tool_call_id"] for m in repaired.messages if m.get("role") == "tool"]
        assert len(set(call_ids)) == 2 and answered == call_ids, provider
        assert not repaired.problems_left


def test_two_idless_calls_in_a_block_format() -> None:
    history = convert([U, calling(tc(None), tc(None, "g")), U2], "anthropic")
    repaired = assert_faithful(history, "anthropic", "anthropic")
    ids = [b["id"] for b in repaired.messages[1]["content"]]
    answered = [b["tool_use_id"] for b in repaired.messages[2]["content"]]
    assert len(set(ids)) == 2 and answered == ids and "" not in ids


def test_openai_rejects_two_results_for_one_call_in_one_block() -> None:
    """Class 5, with the API's own words (a public report, GPT-4.1)."""
    history = CLASS_EXAMPLES["aborted-then-real"]
    [problem] = toolmend.check(history, provider="openai")
    assert problem.provider_error == (
        "Invalid parameter: Duplicate value for 'tool_call_id' of 'a', in messages[2] and "
        "messages[3]."
    )
    assert toolmend.check(history, provider="azure") == [problem]
    assert toolmend.check([U, calling(tc("a")), res("a", "REAL")], provider="openai") == []
    assert [c.code for c in toolmend.repair(history, provider="openai").changes] == [
        "dropped_duplicate_result"
    ]


def test_gemini_target_counts_a_repeated_result() -> None:
    """Class 5: an identical repeat becomes a second function response for one call."""
    history = [U, calling(tc("a")), res("a", "R"), res("a", "R")]
    assert "duplicate_result" in {p.code for p in toolmend.check(history, provider="gemini")}
    assert_faithful(history, "openai", "gemini")


def test_the_first_of_two_real_results_wins_and_the_second_is_reported() -> None:
    history = [U, calling(tc("a")), res("a", "FIRST"), res("a", "SECOND")]
    repaired = toolmend.repair(history, provider="openai")
    assert [m.get("content") for m in repaired.messages if m.get("role") == "tool"] == ["FIRST"]
    assert [(c.code, c.index) for c in repaired.changes] == [("dropped_orphan_result", 3)]


def test_a_result_naming_another_function_is_not_moved_onto_an_open_call() -> None:
    """Class 1: a tool message named ``run_sql`` was moved back across a user turn onto an
    earlier ``calc`` call and renamed (an OpenAI-shaped history bound for Gemini)."""
    history = [
        U,
        calling(tc(None, "calc")),
        U2,
        {"role": "tool", "name": "run_sql", "content": "3 rows"},
    ]
    repaired = toolmend.repair(history, provider="gemini")
    tools = [m for m in repaired.messages if m.get("role") == "tool"]
    assert all(m["content"] != "3 rows" for m in tools)
    # the newest input: kept as user text, never dropped (issue 32, case 2)
    assert "orphan_result_to_text" in {c.code for c in repaired.changes}


# --- Gemini native (class 6 and class 1's Gemini forms) -----------------------------------


def _fc(name: str, call_id: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name, "args": {}}
    if call_id is not None:
        call["id"] = call_id
    return {"functionCall": call}


def _fr(name: str, result: str, call_id: str | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {"name": name, "response": {"result": result}}
    if call_id is not None:
        response["id"] = call_id
    return {"functionResponse": response}


GU = {"role": "user", "parts": [{"text": "hi"}]}


def _responses(history: list[Any]) -> list[tuple[str | None, str | None, Any]]:
    return [
        (
            p["functionResponse"]["name"],
            p["functionResponse"].get("id"),
            _text(p["functionResponse"]["response"]),
        )
        for content in history
        for p in content["parts"]
        if "functionResponse" in p
    ]


def test_gemini_a_repeated_response_id_leaves_a_call_unanswered() -> None:
    """Class 6a: ``fr a c0`` twice for calls c0 and c1 passed check unchanged."""
    history = [
        GU,
        {"role": "model", "parts": [_fc("a", "c0"), _fc("b", "c1")]},
        {"role": "user", "parts": [_fr("a", "R", "c0"), _fr("a", "R", "c0")]},
    ]
    assert toolmend.check(history, provider="gemini") != []
    repaired = assert_faithful(history, "gemini", "gemini")
    assert _responses(repaired.messages) == [("a", "c0", "R"), ("b", "c1", PLACEHOLDER)]


def test_gemini_a_response_before_its_call_is_moved_to_it() -> None:
    """Class 6b: a response with a unique id before its call was dropped."""
    history = [
        GU,
        {"role": "user", "parts": [_fr("a", "EARLY", "c0")]},
        {"role": "model", "parts": [_fc("a", "c0")]},
    ]
    repaired = assert_faithful(history, "gemini", "gemini")
    assert _responses(repaired.messages) == [("a", "c0", "EARLY")]
    assert not repaired.problems_left


def test_gemini_a_result_far_from_its_call_under_a_reused_id_is_kept_by_the_range_repair() -> None:
    """An endpoint that reuses ``call_0`` every turn, and a result moved two turns away from its
    call: the one-pass scan splits the history into two damaged ranges, and the later range
    alone saw the result as a repeat and dropped it (the earlier one answered its call with a
    placeholder). The whole history shows the result answers the earlier call; the range
    repair now goes to the whole history when a dropped result's id is a call's elsewhere."""

    def text(t: str) -> dict[str, Any]:
        return {"text": t}

    def call(name: str) -> dict[str, Any]:
        return {"function_call": {"name": name, "args": {}, "id": "call_0"}}

    def response(name: str, result: str) -> dict[str, Any]:
        return {"function_response": {"name": name, "response": {"result": result}, "id": "call_0"}}

    history = [
        {"role": "user", "parts": [text("user 1")]},
        {"role": "model", "parts": [text("assistant 2")]},
        {"role": "user", "parts": [text("user 3")]},
        {"role": "model", "parts": [call("get_weather")]},
        {"role": "model", "parts": [text("assistant 5")]},
        {"role": "user", "parts": [text("user 6")]},
        {"role": "model", "parts": [call("read_file")]},
        {"role": "user", "parts": [response("read_file", "README")]},
        {"role": "model", "parts": [text("assistant 9")]},
        {"role": "user", "parts": [response("read_file", "21 C")]},
    ]
    profile = toolmend.get_profile("gemini")
    assert len(get_format("gemini").dirty_spans(history, profile) or ()) == 2
    repaired = toolmend.repair(history, provider="gemini")
    whole, changes = whole_repair(get_format("gemini"), history, profile, toolmend.Policy())
    assert repaired.messages == whole
    assert list(repaired.changes) == changes
    assert "dropped_orphan_result" not in {change.code for change in repaired.changes}
    assert "21 C" in str(repaired.messages)


def test_ranges_that_drop_only_their_own_orphans_stay_ranges(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The whole-history fallback is only for a dropped id that a call in another range has:
    fifty ranges, each with an orphan of its own, are mended range by range."""
    import toolmend._api as api

    def whole(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the whole history was repaired")

    history: list[Message] = []
    for n in range(50):
        history += [U, calling(tc(f"call_{n}")), res(f"call_{n}", "REAL"), res(f"gone_{n}", "X")]
        history.append({"role": "assistant", "content": "done"})
    assert len(get_format("openai").dirty_spans(history, toolmend.get_profile("openai")) or ()) > 1
    monkeypatch.setattr(api, "_mend_whole", whole)
    repaired = toolmend.repair(history, provider="openai")
    assert [c.code for c in repaired.changes] == ["dropped_orphan_result"] * 50


def test_gemini_the_exact_id_wins_over_position() -> None:
    """Class 1 (Gemini): a response with id B was relabelled A while A's own was dropped."""
    history = [
        GU,
        {"role": "model", "parts": [_fc("a", "A")]},
        {"role": "user", "parts": [_fr("a", "STRAY", "B"), _fr("a", "REAL", "A")]},
    ]
    repaired = assert_faithful(history, "gemini", "gemini")
    assert ("a", "A", "REAL") in _responses(repaired.messages)
    assert all(text != "STRAY" or rid != "A" for _, rid, text in _responses(repaired.messages))


def test_gemini_the_right_name_wins_over_position() -> None:
    """Class 1 (Gemini): a response named ``read_file`` took a call by position while the
    correctly named response was dropped."""
    history = [
        GU,
        {"role": "model", "parts": [_fc("search")]},
        {"role": "user", "parts": [_fr("read_file", "FILE"), _fr("search", "HITS")]},
    ]
    repaired = toolmend.repair(history, provider="gemini")
    assert ("search", None, "HITS") in _responses(repaired.messages)


def test_gemini_one_response_id_is_written_back_onto_one_call_only() -> None:
    """Class 6c: ``restored_call_id`` copied one id onto two calls."""
    history = [
        GU,
        {"role": "model", "parts": [_fc("a"), _fc("a")]},
        {
            "role": "user",
            "parts": [_fr("a", "R1", "c0"), _fr("a", "R2", "c0"), {"text": "also this"}],
        },
    ]
    repaired = assert_faithful(history, "gemini", "gemini")
    ids = [p["functionCall"].get("id") for p in repaired.messages[1]["parts"]]
    assert ids.count("c0") <= 1


# --- trim (class 7) -----------------------------------------------------------------------


def test_trim_keeps_no_duplicate_result() -> None:
    history = [U, calling(tc("a")), res("a", "Tool execution aborted"), res("a", "REAL"), U2]
    trimmed = toolmend.trim(history, max_messages=10)
    assert [m.get("content") for m in trimmed if m.get("role") == "tool"] == ["REAL"]
    assert toolmend.check(trimmed, provider="openai") == []


def test_trim_gives_an_idless_anthropic_call_a_real_id() -> None:
    history = convert([U, calling(tc(None)), U2], "anthropic")
    trimmed = toolmend.trim(history, max_messages=10)
    ids = [
        b.get("tool_use_id")
        for m in trimmed
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]
    assert ids and all(ids)
    assert toolmend.check(trimmed, provider="anthropic") == []


def to_responses(history: History) -> list[Message]:
    """An OpenAI chat history as Responses ``input`` items (ids kept, or left out, as given)."""
    items: list[Message] = []
    for message in history:
        role = message.get("role")
        if role == "tool":
            output: Message = {"type": "function_call_output", "output": message.get("content")}
            if message.get("tool_call_id") is not None:
                output["call_id"] = message["tool_call_id"]
            items.append(output)
            continue
        if message.get("content") is not None or role != "assistant":
            items.append(
                {
                    "role": "developer" if role == "system" else role,
                    "content": message.get("content") or "",
                }
            )
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            item: Message = {
                "type": "function_call",
                "name": function.get("name") or "f",
                "arguments": function.get("arguments")
                if isinstance(function.get("arguments"), str)
                else "{}",
            }
            if call.get("id") is not None:
                item["call_id"] = call["id"]
            items.append(item)
    return items


def test_trim_matches_an_idless_bedrock_call_with_its_result() -> None:
    history = convert([U, calling(tc(None)), res("x", "REAL"), U2], "bedrock")
    trimmed = toolmend.trim(history, max_messages=10)
    calls, results = calls_and_results(trimmed, "bedrock")
    assert [call_id for _, call_id in calls] == ["x"]
    assert [(rid, text) for _, rid, text in results] == [("x", "REAL")]


def test_trim_moves_gemini_text_away_from_the_function_responses() -> None:
    history = [
        GU,
        {"role": "model", "parts": [_fc("a", "c0")]},
        {"role": "user", "parts": [_fr("a", "R", "c0"), {"text": "also"}]},
        {"role": "model", "parts": [{"text": "ok"}]},
    ]
    trimmed = toolmend.trim(history, max_messages=10)
    assert trimmed[2]["parts"] == [_fr("a", "R", "c0")]
    assert {"text": "also"} in [p for content in trimmed for p in content["parts"]]
    assert toolmend.check(trimmed, provider="gemini") == []


# --- properties -----------------------------------------------------------------------------


def drop_call_id(history: History, rnd: random.Random) -> History:
    """A store or stream loses a call's id (streaming deltas, ``FunctionCall(id=None)``)."""
    spots = [
        (i, j)
        for i, m in enumerate(history)
        for j, call in enumerate(m.get("tool_calls") or [])
        if isinstance(call, dict) and "id" in call
    ]
    if not spots:
        return history
    i, j = rnd.choice(spots)
    out = copy.deepcopy(history)
    del out[i]["tool_calls"][j]["id"]
    return out


def stray_result(history: History, rnd: random.Random) -> History:
    """A tool message without an id lands in a block (a converter, a hand-written message)."""
    blocks = [i for i, m in enumerate(history) if m.get("tool_calls")]
    if not blocks:
        return history
    at = rnd.choice(blocks) + 1
    out = copy.deepcopy(history)
    out.insert(at, {"role": "tool", "content": f"stray {rnd.randrange(1 << 30)}"})
    return out


def stub_before_real(history: History, rnd: random.Random) -> History:
    """A stub for a call written before its real result (an interrupted tool, then a retry)."""
    spots = [i for i, m in enumerate(history) if m.get("role") == "tool" and m.get("tool_call_id")]
    if not spots:
        return history
    i = rnd.choice(spots)
    out = copy.deepcopy(history)
    stub = rnd.choice([STUB_CONTENT, "[Tool result missing due to internal error]", None, ""])
    out.insert(i, {"role": "tool", "tool_call_id": out[i]["tool_call_id"], "content": stub})
    return out


def result_before_call(history: History, rnd: random.Random) -> History:
    """A result written before its call (an async tool that answered before the call was
    stored)."""
    spots = [
        (i, j)
        for i, m in enumerate(history)
        if m.get("role") == "tool"
        for j in range(i)
        if history[j].get("tool_calls")
        and any(c.get("id") == m.get("tool_call_id") for c in history[j]["tool_calls"])
    ]
    if not spots:
        return history
    i, j = rnd.choice(spots)
    out = copy.deepcopy(history)
    out.insert(j, out.pop(i))
    return out


PAIRING_DAMAGE: dict[str, Callable[[History, random.Random], History]] = {
    "drop_call_id": drop_call_id,
    "stray_result": stray_result,
    "stub_before_real": stub_before_real,
    "result_before_call": result_before_call,
}
SHARED_DAMAGE = (
    "drop_call_message",
    "drop_result",
    "truncate_head",
    "truncate_tail",
    "interleave_user",
    "duplicate_result",
    "stub_then_real",
    "move_result",
    "drop_result_id",
)


@st.composite
def damaged(draw: st.DrawFn) -> History:
    names = draw(
        st.lists(st.sampled_from(SHARED_DAMAGE + tuple(PAIRING_DAMAGE)), min_size=1, max_size=4)
    )
    seed = draw(st.integers(min_value=0, max_value=2**32 - 1))
    history = draw(valid_conversations(max_rounds=5))
    rnd = random.Random(seed)
    for name in names:
        if name in PAIRING_DAMAGE:
            history = PAIRING_DAMAGE[name](history, rnd)
        else:
            history, _ = apply_damage(history, [name], rnd)
    return history


_FUZZ = bool(os.environ.get("TOOLMEND_FUZZ"))
_EXAMPLES = 20_000 if _FUZZ else 150
"""Per OpenAI-shaped profile: six of them, so the long mode runs 120,000 OpenAI histories."""
_BLOCK_EXAMPLES = int(os.environ.get("TOOLMEND_FUZZ_EXAMPLES") or 100_000) if _FUZZ else 300
"""Per native format (Anthropic, Bedrock, Gemini, Responses)."""
_OTHER_EXAMPLES = 5_000 if _FUZZ else 60
"""Per further profile of a format (thinking, Gemini 3, templates, ...)."""


@pytest.mark.parametrize("provider", OPENAI_PROVIDERS)
@settings(max_examples=_EXAMPLES)
@given(history=damaged())
def test_openai_shaped_repairs_keep_every_real_result(provider: str, history: History) -> None:
    assert_faithful(history, "openai", provider)


@pytest.mark.parametrize(("format", "options"), BLOCK_FORMATS)
@settings(max_examples=_BLOCK_EXAMPLES)
@given(history=damaged())
def test_block_repairs_keep_every_real_result(
    format: str, options: dict[str, Any], history: History
) -> None:
    assert_faithful(convert(history, format, **options), format, format)


@pytest.mark.parametrize("provider", OTHER_OPENAI_PROVIDERS)
@settings(max_examples=_OTHER_EXAMPLES)
@given(history=damaged())
def test_openai_shaped_repairs_keep_every_real_result_under_every_profile(
    provider: str, history: History
) -> None:
    assert_faithful(history, "openai", provider)


@pytest.mark.parametrize(("format", "options", "provider"), BLOCK_PROFILES)
@settings(max_examples=_OTHER_EXAMPLES)
@given(history=damaged())
def test_block_repairs_keep_every_real_result_under_every_profile(
    format: str, options: dict[str, Any], provider: str, history: History
) -> None:
    assert_faithful(convert(history, format, **options), format, provider)


@pytest.mark.parametrize("format", list(OTHER_FORMATS))
@settings(max_examples=_BLOCK_EXAMPLES)
@given(history=damaged())
def test_repairs_of_a_format_registered_from_outside_keep_every_real_result(
    format: str, history: History
) -> None:
    assert_faithful(OTHER_FORMATS[format].from_openai(history), format, "openai")


@settings(max_examples=_BLOCK_EXAMPLES)
@given(history=damaged())
def test_responses_repairs_keep_every_real_result(history: History) -> None:
    assert_faithful(to_responses(history), "openai-responses", "openai-responses")


def test_responses_an_idless_call_adopts_its_outputs_id() -> None:
    items = to_responses([U, calling(tc(None)), res("call_X", "REAL")])
    repaired = assert_faithful(items, "openai-responses", "openai-responses")
    assert [i.get("call_id") for i in repaired.messages if "call_id" in i] == ["call_X", "call_X"]
    assert [c.code for c in repaired.changes] == ["restored_call_id"]


# --- structure ------------------------------------------------------------------------------


def test_anthropic_a_message_left_last_by_the_repair_sheds_its_thinking_block() -> None:
    """Found by the suite after the merge with issue 20: dropping a trailing copy of a result
    left an assistant message with a thinking block last (thinking off), which a second
    repair then changed again."""
    thinking = {"type": "thinking", "thinking": "t", "signature": "c2ln"}
    history = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [thinking, {"type": "tool_use", "id": "c0", "name": "f", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "content": "R", "tool_use_id": "c0"}]},
        {"role": "assistant", "content": [thinking, {"type": "text", "text": "done"}]},
        {"role": "user", "content": [{"type": "tool_result", "content": "R", "tool_use_id": "c0"}]},
    ]
    repaired = assert_faithful(history, "anthropic", "anthropic")
    assert repaired.messages[-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "done"}],
    }
    assert not repaired.problems_left
