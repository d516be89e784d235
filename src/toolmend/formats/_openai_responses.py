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

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import _jsontext as jsontext
from .._edits import AsText, Bridge, Item, Keep, Merge, MessageEdit, Placeholder, Plan
from .._report import InvalidMessageError
from .._skeleton import ASSISTANT, OTHER, SYSTEM, TOOL, USER, Call, Defect, Result, Skeleton
from .._spans import all_match
from . import register
from ._base import Format

if TYPE_CHECKING:
    from ..profiles import Profile

__all__ = [
    "FORMAT",
    "NAME",
    "OpenAIResponses",
    "apply",
    "call_arguments",
    "claims",
    "dirty_spans",
    "group_spans",
    "live_rounds",
    "quick_live",
    "quick_valid",
    "read",
    "result_text",
]

NAME = "openai-responses"

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
"""The prefix a replayed item id must have, by item type (rule OR-ITEM-ID-PREFIX)."""

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

_TOOL_CALLS = {
    "custom_tool_call": ("custom_tool_call_output", "custom tool call"),
    "apply_patch_call": ("apply_patch_call_output", "apply patch call"),
    "shell_call": ("shell_call_output", "shell call"),
    "local_shell_call": ("local_shell_call_output", "local shell call"),
    "computer_call": ("computer_call_output", "computer call"),
}
"""Call item types other than ``function_call`` that the caller answers with an output item of
its own type: the call type -> (its output type, the API's name for it in error texts)."""

_TOOL_OUTPUTS = {output: (call, phrase) for call, (output, phrase) in _TOOL_CALLS.items()}
"""The output item types of :data:`_TOOL_CALLS` -> (their call type, the API's name)."""

_ID_CHARSET = re.compile(r"[A-Za-z0-9_-]+")
_ID_LIST = re.compile(r"(?:[A-Za-z0-9_-]+ )*")


def claims(message: Any) -> bool:
    """Responses-only features: an item ``type`` no chat format has, a ``call_id``, a
    ``"type": "message"`` with text content, or a message whose content uses Responses part
    types (``input_text``, ``output_text``, ...). An Anthropic ``Message`` has that type too, but
    its content is a list of ``text``/``tool_use`` blocks, which tells nothing here."""
    if isinstance(message, Mapping):
        item_type = message.get("type")
        if "call_id" in message:
            return True
        content = message.get("content")
    else:
        item_type = getattr(message, "type", None)
        content = getattr(message, "content", None)
    if not (item_type is None or isinstance(item_type, str)):
        return False
    if item_type in _ITEM_TYPES or (item_type == "message" and isinstance(content, str)):
        return True
    if item_type not in (None, "message") or not isinstance(content, list):
        return False
    for part in content:
        part_type = part.get("type") if isinstance(part, Mapping) else getattr(part, "type", None)
        if isinstance(part_type, str) and part_type in _PART_TYPES:
            return True
    return False


_QUICK_CODES = frozenset(
    {
        "orphan_result",
        "missing_result",
        "reasoning_without_follower",
        "reasoning_without_summary",
        "call_without_id",
        "result_without_id",
        "result_without_output",
        "call_id_too_long",
        "item_id_prefix",
        "item_id_charset",
        "duplicate_item_id",
        "duplicate_item",
        "null_content",
        "arguments_not_string",
        "call_without_reasoning",
        # only items of other types have these, and the scans hand those to the full path
        "missing_tool_output",
        "orphan_tool_output",
    }
)
"""The problem codes :func:`quick_valid` rules out; a profile checking any other code gets the
full path."""


def quick_valid(messages: Sequence[Any] | str, profile: Profile) -> bool:
    """True only when the full ``judge(read(messages), profile)`` would find nothing.

    A valid input is the common case and must cost far less than the ``json.dumps`` the SDK
    does anyway, so plain dicts of the four core item types get one tight pass that builds
    nothing per item: the item ids are kept in a list and checked together at the end
    (:func:`toolmend._spans.all_match`: one ``bytes.translate`` over them all). Conservative:
    SDK objects, other item types, unknown roles or a profile with rules this pass does not
    know answer False, and the full path decides. A property test asserts that True always
    agrees with the full path.
    """
    if type(messages) is not list or not messages:
        return False
    max_length = _max_length(profile)
    if max_length is None:
        return False
    called: set[str] = set()
    unanswered: set[str] = set()
    ids: list[Any] = []
    keep_id = ids.append
    after_reasoning = False
    # reasoning models: a call with a server id needs a reasoning item opening its output run
    reasoned = "call_without_reasoning" not in profile.checks
    needs_reasoning = not reasoned
    for item in messages:
        if type(item) is not dict:
            return False
        item_type = item.get("type")
        if item_type == "function_call_output":  # the commonest item, with no id of its own
            reasoned = not needs_reasoning
            call_id = item.get("call_id")
            if (
                after_reasoning
                or type(call_id) is not str
                or call_id not in called  # (never empty: calls have non-empty ids)
                or item.get("output") is None
            ):
                return False
            unanswered.discard(call_id)
            item_id = item.get("id")
            if item_id is not None:
                keep_id(item_id)
            continue
        item_id = item.get("id")
        if item_type == "function_call":
            call_id = item.get("call_id")
            if (
                type(call_id) is not str
                or not call_id
                or len(call_id) > max_length
                or type(item.get("name")) is not str
                or type(item.get("arguments")) is not str
                or (
                    item_id is not None
                    and (type(item_id) is not str or not item_id.startswith("fc") or not reasoned)
                )
            ):
                return False
            called.add(call_id)
            unanswered.add(call_id)
            after_reasoning = False
        elif item_type == "reasoning":
            if (
                after_reasoning
                or item.get("summary") is None
                or (
                    item_id is not None
                    and (type(item_id) is not str or not item_id.startswith("rs"))
                )
            ):
                return False
            after_reasoning = reasoned = True
        elif item_type is None or item_type == "message":
            role = item.get("role")
            if type(role) is not str or role not in _MESSAGE_KINDS or item.get("content") is None:
                return False
            if after_reasoning and role == "user":
                return False
            after_reasoning = False
            if role != "assistant":
                reasoned = not needs_reasoning
        else:
            return False
        if item_id is not None:
            keep_id(item_id)
    if after_reasoning or unanswered:
        return False
    if not ids:
        return True
    # every id at once: one set for repeats, one C-level pass for the characters (an id that
    # is no string fails the join)
    try:
        return len(set(ids)) == len(ids) and all_match(_ID_CHARSET, ids)
    except TypeError:
        return False


_MAX_LENGTH: dict[int, tuple[Profile, int | None]] = {}
"""``id(profile)`` -> (the profile, the longest call id it takes, or None when the one-pass
scans do not model its rules); the profile is kept so its id cannot be reused while the entry
lives. Worked out once per profile: a hook asks on every request."""


def _max_length(profile: Profile) -> int | None:
    entry = _MAX_LENGTH.get(id(profile))
    if entry is not None and entry[0] is profile:
        return entry[1]
    found = (profile.call_id_max_length or 1 << 30) if _scannable(profile) else None
    if len(_MAX_LENGTH) >= 256:  # profiles built per call: keep the cache small
        _MAX_LENGTH.clear()
    _MAX_LENGTH[id(profile)] = (profile, found)
    return found


def quick_live(
    messages: Sequence[Any] | str, profile: Profile
) -> tuple[int, list[tuple[str, Any]]] | None:
    """:func:`quick_valid`, and the loop guard's live run: None when it cannot vouch; else the
    number of tool rounds after the last user message item and each of their calls as (name,
    arguments), for the hooks' fast path (:func:`toolmend._fastpath.vouch`).

    The same run the guard reads: each ``function_call`` item is a round of its own (the
    reader makes each item a message), and the run starts after the last plain user message
    (the guard may start it later, never earlier, and a longer run only makes
    :func:`toolmend._loops.quiet_live_run` ask the guard)."""
    if type(messages) is not list or not quick_valid(messages, profile):
        return None
    calls: list[tuple[str, Any]] = []
    for index in range(len(messages) - 1, -1, -1):
        item = messages[index]
        item_type = item.get("type")
        if item_type == "function_call":
            name = item["name"]
            if not name:
                return None
            calls.append((name, item["arguments"]))
        elif item.get("role") == "user" and item_type in (None, "message"):
            break
    return len(calls), calls


_LIVE_ROLES = frozenset({"assistant", "system", "developer"})
_LIVE_ITEMS = frozenset({"function_call_output", "reasoning"})


def live_rounds(
    messages: Sequence[Any] | str,
) -> tuple[int, list[tuple[int, tuple[Call, ...]]]] | None:
    """The live run for the loop guard, read from the end straight off plain dicts: the index
    after the last user message item, and each ``function_call`` after it as a round of its
    own (index, its call), as the reader makes them. ``None`` for anything unusual in the run
    (an object, another item type or role, a call whose id or name is not a non-empty
    string): the guard then reads the run in full. A property test holds it to the full read.
    """
    if type(messages) is not list:
        return None
    rounds: list[tuple[int, tuple[Call, ...]]] = []
    index = len(messages)
    while index:
        index -= 1
        item = messages[index]
        if type(item) is not dict:
            return None
        item_type = item.get("type")
        if item_type == "function_call":
            call_id, name = item.get("call_id"), item.get("name")
            if type(call_id) is not str or type(name) is not str or not call_id or not name:
                return None
            rounds.append((index, (Call(call_id, name, 0),)))
        elif item_type is None or item_type == "message":
            role = item.get("role")
            if role == "user":
                rounds.reverse()
                return index + 1, rounds
            if role not in _LIVE_ROLES:
                return None
        elif item_type not in _LIVE_ITEMS:
            return None
    rounds.reverse()
    return 0, rounds


def _scannable(profile: Profile) -> bool:
    """Whether the one-pass scans know every rule ``profile`` runs."""
    return (
        profile.pairing == "ordered"
        and not profile.batched_outputs
        and profile.known_roles is None
        and profile.call_id_pattern is None
        and profile.function_name_pattern is None
        and profile.role_successors is None
        and profile.last_kinds is None
        and profile.alternation is None
        and not profile.reasoning_in_tool_turns
        and profile.checks.keys() <= _QUICK_CODES
    )


def dirty_spans(messages: Sequence[Any] | str, profile: Profile) -> list[tuple[int, int]] | None:
    """The ranges ``[start, stop)`` of ``messages`` that need repair, or None if unknown.

    ``[]`` when :func:`quick_valid` vouches for the whole input. Otherwise a second scan marks
    the items that may break a rule and cuts the input where nothing ties the two sides
    together, so each damaged range is judged and repaired on its own exactly as in the whole
    input. What ties items together: an output and the latest call before it with its
    ``call_id``; a call and the first output after it with its id; an output with no call before
    it and every later call with its id (the planner moves it after the only one); two items
    with one id; a reasoning item and the item after it. None (the whole
    input is read) for anything the scan does not know: SDK objects, other item types, a call
    or output without ``call_id``, a profile with other rules.
    """
    if quick_valid(messages, profile):
        return []
    if (
        type(messages) is not list
        or not messages
        or not _scannable(profile)
        # the rule looks back across the output run: a range cut inside one would misjudge it
        or "call_without_reasoning" in profile.checks
    ):
        return None
    return _damaged_spans(messages, profile)


def _damaged_spans(messages: list[Any], profile: Profile) -> list[tuple[int, int]] | None:
    # Items come in index order, so a tie set while reading item ``index`` ends at ``index``,
    # later than any tie set before: plain assignment keeps the furthest end.
    max_length = profile.call_id_max_length or 1 << 30
    dirty: set[int] = set()
    ties: dict[int, int] = {}  # start -> the furthest end of a tie starting there
    latest_call: dict[str, int] = {}  # call id -> the latest call with it so far
    waiting: dict[str, list[int]] = {}  # call id -> calls with no output after them yet
    strays: list[tuple[int, str]] = []  # outputs with no call before them
    first_with_id: dict[str, int] = {}
    after_reasoning: set[int] = set()  # indexes right after a reasoning item
    reasoning = -1
    for index, item in enumerate(messages):
        if type(item) is not dict:
            return None
        get = item.get
        item_type = get("type")
        item_id = get("id")
        repeat = False  # an id an earlier item has: the planner may drop this item
        if item_id is not None:
            if type(item_id) is not str:
                return None
            first = first_with_id.setdefault(item_id, index)
            if first != index:
                repeat = True
                dirty.add(index)
                ties[first] = index
        follows = True
        if item_type == "function_call":
            call_id = get("call_id")
            if type(call_id) is not str or not call_id or type(get("name")) is not str:
                return None
            if len(call_id) > max_length or type(get("arguments")) is not str:
                dirty.add(index)
            if item_id is not None and (type(item_id) is not str or item_id[:2] != "fc"):
                dirty.add(index)
            latest_call[call_id] = index
            found = waiting.get(call_id)
            if found is None:
                waiting[call_id] = [index]
            else:
                found.append(index)
        elif item_type == "function_call_output":
            call_id = get("call_id")
            if type(call_id) is not str or not call_id:
                return None
            follows = False
            caller = latest_call.get(call_id)
            if caller is None:
                dirty.add(index)
                strays.append((index, call_id))
            else:
                ties[caller] = index
                found = waiting.get(call_id)
                if found is not None:
                    for call in found:
                        ties[call] = index
                    if not repeat:  # a repeat may go: the calls then wait for the next output
                        del waiting[call_id]
            if get("output") is None:
                dirty.add(index)
        elif item_type is None or item_type == "message":
            role = get("role")
            if type(role) is not str:
                return None
            follows = role != "user"
            if get("content") is None:
                dirty.add(index)
        elif item_type == "reasoning":
            follows = False
            if get("summary") is None:
                dirty.add(index)
            if item_id is not None and (type(item_id) is not str or item_id[:2] != "rs"):
                dirty.add(index)
        else:
            return None
        if reasoning >= 0:
            after_reasoning.add(index)
            if not follows:
                dirty.add(reasoning)
        reasoning = index if item_type == "reasoning" else -1
        if repeat and index in after_reasoning:  # if the planner drops the repeat, the
            after_reasoning.add(index + 1)  # reasoning item before it meets the next item
    if reasoning >= 0:
        dirty.add(reasoning)
    if first_with_id:
        ids = list(first_with_id)
        joined = " ".join(ids) + " "
        if joined.count(" ") != len(ids) or _ID_LIST.fullmatch(joined) is None:
            for item_id, index in first_with_id.items():
                if _ID_CHARSET.fullmatch(item_id) is None:
                    dirty.add(index)  # its repeats are dirty already
    for calls in waiting.values():
        dirty.update(calls)  # no output after them
    for index, call_id in strays:  # every later call with its id, which the planner weighs
        last = latest_call.get(call_id)
        if last is not None:
            ties[index] = max(ties.get(index, 0), last)
    if strays:
        # a stray in the input's trailing run of outputs may be the newest input, which the
        # planner keeps unless a call comes right before the run: the range holds that item
        tail = len(messages)
        while tail and _output_or_system(messages[tail - 1]):
            tail -= 1
        if tail and strays[-1][0] >= tail:
            ties[tail - 1] = len(messages) - 1
    return _cut(len(messages), dirty, ties, after_reasoning)


def _output_or_system(item: dict[str, Any]) -> bool:
    """A ``function_call_output`` or a system message (what the trailing run of outputs, the
    newest input, may hold; see :func:`toolmend._planstate.newest_results`)."""
    item_type = item.get("type")
    if item_type == "function_call_output":
        return True
    return item_type in (None, "message") and item.get("role") in ("system", "developer")


def _cut(
    size: int, dirty: set[int], ties: dict[int, int], after_reasoning: set[int]
) -> list[tuple[int, int]]:
    """The ranges holding a dirty index, cut only where no tie crosses and no reasoning item
    is parted from the item after it."""
    spans: list[tuple[int, int]] = []
    start = 0
    reach = -1  # the furthest end of the ties started so far
    has_dirty = False
    for index in range(size):
        if index and reach < index and index not in after_reasoning:
            if has_dirty:
                spans.append((start, index))
            start, has_dirty = index, False
        end = ties.get(index)
        if end is not None and end > reach:
            reach = end
        if index in dirty:
            has_dirty = True
    if has_dirty:
        spans.append((start, size))
    return spans


def group_spans(messages: Sequence[Any] | str) -> list[tuple[int, int]] | None:
    """The ``[start, end)`` ranges of a history that must be kept or cut whole: each call to
    its output (and to any later copy of that output), overlapping ones merged, in order; every
    index outside them is a group of its own. These are the groups of
    :func:`toolmend.atomic_groups`, with its pairing: an output answers the latest unanswered
    call with its id, and a second output for an answered id stays with the last such call.

    Outputs may lie anywhere after their call here, so :func:`toolmend.trim` needs the whole
    input to know where it may cut; this is that knowledge in one pass over plain dicts rather
    than a read and a pairing. None when the pass cannot be sure (anything but a list of dicts,
    an id that is not text, an output with no call before it): the full path decides.
    """
    if type(messages) is not list:
        return None
    # Only ints go into the dicts in the common case (one call per id): a container per call,
    # kept to the end, made this pass a third of the garbage collector's work in a trim of
    # 100,000 items, and pushed the caller's whole heap towards a full collection.
    waiting: dict[str, int] = {}  # call id -> its latest call not answered yet
    buried: dict[str, list[int]] = {}  # call id -> its older calls not answered yet, if any
    last_answered: dict[str, int] = {}  # call id -> the latest of its answered calls
    reach: dict[int, int] = {}  # call index -> the end of its span
    for index, item in enumerate(messages):
        if type(item) is not dict:
            return None
        item_type = item.get("type")
        if item_type != "function_call" and item_type != "function_call_output":
            continue
        call_id = item.get("call_id")
        if type(call_id) is not str:
            return None
        if item_type == "function_call":
            older = waiting.get(call_id)
            if older is not None:
                buried.setdefault(call_id, []).append(older)
            waiting[call_id] = index
            continue
        caller = waiting.pop(call_id, -1)
        if caller >= 0:
            stack = buried.get(call_id)
            if stack:
                waiting[call_id] = stack.pop()
            if caller > last_answered.get(call_id, -1):
                last_answered[call_id] = caller
        else:
            caller = last_answered.get(call_id, -1)
            if caller < 0:
                return None  # no call before it: an orphan, or an output before its call
        reach[caller] = index + 1
    merged: list[tuple[int, int]] = []
    for start in sorted(reach):
        end = reach[start]
        if merged and start < merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


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


def _str_field(get: Callable[[str], Any], name: str, index: int) -> str | None:
    value = get(name)
    return value if value is None or type(value) is str else _text(value, index, name)


def read(messages: Sequence[Any] | str) -> Skeleton:
    """Read a Responses ``input`` into a skeleton (see :class:`toolmend.formats.Format`).

    One pass; plain dicts take the fast path (``dict.get`` bound once per item, no helper
    calls for well-typed fields). Marks are gathered in local sets and stored at the end.
    """
    skeleton = Skeleton(NAME)
    kinds, roles, defects = skeleton.kinds, skeleton.roles, skeleton.defects
    if isinstance(messages, str):
        kinds.append(USER)
        roles.append("user")
        return skeleton
    calls, results = skeleton.calls, skeleton.results
    calling: set[int] = set()
    reasoning: set[int] = set()
    outputs: set[int] = set()
    required: set[int] = set()
    references: set[int] = set()
    first_with_id: dict[str, int] = {}
    id_ok = _ID_CHARSET.fullmatch
    waiting = -1  # a reasoning item whose follower is not read yet
    reasoned = False  # a reasoning item opens the model output run this item belongs to
    server_ids: set[int] = set()
    tool_items: list[tuple[int, str, Any]] = []  # (index, type, call id): other calls, outputs
    for index, item in enumerate(messages):
        get = item.get if type(item) is dict else _getter(item, index)
        item_type = get("type")
        if item_type is not None and type(item_type) is not str:
            item_type = _text(item_type, index, "type")
        role = ""
        if item_type is None or item_type == "message":
            found = get("role")
            if type(found) is str:
                role = found
            elif found is None and item_type is None and get("id") is not None:
                item_type = "item_reference"  # ``{"id": ...}`` alone references an item
            elif found is None:
                raise InvalidMessageError(index, "role", "a string", found)
            else:
                role = str(_text(found, index, "role"))
        if item_type is None or item_type == "message":
            kind = _MESSAGE_KINDS.get(role, OTHER)
            if waiting >= 0:
                if kind == USER:
                    _stranded(skeleton, messages, waiting)
                waiting = -1
            kinds.append(kind)
            roles.append(role)
            reasoned = reasoned and kind == ASSISTANT
            if get("content") is None:
                defects.append(Defect(index, "null_content", -1, "content"))
        elif item_type == "function_call":
            waiting = -1
            kinds.append(ASSISTANT)
            roles.append(item_type)
            calls[index] = (
                Call(_str_field(get, "call_id", index), _str_field(get, "name", index), 0),
            )
            calling.add(index)
            if type(get("arguments")) is not str:
                defects.append(Defect(index, "arguments_not_string", 0, "arguments"))
        elif item_type == "function_call_output":
            if waiting >= 0:
                _stranded(skeleton, messages, waiting)
                waiting = -1
            reasoned = False
            kinds.append(TOOL)
            roles.append(item_type)
            results[index] = (Result(_str_field(get, "call_id", index), None, 0),)
            if get("output") is None:
                defects.append(Defect(index, "result_without_output", -1, "output"))
        elif item_type == "reasoning":
            if waiting >= 0:
                _stranded(skeleton, messages, waiting)
            waiting = index
            reasoned = True
            kinds.append(ASSISTANT)
            roles.append(item_type)
            reasoning.add(index)
            if get("summary") is None:
                defects.append(Defect(index, "reasoning_without_summary", -1, "summary"))
        else:
            output = item_type.endswith("_output")
            if waiting >= 0:
                if output:
                    _stranded(skeleton, messages, waiting)
                waiting = -1
            kinds.append(OTHER)
            roles.append(item_type)
            if output:
                outputs.add(index)
                reasoned = False
            if item_type == "item_reference":
                references.add(index)
            elif item_type in _TOOL_CALLS or item_type in _TOOL_OUTPUTS:
                call_id = get("call_id")
                if call_id is None and item_type == "local_shell_call_output":
                    call_id = get("id")  # the SDK's type names the call by ``id``
                tool_items.append((index, item_type, call_id))
        item_id = get("id")
        if item_id is None:
            continue
        if type(item_id) is not str:
            item_id = _text(item_id, index, "id")
        if id_ok(item_id) is None:
            defects.append(Defect(index, "item_id_charset", -1, "id", item_id))
        else:
            prefix = _ID_PREFIXES.get(item_type) if item_type else None
            if prefix is not None and not item_id.startswith(prefix):
                defects.append(Defect(index, "item_id_prefix", -1, prefix, item_id))
            elif item_type == "function_call":
                server_ids.add(index)  # a server-issued ``fc_`` id: it names stored state
                if not reasoned:
                    defects.append(Defect(index, "call_without_reasoning", -1, "id", item_id))
        first = first_with_id.setdefault(item_id, index)
        if first != index:
            code = "duplicate_item" if messages[first] == item else "duplicate_item_id"
            defects.append(Defect(index, code, -1, "id", item_id))
        if item_type in _REQUIRED_ID_TYPES:
            required.add(index)
    if waiting >= 0:
        _stranded(skeleton, messages, waiting)
    if tool_items:
        _pair_tool_items(skeleton, tool_items)
    for flag, found in (
        ("no_text", calling),
        ("reasoning_item", reasoning),
        ("output_item", outputs),
        ("id_required", required),
        ("reference", references),
        ("server_id", server_ids),
    ):
        if found:
            skeleton.marks[flag] = found
    return skeleton


def _pair_tool_items(skeleton: Skeleton, found: list[tuple[int, str, Any]]) -> None:
    """Pair the calls of :data:`_TOOL_CALLS` with their outputs, as the API does for
    ``function_call``: an output answers a call of its own type with its ``call_id`` before it.
    A call with no output after it gets ``missing_tool_output`` (marked ``tool_call``), an
    output with no call before it ``orphan_tool_output``; the detail is the API's name of the
    call type, for the error text. Items without a string ``call_id`` are not judged."""
    called: dict[tuple[str, str], list[int]] = {}  # (call type, call id) -> calls, in order
    answered: set[int] = set()
    for index, item_type, call_id in found:
        if type(call_id) is not str:
            continue
        if item_type in _TOOL_CALLS:
            called.setdefault((item_type, call_id), []).append(index)
            skeleton.mark("tool_call", index)
            continue
        call_type, phrase = _TOOL_OUTPUTS[item_type]
        calls = called.get((call_type, call_id))
        if calls:
            answered.update(calls)
        else:
            skeleton.defects.append(Defect(index, "orphan_tool_output", -1, phrase, call_id))
    for (call_type, call_id), calls in called.items():
        for index in calls:
            if index not in answered:
                phrase = _TOOL_CALLS[call_type][1]
                skeleton.defects.append(Defect(index, "missing_tool_output", -1, phrase, call_id))
    skeleton.defects.sort(key=lambda defect: defect.at)


def _stranded(skeleton: Skeleton, messages: Sequence[Any], at: int) -> None:
    """The reasoning item ``at`` is not followed by an item it can belong to."""
    item_id = _str_field(_getter(messages[at], at), "id", at) or ""
    skeleton.defects.append(Defect(at, "reasoning_without_follower", -1, "id", item_id))


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
    """Build the repaired list (see :class:`toolmend.formats.Format`)."""
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
        return _placeholder(messages, item)
    if isinstance(item, Bridge):
        return {"role": item.role, "content": item.text}
    if isinstance(item, AsText):
        return {"role": item.role, "content": _render(messages, item, edits)}
    if isinstance(item, Merge):
        return _merged(messages, item, edits)
    raise TypeError(f"{type(item).__name__} items do not apply to a Responses input")


def _placeholder(messages: Sequence[Any], item: Placeholder) -> dict[str, Any]:
    """The output answering a call that had none, of the type its call takes: a
    ``function_call_output`` or ``custom_tool_call_output`` holding the placeholder text, an
    ``apply_patch_call_output`` with ``status: "failed"`` (the patch is not known to be
    applied) and the text as its ``output``."""
    source = messages[item.call_index]
    kind = source.get("type") if isinstance(source, Mapping) else getattr(source, "type", None)
    if kind == "apply_patch_call":
        return {
            "type": "apply_patch_call_output",
            "call_id": item.call_id,
            "status": "failed",
            "output": item.text,
        }
    output_type = (
        "custom_tool_call_output" if kind == "custom_tool_call" else "function_call_output"
    )
    return {"type": output_type, "call_id": item.call_id, "output": item.text}


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
            copy["arguments"] = "{}" if arguments is None else jsontext.dumps(arguments)
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
    if kind in _TOOL_OUTPUTS:  # an output whose call is gone, kept as text
        head = f"[{kind} {data.get('call_id') or data.get('id')}]"
        output = data.get("output")
        text = output if isinstance(output, str) else _text_of(output)
        if not text and output is not None:
            text = jsontext.dumps(output, ensure_ascii=False, default=str)
        return f"{head}\n{text}" if text else head
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


def call_arguments(message: Any, slot: int) -> Any:
    """The arguments of a ``function_call`` item, JSON text (never logged)."""
    return _getter(message, 0)("arguments")


class OpenAIResponses(Format):
    """OpenAI Responses ``input`` items: ``message`` items, ``function_call`` items and the
    ``function_call_output`` items that answer them by ``call_id``, anywhere after the call;
    ``reasoning`` items that must keep their follower. A bare string is one user message."""

    name = NAME
    native_provider = "openai-responses"
    text_input = True  # a bare string is a complete ``input``: one user message
    results_follow_calls = False
    required_pairing = "ordered"

    read = staticmethod(read)
    apply = staticmethod(apply)
    claims = staticmethod(claims)
    result_text = staticmethod(result_text)
    call_arguments = staticmethod(call_arguments)
    group_spans = staticmethod(group_spans)
    quick_valid = staticmethod(quick_valid)
    quick_live = staticmethod(quick_live)
    live_rounds = staticmethod(live_rounds)
    dirty_spans = staticmethod(dirty_spans)


FORMAT = register(OpenAIResponses())
