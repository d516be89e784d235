"""The worst-case bound (docs/design.md, "Worst-case bound"): every entry point's work grows
about linearly with its input, whatever the ids and the content are.

Work is measured without a clock: the Python lines executed during one call (``sys.settrace``
counts every line of every Python frame, toolmend's and what it calls). Each adversarial shape
of ``benchmarks/bench_adversarial.py`` runs at n and 4n; linear work grows about 4x, n log n a
little more, quadratic about 16x. The bound asserted is 6x. A busy machine changes the time,
never the count.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import toolmend
from toolmend import _trim

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_adversarial as shapes

pytestmark = pytest.mark.slow  # a million lines and more traced (a few seconds in all)

GROWTH_BOUND = 6.0
"""Lines executed at 4n over lines at n: 4 for linear work, 16 for quadratic."""


class _BudgetError(Exception):
    """More lines than a test allows: a regression fails instead of hanging."""


def lines_executed(run: Callable[[], object], limit: int = 5_000_000) -> int:
    """The Python lines executed by ``run()``; raises :class:`_BudgetError` past ``limit``."""
    count = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
            if count > limit:
                raise _BudgetError(f"more than {limit:,} lines")
        return local

    def global_(frame: FrameType, event: str, arg: Any) -> Any:
        return local

    previous = sys.gettrace()
    sys.settrace(global_)
    try:
        run()
    finally:
        sys.settrace(previous)
    return count


def growth(build: Callable[[int], Any], run: Callable[[Any], object], n: int) -> float:
    """Lines at 4n over lines at n for one shape (each history built outside the count)."""
    small, large = build(n), build(4 * n)
    lines_executed(lambda: run(build(8)))  # imports and caches warmed, under the budget
    return lines_executed(lambda: run(large)) / lines_executed(lambda: run(small))


SHAPE_SIZES = {
    # name in bench_adversarial.SHAPES -> n (small: the counts are exact, not timed)
    "repair, n calls sharing one id": 100,
    "repair, anthropic id reused every turn": 150,
    "repair, openai id reused every turn": 150,
    "repair, openai id reused, first result lost": 150,
    "repair, id-less calls and results in one turn": 100,
    "repair, many results for one call": 100,
    "repair, orphan results": 100,
    "repair, refused ids all the same": 100,
    "repair, calls left open": 100,
    "repair, very long ids (n = 100 chars)": 50,
    "repair, results after all their calls": 100,
    "repair, every result twice": 100,
    "repair, a calling message and its results twice (mistral)": 100,
    "repair, id-less results naming their calls": 100,
    "repair, empty assistant messages (gemini)": 150,
    "repair, calls removed (remove_call)": 150,
    "repair, anthropic blocks sharing one id": 100,
    "repair, responses outputs without call_id": 100,
    "repair, gemini contents without ids": 100,
    "repair, LangChain messages sharing one id": 100,
    "check, n calls sharing one id": 100,
    "check, id-less calls and results in one turn": 100,
    "sanitize, n calls sharing one id": 100,
    "trim, shared and self references": 100,
    "trim, n calls sharing one id": 100,
    "trim, id-less calls and results": 100,
    "merge_consecutive, one long run": 100,
    "detect_loops, the same call again and again": 150,
    "atomic_groups, id-less calls and results": 100,
    "atomic_groups, n calls sharing one id": 100,
    "hooks mend, n calls sharing one id": 100,
    "hooks mend, id-less calls and results": 100,
    "hooks mend, the same call again and again": 150,
    "show text, id-less turn": 100,
    "show --html, id-less turn": 100,
    "show --html, n calls sharing one id": 100,
    "show --html, shared references": 100,
    "show text, shared references": 100,
}


HELD_ELSEWHERE = {
    # its old cost was inside json.dumps (C), which counts no lines: held by
    # test_loop_detection_compares_shared_arguments_without_writing_them_out
    "detect_loops, shared references in arguments",
}


def test_every_benchmark_shape_is_held_here() -> None:
    assert set(SHAPE_SIZES) | HELD_ELSEWHERE == set(shapes.SHAPES)


@pytest.mark.parametrize("name", sorted(SHAPE_SIZES))
def test_work_grows_about_linearly(name: str) -> None:
    build, run, _ = shapes.SHAPES[name]
    ratio = growth(build, run, SHAPE_SIZES[name])
    assert ratio < GROWTH_BOUND, f"{name}: {ratio:.1f}x the lines for 4x the input"


# --- content with shared and self references --------------------------------------------------


def _doubled(times: int, leaf: str = "abcd") -> list[Any]:
    """``x = [x, x]`` ``times`` times: ``times + 1`` lists, ``2 ** times`` paths to the leaf."""
    shared: list[Any] = [leaf]
    for _ in range(times):
        shared = [shared, shared]
    return shared


def _tree(times: int, leaf: str = "abcd") -> list[Any]:
    """The same shape as :func:`_doubled` with nothing shared."""
    return [leaf] if times == 0 else [_tree(times - 1, leaf), _tree(times - 1, leaf)]


def test_token_estimate_reads_a_shared_object_once_per_depth() -> None:
    """40 doublings are 2^40 paths (2^33 to the depth read): the old walk never ended. The
    line budget turns such a regression into a failure instead of a hang."""
    message = {"role": "user", "content": _doubled(40)}
    looped: dict[str, Any] = {"role": "user"}
    looped["a"] = looped
    looped["b"] = looped
    work = lines_executed(lambda: (_trim.estimate_tokens(message), _trim.estimate_tokens(looped)))
    assert work < 20_000


def test_token_estimate_counts_a_shared_object_as_it_would_be_written() -> None:
    """Sharing changes the work, not the answer: a shared object counts each time the JSON
    would write it, as a copy of the same shape does."""
    shared = {"role": "user", "content": _doubled(12)}
    unshared = {"role": "user", "content": _tree(12)}
    expected = 4 + -(-(4 + 4 * 2**12) // 4)
    assert _trim.estimate_tokens(shared) == _trim.estimate_tokens(unshared) == expected


def test_token_estimate_reads_shared_tuples_once_too() -> None:
    shared: Any = ("abcd",)
    for _ in range(40):
        shared = (shared, shared)
    work = lines_executed(lambda: _trim.estimate_tokens({"role": "user", "content": shared}))
    assert work < 20_000


class _Dumped:
    """An SDK-like object whose ``model_dump`` makes a new dict on every call."""

    def __init__(self, text: str) -> None:
        self.text = text

    def model_dump(self, **options: Any) -> dict[str, Any]:
        return {"type": "text", "text": self.text}


def test_token_estimate_is_not_fooled_by_an_id_given_again() -> None:
    """A ``model_dump`` made on the way is freed after it is read, and the next one may get its
    id: the memo keeps what it read alive, so each counts its own text."""
    parts = [_Dumped("x" * (10 * (n + 1))) for n in range(50)]
    message = {"role": "user", "content": parts}
    expected = 4 + -(-(4 + sum(4 + 10 * (n + 1) for n in range(50))) // 4)
    assert _trim.estimate_tokens(message) == expected
    assert _trim._strings(message, [])[2::2] == [part.text for part in parts]


def test_tokenizer_text_gives_a_shared_object_once() -> None:
    """What a tokenizer is given (``trim(token_counter="tiktoken")``) holds each container's
    strings once, and a self reference ends the walk instead of repeating to the depth cut."""
    looped: dict[str, Any] = {"role": "user", "content": "hi"}
    looped["a"] = looped
    looped["b"] = looped
    strings: list[str] = []
    work = lines_executed(lambda: _trim._strings(looped, strings))
    assert strings == ["user", "hi"]
    assert work < 1_000
    assert _trim._strings({"content": _doubled(20)}, []) == ["abcd"]


def test_loop_detection_compares_shared_arguments_without_writing_them_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Arguments holding ``x = [x, x]`` 40 times would be 2^40 lists as JSON (the old
    canonical form: ``json.dumps`` never returned, in C, where no line budget reaches);
    equal ones still compare equal, by digest."""
    history = shapes.shared_arguments(12)
    shared = history[1]["content"][0]["input"]["q"]
    dumps = json.dumps

    def guarded(value: Any, *args: Any, **kwargs: Any) -> str:
        if isinstance(value, dict) and any(item is shared for item in value.values()):
            raise AssertionError("the shared arguments were handed to json.dumps whole")
        return dumps(value, *args, **kwargs)

    monkeypatch.setattr(json, "dumps", guarded)
    problems: list[toolmend.Problem] = []
    work = lines_executed(lambda: problems.extend(toolmend.detect_loops(history)))
    assert work < 100_000
    assert [problem.code for problem in problems] == ["repeated_call"]


def test_trim_on_shared_content_keeps_the_messages_it_fits() -> None:
    history = shapes.shared_dag(10)
    work = lines_executed(lambda: toolmend.trim(history, max_tokens=10**9))
    assert work < 200_000
    assert toolmend.trim(history, max_tokens=10**9) == history


# --- the page of toolmend show --html ---------------------------------------------------------


@pytest.mark.parametrize("build", [shapes.idless_turn, shapes.shared_id])
def test_the_html_page_grows_linearly(build: Callable[[int], Any]) -> None:
    """An id-less turn once listed every change of the calling message on each of its n
    placeholders: 7.4 / 24.6 / 88 MB at 1k / 2k / 4k calls."""
    small, large = (len(shapes._show_html(build(n))) for n in (100, 400))
    assert large / small < 4.5, (small, large)
