"""Where an async hook should repair off the event loop: the thread hop against the repair.

An async hook (:mod:`toolmend.integrations.budget`) repairs a history of
``TOOLMEND_OFFLOAD_ITEMS`` items or more (:func:`toolmend.integrations.budget.size_of`) on a
worker thread, and a smaller one inline. This prints, on this machine:

* the hop: ``await loop.run_in_executor(pool, f)`` for an ``f`` that does nothing, median of
  many (what the thread costs a request, in the loop's time and in latency);
* :func:`toolmend.integrations.hooks.mend` on agent histories of growing size, valid (the one-pass
  fast path) and damaged (an orphan result in the middle: the full repair), in microseconds,
  with its item count.

The crossover is where the damaged repair costs what the hop does; the threshold is set well
above it, where holding the loop starts to matter to other clients (about a millisecond of
repair), so a normal request never pays the hop. Run with plain Python:
``python benchmarks/bench_offload.py``.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from toolmend.integrations.budget import size_of
from toolmend.integrations.hooks import mend


def _history(turns: int, *, damaged: bool) -> list[dict[str, Any]]:
    """An agent run of ``turns`` tool turns (user, assistant with one call, its result)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for turn in range(turns):
        call = {
            "id": f"call_{turn}",
            "type": "function",
            "function": {"name": "lookup", "arguments": f'{{"q": {turn}}}'},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call_{turn}", "content": "ok"})
    if damaged:
        middle = len(messages) // 2
        orphan = {"role": "tool", "tool_call_id": "call_lost", "content": "late"}
        messages.insert(middle, orphan)
    messages.append({"role": "assistant", "content": "done"})
    return messages


def _median_us(function: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


async def _hop_us(repeat: int) -> float:
    loop = asyncio.get_running_loop()
    with ThreadPoolExecutor(max_workers=4) as pool:
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            await loop.run_in_executor(pool, int)
            times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def main() -> None:
    hop = asyncio.run(_hop_us(2000))
    print(f"thread hop (run_in_executor, no work): {hop:.0f} us")
    print(f"{'turns':>6} {'items':>7} {'valid us':>10} {'damaged us':>11}")
    for turns in (5, 20, 50, 100, 200, 500, 1000, 2000):
        valid = _history(turns, damaged=False)
        broken = _history(turns, damaged=True)
        repeat = max(5, 2000 // turns)
        clean = _median_us(lambda h=valid: mend(h, provider="openai", source="bench"), repeat)
        fixed = _median_us(lambda h=broken: mend(h, provider="openai", source="bench"), repeat)
        print(f"{turns:>6} {size_of(broken):>7} {clean:>10.0f} {fixed:>11.0f}")


if __name__ == "__main__":
    import logging

    logging.getLogger("toolmend").setLevel(logging.ERROR)  # the repaired lines, not wanted here
    main()
