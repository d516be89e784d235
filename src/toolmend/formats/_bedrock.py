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

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import _jsontext as jsontext
from .._edits import EMPTY_RESULT_TEXT, MessageEdit, Placeholder, Plan
from .._report import InvalidMessageError
from .._skeleton import (
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
from .._spans import DirtyError, FirstOnly, Spans, all_match
from ..profiles import compiled
from . import register
from ._base import Format
from ._blocks import BlockWriter, merge_block_run

if TYPE_CHECKING:
    from ..profiles import Profile

__all__ = [
    "FORMAT",
    "NAME",
    "Bedrock",
    "apply",
    "call_arguments",
    "claims",
    "dirty_spans",
    "quick_valid",
    "read",
    "result_text",
]

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


# --- the one-pass scan -------------------------------------------------------------------------

_OPENAI_SHAPED_CODES = frozenset(
    {
        "call_shape",
        "arguments_not_string",
        "empty_tool_calls",
        "content_null",
        "content_empty",
        "null_content",
        "empty_assistant",
        "empty_history",
    }
)
"""Codes of the profile's rules for OpenAI-shaped histories, which a Converse history never
has (its reader reports none of them; an empty history is left to the full path)."""

_SCANNED_CODES = frozenset(
    {
        "first_not_user",
        "roles_not_alternating",
        "orphan_result",
        "unknown_result_id",
        "duplicate_result",
        "missing_result",
        "result_with_text",
        "call_without_id",
        "call_id_format",
        "result_id_format",
        "result_without_id",
        "text_blank",
        "result_text_blank",
        "call_with_text",
        "misplaced_part",  # a toolUse in a user message: the scan hands it to the full path
    }
)
"""The problem codes the scan rules on: a profile may enable these or some of them (trim's
pairing-only profile; ``role_order`` aside, which judges OpenAI-shaped histories only), or the
full path decides."""


def quick_valid(messages: Sequence[Any], profile: Profile) -> bool:
    """True only when the full ``judge(read(messages), profile)`` would find nothing.

    The valid history is the common case, and it must cost far less than the ``json.dumps``
    every SDK does anyway: this is the scan of :func:`dirty_spans` stopped at the first problem
    (see :class:`toolmend._spans.FirstOnly`), one tight pass that builds nothing per message.
    Anything unusual (other roles, blocks with more than one key, a missing field, a profile
    with other rules) answers False and the full path decides. A property test asserts that
    True always agrees with it.
    """
    try:
        return _scan(messages, profile, first_only=True) == []
    except (DirtyError, KeyError):
        return False


def dirty_spans(messages: Sequence[Any], profile: Profile) -> list[tuple[int, int]] | None:
    """The ranges of ``messages`` that need repair (empty when valid), or None if unknown.

    A range begins at a user message without tool results right after an assistant message
    without calls: nothing waits there, and the roles alternate across it, so each range is
    judged and repaired on its own as in the whole history. It may end after a user message
    whose results answer the calls before them exactly (see :mod:`toolmend._spans`). Anything
    unusual returns None and the full path decides.
    """
    try:
        return _scan(messages, profile, first_only=False)
    except KeyError:  # a required field is missing: the full path names it
        return None


def _scan(
    messages: Sequence[Any], profile: Profile, *, first_only: bool
) -> list[tuple[int, int]] | None:
    """One pass over plain dict messages with the Converse rules of
    :mod:`toolmend._block_rules` written out inline, for :func:`quick_valid` (``first_only``:
    the first problem raises :class:`toolmend._spans.DirtyError`) and :func:`dirty_spans`.

    The rules, message by message: the first message comes from the user and the roles
    alternate; the user message after an assistant message with calls holds one result per
    call and nothing else; a result anywhere else answers nothing. Ids are tested against the
    profile's pattern in one go at the end. Call ids repeated within one message make the
    pairing count-based, so they return None (as do results without an id). A stray result
    reaches back to the first range that called its id, which holds every call the repair of
    the whole history could pair it with; one whose id is called only later returns None."""
    codes = profile.checks.keys() - {"role_order"} - _OPENAI_SHAPED_CODES
    if (
        profile.block_pairing != "converse"
        # quick_valid also rules for a profile with only some of these rules (trim's
        # pairing-only one): the scan applies them all, so it vouches for less, never for more;
        # its ranges are then only a superset of the damaged ones, judged again under the
        # profile. They repair as the whole does because the repair mends only what the
        # profile's rules ask (no role order without those rules, text may stay by results)
        or not codes <= _SCANNED_CODES
        or not (first_only or profile.first_user or "first_not_user" not in codes)
        or profile.call_id_max_length is not None
        or profile.function_name_pattern is not None
        or profile.reasoning_in_tool_turns
        or profile.last_kinds is not None
        or profile.alternation is not None
        or profile.thinking
        or profile.thought_signatures
        or profile.reject_function_ids
        or not messages
    ):
        return None
    # the rules beyond the pairing, which a pairing-only profile (trim's) leaves out
    first_rule = "first_not_user" in codes
    order_rule = "roles_not_alternating" in codes
    text_rule = "result_with_text" in codes
    blank_rule = "text_blank" in codes
    result_blank_rule = "result_text_blank" in codes
    alone_rule = "call_with_text" in codes  # Llama, Mistral: nothing beside toolUse blocks
    texts: list[Any] = []  # the texts the blank-text rules look at, judged together at the end
    keep_text = texts.append
    spans = FirstOnly() if first_only else Spans()
    callers = spans.callers  # every call id -> its first range (dirty_spans)
    ids: list[str] = []  # every call id (quick_valid: only the pattern needs them)
    waiting: set[str] | None = None  # the calls of the previous message, if it made any
    after_model = False  # the previous message came from the assistant
    reused = unanswered = False  # a call id made twice; a call left without its result
    for index, message in enumerate(messages):
        if type(message) is not dict:
            return None
        role = message["role"]
        content = message["content"]
        if type(content) is not list:
            return None
        if role == "assistant":
            if (after_model and (order_rule or waiting)) or (not index and first_rule):
                # the first message, or two assistant messages in a row (the calls of the
                # first of them then go unanswered, under any profile)
                spans.dirty = True
                unanswered = unanswered or bool(waiting)
            calls: set[str] | None = None
            conversation = False  # a block other than toolUse
            for block in content:
                if type(block) is not dict or len(block) != 1:
                    return None
                if "toolUse" not in block:
                    if "toolResult" in block:
                        return None  # a result in an assistant message: unusual
                    conversation = True
                    if blank_rule and "text" in block:
                        keep_text(block["text"])
                    continue
                use = block["toolUse"]
                if type(use) is not dict or type(use["name"]) is not str:
                    return None
                call_id = use["toolUseId"]
                if type(call_id) is not str:
                    return None
                if calls is None:
                    calls = {call_id}
                elif call_id in calls:
                    return None  # one id twice in a message: paired by count
                else:
                    calls.add(call_id)
                if first_only:
                    ids.append(call_id)
                elif call_id not in callers:
                    callers[call_id] = spans.start
                else:
                    reused = True
            if alone_rule and calls and conversation:
                spans.dirty = True
            waiting = calls
            after_model = True
            continue
        if role != "user":
            return None
        expect, waiting = waiting, None
        results = other = False
        settled = True  # every result here answers a call of the message before
        for block in content:
            if type(block) is not dict or len(block) != 1:
                return None
            if "toolResult" not in block:
                if "toolUse" in block:
                    return None  # a call in a user message: unusual
                other = True
                if blank_rule and "text" in block:
                    keep_text(block["text"])
                continue
            result = block["toolResult"]
            if type(result) is not dict:
                return None
            if result_blank_rule:
                parts = result.get("content")
                if type(parts) is list:
                    for part in parts:
                        if type(part) is dict and "text" in part:
                            keep_text(part["text"])
            result_id = result["toolUseId"]
            if type(result_id) is not str:
                return None
            results = True
            if expect and result_id in expect:
                expect.discard(result_id)
            else:
                spans.stray(result_id)
                settled = False
        if not results and expect is None and (after_model or not index):
            spans.clean_point(index)  # a fresh user turn with nothing waiting
        elif (
            expect
            or (results and other and text_rule)
            or (not after_model and index and order_rule)
        ):
            spans.dirty = True  # results missing, text beside results, or two users in a row
            unanswered = unanswered or bool(expect)
        elif results and settled and not first_only:
            spans.end_point(index + 1)  # the results answer the calls before them, exactly
        after_model = False
    if waiting:
        return None  # the last message makes calls: answered, or kept waiting, per policy
    if reused and (unanswered or waiting):
        # a call its placeholder will answer, whose id another call has: the planner gives it
        # a fresh id (issue 32, case 1) only where it sees the other call, so the whole
        # history decides (a range alone would send two results under one id)
        return None
    if texts:
        # two C-level passes: a blank text is rare, and its message may go (and the roles
        # with it), so the full path decides; a text that is no string fails ``str.isspace``
        try:
            if not all(texts) or any(map(str.isspace, texts)):
                return None
        except TypeError:
            return None
    id_pattern = compiled(profile.call_id_pattern)
    if not all_match(id_pattern, ids if first_only else callers) or spans.answered_later():
        return None  # a rare bad id (the full path finds which), or a result before its call
    return spans.finish(len(messages))


def read(messages: Sequence[Any]) -> Skeleton:
    """Read a Converse history into a block-layout skeleton (see
    :class:`toolmend.formats.Format`)."""
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
            blank = _blank_inside(result.get("content"))
            if blank:
                skeleton.defects.append(Defect(index, "result_text_blank", slot, blank))
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


def _blank_inside(payload: Any) -> str:
    """How a toolResult's content breaks the rule on blank text, in the words of the error
    (``"be non-empty"``, ``"contain non-whitespace text"``), or ``""`` when it does not."""
    if not isinstance(payload, list):
        return ""
    for part in payload:
        if isinstance(part, Mapping) and "text" in part:
            text = part["text"]
            if not isinstance(text, str) or not text:
                return "be non-empty"
            if text.isspace():
                return "contain non-whitespace text"
    return ""


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
                    jsontext.dumps(part["json"], ensure_ascii=False, sort_keys=True, default=str)
                )
    return "\n".join(texts)


# --- applying a plan --------------------------------------------------------------------------


def apply(messages: Sequence[Any], plan: Plan) -> list[Any]:
    """Build the repaired list (see :class:`toolmend.formats.Format`)."""
    return _Writer(messages).apply(plan)


class _Writer(BlockWriter):
    """Converse blocks (keyed by their kind) for the shared block writer."""

    roles = _ROLES

    def blocks(self, message: Any) -> list[Any]:
        return list(message.get("content") or ())

    def edited(self, message: Any, edit: MessageEdit) -> dict[str, Any]:
        return _edited(message, edit)

    def edit_block(self, block: Any, slot: int, edit: MessageEdit) -> Any:
        return _edit_block(block, slot, edit)

    def placeholder(self, item: Placeholder) -> dict[str, Any]:
        return {
            "toolResult": {
                "toolUseId": item.call_id,
                "content": [{"text": item.text}],
                "status": "error",
            }
        }

    def text(self, text: str) -> dict[str, Any]:
        return {"text": text}

    def message(self, role: str, blocks: list[Any]) -> dict[str, Any]:
        return {"role": role, "content": blocks}

    def line(self, block: Any) -> str | None:
        if "text" in block:
            return str(block["text"])
        if "toolUse" in block:
            use = block["toolUse"]
            arguments = jsontext.dumps(use.get("input"), ensure_ascii=False, default=str)
            return f"[tool call {use.get('toolUseId')}: {use.get('name')}({arguments})]"
        if "toolResult" in block:
            return _result_as_text(block)
        return None


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
    if result is not None:
        inner = {}
        if slot in edit.result_ids:
            inner["toolUseId"] = edit.result_ids[slot]
        if edit.normalize_results and _blank_inside(result.get("content")):
            kept = [
                part
                for part in result["content"]
                if not (isinstance(part, Mapping) and "text" in part and _blank_text(part["text"]))
            ]
            inner["content"] = kept or [{"text": EMPTY_RESULT_TEXT}]
        return {**block, "toolResult": {**result, **inner}} if inner else block
    if slot in edit.rstrip_text and isinstance(block.get("text"), str):
        return {**block, "text": block["text"].rstrip()}
    return block


def _blank_text(text: Any) -> bool:
    return not isinstance(text, str) or not text or text.isspace()


def _result_as_text(block: Mapping[str, Any]) -> str:
    result = block.get("toolResult") or {}
    text = _payload_text(result.get("content"))
    head = f"[tool result {result.get('toolUseId')}]"
    return f"{head}\n{text}" if text else head


def _is_result(block: Mapping[str, Any]) -> bool:
    return "toolResult" in block


def _is_call(block: Mapping[str, Any]) -> bool:
    return "toolUse" in block


class Bedrock(Format):
    """Bedrock Converse: ``user`` and ``assistant`` messages whose content is a list of blocks
    keyed by their kind (``toolUse``, ``toolResult``, ``text``), with no ``type`` field."""

    name = NAME
    native_provider = "bedrock"
    block_pairing = "converse"

    read = staticmethod(read)
    apply = staticmethod(apply)
    claims = staticmethod(claims)
    result_text = staticmethod(result_text)
    call_arguments = staticmethod(call_arguments)
    quick_valid = staticmethod(quick_valid)
    dirty_spans = staticmethod(dirty_spans)

    def merge_run(self, run: Sequence[Any]) -> dict[str, Any]:
        return merge_block_run(run, "content", _is_result, _is_call, text_blocks=False)


FORMAT = register(Bedrock())
