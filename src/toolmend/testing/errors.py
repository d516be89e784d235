"""The HTTP 400 bodies of each provider, with the exact error text of the first problem.

A real API stops at the first thing it dislikes and answers with one message in its own JSON
envelope; clients and SDKs parse that envelope (``openai.BadRequestError.body``,
``anthropic.BadRequestError.body``, ``google.genai.errors.ClientError.message``), so the
envelope matters as much as the text. Envelopes, as seen in public reports (the sources of
each rule's text are listed in ``docs/providers.md``):

* OpenAI (and the default for other OpenAI-compatible servers):
  ``{"error": {"message", "type": "invalid_request_error", "param", "code"}}``.
* DeepSeek: the same keys, ``param`` null and ``code`` ``"invalid_request_error"``.
* Mistral: ``{"object": "error", "message", "type", "param": null, "code"}`` with type
  ``invalid_request_message_order`` and code ``"3230"`` for role-order errors,
  ``invalid_function_call`` / ``"3280"`` for tool call errors.
* Groq: ``{"error": {"message", "type": "invalid_request_error"}}``.
* vLLM (the ``hf-template`` profiles): ``{"error": {"message", "type": "BadRequestError",
  "param": null, "code": 400}}``.
* Anthropic: ``{"type": "error", "error": {"type": "invalid_request_error", "message"},
  "request_id"}``.
* Gemini: ``{"error": {"code": 400, "message", "status": "INVALID_ARGUMENT"}}``; field-level
  violations (lines starting ``* ``) are joined into one message, as Google does.
* Amazon Bedrock Converse: ``{"message"}``, with the exception name in the
  ``x-amzn-ErrorType`` header (``ValidationException``), as AWS's REST-JSON services do.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .._report import Problem

__all__ = ["error_body", "problem_body"]

Json = dict[str, Any]

CHAT = "chat"
RESPONSES = "responses"
MESSAGES = "messages"
GEMINI = "gemini"
CONVERSE = "converse"

_PAIRING = frozenset({"orphan_result", "missing_result", "unknown_result_id"})
_MISTRAL_ORDER = frozenset({"role_order", "last_role", "roles_not_alternating"})
_MISTRAL_CALLS = frozenset(
    {
        "call_id_format",
        "call_without_id",
        "result_without_id",
        "missing_result",
        "unknown_result_id",
        "orphan_result",
        "duplicate_result",
        "duplicate_call_id",
        "function_name_format",
    }
)
_QUOTED_PATH = re.compile(
    r"^(?:Invalid (?:type for |value for )?|Missing required parameter: )'([^' ]+)'"
)
_CODE_BY_WORDING = (
    ("string too long", "string_above_max_length"),
    ("empty array", "empty_array"),
    ("empty string", "empty_string"),
    ("Invalid type for", "invalid_type"),
    ("Missing required parameter", "missing_required_parameter"),
)


def _openai_param(api: str, problem: Problem) -> str | None:
    match = _QUOTED_PATH.match(problem.provider_error)
    if match and ("[" in match.group(1) or "." in match.group(1)):
        return match.group(1)
    if api == RESPONSES:
        return "input"
    if problem.code in _PAIRING:
        return f"messages.[{problem.index}].role"
    if problem.code == "result_without_id":
        return f"messages.[{problem.index}].tool_call_id"
    if problem.code in ("null_content", "invalid_role"):
        return (
            f"messages.[{problem.index}].{'content' if problem.code == 'null_content' else 'role'}"
        )
    return None


def _openai_code(message: str) -> str | None:
    for wording, code in _CODE_BY_WORDING:
        if wording in message:
            return code
    return None


def _gemini_message(problems: Sequence[Problem]) -> str:
    first = problems[0].provider_error
    if not first.startswith("* "):
        return first
    return "".join(p.provider_error for p in problems if p.provider_error.startswith("* "))


def problem_body(api: str, provider: str, problems: Sequence[Problem], request_id: str) -> Json:
    """The 400 body ``provider`` sends on ``api`` for a history with ``problems`` (not empty)."""
    first = problems[0]
    if api == MESSAGES:
        return error_body(api, provider, first.provider_error, request_id=request_id)
    if api == GEMINI:
        return error_body(api, provider, _gemini_message(problems))
    message = first.provider_error
    if provider == "mistral" and api == CHAT:
        if first.code in _MISTRAL_ORDER:
            kind, code = "invalid_request_message_order", "3230"
        elif first.code in _MISTRAL_CALLS:
            kind, code = "invalid_function_call", "3280"
        else:
            kind, code = "invalid_request_error", None
        return {"object": "error", "message": message, "type": kind, "param": None, "code": code}
    return error_body(
        api,
        provider,
        message,
        param=_openai_param(api, first),
        code=_openai_code(message),
    )


def error_body(
    api: str,
    provider: str,
    message: str,
    *,
    param: str | None = None,
    code: str | None = None,
    request_id: str = "req_toolmend",
) -> Json:
    """A 400 body in ``provider``'s envelope on ``api`` for any request error."""
    if api == MESSAGES:
        return {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": message},
            "request_id": request_id,
        }
    if api == GEMINI:
        return {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}
    if api == CONVERSE:
        return {"message": message}
    if api == CHAT:
        if provider.startswith("deepseek"):
            return {
                "error": {
                    "message": message,
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_request_error",
                }
            }
        if provider == "mistral":
            return {
                "object": "error",
                "message": message,
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            }
        if provider == "groq":
            return {"error": {"message": message, "type": "invalid_request_error"}}
        if provider.startswith("hf-template"):
            return {
                "error": {"message": message, "type": "BadRequestError", "param": None, "code": 400}
            }
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": param,
            "code": code,
        }
    }
