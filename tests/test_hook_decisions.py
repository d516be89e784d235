"""Each decision the hooks make lives in one place in the core: the policy parser
(toolmend._policy.as_policy), the profile a request meets (toolmend._routing), the result of a
repair (toolmend._api.Mended), and what a history store may append (toolmend._appending). These
tests hold the hooks to calling them."""

from __future__ import annotations

from typing import Any

import pytest

import toolmend
import toolmend._api
import toolmend._policy
import toolmend._routing
from toolmend.integrations import hooks


def test_the_hooks_return_the_cores_mended() -> None:
    assert hooks.Mended is toolmend._api.Mended
    mended = hooks.mend([{"role": "user", "content": "hi"}], provider="openai", source="test")
    assert isinstance(mended, toolmend._api.Mended) and not mended.failed


def _spy(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[tuple[Any, ...]]:
    real = getattr(owner, name)
    calls: list[tuple[Any, ...]] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append((*args, *sorted(kwargs.items())))
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, spy)
    return calls


def test_the_history_wrapper_parses_its_policy_with_the_core(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from toolmend.integrations.langchain import ToolMendHistory

    from support.hook_entries import in_memory

    calls = _spy(monkeypatch, toolmend._policy, "as_policy")
    history = ToolMendHistory(in_memory(), policy="strict")
    assert ("strict", ("frontier", "keep")) in calls
    assert history.policy == toolmend.Policy(mode=toolmend.Mode.STRICT, frontier="keep")


def test_patch_parses_its_policy_with_the_core(monkeypatch: pytest.MonkeyPatch) -> None:
    import toolmend.integrations.patch as tm

    calls = _spy(monkeypatch, toolmend._policy, "as_policy")
    try:
        tm.patch(openai=False, google_genai=False, anthropic=False, policy="report")
    finally:
        tm.unpatch()
    assert any(call[0] == "report" for call in calls)
    with pytest.raises(toolmend.UnknownNameError, match="Unknown policy 'fix'"):
        tm.patch(openai=False, google_genai=False, anthropic=False, policy="fix")


def test_litellm_picks_the_profile_through_routing(monkeypatch: pytest.MonkeyPatch) -> None:
    litellm_hook = pytest.importorskip("toolmend.integrations.litellm")
    calls = _spy(monkeypatch, toolmend._routing, "converted_profile")
    litellm_hook.profile_for.cache_clear()
    try:
        assert litellm_hook.profile_for("deepseek/deepseek-reasoner") == "deepseek-reasoner"
    finally:
        litellm_hook.profile_for.cache_clear()
    assert calls == [("deepseek", "deepseek-reasoner")]


def test_the_middleware_reads_the_base_url_through_routing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from langchain_openai import ChatOpenAI

    from toolmend.integrations.langchain import provider_for

    calls = _spy(monkeypatch, toolmend._routing, "provider_for_base_url")
    model = ChatOpenAI(model="some-model", base_url="https://api.groq.com/openai/v1", api_key="t")
    assert provider_for(model) == "groq"
    assert calls == [("https://api.groq.com/openai/v1",)]


def test_the_host_table_is_written_once() -> None:
    """patch's docs point to routing.HOSTS instead of copying it."""
    import toolmend.integrations.patch as tm

    assert tm.HOSTS is toolmend._routing.HOSTS
    assert tm.__doc__ is not None
    assert not [host for host, _ in toolmend._routing.HOSTS if host in tm.__doc__]
