"""Time what ``ToolMendHistory`` adds to a LangChain chat history's reads and writes.

The history is ``bench_core.py``'s agent history of 200 messages, as LangChain messages
(system prompt, user turns, parallel tool calls, tool results of a few hundred to a few thousand
characters), valid. Each read through the wrapper checks the whole history for the provider
(DeepSeek here) and returns the store's own list when it is valid; each write checks the batch
against the index of the store's calls and results, which the wrapper keeps, so it reads
nothing back (it reads the store once, and again only for a result whose call it has not seen).

Two stores:

* ``SQLChatMessageHistory`` on a SQLite file, what an app keeps its conversations in. The
  target is here: a read through the wrapper costs at most 1.05x the store's own read.
* ``InMemoryChatMessageHistory``, whose read is a list attribute (a fraction of a
  microsecond), so no ratio to it means anything; the wrapper's cost is printed in
  microseconds and as a ratio to what ``ChatOpenAI`` spends converting the same messages for
  every request anyway.

Run with plain Python: ``python benchmarks/bench_langchain.py`` (``--quick`` for fewer runs;
``--json`` adds a line of machine-readable results for ``run.py``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent / "src"))  # the installed one first
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_core import agent_history

import toolmend

TARGET = 1.05


def as_langchain(history: list[dict[str, Any]]) -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    out: list[Any] = []
    for message in history:
        role, content = message["role"], message.get("content") or ""
        if role == "system":
            out.append(SystemMessage(content))
        elif role == "user":
            out.append(HumanMessage(content))
        elif role == "tool":
            out.append(ToolMessage(content, tool_call_id=message["tool_call_id"]))
        else:
            calls = [
                {
                    "id": call["id"],
                    "name": call["function"]["name"],
                    "args": json.loads(call["function"]["arguments"]),
                }
                for call in message.get("tool_calls") or ()
            ]
            out.append(AIMessage(content, tool_calls=calls))
    return out


def paired(
    first: Callable[[], object], second: Callable[[], object], repeat: int
) -> tuple[float, float]:
    """Median seconds of each, run alternately so that load on the machine hits both alike."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for run, found in ((first, times[0]), (second, times[1])):
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

    from langchain_community.chat_message_histories import SQLChatMessageHistory
    from langchain_core.chat_history import InMemoryChatMessageHistory
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_openai.chat_models.base import _convert_message_to_dict

    from toolmend.integrations.langchain import ToolMendHistory, Window

    messages = as_langchain(agent_history(200))
    while len(messages) < 200:  # plain turns up to exactly 200 messages
        messages.append(HumanMessage("and then?") if len(messages) % 2 else AIMessage("Done."))
    assert toolmend.check(messages, provider="deepseek") == []
    print(f"{len(messages)} LangChain messages, valid; median of {repeat} runs, in turn")

    with tempfile.TemporaryDirectory() as folder:
        sql = SQLChatMessageHistory("bench", connection=f"sqlite:///{folder}/chat.db")
        sql.add_messages(messages)
        wrapped = ToolMendHistory(sql, provider="deepseek")
        assert wrapped.messages == sql.messages
        inner, outer = paired(lambda: sql.messages, lambda: wrapped.messages, repeat)
        sql_ratio = outer / inner
        print(
            f"SQLite read      store {inner * 1e3:7.2f} ms   wrapper {outer * 1e3:7.2f} ms   "
            f"ratio {sql_ratio:.3f}x"
        )
        windowed = ToolMendHistory(sql, provider="deepseek", window=Window(max_messages=50))
        inner, outer = paired(lambda: sql.messages, lambda: windowed.messages, repeat)
        print(
            f"  window of 50   store {inner * 1e3:7.2f} ms   wrapper {outer * 1e3:7.2f} ms   "
            f"ratio {outer / inner:.3f}x"
        )
        turns = [
            [
                HumanMessage(f"question {n}"),
                AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": f"call_w{n}"}]),
                ToolMessage("result", tool_call_id=f"call_w{n}", name="f"),
                AIMessage(f"answer {n}"),
            ]
            for n in range(2 * repeat)
        ]
        plain_turns, wrapped_turns = iter(turns[::2]), iter(turns[1::2])
        inner, outer = paired(
            lambda: sql.add_messages(next(plain_turns)),
            lambda: wrapped.add_messages(next(wrapped_turns)),
            repeat,
        )
        print(
            f"SQLite write     store {inner * 1e3:7.2f} ms   wrapper {outer * 1e3:7.2f} ms   "
            f"ratio {outer / inner:.3f}x   (a 4-message turn)"
        )
        sql.session_maker.remove()
        sql.engine.dispose()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        memory = InMemoryChatMessageHistory()
    memory.add_messages(messages)
    in_memory = ToolMendHistory(memory, provider="deepseek")
    assert in_memory.messages is memory.messages
    inner, outer = paired(lambda: memory.messages, lambda: in_memory.messages, repeat)

    def convert() -> object:
        return [_convert_message_to_dict(message) for message in messages]

    converting, _ = paired(convert, lambda: None, max(10, repeat // 4))
    print(
        f"in-memory read   store {inner * 1e6:7.2f} us   wrapper {outer * 1e6:7.1f} us   "
        f"= {(outer - inner) / converting:.2f}x of ChatOpenAI's conversion of the same "
        f"messages ({converting * 1e6:.0f} us)"
    )
    print(f"target (SQLite read <= {TARGET}x): {'met' if sql_ratio <= TARGET else 'MISSED'}")
    if args.json:
        what = f"SQLChatMessageHistory read, {len(messages)} messages"
        print(json.dumps({"ratio": sql_ratio, "target": TARGET, "what": what}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
