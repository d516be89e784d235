"""The rescue's last resort judged by components nobody here wrote (``tests/support/judges.py``).

When a provider refuses a history with a rule toolmend does not model, the hook retries once
with the tool exchanges written as text (``"flattened"``, :func:`toolmend.rescue`). That retry
must be accepted where the first request was refused, so it is held here to outside judges:
mistral-common's validator, the real chat templates that have no tool role at all (and every
other template, on fixed examples), and LiteLLM's converters to Anthropic, Bedrock and Gemini
followed by the native profile. Every tool result's content must be in the retry verbatim.

The histories are what a hook sends: the property generators' intact and damaged histories
(``tests/support/histories.py``) after toolmend's repair for the judge's provider. The errors
are real texts of rules toolmend does not model (``tests/data/provider_errors.json``), as they
come and quoting a call id of the history (which flattens only that exchange).
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolmend
from toolmend import _error_texts

from support import judges
from support.histories import damaged_conversations, valid_conversations

EXAMPLES = 30 if not os.environ.get("TOOLMEND_FUZZ") else None
"""Examples per property in the normal suite (the fuzz profile's count under TOOLMEND_FUZZ=1)."""

DATA = Path(__file__).resolve().parent / "data" / "provider_errors.json"
UNMODELED = [
    entry["text"]
    for entry in json.loads(DATA.read_text(encoding="utf-8"))["errors"]
    if entry["kind"] == "tool_history" and entry["known_rule"] is None
]
"""Real 400s about tool history that name no rule toolmend holds: the flattened path fires."""

UNPOINTED = [
    text for text in UNMODELED if not re.search(r"(?:messages|contents|input)\W{0,2}\d", text)
]
"""Those that quote no message index: every exchange is flattened (an index points the
rewrite at the exchange around it, and a template with no tool role refuses the others)."""

POINTING = (
    "messages.3.content.0: unexpected `tool_use_id` found in `advisor_tool_result` blocks: {id}."
    " Each `advisor_tool_result` block must have a corresponding `server_tool_use` block"
    " before it."
)
"""A real unmodeled text (Anthropic's server tools) with the id it quotes put in its place."""

TOOL_ROLE_LESS = (
    "hf__google-gemma-3-it.jinja",
    "llamacpp__google-gemma-2-2b-it.jinja",
    "llamacpp__microsoft-Phi-3.5-mini-instruct.jinja",
)
"""The real templates with no tool role (no ``tool`` in their source): a model behind one takes
the flattened history as plain turns."""


def _examples(test: Any) -> Any:
    return settings(max_examples=EXAMPLES, deadline=None)(test) if EXAMPLES else test


def test_the_tool_role_less_templates_have_no_tool_role() -> None:
    for name in TOOL_ROLE_LESS:
        assert "tool" not in (judges.TEMPLATE_DIR / name).read_text(encoding="utf-8")
    assert len(UNMODELED) >= 6 and len(UNPOINTED) >= 3


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _results(history: list[Any]) -> list[str]:
    """The text of every tool result in an OpenAI-shaped history."""
    found: list[str] = []
    for message in history:
        if isinstance(message, dict) and message.get("role") == "tool":
            found.extend(text for text in _strings(message.get("content")) if text.strip())
    return found


def _call_ids(history: list[Any]) -> list[str]:
    return [
        call["id"]
        for message in history
        if isinstance(message, dict)
        for call in message.get("tool_calls") or ()
        if isinstance(call, dict) and isinstance(call.get("id"), str) and len(call["id"]) >= 3
    ]


def _error(history: list[Any], draw: st.DrawFn) -> str:
    ids = _call_ids(history)
    pointed: bool = draw(st.booleans())
    if ids and pointed:
        return POINTING.format(id=draw(st.sampled_from(ids)))
    text: str = draw(st.sampled_from(UNMODELED))
    return text


def _retried(history: list[Any], provider: str, error: str) -> list[Any] | None:
    """What the hook sends the second time: ``history`` as sent (repaired for ``provider``)
    rescued after ``error``; None when there is nothing to send or no tool traffic left to
    write (the hook then re-raises the provider's error)."""
    sent = toolmend.repair(copy.deepcopy(history), provider=provider)
    if any(problem.code == "empty_history" for problem in sent.problems_left):
        return None
    sent_messages = list(sent.messages)
    before = copy.deepcopy(sent_messages)
    retry = toolmend.rescue(sent_messages, error, provider=provider)
    assert sent_messages == before  # the history the hook sent is never changed
    if retry is None:
        assert not _call_ids(sent_messages) and not _results(sent_messages), error
        return None
    assert retry.rule == "flattened", retry
    assert toolmend.check(retry.messages, provider=provider) == [], retry.changes
    written = "\n".join(_strings(retry.messages))
    for result in _results(sent_messages):
        assert result in written, (result, retry.messages)  # every result's content, verbatim
    return list(retry.messages)


@st.composite
def _cases(draw: st.DrawFn) -> tuple[list[Any], st.DrawFn]:
    if draw(st.integers(0, 3)) == 0:
        history = draw(valid_conversations(id_style="any"))
    else:
        _, history, _ = draw(damaged_conversations(id_style="any"))
    return history, draw


# --- properties: each judge on the generators' histories ----------------------------------


@_examples
@given(_cases())
def test_mistral_common_accepts_every_flattened_retry(case: tuple[list[Any], st.DrawFn]) -> None:
    history, draw = case
    retried = _retried(history, "mistral", _error(history, draw))
    if retried is not None:
        assert judges.mistral_error(retried) is None, (judges.mistral_error(retried), retried)


def _without_system(history: list[Any], name: str) -> list[Any]:
    """Gemma 2's template refuses a system message whatever else the history holds (not a
    tool-history error): its histories are judged without one."""
    if name != "llamacpp__google-gemma-2-2b-it.jinja":
        return history
    return [m for m in history if not (isinstance(m, dict) and m.get("role") == "system")]


def _plain_neighbours(history: list[Any]) -> bool:
    """Whether two text messages of one role (no calls, no results) stand side by side: a
    template that wants turns to alternate refuses that with its own words (held by
    :func:`test_tool_role_less_templates_accept_the_retry_after_their_own_error`)."""
    plain = [
        m.get("role")
        if m.get("role") in ("user", "assistant") and not m.get("tool_calls")
        else None
        for m in history
        if isinstance(m, dict)
    ]
    turns = [m for m in history if isinstance(m, dict) and m.get("role") != "system"]
    if turns and turns[0].get("role") != "user":
        return True  # and the first turn must be the user's
    return any(a is not None and a == b for a, b in itertools.pairwise(plain))


HOOKS = ("openai", "vllm")
"""What a hook in front of a self-hosted server may believe it talks to: OpenAI itself (a base
URL it was not told about) or a server whose model has a tool role."""


@pytest.mark.parametrize("hook", HOOKS)
@pytest.mark.parametrize("name", TOOL_ROLE_LESS)
@_examples
@given(case=_cases(), error=st.sampled_from(UNPOINTED))
def test_tool_role_less_templates_render_every_flattened_retry(
    name: str, hook: str, case: tuple[list[Any], st.DrawFn], error: str
) -> None:
    """A hook that took the server's model for one with a tool role sent tool messages; the
    error names no rule toolmend knows, so every exchange is written as text, and the template
    with no tool role renders what is left (turns still alternating)."""
    history = _without_system(case[0], name)
    sent = list(toolmend.repair(copy.deepcopy(history), provider=hook).messages)
    if _plain_neighbours(sent):
        return  # refused for its turns' order whatever the tools: not this error's 400
    retried = _retried(history, hook, error)
    if retried is not None:
        verdict = judges.template_error(name, retried)
        assert verdict is None, (verdict, retried)


GENERIC_REFUSALS = _error_texts._GENERIC
"""What a template says for many things (Gemma 3's ``Invalid content type`` and Phi 3.5's
``can only concatenate str (not "NoneType") to str`` for any null content, one beside
``tool_calls`` among them): never retried, so such a history behind a hook that believes it
talks to OpenAI stays refused (the hook must be told the server and the model: then its
profile is the template's, ``hf-gemma-3`` or ``hf-template``)."""


@pytest.mark.parametrize("hook", HOOKS)
@pytest.mark.parametrize("name", TOOL_ROLE_LESS)
@_examples
@given(case=_cases())
def test_tool_role_less_templates_accept_the_retry_after_their_own_error(
    name: str, hook: str, case: tuple[list[Any], st.DrawFn]
) -> None:
    """End to end with the template's own words: the history the hook sent (held to the
    hook's profile) is rendered by the real template; when it refuses, its error is
    the 400's message, and the one retry the rescue gives is rendered."""
    history = _without_system(case[0], name)
    sent = list(toolmend.repair(copy.deepcopy(history), provider=hook).messages)
    if not sent:
        return
    refusal = judges.template_error(name, sent)
    if refusal is None:
        return  # no 400: no retry
    message = refusal.split(": ", 1)[1]  # what vLLM and llama.cpp put in the 400's body
    retry = toolmend.rescue(sent, message, provider=hook)
    if message in GENERIC_REFUSALS:
        assert retry is None  # too generic to be taken for a tool-history error
        return
    assert retry is not None, message
    verdict = judges.template_error(name, list(retry.messages))
    assert verdict is None, (message, retry.rule, verdict, retry.messages)
    written = "\n".join(_strings(retry.messages))
    for result in _results(sent):
        assert result in written, (result, retry.messages)


@pytest.mark.parametrize("provider", judges.LITELLM_TARGETS)
@_examples
@given(case=_cases())
def test_litellm_converts_every_flattened_retry_and_the_native_profile_agrees(
    provider: str, case: tuple[list[Any], st.DrawFn]
) -> None:
    history, draw = case
    retried = _retried(history, provider, _error(history, draw))
    if retried is None:
        return
    if provider == "gemini" and judges.identical_calls(retried):
        return  # LiteLLM's own deduplication (see judges.identical_calls)
    error = judges.litellm_error(provider, retried)
    assert error is None, (provider, error, retried)


# --- fixed examples through every judge, every template included --------------------------


def _call(call_id: str, city: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
    }


EXAMPLES_FIXED: dict[str, list[dict[str, Any]]] = {
    "intact, two parallel calls": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [_call("a1b2c3d4e", "Paris"), _call("f5g6h7i8j", "Rome")],
        },
        {"role": "tool", "tool_call_id": "f5g6h7i8j", "content": "Rome: 25 C, sunny"},
        {"role": "tool", "tool_call_id": "a1b2c3d4e", "content": 'Paris: 21 C, "cloudy"\nwind'},
        {"role": "assistant", "content": "Paris 21 C, Rome 25 C."},
        {"role": "user", "content": "Thanks."},
    ],
    "damaged, a result lost and one orphaned": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [_call("a1b2c3d4e", "Paris")]},
        {"role": "user", "content": "Hurry."},
        {"role": "tool", "tool_call_id": "zzzzzzzzz", "content": "Orphan: 3 C"},
        {"role": "assistant", "content": "One moment."},
        {"role": "user", "content": "And Oslo?"},
    ],
    "two rounds, the last one open": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [_call("a1b2c3d4e", "Paris")]},
        {"role": "tool", "tool_call_id": "a1b2c3d4e", "content": "Paris: 21 C"},
        {"role": "assistant", "content": "21 C. Checking Rome too.", "tool_calls": []},
        {"role": "assistant", "content": None, "tool_calls": [_call("f5g6h7i8j", "Rome")]},
        {"role": "tool", "tool_call_id": "f5g6h7i8j", "content": "Rome: 25 C"},
    ],
}


def _errors_for(history: list[Any]) -> list[str]:
    return [*UNMODELED[:3], *(POINTING.format(id=i) for i in _call_ids(history)[:2])]


@pytest.mark.parametrize("example", sorted(EXAMPLES_FIXED))
def test_every_judge_accepts_the_flattened_retry_of_the_examples(example: str) -> None:
    history = EXAMPLES_FIXED[example]
    judged = 0
    for error in _errors_for(history):
        retried = _retried(history, "mistral", error)
        assert retried is not None
        assert judges.mistral_error(retried) is None, (error, judges.mistral_error(retried))
        for name in judges.TEMPLATES:
            retried = _retried(history, judges.template_provider(name), error)
            if retried is not None:
                assert judges.template_error(name, retried) is None, (
                    name,
                    error,
                    judges.template_error(name, retried),
                )
                judged += 1
        for provider in judges.LITELLM_TARGETS:
            retried = _retried(history, provider, error)
            assert retried is not None
            assert judges.litellm_error(provider, retried) is None, (provider, error)
    assert judged >= len(judges.TEMPLATES)  # most templates got a retry to render


ALTERNATION = {
    "a result, then the user": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [_call("a1b2c3d4e", "Paris")]},
        {"role": "tool", "tool_call_id": "a1b2c3d4e", "content": "Paris: 21 C"},
        {"role": "user", "content": "And Rome?"},
    ],
    "assistant text, then its call": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "Let me check."},
        {"role": "assistant", "content": None, "tool_calls": [_call("a1b2c3d4e", "Paris")]},
        {"role": "tool", "tool_call_id": "a1b2c3d4e", "content": "Paris: 21 C"},
        {"role": "assistant", "content": "21 C."},
        {"role": "user", "content": "And Rome?"},
    ],
}


@pytest.mark.parametrize("name", TOOL_ROLE_LESS[:2])
@pytest.mark.parametrize("example", sorted(ALTERNATION))
def test_a_flattened_message_joins_its_text_neighbours_of_the_same_role(
    example: str, name: str
) -> None:
    """Written as text, a result and the user's next message were two user turns in a row
    (and an assistant's text and its call two assistant turns): Gemma's templates refuse
    both. Joined, they render, and nothing is lost."""
    retried = _retried(ALTERNATION[example], "openai", UNPOINTED[0])
    assert retried is not None
    roles = [message["role"] for message in retried]
    assert all(a != b for a, b in itertools.pairwise(roles)), roles
    assert judges.template_error(name, retried) is None
    written = "\n".join(_strings(retried))
    assert "Let me check." in written or example != "assistant text, then its call"
    assert "And Rome?" in written and "Paris: 21 C" in written


def test_what_is_more_than_text_is_never_joined() -> None:
    """A Responses reasoning item (encrypted), an assistant message's ``reasoning_content`` or
    a thinking block is kept only in a message of its own: the join takes text alone."""
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "ENC"}
    items = [
        {"role": "user", "content": "Weather?"},
        reasoning,
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "w",
            "arguments": "{}",
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "R1"},
        {"role": "user", "content": "And Rome?"},
    ]
    retry = toolmend.rescue(items, UNPOINTED[0], provider="openai-responses-reasoning")
    assert retry is not None and retry.rule == "flattened"
    assert reasoning in retry.messages
    assert retry.messages[-1] == {
        "role": "user",
        "content": "[tool result call_1]\nR1\n\nAnd Rome?",
    }
    chat = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "Let me check.", "reasoning_content": "think"},
        {"role": "assistant", "content": None, "tool_calls": [_call("a1b2c3d4e", "Paris")]},
        {"role": "tool", "tool_call_id": "a1b2c3d4e", "content": "Paris: 21 C"},
        {"role": "assistant", "content": "21 C."},
        {"role": "user", "content": "And Rome?"},
    ]
    retry = toolmend.rescue(chat, UNPOINTED[0], provider="deepseek")
    assert retry is not None
    assert chat[1] in retry.messages
