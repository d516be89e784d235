"""Self-hosted servers' Responses API: ``/v1/responses`` on vLLM, Ollama and LM Studio."""

from __future__ import annotations

from ._base import Check, Profile, checks

HF_TEMPLATE_RESPONSES = Profile(
    name="hf-template-responses",
    pairing="ordered",
    checks=checks(
        orphan_result=Check(
            "HF-RESPONSES-TOOL-ORPHAN",
            "Message has tool role, but there was no previous assistant message with a tool call!",
            "gpt-oss chat template (tests/data/chat_templates), rendered after the server turns "
            "each item into a chat message in input order (vLLM: "
            "vllm/entrypoints/responses_utils.py, construct_chat_message_with_tool_call)",
        ),
    ),
)
"""Responses items sent to a self-hosted server. vLLM turns each ``function_call`` item into an
assistant message making that one call and each output into a tool message, in input order,
and renders them with the model's chat template; the templates want a call before each result
(the gpt-oss template raises without one) and take a call left without a result. So an output
needs its call somewhere before it, and nothing else is checked; the model's own template rules
(``template_profile``) apply to Chat Completions messages, which keep their layout. Ollama
(0.13.3 and later, stateless) and LM Studio (0.3.29 and later) serve ``/v1/responses`` to the
same templates and get the same rules (inferred: their conversion was not read)."""
