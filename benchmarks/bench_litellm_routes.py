"""Time LiteLLM's other history routes with the ToolMend callback against the same call without
it: ``litellm.anthropic_messages`` (the proxy's ``/v1/messages``, Anthropic-shaped ``messages``)
and ``litellm.aresponses`` (the proxy's ``/v1/responses``, Responses ``input`` items).

The history is ``bench_core.agent_history`` (the one ``bench_litellm.py`` times on chat
completions: 200 messages ending on a whole turn, no system prompt), written in each route's
shape: Anthropic ``tool_use`` / ``tool_result`` blocks (a run of tool messages becomes one user
turn, so it is fewer messages holding the same calls and results), and Responses items
(``bench_responses.as_items``). Both are valid, as nearly every request is: the figure is what
the hook costs a request it has nothing to do for.

``mock_response`` keeps LiteLLM's whole Python path for the route (its ``@client`` decorator,
the logging object, ``async_pre_call_deployment_hook``, the route's own request handling) and
skips the network. Every round times one call of each kind, in a shuffled order, on one event
loop, each starting 5 ms after the previous one ended so that LiteLLM's background logging of
the previous call is not charged to the next; LiteLLM's import-time heap is frozen out of the
garbage collector after the warm-up, as in ``bench_litellm.py`` (its docstring says why).

With ``--http``, each call goes over real HTTP to the strict provider server on 127.0.0.1
instead of ``mock_response`` (as ``bench_patch.py`` times the openai patch): what a request
through LiteLLM costs when it is sent, short of a real provider's own time. The server runs in
this process, on a thread, and every request must be accepted.

With ``--diagnose``, a third kind of call shows LiteLLM's own share: a ``CustomLogger`` whose
``async_pre_call_deployment_hook`` returns ``None`` at once (what LiteLLM itself adds on these
routes for any logger with that hook).

Run with plain Python: ``python benchmarks/bench_litellm_routes.py`` (``--rounds N``, default
1,000; ``--http``; ``--diagnose``; ``--json`` adds a line of machine-readable results for
``run.py``).
Target: <= 1.05 on each route.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before LiteLLM is imported
sys.path.insert(0, str(Path(__file__).resolve().parent))

import litellm
from bench_core import agent_history
from bench_litellm import use_callbacks
from bench_responses import as_items
from litellm.integrations.custom_logger import CustomLogger

import toolmend
from toolmend.integrations.litellm import ToolMend
from toolmend.testing import StrictProviderServer


def as_anthropic(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages as Anthropic Messages: calls as ``tool_use`` blocks, each run of tool
    messages as one user turn of ``tool_result`` blocks."""
    out: list[dict[str, Any]] = []
    for message in history:
        role, content = message["role"], message.get("content")
        if role == "tool":
            block = {"type": "tool_result", "tool_use_id": message["tool_call_id"]}
            block["content"] = content
            if (
                out
                and out[-1]["role"] == "user"
                and out[-1]["content"][-1]["type"] == "tool_result"
            ):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
            continue
        blocks: list[dict[str, Any]] = [{"type": "text", "text": content}] if content else []
        for call in message.get("tool_calls") or ():
            function = call["function"]
            arguments = json.loads(function["arguments"] or "{}")
            blocks.append(
                {"type": "tool_use", "id": call["id"], "name": function["name"], "input": arguments}
            )
        out.append({"role": role, "content": blocks})
    return out


Call = Callable[[], Coroutine[Any, Any, object]]


class EmptyHook(CustomLogger):
    """A deployment hook that does nothing: LiteLLM's own cost of having one."""

    async def async_pre_call_deployment_hook(
        self, kwargs: dict[str, Any], call_type: Any
    ) -> dict[str, Any] | None:
        return None


def routes(
    history: list[dict[str, Any]], server: StrictProviderServer | None = None
) -> dict[str, tuple[Call, int]]:
    """Route name -> (one call of it, the number of messages or items it carries); sent to
    ``server`` when one is given, else answered by ``mock_response``."""
    messages = as_anthropic(history)
    items = as_items(history)
    assert toolmend.check(messages, format="anthropic") == []
    assert toolmend.check(items, format="openai-responses") == []

    def target(provider: str) -> dict[str, Any]:
        if server is None:
            return {"mock_response": "OK"}
        # the server's routes pick their own provider (/messages: Anthropic; /v1/responses:
        # OpenAI's Responses), as tests/test_litellm_routes.py points LiteLLM at them
        return {"api_base": server.base_url if provider == "anthropic" else server.openai_base_url}

    def anthropic_messages() -> Coroutine[Any, Any, object]:
        return litellm.anthropic_messages(
            model="anthropic/claude-sonnet-4-5",
            messages=messages,
            max_tokens=64,
            api_key="sk-test",
            **target("anthropic"),
        )

    def aresponses() -> Coroutine[Any, Any, object]:
        return litellm.aresponses(
            model="openai/gpt-4.1", input=items, api_key="sk-test", **target("openai")
        )

    return {
        "anthropic_messages": (anthropic_messages, len(messages)),
        "aresponses": (aresponses, len(items)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1000, help="timed calls of each kind")
    parser.add_argument(
        "--http", action="store_true", help="send to the strict server instead of mock_response"
    )
    parser.add_argument(
        "--diagnose", action="store_true", help="also time a deployment hook that does nothing"
    )
    parser.add_argument("--json", action="store_true", help="a last line of JSON results")
    args = parser.parse_args()
    logging.getLogger("toolmend").setLevel(logging.WARNING)
    litellm.suppress_debug_info = True
    history = agent_history(202)[1:]  # 200 messages ending on a whole turn; no system prompt
    assert len(history) == 200
    server = StrictProviderServer().start() if args.http else None
    calls = routes(history, server)
    loggers: dict[str, list[object]] = {"without": [], "ToolMend": [ToolMend()]}
    if args.diagnose:
        loggers["empty hook"] = [EmptyHook()]
    kinds = [(route, kind) for route in calls for kind in loggers]
    loop = asyncio.new_event_loop()

    def call(route: str, kind: str) -> float:
        use_callbacks(loggers[kind])
        pause = time.perf_counter() + 0.005  # let the previous call's background logging finish
        while time.perf_counter() < pause:
            loop.run_until_complete(asyncio.sleep(0))  # LiteLLM's logging task runs on the loop
        start = time.perf_counter()
        loop.run_until_complete(calls[route][0]())
        return time.perf_counter() - start

    for _ in range(20):  # warm up every path
        for kind in kinds:
            call(*kind)
    gc.collect()
    gc.freeze()  # LiteLLM's import-time objects: see bench_litellm.py
    times: dict[tuple[str, str], list[float]] = {kind: [] for kind in kinds}
    shuffle = random.Random(0).shuffle
    order = list(kinds)
    for _ in range(args.rounds):
        gc.collect()
        call(kinds[0][0], "without")  # the first call after a collection runs on cold caches
        shuffle(order)
        for kind in order:
            times[kind].append(call(*kind))
    use_callbacks([])
    loop.close()
    if server is not None:
        assert all(r.accepted for r in server.requests), "the server refused a request"
        server.stop()
    results = {}
    for route, (_, size) in calls.items():
        without = statistics.median(times[(route, "without")])
        with_ = statistics.median(times[(route, "ToolMend")])
        paired = statistics.median(
            a - b
            for a, b in zip(times[(route, "ToolMend")], times[(route, "without")], strict=True)
        )
        ratio = with_ / without
        results[route] = {"ratio": ratio, "added_us": paired * 1e6}
        print(
            f"{route:<19} {size:>3} messages: without {without * 1000:.3f} ms, with ToolMend "
            f"{with_ * 1000:.3f} ms, ratio {ratio:.3f}, per-round difference "
            f"{paired * 1e6:.0f} us, target (<= 1.05) {'met' if ratio <= 1.05 else 'MISSED'}"
        )
        if args.diagnose:
            empty = statistics.median(times[(route, "empty hook")])
            print(
                f"{'':<19} empty hook {empty * 1000:.3f} ms ({empty / without:.3f}); ToolMend "
                f"against it {with_ / empty:.3f}"
            )
    worst = max(r["ratio"] for r in results.values())
    if args.json:
        sent = "strict server" if args.http else "mock_response"
        what = f"litellm.anthropic_messages and aresponses, {len(history)} messages, {sent}"
        print(json.dumps({"ratio": worst, "target": 1.05, "what": what, "routes": results}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
