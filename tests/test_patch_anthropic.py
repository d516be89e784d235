"""anthropic through toolmend.integrations.patch: every call path, real SDK, real HTTP.

``messages.stream()`` and ``messages.parse()`` post by themselves (they do not call
``create``), in the GA and the beta namespace, so each has its own row; every path below must be
repaired exactly once.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import toolmend.integrations.patch as tm

from support.patch_cases import ANTHROPIC, MendCounter, expected, unchanged

anthropic = pytest.importorskip("anthropic")

MODEL = "claude-sonnet-5-5"
ARGS: dict[str, Any] = {"model": MODEL, "max_tokens": 64}


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    tm.unpatch()
    yield
    tm.unpatch()


@pytest.fixture
def mends(monkeypatch: pytest.MonkeyPatch) -> MendCounter:
    counter = MendCounter()
    monkeypatch.setattr(tm, "mend", counter)
    return counter


def _create(c: Any, h: Any) -> None:
    c.messages.create(messages=h, **ARGS)


def _create_stream(c: Any, h: Any) -> None:
    for _ in c.messages.create(messages=h, stream=True, **ARGS):
        pass


def _stream(c: Any, h: Any) -> None:
    with c.messages.stream(messages=h, **ARGS) as stream:
        stream.get_final_message()


def _parse(c: Any, h: Any) -> None:
    c.messages.parse(messages=h, **ARGS)


def _raw_create(c: Any, h: Any) -> None:
    c.messages.with_raw_response.create(messages=h, **ARGS).parse()


def _streaming_response(c: Any, h: Any) -> None:
    with c.messages.with_streaming_response.create(messages=h, **ARGS) as response:
        response.read()


def _beta_create(c: Any, h: Any) -> None:
    c.beta.messages.create(messages=h, **ARGS)


def _beta_stream(c: Any, h: Any) -> None:
    with c.beta.messages.stream(messages=h, **ARGS) as stream:
        stream.get_final_message()


def _beta_parse(c: Any, h: Any) -> None:
    c.beta.messages.parse(messages=h, **ARGS)


async def _acreate(c: Any, h: Any) -> None:
    await c.messages.create(messages=h, **ARGS)


async def _acreate_stream(c: Any, h: Any) -> None:
    async for _ in await c.messages.create(messages=h, stream=True, **ARGS):
        pass


async def _astream(c: Any, h: Any) -> None:
    async with c.messages.stream(messages=h, **ARGS) as stream:
        await stream.get_final_message()


async def _aparse(c: Any, h: Any) -> None:
    await c.messages.parse(messages=h, **ARGS)


async def _abeta_create(c: Any, h: Any) -> None:
    await c.beta.messages.create(messages=h, **ARGS)


async def _abeta_stream(c: Any, h: Any) -> None:
    async with c.beta.messages.stream(messages=h, **ARGS) as stream:
        await stream.get_final_message()


async def _abeta_parse(c: Any, h: Any) -> None:
    await c.beta.messages.parse(messages=h, **ARGS)


PATHS: dict[str, Callable[[Any, Any], Any]] = {
    "messages.create": _create,
    "messages.create(stream=True)": _create_stream,
    "messages.stream()": _stream,
    "messages.parse": _parse,
    "messages.with_raw_response.create": _raw_create,
    "messages.with_streaming_response.create": _streaming_response,
    "beta.messages.create": _beta_create,
    "beta.messages.stream()": _beta_stream,
    "beta.messages.parse": _beta_parse,
    "async messages.create": _acreate,
    "async messages.create(stream=True)": _acreate_stream,
    "async messages.stream()": _astream,
    "async messages.parse": _aparse,
    "async beta.messages.create": _abeta_create,
    "async beta.messages.stream()": _abeta_stream,
    "async beta.messages.parse": _abeta_parse,
}


def _needs(name: str) -> None:
    """Skip a path the installed anthropic does not have (parse, beta stream, thinking)."""
    from anthropic.resources.beta.messages import Messages as Beta
    from anthropic.resources.messages import Messages

    owner = Beta if "beta." in name else Messages
    method = name.split(".")[-1].removesuffix("()").split("(")[0]
    if not hasattr(owner, method):
        pytest.skip(f"anthropic {anthropic.__version__} has no {name}")


def _send(path: Callable[[Any, Any], Any], base_url: str, history: Any) -> None:
    if asyncio.iscoroutinefunction(path):

        async def main() -> None:
            async with anthropic.AsyncAnthropic(
                api_key="test", base_url=base_url, max_retries=0
            ) as c:
                await path(c, history)

        asyncio.run(main())
    else:
        with anthropic.Anthropic(api_key="test", base_url=base_url, max_retries=0) as c:
            path(c, history)


@pytest.mark.parametrize("name", PATHS)
def test_path_repaired_exactly_once(name: str, strict_provider: Any, mends: MendCounter) -> None:
    _needs(name)
    path = PATHS[name]
    with unchanged(ANTHROPIC):
        with pytest.raises(anthropic.BadRequestError):
            _send(path, strict_provider.anthropic_base_url, ANTHROPIC)
        assert strict_provider.last_request.status == 400

        tm.patch()
        _send(path, strict_provider.anthropic_base_url, ANTHROPIC)
    assert strict_provider.last_request.accepted, strict_provider.last_request.error
    assert strict_provider.last_request.history == expected(ANTHROPIC, "anthropic", "anthropic")
    assert len(mends.calls) == 1, mends.calls


def test_sdk_blocks_in_history(strict_provider: Any) -> None:
    """The assistant turn as the SDK returned it (pydantic ``TextBlock``/``ToolUseBlock``)."""
    from anthropic.types import TextBlock, ToolUseBlock

    assistant = {
        "role": "assistant",
        "content": [
            TextBlock(type="text", text="Let me check."),
            ToolUseBlock(type="tool_use", id="toolu_01", name="get_weather", input={"city": "P"}),
        ],
    }
    history = [ANTHROPIC[0], assistant, ANTHROPIC[2], ANTHROPIC[3]]
    tm.patch()
    with unchanged(history):
        _send(_create, strict_provider.anthropic_base_url, history)
    assert strict_provider.last_request.accepted, strict_provider.last_request.error


def test_thinking_request_uses_the_thinking_profile(
    strict_provider: Any, caplog: pytest.LogCaptureFixture
) -> None:
    if "thinking" not in inspect.signature(anthropic.resources.Messages.create).parameters:
        pytest.skip(f"anthropic {anthropic.__version__} has no thinking")
    tm.patch()
    with (
        caplog.at_level(logging.INFO, logger="toolmend"),
        anthropic.Anthropic(
            api_key="test", base_url=strict_provider.anthropic_base_url, max_retries=0
        ) as c,
    ):
        c.messages.create(
            messages=ANTHROPIC,
            thinking={"type": "enabled", "budget_tokens": 1024},
            model=MODEL,
            max_tokens=2048,
        )
    assert strict_provider.last_request.provider == "anthropic-thinking"
    assert strict_provider.last_request.accepted, strict_provider.last_request.error
    assert any("for anthropic-thinking" in r.getMessage() for r in caplog.records)
