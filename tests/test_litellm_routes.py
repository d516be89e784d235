"""LiteLLM's other routes that carry a history: ``/v1/messages`` (``anthropic_messages``,
Anthropic-shaped) and ``/v1/responses`` (``aresponses`` / sync ``responses``, Responses items),
through real LiteLLM and real HTTP to the strict provider server.

A broken Claude-Code-style history (an interrupted ``tool_use`` with no result, a stale
``tool_result`` whose call is gone, text before the results in a user turn) and a broken
Responses ``input`` (an orphan ``function_call_output``, a ``function_call`` without output) go
to an Anthropic, an OpenAI and a Gemini deployment, and to an OpenAI-Responses and an Anthropic
one: each fails without the callback and is accepted with it, and the real tool results reach
the provider with their exact content, answering their call. LiteLLM serves a route the
deployment does not speak by translating it and firing the hook again: each client request is
reported once (one log line, one record). Then fail-open on the new routes, the pass
bookkeeping, and a real LiteLLM Proxy (one process with the callback, one without) with the
Anthropic and OpenAI SDKs pointed at it.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before LiteLLM is imported

import asyncio
import copy
import json
import logging
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import litellm
import openai
import pytest
from hypothesis import given, settings
from litellm.integrations.custom_logger import CustomLogger
from litellm.types.utils import CallTypes

import toolmend
import toolmend._fastpath
import toolmend._routing
from toolmend._fastpath import vouch
from toolmend._loops import quiet_live_run
from toolmend.integrations import litellm as hook
from toolmend.integrations.litellm import ToolMend
from toolmend.integrations.litellm_routes import ROUTES, Passes, route_profile
from toolmend.testing import RecordedRequest, StrictProviderServer

from support import litellm_payloads, litellm_proxy
from support.agent_runs import agent_runs
from support.block_histories import to_anthropic
from support.event_loops import close_loop, finish_litellm_logging

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

# --- histories ---------------------------------------------------------------------------------

READ_OUT = "def test_add():\n    assert add(2, 2) == 5\n"
GREP_OUT = "tests/test_app.py:2:    assert add(2, 2) == 5"
LS_OUT = "app.py\ntests/"


def claude_code_history() -> list[dict[str, Any]]:
    """A Claude Code session as it is stored after a bad moment: the user typed while two tools
    ran (their text landed before the results), then interrupted a call, and a result of a call
    trimmed away was kept."""
    return [
        {"role": "user", "content": "Fix the failing test in tests/test_app.py"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me read the test and search for its assertion."},
                {
                    "type": "tool_use",
                    "id": "toolu_01Read",
                    "name": "Read",
                    "input": {"file_path": "tests/test_app.py"},
                },
                {"type": "tool_use", "id": "toolu_01Grep", "name": "Grep", "input": {"q": "add("}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Also look at conftest.py."},
                {"type": "tool_result", "tool_use_id": "toolu_01Read", "content": READ_OUT},
                {"type": "tool_result", "tool_use_id": "toolu_01Grep", "content": GREP_OUT},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "The expectation is wrong. Running the tests."},
                {
                    "type": "tool_use",
                    "id": "toolu_01Bash",
                    "name": "Bash",
                    "input": {"c": "pytest"},
                },
            ],
        },
        {"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user]"}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01Gone", "content": "stale"},
                {"type": "text", "text": "Just fix the expectation."},
            ],
        },
    ]


def responses_input() -> list[dict[str, Any]]:
    """A Codex-style Responses ``input``: a result whose call was trimmed away, a real call and
    result, and a call cut off by the user."""
    return [
        {"role": "user", "content": "List the project, then run the tests."},
        {"type": "function_call_output", "call_id": "call_gone", "output": "stale"},
        {"type": "function_call", "call_id": "call_ls", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_ls", "output": LS_OUT},
        {"type": "function_call", "call_id": "call_pt", "name": "pytest", "arguments": "{}"},
        {"role": "user", "content": "Stop, just summarize."},
    ]


REAL_CC = {"toolu_01Read": READ_OUT, "toolu_01Grep": GREP_OUT}
"""The real results of :func:`claude_code_history`, by call id."""
NAMES = {"toolu_01Read": "Read", "toolu_01Grep": "Grep"}


# --- what the provider received ----------------------------------------------------------------


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(_text(v.get("text", "")) if isinstance(v, dict) else "" for v in value)
    if isinstance(value, dict):
        return _text(value.get("content", value.get("output", value.get("result", ""))))
    return ""


def answered(request: RecordedRequest) -> dict[str, str]:
    """Call key -> the text of the result that answers it, in the history ``request`` carried;
    a result counts only after its call (ids, or function names for Gemini, which has none)."""
    seen: set[str] = set()
    found: dict[str, str] = {}
    history = request.history or []
    for item in history:
        if request.api == "responses":
            if item.get("type") == "function_call":
                seen.add(item["call_id"])
            elif item.get("type") == "function_call_output" and item["call_id"] in seen:
                found[item["call_id"]] = _text(item["output"])
        elif request.api == "chat":
            for call in item.get("tool_calls") or []:
                seen.add(call["id"])
            if item.get("role") == "tool" and item.get("tool_call_id") in seen:
                found[item["tool_call_id"]] = _text(item["content"])
        elif request.api == "gemini":
            for part in item.get("parts", []):
                call = part.get("function_call") or part.get("functionCall")
                response = part.get("function_response") or part.get("functionResponse")
                if call:
                    seen.add(call["name"])
                elif response and response["name"] in seen:
                    found[response["name"]] = _text(response["response"])
        else:  # Anthropic messages
            for block in item["content"] if isinstance(item["content"], list) else []:
                if block["type"] == "tool_use":
                    seen.add(block["id"])
                elif block["type"] == "tool_result" and block["tool_use_id"] in seen:
                    found[block["tool_use_id"]] = _text(block["content"])
    return found


def assert_real_results_kept(request: RecordedRequest, real: dict[str, str]) -> None:
    got = answered(request)
    for call_id, text in real.items():
        key = NAMES.get(call_id, call_id) if request.api == "gemini" else call_id
        assert got.get(key) == text, (key, got)


# --- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[StrictProviderServer]:
    with StrictProviderServer() as running:
        yield running


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """One event loop for every async call, so LiteLLM's cached async clients stay usable; the
    logging calls of earlier modules run on it first, before :data:`RECORDS` listens."""
    running = asyncio.new_event_loop()
    finish_litellm_logging(running)
    yield running
    close_loop(running)


@pytest.fixture(autouse=True)
def callbacks(server: StrictProviderServer) -> Iterator[None]:
    """No callback unless a test installs one; the server forgets earlier requests."""
    saved = list(litellm.callbacks)
    litellm.callbacks = []
    server.clear()
    yield
    litellm.callbacks = saved
    hook.install()


def deployments(server: StrictProviderServer) -> dict[str, dict[str, str]]:
    """Deployment name -> LiteLLM params, each provider on its strict-server route."""
    return {
        "claude": {"model": "anthropic/claude-sonnet-4-5", "api_base": server.base_url},
        "gpt": {"model": "openai/gpt-4.1", "api_base": server.openai_base_url},
        "gemini": {"model": "gemini/gemini-2.5-flash", "api_base": server.base_url},
    }


API = {"claude": "messages", "gpt": "responses", "gemini": "gemini"}
"""Where ``/v1/messages`` lands for each deployment: Anthropic as it is, OpenAI translated to
Responses, Gemini translated to a chat completion and then to generateContent."""


class Records(CustomLogger):
    """A logging callback that keeps the ``toolmend`` record of every finished async call.
    One instance for the module (:data:`RECORDS`): LiteLLM keeps the first logger of a class it
    sees in its own lists and ignores later ones."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[Any] = []

    async def async_log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self.records.append(kwargs.get("toolmend"))

    def log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        pass  # only async calls here


RECORDS = Records()


def records() -> Records:
    """The module's record-keeping logger, emptied."""
    RECORDS.records.clear()
    return RECORDS


def messages_call(loop: asyncio.AbstractEventLoop, params: dict[str, str], history: Any) -> Any:
    return loop.run_until_complete(
        litellm.anthropic_messages(
            messages=history, max_tokens=64, system="Be brief.", api_key="sk-test", **params
        )
    )


def responses_call(
    loop: asyncio.AbstractEventLoop, params: dict[str, str], history: Any, *, sync: bool
) -> Any:
    params = {**params, "api_base": params["api_base"]}
    if sync:
        return litellm.responses(input=history, api_key="sk-test", **params)
    return loop.run_until_complete(litellm.aresponses(input=history, api_key="sk-test", **params))


def toolmend_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "toolmend"]


def settle(loop: asyncio.AbstractEventLoop) -> None:
    """Run LiteLLM's success logging, queued on its logging worker, to the end."""
    finish_litellm_logging(loop)


# --- /v1/messages in process: litellm.anthropic_messages ---------------------------------------


@pytest.mark.parametrize("name", ["claude", "gpt", "gemini"])
def test_claude_code_history_fails_without_and_is_accepted_with_the_callback(
    server: StrictProviderServer,
    loop: asyncio.AbstractEventLoop,
    name: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    params = deployments(server)[name]
    history = claude_code_history()
    untouched = copy.deepcopy(history)
    with pytest.raises(openai.OpenAIError):  # what LiteLLM raises subclasses the openai SDK's
        messages_call(loop, params, history)
    if name == "gemini":  # LiteLLM's own Gemini converter refuses the stale result first
        assert not server.requests
    else:
        assert server.last_request.status == 400
        assert server.last_request.api == API[name]

    kept = records()
    litellm.callbacks = [ToolMend(), kept]
    server.clear()
    with caplog.at_level(logging.INFO, logger="toolmend"):
        messages_call(loop, params, history)
        settle(loop)
    sent = server.last_request
    assert sent.accepted and sent.api == API[name], sent.error
    assert_real_results_kept(sent, REAL_CC)
    assert history == untouched  # the caller's list and messages are never changed
    assert "Be brief." in json.dumps(sent.body)  # the system prompt went along
    lines = toolmend_lines(caplog)
    assert len(lines) == 1, lines  # one line per client request, whatever LiteLLM translated
    assert lines[0].startswith(f"toolmend repaired litellm.anthropic_messages({params['model']})")
    assert "answered_missing_call" in lines[0] and "dropped_orphan_result" in lines[0]
    (record,) = kept.records
    assert record["provider"] == "anthropic"
    first = [c for c in record["changes"] if "route" not in c]
    assert {c["code"] for c in first} >= {"answered_missing_call", "dropped_orphan_result"}
    assert "moved_message" in {c["code"] for c in first} or "moved_result" in {
        c["code"] for c in first
    }
    # the translated chat history needs nothing more, for Gemini too: LiteLLM's converter names
    # each function response after its call (gemini-litellm), so no name is filled
    later = [c for c in record["changes"] if "route" in c]
    assert later == []


def test_a_valid_history_translated_for_gemini_is_reported_once_by_the_second_pass(
    server: StrictProviderServer, loop: asyncio.AbstractEventLoop, caplog: pytest.LogCaptureFixture
) -> None:
    """The first pass finds nothing (Anthropic takes a conversation that opens with a call);
    the chat pass LiteLLM fires for Gemini puts a user message before the call, as Gemini wants,
    and it is the one line and the one record."""
    history = [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": READ_OUT}],
        },
    ]
    kept = records()
    litellm.callbacks = [ToolMend(), kept]
    with caplog.at_level(logging.INFO, logger="toolmend"):
        messages_call(loop, deployments(server)["gemini"], history)
        messages_call(loop, deployments(server)["gpt"], history)
        settle(loop)
    assert all(r.accepted for r in server.requests)
    lines = toolmend_lines(caplog)
    assert len(lines) == 1, lines
    assert lines[0].startswith("toolmend repaired litellm.acompletion(")
    gemini, gpt = kept.records
    assert gpt is None  # valid for OpenAI as translated: nothing to tell
    assert [(c["code"], c["route"]) for c in gemini["changes"]] == [
        ("inserted_message", "acompletion")
    ]


def test_anthropic_with_thinking_on_gets_the_thinking_profile_only_for_anthropic() -> None:
    messages = ROUTES["anthropic_messages"]
    thinking = {"type": "enabled", "budget_tokens": 2048}
    assert route_profile(messages, "anthropic", thinking=thinking) == "anthropic-thinking"
    assert route_profile(messages, "anthropic") == "anthropic"
    assert route_profile(messages, "openai", thinking=thinking) == "anthropic"
    assert route_profile(messages, "gemini", thinking=thinking) == "anthropic"
    assert route_profile(ROUTES["aresponses"], "anthropic") == "openai-responses"
    assert route_profile(ROUTES["acompletion"], "gemini") == "gemini"


def test_the_anthropic_and_responses_routes_pass_the_deployments_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The model picks its variant on every route (issue 32: model-dependent rules such as
    Claude's refused prefill, Responses reasoning models), not only on the chat route."""
    real = toolmend._routing.request_profile
    calls: list[tuple[Any, ...]] = []

    def spy(provider: str, **kwargs: Any) -> str:
        calls.append((provider, kwargs.get("model"), kwargs.get("thinking")))
        return real(provider, **kwargs)

    monkeypatch.setattr(toolmend._routing, "request_profile", spy)
    messages = ROUTES["anthropic_messages"]
    picked = route_profile(messages, "anthropic", model="claude-opus-4-6")
    assert picked == "anthropic-no-prefill"  # a Claude model that takes no prefill
    assert route_profile(messages, "anthropic-no-prefill", model="claude-opus-4-6") == picked
    reasoning = route_profile(ROUTES["aresponses"], "openai", model="o3")
    assert reasoning == "openai-responses-reasoning"  # a reasoning model
    assert route_profile(messages, "gemini", model="gemini-2.5-flash") == "anthropic"
    assert calls == [
        ("anthropic", "claude-opus-4-6", None),
        ("anthropic", "claude-opus-4-6", None),
        ("openai-responses", "o3", None),
    ]


# --- /v1/responses in process: litellm.aresponses and sync litellm.responses ---------------------


@pytest.mark.parametrize("sync", [False, True], ids=["aresponses", "responses"])
@pytest.mark.parametrize("name", ["gpt", "claude"])
def test_broken_responses_input_fails_without_and_is_accepted_with_the_callback(
    server: StrictProviderServer,
    loop: asyncio.AbstractEventLoop,
    name: str,
    sync: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    params = deployments(server)[name]
    history = responses_input()
    untouched = copy.deepcopy(history)
    with pytest.raises(litellm.BadRequestError):
        responses_call(loop, params, history, sync=sync)
    assert server.last_request.status == 400

    litellm.callbacks = [ToolMend()]
    server.clear()
    with caplog.at_level(logging.INFO, logger="toolmend"):
        response = responses_call(loop, params, history, sync=sync)
    sent = server.last_request
    assert sent.accepted and sent.api == ("responses" if name == "gpt" else "messages"), sent.error
    assert_real_results_kept(sent, {"call_ls": LS_OUT})
    assert history == untouched
    lines = toolmend_lines(caplog)
    assert len(lines) == 1, lines
    route = "responses" if sync else "aresponses"
    assert lines[0].startswith(
        f"toolmend repaired litellm.{route}({params['model']}) for openai-responses"
    )
    record = response._hidden_params["toolmend"]
    assert {c["code"] for c in record["changes"]} == {
        "dropped_orphan_result",
        "answered_missing_call",
    }


def test_a_string_input_and_a_continued_conversation_are_left_alone() -> None:
    broken = responses_input()
    handler = ToolMend()
    for kwargs in (
        {"model": "openai/gpt-4.1", "input": "Hello"},
        {"model": "openai/gpt-4.1", "input": broken[1:], "previous_response_id": "resp_1"},
        {"model": "openai/gpt-4.1", "input": broken[1:], "conversation": "conv_1"},
    ):
        assert (
            asyncio.run(handler.async_pre_call_deployment_hook(kwargs, CallTypes.aresponses))
            is None
        )


# --- the passes of one client request ----------------------------------------------------------


class _LoggingObject:
    """Stands for LiteLLM's logging object: only its identity matters to :class:`Passes`."""


def test_passes_second_pass_merges_and_a_new_attempt_starts_over() -> None:
    passes = Passes()
    request = _LoggingObject()
    first = {
        "provider": "anthropic",
        "model": "m",
        "changes": [{"code": "a", "index": 1, "ids": [], "detail": ""}],
        "problems": [],
        "loops": [],
        "failed": False,
    }
    second = {
        **first,
        "provider": "gemini",
        "changes": [{"code": "b", "index": 3, "ids": [], "detail": ""}],
    }
    assert passes.begin(request, "anthropic_messages") == "first"
    passes.first(request, "anthropic_messages", first)
    assert passes.spoke(request)
    assert passes.begin(request, "acompletion") == "second"
    replaced, merged = passes.second(request, "acompletion", second)
    assert replaced and merged is not None
    codes = [(c["code"], c.get("route")) for c in merged["changes"]]
    assert codes == [("a", None), ("b", "acompletion")]
    assert merged["provider"] == "anthropic"
    # LiteLLM retries the inner route: its changes replace, never add up
    replaced, merged = passes.second(request, "acompletion", second)
    assert replaced and merged is not None and len(merged["changes"]) == 2
    # a second pass with nothing to tell leaves the record in place
    assert passes.second(request, "aresponses", None) == (False, None)
    # a new deployment attempt on the client's route starts over
    assert passes.begin(request, "anthropic_messages") == "first"
    passes.first(request, "anthropic_messages", None)
    assert not passes.spoke(request)
    assert passes.second(request, "aresponses", None) == (False, None)


def test_passes_after_the_sync_setup_pass_and_after_a_failure() -> None:
    passes = Passes()
    sync, failed = _LoggingObject(), _LoggingObject()
    passes.first(sync, "responses", None, setup=True)
    assert passes.begin(sync, "responses") == "second"  # the hook after the setup wrapper
    assert passes.begin(sync, "responses") == "first"  # then a new attempt
    passes.first(failed, "aresponses", None, failed=True)
    assert passes.begin(failed, "acompletion") == "skip"  # logged once, sent as LiteLLM built it
    assert passes.begin(None, "acompletion") == "first"


# --- fail open on the new routes ---------------------------------------------------------------


def _raise(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("injected fault inside toolmend")


@pytest.mark.parametrize("fault", ["vouch", "profile_for", "attach"])
@pytest.mark.parametrize(("call", "name"), [("messages", "gpt"), ("responses", "claude")])
def test_a_fault_inside_toolmend_sends_the_original_and_is_logged_once(
    server: StrictProviderServer,
    loop: asyncio.AbstractEventLoop,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    call: str,
    name: str,
    fault: str,
) -> None:
    """Both passes of a translated request would reach the fault. Inside the repair: the
    request still goes out as LiteLLM builds it without toolmend (the provider's own 400).
    Putting the record on LiteLLM's logging object, after the request is built: the repaired
    request goes out. Either way, one ERROR line."""
    params = deployments(server)[name]
    history = claude_code_history() if call == "messages" else responses_input()

    def send() -> Any:
        if call == "messages":
            return messages_call(loop, params, history)
        return responses_call(loop, params, history, sync=False)

    with pytest.raises(litellm.BadRequestError):
        send()
    without = server.last_request
    owner, attribute = {
        "vouch": (toolmend._fastpath, "vouch"),
        "profile_for": (hook, "profile_for"),
        "attach": (hook, "_attach"),
    }[fault]
    monkeypatch.setattr(owner, attribute, _raise)
    litellm.callbacks = [ToolMend()]
    server.clear()
    with caplog.at_level(logging.DEBUG, logger="toolmend"):
        if fault == "attach":
            send()
            assert server.last_request.accepted
        else:
            with pytest.raises(litellm.BadRequestError):
                send()
            assert server.last_request.body == without.body
            assert server.last_request.error == without.error
    logged = [r for r in caplog.records if r.name == "toolmend" and r.levelno >= logging.WARNING]
    logged = [r for r in logged if fault != "attach" or r.levelno >= logging.ERROR]
    assert len(logged) == 1, [r.getMessage() for r in logged]
    assert logged[0].levelno == logging.ERROR and logged[0].exc_info is not None


# --- the fast path of the new routes' formats ----------------------------------------------------


def as_items(history: list[Any]) -> list[dict[str, Any]]:
    """OpenAI chat messages as Responses items."""
    items: list[dict[str, Any]] = []
    for message in history:
        if message["role"] == "tool":
            output = {"call_id": message["tool_call_id"], "output": message["content"] or ""}
            items.append({"type": "function_call_output", **output})
            continue
        if message.get("content"):
            items.append({"role": message["role"], "content": message["content"]})
        for call in message.get("tool_calls") or ():
            function = call["function"]
            items.append(
                {
                    "type": "function_call",
                    "call_id": call["id"],
                    "name": function["name"],
                    "arguments": function["arguments"],
                }
            )
    return items


@settings(max_examples=150)
@given(agent_runs(odd=False))
def test_the_fast_path_vouches_only_where_the_full_path_finds_nothing(history: list[Any]) -> None:
    """``vouch`` on Anthropic messages and Responses items (the formats of the new routes): a
    history it answers for is returned as it is by ``repair``, and a live run
    ``quiet_live_run`` passes makes the loop guard find nothing."""
    for format, shaped in (
        ("anthropic", to_anthropic(history)),
        ("openai-responses", as_items(history)),
    ):
        live = vouch(shaped, provider=format, format=format)
        if live is None:
            continue
        result = toolmend.repair(shaped, provider=format, format=format)
        assert result.messages is shaped and not result.problems_left
        if quiet_live_run(*live):
            assert toolmend.detect_loops(shaped, format=format, live_only=True) == []


@settings(max_examples=200)
@given(agent_runs(odd=False))
def test_responses_live_rounds_report_what_the_full_read_reports(history: list[Any]) -> None:
    """The loop guard reads a Responses live run straight off the items
    (``live_rounds``); whatever it finds is what reading the whole input finds after the last
    user message."""
    items = as_items(history)
    users = [i for i, item in enumerate(items) if item.get("role") == "user"]
    live_from = users[-1] + 1 if users else 0
    full = [
        p for p in toolmend.detect_loops(items, format="openai-responses") if p.index >= live_from
    ]
    assert toolmend.detect_loops(items, format="openai-responses", live_only=True) == full


def test_the_fast_path_answers_for_plain_valid_histories() -> None:
    history = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": LS_OUT},
        {"role": "assistant", "content": "Two entries."},
        {"role": "user", "content": "thanks"},
    ]
    assert vouch(to_anthropic(history), provider="anthropic", format="anthropic") == (0, [])
    items = as_items(history)
    assert vouch(items, provider="openai-responses", format="openai-responses") == (0, [])
    assert vouch(items[:-2], provider="openai-responses", format="openai-responses") == (
        1,
        [("ls", "{}")],
    )
    assert vouch(claude_code_history(), provider="anthropic", format="anthropic") is None


@pytest.mark.parametrize("parallel", [False, True], ids=["rounds", "one-turn"])
def test_the_fast_path_counts_rounds_as_the_loop_guard_does(parallel: bool) -> None:
    """Six ``grep`` calls with changing arguments: in six rounds the guard reports
    ``repeated_tool``, in one assistant turn nothing. Responses items are one round each,
    whether they came in one turn or not; Anthropic ``tool_use`` blocks of one message are one
    round."""
    calls = [
        {
            "id": f"call_{n}",
            "type": "function",
            "function": {"name": "grep", "arguments": f'{{"q": {n}}}'},
        }
        for n in range(6)
    ]
    history: list[Any] = [{"role": "user", "content": "find it"}]
    if parallel:
        history.append({"role": "assistant", "content": None, "tool_calls": calls})
        history += [{"role": "tool", "tool_call_id": c["id"], "content": "x"} for c in calls]
    else:
        for call in calls:
            history.append({"role": "assistant", "content": None, "tool_calls": [call]})
            history.append({"role": "tool", "tool_call_id": call["id"], "content": "x"})
    for format, shaped in (
        ("anthropic", to_anthropic(history)),
        ("openai-responses", as_items(history)),
    ):
        found = toolmend.detect_loops(shaped, format=format, live_only=True)
        live = vouch(shaped, provider=format, format=format)
        assert live is not None
        assert bool(found) == (format == "openai-responses" or not parallel), (format, found)
        if found:
            assert not quiet_live_run(*live), format


# --- a real LiteLLM Proxy ----------------------------------------------------------------------

_CONFIG = """\
model_list:
  - model_name: claude
    litellm_params: {{model: anthropic/claude-sonnet-4-5, api_base: "{anthropic}", api_key: sk-test}}
  - model_name: gpt
    litellm_params: {{model: openai/gpt-4.1, api_base: "{openai}", api_key: sk-test}}
  - model_name: gemini
    litellm_params: {{model: gemini/gemini-2.5-flash, api_base: "{anthropic}", api_key: sk-test}}
litellm_settings:
  num_retries: 0
{callbacks}general_settings:
  master_key: sk-toolmend
"""


STARTUP_SECONDS = 150
"""Two proxies starting at once on a busy 2-core machine take longer than one."""

_CALLBACKS = {
    "with": '  callbacks: ["otel", "toolmend.integrations.litellm.proxy_handler", '
    '"payloads.handler"]\n',
    "without": '  callbacks: ["payloads.handler"]\n',
}
"""The proxy with toolmend also runs LiteLLM's ``otel`` callback, exporting its spans to the
console (its log), where the ``guardrail`` span of toolmend's entry is read."""

_OTEL_ENV = {"OTEL_EXPORTER": "console", "OTEL_BSP_SCHEDULE_DELAY": "100"}

PROXY_FOLDERS: dict[str, Path] = {}
"""Each proxy's folder (its log and payloads.jsonl), by kind, while :func:`proxies` runs."""


@pytest.fixture(scope="module")
def proxies(
    server: StrictProviderServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, str]]:
    """Two real ``litellm --config`` processes listing every deployment: ``"with"`` the
    toolmend callback (and LiteLLM's ``otel``), ``"without"``; both with a logging callback
    that writes what their logging gets (``tests/support/litellm_payloads.py``); started
    together, stopped at the end of the module."""
    reason = litellm_proxy.unavailable()
    if reason:
        pytest.skip(reason)
    running: dict[str, litellm_proxy.Proxy] = {}
    try:
        for kind, callbacks in _CALLBACKS.items():
            folder = Path(tmp_path_factory.mktemp(f"proxy_{kind}"))
            shutil.copy(litellm_payloads.__file__, folder / "payloads.py")
            config = folder / "config.yaml"
            config.write_text(
                _CONFIG.format(
                    anthropic=server.base_url, openai=server.openai_base_url, callbacks=callbacks
                )
            )
            env = _OTEL_ENV if kind == "with" else {}
            running[kind] = litellm_proxy.Proxy(config, folder, env)
            PROXY_FOLDERS[kind] = folder
        for proxy in running.values():
            proxy.wait_ready(seconds=STARTUP_SECONDS)
        yield {kind: proxy.base for kind, proxy in running.items()}
    finally:
        for proxy in running.values():
            proxy.stop()
        PROXY_FOLDERS.clear()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["claude", "gpt", "gemini"])
def test_proxy_v1_messages_with_the_anthropic_sdk(
    server: StrictProviderServer, proxies: dict[str, str], name: str
) -> None:
    def create(kind: str) -> Any:
        client = anthropic.Anthropic(base_url=proxies[kind], api_key="sk-toolmend", max_retries=0)
        return client.messages.create(
            model=name, max_tokens=64, system="Be brief.", messages=claude_code_history()
        )

    with pytest.raises(anthropic.APIStatusError) as raised:
        create("without")
    if name == "gemini":  # LiteLLM's own Gemini converter refuses the stale result first
        assert raised.value.status_code >= 400 and not server.requests
    else:
        assert raised.value.status_code == 400
        assert server.last_request.status == 400
        assert server.last_request.error in str(raised.value)  # the provider's own text
    server.clear()
    client = anthropic.Anthropic(base_url=proxies["with"], api_key="sk-toolmend", max_retries=0)
    raw = client.messages.with_raw_response.create(
        model=name, max_tokens=64, system="Be brief.", messages=claude_code_history()
    )
    assert raw.parse().content[0].type == "text"
    sent = server.last_request
    assert sent.accepted and sent.api == API[name], sent.error
    assert_real_results_kept(sent, REAL_CC)
    # one record for the client request, both passes in it, in the proxy's response header
    changes = raw.headers["x-toolmend-changes"]
    assert "answered_missing_call@3[toolu_01Bash]" in changes
    assert "dropped_orphan_result@5[toolu_01Gone]" in changes
    assert raw.headers["x-toolmend-provider"] == "anthropic"
    # LiteLLM's Gemini converter names each function response after its call: the second pass
    # (gemini-litellm) has nothing to add to the first pass's history
    assert "@acompletion:" not in changes


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gpt", "claude"])
def test_proxy_v1_responses_with_the_openai_sdk(
    server: StrictProviderServer, proxies: dict[str, str], name: str
) -> None:
    def create(kind: str) -> Any:
        client = openai.OpenAI(base_url=proxies[kind] + "/v1", api_key="sk-toolmend", max_retries=0)
        return client.responses.create(model=name, input=responses_input())  # type: ignore[arg-type]

    with pytest.raises(openai.BadRequestError) as raised:
        create("without")
    assert server.last_request.status == 400
    assert server.last_request.error in str(raised.value)
    server.clear()
    response = create("with")
    assert response.output_text
    sent = server.last_request
    assert sent.accepted and sent.api == ("responses" if name == "gpt" else "messages"), sent.error
    assert_real_results_kept(sent, {"call_ls": LS_OUT})


# --- what the proxy's logging and its OpenTelemetry see ------------------------------------------


def logged_after(kind: str, seen: int) -> dict[str, Any]:
    """The next request the proxy ``kind`` logged after its first ``seen``, once it is logged."""
    deadline = time.monotonic() + 120  # a bound for a hang: the loop ends when it is logged
    while True:
        logged = litellm_payloads.read(PROXY_FOLDERS[kind])
        if len(logged) > seen:
            return logged[seen]
        assert time.monotonic() < deadline, f"the {kind} proxy logged nothing"
        time.sleep(0.1)


def console_spans(kind: str) -> list[dict[str, Any]]:
    """The spans the proxy's ``otel`` callback printed to its log (the console exporter writes
    each as an indented JSON object starting on a line of its own)."""
    spans: list[dict[str, Any]] = []
    block: list[str] | None = None
    for line in (PROXY_FOLDERS[kind] / "proxy.log").read_text().splitlines():
        if line == "{":
            block = [line]
        elif block is not None:
            block.append(line)
            if line == "}":
                spans.append(json.loads("\n".join(block)))
                block = None
    return spans


def toolmend_entries(logged: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        entry
        for entry in logged["guardrail_information"] or ()
        if entry.get("guardrail_name") == "toolmend"
    ]


@pytest.mark.slow
@pytest.mark.parametrize("route", ["/v1/messages", "/v1/chat/completions"])
def test_proxy_logging_gets_toolmends_guardrail_entry_and_otel_makes_it_a_span(
    server: StrictProviderServer, proxies: dict[str, str], route: str
) -> None:
    """The proxy keeps its metadata in ``litellm_metadata`` on ``/v1/messages`` and in
    ``metadata`` on ``/v1/chat/completions``: on both, the payload every logging integration
    of the proxy gets has toolmend's one entry (the translated ``/v1/messages`` to OpenAI
    passes the hook twice), and LiteLLM's ``otel`` callback exports it as a ``guardrail`` span.
    Without toolmend the provider's 400 is logged with no entry."""

    def create(kind: str) -> Any:
        if route == "/v1/messages":
            client = anthropic.Anthropic(base_url=proxies[kind], api_key="sk-toolmend")
            return client.with_options(max_retries=0).messages.create(
                model="gpt", max_tokens=64, system="Be brief.", messages=claude_code_history()
            )
        chat = openai.OpenAI(base_url=proxies[kind] + "/v1", api_key="sk-toolmend", max_retries=0)
        broken = [
            {"role": "user", "content": "List the project."},
            {"role": "tool", "tool_call_id": "call_gone", "content": "stale"},
            {"role": "user", "content": "Go on."},  # (an orphan last is kept: the newest input)
        ]
        return chat.chat.completions.create(model="gpt", messages=broken)  # type: ignore[arg-type]

    seen = {kind: len(litellm_payloads.read(PROXY_FOLDERS[kind])) for kind in proxies}
    with pytest.raises((anthropic.APIStatusError, openai.APIStatusError)):
        create("without")
    assert server.last_request.status == 400
    failed = logged_after("without", seen["without"])
    assert failed["event"] == "failure" and toolmend_entries(failed) == []
    server.clear()
    create("with")
    assert server.last_request.accepted, server.last_request.error
    logged = logged_after("with", seen["with"])
    (entry,) = toolmend_entries(logged)
    assert logged["event"] == "success"
    assert logged["status_fields"]["guardrail_status"] == "guardrail_intervened"
    assert (entry["guardrail_status"], entry["guardrail_action"]) == (
        "guardrail_intervened",
        "repaired",
    )
    assert entry["guardrail_response"]["changes"]["dropped_orphan_result"] == 1
    assert "toolu_01Gone" not in json.dumps(entry) and "stale" not in json.dumps(entry)

    deadline = time.monotonic() + 120  # a bound for a hang: the loop ends when it is logged
    while True:  # the console exporter prints a batch every 100 ms
        spans = [
            span
            for span in console_spans("with")
            if span["name"] == "guardrail"
            and span["attributes"].get("guardrail_name") == "toolmend"
            and json.loads(span["attributes"]["guardrail_response"]) == entry["guardrail_response"]
        ]
        if spans:
            break
        assert time.monotonic() < deadline, "no toolmend guardrail span was exported"
        time.sleep(0.1)
    attributes = spans[-1]["attributes"]
    assert attributes["guardrail_status"] == "guardrail_intervened"
    assert attributes["guardrail_mode"] == "pre_call"
    assert json.loads(attributes["guardrail_violation_categories"]) == entry["violation_categories"]
    # and toolmend's own attributes on the span current at repair time (the proxy's endpoint)
    marked = [
        s["attributes"] for s in console_spans("with") if "toolmend.outcome" in s["attributes"]
    ]
    assert any(
        a["toolmend.outcome"] == "repaired"
        and "dropped_orphan_result" in a["toolmend.change_codes"]
        for a in marked
    ), marked
