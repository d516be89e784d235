"""Time toolmend's ``call_model_input_filter`` against what the Agents SDK spends preparing the
same input for a model call.

The input is ``bench_core.py``'s agent history of 200 messages written as the Responses items
an agent run replays (``bench_responses.as_items``: reasoning items, ``function_call`` and
``function_call_output`` items, assistant messages), valid: the common case, where the filter
reads the items once and hands the SDK its own ``ModelInputData`` back.

What the ratio is taken against, and why: the filter runs before every model call of the run
loop, and the part of that call it adds to is the SDK's own preparation of the same input,
which it does on every call as well. For an ``OpenAIResponsesModel`` that is
``_build_response_create_kwargs`` (the items made JSON-ready, fields the API refuses removed)
plus ``json.dumps`` of the body's ``input``, as the openai client serializes it; for an
``OpenAIChatCompletionsModel`` it is ``Converter.items_to_messages`` plus ``_to_dump_compatible``
plus ``json.dumps`` of the messages. A whole ``Runner.run`` turn (or a model call to the strict
server, which itself judges the history with toolmend and parses 200 messages) would add
network and server time to both sides and make any filter look cheap; the SDK's preparation
alone is the smallest honest yardstick. Each round times the preparation alone and the filter
followed by the same preparation, in alternating order, so drift on a busy machine hits both
alike; the figure is the ratio of the medians.

Run with plain Python: ``python benchmarks/bench_openai_agents.py`` (``--quick`` for fewer
runs; ``--json`` adds a line of machine-readable results for ``run.py``). Target: <= 1.05 for
both models.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_core import agent_history
from bench_responses import as_items

import toolmend

TARGET = 1.05


def paired(
    first: Callable[[], object], second: Callable[[], object], repeat: int
) -> tuple[float, float]:
    """Median seconds of each, run alternately (ABBA) after a garbage collection."""
    times: tuple[list[float], list[float]] = ([], [])
    for round_ in range(repeat):
        order = ((first, times[0]), (second, times[1]))
        for run, found in order if round_ % 2 else order[::-1]:
            gc.collect()
            start = time.perf_counter()
            run()
            found.append(time.perf_counter() - start)
    return statistics.median(times[0]), statistics.median(times[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    parser.add_argument("--json", action="store_true", help="a last line of JSON results")
    args = parser.parse_args()
    repeat = 40 if args.quick else 300
    logging.getLogger("toolmend").setLevel(logging.WARNING)

    import agents
    import openai
    from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, OpenAIResponsesModel
    from agents.models.chatcmpl_converter import Converter
    from agents.models.openai_chatcompletions import _to_dump_compatible
    from agents.run_config import CallModelData, ModelInputData

    from toolmend.integrations.openai_agents import call_model_input_filter

    agents.set_tracing_disabled(True)
    history = agent_history(202)[1:]  # 200 messages ending on a whole turn; no system prompt
    assert len(history) == 200
    items = as_items(history)
    assert toolmend.check(items, provider="openai-responses") == []
    instructions = "Answer briefly."
    client = openai.AsyncOpenAI(api_key="sk-test", base_url="http://127.0.0.1:9/v1")
    responses = OpenAIResponsesModel("gpt-4.1", client)
    chat = OpenAIChatCompletionsModel("gpt-4.1", client)

    def prepare_responses(given: list[Any]) -> None:
        kwargs = responses._build_response_create_kwargs(
            instructions, given, ModelSettings(), [], None, []
        )
        json.dumps(kwargs["input"])

    def prepare_chat(given: list[Any]) -> None:
        messages = Converter.items_to_messages(given, model=chat.model)
        messages.insert(0, {"role": "system", "content": instructions})
        json.dumps(_to_dump_compatible(messages))

    print(f"{len(history)} messages as {len(items)} Responses items, valid; median of {repeat}")
    results: dict[str, float] = {}
    for label, model, prepare in (
        ("OpenAIResponsesModel", responses, prepare_responses),
        ("OpenAIChatCompletionsModel", chat, prepare_chat),
    ):
        agent = Agent(name="bench", model=model)

        def filtered(prepare: Callable[[list[Any]], None] = prepare, agent: Any = agent) -> None:
            data = ModelInputData(input=items.copy(), instructions=instructions)
            out = call_model_input_filter(CallModelData(data, agent, None))
            assert out is data  # valid: the SDK's own object back
            prepare(out.input)

        def plain(prepare: Callable[[list[Any]], None] = prepare) -> None:
            data = ModelInputData(input=items.copy(), instructions=instructions)
            prepare(data.input)

        for _ in range(10):  # warm both paths
            plain()
            filtered()
        inner, outer = paired(plain, filtered, repeat)
        ratio = outer / inner
        results[label] = ratio
        print(
            f"{label:27} SDK preparation {inner * 1e3:7.2f} ms   with the filter "
            f"{outer * 1e3:7.2f} ms   ratio {ratio:.3f}x   filter {(outer - inner) * 1e6:6.0f} us"
        )
    worst = max(results.values())
    print(f"target (<= {TARGET}): {'met' if worst <= TARGET else 'MISSED'}")
    if args.json:
        what = f"agents call_model_input_filter, {len(items)} items, vs the SDK's preparation"
        print(json.dumps({"ratio": worst, "target": TARGET, "what": what, "ratios": results}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
