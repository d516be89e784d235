"""Hostile and bad input through the public API and the CLI, in every format.

What toolmend promises (docs/api.md, "Bad input"; docs/hooks.md, "toolmend never costs you a
request"):

* Something it cannot read gets a clear error that subclasses ``ValueError`` or ``TypeError``:
  :class:`toolmend.InvalidHistoryError` for an argument that is not a history,
  :class:`toolmend.InvalidMessageError` naming the message index and field for a message it
  cannot read. Never a hang, a ``RecursionError``, or an ``AttributeError``/``KeyError`` from
  deep inside; never the content of a message in the error text.
* What it does not need to look inside (the content of a text, an image, a tool result, a
  call's arguments) is passed through as it is, however large, deep or cyclic: a valid history
  comes back as the very same object.
* A value a repair must write as JSON itself (arguments turned into a string, a call or result
  kept as text) and cannot (a cycle, nesting deeper than Python's recursion limit) is an
  :class:`toolmend.InvalidMessageError` naming the message and field. What toolmend writes is
  strict JSON: a value holding NaN or Infinity is left as it was (no change reported for its
  range) and its problems stay in ``problems_left``.
* Whatever it returns, it says honestly what is still broken (``problems_left`` equals what
  :func:`toolmend.check` finds in the output), and it never mutates the input.

The exhaustive tests put a wrong value into every field (and remove every key) of a small
history in each format; the property test does the same at random places of the fuzz suite's
histories. A 10 MB message, a 1,000,000-message history, 100,000-deep nesting and cycles are
timed under a hang guard.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

import toolmend
from toolmend import _cli as cli
from toolmend.formats import get as get_format
from toolmend.formats import names
from toolmend.formats._openai_chat import same_result
from toolmend.profiles import get_profile

from support.fuzz_cases import FORMATS, HOSTILE_RUNS, Case, cases, pairs
from support.whole_path import whole_repair

# LangChain messages built with model_construct hold wrong types on purpose: pydantic warns
pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")

FUZZ = bool(os.environ.get("TOOLMEND_FUZZ"))
NATIVE = {name: get_format(name).native_provider for name in names()}
"""The profile each format's hostile input is judged by, its own provider's (as ``trim`` picks
it; the property test uses every pair)."""

SECRETS = ("alpha-user-words", "beta-model-words", "gamma-tool-output", "delta-final-words")
"""The content of the base histories: never in an error text."""


# --- the hang guard ---------------------------------------------------------------------------


class HangError(Exception):
    """A call took longer than its deadline."""


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Fail a block that runs longer than ``seconds`` (SIGALRM: main thread, Unix)."""

    def alarm(signum: int, frame: Any) -> None:
        raise HangError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --- base histories ---------------------------------------------------------------------------


def base(format: str) -> list[Any]:
    """A small valid history: a user question, a call, its result, the answer."""
    user, model, tool, final = SECRETS
    if format == "openai":
        return [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": user},
            {
                "role": "assistant",
                "content": model,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": tool},
            {"role": "assistant", "content": final},
        ]
    if format == "openai-responses":
        return [
            {"role": "developer", "content": "be brief"},
            {"role": "user", "content": [{"type": "input_text", "text": user}]},
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": '{"city": "Paris"}',
            },
            {"type": "function_call_output", "call_id": "call_1", "output": tool},
            {
                "type": "message",
                "role": "assistant",
                "id": "msg_1",
                "content": [{"type": "output_text", "text": final, "annotations": []}],
            },
        ]
    if format == "langchain":
        return [
            SystemMessage("be brief"),
            HumanMessage(user),
            AIMessage(
                model,
                tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1"}],
            ),
            ToolMessage(tool, tool_call_id="call_1", name="get_weather"),
            AIMessage(final),
        ]
    if format == "anthropic":
        return [
            {"role": "user", "content": [{"type": "text", "text": user}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "c2ln"},
                    {"type": "text", "text": model},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": tool}],
            },
            {"role": "assistant", "content": final},
        ]
    if format == "gemini":
        return [
            {"role": "user", "parts": [{"text": user}]},
            {
                "role": "model",
                "parts": [
                    {"text": model},
                    {
                        "functionCall": {"id": "call_1", "name": "get_weather", "args": {}},
                        "thoughtSignature": "c2ln",
                    },
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "id": "call_1",
                            "name": "get_weather",
                            "response": {"result": tool},
                        }
                    }
                ],
            },
            {"role": "model", "parts": [{"text": final}]},
        ]
    assert format == "bedrock"
    return [
        {"role": "user", "content": [{"text": user}]},
        {
            "role": "assistant",
            "content": [
                {"text": model},
                {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {}}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": "tooluse_1",
                        "content": [{"text": tool}],
                        "status": "success",
                    }
                }
            ],
        },
        {"role": "assistant", "content": [{"text": final}]},
    ]


# --- what may happen ---------------------------------------------------------------------------


def attempt(call: Callable[[], Any]) -> Any:
    """What ``call`` returns, or the exception it raised (a hang is not caught)."""
    try:
        return call()
    except HangError:
        raise
    except Exception as error:
        return error


def documented(error: BaseException) -> bool:
    """An error toolmend raises on purpose for bad input."""
    return isinstance(error, toolmend.ToolmendError) and isinstance(error, (ValueError, TypeError))


API: dict[str, Callable[[Any, str | None, str], Any]] = {
    "check": lambda m, f, p: toolmend.check(m, provider=p, format=f),
    "repair": lambda m, f, p: toolmend.repair(m, provider=p, format=f),
    "repair-keep-text": lambda m, f, p: toolmend.repair(
        m, provider=p, format=f, policy=toolmend.Policy(orphan_result="text")
    ),
    "trim": lambda m, f, p: toolmend.trim(m, max_messages=2, keep_first=1, format=f),
    "trim-tokens": lambda m, f, p: toolmend.trim(m, max_tokens=40, format=f),
    "merge_consecutive": lambda m, f, p: toolmend.merge_consecutive(m, format=f),
    "detect_loops": lambda m, f, p: toolmend.detect_loops(m, format=f),
    "atomic_groups": lambda m, f, p: toolmend.atomic_groups(m, format=f),
    "align_cut": lambda m, f, p: toolmend.align_cut(m, 3, format=f),
}
"""Every public function that takes a history. ``trim`` may also refuse limits it cannot meet
(``TrimError``, a ``ValueError``)."""


def run_everything(
    history: Any, format: str | None, provider: str, *, at: int | None = None
) -> dict[str, Any]:
    """Every API function on ``history``: each returns or raises a documented error (naming
    message ``at`` when it is an :class:`toolmend.InvalidMessageError`), within a second."""
    frozen = freeze(history)
    outcomes: dict[str, Any] = {}
    for name, call in API.items():
        with deadline(10):
            outcome = attempt(lambda call=call: call(history, format, provider))
        if isinstance(outcome, BaseException):
            assert documented(outcome), f"{name}: {type(outcome).__name__}: {outcome}"
            assert not any(secret in str(outcome) for secret in SECRETS), f"{name}: {outcome}"
            if isinstance(outcome, toolmend.InvalidMessageError) and at is not None and format:
                assert outcome.index == at, f"{name}: {outcome}"
                assert f"message {at}" in str(outcome)
        outcomes[name] = outcome
        assert freeze(history) == frozen, f"{name} mutated its input"
    repaired = outcomes["repair"]
    if isinstance(repaired, toolmend.Repair):
        honest(repaired, format, provider)
    return outcomes


def honest(result: toolmend.Repair, format: str | None, provider: str) -> None:
    """``problems_left`` is what ``check`` finds in the output; a clean output is stable."""
    left = attempt(lambda: toolmend.check(result.messages, provider=provider, format=format))
    if isinstance(left, BaseException):  # the output still holds what the input had
        assert documented(left), f"{type(left).__name__}: {left}"
        return
    assert list(result.problems_left) == left
    if not left:
        again = toolmend.repair(result.messages, provider=provider, format=format)
        assert again.messages is result.messages, [str(c) for c in again.changes]


def freeze(value: Any, depth: int = 0) -> Any:
    """A comparable picture of ``value`` that keeps every leaf by identity (so ``object()``
    and NaN compare equal to themselves) and stops at cycles and great depths."""
    if depth > 50:
        return id(value)
    if isinstance(value, BaseMessage):
        return (type(value), freeze(dict(value.__dict__), depth + 1))
    if isinstance(value, dict):
        return ("dict", tuple((key, freeze(item, depth + 1)) for key, item in value.items()))
    if isinstance(value, list):
        return ("list", tuple(freeze(item, depth + 1) for item in value))
    return value


# --- the argument is not a history ------------------------------------------------------------

NOT_A_HISTORY = [None, 0, 3.5, True, b"bytes", bytearray(b"x"), object(), {1, 2}, iter([])]


@pytest.mark.parametrize("format", [None, *FORMATS])
@pytest.mark.parametrize("value", NOT_A_HISTORY, ids=lambda v: type(v).__name__)
def test_something_that_is_not_a_history_is_a_clear_error(format: str | None, value: Any) -> None:
    for name, call in API.items():
        with pytest.raises(toolmend.InvalidHistoryError) as raised:
            call(value, format, NATIVE.get(format or "openai", "openai"))
        assert isinstance(raised.value, ValueError), name
        assert type(value).__name__ in str(raised.value), name


@pytest.mark.parametrize("format", [None, "openai", "anthropic", "gemini", "bedrock"])
def test_an_empty_history_is_returned_as_it_is(format: str | None) -> None:
    empty: list[Any] = []
    for name in ("repair", "trim", "merge_consecutive", "atomic_groups", "detect_loops"):
        outcome = API[name](empty, format, NATIVE.get(format or "openai", "openai"))
        if name == "repair":
            assert outcome.messages is empty and outcome.changes == ()
        elif name in ("trim", "merge_consecutive"):
            assert outcome is empty
        else:
            assert outcome == []


@pytest.mark.parametrize("format", ["anthropic", "gemini", "bedrock"])
def test_a_block_history_sent_to_another_providers_rules_is_a_clear_error(format: str) -> None:
    """An Anthropic history is not a Gemini request: the repair could not make it one."""
    others = [p for p in toolmend.profiles.PROFILES.values() if (format, p.name) not in pairs()]
    for profile in others:
        with pytest.raises(toolmend.InvalidHistoryError, match=f"no rules for '{format}'"):
            toolmend.check(base(format), provider=profile.name, format=format)


# --- a wrong value in every field, every key removed ------------------------------------------

WRONG = [
    None,
    0,
    -1,
    2.5,
    float("nan"),
    True,
    "",
    "wrong",
    [],
    {},
    [None],
    [1, "two"],
    {"x": None},
    {"type": 5},
    b"\xff\xfe",
    ("a", "tuple"),
    object(),
]


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every position inside ``value``, outermost first."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, (*prefix, index))


def mutated(history: list[Any], at: int, path: tuple[Any, ...], value: Any, delete: bool) -> Any:
    """``history`` with ``value`` put at ``path`` of message ``at`` (or that key removed); the
    input untouched. LangChain messages are rebuilt with ``model_construct`` (no validation)."""
    out = list(history)
    message = out[at]
    plain = message.model_dump() if isinstance(message, BaseMessage) else message
    if not path:
        out[at] = value
        return out
    plain = copy.deepcopy(plain)
    parent = plain
    for step in path[:-1]:
        parent = parent[step]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    out[at] = type(message).model_construct(**plain) if isinstance(message, BaseMessage) else plain
    return out


def _variants(format: str) -> Iterator[tuple[int, tuple[Any, ...], Any, bool]]:
    history = base(format)
    for at, message in enumerate(history):
        plain = message.model_dump() if isinstance(message, BaseMessage) else message
        for path in paths(plain):
            for value in WRONG:
                yield at, path, value, False
            if path and not isinstance(message, BaseMessage):  # an object cannot lose a field
                yield at, path, None, True


@pytest.mark.parametrize("format", FORMATS)
def test_a_wrong_value_in_any_field_is_read_or_named(format: str) -> None:
    history = base(format)
    assert toolmend.check(history, provider=NATIVE[format], format=format) == []
    count = 0
    for at, path, value, delete in _variants(format):
        broken = mutated(history, at, path, value, delete)
        for detected in (format, None):
            try:
                run_everything(broken, detected, NATIVE[format], at=at)
            except AssertionError as failure:
                raise AssertionError(f"message {at} {path} {value!r} delete={delete}") from failure
            count += 1
    HOSTILE_RUNS[format] += count


@pytest.mark.parametrize("format", FORMATS)
@pytest.mark.parametrize("kind", ["number", "none", "empty", "surrogate"])
def test_ids_that_are_numbers_or_none(format: str, kind: str) -> None:
    """Every id field (call ids, result ids, item ids) set to 7, None, "" or a string holding
    a lone surrogate (``json.loads`` reads one from ``"\\ud800"``; the planner's new ids hashed
    it as UTF-8 and raised ``UnicodeEncodeError``)."""
    value = {"number": 7, "none": None, "empty": "", "surrogate": "call_\ud800x"}[kind]
    history = base(format)
    for at, message in enumerate(history):
        plain = message.model_dump() if isinstance(message, BaseMessage) else message
        for path in paths(plain):
            if path and path[-1] in ("id", "tool_call_id", "call_id", "tool_use_id", "toolUseId"):
                broken = mutated(history, at, path, value, False)
                outcomes = run_everything(broken, format, NATIVE[format], at=at)
                error = outcomes["check"]
                if isinstance(error, toolmend.InvalidMessageError):
                    assert error.field.endswith(path[-1]) or path[-1] in error.field, error


@pytest.mark.parametrize("format", FORMATS)
def test_unknown_roles_pass_or_are_renamed(format: str) -> None:
    """A role toolmend does not know is a message of kind "other": passed on, or renamed to one
    the provider knows where the provider has a list (reported as ``renamed_role``)."""
    history = base(format)
    for provider in sorted({p for f, p in pairs() if f == format}):
        for role in ("wizard", "", "ROBOT", "function"):
            broken = mutated(history, 1, ("role",), role, False)
            outcomes = run_everything(broken, format, provider, at=1)
            result = outcomes["repair"]
            if isinstance(result, toolmend.Repair):
                assert result.problems_left == (), (provider, role, result.problems_left)


# --- through the hypothesis histories: random places, random junk -----------------------------


@st.composite
def hostile_cases(draw: st.DrawFn) -> tuple[Case, list[Any], int, str]:
    format = draw(st.sampled_from(FORMATS))
    case = draw(cases(format))
    history = draw(st.sampled_from([case.valid, case.damaged]))
    if not history:
        history = case.valid
    at = draw(st.integers(0, len(history) - 1))
    message = history[at]
    plain = message.model_dump() if isinstance(message, BaseMessage) else message
    path = draw(st.sampled_from(list(paths(plain))))
    value = draw(st.sampled_from(WRONG))
    delete = bool(path) and not isinstance(message, BaseMessage) and draw(st.booleans())
    provider = draw(st.sampled_from([p for f, p in pairs() if f == format]))
    return case, mutated(history, at, path, value, delete), at, provider


@settings(
    max_examples=3_000 if FUZZ else 150,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)
@given(hostile=hostile_cases(), detect=st.booleans())
def test_junk_anywhere_in_a_random_history(
    hostile: tuple[Case, list[Any], int, str], detect: bool
) -> None:
    case, history, at, provider = hostile
    run_everything(history, None if detect else case.format, provider, at=at)
    HOSTILE_RUNS[case.format] += 1


# --- size -----------------------------------------------------------------------------------

TEN_MB = "x" * 10_000_000


ARGUMENT_PATHS = {
    "openai": (2, ("tool_calls", 0, "function", "arguments")),
    "openai-responses": (2, ("arguments",)),
    "langchain": (2, ("tool_calls", 0, "args")),
    "anthropic": (1, ("content", 2, "input")),
    "gemini": (1, ("parts", 1, "functionCall", "args")),
    "bedrock": (1, ("content", 1, "toolUse", "input")),
}
"""Where each base history keeps its call's arguments."""


def _huge(format: str) -> list[Any]:
    """The base history with a 10 MB user text, a 10 MB tool result and 10 MB of arguments."""
    if format == "langchain":
        history = base(format)
        history[1] = HumanMessage(TEN_MB)
        history[2] = AIMessage(
            "", tool_calls=[{"name": "f", "args": {"a": TEN_MB}, "id": "call_1"}]
        )
        history[3] = ToolMessage(TEN_MB, tool_call_id="call_1")
        return history
    blob = json.dumps(base(format)).replace(SECRETS[0], TEN_MB).replace(SECRETS[2], TEN_MB)
    history = json.loads(blob)
    at, path = ARGUMENT_PATHS[format]
    arguments = {"city": TEN_MB}
    textual = format in ("openai", "openai-responses")
    return mutated(history, at, path, json.dumps(arguments) if textual else arguments, False)


@pytest.mark.parametrize("format", FORMATS)
def test_ten_megabyte_messages(format: str) -> None:
    history = _huge(format)
    started = time.perf_counter()
    with deadline(20):
        assert toolmend.check(history, provider=NATIVE[format], format=format) == []
        assert toolmend.sanitize(history, provider=NATIVE[format], format=format) is history
        run_everything(history, format, NATIVE[format])
        broken = history[:2] + history[3:]  # the 10 MB result is now an orphan
        run_everything(broken, format, NATIVE[format])
        keep = toolmend.Policy(orphan_result="text")
        kept = toolmend.repair(broken, provider=NATIVE[format], format=format, policy=keep)
        assert kept.problems_left == ()
    assert time.perf_counter() - started < 20


def _million(format: str, size: int) -> list[Any]:
    """``size`` messages of whole rounds (user, call, result, answer); unique ids where the
    provider wants them unique in the request."""
    history = base(format)
    start = 1 if format in ("openai", "openai-responses", "langchain") else 0
    rounds = history[start:]
    if format in ("openai", "langchain"):
        return rounds * (size // len(rounds))  # ids need only be unique within a round
    template = json.dumps(rounds)[1:-1]
    rounds_text = (template.replace("_1", f"_{n}") for n in range(size // len(rounds)))
    history: list[Any] = json.loads("[" + ",".join(rounds_text) + "]")
    return history


SIZES = {format: 1_000_000 if FUZZ or format == "openai" else 100_000 for format in FORMATS}
"""CI runs a million messages in the OpenAI format (the hooks' common case) and 100,000 in
the others; ``TOOLMEND_FUZZ=1`` runs a million in every format."""


@pytest.mark.slow
@pytest.mark.parametrize("format", FORMATS)
def test_a_million_message_history(format: str) -> None:
    size = SIZES[format]
    history = _million(format, size)
    provider = NATIVE[format]
    timings: dict[str, float] = {}

    def timed(name: str, call: Callable[[], Any]) -> Any:
        started = time.perf_counter()
        with deadline(120):
            outcome = call()
        timings[name] = time.perf_counter() - started
        return outcome

    assert timed("check", lambda: toolmend.check(history, provider=provider, format=format)) == []
    assert timed("sanitize", lambda: toolmend.sanitize(history, provider=provider)) is history
    # each round is user, call, result, answer: take one result away, far from the end
    broken = [*history[:102], *history[103:]]
    fixed = timed("repair", lambda: toolmend.repair(broken, provider=provider, format=format))
    assert fixed.changes and len(fixed.messages) == len(broken) + 1
    timed("trim", lambda: toolmend.trim(history, max_messages=1_000, format=format))
    timed("detect_loops", lambda: toolmend.detect_loops(history, format=format))
    if format not in ("openai-responses", "langchain"):
        timed("merge_consecutive", lambda: toolmend.merge_consecutive(history, format=format))
    bad = [*history, 7]
    with pytest.raises(toolmend.InvalidMessageError, match=f"message {len(history)}"):
        timed("bad-last", lambda: toolmend.check(bad, provider=provider, format=format))
    print(f"\n{format} x {size:,}: " + ", ".join(f"{k} {v:.2f}s" for k, v in timings.items()))
    assert timings["check"] < 60 and timings["sanitize"] < 60


# --- deep nesting and cycles ------------------------------------------------------------------

DEPTH = 100_000


def deep_list() -> Any:
    value: Any = "leaf"
    for _ in range(DEPTH):
        value = [value]
    return value


def deep_dict() -> Any:
    value: Any = "leaf"
    for _ in range(DEPTH):
        value = {"a": value}
    return value


def cyclic() -> Any:
    value: dict[str, Any] = {"a": 1}
    value["self"] = value
    return value


NESTED = {"deep-list": deep_list, "deep-dict": deep_dict, "cycle": cyclic}


def _put(format: str, where: str, value: Any) -> tuple[list[Any], int]:
    """The base history with ``value`` as a user message's content part, a call's arguments,
    or a tool result's payload; and the index of that message."""
    history = base(format)
    if format == "langchain":
        if where == "content":
            return mutated(
                history, 1, ("content",), [{"type": "text", "text": "x", "v": value}], False
            ), 1
        if where == "arguments":
            calls = [
                {"name": "get_weather", "args": {"v": value}, "id": "call_1", "type": "tool_call"}
            ]
            return mutated(history, 2, ("tool_calls",), calls, False), 2
        return mutated(
            history, 3, ("content",), [{"type": "text", "text": "x", "v": value}], False
        ), 3
    spots = {
        "openai": {
            "content": (
                1,
                ("content",),
                [{"type": "text", "text": "x"}, {"type": "x", "v": value}],
            ),
            "arguments": (2, ("tool_calls", 0, "function", "arguments"), value),
            "result": (3, ("content",), [{"type": "text", "text": "x", "v": value}]),
        },
        "openai-responses": {
            "content": (1, ("content", 0, "v"), value),
            "arguments": (2, ("arguments",), value),
            "result": (3, ("output",), [{"type": "input_text", "text": "x", "v": value}]),
        },
        "anthropic": {
            "content": (0, ("content", 0, "v"), value),
            "arguments": (1, ("content", 2, "input"), {"v": value}),
            "result": (2, ("content", 0, "content"), [{"type": "text", "text": "x", "v": value}]),
        },
        "gemini": {
            "content": (0, ("parts", 0, "v"), value),
            "arguments": (1, ("parts", 1, "functionCall", "args"), {"v": value}),
            "result": (2, ("parts", 0, "functionResponse", "response"), {"v": value}),
        },
        "bedrock": {
            "content": (0, ("content", 0, "v"), value),
            "arguments": (1, ("content", 1, "toolUse", "input"), {"v": value}),
            "result": (2, ("content", 0, "toolResult", "content", 0), {"json": value}),
        },
    }
    at, path, item = spots[format][where]
    out = list(history)
    out[at] = copy.deepcopy(out[at])
    parent = out[at]
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = item
    return out, at


@pytest.mark.parametrize("nested", NESTED)
@pytest.mark.parametrize("where", ["content", "arguments", "result"])
@pytest.mark.parametrize("format", FORMATS)
def test_deep_and_cyclic_values(format: str, where: str, nested: str) -> None:
    """Passed through where toolmend need not look inside; a clear error naming the message
    and field where a repair must write them as JSON; never a RecursionError or a hang."""
    history, at = _put(format, where, NESTED[nested]())
    provider = NATIVE[format]
    with deadline(20):
        problems = toolmend.check(history, provider=provider, format=format)
        if not problems:
            assert toolmend.sanitize(history, provider=provider, format=format) is history
        run_everything(history, format, provider, at=at)
        # the holder's partner gone: the repair must move, render or answer around the value
        for drop in {1, 2, 3} - {at}:
            if drop < len(history):
                broken = [m for n, m in enumerate(history) if n != drop]
                run_everything(broken, format, provider, at=at - (drop < at))


_REPEAT_TARGETS = ["openai", "deepseek", "anthropic", "gemini", "mistral", "bedrock"]


@pytest.mark.parametrize("provider", _REPEAT_TARGETS)
@pytest.mark.parametrize("nested", NESTED)
def test_a_result_sent_twice_with_a_deep_or_cyclic_value(nested: str, provider: str) -> None:
    """A result sent twice whose content is a deep or cyclic value (two copies, not one
    object): the fast paths' test of a repeat (``_openai_chat.same_result``) says "not the
    same" without looking inside, the planner reads its text and drops the repeat, as the
    whole path does; ``==`` on the two copies raised RecursionError out of every target's
    repair but Bedrock's (Mistral's one walk, the range scan, ``quick_mend``)."""
    call_id = "call_000000000000000000000001"
    history = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ]},
        {"role": "tool", "tool_call_id": call_id, "content": [NESTED[nested]()]},
        {"role": "tool", "tool_call_id": call_id, "content": [NESTED[nested]()]},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "thanks"},
    ]  # fmt: skip
    fixed = toolmend.repair(history, provider=provider)
    profile = get_profile(provider)
    expected, changes = whole_repair(get_format("openai"), history, profile, toolmend.Policy())
    assert "dropped_duplicate_result" in [change.code for change in fixed.changes]
    assert len(fixed.messages) == len(expected) == 5
    assert fixed.messages[2] is history[2] or fixed.messages[2]["content"] is history[2]["content"]
    assert list(fixed.changes) == changes


def test_a_repeat_is_told_without_comparing_nested_values() -> None:
    """Two copies of a value that shares its lists (2**64 paths to its leaf): not the same
    repeat, told at once (``==`` walks every path); flat values and content parts compare."""

    def shared(depth: int) -> Any:
        value: Any = ["leaf"]
        for _ in range(depth):
            value = [value, value]
        return value

    first = {"role": "tool", "tool_call_id": "a", "content": shared(64)}
    assert not same_result(first, {**first, "content": shared(64)})
    assert same_result(first, dict(first))
    parts = [{"type": "text", "text": "x"}]
    assert same_result({"content": parts, "n": 1}, {"content": copy.deepcopy(parts), "n": True})
    assert not same_result({"content": parts}, {"content": [{"type": "text", "text": "y"}]})
    assert not same_result({"content": "x"}, {"content": "x", "name": "f"})
    assert not same_result({"content": float("nan")}, {"content": float("nan")})


def test_deep_arguments_that_must_become_text_name_message_and_field() -> None:
    """OpenAI arguments must be a JSON string: a dict the repair cannot write is named."""
    for value in (deep_dict(), cyclic(), {"when": object()}):
        history = base("openai")
        history[2] = copy.deepcopy(history[2])
        history[2]["tool_calls"][0]["function"]["arguments"] = value
        assert [p.code for p in toolmend.check(history)] == ["arguments_not_string"]
        with pytest.raises(toolmend.InvalidMessageError) as raised:
            toolmend.repair(history)
        assert raised.value.index == 2
        assert raised.value.field == "tool_calls[0].function.arguments"
        assert isinstance(raised.value, TypeError) and isinstance(raised.value, ValueError)


def test_a_result_that_cannot_be_written_as_text_is_named() -> None:
    """An orphan Gemini result kept as text must be written as JSON: a cycle cannot be."""
    history = base("gemini")
    history[2] = copy.deepcopy(history[2])
    history[2]["parts"][0]["functionResponse"]["response"] = cyclic()
    orphaned = [history[0], history[2], history[3]]
    keep = toolmend.Policy(orphan_result="text")
    with pytest.raises(toolmend.InvalidMessageError) as raised:
        toolmend.repair(orphaned, provider="gemini", policy=keep)
    assert raised.value.index == 1
    assert raised.value.field == "parts[0].functionResponse.response"
    dropped = toolmend.repair(orphaned, provider="gemini")  # the default drops it: no writing
    assert [c.code for c in dropped.changes] == ["dropped_orphan_result"]


# --- the command line -------------------------------------------------------------------------


def _cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, *args: str
) -> tuple[int, str, str]:
    source = tmp_path / "history.json"
    source.write_bytes(content)
    try:
        with deadline(30):
            code = cli.main([*args[:1], str(source), *args[1:]])
    except SystemExit as exit:
        code = int(exit.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


BAD_FILES = {
    "not-utf-8": (b"\xff\xfe\x00[{]", "not UTF-8"),
    "latin-1": ('[{"role": "user", "content": "caf\xe9"}]'.encode("latin-1"), "not UTF-8"),
    "empty": (b"", "not JSON"),
    "null": (b"null", "got NoneType"),
    "number": (b"42", "got int"),
    "string": (b'"hello"', "got str"),
    "object-without-history": (b'{"model": "gpt"}', "without a 'messages'"),
    "deep-json": (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    "history-null": (b'{"messages": null}', "messages must be a list"),
    "message-number": (b'[{"role": "user", "content": "hi"}, 7]', "message 1"),
    "role-number": (b'[{"role": 3, "content": "hi"}]', "message 0, field 'role'"),
    "id-number": (
        b'[{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": 5, "content": "r"}]',
        "message 1, field 'tool_call_id'",
    ),
    "tool-calls-string": (
        b'[{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": "call"}]',
        "message 1, field 'tool_calls'",
    ),
    "function-string": (
        b'[{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": '
        b'[{"id": "c", "type": "function", "function": "f"}]}]',
        "message 1, field 'tool_calls[0].function'",
    ),
    "gemini-parts-string": (
        b'{"contents": [{"role": "user", "parts": "hi"}]}',
        "message 0, field 'parts'",
    ),
    "anthropic-block-number": (
        b'[{"role": "user", "content": [{"type": "tool_result", "tool_use_id": 5}]}]',
        "message 0, field 'content[0].tool_use_id'",
    ),
}


@pytest.mark.parametrize("command", ["check", "repair"])
@pytest.mark.parametrize("name", BAD_FILES)
def test_cli_bad_files_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, name: str
) -> None:
    content, words = BAD_FILES[name]
    code, out, err = _cli(tmp_path, capsys, content, command)
    assert code == 2, (out, err)
    assert words in err, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert out == ""


@pytest.mark.parametrize("format", ["openai", "openai-responses", "anthropic", "gemini", "bedrock"])
def test_cli_takes_every_format_and_big_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], format: str
) -> None:
    history = base(format)
    history[0 if format in ("anthropic", "gemini", "bedrock") else 1] = json.loads(
        json.dumps(history[0 if format in ("anthropic", "gemini", "bedrock") else 1]).replace(
            SECRETS[0], "y" * 10_000_000
        )
    )
    content = json.dumps(history).encode()
    code, out, err = _cli(tmp_path, capsys, content, "check", "--provider", NATIVE[format])
    assert (code, err) == (0, ""), err
    broken = json.dumps(history[:2] + history[3:]).encode()  # an orphan call
    code, out, err = _cli(tmp_path, capsys, broken, "repair", "--provider", NATIVE[format])
    assert code == 0, err
    assert toolmend.check(json.loads(out), provider=NATIVE[format], format=format) == []


def test_cli_unknown_names_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    content = json.dumps(base("openai")).encode()
    code, _, err = _cli(tmp_path, capsys, content, "check", "--provider", "opneai")
    assert code == 2 and "Did you mean 'openai'?" in err
    code, _, err = _cli(tmp_path, capsys, content, "check", "--format", "antropic")
    assert code == 2 and "Did you mean 'anthropic'?" in err
    code, _, err = _cli(tmp_path, capsys, content, "check", "-f", "gemini", "-p", "gemini")
    assert code == 2 and "message 0, field 'parts'" in err  # chat messages are not Contents
    code, _, err = _cli(tmp_path, capsys, content, "check", "-f", "bedrock", "-p", "bedrock")
    assert code == 2 and "message 0, field 'content'" in err


@pytest.mark.slow
def test_cli_non_utf8_file_through_the_real_command(tmp_path: Path) -> None:
    source = tmp_path / "history.json"
    source.write_bytes(b'[{"role": "user", "content": "\xc3\x28"}]')
    done = subprocess.run(
        [sys.executable, "-m", "toolmend", "repair", str(source)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr == f"toolmend: {source}: not UTF-8 text (byte 30)\n"
    assert done.stdout == ""


def test_cli_a_directory_and_a_missing_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for path in (str(tmp_path), str(tmp_path / "missing.json")):
        with pytest.raises(SystemExit) as exit:
            cli.main(["check", path])
        assert exit.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith(f"toolmend: {path}: ") and err.count("\n") == 1


_CROSS_TARGETS = ["openai", "deepseek", "anthropic", "bedrock", "gemini", "mistral", "groq"]


@pytest.mark.parametrize("provider", _CROSS_TARGETS)
@pytest.mark.parametrize(
    ("at", "key"), [(1, "role"), (3, "role"), (5, "role"), (1, "tool_calls"), (2, "tool_call_id")]
)
@pytest.mark.parametrize("value", [[], {}, [[]]])
def test_an_unhashable_value_in_a_damaged_history_is_named_not_a_type_error(
    provider: str, at: int, key: str, value: Any
) -> None:
    """The one-pass checks, the range scan and the one-walk range repair put roles and ids in
    sets and dict keys: a list or a dict where a string belongs must reach the full path, which
    names the message (or reads the history), never raise ``TypeError`` from a set lookup (the
    merge of the third speed round did, for roles and call ids)."""
    history: list[Any] = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "x"},
        {"role": "tool", "tool_call_id": "call_1", "content": "x"},  # a repeat: a damaged range
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "q2"},
    ]
    broken = copy.deepcopy(history)
    broken[at][key] = value
    for run in (toolmend.repair, toolmend.check):
        with contextlib.suppress(toolmend.InvalidHistoryError):
            run(broken, provider=provider)


@pytest.mark.parametrize("provider", _CROSS_TARGETS)
@pytest.mark.parametrize("answered", [True, False])
def test_a_lone_surrogate_in_a_call_id_bound_for_another_family(
    provider: str, answered: bool
) -> None:
    """An OpenAI-shaped call id holding a lone surrogate (what ``json.loads`` makes of
    ``"\\ud800"``), bound for a family that rewrites ids outside its pattern (Anthropic,
    Bedrock, Mistral): the new id is made and the history repaired, never a
    ``UnicodeEncodeError`` from hashing the old id."""
    odd = "call_\ud800x"
    call = {"id": odd, "type": "function", "function": {"name": "f", "arguments": "{}"}}
    history: list[Any] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        *([{"role": "tool", "tool_call_id": odd, "content": "x"}] if answered else []),
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "q2"},
    ]
    before = copy.deepcopy(history)
    result = toolmend.repair(history, provider=provider)
    assert history == before
    assert result.problems_left == ()
    assert toolmend.repair(result.messages, provider=provider).messages is result.messages
    calls = result.messages[1]["tool_calls"]
    if provider in ("anthropic", "bedrock", "mistral"):  # their patterns refuse the surrogate
        assert calls[0]["id"] != odd and calls[0]["id"].isascii()
