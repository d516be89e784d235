"""What a rescue tells an operator's traces and metrics (issue 34).

Each case sends a history with the real openai SDK to the strict server, which refuses it with
a provider's error text (``refuse=``: a rule toolmend does not know, or, with the server judging
as Mistral while the hook believes it talks to OpenAI, Mistral's real error for a rule toolmend
does know). The SDK raises its real ``openai.BadRequestError``; the test does what every hook
does with it (``toolmend.integrations.rescue.retry_history``, then the one retry with the
history it returns) and reads what OpenTelemetry (the SDK's in-memory exporter and reader) and
Prometheus (a private ``CollectorRegistry``) were told:

* the span: ``toolmend.outcome`` ``rescued``, ``toolmend.rescue.rule``, the retry's change
  count and codes, the first request's counts kept;
* the metrics: the retry counted in ``toolmend.requests`` with outcome ``rescued`` (it is a
  second HTTP request), ``toolmend.rescues`` / ``toolmend_rescues_total`` by hook, provider
  and rule;
* a refusal that is not rescued (context length; the switch off) counts no rescue;
* every label is one of toolmend's names, whatever the provider's text or the report says.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolmend.integrations import hooks, telemetry
from toolmend.integrations.rescue import retry_history
from toolmend.profiles import PROFILES
from toolmend.testing import StrictProviderServer

from support.otel import OtelSdk, otel_sdk

openai = pytest.importorskip("openai")
prometheus_client = pytest.importorskip("prometheus_client")
prometheus = pytest.importorskip("toolmend.integrations.prometheus")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

HOOK = "openai.Completions.create"
SOURCE = f"{HOOK}(gpt-4o)"

UNKNOWN_RULE = (
    "Invalid request: tool message 'call_7Zq' may not follow an assistant turn on this "
    "deployment <b>\u202e\x1b[2J"
)
"""A rule no profile holds, with the kind of text a provider quotes (an id, markup, control
characters): it must reach no label and no attribute."""

RESULTS = ("21 C and sunny", "Paris, France")


def history() -> list[dict[str, Any]]:
    """A history every profile accepts, with two tool results."""
    calls = [
        {"id": f"call_{n}", "type": "function", "function": {"name": "w", "arguments": "{}"}}
        for n in (1, 2)
    ]
    return [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "call_1", "content": RESULTS[0]},
        {"role": "tool", "tool_call_id": "call_2", "content": RESULTS[1]},
        {"role": "assistant", "content": "It is 21 C."},
        {"role": "user", "content": "Thanks. Tomorrow?"},
    ]


def _client(server: StrictProviderServer) -> Any:
    return openai.OpenAI(api_key="t", base_url=server.openai_base_url, max_retries=0)


def _hook_call(server: StrictProviderServer, sent: list[Any], **options: Any) -> Any:
    """What a hook does: repair, send; on the SDK's error ask for the retry and send it once
    (or raise the provider's error). Returns the rescue (``None``: not rescued)."""
    mended = hooks.mend(sent, provider="openai", source=SOURCE)
    client = _client(server)
    try:
        client.chat.completions.create(model="gpt-4o", messages=mended.messages)
    except openai.BadRequestError as error:
        rescued = retry_history(mended.messages, error, provider="openai", source=SOURCE, **options)
        if rescued is None:
            return None
        client.chat.completions.create(model="gpt-4o", messages=rescued.messages)
        return rescued
    raise AssertionError("the server did not refuse the history")


@pytest.fixture
def sdk() -> Iterator[OtelSdk]:
    with otel_sdk() as configured:
        yield configured


@pytest.fixture
def registry() -> Iterator[Any]:
    own = prometheus_client.CollectorRegistry()
    prometheus.enable(own)
    yield own
    prometheus.disable(own)


def _succeeded_with_every_result(server: StrictProviderServer) -> None:
    first, last = server.requests
    assert first.refused or first.status == 400
    assert last.status == 200
    body = json.dumps(last.body)
    assert all(result in body for result in RESULTS)


# --- OpenTelemetry ------------------------------------------------------------------------------


@pytest.mark.strict_provider(refuse=UNKNOWN_RULE)
def test_a_flattened_rescue_on_the_span_and_in_the_metrics(
    strict_provider: StrictProviderServer, sdk: OtelSdk
) -> None:
    sent = history()
    with sdk.tracer.start_as_current_span("chat"):
        rescued = _hook_call(strict_provider, sent)
    assert rescued is not None and rescued.rule == "flattened"
    _succeeded_with_every_result(strict_provider)
    codes = [change.code for change in rescued.changes]
    [span] = sdk.spans()
    assert dict(span.attributes or {}) == {
        # the first request's report (clean), then the rescue's outcome and its own counts
        "toolmend.provider": "openai",
        "toolmend.outcome": "rescued",
        "toolmend.changes.count": 0,
        "toolmend.problems_left.count": 0,
        "toolmend.rescue.rule": "flattened",
        "toolmend.rescue.changes.count": len(codes),
        "toolmend.rescue.change_codes": tuple(sorted(set(codes))),
    }
    labels = (("hook", HOOK), ("provider", "openai"))
    # the retry is a second request: counted, with outcome rescued
    assert sdk.points("toolmend.requests") == {
        (("hook", HOOK), ("outcome", "clean"), ("provider", "openai")): 1,
        (("hook", HOOK), ("outcome", "rescued"), ("provider", "openai")): 1,
    }
    assert sdk.points("toolmend.rescues") == {(*labels, ("rule", "flattened")): 1}
    assert sdk.points("toolmend.changes") == {
        (("code", code), ("provider", "openai")): codes.count(code) for code in set(codes)
    }
    assert sdk.points("toolmend.hook.duration") == {labels: 2}
    exported = json.dumps(
        [dict(span.attributes or {}) for span in sdk.spans()]
        + [list(sdk.points(name)) for name in sorted(sdk.metric_names())]
    )
    for text in ("call_7Zq", "call_1", "Invalid request", "\\u202e", *RESULTS):
        assert text not in exported
    assert sent == history()  # the caller's list is as it was


@pytest.mark.strict_provider(provider="mistral")
def test_a_known_rule_rescue_names_its_rule(
    strict_provider: StrictProviderServer, sdk: OtelSdk
) -> None:
    """The hook believes it talks to OpenAI; the server judges as Mistral and answers with
    Mistral's own error for its call id rule, a rule toolmend knows."""
    with sdk.tracer.start_as_current_span("chat"):
        rescued = _hook_call(strict_provider, history())
    assert rescued is not None and rescued.profile == "mistral"
    assert rescued.rule in PROFILES["mistral"].checks
    _succeeded_with_every_result(strict_provider)
    [span] = sdk.spans()
    assert span.attributes is not None
    assert span.attributes["toolmend.rescue.rule"] == rescued.rule
    labels = (("hook", HOOK), ("provider", "openai"), ("rule", rescued.rule))
    assert sdk.points("toolmend.rescues") == {labels: 1}


CONTEXT_LENGTH = (
    "This model's maximum context length is 128000 tokens. However, your messages resulted in "
    "130412 tokens (including the tool_calls). Please reduce the length of the messages."
)


@pytest.mark.parametrize("off", ["option", "environment"])
@pytest.mark.strict_provider(refuse=UNKNOWN_RULE)
def test_no_rescue_when_it_is_off(
    strict_provider: StrictProviderServer,
    sdk: OtelSdk,
    registry: Any,
    off: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    options: dict[str, Any] = {}
    if off == "option":
        options["rescue_on"] = False
    else:
        monkeypatch.setenv("TOOLMEND_RESCUE", "0")
    with sdk.tracer.start_as_current_span("chat"):
        assert _hook_call(strict_provider, history(), **options) is None
    assert len(strict_provider.requests) == 1
    _nothing_rescued(sdk, registry)


@pytest.mark.strict_provider(refuse=CONTEXT_LENGTH)
def test_an_error_no_rewrite_cures_counts_no_rescue(
    strict_provider: StrictProviderServer, sdk: OtelSdk, registry: Any
) -> None:
    with sdk.tracer.start_as_current_span("chat"):
        assert _hook_call(strict_provider, history()) is None
    assert len(strict_provider.requests) == 1
    _nothing_rescued(sdk, registry)


def _nothing_rescued(sdk: OtelSdk, registry: Any) -> None:
    [span] = sdk.spans()
    assert span.attributes is not None and span.attributes["toolmend.outcome"] == "clean"
    assert not any(key.startswith("toolmend.rescue.") for key in span.attributes)
    assert sdk.points("toolmend.rescues") == {}
    assert [dict(labels)["outcome"] for labels in sdk.points("toolmend.requests")] == ["clean"]
    assert registry.get_sample_value("toolmend_requests_total", _labels("clean")) == 1
    assert registry.get_sample_value("toolmend_requests_total", _labels("rescued")) is None
    assert not [s for s in _samples(registry) if s.name.startswith("toolmend_rescues")]


# --- Prometheus ---------------------------------------------------------------------------------


def _labels(outcome: str) -> dict[str, str]:
    return {"hook": HOOK, "provider": "openai", "outcome": outcome}


def _samples(registry: Any) -> list[Any]:
    return [
        sample
        for family in registry.collect()
        if family.name.startswith("toolmend_")
        for sample in family.samples
    ]


@pytest.mark.strict_provider(refuse=UNKNOWN_RULE)
def test_prometheus_counts_the_rescue_by_rule(
    strict_provider: StrictProviderServer, registry: Any
) -> None:
    rescued = _hook_call(strict_provider, history())
    assert rescued is not None
    _succeeded_with_every_result(strict_provider)
    rescue = {"hook": HOOK, "provider": "openai", "rule": "flattened"}
    assert registry.get_sample_value("toolmend_rescues_total", rescue) == 1
    assert registry.get_sample_value("toolmend_requests_total", _labels("clean")) == 1
    assert registry.get_sample_value("toolmend_requests_total", _labels("rescued")) == 1
    flattened = {"provider": "openai", "code": "flattened_tool_traffic"}
    assert registry.get_sample_value("toolmend_changes_total", flattened) == sum(
        change.code == "flattened_tool_traffic" for change in rescued.changes
    )
    values = {
        value
        for sample in _samples(registry)
        for key, value in sample.labels.items()
        if key != "le"
    }
    codes = {change.code for change in rescued.changes}
    assert values == {HOOK, "openai", "clean", "rescued", "flattened", *codes}


@pytest.mark.strict_provider(provider="mistral")
def test_prometheus_counts_a_known_rule_under_its_code(
    strict_provider: StrictProviderServer, registry: Any
) -> None:
    rescued = _hook_call(strict_provider, history())
    assert rescued is not None and rescued.rule != "flattened"
    rescue = {"hook": HOOK, "provider": "openai", "rule": rescued.rule}
    assert registry.get_sample_value("toolmend_rescues_total", rescue) == 1


# --- labels stay toolmend's own -----------------------------------------------------------------


def test_a_rule_that_is_not_toolmends_is_counted_as_other(sdk: OtelSdk, registry: Any) -> None:
    """A sink may be handed any report (``HookReport`` is public): a rule that is none of
    toolmend's never becomes a label value."""
    said = "Tool call id was call_1 but must be a-z, A-Z, 0-9"
    with sdk.tracer.start_as_current_span("chat"):
        telemetry.record(telemetry.HookReport(HOOK, "openai", "rescued", rule=said))
    [span] = sdk.spans()
    assert span.attributes is not None
    assert span.attributes["toolmend.rescue.rule"] == "other"
    labels = (("hook", HOOK), ("provider", "openai"), ("rule", "other"))
    assert sdk.points("toolmend.rescues") == {labels: 1}
    other = {"hook": HOOK, "provider": "openai", "rule": "other"}
    assert registry.get_sample_value("toolmend_rescues_total", other) == 1


RULES = sorted({code for p in PROFILES.values() for code in {**p.checks, **p.strict_checks}})


@given(st.one_of(st.sampled_from([*RULES, "flattened"]), st.text(max_size=60)))
def test_rule_label_is_a_rule_or_other(rule: str) -> None:
    label = telemetry.rule_label(rule)
    assert label == (rule if rule in {*RULES, "flattened"} else "other")
