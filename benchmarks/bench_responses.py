"""Time ``toolmend.sanitize`` on OpenAI Responses ``input`` items against ``json.dumps`` of them.

The same yardstick and histories as ``bench_core.py``, written as Responses items the way
agents replay ``response.output``: a reasoning item (summary and ~1.5 KB of encrypted content)
before each model turn, ``function_call`` items with ``fc_`` ids, ``function_call_output``
items, assistant messages with ``output_text`` parts. "Damaged" inputs are the chat damage of
``bench_core.py`` (about 2%: dropped results and calls, interjected user messages, duplicates)
carried over to items.

Run with plain Python: ``python benchmarks/bench_responses.py`` (``--quick`` for a short run).
Targets: valid <= 0.15x, damaged <= 0.5x.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_core import agent_history, damage, ratio_to_dumps

import toolmend

Item = dict[str, Any]
PROVIDER = "openai-responses"
ENCRYPTED = "gAAAAABo" + "x" * 1500


def as_items(history: list[Item]) -> list[Item]:
    """Chat messages as Responses items (see the module docstring)."""
    items: list[Item] = []
    for turn, message in enumerate(history):
        role, content = message["role"], message.get("content")
        if role == "system":
            items.append({"role": "developer", "content": content})
        elif role == "user":
            items.append({"role": "user", "content": content})
        elif role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message["tool_call_id"],
                    "output": content,
                }
            )
        else:
            items.append(
                {
                    "type": "reasoning",
                    "id": f"rs_{turn:08d}",
                    "summary": [{"type": "summary_text", "text": "Plan the next step."}],
                    "encrypted_content": ENCRYPTED,
                }
            )
            if content:
                part = {"type": "output_text", "text": content, "annotations": []}
                items.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "id": f"msg_{turn:08d}",
                        "status": "completed",
                        "content": [part],
                    }
                )
            for slot, call in enumerate(message.get("tool_calls") or []):
                function = call["function"]
                items.append(
                    {
                        "type": "function_call",
                        "id": f"fc_{turn:08d}_{slot}",
                        "call_id": call["id"],
                        "name": function["name"],
                        "arguments": function["arguments"],
                    }
                )
    return items


def measure(items: list[Item], repeat: int) -> float:
    return ratio_to_dumps(items, lambda: toolmend.sanitize(items, provider=PROVIDER), repeat)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and runs")
    args = parser.parse_args()
    sizes = (1_000, 10_000) if args.quick else (1_000, 10_000, 100_000)
    print(f"{'items':>9} {'valid':>8} {'damaged':>8}   (sanitize time / json.dumps time)")
    rows = []
    for size in sizes:
        repeat = 25 if size < 100_000 else 7
        history = agent_history(size)
        valid = as_items(history)
        assert toolmend.check(valid, provider=PROVIDER) == []
        broken = as_items(damage(history))
        assert toolmend.check(broken, provider=PROVIDER) != []
        row = (len(valid), measure(valid, repeat), measure(broken, repeat))
        rows.append(row)
        print(f"{row[0]:>9,} {row[1]:>7.3f}x {row[2]:>7.3f}x")
    worst_valid = max(row[1] for row in rows)
    worst_damaged = max(row[2] for row in rows)
    verdict = "met" if worst_valid <= 0.15 and worst_damaged <= 0.5 else "MISSED"
    print(f"targets (valid <= 0.15x, damaged <= 0.5x): {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
