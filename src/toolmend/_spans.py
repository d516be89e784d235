"""Damaged-range bookkeeping for the formats' one-pass scanners (``dirty_spans``).

A format's scanner walks the native history once, without building a skeleton, and tells the
API which ranges ``[start, stop)`` need reading, judging and repairing: none for a valid
history, a few short ranges for a mostly sound one. A range may only begin at a *clean point*,
where no call waits for a result and the message opens a fresh turn that nothing before it
bears on (a fresh user turn; in Anthropic's merged turns any turn boundary), so each range is
judged and repaired exactly as it would be inside the whole history. A dirty range may also
end early, at an *end point*: after results that answer their calls exactly, when nothing
after them turns out dirty before the next clean point. A result that answers no waiting call
pulls its range back to the range that made a call with that id, where the planner can find
it; one whose call comes only later, or a rule that only holds where the history ends, makes
the scanner return None instead (the whole history is then read).

The same scanner also answers the cheaper question of ``quick_valid`` (is the history valid at
all?) when it is handed a :class:`FirstOnly` instead: the first problem it marks raises
:class:`DirtyError` and ends the walk, so a valid history costs one tight pass and a damaged one
stops early. One scanner serves both questions, so they cannot drift apart.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Collection

__all__ = ["DirtyError", "FirstOnly", "Spans", "all_match"]


class Spans:
    """The ranges found so far while a scanner walks a history."""

    __slots__ = ("callers", "cut", "dirty", "early", "spans", "start")

    def __init__(self) -> None:
        self.spans: list[tuple[int, int]] = []
        self.start = 0
        """Where the current range begins."""
        self.dirty = False
        """Whether the current range needs repair (after its :attr:`cut`, if it has one)."""
        self.cut: int | None = None
        """Where the current range may end early: it needs repair before this point only."""
        self.callers: dict[str, int] = {}
        """Call id -> the start of the range that made the call."""
        self.early: list[str] = []
        """The ids of stray results that no call made so far has (see :meth:`answered_later`)."""

    def clean_point(self, index: int) -> None:
        """``index`` opens a fresh turn with nothing waiting: close the current range there."""
        if self.dirty:
            self.spans.append((self.start, index))
            self.dirty = False
        elif self.cut is not None:
            self.spans.append((self.start, self.cut))
        self.cut = None
        self.start = index

    def end_point(self, index: int) -> None:
        """The messages before ``index`` are settled and those from it on do not depend on them:
        a dirty range may end here. It still runs on to the next clean point if something after
        ``index`` turns out dirty, as no range may begin at ``index`` (the message there is
        judged by what precedes it)."""
        if self.dirty:
            self.cut = index
            self.dirty = False

    def called(self, call_id: str) -> None:
        """A call with ``call_id`` is made in the current range."""
        self.callers[call_id] = self.start

    def stray(self, call_id: object) -> None:
        """A result answers no waiting call: dirty, and reaching back to its call's range."""
        origin = self.callers.get(call_id) if isinstance(call_id, str) else None
        if origin is None and isinstance(call_id, str):
            self.early.append(call_id)
        self.reach_back(self.start if origin is None else origin)

    def answered_later(self) -> bool:
        """Whether a stray result's id is called only after it. The repair of the whole history
        may pair such a result with that later call, across ranges, so a scanner that finds one
        cannot tell the ranges (it returns None)."""
        callers = self.callers
        return any(call_id in callers for call_id in self.early)

    def reach_back(self, origin: int) -> None:
        """The current range is dirty and must reach back to the range starting at ``origin``."""
        self.dirty = True
        if origin >= self.start:
            return
        while self.spans and self.spans[-1][1] > origin:
            origin = min(origin, self.spans.pop()[0])
        self.start = origin

    def finish(self, length: int) -> list[tuple[int, int]]:
        """The ranges to repair, in order (empty: the history is valid)."""
        if self.dirty:
            self.spans.append((self.start, length))
        elif self.cut is not None:
            self.spans.append((self.start, self.cut))
        return self.spans


class DirtyError(Exception):
    """Raised by :class:`FirstOnly` at the first problem a scanner marks: the history needs
    repair, and the scan stops there."""


class FirstOnly(Spans):
    """The bookkeeping of a scanner asked only whether the history is valid (``quick_valid``).

    Marking the current range dirty (directly, through :meth:`stray` or :meth:`reach_back`)
    raises :class:`DirtyError`; no range is kept, so :meth:`finish` of a scan that got there returns
    an empty list.
    """

    __slots__ = ()

    @property
    def dirty(self) -> bool:
        """Always False: the first problem raised :class:`DirtyError` instead of being recorded."""
        return False

    @dirty.setter
    def dirty(self, value: bool) -> None:
        if value:
            raise DirtyError

    def clean_point(self, index: int) -> None:
        self.start = index


def all_match(pattern: re.Pattern[str] | None, values: Collection[str]) -> bool:
    """Whether every value matches ``pattern`` in full (True without a pattern). The pattern
    must not match a newline (ids: a character class).

    Scanners collect the ids they meet and test them here in one pass over the values joined
    by newlines: one call instead of one per id. The id patterns of the profiles are one ASCII
    character class repeated (``[a-zA-Z0-9_-]+``), which ``bytes.translate`` checks several times
    faster than the regular expression: it deletes the allowed characters, and only the joining
    newlines may remain. Other patterns run as one regular expression whose repetition is
    possessive, so the pass keeps no backtracking state per value (Python 3.11 and later; before
    that, one call per value).
    """
    if pattern is None or not values:
        return True
    text = "\n".join(values)
    if pattern.flags == re.UNICODE and text.isascii():
        spec = _ascii_class(pattern.pattern)
        if spec is not None:
            allowed, shortest, longest = spec
            return (
                len(text.encode().translate(None, allowed)) == len(values) - 1
                # (one character at least: no value is empty, a test of each one's truth)
                and (
                    not shortest
                    or (all(values) if shortest == 1 else min(map(len, values)) >= shortest)
                )
                and (longest is None or max(map(len, values)) <= longest)
            )
    if _POSSESSIVE and text.count("\n") == len(values) - 1:  # no newline inside a value
        return _joined_pattern(pattern.pattern).fullmatch(text) is not None
    return all(pattern.fullmatch(value) for value in values)


_POSSESSIVE = sys.version_info >= (3, 11)

_CLASS_REPEATED = re.compile(r"\[([^]\\^][^]\\]*)\](?:(\+)|\{(\d+)(?:(,)(\d*))?\})")
"""A pattern that is one character class (no escapes, not negated) repeated: ``+``, ``{n}``,
``{m,}`` or ``{m,n}``."""


@functools.lru_cache(maxsize=8)
def _ascii_class(pattern: str) -> tuple[bytes, int, int | None] | None:
    """For a pattern that is one ASCII character class repeated: the class's characters (the
    ``delete`` argument of ``bytes.translate``) and the shortest and longest length it takes
    (None: no limit). None for any other pattern, or when the class as read here differs from
    what ``re`` makes of it on any ASCII character (checked, so a misreading cannot pass an id)."""
    found = _CLASS_REPEATED.fullmatch(pattern)
    if found is None:
        return None
    body, plus, low, comma, high = found.groups()
    members: set[int] = set()
    at = 0
    while at < len(body):
        if at + 2 < len(body) and body[at + 1] == "-":
            members.update(range(ord(body[at]), ord(body[at + 2]) + 1))
            at += 3
        else:
            members.add(ord(body[at]))
            at += 1
    whole_class = re.compile(f"[{body}]")
    if any((code in members) != bool(whole_class.fullmatch(chr(code))) for code in range(128)):
        return None
    if any(code > 127 for code in members) or ord("\n") in members:
        return None
    if plus:
        return bytes(sorted(members)), 1, None
    shortest = int(low)
    longest = shortest if comma is None else (int(high) if high else None)
    return bytes(sorted(members)), shortest, longest


@functools.lru_cache(maxsize=8)
def _joined_pattern(pattern: str) -> re.Pattern[str]:
    return re.compile(f"(?:{pattern})(?:\n(?:{pattern}))*+")
