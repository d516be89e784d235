"""toolmend's entry in LiteLLM's guardrail logging: what toolmend did to a request, recorded the
way LiteLLM's own guardrails record what they did, so every logging integration of the process
or the proxy gets it with no code (Langfuse, Datadog, S3, the spend logs, and the ``otel``
callback, which makes each entry a ``guardrail`` span).

LiteLLM's guardrails put a ``StandardLoggingGuardrailInformation`` dict in the request's
metadata, under ``standard_logging_guardrail_information`` (a list, one entry per guardrail run);
LiteLLM copies the request's metadata into its logging object, and the standard logging payload
every callback gets (``kwargs["standard_logging_object"]``) carries the list as
``guardrail_information``, and the most severe status of its entries as
``status_fields.guardrail_status``. :func:`entry` builds toolmend's entry, :func:`with_entry`
puts it in the request the hook hands back.

One entry per client request, named ``toolmend``, for every request the hook saw, clean ones
too, as LiteLLM's guardrails record each run: ``success`` then tells an operator toolmend ran and
found nothing, where no entry would mean it did not run. A second pass over a request LiteLLM
translated replaces the entry with the request's whole record (both passes); it never adds one.

The entry holds codes and counts only, never an id and never content:

* ``guardrail_status`` in LiteLLM's own words: ``guardrail_intervened`` when toolmend changed the
  history or refused it (the loop guard's ``"raise"``, the strict policy; the entry then comes
  with the failure LiteLLM logs), ``guardrail_flagged`` when it only found problems it left (or
  a loop), and
  ``guardrail_failed_to_respond`` when toolmend failed and the history went out as it was;
  ``success`` otherwise;
* ``guardrail_action``: toolmend's outcome (``clean``, ``repaired``, ``problems_left``,
  ``failed_open``), the value of the ``outcome`` label of toolmend's own metrics;
* ``guardrail_response``: the provider profile and the count of each change, problem and loop
  code (``{"outcome": ..., "provider": "anthropic", "changes": {"dropped_orphan_result": 1},
  "problems_left": {}, "loops": {}}``);
* ``violation_categories``: those codes, each once, sorted (LiteLLM keeps this field when it
  redacts a record's ``guardrail_response``, which it does when message logging is off);
* ``guardrail_mode`` ``pre_call``, ``guardrail_provider`` ``toolmend``; ``start_time`` and
  ``end_time`` (epoch seconds) span the passes, ``duration`` is the seconds toolmend itself spent
  (the passes added up, without LiteLLM's translation between them).

This module needs no LiteLLM: it deals in plain dicts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from .telemetry import outcome_of

__all__ = ["KEY", "NAME", "entry", "with_entry"]

NAME: Final = "toolmend"
"""The ``guardrail_name`` of toolmend's entry."""

KEY: Final = "standard_logging_guardrail_information"
"""Where LiteLLM's guardrails put their entries in a request's metadata."""

_BUCKETS: Final = ("metadata", "litellm_metadata")


def entry(
    record: Mapping[str, Any] | None,
    *,
    provider: str,
    left: Sequence[str] = (),
    started: float,
    ended: float,
    duration: float,
    failed: bool = False,
    refused: bool = False,
) -> dict[str, Any]:
    """toolmend's guardrail entry for a request whose record is ``record`` (the dict
    :mod:`toolmend.integrations.litellm` keeps; ``None`` when there was nothing to tell), held
    to the profile ``provider``, whose history went out with the problems ``left`` (codes), or
    was ``refused`` (the loop guard's ``"raise"``, the strict policy: nothing went out)."""
    failed = failed or bool(record and record["failed"])
    if record is None and not left and not failed:  # nearly every request: nothing to count
        changes: dict[str, int] = {}
        problems: dict[str, int] = {}
        loops: dict[str, int] = {}
        status, outcome, categories = "success", "clean", []
    else:
        changes = _counts(c["code"] for c in record["changes"]) if record else {}
        problems = _counts(left)
        loops = _counts(p["code"] for p in record["loops"]) if record else {}
        status = _status(
            changes=bool(changes) or refused, flagged=bool(problems or loops), failed=failed
        )
        outcome = outcome_of(changed=bool(changes), problems_left=len(left), failed=failed)
        categories = sorted({*changes, *problems, *loops})
    return {
        "guardrail_name": NAME,
        "guardrail_provider": NAME,
        "guardrail_mode": "pre_call",
        "guardrail_status": status,
        "guardrail_action": outcome,
        "guardrail_response": {
            "outcome": outcome,
            "provider": provider,
            "changes": changes,
            "problems_left": problems,
            "loops": loops,
        },
        "violation_categories": categories,
        "start_time": started,
        "end_time": ended,
        "duration": duration,
    }


def _counts(codes: Iterable[str]) -> dict[str, int]:
    return dict(Counter(codes))


def _status(*, changes: bool, flagged: bool, failed: bool) -> str:
    """LiteLLM's ``GuardrailStatus`` for what toolmend did."""
    if failed:
        return "guardrail_failed_to_respond"
    if changes:
        return "guardrail_intervened"
    return "guardrail_flagged" if flagged else "success"


def with_entry(
    kwargs: Mapping[str, object], guardrail: dict[str, Any], *, chat: bool
) -> dict[str, object]:
    """A copy of the request ``kwargs`` whose metadata carries ``guardrail`` as toolmend's one
    entry (no dict of the caller's is changed: the metadata and its list are copied).

    An entry of toolmend's already in the request (LiteLLM carries the metadata of a request it
    translates to the next route) is replaced where it is. Otherwise the entry goes where LiteLLM
    reads a request's own metadata: ``litellm_metadata`` when the request has it (the proxy's
    ``/v1/messages`` and ``/v1/responses``), else ``metadata`` for a chat call (``chat``), and
    ``litellm_metadata`` for the Anthropic and Responses routes, whose ``metadata`` is the
    provider's own field and is sent to it."""
    replaced: dict[str, object] = {}
    for name in _BUCKETS:
        bucket = kwargs.get(name)
        if isinstance(bucket, dict) and bucket.get(KEY):
            replaced[name] = {**bucket, KEY: _entries(bucket[KEY], guardrail)}
    if not replaced:
        name = "metadata" if chat and "litellm_metadata" not in kwargs else "litellm_metadata"
        bucket = kwargs.get(name)
        replaced[name] = {**(bucket if isinstance(bucket, dict) else {}), KEY: [guardrail]}
    return {**kwargs, **replaced}


def _entries(found: object, guardrail: dict[str, Any]) -> list[object]:
    """``found`` (LiteLLM's list of entries) with toolmend's replaced by ``guardrail``, or
    ``guardrail`` added."""
    others = [
        item
        for item in (found if isinstance(found, list) else [found])
        if not (isinstance(item, dict) and item.get("guardrail_name") == NAME)
    ]
    return [*others, guardrail]
