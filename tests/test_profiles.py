"""Profiles are documented data: every enabled check carries the provider's text and its source."""

from __future__ import annotations

import dataclasses

import pytest

from toolmend.profiles import PROFILES, Profile, get_profile


@pytest.mark.parametrize("profile", PROFILES.values(), ids=list(PROFILES))
def test_every_enabled_check_has_text_rule_and_source(profile: Profile) -> None:
    assert profile.checks, profile.name
    for code, check in profile.checks.items():
        assert check.error.strip(), (profile.name, code)
        assert check.rule.strip(), (profile.name, code)
        assert check.source.strip(), (profile.name, code)
        assert check.status in {"observed", "documented", "inferred"}


def test_every_profile_field_is_documented() -> None:
    import inspect

    source = inspect.getsource(Profile)
    for field in dataclasses.fields(Profile):
        declared = source.split(f"    {field.name}:", 1)[1]
        assert declared.split("\n", 2)[1].strip().startswith('"""'), field.name


def test_names_aliases_and_case() -> None:
    assert get_profile("Azure") is PROFILES["openai"]
    assert get_profile("DEEPSEEK") is PROFILES["deepseek"]
    assert get_profile(PROFILES["groq"]) is PROFILES["groq"]
