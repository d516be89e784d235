"""Hypothesis strategies for OpenAI Chat Completions histories, valid and damaged.

The repair code has to cope with whatever real applications send: histories
trimmed by token budgets, runs interrupted mid-tool, users typing while a tool
runs, ids rewritten by proxies.  Hand-written fixtures only cover the cases
someone thought of, so these strategies build *valid* histories first and then
break them with the concrete kinds of damage seen in the wild.  Property tests
can then assert things like "repair yields a valid history" and "no content
string is lost".

Everything is plain ``dict``/``list`` data (no toolmend import), so this module
stays usable while the library core is still being written.
"""

from __future__ import annotations

import copy
import json
import random
import string
from collections.abc import Callable
from typing import Any, Literal, TypeAlias

from hypothesis import strategies as st

Message: TypeAlias = dict[str, Any]
History: TypeAlias = list[Message]
IdStyle: TypeAlias = Literal["openai", "reused", "mistral", "any"]
DamageOp: TypeAlias = Callable[[History, random.Random], History]

__all__ = [
    "DAMAGE_OPS",
    "ID_STYLES",
    "MAX_MESSAGES",
    "OPENAI_FAMILY",
    "OP_NAMES",
    "STUB_CONTENT",
    "TOOL_NAMES",
    "DamageOp",
    "History",
    "IdStyle",
    "Message",
    "apply_damage",
    "content_strings",
    "damaged_conversations",
    "valid_conversations",
]

#: Hard cap on generated history length, so hundreds of examples run in seconds.
MAX_MESSAGES = 40
#: The concrete id styles; ``"any"`` picks one of these per conversation.
ID_STYLES: tuple[str, ...] = ("openai", "reused", "mistral")
#: The profiles of providers that take OpenAI chat histories, which these strategies write.
OPENAI_FAMILY: tuple[str, ...] = (
    "openai",
    "deepseek",
    "deepseek-reasoner",
    "mistral",
    "groq",
    "hf-template",
    "hf-template-strict",
)
#: What agent frameworks write in place of a result when a run is cancelled.
STUB_CONTENT = "Tool call was aborted."

_ALNUM = string.ascii_letters + string.digits
_WORD = st.text(alphabet="abcdexyz", min_size=1, max_size=6)
# Words never include whitespace, so texts have no leading/trailing blanks
# that a repair step might legitimately normalise away.
_WORDS = st.lists(_WORD, max_size=3).map(" ".join)

_TOOL_ARGS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "get_weather": st.fixed_dictionaries(
        {"city": st.sampled_from(["Paris", "Lima", "Oslo", "Kyoto"])},
        optional={"unit": st.sampled_from(["celsius", "fahrenheit"])},
    ),
    "search": st.fixed_dictionaries(
        {"query": _WORDS.filter(bool)},
        optional={"limit": st.integers(min_value=1, max_value=10)},
    ),
    "read_file": st.fixed_dictionaries(
        {"path": st.sampled_from(["README.md", "src/app.py", "notes.txt"])}
    ),
}
#: Function names used in generated tool calls.
TOOL_NAMES: tuple[str, ...] = tuple(sorted(_TOOL_ARGS))


# ---------------------------------------------------------------------------
# Valid conversations
# ---------------------------------------------------------------------------


class _TextMaker:
    """Produce short texts that are distinct across a whole conversation.

    A running counter is embedded in every text so the "nothing lost" property
    can compare sets of strings without two messages ever sharing one.
    """

    def __init__(self, draw: st.DrawFn) -> None:
        self._draw = draw
        self._count = 0

    def __call__(self, kind: str) -> str:
        self._count += 1
        words = self._draw(_WORDS)
        head = f"{kind} {self._count}"
        return f"{head}: {words}" if words else head


def _base62(n: int) -> str:
    digits = ""
    while True:
        n, rem = divmod(n, len(_ALNUM))
        digits = _ALNUM[rem] + digits
        if n == 0:
            return digits


def _unique_id(draw: st.DrawFn, used: set[str], prefix: str, size: int) -> str:
    """Draw a random id and make it unique without retry-drawing.

    Redrawing until unique can loop for a long time while Hypothesis shrinks
    every draw towards the same minimal string, so collisions are resolved
    deterministically by overwriting the tail with a counter instead.
    """
    body = draw(st.text(alphabet=_ALNUM, min_size=size, max_size=size))
    candidate = prefix + body
    n = 0
    while candidate in used:
        n += 1
        suffix = _base62(n)
        candidate = prefix + body[: size - len(suffix)] + suffix
    used.add(candidate)
    return candidate


def _call_ids(draw: st.DrawFn, style: str, used: set[str], count: int) -> list[str]:
    if style == "reused":
        # OpenAI-compatible servers (vLLM, llama.cpp, ...) that restart the
        # numbering for each response: unique per message, reused per round.
        return [f"call_{i}" for i in range(count)]
    if style == "mistral":
        return [_unique_id(draw, used, "", 9) for _ in range(count)]
    return [_unique_id(draw, used, "call_", 24) for _ in range(count)]


@st.composite
def _conversations(draw: st.DrawFn, id_style: str, reasoning: bool, max_rounds: int) -> History:
    style = draw(st.sampled_from(ID_STYLES)) if id_style == "any" else id_style
    text = _TextMaker(draw)
    used_ids: set[str] = set()
    history: History = []

    def assistant(message: Message) -> Message:
        if reasoning:
            message["reasoning_content"] = text("thinking")
        return message

    if draw(st.booleans()):
        history.append({"role": "system", "content": text("system")})
    # Every turn needs at least a user and an assistant message.
    max_turns = max(1, min(max_rounds, (MAX_MESSAGES - len(history)) // 2))
    turns = draw(st.integers(min_value=1, max_value=max_turns))
    pending_last = draw(st.booleans())

    for turn in range(turns):
        history.append({"role": "user", "content": text("user")})
        later_turns = turns - turn - 1
        if later_turns == 0 and pending_last:
            break  # the request is waiting for the model
        for _ in range(draw(st.integers(min_value=0, max_value=2))):
            # Reserve the closing assistant text and two messages per later
            # turn; the rest of the budget may go to this round.
            budget = MAX_MESSAGES - len(history) - 1 - 2 * later_turns
            max_calls = min(3, budget - 1)
            if max_calls < 1:
                break
            count = draw(st.integers(min_value=1, max_value=max_calls))
            calls = []
            for call_id in _call_ids(draw, style, used_ids, count):
                name = draw(st.sampled_from(TOOL_NAMES))
                arguments = json.dumps(draw(_TOOL_ARGS[name]))
                calls.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": arguments},
                    }
                )
            note = text("note") if draw(st.booleans()) else None
            history.append(assistant({"role": "assistant", "content": note, "tool_calls": calls}))
            for call in draw(st.permutations(calls)):
                history.append(
                    {
                        "role": "tool",
                        "tool_call_id": call["id"],
                        "content": text("result"),
                    }
                )
        # Always close with assistant text: besides being the normal shape,
        # this keeps Mistral's "no tool message directly before user" rule.
        history.append(assistant({"role": "assistant", "content": text("assistant")}))
    return history


def _check_args(id_style: str, max_rounds: int) -> None:
    # Fail at strategy construction, not lazily inside the first draw.
    if id_style not in (*ID_STYLES, "any"):
        raise ValueError(f"unknown id_style {id_style!r}")
    if max_rounds < 1:
        raise ValueError("max_rounds must be at least 1")


def valid_conversations(
    *, id_style: IdStyle = "openai", reasoning: bool = False, max_rounds: int = 6
) -> st.SearchStrategy[History]:
    """Strategy for histories OpenAI Chat Completions accepts as they are.

    ``max_rounds`` bounds the number of user turns (further capped so that no
    history exceeds ``MAX_MESSAGES``); each turn has 0-2 tool rounds of 1-3
    parallel calls whose results come back in any order, then assistant text.
    The last turn may instead stop right after the user message.

    ``id_style`` mimics the providers: ``"openai"`` (``call_`` + 24
    alphanumerics, unique), ``"reused"`` (``call_0``, ``call_1``, ... restarted
    every round), ``"mistral"`` (9 alphanumerics, unique) or ``"any"`` (one of
    them per conversation).  ``reasoning=True`` adds DeepSeek-style
    ``reasoning_content`` to every assistant message.
    """
    _check_args(id_style, max_rounds)
    return _conversations(id_style, reasoning, max_rounds)


def content_strings(history: History) -> set[str]:
    """Every user text, assistant text and tool result content in ``history``.

    Repair may move, merge or re-id messages, but it must not silently drop
    what the user, the model or a tool said; comparing these sets before and
    after repair checks exactly that.  List-of-parts content is looked into so
    a repair that converts strings to text parts is not mistaken for a loss.
    System messages and ``reasoning_content`` are deliberately not included.
    """
    found: set[str] = set()
    for message in history:
        if message.get("role") not in ("user", "assistant", "tool"):
            continue
        content = message.get("content")
        if isinstance(content, str):
            found.add(content)
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    found.add(part["text"])
    return found


# ---------------------------------------------------------------------------
# Damage operations
#
# Each takes a history and a ``random.Random`` and returns a new history.  The
# input is never mutated: an op that applies deep-copies the whole history
# first.  An op that does not apply returns the input unchanged; an op that
# applies always returns a history that compares unequal to its input.  Ops
# must tolerate histories that earlier ops already damaged.
# ---------------------------------------------------------------------------


def _has_calls(message: Message) -> bool:
    calls = message.get("tool_calls")
    return message.get("role") == "assistant" and isinstance(calls, list) and bool(calls)


def _is_tool(message: Message) -> bool:
    return message.get("role") == "tool"


def _call_id_set(message: Message) -> set[Any]:
    return {c.get("id") for c in message.get("tool_calls") or [] if isinstance(c, dict)}


def _blocks(history: History) -> list[tuple[int, int]]:
    """``(i, end)`` per assistant with calls; ``history[i+1:end]`` are its tools."""
    blocks = []
    for i, message in enumerate(history):
        if _has_calls(message):
            end = i + 1
            while end < len(history) and _is_tool(history[end]):
                end += 1
            blocks.append((i, end))
    return blocks


def _tools_before_a_user(history: History) -> list[tuple[int, int]]:
    """``(t, u)``: tool message ``t`` and the index ``u`` of the next user message."""
    pairs = []
    next_user = None
    for i in range(len(history) - 1, -1, -1):
        if history[i].get("role") == "user":
            next_user = i
        elif _is_tool(history[i]) and next_user is not None:
            pairs.append((i, next_user))
    return pairs[::-1]


def _fresh_user_text(history: History, rnd: random.Random) -> str:
    taken = content_strings(history)
    while True:
        candidate = f"interjection {rnd.randrange(10**6)}: are you done yet"
        if candidate not in taken:
            return candidate


def drop_call_message(history: History, rnd: random.Random) -> History:
    """Remove an assistant message with tool calls, orphaning its results.

    The classic trimmer bug: it counts tokens per message and cuts the
    assistant request but keeps the tool reply that follows it.
    """
    candidates = [i for i, m in enumerate(history) if _has_calls(m)]
    if not candidates:
        return history
    out = copy.deepcopy(history)
    del out[rnd.choice(candidates)]
    return out


def drop_result(history: History, rnd: random.Random) -> History:
    """Remove one tool message, leaving a call without a result."""
    candidates = [i for i, m in enumerate(history) if _is_tool(m)]
    if not candidates:
        return history
    out = copy.deepcopy(history)
    del out[rnd.choice(candidates)]
    return out


def truncate_head(history: History, rnd: random.Random) -> History:
    """Keep only a tail (plus the system message), as context trimming does.

    Cuts are biased towards landing on a tool message, because trimming that
    splits a call from its results is the case providers reject.
    """
    start = 1 if history and history[0].get("role") == "system" else 0
    cuts = list(range(start + 1, len(history)))
    if not cuts:
        return history
    splitting = [c for c in cuts if _is_tool(history[c])]
    cut = rnd.choice(splitting if splitting and rnd.random() < 0.7 else cuts)
    out = copy.deepcopy(history)
    return out[:start] + out[cut:]


def truncate_tail(history: History, rnd: random.Random) -> History:
    """End right after a tool-calls message or among its results.

    This is what a crashed or cancelled agent run leaves behind.
    """
    cuts: list[int] = []
    for i, end in _blocks(history):
        cuts.extend(c for c in range(i + 1, max(end, i + 2)) if c < len(history))
    if not cuts:
        return history
    out = copy.deepcopy(history)
    return out[: rnd.choice(cuts)]


def interleave_user(history: History, rnd: random.Random) -> History:
    """Insert a new user message inside a tool-call group.

    Chat UIs let the user type while a tool is still running and append that
    message as soon as it arrives.
    """
    positions: list[int] = []
    for i, end in _blocks(history):
        positions.extend(range(i + 1, max(end, i + 2)))
    if not positions:
        return history
    out = copy.deepcopy(history)
    message = {"role": "user", "content": _fresh_user_text(history, rnd)}
    out.insert(rnd.choice(positions), message)
    return out


def split_assistant(history: History, rnd: random.Random) -> History:
    """Split text + tool calls into two assistant messages, text second.

    Some frameworks store streamed text and tool calls as separate messages,
    which puts a text-only assistant message between the calls and results.
    """
    candidates = [
        i
        for i, m in enumerate(history)
        if _has_calls(m) and isinstance(m.get("content"), str) and m["content"]
    ]
    if not candidates:
        return history
    i = rnd.choice(candidates)
    out = copy.deepcopy(history)
    text = out[i]["content"]
    out[i]["content"] = None
    out.insert(i + 1, {"role": "assistant", "content": text})
    return out


def duplicate_result(history: History, rnd: random.Random) -> History:
    """Insert an exact copy of a tool message later in the history.

    Retries and replays after reconnects deliver the same result twice.
    """
    candidates = [i for i, m in enumerate(history) if _is_tool(m)]
    if not candidates:
        return history
    t = rnd.choice(candidates)
    out = copy.deepcopy(history)
    out.insert(rnd.randint(t + 1, len(out)), copy.deepcopy(out[t]))
    return out


def stub_then_real(history: History, rnd: random.Random) -> History:
    """Replace a result by an abort stub; the real one arrives after a user turn.

    Agents that cancel a slow tool on new user input write a stub, and later
    append the real result once the tool finishes anyway.
    """
    candidates = [
        (t, u)
        for t, u in _tools_before_a_user(history)
        if history[t].get("content") != STUB_CONTENT
    ]
    if not candidates:
        return history
    t, u = rnd.choice(candidates)
    out = copy.deepcopy(history)
    real = copy.deepcopy(out[t])
    out[t]["content"] = STUB_CONTENT
    out.insert(rnd.randint(u + 1, len(out)), real)
    return out


def move_result(history: History, rnd: random.Random) -> History:
    """Move a tool message to somewhere after the next user message.

    Asynchronous tools append their result whenever they finish, which may be
    after the conversation has moved on.
    """
    candidates = _tools_before_a_user(history)
    if not candidates:
        return history
    t, u = rnd.choice(candidates)
    out = copy.deepcopy(history)
    message = out.pop(t)
    # After the pop the user message sits at u - 1, so u is right after it.
    out.insert(rnd.randint(u, len(out)), message)
    return out


def drop_result_id(history: History, rnd: random.Random) -> History:
    """Delete ``tool_call_id`` from the result of a single-call assistant message.

    Older clients and some templates omit the id when only one call is
    pending, relying on position; strict providers then reject the message.
    """
    candidates = []
    for t, message in enumerate(history):
        if not _is_tool(message) or "tool_call_id" not in message:
            continue
        call_id = message["tool_call_id"]
        for i in range(t - 1, -1, -1):
            if _has_calls(history[i]) and call_id in _call_id_set(history[i]):
                if len(history[i]["tool_calls"]) == 1:
                    candidates.append(t)
                break
    if not candidates:
        return history
    out = copy.deepcopy(history)
    del out[rnd.choice(candidates)]["tool_call_id"]
    return out


def malformed_call(history: History, rnd: random.Random) -> History:
    """Break one tool call's shape the way hand-rolled clients do.

    Either ``type`` is missing, ``arguments`` is a dict instead of a JSON
    string, or the call is flattened to ``{"id", "name", "arguments"}``.
    """
    candidates = []
    for i, message in enumerate(history):
        if not _has_calls(message):
            continue
        for j, call in enumerate(message["tool_calls"]):
            if not isinstance(call, dict):
                continue
            if "type" in call:
                candidates.append((i, j, "drop_type"))
            function = call.get("function")
            if isinstance(function, dict):
                candidates.append((i, j, "flatten"))
                arguments = function.get("arguments")
                if isinstance(arguments, str):
                    try:
                        json.loads(arguments)
                    except ValueError:
                        pass
                    else:
                        candidates.append((i, j, "dict_arguments"))
    if not candidates:
        return history
    i, j, mode = rnd.choice(candidates)
    out = copy.deepcopy(history)
    call = out[i]["tool_calls"][j]
    if mode == "drop_type":
        del call["type"]
    elif mode == "dict_arguments":
        call["function"]["arguments"] = json.loads(call["function"]["arguments"])
    else:
        function = call["function"]
        flat = {"id": call.get("id"), "name": function.get("name")}
        flat["arguments"] = function.get("arguments")
        out[i]["tool_calls"][j] = flat
    return out


def empty_tool_calls(history: History, rnd: random.Random) -> History:
    """Add ``"tool_calls": []`` to an assistant text message.

    Serializers that always emit the field produce this; several providers
    reject an empty list.
    """
    candidates = [
        i for i, m in enumerate(history) if m.get("role") == "assistant" and "tool_calls" not in m
    ]
    if not candidates:
        return history
    out = copy.deepcopy(history)
    out[rnd.choice(candidates)]["tool_calls"] = []
    return out


def null_content(history: History, rnd: random.Random) -> History:
    """Set ``content`` to None on an assistant message without tool calls.

    Streaming clients that saw no text deltas store None; without tool calls
    such a message is invalid.  (This op deletes text by design, so compare
    content strings of the damaged history, not the original, after repair.)
    """
    candidates = [
        i
        for i, m in enumerate(history)
        if m.get("role") == "assistant" and not m.get("tool_calls") and m.get("content") is not None
    ]
    if not candidates:
        return history
    out = copy.deepcopy(history)
    out[rnd.choice(candidates)]["content"] = None
    return out


def long_ids(history: History, rnd: random.Random) -> History:
    """Rewrite one call id, and its results' ids, to 60 characters.

    Ids produced by other providers or proxies can exceed limits (OpenAI
    allows 40); the pair stays consistent so only the length is wrong.
    """
    candidates = [
        (i, j)
        for i, m in enumerate(history)
        if _has_calls(m)
        for j, call in enumerate(m["tool_calls"])
        if isinstance(call, dict) and isinstance(call.get("id"), str)
    ]
    if not candidates:
        return history
    taken = {c for m in history for c in _call_id_set(m)}
    taken |= {m.get("tool_call_id") for m in history}
    new_id = ""
    while not new_id or new_id in taken:
        new_id = "call_" + "".join(rnd.choice(_ALNUM) for _ in range(55))
    i, j = rnd.choice(candidates)
    out = copy.deepcopy(history)
    old_id = out[i]["tool_calls"][j]["id"]
    out[i]["tool_calls"][j]["id"] = new_id
    # Results belong to this call until another call reuses the same id.
    for message in out[i + 1 :]:
        if _has_calls(message) and old_id in _call_id_set(message):
            break
        if _is_tool(message) and message.get("tool_call_id") == old_id:
            message["tool_call_id"] = new_id
    return out


def merge_results(history: History, rnd: random.Random) -> History:
    """Join two neighbouring tool messages into one, keeping the first one's id.

    Stores that coalesce consecutive same-role messages (meant for user and
    assistant turns) do it to parallel tool results too, which leaves the
    second call without a result of its own.
    """
    candidates = [
        i
        for i in range(len(history) - 1)
        if _is_tool(history[i])
        and _is_tool(history[i + 1])
        and isinstance(history[i].get("content"), str)
        and isinstance(history[i + 1].get("content"), str)
    ]
    if not candidates:
        return history
    i = rnd.choice(candidates)
    out = copy.deepcopy(history)
    second = out.pop(i + 1)
    out[i]["content"] = f"{out[i]['content']}\n{second['content']}"
    return out


def reid_one_side(history: History, rnd: random.Random) -> History:
    """Give one call, or one result, a fresh id the other side does not know.

    Proxies that rewrite ids (to fit a provider's length or pattern rule) and
    forget one direction leave a call without a result and a result without
    its call.  The new id keeps the old one's style (prefix and length).
    """
    candidates: list[tuple[int, int]] = []  # (message, call slot), slot -1 for a result
    for i, message in enumerate(history):
        if _has_calls(message):
            candidates.extend(
                (i, j)
                for j, call in enumerate(message["tool_calls"])
                if isinstance(call, dict) and isinstance(call.get("id"), str)
            )
        elif _is_tool(message) and isinstance(message.get("tool_call_id"), str):
            candidates.append((i, -1))
    if not candidates:
        return history
    taken = {c for m in history for c in _call_id_set(m)}
    taken |= {m.get("tool_call_id") for m in history}
    i, j = rnd.choice(candidates)
    out = copy.deepcopy(history)
    old = out[i]["tool_calls"][j]["id"] if j >= 0 else out[i]["tool_call_id"]
    prefix = "call_" if old.startswith("call_") else ""
    size = max(len(old) - len(prefix), 4)
    new_id = old
    while new_id in taken:
        new_id = prefix + "".join(rnd.choice(_ALNUM) for _ in range(size))
    if j >= 0:
        out[i]["tool_calls"][j]["id"] = new_id
    else:
        out[i]["tool_call_id"] = new_id
    return out


def rename_result(history: History, rnd: random.Random) -> History:
    """Give a tool message a ``name`` other than the one it has.

    Seed 003: a converter wrote the opaque call id where the function name
    belongs; other stores keep the name a tool had before it was renamed.
    """
    candidates = [i for i, m in enumerate(history) if _is_tool(m)]
    if not candidates:
        return history
    i = rnd.choice(candidates)
    out = copy.deepcopy(history)
    message = out[i]
    call_id = message.get("tool_call_id")
    names = [call_id if isinstance(call_id, str) else "call_1073557", *TOOL_NAMES]
    message["name"] = rnd.choice([n for n in names if n != message.get("name")])
    return out


#: Damage operations by name; each is ``(history, rnd) -> new history``.
DAMAGE_OPS: dict[str, DamageOp] = {
    op.__name__: op
    for op in (
        drop_call_message,
        drop_result,
        truncate_head,
        truncate_tail,
        interleave_user,
        split_assistant,
        duplicate_result,
        stub_then_real,
        move_result,
        drop_result_id,
        malformed_call,
        empty_tool_calls,
        null_content,
        long_ids,
        merge_results,
        reid_one_side,
        rename_result,
    )
}
OP_NAMES: tuple[str, ...] = tuple(DAMAGE_OPS)


def apply_damage(
    history: History, names: list[str], rnd: random.Random
) -> tuple[History, list[str]]:
    """Apply the named ops in order; return the result and the ops that applied.

    An op counts as applied when it changed the history, so the returned names
    describe the damage actually present rather than what was attempted.
    """
    applied = []
    for name in names:
        damaged = DAMAGE_OPS[name](history, rnd)
        if damaged != history:
            applied.append(name)
            history = damaged
    return history, applied


@st.composite
def _damaged(
    draw: st.DrawFn, id_style: IdStyle, reasoning: bool, max_rounds: int
) -> tuple[History, History, list[str]]:
    # Ops and seed are drawn before the history on purpose: Hypothesis biases
    # choices made after a long draw towards their simplest value, which made
    # the first op in OP_NAMES several times more common than the others.  A
    # plain seeded Random keeps the op's own choices uniform for the same reason.
    names = draw(st.lists(st.sampled_from(OP_NAMES), min_size=1, max_size=3))
    seed = draw(st.integers(min_value=0, max_value=2**32 - 1))
    original = draw(
        valid_conversations(id_style=id_style, reasoning=reasoning, max_rounds=max_rounds)
    )
    damaged, applied = apply_damage(original, names, random.Random(seed))
    return original, damaged, applied


def damaged_conversations(
    *, id_style: IdStyle = "openai", reasoning: bool = False, max_rounds: int = 6
) -> st.SearchStrategy[tuple[History, History, list[str]]]:
    """Strategy for ``(original, damaged, ops)`` with 1-3 damage ops attempted.

    ``original`` is drawn from ``valid_conversations`` with the same keyword
    arguments.  ``ops`` lists only the ops that changed the history, so it can
    be empty (e.g. a tool-free history); then ``damaged == original``.
    """
    _check_args(id_style, max_rounds)
    return _damaged(id_style, reasoning, max_rounds)
