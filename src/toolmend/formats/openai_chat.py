"""OpenAI Chat Completions messages: plain dicts, the openai SDK's pydantic message objects and
``litellm.Message``-like objects with attributes.

Reading touches each message once through ``dict.get`` (or ``getattr`` for objects). Applying
a plan returns the original object for every message it does not change; a changed message
comes back as a shallow-copied dict (objects through ``model_dump``), which every SDK accepts
in ``messages``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..edits import AsText, Bridge, Item, Keep, Merge, MessageEdit, Placeholder, Plan
from ..history import ASSISTANT, OTHER, SYSTEM, TOOL, USER, Call, Defect, Result, Skeleton
from ..report import InvalidMessageError

__all__ = ["NAME", "apply", "claims", "read", "result_text"]

NAME = "openai"

_KINDS = {
    "user": USER,
    "assistant": ASSISTANT,
    "tool": TOOL,
    "system": SYSTEM,
    "developer": SYSTEM,
}
_TELLING_ROLES = frozenset({"system", "developer", "tool", "function"})


def claims(message: Any) -> bool:
    """OpenAI-only features: tool/system/developer roles, ``tool_calls``, ``tool_call_id``."""
    if isinstance(message, dict):
        return (
            message.get("role") in _TELLING_ROLES
            or "tool_calls" in message
            or "tool_call_id" in message
        )
    role = getattr(message, "role", None)
    return role in _TELLING_ROLES or getattr(message, "tool_calls", None) is not None


def _getter(message: Any, index: int) -> Callable[[str], Any]:
    if type(message) is dict:
        return message.get
    if isinstance(message, Mapping):
        return message.get
    if hasattr(message, "role"):
        return lambda name: getattr(message, name, None)
    raise InvalidMessageError(index, "", "a message dict or object with a role", message)


def read(messages: Sequence[Any]) -> Skeleton:
    """Read an OpenAI chat history into a skeleton (see :mod:`toolmend.formats`)."""
    skeleton = Skeleton(NAME)
    kinds, roles, results = skeleton.kinds, skeleton.roles, skeleton.results
    defects = skeleton.defects
    for index, message in enumerate(messages):
        get = _getter(message, index)
        role = get("role")
        if type(role) is not str:
            if isinstance(role, str):  # a str subclass, like an enum member
                role = str(role.value) if hasattr(role, "value") else str(role)
            else:
                raise InvalidMessageError(index, "role", "a string", role)
        kind = _KINDS.get(role, OTHER)
        kinds.append(kind)
        roles.append(role)
        if kind == ASSISTANT:
            _read_assistant(skeleton, index, message, get)
        elif kind == TOOL:
            call_id = get("tool_call_id")
            if call_id is not None and type(call_id) is not str:
                raise InvalidMessageError(index, "tool_call_id", "a string", call_id)
            name = get("name")
            results[index] = (Result(call_id, name if isinstance(name, str) else None, 0),)
            if isinstance(get("content"), list):
                defects.append(Defect(index, "tool_content_not_string", -1, "content"))
        elif get("tool_calls"):
            defects.append(Defect(index, "unsupported_property", -1, "tool_calls"))
    return skeleton


def _read_assistant(
    skeleton: Skeleton, index: int, message: Any, get: Callable[[str], Any]
) -> None:
    tool_calls = get("tool_calls")
    defects = skeleton.defects
    if tool_calls is not None:
        if not isinstance(tool_calls, (list, tuple)):
            raise InvalidMessageError(index, "tool_calls", "a list", tool_calls)
        if tool_calls:
            skeleton.calls[index] = _read_calls(skeleton, index, tool_calls)
            if not get("content"):
                skeleton.mark("no_text", index)
        else:
            defects.append(Defect(index, "empty_tool_calls", -1, "tool_calls"))
    if not tool_calls and get("function_call") is None:
        content = get("content")
        if content is None:
            defects.append(Defect(index, "null_content", -1, "content"))
            defects.append(Defect(index, "empty_assistant", -1, "content"))
        elif not content:
            defects.append(Defect(index, "empty_assistant", -1, "content"))
    if type(message) is dict:
        if "reasoning_content" in message:
            skeleton.mark("reasoning_field", index)
            if message["reasoning_content"] is not None:
                skeleton.mark("reasoning", index)
        if "function_call" in message and message["function_call"] is None:
            defects.append(Defect(index, "function_call_null", -1, "function_call"))
        if message.get("prefix") is True:
            skeleton.mark("prefix", index)
    elif get("reasoning_content") is not None:
        skeleton.mark("reasoning_field", index)
        skeleton.mark("reasoning", index)


def _read_calls(skeleton: Skeleton, index: int, tool_calls: Sequence[Any]) -> tuple[Call, ...]:
    found = []
    defects = skeleton.defects
    for slot, tool_call in enumerate(tool_calls):
        if isinstance(tool_call, Mapping):
            call_id = tool_call.get("id")
            function = tool_call.get("function")
            if function is None:
                defects.append(Defect(index, "call_shape", slot, "function"))
                name, arguments = tool_call.get("name"), tool_call.get("arguments")
            elif isinstance(function, Mapping):
                name, arguments = function.get("name"), function.get("arguments")
            else:
                name = getattr(function, "name", None)
                arguments = getattr(function, "arguments", None)
            if tool_call.get("type") is None:
                defects.append(Defect(index, "call_shape", slot, "type"))
        elif hasattr(tool_call, "id"):
            call_id = getattr(tool_call, "id", None)
            function = getattr(tool_call, "function", None)
            name = getattr(function, "name", None)
            arguments = getattr(function, "arguments", None)
        else:
            raise InvalidMessageError(index, f"tool_calls[{slot}]", "a tool call", tool_call)
        if call_id is not None and type(call_id) is not str:
            raise InvalidMessageError(index, f"tool_calls[{slot}].id", "a string", call_id)
        if name is not None and not isinstance(name, str):
            raise InvalidMessageError(index, f"tool_calls[{slot}].function.name", "a string", name)
        if arguments is not None and not isinstance(arguments, str):
            defects.append(Defect(index, "arguments_not_string", slot, "arguments"))
        found.append(Call(call_id, name, slot))
    return tuple(found)


def result_text(message: Any, slot: int) -> str | None:
    """The content of a tool message as text (``slot`` is always 0 here)."""
    content = (
        message.get("content")
        if isinstance(message, Mapping)
        else getattr(message, "content", None)
    )
    return _text_of(content)


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [part.get("text") for part in content if isinstance(part, Mapping)]
        return "\n".join(text for text in texts if isinstance(text, str))
    return None


# --- applying a plan --------------------------------------------------------------------------


def apply(messages: Sequence[Any], plan: Plan) -> list[Any]:
    """Build the repaired list (see :mod:`toolmend.formats`)."""
    edits = plan.edits
    return [_build(messages, item, edits) for item in plan.items]


def _build(messages: Sequence[Any], item: Item, edits: dict[int, MessageEdit]) -> Any:
    if isinstance(item, Keep):
        edit = edits.get(item.index)
        message = messages[item.index]
        return message if edit is None else _edited(message, edit)
    if isinstance(item, Placeholder):
        return {"role": "tool", "tool_call_id": item.call_id, "content": item.text}
    if isinstance(item, Bridge):
        return {"role": item.role, "content": item.text}
    if isinstance(item, AsText):
        return {"role": item.role, "content": _render(messages, item.item, edits)}
    return _merged(messages, item, edits)


def _as_dict(message: Any) -> dict[str, Any]:
    if isinstance(message, Mapping):
        return dict(message)
    dump = getattr(message, "model_dump", None)
    if callable(dump):
        dumped = dump(exclude_none=True)
        if isinstance(dumped, dict):
            return dumped
    return {key: value for key, value in vars(message).items() if not key.startswith("_")}


def _edited(message: Any, edit: MessageEdit) -> dict[str, Any]:
    """A shallow copy of ``message`` with ``edit`` applied; nested parts copied where changed."""
    copy = _as_dict(message)
    if edit.result_ids:
        copy["tool_call_id"] = edit.result_ids[0]
    if edit.result_names:
        copy["name"] = edit.result_names[0]
    if edit.call_ids or edit.call_names or edit.drop_calls or edit.normalize_calls:
        calls = _edited_calls(copy.get("tool_calls") or [], edit)
        if calls:
            copy["tool_calls"] = calls
        else:
            copy.pop("tool_calls", None)
            if copy.get("content") is None:
                copy["content"] = ""
    for key in edit.drop_fields:
        copy.pop(key, None)
    copy.update(edit.set_fields)
    if edit.stringify_content:
        copy["content"] = _text_of(copy.get("content")) or ""
    return copy


def _edited_calls(tool_calls: Sequence[Any], edit: MessageEdit) -> list[Any]:
    out = []
    for slot, tool_call in enumerate(tool_calls):
        if slot in edit.drop_calls:
            continue
        changed = edit.normalize_calls or slot in edit.call_ids or slot in edit.call_names
        if not changed:
            out.append(tool_call)
            continue
        call = _as_dict(tool_call)
        if edit.normalize_calls:
            call = _canonical_call(call)
        if slot in edit.call_ids:
            call["id"] = edit.call_ids[slot]
        if slot in edit.call_names:
            call["function"] = {**call.get("function", {}), "name": edit.call_names[slot]}
        out.append(call)
    return out


def _canonical_call(call: dict[str, Any]) -> dict[str, Any]:
    """``{"id", "type": "function", "function": {"name", "arguments": <JSON text>}}``."""
    function = call.get("function")
    if not isinstance(function, Mapping):
        function = {"name": call.pop("name", None), "arguments": call.pop("arguments", None)}
    function = dict(function)
    arguments = function.get("arguments")
    if arguments is None:
        function["arguments"] = "{}"
    elif not isinstance(arguments, str):
        function["arguments"] = json.dumps(arguments, ensure_ascii=False)
    call["function"] = function
    call.setdefault("type", "function")
    if call.get("type") is None:
        call["type"] = "function"
    return call


def _render(
    messages: Sequence[Any], item: Keep | Placeholder, edits: dict[int, MessageEdit]
) -> str:
    """A message's calls and results written out as plain text, content first."""
    if isinstance(item, Placeholder):
        return f"[tool result {item.call_id} ({item.name or 'tool'})]\n{item.text}"
    message = messages[item.index]
    edit = edits.get(item.index)
    data = _edited(message, edit) if edit is not None else _as_dict(message)
    lines = []
    text = _text_of(data.get("content"))
    if data.get("role") == "tool":
        name = data.get("name") or "tool"
        lines.append(f"[tool result {data.get('tool_call_id')} ({name})]")
        if text:
            lines.append(text)
        return "\n".join(lines)
    if text:
        lines.append(text)
    for call in data.get("tool_calls") or []:
        call = _canonical_call(_as_dict(call))
        function = call["function"]
        lines.append(
            f"[tool call {call.get('id')}: {function.get('name')}({function.get('arguments')})]"
        )
    return "\n".join(lines)


def _merged(messages: Sequence[Any], item: Merge, edits: dict[int, MessageEdit]) -> dict[str, Any]:
    """One message holding every part's content in order; text parts joined, media kept."""
    pieces: list[Any] = []
    for part in item.parts:
        if isinstance(part, Keep):
            edit = edits.get(part.index)
            message = messages[part.index]
            data = _edited(message, edit) if edit is not None else _as_dict(message)
            content = data.get("content")
            if content is None and data.get("tool_calls"):
                content = _render(messages, part, edits)
        elif isinstance(part, AsText):
            content = _render(messages, part.item, edits)
        else:
            content = part.text
        if isinstance(content, list):
            pieces.extend(content)
        elif content:
            pieces.append(content)
    if all(isinstance(piece, str) for piece in pieces):
        return {"role": item.role, "content": "\n\n".join(pieces)}
    parts = [{"type": "text", "text": p} if isinstance(p, str) else p for p in pieces]
    return {"role": item.role, "content": parts}
