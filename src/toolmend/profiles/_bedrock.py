"""AWS Bedrock Converse (and LiteLLM's conversion to it)."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from ._anthropic import ANTHROPIC_NO_PREFILL
from ._base import ISSUE_20, LITELLM_FACTORY, Check, Profile, checks, shape_checks

# --- AWS Bedrock Converse -------------------------------------------------------------------------

_BR_PUBLIC_CODE = "public code quoting the ValidationException"
_BR_EXCESS = Check(
    "BR-TOOL-RESULT-EXCESS",
    "The number of toolResult blocks at messages.{index}.content exceeds the number of toolUse "
    "blocks of previous turn.",
    "https://github.com/Just-Curieous/Curie/issues/16 ; "
    "https://github.com/pydantic/pydantic-ai/issues/2327",
)
_BR_ID = (
    "1 validation error detected: Value '{{id}}' at 'messages.{{index}}.member.content.{{slot}}"
    ".member.{part}' failed to satisfy constraint: Member must satisfy regular expression "
    "pattern: [a-zA-Z0-9_.:-]+ and have length between 1 and 64"
)
_BR_ID_SOURCE = (
    "https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ToolUseBlock.html "
    "(AWS standard validation wording; exact text not found)"
)
_BR_CALL_ID = Check(
    "BR-TOOL-USE-ID-FORMAT", _BR_ID.format(part="toolUse.toolUseId"), _BR_ID_SOURCE, "documented"
)

_BR_RESULT_ID = Check(
    "BR-TOOL-USE-ID-FORMAT", _BR_ID.format(part="toolResult.toolUseId"), _BR_ID_SOURCE, "documented"
)

_BR_RESULT_WITH_TEXT = Check(
    "BR-TOOL-RESULT-WITH-TEXT",
    "messages.{index}.content: Conversation blocks and tool result blocks cannot be "
    "provided in the same turn.",
    "https://github.com/BerriAI/litellm/issues/6053 ; "
    "https://github.com/langchain-ai/langchain-aws/issues/141",
)

_BR_FIRST_NOT_USER = Check(
    "BR-FIRST-NOT-USER",
    "A conversation must start with a user message. Try again with a conversation that "
    "starts with a user message.",
    _BR_PUBLIC_CODE,
)

_BR_NOT_ALTERNATING = Check(
    "BR-ROLES-NOT-ALTERNATING",
    "A conversation must alternate between user and assistant roles. Make sure the "
    "conversation alternates between user and assistant roles and try again.",
    "https://github.com/langgenius/dify/issues/9294 ; "
    "https://github.com/langchain-ai/langchain-aws/issues/192 ; an OpenAI-shaped assistant "
    "message without text is dropped by LiteLLM's converter (" + ISSUE_20 + ")",
)

_BR_BLANK_TEXT = Check(
    "BR-BLANK-TEXT",
    "The text field in the ContentBlock object at messages.{index}.content.{slot} is "
    "blank. Add text to the text field, and try again.",
    "public code quoting the error; https://github.com/agentjido/jido_ai/pull/215 (Bedrock "
    "refuses an empty text block; Claude models answer 'text content blocks must be "
    "non-empty', BR-RESULT-BLANK-TEXT)",
)
_BR_RESULT_BLANK_TEXT = Check(
    "BR-RESULT-BLANK-TEXT",
    "messages: text content blocks must {property}",
    "https://github.com/NousResearch/hermes-agent/issues/55092 (an empty text inside a "
    "toolResult: 'be non-empty'); https://github.com/NousResearch/hermes-agent/pull/61318 "
    "(whitespace only: 'contain non-whitespace text')",
)
_BR_USER_TOOL_USE = Check(
    "BR-USER-TOOL-USE",
    "User messages cannot contain tool uses. Please remove the tool uses and try again.",
    "https://github.com/strands-agents/sdk-python/issues/1160 ; "
    "https://github.com/strands-agents/sdk-python/issues/2214",
)
_BR_TOOL_USE_WITH_TEXT = Check(
    "BR-TOOL-USE-WITH-TEXT",
    "messages.{index}.content: Conversation blocks and tool use blocks cannot be "
    "provided in the same turn.",
    "https://github.com/quarkiverse/quarkus-langchain4j/issues/1983 (model-dependent: Llama "
    "and Mistral models, not Claude or Nova)",
)

BEDROCK = Profile(
    name="bedrock",
    aliases=("bedrock-converse", "converse", "aws-bedrock"),
    checks=checks(
        first_not_user=_BR_FIRST_NOT_USER,
        roles_not_alternating=_BR_NOT_ALTERNATING,
        orphan_result=_BR_EXCESS,
        unknown_result_id=_BR_EXCESS,
        duplicate_result=_BR_EXCESS,
        missing_result=Check(
            "BR-TOOL-RESULT-MISSING",
            "Expected toolResult blocks at messages.{index}.content for the following Ids: {ids}",
            _BR_PUBLIC_CODE,
        ),
        result_with_text=_BR_RESULT_WITH_TEXT,
        # OpenAI-shaped histories: LiteLLM and gateways fold the tool messages and a user message
        # right after them into one Converse user turn, which then holds both.
        role_order=_BR_RESULT_WITH_TEXT,
        call_id_format=_BR_CALL_ID,
        call_without_id=_BR_CALL_ID,
        result_id_format=_BR_RESULT_ID,
        # an OpenAI-shaped tool message without ``tool_call_id``: converted, a toolResult
        # without toolUseId, and one more result than the turn has calls
        result_without_id=_BR_RESULT_ID,
        # OpenAI-shaped histories through LiteLLM: a malformed call fails the conversion, a
        # user message without text is lost (and the roles then no longer alternate)
        **shape_checks(
            Check(
                "BR-OPENAI-TOOL-CALL-SHAPE",
                "Unable to convert openai tool calls with ids={ids} to bedrock tool calls.",
                LITELLM_FACTORY + " (_convert_to_bedrock_tool_call_invoke); " + ISSUE_20,
            )
        ),
        # Converse blocks: a blank text block, a blank text inside a toolResult, a toolUse
        # in a user message (a summary or a repair put it there); OpenAI-shaped: an empty or
        # blank tool message, which LiteLLM sends as a blank toolResult text
        text_blank=_BR_BLANK_TEXT,
        result_text_blank=_BR_RESULT_BLANK_TEXT,
        misplaced_part=_BR_USER_TOOL_USE,
        content_null=_BR_FIRST_NOT_USER,
        content_empty=_BR_FIRST_NOT_USER,
        null_content=_BR_NOT_ALTERNATING,
        empty_assistant=_BR_NOT_ALTERNATING,
        empty_history=_BR_FIRST_NOT_USER,
    ),
    system_apart=True,
    content_text_kinds=frozenset({"user"}),
    block_pairing="converse",
    call_id_pattern=r"[a-zA-Z0-9_.:-]{1,64}",
    first_user=True,
    role_successors=MappingProxyType({"tool": frozenset({"assistant", "tool"})}),
    # A request ending on an assistant toolUse (no message after it) was recorded here as
    # BR-TRAILING-TOOL-USE, inferred; no public report quotes Bedrock's own answer to it.
    # Issue 32, case 7 settles it without one: a trailing call is never something to send
    # unanswered (Claude models, most of Bedrock's tool traffic, refuse it under Anthropic's
    # rules), so the pairing rules report it as missing_result and the repair answers it.
    strict_checks=checks(call_with_text=_BR_TOOL_USE_WITH_TEXT),
)
"""AWS Bedrock Converse.

Native ``messages`` (``toolUse`` / ``toolResult`` blocks) are judged message by message: the
first message from the user, roles strictly alternating, the message after an assistant
``toolUse`` turn holding a ``toolResult`` for every call, no more, and no other blocks beside
them; a request does not end on an assistant ``toolUse`` turn. Repairs gather the results into
that one user message, answer missing calls (a trailing turn's too, unless the frontier is kept)
with the placeholder (``status: "error"``), move text beside results into a user message of its own
behind the fixed assistant bridge ("Tool results received."), merge same-role neighbours and
open with the fixed user bridge ("Continue.") where the history starts with the assistant.

An OpenAI-shaped history checked against this profile (what LiteLLM converts) uses OpenAI's
adjacency pairing and the first-user rule; LiteLLM itself merges consecutive same-role messages.
A tool message's text goes into its ``toolResult`` as it is, so an empty or whitespace-only one
(or a blank text part) is ``result_text_blank``, mended as on Converse blocks: the text
"(empty)" where nothing else is left, the blank part dropped beside others.
"""

TOOLS_ALONE_MODELS: tuple[str, ...] = ("meta.", "mistral.")
"""Bedrock model id prefixes (after any cross-region prefix such as ``us.``) of the families
that refuse text beside ``toolUse`` in one assistant turn (Llama, Mistral): a request naming
one meets ``bedrock-tools-alone`` (see :func:`toolmend.request_profile`)."""

BEDROCK_TOOLS_ALONE = replace(
    BEDROCK,
    name="bedrock-tools-alone",
    aliases=(),
    checks=checks(**BEDROCK.checks, call_with_text=_BR_TOOL_USE_WITH_TEXT),
    strict_checks=checks(
        **{code: check for code, check in BEDROCK.strict_checks.items() if code != "call_with_text"}
    ),
)
"""Bedrock Converse for Llama and Mistral models (``meta.llama3-1-70b-instruct-v1:0``,
``us.meta.llama...``, ``mistral.mistral-large-2407-v1:0``): the rules of ``bedrock``, and an
assistant turn with ``toolUse`` blocks holds nothing else. The repair keeps the text: it goes
in an assistant message of its own before the calls, behind the fixed user bridge
("Continue.") that the strict alternation then needs.

An OpenAI-shaped history (what LiteLLM converts) meets the same rule: LiteLLM's converter
sends an assistant message's text (blank text aside) and its ``tool_calls`` as one turn, and
merges consecutive assistant messages into one, so a calling message with text, or right after
an assistant text message, is ``call_with_text``; the repair is the same split (the text as
written, the bridge, the calls in an assistant message of their own)."""

BEDROCK_NO_PREFILL = replace(
    BEDROCK,
    name="bedrock-no-prefill",
    aliases=(),
    checks=checks(
        **BEDROCK.checks, prefill_unsupported=ANTHROPIC_NO_PREFILL.checks["prefill_unsupported"]
    ),
)
"""Bedrock Converse for the Claude models without prefill (the model ids that hold one of
:data:`toolmend.profiles._anthropic.NO_PREFILL_MODELS`, ``us.anthropic.claude-opus-4-6-v1``:
strands-agents/sdk-python#1694 met the error there): the rules of ``bedrock``, and the request
ends with a user message. A final assistant text message is kept and the fixed user bridge
("Continue.") is sent after it, as under ``anthropic-no-prefill``."""
