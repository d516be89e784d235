"""OpenAI Responses API ``input``: a list of items as dicts, or the openai SDK's pydantic item
objects (``ResponseFunctionToolCall``, ``ResponseOutputMessage``, ``ResponseReasoningItem``, ...,
as ``response.output`` hands them back), or a bare string.

How items map onto the skeleton:

* ``message`` items (``"type": "message"`` or just a ``role``): their role's kind
  (user, assistant, system for ``system``/``developer``).
* ``function_call``: an assistant entry making one call (``call_id``, ``name``).
* ``function_call_output``: a tool entry carrying one result (``call_id``).
* ``reasoning``: an assistant entry marked ``reasoning_item``.
* every other item type (``web_search_call``, ``computer_call_output``, ``mcp_call``,
  ``item_reference``, ...): kind ``other``, its type as the role, passed through untouched.

The reader also records what only items have: duplicate, unprefixed or malformed item ids, a
reasoning item without the item it belongs to, a reasoning item without ``summary``, an output
without ``output``. A bare string is a valid input (one user message) and is returned as is.

Applying a plan returns the original object for every item it does not change; a changed item
comes back as a shallow-copied dict (SDK objects through ``model_dump`` with their API names),
which ``responses.create`` accepts in ``input`` beside the objects.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..edits import AsText, Bridge, Item, Keep, Merge, MessageEdit, Placeholder, Plan
from ..history import ASSISTANT, OTHER, SYSTEM, TOOL, USER, Call, Defect, Result, Skeleton
from ..report import InvalidMessageError

__all__ = ["NAME", "TEXT_INPUT", "apply", "claims", "read", "result_text"]

NAME = "openai-responses"

TEXT_INPUT = True
"""A bare string is a complete ``input``: one user message."""

_MESSAGE_KINDS = {"user": USER, "assistant": ASSISTANT, "system": SYSTEM, "developer": SYSTEM}

_ITEM_TYPES = frozenset(
    {
        "function_call",
        "function_call_output",
        "reasoning",
        "item_reference",
        "web_search_call",
        "file_search_call",
        "computer_call",
        "computer_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "code_interpreter_call",
        "image_generation_call",
        "local_shell_call",
        "local_shell_call_output",
        "shell_call",
        "shell_call_output",
        "apply_patch_call",
        "apply_patch_call_output",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "mcp_call",
        "tool_search_call",
        "tool_search_output",
        "additional_tools",
        "configuration_update",
        "compaction",
        "compaction_trigger",
        "program",
        "program_output",
    }
)
"""Item types no chat format has (``"message"`` aside): any of them tells a Responses input."""

_PART_TYPES = frozenset({"input_text", "input_image", "input_file", "output_text"})
"""Content part types only Responses messages use (chat's ``text``, ``refusal`` and
``input_audio`` are shared, so they tell nothing)."""

_ID_PREFIXES = {"function_call": "fc", "reasoning": "rs"}
"""The prefix a replayed item id must have, by item type (openai-family.md OR-ITEM-ID-PREFIX)."""

_REQUIRED_ID_TYPES = frozenset(
    {
        "reasoning",
        "item_reference",
        "web_search_call",
        "file_search_call",
        "computer_call",
        "code_interpreter_call",
        "image_generation_call",
        "local_shell_call",
        "local_shell_call_output",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_call",
        "program",
        "program_output",
    }
)
"""Item types whose ``id`` the API requires (openai SDK ``ResponseInputItemParam``); on every
other item, messages included, the id is optional and can be left out."""

_ID_CHARSET = re.compile(r"[A-Za-z0-9_-]+")


def claims(message: Any) -> bool:
    """Responses-only features: an item ``type`` no chat format has, a ``call_id``, a
    ``"type": "message"`` with text content, or a message whose content uses Responses part
    types (``input_text``, ``output_text``, ...). An Anthropic ``Message`` has that type too, but
    its content is a list of ``text``/``tool_use`` blocks, which tells nothing here."""
    if isinstance(message, Mapping):
        item_type = message.get("type")
        if item_type in _ITEM_TYPES or "call_id" in message:
            return True
        content = message.get("content")
    else:
        item_type = getattr(message, "type", None)
        if item_type in _ITEM_TYPES:
            return True
        content = getattr(message, "content", None)
    if item_type == "message" and isinstance(content, str):
        return True
    if item_type not in (None, "message") or not isinstance(content, list):
        return False
    for part in content:
        part_type = part.get("type") if isinstance(part, Mapping) else getattr(part, "type", None)
        if part_type in _PART_TYPES:
            return True
    return False


def _getter(item: Any, index: int) -> Callable[[str], Any]:
    if type(item) is dict or isinstance(item, Mapping):
        return item.get
    if hasattr(item, "type") or hasattr(item, "role"):
        return lambda name: getattr(item, name, None)
    raise InvalidMessageError(index, "", "an input item (a dict or an object with a type)", item)


def _text(value: Any, index: int, field: str) -> Any:
    """A string field as a plain ``str`` (enum members unwrapped); other types are an error."""
    if value is None or type(value) is str:
        return value
    if isinstance(value, str):
        return str(value.value) if hasattr(value, "value") else str(value)
    raise InvalidMessageError(index, field, "a string", value)


class _Reader:
    """The state of one read: the skeleton, ids seen so far, a reasoning item waiting."""

    __slots__ = ("first_with_id", "items", "skeleton", "waiting")

    def __init__(self, items: Sequence[Any]) -> None:
        self.skeleton = Skeleton(NAME)
        self.items = items
        self.first_with_id: dict[str, int] = {}
        self.waiting = -1
        """The index of a reasoning item whose follower has not been read yet, or -1."""

    def follower(self, index: int, can_follow: bool) -> None:
        """Item ``index`` comes after the waiting reasoning item: is it one it can belong to?"""
        if not can_follow:
            self.stranded(self.waiting)
        self.waiting = -1

    def stranded(self, at: int) -> None:
        item_id = _text(_getter(self.items[at], at)("id"), at, "id") or ""
        self.skeleton.defects.append(Defect(at, "reasoning_without_follower", -1, "id", item_id))

    def item_id(self, index: int, item: Any, item_id: str, item_type: str) -> None:
        """Check an item's id: characters, type prefix, uniqueness."""
        defects = self.skeleton.defects
        if _ID_CHARSET.fullmatch(item_id) is None:
            defects.append(Defect(index, "item_id_charset", -1, "id", item_id))
        else:
            prefix = _ID_PREFIXES.get(item_type)
            if prefix is not None and not item_id.startswith(prefix):
                defects.append(Defect(index, "item_id_prefix", -1, prefix, item_id))
        first = self.first_with_id.setdefault(item_id, index)
        if first != index:
            code = "duplicate_item" if self.items[first] == item else "duplicate_item_id"
            defects.append(Defect(index, code, -1, "id", item_id))
        if item_type in _REQUIRED_ID_TYPES:
            self.skeleton.mark("id_required", index)


def read(messages: Sequence[Any] | str) -> Skeleton:
    """Read a Responses ``input`` into a skeleton (see :mod:`toolmend.formats`)."""
    if isinstance(messages, str):
        skeleton = Skeleton(NAME)
        skeleton.kinds.append(USER)
        skeleton.roles.append("user")
        return skeleton
    reader = _Reader(messages)
    skeleton = reader.skeleton
    kinds, roles, defects = skeleton.kinds, skeleton.roles, skeleton.defects
    for index, item in enumerate(messages):
        get = _getter(item, index)
        item_type = _text(get("type"), index, "type")
        if item_type is None or item_type == "message":
            role = _text(get("role"), index, "role")
            if role is None:
                if item_type is None and get("id") is not None:
                    item_type = "item_reference"  # ``{"id": ...}`` alone references an item
                else:
                    raise InvalidMessageError(index, "role", "a string", role)
        if item_type is None or item_type == "message":
            kind = _MESSAGE_KINDS.get(role, OTHER)
            if reader.waiting >= 0:
                reader.follower(index, kind != USER)
            kinds.append(kind)
            roles.append(role)
            if get("content") is None:
                defects.append(Defect(index, "null_content", -1, "content"))
        elif item_type == "function_call":
            if reader.waiting >= 0:
                reader.follower(index, True)
            kinds.append(ASSISTANT)
            roles.append(item_type)
            call_id = _text(get("call_id"), index, "call_id")
            name = _text(get("name"), index, "name")
            skeleton.calls[index] = (Call(call_id, name, 0),)
            skeleton.mark("no_text", index)
            if not isinstance(get("arguments"), str):
                defects.append(Defect(index, "arguments_not_string", 0, "arguments"))
        elif item_type == "function_call_output":
            if reader.waiting >= 0:
                reader.follower(index, False)
            kinds.append(TOOL)
            roles.append(item_type)
            call_id = _text(get("call_id"), index, "call_id")
            skeleton.results[index] = (Result(call_id, None, 0),)
            if get("output") is None:
                defects.append(Defect(index, "result_without_output", -1, "output"))
        elif item_type == "reasoning":
            if reader.waiting >= 0:
                reader.follower(index, False)
            reader.waiting = index
            kinds.append(ASSISTANT)
            roles.append(item_type)
            skeleton.mark("reasoning_item", index)
            if get("summary") is None:
                defects.append(Defect(index, "reasoning_without_summary", -1, "summary"))
        else:
            output = item_type.endswith("_output")
            if reader.waiting >= 0:
                reader.follower(index, not output)
            kinds.append(OTHER)
            roles.append(item_type)
            if output:
                skeleton.mark("output_item", index)
            if item_type == "item_reference":
                skeleton.mark("reference", index)
        item_id = _text(get("id"), index, "id")
        if item_id is not None:
            reader.item_id(index, item, item_id, item_type or "message")
    if reader.waiting >= 0:
        reader.stranded(reader.waiting)
    return skeleton


def result_text(message: Any, slot: int) -> str | None:
    """The ``output`` of a ``function_call_output`` as text (``slot`` is always 0 here)."""
    output = (
        message.get("output") if isinstance(message, Mapping) else getattr(message, "output", None)
    )
    return _text_of(output)


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            part.get("text") if isinstance(part, Mapping) else getattr(part, "text", None)
            for part in content
        ]
        return "\n".join(text for text in texts if isinstance(text, str))
    return None


# --- applying a plan --------------------------------------------------------------------------


def apply(messages: Sequence[Any] | str, plan: Plan) -> list[Any]:
    """Build the repaired list (see :mod:`toolmend.formats`)."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    edits = plan.edits
    built = (_build(messages, item, edits) for item in plan.items)
    return [item for item in built if item is not None]


def _build(messages: Sequence[Any], item: Item, edits: dict[int, MessageEdit]) -> Any:
    if isinstance(item, Keep):
        edit = edits.get(item.index)
        message = messages[item.index]
        return message if edit is None else _edited(message, edit)
    if isinstance(item, Placeholder):
        return {"type": "function_call_output", "call_id": item.call_id, "output": item.text}
    if isinstance(item, Bridge):
        return {"role": item.role, "content": item.text}
    if isinstance(item, AsText):
        return {"role": item.role, "content": _render(messages, item, edits)}
    if isinstance(item, Merge):
        return _merged(messages, item, edits)
    raise TypeError(f"{type(item).__name__} items do not apply to a Responses input")


def _as_dict(item: Any) -> dict[str, Any]:
    if isinstance(item, Mapping):
        return dict(item)
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        dumped = dump(by_alias=True, exclude_unset=True, exclude_none=True)
        if isinstance(dumped, dict):
            return dumped
    return {key: value for key, value in vars(item).items() if not key.startswith("_")}


def _edited(item: Any, edit: MessageEdit) -> dict[str, Any] | None:
    """A shallow copy of ``item`` with ``edit`` applied (None when its one call is removed)."""
    if 0 in edit.drop_calls:
        return None
    copy = _as_dict(item)
    if edit.result_ids:
        copy["call_id"] = edit.result_ids[0]
    if edit.call_ids:
        copy["call_id"] = edit.call_ids[0]
    if edit.call_names:
        copy["name"] = edit.call_names[0]
    if edit.normalize_calls:
        arguments = copy.get("arguments")
        if not isinstance(arguments, str):
            copy["arguments"] = "{}" if arguments is None else json.dumps(arguments)
    for key in edit.drop_fields:
        copy.pop(key, None)
    copy.update(edit.set_fields)
    if edit.stringify_content:
        copy["content"] = _text_of(copy.get("content")) or ""
    return copy


def _data(messages: Sequence[Any], index: int, edits: dict[int, MessageEdit]) -> dict[str, Any]:
    edit = edits.get(index)
    data = _edited(messages[index], edit) if edit is not None else None
    return data if data is not None else _as_dict(messages[index])


def _render(messages: Sequence[Any], item: AsText, edits: dict[int, MessageEdit]) -> Any:
    """An item written out as message content: text, or parts where the output has media.

    A tool output kept as user text keeps its parts (images, files), which a user message
    accepts, behind one line naming the call it answered.
    """
    source = item.item
    if isinstance(source, Placeholder):
        return f"[tool result {source.call_id} ({source.name or 'tool'})]\n{source.text}"
    data = _data(messages, source.index, edits)
    kind = data.get("type")
    if kind == "function_call_output":
        head = f"[tool result {data.get('call_id')}]"
        output = data.get("output")
        if isinstance(output, list) and item.role == "user":
            return [{"type": "input_text", "text": head}, *output]
        text = _text_of(output)
        return f"{head}\n{text}" if text else head
    if kind == "function_call":
        return f"[tool call {data.get('call_id')}: {data.get('name')}({data.get('arguments')})]"
    if kind in (None, "message"):
        return _text_of(data.get("content")) or ""
    return f"[{kind} item]"


def _merged(messages: Sequence[Any], item: Merge, edits: dict[int, MessageEdit]) -> dict[str, Any]:
    """One message holding every part's content, as text (for profiles that merge turns)."""
    pieces: list[str] = []
    for part in item.parts:
        if isinstance(part, Keep):
            data = _data(messages, part.index, edits)
            if data.get("type") in (None, "message"):
                text = _text_of(data.get("content"))
            else:
                rendered = _render(messages, AsText(part, item.role), edits)
                text = rendered if isinstance(rendered, str) else _text_of(rendered)
        elif isinstance(part, AsText):
            rendered = _render(messages, part, edits)
            text = rendered if isinstance(rendered, str) else _text_of(rendered)
        else:
            text = part.text
        if text:
            pieces.append(text)
    return {"role": item.role, "content": "\n\n".join(pieces)}
