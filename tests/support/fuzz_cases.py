"""Fuzz cases for every (format, profile) pair, built from the shared history strategies.

A case is a valid conversation from :mod:`support.histories` (parallel calls, several rounds,
reasoning), damaged by its OpenAI-level ops (drop, duplicate, move, merge, split, re-id, rename,
truncate, interleave), turned into the format (:mod:`support.block_histories` converters, the
Responses and LangChain converters of their format tests), decorated with images where the format
has them, and damaged again by the format's own ops (block damage, Responses item damage). The
undamaged conversation goes through the same conversion, so each case holds a valid history and a
damaged one.

:func:`content_items` lists the real content of a history per format (user text, assistant text,
tool result text, each with its message index and call id), for the "kept or reported" property.
:data:`RUNS` counts the cases run per pair; ``tests/conftest.py`` prints the total.
"""

from __future__ import annotations

import random
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

import toolmend
from test_format_langchain import to_langchain
from test_format_openai_responses import DAMAGE as RESPONSES_DAMAGE
from test_format_openai_responses import to_items
from toolmend.profiles import PROFILES

from support.block_histories import BLOCK_DAMAGE, convert
from support.histories import OP_NAMES, STUB_CONTENT, apply_damage, valid_conversations

__all__ = [
    "BLOCK_FORMATS",
    "FORMATS",
    "NOT_SENT",
    "RUNS",
    "Case",
    "ContentItem",
    "cases",
    "content_items",
    "expected_valid",
    "pairs",
]

BLOCK_FORMATS = ("anthropic", "gemini", "bedrock")
FORMATS = ("openai", "openai-responses", "langchain", *BLOCK_FORMATS)

RUNS: Counter[tuple[str, str]] = Counter()
"""(format, provider) -> cases run in this session (printed by ``tests/conftest.py``)."""
HOSTILE_RUNS: Counter[str] = Counter()
"""format -> hostile-input cases run (``tests/test_hostile.py``)."""

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGBgAAAABQABpfZFQAAAAABJRU5ErkJggg=="
"""A 1x1 PNG, base64: the image every decorated message carries."""

# OpenAI-level damage the Responses converter can take (it needs ids and the canonical call).
_RESPONSES_SAFE = tuple(
    name for name in OP_NAMES if name not in ("drop_result_id", "malformed_call")
)


_BLOCK_PAIRING = {"anthropic": "turns", "gemini": "contents", "bedrock": "converse"}
"""A block format goes to the profiles with its provider's pairing (toolmend refuses the rest)."""

NOT_SENT = frozenset(
    ("openai-responses", name)
    for name in ("deepseek-reasoner", "mistral", "gemini", "gemini-3", "gemini-no-ids")
)
"""Responses input these providers never receive (they have no Responses API), and whose rules
need fields Responses items lack (DeepSeek's ``reasoning_content``, Mistral's prefix on a last
assistant message, Gemini's function name on each result): toolmend judges such pairs but
cannot repair them."""


def pairs() -> list[tuple[str, str]]:
    """Every (format, provider) pair a history in that format can be sent to: the message
    formats to every profile (LiteLLM and gateways take OpenAI-shaped messages anywhere), a
    block format to its own provider's profiles."""
    return [
        (format, name)
        for format in FORMATS
        for name, profile in PROFILES.items()
        if (format, name) not in NOT_SENT
        and (format not in BLOCK_FORMATS or profile.block_pairing == _BLOCK_PAIRING[format])
        # a Responses input goes to a Responses profile; a chat profile refuses it
        and (format != "openai-responses" or profile.pairing == "ordered")
    ]


@dataclass(frozen=True)
class Case:
    """One fuzz case: the valid history, the damaged one, and how it was made."""

    format: str
    valid: list[Any]
    damaged: list[Any]
    ops: tuple[str, ...]
    options: dict[str, Any]

    def __repr__(self) -> str:  # hypothesis prints this for a failing example
        return (
            f"Case(format={self.format!r}, ops={self.ops}, options={self.options},\n"
            f"  valid={self.valid!r},\n  damaged={self.damaged!r})"
        )


def _wants_image(text: Any) -> bool:
    """Deterministic by text, so the valid and the damaged history get the same images."""
    return isinstance(text, str) and bool(text) and zlib.crc32(text.encode()) % 2 == 0


def _openai_images(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for message in history:
        text = message.get("content")
        if message.get("role") == "user" and _wants_image(text):
            image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
            message = {**message, "content": [{"type": "text", "text": text}, image]}
        out.append(message)
    return out


def _native_images(history: list[dict[str, Any]], format: str, camel: bool) -> list[dict[str, Any]]:
    """Images in the format's own shape, in user messages and (Anthropic, Bedrock) in results."""
    out = []
    for message in history:
        role = message.get("role")
        if format == "openai-responses":
            text = message.get("content")
            if isinstance(text, list) and len(text) == 1 and text[0].get("type") == "input_text":
                text = text[0]["text"]
            if role == "user" and message.get("type") is None and _wants_image(text):
                image = {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"}
                message = {**message, "content": [{"type": "input_text", "text": text}, image]}
        elif format == "gemini":
            parts = message.get("parts") or []
            if role == "user" and any(_wants_image(p.get("text")) for p in parts):
                data = (
                    {"inlineData": {"mimeType": "image/png", "data": PNG}}
                    if camel
                    else {"inline_data": {"mime_type": "image/png", "data": PNG}}
                )
                message = {**message, "parts": [*parts, data]}
        elif format == "anthropic" and role == "user":
            message = {**message, "content": _anthropic_images(message.get("content"))}
        elif format == "bedrock" and role == "user":
            message = {**message, "content": [_bedrock_images(b) for b in message["content"]]}
            if any(_wants_image(b.get("text")) for b in message["content"]):
                message["content"].append({"image": {"format": "png", "source": {"bytes": PNG}}})
        out.append(message)
    return out


def _anthropic_image() -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}


def _anthropic_images(content: Any) -> Any:
    if isinstance(content, str):
        return (
            [{"type": "text", "text": content}, _anthropic_image()]
            if _wants_image(content)
            else content
        )
    blocks = []
    for block in content:
        inner = block.get("content") if block.get("type") == "tool_result" else None
        if _wants_image(inner):
            block = {**block, "content": [{"type": "text", "text": inner}, _anthropic_image()]}
        blocks.append(block)
    return blocks


def _bedrock_images(block: dict[str, Any]) -> dict[str, Any]:
    result = block.get("toolResult")
    if result is None:
        return block
    parts = result.get("content") or []
    if any(_wants_image(p.get("text")) for p in parts):
        image = {"image": {"format": "png", "source": {"bytes": PNG}}}
        return {"toolResult": {**result, "content": [*parts, image]}}
    return block


def _native(history: list[dict[str, Any]], format: str, options: dict[str, Any]) -> list[Any]:
    if format == "openai":
        return _openai_images(history) if options["images"] else history
    if format == "langchain":
        return to_langchain(_openai_images(history) if options["images"] else history)
    if format == "openai-responses":
        items = to_items(history, reasoning=options["reasoning"], typed=options["typed"])
    else:
        items = convert(history, format, **options["convert"])
    if options["images"]:
        items = _native_images(items, format, options["convert"].get("camel", True))
    return items


@st.composite
def _cases(draw: st.DrawFn, format: str) -> Case:
    # Ops and seed first (see ``histories._damaged``: later draws shrink towards the simplest).
    names = draw(st.lists(st.sampled_from(_op_names(format)), max_size=3))
    native_ops: list[str]
    if format in BLOCK_FORMATS:
        native_ops = draw(st.lists(st.sampled_from(sorted(BLOCK_DAMAGE)), max_size=2))
    elif format == "openai-responses":
        native_ops = draw(
            st.lists(st.sampled_from([op.__name__ for op in RESPONSES_DAMAGE]), max_size=2)
        )
    else:
        native_ops = []
    seed = draw(st.integers(min_value=0, max_value=2**32 - 1))
    options = _options(draw, format)
    id_style = draw(st.sampled_from(["openai", "reused"] if format in BLOCK_FORMATS else ["any"]))
    reasoning = options["reasoning"] or options["convert"].get("thinking", False)
    original = draw(valid_conversations(id_style=id_style, reasoning=reasoning))
    rnd = random.Random(seed)
    damaged_openai, applied = apply_damage(original, names, rnd)
    valid = _native(original, format, options)
    damaged = _native(damaged_openai, format, options)
    for name in native_ops:
        changed = _native_op(format, name)(damaged, rnd)
        if changed is not damaged and changed != damaged:
            applied.append(name)
            damaged = changed
    if not applied:
        damaged = valid  # no damage applied: the same object as the valid history
    return Case(format, valid, damaged, tuple(applied), options)


def _op_names(format: str) -> tuple[str, ...]:
    return _RESPONSES_SAFE if format == "openai-responses" else OP_NAMES


def _native_op(format: str, name: str) -> Callable[[list[Any], random.Random], list[Any]]:
    if format in BLOCK_FORMATS:
        op = BLOCK_DAMAGE[name]
        return lambda history, rnd: op(history, format, rnd)
    return next(op for op in RESPONSES_DAMAGE if op.__name__ == name)


def _options(draw: st.DrawFn, format: str) -> dict[str, Any]:
    convert: dict[str, Any] = {}
    if format == "anthropic":
        convert = {"thinking": draw(st.booleans())}
    elif format == "gemini":
        convert = {"camel": draw(st.booleans()), "ids": draw(st.booleans())}
        convert["signed"] = draw(st.booleans())
    return {
        "images": draw(st.booleans()),
        "reasoning": format in ("openai", "langchain", "openai-responses") and draw(st.booleans()),
        "typed": format == "openai-responses" and draw(st.booleans()),
        "convert": convert,
    }


def cases(format: str) -> st.SearchStrategy[Case]:
    """Strategy for fuzz cases in ``format`` (see the module docstring)."""
    return _cases(format)


def expected_valid(case: Case, provider: str) -> bool:
    """Whether the valid history must pass ``provider`` as it is: the format's own provider,
    with the options that provider needs."""
    convert = case.options["convert"]
    return {
        "openai": case.format in ("openai", "langchain"),
        "openai-responses": case.format == "openai-responses",
        # with thinking off, the final assistant message may hold no thinking block
        "anthropic": case.format == "anthropic" and not _reused(case) and not _thinks_last(case),
        "anthropic-thinking": case.format == "anthropic"
        and convert.get("thinking", False)
        and not _reused(case),
        "gemini": case.format == "gemini",
        "gemini-3": case.format == "gemini" and convert.get("signed", False),
        "gemini-no-ids": case.format == "gemini" and not convert.get("ids", False),
        "bedrock": case.format == "bedrock",
    }.get(provider, False)


def _thinks_last(case: Case) -> bool:
    """The history ends on an assistant message holding a thinking block (Anthropic)."""
    last = case.valid[-1] if case.valid else None
    content = last.get("content") if isinstance(last, dict) else None
    return (
        isinstance(last, dict)
        and last.get("role") == "assistant"
        and isinstance(content, list)
        and any(
            isinstance(block, dict) and block.get("type") in ("thinking", "redacted_thinking")
            for block in content
        )
    )


def _reused(case: Case) -> bool:
    """Ids restarted every round (``call_0``): Anthropic wants them unique in the request."""
    seen: set[str] = set()
    for item in content_calls(case.valid, case.format):
        if item in seen:
            return True
        seen.add(item)
    return False


# --- what a history holds ---------------------------------------------------------------------


@dataclass(frozen=True)
class ContentItem:
    """One piece of real content: ``kind`` is ``user``, ``assistant`` or ``result``."""

    kind: str
    index: int
    text: str
    call_id: str | None = None


_NOT_CONTENT = frozenset({"", STUB_CONTENT, toolmend.PLACEHOLDER_TEXT})


def content_items(history: Any, format: str) -> list[ContentItem]:
    """Every user text, assistant text and real tool result text of ``history``, in order
    (system text, reasoning, stubs and placeholders left out)."""
    found = [item for item in _items(history, format) if item.text.strip() not in _NOT_CONTENT]
    return found


def _texts(content: Any, text_types: tuple[str, ...] = ("text",)) -> Iterator[str]:
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                yield part
            elif isinstance(part, dict) and part.get("type", "text") in text_types:
                text = part.get("text")
                if isinstance(text, str):
                    yield text


def _items(history: Any, format: str) -> Iterator[ContentItem]:
    for index, message in enumerate(history):
        if format == "openai":
            yield from _openai_items(index, message)
        elif format == "langchain":
            yield from _langchain_items(index, message)
        elif format == "openai-responses":
            yield from _responses_items(index, message)
        elif format == "anthropic":
            yield from _anthropic_items(index, message)
        elif format == "gemini":
            yield from _gemini_items(index, message)
        else:
            yield from _bedrock_items(index, message)


def _openai_items(index: int, message: dict[str, Any]) -> Iterator[ContentItem]:
    role = message.get("role")
    kind = {"user": "user", "assistant": "assistant", "tool": "result"}.get(role or "")
    if kind is not None:
        call_id = message.get("tool_call_id") if kind == "result" else None
        for text in _texts(message.get("content")):
            yield ContentItem(kind, index, text, call_id)


def _langchain_items(index: int, message: BaseMessage) -> Iterator[ContentItem]:
    kind = (
        "user"
        if isinstance(message, HumanMessage)
        else "assistant"
        if isinstance(message, AIMessage)
        else "result"
        if isinstance(message, ToolMessage)
        else None
    )
    if kind is not None:
        call_id = message.tool_call_id if isinstance(message, ToolMessage) else None
        for text in _texts(message.content):
            yield ContentItem(kind, index, text, call_id)


def _responses_items(index: int, item: dict[str, Any]) -> Iterator[ContentItem]:
    if item.get("type") == "function_call_output":
        for text in _texts(item.get("output"), ("input_text",)):
            yield ContentItem("result", index, text, item.get("call_id"))
    elif item.get("type") in (None, "message") and item.get("role") in ("user", "assistant"):
        for text in _texts(item.get("content"), ("input_text", "output_text", "text")):
            yield ContentItem(item["role"], index, text)


def _anthropic_items(index: int, message: dict[str, Any]) -> Iterator[ContentItem]:
    role = message.get("role")
    content = message.get("content")
    if isinstance(content, str):
        yield ContentItem("assistant" if role == "assistant" else "user", index, content)
        return
    for block in content or []:
        if block.get("type") == "text":
            yield ContentItem("assistant" if role == "assistant" else "user", index, block["text"])
        elif block.get("type") == "tool_result":
            for text in _texts(block.get("content")):
                yield ContentItem("result", index, text, block.get("tool_use_id"))


def _gemini_items(index: int, content: dict[str, Any]) -> Iterator[ContentItem]:
    kind = "assistant" if content.get("role") == "model" else "user"
    for part in content.get("parts") or []:
        if isinstance(part.get("text"), str) and not part.get("thought"):
            yield ContentItem(kind, index, part["text"])
        response = part.get("functionResponse") or part.get("function_response")
        if response and isinstance(response.get("response"), dict):
            value = response["response"].get("result")
            if isinstance(value, str):
                yield ContentItem("result", index, value, response.get("id"))


def _bedrock_items(index: int, message: dict[str, Any]) -> Iterator[ContentItem]:
    kind = "assistant" if message.get("role") == "assistant" else "user"
    for block in message.get("content") or []:
        if isinstance(block.get("text"), str):
            yield ContentItem(kind, index, block["text"])
        elif "toolResult" in block:
            result = block["toolResult"]
            for part in result.get("content") or []:
                if isinstance(part.get("text"), str):
                    yield ContentItem("result", index, part["text"], result.get("toolUseId"))


def content_calls(history: Any, format: str) -> Iterator[str]:
    """The call ids of ``history`` in order (block formats only)."""
    for message in history:
        if format == "gemini":
            for part in message.get("parts") or []:
                call = part.get("functionCall") or part.get("function_call")
                if call and call.get("id"):
                    yield call["id"]
        elif isinstance(message.get("content"), list):
            for block in message["content"]:
                if block.get("type") == "tool_use":
                    yield block["id"]
                elif "toolUse" in block:
                    yield block["toolUse"]["toolUseId"]
