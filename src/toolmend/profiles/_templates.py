"""Self-hosted models behind an OpenAI-compatible server: the rules of their chat templates.

A server (vLLM, TGI, llama.cpp, ...) renders the history with the model's own chat template,
so the rules a request meets are the template's: :data:`TEMPLATE_FAMILIES` maps a model name
to the profile its family's templates need, and :func:`template_profile` reads it. Every rule
quotes the template's own ``raise_exception`` text and names the template file (kept as test
data in ``tests/data/chat_templates``, rendered by the judge in ``tests/support/judges.py``).
"""

from __future__ import annotations

import re
from dataclasses import replace
from types import MappingProxyType

from ._base import Check, Profile, checks, shape_checks
from ._mistral import MISTRAL

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
call, every ``content`` is a string (templates concatenate it). The profile of a server whose
model :func:`template_profile` does not know, and of the families whose templates take all it
produces (Qwen, DeepSeek, Granite, Phi, Hermes, gpt-oss, ...)."""

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
            "Gemma 2 chat template (tests/data/chat_templates); Gemma 3's template takes a "
            "leading system message (the hf-gemma-3 profile)",
        ),
        empty_history=_HF_EMPTY,
        content_null=_HF_CONTENT_TYPE,
        null_content=_HF_CONTENT_TYPE,
    ),
    # every kind: a message with calls that stays one (no result to write out with it) is
    # rendered as plain assistant text, and Gemma 3 refuses a null content
    content_string_kinds=_HF_ALL_KINDS,
)
"""Chat templates with no tool role, no system role and strict alternation (Gemma 1 and 2):
tool traffic is written out as text, same-role neighbours merge, and a system message is
folded into the first user turn."""


_TEMPLATES = "tests/data/chat_templates/"
"""Where the templates behind these rules are kept (sources and licenses in SOURCES.txt)."""

HF_GEMMA_3 = replace(
    HF_TEMPLATE_STRICT,
    name="hf-gemma-3",
    aliases=("gemma-3",),
    # results are paired so that a call nobody answered is seen: vLLM's pythonic template
    # counts a message with calls out of its alternation, and Google's drops the calls
    pairing="adjacent",
    checks=checks(
        missing_result=Check(
            "HF-GEMMA-UNANSWERED-CALL",
            "Conversation roles must alternate user/assistant/user/assistant/...",
            _TEMPLATES + "vllm__tool_chat_template_gemma3_pythonic.jinja (a message with calls "
            "is left out of the alternation count); " + _HF_JUDGE,
        ),
        roles_not_alternating=Check(
            "HF-ALTERNATION-STRICT",
            "Conversation roles must alternate user/assistant/user/assistant/...",
            _TEMPLATES
            + "hf__google-gemma-3-it.jinja, "
            + _TEMPLATES
            + "vllm__tool_chat_template_gemma3_pythonic.jinja; "
            + _HF_JUDGE,
        ),
        empty_history=_HF_EMPTY,
        content_null=_HF_CONTENT_TYPE,
        null_content=_HF_CONTENT_TYPE,
        # vLLM's pythonic template leaves every message with a ``tool_calls`` key out of its
        # alternation count, an empty list too: the empty list goes
        empty_tool_calls=Check(
            "HF-GEMMA-EMPTY-TOOL-CALLS",
            "Conversation roles must alternate user/assistant/user/assistant/...",
            _TEMPLATES + "vllm__tool_chat_template_gemma3_pythonic.jinja; " + _HF_JUDGE,
        ),
    ),
)
"""Gemma 3: Google's template has no tool role and wants strict alternation, as Gemma 2's, but
takes a leading system message (it folds it into the first user turn itself), so that stays
where it is; a system message further on becomes user text. vLLM's pythonic Gemma 3 template
takes a tool role, and renders the text the repair writes too."""

_LLAMA_SINGLE_CALL = Check(
    "HF-SINGLE-TOOL-CALL",
    "This model only supports single tool-calls at once!",
    _TEMPLATES
    + "llamacpp__meta-llama-Llama-3.1-8B-Instruct.jinja, "
    + _TEMPLATES
    + "llamacpp__meta-llama-Llama-3.2-3B-Instruct.jinja, "
    + _TEMPLATES
    + "vllm__tool_chat_template_llama3.1_json.jinja; "
    + _HF_JUDGE,
)

HF_LLAMA_3 = replace(
    HF_TEMPLATE,
    name="hf-llama-3",
    aliases=("llama-3",),
    checks=checks(**HF_TEMPLATE.checks, parallel_calls=_LLAMA_SINGLE_CALL),
    single_call=True,
)
"""Llama 3.1, 3.2 and 3.3 (Meta's JSON tool-call templates): the ``hf-template`` rules, and
one call per assistant message. A message with parallel calls is split into consecutive
single-call messages, each followed by its result: every call and result is kept, in order,
and the model sees the sequential calls it could have made itself."""

_MISTRAL_TEMPLATES = (
    _TEMPLATES
    + "llamacpp__mistralai-Mistral-Nemo-Instruct-2407.jinja, "
    + _TEMPLATES
    + "llamacpp__Mistral-Small-3.2-24B-Instruct-2506.jinja, "
    + _TEMPLATES
    + "vllm__tool_chat_template_mistral.jinja; "
    + _HF_JUDGE
)

HF_MISTRAL = replace(
    MISTRAL,
    name="hf-mistral",
    aliases=("mistral-template",),
    checks=checks(
        **{
            **MISTRAL.checks,
            "call_id_format": Check(
                "HF-MISTRAL-TOOL-CALL-ID",
                "Tool call IDs should be alphanumeric strings with length 9!",
                _MISTRAL_TEMPLATES + "; through mistral-common (vLLM's mistral tokenizer mode): "
                "'Tool call id was call_49c89af0 but must be a-z, A-Z, 0-9, with a length of 9' "
                "(toolmend issue 32, case 5)",
            ),
            # The templates reject two user (or assistant) text messages in a row, which
            # mistral-common takes (and Mistral's API merges): a self-hosted model is served
            # through either, by server option, so the profile asks for what both take.
            "roles_not_alternating": Check(
                "HF-MISTRAL-ALTERNATION",
                "After the optional system message, conversation roles must alternate "
                "user/assistant/user/assistant/...",
                _MISTRAL_TEMPLATES,
            ),
        }
    ),
    alternation="tool-aware",
    # Devstral's template indexes the content of a message with calls: a string, as
    # mistral-common takes it
    content_string_kinds=_HF_ALL_KINDS,
)
"""Mistral models served with their own chat templates (Mistral Nemo, Small 3.x, 7B v0.3;
Devstral, Magistral, Ministral, Codestral, Mixtral, Pixtral): the ``mistral`` profile's rules
(mistral-common judges the same models when a server uses Mistral's tokenizer), 9-character
alphanumeric call ids, and user and assistant text alternating around the tool traffic, as
the templates demand."""

TEMPLATE_FAMILIES: tuple[tuple[str, str], ...] = (
    (r"gemma-?3", "hf-gemma-3"),
    (r"(?:code)?gemma(?:-?[12])?(?![\w.])|gemma-?2", "hf-template-strict"),
    (r"(?:meta-)?llama-?3\.[123](?!\d)", "hf-llama-3"),
    (
        r"(?:open-)?(?:mistral|mixtral|devstral|magistral|ministral|codestral|pixtral)",
        "hf-mistral",
    ),
    (
        r"qwen|qwq|deepseek|granite|phi-?\d|(?:nous-)?hermes|gpt-oss|kimi|command-r|c4ai"
        r"|functionary|(?:nvidia-)?nemotron|seed-oss",
        "hf-template",
    ),
)
"""Model name pattern (matched at the start of the lower-cased name, its ``org/`` part
removed: a Hugging Face repo id, a GGUF file name or an Ollama tag alike) -> the profile its
family's chat templates need, first match wins. The families whose templates take everything
the ``hf-template`` rules produce (Qwen, DeepSeek, Granite, Phi, Hermes, gpt-oss, Kimi,
Command R, Functionary, Nemotron, Seed-OSS) are listed under it: judged, not guessed."""

_FAMILY_PATTERNS = tuple((re.compile(pattern), profile) for pattern, profile in TEMPLATE_FAMILIES)

TEMPLATE_PROFILES = MappingProxyType(
    {p.name: p for p in (HF_TEMPLATE, HF_TEMPLATE_STRICT, HF_GEMMA_3, HF_LLAMA_3, HF_MISTRAL)}
)
"""The chat template profiles by name."""


def template_profile(model: str | None) -> str | None:
    """The profile a self-hosted model's chat template needs, picked by the model's name
    (case-insensitive, with or without its ``org/`` prefix or an Ollama ``:tag``), or ``None``
    when toolmend knows no rules for that model family (the server's own profile then
    applies).

    >>> template_profile("mistralai/Devstral-Small-2507"), template_profile("llama3.1:8b")
    ('hf-mistral', 'hf-llama-3')
    >>> template_profile("google/gemma-3-4b-it"), template_profile("my-own-model") is None
    ('hf-gemma-3', True)
    """
    if not isinstance(model, str):
        return None
    name = model.strip().lower().rsplit("/", 1)[-1]
    for pattern, profile in _FAMILY_PATTERNS:
        if pattern.match(name):
            return profile
    return None
