"""Time ``toolmend.sanitize`` on OpenAI chat histories against ``json.dumps`` of the same history.

Every SDK serialises the history with ``json.dumps`` (or its equivalent) on every request, so that
is the yardstick: toolmend's cost is printed as a ratio to it. Histories look like agent runs:
user turns, parallel tool calls, tool results of a few hundred to a few thousand characters.
"Damaged" histories have about 2% of their messages broken in the ways real apps break them.

Run with plain Python: ``python benchmarks/bench_core.py`` (``--quick`` for a short run).
Targets: valid <= 0.15x, damaged <= 0.5x, linear in size.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent / "src"))  # the installed one first

import toolmend

Message = dict[str, Any]
TOOLS = ("get_weather", "search_web", "read_file", "run_shell", "query_db")


def filler_text(rnd: random.Random, low: int, high: int) -> str:
    """Plain words, ``low`` to ``high`` characters: content of a realistic size."""
    words = ("the", "result", "of", "query", "file", "line", "value", "error", "ok", "data")
    size = rnd.randint(low, high)
    out: list[str] = []
    length = 0
    while length < size:
        word = rnd.choice(words)
        out.append(word)
        length += len(word) + 1
    return " ".join(out)


def agent_history(size: int, seed: int = 7) -> list[Message]:
    """A valid agent history of about ``size`` messages."""
    rnd = random.Random(seed)
    history: list[Message] = [{"role": "system", "content": filler_text(rnd, 200, 800)}]
    counter = 0
    while len(history) < size:
        history.append({"role": "user", "content": filler_text(rnd, 40, 400)})
        for _ in range(rnd.randint(0, 3)):
            ids = []
            tool_calls = []
            for _ in range(rnd.randint(1, 3)):
                counter += 1
                call_id = f"call_{counter:024d}"
                ids.append(call_id)
                arguments = json.dumps(
                    {"query": filler_text(rnd, 10, 60), "limit": rnd.randint(1, 50)}
                )
                tool_calls.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": rnd.choice(TOOLS), "arguments": arguments},
                    }
                )
            history.append({"role": "assistant", "content": None, "tool_calls": tool_calls})
            for call_id in ids:
                history.append(
                    {
                        "role": "tool",
                        "tool_call_id": call_id,
                        "content": filler_text(rnd, 200, 3000),
                    }
                )
        history.append({"role": "assistant", "content": filler_text(rnd, 100, 1200)})
    cut = max(i for i in range(1, min(size, len(history) - 1) + 1) if history[i]["role"] == "user")
    return history[:cut]  # end on a whole turn, so the history stays valid


def damage(history: list[Message], share: float = 0.02, seed: int = 11) -> list[Message]:
    """A copy with about ``share`` of the messages broken: dropped calls and results,
    interleaved user messages, duplicated results."""
    rnd = random.Random(seed)
    out = list(history)
    for _ in range(max(1, int(len(history) * share))):
        position = rnd.randrange(1, len(out) - 1)
        action = rnd.randrange(4)
        if action == 0 and out[position]["role"] == "tool":
            del out[position]  # a missing result
        elif action == 1 and out[position]["role"] == "assistant" and "tool_calls" in out[position]:
            del out[position]  # orphaned results
        elif action == 2:
            out.insert(position, {"role": "user", "content": "are you still there?"})
        else:
            out.insert(position, out[position - 1])  # a duplicate
    return out


def median_seconds(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def ratios_to_dumps(
    history: Sequence[Any], runs: Mapping[str, Callable[[], object]], repeat: int
) -> dict[str, float]:
    """Each run's time over ``json.dumps(history)``'s, medians of ``repeat`` rounds.

    A round times ``json.dumps`` once, then each run once right after an untimed run of its
    own: every run is timed in the steady state of repeating itself (as ``timeit`` would, not on
    the caches ``json.dumps`` just filled with its output, which costs a scan 20-50% more),
    while load drifting on a shared machine falls on every round, and so on both sides alike
    (timing all of one side, then all of the other, let it move a ratio by 10% and more)."""
    baseline: list[float] = []
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        start = time.perf_counter()
        json.dumps(history)
        baseline.append(time.perf_counter() - start)
        for name, run in runs.items():
            run()
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    dumps = statistics.median(baseline)
    return {name: statistics.median(values) / dumps for name, values in times.items()}


def ratio_to_dumps(history: Sequence[Any], run: Callable[[], object], repeat: int) -> float:
    """One run's time over ``json.dumps(history)``'s (see :func:`ratios_to_dumps`)."""
    return ratios_to_dumps(history, {"run": run}, repeat)["run"]


def measure(history: list[Message], repeat: int) -> float:
    return ratio_to_dumps(history, lambda: toolmend.sanitize(history, provider="openai"), repeat)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and runs")
    args = parser.parse_args()
    sizes = (1_000, 10_000) if args.quick else (1_000, 10_000, 100_000)
    print(f"{'messages':>9} {'valid':>8} {'damaged':>8}   (sanitize time / json.dumps time)")
    rows = []
    for size in sizes:
        repeat = 25 if size < 100_000 else 7
        valid = agent_history(size)
        assert toolmend.check(valid) == []
        broken = damage(valid)
        assert toolmend.check(broken) != []
        row = (size, measure(valid, repeat), measure(broken, repeat))
        rows.append(row)
        print(f"{row[0]:>9,} {row[1]:>7.3f}x {row[2]:>7.3f}x")
    worst_valid = max(row[1] for row in rows)
    worst_damaged = max(row[2] for row in rows)
    verdict = "met" if worst_valid <= 0.15 and worst_damaged <= 0.5 else "MISSED"
    print(f"targets (valid <= 0.15x, damaged <= 0.5x): {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
