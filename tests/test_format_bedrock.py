"""The bedrock format and profile (Converse ``messages``): one breaking and one passing history
per rule, with the exact provider error text and the repair's change codes.

Property tests over random histories live in ``test_block_properties.py``.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

import toolmend
from toolmend.formats import _bedrock as bedrock_format
from toolmend.formats import detect
from toolmend.profiles import get_profile

from support.converse import assistant, text, user

PROVIDER = "bedrock"


def use(call_id: Any, name: str = "get_weather") -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "input": {"city": "Paris"}}
    if call_id is not None:
        body["toolUseId"] = call_id
    return {"toolUse": body}


def result(call_id: Any, value: str = "21 C") -> dict[str, Any]:
    body: dict[str, Any] = {"content": [{"text": value}], "status": "success"}
    if call_id is not None:
        body["toolUseId"] = call_id
    return {"toolResult": body}


EXCESS = (
    "The number of toolResult blocks at messages.{i}.content exceeds the number of toolUse "
    "blocks of previous turn."
)
ALTERNATE = (
    "A conversation must alternate between user and assistant roles. Make sure the conversation "
    "alternates between user and assistant roles and try again."
)


def id_error(index: int, slot: int, value: str, part: str) -> str:
    return (
        f"1 validation error detected: Value '{value}' at 'messages.{index}.member.content.{slot}"
        f".member.{part}' failed to satisfy constraint: Member must satisfy regular expression "
        "pattern: [a-zA-Z0-9_.:-]+ and have length between 1 and 64"
    )


CASES: list[tuple[str, list[Any], list[tuple[str, int, str]], set[str], list[Any]]] = [
    (
        "conversation-starts-with-the-assistant",
        [assistant(text("Hello! How can I help?")), user(text("Weather?"))],
        [
            (
                "first_not_user",
                0,
                "A conversation must start with a user message. Try again with a conversation "
                "that starts with a user message.",
            )
        ],
        {"inserted_message"},
        [
            user(text("Continue.")),
            assistant(text("Hello! How can I help?")),
            user(text("Weather?")),
        ],
    ),
    (
        "two-user-messages-in-a-row",
        [user(text("Hi")), user(text("Weather?"))],
        [("roles_not_alternating", 1, ALTERNATE)],
        {"merged_messages"},
        [user(text("Hi"), text("Weather?"))],
    ),
    (
        "results-split-over-two-messages",
        [
            user(text("Weather in Paris and Oslo?")),
            assistant(use("t1"), use("t2")),
            user(result("t1")),
            user(result("t2", "3 C")),
        ],
        [
            (
                "missing_result",
                2,
                "Expected toolResult blocks at messages.2.content for the following Ids: t2",
            ),
            ("orphan_result", 3, EXCESS.format(i=3)),
            ("roles_not_alternating", 3, ALTERNATE),
        ],
        {"moved_result"},
        [
            user(text("Weather in Paris and Oslo?")),
            assistant(use("t1"), use("t2")),
            user(result("t1"), result("t2", "3 C")),
        ],
    ),
    (
        "text-beside-the-results",
        [user(text("Weather?")), assistant(use("t1")), user(result("t1"), text("thanks"))],
        [
            (
                "result_with_text",
                2,
                "messages.2.content: Conversation blocks and tool result blocks cannot be "
                "provided in the same turn.",
            )
        ],
        {"moved_result", "inserted_message"},
        [
            user(text("Weather?")),
            assistant(use("t1")),
            user(result("t1")),
            assistant(text("Tool results received.")),
            user(text("thanks")),
        ],
    ),
    (
        "result-for-an-unknown-id",
        [user(text("Weather?")), assistant(use("t1")), user(result("t1"), result("t9"))],
        [("unknown_result_id", 2, EXCESS.format(i=2))],
        {"dropped_orphan_result"},
        [user(text("Weather?")), assistant(use("t1")), user(result("t1"))],
    ),
    (
        "duplicate-result",
        [user(text("Weather?")), assistant(use("t1")), user(result("t1"), result("t1"))],
        [("duplicate_result", 2, EXCESS.format(i=2))],
        {"dropped_duplicate_result"},
        [user(text("Weather?")), assistant(use("t1")), user(result("t1"))],
    ),
    (
        "call-without-result",
        [user(text("Weather?")), assistant(use("t1")), user(text("hello?"))],
        [
            (
                "missing_result",
                2,
                "Expected toolResult blocks at messages.2.content for the following Ids: t1",
            )
        ],
        {"answered_missing_call", "inserted_message"},
        [user(text("Weather?")), assistant(use("t1")), user(result("t1"))],
    ),
    (
        "tool-use-id-outside-the-pattern",
        [user(text("Weather?")), assistant(use("call#1")), user(result("call#1"))],
        [
            ("call_id_format", 1, id_error(1, 0, "call#1", "toolUse.toolUseId")),
            ("result_id_format", 2, id_error(2, 0, "call#1", "toolResult.toolUseId")),
        ],
        {"rewrote_call_id"},
        [user(text("Weather?")), assistant(use("tooluse_x1.a:b")), user(result("tooluse_x1.a:b"))],
    ),
    (
        "tool-use-id-too-long",
        [user(text("Weather?")), assistant(use("t" * 65)), user(result("t" * 65))],
        [
            ("call_id_format", 1, id_error(1, 0, "t" * 65, "toolUse.toolUseId")),
            ("result_id_format", 2, id_error(2, 0, "t" * 65, "toolResult.toolUseId")),
        ],
        {"rewrote_call_id"},
        [user(text("Weather?")), assistant(use("t" * 64)), user(result("t" * 64))],
    ),
]


@pytest.mark.parametrize(
    ("broken", "expected", "changes", "passing"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_each_rule_breaks_and_is_repaired(
    broken: list[Any],
    expected: list[tuple[str, int, str]],
    changes: set[str],
    passing: list[Any],
) -> None:
    before = copy.deepcopy(broken)
    problems = toolmend.check(broken, provider=PROVIDER)
    assert [(p.code, p.index, p.provider_error) for p in problems] == expected
    assert all(p.rule.startswith("BR-") for p in problems)
    fixed = toolmend.repair(broken, provider=PROVIDER)
    assert broken == before, "the input was mutated"
    assert changes <= {change.code for change in fixed.changes}
    assert fixed.problems_left == ()
    assert toolmend.check(fixed.messages, provider=PROVIDER) == []
    assert toolmend.sanitize(fixed.messages, provider=PROVIDER) is fixed.messages
    assert toolmend.check(passing, provider=PROVIDER) == []
    assert toolmend.sanitize(passing, provider=PROVIDER) is passing


def test_detected_by_its_blocks() -> None:
    assert detect([user(text("Hi"))]).name == "bedrock"


def test_text_beside_results_goes_behind_the_fixed_bridge() -> None:
    fixed = toolmend.sanitize(CASES[3][1], provider=PROVIDER)
    assert fixed == CASES[3][4]
    assert fixed[2]["content"][0] is CASES[3][1][2]["content"][0]


def test_placeholder_result_has_error_status() -> None:
    fixed = toolmend.sanitize(CASES[6][1], provider=PROVIDER)
    assert fixed[2] == user(
        {
            "toolResult": {
                "toolUseId": "t1",
                "content": [{"text": toolmend.PLACEHOLDER_TEXT}],
                "status": "error",
            }
        }
    )
    assert fixed[3:] == [assistant(text("Tool results received.")), user(text("hello?"))]


def test_strict_only_rules_are_recorded_not_run() -> None:
    profile = get_profile(PROVIDER)
    # text beside toolUse is refused by Llama and Mistral models only (bedrock-tools-alone)
    assert "call_with_text" in profile.strict_checks
    history = [user(text("Weather?")), assistant(text("Checking."), use("t1")), user(result("t1"))]
    assert toolmend.check(history, provider=PROVIDER) == []


def test_bad_input_names_the_message_and_field() -> None:
    with pytest.raises(toolmend.InvalidMessageError, match="message 1, field 'content'"):
        toolmend.check([user(text("q")), {"role": "assistant", "content": "x"}], format="bedrock")


def test_the_one_pass_scan_vouches_for_valid_and_finds_the_damaged_ranges() -> None:
    profile = get_profile(PROVIDER)

    def turn(call_id: str) -> list[dict[str, Any]]:
        return [
            user(text("Weather?")),
            assistant(use(call_id)),
            user(result(call_id)),
            assistant(text("21")),
        ]

    valid = [*turn("t1"), *turn("t2"), user(text("Thanks"))]
    assert bedrock_format.quick_valid(valid, profile)
    assert bedrock_format.dirty_spans(valid, profile) == []
    unanswered = [user(text("?")), assistant(use("t2")), user(text("hm")), assistant(text("ok"))]
    broken = [*turn("t1"), *unanswered, *turn("t3")]
    assert not bedrock_format.quick_valid(broken, profile)
    assert bedrock_format.dirty_spans(broken, profile) == [(4, 8)]  # from the fresh user turn
    orphan = [user(text("?")), assistant(text("ok")), user(result("t1")), assistant(text("ok"))]
    stray = [*turn("t1"), *orphan, *turn("t3")]
    assert bedrock_format.dirty_spans(stray, profile) == [(0, 8)]  # back to the call of t1
    assert bedrock_format.dirty_spans([*turn("t1"), *orphan, *turn("t1")], profile) == [(0, 8)]
    early = [*orphan, *turn("t1")]  # the result comes before its call: the whole path decides
    assert bedrock_format.dirty_spans(early, profile) is None
    assert not bedrock_format.quick_valid([assistant(text("hi"))], profile)
    two_keys = [{"role": "user", "content": [{"text": "a", "x": 1}]}]
    assert bedrock_format.dirty_spans(two_keys, profile) is None
    assert not bedrock_format.quick_valid(two_keys, profile)
