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

ID_PATTERNS = sorted(
    {p.call_id_pattern for p in PROFILES.values() if p.call_id_pattern}
    | {p.function_name_pattern for p in PROFILES.values() if p.function_name_pattern}
    | {"[a-z]{2,}", "[a-z]*", "[ab]{3}", "[a-z.]+"}
)
"""Every id and function name pattern of the profiles, and a few counts they lack."""

_TEXT = st.text(alphabet=st.sampled_from("abcXYZ019_-.:\n \u00e9#"), max_size=12)


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
    gathering the ids already taken). Bound for Mistral, one walk checks, rewrites and copies
    (``toolmend._inline.walk_mend``; the one-pass rewrite writes the report when it is read)."""
    history = _Walked(_tool_heavy(20))
    _Walked.walks = 0
    fixed = toolmend.repair(history, provider=provider)
    walks = _Walked.walks
    assert len(fixed.changes) == 20  # each call's id, or each result's name: nothing else
    assert (walks if provider == "mistral" else _Walked.walks) == (
        1 if provider == "mistral" else 2
    )
