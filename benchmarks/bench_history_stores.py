"""Time a ``ToolMendHistory(write_back=True)`` read on PostgreSQL and Redis against the store's own.

The history is ``bench_langchain.py``'s: ``bench_core.py``'s agent history of 200 LangChain
messages, valid. Three reads of one session, each paired with the store's own read
(``store.messages``), run alternately:

* **write-back read, nothing to repair**: the usual read (the wrapper checks the history and
  returns it; the store is not written).
* **write-back read that swaps**: one orphan tool result is appended to the stored history
  before each timed read (outside the timing), so every read repairs the history and writes
  it back in one atomic swap (PostgreSQL: a transaction that locks the table, re-reads,
  deletes and inserts 200 rows; Redis: ``WATCH``, a re-read, ``MULTI``/``DEL``/``LPUSH``/
  ``EXEC``). This is the price of a read that heals the store, paid once per damage.
* the same, with ``write_back=False``: the repair is returned and the store is left as it is.

The stores: ``SQLChatMessageHistory`` on PostgreSQL (SQLAlchemy, psycopg), langchain-postgres's
``PostgresChatMessageHistory`` and langchain-community's ``RedisChatMessageHistory``, on servers
this script starts on 127.0.0.1 (``tests/support/servers.py``: Debian's ``postgresql`` and
``redis-server``) unless ``--postgres URL`` and ``--redis URL`` name running ones.

Run with plain Python: ``python benchmarks/bench_history_stores.py`` (``--quick`` for fewer
runs; ``--json`` adds a line of machine-readable results for ``run.py``: the ratio of the
write-back read with nothing to repair, the worst of the three stores, to the store's own).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import statistics
import sys
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent / "src"))  # the installed one first
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_core import agent_history
from bench_langchain import as_langchain, paired

import toolmend

TARGET = 1.10
"""The write-back read with nothing to repair, against the store's own read: the check of 200
messages (well under a millisecond) on top of the fastest store's read (Redis, about 8 ms on a
busy 2-core machine). SQLite's read, slower, has 1.05 (``bench_langchain.py``)."""


def stores(postgres: str, redis: str) -> dict[str, Any]:
    """A fresh session of each store, on its own connection."""
    import psycopg
    from langchain_community.chat_message_histories import (
        RedisChatMessageHistory,
        SQLChatMessageHistory,
    )
    from langchain_postgres import PostgresChatMessageHistory

    session = str(uuid.uuid4())
    connection = psycopg.connect(postgres.replace("postgresql+psycopg://", "postgresql://"))
    PostgresChatMessageHistory.create_tables(connection, "bench_store")
    return {
        "SQLChatMessageHistory, PostgreSQL": SQLChatMessageHistory(session, connection=postgres),
        "PostgresChatMessageHistory": PostgresChatMessageHistory(
            "bench_store", session, sync_connection=connection
        ),
        "RedisChatMessageHistory": RedisChatMessageHistory(session, url=redis, key_prefix="bench:"),
    }


def measure(store: Any, messages: list[Any], repeat: int) -> dict[str, float]:
    """Median milliseconds of the store's read and of each wrapper read (see the module)."""
    from langchain_core.messages import ToolMessage

    from toolmend.integrations.langchain import ToolMendHistory

    store.clear()
    store.add_messages(messages)
    healing = ToolMendHistory(store, provider="deepseek", write_back=True)
    plain = ToolMendHistory(store, provider="deepseek")
    assert healing.messages == store.messages
    out: dict[str, float] = {}
    own, wrapped = paired(lambda: store.messages, lambda: healing.messages, repeat)
    out["store"], out["write_back_clean"] = own * 1e3, wrapped * 1e3

    for name, history in (("write_back_swap", healing), ("repair_no_write", plain)):
        times: list[float] = []
        for _ in range(repeat):
            store.clear()
            store.add_messages([*messages, ToolMessage("stray", tool_call_id="call_stray")])
            start = time.perf_counter()
            _ = history.messages
            times.append(time.perf_counter() - start)
        out[name] = statistics.median(times) * 1e3
    assert store.messages != messages  # the last read without write-back left the orphan
    healing.messages  # noqa: B018 - and a write-back read removes it
    assert store.messages == messages
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    parser.add_argument("--json", action="store_true", help="a last line of JSON results")
    parser.add_argument("--postgres", help="a running PostgreSQL (SQLAlchemy URL, psycopg)")
    parser.add_argument("--redis", help="a running Redis (redis:// URL)")
    args = parser.parse_args()
    repeat = 30 if args.quick else 200
    warnings.simplefilter("ignore", DeprecationWarning)  # langchain-community's sunset

    from langchain_core.messages import AIMessage, HumanMessage

    logging.getLogger("toolmend").setLevel(logging.ERROR)  # one line per healed read otherwise
    messages = as_langchain(agent_history(200))
    while len(messages) < 200:  # plain turns up to exactly 200 messages, as bench_langchain.py
        messages.append(HumanMessage("and then?") if len(messages) % 2 else AIMessage("Done."))
    assert toolmend.check(messages, provider="deepseek") == []
    print(f"{len(messages)} LangChain messages, valid; median of {repeat} runs, in turn (ms)")

    with contextlib.ExitStack() as stack:
        postgres, redis = args.postgres, args.redis
        if postgres is None or redis is None:
            from support.servers import running_postgres, running_redis

            if postgres is None:
                server = stack.enter_context(running_postgres())
                postgres = server.url(server.new_database())
            if redis is None:
                redis = stack.enter_context(running_redis()).url
        worst = 0.0
        print(f"{'store':<36} {'store read':>10} {'write-back':>11} {'ratio':>7} "
              f"{'read+swap':>10} {'repair, no write':>17}")  # fmt: skip
        for name, store in stores(postgres, redis).items():
            got = measure(store, messages, repeat)
            ratio = got["write_back_clean"] / got["store"]
            worst = max(worst, ratio)
            print(
                f"{name:<36} {got['store']:>10.2f} {got['write_back_clean']:>11.2f} "
                f"{ratio:>6.3f}x {got['write_back_swap']:>10.2f} {got['repair_no_write']:>17.2f}"
            )
    print(f"target (write-back read, nothing to repair <= {TARGET}x): "
          f"{'met' if worst <= TARGET else 'MISSED'}")  # fmt: skip
    if args.json:
        what = f"write-back read on PostgreSQL/Redis, {len(messages)} messages, worst store"
        print(json.dumps({"ratio": worst, "target": TARGET, "what": what}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
