"""Load a real LiteLLM Proxy with toolmend's callback, in front of the strict provider server.

Three processes on 127.0.0.1: the strict server (``toolmend.testing``, judging every history
as DeepSeek does), and two ``litellm --config`` proxies routing ``my-deepseek`` to it, one with
``callbacks: toolmend.integrations.litellm.proxy_handler`` and one without. Clients (threads,
each with its own keep-alive connection to each proxy) post ``--requests`` chat requests to
each proxy, ``--clients`` at a time:

* **with** the callback: the mixed set, half valid agent histories and half broken ones (a
  result without its call, a call without its result, a second result for one call, a user
  message between a call and its results, a result before its call). Every one must come back
  200: the callback repairs each broken history and the server accepts it.
* **without** the callback: the same requests with each history already repaired by
  ``toolmend.sanitize`` before it is sent, so the server does the same work and answers 200
  too, and the difference is the callback's own cost (a broken history would take LiteLLM's
  error path, which is not what is being compared).

The two run in alternating rounds of ``--round`` requests (which proxy goes first alternates
too), so drift on a busy machine hits both alike. ``--baseline empty`` gives the proxy without
toolmend a callback with the same two hooks doing nothing, which separates LiteLLM's own cost of
running a callback's hooks from toolmend's work in them. Printed: HTTP statuses, how many broken
histories the server accepted, how many the server refused, p50 and p99 latency and
throughput of each proxy, the throughput ratio with / without (target >= 0.95), and each
proxy's RSS (the process and its children) after the warm-up and at the end.

Run with plain Python: ``python benchmarks/load_proxy.py`` (``--requests 2000 --clients 32``
are the defaults; ``--json`` adds a line of machine-readable results). Needs
``pip install -e '.[test]'`` (the proxy's modules and the ``litellm`` command). Exits 1 when a
target is missed.
"""

from __future__ import annotations

import argparse
import copy
import http.client
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_core import agent_history

import toolmend

Message = dict[str, Any]
MASTER_KEY = "sk-toolmend-load"
PROVIDER = "deepseek"
RATIO_TARGET = 0.95
TOOLMEND_CALLBACK = "toolmend.integrations.litellm.proxy_handler"

_SERVER = """
import json, sys
from toolmend.testing import StrictProviderServer
with StrictProviderServer(provider="deepseek") as server:
    print(server.openai_base_url, flush=True)
    for _ in sys.stdin:
        records = server.requests
        print(json.dumps({
            "requests": len(records),
            "accepted": sum(r.accepted for r in records),
            "codes": sorted({p.code for r in records for p in r.problems}),
        }), flush=True)
"""
"""The strict server's process: prints its base URL, then, for each line on stdin, what it
has received so far (counts and problem codes only)."""

_EMPTY_CALLBACK = '''"""Toolmend's two LiteLLM hooks, doing nothing (``--baseline empty``)."""
from litellm.integrations.custom_logger import CustomLogger


class Empty(CustomLogger):
    async def async_pre_call_deployment_hook(self, kwargs, call_type):
        return None

    async def async_post_call_response_headers_hook(self, data, user_api_key_dict, response,
                                                    request_headers=None, litellm_call_info=None):
        return None


handler = Empty()
'''
"""LiteLLM's own cost of a callback with these hooks, without toolmend's work in them."""

_CONFIG = """model_list:
  - model_name: my-deepseek
    litellm_params:
      model: deepseek/deepseek-chat
      api_base: {base}
      api_key: t
litellm_settings:
  num_retries: 0
{callbacks}general_settings:
  master_key: {key}
"""


# --- histories ---------------------------------------------------------------------------------


def _blocks(history: list[Message]) -> list[tuple[int, int]]:
    """(index of an assistant message with calls, index after its last result)."""
    found = []
    for index, message in enumerate(history):
        if message.get("tool_calls"):
            end = index + 1
            while end < len(history) and history[end]["role"] == "tool":
                end += 1
            found.append((index, end))
    return found


def _orphan_result(history: list[Message], rnd: random.Random) -> list[Message]:
    users = [i for i, m in enumerate(history) if m["role"] == "user"]
    at = rnd.choice(users) + 1
    stray = {"role": "tool", "tool_call_id": f"call_stray{rnd.randrange(10**6)}", "content": "x"}
    return [*history[:at], stray, *history[at:]]


def _missing_result(history: list[Message], rnd: random.Random) -> list[Message]:
    _, end = rnd.choice(_blocks(history)[:-1])
    return [m for i, m in enumerate(history) if i != end - 1]


def _duplicate_result(history: list[Message], rnd: random.Random) -> list[Message]:
    _, end = rnd.choice(_blocks(history))
    return [*history[:end], copy.deepcopy(history[end - 1]), *history[end:]]


def _user_between(history: list[Message], rnd: random.Random) -> list[Message]:
    start, _ = rnd.choice(_blocks(history))
    interjection = {"role": "user", "content": "and also check the weather"}
    return [*history[: start + 1], interjection, *history[start + 1 :]]


def _result_before_call(history: list[Message], rnd: random.Random) -> list[Message]:
    start, end = rnd.choice(_blocks(history))
    moved = history[end - 1]
    rest = [m for i, m in enumerate(history) if i != end - 1]
    return [*rest[:start], moved, *rest[start:]]


BREAKERS: tuple[Callable[[list[Message], random.Random], list[Message]], ...] = (
    _orphan_result,
    _missing_result,
    _duplicate_result,
    _user_between,
    _result_before_call,
)


def requests_for(count: int, seed: int = 24) -> list[tuple[list[Message], list[Message], bool]]:
    """``count`` requests: (history sent with the callback, history sent without it, broken).

    Every other history is broken by one of :data:`BREAKERS` (checked: DeepSeek refuses it);
    the history sent without the callback is ``toolmend.sanitize`` of it (checked: accepted).
    """
    rnd = random.Random(seed)
    made = []
    for index in range(count):
        history = agent_history(rnd.randint(12, 40), seed=seed + index)
        if len(_blocks(history)) < 2:
            history += agent_history(24, seed=seed + index + count)[1:]
        if index % 2:
            history = BREAKERS[(index // 2) % len(BREAKERS)](history, rnd)
            assert toolmend.check(history, provider=PROVIDER), "a breaker left it valid"
        repaired = toolmend.sanitize(history, provider=PROVIDER)
        assert not toolmend.check(repaired, provider=PROVIDER)
        made.append((history, repaired, bool(index % 2)))
    return made


# --- processes ---------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _rss_kib(pid: int) -> int:
    """Resident memory of ``pid`` and all its descendants, in KiB (Linux ``/proc``)."""
    total = 0
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            with open(f"/proc/{current}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as children:
                    pending += [int(child) for child in children.read().split()]
        except (OSError, ValueError):
            continue
    return total


class Proxy:
    """One ``litellm --config`` process on 127.0.0.1."""

    def __init__(self, name: str, folder: Path, upstream: str, callback: str | None) -> None:
        executable = shutil.which("litellm", path=str(Path(sys.executable).parent))
        if executable is None:
            raise SystemExit("the `litellm` command is missing: pip install -e '.[test]'")
        self.name = name
        self.port = _free_port()
        config = folder / f"{name}.yaml"
        callbacks = f"  callbacks: {callback}\n" if callback else ""
        config.write_text(_CONFIG.format(base=upstream, callbacks=callbacks, key=MASTER_KEY))
        self.log = folder / f"{name}.log"
        with self.log.open("w") as output:
            command = [executable, "--config", str(config), "--host", "127.0.0.1"]
            self.process = subprocess.Popen(
                [*command, "--port", str(self.port)],
                cwd=folder,
                stdout=output,
                stderr=subprocess.STDOUT,
                env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "NO_DOCS": "True"},
            )

    def wait_ready(self, seconds: float = 90) -> None:
        deadline = time.monotonic() + seconds
        url = f"http://127.0.0.1:{self.port}/health/liveliness"
        while True:
            try:
                urllib.request.urlopen(url, timeout=1).read()
                return
            except (urllib.error.URLError, OSError):
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(
                        f"proxy {self.name} did not start:\n{self.log.read_text()[-3000:]}"
                    ) from None
                time.sleep(0.3)

    def rss_mib(self) -> float:
        return _rss_kib(self.process.pid) / 1024

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@contextmanager
def strict_server() -> Iterator[tuple[str, Callable[[], dict[str, Any]]]]:
    """The strict server in its own process: (its OpenAI base URL, a function for its counts)."""
    process = subprocess.Popen(
        [sys.executable, "-c", _SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    base = process.stdout.readline().strip()

    def counts() -> dict[str, Any]:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write("\n")
        process.stdin.flush()
        return dict(json.loads(process.stdout.readline()))

    try:
        yield base, counts
    finally:
        process.kill()
        process.wait()


# --- the clients -------------------------------------------------------------------------------


class Clients:
    """``count`` client threads; each keeps one keep-alive connection per proxy port."""

    def __init__(self, count: int) -> None:
        self.pool = ThreadPoolExecutor(count)
        self.local = threading.local()

    def _connection(self, port: int) -> http.client.HTTPConnection:
        connections = self.local.__dict__.setdefault("connections", {})
        if port not in connections:
            connections[port] = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        return connections[port]  # type: ignore[no-any-return]

    def post(self, port: int, body: bytes) -> tuple[int, float, bool]:
        """(status, seconds, whether the answer names toolmend's changes); status 0: no answer."""
        began = time.perf_counter()
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {MASTER_KEY}"}
        for attempt in (0, 1):
            connection = self._connection(port)
            try:
                connection.request("POST", "/v1/chat/completions", body, headers)
                response = connection.getresponse()
                response.read()
                changed = bool(response.getheader("x-toolmend-changes"))
                return response.status, time.perf_counter() - began, changed
            except (OSError, http.client.HTTPException):
                connection.close()  # a keep-alive connection the server closed: one retry
                self.local.connections.pop(port, None)
                if attempt:
                    return 0, time.perf_counter() - began, False
        raise AssertionError("unreachable")

    def run(self, port: int, bodies: list[bytes]) -> tuple[list[tuple[int, float, bool]], float]:
        """Post every body (``count`` at a time); the answers in order, and the wall time."""
        began = time.perf_counter()
        answers = list(self.pool.map(lambda body: self.post(port, body), bodies))
        return answers, time.perf_counter() - began


def _body(history: list[Message]) -> bytes:
    return json.dumps({"model": "my-deepseek", "messages": history}).encode()


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=2000, help="requests to each proxy")
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients")
    parser.add_argument("--round", type=int, default=200, help="requests per alternating round")
    parser.add_argument("--warmup", type=int, default=64, help="unmeasured requests first")
    parser.add_argument(
        "--baseline",
        choices=["none", "empty"],
        default="none",
        help="the proxy without toolmend has no callback (default), or one with the same two "
        "hooks doing nothing (what LiteLLM itself spends on such a callback)",
    )
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    options = parser.parse_args(argv)

    began = time.monotonic()
    requests = requests_for(options.requests)
    with_bodies = [_body(sent) for sent, _, _ in requests]
    without_bodies = [_body(repaired) for _, repaired, _ in requests]
    broken = [is_broken for _, _, is_broken in requests]
    folder = Path(tempfile.mkdtemp(prefix="toolmend-load-"))
    proxies: list[Proxy] = []
    with strict_server() as (upstream, counts):
        try:
            (folder / "empty_callback.py").write_text(_EMPTY_CALLBACK)
            with_proxy = Proxy("with", folder, upstream, TOOLMEND_CALLBACK)
            without_proxy = Proxy(
                "without",
                folder,
                upstream,
                "empty_callback.handler" if options.baseline == "empty" else None,
            )
            proxies = [with_proxy, without_proxy]
            for proxy in proxies:
                proxy.wait_ready()
            clients = Clients(options.clients)
            warm = min(options.warmup, len(requests))
            for proxy, bodies in ((with_proxy, without_bodies), (without_proxy, without_bodies)):
                warmed, _ = clients.run(proxy.port, bodies[:warm])
                assert all(status == 200 for status, _, _ in warmed), warmed
            warm_counts = counts()
            rss_start = {proxy.name: proxy.rss_mib() for proxy in proxies}

            answers: dict[str, list[tuple[int, float, bool]]] = {"with": [], "without": []}
            wall = {"with": 0.0, "without": 0.0}
            for number, start in enumerate(range(0, len(requests), options.round)):
                part = slice(start, start + options.round)
                turns = [
                    ("with", with_proxy, with_bodies),
                    ("without", without_proxy, without_bodies),
                ]
                for name, proxy, bodies in turns if number % 2 == 0 else turns[::-1]:
                    got, seconds = clients.run(proxy.port, bodies[part])
                    answers[name] += got
                    wall[name] += seconds
            rss_end = {proxy.name: proxy.rss_mib() for proxy in proxies}
            server = counts()
        finally:
            for proxy in proxies:
                proxy.stop()
    shutil.rmtree(folder, ignore_errors=True)

    figures: dict[str, Any] = {"requests": len(requests), "clients": options.clients}
    for name in ("with", "without"):
        got = answers[name]
        latencies = [seconds * 1000 for _, seconds, _ in got]
        figures[name] = {
            "non_200": sum(status != 200 for status, _, _ in got),
            "statuses": sorted({status for status, _, _ in got}),
            "p50_ms": round(_percentile(latencies, 0.50), 1),
            "p99_ms": round(_percentile(latencies, 0.99), 1),
            "throughput_rps": round(len(got) / wall[name], 1),
            "rss_start_mib": round(rss_start[name]),
            "rss_end_mib": round(rss_end[name]),
        }
    figures["broken_sent"] = sum(broken)
    figures["broken_repaired_and_accepted"] = sum(
        changed and status == 200
        for (status, _, changed), is_broken in zip(answers["with"], broken, strict=True)
        if is_broken
    )
    figures["server_requests"] = server["requests"] - warm_counts["requests"]
    figures["server_refused"] = server["requests"] - server["accepted"]
    figures["server_refusal_codes"] = server["codes"]
    # requests per second, unrounded: the same count went to each, so the ratio of wall times
    figures["ratio"] = round(wall["without"] / wall["with"], 3)
    figures["seconds"] = round(time.monotonic() - began, 1)

    figures["baseline"] = options.baseline
    baseline = "a do-nothing callback" if options.baseline == "empty" else "no callback"
    print(
        f"LiteLLM Proxy load: {len(requests)} requests to each proxy, {options.clients} clients, "
        f"rounds of {options.round} alternating ({figures['seconds']} s in all); the proxy "
        f"without toolmend has {baseline}"
    )
    print(f"{'':10}{'non-200':>8}{'p50 ms':>9}{'p99 ms':>9}{'req/s':>8}{'RSS MiB start->end':>21}")
    for name in ("with", "without"):
        row = figures[name]
        print(
            f"{name:10}{row['non_200']:>8}{row['p50_ms']:>9}{row['p99_ms']:>9}"
            f"{row['throughput_rps']:>8}{row['rss_start_mib']:>12} -> {row['rss_end_mib']}"
        )
    print(
        f"broken histories sent with the callback: {figures['broken_sent']}, repaired and "
        f"accepted: {figures['broken_repaired_and_accepted']}; the server got "
        f"{figures['server_requests']} requests and refused {figures['server_refused']}"
    )
    print(f"throughput with / without the callback: {figures['ratio']} (target >= {RATIO_TARGET})")
    if options.json:
        print(json.dumps(figures))
    met = (
        figures["with"]["non_200"] == 0
        and figures["without"]["non_200"] == 0
        and figures["broken_repaired_and_accepted"] == figures["broken_sent"]
        and figures["server_refused"] == 0
        and figures["ratio"] >= RATIO_TARGET
    )
    print("all targets met" if met else "TARGET MISSED")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
