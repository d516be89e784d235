"""toolmend._routing: the one place a hook turns a host, a base URL, a model name or a request
setting into a provider profile."""

from __future__ import annotations

import pytest

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
