"""Property tests of the core invariants, over random valid and damaged OpenAI histories.

For every profile: a repaired history passes the profile; repairing it again returns the same
object; a valid history comes back as the very same object; the input is never mutated; and
every user text, assistant text and real tool result of the input is still in the output.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import toolmend
from toolmend._api import _read_range
from toolmend._quickmend import stretch_report
from toolmend._rules import judge
from toolmend.formats import _openai_chat as openai_chat
from toolmend.profiles import get_profile

from support.histories import (
    OPENAI_FAMILY,
    STUB_CONTENT,
    content_strings,
    damaged_conversations,
    valid_conversations,
)
from support.whole_path import whole_repair

PROVIDERS = OPENAI_FAMILY
KEEP_EVERYTHING = toolmend.Policy(orphan_result="text")


def _empty_assistant(message: Any) -> bool:
    return (
        message.get("role") == "assistant"
        and not message.get("content")
        and (not message.get("tool_calls"))
    )


def _all_text(history: list[Any]) -> str:
    return json.dumps(history, ensure_ascii=False)


@pytest.mark.parametrize("provider", PROVIDERS)
@given(case=damaged_conversations(id_style="any"))
@example(case=([{"role": "user", "content": "user 1"}], [], ["truncate_tail", "truncate_head"]))
@example(case=([], [{"role": "assistant", "content": None}], []))
def test_repair_makes_damaged_histories_pass_and_is_idempotent(provider: str, case: Any) -> None:
    _, damaged, _ = case
    before = copy.deepcopy(damaged)
    result = toolmend.repair(damaged, provider=provider)
    assert damaged == before, "the input was mutated"
    left = toolmend.check(result.messages, provider=provider)
    if all(_empty_assistant(message) for message in damaged):
        # the damage cut everything, or left only assistant messages with nothing in them
        # (dropped for Gemini and Mistral): nothing to send, said and not hidden (as
        # test_fuzz.py allows)
        assert [problem.code for problem in left] in ([], ["empty_history"])
    else:
        assert left == []
    assert result.problems_left == tuple(left)
    assert toolmend.sanitize(result.messages, provider=provider) is result.messages
    if result.messages is damaged:
        assert result.changes == ()
    else:
        assert result.changes, "a changed history must report its changes"


@pytest.mark.parametrize("provider", PROVIDERS)
@given(case=damaged_conversations(id_style="any", reasoning=True))
def test_no_real_content_is_lost(provider: str, case: Any) -> None:
    _, damaged, ops = case
    # Two results merged into one message leave one call with two different real results, and
    # only one can be sent: the other is dropped and reported (test_fuzz.py checks "kept or
    # reported" for that). Every other damage keeps every text.
    assume("merge_results" not in ops)
    result = toolmend.repair(damaged, provider=provider, policy=KEEP_EVERYTHING)
    text = _all_text(result.messages)
    for content in content_strings(damaged) - {STUB_CONTENT}:
        assert json.dumps(content, ensure_ascii=False)[1:-1] in text, content


@pytest.mark.parametrize(
    ("provider", "strategy"),
    [
        ("openai", valid_conversations(id_style="openai")),
        ("openai", valid_conversations(id_style="reused")),
        ("deepseek", valid_conversations(id_style="reused")),
        ("deepseek-reasoner", valid_conversations(id_style="openai", reasoning=True)),
        ("mistral", valid_conversations(id_style="mistral")),
    ],
    ids=["openai", "openai-reused-ids", "deepseek", "deepseek-reasoner", "mistral"],
)
def test_valid_histories_pass_and_come_back_as_the_same_object(
    provider: str, strategy: Any
) -> None:
    @given(history=strategy)
    def run(history: list[Any]) -> None:
        if provider == "mistral" and history[-1]["role"] == "assistant":
            history = [*history, {"role": "user", "content": "next question"}]
        before = copy.deepcopy(history)
        assert toolmend.check(history, provider=provider) == []
        assert toolmend.sanitize(history, provider=provider) is history
        assert history == before

    run()


@pytest.mark.parametrize("provider", PROVIDERS)
@settings(suppress_health_check=[HealthCheck.filter_too_much])
@given(
    history=st.one_of(
        valid_conversations(id_style="any"), valid_conversations(id_style="any", reasoning=True)
    )
)
def test_any_history_a_profile_accepts_is_returned_untouched(provider: str, history: Any) -> None:
    assume(toolmend.check(history, provider=provider) == [])
    assert toolmend.sanitize(history, provider=provider) is history


@pytest.mark.parametrize("provider", PROVIDERS)
@given(
    case=st.one_of(
        damaged_conversations(id_style="any"), damaged_conversations(id_style="any", reasoning=True)
    )
)
def test_one_pass_scan_agrees_with_the_full_judge(provider: str, case: Any) -> None:
    """The fast paths (quick_valid, dirty_spans) never disagree with reading everything."""
    _, damaged, _ = case
    profile = get_profile(provider)
    full = judge(openai_chat.read(damaged), profile)
    if openai_chat.quick_valid(damaged, profile):
        assert full == []
    spans = openai_chat.dirty_spans(damaged, profile)
    if spans is not None:
        parts = [
            (low, judge(_read_range(openai_chat, damaged, low, high), profile))
            for low, high in spans
        ]
        # ids rewritten request-wide (Mistral): the sound stretches' refused ids
        request = openai_chat.request_id_fixes(damaged, profile, spans)
        for low, _, calls, results, *_ in request[1] if request is not None else ():
            parts.append((low, stretch_report(profile, calls, results, None)[1]))
        found = [
            problem
            for _, problems in sorted(parts, key=lambda part: part[0])
            for problem in problems
        ]

        def key(problem: toolmend.Problem) -> tuple[int, str, tuple[str, ...]]:
            return (problem.index, problem.code, problem.ids)

        assert sorted(found, key=key) == sorted(full, key=key)
        assert toolmend.check(damaged, provider=provider) == found


@pytest.mark.parametrize("provider", ["openai"])
@given(
    case=st.one_of(
        damaged_conversations(id_style="any"), damaged_conversations(id_style="any", reasoning=True)
    )
)
def test_repairing_the_ranges_repairs_as_the_whole_history(provider: str, case: Any) -> None:
    """The ranges of ``dirty_spans`` are repaired on their own: each must hold what the planner
    needs (a stray result's range reaches the calls of its id), so the repair comes out as the
    repair of the history read whole. Under OpenAI's rules, which flag every pairing problem:
    under DeepSeek's (count pairing) and Groq's a range the rules accept is left alone, while
    the planner of the whole history, once another problem sets it off, pairs every result by
    id and drops what answers no call (a result the provider would take)."""
    _, damaged, _ = case
    assume(not _repeats_a_result(damaged))
    profile = get_profile(provider)
    expected, changes = whole_repair(openai_chat, damaged, profile, toolmend.Policy())
    result = toolmend.repair(damaged, provider=provider)
    assert result.messages == expected
    assert [(c.code, c.index, c.ids) for c in result.changes] == [
        (c.code, c.index, c.ids) for c in changes
    ]


def _repeats_a_result(history: list[Any]) -> bool:
    """Whether a tool message repeats the id of a result its call turn already has. OpenAI
    takes the repeat, so a range holding one alone is left as it is; the planner of a whole
    history that another problem sets off drops it (both are valid; the examples below hold
    the case where the repeat is the real result of an earlier call still waiting)."""
    answered: set[Any] = set()
    for message in history:
        if message.get("role") == "tool":
            if message.get("tool_call_id") in answered:
                return True
            answered.add(message.get("tool_call_id"))
        else:
            answered = set()
    return False


def _calls(*ids: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
            for i in ids
        ],
    }


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": text}


def _tool(call_id: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


@pytest.mark.parametrize(
    "history",
    [
        [  # a stray result whose call is not the nearest one with its id
            *[_text("user", "u1"), _calls("call_0"), _text("assistant", "a")],
            *[_text("user", "u2"), _calls("call_0"), _tool("call_0", "r2")],
            *[_text("assistant", "b"), _text("user", "u3"), _tool("call_0", "r1")],
            _text("assistant", "c"),
        ],
        [  # the real result of an earlier call, now a repeat among another turn's results
            *[_text("user", "u1"), _calls("call_0"), _text("assistant", "a")],
            *[_text("user", "u2"), _calls("call_0"), _tool("call_0", "r2")],
            *[_tool("call_0", "r1"), _text("assistant", "c")],
        ],
    ],
    ids=["stray", "repeat"],
)
def test_a_result_goes_back_to_the_earlier_call_with_its_id_still_waiting(
    history: list[Any],
) -> None:
    """The ranges reached only the nearest call with the result's id: the waiting call got a
    placeholder and the real result was dropped (or left as a repeat), where the repair of the
    whole history moves it to its call."""
    profile = get_profile("openai")
    expected, _ = whole_repair(openai_chat, history, profile, toolmend.Policy())
    result = toolmend.repair(history, provider="openai")
    assert result.messages == expected
    assert "answered_missing_call" not in {change.code for change in result.changes}
    assert "r1" in [message["content"] for message in result.messages]


@pytest.mark.parametrize("provider", PROVIDERS)
@given(
    case=st.one_of(
        damaged_conversations(id_style="any"), damaged_conversations(id_style="any", reasoning=True)
    )
)
def test_quick_valid_answers_as_the_range_scan_does(provider: str, case: Any) -> None:
    """``quick_valid`` has its own, cheaper pass (fields read by subscript) for profiles without
    per-turn rules; it must answer exactly what the range scan's first-problem mode answers,
    neither vouching for more nor sending a valid history down the slow path."""
    for history in (case[0], case[1]):
        profile = get_profile(provider)
        scan = openai_chat._scan(history, profile, first_only=True)
        if scan is None:  # a profile the scan does not model: the cross-family pass answers
            if openai_chat.quick_valid(history, profile):
                assert judge(openai_chat.read(history), profile) == []
            continue
        assert openai_chat.quick_valid(history, profile) is (scan == [])


@given(history=valid_conversations(id_style="any"))
def test_one_pass_scan_vouches_for_valid_dict_histories(history: Any) -> None:
    assert openai_chat.quick_valid(history, get_profile("openai"))
    assert openai_chat.dirty_spans(history, get_profile("deepseek")) == []


def _valid_round() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "weather", "arguments": "{}"},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "time", "arguments": "{}"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_b", "content": "noon"},
        {"role": "tool", "tool_call_id": "call_a", "content": "sun"},
        {"role": "assistant", "content": "Sunny at noon."},
    ]


_ONE_FIELD_WRONG = {
    "tool content a list": lambda h: h[3].update(content=[{"type": "text", "text": "x"}]),
    "tool content missing": lambda h: h[3].pop("content"),
    "tool id unknown": lambda h: h[3].update(tool_call_id="call_z"),
    "tool id a str subclass": lambda h: h[3].update(tool_call_id=type("S", (str,), {})("call_b")),
    "tool id missing": lambda h: h[3].pop("tool_call_id"),
    "result answered twice": lambda h: h[4].update(tool_call_id="call_b"),
    "call type None": lambda h: h[2]["tool_calls"][0].update(type=None),
    "call type missing": lambda h: h[2]["tool_calls"][0].pop("type"),
    "call id missing": lambda h: h[2]["tool_calls"][0].pop("id"),
    "call id a number": lambda h: h[2]["tool_calls"][0].update(id=7),
    "call id twice": lambda h: h[2]["tool_calls"][1].update(id="call_a"),
    "function not a dict": lambda h: h[2]["tool_calls"][0].update(function="weather"),
    "arguments a dict": lambda h: h[2]["tool_calls"][0]["function"].update(arguments={}),
    "name empty": lambda h: h[2]["tool_calls"][0]["function"].update(name=""),
    "name missing": lambda h: h[2]["tool_calls"][0]["function"].pop("name"),
    "tool_calls empty": lambda h: h[2].update(tool_calls=[]),
    "tool_calls a dict": lambda h: h[2].update(tool_calls={"id": "call_a"}),
    "function_call beside": lambda h: h[5].update(function_call=None),
    "user with tool_calls": lambda h: h[1].update(tool_calls=[]),
    "unknown role": lambda h: h[0].update(role="narrator"),
    "role missing": lambda h: h[0].pop("role"),
    "assistant text empty": lambda h: h[5].update(content=""),
    "assistant text missing": lambda h: h[5].pop("content"),
    "message interrupts results": lambda h: h.insert(4, {"role": "user", "content": "and?"}),
    "results missing at the end": lambda h: h.__delitem__(slice(3, None)),
}


_OPENAI_ACCEPTS = {
    "tool content a list",
    "tool content missing",
    "function_call beside",
    "user with tool_calls",
    "assistant text empty",
}
"""Fields the ``openai`` profile lets through. The quick pass refuses them anyway, but for
those in ``_READ_PER_PROFILE``: it is one pass for every profile, and other profiles refuse them
(Mistral, DeepSeek, Groq). Refusing only sends the history down the full path, which then finds
nothing."""


def _judged_valid(history: list[dict[str, Any]], provider: str) -> bool:
    try:
        return not judge(openai_chat.read(history), get_profile(provider))
    except toolmend.InvalidHistoryError:
        return False


def test_a_repeated_result_takes_the_fast_path_only_where_the_rules_let_it_through() -> None:
    """A second result for one of the turn's calls, among the turn's results: OpenAI answers
    "Duplicate value for 'tool_call_id'" (issue 19), DeepSeek (results counted) sees one result
    too many, Gemini one response too many; once a user message ended the turn it answers
    nothing. ``quick_valid`` vouches exactly where the full judge agrees."""
    repeated = _valid_round()
    repeated.insert(4, dict(repeated[3]))  # call_b's result twice
    late = _valid_round()
    late.insert(5, {"role": "user", "content": "and?"})
    late.insert(6, dict(late[3]))  # call_b's result again, after the user spoke
    for provider in ("openai", "deepseek", "gemini"):
        assert not openai_chat.quick_valid(repeated, get_profile(provider)), provider
        assert not _judged_valid(repeated, provider), provider
    assert "duplicate_result" in {p.code for p in toolmend.check(repeated, provider="openai")}
    for provider in PROVIDERS:
        profile = get_profile(provider)
        for history in (repeated, late):
            if openai_chat.quick_valid(history, profile):
                assert _judged_valid(history, provider), provider
            first_only = openai_chat._scan(history, profile, first_only=True)
            assert (first_only == []) is openai_chat.quick_valid(history, profile), provider
    assert not _judged_valid(late, "openai")


_READ_PER_PROFILE = {"tool content a list", "tool content missing"}
"""Fields the quick pass reads only under a profile with a rule on them (Groq's string tool
content): on a hook's path every object it touches costs a cache miss, so the ``openai``
profile's pass does not read them, and vouches where its full judge does."""


@pytest.mark.parametrize("wrong", list(_ONE_FIELD_WRONG))
def test_quick_valid_refuses_each_wrong_field(wrong: str) -> None:
    """One failing and one passing example per check of the quick pass: the history is
    vouched for as it is, and refused with any one field wrong; the full judge (or reading)
    refuses it too, under the ``openai`` profile or, for what that one allows, another."""
    history = _valid_round()
    assert openai_chat.quick_valid(history, get_profile("openai"))
    _ONE_FIELD_WRONG[wrong](history)
    refusing = []
    for provider in PROVIDERS:
        profile = get_profile(provider)
        quick = openai_chat.quick_valid(history, profile)
        try:
            refused = bool(judge(openai_chat.read(history), profile))
        except toolmend.InvalidHistoryError:
            refused = True
        if refused:
            refusing.append(provider)
        if wrong in _READ_PER_PROFILE:
            assert not (quick and refused), provider
        else:
            assert not quick, provider
    assert refusing, "a check no profile needs"
    assert ("openai" in refusing) is (wrong not in _OPENAI_ACCEPTS)
    if wrong in _READ_PER_PROFILE:
        assert openai_chat.quick_valid(history, get_profile("openai"))
        assert not openai_chat.quick_valid(history, get_profile("groq"))
