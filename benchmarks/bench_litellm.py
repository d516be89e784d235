"""Time ``litellm.completion`` with the ToolMend callback against the same call without it.

One ``litellm.completion(model="gpt-4o", messages=history, mock_response=...)`` with a valid
200-message agent history (the ``bench_core.py`` generator), over and over; each round times one
call without and one with ``litellm.callbacks = [ToolMend()]``, back to back in alternating
order, so drift on a busy machine hits both alike. ``mock_response`` keeps LiteLLM's whole
Python path (its ``@client`` decorator, logging object, message processing, response building)
but skips the network, so the figure is the integration's share of LiteLLM's own work: the
sync-path wrapper reading the history once, finding nothing, and handing the caller's list on.

The figure is the ratio of the medians, with / without, from one run.

Run with plain Python: ``python benchmarks/bench_litellm.py`` (``--rounds N``, default 300).
Target: <= 1.05.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before LiteLLM is imported
sys.path.insert(0, str(Path(__file__).resolve().parent))

import litellm
from bench_core import agent_history

import toolmend
from toolmend.integrations.litellm import ToolMend


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=300, help="timed calls of each kind")
    args = parser.parse_args()
    logging.getLogger("toolmend").setLevel(logging.WARNING)
    litellm.suppress_debug_info = True
    history = agent_history(202)[1:]  # 201 messages ending on a whole turn; no system prompt
    history = history[:200] if history[199]["role"] != "tool" else history[:198]
    assert toolmend.check(history) == [], "the benchmark history must be valid"
    callback = ToolMend()

    def call() -> float:
        start = time.perf_counter()
        litellm.completion(model="gpt-4o", messages=history, mock_response="OK")
        return time.perf_counter() - start

    for _ in range(20):  # warm up both paths
        litellm.callbacks = []
        call()
        litellm.callbacks = [callback]
        call()
    plain, mended = [], []
    for round_ in range(args.rounds):
        gc.collect()  # a collection falls on neither call more than the other
        if round_ % 2:  # alternate the order, so neither kind always comes second
            litellm.callbacks = []
            plain.append(call())
            litellm.callbacks = [callback]
            mended.append(call())
        else:
            litellm.callbacks = [callback]
            mended.append(call())
            litellm.callbacks = []
            plain.append(call())
    litellm.callbacks = []
    plain_ms = statistics.median(plain) * 1000
    mended_ms = statistics.median(mended) * 1000
    ratio = mended_ms / plain_ms
    print(f"history: {len(history)} messages, {args.rounds} rounds, mock_response")
    print(f"median without the callback {plain_ms:.3f} ms, with {mended_ms:.3f} ms")
    print(f"ratio of medians (with / without): {ratio:.3f}")
    print(f"target (<= 1.05): {'met' if ratio <= 1.05 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
