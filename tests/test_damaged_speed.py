"""Damaged histories repaired range by range, cheaply (issue 32's speed targets): the range
scan checks a plainly sound message in its plain loop, and the common damages of a range (a
repeated result, a missing one, an orphan) are planned in one pass. Both must give exactly
what the full path gives; these tests hold them to it and count the work they skip."""

from __future__ import annotations

import copy
import itertools
import pickle
import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, event, example, given, settings
from hypothesis import strategies as st

import toolmend
import toolmend._api
import toolmend._findings
import toolmend._inline
import toolmend._plan_ids
import toolmend._planstate
import toolmend._quickmend
import toolmend._walks
from toolmend import formats
from toolmend._api import _read_range, result_reader
from toolmend._plan_messages import quick_plan
from toolmend._policy import Policy
from toolmend._repair import plan_repair
from toolmend._rules import judge
from toolmend._skeleton import RequestIds
from toolmend.formats import _openai_chat as openai_chat
from toolmend.profiles import PROFILES, get_profile

from support import judges
from support.agent_runs import agent_runs
from support.cases import assistant, calls, result, user
from support.histories import damaged_conversations, valid_conversations
from support.whole_path import whole_repair

CHAT_PROVIDERS = [name for name, profile in PROFILES.items() if profile.pairing != "ordered"]
POLICIES = [
    Policy(),
    Policy(orphan_result="text"),
    Policy(missing_result="remove_call"),
    Policy(placeholder="[no result]"),
]


def _mend_range(*args: Any, **kwargs: Any) -> Any:
    """:func:`toolmend._quickmend.mended_range` with its problems written."""
    found = toolmend._quickmend.mended_range(*args, **kwargs)
    return None if found is None else (found[0], found[1], found[2].build(), found[3])


def _ranges(history: list[Any], provider: str) -> list[tuple[int, int]]:
    return openai_chat.dirty_spans(history, get_profile(provider)) or []


@st.composite
def _repeated_results(draw: st.DrawFn) -> list[Any]:
    """Damaged histories with results repeated as they are, or with another text (a stub, an
    empty one, another real result), and a calling message sent twice: the quick plan's cases
    and the planner's."""
    history = copy.deepcopy(draw(damaged_conversations(id_style="any"))[1])
    for _ in range(draw(st.integers(0, 3))):
        tools = [i for i, m in enumerate(history) if m.get("role") == "tool"]
        if not tools:
            break
        at = draw(st.sampled_from(tools))
        repeat = dict(history[at])
        repeat["content"] = draw(
            st.sampled_from([repeat.get("content"), "", "Tool execution aborted", "other"])
        )
        history.insert(at + draw(st.integers(1, 2)), repeat)
    callers = [
        i for i, m in enumerate(history) if m.get("role") == "assistant" and m.get("tool_calls")
    ]
    if callers and draw(st.booleans()):  # a calling message sent twice (its ids shared)
        at = draw(st.sampled_from(callers))
        history.insert(at + 1, history[at])
    return history


@settings(max_examples=300, deadline=None)
@given(
    history=st.one_of(
        _repeated_results(),
        damaged_conversations(id_style="any").map(lambda case: case[1]),
        agent_runs(),
    ),
    provider=st.sampled_from(CHAT_PROVIDERS),
    policy=st.sampled_from(POLICIES),
)
def test_the_quick_plan_is_the_planners(history: list[Any], provider: str, policy: Policy) -> None:
    """Wherever :func:`quick_plan` answers for a damaged range, the planner plans the same
    items and edits and reports the same changes, in the same order."""
    profile = get_profile(provider)
    module = formats.get("openai")
    for low, high in _ranges(history, provider):
        skeleton = _read_range(module, history, low, high)
        codes = {problem.code for problem in judge(skeleton, profile)}
        reader = result_reader(module, history[low:high])
        quick = quick_plan(skeleton, profile, policy, reader, codes)
        if quick is None:
            continue
        plan, changes = plan_repair(skeleton, profile, policy, reader, codes)
        assert quick[0].items == plan.items
        assert quick[0].edits == plan.edits
        assert quick[1] == changes


def _turn(*ids: str, text: str = "out") -> list[dict[str, Any]]:
    return [calls(*ids), *(result(call_id, f"{text} {call_id}") for call_id in ids)]


def _long_history(turns: int) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = []
    for number in range(turns):
        history += [user(f"question {number}"), *_turn(f"call_{number}a", f"call_{number}b")]
        history.append(assistant(f"answer {number}"))
    return history


@pytest.mark.parametrize("provider", ["openai", "deepseek", "anthropic"])
def test_the_common_damages_are_planned_without_the_planner(
    monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    """A repeated result, a missing one and an orphan after a user message: each range is
    planned in one pass (the planner is never called), and the repair is the whole
    history's."""
    history = _long_history(12)
    history.insert(4, copy.deepcopy(history[3]))  # turn 0: its second result, repeated
    del history[14]  # turn 2: a result missing
    history.insert(26, result("call_gone", "late"))  # after turn 4's user message: an orphan
    expected, changes = whole_repair(
        formats.get("openai"), history, get_profile(provider), Policy()
    )
    assert {change.code for change in changes} == {
        "dropped_duplicate_result",
        "answered_missing_call",
        "dropped_orphan_result",
    }

    def planner(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the planner was called")

    monkeypatch.setattr(toolmend._api, "plan_repair", planner)
    fixed = toolmend.repair(history, provider=provider)
    assert fixed.messages == expected
    assert list(fixed.changes) == changes


def test_sound_calls_are_checked_in_the_plain_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bound for Anthropic, the scan of a damaged history checks each sound assistant message
    in its plain loop: the field-by-field check of calls (and Anthropic's id and name
    patterns, message by message) runs for none of them; it ran for every one."""
    history = _long_history(30)
    history.insert(4, copy.deepcopy(history[3]))
    looked: list[int] = []
    real = openai_chat._cross_calls_ok

    def counting(message: Any, *args: Any) -> bool:
        looked.append(1)
        return real(message, *args)

    monkeypatch.setattr(openai_chat, "_cross_calls_ok", counting)
    spans = openai_chat.dirty_spans(history, get_profile("anthropic"))
    assert spans == [(1, 5)]
    assert looked == []


@pytest.mark.parametrize(
    ("provider", "bad_id"), [("anthropic", "call.7"), ("anthropic", "call 7"), ("bedrock", "c#7")]
)
def test_an_id_outside_the_pattern_still_marks_its_range(provider: str, bad_id: str) -> None:
    """The id and name patterns are checked after the scan's loop; an id outside the pattern
    sends the scan back over the history checking each call in place, so its range is found
    as before, and the repair is the whole history's."""
    history = _long_history(10)  # turn k: user, calls, two results, text from message 5k on
    history[36:39] = [calls(bad_id), result(bad_id, "out")]  # turn 7: one call, outside it
    history.insert(8, copy.deepcopy(history[7]))  # and turn 1's first result repeated
    profile = get_profile(provider)
    spans = openai_chat.dirty_spans(history, profile)
    assert spans is not None and len(spans) == 2
    assert any(low <= 37 < high for low, high in spans)
    assert toolmend.check(history, provider=provider) == [
        problem
        for low, high in spans
        for problem in judge(_read_range(formats.get("openai"), history, low, high), profile)
    ]
    expected, changes = whole_repair(formats.get("openai"), history, profile, Policy())
    fixed = toolmend.repair(history, provider=provider)
    assert fixed.messages == expected and list(fixed.changes) == changes


@pytest.mark.parametrize("provider", ["gemini", "gemini-3"])
def test_names_outside_the_damaged_ranges_are_filled_in_one_pass(
    monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    """Bound for Gemini, a damaged history lacks the result names everywhere: the names
    outside the damaged ranges are filled in one pass (no range is cut for them, none is
    named on its own), the damaged ranges are mended on their own, and the report of the
    names is built when it is read; everything as the whole history's repair gives it."""
    history = _long_history(20)
    history.insert(4, copy.deepcopy(history[3]))  # turn 0: a result repeated
    del history[59]  # turn 11: a result missing
    profile = get_profile(provider)
    found = openai_chat.named_spans(history, profile)
    assert found is not None
    spans, names, filled = found
    assert spans == [(1, 5), (57, 60)]
    assert len(names) == 3 * (2 * 20 - 4)  # every result but those in the ranges (flat)
    # the scan copied each of them with its name, and left every other message as it is
    named = dict(zip(names[0::3], names[2::3], strict=True))
    assert len(filled) == len(history)
    for index, message in enumerate(filled):
        if index in named:
            assert message == {**history[index], "name": named[index]}
            assert "name" not in history[index]
        else:
            assert message is history[index]
    expected, changes = whole_repair(formats.get("openai"), history, profile, Policy())
    problems = judge(openai_chat.read(history), profile)
    judged: list[int] = []
    real_judge = toolmend._api.judge

    def counting_judge(skeleton: Any, judged_profile: Any) -> Any:
        judged.append(len(skeleton.kinds))
        return real_judge(skeleton, judged_profile)

    def per_range(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a range was named on its own")

    monkeypatch.setattr(toolmend._api, "judge", counting_judge)
    monkeypatch.setattr(toolmend._api, "quick_names", per_range)
    fixed = toolmend.repair(history, provider=provider)
    assert judged == []  # (the damaged ranges mended from their messages: ``mended_range``)
    assert "_later" in vars(fixed)  # the report is not built yet
    assert fixed.changed
    assert fixed.messages == expected
    assert list(fixed.changes) == changes
    assert list(fixed.problems) == problems


class _CountedReads(list[Any]):
    """A range whose messages are counted as they are read in order."""

    def __init__(self, messages: list[Any]) -> None:
        super().__init__(messages)
        self.read = 0

    def __iter__(self) -> Any:
        for message in super().__iter__():
            self.read += 1
            yield message


def test_a_range_of_unnamed_results_is_not_walked_for_its_repeats() -> None:
    """Bound for Gemini, a range whose results lack their names fails the one-pass check the
    repeats' repair ends with, so the search for repeated results stops at the first unnamed
    result (it read the whole range, then the check); the repair is the whole history's."""
    history = _long_history(12)
    history.insert(4, copy.deepcopy(history[3]))  # turn 0: its second result, repeated
    history.insert(5, copy.deepcopy(history[3]))  # (and once more)
    profile = get_profile("gemini")
    part = _CountedReads(history[1:8])  # the calling message, its results and the rest
    assert openai_chat.repeated_results(part, profile) is None
    assert part.read == 2  # the calling message and its first result
    names = {call["id"]: call["function"]["name"] for call in history[1]["tool_calls"]}
    named = [
        {**message, "name": names[message["tool_call_id"]]}
        if message["role"] == "tool"
        else message
        for message in history[1:8]
    ]
    assert openai_chat.repeated_results(named, profile) == [(3, "call_0b", 2), (4, "call_0b", 2)]
    expected, changes = whole_repair(formats.get("openai"), history, profile, Policy())
    fixed = toolmend.repair(history, provider="gemini")
    assert fixed.messages == expected and list(fixed.changes) == changes


def test_a_copied_result_is_a_duplicate_without_the_stub_test(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A result repeated word for word is as strong as the first: the pairing (and the quick
    plan) call it a duplicate without weighing either (the stub test is a regular expression
    search, most of a damaged range's planning); a different repeat is still weighed."""
    history = [user("go"), *_turn("call_a"), result("call_a", "out call_a"), assistant("done")]
    history.append(user("thanks"))
    weighed: list[Any] = []
    real = toolmend._planstate.PlanState.strength

    def counting(state: Any, ref: Any) -> int:
        weighed.append(ref)
        return int(real(state, ref))

    monkeypatch.setattr(toolmend._planstate.PlanState, "strength", counting)
    for provider in ("openai", "mistral"):  # the quick plan, and the planner's pairing
        fixed = toolmend.repair(history, provider=provider)
        assert "dropped_duplicate_result" in [change.code for change in fixed.changes]
    assert weighed == []
    history[3] = result("call_a", "Tool execution aborted")
    fixed = toolmend.repair(history, provider="openai")
    assert [change.code for change in fixed.changes] == ["dropped_duplicate_result"]
    assert weighed


def _rounds_turn(number: int) -> list[dict[str, Any]]:
    """A user turn of three tool rounds, then the answer."""
    turn: list[dict[str, Any]] = [user(f"question {number}")]
    for step in range(3):
        turn += _turn(f"call_{number}_{step}")
    return [*turn, assistant(f"answer {number}")]


def test_a_bedrock_range_starts_at_a_calling_message_after_results() -> None:
    """Bound for Bedrock (after results, only an assistant message or more results), a range
    may start at a sound calling message right after results whose calls its results answer:
    a result repeated in a turn's third tool round is repaired in that round's range, not the
    whole turn's; the repair is the whole history's. A calling message that turns out unsound
    there, or one of whose calls is left without its result, starts no range (the range goes
    on from the round before)."""
    history = [message for number in range(6) for message in _rounds_turn(number)]
    history.insert(23, copy.deepcopy(history[22]))  # turn 2, third round: its result twice
    profile = get_profile("bedrock")
    assert openai_chat.dirty_spans(history, profile) == [(21, 25)]
    expected, changes = whole_repair(formats.get("openai"), history, profile, Policy())
    fixed = toolmend.repair(history, provider="bedrock")
    assert fixed.messages == expected and list(fixed.changes) == changes
    unsound = copy.deepcopy(history)
    unsound[21]["tool_calls"][0]["type"] = None  # that round's calling message: not sound
    unanswered = copy.deepcopy(history)
    del unanswered[22:24]  # that round's call without its result (the repair may remove it)
    for broken, spans in ((unsound, [(19, 25)]), (unanswered, [(19, 23)])):
        assert openai_chat.dirty_spans(broken, profile) == spans
        for policy in (Policy(), Policy(missing_result="remove_call")):
            fixed = toolmend.repair(broken, provider="bedrock", policy=policy)
            expected, changes = whole_repair(formats.get("openai"), broken, profile, policy)
            assert fixed.messages == expected and list(fixed.changes) == changes


@settings(max_examples=300, deadline=None)
@given(
    history=st.one_of(_repeated_results(), agent_runs()),
    provider=st.sampled_from(CHAT_PROVIDERS),
)
def test_a_range_of_repeats_is_mended_as_the_full_path_mends_it(
    history: list[Any], provider: str
) -> None:
    """Where ``repeated_results`` answers for a damaged range, the range written without
    reading, judging and planning it has the messages, changes and problems of the full path
    over that range."""
    profile = get_profile(provider)
    module = formats.get("openai")
    for low, high in _ranges(history, provider):
        part = history[low:high]
        repeats = openai_chat.repeated_results(part, profile)
        if repeats is None or not low:
            continue
        mended = toolmend._api._without_repeats(part, profile, low, repeats)
        skeleton = _read_range(module, history, low, high)
        problems = judge(skeleton, profile)
        if mended is None:
            assert problems == []
            continue
        assert mended.problems == problems
        plan, changes = plan_repair(
            skeleton, profile, Policy(), result_reader(module, part), {p.code for p in problems}
        )
        assert mended.changes == changes
        assert mended.messages == module.apply(part, plan)


def test_a_result_sent_twice_is_dropped_without_reading_its_range(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bound for OpenAI, a history whose only damage is results sent twice: no range is read
    or judged, and the repair is the whole history's, with the judge's problems."""
    history = _long_history(20)
    history.insert(4, copy.deepcopy(history[3]))
    history.insert(40, history[39])
    profile = get_profile("openai")
    expected, changes = whole_repair(formats.get("openai"), history, profile, Policy())
    problems = judge(openai_chat.read(history), profile)
    assert [problem.code for problem in problems] == ["duplicate_result"] * 2

    _assert_mended_unjudged(monkeypatch, history, "openai", expected, changes, problems)


@st.composite
def _bench_damage(draw: st.DrawFn, answered: bool = False) -> list[Any]:
    """A long tool-heavy conversation damaged as ``benchmarks/bench_core.damage`` damages it
    (results dropped, calling messages dropped, user messages inserted, messages sent twice,
    results repeated with another text), so that its ranges lie between its start and end."""
    history: list[Any] = []
    for number in range(draw(st.integers(4, 10))):
        ids = [f"call_{number}{letter}" for letter in "abc"[: draw(st.integers(1, 3))]]
        history += [user(f"question {number}"), *_turn(*ids)]
        if answered or draw(st.booleans()):  # (``answered``: every turn ends on its answer)
            history.append(assistant(f"answer {number}"))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(1, len(history) - 2))
        action = draw(st.integers(0, 4))
        dropped = "tool_calls" if action == 1 else "tool_call_id"  # a call or a result
        if action < 2 and history[at].get(dropped):
            del history[at]
        elif action == 2:
            history.insert(at, user("are you still there?"))
        elif action == 3:
            history.insert(at, history[at - 1])
        elif history[at]["role"] == "tool":
            other = dict(history[at])
            other["content"] = draw(st.sampled_from(["", "Tool execution aborted", "other"]))
            history.insert(at + 1, other)
    return history


@st.composite
def _interrupted_blocks(draw: st.DrawFn, other_calls: bool = True) -> list[Any]:
    """Conversations whose blocks of results are interrupted by other messages (a user message
    sent while the tools ran, a system note, assistant text, another calling message unless
    not ``other_calls``), some results repeated, moved further, named or not: the results after
    the interruption are moved next to their call, unless another call has their id."""
    history: list[Any] = []
    for number in range(draw(st.integers(3, 6))):
        ids = [f"call_{number}{letter}" for letter in "abc"[: draw(st.integers(1, 3))]]
        if number and draw(st.integers(0, 5)) == 0:
            ids[-1] = "call_0a"  # (an id a call of another turn has)
        history += [user(f"question {number}"), *_turn(*ids)]
        if draw(st.booleans()):
            history.append(assistant(f"answer {number}"))
    tools = [i for i, m in enumerate(history) if m["role"] == "tool"]
    for at in sorted(draw(st.lists(st.sampled_from(tools), min_size=1, max_size=3)), reverse=True):
        for _ in range(draw(st.integers(1, 2))):
            history.insert(
                at + draw(st.integers(0, 1)),
                draw(
                    st.sampled_from(
                        [
                            user("are you still there?"),
                            {"role": "system", "content": "note"},
                            assistant("working on it"),
                            calls("call_other") if other_calls else user("hello?"),
                            history[at],
                        ]
                    )
                ),
            )
    if draw(st.booleans()):
        history = [
            {**m, "name": "get_weather"} if m["role"] == "tool" and draw(st.booleans()) else m
            for m in history
        ]
    return history


@settings(max_examples=400, deadline=None)
@given(
    history=st.one_of(
        _bench_damage(),
        _interrupted_blocks(),
        _repeated_results(),
        damaged_conversations(id_style="any").map(lambda case: case[1]),
    ),
    provider=st.one_of(
        st.sampled_from(["openai", "deepseek", "anthropic", "gemini", "bedrock"]),
        st.sampled_from(CHAT_PROVIDERS),
    ),
    policy=st.sampled_from(POLICIES),
)
def test_a_range_mended_from_its_messages_is_the_full_paths(
    history: list[Any], provider: str, policy: Policy
) -> None:
    """Where ``mended_range`` answers for a damaged range (between the history's start and its
    end), it has the messages, changes and problems of the range read, judged, planned and
    applied."""
    profile = get_profile(provider)
    module = formats.get("openai")
    for low, high in _ranges(history, provider):
        if not low or high == len(history):
            continue
        part = history[low:high]
        mended = _mend_range(module, part, profile, policy, low)
        if mended is None:
            continue
        skeleton = _read_range(module, history, low, high)
        problems = judge(skeleton, profile)
        assert mended[2] == problems
        plan, changes = plan_repair(
            skeleton, profile, policy, result_reader(module, part), {p.code for p in problems}
        )
        assert mended[1] == changes
        assert mended[0] == module.apply(part, plan)
        assert mended[3] == {c.id for found in skeleton.calls.values() for c in found}


def test_the_common_damages_are_mended_without_reading_their_ranges(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bound for OpenAI, a calling message sent twice, a missing result, an orphan after a user
    message and a repeated result: no range is read or judged, and the repair is the whole
    history's (new ids for the copy's calls, which the placeholders answer), with the judge's
    problems."""
    history = _long_history(12)
    history.insert(4, copy.deepcopy(history[3]))  # turn 0: its second result, repeated
    del history[14]  # turn 2: a result missing
    history.insert(26, result("call_gone", "late"))  # after turn 4's user message: an orphan
    history.insert(37, history[37])  # turn 7: its calling message sent twice
    profile = get_profile("openai")
    expected, changes = whole_repair(formats.get("openai"), history, profile, Policy())
    problems = judge(openai_chat.read(history), profile)
    assert {change.code for change in changes} == {
        "dropped_duplicate_result",
        "answered_missing_call",
        "dropped_orphan_result",
        "rewrote_call_id",
    }

    _assert_mended_unjudged(monkeypatch, history, "openai", expected, changes, problems)


def _commonly_damaged() -> list[dict[str, Any]]:
    """A result repeated, one missing, an orphan after a user message and a calling message
    sent twice, each in a range between the history's start and its end."""
    history = _long_history(12)
    history.insert(9, copy.deepcopy(history[8]))  # turn 1: its second result, repeated
    del history[14]  # turn 2: a result missing
    history.insert(26, result("call_gone", "late"))  # after turn 4's user message: an orphan
    history.insert(37, history[37])  # turn 7: its calling message sent twice
    return history


@pytest.mark.parametrize("provider", ["openai", "deepseek", "anthropic", "bedrock", "gemini"])
def test_a_damaged_historys_problems_are_written_when_its_report_is_read(
    monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    """The ranges mended in one walk (``mended_range``, ``_without_repeats``) keep what they
    found and write no problem (its text formatted from the provider's template) until the
    report is read; then the result is the one built eagerly from the whole history's judge
    and planner: ``==``, ``repr``, pickling and copies, changes and problems in their order."""
    history = _commonly_damaged()
    profile = get_profile(provider)
    expected, changes = whole_repair(formats.get("openai"), history, profile, Policy())
    problems = judge(openai_chat.read(history), profile)
    eager = toolmend.Repair(expected, tuple(changes), tuple(problems))
    written: list[str] = []
    real_add = toolmend._findings.Report.add

    def counting_add(self: Any, code: str, *args: Any, **kwargs: Any) -> None:
        written.append(code)
        real_add(self, code, *args, **kwargs)

    monkeypatch.setattr(toolmend._findings.Report, "add", counting_add)
    fixed = toolmend.repair(history, provider=provider)
    assert fixed.changed and fixed.messages == expected
    assert "problems" not in vars(fixed) and written == []
    assert fixed.problems == eager.problems and written
    assert list(fixed.changes) == changes
    assert fixed == eager and repr(fixed) == repr(eager)
    for lazy in (toolmend.repair(history, provider=provider) for _ in range(3)):
        assert pickle.loads(pickle.dumps(lazy)) == eager
        assert copy.copy(lazy) == eager and copy.deepcopy(lazy) == eager
    assert fixed.problems_left == ()


@pytest.mark.parametrize("provider", ["anthropic", "bedrock", "gemini"])
def test_a_damaged_history_is_not_walked_for_names_or_ids_it_does_not_lack(
    monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    """The one-pass check failed on a damage, and the history's first call id is one the
    target takes (its first result names its call, bound for Gemini): the one-pass names and
    ids repair is not tried (it would walk up to the damage only to give up), and the repair
    is the whole history's. A history whose first result lacks its name still takes it; one
    whose first id is refused, bound for Mistral, takes the one walk instead."""
    history = _commonly_damaged()
    if provider == "gemini":
        history = [
            {**message, "name": "get_weather"} if message["role"] == "tool" else message
            for message in history
        ]
    profile = get_profile(provider)
    expected, changes = whole_repair(formats.get("openai"), history, profile, Policy())
    walked: list[int] = []
    real_fixes = openai_chat.cross_fixes

    def counting_fixes(messages: Any, *args: Any) -> Any:
        walked.append(len(messages))
        return real_fixes(messages, *args)

    monkeypatch.setattr(openai_chat, "cross_fixes", counting_fixes)
    fixed = toolmend.repair(history, provider=provider)
    assert fixed.messages == expected and list(fixed.changes) == changes
    assert len(history) not in walked  # (a range may still be tried for its names alone)
    refused = [user("go"), *_turn("call_aaaaaaaaaaaaaaaaaaaaaaaa", "call_bbbbbbbbbbbbbbbbbbbb")]
    refused += [assistant("done"), user("thanks")]
    fixed = toolmend.repair(refused, provider="mistral")
    assert fixed.changed and fixed.problems_left == () and fixed.changes
    assert len(refused) not in walked  # (the one walk, ``toolmend._inline``, takes it)
    # bound for Gemini, the names come from the range scan (see the test below)
    sound = _long_history(2)
    fixed = toolmend.repair(sound, provider="gemini")
    assert len(sound) not in walked and fixed.changed and fixed.left == ()
    assert fixed.problems_left == ()


@settings(max_examples=300, deadline=None)
@given(
    call_id=st.one_of(
        st.none(), st.text(max_size=70), st.from_regex(r"[A-Za-z0-9]{9}", fullmatch=True)
    ),
    provider=st.sampled_from(sorted(PROFILES)),
)
def test_an_ids_test_worked_out_once_is_the_profiles_rules(
    call_id: str | None, provider: str
) -> None:
    """``_plan_ids.id_test`` (a profile's id limits and pattern looked up once) takes exactly
    the ids the profile's fields allow."""
    profile = get_profile(provider)
    allowed = bool(call_id)
    if call_id and profile.call_id_max_length is not None:
        allowed &= len(call_id) <= profile.call_id_max_length
    if call_id and profile.call_id_length is not None:
        allowed &= len(call_id) == profile.call_id_length
    if call_id and profile.call_id_pattern:
        allowed &= re.fullmatch(profile.call_id_pattern, call_id) is not None
    assert toolmend._plan_ids.id_test(profile)(call_id) is allowed
    assert toolmend._plan_ids.acceptable_id(call_id, profile) is allowed


def _counted_not_paired(history: list[Any]) -> bool:
    """Whether a calling message of ``history`` is followed by as many tool messages as it
    has calls, whose ids are not its calls' ids (what counting pairing takes as answered)."""
    for index, message in enumerate(history):
        tool_calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if not isinstance(tool_calls, list):
            continue
        after = itertools.takewhile(lambda m: m.get("role") == "tool", history[index + 1 :])
        results = [m.get("tool_call_id") for m in after]
        called = [call.get("id") for call in tool_calls if isinstance(call, dict)]
        if len(results) == len(tool_calls) and sorted(map(str, results)) != sorted(
            map(str, called)
        ):
            return True
    return False


@settings(max_examples=300, deadline=None)
@given(
    # (not another calling message between a block's results: with a result repeated after
    # it at the history's end, the ranges and the whole history disagree under DeepSeek's
    # counting pairing, on main before this change too: left to the range scan's owner)
    history=st.one_of(_interrupted_blocks(other_calls=False), _bench_damage()),
    provider=st.sampled_from(CHAT_PROVIDERS),
    policy=st.sampled_from(POLICIES),
)
def test_a_repair_of_interrupted_blocks_is_the_whole_historys(
    history: list[Any], provider: str, policy: Policy
) -> None:
    """``toolmend.repair`` (ranges mended in one walk, results moved past the messages that
    interrupt their block) gives the messages, changes and problems of the whole history
    read, judged and planned.

    Left out: under DeepSeek's counting pairing, a block whose results match its calls in
    number but not in ids. The judge finds nothing there, so the ranges leave it as it is (as
    the repair of a history without the other damage does); the whole history's planner,
    which pairs by id once any other problem makes it plan, rewrites it too. The ranges'
    answer is the one the judge agrees with (found with seed 23 and 3,000 examples)."""
    assume(not (provider == "deepseek" and _counted_not_paired(history)))
    profile = get_profile(provider)
    fixed = toolmend.repair(history, provider=provider, policy=policy)
    expected, changes = whole_repair(formats.get("openai"), history, profile, policy)
    assert fixed.messages == expected
    assert list(fixed.changes) == changes
    assert list(fixed.problems) == judge(openai_chat.read(history), profile)


@pytest.mark.parametrize("provider", ["openai", "deepseek", "anthropic", "gemini"])
def test_results_after_a_user_message_are_moved_without_reading_their_range(
    monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    """A user message sent while the tools ran, inside a block of results (what most damaged
    ranges of the 10k bench history are): the results after it are moved next to their
    call and the message after them, as the planner does, without reading, judging or
    planning the range."""
    history = _long_history(6)
    history.insert(8, user("are you still there?"))  # turn 1: between its two results
    history.insert(18, user("still there?"))  # turn 3: between its call and its results
    profile = get_profile(provider)
    expected, changes = whole_repair(formats.get("openai"), history, profile, Policy())
    problems = judge(openai_chat.read(history), profile)
    assert [c.code for c in changes].count("moved_result") == 3

    _assert_mended_unjudged(monkeypatch, history, provider, expected, changes, problems)


@pytest.mark.parametrize("provider", ["openai", "deepseek", "gemini", "bedrock", "anthropic"])
def test_a_repeated_result_of_a_calling_message_sent_twice_moves_to_the_first(
    monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    """A calling message sent twice, its results after the copy, one of them repeated (the
    damaged range of the 1k bench history that the one-walk repair left to the full path):
    the pairing gives the repeat to the first message's open call with its id, which it
    joins; the copy moves after it; the other call gets a placeholder and a new id. Mended
    from the messages, as the full path mends it. Under Anthropic's ids unique in the
    request, the copy's call that keeps the id the first message's call keeps gets a new id,
    and its result with it (``rewrote_call_id``)."""
    history = _long_history(6)
    history.insert(12, history[11])  # turn 2: its calling message sent twice
    history.insert(14, copy.deepcopy(history[13]))  # its first result repeated
    profile = get_profile(provider)
    expected, changes = whole_repair(formats.get("openai"), history, profile, Policy())
    problems = judge(openai_chat.read(history), profile)
    assert {"moved_result", "moved_message", "rewrote_call_id"} <= {c.code for c in changes}

    _assert_mended_unjudged(monkeypatch, history, provider, expected, changes, problems)


@st.composite
def _mistral_bench_damage(draw: st.DrawFn) -> list[Any]:
    """:func:`_bench_damage`'s histories with call ids of every style (OpenAI's, one id reused
    every round, Mistral's own nine: a mix in one history), each turn ending on its answer
    (Mistral takes no user message right after results) and the request on the user's turn,
    as a request to Mistral does."""
    style = draw(st.sampled_from(["openai", "reused", "mixed"]))
    history = copy.deepcopy(draw(_bench_damage(answered=True)))
    new_ids: dict[str, str] = {}  # each id of the history -> its id in the chosen style
    for message in history:
        for call in message.get("tool_calls") or ():
            old = call["id"]  # call_<turn><letter>
            if old not in new_ids:
                if style == "reused":
                    new_ids[old] = f"call_{old[-1]}"  # one id per slot, every round
                elif style == "mixed" and draw(st.booleans()):
                    new_ids[old] = f"Ab{old[-1]}{int(old[5:-1]):06d}"  # Mistral's form: kept
                else:
                    new_ids[old] = old
            call["id"] = new_ids[old]
        if message["role"] == "tool":
            message["tool_call_id"] = new_ids.get(message["tool_call_id"], "call_lost")
    return [*history, user("thanks")]


@settings(max_examples=400, deadline=None)
@given(
    history=st.one_of(
        _mistral_bench_damage(),
        _bench_damage(),
        _repeated_results(),
        damaged_conversations(id_style="any").map(lambda case: case[1]),
    ),
    policy=st.sampled_from(POLICIES),
)
def test_a_mistral_range_mended_with_the_requests_ids_is_the_full_paths(
    history: list[Any], policy: Policy
) -> None:
    """Bound for Mistral (every refused id rewritten request-wide, in history order), where
    ``mended_range`` answers for a damaged range with the request's ids, it has the messages,
    changes and problems of the range read, judged and planned with them, and leaves the
    request's ids taken and counters as that planner does; where it answers None, it leaves
    them as they were (the full path then makes the range's ids)."""
    profile = get_profile("mistral")
    module = formats.get("openai")
    spans = _ranges(history, "mistral")
    found = openai_chat.request_id_fixes(history, profile, spans) if spans else None
    if found is None:
        return
    taken, stretches = found
    full = RequestIds(set(taken))
    waiting = list(stretches)
    for low, high in spans:
        while waiting and waiting[0][0] < low:
            seeds = waiting.pop(0)[2][2::3]
            toolmend._quickmend.fresh_ids(seeds, profile, full.taken, full.next_try)
        quick = RequestIds(set(full.taken), dict(full.next_try))
        before = (set(quick.taken), dict(quick.next_try))
        part = history[low:high]
        mended = (
            _mend_range(module, part, profile, policy, low, request=quick)
            if low and high < len(history)
            else None
        )
        skeleton = _read_range(module, history, low, high)
        skeleton.ids = full
        problems = judge(skeleton, profile)
        plan, changes = plan_repair(
            skeleton, profile, policy, result_reader(module, part), {p.code for p in problems}
        )
        if mended is None:
            assert (quick.taken, quick.next_try) == before
            continue
        assert mended[2] == problems
        assert mended[1] == changes
        assert mended[0] == module.apply(part, plan)
        assert mended[3] == {c.id for found in skeleton.calls.values() for c in found}
        assert (quick.taken, quick.next_try) == (full.taken, full.next_try)


def test_mistral_ranges_are_mended_without_reading_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bound for Mistral, a calling message sent twice, a missing result and a repeated
    result: no range is read or judged (each mended from its messages with the request's new
    ids, made in history order between the stretches'), and the repair is the whole
    history's, ids and problems included."""
    history = _long_history(12)
    history.insert(4, copy.deepcopy(history[3]))  # turn 0: its second result, repeated
    del history[14]  # turn 2: a result missing
    history.insert(36, history[36])  # turn 7: its calling message sent twice
    history.append(user("thanks"))  # (Mistral: the request ends on the user's turn)
    profile = get_profile("mistral")
    assert openai_chat.dirty_spans(history, profile) == [(1, 5), (11, 15), (35, 40)]
    expected, changes = whole_repair(formats.get("openai"), history, profile, Policy())
    problems = judge(openai_chat.read(history), profile)
    assert {change.code for change in changes} == {
        "dropped_duplicate_result",
        "answered_missing_call",
        "rewrote_call_id",
    }

    _assert_mended_unjudged(monkeypatch, history, "mistral", expected, changes, problems)


@pytest.mark.parametrize("provider", ["bedrock", "mistral"])
def test_a_user_message_after_results_is_bridged_without_reading_its_range(
    monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    """A user message right after results (Bedrock's and Mistral's role order: the judge's
    ``role_order``), alone in its range or with a missing result: the assistant bridge goes
    before it, as the planner's ``bridge_role_order`` puts it, without reading, judging or
    planning the range (Mistral: with the request's new ids). Also inside a block of results,
    where the results move next to their call and the user message after them, behind the
    bridge (Mistral: the judge pairs the results after it with the call before it)."""
    history = _long_history(8)
    history.insert(9, user("are you still there?"))  # turn 1: right after its results
    del history[23]  # turn 4: its second result missing
    history.insert(24, user("hello?"))  # and the user message right after the first
    history.insert(29, user("still there?"))  # turn 5: between its two results
    history.append(user("thanks"))  # (Mistral: the request ends on the user's turn)
    profile = get_profile(provider)
    expected, changes = whole_repair(formats.get("openai"), history, profile, Policy())
    problems = judge(openai_chat.read(history), profile)
    assert [c.code for c in changes].count("inserted_message") == 3
    assert "role_order" in {p.code for p in problems}

    _assert_mended_unjudged(monkeypatch, history, provider, expected, changes, problems)


def _assert_mended_unjudged(
    monkeypatch: pytest.MonkeyPatch,
    history: list[Any],
    provider: str,
    expected: Any,
    changes: list[Any],
    problems: list[Any],
) -> None:
    """``toolmend.repair(history, provider=provider)`` gives the whole path's messages,
    changes and problems with no range read and judged (the API's judge raises)."""

    def no_judge(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a range was judged")

    monkeypatch.setattr(toolmend._api, "judge", no_judge)
    fixed = toolmend.repair(history, provider=provider)
    assert fixed.messages == expected
    assert list(fixed.changes) == changes
    assert list(fixed.problems) == problems


def _tool_heavy(turns: int, seed: int) -> list[dict[str, Any]]:
    """``benchmarks/bench_cross_family.tool_heavy_history`` in small: every user turn followed
    by one to four rounds of one to three calls (OpenAI's ids, ``call_`` and 24 digits: each
    id's tail is its new id), its answer, the request ending on the user's turn."""
    rnd = random.Random(seed)
    history: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}]
    counter = 0
    for number in range(turns):
        history.append(user(f"question {number}"))
        for _ in range(rnd.randint(1, 4)):
            ids = []
            for _ in range(rnd.randint(1, 3)):
                counter += 1
                ids.append(f"call_{counter:024d}")
            history += _turn(*ids)
        history.append(assistant(f"answer {number}"))
    return [*history, user("thanks")]


def _damaged_as_benched(history: list[Any], events: int, seed: int) -> list[Any]:
    """``benchmarks/bench_core.damage``: results dropped, calling messages dropped (their
    results orphaned), user messages inserted, messages sent twice."""
    rnd = random.Random(seed)
    out = list(history)
    for _ in range(events):
        position = rnd.randrange(1, len(out) - 1)
        action = rnd.randrange(4)
        role = out[position]["role"]
        if (action, role) == (0, "tool") or (
            (action, role) == (1, "assistant") and "tool_calls" in out[position]
        ):
            del out[position]  # (a result missing, or a calling message: its results orphaned)
        elif action == 2:
            out.insert(position, user("are you still there?"))
        else:
            out.insert(position, out[position - 1])
    return out


@st.composite
def _benched(draw: st.DrawFn) -> list[Any]:
    turns = draw(st.integers(3, 40))
    history = _tool_heavy(turns, draw(st.integers(0, 10**6)))
    return _damaged_as_benched(history, draw(st.integers(1, 12)), draw(st.integers(0, 10**6)))


@settings(max_examples=400, deadline=None)
@given(
    history=st.one_of(
        _benched(),
        st.builds(_tool_heavy, st.integers(1, 20), st.integers(0, 10**6)),
        valid_conversations(id_style="any"),
        _mistral_bench_damage(),
        _bench_damage(answered=True).map(lambda history: [*history, user("thanks")]),
        _interrupted_blocks().map(lambda history: [*history, user("thanks")]),
        _repeated_results(),
        damaged_conversations(id_style="any").map(lambda case: case[1]),
    ),
    policy=st.sampled_from(POLICIES),
)
@example(  # an orphan whose id is in Mistral's form: no id problem on it
    history=[
        user("user 1"),
        assistant("assistant 2"),
        user("user 3"),
        result("000000000", "result 4"),
        assistant("assistant 5"),
        user("user 6"),
    ],
    policy=Policy(),
)
def test_a_mistral_history_mended_in_one_walk_is_the_full_paths(
    history: list[Any], policy: Policy
) -> None:
    """Bound for Mistral, wherever the one walk (:func:`toolmend._inline.walk_mend`) answers
    for a history, damaged or only its ids refused, it sends the whole history's repair, ids
    included, says whether it mended damage, and the repair reports the whole path's changes
    and problems (built when first read), nothing left; where it answers None, nothing of the
    request was touched."""
    profile = get_profile("mistral")
    module = formats.get("openai")
    before = copy.deepcopy(history)
    walked = (
        toolmend._inline.walk_mend(history, profile, policy)
        if toolmend._inline.walks(module, profile, policy)
        else None
    )
    assert history == before
    event("walked" if walked is not None else "refused")
    if walked is None:
        return
    expected, changes = whole_repair(module, history, profile, policy)
    assert walked[0] == expected
    assert bool(walked[1]) == any(change.code != "rewrote_call_id" for change in changes)
    fixed = toolmend.repair(history, provider="mistral", policy=policy)
    assert fixed.messages == expected
    assert list(fixed.changes) == changes
    assert list(fixed.problems) == judge(openai_chat.read(history), profile)
    assert fixed.problems_left == ()  # (given by the walk: the judge holds it to that)
    assert judge(openai_chat.read(fixed.messages), profile) == []
    assert history == before


@pytest.mark.parametrize("seed", range(6))
def test_a_benched_mistral_history_is_mended_in_one_walk(
    monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """A tool-heavy history damaged as the benchmark damages it (2% of its messages), bound
    for Mistral: repaired in one walk, no range scan (``dirty_spans``), no range mended, its
    report written from the damage the walk met: the whole path's messages, changes and
    problems."""
    history = _damaged_as_benched(_tool_heavy(60, seed), 8, seed)
    profile = get_profile("mistral")
    module = formats.get("openai")
    expected, changes = whole_repair(module, history, profile, Policy())
    problems = judge(openai_chat.read(history), profile)
    assert {"answered_missing_call", "dropped_duplicate_result"} & {c.code for c in changes}
    scans: list[int] = []
    real_scan = type(module).dirty_spans

    def counting(*args: Any) -> Any:
        scans.append(1)
        return real_scan(*args)

    monkeypatch.setattr(type(module), "dirty_spans", staticmethod(counting))
    fixed = toolmend.repair(history, provider="mistral")
    assert fixed.messages == expected
    assert fixed.changed
    assert list(fixed.changes) == changes
    assert list(fixed.problems) == problems
    assert scans == []  # (the report too: written from the damage the walk met)
    assert fixed.problems_left == () == tuple(judge(openai_chat.read(fixed.messages), profile))
    assert judges.mistral_error(list(fixed.messages), checks_ids=True) is None


def test_a_history_the_walk_refuses_goes_the_range_way() -> None:
    """Damage the walk does not mend (a system message inside a block of results) leaves it
    to the range path, whose repair is the whole path's."""
    history = _tool_heavy(8, 3)
    at = next(i for i, m in enumerate(history) if i > 10 and m["role"] == "tool")
    history.insert(at, {"role": "system", "content": "note"})
    profile = get_profile("mistral")
    module = formats.get("openai")
    assert toolmend._inline.walk_mend(history, profile, Policy()) is None
    expected, changes = whole_repair(module, history, profile, Policy())
    fixed = toolmend.repair(history, provider="mistral")
    assert fixed.messages == expected
    assert list(fixed.changes) == changes


@pytest.mark.parametrize(
    "ids",
    [
        ("call_a_abcdefghi", "call_b_abcdefghi"),  # one tail for two ids: the second hashed
        ("call_0a", "call_0b"),  # tails too short
        ("call_0000000x-y", "call_0000000x+y"),  # tails not letters and digits
    ],
)
def test_ids_whose_tails_are_not_their_new_ids_are_made_one_by_one(ids: tuple[str, str]) -> None:
    """Where a seed's tail is not the id the planner makes of it, the walk makes each new id
    as ``fresh_id`` does, in history order, and the repair is the whole path's."""
    history = _tool_heavy(12, 5)
    at = [i for i, message in enumerate(history) if message["role"] == "user"][1]
    history[at:at] = [*_turn(*ids), assistant("done")]  # (a turn of its own)
    tools = [i for i, message in enumerate(history) if i > 12 and message["role"] == "tool"]
    del history[tools[6]]  # (damage after the ids: a result missing, one sent twice)
    history.insert(tools[1] + 1, history[tools[1]])
    profile = get_profile("mistral")
    module = formats.get("openai")
    walked = toolmend._inline.walk_mend(history, profile, Policy())
    expected, changes = whole_repair(module, history, profile, Policy())
    assert walked is not None and walked[1]
    assert walked[0] == expected
    fixed = toolmend.repair(history, provider="mistral")
    assert fixed.messages == expected
    assert list(fixed.changes) == changes


def test_an_intact_mistral_history_is_rewritten_in_the_one_walk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A history damaged nowhere, every call id refused: sent as the one walk makes it, its
    report written from it (the one-pass id rewrite, ``quick_mend``, never runs); the whole
    path's messages, changes and problems."""
    history = _tool_heavy(30, 2)
    profile = get_profile("mistral")
    module = formats.get("openai")
    expected, changes = whole_repair(module, history, profile, Policy())
    problems = judge(openai_chat.read(history), profile)
    assert {change.code for change in changes} == {"rewrote_call_id"}
    rewrites: list[int] = []
    real = toolmend._api.quick_mend

    def counting(*args: Any, **kwargs: Any) -> Any:
        rewrites.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(toolmend._api, "quick_mend", counting)
    fixed = toolmend.repair(history, provider="mistral")
    assert fixed.messages == expected
    assert list(fixed.changes) == changes
    assert list(fixed.problems) == problems
    assert rewrites == []
    assert fixed.problems_left == ()


@pytest.mark.parametrize("damaged", [False, True])
def test_the_one_walks_report_holds_after_the_caller_edits_its_lists(damaged: bool) -> None:
    """The walk's report is written when it is first read: by then a caller has often appended
    the model's reply (a calling message here) to its history or to the repaired list, or put
    a message in front. The report is the one of the request sent (it read the two lists as
    they were handed over; it raised StopIteration, one new id short, when it read them as
    they had become)."""
    history = _tool_heavy(6, 1)
    if damaged:
        history = _damaged_as_benched(history, 4, 2)
    profile = get_profile("mistral")
    module = formats.get("openai")
    assert toolmend._inline.walk_mend(history, profile, Policy()) is not None
    _, changes = whole_repair(module, history, profile, Policy())
    problems = judge(openai_chat.read(history), profile)
    fixed = toolmend.repair(history, provider="mistral")
    reply = calls("call_000000000000000000000999", "call_000000000000000000000998")
    history.append(reply)
    fixed.messages.append(reply)
    fixed.messages.insert(1, calls("call_000000000000000000000997"))
    history.insert(2, history[1])
    del history[5]
    assert list(fixed.changes) == changes
    assert list(fixed.problems) == problems


def test_a_result_id_of_a_str_subclass_is_the_readers_error_not_the_walks_repair() -> None:
    """A result's ``tool_call_id`` of a ``str`` subclass: the reader refuses it (it takes
    ``str`` itself) and every target's repair names the message; bound for Mistral the one
    walk matched it to its call as an equal string and repaired the history."""

    class Text(str):
        pass

    history = _tool_heavy(3, 1)
    at = next(i for i, message in enumerate(history) if message["role"] == "tool")
    history[at]["tool_call_id"] = Text(history[at]["tool_call_id"])
    assert toolmend._inline.walk_mend(history, get_profile("mistral"), Policy()) is None
    for provider in ("openai", "mistral"):
        with pytest.raises(
            toolmend.InvalidMessageError, match=f"message {at}, field 'tool_call_id'"
        ):
            toolmend.repair(history, provider=provider)


ADJACENT_WALKED = ["gemini", "openai", "bedrock", "anthropic", "gemini-litellm", "deepseek"]


def _named_at_random(draw: st.DrawFn, history: list[Any]) -> list[Any]:
    """``history`` with some tool messages carrying a function name: their call's, or not."""
    if not draw(st.booleans()):
        return history
    return [
        {**m, "name": draw(st.sampled_from(["get_weather", "other"]))}
        if type(m) is dict and m.get("role") == "tool" and draw(st.booleans())
        else m
        for m in history
    ]


@st.composite
def _adjacent_cases(draw: st.DrawFn) -> list[Any]:
    history = draw(
        st.one_of(
            _benched(),
            st.builds(_tool_heavy, st.integers(1, 20), st.integers(0, 10**6)),
            valid_conversations(id_style="any"),
            _bench_damage().map(lambda history: [*history, user("thanks")]),
            _bench_damage(answered=True).map(lambda history: [*history, user("thanks")]),
            _interrupted_blocks().map(lambda history: [*history, user("thanks")]),
            _repeated_results().map(lambda history: [*history, user("thanks")]),
            _repeated_results(),
            damaged_conversations(id_style="any").map(lambda case: case[1]),
        )
    )
    return _named_at_random(draw, history)


@settings(max_examples=400, deadline=None)
@given(
    history=_adjacent_cases(),
    provider=st.sampled_from(ADJACENT_WALKED),
    policy=st.sampled_from(POLICIES),
)
def test_a_history_mended_in_the_adjacent_walk_is_the_full_paths(
    history: list[Any], provider: str, policy: Policy
) -> None:
    """Bound for Gemini (every result named after its call), Bedrock or Anthropic, wherever the one
    walk (:func:`toolmend._walks.walk_adjacent`) answers for a history, it sends the whole
    history's repair, says whether it mended damage, and the repair reports the whole path's
    changes and problems (built when first read), nothing left; where it answers None,
    nothing of the request was touched."""
    profile = get_profile(provider)
    module = formats.get("openai")
    before = copy.deepcopy(history)
    walked = (
        toolmend._walks.walk_adjacent(history, profile, policy)
        if toolmend._walks.walks_adjacent(module, profile, policy)
        else None
    )
    assert history == before
    event("walked" if walked is not None else "refused")
    if walked is None:
        return
    expected, changes = whole_repair(module, history, profile, policy)
    assert walked[0] == expected
    assert bool(walked[1]) == any(change.code != "filled_result_name" for change in changes)
    fixed = toolmend.repair(history, provider=provider, policy=policy)
    assert fixed.messages == expected
    assert list(fixed.changes) == changes
    assert list(fixed.problems) == judge(openai_chat.read(history), profile)
    assert fixed.problems_left == ()  # (given by the walk: the judge holds it to that)
    assert judge(openai_chat.read(fixed.messages), profile) == []
    assert history == before


@pytest.mark.parametrize("provider", ADJACENT_WALKED)
@pytest.mark.parametrize("seed", range(4))
def test_a_benched_history_is_mended_in_the_adjacent_walk(
    monkeypatch: pytest.MonkeyPatch, provider: str, seed: int
) -> None:
    """A tool-heavy history damaged as the benchmark damages it, bound for Gemini, Bedrock or
    Anthropic:
    repaired in one walk, no range scan (``dirty_spans``, ``named_spans``), no range mended;
    the whole path's messages, changes and problems."""
    history = _damaged_as_benched(_tool_heavy(60, seed), 8, seed)
    profile = get_profile(provider)
    module = formats.get("openai")
    expected, changes = whole_repair(module, history, profile, Policy())
    problems = judge(openai_chat.read(history), profile)
    assert {"answered_missing_call", "dropped_duplicate_result"} & {c.code for c in changes}
    scans: list[int] = []
    for name in ("dirty_spans", "named_spans"):
        real_scan = getattr(type(module), name)

        def counting(*args: Any, real_scan: Any = real_scan) -> Any:
            scans.append(1)
            return real_scan(*args)

        monkeypatch.setattr(type(module), name, staticmethod(counting))
    fixed = toolmend.repair(history, provider=provider)
    assert scans == []
    assert fixed.messages == expected
    assert fixed.changed
    assert list(fixed.changes) == changes
    assert list(fixed.problems) == problems
    assert fixed.problems_left == () == tuple(judge(openai_chat.read(fixed.messages), profile))


@pytest.mark.parametrize("provider", ADJACENT_WALKED)
def test_the_bench_histories_are_walked(monkeypatch: pytest.MonkeyPatch, provider: str) -> None:
    """The damaged histories of ``benchmarks/bench_cross_family`` (1k messages; 10k in the
    benchmark) take the walk, and it sends the whole path's repair."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from bench_core import damage
    from bench_cross_family import tool_heavy_history

    profile = get_profile(provider)
    module = formats.get("openai")
    for history in (damage(tool_heavy_history(1000)), damage(tool_heavy_history(1000, named=True))):
        walked = toolmend._walks.walk_adjacent(history, profile, Policy())
        assert walked is not None and walked[1]
        assert walked[0] == whole_repair(module, history, profile, Policy())[0]


@pytest.mark.parametrize(("provider", "limit"), [("bedrock", 64), ("openai", 40)])
@pytest.mark.parametrize("over", [0, 1])
def test_a_walked_history_with_a_long_id_is_the_full_paths(
    monkeypatch: pytest.MonkeyPatch, provider: str, limit: int, over: int
) -> None:
    """Bedrock takes call ids of 1 to 64 characters, OpenAI of up to 40: the walk (its
    messages) tests the lengths of the ids it keeps, as the one-pass check tests them where it reads
    each, so a damaged history with a longer id is left to the other paths."""
    monkeypatch.setattr(toolmend._walks, "_FAMILIES", (provider,))
    monkeypatch.setattr(toolmend._walks, "_WALKED", {})
    length = limit + over
    history = _damaged_as_benched(_tool_heavy(30, 1), 6, 1)
    long_id = "x" * length
    at = next(i for i, m in enumerate(history) if i > 8 and m.get("tool_calls"))
    old = history[at]["tool_calls"][0]["id"]
    history = [
        {
            **m,
            "tool_calls": [
                {**c, "id": long_id if c["id"] == old else c["id"]} for c in m["tool_calls"]
            ],
        }
        if m.get("tool_calls")
        else {**m, "tool_call_id": long_id}
        if m.get("tool_call_id") == old
        else m
        for m in history
    ]
    profile = get_profile(provider)
    module = formats.get("openai")
    walked = toolmend._walks.walk_adjacent(history, profile, Policy())
    assert (walked is None) == (length > limit)
    expected = whole_repair(module, history, profile, Policy())[0]
    if walked is not None:
        assert walked[0] == expected
        assert judge(openai_chat.read(walked[0]), profile) == []


def _deepseek_block(repeat_at: int) -> list[Any]:
    """A short history (nothing wrong but one block) bound for DeepSeek: a calling message of
    two calls, and its results: the first call's, then its repeat placed ``repeat_at`` results
    in (1: in place of the second call's, which is lost; 2: after it)."""
    first, second = "call_000000000000000000000001", "call_000000000000000000000002"
    block = _turn(first, second)
    if repeat_at == 1:
        block[2] = block[1]
    else:
        block.insert(2, block[1])
    return [
        user("question 0"),
        *_turn("call_000000000000000000000003"),
        assistant("answer 0"),
        user("question 1"),
        *block,
        assistant("answer 1"),
        user("thanks"),
    ]


def test_a_deepseek_block_of_as_many_results_as_calls_is_sent_as_it_is() -> None:
    """DeepSeek pairs results by count (``Profile.pairing == "count"``): a block holding as
    many results as calls, one a repeat in place of a lost result, breaks no rule of its, and
    ``repair`` sends it as it is. The adjacent walk, pairing ids, would mend it (it does bound
    for OpenAI): bound for DeepSeek it answers None."""
    history = _deepseek_block(1)
    profile = get_profile("deepseek")
    assert judge(openai_chat.read(history), profile) == []
    assert toolmend._walks.walk_adjacent(history, get_profile("openai"), Policy()) is not None
    assert toolmend._walks.walk_adjacent(history, profile, Policy()) is None
    fixed = toolmend.repair(history, provider="deepseek")
    assert fixed.messages == history
    assert not fixed.changed
    assert list(fixed.problems) == []


def test_a_deepseek_block_of_more_results_than_calls_is_the_judges_count() -> None:
    """A repeat inside a DeepSeek block (two calls, three results): the walk drops the repeat
    (the planner pairs ids) and the report is the judge's count, an ``orphan_result`` at the
    block's third result (the second call's, which the walk keeps), no ``duplicate_result``
    (a code DeepSeek's profile does not have)."""
    history = _deepseek_block(2)
    profile = get_profile("deepseek")
    module = formats.get("openai")
    problems = judge(openai_chat.read(history), profile)
    assert [(problem.code, problem.index) for problem in problems] == [("orphan_result", 8)]
    assert history[8]["tool_call_id"] == "call_000000000000000000000002"
    walked = toolmend._walks.walk_adjacent(history, profile, Policy())
    assert walked is not None
    expected, changes = whole_repair(module, history, profile, Policy())
    assert walked[0] == expected
    fixed = toolmend.repair(history, provider="deepseek")
    assert fixed.messages == expected
    assert [change.code for change in fixed.changes] == ["dropped_duplicate_result"]
    assert list(fixed.changes) == changes
    assert list(fixed.problems) == problems
    assert fixed.problems_left == ()


@settings(max_examples=200, deadline=None)
@given(history=_adjacent_cases())
def test_an_anthropic_history_walked_is_the_full_paths_messages(history: list[Any]) -> None:
    """The walk's messages for Anthropic (ids unique in the request: a later call of an id an
    earlier call kept gets a new id, its result too, as the planner's id step gives it) are
    the whole history's repair (asked of the walk directly; ``repair``'s report for Anthropic
    is held to the whole path's in the adjacent walk's property above)."""
    profile = get_profile("anthropic")
    module = formats.get("openai")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(toolmend._walks, "_FAMILIES", ("anthropic",))
        patch.setattr(toolmend._walks, "_WALKED", {})
        walked = toolmend._walks.walk_adjacent(history, profile, Policy())
    event("walked" if walked is not None else "refused")
    if walked is None:
        return
    assert walked[0] == whole_repair(module, history, profile, Policy())[0]
    assert judge(openai_chat.read(walked[0]), profile) == []


@pytest.mark.parametrize(
    ("provider", "damaged"),
    # (an intact history is walked only where names are filled: the others take it as it is)
    [*((provider, True) for provider in ADJACENT_WALKED), ("gemini", False)],
)
def test_the_adjacent_walks_report_holds_after_the_caller_edits_its_lists(
    provider: str, damaged: bool
) -> None:
    """As for Mistral's walk: the report, written when first read, is the one of the request
    sent after the caller appended the model's reply to its history or to the repaired list,
    or put a message in front (Gemini's raised ``KeyError`` from a result it no longer found
    where the walk had met it)."""
    history = _tool_heavy(6, 1)
    if damaged:
        history = _damaged_as_benched(history, 4, 2)
    profile = get_profile(provider)
    assert toolmend._walks.walk_adjacent(history, profile, Policy()) is not None
    expected = toolmend.repair(list(history), provider=provider)
    changes, problems = list(expected.changes), list(expected.problems)
    fixed = toolmend.repair(history, provider=provider)
    reply = calls("call_000000000000000000000999", "call_000000000000000000000998")
    history.append(reply)
    history.append(result("call_000000000000000000000999"))
    fixed.messages.append(reply)
    fixed.messages.insert(1, calls("call_000000000000000000000997"))
    history.insert(2, history[1])
    del history[5]
    assert list(fixed.changes) == changes
    assert list(fixed.problems) == problems
