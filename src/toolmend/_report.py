"""What toolmend found and what it changed, and the errors it raises.

Every result toolmend hands back is a frozen dataclass, so a caller can keep, compare and log it
without worrying that a later call changes it. Exceptions share one root::

    ToolMendError                      every error toolmend raises on purpose
    ├── ToolChainError                 a history breaks a provider's rules (strict policy)
    ├── ToolLoopError                  the loop guard found a tool called over and over
    ├── TrimError (ValueError)         trim cannot fit the limits without splitting a group
    ├── UnknownNameError (ValueError)  an unknown provider or format name ("Did you mean ...?")
    └── InvalidHistoryError (ValueError)
        └── InvalidMessageError (TypeError)   a message toolmend cannot read, by index and field

Nothing in this module ever includes message content in a string: problems, changes and errors
name message indexes, tool call ids, function names and codes only, so they are safe to log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Change",
    "InvalidHistoryError",
    "InvalidMessageError",
    "Problem",
    "Repair",
    "ToolChainError",
    "ToolLoopError",
    "ToolMendError",
    "ToolmendError",
    "TrimError",
    "UnknownNameError",
    "logger",
    "shown_name",
]

logger = logging.getLogger("toolmend")
"""The one logger toolmend writes to. Records carry ids and codes, never message content."""


def shown_name(value: object, limit: int = 40) -> str:
    """A structural value (a role) as problems and changes quote it: its ``repr``, cut to
    ``limit`` characters, so a garbage string in a role field cannot carry a whole message
    into a log line."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 4]}...{text[-1]}"


@dataclass(frozen=True)
class Problem:
    """One way a history breaks a provider's rules.

    ``code`` is toolmend's name for the kind of problem, the same for every provider
    (``"orphan_result"``); ``rule`` is the provider rule it maps to (``"OA-TOOL-ORPHAN"``);
    ``provider_error`` is the exact text the provider answers with, so a log line can be matched
    against the 400 a user saw.
    """

    code: str
    index: int
    message: str
    provider_error: str
    rule: str = ""
    ids: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"message {self.index}: {self.code}: {self.message}"


@dataclass(frozen=True)
class Change:
    """One edit toolmend made. ``index`` is the position in the input history."""

    code: str
    index: int
    detail: str
    ids: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"message {self.index}: {self.code}: {self.detail}"


class _Deferred:
    """The default of :attr:`Repair.changes` and :attr:`Repair.problems`: ``()`` on the class
    (what the dataclass machinery reads as the field's default), and on an instance made by
    :meth:`Repair._deferred` (whose ``__dict__`` lacks both fields) both tuples, built once on
    first read and stored in the instance's ``__dict__``. A non-data descriptor (no
    ``__set__``): an instance made the normal way has both fields in its ``__dict__``, which
    wins, and never reaches it."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        if instance is None:
            return ()
        found = instance.__dict__
        later = found.get("_later")
        if later is not None:
            changes, problems = later[0]()
            found["changes"] = tuple(changes)
            found["problems"] = tuple(problems)
            found.pop("_later", None)  # (another thread may have built them as well)
        try:
            return found[self.name]
        except KeyError:
            raise AttributeError(self.name) from None


def _deferred(name: str) -> Any:
    """A :class:`_Deferred` typed as the field it stands for (``()`` on the class)."""
    return _Deferred(name)


def deferred_field(name: str) -> Any:
    """:func:`_deferred` for another frozen dataclass whose ``changes`` and ``problems`` may be
    built on first read the same way (``_later`` in the instance's ``__dict__``: the builder
    and whether it changes anything): ``toolmend._api.Mended``, a hook's result."""
    return _Deferred(name)


Builder = Callable[[], tuple[Sequence[Change], Sequence[Problem]]]
"""What :meth:`Repair._deferred` takes: a function building the changes and the problems."""


@dataclass(frozen=True)
class Repair:
    """The outcome of :func:`toolmend.repair`.

    ``messages`` is the very input object when nothing needed changing, otherwise a new list;
    ``changes`` lists every edit; ``problems_before`` (also ``problems``, its first name) what
    the input broke; ``problems_left`` what is still broken (empty after a successful repair, the
    input's problems under the report policy). Every result toolmend hands back names the two
    the same way: :class:`toolmend.integrations.langgraph.ThreadRepair`, the LiteLLM record.

    ``problems_left`` is judged on first access: a hook that only sends ``messages`` on does not
    pay for judging the repaired history a second time.

    ``changes`` and ``problems`` may be built on first read too: a repair that touches nearly
    every message (Mistral's call ids, Gemini's result names) reports a :class:`Change` and one
    or two :class:`Problem` objects a message, which cost more than finding the edits and making
    them; a caller that sends ``messages`` on and asks only ``changed`` never builds them
    (issue 32). Such a result is made by the private :meth:`_deferred` from the repaired list
    and a builder; both tuples are built together, once, on the first read of ``changes``,
    ``problems`` or ``problems_before`` (``==``, ``repr``, :func:`dataclasses.replace`,
    :func:`dataclasses.asdict` and pickling read them), and are then the same as those of a
    result built eagerly. ``changed`` does not build them.
    """

    messages: Any
    changes: tuple[Change, ...] = _deferred("changes")
    problems: tuple[Problem, ...] = _deferred("problems")
    left: tuple[Problem, ...] | Callable[[], tuple[Problem, ...]] = field(
        default=(), repr=False, compare=False
    )
    """What is still broken, or how to find out (see ``problems_left``)."""

    @classmethod
    def _deferred(
        cls,
        messages: Any,
        changed: bool,
        build: Builder,
        left: tuple[Problem, ...] | Callable[[], tuple[Problem, ...]] = (),
    ) -> Repair:
        """A result whose ``changes`` and ``problems`` are ``build()``'s, built on first read;
        ``changed`` is whether ``build`` makes any change (answered without building). ``build``
        must give the same lists whenever it is called (it may run twice under threads)."""
        made = object.__new__(cls)
        made.__dict__.update(messages=messages, left=left, _later=(build, changed))
        return made

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (and copied) as a result built eagerly: the changes and problems built, the
        problems left judged (a builder or a judge is no data)."""
        return (type(self), (self.messages, self.changes, self.problems, self.problems_left))

    @property
    def problems_left(self) -> tuple[Problem, ...]:
        """What the repaired history still breaks, judged once, on first access."""
        left = self.left
        if callable(left):
            left = left()
            object.__setattr__(self, "left", left)
        return left

    @property
    def problems_before(self) -> tuple[Problem, ...]:
        """What the input broke, before the repair: the same tuple as ``problems``."""
        return self.problems

    @property
    def changed(self) -> bool:
        """Whether ``messages`` differs from the input."""
        later = self.__dict__.get("_later")
        if later is not None:
            return bool(later[1])
        return bool(self.changes)


class ToolMendError(Exception):
    """The root of every error toolmend raises on purpose."""


ToolmendError = ToolMendError
"""The name :class:`ToolMendError` had before 0.2.0, kept so ``except toolmend.ToolmendError``
goes on working; the same class, spelt like ``ToolMend``, ``ToolMendHistory`` and the rest."""


class ToolChainError(ToolMendError):
    """A history breaks the provider's tool-call rules and the policy says not to repair it.

    ``problems`` holds every :class:`Problem`; the message names each one's index and code.
    """

    def __init__(self, message: str = "", *, problems: Sequence[Problem] = ()) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        if not message:
            listed = "; ".join(f"message {p.index}: {p.code}" for p in self.problems[:10])
            more = f" (+{len(self.problems) - 10} more)" if len(self.problems) > 10 else ""
            message = f"history breaks the provider's tool-call rules: {listed}{more}"
        super().__init__(message)


class ToolLoopError(ToolMendError):
    """The loop guard found a tool called over and over, and was asked to raise."""

    def __init__(self, message: str = "", *, problems: Sequence[Problem] = ()) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__(message or "; ".join(p.message for p in self.problems))


class TrimError(ToolMendError, ValueError):
    """:func:`toolmend.trim` cannot meet the limits without returning an invalid history (the
    protected prefix or the newest tool-call group alone is too big), or a limit is not a
    whole number. A ``ValueError`` too: the limits asked for are what cannot be met."""


class UnknownNameError(ToolMendError, ValueError):
    """An unknown provider or format name. A ``ValueError`` too, since it is a bad argument."""


class InvalidHistoryError(ToolMendError, ValueError):
    """The history itself is not something toolmend can read (not a list, say).

    A ``ValueError`` so that code already catching bad-argument errors keeps working.
    """


class InvalidMessageError(InvalidHistoryError, TypeError):
    """One message cannot be read: the wrong type, or a field of the wrong type.

    Also a ``TypeError``, which is what Python raises for a value of the wrong type. ``index``
    and ``field`` say where.
    """

    def __init__(self, index: int, field: str, expected: str, got: object) -> None:
        self.index = index
        self.field = field
        self.expected = expected
        self.got = got if isinstance(got, type) else type(got)
        where = f"message {index}" + (f", field {field!r}" if field else "")
        super().__init__(f"{where}: expected {expected}, got {self.got.__name__}")

    def shifted(self, offset: int) -> InvalidMessageError:
        """The same error for a message ``offset`` places further into the caller's list."""
        return InvalidMessageError(self.index + offset, self.field, self.expected, self.got)
