"""The founding bug reports (examples/histories/seed00N_*.json; docs/design.md) replayed on the
core: what broke, and what must hold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import toolmend

from support.cases import assistant, calls, result, system, user

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "histories"


@pytest.mark.parametrize(
    "history",
    [
        # UserMessage -> AssistantMessage (lost its tool_calls) -> ToolResponse -> final answer
        [
            system(),
            user("weather?"),
            assistant(""),
            result("call_00_x", "24 C"),
            assistant("It is 24 C."),
            user("and tomorrow?"),
        ],
        # UserMessage -> dangling ToolResponse -> final answer
        [
            user("weather?"),
            result("call_00_x", "24 C"),
            assistant("It is 24 C."),
            user("and tomorrow?"),
        ],
    ],
    ids=["assistant-lost-tool-calls", "dangling-tool-response"],
)
def test_seed000_deepseek_history_written_dirty_is_accepted_again(history: list[Any]) -> None:
    problems = toolmend.check(history, provider="deepseek")
    assert [p.rule for p in problems] == ["DS-TOOL-ORPHAN"]
    assert problems[0].provider_error == (
        "Messages with role 'tool' must be a response to a preceding message with 'tool_calls'"
    )
    fixed = toolmend.repair(history, provider="deepseek")
    assert toolmend.check(fixed.messages, provider="deepseek") == []
    # the final answer after the tool round is never swallowed (seed 000)
    assert {"role": "assistant", "content": "It is 24 C."} in fixed.messages
    kept_as_text = toolmend.sanitize(
        history, provider="deepseek", policy=toolmend.Policy(orphan_result="text")
    )
    assert any("24 C" in str(m.get("content")) and m["role"] == "user" for m in kept_as_text)


def test_seed000_valid_chain_with_final_answer_is_untouched() -> None:
    history = [
        user("weather?"),
        calls("call_00_x"),
        result("call_00_x", "24 C"),
        assistant("It is 24 C."),
        user("and tomorrow?"),
    ]
    assert toolmend.sanitize(history, provider="deepseek") is history


def test_seed002_merging_for_a_template_without_tool_role_keeps_every_result() -> None:
    history = json.loads(
        (EXAMPLES / "seed002_results_for_template_without_tool_role.json").read_text()
    )
    fixed = toolmend.repair(history, provider="hf-template-strict")
    assert toolmend.check(fixed.messages, provider="hf-template-strict") == []
    text = json.dumps(fixed.messages)
    assert "(no diff)" in text and "nothing to commit" in text  # both results, not just the first
    assert [m["role"] for m in fixed.messages] == ["user", "assistant", "user"]
    assert "And was it pushed?" in fixed.messages[-1]["content"]


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.json")), ids=lambda p: p.stem)
def test_bundled_examples_are_broken_and_repairable(path: Path) -> None:
    document = json.loads(path.read_text())
    history = (
        document
        if isinstance(document, list)
        else next(document[key] for key in ("messages", "contents", "input") if key in document)
    )
    provider = _provider_for(path.stem)
    assert toolmend.check(history, provider=provider) != []
    fixed = toolmend.repair(history, provider=provider)
    assert fixed.problems_left == ()


def _provider_for(stem: str) -> str:
    for name in ("deepseek", "gemini", "anthropic", "bedrock", "mistral", "responses"):
        if name in stem:
            return "openai-responses" if name == "responses" else name
    if "template_without_tool_role" in stem:
        return "hf-template-strict"
    return "deepseek" if stem.startswith(("seed00", "interleaved")) else "openai"
