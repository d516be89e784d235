"""The OpenAI Agents SDK hooks: real ``Runner.run`` calls, real HTTP to the strict server.

Every run goes through the real SDK (``agents``: ``Runner``, ``Agent``, ``SQLiteSession``, its
Responses and Chat Completions models, its converter) and the real ``openai`` client to the
strict provider server on 127.0.0.1, which answers HTTP 400 with the provider's own error text
when the history it receives breaks the provider's rules. Each broken history is run twice in
the same test: without toolmend (the SDK raises the provider's 400 as
``openai.BadRequestError``), then with the hook (accepted; the real tool outputs reach the
server with their exact content). Tracing is off: the SDK's exporter would phone home.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import os
import random
import runpy
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolmend
import toolmend._api
import toolmend._fastpath
from toolmend.testing import Reply, StrictProviderServer

agents = pytest.importorskip("agents")
openai = pytest.importorskip("openai")
hook = pytest.importorskip("toolmend.integrations.openai_agents")

from agents import (  # noqa: E402
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    SQLiteSession,
    function_tool,
)
from agents.run_config import CallModelData, ModelInputData  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # LitellmModel: LiteLLM offline

agents.set_tracing_disabled(True)  # no trace export: no network beyond 127.0.0.1

OUTPUT = "21 C, sunny; wind 3 km/h"
"""A real tool output: it must reach the provider exactly as the tool returned it."""


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return OUTPUT


@pytest.fixture(scope="module")
def server() -> Iterator[StrictProviderServer]:
    with StrictProviderServer() as running:
        yield running


# --- the histories ------------------------------------------------------------------------------


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def call(call_id: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "call_id": call_id,
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
    }


def output(call_id: str, text: str = OUTPUT) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def orphan_output() -> list[dict[str, Any]]:
    """A stored ``function_call_output`` whose call is gone (trimmed, lost by a store)."""
    return [
        user("Weather in Paris?"),
        output("call_gone"),
        {"role": "assistant", "content": "It is sunny."},
    ]


def interrupted() -> list[dict[str, Any]]:
    """A call whose run was interrupted before its output, then the user went on."""
    return [user("Weather in Paris?"), call("call_cut"), user("Hello?")]


def late_output() -> list[dict[str, Any]]:
    """The user typed while the tool ran, so the output was stored after the user's message:
    fine for Responses (an output only has to follow its call), a 400 for Chat Completions
    (tool messages must follow the assistant message with the call)."""
    return [user("Weather in Paris?"), call("call_late"), user("Still there?"), output("call_late")]


def reasoning_alone() -> list[dict[str, Any]]:
    """A reasoning item whose follower (the message or call it led to) was not stored."""
    return [
        user("Weather in Paris?"),
        {"type": "reasoning", "id": "rs_0001", "summary": []},
        user("Hello?"),
    ]


# --- running the SDK -------------------------------------------------------------------------------


def model(server: StrictProviderServer, api: str) -> Any:
    """The agent's model on the strict server: OpenAI's Responses API, OpenAI's Chat
    Completions, or DeepSeek's (chosen by the model name, as the server and toolmend both do)."""
    client = openai.AsyncOpenAI(base_url=server.openai_base_url, api_key="sk-test", max_retries=0)
    if api == "responses":
        return OpenAIResponsesModel("gpt-4.1", client)
    return OpenAIChatCompletionsModel("deepseek-chat" if api == "deepseek" else "gpt-4.1", client)


def run(
    server: StrictProviderServer,
    api: str,
    given: str | list[dict[str, Any]],
    *,
    config: RunConfig | None = None,
    session_path: Path | None = None,
    stored: list[dict[str, Any]] | None = None,
    tools: bool = False,
) -> Any:
    """One ``Runner.run`` (a new event loop, as ``asyncio.run`` makes one) on a fresh SQLite
    session holding ``stored`` (when given)."""

    async def go() -> Any:
        agent = Agent(
            name="weather",
            instructions="Answer briefly.",
            model=model(server, api),
            tools=[get_weather] if tools else [],
        )
        session = None
        if session_path is not None:
            session = SQLiteSession("s1", db_path=session_path)
            if stored is not None and not await session.get_items():
                await session.add_items(stored)
        return await Runner.run(agent, given, session=session, run_config=config or RunConfig())

    return asyncio.run(go())


def with_toolmend(**extra: Any) -> RunConfig:
    return RunConfig(
        call_model_input_filter=hook.ToolMendInputFilter(**extra),
        session_input_callback=hook.session_input_callback,
    )


def fails_without(server: StrictProviderServer, api: str, given: Any, **kwargs: Any) -> str:
    """Run without toolmend: the provider's 400, raised by the SDK as the openai error."""
    with pytest.raises(openai.BadRequestError):
        run(server, api, given, **kwargs)
    assert server.last_request.status == 400
    return str(server.last_request.error)


def tool_outputs(history: list[dict[str, Any]]) -> list[Any]:
    """The tool results a request carried (Responses outputs or Chat Completions tool
    messages), in order."""
    return [
        m.get("output", m.get("content"))
        for m in history
        if m.get("type") == "function_call_output" or m.get("role") == "tool"
    ]


APIS = ["responses", "chat", "deepseek"]


# --- a poisoned Session ---------------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
def test_a_stored_orphan_output_poisons_every_run_until_toolmend(
    server: StrictProviderServer, api: str, tmp_path: Path
) -> None:
    """The SDK replays an orphan ``function_call_output`` from the session on every run (it
    prunes orphan outputs only under a session ``limit``); the provider refuses it. With the
    hooks the run goes through and the stored items are left as they are."""
    error = fails_without(
        server, api, "And tomorrow?", session_path=tmp_path / "a.db", stored=orphan_output()
    )
    assert "call_gone" in error or "tool" in error
    server.script([Reply.text("Sunny again.")])
    result = run(
        server,
        api,
        "And tomorrow?",
        config=with_toolmend(),
        session_path=tmp_path / "b.db",
        stored=orphan_output(),
    )
    assert result.final_output == "Sunny again."
    sent = server.last_request
    assert sent.accepted and sent.problems == ()
    assert "call_gone" not in str(sent.history)


@pytest.mark.parametrize("hooks", ["filter", "session"])
def test_either_hook_alone_heals_a_stored_orphan(
    server: StrictProviderServer, hooks: str, tmp_path: Path
) -> None:
    config = (
        RunConfig(call_model_input_filter=hook.call_model_input_filter)
        if hooks == "filter"
        else RunConfig(session_input_callback=hook.session_input_callback)
    )
    fails_without(
        server, "responses", "Go on", session_path=tmp_path / "a.db", stored=orphan_output()
    )
    server.script([Reply.text("ok")])
    run(
        server,
        "responses",
        "Go on",
        config=config,
        session_path=tmp_path / "b.db",
        stored=orphan_output(),
    )
    assert server.last_request.accepted


def test_a_reasoning_item_without_its_follower_in_the_session(
    server: StrictProviderServer, tmp_path: Path
) -> None:
    error = fails_without(
        server, "responses", "Go on", session_path=tmp_path / "a.db", stored=reasoning_alone()
    )
    assert "reasoning" in error
    server.script([Reply.text("ok")])
    run(
        server,
        "responses",
        "Go on",
        config=with_toolmend(),
        session_path=tmp_path / "b.db",
        stored=reasoning_alone(),
    )
    assert server.last_request.accepted


@pytest.mark.parametrize("api", ["chat", "deepseek"])
def test_an_output_stored_after_the_users_message_is_moved_for_chat_completions(
    server: StrictProviderServer, api: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Valid Responses items that break Chat Completions once the SDK converts them: the
    filter judges the conversion (the SDK's own converter) with the chat provider's profile and
    moves the output next to its call; the output keeps its exact content."""
    fails_without(server, api, "Go on", session_path=tmp_path / "a.db", stored=late_output())
    server.script([Reply.text("ok")])
    with caplog.at_level(logging.INFO, logger="toolmend"):
        run(
            server,
            api,
            "Go on",
            config=with_toolmend(),
            session_path=tmp_path / "b.db",
            stored=late_output(),
        )
    lines = [r.getMessage() for r in caplog.records if r.name == "toolmend"]
    assert len(lines) == 1 and lines[0].endswith("moved_result@3[call_late]"), lines
    sent = server.last_request
    assert sent.accepted
    assert tool_outputs(sent.history) == [OUTPUT]
    roles = [m["role"] for m in sent.history]
    assert roles == ["system", "user", "assistant", "tool", "user", "user"]


@pytest.mark.parametrize("api", APIS)
def test_an_interrupted_call_handed_back_as_input(server: StrictProviderServer, api: str) -> None:
    """Items from an interrupted run, handed back by the app as ``input`` (the SDK prunes
    calls without output only from its own history, not from the caller's): the provider
    refuses the call without output; the filter answers it with toolmend's placeholder."""
    error = fails_without(server, api, interrupted())
    assert "call_cut" in error or "insufficient tool messages" in error  # DeepSeek names no id
    server.script([Reply.text("ok")])
    given = interrupted()
    run(server, api, given, config=with_toolmend())
    sent = server.last_request
    assert sent.accepted
    assert tool_outputs(sent.history) == [toolmend.PLACEHOLDER_TEXT]
    assert given == interrupted()  # the caller's list and items are not changed


@pytest.mark.parametrize(
    ("model_name", "provider"),
    [("deepseek/deepseek-chat", "deepseek"), ("anthropic/claude-sonnet-4-5", "anthropic")],
)
def test_a_litellm_model_is_judged_for_litellms_provider(
    server: StrictProviderServer, model_name: str, provider: str
) -> None:
    """A ``LitellmModel`` converts the items to Chat Completions messages, and LiteLLM converts
    those for its provider: the filter judges the conversion with the profile the LiteLLM hook
    gives the model (DeepSeek; Anthropic, whose Messages API the strict server emulates)."""
    litellm_model = pytest.importorskip("agents.extensions.models.litellm_model")
    base = server.openai_base_url if provider == "deepseek" else server.base_url
    model = litellm_model.LitellmModel(model=model_name, base_url=base, api_key="sk-test")
    assert hook.target_for(model)[:2] == (provider, True)
    agent = Agent(name="weather", model=model)
    given = [user("Weather?"), output("call_gone"), user("Hello?")]
    with pytest.raises(openai.BadRequestError):
        asyncio.run(Runner.run(agent, copy.deepcopy(given)))
    assert (server.last_request.status, server.last_request.provider) == (400, provider)
    server.script([Reply.text("ok")])
    config = RunConfig(call_model_input_filter=hook.call_model_input_filter)
    result = asyncio.run(Runner.run(agent, copy.deepcopy(given), run_config=config))
    assert result.final_output == "ok"
    assert (server.last_request.status, server.last_request.provider) == (200, provider)


# --- a real run loop: call -> tool -> result rounds --------------------------------------------------


@pytest.mark.parametrize("api", ["responses", "chat"])
def test_tool_rounds_with_a_poisoned_session(
    server: StrictProviderServer, api: str, tmp_path: Path
) -> None:
    """The scripted model calls the real function tool twice, then answers; every request of
    the run loop is accepted, and each real output reaches the server exactly, while the
    session's orphan stays out of every request."""
    fails_without(
        server, api, "Weather?", session_path=tmp_path / "a.db", stored=orphan_output(), tools=True
    )
    server.clear()
    server.script(
        [
            Reply.tool_calls(("get_weather", {"city": "Paris"})),
            Reply.tool_calls(("get_weather", {"city": "Lyon"}), ("get_weather", {"city": "Nice"})),
            Reply.text("Sunny everywhere."),
        ]
    )
    result = run(
        server,
        api,
        "Weather?",
        config=with_toolmend(),
        session_path=tmp_path / "b.db",
        stored=orphan_output(),
        tools=True,
    )
    assert result.final_output == "Sunny everywhere."
    sent = server.requests
    assert [r.status for r in sent] == [200, 200, 200]
    assert [tool_outputs(r.history) for r in sent] == [[], [OUTPUT], [OUTPUT] * 3]
    stored = asyncio.run(SQLiteSession("s1", db_path=tmp_path / "b.db").get_items())
    assert stored[:3] == orphan_output()  # the store is left alone (repair_session heals it)


def test_run_sync(server: StrictProviderServer, tmp_path: Path) -> None:
    async def add() -> None:
        await SQLiteSession("s1", db_path=tmp_path / "s.db").add_items(orphan_output())

    asyncio.run(add())
    agent = Agent(name="weather", model=model(server, "responses"))
    server.script([Reply.text("ok")])
    result = Runner.run_sync(
        agent,
        "Go on",
        session=SQLiteSession("s1", db_path=tmp_path / "s.db"),
        run_config=with_toolmend(),
    )
    assert result.final_output == "ok" and server.last_request.accepted


def test_a_chat_models_own_session_stays_usable(
    server: StrictProviderServer, tmp_path: Path
) -> None:
    """A Chat Completions model stores its items with ``__fake_id__`` ids, which the SDK's
    converter needs as they are: the hooks and ``repair_session`` leave them alone, so the
    session keeps working, with the hooks, after a repair, and without them."""
    path = tmp_path / "s.db"
    for _ in range(2):
        server.script([Reply.tool_calls(("get_weather", {"city": "Paris"})), Reply.text("ok")])
        run(
            server,
            "chat",
            "Weather?",
            config=with_toolmend(),
            session_path=path,
            stored=orphan_output(),
            tools=True,
        )
        assert server.last_request.accepted
    asyncio.run(hook.repair_session(SQLiteSession("s1", db_path=path)))
    server.script([Reply.text("ok")])
    run(server, "chat", "Thanks", session_path=path)
    assert server.last_request.accepted
    assert tool_outputs(server.last_request.history) == [OUTPUT, OUTPUT]


# --- healing the store ----------------------------------------------------------------------------


def test_repair_session_heals_the_store_once(server: StrictProviderServer, tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    stored = [*orphan_output(), *interrupted(), {"role": "assistant", "content": "Hi."}]

    async def heal() -> toolmend.Repair:
        session = SQLiteSession("s1", db_path=path)
        await session.add_items(stored)
        return await hook.repair_session(session)

    repaired = asyncio.run(heal())
    assert [c.code for c in repaired.changes] == ["dropped_orphan_result", "answered_missing_call"]
    server.script([Reply.text("ok")])
    run(server, "responses", "Go on", session_path=path)  # no hook at all now
    assert server.last_request.accepted
    again = asyncio.run(hook.repair_session(SQLiteSession("s1", db_path=path)))
    assert again.changes == ()


# --- the filter itself -----------------------------------------------------------------------------


def data_for(items: list[Any], agent_model: Any = "gpt-4.1") -> Any:
    agent = Agent(name="a", model=agent_model)
    return CallModelData(ModelInputData(input=items, instructions="Be brief."), agent, None)


def test_the_filter_changes_nothing_it_was_handed() -> None:
    items = [*orphan_output(), *late_output()]
    before = copy.deepcopy(items)
    data = data_for(
        items,
        OpenAIChatCompletionsModel(
            "gpt-4.1", openai.AsyncOpenAI(api_key="sk-test", base_url="http://127.0.0.1:9/v1")
        ),
    )
    got = hook.call_model_input_filter(data)
    assert items == before and data.model_data.input is items
    assert got is not data.model_data and got.instructions == "Be brief."
    valid = data_for(late_output())
    assert hook.call_model_input_filter(valid) is valid.model_data  # Responses: nothing to do


def test_the_session_callback_changes_nothing_it_was_handed() -> None:
    history, new = orphan_output(), [user("Go on")]
    before = copy.deepcopy((history, new))
    combined = hook.session_input_callback(history, new)
    assert (history, new) == before
    assert combined == [history[0], history[2], new[0]]
    assert all(any(c is i for i in [*history, *new]) for c in combined)  # no copies: not re-stored


@pytest.mark.parametrize(
    ("agent_model", "profile", "chat"),
    [
        ("gpt-4.1", "openai-responses", False),
        (None, "openai-responses", False),
        ("chat:gpt-4.1", "openai", True),
        ("chat:deepseek-chat", "deepseek", True),
        ("chat:deepseek-reasoner", "deepseek-reasoner", True),
        ("chat@https://api.mistral.ai/v1:some-model", "mistral", True),
        ("responses:gpt-4.1", "openai-responses", False),
    ],
)
def test_the_target_of_each_model(agent_model: Any, profile: str, chat: bool) -> None:
    if isinstance(agent_model, str) and ":" in agent_model:
        kind, name = agent_model.rsplit(":", 1)
        base = kind.split("@", 1)[1] if "@" in kind else "http://127.0.0.1:9/v1"
        client = openai.AsyncOpenAI(api_key="sk-test", base_url=base)
        cls = OpenAIResponsesModel if kind == "responses" else OpenAIChatCompletionsModel
        agent_model = cls(name, client)
    target = hook.target_for(agent_model)
    assert (target.profile, target.chat) == (profile, chat)


def test_the_runconfig_model_and_provider_options() -> None:
    chat = OpenAIChatCompletionsModel(
        "deepseek-chat", openai.AsyncOpenAI(api_key="sk-test", base_url="http://127.0.0.1:9/v1")
    )
    data = data_for(late_output(), "gpt-4.1")
    assert hook.ToolMendInputFilter(model=chat).target(data).profile == "deepseek"
    assert hook.ToolMendInputFilter(provider="mistral").target(data)[:2] == ("mistral", True)
    with pytest.raises(toolmend.UnknownNameError):
        hook.ToolMendInputFilter(provider="nope")


def random_items(rnd: random.Random) -> list[Any]:
    """A short list of items, often broken: calls, outputs (of any call, or none), messages of
    each kind, reasoning items, odd fields."""
    ids = ["call_a", "call_b", "call_c", "x" * 41, ""]
    pool: list[Any] = [
        lambda: user("hi"),
        lambda: {"role": "assistant", "content": "ok"},
        lambda: {"role": "system", "content": "be brief"},
        lambda: {"role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
        lambda: {"role": "user", "content": ""},
        lambda: {"role": "tool", "content": "x"},
        lambda: {
            "type": "message",
            "id": "__fake_id__",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "done", "annotations": []}],
        },
        lambda: {"type": "reasoning", "id": "rs_1", "summary": []},
        lambda: call(rnd.choice(ids[:3])),
        lambda: call(rnd.choice(ids)),
        lambda: {**call(rnd.choice(ids[:3])), "name": ""},
        lambda: {**call(rnd.choice(ids[:3])), "arguments": {"city": "Paris"}},
        lambda: output(rnd.choice(ids[:3])),
        lambda: output(rnd.choice(ids)),
        lambda: {"type": "function_call_output", "call_id": "call_a", "output": []},
    ]
    weights = [3, 2, 1, 1, 1, 1, 1, 1, 6, 1, 1, 1, 6, 1, 1]
    return [rnd.choices(pool, weights)[0]() for _ in range(rnd.randint(0, 9))]


@pytest.mark.parametrize("profile", ["openai", "deepseek"])
def test_the_chat_scan_never_vouches_for_a_conversion_the_profile_refuses(profile: str) -> None:
    """``quick_chat_valid`` is a promise about the SDK's own conversion: whenever it says
    True, ``Converter.items_to_messages`` of the items (instructions first) passes the profile.
    Checked on random, mostly broken item lists; it must also say True often enough to be the
    fast path it is meant to be."""
    from agents.models.chatcmpl_converter import Converter

    rnd = random.Random(2026)
    rules = toolmend.get_profile(profile)
    vouched = 0
    for _ in range(3000):
        items = random_items(rnd)
        if not hook.quick_chat_valid(items, rules):
            continue
        vouched += 1
        converted = [{"role": "system", "content": "Be brief."}]
        converted += Converter.items_to_messages(copy.deepcopy(items), model="gpt-4.1")
        assert toolmend.check(converted, provider=profile, format="openai") == [], items
    assert vouched >= 100


# --- options the caller asked for get out -----------------------------------------------------------


def test_strict_policy_raises_through_the_run(server: StrictProviderServer) -> None:
    count = len(server.requests)
    with pytest.raises(toolmend.ToolChainError):
        run(server, "chat", interrupted(), config=with_toolmend(policy="strict"))
    assert len(server.requests) == count  # nothing was sent


@pytest.mark.parametrize("api", ["responses", "chat"])
def test_the_loop_guard_raises_when_asked(server: StrictProviderServer, api: str) -> None:
    looping = [user("Weather?")]
    for i in range(6):
        looping += [call(f"call_{i}"), output(f"call_{i}")]
    count = len(server.requests)
    with pytest.raises(toolmend.ToolLoopError):
        run(server, api, looping, config=with_toolmend(on_loop="raise"))
    assert len(server.requests) == count


# --- failing open ---------------------------------------------------------------------------------


class InjectedFaultError(RuntimeError):
    """What every injected fault raises."""


def _raise(*args: Any, **kwargs: Any) -> Any:
    raise InjectedFaultError("injected fault inside toolmend")


FAULTS = {
    "vouch": (toolmend._fastpath, "vouch"),  # the first step of every call
    "damage_in": (toolmend._api, "damage_in"),  # deep inside toolmend.repair
    "target_for": (hook, "target_for"),  # the hook's own code, reading the model
    "converted": (hook, "_converted"),  # the hook's own code, the chat view
    "moves": (hook, "_outputs_after_calls"),  # the hook's own code, after the repair
}


FAULT_CASES = [
    pytest.param(api, fault, id=f"{fault}-{api}")
    for api in ("responses", "chat")
    for fault in sorted(FAULTS)
    if api == "chat" or fault not in ("converted", "moves")  # the chat path's own steps
]


@pytest.mark.parametrize(("api", "fault"), FAULT_CASES)
def test_a_fault_inside_toolmend_sends_the_input_unchanged(
    server: StrictProviderServer,
    api: str,
    fault: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The run goes on as it would without toolmend: the provider's own 400 for the broken
    input, sent exactly as the SDK built it; the fault is one ERROR line with its traceback."""
    without = fails_without(server, api, interrupted())
    baseline = server.last_request.history
    owner, name = FAULTS[fault]
    monkeypatch.setattr(owner, name, _raise)
    with caplog.at_level(logging.DEBUG, logger="toolmend"), pytest.raises(openai.BadRequestError):
        run(server, api, interrupted(), config=with_toolmend())
    assert server.last_request.error == without
    assert server.last_request.history == baseline
    logged = [r for r in caplog.records if r.name == "toolmend" and r.levelno >= logging.WARNING]
    assert len(logged) == 1, [r.getMessage() for r in logged]
    assert logged[0].levelno == logging.ERROR and logged[0].exc_info is not None
    assert logged[0].exc_info[0] is InjectedFaultError


@pytest.mark.parametrize("api", ["responses", "chat"])
@pytest.mark.parametrize(
    "given",
    [[None, 42], [user("hi"), {"type": "function_call", "call_id": 5, "name": 7}], ["hi"]],
    ids=["not_items", "wrong_types", "strings"],
)
def test_input_toolmend_cannot_read_is_handed_back_as_it_is(
    api: str, given: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    """The SDK gets its own input back and says what it thinks of it; toolmend writes at most
    one WARNING naming the index, and no traceback."""
    client = openai.AsyncOpenAI(api_key="sk-test", base_url="http://127.0.0.1:9/v1")
    model_ = (
        OpenAIResponsesModel("gpt-4.1", client)
        if api == "responses"
        else (OpenAIChatCompletionsModel("gpt-4.1", client))
    )
    data = data_for(given, model_)
    with caplog.at_level(logging.DEBUG, logger="toolmend"):
        assert hook.call_model_input_filter(data) is data.model_data
        assert hook.session_input_callback(given, []) == given
    logged = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(logged) <= 2 and all(r.exc_info is None for r in logged)


def test_a_fault_in_the_session_callback_sends_history_and_input(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(toolmend._api, "damage_in", _raise)
    history, new = orphan_output(), [user("Go on")]
    with caplog.at_level(logging.DEBUG, logger="toolmend"):
        assert hook.session_input_callback(history, new) == [*history, *new]
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and errors[0].exc_info is not None


# --- packaging and the example ----------------------------------------------------------------------


@pytest.mark.slow
def test_a_missing_sdk_names_the_extra() -> None:
    code = "import sys\nsys.modules['agents'] = None\nimport toolmend.integrations.openai_agents\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode != 0
    assert "pip install 'toolmend[openai-agents]'" in done.stderr


@pytest.mark.slow
def test_the_example_runs_offline(capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(ROOT / "examples" / "openai_agents.py"), run_name="__main__")
    printed = capsys.readouterr().out
    assert "without toolmend: HTTP 400" in printed
    assert "every request accepted" in printed


# --- telemetry --------------------------------------------------------------------------------


@pytest.fixture
def reports() -> Iterator[list[Any]]:
    from toolmend.integrations import telemetry

    heard: list[Any] = []
    telemetry.add_sink(heard.append)
    yield heard
    telemetry.remove_sink(heard.append)


@pytest.mark.parametrize("api", APIS)
def test_each_model_call_reports_one_request(
    server: StrictProviderServer, api: str, reports: list[Any]
) -> None:
    """The filter reports each model call once, on the Responses path through ``mend`` and on
    the Chat Completions path through its own judge of the conversion: ``repaired`` with the
    codes of what it changed, for the profile the model's provider gets."""
    server.script([Reply.text("ok")])
    run(server, api, interrupted(), config=with_toolmend())
    [report] = [r for r in reports if r.request]
    assert report.hook == "agents.call_model_input_filter"
    assert report.provider == {"responses": "openai-responses"}.get(
        api, api.replace("chat", "openai")
    )
    assert (report.outcome, report.problems_left) == ("repaired", 0)
    assert report.change_codes and all("@" not in code for code in report.change_codes)


def test_a_moved_output_and_a_healed_session_are_reported(
    server: StrictProviderServer, tmp_path: Path, reports: list[Any]
) -> None:
    """A Chat Completions move counts as ``moved_result``; the session callback's repair of
    the stored items counts its changes but is not a request (the filter counts the call)."""
    server.script([Reply.text("ok"), Reply.text("ok")])
    run(
        server,
        "chat",
        "Go",
        config=with_toolmend(),
        session_path=tmp_path / "a.db",
        stored=late_output(),
    )
    assert [(r.request, r.outcome, r.change_codes) for r in reports] == [
        (True, "repaired", ("moved_result",))
    ]
    reports.clear()
    run(
        server,
        "chat",
        "Go",
        config=with_toolmend(),
        session_path=tmp_path / "b.db",
        stored=orphan_output(),
    )
    assert [(r.hook, r.request, r.outcome) for r in reports] == [
        ("agents.session_input_callback", False, "repaired"),
        ("agents.call_model_input_filter", True, "clean"),
    ]
    assert reports[0].change_codes == ("dropped_orphan_result",)


@pytest.mark.parametrize("api", ["responses", "chat"])
@pytest.mark.parametrize("refusal", ["strict", "loop"])
def test_a_call_the_options_refuse_is_reported_as_problems_left(
    server: StrictProviderServer, api: str, refusal: str, reports: list[Any]
) -> None:
    """Like every hook (``mend``), the filter reports a model call it refuses before anything
    is sent (the strict policy, the loop guard's ``"raise"``) as ``problems_left``, on the Chat
    Completions path too."""
    if refusal == "strict":
        given, config, error = (
            interrupted(),
            with_toolmend(policy="strict"),
            toolmend.ToolChainError,
        )
    else:
        given = [user("Weather?")]
        for i in range(6):
            given += [call(f"call_{i}"), output(f"call_{i}")]
        config, error = with_toolmend(on_loop="raise"), toolmend.ToolLoopError
    count = len(server.requests)
    with pytest.raises(error):
        run(server, api, given, config=config)
    assert len(server.requests) == count  # nothing was sent
    [report] = [r for r in reports if r.request]
    assert report.hook == "agents.call_model_input_filter"
    assert report.outcome == "problems_left" and report.problems_left > 0
