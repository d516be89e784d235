"""``spans.all_match``: the scanners' one-pass id check must answer exactly what a
``fullmatch`` per id answers, on its ``bytes.translate`` path and on its regular-expression path."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from toolmend._spans import _ascii_class, all_match
from toolmend.profiles import PROFILES

ID_PATTERNS = sorted(
    {profile.call_id_pattern for profile in PROFILES.values() if profile.call_id_pattern}
)
OTHER_PATTERNS = [r"[a-]{2,}", r"[0-9]{3,5}", r"[.-9]+", r"[^a\n]+", r"[\w]+", r"[ab]*", r"a+"]
PATTERNS = ID_PATTERNS + OTHER_PATTERNS
"""Patterns that match no newline, as ``all_match`` requires (it is given id patterns only)."""

VALUES = st.lists(
    st.text(alphabet=st.sampled_from("aZ09_-.:\n é-"), min_size=0, max_size=12)
    | st.sampled_from(["call_abc123", "toolu_01", "abcdefghi", "a" * 64, "a" * 65, "-", ""]),
    min_size=0,
    max_size=6,
)


@pytest.mark.parametrize("pattern", PATTERNS)
@given(values=VALUES)
@example(values=["ab", ""])
@example(values=["ab\ncd"])
@example(values=["a" * 64, "b" * 65])
@example(values=["abc", "ab\u00e9"])
def test_all_match_answers_as_a_fullmatch_per_value(pattern: str, values: list[str]) -> None:
    compiled = re.compile(pattern)
    expected = all(compiled.fullmatch(value) for value in values)
    assert all_match(compiled, values) == expected
    assert all_match(compiled, dict.fromkeys(values, 0)) == expected  # scanners pass dicts too


@pytest.mark.parametrize("pattern", [*ID_PATTERNS, r"[a-zA-Z0-9_-]{1,64}", r"[a-]{2,}", r"[.-9]+"])
def test_the_profiles_id_patterns_take_the_translate_path(pattern: str) -> None:
    """The reason for the fast path: every profile's id pattern is one ASCII class repeated."""
    allowed, shortest, _ = _ascii_class(pattern) or (b"", 0, None)
    assert allowed, pattern
    assert shortest >= 1


@pytest.mark.parametrize("pattern", [r"[^a]+", r"[\w]+", r"(?s:.{1,200})", r"a+", r"[ab]*x"])
def test_other_patterns_are_left_to_the_regular_expression(pattern: str) -> None:
    assert _ascii_class(pattern) is None
