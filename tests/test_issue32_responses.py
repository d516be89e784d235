"""Issue 32, cases 3 and 9: the Responses API's reasoning rule and its calls other than
``function_call``, judged and repaired, and enforced by the strict server through the real
openai SDK.

Case 3: a reasoning model's ``function_call`` sent by its server ``fc_`` id without the
reasoning item it was produced with is refused (``Item 'fc_...' of type 'function_call' was
provided without its required 'reasoning' item: 'rs_...'``); the repair removes the item id and
keeps the call's ``call_id``, so its output still answers it. Case 9: ``shell_call``,
``local_shell_call``, ``computer_call``, ``apply_patch_call`` and ``custom_tool_call`` items
left without their outputs (``No tool output found for shell call ...``), and outputs whose
call is gone.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolmend
from toolmend.formats import _openai_responses as responses_format
from toolmend.profiles import get_profile
from toolmend.testing import StrictProviderServer

REASONING = "openai-responses-reasoning"
PLAIN = "openai-responses"


def user(text: str = "hello") -> dict[str, Any]:
    return {"role": "user", "content": text}


def fc(call_id: str, item_id: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "function_call",
        "call_id": call_id,
        "name": "get_weather",
        "arguments": "{}",
    }
    if item_id is not None:
        item["id"] = item_id
    return item


def out(call_id: str, text: str = "21 C") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def rs(item_id: str = "rs_1") -> dict[str, Any]:
    return {"type": "reasoning", "id": item_id, "summary": []}


# --- case 3: a call parted from its reasoning item ------------------------------------------

# a store kept the calls of a gpt-5 turn and lost the reasoning item before them
# (cline/cline#12242, mastra-ai/mastra#8738: the next request is refused)
PARTED = [
    user("Weather in Paris and Rome?"),
    fc("call_a", "fc_0a4d512680f81369006a5364c645f481a1a979134e6d548de1"),
    fc("call_b", "fc_0a4d512680f81369006a5364c645f481a1a979134e6d548de2"),
    out("call_a"),
    out("call_b", "19 C"),
    user("Thanks. And tomorrow?"),
]
PARTED_ERROR = (
    "Item 'fc_0a4d512680f81369006a5364c645f481a1a979134e6d548de1' of type 'function_call' was "
    "provided without its required 'reasoning' item: 'rs_...'."
)


@pytest.mark.parametrize(
    ("model", "profile"),
    [
        ("gpt-5.2", REASONING),
        ("o3", REASONING),
        ("o4-mini", REASONING),
        ("openai/gpt-5-codex", REASONING),
        ("codex-mini-latest", REASONING),
        ("gpt-4.1", PLAIN),
        ("gpt-4o", PLAIN),
        (None, PLAIN),
    ],
)
def test_a_reasoning_model_picks_the_reasoning_variant(model: str | None, profile: str) -> None:
    assert toolmend.request_profile(PLAIN, model=model) == profile


def test_a_call_without_its_reasoning_item_is_reported_with_the_api_text() -> None:
    problems = toolmend.check(PARTED, provider=REASONING)
    assert [(p.code, p.index) for p in problems] == [
        ("call_without_reasoning", 1),
        ("call_without_reasoning", 2),
    ]
    assert problems[0].provider_error == PARTED_ERROR
    assert problems[0].rule == "OR-CALL-WITHOUT-REASONING"
    # other models' calls carry fc_ ids with no reasoning item at all: nothing to say
    assert toolmend.check(PARTED, provider=PLAIN) == []
    assert toolmend.sanitize(PARTED, provider=PLAIN) is PARTED


def test_the_repair_unties_the_call_and_keeps_its_pairing() -> None:
    before = copy.deepcopy(PARTED)
    fixed = toolmend.repair(PARTED, provider=REASONING)
    assert before == PARTED  # the caller's items are not touched
    assert [(c.code, c.index) for c in fixed.changes] == [
        ("removed_item_id", 1),
        ("removed_item_id", 2),
    ]
    assert fixed.changes[0].ids == ("fc_0a4d512680f81369006a5364c645f481a1a979134e6d548de1",)
    assert fixed.messages[1] == fc("call_a")  # call_id, name and arguments kept
    assert fixed.messages[2] == fc("call_b")
    assert fixed.messages[3] is PARTED[3] and fixed.messages[4] is PARTED[4]
    assert fixed.problems_left == ()
    assert toolmend.sanitize(fixed.messages, provider=REASONING) is fixed.messages


def test_a_call_after_its_reasoning_item_is_left_alone() -> None:
    history = [
        user(),
        rs(),
        {"type": "message", "role": "assistant", "content": "Let me look.", "id": "msg_1"},
        fc("call_1", "fc_1"),
        fc("call_2", "fc_2"),
        out("call_1"),
        out("call_2"),
        user("again"),
        rs("rs_2"),
        fc("call_3", "fc_3"),
        out("call_3"),
    ]
    assert toolmend.check(history, provider=REASONING) == []
    assert toolmend.sanitize(history, provider=REASONING) is history
    # calls without an item id are new items the API ties to nothing
    bare = [user(), fc("call_1"), out("call_1")]
    assert toolmend.sanitize(bare, provider=REASONING) is bare


def test_a_call_whose_reasoning_item_the_repair_drops_is_untied_too() -> None:
    # the reasoning item's id is refused (not rs_), so the repair drops it: its call is then
    # parted from it as surely as if the input had lost it
    history = [user(), rs("reasoning 1"), fc("call_1", "fc_1"), out("call_1")]
    assert {p.code for p in toolmend.check(history, provider=REASONING)} == {"item_id_charset"}
    fixed = toolmend.repair(history, provider=REASONING)
    assert [c.code for c in fixed.changes] == ["dropped_reasoning", "removed_item_id"]
    assert fixed.messages == [user(), fc("call_1"), out("call_1")]
    assert fixed.problems_left == ()


_ITEMS = st.lists(st.sampled_from(["user", "rs", "fc", "fc-bare", "out", "assistant"]), max_size=12)


@settings(max_examples=150, deadline=None)
@given(_ITEMS)
def test_repairs_for_reasoning_models_settle_and_keep_every_call(kinds: list[str]) -> None:
    history: list[dict[str, Any]] = []
    calls = 0
    for n, kind in enumerate(kinds):
        if kind == "user":
            history.append(user(f"u{n}"))
        elif kind == "rs":
            history.append(rs(f"rs_{n}"))
        elif kind in ("fc", "fc-bare"):
            calls += 1
            history.append(fc(f"call_{n}", f"fc_{n}" if kind == "fc" else None))
        elif kind == "out" and calls:
            history.append(out(f"call_{n - 1}"))
        elif kind == "assistant":
            history.append({"type": "message", "role": "assistant", "content": f"a{n}"})
    profile = get_profile(REASONING)
    if responses_format.quick_valid(history, profile):  # the one-pass test vouches only rightly
        assert toolmend.check(history, provider=REASONING) == []
    fixed = toolmend.repair(history, provider=REASONING)
    assert fixed.problems_left == ()
    assert toolmend.sanitize(fixed.messages, provider=REASONING) is fixed.messages
    # and the repaired history takes the one-pass path next time
    assert responses_format.quick_valid(fixed.messages, profile) or not fixed.messages
    # the repair for the reasoning rule removes ids, never calls or their call ids
    untied = [c for c in fixed.changes if c.detail.startswith("function_call id")]
    kept = {m.get("call_id") for m in fixed.messages if m.get("type") == "function_call"}
    for change in untied:
        assert history[change.index]["call_id"] in kept


# --- case 9: calls other than function_call -------------------------------------------------

SHELL = {"type": "shell_call", "call_id": "call_sh", "action": {"commands": ["ls"]}}
LOCAL_SHELL = {
    "type": "local_shell_call",
    "id": "lsh_1",
    "call_id": "call_lsh",
    "action": {"type": "exec", "command": ["ls"], "env": {}},
    "status": "completed",
}
COMPUTER = {
    "type": "computer_call",
    "id": "cu_1",
    "call_id": "call_cu",
    "action": {"type": "screenshot"},
    "pending_safety_checks": [],
    "status": "completed",
}
PATCH = {
    "type": "apply_patch_call",
    "call_id": "call_ap",
    "operation": {"type": "delete_file", "path": "old.txt"},
    "status": "completed",
}
CUSTOM = {"type": "custom_tool_call", "call_id": "call_ct", "name": "grammar", "input": "x=1"}


@pytest.mark.parametrize(
    ("call", "error", "change", "answer"),
    [
        (SHELL, "No tool output found for shell call call_sh.", "removed_call", None),
        (LOCAL_SHELL, "No tool output found for local shell call call_lsh.", "removed_call", None),
        (COMPUTER, "No tool output found for computer call call_cu.", "removed_call", None),
        (
            PATCH,
            "No tool output found for apply patch call call_ap.",
            "answered_missing_call",
            {
                "type": "apply_patch_call_output",
                "call_id": "call_ap",
                "status": "failed",
                "output": "tool call had no recorded result",
            },
        ),
        (
            CUSTOM,
            "No tool output found for custom tool call call_ct.",
            "answered_missing_call",
            {
                "type": "custom_tool_call_output",
                "call_id": "call_ct",
                "output": "tool call had no recorded result",
            },
        ),
    ],
)
def test_an_unanswered_call_is_answered_or_dropped(
    call: dict[str, Any], error: str, change: str, answer: dict[str, Any] | None
) -> None:
    history = [user(), rs(), call, user("next")]
    problems = toolmend.check(history)
    assert [(p.code, p.index, p.provider_error) for p in problems] == [
        ("missing_tool_output", 2, error)
    ]
    fixed = toolmend.repair(history)
    assert change in {c.code for c in fixed.changes}
    if answer is None:
        # the call goes, and the reasoning item that belonged to it with it
        assert fixed.messages == [user(), user("next")]
        assert {c.code for c in fixed.changes} == {"removed_call", "dropped_reasoning"}
    else:
        assert fixed.messages == [user(), rs(), call, answer, user("next")]
    assert fixed.problems_left == ()
    assert toolmend.sanitize(fixed.messages) is fixed.messages


@pytest.mark.parametrize("call", [SHELL, LOCAL_SHELL, COMPUTER, PATCH, CUSTOM])
def test_an_answered_call_passes_untouched(call: dict[str, Any]) -> None:
    output_type = call["type"] + "_output"
    answer: dict[str, Any] = {"type": output_type, "call_id": call["call_id"], "output": "ok"}
    history = [user(), call, answer, user("next")]
    assert toolmend.check(history) == []
    assert toolmend.sanitize(history) is history
    # an output of another type does not answer it
    other = {**answer, "type": "function_call_output"}
    assert "missing_tool_output" in {p.code for p in toolmend.check([user(), call, other])}


def test_the_sdk_local_shell_output_naming_the_call_by_id_answers_it() -> None:
    answer = {"type": "local_shell_call_output", "id": "call_lsh", "output": "{}"}
    assert toolmend.check([user(), LOCAL_SHELL, answer]) == []


def test_an_output_without_its_call_is_dropped_or_kept_as_text() -> None:
    orphan = {
        "type": "shell_call_output",
        "call_id": "call_gone",
        "output": [{"stdout": "a.txt", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}],
    }
    history = [user(), orphan, user("next")]
    problems = toolmend.check(history)
    assert [p.provider_error for p in problems] == [
        "No tool call found for shell call output with call_id call_gone."
    ]
    assert toolmend.repair(history).messages == [user(), user("next")]
    kept = toolmend.repair(history, policy=toolmend.Policy(orphan_result="text"))
    assert kept.messages[1]["role"] == "user"
    assert kept.messages[1]["content"].startswith("[shell_call_output call_gone]\n")
    assert "a.txt" in kept.messages[1]["content"]  # the output's content survives as text
    assert kept.problems_left == ()


def test_policies_remove_calls_and_keep_the_live_frontier() -> None:
    history = [user(), CUSTOM, user("next"), PATCH]
    removed = toolmend.repair(history, policy=toolmend.Policy(missing_result="remove_call"))
    assert removed.messages == [user(), user("next")]
    live = toolmend.repair(history, policy=toolmend.Policy(frontier="keep"))
    # the trailing call's tool may still be running: only the earlier call is answered
    assert live.messages[:4] == [user(), CUSTOM, live.messages[2], user("next")]
    assert live.messages[4:] == [PATCH]


# --- the strict server, through the openai SDK ----------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[StrictProviderServer]:
    with StrictProviderServer() as running:
        yield running


@pytest.fixture
def client(server: StrictProviderServer) -> openai.OpenAI:
    server.clear()
    return openai.OpenAI(base_url=server.openai_base_url, api_key="sk-test", max_retries=0)


def test_the_server_refuses_a_parted_call_for_a_reasoning_model_only(
    server: StrictProviderServer, client: openai.OpenAI
) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model="gpt-5.2", input=PARTED)  # type: ignore[arg-type]
    assert refused.value.body["message"] == PARTED_ERROR  # type: ignore[index]
    assert server.last_request.provider == REASONING
    fixed = toolmend.sanitize(PARTED, provider=toolmend.request_profile(PLAIN, model="gpt-5.2"))
    client.responses.create(model="gpt-5.2", input=fixed)
    assert server.last_request.accepted
    client.responses.create(model="gpt-4.1", input=PARTED)  # type: ignore[arg-type]
    assert server.last_request.accepted and server.last_request.provider == PLAIN


def test_the_server_refuses_an_unanswered_shell_call(
    server: StrictProviderServer, client: openai.OpenAI
) -> None:
    history = [user(), SHELL, CUSTOM, user("next")]
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model="gpt-4.1", input=history)  # type: ignore[arg-type]
    assert refused.value.body["message"] == "No tool output found for shell call call_sh."  # type: ignore[index]
    client.responses.create(model="gpt-4.1", input=toolmend.sanitize(history))
    assert server.last_request.accepted


_TOOL_KINDS = ["shell_call", "local_shell_call", "computer_call", "apply_patch_call"]
_TOOL_ITEMS = st.lists(
    st.tuples(
        st.sampled_from(["user", "call", "output", "rs"]),
        st.sampled_from([*_TOOL_KINDS, "custom_tool_call"]),
        st.integers(0, 3),
    ),
    max_size=10,
)


@settings(max_examples=150, deadline=None)
@given(_TOOL_ITEMS, st.sampled_from(["repair", "keep", "text"]))
def test_other_calls_settle_and_real_outputs_stay(
    steps: list[tuple[str, str, int]], policy_name: str
) -> None:
    history: list[dict[str, Any]] = [user("start")]
    for n, (what, kind, number) in enumerate(steps):
        if what == "user":
            history.append(user(f"u{n}"))
        elif what == "rs":
            history.append(rs(f"rs_{n}"))
        elif what == "call":
            history.append({"type": kind, "call_id": f"c{number}"})
        else:
            history.append({"type": f"{kind}_output", "call_id": f"c{number}", "output": f"o{n}"})
    policy = {
        "repair": toolmend.Policy(),
        "keep": toolmend.Policy(frontier="keep"),
        "text": toolmend.Policy(orphan_result="text"),
    }[policy_name]
    fixed = toolmend.repair(history, policy=policy)
    again = toolmend.repair(fixed.messages, policy=policy)
    assert again.messages is fixed.messages  # idempotent
    if policy_name != "keep":
        assert fixed.problems_left == ()
    # an output that answers a call before it is never dropped
    for index, item in enumerate(history):
        kind = str(item.get("type", ""))
        if not kind.endswith("_output"):
            continue
        call_type = kind.removesuffix("_output")
        answers = any(
            earlier.get("type") == call_type and earlier.get("call_id") == item["call_id"]
            for earlier in history[:index]
        )
        if answers:
            assert item in fixed.messages
