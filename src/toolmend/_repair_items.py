"""Planner steps for item lists whose results may sit anywhere after their call: the OpenAI
Responses ``input`` (profiles with ``pairing="ordered"``).

:func:`order_items` pairs through :func:`toolmend._pairing.match` in its ``ordered`` mode and
replaces the message planner's layout step (:func:`toolmend._plan_messages.order_messages`),
because the Responses API needs no adjacency: an output only has to come after a call with its
``call_id``.
:func:`mend_items` runs after the shared steps and mends what only item lists have.

What a repair does (the provider rules say what is rejected; these are toolmend's choices):

* An output already after its call stays where it is, however far away: nothing moves that the
  API accepts. Two outputs after one call both stay (the API does not reject that), and a call
  whose id an output after it carries counts as answered even when ids are reused across turns
  and that output answers a later call too: the API matches by id, so does the repair.
* An output with no call before it moves right after its call when the call comes later and
  its id is used by no other call (``moved_result``); a stub or exact copy of an output the call
  already has is dropped (``dropped_duplicate_result``); anything else is an orphan.
* An orphan output is dropped (``dropped_orphan_result``) or, under
  ``Policy(orphan_result="text")``, kept as a user message (``orphan_result_to_text``) whose
  content keeps the output's parts, images included.
* An output without ``call_id`` answers the only earlier call left without an output
  (``filled_result_id``), else it is an orphan. A call without ``call_id`` takes the id of the
  one unclaimed output of its turn (``restored_call_id``).
* A call without an output is answered right after it by an output holding the placeholder
  text (``answered_missing_call``), or removed under ``Policy(missing_result="remove_call")``
  (``removed_call``) together with the reasoning items right before it, which belong to it.
* A reasoning item left without an item it can belong to (the next item is missing, a user
  message, an output or another reasoning item) is dropped (``dropped_reasoning``): one the
  input shows so before anything else, because whatever ends up after it is not its item; one
  stranded by another step after every other step. It holds no user or assistant text and no
  tool result, and the API refuses it.
* Item ids: a later exact copy of an item is dropped (``dropped_duplicate_item``). Otherwise a
  duplicate, unprefixed or malformed id is removed where the API lets the id out (messages,
  ``function_call``, ``function_call_output``, ...: ``removed_item_id``; the API matches calls
  by ``call_id``), rewritten deterministically where it requires one (``web_search_call``, ...:
  ``rewrote_item_id``); a reasoning item with such an id is dropped (``dropped_reasoning``):
  its id names server-side state, so a new one would name nothing; an ``item_reference`` with
  such an id references nothing and is dropped (``dropped_reference``).
* A reasoning item without ``summary`` gets ``"summary": []`` (``filled_summary``); an output
  without ``output`` gets the placeholder text (``filled_output``): nothing was recorded.
* A message with null content gets ``""`` (the shared step, ``filled_content``).
"""

from __future__ import annotations

import hashlib
import re

from ._edits import AsText, Bridge, Item, Keep, Merge, Placeholder
from ._pairing import ORDERED, match
from ._planstate import CallRef, PlanState, ResultRef, call_at
from ._skeleton import ASSISTANT, SYSTEM, TOOL, USER, Call, Defect, Skeleton
from .profiles import compiled

__all__ = ["gather_outputs", "mend_items", "order_items", "settle_tool_items", "unlink_calls"]


_ID_CODES = frozenset({"item_id_prefix", "item_id_charset", "duplicate_item_id"})
_TOOL_ITEM_CODES = frozenset({"missing_tool_output", "orphan_tool_output"})
_ANSWERABLE = frozenset({"custom_tool_call", "apply_patch_call"})
"""Call item types whose output can say "no result was recorded" without inventing one: a
text output (``custom_tool_call_output``), a failed one (``apply_patch_call_output``)."""
_MENDED_CODES = _ID_CODES | {"reasoning_without_summary", "result_without_output"}


# --- pairing and layout -----------------------------------------------------------------------


def order_items(state: PlanState, problem_codes: set[str]) -> None:
    """Pair results with calls by order and lay the items out, moving as little as possible."""
    gone = _drop_unusable_items(state, problem_codes)
    moved_after = _pair_in_order(state, gone)
    batched = state.profile.batched_outputs
    _lay_out(state, gone, moved_after, set() if batched else _answered_later(state))
    if batched:
        gather_outputs(state)


def _drop_unusable_items(state: PlanState, problem_codes: set[str]) -> set[int]:
    """Items that leave before pairing: exact duplicates, reasoning items the input already
    shows without their item, and reasoning items and references whose id the API refuses
    (see the module docstring)."""
    skeleton = state.skeleton
    gone: set[int] = set()
    for defect in skeleton.defects:
        index, code = defect.at, defect.code
        if code not in problem_codes or index in gone:
            continue
        if code == "duplicate_item":
            gone.add(index)
            state.change(
                "dropped_duplicate_item", index, "exact copy of an earlier item", defect.id
            )
        elif code == "reasoning_without_follower":
            gone.add(index)
            state.change("dropped_reasoning", index, "reasoning item without its item", defect.id)
        elif code in _ID_CODES and index in skeleton.marked("reasoning_item"):
            gone.add(index)
            state.change(
                "dropped_reasoning", index, f"reasoning item id refused ({code})", defect.id
            )
        elif code == "item_id_charset" and index in skeleton.marked("reference"):
            gone.add(index)
            state.change(
                "dropped_reference", index, "reference to an id no item can have", defect.id
            )
    return gone


def _pair_in_order(state: PlanState, gone: set[int]) -> dict[int, list[ResultRef]]:
    """Pair through the engine (:func:`toolmend._pairing.match`, ``ordered``); return the
    results to move right after their calling item (those before it), by that item's index."""
    match(state, ORDERED, skip=frozenset(gone))
    moved_after: dict[int, list[ResultRef]] = {}
    for call_ref, ref in sorted(state.answer.items()):
        if ref[0] < call_ref[0]:
            moved_after.setdefault(call_ref[0], []).append(ref)
    return moved_after


def _answered_later(state: PlanState) -> set[CallRef]:
    """Calls the pairing left without a result of their own that the API still counts as
    answered: an output with their ``call_id`` comes later (ids reused across turns). They get
    no placeholder, unless their id is rewritten (too long, repeated in their message), which
    would part them from that output."""
    skeleton = state.skeleton
    results = skeleton.results
    later: dict[str, int] = {}  # call id -> the last output after its call
    for ref, call_ref in state.answered_by.items():
        result_id = results[ref[0]][ref[1]].id
        if result_id is not None and ref[0] > call_ref[0]:
            later[result_id] = max(later.get(result_id, -1), ref[0])
    found: set[CallRef] = set()
    max_length = state.profile.call_id_max_length
    pattern = compiled(state.profile.call_id_pattern)
    for index, calls in skeleton.calls.items():
        ids = [call.id for call in calls]
        for call in calls:
            call_id = call.id
            if (
                call_id is None
                or (index, call.slot) in state.answer
                or later.get(call_id, -1) <= index
                or ids.count(call_id) > 1
                or (max_length is not None and len(call_id) > max_length)
                or (pattern is not None and pattern.fullmatch(call_id) is None)
            ):
                continue
            found.add((index, call.slot))
    return found


def _lay_out(
    state: PlanState,
    gone: set[int],
    moved_after: dict[int, list[ResultRef]],
    answered_later: set[CallRef],
) -> None:
    """Every item in its place, minus what leaves, plus moved results and placeholders right
    after their calls."""
    skeleton, items = state.skeleton, state.plan.items
    kinds, calls, results = skeleton.kinds, skeleton.calls, skeleton.results
    moving = {ref for refs in moved_after.values() for ref in refs}
    orphans = set(state.orphans)
    keep = state.policy.frontier == "keep" and skeleton.whole
    frontier = _frontier_start(state) if keep else len(kinds)
    newest = _newest_outputs(skeleton)  # the newest input is never dropped (issue 32, case 2)
    for index in range(len(kinds)):
        if index in gone:
            continue
        carried = results.get(index)
        if carried and kinds[index] == TOOL:
            ref = (index, carried[0].slot)
            result_id = carried[0].id
            if ref in moving:
                continue
            if ref in state.duplicates:
                state.change(
                    "dropped_duplicate_result", index, "second result for one call", result_id
                )
                continue
            if ref in orphans:
                state.orphan_message(index, result_id, newest=index >= newest)
                continue
            if ref in state.filled_ids:
                call = call_at(state.skeleton, state.filled_ids[ref])
                state.change(
                    "filled_result_id", index, "call_id taken from the only open call", call.id
                )
        items.append(Keep(index))
        found = calls.get(index) if kinds[index] == ASSISTANT else None
        if found:
            for ref in moved_after.get(index, ()):
                items.append(Keep(ref[0]))
                state.change(
                    "moved_result",
                    ref[0],
                    f"moved right after its call in item {index + skeleton.base}",
                    results[ref[0]][ref[1]].id,
                )
            if index < frontier and any(
                (index, call.slot) not in state.answer and (index, call.slot) not in answered_later
                for call in found
            ):
                _answer_missing(state, index, found, answered_later)


def gather_outputs(state: PlanState) -> None:
    """``Profile.batched_outputs``: each run of consecutive calls of the input stays one run,
    and the outputs of its calls (and their placeholders) come right after it, in their order;
    an item that sat between a run and its outputs moves after them (``moved_message``), an
    output that was not in the block right after its run is ``moved_result``. A run is never
    split into call, output, call, output: its later calls would become assistant turns of
    their own (see ``toolmend.profiles._deepseek.DEEPSEEK_RESPONSES``)."""
    skeleton, items = state.skeleton, state.plan.items
    kinds, calls, results = skeleton.kinds, skeleton.calls, skeleton.results
    run_of: dict[int, int] = {}  # calling item -> the first calling item of its input run
    run_end: dict[int, int] = {}  # run -> its last calling item
    for index in sorted(calls):
        if kinds[index] == ASSISTANT:
            first = run_of[index] = run_of.get(index - 1, index)
            run_end[first] = index
    members: dict[int, list[int]] = {}  # run -> positions of its calls in the plan
    outputs: dict[int, list[int]] = {}  # run -> positions of its outputs in the plan
    answers: dict[int, set[int]] = {}  # run -> its outputs' input indexes
    planned: set[int] = set()  # input items the plan keeps
    for position, item in enumerate(items):
        owner = _owner(state, item)
        if owner is not None and owner in run_of:
            outputs.setdefault(run_of[owner], []).append(position)
            if isinstance(item, Keep):
                answers.setdefault(run_of[owner], set()).add(item.index)
        elif isinstance(item, Keep) and item.index in run_of:
            members.setdefault(run_of[item.index], []).append(position)
        if isinstance(item, Keep):
            planned.add(item.index)
    moved = {c.index - skeleton.base for c in state.changes if c.code == "moved_result"}
    laid: list[Item] = []
    taken: set[int] = set()
    looked_at = 0  # the input items before it were already looked at for moved_message
    for position, item in enumerate(items):
        if position in taken:
            continue
        run = run_of.get(item.index) if isinstance(item, Keep) else None
        if run is None:
            laid.append(item)
            continue
        ours = members[run] + outputs.get(run, [])
        laid.extend(items[mine] for mine in ours)
        taken.update(ours)
        answered = answers.get(run, set())
        if not answered:
            continue
        block_end = run_end[run] + 1
        while block_end in answered:
            block_end += 1
        for index in sorted(answered):
            if index >= block_end and index not in moved:
                state.change(
                    "moved_result",
                    index,
                    f"moved right after its run of calls (item {run_end[run] + skeleton.base})",
                    results[index][0].id,
                )
        last = max(answered)
        for index in range(max(looked_at, block_end), last):
            if index not in answered and index in planned:
                state.change("moved_message", index, "moved after the outputs it interrupted")
        looked_at = max(looked_at, last)
    state.plan.items = laid


def _owner(state: PlanState, item: Item) -> int | None:
    """The calling item an output (or a placeholder) in the plan answers."""
    if isinstance(item, Placeholder):
        return item.call_index
    if isinstance(item, Keep):
        carried = state.skeleton.results.get(item.index)
        if carried and state.skeleton.kinds[item.index] == TOOL:
            call = state.answered_by.get((item.index, carried[0].slot))
            return call[0] if call is not None else None
    return None


def _frontier_start(state: PlanState) -> int:
    """Where the trailing run of calls, outputs and reasoning items starts, if it holds a call
    (tools may still be running for those calls); the length of the history otherwise."""
    skeleton = state.skeleton
    kinds, calls, results = skeleton.kinds, skeleton.calls, skeleton.results
    reasoning = skeleton.marked("reasoning_item")
    start = len(kinds)
    has_call = False
    while start > 0:
        index = start - 1
        if kinds[index] == ASSISTANT and index in calls:
            has_call = True
        elif not (index in reasoning or (kinds[index] == TOOL and index in results)):
            break
        start = index
    return start if has_call else len(kinds)


def _answer_missing(
    state: PlanState, index: int, found: tuple[Call, ...], answered_later: set[CallRef]
) -> None:
    """Answer the calls of item ``index`` that have no result after it, or remove them."""
    missing = [
        call
        for call in found
        if (index, call.slot) not in state.answer and (index, call.slot) not in answered_later
    ]
    if not missing:
        return
    items, skeleton = state.plan.items, state.skeleton
    if state.policy.missing_result == "remove_call":
        for call in missing:
            state.change("removed_call", index, "call without a result removed", call.id)
        if len(missing) < len(found) or index not in skeleton.marked("no_text"):
            state.plan.edit(index).drop_calls.update(call.slot for call in missing)
            return
        items.pop()
        reasoning = skeleton.marked("reasoning_item")
        while items and isinstance(items[-1], Keep) and items[-1].index in reasoning:
            dropped = items.pop()
            assert isinstance(dropped, Keep)
            state.change("dropped_reasoning", dropped.index, "reasoning item of a removed call")
        return
    for call in missing:
        items.append(Placeholder(index, call.id or "", call.name, state.policy.placeholder))
        state.change("answered_missing_call", index, "call answered with the placeholder", call.id)


# --- item-level repairs -----------------------------------------------------------------------


def mend_items(state: PlanState, problem_codes: set[str]) -> None:
    """Other tool calls and their outputs, stranded reasoning items, missing summaries, refused
    item ids and calls parted from their reasoning (module docstring)."""
    if _TOOL_ITEM_CODES & problem_codes:
        settle_tool_items(state, problem_codes)
    if "reasoning_without_follower" in state.profile.checks:
        drop_stranded_reasoning(state)
    if "call_without_reasoning" in state.profile.checks:
        unlink_calls(state)
    wanted = problem_codes & _MENDED_CODES
    if not wanted:
        return
    kept = {item.index for item in state.plan.items if isinstance(item, Keep)}
    mended: set[int] = set()
    for defect in state.skeleton.defects:
        index = defect.at
        if defect.code not in wanted or index not in kept:
            continue
        if defect.code == "reasoning_without_summary":
            state.plan.edit(index).set_fields["summary"] = []
            state.change("filled_summary", index, "empty summary added to a reasoning item")
        elif defect.code == "result_without_output":
            state.plan.edit(index).set_fields["output"] = state.policy.placeholder
            state.change("filled_output", index, "missing output set to the placeholder")
        elif index not in mended:
            mended.add(index)
            _mend_item_id(state, defect)


def _mend_item_id(state: PlanState, defect: Defect) -> None:
    index = defect.at
    edit = state.plan.edit(index)
    if index in state.skeleton.marked("id_required"):
        new_id = _fresh_item_id(defect.id, index + state.skeleton.base)
        edit.set_fields["id"] = new_id
        state.change(
            "rewrote_item_id", index, f"item id refused ({defect.code})", defect.id, new_id
        )
    else:
        edit.drop_fields.add("id")
        state.change(
            "removed_item_id", index, f"optional item id refused ({defect.code})", defect.id
        )


_ALNUM = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_PREFIX = re.compile(r"[A-Za-z0-9]+(?=_)")


def _fresh_item_id(old: str, index: int) -> str:
    """A deterministic id for the item at ``index`` of the caller's input (the same whether
    the whole input or a damaged range of it is repaired), keeping the type prefix of ``old``."""
    found = _PREFIX.match(old)
    prefix = found.group(0) if found else "item"
    digest = int.from_bytes(
        hashlib.sha256(f"{old}#{index}".encode("utf-8", "surrogatepass")).digest()[:16], "big"
    )
    chars: list[str] = []
    while len(chars) < 24:
        digest, rest = divmod(digest, 62)
        chars.append(_ALNUM[rest])
    return f"{prefix}_{''.join(chars)}"


def drop_stranded_reasoning(state: PlanState) -> None:
    """Drop every reasoning item whose next item cannot be the one it belongs to.

    Walks the planned items backwards, so a run of reasoning items before a user message goes
    as a whole, and so does a reasoning item whose follower an earlier step removed.
    """
    reasoning = state.skeleton.marked("reasoning_item")
    if not reasoning:
        return
    kept: list[Item] = []
    follower_ok = False
    for item in reversed(state.plan.items):
        if isinstance(item, Keep) and item.index in reasoning:
            if not follower_ok:
                state.change("dropped_reasoning", item.index, "reasoning item without its item")
                continue
            follower_ok = False
        else:
            follower_ok = _can_follow_reasoning(state, item)
        kept.append(item)
    kept.reverse()
    state.plan.items = kept


def _can_follow_reasoning(state: PlanState, item: Item) -> bool:
    """Not a user message, not an output, not reasoning (OR-REASONING-NO-FOLLOWER)."""
    if isinstance(item, Keep):
        skeleton = state.skeleton
        index = item.index
        return not (
            skeleton.kinds[index] in (USER, TOOL) or index in skeleton.marked("output_item")
        )
    if isinstance(item, (Bridge, Merge, AsText)):
        return item.role != USER
    return False


def settle_tool_items(state: PlanState, problem_codes: set[str]) -> None:
    """Calls other than ``function_call`` left without their output, and outputs whose call is
    gone (the reader pairs them by type and ``call_id``: ``missing_tool_output``,
    ``orphan_tool_output``).

    A ``custom_tool_call`` or ``apply_patch_call`` is answered right after it by an output of
    its type holding the placeholder (``answered_missing_call``; the patch output
    ``"failed"``), as a ``function_call`` is. A ``shell_call``, ``local_shell_call`` or
    ``computer_call`` is removed (``removed_call``): their outputs are exit codes, shell
    streams and screenshots, which toolmend cannot write without inventing them (the Agents
    SDK drops such calls too). An output with no call is an orphan, dropped or kept as text
    per policy. Under ``Policy(frontier="keep")`` the calls of the trailing run of the whole
    input stay (their tools may be running)."""
    skeleton, policy = state.skeleton, state.policy
    live = len(skeleton.kinds)
    if policy.frontier == "keep" and skeleton.whole:
        while live and skeleton.kinds[live - 1] not in (USER, SYSTEM):
            live -= 1
    dropped: set[int] = set()
    texted: set[int] = set()
    answers: dict[int, Placeholder] = {}
    newest = _newest_outputs(skeleton)  # the newest input is never dropped (issue 32, case 2)
    for defect in skeleton.defects:
        index = defect.at
        if defect.code == "orphan_tool_output" and defect.code in problem_codes:
            if index >= newest:
                texted.add(index)
                state.change(
                    "orphan_result_to_text", index,
                    "newest input: an output whose call is missing, kept as text", defect.id,
                )  # fmt: skip
            elif policy.orphan_result == "text":
                texted.add(index)
                state.change(
                    "orphan_result_to_text", index, "output of a vanished call kept as text",
                    defect.id,
                )  # fmt: skip
            else:
                dropped.add(index)
                state.change(
                    "dropped_orphan_result", index, "output of a call not in the history",
                    defect.id,
                )  # fmt: skip
        elif defect.code == "missing_tool_output" and defect.code in problem_codes:
            if index >= live:
                continue
            if skeleton.roles[index] in _ANSWERABLE and policy.missing_result != "remove_call":
                answers[index] = Placeholder(index, defect.id, None, policy.placeholder)
                state.change(
                    "answered_missing_call", index, "call answered with the placeholder",
                    defect.id,
                )  # fmt: skip
            else:
                dropped.add(index)
                state.change(
                    "removed_call", index, f"{defect.detail} without its output removed",
                    defect.id,
                )  # fmt: skip
    if not (dropped or texted or answers):
        return
    items: list[Item] = []
    for item in state.plan.items:
        if isinstance(item, Keep):
            if item.index in dropped:
                continue
            if item.index in texted:
                items.append(AsText(item, USER))
                continue
        items.append(item)
        if isinstance(item, Keep) and item.index in answers:
            items.append(answers[item.index])
    state.plan.items = items


def _newest_outputs(skeleton: Skeleton) -> int:
    """Where the newest input begins in a Responses input: the trailing run of outputs of any
    type (system messages among them aside) when no call or reasoning item comes right before
    it (then they are that call run's outputs, or its call is gone) and the input is whole or
    this range ends it; the length otherwise. :func:`toolmend._planstate.newest_results` for
    items, whose other outputs (``shell_call_output``, ...) are read as ``OTHER``."""
    kinds = skeleton.kinds
    if not skeleton.ends:
        return len(kinds)
    outputs = skeleton.marked("output_item")
    start = len(kinds)
    while start > 0 and (kinds[start - 1] in (TOOL, SYSTEM) or start - 1 in outputs):
        start -= 1
    before = start - 1  # a call run (or its reasoning item, whose call is gone) owns the run
    if before >= 0 and (
        before in skeleton.calls
        or before in skeleton.marked("tool_call")
        or before in skeleton.marked("reasoning_item")
    ):
        return len(kinds)
    return start


def unlink_calls(state: PlanState) -> None:
    """Reasoning models: a ``function_call`` sent by its server ``fc_`` id must follow the
    reasoning item that opens its output run. Where none does in the planned items (the
    input lost it, or a step dropped it), the item id is removed (``removed_item_id``): the
    call goes as a new item with its ``call_id``, name and arguments, which its output still
    answers, and nothing ties it to the missing reasoning (the fix laravel/ai, continue and
    TanStack AI shipped). Walks the plan, so it also sees what earlier steps removed."""
    skeleton = state.skeleton
    server_ids = skeleton.marked("server_id")
    if not server_ids:
        return
    reasoning = skeleton.marked("reasoning_item")
    outputs = skeleton.marked("output_item")
    kinds = skeleton.kinds
    ids = {d.at: d.id for d in skeleton.defects if d.code == "call_without_reasoning"}
    reasoned = False
    for item in state.plan.items:
        if not isinstance(item, Keep):
            # an invented output or a user text ends the run; an assistant bridge continues it
            reasoned = (
                reasoned and isinstance(item, (Bridge, Merge, AsText)) and (item.role == ASSISTANT)
            )
            continue
        index = item.index
        if index in reasoning:
            reasoned = True
        elif kinds[index] in (USER, SYSTEM, TOOL) or index in outputs:
            reasoned = False
        elif index in server_ids and not reasoned:
            edit = state.plan.edit(index)
            if "id" not in edit.drop_fields and "id" not in edit.set_fields:
                edit.drop_fields.add("id")
                state.change(
                    "removed_item_id",
                    index,
                    "function_call id whose reasoning item is missing",
                    ids.get(index),
                )
