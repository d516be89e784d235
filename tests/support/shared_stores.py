"""LangChain chat histories on the shared stores of issue 31, built from a plain spec.

A spec is a dict a test can hand to a writer process as JSON: ``kind`` (``"sql_postgres"``:
``SQLChatMessageHistory`` through SQLAlchemy and psycopg; ``"langchain_postgres"``:
langchain-postgres's ``PostgresChatMessageHistory`` on a psycopg connection; ``"redis"``:
langchain-community's ``RedisChatMessageHistory``; ``"sqlite"``: ``SQLChatMessageHistory`` on
a file), ``url`` (the server, or the SQLite file) and ``prefix`` (the Redis key prefix of the
test). Session names are turned into what each store wants (langchain-postgres takes UUIDs).
Every :func:`open_store` call builds a store object of its own, with its own connection.
"""

from __future__ import annotations

import uuid
import warnings
from typing import Any

__all__ = ["KINDS", "close_store", "open_store", "prepare", "session_id"]

KINDS = ("sql_postgres", "langchain_postgres", "redis")
"""The shared stores of issue 31 (``"sqlite"`` is also understood, as the reference)."""

TABLE = "message_store"


def session_id(spec: dict[str, Any], name: str) -> str:
    """The store's id for session ``name`` (a UUID derived from it for langchain-postgres)."""
    if spec["kind"] == "langchain_postgres":
        return str(uuid.uuid5(uuid.NAMESPACE_URL, name))
    return name


def prepare(spec: dict[str, Any]) -> None:
    """Create the store's table once, before writers race for it."""
    close_store(open_store(spec, "setup"))


def open_store(spec: dict[str, Any], name: str) -> Any:
    """A new store object for session ``name``, on a connection of its own."""
    kind, url = spec["kind"], spec["url"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # langchain-community's sunset
        if kind in ("sql_postgres", "sqlite"):
            from langchain_community.chat_message_histories import SQLChatMessageHistory

            return SQLChatMessageHistory(session_id(spec, name), connection=url)
        if kind == "redis":
            from langchain_community.chat_message_histories import RedisChatMessageHistory

            return RedisChatMessageHistory(
                session_id(spec, name), url=url, key_prefix=spec["prefix"]
            )
    if kind == "langchain_postgres":
        import psycopg
        from langchain_postgres import PostgresChatMessageHistory

        connection = psycopg.connect(url)
        PostgresChatMessageHistory.create_tables(connection, TABLE)
        return PostgresChatMessageHistory(TABLE, session_id(spec, name), sync_connection=connection)
    raise ValueError(f"unknown store kind {kind!r}")


def close_store(store: Any) -> None:
    """Close what :func:`open_store` opened."""
    engine = getattr(store, "engine", None)
    if engine is not None:
        store.session_maker.remove()
        engine.dispose()
    connection = getattr(store, "_connection", None)
    if connection is not None:
        connection.close()
    client = getattr(store, "redis_client", None)
    if client is not None:
        client.close()
