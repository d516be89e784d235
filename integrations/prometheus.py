"""Prometheus: toolmend's request, change and duration metrics in ``prometheus_client``, where
the LiteLLM Proxy's ``/metrics`` (and any app that serves a registry) shows them.

Usage
-----

On the LiteLLM Proxy, nothing but the config: list LiteLLM's own ``prometheus`` callback beside
toolmend's, and toolmend's callback turns this sink on at the first request it sees.

.. code-block:: yaml

    litellm_settings:
      callbacks: ["prometheus", "toolmend.integrations.litellm.proxy_handler"]

Anywhere else (an app that serves ``prometheus_client``'s registry itself):

.. code-block:: python

    from toolmend.integrations import prometheus

    prometheus.enable()  # or enable(registry) for a registry of your own

The metrics
-----------
The four metrics of :mod:`toolmend.integrations.telemetry`, named as the OpenTelemetry
Prometheus exporter would name them, so a dashboard reads the same either way:

* ``toolmend_requests_total{hook, provider, outcome}``: requests a hook saw; ``outcome`` is
  ``clean``, ``repaired``, ``problems_left``, ``failed_open`` or ``rescued`` (the second
  request of a call the provider refused with a 400 about its tool history: it counts as a
  request, see :mod:`~toolmend.integrations.telemetry`);
* ``toolmend_changes_total{provider, code}``: changes made, by change code;
* ``toolmend_hook_duration_seconds{hook, provider}``: a histogram of the time toolmend spent on a
  request (buckets from 0.1 ms, since a clean history takes well under a millisecond);
* ``toolmend_rescues_total{hook, provider, rule}``: requests sent once more after such a 400,
  by the rule the retry applied (a profile's problem code, or ``flattened`` when toolmend knew
  no rule for the error: the case to report, docs/observability.md).

Label values are toolmend's own hook names, provider profile names, outcomes, change codes and
rules (:func:`toolmend.integrations.telemetry.rule_label`): a few dozen values at most, never
an id, a model string, the provider's error text or any content.

Why ``prometheus_client`` and not the OpenTelemetry Prometheus exporter
-----------------------------------------------------------------------
Both end in ``prometheus_client``'s registry, which is what LiteLLM's ``/metrics`` serves
(``PrometheusLogger._mount_metrics_endpoint``, litellm 1.110.2). The exporter needs an
OpenTelemetry SDK meter provider set up in code, and its reader is an in-process collector on
the default registry: once LiteLLM runs more than one worker it sets ``PROMETHEUS_MULTIPROC_DIR``
and serves ``/metrics`` from a ``MultiProcessCollector`` over that directory, which only
``prometheus_client``'s own metrics write to, so the exporter's numbers would vanish from the
page (and each worker would count alone). Metrics made here are plain ``prometheus_client``
counters and a histogram: in one process they live in the registry, in multiprocess mode
(``PROMETHEUS_MULTIPROC_DIR`` set before ``prometheus_client`` is imported, as LiteLLM's workers
have it) they write to that directory and ``/metrics`` adds up every worker's counts.
An operator who already exports OpenTelemetry metrics gets the same four from
:mod:`~toolmend.integrations.telemetry` and need not turn this on; with the OpenTelemetry
Prometheus exporter on the same registry, should not (the same names twice).

A failure in this sink never costs a request: :func:`toolmend.integrations.telemetry.record`
logs it once, with its traceback, and the request goes on.
"""

from __future__ import annotations

import threading
from collections import Counter as Tally
from typing import Any, Final

from . import telemetry

try:
    from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "toolmend.integrations.prometheus needs prometheus-client: "
        "pip install 'toolmend[prometheus]'"
    ) from error

__all__ = ["BUCKETS", "PrometheusSink", "disable", "enable", "is_enabled"]

BUCKETS: Final = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
)
"""The duration histogram's buckets, in seconds (``+Inf`` is added by ``prometheus_client``)."""


class PrometheusSink:
    """A :mod:`toolmend.integrations.telemetry` sink that counts each
    :class:`~toolmend.integrations.telemetry.HookReport` in four ``prometheus_client`` metrics,
    registered in ``registry`` when it is built (once per registry: :func:`enable` keeps one)."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.registry = registry
        self.requests = Counter(
            "toolmend_requests",
            "Requests a toolmend hook saw, by hook, provider and outcome.",
            ("hook", "provider", "outcome"),
            registry=registry,
        )
        self.changes = Counter(
            "toolmend_changes",
            "Changes toolmend made to histories, by provider and change code.",
            ("provider", "code"),
            registry=registry,
        )
        self.duration = Histogram(
            "toolmend_hook_duration_seconds",
            "Time toolmend spent on a request, by hook and provider.",
            ("hook", "provider"),
            registry=registry,
            buckets=BUCKETS,
        )
        self.rescues = Counter(
            "toolmend_rescues",
            "Requests sent once more after the provider's 400 about tool history, by hook, "
            "provider and the rule the retry applied.",
            ("hook", "provider", "rule"),
            registry=registry,
        )
        self._children: dict[tuple[str, str, str], tuple[Any, Any]] = {}
        """(hook, provider, outcome) -> its request counter and duration histogram: the few
        label sets a process sees, looked up once (``labels()`` takes a lock every call)."""

    def __call__(self, report: telemetry.HookReport) -> None:
        if report.request:
            self._count_request(report)
            if report.outcome == "rescued":
                rule = telemetry.rule_label(report.rule)
                self.rescues.labels(report.hook, report.provider, rule).inc()
        if report.change_codes:
            for code, count in Tally(report.change_codes).items():
                self.changes.labels(report.provider, code).inc(count)

    def _count_request(self, report: telemetry.HookReport) -> None:
        key = (report.hook, report.provider, report.outcome)
        children = self._children.get(key)
        if children is None:
            children = (
                self.requests.labels(*key),
                self.duration.labels(report.hook, report.provider),
            )
            self._children[key] = children
        children[0].inc()
        children[1].observe(report.duration)

    def __repr__(self) -> str:
        return f"PrometheusSink(registry={self.registry!r})"


_lock = threading.Lock()
_built: dict[int, PrometheusSink] = {}
"""The sink of each registry it was built for, by ``id(registry)`` (the sink holds the registry,
so an id is never reused while its entry lives)."""
_on: set[int] = set()
"""The ids of the registries being counted in now."""


def enable(registry: CollectorRegistry | None = None) -> PrometheusSink:
    """Count every later hook call in ``registry`` (``prometheus_client``'s default ``REGISTRY``
    when left out) and return the sink.

    Idempotent: the metrics are made once per registry, and enabling again after
    :func:`disable` goes on counting from where they were. Raises ``ValueError`` (from
    ``prometheus_client``) when ``registry`` already holds another metric of the same name."""
    target = REGISTRY if registry is None else registry
    with _lock:
        sink = _built.get(id(target))
        if sink is None:
            sink = PrometheusSink(target)
            _built[id(target)] = sink
        _on.add(id(target))
        telemetry.add_sink(sink)
    return sink


def disable(registry: CollectorRegistry | None = None) -> None:
    """Stop counting in ``registry`` (the default one when left out); the metrics stay
    registered with the counts they have."""
    key = id(REGISTRY if registry is None else registry)
    with _lock:
        sink = _built.get(key)
        _on.discard(key)
        if sink is not None:
            telemetry.remove_sink(sink)


def is_enabled(registry: CollectorRegistry | None = None) -> bool:
    """Whether hook calls are being counted in ``registry`` (the default one when left out)."""
    return id(REGISTRY if registry is None else registry) in _on
