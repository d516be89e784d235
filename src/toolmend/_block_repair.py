"""Plan a repair for a block-layout history (Anthropic, Gemini, Bedrock), and the cross-target
steps for an OpenAI-shaped history bound for those providers.

:func:`toolmend._repair.plan_repair` hands a block-layout skeleton to :func:`plan_blocks`, which
runs these steps, each a small function over the shared planner state:

1. Pairing: :func:`toolmend._pairing.match` (ids first; in Gemini, where ids are optional,
   then names, opaque ids stored as the name, and positions).
2. :func:`order_blocks`: every call turn is followed by one user message holding its results,
   taken from wherever they were (a :class:`~toolmend._edits.Blocks` item), plus the placeholder
   for a call without one; results already in place stay where they are. A message emptied by
   moving its blocks out disappears (its blocks were moved, not lost); text that sat before
   the results ends up after them. Orphans and duplicates are dropped or kept as text, per
   policy. A trailing call turn with no result anywhere is answered with placeholders (issue
   32, case 7: Anthropic's ``tool_result``, Bedrock's ``toolResult`` with status error,
   Gemini's ``functionResponse`` named after its call), unless the policy keeps the live
   frontier waiting.
3. :func:`toolmend._plan_ids.rewrite_ids` where the provider constrains ids.
4. :func:`fix_blocks`: the shape defects the reader saw (empty text, empty messages, incomplete
   thinking blocks, non-object inputs, roles).
5. :func:`name_results`: a result names the function of its call (Gemini), and a call gets back
   the id its response kept.
6. Per provider: :func:`strip_function_ids`, :func:`place_call_turns`, :func:`sign_calls`
   (Gemini), :func:`alternate` (Bedrock), :func:`flatten_unthought` (Anthropic with thinking),
   :func:`drop_empty_final` and :func:`end_with_user` (the Claude models without prefill).

Change codes added here: ``reordered_blocks``, ``dropped_empty_block``,
``dropped_thinking_block``, ``trimmed_whitespace``, ``normalized_tool_result``,
``filled_result_name``, ``restored_call_id``, ``removed_function_ids``,
``added_thought_signature``, ``renamed_role``, ``system_to_user``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from ._edits import AsText, Blocks, Bridge, Item, Keep, Merge, Placeholder, Plan, source_index
from ._pairing import NEAREST, match
from ._plan_ids import rename_functions, rewrite_ids
from ._planstate import (
    ASSISTANT_BRIDGE_TEXT,
    USER_BRIDGE_TEXT,
    PlanState,
    ResultRef,
    call_at,
    newest_results,
    result_at,
)
from ._skeleton import ASSISTANT, MESSAGES, SYSTEM, TOOL, USER, Call, Skeleton
from .formats import get

__all__ = [
    "alternate",
    "calls_apart",
    "drop_empty_final",
    "end_with_user",
    "fix_blocks",
    "flatten_unthought",
    "lead_with_user",
    "name_results",
    "order_blocks",
    "place_call_turns",
    "plan_blocks",
    "sign_calls",
    "strip_function_ids",
]

_ID_CODES = frozenset(
    {"call_without_id", "call_id_format", "call_id_too_long", "duplicate_call_id"}
)
_ORDER_CODES = frozenset({"first_not_user", "roles_not_alternating"})
"""Bedrock's rules on the order of roles: without them (trim's pairing-only profile) the
repair mends the pairing alone and leaves the roles as they come, as the ranges it repairs do."""


def plan_blocks(state: PlanState, problem_codes: set[str]) -> None:
    """Plan the repair of a block-layout history (see the module docstring)."""
    profile = state.profile
    gemini = profile.block_pairing == "contents"
    match(state, NEAREST)
    _lay_out(state, problem_codes)
    if (
        not state.plan.items
        and state.orphans
        and state.skeleton.whole
        and "empty_history" in profile.checks
    ):
        # Dropping every orphan would leave no history at all: keep them as text instead.
        policy = state.policy
        state.policy = replace(policy, orphan_result="text")
        state.plan, state.changes, state.final_ids = Plan([]), [], {}
        _lay_out(state, problem_codes)
        state.policy = policy
    if profile.results_need_name:
        name_results(state, write_ids=gemini and not profile.reject_function_ids)
    if profile.reject_function_ids:
        strip_function_ids(state)
    if gemini:
        place_call_turns(state)
        if profile.thought_signatures:
            sign_calls(state)
    if profile.block_pairing == "converse" and "call_with_text" in profile.checks:
        calls_apart(state)
    if profile.block_pairing == "converse" and _ORDER_CODES & profile.checks.keys():
        alternate(state)
    if profile.thinking:
        if "prefill_unsupported" in profile.checks:
            # the empty final message goes first: what it leaves last is the final exchange
            drop_empty_final(state)
        flatten_unthought(state)
    if "thinking_final_assistant_disabled" in profile.checks and state.skeleton.whole:
        unthink_new_final(state)
    if "prefill_unsupported" in profile.checks:
        end_with_user(state)


def _lay_out(state: PlanState, problem_codes: set[str]) -> None:
    """Steps 2 to 4: results gathered after their calls, ids, shapes."""
    order_blocks(state)
    ids_matter = state.profile.block_pairing != "contents"
    if _ID_CODES & problem_codes or (ids_matter and _ID_CODES & state.profile.checks.keys()):
        rewrite_ids(state)
    fix_blocks(state, problem_codes)


# --- 2. layout --------------------------------------------------------------------------------


def _call_groups(skeleton: Skeleton, turns: bool, any_role: bool) -> list[list[int]]:
    """Calling messages grouped by the user message their results go to: Anthropic merges an
    unbroken run of calling assistant messages into one turn; elsewhere each stands alone."""
    kinds, extras = skeleton.kinds, skeleton.extras
    groups: list[list[int]] = []
    for index in sorted(skeleton.calls):
        if kinds[index] != ASSISTANT and not any_role:
            continue
        if (
            turns
            and groups
            and groups[-1][-1] == index - 1
            and kinds[index] == ASSISTANT
            and not extras.get(index)
        ):
            groups[-1].append(index)
        else:
            groups.append([index])
    return groups


def _total(skeleton: Skeleton, index: int) -> int:
    return (
        len(skeleton.calls.get(index, ()))
        + len(skeleton.results.get(index, ()))
        + len(skeleton.extras.get(index, ()))
    )


def order_blocks(state: PlanState) -> None:
    """Every call turn followed by the user message with its results (step 2)."""
    skeleton, policy, plan, profile = state.skeleton, state.policy, state.plan, state.profile
    kinds, calls = skeleton.kinds, skeleton.calls
    n = len(kinds)
    turns = profile.block_pairing == "turns"
    gemini = profile.block_pairing == "contents"
    # Bedrock: a toolUse in a user message moves into an assistant message of its own
    misplaced = gemini or (
        profile.block_pairing == "converse" and "misplaced_part" in profile.checks
    )
    texted = set(state.orphans) if policy.orphan_result == "text" else set()
    # the newest input is never dropped (issue 32, case 2), in every block layout
    newest = newest_results(skeleton)
    texted.update(ref for ref in state.orphans if ref[0] >= newest)
    dropped = state.duplicates | (set(state.orphans) - texted)
    for ref in sorted(dropped):
        plan.edit(ref[0]).drop_blocks.add(ref[1])
        result_id = result_at(skeleton, ref).id
        if ref in state.duplicates:
            state.change(
                "dropped_duplicate_result", ref[0], "second result for one call", result_id
            )
        else:
            state.change(
                "dropped_orphan_result", ref[0], "result of a call not in the history", result_id
            )
    for ref in sorted(texted):
        plan.edit(ref[0]).results_as_text.add(ref[1])
        result_id = result_at(skeleton, ref).id
        state.change(
            "orphan_result_to_text", ref[0], "result of a vanished call kept as text", result_id
        )
    # a request never ends on unanswered calls (issue 32, case 7; the rules report them on
    # the whole history); a history kept while tools run keeps them waiting
    answer_last = skeleton.whole and policy.frontier != "keep"
    before: dict[int, list[Item]] = {}
    split: dict[int, Blocks] = {}
    for group in _call_groups(skeleton, turns, misplaced):
        group_calls = [(index, call) for index in group for call in calls[index]]
        refs = [
            state.answer[(index, call.slot)]
            for index, call in group_calls
            if (index, call.slot) in state.answer
        ]
        flush = group[-1] + 1
        if flush >= n and not refs and not answer_last and (gemini or kinds[group[0]] == ASSISTANT):
            continue  # the live frontier: nothing answers these calls yet (a call a user
            # message held is no live call of the model: it moves, and is answered)
        for index in group:
            if kinds[index] != ASSISTANT:
                found = calls[index]
                plan.edit(index).drop_blocks.update(call.slot for call in found)
                split[index] = Blocks(ASSISTANT, tuple((index, call.slot) for call in found))
            elif turns and index in skeleton.marked("interleaved"):
                plan.edit(index).calls_last = True
                state.change(
                    "reordered_blocks", index, "text after tool_use moved before the calls"
                )
        missing = [
            (index, call) for index, call in group_calls if (index, call.slot) not in state.answer
        ]
        placeholders = _answer_missing(state, missing)
        if turns:
            in_place = set(refs) <= _leading_after(state, flush, dropped, texted)
        else:
            in_place = not placeholders and _alone_after(state, flush, refs, dropped)
        parts: list[tuple[int, int] | Placeholder] = []
        if not in_place:
            order = {
                (index, call.slot): position for position, (index, call) in enumerate(group_calls)
            }  # each call's position, looked up per result instead of searched
            ordered = sorted(
                refs, key=lambda ref: order.get(state.answered_by[ref], len(group_calls))
            )
            parts.extend(ordered)
            for ref in ordered:
                plan.edit(ref[0]).drop_blocks.add(ref[1])
                state.change(
                    "moved_result",
                    ref[0],
                    f"gathered into the user message after its call in message "
                    f"{group[-1] + skeleton.base}",
                    result_at(skeleton, ref).id,
                )
        parts.extend(placeholders)
        for ref in refs:
            if ref in state.filled_ids:
                state.change(
                    "filled_result_id",
                    ref[0],
                    "id taken from the only open call",
                    call_at(skeleton, state.answered_by[ref]).id,
                )
        if parts:
            before.setdefault(flush, []).append(Blocks(USER, tuple(parts)))
    items = plan.items
    for index in range(n + 1):
        items.extend(before.get(index, ()))
        if index == n:
            break
        if not _emptied(state, index):
            items.append(Keep(index))
        if index in split:
            items.append(split[index])
    if split:
        detail = (
            "function calls moved into a model content"
            if gemini
            else "tool uses moved out of the user message into an assistant message"
        )
        for index in sorted(split):
            state.change("moved_message", index, detail)


def _answer_missing(state: PlanState, missing: list[tuple[int, Call]]) -> list[Placeholder]:
    """Placeholders for the calls without a result (or the calls removed, per policy)."""
    if not missing:
        return []
    if state.policy.missing_result == "remove_call":
        for index, call in missing:
            state.plan.edit(index).drop_blocks.add(call.slot)
            state.change("removed_call", index, "call without a result removed", call.id)
        return []
    out = []
    for index, call in missing:
        out.append(
            Placeholder(
                index, call.id or "", call.name, state.policy.placeholder, call_slot=call.slot
            )
        )
        state.change("answered_missing_call", index, "call answered with the placeholder", call.id)
    return out


def _leading_after(
    state: PlanState, start: int, dropped: set[ResultRef], texted: set[ResultRef]
) -> set[ResultRef]:
    """Anthropic: the results that will open the user turn starting at ``start``."""
    skeleton = state.skeleton
    kinds, results, extras = skeleton.kinds, skeleton.results, skeleton.extras
    lead: set[ResultRef] = set()
    for index in range(start, len(kinds)):
        if kinds[index] == ASSISTANT or index not in results:
            break
        others = extras.get(index, ())
        stop = others[0] if others else 1 << 30
        for result in results[index]:
            ref = (index, result.slot)
            if ref in texted and result.slot < stop:
                stop = result.slot
            if result.slot < stop and ref not in dropped:
                lead.add(ref)
        if stop != 1 << 30:
            break
    return lead


def _alone_after(
    state: PlanState, index: int, refs: list[ResultRef], dropped: set[ResultRef]
) -> bool:
    """Gemini, Bedrock: message ``index`` holds exactly these results and nothing else."""
    skeleton = state.skeleton
    if index >= len(skeleton.kinds) or skeleton.kinds[index] == ASSISTANT:
        return False
    if index in skeleton.calls:
        return False
    profile = state.profile
    if skeleton.extras.get(index) and (
        profile.block_pairing != "converse" or "result_with_text" in profile.checks
    ):
        return False  # more than the results: only a Bedrock profile without that rule allows
    here = {(index, result.slot) for result in skeleton.results.get(index, ())}
    return set(refs) == here - dropped and all(ref[0] == index for ref in refs)


def _emptied(state: PlanState, index: int) -> bool:
    edit = state.plan.edits.get(index)
    if edit is None or not edit.drop_blocks or index not in state.skeleton.extras:
        return False
    return len(edit.drop_blocks) >= _total(state.skeleton, index)


def unthink_new_final(state: PlanState) -> None:
    """Anthropic with thinking off: an assistant message that the repair leaves last (what
    followed it was a dropped copy or orphan) must hold no thinking block either. The reader
    marks the input's final message's thinking blocks ``final_thinking`` (a rule's defect) and
    every other assistant message's ``thinking_block`` (no rule's), and those blocks go. (Only
    a leading thinking block went before: hypothesis found an empty text block, dropped by the
    repair, in front of one.)"""
    items, skeleton = state.plan.items, state.skeleton
    last = items[-1] if items else None
    if not isinstance(last, Keep) or skeleton.kinds[last.index] != ASSISTANT:
        return
    index = last.index
    if index == len(skeleton.kinds) - 1 or index not in skeleton.marked("thinking"):
        return
    slots = [d.slot for d in skeleton.defects if d.at == index and d.code == "thinking_block"]
    edit = state.plan.edit(index)
    dropped = [slot for slot in slots if slot not in edit.drop_blocks]
    if not dropped:
        return
    edit.drop_blocks.update(dropped)
    state.change(
        "dropped_thinking_block", index, "thinking block of the final message, thinking off"
    )


# --- 4. shapes --------------------------------------------------------------------------------


def fix_blocks(state: PlanState, problem_codes: set[str]) -> None:
    """Mend the shape defects the reader saw, where the profile rejects them (step 4)."""
    skeleton, plan = state.skeleton, state.plan
    kept = {item.index for item in plan.items if isinstance(item, Keep)}
    emptied: set[int] = set()
    for defect in skeleton.defects:
        index, code = defect.at, defect.code
        if index not in kept and code != "result_text_blank":  # a result moves with its edit
            continue
        if code == "final_whitespace" and "trailing_whitespace" in problem_codes:
            code = "trailing_whitespace"
        elif code == "final_thinking" and "thinking_final_assistant_disabled" in problem_codes:
            code = "thinking_final_assistant_disabled"
        elif code == "final_empty" and not skeleton.whole:
            code = "empty_content"
        if code not in problem_codes:
            continue
        edit = plan.edit(index)
        if code in ("empty_content", "parts_empty"):
            emptied.add(index)
        elif code in ("text_empty", "text_whitespace", "part_no_data", "text_blank"):
            if defect.detail == "content":
                edit.normalize_results = True
                state.change("dropped_empty_block", index, "empty text inside a tool result")
            else:
                edit.drop_blocks.add(defect.slot)
                state.change("dropped_empty_block", index, f"{code} block removed")
        elif code == "result_text_blank":
            if not edit.normalize_results:
                edit.normalize_results = True
                state.change("dropped_empty_block", index, "blank text inside a tool result")
        elif code == "thinking_fields":
            edit.drop_blocks.add(defect.slot)
            state.change(
                "dropped_thinking_block", index, f"incomplete thinking block ({defect.detail})"
            )
        elif code == "thinking_final_assistant_disabled":
            edit.drop_blocks.add(defect.slot)
            state.change(
                "dropped_thinking_block", index, "thinking block of the final message, thinking off"
            )
        elif code == "trailing_whitespace":
            edit.rstrip_text.add(defect.slot)
            state.change("trimmed_whitespace", index, "trailing whitespace of the final message")
        elif code in ("input_not_object", "args_not_object"):
            if not edit.normalize_calls:
                edit.normalize_calls = True
                state.change("normalized_tool_call", index, f"tool input made an object ({code})")
        elif code in ("response_is_list", "response_not_object") and not edit.normalize_results:
            edit.normalize_results = True
            state.change("normalized_tool_result", index, "function response wrapped as an object")
    gone: set[int] = set()
    for index in sorted(kept):
        if index in emptied or _emptied(state, index):
            gone.add(index)
            state.change("dropped_empty_message", index, "message with no content left")
    if gone:  # in one pass: a removal each would make n empty messages quadratic
        plan.items = [
            item for item in plan.items if not (isinstance(item, Keep) and item.index in gone)
        ]
    if {"invalid_role", "system_role"} & problem_codes:
        _fix_roles(state, kept - emptied)
    if {"function_name_format", "call_name_empty"} & problem_codes:
        rename_functions(state)


def _fix_roles(state: PlanState, kept: Iterable[int]) -> None:
    skeleton = state.skeleton
    assistant_role = get(skeleton.format).assistant_role
    valid = {"user", assistant_role}
    for index in sorted(kept):
        role = skeleton.roles[index]
        if role in valid:
            continue
        kind = skeleton.kinds[index]
        new_role = assistant_role if kind == ASSISTANT else "user"
        state.plan.edit(index).set_fields["role"] = new_role
        if kind == SYSTEM:
            state.change("system_to_user", index, "system message sent as user text")
        else:
            state.change("renamed_role", index, f"role {role!r} sent as {new_role!r}")


# --- 5. names and ids -------------------------------------------------------------------------


def name_results(state: PlanState, *, write_ids: bool = False) -> None:
    """Every result names the function of the call it answers (seed 003); with ``write_ids``
    (Gemini), a call that lost the id its response kept gets it back (unless another call
    already has that id), and a response carries its call's id."""
    skeleton, plan = state.skeleton, state.plan
    taken = {call.id for found in skeleton.calls.values() for call in found if call.id}
    for call_ref, ref in sorted(state.answer.items()):
        call = call_at(skeleton, call_ref)
        result = result_at(skeleton, ref)
        if call.name and result.name != call.name:
            plan.edit(ref[0]).result_names[ref[1]] = call.name
            state.change(
                "filled_result_name",
                ref[0],
                f"function name {call.name!r} taken from the call",
                call.id,
            )
        if not write_ids:
            continue
        call_id = state.final_ids.get(call_ref, call.id)
        if result.id and not call_id and result.id not in taken:
            taken.add(result.id)
            plan.edit(call_ref[0]).call_ids[call_ref[1]] = result.id
            state.change(
                "restored_call_id", call_ref[0], "call id written back from its response", result.id
            )
        elif call_id and result.id != call_id:
            plan.edit(ref[0]).result_ids[ref[1]] = call_id
            state.change("filled_result_id", ref[0], "response id taken from its call", call_id)
    if skeleton.layout == MESSAGES:
        plan.items = [
            replace(item, named=True) if isinstance(item, Placeholder) else item
            for item in plan.items
        ]


def strip_function_ids(state: PlanState) -> None:
    """Gemini endpoints that do not know ``id``: removed from calls, responses, placeholders."""
    skeleton, plan = state.skeleton, state.plan
    for index in sorted(skeleton.calls.keys() | skeleton.results.keys()):
        ids = [call.id for call in skeleton.calls.get(index, ())]
        ids += [result.id for result in skeleton.results.get(index, ())]
        if any(found is not None for found in ids):
            plan.edit(index).strip_ids = True
            state.change("removed_function_ids", index, "function ids the endpoint rejects")
    for position, item in enumerate(plan.items):
        if isinstance(item, Blocks) and any(isinstance(p, Placeholder) for p in item.parts):
            plan.items[position] = Blocks(
                item.role,
                tuple(
                    replace(p, call_id="") if isinstance(p, Placeholder) else p for p in item.parts
                ),
            )


# --- 6. provider steps ------------------------------------------------------------------------


def _side(state: PlanState, item: Item) -> str:
    """``ASSISTANT`` or ``USER``: which side of the conversation an output item speaks for."""
    if isinstance(item, Keep):
        kind = state.skeleton.kinds[item.index]
        role = state.plan.edits.get(item.index)
        if role is not None and "role" in role.set_fields:
            return USER if role.set_fields["role"] == "user" else ASSISTANT
        return ASSISTANT if kind == ASSISTANT else USER
    if isinstance(item, Placeholder):
        return USER
    return ASSISTANT if item.role == ASSISTANT else USER


def _calls_left(state: PlanState, item: Item) -> bool:
    """Whether an output item still makes calls."""
    if isinstance(item, Blocks):
        return item.role == ASSISTANT
    if isinstance(item, Merge):
        return any(_calls_left(state, part) for part in item.parts if isinstance(part, Keep))
    if not isinstance(item, Keep) or state.skeleton.kinds[item.index] != ASSISTANT:
        return False
    found = state.skeleton.calls.get(item.index, ())
    edit = state.plan.edits.get(item.index)
    dropped = edit.drop_blocks if edit is not None else set()
    return any(call.slot not in dropped for call in found)


def _results_left(state: PlanState, item: Item) -> bool:
    """Whether an output item carries results."""
    if isinstance(item, Blocks):
        return item.role == USER
    if isinstance(item, Placeholder):
        return True
    if not isinstance(item, Keep):
        return False
    carried = state.skeleton.results.get(item.index, ())
    edit = state.plan.edits.get(item.index)
    gone = (edit.drop_blocks | edit.results_as_text) if edit is not None else set()
    return any(result.slot not in gone for result in carried)


def place_call_turns(state: PlanState) -> None:
    """Gemini: a function-call turn comes right after a user turn. A call turn after a model
    Content is merged into it; one that opens the history gets the fixed user bridge."""
    out: list[Item] = []
    for item in state.plan.items:
        if _calls_left(state, item) and (not out or _side(state, out[-1]) == ASSISTANT):
            if not out:
                out.append(Bridge(USER, USER_BRIDGE_TEXT))
                state.change(
                    "inserted_message", source_index(item), "user message before the calls"
                )
            elif isinstance(item, Keep) and isinstance(out[-1], (Keep, Merge)):
                out[-1] = _joined(out[-1], item, ASSISTANT)
                state.change(
                    "merged_messages", item.index, "joined with the model content before it"
                )
                continue
            else:
                out.append(Bridge(USER, USER_BRIDGE_TEXT))
                state.change(
                    "inserted_message", source_index(item), "user message before the calls"
                )
        out.append(item)
    state.plan.items = out


def _joined(first: Keep | Merge, second: Keep, role: str) -> Merge:
    parts = (*first.parts, second) if isinstance(first, Merge) else (first, second)
    return Merge(role, parts)


def sign_calls(state: PlanState) -> None:
    """Gemini 3: the documented placeholder signature on the first call of every model turn
    since the last user prompt that has none (a history from another model or provider)."""
    skeleton, plan = state.skeleton, state.plan
    unsigned = skeleton.marked("unsigned")
    items = plan.items
    boundary = -1
    for position, item in enumerate(items):
        if _side(state, item) == USER and _is_prompt(state, item):
            boundary = position
    for item in items[boundary + 1 :]:
        first = _first_call(state, item)
        if first is None:
            continue
        index, slot = first
        # a call after the first one carries no signature (Gemini signs only the first of
        # parallel calls): once the first is removed, the next one needs the placeholder
        if slot != skeleton.calls[index][0].slot or index in unsigned:
            plan.edit(index).sign_calls.add(slot)
            state.change("added_thought_signature", index, "placeholder thought signature")


def _is_prompt(state: PlanState, item: Item) -> bool:
    if isinstance(item, Keep):
        kind = state.skeleton.kinds[item.index]
        return kind == USER or bool(kind == TOOL and state.skeleton.extras.get(item.index))
    return isinstance(item, (Bridge, Merge, AsText))


def _first_call(state: PlanState, item: Item) -> tuple[int, int] | None:
    if isinstance(item, Blocks):
        first = item.parts[0] if item.parts and item.role == ASSISTANT else None
        return first if isinstance(first, tuple) else None
    if isinstance(item, Merge):
        for part in item.parts:
            if isinstance(part, Keep):
                found = _first_call(state, part)
                if found is not None:
                    return found
        return None
    if not isinstance(item, Keep) or state.skeleton.kinds[item.index] != ASSISTANT:
        return None
    edit = state.plan.edits.get(item.index)
    dropped = edit.drop_blocks if edit is not None else set()
    for call in state.skeleton.calls.get(item.index, ()):
        if call.slot not in dropped:
            return (item.index, call.slot)
    return None


def alternate(state: PlanState) -> None:
    """Bedrock: start with the user, then strictly alternate. Same-role neighbours are merged;
    where merging would put text beside tool results, the fixed bridge goes between."""
    out: list[Item] = []
    apart = "call_with_text" in state.profile.checks  # Llama, Mistral: toolUse turns alone
    for item in state.plan.items:
        side = _side(state, item)
        if not out:
            if side == ASSISTANT:
                out.append(Bridge(USER, USER_BRIDGE_TEXT))
                state.change("inserted_message", source_index(item), "user message at the start")
            out.append(item)
            continue
        previous = out[-1]
        if _side(state, previous) != side:
            out.append(item)
            continue
        if side == USER and (_results_left(state, previous) or _results_left(state, item)):
            out.append(Bridge(ASSISTANT, ASSISTANT_BRIDGE_TEXT))
            state.change(
                "inserted_message", source_index(item), "assistant message after tool results"
            )
            out.append(item)
        elif (
            isinstance(previous, (Keep, Merge, Bridge))
            and isinstance(item, (Keep, Bridge))
            and not (apart and (_calls_left(state, previous) or _calls_left(state, item)))
        ):
            parts = (*previous.parts, item) if isinstance(previous, Merge) else (previous, item)
            out[-1] = Merge(side, parts)
            state.change(
                "merged_messages", source_index(item), f"joined with the {side} message before it"
            )
        else:
            bridge = USER if side == ASSISTANT else ASSISTANT
            text = USER_BRIDGE_TEXT if bridge == USER else ASSISTANT_BRIDGE_TEXT
            out.append(Bridge(bridge, text))
            state.change("inserted_message", source_index(item), f"{bridge} message inserted")
            out.append(item)
    state.plan.items = out


def calls_apart(state: PlanState) -> None:
    """Bedrock for Llama and Mistral models: an assistant message keeps its other blocks (text,
    media) and its ``toolUse`` blocks move into an assistant message of their own right after
    it (``moved_message``); :func:`alternate` then puts the fixed user bridge between the two.
    Nothing is dropped, and the calls stay right before their results."""
    skeleton, plan = state.skeleton, state.plan
    out: list[Item] = []
    for item in plan.items:
        out.append(item)
        if not isinstance(item, Keep) or skeleton.kinds[item.index] != ASSISTANT:
            continue
        index = item.index
        edit = plan.edits.get(index)
        gone = edit.drop_blocks if edit is not None else set()
        found = [call for call in skeleton.calls.get(index, ()) if call.slot not in gone]
        others = [slot for slot in skeleton.extras.get(index, ()) if slot not in gone]
        if not found or not others:
            continue
        plan.edit(index).drop_blocks.update(call.slot for call in found)
        out.append(Blocks(ASSISTANT, tuple((index, call.slot) for call in found)))
        state.change(
            "moved_message", index, "tool uses moved into an assistant message of their own"
        )
    plan.items = out


def end_with_user(state: PlanState) -> None:
    """The Claude models without prefill (``prefill_unsupported``): the request ends with a
    user message. An empty final assistant message carries nothing and is dropped
    (:func:`drop_empty_final`); a final assistant message with content is kept, and the fixed
    user bridge goes after it (see ``ANTHROPIC_NO_PREFILL`` for why). Trailing system messages
    are sent apart and skipped. Only on the whole history: a range does not know where the
    request ends."""
    skeleton, items = state.skeleton, state.plan.items
    if not skeleton.whole:
        return
    drop_empty_final(state)
    position = _before_system(state, len(items) - 1)
    if position < 0 or _side(state, items[position]) != ASSISTANT:
        return
    items.append(Bridge(USER, USER_BRIDGE_TEXT))
    state.change(
        "inserted_message",
        source_index(items[position]),
        "user message after the final assistant message (the model takes no prefill)",
    )


def drop_empty_final(state: PlanState) -> None:
    """The Claude models without prefill: the empty final assistant message (after any
    trailing system messages, sent apart) carries nothing and goes. With thinking on it goes
    before :func:`flatten_unthought` reads the final exchange: the tool exchange it followed
    is then the last, and its assistant turn must start with thinking. (Hypothesis found it:
    dropped after the flattening, it left an unthought tool exchange last, which the
    provider refuses.) Only on the whole history."""
    skeleton, items = state.skeleton, state.plan.items
    if not skeleton.whole:
        return
    empty_final = {d.at for d in skeleton.defects if d.code == "final_empty"}
    if not empty_final:
        return
    position = _before_system(state, len(items) - 1)
    while position >= 0:
        item = items[position]
        if not (isinstance(item, Keep) and item.index in empty_final):
            break
        del items[position]
        state.change("dropped_empty_message", item.index, "empty final assistant message")
        position = _before_system(state, position - 1)


def _before_system(state: PlanState, position: int) -> int:
    """The last position of the plan's items up to ``position`` that is not a kept system
    message (trailing system messages are sent apart); -1 when there is none."""
    items, kinds = state.plan.items, state.skeleton.kinds
    while position >= 0:
        item = items[position]
        if not (isinstance(item, Keep) and kinds[item.index] == SYSTEM):
            break
        position -= 1
    return position


def lead_with_user(state: PlanState) -> None:
    """An OpenAI-shaped history bound for Bedrock: the first message after the system prompt
    must come from the user; the fixed user bridge goes before an assistant opening."""
    items = state.plan.items
    for position, item in enumerate(items):
        if isinstance(item, Keep) and state.skeleton.kinds[item.index] == SYSTEM:
            continue
        if _side(state, item) == ASSISTANT:
            items.insert(position, Bridge(USER, USER_BRIDGE_TEXT))
            state.change("inserted_message", source_index(item), "user message at the start")
        return


def _starts_thinking(state: PlanState, item: Item) -> bool:
    if not isinstance(item, Keep) or item.index not in state.skeleton.marked("thinking_first"):
        return False
    edit = state.plan.edits.get(item.index)
    return edit is None or 0 not in edit.drop_blocks


def flatten_unthought(state: PlanState) -> None:
    """Anthropic with thinking on: the final tool exchange, whose assistant turn has no
    thinking block to start it, is written out as text (toolmend cannot invent a signed
    thinking block); every call and result stays readable."""
    items = state.plan.items
    end = len(items)
    start = end
    while start > 0 and _side(state, items[start - 1]) == USER:
        start -= 1
    first = start
    while first > 0 and _side(state, items[first - 1]) == ASSISTANT:
        first -= 1
    if start == end or first == start or _starts_thinking(state, items[first]):
        return
    if not any(_calls_left(state, item) for item in items[first:start]) or not any(
        _results_left(state, item) for item in items[start:]
    ):
        return
    out: list[Item] = []
    for item in items[first:start]:
        if isinstance(item, Keep) and _calls_left(state, item):
            out.append(AsText(item, ASSISTANT))
            state.change("flattened_tool_traffic", item.index, "tool calls written as text")
        else:
            out.append(item)
    for item in items[start:]:
        if isinstance(item, Keep) and _results_left(state, item):
            out.append(AsText(item, USER))
            state.change("flattened_tool_traffic", item.index, "tool results written as text")
        elif isinstance(item, Blocks):
            refs = [p for p in item.parts if isinstance(p, tuple)]
            for index, slot in refs:
                state.plan.edit(index).results_as_text.add(slot)
            if refs:
                out.append(Blocks(USER, tuple(refs)))
            out.extend(AsText(p, USER) for p in item.parts if isinstance(p, Placeholder))
            state.change(
                "flattened_tool_traffic", source_index(item), "tool results written as text"
            )
        else:
            out.append(item)
    state.plan.items = items[:first] + out
