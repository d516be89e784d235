"""One request never holds the event loop, and never costs a hook more than its budget.

Through the real SDKs against the strict server (tests/support/hook_entries.py), every async
hook entry point repairs a history of ``TOOLMEND_OFFLOAD_ITEMS`` items or more on a worker
thread: the check is a repair that waits for a callback only the event loop can run, so a hook
that repairs on the loop never gets it (it waits ten seconds and the test fails; off the loop
it comes at once). A small history is repaired on the loop's own thread. Past the size cap
(``TOOLMEND_MAX_ITEMS``) or the wall-clock budget (``TOOLMEND_BUDGET_SECONDS``) the request goes
out as it was sent, with one WARNING and a ``failed_open`` report naming the reason; a repair
abandoned by its hook says nothing when it ends.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import toolmend
from toolmend._stats.logs import Event, parse_message
from toolmend.integrations import budget, hooks, telemetry
from toolmend.integrations.budget import Budget
from toolmend.integrations.hooks import HookOptions, mend
from toolmend.testing import StrictProviderServer

from support.event_loops import close_loop
from support.faults import patch_everywhere
from support.hook_entries import HOOKS, Hook, chat_broken, outcome, shared_loop

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ASYNC_HOOKS = [
    hook
    for hook in HOOKS
    if hook.name
    in {
        "litellm.acompletion",
        "litellm.acompletion+stream",
        "litellm.Router.acompletion",
        "openai.async.chat",
        "openai.async.responses",
        "anthropic.async.messages",
        "genai.aio.generate_content",
        "ToolMendMiddleware.async",
    }
]

HELD = 10.0
"""How long a repair waits for the loop's callback: far past the microseconds it takes when the
loop is free, so only a held loop reaches it."""


@pytest.fixture(scope="module")
def server() -> Iterator[StrictProviderServer]:
    with StrictProviderServer() as running:
        yield running
    close_loop(shared_loop())


@pytest.fixture
def reports() -> Iterator[list[telemetry.HookReport]]:
    heard: list[telemetry.HookReport] = []
    telemetry.add_sink(heard.append)
    yield heard
    telemetry.remove_sink(heard.append)


@pytest.fixture(autouse=True)
def fresh_pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test gets its own worker pool, waited for at the end (no repair outlives it)."""
    monkeypatch.setattr(budget, "_pool", None, raising=False)
    yield
    pool = getattr(budget, "_pool", None)
    if pool is not None:
        pool.shutdown(wait=True)


def ours(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "toolmend" and r.levelno >= logging.WARNING]


# --- the loop is never held ------------------------------------------------------------------


class LoopProbe:
    """A ``repair`` that asks the event loop (the hooks' shared loop, or ``loop`` once a test's
    own ``asyncio.run`` has set it) to run a callback and waits for it: a repair that holds the
    loop never gets its answer."""

    def __init__(self) -> None:
        self.real = toolmend.repair
        self.threads: list[str] = []
        self.answered: list[bool] = []
        self.loop: asyncio.AbstractEventLoop | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.threads.append(threading.current_thread().name)
        answered = threading.Event()
        (self.loop or shared_loop()).call_soon_threadsafe(answered.set)
        self.answered.append(answered.wait(HELD))
        return self.real(*args, **kwargs)

    def off_the_loop(self) -> bool:
        """Whether the one repair was answered, on a toolmend worker thread."""
        return self.answered == [True] and self.threads[0].startswith("toolmend")


@pytest.mark.parametrize("hook", ASYNC_HOOKS, ids=str)
def test_a_long_history_is_repaired_while_the_loop_serves_others(
    server: StrictProviderServer, hook: Hook, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLMEND_OFFLOAD_ITEMS", "1")  # every history counts as long
    probe = LoopProbe()
    patch_everywhere(monkeypatch, "repair", probe)
    got = outcome(hook, server, hook.broken(), {})
    assert (got.error, got.statuses) == (None, (200,)), got  # repaired, and accepted
    assert probe.answered and all(probe.answered), "the repair held the event loop"
    assert all(name.startswith("toolmend") for name in probe.threads), probe.threads


@pytest.mark.parametrize("hook", ASYNC_HOOKS, ids=str)
def test_a_short_history_is_repaired_on_the_loop(
    server: StrictProviderServer, hook: Hook, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below ``offload_items`` the thread hop would cost more than it frees."""
    threads: list[str] = []
    real = toolmend.repair

    def repair(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread().name)
        return real(*args, **kwargs)

    patch_everywhere(monkeypatch, "repair", repair)
    got = outcome(hook, server, hook.broken(), {})
    assert (got.error, got.statuses) == (None, (200,)), got
    assert threads and not any(name.startswith("toolmend") for name in threads), threads


def test_the_adk_plugin_repairs_off_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    adk = pytest.importorskip("toolmend.integrations.adk")
    from google.adk.models.llm_request import LlmRequest
    from google.genai import types

    monkeypatch.setenv("TOOLMEND_OFFLOAD_ITEMS", "1")
    orphan = types.Content(
        role="user",
        parts=[types.Part.from_function_response(name="get_weather", response={"t": 21})],
    )
    request = LlmRequest(model="gemini-2.5-flash", contents=[orphan, _user("Berlin?")])
    probe = LoopProbe()

    async def main() -> None:
        probe.loop = asyncio.get_running_loop()
        patch_everywhere(monkeypatch, "repair", probe)
        plugin = adk.ToolMendPlugin()
        await plugin.before_model_callback(callback_context=None, llm_request=request)

    asyncio.run(main())
    assert probe.off_the_loop(), (probe.answered, probe.threads)
    assert [c.role for c in request.contents] == ["user"]  # the orphan response dropped


def _user(text: str) -> Any:
    from google.genai import types

    return types.Content(role="user", parts=[types.Part(text=text)])


# --- the wall-clock budget --------------------------------------------------------------------


class Stuck:
    """A ``repair`` that runs only once the test lets it."""

    def __init__(self) -> None:
        self.real = toolmend.repair
        self.go = threading.Event()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.go.wait(60)
        return self.real(*args, **kwargs)


@pytest.mark.parametrize(
    "hook",
    [h for h in ASYNC_HOOKS if h.name in ("litellm.acompletion", "openai.async.chat")],
    ids=str,
)
def test_past_the_budget_the_request_goes_out_as_sent(
    server: StrictProviderServer,
    hook: Hook,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    reports: list[telemetry.HookReport],
) -> None:
    monkeypatch.setenv("TOOLMEND_OFFLOAD_ITEMS", "1")
    monkeypatch.setenv("TOOLMEND_BUDGET_SECONDS", "0.2")
    stuck = Stuck()
    patch_everywhere(monkeypatch, "repair", stuck)
    without = outcome(hook, server, hook.broken(), None)  # the same call without toolmend
    with caplog.at_level(logging.INFO, logger="toolmend"):
        got = outcome(hook, server, hook.broken(), {})
        assert got == without and got.statuses == (400,)  # the original, as sent
        [warning] = ours(caplog)
        assert "gave up" in warning.getMessage() and "budget" in warning.getMessage()
        # toolmend stats counts it as sent unrepaired, over the budget, for this hook
        event = parse_message(warning.getMessage())
        assert event is not None and event.kind == "over_budget"
        assert [(r.outcome, r.reason) for r in reports] == [("failed_open", "time_budget")]
        stuck.go.set()  # the abandoned repair ends now: it writes no line, reports nothing
        budget._executor().shutdown(wait=True)
    assert len([r for r in caplog.records if r.name == "toolmend"]) == 1
    assert len(reports) == 1


def test_within_the_budget_the_repair_is_waited_for(
    server: StrictProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The budget is a ceiling, not a delay: a repair that ends in time is sent."""
    monkeypatch.setenv("TOOLMEND_OFFLOAD_ITEMS", "1")
    monkeypatch.setenv("TOOLMEND_BUDGET_SECONDS", "60")
    [hook] = [h for h in ASYNC_HOOKS if h.name == "litellm.acompletion"]
    got = outcome(hook, server, hook.broken(), {"budget": Budget(seconds=60, offload_items=1)})
    assert (got.error, got.statuses) == (None, (200,))


# --- the size cap -----------------------------------------------------------------------------


def test_past_the_size_cap_nothing_is_done(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    reports: list[telemetry.HookReport],
) -> None:
    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("repaired past the cap")

    patch_everywhere(monkeypatch, "repair", never)
    patch_everywhere(monkeypatch, "detect_loops", never)
    history = chat_broken()
    cap = Budget(max_items=budget.size_of(history) - 1)
    with caplog.at_level(logging.INFO, logger="toolmend"):
        mended = mend(history, provider="openai", source="test", options=HookOptions(budget=cap))
    assert mended.messages is history and mended.failed
    [warning] = ours(caplog)
    assert "over its cap" in warning.getMessage()
    assert [(r.outcome, r.reason) for r in reports] == [("failed_open", "size_cap")]
    assert parse_message(warning.getMessage()) == Event("over_budget", "test", "openai")


def test_the_over_budget_lines_escape_the_callers_text(
    caplog: pytest.LogCaptureFixture, reports: list[telemetry.HookReport]
) -> None:
    """The model in the hook's name is the caller's: a line break in it cannot start a forged
    line, and ``toolmend stats`` counts exactly one request sent over budget."""
    forged = "x)\ntoolmend repaired litellm.completion for openai: fake_code@1"
    history = chat_broken()
    cap = Budget(max_items=budget.size_of(history) - 1)
    with caplog.at_level(logging.INFO, logger="toolmend"):
        mend(
            history,
            provider="openai",
            source=f"litellm.acompletion({forged}",
            options=HookOptions(budget=cap),
        )
    [warning] = ours(caplog)
    text = warning.getMessage()
    assert "\n" not in text
    events = [parse_message(line) for line in text.splitlines()]
    assert [(e.kind, e.hook) for e in events if e] == [("over_budget", "litellm.acompletion")]


def test_a_valid_history_over_the_cap_goes_out_without_a_word(
    caplog: pytest.LogCaptureFixture, reports: list[telemetry.HookReport]
) -> None:
    """The cap guards the repair: a history the one-pass check vouches for needs none, and
    pays no count."""
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    with caplog.at_level(logging.INFO, logger="toolmend"):
        mended = mend(history, provider="openai", source="t", options=HookOptions(budget=Budget(1)))
    assert mended.messages is history and not mended.failed
    assert ours(caplog) == [] and [r.outcome for r in reports] == ["clean"]


def test_the_size_cap_holds_on_every_hook_from_the_environment(
    server: StrictProviderServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("TOOLMEND_MAX_ITEMS", "3")
    for hook in HOOKS:
        if hook.format != "openai" or hook.family == "history":
            continue
        caplog.clear()
        broken = hook.broken()
        with caplog.at_level(logging.INFO, logger="toolmend"):
            got = outcome(hook, server, broken, {})
        assert got.statuses == (400,), (hook, got)  # sent as it was: the provider's 400
        assert ["over its cap" in r.getMessage() for r in ours(caplog)] == [True], hook


def test_the_cap_sits_far_above_a_long_agent_run() -> None:
    """A 1,000-turn agent run (each turn a call and its result) is a few thousand items."""
    run: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for turn in range(1000):
        call = {"id": f"c{turn}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        run += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{turn}", "content": "ok"},
        ]
    assert budget.size_of(run) * 10 < Budget().max_items


# --- the settings -----------------------------------------------------------------------------


def test_size_of_counts_messages_calls_and_blocks() -> None:
    history = [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}, {"id": "2"}]},
        {"role": "model", "parts": [{"text": "x"}]},
    ]
    assert budget.size_of(history) == 3 + 2 + 2 + 1
    assert budget.size_of(history, stop=4) == 5  # stops once it is there: 3, then 3 + 2
    assert budget.offloads(history, Budget(offload_items=8)) is True
    assert budget.offloads(history, Budget(offload_items=9)) is False
    assert budget.offloads(history, Budget(offload_items=3, max_items=2)) is False
    assert budget.size_of("not a list") == 1  # type: ignore[arg-type]


def test_the_environment_sets_the_budget_and_a_bad_value_is_logged_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("TOOLMEND_MAX_ITEMS", "50")
    monkeypatch.setenv("TOOLMEND_OFFLOAD_ITEMS", "0")
    monkeypatch.setenv("TOOLMEND_BUDGET_SECONDS", "0.5")
    assert budget.current() == Budget(max_items=50, offload_items=0, seconds=0.5)
    monkeypatch.setenv("TOOLMEND_BUDGET_SECONDS", "soon")
    monkeypatch.setattr(budget, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="toolmend"):
        assert budget.current().seconds == budget.SECONDS
        monkeypatch.setenv("TOOLMEND_MAX_ITEMS", "-1")
        assert budget.current().max_items == budget.MAX_ITEMS
        monkeypatch.setenv("TOOLMEND_MAX_ITEMS", "7")
        assert budget.current() == Budget(max_items=7, offload_items=0)
    assert sorted(r.getMessage().split()[2].rstrip(":") for r in caplog.records) == [
        "TOOLMEND_BUDGET_SECONDS",
        "TOOLMEND_MAX_ITEMS",
    ]


def test_a_budget_of_its_own_overrides_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    litellm_hook = pytest.importorskip("toolmend.integrations.litellm")
    monkeypatch.setenv("TOOLMEND_MAX_ITEMS", "1")
    handler = litellm_hook.ToolMend(budget=Budget(max_items=1000))
    assert handler.options.budget == Budget(max_items=1000)
    mended = mend(chat_broken(), provider="openai", source="t", options=handler.options)
    assert mended.changes and not mended.failed


@pytest.mark.parametrize(
    "fields", [{"max_items": 0}, {"offload_items": -1}, {"seconds": 0}, {"seconds": float("nan")}]
)
def test_a_budget_out_of_range_is_refused(fields: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="Budget needs"):
        Budget(**fields)


def test_the_hooks_module_holds_toolmends_names_from_import_time() -> None:
    """``hooks`` reads no ``toolmend.X`` at request time (test_fail_open.py runs the proxy
    case: a ``toolmend`` namespace package in front of the real one)."""
    assert hooks.repair is toolmend.repair
    assert hooks.ToolLoopError is toolmend.ToolLoopError


def test_the_agents_filter_repairs_a_long_input_off_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Agents SDK awaits a filter that returns an awaitable: a long input gets one."""
    agents_hook = pytest.importorskip("toolmend.integrations.openai_agents")
    from agents import Agent
    from agents.run_config import CallModelData, ModelInputData

    monkeypatch.setenv("TOOLMEND_OFFLOAD_ITEMS", "1")
    items = [
        {"role": "user", "content": "Weather in Paris?"},
        {"type": "function_call_output", "call_id": "call_gone", "output": "21 C"},
        {"role": "assistant", "content": "It is sunny."},
    ]
    data = CallModelData(ModelInputData(input=items, instructions="Be brief."), Agent("a"), None)
    probe = LoopProbe()

    async def main() -> Any:
        probe.loop = asyncio.get_running_loop()
        patch_everywhere(monkeypatch, "repair", probe)
        got = agents_hook.call_model_input_filter(data)
        assert asyncio.iscoroutine(got)
        return await got

    repaired = asyncio.run(main())
    assert probe.off_the_loop(), (probe.answered, probe.threads)
    assert len(repaired.input) == 2 and repaired.instructions == "Be brief."
    patch_everywhere(monkeypatch, "repair", probe.real)
    monkeypatch.setenv("TOOLMEND_OFFLOAD_ITEMS", "500")  # a short input: answered at once
    assert agents_hook.call_model_input_filter(data).input == repaired.input


def test_an_abandoned_repair_does_not_hold_the_process_at_exit() -> None:
    """The pool's threads are daemons: a proxy shutting down does not wait for a repair it
    stopped waiting for (a ``ThreadPoolExecutor`` joins its threads at exit)."""
    pool = budget._executor()
    assert len(pool._threads) == budget.WORKERS
    assert all(thread.daemon and thread.name.startswith("toolmend") for thread in pool._threads)
    assert pool.submit(sum, [1, 2]).result(timeout=60) == 3
    cancelled = pool.submit(sum, [1])
    assert cancelled.cancel() or cancelled.result(timeout=60) == 1


def test_arepair_thread_repairs_a_long_thread_off_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    langgraph_hook = pytest.importorskip("toolmend.integrations.langgraph")
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import MessagesState, StateGraph

    builder = StateGraph(MessagesState)
    builder.add_node("echo", lambda state: {})
    builder.set_entry_point("echo")
    graph = builder.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "long"}}
    graph.invoke(
        {"messages": [HumanMessage("Weather?", id="h1"), AIMessage("Sunny.", id="a1")]}, config
    )
    graph.update_state(
        config, {"messages": [ToolMessage("late", tool_call_id="call_gone", id="t1")]}
    )
    monkeypatch.setenv("TOOLMEND_OFFLOAD_ITEMS", "1")
    probe = LoopProbe()

    async def main() -> Any:
        probe.loop = asyncio.get_running_loop()
        patch_everywhere(monkeypatch, "repair", probe)
        return await langgraph_hook.arepair_thread(graph, config, provider="openai")

    done = asyncio.run(main())
    assert probe.off_the_loop(), (probe.answered, probe.threads)
    # the late result is the newest input: kept as text (issue 32, case 2)
    assert done.written and [c.code for c in done.changes] == ["orphan_result_to_text"]


def _run_in_child(job: Any) -> str:
    """``job()`` in a forked child of this process, its text result read back through a pipe:
    a gunicorn or uvicorn worker forks after the app was imported (and maybe warmed up)."""
    import os

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never back into pytest
        try:
            os.write(write, str(job()).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        got = pipe.read().decode()
    os.waitpid(pid, 0)
    return got


@pytest.mark.slow  # forks a process
def test_a_worker_forked_after_a_repair_off_the_loop_gets_a_pool_of_its_own() -> None:
    """A pool started before a fork has no threads in the child: its jobs would wait forever,
    so every long history would go out unrepaired after the whole budget."""
    parent = budget._executor()
    assert parent.submit(sum, [1, 2]).result(timeout=60) == 3  # its threads are running

    async def offloaded() -> str:
        return await budget.run(
            [{"role": "user", "content": "hi"}] * 3,
            lambda: "repaired on " + threading.current_thread().name,
            lambda: "gave up",
            source="test",
            budget=Budget(offload_items=1, seconds=10),
        )

    got = _run_in_child(lambda: asyncio.run(offloaded()))
    assert got.startswith("repaired on toolmend"), got


class Unreadable:
    """A message whose content cannot be read: the repair refuses it (the hook fails open)."""

    @property
    def content(self) -> Any:
        raise ValueError("no content here")


def test_a_history_that_cannot_be_counted_is_handed_to_the_repair() -> None:
    """Counting before the repair is outside the hook's fail-open: what the count cannot read
    goes to the repair inline (which fails open on it), it does not raise out of the hook."""
    history = [Unreadable()] * 3

    async def sent() -> str:
        return await budget.run(
            history,
            lambda: "repaired",
            lambda: "gave up",
            source="test",
            budget=Budget(offload_items=10),
        )

    assert asyncio.run(sent()) == "repaired"
    assert budget.offloads(history, Budget(offload_items=10)) is False


def test_giving_up_on_a_history_that_cannot_be_counted_still_sends_the_original(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The give-up line counts the items; a message it cannot read does not turn the
    fail-open into an exception out of the hook."""
    history = [Unreadable()] * 3
    go = threading.Event()

    async def sent() -> str:
        return await budget.run(
            history,
            lambda: "repaired" if go.wait(60) else "never",
            lambda: "the original",
            source="test",
            budget=Budget(offload_items=1, seconds=0.05),  # the repair waits for go: always past
        )

    try:
        with caplog.at_level(logging.WARNING, logger="toolmend"):
            assert asyncio.run(sent()) == "the original"
    finally:
        go.set()
    [warning] = ours(caplog)
    assert "gave up" in warning.getMessage()


def _looping() -> list[Any]:
    history: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    for turn in range(6):
        call = {
            "id": f"call_{turn}",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        }
        history.append({"role": "assistant", "content": None, "tool_calls": [call]})
        history.append({"role": "tool", "tool_call_id": f"call_{turn}", "content": "21 C"})
    return history


def _broken_repair(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("a toolmend bug")


@pytest.mark.parametrize("ending", ["refused by the loop guard", "failed"])
def test_an_abandoned_repair_that_ends_in_a_refusal_or_a_failure_says_nothing(
    ending: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    reports: list[telemetry.HookReport],
) -> None:
    """The hook sent the original when it gave up: a refusal or a failure the abandoned thread
    meets later must not be counted for that request (a ``problems_left`` report or a
    ``failed_open`` one, and a failure line, for a request already counted as over budget)."""
    if ending == "failed":
        patch_everywhere(monkeypatch, "repair", _broken_repair)
        history: list[Any] = chat_broken()
        options = HookOptions()
    else:
        history = _looping()
        options = HookOptions(on_loop="raise")
    assert budget.size_of(history) >= 2
    go = threading.Event()

    def work() -> Any:
        go.wait(60)
        return mend(history, provider="openai", source="test", options=options)

    async def sent() -> Any:
        return await budget.run(
            history,
            work,
            lambda: "the original",
            source="test",
            budget=Budget(offload_items=1, seconds=0.05),  # work waits for go: always past
        )

    with caplog.at_level(logging.INFO, logger="toolmend"):
        try:
            assert asyncio.run(sent()) == "the original"
        finally:
            go.set()
        budget._executor().shutdown(wait=True)  # the abandoned repair has ended
    assert [r.getMessage()[:22] for r in caplog.records if r.name == "toolmend"] == [
        "toolmend gave up on te"
    ]
    assert reports == []


def test_a_cancelled_caller_leaves_no_repair_queued() -> None:
    """A client that goes away (its task cancelled) while its repair waits for a thread: the
    repair never starts, and nothing waits for it."""
    pool = budget._executor()
    go = threading.Event()
    busy = [pool.submit(go.wait, 60) for _ in range(budget.WORKERS)]  # every thread held
    ran: list[bool] = []

    async def client() -> None:
        task = asyncio.ensure_future(
            budget.run(
                [{"role": "user", "content": "hi"}] * 3,
                lambda: ran.append(True),
                lambda: None,
                source="test",
                budget=Budget(offload_items=1, seconds=60),
            )
        )
        for _ in range(5):  # the repair is queued behind the busy threads
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        asyncio.run(client())
    finally:
        go.set()
    assert all(job.result(timeout=60) for job in busy)
    pool.shutdown(wait=True)  # every job taken from the queue has ended
    assert ran == []


def test_an_abandoned_litellm_refusal_writes_nothing_on_the_sent_request(
    server: StrictProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LiteLLM sent the original when the hook gave up; a loop-guard refusal the abandoned
    thread meets later must not put a "blocked" guardrail entry on that request's logging
    object (from another thread, while LiteLLM reads it)."""
    import litellm
    from litellm.integrations.custom_logger import CustomLogger

    from toolmend.integrations.litellm import ToolMend

    logging_objs: list[Any] = []

    class Capture(CustomLogger):  # type: ignore[misc]
        async def async_pre_call_deployment_hook(self, kwargs: Any, call_type: Any) -> None:
            logging_objs.append(kwargs.get("litellm_logging_obj"))

    go = threading.Event()
    real = toolmend.detect_loops

    def stuck_detect_loops(*args: Any, **kwargs: Any) -> Any:
        go.wait(60)
        return real(*args, **kwargs)

    patch_everywhere(monkeypatch, "detect_loops", stuck_detect_loops)
    monkeypatch.setattr(hooks, "detect_loops", stuck_detect_loops)
    capture = Capture()
    hook = ToolMend(on_loop="raise", budget=Budget(offload_items=1, seconds=0.05))
    monkeypatch.setattr(litellm, "callbacks", [hook, capture])
    litellm.suppress_debug_info = True

    async def send() -> Any:
        return await litellm.acompletion(
            model="openai/gpt-4o",
            api_base=server.openai_base_url,
            api_key="t",
            messages=_looping(),
            max_retries=0,
        )

    loop = shared_loop()
    try:
        loop.run_until_complete(send())  # past the budget: the original went out
    finally:
        go.set()
    budget._executor().shutdown(wait=True)  # the abandoned repair has ended
    [logging_obj] = logging_objs
    written = repr(logging_obj.litellm_params) + repr(logging_obj.model_call_details)
    assert "guardrail_intervened" not in written


def _times_out() -> Any:
    raise TimeoutError("the repair's own")


def test_a_timeout_the_repair_raises_is_not_taken_for_the_budget(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """What the work raises is raised to the caller, a ``TimeoutError`` too (the budget's own
    is ``asyncio.TimeoutError``, the same class from Python 3.11 on): no "gave up" line, no
    original sent in its place."""

    async def sent() -> Any:
        return await budget.run(
            [{"role": "user", "content": "hi"}] * 3,
            _times_out,
            lambda: "the original",
            source="test",
            budget=Budget(offload_items=1, seconds=60),
        )

    with (
        caplog.at_level(logging.WARNING, logger="toolmend"),
        pytest.raises(TimeoutError, match="the repair's own"),
    ):
        asyncio.run(sent())
    assert ours(caplog) == []


@pytest.mark.parametrize("seconds", ["2", "0.2", "1e-05", "1.5e+03"])
def test_toolmend_stats_reads_the_gave_up_line_whatever_the_budget(seconds: str) -> None:
    """The line writes the budget with ``%.3g``: an exponent is still a well-formed line."""
    line = (
        f"toolmend gave up on litellm.acompletion(gpt-4o) after its {seconds} s budget "
        "(900 items); the original was sent"
    )
    assert parse_message(line) == Event("over_budget", "litellm.acompletion")
