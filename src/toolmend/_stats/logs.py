"""Read log files and count what toolmend's hooks did.

The hooks write one line per request they changed or could not judge clean, on logger
``toolmend`` (see ``integrations/hooks.py``: ``mend``, ``change_codes``, ``problem_codes``):

* ``toolmend repaired SOURCE for PROVIDER: code@index[ids] ...`` (``; N problem(s) left:
  code@index ...`` when the repair left some),
* ``toolmend found N problem(s) in SOURCE for PROVIDER and changed nothing: code@index ...``,
* ``toolmend loop guard on SOURCE for PROVIDER: code@index ...``,
* ``toolmend cannot read the history on SOURCE for PROVIDER (...)``: sent unrepaired,
* ``toolmend failed on SOURCE ...; ...`` and ``toolmend's LiteLLM hook failed on SOURCE; ...``:
  a toolmend bug, logged with its traceback; the original was sent,
* ``toolmend rescued SOURCE for PROVIDER after a 400: RULE (PROFILE); code@index[ids] ...;
  provider error "ESCAPED"``: the provider refused the request with a 400 about its tool
  history and the hook sent it once more (``integrations/rescue.py``); counted by hook, rule
  and profile, and by the provider's error (:func:`error_shape`), which names the rule toolmend
  lacks when RULE is ``flattened``,

plus the OpenAI Agents SDK hooks' variants (``for PROFILE (session rules)``, problems found
``(in the Chat Completions conversion)``), the messages a LangChain history store refused
(``toolmend rejected ... (message N of add_messages): ...``), and a few errors outside any one
request (a hook that could not be built, a telemetry sink that failed, a failure on a stored
history or on messages being written, a write-back of a LangChain history that failed, which
send nothing).

A line is recognised wherever the message sits in it, so any plain logging format works
(``%(asctime)s %(levelname)s %(name)s: %(message)s``, LiteLLM proxy's prefixes, a
``docker compose`` service prefix). A line holding a JSON object is read as JSON-formatted
logging: the message is its ``message`` (python-json-logger, LiteLLM's ``JSON_LOGS``),
``msg`` or ``event`` (structlog); a Docker ``json-file`` record's ``log`` is read as the line
it wraps. The lines of a traceback printed after a failure line are skipped, so nothing in a
stack frame or an exception's text is counted. Every other line is ignored.

SOURCE may carry the model in parentheses (``litellm.acompletion(gpt-4o)``): requests are
counted by the hook's name without it, as :func:`toolmend.integrations.telemetry.hook_name`
labels its metrics. Only codes and counts are kept: the indexes and the ids in brackets are
read past, never stored.

The hooks write every value they did not make (ids, the model, the provider) escaped
(:func:`toolmend._escape.log`), so no id can end a field, a list or a line. The reader is
strict in turn: a line counts only when it is well formed (a repair names at least one change,
each list of codes is as long as its count says), each pattern is tried once, where its fixed
head first occurs, and no part of one can backtrack over the line: a line is read in time
linear in its length. Hook and provider names are kept as :func:`toolmend._escape.terminal`
shows them, so whatever prints them prints no control character.

A line from a hook in :data:`HEALS` is a stored history healed apart from the request it belongs
to (an Agents SDK session, a LangGraph thread, a google-genai chat's history, a LangChain agent's
state): its changes are counted as ``healed``, never as a request, as docs/observability.md
counts requests (the request itself is counted by the hook that sends it).
"""

from __future__ import annotations

import gzip
import json
import re
import sys
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import BinaryIO, Final, Literal

from .. import _escape as escape

__all__ = [
    "ERRORS",
    "FAILURE_REASONS",
    "HEALS",
    "Event",
    "Kind",
    "Stats",
    "Table",
    "UnreadableLogError",
    "error_shape",
    "parse_message",
    "read_files",
]

UNKNOWN: Final = "unknown"
"""The provider of a line that names none (as the telemetry reports label it)."""

Kind = Literal[
    "repaired",
    "problems_left",
    "loop",
    "failed",
    "unreadable",
    "over_budget",
    "refused",
    "error",
    "healed",
    "stored_problems",
    "rescued",
]


@dataclass(frozen=True, slots=True)
class Event:
    """One toolmend line, as counted: codes, names and counts only."""

    kind: Kind
    hook: str
    """The hook's name without the model (``litellm.acompletion``); the label for ``error``."""
    provider: str = UNKNOWN
    codes: tuple[str, ...] = ()
    """The change codes (``repaired``), the problem codes (``problems_left``) or the loop
    guard's codes (``loop``), one per change or problem, in order."""
    left: tuple[str, ...] = ()
    """The codes of the problems a repair left (``repaired`` only)."""
    rule: str = ""
    """The rule a rescue applied (a problem code, or ``flattened``; ``rescued`` only)."""
    profile: str = ""
    """The profile that holds that rule (``rescued`` only)."""
    error: str = ""
    """The provider's error, as :func:`error_shape` gives it (``rescued`` only)."""


# --- the lines ---------------------------------------------------------------------------------
#
# Every value a hook did not make (ids, the model, the provider) is written escaped by
# toolmend._escape.log: it holds no whitespace, control character or separator. So the reader
# is strict: a line counts only when it is well formed, and each pattern is tried at one place
# (the first occurrence of its fixed head), with no part that can backtrack over the line:
# a crafted line is read in time linear in its length.

_SOURCE = r"(?P<source>[^\s(;]+(?:\([^\s()]*\)|\(default model\))?)"
"""A hook's log name, with the model it was called for in parentheses (escaped, so it holds no
space or parenthesis; ``(default model)`` is the Agents SDK's own)."""
_PROVIDER = r"(?P<provider>[^\s:;()]+)"
_FOR = rf"(?: for {_PROVIDER})?"
_NOTE = r"(?: \([^()]*\))?"
"""What the Agents SDK adds after the provider: ``(session rules)``, ``(in the Chat
Completions conversion)``."""

_REPAIRED: Final = re.compile(rf"toolmend repaired {_SOURCE} for {_PROVIDER}{_NOTE}: ")
_LEFT: Final = re.compile(r"; (\d+) problem\(s\) left: ")
_FOUND: Final = re.compile(
    rf"toolmend found (?P<count>\d+) problem\(s\) in {_SOURCE}{_FOR}{_NOTE} "
    r"(?:and changed nothing|that the items cannot mend): "
)
_LOOP: Final = re.compile(rf"toolmend loop guard on {_SOURCE} for {_PROVIDER}: ")
_UNREADABLE: Final = re.compile(
    rf"toolmend cannot read the (?:history|items) on {_SOURCE}{_FOR} \("
)
_FAILED: Final = re.compile(
    r"toolmend(?:'s LiteLLM hook)? failed on "
    rf"(?P<source>a LangChain history read|[^\s(;]+(?:\([^\s()]*\))?){_FOR}; "
)
_OVER_CAP: Final = re.compile(
    rf"toolmend did not repair {_SOURCE} for {_PROVIDER}: over its cap of \d+ items; "
)
_GAVE_UP: Final = re.compile(
    rf"toolmend gave up on {_SOURCE} after its [0-9.e+-]+ s budget \(\d+ items\); "
)
"""The two lines of a request sent as it came because it was over the hook's budget (the size
cap, or the wall-clock budget of a repair off the event loop)."""
_REFUSED: Final = re.compile(
    r"toolmend rejected \S+(?: \S+)? \(message \d+ of (?P<source>[^\s()]+)\): "
)
_ID = r"[^\s\[\],;]+"
_CODE: Final = re.compile(rf"([A-Za-z_][A-Za-z0-9_-]*)@\d+(?:\[{_ID}(?:,{_ID})*\])?(?=[\s;]|$)")
"""A whole ``code@index`` or ``code@index[id,...]`` token: the code is kept, the rest read
past. The ids are escaped (no space, comma, bracket or semicolon in one), so a token is read
without backtracking, and a value a formatter appends (``session_id=user@1``) is no code."""

_RESCUED: Final = re.compile(
    rf"toolmend rescued {_SOURCE} for {_PROVIDER} after a 400: "
    r"(?P<rule>[A-Za-z_][A-Za-z0-9_-]*) \((?P<profile>[^\s()]+)\); "
)
_SAID: Final = re.compile(r'; provider error "(?P<error>[^"\s]*)"')
"""The provider's message at the end of a rescue line: escaped by the hook, so it holds no
quote and no whitespace (an unescaped one ends it)."""

ERROR_CHARS: Final = 303
"""The most characters of a provider's error kept (after unescaping): the hook quotes at most
300 (``toolmend.integrations.rescue.ERROR_LIMIT``) and marks a cut with ``...``."""

_TOKEN: Final = re.compile(r"[A-Za-z0-9_]+")

_HOOK_ALIASES: Final = {"a LangChain history read": "langchain.history"}

HEALS: Final = frozenset(
    {
        "agents.repair_session",
        "agents.session_input_callback",
        "langgraph.repair_thread",
        "langchain.before_model",
        "google_genai.Chat.send_message",
        "google_genai.Chat.send_message_stream",
        "google_genai.AsyncChat.send_message",
        "google_genai.AsyncChat.send_message_stream",
    }
)
"""The hooks whose lines are about a stored history, not a request being sent (their
``mend(request=False)`` and the Agents SDK's session rules): counted as healed, not as
requests."""

ERRORS: Final[tuple[tuple[str, re.Pattern[str], str], ...]] = tuple(
    (head, re.compile(pattern), label)
    for head, pattern, label in (
        (
            "toolmend failed while",
            r"toolmend failed while building ",
            "a hook failed while it was built",
        ),
        (
            "toolmend failed reading",
            r"toolmend failed reading the model for ",
            "a model could not be read",
        ),
        (
            "toolmend could not wrap",
            r"toolmend could not wrap LiteLLM's sync path",
            "LiteLLM's sync path was not wrapped",
        ),
        (
            "toolmend could not write",
            r"toolmend could not write its proxy response headers",
            "a proxy header was not written",
        ),
        (  # ToolMendHistory's write-back: the read went on with the repaired history
            "toolmend could not write",
            r"toolmend could not write the repaired history back",
            "a write-back was not written",
        ),
        (
            "toolmend could not put",
            r"toolmend could not put a LangChain history back",
            "a history was not put back after a failed write-back",
        ),
        (
            "toolmend could not attach",
            r"toolmend could not attach its record",
            "a LiteLLM record was not attached",
        ),
        (
            "toolmend could not report",
            r"toolmend could not report a",
            "a report did not reach a telemetry sink",
        ),
        (
            "toolmend could not make",
            r"toolmend could not make its guardrail record",
            "a guardrail entry was not made",
        ),
        (
            "toolmend could not add",
            r"toolmend could not add its guardrail record",
            "a guardrail entry was not made",
        ),
        (
            "toolmend could not turn",
            r"toolmend could not turn on its Prometheus",
            "the Prometheus metrics were not turned on",
        ),
        (  # a stored history or the messages being written, not a request: nothing was sent
            "toolmend failed on ",
            r"toolmend failed on \S+; (?:nothing was written|the messages were stored as given"
            r"|the items were left as they are)",
            "a stored history was left as it was",
        ),
        (
            "toolmend: ",
            r"toolmend: (?:\S+ is set but patching|patching \S+) failed",
            "an SDK was not patched",
        ),
    )
)
"""Errors outside any one request, by a fixed label (the line's own text may name a sink):
``(head, pattern, label)``, the pattern tried where ``head`` first occurs."""


def _at(message: str, head: str, pattern: re.Pattern[str]) -> re.Match[str] | None:
    """``pattern`` matched where ``head`` first occurs in ``message`` (one try: linear)."""
    at = message.find(head)
    return None if at < 0 else pattern.match(message, at)


def _name(text: str) -> str:
    """A hook or provider name read from a log, safe to print (a line written by something
    else may hold control characters)."""
    return escape.terminal(text)


def _hook(source: str) -> str:
    source = _HOOK_ALIASES.get(source, source)
    return _name(source.partition("(")[0])


def _codes(text: str, pos: int = 0) -> tuple[list[str], int]:
    """The codes of the space-separated tokens from ``pos`` on, and where the last one ends
    (``pos`` when there is none): reading stops at the first text that is not a token."""
    codes: list[str] = []
    end = pos
    while (match := _CODE.match(text, pos)) is not None:
        codes.append(match.group(1))
        end = match.end()
        if not text.startswith(" ", end):
            break
        pos = end + 1
    return codes, end


def _listed(text: str, pos: int, count: int) -> tuple[str, ...] | None:
    """The ``count`` codes listed from ``pos`` on, or None when the list does not hold that
    many (the line is not one toolmend wrote)."""
    codes, _ = _codes(text, pos)
    return tuple(codes) if len(codes) == count else None


def error_shape(text: str) -> str:
    """A provider's error as ``stats`` counts it: cut at :data:`ERROR_CHARS`, each word that
    holds a digit written ``N`` (a number: a message index, a count) or ``<id>`` (a call id, a
    model version), so the errors of one rule are counted together whatever ids and indexes
    they quote.

    >>> error_shape("messages.3.content: tool_use ids without tool_result: toolu_01Ab, toolu_9")
    'messages.N.content: tool_use ids without tool_result: <id>, <id>'
    """

    def word(match: re.Match[str]) -> str:
        token = match.group()
        if not any(char.isdigit() for char in token):
            return token
        return "N" if token.isdigit() else "<id>"

    return _TOKEN.sub(word, text[:ERROR_CHARS])


def _rescued(message: str, match: re.Match[str]) -> Event | None:
    """The event of a rescue line whose head ``match`` read: its change codes (or ``-``) and
    the provider's error must follow, or it is no line toolmend wrote."""
    pos = match.end()
    if message.startswith("-", pos):
        codes: tuple[str, ...] = ()
        end = pos + 1
    else:
        found, end = _codes(message, pos)
        if not found:
            return None
        codes = tuple(found)
    said = _SAID.match(message, end)
    if said is None:
        return None
    return Event(
        "rescued",
        _hook(match["source"]),
        _name(match["provider"]),
        codes,
        rule=match["rule"],
        profile=_name(match["profile"]),
        # an escaped character takes at most 8 (%UXXXXXX): enough for ERROR_CHARS, no more
        error=error_shape(escape.unescape(said["error"][: ERROR_CHARS * 8])),
    )


def parse_message(message: str) -> Event | None:
    """The event a log message (or a whole plain log line) records, or None for another line.

    Only a well-formed line counts: a repair with at least one change, each list of codes as
    long as its count says, every code a whole token."""
    if "toolmend" not in message:
        return None
    if match := _at(message, "toolmend repaired ", _REPAIRED):
        changes, end = _codes(message, match.end())
        if not changes:
            return None
        left: tuple[str, ...] | None = ()
        if (counted := _LEFT.match(message, end)) is not None:
            left = _listed(message, counted.end(), int(counted.group(1)))
        if left is None:
            return None
        hook = _hook(match["source"])
        kind: Kind = "healed" if hook in HEALS else "repaired"
        return Event(kind, hook, _name(match["provider"]), tuple(changes), left)
    if match := _at(message, "toolmend found ", _FOUND):
        found = _listed(message, match.end(), int(match["count"]))
        if not found:
            return None
        provider = _name(match["provider"] or UNKNOWN)
        hook = _hook(match["source"])
        kind = "stored_problems" if hook in HEALS else "problems_left"
        return Event(kind, hook, provider, found)
    if match := _at(message, "toolmend rescued ", _RESCUED):
        return _rescued(message, match)
    if match := _at(message, "toolmend loop guard on ", _LOOP):
        loops, _ = _codes(message, match.end())
        if not loops:
            return None
        return Event("loop", _hook(match["source"]), _name(match["provider"]), tuple(loops))
    if match := _at(message, "toolmend cannot read the ", _UNREADABLE):
        provider = _name(match["provider"] or UNKNOWN)
        return Event("unreadable", _hook(match["source"]), provider)
    if match := _at(message, "toolmend did not repair ", _OVER_CAP):
        return Event("over_budget", _hook(match["source"]), _name(match["provider"]))
    if match := _at(message, "toolmend gave up on ", _GAVE_UP):
        return Event("over_budget", _hook(match["source"]))
    if match := _at(message, "toolmend rejected ", _REFUSED):
        return Event("refused", _hook(match["source"]))
    for head, pattern, label in ERRORS:  # before the failures: some failures send no request
        if _at(message, head, pattern):
            return Event("error", label)
    for head in ("toolmend failed on ", "toolmend's LiteLLM hook failed on "):
        if match := _at(message, head, _FAILED):
            return Event("failed", _hook(match["source"]), _name(match["provider"] or UNKNOWN))
    return None


# --- the counts --------------------------------------------------------------------------------


@dataclass
class Table:
    """Requests and the codes they carried, by provider: how many requests had each code, and
    how many times it occurred (changes made, problems left, loop findings)."""

    requests: Counter[str] = field(default_factory=Counter)
    """provider -> requests."""
    items: Counter[str] = field(default_factory=Counter)
    """provider -> codes counted (changes, problems, findings)."""
    code_requests: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(provider, code) -> requests that had the code."""
    code_items: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(provider, code) -> times the code occurred."""

    def add(self, provider: str, codes: Iterable[str]) -> None:
        """Count one request for ``provider`` with ``codes``."""
        counted = Counter(codes)
        self.requests[provider] += 1
        self.items[provider] += counted.total()
        for code, count in counted.items():
            self.code_requests[provider, code] += 1
            self.code_items[provider, code] += count

    @property
    def total_requests(self) -> int:
        return self.requests.total()

    @property
    def total_items(self) -> int:
        return self.items.total()

    def rows(self) -> list[tuple[str, str, int, int]]:
        """``(provider, code, requests, count)``, by provider, the most frequent code first."""
        return sorted(
            ((p, c, n, self.code_items[p, c]) for (p, c), n in self.code_requests.items()),
            key=lambda row: (row[0], -row[2], -row[3], row[1]),
        )


HOOK_COLUMNS: Final = ("repaired", "problems_left", "loop", "failed_open")
"""What the per-hook table counts, in requests."""

FAILURE_REASONS: Final = ("failed", "unreadable", "over_budget")
"""Why a request was sent unrepaired, as the "sent unrepaired" table counts it."""


@dataclass
class Stats:
    """Everything ``toolmend stats`` reports, summed over the files read."""

    files: list[str] = field(default_factory=list)
    lines: int = 0
    toolmend_lines: int = 0
    """Lines that recorded an :class:`Event`."""
    repaired: Table = field(default_factory=Table)
    problems_left: Table = field(default_factory=Table)
    """Requests sent with problems: those a repair left and those nothing was changed in."""
    loops: Table = field(default_factory=Table)
    failures: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(hook, ``failed``, ``unreadable`` or ``over_budget``) -> requests sent unrepaired."""
    hooks: dict[str, Counter[str]] = field(default_factory=dict)
    """hook -> :data:`HOOK_COLUMNS` -> requests."""
    refused: Counter[str] = field(default_factory=Counter)
    """hook (the store's method) -> messages a LangChain history store refused to write."""
    errors: Counter[str] = field(default_factory=Counter)
    """label (:data:`ERRORS`) -> errors outside any one request."""
    healed: Table = field(default_factory=Table)
    """Stored histories repaired apart from a request (:data:`HEALS`), by provider and change
    code; its "requests" are heals."""
    stored_problems: Table = field(default_factory=Table)
    """Problems a stored history still has (:data:`HEALS`): left by a heal, or found and not
    changed."""
    rescues: Counter[tuple[str, str, str, str]] = field(default_factory=Counter)
    """(hook, provider, rule, profile) -> requests sent once more after a 400."""
    rescue_errors: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    """(provider, rule, the provider's error as :func:`error_shape` gives it) -> rescues."""

    def add(self, event: Event) -> None:
        """Count one event."""
        self.toolmend_lines += 1
        if event.kind == "error":
            self.errors[event.hook] += 1
            return
        if event.kind == "refused":
            self.refused[event.hook] += 1
            return
        if event.kind == "healed":  # a stored history, not a request: no hook row
            self.healed.add(event.provider, event.codes)
            if event.left:
                self.stored_problems.add(event.provider, event.left)
            return
        if event.kind == "stored_problems":
            self.stored_problems.add(event.provider, event.codes)
            return
        if event.kind == "rescued":  # a second request, beside the first one's own line
            self.rescues[event.hook, event.provider, event.rule, event.profile] += 1
            self.rescue_errors[event.provider, event.rule, event.error] += 1
            return
        hook = self.hooks.setdefault(event.hook, Counter())
        if event.kind == "repaired":
            self.repaired.add(event.provider, event.codes)
            hook["repaired"] += 1
            if event.left:
                self.problems_left.add(event.provider, event.left)
                hook["problems_left"] += 1
        elif event.kind == "problems_left":
            self.problems_left.add(event.provider, event.codes)
            hook["problems_left"] += 1
        elif event.kind == "loop":
            self.loops.add(event.provider, event.codes)
            hook["loop"] += 1
        else:
            self.failures[event.hook, event.kind] += 1
            hook["failed_open"] += 1

    @property
    def total_failures(self) -> int:
        return self.failures.total()

    @property
    def total_rescues(self) -> int:
        return self.rescues.total()


# --- reading -----------------------------------------------------------------------------------


class UnreadableLogError(Exception):
    """A log file cannot be read; the message says why, in one line."""


_TRACEBACK: Final = "Traceback (most recent call last):"
_CHAINED: Final = (
    "During handling of the above exception",
    "The above exception was the direct cause",
)
_MESSAGE_KEYS: Final = ("message", "msg", "event")


class _Reader:
    """Feeds lines to a :class:`Stats`, skipping the tracebacks of plain logging.

    A traceback starts with ``Traceback (most recent call last):`` (after the same prefix as
    the lines that follow it, if a log shipper adds one), goes on with indented frames, and
    ends with the exception's line; a chained one follows after a blank line and ``During
    handling of the above exception...``."""

    def __init__(self, stats: Stats) -> None:
        self.stats = stats
        self.state: Literal["log", "frames", "after"] = "log"
        self.prefix = ""

    def feed(self, line: str) -> None:
        self.stats.lines += 1
        if self.state == "log" and "toolmend" not in line and "Traceback" not in line:
            return  # nearly every line of a busy log: neither toolmend's nor a traceback
        self._line(line.rstrip("\r\n"), nested=False)

    def _line(self, line: str, *, nested: bool) -> None:
        record = _json_record(line)
        if record is not None:
            message = _message_of(record)
            if message is None and isinstance(record.get("log"), str) and not nested:
                # a Docker json-file record: the line it wraps, one line of a traceback at times
                self._line(str(record["log"]).rstrip("\r\n"), nested=True)
                return
            self.state = "log"
            if message is not None:
                self._count(message.partition("\n")[0])
            return
        if self.state != "log" and self._in_traceback(line):
            return
        self.state = "log"
        at = line.find(_TRACEBACK)
        if at >= 0:
            self.state, self.prefix = "frames", line[:at]
            return
        self._count(line)

    def _in_traceback(self, line: str) -> bool:
        """Whether ``line`` is still part of the traceback being skipped."""
        if self.prefix and line.startswith(self.prefix):
            line = line[len(self.prefix) :]
        if self.state == "frames":
            if not line or line[0].isspace() or line.startswith(_TRACEBACK):
                return True
            self.state = "after"  # the exception's own line ends the traceback
            return True
        if not line.strip() or line.startswith(_CHAINED):
            return True
        if line.startswith(_TRACEBACK):
            self.state = "frames"
            return True
        return False

    def _count(self, message: str) -> None:
        event = parse_message(message)
        if event is not None:
            self.stats.add(event)


def _json_record(line: str) -> dict[str, object] | None:
    """The JSON object a line holds (after any prefix, such as a container runtime's)."""
    start = line.find("{")
    if start < 0 or not line.rstrip().endswith("}"):
        return None
    try:
        record = json.loads(line[start:])
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def _message_of(record: dict[str, object]) -> str | None:
    for key in _MESSAGE_KEYS:
        value = record.get(key)
        if isinstance(value, str):
            return value
    return None


_GZIP: Final = b"\x1f\x8b"


@contextmanager
def _opened(path: str) -> Iterator[Iterable[bytes]]:
    """``path`` opened for reading bytes (``-``: standard input), through gzip when it starts
    like a gzip file."""
    if path == "-":
        if sys.stdin is None:
            raise UnreadableLogError(path, "standard input is closed")
        stdin: BinaryIO = sys.stdin.buffer
        peek = getattr(stdin, "peek", None)  # a pipe's buffer can look ahead; a test's cannot
        if peek is not None and peek(2)[:2] == _GZIP:
            with gzip.GzipFile(fileobj=stdin) as unpacked:
                yield unpacked
        else:
            yield stdin
        return
    with open(path, "rb") as raw:
        if raw.read(2) == _GZIP:
            raw.seek(0)
            with gzip.GzipFile(fileobj=raw) as unpacked:
                yield unpacked
        else:
            raw.seek(0)
            yield raw


def read_files(paths: Iterable[str]) -> Stats:
    """The counts of every toolmend line in ``paths``, in order, read a line at a time;
    :class:`UnreadableLogError` (with ``.args == (path, reason)``) for a file that cannot be
    read."""
    stats = Stats()
    for path in paths:
        reader = _Reader(stats)
        try:
            with _opened(path) as handle:
                stats.files.append(path)
                for raw in handle:
                    reader.feed(raw.decode("utf-8", errors="replace"))
        except (OSError, EOFError, zlib.error) as error:
            reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
            raise UnreadableLogError(path, reason) from None
    return stats
