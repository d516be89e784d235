"""Self-hosted models behind an OpenAI-compatible server: the rules of their chat templates."""

from __future__ import annotations

from ._base import Check, Profile, checks, shape_checks

# --- Open-model servers: HF chat templates --------------------------------------------------------

_HF_JUDGE = "rendered by the judge in tests/support/judges.py, as transformers renders it"
_HF_CONTENT_NULL = Check(
    "HF-CONTENT-NOT-STRING",
    'can only concatenate str (not "NoneType") to str',
    "Mistral, Llama 3.1 and gpt-oss chat templates (tests/data/chat_templates), " + _HF_JUDGE,
)
_HF_EMPTY = Check(
    "HF-EMPTY-CONVERSATION",
    "list object has no element 0",
    "templates that read messages[0] (tests/data/chat_templates), " + _HF_JUDGE,
)
_HF_SHAPE = shape_checks(
    Check(
        "HF-TOOL-CALL-SHAPE",
        "'dict object' has no attribute 'function'",
        "Llama 3.1 / 3.2 chat templates (tests/data/chat_templates), " + _HF_JUDGE + "; vLLM "
        "takes only tool_calls of type 'function'",
    )
)
_HF_ORPHAN = Check(
    "HF-TOOL-ORPHAN",
    "Message has tool role, but there was no previous assistant message with a tool call!",
    "gpt-oss chat template (tests/data/chat_templates), " + _HF_JUDGE,
)
_HF_ALL_KINDS = frozenset({"user", "system", "tool", "assistant"})

HF_TEMPLATE = Profile(
    name="hf-template",
    aliases=("vllm", "tgi", "llama.cpp"),
    pairing="adjacent",
    alternation="tool-aware",
    checks=checks(
        roles_not_alternating=Check(
            "HF-ALTERNATION-TOOL-AWARE",
            "After the optional system message, conversation roles must alternate "
            "user/assistant/user/assistant/...",
            "Mistral-7B-Instruct-v0.3 chat template; https://github.com/microsoft/autogen/issues/1037",
            status="documented",
        ),
        # templates read a result's call from the message before it (gpt-oss names the
        # function of the latest call), so results sit right after their call, by id
        orphan_result=_HF_ORPHAN,
        unknown_result_id=_HF_ORPHAN,
        result_without_id=Check(
            "HF-TOOL-NO-ID",
            "Tool call IDs should be alphanumeric strings with length >= 9! (2)",
            "vLLM's Mistral tool template (tests/data/chat_templates), " + _HF_JUDGE,
        ),
        empty_history=_HF_EMPTY,
        content_null=_HF_CONTENT_NULL,
        null_content=_HF_CONTENT_NULL,
        **_HF_SHAPE,
    ),
    # every kind: gpt-oss's template also tests ``"..." in message.content`` beside calls
    content_string_kinds=_HF_ALL_KINDS,
    # Llama 3.1 / 3.2 put the tools into the first user message and raise without one
    system_apart=True,
)
"""Open-model servers (vLLM, TGI, llama.cpp) rendering a Hugging Face chat template with a tool
role: tool traffic stays, user and assistant text alternate around it, results follow their
call, every ``content`` is a string (templates concatenate it). Templates that need Mistral's
9-character call ids are served by the ``mistral`` profile."""

_HF_CONTENT_TYPE = Check(
    "HF-CONTENT-TYPE",
    "Invalid content type",
    "Gemma 3 chat template (tests/data/chat_templates), " + _HF_JUDGE,
)

HF_TEMPLATE_STRICT = Profile(
    name="hf-template-strict",
    aliases=("gemma",),
    pairing="none",
    alternation="strict",
    checks=checks(
        roles_not_alternating=Check(
            "HF-ALTERNATION-STRICT",
            "Conversation roles must alternate user/assistant/user/assistant/...",
            "https://github.com/huggingface/text-generation-inference/issues/3198",
        ),
        system_unsupported=Check(
            "HF-SYSTEM-UNSUPPORTED",
            "System role not supported",
            "Gemma 2 chat template (tests/data/chat_templates); Gemma 3's template folds the "
            "system message into the first user turn itself, as the repair does",
        ),
        empty_history=_HF_EMPTY,
        content_null=_HF_CONTENT_TYPE,
        null_content=_HF_CONTENT_TYPE,
    ),
    # every kind: a message with calls that stays one (no result to write out with it) is
    # rendered as plain assistant text, and Gemma 3 refuses a null content
    content_string_kinds=_HF_ALL_KINDS,
)
"""Chat templates with no tool role and strict alternation (Gemma 2 and 3): tool traffic is
written out as text, same-role neighbours merge, and a system message is folded into the
first user turn."""


def template_profile(model: str | None) -> str | None:
    """The profile a self-hosted model's chat template needs, picked by the model's name, or
    ``None`` when toolmend knows no rules for that model family (the server's own profile then
    applies)."""
    del model
    return None
