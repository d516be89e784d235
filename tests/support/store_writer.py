"""One writer process of ``tests/test_history_stores.py`` (issue 31's load).

``python store_writer.py SPEC_JSON``: the spec holds the store (see :mod:`support.shared_stores`),
``process`` (this process's number), ``processes``, ``threads``, ``turns``, ``sessions``,
``write_back`` and ``go`` (a directory: the process says it is ready there, waits for the
test's ``go`` file, and says when its own turns are done).

Each thread is a writer with a store object and a wrapper of its own per session. Turn ``k``
of writer ``(p, t)`` goes to session ``(2p + t + k) mod sessions``: a user message, a read, an
assistant message with one tool call, the call's result, a read, the final answer. The result
of every odd turn is written by the partner writer ``(p + 1 mod processes, t)``, in another
process: each writer, between its turns and after them, finds the calls addressed to it in the
stores (their ids name it) and writes their results. Once every process has finished its own
turns, one more pass writes the last results owed. Nothing waits on a clock: a result is
written when its call is seen in the store.

Prints one JSON line: the rejections of every wrapper of this process (reason, type, content).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from toolmend.integrations.langchain import ToolMendHistory

from support.shared_stores import close_store, open_store


def session_name(spec: dict[str, Any], process: int, thread: int, turn: int) -> str:
    return f"s{(2 * process + thread + turn) % spec['sessions']}"


def call_id(process: int, thread: int, turn: int, handler: tuple[int, int]) -> str:
    return f"call_{process}_{thread}_{turn}_to_{handler[0]}_{handler[1]}"


def handler_of(spec: dict[str, Any], process: int, thread: int, turn: int) -> tuple[int, int]:
    if turn % 2:
        return ((process + 1) % spec["processes"], thread)
    return (process, thread)


class Writer:
    def __init__(self, spec: dict[str, Any], process: int, thread: int) -> None:
        self.spec, self.me = spec, (process, thread)
        names = [f"s{n}" for n in range(spec["sessions"])]
        self.stores = {name: open_store(spec, name) for name in names}
        self.histories = {
            name: ToolMendHistory(store, write_back=spec["write_back"])
            for name, store in self.stores.items()
        }
        self.answered: set[str] = set()
        self.suffix = f"_to_{process}_{thread}"

    def owed(self) -> None:
        """Write the result of every call addressed to this writer that is stored."""
        for name, store in self.stores.items():
            for message in list(store.messages):
                for call in getattr(message, "tool_calls", None) or ():
                    if call["id"].endswith(self.suffix) and call["id"] not in self.answered:
                        self.answered.add(call["id"])
                        self.histories[name].add_message(
                            ToolMessage(f"result {call['id']}", tool_call_id=call["id"])
                        )

    def turn(self, k: int) -> None:
        process, thread = self.me
        history = self.histories[session_name(self.spec, process, thread, k)]
        handler = handler_of(self.spec, process, thread, k)
        cid = call_id(process, thread, k, handler)
        history.add_message(HumanMessage(f"question {process} {thread} {k}"))
        _ = history.messages
        calls = [{"name": "lookup", "args": {"k": k}, "id": cid, "type": "tool_call"}]
        history.add_message(AIMessage(f"calling {process} {thread} {k}", tool_calls=calls))
        if handler == self.me:
            self.answered.add(cid)
            history.add_message(ToolMessage(f"result {cid}", tool_call_id=cid))
        self.owed()
        _ = history.messages
        history.add_message(AIMessage(f"answer {process} {thread} {k}"))

    def rejected(self) -> list[list[str]]:
        return [
            [r.reason, r.message.type, str(r.message.content)]
            for history in self.histories.values()
            for r in history.rejected
        ]

    def close(self) -> None:
        for store in self.stores.values():
            close_store(store)


def main() -> None:
    spec = json.loads(sys.argv[1])
    go = Path(spec["go"])
    process = spec["process"]
    writers = [Writer(spec, process, t) for t in range(spec["threads"])]
    (go / f"ready.{process}").touch()
    while not (go / "go").exists():
        time.sleep(0.005)
    failures: list[BaseException] = []

    def run(writer: Writer) -> None:
        try:
            for k in range(spec["turns"]):
                writer.turn(k)
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=run, args=(w,)) for w in writers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    (go / f"done.{process}").touch()
    while len(list(go.glob("done.*"))) < spec["processes"]:
        for writer in writers:
            writer.owed()
        time.sleep(0.01)
    for writer in writers:
        writer.owed()  # every call is stored by now: the last results owed
    print(json.dumps([item for writer in writers for item in writer.rejected()]))
    for writer in writers:
        writer.close()
    if failures:
        raise failures[0]


if __name__ == "__main__":
    main()
