"""The block formats' one-pass scans (``quick_valid``, ``dirty_spans``) against the full
read-and-judge path, and the cost of a valid history: no copy.

``quick_valid`` may answer False for anything (the full path then decides), but True only when
the full rules find nothing, under every profile; and it must really vouch for ordinary valid
histories, or the fast path is never taken. ``dirty_spans`` must report the problems of the
whole history, and repairing its ranges must give what repairing the whole history gives.
"""

from __future__ import annotations

import os
import random
import sys
import tracemalloc
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolmend
from toolmend._rules import judge
from toolmend._trim import _pairing_profile
from toolmend.formats import get as module_for
from toolmend.profiles import PROFILES, Profile, get_profile

from support.block_histories import PAIRS as BLOCK_PAIRS
from support.block_histories import (
    convert,
    damaged_block_histories,
    pair_ids,
    valid_block_histories,
)
from support.whole_path import whole_repair

FEW = settings(
    max_examples=int(os.environ.get("TOOLMEND_FUZZ_EXAMPLES") or 3000)
    if os.environ.get("TOOLMEND_FUZZ")
    else 60,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
"""60 examples per case in CI; the long mode (``TOOLMEND_FUZZ=1``) runs 3000, which is what
found the cross-range cases the scans now handle."""

PAIRS = [
    *BLOCK_PAIRS,
    # trim's profile, the pairing rules alone: the scan rules for it, and its ranges must
    # repair as the whole history does under those rules too
    ("bedrock", "bedrock (pairing)", {}),
    ("anthropic", "anthropic (pairing)", {}),
]
_PAIRING_PROFILES = [_pairing_profile(name) for name in ("anthropic", "gemini", "bedrock")]


def _profile(name: str) -> Profile:
    """A provider's profile, or trim's pairing-only profile for ``"<format> (pairing)"``."""
    if name.endswith(" (pairing)"):
        return _pairing_profile(name.removesuffix(" (pairing)"))
    return get_profile(name)


IDS = pair_ids(PAIRS)


def _histories(format: str, options: dict[str, Any]) -> st.SearchStrategy[list[Any]]:
    damaged = damaged_block_histories(format, **options).map(lambda case: case[0])
    return st.one_of(valid_block_histories(format, **options), damaged)


def _full(module: Any, history: list[Any], profile: Any) -> list[toolmend.Problem] | None:
    """The full path's problems, or None when it refuses the history (unreadable, or a profile
    without rules for this format)."""
    try:
        return judge(module.read(history), profile)
    except toolmend.InvalidHistoryError:
        return None


@pytest.mark.parametrize(("format", "provider", "options"), PAIRS, ids=IDS)
def test_quick_valid_never_vouches_for_what_the_rules_refuse(
    format: str, provider: str, options: dict[str, Any]
) -> None:
    module = module_for(format)

    @FEW
    @given(history=_histories(format, options))
    def run(history: list[Any]) -> None:
        # every profile, also those the format cannot go to, and trim's pairing-only ones
        for profile in [*PROFILES.values(), *_PAIRING_PROFILES]:
            if module.quick_valid(history, profile):
                assert _full(module, history, profile) == [], profile.name

    run()


@pytest.mark.parametrize(("format", "provider", "options"), PAIRS, ids=IDS)
def test_quick_valid_vouches_for_valid_histories(
    format: str, provider: str, options: dict[str, Any]
) -> None:
    module = module_for(format)
    profile = _profile(provider)

    @FEW
    @given(history=valid_block_histories(format, **options))
    def run(history: list[Any]) -> None:
        assert _full(module, history, profile) == []
        assert module.quick_valid(history, profile), "the fast path must be taken"
        # trim mends with the format's pairing rules alone: a valid history is vouched for
        assert module.quick_valid(history, _pairing_profile(format)), "trim's fast path"

    run()


@pytest.mark.parametrize(
    ("format", "provider"),
    [("anthropic", "anthropic-thinking"), ("gemini", "gemini-3"), ("gemini", "gemini-no-ids")],
)
def test_quick_valid_refuses_what_only_these_profiles_refuse(format: str, provider: str) -> None:
    history = typical_history(format, 3)[:-1]  # ends on the results of the last calls
    module = module_for(format)
    assert module.quick_valid(history, get_profile(format))
    assert not module.quick_valid(history, get_profile(provider))  # no thinking / signature / id
    assert _full(module, history, get_profile(provider)) != []


def test_a_reused_call_id_is_left_to_the_profile_that_refuses_it() -> None:
    """A call turn copied whole (a damage the benchmarks make) leaves one id on two calls:
    only ``duplicate_call_id`` refuses that, and trim's pairing profile does not run it, so the
    quick pass vouches for what trim mended instead of sending it down the full path."""
    use = {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "21 C"}
    history = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": [use]},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result]},
        {"role": "assistant", "content": "21 C."},
    ]
    module = module_for("anthropic")
    pairing = _pairing_profile("anthropic")
    assert module.quick_valid(history, pairing)
    assert _full(module, history, pairing) == []
    assert not module.quick_valid(history, get_profile("anthropic"))
    assert [p.code for p in _full(module, history, get_profile("anthropic")) or []] == [
        "duplicate_call_id"
    ]


@pytest.mark.parametrize(("format", "provider", "options"), PAIRS, ids=IDS)
def test_the_ranges_find_the_problems_of_the_whole_history(
    format: str, provider: str, options: dict[str, Any]
) -> None:
    module = module_for(format)
    profile = _profile(provider)

    @FEW
    @given(history=_histories(format, options))
    def run(history: list[Any]) -> None:
        whole = _full(module, history, profile)
        if whole is None:
            return
        found = toolmend.check(history, provider=profile, format=format)
        assert [_seen(problem) for problem in found] == [_seen(problem) for problem in whole]

    run()


def test_a_repeated_response_id_is_repaired_as_in_the_whole_history() -> None:
    """Hypothesis found this in CI: the last call turn reuses ``call_0`` and its responses
    carry ``call_0`` twice, the first a copy of an earlier result with that id. The whole
    history's planner weighs that copy against the earlier call (and, planning the whole
    history for the damage at its start, rewrites the ids); the one-pass scan took the
    responses for a plain answer (every id named a call) and left that range out."""

    def call(call_id: str) -> dict[str, Any]:
        return {"functionCall": {"name": "weather", "args": {"city": "Paris"}, "id": call_id}}

    def response(text: str, call_id: str) -> dict[str, Any]:
        payload = {"result": text}
        return {"functionResponse": {"name": "weather", "response": payload, "id": call_id}}

    history = [
        {"role": "user", "parts": [{"text": "Hello"}]},
        {"role": "model", "parts": [{"text": ""}, {"text": "Hi."}]},  # damage elsewhere
        {"role": "user", "parts": [{"text": "Weather?"}]},
        {"role": "model", "parts": [call("call_0")]},
        {"role": "user", "parts": [response("result 1", "call_0")]},
        {"role": "model", "parts": [{"text": "Sunny."}]},
        {"role": "user", "parts": [{"text": "And now?"}]},
        {"role": "model", "parts": [call("call_0"), call("call_1"), call("call_2")]},
        {
            "role": "user",
            "parts": [
                response("result 1", "call_0"),
                response("result 2", "call_0"),
                response("result 3", "call_1"),
            ],
        },
    ]
    module, profile = module_for("gemini"), get_profile("gemini")
    messages, changes = whole_repair(module, history, profile, toolmend.Policy())
    assert {change.index for change in changes} > {1}, "the last turn changes too"
    result = toolmend.repair(history, provider=profile, format="gemini")
    assert result.messages == messages
    assert list(result.changes) == changes


def _seen(problem: toolmend.Problem) -> tuple[Any, ...]:
    """What a caller sees of a problem (its description may word a slice's view differently)."""
    return (problem.code, problem.index, problem.provider_error, problem.ids)


@pytest.mark.parametrize(("format", "provider", "options"), PAIRS, ids=IDS)
def test_repairing_the_ranges_repairs_as_the_whole_history(
    format: str, provider: str, options: dict[str, Any]
) -> None:
    module = module_for(format)

    @FEW
    @given(history=_histories(format, options))
    def run(history: list[Any]) -> None:
        if _full(module, history, _profile(provider)) is None:
            return
        messages, changes = whole_repair(module, history, _profile(provider), toolmend.Policy())
        result = toolmend.repair(history, provider=_profile(provider), format=format)
        assert result.messages == messages
        assert list(result.changes) == changes

    run()


# --- a valid history costs no copy ------------------------------------------------------------


def typical_history(format: str, turns: int, seed: int = 5) -> list[dict[str, Any]]:
    """An agent run of ``turns`` user turns in ``format``: each asks, the assistant calls one to
    three tools in parallel, the results come back (a few hundred to a few thousand characters)
    and the assistant answers."""
    rnd = random.Random(seed)
    history: list[dict[str, Any]] = []
    counter = 0
    for _ in range(turns):
        history.append({"role": "user", "content": _words("ask", rnd, 10, 80)})
        calls = []
        for _ in range(rnd.randint(1, 3)):
            counter += 1
            arguments = f'{{"query": "q{counter}", "limit": {rnd.randint(1, 50)}}}'
            calls.append(
                {
                    "id": f"toolu_{counter:020d}",
                    "type": "function",
                    "function": {
                        "name": rnd.choice(["search", "read_file"]),
                        "arguments": arguments,
                    },
                }
            )
        history.append({"role": "assistant", "content": None, "tool_calls": calls})
        for call in calls:
            content = _words("data", rnd, 40, 600)
            history.append({"role": "tool", "tool_call_id": call["id"], "content": content})
        history.append({"role": "assistant", "content": _words("done", rnd, 20, 200)})
    options = {"ids": True} if format == "gemini" else {}
    return convert(history, format, **options)


def _words(word: str, rnd: random.Random, low: int, high: int) -> str:
    return " ".join([word] * rnd.randint(low, high))


def _containers_size(value: Any) -> int:
    """The bytes of every list and dict in ``value`` (what a copy would have to allocate; the
    strings would be shared)."""
    if isinstance(value, dict):
        return sys.getsizeof(value) + sum(_containers_size(v) for v in value.values())
    if isinstance(value, list):
        return sys.getsizeof(value) + sum(_containers_size(v) for v in value)
    return 0


@pytest.mark.parametrize("format", ["anthropic", "gemini", "bedrock"])
def test_a_valid_history_is_checked_without_a_copy(format: str) -> None:
    history = typical_history(format, 400)
    module = module_for(format)
    assert module.quick_valid(history, get_profile(format)), "the fast path must be taken"
    toolmend.sanitize(history, provider=format)  # imports and caches warmed up
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        result = toolmend.sanitize(history, provider=format)
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    assert result is history
    size = _containers_size(history)
    # a shallow copy of the messages alone would take a large share of ``size``; the scan keeps
    # only small per-turn sets and the ids it has met
    assert peak < size / 10, (peak, size)


@pytest.mark.parametrize("format", ["anthropic", "gemini", "bedrock"])
def test_trim_mends_only_the_damaged_ranges(format: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``trim`` mends a damaged history with the pairing rules alone; the scan gives it the few
    short ranges to read and repair (not the whole history), and the cut is the one the whole
    history's repair gives."""
    history = typical_history(format, 200)
    module = module_for(format)
    stray = [*history[:3], history[2], *history[3:]]  # a copy of a call turn's answer: damage
    profile = _pairing_profile(format)
    spans = module.dirty_spans(stray, profile)
    assert spans is not None and 0 < sum(high - low for low, high in spans) <= 20, spans
    assert toolmend.check(stray, provider=profile, format=format)
    fast = toolmend.trim(stray, max_messages=300, keep_first=1)
    cut = toolmend.trim(stray, max_messages=100, keep_first=1)
    monkeypatch.setattr(module, "dirty_spans", lambda messages, profile: None)
    assert toolmend.trim(stray, max_messages=300, keep_first=1) == fast
    assert toolmend.trim(stray, max_messages=100, keep_first=1) == cut


# --- google-genai Contents (ADK, the SDK's chats): scanned through plain views -----------------


def _as_genai(history: list[Any]) -> list[Any] | None:
    """The history as google-genai Contents, or None when the SDK refuses one of them."""
    from google.genai import types

    try:
        return [types.Content.model_validate(content) for content in history]
    except ValueError:
        return None


@FEW
@given(history=_histories("gemini", {"ids": True}))
def test_quick_valid_on_genai_contents_never_vouches_for_what_the_rules_refuse(
    history: list[Any],
) -> None:
    pytest.importorskip("google.genai")
    contents = _as_genai(history)
    if contents is None:
        return
    module = module_for("gemini")
    for profile in [*PROFILES.values(), *_PAIRING_PROFILES]:
        if module.quick_valid(contents, profile):
            assert _full(module, contents, profile) == [], profile.name


@FEW
@given(history=valid_block_histories("gemini", ids=True))
def test_quick_valid_vouches_for_valid_genai_contents(history: list[Any]) -> None:
    pytest.importorskip("google.genai")
    contents = _as_genai(history)
    assert contents is not None
    module = module_for("gemini")
    assert _full(module, contents, get_profile("gemini")) == []
    assert module.quick_valid(contents, get_profile("gemini")), "the fast path must be taken"


def test_quick_valid_leaves_odd_genai_parts_to_the_full_path() -> None:
    """A Part with text and a call (the dict and object readers take them in other orders), or
    with a field the scan does not read: the full path decides."""
    types = pytest.importorskip("google.genai.types")
    module = module_for("gemini")
    call = types.FunctionCall(name="f", args={})
    odd = [
        types.Part(text="x", function_call=call),
        types.Part(text="x", thought=True),
        types.Part(inline_data=types.Blob(data=b"x", mime_type="image/png")),
    ]
    for part in odd:
        contents = [
            types.Content(role="user", parts=[types.Part(text="q")]),
            types.Content(role="model", parts=[part]),
        ]
        assert not module.quick_valid(contents, get_profile("gemini"))
