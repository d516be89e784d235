"""The problem texts the rules write (:class:`toolmend._findings.Report`): a text is written from
the fields its template names, and only those (a judge reports thousands of problems), which
must give exactly the text written from every field."""

from __future__ import annotations

from typing import Any

import pytest

from toolmend import _findings
from toolmend._findings import Report
from toolmend.profiles import PROFILES

_FIELD_SETS: list[dict[str, Any]] = [
    {},
    {"ids": ("call_a", "call_b")},
    {"id": "call_x", "ids": ("call_y",)},
    {
        "slot": 3,
        "role": "tool",
        "prev": "user",
        "name": "get_weather",
        "property": "reasoning_content",
        "length": 41,
        "first": 2,
        "ids": ("call_q",),
    },
    {"index": 99},
]


def _written(profile: Any, code: str, fields: dict[str, Any], general: bool) -> Any:
    report = Report(profile, 5)
    if general:  # the template read as one that names a field by position: every field built
        _findings._FIELDS[profile.checks[code].error] = None
    try:
        report.add(code, 3, "what happened", **fields)
    except Exception as error:  # (a template naming a field no caller gives: the same error)
        return type(error)
    finally:
        _findings._FIELDS.clear()
    return report.problems


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_a_text_written_from_its_fields_is_the_text_written_from_all(name: str) -> None:
    profile = PROFILES[name]
    for code in profile.checks:
        for fields in _FIELD_SETS:
            assert _written(profile, code, fields, False) == _written(profile, code, fields, True)


def test_a_template_with_escaped_braces_or_a_positional_field() -> None:
    assert _findings._fields_of("literal {{braces}} and {id}") == ("id",)
    assert _findings._fields_of("{ids[0]} then {id!r:>5}") == ("ids", "id")
    assert _findings._fields_of("by position: {}") is None
    assert _findings._fields_of("plain") == ()
