"""A real LiteLLM Proxy stays live while it repairs a long request, and fails open whatever
``toolmend`` the proxy's own ``sys.path`` finds first.

One ``litellm --config`` process in front of the strict server, started the way an operator
might: from a working directory whose ``../..`` holds an empty folder named ``toolmend``. The
proxy puts ``../..`` first on ``sys.path``, so ``import toolmend`` finds that folder (a namespace
package) before the installed toolmend, when toolmend is served by an import hook as a default
editable install serves it (``support.shadow`` sets that up, whatever this environment's install
is): the hooks must not look anything up on the module ``toolmend`` at request time. Its callback is toolmend's own, made slow on purpose: the repair of
a long history holds its thread for :data:`HOLD` seconds. Held on the event loop, every other
client (``/health/liveliness``) would wait that long; off the loop they do not.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolmend.testing import StrictProviderServer

from support import litellm_proxy
from support.hook_entries import chat_broken
from support.shadow import child_env

HOLD = 4.0
"""How long the test callback's repair of a long history holds its thread, in seconds."""

LONG = 300
"""Tool turns in the long request: 900 items, past the 500 from which the hook offloads."""

_HANDLER = '''"""Test-only: toolmend's proxy handler whose repair of a long history is slow."""

import os
import time

import toolmend
from toolmend.integrations.litellm import ToolMend

with open(os.environ["TOOLMEND_TEST_SEEN"], "w") as seen:  # which toolmend the proxy found
    seen.write(repr(getattr(toolmend, "__file__", None)))


class SlowToolMend(ToolMend):
    # the proxy calls this hook only when the leaf class defines it (its own __dict__)
    async_post_call_response_headers_hook = ToolMend.async_post_call_response_headers_hook

    def _repair(self, messages, **kwargs):
        if len(messages) >= 100:
            time.sleep(float(os.environ["TOOLMEND_TEST_HOLD"]))
        return super()._repair(messages, **kwargs)


handler = SlowToolMend()
'''

_CONFIG = """model_list:
  - model_name: my-deepseek
    litellm_params:
      model: deepseek/deepseek-chat
      api_base: os.environ/TOOLMEND_DEEPSEEK_BASE
      api_key: t
litellm_settings:
  callbacks: slow_toolmend.handler
  num_retries: 0
general_settings:
  master_key: sk-toolmend
"""


@pytest.fixture(scope="module")
def server() -> Iterator[StrictProviderServer]:
    with StrictProviderServer() as running:
        yield running


@pytest.fixture(scope="module")
def proxy(
    server: StrictProviderServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    """The proxy's base URL and the file naming the ``toolmend`` it imported."""
    reason = litellm_proxy.unavailable()
    if reason:
        pytest.skip(reason)
    outer = tmp_path_factory.mktemp("outer")
    (outer / "toolmend").mkdir()  # what ../.. of the proxy's working directory holds
    folder = outer / "ops" / "proxy"
    folder.mkdir(parents=True)
    (folder / "slow_toolmend.py").write_text(_HANDLER)
    (folder / "config.yaml").write_text(_CONFIG)
    running = litellm_proxy.Proxy(
        folder / "config.yaml",
        folder,
        {
            "TOOLMEND_DEEPSEEK_BASE": server.openai_base_url,
            "TOOLMEND_TEST_HOLD": str(HOLD),
            "TOOLMEND_TEST_SEEN": str(folder / "seen.txt"),
            "TOOLMEND_BUDGET_SECONDS": "60",  # the hold is waited for: the request is repaired
            **child_env(outer / "boot"),  # toolmend served as a default editable install would
        },
    )
    try:
        running.wait_ready(90)
        yield running.base, folder / "seen.txt"
    finally:
        running.stop()


post = litellm_proxy.post


def long_history(turns: int) -> list[dict[str, Any]]:
    """An agent run of ``turns`` tool turns with a lost result's orphan in the middle."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for turn in range(turns):
        call = {"id": f"call_{turn}", "type": "function"}
        call["function"] = {"name": "lookup", "arguments": json.dumps({"q": turn})}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call_{turn}", "content": "ok"})
    messages.insert(turns, {"role": "tool", "tool_call_id": "call_lost", "content": "late"})
    return messages


@pytest.mark.slow
def test_a_shadowing_toolmend_folder_does_not_break_the_proxy(
    server: StrictProviderServer, proxy: tuple[str, Path]
) -> None:
    base, seen = proxy
    assert seen.read_text() == "None"  # the proxy's toolmend is the empty namespace package
    server.clear()
    status, headers, body = post(base, {"model": "my-deepseek", "messages": chat_broken()})
    assert status == 200, body  # repaired, not the 400 of a hook failing at request time
    assert headers["x-toolmend-changes"].startswith("moved_message@2")
    assert [r.status for r in server.requests] == [200]


@pytest.mark.slow
def test_the_proxy_answers_others_while_it_repairs_a_long_request(
    server: StrictProviderServer, proxy: tuple[str, Path]
) -> None:
    base, _ = proxy
    latencies: list[float] = []
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            started = time.perf_counter()
            urllib.request.urlopen(base + "/health/liveliness", timeout=60).read()
            latencies.append(time.perf_counter() - started)
            time.sleep(0.02)

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        started = time.perf_counter()
        status, headers, body = post(base, {"model": "my-deepseek", "messages": long_history(LONG)})
        took = time.perf_counter() - started
    finally:
        done.set()
        poller.join()
    assert status == 200, body
    assert "dropped_orphan_result" in headers["x-toolmend-changes"]
    assert took >= HOLD  # the slow repair was on the request's path
    assert len(latencies) >= 5, latencies  # the poller ran through the hold
    assert max(latencies) < HOLD / 4, max(latencies)  # held on the loop, one would wait HOLD


_SHADOWED = '''"""Every hook, with an empty folder named toolmend first on sys.path (a namespace package)."""
import asyncio
import json
import sys

sys.path.insert(0, sys.argv[1])  # the folder holding the empty toolmend/, as the proxy's ../..
sys.path.insert(1, sys.argv[2])  # tests/, for support.hook_entries

import toolmend

from toolmend.testing import StrictProviderServer
from support.hook_entries import HOOKS, langchain_broken, outcome

seen = {"toolmend": repr(getattr(toolmend, "__file__", None))}
with StrictProviderServer() as server:
    for hook in HOOKS:
        got = outcome(hook, server, hook.broken(), {})
        seen[hook.name] = [got.error, list(got.statuses)]

from agents import Agent
from agents.run_config import CallModelData, ModelInputData
from google.adk.models.llm_request import LlmRequest
from google.genai import types

from toolmend.integrations import adk, langgraph, openai_agents

items = [
    {"role": "user", "content": "Weather in Paris?"},
    {"type": "function_call_output", "call_id": "call_gone", "output": "21 C"},
    {"role": "user", "content": "And in Rome?"},  # (a newest orphan would be kept as text)
]
data = CallModelData(ModelInputData(input=items, instructions=None), Agent("a"), None)
seen["agents"] = len(openai_agents.call_model_input_filter(data).input)
request = LlmRequest(
    model="gemini-2.5-flash",
    contents=[
        types.Content(role="user", parts=[types.Part.from_function_response(name="f", response={})]),
        types.Content(role="user", parts=[types.Part(text="hi")]),
    ],
)
asyncio.run(adk.ToolMendPlugin().before_model_callback(callback_context=None, llm_request=request))
seen["adk"] = len(request.contents)
hook = langgraph.ToolMendPreModelHook(provider="openai")
seen["langgraph"] = len(hook({"messages": langchain_broken()})["llm_input_messages"])
print(json.dumps(seen))
'''


@pytest.mark.slow
def test_every_hook_repairs_with_a_toolmend_namespace_package_first_on_the_path(
    tmp_path: Path,
) -> None:
    """The proxy's case for every hook, in a subprocess: ``import toolmend`` finds an empty
    folder (a namespace package, without toolmend's names), and each hook still repairs."""
    import subprocess
    import sys

    (tmp_path / "toolmend").mkdir()
    script = tmp_path / "shadowed.py"
    script.write_text(_SHADOWED)
    tests = Path(__file__).resolve().parent
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path), str(tests)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={
            **__import__("os").environ,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            **child_env(tmp_path / "boot"),
        },
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen.pop("toolmend") == "None"  # the namespace package, without toolmend's names
    assert seen.pop("agents") == 2 and seen.pop("adk") == 1, seen  # the orphans dropped
    assert seen.pop("langgraph") > 0
    assert seen == {name: [None, [200]] for name in seen}, seen  # every hook: repaired, accepted
