"""What every hook does with a request's history: repair it, log one line, never break the call.

A hook finds the history, picks the provider, and calls :func:`mend`. :func:`mend` returns the
history to send: the repaired one, or the caller's own object when nothing needed repair or when
toolmend itself failed (the error is logged with its traceback on logger ``toolmend``, once, and
the original goes out: a toolmend bug must never cost the caller their request). The one
exception it lets through is :class:`toolmend.ToolLoopError` when the caller asked the loop guard
to raise, and :class:`toolmend.ToolChainError` under the strict policy: both are answers the
caller asked for. A history toolmend cannot read (:class:`toolmend.InvalidHistoryError`: an item
that is not a message, a field of the wrong type) is the caller's data, not a toolmend bug: it
goes out as it is with one WARNING naming the message index and field, and no traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from time import perf_counter
from typing import Any, Literal

from toolmend import _escape as escape
from toolmend import _fastpath as fastpath
from toolmend import _policy as policies
from toolmend import _routing as routing
from toolmend import profiles
from toolmend._api import Mended, repair
from toolmend._loops import detect_loops, quiet_live_run
from toolmend._policy import Policy
from toolmend._report import (
    Change,
    InvalidHistoryError,
    Problem,
    Repair,
    ToolChainError,
    ToolLoopError,
    UnknownNameError,
)

from . import budget as budgets
from . import telemetry

__all__ = [
    "SELF_HOSTED",
    "HookOptions",
    "Mended",
    "change_codes",
    "check_names",
    "compatible_provider",
    "hook_policy",
    "log_repair",
    "log_source",
    "mend",
    "problem_codes",
]

logger = logging.getLogger("toolmend")

OnLoop = Literal["off", "warn", "raise"]


@dataclass(frozen=True)
class HookOptions:
    """The options every hook takes."""

    provider: str | None = None
    """The provider profile; ``None`` lets the hook work it out (model string, base URL)."""
    policy: Policy | str | None = None
    """A :class:`toolmend.Policy`, or ``"repair"`` (default), ``"strict"``, ``"report"``."""
    on_loop: OnLoop = "warn"
    """The loop guard: ``"warn"`` logs what :func:`toolmend.detect_loops` finds, ``"raise"``
    fails the call with :class:`toolmend.ToolLoopError` before anything is sent, ``"off"``."""
    budget: budgets.Budget | None = None
    """What one request may cost (:class:`toolmend.integrations.budget.Budget`); ``None`` reads
    it from the environment (``TOOLMEND_MAX_ITEMS``, ...) on each call."""
    rescue: bool = True
    """After the provider's HTTP 400 about tool history, send the request once more with the
    history :func:`toolmend.rescue` rewrites (:mod:`toolmend.integrations.rescue`); ``False``
    (or ``TOOLMEND_RESCUE=0``) re-raises the provider's error as it came. Read it through
    :attr:`rescues`."""

    @property
    def rescues(self) -> bool:
        """Whether this hook rescues: :attr:`rescue`, under the ``repair`` policy only (the
        ``report`` and ``strict`` policies ask toolmend to change nothing on its own)."""
        if not self.rescue:
            return False
        try:
            return policies.as_policy(self.policy).mode is policies.Mode.REPAIR
        except Exception:  # a name the constructor refused; a toolmend bug: no rescue
            return False

    def __post_init__(self) -> None:
        # a wrong policy name fails where the hook is built: a valid request never reaches the
        # code that reads it (the fast path in mend), and a failure per call is only logged.
        # Any other error is toolmend's own: the constructor logged it (check_names), and each
        # call fails open on its own
        try:
            policies.as_policy(self.policy)
        except UnknownNameError:
            raise
        except Exception:
            pass


SELF_HOSTED = "vllm"
"""The server an OpenAI-compatible endpoint no host names is taken for when toolmend knows the
model's chat template: :func:`toolmend._routing.request_profile` on it picks the template's
rules by the model."""


def compatible_provider(host: str | None, model: object) -> str:
    """The provider behind an OpenAI-compatible endpoint, before the model picks its variant
    (the hook then calls :func:`toolmend._routing.request_profile` with the model).

    ``host`` is the provider the endpoint's host names
    (:func:`toolmend._routing.provider_for_host`), ``None`` for a host no table names (a local
    server on 127.0.0.1, a gateway). Then the model
    decides: one whose chat template toolmend knows is served by a self-hosted server
    (:data:`SELF_HOSTED`: its template's rules, e.g. Mistral's call ids for Devstral), one only
    one provider serves (:data:`toolmend._routing.MODEL_FAMILIES`) by that provider, any other
    by ``"openai"``.
    """
    if host is not None:
        return host
    name = model if isinstance(model, str) and model else None
    if name is None:
        return "openai"
    if routing.request_profile(SELF_HOSTED, model=name) != routing.request_profile(SELF_HOSTED):
        return SELF_HOSTED
    return routing.provider_for_model(name) or "openai"


def change_codes(changes: Sequence[Change]) -> list[str]:
    """How a log line names each change: ``code@index[id,...]`` (ids and codes, never
    content). Each id is escaped by :func:`toolmend._escape.log`, so no id can end the list,
    the token or the line; one search over all the ids tells when none needs it
    (:func:`toolmend._escape.log_safe`), and only then are they written as they are."""
    if escape.log_safe([value for change in changes for value in change.ids]):
        return [
            f"{c.code}@{c.index}[{','.join(c.ids)}]" if c.ids else f"{c.code}@{c.index}"
            for c in changes
        ]
    return [
        f"{c.code}@{c.index}" + (f"[{','.join(map(escape.log, c.ids))}]" if c.ids else "")
        for c in changes
    ]


def problem_codes(problems: Sequence[Problem]) -> str:
    """How a log line names the problems found: ``code@index``, space separated."""
    return " ".join(f"{p.code}@{p.index}" for p in problems)


def log_source(source: str) -> str:
    """A hook's name for a log line, the model it was called for (``name(model)``) escaped by
    :func:`toolmend._escape.log`: the model string is the caller's."""
    return escape.log_source(source)


def _text(value: object) -> str:
    return value if isinstance(value, str) else str(value)


def _shown(value: object) -> str:
    """A name for a log line (a provider), escaped; never raises, even in an error handler."""
    return escape.log(_text(value))


def check_names(*, provider: Any = None, policy: Any = None, source: str) -> bool:
    """Check the names a hook is built with, so a hook never fails at construction for
    anything but its caller's own mistake.

    ``provider`` (when given) and ``policy`` are looked up in toolmend's static tables (the
    profile table and the policy modes), not by running the core on a history: an unknown
    name raises :class:`toolmend.UnknownNameError`, a bad argument the caller must hear about
    at once. Any other error is a toolmend bug: it is logged once, with its traceback, on
    logger ``toolmend``, and False is returned; the hook is built all the same and every call
    fails open as usual (the original goes out), so an app (or ``toolmend-run`` at import)
    still starts. ``source`` names the hook in the log line.
    """
    try:
        if provider is not None:
            profiles.get_profile(provider)
        policies.as_policy(policy)
    except UnknownNameError:
        raise
    except Exception:
        logger.exception(
            "toolmend failed while building %s; built anyway, and every call it cannot repair "
            "goes out unchanged",
            source,  # the hook's own name, never the caller's text
        )
        return False
    return True


def hook_policy(
    policy: Policy | str | None, *, frontier: Literal["answer", "keep"] = "answer"
) -> Policy:
    """``policy`` read by :func:`toolmend._policy.as_policy`, for a hook being built.

    An unknown name raises :class:`toolmend.UnknownNameError`. Any other error is a toolmend bug
    that :func:`check_names` has already logged while the hook was built: the hook gets the
    policy it was handed, or the default one, and is built all the same."""
    try:
        return policies.as_policy(policy, frontier=frontier)
    except UnknownNameError:
        raise
    except Exception:
        return policy if isinstance(policy, Policy) else Policy(frontier=frontier)


def log_repair(
    source: str,
    provider: str,
    changes: Sequence[Change],
    problems_left: Sequence[Problem] = (),
    problems: Sequence[Problem] = (),
) -> None:
    """The one line every hook writes about a history on logger ``toolmend`` (codes, message
    indexes and ids, never content): what it repaired (INFO; WARNING with ``problems_left``),
    else the ``problems`` it found and left (WARNING), else nothing. Its text is built only
    when the logger takes a record of that level: a line naming each of a thousand changes
    costs more than the repair that made them."""
    if changes:
        left = len(problems_left)
        level = logging.WARNING if left else logging.INFO
        if not logger.isEnabledFor(level):
            return
        logger.log(
            level,
            "toolmend repaired %s for %s: %s%s",
            log_source(source),
            _shown(provider),
            " ".join(change_codes(changes)),
            f"; {left} problem(s) left: {problem_codes(problems_left)}" if left else "",
        )
    elif problems and logger.isEnabledFor(logging.WARNING):
        logger.warning(
            "toolmend found %d problem(s) in %s for %s and changed nothing: %s",
            len(problems),
            log_source(source),
            _shown(provider),
            problem_codes(problems),
        )


def _logged(changed: bool, left: int) -> bool:
    """Whether :func:`log_repair` would write a line about a repair that ``changed`` the
    history (INFO, WARNING with problems ``left``) or not (WARNING when it found problems):
    asked before its arguments (the report) are read."""
    return logger.isEnabledFor(logging.INFO if changed and not left else logging.WARNING)


def mend(
    messages: Sequence[Any],
    *,
    provider: str,
    source: str,
    options: HookOptions = HookOptions(),
    format: str | None = None,
    quiet: bool = False,
    request: bool = True,
    report: bool = True,
) -> Mended:
    """Repair ``messages`` for ``provider`` on behalf of the hook named ``source``.

    ``source`` names the call site in the log line (``"litellm.completion"``,
    ``"openai.chat.completions.create"``); it never includes message content. ``quiet`` writes
    no line about the history (repaired, problems left, unreadable) and reports nothing to
    :mod:`toolmend.integrations.telemetry`, for a hook that has already reported this request
    once (LiteLLM's second pass over a translated request); a toolmend failure is still logged.
    ``report=False`` reports nothing to telemetry but still writes the line: a later pass over a
    request already reported, whose first pass had nothing to say (the hook tells telemetry what
    it added, :func:`toolmend.integrations.telemetry.record_later`).

    Unless ``quiet`` or ``report=False``, each call ends in one
    :func:`toolmend.integrations.telemetry.record`:
    an unreadable history counts as ``failed_open`` (it went out unrepaired), a request the
    loop guard or the strict policy refused as ``problems_left``. ``request=False`` marks a
    history that is not the request being sent (a chat's or an agent's stored history, healed
    before or apart from a request): its changes are counted, no request is (the request is
    counted where it is sent).
    """
    started = perf_counter()
    reporting = report and not quiet
    loops: tuple[Problem, ...] = ()
    try:
        # nearly every request: one pass vouches for the history and hands over the live run
        # (see toolmend._fastpath), and the loop guard reads it only when it looks like a loop
        live = fastpath.vouch(messages, provider=provider, format=format)
        if live is None:  # the size cap, before the loop guard and the repair
            cap = (options.budget or budgets.current()).max_items
            if budgets.size_of(messages, stop=cap + 1) > cap:
                if not quiet:
                    logger.warning(
                        "toolmend did not repair %s for %s: over its cap of %d items; the "
                        "original was sent",
                        log_source(source),
                        _shown(provider),
                        cap,
                    )
                if reporting and request:
                    _report_failure(source, provider, started, reason="size_cap")
                return Mended(messages, failed=True)
        if options.on_loop != "off" and (live is None or not quiet_live_run(*live)):
            loops = tuple(
                detect_loops(
                    messages, format=format, raise_=options.on_loop == "raise", live_only=True
                )
            )
            if loops:
                logger.warning(
                    "toolmend loop guard on %s for %s: %s",
                    log_source(source),
                    _shown(provider),
                    problem_codes(loops),
                )
        if live is not None:
            if reporting and telemetry.is_active() and not budgets.abandoned():
                _report(source, provider, started, loops=loops, request=request)
            return Mended(messages, loops=loops)
        result = repair(messages, provider=provider, format=format, policy=options.policy)
        if budgets.abandoned():  # the hook stopped waiting and sent the original: say nothing
            return Mended(messages, failed=True)
        changed = result.changed  # (the report, built lazily by some repairs, stays unbuilt)
        problems_left = _left(result, provider, format) if changed else result.problems
        left = len(problems_left)
        # in the try: a line that cannot be written sends the original
        if not quiet and _logged(changed, left):
            log_repair(source, provider, result.changes, problems_left, result.problems)
        if reporting and telemetry.is_active():
            _report(source, provider, started, result.changes, left, loops, request)
    except ToolLoopError as refused:
        if reporting and telemetry.is_active() and not budgets.abandoned():
            _report(source, provider, started, (), len(refused.problems), refused.problems)
        raise
    except ToolChainError as refused:
        if reporting and telemetry.is_active() and not budgets.abandoned():
            _report(source, provider, started, (), len(refused.problems), loops)
        raise
    except InvalidHistoryError as error:  # the caller's data, not a toolmend bug
        if quiet or budgets.abandoned():  # abandoned: the hook sent the original and said so
            return Mended(messages, failed=True)
        logger.warning(
            "toolmend cannot read the history on %s for %s (%s); it was sent as it is",
            log_source(source),
            _shown(provider),
            escape.terminal(error),
        )
        if report and request:
            _report_failure(source, provider, started)
        return Mended(messages, failed=True)
    except Exception:
        if budgets.abandoned():  # the hook sent the original and said so
            return Mended(messages, failed=True)
        logger.exception(
            "toolmend failed on %s for %s; the original history was sent",
            log_source(source),
            _shown(provider),
        )
        if reporting and request:
            _report_failure(source, provider, started)
        return Mended(messages, failed=True)
    return Mended.of_repair(result, loops=loops, left=problems_left)


def _left(result: Repair, provider: str, format: str | None) -> tuple[Problem, ...]:
    """What the history ``result`` repaired still breaks: what the repair knows, when it
    knows (its ``left`` given as a tuple: the one-pass names and ids repair,
    :func:`toolmend._quickmend.quick_mend`, answers only for a history that passes every
    other rule of the profile, and the names and ids it writes are those the profile wants);
    else the one-pass check, which vouches for nearly every repair, and the full judge
    (``Repair.problems_left``) only when it cannot."""
    known = result.left
    if not callable(known):
        return known
    vouched = fastpath.vouch(result.messages, provider=provider, format=format)
    return () if vouched is not None else result.problems_left


def _report(
    source: str,
    provider: str,
    started: float,
    changes: Sequence[Change] = (),
    left: int = 0,
    loops: Sequence[Problem] = (),
    request: bool = True,
) -> None:
    telemetry.record(
        telemetry.HookReport(
            telemetry.hook_name(source),
            provider,
            telemetry.outcome_of(changed=bool(changes), problems_left=left),
            telemetry.codes_of(changes),
            left,
            telemetry.codes_of(loops),
            perf_counter() - started,
            request=request,
        )
    )


def _report_failure(source: str, provider: str, started: float, *, reason: str = "") -> None:
    """Report a request that went out unrepaired (``reason``: why, when not a toolmend error);
    a failure here is only logged."""
    try:
        if telemetry.is_active():
            report = telemetry.HookReport(
                telemetry.hook_name(source),
                provider,
                "failed_open",
                duration=perf_counter() - started,
                reason=reason,
            )
            telemetry.record(report)
    except Exception:
        logger.exception("toolmend could not report a failed request")
