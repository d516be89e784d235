"""Damaged-range bookkeeping for the formats' one-pass scanners (``dirty_spans``).

A format's scanner walks the native history once, without building a skeleton, and tells the
API which ranges ``[start, stop)`` need reading, judging and repairing: none for a valid
history, a few short ranges for a mostly sound one. A range may only begin at a *clean point*,
where no call waits for a result and the message opens a fresh user turn, so each range is
judged and repaired exactly as it would be inside the whole history. A result that answers no
waiting call pulls its range back to the range that made a call with that id, where the planner
can find it.
"""

from __future__ import annotations

__all__ = ["Spans"]


class Spans:
    """The ranges found so far while a scanner walks a history."""

    __slots__ = ("callers", "dirty", "spans", "start")

    def __init__(self) -> None:
        self.spans: list[tuple[int, int]] = []
        self.start = 0
        """Where the current range begins."""
        self.dirty = False
        """Whether the current range needs repair."""
        self.callers: dict[str, int] = {}
        """Call id -> the start of the range that made the call."""

    def clean_point(self, index: int) -> None:
        """``index`` opens a fresh turn with nothing waiting: close the current range there."""
        if self.dirty:
            self.spans.append((self.start, index))
            self.dirty = False
        self.start = index

    def called(self, call_id: str) -> None:
        """A call with ``call_id`` is made in the current range."""
        self.callers[call_id] = self.start

    def stray(self, call_id: object) -> None:
        """A result answers no waiting call: dirty, and reaching back to its call's range."""
        origin = self.callers.get(call_id) if isinstance(call_id, str) else None
        self.reach_back(self.start if origin is None else origin)

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
        return self.spans
