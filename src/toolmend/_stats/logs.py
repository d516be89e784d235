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

plus the OpenAI Agents SDK hooks' variants (``for PROFILE (session rules)``, problems found
``(in the Chat Completions conversion)``), the messages a LangChain history store refused
(``toolmend rejected ... (message N of add_messages): ...``), and a few errors outside any one
request (a hook that could not be built, a telemetry sink that failed, a failure on a stored
history or on messages being written, which sends nothing).

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

__all__ = [
    "ERRORS",
    "HEALS",
    "Event",
    "Kind",
    "Stats",
    "Table",
    "UnreadableLogError",
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
    "refused",
    "error",
    "healed",
    "stored_problems",
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


# --- the lines ---------------------------------------------------------------------------------

_SOURCE = r"(?P<source>[^\s(;]+(?:\(.*?\))?)"
"""A hook's log name, with the model it was called for in parentheses (a model may hold
spaces: the Agents SDK's ``(default model)``)."""
_PROVIDER = r"(?P<provider>[^\s:;()]+)"
_FOR = rf"(?: for {_PROVIDER})?"
_NOTE = r"(?: \([^)]*\))?"
"""What the Agents SDK adds after the provider: ``(session rules)``, ``(in the Chat
Completions conversion)``."""

_REPAIRED: Final = re.compile(rf"toolmend repaired {_SOURCE} for {_PROVIDER}{_NOTE}: (?P<rest>.*)")
_LEFT: Final = re.compile(r"; (\d+) problem\(s\) left: ")
_FOUND: Final = re.compile(
    rf"toolmend found \d+ problem\(s\) in {_SOURCE}{_FOR}{_NOTE} "
    r"(?:and changed nothing|that the items cannot mend): (?P<rest>.*)"
)
_LOOP: Final = re.compile(rf"toolmend loop guard on {_SOURCE} for {_PROVIDER}: (?P<rest>.*)")
_UNREADABLE: Final = re.compile(
    rf"toolmend cannot read the (?:history|items) on {_SOURCE}{_FOR} \("
)
_FAILED: Final = re.compile(
    r"toolmend(?:'s LiteLLM hook)? failed on "
    rf"(?P<source>a LangChain history read|[^\s(;]+(?:\(.*?\))?){_FOR}; "
)
_REFUSED: Final = re.compile(r"toolmend rejected .*? \(message \d+ of (?P<source>[^)]+)\): ")
_CODE: Final = re.compile(r"(?<!\S)([A-Za-z_][\w-]*)@\d+(?:\[.*?\])?(?=\s|;|$)")
"""A whole ``code@index`` or ``code@index[id,...]`` token: the code is kept, the rest read
past (so a ``session_id=user@1`` a log formatter appends is not a code). The ids are the
caller's and may hold ``]`` or spaces: the brackets close where the token ends."""

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

ERRORS: Final[tuple[tuple[re.Pattern[str], str], ...]] = tuple(
    (re.compile(pattern), label)
    for pattern, label in (
        (r"toolmend failed while building ", "a hook failed while it was built"),
        (r"toolmend failed reading the model for ", "a model could not be read"),
        (r"toolmend could not wrap LiteLLM's sync path", "LiteLLM's sync path was not wrapped"),
        (r"toolmend could not write its proxy response headers", "a proxy header was not written"),
        (r"toolmend could not attach its record", "a LiteLLM record was not attached"),
        (r"toolmend could not report a", "a report did not reach a telemetry sink"),
        (r"toolmend could not (?:make|add) its guardrail record", "a guardrail entry was not made"),
        (r"toolmend could not turn on its Prometheus", "the Prometheus metrics were not turned on"),
        (  # a stored history or the messages being written, not a request: nothing was sent
            r"toolmend failed on \S+; (?:nothing was written|the messages were stored as given"
            r"|the items were left as they are)",
            "a stored history was left as it was",
        ),
        (r"toolmend: (?:\S+ is set but )?patching .*?failed", "an SDK was not patched"),
    )
)
"""Errors outside any one request, by a fixed label (the line's own text may name a sink)."""


def _hook(source: str) -> str:
    source = _HOOK_ALIASES.get(source, source)
    return source.partition("(")[0]


def _codes(text: str) -> tuple[str, ...]:
    return tuple(match.group(1) for match in _CODE.finditer(text))


def parse_message(message: str) -> Event | None:
    """The event a log message (or a whole plain log line) records, or None for another line."""
    if "toolmend" not in message:
        return None
    if match := _REPAIRED.search(message):
        rest = match["rest"]
        left = _LEFT.search(rest)
        changes, problems = (rest[: left.start()], rest[left.end() :]) if left else (rest, "")
        hook = _hook(match["source"])
        kind: Kind = "healed" if hook in HEALS else "repaired"
        return Event(kind, hook, match["provider"], _codes(changes), _codes(problems))
    if match := _FOUND.search(message):
        provider = match["provider"] or UNKNOWN
        hook = _hook(match["source"])
        kind = "stored_problems" if hook in HEALS else "problems_left"
        return Event(kind, hook, provider, _codes(match["rest"]))
    if match := _LOOP.search(message):
        return Event("loop", _hook(match["source"]), match["provider"], _codes(match["rest"]))
    if match := _UNREADABLE.search(message):
        return Event("unreadable", _hook(match["source"]), match["provider"] or UNKNOWN)
    if match := _REFUSED.search(message):
        return Event("refused", _hook(match["source"]))
    for pattern, label in ERRORS:  # before the failures: some failures send no request
        if pattern.search(message):
            return Event("error", label)
    if match := _FAILED.search(message):
        return Event("failed", _hook(match["source"]), match["provider"] or UNKNOWN)
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
    """(hook, ``failed`` or ``unreadable``) -> requests sent unrepaired."""
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
