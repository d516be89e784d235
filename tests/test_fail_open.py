"""Every hook fails open: a fault inside toolmend, or a history toolmend cannot read, never
costs the caller their call.

For each hook entry point (tests/support/hook_entries.py: LiteLLM sync, async, streamed, Router;
the patched openai, anthropic and google-genai methods; LangChain's history wrapper, read and
write, and agent middleware; here also the real LiteLLM Proxy) a fault is injected inside
toolmend with ``monkeypatch`` on toolmend's own functions (the SDKs are real and untouched),
and the call must come out exactly as the same call made without toolmend: the strict server
receives the caller's original history, a valid one is answered 200, a broken one gets the
provider's own 400 through the SDK's own error, the caller's list is not mutated, and the
fault is logged once on logger ``toolmend`` with its traceback. Building a hook fails open
too (``ToolMendHistory``, ``ToolMend``, ``ToolMendMiddleware``, ``patch()``): only an unknown
provider or policy name, the caller's own mistake, raises there.

Hostile input (None, not a list, items that are not messages, missing or mistyped fields,
numeric ids, cyclic content) goes through every hook the same way: it reaches the SDK as the
caller passed it, the SDK does whatever it does with it, and toolmend says so in at most one
WARNING naming the message index and field: no traceback, no RecursionError, no hang.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import toolmend
import toolmend._api
import toolmend._appending
import toolmend._fastpath
import toolmend._policy
import toolmend.formats._openai_chat
import toolmend.profiles
from toolmend.testing import StrictProviderServer

from support import litellm_proxy
from support.event_loops import close_loop
from support.faults import (
    FAULTS,
    FULL_PATH_ONLY,
    InjectedFaultError,
    fault,
    faults_for,
    patch_everywhere,
    raise_fault,
)
from support.hook_entries import (
    HOOKS,
    Hook,
    Outcome,
    anthropic_broken,
    anthropic_valid,
    chat_broken,
    chat_valid,
    gemini_broken,
    gemini_valid,
    langchain_broken,
    outcome,
    responses_broken,
    responses_valid,
    shared_loop,
)
from support.patch_cases import unchanged

litellm_hook = pytest.importorskip("toolmend.integrations.litellm")
langchain_hook = pytest.importorskip("toolmend.integrations.langchain")
langchain_middleware = pytest.importorskip("toolmend.integrations.langchain_middleware")

pytestmark = pytest.mark.filterwarnings(
    "ignore::DeprecationWarning",  # google-genai's aiohttp session, LangChain's own
)


@pytest.fixture(scope="module")
def server() -> Iterator[StrictProviderServer]:
    with StrictProviderServer() as running:
        yield running
    close_loop(shared_loop())


# --- faults inside toolmend ------------------------------------------------------------------


CASES = [
    pytest.param(hook, fault, state, id=f"{hook}-{fault}-{state}")
    for hook in HOOKS
    for fault in faults_for(hook)
    for state in (("broken",) if fault in FULL_PATH_ONLY else ("valid", "broken"))
]


# --- helpers ---------------------------------------------------------------------------------

_baselines: dict[tuple[str, str], Outcome] = {}


def baseline(server: StrictProviderServer, hook: Hook, state: str) -> Outcome:
    """The same call made without toolmend (computed once per hook and history)."""
    key = (hook.name, state)
    if key not in _baselines:
        history = hook.valid() if state == "valid" else hook.broken()
        _baselines[key] = outcome(hook, server, history, None)
    return _baselines[key]


def ours(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """The records toolmend wrote: on its logger, or from its code on any logger."""
    return [
        r
        for r in caplog.records
        if r.name.split(".")[0] == "toolmend" or "/integrations/" in r.pathname
    ]


# --- the hooks are live ----------------------------------------------------------------------


@pytest.mark.parametrize("hook", HOOKS, ids=str)
def test_every_hook_repairs_what_the_provider_would_refuse(
    server: StrictProviderServer, hook: Hook
) -> None:
    """Without toolmend the broken history gets the provider's 400, with it a 200: so the
    hook really is on the call path the fail-open tests below break."""
    without = baseline(server, hook, "broken")
    assert without.statuses == (400,), without
    assert without.error is not None
    valid = baseline(server, hook, "valid")
    assert valid.statuses == (200,) and valid.error is None, valid
    repaired = outcome(hook, server, hook.broken(), {})
    assert (repaired.error, repaired.statuses) == (None, (200,)), repaired


# --- a fault inside toolmend -----------------------------------------------------------------


@pytest.mark.parametrize(("hook", "fault", "state"), CASES)
def test_a_fault_inside_toolmend_sends_the_original(
    server: StrictProviderServer,
    hook: Hook,
    fault: str,
    state: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The call goes out as the same call without toolmend does, and the fault is one ERROR
    line with its traceback."""
    expected = baseline(server, hook, state)
    history = hook.valid() if state == "valid" else hook.broken()
    FAULTS[fault](monkeypatch)
    with caplog.at_level(logging.DEBUG), unchanged(history):
        got = outcome(hook, server, history, {})
    assert got == expected
    if state == "valid":
        assert (got.error, got.statuses) == (None, (200,))
    else:
        assert got.error is not None and got.statuses == (400,)  # the provider's own 400
    logged = [r for r in ours(caplog) if r.levelno >= logging.WARNING]
    assert len(logged) == 1, [r.getMessage() for r in logged]
    assert logged[0].levelno == logging.ERROR
    assert logged[0].exc_info is not None
    assert logged[0].exc_info[0] is (TypeError if fault == "log_line" else InjectedFaultError)


# --- a fault after the request is built (LiteLLM's record of the attempt) ----------------------

AFTER = {
    "attach": fault(litellm_hook, "_attach"),  # the record onto LiteLLM's logging object
    "copy_record": fault(litellm_hook, "_copy_record"),  # the record onto the response
}


@pytest.mark.parametrize("fault", sorted(AFTER))
@pytest.mark.parametrize("hook", [h for h in HOOKS if h.family == "litellm"], ids=str)
def test_a_fault_after_the_request_is_built_does_not_fail_the_call(
    server: StrictProviderServer,
    hook: Hook,
    fault: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The repaired request still goes out and its response comes back; only the record of
    what changed is missing, and that is logged."""
    expected = outcome(hook, server, hook.broken(), {})
    AFTER[fault](monkeypatch)
    with caplog.at_level(logging.DEBUG):
        got = outcome(hook, server, hook.broken(), {})
    assert got == expected
    assert got.statuses == (200,) and got.error is None
    failures = [r for r in ours(caplog) if r.levelno >= logging.ERROR]
    assert len(failures) == 1, [r.getMessage() for r in failures]
    assert failures[0].exc_info is not None and failures[0].exc_info[0] is InjectedFaultError


# --- hostile input ---------------------------------------------------------------------------


def _cyclic(history: list[Any]) -> list[Any]:
    """``history`` with its first message holding itself (dicts) or a dict holding itself."""
    first = history[0]
    if isinstance(first, dict):
        first["self"] = first
    else:
        loop: dict[str, Any] = {"note": "x"}
        loop["self"] = loop
        first.additional_kwargs = {"loop": loop}
    return history


def _openai_numeric_ids() -> list[Any]:
    history = chat_valid()
    history[1]["tool_calls"][0]["id"] = 123
    history[2]["tool_call_id"] = 123
    return history


def _openai_none_ids() -> list[Any]:
    history = chat_valid()
    history[1]["tool_calls"][0]["id"] = None
    history[2]["tool_call_id"] = None
    return history


def _responses_numeric_ids() -> list[Any]:
    history = responses_valid()
    history[1]["call_id"] = history[2]["call_id"] = 123
    return history


def _anthropic_numeric_ids() -> list[Any]:
    history = anthropic_valid()
    history[1]["content"][1]["id"] = 123
    history[2]["content"][0]["tool_use_id"] = 123
    return history


def _gemini_numeric_ids() -> list[Any]:
    history = gemini_valid()
    history[1]["parts"][0]["function_call"]["id"] = 123
    history[2]["parts"][0]["function_response"]["id"] = 123
    return history


def _langchain_numeric_ids() -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage

    call = {"name": "get_weather", "args": {}, "id": 123, "type": "tool_call"}
    return [
        HumanMessage("Weather?", id="m0"),
        AIMessage.model_construct(content="", tool_calls=[call], id="m1", type="ai"),
        HumanMessage("Still there?", id="m2"),
    ]


def _langchain_not_messages() -> list[Any]:
    from langchain_core.messages import HumanMessage

    return [None, 42, "hi", HumanMessage("Weather?", id="m0")]


HOSTILE: dict[str, dict[str, Callable[[], Any]]] = {
    "openai": {
        "none": lambda: None,
        "not_a_list": lambda: {"role": "user", "content": "hi"},
        "not_messages": lambda: [None, 42, "hi"],
        "missing_role": lambda: [{"content": "hi"}],
        "wrong_types": lambda: [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": "abc"},
        ],
        "numeric_ids": _openai_numeric_ids,
        "none_ids": _openai_none_ids,
        "unknown_role": lambda: [{"role": "wizard", "content": "hi"}],
        "cyclic": lambda: _cyclic(chat_broken()),
    },
    "openai-responses": {
        "none": lambda: None,
        "not_a_list": lambda: {"role": "user", "content": "hi"},
        "not_messages": lambda: [None, 42],
        "wrong_types": lambda: [{"type": "function_call", "call_id": "c", "name": 5}],
        "numeric_ids": _responses_numeric_ids,
        "cyclic": lambda: _cyclic(responses_broken()),
    },
    "anthropic": {
        "none": lambda: None,
        "not_a_list": lambda: {"role": "user", "content": "hi"},
        "not_messages": lambda: [None, 42, "hi"],
        "missing_role": lambda: [{"content": "hi"}],
        "wrong_types": lambda: [{"role": "user", "content": 5}],
        "numeric_ids": _anthropic_numeric_ids,
        "unknown_role": lambda: [{"role": "wizard", "content": "hi"}],
        "cyclic": lambda: _cyclic(anthropic_broken()),
    },
    "gemini": {
        "none": lambda: None,
        "not_a_list": lambda: 42,
        "not_messages": lambda: [None, 42],
        "wrong_types": lambda: [{"role": "user", "parts": "abc"}],
        "numeric_ids": _gemini_numeric_ids,
        "unknown_role": lambda: [{"role": "wizard", "parts": [{"text": "hi"}]}],
        "cyclic": lambda: _cyclic(gemini_broken()),
    },
    "langchain": {
        "none": lambda: None,
        "not_messages": _langchain_not_messages,
        "numeric_ids": _langchain_numeric_ids,
        "cyclic": lambda: _cyclic(langchain_broken()),
    },
}
"""format -> case -> a fresh hostile history in (or around) that format."""

HOSTILE_CASES = [
    pytest.param(hook, case, id=f"{hook}-{case}") for hook in HOOKS for case in HOSTILE[hook.format]
]

_PROVIDERS = {"openai": "openai", "langchain": "deepseek"}


def _unreadable(hook: Hook, history: Any) -> str | None:
    """What toolmend's core says about ``history`` when it cannot read it (None: it can)."""
    provider = _PROVIDERS.get(hook.format, hook.format)
    try:
        toolmend.repair(history, provider=provider, format=hook.format)
    except toolmend.InvalidHistoryError as error:
        return str(error)
    return None


@pytest.mark.parametrize(("hook", "case"), HOSTILE_CASES)
def test_hostile_input_goes_to_the_sdk_as_it_is(
    server: StrictProviderServer, hook: Hook, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    """What toolmend cannot read reaches the SDK untouched; what it can read is repaired as
    usual. Either way toolmend writes at most one line, never an error with a traceback, and
    never fails the call itself."""
    make = HOSTILE[hook.format][case]
    unreadable = _unreadable(hook, make())
    expected = outcome(hook, server, make(), None)
    history = make()
    before = repr(history)
    with caplog.at_level(logging.DEBUG):
        got = outcome(hook, server, history, {})
    assert repr(history) == before
    logged = [r for r in ours(caplog) if r.levelno >= logging.WARNING]
    assert not [r for r in logged if r.exc_info or r.levelno >= logging.ERROR], [
        r.getMessage() for r in logged
    ]
    assert len(logged) <= 1, [r.getMessage() for r in logged]
    assert got.error not in {"RecursionError", *(n for n in dir(toolmend) if n.endswith("Error"))}
    if unreadable is None:  # toolmend reads it: repaired or sent, never worse than without
        assert got.error in (None, expected.error), (got, expected)
        return
    assert got == expected
    if isinstance(history, list) and expected.sent:  # toolmend saw it: one line says where
        assert len(logged) == 1
        assert unreadable in logged[0].getMessage() or hook.name.endswith("write")
    elif history is None:
        assert logged == []


# --- the real LiteLLM Proxy ------------------------------------------------------------------

_PROXY_HANDLER = '''"""Test-only: toolmend's proxy handler, with a fault inside toolmend when asked to."""

import logging
import os

import toolmend._fastpath
import toolmend.formats._openai_chat
import toolmend._policy
import toolmend.profiles
from toolmend.integrations.litellm import proxy_handler as handler  # noqa: F401


class InjectedFaultError(RuntimeError):
    pass


def _raise(*args, **kwargs):
    raise InjectedFaultError("injected fault inside toolmend")


if os.environ.get("TOOLMEND_TEST_FAULT") == "vouch":
    toolmend._fastpath.vouch = _raise
_log = logging.FileHandler(os.environ["TOOLMEND_TEST_LOG"])
_log.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
logging.getLogger("toolmend").addHandler(_log)
'''

_PROXY_CONFIG = """model_list:
  - model_name: my-deepseek
    litellm_params:
      model: deepseek/deepseek-chat
      api_base: os.environ/TOOLMEND_DEEPSEEK_BASE
      api_key: t
litellm_settings:
  callbacks: faulty_toolmend.handler
  num_retries: 0
general_settings:
  master_key: sk-toolmend
"""


@pytest.fixture(scope="module", autouse=True)
def _proxy_boot(
    server: StrictProviderServer,
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> Iterator[litellm_proxy.Proxy | str]:
    """Start the proxy when the module starts: it boots (some seconds of imports) while the
    in-process tests run, and is ready by the time its own tests come. Yields why it cannot
    run instead, when it cannot; and starts nothing when the session selected none of its tests
    (``-m "not slow"``)."""
    asked = any(
        getattr(item, "module", None) is request.module and "proxy" in item.fixturenames
        for item in request.session.items
    )
    reason = litellm_proxy.unavailable() or (None if asked else "no proxy test selected")
    if reason:
        yield reason
        return
    folder = tmp_path_factory.mktemp("proxy")
    (folder / "faulty_toolmend.py").write_text(_PROXY_HANDLER)
    (folder / "config.yaml").write_text(_PROXY_CONFIG)
    running = litellm_proxy.Proxy(
        folder / "config.yaml",
        folder,
        {
            "TOOLMEND_DEEPSEEK_BASE": server.openai_base_url,
            "TOOLMEND_TEST_FAULT": "vouch",
            "TOOLMEND_TEST_LOG": str(folder / "toolmend.log"),
        },
    )
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def proxy(_proxy_boot: litellm_proxy.Proxy | str) -> tuple[str, Path]:
    """A real ``litellm --config`` process whose toolmend handler has a fault inside toolmend
    (ready): its base URL and the file its ``toolmend`` logger writes to."""
    if isinstance(_proxy_boot, str):
        pytest.skip(_proxy_boot)
    _proxy_boot.wait_ready(60)
    return _proxy_boot.base, _proxy_boot.folder / "toolmend.log"


@pytest.mark.slow
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("state", ["valid", "broken"])
def test_the_proxy_fails_open(
    server: StrictProviderServer, proxy: tuple[str, Path], state: str, stream: bool
) -> None:
    from test_litellm import _as_sent, _post

    base, toolmend_log = proxy
    history = chat_valid() if state == "valid" else chat_broken()
    server.clear()
    before = toolmend_log.read_text() if toolmend_log.exists() else ""
    status, _, body = _post(base, {"model": "my-deepseek", "messages": history, "stream": stream})
    assert [r.history for r in server.requests] == [_as_sent(history)]  # the original went out
    if state == "valid":
        assert status == 200, body
    else:
        assert status == 400, body
        assert server.requests[0].status == 400  # DeepSeek's own 400, passed on
        assert "DeepseekException" in body
    logged = toolmend_log.read_text()[len(before) :]
    assert logged.count("ERROR toolmend: ") == 1, logged
    assert "InjectedFaultError: injected fault inside toolmend" in logged


def test_a_fault_in_the_window_of_a_history_read_returns_the_whole_history(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """``ToolMendHistory(window=...)`` trims reads with ``toolmend.trim``: when that fails the
    read returns what the store holds, as a read without toolmend would."""
    from support.hook_entries import in_memory, langchain_valid

    store = in_memory()
    store.add_messages(langchain_valid())
    wrapped = langchain_hook.ToolMendHistory(store, window=langchain_hook.Window(max_messages=2))
    assert len(wrapped.messages) < len(store.messages)  # the window is on
    patch_everywhere(monkeypatch, "trim", raise_fault)
    with caplog.at_level(logging.DEBUG):
        assert wrapped.messages == store.messages
    failures = [r for r in ours(caplog) if r.levelno >= logging.WARNING]
    assert len(failures) == 1 and failures[0].exc_info is not None


# --- a fault inside toolmend while a hook is built -------------------------------------------

patch_hook = pytest.importorskip("toolmend.integrations.patch")


def _build_history(**names: Any) -> Any:
    from support.hook_entries import in_memory

    return langchain_hook.ToolMendHistory(in_memory(), **names)


def _build_patch(**names: Any) -> Any:
    try:
        patch_hook.patch(**names)
    finally:
        patch_hook.unpatch()


BUILDERS: dict[str, Callable[..., Any]] = {
    "ToolMendHistory": _build_history,
    "litellm.ToolMend": lambda **names: litellm_hook.ToolMend(**names),
    "ToolMendMiddleware": lambda **names: langchain_hook.ToolMendMiddleware(**names),
    "patch": _build_patch,
}
"""Every hook constructor, and ``patch()``, given the names of ``names``."""

BUILD_FAULTS: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "openai_chat.read": fault(toolmend.formats._openai_chat, "read"),  # what issue 24 tried
    "check": fault(toolmend, "check"),
    "get_profile": fault(toolmend.profiles, "get_profile"),  # the static table's lookup
    "as_policy": fault(toolmend._policy, "as_policy"),  # the policy names' lookup
}
BUILD_NAMES = {
    "history": "ToolMendHistory",
    "litellm": "litellm ToolMend",
    "middleware": "ToolMendMiddleware",
    "patch": "patch()",
}
_LOOKUPS = frozenset({"get_profile", "as_policy"})
"""The faults construction reaches: it looks the names up, and runs nothing else of toolmend."""


@pytest.mark.parametrize("fault", sorted(BUILD_FAULTS))
@pytest.mark.parametrize("build", sorted(BUILDERS))
def test_a_fault_inside_toolmend_does_not_fail_construction(
    build: str, fault: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """``ToolMendHistory(store)``, ``ToolMend(provider=...)``, ``ToolMendMiddleware(...)`` and
    ``patch(...)`` are built under any fault inside toolmend (an app must still start); a fault
    in the name lookups they do is one ERROR line with its traceback."""
    BUILD_FAULTS[fault](monkeypatch)
    with caplog.at_level(logging.DEBUG):
        BUILDERS[build](provider="deepseek", policy="repair")
    logged = [r for r in ours(caplog) if r.levelno >= logging.WARNING]
    assert len(logged) == (1 if fault in _LOOKUPS else 0), [r.getMessage() for r in logged]
    for record in logged:
        assert record.levelno == logging.ERROR
        assert record.exc_info is not None and record.exc_info[0] is InjectedFaultError


@pytest.mark.parametrize("build", sorted(BUILDERS))
@pytest.mark.parametrize(
    ("names", "named"),
    [({"provider": "deepseekk"}, "provider 'deepseekk'"), ({"policy": "fix"}, "policy 'fix'")],
    ids=["provider", "policy"],
)
def test_an_unknown_name_is_still_the_callers_error(
    build: str, names: dict[str, str], named: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bad name the caller gave fails construction at once, naming it, even with the core
    broken: the names are checked against static tables, not by running the core."""
    BUILD_FAULTS["openai_chat.read"](monkeypatch)
    with pytest.raises(toolmend.UnknownNameError, match=named):
        BUILDERS[build](**names)


@pytest.mark.parametrize(
    "hook",
    [
        next(h for h in HOOKS if h.family == family)
        for family in ("litellm", "patch", "history", "middleware")
    ],
    ids=str,
)
def test_a_hook_built_under_a_fault_sends_the_original(
    server: StrictProviderServer,
    hook: Hook,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """With the profile lookup broken, each hook is still built (given a provider name), and
    with the fast path broken too, its call goes out as the same call without toolmend: one
    ERROR line for the build, one for the call. (Not the OpenAI-chat reader here: the strict
    server in this process judges with it.)"""
    expected = baseline(server, hook, "broken")
    BUILD_FAULTS["get_profile"](monkeypatch)
    FAULTS["vouch"](monkeypatch)
    history = hook.broken()
    with caplog.at_level(logging.DEBUG), unchanged(history):
        got = outcome(hook, server, history, {"provider": "deepseek"})
    assert got == expected
    logged = [r for r in ours(caplog) if r.levelno >= logging.WARNING]
    assert [r.getMessage().split(";")[0] for r in logged][:1] == [
        f"toolmend failed while building {BUILD_NAMES[hook.family]}"
    ]
    assert len(logged) == 2, [r.getMessage() for r in logged]
    assert all(r.exc_info is not None and r.exc_info[0] is InjectedFaultError for r in logged)
