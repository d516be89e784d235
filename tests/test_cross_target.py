"""OpenAI-shaped histories bound for Anthropic, Gemini and Bedrock (what LiteLLM and gateways
send on), and seed 003 end to end: a history from an OpenAI-compatible provider (opaque ids, no
names on tool messages) continued on Gemini, both as OpenAI messages and as native contents.
"""

from __future__ import annotations

import copy
import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from google.genai import _transformers, types
from hypothesis import given
from hypothesis import strategies as st

import toolmend

from support import judges

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "histories"
SEED003 = EXAMPLES / "seed003_gemini_opaque_function_response_name.json"
SEED003_CONTENTS = EXAMPLES / "gemini_contents_opaque_names.json"


def user(content: str) -> dict[str, Any]:
    return {"role": "user", "content": content}


def calls(*ids: str, name: str = "steal_meme_to_smile") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": name, "arguments": "{}"}}
            for i in ids
        ],
    }


def tool(call_id: str, content: str = "ok", **extra: Any) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content, **extra}


def openai_history() -> list[dict[str, Any]]:
    """Seed 003: written by an OpenAI-compatible provider, tool messages without ``name``."""
    return [
        {"role": "system", "content": "You are AstrBot."},
        user("Steal me a meme"),
        calls("call_1073557"),
        tool("call_1073557", '{"meme": "cat.gif"}'),
        {"role": "assistant", "content": "Here is a dancing cat."},
        user("Another one"),
    ]


def _names_by_call(history: list[dict[str, Any]]) -> dict[str, str]:
    return {c["id"]: c["function"]["name"] for m in history for c in (m.get("tool_calls") or [])}


# --- seed 003 ----------------------------------------------------------------------------------


def test_seed003_openai_shaped_history_continued_on_gemini() -> None:
    history = openai_history()
    before = copy.deepcopy(history)
    problems = toolmend.check(history, provider="gemini")
    assert [(p.code, p.index, p.rule, p.provider_error) for p in problems] == [
        (
            "result_name_mismatch",
            3,
            "gemini.function_response_name_mismatch",
            "Request contains an invalid argument.",
        )
    ]
    fixed = toolmend.repair(history, provider="gemini")
    assert history == before
    assert [(c.code, c.index, c.ids) for c in fixed.changes] == [
        ("filled_result_name", 3, ("call_1073557",))
    ]
    assert fixed.messages[3] == tool(
        "call_1073557", '{"meme": "cat.gif"}', name="steal_meme_to_smile"
    )
    assert toolmend.check(fixed.messages, provider="gemini") == []
    assert toolmend.check(fixed.messages, provider="openai") == []


def test_litellm_gemini_converter_needs_no_result_names() -> None:
    """LiteLLM's Gemini converter derives each ``functionResponse.name`` from the call the
    ``tool_call_id`` points to, so the profile the LiteLLM callback uses for a Gemini deployment
    (``gemini-litellm``) leaves seed 003's history as it is, which LiteLLM converts and the
    native Gemini profile accepts; Gemini's own OpenAI-compatible endpoint still gets names."""
    history = openai_history()
    kept = toolmend.repair(history, provider="gemini-litellm")
    assert kept.messages is history and not kept.problems
    assert judges.litellm_error("gemini", history) is None
    assert [c.code for c in toolmend.repair(history, provider="gemini").changes] == [
        "filled_result_name"
    ]
    # a name that is really the opaque id: LiteLLM names the response after the call anyway
    opaque = [*history[:3], tool("call_1073557", "{}", name="call_1073557"), *history[4:]]
    assert toolmend.repair(opaque, provider="gemini-litellm").messages is opaque
    assert judges.litellm_error("gemini", opaque) is None


def test_seed003_a_name_that_is_really_the_opaque_id_is_replaced() -> None:
    history = json.loads(SEED003.read_text(encoding="utf-8"))
    fixed = toolmend.sanitize(history, provider="vertex_ai")
    names = _names_by_call(fixed)
    tools = [m for m in fixed if m["role"] == "tool"]
    assert [m["name"] for m in tools] == ["steal_meme_to_smile", "steal_meme_to_smile"]
    assert all(m["name"] == names[m["tool_call_id"]] for m in tools)


def _astrbot_contents(history: list[dict[str, Any]]) -> list[types.Content]:
    """The conversion seed 003 reports: the call id is not written back, and the tool branch
    uses ``message.get("name", message["tool_call_id"])`` as the function name."""
    contents = []
    for message in history:
        if message["role"] == "user":
            contents.append(types.Content(role="user", parts=[types.Part(text=message["content"])]))
        elif message["role"] == "assistant" and message.get("tool_calls"):
            parts = [
                types.Part.from_function_call(name=c["function"]["name"], args={})
                for c in message["tool_calls"]
            ]
            contents.append(types.Content(role="model", parts=parts))
        elif message["role"] == "assistant":
            contents.append(
                types.Content(role="model", parts=[types.Part(text=message["content"])])
            )
        elif message["role"] == "tool":
            name = message.get("name", message["tool_call_id"])
            part = types.Part.from_function_response(name=name, response={"result": "ok"})
            contents.append(types.Content(role="user", parts=[part]))
    return contents


def _pairs(contents: list[Any]) -> list[tuple[str, str]]:
    """(functionCall.name, functionResponse.name) for each call turn and the turn after it."""
    sent = _transformers.t_contents(contents)
    out = []
    for turn, after in itertools.pairwise(sent):
        turn_calls = [p.function_call for p in turn.parts or [] if p.function_call]
        responses = [p.function_response for p in after.parts or [] if p.function_response]
        names = [c.name for c in turn_calls], [r.name for r in responses]
        out.extend(zip(*names, strict=True))
    return out


def test_seed003_native_sdk_contents_continued_on_gemini() -> None:
    contents = _astrbot_contents(openai_history())
    assert _pairs(contents) == [("steal_meme_to_smile", "call_1073557")]
    problems = toolmend.check(contents, provider="gemini")
    assert [p.code for p in problems] == ["result_name_mismatch"]
    fixed = toolmend.repair(contents, provider="gemini")
    assert all(isinstance(c, types.Content) for c in fixed.messages)
    assert _pairs(fixed.messages) == [("steal_meme_to_smile", "steal_meme_to_smile")]
    assert contents[2].parts[0].function_response.name == "call_1073557", "input untouched"


def test_seed003_native_rest_contents_body() -> None:
    body = json.loads(SEED003_CONTENTS.read_text(encoding="utf-8"))
    contents = body["contents"]
    assert [p.index for p in toolmend.check(contents, provider="gemini")] == [2, 6]
    fixed = toolmend.sanitize(contents, provider="gemini")
    for call_turn, response_turn in ((fixed[1], fixed[2]), (fixed[5], fixed[6])):
        function_call = call_turn["parts"][0]["functionCall"]
        function_response = response_turn["parts"][0]["functionResponse"]
        assert function_response["name"] == function_call["name"] == "steal_meme_to_smile"
        assert function_response["id"] == function_call["id"]


@pytest.mark.slow
@pytest.mark.parametrize("path", [SEED003, SEED003_CONTENTS], ids=["openai-shaped", "contents"])
def test_seed003_examples_through_the_cli(path: Path, tmp_path: Path) -> None:
    out = tmp_path / "fixed.json"
    run = [sys.executable, "-m", "toolmend"]
    checked = subprocess.run([*run, "check", str(path), "--provider", "gemini"], check=False)
    assert checked.returncode == 1
    repaired = subprocess.run(
        [*run, "repair", str(path), "--provider", "gemini", "-o", str(out)],
        check=False,
        capture_output=True,
        text=True,
    )
    assert repaired.returncode == 0, repaired.stderr
    assert "filled_result_name" in repaired.stderr
    clean = subprocess.run([*run, "check", str(out), "--provider", "gemini"], check=False)
    assert clean.returncode == 0


# --- OpenAI-shaped histories for the other providers ------------------------------------------


def test_named_tool_messages_pass_gemini_untouched() -> None:
    history = openai_history()
    history[3] = tool("call_1073557", '{"meme": "cat.gif"}', name="steal_meme_to_smile")
    assert toolmend.check(history, provider="gemini") == []
    assert toolmend.sanitize(history, provider="gemini") is history


def test_gemini_counts_and_orphans_in_openai_shape() -> None:
    broken = [
        user("Two memes"),
        calls("call_1", "call_2"),
        tool("call_1", name="steal_meme_to_smile"),
        user("hello?"),
        tool("call_9", name="steal_meme_to_smile"),
    ]
    problems = toolmend.check(broken, provider="gemini")
    assert [(p.code, p.rule) for p in problems] == [
        ("missing_result", "gemini.function_response_count"),
        ("orphan_result", "gemini.function_response_turn_position"),
    ]
    fixed = toolmend.repair(broken, provider="gemini")
    # the orphan is the newest input: kept as user text (issue 32, case 2)
    assert {c.code for c in fixed.changes} == {"answered_missing_call", "orphan_result_to_text"}
    assert fixed.messages[3] == {
        "role": "tool",
        "tool_call_id": "call_2",
        "content": toolmend.PLACEHOLDER_TEXT,
        "name": "steal_meme_to_smile",
    }


def test_anthropic_needs_unique_ids_across_the_request() -> None:
    broken = [
        user("Weather twice"),
        calls("call_0", name="get_weather"),
        tool("call_0", "21 C"),
        {"role": "assistant", "content": "21 C"},
        user("Again"),
        calls("call_0", name="get_weather"),
        tool("call_0", "22 C"),
    ]
    problems = toolmend.check(broken, provider="anthropic")
    assert [(p.code, p.index, p.provider_error) for p in problems] == [
        ("duplicate_call_id", 5, "messages.5.content.0: `tool_use` ids must be unique")
    ]
    fixed = toolmend.sanitize(broken, provider="anthropic")
    new_id = fixed[5]["tool_calls"][0]["id"]
    assert new_id != "call_0" and fixed[6]["tool_call_id"] == new_id
    assert fixed[2] is broken[2]
    assert toolmend.check(fixed, provider="anthropic") == []


def test_anthropic_pairing_of_openai_shape_uses_its_error_texts() -> None:
    broken = [user("Weather?"), calls("call_1", name="get_weather"), user("hello?")]
    problems = toolmend.check(broken, provider="anthropic")
    assert [p.rule for p in problems] == ["anthropic.tool_use_without_result"]
    assert problems[0].provider_error.startswith(
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
        "call_1."
    )
    assert (
        toolmend.check(toolmend.sanitize(broken, provider="anthropic"), provider="anthropic") == []
    )


def test_bedrock_conversation_must_start_with_the_user() -> None:
    broken = [
        {"role": "system", "content": "Be brief."},
        {"role": "assistant", "content": "Hi! Ask me anything."},
        user("Weather?"),
    ]
    problems = toolmend.check(broken, provider="bedrock")
    assert [(p.code, p.index, p.rule) for p in problems] == [
        ("first_not_user", 1, "BR-FIRST-NOT-USER")
    ]
    fixed = toolmend.repair(broken, provider="bedrock")
    assert [c.code for c in fixed.changes] == ["inserted_message"]
    assert fixed.messages[1] == {"role": "user", "content": "Continue."}
    assert toolmend.check(fixed.messages, provider="bedrock") == []


def test_bedrock_missing_results_in_openai_shape() -> None:
    broken = [user("Weather?"), calls("tooluse_1", name="get_weather"), user("hello?")]
    problems = toolmend.check(broken, provider="bedrock")
    assert [p.provider_error for p in problems] == [
        "Expected toolResult blocks at messages.1.content for the following Ids: tooluse_1"
    ]
    fixed = toolmend.sanitize(broken, provider="bedrock")
    # a gateway folds tool results and the user message after them into one Converse turn,
    # which Bedrock rejects: the fixed assistant bridge keeps them apart
    assert [m["role"] for m in fixed] == ["user", "assistant", "tool", "assistant", "user"]
    assert toolmend.check(fixed, provider="bedrock") == []


def test_bedrock_user_message_right_after_tool_results_in_openai_shape() -> None:
    broken = [user("Weather?"), calls("tooluse_1"), tool("tooluse_1", "21 C"), user("And now?")]
    problems = toolmend.check(broken, provider="bedrock")
    assert [p.rule for p in problems] == ["BR-TOOL-RESULT-WITH-TEXT"]
    fixed = toolmend.repair(broken, provider="bedrock")
    assert [c.code for c in fixed.changes] == ["inserted_message"]
    assert fixed.messages[3] == {"role": "assistant", "content": "Tool results received."}


@pytest.mark.parametrize("provider", ["anthropic", "gemini", "gemini-3", "bedrock"])
def test_a_valid_openai_history_passes_every_target(provider: str) -> None:
    history = [
        user("Weather?"),
        calls("call_1", name="get_weather"),
        tool("call_1", "21 C", name="get_weather"),
        {"role": "assistant", "content": "It is 21 C."},
        user("Thanks"),
    ]
    assert toolmend.check(history, provider=provider) == []
    assert toolmend.sanitize(history, provider=provider) is history


# --- detection ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("history", "name"),
    [
        (
            [user("Hi"), {"role": "assistant", "content": [{"type": "tool_use", "id": "t"}]}],
            "anthropic",
        ),
        ([{"role": "user", "content": [{"type": "image", "source": {}}]}], "anthropic"),
        ([{"role": "user", "parts": [{"text": "Hi"}]}], "gemini"),
        ([{"role": "model", "content": "x"}], "gemini"),
        ([{"text": "Hi"}, {"functionCall": {"name": "f"}}], "gemini"),
        ([{"role": "user", "content": [{"text": "Hi"}]}], "bedrock"),
        ([user("Hi"), calls("call_1")], "openai"),
        ([user("Hi"), {"role": "assistant", "content": "Hello"}], "openai"),
    ],
    ids=[
        "anthropic-tool-use",
        "anthropic-image",
        "gemini-parts",
        "gemini-model-role",
        "gemini-part-dicts",
        "bedrock-blocks",
        "openai-tool-calls",
        "plain-chat-reads-as-openai",
    ],
)
def test_each_format_is_detected(history: list[Any], name: str) -> None:
    from toolmend.formats import detect

    assert name == detect(history).name


@given(
    role=st.sampled_from(["user", "assistant", "system", "developer"]),
    content=st.text(max_size=20),
    name=st.none() | st.text(max_size=8),
)
def test_a_plain_text_message_tells_no_format(role: str, content: str, name: str | None) -> None:
    """What lets ``detect`` pass over plain messages without asking each format."""
    from toolmend.formats import get as module_for
    from toolmend.formats import names

    message = {"role": role, "content": content, **({} if name is None else {"name": name})}
    assert [n for n in names() if module_for(n).claims(message)] == []


def test_a_plain_chat_is_detected_without_asking_each_format(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A chat with no tool call yet: one cheap look per message, not a question to every format
    about every message (detection runs in every hook)."""
    from toolmend.formats import detect, names
    from toolmend.formats import get as module_for

    asked: list[str] = []
    for format_name in names():
        module = module_for(format_name)
        claims = module.claims
        monkeypatch.setattr(
            module, "claims", lambda m, c=claims, n=format_name: asked.append(n) or c(m)
        )
    chat = [
        {"role": "system", "content": "Be brief."},
        user("Hi"),
        {"role": "assistant", "content": "Hello"},
    ]
    assert detect(chat).name == "openai"
    assert asked == []
    parts = {"role": "user", "parts": [{"text": "Hi"}]}
    assert detect([*chat, parts]).name == "gemini"  # the first telling message still decides
    assert asked


def test_a_message_without_a_role_after_plain_ones_is_named() -> None:
    with pytest.raises(toolmend.InvalidMessageError, match="message 2"):
        toolmend.check([user("Hi"), {"role": "assistant", "content": "Hello"}, {"content": "x"}])


def test_an_ambiguous_message_is_a_clear_error() -> None:
    both = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}, {"text": "x"}]}
    with pytest.raises(
        toolmend.InvalidHistoryError, match=r"ambiguous history.*anthropic, bedrock"
    ):
        toolmend.check([both], provider="anthropic")


def test_an_unknown_shape_is_a_clear_error() -> None:
    with pytest.raises(toolmend.InvalidMessageError, match="message 0"):
        toolmend.check([{"speaker": "me", "words": "hi"}], provider="gemini")
