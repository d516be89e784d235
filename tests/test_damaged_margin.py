"""The damaged rows' margin (issue 32's speed targets, seventh round): what a damaged history's
repair looks up per range, and what the range scan does after its loop, made cheaper without
changing an answer. Each cheaper step is held to the step it replaces (the same answers on
damaged histories under every chat profile), and its saving is counted."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolmend
from toolmend._edits import Keep, MessageEdit, Plan
from toolmend._policy import Policy
from toolmend.formats import _openai_chat as openai_chat
from toolmend.formats import _openai_cross as openai_cross
from toolmend.profiles import PROFILES, get_profile

from support.agent_runs import agent_runs
from support.cases import assistant, calls, result, user
from support.histories import damaged_conversations
from support.whole_path import whole_repair

CHAT_PROVIDERS = [name for name, profile in PROFILES.items() if profile.pairing != "ordered"]


def _turns(count: int) -> list[dict[str, Any]]:
    """``count`` sound turns of two tool rounds each."""
    history: list[dict[str, Any]] = []
    for number in range(count):
        first, second = f"call_{number}a", f"call_{number}b"
        history += [
            user(f"question {number}"),
            calls(first, second),
            result(first, f"out {first}"),
            result(second, f"out {second}"),
            calls(f"call_{number}c"),
            result(f"call_{number}c", "done"),
            assistant(f"answer {number}"),
        ]
    return history


def _damaged(count: int) -> list[dict[str, Any]]:
    """Sound turns with the bench's damages among them: a result sent twice, one missing, an
    orphan after a user message, and a calling message sent twice."""
    history = _turns(count)
    history.insert(3, copy.deepcopy(history[2]))  # turn 0: a result sent twice
    del history[7 + 12]  # turn 2: its first round's second result missing
    history.insert(7 * 4, result("call_gone", "late"))  # an orphan after turn 3's answer
    history.insert(7 * 5 + 2, copy.deepcopy(history[7 * 5 + 1]))  # turn 5: calls sent twice
    return history


@settings(max_examples=150, deadline=None)
@given(
    history=st.one_of(damaged_conversations(id_style="any").map(lambda t: t[1]), agent_runs()),
    provider=st.sampled_from(CHAT_PROVIDERS),
)
def test_a_ranges_check_answers_as_the_whole_historys_check(
    history: list[Any], provider: str
) -> None:
    """``range_run`` (a damaged range's one-pass check, without the whole history's look at
    its first call's id and, where the rules have none, at its opening) answers on every
    range, and on every stretch of it, exactly what the check of a whole history answers."""
    profile = get_profile(provider)
    params = openai_chat.range_params(profile)
    if params is None:
        return
    spans = openai_chat.dirty_spans(history, profile) or [(0, len(history))]
    for low, high in spans:
        for start in range(low, high + 1):
            part = history[start:high]
            assert openai_chat.range_run(part, params) == openai_chat._live_run(part, params)


@pytest.mark.parametrize("provider", ["anthropic", "bedrock"])
def test_a_ranges_check_does_not_look_at_the_first_id(
    monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    """Bound for a profile whose id pattern is not one character class (the pass cannot test
    its lengths as it reads each id), the first-id look (a shortcut for a whole history of
    refused ids) runs once, in the vouch: not again in each range's check (four looks for
    this history before)."""
    profile = dataclasses.replace(get_profile(provider), call_id_pattern=r"^call_[A-Za-z0-9_-]+$")
    history = _damaged(8)
    expected, changes = whole_repair(toolmend.formats.get("openai"), history, profile, Policy())
    looks = []
    real = openai_cross._first_id_ok

    def counted(messages: Any, id_match: Callable[[str], Any]) -> bool:
        looks.append(len(messages))
        return real(messages, id_match)

    monkeypatch.setattr(openai_cross, "_first_id_ok", counted)
    fixed = toolmend.repair(history, provider=profile)
    assert fixed.messages == expected and list(fixed.changes) == changes
    assert len(looks) == 1


def test_each_reach_of_the_strays_is_looked_up_once() -> None:
    """Strays of one range often reach the same ranges (a call left unanswered whose id is
    reused, and called twice under request-wide ids): the range start after each reach is
    looked up once, and the ranges are those of one look-up per stray."""
    spans = [(10, 14), (20, 25), (40, 44)]
    starts = [0, 10, 14, 20, 25, 31, 40, 44]
    callers = {"a": [10], "b": [10], "c": [20, 40], "d": [20, 40]}
    strays = [(10, "a"), (10, "b"), (20, "c"), (20, "d"), (10, "a"), (25, "zz")]
    looked: list[int] = []

    def stop_of(start: int) -> int:
        looked.append(start)
        return next((s for s in starts if s > start), 50)

    widened = openai_chat._widen_for_strays(spans, starts, callers, strays, [], 50, stop_of)
    assert widened == [(10, 14), (20, 44)]
    assert sorted(looked) == [10, 40]  # (10, 10) twice and (20, 40) twice: one look each


@settings(max_examples=300, deadline=None)
@given(
    fast_ids=st.lists(st.sampled_from("abcdef"), max_size=8),
    called=st.lists(st.sampled_from("abcdefgh"), max_size=5),
    wanted=st.lists(st.tuples(st.integers(0, 3), st.sampled_from("aegh")), max_size=3),
    request_ids=st.booleans(),
    cross=st.booleans(),
)
def test_whether_the_scan_runs_again_without_the_pass_is_as_it_was(
    fast_ids: list[str],
    called: list[str],
    wanted: list[tuple[int, str]],
    request_ids: bool,
    cross: bool,
) -> None:
    """``_needs_whole`` (made cheaper: the vouched ids' set made once under request-wide ids)
    answers as it did."""
    rules = openai_cross.cross_rules(get_profile("anthropic" if request_ids else "bedrock"))
    assert rules is not None and rules.request_ids == request_ids
    chosen = rules if cross else None
    third = len(wanted) // 3
    strays, repeats, unanswered = wanted[:third], wanted[third : 2 * third], wanted[2 * third :]
    ids = {call_id for _, call_id in (*strays, *repeats, *unanswered)}
    before = bool(ids and not ids.isdisjoint(fast_ids)) or (
        chosen is not None
        and chosen.request_ids
        and (len(set(fast_ids)) != len(fast_ids) or not set(fast_ids).isdisjoint(called))
    )
    assert openai_chat._needs_whole(fast_ids, called, strays, repeats, unanswered, chosen) == before


def test_a_kept_message_is_applied_without_a_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """``apply`` takes a message kept as it is straight from the range (most of a range's
    items), and builds only the edited ones."""
    part = [calls("call_1"), result("call_1", "out"), user("next")]
    plan = Plan([Keep(0), Keep(1), Keep(2)], {1: MessageEdit(result_names={0: "get_weather"})})
    built: list[Any] = []
    real = openai_chat._build

    def counted(messages: Any, item: Any, edits: Any) -> Any:
        built.append(item)
        return real(messages, item, edits)

    monkeypatch.setattr(openai_chat, "_build", counted)
    applied = openai_chat.apply(part, plan)
    assert applied[0] is part[0] and applied[2] is part[2]
    assert applied[1] == {**part[1], "name": "get_weather"} and applied[1] is not part[1]
    assert built == [Keep(1)]


class _Role(str):
    """A role of another type that equals a role's name."""


@pytest.mark.parametrize("odd", [["tool"], None, _Role("user"), "function", 3], ids=repr)
def test_a_bedrock_range_with_an_odd_role_goes_to_the_full_path(odd: Any) -> None:
    """Under Bedrock's role order, a range whose message has a role of another type, or of no
    kind, is not mended in one walk (the full path names it), as before."""
    part = [calls("call_1"), result("call_1", "out"), {"role": odd, "content": "x"}, user("u")]
    module = toolmend.formats.get("openai")
    found = toolmend._quickmend.mended_range(module, part, get_profile("bedrock"), Policy(), 5)
    assert found is None
