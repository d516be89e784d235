"""Every hook hands the model it knows to the profile choice: an OpenAI-compatible endpoint at a
host no table names (a self-hosted server on 127.0.0.1, a gateway) is judged by the model.

Real SDKs (openai, LiteLLM, langchain-openai, the Agents SDK) and real HTTP to the strict
provider server. The server judges a Chat Completions request by its model as a self-hosted
server would: ``mistralai/Devstral-Small-2507`` by Mistral's rules (a model only Mistral's
family serves: its chat template wants 9-character call ids, ``Tool call id was call_49c89af0
but must be a-z, A-Z, 0-9, with a length of 9``, issue 32 case 5), and, as
``StrictProviderServer("vllm")``, any model by the rules of its chat template
(:func:`toolmend._routing.request_profile` on ``vllm`` and the model). Which models have
template rules is the templates' data (``toolmend.profiles._templates``): Mistral Nemo's
template wants Mistral's ids, as Devstral's does.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before LiteLLM is imported

import asyncio
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import toolmend
import toolmend._routing
import toolmend.integrations.patch as tm
from toolmend.integrations.hooks import SELF_HOSTED, compatible_provider
from toolmend.testing import StrictProviderServer

openai = pytest.importorskip("openai")

DEVSTRAL = "mistralai/Devstral-Small-2507"
TEMPLATED = "mistralai/Mistral-Nemo-Instruct-2407"
"""A model whose chat template wants Mistral's ids (the ``hf-mistral`` profile)."""
LONG_ID = "call_49c89af0"
ID_ERROR = (
    f"Tool call id was {LONG_ID} but must be a-z, A-Z, 0-9, with a length of 9"  # mistral-common
    "|Tool call IDs should be alphanumeric strings with length 9"  # Mistral's chat templates
)


def judged_as(model: str) -> str:
    """The profile a self-hosted ``model`` at an unknown host gets: its chat template's when
    toolmend knows it (the templates' data), else that of the one provider serving it."""
    templated = toolmend._routing.request_profile(SELF_HOSTED, model=model)
    if templated != toolmend._routing.request_profile(SELF_HOSTED):
        return templated
    return toolmend._routing.provider_for_model(model) or "openai"


def history() -> list[dict[str, Any]]:
    """A whole tool round trip under an OpenAI-style call id."""
    call = {"id": LONG_ID, "type": "function", "function": {"name": "f", "arguments": "{}"}}
    return [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": LONG_ID, "content": "21 C"},
        {"role": "user", "content": "Thanks."},
    ]


def sent_ids(server: StrictProviderServer) -> set[str]:
    sent = server.last_request.history
    return {m["tool_call_id"] for m in sent if m["role"] == "tool"}


@pytest.fixture
def templated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The hooks' caches forget what they saw, before and after the test."""
    del monkeypatch
    caches = _caches()
    for clear in caches:
        clear()
    yield
    for clear in caches:
        clear()


def _caches() -> list[Callable[[], None]]:
    found: list[Callable[[], None]] = []
    for name, function in (
        ("toolmend.integrations.litellm", "profile_for"),
        ("toolmend.integrations.openai_agents", "_chat_profile"),
    ):
        try:
            module = __import__(name, fromlist=[function])
        except ImportError:
            continue
        found.append(getattr(module, function).cache_clear)
    return found


# --- the rule -----------------------------------------------------------------------------------


def test_a_named_host_decides_else_the_model(templated: None) -> None:
    assert compatible_provider("groq", DEVSTRAL) == "groq"  # the host's API, whatever the model
    assert compatible_provider(None, TEMPLATED) == SELF_HOSTED  # its template's rules
    assert toolmend._routing.request_profile(SELF_HOSTED, model=TEMPLATED) == "hf-mistral"
    # only Mistral's family serves it (until toolmend knows Devstral's own template)
    assert toolmend._routing.request_profile(
        compatible_provider(None, DEVSTRAL), model=DEVSTRAL
    ) == (judged_as(DEVSTRAL))
    assert judged_as(DEVSTRAL) != "openai"
    assert compatible_provider(None, "deepseek-chat") == "deepseek"
    assert compatible_provider(None, "gpt-4o") == "openai"  # a gateway, as before
    assert compatible_provider(None, None) == compatible_provider(None, "") == "openai"


# --- the raw openai SDK, patched ----------------------------------------------------------------


@pytest.fixture
def unpatched() -> Iterator[None]:
    tm.unpatch()
    yield
    tm.unpatch()


def _sync(client_for: Callable[..., Any], model: str, messages: Any) -> None:
    with client_for(openai.OpenAI) as client:
        client.chat.completions.create(model=model, messages=messages)


def _stream(client_for: Callable[..., Any], model: str, messages: Any) -> None:
    with client_for(openai.OpenAI) as client:
        for _ in client.chat.completions.create(model=model, messages=messages, stream=True):
            pass


def _async(client_for: Callable[..., Any], model: str, messages: Any) -> None:
    async def go() -> None:
        async with client_for(openai.AsyncOpenAI) as client:
            await client.chat.completions.create(model=model, messages=messages)

    asyncio.run(go())


CALLS = {"sync": _sync, "stream": _stream, "async": _async}


@pytest.mark.parametrize("how", sorted(CALLS))
@pytest.mark.parametrize(("server_provider", "model"), [(None, DEVSTRAL), ("vllm", TEMPLATED)])
def test_the_patched_openai_client_judges_a_local_server_by_the_model(
    how: str,
    server_provider: str | None,
    model: str,
    templated: None,
    unpatched: None,
    strict_provider_factory: Callable[..., StrictProviderServer],
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = strict_provider_factory(server_provider)

    def client_for(kind: Any) -> Any:
        return kind(api_key="test", base_url=server.openai_base_url, max_retries=0)

    messages = history()
    with pytest.raises(openai.BadRequestError, match=ID_ERROR):
        CALLS[how](client_for, model, messages)
    tm.patch(google_genai=False, anthropic=False)
    with caplog.at_level(logging.INFO, logger="toolmend"):
        CALLS[how](client_for, model, messages)
    assert server.last_request.accepted, server.last_request.error
    (new_id,) = sent_ids(server)
    assert len(new_id) == 9 and new_id.isalnum()
    assert messages == history()  # the caller's list is left as it was
    (line,) = [r.getMessage() for r in caplog.records if "repaired" in r.getMessage()]
    assert f"for {judged_as(model)}: " in line and "rewrote_call_id" in line


def test_patch_provider_still_wins_over_the_model(
    unpatched: None, strict_provider_factory: Callable[..., StrictProviderServer]
) -> None:
    server = strict_provider_factory("openai")
    tm.patch(google_genai=False, anthropic=False, provider="openai")
    with openai.OpenAI(api_key="t", base_url=server.openai_base_url, max_retries=0) as client:
        client.chat.completions.create(model=DEVSTRAL, messages=history())
    assert sent_ids(server) == {LONG_ID}


# --- LiteLLM ------------------------------------------------------------------------------------


@pytest.fixture
def litellm_callback() -> Iterator[Any]:
    litellm = pytest.importorskip("litellm")
    from toolmend.integrations.litellm import ToolMend

    saved = list(litellm.callbacks)
    litellm.callbacks = [ToolMend()]
    yield litellm
    litellm.callbacks = saved


@pytest.mark.parametrize(
    ("model", "server_provider"),
    [(f"openai/{DEVSTRAL}", None), (f"hosted_vllm/{TEMPLATED}", "vllm")],
    ids=["openai-compatible api_base", "hosted_vllm"],
)
def test_litellm_judges_a_self_hosted_deployment_by_its_model(
    model: str,
    server_provider: str | None,
    templated: None,
    litellm_callback: Any,
    strict_provider_factory: Callable[..., StrictProviderServer],
) -> None:
    from toolmend.integrations.litellm import profile_for

    server = strict_provider_factory(server_provider)
    assert profile_for(model, None, server.openai_base_url) == judged_as(model.split("/", 1)[1])
    messages = history()
    litellm_callback.completion(
        model=model,
        api_base=server.openai_base_url,
        api_key="t",
        messages=messages,
        max_retries=0,
    )
    assert server.last_request.accepted, server.last_request.error
    (new_id,) = sent_ids(server)
    assert len(new_id) == 9 and messages == history()


def test_litellm_keeps_its_own_providers_names() -> None:
    from toolmend.integrations.litellm import profile_for

    assert profile_for("openai/gpt-4o", None, "http://127.0.0.1:9/v1") == "openai"
    assert profile_for("openai/x", None, "https://api.groq.com/openai/v1") == "groq"
    assert profile_for("openai/deepseek-chat") == "openai"  # api.openai.com: OpenAI's rules
    assert profile_for("hosted_vllm/some/model", None, "http://127.0.0.1:9/v1") == "vllm"


# --- LangChain, and the Agents SDK's Chat Completions models ------------------------------------


def test_langchain_reads_a_local_base_url_by_the_model(templated: None) -> None:
    from langchain_openai import ChatOpenAI

    from toolmend.integrations.langchain import provider_for

    def model(name: str, base_url: str) -> Any:
        return ChatOpenAI(model=name, base_url=base_url, api_key="t")

    assert provider_for(model(TEMPLATED, "http://127.0.0.1:8000/v1")) == "hf-mistral"
    assert provider_for(model("gpt-4o", "http://127.0.0.1:8000/v1")) == "openai"
    # a named host is that provider's API, whatever the model
    assert provider_for(model("mistral-saba-24b", "https://api.groq.com/openai/v1")) == "groq"


def test_the_agents_sdk_reads_a_local_base_url_by_the_model(templated: None) -> None:
    pytest.importorskip("agents")
    from agents import OpenAIChatCompletionsModel

    from toolmend.integrations.openai_agents import target_for

    def model(name: str, base_url: str) -> Any:
        client = openai.AsyncOpenAI(api_key="t", base_url=base_url)
        return OpenAIChatCompletionsModel(model=name, openai_client=client)

    assert target_for(model(TEMPLATED, "http://127.0.0.1:8000/v1")).profile == "hf-mistral"
    assert target_for(model(DEVSTRAL, "http://127.0.0.1:8000/v1")).profile == judged_as(DEVSTRAL)
    assert target_for(model(DEVSTRAL, "https://api.groq.com/openai/v1")).profile == "groq"
    assert target_for(model("gpt-4o", "http://127.0.0.1:8000/v1")).profile == "openai"
