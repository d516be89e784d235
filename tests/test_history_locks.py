"""The registry of :class:`ToolMendHistory`'s shared store locks under garbage collection.

A wrapper's finalizer runs inside whatever allocation sets off a collection, in whatever
thread, even one that holds the registry's own lock at that moment (creating a wrapper
allocates under it). A finalizer that took that lock would deadlock the thread and, with it,
every later wrapper of the process (a run of ``test_litellm`` and ``test_langchain`` in one
process hung so). Each test here swaps in its own registry, so a regression leaves only its
own thread stuck (a daemon) and fails instead of hanging the run.
"""

from __future__ import annotations

import collections
import gc
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.chat_history import InMemoryChatMessageHistory

from toolmend.integrations import langchain_history, langchain_stores
from toolmend.integrations.langchain_history import ToolMendHistory

from support.servers import PostgresServer, postgres_server

__all__ = ["postgres_server"]  # the session fixture, used below

DEADLOCK_SECONDS = 120
"""How long the thread may take to build one wrapper before it counts as stuck: the work is
microseconds, so only a deadlock comes near it, on however busy a machine."""


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A registry and a registry lock of this test's own, and the collector off until the test
    runs it (so a cyclic wrapper is collected exactly where the test says)."""
    monkeypatch.setattr(langchain_history, "_STORE_LOCKS", {})
    monkeypatch.setattr(langchain_history, "_CONNECTION_LOCKS", {})
    monkeypatch.setattr(langchain_history, "_STORE_LOCKS_LOCK", threading.Lock())
    monkeypatch.setattr(langchain_history, "_COLLECTED", collections.deque())
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _garbage_wrapper(store: Any) -> None:
    """A wrapper of ``store`` that only the cyclic collector can free (it refers to itself)."""
    wrapper = ToolMendHistory(store)
    wrapper.cycle = wrapper  # type: ignore[attr-defined]


def _in_thread(work: Any) -> None:
    """Run ``work`` in a daemon thread; fail if it has not returned (a deadlock)."""
    failures: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as error:  # handed to the test's thread
            failures.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(DEADLOCK_SECONDS)
    assert not thread.is_alive(), "building a wrapper deadlocked on the registry's lock"
    if failures:
        raise failures[0]


@pytest.mark.usefixtures("registry")
def test_a_wrapper_collected_while_another_is_built_does_not_deadlock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The collection runs inside ``_locks_for``, with the registry's lock held by the same
    thread: the dead wrapper's finalizer must not wait for that lock."""
    _garbage_wrapper(InMemoryChatMessageHistory())
    collect_inside = langchain_stores.shared_connection

    def shared_connection(inner: Any) -> Any:
        gc.collect()  # what any allocation under the lock may set off
        return collect_inside(inner)

    monkeypatch.setattr(langchain_stores, "shared_connection", shared_connection)
    built: list[ToolMendHistory] = []
    _in_thread(lambda: built.append(ToolMendHistory(InMemoryChatMessageHistory())))
    assert len(built) == 1


@pytest.mark.usefixtures("registry")
def test_a_finalizer_never_waits_for_the_registry_lock() -> None:
    """Whoever holds the registry's lock, collecting a wrapper returns at once."""
    _garbage_wrapper(InMemoryChatMessageHistory())
    with langchain_history._STORE_LOCKS_LOCK:
        _in_thread(gc.collect)


@pytest.mark.usefixtures("registry")
def test_a_collected_wrapper_gives_its_share_back() -> None:
    """The entries of collected wrappers are gone once the next wrapper is built; a store
    whose other wrapper lives keeps its entry, with its count."""
    kept_store = InMemoryChatMessageHistory()
    kept = ToolMendHistory(kept_store)
    _garbage_wrapper(kept_store)
    gone_store = InMemoryChatMessageHistory()
    _garbage_wrapper(gone_store)
    assert set(langchain_history._STORE_LOCKS) == {id(kept_store), id(gone_store)}
    gc.collect()
    new_store = InMemoryChatMessageHistory()
    new = ToolMendHistory(new_store)
    assert set(langchain_history._STORE_LOCKS) >= {id(kept_store), id(new_store)}
    assert id(gone_store) not in langchain_history._STORE_LOCKS
    assert langchain_history._STORE_LOCKS[id(kept_store)].wrappers == 1
    assert kept._locks is langchain_history._STORE_LOCKS[id(kept_store)]
    assert new._locks is langchain_history._STORE_LOCKS[id(new_store)]


@pytest.mark.slow  # starts the PostgreSQL server (once per worker)
@pytest.mark.usefixtures("registry")
def test_stores_on_one_connection_give_the_connection_back_with_the_last_wrapper(
    postgres_server: PostgresServer,
) -> None:
    """Two langchain-postgres stores on one psycopg connection share its lock until both their
    wrappers are gone."""
    import psycopg
    from langchain_postgres import PostgresChatMessageHistory

    connection = psycopg.connect(postgres_server.dsn(postgres_server.new_database()))
    try:
        PostgresChatMessageHistory.create_tables(connection, "message_store")
        session = "00000000-0000-4000-8000-000000000003"
        first, second = (
            PostgresChatMessageHistory("message_store", session, sync_connection=connection)
            for _ in range(2)
        )
        one = ToolMendHistory(first)
        _garbage_wrapper(second)
        assert one._lock is langchain_history._STORE_LOCKS[id(second)].thread
        assert langchain_history._CONNECTION_LOCKS[id(connection)][2] == 2
        gc.collect()
        two = ToolMendHistory(first)  # tidies the registry: the second store's wrapper is gone
        assert id(second) not in langchain_history._STORE_LOCKS
        assert langchain_history._CONNECTION_LOCKS[id(connection)][2] == 1
        assert langchain_history._STORE_LOCKS[id(first)].wrappers == 2
        del one, two
        gc.collect()
        last = ToolMendHistory(InMemoryChatMessageHistory())
        assert last._locks.connection is None
        assert id(connection) not in langchain_history._CONNECTION_LOCKS
        assert id(first) not in langchain_history._STORE_LOCKS
    finally:
        connection.close()
