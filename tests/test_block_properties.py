"""Property tests of the core invariants for the block formats and their profiles.

For every (format, profile) pair, over random valid and damaged histories (OpenAI conversations
converted into the format, plus the breakages only block formats have): a repaired history
passes the profile; repairing it again returns the same object; a valid history comes back as
the very same object; the input is never mutated; every user text, assistant text and real tool
result is still in the output; and the formats' one-pass scan agrees with the full rules.
The google-genai and anthropic SDK objects go through the same properties.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from anthropic.types import TextBlock, ThinkingBlock, ToolUseBlock
from google.genai import types
from hypothesis import HealthCheck, assume, given, settings

import toolmend
from toolmend._rules import judge
from toolmend._trim import _pairing_profile
from toolmend.formats import get as module_for
from toolmend.profiles import get_profile

from support.block_histories import (
    PAIRS,
    block_content_strings,
    damaged_block_histories,
    pair_ids,
    valid_block_histories,
)

KEEP_EVERYTHING = toolmend.Policy(orphan_result="text")
FEW = settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))

IDS = pair_ids(PAIRS)


def _has_content(history: list[Any], format: str) -> bool:
    return bool(block_content_strings(history, format))


@pytest.mark.parametrize(("format", "provider", "options"), PAIRS, ids=IDS)
def test_repair_makes_damaged_histories_pass_and_is_idempotent(
    format: str, provider: str, options: dict[str, Any]
) -> None:
    @FEW
    @given(case=damaged_block_histories(format, **options))
    def run(case: Any) -> None:
        history, _ = case
        assume(_has_content(history, format))
        before = copy.deepcopy(history)
        result = toolmend.repair(history, provider=provider, format=format)
        assert history == before, "the input was mutated"
        assert toolmend.check(result.messages, provider=provider, format=format) == []
        assert result.problems_left == ()
        assert toolmend.sanitize(result.messages, provider=provider, format=format) is (
            result.messages
        )
        if result.messages is history:
            assert result.changes == ()
        else:
            assert result.changes, "a changed history must report its changes"

    run()


@pytest.mark.parametrize("format", ["anthropic", "gemini", "bedrock"])
def test_the_pairing_repair_mends_the_pairing_and_leaves_the_rest(format: str) -> None:
    """``trim`` mends with the format's pairing rules alone. That repair must make the history
    pass them, be idempotent, and change nothing a damaged range does not need: Bedrock's role
    order and text beside results stay as they came (its ranges repair as the whole history
    then, see test_block_scans), so a history whose pairing holds is returned as it is."""
    profile = _pairing_profile(format)

    @FEW
    @given(case=damaged_block_histories(format))
    def run(case: Any) -> None:
        history, _ = case
        before = copy.deepcopy(history)
        result = toolmend.repair(history, provider=profile, format=format)
        assert history == before, "the input was mutated"
        assert toolmend.check(result.messages, provider=profile, format=format) == []
        assert toolmend.sanitize(result.messages, provider=profile, format=format) is (
            result.messages
        )
        if not judge(module_for(format).read(history), profile):
            assert result.messages is history

    run()


def test_the_bedrock_pairing_repair_keeps_role_order_and_text_beside_results() -> None:
    def tool_use(call_id: str) -> dict[str, Any]:
        return {"toolUse": {"toolUseId": call_id, "name": "weather", "input": {}}}

    def tool_result(call_id: str) -> dict[str, Any]:
        return {"toolResult": {"toolUseId": call_id, "content": [{"text": "21 C"}]}}

    history = [
        {"role": "assistant", "content": [{"text": "Hello"}]},  # not the user first
        {"role": "assistant", "content": [tool_use("a")]},  # two assistants in a row
        {"role": "user", "content": [tool_result("a"), tool_result("b")]},  # b: orphan
        {"role": "assistant", "content": [tool_use("c")]},
        {"role": "user", "content": [{"text": "typed meanwhile"}, tool_result("c")]},
    ]
    pairing = toolmend.repair(history, provider=_pairing_profile("bedrock"), format="bedrock")
    assert [change.code for change in pairing.changes] == ["dropped_orphan_result"]
    assert pairing.messages[:2] == history[:2] and pairing.messages[3:] == history[3:]
    # and the one-pass scan vouches for what is left without a read (trim's final check)
    assert module_for("bedrock").quick_valid(pairing.messages, _pairing_profile("bedrock"))
    assert not module_for("bedrock").quick_valid(pairing.messages, get_profile("bedrock"))
    # a call turn followed by another assistant message is over without its result: the
    # pairing rules alone see it (Bedrock's own profile reports the two assistant messages)
    unanswered = [*history[3:4], {"role": "assistant", "content": [{"text": "Done."}]}]
    found = toolmend.check(unanswered, provider=_pairing_profile("bedrock"), format="bedrock")
    assert [(problem.code, problem.index, problem.ids) for problem in found] == [
        ("missing_result", 1, ("c",))
    ]
    answered = toolmend.repair(unanswered, provider=_pairing_profile("bedrock"), format="bedrock")
    assert [message["role"] for message in answered.messages] == ["assistant", "user", "assistant"]
    assert [
        (problem.code, problem.index)
        for problem in toolmend.check(unanswered, provider="bedrock", format="bedrock")
    ] == [("first_not_user", 0), ("roles_not_alternating", 1)]
    # the provider's own profile mends all of it
    full = toolmend.repair(history, provider="bedrock", format="bedrock")
    assert {"inserted_message", "merged_messages", "moved_result"} <= {
        change.code for change in full.changes
    }


@pytest.mark.parametrize(("format", "provider", "options"), PAIRS, ids=IDS)
def test_no_real_content_is_lost(format: str, provider: str, options: dict[str, Any]) -> None:
    @FEW
    @given(case=damaged_block_histories(format, **options))
    def run(case: Any) -> None:
        history, _ = case
        result = toolmend.repair(history, provider=provider, format=format, policy=KEEP_EVERYTHING)
        text = json.dumps(result.messages, ensure_ascii=False)
        for content in block_content_strings(history, format):
            assert json.dumps(content, ensure_ascii=False)[1:-1] in text, content

    run()


@pytest.mark.parametrize(("format", "provider", "options"), PAIRS, ids=IDS)
def test_valid_histories_come_back_as_the_same_object(
    format: str, provider: str, options: dict[str, Any]
) -> None:
    if provider == "gemini-no-ids":
        options = {**options, "ids": False}

    @FEW
    @given(history=valid_block_histories(format, **options))
    def run(history: list[Any]) -> None:
        before = copy.deepcopy(history)
        assert toolmend.check(history, provider=provider, format=format) == []
        assert toolmend.sanitize(history, provider=provider, format=format) is history
        assert history == before

    run()


@pytest.mark.parametrize(("format", "provider", "options"), PAIRS, ids=IDS)
def test_the_one_pass_scan_agrees_with_the_rules(
    format: str, provider: str, options: dict[str, Any]
) -> None:
    module = module_for(format)
    scan = getattr(module, "dirty_spans", None)
    if scan is None:
        pytest.skip(f"{format} has no one-pass scan")
    profile = get_profile(provider)

    @FEW
    @given(case=damaged_block_histories(format, **options))
    def run(case: Any) -> None:
        history, _ = case
        spans = scan(history, profile)
        if spans is not None:
            full = judge(module.read(history), profile)
            assert (spans == []) == (full == [])

    run()


# --- the SDKs' own objects --------------------------------------------------------------------


def _as_genai(history: list[dict[str, Any]]) -> list[types.Content]:
    return [types.Content.model_validate(content) for content in history]


def _as_anthropic_blocks(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    kinds = {"text": TextBlock, "tool_use": ToolUseBlock, "thinking": ThinkingBlock}
    out = []
    for message in history:
        content = message["content"]
        if message["role"] == "assistant" and isinstance(content, list):
            content = [
                kinds[b["type"]].model_validate(b) if b.get("type") in kinds and _whole(b) else b
                for b in content
            ]
        out.append({"role": message["role"], "content": content})
    return out


def _whole(block: dict[str, Any]) -> bool:
    required = {"text": ("text",), "tool_use": ("id", "name", "input"), "thinking": ("signature",)}
    return all(
        isinstance(block.get(key), (str, dict)) and block.get(key) != ""
        for key in required[block["type"]]
    ) and (block["type"] != "tool_use" or isinstance(block["input"], dict))


@FEW
@given(case=damaged_block_histories("gemini", ids=True, camel=False))
def test_genai_contents_are_repaired_into_genai_contents(case: Any) -> None:
    history, _ = case
    assume(_has_content(history, "gemini"))
    try:
        contents = _as_genai(history)
    except ValueError:
        assume(False)
        return
    result = toolmend.repair(contents, provider="gemini-3")
    assert all(isinstance(content, types.Content) for content in result.messages)
    assert toolmend.check(result.messages, provider="gemini-3") == []
    assert toolmend.sanitize(result.messages, provider="gemini-3") is result.messages


@FEW
@given(history=valid_block_histories("gemini", ids=True))
def test_valid_genai_contents_come_back_as_the_same_object(history: list[Any]) -> None:
    contents = _as_genai(history)
    assert toolmend.sanitize(contents, provider="gemini") is contents


@FEW
@given(case=damaged_block_histories("anthropic", thinking=True))
def test_anthropic_sdk_blocks_are_repaired(case: Any) -> None:
    history, _ = case
    assume(_has_content(history, "anthropic"))
    messages = _as_anthropic_blocks(history)
    result = toolmend.repair(messages, provider="anthropic", format="anthropic")
    assert toolmend.check(result.messages, provider="anthropic", format="anthropic") == []
    for message in result.messages:
        for block in message["content"] if isinstance(message["content"], list) else ():
            if isinstance(block, ThinkingBlock):
                assert any(block is b for m in messages for b in _blocks(m)), "never rewritten"


def _blocks(message: dict[str, Any]) -> list[Any]:
    content = message["content"]
    return content if isinstance(content, list) else []
