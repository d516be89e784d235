"""A toy chat format written outside toolmend, to prove that a format is one class in one file
plus one line (the ``register`` call at the bottom).

Its messages are dicts with ``from`` (``user``, ``assistant``, ``tool``, ``system``) and
``body``; an assistant message lists its calls under ``calls`` as
``{"ref": <id>, "fn": <name>, "args": <object>}``, and a tool message answers one call with
``ref`` (and may name the function with ``fn``). It has no one-pass shortcuts, so every
history takes the full path: the defaults of :class:`toolmend.formats.Format`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from toolmend._edits import AsText, Bridge, Keep, Merge, MessageEdit, Placeholder, Plan
from toolmend._report import InvalidMessageError
from toolmend._skeleton import ASSISTANT, OTHER, SYSTEM, TOOL, USER, Call, Result, Skeleton
from toolmend.formats import Format, register

NAME = "toychat"
_KINDS = {"user": USER, "assistant": ASSISTANT, "tool": TOOL, "system": SYSTEM}


class ToyChat(Format):
    """The toy chat format (see the module docstring)."""

    name = NAME
    native_provider = "openai"

    def claims(self, message: Any, /) -> bool:
        return isinstance(message, Mapping) and "from" in message and "role" not in message

    def read(self, messages: Sequence[Any], /) -> Skeleton:
        skeleton = Skeleton(NAME)
        for index, message in enumerate(messages):
            if not isinstance(message, Mapping):
                raise InvalidMessageError(index, "", "a toy message (a dict)", message)
            role = message.get("from")
            if not isinstance(role, str):
                raise InvalidMessageError(index, "from", "a string", role)
            kind = _KINDS.get(role, OTHER)
            skeleton.kinds.append(kind)
            skeleton.roles.append(role)
            if kind == TOOL:
                skeleton.results[index] = (Result(message.get("ref"), message.get("fn"), 0),)
            elif kind == ASSISTANT and message.get("calls"):
                skeleton.calls[index] = tuple(
                    Call(call.get("ref"), call.get("fn"), slot)
                    for slot, call in enumerate(message["calls"])
                )
        return skeleton

    def result_text(self, message: Any, slot: int, /) -> str | None:
        text = message.get("body")
        return text if isinstance(text, str) else None

    def call_arguments(self, message: Any, slot: int, /) -> Any:
        return message["calls"][slot].get("args")

    def apply(self, messages: Sequence[Any], plan: Plan, /) -> list[Any]:
        return [self._build(messages, item, plan.edits) for item in plan.items]

    def _build(self, messages: Sequence[Any], item: Any, edits: dict[int, MessageEdit]) -> Any:
        if isinstance(item, Keep):
            edit = edits.get(item.index)
            message = messages[item.index]
            return message if edit is None else _edited(message, edit)
        if isinstance(item, Placeholder):
            return {"from": "tool", "ref": item.call_id, "fn": item.name, "body": item.text}
        if isinstance(item, Bridge):
            return {"from": item.role, "body": item.text}
        if isinstance(item, AsText):
            return {"from": item.role, "body": _render(messages, item.item, edits)}
        assert isinstance(item, Merge)
        texts = []
        for part in item.parts:
            if isinstance(part, Keep):
                texts.append(_render(messages, part, edits))
            elif isinstance(part, AsText):
                texts.append(_render(messages, part.item, edits))
            else:
                texts.append(part.text)
        return {"from": item.role, "body": "\n\n".join(text for text in texts if text)}


def _edited(message: Mapping[str, Any], edit: MessageEdit) -> dict[str, Any]:
    copy = dict(message)
    if 0 in edit.result_ids:
        copy["ref"] = edit.result_ids[0]
    if 0 in edit.result_names:
        copy["fn"] = edit.result_names[0]
    if edit.call_ids or edit.call_names or edit.drop_calls:
        calls = []
        for slot, call in enumerate(copy.get("calls") or ()):
            if slot in edit.drop_calls:
                continue
            call = dict(call)
            if slot in edit.call_ids:
                call["ref"] = edit.call_ids[slot]
            if slot in edit.call_names:
                call["fn"] = edit.call_names[slot]
            calls.append(call)
        if calls:
            copy["calls"] = calls
        else:
            copy.pop("calls", None)
    for key in edit.drop_fields:
        copy.pop(key, None)
    copy.update(edit.set_fields)
    return copy


def _render(
    messages: Sequence[Any], item: Keep | Placeholder, edits: dict[int, MessageEdit]
) -> str:
    if isinstance(item, Placeholder):
        return f"[tool result {item.call_id} ({item.name or 'tool'})]\n{item.text}"
    edit = edits.get(item.index)
    message = messages[item.index]
    data = _edited(message, edit) if edit is not None else dict(message)
    text = data.get("body") or ""
    if data.get("from") == "tool":
        head = f"[tool result {data.get('ref')} ({data.get('fn') or 'tool'})]"
        return f"{head}\n{text}" if text else head
    lines = [text] if text else []
    for call in data.get("calls") or ():
        arguments = json.dumps(call.get("args"), sort_keys=True)
        lines.append(f"[tool call {call.get('ref')}: {call.get('fn')}({arguments})]")
    return "\n".join(lines)


# --- test side: from the suite's OpenAI-shaped histories, and read back without toolmend -----


def from_openai(history: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """An OpenAI chat history written in the toy format (ids, names and texts kept)."""
    out: list[dict[str, Any]] = []
    for message in history:
        role = message.get("role")
        toy: dict[str, Any] = {"from": role, "body": message.get("content") or ""}
        if role == "tool":
            if message.get("tool_call_id") is not None:
                toy["ref"] = message["tool_call_id"]
            if message.get("name"):
                toy["fn"] = message["name"]
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            arguments = function.get("arguments")
            toy.setdefault("calls", []).append(
                {
                    "ref": call.get("id"),
                    "fn": function.get("name"),
                    "args": json.loads(arguments) if isinstance(arguments, str) else arguments,
                }
            )
        out.append(toy)
    return out


def calls_and_results(
    history: Sequence[Mapping[str, Any]],
) -> tuple[list[tuple[int, str | None]], list[tuple[int, str | None, str | None]]]:
    """``([(message, call id)], [(message, result id, text)])``, read without toolmend."""
    calls = [
        (index, call.get("ref"))
        for index, message in enumerate(history)
        for call in message.get("calls") or ()
    ]
    results = [
        (index, message.get("ref"), message.get("body"))
        for index, message in enumerate(history)
        if message.get("from") == "tool"
    ]
    return calls, results


register(ToyChat())
