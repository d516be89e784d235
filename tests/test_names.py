"""One name per thing (issue 33): ``ToolMendError`` beside its old spelling, one spelling of the
google-genai SDK, ``problems_before``/``problems_left`` everywhere a result names them, the id in
the Anthropic-bound orphan text, and an ``__all__`` on every integration module. The old names
keep working, and each is tested here."""

from __future__ import annotations

import os

# before LiteLLM is imported: its cost map stays local
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import importlib
import inspect
import json
import pkgutil
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolmend
import toolmend.integrations
from toolmend.testing import StrictProviderServer

ROOT = Path(__file__).resolve().parent.parent

ORPHAN = [
    {"role": "user", "content": "Weather?"},
    {"role": "tool", "tool_call_id": "call_1", "content": "21 C"},
]
INTERLEAVED = [
    {"role": "user", "content": "Weather?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "w", "arguments": "{}"}}
        ],
    },
    {"role": "user", "content": "Are you there?"},
    {"role": "tool", "tool_call_id": "call_1", "content": "21 C"},
]


# --- ToolMendError ----------------------------------------------------------------------------------


def test_tool_mend_error_is_the_root_and_the_old_name_is_the_same_class() -> None:
    assert toolmend.ToolMendError is toolmend.ToolmendError
    assert toolmend.ToolMendError.__name__ == "ToolMendError"
    assert "ToolMendError" in toolmend.__all__ and "ToolmendError" in toolmend.__all__
    for error in (
        toolmend.ToolChainError,
        toolmend.ToolLoopError,
        toolmend.TrimError,
        toolmend.UnknownNameError,
        toolmend.InvalidHistoryError,
    ):
        assert issubclass(error, toolmend.ToolMendError)
    with pytest.raises(toolmend.ToolmendError):  # code written against the old name
        toolmend.get_profile("no-such-provider")


# --- the google-genai SDK: one spelling ---------------------------------------------------------


def test_one_extra_for_google_genai_and_the_old_one_still_installs_it() -> None:
    tomllib = pytest.importorskip("tomllib")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert "google-genai>=1.0" in extras["google-genai"]
    assert extras["genai"] == ["toolmend[google-genai]"]
    assert "google-genai" in extras["all"][0] and ",genai," not in extras["all"][0]
    from toolmend.integrations import patch as tm

    assert tm.SDKS["google_genai"].extra == "google-genai"
    assert tm.SDKS["google_genai"].distribution == "google-genai"


def test_the_docs_name_the_google_genai_extra_one_way() -> None:
    """The pages a user installs from name the ``google-genai`` extra; the older ``genai`` only
    where they say it is the older name (docs/quickstart.md listed it as the extra)."""
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
    old = re.compile(r"(?<![\w-])(?:`genai`|\[genai\]|`\[genai\]`)")
    found = [
        f"{page.name}:{number}"
        for page in pages
        if page.name != "reference.md"  # the generated docstrings, checked against the code
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if old.search(line) and "older" not in line
    ]
    assert found == []


@pytest.fixture
def sdks_imported() -> Iterator[Any]:
    """The three SDKs' patched modules imported, and nothing left patched afterwards."""
    from toolmend.integrations import patch as tm

    for row in tm.TARGETS:
        importlib.import_module(row.module)
    yield tm
    tm.unpatch()


@pytest.mark.parametrize("spelling", ["google_genai", "google-genai", "genai", "gemini"])
def test_every_spelling_switches_the_google_genai_patch_off(
    sdks_imported: Any, spelling: str
) -> None:
    tm = sdks_imported
    env = {"TOOLMEND_PATCH": "1", "TOOLMEND_PATCH_DISABLED": spelling.upper()}
    assert tm.patch_from_env(env) is True
    patched = {label.split(".")[0] for label in tm.patched()}
    assert patched == {"openai", "anthropic"}


# --- problems_before and problems_left ----------------------------------------------------------


def test_repair_names_the_problems_before_and_left() -> None:
    result = toolmend.repair(INTERLEAVED, provider="openai")
    assert result.problems_before == result.problems
    assert [p.code for p in result.problems_before] == ["missing_result", "orphan_result"]
    assert result.problems_left == ()


def test_a_thread_repair_names_them_the_same_way() -> None:
    pytest.importorskip("langgraph")
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph

    from toolmend.integrations.langgraph import ThreadRepair, repair_thread

    builder = StateGraph(MessagesState)
    builder.add_node("agent", lambda state: {})
    builder.add_edge(START, "agent")
    graph = builder.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "names"}}
    call = {"id": "call_1", "name": "w", "args": {}}
    graph.update_state(
        config,
        {
            "messages": [
                HumanMessage("Weather?", id="m0"),
                AIMessage("", tool_calls=[call], id="m1"),
                HumanMessage("Are you there?", id="m2"),
                ToolMessage("21 C", tool_call_id="call_1", id="m3"),
            ]
        },
        as_node="agent",
    )
    done = repair_thread(graph, config, provider="openai")
    assert done.written
    assert [p.code for p in done.problems_before] == ["missing_result", "orphan_result"]
    assert done.problems_left == ()
    with pytest.warns(DeprecationWarning, match="problems_before"):
        assert done.problems == done.problems_before  # the old name, deprecated
    # nothing left to do: the thread is clean, and says so the same way
    again = repair_thread(graph, config, provider="openai")
    assert again == ThreadRepair()
    assert again.problems_before == again.problems_left == ()


def test_the_litellm_record_names_them_the_same_way() -> None:
    litellm = pytest.importorskip("litellm")
    from toolmend.integrations import litellm as hook

    saved = list(litellm.callbacks)
    try:
        with StrictProviderServer() as server:
            litellm.callbacks = [hook.ToolMend()]
            response = litellm.completion(
                model="openai/gpt-4o",
                api_base=server.openai_base_url,
                api_key="t",
                messages=INTERLEAVED,
                max_retries=0,
            )
            assert server.last_request.accepted
    finally:
        litellm.callbacks = saved
    record = response._hidden_params[hook.RECORD_KEY]
    before = [p["code"] for p in record["problems_before"]]
    assert before == ["missing_result", "orphan_result"]
    assert record["problems_left"] == []
    assert record["problems"] == record["problems_before"]  # the old key, same list


# --- the Anthropic text names the id ---------------------------------------------------------------


@pytest.mark.parametrize("provider", ["anthropic", "anthropic-thinking"])
def test_the_anthropic_orphan_text_names_the_id(provider: str) -> None:
    [problem] = toolmend.check(ORPHAN, provider=provider)
    assert problem.code == "orphan_result" and problem.ids == ("call_1",)
    assert "found in `tool_result` blocks: call_1. Each" in problem.provider_error


def test_no_provider_text_has_an_empty_id_where_the_id_is_known() -> None:
    """Every profile, the histories of the examples: a text never reads ``': . '`` or ``''``
    where it quotes an id the problem carries."""
    histories = [ORPHAN, INTERLEAVED]
    histories += [
        json.loads(path.read_text())
        for path in sorted((ROOT / "examples" / "histories").glob("*.json"))
    ]
    from toolmend.formats import detect
    from toolmend.profiles import PROFILES

    for history in histories:
        messages = history if isinstance(history, list) else history.get("messages")
        if not isinstance(messages, list):
            continue
        own = detect(messages).name
        for name in PROFILES:
            try:
                problems = toolmend.check(messages, provider=name, format=own)
            except toolmend.ToolMendError:
                continue
            for problem in problems:
                if problem.ids:
                    assert not re.search(r": \. |''|\"\"", problem.provider_error), problem


# --- every integration module lists its public names ------------------------------------------------


def _integration_modules() -> list[str]:
    return sorted(
        "toolmend.integrations." + info.name
        for info in pkgutil.iter_modules(toolmend.integrations.__path__)
    )


@pytest.mark.parametrize("name", _integration_modules())
def test_every_integration_module_has_an_all(name: str) -> None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = importlib.import_module(name)
    except ImportError as missing:  # an SDK this environment lacks
        pytest.skip(str(missing))
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{name} has no __all__"
    defined = {
        key
        for key, value in vars(module).items()
        if not key.startswith("_")
        and (inspect.isfunction(value) or inspect.isclass(value))
        and value.__module__ == name
    }
    assert defined <= set(exported), defined - set(exported)
    assert all(hasattr(module, key) for key in exported)
