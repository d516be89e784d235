"""Planner step shared by every layout: call ids and function names the provider would refuse.

:func:`rewrite_ids` gives a call without an id, with a duplicated one, or with one outside the
profile's form a deterministic new id (or the id its result carried, when the pairing found the
call adopted one), and carries it over to the call's results and placeholders.
:func:`rename_functions` does the same for function names.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

from ._edits import Blocks, Item, Placeholder
from ._planstate import CallRef, PlanState, call_at, result_at
from .profiles import Profile, compiled

__all__ = ["acceptable_id", "fresh_id", "id_test", "rename_functions", "rewrite_ids"]

ALNUM = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
PAIRS = [low + high for high in ALNUM for low in ALNUM]
"""Two base-62 digits, lowest first, for each value below 62 ** 2."""


def fresh_id(seed: str, profile: Profile, taken: set[str], next_try: dict[str, int]) -> str:
    """A deterministic id for ``seed`` in the provider's form, unused in the history: the
    first of the candidates of ``seed#0``, ``seed#1``, ... that is not ``taken``.

    A profile with a fixed id length (Mistral's nine) takes, as the first candidate, the last
    ``length`` characters of ``seed`` when they are ASCII letters and digits (an OpenAI id
    ``call_...`` keeps its tail: a history bound for Mistral has every id rewritten, and a
    hash a call was the largest part of that, issue 32); then, and for any other seed, the
    first ``length`` bytes of the candidate's SHA-256 digest, each taken to an alphanumeric
    (:data:`ALNUM_OF_BYTE`). Any other profile gets ``call_`` and the digest in base 62, cut to
    the profile's longest id.

    ``next_try`` holds, per seed, the counter after the last one taken: the candidates before
    it are all taken already (``taken`` only grows), so many calls with one seed (n calls
    sharing a refused id) hash each candidate once instead of restarting at 0 for each call,
    and get the same ids."""
    pairs: list[str]
    counter = next_try.get(seed, 0)
    length = profile.call_id_length
    while True:
        if counter == 0 and length is not None and _kept_tail(seed, length):
            candidate = seed[-length:]
        elif length is not None and length <= 32:
            digest = hashlib.sha256(f"{seed}#{counter}".encode("utf-8", "surrogatepass")).digest()
            candidate = digest[:length].translate(ALNUM_OF_BYTE).decode()
        else:
            # the digest's first 128 bits in base 62, lowest digit first, two digits a step
            # (at most 22 digits; an odd count leaves a high "0" the one-digit loop would not
            # write)
            digest = hashlib.sha256(f"{seed}#{counter}".encode("utf-8", "surrogatepass")).digest()
            value = int.from_bytes(digest[:16], "big")
            pairs = []
            while value:
                value, rest = divmod(value, 3844)
                pairs.append(PAIRS[rest])
            text = "".join(pairs)
            if text.endswith("0"):
                text = text[:-1]
            candidate = text[:length] if length is not None else "call_" + text[:24]
        if candidate not in taken:
            taken.add(candidate)
            next_try[seed] = counter + 1
            return candidate
        counter += 1


def _kept_tail(seed: str, length: int) -> bool:
    """Whether the last ``length`` characters of ``seed`` are ASCII letters and digits (and
    there are that many): the first candidate of :func:`fresh_id` then."""
    tail = seed[-length:]
    return len(tail) == length and tail.isascii() and tail.isalnum()


ALNUM_OF_BYTE = bytes(ord(ALNUM[byte % 62]) for byte in range(256))
"""A ``bytes.translate`` table: each byte to an alphanumeric (the byte modulo 62; the first
eight digits are a little more likely, which costs an id nothing: ``taken`` keeps ids unique)."""

_fresh_id = fresh_id  # (the planner's name for it)


def acceptable_id(call_id: str | None, profile: Profile) -> bool:
    """Whether ``profile`` takes ``call_id`` as it is (else :func:`rewrite_ids` gives the call
    a new one)."""
    return id_test(profile)(call_id)


_ID_TESTS: dict[int, tuple[Profile, Callable[[str | None], bool]]] = {}
"""``id(profile)`` -> (the profile, its :func:`id_test`); the profile is kept so its id cannot
be reused while the entry lives."""


def id_test(profile: Profile) -> Callable[[str | None], bool]:
    """:func:`acceptable_id` for ``profile``, its limits and pattern looked up once per profile
    (profiles are frozen): a range mended in one walk tests every call's id, and the look-ups
    cost more than the test."""
    entry = _ID_TESTS.get(id(profile))
    if entry is not None and entry[0] is profile:
        return entry[1]
    max_length, length = profile.call_id_max_length, profile.call_id_length
    pattern = compiled(profile.call_id_pattern)
    match = pattern.fullmatch if pattern is not None else None

    def test(call_id: str | None) -> bool:
        if not call_id:  # missing or "": rewritten on the call and its results alike
            return False
        if max_length is not None and len(call_id) > max_length:
            return False
        if length is not None and len(call_id) != length:
            return False
        return match is None or match(call_id) is not None

    if len(_ID_TESTS) >= 256:  # profiles built per call: keep the cache small
        _ID_TESTS.clear()
    _ID_TESTS[id(profile)] = (profile, test)
    return test


def rewrite_ids(state: PlanState) -> None:
    """New ids for calls the provider would refuse, carried over to their results; and for a
    call answered by a placeholder whose id another call of the request has (issue 32, case 1:
    a model reused an answered call's id in a later turn), so that the placeholder does not
    make a second result under one id. The call with the real result keeps its id."""
    skeleton, profile, plan = state.skeleton, state.profile, state.plan
    request = skeleton.ids  # a range: the ids of the whole request, rewritten in order
    if request is None:
        taken = {call.id for found in skeleton.calls.values() for call in found if call.id}
        next_try: dict[str, int] = {}
    else:
        taken, next_try = request.taken, request.next_try
    request_wide = profile.call_id_scope == "request"
    shared = _placeheld_shared(state)
    seen: set[str] = set()
    for index in sorted(skeleton.calls):
        found = skeleton.calls[index]
        if not request_wide:
            seen = set()
        for call in found:
            call_ref = (index, call.slot)
            if acceptable_id(call.id, profile) and call.id not in seen and call_ref not in shared:
                seen.add(call.id or "")
                continue
            adopted = state.adopted_ids.get(call_ref) if call.id is None else None
            if adopted is not None and acceptable_id(adopted, profile) and adopted not in taken:
                taken.add(adopted)
                new_id = adopted
                code, detail = "restored_call_id", "call id taken from its result"
            else:
                # the position in the caller's whole history: two ranges repaired on their own
                # must not make one id for two calls
                position = index + skeleton.base
                seed = call.id or f"{position}:{call.slot}:{call.name}"
                new_id = _fresh_id(seed, profile, taken, next_try)
                code, detail = "rewrote_call_id", "call id the provider would refuse"
                if call_ref in shared and acceptable_id(call.id, profile):
                    detail = "call id another call has, for the call the placeholder answers"
            seen.add(new_id)
            state.final_ids[call_ref] = new_id
            plan.edit(index).call_ids[call.slot] = new_id
            state.change(code, index, detail, call.id, new_id)
    for ref, call_ref in state.answered_by.items():
        result = result_at(skeleton, ref)
        wanted = state.final_ids.get(call_ref) or call_at(skeleton, call_ref).id
        if wanted is not None and result.id != wanted:
            plan.edit(ref[0]).result_ids[ref[1]] = wanted
    if state.final_ids:
        plan.items = [_renumbered(state, item) for item in plan.items]


def _placeheld_shared(state: PlanState) -> set[CallRef]:
    """The calls the plan answers with a placeholder whose id another call of the history
    also has: the placeholder would be a second result under that id ("Duplicate value for
    'tool_call_id'"; Anthropic: ``tool_use`` ids must be unique), so the call gets a fresh id
    and the real pair keeps its own."""
    placeheld: list[CallRef] = []
    for item in state.plan.items:
        if isinstance(item, Placeholder) and item.call_id:
            placeheld.append((item.call_index, item.call_slot))
        elif isinstance(item, Blocks):
            placeheld.extend(
                (part.call_index, part.call_slot)
                for part in item.parts
                if isinstance(part, Placeholder) and part.call_id
            )
    if not placeheld:
        return set()
    uses: dict[str, int] = {}
    for found in state.skeleton.calls.values():
        for call in found:
            if call.id:
                uses[call.id] = uses.get(call.id, 0) + 1
    skeleton = state.skeleton
    return {
        ref for ref in placeheld if ref[1] >= 0 and uses.get(call_at(skeleton, ref).id or "", 0) > 1
    }


def _renumbered(state: PlanState, item: Item) -> Item:
    """A plan item with its placeholders carrying their call's final id."""
    if isinstance(item, Placeholder):
        return _final(state, item)
    if isinstance(item, Blocks) and any(isinstance(part, Placeholder) for part in item.parts):
        parts = tuple(
            _final(state, part) if isinstance(part, Placeholder) else part for part in item.parts
        )
        return Blocks(item.role, parts)
    return item


def _final(state: PlanState, item: Placeholder) -> Placeholder:
    slot = item.call_slot
    if slot < 0:
        slot = next(
            call.slot
            for call in state.skeleton.calls[item.call_index]
            if (call.id or "") == item.call_id
        )
    new_id = state.final_ids.get((item.call_index, slot))
    if new_id is None or new_id == item.call_id:
        return item
    return Placeholder(item.call_index, new_id, item.name, item.text, item.named, slot)


def rename_functions(state: PlanState) -> None:
    """Function names the provider would refuse, made safe (``renamed_function``)."""
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
