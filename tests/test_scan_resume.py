"""The range scan of a damaged history hands its sound stretches to the vouch's own pass
(``formats._openai_cross.scan_pass``) and reads carefully only from the last range start
before each message the pass cannot vouch for (issue 32's speed targets). The ranges, and the
names recorded for Gemini, must be exactly those of the careful loop reading every message
(``_scan(..., resume=False)``, the scan as it was); these tests hold them to it, on damaged
and on odd histories, and count the work the pass saves."""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolmend.formats import _openai_chat as openai_chat
from toolmend.profiles import PROFILES, get_profile

from support.agent_runs import agent_runs
from support.cases import assistant, calls, result, user
from support.histories import damaged_conversations

CHAT_PROVIDERS = [name for name, profile in PROFILES.items() if profile.pairing != "ordered"]
SCANNED = ["openai", "deepseek", "anthropic", "bedrock", "gemini", "groq", "mistral"]


def _turn(number: int, width: int, rounds: int = 2) -> list[dict[str, Any]]:
    """A user message, ``rounds`` tool rounds of ``width`` calls, an answer."""
    turn: list[dict[str, Any]] = [user(f"question {number}")]
    for round_ in range(rounds):
        ids = [f"call_{number}x{round_}x{slot}" for slot in range(width)]
        turn += [calls(*ids), *(result(call_id, f"out {call_id}") for call_id in ids)]
    return [*turn, assistant(f"answer {number}")]


_ODD: list[Callable[[dict[str, Any]], Any]] = [
    lambda m: {key: value for key, value in m.items() if key != "content"},
    lambda m: {**m, "role": ["tool"]},
    lambda m: {key: value for key, value in m.items() if key != "role"},
    lambda m: {**m, "tool_calls": {"id": "x"}} if m.get("role") == "assistant" else m,
    lambda m: {**m, "tool_calls": []} if m.get("role") == "assistant" else m,
    lambda m: {**m, "tool_call_id": ["x"]} if m.get("role") == "tool" else m,
    lambda m: {**m, "tool_call_id": None} if m.get("role") == "tool" else m,
    lambda m: {**m, "content": ""},
    lambda m: {**m, "content": "   "},
    lambda m: {**m, "name": "other"} if m.get("role") == "tool" else m,
    lambda m: {**m, "reasoning_content": None},
    lambda m: {**m, "function_call": None},
    lambda m: "not a message",
    lambda m: (
        {**m, "tool_calls": [{**m["tool_calls"][0], "id": "bad id!"}]}
        if m.get("role") == "assistant" and m.get("tool_calls")
        else m
    ),
    lambda m: (
        {**m, "tool_calls": [{**m["tool_calls"][0], "function": {"name": "x y", "arguments": 1}}]}
        if m.get("role") == "assistant" and m.get("tool_calls")
        else m
    ),
]
"""Edits that make a message odd: a field missing or of another kind, a value the pass and
the loop test in different places."""


@st.composite
def _long_damaged(draw: st.DrawFn) -> list[Any]:
    """Long stretches of sound turns with damage between them: results and calling messages
    dropped, user messages inserted, messages sent twice, results repeated, ids reused far
    away, names given or not, and odd messages (``_ODD``)."""
    named = draw(st.booleans())
    history: list[Any] = []
    for number in range(draw(st.integers(3, 9))):
        turn = _turn(number, draw(st.integers(1, 3)), draw(st.integers(1, 3)))
        if named:
            for message in turn:
                if message["role"] == "tool":
                    message["name"] = "get_weather"
        if number == 0 and draw(st.booleans()):
            turn.insert(0, {"role": "system", "content": "be brief"})
        history += turn
    for _ in range(draw(st.integers(1, 5))):
        at = draw(st.integers(1, len(history) - 1))
        action = draw(st.integers(0, 7))
        message = history[at]
        role = message.get("role") if type(message) is dict else None
        if action == 0 and role == "tool":
            del history[at]  # a missing result
        elif action == 1 and role == "assistant" and message.get("tool_calls"):
            del history[at]  # orphaned results
        elif action == 2:
            history.insert(at, user("are you still there?"))
        elif action == 3:
            history.insert(at, history[at - 1])  # a message sent twice
        elif action == 4 and role == "tool":
            other = dict(message)
            other["content"] = draw(st.sampled_from(["", "Tool execution aborted", "other"]))
            history.insert(at + 1, other)
        elif action == 5:  # an id reused far away: a stray or a call of a sound turn's id
            ids = [m["tool_call_id"] for m in history if type(m) is dict and "tool_call_id" in m]
            if ids:
                history.insert(
                    at, draw(st.sampled_from([result, calls]))(draw(st.sampled_from(ids)))
                )
        elif action == 6 and type(message) is dict:
            history[at] = draw(st.sampled_from(_ODD))(copy.deepcopy(message))
        elif type(message) is dict:
            history.insert(at, assistant(draw(st.sampled_from(["", None, "thinking"]))))
    return history


def _both(history: list[Any], provider: str) -> None:
    """The ranges (and Gemini's recorded names) with the pass and without it are the same."""
    profile = get_profile(provider)
    assert openai_chat.dirty_spans(history, profile) == openai_chat._scan(
        history, profile, first_only=False, resume=False
    )
    with_pass: list[Any] = []
    without: list[Any] = []
    assert openai_chat._scan(history, profile, first_only=False, names=with_pass) == (
        openai_chat._scan(history, profile, first_only=False, names=without, resume=False)
    )
    assert with_pass == without


@settings(max_examples=600, deadline=None)
@given(history=_long_damaged(), provider=st.sampled_from(SCANNED))
def test_the_ranges_with_the_pass_are_the_scans(history: list[Any], provider: str) -> None:
    """Long damaged histories (the bench's damage, reused ids, odd messages), the profiles
    the bench times and their neighbours: the same ranges and recorded names."""
    _both(history, provider)


@settings(max_examples=400, deadline=None)
@given(
    history=st.one_of(
        _long_damaged(),
        damaged_conversations(id_style="any").map(lambda case: case[1]),
        agent_runs(),
    ),
    provider=st.sampled_from(CHAT_PROVIDERS),
)
def test_the_ranges_with_the_pass_are_the_scans_for_every_profile(
    history: list[Any], provider: str
) -> None:
    """Every chat profile, on the suite's damaged conversations and agent runs too."""
    _both(history, provider)


def _history(turns: int) -> list[Any]:
    history: list[Any] = []
    for number in range(turns):
        history += _turn(number, 2)
    return history


def _lines_in(code: Any, run: Callable[[], object]) -> int:
    """The lines executed by ``run()``: of ``code`` (one function's), or of every function
    (None)."""
    count = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def global_(frame: FrameType, event: str, arg: Any) -> Any:
        return local if code is None or frame.f_code is code else None

    previous = sys.gettrace()
    sys.settrace(global_)
    try:
        run()
    finally:
        sys.settrace(previous)
    return count


@pytest.mark.parametrize("provider", ["openai", "anthropic", "bedrock", "gemini"])
def test_the_loop_reads_only_around_the_damage(provider: str) -> None:
    """Of 60 sound turns and one damaged one, the careful loop reads a handful of messages
    (its lines are counted, the pass's are not): the scan as it was read every message.
    Gemini's names, which every result lacks, are recorded as ``named_spans`` records them."""
    history = _history(61)
    del history[30 * 8 + 3]  # turn 30: a result missing
    profile = get_profile(provider)
    code = openai_chat._scan.__code__

    def scan(resume: bool) -> Any:
        return openai_chat._scan(history, profile, first_only=False, names=[], resume=resume)

    expected = scan(False)
    assert scan(True) == expected
    assert len(expected) == 1 and 240 <= expected[0][0] < expected[0][1] <= 248
    old = _lines_in(code, lambda: scan(False))
    new = _lines_in(code, lambda: scan(True))
    assert old > 20 * len(history)  # every message, some twenty lines each
    assert new < old / 8


def test_a_stray_whose_id_a_sound_turn_calls_takes_the_whole_scan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A result with no call waiting, whose id a sound turn far away calls: the ranges reach
    over that turn, which the pass does not record, so the scan reads every message (the
    same ranges as before)."""
    history = _history(20)
    history.insert(150, result("call_3x0x0", "late"))  # turn 3's id, after turn 18's answer
    profile = get_profile("openai")
    seen: list[bool] = []
    scan = openai_chat._scan

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("resume", True))
        return scan(*args, **kwargs)

    monkeypatch.setattr(openai_chat, "_scan", spy)
    spans = openai_chat.dirty_spans(history, profile)
    assert spans == scan(history, profile, first_only=False, resume=False)
    assert spans[0][0] == 3 * 8 + 1 and spans[-1][1] > 150  # from the caller's range to the stray
    assert seen == [True, False]


@pytest.mark.parametrize(
    ("provider", "edit"),
    [
        ("anthropic", lambda h: h.insert(120, h[3 * 8 + 1])),  # an id called again far away
        ("bedrock", lambda h: h[5 * 8 + 1]["tool_calls"][0].update(id="bad id!")),
        ("anthropic", lambda h: h[5 * 8 + 1]["tool_calls"][0]["function"].update(name="")),
    ],
)
def test_what_the_pass_leaves_to_the_whole_scan(
    provider: str, edit: Callable[[list[Any]], None]
) -> None:
    """Ids unique in the request, an id outside the pattern, a name outside it: the same
    ranges as the scan without the pass."""
    history = copy.deepcopy(_history(20))
    history.insert(100, user("are you still there?"))
    history.insert(101, result("call_gone", "late"))
    edit(history)
    profile = get_profile(provider)
    assert openai_chat.dirty_spans(history, profile) == openai_chat._scan(
        history, profile, first_only=False, resume=False
    )


def _alternating(turns: int) -> list[Any]:
    """Every other turn damaged (a result missing, an orphan): the pass fails at once after
    each hand-back."""
    history: list[Any] = []
    for number in range(turns):
        turn = _turn(number, 2)
        if number % 2:
            del turn[3]
            turn.insert(1, result(f"gone{number}"))
        history += turn
    return history


@pytest.mark.parametrize("provider", ["openai", "bedrock"])
def test_the_hand_backs_keep_the_scan_linear(provider: str) -> None:
    """Damage every other turn: each hand-back to the pass fails soon, and the messages read
    twice are the few before each failure; the lines executed grow with the history (about
    4x at 4n, not 16x)."""
    profile = get_profile(provider)

    def lines(turns: int) -> int:
        history = _alternating(turns)
        assert openai_chat.dirty_spans(history, profile) == openai_chat._scan(
            history, profile, first_only=False, resume=False
        )
        return _lines_in(None, lambda: openai_chat.dirty_spans(history, profile))

    assert lines(120) / lines(30) < 4.5


@pytest.mark.parametrize("answered", [True, False])
@pytest.mark.parametrize("later", [1, 4])
def test_a_role_order_is_kept_across_a_hand_back(answered: bool, later: int) -> None:
    """Mistral's role order, where the loop hands back right after a turn's results (a result
    repeated earlier in the turn, its range closed at the next calling message): the pass
    knows the role before it (a user message may not follow results), and the loop taking
    over again after it knows the role before that (a stray result after the next question,
    with the answer between or not, at once or after a tool round)."""
    history = _history(12)
    turn = 5 * 8
    history.insert(turn + 3, history[turn + 2])  # turn 5: its first result sent twice
    if not answered:
        del history[turn + 8]  # the answer: results, then the next question
    question = turn + (9 if answered else 8)
    history.insert(question + later, result("call_gone", "late"))
    profile = get_profile("mistral")
    assert history[question]["role"] == "user"
    assert openai_chat.dirty_spans(history, profile) == openai_chat._scan(
        history, profile, first_only=False, resume=False
    )
