"""Profiles are documented data: every enabled check carries the provider's text and its source."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from toolmend.profiles import PROFILES, Profile, get_profile
from toolmend.profiles import _base as _profile_base


@pytest.mark.parametrize("profile", PROFILES.values(), ids=list(PROFILES))
def test_every_enabled_check_has_text_rule_and_source(profile: Profile) -> None:
    assert profile.checks, profile.name
    for code, check in profile.checks.items():
        assert check.error.strip(), (profile.name, code)
        assert check.rule.strip(), (profile.name, code)
        assert check.source.strip(), (profile.name, code)
        assert check.status in {"observed", "documented", "inferred"}


def test_every_profile_field_is_documented() -> None:
    # The module's text, not ``inspect.getsource``: that parses the whole module with ``ast``,
    # which Python 3.11 cannot do while a finalizer elsewhere parses too (see
    # tests/support/event_loops.py).
    module_text = Path(_profile_base.__file__).read_text(encoding="utf-8")
    source = module_text.split("\nclass Profile:\n", 1)[1].split("\nclass ", 1)[0]
    for field in dataclasses.fields(Profile):
        declared = source.split(f"    {field.name}:", 1)[1]
        assert declared.split("\n", 2)[1].strip().startswith('"""'), field.name


def test_names_aliases_and_case() -> None:
    assert get_profile("Azure") is PROFILES["openai"]
    assert get_profile("DEEPSEEK") is PROFILES["deepseek"]
    assert get_profile(PROFILES["groq"]) is PROFILES["groq"]


def test_every_vendor_leads_to_profiles_that_judge_its_apis() -> None:
    from toolmend.formats import get as get_format
    from toolmend.profiles._vendors import VENDORS

    responses = get_format("openai-responses").required_pairing
    names = [name for vendor in VENDORS for name in (vendor.name, *vendor.aliases)]
    assert len(names) == len(set(names))
    for vendor in VENDORS:
        assert vendor.why.strip(), vendor.name
        assert PROFILES[vendor.chat].pairing != responses or vendor.chat == "openai-responses"
        if vendor.responses is not None:  # a Responses profile judges Responses items
            assert PROFILES[vendor.responses].pairing == responses, vendor.name
        # a vendor's alias is no other profile's name: the two would disagree
        for alias in vendor.aliases:
            assert alias not in PROFILES or get_profile(alias).name == vendor.chat


def test_deepseek_responses_quotes_deepseeks_texts() -> None:
    profile = PROFILES["deepseek-responses"]
    assert profile.batched_outputs and profile.pairing == "ordered"
    assert profile.checks["missing_result"].error == "No tool output found for tool call {id}."
    assert profile.checks["orphan_result"].error == (
        "No tool call found for tool output with call_id {id}."
    )
    assert "deepseek-ai" in profile.checks["missing_result"].source
