"""``ToolMendHistory`` with several writers on one session (issue 24).

Each writer runs an agent loop on the shared session: a user message, a read, an
``AIMessage`` with two calls, each result in a write of its own, another read, the final
answer. Writers are threads sharing one wrapper, threads with a wrapper each over one store,
asyncio tasks (on a store that only works async), and two processes on one SQLite file; each
with ``write_back`` off and on. All real: ``SQLChatMessageHistory`` on a SQLite file in
``tmp_path``, real threads, tasks and processes.

Afterwards the store is read past the wrapper and every message written is counted: stored
(exactly once each), refused (``rejected``), lost (neither) and duplicated. Before issue 24
thousands of real results were refused (``no_open_call``: another writer's messages had
landed between a call and its result), and with ``write_back`` messages were lost without a
trace and duplicated (a read's rewrite of the store raced the others' appends). Now: every
message stored exactly once, nothing refused, lost or duplicated, no chain reordered, and a
read valid for the provider.

``TOOLMEND_FUZZ=1`` runs 8 writers of 40 chains each instead of 4 of 6 (1,600 messages per
test; 14 minutes for the file on a shared 2-core machine, as every turn reads the whole growing
history); ``TOOLMEND_CHAINS=200`` is the issue's load, and takes hours for the same reason.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_community.chat_message_histories import SQLChatMessageHistory
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

import toolmend
from toolmend.integrations.langchain import ToolMendHistory

FUZZ = bool(os.environ.get("TOOLMEND_FUZZ"))
CHAINS = int(os.environ.get("TOOLMEND_CHAINS") or (40 if FUZZ else 6))
"""Chains per writer (``TOOLMEND_CHAINS=N`` sets it)."""
WRITERS = 8 if FUZZ else 4
"""Writers (threads, wrappers or tasks) in one process; always two processes."""
PROCESS_CHAINS = max(CHAINS, 15)
"""Chains per writer process: two processes overlap less than threads (before issue 24, 15
were enough to lose and duplicate messages with ``write_back`` in every run tried, 6 not)."""
TOOL_SECONDS = 0.005
"""How long each writer's tools run between its call and their results."""

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),  # langchain-community's sunset
    pytest.mark.parametrize("write_back", [False, True], ids=["plain", "write_back"]),
]


# --- one writer's agent loop -------------------------------------------------------------------


def chain(tag: str, k: int) -> list[BaseMessage]:
    """Chain ``k`` of writer ``tag``: question, calls, two results, answer (unique contents)."""
    ids = (f"call_{tag}_{k}a", f"call_{tag}_{k}b")
    calls = [{"name": "lookup", "args": {"k": k}, "id": i, "type": "tool_call"} for i in ids]
    return [
        HumanMessage(f"question {tag} {k}"),
        AIMessage(f"calling {tag} {k}", tool_calls=calls),
        ToolMessage(f"result {tag} {k} a", tool_call_id=ids[0], name="lookup"),
        ToolMessage(f"result {tag} {k} b", tool_call_id=ids[1], name="lookup"),
        AIMessage(f"answer {tag} {k}"),
    ]


def written_by(tag: str, chains: int = CHAINS) -> list[BaseMessage]:
    return [m for k in range(chains) for m in chain(tag, k)]


def run_writer(history: ToolMendHistory, tag: str, chains: int = CHAINS) -> None:
    """The agent loop, each message in a write of its own, with a read before each model call
    (what ``RunnableWithMessageHistory`` does): the reads are what write back."""
    for k in range(chains):
        question, call, result_a, result_b, answer = chain(tag, k)
        history.add_message(question)
        _ = history.messages
        history.add_message(call)
        time.sleep(TOOL_SECONDS)  # the tools run; other writers go on meanwhile
        history.add_message(result_a)
        history.add_messages([result_b])
        _ = history.messages
        history.add_message(answer)


async def arun_writer(history: ToolMendHistory, tag: str) -> None:
    for k in range(CHAINS):
        question, call, result_a, result_b, answer = chain(tag, k)
        await history.aadd_messages([question])
        await history.aget_messages()
        await history.aadd_messages([call])
        await asyncio.sleep(TOOL_SECONDS)
        await history.aadd_messages([result_a])
        await history.aadd_messages([result_b])
        await history.aget_messages()
        await history.aadd_messages([answer])


# --- counting ------------------------------------------------------------------------------------


def key(message: BaseMessage) -> tuple[str, str]:
    return message.type, str(message.content)


@dataclass
class Tally:
    written: int
    stored: int
    refused: int
    lost: int
    duplicated: int
    reordered: int


def tally(
    written: list[BaseMessage], kept: list[BaseMessage], refused: list[tuple[str, str]]
) -> Tally:
    """What became of each written message (matched by its unique content); ``refused`` are
    the keys of the messages in the writers' ``rejected``."""
    wanted = Counter(key(m) for m in written)
    found = Counter(key(m) for m in kept)
    refused_keys = Counter(refused)
    lost = sum(max(0, count - found[k] - refused_keys[k]) for k, count in wanted.items())
    position = {key(m): index for index, m in enumerate(kept)}
    reordered = 0
    for k_written in range(0, len(written), 5):  # question < call < results < answer
        places = [position.get(key(m), -1) for m in written[k_written : k_written + 5]]
        if -1 not in places and not (
            places[0] < places[1] < min(places[2:4]) and max(places[2:4]) < places[4]
        ):
            reordered += 1
    return Tally(
        written=len(written),
        stored=sum(min(found[k], c) for k, c in wanted.items()),
        refused=len(refused),
        lost=lost,
        duplicated=sum(max(0, found[k] - c) for k, c in wanted.items()),
        reordered=reordered,
    )


def assert_every_message_stored_once(
    written: list[BaseMessage], kept: list[BaseMessage], rejected: list[Any], view: list[Any]
) -> None:
    got = tally(written, kept, [key(r.message) for r in rejected])
    print(got)  # shown with -s: the counts the issue asks for
    assert got == Tally(len(written), len(written), 0, 0, 0, 0), got
    assert len(kept) == len(written)  # nothing else in the store either (no placeholder)
    assert toolmend.check(view, provider="deepseek") == []


def sql(path: Path, session: str = "shared") -> SQLChatMessageHistory:
    return SQLChatMessageHistory(session, connection=f"sqlite:///{path}")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLChatMessageHistory]:
    inner = sql(tmp_path / "chat.db")
    yield inner
    inner.session_maker.remove()
    inner.engine.dispose()


def in_threads(work: list[tuple[ToolMendHistory, str]]) -> None:
    start = threading.Barrier(len(work))
    failures: list[BaseException] = []

    def body(history: ToolMendHistory, tag: str) -> None:
        try:
            start.wait()
            run_writer(history, tag)
        except BaseException as error:  # surfaces in the test, not as a thread warning
            failures.append(error)

    threads = [threading.Thread(target=body, args=pair) for pair in work]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


# --- the writers -------------------------------------------------------------------------------


def test_threads_sharing_one_wrapper(store: SQLChatMessageHistory, write_back: bool) -> None:
    history = ToolMendHistory(store, write_back=write_back)
    tags = [f"t{n}" for n in range(WRITERS)]
    in_threads([(history, tag) for tag in tags])
    written = [m for tag in tags for m in written_by(tag)]
    assert_every_message_stored_once(written, store.messages, history.rejected, history.messages)


def test_a_wrapper_per_thread_on_one_store(store: SQLChatMessageHistory, write_back: bool) -> None:
    wrappers = {f"w{n}": ToolMendHistory(store, write_back=write_back) for n in range(WRITERS)}
    in_threads([(history, tag) for tag, history in wrappers.items()])
    written = [m for tag in wrappers for m in written_by(tag)]
    refused = [r for history in wrappers.values() for r in history.rejected]
    view = ToolMendHistory(store).messages
    assert_every_message_stored_once(written, store.messages, refused, view)


def test_asyncio_tasks_on_an_async_only_store(tmp_path: Path, write_back: bool) -> None:
    pytest.importorskip("aiosqlite")
    url = f"sqlite+aiosqlite:///{tmp_path / 'chat.db'}"
    tags = [f"a{n}" for n in range(WRITERS)]

    async def run() -> tuple[list[BaseMessage], list[Any], list[BaseMessage]]:
        inner = SQLChatMessageHistory("shared", connection=url, async_mode=True)
        history = ToolMendHistory(inner, write_back=write_back)
        try:
            await asyncio.gather(*(arun_writer(history, tag) for tag in tags))
            return await inner.aget_messages(), history.rejected, await history.aget_messages()
        finally:
            await inner.async_engine.dispose()

    kept, refused, view = asyncio.run(run())
    written = [m for tag in tags for m in written_by(tag)]
    assert_every_message_stored_once(written, kept, refused, view)


def test_asyncio_tasks_and_threads_on_one_wrapper(
    store: SQLChatMessageHistory, write_back: bool
) -> None:
    """Tasks go through the wrapper's executor path; threads write at the same time."""
    history = ToolMendHistory(store, write_back=write_back)
    task_tags = [f"k{n}" for n in range(WRITERS // 2)]
    thread_tags = [f"h{n}" for n in range(WRITERS // 2)]

    async def tasks() -> None:
        await asyncio.gather(*(arun_writer(history, tag) for tag in task_tags))

    threads = [threading.Thread(target=run_writer, args=(history, tag)) for tag in thread_tags]
    for thread in threads:
        thread.start()
    asyncio.run(tasks())
    for thread in threads:
        thread.join()
    written = [m for tag in task_tags + thread_tags for m in written_by(tag)]
    assert_every_message_stored_once(written, store.messages, history.rejected, history.messages)


PROCESS_WRITER = """
import json, os, sys, time, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, sys.argv[5])
from test_langchain_concurrency import run_writer
from langchain_community.chat_message_histories import SQLChatMessageHistory
from toolmend.integrations.langchain import ToolMendHistory

path, tag, go, write_back = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
chains = int(sys.argv[6])
inner = SQLChatMessageHistory("shared", connection=f"sqlite:///{path}")
history = ToolMendHistory(inner, write_back=write_back)
open(f"{go}.{tag}", "w").close()
while not os.path.exists(go):
    time.sleep(0.005)
run_writer(history, tag, chains)
print(json.dumps([[r.reason, r.message.type, str(r.message.content)] for r in history.rejected]))
"""


@pytest.mark.slow
def test_two_processes_on_one_sqlite_file(tmp_path: Path, write_back: bool) -> None:
    path, go = tmp_path / "shared.db", tmp_path / "go"
    sql(path)  # create the table once, before the writers race for it
    tags = ("p1", "p2")
    here = str(Path(__file__).resolve().parent)
    writers = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                PROCESS_WRITER,
                str(path),
                tag,
                str(go),
                str(int(write_back)),
                here,
                str(PROCESS_CHAINS),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        for tag in tags
    ]
    deadline = time.monotonic() + 60
    while not all(Path(f"{go}.{tag}").exists() for tag in tags) and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()  # both wrappers are built: start writing together
    outputs = [writer.communicate(timeout=600)[0] for writer in writers]
    assert [writer.returncode for writer in writers] == [0, 0]
    refused = [
        _Refused(_Said(kind, content), reason)
        for output in outputs
        for reason, kind, content in json.loads(output)
    ]
    written = [m for tag in tags for m in written_by(tag, PROCESS_CHAINS)]
    kept = sql(path).messages
    assert_every_message_stored_once(written, kept, refused, ToolMendHistory(sql(path)).messages)


@dataclass
class _Said:
    """A message as a writer process reports it: its type and content."""

    type: str
    content: str


@dataclass
class _Refused:
    """A rejection reported by a writer process."""

    message: Any
    reason: str
