"""A format registered from outside toolmend (``toy_format.py``: one class, one ``register``
line) works through every entry point, and nothing outside ``toolmend.formats`` names a format.

The cross-format fidelity property runs on it in ``test_pairing.py`` (``OTHER_FORMATS``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolmend
from toolmend import formats

from support import toy_format

CORE = Path(toolmend.__file__).resolve().parent  # the sources, not an editable install's links
FORMAT_NAMES = {"openai", "openai-responses", "anthropic", "gemini", "bedrock", "langchain"}

BROKEN = [
    {"from": "user", "body": "Weather in Paris?"},
    {"from": "assistant", "body": "", "calls": [{"ref": "c1", "fn": "weather", "args": {}}]},
    {"from": "user", "body": "Are you there?"},
    {"from": "tool", "ref": "c1", "body": "21 C"},
    {"from": "tool", "ref": "c9", "body": "orphan"},
]


def test_the_registry_knows_the_format_and_detection_finds_it() -> None:
    assert toy_format.NAME in formats.names()
    assert formats.get(toy_format.NAME).name == toy_format.NAME
    assert formats.detect(BROKEN).name == toy_format.NAME


def test_check_and_repair_work_on_it_with_the_default_full_path() -> None:
    codes = {problem.code for problem in toolmend.check(BROKEN)}
    assert {"missing_result", "orphan_result"} <= codes
    repaired = toolmend.repair(BROKEN)
    assert toolmend.check(repaired.messages) == []
    answer = [m for m in repaired.messages if m.get("from") == "tool" and m.get("ref") == "c1"]
    assert answer == [{"from": "tool", "ref": "c1", "body": "21 C"}]  # the real result, kept
    assert not toolmend.repair(repaired.messages).changes  # idempotent
    valid = repaired.messages
    assert toolmend.sanitize(valid) is valid  # valid input comes back as the same object


def test_trim_and_atomic_groups_keep_its_groups_whole() -> None:
    history = toolmend.sanitize(BROKEN)
    groups = toolmend.atomic_groups(history)
    assert any(len(group) > 1 for group in groups)
    kept = toolmend.trim(history, max_messages=3)
    assert toolmend.check(kept) == []


def test_the_loop_guard_reads_its_arguments() -> None:
    call = {"from": "assistant", "body": "", "calls": [{"ref": "x", "fn": "ls", "args": {"a": 1}}]}
    history = [{"from": "user", "body": "go"}]
    for n in range(3):
        history += [
            {**call, "calls": [{**call["calls"][0], "ref": f"x{n}"}]},
            {"from": "tool", "ref": f"x{n}", "body": "same"},
        ]
    problems = toolmend.detect_loops(history)
    assert [problem.code for problem in problems] == ["repeated_call"]


def test_merge_consecutive_says_it_does_not_handle_the_format() -> None:
    with pytest.raises(toolmend.InvalidHistoryError, match="does not handle the 'toychat'"):
        toolmend.merge_consecutive([*BROKEN, {"from": "user", "body": "again"}])


def _format_name_comparisons(source: str, label: str) -> list[str]:
    """Places in one module that compare something with a format's name, or test membership
    in a literal collection of format names: code that asks which format a history is in."""
    found = []
    tree = ast.parse(source, label)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        for side in (node.left, *node.comparators):
            literals: list[ast.expr] = [side]
            if isinstance(side, (ast.Set, ast.Tuple, ast.List)):
                literals = list(side.elts)
            elif isinstance(side, ast.Call) and side.args:
                literals = list(getattr(side.args[0], "elts", []))
            named = [
                lit.value
                for lit in literals
                if isinstance(lit, ast.Constant) and lit.value in FORMAT_NAMES
            ]
            subjects = ast.unparse(node)
            if named and ("format" in subjects or ".name" in subjects or "NAME" in subjects):
                found.append(f"{label}:{node.lineno}: {subjects}")
    return found


def test_nothing_outside_formats_asks_which_format_a_history_is_in() -> None:
    modules = [p for p in CORE.rglob("*.py") if "formats" not in p.relative_to(CORE).parts]
    assert len(modules) > 20
    found = [
        hit
        for path in modules
        for hit in _format_name_comparisons(path.read_text(), str(path.relative_to(CORE)))
    ]
    assert found == []


@pytest.mark.parametrize(
    "line",
    [
        'skeleton.format == "gemini"',
        'module.NAME not in {"openai", "anthropic"}',
        'fmt.name in frozenset({"bedrock"})',
    ],
)
def test_the_format_name_check_finds_such_a_comparison(line: str) -> None:
    assert _format_name_comparisons(f"x = {line}\n", "probe.py") != []


class _Unnamed(formats.Format):
    pass


class _Aliased(toy_format.ToyChat):
    name = "toychat-aliased"
    aliases = ("openai",)


def test_register_refuses_a_format_without_a_name_and_an_alias_that_is_taken() -> None:
    with pytest.raises(TypeError, match="has no name"):
        formats.register(_Unnamed())
    with pytest.raises(ValueError, match="alias 'openai'"):
        formats.register(_Aliased())
    assert formats.get("openai").name == "openai"  # a built-in name is never an alias
    assert "toychat-aliased" not in formats.names()


def test_a_format_says_itself_whether_it_merges_and_takes_other_shapes() -> None:
    toy = formats.get(toy_format.NAME)
    assert not toy.merges and not toy.other_shapes  # it overrides neither
    assert formats.get("openai").merges and formats.get("gemini").other_shapes


@pytest.mark.parametrize("name", [3, ["openai"], b"openai"])
def test_a_format_that_is_not_a_name_is_a_clear_error(name: object) -> None:
    with pytest.raises(toolmend.UnknownNameError, match="Unknown format"):
        toolmend.check([{"role": "user", "content": "hi"}], format=name)  # type: ignore[arg-type]


def test_detection_asks_a_format_registered_after_an_earlier_detection() -> None:
    """Detection keeps every format in its order once imported; a format registered later is
    asked too (and one taken out again, here, no longer is)."""

    class LaterToy(toy_format.ToyChat):
        name = "toy-later"

        def claims(self, message: object, /) -> bool:
            return isinstance(message, dict) and "later" in message

    assert formats.detect(BROKEN).name == toy_format.NAME  # (every format kept in order)
    later = formats.register(LaterToy())
    try:
        assert formats.detect([{"later": True}]) is later
    finally:
        del formats._registered[later.name]
        formats._in_order[0] = ((), False)
    with pytest.raises(toolmend.InvalidMessageError):
        formats.detect([{"later": True}])


_VALUES = {
    "role": st.sampled_from(["assistant", "tool", "function", "user", "model", "system", 3]),
    "content": st.sampled_from(
        [
            None,
            "",
            "text",
            [],
            [{"type": "text", "text": "x"}],
            [{"type": "input_text"}],
            [{"type": "tool_use", "id": "t"}],
            [{"toolUse": {}}],
            [{"text": "x"}],
            0,
        ]
    ),
    "name": st.sampled_from(["f", None]),
    "tool_calls": st.sampled_from([[], [{"id": "c", "type": "function"}], None]),
    "tool_call_id": st.sampled_from(["c", ""]),
    "type": st.sampled_from(["message", "function_call", "text"]),
    "call_id": st.just("c"),
    "parts": st.just([{"text": "x"}]),
}


@settings(max_examples=400, deadline=None)
@given(message=st.fixed_dictionaries({}, optional=_VALUES))
def test_a_chat_only_message_is_claimed_by_the_chat_format_alone(
    message: dict[str, object],
) -> None:
    """Detection takes such a message as Chat Completions without asking each format (while
    no other format is registered): every built-in format's ``claims`` must agree."""
    built_in = [formats.get(name) for name in formats._BUILT_IN]
    claimed = [module.name for module in built_in if module.claims(message)]
    if formats._chat_only(message):
        assert claimed == ["openai"]


def test_detection_asks_each_format_while_another_is_registered() -> None:
    formats.detect([{"role": "tool", "tool_call_id": "c", "content": "ok"}])
    modules, built_in_only = formats._in_order[0]
    assert toy_format.NAME in {module.name for module in modules} and not built_in_only
