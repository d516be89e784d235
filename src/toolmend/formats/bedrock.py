"""AWS Bedrock Converse ``messages``: ``{"role", "content": [block, ...]}`` dicts as boto3 takes
them.

A block is a one-key dict: ``{"text"}``, ``{"image"}``, ``{"document"}``, ``{"reasoningContent"}``,
``{"cachePoint"}``, ``{"toolUse": {"toolUseId", "name", "input"}}`` or ``{"toolResult":
{"toolUseId", "content", "status"}}``. Calls and results are blocks (``slot`` is the block's
position), so the skeleton uses the block layout. Applying a plan returns the original dict for
every message it does not change and shallow copies for the changed ones; a placeholder result
carries ``"status": "error"``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..edits import AsText, Blocks, Bridge, Keep, Merge, MessageEdit, Placeholder, Plan
from ..history import (
    ASSISTANT,
    BLOCKS,
    OTHER,
    SYSTEM,
    TOOL,
    USER,
    Call,
    Defect,
    Result,
    Skeleton,
    block_kind,
)
from ..report import InvalidMessageError

__all__ = ["NAME", "apply", "call_arguments", "claims", "read", "result_text"]

NAME = "bedrock"

_BLOCK_KEYS = frozenset(
    {
        "text",
        "image",
        "document",
        "video",
        "toolUse",
        "toolResult",
        "reasoningContent",
        "cachePoint",
        "guardContent",
        "citationsContent",
    }
)
_ROLES = {USER: "user", TOOL: "user", ASSISTANT: "assistant", SYSTEM: "user", OTHER: "user"}


def claims(message: Any) -> bool:
    """Bedrock-only features: content blocks keyed by their kind, with no ``type`` field."""
    if not isinstance(message, Mapping):
        return False
    content = message.get("content")
    if not isinstance(content, list):
        return False
    for block in content:
        if isinstance(block, Mapping) and "type" not in block and block.keys() & _BLOCK_KEYS:
            return True
    return False


def read(messages: Sequence[Any]) -> Skeleton:
    """Read a Converse history into a block-layout skeleton (see :mod:`toolmend.formats`)."""
    skeleton = Skeleton(NAME, layout=BLOCKS)
    kinds, roles = skeleton.kinds, skeleton.roles
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise InvalidMessageError(index, "", "a message dict", message)
        role, content = message.get("role"), message.get("content")
        if type(role) is not str:
            raise InvalidMessageError(index, "role", "a string", role)
        roles.append(role)
        if not isinstance(content, list):
            raise InvalidMessageError(index, "content", "a list of content blocks", content)
        if len(content) == 1:
            block = content[0]
            if type(block) is dict and len(block) == 1:
                text = block.get("text")
                if type(text) is str and text and not text.isspace():
                    kinds.append(
                        ASSISTANT
                        if role == "assistant"
                        else USER
                        if role == "user"
                        else block_kind(role, False)
                    )
                    continue
        _read_blocks(skeleton, index, role, content)
    return skeleton


def _read_blocks(skeleton: Skeleton, index: int, role: str, content: Sequence[Any]) -> None:
    calls: list[Call] = []
    results: list[Result] = []
    extras: list[int] = []
    flawed = not content
    for slot, block in enumerate(content):
        if not isinstance(block, Mapping):
            raise InvalidMessageError(index, f"content[{slot}]", "a content block dict", block)
        use = block.get("toolUse")
        if use is not None:
            if not isinstance(use, Mapping):
                raise InvalidMessageError(index, f"content[{slot}].toolUse", "an object", use)
            call_id, name = use.get("toolUseId"), use.get("name")
            if call_id is not None and type(call_id) is not str:
                raise InvalidMessageError(
                    index, f"content[{slot}].toolUse.toolUseId", "a string", call_id
                )
            if name is not None and not isinstance(name, str):
                raise InvalidMessageError(index, f"content[{slot}].toolUse.name", "a string", name)
            calls.append(Call(call_id, name, slot))
            continue
        if calls:
            skeleton.mark("interleaved", index)
        result = block.get("toolResult")
        if result is not None:
            if not isinstance(result, Mapping):
                raise InvalidMessageError(index, f"content[{slot}].toolResult", "an object", result)
            result_id = result.get("toolUseId")
            if result_id is not None and type(result_id) is not str:
                raise InvalidMessageError(
                    index, f"content[{slot}].toolResult.toolUseId", "a string", result_id
                )
            results.append(Result(result_id, None, slot))
            continue
        extras.append(slot)
        if "text" in block:
            text = block["text"]
            if not isinstance(text, str) or not text or text.isspace():
                skeleton.defects.append(Defect(index, "text_blank", slot, "text"))
                flawed = True
    skeleton.kinds.append(block_kind(role, bool(results)))
    if calls:
        skeleton.calls[index] = tuple(calls)
    if results:
        skeleton.results[index] = tuple(results)
    if calls or results or flawed:
        skeleton.extras[index] = tuple(extras)


def call_arguments(message: Any, slot: int) -> Any:
    """The ``input`` of the ``toolUse`` block at ``slot`` (for the loop guard)."""
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, list) or slot >= len(content):
        return None
    use = content[slot].get("toolUse") if isinstance(content[slot], Mapping) else None
    return use.get("input") if isinstance(use, Mapping) else None


def result_text(message: Any, slot: int) -> str | None:
    """The text of the ``toolResult`` block at ``slot``."""
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, list) or slot >= len(content):
        return None
    result = content[slot].get("toolResult") if isinstance(content[slot], Mapping) else None
    if not isinstance(result, Mapping):
        return None
    return _payload_text(result.get("content"))


def _payload_text(payload: Any) -> str:
    if not isinstance(payload, list):
        return "" if payload is None else str(payload)
    texts: list[str] = []
    for part in payload:
        if isinstance(part, Mapping):
            if isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif "json" in part:
                texts.append(
                    json.dumps(part["json"], ensure_ascii=False, sort_keys=True, default=str)
                )
    return "\n".join(texts)


# --- applying a plan --------------------------------------------------------------------------


def apply(messages: Sequence[Any], plan: Plan) -> list[Any]:
    """Build the repaired list (see :mod:`toolmend.formats`)."""
    edits = plan.edits
    out: list[Any] = []
    for item in plan.items:
        if isinstance(item, Keep):
            edit = edits.get(item.index)
            message = messages[item.index]
            out.append(message if edit is None else _edited(message, edit))
        elif isinstance(item, Blocks):
            blocks = [_taken(messages, edits, part) for part in item.parts]
            out.append({"role": _ROLES[item.role], "content": blocks})
        elif isinstance(item, Placeholder):
            out.append({"role": "user", "content": [_placeholder(item)]})
        elif isinstance(item, Bridge):
            out.append({"role": _ROLES[item.role], "content": [{"text": item.text}]})
        elif isinstance(item, AsText):
            text = _render(messages, edits, item.item)
            out.append({"role": _ROLES[item.role], "content": [{"text": text}]})
        else:
            out.append(_merged(messages, edits, item))
    return out


def _placeholder(item: Placeholder) -> dict[str, Any]:
    return {
        "toolResult": {
            "toolUseId": item.call_id,
            "content": [{"text": item.text}],
            "status": "error",
        }
    }


def _edited(message: Mapping[str, Any], edit: MessageEdit) -> dict[str, Any]:
    copy = dict(message)
    for key in edit.drop_fields:
        copy.pop(key, None)
    copy.update(edit.set_fields)
    copy["content"] = [
        _edit_block(block, slot, edit)
        for slot, block in enumerate(message.get("content") or ())
        if slot not in edit.drop_blocks
    ]
    return copy


def _edit_block(block: Mapping[str, Any], slot: int, edit: MessageEdit) -> Any:
    if slot in edit.results_as_text:
        return {"text": _result_as_text(block)}
    use = block.get("toolUse")
    if use is not None:
        inner: dict[str, Any] = {}
        if slot in edit.call_ids:
            inner["toolUseId"] = edit.call_ids[slot]
        if slot in edit.call_names:
            inner["name"] = edit.call_names[slot]
        return {**block, "toolUse": {**use, **inner}} if inner else block
    result = block.get("toolResult")
    if result is not None and slot in edit.result_ids:
        return {**block, "toolResult": {**result, "toolUseId": edit.result_ids[slot]}}
    if slot in edit.rstrip_text and isinstance(block.get("text"), str):
        return {**block, "text": block["text"].rstrip()}
    return block


def _result_as_text(block: Mapping[str, Any]) -> str:
    result = block.get("toolResult") or {}
    text = _payload_text(result.get("content"))
    head = f"[tool result {result.get('toolUseId')}]"
    return f"{head}\n{text}" if text else head


def _taken(messages: Sequence[Any], edits: dict[int, MessageEdit], part: Any) -> Any:
    if isinstance(part, Placeholder):
        return _placeholder(part)
    index, slot = part
    block = messages[index]["content"][slot]
    edit = edits.get(index)
    return block if edit is None else _edit_block(block, slot, edit)


def _render(
    messages: Sequence[Any], edits: dict[int, MessageEdit], item: Keep | Placeholder
) -> str:
    if isinstance(item, Placeholder):
        return f"[tool result {item.call_id} ({item.name or 'tool'})]\n{item.text}"
    edit = edits.get(item.index)
    message = messages[item.index]
    data = _edited(message, edit) if edit is not None else message
    lines: list[str] = []
    for block in data.get("content") or ():
        if "text" in block:
            lines.append(str(block["text"]))
        elif "toolUse" in block:
            use = block["toolUse"]
            arguments = json.dumps(use.get("input"), ensure_ascii=False, default=str)
            lines.append(f"[tool call {use.get('toolUseId')}: {use.get('name')}({arguments})]")
        elif "toolResult" in block:
            lines.append(_result_as_text(block))
    return "\n".join(line for line in lines if line)


def _merged(messages: Sequence[Any], edits: dict[int, MessageEdit], item: Merge) -> dict[str, Any]:
    blocks: list[Any] = []
    for part in item.parts:
        if isinstance(part, Keep):
            edit = edits.get(part.index)
            message = messages[part.index]
            data = _edited(message, edit) if edit is not None else message
            blocks.extend(data.get("content") or ())
        elif isinstance(part, AsText):
            blocks.append({"text": _render(messages, edits, part.item)})
        else:
            blocks.append({"text": part.text})
    return {"role": _ROLES.get(item.role, "user"), "content": blocks}
