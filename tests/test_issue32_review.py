"""Review of the merged issue-32 work: the bugs found, each with the test that found it, and the
properties that hold the one-pass checks to the full path under every profile.

* The newest input (issue 32, case 2) is never dropped in any format: the repair kept it only
  for Chat Completions messages and Anthropic; a Responses input, a Gemini ``contents`` and a
  Bedrock ``messages`` list dropped the trailing orphan result the model is asked to answer.
* The fast path (``toolmend._fastpath.vouch``, ``Format.quick_valid``), the range scan
  (``_api.damage_in``) and ``toolmend.check`` agree with the whole history judged in full, for
  every profile (the new ones included) and every format a history can be sent in; the hooks'
  ``mend`` and ``toolmend.repair`` give the same messages.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolmend
from toolmend._api import damage_in, format_of, profile_for, sequence_of
from toolmend._fastpath import vouch
from toolmend._rules import judge
from toolmend.integrations.hooks import HookOptions, mend
from toolmend.profiles import PROFILES, get_profile

from support.agent_runs import agent_runs
from support.fuzz_cases import Case, cases, pairs
from support.histories import (
    STUB_CONTENT,
    content_strings,
    damaged_conversations,
    valid_conversations,
)
from support.whole_path import whole_repair

# --- the newest input is never dropped, in every format -------------------------------------

FOLLOW_UP = "And what about tomorrow?"

NEWEST_ORPHANS: dict[str, tuple[str, list[Any]]] = {
    "responses function_call_output": (
        "openai-responses",
        [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": "21 C and sunny."},
            {"type": "function_call_output", "call_id": "call_gone", "output": FOLLOW_UP},
        ],
    ),
    "responses shell_call_output": (
        "openai-responses",
        [
            {"role": "user", "content": "List the files."},
            {"role": "assistant", "content": "Done."},
            {
                "type": "shell_call_output",
                "call_id": "call_gone",
                "output": [{"stdout": FOLLOW_UP, "stderr": "", "outcome": {"type": "exit"}}],
            },
        ],
    ),
    "gemini": (
        "gemini",
        [
            {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
            {"role": "model", "parts": [{"text": "21 C and sunny."}]},
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "ask", "response": {"q": FOLLOW_UP}}}],
            },
        ],
    ),
    "bedrock": (
        "bedrock",
        [
            {"role": "user", "content": [{"text": "Weather in Paris?"}]},
            {"role": "assistant", "content": [{"text": "21 C and sunny."}]},
            {
                "role": "user",
                "content": [
                    {"toolResult": {"toolUseId": "tooluse_gone", "content": [{"text": FOLLOW_UP}]}}
                ],
            },
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(NEWEST_ORPHANS))
@pytest.mark.parametrize(
    "policy", [toolmend.Policy(), toolmend.Policy(missing_result="remove_call")]
)
def test_the_newest_input_is_kept_in_every_format(case: str, policy: toolmend.Policy) -> None:
    """Issue 32, case 2, beyond chat messages and Anthropic: a trailing result whose call is
    not in the history is the input the model is asked to answer; it is kept as user text,
    never dropped (it was dropped for Responses, Gemini and Bedrock)."""
    format, history = NEWEST_ORPHANS[case]
    before = copy.deepcopy(history)
    fixed = toolmend.repair(history, format=format, policy=policy)
    assert history == before
    assert [change.code for change in fixed.changes] == ["orphan_result_to_text"]
    assert FOLLOW_UP in json.dumps(fixed.messages, ensure_ascii=False)
    assert fixed.problems_left == ()
    assert toolmend.sanitize(fixed.messages, format=format) is fixed.messages


def test_a_stale_output_before_the_user_text_is_still_dropped() -> None:
    """Only the trailing run is the newest input: an orphan output followed by the user's own
    text is a leftover, dropped as before under the default policy."""
    history = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "21 C and sunny."},
        {"type": "function_call_output", "call_id": "call_gone", "output": "stale"},
        {"role": "user", "content": FOLLOW_UP},
    ]
    fixed = toolmend.repair(history, format="openai-responses")
    assert [change.code for change in fixed.changes] == ["dropped_orphan_result"]


def test_extra_outputs_of_the_last_call_run_are_no_new_input() -> None:
    """The outputs right after a run of calls answer that run: an extra one there is a stray,
    dropped, not the newest input."""
    history = [
        {"role": "user", "content": "Weather in Paris?"},
        {"type": "function_call", "call_id": "call_a", "name": "weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_a", "output": "21 C"},
        {"type": "function_call_output", "call_id": "call_gone", "output": "stray"},
    ]
    fixed = toolmend.repair(history, format="openai-responses")
    assert [change.code for change in fixed.changes] == ["dropped_orphan_result"]


# --- Bedrock: a reused id answered by a placeholder, repaired in ranges ----------------------


def test_a_reused_bedrock_id_left_unanswered_is_renamed_as_in_the_whole_history() -> None:
    """Issue 32, case 1 under Bedrock's range scan (Hypothesis found it in
    test_block_scans.py): the later call with a reused ``call_0`` gets a placeholder, and the
    planner of the whole history gives it a fresh id; the range holding it alone could not see
    the earlier ``call_0`` and sent two results under one id."""

    def use(call_id: str) -> dict[str, Any]:
        return {"toolUse": {"toolUseId": call_id, "name": "get_weather", "input": {}}}

    def said(role: str, text: str) -> dict[str, Any]:
        return {"role": role, "content": [{"text": text}]}

    history = [
        said("user", "Weather?"),
        {"role": "assistant", "content": [use("call_0")]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "call_0", "content": []}}]},
        said("assistant", "Sunny."),
        said("user", "And now?"),
        {"role": "assistant", "content": [use("call_0")]},
        said("assistant", "Still sunny."),
        said("user", "Thanks."),
    ]
    for provider in ("bedrock", "bedrock-tools-alone"):
        module, profile = format_of(history, "bedrock"), PROFILES[provider]
        expected, changes = whole_repair(module, history, profile, toolmend.Policy())
        fixed = toolmend.repair(history, provider=provider, format="bedrock")
        assert fixed.messages == expected
        assert list(fixed.changes) == changes
        assert "rewrote_call_id" in [change.code for change in fixed.changes]
        ids = [
            block["toolResult"]["toolUseId"]
            for message in fixed.messages
            for block in message["content"]
            if "toolResult" in block
        ]
        assert len(ids) == len(set(ids)) == 2


# --- the one-pass checks agree with the full path, for every profile --------------------------


def _key(problem: toolmend.Problem) -> tuple[int, str, tuple[str, ...]]:
    return (problem.index, problem.code, problem.ids)


def _agrees(history: Any, format: str, provider: str) -> None:
    """What the one-pass checks promise, against the whole history read and judged: the fast
    path (``vouch``) and ``quick_valid`` vouch only for a history with no problem, the range
    scan (``damage_in``, through ``check``) finds exactly its problems, the hooks' ``mend``
    sends what ``repair`` returns, and neither mutates the input."""
    module = format_of(history, format)
    profile = profile_for(provider, module)
    messages = sequence_of(module, history)
    whole = sorted(map(_key, judge(module.read(messages), profile)))
    if vouch(history, provider=provider, format=format) is not None:
        assert whole == []
    if module.quick_valid(messages, profile):
        assert whole == []
    damaged = damage_in(module, messages, profile)
    ranged = sorted(_key(p) for damage in damaged or () for p in damage.problems)
    assert ranged == whole
    assert sorted(map(_key, toolmend.check(history, provider=provider, format=format))) == whole
    before = _snapshot(history)
    repaired = toolmend.repair(history, provider=provider, format=format)
    mended = mend(
        history, provider=provider, source="review", options=_OPTIONS, format=format, quiet=True
    )
    assert _snapshot(history) == before
    assert not mended.failed
    assert mended.messages == repaired.messages
    assert [str(c) for c in mended.changes] == [str(c) for c in repaired.changes]
    if repaired.changes:
        assert list(mended.left) == list(repaired.problems_left)


def _snapshot(history: Any) -> str:
    """The history written out, objects by their fields (agent runs hold SDK-like objects)."""
    return repr([m if isinstance(m, dict) else vars(m) for m in history])


_OPTIONS = HookOptions(on_loop="off")
_DICT_PAIRS = [pair for pair in pairs() if pair[0] != "langchain"]  # (plain dicts: deepcopy)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), pair=st.sampled_from(_DICT_PAIRS))
def test_the_one_pass_checks_agree_with_the_full_judge_for_every_profile(
    data: st.DataObject, pair: tuple[str, str]
) -> None:
    """Every (format, profile) pair a history can be sent to, the profiles of issue 32
    included (anthropic-no-prefill, bedrock-tools-alone, hf-mistral, hf-llama-3, hf-gemma-3,
    openai-responses-reasoning, deepseek-responses, hf-template-responses, gemini-litellm),
    over the fuzz cases' valid and damaged histories."""
    format, provider = pair
    case: Case = data.draw(cases(format))
    for history in (case.valid, case.damaged):
        _agrees(history, format, provider)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    history=st.one_of(
        valid_conversations(id_style="any", reasoning=True),
        damaged_conversations(id_style="any").map(lambda case: case[1]),
        agent_runs(),
    ),
    provider=st.sampled_from(sorted(PROFILES)),
)
def test_openai_shaped_histories_agree_with_the_full_judge_for_every_profile(
    history: list[Any], provider: str
) -> None:
    """OpenAI-shaped histories (what LiteLLM and gateways send to every family) under every
    profile, Responses ones included (a chat history read as items)."""
    _agrees(history, "openai", provider)


_ENDINGS: dict[str, list[dict[str, Any]]] = {
    "assistant text": [{"role": "assistant", "content": "Here it is."}],
    "assistant call": [
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {"id": "call_x", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "call_y", "type": "function", "function": {"name": "g", "arguments": "{}"}},
            ],
        }
    ],
    "two users": [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}],
    "blank user": [{"role": "user", "content": " "}],
    "orphan result": [{"role": "tool", "tool_call_id": "call_gone", "content": "follow-up"}],
    "system": [{"role": "system", "content": "Be brief."}],
}


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    history=st.one_of(
        valid_conversations(id_style="any"),
        damaged_conversations(id_style="any").map(lambda case: case[1]),
    ),
    ending=st.sampled_from(sorted(_ENDINGS)),
    provider=st.sampled_from(sorted(PROFILES)),
)
def test_the_new_rules_on_the_last_messages_agree_with_the_full_judge(
    history: list[Any], ending: str, provider: str
) -> None:
    """The rules of issue 32 that bear on where a request ends or on one message (no prefill,
    text beside calls, one call per message, two user messages, blank user text, the newest
    input), appended to valid and damaged histories: the one-pass checks still agree."""
    _agrees([*history, *copy.deepcopy(_ENDINGS[ending])], "openai", provider)


# --- idempotence and content kept under the new chat profiles ---------------------------------

NEW_CHAT_PROFILES = [
    "anthropic-no-prefill",
    "anthropic-thinking-no-prefill",
    "bedrock-tools-alone",
    "gemini-litellm",
    "hf-gemma-3",
    "hf-llama-3",
    "hf-mistral",
]
"""The profiles of issue 32 that judge OpenAI-shaped messages (tests/test_properties.py runs
its properties over the OpenAI family's profiles only)."""

KEEP_EVERYTHING = toolmend.Policy(orphan_result="text")


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    case=damaged_conversations(id_style="any", reasoning=True),
    provider=st.sampled_from(NEW_CHAT_PROFILES),
)
def test_repairs_under_the_new_profiles_settle_and_keep_every_text(
    case: Any, provider: str
) -> None:
    """Repaired once is repaired for good (the second repair returns the very object), the
    result passes, and every user, assistant and tool text of the input is still there."""
    _, damaged, ops = case
    fixed = toolmend.repair(damaged, provider=provider, policy=KEEP_EVERYTHING)
    left = [problem.code for problem in toolmend.check(fixed.messages, provider=provider)]
    assert left in ([], ["empty_history"])
    assert toolmend.repair(fixed.messages, provider=provider).messages is fixed.messages
    if "merge_results" in ops:
        return  # one call, two real results: one is dropped and reported (test_fuzz.py)
    text = json.dumps(fixed.messages, ensure_ascii=False)
    for content in content_strings(damaged) - {STUB_CONTENT, ""}:
        assert json.dumps(content, ensure_ascii=False)[1:-1] in text, content


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    history=valid_conversations(id_style="any", reasoning=True),
    provider=st.sampled_from([name for name in NEW_CHAT_PROFILES if name != "hf-gemma-3"]),
)
def test_every_real_result_still_answers_its_call(history: list[Any], provider: str) -> None:
    """A valid OpenAI history repaired for a new profile (ids rewritten, calls split, messages
    bridged): each tool result is still a tool message answering a call of the same function
    (Gemma 3's template has no tool role: its traffic is written as text, checked above)."""
    fixed = toolmend.repair(history, provider=provider)

    def answered(messages: list[Any]) -> list[tuple[str, Any]]:
        names: dict[Any, Any] = {}
        found = []
        for message in messages:
            for call in message.get("tool_calls") or ():
                names[call["id"]] = call["function"]["name"]
            if message.get("role") == "tool":
                found.append((names.get(message["tool_call_id"]), message["content"]))
        return found

    assert sorted(answered(fixed.messages), key=repr) == sorted(answered(history), key=repr)


# --- the Claude models without prefill on Bedrock --------------------------------------------


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("us.anthropic.claude-opus-4-6-v1", "bedrock-no-prefill"),
        ("anthropic.claude-sonnet-4-6", "bedrock-no-prefill"),
        ("anthropic.claude-3-5-sonnet-20240620-v1:0", "bedrock"),
        ("us.meta.llama3-1-70b-instruct-v1:0", "bedrock-tools-alone"),
    ],
)
def test_a_claude_model_without_prefill_on_bedrock_meets_its_variant(
    model: str, expected: str
) -> None:
    """The model picks the variant on Bedrock as on Anthropic's API (strands-agents#1694 met
    "This model does not support assistant message prefill" on Bedrock's
    ``us.anthropic.claude-opus-4-6-v1``): it was plain ``bedrock``, which lets a request end on
    an assistant message."""
    assert toolmend.request_profile("bedrock", model=model) == expected
    assert toolmend.request_profile("bedrock", format="bedrock", model=model) == expected


@pytest.mark.parametrize("format", ["bedrock", "openai"])
def test_a_final_assistant_text_on_bedrock_claude_without_prefill_gets_the_bridge(
    format: str,
) -> None:
    """Flagged (``prefill_unsupported``, Anthropic's text) and repaired as under
    ``anthropic-no-prefill``: the text stays, the fixed user bridge follows; the other
    Bedrock models keep taking it as it is."""
    model = "us.anthropic.claude-opus-4-6-v1"
    if format == "bedrock":
        history: list[Any] = [
            {"role": "user", "content": [{"text": "Write a haiku."}]},
            {"role": "assistant", "content": [{"text": "Autumn"}]},
        ]
    else:
        history = [
            {"role": "user", "content": "Write a haiku."},
            {"role": "assistant", "content": "Autumn"},
        ]
    found = toolmend.check(history, provider="bedrock", format=format, model=model)
    assert [(p.code, p.index) for p in found] == [("prefill_unsupported", 1)]
    assert "does not support assistant message prefill" in found[0].provider_error
    fixed = toolmend.repair(history, provider="bedrock", format=format, model=model)
    assert [c.code for c in fixed.changes] == ["inserted_message"]
    assert fixed.messages[:2] == history and fixed.messages[2]["role"] == "user"
    assert fixed.problems_left == ()
    assert toolmend.check(history, provider="bedrock", format=format) == []


# --- found and left for the coordinator (each test failed then: xfail, strict; fixed since) ---


def test_openai_shaped_text_beside_calls_bound_for_bedrock_llama_is_flagged() -> None:
    """``bedrock-tools-alone`` modelled ``call_with_text`` on Converse blocks only: an
    OpenAI-shaped assistant message with text beside ``tool_calls``, which LiteLLM turns into
    one Converse turn holding both, was neither flagged nor split. It is both now, as on
    Converse blocks (more in tests/test_issue32_bedrock.py)."""
    history = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "21 C"},
        {"role": "assistant", "content": "21 C."},
        {"role": "user", "content": "Thanks."},
    ]
    model = "us.meta.llama3-1-70b-instruct-v1:0"
    found = toolmend.check(history, provider="bedrock", model=model)
    assert "call_with_text" in [problem.code for problem in found]
    fixed = toolmend.repair(history, provider="bedrock", model=model)
    assert fixed.messages == [
        history[0],
        {"role": "assistant", "content": "Let me check."},
        {"role": "user", "content": "Continue."},
        {"role": "assistant", "content": "", "tool_calls": history[1]["tool_calls"]},
        *history[2:],
    ]
    assert fixed.problems_left == ()


def test_a_final_assistant_text_to_claude_4_6_with_thinking_is_flagged() -> None:
    """Thinking on picked ``anthropic-thinking`` before the model was looked at, and that
    profile has no prefill rule: the request was not flagged. Both apply now
    (``anthropic-thinking-no-prefill``): flagged, and repaired as without thinking."""
    history = [
        {"role": "user", "content": "Write a haiku."},
        {"role": "assistant", "content": [{"type": "text", "text": "Autumn"}]},
    ]
    provider = toolmend.request_profile(
        "anthropic", model="claude-opus-4-6", thinking={"type": "enabled", "budget_tokens": 2048}
    )
    assert provider == "anthropic-thinking-no-prefill"
    found = toolmend.check(history, provider=provider, format="anthropic")
    assert [(problem.code, problem.index) for problem in found] == [("prefill_unsupported", 1)]
    assert "does not support assistant message prefill" in found[0].provider_error
    fixed = toolmend.repair(history, provider=provider, format="anthropic")
    assert fixed.messages == [*history, {"role": "user", "content": "Continue."}]
    assert fixed.messages[1] is history[1]
    assert [change.code for change in fixed.changes] == ["inserted_message"]
    assert toolmend.sanitize(fixed.messages, provider=provider) is fixed.messages


def test_the_thinking_variant_without_prefill_keeps_both_rule_sets() -> None:
    """The combined variant is the thinking variant plus the prefill rule, nothing less: a
    tool exchange whose calling turn has no thinking block is still written out as text."""
    both = get_profile("anthropic-thinking-no-prefill")
    thinking = get_profile("anthropic-thinking")
    assert both.thinking
    assert set(both.checks) == {*thinking.checks, "prefill_unsupported"}
    assert "prefill_unsupported" not in both.strict_checks
    assert "prefill_unsupported" not in thinking.checks
    unthought = [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "21"}],
        },
    ]
    codes = [p.code for p in toolmend.check(unthought, provider=both.name, format="anthropic")]
    assert codes == [p.code for p in toolmend.check(unthought, provider=thinking.name)]
    assert codes == ["thinking_required"]
    assert toolmend.repair(unthought, provider=both.name).messages == (
        toolmend.repair(unthought, provider=thinking.name).messages
    )


@pytest.mark.parametrize(
    ("model", "thinking", "profile"),
    [
        (
            "claude-opus-4-6",
            {"type": "enabled", "budget_tokens": 2048},
            "anthropic-thinking-no-prefill",
        ),
        ("claude-sonnet-4-6", {"type": "adaptive"}, "anthropic-thinking-no-prefill"),
        ("claude-opus-4-7", {"type": "adaptive"}, "anthropic-thinking-no-prefill"),
        ("claude-sonnet-4-5", {"type": "enabled"}, "anthropic-thinking"),
        ("claude-opus-4-6", {"type": "disabled"}, "anthropic-no-prefill"),
        (None, {"type": "enabled"}, "anthropic-thinking"),
    ],
)
def test_thinking_and_the_model_pick_the_variant_together(
    model: str | None, thinking: Any, profile: str
) -> None:
    assert toolmend.request_profile("anthropic", model=model, thinking=thinking) == profile


# --- a store's write-back keeps the newest input as it was stored ------------------------------


def test_a_write_back_stores_the_newest_input_as_it_was_stored() -> None:
    """A stored history whose last message is a tool result with no call before it (the
    newest input, sent as user text since issue 32) and damage before it: the write-back
    takes the damage out and leaves that result stored as a tool message (it stored a new
    human message in its place; test_history_stores.py's write-back property found it)."""
    from langchain_core.chat_history import InMemoryChatMessageHistory
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from toolmend.integrations.langchain_history import ToolMendHistory

    stored = [
        HumanMessage("Weather in Paris?"),
        ToolMessage("stale", tool_call_id="call_stale"),
        AIMessage("21 C."),
        HumanMessage("Thanks."),
        ToolMessage("And tomorrow?", tool_call_id="call_gone"),
    ]
    inner = InMemoryChatMessageHistory()
    inner.add_messages(stored)
    history = ToolMendHistory(inner, write_back=True)
    sent = history.messages
    assert [type(m).__name__ for m in sent][-1] == "HumanMessage"  # sent as user text
    assert "And tomorrow?" in str(sent[-1].content)
    assert [type(m).__name__ for m in inner.messages] == [
        "HumanMessage",
        "AIMessage",
        "HumanMessage",
        "ToolMessage",
    ]
    assert inner.messages[-1].content == "And tomorrow?"
    assert [r.message.content for r in history.rejected] == ["stale"]
