"""Time ``toolmend.sanitize`` on Anthropic, Gemini and Bedrock Converse histories against
``json.dumps`` of them.

The same yardstick as ``bench_core.py``: every SDK serialises the history on every request, so
toolmend's cost is printed as a ratio to ``json.dumps`` of the same history. Histories look like
agent runs (user turns, parallel tool calls, results of a few hundred to a few thousand
characters), written natively: Anthropic ``tool_use`` / ``tool_result`` blocks, Gemini
``functionCall`` / ``functionResponse`` parts, Bedrock ``toolUse`` / ``toolResult`` blocks.
"Damaged" histories have about 2% of their messages broken: results dropped, calls dropped,
user text typed into the results, duplicates, and (Gemini) responses named after the opaque
call id.

Run with plain Python: ``python benchmarks/bench_formats.py`` (``--quick`` for 1k and 10k
messages with fewer runs; the default adds 100k).
Targets: valid <= 0.15x, damaged <= 0.5x, linear in size.
"""

from __future__ import annotations

import argparse
import copy
import random
import sys
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent / "src"))  # the installed one first
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_core import TOOLS, Message, filler_text, ratio_to_dumps

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


def bedrock_history(size: int, seed: int = 7) -> list[Message]:
    """A valid Bedrock Converse ``messages`` list of about ``size`` messages."""
    out: list[Message] = []
    for kind, data in _turns(size, seed):
        if kind == "calls":
            blocks = [{"toolUse": {"toolUseId": i, "name": n, "input": a}} for i, n, a in data]
            out.append({"role": "assistant", "content": blocks})
        elif kind == "results":
            blocks = [
                {"toolResult": {"toolUseId": i, "content": [{"text": t}], "status": "success"}}
                for i, _, t in data
            ]
            out.append({"role": "user", "content": blocks})
        else:
            role = "user" if kind == "user" else "assistant"
            out.append({"role": role, "content": [{"text": data}]})
    return out


def _results_key(message: Message) -> str:
    return "parts" if "parts" in message else "content"


_RESULT_KEYS = ("functionResponse", "toolResult")
_CALL_KEYS = ("functionCall", "toolUse")


def _is_result_message(message: Message) -> bool:
    blocks = message[_results_key(message)]
    return isinstance(blocks, list) and any(
        isinstance(b, dict) and (b.keys() & _RESULT_KEYS or b.get("type") == "tool_result")
        for b in blocks
    )


def _is_call_message(message: Message) -> bool:
    blocks = message[_results_key(message)]
    return isinstance(blocks, list) and any(
        isinstance(b, dict) and (b.keys() & _CALL_KEYS or b.get("type") == "tool_use")
        for b in blocks
    )


def _typed_blocks(history: list[Message]) -> bool:
    """Whether the history's blocks carry a ``type`` (Anthropic) rather than being keyed by
    their kind (Gemini parts, Bedrock blocks)."""
    for message in history:
        content = message.get("content")
        if isinstance(content, list) and content and isinstance(content[0], dict):
            return "type" in content[0]
    return False


def damage(history: list[Message], share: float = 0.02, seed: int = 11) -> list[Message]:
    """A copy with about ``share`` of the messages broken (the input is not changed)."""
    rnd = random.Random(seed)
    out = list(history)
    gemini = "parts" in history[0]
    typed = _typed_blocks(history)
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
            block = {"type": "text", **text} if typed else text
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
    """``sanitize`` time over ``json.dumps`` time for ``history`` (see ``ratio_to_dumps``)."""
    return ratio_to_dumps(history, lambda: toolmend.sanitize(history, provider=provider), repeat)


BUILDERS = (
    ("anthropic", anthropic_history),
    ("gemini", gemini_history),
    ("bedrock", bedrock_history),
)
"""Provider (also the format name) -> the builder of its valid histories."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1k and 10k messages, fewer runs")
    parser.add_argument("--format", choices=[name for name, _ in BUILDERS], help="only this one")
    args = parser.parse_args()
    sizes = (1_000, 10_000) if args.quick else (1_000, 10_000, 100_000)
    print(f"{'format':>10} {'messages':>9} {'valid':>8} {'damaged':>8}   (sanitize / json.dumps)")
    rows = []
    for name, build in BUILDERS:
        if args.format and name != args.format:
            continue
        for size in sizes:
            repeat = (9 if args.quick else 25) if size < 100_000 else 5
            valid = build(size)
            assert toolmend.check(valid, provider=name) == []
            assert toolmend.sanitize(valid, provider=name) is valid
            broken = damage(valid)
            assert toolmend.check(broken, provider=name) != []
            assert toolmend.check(toolmend.sanitize(broken, provider=name), provider=name) == []
            row = (name, len(valid), measure(valid, name, repeat), measure(broken, name, repeat))
            rows.append(row)
            print(f"{row[0]:>10} {row[1]:>9,} {row[2]:>7.3f}x {row[3]:>7.3f}x", flush=True)
    worst_valid = max(row[2] for row in rows)
    worst_damaged = max(row[3] for row in rows)
    verdict = "met" if worst_valid <= 0.15 and worst_damaged <= 0.5 else "MISSED"
    print(f"targets (valid <= 0.15x, damaged <= 0.5x): {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
