"""The planner of the messages layout (OpenAI chat; Responses items through
:mod:`toolmend._repair_items`): every result a message of its own.

:func:`plan_messages` runs after :func:`toolmend._pairing.match` has paired every result with
its call, in steps, each a small function over the shared :class:`~toolmend._planstate.PlanState`:

1. :func:`order_messages` lays the messages out again: each calling message, then its results
   (moved next to it from wherever they were), then placeholders for calls with no result;
   every other message keeps its order, so a message that had landed between a call and its
   results ends up after them. Orphans and duplicates are dropped or turned into text, per
   policy.
2. :func:`toolmend._plan_ids.rewrite_ids` gives calls the provider would refuse (missing,
   duplicated, too long, outside the pattern) the id their result carried or a deterministic
   new one, on the call and its results alike.
3. :func:`fix_shapes` mends what the reader saw malformed, where the profile rejects it.
4. Profile steps: :func:`add_reasoning`, :func:`demote_system` and :func:`bridge_role_order`,
   :func:`open_with_user`, :func:`restore_alternation` (after the user message
   :func:`~toolmend._block_repair.lead_with_user` adds, where a profile wants both),
   :func:`mark_prefix` (after the merges), the cross-target steps of
   :mod:`toolmend._block_repair` (names, a user first, a user last), and last
   :func:`split_calls`.

Change codes (``Change.code``): ``moved_result``, ``moved_message``, ``dropped_orphan_result``,
``orphan_result_to_text``, ``dropped_duplicate_result``, ``answered_missing_call``,
``removed_call``, ``dropped_empty_message``, ``filled_result_id``, ``rewrote_call_id``,
``restored_call_id``, ``renamed_function``, ``normalized_tool_call``, ``removed_field``,
``filled_content``, ``stringified_content``, ``added_reasoning_content``,
``inserted_message``, ``marked_prefix``, ``flattened_tool_traffic``, ``merged_messages``,
``system_to_user``, ``renamed_role``, ``split_calls``.
"""

from __future__ import annotations

from collections.abc import Callable, Set
from dataclasses import replace

from ._block_repair import end_with_user, lead_with_user, name_results
from ._edits import (
    AsText,
    Blocks,
    Bridge,
    CallPart,
    Item,
    Keep,
    Merge,
    Placeholder,
    Plan,
    remove_last,
    source_index,
)
from ._pairing import NEAREST, match
from ._plan_ids import acceptable_id, rename_functions, rewrite_ids
from ._planstate import (
    ASSISTANT_BRIDGE_TEXT,
    EMPTY_RESULT_TEXT,
    USER_BRIDGE_TEXT,
    CallRef,
    PlanState,
    ResultRef,
    call_at,
    newest_results,
    result_at,
)
from ._policy import Policy
from ._repair_items import mend_items, order_items
from ._report import Change, shown_name
from ._skeleton import ASSISTANT, MESSAGES, OTHER, SYSTEM, TOOL, USER, Call, Skeleton
from .profiles import Profile

__all__ = [
    "add_reasoning",
    "bridge_role_order",
    "calls_alone",
    "fill_blank_text",
    "fix_shapes",
    "mark_prefix",
    "order_messages",
    "plan_messages",
    "quick_plan",
    "restore_alternation",
    "split_calls",
]


def plan_messages(state: PlanState, problem_codes: set[str]) -> None:
    """Plan the repair of a messages-layout history (see the module docstring)."""
    skeleton, profile = state.skeleton, state.profile
    if profile.pairing == "ordered":
        order_items(state, problem_codes)
    else:
        match(state, NEAREST)
        order_messages(state)
    if _orphans_alone(state):
        keep_orphans_as_text(state)
    rewrite_ids(state)
    fix_shapes(state, problem_codes)
    if _orphans_alone(state):
        # (the messages the orphans were dropped beside were dropped as empty too: Mistral
        # and Bedrock drop an empty assistant message) the same rescue, after the shapes
        keep_orphans_as_text(state)
    if {"text_empty", "text_whitespace"} & problem_codes:
        fill_blank_text(state)
    if profile.pairing == "ordered":
        mend_items(state, problem_codes)
    if profile.reasoning_in_tool_turns:
        add_reasoning(state)
    if profile.role_successors is not None:
        demote_system(state)
        bridge_role_order(state)
    if profile.call_after_user and skeleton.whole:
        open_with_user(state)
    if profile.alternation is not None:
        if profile.first_user:  # the user message it adds takes part in the alternation
            lead_with_user(state)
        restore_alternation(state)
    if profile.last_kinds is not None:
        # after the merges: a final assistant message merged with the one before it is no
        # longer the message a prefix mark could go on
        mark_prefix(state)
    if profile.results_need_name:
        name_results(state)
    if "call_with_text" in profile.checks:
        calls_alone(state)
    if profile.first_user and profile.alternation is None and skeleton.starts:
        lead_with_user(state)  # (the opening: not in a range after the history's start)
    if "prefill_unsupported" in profile.checks:
        end_with_user(state)
    if profile.single_call and "parallel_calls" in problem_codes:
        split_calls(state)


_QUICK_CODES = frozenset(
    {"duplicate_result", "missing_result", "orphan_result", "duplicate_call_id"}
)
"""The problems :func:`quick_plan` plans for."""
_NAMED_CODES = _QUICK_CODES | {"result_name_mismatch"}
"""And under a profile whose results name their call's function (Gemini)."""


def quick_plan(
    skeleton: Skeleton,
    profile: Profile,
    policy: Policy,
    result_text: Callable[[int, int], str | None],
    problem_codes: set[str],
) -> tuple[Plan, list[Change]] | None:
    """The plan and changes of ``plan_repair`` for a damaged range of chat messages whose only
    faults are the common ones (a result repeated, a call left without its result, a result
    whose call is not in the range), found without the pairing engine and the planner's
    steps; None for anything else (the full planner decides). Asked only of a format whose
    ``Format.quick_plans`` says its ranges are applied as the planner's items (OpenAI chat).

    A damaged range is a few messages, yet the full planner's steps cost more than reading and
    judging them: most of a damaged history's repair (issue 32). What it plans here is what
    those steps plan for such a range, step for step: every call has an id the profile takes,
    unique in the range, so each result goes to the earlier call with its id (a later one for
    an answered call is a duplicate when it says as much as the first, an orphan when it is
    another real result; one that says more, or comes before its call, goes to the planner);
    every result already follows its call, so nothing moves; a call without a result gets the
    placeholder after its results; no profile step applies (none of their rules, or only ones
    that hold of the range already). Property tests hold it to the planner
    (``tests/test_damaged_speed.py``)."""
    # a range of a history whose refused ids are rewritten request-wide (Mistral): its ids too
    request = skeleton.ids
    wanted = _NAMED_CODES if profile.results_need_name else _QUICK_CODES
    if (
        skeleton.whole
        or not problem_codes <= (wanted | _ID_CODES if request is not None else wanted)
        or skeleton.layout != MESSAGES
        or profile.pairing == "ordered"
        or profile.reasoning_in_tool_turns
        or profile.alternation is not None
        or (profile.last_kinds is not None and skeleton.ends)  # (else mark_prefix passes it by)
        or "call_with_text" in profile.checks
        or policy.missing_result != "placeholder"
        or policy.orphan_result == "text"
    ):
        return None
    kinds, calls, results = skeleton.kinds, skeleton.calls, skeleton.results
    if any(defect.code in problem_codes for defect in skeleton.defects):
        return None
    rewrite = False  # an id shared by two calls, or refused: the planner's id step decides
    seen: set[str] = set()
    for index, found in calls.items():
        if kinds[index] != ASSISTANT:
            return None
        own: set[str] = set()
        for call in found:
            call_id = call.id
            if call_id is None or call_id in own:
                return None
            own.add(call_id)
            if call_id in seen or not acceptable_id(call_id, profile):
                rewrite = True
            seen.add(call_id)
    state = PlanState(skeleton, profile, policy, result_text)
    # the pairing's first step (:meth:`toolmend._pairing._Engine.by_id`): a result answers the
    # latest earlier call with its id still waiting; a result for an answered call is weighed
    # against the first (``second_result``); one whose call comes later is the planner's
    waiting: dict[str, list[int]] = {}  # call id -> calling messages with it open, in order
    open_slot: dict[tuple[int, str], int] = {}  # (calling message, id) -> the open call's slot
    answer: dict[CallRef, int] = {}  # call -> the message answering it
    latest: dict[str, CallRef] = {}  # call id -> the call last answered under it
    fate: dict[int, str] = {}  # result message -> "answer", "duplicate" or "orphan"
    size = len(kinds)
    for index in range(size):
        calling = calls.get(index)
        if calling:
            for call in calling:
                waiting.setdefault(call.id, []).append(index)  # type: ignore[arg-type]
                open_slot[(index, call.id)] = call.slot  # type: ignore[index]
        found_results = results.get(index)
        if not found_results:
            continue
        if kinds[index] != TOOL or len(found_results) != 1:
            return None
        result = found_results[0]
        result_id = result.id
        if result_id is None or result.slot != 0:
            return None
        stack = waiting.get(result_id)
        while stack and (stack[-1], result_id) not in open_slot:
            stack.pop()
        if stack:
            call_ref = (stack[-1], open_slot.pop((stack[-1], result_id)))
            answer[call_ref] = index
            latest[result_id] = call_ref
            fate[index] = "answer"
            continue
        held_ref = latest.get(result_id)
        if held_ref is None:
            if result_id in seen:
                return None  # before its call: the planner's early pairing
            fate[index] = "orphan"
            continue
        held = answer[held_ref]
        if result_text(index, 0) == result_text(held, 0):
            fate[index] = "duplicate"  # (a copy: as strong as the first, so no stronger)
            continue
        strength, held_strength = state.strength((index, 0)), state.strength((held, 0))
        if strength > held_strength:
            return None  # it replaces the first: the planner's
        fate[index] = "duplicate" if strength < held_strength else "orphan"
    if "orphan" in fate.values() and newest_results(skeleton) <= max(
        index for index, kind in fate.items() if kind == "orphan"
    ):
        return None  # the newest input, kept as text: the planner's
    # the layout (:func:`order_messages`): each calling message, its results (already right
    # after it: nothing moves), placeholders for its calls left without one
    items: list[Item] = []
    for index in range(size):
        kind = fate.get(index)
        if kind is not None:
            result_id = results[index][0].id
            if kind == "duplicate":
                state.change(
                    "dropped_duplicate_result", index, "second result for one call", result_id
                )
            elif kind == "orphan":
                state.change(
                    "dropped_orphan_result", index, "result of a call not in the history", result_id
                )
            continue
        items.append(_keep(index))
        calling = calls.get(index)
        if not calling:
            continue
        block_end = index + 1
        while block_end < size and kinds[block_end] == TOOL:
            block_end += 1
        answers = [answer.get((index, call.slot)) for call in calling]
        for at in answers:
            if at is not None and not index < at < block_end:
                return None  # moved next to its call: the planner's
        items.extend(_keep(at) for at in sorted(at for at in answers if at is not None))
        for call, at in zip(calling, answers, strict=True):
            if at is None:
                items.append(
                    Placeholder(
                        index, call.id or "", call.name, policy.placeholder, call_slot=call.slot
                    )
                )
                state.change(
                    "answered_missing_call", index, "call answered with the placeholder", call.id
                )
    successors = profile.role_successors
    if successors is not None:  # (Bedrock) the order kept: no system message or bridge to move
        after_tool = successors.get(TOOL, frozenset())
        previous = ""
        for item in items:
            kind = kinds[item.index] if isinstance(item, Keep) else TOOL
            if (
                kind == SYSTEM and previous and SYSTEM not in successors.get(previous, {SYSTEM})
            ) or (previous == TOOL and kind not in after_tool):
                return None
            previous = kind
    if profile.results_need_name:  # (Gemini) each result names its call's function
        for call_ref, at in sorted(answer.items()):  # in call order, as ``name_results`` does
            call = call_at(skeleton, call_ref)
            if call.name and results[at][0].name != call.name:
                state.plan.edit(at).result_names[0] = call.name
                state.change(
                    "filled_result_name",
                    at,
                    f"function name {call.name!r} taken from the call",
                    call.id,
                )
        items = [
            replace(item, named=True) if isinstance(item, Placeholder) else item for item in items
        ]
    if profile.first_user and skeleton.starts:  # the user bridge at the opening (Bedrock)
        for item in items:
            if isinstance(item, Keep) and kinds[item.index] == SYSTEM:
                continue
            if isinstance(item, Keep) and kinds[item.index] == ASSISTANT:
                return None
            break
    state.plan.items = items
    if rewrite:  # the planner's own id step, on the pairing found here (last: the ids of a
        # range of a history whose ids are rewritten request-wide are the request's, taken
        # for good, so nothing may give the range to the planner after it)
        state.answer = {call_ref: (at, 0) for call_ref, at in answer.items()}
        state.answered_by = {(at, 0): call_ref for call_ref, at in answer.items()}
        rewrite_ids(state)
        items = state.plan.items
    state.changes.sort(key=_change_index)
    state.plan.items = items
    return state.plan, state.changes


def _change_index(change: Change) -> int:
    return change.index


_ID_CODES = frozenset({"call_id_format"})
"""The problem :func:`quick_plan` also plans for in a range whose ids are rewritten
request-wide (``Skeleton.ids``, Mistral): ids outside the provider's form, rewritten by the
planner's own id step with the request's ids."""

_KEEPS = [Keep(index) for index in range(256)]
"""``Keep(index)`` for the first indexes (a plan item is immutable: one serves every plan)."""


def _keep(index: int) -> Keep:
    return _KEEPS[index] if index < 256 else Keep(index)


# --- 2. layout --------------------------------------------------------------------------------


def order_messages(state: PlanState) -> None:
    """Lay the history out again with every call's results right after it (step 2)."""
    skeleton, policy, plan = state.skeleton, state.policy, state.plan
    items = plan.items
    kinds, calls, results = skeleton.kinds, skeleton.calls, skeleton.results
    orphans = set(state.orphans)
    results_of: dict[int, list[ResultRef]] = {}
    for call_ref, ref in state.answer.items():
        results_of.setdefault(call_ref[0], []).append(ref)
    frontier = _frontier(skeleton) if policy.frontier == "keep" and skeleton.whole else -1
    newest = newest_results(skeleton)
    moved_aside: set[int] = set()
    looked_at = 0  # the messages before it were already looked at for moved_aside
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
                state.orphan_message(index, carried[0].id, newest=index >= newest)
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
                    call_at(skeleton, state.answered_by[ref]).id,
                )
        if refs:
            # each message once over the whole history: the spans of many calls whose
            # results all come at the end overlap
            for between in range(max(index + 1, looked_at), refs[-1][0]):
                if (between, 0) not in state.answered_by:
                    moved_aside.add(between)
            looked_at = max(looked_at, refs[-1][0])
        _answer_missing(state, index, found, frontier)
    if moved_aside:
        kept = {item.index for item in items if isinstance(item, Keep)}
        for between in sorted(moved_aside & kept):
            state.change("moved_message", between, "moved after the tool results it interrupted")


def _orphans_alone(state: PlanState) -> bool:
    """Whether the plan keeps nothing of a whole history but its dropped orphans, and an
    empty request is a problem of the profile: no message left, or (a profile that sends the
    system prompt apart) only system messages and assistant messages without text or calls,
    which the judge counts as nothing to send."""
    if not state.orphans or not state.skeleton.whole or "empty_history" not in state.profile.checks:
        return False
    items = state.plan.items
    if not items:
        return True
    if not state.profile.system_apart:
        return False
    kinds = state.skeleton.kinds
    empty = {defect.at for defect in state.skeleton.defects if defect.code == "empty_assistant"}
    return all(
        type(item) is Keep
        and (
            kinds[item.index] == SYSTEM or (kinds[item.index] == ASSISTANT and item.index in empty)
        )
        for item in items
    )


def keep_orphans_as_text(state: PlanState) -> None:
    """A history of nothing but orphans (beside a system prompt sent apart) would come out
    empty, which no request may be: keep the orphans as user text, in their places, instead
    of dropping them."""
    state.changes = [c for c in state.changes if c.code != "dropped_orphan_result"]
    texts: list[Item] = [AsText(Keep(index), USER) for index, _ in state.orphans]
    state.plan.items = sorted([*state.plan.items, *texts], key=source_index)
    for index, slot in state.orphans:
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


def _answer_missing(state: PlanState, index: int, found: tuple[Call, ...], frontier: int) -> None:
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
            remove_last(plan.items, Keep(index))
            state.change("dropped_empty_message", index, "nothing left after removing its calls")
        return
    for call in missing:
        plan.items.append(
            Placeholder(
                index, call.id or "", call.name, state.policy.placeholder, call_slot=call.slot
            )
        )
        state.change("answered_missing_call", index, "call answered with the placeholder", call.id)


# --- 4. shapes --------------------------------------------------------------------------------


def fix_shapes(state: PlanState, problem_codes: set[str]) -> None:
    """Mend the malformed shapes the reader saw, where the profile rejects them (step 4)."""
    skeleton, plan, profile = state.skeleton, state.plan, state.profile
    kept = {item.index for item in plan.items if isinstance(item, Keep)}
    drop_empty = "empty_assistant" in profile.checks
    dropped: set[int] = set()  # taken out of the plan in one pass at the end
    for defect in skeleton.defects:
        index, code = defect.at, defect.code
        if (
            code == "content_empty"
            and "result_text_blank" in problem_codes
            and skeleton.kinds[index] == TOOL
            and index in kept
        ):  # Bedrock through a gateway: the empty output is said in words
            plan.edit(index).set_fields["content"] = EMPTY_RESULT_TEXT
            state.change("filled_content", index, "empty tool result given a text")
            continue
        if code == "blank_text" and skeleton.kinds[index] == TOOL:
            if "result_text_blank" in problem_codes and index in kept:
                _fill_blank_result(state, index, defect.slot)
            continue
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
                if index not in dropped:
                    dropped.add(index)
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
    if dropped:
        plan.items = [
            item for item in plan.items if not (isinstance(item, Keep) and item.index in dropped)
        ]
    if "unsupported_property" in problem_codes:
        for index in skeleton.marked("reasoning_field") & kept:
            plan.edit(index).drop_fields.add("reasoning_content")
            state.change("removed_field", index, "removed 'reasoning_content'")
    if {"function_name_format", "call_name_empty"} & problem_codes:
        rename_functions(state)
    if "invalid_role" in problem_codes or (
        "role_order" in problem_codes and OTHER in skeleton.kinds
    ):
        _rename_roles(state, kept)


def _fill_blank_result(state: PlanState, index: int, slot: int) -> None:
    """A blank tool result text bound for Bedrock through a gateway, mended as the Converse
    path mends a blank text inside a ``toolResult``: a blank text part beside other parts goes
    (``dropped_empty_block``); a content that is nothing but blank text says in words that
    the output was empty (``filled_content``). Only whitespace is lost."""
    edit = state.plan.edit(index)
    if slot >= 0:
        edit.drop_blocks.add(slot)
        state.change("dropped_empty_block", index, "blank text part of a tool result removed")
    elif edit.set_fields.get("content") != EMPTY_RESULT_TEXT:
        edit.set_fields["content"] = EMPTY_RESULT_TEXT
        state.change("filled_content", index, "blank tool result given a text")


def fill_blank_text(state: PlanState) -> None:
    """Blank user text bound for Anthropic (issue 32, case 8): blank text parts beside other
    content are dropped (``dropped_empty_block``); a user message with nothing but blank text
    gets the fixed user bridge text (``filled_content``), as LiteLLM's sanitizer puts its own
    placeholder there. Nothing real is lost: only empty or whitespace text goes."""
    skeleton, plan = state.skeleton, state.plan
    kept = {item.index for item in plan.items if isinstance(item, Keep)}
    for defect in skeleton.defects:
        index = defect.at
        if index not in kept or skeleton.kinds[index] != USER:
            continue
        if defect.code not in ("blank_text", "content_empty"):
            continue
        edit = plan.edit(index)
        if defect.slot < 0 or defect.code == "content_empty":
            if edit.set_fields.get("content") != USER_BRIDGE_TEXT:
                edit.set_fields["content"] = USER_BRIDGE_TEXT
                state.change("filled_content", index, "blank user text given the bridge text")
        else:
            edit.drop_blocks.add(defect.slot)
            state.change("dropped_empty_block", index, "blank text part removed")


def _fill_content(state: PlanState, index: int, code: str) -> None:
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


def _rename_roles(state: PlanState, kept: set[int]) -> None:
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


# --- 5. profile steps -------------------------------------------------------------------------


def _kind(state: PlanState, item: Item) -> str:
    if isinstance(item, Keep):
        return state.skeleton.kinds[item.index]
    if isinstance(item, Placeholder):
        return TOOL
    return item.role


def _is_caller(state: PlanState, item: Item) -> bool:
    if not isinstance(item, Keep):
        return False
    found = state.skeleton.calls.get(item.index)
    if not found or state.skeleton.kinds[item.index] != ASSISTANT:
        return False
    edit = state.plan.edits.get(item.index)
    return edit is None or len(edit.drop_calls) < len(found)


def add_reasoning(state: PlanState) -> None:
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


def bridge_role_order(state: PlanState) -> None:
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
                source_index(item),
                "assistant message inserted after tool results",
            )
        items.append(item)
        previous = kind
    state.plan.items = items


def demote_system(state: PlanState) -> None:
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


def open_with_user(state: PlanState) -> None:
    """An OpenAI-shaped conversation may not open with an assistant call (Gemini, Mistral):
    the fixed user bridge goes before it, as for Bedrock's first-user rule."""
    items = state.plan.items
    for position, item in enumerate(items):
        kind = _kind(state, item)
        if kind == SYSTEM:
            continue
        if kind == ASSISTANT and _is_caller(state, item):
            items.insert(position, Bridge(USER, USER_BRIDGE_TEXT))
            state.change("inserted_message", source_index(item), "user message before the call")
        return


def mark_prefix(state: PlanState) -> None:
    """A request must end on a role the provider serves: a final assistant message becomes a
    prefix; a request left ending on anything else (a system message, once an empty assistant
    message is gone) gets the fixed user bridge, the least that can be invented."""
    last_kinds = state.profile.last_kinds
    assert last_kinds is not None
    items = state.plan.items
    # a range of a damaged history is planned as the whole history plans it: only the range
    # that ends the history holds its last message (it starts with a user message, kept)
    if not items or not state.skeleton.ends:
        return
    last = items[-1]
    kind = _kind(state, last)
    if kind in last_kinds:
        return
    if kind == ASSISTANT and isinstance(last, Keep):
        if last.index not in state.skeleton.marked("prefix"):
            state.plan.edit(last.index).set_fields["prefix"] = True
            state.change("marked_prefix", last.index, "final assistant message sent as a prefix")
    elif kind != ASSISTANT or isinstance(last, Merge):  # a merge has no field to mark
        items.append(Bridge(USER, USER_BRIDGE_TEXT))
        state.change("inserted_message", source_index(last), "user message inserted at the end")


def restore_alternation(state: PlanState) -> None:
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
                "flattened_tool_traffic", source_index(item), "tool traffic written as text"
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


def _as_user(state: PlanState, item: Keep) -> Item:
    state.change("system_to_user", item.index, "mid-conversation instructions sent as user text")
    return Merge(USER, (item,))


def _alternate(state: PlanState, items: list[Item], strict: bool) -> list[Item]:
    def counts(item: Item) -> bool:
        return strict or not (_kind(state, item) == TOOL or _is_caller(state, item))

    successors = state.profile.role_successors
    # Mistral's validator takes no user message right after tool results: a user bridge goes
    # before the tool traffic instead, right after the assistant text it follows
    user_before_traffic = successors is not None and USER not in successors.get(TOOL, {USER})
    out: list[Item] = []
    expected = USER
    after_counted = 0  # where the items after the last one that counts begin
    for position, item in enumerate(items):
        kind = _kind(state, item)
        if position == 0 and kind == SYSTEM:
            out.append(item)
            after_counted = len(out)
            continue
        if not counts(item):
            out.append(item)
            continue
        if kind != expected:
            previous = out[-1] if out else None
            if previous is not None and counts(previous) and _kind(state, previous) == kind:
                out[-1] = _join(state, previous, item, kind)
                after_counted = len(out)
                continue
            bridge = Bridge(
                expected, USER_BRIDGE_TEXT if expected == USER else ASSISTANT_BRIDGE_TEXT
            )
            if expected == USER and user_before_traffic and after_counted < len(out):
                out.insert(after_counted, bridge)
            else:
                out.append(bridge)
            state.change("inserted_message", source_index(item), f"{expected} message inserted")
        out.append(item)
        after_counted = len(out)
        expected = USER if kind == ASSISTANT else ASSISTANT
    return out


def _join(state: PlanState, first: Item, second: Item, role: str) -> Merge:
    parts: list[Keep | AsText | Bridge] = []
    for item in (first, second):
        if isinstance(item, Merge):
            parts.extend(item.parts)
        elif isinstance(item, Placeholder):
            parts.append(AsText(item, role))
        else:
            assert not isinstance(item, Blocks), "Blocks items are planned for block layouts only"
            assert not isinstance(item, CallPart), "calls are split after every merge"
            parts.append(item)
    state.change(
        "merged_messages", source_index(second), f"joined with the {role} message before it"
    )
    return Merge(role, tuple(parts))


def split_calls(state: PlanState) -> None:
    """A model that takes one call per message (Llama 3.x): each message with several calls
    left becomes consecutive single-call messages, each followed by its result, in call order.
    The message keeps its text, its other fields and its first call; nothing is dropped.

    Runs last: the other steps see the message whole (a caller, then its results).
    """
    skeleton, plan = state.skeleton, state.plan
    items = plan.items
    out: list[Item] = []
    position = 0
    while position < len(items):
        item = items[position]
        position += 1
        found = skeleton.calls.get(item.index) if isinstance(item, Keep) else None
        if not isinstance(item, Keep) or not found or skeleton.kinds[item.index] != ASSISTANT:
            out.append(item)
            continue
        edit = plan.edits.get(item.index)
        slots = [call.slot for call in found if edit is None or call.slot not in edit.drop_calls]
        if len(slots) < 2:
            out.append(item)
            continue
        # the results right after it: kept result messages and placeholders, by call slot
        by_slot: dict[int, list[Item]] = {}
        rest: list[Item] = []
        while position < len(items) and _kind(state, items[position]) == TOOL:
            result = items[position]
            slot = _answered_slot(state, item.index, result)
            (by_slot.setdefault(slot, []) if slot is not None else rest).append(result)
            position += 1
        plan.edit(item.index).drop_calls.update(slots[1:])
        for number, slot in enumerate(slots):
            out.append(item if number == 0 else CallPart(item.index, slot))
            out.extend(by_slot.pop(slot, ()))
        for results in by_slot.values():
            out.extend(results)
        out.extend(rest)
        state.change(
            "split_calls",
            item.index,
            f"{len(slots)} calls sent as {len(slots)} messages, each with its result",
        )
    plan.items = out


def calls_alone(state: PlanState) -> None:
    """Bedrock's Llama and Mistral models, an OpenAI-shaped history (``call_with_text``;
    LiteLLM makes one Converse turn of consecutive assistant messages): no text in a turn with
    calls. As :func:`toolmend._block_repair.calls_apart` does with Converse blocks, a calling
    message with text keeps its text and its other fields, and its calls move into an
    assistant message of their own right after it (``moved_message``), behind the fixed user
    bridge ("Continue.") that parts the two turns; an assistant text message right before a
    calling message gets the same bridge after it (``inserted_message``). Nothing is dropped,
    the text is kept as it was written, and the calls stay right before their results."""
    skeleton, plan = state.skeleton, state.plan
    bare = skeleton.marked("no_text") | skeleton.marked("blank_text")
    out: list[Item] = []
    for item in plan.items:
        if not _is_caller(state, item):
            out.append(item)
            continue
        assert isinstance(item, Keep)
        index = item.index
        if _text_before(state, out, bare):
            out.append(Bridge(USER, USER_BRIDGE_TEXT))
            state.change("inserted_message", index, "user message between text and calls")
        out.append(item)
        if index in bare:
            continue
        edit = plan.edit(index)
        slots = [call.slot for call in skeleton.calls[index] if call.slot not in edit.drop_calls]
        edit.drop_calls.update(slots)
        out.append(Bridge(USER, USER_BRIDGE_TEXT))
        out.append(CallPart(index, slots[0], more=tuple(slots[1:])))
        state.change(
            "moved_message", index, "tool calls moved into an assistant message of their own"
        )
        state.change("inserted_message", index, "user message between the text and the calls")
    plan.items = out


def _text_before(state: PlanState, out: list[Item], bare: Set[int]) -> bool:
    """Whether the assistant items at the end of ``out`` (which LiteLLM would merge into the
    turn of a calling message after them) hold text: one that is not blank, or invented."""
    for item in reversed(out):
        if _kind(state, item) != ASSISTANT or isinstance(item, CallPart) or _is_caller(state, item):
            return False
        if not (isinstance(item, Keep) and item.index in bare):
            return True
    return False


def _answered_slot(state: PlanState, index: int, item: Item) -> int | None:
    """The call slot of message ``index`` that result item ``item`` answers, if it is one."""
    if isinstance(item, Placeholder):
        return item.call_slot if item.call_index == index and item.call_slot >= 0 else None
    if isinstance(item, Keep):
        call = state.answered_by.get((item.index, 0))
        if call is not None and call[0] == index:
            return call[1]
    return None
