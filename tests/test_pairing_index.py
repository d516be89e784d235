"""The pairing engine's open-call index gives the answer the plain scan gives.

A calling message of at most ``_SCAN_LIMIT`` calls is scanned for its open calls, a larger
one indexed (:mod:`toolmend._pairing`): on the same history, the index forced on for every
turn and the scan forced on for every turn must repair alike, whatever the ids and names
(shared, missing, reused) and wherever the results sit.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import toolmend
from toolmend import _pairing

from support.block_histories import convert

IDS = st.sampled_from([None, None, "call_a", "call_b", "call_c", "toolu_1", "get", ""])
NAMES = st.sampled_from([None, "", "get", "put", "call_a"])


@st.composite
def _turn(draw: st.DrawFn) -> list[dict[str, Any]]:
    """One assistant message with calls sharing, missing or reusing ids and names, and tool
    results after it in any order (some missing, some doubled, some stray)."""
    calls = []
    for _ in range(draw(st.integers(0, 6))):
        call: dict[str, Any] = {
            "type": "function",
            "function": {"name": draw(NAMES), "arguments": "{}"},
        }
        call_id = draw(IDS)
        if call_id is not None:
            call["id"] = call_id
        calls.append(call)
    turn: list[dict[str, Any]] = [{"role": "assistant", "content": None, "tool_calls": calls}]
    for n in range(draw(st.integers(0, 7))):
        result: dict[str, Any] = {"role": "tool", "content": f"r{n}"}
        result_id = draw(IDS)
        if result_id is not None:
            result["tool_call_id"] = result_id
        name = draw(NAMES)
        if name is not None:
            result["name"] = name
        turn.append(result)
    if draw(st.booleans()):
        turn.append({"role": "user", "content": "next"})
    return turn


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
    for turn in draw(st.lists(_turn(), min_size=1, max_size=4)):
        history.extend(turn)
    return history


def _repair(history: Any, provider: str, limit: int) -> Any:
    """The repair of ``history`` with calling messages of more than ``limit`` calls indexed."""
    saved = _pairing._SCAN_LIMIT
    _pairing._SCAN_LIMIT = limit
    try:
        result = toolmend.repair(copy.deepcopy(history), provider=provider)
    except toolmend.InvalidHistoryError as error:
        return ("refused", str(error))
    finally:
        _pairing._SCAN_LIMIT = saved
    return (result.messages, [(c.code, c.index) for c in result.changes], result.problems)


@settings(max_examples=300, deadline=None)
@given(history=histories(), provider=st.sampled_from(["openai", "anthropic", "gemini"]))
def test_the_index_and_the_scan_pair_alike(history: list[dict[str, Any]], provider: str) -> None:
    scanned = _repair(history, provider, 10**9)
    indexed = _repair(history, provider, 0)
    assert indexed == scanned


@settings(max_examples=200, deadline=None)
@given(history=histories(), format=st.sampled_from(["anthropic", "gemini", "bedrock"]))
def test_the_index_and_the_scan_pair_alike_in_block_formats(
    history: list[dict[str, Any]], format: str
) -> None:
    try:
        converted = convert(history, format)
    except Exception:  # a shape the converter does not write in that format
        return
    provider = {"bedrock": "bedrock"}.get(format, format)
    scanned = _repair(converted, provider, 10**9)
    indexed = _repair(converted, provider, 0)
    assert indexed == scanned
