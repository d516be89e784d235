"""Mistral La Plateforme (and mistral-common, its validator)."""

from __future__ import annotations

from types import MappingProxyType

from ._base import ISSUE_20, Check, Profile, checks

# --- Mistral La Plateforme ------------------------------------------------------------------------

_MISTRAL_VALIDATOR = (
    "mistral_common src/mistral_common/protocol/instruct/validator.py (MistralRequestValidatorV13)"
)
_MISTRAL_UNEXPECTED = Check(
    "MI-UNEXPECTED-TOOL-ID",
    "Unexpected tool call id {id} in tool results",
    "https://github.com/pydantic/pydantic-ai/issues/3733",
)
_MISTRAL_ID_MISSING = Check(
    "MI-TOOL-ID-MISSING",
    "Tool call id has to be defined.",
    "https://github.com/Gage-Technologies/mistral-go/issues/8",
)
_MISTRAL_EMPTY_ASSISTANT = Check(
    "MI-EMPTY-ASSISTANT",
    "Assistant message must have either content or tool_calls, but not none.",
    "https://github.com/OpenHands/OpenHands/issues/8685",
)

MISTRAL = Profile(
    name="mistral",
    aliases=("mistral-ai", "codestral"),
    pairing="latest",
    checks=checks(
        role_order=Check(
            "MI-ROLE-ORDER",
            "Unexpected role '{role}' after role '{prev}'",
            "https://github.com/zed-industries/zed/issues/37021 ; " + _MISTRAL_VALIDATOR,
        ),
        call_id_format=Check(
            "MI-TOOL-CALL-ID-FORMAT",
            "Tool call id was {id} but must be a-z, A-Z, 0-9, with a length of 9.",
            "https://github.com/karthink/gptel/issues/1203",
        ),
        call_without_id=_MISTRAL_ID_MISSING,
        result_without_id=_MISTRAL_ID_MISSING,
        missing_result=Check(
            "MI-CALL-COUNT",
            "Not the same number of function calls and responses",
            "https://github.com/mistralai/client-ts/issues/106",
        ),
        unknown_result_id=_MISTRAL_UNEXPECTED,
        orphan_result=_MISTRAL_UNEXPECTED,
        duplicate_result=Check(
            "MI-DUPLICATE-TOOL-ID",
            "Duplicate tool call id {id} in tool results",
            _MISTRAL_VALIDATOR,
            status="documented",
        ),
        duplicate_call_id=Check(
            "MI-DUPLICATE-TOOL-ID",
            "Duplicate tool call id {id} in assistant message",
            _MISTRAL_VALIDATOR,
            status="documented",
        ),
        last_role=Check(
            "MI-LAST-ROLE",
            "Expected last role User or Tool (or Assistant with prefix True) for serving but "
            "got {role}",
            "https://github.com/0xPlaygrounds/rig/issues/708",
        ),
        empty_assistant=_MISTRAL_EMPTY_ASSISTANT,
        null_content=_MISTRAL_EMPTY_ASSISTANT,
        function_name_format=Check(
            "MI-FUNCTION-NAME",
            "Function name was {name} but must be a-z, A-Z, 0-9, or contain underscores and "
            "dashes, with a maximum length of 64.",
            _MISTRAL_VALIDATOR,
            status="documented",
        ),
        first_not_user=Check(
            "MI-FIRST-NOT-USER",
            "Conversation must start with a user message or system message",
            _MISTRAL_VALIDATOR + " (a one-message conversation; a call at message 0 is never "
            "paired: 'Unexpected tool call id ... in tool results'); Mistral's chat templates "
            "(tests/data/chat_templates) want user first after the system message; " + ISSUE_20,
        ),
        empty_history=Check(
            "MI-EMPTY-CONVERSATION",
            "Conversation must have at least one message",
            _MISTRAL_VALIDATOR + "; " + ISSUE_20,
        ),
        content_null=Check(
            "MI-CONTENT-NOT-STRING",
            "messages.{index}.{role}.content.str: Input should be a valid string",
            "mistral_common protocol/instruct/messages.py (pydantic); " + ISSUE_20,
        ),
        # mistral-common takes object arguments (it serializes them) and a call without
        # ``type`` (a default); not a call without its ``function`` wrapper, which is put in
        # the canonical shape with the rest of the call
        call_shape=Check(
            "MI-TOOL-CALL-SHAPE",
            "messages.{index}.assistant.tool_calls.{slot}.function: Field required",
            "mistral_common protocol/instruct/tool_calls.py (pydantic); " + ISSUE_20,
        ),
        # ``tool_calls: []`` passes mistral-common, but Mistral's chat templates count the
        # message as a call turn and no longer see user and assistant alternate
        empty_tool_calls=Check(
            "MI-EMPTY-TOOL-CALLS",
            "After the optional system message, conversation roles must alternate "
            "user/assistant/user/assistant/...",
            "Mistral's chat templates (tests/data/chat_templates), rendered by the judge in "
            "tests/support/judges.py; " + ISSUE_20,
        ),
    ),
    content_string_kinds=frozenset({"user", "system", "tool"}),
    first_user=True,
    call_id_pattern=r"[a-zA-Z0-9]{9}",
    call_id_length=9,
    function_name_pattern=r"[a-zA-Z0-9_-]{1,64}",
    # Consecutive user (or assistant) messages stay: mistral-common accepts them and Mistral's
    # API merges them. Mistral's chat templates (vLLM, Nemo) want strict alternation instead;
    # that is the template's rule, not the API's, and the judges leave such histories out
    role_successors=MappingProxyType(
        {
            "system": frozenset({"user", "assistant", "system"}),
            "user": frozenset({"assistant", "system", "user"}),
            "assistant": frozenset({"assistant", "user", "tool"}),
            "tool": frozenset({"assistant", "tool"}),
        }
    ),
    last_kinds=frozenset({"user", "tool"}),
    strict_checks=checks(
        content_and_tool_calls=Check(
            "MI-CONTENT-AND-TOOL-CALLS",
            "Assistant message must have either content or tool_calls, but not both.",
            "https://github.com/langchain-ai/langchain/issues/21196 (older tokenizers only)",
        ),
    ),
)
