"""What a profile is: :class:`Check` (one provider rule with its error text and source) and
:class:`Profile` (the rules and parameters one provider enforces), and the helpers the family
modules build their profiles with."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = [
    "ISSUE_20",
    "LITELLM_FACTORY",
    "Check",
    "Profile",
    "checks",
    "compiled",
    "shape_checks",
]


@dataclass(frozen=True)
class Check:
    """One provider rule: its id in the evidence catalogue, its error text and its source.

    ``error`` is a ``str.format`` template; the fields it may use are ``index``, ``slot``,
    ``id``, ``ids``, ``length``, ``role``, ``prev``, ``name`` and ``property`` (and
    ``position``, the 1-based message position, for the checks that pass it).
    """

    rule: str
    error: str
    source: str
    status: str = "observed"
    """``observed`` (quoted from a real response), ``documented`` or ``inferred`` (wording)."""


@dataclass(frozen=True)
class Profile:
    """Everything toolmend knows about one provider's tool-call rules."""

    name: str
    """The provider name users pass as ``provider=``."""
    checks: Mapping[str, Check]
    """Problem code -> the provider rule it breaks. Only these codes are reported."""
    pairing: str = "adjacent"
    """How results are paired with calls. ``"adjacent"``: OpenAI, a contiguous block of tool
    messages right after the calling assistant message, matched by id. ``"count"``: DeepSeek,
    the same block matched by count only. ``"latest"``: Mistral, results match the latest
    assistant message's ids, counted at the next assistant message. ``"ordered"``: OpenAI
    Responses, no adjacency: a result needs a call with its id somewhere before it, a call a
    result somewhere after it. ``"none"``: not checked."""
    batched_outputs: bool = False
    """Responses items (``pairing="ordered"``): a run of consecutive calls is one assistant turn,
    and the outputs of all its calls come right after that run, with nothing between them
    (DeepSeek's ``/v1/responses``; self-hosted servers, which turn the items into chat messages
    for the model's chat template)."""
    call_id_max_length: int | None = None
    """Longest tool call id the provider accepts (OpenAI: 40 on some deployments)."""
    call_id_pattern: str | None = None
    """Regular expression every call id must match in full (Mistral: 9 alphanumerics)."""
    call_id_length: int | None = None
    """Exact length of generated ids when ``call_id_pattern`` forces one (Mistral: 9)."""
    function_name_pattern: str | None = None
    """Regular expression a called function's name must match (Mistral)."""
    role_successors: Mapping[str, frozenset[str]] | None = None
    """Message kind -> the kinds allowed right after it (Mistral's validator; Bedrock, for
    OpenAI-shaped histories, after tool results). Reported as ``role_order``; repaired with the
    fixed assistant bridge. Judged on message layouts only."""
    last_kinds: frozenset[str] | None = None
    """Kinds the last message of a request may have (Mistral: user or tool, or a prefix)."""
    reasoning_in_tool_turns: bool = False
    """Every assistant message of a user turn that used tools must carry ``reasoning_content``
    (DeepSeek thinking mode)."""
    alternation: str | None = None
    """``"tool-aware"``: after an optional system message, user and assistant text messages
    alternate, tool traffic aside (HF chat templates with a tool role). ``"strict"``: every
    message alternates by position, so tool traffic must be flattened to text (templates with no
    tool role)."""
    known_roles: frozenset[str] | None = None
    """The roles the provider accepts, when it rejects others (OpenAI's role list)."""
    block_pairing: str | None = None
    """How calls and results pair in a block-layout history (the anthropic, gemini and bedrock
    formats). ``"turns"``: Anthropic, consecutive same-role messages form one turn, and every
    call of an assistant turn needs its result in the leading run of the next turn.
    ``"contents"``: Gemini, each Content is a turn, and the Content after a function-call turn
    holds exactly one response per call, named after it. ``"converse"``: Bedrock, the next
    message holds every result of the turn and nothing else. ``None``: the profile has no rules
    for block histories, and judging one is an error."""
    call_id_scope: str = "message"
    """Where call ids must be unique: within each ``"message"``, or in the whole ``"request"``
    (Anthropic)."""
    results_need_name: bool = False
    """Every result must name the function of the call it answers (Gemini's
    ``functionResponse.name``; for an OpenAI-shaped history bound for Gemini, the tool
    message's ``name``)."""
    first_user: bool = False
    """The first message after any system message must come from the user (Bedrock)."""
    call_after_user: bool = False
    """OpenAI-shaped histories: an assistant message with calls may not open the conversation
    (Gemini's function-call turn position; Mistral's validator never pairs a call at message
    0). Reported as ``call_turn_position``; the fixed user bridge goes before it, as for
    ``first_user``."""
    system_apart: bool = False
    """OpenAI-shaped histories: system messages are sent apart from the conversation (LiteLLM
    for Anthropic and Bedrock), or the conversation needs a user message (chat templates that
    put the tools into it), so a history of system messages only (and assistant messages
    without text or calls, which LiteLLM drops) is ``empty_history``."""
    thinking: bool = False
    """Anthropic extended thinking is on: the assistant turn answered by the final tool results
    must start with a thinking block."""
    thought_signatures: bool = False
    """Gemini 3: the first function call of every model Content since the last user prompt must
    carry a thought signature."""
    reject_function_ids: bool = False
    """The Gemini endpoint does not know ``functionCall.id`` / ``functionResponse.id``."""
    single_call: bool = False
    """OpenAI-shaped histories: an assistant message may make one call only (the Llama 3.1 /
    3.2 chat templates). Reported as ``parallel_calls``; repaired by splitting the message into
    consecutive single-call messages, each followed by its result (``split_calls``)."""
    content_string_kinds: frozenset[str] = frozenset()
    """Kinds of OpenAI-shaped messages whose ``content`` must be a string, not null (checked on
    user, system and tool messages and on assistant messages with calls; an assistant message
    without calls has ``null_content``). Reported as ``content_null``, repaired with ``""``."""
    content_text_kinds: frozenset[str] = frozenset()
    """Kinds of OpenAI-shaped messages whose ``content`` must hold text: neither null nor empty
    (Gemini through LiteLLM turns ``""`` into an empty text part; Bedrock through LiteLLM loses a
    user message without text). Reported as ``content_null`` / ``content_empty``; a user message
    gets the fixed user bridge text, an assistant message with calls loses the empty text."""
    strict_checks: Mapping[str, Check] = field(default_factory=dict)
    """Rules with weak evidence, recorded but not run."""
    aliases: tuple[str, ...] = ()
    """Other names that pick this profile (``"azure"`` for openai)."""


def checks(**by_code: Check) -> Mapping[str, Check]:
    return MappingProxyType(by_code)


ISSUE_20 = "toolmend issue 20 (the judges in tests/support/judges.py)"
"""Source of the rules found by the outside judges (mistral-common, chat templates, LiteLLM)."""

LITELLM_FACTORY = "LiteLLM litellm_core_utils/prompt_templates/factory.py"
"""Source of the rules LiteLLM's converters add to an OpenAI-shaped history."""


def shape_checks(
    call_shape: Check, arguments: Check | None = None, empty: Check | None = None
) -> dict[str, Check]:
    """The call-shape rules of a profile that takes OpenAI-shaped messages: a call without its
    ``function`` wrapper or ``type``, object ``arguments`` and ``tool_calls: []`` are put in
    the canonical shape (``normalized_tool_call``), which every such provider accepts."""
    return {
        "call_shape": call_shape,
        "arguments_not_string": arguments or call_shape,
        "empty_tool_calls": empty or call_shape,
    }


def compiled(pattern: str | None) -> re.Pattern[str] | None:
    """The pattern compiled for full matches, cached by :mod:`re`."""
    return re.compile(pattern) if pattern else None
