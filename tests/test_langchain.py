"""The LangChain hooks, through real LangChain: ToolMendHistory and ToolMendMiddleware.

Seed 000 (docs/design.md) is the spec: a normal chain and its final answer are written; a
dangling ToolMessage is not; ``add_tool_call_chain`` refuses invalid chains; a windowed history does
not bypass validation. Then a real store (``SQLChatMessageHistory`` on SQLite, sync and async
engines), a store poisoned before the wrapper existed, ``RunnableWithMessageHistory`` and
``create_agent`` against the strict provider server with real chat model classes, and
concurrent writers (threads, asyncio tasks, processes).
"""

from __future__ import annotations

import asyncio
import json
import logging
import runpy
import subprocess
import sys
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_community.chat_message_histories import SQLChatMessageHistory
from langchain_core._api.deprecation import LangChainDeprecationWarning
from langchain_core.chat_history import BaseChatMessageHistory, InMemoryChatMessageHistory
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_core.tools import tool as lc_tool
from langchain_openai import ChatOpenAI

import toolmend
from toolmend.integrations.langchain import (
    Rejected,
    ToolMendHistory,
    ToolMendMiddleware,
    Window,
    provider_for,
)
from toolmend.testing import Reply, StrictProviderServer

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.filterwarnings(
    # RunnableWithMessageHistory warns on construction (LangChain's own deprecation).
    "ignore::langchain_core._api.deprecation.LangChainDeprecationWarning"
)


# --- builders ---------------------------------------------------------------------------------


def in_memory() -> InMemoryChatMessageHistory:
    """LangChain's in-memory store, built without its own deprecation warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LangChainDeprecationWarning)
        return InMemoryChatMessageHistory()


def human(text: str = "Weather in Paris?") -> HumanMessage:
    return HumanMessage(text)


def ai(text: str = "", *ids: str, name: str = "get_weather") -> AIMessage:
    calls = [{"name": name, "args": {"city": "Paris"}, "id": i, "type": "tool_call"} for i in ids]
    return AIMessage(text, tool_calls=calls)


def tool(call_id: str, text: str = "21 C", name: str | None = "get_weather") -> ToolMessage:
    return ToolMessage(text, tool_call_id=call_id, name=name)


def stored(history: ToolMendHistory) -> list[BaseMessage]:
    """What the wrapped store holds, read past the wrapper."""
    return list(history.inner.messages)


@lc_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"21 C in {city}"


# --- seed 000 --------------------------------------------------------------------------------------


def test_a_chain_and_its_final_answer_are_written() -> None:
    chain = [
        human(),
        ai("", "call_1", "call_2"),
        tool("call_2"),
        tool("call_1"),
        AIMessage("Sunny"),
    ]
    batch = ToolMendHistory(in_memory())
    batch.add_messages(chain)
    one_by_one = ToolMendHistory(in_memory())
    for message in chain:
        one_by_one.add_message(message)
    atomic = ToolMendHistory(in_memory())
    atomic.add_user_message("Weather in Paris?")
    atomic.add_tool_call_chain(chain[1], chain[2:4])
    atomic.add_ai_message("Sunny")
    for history in (batch, one_by_one, atomic):
        assert [m.type for m in stored(history)] == ["human", "ai", "tool", "tool", "ai"]
        assert history.rejected == []
        assert toolmend.check(stored(history), provider="deepseek") == []
    assert all(a is b for a, b in zip(stored(batch), chain, strict=True))


def test_the_final_answer_is_kept_even_when_its_chain_was_refused() -> None:
    history = ToolMendHistory(in_memory())
    history.add_user_message("Weather in Paris?")
    with pytest.raises(toolmend.ToolChainError):
        history.add_tool_call_chain(AIMessage("lost its tool_calls"), [tool("call_1")])
    history.add_ai_message("It is sunny in Paris.")
    assert [m.content for m in stored(history)] == ["Weather in Paris?", "It is sunny in Paris."]


DANGLING = {
    "first message": ([], tool("call_1"), "no_open_call"),
    "after a user message": ([human()], tool("call_1"), "no_open_call"),
    "after the final answer": (
        [human(), ai("", "call_1"), tool("call_1"), AIMessage("Sunny")],
        tool("call_1"),
        "duplicate_result",
    ),
    "assistant lost its tool_calls (seed 000)": (
        [human(), AIMessage("I will check.")],
        tool("call_1"),
        "no_open_call",
    ),
    "second result for one call": (
        [human(), ai("", "call_1", "call_2"), tool("call_1")],
        tool("call_1"),
        "duplicate_result",
    ),
    "unknown id": ([human(), ai("", "call_1")], tool("call_9"), "no_open_call"),
    "another function's name": (
        [human(), ai("", "call_1")],
        tool("call_1", name="get_time"),
        "name_mismatch",
    ),
    "its call was answered long ago": (
        [human(), ai("", "call_1"), tool("call_1"), human("again?"), ai("", "call_2")],
        tool("call_1"),
        "duplicate_result",
    ),
}


@pytest.mark.parametrize("case", list(DANGLING))
def test_a_dangling_tool_message_is_not_written(
    case: str, caplog: pytest.LogCaptureFixture
) -> None:
    before, message, reason = DANGLING[case]
    message = message.model_copy(update={"content": "SECRET RESULT"})
    history = ToolMendHistory(in_memory())
    history.add_messages(before)
    with caplog.at_level(logging.WARNING, logger="toolmend"):
        history.add_message(message)
    assert stored(history) == before
    assert history.rejected == [Rejected(message, reason)]
    assert message.tool_call_id in caplog.text and reason in caplog.text
    assert "SECRET" not in caplog.text
    if before:  # what a read returns is valid, a live frontier aside
        codes = {p.code for p in toolmend.check(history.messages, provider="deepseek")}
        assert codes <= {"missing_result"}


LATE = {
    "a user message came in between": [human(), ai("", "call_1"), human("are you there?")],
    "another writer's chain came in between": [
        human(),
        ai("", "call_1"),
        human("other writer"),
        ai("", "call_9"),
        tool("call_9"),
        AIMessage("other answer"),
    ],
    "a later call is waiting too": [human(), ai("", "call_1"), human("and?"), ai("", "call_2")],
}


@pytest.mark.parametrize("case", list(LATE))
def test_a_result_whose_call_is_still_unanswered_is_stored_wherever_it_lands(case: str) -> None:
    """Issue 24: several writers on one session store a call and its results in separate
    writes, and other messages land in between. The result is stored, and reads move it next
    to its call."""
    before = LATE[case]
    history = ToolMendHistory(in_memory())
    history.add_messages(before)
    history.add_message(tool("call_1"))
    assert stored(history) == [*before, tool("call_1")]
    assert history.rejected == []
    view = history.messages
    assert view[2] == tool("call_1")  # right after its call
    codes = {p.code for p in toolmend.check(view, provider="deepseek")}
    assert codes <= {"missing_result"}  # only a live frontier (call_2) may wait
    history.add_message(tool("call_1"))  # now it is answered
    assert [r.reason for r in history.rejected] == ["duplicate_result"]


def test_wrappers_of_one_store_share_what_it_holds() -> None:
    """A result another wrapper of the same store stored counts at once: a second result for
    that call is refused by every wrapper, and a call one wrapper stored is open to all."""
    inner = in_memory()
    first, second = ToolMendHistory(inner), ToolMendHistory(inner)
    first.add_messages([human(), ai("", "call_1")])
    second.add_message(tool("call_1"))  # its call came through the other wrapper
    first.add_message(tool("call_1"))  # answered already, through the other wrapper
    assert [m.type for m in stored(first)] == ["human", "ai", "tool"]
    assert (second.rejected, [r.reason for r in first.rejected]) == ([], ["duplicate_result"])


BAD_CHAINS: dict[str, tuple[Any, list[Any], str]] = {
    "no tool_calls": (AIMessage("lost them"), [tool("call_1")], "chain_without_calls"),
    "not an AIMessage": (human(), [tool("call_1")], "chain_not_ai_message"),
    "no results": (ai("", "call_1"), [], "chain_without_results"),
    "a result that is not a ToolMessage": (
        ai("", "call_1"),
        [HumanMessage("21 C")],
        "chain_not_tool_message",
    ),
    "ids do not match": (ai("", "call_1"), [tool("call_2")], "chain_unknown_call_id"),
    "a call without its result": (
        ai("", "call_1", "call_2"),
        [tool("call_1")],
        "chain_missing_result",
    ),
    "two results for one call": (
        ai("", "call_1"),
        [tool("call_1"), tool("call_1")],
        "chain_duplicate_result",
    ),
    "names do not match": (ai("", "call_1"), [tool("call_1", name="f")], "chain_name_mismatch"),
    "a call without an id": (
        AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": None}]),
        [tool("call_1")],
        "chain_call_without_id",
    ),
}


@pytest.mark.parametrize("case", list(BAD_CHAINS))
def test_add_tool_call_chain_refuses_invalid_chains(case: str) -> None:
    ai_message, results, code = BAD_CHAINS[case]
    history = ToolMendHistory(in_memory())
    history.add_user_message("Weather in Paris?")
    with pytest.raises(toolmend.ToolChainError, match="nothing was written") as raised:
        history.add_tool_call_chain(ai_message, results)
    assert code in {problem.code for problem in raised.value.problems}
    assert "21 C" not in str(raised.value)
    assert [m.type for m in stored(history)] == ["human"]
    history.add_tool_call_chain(ai("", "call_1"), [tool("call_1")])
    assert [m.type for m in stored(history)] == ["human", "ai", "tool"]


def test_a_windowed_history_does_not_bypass_validation() -> None:
    history = ToolMendHistory(in_memory(), window=Window(max_messages=4, keep_first=1))
    history.add_messages([SystemMessage("Be brief."), human()])
    for n in range(3):
        history.add_messages([ai("", f"call_{n}a", f"call_{n}b"), tool(f"call_{n}a")])
        history.add_message(tool(f"call_{n}a"))  # a duplicate: refused whatever the window
        history.add_messages([tool(f"call_{n}b"), AIMessage(f"answer {n}"), human(f"next {n}")])
    history.add_message(tool("call_dangling"))
    assert [r.reason for r in history.rejected] == ["duplicate_result"] * 3 + ["no_open_call"]
    assert len(stored(history)) == 17 and toolmend.check(stored(history), provider="deepseek") == []
    view = history.messages
    assert len(view) <= 4 and view[0].type == "system"
    assert toolmend.check(view, provider="deepseek") == []


class DirectWriteHistory(ToolMendHistory):
    """Seed 000's ``MessageWindowConversation``: an override writing straight to the store."""

    def add_message(self, message: BaseMessage) -> None:
        self.inner.add_messages([message])

    def add_messages(self, messages: Any) -> None:
        for message in messages:
            self.inner.add_messages([message])

    def add_tool_result(self, message: ToolMessage, note: str = "") -> None:
        """A writer the subclass adds."""
        self.inner.add_messages([message])


def test_a_subclass_override_cannot_bypass_validation() -> None:
    history = DirectWriteHistory(in_memory(), window=Window(max_messages=10))
    history.add_message(human())
    history.add_message(tool("call_1"))
    history.add_messages([ai("", "call_1"), tool("call_1"), tool("call_1"), AIMessage("Sunny")])
    history.add_user_message("thanks")
    assert [m.type for m in stored(history)] == ["human", "ai", "tool", "ai", "human"]
    assert [r.reason for r in history.rejected] == ["no_open_call", "duplicate_result"]
    history.add_message(tool("call_1"))  # the wrapper re-read the store after the override
    history.add_tool_result(tool("call_2"), note="late")
    assert [r.reason for r in history.rejected[2:]] == ["duplicate_result", "no_open_call"]
    history.add_message(ai("", "call_3"))
    history.add_tool_result(tool("call_3"))
    assert stored(history)[-1].tool_call_id == "call_3"


# --- reads ------------------------------------------------------------------------------------


def test_a_read_keeps_the_live_frontier_waiting() -> None:
    history = ToolMendHistory(in_memory())
    history.add_messages([human(), ai("", "call_1", "call_2"), tool("call_1")])
    assert history.messages is history.inner.messages  # valid so far: nothing copied
    history.add_message(tool("call_2"))
    assert history.rejected == []
    answering = ToolMendHistory(in_memory(), policy=toolmend.Policy())
    answering.add_messages([human(), ai("", "call_1", "call_2"), tool("call_1")])
    assert [m.content for m in answering.messages][-1] == toolmend.PLACEHOLDER_TEXT


def test_abandoned_calls_are_answered_on_read_and_the_frontier_is_not() -> None:
    history = ToolMendHistory(in_memory(), window=Window(max_messages=6))
    history.add_messages([human(), ai("", "call_1"), human("never mind")])  # call_1 abandoned
    history.add_messages([ai("", "call_2", "call_3"), tool("call_3")])  # call_2 still running
    view = history.messages
    assert [getattr(m, "tool_call_id", m.type) for m in view] == [
        "human",
        "ai",
        "call_1",
        "human",
        "ai",
        "call_3",
    ]
    assert view[2].content == toolmend.PLACEHOLDER_TEXT
    view_with_result = [*view, tool("call_2")]
    assert toolmend.check(view_with_result, provider="deepseek") == []


def test_strict_policy_raises_and_writes_nothing() -> None:
    history = ToolMendHistory(in_memory(), policy="strict")
    with pytest.raises(toolmend.ToolChainError, match="nothing was written"):
        history.add_messages([human(), tool("call_1")])
    assert stored(history) == [] and history.rejected == []
    poisoned = in_memory()
    poisoned.add_messages([human(), tool("call_1")])
    with pytest.raises(toolmend.ToolChainError):
        _ = ToolMendHistory(poisoned, policy="strict").messages


def test_report_policy_stores_everything_and_changes_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    history = ToolMendHistory(in_memory(), policy="report")
    with caplog.at_level(logging.INFO, logger="toolmend"):
        history.add_messages([human(), tool("call_1")])
        assert history.messages is history.inner.messages
    assert len(stored(history)) == 2 and history.rejected == []
    assert "no_open_call" in caplog.text


def test_unknown_provider_fails_at_construction() -> None:
    with pytest.raises(toolmend.UnknownNameError, match="Did you mean"):
        ToolMendHistory(in_memory(), provider="deepsek")


def test_nothing_here_warns(recwarn: pytest.WarningsRecorder) -> None:
    inner = in_memory()
    history = ToolMendHistory(inner, window=Window(max_messages=5))
    history.add_messages([human(), ai("", "call_1"), tool("call_1"), tool("call_1")])
    _ = history.messages
    asyncio.run(history.aadd_messages([AIMessage("Sunny")]))
    ToolMendMiddleware(persist=True)
    assert [str(w.message) for w in recwarn] == []


@pytest.mark.slow
def test_a_missing_langchain_names_the_extra() -> None:
    code = (
        "import sys\nsys.modules['langchain_core'] = None\nimport toolmend.integrations.langchain\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode != 0
    assert "pip install 'toolmend[langchain]'" in done.stderr


# --- a real store -----------------------------------------------------------------------------


def sql(path: Path, session: str = "s1") -> SQLChatMessageHistory:
    return SQLChatMessageHistory(session, connection=f"sqlite:///{path}")


CONVERSATION = [
    SystemMessage("Be brief."),
    human(),
    AIMessage(
        "Checking.",
        id="run-1",
        tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1"}],
        invalid_tool_calls=[
            {"name": "get_time", "args": "{oops", "id": "call_2", "error": "bad json"}
        ],
        usage_metadata={"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
    ),
    ToolMessage("21 C", tool_call_id="call_1", name="get_weather", artifact={"raw": 21}),
    ToolMessage("bad arguments", tool_call_id="call_2", name="get_time", status="error"),
    AIMessage("Sunny, 21 C."),
]


def test_sql_store_written_reopened_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    history = ToolMendHistory(sql(path))
    history.add_messages(CONVERSATION[:3])
    history.add_message(tool("call_9"))  # dangling: not written
    history.add_messages(CONVERSATION[3:])
    reopened = sql(path)
    assert reopened.messages == CONVERSATION
    assert reopened.messages[2].invalid_tool_calls[0]["args"] == "{oops"
    again = ToolMendHistory(sql(path))
    assert again.messages == CONVERSATION
    assert toolmend.check(again.messages, provider="deepseek") == []
    assert sql(tmp_path / "chat.db", "other").messages == []


def test_sync_sql_store_serves_async_callers(tmp_path: Path) -> None:
    history = ToolMendHistory(sql(tmp_path / "chat.db"))
    assert not history.async_only

    async def run() -> list[BaseMessage]:
        await history.aadd_messages(CONVERSATION[:3])
        await history.aadd_tool_call_chain(ai("", "call_5"), [tool("call_5")])
        await history.aadd_messages([tool("call_5")])
        messages = await history.aget_messages()
        await history.aclear()
        return messages

    messages = asyncio.run(run())
    # calls 1 and 2 were abandoned when call 5 came: the read answers them
    assert [m.type for m in messages] == ["system", "human", "ai", "tool", "tool", "ai", "tool"]
    assert [m.content for m in messages[3:5]] == [toolmend.PLACEHOLDER_TEXT] * 2
    assert history.rejected[0].reason == "duplicate_result"
    assert sql(tmp_path / "chat.db").messages == []


def test_async_sql_store(tmp_path: Path) -> None:
    pytest.importorskip("aiosqlite")
    url = f"sqlite+aiosqlite:///{tmp_path / 'chat.db'}"

    async def run() -> None:
        inner = SQLChatMessageHistory("s1", connection=url, async_mode=True)
        history = ToolMendHistory(inner)
        assert history.async_only
        await history.aadd_messages(CONVERSATION[:3])
        await history.aadd_messages([tool("call_9")])
        await history.aadd_messages(CONVERSATION[3:])
        await history.aadd_tool_call_chain(ai("", "call_7"), [tool("call_7")])
        first = await history.aget_messages()
        await inner.aadd_messages([tool("call_dangling")])  # poisoned behind the wrapper
        healed = ToolMendHistory(inner, write_back=True)
        second = await healed.aget_messages()
        stored_now = await SQLChatMessageHistory(
            "s1", connection=url, async_mode=True
        ).aget_messages()
        await inner.async_engine.dispose()
        assert [r.reason for r in healed.rejected] == ["dropped_on_write_back"]
        assert [r.reason for r in history.rejected] == ["no_open_call"]
        assert first == [*CONVERSATION, ai("", "call_7"), tool("call_7")]
        assert second == stored_now == first

    asyncio.run(run())


def poison(inner: BaseChatMessageHistory) -> None:
    """Seed 000's poisoned history, written past any wrapper."""
    inner.add_messages(
        [
            human(),
            AIMessage("I will check."),  # lost its tool_calls
            tool("call_lost", "21 C"),  # so this result dangles
            AIMessage("Sunny."),
            human("And Rome?"),
            ai("", "call_r"),  # its result never came
            human("Never mind."),
            AIMessage("OK."),
        ]
    )


def test_a_store_poisoned_before_wrapping_is_repaired_on_read(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    poison(sql(path))
    assert toolmend.check(sql(path).messages, provider="deepseek") != []
    view = ToolMendHistory(sql(path)).messages
    assert toolmend.check(view, provider="deepseek") == []
    assert len(sql(path).messages) == 8  # reading does not change the store
    healing = ToolMendHistory(sql(path), write_back=True)
    assert healing.messages == view
    # the store is fixed but for the placeholder: a write-back never answers a call (another
    # writer may still be about to store its result), reads answer it every time
    left = toolmend.check(sql(path).messages, provider="deepseek")
    assert [(p.code, p.ids) for p in left] == [("missing_result", ("call_r",))]
    assert [(r.reason, r.message.tool_call_id) for r in healing.rejected] == [
        ("dropped_on_write_back", "call_lost")
    ]
    again = sql(path).messages
    assert ToolMendHistory(sql(path), write_back=True).messages == view
    assert sql(path).messages == again  # nothing more to write back


# --- end to end: RunnableWithMessageHistory ---------------------------------------------------


def with_history(model: Any, history: BaseChatMessageHistory) -> RunnableWithMessageHistory:
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Be brief."), MessagesPlaceholder("history"), MessagesPlaceholder("input")]
    )
    return RunnableWithMessageHistory(
        prompt | model.bind_tools([get_weather]),
        lambda session_id: history,
        input_messages_key="input",
        history_messages_key="history",
    )


def conversation(chain: RunnableWithMessageHistory, history: BaseChatMessageHistory) -> None:
    """Two tool-calling turns with seed 000's broken writes in between."""
    config = {"configurable": {"session_id": "s1"}}
    for city in ("Paris", "Rome"):
        reply = chain.invoke({"input": [human(f"Weather in {city}?")]}, config)
        call = reply.tool_calls[0]
        result = ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"])
        chain.invoke({"input": [result.model_copy(update={"name": call["name"]})]}, config)
        history.add_message(AIMessage("Let me check that."))  # lost its tool_calls
        history.add_message(ToolMessage("21 C", tool_call_id="call_lost", name="get_weather"))


def script(server: StrictProviderServer) -> None:
    for city in ("Paris", "Rome"):
        server.script([Reply.tool_calls(("get_weather", {"city": city})), Reply.text("Sunny.")])


def chat_openai(server: StrictProviderServer) -> ChatOpenAI:
    return ChatOpenAI(
        base_url=server.openai_base_url, api_key="test", model="deepseek-chat", max_retries=0
    )


def test_runnable_with_message_history_and_chat_openai(
    strict_provider_factory: Callable[..., StrictProviderServer],
) -> None:
    server = strict_provider_factory("deepseek")
    script(server)
    history = ToolMendHistory(in_memory(), provider="deepseek")
    conversation(with_history(chat_openai(server), history), history)
    assert [r.status for r in server.requests] == [200] * 4
    assert all(r.provider == "deepseek" for r in server.requests)
    assert len(history.rejected) == 2


def test_without_the_wrapper_the_same_writes_break_the_next_request(
    strict_provider_factory: Callable[..., StrictProviderServer],
) -> None:
    server = strict_provider_factory("deepseek")
    script(server)
    history = in_memory()
    with pytest.raises(Exception, match="must be a response to a preceding message"):
        conversation(with_history(chat_openai(server), history), history)
    assert [r.status for r in server.requests] == [200, 200, 400]


def test_runnable_with_message_history_async_on_a_sync_sql_store(
    strict_provider_factory: Callable[..., StrictProviderServer], tmp_path: Path
) -> None:
    """Without ``history_messages_key`` LangChain reads the history twice (once to slice it
    off the input); under ``ainvoke`` a sync-mode SQL store raises unless the wrapper routes
    the async calls."""
    server = strict_provider_factory("deepseek")
    server.script([Reply.tool_calls(("get_weather", {"city": "Paris"})), Reply.text("Sunny.")])
    path = tmp_path / "chat.db"
    poison(sql(path))
    history = ToolMendHistory(sql(path))
    chain = RunnableWithMessageHistory(
        chat_openai(server).bind_tools([get_weather]), lambda session_id: history
    )
    config = {"configurable": {"session_id": "s1"}}

    async def run() -> None:
        reply = await chain.ainvoke([human()], config)
        call = reply.tool_calls[0]
        await chain.ainvoke([tool(call["id"], name=call["name"])], config)

    asyncio.run(run())
    assert [r.status for r in server.requests] == [200, 200]
    assert [m.type for m in sql(path).messages][-4:] == ["human", "ai", "tool", "ai"]


@pytest.mark.parametrize("vendor", ["anthropic", "gemini"])
def test_runnable_with_message_history_and_other_chat_models(
    vendor: str, strict_provider_factory: Callable[..., StrictProviderServer]
) -> None:
    server = strict_provider_factory(vendor)
    script(server)
    if vendor == "anthropic":
        module = pytest.importorskip("langchain_anthropic")
        model = module.ChatAnthropic(
            base_url=server.anthropic_base_url, api_key="test", model="claude-sonnet-5-5"
        )
    else:
        module = pytest.importorskip("langchain_google_genai")
        model = module.ChatGoogleGenerativeAI(
            base_url=server.gemini_base_url, google_api_key="test", model="gemini-2.5-flash"
        )
    assert provider_for(model) == vendor
    history = ToolMendHistory(in_memory(), provider=vendor)
    conversation(with_history(model, history), history)
    assert [r.status for r in server.requests] == [200] * 4
    assert {r.api for r in server.requests} == {"messages" if vendor == "anthropic" else "gemini"}


# --- the agent middleware ---------------------------------------------------------------------

BROKEN_THREAD = [
    human(),
    AIMessage("Let me check."),  # lost its tool_calls
    ToolMessage("21 C", tool_call_id="call_lost", name="get_weather"),
    human("And Rome?"),
]


def run_agent(server: StrictProviderServer, middleware: list[Any], mode: str) -> list[BaseMessage]:
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    server.script([Reply.tool_calls(("get_weather", {"city": "Rome"})), Reply.text("Warm.")])
    agent = create_agent(
        chat_openai(server),
        tools=[get_weather],
        middleware=middleware,
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t1"}}
    state = (
        agent.invoke({"messages": BROKEN_THREAD}, config)
        if mode == "sync"
        else asyncio.run(agent.ainvoke({"messages": BROKEN_THREAD}, config))
    )
    messages: list[BaseMessage] = state["messages"]
    return messages


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("persist", [False, True])
def test_middleware_repairs_every_model_call(
    mode: str, persist: bool, strict_provider_factory: Callable[..., StrictProviderServer]
) -> None:
    server = strict_provider_factory("deepseek")
    messages = run_agent(server, [ToolMendMiddleware(persist=persist)], mode)
    assert [r.status for r in server.requests] == [200, 200]
    dangling = [m for m in messages if getattr(m, "tool_call_id", None) == "call_lost"]
    assert bool(dangling) is not persist  # persist heals the stored thread; else untouched
    assert [m.type for m in messages][-3:] == ["ai", "tool", "ai"]


def test_without_the_middleware_the_agent_fails(
    strict_provider_factory: Callable[..., StrictProviderServer],
) -> None:
    server = strict_provider_factory("deepseek")
    with pytest.raises(Exception, match="must be a response to a preceding message"):
        run_agent(server, [], "sync")


@pytest.mark.parametrize("persist", [False, True])
def test_middleware_names_an_unknown_policy_where_it_is_built(persist: bool) -> None:
    """Not in the middle of an agent run: a valid request never reaches the repair that used
    to read the name (the hooks' fast path)."""
    with pytest.raises(toolmend.UnknownNameError, match="Unknown policy"):
        ToolMendMiddleware(persist=persist, policy="repiar")


def test_middleware_loop_guard(
    strict_provider_factory: Callable[..., StrictProviderServer], caplog: pytest.LogCaptureFixture
) -> None:
    from langchain.agents import create_agent

    looping: list[BaseMessage] = [human()]
    for n in range(3):
        looping += [ai("", f"call_{n}"), tool(f"call_{n}")]
    server = strict_provider_factory("deepseek")
    agent = create_agent(
        chat_openai(server), tools=[get_weather], middleware=[ToolMendMiddleware(on_loop="raise")]
    )
    with pytest.raises(toolmend.ToolLoopError):
        agent.invoke({"messages": looping})
    assert server.requests == []
    warned = create_agent(
        chat_openai(server), tools=[get_weather], middleware=[ToolMendMiddleware()]
    )
    with caplog.at_level(logging.WARNING, logger="toolmend"):
        warned.invoke({"messages": looping})
    assert "repeated_call" in caplog.text
    assert [r.status for r in server.requests] == [200]


def test_provider_for_chat_model_classes() -> None:
    from langchain_anthropic import ChatAnthropic
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_google_genai import ChatGoogleGenerativeAI

    def openai_model(**kwargs: Any) -> ChatOpenAI:
        return ChatOpenAI(api_key="test", **kwargs)

    assert provider_for(openai_model(model="gpt-4o")) == "openai"
    assert provider_for(openai_model(model="deepseek-chat")) == "deepseek"
    assert provider_for(openai_model(model="deepseek-reasoner")) == "deepseek-reasoner"
    assert provider_for(openai_model(model="x", base_url="https://api.deepseek.com")) == "deepseek"
    assert provider_for(openai_model(model="gpt-4o").bind_tools([get_weather])) == "openai"
    assert provider_for(ChatAnthropic(model="claude-sonnet-5-5", api_key="test")) == "anthropic"
    thinking = ChatAnthropic(
        model="claude-sonnet-5-5",
        api_key="test",
        max_tokens=2048,
        thinking={"type": "enabled", "budget_tokens": 1024},
    )
    assert provider_for(thinking) == "anthropic-thinking"
    google = ChatGoogleGenerativeAI(model="gemini-3-pro-preview", google_api_key="test")
    assert provider_for(google) == "gemini-3"
    assert provider_for(GenericFakeChatModel(messages=iter([]))) == "openai"


# --- concurrency ------------------------------------------------------------------------------


def writer_messages(tag: str) -> list[list[BaseMessage]]:
    """One writer's batches: a user message, a chain, the answer, and a dangling result."""
    batches: list[list[BaseMessage]] = []
    for k in range(4):
        ids = (f"call_{tag}_{k}a", f"call_{tag}_{k}b")
        batches.append([human(f"question {tag} {k}")])
        batches.append([ai("", *ids), tool(ids[1]), tool(ids[0])])  # a chain, one batch
        batches.append([AIMessage(f"answer {tag} {k}")])
        batches.append([tool(f"call_{tag}_late_{k}")])  # dangling
    return batches


def check_conservation(history: ToolMendHistory, written: list[BaseMessage]) -> None:
    kept = stored(history)
    assert toolmend.check(kept, provider="deepseek") == []
    found = Counter(id(m) for m in kept) + Counter(id(r.message) for r in history.rejected)
    assert found == Counter(id(m) for m in written)
    for index, message in enumerate(kept):  # every chain is contiguous
        for offset, _ in enumerate(getattr(message, "tool_calls", ()), start=1):
            assert kept[index + offset].type == "tool"


def test_threads_and_tasks_writing_at_once_never_interleave_a_chain() -> None:
    history = ToolMendHistory(in_memory())
    written: list[BaseMessage] = []
    start = threading.Barrier(9)

    async def task_writer(tag: str) -> None:
        for n, batch in enumerate(writer_messages(tag)):
            written.extend(batch)
            if n % 4 == 1:
                await history.aadd_tool_call_chain(batch[0], batch[1:])
            else:
                await history.aadd_messages(batch)

    async def tasks() -> None:
        await asyncio.gather(*(task_writer(f"task{n}") for n in range(8)))

    thread_batches = {f"thread{n}": writer_messages(f"thread{n}") for n in range(8)}

    def run_thread(tag: str) -> None:
        batches = thread_batches[tag]
        start.wait()
        for n, batch in enumerate(batches):
            if n % 4 == 1:
                history.add_tool_call_chain(batch[0], batch[1:])
            else:
                history.add_messages(batch)

    for batches in thread_batches.values():
        written.extend(m for batch in batches for m in batch)
    threads = [threading.Thread(target=run_thread, args=(tag,)) for tag in thread_batches]
    for thread in threads:
        thread.start()
    start.wait()
    asyncio.run(tasks())
    for thread in threads:
        thread.join()
    check_conservation(history, written)
    assert len(history.rejected) == 16 * 4
    assert toolmend.check(history.messages, provider="deepseek") == []


def test_split_writes_racing_store_every_result() -> None:
    """Writers that store a call and its result in separate calls race: a result whose call is
    no longer the last one is still stored (its call is unanswered), and the read moves it
    next to its call (issue 24; tests/test_langchain_concurrency.py counts this at scale)."""
    history = ToolMendHistory(in_memory())
    written: list[BaseMessage] = []
    lock = threading.Lock()

    def writer(tag: str) -> None:
        for k in range(5):
            call, result = ai("", f"call_{tag}_{k}"), tool(f"call_{tag}_{k}")
            with lock:
                written.extend([call, result])
            history.add_message(call)
            time.sleep(0.0005)
            history.add_message(result)

    threads = [threading.Thread(target=writer, args=(str(n),)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    kept = stored(history)
    found = Counter(id(m) for m in kept) + Counter(id(r.message) for r in history.rejected)
    assert found == Counter(id(m) for m in written)
    assert toolmend.check(history.messages, provider="deepseek") == []
    assert history.rejected == []
    assert Counter(id(m) for m in kept) == Counter(id(m) for m in written)


def test_async_tasks_on_an_async_only_store(tmp_path: Path) -> None:
    pytest.importorskip("aiosqlite")
    url = f"sqlite+aiosqlite:///{tmp_path / 'chat.db'}"
    written: list[BaseMessage] = []

    async def run() -> ToolMendHistory:
        inner = SQLChatMessageHistory("s1", connection=url, async_mode=True)
        history = ToolMendHistory(inner)

        async def task_writer(tag: str) -> None:
            for n, batch in enumerate(writer_messages(tag)[:8]):
                written.extend(batch)
                if n % 4 == 1:
                    await history.aadd_tool_call_chain(batch[0], batch[1:])
                else:
                    await history.aadd_messages(batch)

        await asyncio.gather(*(task_writer(f"task{n}") for n in range(8)))
        kept = await inner.aget_messages()
        await inner.async_engine.dispose()
        assert toolmend.check(kept, provider="deepseek") == []
        assert len(kept) + len(history.rejected) == len(written)
        assert len(history.rejected) == 16
        return history

    asyncio.run(run())


def test_wrappers_in_two_processes_are_made_safe_by_the_read(tmp_path: Path) -> None:
    """Two wrappers over one store stand for two processes: their writes interleave in the
    store, every result is stored (its call is there, unanswered), and every read is valid."""
    path = tmp_path / "shared.db"
    first, second = ToolMendHistory(sql(path)), ToolMendHistory(sql(path))
    first.add_messages([human("one")])
    second.add_messages([human("two")])
    first.add_message(ai("", "call_a"))
    second.add_message(ai("", "call_b"))
    first.add_message(tool("call_a"))  # first still sees call_a open: stored out of place
    second.add_message(tool("call_b"))
    first.add_message(AIMessage("answer one"))
    raw = sql(path).messages
    assert toolmend.check(raw, provider="deepseek") != []  # the store itself is broken
    for history in (first, second, ToolMendHistory(sql(path))):
        assert toolmend.check(history.messages, provider="deepseek") == []
    assert first.rejected == second.rejected == []


PROCESS_WRITER = """
import os, sys, time
from langchain_community.chat_message_histories import SQLChatMessageHistory
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from toolmend.integrations.langchain import ToolMendHistory

path, tag, go = sys.argv[1], sys.argv[2], sys.argv[3]
history = ToolMendHistory(SQLChatMessageHistory("shared", connection=f"sqlite:///{path}"))
open(f"{go}.{tag}", "w").close()
while not os.path.exists(go):
    time.sleep(0.005)
for k in range(4):
    call_id = f"call_{tag}_{k}"
    history.add_message(HumanMessage(f"question {tag} {k}"))
    history.add_message(AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": call_id}]))
    time.sleep(0.02)
    history.add_message(ToolMessage("result", tool_call_id=call_id, name="f"))
    history.add_message(AIMessage(f"answer {tag} {k}"))
"""


@pytest.mark.slow
def test_processes_sharing_a_store_are_made_safe_by_the_read(tmp_path: Path) -> None:
    path, go = tmp_path / "shared.db", tmp_path / "go"
    sql(path, "shared")  # create the table once, before the writers race for it
    tags = ("p1", "p2")
    writers = [
        subprocess.Popen([sys.executable, "-c", PROCESS_WRITER, str(path), tag, str(go)])
        for tag in tags
    ]
    deadline = time.monotonic() + 60
    while not all(Path(f"{go}.{tag}").exists() for tag in tags) and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()  # both wrappers are built: start writing together
    assert [writer.wait(timeout=60) for writer in writers] == [0, 0]
    raw = sql(path, "shared").messages
    assert len([m for m in raw if m.type == "human"]) == 8
    view = ToolMendHistory(sql(path, "shared")).messages
    assert toolmend.check(view, provider="deepseek") == []


# --- a write-back when the store moved -----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sqlite", "in_memory"])
def test_a_write_back_writes_nothing_when_the_store_moved(tmp_path: Path, kind: str) -> None:
    """The step the races above hit, made to happen for sure: a repair computed from what a
    read saw, written back after another writer appended a message. The store keeps that
    message and the wrapper writes nothing; the next read writes the repair back."""
    inner: Any = sql(tmp_path / "chat.db") if kind == "sqlite" else in_memory()
    poisoned = [
        HumanMessage("q"),
        ToolMessage("stray", tool_call_id="call_stray"),  # an orphan: the repair drops it
        HumanMessage("q2"),
    ]
    inner.add_messages(poisoned)
    history = ToolMendHistory(inner, write_back=True)
    raw = list(inner.messages)
    _, write = history._view(raw)  # the read, stopped before its write-back
    assert write is not None and [m.content for m in write[0]] == ["q", "q2"]
    late = HumanMessage("another writer's message")
    inner.add_messages([late])  # lands between the read and the write-back
    history._write_back_sync(raw, *write)
    assert [m.content for m in inner.messages] == ["q", "stray", "q2", late.content]
    assert history.rejected == []  # nothing was dropped, so nothing is reported dropped
    assert [m.content for m in history.messages] == ["q", "q2", late.content]
    assert [m.content for m in inner.messages] == ["q", "q2", late.content]  # written now
    assert [r.reason for r in history.rejected] == ["dropped_on_write_back"]


# --- examples ---------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", ["langchain_history.py", "langchain_middleware.py"])
def test_examples_run_offline(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(ROOT / "examples" / name), run_name="__main__")
    assert "every request accepted" in capsys.readouterr().out


def test_rejections_are_records_of_message_and_reason() -> None:
    history = ToolMendHistory(in_memory())
    history.add_message(tool("call_1"))
    (rejection,) = history.rejected
    assert json.loads(json.dumps({"reason": rejection.reason})) == {"reason": "no_open_call"}
    history.rejected.clear()  # a copy: the wrapper's own record is kept
    assert len(history.rejected) == 1
