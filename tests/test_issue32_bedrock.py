"""Issue 32, case 4: Bedrock Converse rules from public reports, judged and repaired, and
enforced by the strict server through boto3's ``bedrock-runtime`` client.

(a) a blank text inside a ``toolResult`` (``messages: text content blocks must be non-empty``,
a tool that printed nothing) and a blank text block anywhere; (b) a ``toolUse`` block in a user
message (``User messages cannot contain tool uses. Please remove the tool uses and try
again.``, a summarizer or a repair put it there), relocated into an assistant message with its
result still answering it; (c) text beside ``toolUse`` in one assistant turn, refused by Llama
and Mistral models only (``Conversation blocks and tool use blocks cannot be provided in the
same turn.``): the variant ``bedrock-tools-alone`` the model id picks.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolmend
from toolmend import formats
from toolmend._policy import Policy
from toolmend.formats import _bedrock as bedrock_format
from toolmend.formats import _openai_chat as openai_chat
from toolmend.profiles import get_profile
from toolmend.testing import StrictProviderServer

from support import judges
from support.converse import assistant, converse_client, text, user
from support.whole_path import whole_repair

ALONE = "bedrock-tools-alone"
LLAMA = "us.meta.llama3-1-70b-instruct-v1:0"
CLAUDE = "anthropic.claude-3-5-sonnet-20240620-v1:0"


def use(call_id: str) -> dict[str, Any]:
    return {"toolUse": {"toolUseId": call_id, "name": "get_weather", "input": {"city": "Paris"}}}


def result(call_id: str, *parts: Any) -> dict[str, Any]:
    return {"toolResult": {"toolUseId": call_id, "content": list(parts or [text("21 C")])}}


# --- (a) blank texts ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("blank", "error"),
    [
        ("", "messages: text content blocks must be non-empty"),
        ("  \n", "messages: text content blocks must contain non-whitespace text"),
    ],
)
def test_a_blank_text_inside_a_tool_result(blank: str, error: str) -> None:
    # hermes-agent#55092: a tool returned "" and every later request of the session failed
    history = [user(text("Run it")), assistant(use("t1")), user(result("t1", text(blank)))]
    problems = toolmend.check(history, provider="bedrock")
    assert [(p.code, p.index, p.provider_error) for p in problems] == [
        ("result_text_blank", 2, error)
    ]
    before = copy.deepcopy(history)
    fixed = toolmend.repair(history, provider="bedrock")
    assert history == before
    assert [c.code for c in fixed.changes] == ["dropped_empty_block"]
    assert fixed.messages[2] == user(result("t1", text("(empty)")))
    assert fixed.messages[:2] == history[:2] and fixed.messages[0] is history[0]
    assert fixed.problems_left == ()
    assert toolmend.sanitize(fixed.messages, provider="bedrock") is fixed.messages


def test_other_parts_of_a_tool_result_stay_and_only_the_blank_text_goes() -> None:
    data = {"json": {"rows": 0}}
    history = [user(text("Run it")), assistant(use("t1")), user(result("t1", text(""), data))]
    fixed = toolmend.repair(history, provider="bedrock")
    assert fixed.messages[2] == user(result("t1", data))
    assert fixed.problems_left == ()


def test_a_blank_text_block_is_dropped() -> None:
    history = [
        user(text("Weather?")),
        assistant(text(" "), use("t1")),
        user(result("t1")),
        assistant(text("")),
    ]
    problems = toolmend.check(history, provider="bedrock")
    assert [(p.code, p.index) for p in problems] == [("text_blank", 1), ("text_blank", 3)]
    assert problems[0].provider_error == (
        "The text field in the ContentBlock object at messages.1.content.0 is blank. Add text to "
        "the text field, and try again."
    )
    fixed = toolmend.repair(history, provider="bedrock")
    assert fixed.messages == [user(text("Weather?")), assistant(use("t1")), user(result("t1"))]
    assert fixed.problems_left == ()


# --- (b) a toolUse in a user message ------------------------------------------------------------

# strands-agents/sdk-python#1160: the summarizer turned an assistant reply with a toolUse into
# the user message that opens the history
SUMMARIZED = [
    user(text("Summary of the conversation so far."), use("tooluse_a")),
    user(result("tooluse_a", text("page loaded"))),
    assistant(text("The page is open.")),
    user(text("Now click login.")),
]


def test_a_tool_use_in_a_user_message_moves_and_keeps_its_result() -> None:
    problems = toolmend.check(SUMMARIZED, provider="bedrock")
    assert problems[0].code == "misplaced_part" and problems[0].index == 0
    assert problems[0].provider_error == (
        "User messages cannot contain tool uses. Please remove the tool uses and try again."
    )
    before = copy.deepcopy(SUMMARIZED)
    fixed = toolmend.repair(SUMMARIZED, provider="bedrock")
    assert before == SUMMARIZED
    assert fixed.messages == [
        user(text("Summary of the conversation so far.")),
        assistant(use("tooluse_a")),
        user(result("tooluse_a", text("page loaded"))),  # the real result, still answering it
        assistant(text("The page is open.")),
        user(text("Now click login.")),
    ]
    assert fixed.messages[2] is SUMMARIZED[1]
    assert [c.code for c in fixed.changes] == ["moved_message"]
    assert fixed.problems_left == ()
    assert toolmend.sanitize(fixed.messages, provider="bedrock") is fixed.messages


def test_a_tool_use_and_its_result_in_one_user_message() -> None:
    # strands-agents/sdk-python#2214: a repair put the call and its synthetic result together
    history = [
        user(text("Check the weather")),
        assistant(text("On it.")),
        user(use("t1"), result("t1", text("Tool was interrupted.")), text("Any news?")),
    ]
    fixed = toolmend.repair(history, provider="bedrock")
    # the user's text stays in the user message; the call follows it in an assistant message
    # of its own, answered by its own result right after
    assert fixed.messages[2:] == [
        user(text("Any news?")),
        assistant(use("t1")),
        user(result("t1", text("Tool was interrupted."))),
    ]
    assert fixed.problems_left == ()


def test_an_unanswered_tool_use_in_the_last_user_message_is_moved_and_answered() -> None:
    history = [user(text("q")), assistant(text("ok")), user(text("Summary."), use("t1"))]
    fixed = toolmend.repair(history, provider="bedrock")
    assert fixed.messages[2:4] == [user(text("Summary.")), assistant(use("t1"))]
    assert fixed.messages[4]["content"][0]["toolResult"]["status"] == "error"
    assert fixed.problems_left == ()


# --- (c) text beside toolUse, Llama and Mistral -------------------------------------------------


@pytest.mark.parametrize(
    ("model", "profile"),
    [
        ("meta.llama3-1-70b-instruct-v1:0", ALONE),
        ("us.meta.llama3-2-90b-instruct-v1:0", ALONE),
        ("eu.meta.llama3-2-3b-instruct-v1:0", ALONE),
        ("mistral.mistral-large-2407-v1:0", ALONE),
        ("bedrock/converse/us.meta.llama4-maverick-17b-instruct-v1:0", ALONE),
        (CLAUDE, "bedrock"),
        ("us.amazon.nova-pro-v1:0", "bedrock"),
        (None, "bedrock"),
    ],
)
def test_the_model_id_picks_the_variant(model: str | None, profile: str) -> None:
    assert toolmend.request_profile("bedrock", model=model) == profile


MIXED = [
    user(text("Weather in Paris?")),
    assistant(text("Let me check."), use("t1")),
    user(result("t1")),
    assistant(text("21 C in Paris.")),
]


def test_text_beside_tool_use_is_refused_by_llama_only_and_kept_apart() -> None:
    assert toolmend.check(MIXED, provider="bedrock") == []
    problems = toolmend.check(MIXED, provider=ALONE)
    assert [(p.code, p.index, p.provider_error) for p in problems] == [
        (
            "call_with_text",
            1,
            "messages.1.content: Conversation blocks and tool use blocks cannot be provided in "
            "the same turn.",
        )
    ]
    fixed = toolmend.repair(MIXED, provider=ALONE)
    assert fixed.messages == [
        user(text("Weather in Paris?")),
        assistant(text("Let me check.")),  # the text stays, in a turn of its own
        user(text("Continue.")),
        assistant(use("t1")),
        user(result("t1")),
        assistant(text("21 C in Paris.")),
    ]
    assert fixed.messages[4] is MIXED[2]
    assert sorted(c.code for c in fixed.changes) == ["inserted_message", "moved_message"]
    assert fixed.problems_left == ()
    assert toolmend.sanitize(fixed.messages, provider=ALONE) is fixed.messages


# --- OpenAI-shaped histories bound for Bedrock through LiteLLM -----------------------------------


def test_an_empty_tool_message_is_given_a_text_before_litellm_converts_it() -> None:
    # LiteLLM writes a tool message's "" as a blank toolResult text, which Bedrock refuses
    history = [
        {"role": "user", "content": "Run it"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "run", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": ""},
    ]
    assert judges.litellm_error("bedrock", history) == (
        "2: result_text_blank: messages: text content blocks must be non-empty"
    )
    problems = toolmend.check(history, provider="bedrock")
    assert [(p.code, p.index, p.provider_error) for p in problems] == [
        ("result_text_blank", 2, "messages: text content blocks must be non-empty")
    ]
    fixed = toolmend.repair(history, provider="bedrock")
    assert fixed.messages[2] == {"role": "tool", "tool_call_id": "call_1", "content": "(empty)"}
    assert [c.code for c in fixed.changes] == ["filled_content"]
    assert fixed.problems_left == ()
    assert judges.litellm_error("bedrock", fixed.messages) is None


def _calling(content: Any, *call_ids: str) -> dict[str, Any]:
    calls = [
        {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}
        for call_id in call_ids or ("call_1",)
    ]
    return {"role": "assistant", "content": content, "tool_calls": calls}


def _answered(*calling: dict[str, Any]) -> list[dict[str, Any]]:
    """A user question, ``calling`` (the last of them makes the calls), the results, a reply
    and the next question."""
    results = [
        {"role": "tool", "tool_call_id": call["id"], "content": "21 C"}
        for call in calling[-1]["tool_calls"]
    ]
    return [
        {"role": "user", "content": "Weather in Paris?"},
        *calling,
        *results,
        {"role": "assistant", "content": "21 C."},
        {"role": "user", "content": "Thanks."},
    ]


_IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
_SPLIT = ["moved_message", "inserted_message"]


@pytest.mark.parametrize(
    ("history", "flagged_at", "changes"),
    [
        (_answered(_calling("Let me check.")), 1, _SPLIT),
        (_answered(_calling([{"type": "text", "text": "Let me check."}])), 1, _SPLIT),
        (_answered(_calling([_IMAGE])), 1, _SPLIT),
        (_answered(_calling("Two at once.", "call_1", "call_2")), 1, _SPLIT),
        # an assistant text message right before the calls: LiteLLM merges the two
        (
            _answered({"role": "assistant", "content": "Let me check."}, _calling(None)),
            2,
            ["inserted_message"],
        ),
        (
            _answered({"role": "assistant", "content": "Hm."}, _calling("Let me check.")),
            2,
            ["inserted_message", *_SPLIT],
        ),
        (
            _answered(
                {"role": "assistant", "content": "Hm."},
                {"role": "assistant", "content": " "},
                _calling(None),
            ),
            3,
            ["inserted_message"],
        ),
    ],
    ids=["text", "text part", "image", "two calls", "text message before", "both", "past blank"],
)
def test_openai_shaped_text_beside_calls_is_split_for_llama(
    history: list[dict[str, Any]], flagged_at: int, changes: list[str]
) -> None:
    """What the Converse path does for ``bedrock-tools-alone``, on an OpenAI-shaped history
    bound for Bedrock through LiteLLM, whose converter makes one Converse turn of an assistant
    message's text and calls (and of consecutive assistant messages): flagged, and split into
    the text, the fixed user bridge and the calls, the text kept as written. LiteLLM's
    converter and the native rules for the Llama model (the judge) refuse it before and take it
    after; for a Claude model nothing changes."""
    refused = judges.litellm_error("bedrock", history, LLAMA)  # (Converse's message indexes)
    assert refused == (
        "1: call_with_text: messages.1.content: Conversation blocks and tool use blocks cannot "
        "be provided in the same turn."
    )
    before = copy.deepcopy(history)
    problems = toolmend.check(history, provider="bedrock", model=LLAMA)
    assert [(p.code, p.index) for p in problems] == [("call_with_text", flagged_at)]
    fixed = toolmend.repair(history, provider="bedrock", model=LLAMA)
    assert history == before
    assert [c.code for c in fixed.changes] == changes
    assert fixed.problems_left == ()
    assert judges.litellm_error("bedrock", fixed.messages, LLAMA) is None
    assert toolmend.sanitize(fixed.messages, provider=ALONE) is fixed.messages
    caller = history[flagged_at]
    calls_at = [i for i, m in enumerate(fixed.messages) if m.get("tool_calls")]
    assert len(calls_at) == 1
    split = fixed.messages[calls_at[0]]
    assert split["tool_calls"] == caller["tool_calls"] and not split["content"]
    assert fixed.messages[calls_at[0] - 1] == {"role": "user", "content": "Continue."}
    if caller["content"]:  # its text stays where it was, without the calls
        assert {"role": "assistant", "content": caller["content"]} in fixed.messages
    assert fixed.messages[calls_at[0] + 1]["role"] == "tool"
    assert toolmend.check(history, provider="bedrock", model=CLAUDE) == []
    assert judges.litellm_error("bedrock", history, CLAUDE) is None


@pytest.mark.parametrize(
    "history",
    [
        _answered(_calling(None)),
        _answered(_calling("")),
        _answered(_calling("  \n")),
        _answered(_calling([{"type": "text", "text": " "}])),
        _answered(
            {"role": "assistant", "content": "Hm."},
            {"role": "user", "content": "Go."},
            _calling(None),
        ),
        _answered({"role": "assistant", "content": " \n"}, _calling(None)),
        _answered({"role": "assistant", "content": [{"type": "text", "text": ""}]}, _calling("")),
    ],
    ids=[
        "null",
        "empty",
        "whitespace",
        "whitespace part",
        "text in an earlier turn",
        "blank message before",
        "blank part before",
    ],
)
def test_calls_without_text_beside_them_are_left_alone_for_llama(
    history: list[dict[str, Any]],
) -> None:
    """LiteLLM drops blank text beside calls (``.strip()`` in its Converse converter), so a
    turn of calls with nothing else passes, as the judge says."""
    assert judges.litellm_error("bedrock", history, LLAMA) is None
    assert toolmend.check(history, provider="bedrock", model=LLAMA) == []
    assert toolmend.sanitize(history, provider=ALONE) is history


@pytest.mark.parametrize("content", ["Let me check.", "  \n"], ids=["text", "blank"])
def test_the_one_pass_never_vouches_for_calls_beside_text_for_llama(content: str) -> None:
    """The cross-family pass models no ``call_with_text`` (``bedrock-tools-alone`` has no
    cross rules): it answers for ``bedrock`` and leaves the Llama variant to the full path."""
    history = _answered(_calling(content))
    assert openai_chat.quick_valid(history, get_profile("bedrock"))
    assert not openai_chat.quick_valid(history, get_profile(ALONE))
    for tool_text in ("  ", [{"type": "text", "text": ""}]):
        blank = copy.deepcopy(history)
        blank[2]["content"] = tool_text
        assert not openai_chat.quick_valid(blank, get_profile("bedrock"))


def test_a_split_call_keeps_its_rewritten_id_and_its_results() -> None:
    """Ids outside Bedrock's pattern are rewritten on the calls moved into a message of their
    own as on their results; the whole history's repair is the one every path gives."""
    history = _answered(_calling("Let me check.", "call 1", "call 2"))
    fixed = toolmend.repair(history, provider=ALONE)
    calls = fixed.messages[3]["tool_calls"]
    ids = [call["id"] for call in calls]
    assert all(" " not in call_id for call_id in ids) and len(set(ids)) == 2
    assert [m["tool_call_id"] for m in fixed.messages[4:6]] == ids
    assert fixed.problems_left == ()
    full, changes = whole_repair(formats.get("openai"), history, get_profile(ALONE), Policy())
    assert fixed.messages == full and list(fixed.changes) == changes
    assert judges.litellm_error("bedrock", fixed.messages, LLAMA) is None


def test_text_beside_calls_in_a_long_damaged_history_is_split_once() -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for number in range(30):
        history += _answered(_calling(f"step {number}" if number == 10 else None, f"c{number}"))[1:]
    del history[5 * 20 + 2]  # round 20's result: gone
    fixed = toolmend.repair(history, provider=ALONE)
    full, changes = whole_repair(formats.get("openai"), history, get_profile(ALONE), Policy())
    assert fixed.messages == full and list(fixed.changes) == changes
    assert sorted(c.code for c in fixed.changes) == [
        "answered_missing_call",
        "inserted_message",
        "moved_message",
    ]
    assert judges.litellm_error("bedrock", fixed.messages, LLAMA) is None


def _tool_round(content: Any) -> list[dict[str, Any]]:
    call = {"id": "call_1", "type": "function", "function": {"name": "run", "arguments": "{}"}}
    return [
        {"role": "user", "content": "Run it"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": content},
    ]


_WHITESPACE = "messages: text content blocks must contain non-whitespace text"
_EMPTY = "messages: text content blocks must be non-empty"


@pytest.mark.parametrize(
    ("content", "error", "mended", "change"),
    [
        ("  \n", _WHITESPACE, "(empty)", "filled_content"),
        ([{"type": "text", "text": " "}], _WHITESPACE, "(empty)", "filled_content"),
        (
            [{"type": "text", "text": ""}, {"type": "text", "text": "21 C"}],
            _EMPTY,
            [{"type": "text", "text": "21 C"}],
            "dropped_empty_block",
        ),
        (
            [{"type": "text", "text": "21 C"}, {"type": "text", "text": "\t"}],
            _WHITESPACE,
            [{"type": "text", "text": "21 C"}],
            "dropped_empty_block",
        ),
    ],
    ids=["whitespace", "whitespace part", "empty part beside text", "whitespace part after"],
)
def test_a_blank_tool_text_is_mended_before_litellm_converts_it(
    content: Any, error: str, mended: Any, change: str
) -> None:
    """LiteLLM sends a tool message's text as it is, whitespace and all (its
    ``_build_bedrock_tool_result_content_blocks``), a toolResult text Bedrock refuses: flagged
    and mended as a blank text inside a Converse ``toolResult`` is (it went unflagged, and the
    one pass vouched for it)."""
    history = _tool_round(content)
    assert judges.litellm_error("bedrock", history) == f"2: result_text_blank: {error}"
    before = copy.deepcopy(history)
    problems = toolmend.check(history, provider="bedrock")
    assert [(p.code, p.index, p.provider_error) for p in problems] == [
        ("result_text_blank", 2, error)
    ]
    fixed = toolmend.repair(history, provider="bedrock")
    assert history == before
    assert fixed.messages[:2] == history[:2] and fixed.messages[1] is history[1]
    assert fixed.messages[2] == {**history[2], "content": mended}
    assert [c.code for c in fixed.changes] == [change]
    assert fixed.problems_left == ()
    assert judges.litellm_error("bedrock", fixed.messages) is None
    assert toolmend.sanitize(fixed.messages, provider="bedrock") is fixed.messages


@pytest.mark.parametrize("provider", ["openai", "anthropic", "deepseek", "groq"])
def test_a_blank_tool_text_is_no_problem_where_no_blank_block_is_refused(provider: str) -> None:
    history = _tool_round("  \n")
    assert toolmend.check(history, provider=provider) == []
    assert toolmend.sanitize(history, provider=provider) is history


def test_a_blank_tool_text_in_a_long_damaged_history_is_found_by_the_ranges() -> None:
    """The damaged ranges of a long history hold a blank tool text to the same rule: the
    repair is the whole path's, the blank text mended with the rest."""
    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for number in range(30):
        call_id = f"call_{number}"
        call = {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}
        history += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": "out"},
            {"role": "assistant", "content": f"step {number}"},
            {"role": "user", "content": "next"},
        ]
    history[4 * 10 + 2]["content"] = " "  # round 10's result: blank
    del history[4 * 20 + 2]  # round 20's result: gone
    fixed = toolmend.repair(history, provider="bedrock")
    full, changes = whole_repair(formats.get("openai"), history, get_profile("bedrock"), Policy())
    assert fixed.messages == full and list(fixed.changes) == changes
    assert sorted(c.code for c in fixed.changes) == ["answered_missing_call", "filled_content"]
    assert fixed.problems_left == ()


# --- properties ---------------------------------------------------------------------------------

_BLOCK = st.sampled_from(["text", "blank", "use", "result", "blank-result"])
_MESSAGE = st.tuples(st.sampled_from(["user", "assistant"]), st.lists(_BLOCK, max_size=3))


@settings(max_examples=200, deadline=None)
@given(st.lists(_MESSAGE, min_size=1, max_size=7), st.sampled_from(["bedrock", ALONE]))
def test_repairs_settle_and_keep_every_real_result(
    shapes: list[tuple[str, list[str]]], provider: str
) -> None:
    history: list[dict[str, Any]] = [user(text("Hello"))]
    last_call = "t0"
    for n, (role, blocks) in enumerate(shapes):
        content: list[Any] = []
        for m, block in enumerate(blocks):
            if block == "text":
                content.append(text(f"text {n}.{m}"))
            elif block == "blank":
                content.append(text(""))
            elif block == "use":
                last_call = f"t{n}_{m}"
                content.append(use(last_call))
            elif block == "result":
                content.append(result(last_call, text(f"result {n}.{m}")))
            else:
                content.append(result(last_call, text(" ")))
        history.append({"role": role, "content": content})
    if bedrock_format.quick_valid(history, get_profile(provider)):  # it vouches only rightly
        assert toolmend.check(history, provider=provider) == []
    fixed = toolmend.repair(history, provider=provider)
    assert fixed.problems_left == ()
    assert toolmend.sanitize(fixed.messages, provider=provider) is fixed.messages
    # every call stays, and every real text, as a block or inside a result or its text form
    written = str(fixed.messages)
    for n, (_, blocks) in enumerate(shapes):
        for m, block in enumerate(blocks):
            if block == "text":
                assert f"text {n}.{m}" in written
            if block == "use":
                assert f"'toolUseId': 't{n}_{m}'" in written


# --- the strict server, through boto3 -----------------------------------------------------------

boto3 = pytest.importorskip("boto3")
botocore_exceptions = pytest.importorskip("botocore.exceptions")

TOOLS = {
    "tools": [
        {
            "toolSpec": {
                "name": "get_weather",
                "inputSchema": {"json": {"type": "object", "properties": {}}},
            }
        }
    ]
}


@pytest.fixture(scope="module")
def server() -> Iterator[StrictProviderServer]:
    with StrictProviderServer() as running:
        yield running


@pytest.fixture
def client(server: StrictProviderServer) -> Any:
    return converse_client(server)


def _refused(client: Any, model: str, messages: list[Any]) -> str:
    with pytest.raises(botocore_exceptions.ClientError) as raised:
        client.converse(modelId=model, messages=messages, toolConfig=TOOLS)
    assert raised.value.response["Error"]["Code"] == "ValidationException"
    return str(raised.value.response["Error"]["Message"])


def test_the_server_refuses_text_beside_tool_use_for_llama_only(
    server: StrictProviderServer, client: Any
) -> None:
    assert _refused(client, LLAMA, MIXED) == (
        "messages.1.content: Conversation blocks and tool use blocks cannot be provided in the "
        "same turn."
    )
    assert server.last_request.provider == ALONE
    profile = toolmend.request_profile("bedrock", model=LLAMA)
    client.converse(
        modelId=LLAMA, messages=toolmend.sanitize(MIXED, provider=profile), toolConfig=TOOLS
    )
    assert server.last_request.accepted
    client.converse(modelId=CLAUDE, messages=MIXED, toolConfig=TOOLS)
    assert server.last_request.accepted and server.last_request.provider == "bedrock"


def test_the_server_refuses_a_tool_use_in_a_user_message_and_a_blank_result(
    server: StrictProviderServer, client: Any
) -> None:
    assert _refused(client, CLAUDE, SUMMARIZED) == (
        "User messages cannot contain tool uses. Please remove the tool uses and try again."
    )
    client.converse(
        modelId=CLAUDE, messages=toolmend.sanitize(SUMMARIZED, provider="bedrock"), toolConfig=TOOLS
    )
    assert server.last_request.accepted
    empty = [user(text("Run it")), assistant(use("t1")), user(result("t1", text("")))]
    assert _refused(client, CLAUDE, empty) == "messages: text content blocks must be non-empty"
    client.converse(
        modelId=CLAUDE, messages=toolmend.sanitize(empty, provider="bedrock"), toolConfig=TOOLS
    )
    assert server.last_request.accepted
