"""Log files written by real hook calls, for the ``toolmend stats`` tests.

:func:`produce` sends histories through real hooks (the openai SDK patched by
``toolmend.integrations.patch``, over real HTTP to the strict provider server, and
``toolmend.integrations.hooks.mend``, which every hook calls) while logger ``toolmend`` writes
to three files at once: a plain format, python-json-logger's JSON, and the bare messages. Each
call's :class:`toolmend.integrations.telemetry.HookReport` is collected too, so a test compares
what ``toolmend stats`` reads in the logs with what the hooks said they did
(:func:`expected`): a change to the log lines breaks the tests.
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import toolmend
import toolmend._policy
from toolmend.integrations import hooks, telemetry
from toolmend.integrations.budget import Budget
from toolmend.testing import StrictProviderServer

PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

MODEL_IN_SOURCE = "claude-sonnet-4-5"
"""The model a direct call names in its source, which stats must drop."""


def user(text: str = "Weather in Paris?") -> dict[str, Any]:
    return {"role": "user", "content": text}


def calls(*ids: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": i,
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
            for i in ids
        ],
    }


def result(call_id: str, text: str = "21 C") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def chat_broken(call_id: str = "call_sent_1") -> list[Any]:
    """A user message between a call and its result (a 400 from every OpenAI-family API)."""
    return [user(), calls(call_id), user("Still there?"), result(call_id)]


def chat_left(call_id: str = "call_left_1") -> list[Any]:
    """An orphan result (dropped) and a call still waiting, which a ``frontier="keep"``
    policy leaves: a repair with a problem left."""
    return [user(), result("call_orphan_9"), user("again"), calls(call_id)]


def chat_loop() -> list[Any]:
    """The same call failing four times in a row: the loop guard's finding."""
    messages: list[Any] = [user("Fix the build")]
    for n in range(4):
        messages += [calls(f"call_loop_{n}"), result(f"call_loop_{n}", "failed")]
    return messages


def anthropic_broken() -> list[Any]:
    use = {"type": "tool_use", "id": "toolu_sent_01", "name": "get_weather", "input": {}}
    return [
        user(),
        {"role": "assistant", "content": [{"type": "text", "text": "Let me check."}, use]},
        user("Still there?"),
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_sent_01", "content": "21"}],
        },
    ]


SECRET_IDS = (
    "call_sent_1",
    "call_left_1",
    "call_orphan_9",
    "call_loop_0",
    "toolu_sent_01",
    "call_resp_1",
    "fault_id_77",
)
"""Every tool call id the histories (and the injected fault's message) carry: none may appear
in what stats prints."""


class InjectedFaultError(RuntimeError):
    """The fault injected inside toolmend; its text looks like a "repaired" line, which must not
    be counted when it appears in the traceback."""


FAULT_TEXT = "toolmend repaired fake.hook for openai: fake_code@1[fault_id_77]"


def _fault(*args: Any, **kwargs: Any) -> Any:
    raise InjectedFaultError(FAULT_TEXT)


@dataclass
class Produced:
    """The log files and what the hooks reported while writing them."""

    plain: Path
    json: Path
    messages: Path
    reports: list[telemetry.HookReport]
    outside: Counter[str] = field(default_factory=Counter)
    """hook -> failures logged outside ``mend`` (no report for them)."""
    left_codes: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(provider, code) -> requests sent with that problem left, from the repairs themselves."""


@contextmanager
def capture(handlers: Sequence[logging.Handler]) -> Iterator[list[telemetry.HookReport]]:
    """Logger ``toolmend`` at INFO into ``handlers``, and every hook report into the list."""
    logger = logging.getLogger("toolmend")
    level = logger.level
    logger.setLevel(logging.INFO)
    for handler in handlers:
        logger.addHandler(handler)
    reports: list[telemetry.HookReport] = []
    telemetry.add_sink(reports.append)
    try:
        yield reports
    finally:
        telemetry.remove_sink(reports.append)
        for handler in handlers:
            logger.removeHandler(handler)
            handler.close()
        logger.setLevel(level)


def _handler(path: Path, formatter: logging.Formatter) -> logging.Handler:
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(formatter)
    return handler


def produce(folder: Path) -> Produced:
    """Run every hook outcome once, logging to three files in ``folder``."""
    import openai
    from pythonjsonlogger.json import JsonFormatter

    import toolmend.integrations.patch as tm

    plain, json_log, messages = folder / "plain.log", folder / "json.log", folder / "messages.log"
    handlers = [
        _handler(plain, logging.Formatter(PLAIN_FORMAT)),
        _handler(json_log, JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s")),
        _handler(messages, logging.Formatter("%(message)s")),
    ]
    outside: Counter[str] = Counter()
    left: Counter[tuple[str, str]] = Counter()
    with StrictProviderServer() as server, capture(handlers) as reports:
        tm.patch()
        try:
            client = openai.OpenAI(
                base_url=server.openai_base_url, api_key="sk-test", max_retries=0
            )
            for _ in range(2):  # repaired, through the SDK, accepted by the server
                client.chat.completions.create(model="gpt-4o", messages=chat_broken())
                assert server.last_request.accepted
            responses_input = [
                user(),
                {
                    "type": "function_call",
                    "call_id": "call_resp_1",
                    "name": "get_weather",
                    "arguments": "{}",
                },
                user("Still there?"),
            ]
            client.responses.create(model="gpt-4o", input=responses_input)
            assert server.last_request.accepted
            before = len(reports)
            # fails in the patch, outside mend: the original goes out, and the server refuses it
            with _patched(tm, "request_profile"), contextlib.suppress(openai.BadRequestError):
                client.chat.completions.create(model="gpt-4o", messages=chat_broken())
            if len(reports) == before:  # no telemetry.failed_open report from the patch (yet)
                outside["openai.Completions.create"] += 1
        finally:
            tm.unpatch()
        source = f"test.mend({MODEL_IN_SOURCE})"
        hooks.mend(anthropic_broken(), provider="anthropic", source=source)
        keep = toolmend.Policy(frontier="keep")
        mended = hooks.mend(
            chat_left(), provider="deepseek", source=source, options=hooks.HookOptions(policy=keep)
        )
        assert mended.changes
        left_history = toolmend.repair(chat_left(), provider="deepseek", policy=keep)
        left.update(("deepseek", p.code) for p in left_history.problems_left)
        report = hooks.HookOptions(policy="report")
        found = hooks.mend(chat_broken(), provider="openai", source="test.report", options=report)
        assert found.problems and not found.changes
        left.update(("openai", p.code) for p in found.problems)
        looped = hooks.mend(chat_loop(), provider="openai", source="test.loop")
        assert looped.loops
        assert hooks.mend([user(), 42], provider="openai", source="test.unreadable").failed
        over = hooks.HookOptions(budget=Budget(max_items=2))  # sent as it came: over the cap
        assert hooks.mend(chat_broken(), provider="openai", source="test.cap", options=over).failed
        with _patched(hooks, "repair"):  # fails inside mend: logged with its traceback
            assert hooks.mend(chat_broken(), provider="mistral", source="test.fault").failed
        # errors outside any one request: a hook that cannot be built, a sink that fails
        with _patched(toolmend._policy, "as_policy"):
            assert not hooks.check_names(source="TestHook")
        telemetry._failed_sinks.discard(id(_fault))  # logged once per sink and process
        telemetry.add_sink(_fault)
        try:
            hooks.mend(chat_broken(), provider="openai", source="test.sink")
        finally:
            telemetry.remove_sink(_fault)
    return Produced(plain, json_log, messages, reports, outside, left)


@contextmanager
def _patched(owner: Any, name: str) -> Iterator[None]:
    real = getattr(owner, name)
    setattr(owner, name, _fault)
    try:
        yield
    finally:
        setattr(owner, name, real)


# --- what stats must say -------------------------------------------------------------------------


def expect_table(rows: Sequence[tuple[str, Sequence[str]]], count: str) -> dict[str, Any]:
    """The JSON of one stats table for requests ``(provider, codes)``, counted here afresh."""
    out: dict[str, Any] = {"requests": len(rows), count: sum(len(c) for _, c in rows)}
    providers: dict[str, Any] = {}
    for provider, codes in rows:
        entry = providers.setdefault(provider, {"requests": 0, count: 0, "codes": {}})
        entry["requests"] += 1
        entry[count] += len(codes)
        for code, times in Counter(codes).items():
            slot = entry["codes"].setdefault(code, {"requests": 0, count: 0})
            slot["requests"] += 1
            slot[count] += times
    out["by_provider"] = providers
    return out


def expected(
    reports: Sequence[telemetry.HookReport], outside: Counter[str] | None = None
) -> dict[str, Any]:
    """What ``toolmend stats --json`` must say of the log of the calls that made ``reports``
    (plus ``outside``: hook -> failures logged outside ``mend``).

    The reports give the problems left as a count, not codes: the ``problems_left`` entry holds
    requests and problems by provider only."""
    outside = outside or Counter()
    failed = Counter(r.hook for r in reports if r.outcome == "failed_open") + outside
    hooks_seen: dict[str, Counter[str]] = {}
    for r in reports:
        if r.outcome == "clean" and not r.loop_codes:
            continue
        row = hooks_seen.setdefault(r.hook, Counter())
        row["repaired"] += bool(r.change_codes)
        row["problems_left"] += bool(r.problems_left)
        row["loop"] += bool(r.loop_codes)
        row["failed_open"] += r.outcome == "failed_open"
    for hook, count in outside.items():
        hooks_seen.setdefault(hook, Counter())["failed_open"] += count
    left: Counter[str] = Counter()
    left_requests: Counter[str] = Counter()
    for r in reports:
        if r.problems_left:
            left[r.provider] += r.problems_left
            left_requests[r.provider] += 1
    columns = ("repaired", "problems_left", "loop", "failed_open")
    return {
        "repaired": expect_table(
            [(r.provider, r.change_codes) for r in reports if r.change_codes], "changes"
        ),
        "problems_left": {
            "requests": left_requests.total(),
            "problems": left.total(),
            "by_provider": {p: (left_requests[p], left[p]) for p in left},
        },
        "loops": expect_table(
            [(r.provider, r.loop_codes) for r in reports if r.loop_codes], "findings"
        ),
        "failed_open": dict(failed),
        "hooks": {h: {c: row[c] for c in columns} for h, row in hooks_seen.items()},
    }


def actual(summary: dict[str, Any]) -> dict[str, Any]:
    """The parts of a stats JSON summary :func:`expected` predicts, in its shape."""
    left = summary["problems_left"]
    unrepaired = summary["sent_unrepaired"]["by_hook"]
    return {
        "repaired": summary["repaired"],
        "problems_left": {
            "requests": left["requests"],
            "problems": left["problems"],
            "by_provider": {
                p: (entry["requests"], entry["problems"])
                for p, entry in left["by_provider"].items()
            },
        },
        "loops": summary["loops"],
        "failed_open": {h: sum(c.values()) for h, c in unrepaired.items()},
        "hooks": summary["hooks"],
    }
