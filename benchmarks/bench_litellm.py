"""Time ``litellm.completion`` with the ToolMend callback against the same call without it.

One ``litellm.completion(model="gpt-4o", messages=history, mock_response=...)`` with a valid
200-message agent history (the ``bench_core.py`` generator), over and over; each round times one
call of each kind (without a callback, with ``litellm.callbacks = [ToolMend()]``, and the two
below) back to back in a shuffled order, so drift on a busy machine hits all alike and no kind
keeps the first or last place (a fixed alternating order did: the call after the round's
``gc.collect()`` runs on cold caches, and it flattered the kinds in the middle by 5%).
``mock_response`` keeps LiteLLM's whole Python path (its ``@client`` decorator, logging object,
message processing, response building) but skips the network, so the figure is the
integration's share of LiteLLM's own work: the sync-path wrapper reading the history once,
finding nothing, and handing the caller's list on.

Each timed call starts 5 ms after the previous one ended, the main thread yielding the GIL all
the while: with any callback registered, LiteLLM runs the previous call's success logging in a
background thread, and without the pause that thread's work would be charged to the next call
(real calls give it the network wait). With ``--diagnose``, two more kinds of call show where
the time goes: an empty ``CustomLogger`` (what LiteLLM itself adds for any callback: 0-1.5%)
and ``ToolMend(on_loop="off")`` (the repair check without the loop guard).

Each kind runs with LiteLLM in the state of a process that only ever had its callbacks
(:func:`use_callbacks`): LiteLLM copies ``litellm.callbacks`` into its own logger lists on every
call and never takes them out, so before, "without" ran every other kind's loggers too. After
the warm-up the heap LiteLLM built on import (~370,000 objects) is frozen out of the garbage
collector (``gc.freeze()``): the collection at the start of each round then takes microseconds
instead of 180 ms, which lets a run time three times the rounds in a quarter of the time.

The figure is the ratio of the medians, with / without, from one run. Call times on this shared
2-core machine fall in two bands (about 2.7 and 4.1 ms, for stretches of dozens of calls), and
a median that falls between them moves with the share of calls in each; so the ratio still moves
by about +-0.01 from run to run at 1,000 rounds, which the default of 2,000 rounds narrows. The
median of the per-round differences (with - without, same round) is printed beside it as the
steadier measure of what toolmend adds.

Run with plain Python: ``python benchmarks/bench_litellm.py`` (``--rounds N``, default 2,000,
about a minute; ``--diagnose``; ``--json`` adds a line of machine-readable results for
``run.py``).
Target: <= 1.05.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import logging
import os
import random
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before LiteLLM is imported
sys.path.insert(0, str(Path(__file__).resolve().parent))

import litellm
from bench_core import agent_history
from litellm.integrations.custom_logger import CustomLogger

import toolmend
from toolmend.integrations.litellm import ToolMend
from toolmend.testing import StrictProviderServer

_LOGGER_LISTS = (
    "input_callback",
    "success_callback",
    "failure_callback",
    "_async_success_callback",
    "_async_failure_callback",
)
"""LiteLLM's own lists of logging callbacks, which its ``function_setup`` fills from
``litellm.callbacks`` on every call and never empties."""


def use_callbacks(callbacks: list[object]) -> None:
    """Put LiteLLM in the state of a process that only ever had ``callbacks``: after one call,
    each logger list holds exactly them. Setting ``litellm.callbacks`` alone is not enough: the
    loggers of every earlier kind would stay in LiteLLM's lists, and "without" would pay for
    running them."""
    litellm.callbacks = callbacks
    for name in _LOGGER_LISTS:
        getattr(litellm, name)[:] = callbacks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2000, help="timed calls of each kind")
    parser.add_argument(
        "--diagnose",
        action="store_true",
        help='also time an empty CustomLogger and ToolMend(on_loop="off") in every round',
    )
    parser.add_argument("--json", action="store_true", help="a last line of JSON results")
    parser.add_argument(
        "--http", action="store_true", help="send to the strict server instead of mock_response"
    )
    parser.add_argument(
        "--otel",
        action="store_true",
        help="with the OpenTelemetry SDK configured, each call in a span (bench_otel.py)",
    )
    args = parser.parse_args()
    request_span = contextlib.nullcontext
    if args.otel:  # imported only then: without it the run has no OpenTelemetry at all
        import bench_otel

        request_span = bench_otel.configure()
    server = StrictProviderServer().start() if args.http else None
    target: dict[str, object] = (
        {"mock_response": "OK"}
        if server is None
        else {"api_base": server.openai_base_url, "api_key": "t", "max_retries": 0}
    )
    logging.getLogger("toolmend").setLevel(logging.WARNING)
    litellm.suppress_debug_info = True
    history = agent_history(202)[1:]  # 200 messages ending on a whole turn; no system prompt
    assert len(history) == 200
    assert toolmend.check(history) == [], "the benchmark history must be valid"
    kinds: dict[str, list[object]] = {"without": [], "ToolMend": [ToolMend()]}
    if args.diagnose:
        kinds["empty CustomLogger"] = [CustomLogger()]
        kinds['ToolMend(on_loop="off")'] = [ToolMend(on_loop="off")]

    def call(callbacks: list[object]) -> float:
        use_callbacks(callbacks)
        pause = time.perf_counter() + 0.005  # let the previous call's background logging finish
        while time.perf_counter() < pause:
            time.sleep(0)  # yield the GIL, but keep this core busy
        start = time.perf_counter()
        with request_span():
            litellm.completion(model="gpt-4o", messages=history, **target)
        return time.perf_counter() - start

    for _ in range(20):  # warm up every path
        for callbacks in kinds.values():
            call(callbacks)
    gc.collect()
    gc.freeze()  # LiteLLM's ~370,000 import-time objects: see the module docstring
    times: dict[str, list[float]] = {name: [] for name in kinds}
    shuffle = random.Random(0).shuffle
    order = list(kinds)
    for _ in range(args.rounds):
        gc.collect()  # a collection falls on no kind of call more than another...
        call([])  # ...and neither does the first call after it, which runs on cold caches
        shuffle(order)  # every kind takes every place in the round equally often
        for name in order:
            times[name].append(call(kinds[name]))
    use_callbacks([])
    if server is not None:
        assert all(r.accepted for r in server.requests), "the server refused a request"
        server.stop()
    ms = {name: statistics.median(values) * 1000 for name, values in times.items()}
    ratio = ms["ToolMend"] / ms["without"]
    sent = "strict server" if args.http else "mock_response"
    print(f"history: {len(history)} messages, {args.rounds} rounds, {sent}")
    for name, value in ms.items():
        print(f"median {name:<24} {value:.3f} ms  ({value / ms['without']:.3f})")
    paired = statistics.median(
        with_ - without for with_, without in zip(times["ToolMend"], times["without"], strict=True)
    )
    print(f"median per-round difference (with - without): {paired * 1e6:.0f} us")
    print(f"ratio of medians (with ToolMend / without): {ratio:.3f}")
    print(f"target (<= 1.05): {'met' if ratio <= 1.05 else 'MISSED'}")
    if args.json:
        what = f"litellm.completion, {len(history)} messages, {sent}"
        if args.otel:
            what += ", OpenTelemetry SDK configured"
        print(json.dumps({"ratio": ratio, "target": 1.05, "what": what, "added_us": paired * 1e6}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
