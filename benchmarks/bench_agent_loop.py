"""What toolmend costs an agent loop per turn, as the history grows.

An agent calls the model with the same history plus a few new messages on every turn: one
assistant message with three parallel tool calls, their three results, and now and then a user
message. Each turn, a hook (the LiteLLM callback, the SDK patch, the LangChain middleware) hands
the whole history to ``toolmend.integrations.hooks.mend``, which reads it once
(``toolmend._fastpath``): the repair check, and the live run (the tool rounds since the last user
message) handed from the same pass to the loop guard.

This prints, for a history of 1,000, 10,000 and 100,000 messages, the median cost of one turn's
``mend`` in microseconds, per message, and as a ratio to ``json.dumps`` of the same history (the
serialisation the SDK does on that turn anyway), with the two parts of the full path (taken
when that pass cannot vouch for the history) timed on their own.

Why the check reads the whole history every turn: the caller owns the messages and may change
any of them between turns (a trimmer, a summariser, a store that reloads them), and nothing
short of reading a message tells whether it changed. A cache of earlier verdicts keyed on the
objects would skip exactly the damage toolmend exists to catch, so the per-turn cost is one
tight pass that builds nothing (a fraction of ``json.dumps``), plus the loop guard, which reads
only the live run and so stays flat however long the history grows.

Run with plain Python: ``python benchmarks/bench_agent_loop.py`` (``--quick`` for 1,000 and
10,000 messages; ``--json`` adds a line of machine-readable results for ``run.py``).
Target: <= 0.15x ``json.dumps`` per turn (the valid-history target).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent / "src"))  # the installed one first
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_core import agent_history, median_seconds

import toolmend
from toolmend.integrations.hooks import HookOptions, mend

TARGET = 0.15
TURNS = 30


def turn(number: int) -> list[dict[str, Any]]:
    """One agent turn: three parallel calls and their results (a user message every 10th)."""
    calls = [
        {
            "id": f"call_t{number}_{slot}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps({"query": f"{name} {number}"})},
        }
        for slot, name in enumerate(("search_web", "read_file", "run_shell"))
    ]
    out: list[dict[str, Any]] = []
    if number % 10 == 0:
        out.append({"role": "user", "content": f"Keep going ({number})."})
    out.append({"role": "assistant", "content": None, "tool_calls": calls})
    out.extend(
        {"role": "tool", "tool_call_id": call["id"], "content": f"result {number} " * 40}
        for call in calls
    )
    return out


def per_turn(size: int, repeat: int) -> dict[str, float]:
    """Median seconds of one turn's work at a history of ``size`` messages."""
    history = agent_history(size)
    for number in range(TURNS):  # a live run of a few rounds, as in a real loop
        history = history + turn(number)
    assert toolmend.check(history) == [], "the loop's history must stay valid"
    options = HookOptions()
    timed = {
        "json.dumps": lambda: json.dumps(history),
        "mend": lambda: mend(history, provider="openai", source="bench", options=options),
        "repair check": lambda: toolmend.repair(history, provider="openai", format="openai"),
        "loop guard": lambda: toolmend.detect_loops(history, format="openai", live_only=True),
    }
    for run in timed.values():  # warm up
        run()
    return {name: median_seconds(run, repeat) for name, run in timed.items()} | {
        "messages": float(len(history))
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 and 10,000 messages")
    parser.add_argument("--json", action="store_true", help="a last line of JSON results")
    args = parser.parse_args()
    logging.getLogger("toolmend").setLevel(logging.ERROR)
    sizes = (1_000, 10_000) if args.quick else (1_000, 10_000, 100_000)
    print(f"{'messages':>9} {'per turn':>10} {'per msg':>9} {'ratio':>7} {'check':>9} {'guard':>8}")
    results = []
    for size in sizes:
        timing = per_turn(size, 31 if size < 100_000 else 9)
        ratio = timing["mend"] / timing["json.dumps"]
        count = int(timing["messages"])
        results.append({"size": count, "ratio": ratio, "per_turn_us": timing["mend"] * 1e6})
        print(
            f"{count:>9,} {timing['mend'] * 1e6:>8.0f}us {timing['mend'] * 1e9 / count:>7.0f}ns "
            f"{ratio:>6.3f}x {timing['repair check'] * 1e6:>7.0f}us "
            f"{timing['loop guard'] * 1e6:>6.0f}us"
        )
    worst = max(result["ratio"] for result in results)
    print(f"target (per turn <= {TARGET}x json.dumps): {'met' if worst <= TARGET else 'MISSED'}")
    if args.json:
        print(json.dumps({"benchmark": "agent loop", "rows": results, "target": TARGET}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
