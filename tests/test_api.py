"""The public surface: exports, errors, policies, object inputs, and what never happens to input."""

from __future__ import annotations

import copy
import gc
import subprocess
import sys
from types import ModuleType
from typing import Any

import pytest

import toolmend

from support.cases import assistant, calls, result, system, user


def test_all_lists_exactly_the_public_names() -> None:
    public = sorted(
        name
        for name, value in vars(toolmend).items()
        if not name.startswith("_") and not isinstance(value, ModuleType)
    )
    assert sorted(toolmend.__all__) == public


def test_every_exception_shares_one_root() -> None:
    for name in toolmend.__all__:
        value = getattr(toolmend, name)
        if isinstance(value, type) and issubclass(value, BaseException):
            assert issubclass(value, toolmend.ToolmendError), name
            assert value.__module__ == "toolmend"


def test_valid_history_is_the_same_object_and_never_copied() -> None:
    history = [system(), user(), calls("call_1"), result("call_1"), assistant("21 C")]
    assert toolmend.sanitize(history) is history
    assert toolmend.repair(history).changes == ()


def test_repair_returns_new_list_and_leaves_untouched_messages_shared() -> None:
    history = [user("q"), calls("call_1"), user("still there?"), result("call_1"), assistant("a")]
    before = copy.deepcopy(history)
    fixed = toolmend.sanitize(history)
    assert history == before
    assert fixed is not history
    assert [m["role"] for m in fixed] == ["user", "assistant", "tool", "user", "assistant"]
    assert fixed[0] is history[0] and fixed[2] is history[3] and fixed[3] is history[2]


def test_repair_holds_one_damaged_range_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each range's skeleton is freed once the range is mended. Kept to the end, a long damaged
    history's skeletons and plans outlived the garbage collector's young generations, and the
    full collections they set off (of the caller's whole heap) cost a third of the repair."""
    from toolmend._skeleton import Skeleton

    plan_repair = toolmend._api.plan_repair
    planned: list[int] = []  # for each range planned, the skeletons alive at the last one

    def counting(skeleton: Skeleton, *args: Any) -> Any:
        planned.append(0)
        if len(planned) == 40:  # the last range: every earlier one's skeleton was still held
            planned[-1] = sum(type(o) is Skeleton for o in gc.get_objects())
        return plan_repair(skeleton, *args)

    monkeypatch.setattr(toolmend._api, "plan_repair", counting)
    history = []
    for n in range(40):  # a user message between each call and its result: 40 damaged ranges
        history += [user(), calls(f"call_{n}"), user("Still there?"), result(f"call_{n}")]
    # (a policy the one-walk range repair leaves to the planner: under the default one, each
    # such range is mended from its messages, with no skeleton at all)
    fixed = toolmend.repair(history, policy=toolmend.Policy(missing_result="remove_call"))
    assert len(planned) == 40 and toolmend.check(fixed.messages) == []
    assert planned[-1] <= 2  # the range being mended (and at most one the scan holds)


def test_strict_policy_raises_with_the_problems() -> None:
    history = [user(), result("call_9")]
    with pytest.raises(toolmend.ToolChainError) as caught:
        toolmend.repair(history, policy="strict")
    assert [p.code for p in caught.value.problems] == ["orphan_result"]
    assert "message 1: orphan_result" in str(caught.value)


def test_report_policy_changes_nothing() -> None:
    history = [user(), result("call_9")]
    outcome = toolmend.repair(history, policy="report")
    assert outcome.messages is history
    assert outcome.changes == ()
    assert [p.code for p in outcome.problems_left] == ["orphan_result"]


def test_orphan_as_text_policy_keeps_the_result() -> None:
    history = [user("q"), result("call_9", text="THE RESULT"), assistant("ok")]
    fixed = toolmend.repair(history, policy=toolmend.Policy(orphan_result="text"))
    assert [c.code for c in fixed.changes] == ["orphan_result_to_text"]
    assert fixed.messages[1]["role"] == "user"
    assert "THE RESULT" in fixed.messages[1]["content"]
    assert toolmend.check(fixed.messages) == []


def test_remove_call_policy_and_placeholder_default() -> None:
    history = [user("q"), calls("call_1", "call_2"), result("call_1"), user("next")]
    default = toolmend.repair(history)
    placeholder = default.messages[3]
    assert placeholder == {
        "role": "tool",
        "tool_call_id": "call_2",
        "content": toolmend.PLACEHOLDER_TEXT,
    }
    removed = toolmend.repair(history, policy=toolmend.Policy(missing_result="remove_call"))
    assert [c["id"] for c in removed.messages[1]["tool_calls"]] == ["call_1"]
    assert [c.code for c in removed.changes] == ["removed_call"]
    lone = [user("q"), calls("call_1"), user("next")]
    gone = toolmend.repair(lone, policy=toolmend.Policy(missing_result="remove_call"))
    assert [m["role"] for m in gone.messages] == ["user", "user"]


def test_frontier_kept_while_tools_run() -> None:
    history = [user("q"), calls("call_1", "call_2"), result("call_1")]
    keep = toolmend.Policy(frontier="keep")
    kept = toolmend.repair(history, policy=keep)
    assert kept.messages == history
    assert kept.changes == ()
    assert [p.code for p in kept.problems_left] == ["missing_result"]
    answered = toolmend.sanitize(history)
    assert answered[-1]["tool_call_id"] == "call_2"


def test_id_reused_every_turn_is_matched_within_its_turn() -> None:
    history = [
        user("a"),
        calls("call_0"),
        result("call_0", "first"),
        assistant("x"),
        user("b"),
        calls("call_0"),
        user("typing"),
        result("call_0", "second"),
    ]
    fixed = toolmend.sanitize(history)
    assert [m.get("content") for m in fixed][5:] == [None, "second", "typing"]
    assert fixed[2]["content"] == "first"


def test_later_real_result_wins_over_aborted_stub() -> None:
    history = [
        user("q"),
        calls("call_1"),
        result("call_1", "Tool call was aborted."),
        user("retry?"),
        result("call_1", "REAL"),
    ]
    fixed = toolmend.repair(history)
    assert fixed.messages[2]["content"] == "REAL"
    assert "dropped_duplicate_result" in [c.code for c in fixed.changes]
    assert toolmend.check(fixed.messages) == []


def test_missing_tool_call_id_filled_when_one_call_is_open() -> None:
    history = [user("q"), calls("call_1"), result(None)]
    fixed = toolmend.repair(history)
    assert fixed.messages[2]["tool_call_id"] == "call_1"
    assert [c.code for c in fixed.changes] == ["filled_result_id"]


def test_malformed_calls_put_in_canonical_shape() -> None:
    history = [
        user("q"),
        assistant(
            None,
            tool_calls=[
                {"id": "c1", "name": "f", "arguments": {"a": 1}},
                {"id": "c2", "function": {"name": "g", "arguments": "{}"}},
            ],
        ),
        result("c1"),
        result("c2"),
    ]
    fixed = toolmend.sanitize(history)
    assert fixed[1]["tool_calls"] == [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}},
        {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}},
    ]
    assert history[1]["tool_calls"][0] == {"id": "c1", "name": "f", "arguments": {"a": 1}}


def test_mistral_ids_rewritten_consistently_without_collisions() -> None:
    history = [
        user("q"),
        calls("call_0fypS1hVX", "call_0fypS1hVY"),
        result("call_0fypS1hVY"),
        result("call_0fypS1hVX"),
        assistant("done"),
        user(),
    ]
    fixed = toolmend.sanitize(history, provider="mistral")
    ids = [c["id"] for c in fixed[1]["tool_calls"]]
    assert len(set(ids)) == 2 and all(len(i) == 9 and i.isalnum() for i in ids)
    assert [fixed[2]["tool_call_id"], fixed[3]["tool_call_id"]] == [ids[1], ids[0]]
    assert toolmend.sanitize(history, provider="mistral") == fixed  # deterministic


def test_openai_sdk_message_objects_are_read_and_not_mutated() -> None:
    from openai.types.chat import ChatCompletionMessage

    sdk_message = ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": "{}"},
                }
            ],
        }
    )
    before = sdk_message.model_dump()
    valid = [user("q"), sdk_message, result("call_1")]
    assert toolmend.check(valid) == []
    assert toolmend.sanitize(valid) is valid
    broken = [user("q"), sdk_message, user("hello?"), result("call_1")]
    fixed = toolmend.sanitize(broken)
    assert fixed[1] is sdk_message
    assert toolmend.check(fixed) == []
    needs_edit = [user("q"), sdk_message]
    answered = toolmend.sanitize(needs_edit, provider="deepseek-reasoner")
    assert isinstance(answered[1], dict) and answered[1]["reasoning_content"] == ""
    assert sdk_message.model_dump() == before


class AttrMessage:
    """A ``litellm.Message``-like object: attributes, no mapping interface."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


def test_attribute_objects_are_read() -> None:
    history = [
        AttrMessage(role="user", content="q"),
        AttrMessage(role="tool", tool_call_id="call_1", content="r"),
    ]
    problems = toolmend.check(history, provider="deepseek")
    assert [p.code for p in problems] == ["orphan_result"]
    # the orphan is the newest input: kept as user text (issue 32, case 2)
    assert toolmend.sanitize(history, provider="deepseek") == [
        history[0],
        {"role": "user", "content": "[tool result call_1 (tool)]\nr"},
    ]


@pytest.mark.parametrize(
    ("messages", "error", "words"),
    [
        (None, toolmend.InvalidHistoryError, "got NoneType"),
        (42, toolmend.InvalidHistoryError, "got int"),
        ([user(), 42], toolmend.InvalidMessageError, "message 1"),
        ([user(), {"role": 7}], toolmend.InvalidMessageError, "message 1, field 'role'"),
        (
            [user(), {"role": "tool", "tool_call_id": 5}],
            toolmend.InvalidMessageError,
            "field 'tool_call_id'",
        ),
        (
            [user(), {"role": "assistant", "tool_calls": [{"id": 3, "function": {}}]}],
            toolmend.InvalidMessageError,
            "field 'tool_calls[0].id'",
        ),
    ],
)
def test_bad_input_gets_a_clear_error(messages: Any, error: type[Exception], words: str) -> None:
    with pytest.raises(error) as caught:
        toolmend.check(messages)
    assert words in str(caught.value)
    assert isinstance(caught.value, (ValueError, TypeError))


def test_a_bare_string_is_a_history_only_where_the_format_takes_one() -> None:
    assert toolmend.check("hello") == []  # one user message, as the Responses API reads it
    with pytest.raises(toolmend.InvalidHistoryError):
        toolmend.check("hello", format="openai")


def test_unknown_provider_suggests_a_name() -> None:
    with pytest.raises(toolmend.UnknownNameError, match="Did you mean 'deepseek'"):
        toolmend.check([user()], provider="deepseak")
    with pytest.raises(ValueError, match="Unknown format"):
        toolmend.check([user()], format="opeani")


@pytest.mark.slow
def test_core_imports_no_sdk() -> None:
    code = (
        "import sys, toolmend; toolmend.repair([{'role': 'tool', 'content': 'x'}]); "
        "bad = [m for m in ('openai', 'anthropic', 'google.genai', 'litellm', 'langchain_core', "
        "'wrapt', 'pydantic') if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("provider", ["mistral", "hf-mistral", "bedrock", "gemini"])
def test_an_orphan_beside_an_empty_assistant_message_is_kept_as_text(provider: str) -> None:
    """An orphan result and an empty assistant message are the whole history: the profile
    drops the empty message as a shape, after the orphan was dropped, which left nothing to
    send and the result's text lost (found by a fuzz run, Mistral). The orphan is kept as
    user text, as for a history of nothing but orphans."""
    history = [result("call_000000000000000000000000", text="result 2"), assistant(None)]
    fixed = toolmend.repair(history, provider=provider)
    assert [c.code for c in fixed.changes] == ["orphan_result_to_text", "dropped_empty_message"]
    assert [m["role"] for m in fixed.messages] == ["user"]
    assert "result 2" in fixed.messages[0]["content"]
    assert fixed.problems_left == ()
    assert toolmend.check(fixed.messages, provider=provider) == []
    assert toolmend.repair(fixed.messages, provider=provider).messages is fixed.messages


@pytest.mark.parametrize("provider", ["bedrock", "anthropic", "anthropic-no-prefill"])
@pytest.mark.parametrize("last", [None, "", "missing"])
def test_an_orphan_beside_only_a_system_prompt_is_kept_as_text(
    provider: str, last: str | None
) -> None:
    """A system prompt, an orphan result and (perhaps) an empty assistant message: a profile
    that sends the system prompt apart has nothing else to send once the orphan is dropped
    (``empty_history`` was left, the result's text lost; a one-pass property found it,
    Bedrock). The orphan is kept as user text in its place, as when it is all there is."""
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "be brief"},
        result("call_000000000000000000000000", text="result 2"),
    ]
    if last != "missing":
        history.append(assistant(last))
    fixed = toolmend.repair(history, provider=provider)
    assert "orphan_result_to_text" in [c.code for c in fixed.changes]
    assert [m["role"] for m in fixed.messages][:2] == ["system", "user"]
    assert "result 2" in fixed.messages[1]["content"]
    assert fixed.problems_left == ()
    assert toolmend.check(fixed.messages, provider=provider) == []
    assert toolmend.repair(fixed.messages, provider=provider).messages is fixed.messages
