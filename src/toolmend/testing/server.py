"""The strict provider server: a real HTTP server that judges every history like the provider.

It runs :class:`http.server.ThreadingHTTPServer` on 127.0.0.1 in a daemon thread of the calling
process, so a test points a real SDK client at it (``base_url=``) and nothing leaves the
machine. Each POST is routed by its path, exactly as the real services lay them out:

==============================================  ==========  =================  ===============
path                                            API         toolmend format    native provider
==============================================  ==========  =================  ===============
``/v1/chat/completions``                        chat        ``openai``         ``openai``
``/v1/responses``                               responses   ``openai-responses`` ``openai``
``/v1/messages``                                messages    ``anthropic``      ``anthropic``
``/v1beta/models/{model}:generateContent``      gemini      ``gemini``         ``gemini``
``/v1beta/models/{model}:streamGenerateContent`` gemini     ``gemini``         ``gemini``
``/model/{modelId}/converse``                   converse    ``bedrock``        ``bedrock``
``/model/{modelId}/converse-stream``            converse    ``bedrock``        ``bedrock``
==============================================  ==========  =================  ===============

(Only the end of the path counts, so ``/v1/`` may be missing or another prefix may come first,
as gateways and LiteLLM's ``api_base`` produce; Vertex AI's
``/v1/projects/{p}/locations/{l}/publishers/google/models/{model}:generateContent`` is the Gemini
route.) ``POST .../token`` answers as an OAuth token endpoint with a fixed access token, so SDKs
that refresh Google credentials (LiteLLM's ``vertex_ai`` with ``authorized_user`` credentials
whose ``token_uri`` points here) get one offline; it is not recorded.

The history (``messages``, ``input`` or ``contents``) goes through
``toolmend.check(history, provider=<profile>, format=<format>)``; a problem gets HTTP 400 with
that provider's error body (:mod:`toolmend.testing.errors`), no problem gets 200 with the next
scripted :class:`~toolmend.testing.Reply` (:mod:`toolmend.testing.wire`).

Which provider's rules: the first of

1. the ``X-Toolmend-Provider`` request header;
2. a provider name as the first path segment (``/deepseek/v1/chat/completions``; see
   :meth:`StrictProviderServer.base_url_for`);
3. a provider name before a slash in the body's ``model`` (``"deepseek/deepseek-chat"``);
4. the server's ``provider=`` argument;
5. on the chat route, a model name only one provider serves (``deepseek-chat`` and
   ``deepseek-reasoner``; ``mistral-*``, ``codestral-*``, ``devstral-*`` and the other Mistral
   families), so LiteLLM's ``model="mistral/..."`` is judged as Mistral without more setup;
6. the route's native provider (table above).

The provider's variant then follows the request, as the service's own checks do: a Gemini 3
model (``gemini-3*``, ``gemini-*-latest``; not ``gemini-3-pro-image*``) is judged with
``gemini-3`` (thought signatures), an Anthropic request with ``thinking`` on with
``anthropic-thinking`` (``anthropic-thinking-no-prefill`` for a Claude model without prefill,
``claude-opus-4-6``: a final assistant message is refused with thinking on too),
``deepseek-reasoner`` with ``deepseek-reasoner``, a Responses request for an OpenAI
reasoning model (``o3``, ``gpt-5*``, ...) with ``openai-responses-reasoning`` (a
``function_call`` sent by its ``fc_`` id needs its reasoning item) and a Converse request for a
Llama or Mistral model (``meta.*``, ``us.meta.*``, ``mistral.*``) with ``bedrock-tools-alone``
(no text beside ``toolUse``), one for a Claude model without prefill
(``us.anthropic.claude-opus-4-6-v1``) with ``bedrock-no-prefill``.

A route whose toolmend format is not available answers 200 without judging and records
``judged=False``.

Many clients at once: every connection gets its own thread, and the listen backlog is
:data:`LISTEN_BACKLOG` (1,024; the kernel caps it at ``net.core.somaxconn``) instead of the
standard library's 5, with which a LiteLLM proxy under 32 clients saw ``Connection reset by
peer``. ``tests/test_strict_server_load.py`` connects 256 clients at the same instant, each
posting a history, and requires every one answered with no connect waiting for a resent SYN
(``docs/testing-server.md`` has the figures).

What a client may send is bounded, as at a provider: a malformed ``Content-Length`` or chunk
(or a ``Transfer-Encoding`` other than ``chunked``) gets 400, a body past ``max_body``
(:data:`MAX_BODY`, 32 MiB) gets 413 before it is read (a huge ``Content-Length`` allocates
nothing), JSON nested deeper than ``max_depth`` (:data:`MAX_DEPTH`, 100 levels) gets the route's
400, and :attr:`StrictProviderServer.requests` keeps the newest ``max_requests``
(:data:`MAX_REQUESTS`, 1,000). It only ever listens on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal
from urllib.parse import parse_qsl, unquote, urlsplit

from .._api import check, read_history
from .._report import InvalidHistoryError, Problem, UnknownNameError
from .._routing import provider_for_model, request_profile
from ..formats import names as format_names
from ..profiles import get_profile
from . import errors, wire
from .replies import IdMaker, Reply, as_replies, as_reply

__all__ = ["ROUTES", "RecordedRequest", "Refusal", "Route", "StrictProviderServer"]

PROVIDER_HEADER = "x-toolmend-provider"
"""The request header that picks the provider profile for one request."""

_SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key", "cookie"}
)
_SECRET_QUERY = frozenset({"key", "api_key"})


@dataclass(frozen=True)
class Route:
    """One API the server speaks: where its history sits and whose rules apply by default."""

    api: str
    """``"chat"``, ``"responses"``, ``"messages"`` or ``"gemini"``."""
    format: str
    """The toolmend format name of its history."""
    history_key: str
    """The body key holding the history."""
    native: tuple[str, ...]
    """The provider profiles that apply when nothing else picks one, best first."""


ROUTES: Mapping[str, Route] = {
    "chat": Route("chat", "openai", "messages", ("openai",)),
    "responses": Route("responses", "openai-responses", "input", ("openai-responses", "openai")),
    "messages": Route("messages", "anthropic", "messages", ("anthropic",)),
    "gemini": Route("gemini", "gemini", "contents", ("gemini",)),
    "converse": Route("converse", "bedrock", "messages", ("bedrock",)),
}
"""Every API the server speaks, by name."""

_GEMINI_PATH = re.compile(
    r"/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)$"
)
_CONVERSE_PATH = re.compile(r"/model/(?P<model>[^/]+)/(?P<method>converse|converse-stream)$")
_STREAM_METHODS = frozenset({"streamGenerateContent", "converse-stream"})
LISTEN_BACKLOG = 1024
"""The server socket's listen backlog: how many connections may wait to be accepted."""
MAX_BODY = 32 * 1024 * 1024
"""The default body limit in bytes (32 MiB, Anthropic's request limit): past it, 413."""
MAX_DEPTH = 100
"""The default nesting limit of a JSON body (the protobuf JSON parser Google's APIs use stops at
100 levels): deeper, 400."""
MAX_REQUESTS = 1000
"""How many requests the server remembers by default (:attr:`StrictProviderServer.requests`)."""
_LINE = 4096
"""The longest chunk-size or trailer line read, in bytes."""
_TOKEN = {"access_token": "ya29.toolmend-strict", "expires_in": 3600, "token_type": "Bearer"}
"""What ``POST .../token`` answers (an OAuth token response)."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received, and what it answered.

    Headers are lower-cased and never include credentials (``authorization``, ``x-api-key``,
    ``x-goog-api-key``, ...); neither does ``query`` (Gemini's ``key``).
    """

    method: str
    path: str
    """The path without the query string."""
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: Any
    """The parsed JSON body (``None`` when it was not JSON)."""
    api: str | None
    """The route's API name, ``None`` for an unknown path."""
    provider: str | None
    """The provider profile the history was judged with."""
    format: str | None
    model: str | None
    stream: bool
    judged: bool
    """False when the route's format is not available in this toolmend, so nothing was checked."""
    problems: tuple[Problem, ...]
    """What ``toolmend.check`` found; the 400 body carries the first one's provider error."""
    status: int
    """The HTTP status sent."""
    error: str | None
    """The error message sent with a non-200 status."""
    reply: Reply | None
    """The reply sent with a 200."""
    call_ids: tuple[str, ...]
    """The tool call ids of the reply, as sent (empty strings for Gemini)."""
    refused: bool = False
    """Whether a :class:`Refusal` answered it (a rule toolmend's profiles do not hold)."""

    @property
    def accepted(self) -> bool:
        """Whether the server answered 200."""
        return self.status == 200

    @property
    def history(self) -> Any:
        """The history the request carried (``messages``, ``input`` or ``contents``)."""
        route = ROUTES.get(self.api or "")
        if route is None or not isinstance(self.body, dict):
            return None
        return self.body.get(route.history_key)


@dataclass(frozen=True)
class Refusal:
    """A rule toolmend does not know, played by the server: a history its profile accepts is
    refused all the same with ``message``, in the route's provider's own error envelope.

    It stands for what a real provider adds before toolmend has the rule, so that a hook's
    answer to such a 400 (:mod:`toolmend.integrations.rescue`) is tested end to end.
    """

    message: str
    """The provider's error text to answer with."""
    when: Literal["tools", "always"] = "tools"
    """``"tools"``: only a history that holds a tool call or a tool result (in any form the
    route's format reads as one); ``"always"``: every request the profile accepts."""
    times: int | None = None
    """Refuse only the first ``times`` such requests (``None``: every one)."""
    status: int = 400
    """The HTTP status to answer with."""

    def __post_init__(self) -> None:
        if self.when not in ("tools", "always"):
            raise ValueError(f"Refusal.when must be 'tools' or 'always', got {self.when!r}")
        if self.times is not None and self.times < 1:
            raise ValueError(f"Refusal.times must be at least 1 (or None), got {self.times!r}")
        if not 400 <= self.status <= 599:
            raise ValueError(f"Refusal.status must be an error status, got {self.status!r}")


@dataclass(frozen=True)
class _Outcome:
    status: int
    content_type: str
    payload: bytes
    headers: tuple[tuple[str, str], ...] = ()


class _HTTPServer(ThreadingHTTPServer):
    """Keeps the open connections so that ``stop`` can close idle keep-alive ones at once.

    One thread per connection; the listen backlog is :data:`LISTEN_BACKLOG`, not the standard
    library's 5, so a burst of clients waits in the kernel's accept queue instead of being
    reset (the kernel caps it at ``net.core.somaxconn``)."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = LISTEN_BACKLOG

    def __init__(self, owner: StrictProviderServer, address: tuple[str, int]) -> None:
        self.owner = owner
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self.connections_lock:
            open_now = list(self.connections)
        for connection in open_now:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "toolmend-strict-provider"
    timeout = 60
    disable_nagle_algorithm = True
    """TCP_NODELAY: headers and body go out in two writes, and with Nagle on, a keep-alive
    client's delayed ACK stalled every answer by ~40 ms."""
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the server records requests instead of logging them."""

    def _read_body(self) -> bytes:
        """The request body, read no further than the body limit: :class:`_RefusedError` (400) for
        a malformed ``Content-Length`` or chunk or a coding other than ``chunked``, (413) past
        the limit, before anything past it is read or allocated."""
        limit = self.server.owner.max_body
        coding = self.headers.get("transfer-encoding")
        if coding is not None and coding.strip().lower() != "chunked":
            # a coding it cannot decode: its framing unknown, the body would be read as the
            # next request on this connection
            raise _RefusedError(400, "Unsupported Transfer-Encoding in the request.")
        if coding is not None:
            chunks: list[bytes] = []
            total = 0
            while True:
                line = self.rfile.readline(_LINE + 1)
                text = line.split(b";")[0].strip()
                if len(line) > _LINE or not _HEX.fullmatch(text):
                    raise _RefusedError(400, "Invalid chunk size in the request body.")
                size = int(text, 16)
                if size == 0:
                    while self.rfile.readline(_LINE + 1) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    break
                total += size
                if total > limit:
                    raise _RefusedError(413, _too_large(limit))
                chunk = self.rfile.read(size)
                if len(chunk) < size or self.rfile.readline(_LINE + 1) not in (b"\r\n", b"\n"):
                    raise _RefusedError(400, "Invalid chunk in the request body.")
                chunks.append(chunk)
            return b"".join(chunks)
        lengths = self.headers.get_all("content-length") or []
        if not lengths:
            return b""
        if len(set(lengths)) > 1 or not all(_DIGITS.fullmatch(n.strip()) for n in lengths):
            raise _RefusedError(400, "Invalid Content-Length header.")
        length = int(lengths[0])
        if length > limit:
            raise _RefusedError(413, _too_large(limit))
        body = self.rfile.read(length) if length else b""
        if len(body) < length:
            raise _RefusedError(400, "The request body is shorter than its Content-Length.")
        return body

    def _send(self, outcome: _Outcome, *, close: bool = False) -> None:
        self.send_response(outcome.status)
        self.send_header("Content-Type", outcome.content_type)
        self.send_header("Content-Length", str(len(outcome.payload)))
        for name, value in outcome.headers:
            self.send_header(name, value)
        if close:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(outcome.payload)

    def _serve(self, method: str) -> None:
        try:
            raw = self._read_body() if method == "POST" else b""
        except _RefusedError as refused:  # the rest of the body is unread: the connection ends
            self.close_connection = True
            self._send(_refusal(refused, self.path), close=True)
            return
        headers = {name.lower(): value for name, value in self.headers.items()}
        try:
            outcome = self.server.owner._handle(method, self.path, headers, raw)
        except Exception as error:  # a bug here must reach the test as an answer, not a hang
            message = f"toolmend strict provider server failed: {type(error).__name__}: {error}"
            outcome = _json(500, {"error": {"message": message, "type": "server_error"}})
        self._send(outcome)

    def do_POST(self) -> None:
        self._serve("POST")

    def do_GET(self) -> None:
        self._serve("GET")


def _json(status: int, body: Any, headers: tuple[tuple[str, str], ...] = ()) -> _Outcome:
    return _Outcome(status, "application/json", json.dumps(body).encode("utf-8"), headers)


_DIGITS = re.compile(r"[0-9]{1,20}")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")


class _RefusedError(Exception):
    """A request refused while its body was read: the status and the message to send."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` (parsed JSON) nests more than ``limit`` arrays and objects deep; one
    pass without recursion, stopping at the first level past the limit."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        )
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _too_large(limit: int) -> str:
    return f"Request body too large: the limit is {limit} bytes."


def _refusal(refused: _RefusedError, target: str) -> _Outcome:
    """The answer to a request refused before its body was read, in the shape of its route's
    errors (an unknown path gets OpenAI's)."""
    api = _route_of(urlsplit(target).path)[0] or "chat"
    body = errors.error_body(api, ROUTES[api].native[0], refused.message)
    if refused.status == 413 and api == "messages":  # Anthropic's own type for it
        body["error"]["type"] = "request_too_large"
    return _json(refused.status, body)


class StrictProviderServer:
    """A local stand-in for the LLM APIs that answers HTTP 400 exactly where the provider would.

    **Parameters:**

    * **provider** - *(optional)* the provider profile to emulate on every route (``"deepseek"``,
      ``"mistral"``, ``"groq"``, ...). Left out, each route uses its own provider: OpenAI for
      ``/v1/chat/completions`` and ``/v1/responses``, Anthropic for ``/v1/messages``, Gemini for
      ``generateContent``. A request can still pick another (see the module docstring).
    * **replies** - *(optional)* scripted replies for the accepted requests, in order
      (:class:`~toolmend.testing.Reply` objects or plain strings).
    * **default_reply** - *(optional)* what an accepted request gets once the script is used
      up (default the text ``"OK"``).
    * **seed** - *(optional)* seed of the generated ids, so runs are reproducible.
    * **port** - *(optional)* the port to listen on; 0 (default) takes a free one
      (``toolmend serve --port N`` passes its own).
    * **max_body** - *(optional)* the body limit in bytes (default :data:`MAX_BODY`, 32 MiB):
      a longer body gets 413 before it is read.
    * **max_depth** - *(optional)* how deep a JSON body may nest (default :data:`MAX_DEPTH`,
      100 levels): deeper gets 400, as a provider answers.
    * **max_requests** - *(optional)* how many requests :attr:`requests` keeps, the newest
      (default :data:`MAX_REQUESTS`, 1,000; ``None`` keeps every one).
    * **refuse** - *(optional)* a rule toolmend does not know: an error text (every history
      with tool calls or results that the profile accepts gets 400 with it), a
      :class:`Refusal` or several (see :meth:`refuse`).

    >>> import json, urllib.request
    >>> from toolmend.testing import StrictProviderServer
    >>> with StrictProviderServer(provider="deepseek") as server:
    ...     request = urllib.request.Request(
    ...         server.openai_base_url + "/chat/completions",
    ...         data=json.dumps({"model": "deepseek-chat", "messages": [
    ...             {"role": "user", "content": "hi"},
    ...             {"role": "tool", "tool_call_id": "call_1", "content": "21 C"}]}).encode(),
    ...         headers={"Content-Type": "application/json"})
    ...     try:
    ...         urllib.request.urlopen(request)
    ...     except urllib.error.HTTPError as error:
    ...         print(error.code, json.load(error)["error"]["message"])
    400 Messages with role 'tool' must be a response to a preceding message with 'tool_calls'
    >>> server.last_request.problems[0].code
    'orphan_result'
    """

    def __init__(
        self,
        provider: str | None = None,
        *,
        replies: Iterable[Reply | str] = (),
        default_reply: Reply | str = "OK",
        seed: int | str | None = 0,
        port: int = 0,
        max_body: int = MAX_BODY,
        max_depth: int = MAX_DEPTH,
        max_requests: int | None = MAX_REQUESTS,
        refuse: str | Refusal | Iterable[Refusal] | None = None,
    ) -> None:
        if max_body < 0 or max_depth < 1 or (max_requests is not None and max_requests < 1):
            raise ValueError(
                "StrictProviderServer needs max_body >= 0, max_depth >= 1 and max_requests >= 1 "
                f"(or None), got {max_body!r}, {max_depth!r}, {max_requests!r}"
            )
        self.provider = get_profile(provider).name if provider is not None else None
        self._bind_port = port
        self.default_reply = as_reply(default_reply)
        self.max_body = max_body
        self.max_depth = max_depth
        self._queue: list[Reply] = as_replies(replies)
        self._conversations: dict[str, list[Any]] = {}
        self._records: deque[RecordedRequest] = deque(maxlen=max_requests)
        self._lock = threading.Lock()
        self._ids = IdMaker(seed)
        self._http: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._refusals: list[tuple[Refusal, list[int | None]]] = []
        if refuse is not None:
            for refusal in (refuse,) if isinstance(refuse, str | Refusal) else refuse:
                self.refuse(refusal)

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> StrictProviderServer:
        """Bind ``port`` (an ephemeral one by default) on 127.0.0.1 and serve in a daemon thread.
        Returns ``self``."""
        if self._http is not None:
            return self
        self._http = _HTTPServer(self, ("127.0.0.1", self._bind_port))
        self._thread = threading.Thread(
            target=self._http.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"toolmend-strict-provider:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, close every open connection and free the port. Safe to call twice."""
        http, thread = self._http, self._thread
        self._http = self._thread = None
        if http is None:
            return
        http.shutdown()
        http.close_connections()
        http.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> StrictProviderServer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        """Whether the server is serving."""
        return self._http is not None

    # --- addresses ------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The port it listens on (only while running)."""
        if self._http is None:
            raise RuntimeError("the strict provider server is not running; call start()")
        return int(self._http.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``: the root every route hangs from."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """``base_url + "/v1"``, for ``openai.OpenAI(base_url=...)`` and OpenAI-compatible
        clients (DeepSeek, Mistral, Groq, gateways)."""
        return self.base_url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """For ``anthropic.Anthropic(base_url=...)`` (the SDK adds ``/v1/messages``)."""
        return self.base_url

    @property
    def gemini_base_url(self) -> str:
        """For ``genai.Client(http_options={"base_url": ...})`` (the SDK adds ``/v1beta/...``)."""
        return self.base_url

    def base_url_for(self, provider: str) -> str:
        """``base_url + "/<provider>"``: every request under it is judged as ``provider``'s.

        ``openai.OpenAI(base_url=server.base_url_for("deepseek") + "/v1")`` talks to an emulated
        DeepSeek on a server whose other routes keep their own providers.
        """
        return f"{self.base_url}/{get_profile(provider).name}"

    # --- script and records ---------------------------------------------------------------------

    def script(self, replies: Iterable[Reply | str]) -> StrictProviderServer:
        """Queue replies for the next accepted requests, in order (rejected ones use none)."""
        items = as_replies(replies)
        with self._lock:
            self._queue.extend(items)
        return self

    def refuse(
        self,
        message: str | Refusal,
        *,
        when: Literal["tools", "always"] = "tools",
        times: int | None = None,
        status: int = 400,
    ) -> StrictProviderServer:
        """Refuse what the profile accepts with ``message``, a provider's error text for a rule
        toolmend does not model (or a :class:`Refusal`, whose fields win): histories with tool
        calls or results (``when="tools"``) or every request (``"always"``), the first
        ``times`` of them or all. Refusals are tried in the order added; the first that applies
        answers, in the route's provider's envelope (:mod:`toolmend.testing.errors`).

        >>> import openai
        >>> from toolmend.testing import StrictProviderServer
        >>> with StrictProviderServer() as server:
        ...     _ = server.refuse("Tool use is not enabled for this deployment.")
        ...     client = openai.OpenAI(api_key="test", base_url=server.openai_base_url,
        ...                            max_retries=0)
        ...     try:
        ...         client.chat.completions.create(model="gpt-4o", messages=[
        ...             {"role": "user", "content": "Weather?"},
        ...             {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1",
        ...              "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
        ...             {"role": "tool", "tool_call_id": "call_1", "content": "21 C"}])
        ...     except openai.BadRequestError as error:
        ...         print(error.status_code, error.body["message"])
        400 Tool use is not enabled for this deployment.
        """
        refusal = (
            message
            if isinstance(message, Refusal)
            else Refusal(message, when=when, times=times, status=status)
        )
        with self._lock:
            self._refusals.append((refusal, [refusal.times]))
        return self

    def _refusal_for(self, history: Any, format: str) -> Refusal | None:
        """The first refusal that applies to ``history`` (counted as used), or ``None``."""
        with self._lock:
            refusals = list(self._refusals)
        holds_tools: bool | None = None
        for refusal, left in refusals:
            if refusal.when == "tools":
                if holds_tools is None:
                    holds_tools = _holds_tools(history, format)
                if not holds_tools:
                    continue
            with self._lock:
                if left[0] is not None:
                    if left[0] < 1:
                        continue
                    left[0] -= 1
            return refusal
        return None

    @property
    def pending_replies(self) -> list[Reply]:
        """The scripted replies not sent yet."""
        with self._lock:
            return list(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        """The requests received so far, oldest first (a copy): every one, or the newest
        ``max_requests``."""
        with self._lock:
            return list(self._records)

    @property
    def last_request(self) -> RecordedRequest:
        """The most recent request; ``LookupError`` when there was none."""
        with self._lock:
            if not self._records:
                raise LookupError("the strict provider server has received no request")
            return self._records[-1]

    def clear(self) -> None:
        """Forget the recorded requests, the scripted replies not sent yet and the stored
        Responses conversations."""
        with self._lock:
            self._records.clear()
            self._queue.clear()
            self._conversations.clear()

    # --- handling -------------------------------------------------------------------------------

    def _handle(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> _Outcome:
        split = urlsplit(target)
        path = split.path
        query = {k: v for k, v in parse_qsl(split.query) if k not in _SECRET_QUERY}
        kept = {k: v for k, v in headers.items() if k not in _SECRET_HEADERS}
        if method == "POST" and path.endswith("/token"):
            return _json(200, _TOKEN)
        api, prefix, path_model, path_method = _route_of(path)
        record: dict[str, Any] = {
            "method": method,
            "path": path,
            "query": query,
            "headers": kept,
            "body": None,
            "api": api,
            "provider": None,
            "format": None,
            "model": path_model,
            "stream": False,
            "judged": False,
            "problems": (),
            "error": None,
            "reply": None,
            "call_ids": (),
        }
        too_deep = False
        try:
            body = json.loads(raw) if raw else None
            too_deep = _deeper_than(body, self.max_depth)
        except ValueError:
            body = None
        except RecursionError:  # past the interpreter's own limit, ~1,000 levels
            body, too_deep = None, True
        if too_deep:
            body = None
        record["body"] = body
        if api is None or method != "POST":
            message = f"Unknown request URL: {method} {path}."
            return self._finish(record, 404, message, _json(404, _not_found(message)))
        route = ROUTES[api]
        fallback = self.provider or _first_known(route.native) or route.native[0]
        if too_deep:
            message = f"The JSON body is nested too deeply (more than {self.max_depth} levels)."
            return self._reject(record, route, fallback, message)
        if not isinstance(body, dict):
            message = "We could not parse the JSON body of your request."
            return self._reject(record, route, fallback, message)
        model = path_model or body.get("model")
        record["model"] = model if isinstance(model, str) else None
        stream = path_method in _STREAM_METHODS or body.get("stream") is True
        record["stream"] = stream
        try:
            provider = self._provider_for(route, headers, prefix, record["model"])
            provider = _variant(provider, record["model"], body, route.format)
        except (UnknownNameError, InvalidHistoryError) as error:
            return self._reject(record, route, fallback, str(error))
        record["provider"] = provider
        record["format"] = route.format
        history = body.get(route.history_key)
        if history is None:
            message = f"Missing required parameter: '{route.history_key}'."
            return self._reject(record, route, provider, message)
        if api == "responses":
            history = _as_items(history)
            previous = body.get("previous_response_id")
            if previous is not None:
                with self._lock:
                    earlier = self._conversations.get(str(previous))
                if earlier is None:
                    message = f"Previous response with id '{previous}' not found."
                    payload = errors.error_body(
                        api,
                        provider,
                        message,
                        param="previous_response_id",
                        code="previous_response_not_found",
                    )
                    return self._finish(record, 400, message, _json(400, payload))
                history = [*earlier, *history] if isinstance(history, list) else history
        problems: list[Problem] = []
        judged = route.format in format_names() and _first_known((provider,)) is not None
        if judged:
            try:
                problems = check(history, provider=provider, format=route.format)
            except InvalidHistoryError as error:
                return self._reject(record, route, provider, str(error), judged=True)
        record["judged"] = judged
        if problems:
            record["problems"] = tuple(problems)
            record["error"] = problems[0].provider_error
            request_id = self._ids.prefixed("req_011C", 22)
            payload = errors.problem_body(api, provider, problems, request_id)
            return self._finish(record, 400, record["error"], _json(400, payload))
        refusal = self._refusal_for(history, route.format) if judged else None
        if refusal is not None:
            record["refused"] = True
            request_id = self._ids.prefixed("req_011C", 22)
            payload = errors.error_body(api, provider, refusal.message, request_id=request_id)
            return self._finish(
                record, refusal.status, refusal.message, _json(refusal.status, payload)
            )
        return self._answer(record, route, provider, body, raw, query, history)

    def _provider_for(
        self, route: Route, headers: Mapping[str, str], prefix: str | None, model: str | None
    ) -> str:
        chosen = headers.get(PROVIDER_HEADER)
        if chosen:
            return get_profile(chosen).name
        for candidate in (prefix, model.split("/", 1)[0] if model and "/" in model else None):
            if candidate and _first_known((candidate,)):
                return get_profile(candidate).name
        if self.provider is not None:
            return self.provider
        family = _family_of(model) if route.api == "chat" else None
        return family or _first_known(route.native) or route.native[0]

    def _reject(
        self,
        record: dict[str, Any],
        route: Route,
        provider: str,
        message: str,
        judged: bool = False,
    ) -> _Outcome:
        record["judged"] = judged
        payload = errors.error_body(route.api, provider, message)
        return self._finish(record, 400, message, _json(400, payload))

    def _finish(
        self, record: dict[str, Any], status: int, error: str | None, outcome: _Outcome
    ) -> _Outcome:
        record["status"] = status
        record["error"] = error
        if record["api"] == "converse" and status >= 400:
            kind = "ValidationException" if status == 400 else "ResourceNotFoundException"
            outcome = replace(outcome, headers=(*outcome.headers, ("x-amzn-ErrorType", kind)))
        with self._lock:
            self._records.append(RecordedRequest(**record))
        return outcome

    def _answer(
        self,
        record: dict[str, Any],
        route: Route,
        provider: str,
        body: dict[str, Any],
        raw: bytes,
        query: Mapping[str, str],
        history: Any,
    ) -> _Outcome:
        with self._lock:
            reply = self._queue.pop(0) if self._queue else self.default_reply
            if route.api == "messages":
                call_ids = tuple(self._ids.anthropic_tool_use() for _ in reply.calls)
            elif route.api == "gemini":
                call_ids = tuple("" for _ in reply.calls)
            elif route.api == "converse":
                call_ids = tuple(self._ids.prefixed("tooluse_", 22) for _ in reply.calls)
            else:
                call_ids = tuple(self._ids.tool_call(provider) for _ in reply.calls)
            answer = wire.Answer(
                reply=reply,
                model=record["model"] or "model",
                call_ids=call_ids,
                created=int(time.time()),
                prompt_tokens=max(1, len(raw) // 4),
                ids=self._ids,
            )
            if route.api == "responses":
                outcome = self._respond(answer, body, record["stream"], history)
            else:
                outcome = self._render(route.api, answer, body, record["stream"], query)
        record["reply"] = reply
        record["call_ids"] = call_ids
        return self._finish(record, 200, None, outcome)

    def _respond(
        self, answer: wire.Answer, body: Mapping[str, Any], stream: bool, history: list[Any]
    ) -> _Outcome:
        """A Responses API answer, kept for ``previous_response_id`` unless ``store`` is false
        (called under the lock)."""
        final = wire.responses_body(answer, self._ids.hex("resp_"), body)
        if body.get("store") is not False:
            self._conversations[final["id"]] = [*history, *final["output"]]
        if stream:
            return _Outcome(200, "text/event-stream", wire.responses_stream(final))
        return _json(200, final)

    def _render(
        self,
        api: str,
        answer: wire.Answer,
        body: Mapping[str, Any],
        stream: bool,
        query: Mapping[str, str],
    ) -> _Outcome:
        """The 200 body (called under the lock: the ids come from one generator)."""
        sse = "text/event-stream"
        if api == "chat":
            completion_id = self._ids.prefixed("chatcmpl-", 29)
            if stream:
                options = body.get("stream_options")
                usage = isinstance(options, dict) and options.get("include_usage") is True
                payload = wire.chat_stream(answer, completion_id, include_usage=usage)
                return _Outcome(200, sse, payload)
            return _json(200, wire.chat_body(answer, completion_id))
        if api == "messages":
            message_id = self._ids.prefixed("msg_01", 22)
            request_id = ("request-id", self._ids.prefixed("req_011C", 22))
            if stream:
                payload = wire.anthropic_stream(answer, message_id)
                return _Outcome(200, sse, payload, (request_id,))
            return _json(200, wire.anthropic_body(answer, message_id), (request_id,))
        if api == "converse":
            if stream:
                events = wire.converse_stream(answer)
                return _Outcome(200, "application/vnd.amazon.eventstream", events)
            return _json(200, wire.converse_body(answer))
        response_id = self._ids.prefixed("", 22)
        if stream:
            as_sse = query.get("alt") == "sse"
            payload = wire.gemini_stream(answer, response_id, sse=as_sse)
            return _Outcome(200, sse if as_sse else "application/json", payload)
        return _json(200, wire.gemini_body(answer, response_id))


def _holds_tools(history: Any, format: str) -> bool:
    """Whether ``history`` holds a tool call or a tool result, as ``format`` reads it."""
    try:
        skeleton = read_history(history, format)[1]
    except InvalidHistoryError:
        return False
    return bool(skeleton.calls or skeleton.results)


def _first_known(names: Iterable[str]) -> str | None:
    """The first name that is a provider profile in this toolmend, as its profile name."""
    for name in names:
        try:
            return get_profile(name).name
        except UnknownNameError:
            continue
    return None


def _variant(provider: str, model: str | None, body: Mapping[str, Any], format: str) -> str:
    """The profile of ``provider``'s API for the route's ``format`` that this request meets (see
    :func:`toolmend.request_profile`): DeepSeek's Responses route judges by
    ``deepseek-responses``."""
    return request_profile(provider, format=format, model=model, thinking=body.get("thinking"))


def _family_of(model: str | None) -> str | None:
    """The provider a Chat Completions model name belongs to, when only one serves it."""
    if not model:
        return None
    family = provider_for_model(model)
    return _first_known((family,)) if family else None


def _as_items(value: Any) -> Any:
    """A Responses ``input`` as a list of items (a bare string is one user message); anything
    else stays as it is, for ``check`` to reject."""
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return value


def _route_of(path: str) -> tuple[str | None, str | None, str | None, str | None]:
    """(API name, first path segment, model in the path, method in the path) for a request
    path."""
    segments = [segment for segment in path.split("/") if segment]
    prefix = segments[0] if segments else None
    found = _GEMINI_PATH.search(path)
    if found:
        return "gemini", prefix, found.group("model"), found.group("method")
    found = _CONVERSE_PATH.search(path)
    if found:
        return "converse", prefix, unquote(found.group("model")), found.group("method")
    if path.endswith("/chat/completions"):
        return "chat", prefix, None, None
    if path.endswith("/responses"):
        return "responses", prefix, None, None
    if path.endswith("/messages"):
        return "messages", prefix, None, None
    return None, prefix, None, None


def _not_found(message: str) -> dict[str, Any]:
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": None,
            "code": "unknown_url",
        }
    }
