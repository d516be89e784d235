"""The strict server holds up to what a client may send: raw bytes over a socket.

A malformed ``Content-Length`` or chunk gets 400 (not a dropped connection and a traceback), a
length past the body limit gets 413 before anything is read or allocated, JSON nested deeper
than a provider takes gets the provider's 400, and the recorded requests are bounded. The server
is still only on 127.0.0.1.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from toolmend.testing import StrictProviderServer
from toolmend.testing import server as strict

CHAT = "/v1/chat/completions"
VALID = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def server() -> Iterator[StrictProviderServer]:
    with StrictProviderServer() as running:
        yield running


def exchange(server: StrictProviderServer, head: str, body: bytes = b"") -> tuple[int, Any, bool]:
    """Send a raw request (``head``: its lines, each ending in a newline); return its status,
    its JSON body and whether the server closed the connection after it."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as connection:
        connection.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
        reader = connection.makefile("rb")
        status = int(reader.readline().split()[1])
        headers: dict[str, str] = {}
        while (line := reader.readline().decode().strip()) != "":
            name, _, value = line.partition(":")
            headers[name.lower()] = value.strip()
        payload = json.loads(reader.read(int(headers["content-length"])))
        return status, payload, headers.get("connection") == "close" and reader.read(1) == b""


def post(length: str, extra: str = "") -> str:
    return f"POST {CHAT} HTTP/1.1\nHost: x\nContent-Type: application/json\n{length}{extra}"


@pytest.mark.parametrize("length", ["abc", "-5", "1e3", "12 34", " "], ids=repr)
def test_a_malformed_length_is_a_400(
    server: StrictProviderServer, length: str, capfd: pytest.CaptureFixture[str]
) -> None:
    status, payload, closed = exchange(server, post(f"Content-Length: {length}\n"), b"{}")
    assert status == 400 and closed
    assert "Content-Length" in payload["error"]["message"]
    assert "Traceback" not in capfd.readouterr().err


def test_two_different_lengths_are_a_400(server: StrictProviderServer) -> None:
    status, _, _ = exchange(server, post("Content-Length: 2\nContent-Length: 3\n"), b"{}")
    assert status == 400


@pytest.mark.parametrize("chunk", [b"zz\r\n{}\r\n0\r\n\r\n", b"-2\r\n{}\r\n0\r\n\r\n"])
def test_a_bad_chunk_size_is_a_400(
    server: StrictProviderServer, chunk: bytes, capfd: pytest.CaptureFixture[str]
) -> None:
    status, payload, closed = exchange(server, post("Transfer-Encoding: chunked\n"), chunk)
    assert status == 400 and closed
    assert "chunk" in payload["error"]["message"]
    assert "Traceback" not in capfd.readouterr().err


def test_a_huge_length_is_a_413_before_anything_is_read(server: StrictProviderServer) -> None:
    """No body is sent: the answer comes from the header alone, with no allocation of it."""
    status, payload, closed = exchange(server, post("Content-Length: 1000000000000\n"))
    assert status == 413 and closed
    assert str(strict.MAX_BODY) in payload["error"]["message"]
    assert server.requests == []


def test_the_body_limit_is_configurable_and_holds_for_chunks() -> None:
    body = json.dumps({**VALID, "pad": "x" * 2000}).encode()
    with StrictProviderServer(max_body=1000) as small:
        assert exchange(small, post(f"Content-Length: {len(body)}\n"), body)[0] == 413
        chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        assert exchange(small, post("Transfer-Encoding: chunked\n"), chunked)[0] == 413
        fits = json.dumps(VALID).encode()
        assert exchange(small, post(f"Content-Length: {len(fits)}\n"), fits)[0] == 200


def test_an_anthropic_request_too_large_gets_anthropics_type(server: StrictProviderServer) -> None:
    head = "POST /v1/messages HTTP/1.1\nHost: x\nContent-Length: 99999999999\n"
    status, payload, _ = exchange(server, head)
    assert status == 413 and payload["error"]["type"] == "request_too_large"


def test_a_chunked_body_is_read(server: StrictProviderServer) -> None:
    body = json.dumps(VALID).encode()
    chunked = b"%x;ext=1\r\n%s\r\n0\r\nX-Trailer: 1\r\n\r\n" % (len(body), body)
    assert exchange(server, post("Transfer-Encoding: chunked\n"), chunked)[0] == 200
    assert server.last_request.history == VALID["messages"]


def nested(depth: int) -> bytes:
    """A chat body whose deepest array sits ``depth`` levels down (the body is level 1)."""
    inner = "[" * (depth - 1) + "]" * (depth - 1)
    return (json.dumps(VALID)[:-1] + ', "metadata": ' + inner + "}").encode()


@pytest.mark.parametrize("depth", [strict.MAX_DEPTH + 1, 1000, 100_000])
def test_json_nested_too_deep_is_the_providers_400(
    server: StrictProviderServer, depth: int, capfd: pytest.CaptureFixture[str]
) -> None:
    body = nested(depth)
    status, payload, _ = exchange(server, post(f"Content-Length: {len(body)}\n"), body)
    assert status == 400
    assert "nested too deeply" in payload["error"]["message"]
    assert payload["error"]["type"] == "invalid_request_error"  # OpenAI's envelope
    assert server.last_request.status == 400 and server.last_request.body is None
    assert "Traceback" not in capfd.readouterr().err


def test_json_at_the_depth_limit_is_judged(server: StrictProviderServer) -> None:
    body = nested(strict.MAX_DEPTH)
    assert exchange(server, post(f"Content-Length: {len(body)}\n"), body)[0] == 200
    with StrictProviderServer(max_depth=10) as shallow:
        assert exchange(shallow, post(f"Content-Length: {len(body)}\n"), body)[0] == 400


def test_the_recorded_requests_are_bounded() -> None:
    with StrictProviderServer(max_requests=3) as server:
        for n in range(5):
            body = json.dumps({**VALID, "n": n}).encode()
            assert exchange(server, post(f"Content-Length: {len(body)}\n"), body)[0] == 200
        assert [r.body["n"] for r in server.requests] == [2, 3, 4]
        assert server.last_request.body["n"] == 4
    assert StrictProviderServer()._records.maxlen == strict.MAX_REQUESTS
    assert StrictProviderServer(max_requests=None)._records.maxlen is None


@pytest.mark.parametrize(
    "fields", [{"max_body": -1}, {"max_depth": 0}, {"max_requests": 0}], ids=str
)
def test_limits_out_of_range_are_refused(fields: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="StrictProviderServer needs"):
        StrictProviderServer(**fields)


def test_it_listens_on_loopback_only(server: StrictProviderServer) -> None:
    assert server._http is not None
    assert server._http.server_address[0] == "127.0.0.1"


@pytest.mark.parametrize("coding", ["gzip, chunked", "gzip", "identity"])
def test_a_transfer_coding_it_cannot_read_is_a_400_and_the_connection_ends(
    server: StrictProviderServer, coding: str
) -> None:
    """A body framed by a coding the server does not decode is refused, not taken as empty:
    its bytes were read as the next request on the connection."""
    body = json.dumps(VALID).encode()
    framed = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    status, payload, closed = exchange(server, post(f"Transfer-Encoding: {coding}\n"), framed)
    assert status == 400 and closed
    assert "Transfer-Encoding" in payload["error"]["message"]
    assert server.requests == []
