"""Time toolmend's ``call_model_input_filter`` against what the Agents SDK spends preparing the
same input for a model call.

The input is ``bench_core.py``'s agent history of 200 messages written as the Responses items
an agent run replays (``bench_responses.as_items``: reasoning items, ``function_call`` and
``function_call_output`` items, assistant messages), valid: the common case, where the filter
reads the items once and hands the SDK its own ``ModelInputData`` back.

What the ratio is taken against, and why: the filter runs before every model call of the run
loop, and the part of that call it adds to is the SDK's own preparation of the same input,
which it does on every call as well: the run loop's ``prepare_model_input_items`` (every item
normalized) and, right after the filter, ``deduplicate_input_items_preferring_latest``; then
the model's own build of the request body, ``_build_response_create_kwargs`` for an
``OpenAIResponsesModel`` (the items made JSON-ready, fields the API refuses removed) or
``Converter.items_to_messages`` plus ``_to_dump_compatible`` for an
``OpenAIChatCompletionsModel``; and ``json.dumps`` of the items or messages, as the client
serializes them. That is the yardstick (target <= 1.05). A whole model call's time is printed
too, for scale: ``Model.get_response`` on an in-process transport (httpx's ``MockTransport``
answering a canned reply: no network, no server) adds the openai client's request building and
the reply's parsing, which cost far more than the preparation, so any filter would look cheap
next to it (and its run-to-run noise is larger than the filter); a call to the strict server
would add the server's own judging of 200 messages as well. Each round
times the yardstick alone and the filter followed by the same preparation, in alternating
order after a garbage collection, so drift on a busy machine hits both alike; the figure is the
ratio of the medians.

Run with plain Python: ``python benchmarks/bench_openai_agents.py`` (``--quick`` for fewer
runs; ``--json`` adds a line of machine-readable results for ``run.py``). Target: <= 1.05 for
both models.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent / "src"))  # the installed one first
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


_REPLIES: dict[str, Any] = {
    "responses": {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "gpt-4.1",
        "status": "completed",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "ok", "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    },
    "completions": {
        "id": "chatcmpl_1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4.1",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}
        ],
    },
}
"""The canned replies of the in-process transport, by the last part of the request's path."""


def whole_call(model: Any, items: list[Any], instructions: str, repeat: int) -> float:
    """Median seconds of ``model.get_response`` on a client whose transport answers in-process
    (see the module docstring): the scale of a model call, without the filter."""
    import httpx2
    import openai
    from agents import ModelSettings
    from agents.models.interface import ModelTracing

    def reply(request: Any) -> Any:
        return httpx2.Response(200, json=_REPLIES[request.url.path.rsplit("/", 1)[-1]])

    transport = httpx2.AsyncClient(transport=httpx2.MockTransport(reply))
    model._client = openai.AsyncOpenAI(
        api_key="sk-test", base_url="http://127.0.0.1:9/v1", http_client=transport
    )

    async def rounds() -> float:
        times = []
        for _ in range(repeat):
            gc.collect()
            start = time.perf_counter()
            await model.get_response(
                instructions, items.copy(), ModelSettings(), [], None, [], ModelTracing.DISABLED
            )
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    return asyncio.run(rounds())


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
    from agents.run_internal.items import (
        deduplicate_input_items_preferring_latest,
        prepare_model_input_items,
    )

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
        given = deduplicate_input_items_preferring_latest(given)
        kwargs = responses._build_response_create_kwargs(
            instructions, given, ModelSettings(), [], None, []
        )
        json.dumps(kwargs["input"])

    def prepare_chat(given: list[Any]) -> None:
        given = deduplicate_input_items_preferring_latest(given)
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
            data = ModelInputData(input=prepare_model_input_items(items), instructions=instructions)
            out = call_model_input_filter(CallModelData(data, agent, None))
            assert out is data  # valid: the SDK's own object back
            prepare(out.input)

        def plain(prepare: Callable[[list[Any]], None] = prepare) -> None:
            data = ModelInputData(input=prepare_model_input_items(items), instructions=instructions)
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
        call = whole_call(model, items, instructions, max(repeat // 20, 5))
        print(f"{'':27} a whole model call (in-process transport): {call * 1e3:.0f} ms")
    worst = max(results.values())
    print(f"target (<= {TARGET}): {'met' if worst <= TARGET else 'MISSED'}")
    if args.json:
        what = f"agents call_model_input_filter, {len(items)} items, vs the SDK's preparation"
        print(json.dumps({"ratio": worst, "target": TARGET, "what": what, "ratios": results}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
