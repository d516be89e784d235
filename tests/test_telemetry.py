"""What the hooks tell an operator's traces and metrics (toolmend.integrations.telemetry).

Every hook entry point (tests/support/hook_entries.py) reports exactly one request per call
through a real SDK call to the strict server: ``repaired`` with the codes of what it changed,
``clean`` when nothing needed changing, ``failed_open`` when a fault inside toolmend sent the
original. Through the OpenTelemetry SDK (in-memory exporters, set up the way an application
sets them up), a real patched openai call puts toolmend's attributes on the span current at
repair time and counts the request, its changes and its duration; ids and content reach no
attribute and no metric label; with OpenTelemetry not imported nothing of it is imported.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolmend
import toolmend.integrations.patch as tm
from toolmend.integrations import hooks, telemetry
from toolmend.testing import StrictProviderServer

from support.event_loops import close_loop
from support.faults import FAULTS, FULL_PATH_ONLY, faults_for
from support.hook_entries import HOOKS, Hook, chat_broken, chat_valid, outcome, shared_loop
from support.otel import OtelSdk, otel_sdk, reset_globals

openai = pytest.importorskip("openai")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def server() -> Iterator[StrictProviderServer]:
    with StrictProviderServer() as running:
        yield running
    close_loop(shared_loop())


@pytest.fixture
def reports() -> Iterator[list[telemetry.HookReport]]:
    """Every report made during the test, through a sink of its own."""
    heard: list[telemetry.HookReport] = []
    telemetry.add_sink(heard.append)
    yield heard
    telemetry.remove_sink(heard.append)


@pytest.fixture
def sdk() -> Iterator[OtelSdk]:
    with otel_sdk() as configured:
        yield configured


def requests_of(heard: list[telemetry.HookReport]) -> list[telemetry.HookReport]:
    return [report for report in heard if report.request]


# --- every hook reports each request once ----------------------------------------------------

REQUEST_HOOKS = [hook for hook in HOOKS if "write" not in hook.name]
"""The history wrapper's writes store messages; no request goes out through them."""


@pytest.mark.parametrize("hook", REQUEST_HOOKS, ids=str)
def test_every_hook_reports_a_repaired_request_once(
    server: StrictProviderServer, hook: Hook, reports: list[telemetry.HookReport]
) -> None:
    done = outcome(hook, server, hook.broken(), {})
    assert done.statuses == (200,)
    [report] = requests_of(reports)
    assert report.outcome == "repaired"
    assert report.change_codes and report.problems_left == 0
    assert "(" not in report.hook and report.duration > 0
    # the codes are those of what the hook changed: repairing the history again finds them
    again = toolmend.repair(hook.broken(), provider=report.provider, format=hook.format)
    assert sorted(report.change_codes) == sorted(change.code for change in again.changes)


@pytest.mark.parametrize("hook", REQUEST_HOOKS, ids=str)
def test_every_hook_reports_a_clean_request_once(
    server: StrictProviderServer, hook: Hook, reports: list[telemetry.HookReport]
) -> None:
    done = outcome(hook, server, hook.valid(), {})
    assert done.statuses == (200,)
    assert [(r.outcome, r.change_codes) for r in requests_of(reports)] == [("clean", ())]


FAULT_CASES = [
    pytest.param(hook, fault, id=f"{hook}-{fault}")
    for hook in REQUEST_HOOKS
    for fault in faults_for(hook)
    if fault not in FULL_PATH_ONLY or fault == "damage_in"
]


@pytest.mark.parametrize(("hook", "fault"), FAULT_CASES)
def test_a_fault_inside_toolmend_reports_failed_open(
    server: StrictProviderServer,
    hook: Hook,
    fault: str,
    reports: list[telemetry.HookReport],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    FAULTS[fault](monkeypatch)
    done = outcome(hook, server, hook.broken(), {})
    assert done.statuses == (400,)  # the original went out, and the provider refused it
    assert [r.outcome for r in requests_of(reports)] == ["failed_open"]


# --- OpenTelemetry through a real patched openai call -----------------------------------------


def _send(server: StrictProviderServer, history: list[Any], **options: Any) -> Any:
    tm.patch(**options)
    try:
        client = openai.OpenAI(base_url=server.openai_base_url, api_key="t", max_retries=0)
        return client.chat.completions.create(model="gpt-4o", messages=history)
    finally:
        tm.unpatch()


HOOK = "openai.Completions.create"


def test_a_repair_shows_on_the_current_span_and_in_the_metrics(
    server: StrictProviderServer, sdk: OtelSdk
) -> None:
    history = chat_broken()
    with sdk.tracer.start_as_current_span("chat"):
        _send(server, history)
    [span] = sdk.spans()
    expected = toolmend.repair(history, provider="openai")
    codes = [change.code for change in expected.changes]
    assert dict(span.attributes or {}) == {
        "toolmend.provider": "openai",
        "toolmend.outcome": "repaired",
        "toolmend.changes.count": len(codes),
        "toolmend.change_codes": tuple(sorted(set(codes))),
        "toolmend.problems_left.count": 0,
    }
    labels = (("hook", HOOK), ("outcome", "repaired"), ("provider", "openai"))
    assert sdk.points("toolmend.requests") == {labels: 1}
    assert sdk.points("toolmend.changes") == {
        (("code", code), ("provider", "openai")): codes.count(code) for code in set(codes)
    }
    assert sdk.points("toolmend.hook.duration") == {(("hook", HOOK), ("provider", "openai")): 1}


def test_a_clean_request_is_counted_with_no_change(
    server: StrictProviderServer, sdk: OtelSdk
) -> None:
    with sdk.tracer.start_as_current_span("chat"):
        _send(server, chat_valid())
        _send(server, chat_valid())
    [span] = sdk.spans()
    assert span.attributes is not None
    assert span.attributes["toolmend.outcome"] == "clean"
    assert span.attributes["toolmend.changes.count"] == 0
    assert "toolmend.change_codes" not in span.attributes
    labels = (("hook", HOOK), ("outcome", "clean"), ("provider", "openai"))
    assert sdk.points("toolmend.requests") == {labels: 2}
    assert sdk.points("toolmend.changes") == {}


def test_problems_left_under_the_report_policy(server: StrictProviderServer, sdk: OtelSdk) -> None:
    history = chat_broken()
    with sdk.tracer.start_as_current_span("chat"), pytest.raises(openai.BadRequestError):
        _send(server, history, policy="report")
    [span] = sdk.spans()
    found = toolmend.check(history, provider="openai")
    assert span.attributes is not None
    assert span.attributes["toolmend.outcome"] == "problems_left"
    assert span.attributes["toolmend.problems_left.count"] == len(found) > 0
    labels = (("hook", HOOK), ("outcome", "problems_left"), ("provider", "openai"))
    assert sdk.points("toolmend.requests") == {labels: 1}


def _looping() -> list[Any]:
    history: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    for turn in range(6):
        call = {
            "id": f"call_{turn}",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        }
        history.append({"role": "assistant", "content": None, "tool_calls": [call]})
        history.append({"role": "tool", "tool_call_id": f"call_{turn}", "content": "21 C"})
    return history


def test_the_loop_guard_shows_on_the_span(server: StrictProviderServer, sdk: OtelSdk) -> None:
    history = _looping()
    loops = toolmend.detect_loops(history, live_only=True)
    assert loops  # the history is a loop the guard reports
    with sdk.tracer.start_as_current_span("chat"):
        _send(server, history)
    [span] = sdk.spans()
    assert span.attributes is not None
    assert span.attributes["toolmend.loop"] == tuple(sorted({p.code for p in loops}))
    assert span.attributes["toolmend.outcome"] == "clean"


def test_a_loop_the_guard_refuses_counts_as_problems_left(
    server: StrictProviderServer, sdk: OtelSdk
) -> None:
    server.clear()
    with sdk.tracer.start_as_current_span("chat"), pytest.raises(toolmend.ToolLoopError):
        _send(server, _looping(), on_loop="raise")
    assert server.requests == []  # refused before anything was sent
    [((labels, count),)] = [tuple(sdk.points("toolmend.requests").items())]
    assert dict(labels)["outcome"] == "problems_left" and count == 1


def test_a_failure_counts_as_failed_open(
    server: StrictProviderServer, sdk: OtelSdk, monkeypatch: pytest.MonkeyPatch
) -> None:
    FAULTS["damage_in"](monkeypatch)
    with sdk.tracer.start_as_current_span("chat"), pytest.raises(openai.BadRequestError):
        _send(server, chat_broken())
    [span] = sdk.spans()
    assert span.attributes is not None and span.attributes["toolmend.outcome"] == "failed_open"
    labels = (("hook", HOOK), ("outcome", "failed_open"), ("provider", "openai"))
    assert sdk.points("toolmend.requests") == {labels: 1}


def test_a_span_sampled_out_gets_nothing_but_the_metrics_count(
    server: StrictProviderServer,
) -> None:
    with otel_sdk(sampled=False) as sdk:
        with sdk.tracer.start_as_current_span("chat") as span:
            assert not span.is_recording()
            _send(server, chat_broken())
        assert sdk.spans() == ()
        assert sum(sdk.points("toolmend.requests").values()) == 1


def test_no_sdk_configured_records_nothing_and_builds_nothing(
    server: StrictProviderServer,
) -> None:
    reset_globals()
    _send(server, chat_broken())  # the API is imported, its providers are the no-op proxies
    assert telemetry._OTEL._instruments is None
    with otel_sdk() as sdk:  # configured later, as an application may: counted from then on
        _send(server, chat_broken())
        assert sum(sdk.points("toolmend.requests").values()) == 1


def test_a_sink_that_fails_never_fails_the_request(
    server: StrictProviderServer, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(report: telemetry.HookReport) -> None:
        raise RuntimeError("sink down")

    telemetry.add_sink(broken)
    try:
        with caplog.at_level(logging.ERROR, logger="toolmend"):
            for _ in range(3):
                assert _send(server, chat_broken()).choices
    finally:
        telemetry.remove_sink(broken)
        telemetry._failed_sinks.discard(id(broken))
    failures = [r for r in caplog.records if "could not report" in r.getMessage()]
    assert len(failures) == 1 and failures[0].exc_info is not None


# --- no ids, no content ------------------------------------------------------------------------

_ID = st.text("abcdefghijklmnopqrstuvwxyz0123456789_", min_size=6, max_size=12).map(
    lambda s: f"zq{s}"
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(call_id=_ID, orphan_id=_ID, secret=st.text(min_size=8, max_size=20).map(lambda s: f"Q{s}"))
def test_no_id_and_no_content_reach_an_attribute_or_a_label(
    call_id: str, orphan_id: str, secret: str
) -> None:
    history = [
        {"role": "user", "content": secret},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "user", "content": secret},
        {"role": "tool", "tool_call_id": call_id, "content": secret},
        {"role": "tool", "tool_call_id": orphan_id, "content": secret},
    ]
    with otel_sdk() as sdk:
        with sdk.tracer.start_as_current_span("chat"):
            mended = hooks.mend(history, provider="openai", source="test.hook(model-x)")
        assert mended.changes
        exported = json.dumps(
            [dict(span.attributes or {}) for span in sdk.spans()]
            + [list(sdk.points(name)) for name in sorted(sdk.metric_names())]
        )
    for value in (call_id, orphan_id, secret, "model-x"):
        assert value not in exported and json.dumps(value)[1:-1] not in exported


# --- nothing imported without OpenTelemetry --------------------------------------------------


@pytest.mark.slow
def test_nothing_of_opentelemetry_is_imported_when_the_app_does_not_use_it() -> None:
    script = """
import sys
from toolmend.integrations.hooks import mend
history = [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "c", "content": "x"}]
assert mend(history, provider="openai", source="x").changes
assert mend(history[:1], provider="openai", source="x").messages is not None
print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


# --- threads ---------------------------------------------------------------------------------


def test_requests_reported_while_the_instruments_are_built_are_all_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first reports after an SDK is set come from several threads at once (a proxy's
    workers): one builds the instruments, and a report made meanwhile is counted in them, not
    dropped (nor counted in the instruments of the provider before)."""
    import threading

    from opentelemetry import metrics

    report = telemetry.HookReport("test.hook", "openai", "clean")
    with otel_sdk() as sdk:
        provider = metrics.get_meter_provider()
        building, go_on = threading.Event(), threading.Event()
        real = provider.get_meter
        first = [True]

        def slow_get_meter(*args: Any, **kwargs: Any) -> Any:
            if first[0]:  # the first thread to build waits here, holding the build
                first[0] = False
                building.set()
                go_on.wait(120)
            return real(*args, **kwargs)

        monkeypatch.setattr(provider, "get_meter", slow_get_meter)
        builder = threading.Thread(target=telemetry.record, args=(report,))
        builder.start()
        assert building.wait(120)
        meanwhile = threading.Thread(target=telemetry.record, args=(report,))
        meanwhile.start()
        meanwhile.join(0.5)  # it waits for the build, or (the bug) drops its report at once
        go_on.set()
        builder.join(120)
        meanwhile.join(120)
        assert sum(sdk.points("toolmend.requests").values()) == 2


@pytest.mark.slow
def test_the_hook_benchmarks_measure_a_process_without_opentelemetry() -> None:
    """``bench_patch.py`` and ``bench_litellm.py`` without ``--otel`` time the hooks as a process
    without OpenTelemetry runs them (one dictionary lookup): they import none of it, and run
    where the SDK is not installed."""
    script = """
import os, sys
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
sys.path.insert(0, "benchmarks")
import bench_litellm, bench_patch
print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
"""
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert done.stdout.strip() == "[]"
