"""The strict provider server under many connections at once (issue 24).

A LiteLLM proxy with 32 clients saw ``Connection reset by peer`` from the server while its
listen backlog was the standard library's default of 5. Here 256 real clients connect at the
same moment (every socket is connected before the first request is sent, so the server's accept
queue has to hold them all), then each posts a history over real HTTP on 127.0.0.1: every one
must get its answer, a 200 for a valid history and the provider's 400 for a broken one.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from typing import Any

from toolmend.testing import StrictProviderServer

CLIENTS = 256
RETRANSMITTED = 0.9
"""Seconds: a connect this slow waited for a dropped SYN to be sent again (Linux: after 1 s)."""


def _body(index: int) -> bytes:
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"question {index}"}]
    if index % 2:  # every other history is broken: a result without its call
        messages.append({"role": "tool", "tool_call_id": f"call_{index}", "content": "21 C"})
    return json.dumps({"model": "deepseek-chat", "messages": messages}).encode()


def _request(sock: socket.socket, index: int) -> int:
    """Post one history over ``sock`` (already connected) and return the HTTP status."""
    body = _body(index)
    head = (
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    sock.sendall(head.encode() + body)
    response = http.client.HTTPResponse(sock)
    response.begin()
    response.read()
    return response.status


def test_256_clients_connected_at_once_all_get_their_answer() -> None:
    statuses: dict[int, int] = {}
    failures: dict[int, str] = {}
    with StrictProviderServer(provider="deepseek") as server:
        # connect every client first, as fast as the loop goes: the server's accept queue
        # (the listen backlog) holds whatever its accept loop has not taken yet
        sockets, waits = [], []
        for _ in range(CLIENTS):
            began = time.monotonic()
            sockets.append(socket.create_connection(("127.0.0.1", server.port), timeout=30))
            waits.append(time.monotonic() - began)
        start = threading.Barrier(CLIENTS)

        def client(index: int) -> None:
            sock = sockets[index]
            try:
                start.wait()
                statuses[index] = _request(sock, index)
            except (OSError, http.client.HTTPException) as error:
                failures[index] = f"{type(error).__name__}: {error}"
            finally:
                sock.close()

        threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        recorded = len(server.requests)
    # the kernel completes a handshake without the server's help while the accept queue has
    # room; when it is full it drops the SYN and the client sends it again a second later
    # (with the standard library's backlog of 5, 42 of the 256 connects did)
    assert [round(wait, 2) for wait in waits if wait >= RETRANSMITTED] == []
    assert failures == {}
    assert len(statuses) == CLIENTS
    assert {i: s for i, s in statuses.items() if s != (400 if i % 2 else 200)} == {}
    assert recorded == CLIENTS
