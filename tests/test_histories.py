"""Tests of the history generators themselves (not of toolmend).

If the generators produced invalid "valid" histories, or damage ops that
silently did nothing, every property test built on them would prove less
than it claims; these checks keep them honest.
"""

from __future__ import annotations

import copy
import json
import random
import re
from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st

from support.histories import (
    DAMAGE_OPS,
    MAX_MESSAGES,
    OP_NAMES,
    STUB_CONTENT,
    History,
    apply_damage,
    content_strings,
    damaged_conversations,
    valid_conversations,
)

if TYPE_CHECKING:
    from collections.abc import Callable

ID_PATTERNS = {
    "openai": re.compile(r"call_[A-Za-z0-9]{24}"),
    "reused": re.compile(r"call_[0-9]"),
    "mistral": re.compile(r"[A-Za-z0-9]{9}"),
}
SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
# Existence checks only need one hit; skipping the shrink phase keeps them fast.
FIND = settings(max_examples=500, deadline=None, database=None, phases=[Phase.generate])


def check_valid(history: History, id_style: str = "any", reasoning: bool = False) -> None:
    """Small independent reference for the OpenAI (and Mistral) history rules."""
    assert 0 < len(history) <= MAX_MESSAGES
    roles = [m["role"] for m in history]
    assert "system" not in roles[1:]
    assert roles[0 if roles[0] != "system" else 1] == "user"
    patterns = list(ID_PATTERNS.values()) if id_style == "any" else [ID_PATTERNS[id_style]]
    all_ids: list[str] = []
    i = 0
    while i < len(history):
        message = history[i]
        role = message["role"]
        assert role != "tool", f"tool message at {i} outside a tool block"
        if role == "assistant":
            assert ("reasoning_content" in message) == reasoning
            calls = message.get("tool_calls")
            if calls is None:
                assert isinstance(message["content"], str)
                assert message["content"]
                assert i + 1 == len(history) or roles[i + 1] == "user"
            else:
                assert 1 <= len(calls) <= 3
                ids = [c["id"] for c in calls]
                assert len(set(ids)) == len(ids)
                assert any(all(p.fullmatch(x) for x in ids) for p in patterns)
                for call in calls:
                    assert set(call) == {"id", "type", "function"}
                    assert call["type"] == "function"
                    assert isinstance(json.loads(call["function"]["arguments"]), dict)
                block = history[i + 1 : i + 1 + len(calls)]
                assert all(m["role"] == "tool" for m in block)
                assert sorted(m["tool_call_id"] for m in block) == sorted(ids)
                i += len(calls)
                # After a block comes assistant text or another call round, never user
                # (so the Mistral tool->user rule holds for every style).
                assert i + 1 < len(history)
                assert roles[i + 1] == "assistant"
                all_ids += ids
        elif role == "user":
            assert i + 1 == len(history) or roles[i + 1] == "assistant"
        i += 1
    if id_style in ("openai", "mistral"):
        assert len(set(all_ids)) == len(all_ids)
    texts = [m["content"] for m in history if m["role"] != "system" and m["content"] is not None]
    assert all(isinstance(t, str) and t for t in texts)
    assert len(set(texts)) == len(texts)
    assert content_strings(history) == set(texts)


@pytest.mark.parametrize("id_style", ["openai", "reused", "mistral", "any"])
@pytest.mark.parametrize("reasoning", [False, True])
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_valid_conversations_are_valid(id_style: str, reasoning: bool, data: st.DataObject) -> None:
    history = data.draw(valid_conversations(id_style=id_style, reasoning=reasoning))  # type: ignore[arg-type]
    check_valid(history, id_style, reasoning)


@pytest.mark.parametrize(
    "condition",
    [
        pytest.param(lambda h: h[-1]["role"] == "user", id="ends-with-user"),
        pytest.param(lambda h: h[-1]["role"] == "assistant", id="ends-with-assistant"),
        pytest.param(lambda h: h[0]["role"] == "system", id="system"),
        pytest.param(lambda h: any(len(m.get("tool_calls", [])) == 3 for m in h), id="3-calls"),
        pytest.param(
            lambda h: any(
                m["role"] == "tool"
                and h[i - 1].get("tool_calls")
                and m["tool_call_id"] != h[i - 1]["tool_calls"][0]["id"]
                for i, m in enumerate(h)
            ),
            id="results-permuted",
        ),
    ],
)
def test_valid_conversations_cover_shapes(condition: Callable[[History], bool]) -> None:
    find(valid_conversations(), condition, settings=FIND)


def test_reused_ids_repeat_across_rounds() -> None:
    def repeats(history: History) -> bool:
        ids = [c["id"] for m in history for c in m.get("tool_calls", [])]
        return len(set(ids)) < len(ids)

    find(valid_conversations(id_style="reused"), repeats, settings=FIND)


def test_arguments_are_validated() -> None:
    with pytest.raises(ValueError, match="id_style"):
        valid_conversations(id_style="gemini")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_rounds"):
        damaged_conversations(max_rounds=0)


def _dump(message: dict[str, Any]) -> str:
    return json.dumps(message, sort_keys=True)


def _multiset(history: History) -> Counter[str]:
    return Counter(_dump(m) for m in history)


def _extra(bigger: History, smaller: History) -> list[dict[str, Any]]:
    """Messages in ``bigger`` but not in ``smaller`` (as a multiset difference)."""
    diff = _multiset(bigger) - _multiset(smaller)
    return [json.loads(s) for s in diff.elements()]


def _is_subsequence(small: History, big: History) -> bool:
    it = iter(big)
    return all(any(m == b for b in it) for m in small)


def _with_calls(h: History) -> int:
    return sum(1 for m in h if m["role"] == "assistant" and m.get("tool_calls"))


def _tools(h: History) -> int:
    return sum(1 for m in h if m["role"] == "tool")


def _expect_drop_call_message(h: History, out: History) -> None:
    assert _is_subsequence(out, h)
    assert len(out) == len(h) - 1
    assert _with_calls(out) == _with_calls(h) - 1
    assert _tools(out) == _tools(h)


def _expect_drop_result(h: History, out: History) -> None:
    assert _is_subsequence(out, h)
    assert len(out) == len(h) - 1
    assert _tools(out) == _tools(h) - 1


def _expect_truncate_head(h: History, out: History) -> None:
    start = 1 if h[0]["role"] == "system" else 0
    assert out[:start] == h[:start]
    assert start < len(out) < len(h)
    assert out[start:] == h[len(h) - len(out) + start :]


def _expect_truncate_tail(h: History, out: History) -> None:
    assert len(out) < len(h)
    assert out == h[: len(out)]
    assert out[-1]["role"] == "tool" or out[-1].get("tool_calls")


def _expect_interleave_user(h: History, out: History) -> None:
    (new,) = _extra(out, h)
    assert new["role"] == "user"
    assert new["content"] not in content_strings(h)
    at = out.index(new)
    assert out[:at] + out[at + 1 :] == h
    assert out[at - 1]["role"] == "tool" or out[at - 1].get("tool_calls")


def _expect_split_assistant(h: History, out: History) -> None:
    assert len(out) == len(h) + 1
    assert content_strings(out) == content_strings(h)
    at = next(i for i, m in enumerate(out) if m != h[i])
    assert out[at]["content"] is None
    assert out[at]["tool_calls"] == h[at]["tool_calls"]
    assert out[at + 1] == {"role": "assistant", "content": h[at]["content"]}


def _expect_duplicate_result(h: History, out: History) -> None:
    (new,) = _extra(out, h)
    assert new["role"] == "tool"
    assert new in h


def _expect_stub_then_real(h: History, out: History) -> None:
    assert len(out) == len(h) + 1
    assert content_strings(out) == content_strings(h) | {STUB_CONTENT}


def _expect_move_result(h: History, out: History) -> None:
    assert _multiset(out) == _multiset(h)
    assert out != h


def _expect_drop_result_id(h: History, out: History) -> None:
    changed = [(a, b) for a, b in zip(h, out, strict=True) if a != b]
    assert len(changed) == 1
    before, after = changed[0]
    assert after == {k: v for k, v in before.items() if k != "tool_call_id"} != before


def _expect_malformed_call(h: History, out: History) -> None:
    changed = [(a, b) for a, b in zip(h, out, strict=True) if a != b]
    assert len(changed) == 1
    assert changed[0][1].get("tool_calls")
    assert content_strings(out) == content_strings(h)


def _expect_empty_tool_calls(h: History, out: History) -> None:
    changed = [(a, b) for a, b in zip(h, out, strict=True) if a != b]
    assert [b for _, b in changed] == [{**changed[0][0], "tool_calls": []}]


def _expect_null_content(h: History, out: History) -> None:
    changed = [(a, b) for a, b in zip(h, out, strict=True) if a != b]
    assert [b for _, b in changed] == [{**changed[0][0], "content": None}]


def _expect_long_ids(h: History, out: History) -> None:
    assert len(out) == len(h)
    assert content_strings(out) == content_strings(h)
    ids = {c["id"] for m in out for c in m.get("tool_calls", [])}
    long = [x for x in ids if len(x) == 60]
    assert len(long) == 1
    assert any(m.get("tool_call_id") == long[0] for m in out)


def _expect_merge_results(h: History, out: History) -> None:
    assert len(out) == len(h) - 1
    at = next(i for i, m in enumerate(out) if m != h[i])
    assert h[at]["role"] == h[at + 1]["role"] == "tool"
    assert out[at] == {**h[at], "content": f"{h[at]['content']}\n{h[at + 1]['content']}"}
    assert out[at + 1 :] == h[at + 2 :]


def _ids(h: History) -> set[Any]:
    calls = {c["id"] for m in h for c in m.get("tool_calls") or []}
    return calls | {m.get("tool_call_id") for m in h if m["role"] == "tool"}


def _expect_reid_one_side(h: History, out: History) -> None:
    changed = [(a, b) for a, b in zip(h, out, strict=True) if a != b]
    assert len(changed) == 1
    assert content_strings(out) == content_strings(h)
    assert len(_ids(out) - _ids(h)) == 1
    assert len(_ids(h) - _ids(out)) <= 1


def _expect_rename_result(h: History, out: History) -> None:
    changed = [(a, b) for a, b in zip(h, out, strict=True) if a != b]
    assert len(changed) == 1
    before, after = changed[0]
    assert after["role"] == "tool"
    assert after == {**before, "name": after["name"]}
    assert after["name"] != before.get("name")


def _scribble(value: object) -> None:
    """Empty every list and dict inside ``value``, innermost first."""
    if isinstance(value, dict):
        for item in value.values():
            _scribble(item)
        value.clear()
    elif isinstance(value, list):
        for item in value:
            _scribble(item)
        value.clear()


EXPECTATIONS: dict[str, Callable[[History, History], None]] = {
    name: globals()[f"_expect_{name}"] for name in OP_NAMES
}


@pytest.mark.parametrize("name", OP_NAMES)
@settings(max_examples=50, deadline=None)
@given(history=valid_conversations(id_style="any"), seed=SEEDS)
def test_op_is_pure_and_does_what_it_says(name: str, history: History, seed: int) -> None:
    snapshot = copy.deepcopy(history)
    out = DAMAGE_OPS[name](history, random.Random(seed))
    assert history == snapshot
    if out != history:
        EXPECTATIONS[name](history, out)
        # No aliasing: scribbling over the output must not reach the input.
        _scribble(out)
        assert history == snapshot


@pytest.mark.parametrize("name", OP_NAMES)
def test_op_applies_to_some_history(name: str) -> None:
    op = DAMAGE_OPS[name]
    find(
        valid_conversations(id_style="any"),
        lambda h: op(h, random.Random(0)) != h,
        settings=FIND,
    )


@settings(max_examples=50, deadline=None)
@given(
    history=valid_conversations(id_style="any"),
    names=st.lists(st.sampled_from(OP_NAMES), min_size=1, max_size=3),
    seed=SEEDS,
)
def test_listed_ops_are_exactly_the_effective_ones(
    history: History, names: list[str], seed: int
) -> None:
    snapshot = copy.deepcopy(history)
    damaged, applied = apply_damage(history, names, random.Random(seed))
    assert history == snapshot
    # Replay step by step with the same seed: an op is listed iff it changed things.
    rnd, current, effective = random.Random(seed), history, []
    for name in names:
        step = DAMAGE_OPS[name](current, rnd)
        if step != current:
            effective.append(name)
        current = step
    assert effective == applied
    assert current == damaged


@settings(max_examples=50, deadline=None)
@given(case=damaged_conversations(id_style="any", reasoning=True))
def test_damaged_conversations(case: tuple[History, History, list[str]]) -> None:
    original, damaged, ops = case
    check_valid(original, "any", reasoning=True)
    assert len(ops) <= 3
    assert set(ops) <= set(OP_NAMES)
    if not ops:
        assert damaged == original


@pytest.mark.parametrize("count", [0, 3])
def test_damaged_conversations_op_counts_occur(count: int) -> None:
    find(
        damaged_conversations(),
        lambda case: len(case[2]) == count,
        settings=FIND,
    )
