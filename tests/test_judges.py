"""Repairs judged by components nobody here wrote (see ``tests/support/judges.py``).

Every repair toolmend makes for ``mistral`` must pass mistral-common's request validator; every
``hf-template`` / ``hf-template-strict`` repair (and ``mistral`` for Mistral's templates) must
render in the real chat templates; every ``anthropic`` / ``bedrock`` / ``gemini`` repair of an
OpenAI-shaped history must convert through LiteLLM's own converters and then pass toolmend's
native profile. Run on the property generators (``tests/support/histories.py``; more examples with
``TOOLMEND_FUZZ=1``) and on the examples of issue 20.

Where a judge holds a rule no provider profile should (a converter's or a template's own
limit), the history is left out here, with the reason beside the filter.
"""

from __future__ import annotations

import copy
import os
import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolmend

from support import judges
from support.histories import OP_NAMES, apply_damage, damaged_conversations, valid_conversations

EXAMPLES = 40 if not os.environ.get("TOOLMEND_FUZZ") else None
"""Examples per judge test in the normal suite (the fuzz profile's count under
``TOOLMEND_FUZZ=1``)."""

JUDGED: Counter[str] = Counter()
"""judge -> histories it accepted in this session (the counts a run covers)."""


def _examples(test: Any) -> Any:
    return settings(max_examples=EXAMPLES)(test) if EXAMPLES else test


def _with_damage(history: list[dict[str, Any]], rnd: st.DrawFn) -> list[dict[str, Any]]:
    """Damage the generators leave out: a null or empty content on a user, system or tool
    message, or an empty text beside calls."""
    out = copy.deepcopy(history)
    candidates = [i for i, m in enumerate(out) if m["role"] in ("user", "system", "tool")]
    candidates += [i for i, m in enumerate(out) if m.get("tool_calls")]
    if candidates and rnd(st.booleans()):
        index = rnd(st.sampled_from(candidates))
        out[index]["content"] = rnd(st.sampled_from([None, ""]))
    return out


def _one_call_each(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``history`` with only the first call of each message (and its result): what the Llama
    3.x templates, which take one call per message, can be judged on."""
    out: list[dict[str, Any]] = []
    dropped: set[str] = set()
    for message in history:
        if message.get("tool_calls"):
            first, *rest = message["tool_calls"]
            dropped.update(call["id"] for call in rest)
            message = {**message, "tool_calls": [first]}
        elif message["role"] == "tool" and message.get("tool_call_id") in dropped:
            continue
        out.append(message)
    return out


@st.composite
def _histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    if draw(st.integers(0, 4)) == 0:
        return draw(valid_conversations(id_style="any"))
    if draw(st.integers(0, 2)) == 0:  # one call per message, then damaged
        valid = _one_call_each(draw(valid_conversations(id_style="any")))
        names = draw(st.lists(st.sampled_from(OP_NAMES), min_size=1, max_size=3))
        damaged, _ = apply_damage(valid, names, random.Random(draw(st.integers(0, 2**32 - 1))))
        return _with_damage(damaged, draw)
    _, damaged, _ = draw(damaged_conversations(id_style="any"))
    return _with_damage(damaged, draw)


def _repaired(history: list[Any], provider: str) -> list[Any] | None:
    """The repair for ``provider``; None when it leaves nothing to send (an empty history
    stays in ``problems_left``, and no judge can take it)."""
    result = toolmend.repair(history, provider=provider)
    if any(problem.code == "empty_history" for problem in result.problems_left):
        return None
    assert result.problems_left == (), result.problems_left
    return list(result.messages)


def _judge_mistral(history: list[Any]) -> None:
    fixed = _repaired(history, "mistral")
    if fixed is None:
        return
    assert judges.mistral_error(fixed) is None, (judges.mistral_error(fixed), fixed)
    JUDGED["mistral-common"] += 1


def _alternates(messages: list[Any]) -> bool:
    """Whether the user and assistant text messages alternate (tool traffic aside)."""
    previous = None
    for message in messages:
        if message["role"] == "system" or message["role"] == "tool" or message.get("tool_calls"):
            continue
        if message["role"] == previous:
            return False
        previous = message["role"]
    return True


def _judge_templates(history: list[Any]) -> None:
    for name, provider in judges.TEMPLATES.items():
        fixed = _repaired(history, provider)
        if fixed is None:
            continue
        if name in judges.SINGLE_CALL_TEMPLATES and judges.parallel_calls(fixed):
            continue  # the model's limit (see judges.SINGLE_CALL_TEMPLATES)
        if provider == "mistral" and not _alternates(fixed):
            # Mistral's API (mistral-common) takes consecutive user or assistant messages and
            # the mistral profile keeps them; Mistral's templates want strict alternation,
            # which only a template-side profile could ask for
            continue
        error = judges.template_error(name, fixed)
        assert error is None, (name, error, fixed)
        JUDGED[f"template {name}"] += 1


def _judge_litellm(history: list[Any], provider: str, profile: str | None = None) -> None:
    """LiteLLM converts the repair for ``profile`` (default: ``provider``) to ``provider``'s
    API, and ``provider``'s native profile finds nothing in what it built."""
    fixed = _repaired(history, profile or provider)
    if fixed is None:
        return
    if provider == "gemini" and judges.identical_calls(fixed):
        return  # LiteLLM's own deduplication (see judges.identical_calls)
    error = judges.litellm_error(provider, fixed)
    assert error is None, (provider, profile, error, fixed)
    JUDGED[f"litellm {provider}" + (f" ({profile})" if profile else "")] += 1


@_examples
@given(_histories())
def test_mistral_common_accepts_every_mistral_repair(history: list[Any]) -> None:
    _judge_mistral(history)


@_examples
@given(_histories())
def test_real_chat_templates_render_every_template_repair(history: list[Any]) -> None:
    _judge_templates(history)


@pytest.mark.parametrize("provider", judges.LITELLM_TARGETS)
@_examples
@given(history=_histories())
def test_litellm_converts_every_repair_and_the_native_profile_agrees(
    provider: str, history: list[Any]
) -> None:
    _judge_litellm(history, provider)


@_examples
@given(history=_histories())
def test_litellm_gemini_converter_converts_every_gemini_litellm_repair(
    history: list[Any],
) -> None:
    """The profile toolmend's LiteLLM callback holds a Gemini deployment's history to fills no
    result names (LiteLLM's converter derives them from the calls): what it leaves, LiteLLM
    converts and the native Gemini profile accepts."""
    _judge_litellm(history, "gemini", profile="gemini-litellm")


# --- the examples of issue 20 -------------------------------------------------------------


def _call(call_id: str = "abcdefghi", **changes: Any) -> dict[str, Any]:
    call: dict[str, Any] = {
        "id": call_id,
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    call.update(changes)
    return call


def _turn(call: dict[str, Any], **assistant: Any) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [call], **assistant},
        {"role": "tool", "tool_call_id": "abcdefghi", "content": "21 C"},
        {"role": "assistant", "content": "It is 21 C."},
        {"role": "user", "content": "Thanks."},
    ]


_FLAT = {"id": "abcdefghi", "name": "get_weather", "arguments": '{"city": "Paris"}'}
_UNTYPED = {"id": "abcdefghi", "function": {"name": "get_weather", "arguments": "{}"}}

ISSUE_EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "call without function wrapper": _turn(_FLAT),
    "call without type": _turn(_UNTYPED),
    "object arguments": _turn(_call(function={"name": "get_weather", "arguments": {"a": 1}})),
    "empty tool_calls": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello", "tool_calls": []},
        {"role": "user", "content": "Bye"},
    ],
    "null user content": [
        {"role": "system", "content": "Be brief."},
        *_turn(_call()),
        {"role": "user", "content": None},
    ],
    "empty user content": [{**_turn(_call())[0], "content": ""}, *_turn(_call())[1:]],
    "null tool content": [
        *_turn(_call())[:2],
        {"role": "tool", "tool_call_id": "abcdefghi", "content": None},
        *_turn(_call())[3:],
    ],
    "empty text beside calls": _turn(_call(), content=""),
    "opens with an assistant call": _turn(_call())[1:],
    "system only": [{"role": "system", "content": "Be brief."}],
    "assistant only": [{"role": "assistant", "content": None}],
    "system after the start": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
        {"role": "system", "content": "Answer in French."},
        {"role": "user", "content": "Weather?"},
    ],
    "system first": [{"role": "system", "content": "Be brief."}, *_turn(_call())],
    "orphan result": [
        {"role": "user", "content": "Hi"},
        {"role": "tool", "tool_call_id": "abcdefghi", "content": "21 C"},
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "Weather?"},
    ],
    "result without id": [
        *_turn(_call())[:2],
        {"role": "tool", "content": "21 C"},
        *_turn(_call())[3:],
    ],
}


@pytest.mark.parametrize("name", ISSUE_EXAMPLES)
def test_issue_examples_pass_every_judge(name: str) -> None:
    history = ISSUE_EXAMPLES[name]
    _judge_mistral(history)
    _judge_templates(history)
    for provider in judges.LITELLM_TARGETS:
        _judge_litellm(history, provider)
    _judge_litellm(history, "gemini", profile="gemini-litellm")


def test_the_judges_refuse_the_issue_examples_unrepaired() -> None:
    """The judges are not blind: unrepaired, the examples fail them as the issue says."""
    flat = ISSUE_EXAMPLES["call without function wrapper"]
    assert "Field required" in (judges.mistral_error(flat) or "")
    assert "no attribute 'function'" in (
        judges.template_error("llamacpp__meta-llama-Llama-3.1-8B-Instruct.jinja", flat) or ""
    )
    objects = ISSUE_EXAMPLES["object arguments"]
    assert "'dict' object has no attribute 'strip'" in (
        judges.litellm_error("anthropic", objects) or ""
    )
    assert "empty text parameter" in (
        judges.litellm_error("gemini", ISSUE_EXAMPLES["empty text beside calls"]) or ""
    )
    assert "function call turn comes immediately after a user turn" in (
        judges.litellm_error("gemini", ISSUE_EXAMPLES["opens with an assistant call"]) or ""
    )
    assert "Input should be a valid string" in (
        judges.mistral_error(ISSUE_EXAMPLES["null tool content"]) or ""
    )
    assert judges.mistral_error([]) == (
        "InvalidMessageStructureException: Conversation must have at least one message"
    )
    assert "Unexpected role 'system' after role 'assistant'" in (
        judges.mistral_error(ISSUE_EXAMPLES["system after the start"]) or ""
    )
    assert "System role not supported" in (
        judges.template_error(
            "llamacpp__google-gemma-2-2b-it.jinja", ISSUE_EXAMPLES["system first"]
        )
        or ""
    )
    assert "no previous assistant message with a tool call" in (
        judges.template_error(
            "llamacpp__openai-gpt-oss-120b.jinja", ISSUE_EXAMPLES["orphan result"]
        )
        or ""
    )


def test_judge_counts() -> None:
    """The judges ran (a run that accepted nothing proves nothing)."""
    if not JUDGED:
        pytest.skip("run with the judge tests")
    assert JUDGED["mistral-common"] > 0
    assert any(key.startswith("template ") for key in JUDGED)
    assert any(key.startswith("litellm ") for key in JUDGED)
