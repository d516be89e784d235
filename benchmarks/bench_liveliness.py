"""How long other clients of a LiteLLM Proxy wait while toolmend repairs one crafted request.

A real ``litellm --config`` proxy with ``toolmend.integrations.litellm.proxy_handler`` in front
of the strict server (``benchmarks/load_proxy.py`` starts both). One client posts a crafted
request of about 300 KB: one assistant turn of ``--calls`` tool calls that all share one id,
then as many results (the shape issue 30 found quadratic in the pairing engine). Meanwhile
another client polls ``/health/liveliness`` every 10 ms. Printed, for each mode:

* ``off-loop``: the hook as shipped: a history past ``TOOLMEND_OFFLOAD_ITEMS`` is repaired on a
  worker thread, and past ``TOOLMEND_BUDGET_SECONDS`` (2 s) the request goes out as sent;
* ``inline``: ``TOOLMEND_OFFLOAD_ITEMS`` set past the request's size, so the repair runs on the
  event loop (what the hook did before), with no wall-clock budget;

the deployment is ``openai/gpt-4o``, whose profile rewrites every repeated call id (the repair
that grew quadratically before issue 30);

* ``none``: the proxy without toolmend's callback (LiteLLM's own cost of the request);

the request's size, its HTTP status and time, the number of polls during it and their worst
and median latency, and the worst poll in the ``--after`` seconds after the answer (a repair
abandoned at the budget still runs on its thread until it ends). The target (issue 30) is a
worst poll under 100 ms off the loop.

Run with plain Python: ``python benchmarks/bench_liveliness.py`` (``--calls 2000``,
``--modes none,off-loop,inline``, ``--after 5``). Needs ``pip install -e '.[test]'``. Exits 1
when the off-loop worst poll is 100 ms or more and also twice the worst poll without toolmend
(LiteLLM's own handling of the body crosses 100 ms on a busy machine).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import load_proxy
from load_proxy import MASTER_KEY, TOOLMEND_CALLBACK, Proxy, strict_server

TARGET_SECONDS = 0.1

_CONFIG = """model_list:
  - model_name: my-gpt
    litellm_params:
      model: openai/gpt-4o
      api_base: {base}
      api_key: t
litellm_settings:
  num_retries: 0
{callbacks}general_settings:
  master_key: {key}
"""
"""An OpenAI deployment: the OpenAI profile refuses a call id used twice in one turn, so every
call but the first gets a fresh id (DeepSeek's, the strict server's judge, accepts the
rewritten request)."""


def crafted(calls: int) -> list[dict[str, Any]]:
    """One turn of ``calls`` tool calls sharing the id ``call_same``, and as many results."""
    tool_calls = [
        {
            "id": "call_same",
            "type": "function",
            "function": {"name": "lookup", "arguments": json.dumps({"q": n})},
        }
        for n in range(calls)
    ]
    results = [
        {"role": "tool", "tool_call_id": "call_same", "content": f"result {n}"}
        for n in range(calls)
    ]
    return [
        {"role": "user", "content": "look everything up"},
        {"role": "assistant", "content": None, "tool_calls": tool_calls},
        *results,
    ]


def _post(port: int, body: bytes) -> int | str:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/chat/completions",
        data=body,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {MASTER_KEY}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=600) as reply:
            reply.read()
            return int(reply.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except http.client.LineTooLong:  # a repair this large writes an x-toolmend-changes header
        return "200, header over 64 KB"  # past the client's limit (capped by issue 30's escaping)


def run(mode: str, upstream: str, folder: Path, body: bytes, after: float) -> dict[str, Any]:
    """One proxy in ``mode``: the crafted request while a poller hits the liveliness probe."""
    saved = os.environ.get("TOOLMEND_OFFLOAD_ITEMS")
    if mode == "inline":
        os.environ["TOOLMEND_OFFLOAD_ITEMS"] = str(10**9)
    config, load_proxy._CONFIG = load_proxy._CONFIG, _CONFIG
    try:
        proxy = Proxy(mode, folder, upstream, None if mode == "none" else TOOLMEND_CALLBACK)
    finally:
        load_proxy._CONFIG = config
        if saved is None:
            os.environ.pop("TOOLMEND_OFFLOAD_ITEMS", None)
        else:
            os.environ["TOOLMEND_OFFLOAD_ITEMS"] = saved
    try:
        proxy.wait_ready()
        small = {"model": "my-gpt", "messages": [{"role": "user", "content": "hi"}]}
        _post(proxy.port, json.dumps(small).encode())  # warm: the first request's imports
        latencies: list[float] = []
        done = threading.Event()
        probe = f"http://127.0.0.1:{proxy.port}/health/liveliness"

        def poll() -> None:
            while not done.is_set():
                started = time.perf_counter()
                urllib.request.urlopen(probe, timeout=600).read()
                latencies.append(time.perf_counter() - started)
                time.sleep(0.01)

        poller = threading.Thread(target=poll)
        poller.start()
        time.sleep(0.2)
        started = time.perf_counter()
        status = _post(proxy.port, body)
        took = time.perf_counter() - started
        during = len(latencies)
        time.sleep(after)  # an abandoned repair may still run on its thread: keep polling
        done.set()
        poller.join()
        return {
            "mode": mode,
            "bytes": len(body),
            "status": status,
            "seconds": round(took, 2),
            "polls": during,
            "worst_ms": round(max(latencies[:during]) * 1000, 1),
            "median_ms": round(statistics.median(latencies[:during]) * 1000, 1),
            "after_worst_ms": round(max(latencies[during:], default=0) * 1000, 1),
        }
    finally:
        proxy.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--modes", default="none,off-loop,inline")
    parser.add_argument("--after", type=float, default=5.0, help="seconds polled after")
    args = parser.parse_args(argv)
    history = crafted(args.calls)
    body = json.dumps({"model": "my-gpt", "messages": history}).encode()
    rows = []
    with strict_server() as (upstream, _), tempfile.TemporaryDirectory() as folder:
        for mode in args.modes.split(","):
            row = run(mode, upstream, Path(folder), body, args.after)
            rows.append(row)
            print(
                f"{row['mode']:>8}: {row['bytes'] / 1000:.0f} KB request, HTTP {row['status']} "
                f"in {row['seconds']} s; {row['polls']} liveliness polls during it, worst "
                f"{row['worst_ms']} ms, median {row['median_ms']} ms; worst in the "
                f"{args.after:g} s after: {row['after_worst_ms']} ms",
                flush=True,
            )
    # LiteLLM's own handling of a 350 KB body can cross the target on a busy machine: a miss
    # counts only when toolmend's proxy also waits twice as long as the one without it
    floor = max((r["worst_ms"] for r in rows if r["mode"] == "none"), default=0.0)
    missed = [
        r
        for r in rows
        if r["mode"] == "off-loop" and r["worst_ms"] >= max(TARGET_SECONDS * 1e3, 2 * floor)
    ]
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
