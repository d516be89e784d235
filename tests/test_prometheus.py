"""Toolmend's Prometheus metrics (toolmend.integrations.prometheus), on a real LiteLLM Proxy.

The proxy test starts one real ``litellm --config`` process whose config lists LiteLLM's own
``prometheus`` callback beside toolmend's (the operator's whole setup: no code), sends a broken
history through the openai SDK (the strict server refuses it without toolmend), then a valid
one, and reads the proxy's ``/metrics`` with ``prometheus_client``'s parser: the repair is
counted by provider and change code and the request by outcome, the clean request as clean,
beside LiteLLM's own metrics, and no label carries an id, a model or content.

In-process, with a private ``CollectorRegistry`` and toolmend's own ``mend()`` (what every hook
calls): what the sink counts; no toolmend metric without the sink, or without LiteLLM's
``prometheus`` callback (``TOOLMEND_PROMETHEUS`` aside); a sink that raises never costs a
request; a failure turning the metrics on neither; without ``prometheus_client`` the import names
the extra. In subprocesses: two workers in
``prometheus_client``'s multiprocess mode (how LiteLLM runs more than one worker) add up on one
``MultiProcessCollector``, the collector LiteLLM's ``/metrics`` then serves.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import subprocess
import sys
import textwrap
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolmend
from toolmend.integrations import hooks
from toolmend.testing import StrictProviderServer

from support import litellm_proxy
from support.hook_entries import chat_broken, chat_valid

prometheus_client = pytest.importorskip("prometheus_client")
prometheus = pytest.importorskip("toolmend.integrations.prometheus")
litellm_hook = pytest.importorskip("toolmend.integrations.litellm")

CollectorRegistry = prometheus_client.CollectorRegistry

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]

OUTCOMES = {"clean", "repaired", "problems_left", "failed_open"}
TOOLMEND_METRICS = (
    "toolmend_requests",
    "toolmend_changes",
    "toolmend_hook_duration_seconds",
    "toolmend_rescues",
)


def _codes(history: list[Any], provider: str = "openai") -> dict[str, int]:
    """Change code -> how often ``toolmend.repair`` applies it to ``history``."""
    counts: dict[str, int] = {}
    for change in toolmend.repair(history, provider=provider).changes:
        counts[change.code] = counts.get(change.code, 0) + 1
    return counts


def _value(registry: Any, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def _toolmend_samples(registry: Any) -> list[Any]:
    return [
        sample
        for family in registry.collect()
        if family.name.startswith("toolmend_")
        for sample in family.samples
    ]


@pytest.fixture
def registry() -> Iterator[Any]:
    """A private registry counted in for the test (and only for it)."""
    own = CollectorRegistry()
    prometheus.enable(own)
    yield own
    prometheus.disable(own)


# --- the sink, in-process ----------------------------------------------------------------------


def test_the_sink_counts_a_repair_by_code_and_a_clean_request(registry: Any) -> None:
    broken = chat_broken()
    expected = _codes(broken)
    assert expected  # the history does need repair

    mended = hooks.mend(broken, provider="openai", source="litellm.acompletion(gpt-4.1)")
    assert mended.changes
    hooks.mend(chat_valid(), provider="openai", source="litellm.acompletion(gpt-4.1)")

    # the hook's name without the model it was called for: a label takes a few values only
    hook = {"hook": "litellm.acompletion", "provider": "openai"}
    assert _value(registry, "toolmend_requests_total", **hook, outcome="repaired") == 1
    assert _value(registry, "toolmend_requests_total", **hook, outcome="clean") == 1
    for code, count in expected.items():
        assert _value(registry, "toolmend_changes_total", provider="openai", code=code) == count
    assert _value(registry, "toolmend_hook_duration_seconds_count", **hook) == 2
    assert 0 < _value(registry, "toolmend_hook_duration_seconds_sum", **hook) < 1


def test_problems_left_and_a_failure_are_outcomes_of_their_own(
    registry: Any,
) -> None:
    report = hooks.HookOptions(policy="report")  # only log: the problems go out
    hooks.mend(chat_broken(), provider="openai", source="openai.chat", options=report)
    hooks.mend([{"role": "user"}, 3], provider="openai", source="openai.chat")  # unreadable
    hook = {"hook": "openai.chat", "provider": "openai"}
    assert _value(registry, "toolmend_requests_total", **hook, outcome="problems_left") == 1
    assert _value(registry, "toolmend_requests_total", **hook, outcome="failed_open") == 1


def test_a_stored_history_healed_counts_its_changes_not_a_request(registry: Any) -> None:
    """``request=False`` (a chat's stored history, LiteLLM's second pass): the changes are
    counted, no request and no duration."""
    expected = _codes(chat_broken())
    hooks.mend(chat_broken(), provider="openai", source="genai.Chat", request=False)
    for code, count in expected.items():
        assert _value(registry, "toolmend_changes_total", provider="openai", code=code) == count
    names = {sample.name for sample in _toolmend_samples(registry) if sample.value}
    assert not any(
        name.startswith(("toolmend_requests", "toolmend_hook_duration")) for name in names
    )


def test_nothing_is_counted_without_the_sink() -> None:
    """The fail-without: the same repair, with the sink off, leaves the registry empty."""
    own = CollectorRegistry()
    prometheus.enable(own)
    prometheus.disable(own)
    assert not prometheus.is_enabled(own)
    mended = hooks.mend(chat_broken(), provider="openai", source="litellm.acompletion(m)")
    assert mended.changes
    assert _toolmend_samples(own) == []  # the metrics are there, with no request counted
    assert {family.name for family in own.collect()} == set(TOOLMEND_METRICS)


def test_enable_is_idempotent_and_names_match_the_otel_exporter() -> None:
    own = CollectorRegistry()
    try:
        first = prometheus.enable(own)
        assert prometheus.enable(own) is first  # the metrics are made once per registry
        hooks.mend(chat_valid(), provider="openai", source="openai.chat")
        clean = {"hook": "openai.chat", "provider": "openai", "outcome": "clean"}
        assert _value(own, "toolmend_requests_total", **clean) == 1  # once, not twice
    finally:
        prometheus.disable(own)
    # what the OpenTelemetry Prometheus exporter makes of toolmend.requests ({request}),
    # toolmend.changes ({change}), toolmend.hook.duration (s) and toolmend.rescues ({request})
    names = {family.name: family.type for family in own.collect()}
    assert names == {
        "toolmend_requests": "counter",
        "toolmend_changes": "counter",
        "toolmend_hook_duration_seconds": "histogram",
        "toolmend_rescues": "counter",
    }


def test_a_failing_sink_never_costs_a_request(
    registry: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Fail open: the sink raises on every report; the repair still goes out, and the fault is
    logged once, with its traceback."""
    sink = prometheus.enable(registry)

    class InjectedFaultError(RuntimeError):
        pass

    def broken_labels(*args: object, **kwargs: object) -> None:
        raise InjectedFaultError("injected")

    monkeypatch.setattr(sink.requests, "labels", broken_labels)
    broken = chat_broken()
    expected = toolmend.repair(chat_broken(), provider="openai").messages
    with caplog.at_level(logging.DEBUG, logger="toolmend"):
        first = hooks.mend(broken, provider="openai", source="openai.chat")
        second = hooks.mend(chat_broken(), provider="openai", source="openai.chat")
    assert first.messages == expected and second.messages == expected
    assert broken == chat_broken()  # the caller's list untouched
    failures = [r for r in caplog.records if r.name == "toolmend" and r.levelno >= logging.ERROR]
    assert len(failures) == 1, [r.getMessage() for r in failures]
    assert failures[0].exc_info is not None and failures[0].exc_info[0] is InjectedFaultError


def test_without_prometheus_client_the_import_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "toolmend.integrations.prometheus")
    with pytest.raises(ImportError, match=r"pip install 'toolmend\[prometheus\]'"):
        importlib.import_module("toolmend.integrations.prometheus")


# --- LiteLLM's callback turns the metrics on ---------------------------------------------------


@pytest.fixture
def litellm_callbacks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """LiteLLM's callback list for the test, toolmend's metrics off before and after it."""
    import litellm

    callbacks: list[Any] = []
    monkeypatch.setattr(litellm, "callbacks", callbacks)
    monkeypatch.setattr(litellm, "success_callback", [])
    monkeypatch.setattr(litellm_hook, "_callbacks_seen", None)
    monkeypatch.delenv(litellm_hook.PROMETHEUS_ENV, raising=False)
    was_on = prometheus.is_enabled()
    prometheus.disable()
    yield callbacks
    prometheus.disable()
    if was_on:
        prometheus.enable()


def test_the_litellm_callback_follows_litellm_prometheus_callback(
    litellm_callbacks: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    handler = litellm_hook.ToolMend()
    litellm_callbacks.append(handler)
    litellm_hook._follow_prometheus()
    assert not prometheus.is_enabled()  # toolmend's callback alone: no metrics

    monkeypatch.setenv(litellm_hook.PROMETHEUS_ENV, "0")
    litellm_callbacks.insert(0, "prometheus")  # what the proxy's config puts there
    litellm_hook._follow_prometheus()
    assert not prometheus.is_enabled()  # the operator said no

    monkeypatch.delenv(litellm_hook.PROMETHEUS_ENV)
    litellm_callbacks.append(object())  # a list that changed is read again
    litellm_hook._follow_prometheus()
    assert prometheus.is_enabled()


def test_litellm_prometheus_as_a_success_callback_counts_too(litellm_callbacks: list[Any]) -> None:
    """The older config form, ``success_callback: ["prometheus"]``, mounts ``/metrics`` too."""
    import litellm

    litellm_callbacks.append(litellm_hook.ToolMend())
    litellm.success_callback.append("prometheus")
    litellm_hook._follow_prometheus()
    assert prometheus.is_enabled()


def test_the_env_var_turns_the_metrics_on_without_litellm_prometheus(
    litellm_callbacks: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    litellm_callbacks.append(litellm_hook.ToolMend())
    monkeypatch.setenv(litellm_hook.PROMETHEUS_ENV, "1")
    litellm_hook._follow_prometheus()
    assert prometheus.is_enabled()


def test_a_failure_turning_the_metrics_on_is_logged_and_the_request_goes_on(
    litellm_callbacks: list[Any],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def refuse(registry: object = None) -> None:
        raise ValueError("Duplicated timeseries in CollectorRegistry")

    monkeypatch.setattr(prometheus, "enable", refuse)
    litellm_callbacks.extend(["prometheus", litellm_hook.ToolMend()])
    with caplog.at_level(logging.DEBUG, logger="toolmend"):
        litellm_hook._follow_prometheus()
        litellm_hook._follow_prometheus()  # the lists did not change: not tried again
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(failures) == 1 and failures[0].exc_info is not None
    assert not prometheus.is_enabled()


# --- multiprocess mode: several workers, one /metrics ------------------------------------------

_WORKER = """\
import json, sys
from toolmend.integrations import hooks, prometheus
prometheus.enable()
for history in json.loads(sys.argv[1]):
    hooks.mend(history, provider="openai", source="litellm.acompletion(gpt-4.1)")
"""


@pytest.mark.slow
def test_multiprocess_mode_adds_up_every_workers_counts(tmp_path: Path) -> None:
    """Two worker processes with ``PROMETHEUS_MULTIPROC_DIR`` set (as LiteLLM sets it for
    several workers) count into that directory; a ``MultiProcessCollector`` over it, which is
    what LiteLLM's ``/metrics`` serves then, shows both workers' requests."""
    from prometheus_client import multiprocess

    environment = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    for histories in ([chat_broken()], [chat_broken(), chat_valid()]):
        subprocess.run(
            [sys.executable, "-c", _WORKER, json.dumps(histories)],
            env=environment,
            check=True,
            timeout=60,
        )
    assert len(list(tmp_path.glob("*.db"))) >= 2  # each worker wrote its own files
    served = CollectorRegistry()
    multiprocess.MultiProcessCollector(served, path=str(tmp_path))
    hook = {"hook": "litellm.acompletion", "provider": "openai"}
    assert _value(served, "toolmend_requests_total", **hook, outcome="repaired") == 2
    assert _value(served, "toolmend_requests_total", **hook, outcome="clean") == 1
    for code, count in _codes(chat_broken()).items():
        assert _value(served, "toolmend_changes_total", provider="openai", code=code) == 2 * count
    assert _value(served, "toolmend_hook_duration_seconds_count", **hook) == 3


# --- a real LiteLLM Proxy ----------------------------------------------------------------------

_CONFIG = """\
model_list:
  - model_name: gpt
    litellm_params: {{model: openai/gpt-4.1, api_base: "{openai}", api_key: sk-test}}
litellm_settings:
  num_retries: 0
  callbacks: ["prometheus", "toolmend.integrations.litellm.proxy_handler"]
general_settings:
  master_key: sk-toolmend
"""


@pytest.fixture(scope="module")
def server() -> Iterator[StrictProviderServer]:
    with StrictProviderServer() as running:
        yield running


@pytest.fixture(scope="module")
def proxy(server: StrictProviderServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One real ``litellm --config`` process with LiteLLM's ``prometheus`` callback and
    toolmend's, in front of the strict server."""
    reason = litellm_proxy.unavailable()
    if reason:
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("proxy_prometheus")
    config = folder / "config.yaml"
    config.write_text(textwrap.dedent(_CONFIG.format(openai=server.openai_base_url)))
    running = litellm_proxy.Proxy(config, folder, {})
    try:
        running.wait_ready()
        yield running.base
    finally:
        running.stop()


def _metrics(base: str) -> Samples:
    """The proxy's ``/metrics`` page, parsed: (sample name, labels) -> value."""
    request = urllib.request.Request(
        base + "/metrics/", headers={"Authorization": "Bearer sk-toolmend"}
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        page = reply.read().decode()
    from prometheus_client.parser import text_string_to_metric_families

    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(page)
        for sample in family.samples
    }


def _sample(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


@pytest.mark.slow
def test_proxy_metrics_count_the_repair_and_the_clean_request(
    server: StrictProviderServer, proxy: str
) -> None:
    import openai

    direct = openai.OpenAI(base_url=server.openai_base_url, api_key="sk-test", max_retries=0)
    with pytest.raises(openai.BadRequestError):  # without toolmend: the provider's 400
        direct.chat.completions.create(model="gpt-4.1", messages=chat_broken())
    server.clear()

    client = openai.OpenAI(base_url=proxy + "/v1", api_key="sk-toolmend", max_retries=0)
    hook = {"hook": "litellm.acompletion", "provider": "openai"}
    before = _metrics(proxy)
    client.chat.completions.create(model="gpt", messages=chat_broken())
    assert server.last_request.accepted, server.last_request.error
    repaired = _metrics(proxy)
    client.chat.completions.create(model="gpt", messages=chat_valid())
    clean = _metrics(proxy)

    def grew(after: Samples, earlier: Samples, name: str, **labels: str) -> float:
        return _sample(after, name, **labels) - _sample(earlier, name, **labels)

    assert grew(repaired, before, "toolmend_requests_total", **hook, outcome="repaired") == 1
    assert grew(repaired, before, "toolmend_requests_total", **hook, outcome="clean") == 0
    for code, count in _codes(chat_broken()).items():
        assert grew(repaired, before, "toolmend_changes_total", provider="openai", code=code) == (
            count
        )
    assert grew(clean, repaired, "toolmend_requests_total", **hook, outcome="clean") == 1
    assert grew(clean, repaired, "toolmend_requests_total", **hook, outcome="repaired") == 0
    assert grew(clean, before, "toolmend_hook_duration_seconds_count", **hook) == 2


@pytest.mark.slow
def test_proxy_metrics_sit_beside_litellms_and_name_no_id_model_or_content(
    server: StrictProviderServer, proxy: str
) -> None:
    import openai

    client = openai.OpenAI(base_url=proxy + "/v1", api_key="sk-toolmend", max_retries=0)
    client.chat.completions.create(model="gpt", messages=chat_broken())
    samples = _metrics(proxy)
    names = {name for name, _ in samples}
    assert "litellm_proxy_total_requests_metric_total" in names  # LiteLLM's own, same page
    ours = {
        (name, labels)
        for name, labels in samples
        if name.startswith(TOOLMEND_METRICS) and not name.endswith("_created")
    }
    assert ours
    values = {value for _, labels in ours for key, value in labels if key != "le"}
    codes = set(_codes(chat_broken()))
    assert values <= {"litellm.acompletion", "openai"} | OUTCOMES | codes, values
    page_text = json.dumps(sorted(str(s) for s in ours))
    for secret in ("call_1", "gpt-4.1", "Paris", "Still there?"):
        assert secret not in page_text
