"""The pairing engine: which call each tool result answers, for every layout and format.

Every planner (:mod:`toolmend._plan_messages`, :mod:`toolmend._block_repair`,
:mod:`toolmend._repair_items`), :func:`toolmend._trim.trim` and ``toolmend show`` pair through
:func:`match`, so a result is attached to the same call whichever of them looks at it.

Evidence is weighed in a fixed order, and a weaker kind of evidence never takes a call that a
stronger one claims anywhere in the history:

1. **Exact id.** A result answers the most recent earlier call with its id that is still
   waiting (ids that OpenAI-compatible servers reuse every turn are so matched within their
   turn). A result that comes before its call answers that later call when no other call uses
   the id. Under ``ordered`` pairing (Responses items, where the API matches by id alone) a
   result answers the latest earlier call with its id, answered or not.
2. **Name.** A result without a matching id that states a name answers the open call of its
   turn whose id is that name (Gemini's opaque id stored as the name, seed 003), else the
   open call of that function name; a result whose id is the function name of an open call
   without an id answers it (agent frameworks that store an id-less call's result under the
   function name).
3. **The only open call.** A result without an id answers the call of its turn left open, when
   exactly one is (native Gemini contents: the open calls in order), unless the result names
   another function (a name that is an opaque call id says nothing against it).
4. **Adoption.** A call without an id, left open, adopts the id of the one unclaimed result of
   its turn (or, with as many such calls as results, each the result in its position).

A turn is a calling message and the messages after it up to the next calling message. Of two
results for one call the stronger wins (a real result over a stub, a stub over an empty one;
between two real ones the first): a weaker one or an exact copy is a duplicate, a second,
different real result is an orphan (it may answer a call that is gone); the planners report
every result they drop. Whatever no call can own is an orphan.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import deque

from ._planstate import CallRef, PlanState, ResultRef, result_at
from ._skeleton import ASSISTANT, TOOL, Call, Result
from .formats import get

__all__ = ["NEAREST", "ORDERED", "match"]

NEAREST = "nearest"
"""Results follow their calls: chat messages, Anthropic, Bedrock and Gemini blocks."""
ORDERED = "ordered"
"""Responses items: a result anywhere after a call with its id answers it."""


def match(state: PlanState, mode: str = NEAREST, *, skip: frozenset[int] = frozenset()) -> None:
    """Fill ``state.answer``, ``answered_by``, ``duplicates``, ``orphans``, ``filled_ids`` and
    ``adopted_ids`` (see the module docstring); ``filled_ids`` names the results without an id
    paired with a call that has one (not in native Gemini contents, where ids are optional
    and :func:`toolmend._block_repair.name_results` writes them). ``skip`` names messages to
    leave out."""
    engine = _Engine(state, mode, skip)
    engine.by_id()
    engine.early()
    engine.by_name()
    engine.open_call()
    engine.adopt()
    state.orphans = sorted(engine.unclaimed)


class _Engine:
    """One pairing run; each method is one kind of evidence, strongest first."""

    def __init__(self, state: PlanState, mode: str, skip: frozenset[int]) -> None:
        self.state = state
        self.skeleton = state.skeleton
        self.ordered = mode == ORDERED
        skeleton = state.skeleton
        kinds = skeleton.kinds
        self.positional = get(skeleton.format).positional_results
        """Native Gemini contents: a Content of any role may call, and responses answer the
        open calls in order."""
        profile = state.profile
        any_role = self.positional or (
            # Bedrock: a toolUse a user message holds is moved, and keeps its result
            profile.block_pairing == "converse" and "misplaced_part" in profile.checks
        )
        self.callers = [
            index
            for index in sorted(skeleton.calls)
            if index not in skip and (kinds[index] == ASSISTANT or any_role)
        ]
        self.result_messages = [
            index
            for index in sorted(skeleton.results)
            if index not in skip and (kinds[index] == TOOL or not self.ordered)
        ]
        self.call_ids = (
            {call.id for index in self.callers for call in skeleton.calls[index] if call.id}
            if self.positional
            else set()
        )
        """Every call id (native Gemini only: a response with an id no call has answers by
        position there)."""
        self.unclaimed: set[ResultRef] = set()
        """Results no evidence has placed yet (orphans unless a later step places them)."""
        self.early_results: list[ResultRef] = []
        self.open_index: dict[int, dict[tuple[str, str | None], _OpenCalls]] = {}
        """Calling message (or :data:`_EVERY_CALLER`) -> group -> its open calls."""
        self.call_of: dict[CallRef, Call] = {}
        """Every call by reference, gathered with the first index (for :meth:`pair`)."""

    # --- helpers ------------------------------------------------------------------------------

    def pair(self, call_ref: CallRef, ref: ResultRef) -> None:
        state = self.state
        if self.ordered:
            state.answer.setdefault(call_ref, ref)
        else:
            assert call_ref not in state.answer, "a call is answered once"
            state.answer[call_ref] = ref
        state.answered_by[ref] = call_ref
        self.unclaimed.discard(ref)
        if self.open_index:
            call = self.call_of[call_ref]
            for scope in (call_ref[0], _EVERY_CALLER):
                groups = self.open_index.get(scope)
                if groups is not None:
                    for key in _groups_of(call):
                        members = groups.get(key)
                        if members is not None:
                            members.close(call_ref)

    def turn_of(self, index: int) -> int:
        """The calling message whose turn message ``index`` is in (-1: before any call)."""
        position = bisect_left(self.callers, index + 1) - 1
        return self.callers[position] if position >= 0 else -1

    def turn_end(self, caller: int) -> int:
        position = bisect_left(self.callers, caller + 1)
        return self.callers[position] if position < len(self.callers) else len(self.skeleton)

    def open_calls(self, caller: int) -> list[Call]:
        if caller < 0:
            return []
        answer = self.state.answer
        return [call for call in self.skeleton.calls[caller] if (caller, call.slot) not in answer]

    def second_result(self, call_ref: CallRef, ref: ResultRef, *, after: bool = True) -> None:
        """A result for a call that already has one: the stronger stays (module docstring).
        Under ``ordered`` pairing a second output ``after`` its call stays too (the API takes
        it)."""
        state = self.state
        current = state.answer[call_ref]
        if self.ordered and after:
            state.answered_by[ref] = call_ref
            return
        if state.result_text(*ref) == state.result_text(*current):
            # a copy: as strong as the one it repeats (the stub test is a costly search)
            state.duplicates.add(ref)
            state.duplicate_of[ref] = call_ref
            return
        strength, held = state.strength(ref), state.strength(current)
        if strength > held:
            del state.answered_by[current]
            del state.answer[call_ref]
            state.duplicates.add(current)
            state.duplicate_of[current] = call_ref
            self.pair(call_ref, ref)
        elif strength < held:
            state.duplicates.add(ref)
            state.duplicate_of[ref] = call_ref
        else:
            self.unclaimed.add(ref)

    # --- 1. exact ids -------------------------------------------------------------------------

    def by_id(self) -> None:
        """Every result with an id to the call with that id (module docstring, step 1)."""
        if self.ordered:
            self._by_id_ordered()
            return
        skeleton = self.skeleton
        calls, results = skeleton.calls, skeleton.results
        waiting: dict[str, list[int]] = {}  # call id -> calling messages with that id open
        slots: dict[tuple[int, str], deque[int]] = {}  # (message, id) -> open slots
        latest_answer: dict[str, CallRef] = {}
        callers = set(self.callers)
        for index in sorted(callers.union(self.result_messages)):
            if index in callers:
                for call in calls[index]:
                    if call.id is None:
                        continue
                    key = (index, call.id)
                    if key not in slots:
                        slots[key] = deque()
                        waiting.setdefault(call.id, []).append(index)
                    slots[key].append(call.slot)
            for result in results.get(index, ()):
                ref = (index, result.slot)
                self.unclaimed.add(ref)
                if result.id is None:
                    continue
                stack = waiting.get(result.id)
                while stack and not slots[(stack[-1], result.id)]:
                    stack.pop()
                if stack:
                    call_ref = (stack[-1], slots[(stack[-1], result.id)].popleft())
                    self.pair(call_ref, ref)
                    latest_answer[result.id] = call_ref
                elif result.id in latest_answer:
                    self.unclaimed.discard(ref)
                    self.second_result(latest_answer[result.id], ref)
                else:
                    self.early_results.append(ref)

    def _by_id_ordered(self) -> None:
        skeleton = self.skeleton
        owners_of: dict[str, list[CallRef]] = {}
        for index in self.callers:
            for call in skeleton.calls[index]:
                if call.id is not None:
                    owners_of.setdefault(call.id, []).append((index, call.slot))
        for index in self.result_messages:
            for result in skeleton.results[index]:
                ref = (index, result.slot)
                self.unclaimed.add(ref)
                if result.id is None:
                    continue
                owners = owners_of.get(result.id, [])
                before = bisect_left(owners, (index, -1))
                if before > 0:
                    self.pair(owners[before - 1], ref)
                else:
                    self.early_results.append(ref)

    def early(self) -> None:
        """A result before its call answers it when no other call has the id (step 1)."""
        if not self.early_results:
            return
        skeleton = self.skeleton
        uses: dict[str, int] = {}
        caller_of: dict[str, CallRef] = {}
        for index in self.callers:
            for call in skeleton.calls[index]:
                if call.id is not None:
                    uses[call.id] = uses.get(call.id, 0) + 1
                    caller_of[call.id] = (index, call.slot)
        state = self.state
        for ref in self.early_results:
            result_id = result_at(skeleton, ref).id
            if result_id is None or uses.get(result_id) != 1:
                continue
            call_ref = caller_of[result_id]
            if call_ref[0] <= ref[0]:
                continue
            if call_ref not in state.answer:
                self.pair(call_ref, ref)
            else:
                self.unclaimed.discard(ref)
                self.second_result(call_ref, ref, after=False)

    # --- 2. names -----------------------------------------------------------------------------

    def by_name(self) -> None:
        """Results that name their call: an opaque id as the name, a function name, or an id
        that is the function name of an id-less call (module docstring, step 2)."""
        state, skeleton = self.state, self.skeleton
        for ref in sorted(self.unclaimed):
            result = result_at(skeleton, ref)
            caller = self.turn_of(ref[0])
            if caller < 0 or not self.first_open(caller, _ALL, 1):
                continue
            if result.id is None or self.positional:
                target = self._named_call(caller, result)
                if target is not None:
                    self.pair(target, ref)
                    if result.id is None and not self.positional:
                        state.filled_ids[ref] = target
                    continue
            if result.id is not None:
                named = self.first_open(caller, (_IDLESS_NAME, result.id), 2)
                if len(named) == 1:
                    self.pair(named[0], ref)
                    state.adopted_ids[named[0]] = result.id

    def _named_call(self, caller: int, result: Result) -> CallRef | None:
        """The open call of ``caller`` that ``result`` names, if exactly one does."""
        if not result.name:
            return None
        for kind in (_ID, _NAME):
            matches = self.first_open(caller, (kind, result.name), 2)
            if len(matches) == 1:
                return matches[0]
            if matches:
                return None
        return None

    # --- 3. the only open call ----------------------------------------------------------------

    def open_call(self) -> None:
        """Results without an id to the open calls of their turn (module docstring, step 3)."""
        state, skeleton = self.state, self.skeleton
        for ref in sorted(self.unclaimed):
            result = result_at(skeleton, ref)
            if result.id is not None and (not self.positional or result.id in self.call_ids):
                continue
            # the open calls it may answer on this weak evidence: any, when it names nothing
            # or names an opaque id; else those without a name, of its name, or whose id is
            # its name (not another function's call). The first two of each group tell none,
            # one or several, and which comes first
            scope = _EVERY_CALLER if self.ordered else self.turn_of(ref[0])
            if scope == -1:
                continue
            name = result.name
            if not name or _OPAQUE_ID.match(name) is not None:
                groups: tuple[tuple[str, str | None], ...] = (_ALL,)
            else:
                groups = ((_NO_NAME, None), (_NAME, name), (_ID, name))
            found = sorted(
                {call_ref for group in groups for call_ref in self.first_open(scope, group, 2)}
            )
            if self.ordered:
                found = [call_ref for call_ref in found if call_ref[0] < ref[0]]
            if not found or (len(found) > 1 and not self.positional):
                continue
            self.pair(found[0], ref)
            if result.id is None and not self.positional:
                state.filled_ids[ref] = found[0]

    # --- indexes of the open calls ------------------------------------------------------------

    def first_open(self, scope: int, group: tuple[str, str | None], count: int) -> list[CallRef]:
        """The first ``count`` open calls of calling message ``scope`` (:data:`_EVERY_CALLER`:
        of every one) in ``group`` (all of them, by id, by name, ...). A scope of a few calls
        is read as it is; a larger one is indexed once (:meth:`_index`), not scanned for each
        of its results."""
        calls = self.skeleton.calls[scope] if scope != _EVERY_CALLER else None
        if calls is not None and len(calls) <= _SCAN_LIMIT:
            answer = self.state.answer
            found: list[CallRef] = []
            for call in calls:
                if (scope, call.slot) not in answer and _in_group(call, group):
                    found.append((scope, call.slot))
                    if len(found) == count:
                        break
            return found
        groups = self.open_index.get(scope)
        if groups is None:
            groups = self._index(scope)
        members = groups.get(group)
        return members.first(count) if members is not None else []

    def _index(self, scope: int) -> dict[tuple[str, str | None], _OpenCalls]:
        """Build the groups of ``scope``'s open calls; :meth:`pair` keeps them up to date."""
        if not self.call_of:
            self.call_of = {
                (index, call.slot): call
                for index in self.callers
                for call in self.skeleton.calls[index]
            }
        answer = self.state.answer
        callers = self.callers if scope == _EVERY_CALLER else [scope]
        members: dict[tuple[str, str | None], list[CallRef]] = {}
        for index in callers:
            for call in self.skeleton.calls[index]:
                call_ref = (index, call.slot)
                if call_ref not in answer:
                    for key in _groups_of(call):
                        members.setdefault(key, []).append(call_ref)
        groups = self.open_index[scope] = {key: _OpenCalls(refs) for key, refs in members.items()}
        return groups

    # --- 4. adoption --------------------------------------------------------------------------

    def adopt(self) -> None:
        """Calls without an id take the id of the one unclaimed result of their turn
        (module docstring, step 4)."""
        skeleton = self.skeleton
        waiting = sorted(ref for ref in self.unclaimed if result_at(skeleton, ref).id is not None)
        if not waiting:
            return
        for caller in self.callers:
            idless = [call for call in self.open_calls(caller) if call.id is None]
            if not idless:
                continue
            start = caller if not self.ordered else caller + 1  # a Content may answer itself
            low = bisect_left(waiting, (start, -1))
            high = bisect_left(waiting, (self.turn_end(caller), -1))
            offered = waiting[low:high]
            if len(offered) != len(idless):
                continue
            for call, ref in zip(idless, offered, strict=True):
                call_ref = (caller, call.slot)
                self.pair(call_ref, ref)
                result_id = result_at(skeleton, ref).id
                assert result_id is not None
                self.state.adopted_ids[call_ref] = result_id


_OPAQUE_ID = re.compile(r"(?:call|toolu|tooluse|tool|fc)[_-]", re.IGNORECASE)
"""How the call ids of the common providers begin: a result "named" so holds an id where its
name should be (seed 003), which says nothing against a call of another name."""


_EVERY_CALLER = -2
"""The scope of the open-call index across every calling message (``ordered`` pairing)."""
_ID, _NAME, _NO_NAME, _IDLESS_NAME = "id", "name", "no name", "id-less name"
_ALL: tuple[str, str | None] = ("all", None)


_SCAN_LIMIT = 16
"""A calling message with at most this many calls is scanned for its open calls (cheaper
than an index for the usual few); a larger one is indexed."""


def _in_group(call: Call, group: tuple[str, str | None]) -> bool:
    """Whether ``call`` is in ``group`` (what :func:`_groups_of` lists, asked of one)."""
    kind, value = group
    if kind == _ID:
        return call.id is not None and call.id == value
    if kind == _NAME:
        return bool(call.name) and call.name == value
    if kind == _NO_NAME:
        return not call.name
    if kind == _IDLESS_NAME:
        return call.id is None and call.name == value
    return True  # _ALL


def _groups_of(call: Call) -> list[tuple[str, str | None]]:
    """The index groups a call belongs to. A result may answer a call on weak evidence
    (step 3) unless it names another function: a call with no name, of the result's name, or
    whose id is that name; a result with no name, or an opaque id as its name, any call."""
    groups: list[tuple[str, str | None]] = [_ALL]
    if call.id is not None:
        groups.append((_ID, call.id))
    if call.name:
        groups.append((_NAME, call.name))
    else:
        groups.append((_NO_NAME, None))
    if call.id is None:
        groups.append((_IDLESS_NAME, call.name))
    return groups


class _OpenCalls:
    """Calls in order, some closed since: the first few open ones in amortised constant time
    (closed positions are skipped through pointers that are shortened as they are followed).
    A group of one call, the usual case for ids and names, is held without them."""

    __slots__ = ("next_open", "position", "refs")

    def __init__(self, refs: list[CallRef]) -> None:
        self.refs = refs
        self.position: dict[CallRef, int] | None = None
        self.next_open: list[int] = []
        """Position -> a position at or after it that may be open (itself when open)."""
        if len(refs) > 1:
            self.position = {ref: position for position, ref in enumerate(refs)}
            self.next_open = list(range(len(refs) + 1))

    def close(self, ref: CallRef) -> None:
        if self.position is None:
            if self.refs and self.refs[0] == ref:
                self.refs = []
            return
        position = self.position.pop(ref, None)
        if position is not None:
            self.next_open[position] = position + 1

    def _find(self, position: int) -> int:
        root = position
        while self.next_open[root] != root:
            root = self.next_open[root]
        while self.next_open[position] != root:  # shorten the path followed
            self.next_open[position], position = root, self.next_open[position]
        return root

    def first(self, count: int) -> list[CallRef]:
        """The first ``count`` open calls, in order."""
        if self.position is None:
            return self.refs[:count]
        found: list[CallRef] = []
        position = self._find(0)
        while position < len(self.refs) and len(found) < count:
            found.append(self.refs[position])
            position = self._find(position + 1)
        return found
