"""``toolmend.Repair`` built lazily: a repair that edits nearly every message (Mistral's call
ids, Gemini's result names) hands back a result whose ``changes`` and ``problems`` are built on
first read, and which is then the same as a result built eagerly."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import Any

import pytest

import toolmend
from toolmend import Change, Problem, Repair

from support.cases import assistant, calls, result, user

CHANGES = (Change("rewrote_call_id", 1, "call id the provider would refuse", ("a", "b")),)
PROBLEMS = (Problem("call_id_format", 1, "call id", "Tool call id was a", "MI-ID", ("a",)),)


class _Builder:
    """A builder that counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> tuple[list[Change], list[Problem]]:
        self.calls += 1
        return list(CHANGES), list(PROBLEMS)


def _lazy(builder: _Builder, left: Any = ()) -> Repair:
    return Repair._deferred(["repaired"], True, builder, left)


def test_the_defaults_stay_empty_tuples() -> None:
    assert Repair([]) == Repair([], (), (), ())
    assert Repair([]).changes == () and Repair([]).problems == ()
    assert [f.default for f in dataclasses.fields(Repair)][1:3] == [(), ()]
    assert not Repair([]).changed


def test_a_lazy_result_equals_an_eager_one_and_builds_once() -> None:
    builder = _Builder()
    lazy = _lazy(builder)
    assert builder.calls == 0
    assert lazy.changed  # answered without building
    assert builder.calls == 0
    assert lazy == Repair(["repaired"], CHANGES, PROBLEMS)
    assert builder.calls == 1
    assert lazy.changes == CHANGES and type(lazy.changes) is tuple
    assert lazy.problems is lazy.problems_before
    assert lazy.problems == PROBLEMS
    assert builder.calls == 1
    assert repr(lazy) == repr(Repair(["repaired"], CHANGES, PROBLEMS))
    assert vars(lazy).keys() == {"messages", "left", "changes", "problems"}


@pytest.mark.parametrize("first", ["changes", "problems", "problems_before"])
def test_any_field_read_first_builds_both(first: str) -> None:
    builder = _Builder()
    lazy = _lazy(builder)
    getattr(lazy, first)
    assert vars(lazy)["changes"] == CHANGES and vars(lazy)["problems"] == PROBLEMS
    assert builder.calls == 1


def test_replace_asdict_pickle_and_copy_see_the_built_report() -> None:
    eager = Repair(["repaired"], CHANGES, PROBLEMS)
    assert dataclasses.replace(_lazy(_Builder()), messages=["other"]) == dataclasses.replace(
        eager, messages=["other"]
    )
    assert dataclasses.asdict(_lazy(_Builder())) == dataclasses.asdict(eager)
    assert dataclasses.astuple(_lazy(_Builder())) == dataclasses.astuple(eager)
    judged = _lazy(_Builder(), lambda: PROBLEMS)  # a judge to run: no data, so it is run
    loaded = pickle.loads(pickle.dumps(judged))
    assert loaded == eager and loaded.problems_left == PROBLEMS
    assert copy.copy(_lazy(_Builder())) == eager
    assert copy.deepcopy(_lazy(_Builder())) == eager


def test_a_repaired_result_with_its_judge_pending_pickles() -> None:
    """(Before, ``left`` held the judge, a closure: pickling a repaired result raised.)"""
    history = [user("go"), {"role": "tool", "tool_call_id": "call_1", "content": "x"}]
    fixed = toolmend.repair(history, provider="openai")
    assert fixed.changed
    loaded = pickle.loads(pickle.dumps(fixed))
    assert loaded == fixed and loaded.problems_left == ()


def _history() -> list[Any]:
    return [
        user("go"),
        calls("call_aaaaaaaaaaaaaaaaaaaaaaaa"),
        result("call_aaaaaaaaaaaaaaaaaaaaaaaa", "found"),
        assistant("done"),
        user("thanks"),
    ]


@pytest.mark.parametrize(
    ("provider", "codes"),
    [("mistral", ["rewrote_call_id"]), ("gemini", ["filled_result_name"])],
)
def test_the_one_pass_repair_builds_its_report_on_first_read(
    provider: str, codes: list[str]
) -> None:
    """The quick path's result has no report until it is read; then it is the full one."""
    fixed = toolmend.repair(_history(), provider=provider)
    assert "changes" not in vars(fixed) and "problems" not in vars(fixed)
    assert fixed.changed
    assert "changes" not in vars(fixed)
    assert [change.code for change in fixed.changes] == codes
    assert fixed.problems and fixed == toolmend.repair(_history(), provider=provider)
    assert fixed.problems_left == ()
