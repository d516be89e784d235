"""Gemini generateContent (and LiteLLM's conversion to it)."""

from __future__ import annotations

from dataclasses import replace

from ._base import ISSUE_20, LITELLM_FACTORY, Check, Profile, checks, shape_checks

# --- Gemini generateContent -----------------------------------------------------------------------

_GM_COUNT = Check(
    "gemini.function_response_count",
    "Please ensure that the number of function response parts is equal to the number of "
    "function call parts of the function call turn.",
    "https://github.com/google-gemini/gemini-cli/issues/4217 ; "
    "https://github.com/microsoft/vscode/issues/299295",
)
_GM_INVALID_ARGUMENT = "Request contains an invalid argument."
_GM_CHECKS = {
    "empty_history": Check(
        "gemini.contents_empty",
        "* GenerateContentRequest.contents: contents is not specified\n",
        "https://github.com/vercel/ai/issues/3775",
    ),
    "invalid_role": Check(
        "gemini.role_invalid",
        "Please use a valid role: user, model.",
        "https://ai.google.dev/api/caching#Content ; "
        "https://github.com/the-open-agent/openagent/issues/1666",
        status="documented",
    ),
    "parts_empty": Check(
        "gemini.parts_empty",
        "* GenerateContentRequest.contents[{index}].parts: contents.parts must not be empty.\n",
        "https://github.com/langchain-ai/langchain-google/issues/691 (Gemini API wording)",
    ),
    "part_no_data": Check(
        "gemini.part_no_data",
        "* GenerateContentRequest.contents[{index}].parts[{slot}].data: required oneof field "
        "'data' must have one initialized field\n",
        "https://github.com/router-for-me/CLIProxyAPI/issues/1292",
    ),
    "text_empty": Check(
        "gemini.text_empty",
        "Unable to submit request because it has an empty text parameter. Add a value to the "
        "parameter and try again. Learn more: "
        "https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/gemini",
        "https://github.com/google-gemini/deprecated-generative-ai-js/issues/361 (enforcement "
        "has changed back and forth)",
    ),
    "result_name_empty": Check(
        "gemini.function_response_name_empty",
        "* GenerateContentRequest.contents[{index}].parts[{slot}].function_response.name: "
        "Name cannot be empty.\n",
        "https://github.com/openclaw/openclaw/issues/47857",
    ),
    "response_is_list": Check(
        "gemini.function_response_not_object",
        'Invalid JSON payload received. Unknown name "response" at '
        "'contents[{index}].parts[{slot}].function_response': Proto field is not repeating, "
        "cannot start list.",
        "https://github.com/vercel/ai/pull/3589",
    ),
    "mixed_call_and_response": Check(
        "gemini.mixed_call_and_response",
        "Please ensure that function call turn contains at least one function_call part which "
        "can not be mixed with function_response parts.",
        "https://github.com/googleapis/python-genai/issues/81",
    ),
    "call_turn_position": Check(
        "gemini.function_call_turn_position",
        "Please ensure that function call turn comes immediately after a user turn or after a "
        "function response turn.",
        "https://github.com/google-gemini/gemini-cli/issues/11814",
    ),
    "orphan_result": Check(
        "gemini.function_response_turn_position",
        "Please ensure that function response turn comes immediately after a function call turn.",
        "https://github.com/langchain-ai/langchain/issues/27799",
    ),
    "missing_result": _GM_COUNT,
    "unknown_result_id": _GM_COUNT,
    # an OpenAI-shaped history: two tool messages for one call become two responses
    "duplicate_result": _GM_COUNT,
    "response_extra_parts": Check(
        "gemini.function_response_count",
        _GM_COUNT.error,
        "https://github.com/google-gemini/gemini-cli/pull/16137 (a sibling inlineData part in "
        "a parallel function-response turn gives the 400) ; toolmend issue 3",
        status="inferred",
    ),
    "misplaced_part": Check(
        "gemini.function_response_role",
        _GM_INVALID_ARGUMENT,
        "https://github.com/maximhq/bifrost/pull/2222 (the 400 is observed; the text is the "
        "generic INVALID_ARGUMENT wording)",
        status="inferred",
    ),
    "result_name_mismatch": Check(
        "gemini.function_response_name_mismatch",
        _GM_INVALID_ARGUMENT,
        "https://github.com/archestra-ai/archestra/pull/7583 (bisected live on Vertex); seed "
        "003 (AstrBot: functionResponse.name taken from an opaque tool_call_id)",
        status="inferred",
    ),
}
_GM_UNKNOWN_FIELD = Check(
    "gemini.unknown_field",
    'Invalid JSON payload received. Unknown name "id" at \'contents[{index}].parts[{slot}].'
    "{property}': Cannot find field.",
    "https://github.com/JetBrains/koog/issues/735 ; https://github.com/looplj/axonhub/issues/874",
)
_GM_STRICT = {
    "call_name_empty": Check(
        "gemini.function_call_name_empty",
        "* GenerateContentRequest.contents[{index}].parts[{slot}].function_call.name: Name "
        "cannot be empty.\n",
        "inferred from the function_response twin",
        status="inferred",
    ),
    "args_not_object": Check(
        "gemini.function_call_args_not_object",
        "Invalid value at 'contents[{index}].parts[{slot}].function_call.args' "
        "(type.googleapis.com/google.protobuf.Struct), {property}",
        "inferred from the function_response twin",
        status="inferred",
    ),
    "response_not_object": Check(
        "gemini.function_response_not_object",
        "Invalid value at 'contents[{index}].parts[{slot}].function_response.response' "
        "(type.googleapis.com/google.protobuf.Struct), {property}",
        "https://github.com/randombet/bodhi_realtime_agent/issues/10 (Live API; the REST "
        "wording is inferred)",
        status="inferred",
    ),
    "unknown_field": _GM_UNKNOWN_FIELD,
}
_GM_SIGNATURE = Check(
    "gemini.thought_signature_missing",
    "Function call is missing a thought_signature in functionCall parts. This is required for "
    "tools to work correctly, and missing thought_signature may lead to degraded model "
    "performance. Additional data, function call `default_api:{name}` , position {position}. "
    "Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",
    "https://ai.google.dev/gemini-api/docs/thought-signatures ; "
    "https://github.com/chatboxai/chatbox/issues/3308",
    status="documented",
)

_GM_OPENAI_SHAPED = {
    **shape_checks(
        Check(
            "gemini.openai_tool_call_shape",
            "Missing corresponding tool call for tool response message.",
            LITELLM_FACTORY
            + " (a call without its 'function' wrapper is not converted); "
            + ISSUE_20,
        ),
        Check(
            "gemini.openai_arguments_not_string",
            "Unable to convert openai tool calls to gemini tool calls. Received error=the JSON "
            "object must be str, bytes or bytearray, not dict",
            LITELLM_FACTORY + " (convert_to_gemini_tool_call_invoke); " + ISSUE_20,
        ),
    ),
    # LiteLLM writes an empty or null user text as an empty text part and drops it beside
    # calls only when null: the text_empty error
    "content_null": _GM_CHECKS["text_empty"],
    "content_empty": _GM_CHECKS["text_empty"],
    "empty_assistant": _GM_CHECKS["text_empty"],
}

GEMINI = Profile(
    name="gemini",
    aliases=("vertex", "vertex_ai", "vertex-ai", "google", "google-genai", "gemini-2"),
    checks=checks(**_GM_CHECKS, **_GM_OPENAI_SHAPED),
    block_pairing="contents",
    results_need_name=True,
    call_after_user=True,
    content_text_kinds=frozenset({"user", "assistant"}),
    strict_checks=checks(**_GM_STRICT, thought_signature_missing=_GM_SIGNATURE),
)
"""Gemini ``generateContent`` (Gemini API and Vertex AI; texts in the Gemini API wording).

Native ``contents`` (REST dicts in camelCase or snake_case, google-genai ``types.Content``
objects, and the other shapes ``generate_content`` accepts) are judged Content by Content, with
no merging: a function-call turn right after a user turn, the next Content holding exactly one
``functionResponse`` per call and nothing else, each named after the call it answers (paired
through the ids when every part has one, else by name, an opaque id stored as the name, or
position). Repairs gather the responses right after their call turn, move other parts into a
user Content of their own, fill names from the calls and write a response's id back onto its
call where the call lost it. A trailing function-call turn is left alone.

An OpenAI-shaped history checked against this profile (what LiteLLM and gateways convert) uses
OpenAI's adjacency pairing and, because ``results_need_name`` is set, needs every tool message
to carry the called function's ``name``: a missing name, or one that is really the opaque call
id (seed 003), is replaced by the call's function name.

Gemini 3 thought signatures are model-dependent: use the ``gemini-3`` profile. Endpoints that
reject ``functionCall.id``: use ``gemini-no-ids``.
"""

GEMINI_3 = replace(
    GEMINI,
    name="gemini-3",
    aliases=("gemini3", "vertex-gemini-3"),
    checks=checks(**_GM_CHECKS, **_GM_OPENAI_SHAPED, thought_signature_missing=_GM_SIGNATURE),
    thought_signatures=True,
    strict_checks=checks(**_GM_STRICT),
)
"""Gemini 3 models (``gemini-3*``, ``gemini-3.x``, ``gemini-*-latest``; not
``gemini-3-pro-image*``): as ``gemini``, plus the thought-signature rule. Since the last user
prompt, the first function call of every model Content must carry ``thoughtSignature``; a
history that came from another model or provider has none, so the repair writes the documented
placeholder ``skip_thought_signature_validator`` there (and only there). The model is learned
from the profile name: pick ``gemini-3`` for those models."""

GEMINI_NO_IDS = replace(
    GEMINI,
    name="gemini-no-ids",
    aliases=("gemini-legacy",),
    checks=checks(**_GM_CHECKS, **_GM_OPENAI_SHAPED, unknown_field=_GM_UNKNOWN_FIELD),
    reject_function_ids=True,
    strict_checks=checks(**{k: v for k, v in _GM_STRICT.items() if k != "unknown_field"}),
)
"""Gemini endpoints that do not know ``functionCall.id`` / ``functionResponse.id`` (Google AI
before v1beta defined it, Vertex before 2026-09): as ``gemini``, and every id is removed from
calls and responses alike (pairing then rests on names and positions)."""

GEMINI_LITELLM = replace(
    GEMINI,
    name="gemini-litellm",
    aliases=("litellm-gemini",),
    block_pairing=None,
    results_need_name=False,
)
"""An OpenAI-shaped history that LiteLLM's converter carries to Gemini (``gemini/...`` and
``vertex_ai/...`` deployments; the profile toolmend's LiteLLM callback picks for them): as
``gemini``, except that a tool message need not carry the called function's ``name``.

LiteLLM's converter derives each ``functionResponse.name`` from the call its ``tool_call_id``
points to in the last assistant message with calls, and takes the message's own ``name`` only
when it finds no such call (``convert_to_gemini_tool_call_result`` in
``litellm/litellm_core_utils/prompt_templates/factory.py``, LiteLLM 1.110.2), which the pairing
rules already rule out; filling ``name`` on every tool message would change a history that path
already accepts (issue 32). Gemini's own OpenAI-compatible endpoint does want the ``name``
(``Request contains an invalid argument`` without it: NousResearch/hermes-agent#19728,
pydantic/pydantic-ai#1879), and so do native ``contents``: they keep ``gemini``. Native
``contents`` are not judged by this profile (``block_pairing`` is None)."""
