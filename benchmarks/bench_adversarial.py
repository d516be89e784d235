"""Time every entry point on adversarial histories at n and 4n and print the growth factor.

Each shape is a valid JSON history crafted to hit one place where toolmend's work could grow
faster than its input (issue 30): ids shared by many calls, missing, reused every turn or very
long; many results for one call; long runs to merge; repetitive calls for loop detection;
content with shared and self references. A shape is built at n and at 4n (4n = 4,000 where the
shape is counted in calls or messages) and timed on one entry point; ``growth`` is the time at
4n over the time at n: about 4 (a little more for n log n) when the work is linear, about 16
when it is quadratic. Times are CPU seconds of this process (the best of 3 to 20 runs), so
that other processes on a busy machine do not count. Target (docs/design.md, "Worst-case
bound"): every shape at or under 5x, and 4n under 1 s.

Run with plain Python: ``python benchmarks/bench_adversarial.py`` (``--quick``: n = 250 and
1,000; ``--only NAME``: the shapes whose name contains NAME; ``--json``: one JSON line at the
end, for ``run.py``; ``--gc``: the garbage collector on during the runs).
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent / "src"))  # the installed one first

import toolmend
from toolmend._show import html, text, timeline

GROWTH_TARGET, TIME_TARGET = 5.0, 1.0
History = list[Any]


def _call(call_id: str | None, name: str = "f", arguments: str = "{}") -> dict[str, Any]:
    call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": arguments}}
    if call_id is not None:
        call["id"] = call_id
    return call


def _result(call_id: str | None, content: str = "ok") -> dict[str, Any]:
    message: dict[str, Any] = {"role": "tool", "content": content}
    if call_id is not None:
        message["tool_call_id"] = call_id
    return message


def _user(text: str = "go") -> dict[str, Any]:
    return {"role": "user", "content": text}


def shared_id(n: int) -> History:
    """n parallel calls sharing one id, then n results with that id (issue 30, row 1)."""
    calls = [_call("call_same") for _ in range(n)]
    results = [_result("call_same", f"r{i}") for i in range(n)]
    return [_user(), {"role": "assistant", "content": None, "tool_calls": calls}, *results]


def idless_turn(n: int) -> History:
    """n calls without an id and n results without an id in one turn (row 3)."""
    calls = [_call(None, f"f{i % 7}") for i in range(n)]
    results = [_result(None, f"r{i}") for i in range(n)]
    return [_user(), {"role": "assistant", "content": None, "tool_calls": calls}, *results]


def anthropic_reused(n: int) -> History:
    """n messages of Anthropic turns that all reuse one ``toolu_`` id (row 2)."""
    history: History = []
    while len(history) < n:
        history.append({"role": "user", "content": "go"})
        history.append(
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_same", "name": "f", "input": {}}]}
        )  # fmt: skip
        history.append(
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_same", "content": "ok"}]}
        )  # fmt: skip
    return history[:n]


def anthropic_shared(n: int) -> History:
    """n ``tool_use`` blocks sharing one id in one message, n ``tool_result`` blocks after."""
    uses = [{"type": "tool_use", "id": "toolu_same", "name": "f", "input": {}} for _ in range(n)]
    results = [
        {"type": "tool_result", "tool_use_id": "toolu_same", "content": f"r{i}"} for i in range(n)
    ]
    return [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": uses},
        {"role": "user", "content": results},
    ]


def responses_idless(n: int) -> History:
    """Responses items: n function calls, then n outputs without a ``call_id``."""
    calls = [
        {"type": "function_call", "call_id": f"call_{i}", "name": f"f{i}", "arguments": "{}"}
        for i in range(n)
    ]
    outputs = [{"type": "function_call_output", "output": f"r{i}"} for i in range(n)]
    return [{"role": "user", "content": "go"}, *calls, *outputs]


def gemini_idless(n: int) -> History:
    """Native Gemini contents: one model turn of n function calls without ids, then n
    responses without ids (paired by position)."""
    calls = [{"functionCall": {"name": f"f{i % 7}", "args": {}}} for i in range(n)]
    answers = [{"functionResponse": {"name": f"f{i % 7}", "response": {"r": i}}} for i in range(n)]
    return [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": calls},
        {"role": "user", "parts": answers[: n // 2]},
        {"role": "user", "parts": answers[n // 2 :]},
    ]


def langchain_shared(n: int) -> History:
    """LangChain messages: n calls sharing one id in one ``AIMessage``, n ``ToolMessage``s."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    calls = [{"name": "f", "args": {}, "id": "call_same", "type": "tool_call"} for _ in range(n)]
    results = [ToolMessage(content=f"r{i}", tool_call_id="call_same") for i in range(n)]
    return [HumanMessage("go"), AIMessage(content="", tool_calls=calls), *results]


def openai_reused(n: int) -> History:
    """n messages of chat turns that all reuse one id (OpenAI-compatible servers do)."""
    history: History = []
    while len(history) < n:
        history.append(_user())
        history.append({"role": "assistant", "content": None, "tool_calls": [_call("call_0")]})
        history.append(_result("call_0"))
    return history[:n]


def many_results(n: int) -> History:
    """One call answered by n results with its id."""
    results = [_result("call_1", f"r{i}") for i in range(n)]
    return [_user(), {"role": "assistant", "content": None, "tool_calls": [_call("call_1")]},
            *results]  # fmt: skip


def orphans(n: int) -> History:
    """n results whose calls are gone, each with its own id."""
    return [_user(), *[_result(f"call_{i}") for i in range(n)]]


def long_ids(n: int) -> History:
    """100 calls whose ids are n x 100 characters long, sharing a long prefix (n counts
    thousands of id characters per call)."""
    stem = "call_" + "x" * (n * 100)
    calls = [_call(f"{stem}{i}") for i in range(100)]
    results = [_result(f"{stem}{i}") for i in range(100)]
    return [_user(), {"role": "assistant", "content": None, "tool_calls": calls}, *results]


def bad_ids(n: int) -> History:
    """n calls with ids the provider refuses (too long), all the same: n fresh ids."""
    bad = "id with spaces " * 4
    calls = [_call(bad) for _ in range(n)]
    results = [_result(bad) for _ in range(n)]
    return [_user(), {"role": "assistant", "content": None, "tool_calls": calls}, *results]


def missing_results(n: int) -> History:
    """n calls, none answered, then a user turn: n stubs to insert."""
    calls = [_call(f"call_{i}") for i in range(n)]
    return [_user(), {"role": "assistant", "content": None, "tool_calls": calls}, _user("and?")]


def repetitive(n: int) -> History:
    """n messages of one tool called again and again with the same arguments."""
    history: History = [_user()]
    i = 0
    while len(history) < n:
        history.append({"role": "assistant", "content": None,
                        "tool_calls": [_call(f"call_{i}", "search", '{"q": "same"}')]})  # fmt: skip
        history.append(_result(f"call_{i}", "nothing"))
        i += 1
    return history[:n]


def results_at_the_end(n: int) -> History:
    """n assistant messages of one call each, then all n results: every call's results are
    n messages away, across the other calls."""
    calls = [
        {"role": "assistant", "content": None, "tool_calls": [_call(f"call_{i}")]} for i in range(n)
    ]
    return [_user(), *calls, *[_result(f"call_{i}") for i in range(n)]]


def results_twice(n: int) -> History:
    """n calls in one turn, each answered twice (a retry's copy)."""
    calls = [_call(f"call_{i}") for i in range(n)]
    results = [_result(f"call_{i}") for i in range(n)]
    return [_user(), {"role": "assistant", "content": None, "tool_calls": calls}, *results,
            *results]  # fmt: skip


def block_sent_twice(n: int) -> History:
    """A calling message of n calls (OpenAI ids) sent twice, its n results twice after them,
    then assistant text and a user turn: bound for Mistral, the one walk
    (``toolmend._inline``) answers the first copy's calls with the repeats."""
    ids = [f"call_{i:024d}" for i in range(n)]
    calls = {"role": "assistant", "content": None, "tool_calls": [_call(i) for i in ids]}
    results = [_result(i) for i in ids]
    return [_user(), calls, dict(calls), *results, *results,
            {"role": "assistant", "content": "done"}, _user()]  # fmt: skip


def named_results(n: int) -> History:
    """n calls with ids and distinct names, n results without an id, each naming its call."""
    calls = [_call(f"call_{i}", f"f{i}") for i in range(n)]
    results = [{"role": "tool", "name": f"f{i}", "content": "ok"} for i in range(n)]
    return [_user(), {"role": "assistant", "content": None, "tool_calls": calls}, *results]


def empty_turns(n: int) -> History:
    """n messages: user messages each followed by an assistant message with no content."""
    history: History = []
    while len(history) < n:
        history += [_user(), {"role": "assistant", "content": None}]
    return history[:n]


def unanswered_turns(n: int) -> History:
    """n messages of assistant calls whose results never came, each followed by a user."""
    history: History = []
    i = 0
    while len(history) < n:
        history.append(_user())
        history.append({"role": "assistant", "content": None, "tool_calls": [_call(f"call_{i}")]})
        i += 1
    return [*history[:n], _user("end")]


def shared_arguments(n: int) -> History:
    """n messages of Anthropic turns calling one tool whose input is ``x = [x, x]`` nested 40
    times (2^40 lists when written as JSON)."""
    x: Any = ["leaf"]
    for _ in range(40):
        x = [x, x]
    history: History = [{"role": "user", "content": "go"}]
    i = 0
    while len(history) < n:
        use = {"type": "tool_use", "id": f"toolu_{i}", "name": "f", "input": {"q": x}}
        history.append({"role": "assistant", "content": [use]})
        history.append(
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "ok"}]}
        )  # fmt: skip
        i += 1
    return history[:n]


def user_run(n: int) -> History:
    """n user messages in a row (one long run to merge)."""
    return [_user(f"m{i}") for i in range(n)]


def shared_dag(n: int) -> History:
    """n messages, two of them with shared references in their content: ``x = [x, x]``
    nested 40 times, and ``d["a"] = d["b"] = d`` (2^33 paths to the depth the token
    estimate reads, walked without a visited set)."""
    x: Any = ["leaf"]
    for _ in range(40):
        x = [x, x]
    d: dict[str, Any] = {}
    d["a"] = d
    d["b"] = d
    history: History = [_user(f"m{i}") for i in range(n)]
    history[n // 2] = {"role": "user", "content": x}
    history[-1] = {"role": "user", "content": d}
    return history


def _time(run: Callable[[], object]) -> float:
    """The best of 3 to 20 runs (more while they are quick, up to a second in all), in CPU
    seconds of this process: on a shared machine the wall clock also counts the other
    processes' turns, and a run of a few milliseconds needs many tries to see a quiet one.
    As :mod:`timeit` does, the cyclic garbage collector is off during a run (and collects
    before it): its passes walk a heap that holds the history itself, which is not toolmend's
    work (``--gc`` keeps it on; docs/benchmarks.md shows both)."""
    best = float("inf")
    spent = 0.0
    for attempt in range(20):
        gc.collect()
        if not KEEP_GC:
            gc.disable()
        try:
            start = time.process_time()
            run()
            took = time.process_time() - start
        finally:
            gc.enable()
        best, spent = min(best, took), spent + took
        if attempt >= 2 and spent > 1.0:
            break
    return best


KEEP_GC = False
"""``--gc``: time each run with the garbage collector on."""


def _mend(history: History) -> object:
    """The hooks' one entry (what the LiteLLM callback and every patch call on a request)."""
    from toolmend.integrations import hooks

    return hooks.mend(history, provider="openai", source="bench").messages


def _show_html(history: History) -> str:
    return html.render(timeline.build(history, provider="openai", fix=True), source="x.json")


def _show_text(history: History) -> str:
    return text.render(timeline.build(history, provider="openai", fix=True), source="x.json")


SHAPES: dict[str, tuple[Callable[[int], History], Callable[[History], object], int]] = {
    # name: (build at size n, what is timed, n)
    "repair, n calls sharing one id": (shared_id, toolmend.repair, 1000),
    "repair, anthropic id reused every turn": (
        anthropic_reused,
        lambda h: toolmend.repair(h, provider="anthropic"),
        1000,
    ),
    "repair, openai id reused every turn": (openai_reused, toolmend.repair, 1000),
    "repair, openai id reused, first result lost": (
        lambda n: [message for i, message in enumerate(openai_reused(n)) if i != 2],
        toolmend.repair,
        1000,
    ),
    "repair, id-less calls and results in one turn": (idless_turn, toolmend.repair, 1000),
    "repair, many results for one call": (many_results, toolmend.repair, 1000),
    "repair, orphan results": (orphans, toolmend.repair, 1000),
    "repair, refused ids all the same": (bad_ids, toolmend.repair, 1000),
    "repair, calls left open": (missing_results, toolmend.repair, 1000),
    "repair, very long ids (n = 100 chars)": (long_ids, toolmend.repair, 100),
    "repair, results after all their calls": (results_at_the_end, toolmend.repair, 1000),
    "repair, every result twice": (results_twice, toolmend.repair, 1000),
    "repair, id-less results naming their calls": (named_results, toolmend.repair, 1000),
    "repair, a calling message and its results twice (mistral)": (
        block_sent_twice,
        lambda h: toolmend.repair(h, provider="mistral").changes,
        1000,
    ),
    "repair, empty assistant messages (gemini)": (
        empty_turns,
        lambda h: toolmend.repair(h, provider="gemini"),
        1000,
    ),
    "repair, calls removed (remove_call)": (
        unanswered_turns,
        lambda h: toolmend.repair(h, policy=toolmend.Policy(missing_result="remove_call")),
        1000,
    ),
    "repair, anthropic blocks sharing one id": (
        anthropic_shared,
        lambda h: toolmend.repair(h, provider="anthropic"),
        1000,
    ),
    "repair, responses outputs without call_id": (
        responses_idless,
        lambda h: toolmend.repair(h, provider="openai-responses"),
        1000,
    ),
    "repair, gemini contents without ids": (
        gemini_idless,
        lambda h: toolmend.repair(h, provider="gemini"),
        1000,
    ),
    "repair, LangChain messages sharing one id": (langchain_shared, toolmend.repair, 1000),
    "check, n calls sharing one id": (shared_id, toolmend.check, 1000),
    "check, id-less calls and results in one turn": (idless_turn, toolmend.check, 1000),
    "sanitize, n calls sharing one id": (shared_id, toolmend.sanitize, 1000),
    "trim, shared and self references": (
        shared_dag,
        lambda h: toolmend.trim(h, max_tokens=10**9),
        1000,
    ),
    "trim, n calls sharing one id": (
        lambda n: [*shared_id(n), _user("next")],
        lambda h: toolmend.trim(h, max_messages=len(h) - 1),
        1000,
    ),
    "trim, id-less calls and results": (
        lambda n: [*idless_turn(n), _user("next")],
        lambda h: toolmend.trim(h, max_messages=len(h) - 1),
        1000,
    ),
    "merge_consecutive, one long run": (user_run, toolmend.merge_consecutive, 1000),
    "detect_loops, the same call again and again": (repetitive, toolmend.detect_loops, 1000),
    "detect_loops, shared references in arguments": (
        shared_arguments,
        toolmend.detect_loops,
        1000,
    ),
    "atomic_groups, id-less calls and results": (idless_turn, toolmend.atomic_groups, 1000),
    "atomic_groups, n calls sharing one id": (shared_id, toolmend.atomic_groups, 1000),
    "hooks mend, n calls sharing one id": (shared_id, _mend, 1000),
    "hooks mend, id-less calls and results": (idless_turn, _mend, 1000),
    "hooks mend, the same call again and again": (repetitive, _mend, 1000),
    "show text, id-less turn": (idless_turn, _show_text, 1000),
    "show --html, id-less turn": (idless_turn, _show_html, 1000),
    "show --html, n calls sharing one id": (shared_id, _show_html, 1000),
    "show --html, shared references": (shared_dag, _show_html, 1000),
    "show text, shared references": (shared_dag, _show_text, 1000),
}


def measure(name: str, quick: bool) -> dict[str, Any]:
    build, run, size = SHAPES[name]
    if quick:
        size //= 4
    times = []
    for n in (size, 4 * size):
        history = build(n)
        times.append(_time(lambda history=history: run(history)))
    growth = times[1] / times[0] if times[0] > 0 else float("inf")
    return {"shape": name, "n": size, "times": times, "growth": growth}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="n a quarter as large")
    parser.add_argument("--only", default="", help="the shapes whose name contains this")
    parser.add_argument("--json", action="store_true", help="one JSON line at the end")
    parser.add_argument("--gc", action="store_true", help="keep the garbage collector on")
    args = parser.parse_args()
    global KEEP_GC
    KEEP_GC = args.gc
    logging.disable(logging.CRITICAL)  # the hooks' log lines (the loop guard's) are not timed
    rows = []
    print(f"{'shape':<46} {'n':>6} {'4n':>6} {'time n':>9} {'time 4n':>9} {'growth':>7}  verdict")
    for name in SHAPES:
        if args.only not in name:
            continue
        row = measure(name, args.quick)
        met = row["growth"] <= GROWTH_TARGET and (args.quick or row["times"][1] <= TIME_TARGET)
        row["met"] = met
        rows.append(row)
        print(
            f"{name:<46} {row['n']:>6} {4 * row['n']:>6} {row['times'][0]:>8.3f}s "
            f"{row['times'][1]:>8.3f}s {row['growth']:>6.2f}x  {'met' if met else 'MISSED'}",
            flush=True,
        )
    if args.json:
        print(json.dumps({"rows": rows, "met": all(row["met"] for row in rows)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
