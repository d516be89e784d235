"""Self-hosted models judged by their own chat templates (issue 32): the model name picks the
profile (``toolmend.request_profile(server, model=...)``), and each template rule is shown
failing in the real template before the repair and passing after it.

The generated histories of ``test_judges.py`` run every template; these are the rules one by
one, each with the template's own error text.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

import toolmend
from toolmend.profiles import get_profile
from toolmend.profiles._templates import TEMPLATE_FAMILIES, template_profile

from support import judges

LLAMA = (
    "llamacpp__meta-llama-Llama-3.1-8B-Instruct.jinja",
    "llamacpp__meta-llama-Llama-3.2-3B-Instruct.jinja",
    "vllm__tool_chat_template_llama3.1_json.jinja",
)
MISTRAL = (
    "llamacpp__mistralai-Mistral-Nemo-Instruct-2407.jinja",
    "llamacpp__Mistral-Small-3.2-24B-Instruct-2506.jinja",
    "vllm__tool_chat_template_mistral.jinja",
)
GEMMA_3 = ("hf__google-gemma-3-it.jinja", "vllm__tool_chat_template_gemma3_pythonic.jinja")


def _call(call_id: str, name: str = "get_weather", city: str = "Paris") -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": f'{{"city": "{city}"}}'},
    }


def _fixed(history: list[Any], provider: str) -> list[Any]:
    result = toolmend.repair(history, provider=provider)
    assert result.problems_left == (), result.problems_left
    return list(result.messages)


# --- the model name picks the profile -----------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "profile"),
    [
        ("mistralai/Mistral-Nemo-Instruct-2407", "hf-mistral"),
        ("mistral-nemo:12b", "hf-mistral"),
        ("mistralai/Devstral-Small-2507", "hf-mistral"),
        ("devstral", "hf-mistral"),
        ("mistralai/Magistral-Small-2509", "hf-mistral"),
        ("MISTRALAI/MISTRAL-SMALL-3.2-24B-INSTRUCT-2506", "hf-mistral"),
        ("bartowski/Mistral-Nemo-Instruct-2407-GGUF", "hf-mistral"),
        ("meta-llama/Llama-3.1-8B-Instruct", "hf-llama-3"),
        ("meta-llama/Meta-Llama-3.1-70B-Instruct", "hf-llama-3"),
        ("llama3.1", "hf-llama-3"),
        ("llama3.2:3b", "hf-llama-3"),
        ("Llama-3.3-70B-Instruct", "hf-llama-3"),
        ("google/gemma-3-4b-it", "hf-gemma-3"),
        ("gemma3", "hf-gemma-3"),
        ("google/gemma-2-2b-it", "hf-template-strict"),
        ("gemma2:9b", "hf-template-strict"),
        ("Qwen/Qwen3-0.6B", "hf-template"),
        ("openai/gpt-oss-120b", "hf-template"),
        ("gpt-oss:20b", "hf-template"),
        ("NousResearch/Hermes-2-Pro-Mistral-7B", "hf-template"),
        ("ibm-granite/granite-3.3-2b-instruct", "hf-template"),
        ("microsoft/Phi-3.5-mini-instruct", "hf-template"),
        ("deepseek-ai/DeepSeek-V3.1", "hf-template"),
    ],
)
def test_the_model_name_picks_its_template_profile(model: str, profile: str) -> None:
    assert template_profile(model) == profile
    for server in ("vllm", "llama.cpp"):
        # the server's own name when it means the same profile (``vllm`` stays ``vllm``)
        picked = toolmend.request_profile(server, model=model)
        assert toolmend.get_profile(picked) is toolmend.get_profile(profile)


@pytest.mark.parametrize("model", [None, "", "my-finetune", "llama3", "llama-3.10-tiny"])
def test_an_unknown_model_keeps_the_server_profile(model: str | None) -> None:
    assert template_profile(model) is None
    assert toolmend.request_profile("vllm", model=model) == "vllm"


@pytest.mark.parametrize("name", sorted(judges.TEMPLATES))
def test_every_name_of_a_template_model_picks_one_profile(name: str) -> None:
    """The names a template lists (repo ids, Ollama tags) all meet the profile it is judged
    under, and that profile is one of the families' (a real profile name)."""
    picked = {judges.template_provider(name)} | {
        toolmend.request_profile("vllm", model=model) for model in judges.TEMPLATES[name]
    }
    assert len(picked) == 1, picked
    get_profile(picked.pop())


def test_every_family_profile_exists() -> None:
    for _, profile in TEMPLATE_FAMILIES:
        assert get_profile(profile).name == profile


# --- Llama 3.x: one call per message -------------------------------------------------------------

PARALLEL = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris, Oslo and Lima?"},
    {
        "role": "assistant",
        "content": "Looking.",
        "tool_calls": [_call("call_a"), _call("call_b", city="Oslo"), _call("call_c", city="Lima")],
    },
    {"role": "tool", "tool_call_id": "call_c", "content": "25 C"},
    {"role": "tool", "tool_call_id": "call_a", "content": "21 C"},
    {"role": "tool", "tool_call_id": "call_b", "content": "3 C"},
    {"role": "assistant", "content": "21, 3 and 25 C."},
    {"role": "user", "content": "Thanks."},
]


@pytest.mark.parametrize("name", LLAMA)
def test_llama_parallel_calls_are_split_into_single_call_turns(name: str) -> None:
    provider = judges.template_provider(name)
    assert provider == "hf-llama-3"
    assert judges.template_error(name, PARALLEL) == (
        "TemplateError: This model only supports single tool-calls at once!"
    )
    assert toolmend.check(PARALLEL, provider="hf-template") == []  # today's profile: blind
    problems = toolmend.check(PARALLEL, provider=provider)
    assert [(p.code, p.index) for p in problems] == [("parallel_calls", 2)]
    assert problems[0].provider_error == "This model only supports single tool-calls at once!"
    result = toolmend.repair(PARALLEL, provider=provider)
    fixed = list(result.messages)
    assert judges.template_error(name, fixed) is None
    assert toolmend.check(fixed, provider=provider) == []
    # every call followed by its own result, in call order; the text stays with the first
    layout = [
        (m["role"], m.get("content"), [c["id"] for c in m.get("tool_calls") or ()])
        if m["role"] != "tool"
        else ("tool", m["content"], [m["tool_call_id"]])
        for m in fixed
    ]
    assert layout[2:9] == [
        ("assistant", "Looking.", ["call_a"]),
        ("tool", "21 C", ["call_a"]),
        ("assistant", "", ["call_b"]),
        ("tool", "3 C", ["call_b"]),
        ("assistant", "", ["call_c"]),
        ("tool", "25 C", ["call_c"]),
        ("assistant", "21, 3 and 25 C.", []),
    ]
    assert "split_calls" in {change.code for change in result.changes}
    assert PARALLEL[2]["tool_calls"][1]["id"] == "call_b"  # the input is untouched


def test_a_split_call_without_a_result_is_answered_in_its_turn() -> None:
    history = [*PARALLEL[:4], PARALLEL[5], *PARALLEL[6:]]  # call_b's result lost
    fixed = _fixed(history, "hf-llama-3")
    ids = [m.get("tool_call_id") or m.get("tool_calls", [{}])[0].get("id") for m in fixed[2:8]]
    assert ids == ["call_a", "call_a", "call_b", "call_b", "call_c", "call_c"]
    for name in LLAMA:
        assert judges.template_error(name, fixed) is None


def test_llama_split_of_langchain_messages() -> None:
    calls = [
        {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_a"},
        {"name": "get_weather", "args": {"city": "Oslo"}, "id": "call_b"},
    ]
    history = [
        HumanMessage("Weather?"),
        AIMessage("", tool_calls=calls, id="run-1"),
        ToolMessage("3 C", tool_call_id="call_b"),
        ToolMessage("21 C", tool_call_id="call_a"),
        AIMessage("Done."),
    ]
    result = toolmend.repair(history, provider="hf-llama-3")
    assert result.problems_left == ()
    fixed = list(result.messages)
    assert [type(m).__name__ for m in fixed] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
    ]
    assert [c["id"] for c in fixed[1].tool_calls] == ["call_a"]
    assert fixed[1].id == "run-1"
    assert [c["id"] for c in fixed[3].tool_calls] == ["call_b"]
    assert fixed[3].id is None  # two messages may not share the id LangGraph merges on
    assert [fixed[2].tool_call_id, fixed[4].tool_call_id] == ["call_a", "call_b"]
    assert len(history[1].tool_calls) == 2


def test_a_message_with_one_call_is_not_split() -> None:
    history = [PARALLEL[1], {**PARALLEL[2], "tool_calls": [_call("call_a")]}, PARALLEL[4]]
    assert toolmend.repair(history, provider="hf-llama-3").messages is history


# --- Mistral family -------------------------------------------------------------------------------

CASE_5 = [
    {"role": "user", "content": "Fix the failing test."},
    {"role": "assistant", "content": "", "tool_calls": [_call("call_49c89af0", "read_file")]},
    {"role": "tool", "tool_call_id": "call_49c89af0", "content": "def test(): ..."},
    {"role": "assistant", "content": "Found it."},
    {"role": "user", "content": "Go on."},
]
"""Issue 32, case 5: Devstral behind a local OpenAI-compatible server."""


def test_case_5_devstral_behind_a_server_gets_mistral_ids() -> None:
    model = "mistralai/Devstral-Small-2507"
    assert judges.mistral_error(CASE_5, checks_ids=True) == (
        "InvalidFunctionCallException: Tool call id was call_49c89af0 but must be a-z, A-Z, "
        "0-9, with a length of 9."
    )
    profile = toolmend.request_profile("vllm", model=model)
    assert profile == "hf-mistral"
    problems = toolmend.check(CASE_5, provider=profile)
    assert {p.code for p in problems} == {"call_id_format"}
    fixed = _fixed(CASE_5, profile)
    assert judges.mistral_error(fixed, checks_ids=True) is None
    call_id = fixed[1]["tool_calls"][0]["id"]
    assert len(call_id) == 9 and call_id.isalnum() and fixed[2]["tool_call_id"] == call_id
    for name in (*MISTRAL, "llamacpp__unsloth-mistral-Devstral-Small-2507.jinja"):
        assert judges.template_error(name, CASE_5 if "Devstral" in name else fixed) is None
        assert judges.template_error(name, fixed) is None
    assert "length 9" in (judges.template_error(MISTRAL[0], CASE_5) or "")


TWO_USERS = [
    {"role": "user", "content": "Hi."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [_call("abcdefghi")]},
    {"role": "tool", "tool_call_id": "abcdefghi", "content": "21 C"},
    {"role": "assistant", "content": "21 C."},
    {"role": "user", "content": "Thanks."},
]


def test_mistral_templates_want_alternation_that_mistral_common_does_not() -> None:
    """The evidence behind HF-MISTRAL-ALTERNATION: mistral-common takes two user messages in
    a row, the templates refuse them; the repair merges them, which both take."""
    assert judges.mistral_error(TWO_USERS, checks_ids=True) is None
    assert toolmend.check(TWO_USERS, provider="mistral") == []
    for name in MISTRAL:
        assert "conversation roles must alternate" in (judges.template_error(name, TWO_USERS) or "")
    problems = toolmend.check(TWO_USERS, provider="hf-mistral")
    assert [(p.code, p.index) for p in problems] == [("roles_not_alternating", 1)]
    fixed = _fixed(TWO_USERS, "hf-mistral")
    assert fixed[0] == {"role": "user", "content": "Hi.\n\nWeather in Paris?"}
    assert judges.mistral_error(fixed, checks_ids=True) is None
    for name in MISTRAL:
        assert judges.template_error(name, fixed) is None


def test_mistral_user_bridge_goes_before_the_tool_traffic() -> None:
    """Assistant text, then a call and its result, then assistant text: the templates want a
    user turn between the two texts, mistral-common none right after a result."""
    history = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "Let me look."},
        {"role": "assistant", "content": "", "tool_calls": [_call("abcdefghi")]},
        {"role": "tool", "tool_call_id": "abcdefghi", "content": "21 C"},
        {"role": "assistant", "content": "21 C."},
        {"role": "user", "content": "Thanks."},
    ]
    assert judges.template_error(MISTRAL[0], history) is not None
    fixed = _fixed(history, "hf-mistral")
    assert [m["role"] for m in fixed] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    assert fixed[2]["content"] == toolmend._repair.USER_BRIDGE_TEXT
    assert judges.mistral_error(fixed, checks_ids=True) is None
    for name in MISTRAL:
        assert judges.template_error(name, fixed) is None


def test_mistral_final_assistant_messages_merged_then_answered() -> None:
    """Two assistant messages at the end merge into one, which can carry no prefix mark: the
    request then ends on the user bridge, as Mistral's last-role rule wants."""
    history = [
        {"role": "user", "content": "Hi."},
        {"role": "assistant", "content": "Hello."},
        {"role": "assistant", "content": "How can I help?"},
    ]
    fixed = _fixed(history, "hf-mistral")
    assert [m["role"] for m in fixed] == ["user", "assistant", "user"]
    assert judges.mistral_error(fixed, checks_ids=True) is None
    for name in MISTRAL:
        assert judges.template_error(name, fixed) is None


def test_devstral_gets_text_beside_its_calls() -> None:
    history = [{**m, "content": None} if m.get("tool_calls") else m for m in CASE_5]
    name = "llamacpp__unsloth-mistral-Devstral-Small-2507.jinja"
    assert "has no element 0" in (judges.template_error(name, history) or "")
    fixed = _fixed(history, "hf-mistral")
    assert fixed[1]["content"] == ""
    assert judges.template_error(name, fixed) is None
    assert judges.mistral_error(fixed, checks_ids=True) is None


# --- Gemma 3: a leading system message stays ----------------------------------------------------

WITH_SYSTEM = [
    {"role": "system", "content": "Answer in French."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [_call("call_a")]},
    {"role": "tool", "tool_call_id": "call_a", "content": "21 C"},
    {"role": "assistant", "content": "21 C."},
    {"role": "user", "content": "Merci."},
]


@pytest.mark.parametrize("name", GEMMA_3)
def test_gemma_3_keeps_its_leading_system_message(name: str) -> None:
    provider = judges.template_provider(name)
    assert provider == "hf-gemma-3"
    if name.startswith("hf__"):  # Google's own has no tool role (vLLM's pythonic one has)
        assert "must alternate" in (judges.template_error(name, WITH_SYSTEM) or "")
    fixed = _fixed(WITH_SYSTEM, provider)
    assert fixed[0] is WITH_SYSTEM[0]
    assert [m["role"] for m in fixed] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert judges.template_error(name, fixed) is None
    # Gemma 2 has no system role: there it is still folded into the first user turn
    gemma_2 = _fixed(WITH_SYSTEM, "hf-template-strict")
    assert gemma_2[0]["role"] == "user" and "Answer in French." in gemma_2[0]["content"]


def test_gemma_3_drops_an_empty_tool_calls_list() -> None:
    history = [
        {"role": "user", "content": "Hi."},
        {"role": "assistant", "content": "Hello.", "tool_calls": []},
        {"role": "user", "content": "Bye."},
        {"role": "assistant", "content": "Bye.", "tool_calls": []},
    ]
    name = "vllm__tool_chat_template_gemma3_pythonic.jinja"
    assert "must alternate" in (judges.template_error(name, history) or "")
    assert toolmend.check(history, provider="hf-template-strict") == []
    fixed = _fixed(history, "hf-gemma-3")
    assert all("tool_calls" not in m for m in fixed)
    assert judges.template_error(name, fixed) is None


def test_gemma_3_writes_out_a_call_nobody_answered() -> None:
    """vLLM's pythonic template counts a message with calls out of its alternation, so an
    unanswered call before a user message breaks it (Google's template drops the call)."""
    history = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "Looking.", "tool_calls": [_call("call_a")]},
        {"role": "user", "content": "Are you done yet?"},
        {"role": "assistant", "content": "Yes."},
    ]
    name = "vllm__tool_chat_template_gemma3_pythonic.jinja"
    assert "must alternate" in (judges.template_error(name, history) or "")
    problems = toolmend.check(history, provider="hf-gemma-3")
    assert [(p.code, p.index) for p in problems] == [("missing_result", 1)]
    fixed = _fixed(history, "hf-gemma-3")
    assert "[tool call call_a: get_weather" in fixed[1]["content"]
    assert "Are you done yet?" in fixed[2]["content"]
    for template in GEMMA_3:
        assert judges.template_error(template, fixed) is None
