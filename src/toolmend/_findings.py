"""The collector the rules report problems into, shared by :mod:`toolmend._rules` and
:mod:`toolmend._block_rules` (a module of its own, so neither imports the other to reach it)."""

from __future__ import annotations

from typing import Any

from ._report import Problem
from .profiles import Profile

__all__ = ["Report"]


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
            **fields,
            "ids": ", ".join(ids),
        }
        self.problems.append(
            Problem(code, index, message, check.error.format(**values), check.rule, tuple(ids))
        )
