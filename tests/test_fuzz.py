"""The fuzz suite: random valid conversations, damaged every way seen in practice, through every
(format, profile) pair.

Each case (see :mod:`support.fuzz_cases`) holds a valid history and a damaged one: parallel calls,
several rounds, reasoning, Anthropic thinking blocks with signatures, Gemini thought signatures,
images; damaged by drop, duplicate, move, merge, split, re-id, rename, truncate and interleave,
plus each format's own breakages. Invariants, for every pair and policy:

* the repaired history passes the profile, and nothing is left over (unless the damage left
  nothing real to send, say one empty model turn: then an empty history, and that is said);
* repair is idempotent: the repaired history comes back as the very same object;
* a history the profile accepts comes back as the very same object, with no change reported
  (and the valid history of the format's own provider is accepted);
* the input is never mutated;
* every real content item (user text, assistant text, tool result text) of the damaged history
  is still in the output, or a change at its message (with its call id) says it was dropped
  (an orphan or duplicate result, a duplicate Responses item);
* nothing raises.

The pairs: the message formats (openai, openai-responses, langchain) go to every profile, the
block formats (anthropic, gemini, bedrock) to their own provider's profiles; Responses input is
not sent to DeepSeek's reasoner, Mistral or Gemini (``fuzz_cases.NOT_SENT`` says why).

CI runs a few dozen cases per pair (the default hypothesis profile); ``TOOLMEND_FUZZ=1`` runs
thousands per pair (``TOOLMEND_FUZZ_EXAMPLES=N`` sets the number). The case counts are printed
at the end of the run.
"""

from __future__ import annotations

import copy
import json
import os
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import BaseMessage

import toolmend

from support.fuzz_cases import RUNS, Case, cases, content_items, expected_valid, pairs

FUZZ = bool(os.environ.get("TOOLMEND_FUZZ"))
EXAMPLES = int(os.environ.get("TOOLMEND_FUZZ_EXAMPLES") or (2_000 if FUZZ else 100))
PER_PAIR = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None
)

POLICIES = [
    toolmend.Policy(),
    toolmend.Policy(orphan_result="text"),
    toolmend.Policy(missing_result="remove_call"),
]
DROPPING = {
    "result": frozenset(
        {"dropped_orphan_result", "dropped_duplicate_result", "dropped_duplicate_item"}
    ),
    "assistant": frozenset({"dropped_duplicate_item"}),
    "user": frozenset(),
}
"""Content kind -> the change codes that may drop an item of that kind (and must say so)."""

PAIRS = pairs()


@pytest.mark.parametrize(("format", "provider"), PAIRS, ids=[f"{f}->{p}" for f, p in PAIRS])
def test_fuzz(format: str, provider: str) -> None:
    @PER_PAIR
    @given(case=cases(format), policy=st.sampled_from(POLICIES))
    def run(case: Case, policy: toolmend.Policy) -> None:
        check_valid(case, provider)
        check_damaged(case, provider, policy)
        RUNS[(format, provider)] += 1

    run()


def check_valid(case: Case, provider: str) -> None:
    """A history the profile accepts is returned as it is; the format's own one is accepted."""
    before = _snapshot(case.valid)
    problems = toolmend.check(case.valid, provider=provider, format=case.format)
    if expected_valid(case, provider):
        assert problems == [], "the generator's valid history must pass its own provider"
    if not problems:
        result = toolmend.repair(case.valid, provider=provider, format=case.format)
        assert result.messages is case.valid
        assert result.changes == ()
    assert _snapshot(case.valid) == before, "the input was mutated"


def check_damaged(case: Case, provider: str, policy: toolmend.Policy) -> None:
    before = _snapshot(case.damaged)
    result = toolmend.repair(case.damaged, provider=provider, format=case.format, policy=policy)
    assert _snapshot(case.damaged) == before, "the input was mutated"
    left = toolmend.check(result.messages, provider=provider, format=case.format)
    if not content_items(result.messages, case.format):
        # nothing real to send (an empty model turn was all the damage left, or system messages
        # only where those go apart from the conversation): said, not hidden
        assert [problem.code for problem in left] in ([], ["empty_history"])
    else:
        assert left == []
    assert result.problems_left == tuple(left)
    again = toolmend.repair(result.messages, provider=provider, format=case.format, policy=policy)
    assert again.messages is result.messages, [str(c) for c in again.changes]
    if result.messages is case.damaged:
        assert result.changes == ()
    else:
        assert result.changes, "a changed history must report its changes"
    assert_content_kept_or_reported(case, result)


def assert_content_kept_or_reported(case: Case, result: toolmend.Repair) -> None:
    """Every content item of the input is in the output (anywhere: moved, merged, rendered as
    text), or a dropping change names its message index and call id."""
    strings = "\0".join(_strings(_plain(result.messages)))
    for item in content_items(case.damaged, case.format):
        if _present(item.text, strings):
            continue
        allowed = DROPPING[item.kind]
        reported = [
            change
            for change in result.changes
            if change.code in allowed
            and change.index == item.index
            and (not item.call_id or item.call_id in change.ids)
        ]
        assert reported, (
            f"{item} lost without a change saying so: {[str(c) for c in result.changes]}"
        )


def _present(text: str, strings: str) -> bool:
    """``text`` whole (not as the prefix of a longer generated text) in the output's strings,
    as it is or JSON-escaped (a result rendered as text inside JSON)."""
    for form in {text, json.dumps(text, ensure_ascii=False)[1:-1]}:
        if re.search(r"(?<![\w])" + re.escape(form) + r"(?![\w])", strings):
            return True
    return False


def _strings(value: Any) -> list[str]:
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return found


def _plain(history: Any) -> Any:
    if isinstance(history, list) and any(isinstance(m, BaseMessage) for m in history):
        return [m.model_dump() if isinstance(m, BaseMessage) else m for m in history]
    return history


def _snapshot(history: Any) -> Any:
    return copy.deepcopy(_plain(history))


# --- what the fuzzing found (the inputs that triggered each bug) -------------------------------


def test_gemini_empty_prompt_text_is_found_wherever_it_is() -> None:
    """The one-pass scan marked an empty user text before opening that user's range, so the
    damage was pinned on the range before it: ``check`` missed it (or reported an empty
    history at index 0) and ``sanitize`` sent the history unchanged."""
    later = [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"text": "a"}]},
        {"role": "user", "parts": [{"text": ""}]},
        {"role": "model", "parts": [{"text": "b"}]},
    ]
    first = [later[2], later[1], later[0], later[3]]
    for history, index in ((later, 2), (first, 0)):
        assert [(p.code, p.index) for p in toolmend.check(history, provider="gemini")] == [
            ("text_empty", index)
        ]
        fixed = toolmend.repair(history, provider="gemini")
        assert [c.code for c in fixed.changes] == ["dropped_empty_block", "dropped_empty_message"]
        assert toolmend.check(fixed.messages, provider="gemini") == []


def test_mistral_renames_a_role_it_does_not_know() -> None:
    """Mistral rules on role order only: a message of an unknown role could not be repaired
    (``role_order`` was left over); it is now sent as a user message, as for OpenAI."""
    history = [
        {"role": "user", "content": "q"},
        {"role": "wizard", "content": "x"},
        {"role": "assistant", "content": "a"},
    ]
    fixed = toolmend.repair(history, provider="mistral")
    assert [c.code for c in fixed.changes] == ["renamed_role", "marked_prefix"]
    assert fixed.messages[1] == {"role": "user", "content": "x"}
    assert fixed.problems_left == ()


def test_a_repair_that_changes_nothing_returns_the_input() -> None:
    """An empty history cannot be mended: the input itself comes back, with its problem."""
    empty: list[Any] = []
    result = toolmend.repair(empty, provider="gemini")
    assert result.messages is empty and result.changes == ()
    assert [p.code for p in result.problems_left] == ["empty_history"]


@pytest.mark.parametrize(("format", "provider"), [("anthropic", "gemini"), ("gemini", "bedrock")])
def test_a_block_format_is_judged_by_its_own_providers_only(format: str, provider: str) -> None:
    """An Anthropic history judged by Gemini's rules got repairs no request could use (names
    an Anthropic result cannot hold); such a pair is now refused like the OpenAI profiles'."""
    history = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    if format == "gemini":
        history = [{"role": "user", "parts": [{"text": "hi"}]}]
    with pytest.raises(toolmend.InvalidHistoryError, match=f"no rules for '{format}' histories"):
        toolmend.check(history, provider=provider, format=format)


def test_gemini_calls_sharing_an_id_are_paired_by_name() -> None:
    """Two rounds whose ids restart (``call_0``) merged into one Content: an id no longer names
    one call, so pairing by id reported a mismatch no repair could clear; such calls now pair
    by name, as calls without ids do."""
    call = {"name": "get_weather", "args": {}, "id": "call_0"}
    history = [
        {"role": "user", "parts": [{"text": "user 1"}]},
        {
            "role": "model",
            "parts": [{"function_call": call}, {"function_call": {**call, "name": "read_file"}}],
        },
        {
            "role": "user",
            "parts": [
                {"function_response": {"name": "read_file", "response": {}, "id": "call_0"}},
                {"function_response": {"name": "get_weather", "response": {}, "id": "call_0"}},
            ],
        },
        {"role": "model", "parts": [{"text": "assistant 4"}]},
    ]
    assert toolmend.check(history, provider="gemini") == []
    assert toolmend.sanitize(history, provider="gemini") is history
    answered_once = [*history[:2], {**history[2], "parts": history[2]["parts"][:1]}]
    fixed = toolmend.repair(answered_once, provider="gemini")
    assert fixed.problems_left == ()


def test_gemini_3_signs_the_call_that_becomes_first() -> None:
    """Gemini signs only the first of parallel calls: when the repair removes that call (the
    ``remove_call`` policy), the next one must get the placeholder signature, and a signature
    a call already has is never overwritten."""

    def call(call_id: str) -> dict[str, Any]:
        return {"function_call": {"name": "get_weather", "args": {}, "id": call_id}}

    response = {"function_response": {"name": "get_weather", "response": {}, "id": "c1"}}
    history = [
        {"role": "user", "parts": [{"text": "user 1"}]},
        {"role": "model", "parts": [{**call("c0"), "thought_signature": "c2ln"}, call("c1")]},
        {"role": "user", "parts": [response]},
        {"role": "model", "parts": [{"text": "assistant 4"}]},
    ]
    fixed = toolmend.repair(
        history, provider="gemini-3", policy=toolmend.Policy(missing_result="remove_call")
    )
    assert [c.code for c in fixed.changes] == ["removed_call", "added_thought_signature"]
    assert fixed.messages[1]["parts"] == [
        {**call("c1"), "thought_signature": "skip_thought_signature_validator"}
    ]
    assert fixed.problems_left == ()


def test_gemini_scan_keeps_a_user_content_with_calls_in_the_turn_before() -> None:
    """A user Content carrying a function call (a role lost: None reads as user) opened a fresh
    range in the one-pass scan, which judged it apart from the prompt before it: ``check``
    reported a call turn "not after a user turn" that ``problems_left`` (the whole history)
    did not. Found by the hostile-input property test."""
    call = {"function_call": {"name": "get_weather", "args": {}}}
    history = [{"role": "user", "parts": [{"text": "user 1"}]}, {"role": None, "parts": [call]}]
    problems = toolmend.check(history, provider="gemini", format="gemini")
    assert [(p.code, p.index) for p in problems] == [("misplaced_part", 1)]
    kept = toolmend.repair(history, provider="gemini", policy=toolmend.Policy(frontier="keep"))
    assert list(kept.problems_left) == problems
    # a trailing call is answered (issue 32, case 7): the call moves into a model Content
    repaired = toolmend.repair(history, provider="gemini")
    assert list(repaired.problems_left) == []
    assert toolmend.check(repaired.messages, provider="gemini") == []
