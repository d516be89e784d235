"""Anthropic Messages API ``messages``: plain dicts (``MessageParam``) and the anthropic SDK's
objects (pydantic content blocks such as ``ToolUseBlock``, ``TextBlock``, ``ThinkingBlock`` in
``content``; message objects with ``role`` and ``content`` attributes).

A message's content is a string or a list of blocks. Calls are ``tool_use`` blocks, results are
``tool_result`` blocks (``slot`` is the block's position), so the skeleton uses the block
layout. Reading touches each message once, with a fast path for the common single-text
message. Applying a plan returns the original object for every message it does not change; a
changed message comes back as a shallow-copied dict whose untouched blocks are the original
objects (the SDK serialises its pydantic blocks itself), and a changed SDK block is copied with
``model_copy``. Thinking blocks are never rewritten: they are kept, moved with their message, or
(when incomplete, which the API refuses) dropped whole.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import _jsontext as jsontext
from .._edits import MessageEdit, Placeholder, Plan
from .._report import InvalidMessageError
from .._skeleton import ASSISTANT, BLOCKS, OTHER, SYSTEM, TOOL, USER, Call, Defect, Result, Skeleton
from .._spans import DirtyError, FirstOnly, Spans, all_match
from ..profiles import compiled
from . import register
from ._base import Format, message_dict
from ._blocks import BlockWriter, merge_block_run

if TYPE_CHECKING:
    from ..profiles import Profile

__all__ = [
    "FORMAT",
    "NAME",
    "Anthropic",
    "apply",
    "call_arguments",
    "claims",
    "dirty_spans",
    "quick_live",
    "quick_valid",
    "read",
    "result_text",
]

NAME = "anthropic"

_TELLING = frozenset(
    {
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "image",
        "document",
        "server_tool_use",
        "web_search_tool_result",
        "search_result",
    }
)
_THINKING = ("thinking", "redacted_thinking")
_ROLES = {USER: "user", TOOL: "user", ASSISTANT: "assistant", SYSTEM: "user", OTHER: "user"}


def _field(block: Any, name: str) -> Any:
    if isinstance(block, Mapping):
        return block.get(name)
    return getattr(block, name, None)


def claims(message: Any) -> bool:
    """Anthropic-only features: ``tool_use``, ``tool_result``, thinking, ``image`` blocks."""
    content = _field(message, "content")
    if isinstance(content, list):
        for block in content:
            kind = _field(block, "type")
            if isinstance(kind, str) and kind in _TELLING:
                return True
    return False


def quick_valid(messages: Sequence[Any], profile: Profile) -> bool:
    """True only when the full ``judge(read(messages), profile)`` would find nothing.

    The valid history is the common case, and it must cost far less than the ``json.dumps``
    every SDK does anyway: this is the scan of :func:`dirty_spans` stopped at the first problem
    (see :class:`toolmend._spans.FirstOnly`), one tight pass that builds nothing per message.
    Anything unusual (SDK objects, other roles, a missing field) answers False and the full
    path decides. A property test asserts that True always agrees with it.
    """
    try:
        return _scan(messages, profile, first_only=True) == []
    except (DirtyError, KeyError):
        return False


_LIVE_ASSISTANT_BLOCKS = frozenset({"text", "tool_use", "thinking", "redacted_thinking"})
"""The assistant blocks :func:`quick_live` reads; any other block sends the guard its own way."""


def quick_live(
    messages: Sequence[Any], profile: Profile
) -> tuple[int, list[tuple[str, Any]]] | None:
    """:func:`quick_valid`, and the loop guard's live run: None when it cannot vouch; else the
    number of tool rounds after the last user prompt and each of their calls as (name,
    ``input``), for the hooks' fast path (:func:`toolmend._fastpath.vouch`).

    Never less than the guard would read: a round is an assistant message with ``tool_use``
    blocks, and the run starts after the last user message holding no ``tool_result`` (a user
    message of results with text beside them does not end it), so
    :func:`toolmend._loops.quiet_live_run` errs towards asking the guard."""
    if not quick_valid(messages, profile):
        return None
    rounds = 0
    calls: list[tuple[str, Any]] = []
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if type(message) is not dict:
            return None
        content = message.get("content")
        if message.get("role") == "user":
            if type(content) is str or (
                type(content) is list
                and all(type(b) is dict and b.get("type") != "tool_result" for b in content)
            ):
                break
            continue
        if type(content) is not list:
            continue
        made = False
        for block in content:
            kind = block.get("type") if type(block) is dict else None
            if kind not in _LIVE_ASSISTANT_BLOCKS:
                return None
            if kind == "tool_use":
                name = block.get("name")
                if type(name) is not str or not name:
                    return None
                calls.append((name, block.get("input")))
                made = True
        rounds += made
    return rounds, calls


def dirty_spans(messages: Sequence[Any], profile: Profile) -> list[tuple[int, int]] | None:
    """The ranges of ``messages`` that need repair (empty when valid), or None if unknown.

    Ranges begin at every assistant turn, and at a user turn that answers no calls (see
    :mod:`toolmend._spans`): the API merges consecutive same-role messages into turns, and a
    call is answered in the very next turn, so only a stray result or a reused id bears across
    such a boundary, and those pull their range back. A damaged range is then about one
    exchange long. Anything unusual (SDK objects, other roles, thinking required) returns None
    and the full path decides.
    """
    try:
        spans = _scan(messages, profile, first_only=False)
    except KeyError:  # a required field is missing: the full path names it
        return None
    if (
        spans
        and spans[-1][1] == len(messages)
        and "thinking_final_assistant_disabled" in profile.checks
    ):
        return None  # mending the tail may leave a thinking message last: the whole decides
    return spans


def _scan(
    messages: Sequence[Any], profile: Profile, *, first_only: bool
) -> list[tuple[int, int]] | None:
    """One pass over plain dict messages with the Anthropic rules of :mod:`toolmend._block_rules`
    written out inline, for :func:`quick_valid` (``first_only``: the first problem raises
    :class:`toolmend._spans.DirtyError`) and :func:`dirty_spans`. This is the valid history's whole
    cost, so it allocates nothing per message and creates sets only for turns with calls; the
    fields every message and block must have are read by subscript (a missing one raises
    ``KeyError``, which the callers take for "cannot tell").

    With thinking on, the rule on the assistant turn answered by the final results is checked
    at the end, for the first question only: it looks at the whole request, so the ranges of a
    damaged history are left to the full path.
    """
    thinking = profile.thinking
    if (
        profile.block_pairing != "turns"
        or (thinking and not first_only)
        or profile.first_user
        or not messages
    ):
        return None
    if "prefill_unsupported" in profile.checks:
        final = messages[-1]
        if type(final) is not dict or final.get("role") != "user":
            return None  # a rule on where the whole request ends: the full path decides
    id_pattern = compiled(profile.call_id_pattern)
    name_pattern = compiled(profile.function_name_pattern)
    name_ok = name_pattern.fullmatch if name_pattern is not None else None
    spans = FirstOnly() if first_only else Spans()
    callers = spans.callers  # every call id so far -> its range (also finds duplicates)
    ids: list[str] = []  # every call id, for the first question (cheaper than ``callers``)
    good_names: set[str] = set()  # names already found acceptable (tools repeat)
    pending: set[str] | None = None  # calls of the current assistant turn
    expect: set[str] | None = None  # calls the current user turn must still answer
    closed = True  # no other block after a call in the current assistant turn
    thinks = False  # the current assistant turn starts with a thinking block (thinking on)
    answers = False  # the current user turn follows an assistant turn with calls
    results = False  # the current user turn carries a result
    in_user = False
    leading = False  # still in the leading run of results of a user turn that answers calls
    last = len(messages) - 1
    for index, message in enumerate(messages):
        if type(message) is not dict:
            return None
        role = message["role"]
        content = message["content"]
        if role == "user":
            if not in_user:
                in_user, results = True, False
                expect, pending = pending, None
                if expect is None:  # (a pending set is never empty)
                    if not first_only:
                        spans.clean_point(index)
                    leading = answers = False
                else:
                    leading = answers = True
                    if not closed:
                        spans.dirty = True
            if type(content) is not list:
                if type(content) is not str:
                    return None
                if not content or content.isspace():
                    spans.dirty = True
                leading = False
                continue
            if not content:
                spans.dirty = True
            for block in content:
                if type(block) is not dict:
                    return None
                kind = block["type"]
                if kind == "tool_result":
                    results = True
                    result_id = block["tool_use_id"]
                    if leading and type(result_id) is str and expect and result_id in expect:
                        expect.discard(result_id)
                        nested = block.get("content")
                        if type(nested) is list and _nested_blank(nested):
                            spans.dirty = True
                    else:
                        spans.stray(result_id)
                    continue
                leading = False
                if kind == "text":
                    text = block.get("text")
                    if type(text) is not str or not text or text.isspace():
                        spans.dirty = True
                elif kind in _THINKING or kind == "tool_use":
                    return None
            continue
        if role != "assistant":
            return None
        if in_user or index == 0:
            if expect:
                spans.dirty = True  # the user turn left calls unanswered
            if in_user and not first_only:  # nothing waits across a turn boundary: a range
                spans.clean_point(index)  # may start here too
            in_user, pending, expect, closed = False, None, None, True
            if thinking:
                first = content[0] if type(content) is list and content else None
                thinks = type(first) is dict and first.get("type") in _THINKING
        if type(content) is not list:
            if type(content) is not str:
                return None
            if pending:
                closed = False
            if not content or content.isspace():
                if content or index != last:
                    spans.dirty = True
            elif index == last and content[-1].isspace():
                spans.dirty = True
            continue
        if not content and index != last:
            spans.dirty = True
        for block in content:
            if type(block) is not dict:
                return None
            kind = block["type"]
            if kind == "tool_use":
                call_id = block["id"]
                if type(call_id) is str:
                    if first_only:
                        ids.append(call_id)
                    elif call_id in callers:
                        spans.stray(call_id)
                    else:
                        callers[call_id] = spans.start
                else:
                    spans.dirty = True
                    call_id = f"\0{index}"  # it waits, and no result can answer it
                if pending is None:
                    pending = {call_id}
                else:
                    pending.add(call_id)
                name = block["name"]
                if type(name) is not str or name not in good_names:
                    if type(name) is not str or not name or (name_ok and not name_ok(name)):
                        spans.dirty = True
                    else:
                        good_names.add(name)
                if type(block["input"]) is not dict:
                    spans.dirty = True
                continue
            if pending:
                closed = False
            if kind == "text":
                text = block.get("text")
                if type(text) is not str or not text or text.isspace():
                    spans.dirty = True
            elif kind == "thinking":
                if block.get("thinking") is None or block.get("signature") is None:
                    spans.dirty = True
            elif kind == "redacted_thinking":
                if block.get("data") is None:
                    spans.dirty = True
            elif kind == "tool_result":
                return None
        if index == last and content:
            block = content[-1]
            text = block.get("text") if block.get("type") == "text" else None
            if type(text) is str and text and text[-1].isspace():
                spans.dirty = True
    if in_user and (expect or (thinking and answers and results and not thinks)):
        spans.dirty = True  # calls left unanswered, or thinking required and missing
    if not in_user and pending:
        # the request ends on calls (issue 32, case 7): a rule on the whole history's end,
        # which a range judged alone cannot tell, so the full path decides
        if first_only:
            spans.dirty = True
        return None
    if (
        not in_user
        and "thinking_final_assistant_disabled" in profile.checks
        and type(content) is list
        and any(type(block) is dict and block.get("type") in _THINKING for block in content)
    ):
        return None  # a rule on the whole request's final message: the full path decides
    if first_only and "duplicate_call_id" in profile.checks and len(set(ids)) != len(ids):
        # A reused call id breaks only ``duplicate_call_id``; trim's pairing profile leaves it
        # to the provider's own (the ranges, for the planner, still treat it as a tie).
        spans.dirty = True
    if not all_match(id_pattern, ids if first_only else callers) or spans.answered_later():
        return None  # a rare bad id (the full path finds which), or a result before its call
    found = spans.finish(len(messages))
    if found and (
        (found[-1][0] and found[-1][1] == len(messages) and _ends_by_rule(messages[-1]))
        or (pending and not closed)
    ):
        # The last range ends the history, which a range judged alone cannot tell; or the
        # history ends on calls with text after them in their turn, a prefill the rules let
        # be but the repair of a damaged history answers: leave both to the full path.
        return None
    return found


def _ends_by_rule(message: dict[str, Any]) -> bool:
    """Whether the final message falls under a rule that holds only where the history really
    ends: an assistant message that is empty (allowed last) or ends in whitespace (refused
    last). A range that ends the history is judged as a slice, which would get both wrong."""
    if message.get("role") != "assistant":
        return False
    content = message.get("content")
    if not content:
        return True
    if type(content) is str:
        return content[-1].isspace()
    block = content[-1]
    text = block.get("text") if type(block) is dict and block.get("type") == "text" else None
    return type(text) is str and bool(text) and text[-1].isspace()


def _role_and_content(message: Any, index: int) -> tuple[str, Any]:
    if isinstance(message, Mapping):
        role, content = message.get("role"), message.get("content")
    elif hasattr(message, "role") and hasattr(message, "content"):
        role, content = message.role, message.content
    else:
        raise InvalidMessageError(
            index, "", "a message dict or object with role and content", message
        )
    if type(role) is not str:
        if isinstance(role, str):  # a str subclass, like an enum member
            role = str(getattr(role, "value", role))
        else:
            raise InvalidMessageError(index, "role", "a string", role)
    return role, content


def read(messages: Sequence[Any]) -> Skeleton:
    """Read an Anthropic history into a block-layout skeleton (see
    :class:`toolmend.formats.Format`)."""
    skeleton = Skeleton(NAME, layout=BLOCKS)
    kinds, roles, defects = skeleton.kinds, skeleton.roles, skeleton.defects
    last = len(messages) - 1
    for index, message in enumerate(messages):
        if type(message) is dict:
            role, content = message.get("role"), message.get("content")
            if type(role) is not str:
                role, content = _role_and_content(message, index)
        else:
            role, content = _role_and_content(message, index)
        roles.append(role)
        if type(content) is str:
            kinds.append(
                ASSISTANT if role == "assistant" else USER if role == "user" else _kind(role)
            )
            if not content or content.isspace():
                code = "empty_content" if not content else "text_whitespace"
                if not content and index == last and role == "assistant":
                    code = "final_empty"  # allowed, unless this is only a slice of the history
                defects.append(Defect(index, code, 0 if content else -1))
                skeleton.extras[index] = (0,) if content else ()
            continue
        if type(content) is list and len(content) == 1:
            block = content[0]
            if type(block) is dict and block.get("type") == "text":
                text = block.get("text")
                if type(text) is str and text and not text.isspace():
                    kinds.append(
                        ASSISTANT
                        if role == "assistant"
                        else USER
                        if role == "user"
                        else _kind(role)
                    )
                    continue
        if not isinstance(content, (list, tuple)):
            raise InvalidMessageError(index, "content", "a string or a list of blocks", content)
        _read_blocks(skeleton, index, role, content, index == last)
    if messages and kinds[last] == ASSISTANT:
        _check_trailing_whitespace(skeleton, last, messages[last])
    return skeleton


def _kind(role: str) -> str:
    if role == "assistant":
        return ASSISTANT
    if role == "user":
        return USER
    return SYSTEM if role == "system" else OTHER


def _read_blocks(
    skeleton: Skeleton, index: int, role: str, content: Sequence[Any], last: bool
) -> None:
    calls: list[Call] = []
    results: list[Result] = []
    extras: list[int] = []
    defects = skeleton.defects
    flawed = False
    for slot, block in enumerate(content):
        get: Callable[[str], Any]
        if type(block) is dict or isinstance(block, Mapping):
            get = block.get
        elif hasattr(block, "type"):
            get = _attributes(block)
        else:
            raise InvalidMessageError(index, f"content[{slot}]", "a content block", block)
        kind = get("type")
        if kind == "tool_use":
            calls.append(_read_call(skeleton, index, slot, get))
            continue
        if calls:
            skeleton.mark("interleaved", index)
        if kind == "tool_result":
            result_id = get("tool_use_id")
            if result_id is not None and type(result_id) is not str:
                raise InvalidMessageError(
                    index, f"content[{slot}].tool_use_id", "a string", result_id
                )
            results.append(Result(result_id, None, slot))
            if _nested_blank(get("content")):
                defects.append(Defect(index, "text_empty", slot, "content"))
                flawed = True
            continue
        extras.append(slot)
        if kind == "text":
            text = get("text")
            if not isinstance(text, str) or not text:
                defects.append(Defect(index, "text_empty", slot, "text"))
                flawed = True
            elif text.isspace():
                defects.append(Defect(index, "text_whitespace", slot, "text"))
                flawed = True
        elif kind in _THINKING:
            skeleton.mark("thinking", index)
            if slot == 0:
                skeleton.mark("thinking_first", index)
            if role == "assistant":
                # refused in the final message with thinking off; elsewhere no rule's defect,
                # but where its blocks are, should the repair leave this message last
                code = "final_thinking" if last else "thinking_block"
                defects.append(Defect(index, code, slot, kind))
            missing = _missing_thinking_field(kind, get)
            if missing:
                defects.append(Defect(index, "thinking_fields", slot, missing))
                flawed = True
    if not content:
        code = "final_empty" if last and role == "assistant" else "empty_content"
        defects.append(Defect(index, code, -1, "content"))
        flawed = True
    kind_of = _kind(role)
    if kind_of != ASSISTANT and results:
        kind_of = TOOL
    skeleton.kinds.append(kind_of)
    if calls:
        skeleton.calls[index] = tuple(calls)
    if results:
        skeleton.results[index] = tuple(results)
    if calls or results or flawed:
        skeleton.extras[index] = tuple(extras)


def _attributes(block: Any) -> Callable[[str], Any]:
    return lambda name: getattr(block, name, None)


def _read_call(skeleton: Skeleton, index: int, slot: int, get: Callable[[str], Any]) -> Call:
    call_id, name = get("id"), get("name")
    if type(call_id) is str and type(name) is str:  # the common case, in short
        if type(get("input")) is not dict and not isinstance(get("input"), Mapping):
            skeleton.defects.append(Defect(index, "input_not_object", slot, "input"))
        return Call(call_id, name, slot)
    if call_id is not None and type(call_id) is not str:
        raise InvalidMessageError(index, f"content[{slot}].id", "a string", call_id)
    if name is not None and not isinstance(name, str):
        raise InvalidMessageError(index, f"content[{slot}].name", "a string", name)
    if not isinstance(get("input"), Mapping):
        skeleton.defects.append(Defect(index, "input_not_object", slot, "input"))
    return Call(call_id, name, slot)


def _missing_thinking_field(kind: str, get: Callable[[str], Any]) -> str:
    if kind == "redacted_thinking":
        return "" if get("data") is not None else "redacted_thinking.data"
    if get("thinking") is None:
        return "thinking.thinking"
    if get("signature") is None:
        return "thinking.signature"
    return ""


def _nested_blank(content: Any) -> bool:
    if not isinstance(content, list):
        return False
    for block in content:
        if _field(block, "type") == "text":
            text = _field(block, "text")
            if not isinstance(text, str) or not text or text.isspace():
                return True
    return False


def _check_trailing_whitespace(skeleton: Skeleton, index: int, message: Any) -> None:
    """A final assistant message may not end with whitespace (a prefill). Recorded as
    ``final_whitespace``: the rules report it only when the skeleton is the whole history."""
    content = _field(message, "content")
    if isinstance(content, str):
        if content and content[-1].isspace() and not content.isspace():
            skeleton.defects.append(Defect(index, "final_whitespace", 0, "text"))
            skeleton.extras.setdefault(index, (0,))
        return
    if not content:
        return
    block = content[-1]
    if _field(block, "type") == "text":
        text = _field(block, "text")
        if isinstance(text, str) and text and text[-1].isspace() and not text.isspace():
            skeleton.defects.append(Defect(index, "final_whitespace", len(content) - 1, "text"))


def call_arguments(message: Any, slot: int) -> Any:
    """The ``input`` of the ``tool_use`` block at ``slot`` (for the loop guard)."""
    content = _field(message, "content")
    if not isinstance(content, list) or slot >= len(content):
        return None
    return _field(content[slot], "input")


def result_text(message: Any, slot: int) -> str | None:
    """The text of the ``tool_result`` block at ``slot``."""
    content = _field(message, "content")
    if not isinstance(content, list) or slot >= len(content):
        return None
    return _payload_text(_field(content[slot], "content"))


def _payload_text(payload: Any) -> str | None:
    if payload is None:
        return ""
    if isinstance(payload, str):
        return payload
    if isinstance(payload, list):
        texts = [_field(block, "text") for block in payload]
        return "\n".join(text for text in texts if isinstance(text, str))
    return None


# --- applying a plan --------------------------------------------------------------------------


def apply(messages: Sequence[Any], plan: Plan) -> list[Any]:
    """Build the repaired list (see :class:`toolmend.formats.Format`)."""
    return _Writer(messages).apply(plan)


class _Writer(BlockWriter):
    """Anthropic blocks for the shared block writer."""

    roles = _ROLES

    def blocks(self, message: Any) -> list[Any]:
        return _blocks(_field(message, "content"))

    def edited(self, message: Any, edit: MessageEdit) -> dict[str, Any]:
        return _edited(message, edit)

    def edit_block(self, block: Any, slot: int, edit: MessageEdit) -> Any:
        return _edit_block(block, slot, edit)

    def placeholder(self, item: Placeholder) -> dict[str, Any]:
        return {
            "type": "tool_result",
            "tool_use_id": item.call_id,
            "content": item.text,
            "is_error": True,
        }

    def text(self, text: str) -> dict[str, Any]:
        return _text(text)

    def message(self, role: str, blocks: list[Any]) -> dict[str, Any]:
        return {"role": role, "content": blocks}

    def bridge(self, role: str, text: str) -> dict[str, Any]:
        return {"role": role, "content": text}

    def gathered(self, new: Any, sources: list[Any]) -> Any:
        """A message's other keys (``name``, a message-level ``cache_control``, unknown extra
        keys) survive when its ``tool_result`` blocks are moved out and the message is gone
        (issue 32, case 10): the new message takes them, the first source's first, in their
        order; its own ``role`` and ``content`` win. Only for the same role (a user message
        gathering results)."""
        carried: dict[str, Any] = {}
        for source in sources:
            if isinstance(source, Mapping) and source.get("role") == new["role"]:
                for key, value in source.items():
                    carried.setdefault(key, value)
        if not carried:
            return new
        carried.update(new)
        return carried

    def line(self, block: Any) -> str | None:
        """A thinking block's text is kept (marked as such): written out, the exchange must
        still show what the model thought; a redacted block has no readable text."""
        kind = _field(block, "type")
        if kind == "text":
            return str(_field(block, "text") or "")
        if kind == "thinking" and _field(block, "thinking"):
            return f"[thinking]\n{_field(block, 'thinking')}"
        if kind == "tool_use":
            arguments = jsontext.dumps(_field(block, "input"), ensure_ascii=False, default=str)
            return f"[tool call {_field(block, 'id')}: {_field(block, 'name')}({arguments})]"
        if kind == "tool_result":
            return _result_as_text(block)
        return None


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _as_dict(message: Any) -> dict[str, Any]:
    if isinstance(message, Mapping):
        return dict(message)
    return {"role": _field(message, "role"), "content": _field(message, "content")}


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [_text(content)]
    return list(content or ())


def _edited(message: Any, edit: MessageEdit) -> dict[str, Any]:
    """A shallow copy of ``message`` with ``edit`` applied; blocks copied only where changed."""
    copy = _as_dict(message)
    for key in edit.drop_fields:
        copy.pop(key, None)
    copy.update(edit.set_fields)
    content = copy.get("content")
    if isinstance(content, str) and not edit.drop_blocks and not edit.results_as_text:
        if 0 in edit.rstrip_text:
            copy["content"] = content.rstrip()
        return copy
    blocks = [
        _edit_block(block, slot, edit)
        for slot, block in enumerate(_blocks(content))
        if slot not in edit.drop_blocks
    ]
    if edit.calls_last:
        blocks = [b for b in blocks if _field(b, "type") != "tool_use"] + [
            b for b in blocks if _field(b, "type") == "tool_use"
        ]
    copy["content"] = blocks
    return copy


def _edit_block(block: Any, slot: int, edit: MessageEdit) -> Any:
    kind = _field(block, "type")
    if slot in edit.results_as_text:
        return _text(_result_as_text(block))
    changes: dict[str, Any] = {}
    if kind == "tool_use":
        if slot in edit.call_ids:
            changes["id"] = edit.call_ids[slot]
        if slot in edit.call_names:
            changes["name"] = edit.call_names[slot]
        if edit.normalize_calls and not isinstance(_field(block, "input"), Mapping):
            changes["input"] = _as_object(_field(block, "input"))
    elif kind == "tool_result":
        if slot in edit.result_ids:
            changes["tool_use_id"] = edit.result_ids[slot]
        if edit.normalize_results and _nested_blank(_field(block, "content")):
            changes["content"] = [
                part
                for part in _field(block, "content")
                if not (_field(part, "type") == "text" and _blank(_field(part, "text")))
            ]
    elif kind == "text" and slot in edit.rstrip_text:
        changes["text"] = str(_field(block, "text") or "").rstrip()
    if not changes:
        return block
    if isinstance(block, Mapping):
        return {**block, **changes}
    copier = getattr(block, "model_copy", None)
    if callable(copier):
        return copier(update=changes)
    return {**message_dict(block), **changes}


def _blank(text: Any) -> bool:
    return not isinstance(text, str) or not text or text.isspace()


def _as_object(value: Any) -> dict[str, Any]:
    """``tool_use.input`` as an object: JSON text parsed, anything else wrapped."""
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            parsed = jsontext.loads(value)
        except ValueError:
            return {"input": value}
        return parsed if isinstance(parsed, dict) else {"input": parsed}
    return {"input": value}


def _result_as_text(block: Any) -> str:
    text = _payload_text(_field(block, "content")) or ""
    head = f"[tool result {_field(block, 'tool_use_id')}]"
    return f"{head}\n{text}" if text else head


def _is_result(block: Mapping[str, Any]) -> bool:
    return block.get("type") == "tool_result"


def _is_call(block: Mapping[str, Any]) -> bool:
    return block.get("type") in ("tool_use", "server_tool_use")


class Anthropic(Format):
    """Anthropic Messages: ``user`` and ``assistant`` messages whose content is a string or a
    list of typed blocks (``tool_use`` in the assistant turn, ``tool_result`` in the next user
    turn)."""

    name = NAME
    native_provider = "anthropic"
    block_pairing = "turns"

    read = staticmethod(read)
    apply = staticmethod(apply)
    claims = staticmethod(claims)
    result_text = staticmethod(result_text)
    call_arguments = staticmethod(call_arguments)
    quick_valid = staticmethod(quick_valid)
    quick_live = staticmethod(quick_live)
    dirty_spans = staticmethod(dirty_spans)

    def merge_run(self, run: Sequence[Any]) -> dict[str, Any]:
        return merge_block_run(run, "content", _is_result, _is_call, text_blocks=True)


FORMAT = register(Anthropic())
