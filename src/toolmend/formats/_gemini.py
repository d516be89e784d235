"""Gemini ``contents``: REST dicts in camelCase or snake_case, google-genai ``types.Content`` /
``types.Part`` objects, and every other shape ``generate_content`` accepts as ``contents``.

Each Content has a ``role`` (``"user"``, ``"model"``; missing means user) and ``parts``. Calls
are ``functionCall`` parts ``{name, args, id}``, results are ``functionResponse`` parts
``{name, response, id}`` (``slot`` is the part's position), so the skeleton uses the block
layout. ``thoughtSignature`` sits on the Part.

:func:`normalize` turns the shapes google-genai's ``t_contents`` accepts (a string, a Part, a
Content, a part dict, a list of Parts or strings, a list mixing Contents and parts, an inner list
of parts) into a list of Contents grouped the way the SDK groups them; a list that already holds
only Contents is returned as it is, so valid input still comes back as the caller's own object.

Applying a plan returns the original object for every Content it does not change. A changed
dict Content is a shallow-copied dict; a changed SDK Content is ``model_copy``-ed with new
parts, and a changed SDK Part likewise. New Contents are built as dicts, or, when the history
holds SDK objects, with that Content class's ``model_validate`` (no SDK import here). New dict
parts follow the history's key style (camelCase or snake_case).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import _jsontext as jsontext
from .._edits import MessageEdit, Placeholder, Plan
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
from .._spans import DirtyError, FirstOnly, Spans
from . import register
from ._base import Format
from ._blocks import BlockWriter, merge_block_run

if TYPE_CHECKING:
    from ..profiles import Profile

__all__ = [
    "FORMAT",
    "NAME",
    "SKIP_SIGNATURE",
    "Gemini",
    "apply",
    "call_arguments",
    "claims",
    "dirty_spans",
    "normalize",
    "quick_valid",
    "read",
    "result_text",
]

NAME = "gemini"

SKIP_SIGNATURE = "skip_thought_signature_validator"
"""The documented placeholder thought signature for a function call whose history came from
elsewhere (https://ai.google.dev/gemini-api/docs/thought-signatures, FAQ). On the wire it is
this very text; SDK Parts get the bytes that the SDK's base64 encoding turns back into it."""

_SKIP_BYTES = base64.urlsafe_b64decode(SKIP_SIGNATURE)

_CAMEL = {
    "function_call": "functionCall",
    "function_response": "functionResponse",
    "thought_signature": "thoughtSignature",
}
_DATA_KEYS = frozenset(
    {
        "text",
        "inlineData",
        "inline_data",
        "fileData",
        "file_data",
        "functionCall",
        "function_call",
        "functionResponse",
        "function_response",
        "executableCode",
        "executable_code",
        "codeExecutionResult",
        "code_execution_result",
        "toolCall",
        "tool_call",
        "toolResponse",
        "tool_response",
    }
)
_PART_KEYS = _DATA_KEYS | {"thought", "thoughtSignature", "thought_signature", "videoMetadata"}
_DATA_ATTRIBUTES = (
    "text",
    "inline_data",
    "file_data",
    "executable_code",
    "code_execution_result",
    "tool_call",
    "tool_response",
)
_ROLES = {USER: "user", TOOL: "user", ASSISTANT: "model", SYSTEM: "user", OTHER: "user"}


def _get(mapping: Mapping[str, Any], name: str) -> Any:
    """A part field under its snake_case name or its camelCase alias."""
    value = mapping.get(name)
    if value is None and name in _CAMEL:
        value = mapping.get(_CAMEL[name])
    return value


def _field(thing: Any, name: str) -> Any:
    if isinstance(thing, Mapping):
        return _get(thing, name)
    return getattr(thing, name, None)


def _is_content(item: Any) -> bool:
    if isinstance(item, Mapping):
        return "parts" in item or "role" in item or not item
    return hasattr(item, "parts") and hasattr(item, "role")


def _is_part(item: Any) -> bool:
    if isinstance(item, str):
        return True
    if isinstance(item, Mapping):
        return bool(item) and "parts" not in item and "role" not in item
    return _is_part_object(item) or hasattr(item, "uri")


def claims(message: Any) -> bool:
    """Gemini-only features: ``parts``, the ``model`` role, a Part or a google-genai object."""
    if isinstance(message, Mapping):
        if "parts" in message or message.get("role") == "model":
            return True
        return (
            "role" not in message and "content" not in message and bool(message.keys() & _PART_KEYS)
        )
    if isinstance(message, str):
        return False
    return (hasattr(message, "parts") and hasattr(message, "role")) or _is_part_object(message)


def _is_part_object(item: Any) -> bool:
    """A google-genai ``types.Part`` (by its fields: OpenAI's message objects also have a
    ``function_call`` attribute)."""
    return hasattr(item, "function_response") and hasattr(item, "inline_data")


# --- normalising ------------------------------------------------------------------------------


def normalize(contents: Any) -> Sequence[Any]:
    """``contents`` as a list of Contents, grouped as google-genai's ``t_contents`` does.

    A list or tuple that holds only Contents (dicts with ``role``/``parts`` or objects with
    those attributes) is returned as it is. A single Content is wrapped in a new list; parts
    become user Contents, or model Contents for runs of function-call parts; an inner list
    becomes one user Content.
    """
    if isinstance(contents, (list, tuple)):
        for item in contents:
            if type(item) is dict:
                if "parts" in item or "role" in item:
                    continue
                break
            if not (hasattr(item, "parts") and hasattr(item, "role")):
                break
        else:
            return contents
        return _grouped(contents)
    if _is_content(contents):
        return [contents]
    if isinstance(contents, Mapping) or _is_part(contents):
        return _grouped([contents])
    raise InvalidMessageError(0, "", "Gemini contents (a Content, a Part or a list)", contents)


def _grouped(items: Sequence[Any]) -> list[Any]:
    out: list[Any] = []
    run: list[Any] = []
    run_model = False

    def flush() -> None:
        if run:
            out.append({"role": "model" if run_model else "user", "parts": list(run)})
            run.clear()

    for position, item in enumerate(items):
        if isinstance(item, list):
            flush()
            out.append({"role": "user", "parts": [_as_part(p, position) for p in item]})
        elif _is_content(item):
            flush()
            out.append(item)
        elif _is_part(item):
            part = _as_part(item, position)
            is_model = _field(part, "function_call") is not None
            if run and is_model != run_model:
                flush()
            run_model = is_model
            run.append(part)
        else:
            raise InvalidMessageError(position, "", "a Content, a Part or a string", item)
    flush()
    return out


def _as_part(item: Any, position: int) -> Any:
    if isinstance(item, str):
        return {"text": item}
    if not isinstance(item, Mapping) and hasattr(item, "uri") and not hasattr(item, "text"):
        return {"file_data": {"file_uri": item.uri, "mime_type": getattr(item, "mime_type", None)}}
    if isinstance(item, Mapping) or _is_part_object(item):
        return item
    raise InvalidMessageError(position, "parts", "a Part, a part dict or a string", item)


# --- the one-pass scan -------------------------------------------------------------------------


def quick_valid(contents: Sequence[Any], profile: Profile) -> bool:
    """True only when the full ``judge(read(contents), profile)`` would find nothing.

    The valid history is the common case, and it must cost far less than the ``json.dumps``
    every SDK does anyway: this is the scan of :func:`dirty_spans` stopped at the first problem
    (see :class:`toolmend._spans.FirstOnly`), one tight pass that builds nothing per Content.
    Anything unusual (other roles, parts of other kinds) answers False and the full path
    decides. google-genai Contents (what ADK and the SDK's chats hold) are scanned through
    :func:`_plain_views`. A property test asserts that True always agrees with it.
    """
    if contents and isinstance(contents, list) and type(contents[0]) is not dict:
        views = _plain_views(contents)
        if views is None:
            return False
        contents = views
    try:
        return _scan(contents, profile, first_only=True) == []
    except DirtyError:
        return False


_VIEW_CONTENT = frozenset({"role", "parts"})
_VIEW_PART = frozenset({"text", "function_call", "function_response", "thought_signature"})
_VIEW_TEXT = frozenset({"text", "thought_signature"})
_VIEW_CALL = frozenset({"name", "id", "args"})
_VIEW_RESPONSE = frozenset({"name", "id", "response"})


def _only(thing: Any, fields: frozenset[str]) -> bool:
    """Whether the pydantic object ``thing`` has no field set outside ``fields`` (a field set
    to None counts as unset)."""
    found = getattr(thing, "__pydantic_fields_set__", None)
    if type(found) is not set:
        return False
    if found <= fields:  # nearly always: only these were ever set
        return True
    return not any(getattr(thing, name, None) is not None for name in found - fields)


def _plain_views(contents: Sequence[Any]) -> list[Any] | None:
    """google-genai Contents as the REST dicts :func:`_scan` reads, holding the same values
    (built only for the scan, never returned to a caller); None as soon as a Content holds
    anything but text, function calls and responses, and thought signatures (the full path
    reads those).

    A pydantic object keeps its field values in its ``__dict__`` under the snake_case names the
    scan reads, so a text part is scanned through its own ``__dict__`` (read, never written)
    and a call or response part through a small dict of its fields' ``__dict__``s."""
    views: list[Any] = []
    for content in contents:
        if type(content) is dict:
            views.append(content)
            continue
        fields = getattr(content, "__pydantic_fields_set__", None)
        if type(fields) is not set or not (
            fields <= _VIEW_CONTENT or _only(content, _VIEW_CONTENT)
        ):
            return None
        parts = content.parts
        if type(parts) is not list:
            return None
        out = []
        for part in parts:
            fields = getattr(part, "__pydantic_fields_set__", None)
            if (
                type(fields) is set
                and fields <= _VIEW_TEXT
                and part.text is not None
                and part.function_call is None
                and part.function_response is None
            ):
                out.append(part.__dict__)  # a text part: nothing else is set
                continue
            if type(fields) is not set or not (fields <= _VIEW_PART or _only(part, _VIEW_PART)):
                return None
            text, call, response = part.text, part.function_call, part.function_response
            if (text is not None) + (call is not None) + (response is not None) > 1:
                return None  # the dict and object readers look at these in different orders
            view: dict[str, Any] = {}
            if text is not None:
                view["text"] = text
            if part.thought_signature is not None:
                view["thought_signature"] = part.thought_signature
            if call is not None:
                fields = getattr(call, "__pydantic_fields_set__", None)
                if type(fields) is not set or not (fields <= _VIEW_CALL or _only(call, _VIEW_CALL)):
                    return None
                view["function_call"] = call.__dict__
            if response is not None:
                fields = getattr(response, "__pydantic_fields_set__", None)
                if type(fields) is not set or not (
                    fields <= _VIEW_RESPONSE or _only(response, _VIEW_RESPONSE)
                ):
                    return None
                view["function_response"] = response.__dict__
            out.append(view)
        views.append({"role": content.role, "parts": out})
    return views


def dirty_spans(contents: Sequence[Any], profile: Profile) -> list[tuple[int, int]] | None:
    """The ranges of ``contents`` that need repair (empty when valid), or None if unknown.

    Ranges begin at a user prompt that does not answer calls, and may end after a response
    turn that answers its call turn exactly (see :mod:`toolmend._spans`). SDK objects, other
    roles, endpoints without ids, and a damaged Gemini 3 history (its signature rule looks at
    the whole request) return None.
    """
    return _scan(contents, profile, first_only=False)


def _scan(
    contents: Sequence[Any], profile: Profile, *, first_only: bool
) -> list[tuple[int, int]] | None:
    """One pass over REST dict contents with the Gemini rules of :mod:`toolmend._block_rules`
    written out inline, for :func:`quick_valid` (``first_only``: the first problem raises
    :class:`toolmend._spans.DirtyError`) and :func:`dirty_spans`. An endpoint without ids is
    scanned only for the first question: any id is a problem there, and the repair of one
    strips ids wherever they are."""
    if (
        profile.block_pairing != "contents"
        or (profile.reject_function_ids and not first_only)
        or not contents
        or not isinstance(contents, list)
    ):
        return None
    signatures = profile.thought_signatures
    reject_ids = profile.reject_function_ids
    spans = FirstOnly() if first_only else Spans()
    callers = spans.callers
    previous: list[Any] | None = None  # the calls of the previous content, if it made any
    previous_model = False
    call_range = -1  # where the latest call turn's range starts
    unsigned = False  # a model content since the last prompt has an unsigned first call
    for index, content in enumerate(contents):
        if type(content) is not dict:
            return None
        role = content.get("role")
        parts = content.get("parts")
        if type(parts) is not list:
            return None
        if role == "model":
            model = True
        elif role == "user" or role is None:
            model = False
        else:
            return None
        if len(parts) == 1:  # the common plain text turn, in short
            part = parts[0]
            text = part.get("text") if type(part) is dict else None
            if type(text) is str:
                if previous is not None:
                    spans.dirty = True  # the call turn before it got no responses
                elif not model:
                    spans.clean_point(index)
                    unsigned = False
                if not text and not (part.get("thoughtSignature") or part.get("thought_signature")):
                    spans.dirty = True  # after the clean point: this content is the damage
                previous = None
                previous_model = model
                continue
            if type(part) is not dict:
                return None
            if model:  # a single function call (the usual call turn), in short
                call = part.get("functionCall")
                if call is None:
                    call = part.get("function_call")
                if type(call) is dict:
                    call_id = call.get("id")
                    if type(call.get("name")) is not str:
                        return None
                    if call_id is not None:
                        if type(call_id) is not str:
                            return None
                        if reject_ids:
                            spans.dirty = True
                        elif not first_only:  # (only the ranges need to know where it was)
                            callers[call_id] = spans.start
                    if index == 0 or previous_model or previous is not None:
                        spans.dirty = True
                    call_range = spans.start
                    if signatures and not (
                        part.get("thoughtSignature") or part.get("thought_signature")
                    ):
                        unsigned = True
                    previous = [call]
                    previous_model = True
                    continue
            elif previous is not None and len(previous) == 1:  # its single response, in short
                response = part.get("functionResponse")
                if response is None:
                    response = part.get("function_response")
                if type(response) is dict:
                    response_id = response.get("id")
                    if response_id is not None:
                        if type(response_id) is not str:
                            return None
                        if reject_ids:
                            spans.dirty = True
                    name = response.get("name")
                    payload = response.get("response")
                    call = previous[0]
                    call_id = call.get("id")
                    if (
                        not name
                        or (payload is not None and type(payload) is not dict)
                        or call.get("name") != name
                        or (call_id and response_id and call_id != response_id)
                    ):
                        spans.dirty = True
                        if response_id and response_id != call_id:  # an earlier call's, maybe
                            spans.reach_back(callers.get(response_id, spans.start))
                    elif not first_only:
                        spans.end_point(index + 1)  # it answers its call exactly
                    previous = None
                    previous_model = False
                    continue
        calls: list[Any] | None = None
        responses: list[Any] | None = None
        other = bad = not parts
        signed = False
        # how many responses so far answer the call in their place (the usual order), and
        # whether all of them do: only responses out of that order need ``_answers``
        waiting: list[Any] = previous or []
        in_place = 0
        in_order = previous is not None
        for part in parts:
            if type(part) is not dict:
                return None
            # look for what this role usually holds first: calls in model, responses in user
            call = response = None
            if model:
                call = part.get("functionCall")
                if call is None:
                    call = part.get("function_call")
            else:
                response = part.get("functionResponse")
                if response is None:
                    response = part.get("function_response")
            if call is None and response is None:
                if "text" in part:
                    text = part["text"]
                    if type(text) is not str:
                        return None
                    if not text and not (
                        part.get("thoughtSignature") or part.get("thought_signature")
                    ):
                        bad = True
                    other = True
                    continue
                if model:
                    response = part.get("functionResponse")
                    if response is None:
                        response = part.get("function_response")
                else:
                    call = part.get("functionCall")
                    if call is None:
                        call = part.get("function_call")
            if call is not None:
                if type(call) is not dict or type(call.get("name")) is not str:
                    return None
                call_id = call.get("id")
                if call_id is not None:
                    if type(call_id) is not str:
                        return None
                    if reject_ids:
                        spans.dirty = True
                    elif not first_only:
                        callers[call_id] = spans.start
                if calls is None:
                    signed = not signatures or bool(
                        part.get("thoughtSignature") or part.get("thought_signature")
                    )
                    calls = [call]
                else:
                    calls.append(call)
                continue
            if response is not None:
                if type(response) is not dict:
                    return None
                response_id = response.get("id")
                if response_id is not None:
                    if type(response_id) is not str:
                        return None
                    if reject_ids:
                        spans.dirty = True
                payload = response.get("response")
                name = response.get("name")
                if not name or (payload is not None and type(payload) is not dict):
                    bad = True
                if in_order:
                    if in_place < len(waiting):
                        call = waiting[in_place]
                        call_id = call.get("id")
                        if call.get("name") != name or (
                            call_id and response_id and call_id != response_id
                        ):
                            in_order = False
                        in_place += 1
                    else:
                        in_order = False
                if responses is None:
                    responses = [response]
                else:
                    responses.append(response)
                continue
            other = True
            if not _has_data(part):
                bad = True
        if (calls is not None and (responses is not None or not model)) or (
            responses is not None and model
        ):
            bad = True
        if previous is not None:
            if (
                other
                or responses is None
                or not ((in_order and in_place == len(previous)) or _answers(previous, responses))
            ):
                bad = True
                if responses is not None and not _reach_earlier_calls(spans, previous, responses):
                    return None
        elif responses is not None:  # stray responses: reach back to the calls they may answer
            origin = call_range if call_range >= 0 else spans.start
            for response in responses:
                origin = min(origin, callers.get(response.get("id"), origin))
            spans.reach_back(origin)
        elif not model and calls is None:  # a user content with calls opens no turn
            spans.clean_point(index)
            unsigned = False
        if bad:
            spans.dirty = True
        elif previous is not None and not first_only:
            spans.end_point(index + 1)  # the responses answer the call turn before, exactly
        if calls is not None:
            if index == 0 or previous_model:
                spans.dirty = True
            call_range = spans.start
            if not signed:
                unsigned = True
        previous = calls
        previous_model = model
    if previous:
        return None  # the last content makes calls: answered, or kept waiting, per policy
    found = spans.finish(len(contents))
    if signatures and (found or unsigned):
        return None if found else [(0, len(contents))]
    return found


def _reach_earlier_calls(spans: Spans, calls: list[Any], responses: list[Any]) -> bool:
    """Responses that do not answer the call turn before them but carry the id of an earlier
    call: the planner pairs them with that call, so the range reaches back to it.

    False (the caller cannot tell the ranges) when an id repeats among the responses: the
    repeat may copy the result of an earlier call with that id, which the planner weighs across
    ranges, while ``spans.callers`` keeps only the latest range of each id (hypothesis found
    one: ranges and whole history repaired it differently)."""
    ids = {call.get("id") for call in calls}
    seen: set[str] = set()
    origin = spans.start
    for response in responses:
        response_id = response.get("id")
        if response_id:
            if response_id in seen:
                return False
            seen.add(response_id)
            if response_id not in ids:
                origin = min(origin, spans.callers.get(response_id, origin))
    spans.reach_back(origin)
    return True


def _answers(calls: list[Any], responses: list[Any]) -> bool:
    """Whether ``responses`` answer ``calls`` one to one, under the same names (by id when
    every part has one, else as a multiset of names), when they are not each in their call's
    place: the usual case, which the scan checks as it reads them."""
    count = len(calls)
    if count != len(responses) or count == 1:  # one response, not in its call's place
        return False
    call_names = [call.get("name") for call in calls]
    response_names = [response.get("name") for response in responses]
    call_ids = [call.get("id") for call in calls]
    response_ids = [response.get("id") for response in responses]
    if all(call_ids) and all(response_ids):
        by_id = dict(zip(call_ids, call_names, strict=True))
        if len(by_id) == count:  # an id names one call, and each must be answered once
            return len(set(response_ids)) == count and all(
                by_id.get(i, "\0") == n for i, n in zip(response_ids, response_names, strict=True)
            )
    if call_names == response_names:
        return True
    return sorted(map(str, call_names)) == sorted(map(str, response_names))


# --- reading ----------------------------------------------------------------------------------


def _role_and_parts(content: Any, index: int) -> tuple[Any, Any]:
    if isinstance(content, Mapping):
        return content.get("role"), content.get("parts")
    if hasattr(content, "parts"):
        return getattr(content, "role", None), content.parts
    raise InvalidMessageError(index, "", "a Content (a dict with parts or types.Content)", content)


def read(contents: Sequence[Any]) -> Skeleton:
    """Read Gemini contents into a block-layout skeleton (see :class:`toolmend.formats.Format`)."""
    skeleton = Skeleton(NAME, layout=BLOCKS)
    kinds, roles = skeleton.kinds, skeleton.roles
    for index, content in enumerate(contents):
        if type(content) is dict:
            role, parts = content.get("role"), content.get("parts")
        else:
            role, parts = _role_and_parts(content, index)
        if role is None:
            role = "user"
        elif type(role) is not str:
            if not isinstance(role, str):
                raise InvalidMessageError(index, "role", "a string", role)
            role = str(getattr(role, "value", role))
        roles.append(role)
        if type(parts) is list and len(parts) == 1:
            part = parts[0]
            if type(part) is dict:
                text = part.get("text")
                if type(text) is str and text:
                    kinds.append(
                        ASSISTANT
                        if role == "model"
                        else USER
                        if role == "user"
                        else block_kind(role, False)
                    )
                    continue
        if not parts:
            if parts is not None and not isinstance(parts, (list, tuple)):
                raise InvalidMessageError(index, "parts", "a list of parts", parts)
            if parts is None and isinstance(content, Mapping) and "content" in content:
                # a chat message read as Gemini: its text is not lost as "no parts"
                raise InvalidMessageError(index, "parts", "a list of parts", parts)
            kinds.append(block_kind(role, False))
            skeleton.defects.append(Defect(index, "parts_empty", -1, "parts"))
            skeleton.extras[index] = ()
            continue
        if not isinstance(parts, (list, tuple)):
            raise InvalidMessageError(index, "parts", "a list of parts", parts)
        _read_parts(skeleton, index, role, parts)
    return skeleton


def _read_parts(skeleton: Skeleton, index: int, role: str, parts: Sequence[Any]) -> None:
    calls: list[Call] = []
    results: list[Result] = []
    extras: list[int] = []
    defects = skeleton.defects
    flawed = False
    for slot, part in enumerate(parts):
        if type(part) is dict:  # REST dicts, the common case: no getter objects
            text = part.get("text")
            if text is not None:
                extras.append(slot)
                if text == "" and not (
                    part.get("thoughtSignature") or part.get("thought_signature")
                ):
                    defects.append(Defect(index, "text_empty", slot, "text"))
                    flawed = True
                continue
            call = part.get("functionCall")
            if call is None:
                call = part.get("function_call")
            if call is not None:
                calls.append(_read_call(skeleton, index, slot, call))
                if len(calls) == 1 and not (
                    part.get("thoughtSignature") or part.get("thought_signature")
                ):
                    skeleton.mark("unsigned", index)
                continue
            response = part.get("functionResponse")
            if response is None:
                response = part.get("function_response")
            if response is not None:
                results.append(_read_response(skeleton, index, slot, response))
                continue
            extras.append(slot)
            if not _has_data(part):
                defects.append(Defect(index, "part_no_data", slot, "data"))
                flawed = True
            continue
        get: Callable[[str], Any]
        if isinstance(part, Mapping):
            get = _mapping_getter(part)
        elif hasattr(part, "function_call"):
            get = _attribute_getter(part)
        else:
            raise InvalidMessageError(index, f"parts[{slot}]", "a Part or a part dict", part)
        call = get("function_call")
        if call is not None:
            calls.append(_read_call(skeleton, index, slot, call))
            if len(calls) == 1 and not get("thought_signature"):
                skeleton.mark("unsigned", index)
            continue
        response = get("function_response")
        if response is not None:
            results.append(_read_response(skeleton, index, slot, response))
            continue
        extras.append(slot)
        text = get("text")
        if text is not None:
            if text == "" and not get("thought_signature"):
                defects.append(Defect(index, "text_empty", slot, "text"))
                flawed = True
        elif not _has_data(part):
            defects.append(Defect(index, "part_no_data", slot, "data"))
            flawed = True
    skeleton.kinds.append(block_kind(role, bool(results)))
    if calls:
        skeleton.calls[index] = tuple(calls)
    if results:
        skeleton.results[index] = tuple(results)
    if calls or results or flawed:
        skeleton.extras[index] = tuple(extras)


def _mapping_getter(part: Mapping[str, Any]) -> Callable[[str], Any]:
    return lambda name: _get(part, name)


def _attribute_getter(part: Any) -> Callable[[str], Any]:
    return lambda name: getattr(part, name, None)


def _has_data(part: Any) -> bool:
    if isinstance(part, Mapping):
        return any(key in part and part[key] is not None for key in _DATA_KEYS)
    return any(getattr(part, name, None) is not None for name in _DATA_ATTRIBUTES)


def _read_call(skeleton: Skeleton, index: int, slot: int, call: Any) -> Call:
    if type(call) is dict:
        call_id, name, args = call.get("id"), call.get("name"), call.get("args")
        if type(name) is str and (call_id is None or type(call_id) is str):
            if args is not None and type(args) is not dict:
                skeleton.defects.append(Defect(index, "args_not_object", slot, type(args).__name__))
            return Call(call_id, name, slot)
    if not isinstance(call, Mapping) and not hasattr(call, "name"):
        raise InvalidMessageError(index, f"parts[{slot}].function_call", "a function call", call)
    call_id, name = _field(call, "id"), _field(call, "name")
    if call_id is not None and type(call_id) is not str:
        raise InvalidMessageError(index, f"parts[{slot}].function_call.id", "a string", call_id)
    if name is not None and not isinstance(name, str):
        raise InvalidMessageError(index, f"parts[{slot}].function_call.name", "a string", name)
    args = _field(call, "args")
    if args is not None and not isinstance(args, Mapping):
        skeleton.defects.append(Defect(index, "args_not_object", slot, type(args).__name__))
    return Call(call_id, name, slot)


def _read_response(skeleton: Skeleton, index: int, slot: int, response: Any) -> Result:
    if type(response) is dict:
        result_id, name, payload = (
            response.get("id"),
            response.get("name"),
            response.get("response"),
        )
        if (
            (name is None or type(name) is str)
            and (result_id is None or type(result_id) is str)
            and (payload is None or type(payload) is dict)
        ):
            return Result(result_id, name, slot)
    if not isinstance(response, Mapping) and not hasattr(response, "name"):
        field = f"parts[{slot}].function_response"
        raise InvalidMessageError(index, field, "a function response", response)
    result_id, name = _field(response, "id"), _field(response, "name")
    if result_id is not None and type(result_id) is not str:
        raise InvalidMessageError(
            index, f"parts[{slot}].function_response.id", "a string", result_id
        )
    if name is not None and not isinstance(name, str):
        raise InvalidMessageError(index, f"parts[{slot}].function_response.name", "a string", name)
    payload = _field(response, "response")
    if isinstance(payload, (list, tuple)):
        skeleton.defects.append(Defect(index, "response_is_list", slot, "response"))
    elif payload is not None and not isinstance(payload, Mapping):
        skeleton.defects.append(Defect(index, "response_not_object", slot, type(payload).__name__))
    return Result(result_id, name, slot)


def call_arguments(message: Any, slot: int) -> Any:
    """The ``args`` of the ``functionCall`` part at ``slot`` (for the loop guard)."""
    parts = _field(message, "parts")
    if not isinstance(parts, (list, tuple)) or slot >= len(parts):
        return None
    call = _field(parts[slot], "function_call")
    return _field(call, "args") if call is not None else None


def result_text(message: Any, slot: int) -> str | None:
    """The ``functionResponse.response`` at ``slot`` as text (its JSON)."""
    parts = _field(message, "parts")
    if not isinstance(parts, (list, tuple)) or slot >= len(parts):
        return None
    response = _field(parts[slot], "function_response")
    payload = _field(response, "response") if response is not None else None
    if payload is None:
        return ""
    if isinstance(payload, Mapping) and len(payload) == 1:
        only = next(iter(payload.values()))
        if isinstance(only, str):
            return only
    try:
        return jsontext.dumps(payload, ensure_ascii=False, sort_keys=True, default=str)
    except jsontext.UnwritableValueError:
        return None


# --- applying a plan --------------------------------------------------------------------------


class _Style:
    """How new Contents and parts are written: SDK objects or dicts, camelCase or snake_case."""

    def __init__(self, contents: Sequence[Any]) -> None:
        self.factory: Callable[[dict[str, Any]], Any] | None = None
        self.camel = False
        found_style = False
        for content in contents:
            if self.factory is None and not isinstance(content, Mapping):
                validate = getattr(type(content), "model_validate", None)
                if callable(validate):
                    self.factory = validate
            if not found_style:
                for part in _field(content, "parts") or ():
                    if isinstance(part, Mapping):
                        if part.keys() & {
                            "functionCall",
                            "functionResponse",
                            "thoughtSignature",
                            "inlineData",
                        }:
                            self.camel, found_style = True, True
                        elif part.keys() & {"function_call", "function_response", "inline_data"}:
                            found_style = True
            if found_style and self.factory is not None:
                break

    def key(self, name: str) -> str:
        return _CAMEL.get(name, name) if self.camel else name

    def content(self, role: str, parts: list[Any]) -> Any:
        data = {"role": role, "parts": parts}
        return data if self.factory is None else self.factory(data)


def apply(contents: Sequence[Any], plan: Plan) -> list[Any]:
    """Build the repaired list (see :class:`toolmend.formats.Format`)."""
    return _Writer(contents).apply(plan)


class _Writer(BlockWriter):
    """Gemini parts for the shared block writer, new ones in the history's own style."""

    roles = _ROLES

    def __init__(self, contents: Sequence[Any]) -> None:
        super().__init__(contents)
        self.style = _Style(contents)

    def blocks(self, message: Any) -> list[Any]:
        return _parts(message)

    def edited(self, message: Any, edit: MessageEdit) -> Any:
        return _edited(message, edit, self.style)

    def edit_block(self, block: Any, slot: int, edit: MessageEdit) -> Any:
        return _edit_part(block, slot, edit)

    def placeholder(self, item: Placeholder) -> dict[str, Any]:
        response: dict[str, Any] = {"name": item.name or "", "response": {"error": item.text}}
        if item.call_id:
            response["id"] = item.call_id
        return {self.style.key("function_response"): response}

    def text(self, text: str) -> dict[str, Any]:
        return {"text": text}

    def message(self, role: str, blocks: list[Any]) -> Any:
        return self.style.content(role, blocks)

    def line(self, block: Any) -> str | None:
        call = _field(block, "function_call")
        if call is not None:
            args = jsontext.dumps(_field(call, "args"), ensure_ascii=False, default=str)
            return f"[tool call {_field(call, 'name')}({args})]"
        if _field(block, "function_response") is not None:
            return _response_as_text(block)
        text = _field(block, "text")
        if isinstance(text, str) and text and not _field(block, "thought"):
            return text
        return None


def _parts(content: Any) -> list[Any]:
    return list(_field(content, "parts") or ())


def _edited(content: Any, edit: MessageEdit, style: _Style) -> Any:
    parts = [
        _edit_part(part, slot, edit)
        for slot, part in enumerate(_parts(content))
        if slot not in edit.drop_blocks
    ]
    if isinstance(content, Mapping):
        copy = dict(content)
        for key in edit.drop_fields:
            copy.pop(key, None)
        copy.update(edit.set_fields)
        copy["parts"] = parts
        return copy
    update = {"parts": parts, **edit.set_fields}
    copier = getattr(content, "model_copy", None)
    if callable(copier):
        return copier(update=update)
    return style.content(str(update.get("role", _field(content, "role")) or "user"), parts)


def _edit_part(part: Any, slot: int, edit: MessageEdit) -> Any:
    if slot in edit.results_as_text:
        text = {"text": _response_as_text(part)}
        if isinstance(part, Mapping):
            return text
        validate = getattr(type(part), "model_validate", None)  # an SDK Part holds SDK Parts
        return validate(text) if callable(validate) else text
    changes: dict[str, Any] = {}
    call = _field(part, "function_call")
    if call is not None:
        inner: dict[str, Any] = {}
        if slot in edit.call_ids:
            inner["id"] = edit.call_ids[slot]
        if slot in edit.call_names:
            inner["name"] = edit.call_names[slot]
        if edit.strip_ids and _field(call, "id") is not None:
            inner["id"] = None
        if edit.normalize_calls:
            args = _field(call, "args")
            if args is not None and not isinstance(args, Mapping):
                inner["args"] = _as_object(args)
        if inner:
            changes["function_call"] = _updated(call, inner)
        if slot in edit.sign_calls and not _field(part, "thought_signature"):
            changes["thought_signature"] = (
                SKIP_SIGNATURE if isinstance(part, Mapping) else _SKIP_BYTES
            )
    response = _field(part, "function_response")
    if response is not None:
        inner = {}
        if slot in edit.result_ids:
            inner["id"] = edit.result_ids[slot]
        if slot in edit.result_names:
            inner["name"] = edit.result_names[slot]
        if edit.strip_ids and _field(response, "id") is not None:
            inner["id"] = None
        if edit.normalize_results:
            payload = _field(response, "response")
            if payload is not None and not isinstance(payload, Mapping):
                inner["response"] = {"result": payload}
        if inner:
            changes["function_response"] = _updated(response, inner)
    if not changes:
        return part
    return _updated(part, changes)


def _updated(thing: Any, changes: dict[str, Any]) -> Any:
    """``thing`` with ``changes`` (a ``None`` value removes the field), keeping its key style."""
    if isinstance(thing, Mapping):
        copy = dict(thing)
        for name, value in changes.items():
            key = name
            if name in _CAMEL and name not in copy and (_CAMEL[name] in copy or _camel_part(copy)):
                key = _CAMEL[name]
            if value is None:
                copy.pop(key, None)
            else:
                copy[key] = value
        return copy
    copier = getattr(thing, "model_copy", None)
    if callable(copier):
        return copier(update=changes)
    raise TypeError(f"cannot copy a {type(thing).__name__}")


def _camel_part(part: Mapping[str, Any]) -> bool:
    return bool(part.keys() & {"functionCall", "functionResponse", "inlineData", "fileData"})


def _as_object(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            parsed = jsontext.loads(value)
        except ValueError:
            return {"value": value}
        return parsed if isinstance(parsed, dict) else {"value": parsed}
    return {"value": value}


def _response_as_text(part: Any) -> str:
    response = _field(part, "function_response")
    name = _field(response, "name") or "tool"
    payload = _field(response, "response")
    body = jsontext.dumps(payload, ensure_ascii=False, default=str) if payload is not None else ""
    return f"[tool result ({name})]\n{body}" if body else f"[tool result ({name})]"


def _is_result(block: Mapping[str, Any]) -> bool:
    return "functionResponse" in block or "function_response" in block


def _is_call(block: Mapping[str, Any]) -> bool:
    return "functionCall" in block or "function_call" in block


class Gemini(Format):
    """Gemini ``contents``: ``user`` and ``model`` Contents of parts (``function_call`` in the
    model turn, ``function_response`` in the next user turn, matched by position when they
    carry no ids), as dicts in either key style or as google-genai objects."""

    name = NAME
    native_provider = "gemini"
    block_pairing = "contents"
    positional_results = True
    assistant_role = "model"

    read = staticmethod(read)
    apply = staticmethod(apply)
    claims = staticmethod(claims)
    result_text = staticmethod(result_text)
    call_arguments = staticmethod(call_arguments)
    normalize = staticmethod(normalize)
    quick_valid = staticmethod(quick_valid)
    dirty_spans = staticmethod(dirty_spans)

    def merge_run(self, run: Sequence[Any]) -> dict[str, Any]:
        return merge_block_run(run, "parts", _is_result, _is_call, text_blocks=False)


FORMAT = register(Gemini())
