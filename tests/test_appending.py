"""toolmend._appending: may these messages be appended to this history? The same rule in every
format the core reads (here OpenAI chat, LangChain, Anthropic and Gemini), a failing and a
passing example per reason, the index a writer carries forward, the live frontier, and the
all-or-nothing chain check."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from toolmend._appending import (
    REASONS,
    AppendIndex,
    check_chain,
    frontier_start,
    index_of,
    judge_appends,
    waiting_calls,
)


@dataclass(frozen=True)
class Shape:
    """How one format writes a user turn, a calling turn and a result turn."""

    format: str
    user: Callable[[str], Any]
    calling: Callable[..., Any]
    """``calling(*ids, name="f")``: an assistant turn calling ``name`` once per id."""
    result: Callable[..., Any]
    """``result(*ids, name=None)``: the result(s) of those ids, naming ``name`` if given."""
    names_results: bool = True
    """Whether a result can name its function in this format."""


def _openai_call(call_id: str, name: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def _openai_result(*ids: str, name: str | None = None) -> Any:
    (call_id,) = ids
    found = {"role": "tool", "tool_call_id": call_id, "content": "21 C"}
    return found if name is None else {**found, "name": name}


def _langchain_result(*ids: str, name: str | None = None) -> Any:
    (call_id,) = ids
    return ToolMessage("21 C", tool_call_id=call_id, name=name)


def _anthropic_result(*ids: str, name: str | None = None) -> Any:
    blocks = [{"type": "tool_result", "tool_use_id": i, "content": "21 C"} for i in ids]
    return {"role": "user", "content": blocks}


def _gemini_result(*ids: str, name: str | None = None) -> Any:
    parts = [
        {"function_response": {"id": i, "name": name or "f", "response": {"r": "21 C"}}}
        for i in ids
    ]
    return {"role": "user", "parts": parts}


SHAPES = {
    "openai": Shape(
        "openai",
        lambda text: {"role": "user", "content": text},
        lambda *ids, name="f": {
            "role": "assistant",
            "content": None,
            "tool_calls": [_openai_call(i, name) for i in ids],
        },
        _openai_result,
    ),
    "langchain": Shape(
        "langchain",
        HumanMessage,
        lambda *ids, name="f": AIMessage(
            "", tool_calls=[{"name": name, "args": {}, "id": i, "type": "tool_call"} for i in ids]
        ),
        _langchain_result,
    ),
    "anthropic": Shape(
        "anthropic",
        lambda text: {"role": "user", "content": text},
        lambda *ids, name="f": {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": i, "name": name, "input": {}} for i in ids],
        },
        _anthropic_result,
        names_results=False,
    ),
    "gemini": Shape(
        "gemini",
        lambda text: {"role": "user", "parts": [{"text": text}]},
        lambda *ids, name="f": {
            "role": "model",
            "parts": [{"function_call": {"id": i, "name": name, "args": {}}} for i in ids],
        },
        _gemini_result,
    ),
}

FORMATS = pytest.mark.parametrize("shape", list(SHAPES.values()), ids=list(SHAPES))
NAMING = pytest.mark.parametrize(
    "shape", [s for s in SHAPES.values() if s.names_results], ids=lambda s: s.format
)


def verdicts(shape: Shape, history: list[Any], batch: list[Any]) -> list[str | None]:
    return judge_appends(batch, index_of(history, shape.format))[0]


# --- one reason at a time: refused, and the same message where it may go ----------------------


@FORMATS
def test_no_open_call(shape: Shape) -> None:
    history = [shape.user("Weather?")]
    assert verdicts(shape, history, [shape.result("c1")]) == ["no_open_call"]
    assert verdicts(shape, [*history, shape.calling("c1")], [shape.result("c1")]) == [None]


@FORMATS
def test_a_result_is_judged_wherever_its_call_is(shape: Shape) -> None:
    """Another writer's messages between a call and its result do not make it an orphan: the
    reads put it next to its call."""
    history = [shape.user("Weather?"), shape.calling("c1"), shape.user("Still there?")]
    assert verdicts(shape, history, [shape.result("c1")]) == [None]


@FORMATS
def test_duplicate_result(shape: Shape) -> None:
    history = [shape.user("Weather?"), shape.calling("c1", "c2"), shape.result("c1")]
    assert verdicts(shape, history, [shape.result("c1")]) == ["duplicate_result"]
    assert verdicts(shape, history, [shape.result("c2")]) == [None]
    # within one batch: the second result for a call is refused, the first is not
    fresh = history[:2]
    assert verdicts(shape, fresh, [shape.result("c2"), shape.result("c2")]) == [
        None,
        "duplicate_result",
    ]


@NAMING
def test_name_mismatch(shape: Shape) -> None:
    history = [shape.user("Weather?"), shape.calling("c1", name="get_weather")]
    assert verdicts(shape, history, [shape.result("c1", name="book_flight")]) == ["name_mismatch"]
    assert verdicts(shape, history, [shape.result("c1", name="get_weather")]) == [None]


def test_a_message_refused_for_one_of_its_results_is_refused_whole() -> None:
    shape = SHAPES["anthropic"]
    history = [shape.user("Weather?"), shape.calling("c1")]
    assert verdicts(shape, history, [shape.result("c1", "c9")]) == ["no_open_call"]
    assert verdicts(shape, history, [shape.result("c1", "c1")]) == ["duplicate_result"]


@FORMATS
def test_every_message_without_results_may_be_appended(shape: Shape) -> None:
    """User text, calls still waiting, the answer after the results: never refused."""
    batch = [shape.user("Weather?"), shape.calling("c1"), shape.calling("c2"), shape.user("hi")]
    assert verdicts(shape, [], batch) == [None] * 4


def test_every_reason_has_a_text() -> None:
    assert set(REASONS) == {"no_open_call", "duplicate_result", "name_mismatch"}


# --- the index --------------------------------------------------------------------------------


@FORMATS
def test_the_index_carried_forward_is_the_index_of_what_was_stored(shape: Shape) -> None:
    history = [shape.user("Weather?"), shape.calling("c1", "c2")]
    index = index_of(history, shape.format)
    before = index.copy()
    batch = [shape.result("c1"), shape.result("c9"), shape.calling("c3"), shape.result("c3")]
    found, after = judge_appends(batch, index)
    assert found == [None, "no_open_call", None, None]
    assert index == before  # the caller's index is left as it was
    stored = [*history, *(m for m, reason in zip(batch, found, strict=True) if reason is None)]
    assert after == index_of(stored, shape.format)
    assert after.calls.keys() == {"c1", "c2", "c3"} and after.answered == {"c1", "c3"}


def test_an_index_unchanged_by_the_batch_is_the_same_object() -> None:
    index = index_of([SHAPES["openai"].user("q")], "openai")
    assert judge_appends([SHAPES["openai"].user("q2")], index)[1] is index


def test_a_call_reusing_an_id_opens_it_again() -> None:
    shape = SHAPES["openai"]
    history = [shape.user("q"), shape.calling("c1"), shape.result("c1"), shape.calling("c1")]
    assert verdicts(shape, history, [shape.result("c1")]) == [None]


def test_items_the_reader_cannot_read_are_not_judged() -> None:
    """Not a message of the format: it may be appended (the store decides), and it adds
    nothing to the index; the messages around it are judged as usual."""
    shape = SHAPES["langchain"]
    history: list[Any] = [shape.user("q"), {"role": "assistant"}, shape.calling("c1")]
    index = index_of(history, "langchain")
    assert index == AppendIndex("langchain", {"c1": "f"}, set())
    found, _ = judge_appends([object(), shape.result("c1"), shape.result("c2")], index)
    assert found == [None, None, "no_open_call"]


# --- the live frontier ------------------------------------------------------------------------


@FORMATS
def test_waiting_calls(shape: Shape) -> None:
    calling = shape.calling("c1", "c2", name="f")
    assert waiting_calls([shape.user("q"), calling], shape.format) == {"c1": "f", "c2": "f"}
    partly = [shape.user("q"), calling, shape.result("c1")]
    assert waiting_calls(partly, shape.format) == {"c2": "f"}
    assert waiting_calls([*partly, shape.user("more")], shape.format) == {}
    assert waiting_calls([shape.user("q")], shape.format) == {}
    assert waiting_calls([], shape.format) == {}


@FORMATS
def test_frontier_start(shape: Shape) -> None:
    history = [shape.user("q"), shape.calling("c1", "c2"), shape.result("c1")]
    assert frontier_start(history, shape.format) == 1
    assert frontier_start(history[:2], shape.format) == 1
    # every call answered, or a result for another call: no clean frontier
    done = [*history, shape.result("c2")]
    assert frontier_start(done, shape.format) == len(done)
    stray = [*history[:2], shape.result("c9")]
    assert frontier_start(stray, shape.format) == len(stray)
    assert frontier_start([shape.user("q")], shape.format) == 1


def test_a_frontier_whose_calls_lack_ids_is_not_clean() -> None:
    calling = AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": None}])
    assert frontier_start([HumanMessage("q"), calling], "langchain") == 2


# --- a chain written all or nothing -----------------------------------------------------------

BAD_CHAINS: dict[str, tuple[Callable[[Shape], tuple[Any, list[Any]]], str]] = {
    "not a calling message": (lambda s: (s.user("q"), [s.result("c1")]), "chain_not_ai_message"),
    "no calls": (
        lambda s: (s.calling(), [s.result("c1")]),
        "chain_without_calls",
    ),
    "no results": (lambda s: (s.calling("c1"), []), "chain_without_results"),
    "not a result": (lambda s: (s.calling("c1"), [s.user("21 C")]), "chain_not_tool_message"),
    "unknown id": (lambda s: (s.calling("c1"), [s.result("c2")]), "chain_unknown_call_id"),
    "missing result": (
        lambda s: (s.calling("c1", "c2"), [s.result("c1")]),
        "chain_missing_result",
    ),
    "two results": (
        lambda s: (s.calling("c1"), [s.result("c1"), s.result("c1")]),
        "chain_duplicate_result",
    ),
    "two calls, one id": (
        lambda s: (s.calling("c1", "c1"), [s.result("c1")]),
        "chain_duplicate_call_id",
    ),
    "names differ": (
        lambda s: (s.calling("c1", name="f"), [s.result("c1", name="g")]),
        "chain_name_mismatch",
    ),
}


@pytest.mark.parametrize("shape", [SHAPES["openai"], SHAPES["langchain"]], ids=lambda s: s.format)
@pytest.mark.parametrize("case", list(BAD_CHAINS))
def test_check_chain(shape: Shape, case: str) -> None:
    build, code = BAD_CHAINS[case]
    calling, results = build(shape)
    problems = check_chain(calling, results, shape.format)
    assert code in {p.code for p in problems}
    assert all(p.code.startswith("chain_") for p in problems)
    assert "21 C" not in " ".join(p.message for p in problems)
    good = (shape.calling("c1", "c2"), [shape.result("c2"), shape.result("c1", name="f")])
    assert check_chain(*good, shape.format) == []


def test_a_chain_call_without_an_id() -> None:
    calling = AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": None}])
    codes = {p.code for p in check_chain(calling, [_langchain_result("c1")], "langchain")}
    assert "chain_call_without_id" in codes


def test_a_response_without_an_id_is_refused_even_where_position_would_pair_it() -> None:
    """Gemini's responses may carry no id and answer their call by position; one message at
    a time cannot show which call such a response answers, so it is refused (the docstring's
    promise), while the same response with its call's id is taken."""
    from toolmend._appending import index_of, judge_appends

    call = {"function_call": {"name": "f", "args": {}, "id": "c1"}}
    index = index_of([{"role": "model", "parts": [call]}], "gemini")
    with_id = {
        "role": "user",
        "parts": [{"function_response": {"name": "f", "id": "c1", "response": {}}}],
    }
    without = {"role": "user", "parts": [{"function_response": {"name": "f", "response": {}}}]}
    assert judge_appends([with_id], index)[0] == [None]
    assert judge_appends([without], index)[0] == ["no_open_call"]
