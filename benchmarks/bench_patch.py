"""Time an openai chat call with toolmend's patch against the same call without it.

One ``client.chat.completions.create`` to the strict provider server on 127.0.0.1 with a valid
200-message agent history (the ``bench_core.py`` generator), over and over; each round times
one unpatched and one patched call back to back, in alternating order, so drift on a busy
machine hits both alike.
The figure is the ratio of the medians, patched / unpatched, from one run. A valid history is
the common case: the patch reads it once, finds nothing, and sends the caller's own list.

Run with plain Python: ``python benchmarks/bench_patch.py`` (``--rounds N``, default 300;
``--json`` adds a line of machine-readable results for ``run.py``).
Target: <= 1.05.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import logging
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import openai
from bench_core import agent_history

import toolmend
import toolmend.integrations.patch as tm
from toolmend.testing import StrictProviderServer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=300, help="timed calls of each kind")
    parser.add_argument("--json", action="store_true", help="a last line of JSON results")
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
    logging.getLogger("toolmend").setLevel(logging.WARNING)
    history = agent_history(202)[1:]  # 201 messages ending on a whole turn; no system prompt
    assert len(history) == 200
    assert toolmend.check(history) == []
    with (
        StrictProviderServer() as server,
        openai.OpenAI(api_key="test", base_url=server.openai_base_url, max_retries=0) as client,
    ):

        def call() -> float:
            start = time.perf_counter()
            with request_span():
                client.chat.completions.create(model="gpt-4o", messages=history)
            return time.perf_counter() - start

        for _ in range(20):  # warm up the connection, both code paths and the server
            call()
            tm.patch()
            call()
            tm.unpatch()
        plain, patched = [], []
        for round_ in range(args.rounds):
            gc.collect()  # a collection falls on neither call more than the other
            if round_ % 2:  # ABBA order, so neither kind always comes second
                plain.append(call())
                tm.patch()
                patched.append(call())
            else:
                tm.patch()
                patched.append(call())
                tm.unpatch()
                plain.append(call())
            tm.unpatch()
        assert all(r.accepted for r in server.requests)
    plain_ms = statistics.median(plain) * 1000
    patched_ms = statistics.median(patched) * 1000
    ratio = patched_ms / plain_ms
    mend_us = _mend_cost(history) * 1e6
    print(f"history: {len(history)} messages, {args.rounds} rounds")
    print(f"median unpatched {plain_ms:.3f} ms, patched {patched_ms:.3f} ms")
    print(f"ratio of medians (patched / unpatched): {ratio:.3f}")
    print(f"toolmend's own work per call (hooks.mend on this history): {mend_us:.0f} us")
    print(f"target (<= 1.05): {'met' if ratio <= 1.05 else 'MISSED'}")
    if args.json:
        what = f"openai chat.completions.create, {len(history)} messages, strict server"
        if args.otel:
            what += ", OpenTelemetry SDK configured"
        print(json.dumps({"ratio": ratio, "target": 1.05, "what": what}))
    return 0


def _mend_cost(history: list[dict[str, object]], repeat: int = 200) -> float:
    """Median seconds of the wrapper's work alone (loop guard + check) on ``history``."""
    from toolmend.integrations.hooks import HookOptions, mend

    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        mend(history, provider="openai", source="bench", options=HookOptions(), format="openai")
        times.append(time.perf_counter() - start)
    return statistics.median(times)


if __name__ == "__main__":
    raise SystemExit(main())
