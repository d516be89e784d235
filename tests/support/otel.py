"""The OpenTelemetry SDK installed as an application would install it, with in-memory exporters.

OpenTelemetry lets a process set its global tracer and meter providers once; :func:`otel_sdk`
sets them the usual way (``trace.set_tracer_provider``, ``metrics.set_meter_provider``) and puts
the API's module globals back afterwards, as OpenTelemetry's own test utilities do, so the next
test (or the next test file in the same worker) starts with no SDK configured.
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
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once

__all__ = ["OtelSdk", "otel_sdk", "reset_globals"]


@dataclass
class OtelSdk:
    """The configured SDK: its tracer, and what it exported so far."""

    tracer: trace.Tracer
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader

    def spans(self) -> tuple[ReadableSpan, ...]:
        return tuple(self.exporter.get_finished_spans())

    def points(self, name: str) -> dict[tuple[tuple[str, Any], ...], Any]:
        """The data points of the metric ``name``: sorted attributes -> value (a counter's sum,
        a histogram's count)."""
        found: dict[tuple[tuple[str, Any], ...], Any] = {}
        data = self.reader.get_metrics_data()
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name != name:
                        continue
                    for point in metric.data.data_points:
                        value = getattr(point, "value", None)
                        if value is None:
                            value = point.count  # type: ignore[union-attr]
                        found[tuple(sorted(point.attributes.items()))] = value  # type: ignore[union-attr]
        return found

    def pairs(self, name: str) -> list[tuple[dict[str, Any], Any]]:
        """``(attributes, value)`` of each data point of the metric ``name``."""
        return [(dict(key), value) for key, value in self.points(name).items()]

    def metric_names(self) -> set[str]:
        data = self.reader.get_metrics_data()
        return {
            metric.name
            for resource in (data.resource_metrics if data else ())
            for scope in resource.scope_metrics
            for metric in scope.metrics
        }


def reset_globals() -> None:
    """No tracer or meter provider set: the API's proxies again, as in a fresh process."""
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None
    metrics_internal._METER_PROVIDER_SET_ONCE = Once()
    metrics_internal._METER_PROVIDER = None


@contextmanager
def otel_sdk(*, sampled: bool = True) -> Iterator[OtelSdk]:
    """The SDK's tracer and meter providers set globally, with in-memory exporters; ``sampled``
    False samples every span out (spans that do not record)."""
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider(sampler=ALWAYS_ON if sampled else ALWAYS_OFF)
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    reset_globals()
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(meter_provider)
    try:
        yield OtelSdk(tracer_provider.get_tracer("tests"), exporter, reader)
    finally:
        meter_provider.shutdown()
        tracer_provider.shutdown()
        reset_globals()
