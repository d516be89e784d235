"""The cross-family pass written out per profile (``toolmend.formats._openai_cross``): the
template keeps the lines of the rules a profile has and no other, and the shortcuts it takes
(id patterns tested on all ids at once, an id's length before its pattern) answer what the
pattern answers. That the pass agrees with the full path is ``tests/test_fastpath.py``'s."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolmend
from toolmend.formats import _openai_chat as openai_chat
from toolmend.formats import _openai_cross as cross
from toolmend.profiles import PROFILES, get_profile

from support.histories import valid_conversations

ID_PATTERNS = sorted(
    {p.call_id_pattern for p in PROFILES.values() if p.call_id_pattern}
    | {p.function_name_pattern for p in PROFILES.values() if p.function_name_pattern}
    | {"[a-z]{2,}", "[a-z]*", "[ab]{3}", "[a-z.]+"}
)
"""Every id and function name pattern of the profiles, and a few counts they lack."""

_TEXT = st.text(alphabet=st.sampled_from("abcXYZ019_-.:\n \u00e9#\ud800"), max_size=12)
"""Id characters in and out of the patterns, a newline, one outside ASCII and a lone surrogate
(no UTF-8 for it: a test that encodes the ids must not raise)."""


def test_the_template_keeps_the_branches_whose_switch_is_on() -> None:
    source = "\n".join(
        [
            "a",
            "#if x",
            "b",
            "#if y",
            "c",
            "#elif z",
            "d",
            "#else",
            "e",
            "#endif",
            "#elif y",
            "f",
            "#else",
            "g",
            "#endif",
            "h",
        ]
    )
    kept = {
        (x, y, z): cross._kept(source, {"x": x, "y": y, "z": z}).split()
        for x in (False, True)
        for y in (False, True)
        for z in (False, True)
    }
    assert kept[(True, True, False)] == ["a", "b", "c", "h"]
    assert kept[(True, False, True)] == ["a", "b", "d", "h"]
    assert kept[(True, False, False)] == ["a", "b", "e", "h"]
    assert kept[(False, True, True)] == ["a", "f", "h"]
    assert kept[(False, False, True)] == ["a", "g", "h"]


def _pass_source(name: str, mode: str = "check") -> str:
    rules = openai_chat._plain_params(get_profile(name))
    assert type(rules) is cross.CrossRules
    return cross._kept(cross._LOOP, cross._switches(rules, mode))


def test_a_profile_pays_only_for_its_own_rules() -> None:
    """Anthropic has no role order and no rule on tool content; Mistral has role order and
    no blank-text rule; Anthropic's function name pattern (any text up to 200 characters)
    is a length test, not a regex call per name."""
    anthropic, mistral = _pass_source("anthropic"), _pass_source("mistral")
    assert "previous" not in anthropic and "BEFORE_TOOL" in mistral
    assert "TOOL_CONTENT_FAILS" not in anthropic and "after_tool" not in anthropic
    assert "USER_CONTENT_FAILS" in anthropic and "NAME_MAX" in anthropic
    assert "function_names" not in anthropic and "function_names" in mistral
    assert "enumerate" not in mistral and "enumerate" in _pass_source("mistral", "ids")
    assert "pending.pop" in _pass_source("gemini") and "pending.pop" not in mistral


@settings(max_examples=300, deadline=None)
@given(pattern=st.sampled_from(ID_PATTERNS), ids=st.lists(_TEXT, max_size=6))
def test_all_ids_at_once_answer_what_each_id_does(pattern: str, ids: list[str]) -> None:
    match = re.compile(pattern).fullmatch
    assert cross._all_match(match)(ids) == all(match(found) for found in ids)


CLASS_PATTERNS = [
    pattern
    for pattern in ID_PATTERNS
    if cross._class_bounds(re.compile(pattern).fullmatch) is not None
]
"""The patterns whose lengths the check pass tests where it reads an id (the profiles' id
patterns among them), leaving the characters to one test over all ids."""


def test_the_profiles_id_patterns_have_their_lengths_tested_inline() -> None:
    patterns = {profile.call_id_pattern for profile in PROFILES.values()} - {None}
    assert patterns and patterns <= set(CLASS_PATTERNS)
    lengths = {
        name: cross._switches(rules, "check")["id_lengths"]
        for name in ("bedrock", "anthropic", "mistral")
        if type(rules := openai_chat._plain_params(get_profile(name))) is cross.CrossRules
    }
    # [a-zA-Z0-9_.:-]{1,64}, [a-zA-Z0-9_-]+ (an empty id fails anyway), [a-zA-Z0-9]{9}
    assert lengths == {"bedrock": (1, 64), "anthropic": None, "mistral": (9, 9)}
    assert "ID_LENGTH_FAILS" in _pass_source("bedrock")
    assert "ID_LENGTH_FAILS" not in _pass_source("anthropic")
    assert "ID_LENGTH_FAILS" not in _pass_source("bedrock", "scan")  # (the scan's caller's)


@pytest.mark.parametrize(
    ("least", "most", "call_id", "fails"),
    [
        (1, 64, "x" * 64, False),
        (1, 64, "x" * 65, True),
        (9, 9, "x" * 9, False),
        (9, 9, "x" * 8, True),
        (9, 9, "x" * 10, True),
        (2, 1 << 30, "x", True),
        (2, 1 << 30, "x" * 99, False),
        (2, 5, "x" * 6, True),
        (2, 5, "x" * 5, False),
    ],
)
def test_an_id_s_length_test(least: int, most: int, call_id: str, fails: bool) -> None:
    assert eval(cross._length_test(least, most), {"len": len}, {"call_id": call_id}) is fails


@settings(max_examples=300, deadline=None)
@given(pattern=st.sampled_from(CLASS_PATTERNS), ids=st.lists(_TEXT, max_size=6))
def test_the_characters_alone_answer_for_ids_of_the_pattern_s_lengths(
    pattern: str, ids: list[str]
) -> None:
    """The check pass refuses an empty id, and one longer than the pattern's most, where it
    reads it; the test over all ids left to it then answers what the pattern answers."""
    match = re.compile(pattern).fullmatch
    bounds = cross._class_bounds(match)
    assert bounds is not None
    least, most = bounds
    ids = [found for found in ids if max(least, 1) <= len(found) <= (most or len(found))]
    assert cross._ids_test(match)(ids) == all(match(found) for found in ids)


@pytest.mark.parametrize("provider", ["anthropic", "bedrock"])
def test_an_id_past_the_pattern_s_most_is_not_vouched_for(provider: str) -> None:
    profile = get_profile(provider)
    history = _tool_heavy(2)
    assert openai_chat.quick_valid(history, profile)
    long_id = "call_" + "x" * 60
    history[1]["tool_calls"][0]["id"] = history[2]["tool_call_id"] = long_id
    assert openai_chat.quick_valid(history, profile) is (provider == "anthropic")
    assert bool(toolmend.check(history, provider=provider)) is (provider == "bedrock")


@settings(max_examples=150, deadline=None)
@given(history=valid_conversations(id_style="openai"), more=st.integers(0, 3))
def test_the_live_run_read_after_the_pass_is_the_plain_pass_s(
    history: list[Any], more: int
) -> None:
    """The cross pass reads the live run backwards from the end once it has vouched; the
    plain pass gathers it in its loop: the same lists, in order."""
    for turn in range(more):  # calls after the last user message: a live run of ``more`` turns
        call_id = f"call_live{turn}"
        call = {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}
        history = [
            *history,
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": "ok"},
        ]
    plain = openai_chat.quick_live(history, get_profile("openai"))
    for provider in ("anthropic", "gemini-litellm", "bedrock"):
        live = openai_chat.quick_live(history, get_profile(provider))
        if live is not None and plain is not None:
            assert live == plain


@settings(max_examples=300, deadline=None)
@given(pattern=st.sampled_from(ID_PATTERNS), call_id=_TEXT)
def test_the_length_first_refuses_what_the_pattern_refuses(pattern: str, call_id: str) -> None:
    match = re.compile(pattern).fullmatch
    test = cross._refused_test(match)
    refused = eval(test, {"refuse": match, "len": len}, {"call_id": call_id})
    assert refused == (match(call_id) is None)


@pytest.mark.parametrize("name", ["anthropic", "bedrock", "gemini", "mistral"])
def test_each_profile_and_mode_is_written_once(name: str) -> None:
    rules: Any = openai_chat._plain_params(get_profile(name))
    assert cross._pass_for(rules, "check") is cross._pass_for(rules, "check")
    assert cross._pass_for(rules, "names") is not cross._pass_for(rules, "check")


class _Walked(list):  # type: ignore[type-arg]
    """A history that counts the walks over it of more than a few messages."""

    walks = 0

    def __iter__(self) -> Any:
        for seen, message in enumerate(list.__iter__(self)):
            if seen == 8:
                type(self).walks += 1
            yield message


def _tool_heavy(turns: int) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for turn in range(turns):
        call_id = f"call_{turn:024d}"
        history.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "search", "arguments": "{}"},
                    }
                ],
            }
        )
        history.append({"role": "tool", "tool_call_id": call_id, "content": "found"})
        history.append({"role": "assistant", "content": "found it"})
    history.append({"role": "user", "content": "thanks"})
    return history


@pytest.mark.parametrize("provider", ["mistral", "gemini"])
def test_an_intact_history_needing_ids_or_names_is_walked_once(provider: str) -> None:
    """The vouch stops at the first refused id or unnamed result, and one pass checks the
    other rules and lists every edit: one walk over the history, and the copy of the list the
    repair makes (before: a pass, then a walk listing the edits, and for Mistral a third
    gathering the ids already taken). Now one walk checks, rewrites and copies
    (``toolmend._inline.walk_mend``, ``toolmend._walks.walk_adjacent``), and the report,
    written when read, reads a copy of the list taken when the walk answered."""
    history = _Walked(_tool_heavy(20))
    _Walked.walks = 0
    fixed = toolmend.repair(history, provider=provider)
    assert len(fixed.changes) == 20  # each call's id, or each result's name: nothing else
    assert _Walked.walks == 1


@pytest.mark.parametrize("null_ok", [False, True])
@pytest.mark.parametrize("empty_ok", [False, True])
@pytest.mark.parametrize("content", [None, "", [], "text", [{"type": "text", "text": "x"}], 0])
def test_a_calling_message_s_content_test_is_the_rule_s(
    null_ok: bool, empty_ok: bool, content: Any
) -> None:
    """The content test written for the profile's two flags fails what the rule refuses: a
    null ``content`` unless allowed, an empty one unless allowed."""
    refused = not content and not (null_ok if content is None else empty_ok)
    test = cross._CALL_FAILS[null_ok, empty_ok]
    assert bool(eval(test, {}, {"message": {"content": content}})) is refused
