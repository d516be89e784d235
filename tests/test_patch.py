"""toolmend.integrations.patch itself: the table, idempotence, unpatching only our wrappers, the
per-call switch, failing open, version checks, the environment, the floors in pyproject, and
the examples (run here, in-process, against their own strict servers).

Per-SDK call paths are in test_patch_openai.py, test_patch_genai.py and test_patch_anthropic.py;
import orders, ``toolmend-run`` and the examples run in fresh interpreters in
test_patch_subprocess.py.
"""

from __future__ import annotations

import inspect
import logging
import re
import runpy
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolmend
import toolmend.integrations.patch as tm

from support.faults import patch_everywhere
from support.patch_cases import CHAT, MendCounter, unchanged

openai = pytest.importorskip("openai")
wrapt = pytest.importorskip("wrapt")

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "integrations" / "patch.py"
ROW = next(row for row in tm.TARGETS if row.label == "openai.Completions.create")


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    tm.unpatch()
    yield
    tm.unpatch()


@pytest.fixture
def client(strict_provider: Any) -> Iterator[Any]:
    with openai.OpenAI(
        api_key="test", base_url=strict_provider.openai_base_url, max_retries=0
    ) as c:
        yield c


def _send(client: Any, history: Any = CHAT) -> bool:
    """Send ``history``; whether the strict server accepted it."""
    try:
        client.chat.completions.create(model="gpt-4o", messages=history)
    except openai.BadRequestError:
        return False
    return True


def _attribute(row: tm.Target) -> Any:
    owner, name = row.name.split(".")
    return inspect.getattr_static(vars(sys.modules[row.module])[owner], name)


def _ours(row: tm.Target) -> int:
    """How many toolmend wrappers sit on ``row``'s method."""
    return sum(
        getattr(getattr(entry, "_self_wrapper", None), "__module__", None) == tm.__name__
        for entry in wrapt.wrapper_chain(_attribute(row))
    )


# --- the table ----------------------------------------------------------------------------------


def test_every_target_is_one_row_and_wrapped_in_one_place() -> None:
    source = SOURCE.read_text()
    assert source.count("wrap_object(") - source.count("unwrap_object(") == 1
    assert source.count("unwrap_object(") == 1
    # the async paths: an async row's long history is repaired off the event loop (_later),
    # and the rescue's senders wait where each async method's refusal surfaces
    assert sorted(re.findall(r"async def (\w+)\(", source)) == [
        "__aenter__",
        "__aexit__",
        "_later",
        "_rescued_async_items",
        "_send_async_stream",
        "_send_awaited",
    ]
    # beyond the docstring, __wrapped__ only in the stream manager's proxy (never to unwrap)
    proxy = source[source.index("class RescuingManager(") : source.index("return RescuingManager")]
    assert "__wrapped__" not in source.split('"""', 2)[2].replace(proxy, "")
    assert len({(row.module, row.name) for row in tm.TARGETS}) == len(tm.TARGETS)
    for row in tm.TARGETS:
        assert row.sdk in tm.SDKS
        assert re.fullmatch(r"\w+\.\w+", row.name), row
        toolmend.check([], provider=row.format, format=row.format)  # a known format and profile


CHECKED = {"openai": "3.57.0", "anthropic": "2.14.0", "google-genai": "3.6.1"}
"""The releases the table was last checked against, method by method."""


def test_every_row_resolves_in_the_installed_sdks() -> None:
    import anthropic  # noqa: F401
    import google.genai.chats
    import google.genai.models  # noqa: F401

    openai.OpenAI(api_key="x").chat.completions  # noqa: B018 - loads the lazy modules
    openai.OpenAI(api_key="x").responses  # noqa: B018
    openai.OpenAI(api_key="x").beta  # noqa: B018
    for row in tm.TARGETS:
        dist = tm.SDKS[row.sdk].distribution
        if tm._version(tm._installed(dist) or "0") < tm._version(CHECKED[dist]):
            continue  # older releases lack some methods: skipped with a log line, see below
        assert tm._unsupported(row, sys.modules[row.module]) is None, row


def test_floors_match_the_pyproject_extras() -> None:
    tomllib = pytest.importorskip("tomllib")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]

    def floor(requirements: list[str], name: str) -> tuple[int, ...]:
        found = [r for r in requirements if re.match(rf"{re.escape(name)}\s*>=", r)]
        assert len(found) == 1, (name, requirements)
        return tm._version(found[0].split(">=")[1].strip())

    for sdk in tm.SDKS.values():
        assert floor(extras[sdk.extra], sdk.distribution) == tm._version(
            tm.floors()[sdk.distribution]
        ), sdk
        assert floor(extras[sdk.extra], "wrapt") == tm._version(tm.WRAPT_FLOOR)
        assert floor(extras["test"], sdk.distribution) >= tm._version(tm.floors()[sdk.distribution])


# --- patch, unpatch, the switch -----------------------------------------------------------------


def test_patch_is_idempotent(client: Any) -> None:
    tm.patch()
    first = tm.patched()
    tm.patch()
    tm.patch()
    assert tm.patched() == first
    assert "openai.Completions.create" in first
    for row in tm.TARGETS:
        if row.module in sys.modules and row.label in first:
            assert _ours(row) == 1, row
    assert _send(client)


def test_patch_switches_sdks_to_match_the_call(client: Any) -> None:
    tm.patch()
    tm.patch(openai=False)
    assert not any(label.startswith("openai.") for label in tm.patched())
    assert any(label.startswith("anthropic.") for label in tm.patched())
    assert not _send(client)
    tm.patch()
    assert _send(client)


def test_unpatch_removes_only_our_wrapper(client: Any) -> None:
    tm.patch()
    seen: list[str] = []

    def other(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        seen.append("other")
        return wrapped(*args, **kwargs)

    module = sys.modules[ROW.module]
    handle = wrapt.wrap_function_wrapper(module, ROW.name, other)
    try:
        tm.unpatch()
        assert _ours(ROW) == 0
        assert not _send(client)  # ours is gone ...
        assert seen == ["other"]  # ... the other instrumentor's is not
        tm.patch()  # and re-patching goes on top again
        assert _ours(ROW) == 1
        assert _send(client)
        assert seen == ["other", "other"]
    finally:
        tm.unpatch()
        wrapt.unwrap_object(module, ROW.name, handle)


def test_methods_bound_while_patched_call_straight_through_after_unpatch(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    tm.patch()
    bound = client.chat.completions.create
    raw = client.chat.completions.with_raw_response  # caches bound methods
    counter = MendCounter()
    monkeypatch.setattr(tm, "mend", counter)
    tm.unpatch()
    with pytest.raises(openai.BadRequestError):
        bound(model="gpt-4o", messages=CHAT)
    with pytest.raises(openai.BadRequestError):
        raw.create(model="gpt-4o", messages=CHAT)
    assert counter.calls == []
    tm.patch()  # the stale wrappers work again, once each
    bound(model="gpt-4o", messages=CHAT)
    raw.create(model="gpt-4o", messages=CHAT)
    assert counter.calls == ["openai.Completions.create"] * 2


def test_unpatch_before_patch_is_harmless() -> None:
    tm.unpatch()
    tm.unpatch()
    assert tm.patched() == ()


# --- never break the call -----------------------------------------------------------------------


def test_a_toolmend_error_sends_the_original(
    client: Any, strict_provider: Any, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("toolmend bug")

    tm.patch()
    patch_everywhere(monkeypatch, "repair", broken)
    with caplog.at_level(logging.ERROR, logger="toolmend"), unchanged(CHAT):
        assert not _send(client)  # the original, broken history went out
    assert strict_provider.last_request.history == CHAT
    failures = [r for r in caplog.records if r.exc_info]
    assert len(failures) == 1
    assert "openai.Completions.create" in failures[0].getMessage()


def test_an_error_in_the_wrapper_itself_sends_the_original(
    client: Any, strict_provider: Any, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    def broken(row: Any, instance: Any) -> str:
        raise RuntimeError("bug")

    tm.patch()
    monkeypatch.setattr(tm, "_provider", broken)
    with caplog.at_level(logging.ERROR, logger="toolmend"):
        assert not _send(client)
    assert strict_provider.last_request.history == CHAT
    assert [r.getMessage() for r in caplog.records if r.exc_info] == [
        "toolmend failed on openai.Completions.create; the original request was sent"
    ]


def test_strict_policy_raises_before_sending(client: Any, strict_provider: Any) -> None:
    tm.patch(policy="strict")
    with pytest.raises(toolmend.ToolChainError):
        _send(client)
    assert strict_provider.requests == []


def test_loop_guard_can_raise(client: Any, strict_provider: Any) -> None:
    call = {"type": "function", "function": {"name": "search", "arguments": '{"q": "x"}'}}
    history: list[Any] = [{"role": "user", "content": "Find x"}]
    for n in range(6):
        history += [
            {"role": "assistant", "content": None, "tool_calls": [{**call, "id": f"call_{n}"}]},
            {"role": "tool", "tool_call_id": f"call_{n}", "content": "nothing"},
        ]
    tm.patch(on_loop="raise")
    with pytest.raises(toolmend.ToolLoopError):
        _send(client, history)
    assert strict_provider.requests == []


def test_bad_arguments_fail_fast() -> None:
    with pytest.raises(toolmend.UnknownNameError, match="Did you mean 'deepseek'"):
        tm.patch(provider="deepsek")
    with pytest.raises(toolmend.UnknownNameError):
        tm.patch(policy="lenient")
    with pytest.raises(toolmend.UnknownNameError):
        tm.patch(on_loop="sometimes")  # type: ignore[arg-type]
    assert tm.patched() == ()


def test_missing_wrapt_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "wrapt", None)
    with pytest.raises(ImportError, match=re.escape("pip install 'toolmend[openai]'")):
        tm.patch()


# --- the log lines ------------------------------------------------------------------------------


def test_one_line_per_repair_with_ids_and_codes_only(client: Any, caplog: Any) -> None:
    tm.patch()
    with caplog.at_level(logging.DEBUG, logger="toolmend"):
        assert _send(client)
    lines = [r.getMessage() for r in caplog.records if r.name == "toolmend"]
    assert lines == [
        "toolmend repaired openai.Completions.create for openai: "
        "moved_message@2 moved_result@3[call_1]"
    ]
    assert "Paris" not in lines[0] and "21 C" not in lines[0]


def test_an_old_sdk_is_skipped_with_one_line(
    client: Any, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    monkeypatch.setattr(tm, "_installed", lambda distribution: "1.50.0")
    monkeypatch.setattr(tm._registry, "logged", set())
    with caplog.at_level(logging.WARNING, logger="toolmend"):
        tm.patch(google_genai=False, anthropic=False)
        tm.unpatch()
        tm.patch(google_genai=False, anthropic=False)
    assert tm.patched() == ()
    lines = [r.getMessage() for r in caplog.records if "not patching" in r.getMessage()]
    assert lines == ["toolmend: not patching openai 1.50.0 (toolmend supports openai>=1.92.0)"]
    assert not _send(client)


def test_a_missing_class_is_skipped_with_one_line(
    monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    ghost = tm.Target("openai", "json", "Ghost.create", "messages", "openai", "1.92.0")
    monkeypatch.setattr(tm, "TARGETS", (*tm.TARGETS, ghost))
    monkeypatch.setattr(tm._registry, "logged", set())
    with caplog.at_level(logging.WARNING, logger="toolmend"):
        tm.patch()
    lines = [r.getMessage() for r in caplog.records if "Ghost" in r.getMessage()]
    assert len(lines) == 1
    assert "openai.Ghost.create (missing in openai" in lines[0]
    assert "openai.Completions.create" in tm.patched()


# --- the environment (toolmend-run) -------------------------------------------------------------


def test_patch_from_env() -> None:
    assert tm.patch_from_env({}) is False
    assert tm.patched() == ()
    assert tm.patch_from_env({"TOOLMEND_PATCH": "1"}) is True
    assert {label.split(".")[0] for label in tm.patched()} == {
        "openai",
        "google_genai",
        "anthropic",
    }
    tm.unpatch()
    env = {"TOOLMEND_PATCH": "1", "TOOLMEND_PATCH_DISABLED": "openai, gemini"}
    assert tm.patch_from_env(env) is True
    assert {label.split(".")[0] for label in tm.patched()} == {"anthropic"}


def test_patch_from_env_options(client: Any, caplog: Any) -> None:
    env = {
        "TOOLMEND_PATCH": "yes",
        "TOOLMEND_PATCH_DISABLED": "anthropic,nonsense",
        "TOOLMEND_PROVIDER": "deepseek",
        "TOOLMEND_REPAIR_CHAT_HISTORY": "1",
    }
    with caplog.at_level(logging.INFO, logger="toolmend"):
        assert tm.patch_from_env(env) is True
        _send(client)
    messages = [r.getMessage() for r in caplog.records]
    assert any("nonsense" in m and "TOOLMEND_PATCH_DISABLED" in m for m in messages)
    assert any("openai.Completions.create for deepseek" in m for m in messages)
    assert "google_genai.Chat.send_message" in tm.patched()


def test_patch_from_env_never_raises(caplog: Any) -> None:
    with caplog.at_level(logging.ERROR, logger="toolmend"):
        assert tm.patch_from_env({"TOOLMEND_PATCH": "1", "TOOLMEND_PROVIDER": "nope"}) is False
    assert any(r.exc_info for r in caplog.records)


def test_doctests() -> None:
    import doctest

    assert doctest.testmod(tm).failed == 0
    assert tm.patched() == ()


# --- the examples -------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", ["openai_patch", "genai_patch"])
@pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")
def test_example(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    if name == "genai_patch":
        from google.genai import types

        if "thought_signature" not in types.Part.model_fields:
            pytest.skip("the example's Gemini 3 model needs Part.thought_signature")
    with pytest.raises(SystemExit) as exited:
        runpy.run_path(str(ROOT / "examples" / f"{name}.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert exited.value.code == 0, out
    assert "rejected" in out and "accepted" in out
    assert tm.patched() == ()
