"""toolmend._policy.as_policy: the one parser of every ``policy=`` argument (the core's and every
hook's), with the error text the hooks' tests assert."""

from __future__ import annotations

from typing import Any, Literal

import pytest

import toolmend
from toolmend._policy import as_policy


@pytest.mark.parametrize("frontier", ["answer", "keep"])
def test_names_and_none_take_the_frontier_asked_for(frontier: Literal["answer", "keep"]) -> None:
    assert as_policy(None, frontier=frontier) == toolmend.Policy(frontier=frontier)
    for mode in toolmend.Mode:
        expected = toolmend.Policy(mode=mode, frontier=frontier)
        assert as_policy(mode.value, frontier=frontier) == expected
        assert as_policy(mode, frontier=frontier) == expected


def test_a_policy_is_taken_as_it_is() -> None:
    given = toolmend.Policy(mode=toolmend.Mode.STRICT)
    assert as_policy(given, frontier="keep") is given
    assert as_policy(None).frontier == "answer"


@pytest.mark.parametrize("bad", ["repiar", "", 3, ["repair"]])
def test_an_unknown_policy_names_the_choices(bad: Any) -> None:
    with pytest.raises(toolmend.UnknownNameError) as raised:
        as_policy(bad)
    assert str(raised.value) == (
        f"Unknown policy {bad!r}: use a toolmend.Policy or one of 'repair', 'strict', 'report'"
    )
