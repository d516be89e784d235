"""The OpenTelemetry SDK configured the way an instrumented application configures it, for the
hook benchmarks' ``--otel`` option.

A tracer provider that samples every span, with a batch processor and an exporter that drops
what it is handed (so export costs nothing but the SDK's own bookkeeping), and a meter provider
with a reader: toolmend then sets its span attributes and records its three metrics on every
call. Each timed call, with toolmend and without, runs inside a span of its own, as a request
handled by an instrumented web framework would, so the ratio is toolmend's share with
OpenTelemetry on.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult


class _Dropping(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def configure() -> Any:
    """Set the SDK's providers globally; returns a function that opens a request's span."""
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(_Dropping()))
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
    tracer = trace.get_tracer("benchmark")

    def request_span() -> AbstractContextManager[Any]:
        return tracer.start_as_current_span("request")

    return request_span
