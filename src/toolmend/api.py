"""The public functions: thin shells over read -> judge -> plan -> apply.

``check`` reads and judges; ``repair`` also plans and applies when something is wrong;
``sanitize`` is ``repair(...).messages``. A valid history costs one read and one judging pass,
and comes back as the very same object.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from .formats import detect, module_for
from .history import Skeleton
from .policy import Mode, Policy, as_policy
from .profiles import Profile, get_profile
from .repair import plan_repair
from .report import InvalidHistoryError, Problem, Repair, ToolChainError, logger
from .rules import judge

__all__ = ["check", "read_history", "repair", "sanitize"]


def read_history(messages: Any, format: str | None = None) -> tuple[ModuleType, Skeleton]:
    """The format module for ``messages`` and the skeleton it read.

    Raises :class:`toolmend.InvalidHistoryError` for something that is not a list of messages,
    and :class:`toolmend.InvalidMessageError` naming the index of a message it cannot read.
    """
    if not isinstance(messages, (list, tuple)):
        raise InvalidHistoryError(
            f"messages must be a list of messages, got {type(messages).__name__}"
        )
    module = module_for(format) if format is not None else detect(messages)
    return module, module.read(messages)


def check(
    messages: Sequence[Any], *, provider: str | Profile = "openai", format: str | None = None
) -> list[Problem]:
    """Every way ``messages`` breaks ``provider``'s tool-call rules, in message order.

    **Parameters:**

    * **messages** - the history, in any supported format.
    * **provider** - *(optional)* a provider name such as ``"deepseek"`` (default ``"openai"``).
    * **format** - *(optional)* the format name; detected when left out.

    **Returns:** a list of :class:`toolmend.Problem`, empty when the provider accepts it.

    >>> import toolmend
    >>> history = [{"role": "system", "content": "Be brief."},
    ...            {"role": "tool", "tool_call_id": "call_1", "content": "21 C"}]
    >>> [problem.code for problem in toolmend.check(history, provider="deepseek")]
    ['orphan_result']
    """
    profile = get_profile(provider)
    _, skeleton = read_history(messages, format)
    return judge(skeleton, profile)


def repair(
    messages: Sequence[Any],
    *,
    provider: str | Profile = "openai",
    format: str | None = None,
    policy: Policy | Mode | str | None = None,
) -> Repair:
    """Repair ``messages`` for ``provider`` and report every change.

    **Parameters:**

    * **messages** - the history, in any supported format. Never mutated.
    * **provider** - *(optional)* a provider name (default ``"openai"``).
    * **format** - *(optional)* the format name; detected when left out.
    * **policy** - *(optional)* a :class:`toolmend.Policy` or ``"repair"`` (default),
      ``"strict"`` (raise :class:`toolmend.ToolChainError`) or ``"report"`` (change nothing).

    **Returns:** a :class:`toolmend.Repair`; ``.messages`` is ``messages`` itself when nothing
    needed changing.

    >>> import toolmend
    >>> history = [{"role": "user", "content": "Weather in Paris?"},
    ...            {"role": "tool", "tool_call_id": "call_1", "content": "21 C"}]
    >>> fixed = toolmend.repair(history, provider="deepseek")
    >>> [change.code for change in fixed.changes], len(fixed.messages)
    (['dropped_orphan_result'], 1)
    """
    profile = get_profile(provider)
    chosen = as_policy(policy)
    module, skeleton = read_history(messages, format)
    problems = judge(skeleton, profile)
    if not problems:
        return Repair(messages)
    if chosen.mode is Mode.STRICT:
        raise ToolChainError(problems=problems)
    if chosen.mode is Mode.REPORT:
        return Repair(messages, (), tuple(problems), tuple(problems))

    def result_text(index: int, slot: int) -> str | None:
        text: str | None = module.result_text(messages[index], slot)
        return text

    plan, changes = plan_repair(
        skeleton, profile, chosen, result_text, {problem.code for problem in problems}
    )
    repaired = module.apply(messages, plan)
    after = module.read(repaired)
    left = judge(after, profile)
    if _DEBUG and logger.isEnabledFor(logging.DEBUG):
        logger.debug("toolmend before: %s", _structure(skeleton))
        logger.debug("toolmend after: %s", _structure(after))
    return Repair(repaired, tuple(changes), tuple(problems), tuple(left))


def sanitize(
    messages: Sequence[Any],
    *,
    provider: str | Profile = "openai",
    format: str | None = None,
    policy: Policy | Mode | str | None = None,
) -> Any:
    """``repair(...).messages``: the history ``provider`` accepts, or the input itself if valid.

    >>> import toolmend
    >>> history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    >>> toolmend.sanitize(history, provider="openai") is history
    True
    """
    return repair(messages, provider=provider, format=format, policy=policy).messages


_DEBUG = os.environ.get("TOOLMEND_DEBUG", "") not in ("", "0", "false", "no")


def _structure(skeleton: Skeleton) -> str:
    """Roles, call ids and names and result ids of a history; never its content."""
    parts = []
    for index, kind in enumerate(skeleton.kinds):
        calls = skeleton.calls.get(index, ())
        results = skeleton.results.get(index, ())
        detail = ",".join(f"{c.name}:{c.id}" for c in calls) or ",".join(
            f"<{r.id}" for r in results
        )
        parts.append(f"{index}:{kind}" + (f"[{detail}]" if detail else ""))
    return " ".join(parts)
