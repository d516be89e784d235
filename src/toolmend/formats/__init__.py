"""Wire formats: one module per shape of history, all with the same contract.

A format module exposes:

``NAME: str``
    The format's name (``"openai"``).
``read(messages: Sequence[Any]) -> Skeleton``
    Read the native list once into a :class:`toolmend.history.Skeleton`, copying nothing.
    A message the module cannot read raises :class:`toolmend.InvalidMessageError` naming its
    index and field.
``apply(messages: Sequence[Any], plan: Plan) -> list[Any]``
    Build the repaired list from the plan: the original object for every untouched message, a
    shallow copy for every edited one, new messages for invented items. Never mutates its input.
``claims(message: Any) -> bool``
    Whether one message shows a feature only this format has (used by detection).
``result_text(message: Any, slot: int) -> str | None``
    The text of one tool result, for the planner's stub test (never logged).
``kind_of(message: Any) -> str`` *(optional)*
    The kind of one message, cheaply (the loop guard's walk back to the last user message).
``live_rounds(messages: Sequence[Any]) -> tuple[int, list[tuple[int, tuple[Call, ...]]]] | None``
    *(optional)* The live run for the hooks' loop guard, straight off plain data: the index
    after the last user message and each tool round after it; None for anything unusual (the
    guard then reads the run). A module with it also has ``call_arguments``.
``group_spans(messages: Sequence[Any]) -> list[tuple[int, int]] | None`` *(optional)*
    The ranges :func:`toolmend.trim` must keep or cut whole (the groups of
    :func:`toolmend.atomic_groups` longer than one message), from one pass over plain data;
    None when the pass cannot be sure. For a format whose results may lie anywhere after their
    calls (Responses), where the boundaries otherwise need a read and a pairing of everything.
``EXCLUSIVE: bool`` *(optional)*
    True when ``claims`` rests on the message's class, so its claim wins over the look-alike
    claims of other formats during detection (LangChain messages).
``TEXT_INPUT: bool`` *(optional)*
    True when a bare string is a whole history of this format (one user message: the Responses
    ``input``); ``read`` then takes the string, and a valid one comes back as it is.
``call_arguments(message: Any, slot: int) -> Any`` *(optional)*
    The arguments of one call (JSON text or an object), for the loop guard's comparison
    (never logged). Without it :mod:`toolmend.loops` finds the call by its id in the message.
``normalize(messages: Any) -> Sequence[Any]`` *(optional)*
    The list the module reads, from any other shape the SDK accepts as the history (Gemini:
    a string, a Part, a Content, a list of Parts); a list already in shape comes back as it is,
    so a valid input is still returned as the caller's own object. Problem indexes refer to it.
``quick_valid(messages: Sequence[Any], profile: Profile) -> bool`` *(optional)*
    The valid history's whole cost: True only when ``judge(read(messages), profile)`` would
    find nothing, from one tight pass over plain data that builds nothing per message. It
    may answer False for anything unusual (objects, a profile it does not model, a missing
    field): the full path then decides. Asked first, on every request; a property test holds
    True to the full path under every profile. In the chat and block formats it is the
    ``dirty_spans`` scan run with a ``first_only`` flag that stops at the first problem (the
    block formats: :class:`toolmend.spans.FirstOnly`), so the two cannot drift apart.
``quick_live(messages: Sequence[Any], profile: Profile) -> tuple[int, list[tuple[str, Any]]]``
    ``| None`` *(optional)* ``quick_valid``'s pass, also returning the live run for the loop
    guard: the number of tool rounds after the last user message and each of their calls as
    (name, arguments); None when it cannot vouch. The hooks' fast path (:mod:`toolmend.fastpath`).
``dirty_spans(messages: Sequence[Any], profile: Profile) -> list[tuple[int, int]] | None``
    *(optional)* The one-pass scan: the ranges that need repair (empty when valid), or None
    when it cannot tell (see :mod:`toolmend.spans`). Each range is judged and repaired on its
    own, with the problems and the repair it would get inside the whole history; asked when
    ``quick_valid`` answers False.

Adding a format is one file plus a line in :data:`MODULES` (and the shared case table in the
tests). Modules are imported on first use.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from ..report import InvalidHistoryError, InvalidMessageError, UnknownNameError

__all__ = ["MODULES", "detect", "module_for"]

MODULES: dict[str, str] = {
    "openai": "toolmend.formats.openai_chat",
    "openai-responses": "toolmend.formats.openai_responses",
    "anthropic": "toolmend.formats.anthropic",
    "gemini": "toolmend.formats.gemini",
    "bedrock": "toolmend.formats.bedrock",
    "langchain": "toolmend.formats.langchain",
}
"""Format name -> the module that reads and writes it. Detection asks them in this order."""

NATIVE_PROVIDER: dict[str, str] = {
    "openai": "openai",
    "openai-responses": "openai-responses",
    "langchain": "openai",
    "anthropic": "anthropic",
    "gemini": "gemini",
    "bedrock": "bedrock",
}
"""Format -> the provider profile whose API takes it: what :func:`toolmend.trim` keeps the
pairing rules of, and the CLI's provider when ``--provider`` is left out. LangChain messages
go to many providers; OpenAI's rules are the strictest about adjacency."""


def native_provider(format_name: str) -> str:
    """The provider profile for a format's own API (OpenAI's for a format without one)."""
    return NATIVE_PROVIDER.get(format_name, "openai")


_ALIASES = {
    "openai-chat": "openai",
    "chat": "openai",
    "claude": "anthropic",
    "google-genai": "gemini",
    "genai": "gemini",
    "vertex": "gemini",
    "converse": "bedrock",
}


def module_for(name: str) -> ModuleType:
    """The format module for ``name``, or a clear error suggesting a known one."""
    key = _ALIASES.get(name, name) if isinstance(name, str) else name
    path = MODULES.get(key)
    if path is None:
        close = difflib.get_close_matches(str(name), [*MODULES, *_ALIASES], n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise UnknownNameError(f"Unknown format {name!r}.{hint} Known: {', '.join(MODULES)}")
    module = _imported.get(path)
    if module is None:
        module = _imported[path] = importlib.import_module(path)
    return module


_imported: dict[str, ModuleType] = {}
"""Format modules already imported, by path: :func:`module_for` runs on every request."""


def feature(module: ModuleType, name: str) -> Any:
    """The format module's optional ``name`` (see above), or None when it has none.

    Not ``getattr(module, name, None)``: for a name the module lacks, that raises and catches an
    ``AttributeError`` inside, about a microsecond each time, on every request of every hook."""
    return module.__dict__.get(name)


def detect(messages: Sequence[Any]) -> ModuleType:
    """The format module for a history, from the first message that shows a telling feature.

    A history of plain text messages with roles reads the same in every chat format, so it is
    read as ``"openai"``. A shape no format knows is an error, not a guess.
    """
    modules = [module_for(name) for name in MODULES]
    if isinstance(messages, str):
        return _text_input(modules)
    plain = True  # every message so far is a plain text message with a chat role
    for message in messages:
        if (
            type(message) is dict
            and type(message.get("content")) is str
            and type(role := message.get("role")) is str
            and role in _PLAIN_ROLES
            and message.keys() <= _PLAIN_KEYS
        ):
            continue  # no format claims it: a chat with no tool call yet is all such messages
        plain = False
        claimed = [module for module in modules if module.claims(message)]
        if len(claimed) == 1:
            return claimed[0]
        exclusive = [module for module in claimed if getattr(module, "EXCLUSIVE", False)]
        if len(exclusive) == 1:  # its claim rests on the message's class (LangChain)
            return exclusive[0]
        if len(claimed) > 1:
            names = ", ".join(module.NAME for module in claimed)
            raise InvalidHistoryError(
                f"ambiguous history: it could be any of {names}; pass format="
            )
    if not plain:
        for index, message in enumerate(messages):
            _require_role(index, message)
    return module_for("openai")


_PLAIN_ROLES = frozenset({"user", "assistant", "system", "developer"})
_PLAIN_KEYS = frozenset({"role", "content", "name"})
"""A dict with only these keys, a string ``content`` and one of these roles tells no format
(no format's ``claims`` takes it, and its role is a string): :func:`detect` passes over it
without asking every format, which made a tool-free chat cost several times ``json.dumps``."""


def _text_input(modules: list[ModuleType]) -> ModuleType:
    """A bare string is one user message to the formats that take one (``TEXT_INPUT``: the
    Responses ``input``); it reads the same in all of them, so the first is as good as any."""
    for module in modules:
        if getattr(module, "TEXT_INPUT", False):
            return module
    raise InvalidHistoryError("a bare string is not a history: pass a list of messages")


def _require_role(index: int, message: Any) -> None:
    """A plain chat message has a string role; say which message has none, and why."""
    if isinstance(message, dict) or hasattr(message, "role"):
        role = message.get("role") if isinstance(message, dict) else message.role
        if not isinstance(role, str):
            raise InvalidMessageError(index, "role", "a string", role)
    else:
        raise InvalidMessageError(index, "", "a message (a dict or an object with a role)", message)
