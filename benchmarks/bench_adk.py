"""Time what ``ToolMendPlugin`` adds to each model call of a Google ADK agent.

The history is ``bench_core.py``'s agent history of 200 messages as a stored ADK session: the
user turns and the final answers as text events, each assistant turn with tool calls as one
model event of ``functionCall`` parts (``adk-`` ids, as ADK stores them) and its tool results
as one event of ``functionResponse`` parts (a few hundred to a few thousand characters each),
padded with plain turns to 200 events; valid.

Two baselines, each what every model call of an ADK agent pays before anything is sent:

* **contents**: ``_get_contents`` (``google.adk.flows.llm_flows.context._contents``), the step
  of ADK's contents request processor that reads the session's events, filters and rearranges
  them and copies each Content and Part for the request. The narrowest honest denominator:
  ADK's own history building, nothing else.
* **request**: the same step, then what the google-genai SDK does with those Contents in
  ``AsyncModels.generate_content`` before the network (``_GenerateContentParameters``
  validation, ``_GenerateContentParameters_to_mldev``, the dict conversion, ``json.dumps``):
  the CPU cost of building the request ADK's ``Gemini`` model sends. The target is checked
  here.

"With" is the same work plus ``ToolMendPlugin.before_model_callback`` on the request ADK built
(toolmend reads the Contents once, finds them valid and leaves ``llm_request.contents`` as it
is). Every kind runs in one asyncio loop, in turn (a shuffled order each round), timed by the
CPU time of the thread (``time.thread_time``: the work is all on this thread, and on a shared
machine the wall clock also charges the other processes' time slices to whichever side was
running), with the garbage collector run before each round and held off during it (the
request kind allocates enough to set off collections at random places otherwise); the figure
is the ratio of the medians, and the median of the per-round differences is printed beside it.

Run with plain Python: ``python benchmarks/bench_adk.py`` (``--quick`` for fewer runs;
``--json`` adds a line of machine-readable results for ``run.py``).
Target: <= 1.05.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OTEL_SDK_DISABLED", "true")
sys.path.append(str(Path(__file__).resolve().parent.parent / "src"))  # the installed one first
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_core import agent_history

import toolmend

TARGET = 1.05


def as_events(history: list[dict[str, Any]], size: int) -> list[Any]:
    """The OpenAI-shaped ``history`` as the events ADK stores for it."""
    from google.adk.events import Event
    from google.genai import types

    events: list[Any] = []
    pending: list[types.Part] = []
    names: dict[str, str] = {}

    def add(author: str, role: str, parts: list[types.Part]) -> None:
        content = types.Content(role=role, parts=parts)
        events.append(Event(author=author, invocation_id=f"inv-{len(events)}", content=content))

    for message in history:
        role = message["role"]
        if role == "tool":
            call_id = "adk-" + message["tool_call_id"]
            response = {"result": message["content"]}
            pending.append(
                types.Part(
                    function_response=types.FunctionResponse(
                        id=call_id, name=names[call_id], response=response
                    )
                )
            )
            continue
        if pending:
            add("agent", "user", pending)
            pending = []
        if role == "user":
            add("user", "user", [types.Part(text=message["content"])])
        elif role == "assistant" and message.get("tool_calls"):
            parts = []
            for call in message["tool_calls"]:
                call_id = "adk-" + call["id"]
                names[call_id] = call["function"]["name"]
                args = json.loads(call["function"]["arguments"])
                parts.append(
                    types.Part(
                        function_call=types.FunctionCall(
                            id=call_id, name=call["function"]["name"], args=args
                        )
                    )
                )
            add("agent", "model", parts)
        elif role == "assistant":
            add("agent", "model", [types.Part(text=message["content"] or "Done.")])
    if pending:
        add("agent", "user", pending)
    while len(events) < size:  # plain turns up to exactly ``size`` events
        if events[-1].content.role == "model":
            add("user", "user", [types.Part(text="and then?")])
        else:
            add("agent", "model", [types.Part(text="Done.")])
    return events


def _paired(kinds: dict[str, Any], repeat: int) -> dict[str, list[float]]:
    """Seconds per run of each kind, ``repeat`` rounds of all kinds in a shuffled order."""
    times: dict[str, list[float]] = {name: [] for name in kinds}
    order = list(kinds)
    rnd = random.Random(3)
    for _ in range(3):  # warm-up
        for run in kinds.values():
            run()
    for _ in range(repeat):
        rnd.shuffle(order)
        gc.collect()  # each round starts clean, and no collection lands inside a timed run
        gc.disable()
        try:
            for name in order:
                start = time.thread_time()
                kinds[name]()
                times[name].append(time.thread_time() - start)
        finally:
            gc.enable()
    return times


def _report(label: str, times: dict[str, list[float]]) -> dict[str, float]:
    plain, mended = (statistics.median(found) for found in times.values())
    extra = statistics.median(b - a for a, b in zip(*times.values(), strict=True))
    ratio = mended / plain
    print(
        f"{label:9} ADK {plain * 1e3:8.2f} ms   with ToolMendPlugin {mended * 1e3:8.2f} ms   "
        f"ratio {ratio:.3f}x   (toolmend adds {extra * 1e6:.0f} us)"
    )
    return {f"{label}_ratio": ratio, f"{label}_ms": plain * 1e3, f"{label}_extra_us": extra * 1e6}


def measure(repeat: int) -> dict[str, float]:
    from google.adk.flows.llm_flows.context._contents import _get_contents
    from google.adk.models.llm_request import LlmRequest
    from google.genai import Client, _common, types
    from google.genai import models as genai_models

    from toolmend.integrations.adk import ToolMendPlugin

    events = as_events(agent_history(200), 200)
    plugin = ToolMendPlugin()
    api_client = Client(api_key="test")._api_client  # builds requests only: nothing is sent
    loop = asyncio.new_event_loop()

    def build() -> Any:
        return LlmRequest(model="gemini-2.5-flash", contents=_get_contents(None, events, "agent"))

    def mend(request: Any) -> Any:
        loop.run_until_complete(
            plugin.before_model_callback(callback_context=None, llm_request=request)  # type: ignore[arg-type]
        )
        return request

    def body(request: Any) -> str:
        params = types._GenerateContentParameters(
            model=request.model, contents=request.contents, config=None
        )
        found = genai_models._GenerateContentParameters_to_mldev(api_client, params, None, params)
        found.pop("config", None)
        return json.dumps(_common.encode_unserializable_types(_common.convert_to_dict(found)))

    request = build()
    assert toolmend.check(request.contents, provider="gemini") == []
    contents = request.contents
    assert mend(request).contents is contents  # valid: left as ADK built it
    print(f"{len(events)} ADK events ({len(contents)} Contents sent), valid, in turn")

    found: dict[str, float] = {}
    narrow = _paired({"adk": build, "adk+toolmend": lambda: mend(build())}, repeat * 6)
    found |= _report("contents", narrow)
    whole = _paired(
        {"adk": lambda: body(build()), "adk+toolmend": lambda: body(mend(build()))}, repeat
    )
    found |= _report("request", whole)
    loop.close()
    print(f"medians of {repeat * 6} and {repeat} rounds")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    parser.add_argument("--json", action="store_true", help="a last line of JSON results")
    args = parser.parse_args()
    result = measure(10 if args.quick else 60)
    ok = result["request_ratio"] <= TARGET
    print(f"target <= {TARGET} (request): {'met' if ok else 'MISSED'}")
    if args.json:
        what = f"ADK request build 200 events; ADK contents alone {result['contents_ratio']:.3f}x"
        print(json.dumps({"ratio": result["request_ratio"], "target": TARGET, "what": what}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
