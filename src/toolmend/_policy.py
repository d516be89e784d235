"""What toolmend does about a broken history: the mode, and the choices within a repair.

The three modes are defined once here and passed down whole, never as loose booleans:

``Mode.REPAIR`` (``"repair"``, the default)
    Repair the history and report every change.
``Mode.STRICT`` (``"strict"``)
    Raise :class:`toolmend.ToolChainError` carrying the problems instead of repairing.
``Mode.REPORT`` (``"report"``)
    Change nothing; report the problems (hooks log them) and hand the history on as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Literal

from ._report import UnknownNameError

__all__ = ["PLACEHOLDER_TEXT", "Mode", "Policy", "as_policy"]

PLACEHOLDER_TEXT = "tool call had no recorded result"
"""The fixed, neutral result given to a call that has none. Fixed wording keeps repeated repair
stable and prompt caches warm; neutral wording ("no recorded result", not "cancelled by the
user") stays true whether the call was interrupted, trimmed away or lost in storage."""


class Mode(str, Enum):
    """The three modes; see the module docstring."""

    REPAIR = "repair"
    STRICT = "strict"
    REPORT = "report"


@dataclass(frozen=True)
class Policy:
    """The choices a repair makes. The defaults suit a request about to be sent."""

    mode: Mode = Mode.REPAIR
    """Repair, raise, or only report."""
    orphan_result: Literal["drop", "text"] = "drop"
    """A result whose call is gone (and cannot be moved next to it): ``"drop"`` it, or keep
    its content as ``"text"`` in a user message."""
    missing_result: Literal["placeholder", "remove_call"] = "placeholder"
    """A call with no result: answer it with :data:`PLACEHOLDER_TEXT` (marked as an error where
    the format can say so), or ``"remove_call"`` from the assistant message."""
    frontier: Literal["answer", "keep"] = "answer"
    """The last assistant message's unanswered calls when nothing follows them: ``"answer"``
    them (a request must), or ``"keep"`` them waiting (a history written while tools run)."""
    placeholder: str = PLACEHOLDER_TEXT
    """The text of the placeholder result."""


_BY_NAME = {mode.value: Policy(mode=mode) for mode in Mode}
_KEEPING = {mode.value: Policy(mode=mode, frontier="keep") for mode in Mode}


def as_policy(
    policy: Policy | Mode | str | None, *, frontier: Literal["answer", "keep"] = "answer"
) -> Policy:
    """Accept a :class:`Policy`, a :class:`Mode`, a mode name, or ``None`` (the default).

    ``frontier`` is the :attr:`Policy.frontier` of a policy given by its mode or left out (a
    history store keeps the live frontier waiting); a :class:`Policy` is taken as it is. The one
    parser of the ``policy`` argument: the core and every hook call it.

    >>> as_policy("strict", frontier="keep").frontier, as_policy(None).mode.value
    ('keep', 'repair')
    """
    found = _BY_NAME if frontier == "answer" else _KEEPING
    if policy is None:
        return found["repair"]
    if isinstance(policy, Policy):
        return policy
    if isinstance(policy, Mode):
        return found[policy.value]
    if isinstance(policy, str) and policy in found:
        return found[policy]
    raise UnknownNameError(
        f"Unknown policy {policy!r}: use a toolmend.Policy or one of 'repair', 'strict', 'report'"
    )
