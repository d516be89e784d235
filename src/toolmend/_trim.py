"""Cut and join a history without splitting a tool-call group.

A *group* is what must be kept or dropped together: an assistant message with calls, every
result that answers those calls, and any message that landed between them (a user who typed
while a tool ran). Every other message is a group of its own. Groups come from the pairing the
repair planner uses (:func:`toolmend._repair.pair_results`) applied to the skeleton, so they work
for every format, and ids that OpenAI-compatible servers reuse every turn (``call_0`` again) are
matched within their turn.

Trimmers that cut at "user turn" boundaries (LangChain's ``trim_messages(start_on="human")``,
its summarisation cutoff, seed 001's first fix) break exactly when a user message lands between
a call and its result: the cut falls on that user message and the result after it is left an
orphan. Here that user message is inside the group, so no cut can fall on it.

``atomic_groups``
    The groups, as index ranges.
``align_cut``
    Moves a proposed cut to the nearest group boundary at or before it, never into the
    protected prefix: what a summariser calls to know how far it may fold (seed 001, see
    docs/design.md).
``trim``
    Keeps the first ``keep_first`` messages and the newest whole groups that fit. A valid
    history is read once by the format's one-pass test (where it has one) and otherwise only
    around the cuts, so trimming a long history costs a fraction of its ``json.dumps``.
``merge_consecutive``
    Joins runs of same-role messages for providers and converters that need strict
    alternation, keeping every tool result (seed 002).

Token counting for ``trim(max_tokens=...)``: by default :func:`estimate_tokens`, which is
``4 + ceil(characters / 4)`` per message (four characters per token is the usual rule of thumb
for English and JSON with OpenAI's tokenizers; 4 tokens cover the role and framing). Any
callable ``(message) -> int`` works, and so do ``"litellm"`` / ``"litellm:<model>"``
(``litellm.token_counter``) and ``"tiktoken"`` / ``"tiktoken:<encoding>"`` (default encoding
``o200k_base``), imported only when asked for.
"""

from __future__ import annotations

import bisect
import difflib
import functools
import importlib
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import fields, replace
from types import MappingProxyType, ModuleType
from typing import Any

from . import _api as api
from ._api import read_history
from ._edits import Blocks, Item, Merge, source_index
from ._policy import Policy
from ._repair import Pairing, pair_results
from ._report import (
    InvalidHistoryError,
    InvalidMessageError,
    TrimError,
    UnknownNameError,
    logger,
)
from ._rules import judge
from ._skeleton import ASSISTANT, TOOL, Skeleton
from .formats import Format, detect, get, message_dict, names
from .profiles import Profile, get_profile

__all__ = [
    "PAIRING_CODES",
    "TokenCounter",
    "align_cut",
    "atomic_groups",
    "estimate_tokens",
    "merge_consecutive",
    "trim",
]

TokenCounter = Callable[[Any], int]
"""Counts the tokens of one message."""

PAIRING_CODES = frozenset(
    {
        "empty_history",
        "orphan_result",
        "unknown_result_id",
        "missing_result",
        "duplicate_result",
        "result_without_id",
        "call_without_id",
        "response_extra_parts",
    }
)
"""The problem codes of the pairing rules: the ones :func:`trim` guarantees its output is free
of (under the profile of the format's own provider)."""

_STEP_FIELDS = frozenset(
    {
        "call_id_max_length",
        "call_id_pattern",
        "call_id_length",
        "function_name_pattern",
        "role_successors",
        "last_kinds",
        "reasoning_in_tool_turns",
        "alternation",
        "known_roles",
        "call_id_scope",
        "results_need_name",
        "first_user",
        "thinking",
        "thought_signatures",
        "reject_function_ids",
        "single_call",
    }
)
"""Profile fields that switch on repairs beyond pairing; :func:`trim` sets them back to
:class:`~toolmend.profiles.Profile`'s defaults."""


# --- groups -----------------------------------------------------------------------------------


def atomic_groups(messages: Sequence[Any], *, format: str | None = None) -> list[range]:
    """The index ranges of ``messages`` that must be kept or dropped together.

    An assistant message with calls, all of its results (copies of them too), and any message
    that landed between them form one range; every other message is a range of its own. The
    ranges are in order and cover every index once. A result that answers no call is a range of
    its own, unless it sits in the block of results of a call with its id.

    **Parameters:**

    * **messages** - the history, in any supported format.
    * **format** - *(optional)* the format name; detected when left out.

    **Returns:** a list of ``range`` objects.

    >>> import toolmend
    >>> call = {"id": "call_1", "type": "function",
    ...         "function": {"name": "weather", "arguments": "{}"}}
    >>> history = [{"role": "user", "content": "Weather?"},
    ...            {"role": "assistant", "content": None, "tool_calls": [call]},
    ...            {"role": "user", "content": "Are you there?"},
    ...            {"role": "tool", "tool_call_id": "call_1", "content": "21 C"},
    ...            {"role": "assistant", "content": "21 C in Paris."}]
    >>> toolmend.atomic_groups(history)
    [range(0, 1), range(1, 4), range(4, 5)]
    """
    module, skeleton = read_history(messages, format)
    return _groups(skeleton, api.result_reader(module, messages))


def _groups(skeleton: Skeleton, result_text: Callable[[int, int], str | None]) -> list[range]:
    """The groups of a skeleton (see :func:`atomic_groups`)."""
    if not skeleton.calls:
        return [range(index, index + 1) for index in range(len(skeleton))]
    return _groups_of(skeleton, pair_results(skeleton, result_text))


def _groups_of(skeleton: Skeleton, pairing: Pairing) -> list[range]:
    """Spans from each call to its furthest result, merged where they overlap (a message
    between a call and its result may itself call)."""
    count = len(skeleton)
    reach = list(range(1, count + 1))  # index -> the end of the furthest span starting there
    for start, end in _spans(skeleton, pairing)[0]:
        if reach[start] < end:
            reach[start] = end
    groups: list[range] = []
    start = end = 0
    for index in range(count):
        if reach[index] > end:
            end = reach[index]
        if index + 1 == end:
            groups.append(range(start, end))
            start = end
    return groups


def _spans(skeleton: Skeleton, pairing: Pairing) -> tuple[list[tuple[int, int]], list[int]]:
    """The ``[start, end)`` spans that must stay whole, and the loose messages.

    A span runs from a call to its result (or a duplicate of it). A result that answers no
    call stays with the call the provider pairs it with, although the pairing engine gives it
    none (it is a second, different result for its call, or it names another function), so that
    no cut falls between the two, as the judge reads them:

    * where results follow their calls, a result in the block of results right after a calling
      message, with the id of one of its calls (a second result for a reused id), stays with
      that block, where the provider's adjacency rule reads it; so does any result in that
      block where results answer by position (Gemini: the n-th response of a turn answers its
      n-th call, whatever its name or id says);
    * where a result may lie anywhere after its call (Responses items, paired by id alone), it
      stays with the latest earlier call with its id, as ``group_spans`` ties it.

    Any other such result is loose: in a window of the history, its call lies before the
    window. (Hypothesis found both: an id-less Gemini response named ``unknown`` and a second
    Responses output for an answered call were loose in a window that held their call, so the
    windowed cut passed them where reading everything cut before the call.)
    """
    spans = [
        (caller, holder + 1) if caller < holder else (holder, caller + 1)
        for (caller, _), (holder, _) in (
            *pairing.answer.items(),
            *((call, ref) for ref, call in pairing.duplicate_of.items()),
        )
    ]
    unattached = set(pairing.orphans)
    unattached.update(ref for ref in pairing.duplicates if ref not in pairing.duplicate_of)
    holders = {holder for holder, _ in unattached}
    loose: list[int] = []
    if unattached:
        kinds, calls, results = skeleton.kinds, skeleton.calls, skeleton.results
        module = get(skeleton.format)
        by_id = not module.results_follow_calls
        positional = module.positional_results
        latest: dict[str | None, int] = {}  # call id -> its latest calling message so far
        owner = -1  # the calling message whose block of results the walk is in
        owner_ids: set[str | None] = set()
        for index, kind in enumerate(kinds):
            if kind != TOOL:
                owner = index if kind == ASSISTANT and index in calls else -1
                owner_ids = {call.id for call in calls.get(index, ())} if owner >= 0 else set()
                if by_id:
                    latest.update((call.id, index) for call in calls.get(index, ()))
            elif index in holders:
                # the message's unattached results only (a block message also holds answered
                # ones): one the provider pairs with a call in sight stays with it; one whose
                # call is not in sight was called before the window, so the cut must pass it
                ids = [
                    result.id
                    for result in results.get(index, ())
                    if (index, result.slot) in unattached
                ]
                if by_id:
                    callers = [latest.get(result_id, -1) for result_id in ids if result_id]
                    spans.extend((caller, index + 1) for caller in callers if caller >= 0)
                    if len(callers) < len(ids) or min(callers) < 0:
                        loose.append(index)
                    continue
                held = [positional or result_id in owner_ids for result_id in ids]
                if owner >= 0 and any(held):
                    spans.append((owner, index + 1))
                if owner < 0 or not all(held):
                    loose.append(index)
    return spans, loose


def _check_count(name: str, value: Any, *, optional: bool = False) -> None:
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TrimError(f"{name} must be a whole number >= 0, got {value!r}")


def align_cut(
    messages: Sequence[Any], index: int, *, keep_first: int = 0, format: str | None = None
) -> int:
    """Move a proposed cut point to the nearest group boundary at or before ``index``.

    ``index`` is the first message to keep, or the end of what a summariser may fold; the
    answer is never inside the protected prefix (``keep_first``). When no boundary lies between
    ``keep_first`` and ``index``, or the prefix itself ends inside a group (so that any cut
    would split it), the answer is ``keep_first``: cut (or fold) nothing. Keeping
    ``messages[:keep_first] + messages[answer:]`` is then always whole groups.

    **Parameters:**

    * **messages** - the history, in any supported format.
    * **index** - the proposed cut, ``0 <= index``; values past the end mean the end.
    * **keep_first** - *(optional)* how many leading messages are protected (default 0).
    * **format** - *(optional)* the format name; detected when left out.

    **Returns:** the aligned cut, between ``keep_first`` and ``len(messages)``.

    >>> import toolmend
    >>> call = {"id": "call_1", "type": "function",
    ...         "function": {"name": "weather", "arguments": "{}"}}
    >>> history = [{"role": "system", "content": "Be brief."},
    ...            {"role": "user", "content": "Weather?"},
    ...            {"role": "assistant", "content": None, "tool_calls": [call]},
    ...            {"role": "tool", "tool_call_id": "call_1", "content": "21 C"},
    ...            {"role": "assistant", "content": "21 C in Paris."}]
    >>> toolmend.align_cut(history, 3, keep_first=1)   # 3 is the tool result: back to its call
    2
    """
    _check_count("index", index)
    _check_count("keep_first", keep_first)
    if isinstance(messages, str):
        total = 1
    elif isinstance(messages, (list, tuple)):
        total = len(messages)
    else:  # one Gemini Content or Part, or not a history at all (an error here)
        total = len(read_history(messages, format)[1])
    keep_first, index = min(keep_first, total), min(index, total)
    if index <= keep_first or index == total:
        return max(index, keep_first)
    module, skeleton = read_history(messages, format)
    groups = _groups(skeleton, api.result_reader(module, messages))
    if keep_first and _start_of(groups, keep_first) != keep_first:
        return keep_first
    return max(_start_of(groups, index), keep_first)


def _start_of(groups: list[range], index: int) -> int:
    """The start of the group holding ``index``."""
    starts = [group.start for group in groups]
    return starts[bisect.bisect_right(starts, index) - 1]


# --- trim -------------------------------------------------------------------------------------


def trim(
    messages: Sequence[Any],
    *,
    max_messages: int | None = None,
    max_tokens: int | None = None,
    token_counter: TokenCounter | str | None = None,
    keep_first: int = 0,
    format: str | None = None,
) -> Any:
    """The first ``keep_first`` messages plus the newest whole groups that fit the limits.

    Never splits a group, so the result never breaks the pairing rules (no orphan result, no
    call without its result). A history that already breaks them is first mended for them as
    :func:`toolmend.sanitize` would (results moved next to their call, a message that landed
    between them moved after them, orphans dropped, missing results answered with the
    placeholder), and the limits apply to the mended history. A protected prefix that ends
    inside a group grows to the group's end.

    **Parameters:**

    * **messages** - the history, in any supported format. Never mutated.
    * **max_messages** - *(optional)* the most messages to return.
    * **max_tokens** - *(optional)* the most tokens to return, counted by ``token_counter``.
    * **token_counter** - *(optional)* a callable ``(message) -> int``, ``"litellm"`` or
      ``"tiktoken"`` (see the module docstring); by default :func:`estimate_tokens`.
    * **keep_first** - *(optional)* how many leading messages are always kept (the system
      prompt, the original task); default 0.
    * **format** - *(optional)* the format name; detected when left out.

    **Returns:** a new list, or ``messages`` itself when nothing is cut and nothing needed
    mending.

    **Raises:** :class:`toolmend.TrimError` when the protected prefix or the newest group alone
    does not fit, or a limit is not a whole number >= 0.

    >>> import toolmend
    >>> call = {"id": "call_1", "type": "function",
    ...         "function": {"name": "weather", "arguments": "{}"}}
    >>> history = [{"role": "system", "content": "Be brief."},
    ...            {"role": "user", "content": "Weather?"},
    ...            {"role": "assistant", "content": None, "tool_calls": [call]},
    ...            {"role": "tool", "tool_call_id": "call_1", "content": "21 C"},
    ...            {"role": "assistant", "content": "21 C in Paris."}]
    >>> [m["role"] for m in toolmend.trim(history, max_messages=3, keep_first=1)]
    ['system', 'assistant']
    >>> [m["role"] for m in toolmend.trim(history, max_messages=4, keep_first=1)]
    ['system', 'assistant', 'tool', 'assistant']
    """
    _check_count("max_messages", max_messages, optional=True)
    _check_count("max_tokens", max_tokens, optional=True)
    _check_count("keep_first", keep_first)
    counter = _token_counter(token_counter) if max_tokens is not None else None
    if isinstance(messages, str) or (isinstance(messages, (list, tuple)) and not messages):
        return messages  # nothing to cut (a bare string is one Responses user message)
    module = api.format_of(messages, format)
    if module.other_shapes and not isinstance(messages, (list, tuple)):
        messages = module.normalize(messages)  # one Gemini Content or Part: the list it stands for
    profile = _pairing_profile(module.native_provider)
    working, keep = _mend(module, messages, profile, min(keep_first, len(messages)))
    if max_messages is None and max_tokens is None:
        return working
    budget = _Budget(max_messages, max_tokens, counter)
    try:
        return _cut(module, working, keep, profile, budget)
    except InvalidMessageError:
        # a window's read names a message at its place in the window: the whole history's
        # names it at its own (the mend read it whole only where it found damage)
        module.read(working)
        raise


def _cut(
    module: Format, working: Sequence[Any], keep: int, profile: Profile, budget: _Budget
) -> Any:
    """:func:`trim`'s cut of the mended history ``working``, ``keep`` messages protected."""
    spans = _whole_spans(module, working)
    if spans is not None:
        prefix_end = _past_spans(spans, keep, len(working))
    else:
        prefix_end = _boundary_after(module, working, keep)
    start = budget.tail_start(working, prefix_end)
    if start <= prefix_end:  # everything fits: nothing is cut, and nothing needs aligning
        return working
    if spans is not None:
        start = _past_spans(spans, start, len(working))
    else:
        start = _boundary_from(module, working, start)
    if start >= len(working) > prefix_end:
        raise budget.too_small(
            f"the newest message (with the tool-call group it belongs to) at {len(working) - 1}"
        )
    position = _position_profile(module.native_provider)
    if position is not None and start < len(working):
        start = _fit_start(module, working, prefix_end, start, position)
        if start >= len(working):
            raise budget.too_small(
                f"a tail that {position.name} accepts at its start (a call turn or an "
                "assistant message may not come first)"
            )
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug(
            "toolmend trim: kept %d of %d messages (prefix %d, tail from %d)",
            prefix_end + len(working) - start,
            len(working),
            prefix_end,
            start,
        )
    if start == prefix_end:
        return working
    trimmed = [*working[:prefix_end], *working[start:]]
    # the one-pass scans first, as for any request (the join of prefix and tail may break a
    # rule the scan applies beyond the pairing ones: it then judges only the ranges around it)
    left = [
        problem
        for damage in api.find_damage(module, trimmed, profile)
        for problem in damage.problems
    ]
    if left:  # the windows rest on what a mended history guarantees; never hand back less
        codes = ", ".join(sorted({problem.code for problem in left}))
        raise TrimError(f"trimming would break the tool-call pairing ({codes}); please report")
    return trimmed


class _Budget:
    """The limits, and what is left of them as messages are kept."""

    def __init__(
        self, max_messages: int | None, max_tokens: int | None, counter: TokenCounter | None
    ) -> None:
        self.max_messages = max_messages
        self.max_tokens = max_tokens
        self.counter = counter

    def _rooms(self, working: Sequence[Any], prefix_end: int) -> tuple[int, int]:
        message_room = len(working) if self.max_messages is None else self.max_messages
        token_room = 0
        message_room -= prefix_end
        if self.max_tokens is not None:
            assert self.counter is not None
            count = self.counter
            token_room = self.max_tokens - sum(count(working[i]) for i in range(prefix_end))
        if message_room < 0 or token_room < 0:
            raise self.too_small(
                f"the protected prefix (the first {prefix_end} messages: keep_first, grown to "
                "the end of a tool-call group it ends in)"
            )
        return message_room, token_room

    def tail_start(self, working: Sequence[Any], prefix_end: int) -> int:
        """The oldest message such that it and everything newer fit (before alignment)."""
        message_room, token_room = self._rooms(working, prefix_end)
        start = len(working)
        lowest = max(prefix_end, start - message_room)
        count = self.counter
        while start > lowest:
            if count is not None:
                tokens = count(working[start - 1])
                if tokens > token_room:
                    break
                token_room -= tokens
            start -= 1
        return start

    def too_small(self, what: str) -> TrimError:
        limits = []
        if self.max_messages is not None:
            limits.append(f"max_messages={self.max_messages}")
        if self.max_tokens is not None:
            limits.append(f"max_tokens={self.max_tokens}")
        return TrimError(f"{what} does not fit in {' and '.join(limits)}")


_WINDOW = 64
"""How many messages past the protected prefix :func:`_boundary_after` reads at first."""


_SHORTCUTS = True
"""Whether :func:`trim` may take the formats' one-pass shortcuts to its boundaries (the tests
turn them off to get the reference: reading everything)."""


def _adjacent(module: Format) -> bool:
    """Whether the format puts results right after their calls and the shortcuts that rest on
    it may be taken."""
    return _SHORTCUTS and module.results_follow_calls


def _whole_spans(module: Format, working: Sequence[Any]) -> list[tuple[int, int]] | None:
    """The format's ranges that must stay whole, from its one-pass ``group_spans`` (Responses:
    where results may lie anywhere after their calls, the boundaries need the whole input, and
    a read with a pairing costs several times the pass); None to read instead."""
    return module.group_spans(working) if _SHORTCUTS else None


def _past_spans(spans: list[tuple[int, int]], index: int, total: int) -> int:
    """The first group boundary at or after ``index``, given the sorted, disjoint ranges that
    must stay whole: ``index`` itself unless a range runs across it."""
    index = min(max(index, 0), total)
    inside = bisect.bisect_left(spans, (index,)) - 1  # the last range starting before index
    if inside >= 0 and spans[inside][1] > index:
        return spans[inside][1]
    return index


def _boundary_after(module: Format, working: Sequence[Any], index: int) -> int:
    """The first group boundary at or after ``index``, read from a window at the start.

    A window ``[0, end)`` shows every group that starts in it; a boundary inside it counts
    once no call before it still waits for a result (which may lie past the window's end).
    """
    total = len(working)
    if index <= 0 or index >= total:
        return min(max(index, 0), total)
    # Responses items may put a later output of a call before the window's end out of sight
    # (hypothesis found one): the window is only for formats whose results follow their calls
    end = min(total, index + _WINDOW) if _adjacent(module) else total
    while True:
        window = working[:end]
        skeleton = module.read(window)
        pairing = pair_results(skeleton, api.result_reader(module, window))
        waiting = [
            caller
            for caller, found in skeleton.calls.items()
            for call in found
            if (caller, call.slot) not in pairing.answer
        ]
        first_waiting = min(waiting, default=end)
        for group in _groups_of(skeleton, pairing):
            if group.start >= index and group.start <= first_waiting and group.start < end:
                return group.start
        if end == total:
            return total
        end = min(total, 2 * end)


def _boundary_from(module: Format, working: Sequence[Any], index: int) -> int:
    """The first group boundary at or after ``index``.

    Where results follow their calls (``Format.results_follow_calls``) that is the first
    message from ``index`` on that carries no tool result, found by reading a message or two.
    Elsewhere it reads everything from ``index`` on: a result whose call lies before ``index``
    may sit anywhere after it, so no window short of the end is sure to show the last such
    result."""
    if not _adjacent(module):
        return _boundaries_from(module, working, index)[0]
    for position in range(index, len(working)):
        kind = module.kind_of(working[position])
        if kind is not None:
            if kind != TOOL:
                return position
        elif not module.read(working[position : position + 1]).results and not _calls_wait(
            module, working, position
        ):
            return position
    return len(working)


def _calls_wait(module: Format, working: Sequence[Any], position: int) -> bool:
    """Whether a call before ``position`` is answered only after it: in the block formats a
    call turn may run over several assistant messages (Anthropic merges them), answered after
    the last. Reading back over the assistant messages right before ``position`` finds the
    turn's calls; reading on from
    ``position`` over the turn's later assistant messages finds the results that follow the
    turn. The turn waits only if one of those answers one of its calls: a call nothing answers
    (a damaged history) holds no later message to it, as reading everything finds (hypothesis
    found a call turn and a text written as two messages, the call unanswered, where this
    said "waits" and the newest message then could not be kept alone). A call or result
    without an id cannot be matched here, and waits."""
    waiting: set[str] = set()
    for earlier in range(position - 1, -1, -1):
        skeleton = module.read(working[earlier : earlier + 1])
        if skeleton.kinds[0] != ASSISTANT:
            break
        for call in skeleton.calls.get(0, ()):
            if call.id is None:
                return True
            waiting.add(call.id)
    if not waiting:
        return False
    later = position
    total = len(working)
    while later < total:  # the turn's later assistant messages
        skeleton = module.read(working[later : later + 1])
        if skeleton.kinds[0] != ASSISTANT or skeleton.results:
            break
        later += 1
    while later < total:  # the results that follow the turn
        skeleton = module.read(working[later : later + 1])
        if not skeleton.results:
            break
        for found in skeleton.results[0]:
            if found.id is None or found.id in waiting:
                return True
        later += 1
    return False


def _boundaries_from(module: Format, working: Sequence[Any], index: int) -> list[int]:
    """The group boundaries at or after ``index``, ending with ``len(working)``, read from the
    window ``[index, end)``.

    In that window a result whose call lies before ``index`` has no call: the cut must pass
    it, and the whole group it is in."""
    total = len(working)
    if index >= total:
        return [total]
    window = working[index:]
    skeleton = module.read(window)
    pairing = pair_results(skeleton, api.result_reader(module, window))
    loose = _spans(skeleton, pairing)[1]
    need = max(loose) + 1 if loose else 0
    groups = _groups_of(skeleton, pairing) if skeleton.calls or loose else ()
    if not groups:
        return [*range(index + need, total), total]
    return [index + group.start for group in groups if group.start >= need] + [total]


def _candidates(module: Format, working: Sequence[Any], start: int) -> Iterator[int]:
    """The group boundaries from ``start`` on, one at a time: where results follow their calls
    each is found by reading a message or two past the last (the first usually fits, and the
    tail is never read whole); elsewhere from one read of everything after ``start``."""
    if not _adjacent(module):
        yield from _boundaries_from(module, working, start)
        return
    total = len(working)
    while start < total:
        yield start
        start = _boundary_from(module, working, start + 1)
    yield total


def _fit_start(
    module: Format, working: Sequence[Any], prefix_end: int, start: int, profile: Profile
) -> int:
    """The first boundary at or after ``start`` where the kept tail may begin under the
    provider's rules about how a conversation or a call turn starts (Gemini: a call turn right
    after a user turn; Bedrock: the user first). ``len(working)`` when there is none."""
    head = list(working[:prefix_end])
    for candidate in _candidates(module, working, start):
        if candidate >= len(working):
            break
        probe = [*head, *working[candidate : candidate + 2]]
        if not any(p.index == prefix_end for p in judge(module.read(probe), profile)):
            return candidate
    return len(working)


def _mend(
    module: Format, messages: Sequence[Any], profile: Profile, keep_first: int
) -> tuple[Sequence[Any], int]:
    """The history mended for the pairing rules, and where the protected prefix now ends.

    A valid history comes back as it is, with no copying. Only the damaged ranges are read
    and planned, as :func:`toolmend.repair` does; the plan items say where each message of
    the prefix went.
    """
    damaged = api.damage_in(module, messages, profile)
    if damaged is None:
        return messages, keep_first
    # only the ranges before the prefix ends say where it went; the others are freed as mended
    mended = api.mend_damage(module, messages, profile, Policy(), damaged, parts_before=keep_first)
    keep = -1
    shift = 0  # how much longer the output is than the input, before the current range
    for damage, plan, applied in mended.parts:
        low, high = damage.low, damage.high
        if keep < 0 and keep_first <= low:
            keep = keep_first + shift
        if keep < 0 and keep_first < high:
            part = messages[low:high]
            keep = low + shift + _mended_prefix(part, applied, plan.items, keep_first - low)
        shift += len(applied) - (high - low)
    if keep < 0:
        keep = keep_first + shift
    return mended.messages, keep


def _mended_prefix(
    messages: Sequence[Any], mended: Sequence[Any], items: list[Item], keep_first: int
) -> int:
    """How many leading mended messages hold what came from the first ``keep_first``."""
    if keep_first == 0:
        return 0
    prefix = 0
    if len(items) == len(mended):  # one output message per plan item
        for position, item in enumerate(items):
            if 0 <= _origin(item) < keep_first:
                prefix = position + 1
        return prefix
    # A format that packs several items into one message: find the kept originals instead.
    kept = {id(message) for message in messages[:keep_first]}
    for position, message in enumerate(mended):
        if id(message) in kept:
            prefix = position + 1
    return max(prefix, min(keep_first, len(mended)))


def _origin(item: Item) -> int:
    """The input message an item comes from, for the prefix count: a merge counts only when
    every part comes from the input (its earliest), a gathered block message never."""
    if isinstance(item, Merge):
        return min((_origin(part) for part in item.parts), default=-1)
    return -1 if isinstance(item, Blocks) else source_index(item)


@functools.lru_cache(maxsize=16)
def _pairing_profile(provider: str) -> Profile:
    """The provider's profile with only the pairing rules left on."""
    native = get_profile(provider)
    checks = {code: check for code, check in native.checks.items() if code in PAIRING_CODES}
    return replace(
        native, name=f"{native.name} (pairing)", checks=MappingProxyType(checks), **_steps_off()
    )


_POSITION_CODES = frozenset({"call_turn_position", "first_not_user"})
"""Rules about where a conversation or a call turn may start, which a cut can break even
between whole groups: :func:`trim` moves its cut on until they hold."""


@functools.lru_cache(maxsize=16)
def _position_profile(provider: str) -> Profile | None:
    """The provider's profile with only the start-position rules left on, or None when it has
    none."""
    native = get_profile(provider)
    checks = {code: check for code, check in native.checks.items() if code in _POSITION_CODES}
    if not checks:
        return None
    steps_off = _steps_off()
    steps_off.pop("first_user", None)
    return replace(
        native, name=f"{native.name} (start)", checks=MappingProxyType(checks), **steps_off
    )


def _steps_off() -> dict[str, Any]:
    return {field.name: field.default for field in fields(Profile) if field.name in _STEP_FIELDS}


# --- token counting ---------------------------------------------------------------------------


def estimate_tokens(message: Any) -> int:
    """``4 + ceil(characters / 4)``: a plain estimate of one message's tokens.

    ``characters`` counts every string in the message (role, content, text parts, tool call
    names and arguments, ids; not the dict keys) and the digits of numbers, as the message
    would be serialised: an object the message holds twice counts twice, as it is written
    twice (each container is still read once at each depth, so shared and self references
    cost their own size, not the size of every path through them; nothing deeper than 32
    levels counts). SDK objects are read through ``model_dump``.

    >>> from toolmend._trim import estimate_tokens
    >>> estimate_tokens({"role": "user", "content": "x" * 40})   # 4 + ceil(44 / 4)
    15
    """
    return 4 + -(-_characters(message, 0, {}) // 4)


def _characters(value: Any, depth: int, known: dict[tuple[int, int], tuple[int, Any]]) -> int:
    """The characters of ``value`` at ``depth``. ``known`` holds those of the containers
    already read in this message, by identity and depth (the total depends on the depth
    through the cut at 32), so a container reached by many paths is read once per depth; it
    also holds each container itself, so that no id in it is freed and given to another (a
    ``model_dump`` made on the way, a mapping's fresh values)."""
    kind = type(value)
    if kind is dict or kind is list:  # the common case, without a generator
        if depth > 32:
            return 0
        key = (id(value), depth)
        hit = known.get(key)
        if hit is not None:
            return hit[0]
        total = 0
        for item in value.values() if kind is dict else value:
            if type(item) is str:
                total += len(item)
            elif item is not None:
                total += _characters(item, depth + 1, known)
        known[key] = (total, value)
        return total
    if kind is int or kind is float:  # before the ABC checks below, which cost ten times more
        return len(repr(value))
    if isinstance(value, str):
        return len(value)
    if depth > 32 or value is None or isinstance(value, bool):
        return 0
    if isinstance(value, (Mapping, list, tuple)):
        key = (id(value), depth)
        hit = known.get(key)
        if hit is not None:
            return hit[0]
        items = value.values() if isinstance(value, Mapping) else value
        total = sum(_characters(item, depth + 1, known) for item in items)
        known[key] = (total, value)
        return total
    if isinstance(value, (int, float)):
        return len(repr(value))
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return _characters(dump(exclude_none=True), depth + 1, known)
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict):
        public = {key: item for key, item in attributes.items() if not key.startswith("_")}
        return _characters(public, depth + 1, known)
    return len(str(value))


def _strings(
    value: Any, out: list[str], depth: int = 0, seen: dict[int, Any] | None = None
) -> list[str]:
    """Every string in a message, in order (what a tokenizer is given). A container met again
    (a shared or self reference) gives its strings once: the text a tokenizer reads must not
    grow with the number of paths through the message. ``seen`` holds each container read,
    by id, and the container itself, so that no id in it is freed and given to another."""
    if seen is None:
        seen = {}
    if isinstance(value, str):
        out.append(value)
    elif depth > 32 or value is None or isinstance(value, (bool, bytes, bytearray)):
        pass
    elif isinstance(value, (Mapping, list, tuple)):
        if id(value) in seen:
            return out
        seen[id(value)] = value
        for item in value.values() if isinstance(value, Mapping) else value:
            _strings(item, out, depth + 1, seen)
    elif isinstance(value, (int, float)):
        out.append(repr(value))
    elif callable(getattr(value, "model_dump", None)):
        _strings(value.model_dump(exclude_none=True), out, depth + 1, seen)
    return out


_COUNTER_NAMES = ("litellm", "tiktoken")


def _token_counter(token_counter: TokenCounter | str | None) -> TokenCounter:
    if token_counter is None:
        return estimate_tokens
    if isinstance(token_counter, str):
        name, _, option = token_counter.partition(":")
        if name == "litellm":
            return _litellm_counter(option or None)
        if name == "tiktoken":
            return _tiktoken_counter(option or "o200k_base")
        close = difflib.get_close_matches(name, _COUNTER_NAMES, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise UnknownNameError(
            f"Unknown token_counter {token_counter!r}.{hint} Use a callable, 'litellm' or "
            "'tiktoken'"
        )
    if not callable(token_counter):
        raise TrimError(f"token_counter must be callable, got {type(token_counter).__name__}")
    return token_counter


def _optional(module: str, extra: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"token_counter={module!r} needs the {module} package: pip install 'toolmend[{extra}]'"
        ) from exc


def _litellm_counter(model: str | None) -> TokenCounter:
    litellm = _optional("litellm", "litellm")
    options = {"model": model} if model else {}

    def count(message: Any) -> int:
        plain = message if isinstance(message, Mapping) else message_dict(message)
        return int(litellm.token_counter(messages=[plain], **options))

    return count


def _tiktoken_counter(encoding_name: str) -> TokenCounter:
    tiktoken = _optional("tiktoken", "tiktoken")
    encoding = tiktoken.get_encoding(encoding_name)

    def count(message: Any) -> int:
        text = "\n".join(_strings(message, []))
        return 4 + len(encoding.encode(text, disallowed_special=()))

    return count


# --- merging ----------------------------------------------------------------------------------


def _role(message: Any, index: int) -> str:
    role = message.get("role") if isinstance(message, Mapping) else getattr(message, "role", None)
    if isinstance(role, str):
        return str(role.value) if hasattr(role, "value") else str(role)
    raise InvalidMessageError(index, "role", "a string", role)


def merge_consecutive(messages: Sequence[Any], *, format: str | None = None) -> Any:
    """Join each run of consecutive same-role messages into one, losing no tool result.

    For providers and converters that need strict user/assistant alternation (seed 002: a
    converter that kept only the first message's tool results made the model call the same
    tools again and again). Other fields come from the first message of a run.

    * OpenAI-shaped: tool (and legacy function) messages are never merged, since each answers
      one call id; texts are joined with a blank line, content parts and ``tool_calls`` are
      concatenated in order.
    * Anthropic-, Bedrock- and Gemini-shaped: blocks are concatenated, the tool results of the
      run first (the provider demands that results open a turn), then the other blocks in
      order; in an assistant run the calls go last (they must close the turn).

    **Parameters:**

    * **messages** - the history. Never mutated.
    * **format** - *(optional)* ``"openai"``, ``"anthropic"``, ``"bedrock"`` or ``"gemini"``;
      detected when left out.

    **Returns:** a new list, or ``messages`` itself when no two neighbours share a role.

    >>> import toolmend
    >>> history = [
    ...     {"role": "assistant", "content": [
    ...         {"type": "tool_use", "id": "t1", "name": "ls", "input": {}},
    ...         {"type": "tool_use", "id": "t2", "name": "pwd", "input": {}}]},
    ...     {"role": "user", "content": [
    ...         {"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"}]},
    ...     {"role": "user", "content": "And where am I?"},
    ...     {"role": "user", "content": [
    ...         {"type": "tool_result", "tool_use_id": "t2", "content": "/home"}]}]
    >>> merged = toolmend.merge_consecutive(history, format="anthropic")
    >>> [block.get("tool_use_id", block["type"]) for block in merged[1]["content"]]
    ['t1', 't2', 'text']
    """
    if isinstance(messages, str):
        return messages
    if not isinstance(messages, (list, tuple)):
        read_history(messages, format)  # not a history at all: a clear error
        return messages  # one Gemini Content or Part: nothing to merge
    module = _merge_format(messages, format)
    roles = [_role(message, index) for index, message in enumerate(messages)]
    mergeable = [not module.keeps_apart(role) for role in roles]
    merge = module.merge_run
    out: list[Any] = []
    start = 0
    changed = False
    for index in range(1, len(messages) + 1):
        if (
            index < len(messages)
            and mergeable[index]
            and roles[index] == roles[start]
            and mergeable[start]
        ):
            continue
        if index - start > 1:
            out.append(merge(messages[start:index]))
            changed = True
        else:
            out.append(messages[start])
        start = index
    return out if changed else messages


def _merge_format(messages: Sequence[Any], format: str | None) -> Format:
    module = get(format) if format is not None else detect(messages)
    if not module.merges:
        handled = [name for name in names() if get(name).merges]
        raise InvalidHistoryError(
            f"merge_consecutive does not handle the {module.name!r} format; it handles "
            + ", ".join(handled)
        )
    return module
