"""Read a provider's 400: is it about the history's tool calls, and which known rule does it name?

A provider stops at the first thing it dislikes and says so in one message. Two questions decide
whether toolmend may retry a request it passed (:mod:`toolmend._rescue`):

* :func:`about_tool_history`: the message speaks of tool calls or results (``tool_use``,
  ``role 'tool'``, ``function response``, ``toolResult``, ...) or is the error text of a rule a
  profile holds, and it is none of the errors a retry cannot cure: context length, content
  policy, authentication, permission, rate limits, quota, billing, overload. Those are matched
  first and win, so a context-length error that quotes ``tool_calls`` is never retried.
* :func:`known_rules`: the profile rules (:class:`toolmend.profiles.Check`) whose error text the
  message holds, with the fields it quotes (the message index, the call ids). A rule's text is
  a ``str.format`` template; its literal pieces must all appear, in order, with at most
  :data:`_GAP` characters for each field between them. Matching is a bounded number of
  ``str.find`` calls per rule over a message cut at :data:`MAX_TEXT` characters, so a hostile
  message costs linear time (no backtracking pattern is built from a template).

Rules whose text is too short or too generic to name one rule (``Request contains an invalid
argument.``, a Python ``TypeError`` text seen through a converter) are not matched: see
:data:`_GENERIC`.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from .profiles import PROFILES

__all__ = ["MAX_TEXT", "KnownRule", "about_tool_history", "known_rules", "quoted_ids"]

MAX_TEXT = 4096
"""How much of a provider's error message is read (a message is a sentence or two; a longer one
quotes the request back, and its tail names nothing more)."""

_GAP = 300
"""The longest a quoted field may be (an index, an id, a list of ids)."""

_STEM = 24
"""The shortest start of a rule's closing literal piece that may stand for all of it: its first
sentence, at least this long (see :func:`_match_at`). Six characters (``.conte``) let
``messages.2.content.0.image.source.base64: image exceeds 5 MB maximum`` name Bedrock's
``messages.{index}.content: Conversation blocks and tool result blocks ...`` rule, and
``: unexpected `tool_use_id``` name Anthropic's ``tool_result`` rule in an error about
``advisor_tool_result`` blocks (``tests/data/provider_errors.json``)."""

_MIN_LITERAL = 24
"""A rule's text must hold at least this many literal characters to be matched on its own."""

_GENERIC = frozenset(
    {
        "Request contains an invalid argument.",  # Gemini says it for many things
        "Invalid content type",  # a chat template's, for any content it cannot render
        "'dict' object has no attribute 'strip'",  # a Python TypeError through a converter
        "list object has no element 0",  # a template indexing an empty list, any list
        'can only concatenate str (not "NoneType") to str',  # any None in any template
        "'dict object' has no attribute 'function'",  # any dict a template reads as a call
    }
)
"""Error texts of real rules that say too little to name one (each appears for other causes)."""

_NOT_CURABLE = re.compile(
    r"context[ _-]?(?:length|window)|maximum context|too many tokens|prompt is too long"
    r"|input is too long|exceeds? the (?:maximum|max) (?:number of )?tokens|token limit"
    r"|content[ _-]?(?:policy|filter|management)|safety|responsible ?ai|flagged|moderation"
    r"|api[ _-]?key|authenticat|unauthori[sz]ed|permission|forbidden|credential"
    r"|rate[ _-]?limit|quota|too many requests|billing|credit balance|insufficient[ _]funds"
    r"|overloaded|capacity"
    r"|\btools?[.\[]\d|input_schema|function_declarations|tool[ _-]?choice"
    r"|n[o']t support (?:tools\b|tool use\b|function calling)"
    r"|failed_generation|tool_use_failed"
    r"|image(?:\.source| exceeds| dimensions)",
    re.IGNORECASE,
)
"""Errors a rewritten history cannot cure: never retried (checked before anything else).

Besides the limits of the account and the model (context length, content policy,
authentication, permission, rate limits, quota, billing, overload), these are errors about the
request's tool *definitions* (``tools.17.custom.input_schema: JSON schema is invalid ... Learn
more about tool use``, ``tools[0].function.name``, Gemini's ``function_declarations``) and its
``tool_choice``, a model or an API that takes no tools (``This model doesn't support tool use
in streaming mode.``), a call the model itself failed to write (Groq's ``tool_use_failed``,
whose ``failed_generation`` quotes ``tool_calls``) and an image too large (which stays too large
when the tool result holding it is written as text). A rewritten history changes none of them.
The real texts are in ``tests/data/provider_errors.json``."""

_TOOL_WORDS = re.compile(
    r"tool[ _-]?(?:use|result|call|calls|call_id|_use_id|message|output|response)s?\b"
    r"|tooluse|toolresult|toolUseId|role:? ?['\"]?tool['\"]?"
    r"|function[ _-]?(?:call|response|result|output)s?\b|functionCall|functionResponse"
    r"|\bcall_id\b|tool_calls?",
    re.IGNORECASE,
)
"""Words of an error about tool calls and results, in every provider's spelling."""

_ID = re.compile(r"[A-Za-z0-9_\-.:]{3,}")
"""What a quoted call id looks like in an error message (a token; looked up in the history)."""


@dataclass(frozen=True)
class KnownRule:
    """A profile rule an error message names."""

    code: str
    """The problem code of the rule (``missing_result``)."""
    profile: str
    """The profile that holds it (the first one by :data:`toolmend.profiles.PROFILES` order that
    has this code for this text)."""
    fields: Mapping[str, str]
    """The fields the message quoted (``index``, ``id``, ``ids``, ...), as written in it."""


@dataclass(frozen=True)
class _Template:
    holders: tuple[tuple[str, str], ...]
    """Each ``(code, profile)`` whose rule has this text, in :data:`PROFILES` order: one text
    stands for several problems when the provider says the same for each (Gemini's ``number of
    function response parts`` for a missing, an unknown and a duplicate response)."""
    literals: tuple[str, ...]
    """The literal pieces, in order (empty ones dropped)."""
    fields: tuple[str | None, ...]
    """The field after each literal piece (``None`` when none follows)."""
    leading: str | None
    """The field before the first literal piece, if the text starts with one."""


def _parse(holders: tuple[tuple[str, str], ...], template: str) -> _Template | None:
    literals: list[str] = []
    fields: list[str | None] = []
    leading: str | None = None
    try:
        pieces = list(string.Formatter().parse(template))
    except ValueError:
        return None
    for literal, field, _spec, _conversion in pieces:
        if literal:
            literals.append(literal)
            fields.append(field or None)
        elif field:
            if fields:
                fields[-1] = fields[-1] or field
            else:
                leading = field
    if sum(map(len, literals)) < _MIN_LITERAL:
        return None
    return _Template(holders, tuple(literals), tuple(fields), leading)


@functools.lru_cache(maxsize=1)
def _templates() -> tuple[_Template, ...]:
    """Every rule's text, each once, with every code that has it (the first profile that holds
    a code for that text names it)."""
    holders: dict[str, dict[str, str]] = {}
    for name, profile in PROFILES.items():
        for code, rule in {**profile.checks, **profile.strict_checks}.items():
            text = rule.error.strip()
            if text and text not in _GENERIC:
                holders.setdefault(text, {}).setdefault(code, name)
    found = (_parse(tuple(codes.items()), text) for text, codes in holders.items())
    return tuple(template for template in found if template is not None)


def _match(template: _Template, text: str) -> dict[str, str] | None:
    """The fields ``text`` quotes if it holds ``template``'s pieces in order, else ``None``."""
    first = template.literals[0]
    start = text.find(first)
    tries = 0
    while start >= 0 and tries < 4:
        fields = _match_at(template, text, start)
        if fields is not None:
            return fields
        start = text.find(first, start + 1)
        tries += 1
    return None


def _match_at(template: _Template, text: str, start: int) -> dict[str, str] | None:
    fields: dict[str, str] = {}
    if template.leading:
        fields[template.leading] = _tail(text[max(0, start - _GAP) : start], reverse=True)
    end = start + len(template.literals[0])
    for position in range(1, len(template.literals)):
        literal = template.literals[position]
        found = text.find(literal, end, end + _GAP + len(literal))
        if found < 0 and position == len(template.literals) - 1 and len(literal) > _STEM:
            # the closing sentences, which providers reword and gateways cut: the first will do
            cut = literal.find(". ", _STEM)
            literal = literal if cut < 0 else literal[: cut + 1]
            found = text.find(literal, end, end + _GAP + len(literal))
        if found < 0:
            return None
        field = template.fields[position - 1]
        if field is None and found != end:
            return None
        if field is not None:
            fields[field] = text[end:found]
        end = found + len(literal)
    last = template.fields[-1]
    if last is not None:
        fields[last] = _tail(text[end : end + _GAP])
    return fields


def _tail(text: str, *, reverse: bool = False) -> str:
    """The field at the end of a rule's text: up to the end of its sentence."""
    if reverse:
        return text.rsplit(" ", 1)[-1]
    return re.split(r"(?:\. |\.$|\n)", text, maxsplit=1)[0]


def known_rules(text: str) -> list[KnownRule]:
    """The profile rules ``text`` (a provider's error message) names, longest text first."""
    text = text[:MAX_TEXT]
    found: list[tuple[int, KnownRule]] = []
    for template in _templates():
        fields = _match(template, text)
        if fields is not None:
            size = sum(map(len, template.literals))
            quoted = MappingProxyType(fields)
            found.extend((size, KnownRule(code, name, quoted)) for code, name in template.holders)
    found.sort(key=lambda pair: -pair[0])
    return [rule for _, rule in found]


def about_tool_history(text: str) -> bool:
    """Whether ``text`` (a provider's 400 message) is about the history's tool calls or results
    or names a rule toolmend knows, and is not an error no rewrite can cure."""
    text = text[:MAX_TEXT]
    if not text or _NOT_CURABLE.search(text):
        return False
    return bool(_TOOL_WORDS.search(text)) or bool(known_rules(text))


def quoted_ids(text: str, ids: Mapping[str, object]) -> list[str]:
    """The tokens of ``text`` that are keys of ``ids`` (the history's call ids), in order."""
    found: list[str] = []
    for token in _ID.findall(text[:MAX_TEXT]):
        for candidate in (token, token.rstrip(".:"), token.strip("`'\"")):
            if candidate in ids and candidate not in found:
                found.append(candidate)
                break
    return found
