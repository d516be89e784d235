"""The OpenTelemetry SDK in memory for a test: a tracer provider whose spans an
``InMemorySpanExporter`` keeps and a meter provider read by an ``InMemoryMetricReader``, set as
the global providers and taken back afterwards.

OpenTelemetry lets a process set each global provider once; :func:`installed` puts the API's
globals back as they were (its ``Once`` guards, the providers), as the OpenTelemetry project's
own test utilities do, so the next test can set its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.metrics import _internal as metrics_internal
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once


@dataclass
class InMemory:
    """What a test reads: the finished spans and the metrics collected so far."""

    spans: InMemorySpanExporter
    reader: InMemoryMetricReader
    tracer: trace.Tracer

    def points(self, name: str) -> list[tuple[dict[str, Any], Any]]:
        """``(attributes, value)`` of each data point of the metric ``name`` (a counter's sum, a
        histogram's count)."""
        found: list[tuple[dict[str, Any], Any]] = []
        data = self.reader.get_metrics_data()
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name != name:
                        continue
                    for point in metric.data.data_points:
                        value = getattr(point, "value", None)
                        if value is None:
                            value = getattr(point, "count", None)
                        found.append((dict(point.attributes or {}), value))
        return found


@contextmanager
def installed() -> Iterator[InMemory]:
    """Set in-memory SDK tracer and meter providers as the globals for the ``with`` block."""
    saved = (
        trace._TRACER_PROVIDER_SET_ONCE,
        trace._TRACER_PROVIDER,
        metrics_internal._METER_PROVIDER_SET_ONCE,
        metrics_internal._METER_PROVIDER,
    )
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    _reset()
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(meter_provider)
    try:
        yield InMemory(spans, reader, tracer_provider.get_tracer("tests"))
    finally:
        meter_provider.shutdown()
        tracer_provider.shutdown()
        (
            trace._TRACER_PROVIDER_SET_ONCE,
            trace._TRACER_PROVIDER,
            metrics_internal._METER_PROVIDER_SET_ONCE,
            metrics_internal._METER_PROVIDER,
        ) = saved


def _reset() -> None:
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None
    metrics_internal._METER_PROVIDER_SET_ONCE = Once()
    metrics_internal._METER_PROVIDER = None
