"""The hooks' fast path (``toolmend._fastpath.vouch``, ``toolmend._loops.quiet_live_run``): a
promise that the full path would change nothing and find nothing, never a verdict of its own.

Where ``vouch`` answers, ``repair`` must return the very input with no problem; where
``quiet_live_run`` says yes to the run it handed over, the live-run loop guard must find nothing.
Where they do not, the hooks take the full path, which the rest of the suite tests. They must
also answer for the plain valid histories hooks see all day, or they would be a path no request
takes.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import toolmend
from toolmend import formats
from toolmend._api import damage_in, mend_damage
from toolmend._fastpath import vouch
from toolmend._loops import quiet_live_run
from toolmend._plan_ids import fresh_id
from toolmend._policy import Policy
from toolmend._quickmend import fresh_ids
from toolmend._rules import judge
from toolmend.formats import _openai_chat as openai_chat
from toolmend.integrations.hooks import HookOptions, mend
from toolmend.profiles import PROFILES, get_profile

from support import judges
from support.agent_runs import agent_runs
from support.cases import assistant, calls, result, user
from support.faults import patch_everywhere
from support.histories import damaged_conversations, valid_conversations
from support.whole_path import whole_repair

# and the OpenAI-shaped histories bound for every other family through LiteLLM or a gateway
CHAT_PROVIDERS = [name for name, profile in PROFILES.items() if profile.pairing != "ordered"]


def _repair_agrees(history: list[Any], provider: str) -> bool:
    """What ``vouch`` promises: the repair changes nothing and finds nothing."""
    repaired = toolmend.repair(history, provider=provider)
    return repaired.messages is history and not repaired.problems and not repaired.changes


@settings(max_examples=150, deadline=None)
@given(
    history=st.one_of(
        valid_conversations(id_style="any"),
        valid_conversations(id_style="any", reasoning=True),
        damaged_conversations(id_style="any").map(lambda case: case[1]),
        agent_runs(),
        agent_runs(odd=False),
    ),
    provider=st.sampled_from(CHAT_PROVIDERS),
)
def test_vouch_only_where_the_full_path_changes_and_finds_nothing(
    history: list[Any], provider: str
) -> None:
    live = vouch(history, provider=provider, format="openai")
    if live is not None:
        assert _repair_agrees(history, provider)
        if quiet_live_run(*live):
            assert toolmend.detect_loops(history, live_only=True) == []


@settings(max_examples=100, deadline=None)
@given(history=valid_conversations(id_style="openai"))
def test_vouch_for_plain_valid_histories(history: list[Any]) -> None:
    """The histories hooks see all day take the fast path (without the loop guard: these
    conversations may repeat a call; the guard's own examples are below)."""
    assert vouch(history, provider="openai") is not None


def _round(call_id: str, name: str, arguments: str) -> list[dict[str, Any]]:
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    return [{"role": "assistant", "content": None, "tool_calls": [call]}, result(call_id, "out")]


def _run(*arguments: str, name: str = "search") -> list[dict[str, Any]]:
    history = [user("go")]
    for number, text in enumerate(arguments):
        history += _round(f"call_{number}", name, text)
    return history


@pytest.mark.parametrize(
    ("history", "vouched"),
    [
        pytest.param(_run('{"q": 1}', '{"q": 2}', '{"q": 3}'), True, id="three-other-arguments"),
        pytest.param(_run('{"q": 1}', '{"q": 1}'), True, id="two-repeats"),
        pytest.param(_run('{"q": 1}', '{"q": 1}', '{"q": 1}'), False, id="three-repeats"),
        pytest.param(
            _run('{"q": 1, "n": 2}', '{ "n":2, "q":1 }', '{"n": 2, "q": 1}'),
            False,
            id="three-repeats-written-differently",
        ),
        pytest.param(_run(*[json.dumps({"q": n}) for n in range(5)]), False, id="five-rounds"),
        pytest.param(
            [*_run('{"q": 1}', '{"q": 1}', '{"q": 1}'), user("stop")],
            True,
            id="a-loop-the-user-ended",
        ),
    ],
)
def test_the_loop_guard_on_the_fast_path(history: list[Any], vouched: bool) -> None:
    """A failing and a passing example of each way the live run can keep the loop guard's
    shortcut off."""
    assert toolmend.repair(history).messages is history
    live = vouch(history, provider="openai")
    assert live is not None
    assert quiet_live_run(*live) is vouched
    if not vouched:
        assert toolmend.detect_loops(history, live_only=True), "the full path must report it"


@pytest.mark.parametrize(
    ("history", "provider", "format"),
    [
        pytest.param([user(), result("call_1")], "openai", "openai", id="orphan-result"),
        pytest.param(
            [user(), assistant(None, tool_calls=[])], "openai", "openai", id="empty-tool-calls"
        ),
        pytest.param(_run('{"q": 1}'), "deepseek-reasoner", "openai", id="per-turn-profile"),
        pytest.param(  # Anthropic and Responses have one (tests/test_litellm_routes.py)
            [{"role": "user", "parts": [{"text": "hi"}]}],
            "gemini",
            "gemini",
            id="format-without-the-reader",
        ),
    ],
)
def test_no_vouching_where_the_one_pass_reader_cannot_tell(
    history: list[Any], provider: str, format: str
) -> None:
    assert vouch(history, provider=provider, format=format) is None


def test_a_valid_request_is_mended_without_the_full_path(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The hook returns the caller's own list and reads it once: the loop guard and the repair
    are not called."""

    def full_path(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the full path was taken")

    patch_everywhere(monkeypatch, "detect_loops", full_path)
    patch_everywhere(monkeypatch, "repair", full_path)
    history = _run('{"q": 1}', '{"q": 2}')
    with caplog.at_level(logging.DEBUG, logger="toolmend"):
        mended = mend(history, provider="openai", source="test", format="openai")
    assert mended.messages is history and not mended.failed
    assert (mended.changes, mended.problems, mended.loops) == ((), (), ())
    assert caplog.records == []


def test_a_loop_in_a_valid_request_takes_the_guard_not_the_repair(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def full_path(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the repair ran on a history the fast path vouched for")

    patch_everywhere(monkeypatch, "repair", full_path)
    history = _run('{"q": 1}', '{"q": 1}', '{"q": 1}')
    with caplog.at_level(logging.WARNING, logger="toolmend"):
        mended = mend(history, provider="openai", source="test", format="openai")
    assert mended.messages is history and not mended.failed
    assert [problem.code for problem in mended.loops] == ["repeated_call"]
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        "toolmend loop guard on test for openai"
    ]
    with pytest.raises(toolmend.ToolLoopError):
        mend(history, provider="openai", source="test", options=HookOptions(on_loop="raise"))


def test_a_broken_request_takes_the_full_path(caplog: pytest.LogCaptureFixture) -> None:
    history = [user(), result("call_1"), user("again")]
    with caplog.at_level(logging.INFO, logger="toolmend"):
        mended = mend(history, provider="openai", source="test", format="openai")
    assert [change.code for change in mended.changes] == ["dropped_orphan_result"]
    assert mended.messages is not history and len(mended.messages) == 2


def test_a_wrong_policy_fails_where_the_hook_is_built() -> None:
    """A valid request never reaches the code that reads the policy, so the name is checked
    when the options are made."""
    with pytest.raises(toolmend.UnknownNameError):
        HookOptions(policy="repiar")


@pytest.mark.parametrize("format", [None, "openai"])
@pytest.mark.parametrize("history", [None, "text", 3, {"role": "user"}, (user(),), []])
def test_what_is_not_a_list_of_messages_is_left_to_the_full_path(
    history: Any, format: str | None
) -> None:
    """The full path raises the documented error naming what is wrong; the fast path only
    declines."""
    assert vouch(history, provider="openai", format=format) is None


def test_an_unknown_provider_or_format_name_raises_as_repair_does() -> None:
    for options in (
        {"provider": "opnai", "format": "openai"},
        {"provider": "openai", "format": "x"},
    ):
        with pytest.raises(toolmend.UnknownNameError):
            vouch([user()], **options)
        with pytest.raises(toolmend.UnknownNameError):
            toolmend.repair([user()], **options)


# --- the loop guard's shortcut on long runs and on argument objects ------------------------------

_INPUTS: list[Any] = [
    {"q": 1},
    {"q": True},  # equal to {"q": 1} in Python, not in JSON
    {"q": 1.0},  # a float: compared as canonical JSON
    {"q": "1"},
    {"q": None},
    {},
    {"q": [1]},  # nested: compared as canonical JSON
    {"n": 2, "q": 1},
    {"q": 1, "n": 2},  # the same object, keys in another order
    {1: "x"},  # a key JSON writes as "1"
    {"1": "x"},
]


@st.composite
def _anthropic_runs(draw: st.DrawFn) -> list[Any]:
    """A user prompt, then tool rounds of mostly one call each (streaks of a tool happen), with
    argument objects that look alike in Python or in JSON."""
    history: list[Any] = [{"role": "user", "content": "go"}]
    number = 0
    for _ in range(draw(st.integers(1, 12))):
        blocks = []
        for _ in range(draw(st.sampled_from([1, 1, 1, 2]))):
            number += 1
            name = draw(st.sampled_from(["grep", "ls"]))
            arguments = draw(st.sampled_from(_INPUTS))
            blocks.append(
                {"type": "tool_use", "id": f"t{number}", "name": name, "input": arguments}
            )
        history.append({"role": "assistant", "content": blocks})
        results = [{"type": "tool_result", "tool_use_id": b["id"], "content": "ok"} for b in blocks]
        history.append({"role": "user", "content": results})
    return history


@settings(max_examples=150, deadline=None)
@given(history=_anthropic_runs())
def test_a_quiet_run_of_argument_objects_is_quiet_for_the_guard(history: list[Any]) -> None:
    """``quiet_live_run`` compares argument objects without writing them out as JSON where it
    can (flat objects of strings, whole numbers, booleans and nulls), and follows a long run
    of one call per round by the tools' names: where it says yes, the guard finds nothing."""
    live = vouch(history, provider="anthropic", format="anthropic")
    assert live is not None
    if quiet_live_run(*live):
        assert toolmend.detect_loops(history, format="anthropic", live_only=True) == []


@settings(max_examples=150, deadline=None)
@given(names=st.lists(st.sampled_from(["grep", "ls", "cat"]), min_size=1, max_size=30))
def test_a_long_responses_run_is_followed_by_its_names(names: list[str]) -> None:
    """Every ``function_call`` item is a round: a run of five or more is quiet when no tool is
    called five times in a row and no call repeats three times (each call here has its own
    arguments), and more than 25 rounds never is."""
    items: list[Any] = [{"role": "user", "content": "go"}]
    for number, name in enumerate(names):
        call = {"call_id": f"c{number}", "name": name, "arguments": f'{{"n": {number}}}'}
        items.append({"type": "function_call", **call})
        items.append({"type": "function_call_output", "call_id": f"c{number}", "output": "ok"})
    live = vouch(items, provider="openai-responses", format="openai-responses")
    assert live is not None and live[0] == len(names)
    found = toolmend.detect_loops(items, format="openai-responses", live_only=True)
    streaks = any(len(set(names[i : i + 5])) == 1 for i in range(len(names) - 4))
    assert quiet_live_run(*live) is (not streaks and len(names) <= 25)
    if quiet_live_run(*live):
        assert found == []
    elif streaks:
        assert found, "the full path must report the streak"


# --- the cross-family one-pass repair agrees with the full path ---------------------------------


def _full_path(history: list[Any], provider: str) -> tuple[Any, list[Any], list[Any]]:
    """What the full path gives: for a profile of another family, the history read, judged
    and planned whole (no one-pass scan, no ranges); for the OpenAI family, whose damaged
    ranges are held to the whole history elsewhere (``tests/test_properties.py``), those ranges
    without the one-pass vouch."""
    module, profile, policy = formats.get("openai"), get_profile(provider), Policy()
    if openai_chat._scannable_profile(profile):
        damaged = list(damage_in(module, history, profile, policy, True) or ())
        if not damaged:
            return history, [], []
        mended = mend_damage(module, history, profile, policy, damaged)
        return (
            (mended.messages if mended.changes else history),
            list(mended.changes),
            list(mended.problems),
        )
    problems = judge(module.read(history), profile)
    repaired, changes = whole_repair(module, history, profile, policy)
    return (repaired if changes else history), changes, problems


@st.composite
def _cross_family_histories(draw: st.DrawFn) -> list[Any]:
    """Valid chat histories whose tool messages may carry a name (their call's, or a wrong
    one) and whose calls may have ids in Mistral's form or not: what a cross-family target
    changes on nearly every message."""
    history = copy.deepcopy(draw(valid_conversations(id_style="any")))
    names: dict[str, str] = {}
    new_ids: dict[str, str] = {}
    for message in history:
        for call in message.get("tool_calls") or ():
            names[call["id"]] = call["function"]["name"]
            if draw(st.integers(0, 3)) == 0:
                new_ids[call["id"]] = draw(st.from_regex(r"[a-zA-Z0-9]{9}", fullmatch=True))
    for message in history:
        if message["role"] == "tool":
            choice = draw(st.integers(0, 3))
            if choice == 1:
                message["name"] = names[message["tool_call_id"]]
            elif choice == 2:
                message["name"] = message["tool_call_id"]  # seed 003: the opaque id as name
            message["tool_call_id"] = new_ids.get(message["tool_call_id"], message["tool_call_id"])
        for call in message.get("tool_calls") or ():
            call["id"] = new_ids.get(call["id"], call["id"])
    for _ in range(draw(st.integers(0, 2))):  # and now and then a message lost or repeated
        if len(history) > 2:
            position = draw(st.integers(1, len(history) - 1))
            if draw(st.booleans()):
                del history[position]
            else:
                history.insert(position, history[position - 1])
    if draw(st.integers(0, 5)) == 0:  # (toolmend does not move a prefix mark to the end)
        history.append(assistant("the answer is", prefix=True))
    return history


def _snapshot(history: list[Any]) -> str:
    """The history written out, objects by their fields (to tell it was not changed)."""
    return repr([m if isinstance(m, dict) else vars(m) for m in history])


@settings(max_examples=200, deadline=None)
@given(
    history=st.one_of(
        _cross_family_histories(),
        damaged_conversations(id_style="any").map(lambda case: case[1]),
        agent_runs(),
    ),
    provider=st.sampled_from(CHAT_PROVIDERS),
)
@example(history=[{"role": "assistant", "content": None}], provider="mistral")
def test_the_one_pass_repair_agrees_with_the_full_path(history: list[Any], provider: str) -> None:
    """``toolmend.repair`` (with the fast path, the cross-family check and the one-pass
    names and ids) and the full read, judge and plan give the same messages, the same changes
    and the same problems, for every chat profile."""
    before = _snapshot(history)
    repaired = toolmend.repair(history, provider=provider)
    full, changes, problems = _full_path(history, provider)
    assert _snapshot(history) == before
    assert repaired.messages == full
    assert (repaired.messages is history) == (full is history)
    assert list(repaired.changes) == changes
    assert list(repaired.problems) == problems
    if repaired.changes and repaired.messages:  # (nothing mends a history left empty)
        assert repaired.problems_left == ()
        # the judge itself (the one-pass repair hands back "nothing left" unjudged)
        assert (
            judge(formats.get("openai").read(list(repaired.messages)), get_profile(provider)) == []
        )


_MISTRAL_DAMAGE = (
    "empty",
    "user",
    "system",
    "text",
    "call",
    "orphan",
    "delete",
    "repeat",
    "end-text",
    "end-system",
)


@st.composite
def _mistral_damaged(draw: st.DrawFn) -> list[Any]:
    """Histories of several turns (ids of every style: OpenAI's ``call_...``, ``call_0``
    reused every round, Mistral's own nine) with damage anywhere, of the kinds Mistral's rules
    between messages and on the last one react to: a user or system message after results or
    assistant text, assistant text or a call where it breaks the order, an orphan result, a
    message lost or repeated, a request ending on assistant text, on a system message or on a
    prefix. Most such histories are cut into ranges by the range scan."""
    history = copy.deepcopy(draw(valid_conversations(id_style="any", max_rounds=8)))
    for _ in range(draw(st.integers(1, 3))):
        damage = draw(st.sampled_from(_MISTRAL_DAMAGE))
        position = draw(st.integers(1, len(history)))
        if damage == "user":
            history.insert(position, user("are you still there?"))
        elif damage == "empty":  # dropped by the repair: what follows meets what came before
            history.insert(position, {"role": "assistant", "content": None})
        elif damage == "system":
            history.insert(position, {"role": "system", "content": "be brief"})
        elif damage == "text":
            history.insert(position, assistant("thinking aloud"))
        elif damage == "end-text":
            history.append(assistant("the answer is"))
        elif damage == "end-system":
            history.append({"role": "system", "content": "answer now"})
        elif damage == "call":
            call_id = draw(st.sampled_from(["call_0", "call_new", "abcdefghi"]))
            history.insert(position, calls(call_id))
        elif damage == "orphan":
            ids = [m["tool_call_id"] for m in history if m["role"] == "tool"] or ["call_0"]
            history.insert(position, result(draw(st.sampled_from(ids))))
        elif position < len(history):
            if damage == "delete":
                del history[position]
            else:
                history.insert(position, history[position - 1])
    if draw(st.integers(0, 5)) == 0:  # (toolmend does not move a prefix mark to the end)
        history.append(assistant("the answer is", prefix=True))
    return history


_EMPTY_AFTER_RESULTS = [
    user("user 1"),
    calls("call_a", "call_b"),
    result("call_a"),
    result("call_b"),
    assistant("text"),
    user("user 5"),
    calls("call_d"),
    result("call_d"),
    {"role": "assistant", "content": None},  # dropped: "user 9" would follow a result
    user("user 9"),
]
"""Found by hypothesis: a range started at the empty assistant message, whose repair drops
it, left the result before it followed by a user message (the whole history's repair puts
an assistant message between them)."""


@settings(max_examples=300, deadline=None)
@given(history=st.one_of(_mistral_damaged(), _cross_family_histories()))
@example(history=_EMPTY_AFTER_RESULTS)
def test_mistral_ranges_agree_with_the_full_path(history: list[Any]) -> None:
    """Bound for Mistral, a damaged history is cut into ranges (its rules between any two
    messages and on the last one allow a range to start at a user message right after sound
    assistant text) and its call ids are rewritten request-wide, between and in the ranges:
    ``toolmend.repair`` gives what the whole history read, judged and planned gives (the same
    messages, changes and problems, in the same order), ``toolmend.check`` and the report
    policy what the whole history's judge finds, and mistral-common's validator takes the
    repair."""
    before = _snapshot(history)
    repaired = toolmend.repair(history, provider="mistral")
    full, changes, problems = _full_path(history, "mistral")
    assert _snapshot(history) == before
    assert repaired.messages == full
    assert (repaired.messages is history) == (full is history)
    assert list(repaired.changes) == changes
    assert list(repaired.problems) == problems
    assert toolmend.check(history, provider="mistral") == problems
    assert list(toolmend.repair(history, provider="mistral", policy="report").problems) == problems
    if repaired.changes and not any(p.code == "empty_history" for p in problems):
        assert repaired.problems_left == ()
        assert judges.mistral_error(list(repaired.messages), checks_ids=True) is None


SEEDS = [
    "a",
    "b",
    "call_1",
    "call_2",
    "x#0",
    "",
    # tails of letters and digits (the first candidate of a fixed length), one shared
    "call_Xy7QpL2mZ9aB",
    "toolu_Xy7QpL2mZ9aB",
    "Xy7QpL2mZ9aB",
    "call_abc_defghijk",
    "0:0:get_weather",
    "call_ab\u00e9defghi",
]
"""Seeds of the id rewrite: short, repeated, with a tail of letters and digits (two sharing
it, one whose tail is a whole id), with an underscore or a letter outside ASCII in it."""


@settings(max_examples=150, deadline=None)
@given(
    length=st.one_of(st.none(), st.integers(1, 22)),
    seeds=st.lists(st.sampled_from(SEEDS), max_size=12),
    taken_seeds=st.lists(st.sampled_from(["a", "b", "call_1", "z", *SEEDS[6:]]), max_size=4),
)
def test_the_batch_of_fresh_ids_is_the_planners(
    length: int | None, seeds: list[str], taken_seeds: list[str]
) -> None:
    """``fresh_ids`` (the one-pass Mistral rewrite's ids, the first try unrolled) gives the
    ids the planner's ``fresh_id`` gives one at a time, and leaves ``taken`` as it does: short
    lengths (62 ids of one digit), repeated seeds and shared tails make candidates collide,
    ids already in the history (``taken_seeds``' ids) make the first try fail."""
    profile = dataclasses.replace(get_profile("mistral"), call_id_length=length)
    taken: set[str] = set()
    for seed in taken_seeds:  # ids a history already has: each seed's first choice, taken
        fresh_id(seed, profile, taken, {})
    expected_taken, first_taken = set(taken), set(taken)
    next_try: dict[str, int] = {}
    expected = [fresh_id(seed, profile, expected_taken, next_try) for seed in seeds]
    assert fresh_ids(seeds, profile, taken) == expected
    assert taken == expected_taken
    counters: dict[str, int] = {}  # the counters given, none tried before: kept up to date
    assert fresh_ids(seeds, profile, first_taken, counters) == expected
    assert (first_taken, counters) == (expected_taken, next_try)
    # and after ids made before from some of the seeds (a rewrite shared by a history's ranges)
    more_taken, more_try = set(taken), dict(next_try)
    expected = [fresh_id(seed, profile, more_taken, more_try) for seed in seeds]
    shared = dict(next_try)
    assert fresh_ids(seeds, profile, taken, shared) == expected
    assert (taken, shared) == (more_taken, more_try)


@pytest.mark.parametrize(
    ("provider", "code"), [("gemini", "filled_result_name"), ("mistral", "rewrote_call_id")]
)
def test_a_cross_family_repair_of_every_message_takes_one_pass(
    monkeypatch: pytest.MonkeyPatch, provider: str, code: str
) -> None:
    """Gemini's names and Mistral's ids on an otherwise valid history: the one pass lists the
    edits, and the history is never judged in full (nor planned)."""

    def full_path(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the full path was taken")

    history = [user("go"), *_round("call_aaaaaaaaaaaaaaaaaaaaaaaa", "search", "{}")]
    history += [
        assistant("found"),
        user("more"),
        *_round("call_bbbbbbbbbbbbbbbbbbbbbbbb", "read", "{}"),
    ]
    history += [assistant("read"), user("thanks")]
    expected = toolmend.repair(history, provider=provider)
    monkeypatch.setattr(toolmend._api, "judge", full_path)
    monkeypatch.setattr(toolmend._api, "plan_repair", full_path)
    fixed = toolmend.repair(history, provider=provider)
    assert [change.code for change in fixed.changes] == [code, code]
    assert fixed.messages == expected.messages and fixed.changes == expected.changes
    assert fixed.problems == expected.problems


def test_a_damaged_history_bound_for_gemini_judges_only_its_damaged_range(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bound for Gemini, every range of an OpenAI-shaped history lacks the result names: the
    ranges with nothing else wrong get them in one pass, and only the damaged range is read,
    judged and planned; the repair is the whole history's."""
    history: list[Any] = [user("go"), *_round("call_a", "search", "{}"), assistant("found")]
    history += [user("more"), _round("call_b", "read", "{}")[0], assistant("read")]  # unanswered
    history += [user("again"), *_round("call_c", "search", "{}"), assistant("done")]
    history += [user("thanks")]
    full, changes = whole_repair(formats.get("openai"), history, get_profile("gemini"), Policy())
    judged: list[int] = []
    real_judge = toolmend._api.judge

    def counting_judge(skeleton: Any, profile: Any) -> Any:
        judged.append(len(skeleton.kinds))
        return real_judge(skeleton, profile)

    monkeypatch.setattr(toolmend._api, "judge", counting_judge)
    fixed = toolmend.repair(history, provider="gemini")
    assert fixed.messages == full and list(fixed.changes) == changes
    assert [change.code for change in fixed.changes].count("filled_result_name") == 2
    # the damaged range (the unanswered call and the text after it) is mended from its
    # messages (``mended_range``): no range is judged
    assert judged == []


def test_a_sound_history_bound_for_bedrock_takes_the_one_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bedrock's blank-text rules (``text_blank``, ``result_text_blank``) are modelled by the
    cross-family pass: a sound OpenAI-shaped history comes back as it is, never judged; an
    empty tool message is never vouched for, and its repair is the whole history's."""
    history: list[Any] = [user("go"), *_round("call_a", "search", "{}"), assistant("found")]
    history += [user("thanks")]
    real_judge = toolmend._api.judge
    judged: list[int] = []

    def counting_judge(skeleton: Any, profile: Any) -> Any:
        judged.append(len(skeleton.kinds))
        return real_judge(skeleton, profile)

    monkeypatch.setattr(toolmend._api, "judge", counting_judge)
    assert toolmend.repair(history, provider="bedrock").messages is history
    assert judged == []
    blank = copy.deepcopy(history)
    blank[2]["content"] = ""
    found = toolmend.repair(blank, provider="bedrock")
    assert "result_text_blank" in [problem.code for problem in found.problems]
    full, changes = whole_repair(formats.get("openai"), blank, get_profile("bedrock"), Policy())
    assert found.messages == full and list(found.changes) == changes


@pytest.mark.parametrize(
    "blank",
    ["", "  \n", [{"type": "text", "text": " "}], [{"type": "text", "text": ""}, {"type": "x"}]],
    ids=["empty", "whitespace", "whitespace part", "empty part"],
)
@pytest.mark.parametrize("where", ["first", "in a damaged history"])
def test_blank_user_text_bound_for_anthropic_is_never_vouched_for(blank: Any, where: str) -> None:
    """The cross-family pass models Anthropic's blank-text rule on OpenAI-shaped user messages
    (issue 32, case 8): neither the one pass nor the damaged ranges let such a message through
    (the one pass once took it for valid, and ``check`` said nothing)."""
    history: list[Any] = [
        {"role": "user", "content": blank},
        assistant("Which city?"),
        user("Paris"),
        calls("c1"),
        result("c1", "21 C"),
        user("Thanks"),
    ]
    if where != "first":
        history.append(result("stray", "orphan"))  # damage far from the blank text
        history.append(user("And Rome?"))
    profile = get_profile("anthropic")
    assert vouch(history, provider=profile) is None
    codes = [p.code for p in toolmend.check(history, provider="anthropic")]
    assert codes[0] in ("text_empty", "text_whitespace")
    fixed = toolmend.repair(history, provider="anthropic")
    assert toolmend.check(list(fixed.messages), provider="anthropic") == []
    assert fixed.messages[0]["content"] != blank


def _mistral_history(turns: int, damaged: set[int], ids: str = "call_{turn}") -> list[Any]:
    """``turns`` user turns of one tool round each (the call's id ``ids`` formatted with the
    turn), the result of each turn in ``damaged`` lost."""
    history: list[Any] = []
    for turn in range(turns):
        call_id = ids.format(turn=turn)
        history += [user(f"question {turn}"), calls(call_id)]
        if turn not in damaged:
            history.append(result(call_id))
        history.append(assistant(f"answer {turn}"))
    return [*history, user("thanks")]


def test_a_damaged_history_bound_for_mistral_judges_only_its_damaged_ranges(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Mistral's role order and last-message rules hold between any two messages, and its id
    rewrite takes ids from the whole request: a damaged history was read, judged and planned
    whole. Now only the damaged tool rounds are looked at (a range starts at an assistant
    message where nothing waits, or at a user message after sound assistant text), each
    mended straight from its messages (``mended_range``, its ids from the request's rewrite:
    no range is read or judged), every other call gets its new id in one pass, and the repair
    is the whole history's, ids included."""
    history = _mistral_history(20, {5, 12})
    module, profile = formats.get("openai"), get_profile("mistral")
    full, changes = whole_repair(module, history, profile, Policy())
    problems = judge(module.read(history), profile)
    judged: list[int] = []
    real_judge = toolmend._api.judge

    def counting_judge(skeleton: Any, profile: Any) -> Any:
        judged.append(len(skeleton.kinds))
        return real_judge(skeleton, profile)

    def no_planner(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a lost result is planned in one pass, its range's ids with it")

    monkeypatch.setattr(toolmend._api, "judge", counting_judge)
    monkeypatch.setattr(toolmend._api, "plan_repair", no_planner)
    fixed = toolmend.repair(history, provider="mistral")
    # each damaged turn (its question, the call left unanswered and the text after it: the
    # range starts at the question, as a repair under missing_result="remove_call" may take
    # the calling message away) is mended without a judge
    assert judged == []
    assert openai_chat.dirty_spans(history, profile) == [(20, 23), (47, 50)]
    assert fixed.messages == full
    assert list(fixed.changes) == changes and list(fixed.problems) == problems
    assert [change.code for change in fixed.changes].count("rewrote_call_id") == 20


@pytest.mark.parametrize("damaged", [{0}, {3}, {0, 7}, {9}])
def test_an_id_reused_in_every_round_gets_the_whole_historys_new_ids(damaged: set[int]) -> None:
    """Servers that number calls per response (``call_0`` in every round): the whole
    history's planner gives the n-th ``call_0`` the seed's n-th try, so the ranges and the
    stretches between them share the request's counters and ids taken; each call gets the id
    the whole history gives it, and no two calls one id."""
    history = _mistral_history(10, damaged, ids="call_0")
    module, profile = formats.get("openai"), get_profile("mistral")
    full, changes = whole_repair(module, history, profile, Policy())
    fixed = toolmend.repair(history, provider="mistral")
    assert fixed.messages == full and list(fixed.changes) == changes
    new_ids = [call["id"] for m in fixed.messages for call in m.get("tool_calls") or ()]
    assert len(set(new_ids)) == len(new_ids) == 10
    assert judges.mistral_error(list(fixed.messages), checks_ids=True) is None


def test_mistral_rules_on_the_ends_judge_only_the_range_that_holds_them() -> None:
    """A range that does not end the history is not judged by the last-message rule, nor one
    that does not start it by the opening rule, as the whole history judges them: a range
    ending on assistant text, or opening with an assistant message, is sound there."""
    module, profile = formats.get("openai"), get_profile("mistral")
    middle = [calls("abcdefghi"), result("abcdefghi"), assistant("done")]
    skeleton = module.read(middle)
    assert {p.code for p in judge(skeleton, profile)} == {"first_not_user", "last_role"}
    skeleton.base, skeleton.whole, skeleton.starts, skeleton.ends = 4, False, False, False
    assert judge(skeleton, profile) == []
    skeleton.ends = True  # the range that ends the history
    assert [(p.code, p.index) for p in judge(skeleton, profile)] == [("last_role", 6)]


def test_a_result_id_outside_mistrals_form_is_reported_without_any_call() -> None:
    """A result's id is judged against the provider's pattern whether or not the history (or
    a range of it) makes a call: a range of orphan results judged as the whole history judges
    them."""
    history = [user(), result("call_gone"), assistant("ok"), user("and?")]
    found = [(p.code, p.index) for p in toolmend.check(history, provider="mistral")]
    assert ("call_id_format", 1) in found


@pytest.mark.parametrize("damaged", [set(), {2}, {0, 4}])
def test_show_marks_the_messages_whose_ids_a_stretch_rewrote(
    monkeypatch: pytest.MonkeyPatch, damaged: set[int]
) -> None:
    """``toolmend show`` tells where each repaired message came from: a message whose call id
    the one-pass rewrite between Mistral's damaged ranges changed is "edited", as it is when
    the whole history is planned."""
    from toolmend._show import timeline

    history = _mistral_history(6, damaged)
    module, size = formats.get("openai"), len(toolmend.repair(history, provider="mistral").messages)
    ranged = timeline._origins(module, history, "mistral", Policy(), size)
    monkeypatch.setattr(toolmend._api, "_ranges", lambda module, messages, *_: [(0, len(messages))])
    assert ranged == timeline._origins(module, history, "mistral", Policy(), size)
    assert ranged is not None  # each call and its result edited; a lost one's placeholder
    assert [o.kind for o in ranged].count("edited") == 2 * 6 - len(damaged)


@pytest.mark.parametrize("kept", ["Xy7QpL2mZ", "abcdefghi"])
def test_a_kept_id_that_is_another_calls_tail_is_not_given_twice(kept: str) -> None:
    """Bound for Mistral, a refused id's new id is its tail unless an id the request keeps is
    that tail (only a kept id can be: a refused id is never nine letters and digits): then the
    one-pass rewrite gives what the whole history's planner gives, and no two calls one id."""
    history = [
        user(),
        calls("call_Xy7QpL2mZ", "call_abcdefghi"),
        result("call_Xy7QpL2mZ"),
        result("call_abcdefghi"),
        assistant("ok"),
        user("and?"),
        calls(kept),
        result(kept),
        assistant("done"),
        user("thanks"),
    ]
    repaired = toolmend.repair(history, provider="mistral")
    full, changes, problems = _full_path(history, "mistral")
    assert repaired.messages == full
    assert list(repaired.changes) == changes and list(repaired.problems) == problems
    ids = [call["id"] for m in repaired.messages for call in m.get("tool_calls") or ()]
    assert len(set(ids)) == 3 and kept in ids
