"""Time ``toolmend.sanitize`` on Anthropic and Gemini histories against ``json.dumps`` of them.

The same yardstick as ``bench_core.py``: every SDK serialises the history on every request, so
toolmend's cost is printed as a ratio to ``json.dumps`` of the same history. Histories look like
agent runs (user turns, parallel tool calls, results of a few hundred to a few thousand
characters), written natively: Anthropic ``tool_use`` / ``tool_result`` blocks, Gemini
``functionCall`` / ``functionResponse`` parts. "Damaged" histories have about 2% of their
messages broken: results dropped, calls dropped, user text typed into the results, duplicates,
and (Gemini) responses named after the opaque call id.

Run with plain Python: ``python benchmarks/bench_formats.py`` (``--quick`` for a short run).
Targets: valid <= 0.15x, damaged <= 0.5x.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_core import TOOLS, Message, filler_text, median_seconds

import toolmend


def _turns(size: int, seed: int) -> list[tuple[str, Any]]:
    """A format-neutral agent run: ``("user", text)``, ``("calls", [(id, name, args)])``,
    ``("results", [(id, name, text)])``, ``("assistant", text)``."""
    rnd = random.Random(seed)
    turns: list[tuple[str, Any]] = []
    counter = 0
    while len(turns) < size:
        turns.append(("user", filler_text(rnd, 40, 400)))
        for _ in range(rnd.randint(0, 3)):
            calls = []
            for _ in range(rnd.randint(1, 3)):
                counter += 1
                args = {"query": filler_text(rnd, 10, 60), "limit": rnd.randint(1, 50)}
                calls.append((f"toolu_{counter:024d}", rnd.choice(TOOLS), args))
            turns.append(("calls", calls))
            turns.append(("results", [(i, n, filler_text(rnd, 200, 3000)) for i, n, _ in calls]))
        turns.append(("assistant", filler_text(rnd, 100, 1200)))
    cut = max(i for i in range(1, min(size, len(turns) - 1) + 1) if turns[i][0] == "user")
    return turns[:cut]


def anthropic_history(size: int, seed: int = 7) -> list[Message]:
    """A valid Anthropic Messages history of about ``size`` messages."""
    out: list[Message] = []
    for kind, data in _turns(size, seed):
        if kind == "calls":
            blocks = [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in data]
            out.append({"role": "assistant", "content": blocks})
        elif kind == "results":
            blocks = [{"type": "tool_result", "tool_use_id": i, "content": t} for i, _, t in data]
            out.append({"role": "user", "content": blocks})
        elif kind == "user":
            out.append({"role": "user", "content": [{"type": "text", "text": data}]})
        else:
            out.append({"role": "assistant", "content": [{"type": "text", "text": data}]})
    return out


def gemini_history(size: int, seed: int = 7) -> list[Message]:
    """Valid Gemini ``contents`` (REST, camelCase) of about ``size`` Contents."""
    out: list[Message] = []
    for kind, data in _turns(size, seed):
        if kind == "calls":
            parts = [{"functionCall": {"name": n, "args": a}} for _, n, a in data]
            out.append({"role": "model", "parts": parts})
        elif kind == "results":
            parts = [
                {"functionResponse": {"name": n, "response": {"result": t}}} for _, n, t in data
            ]
            out.append({"role": "user", "parts": parts})
        else:
            out.append({"role": "user" if kind == "user" else "model", "parts": [{"text": data}]})
    return out


def _results_key(message: Message) -> str:
    return "parts" if "parts" in message else "content"


def _is_result_message(message: Message) -> bool:
    blocks = message[_results_key(message)]
    return isinstance(blocks, list) and any(
        isinstance(b, dict) and ("functionResponse" in b or b.get("type") == "tool_result")
        for b in blocks
    )


def _is_call_message(message: Message) -> bool:
    blocks = message[_results_key(message)]
    return isinstance(blocks, list) and any(
        isinstance(b, dict) and ("functionCall" in b or b.get("type") == "tool_use") for b in blocks
    )


def damage(history: list[Message], share: float = 0.02, seed: int = 11) -> list[Message]:
    """A copy with about ``share`` of the messages broken (the input is not changed)."""
    rnd = random.Random(seed)
    out = list(history)
    gemini = "parts" in history[0]
    for _ in range(max(1, int(len(history) * share))):
        position = rnd.randrange(1, len(out) - 1)
        message = out[position]
        action = rnd.randrange(5)
        if action == 0 and _is_result_message(message):
            del out[position]  # results lost
        elif action == 1 and _is_call_message(message):
            del out[position]  # calls lost: orphaned results
        elif action == 2 and _is_result_message(message):
            broken = copy.deepcopy(message)
            text = {"text": "are you still there?"}
            block = text if gemini else {"type": "text", **text}
            broken[_results_key(broken)].insert(0, block)  # text typed before the results
            out[position] = broken
        elif action == 3 and gemini and _is_result_message(message):
            broken = copy.deepcopy(message)
            broken["parts"][0]["functionResponse"]["name"] = "call_1073557"  # seed 003
            out[position] = broken
        else:
            out.insert(position, out[position - 1])  # a duplicate
    return out


def measure(history: list[Message], provider: str, repeat: int) -> float:
    baseline = median_seconds(lambda: json.dumps(history), repeat)
    cost = median_seconds(lambda: toolmend.sanitize(history, provider=provider), repeat)
    return cost / baseline


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    args = parser.parse_args()
    repeat = 5 if args.quick else 15
    size = 10_000
    print(f"{'format':>10} {'messages':>9} {'valid':>8} {'damaged':>8}   (sanitize / json.dumps)")
    rows = []
    for name, build in (("anthropic", anthropic_history), ("gemini", gemini_history)):
        valid = build(size)
        assert toolmend.check(valid, provider=name) == []
        assert toolmend.sanitize(valid, provider=name) is valid
        broken = damage(valid)
        assert toolmend.check(broken, provider=name) != []
        assert toolmend.check(toolmend.sanitize(broken, provider=name), provider=name) == []
        row = (name, len(valid), measure(valid, name, repeat), measure(broken, name, repeat))
        rows.append(row)
        print(f"{row[0]:>10} {row[1]:>9,} {row[2]:>7.3f}x {row[3]:>7.3f}x")
    worst_valid = max(row[2] for row in rows)
    worst_damaged = max(row[3] for row in rows)
    verdict = "met" if worst_valid <= 0.15 and worst_damaged <= 0.5 else "MISSED"
    print(f"targets (valid <= 0.15x, damaged <= 0.5x): {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
