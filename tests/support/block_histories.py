"""Hypothesis strategies for Anthropic, Gemini and Bedrock histories, valid and damaged.

The OpenAI strategies in :mod:`support.histories` already model how real conversations look and how
they break; these strategies convert those conversations into each block format, so the same
shapes (parallel calls, results in any order, interleaved users, trimmed heads, duplicates,
stubs) show up in every format. On top of the converted OpenAI damage come the breakages only
block formats have: text before the results in one message, a response named after the opaque
call id (seed 003), binary parts beside function responses, empty text blocks, incomplete
thinking blocks.

Everything is plain data; no toolmend import.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from support.histories import STUB_CONTENT, History, apply_damage, valid_conversations

__all__ = [
    "BLOCK_DAMAGE",
    "FORMATS",
    "block_content_strings",
    "convert",
    "damaged_block_histories",
    "valid_block_histories",
]

FORMATS = ("anthropic", "gemini", "bedrock")

PAIRS: list[tuple[str, str, dict[str, bool]]] = [
    ("anthropic", "anthropic", {}),
    ("anthropic", "anthropic-thinking", {"thinking": True}),
    ("gemini", "gemini", {}),
    ("gemini", "gemini", {"camel": False, "ids": True}),
    ("gemini", "gemini-3", {"ids": True, "signed": True}),
    ("gemini", "gemini-no-ids", {}),
    ("bedrock", "bedrock", {}),
]
"""(format, the provider its valid histories are meant for, conversion options): the cases the
block-format property tests run."""


def pair_ids(pairs: list[tuple[str, str, dict[str, bool]]]) -> list[str]:
    """Test ids for ``pairs``: format, provider and the options that are on."""
    return [f"{f}-{p}-{'-'.join(k for k, v in o.items() if v) or 'plain'}" for f, p, o in pairs]


# OpenAI damage that survives conversion (shape-only damage like a dropped ``type`` does not).
_OPENAI_DAMAGE = (
    "drop_call_message",
    "drop_result",
    "truncate_head",
    "truncate_tail",
    "interleave_user",
    "split_assistant",
    "duplicate_result",
    "stub_then_real",
    "move_result",
    "null_content",
)


def _arguments(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") or call
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            return {"raw": arguments}
        return parsed if isinstance(parsed, dict) else {"value": parsed}
    return dict(arguments) if isinstance(arguments, dict) else {}


def _name(call: dict[str, Any]) -> str:
    function = call.get("function") or call
    return str(function.get("name") or "tool")


def _groups(history: History) -> list[tuple[str, list[dict[str, Any]]]]:
    """``(role, messages)``: each run of tool messages becomes one group, others stand alone."""
    out: list[tuple[str, list[dict[str, Any]]]] = []
    for message in history:
        role = message.get("role")
        if role == "system":
            continue
        if role == "tool" and out and out[-1][0] == "tool":
            out[-1][1].append(message)
        else:
            out.append((str(role), [message]))
    return out


def _names_by_id(history: History) -> dict[str, str]:
    names: dict[str, str] = {}
    for message in history:
        for call in message.get("tool_calls") or []:
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                names[call["id"]] = _name(call)
    return names


def to_anthropic(history: History, *, thinking: bool = False) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for role, group in _groups(history):
        message = group[0]
        if role == "tool":
            blocks: list[dict[str, Any]] = []
            for tool in group:
                block = {"type": "tool_result", "content": tool.get("content") or ""}
                if "tool_call_id" in tool:
                    block["tool_use_id"] = tool["tool_call_id"]
                blocks.append(block)
            out.append({"role": "user", "content": blocks})
        elif role == "assistant":
            content: list[dict[str, Any]] = []
            if thinking:
                reasoning = message.get("reasoning_content") or "thinking it over"
                content.append({"type": "thinking", "thinking": reasoning, "signature": "c2ln"})
            text = message.get("content")
            if text:
                content.append({"type": "text", "text": text})
            for call in message.get("tool_calls") or []:
                content.append(
                    {
                        "type": "tool_use",
                        "id": call.get("id"),
                        "name": _name(call),
                        "input": _arguments(call),
                    }
                )
            if content == [] or (thinking and len(content) == 1):
                out.append({"role": "assistant", "content": text if text is not None else ""})
            else:
                out.append({"role": "assistant", "content": content})
        else:
            out.append({"role": "user", "content": message.get("content") or ""})
    return out


def to_gemini(
    history: History, *, camel: bool = True, ids: bool = False, signed: bool = False
) -> list[dict[str, Any]]:
    call_key = "functionCall" if camel else "function_call"
    signature_key = "thoughtSignature" if camel else "thought_signature"
    response_key = "functionResponse" if camel else "function_response"
    names: dict[str, str] = {}  # call id -> the name of the latest call with that id so far
    out: list[dict[str, Any]] = []
    for role, group in _groups(history):
        message = group[0]
        names.update(_names_by_id(group) if role == "assistant" else {})
        if role == "tool":
            parts = []
            for tool in group:
                response: dict[str, Any] = {
                    "name": names.get(tool.get("tool_call_id") or "", "tool"),
                    "response": {"result": tool.get("content") or ""},
                }
                if ids and tool.get("tool_call_id"):
                    response["id"] = tool["tool_call_id"]
                parts.append({response_key: response})
            out.append({"role": "user", "parts": parts})
        elif role == "assistant":
            parts = []
            text = message.get("content")
            if text:
                parts.append({"text": text})
            for position, call in enumerate(message.get("tool_calls") or []):
                function_call: dict[str, Any] = {"name": _name(call), "args": _arguments(call)}
                if ids and call.get("id"):
                    function_call["id"] = call["id"]
                part: dict[str, Any] = {call_key: function_call}
                if signed and position == 0:
                    part[signature_key] = "c2lnbmF0dXJl"
                parts.append(part)
            out.append({"role": "model", "parts": parts})
        else:
            out.append({"role": "user", "parts": [{"text": message.get("content") or ""}]})
    return out


def to_bedrock(history: History) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for role, group in _groups(history):
        message = group[0]
        if role == "tool":
            blocks = []
            for tool in group:
                result: dict[str, Any] = {
                    "content": [{"text": tool.get("content") or ""}],
                    "status": "success",
                }
                if "tool_call_id" in tool:
                    result["toolUseId"] = tool["tool_call_id"]
                blocks.append({"toolResult": result})
            out.append({"role": "user", "content": blocks})
        elif role == "assistant":
            content: list[dict[str, Any]] = []
            text = message.get("content")
            if text:
                content.append({"text": text})
            for call in message.get("tool_calls") or []:
                use = {"toolUseId": call.get("id"), "name": _name(call), "input": _arguments(call)}
                content.append({"toolUse": use})
            out.append({"role": "assistant", "content": content})
        else:
            out.append({"role": "user", "content": [{"text": message.get("content") or ""}]})
    return out


def convert(history: History, format: str, **options: Any) -> list[dict[str, Any]]:
    """An OpenAI history in ``format`` (``anthropic``, ``gemini`` or ``bedrock``)."""
    if format == "anthropic":
        return to_anthropic(history, **options)
    if format == "gemini":
        return to_gemini(history, **options)
    return to_bedrock(history)


# --- block-only damage --------------------------------------------------------------------------


def _result_messages(history: list[dict[str, Any]], format: str) -> list[int]:
    key = {"anthropic": "content", "gemini": "parts", "bedrock": "content"}[format]
    found = []
    for index, message in enumerate(history):
        blocks = message.get(key)
        if isinstance(blocks, list) and any(_is_result(block, format) for block in blocks):
            found.append(index)
    return found


def _is_result(block: Any, format: str) -> bool:
    if not isinstance(block, dict):
        return False
    if format == "anthropic":
        return block.get("type") == "tool_result"
    if format == "gemini":
        return "functionResponse" in block or "function_response" in block
    return "toolResult" in block


def _text_block(format: str, text: str) -> dict[str, Any]:
    return {"type": "text", "text": text} if format == "anthropic" else {"text": text}


def text_before_results(history: list[dict[str, Any]], format: str, rnd: random.Random) -> Any:
    """A user typed while the tools ran and the client put the text first in the message."""
    found = _result_messages(history, format)
    if not found:
        return history
    out = copy.deepcopy(history)
    key = "parts" if format == "gemini" else "content"
    index = rnd.choice(found)
    text = f"typed meanwhile {rnd.randrange(10**6)}"
    out[index][key].insert(0, _text_block(format, text))
    return out


def opaque_response_name(history: list[dict[str, Any]], format: str, rnd: random.Random) -> Any:
    """Gemini (seed 003): a response named after the opaque call id, or not named at all."""
    if format != "gemini":
        return history
    found = _result_messages(history, format)
    if not found:
        return history
    out = copy.deepcopy(history)
    parts = out[rnd.choice(found)]["parts"]
    part = rnd.choice([p for p in parts if _is_result(p, format)])
    response = part.get("functionResponse") or part.get("function_response")
    response["name"] = rnd.choice(["call_1073557", ""])
    return out


def sibling_media(history: list[dict[str, Any]], format: str, rnd: random.Random) -> Any:
    """Gemini: a tool returned an image and the client put it beside the responses."""
    if format != "gemini":
        return history
    found = _result_messages(history, format)
    if not found:
        return history
    out = copy.deepcopy(history)
    out[rnd.choice(found)]["parts"].append(
        {"inlineData": {"mimeType": "image/png", "data": f"aW1n{rnd.randrange(100)}"}}
    )
    return out


def empty_text(history: list[dict[str, Any]], format: str, rnd: random.Random) -> Any:
    """A streaming client stored an empty text block next to the calls."""
    key = "parts" if format == "gemini" else "content"
    candidates = [
        i
        for i, m in enumerate(history)
        if m.get("role") in ("assistant", "model") and isinstance(m.get(key), list) and m[key]
    ]
    if not candidates:
        return history
    out = copy.deepcopy(history)
    out[rnd.choice(candidates)][key].insert(0, _text_block(format, ""))
    return out


def unsigned_thinking(history: list[dict[str, Any]], format: str, rnd: random.Random) -> Any:
    """Anthropic: a thinking block stored without its signature."""
    if format != "anthropic":
        return history
    candidates = [
        (i, j)
        for i, m in enumerate(history)
        if isinstance(m.get("content"), list)
        for j, block in enumerate(m["content"])
        if block.get("type") == "thinking" and "signature" in block
    ]
    if not candidates:
        return history
    out = copy.deepcopy(history)
    i, j = rnd.choice(candidates)
    del out[i]["content"][j]["signature"]
    return out


def merge_same_role(history: list[dict[str, Any]], format: str, rnd: random.Random) -> Any:
    """Two neighbouring messages of the same role stored as one, as clients that coalesce
    turns do (results and the user's next words in one message, a split assistant rejoined)."""
    key = "parts" if format == "gemini" else "content"
    candidates = [
        i for i in range(len(history) - 1) if history[i].get("role") == history[i + 1].get("role")
    ]
    if not candidates:
        return history
    i = rnd.choice(candidates)
    out = copy.deepcopy(history)
    second = out.pop(i + 1)
    out[i][key] = _as_blocks(out[i].get(key), format) + _as_blocks(second.get(key), format)
    return out


def _as_blocks(content: Any, format: str) -> list[Any]:
    if isinstance(content, list):
        return content
    return [_text_block(format, content)] if isinstance(content, str) and content else []


BlockDamage = Callable[[list[dict[str, Any]], str, random.Random], Any]
BLOCK_DAMAGE: dict[str, BlockDamage] = {
    op.__name__: op
    for op in (
        text_before_results,
        opaque_response_name,
        sibling_media,
        empty_text,
        unsigned_thinking,
        merge_same_role,
    )
}


@st.composite
def _valid(draw: st.DrawFn, format: str, options: dict[str, Any]) -> list[dict[str, Any]]:
    history = draw(valid_conversations(id_style="openai", reasoning=bool(options.get("thinking"))))
    return convert(history, format, **options)


def valid_block_histories(format: str, **options: Any) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Histories the format's provider accepts as they are (unique ids, every call answered)."""
    return _valid(format, options)


@st.composite
def _damaged(
    draw: st.DrawFn, format: str, options: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[str]]:
    names = draw(st.lists(st.sampled_from(_OPENAI_DAMAGE), max_size=3))
    extra = draw(st.lists(st.sampled_from(sorted(BLOCK_DAMAGE)), max_size=2))
    seed = draw(st.integers(min_value=0, max_value=2**32 - 1))
    id_style = draw(st.sampled_from(["openai", "reused"]))
    original = draw(valid_conversations(id_style=id_style, reasoning=bool(options.get("thinking"))))
    rnd = random.Random(seed)
    damaged, applied = apply_damage(original, names, rnd)
    history = convert(damaged, format, **options)
    for name in extra:
        changed = BLOCK_DAMAGE[name](history, format, rnd)
        if changed is not history:
            applied.append(name)
            history = changed
    return history, applied


def damaged_block_histories(
    format: str, **options: Any
) -> st.SearchStrategy[tuple[list[dict[str, Any]], list[str]]]:
    """``(history, damage applied)``: converted OpenAI damage plus block-only damage."""
    return _damaged(format, options)


def block_content_strings(history: list[dict[str, Any]], format: str) -> set[str]:
    """Every user text, assistant text and tool result text (thinking and stubs left out)."""
    found: set[str] = set()
    for message in history:
        if format == "gemini":
            for part in message.get("parts") or []:
                if isinstance(part.get("text"), str) and part["text"]:
                    found.add(part["text"])
                response = part.get("functionResponse") or part.get("function_response")
                if response and isinstance(response.get("response"), dict):
                    value = response["response"].get("result")
                    if isinstance(value, str) and value:
                        found.add(value)
            continue
        content = message.get("content")
        if isinstance(content, str):
            if content.strip():
                found.add(content)
            continue
        for block in content or []:
            if format == "anthropic":
                if block.get("type") == "text" and block.get("text", "").strip():
                    found.add(block["text"])
                elif block.get("type") == "tool_result" and isinstance(block.get("content"), str):
                    found.add(block["content"])
            elif "text" in block and isinstance(block["text"], str) and block["text"].strip():
                found.add(block["text"])
            elif "toolResult" in block:
                for part in block["toolResult"].get("content") or []:
                    if isinstance(part.get("text"), str) and part["text"]:
                        found.add(part["text"])
    return found - {STUB_CONTENT, ""}
