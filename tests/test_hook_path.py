"""What ``toolmend.integrations.hooks.mend`` costs on top of the repair: only the work someone
reads. A repair's report (built lazily by the one-pass names and ids repair, a change and a
problem or two a message) stays unbuilt for a hook that neither logs nor reports it; the log
line's text is built only when the logger takes it, and its ids are tested in one search; the
re-check of the repaired history is skipped where the repair knows nothing is left. Each is
held by a work counter, never by a clock."""

from __future__ import annotations

import copy
import dataclasses
import logging
import pickle
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolmend
import toolmend._escape
import toolmend._fastpath
import toolmend._quickmend
from toolmend import Change, formats
from toolmend._api import Mended
from toolmend._rules import judge
from toolmend.integrations import hooks, telemetry
from toolmend.profiles import _base, get_profile

from support.cases import assistant, calls, result, user
from support.histories import valid_conversations


def _history() -> list[Any]:
    return [
        user("go"),
        calls("call_aaaaaaaaaaaaaaaaaaaaaaaa", "call_bbbbbbbbbbbbbbbbbbbbbbbb"),
        result("call_aaaaaaaaaaaaaaaaaaaaaaaa", "found"),
        result("call_bbbbbbbbbbbbbbbbbbbbbbbb", "found too"),
        assistant("done"),
        user("thanks"),
    ]


def _count(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    """Count the calls of ``owner.name`` (a one-item list, read after the call)."""
    real = getattr(owner, name)
    count = [0]

    def counted(*args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return count


@pytest.fixture
def unheard(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """No telemetry sink, no OpenTelemetry, and logger ``toolmend`` at WARNING: nobody reads a
    repair's report."""
    monkeypatch.setattr(telemetry, "_sinks", [])
    monkeypatch.delitem(sys.modules, "opentelemetry.trace", raising=False)
    caplog.set_level(logging.WARNING, logger="toolmend")
    assert not telemetry.is_active()


@pytest.mark.usefixtures("unheard")
@pytest.mark.parametrize("provider", ["mistral", "gemini"])
def test_a_hook_builds_no_report_nobody_reads(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, provider: str
) -> None:
    """(Before, ``mend`` read the repair's changes, built the log line's text for a logger
    that dropped it, and handed back a ``Mended`` holding the report: every change built.)"""
    built = _count(monkeypatch, toolmend._quickmend, "_change")
    mended = hooks.mend(_history(), provider=provider, source="test", format="openai")
    assert built[0] == 0
    assert mended.messages != _history() and mended.left == () and not mended.failed
    assert "changes" not in vars(mended) and "problems" not in vars(mended)
    assert caplog.records == []
    # read, it is the repair's report
    fixed = toolmend.repair(_history(), provider=provider)
    assert mended.changes == fixed.changes and mended.problems == fixed.problems
    assert built[0] > 0
    assert mended == Mended(fixed.messages, fixed.changes, problems=fixed.problems)


def test_the_line_is_written_when_the_logger_takes_it(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="toolmend")
    mended = hooks.mend(_history(), provider="mistral", source="test(m)", format="openai")
    fixed = toolmend.repair(_history(), provider="mistral")
    codes = " ".join(
        f"{c.code}@{c.index}[{','.join(c.ids)}]" if c.ids else f"{c.code}@{c.index}"
        for c in fixed.changes
    )
    assert [record.getMessage() for record in caplog.records] == [
        f"toolmend repaired test(m) for mistral: {codes}"
    ]
    assert mended.changes == fixed.changes


class _Watched(list[Change]):
    """A list of changes that counts how often it is walked."""

    walks = 0

    def __iter__(self) -> Iterator[Change]:
        type(self).walks += 1
        return super().__iter__()


def test_log_repair_builds_no_text_for_a_level_the_logger_drops(
    caplog: pytest.LogCaptureFixture,
) -> None:
    changes = _Watched([Change("rewrote_call_id", 1, "", ("a",))])
    caplog.set_level(logging.WARNING, logger="toolmend")
    hooks.log_repair("test", "mistral", changes)
    assert _Watched.walks == 0 and caplog.records == []
    caplog.set_level(logging.INFO, logger="toolmend")
    hooks.log_repair("test", "mistral", changes)
    assert _Watched.walks > 0
    assert [r.getMessage() for r in caplog.records] == [
        "toolmend repaired test for mistral: rewrote_call_id@1[a]"
    ]


def _one_by_one(changes: list[Change]) -> list[str]:
    """The log line's change codes as they were written before: each id escaped on its own."""
    return [
        f"{c.code}@{c.index}" + (f"[{','.join(map(toolmend._escape.log, c.ids))}]" if c.ids else "")
        for c in changes
    ]


_ids = st.lists(
    st.one_of(st.text(), st.from_regex(r"call_[a-zA-Z0-9]{1,9}", fullmatch=True)), max_size=3
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b_c"]), st.integers(0, 99), _ids), max_size=6))
def test_change_codes_are_those_of_each_id_escaped_on_its_own(
    made: list[tuple[str, int, list[str]]],
) -> None:
    changes = [Change(code, index, "", tuple(ids)) for code, index, ids in made]
    assert hooks.change_codes(changes) == _one_by_one(changes)


def test_change_codes_search_the_ids_once_when_none_needs_escaping(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """(Before, each of a Mistral rewrite's ids was searched on its own.)"""
    escaped = _count(monkeypatch, toolmend._escape, "log")
    safe = [Change("rewrote_call_id", i, "", (f"call_{i}", f"ab{i}")) for i in range(50)]
    assert hooks.change_codes(safe)[1] == "rewrote_call_id@1[call_1,ab1]"
    assert escaped[0] == 0
    unsafe = [*safe, Change("rewrote_call_id", 50, "", ("a;b",))]
    assert hooks.change_codes(unsafe)[-1] == "rewrote_call_id@50[a%3Bb]"
    assert escaped[0] == 101
    with pytest.raises(TypeError):  # not a str: a caller's bug, as for escape.log
        hooks.change_codes([Change("x", 0, "", (None,))])  # type: ignore[arg-type]


@pytest.mark.parametrize("provider", ["mistral", "gemini"])
def test_no_re_check_after_the_one_pass_names_and_ids_repair(
    monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    """The one-pass repair knows nothing is left: the hook vouches for the original once (it
    cannot) and not for the repair (before: twice)."""
    vouched = _count(monkeypatch, toolmend._fastpath, "vouch")
    mended = hooks.mend(_history(), provider=provider, source="test", format="openai")
    assert vouched[0] == 1 and mended.left == ()
    assert toolmend.repair(_history(), provider=provider).left == ()


def test_a_damaged_history_is_still_checked_after_its_repair(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    vouched = _count(monkeypatch, toolmend._fastpath, "vouch")
    orphan = [user("go"), result("call_1", "lost"), user("again")]
    mended = hooks.mend(orphan, provider="openai", source="test", format="openai")
    assert vouched[0] == 2 and mended.left == () and mended.changes


@settings(max_examples=150, deadline=None)
@given(
    history=valid_conversations(id_style="any"),
    provider=st.sampled_from(["mistral", "gemini"]),
    named=st.booleans(),
)
def test_what_the_one_pass_repair_says_is_left_is_what_the_judge_finds(
    history: list[Any], provider: str, named: bool
) -> None:
    """Where the repair hands back what is left as a tuple (no judge pending), the full judge
    of the repaired history agrees: the hooks send it unchecked."""
    if named:
        names = {c["id"]: c["function"]["name"] for m in history for c in m.get("tool_calls") or ()}
        history = [
            {**m, "name": names[m["tool_call_id"]]} if m["role"] == "tool" else m for m in history
        ]
    fixed = toolmend.repair(history, provider=provider)
    if fixed.changed and not callable(fixed.left):
        module = formats.get("openai")
        assert tuple(judge(module.read(list(fixed.messages)), get_profile(provider))) == fixed.left


def test_a_hooks_result_pickles_and_copies_as_one_built_eagerly() -> None:
    """(``Mended.of_repair`` holds a reader of the repair, a closure: pickled as it is, it
    would raise.)"""
    mended = hooks.mend(_history(), provider="mistral", source="test", format="openai")
    fixed = toolmend.repair(_history(), provider="mistral")
    eager = Mended(fixed.messages, fixed.changes, problems=fixed.problems)
    assert pickle.loads(pickle.dumps(mended)) == eager
    assert copy.copy(mended) == eager and copy.deepcopy(mended) == eager
    assert dataclasses.replace(mended, failed=True) == dataclasses.replace(eager, failed=True)


def _profile_with_a_broken_text(text: str = "Tool call id was {id but") -> Any:
    """Mistral's profile with an error text that cannot be written (a user-made profile's
    typo): the one-pass id rewrite reports with it."""
    mistral = get_profile("mistral")
    checks = dict(mistral.checks)
    checks["call_id_format"] = dataclasses.replace(checks["call_id_format"], error=text)
    return dataclasses.replace(mistral, name="mymistral", checks=_base.checks(**checks))


_REFUSED_IDS = [
    {"role": "user", "content": "hi"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_xabcdefghi",
                "type": "function",
                "function": {"name": "f", "arguments": "{}"},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_xabcdefghi", "content": "ok"},
    {"role": "assistant", "content": "done"},
    {"role": "user", "content": "hi"},
]


def test_a_report_that_cannot_be_built_fails_inside_the_repair_and_the_hook_fails_open() -> None:
    """The report built on first read must not move a failure out of the repair: an error text
    that cannot be written raises from ``toolmend.repair`` itself, and a hook (which reads no
    report when nobody logs) sends the original and says it failed, as before the report was
    built lazily (found by the review of the fourth speed round)."""
    profile = _profile_with_a_broken_text()
    with pytest.raises(ValueError, match="expected '}'"):
        toolmend.repair(_REFUSED_IDS, provider=profile)
    mended = hooks.mend(_REFUSED_IDS, provider=profile, source="test")
    assert mended.failed
    assert mended.messages is _REFUSED_IDS


def _long_turns(count: int) -> list[dict[str, Any]]:
    """``count`` sound turns, a call and its result each, with ids the profile takes."""
    history: list[dict[str, Any]] = []
    for turn in range(count):
        call_id = f"call{turn:05d}"
        call = {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}
        history += [
            {"role": "user", "content": f"q{turn}"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": f"r{turn}"},
            {"role": "assistant", "content": f"a{turn}"},
        ]
    return [*history, {"role": "user", "content": "last"}]


@pytest.mark.parametrize(
    ("text", "error"),
    [("Tool call id was {foo}", KeyError), ("Tool call id was {0}", IndexError)],
)
def test_a_text_naming_a_field_no_report_gives_fails_inside_the_repair(
    text: str, error: type[Exception]
) -> None:
    """A text that parses but names a field no report writes (``{foo}``, ``{0}``) fails where
    the repair runs too, not when the report is read (found by the review of the fifth speed
    round: only the parse was tried before the report was handed out): on the one-pass id
    rewrite, and on a damaged history's range mended in one walk, whose problems are written
    on first read."""
    profile = _profile_with_a_broken_text(text)
    with pytest.raises(error):
        toolmend.repair(_REFUSED_IDS, provider=profile)
    openai = get_profile("openai")
    checks = dict(openai.checks)
    checks["duplicate_result"] = dataclasses.replace(checks["duplicate_result"], error=text)
    broken = dataclasses.replace(openai, name="myopenai", checks=_base.checks(**checks))
    history = _long_turns(6)
    history.insert(11, history[10])  # turn 2's result sent twice: a range mid-history
    for profile_used, messages in ((profile, _REFUSED_IDS), (broken, history)):
        with pytest.raises(error):
            toolmend.repair(messages, provider=profile_used)
        mended = hooks.mend(messages, provider=profile_used, source="test")
        assert mended.failed
        assert mended.messages is messages


def test_every_shipped_profiles_texts_can_be_written() -> None:
    """The trial write of :func:`toolmend._findings.check_texts` takes every text toolmend
    ships (Gemini's names ``{position}``, which only its own rule gives), and a user's text
    that indexes a field (``{ids[0]}``: the first character of the ids, as a report writes
    it)."""
    from toolmend._findings import check_texts
    from toolmend.profiles import PROFILES

    for profile in PROFILES.values():
        check_texts(profile)
    indexed = _profile_with_a_broken_text("Tool call id starting {ids[0]} is refused")
    check_texts(indexed)
    assert toolmend.repair(_REFUSED_IDS, provider=indexed).problems
