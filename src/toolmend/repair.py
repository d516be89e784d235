"""Plan a repair: skeleton + profile + policy -> a :class:`~toolmend.edits.Plan` and the changes.

The planner runs only when :mod:`toolmend.rules` found a problem. It works in steps, each a small
function over the skeleton and the plan:

1. :func:`match_results` pairs every result with the call it answers: the most recent earlier
   call with that id still waiting (so ids that OpenAI-compatible servers reuse every turn are
   matched within their turn), a result without id to the only call waiting, a result before
   its call to that later call. A second result for one call is a duplicate; a real result
   wins over an "aborted" stub.
2. :func:`order_messages` lays the messages out again: each calling message, then its results
   (moved next to it from wherever they were), then placeholders for calls with no result;
   every other message keeps its order, so a message that had landed between a call and its
   results ends up after them. Orphans are dropped or turned into text, per policy.
3. :func:`rewrite_ids` gives calls the provider would refuse (missing, duplicated, too long,
   outside the pattern) a deterministic new id, on the call and its results alike.
4. :func:`fix_shapes` mends what the reader saw malformed, where the profile rejects it.
5. Profile steps: :func:`add_reasoning`, :func:`demote_system` and :func:`bridge_role_order`,
   :func:`open_with_user`, :func:`mark_prefix`, :func:`restore_alternation`.

A history with nothing to send (``empty_history``) is left as it is: nothing a repair could
add would be real.

Change codes (``Change.code``): ``moved_result``, ``moved_message``, ``dropped_orphan_result``,
``orphan_result_to_text``, ``dropped_duplicate_result``, ``answered_missing_call``,
``removed_call``, ``dropped_empty_message``, ``filled_result_id``, ``rewrote_call_id``,
``renamed_function``, ``normalized_tool_call``, ``removed_field``, ``filled_content``,
``stringified_content``, ``added_reasoning_content``, ``inserted_message``, ``marked_prefix``,
``flattened_tool_traffic``, ``merged_messages``, ``system_to_user``, ``renamed_role``.
"""

from __future__ import annotations

import hashlib
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from .edits import AsText, Blocks, Bridge, Item, Keep, Merge, Placeholder, Plan
from .history import ASSISTANT, BLOCKS, OTHER, SYSTEM, TOOL, USER, Call, Result, Skeleton
from .policy import Policy
from .profiles import Profile, compiled, get_profile
from .repair_items import mend_items, order_items
from .report import Change, shown_name

__all__ = ["ASSISTANT_BRIDGE_TEXT", "USER_BRIDGE_TEXT", "Pairing", "pair_results", "plan_repair"]

ASSISTANT_BRIDGE_TEXT = "Tool results received."
"""The assistant message inserted where a provider forbids a user message right after tool
results (Mistral) or a chat template needs an assistant turn there. Fixed wording, so repeated
repair is stable; it claims nothing beyond what the history shows."""

USER_BRIDGE_TEXT = "Continue."
"""The user message inserted where a chat template needs a user turn before an assistant one."""

ResultRef = tuple[int, int]
"""(message index, result slot): one result in the history."""
CallRef = tuple[int, int]
"""(message index, call slot): one call in the history."""

_STUB = re.compile(
    r"abort|interrupt|cancel|not (?:been )?(?:executed|run|completed)|no (?:recorded )?result"
    r"|did not complete|result unavailable|skipped|pending",
    re.IGNORECASE,
)


@dataclass
class _State:
    """What the steps share: the inputs, the pairing found, and the plan being built."""

    skeleton: Skeleton
    profile: Profile
    policy: Policy
    result_text: Callable[[int, int], str | None]
    answer: dict[CallRef, ResultRef] = field(default_factory=dict)
    answered_by: dict[ResultRef, CallRef] = field(default_factory=dict)
    duplicates: set[ResultRef] = field(default_factory=set)
    orphans: list[ResultRef] = field(default_factory=list)
    filled_ids: dict[ResultRef, CallRef] = field(default_factory=dict)
    final_ids: dict[CallRef, str] = field(default_factory=dict)
    plan: Plan = field(default_factory=lambda: Plan([]))
    changes: list[Change] = field(default_factory=list)

    def change(self, code: str, index: int, detail: str, *ids: str | None) -> None:
        index += self.skeleton.base
        self.changes.append(Change(code, index, detail, tuple(i for i in ids if i)))

    def is_stub(self, ref: ResultRef) -> bool:
        text = self.result_text(*ref)
        if text is None:
            return False
        return text == self.policy.placeholder or (len(text) < 160 and bool(_STUB.search(text)))


def plan_repair(
    skeleton: Skeleton,
    profile: Profile,
    policy: Policy,
    result_text: Callable[[int, int], str | None],
    problem_codes: set[str],
) -> tuple[Plan, list[Change]]:
    """The plan that makes ``skeleton`` pass ``profile``, and the changes it makes."""
    state = _State(skeleton, profile, policy, result_text)
    if "empty_history" in problem_codes:
        # nothing to send (system messages only): nothing a repair could add would be real,
        # so the history stays as it is and the problem stays in ``problems_left``
        state.plan.items.extend(Keep(index) for index in range(len(skeleton.kinds)))
        return state.plan, state.changes
    if skeleton.layout == BLOCKS:
        from .block_repair import plan_blocks  # block layouts: a module of their own

        plan_blocks(state, problem_codes)
        state.changes.sort(key=lambda change: change.index)
        return state.plan, state.changes
    if profile.pairing == "ordered":
        order_items(state, problem_codes)
    else:
        match_results(state)
        order_messages(state)
    if (
        not state.plan.items
        and state.orphans
        and skeleton.whole
        and "empty_history" in profile.checks
    ):
        keep_orphans_as_text(state)
    rewrite_ids(state)
    fix_shapes(state, problem_codes)
    if profile.pairing == "ordered":
        mend_items(state, problem_codes)
    if profile.reasoning_in_tool_turns:
        add_reasoning(state)
    if profile.role_successors is not None:
        demote_system(state)
        bridge_role_order(state)
    if profile.call_after_user and skeleton.whole:
        open_with_user(state)
    if profile.last_kinds is not None:
        mark_prefix(state)
    if profile.alternation is not None:
        restore_alternation(state)
    if profile.results_need_name or profile.first_user:
        from .block_repair import lead_with_user, name_results  # cross-target steps

        if profile.results_need_name:
            name_results(state)
        if profile.first_user:
            lead_with_user(state)
    state.changes.sort(key=lambda change: change.index)
    return state.plan, state.changes


# --- 1. pairing -------------------------------------------------------------------------------


def match_results(state: _State) -> None:
    """Pair every result with the call it answers (see the module docstring, step 1)."""
    skeleton = state.skeleton
    waiting: dict[str, list[int]] = {}  # call id -> calling messages with that id unanswered
    slots: dict[tuple[int, str], deque[int]] = {}  # (message, id) -> unanswered slots
    latest_answer: dict[str, CallRef] = {}  # call id -> the call it last answered
    last_caller = -1
    calls, results, kinds = skeleton.calls, skeleton.results, skeleton.kinds
    for index in range(len(kinds)):
        found = calls.get(index) if kinds[index] == ASSISTANT else None
        if found:
            last_caller = index
            for call in found:
                if call.id is None:
                    continue
                key = (index, call.id)
                if key not in slots:
                    slots[key] = deque()
                    waiting.setdefault(call.id, []).append(index)
                slots[key].append(call.slot)
        for result in results.get(index, ()):
            ref = (index, result.slot)
            if result.id is None:
                _match_without_id(state, ref, last_caller, slots)
                continue
            stack = waiting.get(result.id)
            while stack and not slots[(stack[-1], result.id)]:
                stack.pop()
            if stack:
                call_ref = (stack[-1], slots[(stack[-1], result.id)].popleft())
                _pair(state, call_ref, ref)
                latest_answer[result.id] = call_ref
            elif result.id in latest_answer:
                _duplicate(state, latest_answer[result.id], ref)
            else:
                state.orphans.append(ref)
    _match_early_results(state, slots)


def result_at(skeleton: Skeleton, ref: ResultRef) -> Result:
    """The result at ``(message, slot)``; in the block layout a slot is a block position."""
    carried = skeleton.results[ref[0]]
    if ref[1] < len(carried) and carried[ref[1]].slot == ref[1]:
        return carried[ref[1]]
    for result in carried:
        if result.slot == ref[1]:
            return result
    raise KeyError(ref)


def _pair(state: _State, call_ref: CallRef, ref: ResultRef) -> None:
    assert call_ref not in state.answer, "a call is answered once"
    state.answer[call_ref] = ref
    state.answered_by[ref] = call_ref


def _match_without_id(
    state: _State, ref: ResultRef, caller: int, slots: dict[tuple[int, str], deque[int]]
) -> None:
    """A result without an id answers the latest calling message's only waiting call."""
    if caller >= 0:
        open_calls = [
            c for c in state.skeleton.calls[caller] if (caller, c.slot) not in state.answer
        ]
        if len(open_calls) == 1:
            call = open_calls[0]
            if call.id is not None:
                slots[(caller, call.id)].remove(call.slot)
            _pair(state, (caller, call.slot), ref)
            state.filled_ids[ref] = (caller, call.slot)
            return
    state.orphans.append(ref)


def _duplicate(state: _State, call_ref: CallRef, ref: ResultRef) -> None:
    """A second result for an answered call.

    A real result replaces an earlier stub; a stub or an exact copy is a duplicate. Two
    different real results are not duplicates: the later one answers a call that is gone
    (ids reused every turn make that look like a repeat), so it is an orphan, which the
    policy may keep as text.
    """
    current = state.answer[call_ref]
    if state.is_stub(current) and not state.is_stub(ref):
        del state.answered_by[current]
        del state.answer[call_ref]
        state.duplicates.add(current)
        _pair(state, call_ref, ref)
    elif state.is_stub(ref) or state.result_text(*ref) == state.result_text(*current):
        state.duplicates.add(ref)
    else:
        state.orphans.append(ref)


def _match_early_results(state: _State, slots: dict[tuple[int, str], deque[int]]) -> None:
    """A result that came before its call answers that call, if it is still waiting.

    Only for ids used by a single call in the whole history: an id that servers reuse every
    turn says nothing about which later call a stray result belonged to.
    """
    if not state.orphans:
        return
    skeleton = state.skeleton
    uses: dict[str, int] = {}
    caller_of: dict[str, int] = {}
    for index, found in skeleton.calls.items():
        for call in found:
            if call.id is not None:
                uses[call.id] = uses.get(call.id, 0) + 1
                caller_of[call.id] = index
    still: list[ResultRef] = []
    for ref in state.orphans:
        result_id = result_at(skeleton, ref).id
        if result_id is not None and uses.get(result_id) == 1:
            caller = caller_of[result_id]
            if caller > ref[0] and slots[(caller, result_id)]:
                _pair(state, (caller, slots[(caller, result_id)].popleft()), ref)
                continue
        still.append(ref)
    state.orphans = still


@dataclass(frozen=True)
class Pairing:
    """Which call each result answers, as step 1 decides it (see :func:`pair_results`)."""

    answer: dict[CallRef, ResultRef]
    """(calling message, call slot) -> (message, result slot) of the result that answers it."""
    duplicates: frozenset[ResultRef]
    """Second results for an answered call (stubs and exact copies)."""
    orphans: tuple[ResultRef, ...]
    """Results that answer no call in the history."""
    duplicate_of: dict[ResultRef, CallRef] = field(default_factory=dict)
    """Each duplicate -> the call it repeats the result of (the latest earlier call with its
    id that has a result)."""


def pair_results(
    skeleton: Skeleton,
    result_text: Callable[[int, int], str | None],
    policy: Policy | None = None,
) -> Pairing:
    """Step 1 alone: the pairing the planner would use, for callers that only need to know
    which messages belong together (:mod:`toolmend.trim`). Same matching, same results."""
    state = _State(skeleton, get_profile("openai"), policy or Policy(), result_text)
    if skeleton.format == "gemini":
        from .block_repair import match_by_name  # ids are optional there

        match_by_name(state)
    else:
        match_results(state)
    duplicate_of: dict[ResultRef, CallRef] = {}
    if state.duplicates:
        answered: dict[str, list[CallRef]] = {}
        for call_ref, ref in sorted(state.answer.items()):
            result_id = result_at(skeleton, ref).id
            if result_id is not None:
                answered.setdefault(result_id, []).append(call_ref)
        for ref in state.duplicates:
            earlier = [
                call_ref
                for call_ref in answered.get(result_at(skeleton, ref).id or "", ())
                if call_ref[0] < ref[0]
            ]
            if earlier:
                duplicate_of[ref] = earlier[-1]
    return Pairing(
        dict(state.answer), frozenset(state.duplicates), tuple(state.orphans), duplicate_of
    )


# --- 2. layout --------------------------------------------------------------------------------


def order_messages(state: _State) -> None:
    """Lay the history out again with every call's results right after it (step 2)."""
    skeleton, policy, plan = state.skeleton, state.policy, state.plan
    items = plan.items
    kinds, calls, results = skeleton.kinds, skeleton.calls, skeleton.results
    orphans = set(state.orphans)
    results_of: dict[int, list[ResultRef]] = {}
    for call_ref, ref in state.answer.items():
        results_of.setdefault(call_ref[0], []).append(ref)
    frontier = _frontier(skeleton) if policy.frontier == "keep" and skeleton.whole else -1
    moved_aside: set[int] = set()
    for index in range(len(kinds)):
        carried = results.get(index)
        if carried and kinds[index] == TOOL:
            ref = (index, carried[0].slot)
            if ref in state.answered_by:
                continue
            if ref in state.duplicates:
                state.change(
                    "dropped_duplicate_result", index, "second result for one call", carried[0].id
                )
                continue
            if ref in orphans:
                _orphan(state, index, carried[0].id)
                continue
        items.append(Keep(index))
        found = calls.get(index) if kinds[index] == ASSISTANT else None
        if not found:
            continue
        refs = sorted(results_of.get(index, ()))
        block_end = index + 1
        while block_end < len(kinds) and kinds[block_end] == TOOL:
            block_end += 1
        for ref in refs:
            items.append(Keep(ref[0]))
            if not index < ref[0] < block_end:
                state.change(
                    "moved_result",
                    ref[0],
                    f"moved next to its call in message {index + skeleton.base}",
                    result_at(skeleton, ref).id,
                )
            if ref in state.filled_ids:
                state.change(
                    "filled_result_id",
                    ref[0],
                    "tool_call_id taken from the only open call",
                    _call(skeleton, state.answered_by[ref]).id,
                )
        if refs:
            for between in range(index + 1, refs[-1][0]):
                if (between, 0) not in state.answered_by and between not in moved_aside:
                    moved_aside.add(between)
        _answer_missing(state, index, found, frontier)
    if moved_aside:
        kept = {item.index for item in items if isinstance(item, Keep)}
        for between in sorted(moved_aside & kept):
            state.change("moved_message", between, "moved after the tool results it interrupted")


def keep_orphans_as_text(state: _State) -> None:
    """A history of nothing but orphans would come out empty, which no request may be: keep
    the orphans as user text instead of dropping them."""
    state.changes = [c for c in state.changes if c.code != "dropped_orphan_result"]
    for index, slot in state.orphans:
        state.plan.items.append(AsText(Keep(index), USER))
        result_id = state.skeleton.results[index][slot].id
        state.change(
            "orphan_result_to_text", index, "kept as text: nothing else is left", result_id
        )


def _frontier(skeleton: Skeleton) -> int:
    """The last calling message if only results follow it (tools may still be running)."""
    last = max((i for i in skeleton.calls if skeleton.kinds[i] == ASSISTANT), default=-1)
    if last < 0:
        return -1
    tail = skeleton.kinds[last + 1 :]
    return last if all(kind == TOOL for kind in tail) else -1


def _orphan(state: _State, index: int, result_id: str | None) -> None:
    if state.policy.orphan_result == "text":
        state.plan.items.append(AsText(Keep(index), USER))
        state.change(
            "orphan_result_to_text", index, "result of a vanished call kept as text", result_id
        )
    else:
        state.change(
            "dropped_orphan_result", index, "result of a call not in the history", result_id
        )


def _call(skeleton: Skeleton, call_ref: CallRef) -> Call:
    for call in skeleton.calls[call_ref[0]]:
        if call.slot == call_ref[1]:
            return call
    raise KeyError(call_ref)


def _answer_missing(state: _State, index: int, found: tuple[Call, ...], frontier: int) -> None:
    """Answer (or remove) the calls of message ``index`` that have no result."""
    missing = [call for call in found if (index, call.slot) not in state.answer]
    if not missing or index == frontier:
        return
    plan = state.plan
    if state.policy.missing_result == "remove_call":
        edit = plan.edit(index)
        for call in missing:
            edit.drop_calls.add(call.slot)
            state.change("removed_call", index, "call without a result removed", call.id)
        if len(edit.drop_calls) == len(found) and index in state.skeleton.marked("no_text"):
            plan.items.remove(Keep(index))
            state.change("dropped_empty_message", index, "nothing left after removing its calls")
        return
    for call in missing:
        plan.items.append(Placeholder(index, call.id or "", call.name, state.policy.placeholder))
        state.change("answered_missing_call", index, "call answered with the placeholder", call.id)


# --- 3. ids -----------------------------------------------------------------------------------

_ALNUM = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _fresh_id(seed: str, profile: Profile, taken: set[str]) -> str:
    """A deterministic id for ``seed`` in the provider's form, unused in the history."""
    counter = 0
    while True:
        digest = int.from_bytes(hashlib.sha256(f"{seed}#{counter}".encode()).digest()[:16], "big")
        chars: list[str] = []
        while digest and len(chars) < 24:
            digest, rest = divmod(digest, 62)
            chars.append(_ALNUM[rest])
        text = "".join(chars)
        if profile.call_id_length is not None:
            candidate = text[: profile.call_id_length]
        else:
            candidate = "call_" + text[:24]
        if candidate not in taken:
            taken.add(candidate)
            return candidate
        counter += 1


def _acceptable(call_id: str | None, profile: Profile) -> bool:
    if not call_id:  # missing or "": rewritten on the call and its results alike
        return False
    if profile.call_id_max_length is not None and len(call_id) > profile.call_id_max_length:
        return False
    pattern = compiled(profile.call_id_pattern)
    return pattern is None or pattern.fullmatch(call_id) is not None


def rewrite_ids(state: _State) -> None:
    """New ids for calls the provider would refuse, carried over to their results (step 3)."""
    skeleton, profile, plan = state.skeleton, state.profile, state.plan
    taken = {call.id for found in skeleton.calls.values() for call in found if call.id}
    request_wide = profile.call_id_scope == "request"
    seen: set[str] = set()
    for index in sorted(skeleton.calls):
        found = skeleton.calls[index]
        if not request_wide:
            seen = set()
        for call in found:
            call_ref = (index, call.slot)
            if _acceptable(call.id, profile) and call.id not in seen:
                seen.add(call.id or "")
                continue
            seed = call.id or f"{index}:{call.slot}:{call.name}"
            new_id = _fresh_id(seed, profile, taken)
            seen.add(new_id)
            state.final_ids[call_ref] = new_id
            plan.edit(index).call_ids[call.slot] = new_id
            state.change(
                "rewrote_call_id", index, "call id the provider would refuse", call.id, new_id
            )
    for ref, call_ref in state.answered_by.items():
        result = result_at(skeleton, ref)
        wanted = state.final_ids.get(call_ref) or _call(skeleton, call_ref).id
        if wanted is not None and result.id != wanted:
            plan.edit(ref[0]).result_ids[ref[1]] = wanted
    if state.final_ids:
        plan.items = [
            Placeholder(item.call_index, _final_id(state, item), item.name, item.text)
            if isinstance(item, Placeholder)
            else item
            for item in plan.items
        ]


def _final_id(state: _State, item: Placeholder) -> str:
    for call in state.skeleton.calls[item.call_index]:
        if (call.id or "") == item.call_id:
            return state.final_ids.get((item.call_index, call.slot), item.call_id)
    return item.call_id


# --- 4. shapes --------------------------------------------------------------------------------


def fix_shapes(state: _State, problem_codes: set[str]) -> None:
    """Mend the malformed shapes the reader saw, where the profile rejects them (step 4)."""
    skeleton, plan, profile = state.skeleton, state.plan, state.profile
    kept = {item.index for item in plan.items if isinstance(item, Keep)}
    drop_empty = "empty_assistant" in profile.checks
    for defect in skeleton.defects:
        index, code = defect.at, defect.code
        if code not in problem_codes or index not in kept:
            continue
        if code in ("call_shape", "arguments_not_string", "empty_tool_calls"):
            if not plan.edit(index).normalize_calls:
                plan.edit(index).normalize_calls = True
                state.change(
                    "normalized_tool_call", index, f"tool_calls put in canonical shape ({code})"
                )
        elif code in ("function_call_null", "unsupported_property"):
            plan.edit(index).drop_fields.add(defect.detail)
            state.change("removed_field", index, f"removed {defect.detail!r}")
        elif code in ("null_content", "empty_assistant"):
            if drop_empty:
                if Keep(index) in plan.items:
                    plan.items.remove(Keep(index))
                    state.change(
                        "dropped_empty_message", index, "assistant message with no content"
                    )
            elif "content" not in plan.edit(index).set_fields:
                plan.edit(index).set_fields["content"] = ""
                state.change("filled_content", index, "null content set to an empty string")
        elif code in ("content_null", "content_empty"):
            _fill_content(state, index, code)
        elif code == "tool_content_not_string":
            plan.edit(index).stringify_content = True
            state.change("stringified_content", index, "content parts joined into one string")
    if "unsupported_property" in problem_codes:
        for index in skeleton.marked("reasoning_field") & kept:
            plan.edit(index).drop_fields.add("reasoning_content")
            state.change("removed_field", index, "removed 'reasoning_content'")
    if {"function_name_format", "call_name_empty"} & problem_codes:
        _rename_functions(state)
    if "invalid_role" in problem_codes or (
        "role_order" in problem_codes and OTHER in skeleton.kinds
    ):
        _rename_roles(state, kept)


def _fill_content(state: _State, index: int, code: str) -> None:
    """Text where the profile needs it: an empty text beside calls goes (null is no text
    part), a user message without text gets the fixed user bridge text, anything else that
    must be a string gets ``""``."""
    kind = state.skeleton.kinds[index]
    if state.profile.alternation == "strict" and index in state.skeleton.calls:
        return  # written out as text with its calls (restore_alternation)
    edit = state.plan.edit(index)
    if "content" in edit.set_fields:
        return
    if kind in state.profile.content_text_kinds:
        if kind == ASSISTANT:
            edit.set_fields["content"] = None
            state.change("filled_content", index, "empty text beside the calls set to null")
            return
        edit.set_fields["content"] = USER_BRIDGE_TEXT
        state.change("filled_content", index, f"{kind} message without text given the bridge text")
        return
    edit.set_fields["content"] = ""
    state.change("filled_content", index, "null content set to an empty string")


_ROLE_ALIASES = {
    "human": USER,
    "ai": ASSISTANT,
    "bot": ASSISTANT,
    "model": ASSISTANT,
    "chatbot": ASSISTANT,
}
"""Roles other libraries write, and the role they mean. Anything else becomes a user message:
its content is kept, and the user role is the one every provider accepts anywhere."""


def _rename_roles(state: _State, kept: set[int]) -> None:
    """Send unknown roles as a role the provider knows: those outside ``known_roles``, or, for a
    profile that only rules on role order (Mistral), the roles of no known kind."""
    known = state.profile.known_roles
    kinds = state.skeleton.kinds
    for index, role in enumerate(state.skeleton.roles):
        if index in kept and (role not in known if known is not None else kinds[index] == OTHER):
            new_role = _ROLE_ALIASES.get(role.lower(), USER)
            state.plan.edit(index).set_fields["role"] = new_role
            state.change(
                "renamed_role", index, f"unknown role {shown_name(role)} sent as {new_role!r}"
            )


def _rename_functions(state: _State) -> None:
    pattern = compiled(state.profile.function_name_pattern)
    for index, found in state.skeleton.calls.items():
        for call in found:
            name = call.name or ""
            if name and (pattern is None or pattern.fullmatch(name)):
                continue
            new_name = re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:64] or "unknown_function"
            state.plan.edit(index).call_names[call.slot] = new_name
            state.change(
                "renamed_function", index, "function name the provider would refuse", call.id
            )


# --- 5. profile steps -------------------------------------------------------------------------


def _kind(state: _State, item: Item) -> str:
    if isinstance(item, Keep):
        return state.skeleton.kinds[item.index]
    if isinstance(item, Placeholder):
        return TOOL
    return item.role


def _is_caller(state: _State, item: Item) -> bool:
    if not isinstance(item, Keep):
        return False
    found = state.skeleton.calls.get(item.index)
    if not found or state.skeleton.kinds[item.index] != ASSISTANT:
        return False
    edit = state.plan.edits.get(item.index)
    return edit is None or len(edit.drop_calls) < len(found)


def add_reasoning(state: _State) -> None:
    """DeepSeek thinking mode: ``reasoning_content`` on every assistant of a tool-using turn."""
    reasoning = state.skeleton.marked("reasoning")
    turn: list[Item] = []
    for item in [*state.plan.items, None]:
        if item is not None and _kind(state, item) != USER:
            turn.append(item)
            continue
        if any(_is_caller(state, member) for member in turn):
            for member in turn:
                if (
                    isinstance(member, Keep)
                    and state.skeleton.kinds[member.index] == ASSISTANT
                    and member.index not in reasoning
                ):
                    state.plan.edit(member.index).set_fields["reasoning_content"] = ""
                    state.change(
                        "added_reasoning_content",
                        member.index,
                        "empty reasoning_content added (thinking mode)",
                    )
        turn = []


def bridge_role_order(state: _State) -> None:
    """Insert the fixed assistant bridge wherever the profile forbids what follows a result."""
    successors = state.profile.role_successors
    assert successors is not None
    allowed_after_tool = successors.get(TOOL, frozenset())
    items: list[Item] = []
    previous = ""
    for item in state.plan.items:
        kind = _kind(state, item)
        if previous == TOOL and kind not in allowed_after_tool:
            items.append(Bridge(ASSISTANT, ASSISTANT_BRIDGE_TEXT))
            state.change(
                "inserted_message",
                _source_index(item),
                "assistant message inserted after tool results",
            )
        items.append(item)
        previous = kind
    state.plan.items = items


def demote_system(state: _State) -> None:
    """A system message where the profile forbids one (Mistral: after an assistant message or
    a result) is sent as a user message: the instructions stay, in the role every turn
    accepts."""
    successors = state.profile.role_successors
    assert successors is not None
    items = state.plan.items
    previous = ""
    for position, item in enumerate(items):
        kind = _kind(state, item)
        if kind == SYSTEM and previous and SYSTEM not in successors.get(previous, {SYSTEM}):
            assert isinstance(item, Keep)
            items[position] = _as_user(state, item)
            kind = USER
        previous = kind


def open_with_user(state: _State) -> None:
    """An OpenAI-shaped conversation may not open with an assistant call (Gemini, Mistral):
    the fixed user bridge goes before it, as for Bedrock's first-user rule."""
    items = state.plan.items
    for position, item in enumerate(items):
        kind = _kind(state, item)
        if kind == SYSTEM:
            continue
        if kind == ASSISTANT and _is_caller(state, item):
            items.insert(position, Bridge(USER, USER_BRIDGE_TEXT))
            state.change("inserted_message", _source_index(item), "user message before the call")
        return


def _source_index(item: Item) -> int:
    if isinstance(item, Keep):
        return item.index
    if isinstance(item, Placeholder):
        return item.call_index
    if isinstance(item, AsText):
        return _source_index(item.item)
    if isinstance(item, Merge):
        return _source_index(item.parts[0]) if item.parts else -1
    return -1


def mark_prefix(state: _State) -> None:
    """A request must end on a role the provider serves: a final assistant message becomes a
    prefix; a request left ending on anything else (a system message, once an empty assistant
    message is gone) gets the fixed user bridge, the least that can be invented."""
    last_kinds = state.profile.last_kinds
    assert last_kinds is not None
    items = state.plan.items
    if not items or not state.skeleton.whole:
        return
    last = items[-1]
    kind = _kind(state, last)
    if kind in last_kinds:
        return
    if kind == ASSISTANT and isinstance(last, Keep):
        if last.index not in state.skeleton.marked("prefix"):
            state.plan.edit(last.index).set_fields["prefix"] = True
            state.change("marked_prefix", last.index, "final assistant message sent as a prefix")
    elif kind != ASSISTANT:
        items.append(Bridge(USER, USER_BRIDGE_TEXT))
        state.change("inserted_message", _source_index(last), "user message inserted at the end")


def restore_alternation(state: _State) -> None:
    """Chat templates: flatten tool traffic (strict), merge same-role runs, bridge the gaps."""
    strict = state.profile.alternation == "strict"
    fold_system = "system_unsupported" in state.profile.checks
    flowing: list[Item] = []
    for position, item in enumerate(state.plan.items):
        kind = _kind(state, item)
        if strict and (kind == TOOL or _is_caller(state, item)):
            assert isinstance(item, (Keep, Placeholder))
            role = ASSISTANT if kind == ASSISTANT else USER
            flowing.append(AsText(item, role))
            state.change(
                "flattened_tool_traffic", _source_index(item), "tool traffic written as text"
            )
        elif (kind == SYSTEM and (position > 0 or fold_system)) or kind not in (
            USER,
            ASSISTANT,
            SYSTEM,
            TOOL,
        ):
            assert isinstance(item, (Keep, Placeholder))
            flowing.append(
                AsText(item, USER) if not isinstance(item, Keep) else _as_user(state, item)
            )
        else:
            flowing.append(item)
    state.plan.items = _alternate(state, flowing, strict)


def _as_user(state: _State, item: Keep) -> Item:
    state.change("system_to_user", item.index, "mid-conversation instructions sent as user text")
    return Merge(USER, (item,))


def _alternate(state: _State, items: list[Item], strict: bool) -> list[Item]:
    def counts(item: Item) -> bool:
        return strict or not (_kind(state, item) == TOOL or _is_caller(state, item))

    out: list[Item] = []
    expected = USER
    for position, item in enumerate(items):
        kind = _kind(state, item)
        if position == 0 and kind == SYSTEM:
            out.append(item)
            continue
        if not counts(item):
            out.append(item)
            continue
        if kind != expected:
            previous = out[-1] if out else None
            if previous is not None and counts(previous) and _kind(state, previous) == kind:
                out[-1] = _join(state, previous, item, kind)
                continue
            bridge = Bridge(
                expected, USER_BRIDGE_TEXT if expected == USER else ASSISTANT_BRIDGE_TEXT
            )
            out.append(bridge)
            state.change("inserted_message", _source_index(item), f"{expected} message inserted")
        out.append(item)
        expected = USER if kind == ASSISTANT else ASSISTANT
    return out


def _join(state: _State, first: Item, second: Item, role: str) -> Merge:
    parts: list[Keep | AsText | Bridge] = []
    for item in (first, second):
        if isinstance(item, Merge):
            parts.extend(item.parts)
        elif isinstance(item, Placeholder):
            parts.append(AsText(item, role))
        else:
            assert not isinstance(item, Blocks), "Blocks items are planned for block layouts only"
            parts.append(item)
    state.change(
        "merged_messages", _source_index(second), f"joined with the {role} message before it"
    )
    return Merge(role, tuple(parts))
