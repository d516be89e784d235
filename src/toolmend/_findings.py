"""The collector the rules report problems into, shared by :mod:`toolmend._rules` and
:mod:`toolmend._block_rules` (a module of its own, so neither imports the other to reach it)."""

from __future__ import annotations

import string
from typing import Any

from ._report import Problem
from .profiles import Profile

__all__ = ["Pending", "Report", "check_texts"]


class Report:
    """Collects problems, keeping only the codes the profile enables."""

    __slots__ = ("base", "checks", "problems")

    def __init__(self, profile: Profile, base: int = 0) -> None:
        self.checks = profile.checks
        self.base = base
        self.problems: list[Problem] = []

    def wants(self, code: str) -> bool:
        return code in self.checks

    def add(self, code: str, index: int, message: str, **fields: Any) -> None:
        check = self.checks.get(code)
        if check is None:
            return
        index += self.base
        ids = fields.get("ids", ())
        template = check.error
        names = _FIELDS.get(template, _UNREAD)
        if names is _UNREAD:
            names = _fields_of(template)
        if names is not None:  # the fields the text names, and only those (the common case)
            values: dict[str, Any] = {}
            for name in names:
                if name == "ids" or (name == "id" and "id" not in fields):
                    values[name] = ", ".join(ids)
                elif name in fields:
                    values[name] = fields[name]
                elif name == "index":
                    values[name] = index
                else:
                    values[name] = _DEFAULTS[name]
            text = template.format(**values)
            self.problems.append(Problem(code, index, message, text, check.rule, tuple(ids)))
            return
        values = {
            "index": index,
            "slot": 0,
            "id": ", ".join(ids),  # so a text naming {id} never reads "...: . Each ..."
            "length": 0,
            "role": "",
            "prev": "",
            "name": "",
            "property": "",
            "first": 0,
            "position": 0,
            **fields,
            "ids": ", ".join(ids),
        }
        self.problems.append(
            Problem(code, index, message, check.error.format(**values), check.rule, tuple(ids))
        )


class Pending(Report):
    """A :class:`Report` that keeps what it is told and writes the problems only when
    :meth:`build` is called: for a damaged range mended in one walk
    (:func:`toolmend._quickmend.mended_range`), whose problems are read only if the caller reads
    the repair's report (a :class:`Problem` costs about 3 us, its text formatted from the
    provider's template: more than the rest of a small range's repair). ``found`` holds each
    ``add`` of an enabled code as (code, index in the range, message, fields), in the order
    given; :meth:`build` makes exactly what :class:`Report` would have made from those calls.
    The caller runs :func:`check_texts` before it hands such a report out."""

    __slots__ = ("found",)

    def __init__(self, profile: Profile, base: int = 0) -> None:
        super().__init__(profile, base)
        self.found: list[tuple[str, int, str, dict[str, Any]]] = []

    def add(self, code: str, index: int, message: str, **fields: Any) -> None:
        if code in self.checks:
            self.found.append((code, index, message, fields))

    def made(self, index: int, problem: Problem) -> None:
        """Keep ``problem``, written already (at ``index`` in the range), in ``found``'s order
        (Mistral's id problems, made by a maker once per profile)."""
        self.found.append(("", index, "", {"": problem}))

    def build(self) -> list[Problem]:
        """The problems of every ``add`` and ``made`` kept, in ``found``'s order (a new list
        each call)."""
        report = Report.__new__(Report)
        report.checks, report.base, report.problems = self.checks, self.base, []
        for code, index, message, fields in self.found:
            if code:
                report.add(code, index, message, **fields)
            else:
                report.problems.append(fields[""])
        return report.problems


_DEFAULTS: dict[str, Any] = {
    "slot": 0,
    "length": 0,
    "role": "",
    "prev": "",
    "name": "",
    "property": "",
    "first": 0,
    "position": 0,
}
"""What :meth:`Report.add` writes for a field its caller did not give (``index``, ``id`` and
``ids`` aside)."""

_TRIAL: dict[str, Any] = {
    **{name: "x" * 64 if type(value) is str else value for name, value in _DEFAULTS.items()},
    "index": 0,
    "id": "x" * 64,
    "ids": "x" * 64,
}
"""Every field a report writes into an error text, for :func:`check_texts`' trial: each of the
type it has, a string long enough to index (a text may read ``{ids[0]}``)."""

_UNREAD: Any = object()
_FIELDS: dict[str, tuple[str, ...] | None] = {}
"""Error template -> the names of the fields it reads (None when it reads one by position,
which the general path formats, and raises on, as it always did)."""


def _fields_of(template: str) -> tuple[str, ...] | None:
    """The field names ``template`` reads (``{ids[0]}`` reads ``ids``), once per template: a
    judge reports thousands of problems, and building every field's value for each was most
    of the cost of a small range's judging."""
    names: list[str] = []
    try:
        for _, field, _, _ in string.Formatter().parse(template):
            if field is None:
                continue
            name = field.split(".", 1)[0].split("[", 1)[0]
            if not name.isidentifier():
                names = []
                raise ValueError(field)
            if name not in names:
                names.append(name)
    except ValueError:
        found = None
    else:
        found = tuple(names)
    if len(_FIELDS) >= 1024:
        _FIELDS.clear()
    _FIELDS[template] = found
    return found


_WRITTEN: dict[int, Profile] = {}
"""``id(profile)`` -> the profile whose error texts :func:`check_texts` has parsed."""


def check_texts(profile: Profile) -> None:
    """Parse each error text of ``profile`` once, so that a text that cannot be written
    (a user-made profile's ``"Tool call id was {id but"``) raises where the repair runs
    (inside a hook's ``try``, which then sends the original) and not where a report built
    on first read (``toolmend.Repair``) is read, after the request was sent. Once per
    profile object: a repair pays a dictionary lookup."""
    if _WRITTEN.get(id(profile)) is profile:
        return
    for check in profile.checks.values():
        # written once with every field a report can give (each the type it has): a text
        # that does not parse raises ValueError, one naming a field no report gives KeyError
        # (``{foo}``) or IndexError (``{0}``), as :meth:`Report.add` would
        check.error.format(**_TRIAL)
    if len(_WRITTEN) >= 256:
        _WRITTEN.clear()
    _WRITTEN[id(profile)] = profile
