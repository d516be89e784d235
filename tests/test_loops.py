"""The loop guard (issue 4): each detector, its threshold, runs ended by the user, the raise
option, and that no problem or error text carries a call's arguments."""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolmend

from support.agent_runs import agent_runs
from support.cases import assistant, result, user

Message = dict[str, Any]
SECRET = "SECRET-ARGUMENT"


def round_(call_id: str, name: str, **arguments: Any) -> list[Message]:
    """One tool round: an assistant message calling ``name``, and its result."""
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        result(call_id, "output"),
    ]


def seed002_loop() -> list[Message]:
    """Seed 002: the model, not seeing its results, runs git diff / status / log again and
    again."""
    history = [user("Is index.html committed?")]
    for turn in range(3):
        history += round_(f"call_d{turn}", "git_diff", path="index.html", secret=SECRET)
        history += round_(f"call_s{turn}", "git_status")
        history += round_(f"call_l{turn}", "git_log", limit=5)
        history.append(assistant("Let me check that for you."))
    return history


def codes(problems: list[toolmend.Problem]) -> list[tuple[str, int]]:
    return [(problem.code, problem.index) for problem in problems]


def test_seed002_cycle_is_found_for_every_tool() -> None:
    problems = toolmend.detect_loops(seed002_loop())
    assert sorted(p.code for p in problems) == ["repeated_call"] * 3
    messages = sorted(p.message for p in problems)
    assert messages[0] == (
        "tool 'git_diff' called 3 times with the same arguments since the last user message"
    )
    diff = next(p for p in problems if "git_diff" in p.message)
    assert diff.ids == ("call_d0", "call_d1", "call_d2")
    assert diff.index == 15  # the third git_diff call
    assert diff.rule == "LOOP-REPEATED-CALL"


def test_repeated_call_threshold_and_argument_order() -> None:
    history = [user("go")]
    history += round_("c1", "search", q="x", limit=3)
    history += round_("c2", "search", limit=3, q="x")  # same arguments, other key order
    assert toolmend.detect_loops(history) == []
    assert codes(toolmend.detect_loops(history, repeat=2)) == [("repeated_call", 3)]
    assert toolmend.detect_loops(history, repeat=None) == []


def test_parallel_identical_calls_count() -> None:
    call = {"type": "function", "function": {"name": "ping", "arguments": "{}"}}
    calls = [{**call, "id": f"c{i}"} for i in range(3)]
    history = [
        user("go"),
        {"role": "assistant", "content": None, "tool_calls": calls},
        *(result(f"c{i}") for i in range(3)),
    ]
    assert codes(toolmend.detect_loops(history)) == [("repeated_call", 1)]


def test_a_user_message_ends_the_run() -> None:
    history = [user("go")]
    history += round_("c1", "git_status") + round_("c2", "git_status")
    history += [assistant("clean"), user("check again please")]
    history += round_("c3", "git_status")
    assert toolmend.detect_loops(history) == []


def test_repeated_tool_with_changing_arguments() -> None:
    history = [user("find the file")]
    for n in range(5):
        history += round_(f"c{n}", "search", query=f"attempt {n} {SECRET}")
    history.append(assistant("Not found."))
    problems = toolmend.detect_loops(history)
    assert codes(problems) == [("repeated_tool", 9)]
    assert problems[0].message == (
        "tool 'search' called in 5 rounds in a row with changing arguments"
    )
    assert toolmend.detect_loops(history, repeat_tool=6) == []
    # another tool in between breaks the streak
    broken = [*history[:5], *round_("x", "read_file", path="a"), *history[5:]]
    assert toolmend.detect_loops(broken) == []


def test_long_tool_run() -> None:
    history = [user("do everything")]
    for n in range(8):
        history += round_(f"c{n}", f"step_{n % 4}", n=n)
    problems = toolmend.detect_loops(history, max_rounds=6, repeat=None)
    assert codes(problems) == [("long_tool_run", 13)]  # the 7th round
    assert problems[0].message == (
        "8 tool rounds without a user message (limit 6); most called: tool 'step_0', 2 times"
    )
    assert toolmend.detect_loops(history, max_rounds=8) == []
    assert toolmend.detect_loops(history, max_rounds=None, repeat=None) == []


def test_raise_names_the_tool_and_count_for_the_live_run() -> None:
    history = seed002_loop()
    with pytest.raises(toolmend.ToolLoopError) as caught:
        toolmend.detect_loops(history, raise_=True)
    error = caught.value
    assert isinstance(error, toolmend.ToolmendError)
    assert "repeated_call" in str(error) and "'git_diff' called 3 times" in str(error)
    assert len(error.problems) == 3
    assert SECRET not in str(error)


def test_a_finished_loop_is_reported_but_not_raised() -> None:
    history = [*seed002_loop(), user("Stop. Just tell me what you saw.")]
    assert len(toolmend.detect_loops(history, raise_=True)) == 3


def test_no_arguments_in_any_problem() -> None:
    history = seed002_loop()
    for n in range(6):
        history += round_(f"q{n}", "search", query=f"{SECRET} {n}")
    problems = toolmend.detect_loops(history, max_rounds=3)
    assert {p.code for p in problems} == {"repeated_call", "repeated_tool", "long_tool_run"}
    assert all(SECRET not in str(p) and SECRET not in p.provider_error for p in problems)


def test_clean_histories_and_bad_limits() -> None:
    assert toolmend.detect_loops([user("hi"), assistant("hello")]) == []
    with pytest.raises(ValueError, match="repeat"):
        toolmend.detect_loops([user("hi")], repeat=1)
    with pytest.raises(ValueError, match="max_rounds"):
        toolmend.detect_loops([user("hi")], max_rounds=0)


def test_responses_items() -> None:
    history: list[Any] = [{"role": "user", "content": "status?"}]
    for n in range(3):
        history += [
            {"type": "function_call", "call_id": f"c{n}", "name": "git_status", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"c{n}", "output": "clean"},
        ]
    assert codes(toolmend.detect_loops(history)) == [("repeated_call", 5)]


def test_sdk_objects() -> None:
    pytest.importorskip("openai")
    from openai.types.chat import ChatCompletionMessage

    history: list[Any] = [user("go")]
    for n in range(3):
        message = ChatCompletionMessage.model_validate(round_(f"c{n}", "ping", host="a")[0])
        history += [message, result(f"c{n}")]
    assert codes(toolmend.detect_loops(history)) == [("repeated_call", 5)]


def _anthropic_loop() -> list[Message]:
    history: list[Message] = [{"role": "user", "content": "status?"}]
    for n in range(3):
        history += [
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"t{n}", "name": "git_status", "input": {"a": 1}}
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": "ok"}],
            },
        ]
    return history


def test_anthropic_blocks() -> None:
    if "anthropic" not in importlib.import_module("toolmend.formats").names():
        pytest.skip("TODO(issue 4): the 'anthropic' format module has not landed yet")
    assert codes(toolmend.detect_loops(_anthropic_loop(), format="anthropic")) == [
        ("repeated_call", 5)
    ]


def test_gemini_contents() -> None:
    if "gemini" not in importlib.import_module("toolmend.formats").names():
        pytest.skip("TODO(issue 4): the 'gemini' format module has not landed yet")
    history: list[Message] = [{"role": "user", "parts": [{"text": "status?"}]}]
    for _ in range(3):
        history += [
            {"role": "model", "parts": [{"functionCall": {"name": "git_status", "args": {}}}]},
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "git_status", "response": {"r": 1}}}],
            },
        ]
    assert codes(toolmend.detect_loops(history, format="gemini")) == [("repeated_call", 5)]


def test_live_only_skips_the_runs_the_user_ended() -> None:
    """Hooks pass ``live_only=True``: a loop the user already interrupted is not reported on
    every later request, and a loop in the live run is reported at the same index."""
    ended = [*seed002_loop(), user("Never mind. What's the time?")]
    assert toolmend.detect_loops(ended)
    assert toolmend.detect_loops(ended, live_only=True) == []
    live = ended + seed002_loop()[1:]
    expected = [p for p in toolmend.detect_loops(live) if p.index > len(ended)]
    assert toolmend.detect_loops(live, live_only=True) == expected
    assert codes(toolmend.detect_loops(seed002_loop(), live_only=True)) == codes(
        toolmend.detect_loops(seed002_loop())
    )
    with pytest.raises(toolmend.ToolLoopError) as raised:
        toolmend.detect_loops(live, live_only=True, raise_=True)
    assert raised.value.problems == tuple(expected)


@settings(max_examples=300, deadline=None)
@given(history=agent_runs(), limits=st.sampled_from([(3, 5, 25), (2, 2, 3), (None, 3, None)]))
def test_live_only_reports_what_the_full_read_reports_in_the_live_run(
    history: list[Any], limits: tuple[Any, Any, Any]
) -> None:
    """Hooks read the live run straight off the dicts (``live_rounds``); whatever they find
    must be what reading the whole history finds after the last user message."""
    repeat, repeat_tool, max_rounds = limits
    options = {"repeat": repeat, "repeat_tool": repeat_tool, "max_rounds": max_rounds}
    users = [i for i, m in enumerate(history) if isinstance(m, dict) and m["role"] == "user"]
    live_from = users[-1] + 1 if users else 0
    full = [p for p in toolmend.detect_loops(history, **options) if p.index >= live_from]
    assert toolmend.detect_loops(history, live_only=True, **options) == full
    if full:
        with pytest.raises(toolmend.ToolLoopError) as raised:
            toolmend.detect_loops(history, live_only=True, raise_=True, **options)
        assert raised.value.problems == tuple(full)
