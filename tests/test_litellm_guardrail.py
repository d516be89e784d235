"""toolmend in LiteLLM's own logging: the guardrail entry named ``toolmend`` that every logging
callback gets in the standard logging payload, and toolmend's telemetry of a LiteLLM request.

A real LiteLLM logging callback (:class:`Payloads`, a ``CustomLogger`` in ``litellm.callbacks``)
keeps the ``standard_logging_object`` of every call, through ``litellm.completion`` /
``acompletion`` and the translated ``litellm.anthropic_messages`` route, over real HTTP to the
strict provider server. Without toolmend's callback a broken history gets the provider's 400 and
the payload has no toolmend entry; with it the request is accepted and the payload holds exactly
one entry, in LiteLLM's own status vocabulary, with codes and counts and never an id or
content, and a request LiteLLM translates (two passes) still has one. The payload the LiteLLM
Proxy's logging sees, and the ``guardrail`` span LiteLLM's ``otel`` callback makes of the entry,
are tested on the proxy processes of ``tests/test_litellm_routes.py``.

Telemetry, with the OpenTelemetry SDK in memory (``tests/support/otel.py``): a translated
request counts once in ``toolmend.requests``, the changes of its second pass reach
``toolmend.changes`` and the span, and LiteLLM's own fail-open sites count ``failed_open``.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before LiteLLM is imported

import asyncio
import copy
import dataclasses
import json
import logging
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any, get_args

import litellm
import pytest
from litellm.integrations.custom_logger import CustomLogger
from litellm.litellm_core_utils.litellm_logging import _get_status_fields
from litellm.types.utils import GuardrailStatus, StandardLoggingGuardrailInformation

import toolmend
import toolmend._fastpath
from test_litellm_routes import READ_OUT, claude_code_history, deployments, messages_call
from toolmend.integrations import litellm as hook
from toolmend.integrations import litellm_guardrail, telemetry
from toolmend.integrations.litellm import ToolMend
from toolmend.integrations.litellm_guardrail import KEY, entry, with_entry
from toolmend.testing import StrictProviderServer

from support import otel
from support.event_loops import close_loop, finish_litellm_logging
from support.hook_entries import chat_broken, chat_valid

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

# --- a real LiteLLM logging callback -------------------------------------------------------------


class Payloads(CustomLogger):
    """Keeps ``(event, standard_logging_object)`` of every call LiteLLM logs, sync or async,
    success or failure, and toolmend's record (``kwargs["toolmend"]``). One instance for the module: LiteLLM keeps the first logger of a class
    it sees in its own lists."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, dict[str, Any]]] = []
        self.records: list[Any] = []

    def _keep(self, event: str, kwargs: dict[str, Any]) -> None:
        self.records.append(kwargs.get(hook.RECORD_KEY))
        self.seen.append((event, kwargs.get("standard_logging_object") or {}))

    def log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._keep("success", kwargs)

    async def async_log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._keep("success", kwargs)

    def log_failure_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._keep("failure", kwargs)

    async def async_log_failure_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._keep("failure", kwargs)

    def wait(self, loop: asyncio.AbstractEventLoop, count: int = 1) -> list[dict[str, Any]]:
        """The payloads of the first ``count`` logged calls, once LiteLLM logged them (a task
        on the loop for async calls, a thread for sync ones)."""
        deadline = time.monotonic() + 120  # a bound for a hang, not a timing: it ends when logged
        while len(self.seen) < count and time.monotonic() < deadline:
            loop.run_until_complete(asyncio.sleep(0.05))
        assert len(self.seen) >= count, self.seen
        return [payload for _, payload in self.seen[:count]]


PAYLOADS = Payloads()


def toolmend_entries(payload: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        item
        for item in payload.get("guardrail_information") or ()
        if item.get("guardrail_name") == "toolmend"
    ]


def the_entry(payload: dict[str, Any]) -> dict[str, Any]:
    """The one toolmend entry of ``payload``, checked for LiteLLM's shape and toolmend's
    promises (codes and counts only; its times in order)."""
    (found,) = toolmend_entries(payload)
    assert set(found) <= set(StandardLoggingGuardrailInformation.__annotations__)
    assert found["guardrail_status"] in get_args(GuardrailStatus)
    assert found["guardrail_mode"] == "pre_call"
    assert found["guardrail_provider"] == "toolmend"
    assert 0 <= found["duration"] <= found["end_time"] - found["start_time"] + 1e-6
    assert found["start_time"] <= payload["startTime"] + 1
    assert payload["status_fields"]["guardrail_status"] == found["guardrail_status"]
    return found


SECRETS = ("call_1", "toolu_", "Paris", "21 C", "Still there", "test_add", "stale", "Fix the")
"""Ids and content of the histories below: none may appear in an entry."""


def assert_no_ids_or_content(found: dict[str, Any]) -> None:
    text = json.dumps(found)
    assert not [secret for secret in SECRETS if secret in text], text


# --- fixtures ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[StrictProviderServer]:
    with StrictProviderServer() as running:
        yield running


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """One event loop for every async call, so LiteLLM's cached async clients stay usable; the
    logging calls of earlier modules run on it first, before :data:`PAYLOADS` listens."""
    running = asyncio.new_event_loop()
    finish_litellm_logging(running)
    yield running
    close_loop(running)


@pytest.fixture(autouse=True)
def callbacks(server: StrictProviderServer) -> Iterator[None]:
    """Only the payload keeper unless a test adds toolmend; the server forgets earlier requests."""
    saved = list(litellm.callbacks)
    litellm.callbacks = [PAYLOADS]
    PAYLOADS.seen.clear()
    PAYLOADS.records.clear()
    server.clear()
    yield
    litellm.callbacks = saved
    hook.install()


def gpt(server: StrictProviderServer) -> dict[str, str]:
    return {"model": "openai/gpt-4.1", "api_base": server.openai_base_url, "api_key": "sk-test"}


def chat(
    loop: asyncio.AbstractEventLoop, server: StrictProviderServer, history: Any, **more: Any
) -> Any:
    """``litellm.acompletion`` (``more["sync"]`` false) or ``litellm.completion``."""
    if more.pop("sync", False):
        return litellm.completion(messages=history, **gpt(server), **more)
    return loop.run_until_complete(litellm.acompletion(messages=history, **gpt(server), **more))


# --- the entry in the standard logging payload ---------------------------------------------------


@pytest.mark.parametrize("sync", [False, True], ids=["acompletion", "completion"])
def test_a_repaired_chat_call_carries_one_toolmend_entry(
    server: StrictProviderServer, loop: asyncio.AbstractEventLoop, sync: bool
) -> None:
    with pytest.raises(litellm.BadRequestError):
        chat(loop, server, chat_broken(), sync=sync)
    assert server.last_request.status == 400
    (failed,) = PAYLOADS.wait(loop)
    assert toolmend_entries(failed) == []  # without the callback: no entry
    assert failed["status_fields"]["guardrail_status"] == "not_run"

    litellm.callbacks = [ToolMend(), PAYLOADS]
    PAYLOADS.seen.clear()
    metadata = {"team": "search"}
    chat(loop, server, chat_broken(), sync=sync, metadata=metadata)
    assert server.last_request.accepted, server.last_request.error
    assert KEY not in json.dumps(server.last_request.body)  # LiteLLM's, not the provider's
    assert metadata == {"team": "search"}  # the caller's dict is not written to
    (payload,) = PAYLOADS.wait(loop)
    found = the_entry(payload)
    expected = Counter(c.code for c in toolmend.repair(chat_broken(), provider="openai").changes)
    assert found["guardrail_status"] == "guardrail_intervened"
    assert found["guardrail_action"] == "repaired"
    assert found["guardrail_response"] == {
        "outcome": "repaired",
        "provider": "openai",
        "changes": dict(expected),
        "problems_left": {},
        "loops": {},
    }
    assert found["violation_categories"] == sorted(expected)
    assert_no_ids_or_content(found)


def test_a_clean_request_gets_a_success_entry(
    server: StrictProviderServer, loop: asyncio.AbstractEventLoop
) -> None:
    """LiteLLM's guardrails record every run: ``success`` says toolmend ran and found nothing,
    where no entry says it did not run."""
    litellm.callbacks = [ToolMend(), PAYLOADS]
    chat(loop, server, chat_valid())
    (payload,) = PAYLOADS.wait(loop)
    found = the_entry(payload)
    assert (found["guardrail_status"], found["guardrail_action"]) == ("success", "clean")
    assert found["guardrail_response"]["changes"] == {}
    assert found["violation_categories"] == []


def test_problems_left_by_the_report_policy_are_flagged(
    server: StrictProviderServer, loop: asyncio.AbstractEventLoop
) -> None:
    """Under the report policy the history goes out as it came (the provider's 400): the
    entry is ``guardrail_flagged`` and counts the problems the provider then saw."""
    litellm.callbacks = [ToolMend(policy="report"), PAYLOADS]
    with pytest.raises(litellm.BadRequestError):
        chat(loop, server, chat_broken())
    (payload,) = PAYLOADS.wait(loop)
    found = the_entry(payload)
    expected = Counter(p.code for p in toolmend.check(chat_broken(), provider="openai"))
    assert expected
    assert (found["guardrail_status"], found["guardrail_action"]) == (
        "guardrail_flagged",
        "problems_left",
    )
    assert found["guardrail_response"]["problems_left"] == dict(expected)


@pytest.mark.parametrize("name", ["gpt", "gemini"])
def test_a_translated_request_has_one_entry_with_both_passes(
    server: StrictProviderServer, loop: asyncio.AbstractEventLoop, name: str
) -> None:
    """``/v1/messages`` to OpenAI (translated to Responses) and to Gemini (to a chat
    completion): the hook fires twice; the second pass replaces the entry with the request's
    whole record, never a second entry (for Gemini it adds nothing: LiteLLM's converter names
    each function response after its call, ``gemini-litellm``)."""
    params = deployments(server)[name]
    if name == "gpt":
        with pytest.raises(litellm.BadRequestError):
            messages_call(loop, params, claude_code_history())
        assert server.last_request.status == 400
        (failed,) = PAYLOADS.wait(loop)
        assert toolmend_entries(failed) == []
        PAYLOADS.seen.clear()
        PAYLOADS.records.clear()

    litellm.callbacks = [ToolMend(), PAYLOADS]
    messages_call(loop, params, claude_code_history())
    assert server.last_request.accepted, server.last_request.error
    assert KEY not in json.dumps(server.last_request.body)
    (payload,) = PAYLOADS.wait(loop)
    found = the_entry(payload)
    (record,) = PAYLOADS.records
    assert found["guardrail_status"] == "guardrail_intervened"
    assert found["guardrail_response"]["changes"] == dict(
        Counter(c["code"] for c in record["changes"])
    )
    second = {c["code"] for c in record["changes"] if "route" in c}
    assert second == set()
    assert second <= set(found["violation_categories"])
    assert_no_ids_or_content(found)


# --- the entry itself ----------------------------------------------------------------------------

CHANGE = {"code": "dropped_orphan_result", "index": 1, "ids": ["call_1"], "detail": "x"}
PROBLEM = {"code": "orphan_result", "index": 1, "ids": ["call_1"]}
LOOP = {"code": "repeated_tool", "index": 3}


def _record(**parts: Any) -> dict[str, Any]:
    return {"changes": [], "problems": [], "loops": [], "failed": False, **parts}


@pytest.mark.parametrize(
    ("record", "left", "status", "action"),
    [
        (None, (), "success", "clean"),
        (_record(changes=[CHANGE], problems=[PROBLEM]), (), "guardrail_intervened", "repaired"),
        (_record(changes=[CHANGE]), ("orphan_result",), "guardrail_intervened", "problems_left"),
        (_record(problems=[PROBLEM]), ("orphan_result",), "guardrail_flagged", "problems_left"),
        (_record(loops=[LOOP]), (), "guardrail_flagged", "clean"),
        (_record(failed=True), (), "guardrail_failed_to_respond", "failed_open"),
    ],
)
def test_the_entry_speaks_litellms_status_vocabulary(
    record: dict[str, Any] | None, left: tuple[str, ...], status: str, action: str
) -> None:
    found = entry(record, provider="openai", left=left, started=1.0, ended=2.0, duration=0.5)
    assert (found["guardrail_status"], found["guardrail_action"]) == (status, action)
    # LiteLLM's own reading of the entry, for the payload's status_fields
    assert _get_status_fields("success", [found], None)["guardrail_status"] == status
    assert found["guardrail_response"]["problems_left"] == dict(Counter(left))
    assert "call_1" not in json.dumps(found)


def test_with_entry_copies_and_replaces_toolmends_own_entry() -> None:
    other = {"guardrail_name": "presidio", "guardrail_status": "success"}
    old = {"guardrail_name": "toolmend", "guardrail_status": "success"}
    new = {"guardrail_name": "toolmend", "guardrail_status": "guardrail_intervened"}
    caller = {"team": "a"}
    request: dict[str, object] = {"messages": [], "metadata": caller}
    sent = with_entry(request, new, chat=True)
    assert sent["metadata"] == {"team": "a", KEY: [new]} and caller == {"team": "a"}
    assert request["metadata"] is caller  # the request handed in is not changed either
    # the Anthropic and Responses routes: their ``metadata`` is the provider's own field
    sent = with_entry({"input": [], "metadata": caller}, new, chat=False)
    assert sent["metadata"] is caller and sent["litellm_metadata"] == {KEY: [new]}
    # the proxy's /v1/messages and /v1/responses carry litellm_metadata: it is used
    sent = with_entry({"litellm_metadata": {"user": "u"}}, new, chat=True)
    assert sent == {"litellm_metadata": {"user": "u", KEY: [new]}}
    # a translated request carries the first pass's entry: replaced where it is, others kept
    listed = [other, old]
    carried = {"metadata": {KEY: listed}, "litellm_metadata": {}}
    sent = with_entry(carried, new, chat=False)
    assert sent["metadata"] == {KEY: [other, new]} and listed == [other, old]
    assert sent["litellm_metadata"] == {}


@pytest.mark.parametrize("fault", ["entry", "with_entry"])
def test_a_fault_in_the_entry_sends_the_repaired_request_and_is_logged_once(
    server: StrictProviderServer,
    loop: asyncio.AbstractEventLoop,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    fault: str,
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("injected fault inside toolmend")

    monkeypatch.setattr(litellm_guardrail, fault, broken)
    litellm.callbacks = [ToolMend(), PAYLOADS]
    with caplog.at_level(logging.WARNING, logger="toolmend"):
        chat(loop, server, chat_broken())
    assert server.last_request.accepted  # the repair went out all the same
    (payload,) = PAYLOADS.wait(loop)
    assert toolmend_entries(payload) == []
    logged = [r for r in caplog.records if r.name == "toolmend" and r.levelno >= logging.ERROR]
    assert len(logged) == 1 and logged[0].exc_info is not None, [r.getMessage() for r in logged]


# --- telemetry of a LiteLLM request --------------------------------------------------------------


def _sum(memory: otel.OtelSdk, metric: str, **labels: str) -> int:
    return sum(
        value
        for attributes, value in memory.pairs(metric)
        if all(attributes.get(k) == v for k, v in labels.items())
    )


def test_a_translated_request_counts_once_and_its_second_pass_adds_its_changes(
    server: StrictProviderServer, loop: asyncio.AbstractEventLoop
) -> None:
    """Gemini through ``/v1/messages``: a history valid for Anthropic's rules (it opens with a
    call) passes the first pass clean, and the second pass (the chat history LiteLLM built)
    puts the user message Gemini wants before the call. One request is counted, by its first
    pass; the second pass's change reaches ``toolmend.changes`` and the span, with no second
    request and no second duration."""
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
    litellm.callbacks = [ToolMend()]
    with otel.otel_sdk() as memory:
        with memory.tracer.start_as_current_span("clean first, repaired second"):
            messages_call(loop, deployments(server)["gemini"], history)
        with memory.tracer.start_as_current_span("repaired twice"):
            messages_call(loop, deployments(server)["gemini"], claude_code_history())
        assert all(r.accepted for r in server.requests)
        requests = memory.pairs("toolmend.requests")
        assert sorted((a["hook"], a["outcome"], v) for a, v in requests) == [
            ("litellm.anthropic_messages", "clean", 1),
            ("litellm.anthropic_messages", "repaired", 1),
        ]
        assert sum(v for _, v in memory.pairs("toolmend.hook.duration")) == 2
        inserted = _sum(
            memory, "toolmend.changes", code="inserted_message", provider="gemini-litellm"
        )
        assert inserted == 1
        assert _sum(memory, "toolmend.changes", code="filled_result_name") == 0
        assert _sum(memory, "toolmend.changes", code="dropped_orphan_result") == 1
        spans = {span.name: dict(span.attributes or {}) for span in memory.spans()}
    first = spans["clean first, repaired second"]
    assert first["toolmend.outcome"] == "repaired"
    assert first["toolmend.changes.count"] == 1
    assert list(first["toolmend.change_codes"]) == ["inserted_message"]
    second = spans["repaired twice"]
    assert "dropped_orphan_result" in second["toolmend.change_codes"]
    assert "filled_result_name" not in second["toolmend.change_codes"]
    assert second["toolmend.provider"] == "anthropic"


def _fault(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("injected fault inside toolmend")


@pytest.mark.parametrize(
    ("site", "sync", "hook_name"),
    [
        ("begin", False, "litellm.acompletion"),  # the async hook, before the repair
        ("active", True, "litellm.completion"),  # the sync wrapper, before the repair
        ("profile_for", False, "litellm.acompletion"),  # inside the pass, before mend
    ],
)
def test_litellms_fail_open_sites_count_failed_open(
    server: StrictProviderServer,
    loop: asyncio.AbstractEventLoop,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    site: str,
    sync: bool,
    hook_name: str,
) -> None:
    with pytest.raises(litellm.BadRequestError):
        chat(loop, server, chat_broken(), sync=sync)
    without = server.last_request
    if site == "begin":
        monkeypatch.setattr(hook._passes, "begin", _fault)
    else:
        monkeypatch.setattr(hook, {"active": "_active", "profile_for": "profile_for"}[site], _fault)
    litellm.callbacks = [ToolMend(), PAYLOADS]
    server.clear()
    history = chat_broken()
    untouched = copy.deepcopy(history)
    with otel.otel_sdk() as memory, caplog.at_level(logging.WARNING, logger="toolmend"):
        with pytest.raises(litellm.BadRequestError):
            chat(loop, server, history, sync=sync)
        points = memory.pairs("toolmend.requests")
    assert server.last_request.body["messages"] == without.body["messages"]  # sent unchanged
    assert history == untouched
    assert [(a["hook"], a["outcome"], v) for a, v in points] == [(hook_name, "failed_open", 1)]
    logged = [r for r in caplog.records if r.name == "toolmend"]
    assert len(logged) == 1 and logged[0].exc_info is not None, [r.getMessage() for r in logged]


def test_a_fault_inside_the_repair_of_a_translated_request_is_one_failed_entry(
    server: StrictProviderServer,
    loop: asyncio.AbstractEventLoop,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The first pass fails open (the original goes out, the provider's 400), the second is
    skipped: one entry, ``guardrail_failed_to_respond``, and one ``failed_open`` request."""
    monkeypatch.setattr(toolmend._fastpath, "vouch", _fault)
    litellm.callbacks = [ToolMend(), PAYLOADS]
    with otel.otel_sdk() as memory, caplog.at_level(logging.WARNING, logger="toolmend"):
        with pytest.raises(litellm.BadRequestError):
            messages_call(loop, deployments(server)["gpt"], claude_code_history())
        points = memory.pairs("toolmend.requests")
    assert server.last_request.status == 400
    (payload,) = PAYLOADS.wait(loop)
    found = the_entry(payload)
    assert (found["guardrail_status"], found["guardrail_action"]) == (
        "guardrail_failed_to_respond",
        "failed_open",
    )
    assert [(a["hook"], a["outcome"], v) for a, v in points] == [
        ("litellm.anthropic_messages", "failed_open", 1)
    ]
    assert len([r for r in caplog.records if r.name == "toolmend"]) == 1


def test_record_later_counts_a_later_pass_as_changes_not_as_a_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Every sink hears a later pass as a report that is not a request (its changes count, the
    request is not counted twice); a sink that raises is logged once, like any sink."""
    heard: list[telemetry.HookReport] = []

    def broken(report: telemetry.HookReport) -> None:
        raise RuntimeError("injected fault in a sink")

    request = telemetry.HookReport("litellm.anthropic_messages", "anthropic", "repaired", ("a",))
    later = telemetry.HookReport("litellm.acompletion", "gemini", "repaired", ("b",))
    sinks = [heard.append, broken]
    for sink in sinks:
        telemetry.add_sink(sink)
    try:
        with caplog.at_level(logging.ERROR, logger="toolmend"):
            telemetry.record_later(request, later)
            telemetry.record_later(request, later)
    finally:
        for sink in sinks:
            telemetry.remove_sink(sink)
        telemetry._failed_sinks.discard(id(broken))
    assert heard == [dataclasses.replace(later, request=False)] * 2
    assert len([r for r in caplog.records if r.name == "toolmend"]) == 1


def test_a_request_the_strict_policy_refuses_is_logged_with_an_intervened_entry(
    server: StrictProviderServer, loop: asyncio.AbstractEventLoop
) -> None:
    """Nothing is sent; the failure LiteLLM logs carries the entry, as a request one of
    LiteLLM's guardrails blocks does."""
    litellm.callbacks = [ToolMend(policy="strict"), PAYLOADS]
    with pytest.raises(toolmend.ToolChainError):
        chat(loop, server, chat_broken())
    assert not server.requests
    (payload,) = PAYLOADS.wait(loop)
    found = the_entry(payload)
    assert (found["guardrail_status"], found["guardrail_action"]) == (
        "guardrail_intervened",
        "problems_left",
    )
    expected = Counter(p.code for p in toolmend.check(chat_broken(), provider="openai"))
    assert found["guardrail_response"]["problems_left"] == dict(expected)
    assert found["guardrail_response"]["changes"] == {}
    assert_no_ids_or_content(found)


def test_a_fault_following_litellms_prometheus_callback_never_costs_the_request(
    server: StrictProviderServer,
    loop: asyncio.AbstractEventLoop,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The async hook first looks for LiteLLM's ``prometheus`` callback: a toolmend error
    there is logged once, and the request is still repaired and sent."""
    monkeypatch.setattr(hook, "_callbacks_seen", None)
    monkeypatch.setattr(hook, "_litellm_prometheus", _fault)
    litellm.callbacks = [ToolMend(), PAYLOADS]
    with caplog.at_level(logging.WARNING, logger="toolmend"):
        chat(loop, server, chat_broken())
    assert server.last_request.accepted, server.last_request.error
    logged = [r for r in caplog.records if r.name == "toolmend" and r.levelno >= logging.ERROR]
    assert len(logged) == 1 and logged[0].exc_info is not None, [r.getMessage() for r in logged]
