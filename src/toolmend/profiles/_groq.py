"""Groq."""

from __future__ import annotations

from ._base import ISSUE_20, Check, Profile, checks, shape_checks
from ._openai import OPENAI_MISSING, OPENAI_ORPHAN

# --- Groq -----------------------------------------------------------------------------------------

_GROQ_UNSUPPORTED = Check(
    "GQ-UNSUPPORTED-PROPERTY",
    "'messages.{index}' : for 'role:{role}' the following must be satisfied"
    "[('messages.{index}' : property '{property}' is unsupported)]",
    "https://github.com/tashfeenahmed/freellmapi/issues/1070",
)

_GROQ_SCHEMA = "Groq's per-role schema; " + ISSUE_20
_GROQ_TOOL_CONTENT = Check(
    "GQ-TOOL-CONTENT-NOT-STRING",
    "'messages.{index}' : for 'role:tool' the following must be satisfied"
    "[('messages.{index}.content' : value must be a string)]",
    "https://github.com/CherryHQ/cherry-studio/issues/3307",
)

GROQ = Profile(
    name="groq",
    pairing="none",
    checks=checks(
        unsupported_property=_GROQ_UNSUPPORTED,
        function_call_null=Check(
            "GQ-UNSUPPORTED-PROPERTY",
            _GROQ_UNSUPPORTED.error,
            "Groq's per-role schema; explicit null function_call next to tool_calls",
            status="inferred",
        ),
        result_without_id=Check(
            "GQ-TOOL-NO-ID",
            "'messages.{index}' : for 'role:tool' the following must be satisfied"
            "[('messages.{index}.tool_call_id' : property 'tool_call_id' is missing)]",
            "https://github.com/hackclub/ai/issues/22",
        ),
        tool_content_not_string=_GROQ_TOOL_CONTENT,
        content_null=_GROQ_TOOL_CONTENT,
        **shape_checks(
            Check(
                "GQ-TOOL-CALL-SHAPE",
                "'messages.{index}' : for 'role:assistant' the following must be satisfied"
                "[('messages.{index}.tool_calls.{slot}.{property}' : property '{property}' is "
                "missing)]",
                _GROQ_SCHEMA,
                status="inferred",
            ),
            Check(
                "GQ-TOOL-CALL-ARGUMENTS",
                "'messages.{index}' : for 'role:assistant' the following must be satisfied"
                "[('messages.{index}.tool_calls.{slot}.function.arguments' : value must be a "
                "string)]",
                _GROQ_SCHEMA,
                status="inferred",
            ),
            Check(
                "GQ-EMPTY-TOOL-CALLS",
                "'messages.{index}' : for 'role:assistant' the following must be satisfied"
                "[('messages.{index}.tool_calls' : minimum number of items is 1)]",
                _GROQ_SCHEMA,
                status="inferred",
            ),
        ),
    ),
    content_string_kinds=frozenset({"tool"}),
    strict_checks=checks(orphan_result=OPENAI_ORPHAN, missing_result=OPENAI_MISSING),
)
