"""Which provider errors the rescue retries, held to the providers' own words.

``tests/data/provider_errors.json`` holds real error messages (each with its provider, status
and the public page it was copied from; the research note is
``/work/shared/provider-rules/errors-rescue.md``): 400s about the history's tool calls, some the
text of a rule toolmend holds and some of rules it does not model yet, and errors no rewritten
history can cure (context length, content policy, authentication, billing, tool definitions,
tools unsupported, a failed generation, image limits, unrelated parameters). Every one must be
classified as the file says by :func:`toolmend._error_texts.about_tool_history` and by
:func:`toolmend.rescue`, and every profile rule's own error text must name its rule.

The hostile cases (a megabyte of text, a text made of template pieces over and over, control
characters) are held by counting the Python lines executed, as ``tests/test_bounds.py`` does:
never by a clock.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import toolmend
from toolmend import _error_texts
from toolmend._error_texts import MAX_TEXT, about_tool_history, known_rules, quoted_ids
from toolmend.profiles import PROFILES

from support.line_count import lines_executed

DATA = Path(__file__).resolve().parent / "data" / "provider_errors.json"
ERRORS: list[dict[str, Any]] = json.loads(DATA.read_text(encoding="utf-8"))["errors"]

FAMILIES = {
    "openai",
    "azure",
    "anthropic",
    "gemini",
    "bedrock",
    "mistral",
    "deepseek",
    "groq",
    "vllm",
    "ollama",
}
"""The providers the data file must speak for (issue 34: every hook's provider)."""

RESULT = "RESULT-PARIS 21 C"
"""The content of the one tool result in :data:`HISTORIES` (looked for in every retry)."""

HISTORIES: dict[str, list[dict[str, Any]]] = {
    "openai": [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "a1b2c3d4e",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "a1b2c3d4e", "content": RESULT},
        {"role": "assistant", "content": "It is 21 C."},
        {"role": "user", "content": "And Rome?"},
    ],
    "openai-responses": [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "type": "function_call",
            "call_id": "call_a1b2c3d4e",
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
        },
        {"type": "function_call_output", "call_id": "call_a1b2c3d4e", "output": RESULT},
        {"role": "assistant", "content": "It is 21 C."},
        {"role": "user", "content": "And Rome?"},
    ],
    "anthropic": [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {}}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_01A", "content": RESULT}],
        },
        {"role": "assistant", "content": "It is 21 C."},
        {"role": "user", "content": "And Rome?"},
    ],
    "gemini": [
        {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {}}}]},
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "get_weather", "response": {"r": RESULT}}}],
        },
        {"role": "model", "parts": [{"text": "It is 21 C."}]},
        {"role": "user", "parts": [{"text": "And Rome?"}]},
    ],
    "bedrock": [
        {"role": "user", "content": [{"text": "Weather in Paris?"}]},
        {
            "role": "assistant",
            "content": [
                {"toolUse": {"toolUseId": "tooluse_01A", "name": "get_weather", "input": {}}}
            ],
        },
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": "tooluse_01A", "content": [{"text": RESULT}]}}
            ],
        },
        {"role": "assistant", "content": [{"text": "It is 21 C."}]},
        {"role": "user", "content": [{"text": "And Rome?"}]},
    ],
}
"""One intact tool exchange in each layout the hooks send."""

HOOK_PROVIDER = {
    # the data file's provider -> (the provider a hook holds the history to, its layout)
    "openai": ("openai", "openai"),
    "azure": ("openai", "openai"),
    "openai-responses": ("openai-responses", "openai-responses"),
    "anthropic": ("anthropic", "anthropic"),
    "gemini": ("gemini", "gemini"),
    "bedrock": ("bedrock", "bedrock"),
    "mistral": ("mistral", "openai"),
    "deepseek": ("deepseek", "openai"),
    "groq": ("groq", "openai"),
    "vllm": ("vllm", "openai"),
    "ollama": ("ollama", "openai"),
}


def _label(entry: dict[str, Any]) -> str:
    return f"{entry['provider']}-{entry['kind']}-{entry['text'][:40]}"


def _sent(provider: str) -> list[Any]:
    """What a hook sends for ``provider``: the history of its layout after toolmend's repair."""
    hook, layout = HOOK_PROVIDER[provider]
    return list(toolmend.repair(copy.deepcopy(HISTORIES[layout]), provider=hook).messages)


# --- the data file ------------------------------------------------------------------------


def test_the_data_file_is_complete_and_sourced() -> None:
    assert len(ERRORS) >= 40
    for entry in ERRORS:
        assert set(entry) >= {"provider", "status", "kind", "retry", "text", "source"}, entry
        assert entry["kind"] in ("tool_history", "not_tool"), entry
        assert entry["retry"] is (entry["kind"] == "tool_history"), entry
        assert entry["source"].startswith("https://"), entry
        assert entry["provider"] in HOOK_PROVIDER, entry
        assert entry["text"].strip() == entry["text"] and entry["text"], entry
    providers = {entry["provider"] for entry in ERRORS}
    assert providers >= FAMILIES, FAMILIES - providers
    history = [e for e in ERRORS if e["kind"] == "tool_history"]
    assert {e["provider"] for e in history} >= FAMILIES - {"azure", "groq"}
    assert sum(1 for e in history if e["known_rule"] is None) >= 6  # the flattened path fires
    codes = {code for p in PROFILES.values() for code in {**p.checks, **p.strict_checks}}
    assert {e["known_rule"] for e in history} - {None} <= codes


NOT_TOOL_KINDS = {
    "context length": r"context length|too long|token count",
    "content policy": r"content management policy",
    "authentication": r"API key",
    "billing": r"credit balance",
    "tool definition": r"tools[.\[]\d|function_declarations",
    "tools unsupported": r"does not support tools|doesn't support tool use",
    "failed generation": r"Failed to call a function",
    "unrelated parameter": r"temperature|max_tokens",
    "image": r"image",
}
"""What the negative texts must cover (issue 34: match narrowly, test with the real texts)."""


@pytest.mark.parametrize("kind", sorted(NOT_TOOL_KINDS))
def test_the_negative_texts_cover(kind: str) -> None:
    pattern = re.compile(NOT_TOOL_KINDS[kind])
    assert any(pattern.search(e["text"]) for e in ERRORS if e["kind"] == "not_tool"), kind


# --- every text classified as the file says ----------------------------------------------


@pytest.mark.parametrize("entry", ERRORS, ids=_label)
def test_about_tool_history_agrees_with_the_file(entry: dict[str, Any]) -> None:
    assert about_tool_history(entry["text"]) is entry["retry"], entry


@pytest.mark.parametrize("entry", [e for e in ERRORS if e["kind"] == "tool_history"], ids=_label)
def test_known_rules_name_the_rule_or_none(entry: dict[str, Any]) -> None:
    codes = [rule.code for rule in known_rules(entry["text"])]
    if entry["known_rule"] is None:
        assert codes == [], f"names {codes}: a rule toolmend models? update the data file"
    else:
        assert entry["known_rule"] in codes, codes


@pytest.mark.parametrize("entry", ERRORS, ids=_label)
def test_rescue_retries_exactly_the_tool_history_texts(entry: dict[str, Any]) -> None:
    """On an intact exchange every tool-history text gets a retry that keeps the result's
    content (flattened, or the named rule's repair where the exchange breaks it); every other
    text, none."""
    hook, _ = HOOK_PROVIDER[entry["provider"]]
    sent = _sent(entry["provider"])
    before = copy.deepcopy(sent)
    retry = toolmend.rescue(sent, entry["text"], provider=hook)
    assert sent == before  # the caller's history untouched
    if entry["kind"] == "not_tool":
        assert retry is None
        return
    assert retry is not None
    if entry["known_rule"] is None:
        assert retry.rule == "flattened", retry
    else:  # repaired by the rule when the exchange breaks it (no reasoning_content), else flattened
        assert retry.rule in ("flattened", entry["known_rule"]), retry
    assert retry.messages is not sent
    written = json.dumps(retry.messages, ensure_ascii=False)
    assert RESULT in written
    assert "get_weather" in written  # the call's name is kept
    assert retry.error == entry["text"][:MAX_TEXT]


def test_a_known_rule_the_history_breaks_is_repaired_not_flattened() -> None:
    """The known-rule path on a real text: Anthropic's missing-result 400 quoting the call id,
    for a history sent as OpenAI chat to an endpoint that turned out to be Anthropic's."""
    history = copy.deepcopy(HISTORIES["openai"])
    del history[2]  # the call's result is gone
    text = next(
        e["text"]
        for e in ERRORS
        if e.get("known_rule") == "missing_result" and "tool_use" in e["text"]
    )
    retry = toolmend.rescue(history, text.replace("toolu_0149kv381HwhRc32JpgU6y4Y", "a1b2c3d4e"))
    assert retry is not None
    assert (retry.rule, retry.profile) == ("missing_result", "anthropic")
    assert toolmend.check(retry.messages, provider="openai") == []


# --- every rule's own text names its rule -------------------------------------------------


SAMPLE_FIELDS = {
    "index": "3",
    "slot": "0",
    "id": "call_abc123",
    "ids": "call_abc123, call_def456",
    "length": "72",
    "role": "user",
    "prev": "tool",
    "name": "get_weather",
    "property": "name",
    "position": "4",
    "first": "2",
}

NO_TEXT = {
    # (profile, code) -> why its rule carries no error text
    ("deepseek", "unknown_result_id"): "DeepSeek pairs results by count: no id is refused",
    ("deepseek-reasoner", "unknown_result_id"): "as deepseek",
}


class _Fields(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return SAMPLE_FIELDS.get(key, "x")


RULES = [
    (name, code, rule.error.strip())
    for name, profile in PROFILES.items()
    for code, rule in {**profile.checks, **profile.strict_checks}.items()
]


@pytest.mark.parametrize(("profile", "code", "text"), RULES, ids=[f"{p}-{c}" for p, c, _ in RULES])
def test_every_rule_text_names_its_own_rule(profile: str, code: str, text: str) -> None:
    if not text:
        assert (profile, code) in NO_TEXT
        return
    if text in _error_texts._GENERIC:
        return  # too generic to name one rule: held by test_generic_texts_say_why
    rendered = text.format_map(_Fields())
    named = [(rule.code, rule.profile) for rule in known_rules(rendered)]
    assert code in [c for c, _ in named], (rendered, named)
    assert about_tool_history(rendered), rendered  # a rule toolmend knows is always retried


def test_generic_texts_say_why() -> None:
    """Every text left out of the matching is a real rule's and carries its reason beside it."""
    source = Path(_error_texts.__file__).read_text(encoding="utf-8")
    block = source[source.index("_GENERIC = frozenset(") :]
    block = block[: block.index("\n)")]
    texts = {rule.error.strip() for p in PROFILES.values() for rule in p.checks.values()}
    texts |= {rule.error.strip() for p in PROFILES.values() for rule in p.strict_checks.values()}
    for text in _error_texts._GENERIC:
        assert text in texts, f"{text!r} is no rule's text"
        line = next(
            line for line in block.splitlines() if json.dumps(text)[1:-1] in line or text in line
        )
        assert "#" in line, f"{text!r} needs its reason"


# --- hostile texts cost about linear work -------------------------------------------------


PIECES = (
    "messages.3.content.0: unexpected `tool_use_id` found in `tool_result` blocks: a1b2c3d4e. "
    "Invalid 'messages[1].tool_calls[0].function.name': "
    "Please ensure that the number of function response parts "
    "'messages.1' : for 'role:tool' the following must be satisfied[("
)
"""Opening pieces of many rules, none finished: every rule's first piece is found again and
again and each try fails further on."""

HOSTILE: dict[str, Callable[[int], str]] = {
    "template pieces": lambda size: (PIECES * (size // len(PIECES) + 1))[:size],
    "control characters": lambda size: ("\x00\x1b[31m\r\n\t tool_call \x7f" * size)[:size],
    "one long token": lambda size: "a1b2c3d4e" + "x" * (size - 9),
    "ids and spaces": lambda size: ("a1b2c3d4e " * size)[:size],
}


def _read_everything(text: str) -> None:
    about_tool_history(text)
    known_rules(text)
    quoted_ids(text, {"a1b2c3d4e": None})
    toolmend.rescue(_sent("openai"), text, provider="openai")


@pytest.mark.parametrize("shape", sorted(HOSTILE))
def test_hostile_error_texts_cost_about_linear_work(shape: str) -> None:
    build = HOSTILE[shape]
    _read_everything(build(64))  # caches warmed
    small = lines_executed(lambda: _read_everything(build(MAX_TEXT // 4)))
    full = lines_executed(lambda: _read_everything(build(MAX_TEXT)))
    huge = lines_executed(lambda: _read_everything(build(1 << 20)))
    assert full < 6 * small, (shape, small, full)  # linear: about 4x for 4x the text
    assert huge < 1.5 * full, (shape, full, huge)  # a megabyte costs what its first 4 KB cost


def test_only_the_first_max_text_characters_are_read() -> None:
    """The bound behind the counts above: what lies past :data:`MAX_TEXT` is never read, so a
    megabyte of error costs what 4 KB costs in the C searches the line count cannot see."""
    tail = next(e["text"] for e in ERRORS if e.get("known_rule") == "missing_result")
    text = " " * MAX_TEXT + tail + " x" * 500_000
    assert about_tool_history(tail) and known_rules(tail)
    assert not about_tool_history(text)
    assert known_rules(text) == []
    assert quoted_ids(" " * MAX_TEXT + "a1b2c3d4e", {"a1b2c3d4e": None}) == []
    assert toolmend.rescue(_sent("openai"), text, provider="openai") is None
    retry = toolmend.rescue(_sent("openai"), tail + "\x00" * (1 << 20), provider="openai")
    assert retry is not None and len(retry.error) == MAX_TEXT


# --- the message the hooks read off the SDKs' exceptions ----------------------------------


def _litellm_error(provider: str, text: str) -> BaseException:
    """The error LiteLLM raises for a 400 from Anthropic or Gemini: the provider's JSON body
    written into its text, no ``body`` kept (``/work/shared/research/rescue.md``)."""
    import litellm

    envelope: dict[str, Any] = (
        {"type": "error", "error": {"type": "invalid_request_error", "message": text}}
        if provider == "anthropic"
        else {"error": {"code": 400, "message": text, "status": "INVALID_ARGUMENT"}}
    )
    prefix = "AnthropicException" if provider == "anthropic" else "GeminiException BadRequestError"
    error: BaseException = litellm.exceptions.BadRequestError(
        message=f"{prefix} - {json.dumps(envelope)}", model="m", llm_provider=provider
    )
    return error


def _botocore_error(text: str) -> BaseException:
    """What boto3's ``bedrock-runtime`` client (and langchain-aws through it) raises for 400."""
    from botocore.exceptions import ClientError

    return ClientError(
        {
            "Error": {"Code": "ValidationException", "Message": text},
            "ResponseMetadata": {"HTTPStatusCode": 400},
        },
        "Converse",
    )


@pytest.mark.parametrize(
    "entry",
    [e for e in ERRORS if e["provider"] in ("anthropic", "gemini", "bedrock")],
    ids=_label,
)
def test_the_hooks_read_the_provider_message_off_litellm_and_boto3(entry: dict[str, Any]) -> None:
    from toolmend.integrations.rescue import provider_error

    if entry["provider"] == "bedrock":
        error = _botocore_error(entry["text"])
    else:
        error = _litellm_error(entry["provider"], entry["text"])
    assert provider_error(error) == (400, entry["text"])
    assert about_tool_history(provider_error(error)[1]) is entry["retry"]  # type: ignore[index]


WRAPPERS = (
    ("Error code: 400 - ", ""),  # openai's .message and str()
    ("400 ", " (request_id: req_011C3em6KopZ9jZICffu4G7Fgt, type: invalid_request_error)"),
    ("litellm.BadRequestError: OpenAIException - ", ""),  # LiteLLM
    ("", ". Received Model Group=claude-sonnet\nAvailable Model Group Fallbacks=None"),  # Proxy
    ("An error occurred (ValidationException) when calling the Converse operation: ", ""),
    ("API error occurred: Status 400\n", ""),  # mistralai's SDKError
    ("", " (status code: 400)"),  # ollama's ResponseError
)
"""What the SDKs and LiteLLM write around a provider's message (``/work/shared/research/
rescue.md``): a hook that reads the whole text must decide as on the message alone."""


@pytest.mark.parametrize(("before", "after"), WRAPPERS)
def test_the_sdks_wrapping_changes_no_decision(before: str, after: str) -> None:
    for entry in ERRORS:
        wrapped = before + entry["text"] + after
        assert about_tool_history(wrapped) is entry["retry"], (wrapped, entry)
        if entry.get("known_rule"):
            assert entry["known_rule"] in [rule.code for rule in known_rules(wrapped)], wrapped
