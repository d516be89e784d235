"""What every hook that sees the provider's answer does after a 400 about tool history.

A hook sends the history :func:`toolmend.integrations.hooks.mend` handed it. When the provider
still refuses it with HTTP 400 and its message is about the history's tool calls, the hook asks
:func:`retry_history` for a history to send **once** more (:func:`toolmend.rescue`: the repair
of a rule toolmend knows but the profile did not ask for, or the tool exchanges written as
text). :func:`retry_history` answers ``None`` (the hook re-raises the provider's error as it
came) when:

* the hook was built with ``rescue=False``, or ``TOOLMEND_RESCUE`` is ``0`` (``false``, ``no``,
  ``off``) in the environment;
* the error is not an HTTP 400 from the provider (:func:`provider_error` reads the status and
  the message off the SDK's exception: openai, anthropic, google-genai, LiteLLM and the
  frameworks built on them), or its message is about something no rewrite cures (context
  length, content policy, authentication, rate limits) or is not about tool history at all;
* nothing can be rewritten, or toolmend itself fails (logged with its traceback: the caller
  gets the provider's error, never a toolmend one).

A rescue writes one WARNING line on logger ``toolmend``::

    toolmend rescued openai.Completions.create for openai after a 400: flattened (openai);
    flattened_tool_traffic@1[call_1] ...; provider error "Tool%20messages%20are..."

(one line: the hook, the provider, the rule or ``flattened`` and the profile that holds it,
the change codes with message indexes and ids, and the provider's message cut at
:data:`ERROR_LIMIT` characters and escaped by :func:`toolmend._escape.log`; never content),
and reports a :class:`~toolmend.integrations.telemetry.HookReport` with outcome ``rescued``
and the rule. ``toolmend stats`` counts these lines by provider error, which names the rule
toolmend lacks: ``docs/observability.md`` says how to send one as a report.
"""

from __future__ import annotations

import ast
import json
import logging
import os
from collections.abc import Mapping, Sequence
from time import perf_counter
from typing import Any

from toolmend import _escape as escape
from toolmend._error_texts import MAX_TEXT
from toolmend._report import InvalidHistoryError
from toolmend._rescue import Rescue, rescue

from . import telemetry
from .hooks import change_codes, log_source

__all__ = ["ENV_RESCUE", "ERROR_LIMIT", "enabled", "provider_error", "retry_history"]

logger = logging.getLogger("toolmend")

ENV_RESCUE = "TOOLMEND_RESCUE"
"""``0`` (``false``, ``no``, ``off``) turns the rescue off in every hook."""

ERROR_LIMIT = 300
"""The most characters of the provider's message a log line quotes (before escaping)."""

_OFF = frozenset({"0", "false", "no", "off"})
_STATUS_FIELDS = ("status_code", "code", "status")


def enabled(rescue: bool = True) -> bool:
    """Whether a hook built with ``rescue`` retries: ``rescue`` and not ``TOOLMEND_RESCUE=0``."""
    return rescue and os.environ.get(ENV_RESCUE, "").strip().lower() not in _OFF


def provider_error(error: BaseException) -> tuple[int, str] | None:
    """``(HTTP status, provider's message)`` of an SDK's API error, or ``None`` for an error
    that carries no HTTP status (a connection error, a toolmend error, a bug).

    Read by attribute, so it needs no SDK: ``status_code`` (openai, anthropic, LiteLLM),
    ``code`` (google-genai), the ``response``'s status, or botocore's ``response`` mapping
    (``ResponseMetadata.HTTPStatusCode``: boto3's ``ClientError``, which langchain-aws raises);
    the message from the error body (``{"error": {"message"}}``, ``{"message"}``, ...), else
    botocore's ``Error.Message``, else the error's ``message``, else its text. LiteLLM writes
    an Anthropic or Gemini body into its text (``litellm.BadRequestError: AnthropicException -
    {"type": "error", "error": {...}}``, or ``... - b'{...}'``, the repr of a streamed body's
    bytes) and keeps no ``body``: the message is read out of that JSON when it parses (facts:
    ``/work/shared/research/rescue.md``).

    An error without a status is read through what it was raised from (``__cause__``, a few
    links): a framework's own error around the SDK's (LangChain's
    ``ChatGoogleGenerativeAIError`` raised from google-genai's ``ClientError``)."""
    link: BaseException | None = error
    for _ in range(_CAUSES):
        if link is None:
            return None
        status = _status(link)
        if status is not None:
            return status, _message(link)
        link = link.__cause__
    return None


_CAUSES = 4
"""How many errors :func:`provider_error` reads: the error and what it was raised from, and so
on (an SDK's error is wrapped once or twice)."""


def _status(error: BaseException) -> int | None:
    for name in _STATUS_FIELDS:
        value = getattr(error, name, None)
        if type(value) is int and 100 <= value <= 599:
            return value
    response = getattr(error, "response", None)
    value = getattr(response, "status_code", None)
    if isinstance(response, Mapping):  # botocore: {"ResponseMetadata": {"HTTPStatusCode"}}
        metadata = response.get("ResponseMetadata")
        value = metadata.get("HTTPStatusCode") if isinstance(metadata, Mapping) else None
    return value if type(value) is int and 100 <= value <= 599 else None


def _message(error: BaseException) -> str:
    response = getattr(error, "response", None)
    botocore = response.get("Error") if isinstance(response, Mapping) else None
    for body in (getattr(error, "body", None), getattr(error, "details", None), botocore):
        found = _body_message(body) or (body.get("Message") if isinstance(body, Mapping) else None)
        if isinstance(found, str) and found:
            return found
    message = getattr(error, "message", None)
    if isinstance(message, bytes | bytearray):  # a provider's error LiteLLM has not mapped
        message = bytes(message).decode("utf-8", "replace")
    text = message if isinstance(message, str) and message else str(error)
    return _embedded_message(text) or text


_EMBEDDED = " - "
"""Where LiteLLM's text of a provider's error starts the provider's own body."""
_BODY_STARTS = ("{", "b'{", 'b"{')
"""How that body starts: JSON, or the repr of its bytes (a streamed call's)."""


def _embedded_message(text: str) -> str | None:
    """The message of a provider's JSON body that ``text`` is, or that it holds after `` - ``
    (LiteLLM's ``AnthropicException - {...}``, ``... - b'{...}'``), if that body parses (at
    most :data:`toolmend._error_texts.MAX_TEXT` characters are parsed)."""
    if text.startswith(_BODY_STARTS):
        start = 0
    else:
        found = [at for at in (text.find(_EMBEDDED + s) for s in _BODY_STARTS) if at >= 0]
        if not found:
            return None
        start = min(found) + len(_EMBEDDED)
    if len(text) - start > MAX_TEXT:
        return None
    try:
        if text[start] == "b":  # the repr of the body's bytes, to the end of the text
            raw = ast.literal_eval(text[start:])
            body = json.loads(raw) if isinstance(raw, bytes) else None
        else:
            body, _ = json.JSONDecoder().raw_decode(text, start)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        # not JSON, or nested past the interpreter's limit
        return None
    return _body_message(body)


def _body_message(body: object) -> str | None:
    """The message of an error body in any provider's envelope (two levels deep at most)."""
    for _ in range(3):
        if not isinstance(body, Mapping):
            return None
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
        body = body.get("error")
    return None


def retry_history(
    history: Sequence[Any],
    error: BaseException,
    *,
    provider: str,
    source: str,
    format: str | None = None,
    model: str | None = None,
    rescue_on: bool = True,
) -> Rescue | None:
    """The history to send once more after ``error`` refused ``history`` (see the module
    docstring), logged and reported; ``None`` when the hook must re-raise ``error``.

    ``history`` is what the hook sent (the repaired history), ``provider`` the profile it was
    held to, ``source`` the hook's name for the log line, ``rescue_on`` the hook's
    ``rescue=`` option. Never raises."""
    if not enabled(rescue_on):
        return None
    try:
        found = provider_error(error)
        if found is None or found[0] != 400:
            return None
        started = perf_counter()
        rescued = rescue(history, found[1], provider=provider, format=format, model=model)
        if rescued is None:
            return None
        _log(source, provider, rescued)
        if telemetry.is_active():
            telemetry.record(
                telemetry.HookReport(
                    telemetry.hook_name(source),
                    provider,
                    "rescued",
                    telemetry.codes_of(rescued.changes),
                    duration=perf_counter() - started,
                    rule=rescued.rule,
                )
            )
        return rescued
    except InvalidHistoryError:  # the caller's data, which the hook already said it sent as is
        return None
    except Exception:
        logger.exception(
            "toolmend failed while rescuing %s after a 400; the provider's error was raised",
            log_source(source),
        )
        return None


def _log(source: str, provider: str, rescued: Rescue) -> None:
    if not logger.isEnabledFor(logging.WARNING):
        return
    said = rescued.error[:ERROR_LIMIT] + ("..." if len(rescued.error) > ERROR_LIMIT else "")
    logger.warning(
        'toolmend rescued %s for %s after a 400: %s (%s); %s; provider error "%s"',
        log_source(source),
        escape.log(provider),
        rescued.rule,
        escape.log(rescued.profile),
        " ".join(change_codes(rescued.changes)) or "-",
        escape.log(said),
    )
