"""The stores ``ToolMendHistory(write_back=True)`` can swap atomically, and how (issue 31).

A write-back replaces a session's stored history with its repair only if the store still holds
what the read repaired (compare-and-swap). LangChain's ``BaseChatMessageHistory`` can only
append and clear, and a compare, a ``clear()`` and an ``add_messages()`` in a row leave two
gaps to another process or store object writing the same session (its message is cleared away,
or lands in the emptied store before the refill, or both writers refill). So a write-back runs
only where the swap is one atomic step in the store itself:

* ``SQLChatMessageHistory`` (langchain-community, SQLAlchemy) on **SQLite**: one transaction
  that takes SQLite's write lock first (``BEGIN IMMEDIATE``); on **PostgreSQL**: one
  transaction that first takes ``LOCK TABLE ... IN SHARE ROW EXCLUSIVE MODE`` on the message
  table. That lock conflicts with every ``INSERT`` and ``DELETE`` (by any client, wrapper or
  not) and with itself, and not with reads: the re-read, the compare, the delete and the
  inserts see no other writer, and a writer of the table waits the few milliseconds of the
  swap. An advisory lock would order only the clients that take it, and the store's own
  ``add_messages`` does not. Sync and async engines alike, through the store's own engine.
* ``PostgresChatMessageHistory`` (langchain-postgres, psycopg): the same transaction, on the
  store's own connection (any transaction the connection has open is committed first, as the
  store's own writes do).
* ``RedisChatMessageHistory`` (langchain-community): optimistic ``WATCH``/``MULTI``/``EXEC``
  on the session's key. The key is watched, read and compared; the delete and the push of the
  whole repaired list are queued and run by ``EXEC`` only if no one wrote the key meanwhile;
  if someone did, nothing is written (the next read tries again).
* ``InMemoryChatMessageHistory`` (langchain-core): in one process only; the list is replaced
  in one assignment under the wrapper's lock.

Any other store is refused when ``ToolMendHistory(..., write_back=True)`` is built (a
``ValueError`` naming its class and these stores), unless the caller opts into
``write_back="unguarded"``: compare, ``clear()``, ``add_messages()`` under the wrapper's lock,
safe only when every writer of the session goes through wrappers of that one store object in
one process; a refill that fails puts the history read back.

Each swap commits whole or not at all; an error inside it is raised to the wrapper's read, which
logs it and still returns the repaired view (fail open). This module imports no store's SDK at
import time: SQLAlchemy, psycopg and redis are imported inside the swap of the store that uses
them, which the caller has imported already (and langchain-core when a swap runs, so that
this module can be imported first).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "SUPPORTED",
    "UNGUARDED",
    "aswap",
    "aunguarded_swap",
    "is_async_only",
    "kind_of",
    "same",
    "shared_connection",
    "swap",
    "unguarded_swap",
]

logger = logging.getLogger("toolmend")

UNGUARDED = "unguarded"
"""``write_back=UNGUARDED``: the weaker, documented mode for stores not in :data:`SUPPORTED`."""

SUPPORTED = (
    "SQLChatMessageHistory on SQLite or PostgreSQL (langchain-community)",
    "PostgresChatMessageHistory (langchain-postgres)",
    "RedisChatMessageHistory (langchain-community)",
    "InMemoryChatMessageHistory (langchain-core, one process)",
)
"""The stores a write-back swaps atomically, as an error message names them."""

_SQL_BEGIN = {
    "sqlite": ("BEGIN IMMEDIATE",),
    "postgresql": ("BEGIN", "LOCK TABLE {table} IN SHARE ROW EXCLUSIVE MODE"),
}
"""By SQLAlchemy dialect: the statements that open a swap's transaction and shut other
writers of the table out until it ends."""

pause: Callable[[str], None] | None = None
"""Called inside every atomic swap with ``"compared"`` (the store still holds what was read;
nothing written yet) and ``"writing"`` (the old rows are deleted or the delete is queued; the
new ones not yet written), holding the swap's lock or transaction. None in use: the tests set
it to stop a swap there (another writer then runs against it) or to fail it halfway."""


def _at(stage: str) -> None:
    if pause is not None:
        pause(stage)


def same(current: Sequence[Any], raw: Sequence[Any]) -> bool:
    """Whether the store's ``current`` messages are still the ``raw`` ones a repair read."""
    return len(current) == len(raw) and all(
        a is b or a == b for a, b in zip(current, raw, strict=True)
    )


def is_async_only(inner: Any) -> bool:
    """A store that refuses its sync methods: ``SQLChatMessageHistory`` on an async engine,
    or a langchain-postgres store given only an async connection."""
    if getattr(inner, "async_mode", None) is True:
        return True
    return (
        _is_langchain_postgres(inner)
        and getattr(inner, "_connection", None) is None
        and getattr(inner, "_aconnection", None) is not None
    )


def shared_connection(inner: Any) -> Any:
    """The connection a langchain-postgres store may share with other store objects (its docs
    advise one connection for many): the sync one, or the async one of a store given only
    that; None for any other store. The wrappers of every store on it take one lock (one
    ``asyncio.Lock`` per event loop for an async connection), as a psycopg connection holds
    one transaction at a time."""
    if _is_langchain_postgres(inner):
        connection = getattr(inner, "_connection", None)
        return connection if connection is not None else getattr(inner, "_aconnection", None)
    return None


def kind_of(inner: Any) -> str | None:
    """Which atomic swap ``inner`` takes (``"sql"``, ``"langchain_postgres"``, ``"redis"``,
    ``"in_memory"``), or None: a store this module cannot swap atomically."""
    if _sql_session(inner) is not None:
        return "sql"
    if _is_langchain_postgres(inner):
        return "langchain_postgres"
    if _is_community_redis(inner):
        return "redis"
    from langchain_core.chat_history import InMemoryChatMessageHistory

    if isinstance(inner, InMemoryChatMessageHistory):
        return "in_memory"
    return None


def _is_langchain_postgres(inner: Any) -> bool:
    return type(inner).__module__.startswith("langchain_postgres.") and all(
        hasattr(inner, name) for name in ("_table_name", "_session_id", "_connection")
    )


def _is_community_redis(inner: Any) -> bool:
    return type(inner).__module__.startswith("langchain_community.") and all(
        hasattr(inner, name) for name in ("redis_client", "key", "ttl")
    )


def swap(inner: Any, raw: Sequence[Any], repaired: Sequence[Any]) -> bool | None:
    """Replace the session's ``raw`` messages with ``repaired`` in one atomic step. True:
    swapped; False: the store no longer holds ``raw`` (nothing written); None: ``inner`` is no
    store :func:`kind_of` knows (the caller decides). Raises what the store raises, having
    written nothing."""
    kind = kind_of(inner)
    if kind == "sql":
        return _sql_swap(inner, raw, repaired)
    if kind == "langchain_postgres":
        return _pg_swap(inner, raw, repaired)
    if kind == "redis":
        return _redis_swap(inner, raw, repaired)
    if kind == "in_memory":
        if not same(inner.messages, raw):
            return False
        _at("compared")
        inner.messages = list(repaired)
        return True
    return None


async def aswap(inner: Any, raw: Sequence[Any], repaired: Sequence[Any]) -> bool | None:
    """:func:`swap` for a store that works only async (see :func:`is_async_only`)."""
    if _sql_session(inner) is not None:
        return await _asql_swap(inner, raw, repaired)
    if _is_langchain_postgres(inner):
        return await _apg_swap(inner, raw, repaired)
    return None


def unguarded_swap(inner: Any, raw: Sequence[Any], repaired: Sequence[Any]) -> bool:
    """``write_back="unguarded"``: compare, ``clear()``, ``add_messages()``, for a store no
    atomic swap covers. The caller holds the wrapper's lock, which orders only the writers of
    this store object in this process. A refill that fails puts ``raw`` back (best effort) and
    raises."""
    if not same(inner.messages, raw):
        return False
    _at("compared")
    inner.clear()
    try:
        _at("writing")
        inner.add_messages(list(repaired))
    except BaseException:
        try:
            inner.clear()
            inner.add_messages(list(raw))
        except Exception:
            logger.exception("toolmend could not put a LangChain history back after a failed swap")
        raise
    return True


async def aunguarded_swap(inner: Any, raw: Sequence[Any], repaired: Sequence[Any]) -> bool:
    """:func:`unguarded_swap`, through the store's async methods."""
    if not same(await inner.aget_messages(), raw):
        return False
    _at("compared")
    await inner.aclear()
    try:
        _at("writing")
        await inner.aadd_messages(list(repaired))
    except BaseException:
        try:
            await inner.aclear()
            await inner.aadd_messages(list(raw))
        except Exception:
            logger.exception("toolmend could not put a LangChain history back after a failed swap")
        raise
    return True


# --- SQLChatMessageHistory (SQLAlchemy) ----------------------------------------------------------


@dataclass(frozen=True)
class _SqlSession:
    """The rows of one session of a ``SQLChatMessageHistory``: what a swap reads, deletes and
    inserts, whichever engine (sync or async) runs the statements."""

    engine: Any
    model: Any
    column: Any
    session_id: Any
    converter: Any
    begin: tuple[str, ...]

    def select(self) -> Any:
        from sqlalchemy import select

        return (
            select(self.model).where(self.column == self.session_id).order_by(self.model.id.asc())
        )

    def delete(self) -> Any:
        from sqlalchemy import delete

        return delete(self.model).where(self.column == self.session_id)

    def holds(self, rows: Any, raw: Sequence[Any]) -> bool:
        """Whether ``rows`` are still the messages ``raw``."""
        return same([self.converter.from_sql_model(row) for row in rows], raw)

    def rows(self, messages: Sequence[Any]) -> list[Any]:
        return [self.converter.to_sql_model(m, self.session_id) for m in messages]

    def opening(self) -> list[str]:
        """The statements that open the swap's transaction, the table's name quoted."""
        preparer = self.engine.dialect.identifier_preparer
        table = preparer.format_table(self.model.__table__)
        return [statement.format(table=table) for statement in self.begin]


def _sql_session(inner: Any) -> _SqlSession | None:
    """The session of a ``SQLChatMessageHistory`` on SQLite or PostgreSQL, or None."""
    async_mode = bool(getattr(inner, "async_mode", False))
    engine: Any = getattr(inner, "async_engine" if async_mode else "engine", None)
    model = getattr(inner, "sql_model_class", None)
    converter = getattr(inner, "converter", None)
    field_name = getattr(inner, "session_id_field_name", None)
    dialect = getattr(getattr(engine, "dialect", None), "name", None)
    begin = _SQL_BEGIN.get(str(dialect))
    if model is None or converter is None or field_name is None or begin is None:
        return None
    column = getattr(model, field_name)
    return _SqlSession(engine, model, column, inner.session_id, converter, begin)


def _sql_swap(inner: Any, raw: Sequence[Any], repaired: Sequence[Any]) -> bool:
    """The swap of a sync ``SQLChatMessageHistory``: one transaction opened by the dialect's
    locking statements (:data:`_SQL_BEGIN`), on a connection of the store's own engine."""
    store = _sql_session(inner)
    assert store is not None
    from sqlalchemy.orm import Session

    with store.engine.connect() as plain:
        connection = plain.execution_options(isolation_level="AUTOCOMMIT")
        for statement in store.opening():
            connection.exec_driver_sql(statement)
        try:
            with Session(bind=connection) as session:
                if not store.holds(session.scalars(store.select()), raw):
                    connection.exec_driver_sql("ROLLBACK")
                    return False
                _at("compared")
                session.execute(store.delete())
                _at("writing")
                session.add_all(store.rows(repaired))
                session.flush()
            connection.exec_driver_sql("COMMIT")
        except BaseException:
            with contextlib.suppress(Exception):
                connection.exec_driver_sql("ROLLBACK")
            raise
    return True


async def _asql_swap(inner: Any, raw: Sequence[Any], repaired: Sequence[Any]) -> bool:
    """:func:`_sql_swap` on an async engine: the same statements, awaited."""
    store = _sql_session(inner)
    assert store is not None
    from sqlalchemy.ext.asyncio import AsyncSession

    async with store.engine.connect() as plain:
        connection = await plain.execution_options(isolation_level="AUTOCOMMIT")
        for statement in store.opening():
            await connection.exec_driver_sql(statement)
        try:
            async with AsyncSession(bind=connection) as session:
                if not store.holds(await session.scalars(store.select()), raw):
                    await connection.exec_driver_sql("ROLLBACK")
                    return False
                _at("compared")
                await session.execute(store.delete())
                _at("writing")
                session.add_all(store.rows(repaired))
                await session.flush()
            await connection.exec_driver_sql("COMMIT")
        except BaseException:
            with contextlib.suppress(Exception):
                await connection.exec_driver_sql("ROLLBACK")
            raise
    return True


# --- langchain-postgres (psycopg) ----------------------------------------------------------------


def _pg_statements(inner: Any) -> tuple[Any, Any, Any, Any]:
    """The lock, select, delete and insert of a langchain-postgres store's session."""
    from psycopg import sql

    table = sql.Identifier(inner._table_name)
    return (
        sql.SQL("LOCK TABLE {} IN SHARE ROW EXCLUSIVE MODE").format(table),
        sql.SQL("SELECT message FROM {} WHERE session_id = %s ORDER BY id").format(table),
        sql.SQL("DELETE FROM {} WHERE session_id = %s").format(table),
        sql.SQL("INSERT INTO {} (session_id, message) VALUES (%s, %s)").format(table),
    )


def _rows_of(inner: Any, messages: Sequence[Any]) -> list[tuple[Any, str]]:
    from langchain_core.messages import message_to_dict

    return [(inner._session_id, json.dumps(message_to_dict(m))) for m in messages]


def _pg_swap(inner: Any, raw: Sequence[Any], repaired: Sequence[Any]) -> bool:
    """The swap of a langchain-postgres store, in one transaction on its sync connection."""
    from langchain_core.messages import messages_from_dict
    from psycopg.pq import TransactionStatus

    connection = inner._connection
    lock, select, delete, insert = _pg_statements(inner)
    if connection.info.transaction_status == TransactionStatus.INTRANS:
        connection.commit()  # a read's transaction, as the store's own writes commit it
    with connection.transaction(), connection.cursor() as cursor:
        cursor.execute(lock)
        cursor.execute(select, (inner._session_id,))
        if not same(messages_from_dict([row[0] for row in cursor.fetchall()]), raw):
            return False  # leaving the block commits a transaction that wrote nothing
        _at("compared")
        cursor.execute(delete, (inner._session_id,))
        _at("writing")
        if repaired:
            cursor.executemany(insert, _rows_of(inner, repaired))
    return True


async def _apg_swap(inner: Any, raw: Sequence[Any], repaired: Sequence[Any]) -> bool:
    """:func:`_pg_swap` on the store's async connection."""
    from langchain_core.messages import messages_from_dict
    from psycopg.pq import TransactionStatus

    connection = inner._aconnection
    lock, select, delete, insert = _pg_statements(inner)
    if connection.info.transaction_status == TransactionStatus.INTRANS:
        await connection.commit()
    async with connection.transaction(), connection.cursor() as cursor:
        await cursor.execute(lock)
        await cursor.execute(select, (inner._session_id,))
        if not same(messages_from_dict([row[0] for row in await cursor.fetchall()]), raw):
            return False
        _at("compared")
        await cursor.execute(delete, (inner._session_id,))
        _at("writing")
        if repaired:
            await cursor.executemany(insert, _rows_of(inner, repaired))
    return True


# --- RedisChatMessageHistory (langchain-community) -----------------------------------------------


def _redis_swap(inner: Any, raw: Sequence[Any], repaired: Sequence[Any]) -> bool:
    """The swap of a Redis list (newest message first, as the store ``LPUSH``es): ``WATCH``
    the key, read and compare, then ``MULTI``/``DEL``/``LPUSH``/``EXEC``, which Redis runs only
    if no client wrote the key since the ``WATCH``. A key that moved writes nothing."""
    from langchain_core.messages import message_to_dict, messages_from_dict
    from redis.exceptions import WatchError

    key = inner.key
    with inner.redis_client.pipeline(transaction=True) as pipe:
        try:
            pipe.watch(key)
            items = pipe.lrange(key, 0, -1)
            if not same(messages_from_dict([json.loads(i) for i in items[::-1]]), raw):
                return False
            _at("compared")
            pipe.multi()
            pipe.delete(key)
            _at("writing")
            if repaired:
                pipe.lpush(key, *(json.dumps(message_to_dict(m)) for m in repaired))
                if inner.ttl:
                    pipe.expire(key, inner.ttl)
            pipe.execute()
        except WatchError:
            return False
    return True
