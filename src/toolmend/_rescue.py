"""The one retry after a provider's 400 about tool history: the history to send the second time.

toolmend's profiles are written ahead of time; a provider may still refuse a history they pass
(a rule nobody has written yet, a variant the hook did not know it met). When the refusal is
about the history's tool calls (:func:`toolmend._error_texts.about_tool_history`), the hooks
call :func:`rescue` once with the history they sent and the provider's message:

1. **A rule toolmend knows.** The message holds the error text of a profile's rule
   (:func:`toolmend._error_texts.known_rules`). The history is repaired with the profile that
   holds the rule, when that profile finds the rule broken in it (the place the message quotes,
   an index or call ids, is not needed to find it: the profile's check finds every place), and
   the result is kept only if the hook's own profile still accepts it (or finds no more than it
   did before). The rule's code names the rescue.
2. **Otherwise, the last resort** (``"flattened"``): the tool exchanges the message points at
   (the call ids it quotes, else the exchange around the message index it quotes, else every
   exchange) are written as plain text, each calling message as assistant text
   (``[tool call <id>: <name>(<arguments>)]``) and each result message as user text
   (``[tool result <id>]`` and the content), by the format's own writer, the same that writes a
   chat template's flattened tool traffic. Nothing is dropped: call names, arguments and result
   contents are kept verbatim. A message flattened takes every exchange it is part of with it,
   so no call is left without its result. A flattened message is joined with the text
   messages of the same role right beside it (a result written as user text and the user's
   next message become one turn: a template or a provider that wants turns to alternate
   refuses two, and the hook's profile may not know it does). The hook's profile then repairs
   what the rewrite left.

The caller's history is never changed; :func:`rescue` returns ``None`` when the error is not
about tool history or nothing can be rewritten. Cost: one read of the history, one repair and
one write, each linear.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._api import check, format_of, profile_for, repair, sequence_of
from ._edits import AsText, Item, Keep, Merge, Plan
from ._error_texts import MAX_TEXT, KnownRule, about_tool_history, known_rules, quoted_ids
from ._report import Change, InvalidHistoryError, ToolmendError
from ._skeleton import ASSISTANT, USER, Skeleton
from .profiles import PROFILES, Profile, get_profile

__all__ = ["FLATTENED", "Rescue", "rescue"]

FLATTENED = "flattened"
"""The rule name of the last-resort rewrite."""

_FLATTENED_DETAIL = "tool exchange written as text after the provider refused it"


@dataclass(frozen=True)
class Rescue:
    """The history to send once more after a provider's 400, and why."""

    messages: Any
    """The history to retry with: a new list (the caller's is never changed)."""
    rule: str
    """The problem code of the known rule the error named, or ``"flattened"``."""
    profile: str
    """The profile whose rule was applied (the hook's own for ``"flattened"``)."""
    changes: tuple[Change, ...]
    """What the retry changed in the history it was handed."""
    error: str
    """The provider's error message (cut at :data:`toolmend._error_texts.MAX_TEXT`)."""
    pointed: tuple[str, ...] = ()
    """What the error pointed at: the call ids it quoted, or ``index N``."""


def rescue(
    messages: Sequence[Any],
    error: str,
    *,
    provider: str | Profile | None = None,
    format: str | None = None,
    model: str | None = None,
) -> Rescue | None:
    """The history to retry ``messages`` with after ``provider`` refused it with ``error``.

    **Parameters:**

    * **messages** - the history that was sent (after toolmend's repair), any format.
    * **error** - the provider's error message (the text of its 400 body).
    * **provider**, **format**, **model** - as for :func:`toolmend.repair`: the rules the
      history was held to.

    **Returns:** a :class:`Rescue`, or ``None`` when the error is not about the history's tool
    calls (context length, content policy, authentication, rate limits, any unrelated 400) or
    there is nothing to rewrite. Raises what :func:`toolmend.repair` raises for a history it
    cannot read.

    >>> import toolmend
    >>> history = [{"role": "user", "content": "Weather?"},
    ...            {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1",
    ...             "type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
    ...            {"role": "tool", "tool_call_id": "call_1", "content": "21 C"}]
    >>> retry = toolmend.rescue(history, "Tool messages are not supported by this model")
    >>> retry.rule, [message["role"] for message in retry.messages]
    ('flattened', ['user', 'assistant', 'user'])
    >>> toolmend.rescue(history, "This model's maximum context length is 8192 tokens") is None
    True
    """
    if not isinstance(error, str):
        raise TypeError(f"error must be the provider's message (a str), got {type(error).__name__}")
    error = error[:MAX_TEXT]
    if not about_tool_history(error):
        return None
    module = format_of(messages, format)
    own = profile_for(provider, module, model)
    before: int | None = None  # what the hook's profile finds in what was sent, once asked
    tries = _MAX_TRIES
    for rule in known_rules(error):
        for holder in _holders(rule, own):
            tries -= 1
            if tries < 0:
                break
            if before is None:
                before = len(check(messages, provider=own, format=module.name))
            done = _by_rule(messages, rule, holder, own, module.name, before)
            if done is not None:
                repaired, changes = done
                return Rescue(repaired, rule.code, holder, changes, error, _pointed(rule))
    return _flattened(messages, error, own, module.name)


_MAX_TRIES = 8
"""The most profiles a rescue asks to repair a history for a known rule (each is one check and
at most one repair of the history): an error text several rules and profiles share costs a
bounded number of passes."""


def _holders(rule: KnownRule, own: Profile) -> list[str]:
    """The profiles that run ``rule`` with the text the error matched, the hook's own first:
    the profile :func:`~toolmend._error_texts.known_rules` names may hold it only among its
    rules not run (``strict_checks``; Gemini's thought signatures are run by ``gemini-3``)."""
    named = PROFILES[rule.profile]
    text = (named.checks.get(rule.code) or named.strict_checks[rule.code]).error
    found = [
        name
        for name, profile in PROFILES.items()
        if (check := profile.checks.get(rule.code)) is not None and check.error == text
    ]
    if own.name in found:
        found.remove(own.name)
        found.insert(0, own.name)
    return found


def _by_rule(
    messages: Sequence[Any], rule: KnownRule, name: str, own: Profile, format: str, before: int
) -> tuple[Any, tuple[Change, ...]] | None:
    """``messages`` repaired by the profile ``name`` that holds ``rule``, if that profile finds
    the rule broken and the hook's own profile finds no more problems in the result than
    before."""
    try:
        holder = profile_for(get_profile(name), format_of(messages, format))
        if not any(p.code == rule.code for p in check(messages, provider=holder, format=format)):
            return None
        fixed = repair(messages, provider=holder, format=format)
        if not fixed.changed or len(check(fixed.messages, provider=own, format=format)) > before:
            return None
    except (InvalidHistoryError, ToolmendError):  # a profile for another layout or API
        return None
    return fixed.messages, tuple(fixed.changes)


def _pointed(rule: KnownRule) -> tuple[str, ...]:
    if "index" in rule.fields and rule.fields["index"].isdigit():
        return (f"index {rule.fields['index']}",)
    return ()


def _flattened(messages: Sequence[Any], error: str, own: Profile, format: str) -> Rescue | None:
    module = format_of(messages, format)
    listed = sequence_of(module, messages)
    skeleton = module.read(listed)
    traffic = sorted({*skeleton.calls, *skeleton.results})
    if not traffic:
        return None
    chosen, pointed = _targets(skeleton, error, traffic)
    changes = [
        Change("flattened_tool_traffic", index, _FLATTENED_DETAIL, _ids_at(skeleton, index))
        for index in sorted(chosen)
    ]
    items: list[Item] = []
    for run in _runs(skeleton, chosen):
        role = _role(skeleton, chosen, run[0])
        parts = tuple(AsText(Keep(i), role) if i in chosen else Keep(i) for i in run)
        items.append(parts[0] if len(parts) == 1 else Merge(role, parts))
        changes.extend(
            Change("merged_messages", i, f"joined with the {role} message before it", ())
            for i in run[1:]
        )
    written = module.apply(listed, Plan(items))
    after = repair(written, provider=own, format=module.name)
    if after.changed:
        changes.extend(after.changes)
    return Rescue(after.messages, FLATTENED, own.name, tuple(changes), error, pointed)


def _role(skeleton: Skeleton, chosen: set[int], index: int) -> str:
    """The role message ``index`` has once written: a flattened result is user text."""
    kind = skeleton.kinds[index]
    return kind if index not in chosen or kind == ASSISTANT else USER


def _runs(skeleton: Skeleton, chosen: set[int]) -> list[list[int]]:
    """The messages in order, a flattened message joined with its text neighbours of the same
    role: two user texts in a row (a result written as text, then the user's next message)
    are refused by every template and provider that wants turns to alternate, and a hook's
    profile may not know it does (the rescue is for the rules toolmend does not know). Only
    text joins a flattened message: a neighbour with calls or results of its own keeps them."""
    solo = set().union(*(skeleton.marked(flag) for flag in _SOLO))

    def plain(index: int) -> bool:
        if index in solo:
            return False
        return index in chosen or not (index in skeleton.calls or index in skeleton.results)

    runs: list[list[int]] = []
    for index in range(len(skeleton.kinds)):
        role = _role(skeleton, chosen, index)
        if runs and role in (USER, ASSISTANT) and plain(index):
            last = runs[-1][-1]
            if (
                plain(last)
                and _role(skeleton, chosen, last) == role
                and (index in chosen or last in chosen)
            ):
                runs[-1].append(index)
                continue
        runs.append([index])
    return runs


_SOLO = ("reasoning", "reasoning_field", "thinking", "reasoning_item", "output_item", "reference")
"""Marks of messages never joined with a neighbour (:func:`_runs`): what they carry besides text
(a reasoning field, a thinking block, a Responses reasoning item or reference) is kept only in
a message of their own."""


def _ids_at(skeleton: Skeleton, index: int) -> tuple[str, ...]:
    ids = [call.id for call in skeleton.calls.get(index, ())]
    ids += [result.id for result in skeleton.results.get(index, ())]
    return tuple(dict.fromkeys(i for i in ids if isinstance(i, str) and i))


def _targets(
    skeleton: Skeleton, error: str, traffic: list[int]
) -> tuple[set[int], tuple[str, ...]]:
    """The messages to flatten and what the error pointed at: the exchanges of the call ids it
    quotes, else the exchange around the message index it quotes, else every message with
    calls or results. Closed under exchanges: a flattened message's ids take every other
    message holding them along, and a Gemini turn (no ids) its neighbour turn."""
    holders: dict[str, list[int]] = {}
    for index in traffic:
        for found in _ids_at(skeleton, index):
            holders.setdefault(found, []).append(index)
    quoted = quoted_ids(error, holders)
    if quoted:
        seeds = {index for found in quoted for index in holders[found]}
        return _closed(skeleton, seeds, holders), tuple(quoted)
    for found_index in _quoted_indexes(error):
        if found_index < len(skeleton.kinds):
            seeds = _around(skeleton, found_index)
            if seeds:
                return _closed(skeleton, seeds, holders), (f"index {found_index}",)
    return set(traffic), ()


_INDEX = re.compile(r"\b(?:messages|contents|input)(?:\.|\[|\.\[)(\d{1,9})\b")
"""A message index as providers quote it: ``messages.3``, ``messages[3]``, ``contents[3]``,
``input[3]``, ``messages.[3]``."""


def _quoted_indexes(error: str) -> list[int]:
    """The message indexes ``error`` quotes, first first (at most four are tried)."""
    return [int(found) for found in _INDEX.findall(error)[:4]]


def _around(skeleton: Skeleton, index: int) -> set[int]:
    """The messages with calls or results at ``index`` and right next to it (a provider's
    index may be one off the history's: a system message sent apart, a converter's turn)."""
    near = (index - 1, index, index + 1)
    return {i for i in near if i in skeleton.calls or i in skeleton.results}


def _closed(skeleton: Skeleton, seeds: set[int], holders: dict[str, list[int]]) -> set[int]:
    chosen: set[int] = set()
    followed: set[str] = set()  # each id's holders are taken once: linear in the history
    pending = list(seeds)
    while pending:
        index = pending.pop()
        if index in chosen:
            continue
        chosen.add(index)
        ids = _ids_at(skeleton, index)
        for found in ids:
            if found not in followed:
                followed.add(found)
                pending.extend(holders[found])
        if len(ids) < len(skeleton.calls.get(index, ())) + len(skeleton.results.get(index, ())):
            # a call or result without an id (Gemini): its exchange is the turn beside it
            pending.extend(
                i for i in (index - 1, index + 1) if i in skeleton.calls or i in skeleton.results
            )
    return chosen
