"""Atomic groups, cut alignment, trimming, merging, and the structure log (issue 4).

Seeds 001 (trimming and summarising that cut a tool-call group in half) and 002 (merging that
lost tool results) are replayed as tests; property tests run ``trim`` over random valid and
damaged histories with every limit.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import itertools
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import toolmend

from support import block_histories
from support.cases import assistant, result, system, user
from support.histories import content_strings, damaged_conversations, valid_conversations

trim_module = importlib.import_module("toolmend._trim")
estimate_tokens = trim_module.estimate_tokens
PAIRING_CODES = trim_module.PAIRING_CODES

Message = dict[str, Any]


def call(call_id: str, name: str = "run_shell", **arguments: Any) -> Message:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments or {"cmd": "ls"})},
    }


def calling(*tool_calls: Message, text: str | None = None) -> Message:
    return {"role": "assistant", "content": text, "tool_calls": list(tool_calls)}


def pairing_problems(messages: Any, provider: str = "openai") -> list[str]:
    format = (
        provider if provider in ("anthropic", "gemini", "bedrock", "openai-responses") else None
    )
    found = toolmend.check(messages, provider=provider, format=format)
    return [p.code for p in found if p.code in PAIRING_CODES]


def tokens(messages: list[Any]) -> int:
    return sum(estimate_tokens(message) for message in messages)


def boundaries(messages: list[Any]) -> set[int]:
    return {group.start for group in toolmend.atomic_groups(messages)} | {len(messages)}


def first_boundary_at_or_after(messages: list[Any], index: int) -> int:
    return min(b for b in boundaries(messages) if b >= index)


def require_format(name: str) -> None:
    if name not in importlib.import_module("toolmend.formats").names():
        pytest.skip(f"TODO(issue 4): the {name!r} format module has not landed yet")


# --- the case every upstream trimmer gets wrong ----------------------------------------------

INTERLEAVED = [
    user("What is the weather in Paris?"),
    calling(call("call_1", "get_weather", city="Paris")),
    user("are you there?"),
    result("call_1", "RESULT: 21 C"),
    assistant("It is 21 C in Paris."),
]


@pytest.mark.parametrize(
    ("message", "characters"),
    [
        ({"role": "user", "content": "x" * 40}, 44),  # every string, not the keys
        ({"role": "tool", "content": None}, 4),  # None counts nothing
        ({"role": "x", "args": {"limit": 250, "ratio": 0.5}}, 1 + 3 + 3),  # a number's digits
        ({"role": "x", "args": {"deep": True, "wide": False}}, 1),  # a bool is no number here
        ({"role": "x", "parts": [{"text": "ab"}, ("cd", 7)]}, 1 + 2 + 2 + 1),  # any nesting
    ],
)
def test_estimate_tokens_counts_strings_and_digits(message: Message, characters: int) -> None:
    assert estimate_tokens(message) == 4 + -(-characters // 4)


def test_interleaved_user_message_is_inside_the_group() -> None:
    assert toolmend.atomic_groups(INTERLEAVED) == [range(1), range(1, 4), range(4, 5)]
    # LangChain's SummarizationMiddleware keeps [Human, ToolMessage, AI] for a cut at 2
    naive = INTERLEAVED[2:]
    assert "orphan_result" in pairing_problems(naive)
    assert toolmend.align_cut(INTERLEAVED, 2) == 1
    assert toolmend.align_cut(INTERLEAVED, 3) == 1


@pytest.mark.parametrize("max_messages", range(1, len(INTERLEAVED) + 1))
def test_interleaved_user_message_never_leaves_an_orphan(max_messages: int) -> None:
    kept = toolmend.trim(INTERLEAVED, max_messages=max_messages)
    assert toolmend.check(kept) == []
    assert len(kept) <= max_messages
    results = [m for m in kept if m["role"] == "tool"]
    if max_messages >= 4:  # the call, its result, the interjection and the answer fit
        assert results == [INTERLEAVED[3]], "the real result is kept, not a placeholder"
        position = kept.index(INTERLEAVED[3])
        assert kept[position - 1]["tool_calls"][0]["id"] == "call_1"
        assert user("are you there?") in kept
    else:
        assert results == []


def test_langchain_probe_from_the_peer_survey() -> None:
    """LangChain's ``trim_messages(start_on="human")`` keeps an orphan ToolMessage when a
    human message lands between the AIMessage's call and its result; ``trim`` does not."""
    messages = pytest.importorskip("langchain_core.messages")
    require_format("langchain")
    history = [
        messages.SystemMessage("Be brief."),
        messages.HumanMessage("Weather in Paris?"),
        messages.AIMessage("", tool_calls=[{"name": "get_weather", "args": {}, "id": "c1"}]),
        messages.HumanMessage("are you there?"),
        messages.ToolMessage("RESULT: 21 C", tool_call_id="c1"),
        messages.AIMessage("It is 21 C."),
        messages.HumanMessage("And tomorrow?"),
    ]
    upstream = messages.trim_messages(
        history,
        max_tokens=5,
        token_counter=len,
        strategy="last",
        start_on="human",
        include_system=True,
    )
    assert "orphan_result" in pairing_problems(upstream)
    for max_messages in range(2, len(history) + 1):
        kept = toolmend.trim(history, max_messages=max_messages, keep_first=1)
        assert toolmend.check(kept) == []
        if max_messages >= 6:
            assert history[4] in kept


# --- atomic_groups ----------------------------------------------------------------------------


def test_groups_cover_every_index_once_in_order() -> None:
    history = [
        system(),
        user(),
        calling(call("call_a"), call("call_b")),
        result("call_b"),
        result("call_a"),
        assistant(),
        user(),
    ]
    assert toolmend.atomic_groups(history) == [
        range(1),
        range(1, 2),
        range(2, 5),
        range(5, 6),
        range(6, 7),
    ]


def test_ids_reused_every_turn_are_matched_within_their_turn() -> None:
    history = [
        user(),
        calling(call("call_0")),
        result("call_0", "first"),
        assistant(),
        user(),
        calling(call("call_0")),
        result("call_0", "second"),
        assistant(),
    ]
    groups = toolmend.atomic_groups(history)
    assert range(1, 3) in groups
    assert range(5, 7) in groups


def test_orphans_stand_alone_and_duplicates_join_their_call() -> None:
    history = [
        user(),
        result("call_gone", "orphan"),
        calling(call("call_1")),
        result("call_1", "21 C"),
        result("call_1", "21 C"),  # a replayed copy
        assistant(),
    ]
    assert toolmend.atomic_groups(history) == [
        range(1),
        range(1, 2),
        range(2, 5),
        range(5, 6),
    ]


def test_a_caller_between_a_call_and_its_result_chains_the_groups() -> None:
    history = [
        user(),
        calling(call("call_1")),
        calling(call("call_2")),
        result("call_2"),
        result("call_1"),
        assistant(),
    ]
    assert toolmend.atomic_groups(history) == [range(1), range(1, 5), range(5, 6)]


def test_groups_work_for_responses_items() -> None:
    history = [
        {"role": "user", "content": "list and locate"},
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "pwd", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "a.txt"},
        {"type": "function_call_output", "call_id": "c2", "output": "/home"},
        {"role": "assistant", "content": "done"},
    ]
    assert toolmend.atomic_groups(history) == [range(1), range(1, 5), range(5, 6)]
    for max_messages in range(1, 7):
        kept = toolmend.trim(history, max_messages=max_messages)
        assert pairing_problems(kept, "openai-responses") == []
        assert len(kept) == (1 if max_messages < 5 else max_messages)


# --- align_cut: seed 001 ----------------------------------------------------------------------


def seed001_history() -> list[Message]:
    """Seed 001's scenario: a long agent session (30+ messages) with several tool rounds,
    parallel calls and a failed call, as the async-context-compression filter saw it."""
    history: list[Message] = [
        system("You are a coding agent."),
        user("Set the project up and make the tests pass."),
        calling(call("call_r1", "read_file", path="setup.py"), call("call_r2", "read_file")),
        result("call_r2", "README contents"),
        result("call_r1", "setup.py contents"),
        assistant("I read both files."),
        calling(call("call_i1", "run_shell", cmd="pip install -e .")),
        result("call_i1", "Successfully installed project"),
        calling(call("call_t1", "run_shell", cmd="pytest")),
        result("call_t1", "Error: exit code 1, 2 failed"),  # the failed call
        assistant("Two tests fail; looking into them."),
        user("Which ones?"),
        assistant("test_parse and test_dump."),
        calling(call("call_e1", "edit_file", path="parse.py")),
        result("call_e1", "edited"),
        calling(call("call_t2", "run_shell", cmd="pytest")),
        result("call_t2", "Error: exit code 1, 1 failed"),
        calling(call("call_e2", "edit_file", path="dump.py"), call("call_e3", "edit_file")),
        result("call_e2", "edited"),
        result("call_e3", "edited"),
        calling(call("call_t3", "run_shell", cmd="pytest")),
        result("call_t3", "5 passed"),
        assistant("All tests pass now."),
        user("Commit it."),
        calling(call("call_g1", "run_shell", cmd="git add -A"), text="Committing."),
        result("call_g1", ""),
        calling(call("call_g2", "run_shell", cmd="git commit -m fix")),
        result("call_g2", "[main 1a2b3c] fix"),
        assistant("Committed as 1a2b3c."),
        user("Thanks. Is index.html committed too?"),
        calling(call("call_s1", "run_shell", cmd="git status")),
        result("call_s1", "nothing to commit"),
        assistant("Yes, the tree is clean."),
    ]
    assert len(history) > 30 and toolmend.check(history) == []
    return history


@pytest.mark.parametrize("keep_first", [0, 1, 2, 3])
def test_seed001_tail_start_is_aligned_for_every_keep_last(keep_first: int) -> None:
    history = seed001_history()
    naive_failures = 0
    for keep_last in range(1, len(history) + 1):
        raw_start = max(len(history) - keep_last, keep_first)
        start = toolmend.align_cut(history, raw_start, keep_first=keep_first)
        assert keep_first <= start <= raw_start
        assert start == keep_first or start in boundaries(history)
        tail = history[:keep_first] + history[start:]
        assert toolmend.check(tail) == [], (keep_last, start)
        naive_failures += bool(toolmend.check(history[:keep_first] + history[raw_start:]))
    assert naive_failures > 0, "the scenario must contain cuts that split a group"


@pytest.mark.parametrize("keep_last", range(1, 34))
def test_seed001_summary_progress_is_aligned(keep_last: int) -> None:
    """Seed 001: what a summariser may fold ends on a group boundary too."""
    history = seed001_history()
    keep_first = 2
    target = toolmend.align_cut(history, max(0, len(history) - keep_last), keep_first=keep_first)
    summary = user("Summary of the conversation so far: ...")
    sent = [*history[:keep_first], summary, *history[target:]]
    assert toolmend.check(sent) == []


def test_align_cut_edges() -> None:
    history = seed001_history()
    assert toolmend.align_cut(history, 0) == 0
    assert toolmend.align_cut(history, 1, keep_first=5) == 5
    assert toolmend.align_cut(history, 999) == len(history)
    assert toolmend.align_cut(history, 4) == 2  # a result of the parallel call at 2
    assert toolmend.align_cut(history, 4, keep_first=3) == 3  # no boundary in (3, 4]: fold nothing
    assert toolmend.align_cut(history, 20, keep_first=3) == 3  # 3 splits a group: fold nothing
    assert toolmend.align_cut(history, 20, keep_first=5) == 20
    with pytest.raises(toolmend.TrimError):
        toolmend.align_cut(history, -1)
    with pytest.raises(ValueError, match="keep_first"):
        toolmend.align_cut(history, 2, keep_first=-1)


@pytest.mark.parametrize("keep_first", [0, 1, 2, 3, 4])
def test_seed001_trim_every_size(keep_first: int) -> None:
    history = seed001_history()
    before = copy.deepcopy(history)
    for max_messages in range(1, len(history) + 1):
        try:
            kept = toolmend.trim(history, max_messages=max_messages, keep_first=keep_first)
        except toolmend.TrimError:
            prefix = first_boundary_at_or_after(history, keep_first)
            newest = toolmend.atomic_groups(history)[-1]
            assert prefix + len(newest) > max_messages
            continue
        assert toolmend.check(kept) == []
        assert len(kept) <= max_messages
        assert kept[:keep_first] == history[:keep_first]
    assert history == before


# --- trim -------------------------------------------------------------------------------------


def test_nothing_cut_returns_the_input_itself() -> None:
    history = seed001_history()
    assert toolmend.trim(history) is history
    assert toolmend.trim(history, max_messages=len(history)) is history
    assert toolmend.trim(history, max_tokens=10**9) is history
    assert toolmend.trim([]) == []


def test_a_cut_returns_a_new_list_sharing_the_kept_messages() -> None:
    history = seed001_history()
    kept = toolmend.trim(history, max_messages=10, keep_first=2)
    assert kept is not history
    assert all(any(m is original for original in history) for m in kept)


def test_the_prefix_grows_to_the_end_of_a_group_it_ends_in() -> None:
    history = seed001_history()
    kept = toolmend.trim(history, max_messages=8, keep_first=3)  # 3 ends inside [2, 5)
    assert kept[:5] == history[:5]
    assert toolmend.check(kept) == []


def test_errors_when_even_the_newest_group_cannot_fit() -> None:
    history = [user(), calling(call("call_1"), call("call_2")), result("call_1"), result("call_2")]
    with pytest.raises(toolmend.TrimError, match="newest message") as caught:
        toolmend.trim(history, max_messages=2)
    assert isinstance(caught.value, ValueError)
    assert "21 C" not in str(caught.value)
    with pytest.raises(toolmend.TrimError, match="protected prefix"):
        toolmend.trim(history, max_messages=1, keep_first=2)
    with pytest.raises(toolmend.TrimError, match="max_tokens=10"):
        toolmend.trim([user("x" * 400)], max_tokens=10)


@pytest.mark.parametrize(
    "options",
    [{"max_messages": -1}, {"max_tokens": 1.5}, {"keep_first": True}, {"max_messages": "3"}],
)
def test_bad_limits_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(toolmend.TrimError):
        toolmend.trim([user()], **options)


def test_token_limit_with_the_default_estimate() -> None:
    history = seed001_history()
    for max_tokens in range(0, tokens(history) + 20, 7):
        try:
            kept = toolmend.trim(history, max_tokens=max_tokens, keep_first=2)
        except toolmend.TrimError:
            continue
        assert tokens(kept) <= max_tokens
        assert toolmend.check(kept) == []


def test_token_counter_callable() -> None:
    history = seed001_history()
    kept = toolmend.trim(history, max_tokens=5, token_counter=lambda message: 1)
    assert len(kept) <= 5 and toolmend.check(kept) == []


def test_token_counter_litellm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import
    litellm = pytest.importorskip("litellm")
    history = seed001_history()
    kept = toolmend.trim(history, max_tokens=300, token_counter="litellm", keep_first=1)
    counted = sum(litellm.token_counter(messages=[m]) for m in kept)
    assert counted <= 300 and toolmend.check(kept) == []
    assert toolmend.trim(history, max_tokens=300, token_counter="litellm:gpt-4o", keep_first=1)


def test_token_counter_tiktoken(monkeypatch: pytest.MonkeyPatch) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    litellm_spec = importlib.util.find_spec("litellm")
    if litellm_spec is None or litellm_spec.origin is None:
        pytest.skip("no offline tiktoken files (litellm bundles them)")
    bundled = Path(litellm_spec.origin).parent / "litellm_core_utils" / "tokenizers"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(bundled))  # no network in tests
    history = seed001_history()
    kept = toolmend.trim(history, max_tokens=300, token_counter="tiktoken:cl100k_base")
    encoding = tiktoken.get_encoding("cl100k_base")
    content_only = sum(len(encoding.encode(m["content"] or "")) for m in kept)
    assert content_only <= 300  # a lower bound of what was counted
    assert toolmend.check(kept) == []


def test_token_counter_names() -> None:
    with pytest.raises(toolmend.UnknownNameError, match="Did you mean 'tiktoken'"):
        toolmend.trim([user()], max_tokens=5, token_counter="tiktokn")


def test_a_missing_tokenizer_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # import tiktoken now raises
    with pytest.raises(ImportError, match=r"pip install 'toolmend\[tiktoken\]'"):
        toolmend.trim([user()], max_tokens=5, token_counter="tiktoken")


def test_a_damaged_history_is_mended_before_it_is_cut() -> None:
    history = [
        system(),
        user("first task"),
        calling(call("call_1")),
        user("are you there?"),
        result("call_1", "RESULT"),
        calling(call("call_2")),  # never answered
        assistant("done"),
        result("call_gone", "orphan"),
        user("next"),
    ]
    before = copy.deepcopy(history)
    mended = toolmend.trim(history)
    assert toolmend.check(mended) == []
    assert history == before
    for max_messages in range(3, len(mended) + 1):
        kept = toolmend.trim(history, max_messages=max_messages, keep_first=2)
        assert kept[:2] == history[:2]
        assert pairing_problems(kept) == [] and len(kept) <= max_messages


def test_a_prefix_that_is_mended_keeps_what_it_held() -> None:
    history = [
        system(),
        calling(call("call_1")),
        user("the original task, typed while the tool ran"),
        result("call_1", "RESULT"),
        assistant("a"),
        user("b"),
        assistant("c"),
        user("d"),
    ]
    kept = toolmend.trim(history, max_messages=6, keep_first=3)
    assert kept[:4] == [history[0], history[1], history[3], history[2]]
    assert toolmend.check(kept) == []


# --- property tests ---------------------------------------------------------------------------

limits = st.fixed_dictionaries(
    {},
    optional={
        "max_messages": st.integers(min_value=0, max_value=45),
        "max_tokens": st.integers(min_value=0, max_value=900),
    },
)


def _assert_trimmed(
    full: list[Any], kept: list[Any], options: dict[str, Any], keep: int, *, same: bool = True
) -> None:
    """``kept`` is the prefix of ``full`` (grown to a boundary) plus a tail of whole groups,
    within the limits, and as long as the limits allow. ``same``: the very same objects."""

    def match(a: Any, b: Any) -> bool:
        return a is b if same else bool(a == b)

    assert pairing_problems(kept) == []
    if "max_messages" in options:
        assert len(kept) <= options["max_messages"]
    if "max_tokens" in options:
        assert tokens(kept) <= options["max_tokens"]
    prefix = first_boundary_at_or_after(full, keep) if keep else 0
    assert len(kept) >= prefix
    assert all(match(a, b) for a, b in zip(kept[:prefix], full[:prefix], strict=True))
    start = len(full) - (len(kept) - prefix)
    assert start in boundaries(full) and start >= prefix
    assert all(match(a, b) for a, b in zip(kept[prefix:], full[start:], strict=True))
    if start > prefix:  # the next older group would not have fit
        older = max(b for b in boundaries(full) if b < start)
        bigger = full[:prefix] + full[max(older, prefix) :]
        too_many = len(bigger) > options.get("max_messages", len(bigger))
        too_long = tokens(bigger) > options.get("max_tokens", tokens(bigger))
        assert too_many or too_long


def _assert_refusal_was_needed(full: list[Any], options: dict[str, Any], keep: int) -> None:
    prefix = first_boundary_at_or_after(full, keep) if keep else 0
    newest = toolmend.atomic_groups(full)[-1]
    smallest = full[:prefix] + (full[newest.start :] if newest.start >= prefix else [])
    too_many = len(smallest) > options.get("max_messages", len(smallest))
    too_long = tokens(smallest) > options.get("max_tokens", tokens(smallest))
    assert too_many or too_long


@given(
    history=valid_conversations(id_style="any"),
    options=limits,
    keep_first=st.integers(min_value=0, max_value=6),
)
def test_trim_of_valid_histories(
    history: list[Any], options: dict[str, Any], keep_first: int
) -> None:
    before = copy.deepcopy(history)
    try:
        kept = toolmend.trim(history, keep_first=keep_first, **options)
    except toolmend.TrimError:
        _assert_refusal_was_needed(history, options, min(keep_first, len(history)))
        return
    assert history == before
    assert toolmend.check(kept) == []
    _assert_trimmed(history, kept, options, min(keep_first, len(history)))


@given(
    case=damaged_conversations(id_style="any"),
    options=limits,
    keep_first=st.integers(min_value=0, max_value=6),
)
def test_trim_of_damaged_histories(case: Any, options: dict[str, Any], keep_first: int) -> None:
    _, damaged, _ = case
    before = copy.deepcopy(damaged)
    mended = toolmend.trim(damaged)
    assert pairing_problems(mended) == []
    keep = min(keep_first, len(damaged))
    # what the protected prefix held: its user and assistant texts survive mending and trimming
    protected = content_strings([m for m in damaged[:keep] if m.get("role") != "tool"])
    full_prefix = _mended_prefix_length(damaged, keep)
    try:
        kept = toolmend.trim(damaged, keep_first=keep_first, **options)
    except toolmend.TrimError:
        _assert_refusal_was_needed(mended, options, full_prefix)
        return
    assert damaged == before
    assert protected <= content_strings(kept)
    _assert_trimmed(mended, kept, options, full_prefix, same=False)


def _mended_prefix_length(damaged: list[Any], keep: int) -> int:
    """Where the prefix ends in the mended history, as ``trim(..., keep_first=keep)`` sees it."""
    _, position = trim_module._mend(
        toolmend._api.format_of(damaged), damaged, trim_module._pairing_profile("openai"), keep
    )
    return int(position)


# --- merge_consecutive: seed 002 --------------------------------------------------------------


def tool_use(use_id: str, name: str = "git_status") -> Message:
    return {"type": "tool_use", "id": use_id, "name": name, "input": {}}


def tool_result(use_id: str, text: str = "clean") -> Message:
    return {"type": "tool_result", "tool_use_id": use_id, "content": text}


def anthropic(role: str, *blocks: Message | str) -> Message:
    if len(blocks) == 1 and isinstance(blocks[0], str):
        return {"role": role, "content": blocks[0]}
    return {"role": role, "content": list(blocks)}


SEED002_ANTHROPIC = {
    "standard flow": [
        anthropic("user", "Is index.html committed?"),
        anthropic("assistant", tool_use("t1")),
        anthropic("user", tool_result("t1")),
    ],
    "multi-round": [
        anthropic("user", "Is index.html committed?"),
        anthropic("assistant", tool_use("t1", "git_diff")),
        anthropic("user", tool_result("t1", "no diff")),
        anthropic("assistant", tool_use("t2", "git_log")),
        anthropic("user", tool_result("t2", "1a2b3c fix")),
    ],
    "consecutive user messages with tool_result": [
        anthropic("user", "M: check the file"),
        anthropic("assistant", tool_use("t1")),
        anthropic("user", tool_result("t1")),
        anthropic("user", "the user's follow-up question"),
        anthropic("assistant", "It is committed."),
    ],
}


@pytest.mark.parametrize("case", list(SEED002_ANTHROPIC))
def test_seed002_anthropic_cases(case: str) -> None:
    history = SEED002_ANTHROPIC[case]
    before = copy.deepcopy(history)
    merged = toolmend.merge_consecutive(history, format="anthropic")
    assert history == before
    roles = [m["role"] for m in merged]
    assert all(a != b for a, b in itertools.pairwise(roles)), "strict alternation"
    blocks = [b for m in merged if isinstance(m["content"], list) for b in m["content"]]
    results = [b for b in blocks if b["type"] == "tool_result"]
    assert len(results) == sum(
        1
        for m in history
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    )
    if case == "consecutive user messages with tool_result":
        assert len(merged) == 4
        assert merged[2]["content"] == [
            tool_result("t1"),
            {"type": "text", "text": "the user's follow-up question"},
        ]
    else:
        assert merged is history  # already alternating: nothing to do


def test_seed002_results_of_every_merged_message_are_kept_first() -> None:
    """The converter bug itself: only the first message's tool results survived the merge."""
    history = [
        anthropic("user", "Check index.html"),
        anthropic("assistant", tool_use("t1", "git_diff"), tool_use("t2", "git_status")),
        anthropic("user", tool_result("t1", "no diff")),
        anthropic("user", tool_result("t2", "clean")),
        anthropic("user", "and is it pushed?"),
    ]
    merged = toolmend.merge_consecutive(history)  # detected as Anthropic-shaped
    assert len(merged) == 3
    assert merged[2]["content"] == [
        tool_result("t1", "no diff"),
        tool_result("t2", "clean"),
        {"type": "text", "text": "and is it pushed?"},
    ]
    assert merged[:2] == history[:2] and merged[0] is history[0]


def test_anthropic_assistant_runs_put_calls_last() -> None:
    history = [
        anthropic("user", "go"),
        anthropic("assistant", tool_use("t1")),
        anthropic("assistant", "Let me check."),
        anthropic("user", tool_result("t1")),
    ]
    merged = toolmend.merge_consecutive(history, format="anthropic")
    assert [b["type"] for b in merged[1]["content"]] == ["text", "tool_use"]


def test_seed002_anthropic_cases_pass_the_anthropic_profile() -> None:
    require_format("anthropic")
    for history in SEED002_ANTHROPIC.values():
        merged = toolmend.merge_consecutive(history, format="anthropic")
        assert toolmend.check(merged, provider="anthropic", format="anthropic") == []


SEED002_OPENAI = {
    "standard flow": [user("Is it committed?"), calling(call("c1")), result("c1")],
    "multi-round": [
        user("Is it committed?"),
        calling(call("c1", "git_diff")),
        result("c1"),
        calling(call("c2", "git_log")),
        result("c2"),
    ],
    "consecutive user messages with tool_result": [
        user("M: check the file"),
        calling(call("c1")),
        result("c1"),
        user("the user's follow-up question"),
        assistant("It is committed."),
    ],
}


@pytest.mark.parametrize("case", list(SEED002_OPENAI))
def test_seed002_openai_cases_keep_every_tool_message(case: str) -> None:
    history = SEED002_OPENAI[case]
    assert toolmend.merge_consecutive(history) is history  # tool messages are never merged


def test_openai_runs_are_joined_and_tool_messages_never_merged() -> None:
    history = [
        system("a"),
        system("b"),
        user("one"),
        user([{"type": "image_url", "image_url": {"url": "data:,"}}]),
        calling(call("c1"), text="thinking aloud"),
        calling(call("c2")),
        result("c1", "r1"),
        result("c2", "r2"),
        assistant("x", reasoning_content="why"),
        assistant("y"),
    ]
    merged = toolmend.merge_consecutive(history)
    assert [m["role"] for m in merged] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    assert merged[0]["content"] == "a\n\nb"
    assert merged[1]["content"] == [
        {"type": "text", "text": "one"},
        {"type": "image_url", "image_url": {"url": "data:,"}},
    ]
    assert [c["id"] for c in merged[2]["tool_calls"]] == ["c1", "c2"]
    assert merged[3] is history[6] and merged[4] is history[7]
    assert merged[5] == {"role": "assistant", "content": "x\n\ny", "reasoning_content": "why"}
    assert toolmend.check(merged) == []


def test_bedrock_and_gemini_shapes() -> None:
    bedrock = [
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "ls"}}]},
        {"role": "user", "content": [{"text": "hurry"}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": []}}]},
    ]
    merged = toolmend.merge_consecutive(bedrock, format="bedrock")
    assert [next(iter(b)) for b in merged[1]["content"]] == ["toolResult", "text"]
    gemini = [
        {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}}]},
        {"role": "user", "parts": [{"text": "hurry"}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {}}}]},
    ]
    merged = toolmend.merge_consecutive(gemini)
    assert [next(iter(p)) for p in merged[1]["parts"]] == ["functionResponse", "text"]


def test_merge_refuses_a_format_it_does_not_handle() -> None:
    history = [{"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"}]
    with pytest.raises(toolmend.InvalidHistoryError, match="does not handle"):
        toolmend.merge_consecutive(history, format="openai-responses")


# --- other formats ---------------------------------------------------------------------------


def to_anthropic(history: list[Message]) -> list[Message]:
    """An OpenAI chat history as Anthropic Messages dicts (one user message per result, which
    the API merges into one turn)."""
    out: list[Message] = []
    for message in history:
        role, content = message["role"], message.get("content")
        if role == "tool":
            if message.get("tool_call_id"):
                out.append(anthropic("user", tool_result(message["tool_call_id"], content)))
        elif role == "assistant" and message.get("tool_calls"):
            blocks: list[Message] = [{"type": "text", "text": content}] if content else []
            for item in message["tool_calls"]:
                name, arguments = _function(item)
                blocks.append(
                    {"type": "tool_use", "id": item["id"], "name": name, "input": arguments}
                )
            out.append({"role": "assistant", "content": blocks})
        elif role in ("user", "assistant") and content:
            out.append({"role": role, "content": content})
    return out


def _function(item: Message) -> tuple[str, Any]:
    """Name and arguments of an OpenAI tool call, also in the shapes the damage ops leave."""
    function = item.get("function") or item
    arguments = function.get("arguments")
    return function["name"], json.loads(arguments) if isinstance(arguments, str) else arguments


def to_gemini(history: list[Message]) -> list[Message]:
    """An OpenAI chat history as Gemini contents dicts (one Content holds a round's
    responses)."""
    out: list[Message] = []
    names: dict[str, str] = {}
    for message in history:
        role, content = message["role"], message.get("content")
        if role == "tool":
            call_id = message.get("tool_call_id")
            part = {
                "functionResponse": {
                    "id": call_id,
                    "name": names.get(call_id or "", "unknown"),
                    "response": {"result": content},
                }
            }
            if out and out[-1]["role"] == "user" and "functionResponse" in out[-1]["parts"][0]:
                out[-1]["parts"].append(part)
            else:
                out.append({"role": "user", "parts": [part]})
        elif role == "assistant":
            parts: list[Message] = [{"text": content}] if content else []
            for item in message.get("tool_calls") or ():
                name, arguments = _function(item)
                names[item["id"]] = name
                parts.append({"functionCall": {"id": item["id"], "name": name, "args": arguments}})
            if parts:
                out.append({"role": "model", "parts": parts})
        elif role == "user":
            out.append({"role": "user", "parts": [{"text": content}]})
    return out


def to_responses(history: list[Message]) -> list[Message]:
    """An OpenAI chat history as Responses ``input`` items (one item per call and result)."""
    out: list[Message] = []
    for message in history:
        role, content = message["role"], message.get("content")
        if role == "tool":
            if message.get("tool_call_id"):
                out.append(
                    {
                        "type": "function_call_output",
                        "call_id": message["tool_call_id"],
                        "output": content,
                    }
                )
            continue
        if content:
            out.append({"role": role, "content": content})
        for item in message.get("tool_calls") or ():
            name, arguments = _function(item)
            out.append(
                {
                    "type": "function_call",
                    "call_id": item["id"],
                    "name": name,
                    "arguments": json.dumps(arguments),
                }
            )
    return out


CONVERTERS = {"anthropic": to_anthropic, "gemini": to_gemini, "openai-responses": to_responses}


def test_interleaved_user_message_in_anthropic_shape() -> None:
    require_format("anthropic")
    history = to_anthropic(INTERLEAVED)
    assert toolmend.atomic_groups(history) == [range(1), range(1, 4), range(4, 5)]
    for max_messages in range(1, len(history) + 1):
        kept = toolmend.trim(history, max_messages=max_messages)
        assert toolmend.check(kept, provider="anthropic") == []
        if max_messages >= 4:
            assert history[3] in kept  # the real result, next to its call
            position = kept.index(history[3])
            assert kept[position - 1] is history[1]


@pytest.mark.parametrize("name", list(CONVERTERS))
@given(
    history=valid_conversations(id_style="openai"),
    options=limits,
    keep_first=st.integers(min_value=0, max_value=6),
)
def test_trim_of_valid_histories_in_other_formats(
    name: str, history: list[Any], options: dict[str, Any], keep_first: int
) -> None:
    require_format(name)
    native = CONVERTERS[name](history)
    assert toolmend.check(native, provider=name, format=name) == []
    try:
        kept = toolmend.trim(native, keep_first=keep_first, format=name, **options)
    except toolmend.TrimError:
        return
    assert toolmend.check(kept, provider=name, format=name) == []
    if "max_messages" in options:
        assert len(kept) <= options["max_messages"]
    if "max_tokens" in options:
        assert tokens(kept) <= options["max_tokens"]
    keep = min(keep_first, len(native))
    assert all(a is b for a, b in zip(kept[:keep], native[:keep], strict=True))
    starts = {g.start for g in toolmend.atomic_groups(native, format=name)} | {len(native)}
    tail = len(kept) - next(p for p in sorted(starts) if p >= keep)
    assert len(native) - tail in starts
    kept_tail, native_tail = kept[len(kept) - tail :], native[len(native) - tail :]
    assert all(a is b for a, b in zip(kept_tail, native_tail, strict=True))


@pytest.mark.parametrize("name", list(CONVERTERS))
@given(
    case=damaged_conversations(id_style="openai"),
    options=limits,
    keep_first=st.integers(min_value=0, max_value=6),
)
def test_trim_of_damaged_histories_in_other_formats(
    name: str, case: Any, options: dict[str, Any], keep_first: int
) -> None:
    require_format(name)
    _, damaged, _ = case
    native = CONVERTERS[name](damaged)
    if not native:
        return
    before = copy.deepcopy(native)
    try:
        kept = toolmend.trim(native, keep_first=keep_first, format=name, **options)
    except toolmend.TrimError:
        return
    assert native == before
    assert pairing_problems(kept, name) == []
    if "max_messages" in options:
        assert len(kept) <= options["max_messages"]


def _trim_with_window(window: int, history: list[Any], **options: Any) -> Any:
    """What ``trim`` returns (or the TrimError it raises) when its search for the prefix's end
    reads ``window`` messages at first; with a huge window it also reads everything to find
    the cut (no shortcut for adjacent results, no one-pass ``group_spans``), the reference."""
    saved = trim_module._WINDOW, trim_module._SHORTCUTS
    trim_module._WINDOW = window
    if window > 1 << 20:
        trim_module._SHORTCUTS = False
    try:
        return toolmend.trim(history, **options)
    except toolmend.TrimError as error:
        return type(error)
    finally:
        trim_module._WINDOW, trim_module._SHORTCUTS = saved


def test_no_cut_inside_a_call_turn_split_over_two_messages() -> None:
    """Anthropic merges consecutive assistant messages into one turn, so the calls of the first
    are answered after the second: the message between is no boundary, although it carries no
    result, for the prefix's end and for the cut. (A shortcut for the prefix that took the next
    message without a result kept the first call and cut its result; the cut, shortcut and
    reference alike, started the tail at the second message and left the first call's result
    an orphan, which the final check refused with "please report". The converters of the
    property tests never split a turn, so hypothesis saw neither.)"""
    use = {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}
    answer = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "21 C"}
    history = [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"role": "assistant", "content": [use]},
        {"role": "assistant", "content": [{**use, "id": "toolu_2"}]},
        {"role": "user", "content": [answer, {**answer, "tool_use_id": "toolu_2"}]},
        {"role": "assistant", "content": "21 C in both."},
        {"role": "user", "content": "Thanks."},
        {"role": "assistant", "content": "You are welcome."},
    ]
    assert toolmend.check(history, provider="anthropic") == []
    options: dict[str, Any] = {"keep_first": 2, "format": "anthropic"}
    kept = toolmend.trim(history, max_messages=5, **options)
    assert kept == [*history[:4], history[6]]
    with pytest.raises(toolmend.TrimError, match="protected prefix"):
        toolmend.trim(history, max_messages=3, **options)
    assert toolmend.trim(history, max_messages=5, format="anthropic") == history[4:]
    assert toolmend.trim(history, max_messages=6, format="anthropic") == history[1:]
    for keep_first in (0, 2):
        for limit in (3, 4, 5, 6):
            both = {**options, "keep_first": keep_first, "max_messages": limit}
            whole = _trim_with_window(1 << 30, history, **both)
            assert _trim_with_window(1, history, **both) == whole


def test_an_unanswered_call_turn_holds_no_later_message_to_it() -> None:
    """A call turn written as two assistant messages whose call nothing answers (a damaged
    history: the result was lost) does not bind its second message to it: the newest message
    may be kept alone, as reading everything finds. (Hypothesis found this: the shortcut took
    every call before the newest message as waiting and raised TrimError where the whole read
    kept the newest message.)"""
    use = {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}
    history = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": [{**use, "id": "toolu_0"}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_0", "content": "21 C"}],
        },
        {"role": "assistant", "content": "21 C. " + "It is mild. " * 20},
        {"role": "user", "content": "And Rome?"},
        {"role": "assistant", "content": [{**use, "input": {"city": "Rome " * 40}}]},
        {"role": "assistant", "content": "Checking."},
    ]
    both: dict[str, Any] = {"format": "anthropic", "keep_first": 3, "max_tokens": 60}
    whole = _trim_with_window(1 << 30, history, **both)
    assert whole == [*history[:3], history[6]]
    assert _trim_with_window(1, history, **both) == whole
    # answered after the second message, the turn is one group again: no cut between
    answered = [
        *history,
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "19 C"}],
        },
    ]
    assert _trim_with_window(1, answered, **both) == _trim_with_window(1 << 30, answered, **both)


def test_a_gemini_response_that_names_another_function_stays_with_its_call() -> None:
    """Gemini pairs a turn's responses with its calls by position: a response without an id
    named ``unknown`` answers the call before it, as the judge reads it (its name is a
    separate rule), though the pairing engine gives it no call. The cut must not fall between
    them, and the windowed search cuts where reading everything does. (Hypothesis found it,
    ``drop_result_id``: the reading from the cut took the response for one whose call lay
    before the window and passed it, dropping the call; ``align_cut`` put a cut between.)"""
    history = to_gemini(
        [
            user("user 1"),
            assistant("assistant 2"),
            user("user 3"),
            calling(call("call_0")),
            {"role": "tool", "content": "result 4"},
            assistant("assistant 5"),
        ]
    )
    assert history[4]["parts"][0]["functionResponse"]["name"] == "unknown"
    assert toolmend.atomic_groups(history, format="gemini")[3] == range(3, 5)
    assert toolmend.align_cut(history, 4, format="gemini") == 3
    both: dict[str, Any] = {"format": "gemini", "max_tokens": tokens(history[2:])}
    assert _trim_with_window(1 << 30, history, **both) == history[2:]
    assert _trim_with_window(1, history, **both) == history[2:]


def test_a_second_responses_output_stays_with_its_call() -> None:
    """Responses pairs outputs with calls by id alone: a second output for an answered call,
    different from the first, lies anywhere after it, and a tail that keeps it must keep the
    call (``group_spans`` ties them; the pairing engine calls it an orphan). Hypothesis found
    it (``duplicate_result`` and ``merge_results``): the reading from the cut took that output
    for one whose call lay before the window and cut after it, where ``group_spans`` and the
    whole read kept everything from the call on; ``align_cut`` cut between them."""
    history = to_responses(
        [
            user("user 1"),
            calling(call("call_a")),
            result("call_a", "result 2"),
            calling(call("call_b"), call("call_c")),
            result("call_b", "result 3\nresult 4"),
            assistant("assistant 5"),
            user("user 6"),
            assistant("assistant 7"),
            result("call_b", "result 3"),
            user("user 8"),
        ]
    )
    # the tail from call_b on fits (with the placeholder that answers call_c), no more
    both: dict[str, Any] = {"format": "openai-responses", "max_tokens": 110}
    whole = _trim_with_window(1 << 30, history, **both)
    assert len(whole) == 9
    assert whole[0] is history[3]
    assert whole[-5:] == history[-5:]
    assert _trim_with_window(1, history, **both) == whole
    assert toolmend.align_cut(history, 9, format="openai-responses") == 3
    outputs = [item for item in history if item.get("type") == "function_call_output"]
    assert [o["output"] for o in outputs if o["call_id"] == "call_b"] == [
        "result 3\nresult 4",
        "result 3",
    ]


def _split_call_turns(history: list[Any]) -> list[Any]:
    """The Anthropic ``history`` with each assistant message that makes two or more calls
    split before its last call: the API merges the two back into one turn."""
    split: list[Any] = []
    for message in history:
        content = message.get("content")
        calls = [
            position
            for position, block in enumerate(content if isinstance(content, list) else ())
            if isinstance(block, dict) and block.get("type") == "tool_use"
        ]
        if message.get("role") != "assistant" or len(calls) < 2:
            split.append(message)
            continue
        split.append({**message, "content": content[: calls[-1]]})
        split.append({**message, "content": content[calls[-1] :]})
    return split


@pytest.mark.parametrize("name", ["openai", *CONVERTERS, "bedrock", "anthropic split"])
@given(
    case=damaged_conversations(id_style="openai"),
    valid=st.booleans(),
    options=limits,
    keep_first=st.integers(min_value=0, max_value=6),
)
def test_windowed_boundary_search_finds_the_same_cut_as_reading_everything(
    name: str, case: Any, valid: bool, options: dict[str, Any], keep_first: int
) -> None:
    """The search for the end of the protected prefix reads a window that doubles until it
    shows a boundary, and the cut where results follow their calls looks only for the next
    message that is not a result (Gemini and Bedrock also step through the later boundaries one
    by one for their rules on how a tail starts); Responses takes its groups from one pass
    (``group_spans``). All must cut exactly where reading the whole history does. (A window
    from the cut onwards is not safe for Responses: a turn's outputs follow all its calls, so a
    cut between two calls has results of the earlier ones further on; hypothesis found that.)
    "anthropic split" writes each call turn with several calls as two assistant messages, one
    turn to the API: neither search may cut between them."""
    original, damaged, _ = case
    history = original if valid else damaged
    if name == "bedrock":
        native = block_histories.convert(history, "bedrock")
    elif name == "anthropic split":  # call turns written as two assistant messages
        native, name = _split_call_turns(to_anthropic(history)), "anthropic"
    else:
        native = history if name == "openai" else CONVERTERS[name](history)
    if not native:
        return
    options = {**options, "keep_first": keep_first, "format": name}
    small = _trim_with_window(1, native, **options)
    whole = _trim_with_window(1 << 30, native, **options)
    assert small == whole


# --- TOOLMEND_DEBUG ---------------------------------------------------------------------------


def test_debug_logs_the_structure_before_and_after_without_content(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(toolmend._api, "_DEBUG", True)
    secret = "SECRET-CONTENT"
    history = [
        user(f"{secret} question"),
        calling(call("call_1", "get_weather", city=secret), text=secret),
        user(f"{secret} interjection"),
        result("call_1", f"{secret} result"),
    ]
    with caplog.at_level(logging.DEBUG, logger="toolmend"):
        toolmend.repair(history)
        toolmend.trim(history, max_messages=3)
    lines = [r.getMessage() for r in caplog.records if r.name == "toolmend"]
    before = next(line for line in lines if line.startswith("toolmend before"))
    after = next(line for line in lines if line.startswith("toolmend after"))
    assert "openai, 4 messages (user 2, assistant 1, tool 1), 1 calls, 1 results" in before
    assert "1:assistant[get_weather:call_1] 2:user 3:tool[<call_1]" in before
    assert "1:assistant[get_weather:call_1] 2:tool[<call_1] 3:user" in after
    assert any(line.startswith("toolmend trim") for line in lines)
    assert all(secret not in line for line in lines)
    assert all(secret not in str(r.args) for r in caplog.records)


@pytest.mark.slow
def test_debug_is_switched_on_by_the_environment(tmp_path: Path) -> None:
    script = (
        "import logging, toolmend\n"
        "logging.basicConfig(level=logging.DEBUG, format='%(message)s')\n"
        "toolmend.repair([{'role': 'tool', 'tool_call_id': 'c9', 'content': 'x'},"
        " {'role': 'user', 'content': 'hi'}])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "TOOLMEND_DEBUG": "1"},
        cwd=tmp_path,
    )
    assert "toolmend before: openai, 2 messages" in done.stderr
    assert "0:tool[<c9]" in done.stderr


def test_merge_reads_sdk_objects() -> None:
    pytest.importorskip("openai")
    from openai.types.chat import ChatCompletionMessage

    first = ChatCompletionMessage(role="assistant", content="Let me look.")
    second = ChatCompletionMessage.model_validate(calling(call("c1")))
    history = [user("go"), first, second, result("c1")]
    merged = toolmend.merge_consecutive(history)
    assert merged[1]["content"] == "Let me look."
    assert [c["id"] for c in merged[1]["tool_calls"]] == ["c1"]
    assert toolmend.check(merged) == []


_RESPONSES_ITEMS = st.lists(
    st.one_of(
        st.sampled_from("abc").map(
            lambda i: {"type": "function_call", "call_id": i, "name": "f", "arguments": "{}"}
        ),
        st.tuples(st.sampled_from("abc"), st.sampled_from("xy")).map(
            lambda i: {"type": "function_call_output", "call_id": i[0], "output": i[1]}
        ),
        st.just({"role": "user", "content": "go on"}),
        st.just({"type": "message", "role": "assistant", "content": "ok"}),
    ),
    max_size=14,
)
"""Responses items from three call ids: reused ids, copied outputs, second outputs that differ
from the first, outputs far from their calls, outputs before them."""


_CALL_A = {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"}
_OUTPUT_A = {"type": "function_call_output", "call_id": "a", "output": "x"}


@example(items=[_CALL_A, _CALL_A, _OUTPUT_A, _OUTPUT_A])  # two calls wait on one id
@example(
    items=[_CALL_A, _OUTPUT_A, {"role": "user", "content": "go on"}, {**_OUTPUT_A, "output": "y"}]
)
@example(items=[_CALL_A, _CALL_A, _OUTPUT_A, _CALL_A, _OUTPUT_A, _OUTPUT_A])
@given(items=_RESPONSES_ITEMS)
def test_responses_group_spans_are_the_atomic_groups(items: list[Any]) -> None:
    """``trim`` finds its Responses boundaries with the one-pass ``group_spans``; wherever it
    answers, its ranges must be exactly the groups that reading and pairing give (reused ids
    and copied outputs included)."""
    module = importlib.import_module("toolmend.formats._openai_responses")
    spans = module.group_spans(items)
    if spans is None:
        assert any(
            item.get("type") == "function_call_output"
            and not any(earlier.get("call_id") == item["call_id"] for earlier in items[:position])
            for position, item in enumerate(items)
        ), "None only for an output with no call before it"
        return
    expected = [
        (group.start, group.stop)
        for group in toolmend.atomic_groups(items, format="openai-responses")
        if len(group) > 1
    ]
    assert spans == expected
