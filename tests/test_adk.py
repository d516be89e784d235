"""Google ADK: ``ToolMendPlugin``, the plain ``before_model_callback`` and ``repair_session``,
through a real ``Runner``, real session services and the real ``Gemini`` model class, over
real HTTP to the strict server's Gemini route (``Gemini(base_url=...)``, a dummy API key, no
network beyond 127.0.0.1).

A poisoned session that ADK's own contents builder lets through to the model (ADK 2.13 already
drops orphan function responses and unanswered calls that carry an id) fails with the strict
server's 400 (``google.genai.errors.ClientError``) without toolmend and goes through with the
plugin, with the plain callback, and after ``repair_session`` without either; real function
responses keep their exact content and the stored events are never changed.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import random
import runpy
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolmend
import toolmend._api
import toolmend._fastpath
from toolmend.testing import Reply, StrictProviderServer

from support.block_histories import damaged_block_histories

pytest.importorskip("google.adk")
adk_hook = pytest.importorskip("toolmend.integrations.adk")

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.events import Event, EventActions  # noqa: E402
from google.adk.models import Gemini  # noqa: E402
from google.adk.runners import Runner  # noqa: E402
from google.adk.sessions import (  # noqa: E402
    BaseSessionService,
    DatabaseSessionService,
    InMemorySessionService,
)
from google.genai import errors, types  # noqa: E402

ToolMendPlugin = adk_hook.ToolMendPlugin
before_model_callback = adk_hook.before_model_callback
repair_session = adk_hook.repair_session

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")

ROOT = Path(__file__).resolve().parent.parent
APP, USER = "weather", "u1"
REAL = {"result": "21 C, sunny at 14:00 (station LFPG)"}
"""A real tool's answer: it must reach the model exactly as stored."""


@pytest.fixture(scope="module")
def server() -> Iterator[StrictProviderServer]:
    with StrictProviderServer() as running:
        yield running


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, server: StrictProviderServer) -> None:
    """A dummy key, the Gemini Developer API (not Vertex), and no telemetry export."""
    monkeypatch.setenv("GOOGLE_API_KEY", "test")
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    for name in ("GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_AGENT_ENGINE_ID", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    server.clear()


# --- sessions ----------------------------------------------------------------------------------


def text(value: str) -> types.Part:
    return types.Part(text=value)


def call(name: str, call_id: str | None = None) -> types.Part:
    return types.Part(
        function_call=types.FunctionCall(name=name, args={"city": "Paris"}, id=call_id)
    )


def answer(name: str, call_id: str | None = None, response: dict[str, Any] = REAL) -> types.Part:
    return types.Part(
        function_response=types.FunctionResponse(name=name, id=call_id, response=dict(response))
    )


def event(role: str, *parts: types.Part, **extra: Any) -> Event:
    author = "user" if role == "user" and not any(p.function_response for p in parts) else "agent"
    return Event(
        author=author,
        invocation_id="inv-0",
        content=types.Content(role=role, parts=list(parts)),
        **extra,
    )


def poisoned(kind: str) -> list[Event]:
    """Stored sessions ADK 2.13's contents builder sends to the model as they are."""
    question = event("user", text("Weather in Paris?"))
    if kind == "opaque_name":  # a converter named the response after the call id (seed 003)
        return [
            question,
            event("model", call("get_weather", "adk-1")),
            event("user", answer("call_8f2a", "adk-1")),
            event("model", text("Sunny.")),
        ]
    if kind == "interrupted":  # a call without an id (an imported history) never answered
        return [question, event("model", call("get_weather"))]
    if kind == "duplicate":  # the same response stored twice: unequal response and call parts
        return [
            question,
            event("model", call("get_weather", "adk-1")),
            event("user", answer("get_weather", "adk-1"), answer("get_weather", "adk-1")),
            event("model", text("Sunny.")),
        ]
    raise AssertionError(kind)


def valid() -> list[Event]:
    return [
        event("user", text("Weather in Paris?")),
        event("model", call("get_weather", "adk-1")),
        event("user", answer("get_weather", "adk-1")),
        event("model", text("Sunny.")),
    ]


async def stored(service: BaseSessionService, events: Sequence[Event]) -> str:
    session = await service.create_session(app_name=APP, user_id=USER, state={"city": "Paris"})
    for number, item in enumerate(events):
        item = item.model_copy(deep=True)
        item.timestamp = 1_700_000_000.0 + number
        await service.append_event(session, item)
    return session.id


def dump(service: BaseSessionService, session_id: str) -> list[dict[str, Any]]:
    session = asyncio.run(service.get_session(app_name=APP, user_id=USER, session_id=session_id))
    assert session is not None
    return [e.model_dump() for e in session.events]


# --- running an agent --------------------------------------------------------------------------


def get_weather(city: str) -> dict[str, Any]:
    """The weather in ``city``."""
    return {"result": f"21 C, sunny in {city}"}


@dataclass
class Run:
    error: BaseException | None
    texts: list[str]


def run(
    server: StrictProviderServer,
    service: BaseSessionService,
    session_id: str,
    *,
    plugins: Sequence[Any] = (),
    callback: Any = None,
    model: str = "gemini-2.5-flash",
    message: types.Content | None = None,
) -> Run:
    """One ``Runner.run_async`` turn of a real agent on the stored session."""
    agent = LlmAgent(
        name="agent",
        model=Gemini(model=model, base_url=server.gemini_base_url),
        instruction="You answer weather questions.",
        tools=[get_weather],
        before_model_callback=callback,
    )
    runner = Runner(app_name=APP, agent=agent, session_service=service, plugins=list(plugins))
    message = message or types.Content(role="user", parts=[text("And tomorrow?")])
    texts: list[str] = []

    async def go() -> None:
        async for item in runner.run_async(
            user_id=USER, session_id=session_id, new_message=message
        ):
            texts.extend(p.text for p in (item.content.parts if item.content else []) if p.text)

    try:
        asyncio.run(go())
    except Exception as error:
        return Run(error, texts)
    return Run(None, texts)


def sent_parts(server: StrictProviderServer, key: str, index: int = -1) -> list[dict[str, Any]]:
    """The ``key`` parts (``functionCall``, ``functionResponse``) of a request's contents."""
    history = server.requests[index].history
    return [part[key] for content in history for part in content["parts"] if key in part]


HOOKS = {
    "plugin": {"plugins": [ToolMendPlugin()]},
    "callback": {"callback": before_model_callback},
}


# --- without toolmend, then with it ------------------------------------------------------------


@pytest.mark.parametrize("kind", ["opaque_name", "interrupted", "duplicate"])
def test_a_poisoned_session_fails_without_toolmend(kind: str, server: StrictProviderServer) -> None:
    service = InMemorySessionService()
    session_id = asyncio.run(stored(service, poisoned(kind)))
    done = run(server, service, session_id)
    assert isinstance(done.error, errors.ClientError)
    assert done.error.code == 400
    assert len(server.requests) == 1
    assert not server.last_request.accepted


@pytest.mark.parametrize("hook", sorted(HOOKS))
@pytest.mark.parametrize("kind", ["opaque_name", "interrupted", "duplicate"])
def test_a_poisoned_session_goes_through_with_toolmend(
    kind: str, hook: str, server: StrictProviderServer
) -> None:
    server.script([Reply.text("Rain tomorrow.")])
    service = InMemorySessionService()
    session_id = asyncio.run(stored(service, poisoned(kind)))
    before = dump(service, session_id)
    done = run(server, service, session_id, **HOOKS[hook])
    assert done.error is None, done.error
    assert done.texts == ["Rain tomorrow."]
    assert [r.accepted for r in server.requests] == [True]
    responses = sent_parts(server, "functionResponse")
    calls = sent_parts(server, "functionCall")
    assert len(calls) == len(responses) == 1
    assert responses[0]["name"] == calls[0]["name"] == "get_weather"
    if kind != "interrupted":  # a real response keeps its exact content
        assert responses[0]["response"] == REAL
    # the stored events are exactly as they were; the run only appended its own
    assert dump(service, session_id)[: len(before)] == before


def test_a_real_function_tool_runs_through_the_plugin(server: StrictProviderServer) -> None:
    """The model calls a real tool, ADK runs it, and the tool's answer goes back as it is."""
    server.script([Reply.tool_calls(("get_weather", {"city": "Lyon"})), Reply.text("Sunny.")])
    service = InMemorySessionService()
    session_id = asyncio.run(stored(service, poisoned("interrupted")))
    done = run(server, service, session_id, plugins=[ToolMendPlugin()])
    assert done.error is None, done.error
    assert done.texts == ["Sunny."]
    assert [r.accepted for r in server.requests] == [True, True]
    responses = sent_parts(server, "functionResponse")
    assert responses[-1]["response"] == {"result": "21 C, sunny in Lyon"}
    assert responses[-1]["name"] == "get_weather"


def test_a_valid_session_goes_out_as_adk_built_it(
    server: StrictProviderServer, caplog: pytest.LogCaptureFixture
) -> None:
    for hook in HOOKS.values():
        server.clear()
        service = InMemorySessionService()
        plain = run(server, service, asyncio.run(stored(service, valid())))
        with caplog.at_level(logging.INFO, logger="toolmend"):
            mended = run(server, service, asyncio.run(stored(service, valid())), **hook)
        assert plain.error is None and mended.error is None
        assert server.requests[0].body["contents"] == server.requests[1].body["contents"]
        assert [r for r in caplog.records if r.name == "toolmend"] == []


# --- Gemini 3 ----------------------------------------------------------------------------------


def _resume_unsigned(server: StrictProviderServer, **hook: Any) -> tuple[Run, list[dict[str, Any]]]:
    """A Gemini 3 turn whose stored call has no thought signature (a session started on
    another model), resumed by the tool's answer: the call is in the current turn."""
    service = InMemorySessionService()
    events = [event("user", text("Weather in Paris?")), event("model", call("get_weather", "c-1"))]
    session_id = asyncio.run(stored(service, events))
    message = types.Content(role="user", parts=[answer("get_weather", "c-1")])
    server.clear()
    server.script([Reply.text("Sunny.")])
    done = run(server, service, session_id, model="gemini-3-flash-preview", message=message, **hook)
    return done, sent_parts(server, "functionCall") if server.requests else []


def test_gemini_3_gets_the_gemini_3_profile(server: StrictProviderServer) -> None:
    done, _ = _resume_unsigned(server)
    assert isinstance(done.error, errors.ClientError)
    assert "thought_signature" in server.last_request.error
    # the plain gemini profile knows nothing of signatures: still refused (without the rescue
    # after the 400, which knows the gemini-3 rule: tests/test_rescue_frameworks.py)
    done, _ = _resume_unsigned(server, plugins=[ToolMendPlugin(provider="gemini", rescue=False)])
    assert isinstance(done.error, errors.ClientError)
    for hook in HOOKS.values():
        done, calls = _resume_unsigned(server, **hook)
        assert done.error is None, done.error
        assert server.last_request.accepted
        first = server.requests[-1].history[1]["parts"][0]
        assert first["thoughtSignature"] == "skip_thought_signature_validator"
        assert calls[0]["name"] == "get_weather"


# --- failing open ------------------------------------------------------------------------------


def _raise(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("injected fault inside toolmend")


FAULTS = {
    "vouch": (toolmend._fastpath, "vouch"),  # the first step of every hook's mend
    "damage_in": (toolmend._api, "damage_in"),  # deep inside toolmend.repair
    "request_profile": (adk_hook, "request_profile"),  # the hook's own code, before mend
}


@pytest.mark.parametrize(
    ("hook", "fault"),
    [("plugin", "vouch"), ("callback", "damage_in"), ("plugin", "request_profile")],
)
def test_a_toolmend_fault_sends_the_request_as_adk_built_it(
    hook: str,
    fault: str,
    server: StrictProviderServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    service = InMemorySessionService()
    plain = run(server, service, asyncio.run(stored(service, poisoned("opaque_name"))))
    session_id = asyncio.run(stored(service, poisoned("opaque_name")))
    before = dump(service, session_id)
    with monkeypatch.context() as faults, caplog.at_level(logging.INFO, logger="toolmend"):
        faults.setattr(*FAULTS[fault], _raise)
        faulty = run(server, service, session_id, **HOOKS[hook])
    # the same provider error as without toolmend, for the same request
    assert isinstance(faulty.error, errors.ClientError)
    assert str(faulty.error) == str(plain.error)
    assert server.requests[1].body["contents"] == server.requests[0].body["contents"]
    assert dump(service, session_id)[: len(before)] == before
    logged = [r for r in caplog.records if r.name == "toolmend"]
    # the rescue after the provider's 400 meets the hook's own fault too, and says so
    assert len(logged) == (2 if fault == "request_profile" else 1)
    for record in logged:
        assert record.exc_info is not None
        assert "injected fault" in str(record.exc_info[1])


def test_an_unknown_provider_fails_at_construction() -> None:
    with pytest.raises(toolmend.UnknownNameError):
        ToolMendPlugin(provider="gemni")


def test_a_missing_adk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("google.adk", "google.adk.events", "google.adk.plugins.base_plugin"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "toolmend.integrations.adk")
    with pytest.raises(ImportError, match=r"pip install 'toolmend\[adk\]'"):
        importlib.import_module("toolmend.integrations.adk")


# --- healing the stored session ----------------------------------------------------------------


def _services(folder: Path) -> dict[str, BaseSessionService]:
    return {
        "memory": InMemorySessionService(),
        "sqlite": DatabaseSessionService(f"sqlite+aiosqlite:///{folder / 'sessions.db'}"),
    }


@pytest.mark.parametrize("store", ["memory", "sqlite"])
@pytest.mark.parametrize("replace", [False, True])
def test_repair_session_makes_a_poisoned_session_usable(
    store: str, replace: bool, server: StrictProviderServer, tmp_path: Path
) -> None:
    service = _services(tmp_path)[store]
    events = poisoned("opaque_name")
    events[2].actions = EventActions(state_delta={"checked": True, "user:unit": "C"})
    events += poisoned("interrupted")  # a second question, its call lost
    session_id = asyncio.run(stored(service, events))
    before = dump(service, session_id)
    assert isinstance(run(server, service, session_id).error, errors.ClientError)
    before = dump(service, session_id)

    result = asyncio.run(
        repair_session(service, app_name=APP, user_id=USER, session_id=session_id, replace=replace)
    )
    assert sorted(c.code for c in result.changes) == ["answered_missing_call", "filled_result_name"]
    healed = result.session
    assert (healed.id == session_id) is replace
    if not replace:  # the old session is left exactly as it was
        assert dump(service, session_id) == before
    assert healed.state["checked"] is True and healed.state["city"] == "Paris"
    assert healed.state["user:unit"] == "C"
    timestamps = [e.timestamp for e in healed.events]
    assert timestamps == sorted(timestamps)

    server.clear()
    server.script([Reply.text("Rain tomorrow.")])
    done = run(server, service, healed.id)  # no toolmend at all
    assert done.error is None, done.error
    assert server.last_request.accepted
    assert sent_parts(server, "functionResponse")[0]["response"] == REAL
    # nothing left to repair
    again = asyncio.run(repair_session(service, app_name=APP, user_id=USER, session_id=healed.id))
    assert again.changes == ()
    if store == "sqlite":
        asyncio.run(service.close())


def test_repair_session_deletes_nothing_before_its_own_work_is_done(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``replace=True``: a toolmend fault while preparing the events to store leaves the old
    session where it was (it is deleted only when nothing but the service's calls is left)."""
    service = InMemorySessionService()
    session_id = asyncio.run(stored(service, poisoned("opaque_name")))
    before = dump(service, session_id)
    monkeypatch.setattr(adk_hook, "_without_shared_state", _raise)
    with pytest.raises(RuntimeError, match="injected fault"):
        asyncio.run(
            repair_session(service, app_name=APP, user_id=USER, session_id=session_id, replace=True)
        )
    assert dump(service, session_id) == before


def test_repair_session_logs_one_line_like_every_hook(caplog: pytest.LogCaptureFixture) -> None:
    """The line the other hooks write (``toolmend.integrations.hooks.log_repair``): INFO once
    the repair is stored, codes, content indexes and call ids, never content; a WARNING naming
    the problems under ``"report"``; nothing for a valid session."""
    service = InMemorySessionService()
    session_id = asyncio.run(stored(service, poisoned("opaque_name")))
    with caplog.at_level(logging.DEBUG, logger="toolmend"):
        result = asyncio.run(
            repair_session(service, app_name=APP, user_id=USER, session_id=session_id)
        )
    assert [c.code for c in result.changes] == ["filled_result_name"]
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        (
            "toolmend",
            logging.INFO,
            "toolmend repaired adk.repair_session for gemini: filled_result_name@2[adk-1]",
        )
    ]
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="toolmend"):
        asyncio.run(repair_session(service, app_name=APP, user_id=USER, session_id=session_id))
        reported = asyncio.run(
            repair_session(
                service, app_name=APP, user_id=USER, session_id=session_id, policy="report"
            )
        )
        asyncio.run(
            repair_session(service, app_name=APP, user_id=USER, session_id=result.session.id)
        )
    assert reported.changes == () and reported.session.id == session_id
    lines = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert len(lines) == 2 and lines[0] == (logging.INFO, lines[0][1])
    assert lines[1][0] == logging.WARNING
    assert lines[1][1].startswith("toolmend found 1 problem(s) in adk.repair_session for gemini")
    assert lines[1][1].endswith("changed nothing: result_name_mismatch@2")
    assert "Paris" not in caplog.text and "Sunny" not in caplog.text and "LFPG" not in caplog.text


def test_repair_session_leaves_a_valid_session_alone() -> None:
    service = InMemorySessionService()
    session_id = asyncio.run(stored(service, valid()))
    before = dump(service, session_id)
    result = asyncio.run(repair_session(service, app_name=APP, user_id=USER, session_id=session_id))
    assert result.changes == ()
    assert result.session.id == session_id
    assert dump(service, session_id) == before
    with pytest.raises(ValueError, match="no session"):
        asyncio.run(repair_session(service, app_name=APP, user_id=USER, session_id="nope"))


def test_repair_events_never_changes_its_input() -> None:
    events = poisoned("opaque_name") + poisoned("duplicate")[1:]
    before = [e.model_dump() for e in events]
    repaired = adk_hook.repair_events(events)
    assert [e.model_dump() for e in events] == before
    assert repaired[0] is events[0]
    assert toolmend.check([e.content for e in repaired if e.content], provider="gemini") == []


def test_repair_events_keeps_each_content_in_its_own_event() -> None:
    """A dropped orphan response right before a real response that is edited (its name
    restored): the real response stays in its own event (id, author, branch), not in the
    orphan's; an event of another agent or branch would show it to the model as something
    else, or not at all."""
    events = [
        event("user", text("Weather in Paris?")),
        event("model", call("get_weather", "adk-1")),
        Event(
            author="helper",
            branch="agent.helper",
            invocation_id="inv-0",
            content=types.Content(role="user", parts=[answer("lookup", "adk-9")]),
        ),
        event("user", answer("call_8f2a", "adk-1")),
        event("model", text("Sunny.")),
    ]
    repaired = adk_hook.repair_events(events)
    assert [e.id for e in repaired] == [events[i].id for i in (0, 1, 3, 4)]
    real = repaired[2]
    assert (real.author, real.branch) == ("agent", None)
    assert real.content is not None and real.content.parts
    response = real.content.parts[0].function_response
    assert response is not None
    assert (response.name, response.id, response.response) == ("get_weather", "adk-1", REAL)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=damaged_block_histories("gemini", ids=True), seed=st.integers(0, 1 << 16))
def test_repair_events_stores_exactly_the_repaired_contents(
    case: tuple[list[Any], list[str]], seed: int
) -> None:
    """Whatever the damage: the events' contents (those with parts), in order, are
    ``toolmend.repair``'s; every event id is used once, timestamps rise, and events without
    content are all kept."""
    try:
        contents = [types.Content.model_validate(content) for content in case[0]]
    except ValueError:
        return
    chance = random.Random(seed)
    events: list[Event] = []
    for number, content in enumerate(contents):
        if chance.random() < 0.2:
            delta = EventActions(state_delta={"step": number})
            events.append(Event(author="agent", invocation_id="i", actions=delta))
        author = chance.choice(["user", "agent", "helper"])
        events.append(Event(author=author, invocation_id="i", content=content))
    for number, item in enumerate(events):
        item.timestamp = 1_700_000_000.0 + number
    try:
        read = [e.content for e in events if e.content is not None and e.content.parts]
        want = toolmend.repair(read, provider="gemini").messages if read else []
    except toolmend.InvalidHistoryError:
        return
    repaired = adk_hook.repair_events(events)
    assert [e.content.model_dump() for e in repaired if e.content and e.content.parts] == [
        c.model_dump() for c in want
    ]
    assert len({e.id for e in repaired}) == len(repaired)
    times = [e.timestamp for e in repaired]
    assert times == sorted(set(times))
    assert {e.id for e in events if e.content is None} <= {e.id for e in repaired}


# --- the example -------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_example_runs_offline(capsys: pytest.CaptureFixture[str]) -> None:
    adk_logger = logging.getLogger("google_adk")
    level = adk_logger.level
    try:
        runpy.run_path(str(ROOT / "examples" / "adk_agent.py"), run_name="__main__")
    finally:
        adk_logger.setLevel(level)
    printed = capsys.readouterr().out
    assert "without toolmend: HTTP 400" in printed
    assert "with ToolMendPlugin: accepted, the tool ran, reply 'Sunny.'" in printed
    assert "repair_session: ['filled_result_name']" in printed
    assert "without the plugin: accepted, reply 'Rain tomorrow.'" in printed


# --- telemetry ---------------------------------------------------------------------------------


@pytest.mark.parametrize("hook", sorted(HOOKS))
def test_each_model_call_reports_one_request(hook: str, server: StrictProviderServer) -> None:
    from toolmend.integrations import telemetry

    heard: list[telemetry.HookReport] = []
    telemetry.add_sink(heard.append)
    try:
        server.script([Reply.text("Rain tomorrow.")])
        service = InMemorySessionService()
        assert (
            run(
                server,
                service,
                asyncio.run(stored(service, poisoned("opaque_name"))),
                **HOOKS[hook],
            ).error
            is None
        )
        with pytest.MonkeyPatch.context() as faults:
            faults.setattr(*FAULTS["request_profile"], _raise)
            logging.getLogger("toolmend").disabled = True
            try:
                run(
                    server,
                    service,
                    asyncio.run(stored(service, poisoned("opaque_name"))),
                    **HOOKS[hook],
                )
            finally:
                logging.getLogger("toolmend").disabled = False
    finally:
        telemetry.remove_sink(heard.append)
    assert [(r.request, r.provider, r.outcome) for r in heard] == [
        (True, "gemini", "repaired"),
        (True, "unknown", "failed_open"),
    ]
    assert "(" not in heard[0].hook and heard[0].change_codes
