"""The timeline: a history as rows, the same for every format, ready for a renderer to draw.

:func:`build` reads the history with its format, pairs every result with the call it
answers exactly as the repair planner does (:func:`toolmend._repair.pair_results`), and puts
each problem :func:`toolmend.check` finds on the message it names. With ``fix=True`` it also
runs :func:`toolmend.repair` and builds the repaired history's timeline, where every row knows
which input messages it came from (read from the repair plan, the way :mod:`toolmend._trim`
follows messages through a repair) and every change is placed on the row it made.

Links: every call gets a short label (``A``, ``B``, ... ``Z``, ``AA``, ...); a result carries
the label of the call it answers, so a reader can follow a call to its result by eye. In the
repaired timeline a call keeps the label it had before wherever its id allows.

Nothing here logs or raises with message content; the previews are for the screen only.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .._api import (
    Stretch,
    check,
    find_damage,
    format_of,
    mend_damage,
    profile_for,
    repair,
    result_reader,
)
from .._edits import AsText, Blocks, Bridge, CallPart, Item, Keep, Merge, MessageEdit, Placeholder
from .._policy import Policy, as_policy
from .._repair import pair_results
from .._report import Change, Problem
from .._skeleton import Result
from ..formats import Format
from .content import one_line, text_of

__all__ = [
    "PREVIEW_LIMIT",
    "Line",
    "Link",
    "Row",
    "Timeline",
    "View",
    "build",
    "category",
    "label",
]

PREVIEW_LIMIT = 200
"""The longest preview kept on a row; renderers cut it shorter for their width."""

_KEPT = 1000
"""Characters of a message's text kept on its row for renderers that cut their own preview."""

_CATEGORIES = {
    "moved": ("moved_result", "moved_message", "reordered_blocks"),
    "dropped": (
        "dropped_orphan_result",
        "dropped_duplicate_result",
        "dropped_empty_message",
        "dropped_empty_block",
        "dropped_reasoning",
        "dropped_reference",
        "dropped_thinking_block",
        "dropped_duplicate_item",
        "removed_call",
    ),
    "answered": ("answered_missing_call",),
    "renamed": ("filled_result_name", "renamed_function", "renamed_role", "system_to_user"),
    "re-id'd": (
        "rewrote_call_id",
        "rewrote_item_id",
        "filled_result_id",
        "restored_call_id",
        "removed_item_id",
        "removed_function_ids",
    ),
    "added": ("inserted_message", "added_reasoning_content", "added_thought_signature"),
    "merged": ("merged_messages",),
    "as text": ("flattened_tool_traffic", "orphan_result_to_text"),
}
_CATEGORY_OF = {code: name for name, codes in _CATEGORIES.items() for code in codes}


def category(code: str) -> str:
    """What kind of change a change code is: ``moved``, ``dropped``, ``answered``, ``renamed``,
    ``re-id'd``, ``added``, ``merged``, ``as text``, or ``edited`` for the rest."""
    return _CATEGORY_OF.get(code, "edited")


def label(number: int) -> str:
    """The link label of the ``number``-th call (0 -> ``A``, 25 -> ``Z``, 26 -> ``AA``)."""
    letters = ""
    number += 1
    while number:
        number, rest = divmod(number - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


@dataclass(frozen=True, slots=True)
class Link:
    """One call a message makes, or one result it carries."""

    kind: str
    """``"call"`` or ``"result"``."""
    id: str | None
    name: str | None
    """The function name the call or result states (a result may state none)."""
    label: str
    """The label shared by a call and its results; empty for an orphan result."""
    state: str
    """A call: ``"answered"`` or ``"missing"``. A result: ``"answers"``, ``"duplicate"`` (a
    second result for a call already answered) or ``"orphan"`` (no call in the history)."""
    peer: int | None = None
    """The row at the other end: a call's result, a result's call."""
    call_name: str | None = None
    """A result: the name of the call it answers."""


@dataclass(frozen=True, slots=True)
class Row:
    """One message of a timeline."""

    index: int
    role: str
    """The native role (``"tool"``, ``"model"``, ``"function_call_output"``)."""
    kind: str
    """toolmend's kind: user, assistant, tool, system or other (see :mod:`toolmend._skeleton`)."""
    preview: str
    """The message's text on one line, escaped and cut to :data:`PREVIEW_LIMIT`."""
    calls: tuple[Link, ...]
    results: tuple[Link, ...]
    problems: tuple[Problem, ...]
    message: Any = field(repr=False, compare=False)
    """The native message, for renderers that show it in full."""
    origin: str = "kept"
    """Repaired rows: ``kept`` (the input message as it was), ``edited`` (a changed copy),
    ``placeholder`` (a result invented for a call), ``inserted`` (a bridge message),
    ``as text`` (calls or results written out as text), ``merged`` or ``gathered`` (blocks
    taken from several messages), or ``unknown`` (the repair plan could not be followed).
    Input rows are always ``kept``."""
    source: tuple[int, ...] = ()
    """Repaired rows: the input messages it came from (empty for an inserted one)."""
    answers: tuple[str, ...] = ()
    """Repaired rows: the call ids its placeholder results answer."""
    text: str = field(default="", repr=False, compare=False)
    """The start of the message's text as it is (a thousand characters), for a renderer that
    cuts its own preview (see :func:`toolmend._show.content.one_line`)."""

    def ids(self) -> set[str]:
        """Every call and result id on the row, and the ids its placeholders answer."""
        found = {link.id for link in (*self.calls, *self.results) if link.id}
        return found.union(self.answers)


@dataclass(frozen=True, slots=True)
class Timeline:
    """A history as rows; ``general`` holds problems that name no message in it."""

    format: str
    rows: tuple[Row, ...]
    general: tuple[Problem, ...] = ()

    @property
    def problems(self) -> tuple[Problem, ...]:
        """Every problem, in message order."""
        return (*(p for row in self.rows for p in row.problems), *self.general)

    def count(self, kind: str) -> int:
        """How many calls (``"call"``) or results (``"result"``) the history holds."""
        return sum(len(row.calls if kind == "call" else row.results) for row in self.rows)


@dataclass(frozen=True, slots=True)
class Line:
    """One line of the side-by-side view: an input row, a repaired row, or both.

    An input row with no repaired row beside it was dropped or went elsewhere; a repaired row
    with no input row beside it is new, or came from a message further up.
    """

    before: int | None
    after: int | None


@dataclass(frozen=True)
class View:
    """What ``toolmend show`` draws: the history, and with ``fix`` the repaired one beside it."""

    provider: str
    before: Timeline
    after: Timeline | None = None
    """The repaired history; None unless asked for, or when nothing needed changing."""
    changes: tuple[Change, ...] = ()
    lines: tuple[Line, ...] = ()
    """The two timelines aligned (only with ``after``)."""
    shown_at: tuple[int | None, ...] = ()
    """Per change: the repaired row it is marked on, or None when it is marked on its input
    row's place in the repaired view (a message dropped or moved away)."""
    related: dict[int, tuple[int, ...]] = field(default_factory=dict)
    """Repaired row -> every change that concerns it (by input message or by id), whether it
    is marked there or on another row."""
    fixed: bool = False
    """Whether a repair was asked for (``after`` is None then only when nothing changed)."""

    @cached_property
    def _marked(self) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
        on_rows: dict[int, list[int]] = {}
        on_gaps: dict[int, list[int]] = {}
        for number, at in enumerate(self.shown_at):
            if at is None:
                on_gaps.setdefault(self.changes[number].index, []).append(number)
            else:
                on_rows.setdefault(at, []).append(number)
        return on_rows, on_gaps

    def changes_at(self, row: int) -> list[int]:
        """The changes marked on repaired row ``row``, by number."""
        return self._marked[0].get(row, [])

    def changes_gone(self, index: int) -> list[int]:
        """The changes marked on input row ``index``'s gap in the repaired view."""
        return self._marked[1].get(index, [])

    @cached_property
    def fates(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        """Per input row, what became of it and the repaired rows it went to: ``kept`` (as it
        was, beside itself), ``moved`` (as it was, elsewhere), ``changed`` (edited, merged,
        written as text), ``dropped``, or ``unknown`` when the repair could not be followed."""
        if self.after is None:
            return tuple(("kept", (row.index,)) for row in self.before.rows)
        if any(row.origin == "unknown" for row in self.after.rows):
            return tuple(("unknown", ()) for _ in self.before.rows)
        went: dict[int, list[int]] = {}
        for row in self.after.rows:
            for index in row.source:
                went.setdefault(index, []).append(row.index)
        beside = {line.after: line.before for line in self.lines if line.after is not None}
        fates: list[tuple[str, tuple[int, ...]]] = []
        for index in range(len(self.before.rows)):
            rows = tuple(went.get(index, ()))
            if not rows:
                fates.append(("dropped", rows))
            elif len(rows) == 1 and self.after.rows[rows[0]].origin == "kept":
                fates.append(("kept" if beside.get(rows[0]) == index else "moved", rows))
            else:
                fates.append(("changed", rows))
        return tuple(fates)


# --- building ---------------------------------------------------------------------------------


def build(
    history: Any,
    *,
    provider: str = "openai",
    format: str | None = None,
    fix: bool = False,
    policy: Policy | None = None,
) -> View:
    """The timeline of ``history`` for ``provider``, and with ``fix`` the repaired one.

    Raises what :func:`toolmend.check` raises for input it cannot read.
    """
    module = format_of(history, format)
    items = _items(module, history)
    labels = _Labels()
    if not fix:
        problems = check(history, provider=provider, format=module.name)
        before = _timeline(module, items, problems, labels)
        return View(provider, before)
    chosen = policy or Policy()
    result = repair(history, provider=provider, format=module.name, policy=chosen)
    before = _timeline(module, items, result.problems, labels)
    if not result.changes:
        return View(provider, before, fixed=True)
    repaired = _items(module, result.messages)
    origins = _origins(module, items, provider, chosen, len(repaired))
    if origins is None:  # the plan and the output do not line up: claim no source at all
        origins = [_Origin("unknown", ()) for _ in repaired]
    labels.turn()
    after = _timeline(module, repaired, result.problems_left, labels, origins)
    shown_at, related = _place(result.changes, before, after)
    moved = {
        row
        for row, change in zip(shown_at, result.changes, strict=True)
        if row is not None and category(change.code) == "moved"
    }
    lines = _align(before, after, moved)
    return View(provider, before, after, result.changes, lines, shown_at, related, fixed=True)


def _items(module: Format, history: Any) -> Sequence[Any]:
    """The list of messages the format reads (a Responses ``input`` string is one user
    message; Gemini's other ``contents`` shapes are normalized as its SDK does)."""
    if isinstance(history, str):
        return [{"role": "user", "content": history}]
    normalize = getattr(module, "normalize", None)
    if normalize is not None:
        items: Sequence[Any] = normalize(history)
        return items
    return history  # type: ignore[no-any-return]


class _Labels:
    """Hands out link labels. The repaired timeline gives a call the label it had before: by
    position in a message kept or edited in place, else by its id, else a new one."""

    def __init__(self) -> None:
        self.next = 0
        self.by_id: dict[str, deque[str]] = {}
        self.rows: dict[int, list[str]] = {}
        self.reuse: dict[str, deque[str]] = {}
        self.previous: dict[int, list[str]] = {}
        self.used: set[str] = set()

    def turn(self) -> None:
        """Start the repaired timeline, remembering the input's labels."""
        self.reuse, self.previous = self.by_id, self.rows
        self.by_id, self.rows, self.used = {}, {}, set()

    def take(self, row: int, call_id: str | None, inherited: str | None) -> str:
        name = inherited if inherited is not None and inherited not in self.used else None
        waiting = self.reuse.get(call_id) if call_id is not None else None
        while name is None and waiting:
            candidate = waiting.popleft()
            if candidate not in self.used:
                name = candidate
        if name is None:
            name = label(self.next)
            self.next += 1
        self.used.add(name)
        if call_id is not None:
            self.by_id.setdefault(call_id, deque()).append(name)
        self.rows.setdefault(row, []).append(name)
        return name


@dataclass(frozen=True, slots=True)
class _Origin:
    kind: str
    source: tuple[int, ...]
    answers: tuple[str, ...] = ()


def _timeline(
    module: Format,
    items: Sequence[Any],
    problems: Iterable[Problem],
    labels: _Labels,
    origins: list[_Origin] | None = None,
) -> Timeline:
    skeleton = module.read(items)
    pairing = pair_results(skeleton, result_reader(module, items))
    answered_by = {ref: call_ref for call_ref, ref in pairing.answer.items()}
    call_labels: dict[tuple[int, int], str] = {}
    names: dict[tuple[int, int], str | None] = {}
    for index in sorted(skeleton.calls):
        found = skeleton.calls[index]
        inherited: Sequence[str | None] = [None] * len(found)
        if origins is not None and origins[index].kind in ("kept", "edited"):
            earlier = labels.previous.get(origins[index].source[0], [])
            if len(earlier) == len(found):
                inherited = earlier
        for call, name in zip(found, inherited, strict=True):
            call_labels[(index, call.slot)] = labels.take(index, call.id, name)
            names[(index, call.slot)] = call.name
    placed: dict[int, list[Problem]] = {}
    general: list[Problem] = []
    for problem in problems:
        if 0 <= problem.index < len(items):
            placed.setdefault(problem.index, []).append(problem)
        else:
            general.append(problem)
    rows = []
    for index, message in enumerate(items):
        calls = tuple(
            Link(
                "call",
                call.id,
                call.name,
                call_labels[(index, call.slot)],
                "answered" if (index, call.slot) in pairing.answer else "missing",
                pairing.answer[(index, call.slot)][0]
                if (index, call.slot) in pairing.answer
                else None,
            )
            for call in skeleton.calls.get(index, ())
        )
        results = []
        for result in skeleton.results.get(index, ()):
            ref = (index, result.slot)
            call_ref = answered_by.get(ref)
            state = "answers"
            if call_ref is None:
                call_ref = pairing.duplicate_of.get(ref)
                state = "duplicate" if ref in pairing.duplicates else "orphan"
            results.append(
                Link(
                    "result",
                    result.id,
                    result.name,
                    call_labels.get(call_ref, "") if call_ref else "",
                    state,
                    call_ref[0] if call_ref else None,
                    names.get(call_ref) if call_ref else None,
                )
            )
        origin = origins[index] if origins is not None else _Origin("kept", (index,))
        said = _text(module, message, skeleton.results.get(index, ()))
        rows.append(
            Row(
                index,
                skeleton.roles[index] if index < len(skeleton.roles) else "",
                skeleton.kinds[index] if index < len(skeleton.kinds) else "",
                one_line(said, PREVIEW_LIMIT),
                calls,
                tuple(results),
                tuple(placed.get(index, ())),
                message,
                origin.kind,
                origin.source,
                origin.answers,
                said[:_KEPT],
            )
        )
    return Timeline(module.name, tuple(rows), tuple(general))


def _text(module: Format, message: Any, results: Sequence[Result]) -> str:
    """The message's text; for a result with no text of its own (Gemini's
    ``functionResponse``, Bedrock's ``toolResult``), the result as the format reads it."""
    text = text_of(message)
    if text or not results:
        return text
    pieces = [module.result_text(message, result.slot) for result in results]
    return " ".join(piece for piece in pieces if isinstance(piece, str) and piece)


# --- where each repaired message came from ----------------------------------------------------


def _origins(
    module: Format, items: Sequence[Any], provider: str, policy: Policy, length: int
) -> list[_Origin] | None:
    """Per repaired message, the input messages it came from, read from the repair plan;
    None when the plan and the output do not line up (then no row claims a source)."""
    profile = profile_for(provider, module)  # as repair derives it
    chosen = as_policy(policy)
    damaged = find_damage(module, items, profile, chosen)
    mended = mend_damage(module, items, profile, chosen, damaged)
    # the messages whose call ids a stretch between the damaged ranges rewrote (Mistral)
    rewritten = {index for found in damaged if type(found) is Stretch for index in found.edited}

    def kept(index: int) -> _Origin:
        return _Origin("edited" if index in rewritten else "kept", (index,))

    origins: list[_Origin] = []
    position = 0
    for damage, plan, applied in mended.parts:
        origins.extend(kept(index) for index in range(position, damage.low))
        part = [_origin(item, plan.edits, damage.low) for item in plan.items]
        if len(part) != len(applied):
            fitted = _fit(part, plan.items, plan.edits, len(applied))
            if fitted is None:
                return None
            part = fitted
        origins.extend(part)
        position = damage.high
    origins.extend(kept(index) for index in range(position, len(items)))
    return origins if len(origins) == length else None


def _origin(item: Item, edits: dict[int, MessageEdit], low: int) -> _Origin:
    if isinstance(item, Keep):
        return _Origin("kept" if item.index not in edits else "edited", (low + item.index,))
    if isinstance(item, Placeholder):
        return _Origin("placeholder", (low + item.call_index,), (item.call_id,))
    if isinstance(item, Bridge):
        return _Origin("inserted", ())
    if isinstance(item, CallPart):  # a call split out of its message
        return _Origin("edited", (low + item.index,))
    if isinstance(item, AsText):
        inner = _origin(item.item, edits, low)
        return _Origin("as text", inner.source, inner.answers)
    parts = [_origin(part, edits, low) for part in item.parts] if isinstance(item, Merge) else []
    if isinstance(item, Blocks):
        for part in item.parts:
            if isinstance(part, Placeholder):
                parts.append(_Origin("placeholder", (low + part.call_index,), (part.call_id,)))
            else:
                parts.append(_Origin("kept", (low + part[0],)))
    source = tuple(dict.fromkeys(index for part in parts for index in part.source))
    answers = tuple(call_id for part in parts for call_id in part.answers)
    return _Origin("merged" if isinstance(item, Merge) else "gathered", source, answers)


def _fit(
    part: list[_Origin], items: list[Item], edits: dict[int, MessageEdit], length: int
) -> list[_Origin] | None:
    """A format that leaves out a message whose every call was removed (Responses: a
    ``function_call`` item is the call): drop those items' origins, if that accounts for it."""
    gone = [
        position
        for position, item in enumerate(items)
        if isinstance(item, Keep) and item.index in edits and edits[item.index].drop_calls
    ]
    if len(part) - len(gone) != length:
        return None
    return [origin for position, origin in enumerate(part) if position not in set(gone)]


# --- the two timelines side by side -----------------------------------------------------------


def _align(
    before: Timeline, after: Timeline, moved: set[int] | frozenset[int] = frozenset()
) -> tuple[Line, ...]:
    """Pair repaired rows with the input rows they came from, as a diff does: the largest set
    of rows whose order the repair kept stands beside its input (rows a change says were
    ``moved`` count less, so the rows the repair did not move are the ones kept in place);
    every other input row gets a line of its own, and so does every other repaired row."""
    anchors = _anchors(after, moved)
    lines: list[Line] = []
    next_input = 0
    for row in after.rows:
        first = anchors.get(row.index)
        if first is not None:
            lines.extend(Line(index, None) for index in range(next_input, first))
            lines.append(Line(first, row.index))
            next_input = first + 1
        else:
            lines.append(Line(None, row.index))
    lines.extend(Line(index, None) for index in range(next_input, len(before.rows)))
    return tuple(lines)


def _anchors(after: Timeline, moved: set[int] | frozenset[int]) -> dict[int, int]:
    """Repaired row -> the input row it stands beside: the heaviest chain of rows whose first
    input index increases (weight 2 for a row no change moved, 1 for a moved one), found in
    one pass with a Fenwick tree of the best chain ending at or below each input index."""
    size = max((row.source[0] for row in after.rows if row.source), default=-1) + 2
    tree: list[tuple[int, int]] = [(0, -1)] * (size + 1)  # (chain weight, its last row)
    previous: dict[int, int] = {}
    best = (0, -1)
    for row in after.rows:
        if not row.source or row.origin == "placeholder":
            continue
        first = row.source[0]
        found = (0, -1)
        position = first  # the best chain over input indexes below ``first``
        while position > 0:
            found = max(found, tree[position])
            position -= position & -position
        weight = found[0] + (1 if row.index in moved else 2)
        previous[row.index] = found[1]
        entry = (weight, row.index)
        best = max(best, entry)
        position = first + 1
        while position <= size:
            tree[position] = max(tree[position], entry)
            position += position & -position
    anchors: dict[int, int] = {}
    current = best[1]
    while current >= 0:
        anchors[current] = after.rows[current].source[0]
        current = previous[current]
    return anchors


_RELATED_PER_ID = 32
"""Changes a row is told about through one id (one per code and input message)."""


def _nearest(bridges: list[int], index: int) -> int:
    """The inserted row nearest ``index`` (the earlier of two as near), taken from the sorted
    ``bridges`` so that each change marks its own."""
    position = bisect.bisect_left(bridges, index)
    if position == len(bridges) or (
        position > 0 and index - bridges[position - 1] <= bridges[position] - index
    ):
        position -= 1
    return bridges.pop(position)


def _place(
    changes: Sequence[Change], before: Timeline, after: Timeline
) -> tuple[tuple[int | None, ...], dict[int, tuple[int, ...]]]:
    """Where each change is marked, and which changes concern each repaired row.

    Linear in rows and changes: a row's changes come from indexes, and what a row is told
    about other rows' changes is one change per code and input message (what the "see"
    pointers show), at most :data:`_RELATED_PER_ID` through each id, so a turn of n calls
    sharing an id or answered by n placeholders does not list n changes on each of n rows."""
    rows_of: dict[int, list[Row]] = {}
    answering: dict[tuple[int, str], int] = {}  # (input message, id) -> first row answering it
    for row in after.rows:
        for index in row.source:
            rows_of.setdefault(index, []).append(row)
            for answered in row.answers:
                answering.setdefault((index, answered), row.index)
    bridges = [row.index for row in after.rows if row.origin == "inserted"]
    shown: list[int | None] = []
    for change in changes:
        candidates = rows_of.get(change.index, [])
        at = candidates[0].index if candidates else None
        if change.code == "answered_missing_call":
            rows = [
                answering[(change.index, change_id)]
                for change_id in change.ids
                if (change.index, change_id) in answering
            ]
            if rows:
                at = min(rows)
        elif change.code == "inserted_message" and bridges:
            at = _nearest(bridges, at if at is not None else 0)
        elif category(change.code) == "moved":
            moved = [row for row in candidates if row.origin in ("gathered", "merged")]
            if moved:
                at = moved[0].index
        shown.append(at)
    by_index: dict[int, dict[str, int]] = {}  # input message -> code -> its first change
    by_id: dict[str, dict[tuple[str, int], int]] = {}
    by_row: dict[int, list[int]] = {}
    for number, change in enumerate(changes):
        by_index.setdefault(change.index, {}).setdefault(change.code, number)
        for change_id in change.ids:
            about = by_id.setdefault(change_id, {})
            if len(about) < _RELATED_PER_ID:
                about.setdefault((change.code, change.index), number)
        if shown[number] is not None:
            by_row.setdefault(shown[number], []).append(number)  # type: ignore[arg-type]
    related: dict[int, tuple[int, ...]] = {}
    for row in after.rows:
        found = set(by_row.get(row.index, ()))
        for index in row.source:
            found.update(by_index.get(index, {}).values())
        if row.origin != "kept":
            for row_id in row.ids():
                found.update(by_id.get(row_id, {}).values())
        if found:
            related[row.index] = tuple(sorted(found))
    return tuple(shown), related
