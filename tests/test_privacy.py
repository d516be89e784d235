"""No log record at any level and no exception message carries message content.

Every text, tool argument, tool result, participant name, reasoning or thinking text,
signature, image/audio/file data and code in the histories below is a unique canary
(``zqx<n>kv``). Histories of every format, valid and damaged (hand-written ones with every
content field, and the hypothesis strategies' conversations), go through the core API (check,
repair under each policy, sanitize, trim, the loop guard) for every provider profile with
``TOOLMEND_DEBUG`` on and the root logger at DEBUG, through the CLI, and through the hooks with
real SDKs against the strict server. No canary may appear in any formatted log record
(message and traceback), in any exception toolmend raises (message, args, traceback, the
problems it carries), or in the problems and changes toolmend reports (they are documented as
safe to log).

Allowed by design, so never canaries here: message roles, block and item types, tool call ids
and function names (the ones calls and results name): they are structure, and log lines and
errors name them to say where a problem is. A ``name`` that is not a function name (an OpenAI
participant name, a LangChain message's name on a human or AI message) is content.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import json
import logging
import os
import random
import re
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolmend
import toolmend._api
from toolmend.profiles import PROFILES

from support.block_histories import FORMATS as BLOCK_FORMATS
from support.block_histories import damaged_block_histories
from support.histories import DAMAGE_OPS, STUB_CONTENT, damaged_conversations

ROOT = Path(__file__).resolve().parent.parent
CANARY = re.compile(r"zqx\d+kv")
EXAMPLES = 2000 if os.environ.get("TOOLMEND_FUZZ") else 25

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


# --- canaries ----------------------------------------------------------------------------------


class Canaries:
    """Unique canary texts: ``zqx<n>kv lorem zqx<n>kv`` (a leak of either end is caught)."""

    def __init__(self) -> None:
        self.count = itertools.count(1)

    def __call__(self) -> str:
        token = f"zqx{next(self.count)}kv"
        return f"{token} lorem {token}"


_STRUCTURE = frozenset(
    {
        "role",
        "type",
        "id",
        "call_id",
        "tool_call_id",
        "tool_use_id",
        "toolUseId",
        "name",
        "status",
        "format",
        "mime_type",
        "mimeType",
        "media_type",
        "detail",
        "outcome",
        "language",
        "is_error",
        "thought",
    }
)
_PARTICIPANTS = frozenset({"user", "assistant", "system", "developer"})


def canarify(value: Any, canary: Callable[[], str]) -> Any:
    """A copy of ``value`` (plain data) with every content string a new canary: structure
    (see the module docstring), empty strings and toolmend's stub text stay as they are;
    ``arguments`` JSON keeps its keys and gets canaries for its string values."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key == "arguments" and isinstance(item, str):
                try:
                    out[key] = json.dumps(canarify(json.loads(item), canary))
                except ValueError:
                    out[key] = canary()
            elif key == "name" and value.get("role") in _PARTICIPANTS:
                out[key] = canary()  # a participant's name, not a function's
            elif key in _STRUCTURE:
                out[key] = item
            else:
                out[key] = canarify(item, canary)
        return out
    if isinstance(value, list):
        return [canarify(item, canary) for item in value]
    if isinstance(value, str) and value and value != STUB_CONTENT:
        return canary()
    return value


# --- capturing everything ----------------------------------------------------------------------


class Capture(logging.Handler):
    """Every record of every logger, formatted with its traceback."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def texts(self, *, toolmend_only: bool = False) -> list[str]:
        """The formatted records (only toolmend's own when the SDKs log request bodies)."""
        return [
            self.format(record)
            for record in self.records
            if not toolmend_only or _from_toolmend(record)
        ]


def _from_toolmend(record: logging.LogRecord) -> bool:
    path = record.pathname.replace(os.sep, "/")
    return (
        record.name.split(".")[0] == "toolmend"
        or "/src/toolmend/" in path
        or "/integrations/" in path
    )


@contextlib.contextmanager
def captured(monkeypatch: Any) -> Iterator[Capture]:
    """Root logger at DEBUG with a capturing handler, and toolmend's DEBUG structure lines on
    (what ``TOOLMEND_DEBUG=1`` turns on at import)."""
    capture = Capture()
    root = logging.getLogger()
    level = root.level
    root.addHandler(capture)
    root.setLevel(logging.DEBUG)
    # another test (or a library's logging setup) may have left toolmend's logger quieter
    ours = logging.getLogger("toolmend")
    monkeypatch.setattr(ours, "level", logging.DEBUG)
    monkeypatch.setattr(ours, "disabled", False)
    monkeypatch.setattr(ours.manager, "disable", 0)  # logging.disable(...) undone for the test
    ours.manager._clear_cache()
    monkeypatch.setattr(toolmend._api, "_DEBUG", True)
    try:
        yield capture
    finally:
        root.removeHandler(capture)
        root.setLevel(level)
        ours.manager._clear_cache()


def error_texts(error: BaseException) -> list[str]:
    """What a caller or a log line can see of an exception: message, args, traceback (with its
    chain), and the problems it carries."""
    texts = ["".join(traceback.format_exception(error)), repr(error.args), str(error)]
    for problem in getattr(error, "problems", ()):
        texts += [str(problem), repr(problem)]
    return texts


def result_texts(result: Any) -> list[str]:
    """The reports toolmend hands back that are meant for logs: problems and changes."""
    if isinstance(result, toolmend.Repair):
        items = [*result.changes, *result.problems, *result.problems_left]
    elif isinstance(result, list) and all(isinstance(p, toolmend.Problem) for p in result):
        items = list(result)
    else:
        return []  # a history: content by design
    return [f"{item} {item!r}" for item in items]


def leaks(texts: list[str]) -> list[str]:
    return [text for text in texts if CANARY.search(text)]


# --- the core API ------------------------------------------------------------------------------


def _probe(format: str) -> list[Any]:
    text = {"role": "user", "content": "x"}
    return {
        "gemini": [{"role": "user", "parts": [{"text": "x"}]}],
        "bedrock": [{"role": "user", "content": [{"text": "x"}]}],
        "langchain": [_langchain().HumanMessage("x")],
    }.get(format, [text])


def _langchain() -> Any:
    return pytest.importorskip("langchain_core.messages")


def profiles_for(format: str) -> list[str]:
    """The profiles that have rules for ``format``'s histories."""
    found = []
    for name in PROFILES:
        try:
            toolmend.check(_probe(format), provider=name, format=format)
        except toolmend.InvalidHistoryError:
            continue
        found.append(name)
    return found


def exercise(history: Any, format: str, profiles: list[str]) -> list[str]:
    """Everything toolmend tells about ``history``: results meant for logs, and every error."""
    texts: list[str] = []

    def run(call: Callable[..., Any], **options: Any) -> None:
        try:
            texts.extend(result_texts(call(history, format=format, **options)))
        except Exception as error:
            texts.extend(error_texts(error))

    for provider in profiles:
        run(toolmend.check, provider=provider)
        for policy in (None, "strict", "report", toolmend.Policy(frontier="keep")):
            run(toolmend.repair, provider=provider, policy=policy)
    run(toolmend.detect_loops, raise_=True)
    run(toolmend.detect_loops, live_only=True, repeat=2)
    for limits in ({"max_messages": 1}, {"max_messages": 3}, {"max_tokens": 40}):
        run(toolmend.trim, **limits)
    run(toolmend.atomic_groups)
    run(toolmend.merge_consecutive)
    return texts


def _call(call_id: str, name: str, **arguments: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def openai_rich(c: Canaries) -> list[Any]:
    return [
        {"role": "system", "content": c()},
        {"role": "developer", "content": [{"type": "text", "text": c()}]},
        {
            "role": "user",
            "name": c(),
            "content": [
                {"type": "text", "text": c()},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64," + c()}},
                {"type": "input_audio", "input_audio": {"data": c(), "format": "wav"}},
                {"type": "file", "file": {"file_data": c(), "filename": c()}},
            ],
        },
        {
            "role": "assistant",
            "name": c(),
            "content": c(),
            "reasoning_content": c(),
            "refusal": c(),
            "tool_calls": [
                _call("call_a", "get_weather", city=c(), note=c()),
                _call("call_b", "search", q=c()),
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": c()},
        {"role": "tool", "tool_call_id": "call_b", "content": [{"type": "text", "text": c()}]},
        {"role": "assistant", "content": [{"type": "text", "text": c()}]},
        {"role": "user", "content": c()},
    ]


def responses_rich(c: Canaries) -> list[Any]:
    return [
        {"role": "system", "content": c()},
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": c()},
                {"type": "input_image", "image_url": "data:image/png;base64," + c()},
                {"type": "input_file", "file_data": c(), "filename": c()},
            ],
        },
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": c()}],
            "encrypted_content": c(),
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_a",
            "name": "get_weather",
            "arguments": json.dumps({"city": c()}),
        },
        {"type": "function_call_output", "call_id": "call_a", "output": c()},
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "content": [{"type": "output_text", "text": c()}],
        },
        {"type": "custom_tool_call", "call_id": "call_c", "name": "code", "input": c()},
        {"type": "custom_tool_call_output", "call_id": "call_c", "output": c()},
        {"role": "user", "content": c()},
    ]


def anthropic_rich(c: Canaries) -> list[Any]:
    def image() -> dict[str, Any]:
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": c()},
        }

    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": c()},
                image(),
                {
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": c()},
                    "title": c(),
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": c(), "signature": c()},
                {"type": "redacted_thinking", "data": c()},
                {"type": "text", "text": c()},
                {
                    "type": "tool_use",
                    "id": "toolu_a",
                    "name": "get_weather",
                    "input": {"city": c()},
                },
                {"type": "tool_use", "id": "toolu_b", "name": "search", "input": {"q": c()}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": c()},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_b",
                    "content": [{"type": "text", "text": c()}, image()],
                    "is_error": True,
                },
                {"type": "text", "text": c()},
            ],
        },
        {"role": "assistant", "content": c()},
        {"role": "user", "content": c()},
    ]


def gemini_rich(c: Canaries) -> list[Any]:
    return [
        {
            "role": "user",
            "parts": [
                {"text": c()},
                {"inline_data": {"mime_type": "image/png", "data": c()}},
                {"file_data": {"mime_type": "application/pdf", "file_uri": c()}},
            ],
        },
        {
            "role": "model",
            "parts": [
                {"text": c(), "thought": True},
                {
                    "function_call": {"name": "get_weather", "args": {"city": c()}},
                    "thought_signature": c(),
                },
                {"function_call": {"name": "search", "args": {"q": c()}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"function_response": {"name": "get_weather", "response": {"result": c()}}},
                {"function_response": {"name": "search", "response": {"output": c()}}},
            ],
        },
        {
            "role": "model",
            "parts": [
                {"text": c()},
                {"executable_code": {"code": c(), "language": "PYTHON"}},
                {"code_execution_result": {"output": c(), "outcome": "OUTCOME_OK"}},
            ],
        },
        {"role": "user", "parts": [{"text": c()}]},
    ]


def bedrock_rich(c: Canaries) -> list[Any]:
    return [
        {
            "role": "user",
            "content": [
                {"text": c()},
                {"image": {"format": "png", "source": {"bytes": c()}}},
                {"document": {"format": "txt", "name": c(), "source": {"bytes": c()}}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"reasoningContent": {"reasoningText": {"text": c(), "signature": c()}}},
                {"text": c()},
                {"toolUse": {"toolUseId": "tu_a", "name": "get_weather", "input": {"city": c()}}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": "tu_a",
                        "content": [{"text": c()}, {"json": {"k": c()}}],
                        "status": "success",
                    }
                }
            ],
        },
        {"role": "assistant", "content": [{"text": c()}]},
        {"role": "user", "content": [{"text": c()}]},
    ]


def langchain_rich(c: Canaries) -> list[Any]:
    m = _langchain()
    call = {"name": "get_weather", "args": {"city": c()}, "id": "call_a", "type": "tool_call"}
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + c()}}
    return [
        m.SystemMessage(c()),
        m.HumanMessage([{"type": "text", "text": c()}, image], name=c()),
        m.AIMessage(c(), tool_calls=[call], additional_kwargs={"reasoning_content": c()}, name=c()),
        m.ToolMessage(c(), tool_call_id="call_a", name="get_weather", artifact=c()),
        m.AIMessage([{"type": "text", "text": c()}]),
        m.HumanMessage(c()),
    ]


RICH: dict[str, Callable[[Canaries], list[Any]]] = {
    "openai": openai_rich,
    "openai-responses": responses_rich,
    "anthropic": anthropic_rich,
    "gemini": gemini_rich,
    "bedrock": bedrock_rich,
    "langchain": langchain_rich,
}


def _user(format: str, c: Canaries) -> Any:
    if format == "gemini":
        return {"role": "user", "parts": [{"text": c()}]}
    if format == "bedrock":
        return {"role": "user", "content": [{"text": c()}]}
    if format == "langchain":
        return _langchain().HumanMessage(c())
    return {"role": "user", "content": c()}


def damaged(history: list[Any], format: str, c: Canaries) -> Iterator[list[Any]]:
    """``history`` broken every way a list can be: each message dropped, doubled, moved to the
    end, a user message put before it; for OpenAI also each of the strategies' damage ops."""
    for i in range(len(history)):
        rest = history[:i] + history[i + 1 :]
        yield rest
        yield [*history[: i + 1], copy.deepcopy(history[i]), *history[i + 1 :]]
        yield [*rest, history[i]]
        yield [*history[:i], _user(format, c), *history[i:]]
    if format == "openai":
        for name, op in DAMAGE_OPS.items():
            for seed in range(2):
                yield canarify(op(history, random.Random(f"{name}{seed}")), c)


@pytest.mark.parametrize("format", sorted(RICH))
def test_every_content_field_of_every_format(format: str, monkeypatch: Any) -> None:
    c = Canaries()
    history = RICH[format](c)
    profiles = profiles_for(format)
    assert profiles
    with captured(monkeypatch) as capture:
        texts = exercise(history, format, profiles)
        for broken in damaged(history, format, c):
            texts += exercise(broken, format, profiles)
    assert CANARY.search(repr(history))  # the canaries are there to be found
    assert leaks(texts) == []
    assert leaks(capture.texts()) == []
    assert any(record.levelno == logging.DEBUG for record in capture.records)


# --- generated histories -------------------------------------------------------------------------

_OPENAI_PROFILES: list[str] = []


def _profiles(format: str) -> list[str]:
    if not _OPENAI_PROFILES:
        _OPENAI_PROFILES.extend(profiles_for("openai"))
    return _OPENAI_PROFILES if format == "openai" else profiles_for(format)


def to_responses(history: list[Any]) -> list[Any]:
    """An OpenAI chat history as Responses input items (tolerant of damaged shapes)."""
    items: list[Any] = []
    for message in history:
        role = message.get("role")
        if role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.get("tool_call_id"),
                    "output": message.get("content") or "",
                }
            )
            continue
        if message.get("content") is not None or role != "assistant":
            items.append({"role": role, "content": message.get("content") or ""})
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            function = call.get("function") or {} if isinstance(call, dict) else {}
            items.append(
                {
                    "type": "function_call",
                    "call_id": call.get("id") if isinstance(call, dict) else None,
                    "name": function.get("name") or "f",
                    "arguments": function.get("arguments") or "{}",
                }
            )
    return items


@settings(max_examples=EXAMPLES, deadline=None)
@given(case=damaged_conversations(id_style="any", reasoning=True))
def test_generated_openai_histories(case: tuple[list[Any], list[Any], list[str]]) -> None:
    from langchain_core.messages import convert_to_messages

    c = Canaries()
    with pytest.MonkeyPatch.context() as monkeypatch, captured(monkeypatch) as capture:
        texts: list[str] = []
        for history in (canarify(case[0], c), canarify(case[1], c)):
            texts += exercise(history, "openai", _profiles("openai"))
            texts += exercise(
                canarify(to_responses(history), c), "openai-responses", ["openai-responses"]
            )
            try:
                messages = convert_to_messages(history)
            except Exception:  # a shape LangChain itself refuses
                continue
            texts += exercise(messages, "langchain", ["deepseek", "anthropic"])
    assert leaks(texts) == []
    assert leaks(capture.texts()) == []


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    case=st.sampled_from(BLOCK_FORMATS).flatmap(
        lambda format: st.tuples(st.just(format), damaged_block_histories(format))
    )
)
def test_generated_block_histories(case: tuple[str, tuple[list[Any], list[str]]]) -> None:
    format, (history, _) = case
    c = Canaries()
    with pytest.MonkeyPatch.context() as monkeypatch, captured(monkeypatch) as capture:
        texts = exercise(canarify(history, c), format, _profiles(format))
    assert leaks(texts) == []
    assert leaks(capture.texts()) == []


# --- what toolmend raises on purpose -------------------------------------------------------------


def hostile(c: Canaries) -> dict[str, tuple[str, Any]]:
    """Histories toolmend cannot read, each full of canaries: (format, history)."""
    user = {"role": "user", "content": c()}
    return {
        "a bare canary string": ("openai", [c()]),
        "tool_calls a string": (
            "openai",
            [user, {"role": "assistant", "content": c(), "tool_calls": c()}],
        ),
        "numeric call id": (
            "openai",
            [
                user,
                {
                    "role": "assistant",
                    "content": c(),
                    "tool_calls": [{**_call("x", "f", q=c()), "id": 7}],
                },
            ],
        ),
        "missing role": ("openai", [{"content": c(), "name": c()}]),
        "content a set": ("openai", [{"role": "user", "content": {c()}}]),
        "content bytes": ("anthropic", [{"role": "user", "content": c().encode()}]),
        "tool_use_id a number": (
            "anthropic",
            [
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": 5, "content": c()}],
                }
            ],
        ),
        "gemini text a number": (
            "gemini",
            [{"role": "user", "parts": [{"text": 5}, {"text": c()}]}],
        ),
        "bedrock content a string": ("bedrock", [{"role": "user", "content": c()}]),
        "responses call_id a number": (
            "openai-responses",
            [
                {
                    "type": "function_call",
                    "call_id": 3,
                    "name": "f",
                    "arguments": json.dumps({"q": c()}),
                }
            ],
        ),
        "not a list": ("openai", {"role": "user", "content": c()}),
        "gemini parts a string": ("gemini", [{"role": "user", "parts": c()}]),
    }


def unreadable(format: str, c: Canaries) -> list[Any]:
    """A JSON history in ``format`` that toolmend cannot read, with canaries."""
    return next(
        h
        for f, h in hostile(c).values()
        if f == format and isinstance(h, list) and _unreadable(h, format)
    )


def _unreadable(history: Any, format: str) -> bool:
    try:
        json.dumps(history)
        toolmend.check(history, provider=_OWN_PROVIDER[format], format=format)
    except toolmend.InvalidHistoryError:
        return True
    except TypeError:  # not JSON
        return False
    return False


def looping(c: Canaries) -> list[Any]:
    """The same call with the same (canary) arguments over and over, then changing ones."""
    same = c()
    history: list[Any] = [{"role": "user", "content": c()}]
    for n in range(4):
        history += [
            {
                "role": "assistant",
                "content": c(),
                "tool_calls": [_call(f"call_{n}", "search", q=same)],
            },
            {"role": "tool", "tool_call_id": f"call_{n}", "content": c()},
        ]
    for n in range(4, 10):
        history += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [_call(f"call_{n}", "fetch", q=c())],
            },
            {"role": "tool", "tool_call_id": f"call_{n}", "content": c()},
        ]
    return history


def test_errors_toolmend_raises_carry_no_content(monkeypatch: Any) -> None:
    c = Canaries()
    raised: list[BaseException] = []
    with captured(monkeypatch) as capture:
        for name, (format, history) in hostile(c).items():
            assert CANARY.search(repr(history)), name
            for call in (toolmend.check, toolmend.repair, toolmend.sanitize):
                try:  # content toolmend never looks into (a set, a number) is no error
                    call(history, provider=format, format=format)
                except toolmend.InvalidHistoryError as error:
                    raised.append(error)
        assert len(raised) >= 3 * (len(hostile(c)) - 2)
        with pytest.raises(toolmend.ToolLoopError) as loop:
            toolmend.detect_loops(looping(c), raise_=True, repeat_tool=3, max_rounds=5)
        raised.append(loop.value)
        assert {p.code for p in loop.value.problems} >= {"repeated_call", "repeated_tool"}
        with pytest.raises(toolmend.ToolChainError) as chain:
            toolmend.repair(openai_rich(c)[:4], provider="deepseek", policy="strict")
        raised.append(chain.value)
        with pytest.raises(toolmend.TrimError) as trimmed:
            toolmend.trim(openai_rich(c)[2:6], max_messages=1)
        raised.append(trimmed.value)
    texts = [text for error in raised for text in error_texts(error)]
    assert leaks(texts) == []
    assert leaks(capture.texts()) == []


# --- the CLI -----------------------------------------------------------------------------------

_OWN_PROVIDER = {
    "openai": "deepseek",
    "openai-responses": "openai-responses",
    "anthropic": "anthropic-thinking",
    "gemini": "gemini-3",
    "bedrock": "bedrock",
}


@pytest.mark.parametrize("format", sorted(_OWN_PROVIDER))
def test_the_cli_reports_no_content(
    format: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    """``check`` (both streams) and ``repair`` (standard error: the history itself goes to
    standard output, or to ``-o``) on valid, damaged and unreadable files."""
    from toolmend._cli import main

    c = Canaries()
    rich = RICH[format](c)
    histories = [rich, *itertools.islice(damaged(rich, format, c), 0, None, 3)]
    histories.append(unreadable(format, c))
    provider = _OWN_PROVIDER[format]
    texts: list[str] = []
    with captured(monkeypatch) as capture:
        for number, history in enumerate(histories):
            path = tmp_path / f"{number}.json"
            path.write_text(json.dumps({"model": "m", "messages": history}))
            for command in ("check", "repair"):
                options = ["-o", str(tmp_path / "out.json")] if command == "repair" else []
                with contextlib.suppress(SystemExit):
                    main([command, str(path), "-p", provider, "-f", format, *options])
                printed = capsys.readouterr()
                texts += [printed.err] + ([printed.out] if command == "check" else [])
    assert any("change(s)" in text for text in texts)
    assert any("toolmend: " in text for text in texts)  # an unreadable file's one line
    assert leaks(texts) == []
    assert leaks(capture.texts()) == []


@pytest.mark.slow
def test_the_cli_in_its_own_process_with_toolmend_debug(tmp_path: Path) -> None:
    c = Canaries()
    path = tmp_path / "history.json"
    path.write_text(json.dumps(openai_rich(c)[2:5]))  # a result missing, a call id too long
    done = subprocess.run(
        [sys.executable, "-m", "toolmend", "repair", str(path), "-p", "mistral"],
        capture_output=True,
        text=True,
        env={**os.environ, "TOOLMEND_DEBUG": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "change(s)" in done.stderr
    assert CANARY.search(done.stdout)  # the repaired history itself keeps its content
    assert leaks([done.stderr]) == []


# --- the hooks, through the real SDKs ----------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    from toolmend.testing import StrictProviderServer

    from support.hook_entries import shared_loop

    with StrictProviderServer() as running:
        yield running
    shared_loop().close()


def _hook_histories(format: str, c: Canaries) -> list[tuple[Any, dict[str, Any]]]:
    """(history, hook options) to send: damaged ones (repaired and logged), the same under the
    strict policy (ToolChainError), a loop (ToolLoopError) and one toolmend cannot read."""
    from support.hook_entries import HISTORIES

    if format == "langchain":
        rich = langchain_rich(c)
        broken = [HISTORIES["langchain"][1](), rich[:3] + rich[4:], [rich[0], *rich[3:]]]
        loop = _langchain().convert_to_messages(looping(c))
        unreadable_history: Any = [rich[0], 42]
    else:
        rich = RICH[format](c)
        small = canarify(HISTORIES[format][1](), c)
        broken = [small, [m for m in rich if m is not rich[-3]]]
        loop = looping(c) if format == "openai" else None
        unreadable_history = unreadable(format, c)
    cases = [(history, {}) for history in broken]
    cases += [(history, {"policy": "strict"}) for history in broken]
    cases.append((unreadable_history, {}))
    if loop is not None:
        cases.append((loop, {"on_loop": "raise"}))
    return cases


_HOOKS = (
    "litellm.completion",
    "litellm.acompletion+stream",
    "openai.chat",
    "openai.responses",
    "anthropic.messages",
    "genai.generate_content",
    "ToolMendHistory.read",
    "ToolMendHistory.write",
    "ToolMendMiddleware.async",
)


@pytest.mark.parametrize("name", _HOOKS)
def test_the_hooks_log_and_raise_no_content(name: str, server: Any, monkeypatch: Any) -> None:
    from support.hook_entries import HOOKS

    hook = next(h for h in HOOKS if h.name == name)
    c = Canaries()
    texts: list[str] = []
    raised: set[str] = set()
    with captured(monkeypatch) as capture:
        for history, options in _hook_histories(hook.format, c):
            if "on_loop" in options and hook.family == "history":
                continue
            try:
                hook.call(server, history, options)
            except toolmend.ToolmendError as error:  # asked for: strict policy, loop guard
                raised.add(type(error).__name__)
                texts += error_texts(error)
            except Exception:  # the SDK's own error (a 400, bad input) is not toolmend's
                pass
    mine = capture.texts(toolmend_only=True)
    assert "ToolChainError" in raised
    assert any("toolmend repaired" in text or "rejected" in text for text in mine)
    if hook.family != "middleware":  # LangGraph refuses what is not a message before the call
        assert any("toolmend cannot read" in text or "not LangChain" in text for text in mine)
    assert leaks(texts) == []
    assert leaks(mine) == []


def test_a_garbage_role_is_quoted_cut_short() -> None:
    """A role is structure and is quoted in problems and changes, but a whole message pasted
    into the role field must not ride along into a log line."""
    role = "CANARY-role " + "x" * 500
    history = [{"role": role, "content": "hi"}]
    (problem,) = toolmend.check(history)
    (change,) = toolmend.repair(history).changes
    for text in (problem.message, change.detail):
        assert "unknown role 'CANARY-role" in text
        assert len(text) < 80
