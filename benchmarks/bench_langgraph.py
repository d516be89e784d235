"""Time what ``ToolMendPreModelHook`` adds to a LangGraph agent's model call.

The history is ``bench_core.py``'s agent history of 200 messages, as LangChain messages
(``bench_langchain.as_langchain``), valid. Each timed call is one ``invoke`` of a real
``create_react_agent`` graph with ``ChatOpenAI`` pointed at the strict provider server on
127.0.0.1, which answers with text: one pass through the hook node, LangGraph's own check of
the history, ``ChatOpenAI`` converting 200 messages, the HTTP round trip, and the server
judging the request. Three graphs, timed in turn:

* with ``ToolMendPreModelHook()``;
* with a ``pre_model_hook`` that hands the state's messages on untouched (returns
  ``{"llm_input_messages": []}``, as the toolmend hook does for a valid history): the same graph
  shape, so the ratio to it is what toolmend's work costs. The target is on this ratio: a
  ``pre_model_hook`` is a node of its own, and LangGraph charges for running a node whatever
  the node does;
* without any ``pre_model_hook``: the ratio to it adds the node itself.

Also printed: the hook's own time on the 200 messages, in microseconds and as a share of what
``ChatOpenAI`` spends converting them for every request anyway.

Run with plain Python: ``python benchmarks/bench_langgraph.py`` (``--quick`` for fewer runs;
``--json`` adds a line of machine-readable results for ``run.py``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent / "src"))  # the installed one first
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_core import agent_history
from bench_langchain import as_langchain

import toolmend

TARGET = 1.05


def timed(runs: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Median seconds of each run, the runs taken in turn so that load hits all alike."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(found) for name, found in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    parser.add_argument("--json", action="store_true", help="a last line of JSON results")
    args = parser.parse_args()
    repeat = 40 if args.quick else 200

    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langchain_openai.chat_models.base import _convert_message_to_dict

    from toolmend.integrations.langgraph import ToolMendPreModelHook
    from toolmend.testing import StrictProviderServer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

    @tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"21 C in {city}"

    messages = as_langchain(agent_history(200))
    while len(messages) < 200:  # plain turns up to exactly 200 messages
        messages.append(HumanMessage("and then?") if len(messages) % 2 else AIMessage("Done."))
    messages[-1] = HumanMessage("and then?")  # the agent answers a user turn
    assert toolmend.check(messages, provider="openai") == []
    hook = ToolMendPreModelHook()
    state = {"messages": messages}
    assert hook(state) == {"llm_input_messages": []}

    def untouched(state: Any) -> dict[str, Any]:
        return {"llm_input_messages": []}

    with StrictProviderServer() as server:
        model = ChatOpenAI(base_url=server.openai_base_url, api_key="sk-test", model="gpt-4o")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            graphs = {
                "toolmend": create_react_agent(model, [get_weather], pre_model_hook=hook),
                "untouched": create_react_agent(model, [get_weather], pre_model_hook=untouched),
                "no hook": create_react_agent(model, [get_weather]),
            }
        runs = {
            name: (lambda graph=graph: graph.invoke({"messages": messages}))
            for name, graph in graphs.items()
        }
        for run in runs.values():  # warm up: connections, imports, caches
            run()
        print(f"{len(messages)} LangChain messages, valid; median of {repeat} invokes, in turn")
        medians = timed(runs, repeat)
        assert all(r.accepted for r in server.requests)
    ratio = medians["toolmend"] / medians["untouched"]
    for name, median in medians.items():
        print(f"  {name:10} {median * 1e3:7.2f} ms")
    print(f"ratio toolmend / untouched hook {ratio:.3f}x (target <= {TARGET})")
    print(f"ratio toolmend / no hook        {medians['toolmend'] / medians['no hook']:.3f}x")

    own = timed({"hook": lambda: hook(state)}, repeat * 5)["hook"]
    converting = timed(
        {"convert": lambda: [_convert_message_to_dict(m) for m in messages]}, repeat
    )["convert"]
    print(
        f"the hook alone {own * 1e6:.0f} us = {own / converting:.2f}x of ChatOpenAI's "
        f"conversion of the same messages ({converting * 1e6:.0f} us)"
    )
    print(f"target: {'met' if ratio <= TARGET else 'MISSED'}")
    if args.json:
        what = f"create_react_agent invoke with pre_model_hook, {len(messages)} messages"
        print(json.dumps({"ratio": ratio, "target": TARGET, "what": what}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
