"""What each hook call tells an operator's traces and metrics: OpenTelemetry, and other sinks.

Every hook reports one :class:`HookReport` per request through :func:`record`: which hook, for
which provider, the outcome (``clean``, ``repaired``, ``problems_left``, ``failed_open``), the
change codes, how many problems are left, what the loop guard found and how long toolmend took.
Ids and content never reach a report: codes, counts and the names of toolmend's own hooks only.

A request the provider refused with a 400 about its tool history and that the hook sent once
more (:mod:`toolmend.integrations.rescue`) adds a second report, outcome ``rescued``, with the
rule the retry applied (:attr:`HookReport.rule`: a problem code of a profile, or
``flattened``). The retry is a second HTTP request toolmend made, so it **counts in
``toolmend.requests``** (outcome ``rescued``) beside the first one's own outcome: the sum over
outcomes is the number of requests the hooks sent, and ``rescued`` over that sum is the share
that needed a second one. Its changes count in ``toolmend.changes`` and its time in
``toolmend.hook.duration``, like any request's.

OpenTelemetry is read through ``opentelemetry-api`` alone (extra ``otel``), and only when the
application has imported it: this module imports nothing from it, so a process without
OpenTelemetry pays one dictionary lookup per request. When it is imported:

- the span current at repair time gets the attributes ``toolmend.provider``,
  ``toolmend.outcome``, ``toolmend.changes.count``, ``toolmend.change_codes`` (sorted, each
  once), ``toolmend.problems_left.count``, ``toolmend.loop`` (when the guard fired) and
  ``toolmend.failed_open.reason`` (``size_cap``, ``time_budget``: see
  :mod:`toolmend.integrations.budget`), if it
  records (an SDK is configured and the span is sampled); a rescue sets ``toolmend.outcome``
  to ``rescued`` and adds ``toolmend.rescue.rule``, ``toolmend.rescue.changes.count`` and
  ``toolmend.rescue.change_codes``, leaving the first request's counts as they were;
- the metrics ``toolmend.requests`` (counter; ``hook``, ``provider``, ``outcome``),
  ``toolmend.changes`` (counter; ``provider``, ``code``), ``toolmend.hook.duration``
  (histogram, seconds; ``hook``, ``provider``) and ``toolmend.rescues`` (counter; ``hook``,
  ``provider``, ``rule``) go to the global meter provider once an SDK one is set (the API's
  own no-op and proxy providers are skipped, so nothing is built for them).

Every label value is one of toolmend's own names: a ``rule`` label is a problem code of a
profile or ``flattened`` (:func:`rule_label`; anything else is counted as ``other``), never
the provider's error text.

Other sinks (the Prometheus one, :mod:`toolmend.integrations.prometheus`) register with
:func:`add_sink`. A sink that raises is a toolmend bug: it is logged once, with its traceback,
and the request goes on.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import toolmend

__all__ = [
    "HookReport",
    "Outcome",
    "add_sink",
    "codes_of",
    "failed_open",
    "hook_name",
    "is_active",
    "outcome_of",
    "record",
    "record_later",
    "remove_sink",
    "rule_label",
    "span_attributes",
]

logger = logging.getLogger("toolmend")

Outcome = Literal["clean", "repaired", "problems_left", "failed_open", "rescued"]

METER_NAME: Final = "toolmend"
"""The instrumentation scope of toolmend's metrics."""
_VERSION: Final = getattr(toolmend, "__version__", None)
"""Its version, read once at import: at request time ``toolmend`` may be a namespace package
that shadows the installed one (docs/security.md)."""


@dataclass(frozen=True, slots=True)
class HookReport:
    """What one hook call did, in codes and counts (never ids, never content)."""

    hook: str
    """The hook's name, without the model it was called for (``litellm.acompletion``)."""
    provider: str
    """The provider profile the history was held to (``"unknown"`` when it failed before one
    was chosen)."""
    outcome: Outcome
    change_codes: tuple[str, ...] = ()
    """One code per change made, in order (a code repeats when it was applied more than once)."""
    problems_left: int = 0
    """How many problems the history sent still has."""
    loop_codes: tuple[str, ...] = ()
    """What the loop guard found (``repeated_tool``), one code per finding."""
    duration: float = 0.0
    """Seconds toolmend spent on the request."""
    reason: str = ""
    """Why a ``failed_open`` request went out unrepaired, when toolmend chose to: ``size_cap``
    (over :attr:`toolmend.integrations.budget.Budget.max_items`) or ``time_budget`` (its repair
    took longer than :attr:`~toolmend.integrations.budget.Budget.seconds`); empty otherwise."""
    rule: str = ""
    """For a ``rescued`` request (sent once more after the provider's 400 about tool history,
    :mod:`toolmend.integrations.rescue`): the known rule the error named, or ``flattened``."""
    request: bool = True
    """False for a second look at a request another report already counted (a chat's stored
    history healed before its request is repaired): its changes count, the request and its
    duration do not, and the span keeps the first report's attributes."""


Sink = Callable[[HookReport], None]

_sinks: list[Sink] = []
_failed_sinks: set[int] = set()


def add_sink(sink: Sink) -> None:
    """Send every later :class:`HookReport` to ``sink`` too (once, however often it is added)."""
    if sink not in _sinks:
        _sinks.append(sink)


def remove_sink(sink: Sink) -> None:
    """Stop sending reports to ``sink`` (nothing happens when it was not added)."""
    if sink in _sinks:
        _sinks.remove(sink)


def is_active() -> bool:
    """Whether anyone may hear a report: a sink was added or OpenTelemetry is imported.

    The hooks ask this before they build a report, so a process with neither pays for nothing
    else."""
    return bool(_sinks) or "opentelemetry.trace" in sys.modules


def hook_name(source: str) -> str:
    """A hook's log name without the model it was called for: a metric label must be one of
    a few values, and a model string is the caller's to choose."""
    return source.partition("(")[0]


def outcome_of(*, changed: bool, problems_left: int, failed: bool = False) -> Outcome:
    """The outcome of one request, for the ``outcome`` label."""
    if failed:
        return "failed_open"
    if problems_left:
        return "problems_left"
    return "repaired" if changed else "clean"


def record(report: HookReport) -> None:
    """Tell OpenTelemetry (when imported) and every added sink what one hook call did.

    Never raises: a sink that fails is logged once, with its traceback, and skipped for this
    report."""
    if "opentelemetry.trace" in sys.modules:
        _deliver(_OTEL, _OTEL, report)
    for sink in tuple(_sinks):
        _deliver(sink, sink, report)


def record_later(request: HookReport, later: HookReport) -> None:
    """Tell OpenTelemetry and the sinks what a later pass over a request already reported found
    (LiteLLM's second pass over the request it translated for another route), without counting
    the request again.

    ``later`` is that pass alone (its provider, the change codes it added); ``request`` is the
    whole request now (every pass's change codes, the problems left, the outcome). Every sink
    gets ``later`` as a report that is not a request (``request=False``: its changes count, no
    request, no duration); the current span's attributes are set from ``request`` again. Never
    raises, like :func:`record`."""
    extra = dataclasses.replace(later, request=False)
    if "opentelemetry.trace" in sys.modules:
        _deliver(_OTEL, _OTEL.later, request, extra)
    for sink in tuple(_sinks):
        _deliver(sink, sink, extra)


def failed_open(source: str, provider: str | None = None, *, reason: str = "") -> None:
    """Record a request a hook sent unchanged because toolmend failed outside
    :func:`toolmend.integrations.hooks.mend` (or gave up on it: ``reason``, see
    :attr:`HookReport.reason`). Called from a hook's fail-open path, so it never raises."""
    try:
        if is_active():
            record(
                HookReport(hook_name(source), provider or "unknown", "failed_open", reason=reason)
            )
    except Exception:
        logger.exception("toolmend could not report a failed request")


OTHER_RULE: Final = "other"
"""The ``rule`` label of a report whose rule is none of toolmend's (see :func:`rule_label`)."""


@functools.cache
def _rules() -> frozenset[str]:
    """The rules a rescue can name: every profile's problem codes, and ``flattened``."""
    from toolmend._rescue import FLATTENED
    from toolmend.profiles import PROFILES

    codes = {FLATTENED}
    for profile in PROFILES.values():
        codes.update(profile.checks, profile.strict_checks)
    return frozenset(codes)


def rule_label(rule: str) -> str:
    """``rule`` as a metric label: itself when it is a rule a rescue can name (a profile's
    problem code, or ``flattened``), else ``other``, so the label takes a few dozen values
    whatever a sink is handed.

    >>> rule_label("flattened"), rule_label("Invalid parameter: messages")
    ('flattened', 'other')
    """
    return rule if rule in _rules() else OTHER_RULE


def codes_of(items: Iterable[toolmend.Change | toolmend.Problem]) -> tuple[str, ...]:
    """The code of each change or problem, in order."""
    return tuple(item.code for item in items)


def _deliver(sink: object, call: Callable[..., None], *reports: HookReport) -> None:
    """``call(*reports)`` for ``sink`` (the sink itself, or its ``later`` method)."""
    try:
        call(*reports)
    except Exception:
        if id(sink) not in _failed_sinks:
            _failed_sinks.add(id(sink))
            logger.exception("toolmend could not report a request to %r; the request went on", sink)


class _OpenTelemetry:
    """The OpenTelemetry sink: span attributes and the four metrics, through the API."""

    def __init__(self) -> None:
        self._provider: object = None
        self._instruments: tuple[Any, Any, Any, Any] | None = None
        self._lock = threading.Lock()

    def __call__(self, report: HookReport) -> None:
        if report.request:
            span = sys.modules["opentelemetry.trace"].get_current_span()
            if span.is_recording():
                span.set_attributes(span_attributes(report))
        instruments = self._instruments_now()
        if instruments is None:
            return
        requests, changes, duration, rescues = instruments
        for code, count in Counter(report.change_codes).items():
            changes.add(count, {"provider": report.provider, "code": code})
        if report.request:
            labels = {"hook": report.hook, "provider": report.provider}
            requests.add(1, {**labels, "outcome": report.outcome})
            duration.record(report.duration, labels)
            if report.outcome == "rescued":
                rescues.add(1, {**labels, "rule": rule_label(report.rule)})

    def later(self, request: HookReport, later: HookReport) -> None:
        """A later pass over a request already counted: the span from the whole request, then
        the pass's own changes (``later.request`` is False)."""
        span = sys.modules["opentelemetry.trace"].get_current_span()
        if span.is_recording():
            span.set_attributes(span_attributes(request))
        self(later)

    def _instruments_now(self) -> tuple[Any, Any, Any, Any] | None:
        """The instruments of the global meter provider, built once per provider; None while it
        is the API's own (no SDK configured)."""
        metrics = sys.modules.get("opentelemetry.metrics")
        if metrics is None:
            return None
        provider = metrics.get_meter_provider()
        if provider is self._provider:
            return self._instruments
        # a new provider: built by one thread, and its instruments stored before the provider,
        # so a thread that sees the provider never reads the instruments of none or of another
        with self._lock:
            if provider is not self._provider:
                self._instruments = self._built(provider)
                self._provider = provider
            return self._instruments

    @staticmethod
    def _built(provider: Any) -> tuple[Any, Any, Any, Any] | None:
        """The four instruments on ``provider``; None for the API's own no-op or proxy
        provider (no SDK yet)."""
        if type(provider).__module__.startswith("opentelemetry.metrics"):
            return None
        meter = provider.get_meter(METER_NAME, _VERSION)
        return (
            meter.create_counter(
                "toolmend.requests",
                unit="{request}",
                description="Requests a toolmend hook saw, by hook, provider and outcome.",
            ),
            meter.create_counter(
                "toolmend.changes",
                unit="{change}",
                description="Changes toolmend made to histories, by provider and change code.",
            ),
            meter.create_histogram(
                "toolmend.hook.duration",
                unit="s",
                description="Time toolmend spent on a request, by hook and provider.",
            ),
            meter.create_counter(
                "toolmend.rescues",
                unit="{request}",
                description=(
                    "Requests sent once more after the provider's 400 about tool history, "
                    "by hook, provider and the rule the retry applied."
                ),
            ),
        )


def span_attributes(report: HookReport) -> dict[str, str | int | Sequence[str]]:
    """The attributes toolmend puts on the current span for ``report``.

    A ``rescued`` report is the second request of a call whose first one set the span's
    counts: it sets the outcome and its own ``toolmend.rescue.*`` attributes only, so the span
    keeps what the first request's repair did beside what the retry did."""
    if report.outcome == "rescued":
        rescued: dict[str, str | int | Sequence[str]] = {
            "toolmend.provider": report.provider,
            "toolmend.outcome": report.outcome,
            "toolmend.rescue.rule": rule_label(report.rule),
            "toolmend.rescue.changes.count": len(report.change_codes),
        }
        if report.change_codes:
            rescued["toolmend.rescue.change_codes"] = sorted(set(report.change_codes))
        return rescued
    attributes: dict[str, str | int | Sequence[str]] = {
        "toolmend.provider": report.provider,
        "toolmend.outcome": report.outcome,
        "toolmend.changes.count": len(report.change_codes),
        "toolmend.problems_left.count": report.problems_left,
    }
    if report.change_codes:
        attributes["toolmend.change_codes"] = sorted(set(report.change_codes))
    if report.loop_codes:
        attributes["toolmend.loop"] = sorted(set(report.loop_codes))
    if report.reason:
        attributes["toolmend.failed_open.reason"] = report.reason
    return attributes


_OTEL: Final = _OpenTelemetry()
