"""LangChain messages: ``BaseMessage`` objects (``HumanMessage``, ``AIMessage``,
``ToolMessage``, ``SystemMessage``, ``ChatMessage``, ``FunctionMessage`` and their chunks).

The skeleton records what LangChain's chat model integrations put on the wire, so a history that
passes here is one the provider accepts once ``ChatOpenAI``, ``ChatAnthropic`` or
``ChatGoogleGenerativeAI`` has converted it:

* an ``AIMessage`` calls everything in ``tool_calls`` and ``invalid_tool_calls`` (both are sent
  as calls, the second with its unparsed arguments), every ``tool_use`` content block whose id is
  in neither (``ChatAnthropic`` sends those too), and, when ``tool_calls`` and
  ``invalid_tool_calls`` are both empty, the raw ``additional_kwargs["tool_calls"]``
  (``ChatOpenAI`` falls back to them: an ``AIMessage`` that "lost" its ``tool_calls`` still
  sends them);
* a ``ToolMessage`` answers ``tool_call_id`` and states ``name``;
* roles are the OpenAI ones: ``human`` is ``user``, ``ai`` is ``assistant``, a ``SystemMessage``
  is ``system`` (``developer`` with ``additional_kwargs["__openai_role__"]``), a
  ``ChatMessage`` has its own ``role``, a ``FunctionMessage`` is the legacy ``function``;
* ``additional_kwargs["reasoning_content"]`` (DeepSeek) marks reasoning, and
  ``additional_kwargs["prefix"]`` a Mistral prefix message.

No LangChain import, here or anywhere in the core. Messages are read through their attributes
and ``type``. An edited message is ``message.model_copy(update=...)``: a shallow copy whose
changed lists and dicts are new ones, so the caller's message is never mutated, and every field
toolmend does not touch (ids, metadata, usage, artifacts) is kept. An id or a call that changes
is changed on the call's mirrors too (``tool_use`` blocks in ``content``, raw
``additional_kwargs["tool_calls"]``), so no converter sends the old one. New messages
(placeholder results, bridges, calls written as text) are built with the class of a message of
that kind in the same history or, when the history has none, with the class of that name from
the package the history's own classes come from, looked up in ``sys.modules``: that package
was imported by whoever built the messages, so nothing is imported here.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from .. import _jsontext as jsontext
from .._edits import AsText, Bridge, CallPart, Item, Keep, Merge, MessageEdit, Placeholder, Plan
from .._report import InvalidHistoryError, InvalidMessageError
from .._skeleton import ASSISTANT, OTHER, SYSTEM, TOOL, USER, Call, Defect, Result, Skeleton
from . import register
from ._base import Format

if TYPE_CHECKING:
    from ..profiles import Profile

__all__ = [
    "FORMAT",
    "NAME",
    "LangChain",
    "apply",
    "call_arguments",
    "claims",
    "dirty_spans",
    "read",
    "result_text",
]

NAME = "langchain"

_PACKAGE = "langchain_core.messages"

_TYPES: dict[str, tuple[str, str]] = {
    "human": ("user", USER),
    "HumanMessageChunk": ("user", USER),
    "ai": ("assistant", ASSISTANT),
    "AIMessageChunk": ("assistant", ASSISTANT),
    "tool": ("tool", TOOL),
    "ToolMessageChunk": ("tool", TOOL),
    "system": ("system", SYSTEM),
    "SystemMessageChunk": ("system", SYSTEM),
    "function": ("function", OTHER),
    "FunctionMessageChunk": ("function", OTHER),
}
"""Message ``type`` -> (the role it is sent with, its kind)."""

_PLAIN_TYPES = {key: value for key, value in _TYPES.items() if value[1] != SYSTEM}
"""The types whose role never depends on anything else (a system message may be a developer
message): the hot path of :func:`read`."""

_CHAT_TYPES = frozenset({"chat", "ChatMessageChunk"})
_CHAT_KINDS = {
    "user": USER,
    "assistant": ASSISTANT,
    "system": SYSTEM,
    "developer": SYSTEM,
}
"""A ``ChatMessage``'s role -> its kind; any other role is ``OTHER`` (a ``ChatMessage`` cannot
carry calls or a ``tool_call_id``)."""

_CALL_BLOCKS = frozenset({"tool_use", "tool_call"})
"""Content block types that mirror a call (Anthropic's, LangChain's standard one)."""


def claims(message: Any) -> bool:
    """A LangChain message: its class, or a class it derives from, comes from
    ``langchain_core.messages``."""
    if isinstance(message, (Mapping, str, list, tuple)):
        return False
    return any(cls.__module__.startswith(_PACKAGE) for cls in type(message).__mro__)


# --- the one-pass test -----------------------------------------------------------------------

_QUICK_CODES = frozenset(
    {
        "empty_history",
        "invalid_role",
        "orphan_result",
        "unknown_result_id",
        "missing_result",
        "duplicate_result",
        "result_without_id",
        "call_without_id",
        "call_id_too_long",
        "call_name_empty",
        "duplicate_call_id",
        "empty_assistant",
        # never found in a LangChain history: the reader reports no such defect or mark
        "call_shape",
        "arguments_not_string",
        "empty_tool_calls",
        "null_content",
        "function_call_null",
        "tool_content_not_string",
        "unsupported_property",
    }
)
"""The problem codes :func:`dirty_spans` vouches for. A profile enforcing any other code, or
needing role order, alternation, names on results or an id pattern, takes the full path."""

_QUICK_ROLES = frozenset({"user", "assistant", "tool", "system"})


def dirty_spans(messages: Sequence[Any], profile: Profile) -> list[tuple[int, int]] | None:
    """``[]`` when the full ``judge(read(messages), profile)`` would find nothing, else None.

    A valid history is the common case and is read on every request (and on every read of a
    wrapped LangChain history), so it gets one tight pass over the messages that builds
    nothing. The pass is strict: a result must answer, by id, a call of the calling message
    right before it, once; every call must be answered before the next other message; anything
    unusual (content blocks, invalid or raw tool calls, chat or function messages, a developer
    message) answers None, and the full path decides. A property test holds it to the full
    path.
    """
    if (
        not messages
        or profile.pairing not in ("adjacent", "count", "none")
        or profile.role_successors is not None
        or profile.alternation is not None
        or profile.call_id_pattern is not None
        or profile.function_name_pattern is not None
        or profile.last_kinds is not None
        or profile.reasoning_in_tool_turns
        or profile.results_need_name
        or profile.first_user
        or profile.call_id_scope != "message"
        or not profile.checks.keys() <= _QUICK_CODES
        or (profile.known_roles is not None and not profile.known_roles >= _QUICK_ROLES)
    ):
        return None
    max_length = profile.call_id_max_length or 1 << 30
    pending: set[str] = set()
    for message in messages:
        message_type = getattr(message, "type", None)
        if message_type == "tool":
            call_id = message.tool_call_id
            if type(call_id) is not str or call_id not in pending:
                return None
            pending.discard(call_id)
            continue
        if pending:
            return None
        if message_type == "ai":
            content = message.content
            if type(content) is not str or message.invalid_tool_calls:
                return None
            tool_calls = message.tool_calls
            if not tool_calls:
                extra = message.additional_kwargs
                if not content or type(extra) is not dict or "tool_calls" in extra:
                    return None
                continue
            if type(tool_calls) is not list:
                return None
            for call in tool_calls:
                if type(call) is not dict:
                    return None
                call_id, name = call.get("id"), call.get("name")
                if (
                    type(call_id) is not str
                    or not call_id
                    or len(call_id) > max_length
                    or call_id in pending
                    or type(name) is not str
                    or not name
                ):
                    return None
                pending.add(call_id)
        elif message_type == "system":
            extra = message.additional_kwargs
            if type(extra) is not dict or "__openai_role__" in extra:
                return None
        elif message_type != "human":
            return None
    return None if pending else []


# --- reading ----------------------------------------------------------------------------------


_CONTENT_TYPES = (str, list)
"""The types a LangChain message's ``content`` may have (``str | list[str | dict]``)."""


def read(messages: Sequence[Any]) -> Skeleton:
    """Read a LangChain history into a skeleton (see :class:`toolmend.formats.Format`)."""
    skeleton = Skeleton(NAME)
    kinds, roles, results = skeleton.kinds, skeleton.roles, skeleton.results
    plain = _PLAIN_TYPES.get
    for index, message in enumerate(messages):
        message_type = getattr(message, "type", None)
        found = plain(message_type) if type(message_type) is str else None
        role, kind = found if found is not None else _role_and_kind(index, message)
        content = getattr(message, "content", None)
        if type(content) not in _CONTENT_TYPES:
            # (only a message built around LangChain's validation holds one; a repair that
            # writes it into a new message would fail in the class's own check)
            raise InvalidMessageError(
                index, "content", "a string or a list of content blocks", content
            )
        kinds.append(kind)
        roles.append(role)
        if kind == TOOL:
            call_id = message.tool_call_id
            if type(call_id) is not str:
                raise InvalidMessageError(index, "tool_call_id", "a string", call_id)
            name = message.name
            results[index] = (
                _new_tuple(Result, (call_id or None, name if type(name) is str else None, 0)),
            )
        elif kind == ASSISTANT:
            _read_assistant(skeleton, index, message)
        elif kind == USER:
            content = message.content
            if type(content) is str:
                if not content or content.isspace():
                    detail = "whitespace" if content else "empty"
                    skeleton.defects.append(Defect(index, "blank_text", -1, detail))
            else:
                _blank_parts(skeleton, index, content)
    return skeleton


def _blank_parts(skeleton: Skeleton, index: int, content: Any) -> None:
    """A human message's content list whose text parts (plain strings or ``text`` blocks) are
    empty or only whitespace: ``blank_text``, as the OpenAI-shaped reader records it
    (:func:`toolmend.formats._openai_chat._blank_text`): slot -1 when nothing else is in it,
    else the part's position. No profile has the code; the providers that refuse blank text
    blocks (Anthropic, issue 32 case 8) report it under their own (``text_empty``,
    ``text_whitespace``)."""
    if type(content) is not list:
        return
    blank: list[Defect] = []
    for slot, part in enumerate(content):
        text = part.get("text") if type(part) is dict and part.get("type") == "text" else part
        if type(text) is str and (not text or text.isspace()):
            blank.append(Defect(index, "blank_text", slot, "whitespace" if text else "empty"))
    if not content or (blank and len(blank) == len(content)):  # the whole content is blank
        empty = all(defect.detail == "empty" for defect in blank)
        skeleton.defects.append(Defect(index, "blank_text", -1, "empty" if empty else "whitespace"))
    else:
        skeleton.defects.extend(blank)


_new_tuple = tuple.__new__
"""Builds a NamedTuple without the Python-level ``__new__`` it generates (a hot path)."""


def _role_and_kind(index: int, message: Any) -> tuple[str, str]:
    message_type = getattr(message, "type", None)
    found = _TYPES.get(message_type) if type(message_type) is str else None
    if found is not None:
        if found[1] == SYSTEM:
            extra = getattr(message, "additional_kwargs", None)
            if isinstance(extra, Mapping) and extra.get("__openai_role__") == "developer":
                return "developer", SYSTEM
        return found
    if isinstance(message_type, str) and message_type in _CHAT_TYPES:
        role = getattr(message, "role", None)
        if not isinstance(role, str):
            raise InvalidMessageError(index, "role", "a string", role)
        return role, _CHAT_KINDS.get(role, OTHER)
    if not claims(message):
        raise InvalidMessageError(index, "", "a LangChain message", message)
    raise InvalidMessageError(index, "type", "a chat message type (human, ai, tool, ...)", message)


def _read_assistant(skeleton: Skeleton, index: int, message: Any) -> None:
    content = message.content
    tool_calls = getattr(message, "tool_calls", None)  # a ChatMessage has none
    extra = message.additional_kwargs
    if extra and not isinstance(extra, Mapping):
        raise InvalidMessageError(index, "additional_kwargs", "a dict", extra)
    calls: list[Call] | None = None
    if (
        tool_calls
        and type(tool_calls) is list
        and type(content) is str
        and not message.invalid_tool_calls
    ):
        calls = []  # the common case: parsed calls only, text content
        for slot, call in enumerate(tool_calls):
            if type(call) is not dict or type(call.get("name")) is not str:
                calls = None
                break
            call_id = call.get("id")
            call_id = call_id if type(call_id) is str and call_id else None
            calls.append(_new_tuple(Call, (call_id, call["name"], slot)))
    if calls is None:
        entries = _call_entries(index, message)
        calls = [_new_tuple(Call, (entry[2], entry[3], slot)) for slot, entry in enumerate(entries)]
    if calls:
        skeleton.calls[index] = tuple(calls)
        if not _has_text(content):
            skeleton.mark("no_text", index)
    elif not content:
        skeleton.defects.append(Defect(index, "empty_assistant", -1, "content"))
    if extra:
        if extra.get("reasoning_content") is not None:
            skeleton.mark("reasoning", index)
        if extra.get("prefix") is True:
            skeleton.mark("prefix", index)


CallEntry = tuple[str, int, str | None, str | None]
"""(source, position in that source, id, name) of one call; the source is ``"tool_calls"``,
``"invalid_tool_calls"``, ``"content"`` or ``"raw"`` (``additional_kwargs["tool_calls"]``).
A call's slot is its position in the list of entries."""


def _call_entries(index: int, message: Any) -> list[CallEntry]:
    """Every call the message makes, in slot order (see the module docstring)."""
    entries: list[CallEntry] = []
    tool_calls = getattr(message, "tool_calls", None)  # a ChatMessage has none
    invalid = getattr(message, "invalid_tool_calls", None)
    content = message.content
    for source, found in (("tool_calls", tool_calls), ("invalid_tool_calls", invalid)):
        if not found:
            continue
        if not isinstance(found, (list, tuple)):
            raise InvalidMessageError(index, source, "a list", found)
        for position, call in enumerate(found):
            if not isinstance(call, Mapping):
                raise InvalidMessageError(index, f"{source}[{position}]", "a tool call", call)
            name = _name(index, f"{source}[{position}].name", call.get("name"))
            entries.append((source, position, _text_or_none(call.get("id")), name))
    if type(content) is list:
        seen = {entry[2] for entry in entries}
        for position, block in enumerate(content):
            if (
                isinstance(block, Mapping)
                and block.get("type") == "tool_use"
                and _text_or_none(block.get("id")) not in seen
            ):
                name = _name(index, f"content[{position}].name", block.get("name"))
                entries.append(("content", position, _text_or_none(block.get("id")), name))
    if not tool_calls and not invalid:
        raw = message.additional_kwargs.get("tool_calls") if message.additional_kwargs else None
        if raw:
            seen = {entry[2] for entry in entries}
            for position, call in enumerate(raw):
                if not isinstance(call, Mapping):
                    field = f"additional_kwargs.tool_calls[{position}]"
                    raise InvalidMessageError(index, field, "a tool call", call)
                call_id = _text_or_none(call.get("id"))
                if call_id is not None and call_id in seen:
                    continue
                function = call.get("function")
                name = function.get("name") if isinstance(function, Mapping) else None
                name = _name(index, f"additional_kwargs.tool_calls[{position}].function.name", name)
                entries.append(("raw", position, call_id, name))
    return entries


def _name(index: int, field: str, name: Any) -> str | None:
    """A called function's name: a string or nothing (a name is a dictionary key later)."""
    if name is None or isinstance(name, str):
        return name
    raise InvalidMessageError(index, field, "a string", name)


def _text_or_none(value: Any) -> str | None:
    """An id as the skeleton holds it: a non-empty string, else None (LangChain allows
    ``None`` ids; an empty one is sent as no id at all)."""
    return value if isinstance(value, str) and value else None


def _has_text(content: Any) -> bool:
    """Whether the content says anything besides its calls."""
    if isinstance(content, str):
        return bool(content)
    if isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                if block:
                    return True
            elif not (isinstance(block, Mapping) and block.get("type") in _CALL_BLOCKS):
                return True
    return False


def result_text(message: Any, slot: int) -> str | None:
    """The content of a tool message as text (``slot`` is always 0 here)."""
    return _text_of(getattr(message, "content", None))


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for block in content:
            if isinstance(block, str):
                texts.append(block)
            elif isinstance(block, Mapping) and isinstance(block.get("text"), str):
                texts.append(block["text"])
        return "\n".join(texts)
    return None


def call_arguments(message: Any, slot: int) -> Any:
    """The arguments of the call in ``slot`` (for the loop guard; never logged)."""
    source, position, _, _ = _call_entries(0, message)[slot]
    if source == "content":
        return message.content[position].get("input")
    if source == "raw":
        function = message.additional_kwargs["tool_calls"][position].get("function")
        return function.get("arguments") if isinstance(function, Mapping) else None
    return getattr(message, source)[position].get("args")


# --- applying a plan --------------------------------------------------------------------------


def apply(messages: Sequence[Any], plan: Plan) -> list[Any]:
    """Build the repaired list (see :class:`toolmend.formats.Format`)."""
    maker = _Maker(messages)
    edits = plan.edits
    return [_build(messages, item, edits, maker) for item in plan.items]


def _build(
    messages: Sequence[Any], item: Item, edits: dict[int, MessageEdit], maker: _Maker
) -> Any:
    if isinstance(item, Keep):
        edit = edits.get(item.index)
        message = messages[item.index]
        return message if edit is None else _edited(message, edit, maker)
    if isinstance(item, Placeholder):
        fields: dict[str, Any] = {
            "content": item.text,
            "tool_call_id": item.call_id,
            "status": "error",
        }
        if item.name:
            fields["name"] = item.name
        return maker.new("tool", **fields)
    if isinstance(item, Bridge):
        return maker.new(item.role, content=item.text)
    if isinstance(item, AsText):
        return maker.new(item.role, content=_render(messages, item.item, edits, maker))
    if isinstance(item, CallPart):
        slots = {item.slot, *item.more}
        return _call_part(messages[item.index], slots, edits.get(item.index), maker)
    assert isinstance(item, Merge), "Blocks items are planned for block layouts only"
    return _merged(messages, item, edits, maker)


class _Maker:
    """Builds new messages with the history's own LangChain classes (see the module docstring)."""

    _TYPE_OF_ROLE: ClassVar[dict[str, str]] = {
        "user": "human",
        "assistant": "ai",
        "tool": "tool",
        "system": "system",
    }
    _CLASS_OF_TYPE: ClassVar[dict[str, tuple[str, str]]] = {
        "human": ("HumanMessage", "human"),
        "ai": ("AIMessage", "ai"),
        "tool": ("ToolMessage", "tool"),
        "system": ("SystemMessage", "system"),
    }

    def __init__(self, messages: Sequence[Any]) -> None:
        self.messages = messages
        self.found: dict[str, type[Any]] = {}

    def new(self, role: str, **fields: Any) -> Any:
        message_type = self._TYPE_OF_ROLE.get(role, "human")
        if message_type != "tool":
            fields.pop("status", None)
        return self.class_for(message_type)(**fields)

    def class_for(self, message_type: str) -> type[Any]:
        found = self.found.get(message_type)
        if found is not None:
            return found
        for message in self.messages:
            if getattr(message, "type", None) == message_type:
                found = self.found[message_type] = type(message)
                return found
        class_name, module_name = self._CLASS_OF_TYPE[message_type]
        module = sys.modules.get(f"{_PACKAGE}.{module_name}") or sys.modules.get(_PACKAGE)
        found = getattr(module, class_name, None) if module is not None else None
        if not isinstance(found, type):
            raise InvalidHistoryError(
                f"cannot build a LangChain {class_name}: {_PACKAGE} is not loaded"
            )
        self.found[message_type] = found
        return found


def _edited(message: Any, edit: MessageEdit, maker: _Maker) -> Any:
    """A shallow copy of ``message`` with ``edit`` applied (changed lists and dicts are new)."""
    update: dict[str, Any] = {}
    if edit.result_ids:
        update["tool_call_id"] = edit.result_ids[0]
    if edit.result_names:
        update["name"] = edit.result_names[0]
    extra: dict[str, Any] | None = None
    if edit.call_ids or edit.call_names or edit.drop_calls:
        extra = dict(message.additional_kwargs)
        _edit_calls(message, edit, update, extra)
    if edit.drop_fields or edit.set_fields:
        if extra is None:
            extra = dict(message.additional_kwargs)
        for key in edit.drop_fields:
            extra.pop(key, None)
        for key, value in edit.set_fields.items():
            if key == "content":
                update["content"] = value
            elif key != "role":
                extra[key] = value
    if edit.drop_blocks and type(message.content) is list and "content" not in update:
        # blank text parts of a human message (issue 32, case 8)
        drop = edit.drop_blocks
        update["content"] = [part for slot, part in enumerate(message.content) if slot not in drop]
    if edit.stringify_content:
        update["content"] = _text_of(update.get("content", message.content)) or ""
    if extra is not None and extra != message.additional_kwargs:
        update["additional_kwargs"] = extra
    role = edit.set_fields.get("role")
    if role is not None:
        return _with_role(message, role, update, maker)
    return message.model_copy(update=update) if update else message


def _call_part(message: Any, slots: set[int], edit: MessageEdit | None, maker: _Maker) -> Any:
    """An AI message of its own holding calls ``slots`` of ``message`` (edited as the
    message's own edit says), with empty text and no message id: a split parallel-call
    message, or the calls of a message moved apart from its text."""
    count = len(_call_entries(0, message))
    alone = MessageEdit(
        call_ids=dict(edit.call_ids) if edit is not None else {},
        call_names=dict(edit.call_names) if edit is not None else {},
        drop_calls={other for other in range(count) if other not in slots},
        set_fields={"content": ""},
    )
    part = _edited(message, alone, maker)
    return part.model_copy(update={"id": None, "response_metadata": {}, "usage_metadata": None})


def _with_role(message: Any, role: str, update: dict[str, Any], maker: _Maker) -> Any:
    """The message sent with another role: a ``ChatMessage`` changes its ``role``; any other
    message becomes one of the class for that role, with its content, name and id."""
    if getattr(message, "type", None) in _CHAT_TYPES:
        return message.model_copy(update={**update, "role": role})
    fields = {"content": update.get("content", message.content)}
    if message.name is not None:
        fields["name"] = message.name
    if message.id is not None:
        fields["id"] = message.id
    return maker.new(role, **fields)


def _edit_calls(
    message: Any, edit: MessageEdit, update: dict[str, Any], extra: dict[str, Any]
) -> None:
    """Rename, re-id and drop calls, in their own list and in every mirror of them (a
    ``tool_use`` block or a raw tool call with the same id, matched in order)."""
    entries = _call_entries(0, message)
    own = {(entry[0], entry[1]) for entry in entries}
    lists: dict[str, list[Any]] = {}
    dropped: dict[str, set[int]] = {}
    actions: dict[str, list[tuple[bool, str | None, str | None] | None]] = {}
    for slot, (source, position, call_id, _) in enumerate(entries):
        new_id = edit.call_ids.get(slot)
        new_name = edit.call_names.get(slot)
        dropping = slot in edit.drop_calls
        changed = dropping or new_id is not None or new_name is not None
        if call_id is not None:
            actions.setdefault(call_id, []).append(
                (dropping, new_id, new_name) if changed else None
            )
        if not changed:
            continue
        if source not in lists:
            lists[source] = _source_list(message, source, extra)
        if dropping:
            dropped.setdefault(source, set()).add(position)
        else:
            lists[source][position] = _renamed(source, lists[source][position], new_id, new_name)
    for source in ("content", "raw"):
        mirror = lists.get(source) or _source_list(message, source, extra)
        pending = {call_id: deque(queue) for call_id, queue in actions.items()}
        for position, item in enumerate(mirror):
            if (source, position) in own or not isinstance(item, Mapping):
                continue
            if source == "content" and item.get("type") not in _CALL_BLOCKS:
                continue
            queue = pending.get(item.get("id"))  # type: ignore[arg-type]
            action = queue.popleft() if queue else None  # n calls with one id: not n^2
            if action is None:
                continue
            lists[source] = mirror
            dropping, new_id, new_name = action
            if dropping:
                dropped.setdefault(source, set()).add(position)
            else:
                mirror[position] = _renamed(source, item, new_id, new_name)
    for source, items in lists.items():
        gone = dropped.get(source, set())
        kept = [item for position, item in enumerate(items) if position not in gone]
        if source == "raw":
            if kept:
                extra["tool_calls"] = kept
            else:
                extra.pop("tool_calls", None)
        elif source == "content":
            update["content"] = kept or ""
        else:
            update[source] = kept
    had_calls = bool(message.tool_calls or message.invalid_tool_calls)
    left = update.get("tool_calls", message.tool_calls) or update.get(
        "invalid_tool_calls", message.invalid_tool_calls
    )
    if had_calls and not left:
        # ChatOpenAI sends the raw calls when the parsed ones are empty: never let it send calls
        # that were not sent before.
        extra.pop("tool_calls", None)


def _source_list(message: Any, source: str, extra: Mapping[str, Any]) -> list[Any]:
    if source == "content":
        return list(message.content)
    if source == "raw":
        return list(extra.get("tool_calls") or ())
    return list(getattr(message, source))


def _renamed(source: str, call: Mapping[str, Any], new_id: str | None, new_name: str | None) -> Any:
    copy = dict(call)
    if new_id is not None:
        copy["id"] = new_id
    if new_name is not None:
        if source == "raw":
            copy["function"] = {**(copy.get("function") or {}), "name": new_name}
        else:
            copy["name"] = new_name
    return copy


def _render(
    messages: Sequence[Any], item: Keep | Placeholder, edits: dict[int, MessageEdit], maker: _Maker
) -> str:
    """A message's calls and results written out as plain text, content first."""
    if isinstance(item, Placeholder):
        return f"[tool result {item.call_id} ({item.name or 'tool'})]\n{item.text}"
    message = messages[item.index]
    edit = edits.get(item.index)
    if edit is not None:
        message = _edited(message, edit, maker)
    text = _text_of(message.content)
    if message.type in ("tool", "ToolMessageChunk"):
        head = f"[tool result {message.tool_call_id} ({message.name or 'tool'})]"
        return f"{head}\n{text}" if text else head
    lines = [text] if text else []
    if message.type in ("ai", "AIMessageChunk"):
        for slot, (_, _, call_id, name) in enumerate(_call_entries(item.index, message)):
            arguments = jsontext.dumps(
                call_arguments(message, slot), ensure_ascii=False, default=str
            )
            lines.append(f"[tool call {call_id}: {name}({arguments})]")
    return "\n".join(lines)


def _merged(
    messages: Sequence[Any], item: Merge, edits: dict[int, MessageEdit], maker: _Maker
) -> Any:
    """One message holding every part's content in order; text joined, other blocks kept."""
    pieces: list[Any] = []
    for part in item.parts:
        if isinstance(part, Keep):
            message = messages[part.index]
            edit = edits.get(part.index)
            if edit is not None:
                message = _edited(message, edit, maker)
            content: Any = message.content
            if message.type in ("ai", "AIMessageChunk") and _call_entries(part.index, message):
                content = _render(messages, part, edits, maker)
        elif isinstance(part, AsText):
            content = _render(messages, part.item, edits, maker)
        else:
            content = part.text
        if isinstance(content, list):
            pieces.extend(content)
        elif content:
            pieces.append(content)
    if all(isinstance(piece, str) for piece in pieces):
        return maker.new(item.role, content="\n\n".join(pieces))
    blocks = [{"type": "text", "text": p} if isinstance(p, str) else p for p in pieces]
    return maker.new(item.role, content=blocks)


class LangChain(Format):
    """LangChain message objects (``AIMessage.tool_calls``, ``ToolMessage.tool_call_id``), as
    the LangChain integrations hand them over; they go to many providers, and OpenAI's rules
    are the strictest about adjacency."""

    name = NAME
    native_provider = "openai"
    # a message this format claims is a LangChain message whatever else it looks like (an
    # ``AIMessage`` has ``tool_calls`` like an OpenAI message object, and ``ChatAnthropic``'s
    # carry ``tool_use`` blocks like an Anthropic one): the claim rests on its class
    exclusive = True

    read = staticmethod(read)
    apply = staticmethod(apply)
    claims = staticmethod(claims)
    result_text = staticmethod(result_text)
    call_arguments = staticmethod(call_arguments)
    dirty_spans = staticmethod(dirty_spans)


FORMAT = register(LangChain())
