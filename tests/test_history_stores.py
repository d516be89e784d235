"""``ToolMendHistory`` on shared stores: real PostgreSQL and Redis servers (issue 31).

Started by ``tests/support/servers.py`` on 127.0.0.1 (skipped without them, failed under CI).
The stores: ``SQLChatMessageHistory`` on PostgreSQL through psycopg, langchain-postgres's
``PostgresChatMessageHistory``, and langchain-community's ``RedisChatMessageHistory``.

* The issue's load: 4 processes x 2 threads, 3 shared sessions, a store object per writer and
  session, a user message, an assistant call, its result and a final answer per turn, the
  result of every other turn written by a writer in another process, reads in between (see
  ``tests/support/store_writer.py``), with ``write_back`` off and on. Every message is stored
  exactly once: none refused, lost, duplicated or stored before its call, and no placeholder.
  Before issue 31, with ``write_back`` on, every store lost, duplicated and refused messages
  and stored placeholders (numbers in docs/hooks.md).
* A writer paused inside the swap while another writes: the other writer's message survives.
* A swap that fails halfway writes nothing; the read still returns the repaired history.
* A store no swap covers is refused ``write_back=True`` when the wrapper is built.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from langchain_core.chat_history import BaseChatMessageHistory, InMemoryChatMessageHistory
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

import toolmend
from toolmend.integrations import langchain_stores
from toolmend.integrations.langchain import ToolMendHistory

from support.fuzz_cases import Case, cases
from support.servers import PostgresServer, RedisServer, postgres_server, redis_server
from support.shared_stores import KINDS, close_store, open_store, prepare
from support.store_writer import call_id, handler_of, session_name

__all__ = ["postgres_server", "redis_server"]  # the session fixtures, used below

PROCESSES, THREADS, SESSIONS = 4, 2, 3
TURNS = int(os.environ.get("TOOLMEND_TURNS") or 6)
"""Turns per writer (the issue ran 24: ``TOOLMEND_TURNS=24``); 4 messages each."""
WAIT = 120.0
"""How long a step may take before the test gives up (a hang, not a measurement)."""

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(params=KINDS)
def spec(request: pytest.FixtureRequest) -> dict[str, Any]:
    """One test's store: its own database (PostgreSQL) or key prefix (Redis)."""
    kind = request.param
    if kind == "redis":
        redis: RedisServer = request.getfixturevalue("redis_server")
        found: dict[str, Any] = {"kind": kind, "url": redis.url, "prefix": redis.new_prefix()}
    else:
        postgres: PostgresServer = request.getfixturevalue("postgres_server")
        database = postgres.new_database()
        url = postgres.url(database) if kind == "sql_postgres" else postgres.dsn(database)
        found = {"kind": kind, "url": url, "prefix": ""}
    prepare(found)
    return found


@pytest.fixture
def store(spec: dict[str, Any]) -> Iterator[Any]:
    opened = open_store(spec, "race")
    yield opened
    close_store(opened)


# --- the load ----------------------------------------------------------------------------


def written() -> dict[tuple[str, str], str]:
    """Every message the writers write: (type, content) -> its session."""
    out: dict[tuple[str, str], str] = {}
    for p in range(PROCESSES):
        for t in range(THREADS):
            for k in range(TURNS):
                session = session_name({"sessions": SESSIONS}, p, t, k)
                cid = call_id(p, t, k, handler_of({"processes": PROCESSES}, p, t, k))
                out[("human", f"question {p} {t} {k}")] = session
                out[("ai", f"calling {p} {t} {k}")] = session
                out[("tool", f"result {cid}")] = session
                out[("ai", f"answer {p} {t} {k}")] = session
    return out


def run_writers(spec: dict[str, Any], write_back: bool, go: Path) -> list[list[str]]:
    """The writer processes, started together; their rejections."""
    go.mkdir()
    script = Path(__file__).resolve().parent / "support" / "store_writer.py"
    common = {"processes": PROCESSES, "threads": THREADS, "turns": TURNS, "sessions": SESSIONS}
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                str(script),
                json.dumps(
                    {**spec, **common, "process": p, "write_back": write_back, "go": str(go)}
                ),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,  # toolmend's log lines: shown if a writer fails
            text=True,
        )
        for p in range(PROCESSES)
    ]
    deadline = time.monotonic() + WAIT
    while len(list(go.glob("ready.*"))) < PROCESSES and time.monotonic() < deadline:
        if any(process.poll() is not None for process in processes):
            break
        time.sleep(0.01)
    (go / "go").touch()
    outputs = [process.communicate(timeout=600) for process in processes]
    failed = [err[-3000:] for (_, err), p in zip(outputs, processes, strict=True) if p.returncode]
    assert failed == []
    return [item for output, _ in outputs for item in json.loads(output)]


def tally(spec: dict[str, Any], refused: list[list[str]]) -> dict[str, int]:
    """What became of each message written (matched by its unique content)."""
    wanted = written()
    found: Counter[tuple[str, str]] = Counter()
    misordered = placeholders = 0
    for session in {f"s{n}" for n in range(SESSIONS)}:
        store = open_store(spec, session)
        try:
            kept = store.messages
        finally:
            close_store(store)
        seen_calls: set[str] = set()
        for message in kept:
            found[(message.type, str(message.content))] += 1
            for call in getattr(message, "tool_calls", None) or ():
                seen_calls.add(call["id"])
            if isinstance(message, ToolMessage):
                if message.tool_call_id not in seen_calls:
                    misordered += 1
                if message.content == toolmend.PLACEHOLDER_TEXT:
                    placeholders += 1
    refused_keys = Counter((kind, content) for _, kind, content in refused)
    return {
        "written": len(wanted),
        "stored_once": sum(1 for key in wanted if found[key] >= 1),
        "refused": len(refused),
        "lost": sum(1 for key in wanted if found[key] == 0 and not refused_keys[key]),
        "duplicated": sum(max(0, found[key] - 1) for key in wanted),
        "misordered": misordered,
        "placeholders": placeholders,
        "other_rows": sum(count for key, count in found.items() if key not in wanted),
    }


@pytest.mark.slow
@pytest.mark.parametrize("write_back", [False, True], ids=["plain", "write_back"])
def test_processes_and_store_objects_share_sessions(
    spec: dict[str, Any], write_back: bool, tmp_path: Path
) -> None:
    refused = run_writers(spec, write_back, tmp_path / "go")
    got = tally(spec, refused)
    print(spec["kind"], "write_back" if write_back else "plain", got)  # the table, -s
    n = got["written"]
    assert got == {
        "written": n,
        "stored_once": n,
        "refused": 0,
        "lost": 0,
        "duplicated": 0,
        "misordered": 0,
        "placeholders": 0,
        "other_rows": 0,
    }


# --- one writer inside the swap, another writing ------------------------------------------------

POISONED = [
    HumanMessage("q"),
    ToolMessage("stray", tool_call_id="call_stray"),  # an orphan: the repair drops it
    HumanMessage("q2"),
]


def contents(messages: list[BaseMessage]) -> list[str]:
    return [str(m.content) for m in messages]


class Paused:
    """Stops the swaps of one thread at ``stage`` until released (``langchain_stores.pause``)."""

    def __init__(self, stage: str) -> None:
        self.stage, self.thread = stage, threading.current_thread()
        self.reached, self.release = threading.Event(), threading.Event()

    def __call__(self, stage: str) -> None:
        if stage == self.stage and threading.current_thread() is not self.thread:
            self.reached.set()
            assert self.release.wait(WAIT)


@pytest.fixture
def paused(monkeypatch: pytest.MonkeyPatch) -> Paused:
    hook = Paused("compared")
    monkeypatch.setattr(langchain_stores, "pause", hook)
    return hook


def waiting_on_a_lock(spec: dict[str, Any]) -> bool:
    """Whether a PostgreSQL backend of the test's database waits for a lock (the writer
    shut out by the paused swap's table lock)."""
    import psycopg

    url = spec["url"].replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url, autocommit=True) as connection:
        row = connection.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
    return bool(row and row[0])


@pytest.mark.slow  # starts the servers (once per worker)
def test_a_write_during_a_paused_swap_survives(
    spec: dict[str, Any], store: Any, paused: Paused
) -> None:
    """Writer A's read is stopped inside its write-back (the store compared, nothing written);
    writer B, through another store object, appends. PostgreSQL: B waits for A's table lock,
    then appends after A's swap. Redis: B appends at once, and A's ``EXEC`` then writes nothing
    (the key moved); A's next read swaps. Either way B's message is stored once, after the
    repair. (Before issue 31 A cleared the store after comparing: B's message was lost.)"""
    store.add_messages(POISONED)
    a = ToolMendHistory(store, write_back=True)
    other = open_store(spec, "race")
    b = ToolMendHistory(other)
    views: list[list[BaseMessage]] = []
    reader = threading.Thread(target=lambda: views.append(a.messages))
    writer = threading.Thread(target=b.add_message, args=(HumanMessage("late"),))
    try:
        reader.start()
        assert paused.reached.wait(WAIT)
        writer.start()
        if spec["kind"] == "redis":
            writer.join(WAIT)  # Redis does not wait for A: B's push lands first
        else:
            deadline = time.monotonic() + WAIT
            while not waiting_on_a_lock(spec):
                assert time.monotonic() < deadline, "the writer never waited for the swap"
                time.sleep(0.01)
        paused.release.set()
        reader.join(WAIT)
        writer.join(WAIT)
        assert not reader.is_alive() and not writer.is_alive()
        assert contents(views[0]) == ["q", "q2"]
        if spec["kind"] == "redis":  # the swap wrote nothing; the next read does
            assert contents(other.messages) == ["q", "stray", "q2", "late"]
            assert a.rejected == []
            assert contents(a.messages) == ["q", "q2", "late"]
        assert contents(other.messages) == ["q", "q2", "late"]
        assert [r.reason for r in a.rejected] == ["dropped_on_write_back"]
    finally:
        paused.release.set()
        close_store(other)


@pytest.mark.slow  # starts the servers (once per worker)
def test_store_objects_sharing_a_psycopg_connection_take_turns(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """langchain-postgres advises one connection for many store objects. A psycopg connection
    runs one transaction at a time: another store object's write (an insert and a commit) run
    on it during a swap would land inside the swap's transaction. So the wrappers of the stores
    on one connection share one lock: B's write waits for A's swap, then lands after it."""
    import psycopg
    from langchain_postgres import PostgresChatMessageHistory

    hook = Paused("writing")  # A stops with the old rows deleted, the new ones not written
    monkeypatch.setattr(langchain_stores, "pause", hook)
    connection = psycopg.connect(postgres_server.dsn(postgres_server.new_database()))
    try:
        PostgresChatMessageHistory.create_tables(connection, "message_store")
        session = "00000000-0000-4000-8000-000000000002"
        one = PostgresChatMessageHistory("message_store", session, sync_connection=connection)
        two = PostgresChatMessageHistory("message_store", session, sync_connection=connection)
        one.add_messages(POISONED)
        a, b = ToolMendHistory(one, write_back=True), ToolMendHistory(two)
        views: list[list[BaseMessage]] = []
        failures: list[BaseException] = []

        def write() -> None:
            try:
                b.add_message(HumanMessage("late"))
            except BaseException as error:
                failures.append(error)

        reader = threading.Thread(target=lambda: views.append(a.messages))
        writer = threading.Thread(target=write)
        reader.start()
        assert hook.reached.wait(WAIT)
        writer.start()
        writer.join(0.2)  # a B that did not wait would be done by now (or failed)
        assert writer.is_alive() and failures == []
        hook.release.set()
        reader.join(WAIT)
        writer.join(WAIT)
        assert failures == []
        assert contents(views[0]) == ["q", "q2"]
        assert contents(two.messages) == ["q", "q2", "late"]
    finally:
        hook.release.set()
        connection.close()


@pytest.mark.slow  # starts the servers (once per worker)
def test_async_store_objects_sharing_a_psycopg_connection_take_turns(
    postgres_server: PostgresServer,
) -> None:
    """The async twin of the test above: two async-only langchain-postgres stores on one
    ``AsyncConnection``. A's swap waits for a table lock another client holds; B's write is
    started meanwhile. B must wait for A's whole swap, not run its statements and its
    ``commit()`` inside A's transaction (psycopg then refuses the commit: B's caller got an
    error for a message A's transaction stored, or A's delete took it away)."""
    import asyncio

    import psycopg
    from langchain_postgres import PostgresChatMessageHistory

    dsn = postgres_server.dsn(postgres_server.new_database())
    spec = {"url": dsn}

    async def run() -> tuple[list[BaseMessage], list[BaseMessage]]:
        connection = await psycopg.AsyncConnection.connect(dsn)
        blocker = await psycopg.AsyncConnection.connect(dsn)
        try:
            await PostgresChatMessageHistory.acreate_tables(connection, "message_store")
            session = "00000000-0000-4000-8000-000000000004"
            one = PostgresChatMessageHistory("message_store", session, async_connection=connection)
            two = PostgresChatMessageHistory("message_store", session, async_connection=connection)
            await one.aadd_messages(POISONED)
            a, b = ToolMendHistory(one, write_back=True), ToolMendHistory(two)
            async with blocker.transaction():
                await blocker.execute("LOCK TABLE message_store IN SHARE ROW EXCLUSIVE MODE")
                reader = asyncio.create_task(a.aget_messages())
                deadline = time.monotonic() + WAIT
                while not waiting_on_a_lock(spec):  # A's swap waits for the blocker's lock
                    assert time.monotonic() < deadline, "the swap never waited for the lock"
                    await asyncio.sleep(0.01)
                writer = asyncio.create_task(b.aadd_messages([HumanMessage("late")]))
                for _ in range(50):  # B runs until it waits (for A, or for the connection)
                    await asyncio.sleep(0)
            view = await asyncio.wait_for(reader, WAIT)
            await asyncio.wait_for(writer, WAIT)
            return view, await two.aget_messages()
        finally:
            await blocker.close()
            await connection.close()

    view, stored = asyncio.run(run())
    assert contents(view) == ["q", "q2"]
    assert contents(stored) == ["q", "q2", "late"]


# --- a swap that fails halfway ------------------------------------------------------------------


@pytest.mark.slow  # starts the servers (once per worker)
def test_a_swap_failing_halfway_writes_nothing_and_the_read_fails_open(
    store: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The store's connection fails after the old rows are deleted (or the delete queued) and
    before the new ones are written: the transaction (``MULTI``) is dropped whole, the store
    keeps its history, and the read returns the repaired history and logs the error."""

    def fail(stage: str) -> None:
        if stage == "writing":
            raise ConnectionError("the store went away mid-swap")

    store.add_messages(POISONED)
    monkeypatch.setattr(langchain_stores, "pause", fail)
    history = ToolMendHistory(store, write_back=True)
    with caplog.at_level(logging.ERROR, logger="toolmend"):
        assert contents(history.messages) == ["q", "q2"]
    assert "could not write the repaired history back" in caplog.text
    assert contents(store.messages) == ["q", "stray", "q2"]
    assert history.rejected == []
    monkeypatch.setattr(langchain_stores, "pause", None)
    assert contents(history.messages) == ["q", "q2"]
    assert contents(store.messages) == ["q", "q2"]


class FlakyStore(InMemoryChatMessageHistory):
    """A store whose next ``add_messages`` fails once (a transient error of the store)."""

    failures: int = 0

    def add_messages(self, messages: Any) -> None:
        if self.failures:
            self.failures -= 1
            raise ConnectionError("transient store error")
        super().add_messages(messages)


class ForeignStore(BaseChatMessageHistory):
    """A store no atomic swap covers (a list behind ``add_messages`` and ``clear``)."""

    def __init__(self) -> None:
        self.rows: list[BaseMessage] = []
        self.failures = 0

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        return list(self.rows)

    def add_messages(self, messages: Any) -> None:
        if self.failures:
            self.failures -= 1
            raise ConnectionError("transient store error")
        self.rows.extend(messages)

    def clear(self) -> None:
        self.rows.clear()


def test_the_unguarded_mode_puts_the_history_back_when_the_refill_fails(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``write_back="unguarded"`` clears and refills; a refill that fails puts back what was
    read, and the read fails open. (Before issue 31, any store but SQLite: the whole history
    was lost and the read raised.)"""
    inner = ForeignStore()
    inner.add_messages(POISONED)
    history = ToolMendHistory(inner, write_back="unguarded")
    inner.failures = 1
    with caplog.at_level(logging.ERROR, logger="toolmend"):
        assert contents(history.messages) == ["q", "q2"]
    assert "could not write the repaired history back" in caplog.text
    assert contents(inner.messages) == ["q", "stray", "q2"]
    assert contents(history.messages) == ["q", "q2"]
    assert contents(inner.messages) == ["q", "q2"]


def test_toolmend_stats_counts_the_write_back_errors(caplog: pytest.LogCaptureFixture) -> None:
    """The ERROR lines of a failed write-back (and of a history the unguarded mode could not
    put back) are lines ``toolmend stats`` counts as errors outside a request, as it counts
    every ERROR toolmend logs; it skipped both."""
    from toolmend._stats import logs

    inner = ForeignStore()
    inner.add_messages(POISONED)
    history = ToolMendHistory(inner, write_back="unguarded")
    inner.failures = 2  # the refill fails, and so does putting the history back
    with caplog.at_level(logging.ERROR, logger="toolmend"):
        assert contents(history.messages) == ["q", "q2"]
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(lines) == 2, lines
    events = [logs.parse_message(f"2026-12-06 05:00:00 ERROR toolmend: {line}") for line in lines]
    assert [event.kind if event else None for event in events] == ["error", "error"], lines


def test_write_back_is_refused_on_a_store_no_swap_covers() -> None:
    with pytest.raises(ValueError, match=r"test_history_stores\.ForeignStore cannot") as raised:
        ToolMendHistory(ForeignStore(), write_back=True)
    for name in ("SQLChatMessageHistory", "PostgresChatMessageHistory", "Redis"):
        assert name in str(raised.value)
    assert "write_back='unguarded'" in str(raised.value)
    with pytest.raises(ValueError, match="write_back must be"):
        ToolMendHistory(ForeignStore(), write_back="yes")
    ToolMendHistory(ForeignStore(), write_back=False)  # reads are still repaired
    ToolMendHistory(FlakyStore(), write_back=True)  # in memory: one process, one assignment


def test_a_write_back_never_stores_a_made_up_result() -> None:
    """A history that two racing refills left with a call and its result twice (the second
    result before the second copy of the call): the repair drops the second result (answered
    already) and answers the second copy of the call with a placeholder. The write-back stored
    that placeholder (it matched the stored results by call id alone): 25-38 placeholder rows
    per run on PostgreSQL and Redis before issue 31."""
    from langchain_core.messages import AIMessage

    def call() -> AIMessage:
        return AIMessage(
            "c", tool_calls=[{"name": "f", "args": {}, "id": "a", "type": "tool_call"}]
        )

    inner = InMemoryChatMessageHistory()
    inner.add_messages(
        [
            HumanMessage("q"),
            call(),
            ToolMessage("r", tool_call_id="a"),
            HumanMessage("x"),
            ToolMessage("r", tool_call_id="a"),
            call(),
            HumanMessage("q2"),
        ]
    )
    history = ToolMendHistory(inner, write_back=True)
    assert toolmend.PLACEHOLDER_TEXT in contents(history.messages)
    assert contents(inner.messages) == ["q", "c", "r", "x", "c", "q2"]
    assert [r.reason for r in history.rejected] == ["dropped_on_write_back"]


@pytest.mark.parametrize(
    ("provider", "stored_id"),
    [("openai", ""), ("mistral", "call_abc_1")],
    ids=["filled_result_id", "rewrote_call_id"],
)
def test_a_write_back_keeps_a_real_result_the_repair_rewrote(provider: str, stored_id: str) -> None:
    """A real result the repair rewrote (its empty id filled from its call; Mistral's ids
    rewritten on the call and the result) is a new object with another id: it is no
    placeholder. The write-back matched it as made up (no stored result had its id and
    content) and left it out, so the store lost the tool's real output for good: not in
    ``rejected``, and every later read answered the call with a placeholder."""
    from langchain_core.messages import AIMessage

    call_id = stored_id or "call_abc_1"
    calls = [{"name": "f", "args": {}, "id": call_id, "type": "tool_call"}]
    inner = InMemoryChatMessageHistory()
    inner.add_messages(
        [
            HumanMessage("q"),
            AIMessage("c", tool_calls=calls),
            ToolMessage("the real output", tool_call_id=stored_id),
            HumanMessage("q2"),
        ]
    )
    history = ToolMendHistory(inner, provider=provider, write_back=True)
    view = history.messages
    assert "the real output" in contents(view)
    assert "the real output" in contents(inner.messages)
    assert toolmend.PLACEHOLDER_TEXT not in contents(inner.messages)
    assert "the real output" in contents(history.messages)


# --- async-only stores --------------------------------------------------------------------------


@pytest.mark.slow  # starts the servers (once per worker)
@pytest.mark.parametrize("kind", ["sql_postgres", "langchain_postgres"])
@pytest.mark.parametrize("fails", [False, True], ids=["swaps", "fails_halfway"])
def test_an_async_only_postgres_store_swaps_in_one_transaction(
    postgres_server: PostgresServer,
    kind: str,
    fails: bool,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``SQLChatMessageHistory`` on an async engine (psycopg), and a langchain-postgres store
    given only an async connection: the same swap, awaited; one failing halfway writes nothing
    and the read fails open."""
    import asyncio

    import psycopg
    from langchain_community.chat_message_histories import SQLChatMessageHistory
    from langchain_postgres import PostgresChatMessageHistory

    database = postgres_server.new_database()

    def fail(stage: str) -> None:
        if stage == "writing":
            raise ConnectionError("the store went away mid-swap")

    async def run() -> tuple[list[BaseMessage], list[BaseMessage]]:
        if kind == "sql_postgres":
            url = postgres_server.url(database)
            inner: Any = SQLChatMessageHistory("s", connection=url, async_mode=True)
            close: Any = inner.async_engine.dispose
        else:
            connection = await psycopg.AsyncConnection.connect(postgres_server.dsn(database))
            await PostgresChatMessageHistory.acreate_tables(connection, "message_store")
            session = "00000000-0000-4000-8000-000000000001"
            inner = PostgresChatMessageHistory(
                "message_store", session, async_connection=connection
            )
            close = connection.close
        try:
            history = ToolMendHistory(inner, write_back=True)
            assert history.async_only
            await inner.aadd_messages(POISONED)
            if fails:
                monkeypatch.setattr(langchain_stores, "pause", fail)
            return await history.aget_messages(), await inner.aget_messages()
        finally:
            await close()

    with caplog.at_level(logging.ERROR, logger="toolmend"):
        view, stored = asyncio.run(run())
    assert contents(view) == ["q", "q2"]
    assert contents(stored) == (["q", "stray", "q2"] if fails else ["q", "q2"])
    assert ("could not write the repaired history back" in caplog.text) is fails


def test_a_sqlite_swap_failing_halfway_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's swap (``BEGIN IMMEDIATE``) is rolled back whole too."""

    def fail(stage: str) -> None:
        if stage == "writing":
            raise ConnectionError("the store went away mid-swap")

    inner = open_store({"kind": "sqlite", "url": f"sqlite:///{tmp_path / 'chat.db'}"}, "s")
    try:
        inner.add_messages(POISONED)
        monkeypatch.setattr(langchain_stores, "pause", fail)
        assert contents(ToolMendHistory(inner, write_back=True).messages) == ["q", "q2"]
        assert contents(inner.messages) == ["q", "stray", "q2"]
    finally:
        close_store(inner)


# --- a property of every write-back ------------------------------------------------------------


def _said(message: BaseMessage) -> tuple[str, str]:
    """A message as the property counts it: its type and content (a result's id may be
    rewritten by the repair, filled from its call or made to fit a provider's id rules)."""
    return message.type, repr(message.content)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases("langchain"))
def test_a_write_back_only_takes_messages_out_or_moves_them(case: Case) -> None:
    """Whatever the stored history (fuzzed LangChain histories, valid and damaged): after a
    write-back read, every stored message was stored before (no made-up result, no copy), and
    the results taken out are in ``rejected`` (dropped as orphans or second copies)."""
    inner = InMemoryChatMessageHistory()
    inner.add_messages(case.damaged)
    before = Counter(_said(m) for m in inner.messages)
    history = ToolMendHistory(inner, write_back=True)
    _ = history.messages
    after = Counter(_said(m) for m in inner.messages)
    assert after <= before  # a sub-multiset: nothing added
    assert not any(content == repr(toolmend.PLACEHOLDER_TEXT) for _, content in after)
    taken = Counter({key: n for key, n in (before - after).items() if key[0] == "tool"})
    assert taken <= Counter(_said(r.message) for r in history.rejected)  # nothing vanished
