"""toolmend._routing: the one place a hook turns a host, a base URL, a model name or a request
setting into a provider profile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolmend
from toolmend._routing import HOSTS, converted_profile, provider_for_base_url


@pytest.mark.parametrize(
    ("base_url", "provider"),
    [
        ("https://api.deepseek.com/v1", "deepseek"),
        ("https://API.Mistral.ai/v1/", "mistral"),
        ("https://myco.openai.azure.com/openai/deployments/x", "azure"),
        ("https://generativelanguage.googleapis.com/v1beta/openai/", "gemini"),
        ("http://127.0.0.1:8000/v1", None),
        ("https://openrouter.ai/api/v1", None),
        ("", None),
        (None, None),
    ],
)
def test_provider_for_base_url(base_url: str | None, provider: str | None) -> None:
    assert provider_for_base_url(base_url) == provider


@pytest.mark.parametrize(
    ("provider", "model", "profile"),
    [
        ("deepseek", "deepseek-reasoner", "deepseek-reasoner"),
        ("deepseek", "deepseek-chat", "deepseek"),
        ("gemini", "claude-sonnet-4-5@20250929", "anthropic"),  # a Vertex AI partner model
        ("gemini", "gemini-2.5-flash", "gemini"),
        ("gemini", "gemini-3-pro-preview", "gemini"),  # the gateway carries the signatures
        ("anthropic", "claude-sonnet-4-5", "anthropic"),
        ("bedrock", "anthropic.claude-3-5-sonnet-20240620-v1:0", "bedrock"),
        ("openai", "gpt-4o", "openai"),
        ("openai", None, "openai"),
    ],
)
def test_converted_profile(provider: str, model: str | None, profile: str) -> None:
    assert converted_profile(provider, model) == profile


def test_every_profile_routing_names_exists() -> None:
    names = {provider for _, provider in HOSTS}
    names |= {
        converted_profile("gemini", "claude-x"),
        converted_profile("deepseek", "deepseek-reasoner"),
    }
    for name in names:
        toolmend.check([], provider=name, format="openai")


# --- a profile derived from who serves the request, the history's format and the model ---------

RESPONSES = "openai-responses"


@pytest.mark.parametrize(
    ("provider", "format", "model", "profile"),
    [
        # names in use before keep their answers (a name that already means the profile)
        ("openai", None, None, "openai"),
        ("azure", None, "gpt-4o", "azure"),
        ("vllm", None, None, "vllm"),
        ("claude", None, None, "claude"),
        ("openai-responses", None, None, "openai-responses"),
        ("deepseek", None, "deepseek-reasoner", "deepseek-reasoner"),
        ("gemini", None, "gemini-3-pro-preview", "gemini-3"),
        # the format picks the vendor's API
        ("openai", RESPONSES, None, "openai-responses"),
        ("azure", RESPONSES, "gpt-4.1", "openai-responses"),
        ("deepseek", RESPONSES, "deepseek-v4-flash", "deepseek-responses"),
        ("vllm", RESPONSES, "openai/gpt-oss-20b", "hf-template-responses"),
        ("Ollama", RESPONSES, None, "hf-template-responses"),
        ("lmstudio", RESPONSES, None, "hf-template-responses"),
        ("anthropic", "anthropic", None, "anthropic"),
        ("gemini", "gemini", "gemini-3-flash", "gemini-3"),
        # vendor aliases and servers: the name given, when it means the profile
        ("vertex", None, "gemini-3-pro-preview", "gemini-3"),
        ("ollama", None, None, "ollama"),
        ("openrouter", None, "anthropic/claude-sonnet-4-5", "openrouter"),
        ("llama-server", None, None, "llama-server"),
    ],
)
def test_request_profile_follows_vendor_format_and_model(
    provider: str, format: str | None, model: str | None, profile: str
) -> None:
    assert toolmend.request_profile(provider, format=format, model=model) == profile
    assert toolmend.get_profile(profile)  # a name check/repair take


@pytest.mark.parametrize("provider", ["mistral", "groq", "anthropic", "llama.cpp", "tgi"])
def test_a_vendor_without_a_responses_api_is_an_error_naming_those_with_one(
    provider: str,
) -> None:
    with pytest.raises(toolmend.InvalidHistoryError) as raised:
        toolmend.check(RESPONSES_AFTER_DEVELOPER, provider=provider)
    message = str(raised.value)
    assert f"{provider!r} serves no Responses API" in message
    assert "openai, azure, deepseek, vllm, ollama, lm-studio" in message


def test_a_chat_profile_named_outright_still_refuses_responses_items() -> None:
    # a vendor-and-API pair keeps its meaning: the chat API's profile, not the vendor
    for name in ("openai-chat", "deepseek-chat", "hf-template-strict"):
        with pytest.raises(toolmend.InvalidHistoryError, match="judges Chat Completions"):
            toolmend.check(RESPONSES_AFTER_DEVELOPER, provider=name)


def test_an_unknown_name_lists_vendors_and_servers_not_aliases() -> None:
    with pytest.raises(toolmend.UnknownNameError) as raised:
        toolmend.check([], provider="olama")
    message = str(raised.value)
    assert "Did you mean 'ollama'?" in message
    listed = message.split("Vendors and servers: ")[1].split(" (")[0].split(", ")
    assert listed[:3] == ["openai", "azure", "deepseek"] and "vllm" in listed
    assert "claude" not in listed and "openai-responses" not in listed and len(listed) < 20


def test_every_vendor_and_server_name_is_a_provider_name() -> None:
    from toolmend.profiles._vendors import VENDORS

    for vendor in VENDORS:
        for name in (vendor.name, *vendor.aliases):
            assert toolmend.get_profile(name).name == vendor.chat
            toolmend.check([{"role": "user", "content": "hi"}], provider=name)


def test_model_is_a_keyword_of_check_repair_and_sanitize() -> None:
    history = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [_chat_call("call_1")]},
        {"role": "tool", "tool_call_id": "call_1", "content": "21 C"},
    ]
    assert toolmend.check(history, provider="deepseek") == []
    problems = toolmend.check(history, provider="deepseek", model="deepseek-reasoner")
    assert [problem.code for problem in problems] == ["missing_reasoning"]
    fixed = toolmend.repair(history, provider="deepseek", model="deepseek-reasoner")
    assert [change.code for change in fixed.changes] == ["added_reasoning_content"]
    assert (
        "reasoning_content"
        in toolmend.sanitize(history, provider="deepseek", model="deepseek-reasoner")[1]
    )


def test_the_derivation_is_cached() -> None:
    from toolmend import _api, _routing

    _api._derived.cache_clear()
    _routing._derived.cache_clear()
    for _ in range(3):
        toolmend.check(RESPONSES_AFTER_DEVELOPER, provider="deepseek", model="deepseek-v4-flash")
    info = _api._derived.cache_info()
    assert (info.misses, info.hits) == (1, 2)
    assert _routing._derived.cache_info().misses == 1  # derived once, then looked up


# --- case 6: DeepSeek's /v1/responses wants each output right after its call ------------------

USER = {"type": "message", "role": "user", "content": "Weather in Paris and Rome?"}
DEVELOPER = {"type": "message", "role": "developer", "content": "Context a hook added."}


def _fc(call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "get_weather", "arguments": "{}"}


def _out(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "21 C"}


def _chat_call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}


RESPONSES_AFTER_DEVELOPER = [USER, _fc("call_00_ET_1"), DEVELOPER, _out("call_00_ET_1")]
"""The issue's case: a hook's developer message between a call and its output (Codex on
DeepSeek, deepseek-ai/DeepSeek-V3#1588), which OpenAI's Responses API takes."""


def test_deepseek_responses_case_6() -> None:
    assert toolmend.check(RESPONSES_AFTER_DEVELOPER) == []  # OpenAI's rules: accepted
    problems = toolmend.check(RESPONSES_AFTER_DEVELOPER, provider="deepseek")
    assert problems[0].code == "missing_result"
    assert problems[0].provider_error == "No tool output found for tool call call_00_ET_1."
    fixed = toolmend.repair(RESPONSES_AFTER_DEVELOPER, provider="deepseek")
    assert fixed.messages == [USER, _fc("call_00_ET_1"), _out("call_00_ET_1"), DEVELOPER]
    assert [c.code for c in fixed.changes] == ["moved_message", "moved_result"]
    assert fixed.problems_left == ()
    assert toolmend.check(fixed.messages, provider="deepseek-responses") == []


@pytest.mark.parametrize(
    "items",
    [
        [USER, _fc("a"), _fc("b"), _out("a"), _out("b")],  # a run of parallel calls
        [USER, _fc("a"), _fc("b"), _out("b"), _out("a")],
        [USER, _fc("a"), _out("a"), _fc("b"), _out("b")],  # one call a turn
        [USER, _fc("a"), _out("a"), USER, _fc("a"), _out("a")],  # an id reused a turn later
    ],
)
def test_deepseek_responses_accepts_outputs_right_after_their_run(
    items: list[dict[str, Any]],
) -> None:
    assert toolmend.check(items, provider="deepseek") == []
    assert toolmend.sanitize(items, provider="deepseek") is items


def test_deepseek_responses_keeps_a_run_of_parallel_calls_whole() -> None:
    # splitting the run into call, output, call, output would make the second call a turn of
    # its own, without its reasoning (Kohaku-Lab/KohakuTerrarium#323): the outputs come after
    items = [USER, _fc("a"), _fc("b"), _out("b"), DEVELOPER, _out("a")]
    fixed = toolmend.repair(items, provider="deepseek")
    assert fixed.messages == [USER, _fc("a"), _fc("b"), _out("b"), _out("a"), DEVELOPER]
    # a missing output is answered after the run, not between its calls
    fixed = toolmend.repair([USER, _fc("a"), _fc("b"), _out("b")], provider="deepseek")
    kinds = [(m["type"], m.get("call_id")) for m in fixed.messages[1:]]
    assert kinds == [
        ("function_call", "a"),
        ("function_call", "b"),
        ("function_call_output", "a"),
        ("function_call_output", "b"),
    ]
    assert [c.code for c in fixed.changes] == ["answered_missing_call"]


def test_deepseek_responses_texts_for_an_orphan_output() -> None:
    problems = toolmend.check([USER, _out("call_x")], provider="deepseek")
    assert [p.provider_error for p in problems] == [
        "No tool call found for tool output with call_id call_x."
    ]


_ITEMS = st.lists(
    st.one_of(
        st.sampled_from(["a", "b", "c"]).map(_fc),
        st.sampled_from(["a", "b", "c", "d"]).map(_out),
        st.just(USER),
        st.just(DEVELOPER),
    ),
    max_size=12,
).map(lambda items: [USER, *items])


@given(_ITEMS)
def test_a_deepseek_responses_repair_leaves_nothing_deepseek_refuses(
    items: list[dict[str, Any]],
) -> None:
    fixed = toolmend.repair(items, provider="deepseek")
    assert fixed.problems_left == ()
    assert toolmend.check(fixed.messages, provider="deepseek") == []
    if not toolmend.check(items, provider="deepseek"):
        assert fixed.messages is items
    # nothing but results is dropped or invented: every call and message is still there (a
    # trailing orphan output, the newest input, is kept as user text since issue 32)
    kept = [
        item
        for item in fixed.messages
        if item.get("type") != "function_call_output"
        and not str(item.get("content")).startswith("[tool result ")
    ]
    assert kept == [item for item in items if item.get("type") != "function_call_output"]


def test_the_strict_server_judges_deepseeks_responses_route() -> None:
    import openai

    from toolmend.testing import StrictProviderServer

    with StrictProviderServer() as server:
        client = openai.OpenAI(
            api_key="test-key", base_url=server.base_url_for("deepseek") + "/v1", max_retries=0
        )
        with pytest.raises(openai.BadRequestError) as raised:
            client.responses.create(model="deepseek-v4-flash", input=RESPONSES_AFTER_DEVELOPER)
        assert "No tool output found for tool call call_00_ET_1." in str(raised.value)
        assert server.last_request.provider == "deepseek-responses"
        fixed = toolmend.sanitize(RESPONSES_AFTER_DEVELOPER, provider="deepseek")
        client.responses.create(model="deepseek-v4-flash", input=fixed)
        assert server.last_request.status == 200


def test_the_cli_takes_model_and_names_the_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolmend._cli import main

    source = tmp_path / "items.json"
    source.write_text(json.dumps(RESPONSES_AFTER_DEVELOPER), encoding="utf-8")
    assert main(["check", str(source), "-p", "deepseek", "--model", "deepseek-v4-flash"]) == 1
    out = capsys.readouterr().out
    assert "problem(s) for deepseek-responses" in out
    assert "No tool output found for tool call call_00_ET_1." in out


def test_the_fast_path_vouches_by_the_model_too() -> None:
    from toolmend._fastpath import vouch

    history = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": None, "tool_calls": [_chat_call("call_1")]},
        {"role": "tool", "tool_call_id": "call_1", "content": "21 C"},
    ]
    assert vouch(history, provider="deepseek", format="openai") is not None
    assert vouch(history, provider="deepseek", format="openai", model="deepseek-reasoner") is None
