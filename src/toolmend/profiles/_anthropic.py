"""Anthropic Messages API (and LiteLLM's conversion to it)."""

from __future__ import annotations

from dataclasses import replace

from ._base import ISSUE_20, LITELLM_FACTORY, Check, Profile, checks, shape_checks

# --- Anthropic Messages API -----------------------------------------------------------------------

_AN_DOC = "https://platform.claude.com/docs/en/agents-and-tools/tool-use/handle-tool-calls"
_AN_UNEXPECTED = Check(
    "anthropic.tool_result_unexpected",
    "messages.{index}.content.{slot}: unexpected `tool_use_id` found in `tool_result` blocks: "
    "{id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous "
    "message.",
    "https://github.com/continuedev/continue/issues/4751 ; "
    "https://github.com/anthropics/claude-code/issues/10834",
)
_AN_MISSING = Check(
    "anthropic.tool_use_without_result",
    "messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately "
    "after: {ids}. Each `tool_use` block must have a corresponding `tool_result` block in the "
    "next message.",
    _AN_DOC + " ; https://github.com/anthropics/claude-code/issues/5989",
    status="documented",
)
_AN_CHECKS = {
    "system_role": Check(
        "anthropic.role_invalid",
        'messages: Unexpected role "system". The Messages API accepts a top-level `system` '
        'parameter, not "system" as an input message role.',
        "https://github.com/Maol-1997/cursor-claude-connector/issues/3",
    ),
    "invalid_role": Check(
        "anthropic.role_invalid",
        "messages.{index}.role: Input should be 'user' or 'assistant'",
        "https://docs.anthropic.com/en/api/messages (pydantic wording quoted in code comments)",
        status="documented",
    ),
    "empty_content": Check(
        "anthropic.content_empty",
        "messages.{index}: all messages must have non-empty content except for the optional "
        "final assistant message",
        "https://github.com/microsoft/autogen/issues/6083",
    ),
    "text_empty": Check(
        "anthropic.text_empty",
        "messages: text content blocks must be non-empty",
        "https://github.com/anthropics/claude-code/issues/59812",
    ),
    "text_whitespace": Check(
        "anthropic.text_whitespace",
        "messages: text content blocks must contain non-whitespace text",
        "https://github.com/anthropics/claude-code/issues/23440",
    ),
    "trailing_whitespace": Check(
        "anthropic.final_assistant_trailing_whitespace",
        "messages: final assistant content cannot end with trailing whitespace",
        "https://github.com/tailcallhq/forgecode/issues/1872",
    ),
    "call_id_format": Check(
        "anthropic.tool_use_id_pattern",
        "messages.{index}.content.{slot}.tool_use.id: String should match pattern "
        "'^[a-zA-Z0-9_-]+$'",
        "https://github.com/CommandCodeAI/command-code/issues/323",
    ),
    "call_without_id": Check(
        "anthropic.tool_use_id_pattern",
        "messages.{index}.content.{slot}.tool_use.id: Field required",
        "the API reference (the id is required; this wording is inferred)",
        status="inferred",
    ),
    "result_id_format": Check(
        "anthropic.tool_result_id_pattern",
        "messages.{index}.content.{slot}.tool_result.tool_use_id: String should match pattern "
        "'^[a-zA-Z0-9_-]+$'",
        "https://github.com/HKUDS/nanobot/pull/4356",
    ),
    "result_without_id": Check(
        "anthropic.tool_result_id_pattern",
        "messages.{index}.content.{slot}.tool_result.tool_use_id: Field required",
        "the API reference (the id is required; this wording is inferred)",
        status="inferred",
    ),
    "call_name_empty": Check(
        "anthropic.tool_use_name_length",
        "messages.{index}.content.{slot}.tool_use.name: String should have at least 1 character",
        "https://github.com/sipeed/picoclaw/issues/1658",
    ),
    "function_name_format": Check(
        "anthropic.tool_use_name_length",
        "messages.{index}.content.{slot}.tool_use.name: String should have at most 200 characters",
        "https://github.com/anthropics/claude-code/issues/2673",
    ),
    "input_not_object": Check(
        "anthropic.tool_use_input_not_dict",
        "messages.{index}.content.{slot}.tool_use.input: Input should be a valid dictionary",
        "https://github.com/anthropics/anthropic-sdk-typescript/issues/648",
    ),
    "duplicate_call_id": Check(
        "anthropic.tool_use_id_duplicate",
        "messages.{index}.content.{slot}: `tool_use` ids must be unique",
        "https://github.com/trycua/cua/issues/524",
    ),
    "missing_result": _AN_MISSING,
    "orphan_result": _AN_UNEXPECTED,
    "unknown_result_id": _AN_UNEXPECTED,
    "duplicate_result": Check(
        "anthropic.tool_result_duplicate",
        "messages.{index}.content.{slot}: each tool_use must have a single result. Found "
        "multiple `tool_result` blocks with id: {id}",
        "https://github.com/sipeed/picoclaw/pull/1793 ; "
        "https://github.com/QwenLM/qwen-code/pull/8163",
    ),
    "thinking_fields": Check(
        "anthropic.thinking_block_fields",
        "messages.{index}.content.{slot}.{property}: Field required",
        "https://github.com/langchain-ai/langchain/pull/29971",
    ),
}
_AN_STRICT = {
    "first_message_not_user": Check(
        "anthropic.first_message_not_user",
        'messages: first message must use the "user" role',
        "https://github.com/lobehub/lobehub/issues/1601 (retired around late 2024)",
    ),
    "roles_not_alternating": Check(
        "anthropic.roles_not_alternating",
        'messages: roles must alternate between "user" and "assistant", but found multiple '
        '"{role}" roles in a row',
        "https://github.com/FlowiseAI/Flowise/issues/2006 (retired: turns are merged now)",
    ),
    "prefill_unsupported": Check(
        "anthropic.prefill_unsupported",
        "This model does not support assistant message prefill. The conversation must end with "
        "a user message.",
        'https://platform.claude.com/docs/en/about-claude/models/migration-guide ("Prefilling '
        'assistant messages returns a 400 error on Claude 4.6 models": model-dependent, see '
        "NO_PREFILL_MODELS) ; https://github.com/strands-agents/sdk-python/issues/1694 ; "
        "https://github.com/agno-agi/agno/issues/7015",
    ),
    "thinking_final_assistant_disabled": Check(
        "anthropic.thinking_final_assistant_disabled",
        "messages.{index}.content.{slot}: When thinking is disabled, an `assistant` message in "
        "the final position cannot contain `thinking`. To use thinking blocks, enable "
        "`thinking` in your request.",
        "https://github.com/tailcallhq/forgecode/issues/1853 (enforced under the ``anthropic`` "
        "profile, the request with thinking off)",
    ),
    "tools_undefined": Check(
        "anthropic.tools_undefined",
        "Requests which include tool_use or tool_result blocks must define tools.",
        "https://github.com/anthropics/anthropic-sdk-python/issues/494 (2024; not checkable "
        "from messages)",
    ),
}
_AN_THINKING_REQUIRED = Check(
    "anthropic.thinking_required",
    "messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
    "`{property}`. When `thinking` is enabled, a final `assistant` message must start with a "
    "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We "
    "recommend you include thinking blocks from previous turns. To avoid this requirement, "
    "disable `thinking`. Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking",
    "https://platform.claude.com/docs/build-with-claude/thinking-tool-workflows ; "
    "https://github.com/Kilo-Org/kilocode/issues/5219",
    status="documented",
)

_AN_OPENAI_SHAPED = {
    # OpenAI-shaped histories only: LiteLLM's converter drops a call without ``type`` (its
    # result then answers nothing) and fails on object arguments
    **shape_checks(
        Check(
            "anthropic.openai_tool_call_shape",
            "messages.{index}.content.{slot}: unexpected `tool_use_id` found in `tool_result` "
            "blocks. Each `tool_result` block must have a corresponding `tool_use` block in the "
            "previous message.",
            LITELLM_FACTORY + " (convert_to_anthropic_tool_invoke keeps type 'function' "
            "calls only); " + ISSUE_20,
        ),
        Check(
            "anthropic.openai_arguments_not_string",
            "'dict' object has no attribute 'strip'",
            LITELLM_FACTORY + " (convert_to_anthropic_tool_invoke); " + ISSUE_20,
        ),
    ),
    "empty_history": Check(
        "anthropic.messages_empty",
        "messages: at least one message is required",
        "https://docs.anthropic.com/en/api/messages (messages: minItems 1); a history of "
        "system messages only is sent as `system` and no message (LiteLLM); " + ISSUE_20,
        status="documented",
    ),
}

_AN_THINKING_OFF = {
    # the ``anthropic`` profile is the request with thinking off (``anthropic-thinking`` has
    # it on), so the request's setting is known from the profile
    "thinking_final_assistant_disabled": _AN_STRICT["thinking_final_assistant_disabled"],
}

ANTHROPIC = Profile(
    name="anthropic",
    aliases=("claude", "anthropic-messages"),
    checks=checks(**_AN_CHECKS, **_AN_OPENAI_SHAPED, **_AN_THINKING_OFF),
    system_apart=True,
    block_pairing="turns",
    call_id_pattern=r"[a-zA-Z0-9_-]+",
    function_name_pattern=r"(?s:.{1,200})",
    call_id_scope="request",
    strict_checks=checks(
        **{k: v for k, v in _AN_STRICT.items() if k not in _AN_THINKING_OFF},
        thinking_required=_AN_THINKING_REQUIRED,
    ),
)
"""Anthropic Messages API.

Native ``messages`` (Messages API dicts and the anthropic SDK's block objects) are judged on
merged turns, as the API merges consecutive same-role messages: every ``tool_use`` of an
assistant turn needs its ``tool_result`` in the leading run of the next turn, with nothing
after the ``tool_use`` blocks and nothing before the results. A request ending on an assistant
turn with calls gets placeholder results (issue 32, case 7); one ending on assistant text is a
prefill and is left alone (``prefill_unsupported`` is model-dependent and
recorded in ``strict_checks``; the models without prefill meet :data:`ANTHROPIC_NO_PREFILL`).
Thinking blocks are never rewritten; an incomplete one (without
``signature``, say) is dropped, since the API refuses it whole.

An OpenAI-shaped history checked against this profile (what LiteLLM and gateways convert) uses
OpenAI's adjacency pairing (``pairing="adjacent"``) with the Anthropic error texts; ids reused
across turns are rewritten, since Anthropic wants them unique in the whole request.
"""

NO_PREFILL_MODELS: tuple[str, ...] = ("claude-opus-4-6", "claude-opus-4-7", "claude-sonnet-4-6")
"""Model-name prefixes of the Claude models that refuse any final assistant message (no
prefill): Anthropic's migration guide ("Prefilling assistant messages returns a 400 error on
Claude 4.6 models", naming Opus 4.6/4.7 and Sonnet 4.6) and the public reports quoted with
``prefill_unsupported`` (strands-agents/sdk-python#1694 on Bedrock's
``us.anthropic.claude-opus-4-6-v1``, agno-agi/agno#7015, langchain-ai/deepagents#1585).
:func:`toolmend._routing.request_profile` picks :data:`ANTHROPIC_NO_PREFILL` for them, and
:data:`ANTHROPIC_THINKING_NO_PREFILL` when thinking is on."""

ANTHROPIC_NO_PREFILL = replace(
    ANTHROPIC,
    name="anthropic-no-prefill",
    aliases=(),
    checks=checks(
        **_AN_CHECKS,
        **_AN_OPENAI_SHAPED,
        **_AN_THINKING_OFF,
        prefill_unsupported=_AN_STRICT["prefill_unsupported"],
    ),
    strict_checks=checks(
        **{
            k: v
            for k, v in _AN_STRICT.items()
            if k not in _AN_THINKING_OFF and k != "prefill_unsupported"
        },
        thinking_required=_AN_THINKING_REQUIRED,
    ),
)
"""Anthropic for the models without prefill (:data:`NO_PREFILL_MODELS`): the request must end
with a user message. A final assistant message with calls gets its placeholder results, as
everywhere; a final assistant *text* message is kept and the fixed user bridge ``"Continue."``
is sent after it (``inserted_message``): its content is real and stays where the model wrote it
(dropping it would lose it, sending it as user text would put the model's words in the user's
mouth), and the bridge claims nothing. An empty final assistant message, which carries
nothing, is dropped instead (once not last it would break the non-empty rule)."""

ANTHROPIC_THINKING = replace(
    ANTHROPIC,
    name="anthropic-thinking",
    aliases=("claude-thinking",),
    checks=checks(**_AN_CHECKS, **_AN_OPENAI_SHAPED, thinking_required=_AN_THINKING_REQUIRED),
    thinking=True,
    strict_checks=checks(**_AN_STRICT),
)
"""Anthropic with extended thinking on: the assistant turn before the final user turn that
carries tool results must start with a thinking block. toolmend cannot invent one (it needs the
signature the API gave), so the repair writes that last tool exchange out as text instead,
which the API accepts; every call and result stays readable."""

ANTHROPIC_THINKING_NO_PREFILL = replace(
    ANTHROPIC_THINKING,
    name="anthropic-thinking-no-prefill",
    aliases=(),
    checks=checks(
        **ANTHROPIC_THINKING.checks, prefill_unsupported=_AN_STRICT["prefill_unsupported"]
    ),
    strict_checks=checks(
        **{k: v for k, v in _AN_STRICT.items() if k != "prefill_unsupported"},
    ),
)
"""Anthropic with extended thinking on, for the models without prefill
(:data:`NO_PREFILL_MODELS`): the rules of :data:`ANTHROPIC_THINKING` and of
:data:`ANTHROPIC_NO_PREFILL` together. Thinking on does not give those models their prefill
back, so a request ending on assistant text is refused the same way, and repaired the same way
(the text stays, the fixed user bridge ``"Continue."`` follows it); the last tool exchange
without its thinking block is written out as text, as under ``anthropic-thinking``."""
