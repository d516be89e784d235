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
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import toolmend
from toolmend.api import _read_range
from toolmend.formats import openai_chat
from toolmend.profiles import get_profile
from toolmend.rules import judge

from histories import STUB_CONTENT, content_strings, damaged_conversations, valid_conversations

PROVIDERS = [
    "openai",
    "deepseek",
    "deepseek-reasoner",
    "mistral",
    "groq",
    "hf-template",
    "hf-template-strict",
]
KEEP_EVERYTHING = toolmend.Policy(orphan_result="text")


def _all_text(history: list[Any]) -> str:
    return json.dumps(history, ensure_ascii=False)


@pytest.mark.parametrize("provider", PROVIDERS)
@given(case=damaged_conversations(id_style="any"))
def test_repair_makes_damaged_histories_pass_and_is_idempotent(provider: str, case: Any) -> None:
    _, damaged, _ = case
    before = copy.deepcopy(damaged)
    result = toolmend.repair(damaged, provider=provider)
    assert damaged == before, "the input was mutated"
    assert toolmend.check(result.messages, provider=provider) == []
    assert result.problems_left == ()
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
        found = [
            problem
            for low, high in spans
            for problem in judge(_read_range(openai_chat, damaged, low, high), profile)
        ]

        def key(problem: toolmend.Problem) -> tuple[int, str, tuple[str, ...]]:
            return (problem.index, problem.code, problem.ids)

        assert sorted(found, key=key) == sorted(full, key=key)
        assert toolmend.check(damaged, provider=provider) == found


@given(history=valid_conversations(id_style="any"))
def test_one_pass_scan_vouches_for_valid_dict_histories(history: Any) -> None:
    assert openai_chat.quick_valid(history, get_profile("openai"))
    assert openai_chat.dirty_spans(history, get_profile("deepseek")) == []
